"""Xiaomi MiMo-V2-Flash: sliding and full attention with their own KV heads, sinks on the
sliding layers only, value heads narrower than the query/key heads, DeepSeek-V3's router."""

from __future__ import annotations

from archdb.schema import Architecture, LayerKind
from archdb_hf import draft as imp
from archdb_hf.draft import Draft, HFImportError, read_layer_period
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import (
    base_config,
    layer_kind_names,
    need_llama_like,
    need_pattern,
    require,
)
from archdb_hf.families.llama import LLAMA
from archdb_hf.keymap import whole
from archdb_hf.tensors import LLAMA_TOP, PRE_NORMS, Names, Source, llama_layer, moe_names

# MiMoV2FlashConfig's defaults (transformers 5.25), which its class also takes for the
# released config's own spellings of them
_FULL_THETA, _SLIDING_THETA, _ROTARY = 5_000_000.0, 10_000.0, 0.334

# --- config -> card (import-hf) ----------------------------------------------------------


def _layer_kinds(d: Draft, n: int) -> list[str]:
    """Each layer's kind: transformers' layer_types, the released hybrid_layer_pattern (1 a
    sliding layer, 0 a full one), else MiMoV2FlashConfig's default (full on layer 0 and
    every 6th)."""
    types = d.read("layer_types")
    if types is not None:
        names = {"sliding_attention": "local", "full_attention": "global"}
        kinds = [names.get(str(t)) for t in types]
    else:
        pattern = d.read("hybrid_layer_pattern")
        if pattern is not None:
            kinds = ["local" if p == 1 else "global" if p == 0 else None for p in pattern]
        else:
            kinds = ["global" if i == 0 or (i + 1) % 6 == 0 else "local" for i in range(n)]
    if len(kinds) != n or None in kinds:
        raise HFImportError(
            f"the layer pattern ({len(kinds)} entries) must give one sliding or full layer "
            f"for each of the {n} layers"
        )
    return kinds  # type: ignore[return-value]


def _dense_layers(d: Draft, n: int) -> int:
    """Leading dense layers: transformers' mlp_layer_types or the released moe_layer_freq
    (0 dense, 1 MoE); MoE must follow them on every later layer."""
    types = d.read("mlp_layer_types")
    if types is not None:
        moe = [t == "sparse" for t in types]
    else:
        freq = d.read("moe_layer_freq")
        moe = [bool(f) for f in freq] if freq is not None else [i > 0 for i in range(n)]
    dense = next((i for i, m in enumerate(moe) if m), len(moe))
    if len(moe) != n or not all(moe[dense:]):
        raise HFImportError("the MLP pattern must be leading dense layers, then MoE on the rest")
    return dense


def _read_mimo_v2_flash(d: Draft) -> None:
    n = d.value("architecture.n_layers")
    kinds = _layer_kinds(d, n)
    d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "config")
    # transformers widens the released sliding_window_size by one (its window counts the
    # query itself); a transformers-saved config holds the widened window
    size = d.read("sliding_window_size")
    window = size + 1 if size is not None else d.read("sliding_window", required=True)
    d.set("architecture.attention.sliding_window", window, "config")
    d.unmapped.pop("sliding_window", None)  # the generic step's "not applied" was premature
    d.read("layernorm_epsilon")  # the released spelling; MiMoV2FlashConfig reads rms_norm_eps
    full_kv = d.read("num_key_value_heads", required=True)
    local_kv = d.read("swa_num_key_value_heads", default=2 * full_kv)
    if local_kv != 2 * full_kv:
        raise HFImportError(
            "swa_num_key_value_heads must be twice num_key_value_heads: transformers' "
            "MiMoV2FlashAttention doubles the full layers' KV heads on sliding layers"
        )
    d.set("architecture.attention.n_kv_heads", local_kv, "config")
    d.set("architecture.attention.global_layers.n_kv_heads", full_kv, "config")
    head_dim, v_dim = d.read("head_dim", default=192), d.read("v_head_dim", default=128)
    for key, same in (("swa_head_dim", head_dim), ("swa_v_head_dim", v_dim)):
        if d.read(key, default=same) != same:
            raise HFImportError(f"{key} must equal the full layers' width: one head size")
    d.set("architecture.attention.head_dim", head_dim, "config")
    d.set("architecture.attention.v_head_dim", v_dim, "config")
    d.read("swa_num_attention_heads")
    d.set("architecture.bias.attn_out", False, "family")  # o_proj never has a bias
    # transformers puts sinks on the sliding layers and none on the full ones
    for key, expected in (
        ("add_swa_attention_sink_bias", True),
        ("add_full_attention_sink_bias", False),
    ):
        if d.read(key, default=expected) is not expected:
            raise HFImportError(f"{key} must be {str(expected).lower()} (transformers fixes it)")
    d.set("architecture.attention.sinks", True, "family")
    d.set("architecture.attention.global_layers.sinks", False, "family")
    scale = d.read("attention_value_scale", default=0.707)
    d.set(
        "architecture.attention.value_multiplier",
        float(scale or 1.0),
        d.origin_of("attention_value_scale"),
    )
    _rope(d)
    _moe_layers(d, n)


