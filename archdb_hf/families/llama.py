"""Llama and the families that keep its layout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from archdb.parts.mlp import CLAMPED_SWIGLU
from archdb.schema import Architecture, LayerKind, NormAffine, NormType, QKNorm
from archdb_hf.draft import (
    Draft,
    HFImportError,
    read_bias_flag,
    read_layer_period,
    read_only,
    shown_briefly,
)
from archdb_hf.families.card_to_config import (
    layer_kind_names,
    layer_types_of,
    rope_config,
    rope_scaling_config,
)
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import Key, dropped, gelu_key, one_bias_flag, require
from archdb_hf.tensors import (
    LLAMA_TOP,
    PRE_NORMS,
    Names,
    Source,
    first_ff,
    fused_experts,
    k_rows,
    llama_layer,
    llama_with,
    moe_names,
    q_rows,
    renamed,
    second_ff,
    v_rows,
)

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_smollm3(d: Draft) -> None:
    """SmolLM3: Llama whose layers with no_rope_layers[i] == 0 skip RoPE (by default every
    no_rope_layer_interval-th); a sliding window only with use_sliding_window."""
    rotates = _rotating_layers(d, d.value("architecture.n_layers"), empty_is_absent=False)
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


def _rotating_layers(d: Draft, n: int, empty_is_absent: bool) -> list[int]:
    """no_rope_layers (1: the layer rotates), else a NoPE layer every
    no_rope_layer_interval-th (SmolLM3Config's and Llama4TextConfig's derivation; Llama 4's
    takes an empty list as absent)."""
    rotates = d.read("no_rope_layers")
    if rotates is None or (empty_is_absent and rotates == []):
        interval = d.read("no_rope_layer_interval", default=4)  # ConfigShape: >= 1
        return [int((i + 1) % interval != 0) for i in range(n)]
    d.read("no_rope_layer_interval")  # only builds no_rope_layers when it is absent
    if not isinstance(rotates, list) or len(rotates) != n or not set(rotates) <= {0, 1}:
        raise HFImportError(
            f"no_rope_layers is not a 0/1 entry for each of the {n} layers (num_hidden_layers): "
            "the config contradicts itself"
        )
    return rotates


def _read_llama4_text(d: Draft) -> None:
    """Llama 4's text decoder (transformers' Llama4TextDecoderLayer; its sizes: the keys):
    the rotating layers chunked by attention_chunk_size (full without one), the others NoPE
    with attn_temperature_tuning's factor (floor_scale, attn_scale); use_qk_norm's
    weightless RMS norm only where q and k rotate; the MoE layers every
    interleave_moe_layer_step-th, top-k of the router's logits through a sigmoid, each
    expert's input times its score, beside one shared expert as wide; the other layers'
    MLP intermediate_size_mlp wide."""
    n = d.value("architecture.n_layers")
    rotates = _rotating_layers(d, n, empty_is_absent=True)
    # stated null: the rotating layers attend in full
    chunk = d.read_nullable("attention_chunk_size", 8192)
    rotating = "chunked" if chunk is not None else "global"
    kinds = [rotating if rope else "global-nope" for rope in rotates]
    names = {"chunked": "chunked_attention", "global": "full_attention"}
    types = d.read("layer_types")
    if types is not None and types != [names.get(k, "full_attention") for k in kinds]:
        raise HFImportError(
            "layer_types differs from what no_rope_layers and attention_chunk_size derive: a "
            "NoPE layer is full attention, a rotating one chunked where a chunk size is set"
        )
    origin = d.origin_of("no_rope_layers")
    d.set("architecture.attention.layer_pattern", read_layer_period(kinds), origin)
    d.set("architecture.attention.sliding_window", chunk if "chunked" in kinds else None, "config")
    nope = "global-nope" in kinds
    if d.read("use_qk_norm", default=True):
        d.set("architecture.attention.qk_norm", "l2", d.origin_of("use_qk_norm"))
        if nope:  # Llama4TextAttention builds qk_norm only where use_rope
            d.set("architecture.attention.qk_norm_rope_only", True, "family")
    else:
        d.set("architecture.attention.qk_norm", "none", d.origin_of("use_qk_norm"))
    floor, scale = d.read("floor_scale", default=8192), d.read("attn_scale", default=0.1)
    if d.read("attn_temperature_tuning", default=True) and nope:
        tuning = {"floor_scale": floor, "scale": scale}
        d.set("architecture.attention.nope_temperature", tuning, d.origin_of("floor_scale"))
    step = d.read("interleave_moe_layer_step", default=1)
    moe_layers = d.read("moe_layers")
    if moe_layers is not None and moe_layers != list(range(step - 1, n, step)):
        raise HFImportError(
            "moe_layers is not every interleave_moe_layer_step-th layer: the card's MoE "
            "layers follow a period"
        )
    d.set("architecture.mlp.moe.layer_period", step, d.origin_of("interleave_moe_layer_step"))
    d_ff = d.value("architecture.mlp.d_ff")
    d.set("architecture.mlp.moe.n_shared", 1, "family")
    d.set("architecture.mlp.moe.shared_d_ff", d_ff, "family")
    dense = d.read("intermediate_size_mlp", default=16384)
    d.set("architecture.mlp.moe.dense_d_ff", dense if step > 1 else None, "config")


# ChatGLM's remote-code config keys (ChatGLM2/3, GLM-4-9B) -> GlmConfig's, as transformers'
# conversion of THUDM's checkpoints to GlmForCausalLM spells them
_CHATGLM_KEYS = {
    "padded_vocab_size": "vocab_size",
    "num_layers": "num_hidden_layers",
    "kv_channels": "head_dim",
    "ffn_hidden_size": "intermediate_size",
    "seq_length": "max_position_embeddings",
    "layernorm_epsilon": "rms_norm_eps",
    "add_qkv_bias": "attention_bias",
}
# ChatGLM's switches whose other setting GlmForCausalLM does not build
_CHATGLM_BUILT = {
    "rmsnorm": True,
    "add_bias_linear": False,
    "apply_residual_connection_post_layernorm": False,
    "post_layer_norm": True,
    "original_rope": True,
}


def _glm_from_chatglm(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ChatGLM config (model_type chatglm) as GlmConfig's keys: its sizes renamed, the
    key/value groups of multi-query attention, RoPE at 10000 x rope_ratio on half of each
    head's dims; refused where ChatGLM's code would build what GlmForCausalLM does not
    (LayerNorms, biases beyond q/k/v, post-norm residuals, no final norm)."""
    if config.get("model_type") != "chatglm":
        return None
    for key, built in _CHATGLM_BUILT.items():
        if config.get(key, built) is not built:
            raise HFImportError(
                f"config.json: {key} {shown_briefly(config[key])}: GlmForCausalLM builds only "
                f"{key} {built}"
            )
    spelled = {_CHATGLM_KEYS.get(k, k): v for k, v in config.items() if k not in _CHATGLM_BUILT}
    grouped = spelled.pop("multi_query_attention", False)
    groups = spelled.pop("multi_query_group_num", None)
    if grouped is True and groups is not None:
        spelled["num_key_value_heads"] = groups
    ratio = spelled.pop("rope_ratio", 1)
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio < 1e6:
        raise HFImportError(f"config.json: rope_ratio {shown_briefly(ratio)} is not a ratio")
    rope = {"rope_type": "default", "rope_theta": 10000.0 * ratio, "partial_rotary_factor": 0.5}
    return spelled | {"model_type": "glm", "rope_parameters": rope}


