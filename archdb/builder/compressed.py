"""DeepSeek-V4's attention and mHC streams (the specs: ``archdb.plan.compressed``).

As transformers' deepseek_v4 computes them without a cache: every layer attends over a
sliding window of its one key=value head and, in compressed layers, over compressed entries
of the whole past (CSA: the indexer's top_k; HCA: all visible), with a sink logit per head.
An entry is visible to query t once its window has closed: entry w when (w + 1) ratio <= t + 1.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archdb.device import on_meta
from archdb.plan import compressed as spec
from archdb.plan.norms import bare_rms

from .norms import norm_module
from .positions import scaled_frequencies
from .registry import builds, module_of


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

    def forward(self, x: torch.Tensor, positions: torch.Tensor, undo: bool = False) -> torch.Tensor:
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
        q = self.rotary(self.q_b_proj(q_latent).view(b, t, self.heads, self.head_dim), positions)
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


@builds(spec.CompressedAttention)
def compressed_attention(s: spec.CompressedAttention, ctx) -> CompressedAttention:
    return CompressedAttention(s, ctx)


@builds(spec.HyperBlock)
def hyper_block(s: spec.HyperBlock, ctx) -> HyperBlock:
    norms = [norm_module(s.norm, s.d_model) for _ in range(2)]
    hyper = [HyperConnection(s.hyper) for _ in range(2)]
    return HyperBlock(module_of(s.mixer, ctx), module_of(s.mlp, ctx), norms, hyper)


@builds(spec.HyperHead)
def hyper_head(s: spec.HyperHead, ctx=None) -> HyperHead:
    return HyperHead(s)
