"""Card -> config: the values several families' key maps write (RoPE blocks, layer types,
mixer sizes, MTP counts), and ``NotRepresentable``.

Each family's writer (``FamilySpec.write``) is derived from its keys and fixed choices
(``archdb_hf.keymap``): it refuses a card that differs from what the family's code fixes,
so a comparison never passes by building a different model. It does *not* patch
differences that are the card's to fix (an OPT card without its two extra position rows
builds, and the counts differ). The tests and benchmarks build transformers' model from
the written config (``archdb_hf.testing``); ``archdb.fidelity`` asks whether the family
can represent a card at all.

Pure Python: nothing here imports transformers.
"""

from __future__ import annotations

from archdb.mixers.mamba2 import Mamba2
from archdb.schema import (
    Architecture,
    GroupScore,
    LayerKind,
    MoE,
    RouterScore,
)
from archdb_hf.keymap import ROPE_SCALING_KEYS, NotRepresentable, require

__all__ = ["NotRepresentable", "require"]


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


# --- values a key map writes ---------------------------------------------------------------


def rope_config(a: Architecture) -> dict:
    """RoPE base and rotating share, as transformers 5 spells them."""
    fraction = a.position.rotary_fraction
    params = {"rope_type": "default", "rope_theta": a.position.rope_theta or 10000.0}
    return {"rope_parameters": params | ({"partial_rotary_factor": fraction} if fraction else {})}


def layer_kind_names(a: Architecture, names: dict[LayerKind, str]) -> list[str]:
    """Every layer's transformers layer type."""
    return [names[k] for k in a.layer_kinds()]


def rope_scaling_config(a: Architecture) -> dict:
    """The card's RoPE scaling as transformers' rope_parameters keys (none: {})."""
    s = a.position.rope_scaling
    if s is None:
        return {}
    keys = ROPE_SCALING_KEYS.get(s.type.value, {})  # a family's own type writes its own keys
    out = {"rope_type": s.type.value, "factor": s.factor}
    given = {key: getattr(s, name) for name, key in keys.items()}
    given = {key: list(v) if isinstance(v, tuple) else v for key, v in given.items()}
    return out | {key: value for key, value in given.items() if value is not None}


def layer_types_of(a: Architecture) -> list[str]:
    names = {LayerKind.LOCAL: "sliding_attention", LayerKind.CHUNKED: "chunked_attention"}
    return [names.get(k, "full_attention") for k in a.layer_kinds()]


def moe_of(a: Architecture) -> MoE:
    """The card's mixture of experts, which an MoE family's code always builds."""
    require(a.mlp.moe is not None, "a mixture of experts (mlp.moe)")
    return a.mlp.moe


def need_sigmoid_router(moe: MoE | None) -> None:
    """transformers' DeepSeek-V3 and GLM-4.5 routers: sigmoid scores, always."""
    require(moe is not None, "a mixture of experts (mlp.moe)")
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
