"""The validation cache: hits only for the same bytes, survives corruption, can be off."""

from __future__ import annotations

from archdb import cache
from archdb.catalogue import check_catalogue, load_catalogue
from tests.conftest import VALID_CARD


def test_a_valid_file_is_cached_and_read_back(write_catalogue, private_cache):
    path = write_catalogue(VALID_CARD)
    first = load_catalogue(path)
    assert len(list(private_cache.glob("*.json"))) == 1
    assert cache.read(path.read_bytes()) == list(first.cards)
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
