"""Report commands: `report` writes reports/ (the main job), `trends` prints adoption tables.

`trends` stays quick: it counts in plain Python over the table rows and never imports
pandas or matplotlib (which only `report` needs).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archdb.columns import FieldSpec
from archdb.reports.adoption import (
    ANY,
    CHOICE_KEYS,
    CHOICES,
    Adoption,
    adoption,
    adoption_record,
    filter_trend_rows,
    find_choice,
    parse_kinds,
)
from archdb.reports.numeric import (
    NumericTrend,
    numeric_field,
    numeric_record,
    numeric_trends,
)
from archdb.reports.weighting import (
    DEFAULT_WEIGHTING,
    WEIGHTINGS,
    Cutoff,
    Weighting,
    parse_weighting,
)

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
    snapshot,
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


WeightOption = Annotated[
    str,
    typer.Option(
        "--weight",
        help="family: each family weighs 1 a year, split among its cards (default); "
        "card: each card weighs 1.",
        autocompletion=lambda: list(WEIGHTINGS),
    ),
]


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
    weight: WeightOption = DEFAULT_WEIGHTING,
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
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            help="Model kinds counted (repeatable; 'all' for every kind). Default: "
            "decoder-only and encoder-decoder.",
        ),
    ] = None,
    band: Annotated[
        bool,
        typer.Option(
            "--band", help="Numbers: one table per size band (<1B, 1–10B, 10–100B, >100B)."
        ),
    ] = False,
    mlp: Annotated[
        bool,
        typer.Option("--mlp", help="Numbers: dense and MoE models apart (always for d_ff_ratio)."),
    ] = False,
    catalogue: CataloguePath = None,
    as_json: JsonFlag = False,
) -> None:
    """Adoption of design choices by release year: share, first use, majority.
    A numeric field gives its median, quartiles and n by year instead.

    Counted by family unless --weight card: each family with a known value
    weighs 1 in a year, split equally among its cards of that year, so a
    family that published eight sizes counts once. Shares are over the
    known values; n gives known / all families and cards; a year known for
    under half its families shows "too few". ">50%" is the first year a
    value's share passed one half; "consensus" the year from which the
    share's 95% interval (Wilson, on families) stays above one half with at
    least 5 families known. The latest year is partial (marked *). Research
    variants and encoder-only models are left out unless --kind asks.
    --since and --until only hide years.

    Examples:
      archdb trends norm-type --since 2019
      archdb trends moe --weight card --json
      archdb trends d_ff_ratio --where activation=swiglu --band
    """
    if since is not None and until is not None and since > until:
        raise fail(f"--since {since} is after --until {until}", EXIT_USAGE)
    weighting = parse_weighting(weight)
    kinds = parse_kinds(kind)
    numeric = numeric_field(choice) if choice is not None else None
    if (band or mlp) and numeric is None:
        raise fail(
            "--band and --mlp split numbers (d_ff_ratio, vocab_size), not choices", EXIT_USAGE
        )
    choices = [] if numeric else list(CHOICES) if choice is None else [find_choice(choice)]
    snap = snapshot(catalogue)
    rows = filter_trend_rows(snap.rows(), where or [], kinds)
    cut = Cutoff(snap.cutoff)  # the whole catalogue's: a filter never moves the partial year
    if numeric is not None:
        found = numeric_trends(
            rows, numeric, weighting, since, until, by_band=band, by_mlp=mlp, cut=cut
        )
        _print_numeric(found, numeric, weighting, as_json)
        return
    results = [adoption(rows, c, weighting, cut).window(since, until) for c in choices]
    if as_json:
        print_json([adoption_record(a) for a in results])
        return
    if not any(result.years for result in results):
        console.print("no released models in that window")
        return
    for result in results:
        grid = _grid(result)
        print_grid(grid, lambda grid=grid: _table(grid))


def _print_numeric(
    found: list[NumericTrend], spec: FieldSpec, weighting: Weighting, as_json: bool
) -> None:
    if as_json:
        print_json(numeric_record(found, spec, weighting))
        return
    if not any(t.years for t in found):
        console.print("no released models in that window")
        return
    for trend in found:
        grid = _numeric_grid(trend)
        print_grid(grid, lambda grid=grid: _table(grid, footer=0))


def _numeric_grid(trend: NumericTrend) -> Grid:
    rows = []
    for label, found, families, models in [
        *(
            (
                trend.cutoff.short_label(y),
                trend.by_year[y],
                f"{trend.families_known[y]}/{trend.families[y]}",
                f"{trend.known(y)}/{trend.total[y]}",
            )
            for y in trend.years
        ),
        (
            f"{trend.years[0]}–{trend.years[-1]}",
            trend.overall,
            "",
            f"{sum(trend.known_cards.values())}/{sum(trend.total.values())}",
        ),
    ]:
        numbers = [found.low, found.q1, found.median, found.q3, found.high] if found else [None] * 5
        cells = [_number(v, trend.field) for v in numbers]
        if found is None and label[:4].isdigit() and "–" not in label:
            year = int(label[:4])
            if trend.known(year) and trend.too_few_known(year):
                cells = ["too few", *[""] * 4]
        rows.append([label, families, models, *cells])
    headers = ["year", "families", "cards", "min", "Q1", "median", "Q3", "max"]
    group = "" if trend.group == "all" else f" ({trend.group})"
    notes = [
        f"{_weighting_note(trend.weighting)}; families, cards = known / all; "
        "too few = known for under half the year's families",
        trend.cutoff.note(trend.years),
    ]
    return Grid(
        f"{trend.title}{group}: by release year, {trend.weighting}-weighted",
        headers,
        [True] * len(headers),
        rows,
        caption="\n".join(n for n in notes if n),
    )


def _weighting_note(weighting: Weighting) -> str:
    if weighting == "family":
        return "family-weighted (each family 1 a year, split among its cards)"
    return "card-weighted (each card 1)"


def _number(value: float | None, spec: FieldSpec) -> str:
    """Counts as people read them (671B, 256000), ratios to three figures."""
    if value is None:
        return "·"
    if spec.kind == "int" and value.is_integer():
        return format_value(int(value), spec.name)
    return f"{value:.3g}" if abs(value) < 1000 else format_value(value, spec.name)


def _grid(result: Adoption) -> Grid:
    """One choice: a row per value, a column per year (weighted share of known values)."""
    years = result.shown_years()
    c = result.choice
    n = len(result.unknown)
    unknown = f"; unknown: {n} card{'s' if n != 1 else ''}" if n else ""
    name = c.title if c.title == c.key else f"{c.title} ({c.key})"
    headers = ["value", *map(result.cutoff.short_label, years), "first", ">50%", "consensus"]
    rows = []
    for trend in result.values:
        cells = []
        for y in years:
            share = result.share_of(trend, y)
            year = result.year(y)
            if share is None and year is not None and year.too_few_known:
                cells.append("too few")
            elif share is None or not share.cards:
                cells.append("·")
            else:
                cells.append(f"{100 * share.share:.0f}%")
        label = f"{ANY} but {c.absent}" if trend.value == ANY else trend.value
        first = str(trend.first_use.year)
        rows.append(
            [label, *cells, first, _year(trend.majority_year), _year(trend.consensus_since)]
        )
    for what in ("families", "cards"):
        cells = []
        for y in years:
            year = result.year(y)
            assert year is not None
            known, total = (
                (year.families_known, year.families)
                if what == "families"
                else (year.cards_known, year.cards)
            )
            cells.append(f"{known}/{total}")
        rows.append([f"n {what}", *cells, "", "", ""])
    notes = [
        f"{_weighting_note(result.weighting)}; n = known / all{unknown}",
        "consensus: the 95% interval (Wilson, on families) above 50% with 5+ families known",
        result.cutoff.note(years),
    ]
    return Grid(
        f"{name}: share of each year's {'families' if result.weighting == 'family' else 'cards'}",
        headers,
        [False, *(True for _ in headers[1:])],
        rows,
        caption="\n".join(n for n in notes if n),
    )


def _table(grid: Grid, footer: int = 2) -> Table:
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
    body = len(grid.cells) - footer
    for i, row in enumerate(grid.cells):
        table.add_row(*row, style="dim" if i >= body else None)
    return table


def _year(year: int | None) -> str:
    return "–" if year is None else str(year)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command()(report)
    choices = ", ".join(CHOICE_KEYS)
    app.command(epilog=f"Choices: {choices}.")(trends)
