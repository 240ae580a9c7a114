"""The family specs (archdb_hf.families): one per transformers model_type, both directions.

The round trip is the contract: a card written as its family's config (card -> config)
and read back by import-hf (config -> card) gives the card again, on every value the card
records. Where a family's config has no key for a value yet, the gap is listed in
``ROUND_TRIP_GAPS`` and the test checks the list is exact, so a fixed gap must leave it.

A null the builder fills (``fill_unknowns``' assumptions) is not a value the card records:
a Mamba card records no context length (MambaConfig has no max_position_embeddings, the
model has no position limit) and no QK norm (it has no attention), import-hf reads none
from the config and keeps both null, and the builder's 2048 and "none" stay its own.
"""

from __future__ import annotations

import copy
import functools
import random

import pytest
from pydantic import BaseModel

from archdb.plan.layout import fill_unknowns
from archdb.schema import Architecture, Card, LayerKind, NormType
from archdb_hf.families import config_keys
from archdb_hf.families.card_to_config import NotRepresentable
from archdb_hf.families.registry import SPECS, model_type_of
from archdb_hf.reference import convert, read_back, round_trip_losses
from tests.conftest import apply_changes, shipped_catalogue

# family -> card fields its writer does not yet carry into the config
ROUND_TRIP_GAPS: dict[str, frozenset[str]] = {}


def _cards_by_family():
    found: dict[str, list] = {}
    for card in shipped_catalogue():
        model_type = model_type_of(card)
        if model_type is not None and SPECS[model_type].imports:
            found.setdefault(model_type, []).append(card)
    return found


CARDS_BY_FAMILY = _cards_by_family()


@pytest.mark.parametrize("model_type", sorted(CARDS_BY_FAMILY))
def test_every_card_round_trips_through_its_family_config(model_type):
    losses: dict[str, set[str]] = {}
    for card in CARDS_BY_FAMILY[model_type]:
        try:
            lost = round_trip_losses(card.architecture, model_type)
        except NotRepresentable:
            continue  # the family cannot build the card: fidelity says so
        if lost:
            losses[card.id] = lost
    found = set().union(*losses.values()) if losses else set()
    assert found == ROUND_TRIP_GAPS.get(model_type, frozenset()), losses


def _without_each_part(arch: Architecture):
    """The card, then the card with each of its optional parts (an MoE, MLA, a mixer's
    sizes, ...) removed, where the result is still a valid card."""
    yield arch
    data = arch.model_dump(mode="json")

    def parts(model: BaseModel, prefix: str = ""):
        for name, info in type(model).model_fields.items():
            value = getattr(model, name)
            if isinstance(value, BaseModel):
                if not info.is_required():
                    yield f"{prefix}{name}"
                yield from parts(value, f"{prefix}{name}.")

    for path in parts(arch):
        changed = copy.deepcopy(data)
        *head, last = path.split(".")
        functools.reduce(dict.__getitem__, head, changed)[last] = None
        try:
            yield Architecture.model_validate(changed)
        except ValueError:
            continue


def test_every_family_writes_any_card_or_says_why_not():
    """Every family's writer, given every shipped card (and each card without one of its
    optional parts), writes a config or refuses with NotRepresentable: a card of another
    shape (a dense card for an MoE family) is a refusal, never a crash."""
    crashes = []
    for card in shipped_catalogue():
        for arch in _without_each_part(card.architecture):
            filled = fill_unknowns(arch)[0]
            for model_type in SPECS:
                try:
                    convert(filled, model_type)
                except NotRepresentable:
                    pass
                except Exception as exc:  # the test lists every crash
                    crashes.append(f"{card.id} as {model_type}: {type(exc).__name__}: {exc}")
    assert not crashes, crashes[:5]


def _mutants(count: int, seed: int = 0):
    """Shipped cards with one or two architecture values replaced by another card's value
    at the same path (or null), as long as the schema accepts them."""
    rnd = random.Random(seed)
    cards = list(shipped_catalogue())
    dumps = {card.id: card.architecture.model_dump(mode="json") for card in cards}
    seen: dict[str, list] = {}
    for data in dumps.values():
        for path, value in _leaves(data):
            seen.setdefault(path, []).append(value)
    made = 0
    while made < count:
        card = rnd.choice(cards)
        data = copy.deepcopy(dumps[card.id])
        for _ in range(rnd.choice((1, 1, 2))):
            path = rnd.choice(sorted(p for p, _ in _leaves(data)))
            apply_changes(data, {path: rnd.choice([*seen.get(path, []), None])})
        try:
            arch = Architecture.model_validate(data)
        except ValueError:
            continue
        made += 1
        yield card, arch


