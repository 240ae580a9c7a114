"""Files archdb reads and writes: hostile input bounded, writes atomic, links never
followed, and caches only in a folder that is the user's own.

This module is the one place where archdb opens a file to write it. Every other module
(reports, site, catalogue writer, caches, measurements) writes through these:

- ``write_atomic``: a fresh temporary file beside the target, created with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name (it can be neither an existing
  file nor a planted link), removed on every failure, renamed over the target: a reader
  sees the old bytes or the new ones, and a link at the target is replaced, never
  written through.
- ``write_new``: a file that must not exist yet, created the same exclusive way (the
  site's staging folder, which archdb has just made).
- ``write_output``: a single output file a user named (``export -o``): a device such as
  /dev/stdout is written as asked, anything else replaced by ``write_atomic``.
- ``real_dirs``: make the folders of an output path inside a root, replacing any link
  found among them, so a write under the root stays under it.

And reads:

- ``read_bounded``: at most a limit of bytes, never blocking on a pipe.
- ``read_regular``: the same, of a regular file only (``follow=False``: not through a
  link either, for files archdb itself wrote).
- ``private_dir``: the cache folder, made owner-only; one that another user owns, or that
  others may write to, is not used (like ssh with its keys): a cache can make archdb
  faster, never different.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Callable
from pathlib import Path

_WRITE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMPORARY_TRIES = 100  # random names tried before giving up (a clash is 1 in 2^64)


def read_bounded(
    path: Path | str, limit: int, *, regular: bool = False, follow: bool = True
) -> bytes:
    """At most ``limit + 1`` bytes of a file: enough to tell that it is too large, so that
    /dev/zero or a runaway file cannot exhaust memory. A named pipe or socket is refused
    (OSError) rather than waited on: it is opened without blocking and looked at before a
    byte is read. ``regular``: anything but a regular file (a device, a folder) is refused
    too; ``follow=False``: a link as well (ELOOP), for files archdb wrote itself."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    with open(fd, "rb", closefd=True) as file:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise OSError(errno.EINVAL, "a pipe or socket, not a file", str(path))
        if regular and not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return file.read(limit + 1)


def read_regular(path: Path | str, limit: int, *, follow: bool = True) -> bytes:
    """``read_bounded`` of a regular file only: a device, a pipe, a folder or a link to one
    (say, to /dev/zero) is refused with OSError before a byte is read. ``follow=False``
    refuses a link as well: for files archdb wrote itself, which are never links."""
    return read_bounded(path, limit, regular=True, follow=follow)


def _create_temporary(target: Path, mode: int) -> tuple[int, Path]:
    """A new file beside ``target`` under a random name, made exclusively: never an
    existing file, never through a link planted at that name. An error names ``target``
    (the file the user asked for), not the temporary name."""
    for _ in range(_TEMPORARY_TRIES):
        path = target.parent / f".{target.name}.{os.urandom(8).hex()}.tmp"
        try:
            return os.open(path, _WRITE_NEW, mode), path
        except FileExistsError:
            continue
        except OSError as exc:  # no such folder, no permission, a full disk
            raise OSError(exc.errno, exc.strerror, str(target)) from None
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(target))


def write_atomic(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    durable: bool = False,
    private: bool = False,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Replace ``path`` with ``data`` atomically (see the module's first item).

    The file gets ``mode`` if given, else the usual mode of a new file (0666 less the
    umask), or 0600 if ``private``; ``durable`` syncs it to disk before the rename;
    ``before_replace`` may raise to abandon the write (the catalogue writer checks that
    nobody wrote the file meanwhile). The temporary file is removed on any failure.
    """
    fd, tmp = _create_temporary(path, 0o600 if private else 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_new(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``; FileExistsError if anything (a link too) is there.
    A partly written file is removed on failure."""
    fd = os.open(path, _WRITE_NEW, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def write_output(path: Path, data: bytes) -> None:
    """Write a single output file a user named: a character device or a pipe the path
    leads to (/dev/stdout, /dev/null, a FIFO a reader waits on) is written as asked; a
    regular file, or a link, is replaced atomically, so a link is never written through."""
    if is_stream(path):
        with open(path, "wb") as stream:
            stream.write(data)
        return
    write_atomic(path, data)


def is_stream(path: Path) -> bool:
    """Whether ``path`` leads (through links) to a character device or a pipe."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def real_dirs(root: Path, relative: Path) -> Path:
    """``root / relative``'s folders made under ``root``, each a real folder: a link in
    their place is removed (never followed) and a folder made instead; a file in their
    place is not archdb's to remove (OSError naming it). Returns the path."""
    folder = root
    for part in relative.parent.parts:
        folder = folder / part
        if folder.is_symlink():
            folder.unlink()
        elif folder.exists() and not folder.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "a file where a folder belongs", str(folder))
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
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # never sent raw to a terminal


def private_dir(path: Path) -> Path | None:
    """``path`` made (owner-only) if missing, and returned if it is the user's own: a
    folder, owned by this user, that no one else may write to. Otherwise None, after a
    one-line warning on stderr (once per folder)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(path)
    except OSError as exc:
        return refuse_cache(path, f"cannot be made ({exc.strerror or exc})")
    if not stat.S_ISDIR(info.st_mode):
        return refuse_cache(path, "is not a folder")
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return refuse_cache(path, "belongs to another user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return refuse_cache(path, "may be written by other users (chmod go-w to use it)")
    return path


def refuse_cache(path: Path, why: str) -> None:
    """Warn once, on one line, that the cache at ``path`` is not used, and why."""
    if path not in _warned:
        _warned.add(path)
        shown = _CONTROL.sub(lambda m: repr(m.group())[1:-1], f"{path}: it {why}")
        print(f"archdb: warning: not using the cache {shown}", file=sys.stderr)
    return None
