"""Hostile input at the command line (issue 8, CLI half): markup and control characters in
every argument and in card strings, bad paths, refused writes, and the error boundary.

Every case asserts its exit code, its message, that no traceback or internal error shows,
and that the catalogue's bytes are unchanged. ``run`` records each case; the last-resort
handler (exit 70, "internal error") must never trigger on any of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from archdb_cli.common import EXIT_INTERNAL, print_json, visible
from archdb_cli.main import app
from typer.testing import CliRunner

from archdb import files
from archdb.outputs import MANIFEST, OutputError, OwnedDirectory
from archdb.seal import content_hash
from tests.conftest import card_text, store_sealed

runner = CliRunner()
CLI = Path(__file__).resolve().parent.parent / "cli"
EVIL_NAME = "[/x] evil"
BOLD_NAME = "[bold]Bold[/bold] 3B"
SLUG_PATTERN = "^[a-z0-9]+(?:[-.][a-z0-9]+)*$"


def hostile_card(card_id: str, name: str) -> str:
    text = card_text(card_id).replace("name: Toy 1B", f"name: '{name}'")
    text = text.replace("organization: Example Lab", "organization: '[red]Lab[/'")
    text = text.replace("title: config.json", "title: '[link=https://evil.example]x[/link]'")
    text = text.replace("locator: config.json", "locator: '[/]'")
    return text.replace("  sources:", "  notes: {training.tokens: '[/x] as stated'}\n  sources:")


@pytest.fixture
def hostile(write_catalogue) -> Path:
    return write_catalogue(hostile_card("evil-1b", EVIL_NAME) + hostile_card("fancy-3b", BOLD_NAME))


def run(*args: str, catalogue: Path | None = None, input: str | None = None):
    """One hostile case through CliRunner: never an internal error, never a traceback,
    never a raw control character, and the catalogue's bytes as they were."""
    before = catalogue.read_bytes() if catalogue else None
    extra = ["-C", str(catalogue)] if catalogue and args[0] != "validate" else []
    result = runner.invoke(app, [*args, *extra], input=input)
    output = result.output
    assert result.exit_code != EXIT_INTERNAL, output
    assert "internal error" not in output and "Traceback" not in output, output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "\x1b" not in output and "\x9b" not in output, repr(output)
    if catalogue:
        assert catalogue.read_bytes() == before, "the catalogue changed"
    return result


# --- markup and control characters in arguments ---------------------------------------

ARGUMENT_CASES = [
    (("show", "[/x]"), 1, "no card or family named '[/x]'"),
    (("show", "[bold]x[/bold]"), 1, "'[bold]x[/bold]'"),
    (("compare", "[/x]", "evil-1b"), 1, "'[/x]'"),
    (("compare", "evil-1b", "[red]"), 1, "'[red]'"),
    (("trends", "[/x]"), 2, "unknown choice '[/x]'"),
    (("trends", "--since", "2020", "--until", "2019"), 2, "--since 2020 is after --until 2019"),
    (("list", "--sort", "[/x]"), 2, "'[/x]'"),
    (("list", "--sort", "-[bold]"), 2, "[bold]"),
    (("list", "--columns", "id,[/x]"), 2, "'[/x]'"),
    (("list", "--where", "[/x]=1"), 2, "[/x]"),
    (("list", "--where", "d_model>[/x]"), 2, "takes a number, not '[/x]'"),
    (("list", "--family", "[/x]"), 2, "no family named [/x]"),
    (("list", "--where", "name=[/x] evil"), 0, "1 of 2 cards"),
    (("export", "--where", "[bold]"), 2, "[bold]"),
    (("export", "--format", "[/x]"), 2, "unknown format '[/x]'"),
    (("new", "--like", "[/x]", "--no-interactive"), 1, "no card or family named '[/x]'"),
    (("new", "--set", "[/x]=1", "--no-interactive"), 2, "[/x]"),
    (("new", "--note", "[/x]=why", "--no-interactive"), 2, "[/x]"),
    (("new", "--note", "no-equals-[/x]", "--no-interactive"), 2, "no-equals-[/x]"),
    (("new", "--source", "url=https://e.org;kind=[/x]", "--no-interactive"), 2, "'[/x]'"),
    (("new", "--source", "url=https://e.org;[/x]=1", "--no-interactive"), 2, "[/x]=1"),
    (("show", "evil\x1b]0;pwned\x07"), 2, "evil\\x1b]0;pwned\\x07"),
    (("list", "--where", "name=\x9b31m"), 2, "\\x9b31m"),
    (("show", "evil\u202e1b"), 2, "\\u202e"),
]


