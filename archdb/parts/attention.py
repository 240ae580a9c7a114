"""Attention: head attention (MHA, GQA, MQA; softmax or linear kernel; optionally with a
low-rank normed query, Step-3's MFA) and latent attention (DeepSeek's MLA), spec and torch
module.

Each spec carries its parameters, FLOPs, KV cache, decode FLOPs and state; its kernel
(``archdb.parts.kernels``) says which keys a query scores. Which spec a layer gets is read
from the card by ``archdb.plan.readers``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from operator import attrgetter
from types import SimpleNamespace
from typing import Any

from archdb import conventions as cv
from archdb.parts.compressed import CompressedAttention
from archdb.parts.kernels import LinearKernel, ScoredThroughKernel, SoftmaxKernel
from archdb.parts.norms import NormSpec, QKNormSpec
from archdb.parts.positions import RelativeXLSpec, RotarySpec
from archdb.parts.sparse import IndexerSpec
from archdb.schema import OutputGate
from archdb.tally import Tally, linear_params

# --- mixers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadAttention(ScoredThroughKernel):
    """n_heads queries over n_kv_heads key/value heads (MHA, GQA, MQA), softmax or linear."""

    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    qkv_bias: bool
    out_bias: bool
    kernel: SoftmaxKernel | LinearKernel
    rotary: RotarySpec | None = None
    qk_norm: QKNormSpec | None = None
    takes_bias: bool = False  # adds the stack's (or its own) position bias to the scores
    relative_xl: RelativeXLSpec | None = None
    cached: bool = True  # causal self-attention and cross-attention keep K/V
    output_gate: OutputGate | None = None
    values_from_keys: bool = False  # no v projection: values are the raw keys (Gemma 4 k_eq_v)
    value_norm: NormSpec | None = None  # a norm over each value head (Gemma 4: bare RMS)
    # cross-layer KV sharing: "reuse" attends with the keys and values the last earlier
    # layer of ``kv_kind`` stored, computing none; "store" computes and leaves them there
    kv_sharing: str | None = None
    kv_kind: str = ""

    @property
    def reuses_kv(self) -> bool:
        return self.kv_sharing == "reuse"

    qk_norm_after_rope: bool = False  # the QK norm reads the rotated q and k (Hunyuan)
    qkv_clip: float | None = None  # q, k and v clamped to [-clip, clip] (MPT, DBRX clip_qkv)
    v_dim: int | None = None  # value head width where it is not head_dim (MiMo-V2-Flash)
    value_scale: float | None = None  # factor on the projected values (MiMo-V2-Flash)
    # a norm over the heads' concatenated outputs before o (BitNet's attn_sub_norm)
    sub_norm: NormSpec | None = None
    # a low-rank query (Step-3's MFA): down to query_rank, this norm, up to the heads
    query_rank: int | None = None
    query_norm: NormSpec | None = None

    @property
    def value_width(self) -> int:
        return self.v_dim or self.head_dim

    @property
    def own_values(self) -> bool:
        """A value projection of its own (not the keys, not another layer's)."""
        return not self.reuses_kv and not self.values_from_keys

    @property
    def gate_width(self) -> int:
        """Gate values per head, read from the widened query projection."""
        if self.output_gate is None:
            return 0
        return self.head_dim if self.output_gate is OutputGate.ELEMENTWISE else 1

    @property
    def kv_projections(self) -> int:
        """Key and value projections: one when the values are the keys, none when the
        layer reuses another layer's."""
        if self.reuses_kv:
            return 0
        return 1 if self.values_from_keys else 2

    def query_params(self) -> int:
        """The query projection: d_model to the heads, or through the low-rank bottleneck
        (down with the q/k/v bias, the norm, up without bias)."""
        out = self.n_heads * (self.head_dim + self.gate_width)
        rank = self.query_rank
        if rank is None:
            return linear_params(self.d_model, out, self.qkv_bias)
        assert self.query_norm is not None
        down = linear_params(self.d_model, rank, self.qkv_bias)
        return down + self.query_norm.params(rank) + linear_params(rank, out, False)

    def query_flops(self, tally: Tally) -> None:
        out = self.n_heads * (self.head_dim + self.gate_width)
        rank = self.query_rank
        if rank is None:
            tally.linear(self.d_model, out, self.qkv_bias)
            return
        assert self.query_norm is not None
        tally.linear(self.d_model, rank, self.qkv_bias)
        self.query_norm.flops(tally, rank)
        tally.linear(rank, out, False)

    def params(self) -> int:
        d, h, kv, hd, vd = (
            self.d_model,
            self.n_heads,
            self.n_kv_heads,
            self.head_dim,
            self.value_width,
        )
        n = self.query_params()
        n += 0 if self.reuses_kv else linear_params(d, kv * hd, self.qkv_bias)
        n += linear_params(d, kv * vd, self.qkv_bias) if self.own_values else 0
        n += linear_params(h * vd, d, self.out_bias) + self.kernel.params()
        n += self.qk_norm.params() if self.qk_norm else 0
        n += self.sub_norm.params(h * vd) if self.sub_norm else 0
        return n + (self.relative_xl.params() if self.relative_xl else 0)

    def flops(self, tally: Tally) -> None:
        d, h, kv, hd, vd = (
            self.d_model,
            self.n_heads,
            self.n_kv_heads,
            self.head_dim,
            self.value_width,
        )
        self.query_flops(tally)
        projected = 0 if self.reuses_kv else kv * hd  # keys, then values of their own
        if not self.reuses_kv:
            tally.linear(d, kv * hd, self.qkv_bias)
        if self.own_values:
            tally.linear(d, kv * vd, self.qkv_bias)
            projected += kv * vd
        if self.qkv_clip is not None:  # one comparison per projected element
            tally.elementwise(h * (hd + self.gate_width) + projected)
        if self.value_scale is not None and self.own_values:
            tally.elementwise(kv * vd)
        if self.qk_norm is not None:
            self.qk_norm.flops(tally)
        if self.value_norm is not None and not self.reuses_kv:
            self.value_norm.flops(tally, vd, tally.seq_len * kv)
        if self.rotary is not None:
            self.rotary.flops(tally, h + (0 if self.reuses_kv else kv))
        if isinstance(self.kernel, LinearKernel):
            self.kernel.flops(tally, h, hd, vd)
        else:
            extra = cv.ELEMENTWISE if self.takes_bias else 0
            if self.relative_xl is not None:
                extra += self.relative_xl.flops(tally)
            self.kernel.flops(tally, h, vd, extra)
        if self.output_gate is not None:
            tally.elementwise(h * self.gate_width + h * vd)  # sigmoid, then the product
        if self.sub_norm is not None:
            self.sub_norm.flops(tally, h * vd)
        tally.linear(h * vd, d, self.out_bias)

    def cache_entries(self, context: int) -> int:
        """K and V entries cached for a sequence of ``context`` tokens."""
        if not self.cached or self.reuses_kv:  # a reusing layer reads another's cache
            return 0
        width = self.head_dim + self.value_width
        return self.n_kv_heads * width * self.kernel.cached_keys(context)

    def score_flops_per_key(self) -> int:
        """QK^T and AV FLOPs of one query for each key it scores (0: linear attention)."""
        if isinstance(self.kernel, LinearKernel):
            return 0
        return self.n_heads * self.kernel.matmuls_per_score(self.value_width)

    def decode_flops(self, context: int) -> int:
        """One new query over ``context`` cached tokens (its window of them; linear
        attention: its state)."""
        if isinstance(self.kernel, LinearKernel):
            return self.kernel.decode_flops(self.n_heads, self.head_dim, self.value_width)
        per_key = self.kernel.matmuls_per_score(self.value_width)  # one head's, per key read
        return per_key * self.kernel.newest_keys(context, self.n_heads)

    def state_entries(self) -> int:
        """Linear attention's fixed-size state (0 for a softmax kernel: its K/V cache is
        ``cache_entries``)."""
        if isinstance(self.kernel, LinearKernel):
            return self.kernel.state_entries(self.n_heads, self.head_dim, self.value_width)
        return 0

    def module(self, ctx: Any = None) -> Any:
        return modules().head_attention(self, ctx)


@dataclass(frozen=True)
class LatentAttention(ScoredThroughKernel):
    """DeepSeek-V2's MLA: k/v expanded from a cached latent, plus one shared RoPE key."""

    d_model: int
    n_heads: int
    kv_rank: int
    q_rank: int | None
    rope_dim: int
    nope_dim: int
    v_dim: int
    norm: NormSpec
    qkv_bias: bool
    out_bias: bool
    kernel: SoftmaxKernel
    rotary: RotarySpec | None = None
    takes_bias: bool = False
    cached: bool = True
    indexer: IndexerSpec | None = None  # DSA's lightning indexer (kernel.top_k set)
    # LongCat-Flash: factors on the query and on the normed KV latent
    lora_scales: tuple[float, float] | None = None

    def params(self) -> int:
        d, h, qk = self.d_model, self.n_heads, self.nope_dim + self.rope_dim
        if self.q_rank is None:
            q = linear_params(d, h * qk, self.qkv_bias)
        else:
            ql = self.q_rank
            q = linear_params(d, ql, self.qkv_bias) + self.norm.params(ql)
            q += linear_params(ql, h * qk, False)
        kvr = self.kv_rank
        kv = linear_params(d, kvr + self.rope_dim, self.qkv_bias) + self.norm.params(kvr)
        kv += linear_params(kvr, h * (self.nope_dim + self.v_dim), False)
        indexer = self.indexer.params() if self.indexer else 0
        return q + kv + linear_params(h * self.v_dim, d, self.out_bias) + indexer

    def flops(self, tally: Tally) -> None:
        d, h, qk = self.d_model, self.n_heads, self.nope_dim + self.rope_dim
        if self.q_rank is None:
            tally.linear(d, h * qk, self.qkv_bias)
        else:
            tally.linear(d, self.q_rank, self.qkv_bias)
            self.norm.flops(tally, self.q_rank)
            tally.linear(self.q_rank, h * qk, False)
        tally.linear(d, self.kv_rank + self.rope_dim, self.qkv_bias)
        self.norm.flops(tally, self.kv_rank)
        tally.linear(self.kv_rank, h * (self.nope_dim + self.v_dim), False)
        if self.lora_scales is not None:  # q * s_q, latent * s_kv
            tally.elementwise(h * qk + self.kv_rank)
        if self.rotary is not None:
            self.rotary.flops(tally, h + 1)  # one RoPE key shared by the heads
        if self.indexer is not None:  # scores every previous token, as a causal kernel
            t = tally.seq_len
            self.indexer.flops(tally, t * t, t * (t + 1) // 2)
        self.kernel.flops(tally, h, self.v_dim, cv.ELEMENTWISE if self.takes_bias else 0)
        tally.linear(h * self.v_dim, d, self.out_bias)

    def cache_entries(self, context: int) -> int:
        if not self.cached:
            return 0
        keys = self.kernel.cached_keys(context)
        indexer = self.indexer.cache_entries(keys) if self.indexer else 0
        return (self.kv_rank + self.rope_dim) * keys + indexer

    def score_flops_per_key(self) -> int:
        """QK^T and AV FLOPs of one query for each key it scores, keys and values expanded."""
        return self.n_heads * self.kernel.matmuls_per_score(self.v_dim)

    def decode_flops(self, context: int) -> int:
        """One new query over ``context`` cached latents in the absorbed form (the up
        projections folded into the query and the output): 2 h (2 kv_rank + d_rope) a key."""
        per_key = cv.FLOPS_PER_MAC * self.n_heads * (2 * self.kv_rank + self.rope_dim)
        return per_key * self.kernel.cached_keys(context)

    def state_entries(self) -> int:
        return 0

    def module(self, ctx: Any = None) -> Any:
        return modules().latent_attention(self, ctx)


Mixer = HeadAttention | LatentAttention | CompressedAttention


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    from torch import nn

    from archdb.device import linear

    # this module, for the specs: the torch classes below take the same names
    from archdb.parts import attention as spec
    from archdb.parts import norms as norms_part
    from archdb.parts import positions as positions_part
    from archdb.parts.attributes import set_plain

    QKNormPair, norm_module = attrgetter("QKNormPair", "norm_module")(norms_part.modules())
    RelativeXL, Rotary = attrgetter("RelativeXL", "Rotary")(positions_part.modules())

    class HeadAttention(nn.Module):
        def __init__(
            self,
            d_model: int,
            n_heads: int,
            n_kv_heads: int,
            head_dim: int,
            kernel: nn.Module,
            qkv_bias: bool,
            out_bias: bool,
            rotary: Rotary | None = None,
            qk_norm: QKNormPair | None = None,
            relative: RelativeXL | None = None,
            takes_bias: bool = True,
            gate_width: int = 0,
            values_from_keys: bool = False,
            value_norm: nn.Module | None = None,
            kv_sharing: str | None = None,
            kv_store: dict | None = None,
            kv_kind: str = "",
            qk_norm_after_rope: bool = False,
            qkv_clip: float | None = None,
            v_dim: int | None = None,
            value_scale: float | None = None,
            sub_norm: nn.Module | None = None,
            query_rank: int | None = None,
            query_norm: nn.Module | None = None,
        ) -> None:
            super().__init__()
            set_plain(
                self,
                n_heads=n_heads,
                n_kv_heads=n_kv_heads,
                head_dim=head_dim,
                # value heads of their own width (MiMo-V2-Flash), scaled once projected
                v_dim=v_dim or head_dim,
                value_scale=value_scale,
                qk_norm_after_rope=qk_norm_after_rope,  # Hunyuan norms the rotated q and k
                qkv_clip=qkv_clip,  # MPT/DBRX clip_qkv: projections clamped to [-clip, clip]
                # an output gate widens each query head by its gate values (Qwen3-Next's layout)
                gate_width=gate_width,
            )
            q_width = n_heads * (head_dim + gate_width)
            if query_rank is None:
                self.q = linear(d_model, q_width, bias=qkv_bias)
            else:  # Step-3's MFA: a normed low-rank bottleneck (q_proj, inter_norm, wq)
                assert query_norm is not None
                self.q = nn.Sequential(
                    linear(d_model, query_rank, bias=qkv_bias),
                    query_norm,
                    linear(query_rank, q_width, bias=False),
                )
            # cross-layer KV sharing (Gemma 3n/4): "store" leaves this layer's keys and values
            # in the model's store (a plain dict shared by the layers, not a submodule) under
            # its kind, "reuse" attends with them and has no k or v
            set_plain(self, kv_sharing=kv_sharing, kv_kind=kv_kind, _kv_store=kv_store)
            reuses = kv_sharing == "reuse"
            self.k = None if reuses else linear(d_model, n_kv_heads * head_dim, bias=qkv_bias)
            # Gemma 4's global layers (k_eq_v): no value projection, the raw keys are the values
            own_v = not values_from_keys and not reuses
            self.v = linear(d_model, n_kv_heads * self.v_dim, qkv_bias) if own_v else None
            self.value_norm = None if reuses else value_norm  # Gemma 4: a bare RMS norm per head
            self.sub_norm = sub_norm  # over the concatenated heads, before o (BitNet)
            self.o = linear(n_heads * self.v_dim, d_model, bias=out_bias)
            self.qk_norm = qk_norm
            self.rotary = rotary
            self.relative = relative  # Transformer-XL positions, computed in the layer
            set_plain(self, takes_bias=takes_bias)  # False: a NoPE layer ignores the score bias
            self.kernel = kernel

        def forward(
            self,
            x: torch.Tensor,
            bias: torch.Tensor | None = None,
            memory: torch.Tensor | None = None,
        ) -> torch.Tensor:
            """x: (B, T, d); memory: the encoder output for cross-attention, else None."""
            # static head counts in unflatten/flatten rather than sizes read from x: a traced
            # size read is several graph nodes (fvcore), the views are the same
            src = x if memory is None else memory
            q = self._clipped(self.q(x)).unflatten(
                -1, (self.n_heads, self.head_dim + self.gate_width)
            )
            gate = None
            if self.gate_width:
                q, gate = q.split([self.head_dim, self.gate_width], dim=-1)
            if self.k is None:  # reuse: the normed, rotated keys and values of an earlier layer
                assert self._kv_store is not None
                if self.qk_norm is not None and not self.qk_norm_after_rope:
                    q, _ = self.qk_norm(q, None)
                if self.rotary is not None:
                    (q,) = self.rotary(q)
                if self.qk_norm is not None and self.qk_norm_after_rope:
                    q, _ = self.qk_norm(q, None)
                k, v = self._kv_store[self.kv_kind]
            else:
                k = self._clipped(self.k(src)).unflatten(-1, (self.n_kv_heads, self.head_dim))
                if self.v is None:
                    v = k
                else:
                    v = self._clipped(self.v(src)).unflatten(-1, (self.n_kv_heads, self.v_dim))
                    if self.value_scale is not None:
                        v = v * self.value_scale
                if self.value_norm is not None:
                    v = self.value_norm(v)
                if self.qk_norm is not None and not self.qk_norm_after_rope:
                    q, k = self.qk_norm(q, k)
                if self.rotary is not None:
                    q, k = self.rotary(q, k)
                if self.qk_norm is not None and self.qk_norm_after_rope:
                    q, k = self.qk_norm(q, k)
                if self.kv_sharing == "store":
                    assert self._kv_store is not None
                    self._kv_store[self.kv_kind] = k, v
            groups = self.n_heads // self.n_kv_heads
            k, v = repeat_kv(k, groups), repeat_kv(v, groups)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H, T, D)
            if not self.takes_bias:
                bias = None
            if self.relative is not None:
                bias = self.relative(q, k)
            out = self.kernel(q, k, v, bias).transpose(1, 2)  # (B, T, H, D)
            if gate is not None:
                out = out * torch.sigmoid(gate)
            out = out.flatten(2)
            if self.sub_norm is not None:
                out = self.sub_norm(out)
            return self.o(out)  # (B, T, d)

        def _clipped(self, projected: torch.Tensor) -> torch.Tensor:
            if self.qkv_clip is None:
                return projected
            return projected.clamp(-self.qkv_clip, self.qkv_clip)

        def extra_repr(self) -> str:
            text = f"heads={self.n_heads}, kv_heads={self.n_kv_heads}, head_dim={self.head_dim}"
            if isinstance(self.q, nn.Sequential):
                text += f", query_rank={self.q[0].out_features}"
            return text + (f", kv={self.kv_sharing} {self.kv_kind}" if self.kv_sharing else "")

    def repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
        """(B, T, kv_heads, D) -> (B, T, kv_heads * groups, D): each KV head serves ``groups``
        consecutive query heads."""
        return x if groups == 1 else x.repeat_interleave(groups, dim=2)

    class LatentAttention(nn.Module):
        """MLA: q through an optional low-rank bottleneck, k/v expanded from a cached latent."""

        def __init__(
            self,
            d_model: int,
            n_heads: int,
            kv_rank: int,
            q_rank: int | None,
            rope_dim: int,
            nope_dim: int,
            v_dim: int,
            kernel: nn.Module,
            make_norm,
            qkv_bias: bool,
            out_bias: bool,
            rotary: Rotary | None,
            indexer: nn.Module | None = None,
            lora_scales: tuple[float, float] | None = None,
        ) -> None:
            super().__init__()
            self.lora_scales = lora_scales  # LongCat-Flash: (on q, on the normed KV latent)
            self.n_heads, self.rope_dim, self.nope_dim, self.v_dim = (
                n_heads,
                rope_dim,
                nope_dim,
                v_dim,
            )
            self.kv_rank = kv_rank
            qk = nope_dim + rope_dim
            if q_rank is None:
                self.q = linear(d_model, n_heads * qk, bias=qkv_bias)
            else:
                self.q = nn.Sequential(
                    linear(d_model, q_rank, bias=qkv_bias),
                    make_norm(q_rank),
                    linear(q_rank, n_heads * qk, bias=False),
                )
            self.kv_down = linear(d_model, kv_rank + rope_dim, bias=qkv_bias)
            self.kv_norm = make_norm(kv_rank)
            self.kv_up = linear(kv_rank, n_heads * (nope_dim + v_dim), bias=False)
            self.o = linear(n_heads * v_dim, d_model, bias=out_bias)
            self.rotary = rotary
            self.kernel = kernel
            self.indexer = indexer  # DSA: picks the keys each query reads from the query latent

        def forward(
            self,
            x: torch.Tensor,
            bias: torch.Tensor | None = None,
            memory: torch.Tensor | None = None,
        ) -> torch.Tensor:
            h = self.n_heads
            selected = None
            if self.indexer is not None:
                down, norm, up = self.q
                q_latent = norm(down(x))
                selected = self.indexer(x, q_latent)
                q = up(q_latent).unflatten(-1, (h, -1))
            else:
                q = self.q(x).unflatten(-1, (h, -1))
            latent, k_rope = self.kv_down(x).split((self.kv_rank, self.rope_dim), dim=-1)
            latent = self.kv_norm(latent)
            if self.lora_scales is not None:
                q, latent = q * self.lora_scales[0], latent * self.lora_scales[1]
            q_nope, q_rope = q.split((self.nope_dim, self.rope_dim), dim=-1)
            kv = self.kv_up(latent).unflatten(-1, (h, -1))
            k_nope, v = kv.split((self.nope_dim, self.v_dim), dim=-1)
            k_rope = k_rope.unsqueeze(2)  # one key head, shared
            if self.rotary is not None:
                q_rope, k_rope = self.rotary(q_rope, k_rope)
            q = torch.cat((q_nope, q_rope), dim=-1)
            k = torch.cat((k_nope, k_rope.expand(-1, -1, h, -1)), dim=-1)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            if selected is None:
                out = self.kernel(q, k, v, bias)
            else:
                out = self.kernel(q, k, v, bias, selected=selected)
            return self.o(out.transpose(1, 2).flatten(2))

        def extra_repr(self) -> str:
            return (
                f"heads={self.n_heads}, kv_rank={self.kv_rank}, nope_dim={self.nope_dim}, "
                f"rope_dim={self.rope_dim}, v_dim={self.v_dim}"
            )

    # --- from specs ----------------------------------------------------------------------------

    def _optional(part: object, ctx: object) -> nn.Module | None:
        return None if part is None else part.module(ctx)

    def head_attention(s: spec.HeadAttention, ctx) -> HeadAttention:
        return HeadAttention(
            s.d_model,
            s.n_heads,
            s.n_kv_heads,
            s.head_dim,
            s.kernel.module(),
            s.qkv_bias,
            s.out_bias,
            _optional(s.rotary, ctx),
            _optional(s.qk_norm, ctx),
            _optional(s.relative_xl, ctx),
            s.takes_bias,
            s.gate_width,
            s.values_from_keys,
            norm_module(s.value_norm, s.value_width) if s.value_norm else None,
            s.kv_sharing,
            ctx.kv_store if s.kv_sharing else None,
            s.kv_kind,
            s.qk_norm_after_rope,
            s.qkv_clip,
            s.v_dim,
            s.value_scale,
            norm_module(s.sub_norm, s.n_heads * s.value_width) if s.sub_norm else None,
            s.query_rank,
            norm_module(s.query_norm, s.query_rank) if s.query_norm else None,
        )

    def latent_attention(s: spec.LatentAttention, ctx) -> LatentAttention:
        return LatentAttention(
            s.d_model,
            s.n_heads,
            s.kv_rank,
            s.q_rank,
            s.rope_dim,
            s.nope_dim,
            s.v_dim,
            s.kernel.module(),
            functools.partial(norm_module, s.norm),
            s.qkv_bias,
            s.out_bias,
            _optional(s.rotary, ctx),
            _optional(s.indexer, ctx),
            s.lora_scales,
        )

    return SimpleNamespace(
        HeadAttention=HeadAttention,
        repeat_kv=repeat_kv,
        LatentAttention=LatentAttention,
        _optional=_optional,
        head_attention=head_attention,
        latent_attention=latent_attention,
    )
