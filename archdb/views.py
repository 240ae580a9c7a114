"""What ``show`` and ``compare`` present, as plain data the CLI only renders.

A card's record is its fields, its derived figures (the KV cache at a stated context and
element size), its fidelity level and the values resting only on mirror sources; its view
adds the lines of its field table, each value with what a null means there, where an
inherited value comes from and whether it rests only on a mirror. A comparison is one row
per field with each card's value, whether they differ and each value's ratio to the first
card's. No torch, no Rich; the schema is imported only by the functions that take cards,
so a snapshot's plain rows compare without it (archdb.snapshot).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from archdb import conventions as cv
from archdb.columns import Row, fields

if TYPE_CHECKING:
    from archdb.schema import Card

DEFAULT_KV = (cv.DEFAULT_KV_CONTEXT, cv.DEFAULT_KV_DTYPE_BYTES)

# Card-level fields the heading of ``show`` states: not repeated in its field table.
HEADING_FIELDS = frozenset({"id", "name", "family", "organization", "release_date", "open_weights"})


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
    from archdb.fidelity import fidelities
    from archdb.schema import mirror_only_paths
    from archdb.table import catalogue_rows

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


def card_views(
    cards: list[Card],
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
) -> list[dict[str, Any]]:
    """What ``show`` prints of each card: its record and the lines of its field table."""
    records = card_records(cards, context, bytes_per_element)
    return [
        {"record": record, "fields": field_lines(card)}
        for card, record in zip(cards, records, strict=True)
    ]


def field_lines(card: Card) -> list[dict[str, Any]]:
    """The card's field table: each field by its path without ``architecture.``, its
    value as printed, or for a null what null means there ("unknown (see notes)", "not
    published", "not used"), the card it inherits the value from, and the secondary kind
    its sources rest on where no official source covers it (mirror, derived, defaults).
    Sub-fields of an unused feature and unset optional fields are left out; the
    heading's fields too."""
    from archdb.schema import SECONDARY_KINDS, inherited_paths, resting_kinds
    from archdb.table import FIELD_COLUMNS, card_row

    row = card_row(card, counts=False)  # the fields only: no counts to compute
    secondary = {p: k.value for p, k in resting_kinds(card).items() if k in SECONDARY_KINDS}
    inherited = inherited_paths(card)
    lines = []
    for column in FIELD_COLUMNS:
        value = row[column]
        if column in HEADING_FIELDS or (value is None and _inside_absent_feature(card, column)):
            continue
        lines.append(
            {
                "field": column.removeprefix("architecture."),
                "value": value,
                "column": column,
                "null": None if value is not None else _null_meaning(card, column),
                "inherited_from": inherited.get(column),
                "secondary": secondary.get(column),
            }
        )
    return lines


def _null_meaning(card: Card, column: str) -> str:
    """What null says here: unknown (a core value), unpublished (training) or unused."""
    from archdb.schema import null_means_unknown

    if null_means_unknown(card, column):
        return "unknown (see notes)"
    return "not published" if column.startswith("training.") else "not used"


def _inside_absent_feature(card: Card, column: str) -> bool:
    """Sub-fields of an unused feature (moe, latent) or unset optional fields are not shown."""
    parts = column.split(".")
    value: Any = card
    for part in parts[:-1]:
        value = getattr(value, part, None)
        if value is None:
            return column != ".".join(parts[: parts.index(part) + 1])
    owner = type(value)
    info = owner.model_fields.get(parts[-1]) if hasattr(owner, "model_fields") else None
    return info is not None and not info.is_required()


def _derived(card: Card, row: Row, context: int, bytes_per_element: float) -> dict[str, Any]:
    derived = [s.name for s in fields().values() if s.derived and s.name not in ("year", "series")]
    out = {name: row[name] for name in derived}
    if out["kv_cache_bytes_per_token"] is not None:
        out["kv_cache_bytes_per_token"] = _kv_bytes(card, row, context, bytes_per_element)
        out["kv_cache_context"] = context
        out["kv_cache_bytes_per_element"] = float(bytes_per_element)
    return out


def _kv_bytes(card: Card, row: Row, context: int, bytes_per_element: float) -> float | None:
    """The KV cache per token at this length and element size (the table has the
    default's)."""
    if (context, bytes_per_element) == DEFAULT_KV or row["kv_cache_bytes_per_token"] is None:
        return row["kv_cache_bytes_per_token"]
    from archdb.measure.analytic import cache_size

    return cache_size(card.architecture, context, bytes_per_element).per_token


# Numbers a ratio says nothing about: calendar values, bookkeeping counts, epsilons.
_NO_RATIO = frozenset({"year", "values_sourced", "values_mirror_only"})
# A MoE's d_ff is one expert's width: no ratio to a dense model's, nor the reverse.
_PER_EXPERT = frozenset({"architecture.mlp.d_ff", "d_ff_ratio"})


def _ratio_means_something(column: str, first: Row, other: Row) -> bool:
    if column in _NO_RATIO or column.endswith("eps"):
        return False
    return column not in _PER_EXPERT or first["moe"] == other["moe"]


def comparison(
    cards: list[Card],
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
) -> list[dict[str, Any]]:
    """``compare_rows`` of the cards' table rows, the KV cache per token of a
    ``context``-token sequence at ``bytes_per_element``."""
    from archdb.table import catalogue_rows

    rows = catalogue_rows(cards)
    for card, row in zip(cards, rows, strict=True):
        row["kv_cache_bytes_per_token"] = _kv_bytes(card, row, context, bytes_per_element)
    return compare_rows(rows)


def compare_rows(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One row per field any card sets: the values, whether they differ, and each value
    divided by the first card's (None where undefined or meaningless: years, bookkeeping
    counts, epsilons, d_ff between a dense model and a MoE)."""
    out = []
    for column, spec in fields().items():
        if column in ("id", "series"):
            continue
        values = [r[column] for r in rows]
        if all(v is None for v in values):
            continue
        first = values[0]
        ratios = [
            v / first
            if spec.numeric
            and v is not None
            and first
            and _ratio_means_something(column, rows[0], row)
            else None
            for v, row in zip(values, rows, strict=True)
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
