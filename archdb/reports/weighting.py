"""How the survey counts: one vote per design (family) a year, or one per card, stated.

A year is otherwise decided by whichever family published many sizes (eight GPT-3 sizes
from one table). Every share, median and consensus of the trends, the reports and the
site is computed here under a named weighting:

- ``family`` (the default): in each year, every family (the card's ``family`` slug) with
  at least one card of known value weighs 1, split equally among its cards of that year
  with a known value. Cards whose value is null weigh nothing and are counted apart.
- ``card``: every card with a known value weighs 1 (the counts archdb gave before).

Plain Python over ``archdb.table`` rows (a row needs ``id``, ``family``, ``year`` and
``release_date``): no pandas, so ``archdb trends`` stays quick.

The API (another module's code is written against these names):

``Weighting``, ``WEIGHTINGS``, ``DEFAULT_WEIGHTING``, ``parse_weighting(name) -> Weighting``
    The two weightings; ``parse_weighting`` raises ``UnknownWeightingError`` (exit 2).
``card_weights(rows, is_known, weighting) -> dict[card id, float]``
    Each known card's weight within its year (unknown cards are absent). Under ``family``
    the weights of one year sum to that year's number of known families.
``tally(rows, value_of, weighting) -> Tally``
    A categorical choice by year: ``Tally.years[year]`` is a ``YearTally`` holding the
    year's n families and n cards (all, and with a known value), the ids of unknown cards,
    and each value's weight, families and cards. ``YearTally.share(*values)`` gives a
    ``Share`` (weighted share, 95% interval, n) of the cards whose value is any of
    ``values``, or None when the year has too few known (``too_few_known``).
``Share``
    ``share`` (0..1), ``low``/``high`` (Wilson 95%), ``n_families`` / ``n_cards`` (known,
    the denominator), ``families`` / ``cards`` (those with the value), ``consensus``.
``wilson(share, n) -> (low, high)``
    The 95% Wilson score interval of a share observed on ``n`` (possibly fractional)
    units. Shares here use ``n`` = the year's known families, under either weighting:
    the sizes of one family are one design, not independent observations.
``is_consensus(low, n_families) -> bool``
    The consensus rule: the interval's lower bound above one half *and* at least
    ``MIN_CONSENSUS_FAMILIES`` (5) families known.
``too_few_known(families_known, families) -> bool``
    A choice known for under half of a year's families shows "too few known", no share.
``weighted_values(rows, number_of, weighting) -> dict[year, list[(value, weight)]]`` and
``weighted_quantile(pairs, q)``, ``weighted_spread(pairs) -> WeightedSpread | None``
    Medians and quartiles under a weighting (linear interpolation between weighted order
    statistics; equal weights give pandas' ``quantile``, i.e. ``statistics.quantiles``'
    inclusive method).
``cutoff(rows) -> Cutoff``
    The catalogue's latest release date (``Cutoff.date``) and whether its year is partial
    (``Cutoff.partial``: the date is before 31 December); ``Cutoff.label(year)`` is
    ``"2026 (partial, to 2026-11-20)"`` for the partial year, else the year.
``describe(weighting) -> str``
    One sentence naming the weighting, for captions and ``--json``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from archdb.errors import UsageError

Row = Mapping[str, Any]
Weighting = Literal["family", "card"]
WEIGHTINGS: tuple[Weighting, ...] = ("family", "card")
DEFAULT_WEIGHTING: Weighting = "family"

Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile
MIN_CONSENSUS_FAMILIES = 5


class UnknownWeightingError(UsageError, ValueError):
    """A weighting other than family or card."""


def parse_weighting(name: str) -> Weighting:
    """``family`` or ``card``, checked."""
    if name not in WEIGHTINGS:
        raise UnknownWeightingError(
            f"unknown weighting {name!r}: use family (one vote per family a year) or card"
        )
    return cast(Weighting, name)


def describe(weighting: Weighting) -> str:
    """The weighting in one sentence, for captions, --json and the site."""
    if weighting == "family":
        return (
            "family-weighted: each family with a known value weighs 1 in a year, "
            "split equally among its cards of that year"
        )
    return "card-weighted: each card with a known value weighs 1"


# --- weights -----------------------------------------------------------------------


def card_weights(
    rows: Iterable[Row], is_known: Callable[[Row], bool], weighting: Weighting
) -> dict[str, float]:
    """Each known card's weight within its release year; unknown cards are left out."""
    known = [r for r in rows if is_known(r)]
    if weighting == "card":
        return {r["id"]: 1.0 for r in known}
    sizes: dict[tuple[int, str], int] = {}
    for r in known:
        key = (r["year"], r["family"])
        sizes[key] = sizes.get(key, 0) + 1
    return {r["id"]: 1.0 / sizes[(r["year"], r["family"])] for r in known}


# --- the interval and the rules ----------------------------------------------------


