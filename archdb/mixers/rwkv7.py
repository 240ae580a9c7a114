"""RWKV-7 "Goose" time mixing (Peng et al. 2025, arXiv 2503.14456; BlinkDL's RWKV-LM
``RWKV_Tmix_x070``) as a layer-pattern mixer (``rwkv7``), declared whole: sizes and their
check, plan spec, toy rule and torch module. Its layers' MLP is the card's, as RWKV-7's
channel mixing (``mlp.token_shift``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pydantic import Field, StrictBool

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.field_types import Strict, Width
from archdb.tally import Tally

from ._common import linear_params
from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.rwkv7) -----------------------------------------------------


class Rwkv7(Strict):
    """RWKV-7's time mixing (arXiv 2503.14456 Section 4), laid out as RWKV-LM's
    RWKV_Tmix_x070: the input interpolated with the previous token's by six learned weights
    per channel (for r, w, k, v, a, g); receptance, key, value and output projections
    d_model x d_model without bias; four low-rank (LoRA-style) projections d_model -> rank ->
    d_model for the decay w, the in-context learning rate a, the value residual's mix and the
    output gate g; the generalized delta rule per head of head_dim channels,
    S_t = S_{t-1} diag(w_t) + S_{t-1} a_t b_t^T + v_t k_t^T with a vector-valued decay
    w = exp(-exp(-softplus(-(w0 + tanh(x w1) w2)) - 0.5)), a = -kk and b = kk * a (kk the
    L2-normed key per head); the values mixed with the first layer's; a per-head group norm
    (eps 64e-5) of the read-out S_t r_t, a bonus (r . k r_k) v per head, times g; the output
    projection. The state between tokens: S per head and the previous token's input."""

    head_dim: Width = Field(
        description="Width of each head (head_size_a; 64 in every release): d_model / "
        "head_dim heads, each with a head_dim x head_dim state; must divide d_model."
    )
    decay_rank: Width = Field(
        description="Rank of the decay's low-rank projection (D_DECAY_LORA: w1, w2)."
    )
    rate_rank: Width = Field(
        description="Rank of the in-context learning rate's low-rank projection "
        "(D_AAA_LORA: a1, a2)."
    )
    value_rank: Width = Field(
        description="Rank of the value residual mix's low-rank projection (D_MV_LORA: v1, "
        "v2). Every layer holds it, the first too, whose values are the ones mixed in "
        "(its mix is an identity; the released checkpoints store it, the reference skips it)."
    )
    gate_rank: Width = Field(
        description="Rank of the output gate's low-rank projection (D_GATE_LORA: g1, g2)."
    )
    mlp: StrictBool = Field(
        description="Whether an rwkv7 layer also has the card's MLP after the mixer (RWKV-7: "
        "true, its channel mixing, mlp.token_shift)."
    )


def _check(sizes: Rwkv7, arch) -> None:
    if arch.d_model is not None and arch.d_model % sizes.head_dim:
        raise ValueError(
            f"mixers.rwkv7.head_dim ({sizes.head_dim}) must divide d_model ({arch.d_model})"
        )
    if list(arch.attention.layer_pattern) != ["rwkv7"]:
        raise ValueError(
            "mixers.rwkv7: attention.layer_pattern must be [rwkv7] (every layer mixes its "
            "values with the first layer's)"
        )


# --- plan spec -----------------------------------------------------------------------------

# elementwise FLOPs per channel and token, as the module runs them: the token shift (1)
# and six interpolations x + shift m (12); the decay's soft clamp -softplus(-(w0 + .)) - 0.5
# (5) and exp(-exp(.)) (3); the value residual v + (v_first - v) sigmoid(v0 + .) (5); the
# learning rate sigmoid(a0 + .) (2); k k_k and its L2 norm per head (x^2, sum, divide: 4,
# plus a square root and a floor per head); k (1 + (a - 1) k_a) (4); -kk and kk a (2); the
# group norm's scale and bias (2); the bonus (r k r_k summed per head, times v: 4) and its
# sum (1); the gate product (1)
PER_CHANNEL = 46
GROUP_NORM_EPS = 64e-5  # RWKV-LM's ln_x: GroupNorm(H, C, eps=64e-5), "notice eps value"
# the delta rule per head and token, in head_dim^2 units: S a (2), S w (1), (S a) b^T (1),
# v k^T (1), their two sums (2); the read-out S r (2)
WKV_OPS = 9


