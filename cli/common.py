"""Shared pieces of the CLI: the console, the catalogue option, JSON output."""

from __future__ import annotations

import json
import sys
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


def load(path: Path = DEFAULT_PATH) -> Catalogue:
    return load_catalogue(path)


def print_json(data: Any) -> None:
    """JSON to stdout, unstyled so scripts can parse it."""
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")