def wilson(share: float, n: float, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of ``share`` observed on ``n`` units ((0, 1) for none)."""
    if n <= 0:
        return 0.0, 1.0
    z2 = z * z
    centre = (share + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(max(share * (1 - share), 0.0) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def is_consensus(low: float, n_families: int) -> bool:
    """Consensus: the share's 95% lower bound above one half, with 5 or more families known."""
    return low > 0.5 and n_families >= MIN_CONSENSUS_FAMILIES


def too_few_known(families_known: int, families: int) -> bool:
    """Known for under half of the year's families: no share is shown."""
    return families_known * 2 < families


# --- categorical tallies -----------------------------------------------------------


@dataclass(frozen=True)
class Share:
    """One value's (or group of values') share of a year's known cards, weighted."""

    share: float  # weighted share of the known, 0..1
    low: float  # Wilson 95% bounds, on n_families
    high: float
    weight: float  # the value's summed weight (families under family weighting)
    n_families: int  # families of the year with a known value (the interval's n)
    n_cards: int  # cards of the year with a known value
    families: int  # of those, families with a card having the value
    cards: int  # of those, cards having the value

    @property
    def consensus(self) -> bool:
        return is_consensus(self.low, self.n_families)

    @property
    def majority(self) -> bool:
        """The weighted share is above one half (no interval asked)."""
        return self.share > 0.5

    def as_dict(self) -> dict[str, Any]:
        return {
            "share": round(self.share, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "families": self.families,
            "cards": self.cards,
            "consensus": self.consensus,
        }


@dataclass(frozen=True)
class YearTally:
    """One year of one choice: who counts, and each value's weight, families and cards."""

    year: int
    weighting: Weighting
    families: int  # families with a card this year (known or not)
    cards: int  # cards this year
    families_known: int  # families with at least one card of known value
    cards_known: int
    unknown: tuple[str, ...]  # ids of this year's cards whose value is null
    weights: Mapping[str, float] = field(default_factory=dict)  # value -> summed weight
    value_families: Mapping[str, frozenset[str]] = field(default_factory=dict)
    value_cards: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def too_few_known(self) -> bool:
        return too_few_known(self.families_known, self.families)

    @property
    def known_weight(self) -> float:
        """The shares' denominator: known families (family) or known cards (card)."""
        return float(self.families_known if self.weighting == "family" else self.cards_known)

    def values(self) -> tuple[str, ...]:
        return tuple(self.weights)

    def raw_share(self, *values: str) -> Share | None:
        """The share of the cards whose value is one of ``values``, even when too few are
        known (None only when none is known)."""
        if not self.cards_known:
            return None
        weight = sum(self.weights.get(v, 0.0) for v in values)
        share = weight / self.known_weight
        low, high = wilson(share, self.families_known)
        families = frozenset().union(*(self.value_families.get(v, frozenset()) for v in values))
        cards = sum(len(self.value_cards.get(v, ())) for v in values)
        return Share(
            share, low, high, weight, self.families_known, self.cards_known, len(families), cards
        )

    def share(self, *values: str) -> Share | None:
        """As ``raw_share``, but None when the year has too few known."""
        return None if self.too_few_known else self.raw_share(*values)

    def counts(self) -> dict[str, Any]:
        """The year's n, for --json and captions."""
        return {
            "families": self.families,
            "cards": self.cards,
            "families_known": self.families_known,
            "cards_known": self.cards_known,
            "too_few_known": self.too_few_known,
        }


@dataclass(frozen=True)
class Tally:
    """A categorical choice counted by year under one weighting."""

    weighting: Weighting
    years: Mapping[int, YearTally]  # every year with a card, ascending


def tally(
    rows: Iterable[Row], value_of: Callable[[Row], str | None], weighting: Weighting
) -> Tally:
    """Count ``value_of`` (None: unknown) over ``rows`` by release year, weighted."""
    rows = sorted(rows, key=lambda r: (r["release_date"], r["id"]))
    labelled = [(r, value_of(r)) for r in rows]
    weights = card_weights((r for r, v in labelled if v is not None), lambda _: True, weighting)
    by_year: dict[int, list[tuple[Row, str | None]]] = {}
    for r, v in labelled:
        by_year.setdefault(r["year"], []).append((r, v))
    years: dict[int, YearTally] = {}
    for year in sorted(by_year):
        entries = by_year[year]
        known = [(r, v) for r, v in entries if v is not None]
        value_weight: dict[str, float] = {}
        value_families: dict[str, set[str]] = {}
        value_cards: dict[str, list[str]] = {}
        for r, v in known:
            assert v is not None
            value_weight[v] = value_weight.get(v, 0.0) + weights[r["id"]]
            value_families.setdefault(v, set()).add(r["family"])
            value_cards.setdefault(v, []).append(r["id"])
        years[year] = YearTally(
            year=year,
            weighting=weighting,
            families=len({r["family"] for r, _ in entries}),
            cards=len(entries),
            families_known=len({r["family"] for r, _ in known}),
            cards_known=len(known),
            unknown=tuple(r["id"] for r, v in entries if v is None),
            weights=value_weight,
            value_families={v: frozenset(f) for v, f in value_families.items()},
            value_cards={v: tuple(c) for v, c in value_cards.items()},
        )
    return Tally(weighting, years)


# --- numeric values ----------------------------------------------------------------


def weighted_values(
    rows: Iterable[Row], number_of: Callable[[Row], float | None], weighting: Weighting
) -> dict[int, list[tuple[float, float]]]:
    """Each year's known values with their weights (``(value, weight)``, by value)."""
    rows = list(rows)
    weights = card_weights(rows, lambda r: number_of(r) is not None, weighting)
    by_year: dict[int, list[tuple[float, float]]] = {}
    for r in rows:
        if r["id"] in weights:
            value = number_of(r)
            assert value is not None
            by_year.setdefault(r["year"], []).append((float(value), weights[r["id"]]))
    return {y: sorted(pairs) for y, pairs in sorted(by_year.items())}


def weighted_quantile(pairs: Sequence[tuple[float, float]], q: float) -> float:
    """The ``q`` quantile (0..1) of weighted values, interpolating linearly.

    Each value sits at the middle of its weight on the cumulative scale, rescaled so the
    smallest is at 0 and the largest at 1; equal weights give positions (i-1)/(n-1),
    the inclusive (pandas) quantile.
    """
    if not pairs:
        raise ValueError("no values")
    ordered = sorted(pairs)
    if len(ordered) == 1:
        return ordered[0][0]
    positions = []
    cumulative = 0.0
    for _, w in ordered:
        positions.append(cumulative + w / 2)
        cumulative += w
    first, last = positions[0], positions[-1]
    target = first + q * (last - first)
    for i in range(1, len(ordered)):
        if positions[i] >= target:
            lo_pos, hi_pos = positions[i - 1], positions[i]
            lo, hi = ordered[i - 1][0], ordered[i][0]
            if hi_pos == lo_pos:
                return hi
            return lo + (hi - lo) * (target - lo_pos) / (hi_pos - lo_pos)
    return ordered[-1][0]


@dataclass(frozen=True)
class WeightedSpread:
    """Range and weighted quartiles, with n cards and the weight (families) behind them."""

    n: int  # cards with a value
    weight: float  # their summed weight (families under family weighting)
    low: float
    q1: float
    median: float
    q3: float
    high: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "weight": round(self.weight, 4),
            "min": self.low,
            "q1": self.q1,
            "median": self.median,
            "q3": self.q3,
            "max": self.high,
        }


def weighted_spread(pairs: Sequence[tuple[float, float]]) -> WeightedSpread | None:
    """Range and weighted quartiles of ``(value, weight)`` pairs; None for none."""
    if not pairs:
        return None
    ordered = sorted(pairs)
    return WeightedSpread(
        n=len(ordered),
        weight=sum(w for _, w in ordered),
        low=ordered[0][0],
        q1=weighted_quantile(ordered, 0.25),
        median=weighted_quantile(ordered, 0.5),
        q3=weighted_quantile(ordered, 0.75),
        high=ordered[-1][0],
    )


# --- the partial year --------------------------------------------------------------


@dataclass(frozen=True)
class Cutoff:
    """The catalogue's latest release date: its year is partial until 31 December."""

    date: str | None  # ISO date, None for an empty catalogue

    @property
    def year(self) -> int | None:
        return int(self.date[:4]) if self.date else None

    @property
    def partial(self) -> bool:
        return self.date is not None and self.date[5:] != "12-31"

    def is_partial(self, year: int) -> bool:
        return self.partial and year == self.year

    def label(self, year: int) -> str:
        """``2026 (partial, to 2026-11-20)`` for the partial year, else ``2025``."""
        return f"{year} (partial, to {self.date})" if self.is_partial(year) else str(year)

    def short_label(self, year: int) -> str:
        """``2026*`` for the partial year (a footnote says what * means)."""
        return f"{year}*" if self.is_partial(year) else str(year)

    def note(self, shown: Iterable[int] | None = None) -> str:
        """The footnote for ``short_label`` (``2026* is partial: ...``); empty when no year
        is partial, or the partial year is not among the ``shown`` years of a table."""
        if not self.partial or (shown is not None and self.year not in set(shown)):
            return ""
        return f"{self.year}* is partial: the catalogue runs to {self.date}"


def cutoff(rows: Iterable[Row]) -> Cutoff:
    """The latest release date of ``rows`` (pass the whole catalogue's, not a filter's)."""
    return Cutoff(max((r["release_date"] for r in rows), default=None))
