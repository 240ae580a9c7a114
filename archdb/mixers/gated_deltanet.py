"""Gated DeltaNet (Yang et al. 2024; Qwen3-Next's linear-attention layer) as a layer-pattern
mixer (``gated-deltanet``), declared whole: sizes and their check, plan spec, toy rule and
torch module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pydantic import Field, StrictBool

from archdb import conventions as cv
from archdb.choices.norms import RMS_EPS
from archdb.conventions import FlopClass as C
from archdb.field_types import Count, Strict, Width
from archdb.tally import Tally

from ._common import card_norm_eps, conv_flops, delta_rule_flops, linear_params
from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.gated_deltanet) --------------------------------------------


class GatedDeltaNet(Strict):
    """Gated DeltaNet (Yang et al. 2024), laid out as Qwen3-Next's linear-attention layer."""

    n_key_heads: Count = Field(description="Query/key heads (linear_num_key_heads).")
    n_value_heads: Count = Field(
        description="Value heads, each with a key_head_dim x value_head_dim state "
        "(linear_num_value_heads); a multiple of n_key_heads."
    )
    key_head_dim: Width = Field(description="Width of a query/key head (linear_key_head_dim).")
    value_head_dim: Width = Field(description="Width of a value head (linear_value_head_dim).")
    conv_kernel: Width = Field(
        description="Depthwise causal conv width over q, k, v (linear_conv_kernel_dim)."
    )
    mlp: StrictBool = Field(
        description="Whether a gated-deltanet layer also has the card's MLP (Qwen3-Next: true)."
    )


def _check(g: GatedDeltaNet, arch) -> None:
    if g.n_value_heads % g.n_key_heads:
        raise ValueError(
            f"mixers.gated_deltanet.n_key_heads ({g.n_key_heads}) must divide "
            f"n_value_heads ({g.n_value_heads})"
        )


# --- plan spec -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GatedDeltaNetMixer:
    """in_proj_qkvz and in_proj_ba; causal conv over q, k, v; L2-normed q, k; the gated
    delta rule per value head; RMSNorm(o) * SiLU(z); out_proj (Qwen3-Next's layout)."""

    d_model: int
    n_key_heads: int
    n_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    eps: float = RMS_EPS  # the gated norm's: the card's norm.eps

    @property
    def key_dim(self) -> int:
        return self.n_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.n_value_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_dim + self.value_dim

    def params(self) -> int:
        d, hv = self.d_model, self.n_value_heads
        n = linear_params(d, 2 * self.key_dim + 2 * self.value_dim, False)  # q, k, v, z
        n += linear_params(d, 2 * hv, False)  # beta and decay inputs (b, a)
        n += self.conv_dim * self.conv_kernel  # depthwise conv, no bias
        n += 2 * hv  # dt_bias, A_log
        n += self.value_head_dim  # the gated norm's scale, shared by the heads
        return n + linear_params(self.value_dim, d, False)

    def flops(self, tally: Tally) -> None:
        d, hk, hv = self.d_model, self.n_key_heads, self.n_value_heads
        dk, dv = self.key_head_dim, self.value_head_dim
        tally.linear(d, 2 * self.key_dim + 2 * self.value_dim, False)
        tally.linear(d, 2 * hv, False)
        conv_flops(tally, self.conv_dim, self.conv_kernel, False)
        tally.add(C.ELEMENTWISE, 2 * hv)  # -exp(A_log), once per forward
        tally.elementwise(hv + 3 * hv)  # beta = sigmoid(b); g = -A softplus(a + dt_bias)
        delta_rule_flops(tally, hk, hv, dk, dv, decay_rates=hv)
        tally.add(C.NORM, tally.seq_len * self.value_dim * (cv.RMSNORM + cv.AFFINE))
        tally.elementwise(2 * self.value_dim)  # * SiLU(z)
        tally.linear(self.value_dim, d, False)

    def cache_entries(self, context: int) -> int:
        """A dk x dv state per value head and the conv's last inputs: a constant."""
        state = self.n_value_heads * self.key_head_dim * self.value_head_dim
        return state + self.conv_dim * (self.conv_kernel - 1)

    def module(self, ctx):
        return gated_deltanet_module()(
            self.d_model,
            self.n_key_heads,
            self.n_value_heads,
            self.key_head_dim,
            self.value_head_dim,
            self.conv_kernel,
            self.eps,
        )


