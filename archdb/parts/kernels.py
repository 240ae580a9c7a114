"""Attention kernels: scores, softmax (or a linear feature map) and the weighted sum of
values, per layer kind.

``KERNELS`` says, per layer kind (global, local, global-nope, chunked), which keys a query
scores and caches; ``SoftmaxKernel`` and ``LinearKernel`` are the specs, and ``modules()``
the kernels that compute them (a global, local or chunked softmax; causal linear attention).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.parts.blocksparse import BlockSparseLayout
from archdb.schema import LayerKind
from archdb.tally import Tally

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


def mean_scored_keys(
    kind: LayerKind, window: int | None, context: float, causal: bool, windows: bool
) -> float:
    """Keys one query scores on average in a sequence of ``context`` tokens: every key
    (``causal`` False), half of them under the causal mask, and with ``windows`` a windowed
    kind at most its window: min(position, window) averaged over positions (local), the
    position within its chunk (chunked)."""
    if not causal:
        return context
    if not windows or window is None or not KERNELS[kind].windowed or context <= window:
        return context / 2
    if kind is LayerKind.CHUNKED:
        full, rest = divmod(context, window)
        return (full * window * window / 2 + rest * rest / 2) / context
    return window - window * window / (2 * context)


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
    # are counted by archdb.parts.compressed)
    LayerKind.COMPRESSED_SPARSE: KernelRule(_local_dense, _local_causal, windowed=True),
    LayerKind.HEAVILY_COMPRESSED: KernelRule(_local_dense, _local_causal, windowed=True),
    # Phi-3-small's block-sparse layers: every key scored and cached, as a global layer's;
    # the keys a query reads are the kernel's layout (SoftmaxKernel.blocks)
    LayerKind.BLOCKSPARSE: _GLOBAL,
}


@dataclass(frozen=True)
class FloorLogTemperature:
    """Llama 4's attention temperature tuning on its NoPE layers: the logits of the query
    at 0-based position p times 1 + scale * ln(1 + floor((p + 1) / floor_scale))."""

    floor_scale: int
    scale: float

    OPS_PER_QUERY = 6  # + 1, / floor_scale, floor, log1p, * scale, + 1


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
    # xAI's temperature (Grok-2): logits of queries at p > L times log2(p) / log2(L)
    temperature_length: int | None = None
    blocks: BlockSparseLayout | None = None  # Phi-3-small's block-sparse layout (per head)
    floor_temperature: FloorLogTemperature | None = None  # Llama 4's, on its NoPE layers

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

    def head_keys(self, t: int, h: int) -> tuple[int, int]:
        """(computed, useful) scores of t queries summed over h heads: ``keys`` per head,
        or, block-sparse, every score computed and the layout's keys read."""
        if self.blocks is None:
            dense, useful = self.keys(t)
            return h * dense, h * useful
        if self.blocks.n_heads != h:
            raise ValueError(f"a block-sparse layout of {self.blocks.n_heads} heads read by {h}")
        return h * t * t, self.blocks.useful_keys(t)

    def cached_keys(self, context: int) -> int:
        return min(context, self.window) if self.rule.windowed else context

    def newest_keys(self, context: int, h: int) -> int:
        """Keys the newest of ``context`` tokens reads from the cache, summed over h heads."""
        if self.blocks is not None:
            return self.blocks.newest_keys(context)
        return h * self.cached_keys(context)

    def mean_keys(self, context: float, causal: bool = True, windows: bool = True) -> float:
        """Keys one query scores on average at ``context`` (``mean_scored_keys``; a
        block-sparse layer's, the layout's mean when ``windows``)."""
        if self.blocks is not None and causal and windows:
            return self.blocks.mean_keys(context)
        return mean_scored_keys(self.kind, self.window, context, causal, windows)

    def matmuls_per_score(self, vd: int) -> int:
        """One head's q.k and its share of the weighted sum of values: 2 (d_qk + d_v)."""
        return cv.FLOPS_PER_MAC * (self.qk_dim + vd)

    def flops(self, tally: Tally, h: int, vd: int, per_score_extra: int = 0) -> None:
        t, qk = tally.seq_len, self.qk_dim
        dense, useful = self.head_keys(t, h)
        tally.add(C.ATTENTION, t * h * qk)  # q * 1/sqrt(d)
        per_score = self.matmuls_per_score(vd) + per_score_extra  # QK^T and AV (+ bias)
        if self.softcap is not None:
            per_score += cv.SOFTCAP
        if self.temperature_length is not None:  # each query's factor: log2, scale, floor 1
            per_score += cv.ELEMENTWISE
            tally.add(C.ATTENTION, t * 3 * cv.ELEMENTWISE)
        if (floor := self.floor_temperature) is not None:
            per_score += cv.ELEMENTWISE
            tally.add(C.ATTENTION, t * floor.OPS_PER_QUERY * cv.ELEMENTWISE)
        tally.add(C.ATTENTION, dense * per_score, useful * per_score)
        tally.add(C.SOFTMAX, dense * cv.SOFTMAX, useful * cv.SOFTMAX)
        if self.sink_heads:  # one more logit per query and head in the softmax
            tally.add(C.SOFTMAX, t * h * cv.SOFTMAX)

    def params(self) -> int:
        return self.sink_heads

    def module(self, ctx: Any = None) -> Any:
        return modules().softmax_kernel(self, ctx)