@dataclass(frozen=True)
class Rwkv7Mixer:
    """Token-shifted r, w, k, v, a, g; the generalized delta rule per head; group norm,
    bonus and gate; the output projection (RWKV-LM's RWKV_Tmix_x070). Every layer counts
    the value residual's mix, the first too (the module runs it there as an identity; the
    reference skips it: 4 d value_rank + 5 d FLOPs a token, once a model)."""

    d_model: int
    head_dim: int
    decay_rank: int
    rate_rank: int
    value_rank: int
    gate_rank: int

    @property
    def n_heads(self) -> int:
        return self.d_model // self.head_dim

    @property
    def ranks(self) -> tuple[int, int, int, int]:
        return self.decay_rank, self.rate_rank, self.value_rank, self.gate_rank

    def params(self) -> int:
        d = self.d_model
        # x_r, x_w, x_k, x_v, x_a, x_g; w0, a0, v0; k_k, k_a; r_k (heads x head_dim); ln_x
        own = 6 * d + 3 * d + 2 * d + d + 2 * d
        loras = sum(linear_params(d, r, False) + linear_params(r, d, False) for r in self.ranks)
        return own + loras + 4 * linear_params(d, d, False)

    def flops(self, tally: Tally) -> None:
        d, n = self.d_model, self.head_dim
        for _ in range(3):  # receptance, key, value
            tally.linear(d, d, False)
        for r in self.ranks:
            tally.linear(d, r, False)
            tally.linear(r, d, False)
        tally.elementwise(self.decay_rank + self.gate_rank)  # tanh, sigmoid inside the LoRAs
        tally.elementwise(PER_CHANNEL * d + 2 * self.n_heads)  # (the norm's root and floor)
        tally.elementwise(WKV_OPS * d * n)
        tally.add(C.NORM, tally.seq_len * d * cv.LAYERNORM)  # ln_x, its affine apart
        tally.linear(d, d, False)  # output

    def cache_entries(self, context: int) -> int:
        """A head_dim x head_dim state per head and the previous token's input: a constant."""
        return self.d_model * self.head_dim + self.d_model

    def module(self, ctx):
        first = ctx.layer == 0  # the layer whose values the others mix in
        return rwkv7_module()(*self.sizes(), first, ctx.kv_store)

    def sizes(self) -> tuple[int, ...]:
        return self.d_model, self.head_dim, *self.ranks


def _plan(sizes: Rwkv7, reader) -> Rwkv7Mixer:
    return Rwkv7Mixer(
        reader.d,
        sizes.head_dim,
        sizes.decay_rank,
        sizes.rate_rank,
        sizes.value_rank,
        sizes.gate_rank,
    )


# --- toy rule ------------------------------------------------------------------------------


def _toy(sizes: Rwkv7, arch, frame: ToyFrame) -> dict:
    """Heads of at most 16 channels dividing the toy's d_model; the ranks keep their ratio
    to d_model."""
    head_dim = min(sizes.head_dim, 16)
    while frame.toy_d_model % head_dim:
        head_dim -= 1

    def rank(r: int) -> int:
        return max(1, round(r * frame.toy_d_model / frame.d_model))

    return {
        "head_dim": head_dim,
        "decay_rank": rank(sizes.decay_rank),
        "rate_rank": rank(sizes.rate_rank),
        "value_rank": rank(sizes.value_rank),
        "gate_rank": rank(sizes.gate_rank),
    }


# --- torch module --------------------------------------------------------------------------

FIRST_VALUES = "rwkv7 first-layer values"  # the build's shared store (BuildContext.kv_store)


