"""MiniMax-01 (lightning attention) and MiniMax-M2."""

from __future__ import annotations

from dataclasses import replace

from archdb.schema import Architecture, LayerKind
from archdb_hf.draft import (
    Draft,
    HFImportError,
    read_keys,
    read_layer_period,
    read_mtp,
    shown_briefly,
)
from archdb_hf.families.card_to_config import layer_kind_names, require, sublayer_factors
from archdb_hf.families.llama import MIXTRAL, ROPE, mixtral_names
from archdb_hf.families.qwen import QWEN3_MOE
from archdb_hf.keymap import Key, key_or, uses, value_at
from archdb_hf.tensors import Checkpoint, Names, Source, WeightsError

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_minimax_m2(d: Draft) -> None:
    """MiniMax-M2: every layer's MLP is the experts (intermediate_size each, no shared
    expert); sigmoid scores, the correction bias choosing, the chosen scores renormalized;
    partial RoPE from the legacy rotary_dim (of head_dim) when no partial_rotary_factor."""
    d.read("scoring_func")  # MiniMaxM2TopKRouter is sigmoid whatever the config says
    read_mtp(d, "num_mtp_modules", "mtp_transformer_layers", switch="use_mtp")
    head_dim = d.value("architecture.attention.head_dim") or 128  # MiniMaxM2Config's default
    _read_rotary_dim(d, head_dim, strict=True)


def _read_rotary_dim(d: Draft, head_dim: int, strict: bool = False) -> None:
    """The legacy rotary_dim (of head_dim) as the rotating share where it is partial;
    ``strict``: refused where partial_rotary_factor gives another."""
    rotary_dim = d.read("rotary_dim")
    if rotary_dim is None:
        return
    fraction = rotary_dim / head_dim
    given = d.value("architecture.position.rotary_fraction")
    if strict and given is not None and abs(given - fraction) > 1e-9:
        raise HFImportError(
            f"rotary_dim {rotary_dim} of head_dim {head_dim} contradicts partial_rotary_factor "
            f"{given}: the config contradicts itself"
        )
    if fraction < 1:
        d.set("architecture.position.rotary_fraction", fraction, "config")


def _read_minimax(d: Draft) -> None:
    """MiniMax-01: lightning layers ("linear_attention") and softmax attention, Mixtral's
    MoE on every layer, the residual taken after each norm, alpha (skip) and beta (output)
    factors per sublayer kind. Reads transformers' keys or the released remote code's
    (attn_type_list, layernorm_*_alpha/beta, rotary_dim, postnorm)."""
    if not d.read("postnorm", default=True):
        raise HFImportError(
            "postnorm is false (the residual taken before each norm): transformers' minimax "
            "and every MiniMax-01 release take it after, the one layout archdb maps"
        )
    n_layers = d.value("architecture.n_layers")
    codes = d.read("attn_type_list")
    if not d.read("layer_types"):
        if codes is not None and len(codes) != n_layers:
            raise HFImportError(
                f"attn_type_list lists {len(codes)} layers but num_hidden_layers is {n_layers}: "
                "the config contradicts itself"
            )
        if codes is None:  # MiniMaxConfig's default: full attention, then lightning, ...
            codes = [(i + 1) % 2 for i in range(n_layers)]
        kinds = ["global" if code else "lightning" for code in codes]
        origin = "config" if d.origin_of("attn_type_list") == "config" else "family"
        d.set("architecture.attention.layer_pattern", read_layer_period(kinds), origin)
    d.read("block_size")  # the chunk of tokens its kernel takes at once: same function
    shared = d.read("shared_intermediate_size", default=0)
    d.read("shared_moe_mode")  # how a shared expert's output would be gated
    if shared:
        raise HFImportError(
            f"shared_intermediate_size is {shown_briefly(shared)}: the remote code's shared expert "
            "(gated by a learned coefficient) is not in transformers' minimax nor the card"
        )
    heads = d.value("architecture.attention.n_heads")
    head_dim = (
        d.value("architecture.attention.head_dim") or d.value("architecture.d_model") // heads
    )
    if "lightning" in (d.value("architecture.attention.layer_pattern") or []):
        if d.config.get("model_type") in d.family.aliases and heads & (heads - 1):
            raise HFImportError(
                f"num_attention_heads is {heads}, not a power of 2: MiniMax's remote code then "
                "interleaves ALiBi's slopes of the next power, not the decay rule the card "
                "names (minimax, transformers')"
            )
        d.set("architecture.mixers.lightning.n_heads", heads, "config")
        d.set("architecture.mixers.lightning.head_dim", head_dim, "config")
        read_keys(d, FACTORS[4:])  # the lightning layers' (the pattern is known now)
    _read_rotary_dim(d, head_dim)  # the released config's rotating share of head_dim
    if d.value("architecture.position.rotary_fraction") is not None:
        d.note(
            "architecture.position.rotary_fraction",
            "transformers' minimax (5.x) rotates the whole head: its rotary ignores a partial "
            "share, so its logits differ from this card's; MiniMax's released remote code "
            "rotates rotary_dim of head_dim, as the card does.",
        )


