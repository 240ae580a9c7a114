"""Builder commands: build (a toy or the full size of a card) and flops.

Parse, call archdb.measure.summary, render. torch and fvcore are imported inside the
commands, so the other commands start without them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.tree import Tree

from archdb import conventions as cv
from archdb.columns import number_text

from .common import (
    EXIT_USAGE,
    BytesOption,
    CataloguePath,
    JsonFlag,
    console,
    fail,
    load,
    print_json,
    say,
    styled,
    writing,
)


class Size(StrEnum):
    """What `build` makes: the help lists these choices."""

    TOY = "toy"
    FULL = "full"


CardArg = Annotated[
    str, typer.Argument(metavar="ID", help="Card id, or a family (its largest model).")
]
MAX_TOY_SEQ_LEN = 8192  # a toy's position tables and scores grow with its context


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command()(build)
    app.command()(flops)
    app.command()(diagram)


def diagram(
    card_id: CardArg,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the SVG to this file (default: stdout)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace OUTPUT if it exists (never the catalogue).")
    ] = False,
    catalogue: CataloguePath = None,
) -> None:
    """Draw a card's architecture as SVG: embedding, layers by kind with counts, one block
    opened up (norms, attention, MLP or MoE), head.

    Examples:
      archdb diagram gemma-2-9b -o gemma-2-9b.svg
      archdb diagram nemotron-h-8b > nemotron.svg
    """
    from archdb import files
    from archdb.diagrams import diagram_svg
    from archdb.locations import resolve_catalogue
    from archdb.outputs import check_new_file

    if output is not None:
        check_new_file(output, force=force, protected=[resolve_catalogue(catalogue)])
    svg = diagram_svg(load(catalogue).resolve(card_id))
    if output is None:
        sys.stdout.write(svg)
        return
    with writing(output):  # a link at the path is replaced, never written through
        files.write_output(output, svg.encode("utf-8"))
    say(f"wrote {output}", err=True)


def _summarize(
    card_id: str,
    catalogue: Path | None,
    summarize: Callable[[Any], Any],
    render: Callable[[Any], None],
    as_json: bool,
) -> None:
    """Resolve the card, compute its summary and print it (errors: common.report_error)."""
    summary = summarize(load(catalogue).resolve(card_id))
    if as_json:
        print_json(summary.to_dict())
    else:
        render(summary)


def build(
    card_id: CardArg,
    size: Annotated[
        Size,
        typer.Option(
            "--size",
            help="toy: a CPU-sized model; full: the published size on the meta device (no memory).",
            case_sensitive=False,
        ),
    ] = Size.TOY,
    seq_len: Annotated[
        int | None,
        typer.Option(
            "--seq-len",
            min=1,
            max=MAX_TOY_SEQ_LEN,
            help="Toy: its context and the length fvcore checks the FLOPs at (default 64; "
            "windows and chunks keep their share of it). Full: the FLOP formula's length.",
        ),
    ] = None,
    weights: Annotated[
        Path | None,
        typer.Option(
            "--weights",
            metavar="DIR",
            help="Full size: load a transformers safetensors checkpoint directory into the "
            "model (on CPU) and report what was loaded.",
        ),
    ] = None,
    as_json: JsonFlag = False,
    catalogue: CataloguePath = None,
) -> None:
    """Build a card into a PyTorch model: modules, dims, exact parameters and FLOPs.

    Examples:
      archdb build gemma-2                 (a Gemma-2-like toy: the family's largest card)
      archdb build gemma-2 --seq-len 256   (the toy runs 256 tokens; windows scale with it)
      archdb build llama-3.1-405b --size full --json
      archdb build smollm2-135m --size full --weights ./SmolLM2-135M
    """
    if weights is not None and size is not Size.FULL:
        raise fail("--weights loads a released checkpoint: use it with --size full", EXIT_USAGE)
    from archdb.measure.summary import build_summary

    def summarize(card: Any) -> Any:
        summary = build_summary(card, size.value, seq_len)
        return summary if weights is None else _WithWeights(summary, _load(card, weights))

    _summarize(card_id, catalogue, summarize, _print_build, as_json)


class _WithWeights:
    """A build summary and what ``--weights`` loaded."""

    def __init__(self, summary: Any, loaded: dict) -> None:
        self.summary, self.loaded = summary, loaded

    def __getattr__(self, name: str) -> Any:
        return getattr(self.summary, name)

    def to_dict(self) -> dict:
        return self.summary.to_dict() | {"weights": self.loaded}


def _load(card: Any, directory: Path) -> dict:
    """Build the card on CPU and load the checkpoint; a bad checkpoint exits with code 1."""
    import archdb
    from archdb_hf.weights import WeightsError

    try:
        loaded = archdb.build(card, "full", weights=directory).archdb_loaded
    except WeightsError as exc:
        raise fail(f"{card.id}: {exc}") from None
    return {
        "directory": str(loaded.directory),
        "model_type": loaded.model_type,
        "tensors": loaded.tensors,
        "checkpoint_tensors": loaded.checkpoint_tensors,
        "elements": loaded.elements,
    }


def flops(
    card_id: CardArg,
    seq_len: Annotated[
        int | None,
        typer.Option(
            "--seq-len", min=1, help="Sequence length (default: min(2048, the card's context))."
        ),
    ] = None,
    toy_seq_len: Annotated[
        int | None,
        typer.Option(
            "--toy-seq-len",
            min=1,
            max=MAX_TOY_SEQ_LEN,
            help="Length of the toy's fvcore check (default 64).",
        ),
    ] = None,
    context: Annotated[
        int | None,
        typer.Option(
            "--context",
            min=1,
            help="KV cache: for a sequence of this many tokens (default: --seq-len if given, "
            "else 8,192).",
        ),
    ] = None,
    bytes_per_element: BytesOption = cv.DEFAULT_KV_DTYPE_BYTES,
    as_json: JsonFlag = False,
    catalogue: CataloguePath = None,
) -> None:
    """FLOPs per token of a card at full size, by operator class, with the toy's fvcore check.

    The KV cache is counted for the --context tokens, else the --seq-len the FLOPs are
    counted at, else 8,192 tokens; the output names the length.

    Examples:
      archdb flops llama-3-8b --seq-len 8192
      archdb flops mistral-7b --context 32768 --bytes-per-element 1
      archdb flops gemma-2-9b --json
    """
    from archdb.measure.summary import flops_summary

    def summarize(card: Any) -> Any:
        return flops_summary(
            card,
            seq_len,
            toy_seq_len=toy_seq_len,
            context=context or seq_len or cv.DEFAULT_KV_CONTEXT,
            bytes_per_element=bytes_per_element,
        )

    _summarize(card_id, catalogue, summarize, _print_flops, as_json)


# --- rendering -------------------------------------------------------------------------


def _print_build(s: Any) -> None:
    title = styled((s.id, "bold"), f" ({'toy' if s.size == 'toy' else 'full size, meta device'})")
    tree = Tree(title, highlight=False)
    for node in s.modules:
        _add_node(tree, node)
    console.print(tree)
    console.print(_pairs("Dims", [(k, _plain(v)) for k, v in s.dims.items()]))
    if s.scaling is not None:
        rows = [("rule", s.scaling["rule"])] + [("kept", k) for k in s.scaling["kept"]]
        rows += [("approximated", a) for a in s.scaling["approximated"]]
        console.print(_pairs("Scaling", rows))
    console.print(_params_table(s.params))
    console.print(_flops_table(s.flops))
    _print_routing(s)
    _print_assumptions(s.assumptions)
    loaded = getattr(s, "loaded", None)
    if loaded is not None:
        say(
            f"Weights: {number_text(loaded['tensors'])} tensors "
            f"({number_text(loaded['elements'])} values) "
            f"filled from {number_text(loaded['checkpoint_tensors'])} checkpoint tensors of "
            f"{loaded['directory']} (transformers {loaded['model_type']}); none left random"
        )


def _print_flops(s: Any) -> None:
    console.print(styled((s.id, "bold"), f": full size, {s.full.seq_len} tokens"))
    console.print(_flops_table(s.full))
    rows = [
        (
            "KV cache",
            f"{number_text(s.cache.total)} bytes for {number_text(s.cache.context)} tokens, "
            f"{number_text(s.cache.per_token)} per token, at {s.cache.bytes_per_element:g} "
            "bytes per element",
        ),
        ("parameters", f"{number_text(s.params.total)} (active {number_text(s.params.active)})"),
    ]
    if s.training_flops is not None:
        rows.append(
            (
                "training ~ 6ND",
                f"{s.training_flops:.3e} FLOPs ({number_text(s.training_tokens)} tokens, "
                "active parameters)",
            )
        )
    console.print(_pairs("Cache and training", rows))
    dims = ", ".join(f"{k} {v}" for k, v in s.toy.dims.items())
    console.print(styled(("toy check", "bold"), f" ({s.toy.flops.seq_len} tokens; dims {dims})"))
    console.print(_flops_table(s.toy.flops))
    _print_routing(s.toy)
    _print_assumptions(s.toy.assumptions)


def _print_routing(s: Any) -> None:
    if getattr(s, "routing", None):
        say(f"Routing: {s.routing}")


def _add_node(parent: Tree, node: dict) -> None:
    params = f" {number_text(node['params'])}" if node["params"] else ""
    branch = parent.add(styled(f"{node['name']}: {node['module']}", (params, "dim")))
    for child in node["children"]:
        _add_node(branch, child)


def _flops_table(f: Any) -> Table:
    table = Table(
        title=f"FLOPs per token at {f.seq_len} tokens",
        box=box.SIMPLE_HEAD,
        title_justify="left",
        caption=f.convention,
        caption_justify="left",
    )
    table.add_column("class")
    table.add_column("dense kernel", justify="right")
    table.add_column("causal (useful)", justify="right")
    if f.fvcore is not None:
        table.add_column("fvcore (toy)", justify="right")
    for cls, value in f.by_class.items():
        row = [cls, _num(value), _num(f.by_class_causal[cls])]
        if f.fvcore_by_class is not None:
            row.append(_num(f.fvcore_by_class.get(cls, 0.0)))
        table.add_row(*row)
    total = ["total", _num(f.analytic), _num(f.analytic_causal)]
    if f.fvcore is not None:
        total.append(f"{_num(f.fvcore)} ({f.relative_difference:+.2e})")
    table.add_row(*total, style="bold")
    return table


def _params_table(p: Any) -> Table:
    rows = [
        ("total", f"{number_text(p.total)}"),
        ("non-embedding", f"{number_text(p.non_embedding)}"),
        ("active per token", f"{number_text(p.active)}"),
    ]
    if p.published:
        rows.append(
            (
                "published",
                f"{number_text(p.published)} ({p.relative_difference:+.2%} exact vs published)",
            )
        )
    rows.append(("convention", p.convention))
    return _pairs("Parameters", rows)


def _pairs(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for k, v in rows:
        table.add_row(k, v)
    return table


def _print_assumptions(assumptions: tuple[str, ...]) -> None:
    for a in assumptions:
        console.print(styled(("assumed", "yellow"), f" {a}"))


def _plain(value: object) -> str:
    return number_text(value) if isinstance(value, int) else str(value)


def _num(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:,.3f}{unit}"
    return f"{x:,.1f}"
