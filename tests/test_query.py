"""Filter expressions: parsing, field resolution, typed values, null semantics, sorting."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from archdb import columns, query
from archdb.catalogue import parse_cards
from archdb.query import Query, QueryError, parse_columns, parse_sort, parse_where, select
from tests.conftest import VALID_CARD, card_text, shipped_catalogue


def cards_of(text: str):
    cards, problems = parse_cards(text)
    assert problems == []
    return cards


# Three synthetic cards: toy-1b (rmsnorm, GQA, 32k vocab, 2023), plus two variants.
SYNTHETIC = (
    card_text("toy-1b")
    + card_text("toy-2b")
    .replace("release_date: 2023-03-01", "release_date: 2024-06-01")
    .replace("vocab_size: 32000", "vocab_size: 151936")
    .replace("n_kv_heads: 4", "n_kv_heads: 16")
    .replace("activation: swiglu", "activation: geglu")
    + card_text("toy-3b")
    .replace("release_date: 2023-03-01", "release_date: 2025-01-15")
    .replace("vocab_size: 32000", "vocab_size: 256000")
    .replace("type: rmsnorm", "type: layernorm")
    .replace("affine: scale,", "affine: scale-and-bias,")
    .replace("activation: swiglu", "activation: gelu")
    .replace("sliding_window: null", "sliding_window: 4096")
    .replace("layer_pattern: [global]", "layer_pattern: [local, global]")
)


@pytest.fixture(scope="module")
def cards():
    return cards_of(SYNTHETIC)


def ids(cards, *where: str, **kwargs) -> list[str]:
    return [r["id"] for r in select(cards, Query(parse_where(where), **kwargs))]


# --- resolution ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "column"),
    [
        ("architecture.norm.type", "architecture.norm.type"),
        ("norm.type", "architecture.norm.type"),
        ("norm", "architecture.norm.type"),
        ("activation", "architecture.mlp.activation"),
        ("vocab_size", "architecture.vocab_size"),
        ("year", "year"),
        ("params", "params_published"),
        ("attention", "attention_family"),
        ("d_ff_ratio", "d_ff_ratio"),
        ("training.z_loss", "training.z_loss"),
        ("z_loss", "training.z_loss"),
        ("bias.mlp", "architecture.bias.mlp"),
    ],
)
def test_field_names_resolve_to_table_columns(name, column):
    assert query.resolve_field(name).name == column


def test_unknown_field_names_the_valid_ones_and_a_guess():
    with pytest.raises(QueryError) as err:
        query.resolve_field("vocab")
    message = str(err.value)
    assert "did you mean vocab_size" in message
    assert "valid fields:" in message and "activation" in message and "year" in message


def test_ambiguous_leaf_asks_which_one():
    with pytest.raises(QueryError, match=r"ambiguous.*norm.*position"):
        query.resolve_field("type")


def test_a_leaf_names_its_shallowest_field_when_only_one_is_that_shallow():
    """A sub-block's override keeps its dotted path: n_kv_heads stays attention's."""
    assert query.resolve_field("n_kv_heads") == query.resolve_field("attention.n_kv_heads")
    assert query.resolve_field("n_heads") == query.resolve_field("attention.n_heads")
    assert query.resolve_field("rotary_fraction") == query.resolve_field("position.rotary_fraction")
    with pytest.raises(QueryError, match=r"ambiguous"):  # two at the same depth
        query.resolve_field("n_groups")


def test_vague_leaf_is_not_a_short_name():
    # "mlp" alone would silently mean bias.mlp
    with pytest.raises(QueryError):
        query.resolve_field("mlp")


# --- parsing and values ---------------------------------------------------------------


def test_operators_and_typed_values():
    (c,) = parse_where(["vocab_size>100k"])
    assert (c.op, c.values) == (">", (100_000,))
    (c,) = parse_where(["params>=7.5B"])
    assert c.values == (7_500_000_000,)
    (c,) = parse_where(["activation in (swiglu, GeGLU)"])
    assert (c.op, c.values) == ("in", ("swiglu", "geglu"))
    (c,) = parse_where(["norm.type not in (layernorm)"])
    assert c.op == "not in"
    (c,) = parse_where(["d_ff_ratio>=8/3"])
    assert c.values[0] == pytest.approx(8 / 3)
    (c,) = parse_where(["release_date>=2024-06"])
    assert c.values == ("2024-06-01",)
    (c,) = parse_where(["tied_embeddings=yes"])
    assert c.values == (True,)
    (c,) = parse_where(["qk_norm=none"])  # "none" is a value of qk_norm, not null
    assert c.values == ("none",)
    (c,) = parse_where(["sliding_window=none"])
    assert c.values == (None,)


def test_and_joins_conditions_in_one_expression():
    assert len(parse_where(["year>=2024 and vocab_size>100000", "norm=rmsnorm"])) == 3


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("norm.type", "cannot read"),
        ("norm.type=", "no value"),
        ("norm.type=rmsnrm", "did you mean rmsnorm"),
        ("activation>gelu", "compares numbers or dates"),
        ("year=twenty", "takes a number"),
        ("release_date>=June", "takes a date"),
        ("open_weights=maybe", "true or false"),
        ("vocab_size>null", "null cannot be compared"),
        ("activation in ()", "list the values"),
        ("d_model~40", "needs a text field"),
        ("colour=red", "unknown field 'colour'"),
    ],
)
def test_malformed_expressions_say_what_is_wrong(expression, fragment):
    with pytest.raises(QueryError, match=fragment):
        parse_where([expression])


# --- evaluation -----------------------------------------------------------------------


def test_filters_combine_with_and(cards):
    assert ids(cards, "norm.type=rmsnorm") == ["toy-1b", "toy-2b"]
    assert ids(cards, "year>=2024") == ["toy-2b", "toy-3b"]
    assert ids(cards, "year>=2024", "vocab_size>200k") == ["toy-3b"]
    assert ids(cards, "activation in (swiglu,geglu)") == ["toy-1b", "toy-2b"]
    assert ids(cards, "activation not in (swiglu,geglu)") == ["toy-3b"]
    assert ids(cards, "attention=gqa") == ["toy-1b", "toy-3b"]
    assert ids(cards, "attention=mha") == ["toy-2b"]
    assert ids(cards, "id~2B") == ["toy-2b"]  # ~ ignores case


def test_list_fields_match_any_entry(cards):
    assert ids(cards, "layer_pattern=local") == ["toy-3b"]
    assert ids(cards, "layer_pattern!=local") == ["toy-1b", "toy-2b"]
    assert ids(cards, "layer_pattern~glob") == ["toy-1b", "toy-2b", "toy-3b"]


def test_null_matches_only_an_explicit_null(cards):
    assert ids(cards, "sliding_window=null") == ["toy-1b", "toy-2b"]
    assert ids(cards, "sliding_window!=null") == ["toy-3b"]
    assert ids(cards, "sliding_window<10000") == ["toy-3b"]  # null is not "less than"
    assert ids(cards, "sliding_window!=4096") == []  # unknown/unused is not "different"


def test_sort_descending_keeps_nulls_last(cards):
    assert ids(cards, sort=parse_sort("-vocab_size")) == ["toy-3b", "toy-2b", "toy-1b"]
    assert ids(cards, sort=parse_sort("-window,id")) == ["toy-3b", "toy-1b", "toy-2b"]
    assert ids(cards, sort=parse_sort("year"), limit=2) == ["toy-1b", "toy-2b"]


def test_families_filter_and_unknown_family(cards):
    assert ids(cards, families=["toy"]) == ["toy-1b", "toy-2b", "toy-3b"]
    with pytest.raises(QueryError, match=r"no family named tyo.*did you mean toy"):
        ids(cards, families=["tyo"])


def test_columns_project_rows_under_the_typed_names(cards):
    columns = parse_columns("id,norm.type,d_ff_ratio")
    (row, *_) = query.project(select(cards, Query()), columns)
    assert row == {"id": "toy-1b", "norm.type": "rmsnorm", "d_ff_ratio": pytest.approx(2.75)}
    assert len(parse_columns("all")) == len(query.fields())


def test_gqa_2024_big_vocab_on_the_shipped_catalogue():
    """The issue's example: every 2024+ model with GQA and a vocabulary over 100k."""
    cat = shipped_catalogue()
    found = ids(cat.cards, "year>=2024", "attention=gqa", "vocab_size>100000")
    assert found, "the shipped catalogue has 2024 GQA models with big vocabularies"
    for card in (cat.get(i) for i in found):
        arch = card.architecture
        assert card.year >= 2024 and arch.vocab_size > 100_000
        assert 1 < arch.attention.n_kv_heads < arch.attention.n_heads


