"""Granite, Granite MoE and Granite 4.0 hybrids."""

from __future__ import annotations

from archdb.schema import (
    Activation,
    Architecture,
    LayerKind,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
)
from archdb_hf.draft import Draft, expand_mamba2, no_time_step_clamp, read_positive
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import (
    base_config,
    layer_kind_names,
    mamba2_config,
    need_activation,
    need_dense,
    need_llama_like,
    need_pattern,
    need_serial,
    need_softmax_attention,
    require,
    rope_config,
)
from archdb_hf.families.llama import EXPERTS, LLAMA
from archdb_hf.keymap import Key, whole
from archdb_hf.tensors import (
    LLAMA_TOP,
    PRE_NORMS,
    Names,
    Source,
    first_expert_ff,
    first_ff,
    llama_layer,
    second_expert_ff,
    second_ff,
)

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_granite(d: Draft) -> None:
    """Granite's four muP factors; GraniteConfig's defaults are 1.0 each (no 1/sqrt(d_head))."""
    factors = (
        ("embedding_multiplier", "architecture.embedding_multiplier"),
        ("residual_multiplier", "architecture.residual_multiplier"),
        ("attention_multiplier", "architecture.attention.scale"),
    )
    for key, path in factors:
        d.set(path, read_positive(d, key), d.origin_of(key))
    divisor = read_positive(d, "logits_scaling")
    d.set("architecture.logit_scale", 1.0 / divisor, d.origin_of("logits_scaling"))
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
        expand_mamba2(
            d, "GraniteMoeHybridMambaLayer", False, n_heads=128, expand=2, state=256, conv=4
        )
        no_time_step_clamp(d)
        d.read("mamba_chunk_size")  # the chunked kernel's block: no effect on outputs
    shared = d.read("shared_intermediate_size", default=1024)
    n_experts = d.read("num_local_experts", default=8)
    n_active = d.read("num_experts_per_tok", default=2)
    if n_experts:
        d.moe(n_experts=n_experts, n_active=n_active, n_shared=1, shared_d_ff=shared)
        d.set("architecture.mlp.moe.normalize_top_k", True, "family")  # softmax of the top-k
    else:  # the shared MLP is the layer's only MLP
        d.set("architecture.mlp.d_ff", shared, d.origin_of("shared_intermediate_size"))
    if d.read("position_embedding_type") != "rope":
        d.set("architecture.position.type", "none", d.origin_of("position_embedding_type"))
        d.clear("architecture.position.rope_theta")
        d.note(
            "architecture.position.type",
            "GraniteMoeHybridModel applies RoPE only when position_embedding_type is rope.",
        )


# --- card -> config (the reference) ------------------------------------------------------


def _multipliers(a: Architecture) -> dict:
    """Granite's muP factors: each the card's value, 1 (or 1/sqrt(d_head)) where null."""
    return {
        "embedding_multiplier": a.embedding_multiplier or 1.0,
        "residual_multiplier": a.residual_multiplier or 1.0,
        "attention_multiplier": a.attention.scale or a.head_dim_effective**-0.5,
        "logits_scaling": 1.0 / (a.logit_scale or 1.0),  # Granite divides by it
    }


def granite(a: Architecture) -> dict:
    """Llama's layout with the four multipliers."""
    need_llama_like(a)
    need_dense(a)
    need_pattern(a, LayerKind.GLOBAL)
    require(a.bias.qkv == a.bias.attn_out, "Granite's attention_bias covers q, k, v and o")
    extras = {"attention_bias": a.bias.qkv, "mlp_bias": a.bias.mlp}
    return base_config(a) | extras | rope_config(a) | _multipliers(a)


def granitemoe(a: Architecture) -> dict:
    """Mixtral's layout with Granite's multipliers; no MLP biases or shared experts."""
    need_llama_like(a)
    ref.need_bias(a, a.bias.qkv, a.bias.qkv, False)
    need_pattern(a, LayerKind.GLOBAL)
    moe = a.mlp.moe
    require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.layer_period == 1
        and moe.n_shared == 0
        and moe.normalize_top_k is not False,
        "every layer MoE, no shared experts, softmax over the top-k logits",
    )
    return (
        base_config(a)
        | {
            "attention_bias": a.bias.qkv,
            "num_local_experts": moe.n_experts,
            "num_experts_per_tok": moe.n_active,
        }
        | rope_config(a)
        | _multipliers(a)
    )


