"""Qwen 2, 2-MoE, 3, 3-VL, 3-Next and 3.5."""

from __future__ import annotations

from archdb.schema import Architecture, LayerKind
from archdb_hf.draft import Draft, in_order, read_keys, rope_parameters_of, short_text
from archdb_hf.families.card_to_config import layer_kind_names, mtp_config
from archdb_hf.families.llama import LLAMA, ROPE
from archdb_hf.keymap import DENSE_D_FF, Key, normalizes_top_k, part_keys, require
from archdb_hf.tensors import (
    Dims,
    Source,
    fused_experts,
    llama_with,
    moe_names,
    qwen3_moe_names,
)

# --- config -> card (import-hf): what no key reads ------------------------------------


def _read_qwen3_moe(d: Draft) -> None:
    """Layers listed in mlp_only_layers are not recorded; with a decoder_sparse_step over
    1, the layers between keep intermediate_size's dense MLP."""
    dense_layers = d.read("mlp_only_layers", default=[]) or []
    if dense_layers:
        d.unmapped["mlp_only_layers"] = dense_layers
    if d.value("architecture.mlp.moe.layer_period") > 1:
        d.set("architecture.mlp.moe.dense_d_ff", d.read("intermediate_size"), "config")


def _read_gated_hybrid(d: Draft) -> None:
    """Qwen3-Next's and Qwen3.5's layers: released configs give the interval of full
    attention layers, not the list; Qwen3.5 configs state attn_output_gate, which the
    modeling code does not read (it always gates)."""
    d.read("attn_output_gate")
    if not d.read("layer_types"):
        interval = d.read("full_attention_interval", default=4)
        pattern = ["gated-deltanet"] * (interval - 1) + ["global"]
        d.set("architecture.attention.layer_pattern", pattern, "config")
    read_keys(d, DELTANET)  # sized once the pattern is known


def _mrope_note(d: Draft) -> None:
    full, _ = rope_parameters_of(d)
    if full.get("mrope_section") is not None:
        d.note(
            "architecture.position",
            f"rope_parameters give M-RoPE sections {short_text(full['mrope_section'])}: text "
            "tokens have equal position ids on the three axes, so each rotary pair turns as "
            "in plain RoPE (recorded); image and video positions are not modelled.",
        )


# --- card -> config (the reference): what no key writes ---------------------------------


def _gated_hybrid(a: Architecture) -> dict:
    require(a.attention.output_gate == "elementwise", "attention.output_gate elementwise")
    return mtp_config(a, "mtp_num_hidden_layers")


QWEN_EXPERTS = (
    Key("moe_intermediate_size", "mlp.d_ff", required=True),
    DENSE_D_FF,
    Key("num_experts", "mlp.moe.n_experts", required=True, also=("num_local_experts",)),
    Key("num_experts_per_tok", "mlp.moe.n_active", required=True),
    Key("decoder_sparse_step", "mlp.moe.layer_period", default=1),
    Key("norm_topk_prob", "mlp.moe.normalize_top_k", default=False, out=normalizes_top_k),
)
# Qwen3NextConfig's default, unlike Qwen3-MoE's
NORMALIZED_BY_DEFAULT = Key(
    "norm_topk_prob", "mlp.moe.normalize_top_k", default=True, out=normalizes_top_k
)
SHARED_EXPERT = Key("shared_expert_intermediate_size", "mlp.moe.shared_d_ff")
GATED_SHARED = (("mlp.moe.n_shared", 1), ("mlp.moe.shared_gate", True))
_DELTANET_SIZES = {
    "n_key_heads": "linear_num_key_heads",
    "n_value_heads": "linear_num_value_heads",
    "key_head_dim": "linear_key_head_dim",
    "value_head_dim": "linear_value_head_dim",
    "conv_kernel": "linear_conv_kernel_dim",
}
DELTANET = part_keys(
    "mixers.gated_deltanet", _DELTANET_SIZES, required=_DELTANET_SIZES, kind="gated-deltanet"
)
_HYBRID_LAYERS = {LayerKind.GATED_DELTANET: "linear_attention", LayerKind.GLOBAL: "full_attention"}
# Qwen3-Next's and Qwen3.5's: Gated DeltaNet beside attention with a sigmoid output gate
# per element, zero-centred RMSNorms (Qwen3NextRMSNorm: x * (1 + w))
GATED_HYBRID = dict(
    fixed_bias=(False, False, False),
    linear_layer="gated-deltanet",
    kinds=("gated-deltanet", "global"),
    keys=(
        Key("attention_bias"),
        ROPE,
        Key("layer_types", out=lambda a: layer_kind_names(a, _HYBRID_LAYERS), read=False),
        *(Key(k.name, k.path, when=k.when, read=False) for k in DELTANET),
        Key("mtp_num_hidden_layers", "mtp.n_modules"),
    ),
    fixed=(
        ("attention.output_gate", "elementwise"),
        ("norm.unit_offset", True),
        ("mixers.gated_deltanet.mlp", True),
    ),
    write=_gated_hybrid,
)


