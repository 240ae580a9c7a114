"""Adoption of each architecture choice by release year: share, first use, majority.

Plain Python over ``archdb.table.card_row`` rows (no pandas), so ``archdb trends`` stays
quick; the report passes the same rows. Research variants are left out: they are not
released models, and the trends are about what released models chose.

Conventions, stated once:
- A year's share of a value is over the year's models whose value is *known*; models
  with a null value are counted apart (``unknown``), never as "not used". Every share
  travels with its ``known`` and ``total`` counts, so a 100% of 1 known in 10 reads as such.
- A value holds the majority of a year when more than half of the known values are it
  *and* at least half of all the year's models (known or not) use it: a value a few
  cards publish is never the majority, however high its share of the known.
  ``majority_year`` is the first year it holds the majority; ``consensus_since`` the
  first year from which it holds it in every later year that has models (null if it
  does not hold it in the latest year).
- First use, majority and consensus are facts about the whole catalogue: a display
  window (``Adoption.window``, ``archdb trends --since``) only hides years.
- For a feature with an "off" value (QK norm ``none``, MoE ``dense``), an extra line
  ``any`` counts every "on" value together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from archdb.errors import UsageError
from archdb.schema import Card
from archdb.table import COUNTED_COLUMNS, Row, catalogue_rows

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
    Choice("layer-mix", "Layer pattern mixers", "layer_mix", "global"),
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
    Choice("mtp", "Multi-token prediction", "mtp_used", "none", _yes_no("mtp", "none")),
    Choice("token-mixers", "Hybrid token mixers", "token_mixers", "attention-only"),
    Choice("sinks", "Attention sinks", "sinks_used", "none", _yes_no("sinks", "none")),
    Choice("output-gate", "Attention output gate", "output_gate_scheme", "none"),
    Choice(
        "sparse-attention",
        "Sparse attention",
        "sparse_attention_used",
        "dense",
        _yes_no("sparse", "dense"),
    ),
    Choice("rope-scaling", "RoPE scaling", "rope_scaling_scheme", "no-rope"),
    Choice(
        "kv-sharing", "Cross-layer KV sharing", "kv_sharing_used", "none", _yes_no("shared", "none")
    ),
)
CHOICE_KEYS: tuple[str, ...] = tuple(c.key for c in CHOICES)


class UnknownChoiceError(UsageError, ValueError):
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
            f"({', '.join(CHOICE_KEYS)}) and give numbers by year (d_ff_ratio, vocab_size)"
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
    years: tuple[int, ...]  # the years shown: first to last model (or a window), gaps kept
    known: Mapping[int, int]  # year -> models with a known value
    total: Mapping[int, int]  # year -> models
    unknown_by_year: Mapping[int, tuple[str, ...]]  # year -> ids of models with a null
    values: tuple[ValueTrend, ...]  # by first use; the ``any`` line last

    @property
    def unknown(self) -> tuple[str, ...]:
        """Ids of the shown years' models whose value is null."""
        return tuple(i for y in self.years for i in self.unknown_by_year.get(y, ()))

    def window(self, since: int | None = None, until: int | None = None) -> Adoption:
        """The same adoption showing only the years from ``since`` to ``until``: first
        use, majority and consensus stay those of the whole catalogue."""
        shown = tuple(
            y for y in self.years if (since is None or y >= since) and (until is None or y <= until)
        )
        return replace(self, years=shown)

    def holds_majority(self, trend: ValueTrend, year: int) -> bool:
        return _holds_majority(trend.counts.get(year, 0), self.known, self.total, year)

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


def select_trend_rows(
    cards: Iterable[Card], where: Iterable[str] = (), columns: Iterable[str] = ()
) -> list[Row]:
    """The rows trends count (``trend_rows``) of the cards matching every ``where``
    expression (the language of ``archdb list --where``). The analytic counts (exact
    params, KV cache, FLOPs) are computed only when a condition or ``columns`` reads one:
    counting choices stays quick."""
    from archdb.query import parse_where

    conditions = parse_where(where)
    read = {*columns, *(c.field.name for c in conditions)}
    rows = catalogue_rows(cards, counts=bool(read & COUNTED_COLUMNS))
    return [r for r in trend_rows(rows) if all(c.matches(r) for c in conditions)]


