"""A reference nobody here wrote: the same architecture built by Hugging Face transformers.

For each model family that transformers implements, a converter writes the card's
architecture as that family's transformers config (the way the released config.json
would), the model is instantiated on the meta device, and its parameters are counted.
archdb's own count must be the same number.

A converter states the features its family's code fixes (Llama has no parallel blocks,
Gemma always ties its embeddings, GPT-J's head always has a bias...) and raises
``NotRepresentable`` when a card asks for something else, so a comparison never passes
by building a different model. It does *not* patch differences that are the card's to
fix (an OPT card without its two extra position rows builds, and the counts differ).

transformers is imported lazily: it is a test dependency, not a runtime one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from archdb.plan.layout import embedding_width, fill_unknowns, learned_rows
from archdb.plan.mlp import CLAMPED_SWIGLU
from archdb.schema import (
    Activation,
    Architecture,
    AttentionVariant,
    Kind,
    LayerKind,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
    QKNorm,
)


class NotRepresentable(ValueError):
    """The card asks for something the family's transformers code cannot build."""


@dataclass(frozen=True)
class Reference:
    """One transformers model family: its config class, model class and converter."""

    model_type: str
    config_class: str
    model_class: str
    convert: Callable[[Architecture], dict]
    decoder_only_of: str | None = None  # count only this submodule (multimodal models)
    extras: frozenset[str] = frozenset()  # the optional mechanisms (see EXTRAS) it builds


# Optional mechanisms a family's code must build for a comparison to mean anything: a card
# using one is NotRepresentable by every reference that does not list it.
EXTRAS: dict[str, Callable[[Architecture], bool]] = {
    "sinks": lambda a: bool(a.attention.sinks),
    "output_gate": lambda a: a.attention.output_gate is not None,
    "mamba2": lambda a: LayerKind.MAMBA2 in a.attention.layer_pattern,
    "gated_deltanet": lambda a: LayerKind.GATED_DELTANET in a.attention.layer_pattern,
    "router_bias": lambda a: a.mlp.moe is not None and bool(a.mlp.moe.router_bias),
    "shared_gate": lambda a: a.mlp.moe is not None and bool(a.mlp.moe.shared_gate),
}


def _check_extras(a: Architecture, ref: Reference) -> None:
    used = [name for name, uses in EXTRAS.items() if uses(a) and name not in ref.extras]
    _require(not used, f"transformers' {ref.model_type} has no {', '.join(used)}")


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
    return _base(a) | {"attention_bias": a.bias.qkv, "mlp_bias": a.bias.mlp}


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
    }


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
        "n_heads": "num_heads" if not prefix else "mamba_n_heads",
        "head_dim": "head_dim" if not prefix else "mamba_d_head",
        "state_size": "state_size" if not prefix else "mamba_d_state",
        "n_groups": "n_groups" if not prefix else "mamba_n_groups",
        "conv_kernel": "conv_kernel" if not prefix else "mamba_d_conv",
        "conv_bias": "use_conv_bias" if not prefix else "mamba_conv_bias",
        "proj_bias": "use_bias" if not prefix else "mamba_proj_bias",
    }
    out = {key: getattr(m, name) for name, key in names.items()}
    out["expand" if not prefix else "mamba_expand"] = inner // a.d_model
    return out


def mamba2(a: Architecture) -> dict:
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _require(a.attention.layer_pattern == [LayerKind.MAMBA2], "layer_pattern [mamba2]")
    _require(not a.mixers.mamba2.mlp, "mixers.mamba2.mlp false: a layer is the mixer alone")
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "tie_word_embeddings": a.tied_embeddings,
    } | _mamba2_sizes(a, "")


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
    return _base(a) | {"layer_types": _kinds(a, names)} | sizes | _rope(a)


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
    return _base(a) | {
        "sliding_window": a.attention.sliding_window or 4096,
        "layer_types": _layer_types(a),
    }


def gemma3_text(a: Architecture) -> dict:
    return gemma2(a, QKNorm.PER_HEAD)


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


