"""The archdb command: one Typer app composed of small command modules.

Each command module is imported only when one of its commands runs (or when the full
help is shown): a query command then pays for neither the builder's nor the importer's
imports, which keeps start-up within the query commands' 0.3 s budget.

Exit codes: 0 success, 1 invalid data or not found, 2 usage error.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from archdb.collector import collector_paused

# pydantic looks for plugins by scanning every installed package's entry points on the first
# validation (10-40 ms in an environment with torch and transformers); the CLI uses none.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

with collector_paused():  # typer's imports (the entry point freezes them: run)
    import typer
    import typer.main
    from typer.core import TyperCommand, TyperGroup

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
    "diagram": "build",
    "measure": "measure",
    "new": "contribute",
    "import-hf": "contribute",
    "site": "site",
}


class LazyCommands(TyperGroup):
    """A command group that imports a command's module when the command is asked for.

    Its ``main`` is the CLI's error boundary, for the installed entry point and for tests
    (CliRunner) alike: see ``common.run_guarded``.
    """

    # the entry point's process ends with its command: the command's imports are frozen
    # (archdb.collector); tests that run many commands in one process keep collecting them
    freeze_imports = False

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:
        from .common import (
            EXIT_USAGE,
            errors_as_json,
            fail,
            prepare_streams,
            run_guarded,
            unsafe_argument,
            visible,
        )

        prepare_streams()
        errors_as_json(False)  # one run of the CLI; tests run many in one process
        bad = unsafe_argument(args if args is not None else sys.argv[1:])
        if bad is not None:
            fail(f"argument '{visible(bad)}' holds a control character", EXIT_USAGE)
            sys.exit(EXIT_USAGE)
        return run_guarded(lambda: super(LazyCommands, self).main(args, *rest, **kwargs))

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> TyperCommand | None:
        module_name = COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        with collector_paused(freeze=self.freeze_imports):  # classes, tables, schemas
            module = importlib.import_module(f".{module_name}", __package__)
        commands = typer.Typer(rich_markup_mode="rich", pretty_exceptions_enable=False)
        module.register(commands)
        # Only the command asked for: typer reads every registered signature to build one.
        commands.registered_commands = [
            info
            for info in commands.registered_commands
            if (info.name or info.callback.__name__.replace("_", "-")) == cmd_name
        ]
        command = typer.main.get_group(commands).get_command(ctx, cmd_name)
        if command is not None:
            _reflow_help(command)
        return command


def _reflow_help(command: Any) -> None:
    """``reflow`` a command's help, and its subcommands' (a group such as `measure`)."""
    if command.help:
        command.help = reflow(command.help)
    for sub in getattr(command, "commands", {}).values():
        _reflow_help(sub)


def reflow(help_text: str) -> str:
    """Join each prose paragraph of a docstring into one line, for Rich to wrap once.

    Docstrings are wrapped by hand for the source; Rich wraps again at the terminal's
    width, which breaks every hand-wrapped line in two. Indented lines (examples) stay
    as written.
    """
    lines: list[str] = []
    for line in help_text.splitlines():
        prose = bool(line.strip()) and not line[0].isspace()
        if prose and lines and lines[-1].strip() and not lines[-1][0].isspace():
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    # Typer dedents the text after the first paragraph as one block: a leading empty line
    # makes it keep the examples' indentation (it drops the empty line itself).
    return "\n".join(lines).replace("\n\n", "\n\n\n", 1)


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
    """Entry point (``archdb``): the group's ``main`` turns every error into a message."""
    LazyCommands.freeze_imports = True
    gc.freeze()  # what is loaded so far lives as long as the command (archdb.collector)
    app()
