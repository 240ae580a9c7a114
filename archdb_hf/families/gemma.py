"""Gemma 1 to 4, Gemma 3n and RecurrentGemma."""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from archdb.schema import Architecture, LayerKind
from archdb_hf.draft import (
    GELU_TANH,
    Draft,
    HFImportError,
    positive,
    read_keys,
    read_layer_period,
    rope_parameters_of,
    shown_briefly,
)
from archdb_hf.families.card_to_config import rope_config, rope_scaling_config
from archdb_hf.families.llama import BIASES, LAYER_TYPES, LLAMA, SIZES, llama_names
from archdb_hf.families.spec import check_fixed
from archdb_hf.keymap import Key, dropped, has_moe, require, sliding_window_key, uses
from archdb_hf.tensors import (
    LLAMA_TOP,
    Names,
    Source,
    first_expert_ff,
    llama_layer,
    renamed,
    second_expert_ff,
)

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_gemma(d: Draft) -> None:
    # the embeddings are scaled by sqrt(hidden_size)
    d.set("architecture.embedding_multiplier", d.value("architecture.d_model") ** 0.5, "family")
    scalar = d.read("query_pre_attn_scalar", default=256)  # Gemma 2's and 3's default
    if scalar and d.family.module != "gemma":  # Gemma 2/3 scale by query_pre_attn_scalar**-0.5
        origin = d.origin_of("query_pre_attn_scalar")
        d.set("architecture.attention.scale", float(scalar) ** -0.5, origin)
    if d.family.module == "gemma2":  # Gemma2Config's softcaps where the config omits them
        for key, (path, cap) in _GEMMA2_SOFTCAPS.items():
            if key not in d.config:
                d.set(path, cap, "family")
    if d.family.module == "gemma3":
        _gemma3_rope_defaults(d)


_GEMMA2_SOFTCAPS = {
    "attn_logit_softcapping": ("architecture.attention.logit_softcap", 50.0),
    "final_logit_softcapping": ("architecture.final_logit_softcap", 30.0),
}


def _gemma3_rope_defaults(d: Draft) -> None:
    """Gemma3TextConfig's RoPE bases where the config gives none: 1e6 on the full layers,
    1e4 on the sliding ones (not the Llama default the generic reading falls back to)."""
    if d.origins.get("architecture.position.rope_theta") == "family":
        d.set("architecture.position.rope_theta", 1_000_000.0, "family")
    _, local = rope_parameters_of(d)
    if local.get("rope_theta") is None and d.config.get("rope_local_base_freq") is None:
        d.set("architecture.position.rope_theta_local", 10_000.0, "family")


_GRIFFIN_BLOCKS = {"recurrent": "rg-lru", "attention": "local"}


