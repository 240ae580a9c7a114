"""import-hf: released config.json files become valid cards with transformers' exact size.

The fixtures in tests/fixtures/hf/ are written by hand from released config.json values
(see SOURCES.md there). transformers is a test-only dependency: it builds the reference
model on the meta device, and the card's full-size build must count the same parameters.
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from operator import attrgetter
from pathlib import Path

import pytest

from archdb.writer import WriteError, validate_card
from archdb_hf.families.registry import SPECS
from archdb_hf.importer import (
    HFImportError,
    Identity,
    guess_identity,
    import_config,
    supported_model_types,
)
from archdb_hf.testing import DEFAULT_COMPLETIONS
from tests.conftest import hf_import_count, qk_norm, shipped_catalogue

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
CONFIGS = sorted(p.stem for p in FIXTURES.glob("*.json"))
IDENTITY = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2024-01-01")


def config(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def imported(cfg: dict, url: str = "https://huggingface.co/org/model/blob/main/config.json"):
    return import_config(cfg, source_url=url, identity=IDENTITY)


def card_of(cfg: dict):
    return validate_card(imported(cfg).card)


@pytest.mark.parametrize("name", CONFIGS)
def test_every_fixture_imports_to_a_valid_card(name):
    result = imported(config(name))
    card = validate_card(result.card)
    assert card.architecture.d_model
    assert result.from_config, "sizes come from the config"
    kinds = [s.kind.value for s in card.sources]
    assert kinds[0] == "config" and card.sources[0].url.startswith("https://huggingface.co/")
    if result.from_family:
        assert kinds == ["config", "code"]
        assert "github.com/huggingface/transformers" in card.sources[1].url


# (fixture, {card path: expected value}) - choices transformers keeps in code included
EXPECTED = [
    ("llama-2-7b-hf", {"norm.type": "rmsnorm", "norm.position": "pre", "mlp.activation": "swiglu",
                       "attention.n_kv_heads": 32, "tied_embeddings": False,
                       "position.rope_theta": 10000.0, "bias.qkv": False}),
    ("mistral-7b-v0.1", {"attention.layer_pattern": ["local"], "attention.sliding_window": 4096,
                         "attention.n_kv_heads": 8}),
    ("mixtral-8x7b-v0.1", {"mlp.moe.n_experts": 8, "mlp.moe.n_active": 2, "mlp.d_ff": 14336,
                           "mlp.moe.n_shared": 0}),
    ("gemma-2b", {"mlp.activation": "geglu", "tied_embeddings": True, "attention.n_kv_heads": 1,
                  "attention.head_dim": 256}),
    ("gemma-2-2b", {"norm.position": "double", "attention.layer_pattern": ["local", "global"],
                    "attention.logit_softcap": 50.0, "final_logit_softcap": 30.0}),
    ("gemma-3-1b-pt", {"attention.layer_pattern": ["local"] * 5 + ["global"],
                       **qk_norm("per-head"), "position.rope_theta": 1_000_000.0,
                       "position.rope_theta_local": 10000.0, "attention.sliding_window": 512}),
    ("qwen2-7b", {"bias.qkv": True, "bias.attn_out": False, "attention.layer_pattern": ["global"],
                  "attention.sliding_window": None}),
    ("qwen3-0.6b-base", {**qk_norm("per-head"), "attention.head_dim": 128,
                         "tied_embeddings": True}),
    ("qwen3-30b-a3b", {"mlp.d_ff": 768, "mlp.moe.n_experts": 128, "mlp.moe.n_active": 8}),
    ("olmo-2-1124-7b", {"norm.position": "post-branch", **qk_norm("full")}),
    ("phi-2", {"parallel_layers": True, "norm.shared_in_parallel": True, "bias.lm_head": True,
               "position.rotary_fraction": 0.4, "mlp.activation": "gelu",
               "norm.type": "layernorm"}),
    ("phi-3-mini-4k-instruct", {"attention.layer_pattern": ["local"],
                                "attention.sliding_window": 2047}),
    ("phi-3.5-mini-instruct", {"context_length": 131072, "attention.sliding_window": 262144,
                               "position.rope_scaling.type": "longrope",
                               "position.rope_scaling.original_context": 4096}),
    ("phi-4-mini-instruct", {"attention.n_kv_heads": 8, "vocab_size": 200064,
                             "position.rotary_fraction": 0.75, "tied_embeddings": True,
                             "position.rope_scaling.factor": 32.0}),
    ("gpt2", {"d_model": 768, "position.type": "learned", "mlp.d_ff": 3072, "bias.mlp": True,
              "norm.affine": "scale-and-bias", "tied_embeddings": True, "context_length": 1024}),
    ("pythia-70m", {"parallel_layers": True, "norm.shared_in_parallel": False,
                    "position.rotary_fraction": 0.25, "bias.qkv": True, "bias.mlp": True}),
    ("falcon-7b", {"attention.n_kv_heads": 1, "parallel_layers": True,
                   "norm.shared_in_parallel": True, "mlp.d_ff": 4 * 4544, "bias.qkv": False,
                   "tied_embeddings": True}),
    ("deepseek-v2-lite", {"attention.variant": "latent", "attention.latent.q_lora_rank": None,
                          "attention.latent.kv_lora_rank": 512, "mlp.moe.n_shared": 2,
                          "mlp.moe.shared_d_ff": 2816, "mlp.moe.first_dense_layers": 1,
                          "mlp.moe.dense_d_ff": 10944, "mlp.d_ff": 1408}),
    ("gpt-j-6b", {"parallel_layers": True, "position.rotary_fraction": 0.25, "bias.qkv": False,
                  "bias.mlp": True, "bias.lm_head": True, "mlp.d_ff": 16384}),
    ("c4ai-command-r-v01", {"norm.type": "layernorm", "norm.affine": "scale",
                            "parallel_layers": True, "position.rope_theta": 8_000_000.0}),
    ("gpt-oss-20b", {"mlp.activation": "clamped-swiglu", "mlp.swiglu_limit": 7.0,
                     "mlp.swiglu_alpha": 1.702, "attention.sinks": True,
                     "attention.layer_pattern": ["local", "global"],
                     "attention.sliding_window": 128, "mlp.moe.router_bias": True,
                     "position.rope_scaling.truncate": False, "mlp.moe.n_experts": 32}),
    ("gemma-4-26b-a4b", {"attention.layer_pattern": ["local"] * 5 + ["global"],
                         "attention.global_layers.n_kv_heads": 2,
                         "attention.global_layers.head_dim": 512,
                         "attention.global_layers.rotary_fraction": 0.25,
                         "attention.global_layers.values_from_keys": True,
                         "attention.value_norm": True, "attention.scale": 1.0,
                         "position.rotary_fraction": None, "norm.unit_offset": False,
                         "mlp.d_ff": 704, "mlp.moe.n_experts": 128, "mlp.moe.n_active": 8,
                         "mlp.moe.dense_beside_d_ff": 2112, "mlp.moe.router_scales": True,
                         "final_logit_softcap": 30.0}),
]  # fmt: skip


def arch_value(card, path: str):
    value = card.architecture
    for part in path.split("."):
        value = getattr(value, part)
    if isinstance(value, list):
        return [v.value for v in value]
    return value.value if hasattr(value, "value") else value


@pytest.mark.parametrize(("name", "expected"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_mapped_values(name, expected):
    card = card_of(config(name))
    assert {p: arch_value(card, p) for p in expected} == expected


def test_the_fixture_table_covers_every_fixture():
    assert sorted(name for name, _ in EXPECTED) == CONFIGS


# --- naming idioms ----------------------------------------------------------------


def test_layer_types_and_sliding_window_pattern_agree():
    legacy = config("gemma-3-1b-pt")
    explicit = copy.deepcopy(legacy)
    del explicit["sliding_window_pattern"]
    n = explicit["num_hidden_layers"]
    explicit["layer_types"] = [
        "full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)
    ]
    a, b = card_of(legacy).architecture, card_of(explicit).architecture
    assert a.attention.layer_pattern == b.attention.layer_pattern
    assert len(a.attention.layer_pattern) == 6


def test_rope_parameters_dict_is_read_like_rope_theta():
    cfg = config("olmo-2-1124-7b")
    theta = cfg.pop("rope_theta")
    cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    assert card_of(cfg).architecture.position.rope_theta == theta


def test_rope_scaling_is_mapped_and_the_rest_reported_and_noted():
    result = imported(config("deepseek-v2-lite"))
    scaling = validate_card(result.card).architecture.position.rope_scaling
    assert (scaling.type.value, scaling.factor, scaling.original_context) == ("yarn", 40.0, 4096)
    assert (scaling.beta_fast, scaling.beta_slow) == (32.0, 1.0)
    assert (scaling.mscale, scaling.mscale_all_dim) == (0.707, 0.707)  # DeepSeek's pair
    assert "rope_scaling" not in result.unmapped
    cfg = config("deepseek-v2-lite")
    cfg["rope_scaling"] = {**cfg["rope_scaling"], "attention_factor": 1.5}
    result = imported(cfg)
    assert result.unmapped["rope_scaling"] == {"attention_factor": 1.5}
    assert "attention_factor" in result.card["notes"]["architecture.position.rope_scaling"]


def test_deepseek_v2_greedy_keeps_the_one_group_its_config_states():
    """V2-Lite routes greedy and states n_group 1, topk_group 1: one group holding every
    expert, recorded; greedy does not apply more groups, so those stay reported unread."""
    moe = card_of(config("deepseek-v2-lite")).architecture.mlp.moe
    assert (moe.n_groups, moe.top_k_groups, moe.group_score) == (1, 1, None)
    result = imported({**config("deepseek-v2-lite"), "n_group": 8, "topk_group": 3})
    moe = validate_card(result.card).architecture.mlp.moe
    assert (moe.n_groups, moe.top_k_groups) == (None, None)
    assert (result.unmapped["n_group"], result.unmapped["topk_group"]) == (8, 3)


def test_yarn_truncate_is_a_flag_or_reported():
    cfg = config("deepseek-v2-lite")
    cfg["rope_scaling"] = {**cfg["rope_scaling"], "truncate": False}
    result = imported(cfg)
    assert validate_card(result.card).architecture.position.rope_scaling.truncate is False
    cfg["rope_scaling"]["truncate"] = "no"
    result = imported(cfg)
    assert validate_card(result.card).architecture.position.rope_scaling.truncate is None
    assert result.unmapped["rope_scaling"]["truncate"] == "no"


def test_unknown_rope_scaling_types_are_reported_and_noted():
    cfg = config("llama-2-7b-hf")
    cfg["rope_scaling"] = {"type": "proportional", "factor": 4.0}
    result = imported(cfg)
    assert result.unmapped["rope_scaling"]["type"] == "proportional"
    assert "rope scaling" in result.card["notes"]["architecture.position"]
    assert validate_card(result.card).architecture.position.rope_scaling is None


@pytest.mark.parametrize("name", ["phi-3.5-mini-instruct", "phi-4-mini-instruct"])
def test_longrope_is_read_with_phi3s_top_level_original_context(name):
    """Phi-3.5-mini and Phi-4-mini keep original_max_position_embeddings beside the block
    and give no factor: transformers' max_position_embeddings / original (32)."""
    cfg = config(name)
    scaling = card_of(cfg).architecture.position.rope_scaling
    assert (scaling.type.value, scaling.factor, scaling.original_context) == (
        "longrope",
        32.0,
        4096,
    )
    assert list(scaling.short_factor) == cfg["rope_scaling"]["short_factor"]
    assert list(scaling.long_factor) == cfg["rope_scaling"]["long_factor"]
    assert scaling.attention_factor is None
    cfg["rope_scaling"] |= {"factor": 16.0, "attention_factor": 1.5}
    scaling = card_of(cfg).architecture.position.rope_scaling
    assert (scaling.factor, scaling.attention_factor) == (16.0, 1.5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"short_factor": "1, 2"}, "short_factor must be a list of positive numbers"),
        ({"long_factor": [1.0, True]}, "long_factor must be a list of positive numbers"),
        ({"long_factor": [1.0, -2.0]}, "long_factor must be a list of positive numbers"),
        ({"short_factor": []}, "short_factor must be a list of positive numbers"),
    ],
)
def test_malformed_longrope_factors_are_refused(change, message):
    cfg = config("phi-4-mini-instruct")
    cfg["rope_scaling"] |= change
    with pytest.raises(HFImportError, match=message):
        imported(cfg)


