"""Kimi Delta Attention (KDA) as a layer-pattern mixer (kda), and Kimi Linear.

Counts equal transformers' KimiLinearDeltaAttention and whole KimiLinearForCausalLM models,
the forward pass equals KimiLinearDeltaAttention's on the same weights (one 64-token chunk
and more), the state is a constant of the context, FLOPs measured by fvcore equal the
formula, the toy rule shrinks heads and gate ranks, and import-hf maps both config forms
(the release's linear_attn_config with 1-based layer lists, transformers' flat keys)
exactly."""

from __future__ import annotations

import re

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model, count_parameters
from archdb.measure.analytic import cache_size, param_count
from archdb.mixers.gated_deltanet import gated_deltanet_module
from archdb.mixers.kda import kda_module
from archdb.plan import make_plan
from archdb.plan.plan import cache_bytes
from tests.conftest import (
    KDA_HYBRID,
    assert_causal,
    hf_import_count,
    kda_dims,
    make_arch,
    moe_block,
    needs_transformers,
)

pytestmark = needs_transformers

# Kimi Linear's layout at toy size: KDA layers, MLA without positions (a 64-dim layer's
# transformers gate ranks are its head_dim), DeepSeek-V3's MoE after a dense first layer.
KIMI_LIKE = {
    **KDA_HYBRID,
    "n_layers": 5,
    "attention.layer_pattern": ["kda"] * 4 + ["global"],
    "attention.variant": "latent",
    "attention.head_dim": 16,
    "attention.latent": {
        "kv_lora_rank": 16,
        "q_lora_rank": None,
        "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 16,
        "v_head_dim": 16,
    },
    "position.type": "none",
    "position.rope_theta": None,
    "mixers": {"kda": kda_dims(decay_rank=16, output_gate_rank=16)},
    "mlp.d_ff": 32,
    "mlp.moe": moe_block(
        n_shared=1,
        shared_d_ff=32,
        first_dense_layers=1,
        dense_d_ff=96,
        score_function="sigmoid",
        score_correction_bias=True,
        routed_scale=2.446,
        normalize_top_k=True,
    ),
}


def _kimi_config(**changes):
    import transformers

    sizes = dict(
        vocab_size=1000,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        linear_num_heads=4,
        linear_head_dim=16,
        linear_conv_kernel_dim=4,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
    )
    return transformers.KimiLinearConfig(**{**sizes, **changes})


@pytest.mark.parametrize(
    "changes",
    [{}, {"linear_head_dim": 8, "linear_conv_kernel_dim": 3}, {"linear_num_heads": 2}],
)
def test_kda_counts_equal_transformers(changes):
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention

    config = _kimi_config(**changes)
    with torch.device("meta"):
        reference = KimiLinearDeltaAttention(config, 0)
    head = config.linear_head_dim
    dims = kda_dims(
        n_heads=config.linear_num_heads,
        head_dim=head,
        conv_kernel=config.linear_conv_kernel_dim,
        decay_rank=head,
        output_gate_rank=head,
    )
    mixer = make_plan(make_arch(**{**KDA_HYBRID, "mixers": {"kda": dims}})).decoder.blocks[0].mixer
    expected = sum(p.numel() for p in reference.parameters())
    assert mixer.params() == expected
    assert count_parameters(mixer.module(None)) == expected


# transformers' name -> archdb's, and how its tensor is laid out in archdb
_NAMES = {
    "q_proj.weight": "q_proj.weight",
    "k_proj.weight": "k_proj.weight",
    "v_proj.weight": "v_proj.weight",
    "conv1d.weight": "conv1d.weight",
    "forget_gate.f_a_proj.weight": "f_a_proj.weight",
    "forget_gate.f_b_proj.weight": "f_b_proj.weight",
    "forget_gate.dt_bias": "dt_bias",
    "forget_gate.A_log": "A_log",
    "b_proj.weight": "b_proj.weight",
    "g_a_proj.weight": "g_a_proj.weight",
    "g_b_proj.weight": "g_b_proj.weight",
    "o_norm.weight": "norm_weight",
    "o_proj.weight": "o_proj.weight",
}


@pytest.mark.parametrize("seq", [11, 70])  # one of transformers' 64-token chunks, and two
def test_kda_forward_equals_transformers_on_the_same_weights(seq):
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention

    torch.manual_seed(0)
    config = _kimi_config(rms_norm_eps=1e-4)
    reference = KimiLinearDeltaAttention(config, 0).eval()
    ours = kda_module()(64, 4, 16, 4, 16, 16, eps=1e-4)
    with torch.no_grad():
        for theirs, name in _NAMES.items():
            p = reference.get_parameter(theirs)
            p.copy_(torch.randn_like(p) * 0.3)
            target = ours.get_parameter(name)
            target.copy_(p.reshape(target.shape))
        x = torch.randn(2, seq, 64)
        assert torch.allclose(ours(x), reference(x), atol=1e-5, rtol=1e-5)