# --- card -> config (the reference) ------------------------------------------------------


def _minimax(a: Architecture) -> dict:
    """Lightning's heads and head width are the attention's (one num_attention_heads, one
    head_dim). transformers' MiniMax rotates the whole head (its rotary ignores
    partial_rotary_factor): counts do not depend on it."""
    others = sorted(k for k in sublayer_factors(a) if k not in _MINIMAX_BETAS)
    require(not others, f"no {', '.join(others)} (MiniMax has none)")
    li = value_at(a, "mixers.lightning")
    require(
        li is None or (li.n_heads, li.head_dim) == (a.attention.n_heads, a.head_dim_effective),
        "mixers.lightning n_heads and head_dim equal to attention's",
    )
    return {}


# the alpha (skip) and beta (output) factors per sublayer kind (1.0: none), under
# transformers' names and the released remote code's
FACTORS = tuple(
    key_or(name, path, 1.0, default=1.0, also=(legacy,), into=float,
           kind="lightning" if "lightning" in path else None,
           when=uses(LayerKind.LIGHTNING) if "lightning" in path else None)
    for name, legacy, path in (
        ("full_attn_alpha_factor", "layernorm_full_attention_alpha", "attention.skip_multiplier"),
        ("full_attn_beta_factor", "layernorm_full_attention_beta", "attention.output_multiplier"),
        ("mlp_alpha_factor", "layernorm_mlp_alpha", "mlp.skip_multiplier"),
        ("mlp_beta_factor", "layernorm_mlp_beta", "mlp.output_multiplier"),
        ("linear_attn_alpha_factor", "layernorm_linear_attention_alpha",
         "mixers.lightning.skip_multiplier"),
        ("linear_attn_beta_factor", "layernorm_linear_attention_beta",
         "mixers.lightning.output_multiplier"),
    )
)  # fmt: skip

_LAYER_TYPES = {LayerKind.LIGHTNING: "linear_attention", LayerKind.GLOBAL: "full_attention"}
_MINIMAX_BETAS = frozenset({"attention.output_multiplier", "mlp.output_multiplier"})


def _has_mtp(a: Architecture) -> bool:
    return a.mtp is not None


# MiniMax-M2: use_mtp switches num_mtp_modules modules of mtp_transformer_layers blocks
_MTP = (
    Key("use_mtp", out=lambda a: a.mtp.n_modules > 0, when=_has_mtp, read=False),
    Key("num_mtp_modules", "mtp.n_modules", when=_has_mtp, read=False),
    Key("mtp_transformer_layers", "mtp.layers_per_module", when=_has_mtp, read=False),
)


# --- checkpoint names (loading weights) --------------------------------------------------


def _minimax_m2_names() -> Names:
    """Mixtral's names (saved per expert as w1, w3, w2); the correction bias sits on the
    MoE block, not its gate."""
    names = mixtral_names()
    bias = Source("block_sparse_moe.e_score_correction_bias")
    names.layer["mlp.sublayer.router.correction_bias"] = bias
    return names


def _minimax_names() -> Names:
    """MiniMax-01: Mixtral's names (transformers saves the experts per expert as w1, w3,
    w2); lightning layers' self_attn.qkv_proj, output_gate, out_proj, norm and their decay
    rates slope_rate. The block decays transformers also stores (query_decay, key_decay,
    diagonal_decay) are functions of slope_rate and block_size: checked, not loaded."""
    names = mixtral_names()
    # softmax attention with a beta factor is wrapped in a ScaledMixer (its tensors under
    # .inner): the same checkpoint names
    names.layer.update(
        {
            "attn.sublayer.inner." + rest: source
            for name, source in list(names.layer.items())
            if (rest := name.removeprefix("attn.sublayer.")) != name
        }
    )
    lightning = ("qkv_proj.weight", "output_gate.weight", "out_proj.weight", "slope_rate")
    names.layer.update({f"attn.sublayer.{p}": Source(f"self_attn.{p}") for p in lightning})
    names.layer["attn.sublayer.norm_weight"] = Source("self_attn.norm.weight")
    return replace(names, derived=_minimax_block_decays)


