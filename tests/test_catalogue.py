"""The loader: valid cards load; each kind of mistake is reported at its line and field."""

from __future__ import annotations

import json

import pytest

from archdb.catalogue import (
    DEFAULT_PATH,
    CatalogueError,
    load_catalogue,
    parse_cards,
    secondary_shares,
)
from archdb.errors import UnknownCardError
from archdb.schema import (
    WINDOW_PATH,
    NormType,
    SourceKind,
    catalogue_json_schema,
    mirror_only_paths,
    null_means_unknown,
    resting_kinds,
    sourced_paths,
)
from tests.conftest import VALID_CARD, card_text, shipped_catalogue


def replace(old: str, new: str, text: str = VALID_CARD) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def one_of(vocabulary: type[NormType]) -> str:
    """How the validation error lists a vocabulary's values: 'a', 'b' or 'c'."""
    values = [f"'{v.value}'" for v in vocabulary]
    return ", ".join(values[:-1]) + " or " + values[-1]


def test_valid_card_loads_with_derived_ratios():
    cards, problems = parse_cards(VALID_CARD, "m.yaml")
    assert problems == []
    (card,) = cards
    arch = card.architecture
    assert card.year == 2023
    assert arch.d_ff_ratio == pytest.approx(5632 / 2048)
    assert arch.aspect_ratio == 128
    assert arch.query_groups == 4
    assert arch.head_dim_effective == 128
    assert arch.attention_family == "gqa"
    assert arch.gated is True


# (case, broken text, line, field, message fragment)
BAD_CARDS = [
    (
        "kv heads do not divide",
        replace("n_kv_heads: 4", "n_kv_heads: 5"),
        23,
        "architecture.attention.n_kv_heads",
        "must divide",
    ),
    (
        "string for an int",
        replace("d_model: 2048", 'd_model: "2048"'),
        15,
        "architecture.d_model",
        "valid integer",
    ),
    (
        "float for an int",
        replace("n_layers: 16", "n_layers: 16.0"),
        16,
        "architecture.n_layers",
        "valid integer",
    ),
    (
        "string for a bool",
        replace("open_weights: true", "open_weights: yes"),
        6,
        "open_weights",
        "valid boolean",
    ),
    (
        "unknown field",
        replace("  family: toy\n", "  family: toy\n  colour: red\n"),
        4,
        "colour",
        "unknown field",
    ),
    (
        "misspelt field",
        replace("    d_model: 2048", "    d_modle: 2048"),
        15,
        "architecture.d_modle",
        "did you mean 'd_model'",
    ),
    (
        "vocabulary",
        replace("type: rmsnorm", "type: batchnorm"),
        19,
        "architecture.norm.type",
        one_of(NormType),  # 'layernorm' or 'rmsnorm'; a new kind joins the list
    ),
    (
        "window without local layers",
        replace("sliding_window: null", "sliding_window: 4096"),
        27,
        "architecture.attention.sliding_window",
        "no local",
    ),
    (
        "local layers with an unexplained null window",
        replace("[global]", "[local, global]"),
        27,
        "architecture.attention.sliding_window",
        "null without a note",
    ),
    (
        "chunked layers without window",
        replace("[global]", "[chunked, global]"),
        28,
        "architecture.attention.layer_pattern",
        "set sliding_window",
    ),
    (
        "rope field without rope",
        replace("type: rope,", "type: learned,"),
        29,
        "architecture.position.rope_theta",
        "not rope",
    ),
    ("implausible date", replace("2023-03-01", "2051-01-01"), 5, "release_date", "implausible"),
    (
        "null without a note",
        replace("d_ff: 5632", "d_ff: null"),
        30,
        "architecture.mlp.d_ff",
        "null without a note",
    ),
    (
        "unsourced value",
        replace("supports: [architecture]", "supports: [architecture.d_model, architecture.mlp]"),
        16,
        "architecture.n_layers",
        "has no source",
    ),
    ("bad id slug", replace("- id: toy-1b", "- id: Toy 1B"), 1, "id", "pattern"),
    (
        "moe active > experts",
        replace(
            "moe: null",
            "moe: {n_experts: 4, n_active: 8, n_shared: 0, shared_d_ff: null, "
            "first_dense_layers: 0, layer_period: 1, dense_d_ff: null}",
        ),
        30,
        "architecture.mlp.moe.n_active",
        "exceeds",
    ),
    (
        "missing sources",
        VALID_CARD[: VALID_CARD.index("  sources:")],
        1,
        "sources",
        "required field is missing",
    ),
    (
        "mirror without what it copies",
        replace("    - kind: config\n", "    - kind: mirror\n"),
        36,
        "sources.0",
        "copies is required",
    ),
    (
        "derived without what differs",
        replace(
            "    - kind: config\n",
            "    - kind: derived\n      copies: https://example.org/official/config.json\n",
        ),
        36,
        "sources.0",
        "differs is required for, and only for, kind derived",
    ),
    (
        "defaults without the library",
        replace("    - kind: config\n", "    - kind: defaults\n"),
        36,
        "sources.0",
        "library is required for, and only for, kind defaults",
    ),
    (
        "an official source that copies",
        replace(
            "    - kind: config\n",
            "    - kind: config\n      copies: https://example.org/official/config.json\n",
        ),
        37,
        "sources.0.copies",
        "is for kinds mirror, derived and defaults only",
    ),
    (
        "lineage names itself",
        replace("  open_weights: true\n", "  open_weights: true\n  lineage: toy-1b\n"),
        7,
        "lineage",
        "names the card itself",
    ),
    (
        "lineage without a source",
        replace("  open_weights: true\n", "  open_weights: true\n  lineage: toy-0a\n"),
        7,
        "lineage",
        "has no source",
    ),
    (
        "negative width",
        replace("d_model: 2048", "d_model: -8"),
        15,
        "architecture.d_model",
        "greater than 0",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "field", "fragment"),
    [case[1:] for case in BAD_CARDS],
    ids=[c[0] for c in BAD_CARDS],
)
def test_bad_card_is_reported_at_its_line(text, line, field, fragment):
    cards, problems = parse_cards(text, "m.yaml")
    assert cards == []
    match = [p for p in problems if p.field == field]
    assert match, [str(p) for p in problems]
    assert match[0].line == line, str(match[0])
    assert fragment in match[0].message
    assert str(match[0]).startswith(f"m.yaml:{line}:")
    assert match[0].card_id in ("toy-1b", "Toy 1B")


