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

import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.parts.kernels import mean_scored_keys
from archdb.parts.mlp import DenseMLP
from archdb.parts.moe import MoESpec
from archdb.parts.norms import NormSpec, bare_rms
from archdb.schema import LayerKind, RopeScaling
from archdb.tally import Tally, linear_params


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

    def mean_keys(self, context: float, causal: bool = True, windows: bool = True) -> float:
        """Keys one query scores on average at ``context``: its window of raw tokens, as a
        local layer's, and the compressed entries it reads."""
        raw = mean_scored_keys(LayerKind.LOCAL, self.window, context, causal, windows)
        return raw + self.entries_per_query(context, causal)

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

    def module(self, ctx: Any = None) -> Any:
        return modules().compressed_attention(self, ctx)


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

    def module(self, ctx: Any = None) -> Any:
        return modules().hyper_head(self, ctx)


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

    def module(self, ctx: Any = None) -> Any:
        return modules().hyper_block(self, ctx)


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from archdb.device import on_meta

    # this module, for the specs: the torch classes below take the same names
    from archdb.parts import compressed as spec
    from archdb.parts import norms as norms_part
    from archdb.parts import positions as positions_part

    norm_module = norms_part.modules().norm_module
    scaled_frequencies = positions_part.modules().scaled_frequencies

    class TrailingRotary(nn.Module):
        """Interleaved RoPE on the last ``dims`` dims of each head (V4's layout), cos and sin
        unscaled (transformers' V4 fixes YaRN's attention factor at 1)."""

        flop_class = "elementwise"

        def __init__(self, dims: int, tables: tuple[torch.Tensor, torch.Tensor]) -> None:
            super().__init__()
            self.dims = dims
            cos, sin = tables  # shared by every module of this rope type
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

        def forward(
            self, x: torch.Tensor, positions: torch.Tensor, undo: bool = False
        ) -> torch.Tensor:
            """x (B, T, heads, head_dim) rotated at ``positions`` (T,); ``undo``: by -angle."""
            cos = self.cos[positions].unsqueeze(1)  # (T, 1, dims)
            sin = self.sin[positions].unsqueeze(1)
            rot = x[..., -self.dims :]
            swapped = rot.unflatten(-1, (self.dims // 2, 2)).flip(-1).flatten(-2)
            rotated = rot * cos - swapped * sin if undo else rot * cos + swapped * sin
            return torch.cat((x[..., : -self.dims], rotated), -1)

    def trailing_tables(rope: spec.RopeBase, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin (max_len, dims) of one rope type, pairs (2i, 2i + 1)."""
        if on_meta():
            return torch.empty(max_len, rope.dims), torch.empty(max_len, rope.dims)
        inv, _ = scaled_frequencies(rope.dims, rope.theta, max_len, rope.scaling)
        angles = torch.arange(max_len, dtype=torch.float32).unsqueeze(1) * inv
        cos = angles.cos().repeat_interleave(2, -1)
        return cos, torch.stack((-angles.sin(), angles.sin()), -1).flatten(-2)

    class Compressor(nn.Module):
        """One compressed entry per ``ratio`` tokens (see plan.compressed.Compressor)."""

        flop_class = "elementwise"

        def __init__(self, s: spec.Compressor, ctx) -> None:
            super().__init__()
            width = s.series * s.head_dim
            self.kv_proj = nn.Linear(s.d_model, width, bias=False)
            self.gate_proj = nn.Linear(s.d_model, width, bias=False)
            self.position_bias = nn.Parameter(torch.zeros(s.ratio, width))
            self.kv_norm = norm_module(s.norm, s.head_dim)
            self.rotary = ctx.trailing_rotary(s.rope)
            self.ratio, self.head_dim, self.overlap = s.ratio, s.head_dim, s.overlap

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            """x (B, T, d) -> entries (B, T // ratio, head_dim)."""
            b, t, _ = x.shape
            n, m, hd = t // self.ratio, self.ratio, self.head_dim
            width = self.position_bias.shape[-1]
            kv = self.kv_proj(x)[:, : n * m].view(b, n, m, width)
            gate = self.gate_proj(x)[:, : n * m].view(b, n, m, width) + self.position_bias
            if self.overlap:  # slots: window w - 1's first series, then window w's second
                kv, gate = self._overlapped(kv, hd), self._overlapped(gate, hd, float("-inf"))
            weights = gate.softmax(dim=2)
            entries = self.kv_norm((kv * weights).sum(dim=2))  # (B, n, hd)
            positions = torch.arange(n, device=x.device) * m
            return self.rotary(entries.unsqueeze(2), positions).squeeze(2)

        @staticmethod
        def _overlapped(series: torch.Tensor, hd: int, first: float = 0.0) -> torch.Tensor:
            """(B, n, m, 2 hd) -> (B, n, 2 m, hd); window 0 has no earlier window (``first``)."""
            earlier = F.pad(series[:, :-1, :, :hd], (0, 0, 0, 0, 1, 0), value=first)
            return torch.cat((earlier, series[:, :, :, hd:]), dim=2)

    def visible_entries(t: int, n: int, ratio: int, device: torch.device) -> torch.Tensor:
        """(T, n) booleans: entry w has closed for query i ((w + 1) ratio <= i + 1)."""
        closes = (torch.arange(t, device=device) + 1) // ratio
        return torch.arange(n, device=device).unsqueeze(0) < closes.unsqueeze(1)

    class EntryIndexer(nn.Module):
        """CSA's indexer: which entries each query reads, (B, T, n) booleans."""

        flop_class = "attention"

        def __init__(self, s: spec.EntryIndexer, ctx) -> None:
            super().__init__()
            self.compressor = Compressor(s.compressor, ctx)
            self.q_b_proj = nn.Linear(s.q_rank, s.heads * s.head_dim, bias=False)
            self.weights_proj = nn.Linear(s.d_model, s.heads, bias=False)
            self.rotary = ctx.trailing_rotary(s.compressor.rope)
            self.heads, self.head_dim, self.top_k = s.heads, s.head_dim, s.top_k

        def forward(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            keys = self.compressor(x)  # (B, n, hd)
            n = keys.shape[1]
            positions = torch.arange(t, device=x.device)
            q = self.rotary(
                self.q_b_proj(q_latent).view(b, t, self.heads, self.head_dim), positions
            )
            scores = torch.matmul(q, keys.transpose(1, 2).unsqueeze(1))  # (B, T, H, n)
            scores = F.relu(scores) * self.head_dim**-0.5
            weights = self.weights_proj(x) * self.heads**-0.5  # (B, T, H)
            index = (scores * weights.unsqueeze(-1)).sum(dim=2)  # (B, T, n)
            visible = visible_entries(t, n, self.compressor.ratio, x.device)
            if n == 0:
                return visible.expand(b, t, n)
            index = index.masked_fill(~visible, float("-inf"))
            chosen = index.topk(min(self.top_k, n), dim=-1).indices
            picked = torch.zeros_like(index).scatter(-1, chosen, 1.0) > 0
            return torch.logical_and(picked, visible)

    class CompressedAttention(nn.Module):
        """One DeepSeek-V4 attention layer: x (B, T, d) -> (B, T, d)."""

        flop_class = "linear"  # its own operation: the grouped output projection

        def __init__(self, s: spec.CompressedAttention, ctx) -> None:
            super().__init__()
            d, h, hd = s.d_model, s.n_heads, s.head_dim
            self.q_a_proj = nn.Linear(d, s.q_rank, bias=False)
            self.q_a_norm = norm_module(s.norm, s.q_rank)
            self.q_b_proj = nn.Linear(s.q_rank, h * hd, bias=False)
            self.q_b_norm = norm_module(bare_rms(s.eps), hd)
            self.kv_proj = nn.Linear(d, hd, bias=False)
            self.kv_norm = norm_module(s.norm, hd)
            # each group's heads (h hd / groups wide) to rank: one (groups rank, h hd / groups)
            # weight, block by block
            self.o_a_proj = nn.Linear(h * hd // s.groups, s.groups * s.rank, bias=False)
            self.o_b_proj = nn.Linear(s.groups * s.rank, d, bias=False)
            self.sinks = nn.Parameter(torch.zeros(h))
            self.rotary = ctx.trailing_rotary(s.rope)
            self.compressor = Compressor(s.compressor, ctx) if s.compressor else None
            self.indexer = EntryIndexer(s.indexer, ctx) if s.indexer else None
            self.heads, self.head_dim, self.groups, self.window = h, hd, s.groups, s.window
            self.kernel = WindowKernel(hd, s.window)

        def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
            b, t, _ = x.shape
            positions = torch.arange(t, device=x.device)
            q_latent = self.q_a_norm(self.q_a_proj(x))
            q = self.q_b_norm(self.q_b_proj(q_latent).view(b, t, self.heads, self.head_dim))
            q = self.rotary(q, positions)  # (B, T, H, hd)
            kv = self.rotary(self.kv_norm(self.kv_proj(x)).unsqueeze(2), positions).squeeze(2)
            entries, reads = None, None
            if self.compressor is not None:
                entries = self.compressor(x)  # (B, n, hd)
                n = entries.shape[1]
                reads = visible_entries(t, n, self.compressor.ratio, x.device).expand(b, t, n)
                if self.indexer is not None:
                    reads = self.indexer(x, q_latent)
            out = self.kernel(q, kv, entries, reads, self.sinks)  # (B, T, H, hd)
            out = self.rotary(out, positions, undo=True)
            grouped = out.reshape(b, t, self.groups, -1)  # (B, T, G, h hd / G)
            weight = self.o_a_proj.weight.view(self.groups, -1, grouped.shape[-1])
            mixed = torch.matmul(grouped.unsqueeze(-2), weight.transpose(1, 2)).squeeze(-2)
            return self.o_b_proj(mixed.flatten(2))

    class WindowKernel(nn.Module):
        """Softmax over the window's keys, the entries a query reads and a sink per head; the
        one key=value head serves every query head."""

        flop_class = "attention"

        def __init__(self, head_dim: int, window: int) -> None:
            super().__init__()
            self.scale, self.window = head_dim**-0.5, window

        def forward(
            self,
            q: torch.Tensor,
            kv: torch.Tensor,
            entries: torch.Tensor | None,
            reads: torch.Tensor | None,
            sinks: torch.Tensor,
        ) -> torch.Tensor:
            b, t, h, _ = q.shape
            i = torch.arange(t, device=q.device)
            band = torch.logical_and(
                i.unsqueeze(1) >= i.unsqueeze(0), i.unsqueeze(1) - i.unsqueeze(0) < self.window
            )
            keys, allowed = kv, band.expand(b, t, t)
            if entries is not None:
                keys = torch.cat((kv, entries), dim=1)
                allowed = torch.cat((allowed, reads), dim=-1)
            q = q.transpose(1, 2) * self.scale  # (B, H, T, hd)
            scores = torch.matmul(q, keys.transpose(1, 2).unsqueeze(1))  # (B, H, T, K)
            scores = scores.masked_fill(~allowed.unsqueeze(1), float("-inf"))
            sink = sinks.view(1, h, 1, 1).expand(b, h, t, 1)
            probs = torch.cat((scores, sink), dim=-1).softmax(dim=-1)[..., :-1]
            return torch.matmul(probs, keys.unsqueeze(1)).transpose(1, 2)  # (B, T, H, hd)

    class HyperConnection(nn.Module):
        """mHC around one sublayer (see plan.compressed.HyperConnection)."""

        flop_class = "elementwise"

        def __init__(self, s: spec.HyperConnection) -> None:
            super().__init__()
            n = s.n
            self.norm = norm_module(bare_rms(s.norm_eps), n * s.d_model)
            self.fn = nn.Parameter(torch.randn(s.outputs, n * s.d_model) * 0.02)
            self.base = nn.Parameter(torch.zeros(s.outputs))
            self.scale = nn.Parameter(torch.ones(3))
            self.n, self.iters, self.eps = n, s.sinkhorn_iters, s.eps

        def forward(self, streams: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            """streams (B, T, n, d) -> post (B, T, n), mix (B, T, n, n), the sublayer's input."""
            n = self.n
            mixes = F.linear(self.norm(streams.flatten(2)), self.fn)
            pre, post, mix = mixes.split([n, n, n * n], dim=-1)
            pre_b, post_b, mix_b = self.base.split([n, n, n * n])
            pre = torch.sigmoid(pre * self.scale[0] + pre_b) + self.eps
            post = 2 * torch.sigmoid(post * self.scale[1] + post_b)
            mix = mix * self.scale[2] + mix_b
            mix = mix.unflatten(-1, (n, n)).softmax(dim=-1) + self.eps
            mix = mix / (mix.sum(dim=-2, keepdim=True) + self.eps)
            for _ in range(self.iters - 1):  # Sinkhorn-Knopp: rows, then columns
                mix = mix / (mix.sum(dim=-1, keepdim=True) + self.eps)
                mix = mix / (mix.sum(dim=-2, keepdim=True) + self.eps)
            return post, mix, (pre.unsqueeze(-1) * streams).sum(dim=2)

    class HyperHead(nn.Module):
        """The stack's n streams: the embedding copied in, a weighted sum out."""

        flop_class = "elementwise"

        def __init__(self, s: spec.HyperHead) -> None:
            super().__init__()
            n = s.n
            self.norm = norm_module(bare_rms(s.norm_eps), n * s.d_model)
            self.fn = nn.Parameter(torch.randn(n, n * s.d_model) * 0.02)
            self.base = nn.Parameter(torch.zeros(n))
            self.scale = nn.Parameter(torch.ones(1))
            self.n, self.eps = n, s.eps

        def expand(self, x: torch.Tensor) -> torch.Tensor:
            return x.unsqueeze(2).expand(-1, -1, self.n, -1)

        def collapse(self, streams: torch.Tensor) -> torch.Tensor:
            pre = F.linear(self.norm(streams.flatten(2)), self.fn)
            pre = torch.sigmoid(pre * self.scale + self.base) + self.eps
            return (pre.unsqueeze(-1) * streams).sum(dim=2)

    class HyperBlock(nn.Module):
        """Attention, then the MoE, each pre-normed between mHC mixes of the streams."""

        def __init__(
            self, attn: nn.Module, mlp: nn.Module, norms: list[nn.Module], hyper: list[nn.Module]
        ) -> None:
            super().__init__()
            self.attn, self.mlp = attn, mlp
            self.attn_norm, self.mlp_norm = norms
            self.attn_hc, self.mlp_hc = hyper

        def forward(
            self,
            x: torch.Tensor,
            dual: torch.Tensor | None,
            bias: torch.Tensor | None = None,
            memory: torch.Tensor | None = None,
        ) -> tuple[torch.Tensor, torch.Tensor | None]:
            x = self._mixed(x, self.attn_hc, lambda h: self.attn(self.attn_norm(h)))
            return self._mixed(x, self.mlp_hc, lambda h: self.mlp(self.mlp_norm(h))), dual

        @staticmethod
        def _mixed(streams: torch.Tensor, hc: HyperConnection, sublayer) -> torch.Tensor:
            post, mix, h = hc(streams)
            # stream k receives sum_j mix[j, k] streams[j], and post[k] of the output
            carried = torch.matmul(mix.transpose(-1, -2), streams)
            return post.unsqueeze(-1) * sublayer(h).unsqueeze(-2) + carried

    def compressed_attention(s: spec.CompressedAttention, ctx) -> CompressedAttention:
        return CompressedAttention(s, ctx)

    def hyper_block(s: spec.HyperBlock, ctx) -> HyperBlock:
        norms = [norm_module(s.norm, s.d_model) for _ in range(2)]
        hyper = [HyperConnection(s.hyper) for _ in range(2)]
        return HyperBlock(s.mixer.module(ctx), s.mlp.module(ctx), norms, hyper)

    def hyper_head(s: spec.HyperHead, ctx=None) -> HyperHead:
        return HyperHead(s)

    return SimpleNamespace(
        TrailingRotary=TrailingRotary,
        trailing_tables=trailing_tables,
        Compressor=Compressor,
        visible_entries=visible_entries,
        EntryIndexer=EntryIndexer,
        CompressedAttention=CompressedAttention,
        WindowKernel=WindowKernel,
        HyperConnection=HyperConnection,
        HyperHead=HyperHead,
        HyperBlock=HyperBlock,
        compressed_attention=compressed_attention,
        hyper_block=hyper_block,
        hyper_head=hyper_head,
    )
