"""DeepSeek-V4's attention and residual streams (transformers' deepseek_v4).

Attention (``CompressedAttention``): a low-rank query (q_a, a weighted RMSNorm, q_b, then
a weightless RMSNorm per head); one key=value head (kv_proj and a weighted RMSNorm) read as
both key and value; RoPE on each head's last ``rope_dim`` dims, undone on the output at the
query's position; a learned sink logit per head; a grouped output projection (each of
``groups`` head groups to ``rank``, then all to d_model). Every layer reads a sliding window
of raw tokens; compressed layers add entries made by a ``Compressor`` from the whole past.
A compressed-sparse layer's ``Compressor`` overlaps its windows (each entry covers 2 ratio
tokens, two projections per token) and an ``EntryIndexer`` picks top_k entries per query;
a heavily-compressed layer's entries are all read.

Residual (``HyperConnection``, ``HyperHead``): mHC's n streams, mixed before and after each
sublayer; see schema.HyperConnections.

FLOP convention: what the stateless forward computes (every query scores its window, all
the entries it may see and, in CSA layers, the top_k the indexer picks among every entry).
Cache per token: the window's one key=value vector, and each layer's compressed entries
(and the indexer's) for the whole context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.schema import Architecture, LayerKind, RopeScaling
from archdb.tally import Tally, linear_params

from .layout import LayerSpec
from .mlp import DenseMLP, MoESpec
from .norms import NormSpec, bare_rms


def _windows(tokens: int, ratio: int) -> int:
    return tokens // ratio


def _closed_sum(tokens: int, ratio: int) -> int:
    """sum of j // ratio for j = 1 .. tokens."""
    q, rest = divmod(tokens, ratio)
    return ratio * q * (q - 1) // 2 + q * (rest + 1)


def visible_entries(t: int, ratio: int, cap: int | None) -> int:
    """Entries the t queries read, summed: query i sees (i + 1) // ratio closed windows,
    at most ``cap`` of them (the indexer's top_k; None: all)."""
    if cap is None or t < cap * ratio:
        return _closed_sum(t, ratio)
    return _closed_sum(cap * ratio - 1, ratio) + (t - cap * ratio + 1) * cap


@dataclass(frozen=True)
class RopeBase:
    """The rotation of one rope type: its base, and the YaRN stretch it carries (the
    compressed layers'); transformers' V4 leaves cos and sin unscaled."""

    dims: int
    theta: float
    scaling: RopeScaling | None = None

    def flops(self, tally: Tally, vectors: int) -> None:
        tally.add(C.ELEMENTWISE, vectors * cv.ROPE * self.dims)


@dataclass(frozen=True)
class Compressor:
    """Compressed entries of ``head_dim``: kv and gate projections (two series each where
    the windows overlap), a learned bias per window slot, a softmax over the slots, the
    gated sum, a weighted RMSNorm and RoPE at the window's first position."""

    d_model: int
    head_dim: int
    ratio: int
    overlap: bool  # CSA: entry w reads window w - 1's first series and window w's second
    norm: NormSpec
    rope: RopeBase

    @property
    def series(self) -> int:
        return 2 if self.overlap else 1

    @property
    def slots(self) -> int:
        return self.series * self.ratio

    def params(self) -> int:
        width = self.series * self.head_dim
        projections = 2 * linear_params(self.d_model, width, False)
        return projections + self.ratio * width + self.norm.params(self.head_dim)

    def flops(self, tally: Tally) -> None:
        t, hd = tally.seq_len, self.head_dim
        tally.linear(self.d_model, self.series * hd, False)  # kv
        tally.linear(self.d_model, self.series * hd, False)  # gate
        n = _windows(t, self.ratio)
        tally.add(C.ELEMENTWISE, n * self.ratio * self.series * hd)  # gate + slot bias
        tally.add(C.SOFTMAX, n * self.slots * hd * cv.SOFTMAX)
        tally.add(C.ELEMENTWISE, n * self.slots * hd)  # kv * weights
        tally.add(C.ELEMENTWISE, n * self.slots * hd * cv.REDUCTION)  # the sum over slots
        self.norm.flops(tally, hd, n)
        self.rope.flops(tally, n)

    def cache_entries(self, context: int) -> int:
        return self.head_dim * _windows(context, self.ratio)


