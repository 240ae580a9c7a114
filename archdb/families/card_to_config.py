"""Card -> config: a card's architecture written as its transformers family's config.

For each model family that transformers implements, a writer (``FamilySpec.write``) gives
the card's architecture as that family's config (the way the released config.json would).
The tests and benchmarks build transformers' model from it (``archdb.testing.transformers``)
and archdb's counts and logits must equal it; ``archdb.fidelity`` asks whether the family
can represent a card at all.

A converter states the features its family's code fixes (Llama has no parallel blocks,
Gemma always ties its embeddings, GPT-J's head always has a bias...) and raises
``NotRepresentable`` when a card asks for something else, so a comparison never passes
by building a different model. It does *not* patch differences that are the card's to
fix (an OPT card without its two extra position rows builds, and the counts differ).

Pure Python: nothing here imports transformers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from archdb.plan.layout import embedding_width, learned_rows
from archdb.plan.mlp import CLAMPED_SWIGLU
from archdb.schema import (
    Activation,
    Architecture,
    AttentionVariant,
    GeluApproximation,
    GroupScore,
    Kind,
    LayerKind,
    Mamba2,
    Mamba2Norm,
    MambaInnerNorm,
    MoE,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
    QKNorm,
    RopeLayout,
    RopeScalingType,
    RouterScore,
)

if TYPE_CHECKING:
    from archdb.families.spec import FamilySpec


class NotRepresentable(ValueError):
    """The card asks for something the family's transformers code cannot build."""


# Optional mechanisms a family's code must build for a comparison to mean anything: a card
# using one is NotRepresentable by every reference that does not list it.
EXTRAS: dict[str, Callable[[Architecture], bool]] = {
    "sinks": lambda a: bool(a.attention.sinks),
    "output_gate": lambda a: a.attention.output_gate is not None,
    "mamba2": lambda a: LayerKind.MAMBA2 in a.attention.layer_pattern,
    "gated_deltanet": lambda a: LayerKind.GATED_DELTANET in a.attention.layer_pattern,
    "short_conv": lambda a: LayerKind.SHORT_CONV in a.attention.layer_pattern,
    "router_bias": lambda a: a.mlp.moe is not None and bool(a.mlp.moe.router_bias),
    "shared_gate": lambda a: a.mlp.moe is not None and bool(a.mlp.moe.shared_gate),
    "global_layers": lambda a: a.attention.global_layers is not None,
    "value_norm": lambda a: bool(a.attention.value_norm),
    "dense_beside": lambda a: a.mlp.moe is not None and a.mlp.moe.dense_beside_d_ff is not None,
    "router_scales": lambda a: a.mlp.moe is not None and bool(a.mlp.moe.router_scales),
    "layer_scalar": lambda a: bool(a.layer_scalar),
    "residual_multiplier": lambda a: a.residual_multiplier not in (None, 1.0),
    # router variants (archdb.plan.mlp.RouterSpec) beyond Mixtral's softmax top-k
    "sigmoid_scores": lambda a: _moe_has(a, lambda m: m.score_function is RouterScore.SIGMOID),
    "expert_groups": lambda a: _moe_has(a, lambda m: (m.n_groups or 1) > 1),
    "correction_bias": lambda a: _moe_has(a, lambda m: bool(m.score_correction_bias)),
    "routed_scale": lambda a: _moe_has(a, lambda m: (m.routed_scale or 1.0) != 1.0),
    "sparse": lambda a: a.attention.sparse is not None,
    "mamba": lambda a: LayerKind.MAMBA in a.attention.layer_pattern,
    "rg_lru": lambda a: LayerKind.RG_LRU in a.attention.layer_pattern,
    # Falcon-H1: attention beside Mamba-2, its mixer norm choices and muP factors
    "parallel_mamba2": lambda a: LayerKind.GLOBAL_MAMBA2 in a.attention.layer_pattern,
    "mamba2_norm": lambda a: (
        _mamba2_of(a) is not None and _mamba2_of(a).norm not in (None, Mamba2Norm.GATED)
    ),
    "sublayer_multipliers": lambda a: _sublayer_factors(a) != {},
    "kda": lambda a: LayerKind.KDA in a.attention.layer_pattern,
    # MiniMax-01: lightning attention, and the factors on the residual stream (alpha)
    "lightning": lambda a: LayerKind.LIGHTNING in a.attention.layer_pattern,
    "skip_multipliers": lambda a: (
        a.attention.skip_multiplier not in (None, 1.0) or a.mlp.skip_multiplier not in (None, 1.0)
    ),
    # Gemma 3n / Gemma 4 E2B and E4B: cross-layer KV sharing and per-layer embeddings
    "kv_sharing": lambda a: bool(a.attention.kv_shared_layers),
    "per_layer_embeddings": lambda a: a.per_layer_embeddings is not None,
    # Gemma 3n: AltUp's streams, LAuReL, gaussian top-k on the first MLP gates
    "altup": lambda a: a.altup is not None,
    "laurel": lambda a: a.laurel_rank is not None,
    "activation_sparsity": lambda a: a.mlp.activation_sparsity is not None,
    "qk_norm_after_rope": lambda a: bool(a.attention.qk_norm_after_rope),  # Hunyuan
    # Zamba2: weight-shared blocks, and its clamp of the Mamba-2 time step
    "shared_blocks": lambda a: a.shared_blocks is not None,
    "time_step_floor": lambda a: (
        _mamba2_of(a) is not None and _mamba2_of(a).time_step_floor is not None
    ),
    # LongCat-Flash: zero-computation experts and shortcut-connected MoE layers
    "zero_experts": lambda a: _moe_has(a, lambda m: bool(m.zero_experts)),
    "shortcut_moe": lambda a: _moe_has(a, lambda m: m.shortcut_dense_d_ff is not None),
}


def _mamba2_of(a: Architecture) -> Mamba2 | None:
    return a.mixers.mamba2 if a.mixers is not None else None


def _sublayer_factors(a: Architecture) -> dict[str, object]:
    """Falcon-H1's factors on sublayer inputs and outputs the card sets (other than 1)."""
    m = _mamba2_of(a)
    values = {
        "attention.input_multiplier": a.attention.input_multiplier,
        "attention.output_multiplier": a.attention.output_multiplier,
        "mlp.gate_multiplier": a.mlp.gate_multiplier,
        "mlp.output_multiplier": a.mlp.output_multiplier,
        "mamba2.input_multiplier": m.input_multiplier if m else None,
        "mamba2.output_multiplier": m.output_multiplier if m else None,
    }
    found: dict[str, object] = {k: v for k, v in values.items() if v not in (None, 1.0)}
    if m is not None and m.projection_multipliers and set(m.projection_multipliers) != {1.0}:
        found["mamba2.projection_multipliers"] = m.projection_multipliers
    return found


_ROUTERS = frozenset({"sigmoid_scores", "expert_groups", "correction_bias", "routed_scale"})


def _moe_has(a: Architecture, test: Callable[[MoE], bool]) -> bool:
    return a.mlp.moe is not None and test(a.mlp.moe)


def convert(arch: Architecture, model_type: str) -> dict:
    """The card as its family's transformers config; NotRepresentable when the family
    cannot build it (an optional mechanism it lacks, or a fixed choice the card differs on)."""
    from archdb.families.registry import SPECS

    spec = SPECS[model_type]
    check_extras(arch, spec)
    written = spec.write(arch)
    return written | function_keys(spec, arch, written)


def function_keys(spec: FamilySpec, a: Architecture, written: dict) -> dict:
    """The output-only choices every family's config keeps under a key of its own: the
    norm epsilon and the RoPE base, where the card records them (a writer that sets them
    itself wins)."""
    keys: dict = {}
    if spec.eps_key and a.norm.eps is not None and spec.eps_key not in written:
        keys[spec.eps_key] = a.norm.eps
    theta = a.position.rope_theta
    rope_written = {"rope_theta", "rope_parameters"} & set(written)
    if spec.rope_key and a.position.type is PositionType.ROPE and theta and not rope_written:
        keys[spec.rope_key] = {"rope_type": "default", "rope_theta": theta}
    return keys


def check_extras(a: Architecture, spec: FamilySpec) -> None:
    used = [name for name, uses in EXTRAS.items() if uses(a) and name not in spec.extras]
    _require(not used, f"transformers' {spec.model_type} has no {', '.join(used)}")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise NotRepresentable(message)


# --- shared checks --------------------------------------------------------------------------


def _norm(
    a: Architecture, kind: NormType, affine: NormAffine, position: NormPosition, final: bool = True
) -> None:
    n = a.norm
    _require(n.type is kind, f"norm.type must be {kind.value}")
    _require(n.affine is affine, f"norm.affine must be {affine.value}")
    _require(n.position is position, f"norm.position must be {position.value}")
    _require(n.final is final, f"norm.final must be {final}")


def _serial(a: Architecture) -> None:
    _require(not a.parallel_layers, "parallel_layers must be false")


def _parallel(a: Architecture, shared: bool) -> None:
    _require(bool(a.parallel_layers), "parallel_layers must be true")
    _require(bool(a.norm.shared_in_parallel) is shared, f"norm.shared_in_parallel must be {shared}")


def _act(a: Architecture, *allowed: Activation) -> None:
    _require(
        a.mlp.activation in allowed,
        f"mlp.activation must be one of {', '.join(x.value for x in allowed)}",
    )


def _softmax_attention(a: Architecture, qk: QKNorm = QKNorm.NONE) -> None:
    _require(a.attention.variant is AttentionVariant.SOFTMAX, "attention.variant must be softmax")
    _require(a.attention.qk_norm is qk, f"attention.qk_norm must be {qk.value}")


def _position(a: Architecture, *allowed: PositionType) -> None:
    _require(
        a.position.type in allowed,
        f"position.type must be one of {', '.join(x.value for x in allowed)}",
    )


def _dense(a: Architecture) -> None:
    _require(a.mlp.moe is None, "a dense MLP (mlp.moe null)")


def _pattern(a: Architecture, *allowed: LayerKind) -> None:
    _require(
        set(a.attention.layer_pattern) <= set(allowed),
        f"layer_pattern may use only {', '.join(x.value for x in allowed)}",
    )


