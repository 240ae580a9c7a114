"""LongCat-Flash's shortcut-connected MoE layer (the spec: ``archdb.plan.shortcut``)."""

from __future__ import annotations

import torch
from torch import nn

from archdb.plan import shortcut as spec

from .blocks import Stream
from .norms import norm_module
from .registry import builds, module_of


class ShortcutBlock(nn.Module):
    """Two pre-norm (attention, dense MLP) pairs; the experts read the first dense MLP's
    normed input and their output joins the stream after the second dense MLP."""

    def __init__(
        self, attn: list[nn.Module], dense: list[nn.Module], moe: nn.Module, norms: list[nn.Module]
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


@builds(spec.ShortcutBlock)
def shortcut_block(s: spec.ShortcutBlock, ctx) -> ShortcutBlock:
    return ShortcutBlock(
        [module_of(m, ctx) for m in s.mixers],
        [module_of(s.dense) for _ in range(spec.PAIRS)],
        module_of(s.moe, ctx),
        [norm_module(s.norm, s.d_model) for _ in range(s.N_NORMS)],
    )
