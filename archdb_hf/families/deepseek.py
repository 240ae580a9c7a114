"""DeepSeek-V2, V3, V3.2, V4, GLM-4.5/5, Kimi Linear and LongCat-Flash."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from archdb.parts.mlp import CLAMPED_SWIGLU
from archdb.schema import Architecture, AttentionVariant, GroupScore, LayerKind, QKNorm, RopeLayout
from archdb_hf.draft import (
    Draft,
    HFImportError,
    read_groups,
    read_keys,
    read_layer_period,
    read_mtp,
    read_only,
    short_text,
    shown_briefly,
    sigmoid_router,
)
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import layer_kind_names, mtp_config, require, rope_config
from archdb_hf.families.llama import BIASES as LLAMA_BIASES
from archdb_hf.families.llama import LLAMA, ROPE, ROTARY_FRACTION, SIZES
from archdb_hf.keymap import DENSE_D_FF, Key, dropped, has_moe, key_or, normalizes_top_k, part_keys
from archdb_hf.tensors import (
    LLAMA_TOP,
    PRE_NORMS,
    QKV_CUTS,
    Names,
    Source,
    llama_layer,
    moe_names,
    qwen3_moe_names,
    renamed,
    top_names,
)

if TYPE_CHECKING:
    from torch import nn

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_deepseek(d: Draft, router: Callable[[Draft], None] = sigmoid_router) -> None:
    """MLA (its sizes: the keys): v_head_dim is the head width; DeepSeekMoE (its sizes: the
    keys): the shared experts one MLP of moe_intermediate_size x n_shared_experts, the
    dense layers intermediate_size wide, MoE every moe_layer_freq-th layer; routed by
    ``router`` (V3's, or V2's softmax one)."""
    _mla(d)
    if d.value("architecture.mlp.moe.n_experts") is None:
        return
    period = d.read("moe_layer_freq", default=1)
    if isinstance(period, list):
        raise HFImportError(
            "moe_layer_freq is a per-layer list: DeepSeek's MoE layers follow a period"
        )
    d.set("architecture.mlp.moe.layer_period", period, "config")
    shared_and_dense(d)
    read_mtp(d)
    if d.value("architecture.mlp.moe.n_experts"):
        router(d)


def _mla(d: Draft) -> None:
    d.set("architecture.attention.variant", "latent", "config")
    d.set("architecture.attention.head_dim", d.value(f"{LATENT}.v_head_dim"), "config")
    d.note(
        "architecture.attention.head_dim",
        "MLA: v_head_dim; each query/key head is qk_nope_head_dim + qk_rope_head_dim wide.",
    )


def shared_and_dense(d: Draft, note: bool = True) -> None:
    n_shared = d.value("architecture.mlp.moe.n_shared")
    shared = d.value("architecture.mlp.d_ff") * n_shared if n_shared else None
    d.set("architecture.mlp.moe.shared_d_ff", shared, "config")
    if note:
        d.note(
            "architecture.mlp.moe.shared_d_ff",
            "The shared experts form one MLP of "
            "moe_intermediate_size x n_shared_experts (the transformers implementation).",
        )
    if d.value("architecture.mlp.moe.first_dense_layers") or (
        d.value("architecture.mlp.moe.layer_period") > 1
    ):
        d.set("architecture.mlp.moe.dense_d_ff", d.read("intermediate_size"), "config")


def _softmax_router(d: Draft) -> None:
    """transformers' DeepseekV2TopkRouter (its softmax scores, never renormalized: fixed):
    greedy or group-limited (groups ranked by their best score), times
    routed_scaling_factor (a key); it does not read norm_topk_prob."""
    read_only(d, "scoring_func", "softmax", "transformers' deepseek_v2 scores by softmax")
    if d.read("norm_topk_prob", default=False):
        d.note(
            "architecture.mlp.moe.normalize_top_k",
            "config.json sets norm_topk_prob true, which transformers' deepseek_v2 does "
            "not read: the card follows transformers (no renormalization).",
        )
    method = d.read("topk_method", default="greedy")
    if method == "group_limited_greedy":
        read_groups(d, "max", d.read("n_group", required=True), d.read("topk_group", required=True))
    elif method != "greedy":
        raise HFImportError(
            f"topk_method {short_text(method)}: transformers' deepseek_v2 routes greedy or "
            "group_limited_greedy"
        )
    elif d.config.get("n_group") == 1 and d.config.get("topk_group") == 1:
        # greedy reads no groups; one group holding every expert is greedy too (V2-Lite's
        # config states it); other group counts stay reported as unread
        read_groups(d, "max", d.read("n_group"), d.read("topk_group"))


def _read_longcat_flash(d: Draft) -> None:
    """LongCat-Flash (transformers' LongcatFlashDecoderLayer; its sizes: the keys): num_layers
    layers of two MLA sublayers and two dense MLPs (ffn_hidden_size) with the experts
    beside them (expert_ffn_hidden_size); MLA always through the query bottleneck, its
    latents scaled; a softmax router over n_routed_experts + zero_expert_num candidates,
    a correction bias to choose, the chosen scores never renormalized, times
    routed_scaling_factor."""
    _mla(d)
    qk = d.value(f"{LATENT}.qk_nope_head_dim") + d.value(f"{LATENT}.qk_rope_head_dim")
    why = f"MLA's query heads are qk_nope_head_dim + qk_rope_head_dim ({qk}) wide"
    read_only(d, "qk_head_dim", qk, why)
    read_only(d, "attention_method", "MLA", "MLA is the only one archdb builds")
    # the released remote code scales each latent when its switch is on; transformers' code
    # always scales both
    q_scaled = d.read("mla_scale_q_lora", default=True)
    if d.read("mla_scale_kv_lora", default=True) != q_scaled:
        raise HFImportError(
            "config.json: mla_scale_q_lora and mla_scale_kv_lora differ; "
            "attention.latent.lora_scaled scales both latents or neither"
        )
    d.set(f"{LATENT}.lora_scaled", q_scaled, d.origin_of("mla_scale_q_lora"))
    read_only(d, "zero_expert_type", "identity", "archdb's zero experts return their input")
    if d.read("router_bias", default=False):
        d.set("architecture.mlp.moe.router_bias", True, "config")
    d.note(
        "architecture.mlp.moe.zero_experts",
        "transformers' LongcatFlashExperts before 5.25 also allocated gate_up_proj rows for "
        "the zero experts, which it never read; the card counts none.",
    )


def _read_glm4_moe(d: Draft) -> None:
    shared_and_dense(d)
    sigmoid_router(d)
    read_mtp(d)


def _read_dsa(d: Draft, interleaved: bool) -> None:
    """DeepSeek-V3 with DeepSeek Sparse Attention: the lightning indexer (its sizes: the
    keys) rotates as indexer_rope_interleave says, by default as its code does
    (``interleaved``); mlp_layer_types must be first_k_dense_replace dense layers, then MoE."""
    _read_deepseek(d)
    layout = (
        "interleaved" if d.read("indexer_rope_interleave", default=interleaved) else "half-split"
    )
    d.set(INDEXER_LAYOUT, layout, d.origin_of("indexer_rope_interleave"))
    types = d.read("mlp_layer_types")
    moe_first = d.value("architecture.mlp.moe.first_dense_layers")
    n = d.value("architecture.n_layers")
    if types is not None and moe_first is not None and n is not None:
        leading_layers(types, "dense", "sparse", n, moe_first)


def leading_layers(types: Any, lead: str, rest: str, n: int, count: int | None = None) -> int:
    """How many ``lead`` layers open mlp_layer_types (``count``: as many as the config says
    elsewhere), refused unless the other layers are ``rest``: mlp.moe holds one run of each."""
    if count is None:
        count = next((i for i, t in enumerate(types) if t != lead), len(types))
    if list(types) != [lead] * count + [rest] * (n - count):
        raise HFImportError(
            f"config.json's mlp_layer_types is not {lead} layers then {rest} layers: the card's "
            "mlp.moe cannot express it"
        )
    return count


def _indexer_modes(d: Draft, n_layers: int) -> list[str]:
    """GLM-MoE-DSA's per-layer indexer: "full" runs one, "shared" reuses the previous
    layer's top-k; derived as GlmMoeDsaConfig does from the pattern or freq/offset."""
    modes = d.per_layer("indexer_types", n_layers)
    if modes is not None:
        return list(modes)
    pattern = d.read("index_topk_pattern")
    if pattern is not None:
        if isinstance(pattern, str):
            return ["full" if c == "F" else "shared" for c in pattern]
        return list(pattern)
    freq = max(d.read("index_topk_freq", default=1), 1)
    offset = d.read("index_skip_topk_offset", default=2)
    return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n_layers)]