def test_valid_card_fixture_still_single():
    assert len(cards_of(VALID_CARD)) == 1


def test_counts_are_computed_only_when_a_query_reads_them(cards):
    """The analytic formula (about 2 ms a card) runs only for a count in a condition, a
    sort key or a shown column; every other row is the same either way."""
    plain = parse_columns(None)
    assert not query.needs_counts(Query(parse_where(["year>=2024"])), plain)
    assert query.needs_counts(Query(parse_where(["flops_per_token>0"])), plain)
    assert query.needs_counts(Query(sort=parse_sort("-params_exact")), plain)
    assert query.needs_counts(Query(), parse_columns("id,kv_cache_bytes_per_token"))
    assert query.needs_counts(Query())  # no columns named: the caller may read any
    lean = select(cards, Query(), plain)
    full = select(cards, Query())
    assert all(row["params_exact"] is None for row in lean)
    assert all(row["params_exact"] > 0 for row in full)
    shown = [c.field.name for c in plain]
    assert query.project(lean, plain) == query.project(full, plain)
    assert shown and all(name not in columns.COUNTED_COLUMNS for name in shown)
    counted = select(cards, Query(parse_where(["params_exact>0"])), plain)
    assert [r["id"] for r in counted] == ["toy-1b", "toy-2b", "toy-3b"]
    assert all(
        row["params_exact"] == f["params_exact"] for row, f in zip(counted, full, strict=True)
    )


