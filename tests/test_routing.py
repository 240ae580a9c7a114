"""Router spec: score function, correction bias, group-limited top-k, routed scale.

The cards' fields are validated, import-hf reads them from DeepSeek-V2/V3 and GLM-4.5
configs as transformers' routers use them, the references refuse a router their family
cannot run, and archdb's Router picks the same experts with the same weights as
transformers' DeepseekV2TopkRouter and DeepseekV3TopkRouter on shared weights.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from archdb.writer import validate_card
from archdb_hf.importer import HFImportError, Identity, import_config
from archdb_hf.reference import NotRepresentable, convert
from tests.conftest import latent_dims, make_arch, moe_block

IDENTITY = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2024-01-01")
URL = "https://huggingface.co/org/model/blob/main/config.json"
GROUPED = dict(n_experts=8, n_active=3, n_groups=4, top_k_groups=2, group_score="top2-sum")


def _moe(**changes):
    return make_arch(**{"mlp.moe": moe_block(**changes)}).mlp.moe


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"n_groups": 4}, "n_groups and mlp.moe.top_k_groups are set together"),
        ({**GROUPED, "n_groups": 3}, r"n_groups \(3\) must divide n_experts \(8\)"),
        ({**GROUPED, "top_k_groups": 5}, r"top_k_groups \(5\) exceeds n_groups \(4\)"),
        ({**GROUPED, "top_k_groups": 1}, r"n_active \(3\) exceeds .* kept groups \(1 x 2\)"),
        ({**GROUPED, "group_score": None}, "group_score is required when n_groups > 1"),
        ({"group_score": "max"}, "group_score is set but mlp.moe.n_groups is not"),
        ({**GROUPED, "n_groups": 8, "top_k_groups": 4}, "top2-sum needs at least 2 experts"),
        ({"score_function": "tanh"}, "score_function"),
        ({"routed_scale": 0.0}, "routed_scale"),
    ],
)
def test_an_impossible_router_is_refused(changes, message):
    with pytest.raises(ValidationError, match=message):
        _moe(**changes)


def test_a_grouped_router_validates():
    moe = _moe(**GROUPED, score_function="sigmoid", score_correction_bias=True, routed_scale=2.5)
    assert (moe.n_groups, moe.top_k_groups, moe.group_score) == (4, 2, "top2-sum")


# --- import-hf ---------------------------------------------------------------------------


def _deepseek(model_type: str, **changes) -> dict:
    config = {
        "model_type": model_type,
        "hidden_size": 64,
        "intermediate_size": 128,
        "moe_intermediate_size": 32,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 128,
        "max_position_embeddings": 64,
        "first_k_dense_replace": 1,
        "n_routed_experts": 8,
        "n_shared_experts": 1,
        "num_experts_per_tok": 3,
        "kv_lora_rank": 16,
        "q_lora_rank": None,
        "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 16,
        "v_head_dim": 16,
    }
    return config | changes


def _imported(config: dict):
    result = import_config(config, source_url=URL, identity=IDENTITY)
    return result, validate_card(result.card).architecture.mlp.moe


def test_deepseek_v3_routing_comes_from_the_config():
    config = _deepseek(
        "deepseek_v3", scoring_func="sigmoid", topk_method="noaux_tc", n_group=4, topk_group=2,
        routed_scaling_factor=2.5, norm_topk_prob=True,
    )  # fmt: skip
    result, moe = _imported(config)
    assert moe.score_function == "sigmoid" and moe.score_correction_bias is True
    assert (moe.n_groups, moe.top_k_groups, moe.group_score) == (4, 2, "top2-sum")
    assert moe.normalize_top_k is True and moe.routed_scale == 2.5
    for field in ("n_groups", "top_k_groups", "normalize_top_k", "routed_scale"):
        assert f"architecture.mlp.moe.{field}" in result.from_config
    for field in ("score_function", "score_correction_bias", "group_score"):
        assert f"architecture.mlp.moe.{field}" in result.from_family
    assert not {"scoring_func", "topk_method", "n_group"} & set(result.unmapped)


def test_deepseek_v3_defaults_are_its_config_class_defaults():
    _, moe = _imported(_deepseek("deepseek_v3", n_routed_experts=16))  # DeepseekV3Config's
    assert (moe.n_groups, moe.top_k_groups, moe.routed_scale) == (8, 4, 2.5)


def test_one_group_is_recorded_without_a_group_score():
    _, moe = _imported(_deepseek("deepseek_v3", n_group=1, topk_group=1))  # Kimi K2
    assert (moe.n_groups, moe.top_k_groups, moe.group_score) == (1, 1, None)


def test_deepseek_v2_routes_by_softmax_shares_without_renormalizing():
    config = _deepseek(
        "deepseek_v2", topk_method="group_limited_greedy", n_group=4, topk_group=2,
        routed_scaling_factor=16.0, norm_topk_prob=False,
    )  # fmt: skip
    _, moe = _imported(config)
    assert moe.score_function == "softmax" and moe.normalize_top_k is False
    assert (moe.n_groups, moe.top_k_groups, moe.group_score) == (4, 2, "max")
    assert moe.routed_scale == 16.0 and moe.score_correction_bias is None
    _, greedy = _imported(_deepseek("deepseek_v2", topk_method="greedy"))
    assert (greedy.n_groups, greedy.group_score, greedy.routed_scale) == (None, None, 1.0)


def test_deepseek_v2_notes_a_norm_topk_prob_transformers_ignores():
    result, moe = _imported(_deepseek("deepseek_v2", norm_topk_prob=True))
    assert moe.normalize_top_k is False
    assert "does not read" in result.card["notes"]["architecture.mlp.moe.normalize_top_k"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"topk_method": "noaux_tc"}, "routes greedy or group_limited_greedy"),
        ({"scoring_func": "sigmoid"}, "scores by softmax"),
        ({"topk_method": "group_limited_greedy"}, "config.json has no n_group"),
    ],
)
def test_a_deepseek_v2_router_transformers_cannot_run_is_an_error(changes, message):
    with pytest.raises(HFImportError, match=message):
        import_config(_deepseek("deepseek_v2", **changes), source_url=URL, identity=IDENTITY)


def test_glm4_moe_imports_deepseek_v3_routing_on_gqa():
    config = {
        "model_type": "glm4_moe", "hidden_size": 64, "intermediate_size": 128,
        "moe_intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128,
        "max_position_embeddings": 64, "attention_bias": True, "use_qk_norm": True,
        "first_k_dense_replace": 1, "n_routed_experts": 8, "n_shared_experts": 1,
        "num_experts_per_tok": 3, "n_group": 1, "topk_group": 1,
        "routed_scaling_factor": 2.5, "partial_rotary_factor": 0.5,
    }  # fmt: skip
    result, moe = _imported(config)
    arch = validate_card(result.card).architecture
    assert (arch.bias.qkv, arch.bias.attn_out, arch.attention.qk_norm) == (True, False, "per-head")
    assert arch.position.rotary_fraction == 0.5 and arch.norm.eps == 1e-5
    assert moe.score_function == "sigmoid" and moe.score_correction_bias
    assert (moe.n_groups, moe.routed_scale, moe.normalize_top_k) == (1, 2.5, True)


# --- the references ------------------------------------------------------------------------


def _mla(**moe):
    return make_arch(**{
        "n_layers": 3, "attention.variant": "latent", "attention.n_kv_heads": 4,
        "attention.latent": latent_dims(), "mlp.moe": moe_block(
            n_shared=1, shared_d_ff=128, first_dense_layers=1, dense_d_ff=256, **moe),
    })  # fmt: skip


@pytest.mark.parametrize(
    ("model_type", "moe", "message"),
    [
        ("mixtral", {"score_function": "sigmoid"}, "has no sigmoid_scores"),
        ("qwen3_moe", {"routed_scale": 2.0}, "has no routed_scale"),
        ("deepseek_v2", {"score_correction_bias": True}, "has no correction_bias"),
        ("deepseek_v2", {"normalize_top_k": True}, "normalize_top_k False .deepseek_v2.s code"),
        ("deepseek_v2", {**GROUPED}, "groups ranked by their max"),
        ("deepseek_v3", {"score_function": "softmax"}, "score_function sigmoid"),
        ("deepseek_v3", {**GROUPED, "group_score": "max"}, "groups by top2-sum"),
    ],
)
def test_a_router_the_family_cannot_run_is_not_representable(model_type, moe, message):
    arch = _mla(**moe)
    if model_type in ("mixtral", "qwen3_moe"):
        arch = make_arch(**{"mlp.moe": moe_block(**moe)})
    with pytest.raises(NotRepresentable, match=message):
        convert(arch, model_type)


def test_the_references_write_the_router_as_transformers_spells_it():
    v3 = convert(
        _mla(**GROUPED, score_function="sigmoid", score_correction_bias=True, routed_scale=2.5),
        "deepseek_v3",
    )
    assert (v3["n_group"], v3["topk_group"], v3["routed_scaling_factor"]) == (4, 2, 2.5)
    assert v3["norm_topk_prob"] is True  # null: the builder normalizes
    v2 = convert(
        _mla(**GROUPED | {"group_score": "max"}, normalize_top_k=False, routed_scale=16.0),
        "deepseek_v2",
    )
    assert (v2["topk_method"], v2["n_group"], v2["routed_scaling_factor"]) == (
        "group_limited_greedy", 4, 16.0,
    )  # fmt: skip
    assert convert(_mla(), "deepseek_v2")["topk_method"] == "greedy"


# --- the module against transformers' routers --------------------------------------------


@pytest.mark.parametrize("model_type", ["deepseek_v2", "deepseek_v3"])
def test_the_router_equals_transformers_on_shared_weights(model_type):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from archdb.parts import moe as moe_part

    Router = moe_part.modules().Router
    from archdb.plan.plan import router_spec

    v3 = model_type == "deepseek_v3"
    config = transformers.AutoConfig.for_model(**_deepseek(
        model_type, n_routed_experts=16, num_experts_per_tok=4, n_group=4, topk_group=2,
        routed_scaling_factor=2.5, topk_method="noaux_tc" if v3 else "group_limited_greedy",
    ))  # fmt: skip
    theirs = transformers.AutoModelForCausalLM.from_config(config).model.layers[1].mlp.gate
    _, moe = _imported(config.to_dict() | {"model_type": model_type})
    ours = Router(router_spec(64, moe))
    torch.manual_seed(0)
    with torch.no_grad():
        theirs.weight.normal_()
        ours.proj.weight.copy_(theirs.weight)
        if v3:
            theirs.e_score_correction_bias.normal_(std=0.3)
            ours.correction_bias.copy_(theirs.e_score_correction_bias)
        x = torch.randn(200, 64)
        _, their_weight, their_index = theirs(x)
        index, weight = ours(x)
    order, their_order = index.argsort(dim=-1), their_index.argsort(dim=-1)
    assert torch.equal(index.gather(1, order), their_index.gather(1, their_order))
    torch.testing.assert_close(weight.gather(1, order), their_weight.gather(1, their_order))
