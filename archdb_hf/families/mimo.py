"""Xiaomi MiMo-V2-Flash: sliding and full attention with their own KV heads, sinks on the
sliding layers only, value heads narrower than the query/key heads, DeepSeek-V3's router."""

from __future__ import annotations

from archdb.schema import Architecture
from archdb_hf.draft import (
    Draft,
    HFImportError,
    read_layer_period,
    rope_parameters_of,
    sigmoid_router,
)
from archdb_hf.families.card_to_config import need_sigmoid_router
from archdb_hf.families.deepseek import SIGMOID_SCORES, V3_EXTRAS, v3_router
from archdb_hf.families.llama import LAYER_TYPES, LLAMA, SLIDING_WINDOW
from archdb_hf.keymap import DENSE_D_FF, Key, key_or, require
from archdb_hf.tensors import Names, Source, llama_with, moe_names

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
    # transformers puts sinks on the sliding layers and none on the full ones
    for key, expected in (
        ("add_swa_attention_sink_bias", True),
        ("add_full_attention_sink_bias", False),
    ):
        if d.read(key, default=expected) is not expected:
            raise HFImportError(f"{key} must be {str(expected).lower()} (transformers fixes it)")
    d.set("architecture.attention.global_layers.sinks", False, "family")
    scale = d.read("attention_value_scale", default=0.707)
    origin = d.origin_of("attention_value_scale")
    d.set("architecture.attention.value_multiplier", float(scale or 1.0), origin)
    _rope(d)
    _moe_layers(d, n)


def _given(block: dict, key: str, default: float) -> float:
    """A RoPE block's value (typed by the config shape); absent or null, the default."""
    value = block.get(key)
    return default if value is None else value


def _rope(d: Draft) -> None:
    """Per-type RoPE: transformers' rope_parameters, else its defaults (the released config's
    rope_theta, swa_rope_theta and partial_rotary_factor are those values and are not read
    by MiMoV2FlashConfig)."""
    full, local = rope_parameters_of(d)
    for key in ("rope_theta", "swa_rope_theta", "partial_rotary_factor"):
        d.read(key)
    theta = float(_given(full, "rope_theta", _FULL_THETA))
    local_theta = float(_given(local, "rope_theta", _SLIDING_THETA))
    fraction = float(_given(full, "partial_rotary_factor", _ROTARY))
    if float(_given(local, "partial_rotary_factor", _ROTARY)) != fraction:
        raise HFImportError("both layer kinds must rotate the same share of a head")
    origin = "config" if full else "family"
    d.set("architecture.position.rope_theta", theta, origin)
    d.set("architecture.position.rope_theta_local", local_theta, origin)
    d.set("architecture.position.rotary_fraction", fraction, origin)


def _moe_layers(d: Draft, n: int) -> None:
    """Leading dense layers, then the experts (their sizes and router: the keys)."""
    dense = _dense_layers(d, n)
    d.set("architecture.mlp.moe.first_dense_layers", dense, "config")
    d.set("architecture.mlp.moe.dense_d_ff", d.read("intermediate_size") if dense else None,
          "config")  # fmt: skip
    if d.read("n_shared_experts"):
        raise HFImportError("n_shared_experts: transformers' MiMoV2FlashMoE has no shared expert")
    sigmoid_router(d)


# --- card -> config (the reference) ------------------------------------------------------


def _mimo_v2_flash(a: Architecture) -> dict:
    require(a.mlp.moe is not None, "mlp.moe: MiMo-V2-Flash's layers after the dense ones are MoE")
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
    need_sigmoid_router(a.mlp.moe)
    fraction = pos.rotary_fraction or 1.0
    theta = pos.rope_theta or _FULL_THETA
    thetas = {"full_attention": theta, "sliding_attention": pos.rope_theta_local or theta}
    rope = {
        kind: {"rope_type": "default", "rope_theta": t, "partial_rotary_factor": fraction}
        for kind, t in thetas.items()
    }
    dense = a.mlp.moe.first_dense_layers
    return {
        "num_key_value_heads": g.n_kv_heads,
        "mlp_layer_types": ["dense"] * dense + ["sparse"] * (a.n_layers - dense),
        "rope_parameters": rope,
    }


# --- checkpoint names (loading weights) --------------------------------------------------


def _mimo_v2_flash_names() -> Names:
    """Llama's layer names, V3-style router and experts, and the sliding layers' sinks
    under the released checkpoint's name (transformers saves its sinks as that too)."""
    layer = moe_names("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    layer["attn.sublayer.kernel.sinks"] = Source("self_attn.attention_sink_bias")
    return llama_with(layer)


# --- the family --------------------------------------------------------------------------

MIMO_V2_FLASH = LLAMA.derive(
    "mimo_v2_flash",
    classes="MiMoV2Flash",
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
    kinds=("local", "global"),
    fixed=(("bias.attn_out", False), ("attention.sinks", True), *SIGMOID_SCORES),
    keys=(
        Key("mlp_bias"),
        key_or("v_head_dim", "attention.v_head_dim", lambda a: a.head_dim_effective, read=False),
        key_or("attention_value_scale", "attention.value_multiplier", 1.0, read=False),
        SLIDING_WINDOW,
        LAYER_TYPES,
        DENSE_D_FF,
        Key("moe_intermediate_size", "mlp.d_ff", default=2048),
        Key("n_routed_experts", "mlp.moe.n_experts", default=256, also=("num_local_experts",)),
        Key("num_experts_per_tok", "mlp.moe.n_active", default=8),
        *v3_router(1, 1, 1.0),
    ),
    free=("mlp.moe.first_dense_layers", "position.rotary_fraction"),
    read=_read_mimo_v2_flash,
    write=_mimo_v2_flash,
    extras=V3_EXTRAS | {"sinks", "global_layers"},
    names=_mimo_v2_flash_names,
    logit_error=2.2e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.routed_scale",
        "architecture.attention.value_multiplier",
    ),
)
