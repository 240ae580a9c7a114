"""Single-sublayer stacks (Nemotron-H, Nemotron 3): every layer is one pre-normed sublayer,
a Mamba-2 mixer, attention, an MLP or an MoE, listed per layer in ``layer_pattern``.

Counts equal transformers' NemotronHForCausalLM (small configs imported with import-hf),
FLOPs equal fvcore's on the built toy, MLP and MoE layers add no cache, and the schema
refuses stacks that mix single-sublayer entries with mixers that keep an MLP."""

from __future__ import annotations

import re

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.measure.analytic import flops, param_count
from archdb.measure.flops import measure_flops
from archdb.mixers.mamba2 import mamba2_module
from archdb.plan import make_plan
from archdb.plan.plan import cache_bytes
from archdb_hf.importer import HFImportError, Identity, import_config
from tests.conftest import (
    assert_causal,
    hf_import_count,
    make_arch,
    mamba2_dims,
    moe_block,
    shipped_catalogue,
)

# M - M * - : two Mamba-2 layers, two ReLU^2 MLP layers, one attention layer, no positions
NEMOTRON_H = {
    "attention.layer_pattern": ["mamba2", "mlp", "mamba2", "global", "mlp"],
    "attention.mlp": False,
    "attention.head_dim": 24,
    "n_layers": 5,
    "mlp.activation": "squared-relu",
    "position.type": "none",
    "position.rope_theta": None,
    "mixers": {"mamba2": mamba2_dims()},
}
# Nemotron 3: M E M * E - with one shared expert beside the routed ones
NEMOTRON_3 = {
    **NEMOTRON_H,
    "attention.layer_pattern": ["mamba2", "moe", "mamba2", "global", "moe", "mlp"],
    "n_layers": 6,
    "mlp.d_ff": 32,
    "mlp.moe": moe_block(n_shared=1, shared_d_ff=48, dense_d_ff=96),
}


def test_each_layer_is_one_sublayer():
    model = build_model(make_arch(**NEMOTRON_3), device="meta")
    layers = model.decoder.layers
    mixers = [type(x.attn.sublayer).__name__ if x.attn else None for x in layers]
    assert mixers == ["Mamba2Mixer", None, "Mamba2Mixer", "HeadAttention", None, None]
    channel = [type(x.mlp.sublayer).__name__ if x.mlp else None for x in layers]
    assert channel == [None, "MoE", None, None, "MoE", "MLP"]
    assert isinstance(layers[0].attn.sublayer, mamba2_module())
    # one pre-norm per layer: 6 layer norms + the final norm, each d_model wide
    norms = [m for m in model.modules() if type(m).__name__ == "Norm"]
    assert len(norms) == 7 and all(m.weight.shape == (64,) for m in norms)


def test_mlp_layer_parameters_are_the_mlp_and_its_norm():
    dense = param_count(make_arch(**NEMOTRON_H)).total
    pattern = [*NEMOTRON_H["attention.layer_pattern"], "mlp"]
    one_more = make_arch(**{**NEMOTRON_H, "attention.layer_pattern": pattern, "n_layers": 6})
    # up (64 x 128) and down (128 x 64), no gate (ReLU^2), plus the layer's RMSNorm scale
    assert param_count(one_more).total - dense == 2 * 64 * 128 + 64


def test_mlp_and_moe_layers_hold_no_cache():
    plan = make_plan(make_arch(**NEMOTRON_3))
    state = 2 * (8 * 16 * 16 + (128 + 2 * 2 * 16) * 3)  # two Mamba-2 layers, once
    kv = 2 * 2 * 24  # the attention layer: K and V of 2 heads x 24 per token
    for context in (16, 1000):
        assert cache_bytes(plan, context, 1) == state + kv * context


@pytest.mark.parametrize("changes", [NEMOTRON_H, NEMOTRON_3], ids=["nemotron-h", "nemotron-3"])
def test_toy_is_causal_and_fvcore_equals_the_formula(changes):
    torch.manual_seed(0)
    arch = make_arch(**changes)
    model = build_model(arch).eval()
    assert_causal(model)
    assert measure_flops(model, 24).total == sum(flops(arch, 24).dense.values())


def test_toy_of_a_full_size_stack_keeps_its_pattern():
    full = make_arch(
        **{
            **NEMOTRON_H,
            "d_model": 4096,
            "attention.n_heads": 32,
            "attention.n_kv_heads": 8,
            "attention.head_dim": 128,
            "mlp.d_ff": 21504,
            "mixers": {"mamba2": mamba2_dims(n_heads=128, head_dim=64, state_size=128, n_groups=8)},
        }
    )
    toy = shrink(full).arch
    # M - M * : the fewest first layers holding every kind (the list's last MLP is no new one)
    assert toy.attention.layer_pattern == full.attention.layer_pattern[:4]
    assert toy.n_layers == 4 and toy.attention.mlp is False
    assert measure_flops(build_model(toy), 16).total == sum(flops(toy, 16).dense.values())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {**NEMOTRON_H, "attention.mlp": None},
            "has mlp or moe entries (one sublayer per layer): set attention.mlp to false",
        ),
        (
            {**NEMOTRON_H, "mixers": {"mamba2": mamba2_dims(mlp=True)}},
            "set mixers.mamba2.mlp to false",
        ),
        (
            {**NEMOTRON_3, "mlp.moe": None},
            "mlp.moe is required for, and only for, moe entries",
        ),
        (
            {**NEMOTRON_H, "mlp.moe": moe_block(dense_d_ff=96, layer_period=2)},
            "mlp.moe is required for, and only for, moe entries",
        ),
        (
            {
                **NEMOTRON_3,
                "mlp.moe": moe_block(
                    n_shared=1, shared_d_ff=48, first_dense_layers=1, dense_d_ff=96
                ),
            },
            "set mlp.moe.first_dense_layers to 0 and layer_period to 1",
        ),
        (
            {**NEMOTRON_3, "mlp.moe": moe_block(n_shared=1, shared_d_ff=48)},
            "mlp.moe.dense_d_ff is required for, and only for",
        ),
        (
            {"attention.layer_pattern": ["mlp", "moe"], "mlp.moe": moe_block(dense_d_ff=96)},
            "attention.layer_pattern needs a token mixer",
        ),
    ],
)
def test_schema_refuses_single_sublayer_stacks_that_disagree(changes, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**changes)


