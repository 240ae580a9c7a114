"""Qwen 2, 2-MoE, 3, 3-Next and 3.5."""

from __future__ import annotations

from dataclasses import replace

from archdb.schema import (
    Activation,
    Architecture,
    LayerKind,
    QKNorm,
)
from archdb_hf.draft import Draft, read_mtp, rope_parameters_of, short_text
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import (
    base_config,
    layer_kind_names,
    mtp_config,
    need_activation,
    need_dense,
    need_llama_like,
    need_pattern,
    require,
    rope_config,
)
from archdb_hf.families.llama import LLAMA
from archdb_hf.tensors import (
    LLAMA_TOP,
    PRE_NORMS,
    Dims,
    Names,
    Source,
    llama_layer,
    moe_names,
    qwen3_moe_names,
)

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_qwen3_moe(d: Draft) -> None:
    dense_layers = d.read("mlp_only_layers", default=[]) or []
    if dense_layers:
        d.unmapped["mlp_only_layers"] = dense_layers
    period = d.read("decoder_sparse_step", default=1)
    dense_d_ff = d.value("architecture.mlp.d_ff") if period > 1 else None
    d.set("architecture.mlp.d_ff", d.read("moe_intermediate_size", required=True), "config")
    d.moe(
        n_experts=d.read("num_experts", "num_local_experts", required=True),
        n_active=d.read("num_experts_per_tok", required=True),
        layer_period=period,
        dense_d_ff=dense_d_ff,
    )
    normalize = d.read("norm_topk_prob", default=False)  # Qwen3MoeConfig's default
    d.set("architecture.mlp.moe.normalize_top_k", normalize, d.origin_of("norm_topk_prob"))


def _read_qwen2_moe(d: Draft) -> None:
    """Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen3-MoE's experts (top-k weights are
    shares of a softmax over all experts unless norm_topk_prob), plus one shared-expert MLP
    scaled by sigmoid(shared_expert_gate)."""
    _read_qwen3_moe(d)
    _gated_shared_expert(d)


def _read_qwen3_next(d: Draft) -> None:
    """Qwen3-Next: Gated DeltaNet and gated attention layers, MoE with a gated shared expert."""
    _read_qwen3_moe(d)
    if d.read("norm_topk_prob") is None:  # Qwen3NextConfig's default, unlike Qwen3-MoE's
        d.set("architecture.mlp.moe.normalize_top_k", True, "family")
    _gated_shared_expert(d)
    _read_gated_hybrid(d)


def _gated_shared_expert(d: Draft) -> None:
    """Qwen3-Next's shared expert: one MLP, its output scaled by sigmoid(shared_expert_gate)."""
    shared = d.read("shared_expert_intermediate_size")
    if shared:
        d.set("architecture.mlp.moe.n_shared", 1, "family")
        d.set("architecture.mlp.moe.shared_d_ff", shared, "config")
        d.set("architecture.mlp.moe.shared_gate", True, "family")


def _read_gated_hybrid(d: Draft) -> None:
    """Qwen3-Next's and Qwen3.5's layers: Gated DeltaNet, and attention with a sigmoid
    output gate per element; zero-centred RMSNorms (x * (1 + w))."""
    d.read("attn_output_gate")  # Qwen3.5 configs state it; the modeling code always gates
    read_mtp(d, "mtp_num_hidden_layers")
    d.set("architecture.attention.output_gate", "elementwise", "family")
    d.set("architecture.norm.unit_offset", True, "family")  # Qwen3NextRMSNorm: x * (1 + w)
    if not d.read("layer_types"):  # released configs give the interval, not the list
        interval = d.read("full_attention_interval", default=4)
        pattern = ["gated-deltanet"] * (interval - 1) + ["global"]
        d.set("architecture.attention.layer_pattern", pattern, "config")
    if "gated-deltanet" in (d.value("architecture.attention.layer_pattern") or []):
        sizes = {
            "n_key_heads": d.read("linear_num_key_heads", required=True),
            "n_value_heads": d.read("linear_num_value_heads", required=True),
            "key_head_dim": d.read("linear_key_head_dim", required=True),
            "value_head_dim": d.read("linear_value_head_dim", required=True),
            "conv_kernel": d.read("linear_conv_kernel_dim", required=True),
        }
        for name, value in sizes.items():
            d.set(f"architecture.mixers.gated_deltanet.{name}", value, "config")
        d.set("architecture.mixers.gated_deltanet.mlp", True, "family")