def _in_a_fresh_interpreter(path, env: dict[str, str], *args: str) -> tuple[str, list[str]]:
    """`archdb ARGS` piped, in a new interpreter: its output and the heavy modules it loaded."""
    code = (
        "import json, sys; from archdb_cli.main import app\n"
        "try: app([*sys.argv[2:], '-C', sys.argv[1]])\n"
        "except SystemExit: pass\n"
        "heavy = ('archdb.measure.analytic', 'archdb.plan', 'archdb_hf.families', "
        "'importlib.metadata', 'rich', 'pydantic', 'archdb.schema', 'torch')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))"
    )
    run = subprocess.run([sys.executable, "-c", code, str(path), *args], capture_output=True,
                         text=True, timeout=120, env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr
    output, _, modules = run.stdout.rstrip().rpartition("\n")
    return output, json.loads(modules)


def test_a_plain_piped_list_reads_its_snapshot_without_pydantic_the_schema_or_rich(
    write_catalogue,
):
    """The first `archdb list` of a catalogue validates it and stores its snapshot (the
    formula counts each card once); a later one, piped, reads the snapshot: pydantic, the
    schema, the formula, the plan, importlib.metadata and Rich stay unimported. A variable
    that makes Rich style a pipe brings the Rich table back."""
    path = write_catalogue(VALID_CARD)
    plain = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    first, modules = _in_a_fresh_interpreter(path, plain, "list")
    assert "pydantic" in modules and "archdb.measure.analytic" in modules
    output, modules = _in_a_fresh_interpreter(path, plain, "list")
    assert output == first and "toy-1b" in output and "\x1b[" not in output
    assert modules == []
    output, modules = _in_a_fresh_interpreter(path, {**plain, "FORCE_COLOR": "1"}, "list")
    assert "toy-1b" in output and "\x1b[" in output  # styled by Rich
    assert "rich.table" in modules


def test_show_reads_its_counts_and_fidelity_from_the_caches(write_catalogue, private_cache):
    """The first `show` of a card counts it and judges its fidelity (the plan, the family
    specs); the next reads both from the caches and loads neither."""
    path = write_catalogue(VALID_CARD)
    plain = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    first, modules = _in_a_fresh_interpreter(path, plain, "show", "toy-1b")
    assert "archdb.plan" in modules and "archdb_hf.families.registry" in modules
    again, modules = _in_a_fresh_interpreter(path, plain, "show", "toy-1b")
    assert again == first and "Fidelity: not comparable" in again
    assert not [m for m in modules if m.startswith(("archdb.plan", "archdb_hf.families"))]


@pytest.mark.parametrize(
    ("args", "expected"),
    [(("trends",), "share of each year's families"), (("compare", "toy-1a", "toy-1b"), "toy-1b")],
)
def test_piped_trends_and_compare_never_import_rich(write_catalogue, args, expected):
    path = write_catalogue(card_text("toy-1a") + "\n" + card_text("toy-1b"))
    plain = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    output, modules = _in_a_fresh_interpreter(path, plain, *args)
    assert expected in output and "\x1b[" not in output
    assert not [m for m in modules if m.startswith("rich")]