V4_KINDS = {  # transformers' layer_types, and the released configs' compress_ratios
    "sliding_attention": "local",
    "compressed_sparse_attention": "compressed-sparse",
    "heavily_compressed_attention": "heavily-compressed",
}
V4_RATIO_KINDS = {0: "local", 4: "compressed-sparse", 128: "heavily-compressed"}


def _read_deepseek_v4(d: Draft) -> None:
    """DeepSeek-V4 (transformers' deepseek_v4; its sizes: the keys), from its released
    config (compress_ratios, num_hash_layers, rope_scaling, qk_rope_head_dim) or
    transformers' own (layer_types, mlp_layer_types, compress_rates, rope_parameters
    main/compress)."""
    n = d.value("architecture.n_layers")
    if d.value("architecture.attention.n_kv_heads") != 1:
        raise HFImportError("deepseek_v4 has one shared key=value head: num_key_value_heads 1")
    pattern = _v4_pattern(d, n)
    d.set("architecture.attention.layer_pattern", read_layer_period(pattern), "config")
    d.unmapped.pop("sliding_window", None)  # every V4 layer reads its window
    _v4_compressed(d, d.value("architecture.attention.head_dim"))
    if "compressed-sparse" in pattern:
        read_keys(d, V4_INDEXER)  # once the pattern is known
        d.set(INDEXER_LAYOUT, "interleaved", "family")
    d.clear("architecture.position.rotary_fraction")  # the rotated dims: compressed.rope_dim
    d.clear("architecture.position.rope_scaling")
    _v4_rope_scaling(d)
    _read_v4_moe(d, n)
    if d.read("num_nextn_predict_layers"):
        d.note(
            "architecture.mtp",
            "config.json states multi-token-prediction layers (num_nextn_predict_layers); "
            "transformers' deepseek_v4 does not build them and their structure is not "
            "archdb's MTP convention: not recorded.",
        )
    d.used.update(k for k in ("topk_method", "expert_dtype", "attention_bias") if k in d.config)


def _v4_pattern(d: Draft, n: int) -> list[str]:
    """Every layer's kind, as DeepseekV4Config derives it: layer_types, else the released
    compress_ratios (one entry more, the MTP layer's), else two HCA layers then CSA/HCA."""
    types = d.read("layer_types")
    if types is not None:
        names, spelled = V4_KINDS, list(types)
    else:
        ratios = d.read("compress_ratios")
        if ratios is None:  # DeepseekV4Config's default schedule
            return ["heavily-compressed"] * min(n, 2) + [
                "compressed-sparse" if i % 2 else "heavily-compressed" for i in range(n - 2)
            ]
        names, spelled = V4_RATIO_KINDS, list(ratios)[:n]
    if len(spelled) != n or any(t not in names for t in spelled):
        raise HFImportError(
            f"config.json's layer schedule {shown_briefly(spelled)} is not one of "
            f"{', '.join(map(str, names))} per layer ({n} layers)"
        )
    return [names[t] for t in spelled]


def _v4_compressed(d: Draft, head_dim: int) -> None:
    rates = d.read("compress_rates", default={}) or {}
    path = "architecture.attention.compressed."
    rope = d.read("qk_rope_head_dim")
    if rope is None:
        rope = int(head_dim * d.read("partial_rotary_factor", default=0.125))
    d.set(path + "rope_dim", rope, "config")
    csa = d.read("compress_rate_csa") or rates.get("compressed_sparse_attention", 4)
    hca = d.read("compress_rate_hca") or rates.get("heavily_compressed_attention", 128)
    d.set(path + "sparse_ratio", csa, "config")
    d.set(path + "heavy_ratio", hca, "config")


def _v4_rope_scaling(d: Draft) -> None:
    """The compressed layers' YaRN: the released rope_scaling, or rope_parameters.compress;
    transformers' V4 leaves cos and sin unscaled (attention_factor 1)."""
    params = d.read("rope_parameters") or {}
    scaling = d.read("rope_scaling") or (
        params.get("compress") if isinstance(params, dict) else None
    )
    if not scaling or (scaling.get("rope_type") or scaling.get("type")) != "yarn":
        return
    path = "architecture.position.rope_scaling."
    d.set(path + "type", "yarn", "config")
    factor = scaling.get("factor")
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not factor > 0:
        raise HFImportError(f"config.json: the YaRN factor {shown_briefly(factor)} is not positive")
    d.set(path + "factor", float(factor), "config")
    for name, key in (("original_context", "original_max_position_embeddings"),
                      ("beta_fast", "beta_fast"), ("beta_slow", "beta_slow")):  # fmt: skip
        if scaling.get(key) is not None:
            value = scaling[key]
            d.set(path + name, value if name == "original_context" else float(value), "config")
    truncate = scaling.get("truncate")  # transformers' yarn rounds the band unless told
    d.set(path + "truncate", truncate is not False, "config" if truncate is not None else "family")


