"""The archdb command: one Typer app composed of small command modules.

Each command module is imported only when one of its commands runs (or when the full
help is shown): a query command then pays for neither the builder's nor the importer's
imports, which keeps start-up within the query commands' 0.3 s budget.

Exit codes: 0 success, 1 invalid data or not found, 2 usage error.
"""

from __future__ import annotations

import importlib
import sys

import typer
import typer.main
from typer._click.core import Command  # typer vendors click; this is its Command class
from typer.core import TyperGroup

# command -> the cli module whose register(app) defines it
COMMANDS: dict[str, str] = {
    "validate": "catalogue",
    "schema": "catalogue",
    "list": "query",
    "show": "query",
    "compare": "query",
    "export": "query",
    "fields": "query",
    "trends": "report",
    "report": "report",
    "build": "build",
    "flops": "build",
    "measure": "measure",
    "new": "contribute",
    "import-hf": "contribute",
}


class LazyCommands(TyperGroup):
    """A command group that imports a command's module when the command is asked for."""

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Command | None:
        module_name = COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        module = importlib.import_module(f".{module_name}", __package__)
        commands = typer.Typer(rich_markup_mode="rich", pretty_exceptions_enable=False)
        module.register(commands)
        return typer.main.get_group(commands).get_command(ctx, cmd_name)


app = typer.Typer(
    name="archdb",
    cls=LazyCommands,
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


@app.callback()
def main() -> None:
    """An architecture survey database of language models: query, compare, build.

    Exit codes: 0 success, 1 invalid data or not found, 2 usage error.
    """


def run() -> None:
    """Entry point: user errors become a clean message and an exit code, never a traceback."""
    try:
        app()
    except Exception as exc:
        from archdb.catalogue import CatalogueError, UnknownCardError
        from archdb.measure.mechanisms import MeasurementError

        from .common import EXIT_DATA, fail, print_problems

        if isinstance(exc, CatalogueError):
            print_problems(exc.problems)
            sys.exit(EXIT_DATA)
        if isinstance(exc, UnknownCardError):
            fail(str(exc))
            sys.exit(EXIT_DATA)
        if isinstance(exc, MeasurementError):  # a tampered measurements cache
            from rich.markup import escape

            fail(escape(str(exc)))
            sys.exit(EXIT_DATA)
        raise
