"""The library's user-facing errors: one family, each error stating its exit code.

A command line turns any ``ArchdbError`` into its message (or its located ``problems``,
one a line) and ``exit_code`` in one place (``archdb_cli.common.report_error``); anything
else that escapes is a bug. This module imports nothing, so every layer can raise these.
"""

from __future__ import annotations

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