def _read_v4_moe(d: Draft, n: int) -> None:
    """One shared expert of the routed width (its sizes: the keys); sqrt-softplus scores
    with a correction bias, always renormalized, times routed_scaling_factor; hash
    routing in the first layers."""
    read_only(d, "scoring_func", "sqrtsoftplus", "V4 scores by sqrtsoftplus")
    read_only(d, "n_shared_experts", 1, "deepseek_v4 builds one shared expert")
    d.set("architecture.mlp.moe.shared_d_ff", d.value("architecture.mlp.d_ff"), "config")
    d.read("norm_topk_prob")  # the top-k weights are renormalized whatever it says
    types = d.read("mlp_layer_types")
    if types is None:
        hashed = d.read("num_hash_layers", default=3)
    else:
        hashed = leading_layers(types, "hash_moe", "moe", n)
    d.set("architecture.mlp.moe.hash_layers", min(hashed, n), "config")


def _read_glm_moe_dsa(d: Draft) -> None:
    _read_dsa(d, interleaved=True)  # GlmMoeDsaIndexer always interleaves
    modes = _indexer_modes(d, d.read("num_hidden_layers", required=True))
    if any(mode != "full" for mode in modes):
        raise HFImportError(
            "config.json shares indexer top-k across layers (indexer_types / index_topk_freq): "
            "attention.sparse runs an indexer in every layer and cannot express that"
        )


def _read_kimi_linear(d: Draft) -> None:
    """Kimi Linear: KDA and MLA layers (MLA without positions), DeepSeek-V3's MoE and
    router after dense first layers (the sizes: the keys). Released configs give
    linear_attn_config (sizes and 1-based layer lists) and their own MoE key names;
    transformers' saved configs add the flat linear_* keys and the per-layer lists
    (KimiLinearConfig reads both)."""
    linear = d.read("linear_attn_config", default={}) or {}
    _kimi_layers(d, linear)
    if "kda" in d.value("architecture.attention.layer_pattern"):
        read_keys(d, KIMI_KEYS)  # the KDA sizes, once the pattern is known
        for name, nested in (("n_heads", "num_heads"), ("head_dim", "head_dim"),
                             ("conv_kernel", "short_conv_kernel_size")):  # fmt: skip
            if linear.get(nested) is not None:  # linear_attn_config over the flat keys
                d.set(f"architecture.mixers.kda.{name}", linear[nested], "config")
        head_dim = d.value("architecture.mixers.kda.head_dim")
        d.set("architecture.mixers.kda.decay_rank", head_dim, "family")  # KimiLinearForgetGate
        d.set("architecture.mixers.kda.output_gate_rank", head_dim, "family")
    if d.read("mla_use_nope", default=True) is False:
        d.note("architecture.position", "config.json sets mla_use_nope false, which "
               "transformers' kimi_linear does not read: its MLA layers never rotate.")  # fmt: skip
    for key in ("qk_head_dim", "rope_theta", "rope_scaling"):  # derived, or unused (NoPE)
        d.read(key)
    _mla(d)
    if d.read("tie_word_embeddings", default=False):  # untied: fixed
        d.note("architecture.tied_embeddings", "config.json says tie_word_embeddings, which "
               "KimiLinearForCausalLM ignores: its head is its own.")  # fmt: skip
    _kimi_moe(d)


def _kimi_layers(d: Draft, linear: Mapping[str, Any]) -> None:
    """The layer pattern from the 1-based full_attn_layers and kda_layers, else
    transformers' default (full attention at every fourth layer after the first)."""
    if d.read("layer_types"):
        return
    n_layers = d.value("architecture.n_layers")
    full, kda = linear.get("full_attn_layers"), linear.get("kda_layers")
    if full is None or kda is None:
        kinds = ["global" if i and i % 4 == 0 else "kda" for i in range(n_layers)]
        d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "family")
        return
    kinds: list[str | None] = [None] * n_layers
    for kind, key, layers in (("global", "full_attn_layers", full), ("kda", "kda_layers", kda)):
        for number in d.layer_numbers(f"linear_attn_config.{key}", layers, n_layers, base=1):
            if kinds[number - 1] is not None:
                raise HFImportError(
                    f"linear_attn_config names layer {number} twice or beyond "
                    f"num_hidden_layers ({n_layers})"
                )
            kinds[number - 1] = kind
    if None in kinds:
        missing = kinds.index(None) + 1
        raise HFImportError(f"linear_attn_config lists layer {missing} as neither kda nor full")
    d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "config")


def _kimi_moe(d: Draft) -> None:
    """KimiLinearMoE (its sizes and router switches: the keys): routed experts plus one
    shared MLP after the dense first layers; KimiLinearTopkRouter scores with a sigmoid,
    picks with the correction bias, groups by their two best, renormalizes when
    moe_renormalize, scales by routed_scaling_factor."""
    types = d.per_layer("mlp_layer_types", d.value("architecture.n_layers"))
    first = d.read("first_k_dense_replace", default=1)
    if types is not None:
        first = leading_layers(types, "dense", "sparse", len(types))
    if d.read("moe_layer_freq", default=1) != 1:
        d.note(
            "architecture.mlp.moe.layer_period",
            "config.json's moe_layer_freq is not read by transformers' kimi_linear: every "
            "layer after the dense ones is MoE.",
        )
    why = "transformers' kimi_linear scores experts with a sigmoid"
    read_only(d, "moe_router_activation_func", "sigmoid", why)
    d.read("use_grouped_topk")  # KimiLinearTopkRouter always ranks groups (one: a no-op)
    d.set("architecture.mlp.moe.first_dense_layers", first, "config")
    shared_and_dense(d, note=False)
    sigmoid_router(d)
    mtp = d.read("num_nextn_predict_layers")
    if mtp:
        d.unmapped["num_nextn_predict_layers"] = mtp


# --- card -> config (the reference) ------------------------------------------------------


def kimi_linear(a: Architecture) -> dict:
    """Kimi Linear: KDA layers and MLA layers without positions (NoPE; the shared key part
    qk_rope_head_dim is still projected, never rotated); DeepSeek-V3's MoE and router
    after dense first layers. transformers fixes both KDA gate ranks to head_dim and always
    gates the output."""
    moe = a.mlp.moe
    require(moe is not None, "MoE in every layer after the dense ones")
    ref.need_sigmoid_router(moe)
    kda = a.mixers.kda if a.mixers is not None else None
    if kda is not None:
        require(kda.decay_rank == kda.head_dim, "mixers.kda.decay_rank equal to head_dim")
        require(kda.output_gate_rank == kda.head_dim, "mixers.kda.output_gate_rank = head_dim")
    first = moe.first_dense_layers
    return {"mlp_layer_types": ["dense"] * first + ["sparse"] * (a.n_layers - first)}


def _shared_count(a: Architecture) -> int:
    """n_shared_experts: the shared MLP's width in routed experts."""
    moe = a.mlp.moe
    if not moe.n_shared:
        return 0
    require(moe.shared_d_ff % a.mlp.d_ff == 0, "shared width a multiple of the expert's")
    return moe.shared_d_ff // a.mlp.d_ff


