"""The query and contributing commands: output, exit codes, and the file they write."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from archdb_cli.main import app
from typer.testing import CliRunner

from archdb.catalogue import DEFAULT_PATH, load_catalogue
from archdb.schema import NormType, inherited_paths, sourced_paths
from tests.conftest import CliResult, card_text, run_cli, shipped_catalogue

# commands on the shipped catalogue read its validated cards from the cache
pytestmark = pytest.mark.usefixtures("warm_shipped_cache")

runner = CliRunner()
HF = Path(__file__).parent / "fixtures" / "hf"
GEMMA_URL = "https://huggingface.co/google/gemma-2-2b/blob/main/config.json"


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def archdb(*args: str) -> CliResult:
    """The command as a user sees it: exit code, stdout and stderr apart (in-process)."""
    return run_cli(*args)


@pytest.fixture
def catalogue_copy(tmp_path) -> Path:
    path = tmp_path / "models.yaml"
    shutil.copyfile(DEFAULT_PATH, path)
    return path


@pytest.fixture
def small(write_catalogue) -> Path:
    return write_catalogue(card_text("toy-1b") + card_text("toy-3b"))


# --- list ---------------------------------------------------------------------------


def test_list_table_counts_and_columns():
    result = invoke("list")
    assert result.exit_code == 0, result.output
    total = len(shipped_catalogue())
    assert f"{total} of {total} cards" in result.output
    for header in ("id", "year", "params", "attention", "norm", "activation", "vocab_size"):
        assert header in result.output


def test_list_gqa_2024_big_vocab_in_one_command_as_json():
    where = ["-w", "year>=2024", "-w", "attention=gqa", "-w", "vocab_size>100k"]
    rows = json.loads(invoke("list", *where, "--json", "-c", "id,year,attention,vocab_size").output)
    assert rows and all(r["year"] >= 2024 and r["attention"] == "gqa" for r in rows)
    assert all(r["vocab_size"] > 100_000 for r in rows)
    cards = json.loads(invoke("list", *where, "--json").output)  # whole cards
    assert [c["id"] for c in cards] == [r["id"] for r in rows]
    assert all(c["architecture"]["vocab_size"] > 100_000 for c in cards)
    assert all("kv_cache_bytes_per_token" in c["derived"] for c in cards)


def test_whole_cards_are_recorded_together_as_one_by_one():
    """`list --json` records its cards together (one read and write of the caches): the
    same records as `show --json` makes one card at a time."""
    from archdb.views import card_record, card_records

    cards = [c for c in shipped_catalogue() if c.family in ("gemma-2", "mixtral", "jamba")]
    assert len(cards) > 3
    assert card_records(cards) == [card_record(c) for c in cards]
    assert card_records(cards, 1024, 1) == [card_record(c, 1024, 1) for c in cards]


def test_list_columns_sort_limit_csv():
    result = invoke("list", "-c", "id,params,norm.type", "-s", "-params", "-n", "3", "--csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert list(rows[0]) == ["id", "params", "norm.type"]
    params = [int(r["params"]) for r in rows]
    assert len(rows) == 3 and params == sorted(params, reverse=True)


def test_list_on_another_catalogue_and_family(small):
    result = invoke("list", "-C", str(small), "--family", "toy", "--json", "-c", "id")
    assert json.loads(result.output) == [{"id": "toy-1b"}, {"id": "toy-3b"}]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["-w", "vocab>3"], "valid fields:"),
        (["-w", "norm.type=rmsnrm"], "did you mean rmsnorm"),
        (["-w", "year>>2020"], "takes a number"),
        (["--json", "--csv"], "choose one"),
        (["-c", "id,colour"], "unknown field 'colour'"),
        (["-s", "-nope"], "unknown field 'nope'"),
        (["--family", "lama-2"], "did you mean llama-2"),
    ],
)
def test_list_usage_errors_exit_2_without_traceback(args, fragment):
    result = archdb("list", *args)
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


# --- show ---------------------------------------------------------------------------


def test_show_card_derived_and_sources():
    result = invoke("show", "gpt-3-175b")
    assert result.exit_code == 0, result.output
    for text in ("GPT-3 175B", "Derived figures", "d_ff_ratio", "Sources", "Notes", "arxiv.org"):
        assert text in result.output


def test_show_json_has_the_card_and_its_derived_figures():
    data = json.loads(invoke("show", "llama-2-7b", "--json").output)
    assert data["id"] == "llama-2-7b" and data["architecture"]["d_model"] == 4096
    derived = data["derived"]
    for key in ("params_exact", "d_ff_ratio", "aspect_ratio", "head_ratio",
                "kv_cache_bytes_per_token", "flops_per_token"):  # fmt: skip
        assert key in derived
    assert derived["d_ff_ratio"] == pytest.approx(11008 / 4096)


def test_show_a_family_means_its_largest_model():
    data = json.loads(invoke("show", "llama-2", "--json").output)
    assert data["family"] == "llama-2" and data["id"] == "llama-2-70b"


def test_show_unknown_id_suggests_and_exits_1():
    result = archdb("show", "lama-2-7b")
    assert result.returncode == 1
    assert "did you mean" in result.stderr and "llama-2-7b" in result.stderr
    assert "Traceback" not in result.stderr


# --- compare ------------------------------------------------------------------------


def test_compare_llama_2_7b_with_gemma_2_9b():
    result = invoke("compare", "llama-2-7b", "gemma-2-9b")
    assert result.exit_code == 0, result.output
    assert "llama-2-7b" in result.output and "gemma-2-9b" in result.output
    assert "×8" in result.output  # vocab 256000 / 32000
    data = json.loads(invoke("compare", "llama-2-7b", "gemma-2-9b", "--json").output)
    assert data["cards"] == ["llama-2-7b", "gemma-2-9b"]
    rows = {r["field"]: r for r in data["rows"]}
    assert rows["architecture.vocab_size"]["ratios"] == [1.0, 8.0]
    assert rows["architecture.norm.position"]["differs"] is True
    assert rows["architecture.norm.type"]["differs"] is False


def test_compare_only_diff_and_errors():
    out = invoke("compare", "llama-2-7b", "gemma-2-9b", "--only-diff").output
    assert "norm.position" in out and "norm.type " not in out
    assert archdb("compare", "llama-2-7b").returncode == 2
    missing = archdb("compare", "llama-2-7b", "gemma-9")
    assert missing.returncode == 1 and "did you mean" in missing.stderr


# --- export -------------------------------------------------------------------------


def test_export_csv_json_parquet(tmp_path):
    total = len(shipped_catalogue())
    out = tmp_path / "catalogue.csv"
    assert invoke("export", "-o", str(out)).exit_code == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == total
    assert {"id", "architecture.norm.type", "d_ff_ratio", "params_exact"} <= set(rows[0])
    records = json.loads(invoke("export", "--format", "json", "-w", "year>=2024").output)
    assert records and all(r["year"] >= 2024 for r in records)
    pq = tmp_path / "c.parquet"
    assert invoke("export", "-o", str(pq)).exit_code == 0
    import pyarrow.parquet as parquet

    assert parquet.read_table(pq).num_rows == total


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(["--format", "xlsx"], "unknown format"), (["--format", "parquet"], "give a file")],
)
def test_export_usage_errors(args, fragment):
    result = archdb("export", *args)
    assert result.returncode == 2 and fragment in result.stderr


def test_fields_lists_vocabularies():
    data = json.loads(invoke("fields", "--json").output)
    norm = next(f for f in data if f["field"] == "architecture.norm.type")
    assert norm["choices"] == [k.value for k in NormType] and norm["name"] == "norm"
    assert norm["choices"][:2] == ["layernorm", "rmsnorm"]


# --- new ----------------------------------------------------------------------------

NEW_FLAGS = [
    "--id", "toy-2b", "--name", "Toy 2B", "--family", "toy", "--organization", "Example Lab",
    "--release-date", "2024-02-01", "--open-weights", "--params", "2B", "--like", "toy-1b",
    "--set", "d_model=2560", "--set", "heads=20", "--set", "kv_heads=5",
    "--source", "https://example.org/toy-2b/config.json", "--no-interactive",
]  # fmt: skip


def test_new_from_flags_inserts_in_order(small):
    result = invoke("new", *NEW_FLAGS, "-C", str(small))
    assert result.exit_code == 0, result.output
    cat = load_catalogue(small)
    assert cat.ids() == ["toy-1b", "toy-2b", "toy-3b"]
    card = cat.get("toy-2b")
    assert card.architecture.d_model == 2560 and card.params_published == 2_000_000_000
    assert card.sources[0].kind.value == "config"


def test_new_dry_run_writes_nothing(small):
    before = small.read_bytes()
    result = invoke("new", *NEW_FLAGS, "-C", str(small), "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("- id: toy-2b")  # the inherited values: stderr
    assert small.read_bytes() == before


def test_new_with_missing_values_lists_problems_and_exits_1(small):
    result = archdb("new", "--id", "toy-2b", "--no-interactive", "-C", str(small))
    assert result.returncode == 1
    assert "name" in result.stderr and "Traceback" not in result.stderr


def test_new_rejects_unknown_vocabulary_values(small):
    result = archdb("new", *NEW_FLAGS, "--set", "norm.type=batchnorm", "-C", str(small))
    assert result.returncode == 2 and "choose from layernorm, rmsnorm" in result.stderr


def test_new_prompts_offer_vocabularies(small):
    answers = [
        "toy-2b", "Toy 2B", "toy", "Example Lab", "2024-02-01", "true",  # identity
        "2B",  # params_published
        "", "", "", "", "",  # kind, d_model, n_layers, vocab_size, context_length: keep
        "", "", "", "",  # norm: keep the --like card's
        "", "", "", "", "", "", "",  # attention (no window prompt: every layer global)
        "", "", "", "", "", "", "", "", "", "",  # position .. final_logit_softcap: keep
        "https://example.org/toy-2b/config.json", "config", "config.json", "config.json",
        "architecture",
    ]  # fmt: skip
    result = invoke("new", "--like", "toy-1b", "--interactive", "-C", str(small),
                    input="\n".join(answers) + "\n")  # fmt: skip
    assert result.exit_code == 0, result.output
    kinds = ", ".join(k.value for k in NormType)  # layernorm, rmsnorm, ...
    assert f"norm.type ({kinds})" in result.output  # the vocabulary is offered
    assert load_catalogue(small).get("toy-2b").params_published == 2_000_000_000


def test_new_like_interactive_asks_instead_of_inheriting(small):
    """Every value asked is the contributor's: the source's default supports are the
    asked values, and nothing rests on toy-1b's source."""
    answers = [
        "toy-2b", "Toy 2B", "toy", "Example Lab", "2024-02-01", "true", "2B",
        *[""] * 26,  # every architecture prompt: keep the --like card's value
        "https://example.org/toy-2b/config.json", "config", "config.json", "config.json",
        "",  # supports: the default
    ]  # fmt: skip
    result = invoke("new", "--like", "toy-1b", "--interactive", "-C", str(small),
                    input="\n".join(answers) + "\n")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "card fields it supports, comma-separated [architecture]" in result.output
    card = load_catalogue(small).get("toy-2b")
    assert [(s.url, s.supports, s.inherited_from) for s in card.sources] == [
        ("https://example.org/toy-2b/config.json", ["architecture"], None)
    ]
    assert "inherited from" not in result.output


