"""Command R and Command A."""

from __future__ import annotations

from archdb.schema import Architecture, QKNorm
from archdb_hf.families.llama import LAYER_TYPES, LLAMA
from archdb_hf.keymap import Key, key_or, require, sliding_window_key
from archdb_hf.tensors import LLAMA_TOP, QKVO, Names, Source, parallel_names

# --- card -> config (the reference): what no key writes ---------------------------------


def _qk_norm(a: Architecture) -> bool:
    """use_qk_norm: a LayerNorm per head, each head its own scale."""
    require(
        a.attention.qk_norm in (QKNorm.NONE, QKNorm.PER_HEAD_UNTIED),
        "Cohere's QK norm is per head with untied weights",
    )
    return a.attention.qk_norm is QKNorm.PER_HEAD_UNTIED


# --- checkpoint names (loading weights) --------------------------------------------------


def _cohere_names() -> Names:
    projections = QKVO | {"o": "o_proj"}
    mlp = {p: f"mlp.{p}_proj" for p in ("gate", "up", "down")}
    names = parallel_names(
        "model.layers.{i}.", "input_layernorm", "self_attn", projections, mlp,
        LLAMA_TOP, tied_head=("lm_head.weight",),
    )  # fmt: skip
    for qk in ("q", "k"):  # use_qk_norm: a LayerNorm per head with its own scale
        names.layer[f"attn.qk_norm.{qk}_norm.weight"] = Source(f"self_attn.{qk}_norm.weight")
    return names


# --- the families ----------------------------------------------------------------------

COHERE = LLAMA.derive(
    "cohere",
    classes="Cohere",
    eps_key="layer_norm_eps",
    norm="layernorm",
    mlp_bias=False,
    parallel=True,
    shared_norm_in_parallel=True,
    tied_default=True,
    rope_layout="interleaved",
    keys=(
        Key("mlp_bias"),
        Key("use_qk_norm", "attention.qk_norm", default=False, out=_qk_norm,
            into=lambda on: "per-head-untied" if on else "none"),
        key_or("logit_scale", "logit_scale", 0.0625, default=0.0625),  # CohereConfig's
    ),
    names=_cohere_names,
    logit_error=3.9e-07,
)  # fmt: skip
COHERE2 = COHERE.derive(
    "cohere2",
    classes="Cohere2",
    default_pattern=("local", "local", "local", "global-nope"),
    full_layer="global-nope",
    kinds=("local", "global-nope"),
    keys=(Key("use_qk_norm"), LAYER_TYPES, sliding_window_key(4096)),
    logit_error=2.6e-07,
)
