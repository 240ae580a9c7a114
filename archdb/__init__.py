"""archdb: an architecture survey database and model-card analysis tool for LMs.

The Python API (``archdb.api``): ``build``, ``params``, ``flops``, ``cache_bytes``. They
load on first use, so ``import archdb`` stays cheap for the command line.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["build", "cache_bytes", "flops", "params"]


def __getattr__(name: str):
    if name in __all__:
        from archdb import api

        return getattr(api, name)
    raise AttributeError(f"module 'archdb' has no attribute {name!r}")
