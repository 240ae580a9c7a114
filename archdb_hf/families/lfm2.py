"""LFM2 (short convolutions)."""

from __future__ import annotations

from archdb.schema import LayerKind
from archdb_hf.draft import Draft, HFImportError, read_keys, read_layer_period
from archdb_hf.families.card_to_config import layer_kind_names
from archdb_hf.families.llama import LLAMA, ROPE
from archdb_hf.keymap import DENSE_D_FF, Key, dropped, key_or, normalizes_top_k
from archdb_hf.tensors import Names, Source, moe_names, renamed, top_names

# --- config -> card (import-hf) ----------------------------------------------------------


def _lfm2_ff_width(d: Draft, width: int) -> int:
    """The MLP width Lfm2MLP builds: with block_auto_adjust_ff_dim, two thirds of the
    configured width, times block_ffn_dim_multiplier, rounded up to block_multiple_of
    (no rounding when the multiplier is null), as Llama's reference code sizes it."""
    if not d.read("block_auto_adjust_ff_dim", default=True):
        return width
    width = int(2 * width / 3)
    factor = d.read_nullable("block_ffn_dim_multiplier", 1.0)
    if factor is None:
        return width
    width = int(factor * width)
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
        attention = set(d.layer_numbers("full_attn_idxs", indices, n_layers))
        kinds = ["global" if i in attention else "short-conv" for i in range(n_layers)]
        d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "config")
    for key in SHORT_CONV:
        d.read(key.name)  # whether or not a layer convolves
    read_keys(d, SHORT_CONV)  # sized once the pattern is known


def _read_lfm2(d: Draft) -> None:
    configured = d.read("block_ff_dim", "intermediate_size", required=True)
    if not isinstance(configured, int):  # a per-layer list (Gemma 3n's spelling) has no LFM2 form
        raise HFImportError("config.json: block_ff_dim or intermediate_size must be one width")
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
    experts of moe_intermediate_size (the keys)."""
    if d.value("architecture.mlp.moe.first_dense_layers"):
        d.set("architecture.mlp.moe.dense_d_ff", d.read("intermediate_size"), "config")
    _lfm2_layers(d)


# --- checkpoint names (loading weights) --------------------------------------------------


def _lfm2_names() -> Names:
    """LFM2: short-conv layers (conv.in_proj, conv.conv, conv.out_proj) or attention with
    out_proj and q/k_layernorm; the MLP's w1 (gate), w3 (up), w2 (down); operator_norm and
    ffn_norm; the final norm is called embedding_norm."""
    modules = {p: f"self_attn.{p}_proj" for p in "qkv"} | {"o": "self_attn.out_proj"}
    modules |= {p: f"conv.{p}" for p in ("in_proj", "conv", "out_proj")}
    layer = renamed({f"attn.sublayer.{p}": module for p, module in modules.items()})
    for qk in ("q", "k"):
        layer[f"attn.sublayer.qk_norm.{qk}_norm.weight"] = Source(
            f"self_attn.{qk}_layernorm.weight"
        )
    for ours, theirs in (("gate", "w1"), ("up", "w3"), ("down", "w2")):
        layer[f"mlp.sublayer.{ours}.weight"] = Source(f"feed_forward.{theirs}.weight")
    layer["attn.before.weight"] = Source("operator_norm.weight")
    layer["mlp.before.weight"] = Source("ffn_norm.weight")
    top = top_names("model.embed_tokens.weight", "model.embedding_norm")
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


_LAYER_TYPES = {LayerKind.SHORT_CONV: "conv", LayerKind.GLOBAL: "full_attention"}
# the short convolutions' sizes: read where layers convolve, written for every card
SHORT_CONV = (
    key_or("conv_L_cache", "mixers.short_conv.conv_kernel", 3, default=3, kind="short-conv"),
    key_or("conv_bias", "mixers.short_conv.bias", False, default=False, kind="short-conv"),
)

# --- the families ----------------------------------------------------------------------

LFM2 = LLAMA.derive(
    "lfm2",
    classes="Lfm2",
    eps_key="norm_eps",
    qk_norm="per-head",
    mlp_bias=False,
    tied_default=True,
    rope_theta_default=1000000.0,
    eps_default=1e-05,
    conv_layer="short-conv",
    fixed_bias=(False, False, False),
    kinds=("short-conv", "global"),
    keys=(
        *dropped(("head_dim", "attention_bias", "mlp_bias")),
        ROPE,
        Key("layer_types", out=lambda a: layer_kind_names(a, _LAYER_TYPES), read=False),
        *SHORT_CONV,
        Key("block_auto_adjust_ff_dim", out=lambda a: False, read=False),  # d_ff: the width
    ),
    fixed=(("mixers.short_conv.mlp", True),),  # every LFM2 layer has the MLP
    read=_read_lfm2,
    extras=frozenset({"short_conv"}),
    names=_lfm2_names,
    logit_error=2.4e-07,
)
# logit test: sigmoid router whose expert bias only chooses, scaled
LFM2_MOE = LFM2.derive(
    "lfm2_moe",
    classes="Lfm2Moe",
    # Lfm2MoeTopKRouter: sigmoid scores, the expert bias only chooses, the chosen scores
    # renormalized (norm_topk_prob), times routed_scaling_factor; no shared expert
    keys=(
        Key("block_auto_adjust_ff_dim"),
        DENSE_D_FF,
        Key("moe_intermediate_size", "mlp.d_ff", required=True),
        Key("num_dense_layers", "mlp.moe.first_dense_layers", default=2),
        Key("num_experts", "mlp.moe.n_experts", required=True),
        Key("num_experts_per_tok", "mlp.moe.n_active", required=True),
        key_or("use_expert_bias", "mlp.moe.score_correction_bias", False, default=True),
        Key("norm_topk_prob", "mlp.moe.normalize_top_k", default=True, out=normalizes_top_k),
        key_or("routed_scaling_factor", "mlp.moe.routed_scale", 1.0, default=1.0),
    ),
    fixed=(*LFM2.fixed, ("mlp.moe.score_function", "sigmoid")),
    read=_read_lfm2_moe,
    extras=frozenset({"correction_bias", "routed_scale", "short_conv", "sigmoid_scores"}),
    names=_lfm2_moe_names,
    logit_error=2.3e-07,
)