def _read_qwen3_5_text(d: Draft) -> None:
    """Qwen3.5 (dense): Qwen3-Next's layers with a dense SwiGLU MLP on every layer; the
    DeltaNet's projections are separate tensors (same sizes)."""
    _read_gated_hybrid(d)
    _mrope_note(d)


def _read_qwen3_5_moe_text(d: Draft) -> None:
    """Qwen3.5 MoE: every layer's MLP is the experts plus a gated shared expert; the router
    always renormalizes its top k (Qwen3VLMoeTextTopKRouter, no norm_topk_prob key)."""
    _read_qwen3_moe(d)
    d.set("architecture.mlp.moe.normalize_top_k", True, "family")
    _gated_shared_expert(d)
    _read_gated_hybrid(d)
    _mrope_note(d)


def _mrope_note(d: Draft) -> None:
    full, _ = rope_parameters_of(d)
    if full.get("mrope_section") is not None:
        d.note(
            "architecture.position",
            f"rope_parameters give M-RoPE sections {short_text(full['mrope_section'])}: text "
            "tokens have equal position ids on the three axes, so each rotary pair turns as "
            "in plain RoPE (recorded); image and video positions are not modelled.",
        )


# --- card -> config (the reference) ------------------------------------------------------


def qwen2(a: Architecture) -> dict:
    need_llama_like(a)
    need_dense(a)
    ref.need_bias(a, True, False, False)  # Qwen 2 hard-codes bias on q, k, v only
    return base_config(a)


def qwen2_moe(a: Architecture) -> dict:
    """Qwen2's attention (bias on q, k and v, qkv_bias's default), experts and a gated
    shared expert."""
    need_llama_like(a)
    ref.need_bias(a, True, False, False)
    moe = _gated_shared_moe(a)
    return base_config(a) | {
        "moe_intermediate_size": a.mlp.d_ff,
        "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
        "shared_expert_intermediate_size": moe.shared_d_ff,
        "num_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "decoder_sparse_step": moe.layer_period,
        "norm_topk_prob": moe.normalize_top_k is not False,  # null: the builder normalizes
    }


def qwen3(a: Architecture) -> dict:
    need_llama_like(a, QKNorm.PER_HEAD)
    need_dense(a)
    require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    return base_config(a) | {"attention_bias": a.bias.qkv}


def qwen3_moe(a: Architecture) -> dict:
    need_llama_like(a, QKNorm.PER_HEAD)
    require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    moe = a.mlp.moe
    require(
        moe is not None and moe.first_dense_layers == 0 and moe.n_shared == 0,
        "MoE from the first layer, no shared experts",
    )
    return base_config(a) | {
        "attention_bias": a.bias.qkv,
        "moe_intermediate_size": a.mlp.d_ff,
        "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
        "num_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "decoder_sparse_step": moe.layer_period,
        "norm_topk_prob": moe.normalize_top_k is not False,  # null: the builder normalizes
    }


def qwen3_next(a: Architecture) -> dict:
    config = _gated_hybrid_config(a)
    moe = _gated_shared_moe(a)
    return config | {
        "moe_intermediate_size": a.mlp.d_ff,
        "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
        "shared_expert_intermediate_size": moe.shared_d_ff,
        "num_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "decoder_sparse_step": moe.layer_period,
        "norm_topk_prob": moe.normalize_top_k is not False,  # null: the builder normalizes
    }


def _gated_shared_moe(a: Architecture):
    moe = a.mlp.moe
    require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.n_shared == 1
        and bool(moe.shared_gate),
        "MoE from the first layer with one gated shared expert",
    )
    return moe


def _gated_hybrid_config(a: Architecture) -> dict:
    """Qwen3-Next's and Qwen3.5's layers: Gated DeltaNet and gated attention (the config
    keys both families share)."""
    need_llama_like(a, QKNorm.PER_HEAD)
    need_activation(a, Activation.SWIGLU)
    need_pattern(a, LayerKind.GATED_DELTANET, LayerKind.GLOBAL)
    require(a.attention.output_gate == "elementwise", "attention.output_gate elementwise")
    ref.need_bias(a, False, False, False)
    g = a.mixers.gated_deltanet if a.mixers is not None else None
    names = {LayerKind.GATED_DELTANET: "linear_attention", LayerKind.GLOBAL: "full_attention"}
    sizes = {}
    if g is not None:
        require(g.mlp, "mixers.gated_deltanet.mlp true")
        sizes = {
            "linear_num_key_heads": g.n_key_heads,
            "linear_num_value_heads": g.n_value_heads,
            "linear_key_head_dim": g.key_head_dim,
            "linear_value_head_dim": g.value_head_dim,
            "linear_conv_kernel_dim": g.conv_kernel,
        }
    mtp = mtp_config(a, "mtp_num_hidden_layers")
    return (
        base_config(a) | {"layer_types": layer_kind_names(a, names)} | sizes | rope_config(a) | mtp
    )


