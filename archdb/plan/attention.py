"""Token mixers: softmax and linear head attention, latent attention, and their kernels.

Two registries: ``KERNELS`` says, per layer kind (global, local, global-nope, chunked),
which keys a query scores and caches and which kernel module computes it; ``MIXERS`` says,
per attention variant, which spec a layer gets. Each spec carries its parameters, FLOPs,
KV cache and module factory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.schema import AttentionVariant, LayerKind, OutputGate, RopeLayout
from archdb.tally import Tally, linear_params

from .compressed import CompressedAttention, compressed_attention
from .layout import LayerSpec
from .norms import NormSpec, QKNormSpec, bare_rms
from .positions import RelativeXLSpec, RotarySpec
from .sparse import IndexerSpec

# --- kernels --------------------------------------------------------------------------


def _all_dense(window: int | None, t: int) -> int:
    return t * t


def _all_causal(window: int | None, t: int) -> int:
    return t * (t + 1) // 2


def _local_dense(window: int, t: int) -> int:
    return t * window if window < t else t * t


def _local_causal(window: int, t: int) -> int:
    if window >= t:
        return _all_causal(window, t)
    return window * (window + 1) // 2 + (t - window) * window


def _chunked_dense(window: int, t: int) -> int:
    if window >= t:
        return t * t
    full, rest = divmod(t, window)
    return full * window * window + rest * rest


def _chunked_causal(window: int, t: int) -> int:
    if window >= t:
        return _all_causal(window, t)
    full, rest = divmod(t, window)
    return full * window * (window + 1) // 2 + rest * (rest + 1) // 2


def two_sided_keys(half: int, t: int) -> tuple[int, int]:
    """(computed, useful) scores of t queries that read the keys at most ``half`` away on
    either side (ModernBERT's local layers): a band of 2 half + 1 slots per query once the
    sequence is longer than the band, all t keys (the far ones masked) before."""
    band = 2 * half + 1
    below = (t - 1) * t // 2 if t - 1 <= half else half * (half + 1) // 2 + (t - 1 - half) * half
    useful = t + 2 * below  # each query, its keys on the left (min(i, half)) and the right
    return (t * band if t > band else t * t), useful


@dataclass(frozen=True)
class KernelRule:
    """Keys scored by t causal queries: computed (masked included) and useful (unmasked)."""

    dense_keys: Callable[[int | None, int], int]
    causal_keys: Callable[[int | None, int], int]
    windowed: bool = False  # keeps only ``window`` keys, so caches at most that many


_GLOBAL = KernelRule(_all_dense, _all_causal)
KERNELS: dict[LayerKind, KernelRule] = {
    LayerKind.GLOBAL: _GLOBAL,
    LayerKind.GLOBAL_NOPE: _GLOBAL,
    LayerKind.GLOBAL_MAMBA2: _GLOBAL,  # the attention of a parallel layer (Falcon-H1)
    LayerKind.LOCAL: KernelRule(_local_dense, _local_causal, windowed=True),
    LayerKind.CHUNKED: KernelRule(_chunked_dense, _chunked_causal, windowed=True),
    # DeepSeek-V4's compressed layers: their window of raw tokens (the entries beside it
    # are counted by archdb.plan.compressed)
    LayerKind.COMPRESSED_SPARSE: KernelRule(_local_dense, _local_causal, windowed=True),
    LayerKind.HEAVILY_COMPRESSED: KernelRule(_local_dense, _local_causal, windowed=True),
}


@dataclass(frozen=True)
class SoftmaxKernel:
    """Scores, softmax and the weighted sum of values, for one layer kind."""

    kind: LayerKind
    qk_dim: int
    causal: bool
    softcap: float | None
    window: int | None  # local window or chunk, tokens
    sink_heads: int = 0  # heads with a learned sink logit (gpt-oss); 0 for none
    scale: float | None = None  # multiplier of q.k; None: 1/sqrt(qk_dim)
    top_k: int | None = None  # DSA: keys a query reads, chosen by an indexer (global only)

    @property
    def rule(self) -> KernelRule:
        return KERNELS[self.kind]

    def keys(self, t: int) -> tuple[int, int]:
        """(computed, useful) scores of t queries; encoders and cross-attention see all,
        but an encoder's local layer only its two-sided window."""
        if not self.causal:
            if self.rule.windowed and self.window is not None:
                return two_sided_keys(self.window // 2, t)
            return t * t, t * t
        if self.top_k is not None:  # the masked scores are computed; top_k per query used
            return t * t, _local_causal(self.top_k, t)
        return self.rule.dense_keys(self.window, t), self.rule.causal_keys(self.window, t)

    def cached_keys(self, context: int) -> int:
        return min(context, self.window) if self.rule.windowed else context

    def matmuls_per_score(self, vd: int) -> int:
        """One head's q.k and its share of the weighted sum of values: 2 (d_qk + d_v)."""
        return cv.FLOPS_PER_MAC * (self.qk_dim + vd)

    def flops(self, tally: Tally, h: int, vd: int, per_score_extra: int = 0) -> None:
        t, qk = tally.seq_len, self.qk_dim
        dense, useful = self.keys(t)
        tally.add(C.ATTENTION, t * h * qk)  # q * 1/sqrt(d)
        per_score = self.matmuls_per_score(vd) + per_score_extra  # QK^T and AV (+ bias)
        if self.softcap is not None:
            per_score += cv.SOFTCAP
        tally.add(C.ATTENTION, h * dense * per_score, h * useful * per_score)
        tally.add(C.SOFTMAX, h * dense * cv.SOFTMAX, h * useful * cv.SOFTMAX)
        if self.sink_heads:  # one more logit per query and head in the softmax
            tally.add(C.SOFTMAX, t * h * cv.SOFTMAX)

    def params(self) -> int:
        return self.sink_heads


@dataclass(frozen=True)
class LinearKernel:
    """Causal linear attention: a running state of key-value outer products, no cache."""

    def cached_keys(self, context: int) -> int:
        return 0  # a fixed-size state, not a per-token cache

    def params(self) -> int:
        return 0

    @staticmethod
    def state_entries(h: int, qk: int, vd: int) -> int:
        """The running state: S (d_qk x d_v) and z (d_qk) per head."""
        return h * (qk * vd + qk)

    @staticmethod
    def decode_flops(h: int, qk: int, vd: int) -> int:
        """One token's update and read of the state: 4 d_qk d_v per head."""
        return h * 4 * qk * vd

    def flops(self, tally: Tally, h: int, qk: int, vd: int) -> None:
        per_head = (
            2 * cv.LINEAR_FEATURE_MAP * qk  # phi(q), phi(k)
            + qk * vd  # outer product k v^T
            + cv.REDUCTION * qk * vd  # running sum of the state
            + cv.FLOPS_PER_MAC * qk * vd  # q . state
            + cv.REDUCTION * qk  # running sum of keys
            + qk
            + cv.REDUCTION * qk
            + 1  # q . z (+ eps)
            + vd  # divide
        )
        tally.elementwise(h * per_head, C.ATTENTION)


# --- mixers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadAttention:
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

    def params(self) -> int:
        d, h, kv, hd, vd = (
            self.d_model,
            self.n_heads,
            self.n_kv_heads,
            self.head_dim,
            self.value_width,
        )
        n = linear_params(d, h * (hd + self.gate_width), self.qkv_bias)
        n += 0 if self.reuses_kv else linear_params(d, kv * hd, self.qkv_bias)
        n += linear_params(d, kv * vd, self.qkv_bias) if self.own_values else 0
        n += linear_params(h * vd, d, self.out_bias) + self.kernel.params()
        n += self.qk_norm.params() if self.qk_norm else 0
        return n + (self.relative_xl.params() if self.relative_xl else 0)

    def flops(self, tally: Tally) -> None:
        d, h, kv, hd, vd = (
            self.d_model,
            self.n_heads,
            self.n_kv_heads,
            self.head_dim,
            self.value_width,
        )
        tally.linear(d, h * (hd + self.gate_width), self.qkv_bias)
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
        return self.score_flops_per_key() * self.kernel.cached_keys(context)

    def state_entries(self) -> int:
        """Linear attention's fixed-size state (0 for a softmax kernel: its K/V cache is
        ``cache_entries``)."""
        if isinstance(self.kernel, LinearKernel):
            return self.kernel.state_entries(self.n_heads, self.head_dim, self.value_width)
        return 0


@dataclass(frozen=True)
class LatentAttention:
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


Mixer = HeadAttention | LatentAttention | CompressedAttention


# --- which mixer a layer gets ----------------------------------------------------------------
# A maker reads the card through the plan's reader (``plan._Reader``: the architecture
# ``a``, head widths ``dims``, the position ``scheme``, and helpers for the layer's kernel,
# rotary block, QK norm and score bias); ``spec`` is the layer (None: cross-attention).

Reader = Any  # plan._Reader, not imported: plan imports this module


def _head_attention(r: Reader, spec: LayerSpec | None, causal: bool) -> HeadAttention:
    a, dims, att = r.a, r.dims_of(spec), r.a.attention
    takes_bias = r.takes_bias(spec)
    relative_xl = None
    if takes_bias and r.scheme.layer_bias:
        relative_xl = RelativeXLSpec(r.d, dims.n_heads, dims.qk_dim, a.context_length)
    linear = att.variant is AttentionVariant.LINEAR
    return HeadAttention(
        d_model=r.d,
        n_heads=dims.n_heads,
        n_kv_heads=dims.n_kv_heads,
        head_dim=dims.qk_dim,
        qkv_bias=bool(a.bias.qkv),
        out_bias=bool(a.bias.attn_out),
        kernel=LinearKernel() if linear else r.kernel(spec, causal),
        rotary=r.rotary(spec),
        qk_norm=r.qk_norm(spec),
        takes_bias=takes_bias,
        relative_xl=relative_xl,
        cached=causal or spec is None,
        output_gate=att.output_gate,
        values_from_keys=dims.values_from_keys,
        value_norm=bare_rms(a.norm.eps) if att.value_norm else None,
        kv_sharing=_kv_sharing(r, spec),
        kv_kind=spec.kind.value if spec is not None else "",
        qk_norm_after_rope=bool(att.qk_norm_after_rope),
        qkv_clip=att.qkv_clip,
        v_dim=dims.v_dim if dims.v_dim != dims.qk_dim else None,
        value_scale=_factor_or_none(att.value_multiplier),
    )


def _factor_or_none(value: float | None) -> float | None:
    """A recorded factor other than 1 (1 and null change nothing)."""
    return None if value is None or value == 1.0 else value


def _kv_sharing(r: Reader, spec: LayerSpec | None) -> str | None:
    """A layer's part in cross-layer KV sharing: none without it (or in cross-attention);
    else the last kv_shared_layers reuse, the others store theirs."""
    if spec is None or not r.a.attention.kv_shared_layers:
        return None
    return "reuse" if spec.reuses_kv else "store"


def _indexer(r: Reader, spec: LayerSpec | None, causal: bool) -> IndexerSpec | None:
    """DSA's indexer on causal self-attention layers of a card with attention.sparse."""
    sparse, lat = r.a.attention.sparse, r.a.attention.latent
    if sparse is None or spec is None or not causal:
        return None
    rotary = r.rotary(spec)
    if rotary is not None:  # the indexer's own pairing of rotated dims
        interleaved = sparse.indexer_rope_layout is RopeLayout.INTERLEAVED
        rotary = replace(rotary, interleaved=interleaved)
    return IndexerSpec(
        r.d, lat.q_lora_rank, sparse.indexer_heads, sparse.indexer_head_dim, sparse.top_k, rotary
    )


def _latent_attention(r: Reader, spec: LayerSpec | None, causal: bool) -> LatentAttention:
    a, lat = r.a, r.a.attention.latent
    indexer = _indexer(r, spec, causal)
    kernel = r.kernel(spec, causal)
    if indexer is not None:
        kernel = replace(kernel, top_k=indexer.top_k)
    return LatentAttention(
        d_model=r.d,
        n_heads=r.dims.n_heads,
        kv_rank=lat.kv_lora_rank,
        q_rank=lat.q_lora_rank,
        rope_dim=lat.qk_rope_head_dim,
        nope_dim=lat.qk_nope_head_dim,
        v_dim=lat.v_head_dim,
        norm=r.norm if lat.norm_eps is None else replace(r.norm, eps=lat.norm_eps),
        qkv_bias=bool(a.bias.qkv),
        out_bias=bool(a.bias.attn_out),
        kernel=kernel,
        rotary=r.rotary(spec),
        takes_bias=r.takes_bias(spec),
        cached=causal or spec is None,
        indexer=indexer,
        lora_scales=_lora_scales(r.d, lat) if lat.lora_scaled else None,
    )


def _lora_scales(d_model: int, lat) -> tuple[float, float]:
    """LongCat-Flash's factors: sqrt(d / q_lora_rank) on q, sqrt(d / kv_lora_rank) on the
    normed KV latent (a full-rank query is not scaled)."""
    q = (d_model / lat.q_lora_rank) ** 0.5 if lat.q_lora_rank else 1.0
    return q, (d_model / lat.kv_lora_rank) ** 0.5


# attention variant -> the spec of a layer's mixer
MIXERS: dict[AttentionVariant, Callable[[Reader, LayerSpec | None, bool], Mixer]] = {
    AttentionVariant.SOFTMAX: _head_attention,
    AttentionVariant.LINEAR: _head_attention,
    AttentionVariant.LATENT: _latent_attention,
    AttentionVariant.COMPRESSED: compressed_attention,
}
