"""archdb: an architecture survey database and model-card analysis tool for LMs.

``import archdb`` stays light: each function imports what it needs when called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archdb.catalogue import Catalogue

__version__ = "0.1.0"
__all__ = ["load"]


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