def adoption(rows: Iterable[Row], choice: Choice) -> Adoption:
    """Adoption of one choice over ``rows`` (already filtered by ``trend_rows``)."""
    rows = sorted(rows, key=lambda r: (r["release_date"], r["id"]))
    labelled = [(r, choice.value(r)) for r in rows]
    known_rows = [(r, v) for r, v in labelled if v is not None]
    years = tuple(range(rows[0]["year"], rows[-1]["year"] + 1)) if rows else ()
    known: dict[int, int] = {}
    total: dict[int, int] = {}
    unknown: dict[int, tuple[str, ...]] = {}
    for r, value in labelled:
        total[r["year"]] = total.get(r["year"], 0) + 1
        if value is not None:
            known[r["year"]] = known.get(r["year"], 0) + 1
        else:
            unknown[r["year"]] = (*unknown.get(r["year"], ()), r["id"])

    groups: dict[str, list[Row]] = {}
    for r, v in known_rows:
        groups.setdefault(v, []).append(r)
    if choice.absent is not None:
        on = [r for r, v in known_rows if v != choice.absent]
        if len({v for _, v in known_rows if v != choice.absent}) > 1:  # else it repeats one
            groups[ANY] = on
    trends = [_trend(value, members, years, known, total) for value, members in groups.items()]
    trends.sort(key=lambda t: (t.value == ANY, t.first_use.date, t.value))
    return Adoption(choice, years, known, total, unknown, tuple(trends))


def adoption_all(rows: Iterable[Row]) -> list[Adoption]:
    rows = list(rows)
    return [adoption(rows, c) for c in CHOICES]


def _trend(
    value: str,
    members: list[Row],
    years: tuple[int, ...],
    known: dict[int, int],
    total: dict[int, int],
) -> ValueTrend:
    counts: dict[int, int] = {}
    for r in members:
        counts[r["year"]] = counts.get(r["year"], 0) + 1
    first_date = members[0]["release_date"]
    first = FirstUse(first_date, tuple(r["id"] for r in members if r["release_date"] == first_date))
    held = [y for y in years if known.get(y) and _holds_majority(counts.get(y, 0), known, total, y)]
    return ValueTrend(
        value=value,
        counts=counts,
        first_use=first,
        majority_year=held[0] if held else None,
        consensus_since=_consensus_since(years, counts, known, total),
    )


def _holds_majority(
    count: int, known: Mapping[int, int], total: Mapping[int, int], year: int
) -> bool:
    """More than half of the year's known values, and at least half of all its models."""
    return count * 2 > known.get(year, 0) and count * 2 >= total.get(year, 0) > 0


def _consensus_since(
    years: tuple[int, ...], counts: dict[int, int], known: dict[int, int], total: dict[int, int]
) -> int | None:
    since = None
    for y in reversed([y for y in years if known.get(y)]):
        if not _holds_majority(counts.get(y, 0), known, total, y):
            break
        since = y
    return since


@dataclass(frozen=True)
class Consensus:
    """The headline of one choice: the value most models used in the latest year, and
    whether that makes it a consensus (it holds the majority: see the module's rules)."""

    choice: Choice
    trend: ValueTrend | None
    latest_year: int | None
    latest_share: float | None
    latest_known: int = 0  # models of the latest year whose value is known
    latest_total: int = 0  # models of the latest year
    is_consensus: bool = False  # False when too few of the year's models use it

    @property
    def latest_count(self) -> int:
        return self.trend.counts.get(self.latest_year, 0) if self.trend else 0


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
        adoption.holds_majority(best, latest),
    )


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA: rows may come from a DataFrame as well as card_row."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN is the one value unequal to itself
    except TypeError:  # pd.NA refuses truth testing
        return True