def test_longrope_factors_of_the_wrong_length_name_the_field():
    cfg = config("phi-4-mini-instruct")
    cfg["partial_rotary_factor"] = 0.5  # 32 rotated pairs, 48 factors
    with pytest.raises(WriteError, match="have 48 values, but the heads rotate 32 pairs"):
        card_of(cfg)


def test_longrope_without_an_original_context_is_refused():
    cfg = config("phi-4-mini-instruct")
    del cfg["original_max_position_embeddings"]
    with pytest.raises(HFImportError, match="longrope needs original_max_position_embeddings"):
        imported(cfg)


@pytest.mark.parametrize(
    ("name", "omitted", "expected"),
    [
        (
            "gemma-2-2b",
            ("attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"),
            {
                "attention.logit_softcap": 50.0,
                "final_logit_softcap": 30.0,
                "attention.scale": 1 / 16,
            },
        ),
        (
            "gemma-3-1b-pt",
            ("rope_theta", "rope_local_base_freq", "query_pre_attn_scalar"),
            {
                "position.rope_theta": 1e6,
                "position.rope_theta_local": 1e4,
                "attention.scale": 1 / 16,
            },
        ),
    ],
)
def test_gemma_keys_a_config_omits_take_the_config_class_defaults(name, omitted, expected):
    """Gemma2Config: softcaps 50 and 30; both: query_pre_attn_scalar 256; Gemma3TextConfig:
    RoPE bases 1e6 (full layers) and 1e4 (sliding), not the Llama default."""
    cfg = {k: v for k, v in config(name).items() if k not in omitted}
    arch = card_of(cfg).architecture
    assert {path: attrgetter(path)(arch) for path in expected} == expected