def test_an_unpublished_local_window_is_a_null_with_a_note():
    banded = replace("[global]", "[global, local]") + (
        "  notes:\n    architecture.attention.sliding_window: The band is not published.\n"
    )
    (card,), problems = parse_cards(banded, "m.yaml")
    assert problems == []
    assert card.architecture.attention.sliding_window is None
    assert null_means_unknown(card, WINDOW_PATH)
    (dense,), _ = parse_cards(VALID_CARD, "m.yaml")
    assert not null_means_unknown(dense, WINDOW_PATH)  # no local layer: the window is unused


def test_a_mirror_names_the_official_artifact_it_copies():
    mirror = replace(
        "    - kind: config\n",
        "    - kind: mirror\n      copies: https://example.org/official/config.json\n",
    )
    (card,), problems = parse_cards(mirror, "m.yaml")
    assert problems == []
    assert mirror_only_paths(card) == sourced_paths(card)
    (official,), _ = parse_cards(VALID_CARD, "m.yaml")
    assert mirror_only_paths(official) == []


@pytest.mark.parametrize(
    ("kind", "extra"),
    [
        ("mirror", "      copies: https://example.org/official/config.json\n"),
        (
            "derived",
            "      copies: https://example.org/official/config.json\n"
            "      differs: 'a quantization: adds quantization_config'\n",
        ),
        ("defaults", "      library: 'transformers 5.25.0 ToyConfig'\n"),
    ],
)
def test_each_value_rests_on_its_strongest_source_kind(kind, extra):
    secondary = replace("    - kind: config\n", f"    - kind: {kind}\n{extra}")
    (card,), problems = parse_cards(secondary, "m.yaml")
    assert problems == []
    rests = resting_kinds(card)
    assert set(rests) == set(sourced_paths(card))
    assert set(rests.values()) == {SourceKind(kind)}
    assert mirror_only_paths(card) == sourced_paths(card)
    (official,), _ = parse_cards(VALID_CARD, "m.yaml")
    shares = secondary_shares([card, official])
    n = len(sourced_paths(card))
    assert shares[kind] == (n, n / (2 * n))  # one card of two rests on the copy
    assert all(count == 0 for k, (count, _) in shares.items() if k != kind)


