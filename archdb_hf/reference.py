"""The reference: a card written as its transformers family's config (card -> config).

The tests and the fidelity levels build transformers' model of a card from this config.
Each family's writer (``FamilySpec.write``) is derived from its keys and fixed choices
(``archdb_hf.keymap``); here sit what every writer shares: the optional mechanisms a
family must build (``EXTRAS``), the output-only keys every config keeps, and the round
trip (``round_trip_losses``: a written config read back by import-hf, and what it lost).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache

from pydantic import ValidationError

from archdb.fields import Switch, leaf_values, with_role
from archdb.mixers.mamba2 import Mamba2Norm
from archdb.plan.layout import fill_unknowns
from archdb.schema import Architecture, LayerKind, MoE, PositionType, RouterScore
from archdb_hf.draft import OUTER_KEYS
from archdb_hf.families.card_to_config import (
    mamba2_sizes_of,
    require,
    rope_scaling_config,
    sublayer_factors,
)
from archdb_hf.families.registry import SPECS
from archdb_hf.families.spec import FamilySpec
from archdb_hf.importer import HFImportError, Identity, import_config
from archdb_hf.keymap import NotRepresentable

__all__ = ["NotRepresentable", "convert", "round_trip_losses"]


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
    "sublayer_norms": lambda a: bool(a.norm.sublayer_norms),  # BitNet's subln
    "query_rank": lambda a: a.attention.query_rank is not None,  # Step-3's MFA query
    "last_dense_layers": lambda a: _moe_has(a, lambda m: bool(m.last_dense_layers)),
    "token_shift": lambda a: bool(a.mlp.token_shift),  # RWKV-7's channel mixing
    "router_softcap": lambda a: _moe_has(a, lambda m: m.router_softcap is not None),  # Grok-2
    "temperature_length": lambda a: a.attention.temperature_length is not None,  # Grok-2
    # Llama 4: NoPE layers' temperature and no QK norm, each expert's input weighted
    "nope_temperature": lambda a: a.attention.nope_temperature is not None,
    "qk_norm_rope_only": lambda a: bool(a.attention.qk_norm_rope_only),
    "weighted_input": lambda a: _moe_has(a, lambda m: bool(m.weighted_input)),
    "blocksparse": lambda a: LayerKind.BLOCKSPARSE in a.attention.layer_pattern,  # Phi-3-small
    "dense_beside": lambda a: a.mlp.moe is not None and a.mlp.moe.dense_beside_d_ff is not None,
    "router_scales": lambda a: a.mlp.moe is not None and bool(a.mlp.moe.router_scales),
    "moe_latent": lambda a: a.mlp.moe is not None and a.mlp.moe.latent_dim is not None,
    "layer_scalar": lambda a: bool(a.layer_scalar),
    "residual_multiplier": lambda a: a.residual_multiplier not in (None, 1.0),
    # router variants (archdb.parts.moe.RouterSpec) beyond Mixtral's softmax top-k
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


def convert(arch: Architecture, model_type: str) -> dict:
    """The card as its family's transformers config; NotRepresentable when the family
    cannot build it (an optional mechanism it lacks, or a fixed choice the card differs on)."""
    spec = SPECS[model_type]
    check_extras(arch, spec)
    written = spec.write(arch)
    return written | function_keys(spec, arch, written)


# --- the round trip card -> config -> card ---------------------------------------------
# A card written as its family's config and read back by import-hf should be the card
# again. Each recorded value that does not come back is a choice transformers' family
# would not build from that config.

# values that live outside a transformers config (the tokenizer's own vocabulary)
NOT_CONFIG = frozenset({"tokenizer_vocab_size"})
REFUSED = "(import-hf cannot read the written config back into a valid card)"
_URL = "https://example.org/config.json"
_IDENTITY = Identity("round-trip", "Round trip", "round-trip", "archdb", "2024-01-01")


@cache
def _switches() -> frozenset[str]:
    return frozenset(path for path, _ in with_role(Architecture, Switch))


def recorded(arch: Architecture) -> dict[str, object]:
    """The values a card records (nulls are 'not recorded', and so is false for a switch,
    whose null is off too), head width as built."""
    switches = _switches()
    values = {
        k: v
        for k, v in leaf_values(arch).items()
        if v is not None and not (v is False and k in switches)
    }
    values["attention.head_dim"] = arch.head_dim_effective
    return {k: v for k, v in values.items() if k not in NOT_CONFIG}


def saved_config(config: dict, model_type: str) -> dict:
    """A written config as its release's config.json holds it: flat, or for a text decoder
    released only inside a multimodal model (``released_as``), as that model's text_config
    with the keys the release keeps outside it (the embeddings' tie) beside it."""
    released = SPECS[model_type].released_as
    if released is None:
        return config | {"model_type": model_type}
    text = {k: v for k, v in config.items() if k not in OUTER_KEYS}
    outer = {k: v for k, v in config.items() if k in OUTER_KEYS}
    return {"model_type": released, "text_config": text | {"model_type": model_type}} | outer


def read_back(config: dict, model_type: str) -> Architecture | None:
    """The card import-hf reads from a written config, as a saved config.json holds it;
    None where it refuses the config, or reads it into a card the schema refuses."""
    saved = json.loads(json.dumps(saved_config(config, model_type)))
    try:
        card = import_config(saved, source_url=_URL, identity=_IDENTITY).card
        return Architecture.model_validate(card["architecture"])
    except (HFImportError, ValidationError):
        return None


def round_trip_losses(arch: Architecture, model_type: str) -> set[str]:
    """The card's recorded values that do not come back through config.json (``REFUSED``
    when import-hf cannot read the written config); what the build assumes for the card's
    nulls is not recorded, so never a loss. NotRepresentable when the family cannot build
    the card at all."""
    filled, assumed = fill_unknowns(arch)
    back = read_back(convert(filled, model_type), model_type)
    if back is None:
        return {REFUSED}
    theirs = recorded(back)
    lost = {path for path, value in recorded(filled).items() if theirs.get(path) != value}
    return lost - {a.field for a in assumed}