def test_new_asks_for_the_qk_norm_terms_after_a_qk_norm_with_parameters(small):
    answers = [
        "toy-2b", "Toy 2B", "toy", "Example Lab", "2024-02-01", "true", "2B",
        "", "", "", "", "",  # kind .. context_length: keep
        "", "", "", "",  # norm: keep (rmsnorm)
        "", "", "", "", "per-head",  # variant, heads, kv heads, head_dim; a QK norm
        "", "layernorm", "scale",  # its type (asked again when blank) and affine
        "", "",  # logit_softcap, layer_pattern
        "", "", "", "", "", "", "", "", "", "",  # position .. final_logit_softcap: keep
        "https://example.org/toy-2b/config.json", "config", "config.json", "config.json",
        "architecture",
    ]  # fmt: skip
    result = invoke("new", "--like", "toy-1b", "--interactive", "-C", str(small),
                    input="\n".join(answers) + "\n")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "qk_norm_type (layernorm, rmsnorm)" in result.output
    assert "qk_norm_type (layernorm, rmsnorm) is required" in result.stderr  # a blank: again
    att = load_catalogue(small).get("toy-2b").architecture.attention
    assert (att.qk_norm.value, att.qk_norm_type.value, att.qk_norm_affine.value) == (
        "per-head", "layernorm", "scale",
    )  # fmt: skip


