"""Recurrent mixers in the layer pattern: Mamba-2 and Gated DeltaNet.

Counts equal transformers' own modules (built on the meta device), the reference forward
passes equal transformers' on the same weights, state is a constant of the context, and
the schema refuses patterns and sizes that disagree."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from pydantic import ValidationError

from archdb.builder.model import build_model, count_parameters
from archdb.measure.analytic import cache_size, param_count
from archdb.mixers._recurrent import gated_delta_rule
from archdb.mixers.gated_deltanet import gated_deltanet_module
from archdb.mixers.mamba2 import mamba2_module
from archdb.plan import make_plan
from archdb.plan.layout import BuildError
from archdb.plan.plan import cache_bytes
from tests.conftest import (
    DELTANET_HYBRID,
    MAMBA2_ONLY,
    assert_causal,
    deltanet_dims,
    hf_import_count,
    make_arch,
    mamba2_dims,
    needs_transformers,
)

pytestmark = needs_transformers


def _mamba2_config(**changes):
    from transformers import Mamba2Config

    sizes = dict(
        vocab_size=1000,
        hidden_size=64,
        num_hidden_layers=3,
        num_heads=8,
        head_dim=16,
        expand=2,
        state_size=16,
        n_groups=2,
        conv_kernel=4,
    )
    return Mamba2Config(**{**sizes, **changes})


def _mamba2_card(config):
    """The card a Mamba2Config describes (mapped by hand here; import-hf is separate)."""
    mamba2 = mamba2_dims(
        n_heads=config.num_heads,
        head_dim=config.head_dim,
        state_size=config.state_size,
        n_groups=config.n_groups,
        conv_kernel=config.conv_kernel,
        conv_bias=config.use_conv_bias,
        proj_bias=config.use_bias,
    )
    return make_arch(
        **{
            **MAMBA2_ONLY,
            "d_model": config.hidden_size,
            "n_layers": config.num_hidden_layers,
            "vocab_size": config.vocab_size,
            "tied_embeddings": config.tie_word_embeddings,
            "mixers": {"mamba2": mamba2},
        }
    )


@pytest.mark.parametrize(
    "changes",
    [{}, {"use_bias": True, "use_conv_bias": False}, {"tie_word_embeddings": True, "n_groups": 1}],
)
def test_mamba2_model_counts_equal_transformers(changes):
    from transformers import Mamba2ForCausalLM

    config = _mamba2_config(**changes)
    with torch.device("meta"):
        reference = Mamba2ForCausalLM(config)
    expected = sum(p.numel() for p in reference.parameters())
    arch = _mamba2_card(config)
    assert param_count(arch).total == expected
    assert count_parameters(build_model(arch, device="meta")) == expected


def _deltanet_config(**changes):
    from transformers.models.qwen3_next.configuration_qwen3_next import Qwen3NextConfig

    sizes = dict(
        hidden_size=64,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=16,
        linear_value_head_dim=8,
        linear_conv_kernel_dim=4,
    )
    return Qwen3NextConfig(**{**sizes, **changes})


@pytest.mark.parametrize(
    "changes", [{}, {"linear_num_value_heads": 2, "linear_conv_kernel_dim": 3}]
)
def test_gated_deltanet_counts_equal_transformers(changes):
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet

    config = _deltanet_config(**changes)
    with torch.device("meta"):
        reference = Qwen3NextGatedDeltaNet(config, 0)
    arch = make_arch(
        **{
            **DELTANET_HYBRID,
            "mixers": {
                "gated_deltanet": deltanet_dims(
                    n_key_heads=config.linear_num_key_heads,
                    n_value_heads=config.linear_num_value_heads,
                    key_head_dim=config.linear_key_head_dim,
                    value_head_dim=config.linear_value_head_dim,
                    conv_kernel=config.linear_conv_kernel_dim,
                )
            },
        }
    )
    mixer = make_plan(arch).decoder.blocks[0].mixer
    expected = sum(p.numel() for p in reference.parameters())
    assert mixer.params() == expected
    assert count_parameters(mixer.module(None)) == expected
    names = {n.replace("norm.weight", "norm_weight") for n, _ in reference.named_parameters()}
    assert names == {n for n, _ in mixer.module(None).named_parameters()}


def test_mamba2_forward_equals_transformers_on_the_same_weights():
    from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer as Reference

    torch.manual_seed(0)
    config = _mamba2_config(use_bias=True)
    reference = Reference(config, layer_idx=0)
    ours = mamba2_module()(64, 8, 16, 16, 2, 4, True, True)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3)
            ours.get_parameter(name.replace("norm.weight", "norm_weight")).copy_(p)
        x = torch.randn(2, 11, 64)
        expected = reference(x)
        assert torch.allclose(ours(x), expected, atol=1e-4, rtol=1e-3)


def test_gated_delta_rule_equals_transformers_recurrence():
    from transformers.models.qwen3_next.modeling_qwen3_next import (
        torch_recurrent_gated_delta_rule,
    )

    torch.manual_seed(0)
    b, t, h, dk, dv = 2, 9, 3, 8, 5
    q, k = (F.normalize(torch.randn(b, t, h, dk), dim=-1) for _ in range(2))
    v = torch.randn(b, t, h, dv)
    g = -torch.rand(b, t, h)
    beta = torch.rand(b, t, h)
    expected, _ = torch_recurrent_gated_delta_rule(q, k, v, g, beta)
    assert torch.allclose(gated_delta_rule(q / dk**0.5, k, v, g, beta), expected, atol=1e-5)


@pytest.mark.parametrize("mixer", [MAMBA2_ONLY, DELTANET_HYBRID], ids=["mamba2", "deltanet"])
def test_recurrent_toys_are_causal(mixer):
    torch.manual_seed(0)
    model = build_model(make_arch(**mixer)).eval()
    assert assert_causal(model).shape == (1, 12, 128)


def test_recurrent_state_is_a_constant_of_the_context():
    plan = make_plan(make_arch(**MAMBA2_ONLY))
    # per layer: SSM state 8 heads x 16 channels x 16 states + conv 192 channels x 3 taps
    per_layer = 8 * 16 * 16 + (128 + 2 * 2 * 16) * 3
    for context in (16, 4096, 1_000_000):
        assert cache_bytes(plan, context, 2) == 2 * 2 * per_layer
    hybrid = make_plan(make_arch(**DELTANET_HYBRID))
    state = 3 * (4 * 16 * 8 + (2 * 32 + 32) * 3)  # three deltanet layers
    kv = 2 * 2 * 16  # one attention layer: K and V of 2 heads x 16 per token
    assert cache_bytes(hybrid, 100, 1) == state + kv * 100
    assert cache_size(make_arch(**DELTANET_HYBRID), context=100).total == 2 * (state + kv * 100)


def test_mixer_only_layers_have_no_mlp():
    model = build_model(make_arch(**MAMBA2_ONLY), device="meta")
    layer = model.decoder.layers[0]
    assert layer.mlp is None and isinstance(layer.attn.sublayer, mamba2_module())
    hybrid = build_model(make_arch(**DELTANET_HYBRID), device="meta")
    kinds = [type(layer.attn.sublayer).__name__ for layer in hybrid.decoder.layers]
    assert kinds == ["GatedDeltaNetMixer"] * 3 + ["HeadAttention"]
    assert all(layer.mlp is not None for layer in hybrid.decoder.layers)
    assert isinstance(hybrid.decoder.layers[0].attn.sublayer, gated_deltanet_module())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.layer_pattern": ["mamba2"]}, "mixers.mamba2 is required for, and only for"),
        (
            {"mixers": {"gated_deltanet": deltanet_dims()}},
            "mixers.gated_deltanet is required for, and only for",
        ),
        (
            {**MAMBA2_ONLY, "mixers": {"mamba2": mamba2_dims(n_groups=3)}},
            "n_groups (3) must divide n_heads (8)",
        ),
        (
            {**DELTANET_HYBRID, "mixers": {"gated_deltanet": deltanet_dims(n_value_heads=3)}},
            "n_key_heads (2) must divide n_value_heads (3)",
        ),
    ],
)
def test_schema_refuses_mixers_that_disagree_with_the_pattern(changes, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**changes)


def test_attention_free_card_needs_no_attention_or_mlp_sizes_but_hybrids_do():
    make_plan(make_arch(**MAMBA2_ONLY))  # builds with null heads, d_ff and activation
    hybrid = {**MAMBA2_ONLY, "attention.layer_pattern": ["mamba2", "global"]}
    with pytest.raises(BuildError, match=re.escape("attention.n_heads")):
        make_plan(make_arch(**hybrid))
    with_mlp = {**MAMBA2_ONLY, "mixers": {"mamba2": mamba2_dims(mlp=True)}}
    with pytest.raises(BuildError, match=re.escape("mlp.d_ff")):
        make_plan(make_arch(**with_mlp))
    parallel = {**DELTANET_HYBRID, "parallel_layers": True, "norm.shared_in_parallel": False}
    with pytest.raises(BuildError, match="outside a serial decoder-only model"):
        make_plan(make_arch(**parallel))


def test_toys_of_full_size_recurrent_cards_build_and_count_exactly():
    from archdb.builder.shrink import shrink
    from archdb.measure.analytic import flops
    from archdb.measure.flops import measure_flops

    mamba = make_arch(
        **{
            **MAMBA2_ONLY,
            "d_model": 2560,
            "n_layers": 64,
            "mixers": {"mamba2": mamba2_dims(n_heads=80, head_dim=64, state_size=128, n_groups=1)},
        }
    )
    hybrid = make_arch(
        **{
            **DELTANET_HYBRID,
            "d_model": 2048,
            "n_layers": 48,
            "attention.n_heads": 16,
            "attention.n_kv_heads": 2,
            "attention.head_dim": 256,
            "mlp.d_ff": 5120,
            "mixers": {"gated_deltanet": deltanet_dims(n_key_heads=16, n_value_heads=32)},
        }
    )
    toy_m, toy_h = shrink(mamba).arch, shrink(hybrid).arch
    m = toy_m.mixers.mamba2
    assert (toy_m.d_model, toy_m.n_layers) == (64, 2)
    assert m.n_heads * m.head_dim == 2 * toy_m.d_model  # expand 2 kept
    assert (m.n_groups, m.state_size, m.conv_kernel) == (1, 16, 4)
    g = toy_h.mixers.gated_deltanet
    assert (g.n_key_heads, g.n_value_heads, toy_h.n_layers) == (2, 4, 4)
    for toy in (toy_m, toy_h):
        measured = measure_flops(build_model(toy), 24).total
        assert measured == sum(flops(toy, 24).dense.values())


@pytest.mark.parametrize(
    "changes",
    [{}, {"use_bias": True, "use_conv_bias": False, "n_groups": 1, "tie_word_embeddings": True}],
)
def test_import_hf_mamba2_builds_with_transformers_count(changes):
    from transformers import Mamba2ForCausalLM

    from archdb.writer import validate_card
    from archdb_hf.importer import Identity, import_config

    config = _mamba2_config(**changes)
    identity = Identity("mamba-2-tiny", "Mamba 2 tiny", "mamba-2", "Example Lab", "2024-05-31")
    url = "https://huggingface.co/org/mamba2/blob/main/config.json"
    result = import_config(
        {**config.to_dict(), "model_type": "mamba2"}, source_url=url, identity=identity
    )
    card = validate_card(result.card)
    assert card.architecture.attention.layer_pattern == ["mamba2"]
    assert card.architecture.mixers.mamba2.proj_bias is config.use_bias
    assert "Attention-free" in card.notes["architecture.attention.n_heads"]
    with torch.device("meta"):
        expected = sum(p.numel() for p in Mamba2ForCausalLM(config).parameters())
    assert count_parameters(build_model(card.architecture, device="meta")) == expected


def test_import_hf_mamba2_refuses_heads_that_do_not_fill_the_inner_width():
    from archdb_hf.importer import HFImportError, Identity, import_config

    config = {**_mamba2_config().to_dict(), "model_type": "mamba2", "head_dim": 8}
    identity = Identity("mamba-2-tiny", "Mamba 2 tiny", "mamba-2", "Example Lab", "2024-05-31")
    with pytest.raises(HFImportError, match=re.escape("num_heads x head_dim (8 x 8)")):
        import_config(config, source_url="https://huggingface.co/o/m", identity=identity)


QWEN3_NEXT_SMALL = dict(
    vocab_size=1000,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=16,
    linear_value_head_dim=8,
    num_experts=8,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=48,
)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"layer_types": ["linear_attention", "full_attention"] * 2, "tie_word_embeddings": True},
        {"decoder_sparse_step": 2},
    ],
)
def test_import_hf_qwen3_next_small_configs_are_exact(changes):
    ours, expected, card = hf_import_count("qwen3_next", **{**QWEN3_NEXT_SMALL, **changes})
    assert ours == expected
    arch = card.architecture
    assert "gated-deltanet" in arch.attention.layer_pattern
    assert arch.attention.output_gate == "elementwise" and arch.mlp.moe.shared_gate
    assert arch.mixers.gated_deltanet.n_value_heads == 4


BAMBA_SMALL = dict(
    vocab_size=1000,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=5,
    num_attention_heads=4,
    num_key_value_heads=2,
    mamba_n_heads=8,
    mamba_d_head=16,
    mamba_n_groups=2,
    mamba_d_state=16,
    mamba_expand=2,
)


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({}, ["mamba2"]),
        ({"attn_layer_indices": [1, 3]}, ["mamba2", "global"]),
        (
            {"attn_layer_indices": [2], "mamba_proj_bias": True, "mamba_conv_bias": False},
            ["mamba2", "mamba2", "global", "mamba2", "mamba2"],  # one attention layer: no period
        ),
        ({"attn_layer_indices": [4], "mamba_d_head": "auto"}, ["mamba2"] * 4 + ["global"]),
    ],
)
def test_import_hf_bamba_small_configs_are_exact(changes, pattern):
    ours, expected, card = hf_import_count("bamba", **{**BAMBA_SMALL, **changes})
    assert ours == expected
    assert [k.value for k in card.architecture.attention.layer_pattern] == pattern
    assert card.architecture.mixers.mamba2.mlp is True
