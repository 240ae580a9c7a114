"""Query commands: list, show, compare, export, fields. Parse, call archdb.query, render.

Each command is a few lines over the library; the rendering helpers below only format
values for people (175B, 2.69, 512 KiB). --json prints raw values for scripts.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from archdb import conventions as cv
from archdb import files, query
from archdb.columns import FieldSpec, format_value, number_text
from archdb.errors import ArchdbError
from archdb.locations import resolve_catalogue
from archdb.outputs import check_new_file
from archdb.snapshot import Snapshot
from archdb.views import DEFAULT_KV, card_records, card_views, compare_rows, comparison

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from archdb.catalogue import Catalogue
    from archdb.schema import Card

from .common import (
    EXIT_USAGE,
    KV_BYTES_RANGE,
    BytesOption,
    CataloguePath,
    ContextOption,
    Grid,
    JsonFlag,
    console,
    fail,
    load,
    print_grid,
    print_json,
    safe_console,
    say,
    snapshot,
    styled,
    visible,
    writing,
)

# --- completion ---------------------------------------------------------------------


def _completion_snapshot() -> Snapshot | None:
    try:
        return snapshot()  # completion sees no options: the default catalogue
    except (ArchdbError, OSError):
        return None


def complete_card(incomplete: str) -> list[str]:
    snap = _completion_snapshot()
    return [i for i in snap.ids if i.startswith(incomplete)] if snap else []


def complete_family(incomplete: str) -> list[str]:
    snap = _completion_snapshot()
    return sorted(f for f in snap.largest if f.startswith(incomplete)) if snap else []


def _field_names() -> list[str]:
    """Every name a field answers to, from the schema: short names, then dotted paths."""
    return list(dict.fromkeys([*query.short_names(), *query.fields()]))


def complete_field(incomplete: str) -> list[str]:
    return [name for name in _field_names() if name.startswith(incomplete)]


def complete_field_list(incomplete: str) -> list[str]:
    """Completion for comma-separated fields (--columns, --sort: '-' sorts descending)."""
    done, _, last = incomplete.rpartition(",")
    prefix = f"{done}," if done else ""
    sign = "-" if last.startswith("-") else ""
    return [f"{prefix}{sign}{n}" for n in _field_names() if n.startswith(last[len(sign) :])]


# --- formatting for people ------------------------------------------------------------


def _justify(spec: FieldSpec) -> str:
    return "right" if spec.numeric else "left"


def print_table(table: Table, width: int | None = None) -> None:
    """A table at the terminal's width; piped output gets ``width`` so no row wraps."""
    if console.is_terminal or width is None:
        console.print(table)
    else:
        safe_console(width=max(width, console.width)).print(table)


def _table_of_rows(rows: list[dict[str, Any]], columns: list[query.Column], title: str) -> Grid:
    """The rows as a grid of formatted cells."""
    cells = [[format_value(row[c.header], c.field.name) for c in columns] for row in rows]
    return Grid(title, [c.header for c in columns], [c.field.numeric for c in columns], cells)


def _rich_rows(grid: Grid, columns: list[query.Column]) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=grid.title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for column in columns:
        table.add_column(
            column.header,
            justify=_justify(column.field),
            no_wrap=column.field.name == "id",
            overflow="fold",
        )
    for line in grid.cells:
        table.add_row(*line)
    return table


# --- list ---------------------------------------------------------------------------


