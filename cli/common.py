"""Shared pieces of the CLI: the console, the catalogue option, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from archdb.catalogue import CATALOGUE_RULES, Catalogue, load_catalogue

console = Console()
err_console = Console(stderr=True)

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

EXIT_DATA = 1  # invalid data, or not found
EXIT_USAGE = 2  # the command line is wrong


def print_problems(problems: Iterable[object]) -> None:
    """Each located problem (file:line:column card field: message) on its own line."""
    for problem in problems:
        err_console.print(f"[red]✗[/] {problem}", highlight=False, soft_wrap=True)


def fail(message: str, code: int = EXIT_DATA) -> typer.Exit:
    """Print an error and return the Exit to raise: a message and a code, no traceback."""
    err_console.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def load(path: Path | None = None) -> Catalogue:
    """The catalogue at ``path``, else the one archdb.catalogue.resolve_catalogue finds."""
    return load_catalogue(path)


def print_json(data: Any) -> None:
    """JSON to stdout, unstyled so scripts can parse it."""
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")
