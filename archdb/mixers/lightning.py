"""MiniMax-01's lightning attention (Qin et al. 2024; transformers' MiniMaxLightningAttention)
as a layer-pattern mixer (``lightning``), declared whole: sizes, plan spec, toy rule and the
torch module of its recurrent form.
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
from archdb.fields import OutputOnly
from archdb.tally import Tally

from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.lightning) -------------------------------------------------


class LightningDecay(StrEnum):
    """How lightning attention's fixed decay rate is set per head and layer."""

    # head h = 1..H of layer l = 0..L-1 decays its state by exp(-s) per token, s =
    # 2^(-8h/H) x (1 - l / (L - 1 + 1e-5) + 1e-5): ALiBi's geometric head slopes, shrunk
    # towards the top of the stack (MiniMax-01; transformers' MiniMaxLightningAttention).
    # MiniMax's remote code divides by L - 1 (about 1e-7 apart) and, for a head count not
    # a power of 2, interleaves ALiBi's slopes of the next power: that count is not this
    MINIMAX = "minimax"


class Lightning(Strict):
    """MiniMax-01's lightning attention (Qin et al. 2024), laid out as transformers'
    MiniMaxLightningAttention: qkv_proj (d_model -> 3 x n_heads x head_dim, no bias), SiLU
    on q, k and v; per head a head_dim x head_dim state S_t = exp(-s) S_{t-1} + k_t v_t^T
    read as o_t = q_t S_t (no softmax, no 1/sqrt(d) scale, no positions); an RMSNorm over
    the heads' joint output (epsilon 1e-6, fixed in the modeling code); a sigmoid gate
    output_gate(x) (d_model -> n_heads x head_dim, no bias); out_proj back to d_model. The
    block_size of the released code only orders the computation (blocks of tokens at once);
    it computes the same function and is not a field."""

    n_heads: Count = Field(
        description="Heads, each with its own decay and head_dim x head_dim state "
        "(MiniMax: num_attention_heads, shared with the softmax layers)."
    )
    head_dim: Width = Field(
        description="Width of a query/key/value head (MiniMax: head_dim, shared with the "
        "softmax layers)."
    )
    decay: LightningDecay = Field(
        description="The rule that sets each head's decay rate from its index and the "
        "layer's depth: minimax, s = 2^(-8h/H) x (1 - l / (L - 1 + 1e-5) + 1e-5) for head "
        "h = 1..H of layer l of L (0-based), a decay of exp(-s) per token."
    )
    mlp: StrictBool = Field(
        description="Whether a lightning layer also has the card's MLP (MiniMax-01: true)."
    )
    skip_multiplier: Annotated[
        PositiveFloat | None,
        OutputOnly(1.0, "the stream joins lightning's output unscaled"),
    ] = Field(
        default=None,
        description="Factor on the residual stream where a lightning layer's output joins "
        "it: a * x + f(x) (MiniMax: layernorm_linear_attention_alpha, transformers "
        "linear_attn_alpha_factor). Optional; null: not recorded (the builder uses 1).",
    )
    output_multiplier: Annotated[
        PositiveFloat | None, OutputOnly(1.0, "lightning attention's output is not rescaled")
    ] = Field(
        default=None,
        description="Factor on the mixer's output, after out_proj (MiniMax: "
        "layernorm_linear_attention_beta, transformers linear_attn_beta_factor). Optional; "
        "null: not recorded (the builder uses 1).",
    )


# --- the decay rule ------------------------------------------------------------------------


def minimax_decay_rates(n_heads: int, layer: int, n_layers: int) -> list[float]:
    """MiniMax-01's rates s per head (the state decays by exp(-s) a token): ALiBi's slopes
    2^(-8h/H), h = 1..H, times 1 - l / (L - 1 + 1e-5) + 1e-5 at layer l of L (0-based), as
    transformers' MiniMaxLightningAttention.get_slope_rate computes them."""
    base = 1 / (2 ** (8 / n_heads))
    factor = 1 - layer / (n_layers - 1 + 1e-5) + 1e-5
    return [base ** (h + 1) * factor for h in range(n_heads)]


# decay rule -> (n_heads, layer index, n_layers) -> one rate per head
LIGHTNING_DECAYS = {LightningDecay.MINIMAX: minimax_decay_rates}


# --- plan spec -----------------------------------------------------------------------------


def _factor(value: float | None) -> float | None:
    """A multiplier the forward pass applies (None: 1, no operation)."""
    return None if value is None or value == 1.0 else value