@functools.cache
def rwkv7_module():
    """The torch module class (torch imported here, on first build)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    def low_rank(d: int, rank: int) -> nn.Sequential:
        """d -> rank -> d without bias (RWKV-LM's x @ w1 @ w2, as two linears)."""
        return nn.Sequential(nn.Linear(d, rank, bias=False), nn.Linear(rank, d, bias=False))

    def delta_rule(
        r: torch.Tensor,
        decay: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        a: torch.Tensor,
        b: torch.Tensor,
    ) -> torch.Tensor:
        """S_t = S_{t-1} diag(decay_t) + (S_{t-1} a_t) b_t^T + v_t k_t^T from S_0 = 0 (rows
        index values, columns keys), o_t = S_t r_t: all (B, T, H, N) -> (B, T, H, N). Only
        the state's recurrence loops over tokens; the read-out runs on the stacked states."""
        state = v.new_zeros(*v.shape[:1], *v.shape[2:], v.shape[-1])  # (B, H, N, N)
        states = []
        steps = zip(  # one unbind per tensor: per-step indexing would add traced nodes
            decay[..., None, :].unbind(1),
            k[..., None, :].unbind(1),
            v[..., None].unbind(1),
            a[..., None].unbind(1),
            b[..., None, :].unbind(1),
            strict=True,
        )
        for decay_t, k_t, v_t, a_t, b_t in steps:  # rows (B, H, 1, N), columns (B, H, N, 1)
            read = torch.matmul(state, a_t)  # S a: (B, H, N, 1)
            state = state * decay_t + read * b_t + v_t * k_t
            states.append(state)
        return (torch.stack(states, dim=1) * r[..., None, :]).sum(-1)

    class Rwkv7Mixer(nn.Module):
        """RWKV-7's time mixing (https://arxiv.org/abs/2503.14456) as RWKV-LM's
        RWKV_Tmix_x070 computes it in its plain PyTorch form, one token at a time. Every
        layer mixes its values with the first layer's; the first mixes with its own (an
        identity, v + (v - v) s = v), so every layer runs the same operations."""

        flop_class = "elementwise"

        def __init__(
            self,
            d_model: int,
            head_dim: int,
            decay_rank: int,
            rate_rank: int,
            value_rank: int,
            gate_rank: int,
            first: bool,
            store: dict,
        ) -> None:
            super().__init__()
            d, h = d_model, d_model // head_dim
            self.n_heads, self.head_dim = h, head_dim
            vars(self).update(first=first, store=store)  # plain attributes, not submodules
            for name in ("x_r", "x_w", "x_k", "x_v", "x_a", "x_g"):
                setattr(self, name, nn.Parameter(torch.full((d,), 0.5)))
            self.w0 = nn.Parameter(torch.full((d,), -1.0))
            self.a0 = nn.Parameter(torch.zeros(d))
            self.v0 = nn.Parameter(torch.zeros(d))
            self.w_lora, self.a_lora = low_rank(d, decay_rank), low_rank(d, rate_rank)
            self.v_lora, self.g_lora = low_rank(d, value_rank), low_rank(d, gate_rank)
            self.k_k = nn.Parameter(torch.full((d,), 0.7))
            self.k_a = nn.Parameter(torch.ones(d))
            self.r_k = nn.Parameter(torch.full((h, head_dim), -0.04))
            self.receptance = nn.Linear(d, d, bias=False)
            self.key = nn.Linear(d, d, bias=False)
            self.value = nn.Linear(d, d, bias=False)
            self.output = nn.Linear(d, d, bias=False)
            self.ln_x_weight = nn.Parameter(torch.ones(d))  # GroupNorm(H, d)'s affine
            self.ln_x_bias = nn.Parameter(torch.zeros(d))

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            b, t, d = x.shape
            heads = (b, t, self.n_heads, self.head_dim)
            shift = F.pad(x, (0, 0, 1, -1)) - x  # each token's predecessor (zeros first)
            xr, xw, xk, xv, xa, xg = (
                x + shift * m for m in (self.x_r, self.x_w, self.x_k, self.x_v, self.x_a, self.x_g)
            )
            r, k, v = self.receptance(xr), self.key(xk), self.value(xv)
            w_lora = self.w_lora[1](torch.tanh(self.w_lora[0](xw)))
            w = -F.softplus(-(self.w0 + w_lora)) - 0.5  # soft-clamped below -0.5
            if self.first:
                self.store[FIRST_VALUES] = v
            v_first = self.store[FIRST_VALUES]
            v = v + (v_first - v) * torch.sigmoid(self.v0 + self.v_lora(xv))
            a = torch.sigmoid(self.a0 + self.a_lora(xa))  # the in-context learning rate
            g = self.g_lora[1](torch.sigmoid(self.g_lora[0](xg)))
            kk = (k * self.k_k).view(heads)
            kk = kk / (kk * kk).sum(-1, keepdim=True).sqrt().clamp(min=1e-12)  # F.normalize
            k = k * (1 + (a - 1) * self.k_a)
            decay = torch.exp(-torch.exp(w))
            r_h, k_h, v_h = r.view(heads), k.view(heads), v.view(heads)
            o = delta_rule(r_h, decay.view(heads), k_h, v_h, -kk, kk * a.view(heads))
            o = F.layer_norm(o, (self.head_dim,), eps=GROUP_NORM_EPS).view(b, t, d)
            o = o * self.ln_x_weight + self.ln_x_bias
            bonus = (r_h * k_h * self.r_k).sum(-1, keepdim=True) * v_h  # per head
            return self.output((o + bonus.view(b, t, d)) * g)

    return Rwkv7Mixer


PLUGIN = MixerPlugin(
    kind="rwkv7",
    after="rwkv",
    sizes=Rwkv7,
    description="RWKV-7 time-mixing sizes; required for, and only for, rwkv7 layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda r, d: d,  # receptance, key, value and output: d x d each
    check=_check,
)