@dataclass(frozen=True)
class EntryIndexer:
    """CSA's lightning indexer over compressed keys: queries from the query latent (q_b),
    rotated at the query's position; score(t, s) = sum_h w_h(t) relu(q_h . k_s) / sqrt(hd),
    w = weights_proj(x) / sqrt(heads); the top_k visible entries are read."""

    d_model: int
    q_rank: int
    heads: int
    head_dim: int
    top_k: int
    compressor: Compressor

    def params(self) -> int:
        q = linear_params(self.q_rank, self.heads * self.head_dim, False)
        return self.compressor.params() + q + linear_params(self.d_model, self.heads, False)

    def flops(self, tally: Tally) -> None:
        t, h, hd = tally.seq_len, self.heads, self.head_dim
        self.compressor.flops(tally)
        tally.linear(self.q_rank, h * hd, False)
        self.compressor.rope.flops(tally, t * h)
        n = _windows(t, self.compressor.ratio)
        # q . k for every entry, relu, * 1/sqrt(hd), * the head's weight, sum over heads
        per_score = h * (cv.FLOPS_PER_MAC * hd + 3 * cv.ELEMENTWISE + cv.REDUCTION)
        tally.add(C.ATTENTION, t * n * per_score)
        tally.linear(self.d_model, h, False)
        tally.add(C.ATTENTION, t * h)  # weights * 1/sqrt(heads)

    def cache_entries(self, context: int) -> int:
        return self.compressor.cache_entries(context)