def test_hidden_activation_wins_over_legacy_hidden_act():
    cfg = config("gemma-2b")  # hidden_act "gelu", hidden_activation "gelu_pytorch_tanh"
    result = imported(cfg)
    assert "hidden_act" not in result.unmapped
    assert card_of(cfg).architecture.mlp.activation.value == "geglu"


def test_attribute_map_spellings_gpt2_style():
    card = card_of(config("gpt2"))
    assert (card.architecture.d_model, card.architecture.n_layers) == (768, 12)
    assert card.architecture.attention.n_heads == 12


def test_tie_word_embeddings_default_comes_from_the_family_and_is_cited():
    cfg = config("gemma-2b")
    assert "tie_word_embeddings" not in cfg
    result = imported(cfg)
    assert "architecture.tied_embeddings" in result.from_family
    code = validate_card(result.card).sources[1]
    assert any("tied_embeddings" in s for s in code.supports)


def test_multimodal_text_config_is_the_decoder():
    text = config("gemma-3-1b-pt")
    wrapper = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
               "text_config": text, "vision_config": {"hidden_size": 1152}}  # fmt: skip
    result = imported(wrapper)
    assert validate_card(result.card).architecture.d_model == text["hidden_size"]
    assert "text_config" in result.card["notes"]["architecture"]


def test_a_custom_model_type_is_read_through_architectures():
    """Kimi K2's config says model_type kimi_k2 and architectures DeepseekV3ForCausalLM."""
    cfg = config("deepseek-v2-lite")
    custom = {**cfg, "model_type": "my_lab_v2", "architectures": ["DeepseekV2ForCausalLM"]}
    result = imported(custom)
    assert result.model_type == "deepseek_v2"
    assert result.card["architecture"] == imported(cfg).card["architecture"]
    note = result.card["notes"]["architecture"]
    assert "'my_lab_v2' is custom" in note and "DeepseekV2ForCausalLM" in note


@pytest.mark.parametrize(
    "architectures",
    [None, "DeepseekV2ForCausalLM", ["DeepseekV2"], ["DeepseekV2ForCausalLMx"], [7], ["x" * 10**5]],
)
def test_a_custom_model_type_without_a_known_model_class_is_refused(architectures):
    cfg = {**config("deepseek-v2-lite"), "model_type": "my_lab_v2"}
    cfg["architectures"] = architectures
    with pytest.raises(HFImportError, match="model_type 'my_lab_v2' is not supported"):
        imported(cfg)


def test_unmapped_keys_are_reported_not_dropped():
    assert imported(config("mixtral-8x7b-v0.1")).unmapped == {"router_aux_loss_coef": 0.02}
    command_r = imported(config("c4ai-command-r-v01"))
    assert command_r.unmapped == {}
    assert command_r.card["architecture"]["logit_scale"] == 0.0625  # mapped, no longer unmapped
    assert "not applied" in imported(config("qwen2-7b")).unmapped["sliding_window"]
    cfg = config("llama-2-7b-hf")
    cfg["my_new_knob"] = 3
    assert imported(cfg).unmapped == {"my_new_knob": 3}


# --- refusals ---------------------------------------------------------------------


def test_unknown_model_type_lists_the_supported_ones():
    with pytest.raises(HFImportError, match=r"not supported; supported: .*llama"):
        imported({"model_type": "xlnet", "hidden_size": 8})
    assert "gemma2" in supported_model_types()


def test_a_source_is_required():
    with pytest.raises(HFImportError, match="source is required"):
        import_config(config("gpt2"), source_url="", identity=IDENTITY)


def test_missing_sizes_are_an_error():
    cfg = config("llama-2-7b-hf")
    del cfg["hidden_size"]
    with pytest.raises(HFImportError, match="no hidden_size"):
        imported(cfg)


def test_identity_guessed_from_the_hub_url():
    url = "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"
    assert guess_identity({}, url) == {
        "id": "llama-2-7b-hf", "name": "Llama 2 7b hf", "family": "llama-2",
    }  # fmt: skip
    assert guess_identity({"_name_or_path": "Qwen/Qwen3-0.6B-Base"}, "")["family"] == "qwen3"


# --- exact parameters against transformers -----------------------------------------