# --- import-hf ----------------------------------------------------------------------

IMPORT_FLAGS = ["--source", GEMMA_URL, "--organization", "Google DeepMind",
                "--release-date", "2024-07-31", "--params", "2.6B", "--no-interactive"]  # fmt: skip


def test_import_hf_adds_only_the_card_to_the_shipped_catalogue(catalogue_copy):
    old = catalogue_copy.read_text(encoding="utf-8")
    card_id = "gemma-2-2b-imported"
    result = invoke("import-hf", str(HF / "gemma-2-2b.json"), "--id", card_id, *IMPORT_FLAGS,
                    "-C", str(catalogue_copy))  # fmt: skip
    assert result.exit_code == 0, result.output
    new = catalogue_copy.read_text(encoding="utf-8")
    lines_old, lines_new = old.splitlines(), new.splitlines()
    start = lines_new.index(f"- id: {card_id}")
    end = start + next(i for i, line in enumerate(lines_new[start:]) if not line.strip())
    assert lines_new[:start] + lines_new[end + 1 :] == lines_old  # nothing else changed
    card = load_catalogue(catalogue_copy).get(card_id)
    assert card.architecture.norm.position.value == "double"


def test_import_hf_refuses_an_existing_id(catalogue_copy):
    before = catalogue_copy.read_bytes()
    result = archdb("import-hf", str(HF / "gemma-2-2b.json"), "--id", "gemma-2-9b",
                    *IMPORT_FLAGS, "-C", str(catalogue_copy))  # fmt: skip
    assert result.returncode == 1 and "already exists" in result.stderr
    assert catalogue_copy.read_bytes() == before


