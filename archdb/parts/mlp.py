"""Feed-forward: dense and gated MLPs over an activation rule, spec and torch module.

An activation is a rule (its function, FLOPs per element, whether it is gated), declared
with its enum value in ``archdb.choices.activations``; the torch module ``Act`` runs that
function. Mixtures of experts are ``archdb.parts.moe``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from archdb import conventions as cv
from archdb.choices.activations import (
    ACTIVATIONS,
    Activation,
    ActivationRule,
    ClampedSwiGLU,
    ClippedSwiGLU,
)
from archdb.choices.activations import CLAMPED_SWIGLU as CLAMPED_SWIGLU  # re-exported
from archdb.choices.activations import GEGELU as GEGELU  # re-exported
from archdb.choices.activations import XIELU_RULE as XIELU_RULE  # re-exported
from archdb.conventions import FlopClass as C
from archdb.parts.norms import NormSpec
from archdb.tally import Tally, linear_params


def _gelu_exact(x):  # the erf form (GPT-NeoX, BERT)
    import torch.nn.functional as F

    return F.gelu(x)


GELU_EXACT = ActivationRule("gelu-exact", _gelu_exact)  # GELU/GeGLU with gelu_approximation exact


# the gated units whose limits (and gain) a card states: their rule takes the card's clamp
CLAMPED_UNITS = (Activation.CLAMPED_SWIGLU, Activation.CLIPPED_SWIGLU, Activation.GEGELU)


def activation_rule(
    activation: Activation,
    gelu_exact: bool = False,
    clamp: ClampedSwiGLU | ClippedSwiGLU | None = None,
) -> ActivationRule:
    """The rule of an activation; GELU and GeGLU by erf when ``gelu_exact``; a clamped or
    clipped SwiGLU, or a gegelu, with the card's ``clamp`` (limit, and alpha) when given."""
    if gelu_exact and activation in (Activation.GELU, Activation.GEGLU):
        return GELU_EXACT
    rule = ACTIVATIONS[activation]
    if clamp is not None and activation in CLAMPED_UNITS:
        return ActivationRule(rule.name, clamp.gate, rule.flops_per_element, clamp)
    return rule


