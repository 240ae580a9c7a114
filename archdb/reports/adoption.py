"""Adoption of each architecture choice by release year: share, first use, majority.

Plain Python over ``archdb.table.card_row`` rows (no pandas), so ``archdb trends`` stays
quick; the report passes the same rows. Research variants are left out: they are not
released models, and the trends are about what released models chose. Kinds are not
mixed unless asked: by default the trends count decoder-only and encoder-decoder models
(``DEFAULT_KINDS``), never encoder-only ones.

Conventions, stated once (the counting itself is ``archdb.reports.weighting``'s):
- Every share is computed under a stated weighting: ``family`` (the default: each family
  with a known value weighs 1 in a year, split among its cards of that year) or ``card``.
  It is over the year's models whose value is *known*; models with a null value are
  counted apart (``unknown``), never as "not used". Every share travels with its n
  (families and cards, known and all) and a 95% Wilson interval on the known families.
- A year whose value is known for under half of its families has *too few known*: no
  share, no majority, no consensus that year.
- A value holds the *majority* of a year when its weighted share is above one half;
  ``majority_year`` is the first year it does. It is the year's *consensus* when the share's
  95% lower bound is above one half with at least five families known;
  ``consensus_since`` is the first year from which it is the consensus in every later
  complete year with a known value (null if it is not the consensus in the latest such
  year: a year with too few known breaks the run).
- The latest year is partial, to the catalogue's latest release date (``Adoption.cutoff``):
  it is shown (marked) and can give a value its first majority, but the headline
  (``consensus``) and the consensus run are judged on complete years; a few months of
  releases are too few to end a run.
- First use, majority and consensus are facts about the whole catalogue: a display
  window (``Adoption.window``, ``archdb trends --since``) only hides years.
- For a feature with an "off" value (QK norm ``none``, MoE ``dense``), an extra line
  ``any`` counts every "on" value together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from archdb.columns import BOOL_LABELS, COUNTED_COLUMNS, Row, fields
from archdb.errors import UsageError
from archdb.reports.weighting import (
    DEFAULT_WEIGHTING,
    Cutoff,
    Share,
    Tally,
    Weighting,
    YearTally,
    describe,
    tally,
)
from archdb.reports.weighting import cutoff as weighting_cutoff

if TYPE_CHECKING:
    from archdb.schema import Card

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


def _labels(column: str) -> dict[bool, str]:
    """A boolean column's value words (``archdb.table.BOOL_LABELS``: list -w reads them)."""
    yes, no = BOOL_LABELS[column]
    return {True: yes, False: no}


def _bool_choice(key: str, title: str, column: str) -> Choice:
    return Choice(key, title, column, BOOL_LABELS[column][1], _labels(column))