def _leaves(data: dict, prefix: str = ""):
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")
        elif value is not None:
            yield f"{prefix}{key}", value


def test_a_config_any_writer_accepts_builds_the_count_the_card_has():
    """Writer fuzz, seeded: 1,500 mutants of shipped cards, each written by its own family
    and by one other. Where a writer accepts a mutant, transformers' model of the config
    (the card import-hf reads back) has the mutant's exact parameter count: a value the
    config drops without changing the count only changes outputs ("count-exact")."""
    import archdb
    from archdb.errors import ArchdbError

    rnd = random.Random(1)
    importing = sorted(m for m, spec in SPECS.items() if spec.imports)
    wrong = []
    for card, arch in _mutants(1500):
        filled = fill_unknowns(arch)[0]
        for model_type in {model_type_of(card), rnd.choice(importing)} & set(importing):
            try:
                back = read_back(convert(filled, model_type), model_type)
                mine = archdb.params(card.model_copy(update={"architecture": filled})).total
            except (NotRepresentable, ArchdbError):
                continue
            # OPT's two extra position rows are the card's to state (card_to_config)
            if model_type == "opt" and filled.position.learned_rows is not None:
                continue
            theirs = back and archdb.params(card.model_copy(update={"architecture": back})).total
            if theirs != mine:
                wrong.append(f"{card.id} as {model_type}: {mine} != {theirs}")
    assert not wrong, wrong[:5]


# --- the specs --------------------------------------------------------------------------


def test_a_derived_family_inherits_fixed_choices_but_not_what_names_its_parent():
    from archdb_hf.families.gemma import GEMMA2, GEMMA3_TEXT
    from archdb_hf.keymap import from_keys

    assert GEMMA3_TEXT.parent == "gemma2"
    assert (GEMMA3_TEXT.norm_position, GEMMA3_TEXT.tied_default) == ("double", True)
    assert GEMMA3_TEXT.write is not GEMMA2.write
    child = GEMMA2.derive("gemma2_like", layer="L", config_class="C", model_class="M")
    # a writer of its own is not inherited: without one, the keys say everything
    assert child.write.hook is from_keys and child.write is not GEMMA2.write
    assert child.logit_error is None and child.aliases == ()
    assert child.norm_position == "double" and child.module == "gemma2_like"
    with pytest.raises(ValueError, match="names its own config_class, model_class"):
        GEMMA2.derive("nameless", layer="L")
    assert child.norm is NormType.RMSNORM and child.default_pattern[0] is LayerKind.LOCAL
    with pytest.raises(ValueError, match="'rmsnrom' is not a valid NormType"):
        GEMMA2.derive("misspelt", layer="L", config_class="C", model_class="M", norm="rmsnrom")


def test_every_parent_is_a_family_and_every_alias_reaches_one():
    from archdb_hf.families.registry import ALIASES

    for spec in SPECS.values():
        assert spec.parent is None or spec.parent in SPECS, spec.model_type
        assert spec.logit_error is None or spec.names is not None, spec.model_type
    assert not set(ALIASES) & set(SPECS)
    assert {ALIASES[a] for a in ("gemma3", "qwen3_5_moe", "minimax_m1")} == {
        "gemma3_text",
        "qwen3_5_moe_text",
        "minimax",
    }


# --- routing a card by its config source --------------------------------------------------


def _with_config_source(model_type: str | None, model_class: str | None = None, **fields):
    from tests.conftest import make_card

    data = make_card("routed-7b", **fields).model_dump()
    stated = {"kind": "config", "model_type": model_type, "model_class": model_class}
    data["sources"][0] |= stated
    return Card.model_validate(data)


def test_a_card_routes_by_the_model_type_its_config_source_states():
    assert model_type_of(_with_config_source("qwen2", family="llama-2")) == "qwen2"
    assert model_type_of(_with_config_source("gemma3", family="anything")) == "gemma3_text"
    custom = _with_config_source("kimi_k2", "DeepseekV3ForCausalLM", family="llama-2")
    assert model_type_of(custom) == "deepseek_v3"  # a custom type, through its class
    assert model_type_of(_with_config_source("unknown_lm", "UnknownForCausalLM")) is None