def _rope(d: Draft) -> None:
    """Per-type RoPE: transformers' rope_parameters, else its defaults (the released config's
    rope_theta, swa_rope_theta and partial_rotary_factor are those values and are not read
    by MiMoV2FlashConfig)."""
    full, local = imp.rope_parameters_of(d)
    for key in ("rope_theta", "swa_rope_theta", "partial_rotary_factor"):
        d.read(key)
    theta = float(full.get("rope_theta", _FULL_THETA))
    local_theta = float(local.get("rope_theta", _SLIDING_THETA))
    fraction = float(full.get("partial_rotary_factor", _ROTARY))
    if float(local.get("partial_rotary_factor", _ROTARY)) != fraction:
        raise HFImportError("both layer kinds must rotate the same share of a head")
    origin = "config" if full else "family"
    d.set("architecture.position.rope_theta", theta, origin)
    d.set("architecture.position.rope_theta_local", local_theta, origin)
    d.set("architecture.position.rotary_fraction", fraction, origin)


def _moe_layers(d: Draft, n: int) -> None:
    dense = _dense_layers(d, n)
    dense_d_ff = d.value("architecture.mlp.d_ff")
    expert = d.read("moe_intermediate_size", default=2048)
    d.set("architecture.mlp.d_ff", expert, d.origin_of("moe_intermediate_size"))
    if d.read("n_shared_experts"):
        raise HFImportError("n_shared_experts: transformers' MiMoV2FlashMoE has no shared expert")
    d.moe(
        n_experts=d.read("n_routed_experts", "num_local_experts", default=256),
        n_active=d.read("num_experts_per_tok", default=8),
        first_dense_layers=dense,
        dense_d_ff=dense_d_ff if dense else None,
    )
    for key in ("topk_method",):
        d.read(key)
    imp._sigmoid_router(d, 1, 1, default_scale=1.0)
    if d.read("routed_scaling_factor") is None:  # null: MiMoV2FlashConfig makes it 1
        d.set("architecture.mlp.moe.routed_scale", 1.0, "family")


# --- card -> config (the reference) ------------------------------------------------------


def mimo_v2_flash(a: Architecture) -> dict:
    need_llama_like(a)
    need_pattern(a, LayerKind.LOCAL, LayerKind.GLOBAL)
    ref.need_bias(a, a.bias.qkv, False, False)
    att, g, pos = a.attention, a.attention.global_layers, a.position
    require(
        g is not None
        and g.n_kv_heads is not None
        and att.n_kv_heads == 2 * g.n_kv_heads
        and g.head_dim is None
        and g.rotary_fraction is None
        and not g.values_from_keys,
        "global_layers.n_kv_heads half of n_kv_heads, nothing else of their own",
    )
    require(bool(att.sinks) and g.sinks is False, "sinks on the sliding layers only")
    moe = a.mlp.moe
    require(
        moe is not None and moe.n_shared == 0 and moe.layer_period == 1,
        "MoE after the dense first layers, no shared expert",
    )
    ref.need_sigmoid_router(moe)
    fraction = pos.rotary_fraction or 1.0
    theta = pos.rope_theta or _FULL_THETA
    rope = {
        "full_attention": {"rope_type": "default", "rope_theta": theta,
                           "partial_rotary_factor": fraction},
        "sliding_attention": {"rope_type": "default", "rope_theta": pos.rope_theta_local or theta,
                              "partial_rotary_factor": fraction},
    }  # fmt: skip
    kinds = {LayerKind.LOCAL: "sliding_attention", LayerKind.GLOBAL: "full_attention"}
    dense = moe.first_dense_layers
    return base_config(a) | {
        "num_key_value_heads": g.n_kv_heads,
        "v_head_dim": att.v_head_dim or a.head_dim_effective,
        "attention_bias": a.bias.qkv,
        "attention_value_scale": att.value_multiplier or 1.0,
        "sliding_window": att.sliding_window,
        "layer_types": layer_kind_names(a, kinds),
        "mlp_layer_types": ["dense"] * dense + ["sparse"] * (a.n_layers - dense),
        "rope_parameters": rope,
        "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
        "moe_intermediate_size": a.mlp.d_ff,
        "n_routed_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "n_group": moe.n_groups or 1,
        "topk_group": moe.top_k_groups or 1,
        "norm_topk_prob": moe.normalize_top_k is not False,
        "routed_scaling_factor": moe.routed_scale or 1.0,
    }


# --- checkpoint names (loading weights) --------------------------------------------------


def _mimo_v2_flash_names() -> Names:
    """Llama's layer names, V3-style router and experts, and the sliding layers' sinks
    under the released checkpoint's name (transformers saves its sinks as that too)."""
    layer = llama_layer(PRE_NORMS) | moe_names(
        "mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj"
    )
    layer["attn.sublayer.kernel.sinks"] = Source("self_attn.attention_sink_bias")
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


# --- the family --------------------------------------------------------------------------

MIMO_V2_FLASH = LLAMA.derive(
    "mimo_v2_flash",
    layer="MiMoV2FlashDecoderLayer",
    config_class="MiMoV2FlashConfig",
    model_class="MiMoV2FlashForCausalLM",
    eps_default=1e-05,
    mlp_bias=False,
    released_keys=(
        "hybrid_layer_pattern",
        "moe_layer_freq",
        "sliding_window_size",
        "swa_num_key_value_heads",
        "swa_num_attention_heads",
        "swa_head_dim",
        "swa_v_head_dim",
        "swa_rope_theta",
        "add_swa_attention_sink_bias",
        "add_full_attention_sink_bias",
        "partial_rotary_factor",
        "rope_theta",
    ),
    read=_read_mimo_v2_flash,
    write=whole(mimo_v2_flash),
    extras=frozenset(
        {
            "sinks",
            "global_layers",
            "correction_bias",
            "expert_groups",
            "routed_scale",
            "sigmoid_scores",
        }
    ),
    names=_mimo_v2_flash_names,
    logit_error=2.2e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.routed_scale",
        "architecture.attention.value_multiplier",
    ),
)
