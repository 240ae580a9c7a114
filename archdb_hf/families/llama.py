"""Llama and the families that keep its layout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archdb.parts.mlp import CLAMPED_SWIGLU
from archdb.schema import (
    Activation,
    Architecture,
    LayerKind,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
    QKNorm,
)
from archdb_hf.draft import Draft, HFImportError, read_layer_period
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import (
    base_config,
    layer_kind_names,
    layer_types_of,
    need_activation,
    need_dense,
    need_llama_like,
    need_pattern,
    need_serial,
    need_softmax_attention,
    require,
    rope_config,
)
from archdb_hf.families.spec import FamilySpec
from archdb_hf.tensors import (
    LLAMA_TOP,
    PRE_NORMS,
    Names,
    Source,
    first_ff,
    k_rows,
    llama_layer,
    moe_names,
    q_rows,
    second_ff,
    v_rows,
)

if TYPE_CHECKING:
    from archdb_hf.families.spec import FamilySpec

# --- config -> card (import-hf) ----------------------------------------------------------


def read_mixtral(d: Draft) -> None:
    d.moe(
        n_experts=d.read("num_local_experts", required=True),
        n_active=d.read("num_experts_per_tok", required=True),
    )
    d.set("architecture.mlp.moe.normalize_top_k", True, "family")  # softmax of the top-k


def _read_gpt_oss(d: Draft) -> None:
    """gpt-oss: sinks, a biased router over biased experts, the clamped SwiGLU."""
    read_mixtral(d)
    d.set("architecture.mlp.moe.router_bias", True, "family")
    d.set("architecture.bias.mlp", True, "family")  # the experts' projections
    d.set("architecture.attention.sinks", True, "family")
    d.set("architecture.mlp.activation", "clamped-swiglu", "family")  # GptOssExperts
    limit = d.read("swiglu_limit", default=7.0)  # GptOssConfig's defaults
    d.set("architecture.mlp.swiglu_limit", float(limit), d.origin_of("swiglu_limit"))
    alpha = d.read("swiglu_alpha", default=1.702)
    d.set("architecture.mlp.swiglu_alpha", float(alpha), d.origin_of("swiglu_alpha"))


def _read_smollm3(d: Draft) -> None:
    """SmolLM3: Llama whose layers with no_rope_layers[i] == 0 skip RoPE (by default every
    no_rope_layer_interval-th); a sliding window only with use_sliding_window."""
    n = d.value("architecture.n_layers")
    rotates = d.read("no_rope_layers")
    if rotates is None:
        interval = d.read("no_rope_layer_interval", default=4)  # SmolLM3Config's default
        rotates = [int((i + 1) % interval != 0) for i in range(n)]
    else:
        d.read("no_rope_layer_interval")  # only builds no_rope_layers when it is absent
    if len(rotates) != n:
        raise HFImportError(
            f"no_rope_layers lists {len(rotates)} layers but num_hidden_layers is {n}: "
            "the config contradicts itself"
        )
    pattern = d.value("architecture.attention.layer_pattern")
    windowed = bool(d.read("use_sliding_window", default=False))  # SmolLM3Config's default
    kinds = []
    for i, rope in enumerate(rotates):
        local = windowed and pattern[i % len(pattern)] == "local"
        if local and not rope:
            raise HFImportError(
                f"layer {i} is a sliding-window layer without RoPE: no card layer kind holds it"
            )
        kinds.append("local" if local else "global" if rope else "global-nope")
    d.set(
        "architecture.attention.layer_pattern",
        read_layer_period(kinds),
        d.origin_of("no_rope_layers"),
    )
    if "local" not in kinds:
        window = d.value("architecture.attention.sliding_window")
        d.set("architecture.attention.sliding_window", None, "config")
        if window:
            d.unmapped["sliding_window"] = f"{window} (not applied: use_sliding_window false)"


def _read_seed_oss(d: Draft) -> None:
    """Seed-OSS: Llama whose attention_bias covers q, k and v only (default true); o_proj
    has its own attention_out_bias (default false)."""
    out = d.read("attention_out_bias", default=False)  # SeedOssConfig's default
    d.set("architecture.bias.attn_out", out, d.origin_of("attention_out_bias"))


# --- card -> config (the reference) ------------------------------------------------------


def llama(a: Architecture) -> dict:
    need_llama_like(a)
    need_dense(a)
    need_pattern(a, LayerKind.GLOBAL)
    require(a.bias.qkv == a.bias.attn_out, "Llama's attention_bias covers q, k, v and o alike")
    return base_config(a) | {"attention_bias": a.bias.qkv, "mlp_bias": a.bias.mlp}


def mistral(a: Architecture) -> dict:
    need_llama_like(a)
    need_dense(a)
    require(len(set(a.attention.layer_pattern)) == 1, "one kind of layer: local or global")
    need_pattern(a, LayerKind.LOCAL, LayerKind.GLOBAL)
    ref.need_bias(a, False, False, False)
    return base_config(a) | {"sliding_window": a.attention.sliding_window}


def phi3(a: Architecture) -> dict:
    """Phi-3 and Phi-4: Llama's layout with fused qkv and gate/up (the same counts)."""
    return mistral(a) | {"partial_rotary_factor": a.position.rotary_fraction or 1.0}


