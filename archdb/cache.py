"""The caches: validated catalogues and derived figures, kept so commands start faster.

Every record is sealed in the user's own cache folder (``archdb.seal``) and checked on
read for its type, its bounds and the key it claims (the catalogue bytes' hash, the
architecture hash), parsed as JSON, never pickle: a record that fails is discarded and
the answer computed again. A cache can make archdb faster, never different.

Validation cache: parsing and validating the shipped catalogue costs about 0.1 s, a third
of a query command's budget. A file that validated before is stored as plain JSON: the
cards' ``model_dump``, the SHA-256 of the exact catalogue bytes they came from and a
fingerprint of the code that judged them (the schema's source and the pydantic version).
The entry's file name is made of both hashes, and the entry repeats them inside; its
cards are validated again by the schema on read (a few milliseconds). ``archdb validate``
never reads the cache (``check_catalogue(use_cache=False)``). Set ARCHDB_NO_CACHE=1 to
bypass every cache.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from functools import cache as memoize
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict

from archdb import schema
from archdb.seal import (
    HASH,
    cache_dir,
    read_sealed,
    source_fingerprint,
    usable_dir,
    write_sealed,
)

if TYPE_CHECKING:
    from archdb.schema import Card

FORMAT = "archdb-cache-2"
MAX_ENTRY_BYTES = 512 * 2**20  # an entry is a few times its catalogue; larger is not ours


@memoize
def schema_fingerprint() -> str:
    """What judged the cards: the cache format, the schema's source, pydantic's version."""
    digest = hashlib.sha256(FORMAT.encode())
    digest.update(Path(schema.__file__).read_bytes())
    digest.update(pydantic.VERSION.encode())
    return digest.hexdigest()


def entry_name(digest: str) -> str:
    """The validation record's name for the catalogue bytes of this SHA-256 digest
    (``seal.content_hash``: hashing a large catalogue costs, so callers hash it once) and
    this schema."""
    name = hashlib.sha256(f"{schema_fingerprint()}:{digest}".encode()).hexdigest()
    return f"{name}.json"


def entry_path(digest: str) -> Path:
    return cache_dir() / entry_name(digest)


class _Entry(BaseModel):
    """One cached catalogue, as stored; validating it re-validates every card."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    format: Literal["archdb-cache-2"]
    catalogue_sha256: str
    schema_fingerprint: str
    cards: list[schema.Card]


def read(digest: str) -> list[Card] | None:
    """The cards validated from exactly the bytes of this digest, or None (and the caller
    loads)."""
    blob = read_sealed(entry_name(digest), MAX_ENTRY_BYTES)
    if blob is None:
        return None
    try:
        entry = _Entry.model_validate_json(blob)
    except (ValueError, RecursionError):  # ValidationError is a ValueError
        return None
    if entry.catalogue_sha256 != digest:
        return None  # copied from another catalogue's entry
    if entry.schema_fingerprint != schema_fingerprint():
        return None
    return list(entry.cards)


def write(digest: str, cards: list[Any]) -> None:
    """Store validated cards (sealed, atomically); failure to write only costs speed."""
    if usable_dir() is None:
        return
    entry = _Entry(
        format=FORMAT,
        catalogue_sha256=digest,
        schema_fingerprint=schema_fingerprint(),
        cards=cards,
    )
    write_sealed(entry_name(digest), entry.model_dump_json().encode())


# --- derived figures ---------------------------------------------------------------------
# The analytic counts of a card (exact parameters, FLOPs, KV cache: about half a
# millisecond a card) depend on its architecture and on archdb's code only. They are kept
# by architecture hash in one JSON file named by a fingerprint of every archdb source file,
# so an edited formula never reads old figures. Values are checked to be numbers (or null)
# under the expected keys; anything else and the file is ignored.

FIGURES_FORMAT = "archdb-figures-1"
MAX_FIGURE_ENTRIES = 20_000  # architectures kept; a catalogue has a few hundred


@memoize
def code_fingerprint() -> str:
    """What computes the figures: the format and every source file of archdb."""
    return hashlib.sha256(f"{FIGURES_FORMAT}:{source_fingerprint()}".encode()).hexdigest()


def figures_key(model: BaseModel) -> str:
    return hashlib.sha256(model.model_dump_json().encode()).hexdigest()


def keyed_name(kind: str) -> str:
    """The record name of the store ``kind`` for this code."""
    return f"{kind}-{code_fingerprint()}.json"


def _keyed_path(kind: str) -> Path:
    return cache_dir() / keyed_name(kind)


