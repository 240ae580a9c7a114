"""The weighting core, against shares, intervals and medians computed by hand."""

from __future__ import annotations

import random
import statistics

import pytest

from archdb.errors import UsageError
from archdb.reports.weighting import (
    Cutoff,
    card_weights,
    cutoff,
    is_consensus,
    parse_weighting,
    tally,
    too_few_known,
    weighted_quantile,
    weighted_spread,
    weighted_values,
    wilson,
)


def _row(id_: str, family: str, year: int, norm: str | None, d_ff: float | None = None) -> dict:
    return {
        "id": id_,
        "family": family,
        "year": year,
        "release_date": f"{year}-06-01",
        "norm": norm,
        "d_ff_ratio": d_ff,
    }


# 2020: family "big" publishes four sizes (three rmsnorm, one layernorm); "one" a single
# layernorm card; "half" one layernorm card and one of unknown norm; "dark" only an
# unknown one. Four families, three of them known; eight cards, six known.
CATALOGUE = [
    _row("big-1", "big", 2020, "rmsnorm", 2.0),
    _row("big-2", "big", 2020, "rmsnorm", 2.0),
    _row("big-3", "big", 2020, "rmsnorm", 2.0),
    _row("big-4", "big", 2020, "layernorm", 2.0),
    _row("one-1", "one", 2020, "layernorm", 4.0),
    _row("half-1", "half", 2020, "layernorm", 8.0),
    _row("half-2", "half", 2020, None),
    _row("dark-1", "dark", 2020, None),
    # 2021: seven families, all rmsnorm, one of them with three cards
    *(_row(f"f{i}-1", f"f{i}", 2021, "rmsnorm") for i in range(7)),
    _row("f0-2", "f0", 2021, "rmsnorm"),
    _row("f0-3", "f0", 2021, "rmsnorm"),
    # 2022: four families, all rmsnorm: a high share, but too few families for consensus
    *(_row(f"g{i}-1", f"g{i}", 2022, "rmsnorm") for i in range(4)),
    # 2023: three families, one known: too few known
    _row("h0-1", "h0", 2023, "rmsnorm"),
    _row("h1-1", "h1", 2023, None),
    _row("h2-1", "h2", 2023, None),
]


def _norm(row: dict) -> str | None:
    return row["norm"]


def test_family_weights_split_a_family_equally_among_its_known_cards() -> None:
    weights = card_weights(CATALOGUE, lambda r: r["norm"] is not None, "family")
    assert weights["big-1"] == weights["big-4"] == 0.25
    assert weights["one-1"] == 1.0
    assert weights["half-1"] == 1.0  # its unknown sibling takes no share
    assert "half-2" not in weights and "dark-1" not in weights
    assert weights["f0-1"] == pytest.approx(1 / 3)
    in_2020 = {r["id"] for r in CATALOGUE if r["year"] == 2020}
    assert sum(w for i, w in weights.items() if i in in_2020) == 3.0  # three known families


def test_card_weights_are_one_per_known_card() -> None:
    weights = card_weights(CATALOGUE, lambda r: r["norm"] is not None, "card")
    assert set(weights.values()) == {1.0}
    assert len(weights) == len(CATALOGUE) - 4


def test_family_share_counts_one_vote_per_family() -> None:
    year = tally(CATALOGUE, _norm, "family").years[2020]
    assert (year.families, year.cards, year.families_known, year.cards_known) == (4, 8, 3, 6)
    assert year.unknown == ("dark-1", "half-2")
    rms = year.share("rmsnorm")
    layer = year.share("layernorm")
    assert rms is not None and layer is not None
    assert rms.share == pytest.approx(0.75 / 3)  # big's three quarters, of three families
    assert layer.share == pytest.approx(2.25 / 3)  # big's quarter + one + half
    assert (rms.families, rms.cards, layer.families, layer.cards) == (1, 3, 3, 3)
    # Wilson on 3 families at 75%, by hand: centre 0.60963, half-width 0.35354
    assert (layer.low, layer.high) == pytest.approx((0.25609, 0.96317), abs=1e-4)
    assert not layer.consensus


def test_card_share_counts_cards() -> None:
    year = tally(CATALOGUE, _norm, "card").years[2020]
    rms = year.share("rmsnorm")
    assert rms is not None and rms.share == 0.5 and rms.n_cards == 6
    assert year.share("rmsnorm", "layernorm").share == 1.0  # type: ignore[union-attr]
    assert rms.n_families == 3  # the interval's n stays the families in either weighting