def _bias(a: Architecture, qkv: bool, out: bool, mlp: bool, lm_head: bool = False) -> None:
    b = a.bias
    got = (b.qkv, b.attn_out, b.mlp, bool(b.lm_head))
    _require(
        got == (qkv, out, mlp, lm_head),
        f"bias (qkv, attn_out, mlp, lm_head) must be {(qkv, out, mlp, lm_head)}, got {got}",
    )


def _base(a: Architecture) -> dict:
    """The Llama-style config fields most families share."""
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "intermediate_size": a.mlp.d_ff,
        "num_hidden_layers": a.n_layers,
        "num_attention_heads": a.attention.n_heads,
        "num_key_value_heads": a.attention.n_kv_heads,
        "head_dim": a.head_dim_effective,
        "max_position_embeddings": a.context_length,
        "tie_word_embeddings": a.tied_embeddings,
    }


def _llama_like(a: Architecture, qk: QKNorm = QKNorm.NONE) -> None:
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _softmax_attention(a, qk)
    _position(a, PositionType.ROPE)


# --- converters -----------------------------------------------------------------------------


def llama(a: Architecture) -> dict:
    _llama_like(a)
    _dense(a)
    _pattern(a, LayerKind.GLOBAL)
    _require(a.bias.qkv == a.bias.attn_out, "Llama's attention_bias covers q, k, v and o alike")
    config = _base(a) | {"attention_bias": a.bias.qkv, "mlp_bias": a.bias.mlp}
    if a.position.rope_scaling is not None:  # Llama 3.1: rope_type llama3 beside the base
        rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
        config["rope_parameters"] = rope | _rope_scaling(a)
    return config


def mistral(a: Architecture) -> dict:
    _llama_like(a)
    _dense(a)
    _require(len(set(a.attention.layer_pattern)) == 1, "one kind of layer: local or global")
    _pattern(a, LayerKind.LOCAL, LayerKind.GLOBAL)
    _bias(a, False, False, False)
    return _base(a) | {"sliding_window": a.attention.sliding_window}


def phi3(a: Architecture) -> dict:
    """Phi-3 and Phi-4: Llama's layout with fused qkv and gate/up (the same counts)."""
    return mistral(a) | {"partial_rotary_factor": a.position.rotary_fraction or 1.0}


def mixtral(a: Architecture) -> dict:
    _llama_like(a)
    _bias(a, False, False, False)
    moe = a.mlp.moe
    _require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.layer_period == 1
        and moe.n_shared == 0,
        "every layer MoE, no shared experts",
    )
    return _base(a) | {
        "num_local_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "sliding_window": a.attention.sliding_window,
    }


def qwen2(a: Architecture) -> dict:
    _llama_like(a)
    _dense(a)
    _bias(a, True, False, False)  # Qwen 2 hard-codes bias on q, k, v only
    return _base(a)


def qwen3(a: Architecture) -> dict:
    _llama_like(a, QKNorm.PER_HEAD)
    _dense(a)
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    return _base(a) | {"attention_bias": a.bias.qkv}


def qwen3_moe(a: Architecture) -> dict:
    _llama_like(a, QKNorm.PER_HEAD)
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    moe = a.mlp.moe
    _require(
        moe is not None and moe.first_dense_layers == 0 and moe.n_shared == 0,
        "MoE from the first layer, no shared experts",
    )
    return _base(a) | {
        "attention_bias": a.bias.qkv,
        "moe_intermediate_size": a.mlp.d_ff,
        "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
        "num_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "decoder_sparse_step": moe.layer_period,
        "norm_topk_prob": moe.normalize_top_k is not False,  # null: the builder normalizes
    }


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
    _llama_like(a)
    _dense(a)
    _pattern(a, LayerKind.GLOBAL)
    _require(a.bias.qkv == a.bias.attn_out, "Granite's attention_bias covers q, k, v and o")
    extras = {"attention_bias": a.bias.qkv, "mlp_bias": a.bias.mlp}
    return _base(a) | extras | _rope(a) | _multipliers(a)


def granitemoe(a: Architecture) -> dict:
    """Mixtral's layout with Granite's multipliers; no MLP biases or shared experts."""
    _llama_like(a)
    _bias(a, a.bias.qkv, a.bias.qkv, False)
    _pattern(a, LayerKind.GLOBAL)
    moe = a.mlp.moe
    _require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.layer_period == 1
        and moe.n_shared == 0
        and moe.normalize_top_k is not False,
        "every layer MoE, no shared experts, softmax over the top-k logits",
    )
    return (
        _base(a)
        | {
            "attention_bias": a.bias.qkv,
            "num_local_experts": moe.n_experts,
            "num_experts_per_tok": moe.n_active,
        }
        | _rope(a)
        | _multipliers(a)
    )


def _lfm2_common(a: Architecture) -> dict:
    """LFM2's shared layout: Llama's pre-norm block with per-head QK norm, no biases in
    attention or MLP, short-conv layers where the pattern says (one conv_bias flag), the
    head width d_model / n_heads (the config has no head_dim)."""
    _llama_like(a, QKNorm.PER_HEAD)
    _pattern(a, LayerKind.SHORT_CONV, LayerKind.GLOBAL)
    _bias(a, False, False, False)
    _require(
        a.head_dim_effective * a.attention.n_heads == a.d_model,
        "attention.head_dim d_model / n_heads (LFM2's config has no head_dim)",
    )
    c = a.mixers.short_conv if a.mixers is not None else None
    _require(c is None or c.mlp, "mixers.short_conv.mlp true: every LFM2 layer has the MLP")
    names = {LayerKind.SHORT_CONV: "conv", LayerKind.GLOBAL: "full_attention"}
    base = {k: v for k, v in _base(a).items() if k != "head_dim"}
    return (
        base
        | _rope(a)
        | {
            "layer_types": _kinds(a, names),
            "conv_L_cache": c.conv_kernel if c is not None else 3,
            "conv_bias": c.bias if c is not None else False,
        }
    )


def lfm2(a: Architecture) -> dict:
    _dense(a)
    return _lfm2_common(a) | {"block_auto_adjust_ff_dim": False}  # d_ff is the width used


def lfm2_moe(a: Architecture) -> dict:
    """LFM2-MoE: dense MLPs in the first layers, then routed experts, no shared expert; a
    sigmoid router whose expert bias only chooses, renormalized, scaled (no groups)."""
    common = _lfm2_common(a)
    moe = a.mlp.moe
    _require(
        moe is not None and moe.layer_period == 1 and moe.n_shared == 0,
        "MoE after the first dense layers, every layer, no shared experts",
    )
    _require(moe.score_function is not RouterScore.SOFTMAX, "mlp.moe.score_function sigmoid")
    _require((moe.n_groups or 1) == 1, "no expert groups")
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


def minimax(a: Architecture) -> dict:
    """MiniMax-01: lightning layers and softmax attention (layer_types), each followed by
    Mixtral's MoE; the residual taken after each norm (normed-skip) with alpha (skip) and
    beta (output) factors per sublayer kind. Lightning's heads and head width are the
    attention's (one num_attention_heads, one head_dim). transformers' MiniMax rotates the
    whole head (its rotary ignores partial_rotary_factor): counts do not depend on it."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.NORMED_SKIP)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _softmax_attention(a)
    _position(a, PositionType.ROPE)
    _pattern(a, LayerKind.LIGHTNING, LayerKind.GLOBAL)
    _bias(a, False, False, False)
    others = sorted(k for k in _sublayer_factors(a) if k not in _MINIMAX_BETAS)
    _require(not others, f"no {', '.join(others)} (MiniMax has none)")
    moe = a.mlp.moe
    _require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.layer_period == 1
        and moe.n_shared == 0,
        "every layer MoE, no shared experts",
    )
    li = a.mixers.lightning if a.mixers is not None else None
    factors: dict[str, float] = {}
    if li is not None:
        _require(li.mlp, "mixers.lightning.mlp true: every MiniMax layer has the MoE")
        _require(
            (li.n_heads, li.head_dim) == (a.attention.n_heads, a.head_dim_effective),
            "mixers.lightning n_heads and head_dim equal to attention's",
        )
        factors = {
            "linear_attn_alpha_factor": li.skip_multiplier or 1.0,
            "linear_attn_beta_factor": li.output_multiplier or 1.0,
        }
    names = {LayerKind.LIGHTNING: "linear_attention", LayerKind.GLOBAL: "full_attention"}
    return (
        _base(a)
        | _rope(a)
        | factors
        | {
            "layer_types": _kinds(a, names),
            "num_local_experts": moe.n_experts,
            "num_experts_per_tok": moe.n_active,
            "full_attn_alpha_factor": a.attention.skip_multiplier or 1.0,
            "full_attn_beta_factor": a.attention.output_multiplier or 1.0,
            "mlp_alpha_factor": a.mlp.skip_multiplier or 1.0,
            "mlp_beta_factor": a.mlp.output_multiplier or 1.0,
        }
    )


_MINIMAX_BETAS = frozenset({"attention.output_multiplier", "mlp.output_multiplier"})


def _rope(a: Architecture) -> dict:
    """RoPE base and rotating share, as transformers 5 spells them."""
    fraction = a.position.rotary_fraction
    params = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
    return {"rope_parameters": params | ({"partial_rotary_factor": fraction} if fraction else {})}


def _kinds(a: Architecture, names: dict[LayerKind, str]) -> list[str]:
    """Every layer's transformers layer type."""
    return [names[k] for k in a.layer_kinds()]