@pytest.mark.parametrize(("args", "code", "fragment"), ARGUMENT_CASES)
def test_markup_and_controls_in_arguments(hostile, args, code, fragment):
    result = run(*args, catalogue=hostile)
    assert result.exit_code == code, result.output
    assert fragment in result.output


@pytest.mark.parametrize("command", ["build", "flops"])
def test_markup_in_builder_arguments(hostile, command):
    result = run(command, "[/x]", catalogue=hostile)
    assert result.exit_code == 1 and "no card or family named '[/x]'" in result.output


# --- markup in card strings -------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("list", "-c", "id,name,organization"),
        ("show", "evil-1b"),
        ("show", "fancy-3b"),
        ("compare", "evil-1b", "fancy-3b"),
        ("list", "--where", "organization=[red]Lab[/"),
    ],
)
def test_card_strings_print_literally(hostile, args):
    result = run(*args, catalogue=hostile)
    assert result.exit_code == 0, result.output
    assert EVIL_NAME in result.output or BOLD_NAME in result.output or "evil-1b" in result.output
    if args[0] == "show":
        for literal in ("[red]Lab[/", "[link=https://evil.example]x[/link]", "([/])"):
            assert literal in result.output
        assert "[/x] as stated" in result.output
    if args == ("list", "-c", "id,name,organization"):
        assert EVIL_NAME in result.output and BOLD_NAME in result.output


def test_card_strings_in_json_and_csv_are_the_card_values(hostile):
    cards = json.loads(run("list", "--json", catalogue=hostile).stdout)
    assert [c["name"] for c in cards] == [EVIL_NAME, BOLD_NAME]
    csv = run("export", "--format", "csv", catalogue=hostile).stdout
    assert EVIL_NAME in csv and BOLD_NAME in csv


def test_validate_prints_card_strings_and_patterns_literally(hostile, write_catalogue):
    assert EVIL_NAME not in run("validate", str(hostile)).output  # summary only
    assert run("validate", str(hostile)).exit_code == 0
    bad = write_catalogue(card_text("Bad_[/x]"), name="bad.yaml")
    result = run("validate", str(bad), catalogue=bad)
    assert result.exit_code == 1
    assert "Bad_[/x]" in result.output and SLUG_PATTERN in result.output


