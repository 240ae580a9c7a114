"""archdb's exact parameter counts equal Hugging Face transformers' for the same config.

Small configurations only (the catalogue's full sizes are in benchmarks/params_vs_hf.py):
one hand-made configuration per transformers family, each exercising the features that
family's code fixes, and the toy of every catalogue card whose family transformers has.
"""

from __future__ import annotations

import pytest

from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.catalogue import load_catalogue
from archdb.measure.analytic import param_count
from archdb.measure.hf_reference import (
    REFERENCES,
    NotRepresentable,
    hf_parameter_count,
    model_type_for,
)
from archdb.plan.layout import FUNCTION_DEFAULTS, fill_unknowns
from tests.conftest import (
    DELTANET_HYBRID,
    MAMBA2_ONLY,
    latent_dims,
    make_arch,
    mamba2_dims,
    moe_block,
)

pytest.importorskip("transformers")

MOE = moe_block()
MLA = latent_dims(q_lora_rank=24)
LAYERNORM = {"norm.type": "layernorm", "norm.affine": "scale-and-bias"}
GPT = {
    **LAYERNORM,
    "mlp.activation": "gelu",
    "mlp.d_ff": 256,
    "attention.n_kv_heads": 4,
    "position.type": "learned",
    "position.rope_theta": None,
    "tied_embeddings": True,
    "bias.qkv": True,
    "bias.attn_out": True,
    "bias.mlp": True,
}
NO_ROPE = {"position.rope_theta": None}

