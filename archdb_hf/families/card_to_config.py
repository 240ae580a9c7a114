"""Card -> config: a card's architecture written as its transformers family's config.

For each model family that transformers implements, a writer (``FamilySpec.write``) gives
the card's architecture as that family's config (the way the released config.json would).
The tests and benchmarks build transformers' model from it (``archdb_hf.testing``)
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

from collections.abc import Callable
from typing import TYPE_CHECKING

from archdb.mixers.mamba2 import Mamba2, Mamba2Norm
from archdb.schema import (
    Activation,
    Architecture,
    AttentionVariant,
    GroupScore,
    LayerKind,
    MoE,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
    QKNorm,
    RouterScore,
)
from archdb_hf.keymap import NotRepresentable, require

if TYPE_CHECKING:
    from archdb_hf.families.spec import FamilySpec

__all__ = ["NotRepresentable", "require"]


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
    "moe_latent": lambda a: a.mlp.moe is not None and a.mlp.moe.latent_dim is not None,
    "layer_scalar": lambda a: bool(a.layer_scalar),
    "residual_multiplier": lambda a: a.residual_multiplier not in (None, 1.0),
    # router variants (archdb.plan.mlp.RouterSpec) beyond Mixtral's softmax top-k
    "sigmoid_scores": lambda a: _moe_has(a, lambda m: m.score_function is RouterScore.SIGMOID),
    "expert_groups": lambda a: _moe_has(a, lambda m: (m.n_groups or 1) > 1),
    "correction_bias": lambda a: _moe_has(a, lambda m: bool(m.score_correction_bias)),
    "routed_scale": lambda a: _moe_has(a, lambda m: (m.routed_scale or 1.0) != 1.0),
    "sparse": lambda a: a.attention.sparse is not None,
    # DeepSeek-V4: compressed attention, mHC streams, experts chosen by token id
    "compressed": lambda a: a.attention.compressed is not None,
    "hyper_connections": lambda a: a.hyper_connections is not None,
    "hash_layers": lambda a: _moe_has(a, lambda m: bool(m.hash_layers)),
    "mamba": lambda a: LayerKind.MAMBA in a.attention.layer_pattern,
    "rg_lru": lambda a: LayerKind.RG_LRU in a.attention.layer_pattern,
    # Falcon-H1: attention beside Mamba-2, its mixer norm choices and muP factors
    "parallel_mamba2": lambda a: LayerKind.GLOBAL_MAMBA2 in a.attention.layer_pattern,
    "mamba2_norm": lambda a: (
        mamba2_sizes_of(a) is not None and mamba2_sizes_of(a).norm not in (None, Mamba2Norm.GATED)
    ),
    "sublayer_multipliers": lambda a: sublayer_factors(a) != {},
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
        mamba2_sizes_of(a) is not None and mamba2_sizes_of(a).time_step_floor is not None
    ),
    # LongCat-Flash: zero-computation experts and shortcut-connected MoE layers
    "zero_experts": lambda a: _moe_has(a, lambda m: bool(m.zero_experts)),
    "shortcut_moe": lambda a: _moe_has(a, lambda m: m.shortcut_dense_d_ff is not None),
    "qkv_clip": lambda a: a.attention.qkv_clip is not None,  # MPT, DBRX clip_qkv
    "embedding_norm": lambda a: bool(a.embedding_norm),  # BLOOM's word_embeddings_layernorm
    "masked_lm": lambda a: a.encoder is not None,  # an encoder-only model's parts (BERT)
    "rwkv": lambda a: LayerKind.RWKV in a.attention.layer_pattern,  # RWKV's time mixing
    "channel_mix": lambda a: bool(a.mlp.channel_mix),  # ... and its channel mixing
    # DeepSeek's YaRN: mscale_all_dim tempers the whole softmax (yarn_apply_mscale)
    "yarn_softmax_mscale": lambda a: (
        a.position.rope_scaling is not None and a.position.rope_scaling.mscale_all_dim is not None
    ),
}


def mamba2_sizes_of(a: Architecture) -> Mamba2 | None:
    return a.mixers.mamba2 if a.mixers is not None else None


def sublayer_factors(a: Architecture) -> dict[str, object]:
    """Falcon-H1's factors on sublayer inputs and outputs the card sets (other than 1)."""
    m = mamba2_sizes_of(a)
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


