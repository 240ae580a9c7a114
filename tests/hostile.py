"""Helpers of the hostile-input tests (round two: outputs, stores, streams, the API).

Each case asserts the exit code (or the exception), the message, and that nothing outside
the command's intended output changed: ``snapshot`` records a folder as it is on disk
(links not followed: a link's target text, a file's bytes and mode), so a file written,
changed or removed through a link, or a stray temporary file, shows as a difference.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from archdb_cli.common import EXIT_INTERNAL
from archdb_cli.main import app
from typer.testing import CliRunner

Entry = tuple[Any, ...]


def snapshot(root: Path, *, skip: tuple[Path, ...] = ()) -> dict[str, Entry]:
    """Every entry under ``root``, links not followed, except those under ``skip``."""
    found: dict[str, Entry] = {}
    for folder, dirs, names in os.walk(root, followlinks=False):
        for name in dirs + names:
            path = Path(folder) / name
            if any(path == s or s in path.parents for s in skip):
                continue
            info = os.lstat(path)
            relative = path.relative_to(root).as_posix()
            if stat.S_ISLNK(info.st_mode):
                found[relative] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                found[relative] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
            elif stat.S_ISDIR(info.st_mode):
                found[relative] = ("folder", stat.S_IMODE(info.st_mode))
            else:
                found[relative] = ("other", info.st_mode)
    return found


def run(*args: str, input: str | None = None):
    """``archdb ARGS`` in this process: never an internal error, never a traceback, never
    an exception escaping the CLI's boundary."""
    result = CliRunner().invoke(app, list(args), input=input)
    assert result.exit_code != EXIT_INTERNAL, result.output
    assert "internal error" not in result.output, result.output
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result


def process(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, **kwargs: Any
) -> subprocess.CompletedProcess:
    """The installed entry point in a fresh process (the streams are the process's own):
    never exit 70, never a traceback."""
    code = "import sys; from archdb_cli.main import run; sys.argv[0] = 'archdb'; run()"
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=kwargs.pop("capture_output", "stdout" not in kwargs),
        env={**os.environ, **(env or {})},
        timeout=timeout,
        **kwargs,
    )
    stderr = result.stderr.decode("utf-8", "replace") if result.stderr else ""
    assert result.returncode != EXIT_INTERNAL, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return result