def list_cards(
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            "-w",
            help="Condition FIELD OP VALUE; repeat to AND several. Ops: = != < <= > >= in ~.",
            autocompletion=complete_field,
        ),
    ] = None,
    family: Annotated[
        list[str] | None,
        typer.Option(
            "--family", "-f", help="Only this family (repeatable).", autocompletion=complete_family
        ),
    ] = None,
    sort: Annotated[
        str | None,
        typer.Option(
            "--sort",
            "-s",
            help="Sort keys, comma-separated; -key descends.",
            autocompletion=complete_field_list,
        ),
    ] = None,
    columns: Annotated[
        str | None,
        typer.Option(
            "--columns",
            "-c",
            help="Columns, comma-separated, or 'all'.",
            autocompletion=complete_field_list,
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="At most N rows.")
    ] = None,
    context: Annotated[
        int | None,
        typer.Option(
            "--context", min=1, help="kv_bytes (KV cache per token) for a sequence this long."
        ),
    ] = None,
    bytes_per_element: Annotated[
        float | None,
        typer.Option("--bytes-per-element", **KV_BYTES_RANGE, help="kv_bytes: bytes per element."),
    ] = None,
    as_json: JsonFlag = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    catalogue: CataloguePath = None,
) -> None:
    """List cards, filtered, sorted and cut to the columns you ask for.

    Examples:
      archdb list -w 'year>=2024' -w 'attention=gqa' -w 'vocab_size>100k'
      archdb list -w 'norm=rmsnorm and activation in (swiglu,geglu)'
      archdb list --family llama-2 -c id,d_model,d_ff_ratio --json
      archdb list -w 'layer_pattern~local' -c id,layer_pattern,window --csv
      archdb list --sort -params --limit 10
      archdb list -w 'year>=2025' -c id,active_ratio,kv_bytes --context 32768

    Fields: card paths (norm.type, training.z_loss), short names
    (activation, params, attention, year) and derived figures
    (d_ff_ratio, aspect_ratio, params_exact, active_ratio, kv_bytes): see
    `archdb fields`. kv_bytes is the KV cache per token of an 8,192-token
    sequence at 2 bytes per element unless --context / --bytes-per-element
    say otherwise. A boolean reads as trends spells it too (moe=dense is
    moe=false). A null value (unknown, or unused) matches only `=null`.
    --json prints whole cards (with their derived figures), or with
    --columns flat rows.
    """
    if as_json and as_csv:
        raise fail("choose one of --json and --csv", EXIT_USAGE)
    spec = query.Query(
        query.parse_where(where or []),
        family or [],
        query.parse_sort(sort),
        limit,
        kv_context=context,
        kv_bytes_per_element=bytes_per_element,
    )
    cols = query.parse_columns(columns)
    source: Snapshot | Catalogue
    if context is None and bytes_per_element is None:  # the snapshot's KV cache figures
        source = snapshot(catalogue)
        query.check_families(spec, source.largest)
        found = query.filtered(source.rows(), spec)
    else:
        source = load(catalogue)
        found = query.matching(source.cards, spec, cols)
    selected = found[:limit] if limit is not None else found
    rows = query.project(selected, cols)
    total = len(source)
    if as_json and columns is None:  # whole cards, as `show --json` prints one
        print_json(_records(source, [r["id"] for r in selected]))
    elif as_json:
        print_json(rows)
    elif as_csv:
        _write_csv(rows, [c.header for c in cols])
    else:
        title = (
            f"{len(rows)} of {len(found)} matching ({total} cards)"
            if len(rows) < len(found)
            else f"{len(rows)} of {total} cards"
        )
        if any(c.field.name == "kv_cache_bytes_per_token" for c in cols):
            title += (
                f"; KV cache per token at {number_text(context or cv.DEFAULT_KV_CONTEXT)} tokens, "
                f"{bytes_per_element or cv.DEFAULT_KV_DTYPE_BYTES:g} bytes per element"
            )
        grid = _table_of_rows(rows, cols, title)
        print_grid(grid, lambda: _rich_rows(grid, cols))


def _records(source: Snapshot | Catalogue, ids: list[str]) -> list[dict[str, Any]]:
    """The cards' records as `show --json` prints them: the snapshot's, or made from cards."""
    if isinstance(source, Snapshot):
        return [view["record"] for view in source.views(ids)]
    return card_records([source.resolve(i) for i in ids])