def test_what_values_rest_on_follows_a_copy_with_other_sources():
    """Validation keeps each card's resting kinds; a copy given other sources (or another
    architecture) is worked out again, never answered from the original's."""
    (card,), _ = parse_cards(VALID_CARD, "m.yaml")
    assert set(resting_kinds(card).values()) == {SourceKind.CONFIG}
    mirror = card.sources[0].model_copy(
        update={"kind": SourceKind.MIRROR, "copies": "https://example.org/config.json"}
    )
    copied = card.model_copy(update={"sources": [mirror]})
    assert set(resting_kinds(copied).values()) == {SourceKind.MIRROR}
    narrower = card.sources[0].model_copy(update={"supports": ["architecture.d_model"]})
    unsourced = card.model_copy(update={"sources": [narrower]})
    assert resting_kinds(unsourced)["architecture.d_model"] is SourceKind.CONFIG
    assert resting_kinds(unsourced)["architecture.n_layers"] is None


def test_lineage_must_name_a_card_of_the_catalogue():
    child = replace(
        "  open_weights: true\n", "  open_weights: true\n  lineage: toy-1b\n", card_text("toy-2b")
    ).replace("supports: [architecture]", "supports: [architecture, lineage]")
    cards, problems = parse_cards(VALID_CARD + child, "m.yaml")
    assert problems == [] and cards[1].lineage == "toy-1b"
    orphan = child.replace("lineage: toy-1b", "lineage: toy-0b")
    _, problems = parse_cards(VALID_CARD + orphan, "m.yaml")
    assert [(p.card_id, p.field, p.line) for p in problems] == [
        ("toy-2b", "lineage", VALID_CARD.count("\n") + 7)
    ]
    assert "not a card of this catalogue" in problems[0].message


def test_duplicate_key_is_an_error_not_a_silent_overwrite():
    text = replace("    d_model: 2048\n", "    d_model: 2048\n    d_model: 4096\n")
    cards, problems = parse_cards(text, "m.yaml")
    assert cards == []
    assert [(p.line, p.field) for p in problems] == [(16, "architecture.d_model")]
    assert "duplicate key" in problems[0].message


def test_every_duplicate_key_of_a_file_is_reported():
    one = replace("  name: Toy 1B\n", "  name: Toy 1B\n  name: Again\n")
    two = replace("    n_layers: 16\n", "    n_layers: 16\n    n_layers: 17\n", card_text("toy-2b"))
    _, problems = parse_cards(one + two, "m.yaml")
    assert [p.card_id for p in problems] == ["toy-1b", "toy-2b"]


def test_duplicate_id_points_at_the_second_card():
    text = VALID_CARD + VALID_CARD
    cards, problems = parse_cards(text, "m.yaml")
    assert len(cards) == 1
    (problem,) = problems
    second = VALID_CARD.count("\n") + 1
    assert (problem.line, problem.field) == (second, "id")
    assert "duplicate id" in problem.message


@pytest.mark.parametrize(
    "tagged",
    [
        "!!python/object/apply:os.system [echo hacked]",
        "!!python/name:os.system",
        "!custom Toy",
        "!!binary aGVsbG8=",
    ],
)
def test_non_standard_tags_are_refused(tagged):
    text = replace("name: Toy 1B", f"name: {tagged}")
    cards, problems = parse_cards(text, "m.yaml")
    assert cards == []
    assert problems and problems[0].line == 2
    assert "tag" in problems[0].message


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("name: Toy 1B", "name: &n !custom Toy"),  # after an anchor
        ("name: Toy 1B", "name:\t  !custom Toy"),  # after blanks and a tab
        ("name: Toy 1B", "name:\n    !custom Toy"),  # first on its line
        ("supports: [architecture]", "supports: [!custom architecture]"),  # in flow
        ("supports: [architecture]", "supports:\n      - !custom architecture"),
    ],
)
def test_tags_are_refused_wherever_a_node_starts(old, new):
    cards, problems = parse_cards(replace(old, new), "m.yaml")
    assert cards == [] and any("tag" in p.message for p in problems)