@pytest.mark.parametrize("name", CONFIGS)
def test_full_size_build_matches_transformers_exactly(name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from archdb.builder.model import build_model, count_parameters

    cfg = config(name)
    ours = count_parameters(build_model(card_of(cfg).architecture, device="meta"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()
        hf_config = transformers.AutoConfig.for_model(**cfg)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(hf_config)
    assert ours == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("model_type", supported_model_types())
def test_every_family_matches_transformers_on_its_default_config(model_type):
    """Each family's code-kept choices, checked against transformers' own model.

    transformers' default config of a family is a serialized config like a released one
    (attribute_map spellings included: Qwen 3 MoE's num_experts is saved as
    num_local_experts), so a family mapping that gets a norm, a bias or a tie wrong shows
    up as a parameter difference here.
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from archdb.builder.model import build_model, count_parameters

    spec = SPECS[model_type]
    released = spec.released_as or model_type  # Qwen3-VL's decoder: its release's config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()
        hf_config = transformers.AutoConfig.for_model(
            released, **DEFAULT_COMPLETIONS.get(model_type, {})
        )
        with torch.device("meta"):  # the family's own model class (BERT's masked-LM model)
            model = getattr(transformers, spec.model_class)(hf_config)
    cfg = {**hf_config.to_dict(), "model_type": released}
    ours = count_parameters(build_model(card_of(cfg).architecture, device="meta"))
    from archdb_hf.testing import card_parameters

    assert ours == card_parameters(model, spec)


def test_qwen3_next_without_layer_types_reads_the_full_attention_interval():
    """Released Qwen3-Next configs give full_attention_interval, not layer_types; its
    RMSNorm applies (1 + w)."""
    from transformers import Qwen3NextConfig

    config = Qwen3NextConfig(
        num_hidden_layers=6,
        hidden_size=64,
        intermediate_size=128,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_experts=4,
        num_experts_per_tok=2,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        vocab_size=128,
    ).to_dict()
    del config["layer_types"]
    config["full_attention_interval"] = 3
    identity = Identity("next-1b", "Next 1B", "next", "Example Lab", "2025-01-01")
    card = validate_card(
        import_config(config, source_url="https://example.org/c.json", identity=identity).card
    )
    assert card.architecture.attention.layer_pattern == ["gated-deltanet"] * 2 + ["global"]
    assert card.architecture.norm.unit_offset is True
    assert card.architecture.mlp.moe.normalize_top_k is True  # the config's norm_topk_prob
    del config["norm_topk_prob"]  # Qwen3NextConfig's default renormalizes (Qwen3MoeConfig's not)
    card = validate_card(
        import_config(config, source_url="https://example.org/c.json", identity=identity).card
    )
    assert card.architecture.mlp.moe.normalize_top_k is True


def test_gemma4_per_layer_embeddings_and_kv_sharing_become_card_fields():
    """E2B/E4B: per-layer embeddings, the last layers reusing KV, their double-wide MLP
    (use_double_wide_mlp only where layers reuse KV, as in transformers)."""
    cfg = {**config("gemma-4-26b-a4b"), "enable_moe_block": False,
           "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262144,
           "num_kv_shared_layers": 20, "use_double_wide_mlp": True}  # fmt: skip
    arch = card_of(cfg).architecture
    assert arch.per_layer_embeddings.model_dump() == {"width": 256, "vocab_size": 262144}
    assert arch.attention.kv_shared_layers == 20
    assert arch.mlp.kv_shared_d_ff == 2 * arch.mlp.d_ff
    plain = card_of({**cfg, "num_kv_shared_layers": 0}).architecture
    assert (plain.attention.kv_shared_layers, plain.mlp.kv_shared_d_ff) == (None, None)
    off = card_of({**cfg, "hidden_size_per_layer_input": 0}).architecture
    assert off.per_layer_embeddings is None


def test_kv_sharing_that_leaves_a_kind_without_its_own_layer_is_refused():
    """The shared layers read the last earlier layer of their kind: one must exist."""
    cfg = {**config("gemma-4-26b-a4b"), "num_hidden_layers": 6, "enable_moe_block": False,
           "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
           "num_kv_shared_layers": 1}  # fmt: skip
    with pytest.raises(WriteError, match="no earlier layer computes keys and values for the "
                       "shared global layers"):  # fmt: skip
        card_of(cfg)


def test_gemma4_global_kv_heads_apply_only_with_k_eq_v():
    """transformers gives global layers their own KV heads only with attention_k_eq_v."""
    result = imported({**config("gemma-4-26b-a4b"), "attention_k_eq_v": False})
    g = validate_card(result.card).architecture.attention.global_layers
    assert (g.n_kv_heads, g.values_from_keys, g.head_dim) == (None, None, 512)
    assert "num_global_key_value_heads" in result.unmapped


def test_gemma4_per_layer_config_is_read_and_uneven_sizes_refused():
    """transformers 5.24 saves the global layers' sizes as per_layer_config."""
    cfg = {k: v for k, v in config("gemma-4-26b-a4b").items() if "global" not in k}
    full = {f"{i:02d}": {"head_dim": 512, "num_key_value_heads": 2} for i in range(5, 30, 6)}
    g = card_of({**cfg, "per_layer_config": full}).architecture.attention.global_layers
    assert (g.head_dim, g.n_kv_heads) == (512, 2)
    with pytest.raises(HFImportError, match="per-layer widths"):
        imported({**cfg, "per_layer_config": {**full, "05": {"head_dim": 256}}})


@pytest.mark.parametrize("key", ["embedding_multiplier", "attention_multiplier", "logits_scaling"])
def test_a_zero_granite_multiplier_is_refused_by_name(key):
    cfg = {
        "model_type": "granite",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 128,
        "max_position_embeddings": 64,
        key: 0,
    }
    with pytest.raises(HFImportError, match=f"config.json: {key} must be a positive number"):
        card_of(cfg)


def test_granite_factors_become_card_fields_with_the_logit_divisor_inverted():
    cfg = {
        "model_type": "granite",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 128,
        "max_position_embeddings": 64,
        "embedding_multiplier": 12.0,
        "residual_multiplier": 0.22,
        "attention_multiplier": 0.0078125,
        "logits_scaling": 16.0,
    }
    arch = card_of(cfg).architecture
    assert (arch.embedding_multiplier, arch.residual_multiplier) == (12.0, 0.22)
    assert (arch.attention.scale, arch.logit_scale) == (0.0078125, 0.0625)
    defaults = card_of({k: v for k, v in cfg.items() if "multiplier" not in k and "scal" not in k})
    # GraniteConfig's defaults are 1.0 each: attention_multiplier 1, not 1/sqrt(d_head)
    assert defaults.architecture.attention.scale == 1.0
    assert defaults.architecture.residual_multiplier == 1.0


_EXAONE4 = {
    "model_type": "exaone4",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 8,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 128,
    "sliding_window": 16,
}


@pytest.mark.parametrize(
    ("extra", "pattern", "window"),
    [
        ({"sliding_window_pattern": "LLLG"}, ["local", "local", "local", "global-nope"], 16),
        ({"sliding_window_pattern": 2}, ["local", "global-nope"], 16),
        ({"sliding_window": None, "layer_types": ["full_attention"] * 8}, ["global"], None),
    ],
)
def test_exaone4_full_layers_skip_rope_only_with_a_window(extra, pattern, window):
    """EXAONE 4 rotates on its sliding layers only, and on every layer without a window."""
    card = card_of({**_EXAONE4, **extra})
    attention = card.architecture.attention
    assert [k.value for k in attention.layer_pattern] == pattern
    assert attention.sliding_window == window


def test_exaone4_pattern_letters_other_than_l_and_g_are_refused():
    with pytest.raises(HFImportError, match=r"sliding_window_pattern: .*got 'LLXG'"):
        imported({**_EXAONE4, "sliding_window_pattern": "LLXG"})


def test_smollm3_no_rope_layers_of_the_wrong_length_are_refused():
    base = {**_EXAONE4, "model_type": "smollm3", "no_rope_layers": [1, 1, 0]}
    message = "no_rope_layers is not a 0/1 entry for each of the 8 layers"
    with pytest.raises(HFImportError, match=message):
        imported(base)


@pytest.mark.parametrize(
    ("wrapper", "text_model"),
    [("Qwen3_5Config", "Qwen3_5ForCausalLM"), ("Qwen3_5MoeConfig", "Qwen3_5MoeForCausalLM")],
)
def test_qwen3_5_multimodal_config_imports_its_text_decoder_exactly(wrapper, text_model):
    """A released Qwen3.5 config is the multimodal wrapper (model_type qwen3_5 or
    qwen3_5_moe): the card is its text_config's decoder, with transformers' exact count
    at full size (the default sizes: 9.0B dense, 34.7B MoE)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from archdb.builder.model import build_model, count_parameters

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()
        config = getattr(transformers, wrapper)()
        with torch.device("meta"):
            text = getattr(transformers, text_model)(config.text_config)
    result = imported(config.to_dict())
    card = validate_card(result.card)
    arch = card.architecture
    assert result.model_type == config.text_config.model_type  # qwen3_5(_moe)_text
    assert "is multimodal" in card.notes["architecture"]
    assert arch.position.rotary_fraction == 0.25
    assert arch.attention.output_gate.value == "elementwise" and arch.norm.unit_offset
    assert arch.attention.layer_pattern == ["gated-deltanet"] * 3 + ["global"]
    assert (arch.mlp.moe is not None) == ("Moe" in wrapper)
    expected = sum(p.numel() for p in text.parameters())
    assert count_parameters(build_model(arch, device="meta")) == expected


@pytest.mark.parametrize("model_type", ["qwen3_5_text", "qwen3_5_moe_text"])
def test_qwen3_5_reads_the_interval_and_the_rotary_default(model_type):
    """Without layer_types the pattern comes from full_attention_interval; without
    partial_rotary_factor the family's 0.25 applies (Qwen3_5TextConfig's default);
    the MoE router always renormalizes its top k."""
    transformers = pytest.importorskip("transformers")

    config = transformers.AutoConfig.for_model(model_type).to_dict()
    del config["layer_types"]
    config["full_attention_interval"] = 2
    config["rope_parameters"].pop("partial_rotary_factor", None)
    config.pop("partial_rotary_factor", None)
    config["rope_parameters"] |= {"mrope_section": [11, 11, 10], "mrope_interleaved": True}
    result = imported(config)
    arch = validate_card(result.card).architecture
    assert "M-RoPE sections [11, 11, 10]" in result.card["notes"]["architecture.position"]
    assert arch.attention.layer_pattern == ["gated-deltanet", "global"]
    assert arch.position.rotary_fraction == 0.25
    assert "architecture.position.rotary_fraction" in result.from_family
    if model_type == "qwen3_5_moe_text":
        assert arch.mlp.moe.normalize_top_k is True and arch.mlp.moe.shared_gate


@pytest.mark.parametrize("model_type", ["mamba2", "bamba"])
def test_a_mamba2_conv_activation_other_than_silu_is_refused(model_type):
    """transformers applies hidden_act after a Mamba-2 mixer's conv (Bamba's MLP shares
    the key); archdb's mixer applies SiLU, so another activation is not the same model."""
    transformers = pytest.importorskip("transformers")

    config = transformers.AutoConfig.for_model(model_type).to_dict()
    assert validate_card(imported(config).card)  # silu: imported
    config["hidden_act"] = "gelu"
    with pytest.raises(HFImportError, match=r"hidden_act 'gelu': archdb's Mamba-2 mixer applies"):
        imported(config)
    config["hidden_act"] = "silu"
    config["time_step_limit"] = [0.0, 0.1]
    with pytest.raises(HFImportError, match=r"time_step_limit '\[0\.0, 0\.1\]': archdb's"):
        imported(config)


@pytest.mark.parametrize(
    ("model_type", "layers"),
    [
        ("bamba", {"num_hidden_layers": 32, "attn_layer_indices": [9, 18, 27]}),  # Bamba-9B
        ("nemotron_h", {"num_hidden_layers": 52, "hybrid_override_pattern": "MEMEM*EMEMEM*"
                        "EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"}),  # Nemotron 3 Nano 30B-A3B
    ],
)  # fmt: skip
def test_an_irregular_layer_list_stays_explicit(model_type, layers):
    """A list whose shortest tiling prefix does not repeat (Bamba-9B: a "period" of 28 in
    32 layers) is the explicit per-layer list, as the catalogue cards record it."""
    transformers = pytest.importorskip("transformers")

    config = transformers.AutoConfig.for_model(model_type, **layers).to_dict()
    card = card_of(config)
    pattern = card.architecture.attention.layer_pattern
    assert len(pattern) == layers["num_hidden_layers"] == card.architecture.n_layers
    kinds = [k.value for k in card.architecture.layer_kinds()]
    if model_type == "bamba":
        assert [i for i, k in enumerate(kinds) if k == "global"] == [9, 18, 27]
    else:
        codes = {"mamba2": "M", "global": "*", "moe": "E"}
        assert "".join(codes[k] for k in kinds) == layers["hybrid_override_pattern"]


@pytest.mark.parametrize("model_type", ["mamba", "mamba2", "falcon_mamba"])
def test_a_mixer_only_config_records_no_context_length_and_no_qk_norm(model_type):
    """Mamba's configs have no max_position_embeddings (no position limit) and no
    attention: the card leaves context_length and attention.qk_norm null, as the catalogue's
    Mamba cards do, and says why; the builder's fills (2048, "none") are its own."""
    transformers = pytest.importorskip("transformers")

    config = transformers.AutoConfig.for_model(model_type).to_dict()
    assert "max_position_embeddings" not in config
    result = imported(config)
    arch = validate_card(result.card).architecture
    assert arch.context_length is None and arch.attention.qk_norm is None
    assert arch.attention.layer_pattern[0].value in ("mamba", "mamba2")
    notes = result.card["notes"]
    assert "no position limit" in notes["architecture.context_length"]
    assert "Attention-free" in notes["architecture.attention.qk_norm"]


def _gemma3n_config(**changes) -> dict:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Gemma3nTextConfig(num_hidden_layers=30).to_dict()
    return {**cfg, "model_type": "gemma3n_text", **changes}


def test_gemma3n_imports_altup_laurel_sparsity_and_one_width_per_layer():
    arch = card_of(_gemma3n_config()).architecture
    assert arch.altup.model_dump() == {"n_inputs": 4, "active_index": 0, "correct_scale": True}
    assert arch.laurel_rank == 64 and arch.attention.kv_shared_layers == 15
    assert arch.mlp.activation_sparsity.model_dump() == {"target": 0.95, "first_layers": 10}
    assert arch.mlp.d_ff == 16384  # the per-layer list of one width


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"intermediate_size": [16384] * 29 + [8192]}, "per-layer widths have no card field"),
        (
            {"activation_sparsity_pattern": [0.0] + [0.95] * 29},
            "one target on leading layers, then zeros",
        ),
        (
            {"activation_sparsity_pattern": [0.95, 0.9] + [0.0] * 28},
            "one target on leading layers, then zeros",
        ),
    ],
)
def test_gemma3n_layouts_the_card_cannot_hold_are_refused(changes, message):
    with pytest.raises(HFImportError, match=message):
        imported(_gemma3n_config(**changes))