def _mamba2_sizes(a: Architecture, prefix: str) -> dict:
    m = a.mixers.mamba2 if a.mixers is not None else None
    _require(m is not None, "mixers.mamba2 sizes")
    inner = m.n_heads * m.head_dim
    _require(inner % a.d_model == 0, "the inner width a whole multiple of d_model (expand)")
    names = {
        "n_heads": ("num_heads", "mamba_n_heads"),
        "head_dim": ("head_dim", "mamba_d_head"),
        "state_size": ("state_size", "mamba_d_state"),
        "n_groups": ("n_groups", "mamba_n_groups"),
        "conv_kernel": ("conv_kernel", "mamba_d_conv"),
        "conv_bias": ("use_conv_bias", "mamba_conv_bias"),
        "proj_bias": ("use_bias", "mamba_proj_bias"),
    }
    return _mixer_sizes(m, names, prefix, inner // a.d_model)


def _mixer_sizes(
    mixer: object, names: dict[str, tuple[str, str]], prefix: str, expand: int
) -> dict:
    """A mixer's sizes under the config's names: (its own config's, a hybrid's
    "mamba_"-prefixed), plus the expansion factor of its inner width."""
    out = {keys[1] if prefix else keys[0]: getattr(mixer, name) for name, keys in names.items()}
    out["mamba_expand" if prefix else "expand"] = expand
    return out


def _mixer_only(a: Architecture, kind: LayerKind, mixer_mlp: bool) -> dict:
    """A stack of one mixer kind alone (Mamba, Mamba-2): pre-RMSNorm, mixer, residual per
    layer, no attention, no MLP; the sizes every such config holds."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _require(a.attention.layer_pattern == [kind], f"layer_pattern [{kind.value}]")
    name = kind.value.replace("-", "_")
    _require(not mixer_mlp, f"mixers.{name}.mlp false: a layer is the mixer alone")
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "tie_word_embeddings": a.tied_embeddings,
    }


def mamba2(a: Architecture) -> dict:
    return _mixer_only(a, LayerKind.MAMBA2, a.mixers.mamba2.mlp) | _mamba2_sizes(a, "")


def bamba(a: Architecture) -> dict:
    _llama_like(a)
    _softmax_attention(a)
    _dense(a)
    _act(a, Activation.SWIGLU)
    _pattern(a, LayerKind.MAMBA2, LayerKind.GLOBAL)
    _require(a.mixers is not None and a.mixers.mamba2.mlp, "mixers.mamba2.mlp true")
    _require(a.bias.qkv == a.bias.attn_out, "attention_bias covers q,k,v,o")
    indices = [i for i, k in enumerate(a.layer_kinds()) if k is LayerKind.GLOBAL]
    return (
        _base(a)
        | {"attention_bias": a.bias.qkv, "mlp_bias": a.bias.mlp, "attn_layer_indices": indices}
        | _mamba2_sizes(a, "mamba_")
        | _rope(a)
    )


# hybrid_override_pattern: one character a layer
_NEMOTRON_H_CODES = {
    LayerKind.MAMBA2: "M",
    LayerKind.GLOBAL: "*",
    LayerKind.MLP: "-",
    LayerKind.MOE: "E",
}


def nemotron_h(a: Architecture) -> dict:
    """Nemotron-H and Nemotron 3: every layer one pre-normed sublayer (M, *, -, E)."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SQUARED_RELU)
    _position(a, PositionType.NONE)
    _pattern(a, *_NEMOTRON_H_CODES)
    kinds = set(a.attention.layer_pattern)
    m = a.mixers.mamba2 if a.mixers is not None else None
    _require(m is None or not m.mlp, "mixers.mamba2.mlp false: a layer is one sublayer")
    if LayerKind.GLOBAL in kinds:
        _softmax_attention(a)
        _require(a.attention.mlp is False, "attention.mlp false: a layer is one sublayer")
    _require(not a.bias.qkv and not a.bias.attn_out, "attention without biases (hard-coded)")
    _require(not a.tied_embeddings, "a separate output head (NemotronH never ties it)")
    out = {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "intermediate_size": a.mlp.d_ff,
        "hybrid_override_pattern": "".join(_NEMOTRON_H_CODES[k] for k in a.layer_kinds()),
        "num_attention_heads": a.attention.n_heads or 1,
        "num_key_value_heads": a.attention.n_kv_heads or 1,
        "head_dim": a.head_dim_effective or 1,
        "max_position_embeddings": a.context_length,
        "tie_word_embeddings": a.tied_embeddings,
        "mlp_bias": bool(a.bias.mlp),
        "mlp_hidden_act": "relu2",
    }
    if m is not None:
        out |= {
            "mamba_num_heads": m.n_heads,
            "mamba_head_dim": m.head_dim,
            "ssm_state_size": m.state_size,
            "n_groups": m.n_groups,
            "conv_kernel": m.conv_kernel,
            "use_conv_bias": m.conv_bias,
            "use_bias": m.proj_bias,
        }
    moe = a.mlp.moe
    if moe is not None:
        _require(moe.n_shared == 1, "one shared expert (transformers always builds it)")
        _require(not a.bias.mlp, "no MLP biases: transformers' experts have none")
        _sigmoid_router(moe)  # NemotronHTopkRouter is DeepSeek-V3's
        out |= {
            "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
            "moe_intermediate_size": a.mlp.d_ff,
            "moe_shared_expert_intermediate_size": moe.shared_d_ff,
            "n_routed_experts": moe.n_experts,
            "num_experts_per_tok": moe.n_active,
            "n_shared_experts": 1,
            "n_group": moe.n_groups or 1,
            "topk_group": moe.top_k_groups or 1,
            "routed_scaling_factor": moe.routed_scale or 1.0,
            "norm_topk_prob": moe.normalize_top_k is not False,
        }
    return out


def granitemoehybrid(a: Architecture) -> dict:
    """Granite 4.0-H: Mamba-2 and attention layers, each with routed experts beside a
    shared MLP (or that MLP alone), Granite's factors, RoPE or no positions."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _softmax_attention(a)
    _position(a, PositionType.ROPE, PositionType.NONE)
    _pattern(a, LayerKind.MAMBA2, LayerKind.GLOBAL)
    _bias(a, a.bias.qkv, a.bias.qkv, False)
    moe = a.mlp.moe
    _require(
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
        _base(a) | _multipliers(a) | {"attention_bias": a.bias.qkv, "layer_types": _kinds(a, names)}
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
        _require(a.mixers.mamba2.mlp, "mixers.mamba2.mlp true")
        out |= _mamba2_sizes(a, "mamba_")
    if a.position.type is PositionType.ROPE:
        out |= _rope(a) | {"position_embedding_type": "rope"}
    return out


def falcon_h1(a: Architecture) -> dict:
    """Falcon-H1: attention beside Mamba-2 in every layer, a SwiGLU MLP, muP factors."""
    _llama_like(a)
    _dense(a)
    _pattern(a, LayerKind.GLOBAL_MAMBA2)
    _require(a.bias.qkv == a.bias.attn_out, "attention_bias covers q, k, v and o")
    m = _mamba2_of(a)
    _require(m is not None, "mixers.mamba2 sizes")
    head_dim = a.head_dim_effective
    norm = m.norm or Mamba2Norm.GATED
    return (
        _base(a)
        | {
            "attention_bias": a.bias.qkv,
            "mlp_bias": a.bias.mlp,
            "mamba_d_ssm": m.n_heads * m.head_dim,
            "mamba_n_heads": m.n_heads,
            "mamba_d_head": m.head_dim,
            "mamba_d_state": m.state_size,
            "mamba_n_groups": m.n_groups,
            "mamba_d_conv": m.conv_kernel,
            "mamba_conv_bias": m.conv_bias,
            "mamba_proj_bias": m.proj_bias,
            "projectors_bias": m.proj_bias,
            "mamba_rms_norm": norm is not Mamba2Norm.NONE,
            "mamba_norm_before_gate": norm is Mamba2Norm.BEFORE_GATE,
            "rms_norm_eps": a.norm.eps or 1e-5,
            "embedding_multiplier": a.embedding_multiplier or 1.0,
            "lm_head_multiplier": a.logit_scale or 1.0,
            # FalconH1 scales keys by key_multiplier and scores by 1/sqrt(head_dim)
            "key_multiplier": (a.attention.scale or head_dim**-0.5) * math.sqrt(head_dim),
            "attention_in_multiplier": a.attention.input_multiplier or 1.0,
            "attention_out_multiplier": a.attention.output_multiplier or 1.0,
            "ssm_in_multiplier": m.input_multiplier or 1.0,
            "ssm_out_multiplier": m.output_multiplier or 1.0,
            "ssm_multipliers": list(m.projection_multipliers or [1.0] * 5),
            "mlp_multipliers": [a.mlp.gate_multiplier or 1.0, a.mlp.output_multiplier or 1.0],
        }
        | _rope(a)
    )


def _mamba_sizes(a: Architecture, prefix: str, inner_norm: MambaInnerNorm) -> dict:
    """Mamba-1 sizes as MambaConfig (prefix "") or JambaConfig (prefix "mamba_") names."""
    m = a.mixers.mamba if a.mixers is not None else None
    _require(m is not None, "mixers.mamba sizes")
    _require(m.d_inner % a.d_model == 0, "d_inner a whole multiple of d_model (expand)")
    _require(
        (m.inner_norm or MambaInnerNorm.NONE) is inner_norm,
        f"mixers.mamba.inner_norm must be {inner_norm.value}",
    )
    names = {
        "state_size": ("state_size", "mamba_d_state"),
        "conv_kernel": ("conv_kernel", "mamba_d_conv"),
        "dt_rank": ("time_step_rank", "mamba_dt_rank"),
        "conv_bias": ("use_conv_bias", "mamba_conv_bias"),
        "proj_bias": ("use_bias", "mamba_proj_bias"),
    }
    return _mixer_sizes(m, names, prefix, m.d_inner // a.d_model)


def _mamba_only(a: Architecture, inner_norm: MambaInnerNorm) -> dict:
    """Mamba and Falcon Mamba: norm, mixer, residual per layer; no attention, no MLP."""
    base = _mixer_only(a, LayerKind.MAMBA, a.mixers.mamba.mlp)
    return base | {"layer_norm_epsilon": a.norm.eps or 1e-5} | _mamba_sizes(a, "", inner_norm)


def mamba(a: Architecture) -> dict:
    return _mamba_only(a, MambaInnerNorm.NONE)


def falcon_mamba(a: Architecture) -> dict:
    """Mamba's layout with parameter-free RMSNorms on dt, B and C (mixer_rms_eps)."""
    eps = a.mixers.mamba.inner_norm_eps if a.mixers and a.mixers.mamba else None
    return _mamba_only(a, MambaInnerNorm.RMS) | {"mixer_rms_eps": eps or 1e-6}


def _jamba_experts(a: Architecture) -> dict:
    """Jamba's MoE layers are those with i % expert_layer_period == expert_layer_offset."""
    moe = a.mlp.moe
    if moe is None:
        return {"num_experts": 1, "expert_layer_period": 1, "expert_layer_offset": 0}
    _require(
        moe.first_dense_layers == 0
        and moe.n_shared == 0
        and moe.dense_d_ff in (None, a.mlp.d_ff)
        and moe.normalize_top_k is False
        and not moe.router_bias,
        "MoE every layer_period-th layer from the first, no shared experts, dense width "
        "d_ff, top-k weights left unnormalized, no router bias",
    )
    return {
        "num_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "expert_layer_period": moe.layer_period,
        "expert_layer_offset": moe.layer_period - 1,
    }


def jamba(a: Architecture) -> dict:
    """Mamba-1 layers (scaled dt/B/C norms) and attention without positions, 1 in
    attn_layer_period; every layer has the MLP, MoE every expert_layer_period-th."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _softmax_attention(a)
    _position(a, PositionType.NONE)
    _bias(a, False, False, False)
    _pattern(a, LayerKind.MAMBA, LayerKind.GLOBAL)
    pattern = a.attention.layer_pattern
    _require(pattern.count(LayerKind.GLOBAL) == 1, "one attention layer per pattern period")
    _require(a.mixers is not None and a.mixers.mamba.mlp, "mixers.mamba.mlp true")
    _require(
        a.head_dim_effective * a.attention.n_heads == a.d_model, "head_dim = d_model / n_heads"
    )
    eps = a.norm.eps or 1e-6
    _require((a.mixers.mamba.inner_norm_eps or 1e-6) == eps, "the dt/B/C norms share rms_norm_eps")
    return (
        _base(a)
        | {
            "attn_layer_period": len(pattern),
            "attn_layer_offset": pattern.index(LayerKind.GLOBAL),
            "rms_norm_eps": eps,
        }
        | _jamba_experts(a)
        | _mamba_sizes(a, "mamba_", MambaInnerNorm.RMS_SCALED)
    )


def recurrent_gemma(a: Architecture) -> dict:
    """Griffin's blocks (RecurrentGemma): RG-LRU layers and local attention tiled by
    block_types; pre-norm (1 + w) RMSNorms; a GeGLU MLP with biases (intermediate_size is
    both branches); attention with an output bias, q/k/v biased by attention_bias; head
    width d_model / n_heads; one head count for the attention and the RG-LRU's gate blocks."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.GEGLU)
    _dense(a)
    _pattern(a, LayerKind.RG_LRU, LayerKind.LOCAL)
    _bias(a, a.bias.qkv, True, True)
    rg = a.mixers.rg_lru if a.mixers is not None else None
    _require(rg is None or rg.mlp, "mixers.rg_lru.mlp true: every layer has the MLP")
    heads = a.attention.n_heads if a.has_attention() else rg.n_heads
    _require(rg is None or rg.n_heads == heads, "mixers.rg_lru.n_heads = attention.n_heads")
    config = {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "intermediate_size": 2 * a.mlp.d_ff,
        "num_hidden_layers": a.n_layers,
        "num_attention_heads": heads,
        "tie_word_embeddings": a.tied_embeddings,
        "block_types": _kinds_of(a.attention.layer_pattern),
    }
    if rg is not None:
        config |= {"lru_width": rg.lru_width, "conv1d_width": rg.conv_kernel}
    _require(bool(a.final_logit_softcap), "final_logit_softcap: RecurrentGemma always caps")
    config["logits_soft_cap"] = a.final_logit_softcap
    if a.has_attention():
        _softmax_attention(a)
        _position(a, PositionType.ROPE)
        _require(
            a.head_dim_effective * heads == a.d_model,
            "attention.head_dim d_model / n_heads (the config has no head_dim)",
        )
        config |= _rope(a) | {
            "num_key_value_heads": a.attention.n_kv_heads,
            "attention_window_size": a.attention.sliding_window,
            "attention_bias": a.bias.qkv,
        }
        fraction = a.position.rotary_fraction or 1.0
        config["rope_parameters"]["partial_rotary_factor"] = fraction  # the class's default: 0.5
    return config


def _kinds_of(pattern: list[LayerKind]) -> list[str]:
    """RecurrentGemma's block_types, tiled over the layers as the card's pattern is."""
    return ["recurrent" if k is LayerKind.RG_LRU else "attention" for k in pattern]


def gpt_oss(a: Architecture) -> dict:
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.CLAMPED_SWIGLU)
    _softmax_attention(a)
    _position(a, PositionType.ROPE)
    _require(not a.position.rotary_fraction, "every head dim rotates")
    _pattern(a, LayerKind.LOCAL, LayerKind.GLOBAL)
    _require(bool(a.attention.sinks), "attention.sinks: gpt-oss always has them")
    _require(a.bias.qkv == a.bias.attn_out and a.bias.mlp, "attention_bias; biased experts")
    moe = a.mlp.moe
    _require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.layer_period == 1
        and moe.n_shared == 0
        and bool(moe.router_bias)
        and moe.normalize_top_k is not False,
        "every layer MoE with a biased router (softmax over the top k), no shared experts",
    )
    names = {LayerKind.LOCAL: "sliding_attention", LayerKind.GLOBAL: "full_attention"}
    rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
    return _base(a) | {
        "attention_bias": a.bias.qkv,
        "num_local_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "sliding_window": a.attention.sliding_window,
        "layer_types": _kinds(a, names),
        "rope_parameters": rope | _rope_scaling(a),
        "swiglu_limit": a.mlp.swiglu_limit or CLAMPED_SWIGLU.limit,
        "swiglu_alpha": a.mlp.swiglu_alpha or CLAMPED_SWIGLU.alpha,
        "rms_norm_eps": a.norm.eps or 1e-5,
    }