def _deepseek_v2(a: Architecture) -> dict:
    """Greedy or grouped by each group's best score (transformers' DeepseekV2TopkRouter)."""
    require(not a.bias.mlp, "attention_bias covers MLA")
    moe = a.mlp.moe
    grouped = (moe.n_groups or 1) > 1
    require(not grouped or moe.group_score is GroupScore.MAX, "groups ranked by their max")
    return {}


def _deepseek_v3(a: Architecture) -> dict:
    """Sigmoid scores, a correction bias (zero: none), groups by their top-2 sum."""
    latent = a.attention.variant is AttentionVariant.LATENT  # GLM-4.5's is GQA
    require(not latent or not a.bias.mlp, "attention_bias covers MLA")
    ref.need_sigmoid_router(a.mlp.moe)
    return mtp_config(a, "num_nextn_predict_layers")


def longcat_flash(a: Architecture) -> dict:
    """LongCat-Flash: shortcut-connected MoE layers of MLA (scaled latents, q always
    through its bottleneck), a softmax router over routed and zero-computation experts with
    a correction bias, never renormalized, times routed_scaling_factor."""
    moe, lat = a.mlp.moe, a.attention.latent
    require(moe is not None and moe.shortcut_dense_d_ff is not None, "shortcut MoE layers")
    require(lat.q_lora_rank is not None, "MLA with a query bottleneck")
    require(bool(lat.lora_scaled), "attention.latent.lora_scaled (the latents are scaled)")
    return {"rms_norm_eps": a.norm.eps or 1e-5} | rope_config(a)


def _glm4_qk(a: Architecture) -> bool:
    qk = a.attention.qk_norm
    require(qk in (QKNorm.NONE, QKNorm.PER_HEAD), "attention.qk_norm none or per-head")
    return qk is QKNorm.PER_HEAD


def _dsa(a: Architecture, layout: RopeLayout) -> dict:
    """DeepSeek Sparse Attention's indexer (its RoPE ``layout``) on DeepSeek-V3's MLA and MoE."""
    own = a.attention.sparse.indexer_rope_layout or RopeLayout.HALF_SPLIT
    require(own is layout, f"attention.sparse.indexer_rope_layout must be {layout.value}")
    config = _deepseek_v3(a)
    if layout is RopeLayout.HALF_SPLIT and a.position.rope_scaling is not None:
        # DeepSeek-V3.2: the card's YaRN, with DeepSeek's mscale keys where recorded
        rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
        config["rope_parameters"] = rope | ref.rope_scaling_config(a)
    return config


V4_LAYER_TYPES = {LayerKind(kind): name for name, kind in V4_KINDS.items()}


def _deepseek_v4(a: Architecture) -> dict:
    """DeepSeek-V4: compressed attention (windows, CSA and HCA layers), mHC streams,
    hash-routed then top-k experts (one shared expert of the routed width); YaRN on the
    compressed layers' rope only."""
    att, comp, moe = a.attention, a.attention.compressed, a.mlp.moe
    require(a.hyper_connections is not None, "hyper_connections")
    require(not a.tied_embeddings and not a.bias.qkv, "no biases, untied")
    require(moe.shared_d_ff == a.mlp.d_ff, "one shared expert of d_ff")
    rope = ref.rope_scaling_config(a) if a.position.rope_scaling is not None else None
    hashed = moe.hash_layers or 0
    return {
        "num_key_value_heads": 1,
        "partial_rotary_factor": comp.rope_dim / att.head_dim,
        "rope_theta": a.position.rope_theta or 10000.0,
        "rope_parameters": rope,  # the compressed layers' stretch
        "layer_types": layer_kind_names(a, V4_LAYER_TYPES),
        "compress_rates": {
            "compressed_sparse_attention": comp.sparse_ratio,
            "heavily_compressed_attention": comp.heavy_ratio,
        },
        "rms_norm_eps": a.norm.eps or 1e-6,
        "tie_word_embeddings": False,
        "n_shared_experts": 1,
        "scoring_func": "sqrtsoftplus",
        "norm_topk_prob": True,
        "mlp_layer_types": ["hash_moe"] * hashed + ["moe"] * (a.n_layers - hashed),
    }


# --- checkpoint names (loading weights) --------------------------------------------------


# MLA's projections and norms: archdb's names -> DeepSeek's (q.0-q.2: the query bottleneck;
# without one, q is q_proj as in Llama)
MLA_NAMES = {
    "q.0": "q_a_proj",
    "q.1": "q_a_layernorm",
    "q.2": "q_b_proj",
    "kv_down": "kv_a_proj_with_mqa",
    "kv_norm": "kv_a_layernorm",
    "kv_up": "kv_b_proj",
}


def _mla_names(ours: str, theirs: str, names: dict[str, str] = MLA_NAMES) -> dict[str, Source]:
    return renamed({f"{ours}.{o}": f"{theirs}.{n}" for o, n in names.items()})


def _deepseek_names() -> Names:
    """Latent attention (MLA) and DeepSeekMoE's routed and shared experts."""
    names = qwen3_moe_names()
    names.layer.update(_mla_names("attn.sublayer", "self_attn"))
    return names


def _deepseek_v4_names() -> Names:
    """DeepSeek-V4 as transformers saves it (DeepSeek's own names: wq_a, wkv, wo_a, ape,
    attn_sink, ffn.experts.{e}.w1/w2/w3, hc_attn_fn, ...); archdb's HyperBlock has no
    Residual wrappers, so its names carry no "sublayer"."""
    top = top_names("model.embed_tokens.weight", "model.norm", "head.weight")
    top |= {
        f"decoder.streams.{p}": Source(f"model.hc_head.hc_{p}") for p in ("fn", "base", "scale")
    }
    attention = {
        "sinks": "attn_sink",
        "q_a_proj.weight": "wq_a.weight",
        "q_a_norm.weight": "q_norm.weight",
        "q_b_proj.weight": "wq_b.weight",
        "kv_proj.weight": "wkv.weight",
        "kv_norm.weight": "norm.weight",
        "o_a_proj.weight": "wo_a.weight",
        "o_b_proj.weight": "wo_b.weight",
        "indexer.q_b_proj.weight": "indexer.wq_b.weight",
        "indexer.weights_proj.weight": "indexer.weights_proj.weight",
    }
    compressor = {
        "position_bias": "ape",
        "kv_proj.weight": "wkv.weight",
        "gate_proj.weight": "wgate.weight",
        "kv_norm.weight": "norm.weight",
    }
    for owner in ("compressor.", "indexer.compressor."):
        attention |= {owner + ours: owner + theirs for ours, theirs in compressor.items()}
    layer = {f"attn.{ours}": Source(f"attn.{theirs}") for ours, theirs in attention.items()}
    layer |= {
        "attn_norm.weight": Source("attn_norm.weight"),
        "mlp_norm.weight": Source("ffn_norm.weight"),
        "mlp.router.proj.weight": Source("ffn.gate.weight"),
        "mlp.router.correction_bias": Source("ffn.gate.bias"),
        "mlp.router.table": Source("ffn.gate.tid2eid"),  # the hash layers' token -> experts
    }
    for ours, theirs in (("gate", "w1"), ("up", "w3"), ("down", "w2")):
        layer[f"mlp.experts.{ours}"] = Source(f"ffn.experts.{{e}}.{theirs}.weight", experts=True)
        layer[f"mlp.shared.{ours}.weight"] = Source(f"ffn.shared_experts.{theirs}.weight")
    for ours, theirs in (("attn_hc", "hc_attn"), ("mlp_hc", "hc_ffn")):
        layer |= {f"{ours}.{p}": Source(f"{theirs}_{p}") for p in ("fn", "base", "scale")}
    return Names(top, layer)