@dataclass(frozen=True)
class DenseMLP:
    """down(act(up(x))), or down(act(gate(x)) * up(x)) for gated activations."""

    d_model: int
    d_ff: int  # width of one branch
    activation: Activation
    bias: bool
    gelu_exact: bool = False  # GELU/GeGLU by erf rather than the tanh approximation
    clamp: ClampedSwiGLU | ClippedSwiGLU | None = None  # a clamped/clipped SwiGLU's limits
    gate_multiplier: float | None = None  # act(m * gate(x)) (Falcon-H1 mlp_multipliers[0])
    output_multiplier: float | None = None  # m * down(...) (Falcon-H1 mlp_multipliers[1])
    sparsity: float | None = None  # Gemma 3n's gaussian top-k target on the gate
    channel_mix: bool = False  # RWKV: token-shifted inputs, a sigmoid receptance gate
    sub_norm: NormSpec | None = None  # a norm over the d_ff activations before down (BitNet)
    token_shift: bool = False  # RWKV-7: the input interpolated with the previous token's

    @property
    def rule(self) -> ActivationRule:
        return activation_rule(self.activation, self.gelu_exact, self.clamp)

    def params(self) -> int:
        branches = 2 if self.activation.gated else 1
        d, f = self.d_model, self.d_ff
        learned = len(self.rule.learned)  # xIELU's alpha_p and alpha_n
        if self.channel_mix:  # two mixing weights per channel and the receptance
            learned += 2 * d + linear_params(d, d, False)
        if self.sub_norm is not None:
            learned += self.sub_norm.params(f)
        if self.token_shift:  # one mixing weight per channel
            learned += d
        return branches * linear_params(d, f, self.bias) + linear_params(f, d, self.bias) + learned

    def inactive_params(self) -> int:
        return 0

    def cache_entries(self, context: int) -> int:
        """RWKV's channel mix keeps the previous token's input; other MLPs keep nothing."""
        return self.d_model if self.channel_mix or self.token_shift else 0

    def flops(self, tally: Tally, tokens: int | None = None) -> None:
        tokens = tally.seq_len if tokens is None else tokens
        gated, d, f = self.activation.gated, self.d_model, self.d_ff
        if self.channel_mix:  # x m + shifted (1 - m) for key and receptance; the gate
            tally.add(C.ELEMENTWISE, tokens * 2 * 3 * d + 2 * d)  # 1 - m: once a forward
            tally.linear(d, d, False, tokens)
            tally.add(C.ELEMENTWISE, tokens * 2 * d)  # sigmoid, and its product
        if self.token_shift:  # x + (previous - x) m
            tally.add(C.ELEMENTWISE, tokens * 3 * d)
        for _ in range(2 if gated else 1):
            tally.linear(d, f, self.bias, tokens)
        per = self.rule.flops_per_element + (cv.ELEMENTWISE if gated else 0)  # (+ gating product)
        tally.add(C.ELEMENTWISE, tokens * f * per + self.rule.flops_per_call)
        if self.gate_multiplier is not None:
            tally.add(C.ELEMENTWISE, tokens * f)
        if self.sparsity is not None:  # mean, std; mean + std * k per token; g - cut, relu
            per_token = (cv.REDUCTION + cv.STD + 2 * cv.ELEMENTWISE) * f + 2 * cv.ELEMENTWISE
            tally.add(C.ELEMENTWISE, tokens * per_token)
        if self.sub_norm is not None:
            self.sub_norm.flops(tally, f, tokens)
        tally.linear(f, d, self.bias, tokens)
        if self.output_multiplier is not None:
            tally.add(C.ELEMENTWISE, tokens * d)

    def module(self, ctx: Any = None) -> Any:
        return modules().dense_mlp(self, ctx)


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from archdb.device import linear
    from archdb.parts import norms as norms_part
    from archdb.parts.attributes import set_plain

    norm_module = norms_part.modules().norm_module

    class Act(nn.Module):
        """A pointwise non-linearity (its rule in ``archdb.choices.activations.ACTIVATIONS``);
        given the up branch too, it multiplies the activated gate by it."""

        flop_class = "elementwise"

        def __init__(
            self,
            activation: Activation,
            gelu_exact: bool = False,
            clamp: ClampedSwiGLU | None = None,
        ) -> None:
            super().__init__()
            rule = activation_rule(activation, gelu_exact, clamp)
            set_plain(self, activation=activation, rule=rule, fn=rule.fn)
            for name, initial in self.rule.learned:  # xIELU's alpha_p, alpha_n
                setattr(self, name, nn.Parameter(torch.tensor([initial])))

        def forward(self, h: torch.Tensor, up: torch.Tensor | None = None) -> torch.Tensor:
            if up is not None and self.rule.combine is not None:
                return self.rule.combine(h, up)
            a = self.fn(h, *(getattr(self, name) for name, _ in self.rule.learned))
            return a if up is None else a * up

        def extra_repr(self) -> str:
            c = self.rule.combine
            if c is None:
                return self.rule.name
            alpha = getattr(c, "alpha", None)  # the clamped unit's; the clipped one has none
            return f"{self.rule.name}, limit={c.limit:g}" + (f", alpha={alpha:g}" if alpha else "")

    class FeedForward(nn.Module):
        """What every MLP ends with: the down projection, behind an optional sub-norm over
        the d_ff activations (BitNet's ffn_sub_norm)."""

        sub_norm: nn.Module | None
        down: nn.Module

        def project_down(self, h: torch.Tensor) -> torch.Tensor:
            return self.down(h if self.sub_norm is None else self.sub_norm(h))

    class MLP(FeedForward):
        """down(act(up(x)))."""

        def __init__(
            self, d_model: int, d_ff: int, act: Act, bias: bool, sub_norm: nn.Module | None = None
        ) -> None:
            super().__init__()
            self.up = linear(d_model, d_ff, bias=bias)
            self.act = act
            self.sub_norm = sub_norm
            self.down = linear(d_ff, d_model, bias=bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.project_down(self.act(self.up(x)))

    class GatedMLP(FeedForward):
        """down(act(gate(x)) * up(x)): SwiGLU, GeGLU, ReGLU."""

        def __init__(
            self, d_model: int, d_ff: int, act: Act, bias: bool, sub_norm: nn.Module | None = None
        ) -> None:
            super().__init__()
            self.gate = linear(d_model, d_ff, bias=bias)
            self.up = linear(d_model, d_ff, bias=bias)
            self.act = act
            self.sub_norm = sub_norm
            self.down = linear(d_ff, d_model, bias=bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.project_down(self.act(self.gate(x), self.up(x)))

    class ScaledGatedMLP(GatedMLP):
        """m_out * down(act(m_gate * gate(x)) * up(x)) (Falcon-H1's mlp_multipliers)."""

        def __init__(
            self,
            d_model: int,
            d_ff: int,
            act: Act,
            bias: bool,
            gate_multiplier: float | None,
            output_multiplier: float | None,
            sub_norm: nn.Module | None = None,
        ) -> None:
            super().__init__(d_model, d_ff, act, bias, sub_norm)
            self.gate_multiplier, self.output_multiplier = gate_multiplier, output_multiplier

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            gate = self.gate(x)
            if self.gate_multiplier is not None:
                gate = gate * self.gate_multiplier
            y = self.project_down(self.act(gate, self.up(x)))
            return y if self.output_multiplier is None else y * self.output_multiplier

    class ScaledMLP(MLP):
        """m_out * down(act(up(x)))."""

        def __init__(
            self,
            d_model: int,
            d_ff: int,
            act: Act,
            bias: bool,
            output_multiplier: float,
            sub_norm: nn.Module | None = None,
        ) -> None:
            super().__init__(d_model, d_ff, act, bias, sub_norm)
            self.output_multiplier = output_multiplier

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x) * self.output_multiplier

    class SparseGatedMLP(GatedMLP):
        """Gemma 3n's gaussian top-k on the gate: relu(g - (mean(g) + std(g) * k)) with k the
        standard normal quantile of the target sparsity, then the gated unit."""

        def __init__(
            self,
            d_model: int,
            d_ff: int,
            act: Act,
            bias: bool,
            target: float,
            sub_norm: nn.Module | None = None,
        ) -> None:
            super().__init__(d_model, d_ff, act, bias, sub_norm)
            self.target = target
            # Phi^-1(target) in float32, as transformers' torch.distributions computes it
            cpu = torch.device("cpu")  # a number, even when the model is built on meta
            zero, one = torch.tensor(0.0, device=cpu), torch.tensor(1.0, device=cpu)
            quantile = torch.distributions.Normal(zero, one).icdf(torch.tensor(target, device=cpu))
            self.std_multiplier = float(quantile)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            gate = self.gate(x)
            mean = torch.mean(gate, dim=-1, keepdim=True)
            std = torch.std(gate, dim=-1, keepdim=True, unbiased=False)
            gate = torch.relu(gate - (mean + std * self.std_multiplier))
            return self.project_down(self.act(gate, self.up(x)))

        def extra_repr(self) -> str:
            return f"sparsity={self.target:g}"

    class ChannelMix(nn.Module):
        """RWKV's channel mixing (Peng et al. 2023, https://arxiv.org/abs/2305.13048), as
        transformers' RwkvFeedForward: each token's input interpolated with the previous
        token's (x m + prev (1 - m), one learned m per channel for the key and one for the
        receptance), then sigmoid(receptance(x_r)) * down(act(up(x_k))); no biases."""

        def __init__(self, d_model: int, d_ff: int, act: nn.Module) -> None:
            super().__init__()
            self.mix_key = nn.Parameter(torch.full((d_model,), 0.5))
            self.mix_receptance = nn.Parameter(torch.full((d_model,), 0.5))
            self.up = nn.Linear(d_model, d_ff, bias=False)
            self.act = act
            self.receptance = nn.Linear(d_model, d_model, bias=False)
            self.down = nn.Linear(d_ff, d_model, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            previous = F.pad(x, (0, 0, 1, -1))  # each token's predecessor, zeros before the first
            x_k = x * self.mix_key + previous * (1 - self.mix_key)
            x_r = x * self.mix_receptance + previous * (1 - self.mix_receptance)
            return torch.sigmoid(self.receptance(x_r)) * self.down(self.act(self.up(x_k)))

    class ShiftedMLP(nn.Module):
        """RWKV-7's channel mixing (Peng et al. 2025, https://arxiv.org/abs/2503.14456), as
        RWKV-LM's RWKV_CMix_x070: each token's input interpolated with the previous token's,
        x + (prev - x) m (one learned m per channel), then down(act(up(.))); no gate, no
        biases."""

        def __init__(self, d_model: int, d_ff: int, act: nn.Module) -> None:
            super().__init__()
            self.mix_key = nn.Parameter(torch.full((d_model,), 0.5))
            self.up = nn.Linear(d_model, d_ff, bias=False)
            self.act = act
            self.down = nn.Linear(d_ff, d_model, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            shift = F.pad(x, (0, 0, 1, -1)) - x  # each token's predecessor (zeros first), less x
            return self.down(self.act(self.up(x + shift * self.mix_key)))

    def make_mlp(
        activation: Activation,
        d_model: int,
        d_ff: int,
        bias: bool,
        gelu_exact: bool = False,
        clamp: ClampedSwiGLU | None = None,
        gate_multiplier: float | None = None,
        output_multiplier: float | None = None,
        sparsity: float | None = None,
        channel_mix: bool = False,
        sub_norm: NormSpec | None = None,
        token_shift: bool = False,
    ) -> nn.Module:
        act = Act(activation, gelu_exact, clamp)
        if channel_mix:  # the schema keeps sub-norms out of RWKV's channel mix
            return ChannelMix(d_model, d_ff, act)
        norm = None if sub_norm is None else norm_module(sub_norm, d_ff)
        if token_shift:
            return ShiftedMLP(d_model, d_ff, act)
        if sparsity is not None:
            return SparseGatedMLP(d_model, d_ff, act, bias, sparsity, norm)
        if activation.gated and (gate_multiplier is not None or output_multiplier is not None):
            return ScaledGatedMLP(
                d_model, d_ff, act, bias, gate_multiplier, output_multiplier, norm
            )
        if output_multiplier is not None:
            return ScaledMLP(d_model, d_ff, act, bias, output_multiplier, norm)
        cls = GatedMLP if activation.gated else MLP
        return cls(d_model, d_ff, act, bias, norm)

    def dense_mlp(s: DenseMLP, ctx: object = None) -> nn.Module:
        return make_mlp(
            s.activation,
            s.d_model,
            s.d_ff,
            s.bias,
            s.gelu_exact,
            s.clamp,
            s.gate_multiplier,
            s.output_multiplier,
            s.sparsity,
            s.channel_mix,
            s.sub_norm,
            s.token_shift,
        )

    return SimpleNamespace(
        Act=Act,
        MLP=MLP,
        GatedMLP=GatedMLP,
        ScaledGatedMLP=ScaledGatedMLP,
        ScaledMLP=ScaledMLP,
        SparseGatedMLP=SparseGatedMLP,
        ChannelMix=ChannelMix,
        ShiftedMLP=ShiftedMLP,
        make_mlp=make_mlp,
        dense_mlp=dense_mlp,
    )
