"""The query commands' snapshot (archdb.snapshot): the answers of a full load, read as
plain data without pydantic, the schema or the formula; remade when a record is missing,
broken or wrong, or when the catalogue changes; and never more than a few kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from archdb_cli.main import app
from typer.testing import CliRunner

from archdb import seal, snapshot
from tests.conftest import card_text, store_sealed

runner = CliRunner()

QUERIES = [
    ("list", "--json"),
    ("list", "-c", "all", "--json"),
    ("list", "-w", "d_model>=2048", "--sort", "-params_exact", "--json", "-c", "id,params_exact"),
    ("show", "toy-1b", "--json"),
    ("show", "toy", "--json"),  # a family: its largest card
    ("compare", "toy-1a", "toy-1b", "--json"),
    ("trends", "--json"),
    ("trends", "d_ff_ratio", "--json"),
]


def _two_cards(write_catalogue):
    return write_catalogue(card_text("toy-1a") + "\n" + card_text("toy-1b"))


def _answer(path, *args: str):
    result = runner.invoke(app, [*args, "-C", str(path)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("args", QUERIES, ids=" ".join)
def test_a_stored_snapshot_answers_as_a_fresh_load(write_catalogue, monkeypatch, args):
    path = _two_cards(write_catalogue)
    fresh = _answer(path, *args)  # validates the file and stores what the command read
    stored = _answer(path, *args)  # reads it back
    monkeypatch.setenv("ARCHDB_NO_CACHE", "1")
    assert stored == fresh == _answer(path, *args)


def _record(cache, path, part: str):
    key = snapshot.snapshot_key(seal.content_hash(path.read_bytes()))
    return cache / snapshot.record_name(key, part)


# Records archdb might have written wrongly (sealed, so only the checks behind the seal
# stand between them and an answer): each claims other cards than the file's.
WRONG = {
    "index": {"format": snapshot.FORMAT, "ids": "toy-1a"},  # the key is added below
    "rows": [["id", "architecture.d_model"], [["toy-1a", 1], ["toy-9z", 2]]],
    "view-1": {"record": {"id": "toy-1a", "name": "Planted"}, "fields": []},
}


@pytest.mark.parametrize("part", list(WRONG))
def test_a_wrong_or_broken_record_is_made_again(write_catalogue, private_cache, part):
    path = _two_cards(write_catalogue)
    asked = [("list", "-c", "all", "--json"), ("show", "toy-1b", "--json")]
    expected = [_answer(path, *args) for args in asked]
    record = _record(private_cache, path, part)
    assert record.is_file()
    planted = dict(WRONG[part]) if isinstance(WRONG[part], dict) else WRONG[part]
    if part == "index":
        planted["key"] = record.name.removeprefix("snapshot-").removesuffix("-index.json")
    store_sealed(record, json.dumps(planted))
    assert [_answer(path, *args) for args in asked] == expected
    record.write_bytes(b"archdb-sealed-1 " + b"0" * 64 + b"\n[]")  # a seal that fails
    assert [_answer(path, *args) for args in asked] == expected


def test_an_edited_catalogue_is_answered_from_its_new_snapshot(write_catalogue):
    path = _two_cards(write_catalogue)
    before = _answer(path, "show", "toy-1b", "--json")
    path.write_text(path.read_text().replace("d_model: 2048", "d_model: 2560"))
    after = _answer(path, "show", "toy-1b", "--json")
    assert (before["architecture"]["d_model"], after["architecture"]["d_model"]) == (2048, 2560)
    assert after["derived"]["params_exact"] > before["derived"]["params_exact"]


def test_only_the_newest_snapshots_are_kept_and_nothing_else_is_touched(
    write_catalogue, private_cache
):
    path = _two_cards(write_catalogue)
    _answer(path, "list", "--json")
    other = private_cache / "snapshot-notes.txt"  # not a record of ours: left alone
    other.write_text("mine")
    for width in range(2560, 2560 + 64 * (snapshot.KEPT + 2), 64):
        path.write_text(path.read_text().replace("d_model: 2048", f"d_model: {width}"))
        _answer(path, "list", "--json")
        path.write_text(path.read_text().replace(f"d_model: {width}", "d_model: 2048"))
    indexes = list(private_cache.glob("snapshot-*-index.json"))
    assert len(indexes) == snapshot.KEPT
    assert other.read_text() == "mine"


HEAVY = ("pydantic", "archdb.schema", "archdb.plan", "archdb.measure", "torch", "yaml_rs")


@pytest.mark.parametrize(
    "args", [("show", "toy-1b"), ("compare", "toy-1a", "toy-1b"), ("trends",), ("list",)]
)
def test_a_query_on_a_stored_snapshot_imports_no_validation(write_catalogue, args):
    """The second run of a query reads plain data: pydantic, the schema, the plan, the
    formula, torch and the YAML parser stay unimported."""
    path = _two_cards(write_catalogue)
    code = (
        "import json, sys; from archdb_cli.main import app\n"
        "try: app([*sys.argv[2:], '-C', sys.argv[1]])\n"
        "except SystemExit: pass\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))"
    )
    outputs = []
    for _ in range(2):
        command = [sys.executable, "-c", code, str(path), *args]
        run = subprocess.run(command, capture_output=True, text=True, timeout=120, env=os.environ)
        assert run.returncode == 0, run.stderr
        output, _, modules = run.stdout.rstrip().rpartition("\n")
        outputs.append((output, json.loads(modules)))
    (first, loaded_first), (again, loaded_again) = outputs
    assert "pydantic" in loaded_first  # the first run validated the file
    assert again == first and loaded_again == []
