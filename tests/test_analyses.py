"""The analyses page: family-weighted figures checked against values computed by hand, and
the page on the shipped catalogue."""

from __future__ import annotations

from typing import Any

import pytest

from archdb.reports import analyses as an
from tests.conftest import FreshBuild


def _row(id_: str, family: str, year: int, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": id_,
        "family": family,
        "year": year,
        "release_date": f"{year}-06-01",
        "organization": values.pop("organization", family),
        "research_variant": False,
        "architecture.kind": "decoder-only",
    }
    return row | values


def test_moe_sparsity_counts_a_family_of_many_sizes_once() -> None:
    """2025: family "big" has three MoE sizes at 5% active, families "a" and "b" one each at
    20% and 40%. By card the median is 5% (three of five cards). By family each weighs 1
    (big's sizes 1/3 apiece): the values sit at the middles of their weights, 1/6, 1/2, 5/6
    (big), 3/2 (a) and 5/2 (b) of 3, the median at 1/6 + (5/2 - 1/6)/2 = 4/3, three
    quarters of the way from big's last size to a: 0.05 + 0.75 * 0.15 = 0.1625."""
    rows = [
        *(_row(f"big-{i}", "big", 2025, moe=True, active_ratio=0.05) for i in range(3)),
        _row("a-1", "a", 2025, moe=True, active_ratio=0.2),
        _row("b-1", "b", 2025, moe=True, active_ratio=0.4),
        _row("dense-1", "dense", 2025, moe=False, active_ratio=1.0),
    ]
    (year,) = an.moe_sparsity(rows).active_ratio
    assert (year.year, year.families, year.cards) == (2025, 3, 5)
    assert year.median == pytest.approx(0.1625)


def test_kv_cache_keeps_decoders_of_five_billion_and_more() -> None:
    rows = [
        _row("small", "s", 2024, params_exact=1e9, kv_cache_bytes_per_token=10.0),
        _row("big", "b", 2024, params_exact=7e9, kv_cache_bytes_per_token=100.0),
        _row(
            "encdec",
            "e",
            2024,
            params_exact=11e9,
            kv_cache_bytes_per_token=1000.0,
            **{"architecture.kind": "encoder-decoder"},
        ),
    ]
    (year,) = an.kv_cache(rows)
    assert (year.cards, year.median) == (1, 100.0)


def test_tokens_per_parameter_needs_sourced_tokens() -> None:
    rows = [
        _row("x", "x", 2023, **{"training.tokens": 2e12, "params_exact": 1e10}),
        _row("y", "y", 2023, **{"training.tokens": None, "params_exact": 1e10}),
    ]
    (year,) = an.tokens_per_parameter(rows)
    assert (year.cards, year.median) == (1, 200.0)


def test_concentration_names_the_largest_family() -> None:
    rows = [
        *(_row(f"opt-{i}", "opt", 2022) for i in range(6)),
        *(_row(f"f{i}", f"f{i}", 2022) for i in range(4)),
    ]
    (year,) = an.concentration(rows)
    assert (year.largest, year.largest_cards, year.cards, year.families) == ("opt", 6, 10, 5)
    assert year.share == pytest.approx(0.6)


def test_adoption_lag_is_years_after_the_fields_first_use() -> None:
    def card(id_: str, org: str, year: int, norm: str) -> dict[str, Any]:
        return _row(
            id_,
            id_,
            year,
            organization=org,
            **{
                "architecture.norm.type": norm,
                "gated": None,
                "architecture.position.type": None,
                "attention_family": None,
                "moe": None,
            },
        )

    rows = [
        card("pioneer", "Lab A", 2019, "rmsnorm"),
        card("a2", "Lab A", 2020, "rmsnorm"),
        card("a3", "Lab A", 2021, "rmsnorm"),
        card("late-1", "Lab B", 2019, "layernorm"),
        card("late-2", "Lab B", 2020, "layernorm"),
        card("late-3", "Lab B", 2022, "rmsnorm"),
    ]
    field = {f.choice: f for f in an.field_adoption(rows)}
    assert (field["RMSNorm"].first_year, field["RMSNorm"].majority_year) == (2019, 2021)
    lags = {o.organization: o.lag["RMSNorm"] for o in an.adoption_lag(rows)}
    assert lags == {"Lab A": 0, "Lab B": 3}


def test_encoder_only_and_research_cards_are_out_of_scope() -> None:
    rows = [
        _row("dec", "d", 2024),
        _row("enc", "e", 2024, **{"architecture.kind": "encoder-only"}),
        _row("res", "r", 2024, research_variant=True),
    ]
    assert [r["id"] for r in an.in_scope(rows)] == ["dec"]


@pytest.mark.xdist_group("experiments")
def test_the_page_states_weighting_n_and_the_partial_year(fresh_shipped_build: FreshBuild) -> None:
    """The shipped catalogue's analyses page: every section with its table and figure, the
    weighting, n families and n cards, and the partial year."""
    page = (fresh_shipped_build.output / "analyses.md").read_text(encoding="utf-8")
    assert "Family-weighted" in page
    assert "n families · n cards" in page
    for section in (
        "MoE sparsity by year",
        "KV-cache bytes per token by year",
        "Context length and RoPE base by year",
        "Head dimension by year",
        "Local:global and linear:full layers by year",
        "Training tokens per parameter by year",
        "Adoption lag by organization",
        "Concentration by year",
    ):
        assert f"## {section}" in page
    assert "* is partial: the catalogue runs to" in page
    assert page.count("](figures/analyses-") == 8
