"""Kimi Delta Attention (Kimi Linear, arXiv 2510.26692; transformers'
KimiLinearDeltaAttention) as a layer-pattern mixer (``kda``), declared whole: sizes and
their check, plan spec, toy rule and torch module.
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

# --- sizes (architecture.mixers.kda) -------------------------------------------------------


class KimiDeltaAttention(Strict):
    """Kimi Delta Attention (Kimi Linear, arXiv 2510.26692 Section 3), laid out as
    transformers' KimiLinearDeltaAttention: q, k, v projections (d_model -> n_heads x
    head_dim each), a depthwise causal conv with SiLU over each, L2-normed q and k; the
    delta rule per head with a decay per key channel, -exp(A_log) softplus(f + dt_bias),
    f from a low-rank projection; a sigmoid write strength per head (b_proj); a per-head
    RMSNorm of the output times an optional low-rank sigmoid gate; out projection."""

    n_heads: Count = Field(
        description="Heads, each with a head_dim x head_dim state (linear_attn_config.num_heads)."
    )
    head_dim: Width = Field(
        description="Width of each query, key and value head (linear_attn_config.head_dim); "
        "the decay has one rate per key channel of each head."
    )
    conv_kernel: Width = Field(
        description="Depthwise causal conv width over q, k and v, no bias "
        "(linear_attn_config.short_conv_kernel_size); the state kept between tokens is its "
        "last conv_kernel - 1 inputs."
    )
    decay_rank: Width = Field(
        description="Rank of the decay's low-rank projection d_model -> decay_rank -> "
        "n_heads x head_dim (f_a_proj, f_b_proj; transformers: head_dim)."
    )
    output_gate: StrictBool = Field(
        description="Whether the normed output is multiplied by sigmoid of a low-rank "
        "projection of the layer input (g_a_proj, g_b_proj; Kimi Linear: true)."
    )
    output_gate_rank: Width | None = Field(
        default=None,
        description="Rank of the output gate's projection d_model -> rank -> n_heads x "
        "head_dim (transformers: head_dim); required for, and only for, output_gate true.",
    )
    mlp: StrictBool = Field(
        description="Whether a kda layer also has the card's MLP (or MoE) after the mixer "
        "(Kimi Linear: true)."
    )


def _check(sizes: KimiDeltaAttention, arch) -> None:
    if sizes.output_gate != (sizes.output_gate_rank is not None):
        raise ValueError(
            "mixers.kda.output_gate_rank is required for, and only for, output_gate true"
        )


# --- plan spec -----------------------------------------------------------------------------


@dataclass(frozen=True)
class KimiDeltaAttentionMixer:
    """q, k, v projections, each through a depthwise causal conv and SiLU; L2-normed q, k;
    the delta rule with a decay per key channel, g = -exp(A_log) softplus(f_b(f_a(x)) +
    dt_bias); beta = sigmoid(b_proj(x)); RMSNorm(o) per head, times sigmoid(g_b(g_a(x)))
    when gated; o_proj (transformers' KimiLinearDeltaAttention). Gated DeltaNet's rule with
    one key head per value head and a decay rate per channel instead of per head."""

    d_model: int
    n_heads: int
    head_dim: int
    conv_kernel: int
    decay_rank: int
    output_gate_rank: int | None  # None: no output gate
    eps: float = RMS_EPS  # the output norm's: the card's norm.eps

    @property
    def inner(self) -> int:
        return self.n_heads * self.head_dim

    def params(self) -> int:
        d, h, inner = self.d_model, self.n_heads, self.inner
        n = linear_params(d, 3 * inner, False)  # q, k, v
        n += 3 * inner * self.conv_kernel  # their depthwise convs, no bias
        n += linear_params(d, self.decay_rank, False) + linear_params(self.decay_rank, inner, False)
        n += inner + h  # dt_bias per channel, A_log per head
        n += linear_params(d, h, False)  # b_proj: beta
        if self.output_gate_rank is not None:
            r = self.output_gate_rank
            n += linear_params(d, r, False) + linear_params(r, inner, False)
        n += self.head_dim  # the output norm's scale, shared by the heads
        return n + linear_params(inner, d, False)

    def flops(self, tally: Tally) -> None:
        d, h, dh, inner = self.d_model, self.n_heads, self.head_dim, self.inner
        tally.linear(d, 3 * inner, False)
        conv_flops(tally, 3 * inner, self.conv_kernel, False)
        tally.linear(d, self.decay_rank, False)
        tally.linear(self.decay_rank, inner, False)
        tally.add(C.ELEMENTWISE, 2 * h)  # -exp(A_log), once per forward
        tally.elementwise(3 * inner)  # g = -A softplus(f + dt_bias), per channel
        tally.linear(d, h, False)
        tally.elementwise(h)  # beta = sigmoid(b)
        delta_rule_flops(tally, h, h, dh, dh, decay_rates=inner)
        tally.add(C.NORM, tally.seq_len * inner * (cv.RMSNORM + cv.AFFINE))
        if self.output_gate_rank is not None:
            tally.linear(d, self.output_gate_rank, False)
            tally.linear(self.output_gate_rank, inner, False)
            tally.elementwise(2 * inner)  # * sigmoid(gate)
        tally.linear(inner, d, False)

    def cache_entries(self, context: int) -> int:
        """A head_dim x head_dim state per head and the convs' last inputs: a constant."""
        return self.n_heads * self.head_dim**2 + 3 * self.inner * (self.conv_kernel - 1)

    def module(self, ctx):
        return kda_module()(
            self.d_model,
            self.n_heads,
            self.head_dim,
            self.conv_kernel,
            self.decay_rank,
            self.output_gate_rank,
            self.eps,
        )


def _plan(sizes: KimiDeltaAttention, reader) -> KimiDeltaAttentionMixer:
    gate = sizes.output_gate_rank if sizes.output_gate else None
    eps = card_norm_eps(reader.a)  # the output norm's
    return KimiDeltaAttentionMixer(
        reader.d, sizes.n_heads, sizes.head_dim, sizes.conv_kernel, sizes.decay_rank, gate, eps
    )


# --- toy rule ------------------------------------------------------------------------------


def _toy(sizes: KimiDeltaAttention, arch, frame: ToyFrame) -> dict:
    """At most 2 heads of at most 16 dims; the gate ranks scale with the head width."""
    head_dim = min(sizes.head_dim, 16)

    def rank(r: int | None) -> int | None:
        return None if r is None else max(1, round(r * head_dim / sizes.head_dim))

    return {
        "n_heads": min(sizes.n_heads, frame.rule.kv_heads_max),
        "head_dim": head_dim,
        "decay_rank": rank(sizes.decay_rank),
        "output_gate_rank": rank(sizes.output_gate_rank),
    }


# --- torch module --------------------------------------------------------------------------


@functools.cache
def kda_module():
    """The torch module class (torch imported here, on first build)."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    from ._recurrent import CausalDepthwiseConv, gated_delta_rule, l2_normalize

    class KimiDeltaAttentionMixer(nn.Module):
        """Kimi Delta Attention (Kimi Linear, https://arxiv.org/abs/2510.26692), laid out as
        transformers' KimiLinearDeltaAttention: the gated delta rule of Gated DeltaNet with a
        decay per key channel, S_t = Diag(exp(g_t)) S_{t-1} + k_t (beta_t (v_t - S^T k_t))^T
        (S decayed first), o_t = S_t^T q_t; RMSNorm(o) * sigmoid(gate) per head."""

        flop_class = "elementwise"

        def __init__(
            self,
            d_model: int,
            n_heads: int,
            head_dim: int,
            conv_kernel: int,
            decay_rank: int,
            output_gate_rank: int | None,
            eps: float = 1e-6,
        ) -> None:
            super().__init__()
            self.n_heads, self.head_dim, self.eps = n_heads, head_dim, eps
            inner = self.inner = n_heads * head_dim
            self.q_proj = nn.Linear(d_model, inner, bias=False)
            self.k_proj = nn.Linear(d_model, inner, bias=False)
            self.v_proj = nn.Linear(d_model, inner, bias=False)
            self.conv1d = CausalDepthwiseConv(3 * inner, conv_kernel, False)  # [q, k, v]
            self.f_a_proj = nn.Linear(d_model, decay_rank, bias=False)
            self.f_b_proj = nn.Linear(decay_rank, inner, bias=False)
            self.dt_bias = nn.Parameter(torch.full((inner,), 0.0))
            self.A_log = nn.Parameter(torch.full((n_heads,), 0.0))  # A = -exp(A_log) = -1
            self.b_proj = nn.Linear(d_model, n_heads, bias=False)
            self.g_a_proj = self.g_b_proj = None
            if output_gate_rank is not None:
                self.g_a_proj = nn.Linear(d_model, output_gate_rank, bias=False)
                self.g_b_proj = nn.Linear(output_gate_rank, inner, bias=False)
            self.norm_weight = nn.Parameter(torch.full((head_dim,), 1.0))
            self.o_proj = nn.Linear(inner, d_model, bias=False)

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            b, t, _d = x.shape
            heads = (b, t, self.n_heads, self.head_dim)
            qkv = torch.cat((self.q_proj(x), self.k_proj(x), self.v_proj(x)), dim=-1)
            q, k, v = F.silu(self.conv1d(qkv)).split([self.inner] * 3, dim=-1)
            a = -torch.exp(self.A_log)
            rates = F.softplus(self.f_b_proj(self.f_a_proj(x)) + self.dt_bias).view(heads)
            g = a[:, None] * rates  # log of the decay, per key channel
            beta = torch.sigmoid(self.b_proj(x))  # (B, T, H)
            q = l2_normalize(q.view(heads)) * (1.0 / math.sqrt(self.head_dim))
            k = l2_normalize(k.view(heads))
            o = gated_delta_rule(q, k, v.view(heads), g, beta)
            o = F.rms_norm(o, (self.head_dim,), self.norm_weight, eps=self.eps)  # a plain w scale
            if self.g_a_proj is not None:
                o = o * torch.sigmoid(self.g_b_proj(self.g_a_proj(x)).view(heads))
            return self.o_proj(o.reshape(b, t, self.inner))

    return KimiDeltaAttentionMixer


PLUGIN = MixerPlugin(
    kind="kda",
    after="mamba",
    sizes=KimiDeltaAttention,
    description="Kimi Delta Attention sizes; required for, and only for, kda layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda kd, d: 3 * kd.n_heads * kd.head_dim + kd.decay_rank + kd.n_heads,
    check=_check,
)