CHOICES: tuple[Choice, ...] = (
    Choice("kind", "Model kind", "architecture.kind"),
    Choice("norm-type", "Norm type", "architecture.norm.type"),
    Choice("norm-position", "Norm position", "architecture.norm.position"),
    Choice("activation", "Activation", "architecture.mlp.activation"),
    _bool_choice("gated", "Gated MLP", "gated"),
    Choice("position", "Position scheme", "architecture.position.type"),
    Choice("attention", "Attention variant", "attention_family"),
    Choice("layer-mix", "Layer pattern mixers", "layer_mix", "global"),
    Choice("bias", "Bias in linear layers", "bias_scheme", "none"),
    _bool_choice("parallel", "Parallel layers", "architecture.parallel_layers"),
    _bool_choice("tied-embeddings", "Tied embeddings", "architecture.tied_embeddings"),
    Choice("qk-norm", "QK norm", "architecture.attention.qk_norm", "none"),
    Choice("soft-capping", "Logit soft-capping", "softcap_scheme", "none"),
    _bool_choice("z-loss", "Z-loss", "z_loss_used"),
    _bool_choice("moe", "Mixture of experts", "moe"),
    _bool_choice("dropout", "Pre-training dropout", "dropout_used"),
    _bool_choice("weight-decay", "Weight decay", "weight_decay_used"),
    _bool_choice("mtp", "Multi-token prediction", "mtp_used"),
    Choice("token-mixers", "Hybrid token mixers", "token_mixers", "attention-only"),
    _bool_choice("sinks", "Attention sinks", "sinks_used"),
    Choice("output-gate", "Attention output gate", "output_gate_scheme", "none"),
    _bool_choice("sparse-attention", "Sparse attention", "sparse_attention_used"),
    Choice("rope-scaling", "RoPE scaling", "rope_scaling_scheme", "no-rope"),
    _bool_choice("kv-sharing", "Cross-layer KV sharing", "kv_sharing_used"),
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


# The kinds the trends count unless asked: one model family per kind would otherwise mix
# encoders' choices (learned positions, post-norm) into the decoders' trends.
DEFAULT_KINDS: tuple[str, ...] = ("decoder-only", "encoder-decoder")
ALL_KINDS = "all"


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
    counts: Mapping[int, int]  # year -> cards with this value
    first_use: FirstUse
    majority_year: int | None  # first year with a weighted share above one half
    consensus_since: int | None  # the consensus from this year through the latest year
    members: tuple[str, ...] = ()  # the values the line counts (empty: just ``value``)

    @property
    def counted(self) -> tuple[str, ...]:
        return self.members or (self.value,)


@dataclass(frozen=True)
class Adoption:
    choice: Choice
    weighting: Weighting
    years: tuple[int, ...]  # the years shown: first to last model (or a window), gaps kept
    tally: Tally  # by year: n families and cards, each value's weight
    cutoff: Cutoff  # the catalogue's latest release date: its year is partial
    values: tuple[ValueTrend, ...]  # by first use; the ``any`` line last

    def year(self, year: int) -> YearTally | None:
        return self.tally.years.get(year)

    @property
    def known(self) -> dict[int, int]:
        """Year -> cards with a known value (years with none left out)."""
        return {y: t.cards_known for y, t in self.tally.years.items() if t.cards_known}

    @property
    def total(self) -> dict[int, int]:
        """Year -> cards."""
        return {y: t.cards for y, t in self.tally.years.items()}

    @property
    def unknown_by_year(self) -> dict[int, tuple[str, ...]]:
        return {y: t.unknown for y, t in self.tally.years.items() if t.unknown}

    @property
    def unknown(self) -> tuple[str, ...]:
        """Ids of the shown years' models whose value is null."""
        return tuple(i for y in self.years if (t := self.year(y)) for i in t.unknown)

    def shown_years(self) -> list[int]:
        """The shown years with at least one known value (a column each)."""
        return [y for y in self.years if (t := self.year(y)) is not None and t.cards_known]

    def judged_years(self) -> list[int]:
        """The years a headline and a consensus run are judged on: those with a known
        value, the partial year left out (unless it is the only one)."""
        years = self.shown_years()
        complete = [y for y in years if not self.cutoff.is_partial(y)]
        return complete or years

    def window(self, since: int | None = None, until: int | None = None) -> Adoption:
        """The same adoption showing only the years from ``since`` to ``until``: first
        use, majority and consensus stay those of the whole catalogue."""
        shown = tuple(
            y for y in self.years if (since is None or y >= since) and (until is None or y <= until)
        )
        return replace(self, years=shown)

    def share_of(self, trend: ValueTrend, year: int) -> Share | None:
        """The trend's weighted share in ``year``; None when too few are known."""
        found = self.year(year)
        return found.share(*trend.counted) if found else None

    def share(self, trend: ValueTrend, year: int) -> float | None:
        found = self.share_of(trend, year)
        return found.share if found else None

    def holds_majority(self, trend: ValueTrend, year: int) -> bool:
        found = self.share_of(trend, year)
        return found is not None and found.majority

    def is_consensus(self, trend: ValueTrend, year: int) -> bool:
        found = self.share_of(trend, year)
        return found is not None and found.consensus

    def latest_share(self, trend: ValueTrend) -> float | None:
        years = [y for y in self.years if self.share_of(trend, y) is not None]
        return self.share(trend, years[-1]) if years else None


def parse_kinds(kinds: Iterable[str] | None) -> tuple[str, ...] | None:
    """The kinds asked for (``all``: every kind, None), each checked; default ``DEFAULT_KINDS``."""
    asked = tuple(kinds or ())
    if not asked:
        return DEFAULT_KINDS
    if ALL_KINDS in asked:
        return None
    valid = fields()["architecture.kind"].choices  # the schema's Kind
    for kind in asked:
        if kind not in valid:
            raise UnknownChoiceError(
                f"unknown kind {kind!r}: use {', '.join(valid)} or {ALL_KINDS} (repeatable)"
            )
    return asked


def trend_rows(
    rows: Iterable[Row],
    since: int | None = None,
    until: int | None = None,
    kinds: Iterable[str] | None = DEFAULT_KINDS,
) -> list[Row]:
    """The rows the trends count: released models (no research variant) of ``kinds``
    (None: every kind) in the window."""
    wanted = None if kinds is None else frozenset(kinds)
    return [
        r
        for r in rows
        if not r.get("research_variant")
        and (wanted is None or r.get("architecture.kind") in wanted)
        and (since is None or r["year"] >= since)
        and (until is None or r["year"] <= until)
    ]


def select_trend_rows(
    cards: Iterable[Card],
    where: Iterable[str] = (),
    columns: Iterable[str] = (),
    kinds: Iterable[str] | None = DEFAULT_KINDS,
) -> list[Row]:
    """The rows trends count (``trend_rows``) of the cards matching every ``where``
    expression (the language of ``archdb list --where``). The analytic counts (exact
    params, KV cache, FLOPs) are computed only when a condition or ``columns`` reads one:
    counting choices stays quick."""
    from archdb.query import parse_where
    from archdb.table import catalogue_rows  # the schema: not for a snapshot's rows

    where = list(where)
    read = {*columns, *(c.field.name for c in parse_where(where))}
    return filter_trend_rows(
        catalogue_rows(cards, counts=bool(read & COUNTED_COLUMNS)), where, kinds
    )


def filter_trend_rows(
    rows: Iterable[Row], where: Iterable[str] = (), kinds: Iterable[str] | None = DEFAULT_KINDS
) -> list[Row]:
    """The rows trends count (``trend_rows``) among table rows, those matching every
    ``where`` expression: plain rows in, plain rows out (a snapshot's rows too)."""
    from archdb.query import parse_where

    conditions = parse_where(where)
    return [r for r in trend_rows(rows, kinds=kinds) if all(c.matches(r) for c in conditions)]


def catalogue_cutoff(cards: Iterable[Card]) -> Cutoff:
    """The whole catalogue's latest release date (a filter never moves the partial year)."""
    return Cutoff(max((str(c.release_date) for c in cards), default=None))


def adoption(
    rows: Iterable[Row],
    choice: Choice,
    weighting: Weighting = DEFAULT_WEIGHTING,
    cutoff: Cutoff | None = None,
) -> Adoption:
    """Adoption of one choice over ``rows`` (already filtered by ``trend_rows``), counted
    under ``weighting``; ``cutoff`` defaults to the rows' latest release date."""
    rows = sorted(rows, key=lambda r: (r["release_date"], r["id"]))
    counted = tally(rows, choice.value, weighting)
    years = tuple(range(rows[0]["year"], rows[-1]["year"] + 1)) if rows else ()
    known_rows = [(r, v) for r in rows if (v := choice.value(r)) is not None]
    groups: dict[str, list[Row]] = {}
    for r, v in known_rows:
        groups.setdefault(v, []).append(r)
    members: dict[str, tuple[str, ...]] = {}
    if choice.absent is not None:
        on = sorted({v for _, v in known_rows if v != choice.absent})
        if len(on) > 1:  # else it repeats one
            groups[ANY] = [r for r, v in known_rows if v != choice.absent]
            members[ANY] = tuple(on)
    shell = Adoption(choice, weighting, years, counted, cutoff or weighting_cutoff(rows), ())
    trends = [
        _trend(shell, value, rows_of, members.get(value, ())) for value, rows_of in groups.items()
    ]
    trends.sort(key=lambda t: (t.value == ANY, t.first_use.date, t.value))
    return replace(shell, values=tuple(trends))


def adoption_all(
    rows: Iterable[Row], weighting: Weighting = DEFAULT_WEIGHTING, cutoff: Cutoff | None = None
) -> list[Adoption]:
    rows = list(rows)
    found = cutoff or weighting_cutoff(rows)
    return [adoption(rows, c, weighting, found) for c in CHOICES]


def _trend(
    adoption: Adoption, value: str, members: list[Row], counted: tuple[str, ...]
) -> ValueTrend:
    counts: dict[int, int] = {}
    for r in members:
        counts[r["year"]] = counts.get(r["year"], 0) + 1
    first_date = members[0]["release_date"]
    first = FirstUse(first_date, tuple(r["id"] for r in members if r["release_date"] == first_date))
    line = ValueTrend(value, counts, first, None, None, counted)
    held = [y for y in adoption.years if adoption.holds_majority(line, y)]
    since = None
    for y in reversed(adoption.judged_years()):  # a year with too few known breaks the run
        if not adoption.is_consensus(line, y):
            break
        since = y
    return replace(line, majority_year=held[0] if held else None, consensus_since=since)


@dataclass(frozen=True)
class Consensus:
    """The headline of one choice: the value with the largest weighted share in the latest
    complete year with a known value, and whether it is that year's consensus (its 95%
    lower bound above one half, five families or more known). ``share`` is None when that
    year has too few known. ``partial`` is the same value's share so far in the partial
    year (None when there is none, or too few known)."""

    choice: Choice
    trend: ValueTrend | None
    latest_year: int | None
    share: Share | None = None
    year: YearTally | None = None
    is_consensus: bool = False
    partial_year: int | None = None
    partial: Share | None = None
    partial_too_few: bool = False  # the partial year has too few known

    @property
    def too_few_known(self) -> bool:
        return self.year is not None and self.year.too_few_known

    @property
    def latest_share(self) -> float | None:
        return self.share.share if self.share else None

    @property
    def latest_count(self) -> int:
        return self.trend.counts.get(self.latest_year, 0) if self.trend and self.latest_year else 0


def consensus(adoption: Adoption) -> Consensus:
    """The latest complete year's most common value (ties broken by earlier first use)."""
    years = adoption.judged_years()
    if not years:
        return Consensus(adoption.choice, None, None)
    latest = years[-1]
    year = adoption.year(latest)
    assert year is not None
    # The ``any`` line competes too (QK norm of any kind against none); it comes last, and
    # max keeps the first of equals, so a single value beats an ``any`` that only repeats it.
    best = max(adoption.values, key=lambda t: sum(year.weights.get(v, 0.0) for v in t.counted))
    share = year.share(*best.counted)
    partial = [y for y in adoption.shown_years() if adoption.cutoff.is_partial(y) and y > latest]
    return Consensus(
        adoption.choice,
        best,
        latest,
        share,
        year,
        share is not None and share.consensus,
        partial[0] if partial else None,
        adoption.share_of(best, partial[0]) if partial else None,
        bool(partial) and (found := adoption.year(partial[0])) is not None and found.too_few_known,
    )


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA: rows may come from a DataFrame as well as card_row."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN is the one value unequal to itself
    except TypeError:  # pd.NA refuses truth testing
        return True


def adoption_record(result: Adoption) -> dict[str, Any]:
    """Plain data for --json and the API: the weighting, each shown year's n, each value's
    shares with their 95% intervals and consensus years."""
    shown = result.years
    years = {}
    for y in shown:
        found = result.year(y)
        counts = found.counts() if found else {}
        years[str(y)] = {
            "known": counts.get("cards_known", 0),  # cards, as before weighting existed
            "models": counts.get("cards", 0),
            **counts,
            "partial": result.cutoff.is_partial(y),
        }
    values = []
    for t in result.values:
        shares = {str(y): s for y in shown if (s := result.share_of(t, y)) is not None}
        values.append(
            {
                "value": t.value,
                **({"counts_values": list(t.members)} if t.members else {}),
                "counts": {str(y): t.counts[y] for y in shown if t.counts.get(y)},
                "shares": {y: round(s.share, 4) for y, s in shares.items()},
                "intervals": {y: [round(s.low, 4), round(s.high, 4)] for y, s in shares.items()},
                "families": {y: s.families for y, s in shares.items() if s.families},
                "consensus_years": [int(y) for y, s in shares.items() if s.consensus],
                "first_use": {"date": t.first_use.date, "models": list(t.first_use.models)},
                "majority_year": t.majority_year,
                "consensus_since": t.consensus_since,
            }
        )
    return {
        "choice": result.choice.key,
        "column": result.choice.column,
        "weighting": result.weighting,
        "weighting_rule": describe(result.weighting),
        "cutoff": result.cutoff.date,
        "partial_year": result.cutoff.year if result.cutoff.partial else None,
        "years": years,
        "values": values,
        "unknown": list(result.unknown),
    }
