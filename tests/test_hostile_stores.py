"""Hostile caches and stores (issue 27, item 2): a cache can make archdb faster, never
different.

For each store (validation, figures, fidelity, experiments) a well-formed record that
would change what archdb prints is planted: unsealed in the user's own folder, or sealed
(as archdb itself would write it) in a folder whose permissions or owner are wrong. In
neither case may `list`, `show`, `export` or `report --check` print anything but what
they print without a cache; a control proves each planted record would change the
output if it were trusted. Malformed records (sealed or not) and hostile key files never
end in an internal error. The committed measurements (data/measurements/*.json) are read
through their typed schema: every malformed file is a one-line error naming the file and
the field, in bounded time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from archdb import cache, files, seal
from archdb.reports import measured
from archdb.seal import content_hash
from tests.conftest import VALID_CARD, card_text, empty_report_memos, store_sealed, stored_payload
from tests.hostile import process, run, snapshot

# A research Pre-LN card: the claims page runs the norm-placement experiment on it, so the
# experiments store is read by `report`.
RESEARCH_CARD = card_text("pre-ln-toy").replace(
    "  open_weights: true\n", "  open_weights: true\n  research_variant: true\n"
)
COMMANDS = [("list", "--json"), ("show", "toy-1b"), ("export", "-F", "json")]
STORES = ["validation", "figures", "fidelity", "experiments"]


@pytest.fixture
def catalogue(tmp_path: Path) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(RESEARCH_CARD + VALID_CARD, encoding="utf-8")
    return path


def _outputs(
    catalogue: Path, reports: Path | None = None, errors: list[str] | None = None
) -> dict[str, tuple[int, str]]:
    """What the commands print (exit code, stdout), each run afresh (no report memo);
    what they print on stderr is added to ``errors``."""
    found = {}
    errors = [] if errors is None else errors
    for args in COMMANDS:
        result = run(*args, "-C", str(catalogue))
        found[" ".join(args)] = (result.exit_code, result.stdout)
        errors.append(result.stderr)
    if reports is not None:
        patch = pytest.MonkeyPatch()
        empty_report_memos(patch)
        try:
            check = run("report", "--check", "-o", str(reports), "-C", str(catalogue))
        finally:
            patch.undo()
        found["report --check"] = (check.exit_code, check.stdout)
        errors.append(check.stderr)
    return found


@pytest.fixture
def baseline(catalogue: Path, tmp_path: Path, monkeypatch) -> dict:
    """The reports and the outputs with no cache at all."""
    reports = tmp_path / "reports"
    monkeypatch.setenv("ARCHDB_NO_CACHE", "1")
    empty_report_memos(monkeypatch)
    assert run("report", "-o", str(reports), "-C", str(catalogue)).exit_code == 0
    outputs = _outputs(catalogue, reports)
    monkeypatch.delenv("ARCHDB_NO_CACHE")
    assert outputs["report --check"][0] == 0, outputs["report --check"]
    return {"reports": reports, "outputs": outputs}


def _fill(catalogue: Path, reports: Path) -> None:
    """Run the commands once with the cache on: every store gets its records."""
    _outputs(catalogue, reports)


def _planted(store: str, catalogue: Path, private_cache: Path) -> tuple[Path, bytes]:
    """The record of ``store`` that would change the outputs, as (path, payload)."""
    if store == "validation":
        other = card_text("planted-7b")
        from archdb.catalogue import parse_cards

        cards, problems = parse_cards(other, "planted")
        assert not problems
        entry = cache._Entry(
            format=cache.FORMAT,
            catalogue_sha256=seal.content_hash(catalogue.read_bytes()),
            schema_fingerprint=cache.schema_fingerprint(),
            cards=cards,
        )
        return cache.entry_path(
            content_hash(catalogue.read_bytes())
        ), entry.model_dump_json().encode()
    if store == "experiments":
        (path,) = (private_cache / "experiments").glob("*.json")
        doc = json.loads(stored_payload(path))
        for profile in doc["norm_placement"]["profiles"]:
            profile["layer_norms"] = [1.0] * len(profile["layer_norms"])  # no spread at all
        return path, json.dumps(doc).encode()
    (path,) = private_cache.glob(f"{store}-*.json")
    doc = json.loads(stored_payload(path))
    for key, value in doc[store].items():
        if store == "figures":
            doc[store][key] = {k: (v * 2 if isinstance(v, int) else v) for k, v in value.items()}
        else:
            doc[store][key] = ["logit-exact", "planted: every card exact"]
    return path, json.dumps(doc).encode()


def _spoil(folder: Path, how: str) -> None:
    if how == "writable by others":
        os.chmod(folder, 0o777)
    elif how == "writable by its group":
        os.chmod(folder, 0o770)
    else:
        os.chown(folder, 4242, 4242)
    files._warned.discard(folder)


@pytest.mark.parametrize("store", STORES)
def test_a_planted_record_changes_nothing(store, catalogue, baseline, private_cache):
    reports = baseline["reports"]
    _fill(catalogue, reports)
    path, payload = _planted(store, catalogue, private_cache)

    # control: sealed in the user's own folder, as archdb would write it, it is trusted
    store_sealed(path, payload)
    assert _outputs(catalogue, reports) != baseline["outputs"], "the record changes nothing"

    # planted without archdb's seal, in the user's own folder: ignored, recomputed
    path.write_bytes(payload)
    before_reports = snapshot(reports)
    assert _outputs(catalogue, reports) == baseline["outputs"]
    assert snapshot(reports) == before_reports

    # sealed, but in folders whose permissions or owner are wrong: the cache is not used
    for how in ("writable by others", "writable by its group", "another owner"):
        os.chown(private_cache, os.geteuid(), os.getegid())
        os.chmod(private_cache, 0o700)
        store_sealed(path, payload)
        _spoil(private_cache, how)
        errors: list[str] = []
        assert _outputs(catalogue, reports, errors) == baseline["outputs"], how
        warned = "".join(errors)
        assert warned.count(f"archdb: warning: not using the cache {private_cache}") == 1, how


def test_a_planted_entry_for_an_invalid_catalogue_is_never_read(tmp_path, private_cache):
    """`list`, `show` and `export` of an invalid file fail as `validate` does, whatever
    entry is planted under its bytes."""
    bad = tmp_path / "models.yaml"
    bad.write_text(VALID_CARD.replace("n_kv_heads: 4", "n_kv_heads: 3"), encoding="utf-8")
    from archdb.catalogue import load_catalogue

    entry = cache._Entry(
        format=cache.FORMAT,
        catalogue_sha256=seal.content_hash(bad.read_bytes()),
        schema_fingerprint=cache.schema_fingerprint(),
        cards=list(load_catalogue(_valid(tmp_path))),
    )
    private_cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    cache.entry_path(content_hash(bad.read_bytes())).write_text(
        entry.model_dump_json(), encoding="utf-8"
    )
    for args in (("validate", str(bad)), *[(*c, "-C", str(bad)) for c in COMMANDS]):
        result = run(*args)
        assert result.exit_code == 1, (args, result.output)
        assert "n_kv_heads" in result.output, args


def _valid(tmp_path: Path) -> Path:
    path = tmp_path / "valid.yaml"
    path.write_text(VALID_CARD, encoding="utf-8")
    return path


JUNK = [
    b"",
    b"not json",
    b"[]",
    b"null",
    b'{"format": "archdb-figures-1", "figures": {"'
    + b"0" * 64
    + b'": {"params_exact": '
    + b"9" * 5000
    + b"}}}",
    b"[" * 100_000,
    b'{"format": "archdb-figures-1", "figures": {"k": NaN}}',
    b"\x80\x04\x95" + b"\x00" * 20,  # the start of a pickle
    b"x" * 3_000_000,
]


@pytest.mark.parametrize("store", ["validation", "figures", "fidelity"])
@pytest.mark.parametrize("sealed", [False, True])
def test_malformed_records_are_recomputed(store, sealed, catalogue, private_cache):
    expected = _outputs(catalogue)
    path = (
        cache.entry_path(content_hash(catalogue.read_bytes()))
        if store == "validation"
        else next(private_cache.glob(f"{store}-*.json"))
    )
    for junk in JUNK:
        if sealed:
            store_sealed(path, junk)
        else:
            path.write_bytes(junk)
        assert _outputs(catalogue) == expected, junk[:40]


@pytest.mark.parametrize("kind", ["zero", "fifo", "folder", "dangling", "loop"])
@pytest.mark.parametrize("store", ["validation", "figures", "fidelity", "key"])
def test_a_record_that_is_not_a_regular_file_is_never_opened(store, kind, catalogue, private_cache):
    """A link to /dev/zero, a named pipe, a folder or a link loop where a record (or the
    key) belongs: no read, no hang, the answer recomputed (a bad key: no cache, warned)."""
    expected = _outputs(catalogue)
    if store == "validation":
        path = cache.entry_path(content_hash(catalogue.read_bytes()))
    elif store == "key":
        path = private_cache / seal.KEY_NAME
        seal._keys.clear()
    else:
        path = next(private_cache.glob(f"{store}-*.json"))
    path.unlink()
    if kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling":
        path.symlink_to(private_cache / "nowhere")
    else:
        path.symlink_to(path)
    files._warned.discard(private_cache)
    assert _outputs(catalogue) == expected
    if store != "key":  # a record archdb could not replace is just not used
        return
    assert not (private_cache / "nowhere").exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda key: os.chmod(key, 0o644),
        lambda key: os.chmod(key, 0o660),
        lambda key: os.chown(key, 4242, 4242),
        lambda key: key.write_bytes(b"short"),
        lambda key: key.write_bytes(b"k" * 10_000_000),
    ],
)
def test_a_key_file_that_is_not_the_users_own_disables_the_cache(damage, catalogue, private_cache):
    expected = _outputs(catalogue)
    key = private_cache / seal.KEY_NAME
    damage(key)
    seal._keys.clear()
    files._warned.discard(private_cache)
    errors: list[str] = []
    assert _outputs(catalogue, errors=errors) == expected
    warned = "".join(errors)
    assert warned.count("has a key file that is not the user's own") == 1, warned


def test_the_cache_folder_and_key_are_owner_only(catalogue, private_cache):
    _outputs(catalogue)
    assert private_cache.stat().st_mode & 0o777 == 0o700
    key = private_cache / seal.KEY_NAME
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_size == seal.KEY_BYTES
    for record in private_cache.glob("*.json"):
        assert record.stat().st_mode & 0o777 == 0o600, record
        assert record.read_bytes().startswith(b"archdb-sealed-1 "), record


def test_a_record_copied_under_another_name_fails_its_seal(catalogue, private_cache):
    """The seal covers the record's name: a figures record copied over the fidelity
    record (both well-formed JSON maps) is not read as fidelity."""
    _outputs(catalogue)
    (figures,) = private_cache.glob("figures-*.json")
    (fidelity,) = private_cache.glob("fidelity-*.json")
    fidelity.write_bytes(figures.read_bytes())
    assert cache.read_fidelity() == {}


def test_a_cache_path_that_is_a_file_only_warns(tmp_path, monkeypatch):
    blocker = tmp_path / "cache-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    monkeypatch.setenv("ARCHDB_CACHE_DIR", str(blocker))
    catalogue = _valid(tmp_path)
    result = run("list", "-C", str(catalogue))
    assert result.exit_code == 0 and "toy-1b" in result.stdout
    assert f"archdb: warning: not using the cache {blocker}: it " in result.stderr
    assert blocker.read_text() == "not a folder\n"


def test_no_experiment_record_is_read_without_archdb_s_seal(private_cache, monkeypatch):
    from tests.conftest import make_card

    card = make_card("pre-ln-toy", year=2020, research_variant=True)
    first = measured.measure_claims([card])
    (path,) = (private_cache / "experiments").glob("*.json")
    doc = json.loads(stored_payload(path))
    doc["norm_placement"]["card_id"] = "planted"
    path.write_bytes(json.dumps(doc).encode())
    assert measured.measure_claims([card]) == first  # measured again, not the planted one


# --- committed measurements: data/measurements/mechanisms.json ------------------------


def _measurements(folder: Path) -> Path:
    from archdb.measure import mechanisms as mech

    return mech.cache_path(folder / "models.yaml")


def _shipped_measurements() -> dict:
    from archdb.catalogue import DEFAULT_PATH
    from archdb.measure import mechanisms as mech

    return json.loads(mech.cache_path(DEFAULT_PATH).read_text(encoding="utf-8"))


def _first_decode(doc: dict) -> dict:
    return doc["decode"][0]


def _first_pass(doc: dict) -> dict:
    return doc["profiles"][0]["passes"][0]


def _context(doc: dict, name: str) -> None:
    contexts = _first_decode(doc)["contexts"]
    contexts[name] = contexts.pop(next(iter(contexts)))


MEASUREMENT_CASES = [
    (lambda d: _first_pass(d)["runtime_us"]["norm"].pop(), "runtime_us lists differ in length"),
    (lambda d: _context(d, "01024"), "decode[0].contexts.01024 (the key): a context must be"),
    (lambda d: _context(d, "²"), "\\xb2 (the key): a context must be a token count"),
    (lambda d: _context(d, "9" * 5000), "9999... (the key): a context must be"),
    (
        lambda d: next(iter(_first_decode(d)["contexts"].values())).update(ms=[0.0]),
        ".ms[0]: must be a positive number",
    ),
    (lambda d: d.update(repeats=-5), "repeats: Input should be greater than or equal to 1"),
    (lambda d: d.update(repeats=True), "repeats: Input should be a valid integer"),
    (lambda d: d["device"].update(gpu="\x1b]0;pwned\x07"), "device.gpu: must be text of"),
    (lambda d: _first_decode(d).update(label="x" * 10_000), "decode[0].label: must be text"),
    (lambda d: _first_decode(d).update(contexts={}), "decode[0].contexts: Dictionary should"),
    (lambda d: d["decode"].append(d["decode"][0]), "a target is measured twice"),
    (lambda d: d["profiles"][0].pop("passes"), "profiles[0].passes: Field required"),
    (lambda d: d.update(extra=1), "extra: Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("tamper", "message"), MEASUREMENT_CASES)
def test_a_malformed_measurements_file_is_a_named_error(tmp_path, tamper, message):
    catalogue = _valid(tmp_path)
    doc = _shipped_measurements()
    tamper(doc)
    path = _measurements(tmp_path)
    path.parent.mkdir()
    path.write_text(json.dumps(doc), encoding="utf-8")
    before = snapshot(tmp_path)
    result = run("report", "--check", "-o", str(tmp_path / "reports"), "-C", str(catalogue))
    assert result.exit_code == 1, result.output
    assert f"{path}: " in result.output and message in result.output, result.output
    assert "\x1b" not in result.output
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "not valid JSON (recursion limit exceeded"),
        ('{"script_version": 1, "repeats": ' + "9" * 5000 + "}", "not valid JSON (number out"),
        ("[1]", "expected a JSON object at the top level"),
        ("\ufeff{}", "not valid JSON"),
    ],
)
def test_a_measurements_file_that_is_not_json_is_a_named_error(tmp_path, text, message):
    catalogue = _valid(tmp_path)
    path = _measurements(tmp_path)
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    result = run("report", "--check", "-o", str(tmp_path / "reports"), "-C", str(catalogue))
    assert result.exit_code == 1 and f"{path}: {message}" in result.output, result.output


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("zero", "cannot read: not a regular file"),
        ("fifo", "cannot read: a pipe or socket, not a file"),
        ("folder", "cannot read: Is a directory"),
        ("huge", "more than 2,000,000 bytes, more than it holds"),
    ],
)
def test_a_measurements_file_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind, message):
    """In a fresh process, with a time limit: a /dev/zero link once read until memory ran
    out, and a named pipe hung `report` for ever."""
    catalogue = _valid(tmp_path)
    path = _measurements(tmp_path)
    path.parent.mkdir()
    if kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_bytes(b" " * 2_000_001)
    before = snapshot(tmp_path)
    result = process(
        "report", "--check", "-o", str(tmp_path / "reports"), "-C", str(catalogue), timeout=90
    )
    assert result.returncode == 1
    assert result.stderr.decode().strip().endswith(f"{path}: {message}"), result.stderr
    assert snapshot(tmp_path) == before
