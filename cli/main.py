"""The archdb command: one Typer app composed of small command modules.

Exit codes: 0 success, 1 invalid data or not found, 2 usage error.
"""

from __future__ import annotations

import sys

import typer

from archdb.catalogue import CatalogueError, UnknownCardError

from . import build, catalogue, contribute, query, report
from .common import err_console

app = typer.Typer(
    name="archdb",
    help="An architecture survey database of language models: query, compare, build.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
app.command()(catalogue.validate)
app.command()(catalogue.schema)
for module in (query, build, report, contribute):
    module.register(app)


def run() -> None:
    """Entry point: user errors become a clean message and an exit code, never a traceback."""
    try:
        app()
    except CatalogueError as exc:
        for problem in exc.problems:
            err_console.print(f"[red]✗[/] {problem}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except UnknownCardError as exc:
        err_console.print(f"[red]error:[/] {exc}", highlight=False)
        sys.exit(1)
