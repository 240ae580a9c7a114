"""Shortcut-connected MoE layers (LongCat-Flash, https://arxiv.org/abs/2509.01322; transformers'
LongcatFlashDecoderLayer): two serial pre-norm (attention, dense MLP) pairs, and routed
experts that read the first dense MLP's normed input and join the residual stream after
the second dense MLP, so their dispatch overlaps the second attention.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from archdb.parts.attention import Mixer
from archdb.parts.mlp import DenseMLP
from archdb.parts.moe import MoESpec
from archdb.parts.norms import NormSpec
from archdb.tally import Tally

PAIRS = 2  # (attention, dense MLP) pairs per layer


@dataclass(frozen=True)
class ShortcutBlock:
    """One LongCat-Flash layer: x1 = x + attn0(n0(x)); m = n1(x1); x2 = x1 + mlp0(m);
    x3 = x2 + attn1(n2(x2)); out = x3 + mlp1(n3(x3)) + moe(m)."""

    d_model: int
    mixers: tuple[Mixer, Mixer]
    dense: DenseMLP  # both dense MLPs (own weights, one spec)
    moe: MoESpec
    norm: NormSpec

    N_NORMS = 2 * PAIRS

    def params(self) -> int:
        n = sum(m.params() for m in self.mixers) + PAIRS * self.dense.params()
        return n + self.moe.params() + self.N_NORMS * self.norm.params(self.d_model)

    def inactive_params(self) -> int:
        return self.moe.inactive_params()

    def flops(self, tally: Tally) -> None:
        d = self.d_model
        for _ in range(self.N_NORMS):
            self.norm.flops(tally, d)
        tally.elementwise((self.N_NORMS + 1) * d)  # four residual adds, + the experts' output
        for mixer in self.mixers:
            mixer.flops(tally)
        for _ in range(PAIRS):
            self.dense.flops(tally)
        self.moe.flops(tally)

    def cache_entries(self, context: int) -> int:
        return sum(m.cache_entries(context) for m in self.mixers)

    def module(self, ctx: Any = None) -> Any:
        return modules().shortcut_block(self, ctx)


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    from torch import nn

    from archdb.parts import blocks as blocks_part
    from archdb.parts import norms as norms_part

    # this module, for the specs: the torch classes below take the same names
    from archdb.parts import shortcut as spec

    Stream = blocks_part.modules().Stream
    norm_module = norms_part.modules().norm_module

    class ShortcutBlock(nn.Module):
        """Two pre-norm (attention, dense MLP) pairs; the experts read the first dense MLP's
        normed input and their output joins the stream after the second dense MLP."""

        def __init__(
            self,
            attn: list[nn.Module],
            dense: list[nn.Module],
            moe: nn.Module,
            norms: list[nn.Module],
        ) -> None:
            super().__init__()
            self.attn = nn.ModuleList(attn)
            self.dense = nn.ModuleList(dense)
            self.moe = moe
            self.attn_norms = nn.ModuleList(norms[0::2])  # before each attention
            self.mlp_norms = nn.ModuleList(norms[1::2])  # before each dense MLP

        def forward(
            self,
            x: torch.Tensor,
            dual: torch.Tensor | None,
            bias: torch.Tensor | None = None,
            memory: torch.Tensor | None = None,
        ) -> Stream:
            x = x + self.attn[0](self.attn_norms[0](x), bias)
            h = self.mlp_norms[0](x)
            routed = self.moe(h)
            x = x + self.dense[0](h)
            x = x + self.attn[1](self.attn_norms[1](x), bias)
            x = x + self.dense[1](self.mlp_norms[1](x)) + routed
            return x, dual

    def shortcut_block(s: spec.ShortcutBlock, ctx) -> ShortcutBlock:
        return ShortcutBlock(
            [m.module(ctx) for m in s.mixers],
            [s.dense.module() for _ in range(spec.PAIRS)],
            s.moe.module(ctx),
            [norm_module(s.norm, s.d_model) for _ in range(s.N_NORMS)],
        )

    return SimpleNamespace(
        ShortcutBlock=ShortcutBlock,
        shortcut_block=shortcut_block,
    )