def test_new_dry_run_with_a_hostile_like_card(hostile):
    """Markup in the card, in the flags and in the inherited source's title (listed beside
    each inherited value) is printed as text."""
    result = run(
        "new", "--like", "evil-1b", "--id", "evil-2b", "--name", "[/x] 2B", "--family", "toy",
        "--organization", "[red]Lab", "--release-date", "2024-01-01", "--open-weights",
        "--params", "2B", "--source", "https://example.org/c/config.json", "--no-interactive",
        "--set", "n_layers=24", "--dry-run", catalogue=hostile,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "name: '[/x] 2B'" in result.stdout
    assert "norm.type = rmsnorm  ([link=https://evil.example]x[/link])" in result.stderr


def test_control_characters_in_card_strings_never_reach_the_terminal(write_catalogue):
    path = write_catalogue(hostile_card("esc-1b", "Esc \x1b]0;pwned\x07 \x1b[31m1B\x9b"))
    for args in (("list",), ("show", "esc-1b"), ("validate", str(path)), ("list", "--json")):
        result = run(*args, catalogue=path)
        assert result.exit_code in (0, 1), result.output  # shown escaped, or refused
        if result.exit_code == 0 and args[0] == "show":
            assert "\\x1b]0;pwned" in result.output


def test_print_json_escapes_what_a_terminal_would_act_on(capsys):
    """JSON escapes C0 controls itself; C1 controls and bidi overrides become \\uNNNN, the
    same characters to a parser."""
    value = {"s": "a\x9b31mb\u202ec\x1b[0m\u2066"}
    print_json(value)
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x9b\u202e\x1b\u2066"), repr(out)
    assert "\\u009b" in out and json.loads(out) == value


def test_visible_escapes_every_control_but_tab_and_newline():
    assert visible("a\x1b[31mb\x07\x9b\u202e\t\n") == "a\\x1b[31mb\\x07\\x9b\\u202e\t\n"
    assert visible("[/x] plain ünïcode") == "[/x] plain ünïcode"


# --- import-hf: config keys and values --------------------------------------------------


def test_import_hf_config_keys_and_values_are_literal(hostile, tmp_path):
    config = json.loads((Path(__file__).parent / "fixtures/hf/llama-2-7b-hf.json").read_text())
    config.update({"[/x]": "[bold]", "odd_key": "[/red] value"})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = run(
        "import-hf", str(path), "--source", "https://huggingface.co/x/y/config.json",
        "--id", "llama-x-7b", "--name", "Llama X", "--family", "llama-x",
        "--organization", "[red]Meta", "--release-date", "2023-07-18", "--dry-run",
        "--no-interactive", catalogue=hostile,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "not mapped: [/x] = [bold]" in result.output
    assert "odd_key = [/red] value" in result.output


def test_import_hf_hostile_model_type(hostile, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "[/x]\x1b", "hidden_size": 8}), encoding="utf-8")
    result = run(
        "import-hf", str(path), "--source", "https://e.org/config.json", "--id", "x-1b",
        "--name", "X", "--family", "x", "--organization", "O", "--release-date", "2024-01-01",
        "--no-interactive", catalogue=hostile,
    )  # fmt: skip
    assert result.exit_code == 1
    assert "'[/x]\\x1b' is not supported" in result.output
    assert "archdb new --like" in result.output


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[1, 2]", "expected a JSON object"),
        ("{" * 100_000, "not a JSON config"),
        ("\xff\xfe", "not UTF-8"),
    ],
)
def test_import_hf_hostile_files(hostile, tmp_path, content, fragment):
    path = tmp_path / "config.json"
    path.write_bytes(content.encode("latin-1"))
    result = run("import-hf", str(path), "--source", "https://e.org/c.json",
                 "--no-interactive", catalogue=hostile)  # fmt: skip
    assert result.exit_code == 1 and fragment in result.output


# --- paths --------------------------------------------------------------------------------


def test_catalogue_path_with_brackets(tmp_path):
    folder = tmp_path / "a[bold]b[red]"
    folder.mkdir()
    path = folder / "models.yaml"
    path.write_text(hostile_card("evil-1b", EVIL_NAME), encoding="utf-8")
    result = run("validate", str(path), catalogue=path)
    assert result.exit_code == 0 and "a[bold]b[red]" in result.output
    assert run("list", catalogue=path).exit_code == 0
    missing = run("list", "-C", str(folder / "none[/x].yaml"))
    assert missing.exit_code == 1 and "none[/x].yaml" in missing.output


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (("validate", "/nonexistent/m.yaml"), 1, "/nonexistent/m.yaml"),
        (("list", "-C", "/nonexistent/m.yaml"), 1, "/nonexistent/m.yaml"),
        (("show", "x", "-C", "/"), 2, "/"),  # a directory: a usage error
        (("schema", "-o", "/nonexistent/x.json"), 1, "cannot write /nonexistent/x.json"),
    ],
)
def test_bad_paths_are_one_line_errors(args, code, fragment):
    result = run(*args)
    assert result.exit_code == code, result.output
    assert fragment in result.output


# --- writes the CLI refuses -------------------------------------------------------------


def test_export_refuses_the_catalogue_by_any_path(hostile, tmp_path, monkeypatch):
    link = tmp_path / "link.csv"
    link.symlink_to(hostile)
    monkeypatch.chdir(hostile.parent)
    for target in (str(hostile), str(link), hostile.name, f"../{hostile.parent.name}/models.yaml"):
        for force in ([], ["--force"]):
            result = run("export", "-F", "csv", "-o", target, *force, catalogue=hostile)
            assert result.exit_code == 2, (target, result.output)
            assert "is the catalogue" in result.output and "refusing" in result.output