# --- checkpoint names (loading weights) --------------------------------------------------


def _qkvz_groups(d: Dims) -> tuple[int, tuple[int, ...]]:
    hk, hv, dk, dv = d.deltanet
    return hk, (dk, dk, hv // hk * dv, hv // hk * dv)  # per key head: q, k, its v and z


def _ba_groups(d: Dims) -> tuple[int, tuple[int, ...]]:
    hk, hv, _, _ = d.deltanet
    return hk, (hv // hk, hv // hk)  # per key head: its value heads' b, then a


# the experts and the sigmoid-gated shared expert (Qwen2-MoE, Qwen3-Next, Qwen3.5 MoE)
_GATED_SHARED_EXPERT = moe_names("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
_GATED_SHARED_EXPERT |= {
    f"mlp.sublayer.shared.{p}.weight": Source(f"mlp.shared_expert.{p}_proj.weight")
    for p in ("gate", "up", "down")
}
_GATED_SHARED_EXPERT["mlp.sublayer.shared_gate.weight"] = Source("mlp.shared_expert_gate.weight")


def _deltanet(qkvz: Source, ba: Source) -> dict[str, Source]:
    """Gated DeltaNet (``linear_attn.``), its fused input projections read from ``qkvz``
    and ``ba``; conv1d's channels are [q, k, v], as archdb's."""
    parts = ("conv1d.weight", "out_proj.weight", "dt_bias", "A_log")
    layer = {f"attn.sublayer.{p}": Source(f"linear_attn.{p}") for p in parts}
    return layer | {
        "attn.sublayer.in_proj_qkvz.weight": qkvz,
        "attn.sublayer.in_proj_ba.weight": ba,
        "attn.sublayer.norm_weight": Source("linear_attn.norm.weight"),
    }


# Qwen3-Next: in_proj_qkvz and in_proj_ba grouped per key head in the checkpoint, per part
# in archdb (its attention's q_proj rows per head [query, gate], as archdb's)
_QWEN3_NEXT_DELTANET = _deltanet(
    Source("linear_attn.in_proj_qkvz.weight", grouped=_qkvz_groups),
    Source("linear_attn.in_proj_ba.weight", grouped=_ba_groups),
)
# Qwen3.5: in_proj_qkv and in_proj_z (in_proj_b and in_proj_a) are separate tensors, each
# per part, whose rows stack into archdb's fused projections
_QWEN3_5_DELTANET = _deltanet(
    Source("linear_attn.in_proj_qkv.weight", joined=("linear_attn.in_proj_z.weight",)),
    Source("linear_attn.in_proj_b.weight", joined=("linear_attn.in_proj_a.weight",)),
)
# Qwen3-VL: the decoder under model.language_model., the vision tower under model.visual.
_QWEN3_VL_RELEASE = {"wrapped": {"model.language_model.": "model."}, "outside": ("model.visual.",)}
# Qwen3-VL-MoE's experts, fused
_QWEN3_VL_EXPERTS = fused_experts("mlp.gate", "mlp.experts")
# Qwen3.5's released checkpoints (Qwen3_5ForConditionalGeneration): the decoder under
# model.language_model., the vision tower under model.visual., the MTP layer under mtp.
_QWEN3_5_RELEASE = {
    "wrapped": {"model.language_model.": "model."},
    "outside": ("model.visual.", "mtp."),
}


# --- the families ----------------------------------------------------------------------

QWEN2 = LLAMA.derive(
    "qwen2",
    classes="Qwen2",
    fixed_bias=(True, False, False),  # Qwen 2 hard-codes bias on q, k, v only
    mlp_bias=False,
    keys=(Key("attention_bias"), Key("mlp_bias")),
    logit_error=0.0,
)
QWEN2_MOE = QWEN2.derive(
    "qwen2_moe",
    classes="Qwen2Moe",
    keys=(*QWEN_EXPERTS, SHARED_EXPERT),
    fixed=GATED_SHARED,
    read=_read_qwen3_moe,
    extras=frozenset({"shared_gate"}),
    names=lambda: llama_with(_GATED_SHARED_EXPERT),
    logit_error=2.1e-07,
)
QWEN3 = LLAMA.derive(
    "qwen3",
    classes="Qwen3",
    qk_norm="per-head",
    mlp_bias=False,
    keys=(Key("mlp_bias"),),
    logit_error=3.7e-07,
)
QWEN3_MOE = QWEN3.derive(
    "qwen3_moe",
    classes="Qwen3Moe",
    keys=QWEN_EXPERTS,
    read=_read_qwen3_moe,
    names=qwen3_moe_names,
    logit_error=2.7e-07,
)
QWEN3_NEXT = QWEN3_MOE.derive(
    "qwen3_next",
    released_keys=("mtp_num_hidden_layers",),  # the MTP count, kept as an attribute
    free=("position.rotary_fraction",),  # its hook writes the rotating share
    classes="Qwen3Next",
    **GATED_HYBRID | {
        "keys": (*GATED_HYBRID["keys"], SHARED_EXPERT, NORMALIZED_BY_DEFAULT),
        "fixed": GATED_HYBRID["fixed"] + GATED_SHARED,
    },
    read=in_order(_read_qwen3_moe, _read_gated_hybrid),
    extras=frozenset({"gated_deltanet", "output_gate", "shared_gate"}),
    names=lambda: llama_with(_GATED_SHARED_EXPERT | _QWEN3_NEXT_DELTANET),
    logit_error=4.1e-07,
)  # fmt: skip
QWEN3_5_TEXT = QWEN3.derive(
    "qwen3_5_text",
    released_keys=("mtp_num_hidden_layers",),  # the MTP count, kept as an attribute
    module="qwen3_5",
    layer="Qwen3_5DecoderLayer",
    config_class="Qwen3_5TextConfig",
    model_class="Qwen3_5ForCausalLM",
    rotary_fraction_default=0.25,
    **GATED_HYBRID,
    read=in_order(_read_gated_hybrid, _mrope_note),
    aliases=("qwen3_5",),
    extras=frozenset({"gated_deltanet", "output_gate"}),
    names=lambda: llama_with(_QWEN3_5_DELTANET, **_QWEN3_5_RELEASE),
    logit_error=3.9e-07,
)
# Qwen3 inside its multimodal release: text tokens take plain RoPE (M-RoPE's three axes
# turn alike); deepstack adds image features only
QWEN3_VL_TEXT = QWEN3.derive(
    "qwen3_vl_text",
    module="qwen3_vl",
    layer="Qwen3VLTextDecoderLayer",
    config_class="Qwen3VLTextConfig",
    model_class="Qwen3VLForConditionalGeneration",
    released_as="qwen3_vl",
    decoder_only_of="visual",
    read=_mrope_note,
    names=lambda: llama_with({}, **_QWEN3_VL_RELEASE),
    logit_error=0.0,
)
# ... and Qwen3-MoE's: every layer's experts, the router always renormalizing its top k
QWEN3_VL_MOE_TEXT = QWEN3_MOE.derive(
    "qwen3_vl_moe_text",
    module="qwen3_vl_moe",
    layer="Qwen3VLMoeTextDecoderLayer",
    config_class="Qwen3VLMoeTextConfig",
    model_class="Qwen3VLMoeForConditionalGeneration",
    released_as="qwen3_vl_moe",
    decoder_only_of="visual",
    keys=(Key("norm_topk_prob"),),
    fixed=(("mlp.moe.normalize_top_k", True),),
    read=in_order(_read_qwen3_moe, _mrope_note),
    names=lambda: llama_with(_QWEN3_VL_EXPERTS, **_QWEN3_VL_RELEASE),
    logit_error=1.4e-07,
)
# every layer's MLP is the experts plus a gated shared expert; the router always
# renormalizes its top k (Qwen3VLMoeTextTopKRouter, no norm_topk_prob key)
QWEN3_5_MOE_TEXT = QWEN3_NEXT.derive(
    "qwen3_5_moe_text",
    module="qwen3_5_moe",
    layer="Qwen3_5MoeDecoderLayer",
    config_class="Qwen3_5MoeTextConfig",
    model_class="Qwen3_5MoeForCausalLM",
    rotary_fraction_default=0.25,
    keys=(Key("intermediate_size"), Key("decoder_sparse_step"), Key("norm_topk_prob")),
    fixed=(*QWEN3_NEXT.fixed, ("mlp.moe.normalize_top_k", True), ("mlp.moe.layer_period", 1)),
    read=in_order(_read_qwen3_moe, _read_gated_hybrid, _mrope_note),
    aliases=("qwen3_5_moe",),
    write=_gated_hybrid,
    extras=frozenset({"gated_deltanet", "output_gate", "shared_gate"}),
    names=lambda: llama_with(_GATED_SHARED_EXPERT | _QWEN3_5_DELTANET, **_QWEN3_5_RELEASE),
    logit_error=3.5e-07,
)