def _write_csv(rows: list[dict[str, Any]], headers: list[str]) -> None:
    writer = csv.DictWriter(sys.stdout, fieldnames=headers, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


# --- show ---------------------------------------------------------------------------


def show(
    card_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="Card id, or a family (its largest).", autocompletion=complete_card
        ),
    ],
    context: ContextOption = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: BytesOption = cv.DEFAULT_KV_DTYPE_BYTES,
    as_json: JsonFlag = False,
    catalogue: CataloguePath = None,
) -> None:
    """Show one card: its fields, derived figures, sources and notes.

    Examples:
      archdb show gemma-2-9b
      archdb show llama-2          (a family: its largest model)
      archdb show mistral-7b --context 32768 --bytes-per-element 1
      archdb show gpt-3-175b --json | jq .derived.kv_cache_bytes_per_token
    """
    if (context, bytes_per_element) == DEFAULT_KV:
        snap = snapshot(catalogue)
        view = snap.view(snap.resolve(card_id))
    else:
        (view,) = card_views([load(catalogue).resolve(card_id)], context, bytes_per_element)
    record = view["record"]
    if as_json:
        print_json(record)
        return
    console.print(_card_heading(record))
    console.print(_fields_table(view["fields"]))
    _print_secondary(view["fields"])
    derived = [(k, format_value(v, k)) for k, v in record["derived"].items()]
    console.print(_pairs_table("Derived figures", derived))
    fidelity = record["fidelity"]
    why = f" ({fidelity['why']})" if fidelity["why"] else ""
    say(f"Fidelity: {fidelity['level']}{why}")
    _print_sources(record["sources"])
    if record["notes"]:
        console.print(_pairs_table("Notes", list(record["notes"].items())))


def _card_heading(record: dict[str, Any]) -> Text:
    params = format_value(record["params_published"], "params")
    weights = "open weights" if record["open_weights"] else "closed weights"
    variant = " · research variant" if record["research_variant"] else ""
    return styled(
        (record["name"], "bold"),
        f" ({record['id']}) · family {record['family']} · {record['organization']} · "
        f"released {record['release_date']} · {weights} · {params} parameters published"
        f"{variant}",
    )


def _fields_table(lines: list[dict[str, Any]]) -> Table:
    """The card's fields (archdb.views.field_lines): nulls say what they mean, inherited
    and mirror-only values are marked."""
    from rich.table import Table

    table = Table("field", "value", title="Card", title_justify="left", title_style="bold")
    for line in lines:
        shown = format_value(line["value"], line["column"])
        if line["value"] is None:
            table.add_row(line["field"], styled((line["null"], "dim")))
        elif line["inherited_from"] is not None:
            mark = f" [inherited from {line['inherited_from']}]"
            table.add_row(line["field"], styled(shown, (mark, "yellow")))
        elif line["secondary"] is not None:
            mark = f" [{line['secondary']} only]"
            table.add_row(line["field"], styled(shown, (mark, "yellow")))
        else:
            table.add_row(line["field"], shown)
    return table


def _print_secondary(lines: list[dict[str, Any]]) -> None:
    """Say which values no official source covers: those marked [mirror only] rest on a
    copy of the official file, [derived only] on a file made from it, [defaults only] on
    a library's defaults (each source names what it copies or derives from)."""
    kinds = [line["secondary"] for line in lines if line["secondary"] is not None]
    if kinds:
        marks = ", ".join(f"[{k} only]" for k in dict.fromkeys(kinds))
        say(
            (f"{len(kinds)} value(s) marked {marks}", "yellow"),
            " rest only on secondary sources (a copy of the official file, a file derived "
            "from it, or a library's defaults): no official artifact covers them.",
        )


def _pairs_table(title: str, pairs: list[tuple[str, str]]) -> Table:
    from rich.table import Table

    table = Table("name", "value", title=title, title_justify="left", title_style="bold")
    for name, value in pairs:
        table.add_row(name, value)
    return table


def _print_sources(sources: list[dict[str, Any]]) -> None:
    """Sources as lines, not a table: a URL must never be cut."""
    console.print(styled(("Sources", "bold")))
    for n, src in enumerate(sources, 1):
        where = f" ({src['locator']})" if src["locator"] else ""
        console.print(f"  {n}. {src['kind']}: {src['title']}{where}")
        console.print(f"     {src['url']}", soft_wrap=True)
        console.print(f"     supports: {', '.join(src['supports'])}")


# --- compare ------------------------------------------------------------------------


