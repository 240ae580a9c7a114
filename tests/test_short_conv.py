"""LFM2's gated short convolution as a layer-pattern mixer (short-conv).

Counts equal transformers' Lfm2ShortConv and whole Lfm2/Lfm2Moe models, the forward pass
equals Lfm2ShortConv's on the same weights, the state is the conv's last kernel - 1 inputs
whatever the context, FLOPs measured by fvcore equal the formula, and import-hf maps LFM2
configs (full_attn_idxs or layer_types, the auto-adjusted MLP width) exactly."""

from __future__ import annotations

import re

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model, count_parameters
from archdb.measure.analytic import cache_size, param_count
from archdb.mixers.short_conv import short_conv_module
from archdb.plan import make_plan
from archdb.plan.plan import cache_bytes
from tests.conftest import (
    assert_causal,
    hf_import_count,
    make_arch,
    moe_block,
    needs_transformers,
    qk_norm,
)

pytestmark = needs_transformers


def short_conv_dims(**changes) -> dict:
    return {"conv_kernel": 3, "bias": False, "mlp": True, **changes}


# LFM2's layout at toy size: conv, conv, attention, conv; per-head QK norm; tied embeddings.
LFM2_HYBRID = {
    "n_layers": 4,
    "attention.layer_pattern": ["short-conv", "short-conv", "global", "short-conv"],
    **qk_norm("per-head"),
    "tied_embeddings": True,
    "mixers": {"short_conv": short_conv_dims()},
}


def _lfm2_config(**changes):
    from transformers import Lfm2Config

    sizes = dict(
        vocab_size=1000,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        layer_types=["conv", "conv", "full_attention", "conv"],
        block_auto_adjust_ff_dim=False,
    )
    return Lfm2Config(**{**sizes, **changes})


@pytest.mark.parametrize(
    "changes", [{}, {"conv_bias": True}, {"conv_L_cache": 4, "hidden_size": 96}]
)
def test_short_conv_counts_and_names_equal_transformers(changes):
    from transformers.models.lfm2.modeling_lfm2 import Lfm2ShortConv

    config = _lfm2_config(**changes)
    with torch.device("meta"):
        reference = Lfm2ShortConv(config, 0)
    dims = short_conv_dims(conv_kernel=config.conv_L_cache, bias=config.conv_bias)
    arch = make_arch(
        **{**LFM2_HYBRID, "d_model": config.hidden_size, "mixers": {"short_conv": dims}}
    )
    mixer = make_plan(arch).decoder.blocks[0].mixer
    expected = sum(p.numel() for p in reference.parameters())
    assert mixer.params() == expected
    module = mixer.module(None)
    assert count_parameters(module) == expected
    assert {n for n, _ in reference.named_parameters()} == {n for n, _ in module.named_parameters()}


@pytest.mark.parametrize("bias", [False, True])
def test_short_conv_forward_equals_transformers_on_the_same_weights(bias):
    from transformers.models.lfm2.modeling_lfm2 import Lfm2ShortConv

    torch.manual_seed(0)
    config = _lfm2_config(conv_bias=bias, conv_L_cache=4)
    reference = Lfm2ShortConv(config, 0)
    ours = short_conv_module()(64, 4, bias)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3)
            ours.get_parameter(name).copy_(p)
        x = torch.randn(2, 11, 64)
        assert torch.allclose(ours(x), reference(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "changes", [{}, {"conv_bias": True, "tie_word_embeddings": False}, {"conv_L_cache": 5}]
)
def test_lfm2_card_counts_equal_transformers_model(changes):
    import transformers

    from archdb_hf.testing import hf_parameter_count

    config = _lfm2_config(**changes)
    with torch.device("meta"):
        expected = sum(p.numel() for p in transformers.Lfm2ForCausalLM(config).parameters())
    dims = short_conv_dims(conv_kernel=config.conv_L_cache, bias=config.conv_bias)
    arch = make_arch(
        **{
            **LFM2_HYBRID,
            "vocab_size": 1000,
            "tied_embeddings": config.tie_word_embeddings,
            "mixers": {"short_conv": dims},
        }
    )
    assert param_count(arch).total == expected
    assert count_parameters(build_model(arch, device="meta")) == expected
    assert hf_parameter_count(arch, "lfm2") == expected


def test_lfm2_moe_card_counts_equal_transformers_model():
    from archdb_hf.testing import hf_parameter_count

    moe = moe_block(n_experts=4, n_active=2, first_dense_layers=1, dense_d_ff=96)
    arch = make_arch(**{**LFM2_HYBRID, "mlp.d_ff": 32, "mlp.moe": moe})
    expected = hf_parameter_count(arch, "lfm2_moe")
    assert param_count(arch).total == expected
    assert count_parameters(build_model(arch, device="meta")) == expected


def test_short_conv_state_is_a_constant_of_the_context():
    arch = make_arch(**{**LFM2_HYBRID, "mixers": {"short_conv": short_conv_dims(conv_kernel=4)}})
    plan = make_plan(arch)
    state = 3 * 64 * 3  # three conv layers: 64 channels x (4 - 1) kept inputs
    kv = 2 * 2 * 16  # one attention layer: K and V of 2 heads x 16 per token
    for context in (1, 100, 100_000):
        assert cache_bytes(plan, context, 1) == state + kv * context
    assert cache_size(arch, context=100).total == 2 * (state + kv * 100)


def test_short_conv_toy_is_causal_and_counts_flops_exactly():
    from archdb.measure.analytic import flops
    from archdb.measure.flops import measure_flops

    torch.manual_seed(0)
    arch = make_arch(**{**LFM2_HYBRID, "mixers": {"short_conv": short_conv_dims(bias=True)}})
    model = build_model(arch).eval()
    kinds = [type(layer.attn.sublayer).__name__ for layer in model.decoder.layers]
    assert kinds == ["ShortConvMixer"] * 2 + ["HeadAttention", "ShortConvMixer"]
    assert all(layer.mlp is not None for layer in model.decoder.layers)
    assert_causal(model)
    assert measure_flops(model, 24).total == sum(flops(arch, 24).dense.values())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"attention.layer_pattern": ["short-conv", "global"]},
            "mixers.short_conv is required for, and only for",
        ),
        (
            {"mixers": {"short_conv": short_conv_dims()}},
            "mixers.short_conv is required for, and only for",
        ),
        ({**LFM2_HYBRID, "mixers": {"short_conv": short_conv_dims(conv_kernel=0)}}, "conv_kernel"),
    ],
)
def test_schema_refuses_short_conv_sizes_that_disagree_with_the_pattern(changes, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**changes)