def test_alias_bomb_is_refused_quickly():
    levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        levels.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    text = "- " + "\n  ".join(levels) + "\n"
    cards, problems = parse_cards(text, "m.yaml")
    assert cards == []
    assert any("alias" in p.message for p in problems)


def test_small_aliases_are_allowed():
    text = replace("supports: [architecture]", "supports: &all [architecture]")
    assert parse_cards(text, "m.yaml")[1] == []


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (replace("layer_pattern: [global]", "layer_pattern: [global"), 29, "YAML syntax"),
        ("models:\n  - id: x\n", 1, "expected a list"),
        ("", 1, "expected a list"),
        ("- id: a\n\tname: tab\n", 2, "YAML"),
    ],
)
def test_broken_yaml_is_reported_with_a_line(text, line, fragment):
    cards, problems = parse_cards(text, "m.yaml")
    assert cards == []
    assert problems[0].line == line, str(problems[0])
    assert fragment in problems[0].message


def test_all_errors_of_a_file_are_reported_in_one_run():
    text = replace("n_kv_heads: 4", "n_kv_heads: 3") + replace(
        "d_model: 2048", "d_model: zero", card_text("toy-2b")
    )
    _, problems = parse_cards(text, "m.yaml")
    assert {(p.card_id, p.field) for p in problems} == {
        ("toy-1b", "architecture.attention.n_kv_heads"),
        ("toy-2b", "architecture.d_model"),
    }


def test_cards_must_be_sorted_by_id():
    _, problems = parse_cards(card_text("toy-2b") + card_text("toy-1b"), "m.yaml")
    (problem,) = problems
    assert problem.card_id == "toy-1b"
    assert "move 'toy-1b' before 'toy-2b'" in problem.message


def test_load_catalogue_raises_with_every_problem(write_catalogue):
    path = write_catalogue(replace("n_kv_heads: 4", "n_kv_heads: 3"))
    with pytest.raises(CatalogueError) as info:
        load_catalogue(path)
    assert len(info.value.problems) == 1
    assert f"{path}:23:" in str(info.value)


def test_resolve_by_id_family_and_suggestion(write_catalogue):
    big = replace(
        "params_published: 1_000_000_000", "params_published: 7_000_000_000", card_text("toy-7b")
    )
    catalogue = load_catalogue(write_catalogue(VALID_CARD + big))
    assert catalogue.resolve("toy-1b").id == "toy-1b"
    assert catalogue.resolve("toy").id == "toy-7b"  # a family means its largest model
    with pytest.raises(UnknownCardError, match="did you mean toy-1b"):
        catalogue.resolve("toy-1")


def test_shipped_catalogue_is_valid():
    catalogue = shipped_catalogue()
    assert len(catalogue) >= 1
    assert catalogue.ids() == sorted(catalogue.ids())


def test_committed_json_schema_is_current():
    committed = json.loads(DEFAULT_PATH.with_name("models.schema.json").read_text())
    assert committed == catalogue_json_schema(), "stale schema: run `archdb schema`"


def test_catalogue_header_names_the_schema_for_editors():
    first_line = DEFAULT_PATH.read_text(encoding="utf-8").splitlines()[0]
    assert first_line == "# yaml-language-server: $schema=./models.schema.json"


def test_an_exclamation_mark_in_prose_is_not_a_tag(monkeypatch):
    """Nor does it cost the slow node pass ("!=" inside a note's continuation line)."""
    from archdb import locate

    def no_node_pass(*args):
        raise AssertionError("the node pass ran for prose")

    monkeypatch.setattr(locate, "structure_problems", no_node_pass)
    text = replace(
        "      supports: [architecture]\n",
        "      supports: [architecture]\n  notes:\n    architecture: n_heads\n"
        "      times 2 != d_model here!\n",
    )
    cards, problems = parse_cards(text, "m.yaml")
    assert problems == [] and cards[0].notes["architecture"] == "n_heads times 2 != d_model here!"
