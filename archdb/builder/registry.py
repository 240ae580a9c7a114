"""Which torch module each plan spec becomes: the builder's registry.

The plan holds specs (sizes, parameters, FLOPs, cache) and never imports the builder.
A part's spec is declared whole with its module (``archdb.parts``, ``archdb.mixers``) and
answers ``module(ctx)``; the specs only the builder knows how to make (the model's
embeddings and Gemma 3n's streams) register their factories here (``@builds(SpecType)``),
and ``module_of(spec, ctx)`` looks a factory up by the spec's type first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


@functools.singledispatch
def module_of(spec: Any, ctx: Any = None) -> Any:
    """The torch module of one plan spec; ``ctx`` is the build's shared state
    (``archdb.builder.model.BuildContext``: rotary tables, the KV store)."""
    own = getattr(spec, "module", None)
    if own is None:
        raise TypeError(f"the builder has no module for a {type(spec).__name__}")
    return own(ctx)


def builds(spec_type: type) -> Callable[[Callable], Callable]:
    """Register the decorated ``factory(spec, ctx)`` as the maker of ``spec_type``'s module."""
    return module_of.register(spec_type)