def deepseek(a: Architecture) -> dict:
    _norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    _serial(a)
    _act(a, Activation.SWIGLU)
    _require(a.attention.variant is AttentionVariant.LATENT, "latent attention")
    _require(a.bias.qkv == a.bias.attn_out and not a.bias.mlp, "attention_bias covers MLA")
    moe, lat = a.mlp.moe, a.attention.latent
    _require(moe is not None and moe.layer_period == 1, "MoE in every layer after the dense ones")
    shared = 0
    if moe.n_shared:
        _require(moe.shared_d_ff % a.mlp.d_ff == 0, "shared width a multiple of the expert's")
        shared = moe.shared_d_ff // a.mlp.d_ff
    return _base(a) | {
        "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
        "moe_intermediate_size": a.mlp.d_ff,
        "n_routed_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active,
        "n_shared_experts": shared,
        "first_k_dense_replace": moe.first_dense_layers,
        "kv_lora_rank": lat.kv_lora_rank,
        "q_lora_rank": lat.q_lora_rank,
        "qk_rope_head_dim": lat.qk_rope_head_dim,
        "qk_nope_head_dim": lat.qk_nope_head_dim,
        "v_head_dim": lat.v_head_dim,
        "head_dim": lat.qk_rope_head_dim,
        "num_key_value_heads": a.attention.n_heads,
        "attention_bias": a.bias.qkv,
        "n_group": 1,
        "topk_group": 1,
    }


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
    }


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


REFERENCES: dict[str, Reference] = {
    r.model_type: r
    for r in (
        Reference("llama", "LlamaConfig", "LlamaForCausalLM", llama),
        Reference("mistral", "MistralConfig", "MistralForCausalLM", mistral),
        Reference("mixtral", "MixtralConfig", "MixtralForCausalLM", mixtral),
        Reference("phi3", "Phi3Config", "Phi3ForCausalLM", phi3),
        Reference("qwen2", "Qwen2Config", "Qwen2ForCausalLM", qwen2),
        Reference("qwen3", "Qwen3Config", "Qwen3ForCausalLM", qwen3),
        Reference("qwen3_moe", "Qwen3MoeConfig", "Qwen3MoeForCausalLM", qwen3_moe),
        Reference("gemma", "GemmaConfig", "GemmaForCausalLM", gemma),
        Reference("gemma2", "Gemma2Config", "Gemma2ForCausalLM", gemma2),
        Reference("gemma3_text", "Gemma3TextConfig", "Gemma3ForCausalLM", gemma3_text),
        Reference("olmo", "OlmoConfig", "OlmoForCausalLM", olmo),
        Reference("olmo2", "Olmo2Config", "Olmo2ForCausalLM", olmo2),
        Reference("cohere", "CohereConfig", "CohereForCausalLM", cohere),
        Reference("cohere2", "Cohere2Config", "Cohere2ForCausalLM", cohere2),
        Reference("nemotron", "NemotronConfig", "NemotronForCausalLM", nemotron),
        Reference("deepseek_v2", "DeepseekV2Config", "DeepseekV2ForCausalLM", deepseek),
        Reference("deepseek_v3", "DeepseekV3Config", "DeepseekV3ForCausalLM", deepseek),
        Reference("llama4_text", "Llama4TextConfig", "Llama4ForCausalLM", llama4_text),
        Reference("gpt2", "GPT2Config", "GPT2LMHeadModel", gpt2),
        Reference("openai-gpt", "OpenAIGPTConfig", "OpenAIGPTLMHeadModel", openai_gpt),
        Reference("gptj", "GPTJConfig", "GPTJForCausalLM", gptj),
        Reference("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM", gpt_neox),
        Reference("phi", "PhiConfig", "PhiForCausalLM", phi),
        Reference("opt", "OPTConfig", "OPTForCausalLM", opt),
        Reference("falcon", "FalconConfig", "FalconForCausalLM", falcon),
        Reference("t5", "T5Config", "T5ForConditionalGeneration", t5),
        Reference(
            "mamba2", "Mamba2Config", "Mamba2ForCausalLM", mamba2, extras=frozenset({"mamba2"})
        ),
        Reference("bamba", "BambaConfig", "BambaForCausalLM", bamba, extras=frozenset({"mamba2"})),
        Reference(
            "gpt_oss",
            "GptOssConfig",
            "GptOssForCausalLM",
            gpt_oss,
            extras=frozenset({"sinks", "router_bias"}),
        ),
        Reference("apertus", "ApertusConfig", "ApertusForCausalLM", apertus),
        Reference(
            "qwen3_next",
            "Qwen3NextConfig",
            "Qwen3NextForCausalLM",
            qwen3_next,
            extras=frozenset({"output_gate", "gated_deltanet", "shared_gate"}),
        ),
        Reference(
            "qwen3_5_text",
            "Qwen3_5TextConfig",
            "Qwen3_5ForCausalLM",
            qwen3_5_text,
            extras=frozenset({"output_gate", "gated_deltanet"}),
        ),
        Reference(
            "qwen3_5_moe_text",
            "Qwen3_5MoeTextConfig",
            "Qwen3_5MoeForCausalLM",
            qwen3_5_moe_text,
            extras=frozenset({"output_gate", "gated_deltanet", "shared_gate"}),
        ),
        Reference(
            "chameleon",
            "ChameleonConfig",
            "ChameleonForConditionalGeneration",
            chameleon,
            decoder_only_of="vqmodel",
        ),
    )
}

