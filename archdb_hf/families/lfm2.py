"""LFM2 (short convolutions)."""

from __future__ import annotations

from archdb.schema import (
    Architecture,
    LayerKind,
    QKNorm,
    RouterScore,
)
from archdb_hf.draft import Draft, HFImportError, read_layer_period
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import (
    base_config,
    layer_kind_names,
    need_dense,
    need_llama_like,
    need_pattern,
    require,
    rope_config,
)
from archdb_hf.families.llama import LLAMA
from archdb_hf.keymap import whole
from archdb_hf.tensors import QKVO, Names, Source, moe_names

# --- config -> card (import-hf) ----------------------------------------------------------


def _lfm2_ff_width(d: Draft, width: int) -> int:
    """The MLP width Lfm2MLP builds: with block_auto_adjust_ff_dim, two thirds of the
    configured width, times block_ffn_dim_multiplier, rounded up to block_multiple_of
    (no rounding when the multiplier is null), as Llama's reference code sizes it."""
    if not d.read("block_auto_adjust_ff_dim", default=True):
        return width
    width = int(2 * width / 3)
    if "block_ffn_dim_multiplier" in d.config and d.config["block_ffn_dim_multiplier"] is None:
        return width
    width = int(d.read("block_ffn_dim_multiplier", default=1.0) * width)
    multiple = d.read("block_multiple_of", default=256)
    return multiple * ((width + multiple - 1) // multiple)


def _lfm2_layers(d: Draft) -> None:
    """LFM2: short-conv layers, attention at full_attn_idxs (or layer_types); the config's
    tie_embedding spelling; every layer keeps its MLP."""
    if "tie_embedding" in d.config:  # Lfm2Config reads it over tie_word_embeddings
        d.set("architecture.tied_embeddings", d.read("tie_embedding"), "config")
        d.used.add("tie_word_embeddings")
    n_layers = d.value("architecture.n_layers")
    indices = d.read("full_attn_idxs")
    if not d.read("layer_types") and indices is not None:
        if any(i >= n_layers for i in indices):
            raise HFImportError(
                f"full_attn_idxs names a layer beyond num_hidden_layers ({n_layers})"
            )
        attention = set(indices)
        kinds = ["global" if i in attention else "short-conv" for i in range(n_layers)]
        d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "config")
    if "short-conv" in (d.value("architecture.attention.layer_pattern") or []):
        d.set("architecture.mixers.short_conv.conv_kernel", d.read("conv_L_cache", default=3),
              d.origin_of("conv_L_cache"))  # fmt: skip
        d.set("architecture.mixers.short_conv.bias", d.read("conv_bias", default=False),
              d.origin_of("conv_bias"))  # fmt: skip
        d.set("architecture.mixers.short_conv.mlp", True, "family")
    else:
        d.read("conv_L_cache")
        d.read("conv_bias")


def _read_lfm2(d: Draft) -> None:
    configured = d.read("block_ff_dim", "intermediate_size", required=True)
    width = _lfm2_ff_width(d, configured)
    d.set("architecture.mlp.d_ff", width, "config")
    if width != configured:
        d.note(
            "architecture.mlp.d_ff",
            f"The width Lfm2MLP builds from the configured {configured} "
            "(block_auto_adjust_ff_dim: 2/3 of it, times block_ffn_dim_multiplier, rounded up "
            "to block_multiple_of).",
        )
    _lfm2_layers(d)


def _read_lfm2_moe(d: Draft) -> None:
    """LFM2-MoE: num_dense_layers dense MLPs (intermediate_size, not adjusted), then routed
    experts of moe_intermediate_size; a sigmoid router whose expert bias only chooses."""
    first_dense = d.read("num_dense_layers", default=2)
    dense_d_ff = d.value("architecture.mlp.d_ff")
    d.set("architecture.mlp.d_ff", d.read("moe_intermediate_size", required=True), "config")
    d.moe(
        n_experts=d.read("num_experts", required=True),
        n_active=d.read("num_experts_per_tok", required=True),
        first_dense_layers=first_dense,
        dense_d_ff=dense_d_ff if first_dense else None,
    )
    # Lfm2MoeTopKRouter: sigmoid scores, the expert bias only chooses, the chosen scores
    # renormalized (norm_topk_prob), times routed_scaling_factor
    d.set("architecture.mlp.moe.score_function", "sigmoid", "family")
    d.set("architecture.mlp.moe.score_correction_bias", d.read("use_expert_bias", default=True),
          "config")  # fmt: skip
    d.set("architecture.mlp.moe.normalize_top_k", d.read("norm_topk_prob", default=True),
          "config")  # fmt: skip
    d.set("architecture.mlp.moe.routed_scale", d.read("routed_scaling_factor", default=1.0),
          "config")  # fmt: skip
    _lfm2_layers(d)


# --- card -> config (the reference) ------------------------------------------------------


