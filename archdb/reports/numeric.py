"""Numeric choices by release year: how many models publish a value, and its spread.

``archdb trends d_ff_ratio --where activation=swiglu`` answers "what d_ff/d_model do
SwiGLU models use, and is it moving?" with the count, range, weighted quartiles and median
of each year's known values. Plain Python over ``archdb.table`` rows (no pandas), so the
command stays quick. Research variants are left out and nulls counted apart, as in the
adoption trends (``trend_rows``).

Counting follows ``archdb.reports.weighting``: under ``family`` weighting (the default)
each family weighs 1 in a year, split among its cards with a known value; under ``card``
each card weighs 1, and the quartiles are pandas' (linear between order statistics). A
year whose value is known for under half of its families shows no spread (too few known).

Shape rules drift with size and with the MLP: values can be split by size band (exact
parameters: <1B, 1–10B, 10–100B, >100B) and by dense vs MoE. ``d_ff_ratio`` is always
split by MLP: a MoE card's d_ff is one expert's width, never pooled with dense widths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from archdb.columns import SIZE_BANDS, FieldSpec, Row, size_band
from archdb.query import QueryError, display_name, resolve_field
from archdb.reports.weighting import (
    DEFAULT_WEIGHTING,
    Cutoff,
    Tally,
    WeightedSpread,
    Weighting,
    card_weights,
    cutoff,
    describe,
    tally,
    too_few_known,
    weighted_spread,
)

DENSE, MOE, EXPERT = "dense", "MoE", "MoE, one expert"
# Columns whose MoE value is a per-expert figure: always split dense / MoE.
PER_EXPERT_COLUMNS = frozenset({"d_ff_ratio", "architecture.mlp.d_ff"})
SIZE_COLUMN = "params_exact"  # the column the bands read: trends must compute it


def mlp_kind(row: Row) -> str:
    return MOE if row.get("moe") else DENSE


@dataclass(frozen=True)
class NumericTrend:
    """One numeric column's weighted spread by release year, over one group of cards."""

    field: FieldSpec
    weighting: Weighting
    group: str  # "all", or the band and MLP ("1–10B, dense")
    years: tuple[int, ...]  # the years shown (every year with a model, in the window)
    by_year: Mapping[int, WeightedSpread | None]  # year -> spread; None: none or too few known
    total: Mapping[int, int]  # year -> cards
    known_cards: Mapping[int, int]  # year -> cards with a known value
    families: Mapping[int, int]  # year -> families with a card
    families_known: Mapping[int, int]  # year -> families with a known value
    unknown: tuple[str, ...]  # ids of the shown years' models whose value is null
    overall: WeightedSpread | None  # over every shown year
    cutoff: Cutoff

    @property
    def title(self) -> str:
        """The column as typed, with what a derived one means (d_ff_ratio: d_ff / d_model)."""
        meaning = self.field.description.split(" (")[0] if self.field.derived else ""
        name = display_name(self.field.name)
        return f"{name} = {meaning}" if meaning else name

    def known(self, year: int) -> int:
        """Cards with a known value in ``year`` (too few known included)."""
        return self.known_cards.get(year, 0)

    def too_few_known(self, year: int) -> bool:
        return too_few_known(self.families_known.get(year, 0), self.families.get(year, 0))

    def as_dict(self) -> dict[str, Any]:
        """Plain data for --json: each year's n and spread."""
        return {
            "group": self.group,
            "years": {
                str(y): {
                    "known": self.known(y),
                    "models": self.total.get(y, 0),
                    "families": self.families.get(y, 0),
                    "families_known": self.families_known.get(y, 0),
                    "too_few_known": self.too_few_known(y),
                    "partial": self.cutoff.is_partial(y),
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


Grouper = Callable[[Row], str | None]


def grouper(spec: FieldSpec, by_band: bool = False, by_mlp: bool = False) -> Grouper:
    """A row's group label: its size band and/or dense vs MoE (always for a per-expert
    column such as d_ff_ratio); None leaves the row out (its size is unknown)."""
    split_mlp = by_mlp or spec.name in PER_EXPERT_COLUMNS

    def group(row: Row) -> str | None:
        parts = []
        if by_band:
            band = size_band(row.get(SIZE_COLUMN))
            if band is None:
                return None
            parts.append(band)
        if split_mlp:
            kind = mlp_kind(row)
            parts.append(EXPERT if kind == MOE and spec.name in PER_EXPERT_COLUMNS else kind)
        return ", ".join(parts) or "all"

    return group


def group_order(by_band: bool, split_mlp: bool, per_expert: bool = False) -> list[str]:
    """Every group label in display order (small bands first, dense before MoE)."""
    bands = [b for b, _, _ in SIZE_BANDS] if by_band else [""]
    mlps = [DENSE, EXPERT if per_expert else MOE] if split_mlp else [""]
    return [", ".join(p for p in (b, m) if p) or "all" for b in bands for m in mlps]


def numeric_trends(
    rows: Iterable[Row],
    spec: FieldSpec,
    weighting: Weighting = DEFAULT_WEIGHTING,
    since: int | None = None,
    until: int | None = None,
    *,
    by_band: bool = False,
    by_mlp: bool = False,
    cut: Cutoff | None = None,
) -> list[NumericTrend]:
    """``spec``'s spread per release year over ``rows`` (from ``select_trend_rows``; with
    ``by_band`` they need ``params_exact``), one trend per group that has a card, showing
    the years from ``since`` to ``until``."""
    rows = [
        r
        for r in rows
        if (since is None or r["year"] >= since) and (until is None or r["year"] <= until)
    ]
    found = cut or cutoff(rows)
    group_of = grouper(spec, by_band, by_mlp)
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        label = group_of(row)
        if label is not None:
            grouped.setdefault(label, []).append(row)
    per_expert = spec.name in PER_EXPERT_COLUMNS
    order = group_order(by_band, by_mlp or per_expert, per_expert)
    return [
        numeric_trend(grouped[g], spec, weighting, cut=found, group=g)
        for g in order
        if g in grouped
    ]


def numeric_trend(
    rows: Iterable[Row],
    spec: FieldSpec,
    weighting: Weighting = DEFAULT_WEIGHTING,
    since: int | None = None,
    until: int | None = None,
    *,
    cut: Cutoff | None = None,
    group: str = "all",
) -> NumericTrend:
    """The weighted spread of ``spec``'s column per release year over ``rows``, unsplit."""
    rows = sorted(
        (
            r
            for r in rows
            if (since is None or r["year"] >= since) and (until is None or r["year"] <= until)
        ),
        key=lambda r: (r["release_date"], r["id"]),
    )

    def number(row: Row) -> float | None:
        value = row.get(spec.name)
        return None if value is None else float(value)

    weights = card_weights(rows, lambda r: number(r) is not None, weighting)
    pairs: dict[int, list[tuple[float, float]]] = {}
    total: dict[int, int] = {}
    families: dict[int, set[str]] = {}
    known_families: dict[int, set[str]] = {}
    unknown: list[str] = []
    for row in rows:
        year = row["year"]
        total[year] = total.get(year, 0) + 1
        families.setdefault(year, set()).add(row["family"])
        if row["id"] in weights:
            value = number(row)
            assert value is not None
            pairs.setdefault(year, []).append((value, weights[row["id"]]))
            known_families.setdefault(year, set()).add(row["family"])
        else:
            unknown.append(row["id"])
    years = tuple(sorted(total))
    n_families = {y: len(families.get(y, ())) for y in years}
    n_known = {y: len(known_families.get(y, ())) for y in years}
    by_year = {
        y: None if too_few_known(n_known[y], n_families[y]) else weighted_spread(pairs.get(y, []))
        for y in years
    }
    return NumericTrend(
        field=spec,
        weighting=weighting,
        group=group,
        years=years,
        by_year=by_year,
        total=total,
        known_cards={y: len(pairs.get(y, [])) for y in years},
        families=n_families,
        families_known=n_known,
        unknown=tuple(unknown),
        overall=weighted_spread([p for y in years for p in pairs.get(y, [])]),
        cutoff=cut or cutoff(rows),
    )


def numeric_record(
    trends: list[NumericTrend], spec: FieldSpec, weighting: Weighting
) -> dict[str, Any]:
    """Plain data for --json and the API: the field, the weighting, each group's years."""
    first = trends[0] if trends else None
    return {
        "field": spec.name,
        "weighting": weighting,
        "weighting_rule": describe(weighting),
        "cutoff": first.cutoff.date if first else None,
        "partial_year": first.cutoff.year if first and first.cutoff.partial else None,
        "groups": [t.as_dict() for t in trends],
    }


# Periods the shape tables compare: the drift of a rule shows between them.
ERAS: tuple[tuple[str, int | None, int | None], ...] = (
    ("to 2022", None, 2022),
    ("2023–2024", 2023, 2024),
    ("2025 on", 2025, None),
)


@dataclass(frozen=True)
class Cell:
    """One band and period of a shape table: the weighted spread and its n."""

    spread: WeightedSpread | None
    families: int  # families with a known value
    cards: int  # cards with a known value


def era_of(year: int) -> str | None:
    return next(
        (
            label
            for label, low, high in ERAS
            if (low is None or year >= low) and (high is None or year <= high)
        ),
        None,
    )


def band_era_cells(
    rows: Iterable[Row],
    column: str,
    weighting: Weighting = DEFAULT_WEIGHTING,
    group_of: Callable[[Row], str | None] = lambda r: size_band(r.get(SIZE_COLUMN)),
) -> dict[tuple[str, str], Cell]:
    """``column``'s weighted spread per (group, period): by default the group is the size
    band. A family's weight is split among its cards within each year, as everywhere;
    the years of a period are pooled."""
    rows = [r for r in rows if r.get(column) is not None]
    weights = card_weights(rows, lambda _: True, weighting)
    cells: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        group, era = group_of(row), era_of(row["year"])
        if group is not None and era is not None:
            cells.setdefault((group, era), []).append(row)
    return {
        key: Cell(
            weighted_spread([(float(r[column]), weights[r["id"]]) for r in members]),
            len({r["family"] for r in members}),
            len(members),
        )
        for key, members in cells.items()
    }


EQUAL, UNEQUAL = "= d_model", "≠ d_model"


@dataclass(frozen=True)
class Shapes:
    """The shape rules of the distributions page, weighted, by year and by size band and
    period: d_ff/d_model for dense layers and experts apart, d_model/n_layers, whether
    n_heads·head_dim = d_model, and the vocabulary."""

    weighting: Weighting
    d_ff_by_year: list[NumericTrend]  # dense gated, dense non-gated, MoE expert, MoE dense
    d_ff_bands: dict[str, dict[tuple[str, str], Cell]]  # group -> (band, period) -> cell
    aspect_bands: dict[tuple[str, str], Cell]  # dense decoders, (band, period) -> cell
    head_ratio: Tally  # EQUAL / UNEQUAL by year
    vocab_by_year: NumericTrend


D_FF_GROUPS: tuple[tuple[str, str, Callable[[Row], bool]], ...] = (
    ("dense, gated", "d_ff_ratio", lambda r: not r.get("moe") and r.get("gated") is True),
    ("dense, non-gated", "d_ff_ratio", lambda r: not r.get("moe") and r.get("gated") is False),
    ("MoE, one expert", "expert_d_ff_ratio", lambda r: bool(r.get("moe"))),
    # a MoE without dense layers has no dense width: left out, not counted unknown
    (
        "MoE, dense layers",
        "dense_d_ff_ratio",
        lambda r: bool(r.get("moe")) and r.get("dense_d_ff_ratio") is not None,
    ),
)


def shapes(rows: Iterable[Row], cut: Cutoff, weighting: Weighting = DEFAULT_WEIGHTING) -> Shapes:
    """The shape tables over ``rows`` (``trend_rows``, with the analytic counts)."""
    rows = list(rows)
    by_year = []
    bands = {}
    for label, column, keep in D_FF_GROUPS:
        spec = numeric_field(column)
        assert spec is not None
        part = [r for r in rows if keep(r)]
        by_year.append(numeric_trend(part, spec, weighting, cut=cut, group=label))
        if label in ("dense, gated", "MoE, one expert"):
            bands[label] = band_era_cells(part, column, weighting)
    dense = [r for r in rows if not r.get("moe")]

    def head(row: Row) -> str | None:
        ratio = row.get("head_ratio")
        return None if ratio is None else EQUAL if abs(ratio - 1) < 1e-9 else UNEQUAL

    vocab = numeric_field("architecture.vocab_size")
    assert vocab is not None
    return Shapes(
        weighting,
        by_year,
        bands,
        band_era_cells(dense, "aspect_ratio", weighting),
        tally(rows, head, weighting),
        numeric_trend(rows, vocab, weighting, cut=cut, group="all"),
    )
