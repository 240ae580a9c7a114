"""Shared pieces of the CLI: the console, the catalogue option, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from archdb.catalogue import DEFAULT_PATH, Catalogue, load_catalogue

console = Console()
err_console = Console(stderr=True)

CataloguePath = Annotated[
    Path,
    typer.Option(
        "--catalogue",
        "-C",
        help="Catalogue file to read.",
        envvar="ARCHDB_CATALOGUE",
        dir_okay=False,
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


def load(path: Path = DEFAULT_PATH) -> Catalogue:
    return load_catalogue(path)


def print_json(data: Any) -> None:
    """JSON to stdout, unstyled so scripts can parse it."""
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")
