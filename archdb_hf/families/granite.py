"""Granite, Granite MoE and Granite 4.0 hybrids."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from archdb.schema import Architecture, LayerKind, PositionType
from archdb_hf.draft import (
    Draft,
    HFImportError,
    check_mamba2_width,
    multiplier,
    no_time_step_clamp,
    positive,
    read_keys,
    shown_briefly,
    silu_conv,
)
from archdb_hf.families.card_to_config import layer_kind_names, require
from archdb_hf.families.llama import EXPERTS, LLAMA, ROPE
from archdb_hf.families.ssm import hybrid_mamba2, mamba2_mixer
from archdb_hf.keymap import Key, has_moe, key_or
from archdb_hf.tensors import (
    Names,
    Source,
    first_expert_ff,
    first_ff,
    llama_with,
    second_expert_ff,
    second_ff,
)

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_granite(d: Draft) -> None:
    divisor = 1.0 / d.value("architecture.logit_scale")
    d.note(
        "architecture.logit_scale",
        f"GraniteForCausalLM divides the logits by logits_scaling ({divisor:g}); the card "
        "stores the factor 1/logits_scaling.",
    )


def _read_granitemoehybrid(d: Draft) -> None:
    """Granite 4.0-H: Mamba-2 and attention layers, each followed by routed experts beside
    a shared MLP (the shared MLP alone without experts); Granite's factors; RoPE only with
    position_embedding_type rope (GraniteMoeHybridConfig's defaults throughout)."""
    _read_granite(d)
    if not d.read("layer_types"):  # the config class's default: every layer linear_attention
        d.set("architecture.attention.layer_pattern", ["mamba2"], "family")
    if "mamba2" in d.value("architecture.attention.layer_pattern"):
        read_keys(d, HYBRID_MIXER)  # sized once the pattern is known
        inner = int(d.read("mamba_expand", default=2) * d.value("architecture.d_model"))
        check_mamba2_width(d, inner, "GraniteMoeHybridMambaLayer")
        silu_conv(d)
        no_time_step_clamp(d)
        d.read("mamba_chunk_size")  # the chunked kernel's block: no effect on outputs
    shared = d.read("shared_intermediate_size", default=1024)
    n_experts = d.read("num_local_experts", default=8)
    n_active = d.read("num_experts_per_tok", default=2)
    if n_experts:  # a softmax of the top-k (a fixed choice)
        d.moe(n_experts=n_experts, n_active=n_active, n_shared=1, shared_d_ff=shared)
    else:  # the shared MLP is the layer's only MLP
        d.set("architecture.mlp.d_ff", shared, d.origin_of("shared_intermediate_size"))
    if d.read("position_embedding_type") != "rope":
        d.set("architecture.position.type", "none", d.origin_of("position_embedding_type"))
        d.clear("architecture.position.rope_theta")
        d.note(
            "architecture.position.type",
            "GraniteMoeHybridModel applies RoPE only when position_embedding_type is rope.",
        )


# MiniCPM's muP factors (its remote code) and MiniCPMConfig's defaults for them
_MINICPM_FACTORS = {"scale_emb": 1, "scale_depth": 1, "dim_model_base": 1}


def _granite_from_minicpm(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """MiniCPM's remote-code config (model_type minicpm) as GraniteConfig's keys: its muP
    factors are Granite's multipliers (embeddings x scale_emb, each sublayer's output x
    scale_depth / sqrt(num_hidden_layers), logits / (hidden_size / dim_model_base)) and its
    scores 1 / sqrt(head_dim) Granite's attention_multiplier. MiniCPM-MoE's experts are
    refused: their code was not compared with GraniteMoe's."""
    if config.get("model_type") != "minicpm":
        return None
    if config.get("num_experts"):
        raise HFImportError("config.json: num_experts: MiniCPM-MoE's experts are not read")
    sizes = ("hidden_size", "num_hidden_layers", "num_attention_heads")
    values = {k: config.get(k, _MINICPM_FACTORS.get(k)) for k in (*_MINICPM_FACTORS, *sizes)}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
            raise HFImportError(f"config.json: {key} {shown_briefly(value)}: a positive number")
    head_dim = config.get("head_dim") or values["hidden_size"] / values["num_attention_heads"]
    if isinstance(head_dim, bool) or not isinstance(head_dim, int | float) or head_dim <= 0:
        raise HFImportError(f"config.json: head_dim {shown_briefly(head_dim)}: a positive number")
    factors = {
        "embedding_multiplier": values["scale_emb"],
        "residual_multiplier": values["scale_depth"] / math.sqrt(values["num_hidden_layers"]),
        "logits_scaling": values["hidden_size"] / values["dim_model_base"],
        "attention_multiplier": head_dim**-0.5,
    }
    spelled = {k: v for k, v in config.items() if k not in _MINICPM_FACTORS}
    return spelled | factors | {"model_type": "granite"}


# --- card -> config (the reference) ------------------------------------------------------


# Granite's four muP factors: GraniteConfig's defaults are 1.0 each (no 1/sqrt(d_head));
# the card's value, 1 (or 1/sqrt(d_head)) where null
MULTIPLIERS = (
    multiplier("embedding_multiplier", "embedding_multiplier"),
    multiplier("residual_multiplier", "residual_multiplier"),
    key_or("attention_multiplier", "attention.scale", lambda a: a.head_dim_effective**-0.5,
           default=1.0, into=positive("attention_multiplier")),
    Key("logits_scaling", "logit_scale", default=1.0,  # Granite divides by it
        into=lambda value: 1.0 / positive("logits_scaling")(value),
        out=lambda a: 1.0 / (a.logit_scale or 1.0)),
)  # fmt: skip


def _granitemoehybrid(a: Architecture) -> dict:
    """Granite 4.0-H: Mamba-2 and attention layers, each with routed experts beside a
    shared MLP (or that MLP alone), Granite's factors, RoPE or no positions."""
    position = a.position.type
    require(position in (PositionType.ROPE, PositionType.NONE), "position.type rope or none")
    moe = a.mlp.moe
    require(moe is None or moe.n_shared == 1, "a dense MLP, or every layer MoE with one shared MLP")
    return {}


def _rope(a: Architecture) -> bool:
    return a.position.type is PositionType.ROPE


HYBRID_MIXER = hybrid_mamba2(n_heads=128, state_size=256, conv_kernel=4)
_HYBRID_LAYERS = {LayerKind.MAMBA2: "linear_attention", LayerKind.GLOBAL: "full_attention"}


# --- checkpoint names (loading weights) --------------------------------------------------


def _granitemoe_names() -> Names:
    """GraniteMoe: the experts' gate and up fused in one stacked input_linear."""
    moe, fused = "block_sparse_moe", "block_sparse_moe.input_linear.weight"
    return llama_with(
        {
            "mlp.sublayer.router.proj.weight": Source(f"{moe}.router.layer.weight"),
            "mlp.sublayer.experts.gate": Source(fused, cut=first_expert_ff, experts=True),
            "mlp.sublayer.experts.up": Source(fused, cut=second_expert_ff, experts=True),
            "mlp.sublayer.experts.down": Source(f"{moe}.output_linear.weight", experts=True),
        }
    )


def _granitemoehybrid_names() -> Names:
    """Granite 4.0-H: attention (self_attn) or Mamba-2 (mamba) layers; routed experts
    (GraniteMoe's fused input_linear) beside shared_mlp, whose gate and up are one fused
    input_linear too; with no experts the shared MLP is the layer's MLP."""
    names = _granitemoe_names()
    layer = names.layer
    for prefix in ("mlp.sublayer.shared", "mlp.sublayer"):  # beside experts, or alone
        layer[f"{prefix}.gate.weight"] = Source("shared_mlp.input_linear.weight", cut=first_ff)
        layer[f"{prefix}.up.weight"] = Source("shared_mlp.input_linear.weight", cut=second_ff)
        layer[f"{prefix}.down.weight"] = Source("shared_mlp.output_linear.weight")
    layer |= mamba2_mixer("mamba")
    return names


# --- the families ----------------------------------------------------------------------

GRANITE = LLAMA.derive(
    "granite",
    classes="Granite",
    aliases=("minicpm",),
    released_form=_granite_from_minicpm,
    keys=(ROPE, *MULTIPLIERS),
    read=_read_granite,
    extras=frozenset({"residual_multiplier"}),
    logit_error=7.1e-08,
    function_fields=("architecture.attention.scale", "architecture.residual_multiplier"),
)
GRANITEMOE = GRANITE.derive(
    "granitemoe",
    classes="GraniteMoe",
    mlp_bias=False,
    keys=(Key("mlp_bias"), *EXPERTS),
    fixed=(("mlp.moe.normalize_top_k", True),),  # a softmax over the top-k logits
    names=_granitemoe_names,
    logit_error=1.4e-07,
)
# logit test: Mamba-2 and NoPE attention, experts and a shared MLP
GRANITEMOEHYBRID = GRANITEMOE.derive(
    "granitemoehybrid",
    classes="GraniteMoeHybrid",
    linear_layer="mamba2",
    type_aliases=(("mamba", "linear_attention"), ("attention", "full_attention")),
    read=_read_granitemoehybrid,
    kinds=("mamba2", "global"),
    keys=(  # read by its hook
        key_or("num_local_experts", "mlp.moe.n_experts", 0, read=False),
        Key("num_experts_per_tok", "mlp.moe.n_active", when=has_moe, read=False),
        key_or("shared_intermediate_size", "mlp.moe.shared_d_ff", lambda a: a.mlp.d_ff, read=False),
        Key("layer_types", out=lambda a: layer_kind_names(a, _HYBRID_LAYERS), read=False),
        replace(ROPE, when=_rope),
        Key(
            "position_embedding_type", "position.type", out=lambda a: "rope", when=_rope, read=False
        ),
        *HYBRID_MIXER,
    ),
    fixed=(*GRANITEMOE.fixed, ("mixers.mamba2.mlp", True)),
    free=("mlp.moe.n_shared", "position.rotary_fraction"),
    write=_granitemoehybrid,
    extras=frozenset({"mamba2", "residual_multiplier"}),
    names=_granitemoehybrid_names,
    logit_error=2.6e-07,
)
