"""The device modules are being built on (``build_model`` builds inside a torch.device).

On the meta device a tensor holds no values: a table or an initial value computed there
is its shape alone, and computing it runs each op through torch's Python decompositions
(tens of milliseconds a table, and the first one imports torch._dynamo, seconds). Modules
allocate such tensors by shape when ``on_meta()``.
"""

from __future__ import annotations

import torch


def on_meta() -> bool:
    """Whether modules are being built on the meta device (``build_model(device="meta")``)."""
    return torch.get_default_device().type == "meta"
