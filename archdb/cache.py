"""The caches: validated catalogues and derived figures, kept so commands start faster.

A cache can make archdb faster, never different. Four rules keep it so:

- **Its folder is the user's own.** The cache lives in the user's cache folder, made
  owner-only; a folder that another user owns, or that others may write to, is not used
  at all, with a one-line warning (``files.private_dir``), the way ssh treats its keys.
- **Every record is sealed.** Each file is written with an HMAC-SHA256 of its name and
  bytes under a random key made on first use (``key`` in the folder: 32 bytes, created
  exclusively, 0600, never through a link). A record planted there, copied from another
  folder or machine, renamed, or edited, fails the seal and is recomputed. (Whoever can
  read the key could already edit the user's catalogue.)
- **Every record is checked on read** for its type, its bounds and the key it claims
  (the catalogue bytes' hash, the architecture hash), and parsed as JSON, never pickle:
  a record that fails is discarded and the answer computed again.
- **A cache that cannot be read or written only costs speed.**

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
import hmac
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable
from contextlib import suppress
from functools import cache as memoize
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict

from archdb import files, schema

if TYPE_CHECKING:
    from archdb.schema import Card

FORMAT = "archdb-cache-2"
MAX_ENTRY_BYTES = 512 * 2**20  # an entry is a few times its catalogue; larger is not ours


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(os.environ.get("ARCHDB_CACHE_DIR") or Path(base) / "archdb")


def enabled() -> bool:
    return not os.environ.get("ARCHDB_NO_CACHE")


def usable_dir() -> Path | None:
    """The cache folder when caching is on and the folder is the user's own
    (``files.private_dir``: owner-only, made so if missing); None otherwise, and nothing is
    read from or written to it."""
    return files.private_dir(cache_dir()) if enabled() else None


# --- sealed records ----------------------------------------------------------------------

KEY_NAME = "key"
KEY_BYTES = 32
SEAL_FORMAT = b"archdb-sealed-1"
_SEAL_LINE = re.compile(rb"archdb-sealed-1 ([0-9a-f]{64})\n")
_keys: dict[Path, bytes] = {}


def _secret(folder: Path) -> bytes | None:
    """The folder's sealing key, made on first use; None (with a warning) when the key
    file is not the user's own: a regular file, not a link, owned by the user, 0600."""
    if folder in _keys:
        return _keys[folder]
    path = folder / KEY_NAME
    try:
        key = _read_key(path)
    except FileNotFoundError:
        key = _make_key(folder, path)
    except OSError as exc:
        return files.refuse_cache(folder, f"has a key file that is not the user's own ({exc})")
    if key is None:
        return None
    _keys[folder] = key
    return key


def _read_key(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb", closefd=True) as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError("not a regular file")
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            raise OSError("owned by another user")
        if info.st_mode & 0o077:
            raise OSError("readable or writable by others")
        key = file.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise OSError(f"not {KEY_BYTES} bytes")
    return key


def _make_key(folder: Path, path: Path) -> bytes | None:
    """A new random key, written whole under a temporary name and linked into place: a
    second process that makes one at the same time uses the first one's."""
    try:
        staged = folder / f".{KEY_NAME}.{os.urandom(8).hex()}"
        files.write_new(staged, os.urandom(KEY_BYTES))
        try:
            os.chmod(staged, 0o600)
            os.link(staged, path)
        except FileExistsError:
            pass  # made by another process meanwhile: use theirs
        finally:
            staged.unlink(missing_ok=True)
        return _read_key(path)
    except OSError as exc:
        return files.refuse_cache(folder, f"cannot hold a key file ({exc.strerror or exc})")


def _mac(key: bytes, name: str, payload: bytes) -> bytes:
    return hmac.new(key, name.encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode()


def read_sealed(name: str, limit: int) -> bytes | None:
    """The payload of the record ``name`` (a path inside the cache folder) if archdb
    sealed it there under that name; None if caching is off, the folder or its key is not
    the user's own, or the record is missing, too large, a link, or fails the seal."""
    folder = usable_dir()
    key = None if folder is None else _secret(folder)
    if key is None:
        return None
    try:
        blob = files.read_regular(folder / name, limit + 128, follow=False)
    except OSError:
        return None
    head = _SEAL_LINE.match(blob)
    if head is None or len(blob) > limit + head.end():
        return None
    payload = blob[head.end() :]
    if not hmac.compare_digest(head.group(1), _mac(key, name, payload)):
        return None
    return payload


def write_sealed(name: str, payload: bytes) -> None:
    """Store ``payload`` as the record ``name``, sealed, atomically and owner-only; a cache
    that cannot be written only costs speed."""
    folder = usable_dir()
    key = None if folder is None else _secret(folder)
    if key is None:
        return
    with suppress(OSError):
        target = folder / name
        if target.parent != folder and files.private_dir(target.parent) is None:
            return
        sealed = SEAL_FORMAT + b" " + _mac(key, name, payload) + b"\n" + payload
        files.write_atomic(target, sealed, private=True)


def sealed(name: str, payload: bytes) -> bytes:
    """The bytes ``write_sealed`` stores for this record in the current cache folder (for
    tests that must tell a planted record from one archdb wrote)."""
    folder = usable_dir()
    key = None if folder is None else _secret(folder)
    if key is None:
        raise OSError("no usable cache folder")
    return SEAL_FORMAT + b" " + _mac(key, name, payload) + b"\n" + payload


@memoize
def schema_fingerprint() -> str:
    """What judged the cards: the cache format, the schema's source, pydantic's version."""
    digest = hashlib.sha256(FORMAT.encode())
    digest.update(Path(schema.__file__).read_bytes())
    digest.update(pydantic.VERSION.encode())
    return digest.hexdigest()


def content_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def entry_name(raw: bytes) -> str:
    """The validation record's name for these catalogue bytes (and this schema)."""
    name = hashlib.sha256(f"{schema_fingerprint()}:{content_hash(raw)}".encode()).hexdigest()
    return f"{name}.json"


def entry_path(raw: bytes) -> Path:
    return cache_dir() / entry_name(raw)


class _Entry(BaseModel):
    """One cached catalogue, as stored; validating it re-validates every card."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    format: Literal["archdb-cache-2"]
    catalogue_sha256: str
    schema_fingerprint: str
    cards: list[schema.Card]


HASH = re.compile(r"[0-9a-f]{64}")  # the form of every key a record claims


def read(raw: bytes) -> list[Card] | None:
    """The cards validated from exactly these bytes, or None (and the caller loads)."""
    blob = read_sealed(entry_name(raw), MAX_ENTRY_BYTES)
    if blob is None:
        return None
    try:
        entry = _Entry.model_validate_json(blob)
    except (ValueError, RecursionError):  # ValidationError is a ValueError
        return None
    if entry.catalogue_sha256 != content_hash(raw):
        return None  # copied from another catalogue's entry
    if entry.schema_fingerprint != schema_fingerprint():
        return None
    return list(entry.cards)


def write(raw: bytes, cards: list[Any]) -> None:
    """Store validated cards (sealed, atomically); failure to write only costs speed."""
    if usable_dir() is None:
        return
    entry = _Entry(
        format=FORMAT,
        catalogue_sha256=content_hash(raw),
        schema_fingerprint=schema_fingerprint(),
        cards=cards,
    )
    write_sealed(entry_name(raw), entry.model_dump_json().encode())


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
    root = Path(schema.__file__).parent
    digest = hashlib.sha256(FIGURES_FORMAT.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


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
