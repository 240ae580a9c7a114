"""Hostile config.json files: wrong types, absurd sizes, huge or deep JSON, long lists.

Each must end in an HFImportError naming the key (the CLI prints it with exit code 1),
in linear time: never a traceback, a MemoryError or a hang.
"""

from __future__ import annotations

import copy
import functools
import json
import time
from pathlib import Path

import pytest

from archdb.writer import validate_card
from archdb_hf.draft import MAX_CONFIG_BYTES
from archdb_hf.families.registry import SPECS
from archdb_hf.importer import HFImportError, Identity, import_config, read_config

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
IDENTITY = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2024-01-01")
URL = "https://huggingface.co/org/model/blob/main/config.json"


def config(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def importing(cfg: dict):
    return import_config(cfg, source_url=URL, identity=IDENTITY)


def refused(cfg: dict) -> str:
    with pytest.raises(HFImportError) as caught:
        importing(cfg)
    return str(caught.value)


def edited(name: str, **changes) -> dict:
    cfg = copy.deepcopy(config(name))
    cfg.update(changes)
    return cfg


@pytest.mark.parametrize(
    ("base", "key", "value", "fragment"),
    [
        ("llama-2-7b-hf", "rope_theta", "ten thousand", "must be a number"),
        ("llama-2-7b-hf", "rope_theta", {"base": 10000}, "must be a number"),
        ("llama-2-7b-hf", "rope_theta", True, "must be a number"),
        ("llama-2-7b-hf", "rope_theta", -1.0, "greater than or equal to 0"),
        ("llama-2-7b-hf", "rope_parameters", 10000, "valid dictionary"),
        ("llama-2-7b-hf", "partial_rotary_factor", "0.5", "must be a number"),
        ("llama-2-7b-hf", "partial_rotary_factor", 2.0, "less than or equal to 1"),
        ("gemma-2-2b", "layer_types", 26, "valid list"),
        ("gemma-2-2b", "layer_types", [["sliding_attention"]] * 26, "valid string"),
        ("gpt2", "n_head", "16", "valid integer"),
        ("gpt2", "n_head", 0, "greater than or equal to 1"),
        ("gpt2", "n_embd", 10**30, "less than or equal to"),
        ("gemma-2-2b", "sliding_window_pattern", "6", "valid integer"),
        ("gemma-2-2b", "sliding_window_pattern", 10**10, "less than or equal to"),
        ("llama-2-7b-hf", "num_hidden_layers", 10**12, "less than or equal to"),
        ("llama-2-7b-hf", "tie_word_embeddings", "false", "valid boolean"),
        ("llama-2-7b-hf", "hidden_act", ["silu"], "valid string"),
        ("mixtral-8x7b-v0.1", "num_local_experts", 8.5, "valid integer"),
        # keys whose type and range come from the card field a family Key reads them into
        ("deepseek-v2-lite", "kv_lora_rank", 0, "greater than or equal to 1"),
        ("deepseek-v2-lite", "first_k_dense_replace", -1, "greater than or equal to 0"),
        ("deepseek-v2-lite", "n_routed_experts", "64", "valid integer"),
        ("qwen3-30b-a3b", "norm_topk_prob", "yes", "valid boolean"),
        ("deepseek-v2-lite", "index_topk", 2**40, "less than or equal to"),
    ],
)
def test_wrong_types_and_ranges_are_refused_naming_the_key(base, key, value, fragment):
    message = refused(edited(base, **{key: value}))
    assert message.startswith(f"config.json: {key}")
    assert fragment in message
    assert len(message) < 400  # the hostile value is shown in brief


def test_the_shape_of_a_key_read_into_a_field_is_the_fields():
    """A key a family reads straight into a card field is checked with the field's type
    and bounds (archdb.schema), not a second hand-written entry; one converted on the way
    or read by the generic steps keeps its own (Granite 4.0-H Micro: 0 local experts)."""
    from archdb.field_types import MAX_DEPTH
    from archdb_hf.draft import ConfigShape
    from archdb_hf.importer import families_shape

    derived = families_shape().model_fields
    assert "kv_lora_rank" in derived and "kv_lora_rank" not in ConfigShape.model_fields
    assert "first_k_dense_replace" not in ConfigShape.model_fields
    limits = [m for m in derived["first_k_dense_replace"].annotation.__args__[0].__metadata__]
    assert any(getattr(m, "le", None) == MAX_DEPTH for m in limits)
    hand = ConfigShape.model_fields["num_local_experts"]
    assert derived["num_local_experts"].annotation == hand.annotation


def test_decoder_sparse_step_must_be_an_int():
    cfg = edited("qwen3-0.6b-base", model_type="qwen3_moe", decoder_sparse_step="2",
                 moe_intermediate_size=768, num_experts=8, num_experts_per_tok=2)  # fmt: skip
    assert "decoder_sparse_step" in refused(cfg)


def test_nested_rope_parameters_are_checked():
    cfg = edited("llama-2-7b-hf", rope_parameters={"full_attention": {"rope_theta": "x"}})
    message = refused(cfg)
    assert "rope_parameters.full_attention.rope_theta" in message


def test_text_config_keys_are_checked_with_their_prefix():
    cfg = {"model_type": "gemma3", "text_config": {**config("gemma-3-1b-pt"), "head_dim": "256"}}
    assert refused(cfg).startswith("config.json: text_config.head_dim")


def test_layer_types_must_match_the_layer_count():
    cfg = edited("gemma-2-2b", layer_types=["sliding_attention", "full_attention", "x"][:3])
    message = refused(cfg)
    assert "layer_types lists 3 layers but num_hidden_layers is 26" in message


def test_unknown_layer_type_is_named_with_its_index():
    cfg = edited("gemma-2-2b", layer_types=["sliding_attention"] * 25 + ["\x1b[2Jglobal"])
    message = refused(cfg)
    assert "layer_types[25]" in message and "\x1b" not in message


def test_twenty_thousand_layer_types_take_linear_time():
    """A pattern whose period is the whole list: the old search was quadratic (minutes)."""
    n = 20_000
    types = ["sliding_attention"] * (n - 1) + ["full_attention"]
    cfg = edited("gemma-2-2b", num_hidden_layers=n, layer_types=types)
    start = time.perf_counter()
    imported = importing(cfg)
    assert time.perf_counter() - start < 3  # minutes before
    pattern = imported.card["architecture"]["attention"]["layer_pattern"]
    assert len(pattern) == n and pattern[-1] == "global"


def test_periodic_layer_types_shrink_to_their_period():
    types = (["sliding_attention"] * 5 + ["full_attention"]) * 4 + ["sliding_attention"] * 2
    cfg = edited("gemma-2-2b", num_hidden_layers=len(types), layer_types=types)
    assert importing(cfg).card["architecture"]["attention"]["layer_pattern"] == (
        ["local"] * 5 + ["global"]
    )


def test_a_large_sliding_window_pattern_is_bounded_not_a_memory_error():
    cfg = edited("gemma-3-1b-pt", sliding_window_pattern=100_000)
    cfg.pop("layer_types", None)
    card = importing(cfg).card  # at the bound: fine, and fast
    assert len(card["architecture"]["attention"]["layer_pattern"]) == 100_000


def test_a_key_of_another_familys_config_class_is_ignored_not_read():
    """Gemma 2's config class neither defines nor reads sliding_window_pattern (Gemma 3's
    does): transformers' Gemma 2 ignores it, and so does the importer, saying so."""
    plain = importing(config("gemma-2-2b"))
    imported = importing(edited("gemma-2-2b", sliding_window_pattern=6))
    assert "sliding_window_pattern" in imported.ignored
    assert imported.card["architecture"] == plain.card["architecture"]


def test_gpt2_follows_its_n_inner_rule_whatever_intermediate_size_says():
    """GPT-2's class has n_inner (None: 4 * n_embd); an intermediate_size key, of other
    families' vocabulary, once set the MLP width and the checkpoint then failed to load."""
    plain = importing(config("gpt2"))
    imported = importing(edited("gpt2", intermediate_size=1234))
    assert imported.card["architecture"]["mlp"]["d_ff"] == plain.card["architecture"]["mlp"]["d_ff"]
    assert plain.card["architecture"]["mlp"]["d_ff"] == 4 * plain.card["architecture"]["d_model"]
    assert "intermediate_size" in imported.ignored


# --- reading the file ------------------------------------------------------------------


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "config.json"
    path.write_bytes(data)
    return path


def test_a_five_thousand_digit_number_is_refused(tmp_path):
    path = write(tmp_path, b'{"hidden_size": ' + b"9" * 5000 + b"}")
    with pytest.raises(HFImportError, match="5,000 digits"):
        read_config(path)


def test_json_nested_100000_deep_is_refused(tmp_path):
    path = write(tmp_path, b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(HFImportError, match="nested"):
        read_config(path)
    path = write(tmp_path, b'{"a": ' + b"[" * 500 + b"]" * 500 + b"}")  # parses, still refused
    with pytest.raises(HFImportError, match="deeper than 64"):
        read_config(path)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"[1, 2]", "expected a JSON object"),
        (b'{"a": NaN}', "NaN is not a number JSON allows"),
        (b'{"a": Infinity}', "Infinity"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b'{"a": 1', "not a JSON config"),
        (b"", "not a JSON config"),
    ],
)
def test_malformed_files_are_refused(tmp_path, data, fragment):
    with pytest.raises(HFImportError, match=fragment):
        read_config(write(tmp_path, data))


