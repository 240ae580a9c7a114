"""Shared pieces of the CLI: safe consoles, the error boundary, the catalogue option, JSON.

Two rules hold for everything the CLI prints:

- User data is never markup. The consoles below have Rich markup and emoji codes off, so a
  card named ``[/x] evil`` prints as those characters; styling is applied with
  ``rich.text.Text`` (``styled``), never by formatting tags into a string.
- Control characters never reach the terminal raw. ``visible`` turns C0/C1 controls, DEL
  and the bidirectional overrides into ``\\xNN``/``\\uNNNN`` text, and the consoles apply it
  to every string they render (table cells, titles, tree labels included).

Errors: the library raises typed errors; ``report_error`` is the one place that turns them
into a message and an exit code (1 bad data or not found, 2 usage), and ``run_guarded``
adds the last-resort handler for anything unexpected (exit 70, "internal error").
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from archdb.errors import EXIT_DATA as EXIT_DATA  # re-exported for the commands
from archdb.errors import EXIT_USAGE as EXIT_USAGE
from archdb.errors import ArchdbError
from archdb.locations import CATALOGUE_RULES, resolve_catalogue

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from archdb.catalogue import Catalogue
    from archdb.snapshot import Snapshot

EXIT_INTERNAL = 70  # a bug in archdb (EX_SOFTWARE): never expected, always reported
ISSUES_HINT = "please report it with the command you ran"

# --- printing user data safely --------------------------------------------------------

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidi overrides that can
# reorder what a reader sees ("Trojan source"): shown as escapes, never sent raw.
_UNSAFE = [
    *(c for c in range(0x20) if c not in (0x09, 0x0A)),
    *range(0x7F, 0xA0),
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]


def _escaper(escapes: dict[int, str]) -> Callable[[str], str]:
    """A function writing each of ``escapes``' characters as its escape. A regular
    expression finds the rare ones in C (str.translate looks up every character: 150 ms
    on list --json's 3 MB, against 9 ms)."""
    found = re.compile("[" + "".join(re.escape(chr(c)) for c in escapes) + "]")
    return lambda text: found.sub(lambda m: escapes[ord(m.group())], text)


_visible = _escaper({c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _UNSAFE})


def visible(text: str) -> str:
    """``text`` with every control character written as an escape (``\\x1b``)."""
    return _visible(text)


def has_control(text: str) -> bool:
    return visible(text) != text


# Rich (about 25 ms to import) loads on the first styled output: a command piping a table
# (print_grid) never needs it.


@cache
def _safe_console_class() -> type[Console]:
    from rich.console import Console

    class SafeConsole(Console):
        """A Rich console that never reads markup and never prints a control character raw."""

        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("highlight", False)
            super().__init__(markup=False, emoji=False, **kwargs)

        def render_str(self, text: str, **kwargs: Any) -> Text:
            kwargs.update(markup=False, emoji=False)
            return super().render_str(visible(text), **kwargs)

    return SafeConsole


def __getattr__(name: str) -> Any:
    if name == "SafeConsole":  # a class defined once Rich is imported
        return _safe_console_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def safe_console(**kwargs: Any) -> Console:
    """A SafeConsole: a Rich console without markup or raw control characters."""
    return _safe_console_class()(**kwargs)


class _LazyConsole:
    """A SafeConsole made on first use; reads, writes and deletions of attributes, and the
    instance ``__dict__`` (what ``monkeypatch`` saves and restores), are the console's."""

    __slots__ = ("_kwargs", "_made")

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_kwargs", kwargs)
        object.__setattr__(self, "_made", None)

    def made(self) -> Console | None:
        return self._made

    def _console(self) -> Console:
        if self._made is None:
            object.__setattr__(self, "_made", safe_console(**self._kwargs))
        return self._made

    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        return self._console().__dict__

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._console(), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._console(), name)