# Tencent-Hunyuan/Hunyuan-A13B models/config.json (commit 2798f3c), its architecture keys:
# model_type "hunyuan", per-layer lists, dynamic scaling with an alpha, attention_head_dim
HUNYUAN_A13B = {
    "model_type": "hunyuan", "architectures": ["HunYuanMoEV1ForCausalLM"],
    "attention_bias": False, "attention_head_dim": 128, "hidden_act": "silu",
    "hidden_size": 4096, "intermediate_size": 3072, "max_position_embeddings": 32768,
    "mlp_bias": False, "moe_intermediate_size": [3072] * 32, "moe_layer_num_skipped": 0,
    "moe_topk": [8] * 32, "norm_topk_prob": True, "num_attention_heads": 32,
    "num_experts": 64, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_shared_expert": [1] * 32, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
    "rope_scaling": {"alpha": 1000.0, "beta_fast": 32, "beta_slow": 1, "factor": 1.0,
                     "mscale": 1.0, "mscale_all_dim": 1.0, "type": "dynamic"},
    "tie_word_embeddings": True, "use_cla": False, "use_mixed_mlp_moe": True, "use_mla": False,
    "use_qk_norm": True, "vocab_size": 128167,
}  # fmt: skip


# tencent/Hy3-preview-Base config.json, its architecture keys (hy_v3, with the released
# switches transformers' HYV3Config does not define: it always builds them)
HY3_PREVIEW = {
    "model_type": "hy_v3", "architectures": ["HYV3ForCausalLM"], "hidden_size": 4096,
    "num_hidden_layers": 80, "num_nextn_predict_layers": 1, "vocab_size": 120832,
    "max_position_embeddings": 262144, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 128, "qk_norm": True, "rms_norm_eps": 1e-05,
    "rope_parameters": {"rope_theta": 11158840.0, "rope_type": "default"},
    "hidden_act": "silu", "intermediate_size": 13312, "first_k_dense_replace": 1,
    "moe_intermediate_size": 1536, "expert_hidden_dim": 1536, "num_experts": 192,
    "num_experts_per_tok": 8, "num_shared_experts": 1, "moe_router_use_sigmoid": True,
    "moe_router_enable_expert_bias": True, "route_norm": True, "router_scaling_factor": 2.826,
    "tie_word_embeddings": False,
}  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"route_norm": False}, "route_norm False: transformers' HYV3 always builds it"),
        ({"qk_norm": False}, "qk_norm False"),
        ({"first_k_dense_replace": 2}, "first_k_dense_replace 2 disagrees with mlp_layer_types"),
        ({"mlp_layer_types": ["dense"] * 80}, "mlp_layer_types has no sparse layer"),
        ({"mlp_layer_types": ["sparse", "dense"] * 40}, "is not dense layers then sparse"),
    ],
)
def test_hy3_configs_transformers_builds_otherwise_are_refused(changes, message):
    with pytest.raises(HFImportError, match=message):
        imported({**HY3_PREVIEW, **changes})


