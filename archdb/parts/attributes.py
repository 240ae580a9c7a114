"""Plain attributes of the builder's modules, set past nn.Module.__setattr__.

nn.Module.__setattr__ runs Python-level type checks (is it a parameter, a module, a
buffer?) on every attribute; a full-size build of the catalogue sets ~400k attributes that
are none of these (sizes, flags, eps), a tenth of its time. ``set_plain`` writes them
where that path would: the instance's dict.
"""

from __future__ import annotations

import torch
from torch import nn


def set_plain(module: nn.Module, **values: object) -> None:
    """``module.name = value`` for each value that is neither a tensor nor a module, on a
    module under construction (no parameter, buffer or submodule of that name yet)."""
    assert not any(isinstance(v, (torch.Tensor, nn.Module)) for v in values.values())
    vars(module).update(values)