def _read_keyed(kind: str, valid: Callable[[object], bool]) -> dict[str, Any]:
    """A store of ``kind`` (entries by content hash, each passing ``valid``), or {}: a
    store with one entry that fails (a key not a hash, a value out of bounds) is not
    used."""
    blob = read_sealed(keyed_name(kind), MAX_ENTRY_BYTES)
    if blob is None:
        return {}
    try:
        data = json.loads(blob)
    except (ValueError, RecursionError):  # a 5,000-digit number is a ValueError too
        return {}
    if not isinstance(data, dict) or data.get("format") != FIGURES_FORMAT:
        return {}
    entries = data.get(kind)
    if not isinstance(entries, dict) or len(entries) > MAX_FIGURE_ENTRIES:
        return {}
    if not all(HASH.fullmatch(k) and valid(v) for k, v in entries.items()):
        return {}
    return entries


def looked_up(
    read: Callable[[], dict[str, Any]],
    write: Callable[[dict[str, Any]], None],
    keyed: Iterable[tuple[str, Any]],
    make: Callable[[Any], Any],
) -> list[Any]:
    """For each (key, item), the store's entry at key, or ``make(item)`` stored there: the
    store is read once and written once at most, whatever the number of items."""
    stored = read()
    grown = False
    found = []
    for key, item in keyed:
        if (entry := stored.get(key)) is None:
            entry = stored[key] = make(item)
            grown = True
        found.append(entry)
    if grown:
        write(stored)
    return found


def _write_keyed(kind: str, entries: dict[str, Any]) -> None:
    """Store entries (the newest MAX_FIGURE_ENTRIES), sealed; failure only costs speed."""
    if usable_dir() is None:
        return
    kept = dict(list(entries.items())[-MAX_FIGURE_ENTRIES:])
    text = json.dumps({"format": FIGURES_FORMAT, kind: kept})
    write_sealed(keyed_name(kind), text.encode())


def read_figures(keys: frozenset[str]) -> dict[str, dict[str, Any]]:
    """Stored figures by architecture hash (each with exactly ``keys``), or {}."""
    return _read_keyed("figures", lambda value: _figures_ok(value, keys))


def _figures_ok(value: object, keys: frozenset[str]) -> bool:
    return (
        isinstance(value, dict)
        and value.keys() == keys
        and all(v is None or _bounded_number(v) for v in value.values())
    )


MAX_FIGURE = 1e30  # no count, FLOP figure or byte size of a card comes near this


def _bounded_number(value: object) -> bool:
    """A finite int or float of sane size (a 400-digit int is no figure of ours)."""
    if type(value) is int:
        return -MAX_FIGURE < value < MAX_FIGURE
    return type(value) is float and math.isfinite(value) and abs(value) < MAX_FIGURE


def write_figures(entries: dict[str, dict[str, Any]]) -> None:
    _write_keyed("figures", entries)


# A card's fidelity level (archdb.fidelity) depends on the whole card (its sources route it)
# and on the code: [level, why] by card hash, in a store of its own.
FIDELITY_LEVELS = ("logit-exact", "count-exact", "not comparable")
MAX_WHY_CHARS = 2_000


def read_fidelity() -> dict[str, list[str]]:
    return _read_keyed("fidelity", _fidelity_ok)


def _fidelity_ok(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and value[0] in FIDELITY_LEVELS
        and isinstance(value[1], str)
        and len(value[1]) <= MAX_WHY_CHARS
    )


def write_fidelity(entries: dict[str, list[str]]) -> None:
    _write_keyed("fidelity", entries)


# A card's toy as the site prints it (archdb.site.data: building every card's toy on the
# meta device costs seconds per site) depends on its architecture, archdb's code and
# torch's version (the module tree folds layers by their repr): [tree or null, rule] by a
# hash of the architecture and that version, in a store of its own.
MAX_TREE_CHARS = 4 * 2**20  # a 100-layer hybrid toy prints about 10 KB


def toy_tree_key(architecture: BaseModel, torch_version: str) -> str:
    return hashlib.sha256(f"{torch_version}\0{architecture.model_dump_json()}".encode()).hexdigest()


def read_toy_trees() -> dict[str, list[str | None]]:
    return _read_keyed("toy-trees", _toy_tree_ok)


def _toy_tree_ok(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and (value[0] is None or (isinstance(value[0], str) and len(value[0]) <= MAX_TREE_CHARS))
        and isinstance(value[1], str)
        and len(value[1]) <= MAX_WHY_CHARS
    )


def write_toy_trees(entries: dict[str, list[str | None]]) -> None:
    _write_keyed("toy-trees", entries)
