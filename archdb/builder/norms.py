"""Normalization blocks: one norm module for every kind, and the QK-norm shapes.

Each block takes plain numbers; the kinds and the QK-norm choices are registries in
``archdb.plan.norms``. ``flop_class`` tells the FLOP counter which class the
block's own operations belong to (see archdb.measure.conventions).
"""

from __future__ import annotations

import torch
from torch import nn

from archdb.plan.norms import NORMS
from archdb.schema import NormType


class Norm(nn.Module):
    """A norm over the last ``width`` features with optional scale and bias.

    What it computes comes from the kind's rule in ``archdb.plan.norms.NORMS``; the module
    holds the parameters and shows the kind's name (``LayerNorm(64, ...)``).
    """

    flop_class = "norm"

    def __init__(self, kind: NormType, width: int, scale: bool, bias: bool) -> None:
        super().__init__()
        self.kind, self.width = kind, width
        init = NORMS[kind].scale_init
        self.weight = nn.Parameter(torch.full((width,), init)) if scale else None
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return NORMS[self.kind].forward(x, self.width, self.weight, self.bias)

    def _get_name(self) -> str:
        return NORMS[self.kind].name

    def extra_repr(self) -> str:
        return f"{self.width}, scale={self.weight is not None}, bias={self.bias is not None}"


def make_norm(kind: NormType, width: int, scale: bool, bias: bool) -> Norm:
    return Norm(kind, width, scale, bias)


class HeadwiseNorm(nn.Module):
    """A norm over each head's dims with its own scale (and bias) per head (Command R+)."""

    flop_class = "norm"

    def __init__(self, kind: NormType, n_heads: int, head_dim: int, scale: bool, bias: bool):
        super().__init__()
        self.norm = make_norm(kind, head_dim, scale=False, bias=False)
        self.weight = nn.Parameter(torch.ones(n_heads, head_dim)) if scale else None
        self.bias = nn.Parameter(torch.zeros(n_heads, head_dim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, heads, head_dim)
        y = self.norm(x)
        if self.weight is not None:
            y = y * self.weight
        if self.bias is not None:
            y = y + self.bias
        return y


class FlatNorm(nn.Module):
    """One norm over all heads' dims together (OLMo 2's QK norm)."""

    flop_class = "norm"

    def __init__(self, norm: Norm) -> None:
        super().__init__()
        self.norm = norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, heads, head_dim)
        return self.norm(x.flatten(-2)).view_as(x)


class QKNormPair(nn.Module):
    """Normalizes queries and keys before their dot product (Dehghani et al. 2023)."""

    def __init__(self, q_norm: nn.Module, k_norm: nn.Module) -> None:
        super().__init__()
        self.q_norm = q_norm
        self.k_norm = k_norm

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q_norm(q), self.k_norm(k)