def test_consensus_needs_the_lower_bound_above_half_and_five_families() -> None:
    counted = tally(CATALOGUE, _norm, "family")
    seven = counted.years[2021].share("rmsnorm")
    assert seven is not None and seven.share == 1.0
    assert seven.low == pytest.approx(0.64566, abs=1e-4)  # Wilson, n=7, p=1
    assert seven.consensus
    four = counted.years[2022].share("rmsnorm")
    assert four is not None and four.low == pytest.approx(0.51010, abs=1e-4)
    assert not four.consensus  # above one half, but four families
    assert is_consensus(0.51, 5) and not is_consensus(0.5, 10)


def test_a_year_known_for_under_half_its_families_has_no_share() -> None:
    year = tally(CATALOGUE, _norm, "family").years[2023]
    assert year.too_few_known and year.share("rmsnorm") is None
    assert year.raw_share("rmsnorm").share == 1.0  # type: ignore[union-attr]
    assert too_few_known(1, 3) and not too_few_known(2, 4)


def test_wilson_matches_the_textbook_formula() -> None:
    assert wilson(0.5, 0) == (0.0, 1.0)
    low, high = wilson(0.5, 100)
    assert (low, high) == pytest.approx((0.40383, 0.59617), abs=1e-5)


def test_weighted_median_lets_each_family_weigh_one() -> None:
    by_year = weighted_values(CATALOGUE, lambda r: r["d_ff_ratio"], "family")
    assert by_year[2020] == [(2.0, 0.25)] * 4 + [(4.0, 1.0), (8.0, 1.0)]
    spread = weighted_spread(by_year[2020])
    # weight midpoints 1/8, 3/8, 5/8, 7/8 (big), 3/2 (one), 5/2 (half); the median's target
    # 1/8 + (5/2 - 1/8) / 2 = 1.3125 lies 0.4375 of 0.625 from 2.0 (7/8) towards 4.0 (3/2)
    assert spread is not None and spread.weight == 3.0
    assert spread.median == pytest.approx(2.0 + 2.0 * 0.4375 / 0.625)  # 3.4
    # by card the four sizes of "big" decide the median
    cards = weighted_spread(weighted_values(CATALOGUE, lambda r: r["d_ff_ratio"], "card")[2020])
    assert cards is not None and cards.median == 2.0 and cards.n == 6


def test_weighted_quantile_interpolates_between_weight_midpoints() -> None:
    pairs = [(1.0, 1 / 3), (2.0, 1 / 3), (3.0, 1 / 3), (10.0, 1.0)]
    # midpoints 1/6, 1/2, 5/6, 3/2: the median's target 5/6 is the third value
    assert weighted_quantile(pairs, 0.5) == pytest.approx(3.0)
    assert weighted_quantile(pairs, 0.0) == 1.0 and weighted_quantile(pairs, 1.0) == 10.0


def test_equal_weights_give_the_inclusive_quartiles() -> None:
    rng = random.Random(7)
    for n in (2, 3, 5, 10, 31):
        values = [rng.uniform(0, 10) for _ in range(n)]
        q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
        pairs = [(v, 1.0) for v in values]
        assert weighted_quantile(pairs, 0.25) == pytest.approx(q1)
        assert weighted_quantile(pairs, 0.5) == pytest.approx(median)
        assert weighted_quantile(pairs, 0.75) == pytest.approx(q3)


def test_the_latest_year_is_partial_to_the_latest_release_date() -> None:
    rows = [*CATALOGUE, {**_row("late", "h0", 2023, "rmsnorm"), "release_date": "2023-09-30"}]
    found = cutoff(rows)
    assert found == Cutoff("2023-09-30") and found.partial and found.year == 2023
    assert found.label(2023) == "2023 (partial, to 2023-09-30)"
    assert found.label(2022) == "2022" and found.short_label(2023) == "2023*"
    assert not Cutoff("2023-12-31").partial and Cutoff(None).note() == ""


def test_a_weighting_is_family_or_card() -> None:
    assert parse_weighting("card") == "card"
    with pytest.raises(UsageError, match="unknown weighting 'size'"):
        parse_weighting("size")
