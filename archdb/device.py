"""The device modules are being built on (``build_model`` builds inside a torch.device).

On the meta device a tensor holds no values: a table or an initial value computed there
is its shape alone, and computing it runs each op through torch's Python decompositions
(tens of milliseconds a table, and the first one imports torch._dynamo, seconds). Modules
allocate such tensors by shape when ``on_meta()``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

import torch
from torch import nn

# set by build_model around a meta build: a flag read per linear layer, where
# on_meta()'s walk of torch's mode stack would cost more than it saves
_META_BUILD: ContextVar[bool] = ContextVar("archdb_meta_build", default=False)


def on_meta() -> bool:
    """Whether modules are being built on the meta device (``build_model(device="meta")``)."""
    return torch.get_default_device().type == "meta"


@contextlib.contextmanager
def meta_build() -> Iterator[None]:
    """Marks the modules built inside as a meta build's (``build_model`` enters it)."""
    token = _META_BUILD.set(True)
    try:
        yield
    finally:
        _META_BUILD.reset(token)


class _ShapesOnlyLinear(nn.Linear):
    """nn.Linear's own constructor, its initialisation left out: a meta weight has no
    values to draw, yet the initializer's fan-in arithmetic and its dispatch through
    torch's modes cost a fifth of a full-size build (~67k linear layers in the catalogue)."""

    def reset_parameters(self) -> None:
        pass


def linear(in_features: int, out_features: int, bias: bool = True) -> nn.Linear:
    """``nn.Linear(in_features, out_features, bias)``; in a meta build, the same layer
    (class, names, shapes, dtypes) made without the initializer it would skip anyway."""
    if not _META_BUILD.get():
        return nn.Linear(in_features, out_features, bias)  # real values: torch's init, RNG order
    layer = _ShapesOnlyLinear(in_features, out_features, bias)
    object.__setattr__(layer, "__class__", nn.Linear)  # a plain nn.Linear from here on
    return layer