def _rope_scaling(a: Architecture) -> dict:
    """The card's RoPE scaling as transformers' rope_parameters keys (none: {})."""
    s = a.position.rope_scaling
    if s is None:
        return {}
    keys = {
        "original_context": "original_max_position_embeddings",
        "low_freq_factor": "low_freq_factor",
        "high_freq_factor": "high_freq_factor",
        "beta_fast": "beta_fast",
        "beta_slow": "beta_slow",
        "truncate": "truncate",
    }
    out = {"rope_type": s.type.value, "factor": s.factor}
    given = {key: getattr(s, name) for name, key in keys.items()}
    return out | {key: value for key, value in given.items() if value is not None}


def apertus(a: Architecture) -> dict:
    """Apertus: Llama's layout with per-head QK norms and an up/xIELU/down MLP."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.XIELU)
    _softmax_attention(a, QKNorm.PER_HEAD)
    _position(a, PositionType.ROPE)
    _require(not a.position.rotary_fraction, "every head dim rotates")
    _dense(a)
    _pattern(a, LayerKind.GLOBAL)
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias; no MLP bias")
    rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 12_000_000.0}
    return _base(a) | {
        "attention_bias": a.bias.qkv,
        "hidden_act": "xielu",
        "rope_parameters": rope | _rope_scaling(a),
        "rms_norm_eps": a.norm.eps or 1e-5,
    }


def qwen3_next(a: Architecture) -> dict:
    config = _gated_hybrid(a)
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
    _require(
        moe is not None
        and moe.first_dense_layers == 0
        and moe.n_shared == 1
        and bool(moe.shared_gate),
        "MoE from the first layer with one gated shared expert",
    )
    return moe


def _gated_hybrid(a: Architecture) -> dict:
    """Qwen3-Next's and Qwen3.5's layers: Gated DeltaNet and gated attention (the config
    keys both families share)."""
    _llama_like(a, QKNorm.PER_HEAD)
    _act(a, Activation.SWIGLU)
    _pattern(a, LayerKind.GATED_DELTANET, LayerKind.GLOBAL)
    _require(a.attention.output_gate == "elementwise", "attention.output_gate elementwise")
    _bias(a, False, False, False)
    g = a.mixers.gated_deltanet if a.mixers is not None else None
    names = {LayerKind.GATED_DELTANET: "linear_attention", LayerKind.GLOBAL: "full_attention"}
    sizes = {}
    if g is not None:
        _require(g.mlp, "mixers.gated_deltanet.mlp true")
        sizes = {
            "linear_num_key_heads": g.n_key_heads,
            "linear_num_value_heads": g.n_value_heads,
            "linear_key_head_dim": g.key_head_dim,
            "linear_value_head_dim": g.value_head_dim,
            "linear_conv_kernel_dim": g.conv_kernel,
        }
    mtp = _mtp_modules(a, "mtp_num_hidden_layers")
    return _base(a) | {"layer_types": _kinds(a, names)} | sizes | _rope(a) | mtp


def qwen3_5_text(a: Architecture) -> dict:
    """Qwen3.5 (dense): the hybrid layers, each with a dense SwiGLU MLP."""
    _dense(a)
    return _gated_hybrid(a)


def qwen3_5_moe_text(a: Architecture) -> dict:
    """Qwen3.5 MoE: experts and a gated shared expert on every layer, top k renormalized."""
    config = _gated_hybrid(a)
    moe = _gated_shared_moe(a)
    _require(
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


def kimi_linear(a: Architecture) -> dict:
    """Kimi Linear: KDA layers and MLA layers without positions (NoPE; the shared key part
    qk_rope_head_dim is still projected, never rotated); DeepSeek-V3's MoE and router
    after dense first layers. transformers fixes both KDA gate ranks to head_dim and always
    gates the output."""
    _pattern(a, LayerKind.KDA, LayerKind.GLOBAL)
    _position(a, PositionType.NONE)
    config = _deepseek_moe(a)
    _sigmoid_router(a.mlp.moe)
    kda = a.mixers.kda if a.mixers is not None else None
    sizes = {}
    if kda is not None:
        _require(kda.mlp, "mixers.kda.mlp true: every Kimi Linear layer has its MLP")
        _require(kda.decay_rank == kda.head_dim, "mixers.kda.decay_rank equal to head_dim")
        _require(
            kda.output_gate and kda.output_gate_rank == kda.head_dim,
            "mixers.kda.output_gate true with output_gate_rank equal to head_dim",
        )
        sizes = {
            "linear_num_heads": kda.n_heads,
            "linear_head_dim": kda.head_dim,
            "linear_conv_kernel_dim": kda.conv_kernel,
        }
    moe = a.mlp.moe
    first = moe.first_dense_layers
    names = {LayerKind.KDA: "linear_attention", LayerKind.GLOBAL: "full_attention"}
    return (
        _base(a)
        | _latent(a)
        | sizes
        | {
            "intermediate_size": config["intermediate_size"],
            "moe_intermediate_size": a.mlp.d_ff,
            "num_local_experts": moe.n_experts,
            "num_experts_per_tok": moe.n_active,
            "n_shared_experts": config["n_shared_experts"],
            "n_group": config["n_group"],
            "topk_group": config["topk_group"],
            "routed_scaling_factor": config["routed_scaling_factor"],
            "norm_topk_prob": moe.normalize_top_k is not False,
            "layer_types": _kinds(a, names),
            "mlp_layer_types": ["dense"] * first + ["sparse"] * (a.n_layers - first),
            "rms_norm_eps": a.norm.eps or 1e-5,
        }
    )


def gemma(a: Architecture) -> dict:
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.GEGLU)
    _softmax_attention(a)
    _dense(a)
    _bias(a, False, False, False)
    _require(bool(a.tied_embeddings), "Gemma ties its embeddings")
    return _base(a)


def gemma2(a: Architecture, qk: QKNorm = QKNorm.NONE) -> dict:
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.DOUBLE)
    _serial(a)
    _act(a, Activation.GEGLU)
    _softmax_attention(a, qk)
    _dense(a)
    _bias(a, False, False, False)
    _require(bool(a.tied_embeddings), "Gemma ties its embeddings")
    _pattern(a, LayerKind.LOCAL, LayerKind.GLOBAL)
    # the code scales queries by query_pre_attn_scalar ** -0.5, an int in the config class
    scale = a.attention.scale
    scalar = scale**-2 if scale is not None else a.head_dim_effective
    _require(
        math.isclose(scalar, round(scalar), rel_tol=1e-9),
        "attention.scale must be 1/sqrt(n) for a whole n (query_pre_attn_scalar)",
    )
    return _base(a) | {
        "sliding_window": a.attention.sliding_window or 4096,
        "layer_types": _layer_types(a),
        "query_pre_attn_scalar": round(scalar),
        "attn_logit_softcapping": a.attention.logit_softcap,
        "final_logit_softcapping": a.final_logit_softcap,
    }


def gemma3_text(a: Architecture) -> dict:
    """Gemma 2 with per-head QK norms and a RoPE block per layer type: the scaling on the
    full layers (rope_scaling goes there only), the sliding layers at their own base."""
    config = gemma2(a, QKNorm.PER_HEAD)
    pos = a.position
    _require(
        pos.rope_scaling is None
        or LayerKind.LOCAL not in a.layer_kinds()
        or pos.rope_theta_local is not None,
        "Gemma 3 scales RoPE on full layers only: local layers need rope_theta_local",
    )
    theta = pos.rope_theta or 10000.0
    full = {"rope_type": "default", "rope_theta": theta} | _rope_scaling(a)
    sliding = {"rope_type": "default", "rope_theta": pos.rope_theta_local or theta}
    return config | {"rope_parameters": {"full_attention": full, "sliding_attention": sliding}}


def gemma4_text(a: Architecture) -> dict:
    """Gemma 4's text model: global layers with their own sizes, values from keys, a
    value norm, and (26B-A4B) experts beside a dense MLP in every layer."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.DOUBLE)
    _serial(a)
    _act(a, Activation.GEGLU)
    _softmax_attention(a, QKNorm.PER_HEAD)
    _position(a, PositionType.ROPE)
    _bias(a, False, False, False)
    _require(bool(a.tied_embeddings), "Gemma ties its embeddings")
    _pattern(a, LayerKind.LOCAL, LayerKind.GLOBAL)
    _require(a.layer_kinds()[-1] is LayerKind.GLOBAL, "Gemma 4's last layer is global")
    _require(bool(a.attention.value_norm), "Gemma 4 norms its values (attention.value_norm)")
    _require(bool(a.layer_scalar), "Gemma 4 scales each layer's output (layer_scalar)")
    _require(a.position.rotary_fraction is None, "local layers rotate every dim")
    g = a.attention.global_layers
    hd = a.head_dim_effective
    k_eq_v = bool(g and g.values_from_keys)
    # transformers gives global layers their own KV heads only together with k_eq_v
    _require(
        g is None or g.n_kv_heads is None or k_eq_v,
        "global_layers.n_kv_heads needs values_from_keys in transformers' Gemma 4",
    )
    theta = a.position.rope_theta or 10000.0
    global_rope = {"rope_type": "default", "rope_theta": theta}
    if g is not None and g.rotary_fraction is not None:
        global_rope = global_rope | {
            "rope_type": "proportional",
            "partial_rotary_factor": g.rotary_fraction,
        }
    out = _base(a) | {
        "sliding_window": a.attention.sliding_window or 512,
        "layer_types": _layer_types(a),
        "final_logit_softcapping": a.final_logit_softcap,
        "global_head_dim": (g.head_dim if g is not None else None) or hd,
        "attention_k_eq_v": k_eq_v,
        "rope_parameters": {
            "sliding_attention": {
                "rope_type": "default",
                "rope_theta": a.position.rope_theta_local or theta,
            },
            "full_attention": global_rope,
        },
        **_gemma4_on_device(a),
    }
    if g is not None and g.n_kv_heads is not None:
        out["num_global_key_value_heads"] = g.n_kv_heads
    moe = a.mlp.moe
    if moe is not None:
        _require(
            moe.first_dense_layers == 0 and moe.layer_period == 1 and not moe.n_shared,
            "Gemma 4's experts sit in every layer, without shared experts",
        )
        _require(
            moe.dense_beside_d_ff is not None and bool(moe.router_scales),
            "Gemma 4's experts sit beside a dense MLP, with its scaled router",
        )
        out |= {
            "enable_moe_block": True,
            "intermediate_size": moe.dense_beside_d_ff,
            "moe_intermediate_size": a.mlp.d_ff,
            "num_experts": moe.n_experts,
            "top_k_experts": moe.n_active,
        }
    return out