def styled(*parts: str | tuple[str, str]) -> Text:
    """Text from plain strings and (string, style) pairs; every string is shown literally."""
    from rich.text import Text

    text = Text()
    for part in parts:
        value, style = (part, "") if isinstance(part, str) else part
        text.append(visible(value), style=style)
    return text


console: Console = _LazyConsole()  # type: ignore[assignment]
err_console: Console = _LazyConsole(stderr=True)  # type: ignore[assignment]


def say(*parts: str | tuple[str, str], err: bool = False) -> None:
    """One message, not wrapped (paths and URLs stay whole); styled with ``styled`` pairs
    on a terminal, plain into a pipe (where Rich would drop the styles: not importing it
    saves a command 25 ms)."""
    if _surely_piped(err):
        stream = sys.stderr if err else sys.stdout
        stream.write("".join(visible(p if isinstance(p, str) else p[0]) for p in parts) + "\n")
        return
    (err_console if err else console).print(styled(*parts), soft_wrap=True)


@dataclass(frozen=True)
class Grid:
    """A table's plain cells: drawn by Rich on a terminal, as aligned text into a pipe
    (no row ever wraps there, and Rich's layout engine costs ~30 ms for 68 rows)."""

    title: str
    headers: list[str]
    right: list[bool]  # right-justified columns (numbers)
    cells: list[list[str]]
    caption: str = ""

    def text(self) -> str:
        """Title, header, a rule, the rows and the caption, each column padded to its width."""
        headers = [visible(h) for h in self.headers]
        rows = [[visible(c) for c in row] for row in self.cells]
        widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

        def line(values: list[str]) -> str:
            padded = (
                v.rjust(w) if right else v.ljust(w)
                for v, w, right in zip(values, widths, self.right, strict=True)
            )
            return ("  " + "   ".join(padded)).rstrip()

        rule = " " + "─" * (sum(widths) + 3 * len(widths) - 1)
        caption = [visible(self.caption)] if self.caption else []
        lines = [visible(self.title), line(headers), rule, *map(line, rows), *caption]
        return "\n".join(lines) + "\n\n"


def print_grid(grid: Grid, rich_table: Callable[[], Table]) -> None:
    """``rich_table()`` on a terminal; the grid's aligned text anywhere else."""
    if not _surely_piped() and console.is_terminal:
        console.print(rich_table())
    else:
        sys.stdout.write(grid.text())


# Variables that make Rich treat any output as a terminal, or as none.
_TERMINAL_OVERRIDES = ("TTY_COMPATIBLE", "FORCE_COLOR")


