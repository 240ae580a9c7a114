"""Command R and Command A."""

from __future__ import annotations

from archdb.schema import (
    Activation,
    Architecture,
    LayerKind,
    NormAffine,
    NormPosition,
    NormType,
    QKNorm,
)
from archdb_hf import tensors as w
from archdb_hf.draft import Draft
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import (
    base_config,
    layer_types_of,
    need_activation,
    need_dense,
    need_pattern,
    need_softmax_attention,
    require,
)
from archdb_hf.families.llama import LLAMA
from archdb_hf.keymap import whole
from archdb_hf.tensors import LLAMA_TOP, QKVO, Names, Source

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_cohere(d: Draft) -> None:
    if d.read("use_qk_norm", default=False):  # a LayerNorm per head, each head its own scale
        d.set("architecture.attention.qk_norm", "per-head-untied", "config")
    scale = d.read("logit_scale", default=0.0625)  # CohereConfig's default
    if scale:
        d.set("architecture.logit_scale", float(scale), d.origin_of("logit_scale"))


# --- card -> config (the reference) ------------------------------------------------------


def cohere(a: Architecture) -> dict:
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE, NormPosition.PRE)
    ref.need_parallel(a, shared=True)
    need_activation(a, Activation.SWIGLU)
    require(
        a.attention.qk_norm in (QKNorm.NONE, QKNorm.PER_HEAD_UNTIED),
        "Cohere's QK norm is per head with untied weights",
    )
    need_dense(a)
    need_pattern(a, LayerKind.GLOBAL)
    require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    return base_config(a) | {
        "attention_bias": a.bias.qkv,
        "use_qk_norm": a.attention.qk_norm is QKNorm.PER_HEAD_UNTIED,
    }


def cohere2(a: Architecture) -> dict:
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE, NormPosition.PRE)
    ref.need_parallel(a, shared=True)
    need_activation(a, Activation.SWIGLU)
    need_softmax_attention(a)
    need_dense(a)
    require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    return base_config(a) | {
        "attention_bias": a.bias.qkv,
        "layer_types": layer_types_of(a),
        "sliding_window": a.attention.sliding_window or 4096,
    }


# --- checkpoint names (loading weights) --------------------------------------------------


def _cohere_names() -> Names:
    projections = QKVO | {"o": "o_proj"}
    mlp = {p: f"mlp.{p}_proj" for p in ("gate", "up", "down")}
    names = w.parallel_names(
        "model.layers.{i}.", "input_layernorm", "self_attn", projections, mlp,
        LLAMA_TOP, tied_head=("lm_head.weight",),
    )  # fmt: skip
    for qk in ("q", "k"):  # use_qk_norm: a LayerNorm per head with its own scale
        names.layer[f"attn.qk_norm.{qk}_norm.weight"] = Source(f"self_attn.{qk}_norm.weight")
    return names


# --- the families ----------------------------------------------------------------------

COHERE = LLAMA.derive(
    "cohere",
    layer="CohereDecoderLayer",
    config_class="CohereConfig",
    model_class="CohereForCausalLM",
    eps_key="layer_norm_eps",
    norm="layernorm",
    mlp_bias=False,
    parallel=True,
    shared_norm_in_parallel=True,
    tied_default=True,
    rope_layout="interleaved",
    read=_read_cohere,
    write=whole(cohere),
    names=_cohere_names,
    logit_error=3.9e-07,
)
COHERE2 = COHERE.derive(
    "cohere2",
    layer="Cohere2DecoderLayer",
    config_class="Cohere2Config",
    model_class="Cohere2ForCausalLM",
    default_pattern=("local", "local", "local", "global-nope"),
    full_layer="global-nope",
    write=whole(cohere2),
    logit_error=2.6e-07,
)