def _dsa_names() -> Names:
    """DeepSeek-V3's names plus each layer's lightning indexer (DeepSeek-V3.2, GLM-5)."""
    names = _deepseek_names()
    for part in ("wq_b.weight", "wk.weight", "k_norm.weight", "k_norm.bias", "weights_proj.weight"):
        names.layer[f"attn.sublayer.indexer.{part}"] = Source(f"self_attn.indexer.{part}")
    return names


def _kimi_linear_names() -> Names:
    """Kimi Linear as transformers saves it (its load-time renames reversed): MLA layers
    as DeepSeek's; KDA layers with q/k/v convs stored apart (stacked into archdb's one
    conv over [q, k, v]), the decay's f_a/f_b, dt_bias and A_log (1, 1, heads, 1) on the
    attention, o_norm; every MLP under block_sparse_moe., the dense first layers' too,
    experts as w1 (gate), w3 (up), w2 (down)."""
    names, mlp, attn = _deepseek_names(), "block_sparse_moe", "self_attn."
    layer = llama_layer(PRE_NORMS, mlp=mlp)
    layer |= moe_names(f"{mlp}.gate", f"{mlp}.experts", "w1", "w3", "w2")
    for p in ("gate", "up", "down"):
        layer[f"mlp.sublayer.shared.{p}.weight"] = Source(f"{mlp}.shared_experts.{p}_proj.weight")
    for p in ("q", "k", "v", "f_a", "f_b", "b", "g_a", "g_b", "o"):
        layer[f"attn.sublayer.{p}_proj.weight"] = Source(f"{attn}{p}_proj.weight")
    joined = (attn + "k_conv1d.weight", attn + "v_conv1d.weight")
    layer |= {
        "attn.sublayer.conv1d.weight": Source(attn + "q_conv1d.weight", joined=joined),
        "attn.sublayer.dt_bias": Source(attn + "dt_bias"),
        "attn.sublayer.A_log": Source(attn + "A_log", flatten=True),
        "attn.sublayer.norm_weight": Source(attn + "o_norm.weight"),
    }
    names.layer.update(layer)
    return names


def _longcat_flash_names() -> Names:
    """LongCat-Flash's layers: two MLA sublayers (self_attn.{0,1}), two dense MLPs
    (mlps.{0,1}), their pre-norms (input_layernorm.{j}, post_attention_layernorm.{j}) and
    the experts (mlp.router.classifier, mlp.experts.{e}); the MTP layers (model.mtp) are
    outside the card, as transformers leaves them."""
    layer: dict[str, Source] = {}
    for j in (0, 1):
        layer |= _mla_names(f"attn.{j}", f"self_attn.{j}", MLA_NAMES | {"o": "o_proj"})
        for part in ("gate", "up", "down"):
            layer[f"dense.{j}.{part}.weight"] = Source(f"mlps.{j}.{part}_proj.weight")
        layer[f"attn_norms.{j}.weight"] = Source(f"input_layernorm.{j}.weight")
        layer[f"mlp_norms.{j}.weight"] = Source(f"post_attention_layernorm.{j}.weight")
    layer |= {
        "moe.router.proj.weight": Source("mlp.router.classifier.weight"),
        "moe.router.proj.bias": Source("mlp.router.classifier.bias"),
        "moe.router.correction_bias": Source("mlp.router.e_score_correction_bias"),
    }
    for part in ("gate", "up", "down"):
        layer[f"moe.experts.{part}"] = Source(f"mlp.experts.{{e}}.{part}_proj.weight", experts=True)
    return Names(
        LLAMA_TOP,
        layer,
        tied_head=("lm_head.weight",),
        outside=("model.mtp.",),
        unread=_zero_expert_rows,
    )


_EXPERT_ROW = re.compile(r"model\.layers\.\d+\.mlp\.experts\.(\d+)\.(?:gate|up)_proj\.weight")


def _zero_expert_rows(model: nn.Module, names: list[str]) -> set[str]:
    """gate/up tensors of experts numbered from n_experts on: the zero-computation
    experts', which compute nothing (transformers before 5.25 allocated and saved them)."""
    from archdb.parts import moe as moe_part

    Experts = moe_part.modules().Experts

    experts = next((m for m in model.modules() if isinstance(m, Experts)), None)
    if experts is None or not experts.zero_experts:
        return set()
    n, zero = experts.up.shape[0], experts.zero_experts
    found = {name: _EXPERT_ROW.fullmatch(name) for name in names}
    return {k for k, m in found.items() if m and n <= int(m.group(1)) < n + zero}


# --- the keys --------------------------------------------------------------------------

LATENT = "architecture.attention.latent"
EXPERTS = "mlp.moe.n_experts"  # the MoE keys are read where the config has experts
LATENT_SIZES = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                "v_head_dim")  # fmt: skip


def mla_keys(defaults: dict[str, int] | None = None) -> tuple[Key, ...]:
    """MLA's sizes (all but q_lora_rank required, unless the config class has defaults),
    and the head width and KV heads its config states for them."""
    required = () if defaults else [k for k in LATENT_SIZES if k != "q_lora_rank"]
    return (
        *part_keys("attention.latent", {k: k for k in LATENT_SIZES}, defaults,
                   required=required),
        Key("head_dim", "attention.head_dim", read=False,
            out=lambda a: a.attention.latent.qk_rope_head_dim),
        Key("num_key_value_heads", "attention.n_kv_heads", read=False,
            out=lambda a: a.attention.n_heads),
    )  # fmt: skip


