"""A family declared once as its config keys (archdb_hf.keymap): the importer, the writer
and the fixed-choice check all come from the one declaration."""

from __future__ import annotations

import pytest

from archdb_hf.families.llama import LLAMA, MISTRAL, MIXTRAL
from archdb_hf.importer import Identity, import_config
from archdb_hf.keymap import Key, merged
from archdb_hf.reference import NotRepresentable, convert
from tests.conftest import make_arch, moe_block, qk_norm

_IDENTITY = Identity("toy", "Toy", "toy", "Tests", "2024-01-01")


def test_a_key_is_read_into_its_field_and_written_back_under_its_name():
    moe = moe_block(n_experts=8, n_active=2)
    arch = make_arch(**{"mlp.moe": moe, **qk_norm("per-head")})
    config = convert(arch, "qwen3_moe")
    assert (config["num_experts"], config["num_experts_per_tok"]) == (8, 2)
    assert config["moe_intermediate_size"] == arch.mlp.d_ff
    card = import_config(
        config | {"model_type": "qwen3_moe"}, source_url="https://x.org/c.json", identity=_IDENTITY
    ).card
    moe = card["architecture"]["mlp"]["moe"]
    assert (moe["n_experts"], moe["n_active"], moe["layer_period"]) == (8, 2, 1)
    assert card["architecture"]["mlp"]["d_ff"] == arch.mlp.d_ff


def test_a_derived_family_replaces_and_removes_its_parents_keys():
    names = [k.name for k in MISTRAL.keys]
    assert "sliding_window" in names and "attention_bias" not in names
    own = (
        Key("vocab_size", "vocab_size", out=lambda a: 7),
        Key("head_dim"),
        Key("new", "n_layers"),
    )
    keys = merged(LLAMA.keys, own)
    by_name = {k.name: k for k in keys}
    assert "head_dim" not in by_name and keys[-1].name == "new"
    assert by_name["vocab_size"].out(make_arch()) == 7
    assert MIXTRAL.keys[: len(MISTRAL.keys)] == MISTRAL.keys  # the parent's, then its own


@pytest.mark.parametrize(
    ("model_type", "changes", "message"),
    [
        ("llama", {"norm.type": "layernorm"}, "norm.type must be rmsnorm"),
        ("llama", {"bias.qkv": True, "bias.attn_out": False}, "covers q, k, v and o alike"),
        (
            "llama",
            {"attention.layer_pattern": ["local", "global"], "attention.sliding_window": 16},
            "may use only global",
        ),
        ("mistral", {"bias.mlp": True}, r"must be \(False, False, False, False\)"),
        ("mixtral", {}, "mlp.moe: mixtral's config requires num_local_experts"),
        ("qwen3", {}, "attention.qk_norm must be per-head"),
        ("llama", {"mlp.activation": "geglu"}, "mlp.activation must be one of swiglu"),
    ],
)
def test_a_card_differing_from_the_familys_fixed_choices_is_refused(model_type, changes, message):
    with pytest.raises(NotRepresentable, match=message):
        convert(make_arch(**changes), model_type)


def test_a_fixed_value_the_code_sets_is_read_and_checked():
    arch = make_arch(**{"mlp.moe": moe_block(normalize_top_k=False)})
    with pytest.raises(NotRepresentable, match=r"normalize_top_k True \(mixtral's code fixes it\)"):
        convert(arch, "mixtral")
    config = convert(make_arch(**{"mlp.moe": moe_block()}), "mixtral")
    card = import_config(
        config | {"model_type": "mixtral"}, source_url="https://x.org/c.json", identity=_IDENTITY
    ).card
    assert card["architecture"]["mlp"]["moe"]["normalize_top_k"] is True