def _lfm2_common(a: Architecture) -> dict:
    """LFM2's shared layout: Llama's pre-norm block with per-head QK norm, no biases in
    attention or MLP, short-conv layers where the pattern says (one conv_bias flag), the
    head width d_model / n_heads (the config has no head_dim)."""
    need_llama_like(a, QKNorm.PER_HEAD)
    need_pattern(a, LayerKind.SHORT_CONV, LayerKind.GLOBAL)
    ref.need_bias(a, False, False, False)
    require(
        a.head_dim_effective * a.attention.n_heads == a.d_model,
        "attention.head_dim d_model / n_heads (LFM2's config has no head_dim)",
    )
    c = a.mixers.short_conv if a.mixers is not None else None
    require(c is None or c.mlp, "mixers.short_conv.mlp true: every LFM2 layer has the MLP")
    names = {LayerKind.SHORT_CONV: "conv", LayerKind.GLOBAL: "full_attention"}
    base = {k: v for k, v in base_config(a).items() if k != "head_dim"}
    return (
        base
        | rope_config(a)
        | {
            "layer_types": layer_kind_names(a, names),
            "conv_L_cache": c.conv_kernel if c is not None else 3,
            "conv_bias": c.bias if c is not None else False,
        }
    )


def lfm2(a: Architecture) -> dict:
    need_dense(a)
    return _lfm2_common(a) | {"block_auto_adjust_ff_dim": False}  # d_ff is the width used


def lfm2_moe(a: Architecture) -> dict:
    """LFM2-MoE: dense MLPs in the first layers, then routed experts, no shared expert; a
    sigmoid router whose expert bias only chooses, renormalized, scaled (no groups)."""
    common = _lfm2_common(a)
    moe = a.mlp.moe
    require(
        moe is not None and moe.layer_period == 1 and moe.n_shared == 0,
        "MoE after the first dense layers, every layer, no shared experts",
    )
    require(moe.score_function is not RouterScore.SOFTMAX, "mlp.moe.score_function sigmoid")
    require((moe.n_groups or 1) == 1, "no expert groups")
    return common | {
        "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
        "moe_intermediate_size": a.mlp.d_ff,
        "num_dense_layers": moe.first_dense_layers,
        "num_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "use_expert_bias": bool(moe.score_correction_bias),
        "norm_topk_prob": moe.normalize_top_k is not False,
        "routed_scaling_factor": moe.routed_scale or 1.0,
    }


# --- checkpoint names (loading weights) --------------------------------------------------


def _lfm2_names() -> Names:
    """LFM2: short-conv layers (conv.in_proj, conv.conv, conv.out_proj) or attention with
    out_proj and q/k_layernorm; the MLP's w1 (gate), w3 (up), w2 (down); operator_norm and
    ffn_norm; the final norm is called embedding_norm."""
    layer = {
        f"attn.sublayer.{p}.{t}": Source(f"self_attn.{theirs}.{t}")
        for p, theirs in (QKVO | {"o": "out_proj"}).items()
        for t in ("weight", "bias")
    }
    for qk in ("q", "k"):
        layer[f"attn.sublayer.qk_norm.{qk}_norm.weight"] = Source(
            f"self_attn.{qk}_layernorm.weight"
        )
    for part in ("in_proj", "conv", "out_proj"):
        for t in ("weight", "bias"):
            layer[f"attn.sublayer.{part}.{t}"] = Source(f"conv.{part}.{t}")
    for ours, theirs in (("gate", "w1"), ("up", "w3"), ("down", "w2")):
        layer[f"mlp.sublayer.{ours}.weight"] = Source(f"feed_forward.{theirs}.weight")
    layer["attn.before.weight"] = Source("operator_norm.weight")
    layer["mlp.before.weight"] = Source("ffn_norm.weight")
    top = {
        "embed.table.weight": Source("model.embed_tokens.weight"),
        "decoder.final_norm.weight": Source("model.embedding_norm.weight"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    return Names(top, layer, tied_head=("lm_head.weight",))


def _lfm2_moe_names() -> Names:
    """LFM2-MoE: LFM2's names; in MoE layers feed_forward holds the router (gate), its
    expert bias, and per-expert w1 (gate), w3 (up), w2 (down), as released checkpoints
    store them."""
    names = _lfm2_names()
    ff = "feed_forward"
    moe = moe_names(f"{ff}.gate", f"{ff}.experts", "w1", "w3", "w2")
    moe["mlp.sublayer.router.correction_bias"] = Source(f"{ff}.expert_bias")
    names.layer.update(moe)
    return names


# --- the families ----------------------------------------------------------------------

LFM2 = LLAMA.derive(
    "lfm2",
    layer="Lfm2DecoderLayer",
    config_class="Lfm2Config",
    model_class="Lfm2ForCausalLM",
    eps_key="norm_eps",
    qk_norm="per-head",
    mlp_bias=False,
    tied_default=True,
    rope_theta_default=1000000.0,
    eps_default=1e-05,
    conv_layer="short-conv",
    read=_read_lfm2,
    write=whole(lfm2),
    extras=frozenset({"short_conv"}),
    names=_lfm2_names,
    logit_error=2.4e-07,
)
# logit test: sigmoid router whose expert bias only chooses, scaled
LFM2_MOE = LFM2.derive(
    "lfm2_moe",
    layer="Lfm2MoeDecoderLayer",
    config_class="Lfm2MoeConfig",
    model_class="Lfm2MoeForCausalLM",
    read=_read_lfm2_moe,
    write=whole(lfm2_moe),
    extras=frozenset({"correction_bias", "routed_scale", "short_conv", "sigmoid_scores"}),
    names=_lfm2_moe_names,
    logit_error=2.3e-07,
)
