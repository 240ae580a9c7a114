"""Norms: their kinds, where they sit in a block, and the QK norms (one registry each).

A norm kind is a rule (FLOPs per element and the tensor function it computes), declared
with its enum value in ``archdb.choices.norms``; the torch module is
``archdb.builder.norms.Norm`` running that function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


BARE_RMS = NormSpec(NormType.RMSNORM, scale=False, bias=False)  # x / rms(x), no parameters


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
        norm = BARE_RMS if self.kind is QKNorm.L2 else self.norm
        norm.flops(tally, self.head_dim, tally.seq_len * (self.n_heads + self.n_kv_heads))


def _per_head_params(s: QKNormSpec) -> int:
    return (1 + bool(s.n_kv_heads)) * s.norm.params(s.head_dim)


# each kind's parameters (its modules: archdb.builder.norms.qk_norm_module)
QK_NORM_PARAMS: dict[QKNorm, Callable[[QKNormSpec], int]] = {
    QKNorm.PER_HEAD: _per_head_params,
    QKNorm.PER_HEAD_UNTIED: lambda s: s.norm.params((s.n_heads + s.n_kv_heads) * s.head_dim),
    QKNorm.FULL: lambda s: s.norm.params((s.n_heads + s.n_kv_heads) * s.head_dim),
    QKNorm.L2: lambda s: 0,  # x / rms(x) per head, no parameters (Llama 4's L2Norm)
}
