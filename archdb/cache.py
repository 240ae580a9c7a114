"""A cache of validated catalogues, so that query commands skip re-validation.

Validating builds pydantic's validators and checks every card: about 0.1 s for the
shipped catalogue, a third of a query command's budget. A file that validated before is
stored as pickled cards under a key made of its bytes and the code that judged them
(the schema's source and the pydantic version), so any edit to either misses the cache.
The cache lives in the user's own cache folder, like __pycache__; a cache that cannot be
read or written is ignored, never an error. Set ARCHDB_NO_CACHE=1 to bypass it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import pydantic

from archdb import schema

_FORMAT = b"archdb-cache-1"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(os.environ.get("ARCHDB_CACHE_DIR") or Path(base) / "archdb")


def enabled() -> bool:
    return not os.environ.get("ARCHDB_NO_CACHE")


def _key(raw: bytes) -> str:
    digest = hashlib.sha256(_FORMAT)
    digest.update(Path(schema.__file__).read_bytes())
    digest.update(pydantic.VERSION.encode())
    digest.update(raw)
    return digest.hexdigest()


def read(raw: bytes) -> list[Any] | None:
    """The cards validated from exactly these bytes, or None."""
    if not enabled():
        return None
    try:
        with open(cache_dir() / f"{_key(raw)}.pickle", "rb") as file:
            cards = pickle.load(file)
    except Exception:  # missing, truncated or from another version: validate instead
        return None
    return cards if isinstance(cards, list) else None


def write(raw: bytes, cards: list[Any]) -> None:
    """Store validated cards atomically; failure to write only costs speed."""
    if not enabled():
        return
    try:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, delete=False, suffix=".tmp") as tmp:
            pickle.dump(cards, tmp, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp.name, folder / f"{_key(raw)}.pickle")
    except OSError:
        return
