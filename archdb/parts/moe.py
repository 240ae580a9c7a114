"""Mixtures of experts: router score rules, the router, the experts and their optional shared
and beside-the-experts dense MLPs, spec and torch module.

Each expert is a dense MLP (``archdb.parts.mlp``) stacked ``n_experts`` times; the router
picks ``n_active`` per token by its score rule (softmax, sigmoid, sqrt-softplus, hash).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from types import SimpleNamespace
from typing import Any

from archdb import conventions as cv
from archdb.choices.activations import CLAMPED_SWIGLU as CLAMPED_SWIGLU  # re-exported
from archdb.choices.activations import XIELU_RULE as XIELU_RULE  # re-exported
from archdb.conventions import FlopClass as C
from archdb.parts.mlp import DenseMLP
from archdb.parts.norms import NormSpec, bare_rms
from archdb.schema import GroupScore, RouterScore
from archdb.tally import Tally, linear_params


def _softmax_scores(logits):
    return logits.softmax(dim=-1)


def _sigmoid_scores(logits):
    return logits.sigmoid()


def _sqrt_softplus_scores(logits):
    import torch.nn.functional as F

    return F.softplus(logits).sqrt()


@dataclass(frozen=True)
class ScoreRule:
    """Router logits -> one score per expert, and what that costs per expert."""

    name: str
    fn: Callable
    flop_class: C
    flops_per_expert: int


ROUTER_SCORES: dict[RouterScore, ScoreRule] = {
    RouterScore.SOFTMAX: ScoreRule("softmax", _softmax_scores, C.SOFTMAX, cv.SOFTMAX),
    RouterScore.SIGMOID: ScoreRule("sigmoid", _sigmoid_scores, C.ELEMENTWISE, cv.ELEMENTWISE),
    # softplus, then its square root
    RouterScore.SQRT_SOFTPLUS: ScoreRule(
        "sqrt-softplus", _sqrt_softplus_scores, C.ELEMENTWISE, 2 * cv.ELEMENTWISE
    ),
}


@dataclass(frozen=True)
class RouterSpec:
    """Token -> its k experts and their weights, in this order (DeepSeek-V3's
    inference/model.py Gate; transformers' Mixtral, Qwen3-MoE, DeepSeek-V2/V3 routers):

    1. logits = proj(x); scores = score(logits) (softmax over experts, or sigmoid);
    2. choice = scores (+ the correction bias, which only chooses);
    3. groups: rank each group (its max, or the sum of its two best choice values), keep
       the top_k_groups best, mask the other groups' experts out of the choice;
    4. the k experts with the highest choice; their weights are their *scores*;
    5. normalize: weights / their sum; then weights * scale.

    A soft-cap, where set, bounds the logits first, c * tanh(logits / c) (Grok-2). Softmax
    scores normalized, without bias or groups, take Mixtral's shorter route (a softmax
    over the k chosen logits): the same weights, fewer operations.
    """

    d_model: int
    n_experts: int
    top_k: int
    bias: bool = False  # on the logit projection (gpt-oss)
    score: RouterScore = RouterScore.SOFTMAX
    normalize: bool = True
    n_groups: int = 1
    top_k_groups: int = 1
    group_score: GroupScore | None = None
    correction_bias: bool = False  # a buffer: not a parameter
    scale: float = 1.0
    zero_experts: int = 0  # LongCat-Flash: identity candidates after the routed experts
    # DeepSeek-V4's hash layers: the experts are a (hash_vocab, top_k) buffer's row for the
    # token id, not the top-k of the scores, which still weight them; 0: top-k routing
    hash_vocab: int = 0
    softcap: float | None = None  # c * tanh(logits / c) before the scores (Grok-2)

    @property
    def candidates(self) -> int:
        """What the router scores: the routed experts, then the zero-computation ones."""
        return self.n_experts + self.zero_experts

    @property
    def rule(self) -> ScoreRule:
        return ROUTER_SCORES[self.score]

    @property
    def grouped(self) -> bool:
        return self.n_groups > 1 and self.top_k_groups < self.n_groups

    @property
    def softmax_of_top_k(self) -> bool:
        """Mixtral's route: top-k of the logits, a softmax over those k."""
        plain = not self.grouped and not self.correction_bias
        return plain and self.normalize and self.score is RouterScore.SOFTMAX

    def params(self) -> int:
        return linear_params(self.d_model, self.candidates, self.bias)

    def flops(self, tally: Tally) -> None:
        e, k = self.candidates, self.top_k
        tally.linear(self.d_model, e, self.bias)
        if self.softcap is not None:
            tally.elementwise(e * cv.SOFTCAP)
        if self.softmax_of_top_k:
            tally.add(C.SOFTMAX, tally.seq_len * cv.SOFTMAX * k)
            return
        tally.elementwise(e * self.rule.flops_per_expert, self.rule.flop_class)
        if self.correction_bias:
            tally.elementwise(e)  # scores + bias
        if self.grouped and self.group_score is GroupScore.MAX:
            tally.elementwise(e * cv.REDUCTION)  # each group's max over its experts
        elif self.grouped:
            tally.elementwise(2 * self.n_groups * cv.REDUCTION)  # sum of each group's best 2
        if self.normalize:
            tally.elementwise(k * cv.REDUCTION + 1 + k)  # sum, + epsilon, divide
        if self.scale != 1.0:
            tally.elementwise(k)

    def module(self, ctx: Any = None) -> Any:
        return modules().router(self, ctx)