def _moe_has(a: Architecture, test: Callable[[MoE], bool]) -> bool:
    return a.mlp.moe is not None and test(a.mlp.moe)


def function_keys(spec: FamilySpec, a: Architecture, written: dict) -> dict:
    """The output-only choices every family's config keeps under a key of its own: the
    norm epsilon, and the RoPE base with its scaling, where the card records them (a
    writer that sets them itself wins)."""
    keys: dict = {}
    if spec.eps_key and a.norm.eps is not None and spec.eps_key not in written:
        keys[spec.eps_key] = a.norm.eps
    pos = a.position
    rope_written = {"rope_theta", "rope_parameters"} & set(written)
    if spec.rope_key and pos.type is PositionType.ROPE and not rope_written:
        theta = {"rope_theta": pos.rope_theta} if pos.rope_theta else {}
        if theta or pos.rope_scaling is not None:
            keys[spec.rope_key] = {"rope_type": "default"} | theta | rope_scaling_config(a)
    return keys


def check_extras(a: Architecture, spec: FamilySpec) -> None:
    used = [name for name, uses in EXTRAS.items() if uses(a) and name not in spec.extras]
    require(not used, f"transformers' {spec.model_type} has no {', '.join(used)}")


# --- shared checks --------------------------------------------------------------------------


def need_norm(
    a: Architecture, kind: NormType, affine: NormAffine, position: NormPosition, final: bool = True
) -> None:
    n = a.norm
    require(n.type is kind, f"norm.type must be {kind.value}")
    require(n.affine is affine, f"norm.affine must be {affine.value}")
    require(n.position is position, f"norm.position must be {position.value}")
    require(n.final is final, f"norm.final must be {final}")


def need_serial(a: Architecture) -> None:
    require(not a.parallel_layers, "parallel_layers must be false")


def need_parallel(a: Architecture, shared: bool) -> None:
    require(bool(a.parallel_layers), "parallel_layers must be true")
    require(bool(a.norm.shared_in_parallel) is shared, f"norm.shared_in_parallel must be {shared}")


def need_activation(a: Architecture, *allowed: Activation) -> None:
    require(
        a.mlp.activation in allowed,
        f"mlp.activation must be one of {', '.join(x.value for x in allowed)}",
    )


def need_softmax_attention(a: Architecture, qk: QKNorm = QKNorm.NONE) -> None:
    require(a.attention.variant is AttentionVariant.SOFTMAX, "attention.variant must be softmax")
    require(a.attention.qk_norm is qk, f"attention.qk_norm must be {qk.value}")


def need_position(a: Architecture, *allowed: PositionType) -> None:
    require(
        a.position.type in allowed,
        f"position.type must be one of {', '.join(x.value for x in allowed)}",
    )


def need_dense(a: Architecture) -> None:
    require(a.mlp.moe is None, "a dense MLP (mlp.moe null)")


def need_pattern(a: Architecture, *allowed: LayerKind) -> None:
    require(
        set(a.attention.layer_pattern) <= set(allowed),
        f"layer_pattern may use only {', '.join(x.value for x in allowed)}",
    )


def need_bias(a: Architecture, qkv: bool, out: bool, mlp: bool, lm_head: bool = False) -> None:
    b = a.bias
    got = (b.qkv, b.attn_out, b.mlp, bool(b.lm_head))
    require(
        got == (qkv, out, mlp, lm_head),
        f"bias (qkv, attn_out, mlp, lm_head) must be {(qkv, out, mlp, lm_head)}, got {got}",
    )


def base_config(a: Architecture) -> dict:
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


