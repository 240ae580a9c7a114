"""Which torch module each plan spec becomes: the builder's registry.

The plan holds specs (sizes, parameters, FLOPs, cache) and never imports the builder.
Each builder module registers, beside its torch class, the factory that makes it from its
spec (``@builds(SpecType)``); ``module_of(spec, ctx)`` looks the factory up by the spec's
type. A mixer plugin's spec is declared whole with its module (``archdb.mixers``), so a
spec without a registered factory is asked for its own ``module(ctx)``.
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
