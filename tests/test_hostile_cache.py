"""A hostile validation cache: planted, tampered, copied or corrupt entries.

The cache must never run code (no pickle), never serve an entry for other bytes or another
schema, never be trusted by `validate`, and fall back to a full load on any damage.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from archdb import cache, seal
from archdb.catalogue import check_catalogue, load_catalogue
from archdb.seal import content_hash
from tests.conftest import VALID_CARD, card_text, store_sealed, stored_payload

INVALID = VALID_CARD.replace("n_kv_heads: 4", "n_kv_heads: 3")  # 4 does not divide 16 heads


def entry_of(path: Path) -> Path:
    return cache.entry_path(content_hash(path.read_bytes()))


def test_entries_are_plain_json_holding_both_hashes(write_catalogue, private_cache):
    path = write_catalogue(VALID_CARD)
    load_catalogue(path)
    (entry,) = private_cache.glob("*.json")
    data = json.loads(stored_payload(entry))
    assert data["format"] == cache.FORMAT
    assert data["catalogue_sha256"] == seal.content_hash(path.read_bytes())
    assert data["schema_fingerprint"] == cache.schema_fingerprint()
    assert data["cards"][0]["id"] == "toy-1b"


def test_a_planted_pickle_is_never_unpickled(write_catalogue, private_cache, tmp_path):
    """A pickle that would create a file when loaded, placed where any entry could be."""
    path = write_catalogue(VALID_CARD)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    planted = pickle.dumps(Payload())
    entry_of(path).parent.mkdir(parents=True, exist_ok=True)
    for name in (entry_of(path), entry_of(path).with_suffix(".pickle")):
        name.write_bytes(planted)
    assert load_catalogue(path).cards[0].id == "toy-1b"
    assert not marker.exists()
    # the same through the real CLI, in a fresh interpreter
    env = {**os.environ, "ARCHDB_CACHE_DIR": str(private_cache)}
    run = subprocess.run(
        [sys.executable, "-c", "from archdb_cli.main import run; run()", "list", "-C", str(path)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "toy-1b" in run.stdout and not marker.exists()


def test_an_entry_copied_to_another_catalogues_key_is_refused(write_catalogue):
    good = write_catalogue(VALID_CARD, "good.yaml")
    bad = write_catalogue(INVALID, "bad.yaml")
    load_catalogue(good)
    entry_of(bad).write_bytes(entry_of(good).read_bytes())
    assert cache.read(content_hash(bad.read_bytes())) is None  # the seal names the other record
    store_sealed(entry_of(bad), stored_payload(entry_of(good)))
    assert cache.read(content_hash(bad.read_bytes())) is None  # the hash inside names other bytes
    _cards, problems = check_catalogue(bad, use_cache=True)
    assert any("n_kv_heads" in str(p) for p in problems)


def test_validate_never_trusts_the_cache(write_catalogue, private_cache):
    """Even an entry forged with the right hashes does not make validate pass."""
    bad = write_catalogue(INVALID)
    forged = {
        "format": cache.FORMAT,
        "catalogue_sha256": seal.content_hash(bad.read_bytes()),
        "schema_fingerprint": cache.schema_fingerprint(),
        "cards": [],
    }
    entry_of(bad).parent.mkdir(parents=True, exist_ok=True)
    entry_of(bad).write_text(json.dumps(forged), encoding="utf-8")
    assert check_catalogue(bad)[1]  # the default: a full load
    env = {**os.environ, "ARCHDB_CACHE_DIR": str(private_cache)}
    run = subprocess.run(
        [sys.executable, "-c", "from archdb_cli.main import run; run()", "validate", str(bad)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1
    assert "n_kv_heads" in run.stderr


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"[null]",
        b"null",
        b"{",
        b'{"format": "archdb-cache-2"}',
        b"\x80\x04\x95" + b"\x00" * 20,  # the start of a pickle
        b"[" * 100_000,
        b'{"format": "archdb-cache-2", "catalogue_sha256": 1, "schema_fingerprint": [], '
        b'"cards": "x"}',
    ],
)
def test_corrupt_entries_fall_back_to_a_full_load(write_catalogue, damage):
    path = write_catalogue(VALID_CARD)
    expected = load_catalogue(path).cards
    entry_of(path).write_bytes(damage)
    assert load_catalogue(path).cards == expected
    store_sealed(entry_of(path), damage)  # sealed: the checks behind the seal refuse it
    assert load_catalogue(path).cards == expected


def test_a_truncated_or_retyped_entry_falls_back(write_catalogue):
    path = write_catalogue(card_text("toy-1a") + "\n" + card_text("toy-1b"))
    expected = load_catalogue(path).cards
    blob = stored_payload(entry_of(path))
    store_sealed(entry_of(path), blob[: len(blob) // 2])
    assert load_catalogue(path).cards == expected
    data = json.loads(stored_payload(entry_of(path)))
    data["cards"][0]["architecture"]["n_layers"] = "16"  # a string where an int belongs
    store_sealed(entry_of(path), json.dumps(data))
    assert load_catalogue(path).cards == expected
    data["cards"][0]["architecture"]["n_layers"] = 10**12  # out of bounds
    store_sealed(entry_of(path), json.dumps(data))
    assert load_catalogue(path).cards == expected


def test_an_entry_from_another_schema_is_ignored(write_catalogue):
    path = write_catalogue(VALID_CARD)
    load_catalogue(path)
    blob = json.loads(stored_payload(entry_of(path)))
    blob["schema_fingerprint"] = "0" * 64
    store_sealed(entry_of(path), json.dumps(blob))
    assert cache.read(content_hash(path.read_bytes())) is None
