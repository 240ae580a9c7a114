"""Commands that read or check the catalogue: validate, schema."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from archdb import files
from archdb.catalogue import check_catalogue, secondary_shares
from archdb.locations import CATALOGUE_RULES, CatalogueLocationError, resolve_catalogue
from archdb.outputs import check_new_file
from archdb.problems import Problem

from .common import (
    EXIT_DATA,
    EXIT_USAGE,
    errors_as_json,
    fail,
    print_json,
    print_problems,
    say,
    writing,
)


def validate(
    path: Annotated[
        Path | None,
        typer.Argument(help=f"Catalogue file. {CATALOGUE_RULES}", dir_okay=False),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON: a summary or the problems.")
    ] = False,
) -> None:
    """Check every card of a catalogue file; list every problem with file:line.

    Exit codes: 0 valid, 1 invalid data, 2 usage error.

    Example: archdb validate data/models.yaml
    """
    errors_as_json(as_json)
    path = resolve_catalogue(path)
    cards, problems = check_catalogue(path)
    years = Counter(c.year for c in cards)
    if as_json:
        print_json(
            {
                "path": str(path),
                "valid": not problems,
                "cards": len(cards),
                "families": len({c.family for c in cards}),
                "years": [min(years), max(years)] if years else None,
                "secondary_sources": {
                    kind: {"values": n, "share": round(share, 4)}
                    for kind, (n, share) in secondary_shares(cards).items()
                },
                "problems": [_problem_json(p) for p in problems],
            }
        )
    elif problems:
        print_problems(problems)
        say((f"{len(problems)} problem(s)", "red"), f" in {path}", err=True)
    else:
        families = {c.family for c in cards}
        span = f"{min(years)}–{max(years)}" if years else "none"
        say(("✓ ", "green"), f"{path}: {len(cards)} cards, {len(families)} families, years {span}")
        say(f"  values resting on secondary sources: {_shares_line(secondary_shares(cards))}")
    if problems:
        raise typer.Exit(EXIT_DATA)


def _shares_line(shares: dict[str, tuple[int, float]]) -> str:
    return ", ".join(f"{kind} {n} ({share:.1%})" for kind, (n, share) in shares.items())


def _problem_json(problem: Problem) -> dict[str, object]:
    return {
        "file": problem.file,
        "line": problem.line,
        "column": problem.column,
        "card": problem.card_id,
        "field": problem.field,
        "message": problem.message,
    }


def schema(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Where to write. Default: models.schema.json beside the catalogue "
            "(the rules of --catalogue elsewhere), never inside the installation; the "
            "catalogue's header is then regenerated too.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write the catalogue's JSON Schema (committed next to the catalogue) and regenerate
    the catalogue's header, the readable schema at its top (only the header changes).

    Example: archdb schema -o /tmp/models.schema.json
    """
    from archdb.header import catalogue_header  # ruamel: not for validate
    from archdb.schema import catalogue_json_schema
    from archdb.writer import write_header

    catalogue = None
    if output is None:
        try:
            catalogue = resolve_catalogue(writing=True)
        except CatalogueLocationError as exc:
            raise fail(f"{exc}; or give --output", EXIT_USAGE) from None
        output = catalogue.with_name("models.schema.json")
    check_new_file(output, force=True, protected=[resolve_catalogue()])
    text = json.dumps(catalogue_json_schema(), indent=2) + "\n"
    with writing(output):  # a link at the path is replaced, never written through
        files.write_output(output, text.encode("utf-8"))
    say(f"wrote {output}")
    if catalogue is not None:  # the catalogue's own header is the readable schema
        changed = write_header(catalogue, catalogue_header())
        say(f"{'rewrote' if changed else 'kept'} the header of {catalogue}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command()(validate)
    app.command()(schema)