def test_kda_shares_the_delta_rule_with_gated_deltanet():
    """One key head per value head and a decay that is the same on every channel: KDA's
    rule is Gated DeltaNet's (the shared gated_delta_rule takes either decay)."""
    from archdb.mixers._recurrent import gated_delta_rule

    torch.manual_seed(0)
    q, k = torch.randn(2, 2, 9, 3, 8).unbind(0)
    v, g, beta = torch.randn(1, 9, 3, 4), -torch.rand(1, 9, 3), torch.rand(1, 9, 3)
    per_channel = g[..., None].expand(1, 9, 3, 8)
    assert torch.allclose(
        gated_delta_rule(q, k, v, g, beta), gated_delta_rule(q, k, v, per_channel, beta)
    )
    assert gated_deltanet_module().forward is not kda_module().forward


@pytest.mark.parametrize("changes", [{}, {"attention.latent.q_lora_rank": 24}])
def test_kimi_linear_card_counts_equal_transformers_model(changes):
    from archdb_hf.testing import hf_parameter_count

    arch = make_arch(**{**KIMI_LIKE, **changes})
    expected = hf_parameter_count(arch, "kimi_linear")
    assert param_count(arch).total == expected
    assert count_parameters(build_model(arch, device="meta")) == expected


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mixers": {"kda": kda_dims(decay_rank=8, output_gate_rank=16)}}, "decay_rank equal"),
        (
            {"mixers": {"kda": kda_dims(decay_rank=16, output_gate=False, output_gate_rank=None)}},
            "mixers.kda.output_gate True",
        ),
        ({"position.type": "rope", "position.rope_theta": 10000.0}, "position.type must be"),
    ],
)
def test_kimi_linear_reference_refuses_what_transformers_cannot_build(changes, message):
    from archdb_hf.reference import NotRepresentable, convert

    with pytest.raises(NotRepresentable, match=re.escape(message)):
        convert(make_arch(**{**KIMI_LIKE, **changes}), "kimi_linear")


def test_kda_state_is_a_constant_of_the_context():
    plan = make_plan(make_arch(**KDA_HYBRID))
    # three KDA layers: 4 heads x 16 x 16 states, and 3 x 64 conv channels x (4 - 1) inputs
    state = 3 * (4 * 16 * 16 + 3 * 64 * 3)
    kv = 2 * 2 * 16  # one attention layer: K and V of 2 heads x 16 per token
    for context in (1, 100, 100_000):
        assert cache_bytes(plan, context, 1) == state + kv * context
    assert cache_size(make_arch(**KDA_HYBRID), context=100).total == 2 * (state + kv * 100)


@pytest.mark.parametrize(
    "mixer",
    [kda_dims(), kda_dims(output_gate=False, output_gate_rank=None, conv_kernel=2)],
)
def test_kda_toy_is_causal_and_counts_flops_exactly(mixer):
    from archdb.measure.analytic import flops
    from archdb.measure.flops import measure_flops

    torch.manual_seed(0)
    arch = make_arch(**{**KDA_HYBRID, "mixers": {"kda": mixer}})
    model = build_model(arch).eval()
    kinds = [type(layer.attn.sublayer).__name__ for layer in model.decoder.layers]
    assert kinds == ["KimiDeltaAttentionMixer"] * 3 + ["HeadAttention"]
    assert_causal(model)
    assert measure_flops(model, 24).total == sum(flops(arch, 24).dense.values())


def test_kda_toy_shrinks_heads_and_gate_ranks():
    from archdb.builder.shrink import shrink

    big = kda_dims(n_heads=32, head_dim=128, decay_rank=128, output_gate_rank=64)
    arch = make_arch(**{**KDA_HYBRID, "d_model": 2048, "mixers": {"kda": big}})
    toy = shrink(arch).arch.mixers.kda
    assert (toy.n_heads, toy.head_dim, toy.decay_rank, toy.output_gate_rank) == (2, 16, 16, 8)
    assert (toy.conv_kernel, toy.output_gate, toy.mlp) == (4, True, True)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.layer_pattern": ["kda", "global"]}, "mixers.kda is required for, and only"),
        ({"mixers": {"kda": kda_dims()}}, "mixers.kda is required for, and only for"),
        (
            {**KDA_HYBRID, "mixers": {"kda": kda_dims(output_gate_rank=None)}},
            "mixers.kda.output_gate_rank is required for, and only for, output_gate true",
        ),
        (
            {**KDA_HYBRID, "mixers": {"kda": kda_dims(output_gate=False)}},
            "mixers.kda.output_gate_rank is required for, and only for, output_gate true",
        ),
        ({**KDA_HYBRID, "mixers": {"kda": kda_dims(decay_rank=0)}}, "decay_rank"),
    ],
)
def test_schema_refuses_kda_sizes_that_disagree(changes, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**changes)


# --- import-hf ---------------------------------------------------------------------------

KIMI_SMALL = dict(
    vocab_size=1000,
    hidden_size=64,
    intermediate_size=96,
    moe_intermediate_size=32,
    num_hidden_layers=6,
    num_attention_heads=4,
    num_key_value_heads=4,
    num_local_experts=8,
    num_experts_per_tok=2,
    kv_lora_rank=16,
    qk_rope_head_dim=8,
    qk_nope_head_dim=16,
    v_head_dim=16,
    linear_num_heads=4,
    linear_head_dim=16,
    pad_token_id=None,  # the default (163839) lies outside a toy's vocabulary
)