@dataclass(frozen=True)
class LightningMixer:
    """qkv_proj, SiLU; per head S_t = exp(-s) S_{t-1} + k_t v_t^T, o_t = q_t S_t; RMSNorm
    over the heads' output; times sigmoid(output_gate(x)); out_proj (transformers'
    MiniMaxLightningAttention). The decays are fixed buffers (no parameters): their rule
    depends on the layer's depth, so the module reads its layer index when built."""

    d_model: int
    n_heads: int
    head_dim: int
    decay: LightningDecay
    output_multiplier: float | None = None

    NORM_EPS = 1e-6  # MiniMaxLightningAttention's norm: MiniMaxRMSNorm's default, not the card's

    @property
    def inner(self) -> int:
        return self.n_heads * self.head_dim

    def params(self) -> int:
        d, inner = self.d_model, self.inner
        n = d * 3 * inner  # q, k, v (no biases anywhere)
        n += d * inner  # the output gate
        n += inner  # the norm's scale
        return n + inner * d  # out_proj

    def flops(self, tally: Tally) -> None:
        d, h, k, inner = self.d_model, self.n_heads, self.head_dim, self.inner
        tally.linear(d, 3 * inner, False)
        tally.elementwise(3 * inner)  # SiLU on q, k, v
        tally.add(C.ELEMENTWISE, 2 * h)  # decay = exp(-s), once per forward
        # state update S = decay S + k v^T: scale, outer product, add; read-out q S
        tally.elementwise(3 * h * k * k + cv.FLOPS_PER_MAC * h * k * k)
        tally.add(C.NORM, tally.seq_len * inner * (cv.RMSNORM + cv.AFFINE))
        tally.linear(d, inner, False)
        tally.elementwise(2 * inner)  # sigmoid(gate) * o
        tally.linear(inner, d, False)
        if self.output_multiplier is not None:
            tally.elementwise(d)

    def cache_entries(self, context: int) -> int:
        """A head_dim x head_dim state per head: a constant, whatever the context."""
        return self.n_heads * self.head_dim * self.head_dim

    def module(self, ctx):
        rates = LIGHTNING_DECAYS[self.decay](self.n_heads, ctx.layer, ctx.n_layers)
        return lightning_module()(
            self.d_model, self.n_heads, self.head_dim, rates, self.NORM_EPS, self.output_multiplier
        )


def _plan(sizes: Lightning, reader) -> LightningMixer:
    return LightningMixer(
        reader.d, sizes.n_heads, sizes.head_dim, sizes.decay, _factor(sizes.output_multiplier)
    )


# --- toy rule ------------------------------------------------------------------------------


def _toy(sizes: Lightning, arch, frame: ToyFrame) -> dict:
    """The toy attention's heads and head width where the card shares them (MiniMax), else
    at most 4 heads of at most 16."""
    shared = (sizes.n_heads, sizes.head_dim) == (arch.attention.n_heads, arch.head_dim_effective)
    if frame.toy_heads is not None and shared:
        return {"n_heads": frame.toy_heads, "head_dim": frame.toy_head_dim}
    return {
        "n_heads": min(sizes.n_heads, frame.rule.mha_heads),
        "head_dim": min(sizes.head_dim, 16),
    }


# --- torch module --------------------------------------------------------------------------


@functools.cache
def lightning_module():
    """The torch module class (torch imported here, on first build)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from ._recurrent import linear_scan

    class LightningMixer(nn.Module):
        """MiniMax-01's lightning attention (https://arxiv.org/abs/2501.08313; transformers'
        MiniMaxLightningAttention), in its recurrent form: per head
        S_t = exp(-s) S_{t-1} + k_t v_t^T and o_t = q_t S_t, with q, k, v = SiLU(qkv_proj(x));
        then RMSNorm over the heads, a sigmoid gate from x, out_proj. transformers computes the
        same sums a block of tokens at a time (block_size)."""

        flop_class = "elementwise"

        def __init__(
            self,
            d_model: int,
            n_heads: int,
            head_dim: int,
            rates: list[float],
            norm_eps: float,
            output_multiplier: float | None = None,
        ) -> None:
            super().__init__()
            self.n_heads, self.head_dim, self.eps = n_heads, head_dim, norm_eps
            self.output_multiplier = output_multiplier
            inner = n_heads * head_dim
            self.qkv_proj = nn.Linear(d_model, 3 * inner, bias=False)
            self.output_gate = nn.Linear(d_model, inner, bias=False)
            self.norm_weight = nn.Parameter(torch.full((inner,), 1.0))
            self.out_proj = nn.Linear(inner, d_model, bias=False)
            # each head's decay rate s: a buffer a checkpoint carries (transformers'
            # slope_rate), not a parameter; the state decays by exp(-s) a token
            self.slope_rate = nn.Buffer(torch.tensor(rates, dtype=torch.float32)[:, None, None])

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            b, t, _d = x.shape
            h, k = self.n_heads, self.head_dim
            qkv = F.silu(self.qkv_proj(x)).reshape(b, t, h, 3 * k)  # per head: q, k, v
            q, keys, v = qkv.split(k, dim=-1)
            decay = torch.exp(-self.slope_rate)  # (H, 1, 1)
            inputs = keys[..., None] * v[..., None, :]  # k v^T: (B, T, H, K, K)
            states = linear_scan(decay.expand(b, t, h, k, k), inputs)
            o = torch.matmul(q[..., None, :], states).reshape(b, t, h * k)  # q S
            o = F.rms_norm(o, (h * k,), self.norm_weight, eps=self.eps)
            o = self.out_proj(torch.sigmoid(self.output_gate(x)) * o)
            return o if self.output_multiplier is None else o * self.output_multiplier

        def extra_repr(self) -> str:
            return f"heads={self.n_heads}, head_dim={self.head_dim}"

    return LightningMixer


PLUGIN = MixerPlugin(
    kind="lightning",
    after="rg-lru",
    sizes=Lightning,
    description="Lightning attention sizes; required for, and only for, lightning layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda sizes, d: 3 * sizes.n_heads * sizes.head_dim,  # qkv_proj
    skip_multiplier=lambda sizes: _factor(sizes.skip_multiplier),
    residual_factors=True,  # MiniMax-01's alpha and beta on attention and the MLP
)