# THUDM's ChatGLM configs (remote code, model_type chatglm), their architecture keys:
# GLM-4-9B-Chat (THUDM/glm-4-9b-chat, commit 731ca7f) and ChatGLM3-6B
GLM_4_9B_CHAT = {
    "model_type": "chatglm", "architectures": ["ChatGLMModel"], "hidden_size": 4096,
    "num_layers": 40, "num_attention_heads": 32, "multi_query_attention": True,
    "multi_query_group_num": 2, "kv_channels": 128, "ffn_hidden_size": 13696,
    "add_qkv_bias": True, "add_bias_linear": False, "rmsnorm": True,
    "layernorm_epsilon": 1.5625e-07, "post_layer_norm": True,
    "apply_residual_connection_post_layernorm": False, "rope_ratio": 500, "original_rope": True,
    "seq_length": 131072, "padded_vocab_size": 151552, "tie_word_embeddings": False,
}  # fmt: skip
CHATGLM3_6B = {
    **{k: v for k, v in GLM_4_9B_CHAT.items() if k != "rope_ratio"},
    "num_layers": 28, "layernorm_epsilon": 1e-05, "seq_length": 8192,
    "padded_vocab_size": 65024,
}  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rmsnorm": False}, "rmsnorm False: GlmForCausalLM builds only rmsnorm True"),
        ({"add_bias_linear": True}, "add_bias_linear True"),
        ({"apply_residual_connection_post_layernorm": True}, "post_layernorm True"),
        ({"post_layer_norm": False}, "post_layer_norm False"),
        ({"original_rope": False}, "original_rope False"),
        ({"rope_ratio": "big"}, "rope_ratio 'big' is not a ratio"),
        ({"rope_ratio": -1}, "rope_ratio -1 is not a ratio"),
    ],
)
def test_chatglm_switches_glm_does_not_build_are_refused(changes, message):
    with pytest.raises(HFImportError, match=re.escape(message)):
        imported({**GLM_4_9B_CHAT, **changes})


# internlm/internlm2_5-7b config.json (remote code, model_type internlm2): its keys
INTERNLM2_5_7B = {
    "model_type": "internlm2", "architectures": ["InternLM2ForCausalLM"], "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "hidden_act": "silu", "bias": False, "rms_norm_eps": 1e-05,
    "rope_theta": 1000000, "rope_scaling": {"type": "dynamic", "factor": 2.0},
    "max_position_embeddings": 32768, "tie_word_embeddings": False, "vocab_size": 92544,
}  # fmt: skip


def test_internlm2s_one_bias_switch_is_llamas_attention_bias():
    biased = validate_card(imported({**INTERNLM2_5_7B, "bias": True}).card).architecture
    assert (biased.bias.qkv, biased.bias.attn_out, biased.bias.mlp) == (True, True, False)


# openbmb/MiniCPM-2B-sft-bf16 config.json (remote code, model_type minicpm): its keys
MINICPM_2B = {
    "model_type": "minicpm", "architectures": ["MiniCPMForCausalLM"], "hidden_act": "silu",
    "hidden_size": 2304, "intermediate_size": 5760, "max_position_embeddings": 4096,
    "num_attention_heads": 36, "num_hidden_layers": 40, "num_key_value_heads": 36,
    "rms_norm_eps": 1e-05, "tie_word_embeddings": True, "vocab_size": 122753, "scale_emb": 12,
    "dim_model_base": 256, "scale_depth": 1.4,
}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "model_type", "card_id"),
    [
        (HY3_PREVIEW, "hy_v3", "hy3"),
        # remote-code configs, their keys renamed as the family's config class's
        (GLM_4_9B_CHAT, "glm", "glm-4-9b-chat"),
        (CHATGLM3_6B, "glm", "chatglm3-6b"),
        (INTERNLM2_5_7B, "llama", "internlm2.5-7b"),  # bias: attention_bias
        (MINICPM_2B, "granite", "minicpm-2b"),  # muP factors: Granite's multipliers
    ],
)
def test_released_configs_import_to_their_catalogue_cards(config, model_type, card_id):
    """import-hf reads each release into the catalogue's card, field for field (the card
    states the head's bias false where import leaves the unset switch null, and leaves
    null the residual factor import states as 1 where no family key sets it)."""
    result = imported(config)
    assert result.model_type == model_type
    arch = validate_card(result.card).architecture
    carded = shipped_catalogue().get(card_id).architecture
    left_out: dict = {"bias": {"lm_head"}}
    if carded.residual_multiplier is None:
        left_out["residual_multiplier"] = True
    assert arch.model_dump(exclude=left_out) == carded.model_dump(exclude=left_out)


def test_minicpm_moe_experts_are_refused():
    with pytest.raises(HFImportError, match="MiniCPM-MoE's experts are not read"):
        imported({**MINICPM_2B, "num_experts": 8, "num_experts_per_tok": 2})


@pytest.mark.parametrize("config", [GLM_4_9B_CHAT, MINICPM_2B, INTERNLM2_5_7B])
def test_any_remote_code_key_made_hostile_is_read_or_refused_never_a_crash(config):
    """Remote-code keys are renamed before the config shape sees the class's: each made
    hostile still ends in a card or an HFImportError naming a key."""
    from tests.test_hostile_hf_import import HOSTILE_VALUES

    crashes = []
    for key in config:
        for value in HOSTILE_VALUES:
            try:
                imported({**config, key: value})
            except HFImportError:
                continue
            except Exception as exc:  # the test lists every crash
                crashes.append(f"{key}={value!r}: {type(exc).__name__}: {exc}")
    assert not crashes, crashes[:5]


def test_hy_v3_is_written_only_with_a_shared_expert():
    """HYV3MLP sizes a shared MLP of zero experts as intermediate_size: a card without
    shared experts is not HYV3's model."""
    from archdb_hf.reference import NotRepresentable, convert
    from tests.conftest import make_arch, moe_block

    moe = moe_block(score_function="sigmoid", score_correction_bias=True, normalize_top_k=True)
    arch = make_arch(**{"mlp.moe": moe, **qk_norm("per-head")})
    with pytest.raises(NotRepresentable, match="n_shared at least 1"):
        convert(arch, "hy_v3")


