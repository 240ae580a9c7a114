"""Files the commands write: never the catalogue, never a file the command did not create.

- ``check_new_file``: a single output file (``export -o``, ``schema -o``) may not be the
  catalogue, by any path to it (relative, symlink, hard link), and may not replace an
  existing regular file unless the caller says ``force``. Devices (``/dev/stdout``) are
  written as asked.
- ``OwnedDirectory``: a directory of generated files (``report -o DIR``) holds a manifest
  listing what archdb wrote there. A directory without one is archdb's only when it is
  empty; a later run replaces the files it listed and removes those it no longer makes,
  and leaves every other file alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from archdb import files
from archdb.errors import UsageError

MANIFEST = ".archdb-report-manifest"
_MANIFEST_HEADER = "# Files written by `archdb report`; it removes only files listed here.\n"


class OutputError(UsageError):
    """A write the command refuses to make; the command line should change (exit 2)."""


def same_file(a: Path, b: Path) -> bool:
    """True if ``a`` and ``b`` name one file (through symlinks, relative paths, hard links)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they would resolve
        return a.resolve() == b.resolve()


def check_new_file(path: Path, *, force: bool, protected: Iterable[Path] = ()) -> None:
    """Refuse to write ``path`` over a protected file, or over any file without ``force``."""
    for keep in protected:
        if same_file(path, keep):
            raise OutputError(f"{path} is the catalogue ({keep}): refusing to overwrite it")
    if files.is_stream(path):
        return  # /dev/stdout, /dev/null, a FIFO: written as asked
    if path.is_dir():
        raise OutputError(f"{path} is a directory: give a file name")
    if (path.is_file() or path.is_symlink()) and not force:
        raise OutputError(f"{path} exists: give --force to replace it")


def _safe_entry(line: str) -> PurePosixPath | None:
    """A manifest line as a relative path inside the directory, or None (ignored)."""
    entry = PurePosixPath(line.strip())
    if not line.strip() or line.startswith("#") or entry.is_absolute() or ".." in entry.parts:
        return None
    return entry


def manifest_bytes(relative_paths: Iterable[str]) -> bytes:
    """The manifest listing these files (POSIX paths relative to the directory)."""
    entries = sorted(PurePosixPath(p) for p in relative_paths)
    return (_MANIFEST_HEADER + "".join(f"{e}\n" for e in entries)).encode("utf-8")


class OwnedDirectory:
    """A directory whose generated files are listed in its manifest."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest = root / MANIFEST

    def listed(self) -> list[PurePosixPath]:
        """The files the last run wrote (empty when there is no manifest)."""
        if not self.manifest.is_file():
            return []
        lines = self.manifest.read_text(encoding="utf-8", errors="replace").splitlines()
        return [e for e in map(_safe_entry, lines) if e is not None]

    def claim(self) -> None:
        """Check the directory may be written: absent, empty, or holding our manifest."""
        if self.root.exists() and not self.root.is_dir():
            raise OutputError(f"{self.root} is not a directory")
        if self.manifest.is_symlink() or (self.manifest.exists() and not self.manifest.is_file()):
            raise OutputError(f"{self.manifest} is not a plain file: refusing to use it")
        if self.root.is_dir() and not self.manifest.exists() and any(self.root.iterdir()):
            raise OutputError(
                f"{self.root} is not empty and has no {MANIFEST}: archdb writes reports only "
                "into an empty directory or one it wrote before; choose another directory"
            )
        for entry in self.listed():  # ours to replace: a planted link is not followed
            if (self.root / entry).is_symlink():
                (self.root / entry).unlink()

    def commit(self, written: Iterable[Path]) -> list[Path]:
        """Record ``written`` in the manifest; remove files listed before and not now.

        Returns the stale files removed. Only regular files (or links) inside the directory
        that the previous manifest listed are ever removed.
        """
        now = sorted(PurePosixPath(p.relative_to(self.root).as_posix()) for p in written)
        removed = []
        for entry in sorted(set(self.listed()) - set(now) - {PurePosixPath(MANIFEST)}):
            path = self.root / entry
            if not files.inside_without_links(self.root, Path(entry)):
                continue  # a folder on the way is a link: the file is not in the directory
            if path.is_symlink() or path.is_file():
                path.unlink()
                removed.append(path)
        files.write_atomic(self.manifest, manifest_bytes(map(str, now)))
        return removed

    def write(self, relative: str, content: bytes) -> Path:
        """Write one generated file under the directory: its folders real ones (a link in
        their place is replaced), the file replaced atomically (a link there too)."""
        path = files.real_dirs(self.root, Path(relative))
        files.write_atomic(path, content)
        return path