def need_llama_like(a: Architecture, qk: QKNorm = QKNorm.NONE) -> None:
    need_norm(a, NormType.RMSNORM, NormAffine.SCALE, NormPosition.PRE)
    need_serial(a)
    need_activation(a, Activation.SWIGLU)
    need_softmax_attention(a, qk)
    need_position(a, PositionType.ROPE)


# --- converters -----------------------------------------------------------------------------


def rope_config(a: Architecture) -> dict:
    """RoPE base and rotating share, as transformers 5 spells them."""
    fraction = a.position.rotary_fraction
    params = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
    return {"rope_parameters": params | ({"partial_rotary_factor": fraction} if fraction else {})}


def layer_kind_names(a: Architecture, names: dict[LayerKind, str]) -> list[str]:
    """Every layer's transformers layer type."""
    return [names[k] for k in a.layer_kinds()]


def mamba2_config(a: Architecture, prefix: str) -> dict:
    m = a.mixers.mamba2 if a.mixers is not None else None
    require(m is not None, "mixers.mamba2 sizes")
    inner = m.n_heads * m.head_dim
    require(inner % a.d_model == 0, "the inner width a whole multiple of d_model (expand)")
    names = {
        "n_heads": ("num_heads", "mamba_n_heads"),
        "head_dim": ("head_dim", "mamba_d_head"),
        "state_size": ("state_size", "mamba_d_state"),
        "n_groups": ("n_groups", "mamba_n_groups"),
        "conv_kernel": ("conv_kernel", "mamba_d_conv"),
        "conv_bias": ("use_conv_bias", "mamba_conv_bias"),
        "proj_bias": ("use_bias", "mamba_proj_bias"),
    }
    return mixer_config(m, names, prefix, inner // a.d_model)


def mixer_config(
    mixer: object, names: dict[str, tuple[str, str]], prefix: str, expand: int
) -> dict:
    """A mixer's sizes under the config's names: (its own config's, a hybrid's
    "mamba_"-prefixed), plus the expansion factor of its inner width."""
    out = {keys[1] if prefix else keys[0]: getattr(mixer, name) for name, keys in names.items()}
    out["mamba_expand" if prefix else "expand"] = expand
    return out


def rope_scaling_config(a: Architecture) -> dict:
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
        "mscale": "mscale",
        "mscale_all_dim": "mscale_all_dim",
    }
    out = {"rope_type": s.type.value, "factor": s.factor}
    given = {key: getattr(s, name) for name, key in keys.items()}
    return out | {key: value for key, value in given.items() if value is not None}


def layer_types_of(a: Architecture) -> list[str]:
    names = {LayerKind.LOCAL: "sliding_attention", LayerKind.CHUNKED: "chunked_attention"}
    return [names.get(k, "full_attention") for k in a.layer_kinds()]


def need_sigmoid_router(moe: MoE) -> None:
    """transformers' DeepSeek-V3 and GLM-4.5 routers: sigmoid scores, always."""
    require(moe.score_function is not RouterScore.SOFTMAX, "mlp.moe.score_function sigmoid")
    grouped = (moe.n_groups or 1) > 1
    require(not grouped or moe.group_score is GroupScore.TOP2_SUM, "groups by top2-sum")


# --- multi-token prediction -----------------------------------------------------------------
# The MTP modules (architecture.mtp) under the keys the families' released configs use, as
# import-hf reads them. DeepseekV3Config reads num_nextn_predict_layers (its num_mtp_layers);
# GlmMoeDsaConfig, Qwen3_5(Moe)TextConfig and MiniMaxM2Config define no MTP key and keep the
# released keys as attributes. No causal-LM class builds MTP weights (archdb's exact count
# leaves them out too), so the keys change no count and no logit.


def mtp_config(a: Architecture, key: str) -> dict:
    """One count of one-block modules: DeepSeek-V3's and GLM-5's num_nextn_predict_layers,
    Qwen3-Next's and Qwen3.5's mtp_num_hidden_layers."""
    if a.mtp is None:
        return {}
    require(a.mtp.layers_per_module == 1, f"mtp.layers_per_module 1 ({key} has no other)")
    return {key: a.mtp.n_modules}