def _surely_piped(err: bool = False) -> bool:
    """Whether Rich would call stdout (stderr) no terminal, known without importing Rich:
    output that is no tty, no variable overriding that and no console made (and perhaps
    forced)."""
    made = (err_console if err else console).made()
    if made is not None or any(v in os.environ for v in _TERMINAL_OVERRIDES):
        return False
    isatty = getattr(sys.stderr if err else sys.stdout, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # a closed stream
        return False


# --- options shared by commands -------------------------------------------------------

# No default path here: archdb.catalogue.resolve_catalogue applies the rules at run time
# (a path fixed at import would name this machine's installation in --help).
CataloguePath = Annotated[
    Path | None,
    typer.Option(
        "--catalogue",
        "-C",
        help=f"Catalogue file to read. {CATALOGUE_RULES}",
        dir_okay=False,
        show_default=False,
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
KV_BYTES_RANGE = {"min": 0.125, "max": 16}  # bytes per cached element: 1-bit to 128-bit
ContextOption = Annotated[
    int, typer.Option("--context", min=1, help="KV cache: for a sequence of this many tokens.")
]
BytesOption = Annotated[
    float,
    typer.Option(
        "--bytes-per-element",
        **KV_BYTES_RANGE,
        help="KV cache: bytes per cached element (2: bf16/fp16; 1: fp8).",
    ),
]


def load(path: Path | None = None) -> Catalogue:
    """The catalogue at ``path``, else the one archdb.locations.resolve_catalogue finds;
    validated (or from the cache)."""
    from archdb.catalogue import load_catalogue  # pydantic: not for --help

    return load_catalogue(path)


def snapshot(path: Path | None = None) -> Snapshot:
    """The catalogue at ``path`` (or the one found) as the query commands read it: plain
    data from the cache, without pydantic or the schema (built by a full load if new)."""
    from archdb.snapshot import open_snapshot

    return open_snapshot(resolve_catalogue(None if path is None else os.fspath(path)))


def print_json(data: Any) -> None:
    """JSON to stdout, unstyled so scripts can parse it (C1 controls escaped as \\u00XX)."""
    text = json.dumps(data, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write(_json_escaped(text) + "\n")


# json.dumps escapes C0 controls itself; these it leaves raw. Inside a JSON string (the only
# place they can occur) \\uNNNN is the same character for a parser.
_json_escaped = _escaper({c: f"\\u{c:04x}" for c in _UNSAFE if c >= 0x7F})


# --- errors: one boundary -------------------------------------------------------------


class _Errors:
    """How errors are printed: lines on stderr, or (a command's --json) JSON on stdout."""

    as_json = False


def errors_as_json(on: bool) -> None:
    """A command with --json reports its errors as {"ok": false, "exit_code", "errors"}."""
    _Errors.as_json = on


def _json_error(messages: list[str], code: int) -> None:
    print_json({"ok": False, "exit_code": code, "errors": messages})


def print_problems(problems: Iterable[object], code: int = EXIT_DATA) -> None:
    """Each located problem (file:line:column card field: message) on its own line."""
    if _Errors.as_json:
        _json_error([str(p) for p in problems], code)
        return
    for problem in problems:
        say(("✗ ", "red"), str(problem), err=True)


def fail(message: str, code: int = EXIT_DATA) -> typer.Exit:
    """Print an error and return the Exit to raise: a message and a code, no traceback."""
    if _Errors.as_json:
        _json_error([message], code)
    else:
        say(("error: ", "red"), message, err=True)
    return typer.Exit(code)


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """An OSError while writing ``path`` becomes one line naming the path, exit 1."""
    try:
        yield
    except BrokenPipeError:
        raise  # a reader that left (`| head`): quiet, as for stdout
    except OSError as exc:  # the file or folder at fault, else the one asked for
        raise fail(f"cannot write {exc.filename or path}: {exc.strerror or exc}") from None


def report_error(exc: BaseException) -> int | None:
    """Print a library or system error for a user and return its exit code; None if the
    error is not one a user can cause (a bug: the caller reports it as internal)."""
    if isinstance(exc, ArchdbError):
        if exc.problems:
            print_problems(list(exc.problems), exc.exit_code)
        else:
            fail(str(exc) or type(exc).__name__, exc.exit_code)
        return exc.exit_code
    if isinstance(exc, BrokenPipeError):
        return quiet_broken_pipe()
    if isinstance(exc, OSError):
        names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
        where = f"{' -> '.join(names)}: " if names else ""
        fail(f"{where}{exc.strerror or exc}")
        return EXIT_DATA
    if isinstance(exc, RecursionError | MemoryError):
        fail(f"input too large or too deeply nested ({type(exc).__name__})")
        return EXIT_DATA
    return None


def report_internal(exc: BaseException) -> int:
    """The last resort: one line, a hint to report it, exit 70 (ARCHDB_DEBUG=1: traceback)."""
    if os.environ.get("ARCHDB_DEBUG"):
        raise exc
    first_line = (str(exc).splitlines() or [""])[0][:300]
    say(
        ("internal error: ", "bold red"),
        f"{type(exc).__name__}: {first_line} ({ISSUES_HINT}; ARCHDB_DEBUG=1 shows the traceback)",
        err=True,
    )
    return EXIT_INTERNAL


def unsafe_argument(args: Iterable[str]) -> str | None:
    """The first command-line argument holding a control character, if any."""
    return next((a for a in args if has_control(a)), None)


# --- the standard streams ---------------------------------------------------------

MIN_COLUMNS = 40  # a narrower COLUMNS (0, negative, garbage) is treated as unset
# What the CLI's symbols become on a stream that cannot encode them (LC_ALL=C, latin-1, ...)
ASCII_FALLBACK = {
    "✓": "ok",
    "✗": "x",
    "·": ".",
    "—": "--",
    "–": "-",
    "…": "...",
    "×": "x",
    "≥": ">=",
    "≤": "<=",
    "≈": "~",
    "≠": "!=",
    "→": "->",
    "←": "<-",
    "•": "*",
    "±": "+/-",
    "²": "^2",
    "µ": "u",
    "│": "|",
    "─": "-",
    "━": "-",
    "┃": "|",
    "╭": "+",
    "╮": "+",
    "╰": "+",
    "╯": "+",
    "“": '"',
    "”": '"',
    "‘": "'",
    "’": "'",
}


def _ascii_fallback(error: UnicodeError) -> tuple[str, int]:
    """A codecs error handler: a known symbol as ASCII, anything else as '?'."""
    assert isinstance(error, UnicodeEncodeError)
    bad = error.object[error.start : error.end]
    return "".join(ASCII_FALLBACK.get(ch, "?") for ch in bad), error.end


def prepare_streams() -> None:
    """Make the standard streams safe to use before a command runs: output that the
    stream's encoding cannot hold degrades to ASCII instead of failing; a closed stdout is
    a one-line error (exit 1); a closed stdin reads as empty (a prompt is then a one-line
    error: ``ask``); a COLUMNS too small to lay out a table is ignored."""
    import codecs

    if sys.stdout is None:
        if sys.stderr is not None:
            sys.stderr.write("archdb: error: standard output is closed: nothing to write to\n")
        sys.exit(EXIT_DATA)
    if sys.stdin is None:  # closed: reads as empty; prompting fails at once (``ask``)
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (the process keeps it)
        _Streams.stdin_closed = True
    codecs.register_error("archdb-ascii", _ascii_fallback)
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
        if encoding not in ("utf-8", "utf8") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="archdb-ascii")
    columns = os.environ.get("COLUMNS")
    if columns is not None and (not columns.isdigit() or int(columns) < MIN_COLUMNS):
        del os.environ["COLUMNS"]


class _Streams:
    stdin_closed = False  # the process started with stdin closed (``prepare_streams``)


STDIN_HINT = "give the values as flags with --no-interactive"


def check_stdin() -> None:
    """Before prompting: a closed standard input is a one-line error (exit 1)."""
    if _Streams.stdin_closed:
        raise fail(f"standard input is closed: no answers to read; {STDIN_HINT}")


def ask(text: str, **options: Any) -> Any:
    """``typer.prompt``; an input that ends (a closed or exhausted pipe, not a terminal)
    before the answer is a one-line error (exit 1) instead of a bare 'Aborted'."""
    check_stdin()
    try:
        return typer.prompt(text, **options)
    except typer.Abort:
        if sys.stdin.isatty():
            raise  # Ctrl-C or Ctrl-D at a terminal: the user stopped
        raise fail(f"standard input ended before every answer was read; {STDIN_HINT}") from None


def quiet_broken_pipe() -> int:
    """A reader that left (``archdb list | head``): no message, exit 1 as click does; the
    rest of the output goes nowhere, so the final flush cannot fail again."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_DATA


def run_guarded(call: Callable[[], Any]) -> Any:
    """Run a command: library errors become messages and exit codes, bugs exit 70."""
    try:
        return call()
    except (typer.Exit, typer.Abort, SystemExit, KeyboardInterrupt):
        raise
    except Exception as exc:
        code = report_error(exc)
        sys.exit(report_internal(exc) if code is None else code)
