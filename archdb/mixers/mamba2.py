"""Mamba-2's SSD mixer (Dao and Gu 2024; transformers' Mamba2Mixer, BambaMixer,
NemotronHMamba2Mixer, FalconH1Mixer and Zamba2MambaMixer) as a layer-pattern mixer
(``mamba2``), declared whole: sizes, plan spec, toy rule and torch module. The built-in
``global+mamba2`` entry (Falcon-H1: attention beside this mixer) runs this plugin's spec.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from pydantic import Field, StrictBool

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.field_types import Count, PositiveFloat, Strict, Width
from archdb.fields import OutputOnly, Switch
from archdb.tally import Tally

from ._common import conv_flops, linear_params
from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.mamba2) ----------------------------------------------------


class Mamba2Norm(StrEnum):
    """Where a Mamba-2 mixer's output norm sits relative to its SiLU(z) gate."""

    GATED = "gated"  # RMSNorm(y * SiLU(z)): Mamba-2, Bamba, norm_before_gate false
    BEFORE_GATE = "before-gate"  # RMSNorm(y) * SiLU(z): Falcon-H1 norm_before_gate true
    NONE = "none"  # y * SiLU(z), no norm and no scale (Falcon-H1 mamba_rms_norm false)


class Mamba2(Strict):
    """Mamba-2's SSD mixer (Dao and Gu 2024), laid out as transformers' Mamba2Mixer."""

    n_heads: Count = Field(description="SSM heads (num_heads); each has its own A, D, dt.")
    head_dim: Width = Field(
        description="Channels per head; n_heads * head_dim is the inner width (expand x d_model)."
    )
    state_size: Width = Field(description="SSM state per channel (d_state, N).")
    n_groups: Count = Field(
        description="Groups sharing B and C (n_groups); must divide n_heads (1: one B, C)."
    )
    conv_kernel: Width = Field(description="Depthwise causal conv width over x, B, C (d_conv).")
    conv_bias: StrictBool = Field(description="Bias on the depthwise conv (use_conv_bias).")
    proj_bias: StrictBool = Field(description="Bias on in_proj and out_proj (use_bias).")
    mlp: StrictBool = Field(
        description="Whether a mamba2 layer also has the card's MLP after the mixer (Jamba, "
        "Bamba: true; Mamba-2, whose layers are the mixer alone: false)."
    )
    norm: Mamba2Norm | None = Field(
        default=None,
        description="The grouped RMSNorm on the mixer's output: gated, RMSNorm(y * SiLU(z)) "
        "(Mamba-2); before-gate, RMSNorm(y) * SiLU(z); none, y * SiLU(z) with no norm "
        "(Falcon-H1: mamba_rms_norm false). Optional; null: not recorded (the builder uses "
        "gated).",
    )
    input_multiplier: Annotated[
        PositiveFloat | None, OutputOnly(1.0, "Mamba-2 reads the normed stream unscaled")
    ] = Field(
        default=None,
        description="Factor on the mixer's input before in_proj (Falcon-H1: "
        "ssm_in_multiplier). Optional; null: not recorded (the builder uses 1).",
    )
    projection_multipliers: Annotated[
        list[PositiveFloat] | None, OutputOnly([1.0] * 5, "in_proj's parts are not rescaled")
    ] = Field(
        default=None,
        min_length=5,
        max_length=5,
        description="Factors on the five parts of in_proj's output, in order z, x, B, C, dt "
        "(Falcon-H1: ssm_multipliers, its muP vector). Optional; null: not recorded (the "
        "builder uses 1 for each).",
    )
    output_multiplier: Annotated[
        PositiveFloat | None, OutputOnly(1.0, "Mamba-2's output is not rescaled")
    ] = Field(
        default=None,
        description="Factor on the mixer's output, after out_proj (Falcon-H1: "
        "ssm_out_multiplier). Optional; null: not recorded (the builder uses 1).",
    )
    time_step_floor: Annotated[PositiveFloat | None, Switch()] = Field(
        default=None,
        description="Lower clamp of the time step softplus(dt + dt_bias) (Zamba2: "
        "time_step_limit (time_step_min, inf), 0.001). Optional; null: no clamp.",
    )


def _check(m: Mamba2, arch) -> None:
    if m.n_heads % m.n_groups:
        raise ValueError(f"mixers.mamba2.n_groups ({m.n_groups}) must divide n_heads ({m.n_heads})")


