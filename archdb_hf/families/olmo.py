"""OLMo 1, 2 and 3, OLMoE, and EXAONE 4."""

from __future__ import annotations

from functools import partial

from archdb.schema import Architecture, LayerKind
from archdb_hf.draft import (
    Draft,
    HFImportError,
    pattern_letters,
    read_layer_period,
    read_only,
    rope_parameters_of,
)
from archdb_hf.families.card_to_config import rope_scaling_config
from archdb_hf.families.llama import LAYER_TYPES, LLAMA, ROPE, llama_names
from archdb_hf.keymap import Key, normalizes_top_k, require, sliding_window_key
from archdb_hf.tensors import qwen3_moe_names

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_olmo3(d: Draft) -> None:
    """OLMo 3: OLMo 2 with sliding layers (by default three to every full one, windows of
    4096) and a RoPE block per layer type; rope_scaling goes to the full layers only."""
    pattern = d.value("architecture.attention.layer_pattern")
    if not d.read("layer_types"):  # Olmo3Config: every fourth layer full attention
        pattern = ["local", "local", "local", "global"]
        d.set("architecture.attention.layer_pattern", pattern, "family")
    if "local" in pattern and d.value("architecture.attention.sliding_window") is None:
        window = d.read("sliding_window", default=4096)  # Olmo3Config's default
        d.set("architecture.attention.sliding_window", window, d.origin_of("sliding_window"))
        d.unmapped.pop("sliding_window", None)
    _full, local = rope_parameters_of(d)
    if "local" not in pattern or d.value("architecture.position.rope_scaling.type") is None:
        return
    if local.get("rope_type", "default") != "default":
        raise HFImportError(
            "rope_parameters.sliding_attention scales RoPE too: the card holds one scaling, "
            "for the full-attention layers"
        )
    theta = local.get("rope_theta") or d.value("architecture.position.rope_theta")
    d.set("architecture.position.rope_theta_local", float(theta), "config")
    d.note(
        "architecture.position.rope_theta_local",
        "OLMo 3 scales RoPE on its full-attention layers only: the sliding layers' own base "
        "(rope_theta_local) keeps them unscaled.",
    )


def _read_exaone4(d: Draft) -> None:
    """EXAONE 4: with a sliding window, sliding layers (RoPE) and full layers without RoPE
    (by default three to one, windows of 4096); without one, every layer full with RoPE."""
    # Exaone4Config's default when absent; an explicit null: no sliding layers
    window = d.read_nullable("sliding_window", 4096)
    n = d.value("architecture.n_layers")
    types = d.read("layer_types")
    if types:
        sliding = [t == "sliding_attention" for t in types]  # checked by _pattern_from_types
    else:  # every sliding_window_pattern-th layer full
        every = pattern_letters(d.read("sliding_window_pattern", default=4))
        sliding = [(i + 1) % every != 0 for i in range(n)]
    # no window: sliding layers attend to everything, and every layer rotates
    kinds = ["global"] * n if window is None else ["local" if s else "global-nope" for s in sliding]
    d.set(
        "architecture.attention.layer_pattern", read_layer_period(kinds), d.origin_of("layer_types")
    )
    d.unmapped.pop("sliding_window", None)
    d.set("architecture.attention.sliding_window", window if "local" in kinds else None, "config")
    if window is not None and "local" not in kinds:
        d.note(
            "architecture.attention.layer_pattern",
            f"sliding_window {window} is set, so the full-attention layers skip RoPE.",
        )


def _read_olmoe(d: Draft) -> None:
    why = "OLMoE clamps q, k and v after its QK norms, archdb's attention before them"
    read_only(d, "clip_qkv", None, why)


# --- card -> config (the reference): what no key writes ---------------------------------


def _olmo3(a: Architecture) -> dict:
    """RoPE scaling on the full layers, the sliding layers at their own base
    (rope_theta_local) unscaled."""
    pos = a.position
    theta = pos.rope_theta or 500000.0
    local = LayerKind.LOCAL in a.layer_kinds()
    require(
        pos.rope_scaling is None or not local or pos.rope_theta_local is not None,
        "OLMo 3 scales RoPE on full layers only: local layers need rope_theta_local",
    )
    full = {"rope_type": "default", "rope_theta": theta} | rope_scaling_config(a)
    sliding = {"rope_type": "default", "rope_theta": pos.rope_theta_local or theta}
    return {"rope_parameters": {"full_attention": full, "sliding_attention": sliding}}


def _exaone4(a: Architecture) -> dict:
    """With a window, RoPE on the sliding layers only (full layers NoPE); without one,
    RoPE on every full layer."""
    kinds = set(a.attention.layer_pattern)
    require(
        kinds <= {LayerKind.LOCAL, LayerKind.GLOBAL_NOPE} or kinds == {LayerKind.GLOBAL},
        "layer_pattern of local and global-nope layers (a window), or global only (none)",
    )
    windowed = LayerKind.GLOBAL not in kinds
    return {"sliding_window": (a.attention.sliding_window or 4096) if windowed else None}


# --- the families ----------------------------------------------------------------------

OLMO = LLAMA.derive(
    "olmo",
    classes="Olmo",
    eps_key=None,
    norm="layernorm",
    norm_affine="none",
    mlp_bias=False,
    keys=(Key("mlp_bias"),),
    names=partial(llama_names, {}),  # non-parametric LayerNorms: no norm tensors
    logit_error=0.0,
)
OLMO2 = OLMO.derive(
    "olmo2",
    classes="Olmo2",
    eps_key="rms_norm_eps",
    norm="rmsnorm",
    norm_affine="scale",
    norm_position="post-branch",
    qk_norm="full",
    eps_default=1e-05,
    # OLMo 2 and 3, EXAONE 4: norms on the branch outputs
    names=partial(
        llama_names,
        {"attn.branch": "post_attention_layernorm", "mlp.branch": "post_feedforward_layernorm"},
    ),
    logit_error=0.0,
)
# Llama with full-width QK RMSNorms and experts in every layer under a softmax router
OLMOE = LLAMA.derive(
    "olmoe",
    classes="Olmoe",
    qk_norm="full",
    mlp_bias=False,
    eps_default=1e-05,
    keys=(
        Key("mlp_bias"),
        Key("num_experts", "mlp.moe.n_experts", required=True),
        Key("num_experts_per_tok", "mlp.moe.n_active", required=True),
        Key("norm_topk_prob", "mlp.moe.normalize_top_k", default=False, out=normalizes_top_k),
    ),
    read=_read_olmoe,
    names=qwen3_moe_names,
    logit_error=0.0,
)
# logit test: OLMo 2 with sliding layers; YaRN on the full layers only
OLMO3 = OLMO2.derive(
    "olmo3",
    classes="Olmo3",
    rope_theta_default=500000.0,
    kinds=("global", "local"),
    keys=(
        LAYER_TYPES,
        sliding_window_key(4096),
    ),
    read=_read_olmo3,
    write=_olmo3,
    logit_error=6.8e-07,
)  # fmt: skip
# logit test: post-branch norms, per-head QK norm, NoPE full layers
EXAONE4 = OLMO2.derive(
    "exaone4",
    kinds=("local", "global", "global-nope"),
    classes="Exaone4",
    qk_norm="per-head",
    full_layer="global-nope",
    fixed_bias=(False, False, False),
    keys=(Key("attention_bias"), ROPE, LAYER_TYPES),
    read=_read_exaone4,
    write=_exaone4,
    logit_error=6.5e-07,
)
