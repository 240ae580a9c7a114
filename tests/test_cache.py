"""The validation cache: hits only for the same bytes, survives corruption, can be off."""

from __future__ import annotations

import json

import pytest

from archdb import cache
from archdb.catalogue import check_catalogue, load_catalogue
from archdb.seal import content_hash
from tests.conftest import VALID_CARD, store_sealed, stored_payload


def test_a_valid_file_is_cached_and_read_back(write_catalogue, private_cache):
    path = write_catalogue(VALID_CARD)
    first = load_catalogue(path)
    assert len(list(private_cache.glob("*.json"))) == 1
    assert cache.read(content_hash(path.read_bytes())) == list(first.cards)
    assert load_catalogue(path).cards == first.cards


def test_an_edit_misses_the_cache(write_catalogue):
    path = write_catalogue(VALID_CARD)
    load_catalogue(path)
    path.write_text(VALID_CARD.replace("n_layers: 16", "n_layers: 24"), encoding="utf-8")
    assert load_catalogue(path).cards[0].architecture.n_layers == 24


def test_an_invalid_file_is_never_cached(write_catalogue, private_cache):
    path = write_catalogue(VALID_CARD.replace("n_kv_heads: 4", "n_kv_heads: 3"))
    assert check_catalogue(path)[1]
    assert check_catalogue(path)[1]
    assert list(private_cache.glob("*.json")) == []


def test_a_corrupt_cache_entry_is_ignored(write_catalogue, private_cache):
    path = write_catalogue(VALID_CARD)
    load_catalogue(path)
    (entry,) = private_cache.glob("*.json")
    entry.write_bytes(b"not json")
    assert load_catalogue(path).cards[0].id == "toy-1b"


def test_the_cache_can_be_switched_off(write_catalogue, private_cache, monkeypatch):
    monkeypatch.setenv("ARCHDB_NO_CACHE", "1")
    load_catalogue(write_catalogue(VALID_CARD))
    assert list(private_cache.glob("*.json")) == []


# --- the figures cache: analytic counts by architecture -----------------------------------


def _counted_never(card):
    raise AssertionError(f"{card.id} was counted again")


def test_counts_are_read_back_for_the_same_architecture(private_cache, monkeypatch):
    from archdb import table
    from tests.conftest import make_card

    cards = [make_card("toy-1b"), make_card("toy-2b", {"architecture.n_layers": 24})]
    first = table.catalogue_rows(cards)
    assert first == [table.card_row(c) for c in cards]  # as the formula gives them
    (stored,) = private_cache.glob("figures-*.json")
    monkeypatch.setattr(table, "counted_figures", _counted_never)
    assert table.catalogue_rows(cards) == first  # from the cache, the same rows
    assert first[1]["params_exact"] > first[0]["params_exact"] > 0
    assert stored.name == f"figures-{cache.code_fingerprint()}.json"


def test_edited_code_or_a_tampered_file_recomputes(private_cache, monkeypatch):
    from archdb import table
    from tests.conftest import make_card

    cards = [make_card("toy-1b")]
    expected = table.catalogue_rows(cards)
    (stored,) = private_cache.glob("figures-*.json")
    data = json.loads(stored_payload(stored))
    (key,) = data["figures"]
    for bad in ("not a number", True, float("inf"), [1]):
        data["figures"][key]["params_exact"] = bad
        store_sealed(stored, json.dumps(data))
        assert table.catalogue_rows(cards) == expected  # ignored, counted again
    store_sealed(stored, "{not json")
    assert table.catalogue_rows(cards) == expected
    cache.code_fingerprint.cache_clear()
    monkeypatch.setattr(cache, "FIGURES_FORMAT", "archdb-figures-edited")
    monkeypatch.setattr(table, "counted_figures", _counted_never)
    try:
        with pytest.raises(AssertionError, match="counted again"):
            table.catalogue_rows(cards)  # another fingerprint: nothing read from before
    finally:
        cache.code_fingerprint.cache_clear()


def test_no_figures_are_stored_with_the_cache_off(private_cache, monkeypatch):
    from archdb import table
    from tests.conftest import make_card

    monkeypatch.setenv("ARCHDB_NO_CACHE", "1")
    table.catalogue_rows([make_card("toy-1b")])
    assert list(private_cache.glob("figures-*.json")) == []


def test_fidelity_is_judged_once_per_card_and_code(private_cache, monkeypatch):
    from archdb import fidelity
    from tests.conftest import make_card

    card = make_card("toy-1b")
    first = fidelity.fidelity(card)
    (stored,) = private_cache.glob("fidelity-*.json")
    monkeypatch.setattr(fidelity, "_judged", _counted_never)
    assert fidelity.fidelity(card) == first  # read back, not judged again
    renamed = card.model_copy(update={"family": "renamed"})
    with pytest.raises(AssertionError, match="counted again"):
        fidelity.fidelity(renamed)  # another card: another key
    data = json.loads(stored_payload(stored))
    for bad in (["best", "why"], ["logit-exact"], ["count-exact", 7], "logit-exact"):
        data["fidelity"] = {key: bad for key in data["fidelity"]}
        store_sealed(stored, json.dumps(data))
        with pytest.raises(AssertionError, match="counted again"):
            fidelity.fidelity(card)  # a tampered store is ignored whole


@pytest.mark.parametrize("name", ["gpt.py", "config_keys.json"])
def test_the_source_fingerprint_covers_the_transformers_families(monkeypatch, name):
    """A card's fidelity is judged through archdb_hf's families and import-hf's key table:
    an edit there must not leave a cached verdict (or a query snapshot holding one) in
    place."""
    from pathlib import Path

    from archdb import seal

    seal.source_fingerprint.cache_clear()
    before = seal.source_fingerprint()
    read = Path.read_bytes

    def edited(path: Path) -> bytes:
        extra = b" " if path.name == name and "archdb_hf" in path.parts else b""
        return read(path) + extra

    monkeypatch.setattr(Path, "read_bytes", edited)
    seal.source_fingerprint.cache_clear()
    try:
        assert seal.source_fingerprint() != before
    finally:
        seal.source_fingerprint.cache_clear()
