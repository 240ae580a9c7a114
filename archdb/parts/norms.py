"""Norms: their kinds, where they sit in a block, and the QK norms (one registry each).

A norm kind is a rule (FLOPs per element and the tensor function it computes), declared
with its enum value in ``archdb.choices.norms``; the torch module is
``Norm`` (below, in ``modules()``) running that function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from archdb.choices.norms import NORMS, NormRule, NormType
from archdb.conventions import FlopClass as C
from archdb.schema import NormAffine, NormPosition, QKNorm
from archdb.tally import Tally


@dataclass(frozen=True)
class NormSpec:
    """A norm kind with its affine terms; the width is given where it is used."""

    type: NormType
    scale: bool
    bias: bool
    eps: float | None = None  # None: the kind's default_eps
    unit_offset: bool = False  # the scale is stored as w and applied as (1 + w) (Gemma)

    @classmethod
    def of(
        cls,
        kind: NormType,
        affine: NormAffine,
        eps: float | None = None,
        unit_offset: bool | None = None,
    ) -> NormSpec:
        return cls(
            kind,
            scale=affine in (NormAffine.SCALE, NormAffine.SCALE_AND_BIAS),
            bias=affine is NormAffine.SCALE_AND_BIAS,
            eps=eps,
            unit_offset=bool(unit_offset),
        )

    @property
    def rule(self) -> NormRule:
        return NORMS[self.type]

    def params(self, width: int) -> int:
        return width * (int(self.scale) + int(self.bias))

    def flops(self, tally: Tally, width: int, tokens: int | None = None) -> None:
        rule = self.rule
        per = rule.flops_per_element + rule.scale_flops * self.scale + rule.bias_flops * self.bias
        tally.add(C.NORM, (tally.seq_len if tokens is None else tokens) * width * per)
        if self.scale and self.unit_offset:  # (1 + w): one sum per scale entry and call
            tally.add(C.NORM, width)


def bare_rms(eps: float | None = None) -> NormSpec:
    """x / rms(x) without parameters, with the card's epsilon (Gemma 4's value norm)."""
    return NormSpec(NormType.RMSNORM, scale=False, bias=False, eps=eps)


# --- where a block's norms sit --------------------------------------------------------


@dataclass(frozen=True)
class NormSlots:
    """Where one sublayer's norms sit: x = after(x + branch(f(before(x)))); with
    ``normed_skip`` the skip carries before(x) in place of x (MiniMax-01)."""

    before: bool
    branch: bool
    after: bool
    normed_skip: bool = False

    @property
    def count(self) -> int:
        return int(self.before) + int(self.branch) + int(self.after)


NORM_SLOTS: dict[NormPosition, NormSlots] = {
    NormPosition.PRE: NormSlots(before=True, branch=False, after=False),
    NormPosition.POST: NormSlots(before=False, branch=False, after=True),
    NormPosition.DOUBLE: NormSlots(before=True, branch=True, after=False),
    NormPosition.POST_BRANCH: NormSlots(before=False, branch=True, after=False),
    # ResiDual: the Post-LN stream normalizes after the add; the dual stream has one
    # norm at the very end (the stack's final norm).
    NormPosition.RESIDUAL: NormSlots(before=False, branch=False, after=True),
    NormPosition.NORMED_SKIP: NormSlots(before=True, branch=False, after=False, normed_skip=True),
}


# --- QK norms ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QKNormSpec:
    """Queries' and keys' norm before their dot product (Dehghani et al. 2023)."""

    kind: QKNorm
    norm: NormSpec
    n_heads: int
    n_kv_heads: int  # 0: queries only (a layer reusing another layer's keys)
    head_dim: int

    def params(self) -> int:
        return QK_NORM_PARAMS[self.kind](self)

    def flops(self, tally: Tally) -> None:
        # every kind costs one norm per element of q and k (l2: a bare RMS norm)
        rows = tally.seq_len * (self.n_heads + self.n_kv_heads)
        self.norm.flops(tally, self.head_dim, rows)

    def module(self, ctx: Any = None) -> Any:
        return modules().qk_norm_module(self, ctx)


def _per_head_params(s: QKNormSpec) -> int:
    return (1 + bool(s.n_kv_heads)) * s.norm.params(s.head_dim)


# each kind's parameters (its modules: ``qk_norm_module`` below)
QK_NORM_PARAMS: dict[QKNorm, Callable[[QKNormSpec], int]] = {
    QKNorm.PER_HEAD: _per_head_params,
    QKNorm.PER_HEAD_UNTIED: lambda s: s.norm.params((s.n_heads + s.n_kv_heads) * s.head_dim),
    QKNorm.FULL: lambda s: s.norm.params((s.n_heads + s.n_kv_heads) * s.head_dim),
    QKNorm.L2: lambda s: 0,  # x / rms(x) per head, no parameters (Llama 4's L2Norm)
}


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    from torch import nn

    from archdb.parts.attributes import set_plain

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
        return norm_module(s.norm, s.head_dim), norm_module(s.norm, s.head_dim)

    _QK_NORM_SHAPES = {QKNorm.PER_HEAD: _per_head, QKNorm.PER_HEAD_UNTIED: _untied}
    _QK_NORM_SHAPES |= {QKNorm.FULL: _full, QKNorm.L2: _l2}

    def qk_norm_module(spec: QKNormSpec, ctx: object = None) -> QKNormPair:
        """Queries' and keys' norms (keys' absent where the layer reuses another's keys)."""
        q, k = _QK_NORM_SHAPES[spec.kind](spec)
        return QKNormPair(q, k if spec.n_kv_heads else None)

    return SimpleNamespace(
        Norm=Norm,
        make_norm=make_norm,
        HeadwiseNorm=HeadwiseNorm,
        FlatNorm=FlatNorm,
        QKNormPair=QKNormPair,
        norm_module=norm_module,
        _per_head=_per_head,
        _untied=_untied,
        _full=_full,
        _l2=_l2,
        _QK_NORM_SHAPES=_QK_NORM_SHAPES,
        qk_norm_module=qk_norm_module,
    )
