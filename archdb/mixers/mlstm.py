"""xLSTM's mLSTM (Beck et al. 2024, arXiv 2405.04517; xLSTM 7B, arXiv 2503.13427;
transformers' xLSTMLayer) as a layer-pattern mixer (``mlstm``), declared whole: sizes,
plan spec, toy rule and torch module. The xLSTM block's pre-norms and its gated SiLU
feed-forward are the card's norm and MLP (``mlp`` true).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pydantic import Field, StrictBool

from archdb import conventions as cv
from archdb.choices.norms import RMS_EPS
from archdb.conventions import FlopClass as C
from archdb.field_types import Count, PositiveFloat, Strict, Width
from archdb.tally import Tally

from ._common import card_norm_eps, linear_params
from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.mlstm) -----------------------------------------------------


class Mlstm(Strict):
    """The mLSTM (Beck et al. 2024, arXiv 2405.04517 Section 2.3), laid out as transformers'
    xLSTMLayer: q, k (d_model -> n_heads x key_head_dim), v and the output gate's input
    (d_model -> n_heads x value_head_dim), an input and a forget gate per head (d_model ->
    n_heads, with bias), each gate pre-activation soft-capped; per head a key_head_dim x
    value_head_dim matrix memory C_t = f_t C_{t-1} + i_t k_t v_t^T and a normalizer
    n_t = f_t n_{t-1} + i_t k_t, with exponential input gates and log-sigmoid forget gates
    stabilized by a running maximum m_t; the read-out C_t^T q_t / max(|n_t^T q_t|, exp(-m_t))
    (q scaled by key_head_dim ** -0.5); a LayerNorm per head (a learned scale over all
    channels, at the card's norm epsilon), times sigmoid of the output gate; an output
    projection n_heads x value_head_dim -> d_model. No biases but the gates'. The state
    between tokens: C, n and m per head."""

    n_heads: Count = Field(description="Heads, each with its own matrix memory (num_heads).")
    key_head_dim: Width = Field(
        description="Width of a query/key head: qk_dim_factor x d_model / n_heads."
    )
    value_head_dim: Width = Field(
        description="Width of a value head: v_dim_factor x d_model / n_heads."
    )
    gate_soft_cap: PositiveFloat | None = Field(
        description="c in c tanh(x / c) on the input and forget gate pre-activations "
        "(gate_soft_cap; xLSTM 7B: 15); null: uncapped."
    )
    denominator_eps: PositiveFloat = Field(
        description="Added to the read-out's denominator max(|n^T q|, exp(-m)) (eps)."
    )
    mlp: StrictBool = Field(
        description="Whether an mlstm layer also has the card's MLP after the mixer (xLSTM "
        "7B: true, its gated SiLU feed-forward)."
    )


# --- plan spec -----------------------------------------------------------------------------

# per head and token, the gates as the module runs them: the two soft caps, log sigmoid(f)
# as -softplus(-f) (3), the running maximum m_t = max(log f_t + m_{t-1}, i_t) (2), the
# stabilized gates exp(log f_t + m_{t-1} - m_t) and exp(i_t - m_t) (2 each), exp(-m_t) (2)
# and the denominator max(|n^T q|, exp(-m)) + eps (3)
GATE_OPS = 2 * cv.SOFTCAP + 3 + 2 + 2 + 2 + 2 + 3


@dataclass(frozen=True)
class MlstmMixer:
    """q, k, v, output gate, input and forget gates; the mLSTM recurrence per head; a
    LayerNorm per head, times sigmoid(output gate); out_proj (transformers' xLSTMLayer)."""

    d_model: int
    n_heads: int
    key_head_dim: int
    value_head_dim: int
    gate_soft_cap: float | None
    denominator_eps: float
    norm_eps: float = RMS_EPS  # the per-head LayerNorm's: the card's norm.eps (norm_eps)

    @property
    def key_dim(self) -> int:
        return self.n_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.n_heads * self.value_head_dim

    def params(self) -> int:
        d, h = self.d_model, self.n_heads
        n = 2 * linear_params(d, self.key_dim, False)  # q, k
        n += 2 * linear_params(d, self.value_dim, False)  # v, output gate
        n += 2 * linear_params(d, h, True)  # input and forget gates
        n += self.value_dim  # the per-head norm's scale
        return n + linear_params(self.value_dim, d, False)

    def flops(self, tally: Tally) -> None:
        d, h, dk, dv = self.d_model, self.n_heads, self.key_head_dim, self.value_head_dim
        for width in (self.key_dim, self.key_dim, self.value_dim, self.value_dim):
            tally.linear(d, width, False)
        tally.linear(d, h, True)
        tally.linear(d, h, True)
        caps = 0 if self.gate_soft_cap is None else 2 * cv.SOFTCAP
        tally.elementwise(h * (GATE_OPS - 2 * cv.SOFTCAP + caps))
        # C: the outer product k v^T, times i, then f C + it; n: i k, then f n + it
        tally.elementwise(h * (4 * dk * dv + 3 * dk))
        # q / sqrt(dk); C^T q and n^T q (a multiply-add each); the quotient
        tally.elementwise(h * (dk + cv.FLOPS_PER_MAC * (dk * dv + dk) + dv))
        tally.add(C.NORM, tally.seq_len * self.value_dim * cv.LAYERNORM)
        tally.elementwise(3 * self.value_dim)  # the norm's scale, sigmoid(o), the product
        tally.linear(self.value_dim, d, False)

    def cache_entries(self, context: int) -> int:
        """Per head the dk x dv memory C, the normalizer n and the maximum m: a constant."""
        return self.n_heads * (self.key_head_dim * self.value_head_dim + self.key_head_dim + 1)

    def module(self, ctx):
        return mlstm_module()(
            self.d_model,
            self.n_heads,
            self.key_head_dim,
            self.value_head_dim,
            self.gate_soft_cap,
            self.denominator_eps,
            self.norm_eps,
        )


def _plan(m: Mlstm, reader) -> MlstmMixer:
    return MlstmMixer(
        reader.d,
        m.n_heads,
        m.key_head_dim,
        m.value_head_dim,
        m.gate_soft_cap,
        m.denominator_eps,
        card_norm_eps(reader.a),
    )


# --- toy rule ------------------------------------------------------------------------------


def _toy(m: Mlstm, arch, frame: ToyFrame) -> dict:
    """At most kv_heads_max heads, head widths at most 16."""
    return {
        "n_heads": min(m.n_heads, frame.rule.kv_heads_max),
        "key_head_dim": min(m.key_head_dim, 16),
        "value_head_dim": min(m.value_head_dim, 16),
    }


# --- torch module --------------------------------------------------------------------------


@functools.cache
def mlstm_module():
    """The torch module class (torch imported here, on first build)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from ._recurrent import linear_scan

    class MlstmMixer(nn.Module):
        """The mLSTM (https://arxiv.org/abs/2405.04517) in its recurrent form, as
        transformers' mlstm_recurrent_step_native computes it token by token; only the
        running maximum m_t is a loop here, the memories are linear scans."""

        flop_class = "elementwise"

        def __init__(
            self,
            d_model: int,
            n_heads: int,
            key_head_dim: int,
            value_head_dim: int,
            gate_soft_cap: float | None,
            denominator_eps: float,
            norm_eps: float,
        ) -> None:
            super().__init__()
            self.h, self.dk, self.dv = n_heads, key_head_dim, value_head_dim
            self.cap, self.eps, self.norm_eps = gate_soft_cap, denominator_eps, norm_eps
            key_dim, value_dim = n_heads * key_head_dim, n_heads * value_head_dim
            self.q = nn.Linear(d_model, key_dim, bias=False)
            self.k = nn.Linear(d_model, key_dim, bias=False)
            self.v = nn.Linear(d_model, value_dim, bias=False)
            self.ogate_preact = nn.Linear(d_model, value_dim, bias=False)
            self.igate_preact = nn.Linear(d_model, n_heads, bias=True)
            self.fgate_preact = nn.Linear(d_model, n_heads, bias=True)
            self.norm_weight = nn.Parameter(torch.ones(value_dim))
            self.out_proj = nn.Linear(value_dim, d_model, bias=False)

        def soft_cap(self, x: torch.Tensor) -> torch.Tensor:
            return x if self.cap is None else self.cap * torch.tanh(x / self.cap)

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            b, t, _d = x.shape
            h, dk, dv = self.h, self.dk, self.dv
            q = self.q(x).reshape(b, t, h, dk)
            k = self.k(x).reshape(b, t, h, dk)
            v = self.v(x).reshape(b, t, h, dv)
            o = self.ogate_preact(x)
            i = self.soft_cap(self.igate_preact(x))  # (B, T, H)
            log_f = -F.softplus(-self.soft_cap(self.fgate_preact(x)))  # log sigmoid
            grown, m = running_maximum(log_f, i)
            f_act = torch.exp(grown - m)[..., None]  # the stabilized gates, (B, T, H, 1)
            i_act = torch.exp(i - m)[..., None]
            c = linear_scan(f_act[..., None], i_act[..., None] * (k[..., None] * v[..., None, :]))
            n = linear_scan(f_act, i_act * k)  # (B, T, H, Dk)
            q = (q * dk**-0.5)[..., None, :]  # (B, T, H, 1, Dk)
            numerator = torch.matmul(q, c).squeeze(-2)  # (B, T, H, Dv)
            qn = torch.matmul(q, n[..., None]).squeeze(-1)  # (B, T, H, 1)
            denominator = torch.maximum(qn.abs(), torch.exp(-m)[..., None]) + self.eps
            out = F.layer_norm(numerator / denominator, (dv,), eps=self.norm_eps)
            out = out.reshape(b, t, h * dv) * self.norm_weight
            return self.out_proj(torch.sigmoid(o) * out)

    def running_maximum(log_f: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """m_t = max(log f_t + m_{t-1}, i_t) from m_0 = 0, over dim 1 -> (log f_t + m_{t-1},
        m_t) for every t: the stabilizer, the one recurrence on the gates alone."""
        m = torch.zeros_like(i[:, 0])
        grown, maxima = [], []
        for log_f_t, i_t in zip(log_f.unbind(1), i.unbind(1), strict=True):
            grown_t = log_f_t + m
            m = torch.maximum(grown_t, i_t)
            grown.append(grown_t)
            maxima.append(m)
        return torch.stack(grown, dim=1), torch.stack(maxima, dim=1)

    return MlstmMixer


PLUGIN = MixerPlugin(
    kind="mlstm",
    after="rwkv",
    sizes=Mlstm,
    description="mLSTM (xLSTM) sizes; required for, and only for, mlstm layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda m, d: 2 * m.n_heads * (m.key_head_dim + m.value_head_dim),
)
