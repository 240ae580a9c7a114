"""Norm kinds (``norm.type``): the vocabulary and what each kind computes, in one place.

A kind is a member of ``NormType`` and its ``NormRule`` in ``NORMS``: the tensor function,
its FLOPs per element and its default epsilon. The torch module is
``archdb.parts.norms``'s ``Norm`` running that function; its specs place norms in
blocks. Adding a kind is one member and one entry here (an import-time check keeps the two
in step); ``archdb schema`` then regenerates the catalogue header that lists the kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from archdb import conventions as cv

LN_EPS = 1e-5
RMS_EPS = 1e-6


class NormType(StrEnum):
    LAYERNORM = "layernorm"
    RMSNORM = "rmsnorm"


def _layer_norm(x, width: int, weight, bias, eps: float | None = None):
    import torch.nn.functional as F

    return F.layer_norm(x, (width,), weight, bias, LN_EPS if eps is None else eps)


def _rms_norm(x, width: int, weight, bias, eps: float | None = None):
    import torch.nn.functional as F

    y = F.rms_norm(x, (width,), weight, RMS_EPS if eps is None else eps)
    return y if bias is None else y + bias


@dataclass(frozen=True)
class NormRule:
    """What a norm kind computes: ``forward(x, width, weight, bias, eps)`` and its cost
    (``eps`` None: the kind's ``default_eps``)."""

    name: str  # shown in module trees
    flops_per_element: int  # before the affine terms
    forward: Callable
    default_eps: float
    scale_flops: int = cv.AFFINE  # per element, when the norm has a scale
    bias_flops: int = cv.AFFINE  # per element, when it has a bias
    scale_init: float = 1.0  # the scale's initial value


NORMS: dict[NormType, NormRule] = {
    NormType.LAYERNORM: NormRule("LayerNorm", cv.LAYERNORM, _layer_norm, LN_EPS),
    NormType.RMSNORM: NormRule("RMSNorm", cv.RMSNORM, _rms_norm, RMS_EPS),
}
if set(NORMS) != set(NormType):
    raise RuntimeError("every norm kind needs its rule in archdb.choices.norms")


def default_eps_text() -> str:
    """Each kind's default epsilon, as the schema states it: '1e-5 (layernorm) or ...'."""
    parts = [f"{_short(rule.default_eps)} ({kind.value})" for kind, rule in NORMS.items()]
    return ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]


def _short(value: float) -> str:
    return f"{value:g}".replace("e-0", "e-")