def test_import_hf_reports_what_it_could_not_map(small):
    result = archdb("import-hf", str(HF / "mixtral-8x7b-v0.1.json"), *IMPORT_FLAGS,
                    "--dry-run", "-C", str(small))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "not mapped: router_aux_loss_coef" in result.stderr
    assert "recorded on the source: model_type mixtral (MixtralForCausalLM)" in result.stderr
    ignored = next(line for line in result.stderr.splitlines() if "ignored" in line)
    assert "model_type" not in ignored and "architectures" not in ignored
    assert result.stdout.startswith("- id: gemma-2-2b")  # id guessed from the URL
    assert "model_type: mixtral" in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        ([str(HF / "gpt2.json"), "--no-interactive"], 2, "--source"),
        ([str(HF / "gpt2.json"), "--source", GEMMA_URL, "--no-interactive"], 2, "--organization"),
        (["missing.json", *IMPORT_FLAGS], 1, "missing.json"),
        ([str(Path(__file__)), *IMPORT_FLAGS], 1, "not a JSON config"),
    ],
)
def test_import_hf_errors(tmp_path, args, code, fragment):
    result = archdb("import-hf", *args, "-C", str(tmp_path / "models.yaml"))
    assert result.returncode == code, result.stderr
    assert fragment in result.stderr and "Traceback" not in result.stderr


def test_import_hf_unsupported_model_type(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "xlnet", "hidden_size": 8}), encoding="utf-8")
    result = archdb("import-hf", str(cfg), *IMPORT_FLAGS)
    assert result.returncode == 1 and "not supported" in result.stderr