def _plan(g: GatedDeltaNet, reader) -> GatedDeltaNetMixer:
    return GatedDeltaNetMixer(
        reader.d,
        g.n_key_heads,
        g.n_value_heads,
        g.key_head_dim,
        g.value_head_dim,
        g.conv_kernel,
        card_norm_eps(reader.a),
    )


# --- toy rule ------------------------------------------------------------------------------


def _toy(g: GatedDeltaNet, arch, frame: ToyFrame) -> dict:
    """At most 2 key heads, the value heads per key head kept, head widths at most 16."""
    keys = min(g.n_key_heads, frame.rule.kv_heads_max)
    return {
        "n_key_heads": keys,
        "n_value_heads": keys * (g.n_value_heads // g.n_key_heads),
        "key_head_dim": min(g.key_head_dim, 16),
        "value_head_dim": min(g.value_head_dim, 16),
    }


# --- torch module --------------------------------------------------------------------------


@functools.cache
def gated_deltanet_module():
    """The torch module class (torch imported here, on first build)."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    from ._recurrent import CausalDepthwiseConv, gated_delta_rule, l2_normalize

    class GatedDeltaNetMixer(nn.Module):
        """Gated DeltaNet (Yang et al. 2024, https://arxiv.org/abs/2412.06464) as in
        Qwen3-Next: S_t = exp(g_t) S_{t-1} + k_t (beta_t (v_t - S_{t-1}^T k_t))^T,
        o_t = S_t^T q_t."""

        flop_class = "elementwise"

        def __init__(
            self,
            d_model: int,
            n_key_heads: int,
            n_value_heads: int,
            key_head_dim: int,
            value_head_dim: int,
            conv_kernel: int,
            eps: float = 1e-6,
        ) -> None:
            super().__init__()
            self.eps = eps  # the gated norm's (the blocks' norm epsilon in transformers)
            self.hk, self.hv, self.dk, self.dv = (
                n_key_heads,
                n_value_heads,
                key_head_dim,
                value_head_dim,
            )
            key_dim, value_dim = n_key_heads * key_head_dim, n_value_heads * value_head_dim
            self.key_dim, self.value_dim = key_dim, value_dim
            self.in_proj_qkvz = nn.Linear(d_model, 2 * key_dim + 2 * value_dim, bias=False)
            self.in_proj_ba = nn.Linear(d_model, 2 * n_value_heads, bias=False)
            self.conv1d = CausalDepthwiseConv(2 * key_dim + value_dim, conv_kernel, False)
            self.dt_bias = nn.Parameter(torch.full((n_value_heads,), 1.0))
            self.A_log = nn.Parameter(torch.full((n_value_heads,), 0.0))
            self.norm_weight = nn.Parameter(torch.full((value_head_dim,), 1.0))
            self.out_proj = nn.Linear(value_dim, d_model, bias=False)

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            b, t, _d = x.shape
            hk, hv, dk, dv = self.hk, self.hv, self.dk, self.dv
            qkv, z = self.in_proj_qkvz(x).split(
                [2 * self.key_dim + self.value_dim, self.value_dim], -1
            )
            beta_in, a_in = self.in_proj_ba(x).split([hv, hv], dim=-1)
            q, k, v = F.silu(self.conv1d(qkv)).split(
                [self.key_dim, self.key_dim, self.value_dim], -1
            )
            a = -torch.exp(self.A_log)
            beta = torch.sigmoid(beta_in)  # (B, T, Hv)
            g = a * F.softplus(a_in + self.dt_bias)  # log of the per-token decay
            q = l2_normalize(q.reshape(b, t, hk, dk)) * (1.0 / math.sqrt(dk))
            k = l2_normalize(k.reshape(b, t, hk, dk))
            q = q.repeat_interleave(hv // hk, dim=2)  # (B, T, Hv, Dk)
            k = k.repeat_interleave(hv // hk, dim=2)
            o = gated_delta_rule(q, k, v.reshape(b, t, hv, dv), g, beta)
            o = F.rms_norm(o, (dv,), self.norm_weight, eps=self.eps)  # a plain w scale
            o = o.reshape(b, t, self.value_dim) * F.silu(z)
            return self.out_proj(o)

    return GatedDeltaNetMixer


PLUGIN = MixerPlugin(
    kind="gated-deltanet",
    after="mamba2",
    sizes=GatedDeltaNet,
    description="Gated DeltaNet sizes; required for, and only for, gated-deltanet layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda g, d: 2 * (g.n_key_heads * g.key_head_dim + g.n_value_heads * g.value_head_dim),
    check=_check,
)