# --- plan spec -----------------------------------------------------------------------------


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
        conv_flops(tally, self.conv_dim, self.conv_kernel, self.conv_bias)
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
        return mamba2_module()(
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


def _factor(value: float | None) -> float | None:
    """A multiplier the forward pass applies (None: 1, no operation)."""
    return None if value is None or value == 1.0 else value


def _factors(values: list[float] | None) -> tuple[float, ...] | None:
    if values is None or all(v == 1.0 for v in values):
        return None
    return tuple(values)


def _plan(m: Mamba2, reader) -> Mamba2Mixer:
    return Mamba2Mixer(
        reader.d,
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
        reader.a.norm.eps,
        m.time_step_floor,
    )


# --- toy rule ------------------------------------------------------------------------------


def _toy(m: Mamba2, arch, frame: ToyFrame) -> dict:
    """One group, or two; heads per group at most the toy's attention heads (split over
    the groups); the inner width in its ratio to d_model (head_dim at least the rule's
    minimum, even); the state at most 16."""
    rule = frame.rule
    per_group = m.n_heads // m.n_groups
    groups = 1 if m.n_groups == 1 else 2
    heads = groups * max(1, min(per_group, rule.mha_heads // groups))
    inner = m.n_heads * m.head_dim * frame.toy_d_model / frame.d_model
    head_dim = max(rule.head_dim_min, round(inner / heads))
    return {
        "n_heads": heads,
        "n_groups": groups,
        "head_dim": head_dim + head_dim % 2,
        "state_size": min(m.state_size, 16),
    }


# --- torch module --------------------------------------------------------------------------


@functools.cache
def mamba2_module():
    """The torch module class (torch imported here, on first build)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from archdb.choices.norms import RMS_EPS

    from ._recurrent import CausalDepthwiseConv, linear_scan

    def init_vector(n: int, value: float) -> nn.Parameter:
        return nn.Parameter(torch.full((n,), value))

    class Mamba2Mixer(nn.Module):
        """Mamba-2's SSD mixer (Dao and Gu 2024, https://arxiv.org/abs/2405.21060)."""

        flop_class = "elementwise"

        def __init__(
            self,
            d_model: int,
            n_heads: int,
            head_dim: int,
            state_size: int,
            n_groups: int,
            conv_kernel: int,
            conv_bias: bool,
            proj_bias: bool,
            norm: Mamba2Norm = Mamba2Norm.GATED,
            input_multiplier: float | None = None,
            projection_multipliers: tuple[float, ...] | None = None,
            output_multiplier: float | None = None,
            norm_eps: float | None = None,
            time_step_floor: float | None = None,
        ) -> None:
            super().__init__()
            self.n_heads, self.head_dim, self.state_size = n_heads, head_dim, state_size
            self.time_step_floor = time_step_floor  # Zamba2 clamps dt below at time_step_min
            self.norm, self.eps = norm, RMS_EPS if norm_eps is None else norm_eps
            self.input_multiplier, self.output_multiplier = input_multiplier, output_multiplier
            # Falcon-H1's muP vector: a factor per part of in_proj's output (z, x, B, C, dt)
            self.projection_multipliers = projection_multipliers
            self.n_groups = n_groups
            self.inner = n_heads * head_dim
            conv_dim = self.inner + 2 * n_groups * state_size
            self.in_proj = nn.Linear(d_model, self.inner + conv_dim + n_heads, bias=proj_bias)
            self.conv1d = CausalDepthwiseConv(conv_dim, conv_kernel, conv_bias)
            self.dt_bias = init_vector(n_heads, 0.0)
            self.A_log = init_vector(n_heads, 0.0)  # A = -exp(A_log) = -1
            self.D = init_vector(n_heads, 1.0)
            self.norm_weight = init_vector(self.inner, 1.0) if norm is not Mamba2Norm.NONE else None
            self.out_proj = nn.Linear(self.inner, d_model, bias=proj_bias)

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            b, t, _d = x.shape
            h, p, n, g = self.n_heads, self.head_dim, self.state_size, self.n_groups
            if self.input_multiplier is not None:
                x = x * self.input_multiplier
            projected = self.in_proj(x)
            if self.projection_multipliers is not None:
                parts = projected.split([self.inner, self.inner, g * n, g * n, h], dim=-1)
                factors = self.projection_multipliers
                projected = torch.cat(
                    [part * m for part, m in zip(parts, factors, strict=True)], -1
                )
            z, xbc, dt = projected.split([self.inner, self.inner + 2 * g * n, h], dim=-1)
            xbc = F.silu(self.conv1d(xbc))
            xs, bs, cs = xbc.split([self.inner, g * n, g * n], dim=-1)
            xs = xs.reshape(b, t, h, p)
            bs = bs.reshape(b, t, g, n).repeat_interleave(h // g, dim=2)  # (B, T, H, N)
            cs = cs.reshape(b, t, g, n).repeat_interleave(h // g, dim=2)
            a = -torch.exp(self.A_log)
            dt = F.softplus(dt + self.dt_bias)  # (B, T, H)
            if self.time_step_floor is not None:
                dt = dt.clamp(min=self.time_step_floor)
            decay = torch.exp(dt * a)
            dtx = dt.unsqueeze(-1) * xs  # (B, T, H, P)
            inputs = dtx[..., None] * bs[:, :, :, None]  # (dt x) B^T: (B, T, H, P, N)
            states = linear_scan(decay[..., None, None], inputs)
            y = torch.matmul(states, cs[..., None]).squeeze(-1)  # y = h C: (B, T, H, P)
            y = (y + xs * self.D[:, None]).reshape(b, t, self.inner)
            if self.norm is Mamba2Norm.BEFORE_GATE:
                y = self._grouped_norm(y) * F.silu(z)
            elif self.norm is Mamba2Norm.GATED:
                y = self._grouped_norm(y * F.silu(z))
            else:
                y = y * F.silu(z)
            y = self.out_proj(y)
            return y if self.output_multiplier is None else y * self.output_multiplier

        def _grouped_norm(self, y: torch.Tensor) -> torch.Tensor:
            """RMSNorm over each group's channels, then the learned scale."""
            b, t, g = y.shape[0], y.shape[1], self.n_groups
            y = F.rms_norm(y.reshape(b, t, g, self.inner // g), (self.inner // g,), eps=self.eps)
            return y.reshape(b, t, self.inner) * self.norm_weight

    return Mamba2Mixer


PLUGIN = MixerPlugin(
    kind="mamba2",
    after="chunked",
    sizes=Mamba2,
    description="Mamba-2 sizes; required for, and only for, mamba2 layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda m, d: 2 * m.n_heads * m.head_dim + 2 * m.n_groups * m.state_size + m.n_heads,
    check=_check,
)