MLA = mla_keys()
DEEPSEEK_MOE = (
    Key("n_routed_experts", "mlp.moe.n_experts"),
    Key("moe_intermediate_size", "mlp.d_ff", required=True, given=EXPERTS),
    DENSE_D_FF,
    Key("num_experts_per_tok", "mlp.moe.n_active", required=True, given=EXPERTS),
    Key("n_shared_experts", "mlp.moe.n_shared", default=0, given=EXPERTS,
        into=lambda n: n or 0, out=_shared_count),
    Key("first_k_dense_replace", "mlp.moe.first_dense_layers", default=0, given=EXPERTS),
)  # fmt: skip
V2_ROUTER = (
    key_or("n_group", "mlp.moe.n_groups", 1, read=False),
    key_or("topk_group", "mlp.moe.top_k_groups", 1, read=False),
    key_or("routed_scaling_factor", "mlp.moe.routed_scale", 1.0, default=1.0, into=float,
           given=EXPERTS),  # DeepseekV2Config's default
    Key("topk_method", read=False, out=lambda a: "group_limited_greedy"
        if (a.mlp.moe.n_groups or 1) > 1 else "greedy"),
)  # fmt: skip


def v3_router(groups: int, top_groups: int, scale: float) -> tuple[Key, ...]:
    """DeepSeek-V3's router keys, with a family's defaults for them; the renormalizing
    switch is norm_topk_prob (null: the builder normalizes)."""
    moe = {"given": EXPERTS, "when": has_moe}
    return (
        key_or("n_group", "mlp.moe.n_groups", 1, default=groups, **moe),
        key_or("topk_group", "mlp.moe.top_k_groups", 1, default=top_groups, **moe),
        Key("norm_topk_prob", "mlp.moe.normalize_top_k", default=True, out=normalizes_top_k, **moe),
        key_or(
            "routed_scaling_factor", "mlp.moe.routed_scale", 1.0, default=scale, into=float, **moe
        ),
    )


SIGMOID_SCORES = (("mlp.moe.score_function", "sigmoid"), ("mlp.moe.score_correction_bias", True))
SPARSE = (
    Key("index_n_heads", "attention.sparse.indexer_heads", required=True),
    Key("index_head_dim", "attention.sparse.indexer_head_dim", required=True),
    Key("index_topk", "attention.sparse.top_k", required=True),
)
# q_a_layernorm and kv_a_layernorm take the RMSNorm class's default, not rms_norm_eps
LATENT_NORM = ("attention.latent.norm_eps", 1e-6)
MLA_FIXED = (LATENT_NORM, ("attention.variant", "latent"))


# the output-changing fields DeepSeek's cards record: its router's, the MLA norms' epsilon,
# the indexer's RoPE layout; and what DeepSeek-V3's router builds
ROUTER_FIELDS = tuple(f"architecture.mlp.moe.{name}" for name in (
    "score_function", "n_groups", "score_correction_bias", "routed_scale"))  # fmt: skip
LATENT_EPS = "architecture.attention.latent.norm_eps"
INDEXER_LAYOUT = "architecture.attention.sparse.indexer_rope_layout"
V3_EXTRAS = frozenset({"correction_bias", "expert_groups", "routed_scale", "sigmoid_scores"})


_KIMI_LAYERS = {LayerKind.KDA: "linear_attention", LayerKind.GLOBAL: "full_attention"}
# KimiLinearConfig's names (transformers' flat ones; the released ones read too) and defaults
KIMI_KEYS = (
    *SIZES,
    Key("max_position_embeddings", "context_length", default=1048576,
        also=("model_max_length",)),
    Key("rms_norm_eps", out=lambda a: a.norm.eps or 1e-5, read=False),
    Key("layer_types", out=lambda a: layer_kind_names(a, _KIMI_LAYERS), read=False),
    *part_keys("mixers.kda", {"n_heads": "linear_num_heads", "head_dim": "linear_head_dim",
               "conv_kernel": "linear_conv_kernel_dim"},
               {"n_heads": 32, "head_dim": 128, "conv_kernel": 4}, kind="kda"),
    *mla_keys({"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
               "v_head_dim": 128}),
    LLAMA_BIASES[0],
    Key("moe_intermediate_size", "mlp.d_ff", default=1024),
    DENSE_D_FF,
    Key("num_local_experts", "mlp.moe.n_experts", default=256, also=("num_experts",)),
    Key("num_experts_per_tok", "mlp.moe.n_active", default=8, also=("num_experts_per_token",)),
    Key("n_shared_experts", "mlp.moe.n_shared", default=1, also=("num_shared_experts",),
        out=_shared_count),
    Key("norm_topk_prob", "mlp.moe.normalize_top_k", default=True, also=("moe_renormalize",),
        out=normalizes_top_k),
    key_or("n_group", "mlp.moe.n_groups", 1, default=1, also=("num_expert_group",)),
    key_or("topk_group", "mlp.moe.top_k_groups", 1, default=1),
    key_or("routed_scaling_factor", "mlp.moe.routed_scale", 1.0, default=2.446, into=float),
)  # fmt: skip


# LongcatFlashConfig's names and defaults
LONGCAT_KEYS = (
    *(k for k in SIZES if k.name in ("vocab_size", "hidden_size", "num_attention_heads",
                                     "max_position_embeddings", "tie_word_embeddings")),
    LLAMA_BIASES[0],
    Key("num_layers", "n_layers", read=False),
    Key("ffn_hidden_size", "mlp.moe.shortcut_dense_d_ff", default=12288),
    Key("expert_ffn_hidden_size", "mlp.d_ff", default=2048),
    Key("n_routed_experts", "mlp.moe.n_experts", default=512),
    Key("moe_topk", "mlp.moe.n_active", default=12),
    key_or("zero_expert_num", "mlp.moe.zero_experts", 0, default=256, into=lambda n: n or 0),
    key_or("routed_scaling_factor", "mlp.moe.routed_scale", 1.0, default=6.0, into=float),
    *mla_keys({"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
               "qk_nope_head_dim": 128, "v_head_dim": 128}),
    Key("num_key_value_heads"),  # not in LongcatFlashConfig
)  # fmt: skip


# DeepseekV4Config's names and defaults
def _indexer(field: str, unused: Callable[[Architecture], int]) -> Callable[[Architecture], int]:
    """The indexer's size, or (a card without CSA layers) one transformers accepts."""
    return lambda a: getattr(a.attention.sparse, field) if a.attention.sparse else unused(a)