def test_hunyuan_a13b_released_config_is_the_catalogue_card_and_transformers_count():
    """Read through its architectures (model_type hunyuan is custom), the per-layer lists
    as one value: the catalogue's card, with transformers' exact count."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from archdb.builder.model import build_model, count_parameters

    arch = card_of(HUNYUAN_A13B).architecture
    carded = shipped_catalogue().get("hunyuan-a13b").architecture
    assert arch.model_dump(exclude={"residual_multiplier"}) == carded.model_dump(
        exclude={"residual_multiplier"}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()
        config = transformers.AutoConfig.for_model(
            **{**HUNYUAN_A13B, "model_type": "hunyuan_v1_moe", "head_dim": 128}
        )
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
    assert model.model.rotary_emb.rope_type == "ntk_alpha"
    theirs = sum(p.numel() for p in model.parameters())
    assert count_parameters(build_model(arch, device="meta")) == theirs == 80_393_183_232


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"moe_topk": [8] * 31 + [4]}, "moe_topk differs between layers"),
        ({"moe_intermediate_size": 1536}, "moe_intermediate_size 1536"),
        ({"num_shared_expert": [2] * 32}, "num_shared_expert 2"),
        ({"use_cla": True}, "use_cla is true"),
        ({"use_qk_norm": False}, "use_qk_norm is false"),
        ({"attention_head_dim": 64}, "attention_head_dim 64 differs"),
        ({"moe_layer_num_skipped": 1}, "moe_layer_num_skipped is not 0"),
        ({"rope_scaling": {"type": "dynamic", "alpha": "big"}}, "alpha must be a positive"),
    ],
)
def test_hunyuan_configs_transformers_would_misbuild_are_refused(changes, message):
    with pytest.raises(HFImportError, match=message):
        imported({**HUNYUAN_A13B, **changes})


def test_per_layer_lists_are_refused_outside_hunyuan():
    cfg = {**config("qwen3-30b-a3b"), "moe_intermediate_size": [768] * 48}
    with pytest.raises(HFImportError, match="moe_intermediate_size is a per-layer list"):
        imported(cfg)


@pytest.mark.parametrize(
    ("model_type", "flag", "kind", "terms"),
    [
        ("cohere", {"use_qk_norm": True}, "per-head-untied", ("layernorm", "scale")),
        ("phi", {"qk_layernorm": True}, "per-head", ("layernorm", "scale-and-bias")),
        ("qwen3", {}, "per-head", ("rmsnorm", "scale")),
        ("olmo2", {}, "full", ("rmsnorm", "scale")),
    ],
)
def test_a_qk_norm_is_imported_with_its_own_type_and_affine(model_type, flag, kind, terms):
    """Each family builds q_norm / k_norm with its block norm class (CohereLayerNorm without
    bias, Phi's nn.LayerNorm with one, Qwen3RMSNorm): the card states that class, and the
    full-size count is transformers'."""
    sizes = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    sizes |= {"num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256}
    ours, theirs, card = hf_import_count(model_type, **sizes, **flag)
    att = card.architecture.attention
    assert (att.qk_norm.value, att.qk_norm_type.value, att.qk_norm_affine.value) == (kind, *terms)
    code = next(s for s in card.sources if s.kind.value == "code")
    assert {"architecture.attention.qk_norm_type", "architecture.attention.qk_norm_affine"} <= {
        *code.supports
    } or "architecture.attention" in code.supports
    assert ours == theirs


def test_no_qk_norm_imports_no_qk_norm_terms():
    card = card_of(config("llama-2-7b-hf"))
    assert card.architecture.attention.qk_norm.value == "none"
    assert card.architecture.attention.qk_norm_type is None


@pytest.mark.parametrize("key", ["qk_layernorm", "use_parallel_residual"])
def test_stablelm_layouts_without_a_weight_map_are_refused_by_name(key):
    sizes = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 128, "vocab_size": 128}  # fmt: skip
    assert (
        card_of({"model_type": "stablelm", **sizes}).architecture.position.rotary_fraction == 0.25
    )
    with pytest.raises(HFImportError, match=f"config.json: {key} True: StableLM's"):
        imported({"model_type": "stablelm", **sizes, key: True})


def test_olmoe_clip_qkv_is_refused_by_name():
    sizes = {"model_type": "olmoe", "hidden_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "intermediate_size": 32, "vocab_size": 128,
             "num_experts": 4, "num_experts_per_tok": 2}  # fmt: skip
    assert card_of(sizes).architecture.mlp.moe.normalize_top_k is False  # OlmoeConfig's
    with pytest.raises(HFImportError, match=r"clip_qkv 8\.0: OLMoE clamps q, k and v after"):
        imported({**sizes, "clip_qkv": 8.0})


def test_bloom_residuals_after_the_norm_are_refused_by_name():
    sizes = {"model_type": "bloom", "hidden_size": 48, "n_layer": 2, "n_head": 6,
             "vocab_size": 128}  # fmt: skip
    arch = card_of(sizes).architecture
    assert (arch.position.type.value, arch.embedding_norm, arch.mlp.d_ff) == ("alibi", True, 192)
    with pytest.raises(HFImportError, match="apply_residual_connection_post_layernorm True"):
        imported({**sizes, "apply_residual_connection_post_layernorm": True})


@pytest.mark.parametrize(
    "types",
    [
        [[["global", "local"], 10**12]],  # far more layers than num_layers: no list is built
        [[["global", "sparse"], 1]],
        [["global", 2]],
        "global",
    ],
)
def test_gpt_neo_attention_types_that_do_not_give_its_layers_are_refused(types):
    sizes = {"model_type": "gpt_neo", "hidden_size": 64, "num_layers": 2, "num_heads": 4,
             "vocab_size": 128, "attention_types": [[["global", "local"], 1]]}  # fmt: skip
    assert [k.value for k in card_of(sizes).architecture.attention.layer_pattern] == [
        "global",
        "local",
    ]
    with pytest.raises(HFImportError, match="attention_types is not"):
        imported({**sizes, "attention_types": types})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"expansion_ratio": 3}, "expansion_ratio 3: transformers' MPT builds a 4 x d_model"),
        ({"no_bias": False}, "no_bias False: transformers' MPT builds no biases"),
        ({"n_heads": 6}, "n_heads 6: MPT's ALiBi slopes"),
        ({"attn_config": {"qk_ln": True}}, "attn_config.qk_ln True"),
        ({"attn_config": {"attn_type": "multiquery_attention"}}, "multi-head attention only"),
        ({"attn_config": {"alibi": False}}, "ALiBi and no position table"),
    ],
)
def test_mpt_settings_its_port_does_not_build_are_refused_by_name(change, message):
    sizes = {"model_type": "mpt", "d_model": 48, "n_layers": 2, "n_heads": 4,
             "vocab_size": 128, "max_seq_len": 64}  # fmt: skip
    arch = card_of({**sizes, "attn_config": {"clip_qkv": 6}}).architecture
    assert (arch.mlp.d_ff, arch.attention.qkv_clip, arch.position.type.value) == (192, 6, "alibi")
    with pytest.raises(HFImportError, match=re.escape(message)):
        imported({**sizes, **change})