# --- import-hf against transformers -------------------------------------------------------

SMALL = dict(
    vocab_size=1000,
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    mamba_num_heads=8,
    mamba_head_dim=12,
    ssm_state_size=16,
    n_groups=2,
    conv_kernel=4,
    n_routed_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    moe_shared_expert_intermediate_size=48,
)


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        (
            {"hybrid_override_pattern": "M-M*-M-"},
            # M-M*- would tile it, but does not repeat: the explicit per-layer list
            ["mamba2", "mlp", "mamba2", "global", "mlp", "mamba2", "mlp"],
        ),
        (
            {"hybrid_override_pattern": "M-M-M-", "use_bias": True, "use_conv_bias": False},
            ["mamba2", "mlp"],
        ),
        (
            {"hybrid_override_pattern": "MEM*EM-E"},
            ["mamba2", "moe", "mamba2", "global", "moe", "mamba2", "mlp", "moe"],
        ),
        (
            {"layers_block_type": ["linear_attention", "moe", "full_attention"] * 2},
            ["mamba2", "moe", "global"],
        ),
        (
            {"hybrid_override_pattern": "M*M*", "mlp_bias": True},
            ["mamba2", "global"],
        ),
        (  # Nemotron 3 Super: the experts work in a latent width narrower than d_model
            {"hybrid_override_pattern": "ME*E", "moe_latent_size": 24},
            ["mamba2", "moe", "global", "moe"],
        ),
    ],
)
def test_import_hf_nemotron_h_small_configs_are_exact(changes, pattern):
    ours, expected, card = hf_import_count("nemotron_h", **{**SMALL, **changes})
    assert ours == expected
    arch = card.architecture
    assert [k.value for k in arch.attention.layer_pattern] == pattern
    assert arch.mixers.mamba2.mlp is False
    assert arch.attention.mlp is (False if "global" in pattern else None)
    assert arch.position.type == "none" and arch.mlp.activation == "squared-relu"
    if arch.mlp.moe is not None:
        assert arch.mlp.moe.latent_dim == changes.get("moe_latent_size")


IDENTITY = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2025-01-01")
URL = "https://huggingface.co/org/model/blob/main/config.json"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hybrid_override_pattern": "M-X"}, "hybrid_override_pattern[2] is 'X'"),
        ({"layers_block_type": ["mlp", "conv"]}, "layers_block_type[1] is 'conv'"),
        ({"hybrid_override_pattern": "M-M", "num_hidden_layers": 4}, "lists 3 layers but"),
        ({"hybrid_override_pattern": "", "num_hidden_layers": None}, "is empty"),
        ({"mamba_hidden_act": "gelu"}, "mamba_hidden_act is 'gelu'"),
    ],
)
def test_import_hf_nemotron_h_refuses_what_the_card_cannot_hold(changes, message):
    config = {"model_type": "nemotron_h", **SMALL, "hybrid_override_pattern": "M*-", **changes}
    with pytest.raises(HFImportError, match=re.escape(message)):
        import_config(config, source_url=URL, identity=IDENTITY)


def test_a_tied_config_is_read_as_transformers_builds_it():
    """NemotronHForCausalLM keeps its own output head whatever tie_word_embeddings says:
    the card records that head, and says why in its notes."""
    config = {"model_type": "nemotron_h", **SMALL, "hybrid_override_pattern": "M*-"}
    result = import_config(
        {**config, "tie_word_embeddings": True}, source_url=URL, identity=IDENTITY
    )
    assert result.card["architecture"]["tied_embeddings"] is False
    assert "keeps a separate output head" in result.card["notes"]["architecture.tied_embeddings"]


def test_moe_cards_are_logit_exact_once_their_router_is_recorded():
    """Nemotron-H's dense layers and Nemotron 3's MoE layers are logit-exact
    (test_fidelity.py); the router fields bind MoE cards only: one without them stays
    count-exact and names them, the dense card needs none."""
    from archdb.fidelity import fidelity

    catalogue = shipped_catalogue()
    dense = catalogue.resolve("nemotron-h-8b")
    moe_arch = make_arch(**{**NEMOTRON_3, "norm.eps": 1e-5, "norm.unit_offset": False})
    moe = dense.model_copy(update={"architecture": moe_arch, "family": "nemotron-3"})
    assert fidelity(dense).level == "logit-exact"
    assert fidelity(moe).level == "count-exact"
    assert "mlp.moe.score_function" in fidelity(moe).why
    assert fidelity(catalogue.resolve("nemotron-3-nano-30b-a3b")).level == "logit-exact"
