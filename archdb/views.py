"""What ``show`` and ``compare`` present, as plain data the CLI only renders.

A card's record is its fields, its derived figures (the KV cache at a stated context and
element size), its fidelity level and the values resting only on mirror sources. A
comparison is one row per field with each card's value, whether they differ and each
value's ratio to the first card's. No torch, no Rich: the query commands stay quick.
"""

from __future__ import annotations

from typing import Any

from archdb import conventions as cv
from archdb import query
from archdb.fidelity import fidelities
from archdb.schema import Card, mirror_only_paths
from archdb.table import DERIVED_COLUMNS, FIELD_COLUMNS, catalogue_rows


def card_record(
    card: Card,
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
) -> dict[str, Any]:
    """The card as JSON-ready data, with its derived figures and verification level."""
    return card_records([card], context, bytes_per_element)[0]


def card_records(
    cards: list[Card],
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
) -> list[dict[str, Any]]:
    """``card_record`` of each card, judged and counted together: the caches are read
    once and written at most once for all of them, not once per card."""
    verified = fidelities(cards)
    rows = catalogue_rows(cards)
    return [
        {
            **card.model_dump(mode="json"),
            "derived": _derived(card, row, context, bytes_per_element),
            "fidelity": {"level": verified[card.id].level, "why": verified[card.id].why},
            "mirror_only": mirror_only_paths(card),
        }
        for card, row in zip(cards, rows, strict=True)
    ]


def derived_figures(
    card: Card,
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
) -> dict[str, Any]:
    """The card's derived figures, the KV cache at the stated length and element size
    (the counts from the figures cache where the same architecture was counted before)."""
    (row,) = catalogue_rows([card])
    return _derived(card, row, context, bytes_per_element)


def _derived(
    card: Card, row: dict[str, Any], context: int, bytes_per_element: float
) -> dict[str, Any]:
    out = {name: row[name] for name in DERIVED_COLUMNS if name not in ("year", "series")}
    if out["kv_cache_bytes_per_token"] is not None:
        if (context, bytes_per_element) != (cv.DEFAULT_KV_CONTEXT, cv.DEFAULT_KV_DTYPE_BYTES):
            from archdb.measure.analytic import cache_size  # the table has the default's

            size = cache_size(card.architecture, context, bytes_per_element)
            out["kv_cache_bytes_per_token"] = size.per_token
        out["kv_cache_context"] = context
        out["kv_cache_bytes_per_element"] = bytes_per_element
    return out


# Numbers a ratio says nothing about: calendar values, bookkeeping counts, epsilons.
_NO_RATIO = frozenset({"year", "values_sourced", "values_mirror_only"})
# A MoE's d_ff is one expert's width: no ratio to a dense model's, nor the reverse.
_PER_EXPERT = frozenset({"architecture.mlp.d_ff", "d_ff_ratio"})


def _ratio_means_something(column: str, first: Card, other: Card) -> bool:
    if column in _NO_RATIO or column.endswith("eps"):
        return False
    moe = (first.architecture.mlp.moe is None, other.architecture.mlp.moe is None)
    return column not in _PER_EXPERT or moe[0] == moe[1]


def comparison(
    cards: list[Card],
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
) -> list[dict[str, Any]]:
    """One row per field any card sets: the values, whether they differ, and each value
    divided by the first card's (None where undefined or meaningless: years, bookkeeping
    counts, epsilons, d_ff between a dense model and a MoE). The KV cache is per token of
    a ``context``-token sequence at ``bytes_per_element``."""
    rows = catalogue_rows(cards)
    if (context, bytes_per_element) != (cv.DEFAULT_KV_CONTEXT, cv.DEFAULT_KV_DTYPE_BYTES):
        from archdb.measure.analytic import cache_size  # the table has the default's

        for card, row in zip(cards, rows, strict=True):
            if row["kv_cache_bytes_per_token"] is not None:
                size = cache_size(card.architecture, context, bytes_per_element)
                row["kv_cache_bytes_per_token"] = size.per_token
    fields = query.fields()
    out = []
    for column in [*FIELD_COLUMNS, *DERIVED_COLUMNS]:
        if column in ("id", "series"):
            continue
        values = [r[column] for r in rows]
        if all(v is None for v in values):
            continue
        first = values[0]
        numeric = fields[column].numeric
        ratios = [
            v / first
            if numeric
            and v is not None
            and first
            and _ratio_means_something(column, cards[0], card)
            else None
            for v, card in zip(values, cards, strict=True)
        ]
        out.append(
            {
                "field": column,
                "values": values,
                "differs": len(set(map(repr, values))) > 1,
                "ratios": ratios,
            }
        )
    return out
