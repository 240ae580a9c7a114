"""Mixture of experts: a top-k router, routed experts, optional shared experts.

Routing is the card's ``RouterSpec`` (``archdb.plan.mlp``): Mixtral's softmax over the
top-k logits (https://arxiv.org/abs/2401.04088) by default; sigmoid scores, a correction
bias that only chooses, group-limited top-k and a routed scale for DeepSeek-V2/V3
(https://arxiv.org/abs/2405.04434, https://arxiv.org/abs/2412.19437). Each token runs
only its k experts: the experts' weights are gathered per (token, expert) pair and
applied with a batched matmul, so the work counted is exactly the active experts' and
the full-size model holds one (experts, in, out) tensor per projection (the layout of
Hugging Face's fused experts; same parameter count).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from archdb.device import linear
from archdb.plan.mlp import MoESpec, RouterSpec
from archdb.schema import GroupScore, NormType

from .mlp import Act
from .norms import Norm, norm_module
from .registry import builds, module_of


def chosen_weights(scores: torch.Tensor, index: torch.Tensor, spec: RouterSpec) -> torch.Tensor:
    """The chosen experts' scores as their weights: renormalized over the chosen ones and
    scaled where the router spec says so."""
    weight = scores.gather(1, index)
    if spec.normalize:
        weight = weight / (weight.sum(dim=-1, keepdim=True) + 1e-20)
    if spec.scale != 1.0:
        weight = weight * spec.scale
    return weight


class Router(nn.Module):
    """Token -> top-k expert indices and their weights, as ``RouterSpec`` orders it."""

    def __init__(self, spec: RouterSpec) -> None:
        super().__init__()
        self.spec = spec
        self.proj = linear(spec.d_model, spec.candidates, bias=spec.bias)
        self.top_k = spec.top_k
        self.score = spec.rule.fn
        if spec.correction_bias:  # a checkpoint tensor, not trained by gradient
            self.register_buffer("correction_bias", torch.zeros(spec.candidates))
        else:
            self.correction_bias = None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # x: (N, d)
        spec = self.spec
        if spec.softmax_of_top_k:  # Mixtral
            logits, index = self.proj(x).topk(self.top_k, dim=-1)  # (N, k)
            return index, logits.softmax(dim=-1)
        scores = self.score(self.proj(x))  # (N, E)
        choice = scores if self.correction_bias is None else scores + self.correction_bias
        if spec.grouped:
            choice = self._keep_best_groups(choice)
        index = choice.topk(self.top_k, dim=-1).indices
        return index, chosen_weights(scores, index, spec)

    def _keep_best_groups(self, choice: torch.Tensor) -> torch.Tensor:
        """The choice with every expert outside the top_k_groups best groups at -inf."""
        spec = self.spec
        grouped = choice.view(choice.shape[0], spec.n_groups, -1)  # (N, G, E/G)
        if spec.group_score is GroupScore.MAX:
            rank = grouped.amax(dim=-1)
        else:  # top2-sum
            rank = grouped.topk(2, dim=-1).values.sum(dim=-1)
        best = rank.topk(spec.top_k_groups, dim=-1).indices  # (N, top_k_groups)
        keep = torch.zeros_like(rank).scatter(1, best, 1.0)  # (a float mask traces)
        dropped = keep.unsqueeze(-1).expand_as(grouped) == 0
        return grouped.masked_fill(dropped, float("-inf")).view_as(choice)

    def extra_repr(self) -> str:
        s = self.spec
        groups = f", groups={s.top_k_groups}/{s.n_groups} by {s.group_score}" if s.grouped else ""
        return (
            f"score={s.score}, top_k={s.top_k}, normalize={s.normalize}, "
            f"correction_bias={s.correction_bias}, scale={s.scale:g}{groups}"
        )


class TokenIds:
    """The token ids of the forward pass under way, set by the model, read by routers that
    choose experts by token id (one per build)."""

    def __init__(self) -> None:
        self.ids: torch.Tensor | None = None
        self.read = False  # some router reads them: the model must set them


class HashRouter(Router):
    """DeepSeek-V4's hash layers: the k experts are the token id's row of a fixed table (a
    checkpoint buffer); the router's scores weight them as top-k routing's would."""

    def __init__(self, spec: RouterSpec, tokens: TokenIds) -> None:
        super().__init__(spec)
        rows = torch.arange(spec.hash_vocab * spec.top_k).view(spec.hash_vocab, spec.top_k)
        self.register_buffer("table", rows % spec.n_experts)  # the checkpoint's on import
        self.tokens = tokens
        tokens.read = True

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # x: (N, d)
        spec, ids = self.spec, self.tokens.ids
        assert ids is not None  # the model sets them before its stack runs
        scores = self.score(self.proj(x))  # (N, E)
        index = self.table[ids.reshape(-1)]  # (N, k)
        return index, chosen_weights(scores, index, spec)


class ScaledRouter(nn.Module):
    """Gemma 4's router: a bare RMS norm, a learned channel scale and d^-0.5 before the
    logits; softmax over all experts, the top k renormalized, times a learned scale per
    expert (transformers' Gemma4TextRouter)."""

    def __init__(self, d_model: int, n_experts: int, top_k: int, eps: float | None) -> None:
        super().__init__()
        self.norm = Norm(NormType.RMSNORM, d_model, scale=False, bias=False, eps=eps)
        self.scale = nn.Parameter(torch.ones(d_model))
        self.proj = linear(d_model, n_experts, bias=False)
        self.per_expert_scale = nn.Parameter(torch.ones(n_experts))
        self.top_k, self.root = top_k, d_model**-0.5

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # x: (N, d)
        h = self.norm(x) * self.scale * self.root
        probs = self.proj(h).softmax(dim=-1)
        weight, index = probs.topk(self.top_k, dim=-1)
        weight = weight / weight.sum(dim=-1, keepdim=True)
        return index, weight * self.per_expert_scale[index]


class Experts(nn.Module):
    """n_experts MLPs stored as stacked weights; runs each token through its k experts."""

    flop_class = "linear"

    def __init__(self, n_experts: int, d_model: int, d_ff: int, act: Act, gated: bool, bias: bool):
        super().__init__()
        self.up = _stacked(n_experts, d_model, d_ff)
        self.gate = _stacked(n_experts, d_model, d_ff) if gated else None
        self.down = _stacked(n_experts, d_ff, d_model)
        self.up_bias = nn.Parameter(torch.zeros(n_experts, d_ff)) if bias else None
        self.gate_bias = nn.Parameter(torch.zeros(n_experts, d_ff)) if bias and gated else None
        self.down_bias = nn.Parameter(torch.zeros(n_experts, d_model)) if bias else None
        self.act = act
        # LongCat-Flash: indices from n_experts on are zero-computation experts (identity)
        self.zero_experts = 0

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        # x: (N, d), index: (N, k) -> (N, k, d). The (token, expert) pairs are sorted by
        # expert and each expert's rows go through its weights in one matmul: gathering a
        # weight copy per pair instead took minutes and gigabytes on a 64-token toy.
        n, k = index.shape
        flat = index.reshape(-1)  # (N*k,)
        order = flat.argsort()
        rows = x.repeat_interleave(k, dim=0)[order]  # (N*k, d), grouped by expert
        n_real = self.up.shape[0]
        counts = torch.bincount(flat, minlength=n_real + self.zero_experts).tolist()
        # each weight stack unbound once, not indexed per expert: fewer traced nodes (fvcore)
        up, down = _unbound(self.up, self.up_bias), _unbound(self.down, self.down_bias)
        gate = _unbound(self.gate, self.gate_bias) if self.gate is not None else None
        outs = []
        for e, chunk in enumerate(rows.split(counts)):
            if counts[e] == 0:
                continue
            if e >= n_real:  # a zero-computation expert returns its input
                outs.append(chunk)
                continue
            h = _apply(chunk, up, e)
            h = self.act(_apply(chunk, gate, e), h) if gate is not None else self.act(h)
            outs.append(_apply(h, down, e))
        grouped = torch.cat(outs)  # rows in expert order
        out = torch.empty_like(grouped).index_copy(0, order, grouped)
        return out.view(n, k, -1)

    def extra_repr(self) -> str:
        e, d, f = self.up.shape
        return f"experts={e}, d_model={d}, d_ff={f}, gated={self.gate is not None}"


def _stacked(n: int, d_in: int, d_out: int) -> nn.Parameter:
    w = torch.empty(n, d_in, d_out)
    nn.init.normal_(w, std=1 / math.sqrt(d_in))
    return nn.Parameter(w)


Unbound = tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...] | None]