def test_dbrx_reads_its_sub_configs_and_refuses_what_its_card_cannot_hold():
    """attn_config and ffn_config become the card's heads, clamp, RoPE base and experts;
    an expert activation or a weight normalization the card cannot hold is refused."""
    cfg = {"model_type": "dbrx", "d_model": 64, "n_heads": 4, "n_layers": 2, "vocab_size": 128,
           "max_seq_len": 64, "attn_config": {"kv_n_heads": 2, "clip_qkv": 8, "rope_theta": 5e5},
           "ffn_config": {"ffn_hidden_size": 48, "moe_num_experts": 16,
                          "moe_top_k": 4}}  # fmt: skip
    arch = card_of(cfg).architecture
    assert (arch.attention.n_kv_heads, arch.attention.qkv_clip) == (2, 8)
    assert (arch.position.rope_theta, arch.mlp.d_ff) == (5e5, 48)
    assert (arch.mlp.moe.n_experts, arch.mlp.moe.n_active, arch.mlp.moe.normalize_top_k) == (
        16,
        4,
        True,
    )
    off = {**cfg, "ffn_config": {**cfg["ffn_config"], "moe_normalize_expert_weights": None}}
    assert card_of(off).architecture.mlp.moe.normalize_top_k is False
    for change, message in (
        ({"moe_normalize_expert_weights": 2.0}, "moe_normalize_expert_weights 2.0"),
        ({"ffn_act_fn": {"name": "gelu"}}, "ffn_config.ffn_act_fn 'gelu'"),
    ):
        with pytest.raises(HFImportError, match=re.escape(message)):
            imported({**cfg, "ffn_config": {**cfg["ffn_config"], **change}})


# --- encoder-decoders: T5 and the Switch Transformer -----------------------------------

# a T5 1.1 config as its releases state it (transformers 4), and a Switch Transformer's
T5_V11 = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"],
          "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 1024, "num_layers": 8,
          "num_decoder_layers": 8, "num_heads": 6, "relative_attention_num_buckets": 32,
          "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
          "is_encoder_decoder": True, "layer_norm_epsilon": 1e-6, "n_positions": 512,
          "dropout_rate": 0.1}  # fmt: skip
SWITCH = {"model_type": "switch_transformers", "vocab_size": 32128, "d_model": 768, "d_kv": 64,
          "d_ff": 3072, "num_layers": 12, "num_decoder_layers": 12, "num_heads": 12,
          "num_experts": 8, "num_sparse_encoder_layers": 6, "num_sparse_decoder_layers": 6,
          "expert_capacity": 64, "router_z_loss_coef": 0.001, "router_dtype": "float32",
          "dense_act_fn": "relu", "is_encoder_decoder": True}  # fmt: skip


def test_a_t5_config_imports_as_the_released_encoder_decoder():
    """T5 1.1: gated GELU in its tanh form, an untied head read unscaled, T5's fixed
    unscaled scores; transformers 5 ties every T5 head, so the card is not compared."""
    from archdb.fidelity import fidelity

    result = imported(T5_V11)
    card = validate_card(result.card)
    a = card.architecture
    assert (a.kind.value, a.n_encoder_layers, a.n_layers) == ("encoder-decoder", 8, 8)
    assert (a.mlp.activation.value, a.mlp.gelu_approximation.value) == ("geglu", "tanh")
    assert (a.tied_embeddings, a.logit_scale, a.attention.scale) == (False, 1.0, 1.0)
    assert (a.attention.head_dim, a.context_length, a.norm.eps) == (64, 512, 1e-6)
    assert result.unmapped == {}
    assert "ties every T5 model's output layer" in fidelity(card).why
    tied = validate_card(imported(T5_V11 | {"tie_word_embeddings": True}).card)
    assert tied.architecture.logit_scale == 512**-0.5  # T5 1.0's tied head, rescaled


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"feed_forward_proj": "gated-silu"}, "feed_forward_proj 'gated-silu'"),
        ({"feed_forward_proj": ["relu"]}, "feed_forward_proj a list"),
        ({"relative_attention_max_distance": 64}, "reaches T5's 128 positions"),
        ({"is_encoder_decoder": False}, "T5's encoder-decoder"),
        ({"scale_decoder_outputs": "no"}, "scale_decoder_outputs 'no' is not true or false"),
    ],
)
def test_a_t5_config_the_card_cannot_hold_is_refused(changes, message):
    with pytest.raises(HFImportError, match=re.escape(message)):
        imported(T5_V11 | changes)


def test_a_switch_config_imports_its_experts_every_second_layer():
    result = imported(SWITCH)
    card = validate_card(result.card)
    moe = card.architecture.mlp.moe
    assert (moe.n_experts, moe.n_active, moe.layer_period, moe.dense_d_ff) == (8, 1, 2, 3072)
    assert card.architecture.position.relative_buckets == 32  # the config class's default
    assert moe.normalize_top_k is False and card.architecture.mlp.activation.value == "relu"
    assert "expert_capacity 64" in card.notes["architecture.mlp.moe"]
    assert result.unmapped == {}
    every = validate_card(imported(SWITCH | {"num_sparse_encoder_layers": 12,
                                             "num_sparse_decoder_layers": 12}).card)  # fmt: skip
    assert every.architecture.mlp.moe.layer_period == 1


@pytest.mark.parametrize(
    ("changes", "message"),
    [  # transformers' default: experts in layers 1, 5 and 9, which mlp.moe cannot place
        ({"num_sparse_encoder_layers": 3, "num_sparse_decoder_layers": 3}, "3 of 12 layers"),
        ({"num_sparse_decoder_layers": 12}, "place their experts differently"),
        ({"num_sparse_encoder_layers": 0}, "num_sparse_encoder_layers 0 of 12"),
        ({"num_sparse_encoder_layers": True}, "num_sparse_encoder_layers True"),
        ({"router_bias": True}, "router has no bias"),
        ({"dense_act_fn": "gelu"}, "ReLU"),
    ],
)
def test_a_switch_config_the_card_cannot_hold_is_refused(changes, message):
    with pytest.raises(HFImportError, match=re.escape(message)):
        imported(SWITCH | changes)


def test_an_mt5_config_imports_with_its_head_never_rescaled():
    """MT5ForConditionalGeneration reads the decoder's output as it is, tied or not; the
    released mT5 models are untied, which transformers 5 cannot build."""
    from archdb.fidelity import fidelity

    released = T5_V11 | {"model_type": "mt5", "vocab_size": 250112}
    card = validate_card(imported(released).card)
    assert (card.architecture.tied_embeddings, card.architecture.logit_scale) == (False, 1.0)
    assert "ties every mT5 model's output layer" in fidelity(card).why
    tied = validate_card(imported(released | {"tie_word_embeddings": True}).card)
    assert tied.architecture.logit_scale == 1.0
    assert str(fidelity(tied)) == "logit-exact (mt5, relative error < 1e-05)"