def test_import_hf_kimi_linear_saved_config_is_exact():
    """transformers' saved form: flat linear_* keys, layer_types and mlp_layer_types."""
    ours, expected, card = hf_import_count("kimi_linear", **KIMI_SMALL)
    assert ours == expected
    arch = card.architecture
    # transformers' default: full attention at every fourth layer after the first
    assert [k.value for k in arch.layer_kinds()] == ["kda"] * 4 + ["global", "kda"]
    assert arch.position.type.value == "none"
    assert arch.attention.latent.norm_eps == 1e-6 and arch.norm.eps == 1e-5
    kda = arch.mixers.kda
    assert (kda.n_heads, kda.head_dim, kda.conv_kernel, kda.decay_rank) == (4, 16, 4, 16)
    moe = arch.mlp.moe
    assert (moe.first_dense_layers, moe.dense_d_ff, moe.n_shared, moe.routed_scale) == (
        1,
        96,
        1,
        2.446,
    )


# The released form (keys as moonshotai's config.json spells them), at toy size
RELEASED_FORM = {
    "model_type": "kimi_linear",
    "architectures": ["KimiLinearForCausalLM"],
    "vocab_size": 1000,
    "hidden_size": 64,
    "head_dim": 72,  # a leftover transformers overrides with qk_rope_head_dim
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 7,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "kv_lora_rank": 16,
    "q_lora_rank": None,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "mla_use_nope": True,
    "linear_attn_config": {
        "full_attn_layers": [4, 7],
        "kda_layers": [1, 2, 3, 5, 6],
        "head_dim": 8,
        "num_heads": 4,
        "short_conv_kernel_size": 3,
    },
    "num_experts": 8,
    "num_experts_per_token": 2,
    "num_shared_experts": 1,
    "num_expert_group": 1,
    "topk_group": 1,
    "moe_renormalize": True,
    "moe_router_activation_func": "sigmoid",
    "routed_scaling_factor": 2.446,
    "first_k_dense_replace": 2,
    "moe_layer_freq": 1,
    "use_grouped_topk": True,
    "model_max_length": 4096,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "num_nextn_predict_layers": 0,
}


def _import(config: dict):
    from archdb_hf.importer import Identity, import_config

    identity = Identity("kimi-tiny", "Kimi tiny", "kimi-linear", "Example Lab", "2025-10-30")
    return import_config(config, source_url="https://huggingface.co/o/m", identity=identity)


def test_import_hf_kimi_linear_released_form_is_exact():
    import transformers

    from archdb.writer import validate_card

    result = _import(RELEASED_FORM)
    assert result.unmapped == {}
    arch = validate_card(result.card).architecture
    ours = count_parameters(build_model(arch, device="meta"))
    config = transformers.AutoConfig.for_model(
        **{k: v for k, v in RELEASED_FORM.items() if k != "architectures"}, pad_token_id=None
    )
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert ours == sum(p.numel() for p in model.parameters())
    pattern = ["kda"] * 3 + ["global"] + ["kda"] * 2 + ["global"]
    assert [k.value for k in arch.attention.layer_pattern] == pattern
    assert (arch.mixers.kda.head_dim, arch.mixers.kda.conv_kernel) == (8, 3)
    assert (arch.context_length, arch.mlp.moe.first_dense_layers) == (4096, 2)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"full_attn_layers": [4, 8], "kda_layers": [1, 2, 3, 5, 6]}, "names layer 8, outside"),
        ({"full_attn_layers": [4, 5], "kda_layers": [1, 2, 3, 5, 6]}, "names layer 5 twice or"),
        ({"full_attn_layers": [4], "kda_layers": [1, 2, 3, 5, 6]}, "lists layer 7 as neither"),
        ({"kda_layers": [0, 1, 2]}, "linear_attn_config.kda_layers.0: Input should be greater"),
        ({"num_heads": "32"}, "linear_attn_config.num_heads: Input should be a valid integer"),
    ],
)
def test_import_hf_kimi_linear_refuses_bad_layer_lists(changes, message):
    from archdb_hf.importer import HFImportError

    linear = {**RELEASED_FORM["linear_attn_config"], **changes}
    with pytest.raises(HFImportError, match=re.escape(message)):
        _import({**RELEASED_FORM, "linear_attn_config": linear})


def test_import_hf_kimi_linear_refuses_a_softmax_router():
    from archdb_hf.importer import HFImportError

    with pytest.raises(HFImportError, match="scores experts with a sigmoid"):
        _import({**RELEASED_FORM, "moe_router_activation_func": "softmax"})


def test_import_hf_kimi_linear_refuses_moe_layers_between_dense_ones():
    from archdb_hf.importer import HFImportError

    types = ["dense", "sparse", "dense", *["sparse"] * 4]
    with pytest.raises(HFImportError, match="mlp_layer_types is not dense layers then sparse"):
        _import({**RELEASED_FORM, "mlp_layer_types": types})