def compare(
    card_ids: Annotated[
        list[str],
        typer.Argument(metavar="ID ID...", help="Two or more cards.", autocompletion=complete_card),
    ],
    only_diff: Annotated[
        bool, typer.Option("--only-diff", "-d", help="Only rows that differ.")
    ] = False,
    context: ContextOption = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: BytesOption = cv.DEFAULT_KV_DTYPE_BYTES,
    as_json: JsonFlag = False,
    catalogue: CataloguePath = None,
) -> None:
    """Compare cards side by side: differences highlighted, numbers as ratios to the first.

    No ratio is printed where one means nothing: years and dates, bookkeeping counts
    (values_sourced), epsilons, and d_ff between a dense model and a MoE (one expert's
    width against a dense layer's). The KV cache is per token of a --context-token
    sequence (default 8,192) at --bytes-per-element (default 2).

    Examples:
      archdb compare llama-2-7b gemma-2-9b
      archdb compare gpt-3-175b llama-2-70b gemma-2-27b --only-diff
      archdb compare llama-2-7b mistral-7b --context 32768
      archdb compare llama-2-7b gemma-2-9b --json
    """
    if len(card_ids) < 2:
        raise fail("compare needs at least two cards", EXIT_USAGE)
    if (context, bytes_per_element) == DEFAULT_KV:
        snap = snapshot(catalogue)
        ids = [snap.resolve(i) for i in card_ids]
        rows = compare_rows(snap.rows_of(ids))
    else:
        cat = load(catalogue)
        cards = [cat.resolve(i) for i in card_ids]
        ids, rows = [c.id for c in cards], comparison(cards, context, bytes_per_element)
    if as_json:
        print_json(
            {
                "cards": ids,
                "kv_cache_context": context,
                "kv_cache_bytes_per_element": bytes_per_element,
                "rows": rows,
            }
        )
        return
    shown = [r for r in rows if r["differs"] or not only_diff]
    title = (
        f"{_COMPARISON_TITLE}; KV cache per token at {number_text(context)} tokens, "
        f"{bytes_per_element:g} bytes per element"
    )
    print_grid(_comparison_grid(ids, shown, title), lambda: _comparison_table(ids, shown, title))


def _comparison_cells(row: dict[str, Any]) -> tuple[str, list[str], list[str]]:
    """A comparison row's label, its values and their ratios to the first card, as text."""
    texts = [format_value(v, row["field"]) for v in row["values"]]
    ratios = [
        f" ×{r:.3g}" if i and r is not None and f"{r:.3g}" != "1" else ""
        for i, r in enumerate(row["ratios"])
    ]
    return row["field"].removeprefix("architecture."), texts, ratios


_COMPARISON_TITLE = "Comparison (× = ratio to the first card)"


def _comparison_grid(ids: list[str], rows: list[dict[str, Any]], title: str) -> Grid:
    """The comparison as plain cells."""
    plain: list[list[str]] = []
    for row in rows:
        label, texts, ratios = _comparison_cells(row)
        plain.append([label, *(t + r for t, r in zip(texts, ratios, strict=True))])
    headers = ["field", *ids]
    return Grid(title, headers, [False, *(True for _ in ids)], plain)


def _comparison_table(ids: list[str], rows: list[dict[str, Any]], title: str) -> Table:
    """The comparison as a Rich table, differences highlighted."""
    from rich.table import Table

    table = Table("field", title=title, title_justify="left", title_style="bold")
    for card_id in ids:
        table.add_column(card_id, justify="right", overflow="fold")
    for row in rows:
        label, texts, ratios = _comparison_cells(row)
        style = "yellow" if row["differs"] else ""
        cells = [
            styled((t, style), (r, "dim")) if style and i else styled(t + r)
            for i, (t, r) in enumerate(zip(texts, ratios, strict=True))
        ]
        table.add_row(styled((label, "bold yellow" if style else "")), *cells)
    return table


# --- export -------------------------------------------------------------------------

_FORMATS = ("csv", "json", "parquet")