def _gemma4_on_device(a: Architecture) -> dict:
    """Gemma 4 E2B/E4B: per-layer embeddings, KV sharing, and the reusing layers' MLP at
    twice the width (use_double_wide_mlp, the only other width transformers builds)."""
    ple, shared, wide = a.per_layer_embeddings, a.attention.kv_shared_layers or 0, None
    if a.mlp.kv_shared_d_ff is not None:
        wide = a.mlp.kv_shared_d_ff
        _require(wide == 2 * (a.mlp.d_ff or 0), "mlp.kv_shared_d_ff must be 2 x d_ff")
    return {
        "hidden_size_per_layer_input": ple.width if ple is not None else 0,
        "vocab_size_per_layer_input": ple.vocab_size if ple is not None else a.vocab_size,
        "num_kv_shared_layers": shared,
        "use_double_wide_mlp": wide is not None,
    }


def gemma3n_text(a: Architecture) -> dict:
    """Gemma 3n's text model: AltUp, LAuReL, per-layer embeddings, KV sharing, gaussian
    top-k; Gemma 4's attention without global-layer sizes."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.DOUBLE)
    _serial(a)
    _act(a, Activation.GEGLU)
    _softmax_attention(a, QKNorm.PER_HEAD)
    _position(a, PositionType.ROPE)
    _dense(a)
    _bias(a, False, False, False)
    _require(bool(a.tied_embeddings), "Gemma ties its embeddings")
    _pattern(a, LayerKind.LOCAL, LayerKind.GLOBAL)
    _require(bool(a.attention.value_norm), "Gemma 3n norms its values (attention.value_norm)")
    _require(a.attention.global_layers is None, "Gemma 3n's layers share their sizes")
    _require(not a.layer_scalar, "Gemma 3n has no layer scalar")
    _require(a.position.rotary_fraction is None, "Gemma 3n rotates every dim")
    alt, ple = a.altup, a.per_layer_embeddings
    _require(alt is not None and a.laurel_rank is not None, "Gemma 3n has AltUp and LAuReL")
    _require(ple is not None, "Gemma 3n has per-layer embeddings")
    _require(a.mlp.kv_shared_d_ff is None, "Gemma 3n's KV-sharing layers keep d_ff")
    theta = a.position.rope_theta or 10000.0
    sparsity = a.mlp.activation_sparsity
    first, target = (sparsity.first_layers, sparsity.target) if sparsity else (0, 0.0)
    return _base(a) | {
        "sliding_window": a.attention.sliding_window or 512,
        "layer_types": _layer_types(a),
        "final_logit_softcapping": a.final_logit_softcap,
        "rope_parameters": {
            "sliding_attention": {
                "rope_type": "default",
                "rope_theta": a.position.rope_theta_local or theta,
            },
            "full_attention": {"rope_type": "default", "rope_theta": theta},
        },
        "hidden_size_per_layer_input": ple.width,
        "vocab_size_per_layer_input": ple.vocab_size,
        "num_kv_shared_layers": a.attention.kv_shared_layers or 0,
        "altup_num_inputs": alt.n_inputs,
        "altup_active_idx": alt.active_index,
        "altup_correct_scale": alt.correct_scale,
        "laurel_rank": a.laurel_rank,
        "activation_sparsity_pattern": [target] * first + [0.0] * (a.n_layers - first),
    }


def _layer_types(a: Architecture) -> list[str]:
    names = {LayerKind.LOCAL: "sliding_attention", LayerKind.CHUNKED: "chunked_attention"}
    return [names.get(k, "full_attention") for k in a.layer_kinds()]


def olmo(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.NONE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _softmax_attention(a)
    _dense(a)
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    return _base(a) | {"attention_bias": a.bias.qkv}


def olmo2(a: Architecture) -> dict:
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.POST_BRANCH)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _softmax_attention(a, QKNorm.FULL)
    _dense(a)
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    return _base(a) | {"attention_bias": a.bias.qkv}


def olmo3(a: Architecture) -> dict:
    """OLMo 2 with sliding layers; RoPE scaling on the full layers, the sliding layers at
    their own base (rope_theta_local) unscaled."""
    config = olmo2(a)
    _pattern(a, LayerKind.GLOBAL, LayerKind.LOCAL)
    pos = a.position
    theta = pos.rope_theta or 500000.0
    local = LayerKind.LOCAL in a.layer_kinds()
    _require(
        pos.rope_scaling is None or not local or pos.rope_theta_local is not None,
        "OLMo 3 scales RoPE on full layers only: local layers need rope_theta_local",
    )
    full = {"rope_type": "default", "rope_theta": theta} | _rope_scaling(a)
    sliding = {"rope_type": "default", "rope_theta": pos.rope_theta_local or theta}
    return config | {
        "layer_types": _layer_types(a),
        "sliding_window": a.attention.sliding_window or 4096,
        "rope_parameters": {"full_attention": full, "sliding_attention": sliding},
    }


def exaone4(a: Architecture) -> dict:
    """EXAONE 4: post-branch norms, per-head QK norm; with a window, RoPE on the sliding
    layers only (full layers NoPE); without one, RoPE on every full layer."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.POST_BRANCH)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _softmax_attention(a, QKNorm.PER_HEAD)
    _position(a, PositionType.ROPE)
    _dense(a)
    _bias(a, False, False, False)
    kinds = set(a.attention.layer_pattern)
    _require(
        kinds <= {LayerKind.LOCAL, LayerKind.GLOBAL_NOPE} or kinds == {LayerKind.GLOBAL},
        "layer_pattern of local and global-nope layers (a window), or global only (none)",
    )
    windowed = LayerKind.GLOBAL not in kinds
    names = {LayerKind.LOCAL: "sliding_attention"}
    return (
        _base(a)
        | _rope(a)
        | {
            "layer_types": [names.get(k, "full_attention") for k in a.layer_kinds()],
            "sliding_window": (a.attention.sliding_window or 4096) if windowed else None,
        }
    )


