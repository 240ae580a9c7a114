"""What a token-mixer plugin declares (see ``archdb.mixers``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True)
class ToyFrame:
    """What the toy rule knows when a plugin shrinks its sizes (archdb.builder.shrink)."""

    d_model: int  # the card's
    toy_d_model: int
    rule: Any  # the ToyRule (mha_heads, kv_heads_max, head_dim_min, ...)
    toy_heads: int | None  # the toy attention's heads (None: attention-free)
    toy_head_dim: int | None  # and their width


@dataclass(frozen=True)
class MixerPlugin:
    """One non-attention token mixer, declared in one module.

    - ``kind``: its layer-pattern entry (``LayerKind`` gets the member ``kind`` upper-cased,
      '-' as '_'); its sizes sit in ``architecture.mixers.<field>``, ``field`` the same
      name with '_' for '-'.
    - ``after``: the layer-pattern entry its ``LayerKind`` member follows (its ``Mixers``
      field follows the fields of the entries before it): card dumps list fields in schema
      order and the measurement cache is keyed by them, so a plugin states its place.
    - ``sizes``: the pydantic sub-model of those sizes (a ``Strict`` model with an ``mlp``
      flag: whether a layer of this kind also has the card's MLP); its own validators check
      what the sizes alone decide; ``check(sizes, architecture)`` what needs the card.
    - ``plan(sizes, reader)``: the plan spec of one layer's mixer, with ``params()``,
      ``flops(tally)``, ``cache_entries(context)`` and ``module(ctx)`` (its torch module,
      torch imported inside); ``reader.d`` is d_model, ``reader.a`` the architecture.
    - ``toy(sizes, architecture, frame)``: the toy's sizes, the fields that change.
    - ``widest(sizes, d_model)``: its widest projection, for the schema's bound on the
      parameters a card's sizes imply.
    - ``skip_multiplier(sizes)``: the factor on the residual stream where its output joins
      (None: 1); ``residual_factors``: whether the card-wide attention and MLP residual
      factors are in play beside it (MiniMax-01's), so that a build states their defaults.
    """

    kind: str
    after: str
    sizes: type[BaseModel]
    description: str  # of the architecture.mixers field
    plan: Callable[[Any, Any], Any]
    toy: Callable[[Any, Any, ToyFrame], dict]
    widest: Callable[[Any, int], int]
    check: Callable[[Any, Any], None] | None = None
    skip_multiplier: Callable[[Any], float | None] | None = None
    residual_factors: bool = False

    @property
    def field(self) -> str:
        return self.kind.replace("-", "_")

    @property
    def member(self) -> str:
        return self.field.upper()

    def sizes_of(self, arch: Any) -> Any:
        """The card's sizes of this mixer (None: the card has none)."""
        return None if arch.mixers is None else getattr(arch.mixers, self.field)

    def has_mlp(self, arch: Any) -> bool:
        """Whether a layer of this kind has the card's MLP (or MoE) after the mixer."""
        sizes = self.sizes_of(arch)
        return sizes is not None and sizes.mlp