# --- conventions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["list", "show", "compare", "export", "fields", "new", "import-hf"]
)
def test_every_command_has_help_with_examples(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    examples = result.output.split("Examples:", 1)[1] if "Examples:" in result.output else ""
    examples = examples.split("╭", 1)[0]  # the examples end where the option panels begin
    lines = [line.strip(" │") for line in examples.splitlines()]
    commands = [line.split()[:2] for line in lines if line.startswith("archdb ")]
    assert commands and all(c == ["archdb", command] for c in commands), result.output


def test_show_states_the_kv_cache_length():
    result = invoke("show", "mistral-7b", "--context", "4096", "--json")
    derived = json.loads(result.output)["derived"]
    assert derived["kv_cache_context"] == 4096
    assert derived["kv_cache_bytes_per_token"] == 32 * 2 * 8 * 128 * 2  # every layer: all keys
    default = json.loads(invoke("show", "mistral-7b", "--json").output)["derived"]
    assert default["kv_cache_bytes_per_token"] == 32 * 2 * 8 * 128 * 2 * 4096 / 8192


def test_shell_completion_is_offered():
    assert "--install-completion" in invoke("--help").output


LINEAGE_SOURCE = [
    "--source",
    "url=https://example.org/toy-2b/README.md;kind=model-card;locator=Intro;supports=lineage",
]


def test_new_with_a_lineage_names_a_card_of_the_catalogue(small):
    result = invoke("new", *NEW_FLAGS, "--set", "lineage=toy-1b", *LINEAGE_SOURCE, "-C", str(small))
    assert result.exit_code == 0, result.output
    assert load_catalogue(small).get("toy-2b").lineage == "toy-1b"


def test_new_with_an_unknown_lineage_exits_1_and_writes_nothing(small):
    before = small.read_bytes()
    for extra in ([], ["--dry-run"]):
        result = archdb(
            "new", *NEW_FLAGS, "--set", "lineage=toy-0b", *LINEAGE_SOURCE, "-C", str(small), *extra
        )
        assert result.returncode == 1, result.stderr
        assert "lineage 'toy-0b' is not a card of" in result.stderr
        assert "Traceback" not in result.stderr
    assert small.read_bytes() == before


MIRROR_SOURCES = """\
  sources:
    - kind: paper
      title: The paper
      url: https://example.org/paper
      locator: Table 1
      supports: [architecture.d_model]
    - kind: mirror
      title: A copy of config.json
      url: https://example.org/copy/config.json
      locator: config.json
      copies: https://example.org/toy-1b/config.json
      supports: [architecture]
"""


def test_show_marks_values_resting_only_on_a_mirror(write_catalogue):
    text = card_text("toy-1b")
    path = write_catalogue(text[: text.index("  sources:")] + MIRROR_SOURCES)
    result = archdb("show", "toy-1b", "-C", str(path))
    assert result.returncode == 0, result.stderr
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "[mirror only]" not in rows["d_model"]  # the paper states it
    assert "[mirror only]" in rows["n_layers"] and "[mirror only]" in rows["mlp.d_ff"]
    assert "rest only on secondary sources" in result.stdout
    shown = json.loads(archdb("show", "toy-1b", "--json", "-C", str(path)).stdout)
    assert "architecture.n_layers" in shown["mirror_only"]
    assert "architecture.d_model" not in shown["mirror_only"]
    assert shown["derived"]["values_mirror_only"] == len(shown["mirror_only"])


def test_show_names_the_secondary_kind_a_value_rests_on(write_catalogue):
    """A value only a derived file (a quantized re-release's config) supports is marked
    [derived only], not [mirror only]."""
    text = card_text("toy-1b")
    derived = MIRROR_SOURCES.replace("kind: mirror", "kind: derived").replace(
        "      supports: [architecture]",
        "      differs: quantized weights\n      supports: [architecture]",
    )
    path = write_catalogue(text[: text.index("  sources:")] + derived)
    result = archdb("show", "toy-1b", "-C", str(path))
    assert result.returncode == 0, result.stderr
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "[derived only]" in rows["n_layers"] and "[mirror only]" not in result.stdout
    assert "[derived only]" not in rows["d_model"]  # the paper states it
    assert "value(s) marked [derived only]" in result.stdout


def test_show_has_no_mirror_marks_when_official_sources_cover_every_value(small):
    result = archdb("show", "toy-1b", "-C", str(small))
    assert result.returncode == 0 and "mirror only" not in result.stdout
    assert (
        json.loads(archdb("show", "toy-1b", "--json", "-C", str(small)).stdout)["mirror_only"] == []
    )


def test_new_like_lists_and_records_what_it_inherits(small):
    """Every value not given is printed and rests on toy-1b's source, copied with
    inherited_from; the new card's own source supports only the values given."""
    result = archdb("new", *NEW_FLAGS, "-C", str(small))
    assert result.returncode == 0, result.stderr
    card = load_catalogue(small).get("toy-2b")
    given = {"architecture.d_model", "architecture.attention.n_heads",
             "architecture.attention.n_kv_heads"}  # fmt: skip
    own, copied = card.sources
    assert (own.url, own.inherited_from) == ("https://example.org/toy-2b/config.json", None)
    assert sorted(own.supports) == sorted(given)
    assert (copied.url, copied.inherited_from) == (
        "https://example.org/toy-1b/config.json",
        "toy-1b",
    )
    inherited = set(sourced_paths(card)) - given
    assert inherited_paths(card) == dict.fromkeys(inherited, "toy-1b")
    assert f"{len(inherited)} value(s) inherited from toy-1b" in result.stderr
    assert "  norm.type = rmsnorm  (config.json)" in result.stderr
    assert "  n_layers = 16  (config.json)" in result.stderr
    assert "d_model =" not in result.stderr
    shown = archdb("show", "toy-2b", "-C", str(small))
    assert "[inherited from toy-1b]" in shown.stdout and "5632 [inherited" in shown.stdout


def test_new_like_with_a_source_that_supports_everything_inherits_nothing(small):
    flags = [f for f in NEW_FLAGS if f != "https://example.org/toy-2b/config.json"]
    at = flags.index("--source")
    flags[at + 1 : at + 1] = ["url=https://example.org/toy-2b/config.json;supports=architecture"]
    result = archdb("new", *flags, "-C", str(small))
    assert result.returncode == 0, result.stderr
    card = load_catalogue(small).get("toy-2b")
    assert [s.inherited_from for s in card.sources] == [None] and not inherited_paths(card)
    assert "inherited" not in result.stderr


def test_new_like_without_a_value_of_its_own_asks_what_its_source_gives(small):
    """Nothing set: a bare source would support nothing of the architecture (usage error)."""
    sets = {"--set", "d_model=2560", "heads=20", "kv_heads=5"}
    result = archdb("new", *[f for f in NEW_FLAGS if f not in sets], "-C", str(small))
    assert result.returncode == 2, result.stdout
    assert "say which fields it gives (supports=...)" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_inherited_source_names_a_card_of_the_catalogue(write_catalogue):
    inherited = card_text("toy-2b") + "      inherited_from: nope-1b\n"
    path = write_catalogue(card_text("toy-1b") + inherited)
    result = archdb("validate", str(path))
    assert result.returncode == 1
    assert (
        "inherited_from 'nope-1b' is not a card of this catalogue" in result.stdout + result.stderr
    )
    line = (card_text("toy-1b") + inherited).splitlines().index("      inherited_from: nope-1b") + 1
    assert f"models.yaml:{line}" in result.stdout + result.stderr
    itself = write_catalogue(card_text("toy-2b").rstrip("\n") + "\n      inherited_from: toy-2b\n")
    result = archdb("validate", str(itself))
    assert (
        result.returncode == 1 and "inherited_from the card itself" in result.stdout + result.stderr
    )


def test_new_with_a_lineage_but_no_source_for_it_exits_1(small):
    result = archdb("new", *NEW_FLAGS, "--set", "lineage=toy-1b", "-C", str(small))
    assert result.returncode == 1 and "lineage: has no source" in result.stderr