def cohere(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE, NormPosition.PRE)
    _parallel(a, shared=True)
    _act(a, Activation.SWIGLU)
    _require(
        a.attention.qk_norm in (QKNorm.NONE, QKNorm.PER_HEAD_UNTIED),
        "Cohere's QK norm is per head with untied weights",
    )
    _dense(a)
    _pattern(a, LayerKind.GLOBAL)
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    return _base(a) | {
        "attention_bias": a.bias.qkv,
        "use_qk_norm": a.attention.qk_norm is QKNorm.PER_HEAD_UNTIED,
    }


def cohere2(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE, NormPosition.PRE)
    _parallel(a, shared=True)
    _act(a, Activation.SWIGLU)
    _softmax_attention(a)
    _dense(a)
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    return _base(a) | {
        "attention_bias": a.bias.qkv,
        "layer_types": _layer_types(a),
        "sliding_window": a.attention.sliding_window or 4096,
    }


def nemotron(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SQUARED_RELU)
    _softmax_attention(a)
    _dense(a)
    _require(a.bias.qkv == a.bias.attn_out, "attention_bias covers q,k,v,o")
    return _base(a) | {
        "attention_bias": a.bias.qkv,
        "mlp_bias": a.bias.mlp,
        "partial_rotary_factor": a.position.rotary_fraction or 1.0,
    }


