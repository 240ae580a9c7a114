"""The library's user-facing errors: one family, each error stating its exit code.

A command line turns any ``ArchdbError`` into its message (or its located ``problems``,
one a line) and ``exit_code`` in one place (``archdb_cli.common.report_error``); anything
else that escapes is a bug. This module imports nothing of archdb's, so every layer can
raise these.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

EXIT_DATA = 1  # invalid data, or something not found
EXIT_USAGE = 2  # the request itself is wrong (a bad query, option or output path)


class ArchdbError(Exception):
    """An error a user can cause and fix: bad data or something not found (exit 1)."""

    exit_code: ClassVar[int] = EXIT_DATA
    problems: tuple[Any, ...] | list[Any] = ()  # located problems, one a line; else str(self)


class UsageError(ArchdbError):
    """The request is wrong rather than the data (exit 2)."""

    exit_code: ClassVar[int] = EXIT_USAGE


class ArgumentError(UsageError, ValueError):
    """A Python API argument of the wrong type or out of its documented bounds; the message
    names the argument (exit 2 from a command line)."""


class UnknownCardError(ArchdbError, KeyError):
    def __init__(self, name: str, suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        shown = repr(name) if len(name) <= 80 else repr(name[:77]) + "..."
        super().__init__(f"no card or family named {shown}{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


def close_names(name: str, names: Iterable[str]) -> list[str]:
    """Up to five of ``names`` (card ids and family names) spelled like ``name``."""
    return difflib.get_close_matches(name, sorted(set(names)), n=5, cutoff=0.5)


def validation_message(error: Mapping[str, Any]) -> str:
    """One pydantic error's message as a person reads it: without the "Value error, "
    pydantic puts before a validator's own words."""
    return str(error["msg"]).removeprefix("Value error, ")