def _bfloat16(value: float) -> float:
    """value as a bfloat16 holds it: float32, then the top 16 bits, rounded to nearest even."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _read_recurrent_gemma(d: Draft) -> None:
    """Griffin: block_types tiled over the layers (the blocks' sizes: the keys);
    intermediate_size is both GeGLU branches; embeddings times sqrt(hidden_size) held in
    bfloat16."""
    n_layers = d.value("architecture.n_layers")
    types = d.read("block_types", "_block_types", default=["recurrent", "recurrent", "attention"])
    if not types:
        raise HFImportError("block_types is empty: no layer kind to tile")
    unknown = [t for t in types if t not in _GRIFFIN_BLOCKS]
    if unknown:
        raise HFImportError(
            f"block_types: {shown_briefly(unknown[0])} is not a Griffin block "
            f"({', '.join(_GRIFFIN_BLOCKS)})"
        )
    tiled = (types * (n_layers // len(types) + 1))[:n_layers]  # transformers' tiling
    kinds = read_layer_period([_GRIFFIN_BLOCKS[t] for t in tiled])
    d.set("architecture.attention.layer_pattern", kinds, d.origin_of("block_types"))
    d.set("architecture.attention.sliding_window", None, "config")
    read_keys(d, GRIFFIN_KEYS)  # the blocks' sizes, once the pattern is known
    configured = d.value("architecture.mlp.d_ff")
    if configured is None:
        raise HFImportError("config.json has no intermediate_size: cannot map it")
    d.set("architecture.mlp.d_ff", configured // 2, "config")
    d.note(
        "architecture.mlp.d_ff",
        f"One GeGLU branch: RecurrentGemmaMlp halves intermediate_size ({configured}).",
    )
    d_model = d.value("architecture.d_model")
    d.set("architecture.embedding_multiplier", _bfloat16(d_model**0.5), "family")
    d.note(
        "architecture.embedding_multiplier",
        f"sqrt(hidden_size) = {d_model**0.5:.6g} as a bfloat16 (RecurrentGemmaModel's "
        "normalizer buffer).",
    )
    if d.read("embeddings_scale_by_sqrt_dim", default=True) is False:
        d.note(
            "architecture.embedding_multiplier",
            "The config says embeddings_scale_by_sqrt_dim false; transformers scales anyway.",
        )
    d.used.update(
        k for k in ("w_init_variance_scale", "final_w_init_variance_scale") if k in d.config
    )
    if "rg-lru" not in kinds:
        return
    if str(d.read("hidden_activation", default="gelu_pytorch_tanh")).lower() not in GELU_TANH:
        raise HFImportError("hidden_activation: the RG-LRU block's gate branch is tanh GELU only")
    sizes = "architecture.mixers.rg_lru."
    d.set(sizes + "lru_width", d.read("lru_width", default=d_model), "config")
    d.set(sizes + "n_heads", d.value("architecture.attention.n_heads"), "config")
    d.note(
        sizes + "n_heads", "num_attention_heads: transformers uses it for the gates' blocks too."
    )


def _read_gemma4(d: Draft) -> None:
    """Global layers with their own head width (and, with attention_k_eq_v, their own KV
    heads and no value projection) and partial RoPE; 26B-A4B: experts beside a dense MLP."""
    d_model = d.value("architecture.d_model")
    d.set("architecture.embedding_multiplier", d_model**0.5, "family")
    _gemma4_pattern(d)
    _gemma4_global_layers(d)
    _gemma_on_device(d)
    bidirectional = d.read("use_bidirectional_attention")
    if bidirectional == "vision":
        d.note(
            "architecture.attention",
            "use_bidirectional_attention 'vision': image tokens attend to each other both "
            "ways; text tokens, which the card describes, stay causal.",
        )
    elif bidirectional is not None:
        d.unmapped["use_bidirectional_attention"] = bidirectional
    if d.read("enable_moe_block", default=False):
        dense = d.value("architecture.mlp.d_ff")
        d.set("architecture.mlp.d_ff", d.read("moe_intermediate_size", required=True), "config")
        d.moe(
            n_experts=d.read("num_experts", required=True),
            n_active=d.read("top_k_experts", required=True),
        )
        d.set("architecture.mlp.moe.dense_beside_d_ff", dense, "config")
        d.set("architecture.mlp.moe.router_scales", True, "family")
        d.set("architecture.mlp.moe.normalize_top_k", True, "family")  # top-k renormalized
    else:
        d.read("num_experts", "top_k_experts", "moe_intermediate_size", "expert_intermediate_size")


def _gemma_on_device(d: Draft, shared_default: int = 0) -> None:
    """Gemma 3n / Gemma 4 E2B and E4B: per-layer embeddings and cross-layer KV sharing;
    Gemma 4's use_double_wide_mlp doubles the reusing layers' MLP."""
    width = d.read("hidden_size_per_layer_input", default=256)  # both configs' default
    rows = d.read("vocab_size_per_layer_input", default=262_144)  # both configs' default
    if width:
        ple = "architecture.per_layer_embeddings."
        d.set(ple + "width", width, d.origin_of("hidden_size_per_layer_input"))
        d.set(ple + "vocab_size", rows, d.origin_of("vocab_size_per_layer_input"))
    shared = d.read("num_kv_shared_layers", default=shared_default)
    if shared:
        origin = d.origin_of("num_kv_shared_layers")
        d.set("architecture.attention.kv_shared_layers", shared, origin)
    d_ff = d.value("architecture.mlp.d_ff")
    if d.read("use_double_wide_mlp", default=False) and shared and isinstance(d_ff, int):
        d.set("architecture.mlp.kv_shared_d_ff", 2 * d_ff, "config")


def _read_gemma3n(d: Draft) -> None:
    """Per-layer embeddings, KV sharing and gaussian top-k on the first layers' MLP gates
    (AltUp's and LAuReL's sizes: the keys)."""
    d_model = d.value("architecture.d_model")
    d.set("architecture.embedding_multiplier", d_model**0.5, "family")
    if "final_logit_softcapping" not in d.config:  # Gemma3nTextConfig's default
        d.set("architecture.final_logit_softcap", 30.0, "family")
    _gemma3_rope_defaults(d)  # the full layers' base: Gemma3nTextConfig's default already
    _gemma_on_device(d, shared_default=15)  # Gemma3nTextConfig's default
    d.read("altup_coef_clip")  # clamps the coefficients in training mode only
    _activation_sparsity(d)


def _activation_sparsity(d: Draft) -> None:
    """activation_sparsity_pattern: one target for a run of leading layers, 0 after them
    (Gemma3nTextConfig's default: 0.95 on the first 10 layers when there are more)."""
    n = d.value("architecture.n_layers")
    pattern = d.read("activation_sparsity_pattern")
    if pattern is None:
        pattern = [0.95] * 10 + [0.0] * (n - 10) if n > 10 else [0.0] * n
    if not isinstance(pattern, list) or len(pattern) != n:
        raise HFImportError("config.json: activation_sparsity_pattern needs one value per layer")
    first = next((i for i, v in enumerate(pattern) if not v), len(pattern))
    targets = set(pattern[:first])
    if any(pattern[first:]) or len(targets) > 1:
        raise HFImportError(
            "config.json: activation_sparsity_pattern must be one target on leading layers, "
            "then zeros (the card's activation_sparsity)"
        )
    if first:
        origin = d.origin_of("activation_sparsity_pattern")
        d.set("architecture.mlp.activation_sparsity.target", float(pattern[0]), origin)
        d.set("architecture.mlp.activation_sparsity.first_layers", first, origin)


def _gemma4_pattern(d: Draft) -> None:
    """Without layer_types, five sliding layers to one full, the last layer forced full."""
    if d.read("layer_types"):
        return
    n = d.value("architecture.n_layers")
    kinds = ["global" if (i + 1) % 6 == 0 or i == n - 1 else "local" for i in range(n)]
    d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "family")
    d.set("architecture.attention.sliding_window", d.read("sliding_window", default=512), "config")


def _gemma4_global_layers(d: Draft) -> None:
    full, _ = rope_parameters_of(d)
    # _position took the full-attention RoPE block for the card's: it is the global layers'
    for path in list(d.values):
        if path.startswith(("architecture.position.rope_scaling", "architecture.position.rot")):
            d.clear(path)
    d.unmapped.pop("rope_scaling", None)
    d.notes.pop("architecture.position", None)
    d.notes.pop("architecture.position.rope_scaling", None)
    kind = full.get("rope_type", "default")
    if kind not in ("default", "proportional"):
        raise HFImportError(
            f"full-attention rope_type {shown_briefly(kind)} is not one the card holds"
        )
    overrides: dict[str, Any] = {}
    fraction = full.get("partial_rotary_factor")
    if kind == "proportional" and fraction is not None and fraction < 1:
        overrides["rotary_fraction"] = float(fraction)
    k_eq_v = d.read("attention_k_eq_v", default=False)
    if k_eq_v:
        overrides["values_from_keys"] = True
    per_layer = d.read("per_layer_config")
    if per_layer is not None:  # how transformers 5.24 saves global_head_dim and its KV heads
        global_head_dim, global_kv = _global_layer_sizes(d, per_layer)
    else:
        global_head_dim = d.read("global_head_dim", default=512)  # Gemma4TextConfig's default
        global_kv = d.read("num_global_key_value_heads")
        if global_kv is not None and not k_eq_v:
            d.unmapped["num_global_key_value_heads"] = f"{global_kv} (unused without k_eq_v)"
            global_kv = None
    for name, value in (("head_dim", global_head_dim), ("n_kv_heads", global_kv)):
        if value is not None and value != d.value(f"architecture.attention.{name}"):
            overrides[name] = value
    if "global" not in (d.value("architecture.attention.layer_pattern") or []):
        return
    for name, value in overrides.items():
        origin = "family" if name == "head_dim" and "global_head_dim" not in d.config else "config"
        d.set(f"architecture.attention.global_layers.{name}", value, origin)


def _global_layer_sizes(d: Draft, per_layer: Mapping[str, Any]) -> tuple[Any, Any]:
    """(head_dim, KV heads) that per_layer_config gives every full-attention layer; the
    card holds one set of global-layer sizes, so anything else is refused."""
    pattern = d.value("architecture.attention.layer_pattern") or []
    n = d.value("architecture.n_layers")
    full = {i for i in range(n) if pattern[i % len(pattern)] == "global"}
    sizes = {tuple(sorted(v.items())) for v in per_layer.values()}
    if not all(str(k).isdigit() and len(str(k)) <= 6 for k in per_layer):
        raise HFImportError("per_layer_config keys must be layer indices")
    if {int(k) for k in per_layer} != full or len(sizes) != 1:
        raise HFImportError(
            "per_layer_config gives sizes other than one set for every full-attention "
            "layer: per-layer widths have no card field"
        )
    own = dict(next(iter(sizes)))
    unknown = set(own) - {"head_dim", "num_key_value_heads"}
    if unknown:
        raise HFImportError(f"per_layer_config sets {', '.join(sorted(unknown))}: no card field")
    return own.get("head_dim"), own.get("num_key_value_heads")


# --- card -> config (the reference) ------------------------------------------------------


def _tied(a: Architecture) -> dict:
    require(bool(a.tied_embeddings), "Gemma ties its embeddings")
    return {}


def _query_pre_attn_scalar(a: Architecture) -> int:
    """The code scales queries by query_pre_attn_scalar ** -0.5, an int in the config class."""
    scale = a.attention.scale
    scalar = scale**-2 if scale is not None else a.head_dim_effective
    require(
        math.isclose(scalar, round(scalar), rel_tol=1e-9),
        "attention.scale must be 1/sqrt(n) for a whole n (query_pre_attn_scalar)",
    )
    return round(scalar)


# Gemma 2's keys, which import-hf's generic steps and Gemma's hook read
GEMMA2_KEYS = (
    sliding_window_key(4096),
    LAYER_TYPES,
    Key("query_pre_attn_scalar", "attention.scale", out=_query_pre_attn_scalar, read=False),
    Key("attn_logit_softcapping", "attention.logit_softcap", read=False),
    Key("final_logit_softcapping", "final_logit_softcap", read=False),
)


def _rope_by_layer_type(a: Architecture, full: dict) -> dict:
    """Gemma 3 on: a RoPE block per layer type, the full layers' (the card's base, then
    ``full``) and the sliding layers' at their own base."""
    theta = a.position.rope_theta or 10000.0
    sliding = {"rope_type": "default", "rope_theta": a.position.rope_theta_local or theta}
    full = {"rope_type": "default", "rope_theta": theta} | full
    return {"rope_parameters": {"full_attention": full, "sliding_attention": sliding}}


def _gemma3_text(a: Architecture) -> dict:
    require(
        a.position.rope_scaling is None
        or LayerKind.LOCAL not in a.layer_kinds()
        or a.position.rope_theta_local is not None,
        "Gemma 3 scales RoPE on full layers only: local layers need rope_theta_local",
    )
    return _tied(a) | _rope_by_layer_type(a, rope_scaling_config(a))


def _on_device(a: Architecture) -> dict:
    """Gemma 3n's and Gemma 4's per-layer embeddings (none: width 0) and KV sharing."""
    ple = a.per_layer_embeddings
    return {
        "hidden_size_per_layer_input": ple.width if ple is not None else 0,
        "vocab_size_per_layer_input": ple.vocab_size if ple is not None else a.vocab_size,
        "num_kv_shared_layers": a.attention.kv_shared_layers or 0,
    }


def _gemma4_text(a: Architecture) -> dict:
    """Global layers with their own sizes and values from keys; E2B/E4B: the reusing
    layers' MLP at twice the width (use_double_wide_mlp, the only other width
    transformers builds); 26B-A4B: experts beside a dense MLP."""
    _tied(a)
    require(a.layer_kinds()[-1] is LayerKind.GLOBAL, "Gemma 4's last layer is global")
    g = a.attention.global_layers
    k_eq_v = bool(g and g.values_from_keys)
    # transformers gives global layers their own KV heads only together with k_eq_v
    require(
        g is None or g.n_kv_heads is None or k_eq_v,
        "global_layers.n_kv_heads needs values_from_keys in transformers' Gemma 4",
    )
    wide = a.mlp.kv_shared_d_ff
    require(wide is None or wide == 2 * (a.mlp.d_ff or 0), "mlp.kv_shared_d_ff must be 2 x d_ff")
    moe = a.mlp.moe
    require(
        moe is None or (moe.dense_beside_d_ff is not None and bool(moe.router_scales)),
        "Gemma 4's experts sit beside a dense MLP, with its scaled router",
    )
    proportional = {}
    if g is not None and g.rotary_fraction is not None:
        proportional = {"rope_type": "proportional", "partial_rotary_factor": g.rotary_fraction}
    out = _rope_by_layer_type(a, proportional) | _on_device(a)
    out["global_head_dim"] = (g.head_dim if g is not None else None) or a.head_dim_effective
    out["attention_k_eq_v"] = k_eq_v
    out["use_double_wide_mlp"] = wide is not None
    if g is not None and g.n_kv_heads is not None:
        out["num_global_key_value_heads"] = g.n_kv_heads
    return out


def _gemma3n_text(a: Architecture) -> dict:
    """AltUp, LAuReL, per-layer embeddings, KV sharing, gaussian top-k; Gemma 4's
    attention without global-layer sizes."""
    _tied(a)
    require(a.attention.global_layers is None, "Gemma 3n's layers share their sizes")
    require(not a.layer_scalar, "Gemma 3n has no layer scalar")
    require(a.altup is not None and a.laurel_rank is not None, "Gemma 3n has AltUp and LAuReL")
    require(a.per_layer_embeddings is not None, "Gemma 3n has per-layer embeddings")
    require(a.mlp.kv_shared_d_ff is None, "Gemma 3n's KV-sharing layers keep d_ff")
    sparsity = a.mlp.activation_sparsity
    first, target = (sparsity.first_layers, sparsity.target) if sparsity else (0, 0.0)
    pattern = [target] * first + [0.0] * (a.n_layers - first)
    return _rope_by_layer_type(a, {}) | _on_device(a) | {"activation_sparsity_pattern": pattern}


# Gemma 3n's and Gemma 4's attention: unscaled scores, windows of 512 by default
ON_DEVICE_KEYS = (
    Key("query_pre_attn_scalar"),
    Key("attn_logit_softcapping"),
    sliding_window_key(512),
)
# Gemma 3n's and Gemma 4's RMSNorm applies w (not 1 + w), scores are unscaled
# (self.scaling = 1.0) and values normed (v_norm, without a scale)
ON_DEVICE_FIXED = (
    ("norm.unit_offset", False),
    ("attention.scale", 1.0),
    ("attention.value_norm", True),
)
ON_DEVICE_EXTRAS = frozenset({"kv_sharing", "per_layer_embeddings", "value_norm"})


def _recurrent_gemma(a: Architecture) -> dict:
    """One head count for the attention and the RG-LRU's gate blocks."""
    rg = a.mixers.rg_lru if a.mixers is not None else None
    heads = a.attention.n_heads if a.has_attention() else rg.n_heads
    require(rg is None or rg.n_heads == heads, "mixers.rg_lru.n_heads = attention.n_heads")
    require(bool(a.final_logit_softcap), "final_logit_softcap: RecurrentGemma always caps")
    if a.has_attention():  # the attention's choices, free in the spec for RG-LRU-only cards
        check_fixed(replace(RECURRENT_GEMMA, free=()), a)
    return {"num_attention_heads": heads}


def _griffin_rope(a: Architecture) -> dict:
    """The class's default share is 0.5: the card's, always written."""
    rope = rope_config(a)["rope_parameters"]
    return rope | {"partial_rotary_factor": a.position.rotary_fraction or 1.0}


def _block_types(a: Architecture) -> list[str]:
    """RecurrentGemma's block_types, tiled over the layers as the card's pattern is."""
    return [
        "recurrent" if k is LayerKind.RG_LRU else "attention" for k in a.attention.layer_pattern
    ]


_RG_LRU = uses(LayerKind.RG_LRU)
# RecurrentGemmaConfig's names and defaults: the blocks' sizes (read where the pattern has
# each kind), the rest read by import-hf's generic steps
GRIFFIN_KEYS = (
    Key("attention_window_size", "attention.sliding_window", default=2048, kind="local",
        when=Architecture.has_attention),
    Key("lru_width", "mixers.rg_lru.lru_width", read=False, when=_RG_LRU),
    Key("conv1d_width", "mixers.rg_lru.conv_kernel", default=4, kind="rg-lru", when=_RG_LRU),
)  # fmt: skip
RECURRENT_GEMMA_KEYS = (
    *(k for k in SIZES if k.name in ("vocab_size", "hidden_size", "num_hidden_layers",
                                     "tie_word_embeddings")),
    Key("intermediate_size", "mlp.d_ff", read=False, out=lambda a: 2 * a.mlp.d_ff),
    Key("block_types", read=False, out=_block_types),
    Key("logits_soft_cap", "final_logit_softcap", default=30.0,
        into=positive("logits_soft_cap")),
    Key("num_key_value_heads", "attention.n_kv_heads", read=False, when=Architecture.has_attention),
    Key("attention_bias", "bias.qkv", read=False, when=Architecture.has_attention),
    Key("rope_parameters", read=False, when=Architecture.has_attention, out=_griffin_rope),
    *GRIFFIN_KEYS,
)  # fmt: skip


# --- checkpoint names (loading weights) --------------------------------------------------

_SANDWICH = {
    "attn.before": "input_layernorm",
    "attn.branch": "post_attention_layernorm",
    "mlp.before": "pre_feedforward_layernorm",
    "mlp.branch": "post_feedforward_layernorm",
}
# Per-layer embeddings (Gemma 3n, Gemma 4 E2B/E4B): the token table, projection and norm
# of archdb's per_layer module, and each layer's gate (in the layer: per_layer.*)
_PER_LAYER_TOP = {
    "per_layer.table.weight": Source("model.embed_tokens_per_layer.weight"),
    "per_layer.proj.weight": Source("model.per_layer_model_projection.weight"),
    "per_layer.norm.weight": Source("model.per_layer_projection_norm.weight"),
}
_PER_LAYER_GATE = {
    "per_layer.gate.weight": Source("per_layer_input_gate.weight"),
    "per_layer.proj.weight": Source("per_layer_projection.weight"),
    "per_layer.norm.weight": Source("post_per_layer_input_norm.weight"),
}
# Gemma 4 26B-A4B's feed-forward (under mlp.sublayer.): the dense MLP, the router and the
# norms before and after each
_GEMMA4_MLP = {
    "dense_before.weight": "pre_feedforward_layernorm.weight",
    "dense_after.weight": "post_feedforward_layernorm_1.weight",
    "experts_before.weight": "pre_feedforward_layernorm_2.weight",
    "experts_after.weight": "post_feedforward_layernorm_2.weight",
    **{f"dense.{p}.weight": f"mlp.{p}_proj.weight" for p in ("gate", "up", "down")},
    **{f"moe.router.{p}": f"router.{p}" for p in ("scale", "per_expert_scale", "proj.weight")},
}


def _gemma4_names() -> Names:
    """Sandwich norms, the layer scalar; 26B-A4B: the dense MLP beside fused experts."""
    layer = llama_layer(_SANDWICH) | _PER_LAYER_GATE
    layer["layer_scalar"] = Source("layer_scalar")
    layer |= {f"mlp.sublayer.{ours}": Source(theirs) for ours, theirs in _GEMMA4_MLP.items()}
    # fused (experts, 2 * d_ff, d) gate and up rows, (experts, d, d_ff) down: archdb's
    # (experts, in, out) is their transpose
    experts = "mlp.sublayer.moe.experts."
    gate_up = "experts.gate_up_proj"
    layer[experts + "gate"] = Source(gate_up, cut=first_expert_ff, experts=True)
    layer[experts + "up"] = Source(gate_up, cut=second_expert_ff, experts=True)
    layer[experts + "down"] = Source("experts.down_proj", experts=True)
    return Names(LLAMA_TOP | _PER_LAYER_TOP, layer, tied_head=("lm_head.weight",))


def _gemma3n_names() -> Names:
    """Gemma 3n: sandwich norms, the per-layer embeddings, AltUp (each layer's router and
    coefficients, the stack's projections in and out) and LAuReL."""
    layer = llama_layer(_SANDWICH) | _PER_LAYER_GATE
    for name in ("correction_coefs", "prediction_coefs", "modality_router", "router_norm"):
        layer[f"altup.{name}.weight"] = Source(f"altup.{name}.weight")
    layer["altup.correct_output_scale"] = Source("altup.correct_output_scale")
    for ours, theirs in (("left", "linear_left"), ("right", "linear_right"),
                         ("norm", "post_laurel_norm")):  # fmt: skip
        layer[f"laurel.{ours}.weight"] = Source(f"laurel.{theirs}.weight")
    top = LLAMA_TOP | _PER_LAYER_TOP
    streams = {"projections": "altup_projections", "unembed": "altup_unembed_projections"}
    top |= {
        f"decoder.streams.{ours}.{i}.weight": Source(f"model.{theirs}.{i}.weight")
        for ours, theirs in streams.items()
        for i in range(_MAX_STREAMS)
    }
    return Names(top, layer, tied_head=("lm_head.weight",), **_GEMMA3N_RELEASE)


_MAX_STREAMS = 64  # AltUp projections named (one fewer than the streams; Gemma 3n: 3)
# Gemma 3n's released checkpoints (Gemma3nForConditionalGeneration): the decoder under
# model.language_model., the vision and audio towers and their embedders outside the card
_GEMMA3N_RELEASE = {
    "wrapped": {"model.language_model.": "model."},
    "outside": ("model.vision_tower.", "model.audio_tower.", "model.embed_vision.",
                "model.embed_audio."),
}  # fmt: skip


_WB = ("weight", "bias")


def _recurrent_gemma_names() -> Names:
    """Each layer's temporal_block is attention or Griffin's recurrent block."""
    block = "attn.sublayer."
    parts = {block + p: f"temporal_block.{p}_proj" for p in "qkvo"}
    griffin = ("linear_x", "linear_y", "conv_1d", "linear_out")
    parts |= {block + p: f"temporal_block.{p}" for p in griffin}
    parts |= {f"mlp.sublayer.{p}": f"mlp_block.{p}_proj" for p in ("gate", "up", "down")}
    layer = renamed(parts)
    for gate in ("input_gate", "recurrent_gate"):  # rg_lru's gates: weights and biases
        layer |= {f"{block}{gate}.{t}": Source(f"temporal_block.rg_lru.{gate}_{t}") for t in _WB}
    layer[block + "recurrent_param"] = Source("temporal_block.rg_lru.recurrent_param")
    layer["attn.before.weight"] = Source("temporal_pre_norm.weight")
    layer["mlp.before.weight"] = Source("channel_pre_norm.weight")
    top = LLAMA_TOP | {"decoder.final_norm.weight": Source("model.final_norm.weight")}
    return Names(top, layer, tied_head=("lm_head.weight",))


# --- the families ----------------------------------------------------------------------

GEMMA = LLAMA.derive(
    "gemma",
    classes="Gemma",
    mlp_bias=False,
    tied_default=True,
    activation_default="gelu_pytorch_tanh",
    fixed_bias=(False, False, False),
    keys=dropped(BIASES),
    fixed=(("norm.unit_offset", True),),  # GemmaRMSNorm applies (1 + w)
    read=_read_gemma,
    write=_tied,
    logit_error=2.4e-07,
)
GEMMA2 = GEMMA.derive(
    "gemma2",
    classes="Gemma2",
    norm_position="double",
    default_pattern=("local", "global"),
    kinds=("local", "global"),
    keys=GEMMA2_KEYS,
    write=_tied,
    names=lambda: llama_names(_SANDWICH),  # a norm before and after each sublayer
    logit_error=6.8e-07,
    function_fields=("architecture.attention.scale",),
)
GEMMA3_TEXT = GEMMA2.derive(
    "gemma3_text",
    module="gemma3",
    layer="Gemma3DecoderLayer",
    config_class="Gemma3TextConfig",
    model_class="Gemma3ForCausalLM",
    qk_norm="per-head",
    default_pattern=("local", "local", "local", "local", "local", "global"),
    aliases=("gemma3",),
    write=_gemma3_text,
    logit_error=9.7e-07,
)
# logit test: AltUp, LAuReL, gaussian top-k, per-layer embeddings, KV sharing (three seeds)
GEMMA3N_TEXT = GEMMA3_TEXT.derive(
    "gemma3n_text",
    module="gemma3n",
    layer="Gemma3nTextDecoderLayer",
    config_class="Gemma3nTextConfig",
    model_class="Gemma3nForCausalLM",
    rope_theta_default=1000000.0,
    default_pattern=("local", "local", "local", "local", "global"),
    fixed=ON_DEVICE_FIXED,
    read=_read_gemma3n,
    aliases=("gemma3n",),
    keys=(
        *ON_DEVICE_KEYS,
        Key("altup_num_inputs", "altup.n_inputs", default=4),
        Key("altup_active_idx", "altup.active_index", default=0),
        Key("altup_correct_scale", "altup.correct_scale", default=True),
        Key("laurel_rank", "laurel_rank", default=64),
    ),
    write=_gemma3n_text,
    extras=ON_DEVICE_EXTRAS | {"activation_sparsity", "altup", "laurel"},
    names=_gemma3n_names,
    logit_error=4e-06,
)
# logit test: the loosest family so far (still under the tolerance): 6.1e-6 with experts
# beside the dense MLP, 4.0e-6 dense (three seeds each); E2B/E4B's per-layer embeddings
# and KV sharing: 5.6e-6, 7.3e-6 with the double-wide MLP (three seeds each)
GEMMA4_TEXT = GEMMA3_TEXT.derive(
    "gemma4_text",
    module="gemma4",
    layer="Gemma4TextDecoderLayer",
    config_class="Gemma4TextConfig",
    model_class="Gemma4ForCausalLM",
    default_pattern=("global",),
    fixed=(*ON_DEVICE_FIXED, ("layer_scalar", True)),  # a scalar on each layer's output
    read=_read_gemma4,
    aliases=("gemma4",),
    keys=(
        *ON_DEVICE_KEYS,
        # 26B-A4B: experts beside a dense MLP (intermediate_size) in every layer
        Key("enable_moe_block", out=has_moe, read=False),
        Key(
            "intermediate_size",
            "mlp.d_ff",
            read=False,
            out=lambda a: a.mlp.moe.dense_beside_d_ff if has_moe(a) else a.mlp.d_ff,
        ),
        Key(
            "moe_intermediate_size",
            "mlp.moe.n_experts",
            when=has_moe,
            read=False,
            out=lambda a: a.mlp.d_ff,
        ),
        Key("num_experts", "mlp.moe.n_experts", when=has_moe, read=False),
        Key("top_k_experts", "mlp.moe.n_active", when=has_moe, read=False),
    ),
    write=_gemma4_text,
    extras=ON_DEVICE_EXTRAS | {"dense_beside", "global_layers", "layer_scalar", "router_scales"},
    names=_gemma4_names,
    logit_error=7.3e-06,
    function_fields=("architecture.attention.scale", "architecture.layer_scalar"),
)
# logit test: Griffin's RG-LRU beside local MQA attention, the bfloat16 sqrt(d)
# embedding scale (three seeds: 2.3e-7, 2.3e-7, 3.0e-7)
RECURRENT_GEMMA = GEMMA.derive(
    "recurrent_gemma",
    classes="RecurrentGemma",
    rotary_fraction_default=0.5,
    fixed_bias=None,  # attention_bias: q, k and v; o_proj and the MLP always biased
    mlp_bias=True,
    kinds=("rg-lru", "local"),
    keys=(*dropped(GEMMA.keys), *RECURRENT_GEMMA_KEYS),
    fixed=(*GEMMA.fixed, ("bias.attn_out", True), ("mixers.rg_lru.mlp", True)),
    # the attention's choices, checked where the card has attention layers
    free=("attention.variant", "attention.qk_norm", "position.type"),
    read=_read_recurrent_gemma,
    write=_recurrent_gemma,
    extras=frozenset({"rg_lru"}),
    names=_recurrent_gemma_names,
    logit_error=3.1e-07,
)
