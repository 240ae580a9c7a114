"""Adoption of each architecture choice by release year: share, first use, majority.

Plain Python over ``archdb.table.card_row`` rows (no pandas), so ``archdb trends`` stays
quick; the report passes the same rows. Research variants are left out: they are not
released models, and the trends are about what released models chose.

Conventions, stated once:
- A year's share of a value is over the year's models whose value is *known*; models
  with a null value are counted apart (``unknown``), never as "not used".
- A value "became the majority" in the first year its share exceeds one half;
  ``consensus_since`` is the first year from which it stays above one half in every
  later year that has models (null if it is not the majority in the latest year).
- For a feature with an "off" value (QK norm ``none``, MoE ``dense``), an extra line
  ``any`` counts every "on" value together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from archdb.table import Row

ANY = "any"


@dataclass(frozen=True)
class Choice:
    """One design axis whose adoption is counted: a table column and how to label it."""

    key: str  # the CLI name: archdb trends norm-type
    title: str
    column: str  # a column of archdb.table
    absent: str | None = None  # the label meaning "not used": adds an ``any`` line
    labels: Mapping[Any, str] = field(default_factory=dict)  # for boolean columns

    def value(self, row: Mapping[str, Any]) -> str | None:
        raw = row.get(self.column)
        if _missing(raw):
            return None
        return self.labels.get(raw, str(raw))


def _yes_no(yes: str, no: str) -> dict[bool, str]:
    return {True: yes, False: no}


CHOICES: tuple[Choice, ...] = (
    Choice("kind", "Model kind", "architecture.kind"),
    Choice("norm-type", "Norm type", "architecture.norm.type"),
    Choice("norm-position", "Norm position", "architecture.norm.position"),
    Choice("activation", "Activation", "architecture.mlp.activation"),
    Choice("gated", "Gated MLP", "gated", "non-gated", _yes_no("gated", "non-gated")),
    Choice("position", "Position scheme", "architecture.position.type"),
    Choice("attention", "Attention variant", "attention_family"),
    Choice("layer-mix", "Attention layer pattern", "layer_mix", "global"),
    Choice("bias", "Bias in linear layers", "bias_scheme", "none"),
    Choice(
        "parallel",
        "Parallel layers",
        "architecture.parallel_layers",
        "serial",
        _yes_no("parallel", "serial"),
    ),
    Choice(
        "tied-embeddings",
        "Tied embeddings",
        "architecture.tied_embeddings",
        "untied",
        _yes_no("tied", "untied"),
    ),
    Choice("qk-norm", "QK norm", "architecture.attention.qk_norm", "none"),
    Choice("soft-capping", "Logit soft-capping", "softcap_scheme", "none"),
    Choice("z-loss", "Z-loss", "z_loss_used", "none", _yes_no("z-loss", "none")),
    Choice("moe", "Mixture of experts", "moe", "dense", _yes_no("moe", "dense")),
    Choice("dropout", "Pre-training dropout", "dropout_used", "none", _yes_no("dropout", "none")),
    Choice(
        "weight-decay", "Weight decay", "weight_decay_used", "none", _yes_no("weight decay", "none")
    ),
)
CHOICE_KEYS: tuple[str, ...] = tuple(c.key for c in CHOICES)


class UnknownChoiceError(ValueError):
    """A name that is neither a choice nor a categorical column of the table."""


def find_choice(name: str) -> Choice:
    """A choice by its key (``norm-type``) or by any spelling of a categorical column
    (``norm.type``, ``architecture.norm.affine``, ``open_weights``): a column that no
    registered choice counts becomes a choice of its own values."""
    from archdb.query import QueryError, display_name, resolve_field

    for c in CHOICES:
        if c.key == name:
            return c
    try:
        spec = resolve_field(name)
    except QueryError:
        raise UnknownChoiceError(
            f"unknown choice {name!r}: use one of {', '.join(CHOICE_KEYS)}, or a categorical "
            "field such as norm.affine (`archdb fields` lists them)"
        ) from None
    for c in CHOICES:
        if c.column == spec.name:
            return c
    if spec.kind not in ("enum", "bool", "str", "list"):
        raise UnknownChoiceError(
            f"{name!r} is a {spec.kind} column: trends count categorical choices "
            f"({', '.join(CHOICE_KEYS)}); `archdb list` shows numbers"
        )
    label = display_name(spec.name)
    return Choice(label, label, spec.name)


@dataclass(frozen=True)
class FirstUse:
    date: str  # ISO date of the first release with the value
    models: tuple[str, ...]  # card ids released that day with it

    @property
    def year(self) -> int:
        return int(self.date[:4])


@dataclass(frozen=True)
class ValueTrend:
    value: str
    counts: Mapping[int, int]  # year -> models with this value
    first_use: FirstUse
    majority_year: int | None  # first year with a share above one half
    consensus_since: int | None  # majority from this year through the latest year


@dataclass(frozen=True)
class Adoption:
    choice: Choice
    years: tuple[int, ...]  # every year from the first to the last model, gaps included
    known: Mapping[int, int]  # year -> models with a known value
    total: Mapping[int, int]  # year -> models
    unknown: tuple[str, ...]  # ids of models whose value is null
    values: tuple[ValueTrend, ...]  # by first use; the ``any`` line last

    def share(self, trend: ValueTrend, year: int) -> float | None:
        n = self.known.get(year, 0)
        return trend.counts.get(year, 0) / n if n else None

    def latest_share(self, trend: ValueTrend) -> float | None:
        years = [y for y in self.years if self.known.get(y)]
        return self.share(trend, years[-1]) if years else None


def trend_rows(
    rows: Iterable[Row], since: int | None = None, until: int | None = None
) -> list[Row]:
    """The rows the trends count: released models (no research variant) in the window."""
    return [
        r
        for r in rows
        if not r.get("research_variant")
        and (since is None or r["year"] >= since)
        and (until is None or r["year"] <= until)
    ]


def adoption(rows: Iterable[Row], choice: Choice) -> Adoption:
    """Adoption of one choice over ``rows`` (already filtered by ``trend_rows``)."""
    rows = sorted(rows, key=lambda r: (r["release_date"], r["id"]))
    labelled = [(r, choice.value(r)) for r in rows]
    known_rows = [(r, v) for r, v in labelled if v is not None]
    years = tuple(range(rows[0]["year"], rows[-1]["year"] + 1)) if rows else ()
    known: dict[int, int] = {}
    total: dict[int, int] = {}
    for r, value in labelled:
        total[r["year"]] = total.get(r["year"], 0) + 1
        if value is not None:
            known[r["year"]] = known.get(r["year"], 0) + 1

    groups: dict[str, list[Row]] = {}
    for r, v in known_rows:
        groups.setdefault(v, []).append(r)
    if choice.absent is not None:
        on = [r for r, v in known_rows if v != choice.absent]
        if len({v for _, v in known_rows if v != choice.absent}) > 1:  # else it repeats one
            groups[ANY] = on
    trends = [_trend(value, members, years, known) for value, members in groups.items()]
    trends.sort(key=lambda t: (t.value == ANY, t.first_use.date, t.value))
    unknown = tuple(r["id"] for r, v in labelled if v is None)
    return Adoption(choice, years, known, total, unknown, tuple(trends))


def adoption_all(rows: Iterable[Row]) -> list[Adoption]:
    rows = list(rows)
    return [adoption(rows, c) for c in CHOICES]


def _trend(
    value: str, members: list[Row], years: tuple[int, ...], known: dict[int, int]
) -> ValueTrend:
    counts: dict[int, int] = {}
    for r in members:
        counts[r["year"]] = counts.get(r["year"], 0) + 1
    first_date = members[0]["release_date"]
    first = FirstUse(first_date, tuple(r["id"] for r in members if r["release_date"] == first_date))
    majority = [y for y in years if known.get(y) and counts.get(y, 0) * 2 > known[y]]
    return ValueTrend(
        value=value,
        counts=counts,
        first_use=first,
        majority_year=majority[0] if majority else None,
        consensus_since=_consensus_since(years, counts, known),
    )


def _consensus_since(
    years: tuple[int, ...], counts: dict[int, int], known: dict[int, int]
) -> int | None:
    since = None
    for y in reversed([y for y in years if known.get(y)]):
        if counts.get(y, 0) * 2 <= known[y]:
            break
        since = y
    return since


@dataclass(frozen=True)
class Consensus:
    """The headline of one choice: the value most models used in the latest year."""

    choice: Choice
    trend: ValueTrend | None
    latest_year: int | None
    latest_share: float | None
    latest_known: int = 0  # models of the latest year whose value is known
    latest_total: int = 0  # models of the latest year


def consensus(adoption: Adoption) -> Consensus:
    """The latest year's most common value (ties broken by earlier first use)."""
    years = [y for y in adoption.years if adoption.known.get(y)]
    if not years:
        return Consensus(adoption.choice, None, None, None)
    latest = years[-1]
    # The ``any`` line competes too (QK norm of any kind against none); it comes last, and
    # max keeps the first of equals, so a single value beats an ``any`` that only repeats it.
    best = max(adoption.values, key=lambda t: t.counts.get(latest, 0))
    return Consensus(
        adoption.choice,
        best,
        latest,
        adoption.share(best, latest),
        adoption.known[latest],
        adoption.total.get(latest, 0),
    )


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA: rows may come from a DataFrame as well as card_row."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN is the one value unequal to itself
    except TypeError:  # pd.NA refuses truth testing
        return True