V4_INDEXER = (
    Key("index_n_heads", "attention.sparse.indexer_heads", default=64,
        kind="compressed-sparse", out=_indexer("indexer_heads", lambda a: 1)),
    Key("index_head_dim", "attention.sparse.indexer_head_dim", default=128,
        kind="compressed-sparse",
        out=_indexer("indexer_head_dim", lambda a: a.attention.compressed.rope_dim)),
    Key("index_topk", "attention.sparse.top_k", default=512, kind="compressed-sparse",
        out=_indexer("top_k", lambda a: 1)),
)  # fmt: skip
V4_KEYS = (
    *(k for k in SIZES if k.name not in ("intermediate_size", "num_key_value_heads",
                                         "tie_word_embeddings")),
    Key("head_dim", "attention.head_dim", default=512),
    Key("sliding_window", "attention.sliding_window", default=128),
    *part_keys("attention.compressed", {"q_lora_rank": "q_lora_rank",
               "output_groups": "o_groups", "output_rank": "o_lora_rank"},
               {"q_lora_rank": 1024, "output_groups": 8, "output_rank": 1024}),
    Key("compress_rope_theta", "attention.compressed.compress_rope_theta", default=160000.0,
        into=float),
    *V4_INDEXER,
    *part_keys("hyper_connections", {"n_streams": "hc_mult",
               "sinkhorn_iters": "hc_sinkhorn_iters", "eps": "hc_eps"},
               {"n_streams": 4, "sinkhorn_iters": 20, "eps": 1e-6}),
    Key("moe_intermediate_size", "mlp.d_ff", required=True, also=("intermediate_size",)),
    key_or("swiglu_limit", "mlp.swiglu_limit", CLAMPED_SWIGLU.limit, default=10.0, into=float),
    Key("n_routed_experts", "mlp.moe.n_experts", required=True),
    Key("num_experts_per_tok", "mlp.moe.n_active", required=True),
    key_or("routed_scaling_factor", "mlp.moe.routed_scale", 1.0, default=1.5, into=float),
)  # fmt: skip


def _sarvam_moe_names() -> Names:
    """Sarvam-30B as released (Bailing's names): one fused [q | k | v] projection, dense
    for o, query/key layernorms, word_embeddings, the correction bias as expert_bias."""
    layer = llama_layer(PRE_NORMS) | moe_names(
        "mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj"
    )
    for t in ("weight", "bias"):
        for p, cut in QKV_CUTS:
            layer[f"attn.sublayer.{p}.{t}"] = Source(f"attention.query_key_value.{t}", cut=cut)
    layer |= renamed({"attn.sublayer.o": "attention.dense"})
    for qk, theirs in (("q", "query"), ("k", "key")):
        layer[f"attn.sublayer.qk_norm.{qk}_norm.weight"] = Source(
            f"attention.{theirs}_layernorm.weight"
        )
    layer["mlp.sublayer.router.correction_bias"] = Source("mlp.gate.expert_bias")
    top = LLAMA_TOP | {"embed.table.weight": Source("model.word_embeddings.weight")}
    return Names(top, layer, tied_head=("lm_head.weight",))


# --- the families ----------------------------------------------------------------------