def test_a_card_without_a_stated_model_type_falls_back_to_its_family():
    from tests.conftest import make_card

    assert model_type_of(make_card("routed-7b", family="llama-2")) == "llama"
    assert model_type_of(make_card("routed-7b", family="no-such-family")) is None


def test_model_type_is_stated_by_config_sources_only():
    from pydantic import ValidationError

    from archdb.schema import Source

    paper = {"kind": "paper", "title": "A paper", "url": "https://x.org", "locator": "S1"}
    with pytest.raises(ValidationError, match="config sources"):
        Source.model_validate(paper | {"supports": ["architecture"], "model_type": "llama"})
    config = paper | {"kind": "config", "supports": ["architecture"]}
    with pytest.raises(ValidationError, match="model_class goes with"):
        Source.model_validate(config | {"model_class": "LlamaForCausalLM"})
    with pytest.raises(ValidationError, match="pattern"):
        Source.model_validate(config | {"model_type": "llama\x1b[31m"})


def test_import_hf_records_the_configs_model_type_and_class():
    import json
    from pathlib import Path

    from archdb_hf.importer import Identity, import_config

    config = json.loads(Path("tests/fixtures/hf/gemma-2-2b.json").read_text())
    identity = Identity("g-2b", "G 2B", "g", "Lab", "2024-01-01")
    card = import_config(config, source_url="https://x.org/config.json", identity=identity).card
    source = card["sources"][0]
    assert (source["model_type"], source["model_class"]) == ("gemma2", "Gemma2ForCausalLM")
    hostile = config | {"model_type": "gemma2", "architectures": ["<b>Gemma2</b>"]}
    card = import_config(hostile, source_url="https://x.org/config.json", identity=identity).card
    assert "model_class" not in card["sources"][0]


def test_a_card_whose_function_the_written_config_loses_is_not_logit_exact(monkeypatch):
    from archdb import fidelity
    from archdb_hf import reference

    (card,) = [c for c in CARDS_BY_FAMILY["llama"] if c.id == "llama-2-7b"]
    assert fidelity._judged(card).level == "logit-exact"
    monkeypatch.setattr(reference, "function_keys", lambda spec, a, written: {})
    judged = fidelity._judged(card)  # the writer now drops the norm epsilon
    assert (judged.level, judged.why) == (
        "count-exact",
        "llama: the config written for it loses norm.eps",
    )


@pytest.mark.parametrize("model_type", sorted(m for m, s in SPECS.items() if s.imports))
def test_transformers_default_config_of_every_family_round_trips(model_type):
    """Every importing family, catalogue cards or not: the card import-hf makes of
    transformers' own default config comes back whole through the family's writer."""
    import warnings

    transformers = pytest.importorskip("transformers")
    from archdb.writer import validate_card
    from archdb_hf.importer import Identity, import_config
    from archdb_hf.testing import DEFAULT_COMPLETIONS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()
        config = transformers.AutoConfig.for_model(
            model_type, **DEFAULT_COMPLETIONS.get(model_type, {})
        )
    identity = Identity("default-1b", "Default 1B", "default", "Example Lab", "2025-01-01")
    imported = import_config(
        {**config.to_dict(), "model_type": model_type},
        source_url="https://example.org/config.json",
        identity=identity,
    )
    card = validate_card(imported.card)
    assert round_trip_losses(card.architecture, model_type) == set()


# (family, card): a card another family's writer accepts though the config loses values
# that change no count and no logit of transformers' causal LM
CROSS_FAMILY_GAPS: dict[tuple[str, str], frozenset[str]] = {
    # MTP modules: no causal-LM class builds them, and these configs have no key for them
    **{pair: frozenset({"mtp.n_modules", "mtp.layers_per_module"})
       for pair in (("deepseek_v2", "kimi-k2.6"), ("qwen2", "mimo-7b"), ("seed_oss", "mimo-7b"),
                    ("glm", "mimo-7b"))},
    # one group holding every expert routes as no groups, for which hy_v3 has no key
    ("hy_v3", "sarvam-30b"): frozenset({"mlp.moe.n_groups", "mlp.moe.top_k_groups"}),
}  # fmt: skip


def test_every_family_writes_only_what_its_config_carries():
    """Any shipped card, written by any family that accepts it and read back, is the card
    again: a writer refuses a card whose values its config would drop or change (GPT-2
    given StarCoder's one KV head, Falcon given Pythia's quarter of rotated dims), so no
    comparison passes by building another model."""
    losses = {}
    for card in shipped_catalogue():
        for model_type, spec in SPECS.items():
            if not spec.imports:
                continue
            try:
                lost = round_trip_losses(card.architecture, model_type)
            except NotRepresentable:
                continue
            if lost != CROSS_FAMILY_GAPS.get((model_type, card.id), set()):
                losses[model_type, card.id] = lost
    assert not losses


