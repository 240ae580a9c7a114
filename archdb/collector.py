"""Pausing Python's cyclic garbage collector while many lasting objects are made.

Importing modules and loading a catalogue allocate many small objects that all stay
alive: each burst of allocations triggers collections that rescan them again and again,
for nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """The collector pauses, then resumes as it was. ``freeze``: what exists by then
    lives as long as the process (a command's imports), so no later collection scans it
    again (``gc.freeze``); only the process's entry point may decide that."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_enabled:
            gc.enable()