def qwen3_5_text(a: Architecture) -> dict:
    """Qwen3.5 (dense): the hybrid layers, each with a dense SwiGLU MLP."""
    need_dense(a)
    return _gated_hybrid_config(a)


def qwen3_5_moe_text(a: Architecture) -> dict:
    """Qwen3.5 MoE: experts and a gated shared expert on every layer, top k renormalized."""
    config = _gated_hybrid_config(a)
    moe = _gated_shared_moe(a)
    require(
        moe.layer_period == 1 and moe.normalize_top_k is not False,
        "every layer MoE, top-k weights renormalized",
    )
    del config["intermediate_size"]  # no dense MLP
    return config | {
        "moe_intermediate_size": a.mlp.d_ff,
        "shared_expert_intermediate_size": moe.shared_d_ff,
        "num_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
    }


# --- checkpoint names (loading weights) --------------------------------------------------


def _qkvz_groups(d: Dims) -> tuple[int, tuple[int, ...]]:
    hk, hv, dk, dv = d.deltanet
    return hk, (dk, dk, hv // hk * dv, hv // hk * dv)  # per key head: q, k, its v and z


def _ba_groups(d: Dims) -> tuple[int, tuple[int, ...]]:
    hk, hv, _, _ = d.deltanet
    return hk, (hv // hk, hv // hk)  # per key head: its value heads' b, then a


def _gated_shared_expert_names() -> dict[str, Source]:
    """The experts and the sigmoid-gated shared expert (Qwen2-MoE, Qwen3-Next)."""
    layer = moe_names("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    layer |= {
        f"mlp.sublayer.shared.{p}.weight": Source(f"mlp.shared_expert.{p}_proj.weight")
        for p in ("gate", "up", "down")
    }
    layer["mlp.sublayer.shared_gate.weight"] = Source("mlp.shared_expert_gate.weight")
    return layer


def _qwen2_moe_names() -> Names:
    """Qwen2's attention (biased q, k, v) and the experts with a gated shared expert."""
    layer = llama_layer(PRE_NORMS) | _gated_shared_expert_names()
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _qwen3_next_names() -> Names:
    """Gated attention (q_proj rows per head [query, gate], as archdb's), Gated DeltaNet
    (``linear_attn.``: in_proj_qkvz and in_proj_ba grouped per key head in the checkpoint,
    per part in archdb), MoE with a sigmoid-gated shared expert."""
    layer = llama_layer(PRE_NORMS) | _gated_shared_expert_names()
    ours, theirs = "attn.sublayer.", "linear_attn."
    layer |= {
        ours + "in_proj_qkvz.weight": Source(theirs + "in_proj_qkvz.weight", grouped=_qkvz_groups),
        ours + "in_proj_ba.weight": Source(theirs + "in_proj_ba.weight", grouped=_ba_groups),
        ours + "conv1d.weight": Source(theirs + "conv1d.weight"),  # channels [q, k, v]: as ours
        ours + "norm_weight": Source(theirs + "norm.weight"),
    }
    layer |= {ours + p: Source(theirs + p) for p in ("out_proj.weight", "dt_bias", "A_log")}
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _qwen3_5_deltanet() -> dict[str, Source]:
    """Qwen3.5's Gated DeltaNet: in_proj_qkv and in_proj_z (in_proj_b and in_proj_a) are
    separate tensors, each per part, whose rows stack into archdb's fused projections."""
    ours, theirs = "attn.sublayer.", "linear_attn."
    layer = {
        ours + "in_proj_qkvz.weight": Source(
            theirs + "in_proj_qkv.weight", joined=(theirs + "in_proj_z.weight",)
        ),
        ours + "in_proj_ba.weight": Source(
            theirs + "in_proj_b.weight", joined=(theirs + "in_proj_a.weight",)
        ),
        ours + "conv1d.weight": Source(theirs + "conv1d.weight"),
        ours + "norm_weight": Source(theirs + "norm.weight"),
    }
    return layer | {ours + p: Source(theirs + p) for p in ("out_proj.weight", "dt_bias", "A_log")}


def _qwen3_5_text_names() -> Names:
    """Qwen3.5 (dense): Qwen3-Next's gated attention, its own DeltaNet names, Llama's MLP."""
    layer = llama_layer(PRE_NORMS) | _qwen3_5_deltanet()
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",), **_QWEN3_5_RELEASE)


def _qwen3_5_moe_text_names() -> Names:
    """Qwen3.5 MoE: Qwen3-Next's experts and gated shared expert, Qwen3.5's DeltaNet."""
    names = _qwen3_next_names()
    names.layer.update(_qwen3_5_deltanet())  # replaces Qwen3-Next's grouped projections
    return replace(names, **_QWEN3_5_RELEASE)


# Qwen3.5's released checkpoints (Qwen3_5ForConditionalGeneration): the decoder under
# model.language_model., the vision tower under model.visual., the MTP layer under mtp.
_QWEN3_5_RELEASE = {
    "wrapped": {"model.language_model.": "model."},
    "outside": ("model.visual.", "mtp."),
}


# --- the families ----------------------------------------------------------------------

QWEN2 = LLAMA.derive(
    "qwen2",
    layer="Qwen2DecoderLayer",
    config_class="Qwen2Config",
    model_class="Qwen2ForCausalLM",
    fixed_bias=(True, False, False),
    mlp_bias=False,
    write=qwen2,
    logit_error=0.0,
)
QWEN2_MOE = QWEN2.derive(
    "qwen2_moe",
    layer="Qwen2MoeDecoderLayer",
    config_class="Qwen2MoeConfig",
    model_class="Qwen2MoeForCausalLM",
    read=_read_qwen2_moe,
    write=qwen2_moe,
    extras=frozenset({"shared_gate"}),
    names=_qwen2_moe_names,
    logit_error=2.1e-07,
)
QWEN3 = LLAMA.derive(
    "qwen3",
    layer="Qwen3DecoderLayer",
    config_class="Qwen3Config",
    model_class="Qwen3ForCausalLM",
    qk_norm="per-head",
    mlp_bias=False,
    write=qwen3,
    logit_error=3.7e-07,
)
QWEN3_MOE = QWEN3.derive(
    "qwen3_moe",
    layer="Qwen3MoeDecoderLayer",
    config_class="Qwen3MoeConfig",
    model_class="Qwen3MoeForCausalLM",
    read=_read_qwen3_moe,
    write=qwen3_moe,
    names=qwen3_moe_names,
    logit_error=2.7e-07,
)
QWEN3_NEXT = QWEN3_MOE.derive(
    "qwen3_next",
    layer="Qwen3NextDecoderLayer",
    config_class="Qwen3NextConfig",
    model_class="Qwen3NextForCausalLM",
    linear_layer="gated-deltanet",
    read=_read_qwen3_next,
    write=qwen3_next,
    extras=frozenset({"gated_deltanet", "output_gate", "shared_gate"}),
    names=_qwen3_next_names,
    logit_error=4.1e-07,
)
QWEN3_5_TEXT = QWEN3_NEXT.derive(
    "qwen3_5_text",
    module="qwen3_5",
    layer="Qwen3_5DecoderLayer",
    config_class="Qwen3_5TextConfig",
    model_class="Qwen3_5ForCausalLM",
    rotary_fraction_default=0.25,
    read=_read_qwen3_5_text,
    aliases=("qwen3_5",),
    write=qwen3_5_text,
    extras=frozenset({"gated_deltanet", "output_gate"}),
    names=_qwen3_5_text_names,
    logit_error=3.9e-07,
)
QWEN3_5_MOE_TEXT = QWEN3_5_TEXT.derive(
    "qwen3_5_moe_text",
    module="qwen3_5_moe",
    layer="Qwen3_5MoeDecoderLayer",
    config_class="Qwen3_5MoeTextConfig",
    model_class="Qwen3_5MoeForCausalLM",
    read=_read_qwen3_5_moe_text,
    aliases=("qwen3_5_moe",),
    write=qwen3_5_moe_text,
    extras=frozenset({"gated_deltanet", "output_gate", "shared_gate"}),
    names=_qwen3_5_moe_text_names,
    logit_error=3.5e-07,
)