def test_every_key_a_writer_writes_is_one_its_config_class_reads():
    """A key the config class does not define is dropped as another family's on import and
    ignored by transformers (DeepSeek-V3's mlp_bias, V3.2's rope_interleave): the card's
    value would silently not be built. The released keys a family keeps are declared."""
    unread = {}
    for card in shipped_catalogue():
        filled = fill_unknowns(card.architecture)[0]
        for model_type in SPECS:
            try:
                written = convert(filled, model_type)
            except NotRepresentable:
                continue
            extra = set(written) - config_keys.table()[model_type]
            if extra:
                unread.setdefault(model_type, set()).update(extra)
    assert not unread


@pytest.mark.parametrize(
    ("card_id", "model_type", "named"),
    [
        ("starcoder", "gpt2", "n_kv_heads"),
        ("pythia-1.4b", "falcon", "rotary_fraction"),
        ("phi-4-mini", "mistral", "rotary_fraction"),
        ("chameleon-7b", "qwen3", "QK norm of the blocks' kind"),
        ("openelm-1.1b", "qwen3", "layer_widths"),
        ("olmo-3-7b", "olmo2", "layer_pattern may use only global"),
        ("aya-23-8b", "cohere2", "layer_pattern may use only local, global-nope"),
    ],
)
def test_a_writer_refuses_what_its_family_code_does_not_build(card_id, model_type, named):
    card = shipped_catalogue().get(card_id)
    with pytest.raises(NotRepresentable, match=named):
        convert(fill_unknowns(card.architecture)[0], model_type)


@pytest.mark.parametrize(
    ("card_id", "changes", "named"),
    [  # a value of its own family's card that no key carries, each changing the count
        ("llama-2-7b", {"embedding_dim": 1024}, "embeddings as wide as d_model"),
        ("llama-2-7b", {"attention.v_head_dim": 64}, "values as wide as the keys"),
        ("llama-2-7b", {"attention.mlp": False}, "every attention layer has its MLP"),
        ("opt-1.3b", {"attention.head_dim": 32}, "head_dim d_model / n_heads"),
        ("gemma-3-1b", {"kind": "encoder-decoder", "n_encoder_layers": 2}, "decoder-only"),
        ("llama-2-7b", {"d_model": None}, "d_model unknown"),
        ("zamba2-1.2b", {"norm.eps": 1e-6}, "norm.eps 1e-05"),
    ],
)
def test_a_writer_refuses_a_size_its_config_would_drop(card_id, changes, named):
    """Mutants the writer fuzz found written with the value silently dropped, so that
    "count-exact" would have claimed a count transformers does not build."""
    card = shipped_catalogue().get(card_id)
    data = apply_changes(card.architecture.model_dump(mode="json"), changes)
    with pytest.raises(NotRepresentable, match=named):
        convert(fill_unknowns(Architecture.model_validate(data))[0], model_type_of(card))


def test_a_config_read_back_into_an_invalid_card_is_a_refusal_not_a_crash():
    """Six LongRoPE factors for a head that rotates 4 pairs of dims: import-hf reads the
    config, the schema refuses the card, and the round trip says so."""
    rope = {"rope_type": "longrope", "rope_theta": 10000.0, "factor": 4.0,
            "original_max_position_embeddings": 64, "short_factor": [1.0] * 6,
            "long_factor": [1.0] * 6}  # fmt: skip
    config = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
              "head_dim": 8, "max_position_embeddings": 256, "rope_parameters": rope}  # fmt: skip
    assert read_back(config, "mistral") is None


def test_a_falcon_card_with_alibi_positions_is_refused_not_written_as_rope():
    """Falcon's alibi key writes false: it must leave position.type to the generic check,
    which refuses ALiBi, rather than claim the field."""
    card = next(c for c in shipped_catalogue() if model_type_of(c) == "falcon")
    arch = card.architecture
    alibi = arch.position.model_copy(update={"type": "alibi", "rope_theta": None})
    with pytest.raises(NotRepresentable, match=r"position\.type must be one of rope"):
        SPECS["falcon"].write(arch.model_copy(update={"position": alibi}))
    assert SPECS["falcon"].write(arch)["alibi"] is False
