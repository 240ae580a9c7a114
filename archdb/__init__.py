"""archdb: an architecture survey database and model-card analysis tool for LMs.

The Python API: ``load`` (the catalogue) and, from ``archdb.api``, ``build``, ``params``,
``flops``, ``cache_bytes``, ``trends`` (adoption by year, family-weighted unless asked).
Each imports what it needs when called, so ``import archdb`` stays light for the command
line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archdb.catalogue import Catalogue

__version__ = "0.1.0"
__all__ = ["build", "cache_bytes", "diagram", "flops", "load", "params", "trends"]

_API = ("build", "cache_bytes", "diagram", "flops", "params", "trends")


def load(path: Path | str | None = None) -> Catalogue:
    """The validated catalogue: ``path``, else $ARCHDB_CATALOGUE, else data/models.yaml of
    the archdb checkout around the current folder, else the copy installed with archdb.
    Raises archdb.catalogue.CatalogueError listing every problem of an invalid file.

    >>> import archdb
    >>> cat = archdb.load()
    >>> len(cat) > 60, "llama-2-7b" in cat.ids()
    (True, True)
    """
    from archdb.catalogue import load_catalogue

    return load_catalogue(path)


def __getattr__(name: str):
    if name in _API:
        from archdb import api

        return getattr(api, name)
    raise AttributeError(f"module 'archdb' has no attribute {name!r}")