def test_the_bytes_read_are_bounded():
    start = time.perf_counter()
    with pytest.raises(HFImportError, match=f"larger than {MAX_CONFIG_BYTES // 2**20} MiB"):
        read_config("/dev/zero")
    assert time.perf_counter() - start < 5


def test_a_hostile_but_well_typed_config_still_imports(tmp_path):
    """Unknown keys of any shape are reported as unmapped, never interpreted."""
    cfg = edited("llama-2-7b-hf", weird={"deep": [[[1]]]}, another="\x1b[31m")
    imported = importing(cfg)
    assert imported.unmapped["weird"] == {"deep": [[[1]]]}
    validate_card(imported.card)


def _default_config(model_type: str) -> dict:
    """transformers' own default config of a model type, as save_pretrained writes it in full."""
    transformers = pytest.importorskip("transformers")
    return transformers.AutoConfig.for_model(model_type).to_dict()


@pytest.mark.parametrize(
    ("model_type", "change", "fragment"),
    [
        (
            "kimi_linear",
            lambda c: {"mlp_layer_types": c["mlp_layer_types"][:3]},
            "mlp_layer_types lists 3 entries but num_hidden_layers is",
        ),
        (
            "glm_moe_dsa",
            lambda c: {"indexer_types": ["full"] * 2},
            "indexer_types lists 2 entries but num_hidden_layers is",
        ),
        ("zamba2", lambda c: {"hybrid_layer_ids": [-1, 999]}, "hybrid_layer_ids names layer -1"),
        ("zamba2", lambda c: {"hybrid_layer_ids": [1, 999]}, "hybrid_layer_ids names layer 999"),
        (
            "kimi_linear",
            lambda c: {"linear_attn_config": {"full_attn_layers": [0], "kda_layers": [1]}},
            "full_attn_layers",
        ),
    ],
)
def test_per_layer_lists_are_checked_alike_for_every_model_type(model_type, change, fragment):
    """A per-layer list shorter than the layer count, or a layer number outside the stack,
    is refused by name for every model type (qwen3_next's layer_types always were)."""
    cfg = _default_config(model_type)
    cfg.update(change(cfg))
    assert fragment in refused(cfg)


HOSTILE_VALUES = ("x", "\x1b[31m", None, -1, 0, 10**12, 1.5, True, [], [1], {}, {"a": 1})


def _key_paths(config: dict, prefix: tuple[str, ...] = ()):
    for key, value in config.items():
        yield (*prefix, key)
        if isinstance(value, dict):
            yield from _key_paths(value, (*prefix, key))


@pytest.mark.parametrize("model_type", sorted(m for m, s in SPECS.items() if s.imports))
def test_any_key_made_hostile_is_imported_or_refused_never_a_crash(model_type):
    """Every key of a family's config (transformers' default, nested blocks too), replaced
    by a value of another type or an absurd size: import-hf gives a card or an
    HFImportError saying what is wrong, never another exception (a traceback)."""
    base = _default_config(model_type)
    crashes = []
    for path in _key_paths(base):
        for value in HOSTILE_VALUES:
            cfg = copy.deepcopy(base)
            functools.reduce(dict.__getitem__, path[:-1], cfg)[path[-1]] = value
            try:
                importing(cfg)
            except HFImportError:
                continue
            except Exception as exc:  # the test lists every crash
                crashes.append(f"{'.'.join(path)}={value!r}: {type(exc).__name__}: {exc}")
    assert not crashes, crashes[:5]
