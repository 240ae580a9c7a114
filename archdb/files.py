"""Reading files that may be hostile: bounded in size, never blocking on a pipe."""

from __future__ import annotations

import errno
import os
import stat
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