def mixtral(a: Architecture) -> dict:
    need_llama_like(a)
    ref.need_bias(a, False, False, False)
    moe = a.mlp.moe
    require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.layer_period == 1
        and moe.n_shared == 0,
        "every layer MoE, no shared experts",
    )
    return base_config(a) | {
        "num_local_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "sliding_window": a.attention.sliding_window,
    }


def gpt_oss(a: Architecture) -> dict:
    ref.need_norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    need_serial(a)
    need_activation(a, Activation.CLAMPED_SWIGLU)
    need_softmax_attention(a)
    ref.need_position(a, PositionType.ROPE)
    require(not a.position.rotary_fraction, "every head dim rotates")
    need_pattern(a, LayerKind.LOCAL, LayerKind.GLOBAL)
    require(bool(a.attention.sinks), "attention.sinks: gpt-oss always has them")
    require(a.bias.qkv == a.bias.attn_out and a.bias.mlp, "attention_bias; biased experts")
    moe = a.mlp.moe
    require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.layer_period == 1
        and moe.n_shared == 0
        and bool(moe.router_bias)
        and moe.normalize_top_k is not False,
        "every layer MoE with a biased router (softmax over the top k), no shared experts",
    )
    names = {LayerKind.LOCAL: "sliding_attention", LayerKind.GLOBAL: "full_attention"}
    rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
    return base_config(a) | {
        "attention_bias": a.bias.qkv,
        "num_local_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "sliding_window": a.attention.sliding_window,
        "layer_types": layer_kind_names(a, names),
        "rope_parameters": rope | ref.rope_scaling_config(a),
        "swiglu_limit": a.mlp.swiglu_limit or CLAMPED_SWIGLU.limit,
        "swiglu_alpha": a.mlp.swiglu_alpha or CLAMPED_SWIGLU.alpha,
        "rms_norm_eps": a.norm.eps or 1e-5,
    }


def apertus(a: Architecture) -> dict:
    """Apertus: Llama's layout with per-head QK norms and an up/xIELU/down MLP."""
    ref.need_norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    need_serial(a)
    need_activation(a, Activation.XIELU)
    need_softmax_attention(a, QKNorm.PER_HEAD)
    ref.need_position(a, PositionType.ROPE)
    require(not a.position.rotary_fraction, "every head dim rotates")
    need_dense(a)
    need_pattern(a, LayerKind.GLOBAL)
    require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias; no MLP bias")
    rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 12_000_000.0}
    return base_config(a) | {
        "attention_bias": a.bias.qkv,
        "hidden_act": "xielu",
        "rope_parameters": rope | ref.rope_scaling_config(a),
        "rms_norm_eps": a.norm.eps or 1e-5,
    }


def nemotron(a: Architecture) -> dict:
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    need_serial(a)
    need_activation(a, Activation.SQUARED_RELU)
    need_softmax_attention(a)
    need_dense(a)
    require(a.bias.qkv == a.bias.attn_out, "attention_bias covers q,k,v,o")
    return base_config(a) | {
        "attention_bias": a.bias.qkv,
        "mlp_bias": a.bias.mlp,
        "partial_rotary_factor": a.position.rotary_fraction or 1.0,
    }


def llama4_text(a: Architecture) -> dict:
    ref.need_norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    need_serial(a)
    need_activation(a, Activation.SWIGLU)
    require(a.attention.qk_norm in (QKNorm.NONE, QKNorm.L2), "Llama 4's QK norm is l2")
    ref.need_bias(a, False, False, False)
    moe = a.mlp.moe
    require(moe is not None and moe.first_dense_layers == 0, "MoE without leading dense layers")
    require(
        moe.n_shared == 1 and moe.shared_d_ff == a.mlp.d_ff,
        "one shared expert as wide as a routed one",
    )
    nope = [int(k is LayerKind.GLOBAL_NOPE) for k in a.layer_kinds()]
    return base_config(a) | {
        "intermediate_size_mlp": moe.dense_d_ff or 4 * a.d_model,
        "num_local_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "interleave_moe_layer_step": moe.layer_period,
        "use_qk_norm": a.attention.qk_norm is QKNorm.L2,
        "no_rope_layers": [1 - x for x in nope],
        "attention_chunk_size": a.attention.sliding_window,
    }


