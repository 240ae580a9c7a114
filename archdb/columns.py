"""The table's columns as plain data: what each holds, and how its values print.

The query commands read the catalogue's table from a plain-data snapshot
(``archdb.snapshot``) and must not import pydantic or the schema to parse a ``--where``,
so the columns' facts live here as plain data. The columns' names, kinds and choices come
from the schema: ``columns.json`` beside this module is generated from it
(``archdb.table.write_column_file``), and a test fails when it is not current.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

Row = dict[str, Any]

COLUMNS_FILE = Path(__file__).with_name("columns.json")


@dataclass(frozen=True)
class FieldSpec:
    """One queryable column: its table name, value kind and allowed values."""

    name: str  # the column in archdb.table: a dotted card path, or a derived name
    kind: str  # int, float, bool, str, enum, date or list
    choices: tuple[str, ...] = ()  # allowed values of an enum (or of a list's entries)
    description: str = ""
    derived: bool = False  # computed from the card (archdb.table.DERIVED_COLUMNS), not stored

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def ordered(self) -> bool:
        return self.numeric or self.kind == "date"


@cache
def fields() -> dict[str, FieldSpec]:
    """Every queryable column by its table name, in table order (from ``columns.json``)."""
    data = json.loads(COLUMNS_FILE.read_text(encoding="utf-8"))
    return {
        name: FieldSpec(name, kind, tuple(choices), description, derived)
        for name, kind, choices, description, derived in data["columns"]
    }


def columns_json(specs: Sequence[FieldSpec]) -> str:
    """The text of ``columns.json`` for these columns."""
    rows = [[s.name, s.kind, list(s.choices), s.description, s.derived] for s in specs]
    lines = ",\n".join("    " + json.dumps(r, ensure_ascii=False) for r in rows)
    return (
        '{\n  "generated_by": "archdb.table.write_column_file (from the schema)",\n'
        f'  "columns": [\n{lines}\n  ]\n}}\n'
    )


# Size bands of exact parameters (experts included): (label, low, high), low <= p < high.
SIZE_BANDS: tuple[tuple[str, float, float], ...] = (
    ("<1B", 0.0, 1e9),
    ("1–10B", 1e9, 1e10),
    ("10–100B", 1e10, 1e11),
    (">100B", 1e11, float("inf")),
)


def size_band(params: float | None) -> str | None:
    """The band of an exact parameter count (None when unknown)."""
    if params is None:
        return None
    return next((label for label, low, high in SIZE_BANDS if low <= params < high), None)


def number_text(value: float) -> str:
    """A number as the CLI and the reports print it: whole numbers with thousands
    separators from 10,000 up (4096 and the year 2024 stay as they are, 11,008 and
    256,000 get them), fractions to three significant figures (0.286, 2.69, 85.3), and
    fractions of 1,000 or more whole (1,234.5 -> 1235)."""
    if isinstance(value, float) and not value.is_integer():
        if abs(value) < 1000:
            return f"{value:.3g}"
        value = round(value)
    whole = int(value)
    return f"{whole:,}" if abs(whole) >= 10_000 else str(whole)


# --- values for people (the CLI and the site print them alike) ---------------------------

_COUNTS = ("params", "tokens", "flops")  # columns holding big counts: 175B, 300B


def format_value(value: Any, column: str = "") -> str:
    """A value as every command prints it: big counts with units (175B, 512 KiB), other
    numbers as ``archdb.table.number_text`` writes them (separators from 10,000 up), a
    boolean column in the words trends uses for it (moe / dense), else yes / no."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        words = BOOL_LABELS.get(column)
        return (words[0] if value else words[1]) if words else ("yes" if value else "no")
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e18:
        value = int(value)  # a whole count computed as a float (bytes, FLOPs)
    if isinstance(value, int) and "bytes" in column:
        return _human(value, 1024, ("B", "KiB", "MiB", "GiB"))
    if isinstance(value, int) and any(word in column for word in _COUNTS):
        return _human(value, 1000, ("", "K", "M", "B", "T"))
    if isinstance(value, int | float) and column not in ("year", "release_date"):
        return number_text(value)
    return str(value)


def _human(value: int, base: int, units: Sequence[str]) -> str:
    scaled, unit = float(value), units[0]
    for unit in units:
        if abs(scaled) < base or unit == units[-1]:
            break
        scaled /= base
    text = f"{scaled:.3g}" if unit != units[0] else number_text(value)
    return f"{text}{'' if base == 1000 else ' '}{unit}".strip()


# The words a boolean column's values are counted as by ``archdb trends`` (true, false):
# ``archdb list --where`` reads them too, so ``moe=dense`` and ``moe=false`` are one query.
BOOL_LABELS: dict[str, tuple[str, str]] = {
    "gated": ("gated", "non-gated"),
    "architecture.parallel_layers": ("parallel", "serial"),
    "architecture.tied_embeddings": ("tied", "untied"),
    "z_loss_used": ("z-loss", "none"),
    "moe": ("moe", "dense"),
    "dropout_used": ("dropout", "none"),
    "weight_decay_used": ("weight decay", "none"),
    "mtp_used": ("mtp", "none"),
    "sinks_used": ("sinks", "none"),
    "sparse_attention_used": ("sparse", "dense"),
    "kv_sharing_used": ("shared", "none"),
}

# The analytic formula's counts of a card (archdb.measure.analytic.derived_figures).
FORMULA_COUNTS = (
    "params_exact",
    "params_non_embedding",
    "params_active",
    "params_mtp",
    "params_with_mtp",
    "kv_cache_bytes_per_token",
    "flops_per_token",
    "flops_per_token_mtp",
)

# Derived columns left null by ``card_row(counts=False)``: the formula's counts and the
# columns computed from them.
COUNTED_COLUMNS = frozenset({*FORMULA_COUNTS, "norm_flops_share", "active_ratio", "size_band"})