@dataclass(frozen=True)
class LinearKernel:
    """Causal linear attention: a running state of key-value outer products, no cache."""

    window = None  # every past token is in the state

    def mean_keys(self, context: float, causal: bool = True, windows: bool = True) -> float:
        return 0.0  # no keys are scored: the state is read

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

    def module(self, ctx: Any = None) -> Any:
        return modules().linear_kernel(self, ctx)


class ScoredThroughKernel:
    """An attention spec whose kernel (its ``kernel`` field) decides which keys a query
    scores: the crossover asks the attention, which asks the kernel."""

    def mean_keys(self, context: float, causal: bool = True, windows: bool = True) -> float:
        """Keys one query scores on average at ``context`` (its kernel's)."""
        return self.kernel.mean_keys(context, causal, windows)  # type: ignore[attr-defined]

    @property
    def window(self) -> int | None:
        return self.kernel.window  # type: ignore[attr-defined]


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    # this module, for the specs: the torch classes below take the same names
    from archdb.parts import blocksparse as blocksparse_part
    from archdb.parts import kernels as spec
    from archdb.parts.attributes import set_plain

    class SoftmaxKernel(nn.Module):
        """Shared steps of softmax kernels: scale, bias, soft-cap, mask, softmax."""

        flop_class = "attention"

        def __init__(
            self, qk_dim: int, causal: bool, softcap: float | None, sink_heads: int = 0
        ) -> None:
            super().__init__()
            set_plain(self, scale=1.0 / math.sqrt(qk_dim), causal=causal, softcap=softcap)
            self.temperature_length: int | None = None  # xAI's (Grok-2), set from the spec
            self.floor_temperature: FloorLogTemperature | None = None  # Llama 4's NoPE layers
            # gpt-oss's attention sinks: a learned logit per head in every query's softmax
            self.sinks = nn.Parameter(torch.zeros(sink_heads)) if sink_heads else None

        def probabilities(
            self,
            scores: torch.Tensor,
            bias: torch.Tensor | None,
            hidden: torch.Tensor | None,
            temperature: torch.Tensor | None = None,
        ) -> torch.Tensor:
            """``hidden``: True where a query may not read a key (its score becomes -inf);
            ``temperature``: (Tq, 1) factors on each query's capped logits."""
            if bias is not None:
                scores = scores + bias
            if self.softcap is not None:  # Gemma 2, Grok-1: c * tanh(x / c)
                scores = torch.tanh(scores / self.softcap) * self.softcap
            if temperature is not None:
                scores = scores * temperature
            if hidden is not None:
                scores = scores.masked_fill(hidden, float("-inf"))
            if self.sinks is None:
                return scores.softmax(dim=-1)
            shape = (1, -1) + (1,) * (scores.dim() - 2)  # heads on dim 1, like the scores
            sink = self.sinks.view(shape).expand(*scores.shape[:-1], 1)
            return torch.cat([scores, sink], dim=-1).softmax(dim=-1)[..., :-1]

        def temperature(self, t: int, device: torch.device) -> torch.Tensor | None:
            """The attention temperature of queries at positions 0..t-1, as (t, 1): xAI's, 1
            up to L and log2(p) / log2(L) past it (SGLang's xai_temperature_len), or Llama
            4's floor-log factor; None without one."""
            floor = self.floor_temperature
            if floor is None and self.temperature_length is None:
                return None
            positions = torch.arange(t, device=device, dtype=torch.float32)
            if floor is not None:
                steps = torch.floor((positions + 1.0) / floor.floor_scale)
                return (torch.log1p(steps) * floor.scale + 1.0).unsqueeze(-1)
            ratio = torch.log2(positions) * (1.0 / math.log2(self.temperature_length))
            return ratio.clamp(min=1.0).unsqueeze(-1)  # log2(0) = -inf: 1 as well

        def extra_repr(self) -> str:
            cap = f", softcap={self.softcap:g}" if self.softcap else ""
            if self.temperature_length is not None:
                cap += f", temperature_length={self.temperature_length}"
            if (floor := self.floor_temperature) is not None:
                cap += f", floor_temperature={floor.floor_scale}x{floor.scale:g}"
            return (
                f"{type(self).__name__.removesuffix('Kernel').lower()}, causal={self.causal}{cap}"
            )

    class GlobalKernel(SoftmaxKernel):
        def forward(
            self,
            q: torch.Tensor,
            k: torch.Tensor,
            v: torch.Tensor,
            bias: torch.Tensor | None = None,
            selected: torch.Tensor | None = None,
        ) -> torch.Tensor:
            """``selected``: the keys each query may read (causal), e.g. a DSA indexer's top-k."""
            scores = torch.matmul(q * self.scale, k.transpose(-1, -2))  # (B, H, Tq, Tk)
            hidden = future_mask(q.shape[2], q.device) if self.causal else None
            if selected is not None:
                hidden = ~selected
            temperature = self.temperature(q.shape[2], q.device)  # queries from position 0
            return torch.matmul(self.probabilities(scores, bias, hidden, temperature), v)

    class LocalKernel(SoftmaxKernel):
        """Each query scores its ``window`` latest keys (itself included), padding masked; not
        causal (an encoder), the keys at most ``window // 2`` away on either side."""

        def __init__(
            self, qk_dim: int, causal: bool, softcap: float | None, window: int, sink_heads: int = 0
        ) -> None:
            super().__init__(qk_dim, causal, softcap, sink_heads)
            self.window = window

        def forward(
            self,
            q: torch.Tensor,
            k: torch.Tensor,
            v: torch.Tensor,
            bias: torch.Tensor | None = None,
        ) -> torch.Tensor:
            if not self.causal:
                return self._two_sided(q, k, v, bias)
            t, w = q.shape[2], self.window
            if w >= t:  # the window covers the sequence: a global causal kernel
                scores = torch.matmul(q * self.scale, k.transpose(-1, -2))
                return torch.matmul(self.probabilities(scores, bias, future_mask(t, q.device)), v)
            kw = F.pad(k, (0, 0, w - 1, 0)).unfold(2, w, 1)  # (B, H, T, Dqk, W)
            vw = F.pad(v, (0, 0, w - 1, 0)).unfold(2, w, 1)  # (B, H, T, Dv, W)
            scores = torch.matmul((q * self.scale).unsqueeze(-2), kw).squeeze(-2)  # (B, H, T, W)
            # slot j of query i holds key i - (w - 1) + j: the first w - 1 - i slots are padding,
            # those with w - 1 - j > i (above the diagonal once the slots are flipped)
            padding = torch.ones(t, w, dtype=torch.bool, device=q.device).triu(1).flip(-1)
            p = self.probabilities(scores, bias, padding)
            return torch.matmul(p.unsqueeze(-2), vw.transpose(-1, -2)).squeeze(-2)

        def _two_sided(
            self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None
        ) -> torch.Tensor:
            """An encoder's window: each query reads the keys at most window // 2 away on either
            side (ModernBERT: |i - j| <= local_attention // 2), as a band of 2 half + 1 slots."""
            t, half = q.shape[2], self.window // 2
            band = 2 * half + 1
            if t <= band:  # the band covers the sequence: every score, the far ones masked
                near = torch.ones(t, t, dtype=torch.bool, device=q.device)
                far = torch.logical_or(near.triu(half + 1), near.tril(-half - 1))
                scores = torch.matmul(q * self.scale, k.transpose(-1, -2))
                return torch.matmul(self.probabilities(scores, bias, far), v)
            kw = F.pad(k, (0, 0, half, half)).unfold(2, band, 1)  # (B, H, T, Dqk, band)
            vw = F.pad(v, (0, 0, half, half)).unfold(2, band, 1)
            scores = torch.matmul((q * self.scale).unsqueeze(-2), kw).squeeze(-2)  # (B, H, T, band)
            # slot j of query i holds key i - half + j: before the sequence when j < half - i,
            # after it when j > half + (t - 1 - i); masks made without arithmetic on positions
            beyond = torch.ones(t, band, dtype=torch.bool, device=q.device).triu(half + 1)
            padding = torch.logical_or(beyond.flip(-1), beyond.flip(0))
            p = self.probabilities(scores, bias, padding)
            return torch.matmul(p.unsqueeze(-2), vw.transpose(-1, -2)).squeeze(-2)

        def extra_repr(self) -> str:
            return f"{super().extra_repr()}, window={self.window}"

    class ChunkedKernel(SoftmaxKernel):
        """Causal attention within consecutive blocks of ``chunk`` tokens."""

        def __init__(
            self, qk_dim: int, causal: bool, softcap: float | None, chunk: int, sink_heads: int = 0
        ) -> None:
            super().__init__(qk_dim, causal, softcap, sink_heads)
            self.chunk = chunk

        def forward(
            self,
            q: torch.Tensor,
            k: torch.Tensor,
            v: torch.Tensor,
            bias: torch.Tensor | None = None,
        ) -> torch.Tensor:
            b, h, t, _ = q.shape
            c = min(self.chunk, t)
            full = (t // c) * c
            outs = []
            if full:
                split = (b, h, t // c, c)  # (B, H, n_chunks, C, D)
                qc = q[:, :, :full].reshape(*split, -1)
                kc = k[:, :, :full].reshape(*split, -1)
                vc = v[:, :, :full].reshape(*split, -1)
                outs.append(self._block(qc, kc, vc).reshape(b, h, full, -1))
            if full < t:  # a last, shorter chunk
                outs.append(self._block(q[:, :, full:], k[:, :, full:], v[:, :, full:]))
            return torch.cat(outs, dim=2) if len(outs) > 1 else outs[0]

        def _block(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            scores = torch.matmul(q * self.scale, k.transpose(-1, -2))
            hidden = future_mask(q.shape[-2], q.device)
            return torch.matmul(self.probabilities(scores, None, hidden), v)

        def extra_repr(self) -> str:
            return f"{super().extra_repr()}, chunk={self.chunk}"

    class BlockSparseKernel(GlobalKernel):
        """Phi-3-small's block-sparse layers: each head scores every key and reads those
        its layout allows (archdb.parts.blocksparse), causally."""

        def __init__(
            self,
            qk_dim: int,
            causal: bool,
            softcap: float | None,
            layout: spec.BlockSparseLayout,
            sink_heads: int = 0,
        ) -> None:
            super().__init__(qk_dim, causal, softcap, sink_heads)
            set_plain(self, layout=layout)
            # each head's shift, a buffer so the traced mask reads it rather than a constant
            shifts = torch.tensor(layout.head_shifts, dtype=torch.long)
            self.register_buffer("head_shifts", shifts, persistent=False)

        def forward(
            self,
            q: torch.Tensor,
            k: torch.Tensor,
            v: torch.Tensor,
            bias: torch.Tensor | None = None,
            selected: torch.Tensor | None = None,
        ) -> torch.Tensor:
            readable = blocksparse_part.modules().readable(
                self.layout, q.shape[2], self.head_shifts
            )
            return super().forward(q, k, v, bias, selected=readable)

        def extra_repr(self) -> str:
            lay = self.layout
            return (
                f"{super().extra_repr()}, block_size={lay.block_size}, "
                f"local_blocks={lay.local_blocks}, vertical_stride={lay.vertical_stride}"
            )

    def future_mask(t: int, device: torch.device) -> torch.Tensor:
        """(t, t) booleans, True above the diagonal: the keys a causal query may not read."""
        return torch.ones(t, t, dtype=torch.bool, device=device).triu(1)

    class LinearKernel(nn.Module):
        """Causal linear attention with the elu+1 feature map (https://arxiv.org/abs/2006.16236).

        The state S_i = sum_{j<=i} phi(k_j) v_j^T is a fast weight matrix written by outer
        products and read by phi(q_i); the normalizer z_i = sum_{j<=i} phi(k_j).
        """

        flop_class = "attention"
        eps = 1e-6

        def forward(
            self,
            q: torch.Tensor,
            k: torch.Tensor,
            v: torch.Tensor,
            bias: torch.Tensor | None = None,
        ) -> torch.Tensor:
            q, k = F.elu(q) + 1, F.elu(k) + 1
            state = (k.unsqueeze(-1) * v.unsqueeze(-2)).cumsum(dim=2)  # (B, H, T, Dqk, Dv)
            num = torch.matmul(q.unsqueeze(-2), state).squeeze(-2)  # (B, H, T, Dv)
            den = (q * k.cumsum(dim=2)).sum(dim=-1, keepdim=True) + self.eps  # (B, H, T, 1)
            return num / den

        def extra_repr(self) -> str:
            return "linear, causal=True, feature_map=elu+1"

    # --- from specs ----------------------------------------------------------------------------

    # by the plan's rule, so every layer kind that shares a rule shares its module
    _SOFTMAX_KERNELS: dict[spec.KernelRule, type[SoftmaxKernel]] = {
        spec.KERNELS[LayerKind.GLOBAL]: GlobalKernel,
        spec.KERNELS[LayerKind.LOCAL]: LocalKernel,
        spec.KERNELS[LayerKind.CHUNKED]: ChunkedKernel,
    }

    def softmax_kernel(s: spec.SoftmaxKernel, ctx: object = None) -> SoftmaxKernel:
        cls = _SOFTMAX_KERNELS[s.rule]
        if s.blocks is not None:
            kernel = BlockSparseKernel(s.qk_dim, s.causal, s.softcap, s.blocks, s.sink_heads)
        elif s.rule.windowed:
            kernel = cls(s.qk_dim, s.causal, s.softcap, s.window, s.sink_heads)
        else:
            kernel = cls(s.qk_dim, s.causal, s.softcap, sink_heads=s.sink_heads)
        if s.scale is not None:
            kernel.scale = s.scale
        kernel.temperature_length = s.temperature_length
        kernel.floor_temperature = s.floor_temperature
        return kernel

    def linear_kernel(s: spec.LinearKernel, ctx: object = None) -> LinearKernel:
        return LinearKernel()

    return SimpleNamespace(
        SoftmaxKernel=SoftmaxKernel,
        GlobalKernel=GlobalKernel,
        LocalKernel=LocalKernel,
        ChunkedKernel=ChunkedKernel,
        BlockSparseKernel=BlockSparseKernel,
        future_mask=future_mask,
        LinearKernel=LinearKernel,
        _SOFTMAX_KERNELS=_SOFTMAX_KERNELS,
        softmax_kernel=softmax_kernel,
        linear_kernel=linear_kernel,
    )
