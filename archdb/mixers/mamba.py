"""Mamba-1's selective state-space mixer (S6; Gu and Dao 2023; transformers' MambaMixer,
FalconMambaMixer and JambaMambaMixer) as a layer-pattern mixer (``mamba``), declared whole:
sizes, plan spec, toy rule and torch module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from pydantic import Field, StrictBool

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.field_types import PositiveFloat, Strict, Width
from archdb.fields import OutputOnly
from archdb.tally import Tally

from ._common import conv_flops, linear_params
from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.mamba) -----------------------------------------------------


class MambaInnerNorm(StrEnum):
    """Norms on a Mamba mixer's dt, B and C after x_proj."""

    NONE = "none"  # Mamba
    RMS = "rms"  # parameter-free RMSNorm on each (Falcon Mamba)
    RMS_SCALED = "rms-scaled"  # RMSNorm with a learned scale on each (Jamba)


def _mamba_inner_norm(a) -> bool:
    return a.mixers.mamba.inner_norm not in (None, MambaInnerNorm.NONE)


class Mamba(Strict):
    """Mamba-1's selective SSM mixer (Gu and Dao 2023), laid out as transformers' MambaMixer."""

    d_inner: Width = Field(
        description="Inner width (intermediate_size = expand x d_model): in_proj makes x and "
        "the gate z of this width; each inner channel has its own A row, D and dt."
    )
    state_size: Width = Field(description="SSM state per inner channel (d_state, N).")
    conv_kernel: Width = Field(description="Depthwise causal conv width over x (d_conv).")
    dt_rank: Width = Field(
        description="Rank of the dt projection: x_proj makes dt_rank + 2 x state_size (dt, "
        "B, C), dt_proj (with bias) widens dt to d_inner (time_step_rank; 'auto' = "
        "ceil(d_model / 16))."
    )
    conv_bias: StrictBool = Field(description="Bias on the depthwise conv (use_conv_bias).")
    proj_bias: StrictBool = Field(description="Bias on in_proj and out_proj (use_bias).")
    inner_norm: MambaInnerNorm | None = Field(
        default=None,
        description="RMSNorm on dt, B and C after x_proj: rms parameter-free (Falcon Mamba), "
        "rms-scaled with a learned scale each (Jamba). Optional; null: none (Mamba).",
    )
    inner_norm_eps: Annotated[
        PositiveFloat | None,
        OutputOnly(1e-6, "the usual RMSNorm epsilon, on Mamba's dt, B and C", _mamba_inner_norm),
    ] = Field(
        default=None,
        description="Epsilon of the dt/B/C norms (Falcon Mamba mixer_rms_eps; Jamba "
        "rms_norm_eps). Optional; null: not recorded (the builder uses 1e-6).",
    )
    mlp: StrictBool = Field(
        description="Whether a mamba layer also has the card's MLP after the mixer (Jamba: "
        "true; Mamba and Falcon Mamba, whose layers are the mixer alone: false)."
    )


# --- plan spec -----------------------------------------------------------------------------


@dataclass(frozen=True)
class MambaMixer:
    """in_proj -> (x, z); causal conv over x; x_proj -> (dt, B, C), optionally RMS-normed;
    dt_proj widens dt; the selective scan per inner channel; y * SiLU(z); out_proj
    (transformers' MambaMixer; FalconMambaMixer and JambaMambaMixer with inner_norm)."""

    d_model: int
    d_inner: int
    state_size: int
    conv_kernel: int
    dt_rank: int
    conv_bias: bool
    proj_bias: bool
    inner_norm: MambaInnerNorm
    inner_norm_eps: float | None

    @property
    def x_width(self) -> int:
        return self.dt_rank + 2 * self.state_size  # dt, B, C

    def params(self) -> int:
        e, n = self.d_inner, self.state_size
        total = linear_params(self.d_model, 2 * e, self.proj_bias)
        total += e * self.conv_kernel + (e if self.conv_bias else 0)
        total += linear_params(e, self.x_width, False)
        total += linear_params(self.dt_rank, e, True)
        total += e * n + e  # A_log, D
        if self.inner_norm is MambaInnerNorm.RMS_SCALED:
            total += self.x_width  # a scale on each of dt, B and C
        return total + linear_params(e, self.d_model, self.proj_bias)

    def flops(self, tally: Tally) -> None:
        e, n = self.d_inner, self.state_size
        tally.linear(self.d_model, 2 * e, self.proj_bias)
        conv_flops(tally, e, self.conv_kernel, self.conv_bias)
        tally.linear(e, self.x_width, False)
        if self.inner_norm is not MambaInnerNorm.NONE:
            scaled = self.inner_norm is MambaInnerNorm.RMS_SCALED
            per_element = cv.RMSNORM + (cv.AFFINE if scaled else 0)
            tally.add(C.NORM, tally.seq_len * self.x_width * per_element)
        tally.linear(self.dt_rank, e, True)
        tally.elementwise(e)  # dt = softplus(dt_proj(dt))
        tally.add(C.ELEMENTWISE, 2 * e * n)  # A = -exp(A_log), once per forward
        tally.elementwise(2 * e * n + e)  # dA = exp(dt * A); dt * x
        # state update h = dA h + (dt x) B: scale, product, add; read-out y = h C
        tally.elementwise(3 * e * n + cv.FLOPS_PER_MAC * e * n)
        tally.elementwise(2 * e)  # y + D x
        tally.elementwise(2 * e)  # y * SiLU(z)
        tally.linear(e, self.d_model, self.proj_bias)

    def cache_entries(self, context: int) -> int:
        """The SSM state and the conv's last inputs: a constant, whatever the context."""
        return self.d_inner * self.state_size + self.d_inner * (self.conv_kernel - 1)

    def module(self, ctx):
        return mamba_module()(
            self.d_model,
            self.d_inner,
            self.state_size,
            self.conv_kernel,
            self.dt_rank,
            self.conv_bias,
            self.proj_bias,
            self.inner_norm,
            self.inner_norm_eps,
        )


