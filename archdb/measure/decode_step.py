"""One decode step through a built layer: attention over a KV cache, one new token.

The builder's attention modules compute whole sequences; decoding needs the cache. These
wrappers reuse a built module's projections, norms and rotary tables and read a cache
laid out as a server keeps it: K/V per KV head (GQA and MQA read each cached head once,
never expanded to the query heads), MLA's latent and shared RoPE key in the absorbed form
(DeepSeek-V2, section 2.1.3: W_UK folds into the query, W_UV into the output), and a
sliding-window layer's last ``window`` entries only.
"""

from __future__ import annotations

from operator import attrgetter

import torch
from torch import nn

from archdb.parts import attention as attention_part
from archdb.parts import kernels as kernels_part
from archdb.parts import positions as positions_part

HeadAttention, LatentAttention = attrgetter("HeadAttention", "LatentAttention")(
    attention_part.modules()
)
LocalKernel = kernels_part.modules().LocalKernel

Rotary = positions_part.modules().Rotary


def rotate_at(rotary: Rotary, x: torch.Tensor, position: int) -> torch.Tensor:
    """RoPE of one token at ``position`` (x: (B, 1, heads, D)). Past the table's end the
    last angle is reused: decode timings do not depend on the angle."""
    position = min(position, rotary.cos.shape[0] - 1)
    return rotary.rotate(x, rotary.cos[position], rotary.sin[position])  # its own pair layout


class CachedAttention(nn.Module):
    """HeadAttention for one new token after ``context - 1`` cached ones."""

    def __init__(self, attn: HeadAttention, batch: int, context: int) -> None:
        super().__init__()
        self.attn = attn
        window = attn.kernel.window if isinstance(attn.kernel, LocalKernel) else None
        self.slots = min(context, window) if window else context
        self.position = context - 1
        shape = (batch, attn.n_kv_heads, self.slots, attn.head_dim)
        self.register_buffer("k_cache", torch.randn(shape), persistent=False)
        values = (batch, attn.n_kv_heads, self.slots, attn.v_dim)
        self.register_buffer("v_cache", torch.randn(values), persistent=False)

    def forward(
        self, x: torch.Tensor, bias: torch.Tensor | None = None, memory: torch.Tensor | None = None
    ) -> torch.Tensor:
        a = self.attn
        b, h, kv, d = x.shape[0], a.n_heads, a.n_kv_heads, a.head_dim
        q = a.q(x).view(b, 1, h, d)
        k = a.k(x).view(b, 1, kv, d)
        v = a.v(x).view(b, 1, kv, a.v_dim)
        if a.qk_norm is not None:
            q, k = a.qk_norm(q, k)
        if a.rotary is not None:
            q, k = rotate_at(a.rotary, q, self.position), rotate_at(a.rotary, k, self.position)
        slot = self.position % self.slots  # a ring buffer for windows
        self.k_cache[:, :, slot] = k[:, 0]
        self.v_cache[:, :, slot] = v[:, 0]
        q = q.view(b, kv, h // kv, d)  # query heads grouped by the KV head they read
        scores = torch.matmul(q * a.kernel.scale, self.k_cache.transpose(-1, -2))  # (B,kv,g,L)
        if a.kernel.softcap is not None:
            scores = torch.tanh(scores / a.kernel.softcap) * a.kernel.softcap
        out = torch.matmul(scores.softmax(dim=-1), self.v_cache)  # (B, kv, g, Dv)
        return a.o(out.reshape(b, 1, h * a.v_dim))


class CachedLatentAttention(nn.Module):
    """MLA for one new token, reading only the cached latents and RoPE keys."""

    def __init__(self, attn: LatentAttention, batch: int, context: int) -> None:
        super().__init__()
        self.attn = attn
        self.position = context - 1
        self.register_buffer(
            "latent_cache", torch.randn(batch, context, attn.kv_rank), persistent=False
        )
        self.register_buffer(
            "rope_cache", torch.randn(batch, context, attn.rope_dim), persistent=False
        )

    def forward(
        self, x: torch.Tensor, bias: torch.Tensor | None = None, memory: torch.Tensor | None = None
    ) -> torch.Tensor:
        a = self.attn
        b, h = x.shape[0], a.n_heads
        q = a.q(x).view(b, 1, h, -1)
        q_nope, q_rope = q.split((a.nope_dim, a.rope_dim), dim=-1)
        latent, k_rope = a.kv_down(x).split((a.kv_rank, a.rope_dim), dim=-1)
        latent = a.kv_norm(latent)
        k_rope = k_rope.view(b, 1, 1, a.rope_dim)
        if a.rotary is not None:
            q_rope = rotate_at(a.rotary, q_rope, self.position)
            k_rope = rotate_at(a.rotary, k_rope, self.position)
        self.latent_cache[:, self.position] = latent[:, 0]
        self.rope_cache[:, self.position] = k_rope[:, 0, 0]
        up = a.kv_up.weight.view(h, a.nope_dim + a.v_dim, a.kv_rank)
        w_uk, w_uv = up[:, : a.nope_dim], up[:, a.nope_dim :]
        q_latent = torch.einsum("bhn,hnr->bhr", q_nope[:, 0], w_uk)  # (B, h, rank)
        scores = torch.matmul(q_latent, self.latent_cache.transpose(1, 2))  # (B, h, L)
        scores = scores + torch.matmul(q_rope[:, 0], self.rope_cache.transpose(1, 2))
        p = (scores * a.kernel.scale).softmax(dim=-1)
        out_latent = torch.matmul(p, self.latent_cache)  # (B, h, rank)
        out = torch.einsum("bhr,hvr->bhv", out_latent, w_uv)  # (B, h, v)
        return a.o(out.reshape(b, 1, h * a.v_dim))


def attach_caches(stack: nn.Module, batch: int, context: int) -> None:
    """Swap every attention module of ``stack`` for its cached decode form (again if
    already swapped, with a cache for the new context)."""
    for parent in list(stack.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, (CachedAttention, CachedLatentAttention)):
                child = child.attn
            if isinstance(child, HeadAttention):
                setattr(parent, name, CachedAttention(child, batch, context))
            elif isinstance(child, LatentAttention):
                setattr(parent, name, CachedLatentAttention(child, batch, context))


def layer_weights(stack: nn.Module) -> int:
    """Parameters of the stack (each once): what a decode step reads besides the cache."""
    return sum(p.numel() for p in stack.parameters())
