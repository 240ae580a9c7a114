"""Parallel mixers (Falcon-H1: attention beside Mamba-2 in one layer) and the hybrid
families that use Mamba-2 layers with muP factors (Falcon-H1, Granite 4.0-H): schema
checks, exact counts against transformers, the factors read from configs, and the cache."""

from __future__ import annotations

import math
import warnings

import pytest
from pydantic import ValidationError

from archdb.measure.analytic import cache_size, param_count
from archdb.writer import validate_card
from archdb_hf.importer import HFImportError, Identity, import_config
from tests.conftest import (
    FALCON_H1_LIKE,
    hf_import_count,
    make_arch,
    mamba2_dims,
    needs_transformers,
)

pytestmark = needs_transformers

IDENTITY = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2025-01-01")
URL = "https://huggingface.co/org/model/blob/main/config.json"
FALCON_SMALL = dict(
    vocab_size=1000,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    mamba_d_ssm=128,
    mamba_n_heads=8,
    mamba_n_groups=2,
    mamba_d_state=16,
)
FACTORS = dict(
    key_multiplier=0.5,
    attention_in_multiplier=1.5,
    attention_out_multiplier=0.75,
    ssm_in_multiplier=1.25,
    ssm_out_multiplier=0.25,
    ssm_multipliers=[0.5, 1.0, 2.0, 1.0, 0.3],
    mlp_multipliers=[0.5, 2.0],
    embedding_multiplier=3.0,
    lm_head_multiplier=0.125,
)


def card_of(cfg: dict):
    return validate_card(import_config(cfg, source_url=URL, identity=IDENTITY).card)


@pytest.mark.parametrize(
    ("changes", "norm"),
    [
        ({}, "none"),
        ({"mamba_rms_norm": True}, "before-gate"),
        ({"mamba_rms_norm": True, "mamba_norm_before_gate": False}, "gated"),
        ({"mamba_proj_bias": True, "projectors_bias": True, "tie_word_embeddings": True}, "none"),
        ({"mamba_conv_bias": False, "head_dim": 24, "attention_bias": True, **FACTORS}, "none"),
    ],
)
def test_import_hf_falcon_h1_small_configs_are_exact(changes, norm):
    ours, expected, card = hf_import_count("falcon_h1", **{**FALCON_SMALL, **changes})
    assert ours == expected
    arch = card.architecture
    assert [k.value for k in arch.attention.layer_pattern] == ["global+mamba2"]
    assert arch.mixers.mamba2.norm == norm and arch.mixers.mamba2.n_heads == 8


def test_falcon_h1_factors_become_card_fields():
    _, _, card = hf_import_count("falcon_h1", **{**FALCON_SMALL, **FACTORS})
    arch = card.architecture
    assert arch.attention.scale == pytest.approx(0.5 / math.sqrt(16))  # key_multiplier/sqrt(hd)
    assert (arch.attention.input_multiplier, arch.attention.output_multiplier) == (1.5, 0.75)
    m = arch.mixers.mamba2
    assert (m.input_multiplier, m.output_multiplier) == (1.25, 0.25)
    assert m.projection_multipliers == [0.5, 1.0, 2.0, 1.0, 0.3]
    assert (arch.mlp.gate_multiplier, arch.mlp.output_multiplier) == (0.5, 2.0)
    assert (arch.embedding_multiplier, arch.logit_scale) == (3.0, 0.125)
    assert "key_multiplier" in card.notes["architecture.attention.scale"]


def _falcon_config(**changes) -> dict:
    import transformers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = transformers.AutoConfig.for_model("falcon_h1", **FALCON_SMALL)
    return {**config.to_dict(), "model_type": "falcon_h1", **changes}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"time_step_limit": [0.001, 0.1]}, "time_step_limit .* clamps dt"),
        ({"projectors_bias": True}, "mamba_proj_bias .* and projectors_bias .* differ"),
        ({"ssm_multipliers": [1.0, 1.0]}, "ssm_multipliers must be a list of 5 numbers"),
        ({"mlp_multipliers": [1.0, 0]}, "mlp_multipliers must hold positive numbers"),
        ({"mamba_d_head": 12}, "differs from the mixer width"),
    ],
)
def test_falcon_h1_configs_archdb_cannot_express_are_refused(changes, message):
    with pytest.raises(HFImportError, match=message):
        card_of(_falcon_config(**changes))


def test_parallel_layers_need_mamba2_sizes():
    with pytest.raises(ValidationError, match=r"mixers\.mamba2 is required for, and only for"):
        make_arch(**{"attention.layer_pattern": ["global+mamba2"]})


def test_gate_multiplier_is_for_gated_units_only():
    with pytest.raises(ValidationError, match="gate_multiplier is for gated units only"):
        make_arch(**{"mlp.activation": "gelu", "mlp.gate_multiplier": 0.5})


def test_a_parallel_layer_counts_both_mixers_and_caches_keys_plus_a_constant_state():
    """A global+mamba2 layer holds attention's and the mixer's parameters, one MLP and
    two norms; its cache is the attention's K/V per token plus the mixer's fixed state."""
    attention = make_arch()
    parallel = make_arch(**FALCON_H1_LIKE)
    dims = mamba2_dims()
    inner, conv = 8 * 16, 8 * 16 + 2 * 2 * 16  # heads x head_dim; x, B, C channels
    mixer = 64 * (inner + conv + 8) + conv * 4 + conv + 3 * 8 + 128 * 64  # no norm scale
    assert dims["n_heads"] * dims["head_dim"] == inner
    layers = attention.n_layers
    assert param_count(parallel).total - param_count(attention).total == layers * mixer
    state = inner * 16 + conv * 3  # SSM state and the conv's last three inputs
    for context in (1, 1000):
        grown = cache_size(parallel, context).total - cache_size(attention, context).total
        assert grown == layers * state * cache_size(attention, context).bytes_per_element


GRANITE_RELEASED = {  # Granite 4.0-H's released spellings: "mamba"/"attention", "nope"
    "model_type": "granitemoehybrid",
    "hidden_size": 64,
    "intermediate_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 4096,
    "layer_types": ["mamba", "mamba", "mamba", "attention"],
    "position_embedding_type": "nope",
    "mamba_n_heads": 8,
    "mamba_d_head": 16,
    "mamba_d_state": 16,
    "mamba_expand": 2,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "shared_intermediate_size": 96,
    "embedding_multiplier": 12,
    "residual_multiplier": 0.22,
    "attention_multiplier": 0.015625,
    "logits_scaling": 2,
    "tie_word_embeddings": True,
}


@pytest.mark.parametrize(
    "changes", [{}, {"num_local_experts": 0, "position_embedding_type": "rope"}]
)
def test_granite_4_h_released_spellings_import_exactly(changes):
    import torch
    import transformers

    from archdb.builder.model import build_model, count_parameters

    cfg = {**GRANITE_RELEASED, **changes}
    card = card_of(cfg)
    arch = card.architecture
    assert [k.value for k in arch.attention.layer_pattern] == ["mamba2"] * 3 + ["global"]
    assert arch.position.type == ("rope" if changes else "none")
    assert (arch.mlp.moe is None) == bool(changes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = transformers.AutoConfig.for_model(
            "granitemoehybrid", **{k: v for k, v in cfg.items() if k != "model_type"}
        )
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
    ours = count_parameters(build_model(arch, device="meta"))
    assert ours == sum(p.numel() for p in model.parameters())