def _plan(m: Mamba, reader) -> MambaMixer:
    return MambaMixer(
        reader.d,
        m.d_inner,
        m.state_size,
        m.conv_kernel,
        m.dt_rank,
        m.conv_bias,
        m.proj_bias,
        m.inner_norm or MambaInnerNorm.NONE,
        m.inner_norm_eps,
    )


# --- toy rule ------------------------------------------------------------------------------


def _toy(m: Mamba, arch, frame: ToyFrame) -> dict:
    """The inner width and dt rank keep their ratio to d_model (rounded, at least 1), the
    state at most 16."""
    d, d_t = frame.d_model, frame.toy_d_model
    return {
        "d_inner": max(1, round(m.d_inner * d_t / d)),
        "dt_rank": max(1, round(m.dt_rank * d_t / d)),
        "state_size": min(m.state_size, 16),
    }


# --- torch module --------------------------------------------------------------------------


@functools.cache
def mamba_module():
    """The torch module class (torch imported here, on first build)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from archdb.device import on_meta

    from ._recurrent import CausalDepthwiseConv, linear_scan

    def ones(n: int) -> nn.Parameter:
        return nn.Parameter(torch.full((n,), 1.0))

    class MambaMixer(nn.Module):
        """Mamba's selective SSM (Gu and Dao 2023, https://arxiv.org/abs/2312.00752): per
        inner channel c, h_t = exp(dt_t A_c) h_{t-1} + dt_t x_t B_t and
        y_t = h_t C_t + D_c x_t."""

        flop_class = "elementwise"

        def __init__(
            self,
            d_model: int,
            d_inner: int,
            state_size: int,
            conv_kernel: int,
            dt_rank: int,
            conv_bias: bool,
            proj_bias: bool,
            inner_norm: MambaInnerNorm = MambaInnerNorm.NONE,
            inner_norm_eps: float | None = None,
        ) -> None:
            super().__init__()
            self.d_inner, self.state_size, self.dt_rank = d_inner, state_size, dt_rank
            self.inner_norm = inner_norm
            self.eps = 1e-6 if inner_norm_eps is None else inner_norm_eps
            self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=proj_bias)
            self.conv1d = CausalDepthwiseConv(d_inner, conv_kernel, conv_bias)
            self.x_proj = nn.Linear(d_inner, dt_rank + 2 * state_size, bias=False)
            self.dt_proj = nn.Linear(dt_rank, d_inner, bias=True)
            if on_meta():  # a shape only (see archdb.device)
                self.A_log = nn.Parameter(torch.empty(d_inner, state_size))
            else:
                a = torch.arange(1, state_size + 1, dtype=torch.float32).log()  # A = -n
                self.A_log = nn.Parameter(a.expand(d_inner, state_size).contiguous())
            self.D = ones(d_inner)
            if inner_norm is MambaInnerNorm.RMS_SCALED:  # Jamba's learned scales on dt, B, C
                self.dt_norm_weight = ones(dt_rank)
                self.b_norm_weight = ones(state_size)
                self.c_norm_weight = ones(state_size)
            self.out_proj = nn.Linear(d_inner, d_model, bias=proj_bias)

        def _norms(
            self, dt: torch.Tensor, bs: torch.Tensor, cs: torch.Tensor
        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            if self.inner_norm is MambaInnerNorm.NONE:
                return dt, bs, cs
            scaled = self.inner_norm is MambaInnerNorm.RMS_SCALED
            weights = (
                (self.dt_norm_weight, self.b_norm_weight, self.c_norm_weight)
                if scaled
                else (None, None, None)
            )
            return tuple(  # type: ignore[return-value]
                F.rms_norm(v, (v.shape[-1],), w, self.eps)
                for v, w in zip((dt, bs, cs), weights, strict=True)
            )

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            n = self.state_size
            xs, z = self.in_proj(x).chunk(2, dim=-1)
            xs = F.silu(self.conv1d(xs))  # (B, T, E)
            dt, bs, cs = self.x_proj(xs).split([self.dt_rank, n, n], dim=-1)
            dt, bs, cs = self._norms(dt, bs, cs)
            dt = F.softplus(self.dt_proj(dt))  # (B, T, E)
            a = -torch.exp(self.A_log)  # (E, N)
            decay = torch.exp(dt[..., None] * a)  # (B, T, E, N)
            dtx = dt * xs
            inputs = dtx[..., None] * bs[:, :, None, :]  # (dt x) B: (B, T, E, N)
            states = linear_scan(decay, inputs)
            y = torch.matmul(states, cs[..., None]).squeeze(-1) + xs * self.D  # h C + D x
            y = y * F.silu(z)
            return self.out_proj(y)

    return MambaMixer


PLUGIN = MixerPlugin(
    kind="mamba",
    after="global+mamba2",
    sizes=Mamba,
    description="Mamba-1 sizes; required for, and only for, mamba layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda mb, d: 2 * mb.d_inner + mb.dt_rank + 2 * mb.state_size + mb.d_inner,
)