@dataclass(frozen=True)
class MoESpec:
    """A top-k router over routed experts, plus shared experts every token uses."""

    router: RouterSpec
    expert: DenseMLP
    shared: DenseMLP | None
    shared_gate: bool = False  # sigmoid(Linear(d -> 1)) scales the shared experts' output
    # a dense MLP beside the experts (Gemma 4, Grok-2), and the norm of the two branches'
    # own norms (Gemma 4: the dense branch's post-norm, the experts' pre- and post-norm;
    # the block holds the other two); None: the branches share the block's (Grok-2)
    beside: DenseMLP | None = None
    branch_norm: NormSpec | None = None
    router_scales: bool = False  # Gemma 4's router: own bare norm, channel and expert scales
    output_multiplier: float | None = None  # m * (experts + shared) (MiniMax's MLP beta)
    # latent MoE (Nemotron 3 Super): the experts work at expert.d_model; projections into
    # and out of that width around them, with this bias (None: no latent projections)
    latent_bias: bool | None = None
    weighted_input: bool = False  # each chosen expert reads x times its weight (Llama 4)

    BRANCH_NORMS = 3  # beyond the block's pre- and post-norm of the MLP sublayer

    @property
    def d_model(self) -> int:
        return self.router.d_model

    @property
    def n_experts(self) -> int:
        return self.router.n_experts

    @property
    def n_active(self) -> int:
        return self.router.top_k

    @property
    def latent(self) -> int | None:
        """The width the routed experts work at, where it is not d_model (latent MoE)."""
        return self.expert.d_model if self.latent_bias is not None else None

    @property
    def reads_residual(self) -> bool:
        """The sublayer takes the residual stream un-normed and norms each branch itself."""
        return self.beside is not None and self.branch_norm is not None

    def params(self) -> int:
        n = self.router.params()
        n += self.d_model + self.n_experts if self.router_scales else 0
        n += self.n_experts * self.expert.params()
        if self.latent is not None:  # into the latent width and back, once per layer
            n += linear_params(self.d_model, self.latent, bool(self.latent_bias))
            n += linear_params(self.latent, self.d_model, bool(self.latent_bias))
        n += linear_params(self.d_model, 1, False) if self.shared_gate else 0
        if self.beside is not None:
            n += self.beside.params()
        if self.branch_norm is not None:
            n += self.BRANCH_NORMS * self.branch_norm.params(self.d_model)
        return n + (self.shared.params() if self.shared else 0)

    def inactive_params(self) -> int:
        return (self.n_experts - self.n_active) * self.expert.params()

    def flops(self, tally: Tally) -> None:
        t, d, k = tally.seq_len, self.d_model, self.n_active
        if self.router_scales:  # bare RMS norm, * scale * d^-0.5; softmax over all, renorm
            bare_rms(self.branch_norm.eps if self.branch_norm else None).flops(tally, d)
            tally.elementwise(2 * d)
            tally.linear(d, self.n_experts, self.router.bias)
            tally.add(C.SOFTMAX, t * cv.SOFTMAX * self.n_experts)
            tally.elementwise(cv.REDUCTION * k + 2 * k)  # sum, divide, * expert scale
        else:
            self.router.flops(tally)
        if self.branch_norm is not None:
            for _ in range(self.BRANCH_NORMS):
                self.branch_norm.flops(tally, d)
        if self.beside is not None:
            self.beside.flops(tally)
            tally.elementwise(d)  # dense + experts
        # k experts per token; with zero experts that is the most a token can run
        self.expert.flops(tally, t * k)
        if self.latent is not None:  # project in, weight and sum at the latent width, out
            tally.linear(d, self.latent, bool(self.latent_bias))
            tally.elementwise(2 * k * self.latent)
            tally.linear(self.latent, d, bool(self.latent_bias))
        else:
            tally.elementwise(2 * k * d)  # weight each expert's output (or input), sum them
        if self.shared is not None:
            self.shared.flops(tally)
            tally.elementwise(d)
        if self.shared_gate:
            tally.linear(d, 1, False)
            tally.elementwise(1 + d)  # sigmoid, then the product
        if self.output_multiplier is not None:
            tally.elementwise(d)

    def module(self, ctx: Any = None) -> Any:
        return modules().moe(self, ctx)


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import math

    import torch
    from torch import nn

    from archdb.device import linear
    from archdb.parts import mlp as mlp_part
    from archdb.parts import norms as norms_part
    from archdb.schema import NormType

    Act = mlp_part.modules().Act
    Norm, norm_module = attrgetter("Norm", "norm_module")(norms_part.modules())

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
            self.softcap = spec.softcap
            if spec.correction_bias:  # a checkpoint tensor, not trained by gradient
                self.register_buffer("correction_bias", torch.zeros(spec.candidates))
            else:
                self.correction_bias = None

        def logits(self, x: torch.Tensor) -> torch.Tensor:  # x: (N, d) -> (N, E)
            logits = self.proj(x)
            if self.softcap is None:
                return logits
            return torch.tanh(logits / self.softcap) * self.softcap  # Grok-2

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # x: (N, d)
            spec = self.spec
            if spec.softmax_of_top_k:  # Mixtral
                logits, index = self.logits(x).topk(self.top_k, dim=-1)  # (N, k)
                return index, logits.softmax(dim=-1)
            scores = self.score(self.logits(x))  # (N, E)
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
            groups = (
                f", groups={s.top_k_groups}/{s.n_groups} by {s.group_score}" if s.grouped else ""
            )
            cap = f", softcap={s.softcap:g}" if s.softcap is not None else ""
            return (
                f"score={s.score}, top_k={s.top_k}, normalize={s.normalize}, "
                f"correction_bias={s.correction_bias}, scale={s.scale:g}{groups}{cap}"
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
            scores = self.score(self.logits(x))  # (N, E)
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

        def __init__(
            self, n_experts: int, d_model: int, d_ff: int, act: Act, gated: bool, bias: bool
        ):
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
            # x: (N, d), or (N, k, d) an input per pair (Llama 4's weighted inputs); index:
            # (N, k) -> (N, k, d). The (token, expert) pairs are sorted by expert and each
            # expert's rows go through its weights in one matmul: gathering a weight copy
            # per pair instead took minutes and gigabytes on a 64-token toy.
            n, k = index.shape
            flat = index.reshape(-1)  # (N*k,)
            order = flat.argsort()
            pairs = x.flatten(0, 1) if x.dim() == 3 else x.repeat_interleave(k, dim=0)
            rows = pairs[order]  # (N*k, d), grouped by expert
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
            weighted_input: bool = False,
        ) -> None:
            super().__init__()
            self.output_multiplier = output_multiplier  # MiniMax's MLP beta
            self.weighted_input = weighted_input  # Llama 4: the weights scale the inputs
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
            if self.weighted_input:  # each pair's input times its weight, then the expert
                pairs = inputs.unsqueeze(1) * weight.unsqueeze(-1)  # (N, k, d)
                y = self.experts(pairs, index).sum(dim=1)
            else:
                y = (self.experts(inputs, index) * weight.unsqueeze(-1)).sum(dim=1)
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

    class SharedNormMoE(nn.Module):
        """A dense MLP beside the routed experts, both (and the router) reading the block's
        normed input, their outputs summed (Grok-2's residual MoE; the block's post-norm
        follows)."""

        def __init__(self, dense: nn.Module, moe: MoE) -> None:
            super().__init__()
            self.dense, self.moe = dense, moe

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: the block's normed input
            return self.dense(x) + self.moe(x)

    # --- from specs ----------------------------------------------------------------------------

    def router(s: RouterSpec, ctx: object = None) -> Router:
        return Router(s)

    def _router_of(s: MoESpec, ctx) -> nn.Module:
        if s.router.hash_vocab:
            return HashRouter(s.router, ctx.tokens)
        if not s.router_scales:
            return Router(s.router)
        eps = s.branch_norm.eps if s.branch_norm else None
        return ScaledRouter(s.d_model, s.n_experts, s.n_active, eps)

    def moe(s: MoESpec, ctx: object = None) -> nn.Module:
        e = s.expert
        act = Act(e.activation, e.gelu_exact, e.clamp)
        experts = Experts(s.n_experts, e.d_model, e.d_ff, act, e.activation.gated, e.bias)
        experts.zero_experts = s.router.zero_experts
        experts.archdb_active = s.n_active  # read by the measured parameter count
        shared = s.shared.module() if s.shared is not None else None
        router = _router_of(s, ctx)
        layer = MoE(router, experts, shared, s.shared_gate, s.output_multiplier, s.weighted_input)
        if s.latent is not None:
            layer.add_latent(s.latent, bool(s.latent_bias))
        if s.beside is None:
            return layer
        if s.branch_norm is None:
            return SharedNormMoE(s.beside.module(), layer)
        norms = [norm_module(s.branch_norm, s.d_model) for _ in range(1 + s.BRANCH_NORMS)]
        return BesideMoE(s.beside.module(), layer, *norms)

    return SimpleNamespace(
        chosen_weights=chosen_weights,
        Router=Router,
        TokenIds=TokenIds,
        HashRouter=HashRouter,
        ScaledRouter=ScaledRouter,
        Experts=Experts,
        _stacked=_stacked,
        Unbound=Unbound,
        _unbound=_unbound,
        _apply=_apply,
        MoE=MoE,
        BesideMoE=BesideMoE,
        SharedNormMoE=SharedNormMoE,
        router=router,
        _router_of=_router_of,
        moe=moe,
    )