def granitemoehybrid(a: Architecture) -> dict:
    """Granite 4.0-H: Mamba-2 and attention layers, each with routed experts beside a
    shared MLP (or that MLP alone), Granite's factors, RoPE or no positions."""
    ref.need_norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    need_serial(a)
    need_activation(a, Activation.SWIGLU)
    need_softmax_attention(a)
    ref.need_position(a, PositionType.ROPE, PositionType.NONE)
    need_pattern(a, LayerKind.MAMBA2, LayerKind.GLOBAL)
    ref.need_bias(a, a.bias.qkv, a.bias.qkv, False)
    moe = a.mlp.moe
    require(
        moe is None
        or (
            moe.first_dense_layers == 0
            and moe.layer_period == 1
            and moe.n_shared == 1
            and moe.normalize_top_k is not False
        ),
        "a dense MLP, or every layer MoE with one shared MLP (softmax over the top-k logits)",
    )
    names = {LayerKind.MAMBA2: "linear_attention", LayerKind.GLOBAL: "full_attention"}
    out = (
        base_config(a)
        | _multipliers(a)
        | {"attention_bias": a.bias.qkv, "layer_types": layer_kind_names(a, names)}
    )
    if moe is None:
        out |= {"num_local_experts": 0, "shared_intermediate_size": a.mlp.d_ff}
    else:
        out |= {
            "num_local_experts": moe.n_experts,
            "num_experts_per_tok": moe.n_active,
            "shared_intermediate_size": moe.shared_d_ff,
        }
    if LayerKind.MAMBA2 in a.attention.layer_pattern:
        require(a.mixers.mamba2.mlp, "mixers.mamba2.mlp true")
        out |= mamba2_config(a, "mamba_")
    if a.position.type is PositionType.ROPE:
        out |= rope_config(a) | {"position_embedding_type": "rope"}
    return out


# --- checkpoint names (loading weights) --------------------------------------------------


def _granitemoe_names() -> Names:
    """GraniteMoe: the experts' gate and up fused in one stacked input_linear."""
    layer = llama_layer(PRE_NORMS)
    moe = "block_sparse_moe"
    layer |= {
        "mlp.sublayer.router.proj.weight": Source(f"{moe}.router.layer.weight"),
        "mlp.sublayer.experts.gate": Source(
            f"{moe}.input_linear.weight", cut=first_expert_ff, experts=True
        ),
        "mlp.sublayer.experts.up": Source(
            f"{moe}.input_linear.weight", cut=second_expert_ff, experts=True
        ),
        "mlp.sublayer.experts.down": Source(f"{moe}.output_linear.weight", experts=True),
    }
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _granitemoehybrid_names() -> Names:
    """Granite 4.0-H: attention (self_attn) or Mamba-2 (mamba) layers; routed experts
    (GraniteMoe's fused input_linear) beside shared_mlp, whose gate and up are one fused
    input_linear too; with no experts the shared MLP is the layer's MLP."""
    layer = _granitemoehybrid_mlp(_granitemoe_names().layer)
    mamba = {"in_proj.weight": "in_proj.weight", "in_proj.bias": "in_proj.bias",
             "conv1d.weight": "conv1d.weight", "conv1d.bias": "conv1d.bias",
             "dt_bias": "dt_bias", "A_log": "A_log", "D": "D", "norm_weight": "norm.weight",
             "out_proj.weight": "out_proj.weight", "out_proj.bias": "out_proj.bias"}  # fmt: skip
    for ours, theirs in mamba.items():
        layer[f"attn.sublayer.{ours}"] = Source(f"mamba.{theirs}")
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _granitemoehybrid_mlp(layer: dict[str, Source]) -> dict[str, Source]:
    shared = "shared_mlp"
    for prefix in ("mlp.sublayer.shared", "mlp.sublayer"):  # beside experts, or alone
        layer[f"{prefix}.gate.weight"] = Source(f"{shared}.input_linear.weight", cut=first_ff)
        layer[f"{prefix}.up.weight"] = Source(f"{shared}.input_linear.weight", cut=second_ff)
        layer[f"{prefix}.down.weight"] = Source(f"{shared}.output_linear.weight")
    return layer


# --- the families ----------------------------------------------------------------------

GRANITE = LLAMA.derive(
    "granite",
    layer="GraniteDecoderLayer",
    config_class="GraniteConfig",
    model_class="GraniteForCausalLM",
    read=_read_granite,
    write=whole(granite),
    extras=frozenset({"residual_multiplier"}),
    logit_error=7.1e-08,
    function_fields=("architecture.attention.scale", "architecture.residual_multiplier"),
)
GRANITEMOE = GRANITE.derive(
    "granitemoe",
    layer="GraniteMoeDecoderLayer",
    config_class="GraniteMoeConfig",
    model_class="GraniteMoeForCausalLM",
    mlp_bias=False,
    read=_read_granite,
    keys=EXPERTS,
    fixed=(("mlp.moe.normalize_top_k", True),),
    write=whole(granitemoe),
    names=_granitemoe_names,
    logit_error=1.4e-07,
)
# logit test: Mamba-2 and NoPE attention, experts and a shared MLP
GRANITEMOEHYBRID = GRANITEMOE.derive(
    "granitemoehybrid",
    layer="GraniteMoeHybridDecoderLayer",
    config_class="GraniteMoeHybridConfig",
    model_class="GraniteMoeHybridForCausalLM",
    linear_layer="mamba2",
    type_aliases=(("mamba", "linear_attention"), ("attention", "full_attention")),
    read=_read_granitemoehybrid,
    keys=(Key("num_local_experts"), Key("num_experts_per_tok")),  # read by its hook
    fixed=(),
    write=whole(granitemoehybrid),
    extras=frozenset({"mamba2", "residual_multiplier"}),
    names=_granitemoehybrid_names,
    logit_error=2.6e-07,
)