def _deepseek_moe(a: Architecture) -> dict:
    """DeepSeekMoE's sizes: routed and shared experts after the first dense layers."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SWIGLU)
    moe = a.mlp.moe
    _require(moe is not None and moe.layer_period == 1, "MoE in every layer after the dense ones")
    shared = 0
    if moe.n_shared:
        _require(moe.shared_d_ff % a.mlp.d_ff == 0, "shared width a multiple of the expert's")
        shared = moe.shared_d_ff // a.mlp.d_ff
    return {
        "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
        "moe_intermediate_size": a.mlp.d_ff,
        "n_routed_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "n_shared_experts": shared,
        "first_k_dense_replace": moe.first_dense_layers,
        "n_group": moe.n_groups or 1,
        "topk_group": moe.top_k_groups or 1,
        "routed_scaling_factor": moe.routed_scale or 1.0,  # null: the builder's 1
    }


def _latent(a: Architecture) -> dict:
    _require(a.attention.variant is AttentionVariant.LATENT, "latent attention")
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers MLA")
    lat = a.attention.latent
    return {
        "kv_lora_rank": lat.kv_lora_rank,
        "q_lora_rank": lat.q_lora_rank,
        "qk_rope_head_dim": lat.qk_rope_head_dim,
        "qk_nope_head_dim": lat.qk_nope_head_dim,
        "v_head_dim": lat.v_head_dim,
        "head_dim": lat.qk_rope_head_dim,
        "num_key_value_heads": a.attention.n_heads,
        "attention_bias": a.bias.qkv,
    }


def deepseek_v2(a: Architecture) -> dict:
    """Softmax shares, greedy or grouped by each group's best score, always scaled, never
    renormalized (transformers' DeepseekV2TopkRouter ignores norm_topk_prob)."""
    config = _deepseek_moe(a)
    moe = a.mlp.moe
    _require(moe.normalize_top_k is not True, "mlp.moe.normalize_top_k: V2 never normalizes")
    grouped = (moe.n_groups or 1) > 1
    _require(not grouped or moe.group_score is GroupScore.MAX, "groups ranked by their max")
    method = "group_limited_greedy" if grouped else "greedy"
    return _base(a) | _latent(a) | config | {"topk_method": method}


def deepseek_v3(a: Architecture) -> dict:
    """Sigmoid scores, a correction bias (zero: none), groups by their top-2 sum."""
    config = _deepseek_moe(a)
    _sigmoid_router(a.mlp.moe)
    return (
        _base(a)
        | _latent(a)
        | config
        | {"norm_topk_prob": a.mlp.moe.normalize_top_k is not False}
        | _mtp_modules(a, "num_nextn_predict_layers")
    )


def longcat_flash(a: Architecture) -> dict:
    """LongCat-Flash: shortcut-connected MoE layers of MLA (scaled latents, q always
    through its bottleneck), a softmax router over routed and zero-computation experts with
    a correction bias, never renormalized, times routed_scaling_factor."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SWIGLU)
    moe, lat = a.mlp.moe, a.attention.latent
    _require(moe is not None and moe.shortcut_dense_d_ff is not None, "shortcut MoE layers")
    _require(not moe.n_shared and (moe.n_groups or 1) == 1, "no shared experts or groups")
    _require(moe.score_function is not RouterScore.SIGMOID, "softmax router scores")
    _require(moe.normalize_top_k is not True, "the chosen weights are never renormalized")
    _require(lat is not None and lat.q_lora_rank is not None, "MLA with a query bottleneck")
    _require(bool(lat.lora_scaled), "attention.latent.lora_scaled (the latents are scaled)")
    _require(a.position.rope_layout is not RopeLayout.HALF_SPLIT, "RoPE on interleaved pairs")
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers MLA")
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_layers": a.n_layers,
        "num_attention_heads": a.attention.n_heads,
        "max_position_embeddings": a.context_length,
        "tie_word_embeddings": a.tied_embeddings,
        "ffn_hidden_size": moe.shortcut_dense_d_ff,
        "expert_ffn_hidden_size": a.mlp.d_ff,
        "n_routed_experts": moe.n_experts,
        "moe_topk": moe.n_active,
        "zero_expert_num": moe.zero_experts or 0,
        "routed_scaling_factor": moe.routed_scale or 1.0,
        "kv_lora_rank": lat.kv_lora_rank,
        "q_lora_rank": lat.q_lora_rank,
        "qk_rope_head_dim": lat.qk_rope_head_dim,
        "qk_nope_head_dim": lat.qk_nope_head_dim,
        "v_head_dim": lat.v_head_dim,
        "head_dim": lat.qk_rope_head_dim,
        "attention_bias": a.bias.qkv,
        "rms_norm_eps": a.norm.eps or 1e-5,
    } | _rope(a)


def _sigmoid_router(moe: MoE) -> None:
    """transformers' DeepSeek-V3 and GLM-4.5 routers: sigmoid scores, always."""
    _require(moe.score_function is not RouterScore.SOFTMAX, "mlp.moe.score_function sigmoid")
    grouped = (moe.n_groups or 1) > 1
    _require(not grouped or moe.group_score is GroupScore.TOP2_SUM, "groups by top2-sum")


def glm4_moe(a: Architecture) -> dict:
    """GLM-4.5: GQA with partial RoPE, optional per-head QK norm, q/k/v bias; V3's router."""
    qk = a.attention.qk_norm
    _require(qk in (QKNorm.NONE, QKNorm.PER_HEAD), "attention.qk_norm none or per-head")
    _softmax_attention(a, qk)
    _position(a, PositionType.ROPE)
    _pattern(a, LayerKind.GLOBAL)
    _require(not a.bias.attn_out and not a.bias.mlp, "no bias on o_proj or the MLPs")
    config = _deepseek_moe(a)
    _sigmoid_router(a.mlp.moe)
    return (
        _base(a)
        | config
        | _rope(a)
        | {
            "attention_bias": a.bias.qkv,
            "use_qk_norm": qk is QKNorm.PER_HEAD,
            "partial_rotary_factor": a.position.rotary_fraction or 1.0,
            "norm_topk_prob": a.mlp.moe.normalize_top_k is not False,
        }
    )


def _dsa(a: Architecture, layout: RopeLayout) -> dict:
    """DeepSeek Sparse Attention's indexer on DeepSeek-V3's MLA and MoE."""
    sparse = a.attention.sparse
    _require(sparse is not None, "attention.sparse (every layer of this family runs DSA)")
    own = sparse.indexer_rope_layout or RopeLayout.HALF_SPLIT
    _require(own is layout, f"attention.sparse.indexer_rope_layout must be {layout.value}")
    return deepseek_v3(a) | {
        "index_n_heads": sparse.indexer_heads,
        "index_head_dim": sparse.indexer_head_dim,
        "index_topk": sparse.top_k,
    }


def deepseek_v32(a: Architecture) -> dict:
    """DSA on DeepSeek-V3; a card's YaRN as transformers' yarn without DeepSeek's mscale
    keys: the cos/sin scaled by 0.1 ln(factor) + 1, as the card's yarn is (mscale_all_dim
    would scale the whole softmax instead, another function)."""
    config = _dsa(a, RopeLayout.HALF_SPLIT)
    if a.position.rope_scaling is not None:
        rope = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
        config["rope_parameters"] = rope | _rope_scaling(a)
    return config


def glm_moe_dsa(a: Architecture) -> dict:
    # every layer runs its own indexer (no "shared" indexer_types: the schema has none)
    return _dsa(a, RopeLayout.INTERLEAVED) | {"indexer_types": ["full"] * a.n_layers}


def minimax_m2(a: Architecture) -> dict:
    """MiniMax-M2: GQA with full QK norm and partial RoPE; every layer's MLP the experts,
    sigmoid scores with a correction bias, the chosen renormalized, no groups, no scale."""
    _llama_like(a, QKNorm.FULL)
    _pattern(a, LayerKind.GLOBAL)
    _bias(a, False, False, False)
    moe = a.mlp.moe
    _require(moe is not None, "every layer's MLP is the experts (mlp.moe)")
    _require(
        (moe.n_shared, moe.first_dense_layers, moe.layer_period) == (0, 0, 1),
        "no shared experts, no dense layers",
    )
    # null (not recorded) is compared by count; its fidelity names the missing field
    _require(moe.score_function is not RouterScore.SOFTMAX, "mlp.moe.score_function sigmoid")
    _require(moe.normalize_top_k is not False, "the chosen scores renormalized")
    return (
        _base(a)
        | _rope(a)
        | {"num_local_experts": moe.n_experts, "num_experts_per_tok": moe.n_active}
        | _minimax_mtp(a)
    )


def llama4_text(a: Architecture) -> dict:
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _require(a.attention.qk_norm in (QKNorm.NONE, QKNorm.L2), "Llama 4's QK norm is l2")
    _bias(a, False, False, False)
    moe = a.mlp.moe
    _require(moe is not None and moe.first_dense_layers == 0, "MoE without leading dense layers")
    _require(
        moe.n_shared == 1 and moe.shared_d_ff == a.mlp.d_ff,
        "one shared expert as wide as a routed one",
    )
    nope = [int(k is LayerKind.GLOBAL_NOPE) for k in a.layer_kinds()]
    return _base(a) | {
        "intermediate_size_mlp": moe.dense_d_ff or 4 * a.d_model,
        "num_local_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "interleave_moe_layer_step": moe.layer_period,
        "use_qk_norm": a.attention.qk_norm is QKNorm.L2,
        "no_rope_layers": [1 - x for x in nope],
        "attention_chunk_size": a.attention.sliding_window,
    }


def smollm3(a: Architecture) -> dict:
    """Llama with NoPE layers (no_rope_layers[i] == 0) and an optional sliding window on
    the RoPE layers."""
    _llama_like(a)
    _dense(a)
    _pattern(a, LayerKind.GLOBAL, LayerKind.GLOBAL_NOPE, LayerKind.LOCAL)
    _require(a.bias.qkv == a.bias.attn_out, "SmolLM3's attention_bias covers q, k, v and o alike")
    kinds = a.layer_kinds()
    local = LayerKind.LOCAL in kinds
    return (
        _base(a)
        | _rope(a)
        | {
            "attention_bias": a.bias.qkv,
            "mlp_bias": a.bias.mlp,
            "no_rope_layers": [int(k is not LayerKind.GLOBAL_NOPE) for k in kinds],
            "use_sliding_window": local,
            "sliding_window": a.attention.sliding_window if local else None,
            "layer_types": _layer_types(a),
        }
    )


def seed_oss(a: Architecture) -> dict:
    """Llama with separate bias flags: q/k/v (attention_bias) and o (attention_out_bias)."""
    _llama_like(a)
    _dense(a)
    _pattern(a, LayerKind.GLOBAL)
    return (
        _base(a)
        | _rope(a)
        | {
            "attention_bias": a.bias.qkv,
            "attention_out_bias": a.bias.attn_out,
            "mlp_bias": a.bias.mlp,
        }
    )


def ernie4_5(a: Architecture) -> dict:
    """Llama whose one use_bias covers q, k, v, o and the MLP; RoPE on interleaved pairs."""
    _llama_like(a)
    _dense(a)
    _pattern(a, LayerKind.GLOBAL)
    uses_bias = a.bias.qkv
    _bias(a, uses_bias, uses_bias, uses_bias)
    _require(a.position.rope_layout is not RopeLayout.HALF_SPLIT, "RoPE on interleaved pairs")
    return _base(a) | _rope(a) | {"use_bias": uses_bias}


def hunyuan_v1_dense(a: Architecture) -> dict:
    """Hunyuan dense: Llama with a per-head RMS QK norm (applied after RoPE, which changes
    outputs, not counts); attention_bias covers q, k, v and o, the MLP never has one."""
    _hunyuan_attention(a)
    _dense(a)
    return _base(a) | _hunyuan_rope(a) | {"attention_bias": a.bias.qkv}


def _hunyuan_attention(a: Architecture) -> None:
    _llama_like(a, QKNorm.PER_HEAD)
    _pattern(a, LayerKind.GLOBAL)
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers q,k,v,o")
    _require(a.attention.qk_norm_after_rope is not False, "the QK norm after RoPE")


def _hunyuan_rope(a: Architecture) -> dict:
    """RoPE as Hunyuan's configs spell it: ntk-alpha is their "dynamic" scaling with an
    alpha (the code then fixes the base at rope_theta * alpha^(d/(d-2)); factor unused, 1)."""
    config = _rope(a)
    s = a.position.rope_scaling
    if s is not None and s.type is RopeScalingType.NTK_ALPHA:
        config["rope_parameters"] |= {"rope_type": "dynamic", "factor": 1.0, "alpha": s.factor}
    elif s is not None:
        config["rope_parameters"] |= _rope_scaling(a)
    return config


def hunyuan_v1_moe(a: Architecture) -> dict:
    """Hunyuan MoE: every layer's MLP is softmax-routed experts, the chosen renormalized,
    plus one shared MLP; experts and shared MLP all intermediate_size wide."""
    _hunyuan_attention(a)
    moe = a.mlp.moe
    _require(moe is not None, "every layer's MLP is the experts (mlp.moe)")
    _require(
        (moe.n_shared, moe.shared_d_ff, moe.first_dense_layers, moe.layer_period)
        == (1, a.mlp.d_ff, 0, 1),
        "one shared MLP as wide as an expert, experts in every layer",
    )
    _require(moe.score_function is not RouterScore.SIGMOID, "mlp.moe.score_function softmax")
    _require(moe.normalize_top_k is not False, "the chosen scores renormalized")
    return (
        _base(a)
        | _hunyuan_rope(a)
        | {"attention_bias": a.bias.qkv, "num_experts": moe.n_experts, "moe_topk": moe.n_active}
    )


def ernie4_5_moe(a: Architecture) -> dict:
    """ERNIE 4.5's dense layers then experts every k-th layer (the shared experts one MLP),
    softmax scores with a correction bias; no biases (use_bias false)."""
    _llama_like(a)
    _pattern(a, LayerKind.GLOBAL)
    _bias(a, False, False, False)
    _require(a.position.rope_layout is not RopeLayout.HALF_SPLIT, "RoPE on interleaved pairs")
    moe = a.mlp.moe
    _require(moe is not None, "experts (mlp.moe)")
    _require(moe.score_function is not RouterScore.SIGMOID, "mlp.moe.score_function softmax")
    _require(moe.normalize_top_k is not False, "the chosen scores renormalized")
    _require(
        moe.first_dense_layers % moe.layer_period == 0,
        "the first MoE layer a multiple of layer_period (moe_layer_interval) from 0",
    )
    _require(
        moe.shared_d_ff == (a.mlp.d_ff * moe.n_shared if moe.n_shared else None),
        "shared experts as wide as n_shared routed experts",
    )
    return (
        _base(a)
        | _rope(a)
        | {
            "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
            "moe_intermediate_size": a.mlp.d_ff,
            "moe_num_experts": moe.n_experts,
            "moe_k": moe.n_active,
            "moe_num_shared_experts": moe.n_shared,
            "moe_layer_start_index": moe.first_dense_layers,
            "moe_layer_end_index": a.n_layers - 1,
            "moe_layer_interval": moe.layer_period,
            "use_bias": False,
        }
    )


def gpt2(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.GELU)
    _softmax_attention(a)
    _pattern(a, LayerKind.GLOBAL)  # GPT-2 attends densely in every layer (GPT-3 does not)
    _dense(a)
    _position(a, PositionType.LEARNED)
    _bias(a, True, True, True)
    _require(bool(a.tied_embeddings), "GPT-2 ties its embeddings")
    _require(a.attention.n_heads * a.head_dim_effective == a.d_model, "n_heads*head_dim = d_model")
    return {
        "vocab_size": a.vocab_size,
        "n_embd": a.d_model,
        "n_layer": a.n_layers,
        "n_head": a.attention.n_heads,
        "n_inner": a.mlp.d_ff,
        "n_positions": learned_rows(a),
    }


def openai_gpt(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.POST, final=False)
    _serial(a)
    _act(a, Activation.GELU)
    _softmax_attention(a)
    _dense(a)
    _position(a, PositionType.LEARNED)
    _bias(a, True, True, True)
    _require(a.mlp.d_ff == 4 * a.d_model, "GPT-1's MLP is 4 x d_model")
    _require(bool(a.tied_embeddings), "GPT-1 ties its embeddings")
    return {
        "vocab_size": a.vocab_size,
        "n_embd": a.d_model,
        "n_layer": a.n_layers,
        "n_head": a.attention.n_heads,
        "n_positions": learned_rows(a),
    }


def gptj(a: Architecture) -> dict:
    """GPT-J; its output head always has a bias (a card without bias.lm_head differs)."""
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    _parallel(a, shared=True)
    _act(a, Activation.GELU)
    _softmax_attention(a)
    _dense(a)
    _position(a, PositionType.ROPE)
    _require(
        not a.bias.qkv and not a.bias.attn_out and a.bias.mlp, "GPT-J: no attention bias, MLP bias"
    )
    hd = a.head_dim_effective
    return {
        "vocab_size": a.vocab_size,
        "n_embd": a.d_model,
        "n_layer": a.n_layers,
        "n_head": a.attention.n_heads,
        "n_inner": a.mlp.d_ff,
        "rotary_dim": int(hd * (a.position.rotary_fraction or 1.0)),
        "n_positions": a.context_length,
        "tie_word_embeddings": a.tied_embeddings,
    }


def gpt_neox(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    _parallel(a, shared=False)
    _act(a, Activation.GELU)
    _softmax_attention(a)
    _dense(a)
    _bias(a, True, True, True)
    # ACT2FN: gelu is the erf form, gelu_fast the tanh form (GPT-NeoX-20B's spelling, the
    # formula of GPT-NeoX's fused bias_gelu); null is tanh, as the builder's
    exact = a.mlp.gelu_approximation is GeluApproximation.EXACT
    hidden_act = "gelu" if exact else "gelu_fast"
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "num_attention_heads": a.attention.n_heads,
        "intermediate_size": a.mlp.d_ff,
        "use_parallel_residual": True,
        "rotary_pct": a.position.rotary_fraction or 1.0,
        "max_position_embeddings": a.context_length,
        "tie_word_embeddings": a.tied_embeddings,
        "hidden_act": hidden_act,
    }


def phi(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    _parallel(a, shared=True)
    _act(a, Activation.GELU)
    _softmax_attention(a)
    _dense(a)
    b = a.bias
    _require(b.qkv and b.attn_out and b.mlp, "Phi has a bias on every linear layer")
    # Phi's output head always has a bias: a card without bias.lm_head counts differently
    return _base(a) | {"partial_rotary_factor": a.position.rotary_fraction or 1.0}


def opt(a: Architecture) -> dict:
    _require(a.norm.position in (NormPosition.PRE, NormPosition.POST), "pre- or post-norm")
    _norm(
        a,
        NormType.LAYERNORM,
        NormAffine.SCALE_AND_BIAS,
        a.norm.position,
        final=a.norm.position is NormPosition.PRE,
    )
    _serial(a)
    _act(a, Activation.RELU)
    _softmax_attention(a)
    _dense(a)
    _position(a, PositionType.LEARNED)
    _bias(a, True, True, True)
    # OPT's table has max_position_embeddings + 2 rows; the config states the positions.
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "ffn_dim": a.mlp.d_ff,
        "num_attention_heads": a.attention.n_heads,
        "max_position_embeddings": a.context_length,
        "word_embed_proj_dim": embedding_width(a),
        "do_layer_norm_before": a.norm.position is NormPosition.PRE,
        "tie_word_embeddings": a.tied_embeddings,
    }


def falcon(a: Architecture) -> dict:
    _norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    _require(bool(a.parallel_layers), "parallel_layers (Falcon's parallel_attn)")
    _act(a, Activation.GELU)
    _softmax_attention(a)
    _dense(a)
    b = a.bias
    _require(b.qkv == b.attn_out == b.mlp, "Falcon's bias flag covers every linear layer")
    shared = bool(a.norm.shared_in_parallel)
    kv = a.attention.n_kv_heads
    classic_mqa = kv == 1 and shared  # Falcon-7B: multi_query, one norm
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "num_attention_heads": a.attention.n_heads,
        "num_kv_heads": kv,
        "new_decoder_architecture": not classic_mqa,
        "multi_query": kv == 1,
        "parallel_attn": True,
        "bias": b.qkv,
        "ffn_hidden_size": a.mlp.d_ff,
        "num_ln_in_parallel_attn": 1 if shared else 2,
        "tie_word_embeddings": a.tied_embeddings,
        "alibi": False,
    } | _falcon_positions(a)


