"""Sealed records in the user's cache folder: archdb's caches store their files here.

A record can make archdb faster, never different:

- **Its folder is the user's own.** The cache lives in the user's cache folder, made
  owner-only; a folder that another user owns, or that others may write to, is not used
  at all, with a one-line warning (``files.private_dir``), the way ssh treats its keys.
- **Every record is sealed.** Each file is written with an HMAC-SHA256 of its name and
  bytes under a random key made on first use (``key`` in the folder: 32 bytes, created
  exclusively, 0600, never through a link). A record planted there, copied from another
  folder or machine, renamed, or edited, fails the seal and is ignored. (Whoever can read
  the key could already edit the user's catalogue.)
- **A cache that cannot be read or written only costs speed.**

This module imports no third-party package: the query commands' snapshot reads through it
without paying for pydantic. Set ARCHDB_NO_CACHE=1 to bypass every cache.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
from contextlib import suppress
from functools import cache as memoize
from pathlib import Path

from archdb import files

HASH = re.compile(r"[0-9a-f]{64}")  # the form of every key a record claims


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


def content_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


@memoize
def source_fingerprint() -> str:
    """A hash of every source and data file of archdb and of archdb_hf beside it (a card's
    fidelity is judged through the transformers families, and import-hf through their
    config_keys.json): a record computed by this code is read only by this code (an edited
    formula, family or key table never reads old figures)."""
    digest = hashlib.sha256()
    root = Path(__file__).parent
    for package in (root, root.parent / "archdb_hf"):
        files = [p for p in package.rglob("*") if p.suffix in (".py", ".json")]
        for path in sorted(files):
            digest.update(path.relative_to(root.parent).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def prune(pattern: re.Pattern[str], keep: int) -> None:
    """Remove the records of all but the ``keep`` newest groups among the regular files
    of the cache folder whose names match ``pattern`` in full (group 1 names the group:
    the records of one snapshot go together). Other files are left alone; a file that
    cannot be removed only stays."""
    folder = usable_dir()
    if folder is None:
        return
    groups: dict[str, list[tuple[str, float]]] = {}
    with suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            found = pattern.fullmatch(entry.name)
            if found and entry.is_file(follow_symlinks=False):
                with suppress(OSError):
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                    groups.setdefault(found.group(1), []).append((entry.path, mtime))
    newest = sorted(groups, key=lambda g: max(t for _, t in groups[g]), reverse=True)
    for group in newest[keep:]:
        for path, _ in groups[group]:
            with suppress(OSError):
                os.unlink(path)
