"""Normalization blocks: LayerNorm and RMSNorm with their affine variants, and QK norms.

Each block takes plain numbers. ``flop_class`` tells the FLOP counter which class the
block's own operations belong to (see archdb.measure.conventions).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archdb.schema import NormType, QKNorm

LN_EPS = 1e-5
RMS_EPS = 1e-6


class Norm(nn.Module):
    """Base: a norm over the last ``width`` features with optional scale and bias."""

    flop_class = "norm"

    def __init__(self, width: int, scale: bool, bias: bool) -> None:
        super().__init__()
        self.width = width
        self.weight = nn.Parameter(torch.ones(width)) if scale else None
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None

    def extra_repr(self) -> str:
        return f"{self.width}, scale={self.weight is not None}, bias={self.bias is not None}"


class LayerNorm(Norm):
    """Ba et al. 2016: subtract the mean, divide by the standard deviation."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (self.width,), self.weight, self.bias, LN_EPS)


class RMSNorm(Norm):
    """Zhang & Sennrich 2019 (https://arxiv.org/abs/1910.07467): divide by the RMS only."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.rms_norm(x, (self.width,), self.weight, RMS_EPS)
        return y if self.bias is None else y + self.bias


NORMS: dict[NormType, type[Norm]] = {NormType.LAYERNORM: LayerNorm, NormType.RMSNORM: RMSNorm}


def make_norm(kind: NormType, width: int, scale: bool, bias: bool) -> Norm:
    return NORMS[kind](width, scale, bias)


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


def make_qk_norm(
    kind: QKNorm,
    norm: NormType,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    scale: bool,
    bias: bool,
) -> QKNormPair | None:
    """The QK norm of a card: none, per-head (shared scale), per-head-untied, full or l2."""
    if kind is QKNorm.NONE:
        return None
    if kind is QKNorm.PER_HEAD:
        return QKNormPair(
            make_norm(norm, head_dim, scale, bias), make_norm(norm, head_dim, scale, bias)
        )
    if kind is QKNorm.PER_HEAD_UNTIED:
        return QKNormPair(
            HeadwiseNorm(norm, n_heads, head_dim, scale, bias),
            HeadwiseNorm(norm, n_kv_heads, head_dim, scale, bias),
        )
    if kind is QKNorm.FULL:
        return QKNormPair(
            FlatNorm(make_norm(norm, n_heads * head_dim, scale, bias)),
            FlatNorm(make_norm(norm, n_kv_heads * head_dim, scale, bias)),
        )
    if kind is QKNorm.L2:  # x / rms(x) per head, no parameters (Llama 4's L2Norm)
        return QKNormPair(RMSNorm(head_dim, False, False), RMSNorm(head_dim, False, False))
    raise ValueError(f"unknown QK norm {kind!r}")