def _llama_from_internlm2(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """InternLM2's remote-code config (model_type internlm2) as LlamaConfig's keys: its one
    bias switch (wqkv and wo) is attention_bias; its layers are Llama's with q, k and v
    fused into wqkv (modeling_internlm2.py)."""
    if config.get("model_type") != "internlm2":
        return None
    spelled = {("attention_bias" if k == "bias" else k): v for k, v in config.items()}
    return spelled | {"model_type": "llama", "mlp_bias": False}


def _read_starcoder2(d: Draft) -> None:
    read_bias_flag(d, "use_bias", True)


def _read_stablelm(d: Draft) -> None:
    # StableLM 2 12B's layout: neither has a tested weight map here
    read_only(d, "qk_layernorm", False, "StableLM's per-head LayerNorm list is not mapped")
    read_only(d, "use_parallel_residual", False, "StableLM's parallel blocks are not mapped")


# --- card -> config (the reference): what no key can write ------------------------------


def _gpt_oss(a: Architecture) -> dict:
    require(bool(a.attention.sinks), "attention.sinks: gpt-oss always has them")
    require(bool(a.mlp.moe.router_bias), "a biased router")
    rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
    return {"rope_parameters": rope | rope_scaling_config(a), "rms_norm_eps": a.norm.eps or 1e-5}


def _apertus(a: Architecture) -> dict:
    rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 12_000_000.0}
    return {"rope_parameters": rope | rope_scaling_config(a), "rms_norm_eps": a.norm.eps or 1e-5}


