"""A catalogue problem located for a human, and the limits the parsers share.

A leaf: the loader (``archdb.catalogue``) and the locating pass (``archdb.locate``) both
read it, so neither imports the other for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ALIAS_EXPANSION_LIMIT = 10_000  # nodes aliases may re-use, in total, per file


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the catalogue, located for a human."""

    file: str
    line: int  # 1-based
    column: int  # 1-based
    card_id: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        """One line, with any control character in it escaped (``\\x1b``): a hostile key
        or id must not reach a terminal raw."""
        where = " ".join(x for x in (self.card_id, self.field) if x)
        prefix = f"{self.file}:{self.line}:{self.column}: "
        return printable(prefix + (f"{where}: " if where else "") + self.message)


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """Text with control characters (and bidirectional overrides) written as escapes."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)
