"""The claim experiments run once per catalogue: their results are cached as plain JSON,
keyed by the cards they read and the code that measures them; nothing planted is trusted
(an unsealed record is ignored: tests/test_hostile_stores.py), and a sealed record that
fails its checks is measured again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archdb.reports import measured
from archdb.reports.build import compute, render_reports, stale_files
from tests.conftest import catalogue, make_card, store_sealed, stored_payload

PRE_LN = make_card("pre-ln-toy", year=2020, research_variant=True)
LINEAR = make_card(
    "linear-toy",
    {"architecture.attention.variant": "linear", "architecture.norm.position": "post"},
    year=2020,
    research_variant=True,
)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the experiments really ran (results stubbed: plain, positive)."""
    from archdb.measure import experiments as ex

    runs: list[int] = []

    def fake_placement(card):
        runs.append(1)
        profiles = tuple(
            ex.GradientProfile(p, i, (1.0, 2.0, 4.0) if p.value == "post" else (1.0, 1.1, 1.2))
            for i in ex.Init
            for p in (ex.NormPosition.POST, ex.NormPosition.PRE)
        )
        return ex.NormPlacementResult(card.id, "toy dims", profiles)

    monkeypatch.setattr(ex, "norm_placement", fake_placement)
    monkeypatch.setattr(ex, "uses_linear_kernel", lambda card: True)
    return runs


def test_a_second_report_reads_the_cached_results(counted, private_cache: Path) -> None:
    first = measured.measure_claims([PRE_LN, LINEAR])
    assert len(counted) == 1
    entries = list((private_cache / "experiments").glob("*.json"))
    assert len(entries) == 1
    doc = json.loads(stored_payload(entries[0]))  # plain JSON, the key repeated inside
    assert doc["format"] == measured.FORMAT and entries[0].stem == doc["key"]
    again = measured.measure_claims([PRE_LN, LINEAR])
    assert len(counted) == 1  # not run again
    assert again == first  # the same results, floats exact


def test_another_catalogue_with_the_same_experiment_cards_shares_the_entry(counted) -> None:
    other = make_card("some-released-7b", year=2024)
    measured.measure_claims([PRE_LN, LINEAR])
    measured.measure_claims([other, PRE_LN, LINEAR])
    assert len(counted) == 1
    measured.measure_claims([make_card("pre-ln-toy", year=2021, research_variant=True), LINEAR])
    assert len(counted) == 2  # a changed experiment card is measured again


@pytest.mark.parametrize(
    "tamper",
    [
        lambda doc: doc.update(key="0" * 64),  # copied from another entry
        lambda doc: doc.update(extra=1),
        lambda doc: doc["norm_placement"]["profiles"][0].update(layer_norms=[0.0, 1.0]),
        lambda doc: doc["norm_placement"]["profiles"][0].update(init="planted"),
        lambda doc: doc.update(format="archdb-experiments-0"),
        lambda doc: doc["norm_placement"].update(card_id="x" * 1000),  # out of bounds
        lambda doc: doc["norm_placement"].update(card_id="\x1b]0;x\x07"),  # a control
        lambda doc: doc["fast_weights"].update(kernel_vs_programmer="0.0"),  # not a number
        lambda doc: doc.update(linear_kernel_cards=["x"] * 20_000),
    ],
)
def test_a_tampered_entry_is_measured_again(counted, private_cache: Path, tamper) -> None:
    first = measured.measure_claims([PRE_LN, LINEAR])
    (entry,) = (private_cache / "experiments").glob("*.json")
    doc = json.loads(stored_payload(entry))
    tamper(doc)
    store_sealed(entry, json.dumps(doc))
    assert measured.measure_claims([PRE_LN, LINEAR]) == first
    assert len(counted) == 2


@pytest.mark.parametrize("junk", [b"", b"not json", b"[]", b"{" * 100_000, b"x" * 2_000_000])
def test_a_malformed_entry_is_measured_again(counted, private_cache: Path, junk: bytes) -> None:
    measured.measure_claims([PRE_LN])
    (entry,) = (private_cache / "experiments").glob("*.json")
    store_sealed(entry, junk)  # sealed: the checks behind the seal refuse it
    assert measured.measure_claims([PRE_LN]).norm_placement is not None
    assert len(counted) == 2


def test_no_cache_when_disabled(counted, private_cache: Path, monkeypatch) -> None:
    monkeypatch.setenv("ARCHDB_NO_CACHE", "1")
    measured.measure_claims([PRE_LN])
    measured.measure_claims([PRE_LN])
    assert len(counted) == 2
    assert not (private_cache / "experiments").exists()


def test_a_catalogue_without_experiment_cards_runs_nothing(counted, private_cache) -> None:
    assert measured.measure_claims([make_card("plain-7b")]) == measured.ClaimMeasurements()
    assert counted == [] and not (private_cache / "experiments").exists()


def test_check_compares_the_rendered_bytes_and_writes_nothing(tmp_path: Path) -> None:
    """On the empty catalogue, whose render test_reports.py's empty build reuses from this
    worker's memo. (That rendering is pure, the same data giving the same bytes, is
    checked by test_reports.py's determinism test.)"""
    cat = catalogue()
    rendered = render_reports(compute(cat))  # rendered, and kept in the memo
    assert all(isinstance(v, bytes) for v in rendered.values())
    assert "claims.md" in rendered and any(p.startswith("figures/") for p in rendered)
    out = tmp_path / "reports"
    assert "claims.md" in stale_files(cat, out)
    assert not out.exists()  # --check only compares
