"""Phi-3-small's block-sparse attention layout: which keys each query head reads.

Tokens are cut into blocks of ``block_size`` from the start of the sequence. A query in
block b reads, causally, the keys of its ``local_blocks`` latest blocks (b - local_blocks +
1 .. b, its own included) and of every earlier block j with (j + 1 + shift_h) mod
``vertical_stride`` == 0, where query head h shifts by h * max(1, vertical_stride // n_heads)
(Phi3SmallConfig's blocksparse_homo_head_pattern false; no shift when true). This is the
layout of vLLM's ``get_sparse_attn_mask`` for the released config, per query head, a KV head
serving consecutive query heads.

Counting convention: the kernel computes the whole masked score matrix, so the dense count
is every key of every query; the useful count is the keys the layout lets a query read
(summed over heads, in closed form per block). Every key is cached: a later query of some
head may read any block.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace

from archdb.schema import BlockSparse


@dataclass(frozen=True)
class BlockSparseLayout:
    """The blocks each query head reads (see the module docstring)."""

    block_size: int
    local_blocks: int
    vertical_stride: int
    head_shifts: tuple[int, ...]  # each query head's shift of its vertical blocks

    @classmethod
    def of(cls, card: BlockSparse, n_heads: int) -> BlockSparseLayout:
        """The layout of a card's blocksparse layers with ``n_heads`` query heads."""
        step = max(1, card.vertical_stride // n_heads) if card.head_shifted else 0
        shifts = tuple(h * step % card.vertical_stride for h in range(n_heads))
        return cls(card.block_size, card.local_blocks, card.vertical_stride, shifts)

    @property
    def n_heads(self) -> int:
        return len(self.head_shifts)

    def _vertical_blocks(self, before: int, shift: int) -> int:
        """Blocks j in [0, before) a head with ``shift`` reads beyond its local band."""
        stride = self.vertical_stride
        first = (stride - 1 - shift) % stride  # the first j with (j + 1 + shift) % stride == 0
        return (max(before, 0) + stride - 1 - first) // stride

    def _far_blocks(self, block: int) -> int:
        """Blocks before a query block's local band: 0 .. block - local_blocks."""
        return block - self.local_blocks + 1

    def keys_read(self, position: int, head: int) -> int:
        """Keys the query at ``position`` (0-based) of ``head`` reads, itself included."""
        block = position // self.block_size
        band_start = self.block_size * max(0, self._far_blocks(block))
        vertical = self._vertical_blocks(self._far_blocks(block), self.head_shifts[head])
        return position - band_start + 1 + self.block_size * vertical

    def _floor_sum(self, m: int) -> int:
        """sum of j // vertical_stride for j in [0, m)."""
        whole, rest = divmod(max(m, 0), self.vertical_stride)
        return self.vertical_stride * whole * (whole - 1) // 2 + rest * whole

    def _vertical_total(self, blocks: int, shift: int) -> int:
        """Vertical blocks one head reads, summed over query blocks 0 .. blocks - 1."""
        far = blocks - self.local_blocks  # query blocks with far blocks: n = 1 .. far of them
        if far <= 0:
            return 0
        lead = self.vertical_stride - 1 - (self.vertical_stride - 1 - shift) % self.vertical_stride
        return self._floor_sum(far + 1 + lead) - self._floor_sum(1 + lead)

    def _band_offsets(self, blocks: int) -> int:
        """sum of min(b, local_blocks - 1) over query blocks 0 .. blocks - 1."""
        cap = self.local_blocks - 1
        if blocks <= cap + 1:
            return blocks * (blocks - 1) // 2
        return cap * (cap + 1) // 2 + (blocks - cap - 1) * cap

    def useful_keys(self, t: int) -> int:
        """Keys read by t queries, summed over the heads, in closed form (O(heads))."""
        size, heads = self.block_size, self.n_heads
        full, rest = divmod(t, size)
        # a full block's queries: size x (its band's earlier blocks x size + 1) + a triangle
        band = size * size * self._band_offsets(full) + full * (size + size * (size - 1) // 2)
        vertical = sum(self._vertical_total(full, s) for s in self.head_shifts)
        total = heads * band + size * size * vertical
        if rest:  # the last, partial block: rest queries
            offset = size * min(full, self.local_blocks - 1)
            last_band = rest * (offset + 1) + rest * (rest - 1) // 2
            far = self._far_blocks(full)
            last_vertical = sum(self._vertical_blocks(far, s) for s in self.head_shifts)
            total += heads * last_band + rest * size * last_vertical
        return total

    def mean_keys(self, context: float) -> float:
        """Keys one query of one head reads on average over ``context`` positions."""
        t = max(1, int(context))
        return self.useful_keys(t) / (self.n_heads * t)

    def newest_keys(self, context: int) -> int:
        """Keys the newest query (position context - 1) reads, summed over the heads."""
        return sum(self.keys_read(context - 1, h) for h in range(self.n_heads))

    def describe(self) -> str:
        band = self.local_blocks * self.block_size
        shifted = "shifted per head" if any(self.head_shifts) else "the same for every head"
        return (
            f"block-sparse attention, blocks of {self.block_size:,}: a local band of "
            f"{self.local_blocks} blocks ({band:,} tokens) and one block in "
            f"{self.vertical_stride} before it, {shifted}"
        )


# --- torch -----------------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """The layout as a torch mask, defined on first use: the plan never needs torch."""
    import torch

    def readable(
        layout: BlockSparseLayout,
        t: int,
        shifts: torch.Tensor | None = None,
        device: torch.device | None = None,
    ) -> torch.Tensor:
        """(heads, t, t) booleans, True where a query (row) may read a key (column): the
        layout within the causal mask. Integer and boolean operations only: no FLOPs."""
        if shifts is None:
            shifts = torch.tensor(layout.head_shifts, device=device)
        pos = torch.arange(t, device=shifts.device)
        block = pos // layout.block_size  # (T,)
        causal = pos.unsqueeze(0) <= pos.unsqueeze(1)  # key <= query
        distance = block.unsqueeze(1) - block.unsqueeze(0)  # query block - key block
        local = distance < layout.local_blocks  # (T, T)
        vertical = (block.unsqueeze(0) + shifts.unsqueeze(1) + 1) % layout.vertical_stride == 0
        either = torch.logical_or(local.unsqueeze(0), vertical.unsqueeze(1))  # (H, T, T)
        return torch.logical_and(either, causal.unsqueeze(0))

    return SimpleNamespace(readable=readable)