def smollm3(a: Architecture) -> dict:
    """Llama with NoPE layers (no_rope_layers[i] == 0) and an optional sliding window on
    the RoPE layers."""
    need_llama_like(a)
    need_dense(a)
    need_pattern(a, LayerKind.GLOBAL, LayerKind.GLOBAL_NOPE, LayerKind.LOCAL)
    require(a.bias.qkv == a.bias.attn_out, "SmolLM3's attention_bias covers q, k, v and o alike")
    kinds = a.layer_kinds()
    local = LayerKind.LOCAL in kinds
    return (
        base_config(a)
        | rope_config(a)
        | {
            "attention_bias": a.bias.qkv,
            "mlp_bias": a.bias.mlp,
            "no_rope_layers": [int(k is not LayerKind.GLOBAL_NOPE) for k in kinds],
            "use_sliding_window": local,
            "sliding_window": a.attention.sliding_window if local else None,
            "layer_types": layer_types_of(a),
        }
    )


def seed_oss(a: Architecture) -> dict:
    """Llama with separate bias flags: q/k/v (attention_bias) and o (attention_out_bias)."""
    need_llama_like(a)
    need_dense(a)
    need_pattern(a, LayerKind.GLOBAL)
    return (
        base_config(a)
        | rope_config(a)
        | {
            "attention_bias": a.bias.qkv,
            "attention_out_bias": a.bias.attn_out,
            "mlp_bias": a.bias.mlp,
        }
    )


def chameleon(a: Architecture) -> dict:
    # transformers' port learns one QK LayerNorm per head; the official checkpoint shares
    # one per model-parallel shard, which the port cannot express.
    need_llama_like(a, QKNorm.PER_HEAD_UNTIED)
    require(
        a.attention.qk_norm_type is NormType.LAYERNORM
        and a.attention.qk_norm_affine is NormAffine.SCALE_AND_BIAS,
        "Chameleon's QK norm is a LayerNorm with scale and bias",
    )
    need_dense(a)
    ref.need_bias(a, False, False, False)
    # the image tokenizer (vqmodel) is built with defaults and left out of the count
    return base_config(a) | {"vq_config": {}, "vocabulary_map": {"<image>": 0}}


# --- checkpoint names (loading weights) --------------------------------------------------


def llama_names(norms: dict[str, str] = PRE_NORMS) -> Names:
    return Names(LLAMA_TOP, llama_layer(norms), tied_head=("lm_head.weight",))


def _phi3_names() -> Names:
    layer = llama_layer(PRE_NORMS)
    layer |= {
        f"attn.sublayer.{p}.weight": Source("self_attn.qkv_proj.weight", cut=cut)
        for p, cut in (("q", q_rows), ("k", k_rows), ("v", v_rows))
    }
    layer["mlp.sublayer.gate.weight"] = Source("mlp.gate_up_proj.weight", cut=first_ff)
    layer["mlp.sublayer.up.weight"] = Source("mlp.gate_up_proj.weight", cut=second_ff)
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def mixtral_names() -> Names:
    layer = llama_layer(PRE_NORMS)
    layer |= moe_names("block_sparse_moe.gate", "block_sparse_moe.experts", "w1", "w3", "w2")
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _gpt_oss_names() -> Names:
    """Sinks per layer; a biased router; experts fused as (experts, in, out) tensors with
    gate and up interleaved column by column (gate_up[..., ::2], gate_up[..., 1::2])."""
    layer = llama_layer(PRE_NORMS)
    layer["attn.sublayer.kernel.sinks"] = Source("self_attn.sinks")
    experts = "mlp.experts."
    layer |= {
        "mlp.sublayer.router.proj.weight": Source("mlp.router.weight"),
        "mlp.sublayer.router.proj.bias": Source("mlp.router.bias"),
        "mlp.sublayer.experts.gate": Source(experts + "gate_up_proj", interleaved=0),
        "mlp.sublayer.experts.up": Source(experts + "gate_up_proj", interleaved=1),
        "mlp.sublayer.experts.gate_bias": Source(experts + "gate_up_proj_bias", interleaved=0),
        "mlp.sublayer.experts.up_bias": Source(experts + "gate_up_proj_bias", interleaved=1),
        "mlp.sublayer.experts.down": Source(experts + "down_proj"),
        "mlp.sublayer.experts.down_bias": Source(experts + "down_proj_bias"),
    }
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _apertus_names() -> Names:
    """Llama's names with Apertus's norm names; the xIELU's learned scalars, and its beta
    and eps saved as buffers (constants of the function: checked, not loaded)."""
    from archdb.parts.mlp import XIELU_RULE

    names = llama_names(
        {"attn.before": "attention_layernorm", "mlp.before": "feedforward_layernorm"}
    )
    for name, _ in XIELU_RULE.initial:
        names.layer[f"mlp.sublayer.act.{name}"] = Source(f"mlp.act_fn.{name}")
    names.constants.update({"mlp.act_fn.beta": XIELU_RULE.beta, "mlp.act_fn.eps": XIELU_RULE.eps})
    return names


