"""Attention kernels: from per-head queries, keys and values to per-head outputs.

Written with explicit matmuls, never a fused scaled_dot_product_attention, so a FLOP
counter sees every score and value product. The kernel computes what it says:

- ``GlobalKernel``: every query scores every key (the causal mask hides the future);
- ``LocalKernel``: a banded kernel, each query scores exactly its ``window`` latest keys
  (Longformer-style sliding window; Mistral, Gemma 2/3 local layers), or in an encoder the
  keys at most ``window // 2`` away on either side (ModernBERT);
- ``ChunkedKernel``: the sequence is cut into blocks of ``chunk`` tokens and each query
  scores the keys of its block (Llama 4's chunked attention);
- ``LinearKernel``: causal linear attention, a running sum of key-value outer products
  read by the query (Katharopoulos et al. 2020; Schlag et al. 2021's fast weights).

Shapes: q (B, H, Tq, Dqk), k (B, H, Tk, Dqk), v (B, H, Tk, Dv) -> (B, H, Tq, Dv).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from archdb.plan import attention as spec
from archdb.schema import LayerKind

from .attributes import set_plain
from .registry import builds


class SoftmaxKernel(nn.Module):
    """Shared steps of softmax kernels: scale, bias, soft-cap, mask, softmax."""

    flop_class = "attention"

    def __init__(
        self, qk_dim: int, causal: bool, softcap: float | None, sink_heads: int = 0
    ) -> None:
        super().__init__()
        set_plain(self, scale=1.0 / math.sqrt(qk_dim), causal=causal, softcap=softcap)
        # gpt-oss's attention sinks: a learned logit per head in every query's softmax
        self.sinks = nn.Parameter(torch.zeros(sink_heads)) if sink_heads else None

    def probabilities(
        self, scores: torch.Tensor, bias: torch.Tensor | None, hidden: torch.Tensor | None
    ) -> torch.Tensor:
        """``hidden``: True where a query may not read a key (its score becomes -inf)."""
        if bias is not None:
            scores = scores + bias
        if self.softcap is not None:  # Gemma 2, Grok-1: c * tanh(x / c)
            scores = torch.tanh(scores / self.softcap) * self.softcap
        if hidden is not None:
            scores = scores.masked_fill(hidden, float("-inf"))
        if self.sinks is None:
            return scores.softmax(dim=-1)
        shape = (1, -1) + (1,) * (scores.dim() - 2)  # heads on dim 1, like the scores
        sink = self.sinks.view(shape).expand(*scores.shape[:-1], 1)
        return torch.cat([scores, sink], dim=-1).softmax(dim=-1)[..., :-1]

    def extra_repr(self) -> str:
        cap = f", softcap={self.softcap:g}" if self.softcap else ""
        return f"{type(self).__name__.removesuffix('Kernel').lower()}, causal={self.causal}{cap}"


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
        return torch.matmul(self.probabilities(scores, bias, hidden), v)


class LocalKernel(SoftmaxKernel):
    """Each query scores its ``window`` latest keys (itself included), padding masked; not
    causal (an encoder), the keys at most ``window // 2`` away on either side."""

    def __init__(
        self, qk_dim: int, causal: bool, softcap: float | None, window: int, sink_heads: int = 0
    ) -> None:
        super().__init__(qk_dim, causal, softcap, sink_heads)
        self.window = window

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None
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
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None
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
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None
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


@builds(spec.SoftmaxKernel)
def softmax_kernel(s: spec.SoftmaxKernel, ctx: object = None) -> SoftmaxKernel:
    cls = _SOFTMAX_KERNELS[s.rule]
    if s.rule.windowed:
        kernel = cls(s.qk_dim, s.causal, s.softcap, s.window, s.sink_heads)
    else:
        kernel = cls(s.qk_dim, s.causal, s.softcap, sink_heads=s.sink_heads)
    if s.scale is not None:
        kernel.scale = s.scale
    return kernel


@builds(spec.LinearKernel)
def linear_kernel(s: spec.LinearKernel, ctx: object = None) -> LinearKernel:
    return LinearKernel()