def test_export_refuses_an_existing_file_without_force(hostile, tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("keep me\n", encoding="utf-8")
    result = run("export", "-o", str(out), catalogue=hostile)
    assert result.exit_code == 2 and "exists: give --force" in result.output
    assert out.read_text(encoding="utf-8") == "keep me\n"
    assert run("export", "-o", str(out), "--force", catalogue=hostile).exit_code == 0
    assert out.read_text(encoding="utf-8").startswith("id,")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_export_to_a_full_device_names_the_path(hostile):
    result = run("export", "-o", "/dev/full", catalogue=hostile)
    assert result.exit_code == 1
    assert "cannot write /dev/full: No space left on device" in result.output


def test_schema_refuses_the_catalogue():
    from archdb.catalogue import DEFAULT_PATH

    before = DEFAULT_PATH.read_bytes()
    result = run("schema", "-o", str(DEFAULT_PATH))
    assert result.exit_code == 2 and "is the catalogue" in result.output
    assert DEFAULT_PATH.read_bytes() == before


def test_report_refuses_a_foreign_directory(hostile, tmp_path):
    out = tmp_path / "project"
    out.mkdir()
    (out / "README.md").write_text("the project's own README\n", encoding="utf-8")
    for args in (("report", "-o", str(out)), ("report", "-o", str(out), "--json")):
        result = run(*args, catalogue=hostile)
        assert result.exit_code == 2, result.output
        assert f"has no {MANIFEST}" in result.output
    assert (out / "README.md").read_text(encoding="utf-8") == "the project's own README\n"
    assert sorted(p.name for p in out.iterdir()) == ["README.md"]


def test_report_refuses_a_file_as_its_directory(hostile, tmp_path):
    out = tmp_path / "file.txt"
    out.write_text("x", encoding="utf-8")
    result = run("report", "-o", str(out), catalogue=hostile)
    assert result.exit_code == 2 and out.read_text(encoding="utf-8") == "x"


def test_owned_directory_removes_only_what_it_listed(tmp_path):
    root = tmp_path / "reports"
    directory = OwnedDirectory(root)
    directory.claim()  # absent: fine
    root.mkdir()
    (root / "figures").mkdir()
    for name in ("a.md", "figures/old.svg", "figures/new.svg"):
        (root / name).write_text(name, encoding="utf-8")
    directory.commit([root / "a.md", root / "figures/old.svg"])
    (root / "mine.txt").write_text("a user's file", encoding="utf-8")  # never listed
    outside = tmp_path / "outside.txt"
    outside.write_text("outside", encoding="utf-8")
    manifest = root / MANIFEST
    manifest.write_text(manifest.read_text() + "../outside.txt\n/etc/passwd\n")  # tampered
    directory.claim()  # has a manifest: fine although not empty
    removed = directory.commit([root / "a.md", root / "figures/new.svg"])
    assert removed == [root / "figures/old.svg"]
    assert (root / "mine.txt").exists() and outside.read_text() == "outside"
    assert manifest.read_text().splitlines()[1:] == ["a.md", "figures/new.svg"]


def test_owned_directory_does_not_follow_a_planted_link(tmp_path):
    root = tmp_path / "reports"
    root.mkdir()
    OwnedDirectory(root).commit([root / "README.md"])
    target = tmp_path / "victim.txt"
    target.write_text("victim", encoding="utf-8")
    (root / "README.md").symlink_to(target)
    OwnedDirectory(root).claim()
    assert not (root / "README.md").exists() and target.read_text() == "victim"


def test_owned_directory_refuses_a_non_empty_foreign_directory(tmp_path):
    (tmp_path / "x").write_text("x", encoding="utf-8")
    with pytest.raises(OutputError, match="not empty"):
        OwnedDirectory(tmp_path).claim()


# --- the error boundary -----------------------------------------------------------------


def test_an_unexpected_error_is_one_line_and_exit_70(hostile, monkeypatch):
    from archdb import query

    def broken(*args, **kwargs):
        raise RuntimeError("boom [/x]\nsecond line")

    monkeypatch.setattr(query, "filtered", broken)
    result = runner.invoke(app, ["list", "-C", str(hostile)])
    assert result.exit_code == EXIT_INTERNAL
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("internal error: RuntimeError: boom [/x]")
    assert "please report it" in lines[0] and "Traceback" not in result.output
    monkeypatch.setenv("ARCHDB_DEBUG", "1")
    debug = runner.invoke(app, ["list", "-C", str(hostile)])
    assert isinstance(debug.exception, RuntimeError)  # the traceback, for a developer


def test_an_os_error_without_a_path_is_still_one_line(hostile, monkeypatch):
    from archdb import query

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(query, "filtered", full)
    result = run("list", catalogue=hostile)
    assert result.exit_code == 1
    assert result.output.strip() == "error: No space left on device"


def test_json_errors_for_json_commands(hostile):
    result = run("new", "--like", "[/x]", "--no-interactive", "--json", catalogue=hostile)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["exit_code"] == 1 and "'[/x]'" in data["errors"][0]


def test_no_private_typer_or_click_imports():
    for path in CLI.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "typer._" not in text and "import click" not in text, path.name


# --- real processes: what a user's terminal gets ----------------------------------------


def archdb(*args: str, code: str = "") -> subprocess.CompletedProcess:
    entry = f"{code}\nfrom archdb_cli.main import run; run()"
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-c", entry, *args], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip


def test_process_markup_argument(hostile):
    result = archdb("show", "[/x]", "-C", str(hostile))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "error: no card or family named '[/x]'"


def test_process_card_strings(hostile):
    result = archdb("compare", "evil-1b", "fancy-3b", "-C", str(hostile))
    assert result.returncode == 0, result.stderr
    assert "evil-1b" in result.stdout and "Traceback" not in result.stderr


def test_process_control_character_argument():
    result = archdb("show", "\x1b]0;pwned\x07")
    assert result.returncode == 2 and "\x1b" not in result.stderr
    assert "\\x1b]0;pwned\\x07" in result.stderr


def test_process_internal_error_is_exit_70_and_one_line(hostile):
    code = "import archdb.query as q\ndef boom(*a, **k): raise ValueError('bug')\nq.filtered = boom"
    result = archdb("list", "-C", str(hostile), code=code)
    assert result.returncode == EXIT_INTERNAL
    assert result.stderr.count("\n") == 1 and "internal error: ValueError: bug" in result.stderr


def test_process_export_to_full_device(hostile):
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    result = archdb("export", "-o", "/dev/full", "-C", str(hostile))
    assert result.returncode == 1
    assert result.stderr.strip() == "error: cannot write /dev/full: No space left on device"


@pytest.mark.parametrize(
    "args",
    [("list", "-c", "id,name"), ("compare", "evil-1b", "fancy-3b"), ("trends", "name")],
)
def test_card_strings_on_a_terminal_are_literal_too(hostile, monkeypatch, args):
    """On a terminal the tables are drawn by Rich: still no markup read, no control sent."""
    from archdb_cli import common

    monkeypatch.setattr(common.console, "_force_terminal", True)
    monkeypatch.setattr(common.console, "_width", 200)
    result = run(*args, catalogue=hostile)
    assert result.exit_code == 0, result.output
    assert EVIL_NAME in result.output and BOLD_NAME in result.output


# --- output folders are the command's own: links inside are replaced, never followed ---


def _owned_report_dir(root: Path) -> OwnedDirectory:
    """A report folder as an earlier run left it: README.md and one figure, listed."""
    from archdb.reports.build import write_files

    directory = OwnedDirectory(root)
    directory.claim()
    directory.commit(write_files({"figures/a.svg": b"<svg/>", "README.md": b"# r\n"}, root))
    return directory


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_report_writes_no_file_through_a_linked_figures_folder(tmp_path):
    from archdb.reports.build import write_files

    root, other = tmp_path / "reports", tmp_path / "other"
    _owned_report_dir(root)
    other.mkdir()
    (other / "keep.svg").write_text("keep", encoding="utf-8")
    before = _tree(other)
    import shutil

    shutil.rmtree(root / "figures")
    (root / "figures").symlink_to(other)
    directory = OwnedDirectory(root)
    directory.claim()
    directory.commit(write_files({"figures/b.svg": b"<svg/>", "README.md": b"# r\n"}, root))
    assert _tree(other) == before  # nothing written, changed or removed there
    assert (root / "figures").is_dir() and not (root / "figures").is_symlink()
    assert (root / "figures" / "b.svg").read_bytes() == b"<svg/>"


def test_a_stale_entry_under_a_linked_folder_removes_nothing_outside(tmp_path):
    root, other = tmp_path / "reports", tmp_path / "other"
    _owned_report_dir(root)
    other.mkdir()
    (other / "a.svg").write_text("precious", encoding="utf-8")
    import shutil

    shutil.rmtree(root / "figures")
    (root / "figures").symlink_to(other)  # the manifest still lists figures/a.svg
    removed = OwnedDirectory(root).commit([root / "README.md"])
    assert removed == [] and (other / "a.svg").read_text(encoding="utf-8") == "precious"


def test_a_link_at_the_manifests_temporary_name_is_never_written(tmp_path):
    root = tmp_path / "reports"
    directory = _owned_report_dir(root)
    victim = tmp_path / "victim.txt"
    victim.write_text("victim", encoding="utf-8")
    (root / (MANIFEST + ".tmp")).symlink_to(victim)
    directory.commit([root / "README.md", root / "figures" / "a.svg"])
    assert victim.read_text(encoding="utf-8") == "victim"
    assert (root / MANIFEST).read_text().splitlines()[1:] == ["README.md", "figures/a.svg"]


def test_site_refuses_a_linked_output_folder_and_leaves_nothing_behind(hostile, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "site"
    link.symlink_to(real)
    result = run("site", "-o", str(link), catalogue=hostile)
    assert result.exit_code != 0 and "is a symbolic link" in visible(result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models.yaml", "real", "site"]
    assert list(real.iterdir()) == []


def test_the_lock_file_is_never_opened_through_a_link(tmp_path):
    from archdb.writer import WriteError, catalogue_lock, lock_path

    target = tmp_path / "models.yaml"
    target.write_text("cards: []\n", encoding="utf-8")
    outside = tmp_path / "elsewhere" / "made-by-archdb"
    outside.parent.mkdir()
    lock_path(target).symlink_to(outside)  # dangling: open(O_CREAT) would create it
    with pytest.raises(WriteError, match="cannot create the lock file"), catalogue_lock(target):
        pass
    assert not outside.exists()


def test_the_catalogue_writer_refuses_what_is_not_a_regular_file(tmp_path):
    from archdb.writer import WriteError, _replace

    fifo = tmp_path / "models.yaml"
    os.mkfifo(fifo)
    with pytest.raises(WriteError, match="not a regular file"):
        _replace(fifo, b"x", expected=b"")


# --- caches: faster, never different ------------------------------------------------


@pytest.mark.parametrize("wrong", ["writable by others", "another owner"])
def test_a_planted_cache_entry_changes_nothing_in_a_folder_that_is_not_the_users(
    wrong, write_catalogue, private_cache
):
    """A well-formed validation entry for the catalogue's exact bytes, holding another card,
    is not read once the cache folder's permissions or owner are wrong; the user is told."""
    from archdb import cache, seal

    path = write_catalogue(card_text("real-model-7b"))
    raw = path.read_bytes()
    planted = cache._Entry(
        format=cache.FORMAT,
        catalogue_sha256=seal.content_hash(raw),
        schema_fingerprint=cache.schema_fingerprint(),
        cards=load_planted_cards(),
    )
    private_cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    store_sealed(
        cache.entry_path(content_hash(raw)), planted.model_dump_json()
    )  # as if archdb wrote it
    control = run("list", "--json", catalogue=path)  # the user's own folder: entries are read
    assert [row["id"] for row in json.loads(control.stdout)] == ["llama-2-7b"]
    if wrong == "writable by others":
        os.chmod(private_cache, 0o777)
    else:
        os.chown(private_cache, 4242, 4242)
    files._warned.discard(private_cache)
    result = run("list", "--json", catalogue=path)
    assert result.exit_code == 0
    assert [row["id"] for row in json.loads(result.stdout)] == ["real-model-7b"]
    assert "not using the cache" in result.stderr


def load_planted_cards():
    from archdb.catalogue import load_catalogue

    return [c for c in load_catalogue() if c.id == "llama-2-7b"]


def test_a_figures_store_with_a_huge_integer_is_ignored(private_cache):
    from archdb import cache

    private_cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    keys = frozenset({"params"})
    text = json.dumps({"format": cache.FIGURES_FORMAT, "figures": {"0" * 64: {"params": 10**400}}})
    store_sealed(cache._keyed_path("figures"), text)
    assert cache.read_figures(keys) == {}


# --- streams and encodings ---------------------------------------------------------------


def _archdb(*args: str, env: dict[str, str] | None = None, **kwargs: Any):
    """The installed entry point in a fresh process (the streams are the process's own)."""
    code = "import sys; from archdb_cli.main import run; sys.argv[0] = 'archdb'; run()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        env={**os.environ, "PYTHONUTF8": "0", **(env or {})},
        timeout=120,
        **kwargs,
    )


@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"}, {"LC_ALL": "C"}],
)
@pytest.mark.parametrize("command", [("validate",), ("list", "-n", "3"), ("show", "gpt-2-124m")])
def test_a_non_utf8_stdout_degrades_to_ascii(command, env):
    result = _archdb(*command, env=env)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out = result.stdout.decode("latin-1")
    assert out.strip() and "internal error" not in result.stderr.decode(errors="replace")
    if env.get("PYTHONIOENCODING") != "latin-1":
        assert out.isascii()


def test_a_closed_stdout_is_a_one_line_error():
    result = _archdb("list", stdout=None, pass_fds=(), preexec_fn=lambda: os.close(1))
    assert result.returncode == 1
    assert result.stderr.decode().strip() == (
        "archdb: error: standard output is closed: nothing to write to"
    )


@pytest.mark.parametrize("columns", ["0", "-5", "3", "wide"])
def test_a_tiny_or_garbage_columns_is_ignored(columns):
    narrow = _archdb("list", "-n", "2", env={"COLUMNS": columns})
    unset = _archdb("list", "-n", "2", env={"COLUMNS": "80"})
    assert narrow.returncode == 0 and narrow.stdout.strip()
    assert narrow.stdout.count(b"\n") == unset.stdout.count(b"\n")


@pytest.mark.parametrize("store", ["figures", "fidelity", "toy-trees"])
def test_no_keyed_store_is_read_from_a_folder_others_may_write(store, private_cache):
    """Well-formed planted records of every keyed store (figures, fidelity levels, toy
    trees) are read from the user's own folder and from no other: with the folder
    writable by others every read is empty, so nothing the commands print can change."""
    from archdb import cache

    record = {
        "figures": {"params": 1},
        "fidelity": ["logit-exact", "planted"],
        "toy-trees": ["planted tree", "planted rule"],
    }[store]
    readers = {
        "figures": lambda: cache.read_figures(frozenset({"params"})),
        "fidelity": cache.read_fidelity,
        "toy-trees": cache.read_toy_trees,
    }
    private_cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = "0" * 64
    text = json.dumps({"format": cache.FIGURES_FORMAT, store: {key: record}})
    store_sealed(cache._keyed_path(store), text)  # as if archdb wrote it
    assert readers[store]() == {key: record}  # the user's own folder: read
    os.chmod(private_cache, 0o775)
    assert readers[store]() == {}


def test_no_experiment_is_read_from_a_folder_others_may_write(private_cache):
    from archdb.reports import measured

    assert measured._store() is not None
    os.chmod(private_cache, 0o757)
    files._warned.discard(private_cache)
    assert measured._store() is None and measured.read("any-key") is None
