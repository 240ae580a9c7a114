"""Files archdb reads and writes: hostile input bounded, writes atomic, links never
followed, and caches only in a folder that is the user's own.

- ``read_bounded``: at most a limit of bytes, never blocking on a pipe.
- ``write_atomic``: a fresh temporary file beside the target, created exclusively (it can
  be neither an existing file nor a planted link), renamed over the target: a reader sees
  the old bytes or the new ones, and a link at the target is replaced, never written
  through.
- ``real_dirs``: make the folders of an output path inside a root, replacing any link
  found among them, so a write under the root stays under it.
- ``private_dir``: the cache folder, made owner-only; one that another user owns, or that
  others may write to, is not used (like ssh with its keys): a cache can make archdb
  faster, never different.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


def read_bounded(path: Path | str, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a file: enough to tell that it is too large, so that
    /dev/zero or a runaway file cannot exhaust memory. A named pipe or socket is refused
    (OSError) rather than waited on: opening one would block until a writer came."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb", closefd=True) as file:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise OSError(errno.EINVAL, "a pipe or socket, not a file", str(path))
        os.set_blocking(fd, True)
        return file.read(limit + 1)


def read_regular(path: Path | str, limit: int) -> bytes:
    """``read_bounded`` of a regular file only: a device, a pipe or a link to one (say, to
    /dev/zero) is refused with OSError before a byte is read."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return read_bounded(path, limit)


def write_atomic(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    durable: bool = False,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Replace ``path`` with ``data`` atomically. The temporary file is made with
    ``O_EXCL`` under a fresh name in the same folder and removed on any failure;
    ``durable`` syncs it to disk first; ``before_replace`` may raise to abandon the write
    (the catalogue writer checks that nobody wrote the file meanwhile)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def real_dirs(root: Path, relative: Path) -> Path:
    """``root / relative``'s folders made under ``root``, each a real folder: a link in
    their place is removed (never followed) and a folder made instead. Returns the path."""
    folder = root
    for part in relative.parent.parts:
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            folder.unlink()
        folder.mkdir(exist_ok=True)
    return root / relative


def inside_without_links(root: Path, relative: Path) -> bool:
    """Whether ``root / relative`` is reached from ``root`` through real folders only (so
    removing it cannot touch a file outside ``root``)."""
    folder = root
    for part in relative.parent.parts:
        folder = folder / part
        if folder.is_symlink() or not folder.is_dir():
            return False
    return True


_warned: set[Path] = set()


def private_dir(path: Path) -> Path | None:
    """``path`` made (owner-only) if missing, and returned if it is the user's own: a
    folder, owned by this user, that no one else may write to. Otherwise None, after a
    one-line warning on stderr (once per folder)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(path)
    except OSError as exc:
        return _refuse(path, f"cannot be made ({exc.strerror or exc})")
    if not stat.S_ISDIR(info.st_mode):
        return _refuse(path, "is not a folder")
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return _refuse(path, "belongs to another user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return _refuse(path, "may be written by other users (chmod go-w to use it)")
    return path


def _refuse(path: Path, why: str) -> None:
    if path not in _warned:
        _warned.add(path)
        print(f"archdb: warning: not using the cache {path}: it {why}", file=sys.stderr)
    return None