# --- the families ----------------------------------------------------------------------

LLAMA = FamilySpec(
    "llama",
    layer="LlamaDecoderLayer",
    config_class="LlamaConfig",
    model_class="LlamaForCausalLM",
    mlp_bias=None,
    write=llama,
    names=llama_names,
    logit_error=0.0,
)
MISTRAL = LLAMA.derive(
    "mistral",
    layer="MistralDecoderLayer",
    config_class="MistralConfig",
    model_class="MistralForCausalLM",
    mlp_bias=False,
    sliding_everywhere=True,
    write=mistral,
    logit_error=3.2e-07,
)
MIXTRAL = MISTRAL.derive(
    "mixtral",
    layer="MixtralDecoderLayer",
    config_class="MixtralConfig",
    model_class="MixtralForCausalLM",
    eps_default=1e-05,
    read=read_mixtral,
    write=mixtral,
    names=mixtral_names,
    logit_error=3.3e-07,
)
PHI3 = LLAMA.derive(
    "phi3",
    layer="Phi3DecoderLayer",
    config_class="Phi3Config",
    model_class="Phi3ForCausalLM",
    mlp_bias=False,
    eps_default=1e-05,
    sliding_everywhere=True,
    write=phi3,
    names=_phi3_names,
    logit_error=3e-07,
)
# logit test: Llama with NoPE layers
SMOLLM3 = LLAMA.derive(
    "smollm3",
    layer="SmolLM3DecoderLayer",
    config_class="SmolLM3Config",
    model_class="SmolLM3ForCausalLM",
    tied_default=True,
    rope_theta_default=2000000.0,
    read=_read_smollm3,
    write=smollm3,
    logit_error=0.0,
)
# logit test: Llama with q/k/v and o bias flags of their own
SEED_OSS = LLAMA.derive(
    "seed_oss",
    layer="SeedOssDecoderLayer",
    config_class="SeedOssConfig",
    model_class="SeedOssForCausalLM",
    attention_bias_default=True,
    read=_read_seed_oss,
    write=seed_oss,
    logit_error=3.2e-07,
)
APERTUS = LLAMA.derive(
    "apertus",
    layer="ApertusDecoderLayer",
    config_class="ApertusConfig",
    model_class="ApertusForCausalLM",
    gated=False,
    qk_norm="per-head",
    mlp_bias=False,
    activation_default="xielu",
    rope_theta_default=12000000.0,
    eps_default=1e-05,
    write=apertus,
    names=_apertus_names,
    logit_error=5.5e-07,
)
NEMOTRON = LLAMA.derive(
    "nemotron",
    layer="NemotronDecoderLayer",
    config_class="NemotronConfig",
    model_class="NemotronForCausalLM",
    eps_key="norm_eps",
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    activation_default="relu2",
    rotary_fraction_default=0.5,
    write=nemotron,
    logit_error=0.0,
)
GPT_OSS = LLAMA.derive(
    "gpt_oss",
    layer="GptOssDecoderLayer",
    config_class="GptOssConfig",
    model_class="GptOssForCausalLM",
    mlp_bias=False,
    read=_read_gpt_oss,
    write=gpt_oss,
    extras=frozenset({"router_bias", "sinks"}),
    names=_gpt_oss_names,
    logit_error=3.5e-07,
)
LLAMA4_TEXT = FamilySpec(
    "llama4_text",
    module="llama4",
    layer="Llama4TextDecoderLayer",
    config_class="Llama4TextConfig",
    model_class="Llama4ForCausalLM",
    imports=False,
    write=llama4_text,
)
CHAMELEON = FamilySpec(
    "chameleon",
    layer="ChameleonDecoderLayer",
    config_class="ChameleonConfig",
    model_class="ChameleonForConditionalGeneration",
    imports=False,
    write=chameleon,
    decoder_only_of="vqmodel",
)
