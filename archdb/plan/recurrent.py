"""Non-attention token mixers: Mamba-2 (SSD), as a spec; the mixer plugins' (archdb.mixers:
Gated DeltaNet, LFM2's short conv, Mamba-1, Kimi Delta Attention, Griffin's RG-LRU,
MiniMax-01's lightning attention, ...) are made by their plugins.

Each spec carries its parameters (laid out as transformers' implementation, so counts
match it exactly), its FLOPs, its state and its module factory. ``RECURRENT`` maps a
layer-pattern entry to the maker of its spec.

FLOP convention for a recurrent mixer: the per-token cost of the recurrent form (one state
update and one read-out per token, as in decoding), every elementwise operation 1 FLOP per
element, a depthwise convolution 2 per multiply-add; parameter-only work (A = -exp(A_log))
once per forward. A chunked (SSD) kernel computes the same outputs with a different
operation count; the recurrent form is the stated one.

State convention: a recurrent mixer keeps a fixed-size state per sequence (the SSM or
delta-rule state, plus the last conv_kernel - 1 inputs of its convolution), whatever the
context length: it is counted once, not per token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from archdb.measure import conventions as cv
from archdb.measure.conventions import FlopClass as C
from archdb.mixers import MIXERS, MixerPlugin
from archdb.mixers._common import conv_flops as _conv_flops
from archdb.schema import LayerKind, Mamba2Norm

from .layout import LayerSpec
from .tally import Tally, linear_params


@dataclass(frozen=True)
class Mamba2Mixer:
    """in_proj -> (z, x, B, C, dt); causal conv over x, B, C; the SSD recurrence per head;
    y * SiLU(z), grouped RMSNorm; out_proj (transformers' Mamba2Mixer). Falcon-H1 moves or
    drops the norm and scales the input, in_proj's five parts and the output."""

    d_model: int
    n_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    conv_bias: bool
    proj_bias: bool
    norm: Mamba2Norm = Mamba2Norm.GATED
    input_multiplier: float | None = None
    projection_multipliers: tuple[float, ...] | None = None  # z, x, B, C, dt
    output_multiplier: float | None = None
    norm_eps: float | None = None  # the card's norm epsilon (None: RMS_EPS)
    time_step_floor: float | None = None  # dt clamped below at it (Zamba2); None: no clamp

    @property
    def inner(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        return self.inner + 2 * self.n_groups * self.state_size

    @property
    def in_width(self) -> int:
        return self.inner + self.conv_dim + self.n_heads  # z, xBC, dt

    def params(self) -> int:
        n = linear_params(self.d_model, self.in_width, self.proj_bias)
        n += self.conv_dim * self.conv_kernel + (self.conv_dim if self.conv_bias else 0)
        n += 3 * self.n_heads  # dt_bias, A_log, D
        n += self.inner if self.norm is not Mamba2Norm.NONE else 0  # the norm's scale
        return n + linear_params(self.inner, self.d_model, self.proj_bias)

    def flops(self, tally: Tally) -> None:
        h, p, n, inner = self.n_heads, self.head_dim, self.state_size, self.inner
        if self.input_multiplier is not None:
            tally.elementwise(self.d_model)
        tally.linear(self.d_model, self.in_width, self.proj_bias)
        if self.projection_multipliers is not None:
            tally.elementwise(self.in_width)  # Falcon-H1's muP vector
        _conv_flops(tally, self.conv_dim, self.conv_kernel, self.conv_bias)
        tally.add(C.ELEMENTWISE, 2 * h)  # A = -exp(A_log), once per forward
        tally.elementwise(2 * h + 2 * h)  # dt = softplus(dt + dt_bias); dA = exp(dt * A)
        if self.time_step_floor is not None:
            tally.elementwise(h)  # dt clamped below
        tally.elementwise(h * p)  # dt * x
        # state update h = dA h + (dt x) B^T: scale, outer product, add; read-out y = h C
        tally.elementwise(3 * h * p * n + cv.FLOPS_PER_MAC * h * p * n)
        tally.elementwise(2 * inner)  # y + D x
        tally.elementwise(2 * inner)  # y * SiLU(z)
        if self.norm is not Mamba2Norm.NONE:
            tally.add(C.NORM, tally.seq_len * inner * cv.RMSNORM)  # per group, then the scale
            tally.elementwise(cv.AFFINE * inner)
        tally.linear(inner, self.d_model, self.proj_bias)
        if self.output_multiplier is not None:
            tally.elementwise(self.d_model)

    def cache_entries(self, context: int) -> int:
        """The SSM state and the conv's last inputs: a constant, whatever the context."""
        return self.inner * self.state_size + self.conv_dim * (self.conv_kernel - 1)

    def module(self, ctx):
        from archdb.builder.recurrent import Mamba2Mixer as Module

        return Module(
            self.d_model,
            self.n_heads,
            self.head_dim,
            self.state_size,
            self.n_groups,
            self.conv_kernel,
            self.conv_bias,
            self.proj_bias,
            self.norm,
            self.input_multiplier,
            self.projection_multipliers,
            self.output_multiplier,
            self.norm_eps,
            self.time_step_floor,
        )


RecurrentMixer = (
    Mamba2Mixer | Any  # a mixer plugin's spec (archdb.mixers)
)
Reader = Any  # plan._Reader, not imported: plan imports this module


def _mamba2(r: Reader, spec: LayerSpec) -> Mamba2Mixer:
    m = r.a.mixers.mamba2
    return Mamba2Mixer(
        r.d,
        m.n_heads,
        m.head_dim,
        m.state_size,
        m.n_groups,
        m.conv_kernel,
        m.conv_bias,
        m.proj_bias,
        m.norm or Mamba2Norm.GATED,
        _factor(m.input_multiplier),
        _factors(m.projection_multipliers),
        _factor(m.output_multiplier),
        r.a.norm.eps,
        m.time_step_floor,
    )


def _factor(value: float | None) -> float | None:
    """A multiplier the forward pass applies (None: 1, no operation)."""
    return None if value is None or value == 1.0 else value


def _factors(values: list[float] | None) -> tuple[float, ...] | None:
    if values is None or all(v == 1.0 for v in values):
        return None
    return tuple(values)


# layer-pattern entry -> the spec of a non-attention mixer
RECURRENT: dict[LayerKind, Callable[[Reader, LayerSpec], RecurrentMixer]] = {
    LayerKind.MAMBA2: _mamba2,
}


def _plugin_maker(plugin: MixerPlugin) -> Callable[[Reader, LayerSpec], RecurrentMixer]:
    return lambda r, spec: plugin.plan(plugin.sizes_of(r.a), r)


RECURRENT |= {LayerKind(kind): _plugin_maker(plugin) for kind, plugin in MIXERS.items()}