def _llama4_text(a: Architecture) -> dict:
    """Llama 4's layout beyond its keys: rotating layers all chunked or all full, one
    shared expert as wide as a routed one, no QK norm in the NoPE layers."""
    moe, att = a.mlp.moe, a.attention
    kinds = set(att.layer_pattern)
    require(not {LayerKind.CHUNKED, LayerKind.GLOBAL} <= kinds,
            "the rotating layers all chunked or all full (one attention_chunk_size)")  # fmt: skip
    require(att.qk_norm in (QKNorm.NONE, QKNorm.L2), "Llama 4's QK norm is l2")
    if att.qk_norm is QKNorm.L2 and LayerKind.GLOBAL_NOPE in kinds:
        require(att.qk_norm_rope_only is not False,
                "attention.qk_norm_rope_only: Llama 4's NoPE layers norm no q or k")  # fmt: skip
    require(
        moe.n_shared == 1 and moe.shared_d_ff == a.mlp.d_ff,
        "one shared expert as wide as a routed one",
    )
    return {}


def _nope_temperature(a: Architecture) -> bool:
    return a.attention.nope_temperature is not None


def _chunked(a: Architecture) -> bool:
    return LayerKind.CHUNKED in a.attention.layer_pattern


def _chameleon(a: Architecture) -> dict:
    # transformers' port learns one QK LayerNorm per head; the official checkpoint shares
    # one per model-parallel shard, which the port cannot express.
    require(
        a.attention.qk_norm_type is NormType.LAYERNORM
        and a.attention.qk_norm_affine is NormAffine.SCALE_AND_BIAS,
        "Chameleon's QK norm is a LayerNorm with scale and bias",
    )
    # the image tokenizer (vqmodel) is built with defaults and left out of the count
    return {"vq_config": {}, "vocabulary_map": {"<image>": 0}}


def _local(a: Architecture) -> bool:
    return LayerKind.LOCAL in a.layer_kinds()


# the sizes a Llama-style config states; import-hf's generic steps read them (and their
# other spellings), so these keys are written only
SIZES = (
    Key("vocab_size", "vocab_size", read=False),
    Key("hidden_size", "d_model", read=False),
    Key("intermediate_size", "mlp.d_ff", read=False),
    Key("num_hidden_layers", "n_layers", read=False),
    Key("num_attention_heads", "attention.n_heads", read=False),
    Key("num_key_value_heads", "attention.n_kv_heads", read=False),
    Key("head_dim", "attention.head_dim", out=lambda a: a.head_dim_effective, read=False),
    Key("max_position_embeddings", "context_length", read=False),
    Key("tie_word_embeddings", "tied_embeddings", read=False),
)
BIASES = (Key("attention_bias", "bias.qkv", read=False), Key("mlp_bias", "bias.mlp", read=False))
SLIDING_WINDOW = Key("sliding_window", "attention.sliding_window", read=False)
ROTARY_FRACTION = Key(
    "partial_rotary_factor",
    "position.rotary_fraction",
    out=lambda a: a.position.rotary_fraction or 1.0,
    read=False,
)
EXPERTS = (
    Key("num_local_experts", "mlp.moe.n_experts", required=True),
    Key("num_experts_per_tok", "mlp.moe.n_active", required=True),
)
ROPE = Key(
    "rope_parameters",
    out=lambda a: rope_config(a)["rope_parameters"] | rope_scaling_config(a),
    read=False,
)
LAYER_TYPES = Key("layer_types", out=layer_types_of, read=False)


