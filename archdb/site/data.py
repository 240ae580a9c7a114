"""What the site shows about each card, as plain data: computed here, rendered in pages.

- ``fidelity``: whether the project's tests compare the card's parameter count with
  Hugging Face transformers (tests/test_params_vs_hf.py), and if not, why not.
- ``toy_tree``: the toy ``archdb build`` builds, as an indented text tree.
- ``compare_data``: every card's comparable values, for the comparison page's script.
- ``cache_at_context``: the cache a decode step reads at the card's own context.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import astuple, dataclass
from typing import Any

from archdb.builder.model import build_model, module_tree
from archdb.builder.shrink import shrink
from archdb.columns import Row, format_value
from archdb.diagrams import summary as diagram_summary
from archdb.plan.layout import BuildError, fill_unknowns
from archdb.schema import Architecture, AttentionVariant, Card, Source
from archdb.table import DERIVED_COLUMNS, FIELD_COLUMNS, card_row

# --- sources ---------------------------------------------------------------------------


def covers(source: Source, path: str) -> bool:
    """A source supports a field if it lists the field or one of its dotted prefixes."""
    return any(path == s or path.startswith(s + ".") for s in source.supports)


def supporting(card: Card, path: str) -> list[int]:
    """The 1-based numbers of the card's sources that support ``path``."""
    return [n for n, src in enumerate(card.sources, 1) if covers(src, path)]


# --- the cache at the card's own context -------------------------------------------------


def keeps_state(arch: Architecture) -> bool:
    """Whether some layer keeps a fixed-size recurrent state (a state-space or
    linear-attention mixer) in place of, or beside, a per-token cache."""
    linear = arch.attention.variant is AttentionVariant.LINEAR
    return linear or any(kind.recurrent is not None for kind in arch.attention.layer_pattern)


def cache_at_context(card: Card, dtype_bytes: int) -> float | None:
    """Bytes of K/V cache and recurrent state one sequence holds at the card's own
    context (windowed layers: their window); None without a context or sizes."""
    from archdb.measure.decode import cache_bytes

    context = card.architecture.context_length
    if not context:
        return None
    try:
        return cache_bytes(fill_unknowns(card.architecture)[0], context, dtype_bytes)
    except (BuildError, ValueError, ArithmeticError):
        return None


# --- the toy's module tree -------------------------------------------------------------


@dataclass(frozen=True)
class ToyTree:
    text: str | None  # the tree, or None when the card cannot be built
    rule: str  # the scaling rule, or why there is no toy


def toy_trees(cards: Iterable[Card]) -> dict[str, ToyTree]:
    """Each card's ``toy_tree`` by id, from the cache (archdb.cache) where the same
    architecture was built by the same code and torch before."""
    from importlib.metadata import version

    from archdb import cache

    torch_version = version("torch")
    cards = list(cards)
    texts: dict[str, str] = {}  # a family's sizes often shrink to one toy: built once
    entries = cache.looked_up(
        cache.read_toy_trees,
        cache.write_toy_trees,
        ((cache.toy_tree_key(card.architecture, torch_version), card) for card in cards),
        lambda card: list(astuple(toy_tree(card, texts))),
    )
    return {
        card.id: ToyTree(text, str(rule)) for card, (text, rule) in zip(cards, entries, strict=True)
    }


def toy_tree(card: Card, texts: dict[str, str] | None = None) -> ToyTree:
    """The toy of ``archdb build ID``, its modules as an indented tree. Built on the meta
    device: the tree needs shapes only, and initialising weights (thousands of toy experts)
    would cost most of the site's build time. ``texts``: trees already printed, by toy
    architecture (a tree depends on the toy alone), read and filled."""
    try:
        toy = shrink(fill_unknowns(card.architecture)[0])
        key = toy.arch.model_dump_json()
        if texts is not None and key in texts:
            return ToyTree(texts[key], toy.rule)
        model = build_model(toy.arch, device="meta")
    except (BuildError, ValueError) as exc:
        return ToyTree(None, f"not built: {exc}")
    lines: list[str] = []
    _tree_lines(module_tree(model), "", lines)
    text = "\n".join(lines)
    if texts is not None:
        texts[key] = text
    return ToyTree(text, toy.rule)


def _tree_lines(nodes: list[dict], prefix: str, lines: list[str]) -> None:
    for i, node in enumerate(nodes):
        last = i == len(nodes) - 1
        params = f"  ({node['params']:,} params)" if node["params"] else ""
        lines.append(
            f"{prefix}{'└── ' if last else '├── '}{node['name']}: {node['module']}{params}"
        )
        _tree_lines(node["children"], prefix + ("    " if last else "│   "), lines)


# --- comparison ------------------------------------------------------------------------


def compare_fields() -> list[str]:
    """The rows of the comparison, as in ``archdb compare``: card fields, then derived."""
    return [c for c in [*FIELD_COLUMNS, *DERIVED_COLUMNS] if c not in ("id", "series")]


def compare_data(cards: Iterable[Card], rows: Iterable[Row] | None = None) -> dict[str, Any]:
    """Each card's shown value and, for numbers, raw value (the script computes ratios);
    ``rows``: the cards' ``card_row`` rows, in order, when already made."""
    fields = compare_fields()
    numeric = {c for c in fields if _is_number_column(c) and c != "year"}
    out: dict[str, Any] = {"fields": fields, "numeric": sorted(numeric), "cards": {}}
    cards = list(cards)
    rows = [card_row(card) for card in cards] if rows is None else list(rows)
    for card, row in zip(cards, rows, strict=True):
        out["cards"][card.id] = {
            "name": card.name,
            "label": f"{card.name} ({card.organization}, {card.year})",
            "diagram": diagram_summary(card),
            "shown": [format_value(row[c], c) if row[c] is not None else None for c in fields],
            "raw": [row[c] if c in numeric else None for c in fields],
        }
    return out


def _is_number_column(column: str) -> bool:
    kind = FIELD_COLUMNS.get(column) or DERIVED_COLUMNS.get(column, (None,))[0]
    return kind in (int, float)
