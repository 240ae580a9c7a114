"""Report commands: `report` writes reports/ (the main job), `trends` prints adoption tables.

`trends` stays quick: it counts in plain Python over the table rows and never imports
pandas or matplotlib (which only `report` needs).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from archdb.query import FieldSpec
from archdb.reports.adoption import (
    ANY,
    CHOICE_KEYS,
    CHOICES,
    Adoption,
    adoption,
    find_choice,
    select_trend_rows,
)
from archdb.reports.numeric import NumericTrend, numeric_field, numeric_trend

from .common import (
    EXIT_DATA,
    EXIT_USAGE,
    CataloguePath,
    Grid,
    JsonFlag,
    console,
    errors_as_json,
    fail,
    load,
    print_grid,
    print_json,
    say,
    writing,
)
from .query import complete_field, format_value

if TYPE_CHECKING:
    from rich.table import Table

REPORTS_PATH = Path("reports")  # in the current folder, never inside the installation


def complete_choice(incomplete: str) -> list[str]:
    """Trend choices for shell completion: the registered keys, then queryable fields."""
    from archdb import query

    names = [*CHOICE_KEYS, *query.short_names()]
    return [n for n in dict.fromkeys(names) if n.startswith(incomplete)]


def report(
    catalogue: CataloguePath = None,
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Directory to write (in the current folder).", file_okay=False
        ),
    ] = REPORTS_PATH,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Write nothing; exit 1 if OUTPUT differs from what the catalogue gives (for CI).",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON (files written or stale).")
    ] = False,
) -> None:
    """Build the reports (Markdown and SVG figures) from the catalogue into reports/.

    The same catalogue always gives byte-identical files. OUTPUT must be empty or a
    directory archdb wrote before: its .archdb-report-manifest lists the files archdb
    owns there, and only those are replaced or removed.

    Examples:
      archdb report
      archdb report -o /tmp/reports
    """
    from archdb.reports.build import build_reports, stale_files

    errors_as_json(as_json)
    cat = load(catalogue)
    if check:
        stale = stale_files(cat, output)
        if as_json:
            print_json({"output": str(output), "stale": stale})
        elif stale:
            say(("✗ ", "red"), f"{output} is stale: {', '.join(stale)}; run `archdb report`")
        else:
            say(("✓ ", "green"), f"{output} matches {cat.path}")
        if stale:
            raise typer.Exit(EXIT_DATA)
        return
    with writing(output):
        written = build_reports(cat, output)
    if as_json:
        print_json({"output": str(output), "written": [str(p) for p in written]})
        return
    pages = sum(p.suffix == ".md" for p in written)
    say(f"wrote {pages} pages and {len(written) - pages} figures to {output}")


def trends(
    choice: Annotated[
        str | None,
        typer.Argument(
            help="A choice (norm-type, attention, qk-norm, ...), a categorical "
            "field (norm.type, norm.affine) or a numeric one (d_ff_ratio, vocab_size); "
            "all choices if omitted.",
            show_default=False,
            autocompletion=complete_choice,
        ),
    ] = None,
    since: Annotated[
        int | None, typer.Option("--since", help="First year shown (facts stay whole).")
    ] = None,
    until: Annotated[
        int | None, typer.Option("--until", help="Last year shown (facts stay whole).")
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            "-w",
            help="Only models matching FIELD OP VALUE (as in `archdb list`); repeatable.",
            autocompletion=complete_field,
        ),
    ] = None,
    catalogue: CataloguePath = None,
    as_json: JsonFlag = False,
) -> None:
    """Adoption of design choices by release year: share, first use, majority.
    A numeric field gives its median, quartiles and n by year instead.

    Shares are over the year's models whose value is known (n known of the
    year's models); research variants are left out. "first" is the year of the
    first model using a value, ">50%" the first year it held the majority (more
    than half of the known values and at least half of all the year's models),
    "since" the year from which it kept it. --since and --until only hide
    years: first use and majority are counted over the whole catalogue.

    Examples:
      archdb trends norm-type --since 2019
      archdb trends d_ff_ratio --where activation=swiglu
    """
    if since is not None and until is not None and since > until:
        raise fail(f"--since {since} is after --until {until}", EXIT_USAGE)
    numeric = numeric_field(choice) if choice is not None else None
    choices = [] if numeric else list(CHOICES) if choice is None else [find_choice(choice)]
    columns = [numeric.name] if numeric else [c.column for c in choices]
    rows = select_trend_rows(load(catalogue), where or [], columns)
    if numeric is not None:
        _print_numeric(numeric_trend(rows, numeric, since, until), as_json)
        return
    results = [adoption(rows, c).window(since, until) for c in choices]
    if as_json:
        print_json([_as_json(a) for a in results])
        return
    if not any(result.years for result in results):
        console.print("no released models in that window")
        return
    for result in results:
        grid = _grid(result)
        print_grid(grid, lambda grid=grid: _table(grid))


def _print_numeric(trend: NumericTrend, as_json: bool) -> None:
    if as_json:
        print_json(trend.as_dict())
        return
    if not trend.years:
        console.print("no released models in that window")
        return
    rows = []
    for label, found, models in [
        *((str(y), trend.by_year[y], trend.total[y]) for y in trend.years),
        (f"{trend.years[0]}–{trend.years[-1]}", trend.overall, sum(trend.total.values())),
    ]:
        numbers = [found.low, found.q1, found.median, found.q3, found.high] if found else [None] * 5
        rows.append(
            [label, str(found.n if found else 0), str(models)]
            + [_number(v, trend.field) for v in numbers]
        )
    headers = ["year", "n", "of", "min", "Q1", "median", "Q3", "max"]
    grid = Grid(
        f"{trend.title}: by release year",
        headers,
        [True] * len(headers),
        rows,
        caption="n = models with a known value, of the year's models; research variants out",
    )
    print_grid(grid, lambda: _table(grid))


def _number(value: float | None, spec: FieldSpec) -> str:
    """Counts as people read them (671B, 256000), ratios to three figures."""
    if value is None:
        return "·"
    if spec.kind == "int" and value.is_integer():
        return format_value(int(value), spec.name)
    return f"{value:.3g}" if abs(value) < 1000 else format_value(value, spec.name)


def _grid(result: Adoption) -> Grid:
    """One choice: a row per value, a column per year (share of known values)."""
    years = [y for y in result.years if result.known.get(y)]
    c = result.choice
    unknown = f"; unknown for {len(result.unknown)} models" if result.unknown else ""
    name = c.title if c.title == c.key else f"{c.title} ({c.key})"
    headers = ["value", *map(str, years), "first", ">50%", "since"]
    rows = []
    for trend in result.values:
        cells = []
        for y in years:
            k = trend.counts.get(y, 0)
            cells.append(f"{100 * k / result.known[y]:.0f}%" if k else "·")
        label = f"{ANY} but {c.absent}" if trend.value == ANY else trend.value
        first = str(trend.first_use.year)
        rows.append(
            [label, *cells, first, _year(trend.majority_year), _year(trend.consensus_since)]
        )
    rows.append(["n", *[f"{result.known[y]}/{result.total.get(y, 0)}" for y in years], "", "", ""])
    return Grid(
        f"{name}: share of each year's models",
        headers,
        [False, *(True for _ in headers[1:])],
        rows,
        caption=f"n = models with a known value / the year's models{unknown}",
    )


def _table(grid: Grid) -> Table:
    from rich.table import Table  # only on a terminal: a pipe gets the grid's text

    table = Table(
        title=grid.title,
        caption=grid.caption,
        caption_justify="left",
        title_justify="left",
        title_style="bold",
        box=None,
        pad_edge=False,
        collapse_padding=True,
        header_style="bold",
    )
    for header, right in zip(grid.headers, grid.right, strict=True):
        table.add_column(header, justify="right" if right else "left", no_wrap=True)
    for row in grid.cells[:-1]:
        table.add_row(*row)
    table.add_row(*grid.cells[-1], style="dim")
    return table


def _year(year: int | None) -> str:
    return "–" if year is None else str(year)


def _as_json(result: Adoption) -> dict[str, Any]:
    return {
        "choice": result.choice.key,
        "column": result.choice.column,
        "years": {
            str(y): {"known": result.known.get(y, 0), "models": result.total.get(y, 0)}
            for y in result.years
        },
        "values": [
            {
                "value": t.value,
                "counts": {str(y): t.counts[y] for y in result.years if t.counts.get(y)},
                "shares": {
                    str(y): round(result.share(t, y) or 0.0, 4)
                    for y in result.years
                    if result.known.get(y)
                },
                "first_use": {"date": t.first_use.date, "models": list(t.first_use.models)},
                "majority_year": t.majority_year,
                "consensus_since": t.consensus_since,
            }
            for t in result.values
        ],
        "unknown": list(result.unknown),
    }


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command()(report)
    choices = ", ".join(CHOICE_KEYS)
    app.command(epilog=f"Choices: {choices}.")(trends)