def _minimax_block_decays(ckpt: Checkpoint, layer_prefix: str) -> None:
    """transformers' MiniMaxLightningAttention stores its block decays beside slope_rate:
    each must equal what its decay_factors computes from that slope_rate."""
    import torch

    attn = layer_prefix + "self_attn."
    if not ckpt.has(attn + "slope_rate"):
        return  # a softmax attention layer
    slope = ckpt.take(attn + "slope_rate").float()
    block = ckpt.shape(attn + "query_decay")[1]
    steps = torch.arange(block, dtype=torch.float32) + 1
    gaps = steps[:, None] - steps[None, :]
    expected = {
        "query_decay": torch.exp(-slope * steps[:, None]),
        "key_decay": torch.exp(-slope * (block - steps[:, None])),
        "diagonal_decay": torch.exp(
            torch.where(gaps >= 0, -slope[None] * gaps, torch.tensor(float("-inf")))
        ),
    }
    for name, want in expected.items():
        value = ckpt.take(attn + name).float()
        if value.shape != want.shape or not torch.allclose(value, want, rtol=1e-3, atol=1e-6):
            raise WeightsError(
                f"checkpoint tensor {attn + name!r} is not the block decay its slope_rate gives"
            )


# --- the families ----------------------------------------------------------------------

# logit test: sigmoid scores with a correction bias, full QK norm, partial RoPE
MINIMAX_M2 = QWEN3_MOE.derive(
    "minimax_m2",
    free=("position.rotary_fraction",),  # its hook writes the rotating share
    # scoring_func: read (and overridden: sigmoid) by the hook; the MTP keys: kept as
    # attributes (card_to_config.mtp_config)
    released_keys=("scoring_func", "use_mtp", "num_mtp_modules", "mtp_transformer_layers"),
    classes="MiniMaxM2",
    qk_norm="full",
    rope_theta_default=5000000.0,
    fixed_bias=(False, False, False),
    keys=(
        Key("attention_bias"),
        Key("moe_intermediate_size"),
        Key("intermediate_size", "mlp.d_ff", read=False),  # each expert's
        Key("num_experts"),
        Key("decoder_sparse_step"),
        Key("norm_topk_prob"),
        Key("num_local_experts", "mlp.moe.n_experts", default=256, also=("num_experts",)),
        Key("num_experts_per_tok", "mlp.moe.n_active", default=8),
        ROPE,
        *_MTP,
    ),
    # sigmoid scores, the correction bias choosing, the chosen renormalized, no scale
    fixed=(
        ("mlp.moe.score_function", "sigmoid"),
        ("mlp.moe.score_correction_bias", True),
        ("mlp.moe.normalize_top_k", True),
        ("mlp.moe.routed_scale", 1.0),
    ),
    read=_read_minimax_m2,
    extras=frozenset({"correction_bias", "sigmoid_scores"}),
    names=_minimax_m2_names,
    logit_error=2.5e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.score_correction_bias",
    ),
)
# logit test: lightning attention (blocks of 8 in transformers, recurrent here) around
# softmax attention, Mixtral's MoE, every alpha/beta factor off 1 (three token seeds)
MINIMAX = MIXTRAL.derive(
    "minimax",
    free=("position.rotary_fraction",),  # its hook writes the rotating share
    released_keys=("rotary_dim",),  # MiniMax-Text-01's remote code: RoPE on part of a head
    classes="MiniMax",
    norm_position="normed-skip",
    rope_theta_default=1000000.0,
    sliding_everywhere=False,
    linear_layer="lightning",
    kinds=("lightning", "global"),
    # the residual taken after each norm, with alpha (skip) and beta (output) factors
    keys=(
        Key("sliding_window"),
        ROPE,
        Key("layer_types", out=lambda a: layer_kind_names(a, _LAYER_TYPES), read=False),
        *FACTORS,
    ),
    fixed=(*MIXTRAL.fixed, ("mixers.lightning.decay", "minimax"), ("mixers.lightning.mlp", True)),
    read=_read_minimax,
    # MiniMax-01's and MiniMax-M1's remote code: the layout transformers' minimax implements
    # (the importer reads their attn_type_list, layernorm_*_alpha/beta, rotary_dim, postnorm)
    aliases=("minimax_text_01", "minimax_m1"),
    write=_minimax,
    extras=frozenset({"lightning", "skip_multipliers", "sublayer_multipliers"}),
    names=_minimax_names,
    logit_error=3.3e-07,
)