def _falcon_positions(a: Architecture) -> dict:
    """max_position_embeddings where the card records it (Falcon2-11B's config states 8192;
    Falcon-7B's original config omits it and FalconConfig's default, 2048, is the card's)."""
    return {} if a.context_length is None else {"max_position_embeddings": a.context_length}


def t5(a: Architecture) -> dict:
    _require(a.kind is Kind.ENCODER_DECODER, "an encoder-decoder")
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.RELU, Activation.GEGLU)
    _softmax_attention(a)
    _dense(a)
    _position(a, PositionType.RELATIVE_BIAS)
    _bias(a, False, False, False)
    # transformers 5 forces tie_word_embeddings=True for the whole T5 family
    # (configuration_t5.py), so T5 v1.1's untied output layer has no transformers twin.
    _require(bool(a.tied_embeddings), "transformers 5 ties every T5 model's output layer")
    return {
        "vocab_size": a.vocab_size,
        "d_model": a.d_model,
        "d_kv": a.head_dim_effective,
        "d_ff": a.mlp.d_ff,
        "num_layers": a.n_encoder_layers,
        "num_decoder_layers": a.n_layers,
        "num_heads": a.attention.n_heads,
        "relative_attention_num_buckets": a.position.relative_buckets or 32,
        "feed_forward_proj": "gated-gelu" if a.mlp.activation.gated else "relu",
        "tie_word_embeddings": a.tied_embeddings,
    }


def chameleon(a: Architecture) -> dict:
    # transformers' port learns one QK LayerNorm per head; the official checkpoint shares
    # one per model-parallel shard, which the port cannot express.
    _llama_like(a, QKNorm.PER_HEAD_UNTIED)
    _require(
        a.attention.qk_norm_type is NormType.LAYERNORM
        and a.attention.qk_norm_affine is NormAffine.SCALE_AND_BIAS,
        "Chameleon's QK norm is a LayerNorm with scale and bias",
    )
    _dense(a)
    _bias(a, False, False, False)
    # the image tokenizer (vqmodel) is built with defaults and left out of the count
    return _base(a) | {"vq_config": {}, "vocabulary_map": {"<image>": 0}}


# Zamba2's GELU spellings: its MLP applies ACT2FN[hidden_act] to the gate
_ZAMBA2_ACT = {"exact": "gelu", "tanh": "gelu_pytorch_tanh"}


def zamba2(a: Architecture) -> dict:
    """Zamba2: Mamba-2 layers; shared blocks (attention over [x, embeddings] with heads
    2 d_model / n_heads wide, a gated MLP, adapters, a projection per invocation) before
    the hybrid_layer_ids."""
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _softmax_attention(a)
    _dense(a)
    _position(a, PositionType.ROPE, PositionType.NONE)
    _act(a, Activation.GEGLU, Activation.SWIGLU)
    _pattern(a, LayerKind.MAMBA2)
    sb, m = a.shared_blocks, _mamba2_of(a)
    _require(sb is not None, "shared_blocks (Zamba2's shared transformer blocks)")
    _require(not m.mlp, "mixers.mamba2.mlp false: a Mamba-2 layer is the mixer alone")
    _require(m.conv_bias, "mixers.mamba2.conv_bias true (Zamba2's conv always has a bias)")
    _require(
        a.bias.mlp == m.proj_bias and not a.bias.qkv and not a.bias.attn_out,
        "add_bias_linear covers in_proj, out_proj and the MLP; the attention has no bias",
    )
    width = 2 * a.d_model
    _require(
        sb.concat_embeddings and a.attention.n_heads * a.head_dim_effective == width,
        "shared blocks over [x, embeddings] with n_heads x head_dim = 2 d_model",
    )
    _require(sb.mlp_adapters and sb.output_projection, "MLP adapters and an output projection")
    # transformers ties the blocks' copies through tie_word_embeddings (untied: one copy
    # per invocation, which is not the shared architecture)
    _require(bool(a.tied_embeddings), "tied_embeddings true (the blocks' weights tie with it)")
    # Zamba2Attention scales scores by (head_dim / 2) ** -0.5, a function of the sizes: the
    # card's attention.scale is that figure (a toy keeps the card's, as for every family)
    if a.mlp.activation is Activation.SWIGLU:
        act = "silu"
    else:
        act = _ZAMBA2_ACT[(a.mlp.gelu_approximation or GeluApproximation.TANH).value]
    hybrid = set(sb.layers)
    types = ["hybrid" if i in hybrid else "mamba" for i in range(a.n_layers)]
    inner = m.n_heads * m.head_dim
    _require(inner % a.d_model == 0, "the inner width a whole multiple of d_model (expand)")
    rope = a.position.type is PositionType.ROPE
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "layers_block_type": types,
        "max_position_embeddings": a.context_length,
        "tie_word_embeddings": a.tied_embeddings,
        "rms_norm_eps": a.norm.eps or 1e-5,
        "intermediate_size": a.mlp.d_ff,
        "hidden_act": act,
        "num_attention_heads": a.attention.n_heads,
        "num_key_value_heads": a.attention.n_kv_heads,
        "num_mem_blocks": sb.n_blocks,
        "use_shared_attention_adapter": sb.attention_adapters,
        "adapter_rank": sb.adapter_rank,
        "use_mem_rope": rope,
        "add_bias_linear": m.proj_bias,
        "mamba_d_state": m.state_size,
        "mamba_d_conv": m.conv_kernel,
        "mamba_expand": inner // a.d_model,
        "mamba_ngroups": m.n_groups,
        "n_mamba_heads": m.n_heads,
        # transformers always clamps dt below at time_step_min: a card without the floor
        # (Zyphra's reference code) differs in outputs only, where dt < 0.001
        "time_step_min": m.time_step_floor or 0.001,
    } | (_rope(a) if rope else {})


# --- multi-token prediction -----------------------------------------------------------------
# The MTP modules (architecture.mtp) under the keys the families' released configs use, as
# import-hf reads them. DeepseekV3Config reads num_nextn_predict_layers (its num_mtp_layers);
# GlmMoeDsaConfig, Qwen3_5(Moe)TextConfig and MiniMaxM2Config define no MTP key and keep the
# released keys as attributes. No causal-LM class builds MTP weights (archdb's exact count
# leaves them out too), so the keys change no count and no logit.


def _mtp_modules(a: Architecture, key: str) -> dict:
    """One count of one-block modules: DeepSeek-V3's and GLM-5's num_nextn_predict_layers,
    Qwen3-Next's and Qwen3.5's mtp_num_hidden_layers."""
    if a.mtp is None:
        return {}
    _require(a.mtp.layers_per_module == 1, f"mtp.layers_per_module 1 ({key} has no other)")
    return {key: a.mtp.n_modules}


def _minimax_mtp(a: Architecture) -> dict:
    """MiniMax-M2: use_mtp switches num_mtp_modules modules of mtp_transformer_layers blocks."""
    if a.mtp is None:
        return {}
    n = a.mtp.n_modules
    return {
        "use_mtp": n > 0,
        "num_mtp_modules": n,
        "mtp_transformer_layers": a.mtp.layers_per_module,
    }