def export(
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-F",
            help="csv, json or parquet (default: from -o, else csv).",
            autocompletion=lambda: list(_FORMATS),
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="File to write (parquet needs one); default stdout.",
            dir_okay=False,
        ),
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option("--where", "-w", help="Only matching cards.", autocompletion=complete_field),
    ] = None,
    family: Annotated[
        list[str] | None,
        typer.Option("--family", "-f", help="Only this family.", autocompletion=complete_family),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace OUTPUT if it exists (never the catalogue).")
    ] = False,
    catalogue: CataloguePath = None,
) -> None:
    """Export the catalogue as one flat table: card fields and derived figures.

    Columns are the reports' view (archdb.table): dotted card paths and
    derived names (year, d_ff_ratio, params_exact, ...).

    Examples:
      archdb export -o catalogue.csv
      archdb export --format json | jq '.[].params_exact'
      archdb export -o catalogue.parquet --where 'year>=2023'
    """
    fmt = fmt or (output.suffix.lstrip(".") if output and output.suffix else "csv")
    if fmt not in _FORMATS:
        raise fail(f"unknown format {fmt!r}: choose csv, json or parquet", EXIT_USAGE)
    if fmt == "parquet" and output is None:
        raise fail("parquet is binary: give a file with -o", EXIT_USAGE)
    if output is not None:
        check_new_file(output, force=force, protected=[resolve_catalogue(catalogue)])
    conditions = query.parse_where(where or [])
    cat = load(catalogue)
    chosen = query.select(cat.cards, query.Query(conditions, family or []), columns=[])
    ids = {r["id"] for r in chosen}
    frame = _frame([c for c in cat if c.id in ids])
    if output is None:
        _write_frame(frame, fmt, sys.stdout)
        return
    buffer = io.BytesIO()
    _write_frame(frame, fmt, buffer)
    with writing(output):  # a link at the path is replaced, never written through
        files.write_output(output, buffer.getvalue())
    say(f"wrote {len(frame)} cards to {output}", err=True)


def _frame(cards: list[Card]) -> Any:
    from archdb.table import catalogue_frame  # pandas: imported only by export

    return catalogue_frame(cards)


def _write_frame(frame: Any, fmt: str, out: Any) -> None:
    """The frame as csv, json or parquet to ``out`` (stdout text, or a binary file)."""
    if fmt == "parquet":
        frame.to_parquet(out, index=False)
        return
    if fmt == "json":
        text = frame.to_json(orient="records", indent=2, force_ascii=False) + "\n"
    else:
        text = frame.to_csv(index=False)
    if out is sys.stdout:
        out.write(visible(text) if out.isatty() else text)
    else:
        out.write(text.encode("utf-8"))


# --- fields -------------------------------------------------------------------------


def fields(as_json: JsonFlag = False) -> None:
    """List every field --where, --sort and --columns accept, with its kind and values.

    Examples:
      archdb fields
      archdb fields --json | jq '.[] | select(.kind == "enum")'
    """
    specs = list(query.fields().values())
    if as_json:
        print_json(
            [
                {
                    "field": s.name,
                    "name": query.display_name(s.name),
                    "kind": s.kind,
                    "choices": list(s.choices),
                    "description": s.description,
                }
                for s in specs
            ]
        )
        return
    names = [query.display_name(s.name) for s in specs]
    meanings = [", ".join(s.choices) if s.choices else s.description for s in specs]
    name_width = max(map(len, names))
    column_width = max(len(s.name) for s in specs)
    if console.is_terminal and console.width < name_width + column_width + 60:
        _print_field_list(names, specs, meanings)
        return
    # The names are what users type: never cut.
    from rich.table import Table

    table = Table(title="Queryable fields", title_justify="left", title_style="bold")
    table.add_column("name", min_width=name_width, no_wrap=True)
    table.add_column("column", min_width=column_width, no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("values / meaning", min_width=40, overflow="fold")
    for name, s, meaning in zip(names, specs, meanings, strict=True):
        table.add_row(name, s.name, s.kind, meaning)
    print_table(table, name_width + column_width + 80)


def _print_field_list(names: list[str], specs: list[FieldSpec], meanings: list[str]) -> None:
    """Fields for a narrow terminal: name, column and kind on a line, the meaning below."""
    from rich.padding import Padding

    console.print(styled(("Queryable fields", "bold")))
    for name, s, meaning in zip(names, specs, meanings, strict=True):
        console.print(styled((name, "bold"), f"  {s.name}  ", (s.kind, "dim")), soft_wrap=True)
        if meaning:
            console.print(Padding(styled(meaning), (0, 0, 0, 4)))


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command("list")(list_cards)
    app.command()(show)
    app.command()(compare)
    app.command()(export)
    app.command()(fields)