# --- checkpoint names (loading weights) --------------------------------------------------


def llama_names(norms: dict[str, str] = PRE_NORMS) -> Names:
    return Names(LLAMA_TOP, llama_layer(norms), tied_head=("lm_head.weight",))


def _llama4_names() -> Names:
    """Llama's attention and norms; feed_forward holds a dense MLP, or the router, the
    fused experts and the shared expert."""
    layer = llama_layer(PRE_NORMS, mlp="feed_forward")
    layer |= fused_experts("feed_forward.router", "feed_forward.experts")
    layer |= {
        f"mlp.sublayer.shared.{p}.weight": Source(f"feed_forward.shared_expert.{p}_proj.weight")
        for p in ("gate", "up", "down")
    }
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _glm_names() -> Names:
    layer = llama_layer(PRE_NORMS)
    layer["mlp.sublayer.gate.weight"] = Source("mlp.gate_up_proj.weight", cut=first_ff)
    layer["mlp.sublayer.up.weight"] = Source("mlp.gate_up_proj.weight", cut=second_ff)
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _phi3_names() -> Names:
    layer = llama_layer(PRE_NORMS)
    layer |= {
        f"attn.sublayer.{p}.weight": Source("self_attn.qkv_proj.weight", cut=cut)
        for p, cut in (("q", q_rows), ("k", k_rows), ("v", v_rows))
    }
    layer["mlp.sublayer.gate.weight"] = Source("mlp.gate_up_proj.weight", cut=first_ff)
    layer["mlp.sublayer.up.weight"] = Source("mlp.gate_up_proj.weight", cut=second_ff)
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _starcoder2_names() -> Names:
    return llama_with(renamed({"mlp.sublayer.up": "mlp.c_fc", "mlp.sublayer.down": "mlp.c_proj"}))


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
    classes="Llama",
    aliases=("internlm2",),
    released_form=_llama_from_internlm2,
    mlp_bias=None,
    keys=SIZES + BIASES,
    names=llama_names,
    logit_error=0.0,
)
MISTRAL = LLAMA.derive(
    "mistral",
    classes="Mistral",
    fixed_bias=(False, False, False),
    mlp_bias=False,
    sliding_everywhere=True,
    kinds=("local", "global"),
    keys=(Key("attention_bias"), Key("mlp_bias"), SLIDING_WINDOW),
    logit_error=3.2e-07,
)
MIXTRAL = MISTRAL.derive(
    "mixtral",
    classes="Mixtral",
    eps_default=1e-05,
    keys=EXPERTS,
    fixed=(("mlp.moe.normalize_top_k", True),),  # a softmax of the top k
    names=mixtral_names,
    logit_error=3.3e-07,
)

# Mistral with LayerNorms, a plain GELU MLP (c_fc, c_proj) and one use_bias flag
STARCODER2 = MISTRAL.derive(
    "starcoder2",
    classes="Starcoder2",
    eps_key="norm_epsilon",
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    fixed_bias=None,
    mlp_bias=None,
    tied_default=True,
    activation_default="gelu_pytorch_tanh",
    keys=(
        *dropped(("attention_bias", "mlp_bias", "head_dim")),
        Key("use_bias", "bias.qkv", out=one_bias_flag, read=False),
        gelu_key("hidden_act", "gelu_pytorch_tanh"),
    ),
    read=_read_starcoder2,
    names=_starcoder2_names,
    logit_error=3e-07,
)


def _phi3_original_context(a: Architecture) -> int:
    """Phi3Config's original_max_position_embeddings, which transformers prefers to the
    one in the RoPE block: LongRoPE's switch point; otherwise the context (unused)."""
    scaling = a.position.rope_scaling
    original = scaling.original_context if scaling is not None else None
    return original or a.context_length


