"""Normalization blocks: one norm module for every kind, and the QK-norm shapes.

Each block takes plain numbers; the kinds are rules in ``archdb.choices.norms``, the specs
in ``archdb.plan.norms`` (``norm_module`` and ``qk_norm_module`` make their modules).
``flop_class`` tells the FLOP counter which class the block's own operations belong to
(see archdb.conventions).
"""

from __future__ import annotations

import torch
from torch import nn

from archdb.choices.norms import NORMS
from archdb.plan.norms import BARE_RMS, NormSpec, QKNormSpec
from archdb.schema import NormType, QKNorm

from .attributes import set_plain
from .registry import builds


class Norm(nn.Module):
    """A norm over the last ``width`` features with optional scale and bias.

    What it computes comes from the kind's rule in ``archdb.choices.norms.NORMS``; the module
    holds the parameters and shows the kind's name (``LayerNorm(64, ...)``).
    """

    flop_class = "norm"

    def __init__(
        self,
        kind: NormType,
        width: int,
        scale: bool,
        bias: bool,
        eps: float | None = None,
        unit_offset: bool = False,
    ) -> None:
        super().__init__()
        set_plain(self, kind=kind, width=width, eps=eps, unit_offset=unit_offset)
        init = 0.0 if unit_offset else NORMS[kind].scale_init  # (1 + 0) starts at identity
        self.weight = nn.Parameter(torch.full((width,), init)) if scale else None
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight
        if weight is not None and self.unit_offset:
            weight = 1.0 + weight
        return NORMS[self.kind].forward(x, self.width, weight, self.bias, self.eps)

    def _get_name(self) -> str:
        return NORMS[self.kind].name

    def extra_repr(self) -> str:
        text = f"{self.width}, scale={self.weight is not None}, bias={self.bias is not None}"
        text += "" if self.eps is None else f", eps={self.eps:g}"
        return text + (", unit_offset=True" if self.unit_offset else "")


def make_norm(
    kind: NormType, width: int, scale: bool, bias: bool, eps: float | None = None
) -> Norm:
    return Norm(kind, width, scale, bias, eps)


class HeadwiseNorm(nn.Module):
    """A norm over each head's dims with its own scale (and bias) per head (Command R+)."""

    flop_class = "norm"

    def __init__(
        self,
        kind: NormType,
        n_heads: int,
        head_dim: int,
        scale: bool,
        bias: bool,
        eps: float | None = None,
    ):
        super().__init__()
        self.norm = make_norm(kind, head_dim, scale=False, bias=False, eps=eps)
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

    def __init__(self, q_norm: nn.Module, k_norm: nn.Module | None) -> None:
        super().__init__()
        self.q_norm = q_norm
        self.k_norm = k_norm  # None: a layer that reuses another layer's normed keys

    def forward(
        self, q: torch.Tensor, k: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.q_norm(q), None if self.k_norm is None else self.k_norm(k)


# --- from specs ----------------------------------------------------------------------------


def norm_module(spec: NormSpec, width: int) -> Norm:
    """The norm a spec describes, over ``width`` features."""
    return Norm(spec.type, width, spec.scale, spec.bias, spec.eps, spec.unit_offset)


def _per_head(s: QKNormSpec) -> tuple[nn.Module, nn.Module]:
    return norm_module(s.norm, s.head_dim), norm_module(s.norm, s.head_dim)


def _untied(s: QKNormSpec) -> tuple[nn.Module, nn.Module]:  # one weight per (head, dim)
    n = s.norm
    return (
        HeadwiseNorm(n.type, s.n_heads, s.head_dim, n.scale, n.bias, n.eps),
        HeadwiseNorm(n.type, s.n_kv_heads, s.head_dim, n.scale, n.bias, n.eps),
    )


def _full(s: QKNormSpec) -> tuple[nn.Module, nn.Module]:
    q = norm_module(s.norm, s.n_heads * s.head_dim)
    return FlatNorm(q), FlatNorm(norm_module(s.norm, s.n_kv_heads * s.head_dim))


def _l2(s: QKNormSpec) -> tuple[nn.Module, nn.Module]:  # x / rms(x) per head (Llama 4)
    return norm_module(BARE_RMS, s.head_dim), norm_module(BARE_RMS, s.head_dim)


_QK_NORM_SHAPES = {QKNorm.PER_HEAD: _per_head, QKNorm.PER_HEAD_UNTIED: _untied}
_QK_NORM_SHAPES |= {QKNorm.FULL: _full, QKNorm.L2: _l2}


@builds(QKNormSpec)
def qk_norm_module(spec: QKNormSpec, ctx: object = None) -> QKNormPair:
    """Queries' and keys' norms (keys' absent where the layer reuses another's keys)."""
    q, k = _QK_NORM_SHAPES[spec.kind](spec)
    return QKNormPair(q, k if spec.n_kv_heads else None)