def _unbound(w: torch.Tensor, b: torch.Tensor | None) -> Unbound:
    """Per-expert (in, out) weights and (out,) biases of stacked ones."""
    return w.unbind(0), None if b is None else b.unbind(0)


def _apply(x: torch.Tensor, weights: Unbound, expert: int) -> torch.Tensor:
    w, b = weights
    y = torch.matmul(x, w[expert])  # (rows, in) @ (in, out)
    return y if b is None else y + b[expert]


class MoE(nn.Module):
    """Routed experts plus optional shared experts that every token uses (DeepSeekMoE)."""

    def __init__(
        self,
        router: Router,
        experts: Experts,
        shared: nn.Module | None,
        shared_gate: bool = False,
        output_multiplier: float | None = None,
    ) -> None:
        super().__init__()
        self.output_multiplier = output_multiplier  # MiniMax's MLP beta
        self.router = router
        self.experts = experts
        self.shared = shared
        d_model = router.proj.in_features
        # Qwen2-MoE's shared_expert_gate: a per-token sigmoid on the shared experts' output
        self.shared_gate = linear(d_model, 1, bias=False) if shared_gate else None
        self.latent_in: nn.Module | None = None
        self.latent_out: nn.Module | None = None

    def add_latent(self, width: int, bias: bool) -> None:
        """Latent MoE (Nemotron 3 Super): the routed experts read x projected to ``width``
        and their weighted sum is projected back to d_model."""
        d_model = self.router.proj.in_features
        self.latent_in = linear(d_model, width, bias=bias)
        self.latent_out = linear(width, d_model, bias=bias)

    def forward(self, x: torch.Tensor, route_from: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, d); ``route_from``: what the router reads where it is not x (Gemma 4)."""
        flat = x.reshape(-1, x.shape[-1])  # (N, d)
        source = flat if route_from is None else route_from.reshape(flat.shape)
        index, weight = self.router(source)
        inputs = flat if self.latent_in is None else self.latent_in(flat)
        y = (self.experts(inputs, index) * weight.unsqueeze(-1)).sum(dim=1)  # (N, d or latent)
        if self.latent_out is not None:
            y = self.latent_out(y)
        if self.shared is not None:
            shared = self.shared(flat)
            if self.shared_gate is not None:
                shared = torch.sigmoid(self.shared_gate(flat)) * shared
            y = y + shared
        if self.output_multiplier is not None:
            y = y * self.output_multiplier
        return y.view_as(x)


class BesideMoE(nn.Module):
    """A dense MLP beside the routed experts, each branch between its own norms, outputs
    summed (Gemma 4 26B-A4B); the router reads the un-normed residual stream."""

    def __init__(
        self,
        dense: nn.Module,
        moe: MoE,
        dense_before: nn.Module,
        dense_after: nn.Module,
        experts_before: nn.Module,
        experts_after: nn.Module,
    ) -> None:
        super().__init__()
        self.dense, self.moe = dense, moe
        self.dense_before, self.dense_after = dense_before, dense_after
        self.experts_before, self.experts_after = experts_before, experts_after

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: the residual stream
        dense = self.dense_after(self.dense(self.dense_before(x)))
        routed = self.experts_after(self.moe(self.experts_before(x), route_from=x))
        return dense + routed


# --- from specs ----------------------------------------------------------------------------


@builds(RouterSpec)
def router(s: RouterSpec, ctx: object = None) -> Router:
    return Router(s)


def _router_of(s: MoESpec, ctx) -> nn.Module:
    if s.router.hash_vocab:
        return HashRouter(s.router, ctx.tokens)
    if not s.router_scales:
        return Router(s.router)
    eps = s.branch_norm.eps if s.branch_norm else None
    return ScaledRouter(s.d_model, s.n_experts, s.n_active, eps)


@builds(MoESpec)
def moe(s: MoESpec, ctx: object = None) -> nn.Module:
    e = s.expert
    act = Act(e.activation, e.gelu_exact, e.clamp)
    experts = Experts(s.n_experts, e.d_model, e.d_ff, act, e.activation.gated, e.bias)
    experts.zero_experts = s.router.zero_experts
    experts.archdb_active = s.n_active  # read by the measured parameter count
    shared = module_of(s.shared) if s.shared is not None else None
    layer = MoE(_router_of(s, ctx), experts, shared, s.shared_gate, s.output_multiplier)
    if s.latent is not None:
        layer.add_latent(s.latent, bool(s.latent_bias))
    if s.beside is None:
        return layer
    assert s.branch_norm is not None
    norms = [norm_module(s.branch_norm, s.d_model) for _ in range(1 + s.BRANCH_NORMS)]
    return BesideMoE(module_of(s.beside), layer, *norms)
