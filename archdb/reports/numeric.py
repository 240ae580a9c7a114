"""Numeric choices by release year: how many models publish a value, and its spread.

``archdb trends d_ff_ratio --where activation=swiglu`` answers "what d_ff/d_model do
SwiGLU models use, and is it moving?" with the count, range, quartiles and median of
each year's known values. Plain Python over ``archdb.table`` rows (no pandas), so the
command stays quick; quartiles interpolate linearly between order statistics, as pandas'
``quantile`` (and so the distributions report) does. Research variants are left out and
nulls counted apart, as in the adoption trends (``trend_rows``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from archdb.query import FieldSpec, QueryError, display_name, resolve_field
from archdb.table import DERIVED_COLUMNS, Row


@dataclass(frozen=True)
class Spread:
    """Count, range and quartiles of some values."""

    n: int
    low: float
    q1: float
    median: float
    q3: float
    high: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "min": self.low,
            "q1": self.q1,
            "median": self.median,
            "q3": self.q3,
            "max": self.high,
        }


def spread(values: Sequence[float]) -> Spread | None:
    """The spread of ``values``; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        q1 = q3 = ordered[0]
    else:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return Spread(len(ordered), ordered[0], q1, statistics.median(ordered), q3, ordered[-1])


@dataclass(frozen=True)
class NumericTrend:
    """One numeric column's spread by release year."""

    field: FieldSpec
    years: tuple[int, ...]  # the years shown (every year with a model, in the window)
    by_year: Mapping[int, Spread | None]  # year -> spread of the known values
    total: Mapping[int, int]  # year -> models
    unknown: tuple[str, ...]  # ids of the shown years' models whose value is null
    overall: Spread | None  # over every shown year

    @property
    def title(self) -> str:
        """The column as typed, with what a derived one means (d_ff_ratio: d_ff / d_model)."""
        meaning = DERIVED_COLUMNS.get(self.field.name, (None, ""))[1].split(" (")[0]
        name = display_name(self.field.name)
        return f"{name} = {meaning}" if meaning else name

    def known(self, year: int) -> int:
        found = self.by_year.get(year)
        return found.n if found else 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for --json: each year's known and total counts and its spread."""
        return {
            "field": self.field.name,
            "years": {
                str(y): {
                    "known": self.known(y),
                    "models": self.total.get(y, 0),
                    **(s.as_dict() if (s := self.by_year.get(y)) else {}),
                }
                for y in self.years
            },
            "overall": self.overall.as_dict() if self.overall else None,
            "unknown": list(self.unknown),
        }


def numeric_field(name: str) -> FieldSpec | None:
    """The numeric column ``name`` spells (``d_ff_ratio``, ``vocab_size``), else None."""
    try:
        spec = resolve_field(name)
    except QueryError:
        return None
    return spec if spec.numeric and spec.name != "year" else None


def numeric_trend(
    rows: Iterable[Row], spec: FieldSpec, since: int | None = None, until: int | None = None
) -> NumericTrend:
    """The spread of ``spec``'s column per release year over ``rows`` (from
    ``select_trend_rows``), showing the years from ``since`` to ``until``."""
    values: dict[int, list[float]] = {}
    total: dict[int, int] = {}
    unknown: list[str] = []
    for row in sorted(rows, key=lambda r: (r["release_date"], r["id"])):
        year = row["year"]
        if (since is not None and year < since) or (until is not None and year > until):
            continue
        total[year] = total.get(year, 0) + 1
        value = row.get(spec.name)
        if value is None:
            unknown.append(row["id"])
        else:
            values.setdefault(year, []).append(float(value))
    years = tuple(sorted(total))
    return NumericTrend(
        field=spec,
        years=years,
        by_year={y: spread(values.get(y, [])) for y in years},
        total=total,
        unknown=tuple(unknown),
        overall=spread([v for y in years for v in values.get(y, [])]),
    )