LFM2_SMALL = dict(
    vocab_size=1000,
    hidden_size=64,
    intermediate_size=192,
    num_hidden_layers=6,
    num_attention_heads=4,
    num_key_value_heads=2,
)


@pytest.mark.parametrize(
    ("changes", "pattern", "d_ff"),
    [
        # full_attn_idxs (as released configs give it): auto-adjusted width 2/3 x 192 -> 128,
        # rounded up to 256
        (
            {"full_attn_idxs": [2, 5]},
            ["short-conv", "short-conv", "global"],
            256,
        ),
        (
            {
                "layer_types": ["conv", "full_attention"] * 3,
                "block_multiple_of": 32,
                "block_ffn_dim_multiplier": 1.5,
                "conv_bias": True,
                "conv_L_cache": 4,
            },
            ["short-conv", "global"],
            192,
        ),
        (
            {"full_attn_idxs": [0, 3], "block_auto_adjust_ff_dim": False, "tie_embedding": False},
            ["global", "short-conv", "short-conv"],
            192,
        ),
    ],
)
def test_import_hf_lfm2_small_configs_are_exact(changes, pattern, d_ff):
    ours, expected, card = hf_import_count("lfm2", **{**LFM2_SMALL, **changes})
    assert ours == expected
    arch = card.architecture
    assert [k.value for k in arch.attention.layer_pattern] == pattern
    assert arch.mlp.d_ff == d_ff
    assert arch.attention.qk_norm == "per-head"
    assert arch.mixers.short_conv.conv_kernel == changes.get("conv_L_cache", 3)
    assert arch.tied_embeddings is changes.get("tie_embedding", True)


def test_import_hf_lfm2_moe_small_config_is_exact_and_reads_the_router():
    sizes = {
        **LFM2_SMALL,
        "moe_intermediate_size": 32,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "num_dense_layers": 2,
        "layer_types": ["conv", "conv", "full_attention"] * 2,
    }
    ours, expected, card = hf_import_count("lfm2_moe", **sizes)
    assert ours == expected
    moe = card.architecture.mlp.moe
    assert (moe.first_dense_layers, moe.dense_d_ff, card.architecture.mlp.d_ff) == (2, 192, 32)
    router = (moe.score_function.value, moe.score_correction_bias, moe.normalize_top_k)
    assert router == ("sigmoid", True, True) and moe.routed_scale == 1.0


def test_import_hf_lfm2_refuses_attention_indices_beyond_the_stack():
    from archdb_hf.importer import HFImportError, Identity, import_config

    config = {**LFM2_SMALL, "model_type": "lfm2", "full_attn_idxs": [1, 6]}
    identity = Identity("lfm2-tiny", "LFM2 tiny", "lfm2", "Example Lab", "2025-07-10")
    with pytest.raises(
        HFImportError, match=re.escape("full_attn_idxs names layer 6, outside layers 0 to 5")
    ):
        import_config(config, source_url="https://huggingface.co/o/m", identity=identity)


LFM2_CONFIG = {**LFM2_SMALL, "model_type": "lfm2", "full_attn_idxs": [2, 5]}


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"conv_L_cache": "3"}, "conv_L_cache: Input should be a valid integer"),
        ({"conv_bias": 1}, "conv_bias: Input should be a valid boolean"),
        ({"full_attn_idxs": "2,5"}, "full_attn_idxs: Input should be a valid list"),
        ({"block_ffn_dim_multiplier": 1e15}, "block_ffn_dim_multiplier: Input should be less"),
        ({"layer_types": ["conv", "mamba"] * 3}, "layer_types[1] is 'mamba'"),
    ],
)
def test_hostile_lfm2_configs_are_refused_naming_the_key(changes, fragment):
    from archdb_hf.importer import HFImportError, Identity, import_config

    identity = Identity("lfm2-tiny", "LFM2 tiny", "lfm2", "Example Lab", "2025-07-10")
    with pytest.raises(HFImportError, match=re.escape(fragment)):
        import_config(
            {**LFM2_CONFIG, **changes}, source_url="https://huggingface.co/o/m", identity=identity
        )


def test_an_absurd_ff_multiplier_is_a_card_error_not_a_traceback():
    from archdb.writer import WriteError, validate_card
    from archdb_hf.importer import Identity, import_config

    identity = Identity("lfm2-tiny", "LFM2 tiny", "lfm2", "Example Lab", "2025-07-10")
    config = {**LFM2_CONFIG, "block_ffn_dim_multiplier": 1e11}
    card = import_config(config, source_url="https://huggingface.co/o/m", identity=identity).card
    with pytest.raises(WriteError, match=r"mlp\.d_ff: Input should be less than or equal"):
        validate_card(card)