SMALL_CONFIGS: list[tuple[str, dict]] = [
    ("llama", {}),
    ("llama", {"bias.qkv": True, "bias.attn_out": True, "bias.mlp": True, "n_layers": 3}),
    ("mistral", {"attention.layer_pattern": ["local"], "attention.sliding_window": 16}),
    ("mistral", {"attention.head_dim": 32}),
    ("mixtral", {"mlp.moe": MOE}),
    ("phi3", {"attention.layer_pattern": ["local"], "attention.sliding_window": 16}),
    ("qwen2", {"bias.qkv": True, "tied_embeddings": True}),
    ("qwen3", {"attention.qk_norm": "per-head", "attention.head_dim": 32}),
    (
        "gemma",
        {
            "mlp.activation": "geglu",
            "tied_embeddings": True,
            "attention.head_dim": 32,
            "attention.n_kv_heads": 4,
        },
    ),
    (
        "gemma2",
        {
            "mlp.activation": "geglu",
            "tied_embeddings": True,
            "norm.position": "double",
            "attention.layer_pattern": ["local", "global"],
            "attention.sliding_window": 16,
            "attention.logit_softcap": 50.0,
            "final_logit_softcap": 30.0,
        },
    ),
    (
        "gemma3_text",
        {
            "mlp.activation": "geglu",
            "tied_embeddings": True,
            "n_layers": 6,
            "norm.position": "double",
            "attention.qk_norm": "per-head",
            "attention.layer_pattern": ["local"] * 5 + ["global"],
            "attention.sliding_window": 16,
            "position.rope_theta_local": 1e4,
        },
    ),
    ("olmo", {"norm.type": "layernorm", "norm.affine": "none"}),
    ("olmo2", {"norm.position": "post-branch", "attention.qk_norm": "full"}),
    (
        "cohere",
        {
            "norm.type": "layernorm",
            "parallel_layers": True,
            "norm.shared_in_parallel": True,
            "tied_embeddings": True,
            "attention.qk_norm": "per-head-untied",
        },
    ),
    (
        "cohere2",
        {
            "norm.type": "layernorm",
            "parallel_layers": True,
            "n_layers": 4,
            "norm.shared_in_parallel": True,
            "tied_embeddings": True,
            "attention.layer_pattern": ["local", "local", "local", "global-nope"],
            "attention.sliding_window": 16,
        },
    ),
    ("nemotron", {**LAYERNORM, "mlp.activation": "squared-relu", "position.rotary_fraction": 0.5}),
    (
        "qwen3_moe",
        {
            "attention.qk_norm": "per-head",
            "attention.head_dim": 32,
            "n_layers": 4,
            "mlp.moe": {**MOE, "layer_period": 2, "dense_d_ff": 256},
        },
    ),
    (
        "deepseek_v3",
        {
            "attention.variant": "latent",
            "attention.n_kv_heads": 4,
            "attention.latent": MLA,
            "n_layers": 3,
            "mlp.moe": {
                **MOE,
                "n_shared": 1,
                "shared_d_ff": 128,
                "first_dense_layers": 1,
                "dense_d_ff": 256,
            },
        },
    ),
    (
        "deepseek_v2",
        {
            "attention.variant": "latent",
            "attention.n_kv_heads": 4,
            "attention.latent": {**MLA, "q_lora_rank": None},
            "mlp.moe": {**MOE, "n_shared": 2, "shared_d_ff": 256},
        },
    ),
    (
        "llama4_text",
        {
            "n_layers": 4,
            "attention.qk_norm": "l2",
            "attention.sliding_window": 16,
            "attention.layer_pattern": ["chunked"] * 3 + ["global-nope"],
            "mlp.moe": {
                **MOE,
                "n_active": 1,
                "n_shared": 1,
                "shared_d_ff": 128,
                "layer_period": 2,
                "dense_d_ff": 256,
            },
        },
    ),
    ("gpt2", GPT),
    ("openai-gpt", {**GPT, "norm.position": "post", "norm.final": False}),
    (
        "gptj",
        {
            **LAYERNORM,
            "mlp.activation": "gelu",
            "attention.n_kv_heads": 4,
            "parallel_layers": True,
            "norm.shared_in_parallel": True,
            "bias.mlp": True,
            "bias.lm_head": True,
            "position.rotary_fraction": 0.25,
        },
    ),
    (
        "gpt_neox",
        {
            **LAYERNORM,
            "mlp.activation": "gelu",
            "attention.n_kv_heads": 4,
            "parallel_layers": True,
            "norm.shared_in_parallel": False,
            "bias.qkv": True,
            "bias.attn_out": True,
            "bias.mlp": True,
            "position.rotary_fraction": 0.25,
        },
    ),
    (
        "phi",
        {
            **LAYERNORM,
            "mlp.activation": "gelu",
            "attention.n_kv_heads": 4,
            "parallel_layers": True,
            "norm.shared_in_parallel": True,
            "bias.qkv": True,
            "bias.attn_out": True,
            "bias.mlp": True,
            "bias.lm_head": True,
            "position.rotary_fraction": 0.5,
        },
    ),
    ("opt", {**GPT, "mlp.activation": "relu", "position.learned_rows": 66}),
    (
        "opt",
        {
            **GPT,
            "mlp.activation": "relu",
            "position.learned_rows": 66,
            "norm.position": "post",
            "norm.final": False,
            "embedding_dim": 32,
        },
    ),
    (
        "falcon",
        {
            **LAYERNORM,
            "mlp.activation": "gelu",
            "attention.n_kv_heads": 1,
            "parallel_layers": True,
            "norm.shared_in_parallel": True,
            "tied_embeddings": True,
        },
    ),
    (
        "falcon",
        {
            **LAYERNORM,
            "mlp.activation": "gelu",
            "parallel_layers": True,
            "norm.shared_in_parallel": False,
            "tied_embeddings": True,
        },
    ),
    (
        "t5",
        {
            "kind": "encoder-decoder",
            "n_encoder_layers": 3,
            "mlp.activation": "relu",
            "attention.n_kv_heads": 4,
            "attention.head_dim": 32,
            "tied_embeddings": True,
            "position.type": "relative-bias",
            "position.relative_buckets": 16,
            **NO_ROPE,
        },
    ),
    (
        "t5",
        {
            "kind": "encoder-decoder",
            "n_encoder_layers": 2,
            "mlp.activation": "geglu",
            "attention.n_kv_heads": 4,
            "tied_embeddings": True,
            "position.type": "relative-bias",
            "position.relative_buckets": 32,
            **NO_ROPE,
        },
    ),
    (
        "chameleon",
        {
            "attention.n_kv_heads": 4,
            "attention.qk_norm": "per-head-untied",
            "attention.qk_norm_type": "layernorm",
            "attention.qk_norm_affine": "scale-and-bias",
        },
    ),
    ("mamba2", MAMBA2_ONLY),
    (
        "mamba2",
        {**MAMBA2_ONLY, "tied_embeddings": True, "mixers": {"mamba2": mamba2_dims(proj_bias=True)}},
    ),
    (
        "bamba",
        {
            "attention.layer_pattern": ["mamba2", "mamba2", "global"],
            "n_layers": 5,
            "position.rotary_fraction": 0.5,
            "mixers": {"mamba2": mamba2_dims(mlp=True)},
        },
    ),
    (
        "gpt_oss",
        {
            "attention.sinks": True,
            "attention.layer_pattern": ["local", "global"],
            "attention.sliding_window": 16,
            "bias.qkv": True,
            "bias.attn_out": True,
            "bias.mlp": True,
            "mlp.activation": "clamped-swiglu",
            "mlp.moe": {**MOE, "router_bias": True},
        },
    ),
    (
        "gpt_oss",
        {
            "attention.sinks": True,
            "bias.qkv": False,
            "bias.attn_out": False,
            "bias.mlp": True,
            "mlp.activation": "clamped-swiglu",
            "mlp.swiglu_limit": 3.0,
            "mlp.swiglu_alpha": 1.5,
            "position.rope_scaling": {
                "type": "yarn",
                "factor": 8.0,
                "original_context": 16,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "truncate": False,
            },
            "mlp.moe": {**MOE, "router_bias": True, "n_experts": 8},
            "tied_embeddings": True,
        },
    ),
    (
        "apertus",
        {
            "mlp.activation": "xielu",
            "attention.qk_norm": "per-head",
            "attention.head_dim": 24,
            "position.rope_scaling": {
                "type": "llama3",
                "factor": 8.0,
                "original_context": 16,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
            },
        },
    ),
    (
        "qwen3_next",
        {
            **DELTANET_HYBRID,
            "attention.qk_norm": "per-head",
            "attention.output_gate": "elementwise",
            "attention.head_dim": 32,
            "position.rotary_fraction": 0.25,
            "mlp.moe": {**MOE, "n_shared": 1, "shared_d_ff": 48, "shared_gate": True},
        },
    ),
    (
        "qwen3_5_text",
        {
            **DELTANET_HYBRID,
            "attention.qk_norm": "per-head",
            "attention.output_gate": "elementwise",
            "attention.head_dim": 32,
            "position.rotary_fraction": 0.25,
        },
    ),
    (
        "qwen3_5_moe_text",
        {
            **DELTANET_HYBRID,
            "attention.qk_norm": "per-head",
            "attention.output_gate": "elementwise",
            "attention.head_dim": 32,
            "position.rotary_fraction": 0.25,
            "mlp.moe": {
                **MOE,
                "n_shared": 1,
                "shared_d_ff": 48,
                "shared_gate": True,
                "normalize_top_k": True,
            },
        },
    ),
]