@dataclass(frozen=True)
class CompressedAttention:
    """One DeepSeek-V4 attention layer (see the module docstring)."""

    d_model: int
    n_heads: int
    head_dim: int
    q_rank: int
    groups: int
    rank: int
    window: int
    norm: NormSpec  # the weighted RMSNorms (q latent, kv, entries)
    eps: float | None  # the weightless RMSNorm's per query head
    rope: RopeBase
    compressor: Compressor | None = None
    indexer: EntryIndexer | None = None

    def params(self) -> int:
        d, h, hd, qr = self.d_model, self.n_heads, self.head_dim, self.q_rank
        n = linear_params(d, qr, False) + self.norm.params(qr) + linear_params(qr, h * hd, False)
        n += linear_params(d, hd, False) + self.norm.params(hd)  # the key=value head
        n += h * hd * self.rank  # o_a: each group's heads to rank
        n += linear_params(self.groups * self.rank, d, False)  # o_b
        n += h  # sinks
        n += self.compressor.params() if self.compressor else 0
        return n + (self.indexer.params() if self.indexer else 0)

    def keys(self, t: int) -> int:
        """Keys each layer scores, summed over queries, as the masked kernel computes them:
        every raw token (those outside the causal window masked) and every compressed entry
        (masked where not yet visible or not picked)."""
        entries = _windows(t, self.compressor.ratio) if self.compressor else 0
        return t * (t + entries)

    def useful_keys(self, t: int) -> int:
        window = min(self.window, t)
        seen = window * (window + 1) // 2 + (t - window) * window
        if self.compressor is None:
            return seen
        cap = self.indexer.top_k if self.indexer else None
        return seen + visible_entries(t, self.compressor.ratio, cap)

    def flops(self, tally: Tally) -> None:
        d, h, hd, qr, t = self.d_model, self.n_heads, self.head_dim, self.q_rank, tally.seq_len
        tally.linear(d, qr, False)
        self.norm.flops(tally, qr)
        tally.linear(qr, h * hd, False)
        bare_rms(self.eps).flops(tally, hd, t * h)
        tally.linear(d, hd, False)
        self.norm.flops(tally, hd)
        self.rope.flops(tally, t * (h + 1))  # queries and the key
        if self.compressor is not None:
            self.compressor.flops(tally)
        if self.indexer is not None:
            self.indexer.flops(tally)
        dense, useful = self.keys(t), self.useful_keys(t)
        tally.add(C.ATTENTION, t * h * hd)  # q * 1/sqrt(d)
        per_score = cv.FLOPS_PER_MAC * 2 * hd  # QK^T and AV
        tally.add(C.ATTENTION, h * dense * per_score, h * useful * per_score)
        tally.add(C.SOFTMAX, h * (dense + t) * cv.SOFTMAX, h * (useful + t) * cv.SOFTMAX)
        self.rope.flops(tally, t * h)  # the output's rotation undone
        tally.linear(h * hd // self.groups, self.rank, False, t * self.groups)
        tally.linear(self.groups * self.rank, d, False)

    def score_flops_per_key(self) -> int:
        """QK^T and AV FLOPs of one query for each key (raw or entry) it scores."""
        return cv.FLOPS_PER_MAC * self.n_heads * 2 * self.head_dim

    def entries_per_query(self, context: float, causal: bool = True) -> float:
        """Compressed entries one query reads on average over ``context`` positions
        (``causal`` False: every entry, as the masked kernel scores them)."""
        if self.compressor is None:
            return 0.0
        ratio = self.compressor.ratio
        if not causal:
            return context / ratio
        cap = self.indexer.top_k if self.indexer else None
        if cap is None or context <= cap * ratio:
            return context / (2 * ratio)
        return cap - cap * cap * ratio / (2 * context)

    def decode_flops(self, context: int) -> int:
        """One new query over its window of cached tokens and the entries it reads (CSA:
        top_k of them, after the indexer scored every entry)."""
        entries = _windows(context, self.compressor.ratio) if self.compressor else 0
        read = min(entries, self.indexer.top_k) if self.indexer else entries
        own = self.score_flops_per_key() * (min(context, self.window) + read)
        if self.indexer is None:
            return own
        ih, ihd = self.indexer.heads, self.indexer.head_dim
        return own + entries * ih * (cv.FLOPS_PER_MAC * ihd + 3 * cv.ELEMENTWISE + cv.REDUCTION)

    def state_entries(self) -> int:
        return 0  # its cache is cache_entries

    def cache_entries(self, context: int) -> int:
        own = self.head_dim * min(context, self.window)  # key = value: stored once
        own += self.compressor.cache_entries(context) if self.compressor else 0
        return own + (self.indexer.cache_entries(context) if self.indexer else 0)


@dataclass(frozen=True)
class HyperConnection:
    """mHC around one sublayer: from the weightless-RMS-normed n streams, n pre weights,
    n post weights and an n x n Sinkhorn-normalized mix (a linear map, a bias each, three
    scales)."""

    d_model: int
    n: int
    sinkhorn_iters: int
    eps: float  # hc_eps: the floor on the weights and sums
    norm_eps: float | None  # the weightless RMSNorm's (the blocks' epsilon)

    @property
    def outputs(self) -> int:
        return (2 + self.n) * self.n

    def params(self) -> int:
        return self.outputs * self.n * self.d_model + self.outputs + 3

    def flops(self, tally: Tally) -> None:
        n, d = self.n, self.d_model
        bare_rms(self.norm_eps).flops(tally, n * d)
        tally.linear(n * d, self.outputs, False)
        tally.elementwise(2 * self.outputs)  # * scale, + bias
        tally.elementwise(4 * n)  # pre: sigmoid, + eps; post: sigmoid, * 2
        tally.add(C.SOFTMAX, tally.seq_len * n * n * cv.SOFTMAX)
        tally.elementwise(n * n)  # + eps
        normalizations = 2 * self.sinkhorn_iters - 1  # columns first, then rows and columns
        per = n * n * cv.REDUCTION + n + n * n  # the sums, + eps, the division
        tally.elementwise(normalizations * per)
        tally.elementwise(n * d + n * d * cv.REDUCTION)  # the pre-weighted sum of the streams
        # after the sublayer: post * output, the mix (n x n @ n x d), their sum
        tally.elementwise(n * d)
        tally.add(C.ELEMENTWISE, tally.seq_len * cv.FLOPS_PER_MAC * n * n * d)
        tally.elementwise(n * d)


@dataclass(frozen=True)
class HyperHead:
    """The streams collapsed after the stack: n sigmoid weights (+ eps) of the normed
    streams, their weighted sum."""

    d_model: int
    n: int
    eps: float  # hc_eps
    norm_eps: float | None

    def params(self) -> int:
        return self.n * self.n * self.d_model + self.n + 1

    def flops(self, tally: Tally) -> None:
        n, d = self.n, self.d_model
        bare_rms(self.norm_eps).flops(tally, n * d)
        tally.linear(n * d, n, False)
        tally.elementwise(4 * n)  # * scale, + bias, sigmoid, + eps
        tally.elementwise(n * d + n * d * cv.REDUCTION)


@dataclass(frozen=True)
class HyperBlock:
    """One DeepSeek-V4 layer: attention and the MoE, each pre-normed and between mHC
    mixes of the n residual streams."""

    d_model: int
    mixer: CompressedAttention
    mlp: MoESpec | DenseMLP
    norm: NormSpec
    hyper: HyperConnection

    def params(self) -> int:
        own = self.mixer.params() + self.mlp.params() + 2 * self.norm.params(self.d_model)
        return own + 2 * self.hyper.params()

    def inactive_params(self) -> int:
        return self.mlp.inactive_params() if isinstance(self.mlp, MoESpec) else 0

    def flops(self, tally: Tally) -> None:
        for sublayer in (self.mixer, self.mlp):
            self.hyper.flops(tally)
            self.norm.flops(tally, self.d_model)
            sublayer.flops(tally)

    def cache_entries(self, context: int) -> int:
        return self.mixer.cache_entries(context)


# --- reading a card ------------------------------------------------------------------------


def rope_of(arch: Architecture, compressed_layer: bool) -> RopeBase:
    """A layer's rotation: the local layers' base unscaled, the compressed layers' (and
    their entries' and indexer's) compress_rope_theta with the card's rope_scaling."""
    comp, pos = arch.attention.compressed, arch.position
    if compressed_layer:
        return RopeBase(comp.rope_dim, comp.compress_rope_theta, pos.rope_scaling)
    return RopeBase(comp.rope_dim, pos.rope_theta or 10_000.0)


def compressed_attention(reader: Any, spec: LayerSpec, causal: bool) -> CompressedAttention:
    """The mixer of one layer of a variant-compressed card (``reader``: plan._Reader; V4 is
    decoder-only, so there is no cross-attention and ``spec`` is always a layer)."""
    arch = reader.a
    att, comp = arch.attention, arch.attention.compressed
    compressed = spec.kind.compressed
    rope = rope_of(arch, compressed)
    eps = arch.norm.eps
    compressor = indexer = None
    if compressed:
        sparse_layer = spec.kind is LayerKind.COMPRESSED_SPARSE
        ratio = comp.sparse_ratio if sparse_layer else comp.heavy_ratio
        compressor = Compressor(reader.d, att.head_dim, ratio, sparse_layer, reader.norm, rope)
        if sparse_layer:
            sp = att.sparse
            own = Compressor(reader.d, sp.indexer_head_dim, ratio, True, reader.norm, rope)
            indexer = EntryIndexer(
                reader.d, comp.q_lora_rank, sp.indexer_heads, sp.indexer_head_dim, sp.top_k, own
            )
    return CompressedAttention(
        d_model=reader.d,
        n_heads=att.n_heads,
        head_dim=att.head_dim,
        q_rank=comp.q_lora_rank,
        groups=comp.output_groups,
        rank=comp.output_rank,
        window=att.sliding_window,
        norm=reader.norm,
        eps=eps,
        rope=rope,
        compressor=compressor,
        indexer=indexer,
    )