# logit test: MLA; softmax shares, groups by their max, routed scale
DEEPSEEK_V2 = LLAMA.derive(
    "deepseek_v2",
    # DeepSeek's remote-code router key, which the hooks check (transformers' V2/V3 classes
    # do not define it; deepseek_v4's does)
    released_keys=("scoring_func",),
    classes="DeepseekV2",
    rope_layout="interleaved",
    keys=(*MLA, *DEEPSEEK_MOE, *V2_ROUTER),
    fixed=(
        *MLA_FIXED,
        ("mlp.moe.score_function", "softmax"),
        ("mlp.moe.normalize_top_k", False),  # DeepseekV2TopkRouter never renormalizes
    ),
    read=partial(_read_deepseek, router=_softmax_router),
    write=_deepseek_v2,
    extras=frozenset({"expert_groups", "routed_scale", "yarn_softmax_mscale"}),
    names=_deepseek_names,
    logit_error=3e-07,
    function_fields=(*(f for f in ROUTER_FIELDS if "correction" not in f), LATENT_EPS),
)
# logit test: MLA; sigmoid, correction bias, groups by top-2 sum, scale
DEEPSEEK_V3 = DEEPSEEK_V2.derive(
    "deepseek_v3",
    classes="DeepseekV3",
    mlp_bias=False,
    rope_layout="half-split",
    keys=(
        *v3_router(8, 4, 2.5),  # DeepseekV3Config's defaults
        Key("topk_method"),
        *dropped(("mlp_bias",)),  # DeepseekV3Config has none: its MLPs are unbiased
        Key(
            "rope_interleave",
            "position.rope_layout",
            default=True,
            into=lambda on: "interleaved" if on else "half-split",
            out=lambda a: a.position.rope_layout is not RopeLayout.HALF_SPLIT,
        ),
    ),
    fixed=(*MLA_FIXED, *SIGMOID_SCORES),
    read=_read_deepseek,
    write=_deepseek_v3,
    extras=V3_EXTRAS | {"yarn_softmax_mscale"},
    logit_error=3.2e-07,
    function_fields=(*ROUTER_FIELDS, LATENT_EPS),
)
# logit test: V3 with the lightning indexer (8 of 24 keys), MoE layers too
DEEPSEEK_V32 = DEEPSEEK_V3.derive(
    "deepseek_v32",
    # the released MTP module (DeepSeek-V3.2), the router key
    released_keys=("num_nextn_predict_layers", "scoring_func"),
    classes="DeepseekV32",
    rope_layout="interleaved",
    indexed_layer=True,
    keys=(*SPARSE, *dropped(("rope_interleave",))),  # DeepseekV32Config has no such key
    read=partial(_read_dsa, interleaved=False),  # DeepseekV32Indexer always half-splits
    write=partial(_dsa, layout=RopeLayout.HALF_SPLIT),
    extras=DEEPSEEK_V3.extras | {"sparse"},
    names=_dsa_names,
    logit_error=2.9e-07,
    function_fields=(*DEEPSEEK_V3.function_fields, INDEXER_LAYOUT),
)
# the released configs' keys transformers folds in or ignores, which the hook reads
V4_RELEASED_KEYS = (
    "compress_ratios",
    "num_hash_layers",
    "qk_rope_head_dim",
    "num_nextn_predict_layers",
    "topk_method",
    "expert_dtype",
)
V4_EXTRAS = frozenset(
    {
        "compressed",
        "correction_bias",
        "hash_layers",
        "hyper_connections",
        "routed_scale",
        "sinks",
        "sparse",
    }
)
# logit test: DeepSeek-V4: a local, two CSA (an entry per 4 tokens, top 3) and an HCA layer
# (per 8) over 24 tokens, mHC streams, a hash layer with a random token table, YaRN on
# the compressed layers (three token draws)
DEEPSEEK_V4 = DEEPSEEK_V3.derive(
    "deepseek_v4",
    released_keys=V4_RELEASED_KEYS,
    classes="DeepseekV4",
    rope_layout="interleaved",
    eps_default=1e-06,
    keys=(*dropped(DEEPSEEK_V3.keys), *V4_KEYS),
    fixed=(
        ("attention.variant", "compressed"),
        ("attention.sinks", True),
        ("mlp.activation", "clipped-swiglu"),
        ("mlp.moe.score_function", "sqrt-softplus"),
        ("mlp.moe.score_correction_bias", True),
        ("mlp.moe.normalize_top_k", True),
        ("mlp.moe.n_shared", 1),
    ),
    builds_activations=("clipped-swiglu",),
    kinds=tuple(LayerKind),
    free=(
        "attention.qk_norm",
        "position.type",
        "position.rope_layout",
        "bias.attn_out",
        "attention.n_kv_heads",
    ),
    read=_read_deepseek_v4,
    write=_deepseek_v4,
    extras=V4_EXTRAS,
    names=_deepseek_v4_names,
    logit_error=5.9e-07,
    function_fields=(*(f for f in ROUTER_FIELDS if not f.endswith("n_groups")), INDEXER_LAYOUT),
)
# logit test: V3.2's DSA, interleaved indexer RoPE, MoE; latent norms at 1e-6
GLM_MOE_DSA = DEEPSEEK_V32.derive(
    "glm_moe_dsa",
    classes="GlmMoeDsa",
    # every layer runs its own indexer (no "shared" indexer_types: the schema has none)
    keys=(Key("indexer_types", out=lambda a: ["full"] * a.n_layers, read=False),),
    read=_read_glm_moe_dsa,
    write=partial(_dsa, layout=RopeLayout.INTERLEAVED),
    extras=V3_EXTRAS | {"sparse"},
    logit_error=2.1e-07,
)
# logit test: DeepSeek-V3's router on GQA with partial RoPE and QK norm
GLM4_MOE = DEEPSEEK_V3.derive(
    "glm4_moe",
    classes="Glm4Moe",
    rotary_fraction_default=0.5,
    eps_default=1e-05,
    keys=(
        *dropped(MLA[:5]),
        *(k for k in SIZES if k.name in ("head_dim", "num_key_value_heads")),
        Key("rope_interleave"),
        # Glm4MoeConfig's defaults
        Key("n_routed_experts", "mlp.moe.n_experts", default=128),
        Key("moe_intermediate_size", "mlp.d_ff", default=1408),
        Key("num_experts_per_tok", "mlp.moe.n_active", default=8),
        Key("n_shared_experts", "mlp.moe.n_shared", default=1, out=_shared_count),
        Key("first_k_dense_replace", "mlp.moe.first_dense_layers", default=1),
        *v3_router(1, 1, 1.0),
        Key(
            "use_qk_norm",
            "attention.qk_norm",
            default=False,
            out=_glm4_qk,
            into=lambda on: "per-head" if on else "none",
        ),
        ROTARY_FRACTION,
        ROPE,
    ),
    fixed=(("bias.attn_out", False), *SIGMOID_SCORES),  # o_proj has no bias
    read=_read_glm4_moe,
    write=_deepseek_v3,
    extras=V3_EXTRAS,
    names=qwen3_moe_names,
    logit_error=3.5e-07,
    function_fields=ROUTER_FIELDS,
)
# Sarvam-30B: GLM-4.5's code (Glm4MoeForCausalLM) under SarvamMoEConfig's defaults
SARVAM_MOE = GLM4_MOE.derive(
    "sarvam_moe",
    module="glm4_moe",
    layer="Glm4MoeDecoderLayer",
    config_class="SarvamMoEConfig",
    model_class="Glm4MoeForCausalLM",
    write=_deepseek_v3,
    names=_sarvam_moe_names,
    rotary_fraction_default=None,
    rope_theta_default=8_000_000.0,
    eps_default=1e-06,
    keys=(
        Key("moe_intermediate_size", "mlp.d_ff", default=1024),
        Key("num_experts_per_tok", "mlp.moe.n_active", default=6),
        *v3_router(1, 1, 2.5),
        Key("use_qk_norm", "attention.qk_norm", default=True, out=_glm4_qk,
            into=lambda on: "per-head" if on else "none"),
    ),
    logit_error=0.0,
)  # fmt: skip
# Sarvam-105B: DeepSeek-V3's code (DeepseekV3ForCausalLM) under SarvamMLAConfig's defaults
SARVAM_MLA = DEEPSEEK_V3.derive(
    "sarvam_mla",
    module="deepseek_v3",
    layer="DeepseekV3DecoderLayer",
    config_class="SarvamMLAConfig",
    model_class="DeepseekV3ForCausalLM",
    write=_deepseek_v3,
    keys=(
        *v3_router(1, 1, 2.5),
        Key("n_routed_experts", "mlp.moe.n_experts", default=128),
        Key("first_k_dense_replace", "mlp.moe.first_dense_layers", default=1, given=EXPERTS),
    ),
    logit_error=1.2e-07,
)
# logit test: KDA (recurrent form vs transformers' chunks of 64) and NoPE MLA with
# latent norms at 1e-6, V3's router after a dense layer (three token draws)
KIMI_LINEAR = DEEPSEEK_V3.derive(
    "kimi_linear",
    # released form
    released_keys=("first_k_dense_replace", "num_nextn_predict_layers", "scoring_func"),
    classes="KimiLinear",
    rope_key=None,
    position="none",
    eps_default=1e-05,
    linear_layer="kda",
    keys=(*dropped(DEEPSEEK_V3.keys), *KIMI_KEYS),
    fixed=(
        *MLA_FIXED,
        *SIGMOID_SCORES,
        ("tied_embeddings", False),  # KimiLinearForCausalLM's _tied_weights_keys is empty
        ("mixers.kda.output_gate", True),
        ("mixers.kda.mlp", True),
    ),
    kinds=("kda", "global"),
    free=("attention.qk_norm", "mlp.moe.first_dense_layers"),
    read=_read_kimi_linear,
    write=kimi_linear,
    extras=V3_EXTRAS | {"kda"},
    names=_kimi_linear_names,
    logit_error=3.1e-07,
)
# logit test: LongCat-Flash: shortcut-connected MoE layers, MLA with scaled latents, 6
# routed and 4 zero-computation experts (a random correction bias: 29-53% of the choices
# zero experts; three seeds, three batches each)
LONGCAT_FLASH = DEEPSEEK_V3.derive(
    "longcat_flash",
    classes="LongcatFlash",
    rope_theta_default=10000000.0,
    eps_default=1e-05,
    rope_layout="interleaved",
    keys=(*dropped(DEEPSEEK_V3.keys), *LONGCAT_KEYS),
    fixed=(
        *MLA_FIXED,
        ("mlp.moe.score_function", "softmax"),
        ("mlp.moe.score_correction_bias", True),
        ("mlp.moe.normalize_top_k", False),
    ),
    kinds=tuple(LayerKind),
    free=("attention.qk_norm", "mlp.moe.first_dense_layers", "mlp.moe.layer_period"),
    read=_read_longcat_flash,
    write=longcat_flash,
    extras=frozenset(
        {"correction_bias", "routed_scale", "shortcut_moe", "yarn_softmax_mscale", "zero_experts"}
    ),
    names=_longcat_flash_names,
    logit_error=3.4e-07,
    function_fields=(
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.normalize_top_k",
        "architecture.mlp.moe.routed_scale",
        "architecture.attention.latent.norm_eps",
        "architecture.attention.latent.lora_scaled",
    ),
)