PHI3 = MISTRAL.derive(
    "phi3",
    classes="Phi3",
    eps_default=1e-05,
    keys=(
        ROTARY_FRACTION,
        Key("original_max_position_embeddings", out=_phi3_original_context, read=False),
    ),
    names=_phi3_names,
    logit_error=3e-07,
)
# Llama with LayerNorms, a quarter of each head rotating and q/k/v biases only
STABLELM = LLAMA.derive(
    "stablelm",
    classes="StableLm",
    eps_key="layer_norm_eps",
    norm="layernorm",
    norm_affine="scale-and-bias",
    fixed_bias=(None, False, False),
    rotary_fraction_default=0.25,
    keys=(
        *dropped(("attention_bias", "mlp_bias", "head_dim")),
        Key("use_qkv_bias", "bias.qkv", default=False),
        ROTARY_FRACTION,
    ),
    read=_read_stablelm,
    logit_error=0.0,
)
# logit test: Llama with NoPE layers
SMOLLM3 = LLAMA.derive(
    "smollm3",
    free=("position.rotary_fraction",),  # rope_parameters carry the rotating share
    classes="SmolLM3",
    tied_default=True,
    rope_theta_default=2000000.0,
    kinds=("global", "global-nope", "local"),
    keys=(
        ROPE,
        Key(
            "no_rope_layers",
            out=lambda a: [int(k is not LayerKind.GLOBAL_NOPE) for k in a.layer_kinds()],
            read=False,
        ),
        Key("use_sliding_window", out=_local, read=False),
        Key(
            "sliding_window",
            "attention.sliding_window",
            read=False,
            out=lambda a: a.attention.sliding_window if _local(a) else None,
        ),
        LAYER_TYPES,
    ),
    read=_read_smollm3,
    logit_error=0.0,
)
# GLM-4-9B (and ChatGLM's remote code, read as GlmConfig): Llama with q/k/v biases only,
# Phi-3's fused MLP, RoPE on interleaved pairs of half of each head's dims
GLM = LLAMA.derive(
    "glm",
    classes="Glm",
    aliases=("chatglm",),
    released_form=_glm_from_chatglm,
    rope_layout="interleaved",  # rotate_half over x[..., 0::2] and x[..., 1::2]
    rotary_fraction_default=0.5,
    eps_default=1.5625e-07,
    fixed_bias=(None, False, False),
    mlp_bias=False,
    keys=(Key("mlp_bias"), Key("attention_bias", "bias.qkv", default=True), ROTARY_FRACTION),
    names=_glm_names,
    logit_error=0.0,
)
# logit test: Llama with q/k/v and o bias flags of their own
SEED_OSS = LLAMA.derive(
    "seed_oss",
    classes="SeedOss",
    attention_bias_default=True,
    keys=(ROPE, Key("attention_out_bias", "bias.attn_out", default=False)),
    logit_error=3.2e-07,
)
APERTUS = LLAMA.derive(
    "apertus",
    classes="Apertus",
    gated=False,
    qk_norm="per-head",
    mlp_bias=False,
    activation_default="xielu",
    rope_theta_default=12000000.0,
    eps_default=1e-05,
    keys=(Key("mlp_bias"), Key("hidden_act", out=lambda a: "xielu", read=False)),
    write=_apertus,
    names=_apertus_names,
    logit_error=5.5e-07,
)
NEMOTRON = LLAMA.derive(
    "nemotron",
    classes="Nemotron",
    eps_key="norm_eps",
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    activation_default="relu2",
    rotary_fraction_default=0.5,
    keys=(ROTARY_FRACTION,),
    logit_error=0.0,
)
GPT_OSS = LLAMA.derive(
    "gpt_oss",
    classes="GptOss",
    mlp_bias=True,  # the experts' projections
    builds_activations=("clamped-swiglu",),  # GptOssExperts
    kinds=("local", "global"),
    keys=(
        Key("mlp_bias"),
        *EXPERTS,
        SLIDING_WINDOW,
        Key("layer_types", out=lambda a: layer_kind_names(a, _GPT_OSS_LAYERS), read=False),
        Key(
            "swiglu_limit",
            "mlp.swiglu_limit",
            default=CLAMPED_SWIGLU.limit,
            into=float,
            out=lambda a: a.mlp.swiglu_limit or CLAMPED_SWIGLU.limit,
        ),
        Key(
            "swiglu_alpha",
            "mlp.swiglu_alpha",
            default=CLAMPED_SWIGLU.alpha,
            into=float,
            out=lambda a: a.mlp.swiglu_alpha or CLAMPED_SWIGLU.alpha,
        ),
    ),
    fixed=(
        ("mlp.moe.normalize_top_k", True),
        ("mlp.moe.router_bias", True),
        ("attention.sinks", True),
        ("mlp.activation", "clamped-swiglu"),
        ("bias.mlp", True),
    ),
    write=_gpt_oss,
    extras=frozenset({"router_bias", "sinks"}),
    names=_gpt_oss_names,
    logit_error=3.5e-07,
)
_GPT_OSS_LAYERS = {LayerKind.LOCAL: "sliding_attention", LayerKind.GLOBAL: "full_attention"}
# Llama4TextConfig's keys beyond the sizes and experts; the read hook reads them
LLAMA4_KEYS = (
    Key("intermediate_size_mlp", "mlp.moe.dense_d_ff", read=False,
        out=lambda a: a.mlp.moe.dense_d_ff or 4 * a.d_model),
    Key("interleave_moe_layer_step", "mlp.moe.layer_period", read=False),
    Key("use_qk_norm", "attention.qk_norm", read=False,
        out=lambda a: a.attention.qk_norm is QKNorm.L2),
    Key("no_rope_layers", "attention.layer_pattern", read=False,
        out=lambda a: [int(k is not LayerKind.GLOBAL_NOPE) for k in a.layer_kinds()]),
    Key("attention_chunk_size", "attention.sliding_window", read=False,
        out=lambda a: a.attention.sliding_window if _chunked(a) else None),
    Key("attn_temperature_tuning", out=_nope_temperature, read=False),
    Key("floor_scale", "attention.nope_temperature.floor_scale", read=False,
        when=_nope_temperature),
    Key("attn_scale", "attention.nope_temperature.scale", read=False, when=_nope_temperature),
)  # fmt: skip
LLAMA4_TEXT = FamilySpec(
    "llama4_text",
    module="llama4",
    layer="Llama4TextDecoderLayer",
    config_class="Llama4TextConfig",
    model_class="Llama4ForCausalLM",
    fixed_bias=(False, False, False),
    kinds=("chunked", "global", "global-nope"),
    rope_layout="interleaved",  # apply_rotary_emb: complex pairs (2i, 2i + 1)
    keys=SIZES + EXPERTS + LLAMA4_KEYS,
    free=("mlp.moe.n_shared", "mlp.moe.shared_d_ff", "attention.qk_norm_rope_only"),
    fixed=(
        ("mlp.moe.score_function", "sigmoid"),  # Llama4Router: sigmoid of the top k logits
        ("mlp.moe.normalize_top_k", False),
        ("mlp.moe.weighted_input", True),  # Llama4TextMoe: routed_in = x * score
    ),
    extras=frozenset({"sigmoid_scores", "nope_temperature", "qk_norm_rope_only", "weighted_input"}),
    function_fields=(
        "architecture.attention.qk_norm_rope_only",
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.weighted_input",
    ),
    read=_read_llama4_text,
    write=_llama4_text,
    names=_llama4_names,
    logit_error=3.6e-07,
)
CHAMELEON = FamilySpec(
    "chameleon",
    free=("attention.qk_norm_type",),  # its hook: LayerNorm QK norms in RMSNorm blocks
    layer="ChameleonDecoderLayer",
    config_class="ChameleonConfig",
    model_class="ChameleonForConditionalGeneration",
    imports=False,
    qk_norm="per-head-untied",
    fixed_bias=(False, False, False),
    keys=SIZES,
    write=_chameleon,
    decoder_only_of="vqmodel",
)