# Catalogue family -> the transformers model type that implements it. GPT-3 is listed
# under GPT-2 because its paper reuses GPT-2's architecture (transformers has no GPT-3).
FAMILY_TO_MODEL_TYPE: dict[str, str] = {
    "gpt-1": "openai-gpt",
    "gpt-2": "gpt2",
    "gpt-3": "gpt2",
    "gpt-j": "gptj",
    "gpt-neox": "gpt_neox",
    "pythia": "gpt_neox",
    "opt": "opt",
    "llama": "llama",
    "llama-2": "llama",
    "llama-3": "llama",
    "llama-3.1": "llama",
    "llama-3.2": "llama",
    "llama-3.3": "llama",
    "llama-4": "llama4_text",
    "mistral": "mistral",
    "mistral-nemo": "mistral",
    "mixtral": "mixtral",
    "phi-3": "phi3",
    "phi-4": "phi3",
    "smollm2": "llama",
    "qwen2": "qwen2",
    "qwen2.5": "qwen2",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma-2": "gemma2",
    "gemma-3": "gemma3_text",
    "olmo": "olmo",
    "olmo-2": "olmo2",
    "falcon": "falcon",
    "falcon-2": "falcon",
    "command-r": "cohere",
    "command-r-plus": "cohere",
    "command-a": "cohere2",
    "nemotron-4": "nemotron",
    "deepseek-v2": "deepseek_v2",
    "deepseek-v3": "deepseek_v3",
    "t5": "t5",
    "t5-v1.1": "t5",
    "phi-2": "phi",
    "phi-1.5": "phi",
    "chameleon": "chameleon",
    "mamba-2": "mamba2",
    "mamba2": "mamba2",  # the catalogue's Mamba-2 cards
    "bamba": "bamba",
    "gpt-oss": "gpt_oss",
    "apertus": "apertus",
    "qwen3-next": "qwen3_next",
    "qwen3.5": "qwen3_5_text",
    "qwen3.6": "qwen3_5_text",  # Qwen3.6's configs are model_type qwen3_5 / qwen3_5_moe
}


# Families whose mixture-of-experts members are a different transformers model type.
MOE_MODEL_TYPE: dict[str, str] = {"qwen3": "qwen3_moe", "qwen3_5_text": "qwen3_5_moe_text"}


def model_type_for(family: str, arch: Architecture) -> str | None:
    """The transformers model type of a card, or None when transformers has none."""
    model_type = FAMILY_TO_MODEL_TYPE.get(family)
    if model_type is not None and arch.mlp.moe is not None:
        model_type = MOE_MODEL_TYPE.get(model_type, model_type)
    return model_type


def hf_parameter_count(arch: Architecture, model_type: str) -> int:
    """Parameters of transformers' model for this architecture, built on the meta device."""
    import torch
    import transformers

    ref = REFERENCES[model_type]
    arch, _ = fill_unknowns(arch)
    _check_extras(arch, ref)
    # special-token ids are not parameters; the configs' defaults may lie outside a toy's
    # vocabulary, which transformers warns about or refuses
    kwargs = {"bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    kwargs |= ref.convert(arch)
    config = getattr(transformers, ref.config_class)(**kwargs)
    with torch.device("meta"):
        model = getattr(transformers, ref.model_class)(config)
    skip = set()
    if ref.decoder_only_of is not None:
        for name, module in model.named_modules():
            if name.endswith(ref.decoder_only_of):
                skip |= {id(p) for p in module.parameters()}
    return sum(p.numel() for p in model.parameters() if id(p) not in skip)
