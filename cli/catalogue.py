"""Commands that read or check the catalogue: validate, schema."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from archdb.catalogue import (
    CATALOGUE_RULES,
    CatalogueLocationError,
    check_catalogue,
    resolve_catalogue,
)
from archdb.schema import catalogue_json_schema

from .common import EXIT_DATA, EXIT_USAGE, console, err_console, fail, print_problems


def validate(
    path: Annotated[
        Path | None,
        typer.Argument(help=f"Catalogue file. {CATALOGUE_RULES}", dir_okay=False),
    ] = None,
) -> None:
    """Check every card of a catalogue file; list every problem with file:line.

    Exit codes: 0 valid, 1 invalid data, 2 usage error.

    Example: archdb validate data/models.yaml
    """
    path = resolve_catalogue(path)
    cards, problems = check_catalogue(path)
    if problems:
        print_problems(problems)
        err_console.print(f"[red]{len(problems)} problem(s)[/] in {path}", soft_wrap=True)
        raise typer.Exit(EXIT_DATA)
    years = Counter(c.year for c in cards)
    families = {c.family for c in cards}
    span = f"{min(years)}–{max(years)}" if years else "none"
    console.print(
        f"[green]✓[/] {path}: {len(cards)} cards, {len(families)} families, years {span}",
        highlight=False,
        soft_wrap=True,
    )


def schema(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Where to write. Default: models.schema.json beside the catalogue "
            "(the rules of --catalogue elsewhere), never inside the installation.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write the catalogue's JSON Schema (committed next to the catalogue)."""
    if output is None:
        try:
            output = resolve_catalogue(writing=True).with_name("models.schema.json")
        except CatalogueLocationError as exc:
            raise fail(f"{exc}; or give --output", EXIT_USAGE) from None
    output.write_text(json.dumps(catalogue_json_schema(), indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command()(validate)
    app.command()(schema)
