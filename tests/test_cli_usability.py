"""Issue 12, CLI items: several sources per new card, notes on field groups, the closest
card for an unsupported config, help text, --json results, shell completion."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from archdb_cli.main import COMMANDS, app, reflow
from typer.testing import CliRunner

from archdb.catalogue import DEFAULT_PATH, load_catalogue
from archdb.reports.adoption import CHOICE_KEYS
from tests.conftest import card_text, shipped_catalogue

# commands on the shipped catalogue read its validated cards from the cache
pytestmark = pytest.mark.usefixtures("warm_shipped_cache")

runner = CliRunner()
HF = Path(__file__).parent / "fixtures" / "hf"
PAPER = "https://arxiv.org/abs/2307.09288"
CONFIG = "https://huggingface.co/org/toy-2b/blob/main/config.json"
IDENTITY = [
    "--id", "toy-2b", "--name", "Toy 2B", "--family", "toy", "--organization", "Example Lab",
    "--release-date", "2024-02-01", "--open-weights", "--params", "2B", "--like", "toy-1b",
    "--set", "d_model=2560", "--no-interactive",
]  # fmt: skip


@pytest.fixture
def small(write_catalogue) -> Path:
    return write_catalogue(card_text("toy-1b") + card_text("toy-3b"))


def invoke(*args: str):
    return runner.invoke(app, list(args))


# --- new: several sources, notes on groups ----------------------------------------------


def test_new_keeps_every_source_with_its_own_fields(small):
    result = invoke(
        "new", *IDENTITY, "-C", str(small),
        "--source", f"url={PAPER};kind=paper;title=Llama 2: Open, Fine-Tuned;"
        "locator=Table 1, Section 2.2;supports=architecture,training.tokens",
        "--source", f"url={CONFIG};supports=vocab_size,architecture.attention",
        "--note", "architecture.attention=GQA from the config",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    card = load_catalogue(small).get("toy-2b")
    paper, config = card.sources
    assert (paper.kind.value, paper.title, paper.locator) == (
        "paper",
        "Llama 2: Open, Fine-Tuned",
        "Table 1, Section 2.2",
    )
    assert paper.supports == ["architecture", "training.tokens"]
    assert config.kind.value == "config" and config.url == CONFIG  # kind guessed from the URL
    assert config.supports == ["architecture.vocab_size", "architecture.attention"]
    assert card.notes["architecture.attention"] == "GQA from the config"


def test_new_reads_sources_from_a_json_file(small, tmp_path):
    listed = [
        {"url": PAPER, "kind": "paper", "title": "Paper", "locator": "Table 1",
         "supports": ["architecture"]},
        {"url": CONFIG, "supports": ["training"]},
    ]  # fmt: skip
    path = tmp_path / "sources.json"
    path.write_text(json.dumps(listed), encoding="utf-8")
    result = invoke("new", *IDENTITY, "-C", str(small), "--sources", str(path), "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.output.count("- kind:") == 2 and "supports: [training]" in result.output


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--source", PAPER, "--source", CONFIG, "--source-locator", "Table 1"], "describe one"),
        (["--source", f"url={PAPER};url={CONFIG}"], "gives url twice"),
        (["--source", "kind=paper;title=T"], "has no url="),
        (["--source", f"url={PAPER};supports=architecture.nonsense"], "nonsense"),
        (["--note", "architecture.nonsense=why"], "nonsense"),
    ],
)
def test_new_source_and_note_mistakes_are_usage_errors(small, args, fragment):
    before = small.read_bytes()
    result = invoke("new", *IDENTITY, "-C", str(small), *args)
    assert result.exit_code == 2, result.output
    assert fragment in result.output and small.read_bytes() == before


def test_new_single_source_flags_still_describe_one_source(small):
    flags = ["--source", PAPER, "--source-locator", "Table 1", "--supports", "architecture"]
    result = invoke("new", *IDENTITY, "-C", str(small), *flags, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "locator: Table 1" in result.output and "kind: paper" in result.output


def test_new_json_result(small):
    result = invoke("new", *IDENTITY, "-C", str(small), "--source", PAPER, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["added"] is True and data["id"] == "toy-2b" and data["line"] > 1
    dry = json.loads(
        invoke(
            "new",
            *IDENTITY,
            "-C",
            str(small),
            "--id",
            "toy-4b",
            "--source",
            PAPER,
            "--json",
            "--dry-run",
        ).stdout
    )
    assert dry["added"] is False and dry["card"]["id"] == "toy-4b"
    assert dry["yaml"].startswith("- id: toy-4b")


# --- import-hf ------------------------------------------------------------------------------

IMPORT = ["--source", "https://huggingface.co/x/y/config.json", "--organization", "Lab",
          "--release-date", "2024-01-01", "--id", "new-7b", "--name", "New 7B",
          "--family", "new", "--no-interactive"]  # fmt: skip


def _shipped_copy(tmp_path: Path) -> str:
    """A copy of the shipped catalogue: an import that succeeds by mistake writes there."""
    copy = tmp_path / "models.yaml"
    copy.write_bytes(DEFAULT_PATH.read_bytes())
    return str(copy)


def _config(tmp_path: Path, fixture: str, model_type: str) -> Path:
    """A config of a family transformers does not know: its model_type and model class are
    new (a known class in `architectures` would be imported as that family)."""
    config = json.loads((HF / fixture).read_text(encoding="utf-8"))
    config["model_type"] = model_type
    config["architectures"] = [f"{model_type.title().replace('_', '')}ForCausalLM"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("fixture", "model_type", "expected_family"),
    [
        ("mixtral-8x7b-v0.1.json", "mixtral_next", "mixtral"),
        ("deepseek-v2-lite.json", "deepseek_v9", "deepseek-v2"),
        ("gemma-2-2b.json", "gemma9", "gemma-2"),
    ],
)
def test_import_hf_unknown_model_type_names_the_closest_card(
    tmp_path, fixture, model_type, expected_family
):
    config = _config(tmp_path, fixture, model_type)
    result = invoke("import-hf", str(config), *IMPORT, "-C", _shipped_copy(tmp_path))
    assert result.exit_code == 1
    assert f"model_type '{model_type}' is not supported" in result.output
    suggested = re.search(r"archdb new --like (\S+)", result.output).group(1)
    assert shipped_catalogue().get(suggested).family.startswith(expected_family), suggested


def test_import_hf_json_result(tmp_path):
    result = invoke("import-hf", str(HF / "qwen2-7b.json"), *IMPORT, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["card"]["architecture"]["d_model"] == 3584 and data["added"] is False
    config = _config(tmp_path, "gpt2.json", "nope")
    error = invoke("import-hf", str(config), *IMPORT, "--json", "-C", _shipped_copy(tmp_path))
    assert error.exit_code == 1
    assert "not supported" in json.loads(error.stdout)["errors"][0]


# --- validate and report --json --------------------------------------------------------------


def test_validate_json(write_catalogue):
    good = write_catalogue(card_text("toy-1b"))
    data = json.loads(invoke("validate", str(good), "--json").stdout)
    assert data["valid"] and data["cards"] == 1 and data["problems"] == []
    bad = write_catalogue(card_text("toy-1b").replace("d_model: 2048", "d_model: -1"), "b.yaml")
    result = invoke("validate", str(bad), "--json")
    assert result.exit_code == 1
    problem = json.loads(result.stdout)["problems"][0]
    assert problem["line"] == 15 and problem["field"] == "architecture.d_model"


def test_report_json_error_is_json(write_catalogue, tmp_path):
    (tmp_path / "foreign.txt").write_text("x", encoding="utf-8")
    path = write_catalogue(card_text("toy-1b"))
    result = invoke("report", "-C", str(path), "-o", str(tmp_path), "--json")
    assert result.exit_code == 2
    assert "no .archdb-report-manifest" in json.loads(result.stdout)["errors"][0]


# --- help ----------------------------------------------------------------------------------


def _help(command: str, columns: int = 80) -> str:
    """``archdb COMMAND --help`` at a terminal width: in this process, as a shell sees it
    (Typer's help reads COLUMNS each time it prints; a subprocess gave the same bytes)."""
    env = {"COLUMNS": str(columns), "TERM": "dumb", "NO_COLOR": "1"}
    done = runner.invoke(app, [command, "--help"], env=env, prog_name="archdb")
    assert done.exit_code == 0, done.output
    return done.stdout


def test_reflow_joins_prose_and_keeps_examples():
    text = "Summary.\n\nOne line\nand its rest.\n\nExamples:\n  archdb a\n  archdb b"
    assert (
        reflow(text) == "Summary.\n\n\nOne line and its rest.\n\nExamples:\n  archdb a\n  archdb b"
    )


@pytest.mark.parametrize("command", ["trends", "list", "new", "build", "report", "import-hf"])
def test_help_prose_is_wrapped_once_at_80_columns(command):
    """Wrapped once, greedily: a prose line ends only where the next word would not fit
    (a sentence wrapped by hand and again by Rich leaves short lines mid-paragraph)."""
    raw = _help(command).splitlines()
    prose = [line.strip() if re.match(r"^ \S", line) else "" for line in raw]
    for line, following in itertools.pairwise(prose):
        if line and following and not line.startswith(("Usage", "archdb")):
            assert len(line) + 1 + len(following.split()[0]) > 76, (line, following)


def test_build_help_lists_size_choices():
    assert "toy|full" in _help("build")
    result = invoke("build", "gpt-3", "--size", "huge")
    assert result.exit_code == 2 and "'huge' is not one of 'toy', 'full'" in result.output


def test_trends_help_lists_every_choice():
    text = " ".join(_help("trends").split())
    for key in CHOICE_KEYS:
        assert key in text


def test_fields_names_are_never_cut():
    from archdb import query

    for columns in (80, 200):
        env = {**os.environ, "COLUMNS": str(columns)}
        entry = [sys.executable, "-c", "from archdb_cli.main import run; run()", "fields"]
        done = subprocess.run(entry, capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0 and "…" not in done.stdout
        for name in query.fields():
            assert name in done.stdout, (columns, name)


# --- completion --------------------------------------------------------------------------


def _complete(words: str) -> str:
    """What the shell's completion script gets from `archdb` (in this process; one test
    below asks the installed entry point itself)."""
    env = {"_ARCHDB_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": words}
    return runner.invoke(app, [], env=env, prog_name="archdb").stdout


def test_the_installed_entry_point_completes_from_data():
    script = Path(sys.executable).parent / "archdb"
    if not script.exists():
        pytest.skip("the archdb entry point is not installed next to this Python")
    env = {**os.environ, "_ARCHDB_COMPLETE": "complete_zsh"}
    env["_TYPER_COMPLETE_ARGS"] = "archdb show gemma-2-"
    done = subprocess.run([str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and '"gemma-2-9b' in done.stdout, done.stderr
    assert done.stdout == _complete("archdb show gemma-2-")


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("archdb list --where d_mo", "d_model"),
        ("archdb list --sort year,-d_mo", "year,-d_model"),
        ("archdb list --columns id,kv_he", "id,kv_heads"),
        ("archdb list --columns architecture.norm.ty", "architecture.norm.type"),
        ("archdb trends qk", "qk-norm"),
        ("archdb show gemma-2-", "gemma-2-9b"),
    ],
)
def test_completion_is_generated_from_data(words, expected):
    assert f'"{expected}' in _complete(words)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_starts_help_without_error(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0 and "Usage" in result.output


# --- piped tables --------------------------------------------------------------------------


def test_piped_list_is_an_aligned_table_with_numbers_right_justified(small):
    result = invoke("list", "-c", "id,d_model,norm", "-C", str(small))
    assert result.exit_code == 0, result.output
    title, header, rule, first, second, *_ = result.output.splitlines()
    assert title == "2 of 2 cards" and set(rule.strip()) == {"─"}
    assert header.split() == ["id", "d_model", "norm"]
    assert first.split() == ["toy-1b", "2048", "rmsnorm"] and second.startswith("  toy-3b")
    assert header.index("d_model") + len("d_model") == first.index("2048") + len("2048")