@pytest.mark.parametrize(
    ("model_type", "changes"),
    SMALL_CONFIGS,
    ids=[f"{t}-{i}" for i, (t, _) in enumerate(SMALL_CONFIGS)],
)
def test_small_configs_match_transformers(model_type, changes):
    arch = make_arch(**changes)
    ours = sum(p.numel() for p in build_model(arch, device="meta").parameters())
    assert ours == param_count(arch).total
    assert ours == hf_parameter_count(arch, model_type)


def test_every_reference_has_a_small_config():
    assert {t for t, _ in SMALL_CONFIGS} == set(REFERENCES)


def test_a_different_model_is_refused_not_compared():
    with pytest.raises(NotRepresentable, match="parallel_layers"):
        hf_parameter_count(
            make_arch(parallel_layers=True, **{"norm.shared_in_parallel": True}), "llama"
        )
    with pytest.raises(NotRepresentable, match=r"norm\.position"):
        hf_parameter_count(make_arch(**{"norm.position": "post"}), "llama")
    with pytest.raises(NotRepresentable, match="transformers' llama has no sinks, output_gate"):
        hf_parameter_count(
            make_arch(**{"attention.sinks": True, "attention.output_gate": "headwise"}), "llama"
        )
    with pytest.raises(NotRepresentable, match="has no gated_deltanet"):
        hf_parameter_count(make_arch(**DELTANET_HYBRID), "mistral")


def _catalogue_toys():
    out = []
    for card in load_catalogue():
        model_type = model_type_for(card.family, card.architecture)
        if model_type is None:
            continue
        try:
            toy = shrink(fill_unknowns(card.architecture)[0]).arch
        except ValueError:  # sizes unknown on the card: nothing to compare
            continue
        out.append(pytest.param(toy, model_type, id=card.id))
    return out


@pytest.mark.parametrize(("toy", "model_type"), _catalogue_toys())
def test_catalogue_toys_match_transformers(toy, model_type):
    try:
        theirs = hf_parameter_count(toy, model_type)
    except NotRepresentable as exc:
        pytest.skip(f"transformers' {model_type} cannot build this card: {exc}")
    assert param_count(toy).total == theirs


_NEW_FAMILIES = (
    "mamba2", "bamba", "gpt_oss", "qwen3_next", "apertus", "qwen3_5_text", "qwen3_5_moe_text",
)  # fmt: skip


@pytest.mark.parametrize(
    ("model_type", "changes"), [c for c in SMALL_CONFIGS if c[0] in _NEW_FAMILIES]
)
def test_new_families_round_trip_through_their_config(model_type, changes):
    """import(to_config(card)) is the card: the converter and import-hf agree, field by
    field (head_dim written out, context and filled choices aside)."""
    from archdb.hf_import import Identity, import_config
    from archdb.measure.hf_reference import REFERENCES
    from archdb.writer import validate_card

    arch, _ = fill_unknowns(make_arch(**changes))
    config = REFERENCES[model_type].convert(arch) | {"model_type": model_type}
    identity = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2025-01-01")
    url = "https://huggingface.co/org/model/blob/main/config.json"
    back, _ = fill_unknowns(
        validate_card(import_config(config, source_url=url, identity=identity).card).architecture
    )

    def comparable(a):
        data = a.model_dump(mode="json")
        data["context_length"] = None  # Mamba-2 configs have none; the builder fills one
        data["attention"]["head_dim"] = a.head_dim_effective if a.has_attention() else None
        # fields that change outputs, not structure, are the logit tests' (test_fidelity.py)
        for path in FUNCTION_DEFAULTS:
            *parents, leaf = path.split(".")
            node = data
            for name in parents:
                node = node.get(name) or {}
            if leaf in node:
                node[leaf] = None
        return data

    assert comparable(back) == comparable(arch)
