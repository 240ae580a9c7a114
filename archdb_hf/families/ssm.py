"""Mamba, Mamba-2 and their hybrids (Bamba, Nemotron-H, Falcon-H1, Jamba, Zamba2)."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from archdb.mixers.mamba2 import Mamba2Norm
from archdb.schema import Activation, Architecture, GeluApproximation, LayerKind, PositionType
from archdb_hf.draft import (
    Draft,
    HFImportError,
    attention_free,
    check_mamba2_width,
    multiplier,
    no_time_step_clamp,
    read_activation,
    read_bias,
    read_keys,
    read_layer_period,
    read_norm,
    read_position,
    read_positive,
    read_tied,
    rope_parameters_of,
    shown_briefly,
    sigmoid_router,
    silu_conv,
)
from archdb_hf.families.card_to_config import (
    mamba2_sizes_of,
    need_sigmoid_router,
    require,
)
from archdb_hf.families.deepseek import ROUTER_FIELDS, SIGMOID_SCORES, V3_EXTRAS, v3_router
from archdb_hf.families.llama import LLAMA, MIXTRAL, ROPE
from archdb_hf.keymap import Key, dropped, has_moe, part_keys, uses
from archdb_hf.tensors import (
    Names,
    Source,
    first_ff,
    llama_layer,
    moe_names,
    renamed,
    second_ff,
    top_names,
)

if TYPE_CHECKING:
    from torch import nn

# --- config -> card (import-hf) ----------------------------------------------------------

_ATTENTION_FREE = (
    "Attention-free: every layer is a Mamba-2 mixer (the transformers implementation)."
)
_LABELS = {"mamba": "Mamba", "mamba2": "Mamba-2"}


def _mixer_only_stack(d: Draft) -> None:
    """The step of a stack of mixer-only layers (Mamba, Mamba-2; their sizes: the keys):
    the family's pre RMSNorm, no attention, MLP, positions or biases."""
    kind = d.family.kinds[0].value
    label = _LABELS[kind]
    attention_free(d, kind, f"a {label} mixer")
    read_tied(d)
    d.set("architecture.bias.mlp", False, "family")
    for path in ("mlp.activation", "mlp.d_ff", "mlp.moe"):
        d.set(f"architecture.{path}", None, "family")
    for path in ("mlp.activation", "mlp.d_ff"):
        d.note(f"architecture.{path}", f"No MLP: a {label} layer is the mixer alone.")
    d.note("architecture.context_length", f"{label} has no position limit in its config.")


def _read_mamba2(d: Draft) -> None:
    inner = int(d.read("expand", required=True) * d.value("architecture.d_model"))
    check_mamba2_width(d, inner, "Mamba2Mixer", ("num_heads", "head_dim"))
    silu_conv(d)


def _read_bamba(d: Draft) -> None:
    """Bamba: Mamba-2 layers, attention at attn_layer_indices; every layer has the MLP."""
    n_layers = d.value("architecture.n_layers")
    indices = set(d.read("attn_layer_indices", default=[]) or [])
    if any(i >= n_layers for i in indices):
        raise HFImportError(
            f"attn_layer_indices names a layer beyond num_hidden_layers ({n_layers})"
        )
    kinds = ["global" if i in indices else "mamba2" for i in range(n_layers)]
    d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "config")
    read_keys(d, BAMBA_MIXER)  # sized once the pattern is known
    if "mamba2" in kinds:  # an attention-only stack has no mixer to size
        inner = int(d.read("mamba_expand", required=True) * d.value("architecture.d_model"))
        check_mamba2_width(d, inner, "BambaMixer")
        silu_conv(d)


def _mamba_inner(d: Draft, expand_key: str, rank_key: str) -> None:
    """Mamba-1's inner width (intermediate_size, else expand x hidden_size) and dt rank
    ("auto": ceil(hidden_size / 16) in transformers)."""
    d_model, sizes = d.value("architecture.d_model"), "architecture.mixers.mamba."
    inner = d.read("intermediate_size") if expand_key == "expand" else None
    inner = inner or int(d.read(expand_key, default=2) * d_model)
    d.set(sizes + "d_inner", inner, "config")
    rank = d.read(rank_key, default="auto")
    d.set(sizes + "dt_rank", math.ceil(d_model / 16) if rank == "auto" else rank, "config")


def _read_mamba(d: Draft) -> None:
    if str(d.read("hidden_act", default="silu")).lower() not in ("silu", "swish"):
        raise HFImportError("hidden_act: the Mamba mixer's gate and conv use SiLU only")
    _mamba_inner(d, "expand", "time_step_rank")


def _read_jamba(d: Draft) -> None:
    """Jamba: Mamba-1 layers (learned-scale RMSNorms on dt, B, C at rms_norm_eps) and
    attention without positions at i % attn_layer_period == attn_layer_offset; every layer
    has the MLP, the experts at i % expert_layer_period == expert_layer_offset."""
    n_layers = d.value("architecture.n_layers")
    period, offset = d.read("attn_layer_period", default=8), d.read("attn_layer_offset", default=4)
    if offset >= period:
        raise HFImportError(f"attn_layer_offset ({offset}) must be below attn_layer_period")
    kinds = ["global" if i % period == offset else "mamba" for i in range(n_layers)]
    d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "config")
    experts = d.read("num_experts", "num_local_experts", default=16)
    e_period = d.read("expert_layer_period", default=2)
    e_offset = d.read("expert_layer_offset", default=1)
    if experts > 1:
        if e_offset != e_period - 1:  # archdb's MoE layers are i % k == k - 1
            raise HFImportError(
                f"expert_layer_offset ({e_offset}) other than expert_layer_period - 1: the "
                "card's MoE layers are every layer_period-th counting from 1"
            )
        d.moe(
            n_experts=experts,
            n_active=d.read("num_experts_per_tok", default=2),
            layer_period=e_period,
            dense_d_ff=d.value("architecture.mlp.d_ff") if e_period > 1 else None,
        )
        d.set("architecture.mlp.moe.normalize_top_k", False, "family")  # JambaTopKRouter
    else:
        d.set("architecture.mlp.moe", None, "config")
    if "mamba" in kinds:
        read_keys(d, JAMBA_MIXER)  # sized once the pattern is known
        _mamba_inner(d, "mamba_expand", "mamba_dt_rank")
        eps = float(d.read("rms_norm_eps", default=1e-6))
        d.set("architecture.mixers.mamba.inner_norm_eps", eps, d.origin_of("rms_norm_eps"))


def _read_falcon_h1(d: Draft) -> None:
    """Falcon-H1: attention beside a Mamba-2 mixer in every layer (its sizes and muP
    factors: the keys; FalconH1Config's defaults throughout)."""
    d.read("layers_block_type")  # always "hybrid" per layer: the pattern below says so
    d.set("architecture.attention.layer_pattern", ["global+mamba2"], "family")
    check_mamba2_width(d, d.read("mamba_d_ssm", default=1024), "FalconH1Mixer")
    if d.read("projectors_bias", default=False) != d.value("architecture.mixers.mamba2.proj_bias"):
        raise HFImportError(
            "mamba_proj_bias (in_proj) and projectors_bias (out_proj) differ: "
            "mixers.mamba2.proj_bias holds one bias setting for both"
        )
    no_time_step_clamp(d)
    d.read("mamba_chunk_size")  # the chunked kernel's block: no effect on outputs
    norm = "none"
    if d.read("mamba_rms_norm", default=False):
        before = d.read("mamba_norm_before_gate", default=True)
        norm = "before-gate" if before else "gated"
    d.set("architecture.mixers.mamba2.norm", norm, d.origin_of("mamba_rms_norm"))
    head_dim = d.value("architecture.attention.head_dim") or (
        d.value("architecture.d_model") // d.value("architecture.attention.n_heads")
    )
    key = read_positive(d, "key_multiplier")
    d.set("architecture.attention.scale", key / math.sqrt(head_dim), d.origin_of("key_multiplier"))
    d.note(
        "architecture.attention.scale",
        f"FalconH1Attention multiplies the keys by key_multiplier ({key:g}) and scales the "
        f"scores by 1/sqrt(head_dim): the card stores key_multiplier/sqrt({head_dim}).",
    )
    ssm = _factor_list(d, "ssm_multipliers", 5)
    d.set("architecture.mixers.mamba2.projection_multipliers", ssm, d.origin_of("ssm_multipliers"))
    gate, down = _factor_list(d, "mlp_multipliers", 2)
    d.set("architecture.mlp.gate_multiplier", gate, d.origin_of("mlp_multipliers"))
    d.set("architecture.mlp.output_multiplier", down, d.origin_of("mlp_multipliers"))


def _factor_list(d: Draft, key: str, n: int) -> list[float]:
    """A list of n positive multipliers (default: n ones)."""
    values = d.read(key, default=None) or [1.0] * n
    if not isinstance(values, list | tuple) or len(values) != n:
        raise HFImportError(f"config.json: {key} must be a list of {n} numbers")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values):
        raise HFImportError(f"config.json: {key} must hold positive numbers (got {values!r})")
    return [float(v) for v in values]


# Nemotron-H's layer kinds: hybrid_override_pattern's characters (written, and read from
# older configs) and layers_block_type's names
_NEMOTRON_H_CODES = {
    LayerKind.MAMBA2: "M",
    LayerKind.GLOBAL: "*",
    LayerKind.MLP: "-",
    LayerKind.MOE: "E",
}
_NEMOTRON_H_TYPES = dict.fromkeys(("linear_attention", "mamba"), "mamba2")
_NEMOTRON_H_TYPES |= dict.fromkeys(("full_attention", "attention"), "global")
_NEMOTRON_H_TYPES |= {"mlp": "mlp", "moe": "moe"}
_NEMOTRON_H_DEFAULT = ["mamba2", "moe", "global", "mlp"]  # NemotronHConfig without a pattern


def _nemotron_h_kinds(d: Draft) -> list[str]:
    """Every layer's kind, from layers_block_type or the older hybrid_override_pattern."""
    types = d.read("layers_block_type")
    if types is not None:
        table, where, entries = _NEMOTRON_H_TYPES, "layers_block_type", list(types)
    else:
        pattern = d.read("hybrid_override_pattern")
        if pattern is None:
            return list(_NEMOTRON_H_DEFAULT)
        table = {code: kind.value for kind, code in _NEMOTRON_H_CODES.items()}
        where, entries = "hybrid_override_pattern", list(pattern)
    for index, entry in enumerate(entries):
        if entry not in table:
            raise HFImportError(
                f"{where}[{index}] is {shown_briefly(entry)}: not a Nemotron-H layer kind "
                f"({', '.join(table)})"
            )
    if not entries:
        raise HFImportError(f"{where} is empty: the model has no layers")
    return [table[e] for e in entries]


def _read_nemotron_h(d: Draft) -> None:
    """Nemotron-H and Nemotron 3: each layer is one pre-normed sublayer (a Mamba-2 mixer,
    attention without positions, a ReLU^2 MLP or an MoE), listed per layer by the config;
    the sizes are the keys (the attention's where a layer attends, the MoE's where one
    routes, the mixer's where one is Mamba-2)."""
    kinds = _nemotron_h_kinds(d)
    stated = d.read("num_hidden_layers")
    if stated is not None and stated != len(kinds):
        raise HFImportError(
            f"the layer pattern lists {len(kinds)} layers but num_hidden_layers is {stated}: "
            "the config contradicts itself"
        )
    d.set("architecture.n_layers", len(kinds), "config")
    d.set("architecture.attention.layer_pattern", read_layer_period(kinds), "config")
    d.set("architecture.mlp.moe", None, "family")
    mixer_act = d.read("mamba_hidden_act", default="silu")
    if mixer_act != "silu":
        raise HFImportError(
            f"mamba_hidden_act is {shown_briefly(mixer_act)}: the card's Mamba-2 mixer gates "
            "with silu"
        )
    if "global" in kinds:  # an attention layer is the attention alone
        d.set("architecture.attention.mlp", False, "family")
    else:
        d.note("architecture.attention", _ATTENTION_FREE)
    if d.read("sliding_window") is not None:
        d.unmapped["sliding_window"] = d.config["sliding_window"]
    raw = str(d.read("mlp_hidden_act", default="relu2"))
    activation = read_activation(raw, gated=False)
    d.set("architecture.mlp.activation", activation, d.origin_of("mlp_hidden_act"))
    if activation is None:
        d.unmapped["mlp_hidden_act"] = raw
        d.note("architecture.mlp.activation", f"config activation {raw!r} has no schema value.")
    # NemotronHMamba2Mixer sizes itself from heads x head_dim; expand is not read
    d.used.update(k for k in ("expand", "mamba_proj_bias") if k in d.config)
    if d.read("tie_word_embeddings", default=False):  # read as transformers builds it
        d.note(
            "architecture.tied_embeddings",
            "The config says tie_word_embeddings: true, but transformers' "
            "NemotronHForCausalLM keeps a separate output head whatever the config says: "
            "the card records the model it builds.",
        )
        d.set("architecture.tied_embeddings", False, "family")
    else:
        d.set("architecture.tied_embeddings", False, d.origin_of("tie_word_embeddings"))
    if d.read("num_nextn_predict_layers", default=0):
        d.note(
            "architecture",
            "The multi-token-prediction layers (num_nextn_predict_layers) are left out, as "
            "transformers leaves them out of NemotronHForCausalLM.",
        )


def _read_nemotron_h_moe(d: Draft) -> None:
    """Nemotron 3's MoE layers (their sizes: the keys): ReLU^2 experts and one ReLU^2
    shared expert (transformers builds it whatever n_shared_experts says), DeepSeek-V3's
    sigmoid router; the dense layers keep intermediate_size."""
    if d.value("architecture.mlp.moe.n_experts") is None:
        return
    d.read("n_shared_experts")  # one shared expert, whatever it says (fixed)
    if "mlp" in d.value("architecture.attention.layer_pattern"):
        dense = d.read("intermediate_size", default=_DENSE_WIDTH)
        d.set("architecture.mlp.moe.dense_d_ff", dense, d.origin_of("intermediate_size"))
    sigmoid_router(d)


def _read_zamba2(d: Draft) -> None:
    """Zamba2: a Mamba-2 layer everywhere, and before each "hybrid" layer a shared block
    (its sizes: the keys, Zamba2Config's defaults throughout; its derived keys are checked
    here, not trusted)."""
    d_model, n_layers = d.value("architecture.d_model"), d.value("architecture.n_layers")
    d.set("architecture.mlp.moe", None, "family")
    if d.read("use_long_context", default=False):  # Zamba2Config sets 16384
        d.set("architecture.context_length", 16384, "family")
        d.note("architecture.context_length", "use_long_context: Zamba2Config sets 16384.")
    hybrid = _zamba2_hybrid_layers(d, n_layers)
    _zamba2_mamba2(d, d_model)
    _zamba2_block(d, d_model, hybrid)
    if not d.read("tie_word_embeddings", default=True):
        raise HFImportError(
            "tie_word_embeddings is false: transformers then leaves Zamba2's shared blocks "
            "untied (a full copy per invocation), which is not the shared architecture"
        )
    d.set("architecture.tied_embeddings", True, d.origin_of("tie_word_embeddings"))
    if d.read("rms_norm_eps", default=1e-5) != 1e-5:
        raise HFImportError(
            "rms_norm_eps is not 1e-5: Zamba2's Mamba-2 norm keeps 1e-5, and archdb's mixer "
            "norm takes the card's one epsilon"
        )
    # the kernels' and initialization's knobs: no effect on the function
    for key in ("use_mamba_kernels", "chunk_size", "use_mem_eff_path", "time_step_max",
                "time_step_floor", "num_logits_to_keep", "attention_hidden_size",
                "kv_channels", "num_query_groups"):  # fmt: skip
        d.read(key)


_ZAMBA2_MAMBA = ("mamba", "linear_attention")  # layers_block_type spellings (5.x, 4.x)


def _zamba2_hybrid_layers(d: Draft, n_layers: int) -> list[int]:
    ids = d.read("hybrid_layer_ids")
    if ids is not None:  # Zamba2Config derives it from layers_block_type; a saved one must agree
        d.layer_numbers("hybrid_layer_ids", ids, n_layers)
    types = d.read("layers_block_type", "layer_types", required=True)
    if len(types) != n_layers:
        raise HFImportError(
            f"layers_block_type lists {len(types)} layers but num_hidden_layers is {n_layers}"
        )
    if any(kind in ("m", "g") for kind in types):
        raise HFImportError(
            "layers_block_type is spelled m/g: a config of Zyphra's transformers fork "
            "(lora_rank, state_size, ffn_hidden_size, ...), whose keys transformers' Zamba2 "
            "does not read; import a config in transformers' Zamba2 format"
        )
    for index, kind in enumerate(types):
        if kind not in (*_ZAMBA2_MAMBA, "hybrid"):
            raise HFImportError(
                f"layers_block_type[{index}] is {shown_briefly(kind)}: Zamba2's layers are mamba "
                "or hybrid"
            )
    hybrid = [i for i, kind in enumerate(types) if kind == "hybrid"]
    if not hybrid:
        raise HFImportError(
            "layers_block_type has no hybrid layer: without shared blocks the model is "
            "Mamba-2 alone (import it as mamba2)"
        )
    d.set("architecture.attention.layer_pattern", ["mamba2"], "family")
    return hybrid


def _zamba2_mamba2(d: Draft, d_model: int) -> None:
    """Zamba2MambaMixer (its sizes: the keys): a conv bias always (use_conv_bias is not
    read), SiLU, dt clamped below at time_step_min, the gated norm at 1e-5; add_bias_linear
    on in/out_proj (and the blocks' MLP)."""
    sizes = "architecture.mixers.mamba2."
    heads = d.value(sizes + "n_heads")
    inner = int(d.read("mamba_expand", default=2) * d_model)
    head_dim = inner // heads
    declared = d.read("mamba_headdim")
    if heads * head_dim != inner or declared not in (None, head_dim):
        raise HFImportError(
            f"n_mamba_heads ({heads}) does not split mamba_expand x hidden_size ({inner}) "
            f"into heads of mamba_headdim ({declared}): transformers cannot run this config"
        )
    d.set(sizes + "head_dim", head_dim, "config")
    if d.read("use_conv_bias", default=True) is False:
        d.note(
            sizes + "conv_bias",
            "use_conv_bias is false, but Zamba2MambaMixer's conv always has a bias "
            "(transformers ignores the key).",
        )
    d.set("architecture.bias.mlp", d.value(sizes + "proj_bias"), d.origin_of("add_bias_linear"))


def _zamba2_block(d: Draft, d_model: int, hybrid: list[int]) -> None:
    """The shared blocks (their adapters: the keys): attention over [x, embeddings] with
    heads 2 d_model / n_heads wide and scores scaled by (head_dim / 2) ** -0.5, the gated
    MLP, adapters, a projection."""
    heads = d.value("architecture.attention.n_heads")
    kv = d.read("num_key_value_heads", default=heads)
    d.set("architecture.attention.n_kv_heads", kv, d.origin_of("num_key_value_heads"))
    head_dim = 2 * d_model // heads
    if d.read("attention_head_dim", "head_dim") not in (None, head_dim):
        raise HFImportError(
            f"attention_head_dim is not 2 x hidden_size / num_attention_heads ({head_dim}): "
            "Zamba2Config derives it"
        )
    d.set("architecture.attention.head_dim", head_dim, "family")
    d.set("architecture.attention.scale", (head_dim / 2) ** -0.5, "family")
    if d.value("architecture.position.type") == "rope":  # use_mem_rope
        full, _ = rope_parameters_of(d)
        theta = d.read("rope_theta") or full.get("rope_theta") or 10000.0
        d.set("architecture.position.rope_theta", float(theta), "config")
    else:
        d.read("rope_theta", "rope_parameters")  # not applied without use_mem_rope
    raw = str(d.read("hidden_act", default="gelu"))
    activation = read_activation(raw, gated=True)
    if activation is None:
        raise HFImportError(
            f"hidden_act {shown_briefly(raw)} has no gated activation in the schema"
        )
    d.set("architecture.mlp.activation", activation, d.origin_of("hidden_act"))
    d.set("architecture.mlp.d_ff", d.read("intermediate_size") or 4 * d_model, "config")
    n_blocks = d.read("num_mem_blocks", default=1)  # transformers ties at most one per layer
    blocks = "architecture.shared_blocks."
    d.set(blocks + "n_blocks", min(n_blocks, len(hybrid)), "config")
    d.set(blocks + "layers", hybrid, "config")


# --- card -> config (the reference) ------------------------------------------------------


def _mamba2_width(a: Architecture) -> int:
    m = mamba2_sizes_of(a)
    require(m is not None, "mixers.mamba2 sizes")
    return m.n_heads * m.head_dim


def _mamba2_expand(a: Architecture) -> int:
    inner = _mamba2_width(a)
    require(inner % a.d_model == 0, "the inner width a whole multiple of d_model (expand)")
    return inner // a.d_model


def _mamba_expand(a: Architecture) -> int:
    m = a.mixers.mamba if a.mixers is not None else None
    require(m is not None, "mixers.mamba sizes")
    require(m.d_inner % a.d_model == 0, "d_inner a whole multiple of d_model (expand)")
    return m.d_inner // a.d_model


# the Mamba-2 sizes under a Mamba-2 config's names and under the hybrids' (mamba_ ...)
MAMBA2_SIZES = ("n_heads", "head_dim", "state_size", "n_groups", "conv_kernel", "conv_bias",
                "proj_bias")  # fmt: skip
MAMBA2_OWN = dict(zip(MAMBA2_SIZES, ("num_heads", "head_dim", "state_size", "n_groups",
                  "conv_kernel", "use_conv_bias", "use_bias"), strict=True))  # fmt: skip
_HYBRID_NAMES = ("n_heads", "d_head", "d_state", "n_groups", "d_conv", "conv_bias", "proj_bias")
MAMBA2_HYBRID = {k: f"mamba_{n}" for k, n in zip(MAMBA2_SIZES, _HYBRID_NAMES, strict=True)}
BIASES_ON = {"conv_bias": True, "proj_bias": False}  # the config classes' defaults


def hybrid_mamba2(**defaults: object) -> tuple[Key, ...]:
    """A hybrid's Mamba-2 sizes (mamba_ keys, head width "auto" unless given), read where
    layers are Mamba-2 (the hook checks them: ``check_mamba2_width``), and its expand."""
    given = {"head_dim": "auto", "n_groups": 1} | BIASES_ON | defaults
    required = () if "n_heads" in defaults else ("n_heads", "state_size", "conv_kernel")
    return (
        *part_keys("mixers.mamba2", MAMBA2_HYBRID, given, required=required, kind="mamba2"),
        Key("mamba_expand", out=_mamba2_expand, read=False, when=uses(LayerKind.MAMBA2)),
    )


BAMBA_MIXER = hybrid_mamba2()
# Mamba-1's sizes (MambaConfig's names, or Jamba's mamba_ ones) and their defaults
MAMBA_DEFAULTS = {"state_size": 16, "conv_kernel": 4} | BIASES_ON
MAMBA_OWN = {"state_size": "state_size", "conv_kernel": "conv_kernel",
             "conv_bias": "use_conv_bias", "proj_bias": "use_bias"}  # fmt: skip
JAMBA_MIXER = (
    *part_keys("mixers.mamba", {"state_size": "mamba_d_state", "conv_kernel": "mamba_d_conv",
               "conv_bias": "mamba_conv_bias", "proj_bias": "mamba_proj_bias"},
               MAMBA_DEFAULTS, kind="mamba"),
    Key("mamba_dt_rank", "mixers.mamba.dt_rank", read=False),
    Key("mamba_expand", out=_mamba_expand, read=False),
)  # fmt: skip


def nemotron_h(a: Architecture) -> dict:
    """Nemotron-H and Nemotron 3: every layer one pre-normed sublayer (M, *, -, E)."""
    if LayerKind.GLOBAL in a.attention.layer_pattern:
        require(a.attention.mlp is False, "attention.mlp false: a layer is one sublayer")
    require(not a.bias.qkv and not a.bias.attn_out, "attention without biases (hard-coded)")
    require(not a.tied_embeddings, "a separate output head (NemotronH never ties it)")
    if a.mlp.moe is not None:
        require(not a.bias.mlp, "no MLP biases: transformers' experts have none")
        need_sigmoid_router(a.mlp.moe)  # NemotronHTopkRouter is DeepSeek-V3's
    return {}


_DENSE_WIDTH = 21504  # NemotronHConfig's intermediate_size


NEMOTRON_H_KEYS = (
    Key("vocab_size", "vocab_size", required=True),
    Key("hidden_size", "d_model", required=True),
    Key("num_hidden_layers", "n_layers", read=False),  # the hook's: the pattern's length
    Key("tie_word_embeddings", "tied_embeddings", read=False),
    Key("max_position_embeddings", "context_length", default=4096),
    Key("hybrid_override_pattern", read=False,
        out=lambda a: "".join(_NEMOTRON_H_CODES[k] for k in a.layer_kinds())),
    # NemotronHConfig's defaults, the attention's read where a layer attends
    Key("num_attention_heads", "attention.n_heads", default=32, kind="global",
        out=lambda a: a.attention.n_heads or 1),
    Key("num_key_value_heads", "attention.n_kv_heads", default=8, kind="global",
        out=lambda a: a.attention.n_kv_heads or 1),
    Key("head_dim", "attention.head_dim", default=128, kind="global",
        also=("attention_head_dim",), out=lambda a: a.head_dim_effective or 1),
    Key("intermediate_size", "mlp.d_ff", default=_DENSE_WIDTH,
        out=lambda a: (a.mlp.moe.dense_d_ff if has_moe(a) else None) or a.mlp.d_ff),
    Key("mlp_bias", "bias.mlp", read=False, out=lambda a: bool(a.bias.mlp)),
    Key("mlp_hidden_act", out=lambda a: "relu2", read=False),
    *part_keys("mixers.mamba2", dict(zip(MAMBA2_SIZES, ("mamba_num_heads", "mamba_head_dim",
               "ssm_state_size", "n_groups", "conv_kernel", "use_conv_bias", "use_bias"),
               strict=True)), {"n_heads": 128, "head_dim": 64, "state_size": 128,
               "n_groups": 8, "conv_kernel": 4} | BIASES_ON, kind="mamba2"),
    # Nemotron 3's MoE layers, read where one routes
    Key("moe_intermediate_size", "mlp.d_ff", default=7688, kind="moe", when=has_moe),
    Key("moe_shared_expert_intermediate_size", "mlp.moe.shared_d_ff", default=7688,
        kind="moe", when=has_moe),
    Key("n_routed_experts", "mlp.moe.n_experts", default=8, also=("num_local_experts",),
        kind="moe", when=has_moe),
    Key("num_experts_per_tok", "mlp.moe.n_active", default=2, kind="moe", when=has_moe),
    Key("n_shared_experts", out=lambda a: 1, when=has_moe, read=False),
    Key("moe_latent_size", "mlp.moe.latent_dim", kind="moe", when=has_moe),
    *v3_router(1, 1, 1.0),  # NemotronHTopkRouter's defaults: no groups, scale 1
)  # fmt: skip


def _key_multiplier(a: Architecture) -> float:
    """FalconH1 scales keys by key_multiplier and scores by 1/sqrt(head_dim)."""
    head_dim = a.head_dim_effective
    return (a.attention.scale or head_dim**-0.5) * math.sqrt(head_dim)


def _mamba2_norm(a: Architecture) -> Mamba2Norm:
    return mamba2_sizes_of(a).norm or Mamba2Norm.GATED


FALCON_H1_KEYS = (
    *part_keys("mixers.mamba2", MAMBA2_HYBRID, {"n_heads": 128, "head_dim": "auto",
               "state_size": 256, "n_groups": 1, "conv_kernel": 4} | BIASES_ON),
    Key("mamba_d_ssm", read=False, out=lambda a: _mamba2_width(a)),
    Key("projectors_bias", "mixers.mamba2.proj_bias", read=False),
    Key("mamba_rms_norm", read=False, out=lambda a: _mamba2_norm(a) is not Mamba2Norm.NONE),
    Key("mamba_norm_before_gate", read=False,
        out=lambda a: _mamba2_norm(a) is Mamba2Norm.BEFORE_GATE),
    Key("rms_norm_eps", out=lambda a: a.norm.eps or 1e-5, read=False),
    *(multiplier(key, path) for key, path in (
        ("embedding_multiplier", "embedding_multiplier"),
        ("lm_head_multiplier", "logit_scale"),
        ("attention_in_multiplier", "attention.input_multiplier"),
        ("attention_out_multiplier", "attention.output_multiplier"),
        ("ssm_in_multiplier", "mixers.mamba2.input_multiplier"),
        ("ssm_out_multiplier", "mixers.mamba2.output_multiplier"))),
    Key("key_multiplier", out=_key_multiplier, read=False),
    Key("ssm_multipliers", read=False,
        out=lambda a: list(mamba2_sizes_of(a).projection_multipliers or [1.0] * 5)),
    Key("mlp_multipliers", read=False,
        out=lambda a: [a.mlp.gate_multiplier or 1.0, a.mlp.output_multiplier or 1.0]),
)  # fmt: skip


# the sizes every config of a stack of one mixer kind alone (Mamba, Mamba-2) holds
STACK_KEYS = (
    Key("vocab_size", "vocab_size", required=True),
    Key("hidden_size", "d_model", required=True),
    Key("num_hidden_layers", "n_layers", required=True),
    Key("tie_word_embeddings", "tied_embeddings", read=False),
)
# attention as the hybrids' code builds it (Nemotron-H, Zamba2)
PLAIN_ATTENTION = (
    ("attention.variant", "softmax"),
    ("attention.qk_norm", "none"),
    ("attention.logit_softcap", None),
    ("attention.sliding_window", None),
    ("final_logit_softcap", None),
)


def jamba(a: Architecture) -> dict:
    """Attention at i % attn_layer_period == attn_layer_offset, experts at
    i % expert_layer_period == expert_layer_offset."""
    pattern, moe = a.attention.layer_pattern, a.mlp.moe
    require(pattern.count(LayerKind.GLOBAL) == 1, "one attention layer per pattern period")
    require(a.head_dim_effective * a.attention.n_heads == a.d_model, "head_dim = d_model / n_heads")
    eps = a.norm.eps or 1e-6
    require((a.mixers.mamba.inner_norm_eps or 1e-6) == eps, "the dt/B/C norms share rms_norm_eps")
    if moe is not None:
        fits = moe.dense_d_ff in (None, a.mlp.d_ff) and not moe.router_bias
        require(
            fits and moe.normalize_top_k is False,
            "dense width d_ff, top-k weights left unnormalized, no router bias",
        )
    period = moe.layer_period if moe else 1
    return {
        "attn_layer_period": len(pattern),
        "attn_layer_offset": pattern.index(LayerKind.GLOBAL),
        "rms_norm_eps": eps,
        "num_experts": moe.n_experts if moe else 1,
        "expert_layer_period": period,
        "expert_layer_offset": period - 1,
    }


# Zamba2's GELU spellings: its MLP applies ACT2FN[hidden_act] to the gate
_ZAMBA2_ACT = {"exact": "gelu", "tanh": "gelu_pytorch_tanh"}


def zamba2(a: Architecture) -> dict:
    """Zamba2: Mamba-2 layers, the shared blocks (``_zamba2_block``) before the hybrid ones."""
    rope_or_none = (PositionType.ROPE, PositionType.NONE)
    require(a.position.type in rope_or_none, "position.type rope or none")
    sb, m = a.shared_blocks, mamba2_sizes_of(a)
    require(sb is not None, "shared_blocks (Zamba2's shared transformer blocks)")
    require(a.bias.mlp == m.proj_bias, "add_bias_linear covers in_proj, out_proj and the MLP")
    require(
        a.attention.n_heads * a.head_dim_effective == 2 * a.d_model,
        "shared blocks over [x, embeddings] with n_heads x head_dim = 2 d_model",
    )
    # transformers ties the blocks' copies through tie_word_embeddings (untied: one copy
    # per invocation, which is not the shared architecture)
    require(bool(a.tied_embeddings), "tied_embeddings true (the blocks' weights tie with it)")
    # Zamba2Attention scales scores by (head_dim / 2) ** -0.5, a function of the sizes: the
    # card's attention.scale is that figure (a toy keeps the card's, as for every family)
    gelu = _ZAMBA2_ACT[(a.mlp.gelu_approximation or GeluApproximation.TANH).value]
    act = "silu" if a.mlp.activation is Activation.SWIGLU else gelu
    types = ["hybrid" if i in sb.layers else "mamba" for i in range(a.n_layers)]
    return {"layers_block_type": types, "hidden_act": act}


def _rope(a: Architecture) -> bool:
    return a.position.type is PositionType.ROPE


# Zamba2Config's names and defaults
ZAMBA2_KEYS = (
    Key("vocab_size", "vocab_size", default=32000),
    Key("hidden_size", "d_model", default=2560),
    Key("num_hidden_layers", "n_layers", default=54),
    Key("max_position_embeddings", "context_length", default=4096),
    Key("tie_word_embeddings", "tied_embeddings", read=False),
    Key("rms_norm_eps", out=lambda a: a.norm.eps or 1e-5, read=False),
    Key("intermediate_size", "mlp.d_ff", read=False),
    Key("num_attention_heads", "attention.n_heads", default=32),
    Key("num_key_value_heads", "attention.n_kv_heads", read=False),
    Key("use_mem_rope", "position.type", default=False, out=_rope,
        into=lambda rope: "rope" if rope else "none"),
    replace(ROPE, when=_rope),
    # the shared blocks
    Key("num_mem_blocks", "shared_blocks.n_blocks", read=False),
    Key("use_shared_attention_adapter", "shared_blocks.attention_adapters", default=False),
    Key("adapter_rank", "shared_blocks.adapter_rank", default=128),
    # the Mamba-2 layers
    *part_keys("mixers.mamba2", {"n_heads": "n_mamba_heads", "state_size": "mamba_d_state",
               "conv_kernel": "mamba_d_conv", "n_groups": "mamba_ngroups",
               "proj_bias": "add_bias_linear"}, {"n_heads": 8, "state_size": 64,
               "conv_kernel": 4, "n_groups": 1, "proj_bias": False}),
    Key("mamba_expand", out=_mamba2_expand, read=False),
    # transformers always clamps dt below at time_step_min: a card without the floor
    # (Zyphra's reference code) differs in outputs only, where dt < 0.001
    Key("time_step_min", "mixers.mamba2.time_step_floor", default=0.001, into=float,
        out=lambda a: a.mixers.mamba2.time_step_floor or 0.001),
)  # fmt: skip


# --- checkpoint names (loading weights) --------------------------------------------------

# the Mamba releases' top-level tensors (under backbone.), and Llama's with the final norm
# named final_layernorm (Bamba, Zamba2, Jamba, Falcon-H1)
BACKBONE_TOP = top_names("backbone.embeddings.weight", "backbone.norm_f")
FINAL_LAYERNORM_TOP = top_names("model.embed_tokens.weight", "model.final_layernorm")
_HYBRID_NORMS = {"attn.before": "input_layernorm", "mlp.before": "pre_ff_layernorm"}


def _mixer(theirs: str, ours: str, linears: tuple[str, ...], params: tuple[str, ...]) -> dict:
    """A recurrent mixer's tensors (archdb's sits in the attention slot, ``ours``) as
    transformers names them under ``theirs``."""
    layer = renamed({f"{ours}.{p}": f"{theirs}.{p}" for p in linears})
    return layer | {f"{ours}.{p}": Source(f"{theirs}.{p}") for p in params}


def mamba2_mixer(theirs: str, ours: str = "attn.sublayer") -> dict[str, Source]:
    """A Mamba-2 mixer: in_proj fused as [z, x, B, C, dt] rows in both; conv1d (channels,
    1, kernel); the grouped, gated norm."""
    layer = _mixer(theirs, ours, ("in_proj", "conv1d", "out_proj"), ("dt_bias", "A_log", "D"))
    return layer | {f"{ours}.norm_weight": Source(f"{theirs}.norm.weight")}


def _mamba_mixer(theirs: str) -> dict[str, Source]:
    """A Mamba-1 mixer, with Jamba's scaled norms on dt, B and C."""
    linears = ("in_proj", "conv1d", "x_proj", "dt_proj", "out_proj")
    layer = _mixer(theirs, "attn.sublayer", linears, ("A_log", "D"))
    for x in ("dt", "b", "c"):
        layer[f"attn.sublayer.{x}_norm_weight"] = Source(f"{theirs}.{x}_layernorm.weight")
    return layer


def _backbone(mixer: dict[str, Source]) -> Names:
    """Mamba, Falcon Mamba and Mamba-2: a norm and the mixer per layer, under backbone."""
    layer = {"attn.before.weight": Source("norm.weight")} | mixer
    return Names(BACKBONE_TOP, layer, prefix="backbone.layers.{i}.", tied_head=("lm_head.weight",))


def _mamba2_names() -> Names:
    return _backbone(mamba2_mixer("mixer"))


def _mamba_names() -> Names:
    return _backbone(_mamba_mixer("mixer"))


def _bamba_names() -> Names:
    """Llama-style attention layers, Mamba-2 layers (``mamba.``), an MLP after each."""
    layer = llama_layer(_HYBRID_NORMS, "feed_forward") | mamba2_mixer("mamba")
    return Names(FINAL_LAYERNORM_TOP, layer, tied_head=("lm_head.weight",))


def _zamba2_names() -> Names:
    """Mamba-2 layers (``mamba.``; a hybrid layer's under ``mamba_decoder.``, beside its
    linear and the shared block it runs): see ``_zamba2_shared``."""
    layer = {"attn.before.weight": Source("input_layernorm.weight")} | mamba2_mixer("mamba")
    return Names(
        FINAL_LAYERNORM_TOP,
        layer,
        tied_head=("lm_head.weight",),
        of_model=_zamba2_shared,
        copies=_zamba2_copies,
    )


_ZAMBA2_SHARED = re.compile(r"^model\.layers\.(\d+)\.shared_transformer\.(.+)$")


def _zamba2_hybrid(model: nn.Module) -> tuple[list[int], int]:
    """The hybrid layers in invocation order, and the number of shared blocks."""
    shared = getattr(model.decoder, "shared", None)
    if shared is None:
        return [], 0
    return sorted(shared.at, key=shared.at.__getitem__), len(shared.blocks)


def _zamba2_copies(model: nn.Module, names: list[str]) -> dict[str, str]:
    """A checkpoint may hold each shared block again under every later hybrid layer that
    runs it (transformers' state_dict does; save_pretrained drops the tied copies)."""
    hybrid, n = _zamba2_hybrid(model)
    first = {layer: hybrid[i % n] for i, layer in enumerate(hybrid) if i >= n}
    copies = {}
    for name in names:
        match = _ZAMBA2_SHARED.match(name)
        if match and int(match.group(1)) in first:
            layer, rest = int(match.group(1)), match.group(2)
            copies[name] = f"model.layers.{first[layer]}.shared_transformer.{rest}"
    return copies


def _zamba2_shared(model: nn.Module) -> dict[str, Source]:
    """transformers saves shared block b once, under the first hybrid layer that runs it
    (the b-th), with every adapter of the invocations it serves (adapter list index = the
    invocation); each hybrid layer keeps its own linear and Mamba-2 layer."""
    hybrid, n = _zamba2_hybrid(model)
    out: dict[str, Source] = {}
    for layer in hybrid:
        theirs, ours = f"model.layers.{layer}.mamba_decoder.", f"decoder.layers.{layer}."
        out[ours + "attn.before.weight"] = Source(theirs + "input_layernorm.weight")
        out |= mamba2_mixer(theirs + "mamba", ours + "attn.sublayer")
    for b in range(n):
        theirs, ours = (
            f"model.layers.{hybrid[b]}.shared_transformer.",
            f"decoder.shared.blocks.{b}.",
        )
        out[ours + "input_norm.weight"] = Source(theirs + "input_layernorm.weight")
        out[ours + "mlp_norm.weight"] = Source(theirs + "pre_ff_layernorm.weight")
        for p in "qkvo":
            out[ours + f"attention.{p}.weight"] = Source(theirs + f"self_attn.{p}_proj.weight")
        for t in ("weight", "bias"):  # add_bias_linear: the MLP's biases
            fused = theirs + f"feed_forward.gate_up_proj.{t}"
            out[ours + f"mlp.gate.{t}"] = Source(fused, cut=first_ff)
            out[ours + f"mlp.up.{t}"] = Source(fused, cut=second_ff)
            out[ours + f"mlp.down.{t}"] = Source(theirs + f"feed_forward.down_proj.{t}")
    for i, layer in enumerate(hybrid):
        block = f"model.layers.{hybrid[i % n]}.shared_transformer."
        ours = f"decoder.shared.invocations.{i}."
        adapters = {f"{p}_adapter": f"self_attn.linear_{p}_adapter_list.{i}" for p in "qkv"}
        adapters["gate_up_adapter"] = f"feed_forward.gate_up_proj_adapter_list.{i}"
        for name, theirs in adapters.items():
            out[ours + f"{name}.down.weight"] = Source(block + theirs + ".0.weight")
            out[ours + f"{name}.up.weight"] = Source(block + theirs + ".1.weight")
        out[ours + "proj.weight"] = Source(f"model.layers.{layer}.linear.weight")
    return out


def _nemotron_h_names() -> Names:
    """One pre-normed sublayer a layer, each transformers' "mixer", saved under NVIDIA's
    "backbone." names: archdb keeps the norm before its mixer (Mamba-2, attention) or its
    MLP (the mlp entries)."""
    layer = {
        "attn.before.weight": Source("norm.weight"),
        "mlp.before.weight": Source("norm.weight"),
    }
    layer |= mamba2_mixer("mixer")
    layer |= renamed({f"attn.sublayer.{p}": f"mixer.{p}_proj" for p in "qkvo"})
    layer |= renamed({f"mlp.sublayer.{p}": f"mixer.{p}_proj" for p in ("up", "down")})
    # Nemotron 3's MoE layers: non-gated experts and one shared expert, V3's router
    layer |= moe_names("mixer.gate", "mixer.experts", "gate_proj", "up_proj", "down_proj")
    for p in ("up", "down"):
        layer[f"mlp.sublayer.shared.{p}.weight"] = Source(f"mixer.shared_experts.{p}_proj.weight")
    # Nemotron 3 Super's latent MoE: projections into and out of the experts' width
    layer["mlp.sublayer.latent_in.weight"] = Source("mixer.fc1_latent_proj.weight")
    layer["mlp.sublayer.latent_out.weight"] = Source("mixer.fc2_latent_proj.weight")
    return Names(BACKBONE_TOP, layer, prefix="backbone.layers.{i}.")


def _jamba_names() -> Names:
    """Jamba: Llama-style attention layers and Mamba layers, each with feed_forward (an
    MLP, or per-expert weights and a router)."""
    layer = llama_layer(_HYBRID_NORMS, mlp="feed_forward") | _mamba_mixer("mamba")
    layer |= moe_names("feed_forward.router", "feed_forward.experts", "gate_proj", "up_proj",
                  "down_proj")  # fmt: skip
    return Names(FINAL_LAYERNORM_TOP, layer, tied_head=("lm_head.weight",))


def _falcon_h1_names() -> Names:
    """Falcon-H1: self_attn and mamba side by side (archdb's ParallelMixers), its MLP
    feed_forward; the attention sits one module deeper (.inner) when it has input or
    output factors."""
    layer = llama_layer(_HYBRID_NORMS, "feed_forward")
    for key in [k for k in layer if k.startswith("attn.sublayer.")]:
        rest = key.removeprefix("attn.sublayer.")
        source = layer.pop(key)
        layer[f"attn.sublayer.attention.{rest}"] = source
        layer[f"attn.sublayer.attention.inner.{rest}"] = source
    return Names(
        FINAL_LAYERNORM_TOP,
        layer | mamba2_mixer("mamba", "attn.sublayer.recurrent"),
        tied_head=("lm_head.weight",),
    )


# --- the families ----------------------------------------------------------------------

MAMBA2 = LLAMA.derive(
    "mamba2",
    classes="Mamba2",
    layer="Mamba2Block",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    position="none",  # pre-RMSNorm, mixer, residual per layer: no attention, no MLP
    fixed_bias=(False, False, False),
    mlp_bias=False,
    kinds=("mamba2",),
    keys=(
        *dropped(LLAMA.keys),
        *STACK_KEYS,
        *part_keys(
            "mixers.mamba2",
            MAMBA2_OWN,
            {"n_groups": 1} | BIASES_ON,
            required=("n_heads", "head_dim", "state_size", "conv_kernel"),
        ),
        Key("expand", out=_mamba2_expand, read=False),
    ),
    free=("mlp.activation", "attention.qk_norm"),
    fixed=(("mixers.mamba2.mlp", False),),
    steps=(_mixer_only_stack,),
    read=_read_mamba2,
    extras=frozenset({"mamba2"}),
    names=_mamba2_names,
    logit_error=4.7e-07,
)
# logit test: Mamba-1's selective scan, recurrent form (three seeds each)
MAMBA = MAMBA2.derive(
    "mamba",
    classes="Mamba",
    layer="MambaBlock",
    eps_default=1e-05,
    kinds=("mamba",),
    keys=(
        *dropped(MAMBA2.keys),
        *STACK_KEYS,
        *part_keys("mixers.mamba", MAMBA_OWN, MAMBA_DEFAULTS),
        Key("time_step_rank", "mixers.mamba.dt_rank", read=False),
        Key("expand", out=_mamba_expand, read=False),
        Key("layer_norm_epsilon", "norm.eps", out=lambda a: a.norm.eps or 1e-5, read=False),
    ),
    fixed=(("mixers.mamba.mlp", False), ("mixers.mamba.inner_norm", "none")),
    read=_read_mamba,
    extras=frozenset({"mamba"}),
    names=_mamba_names,
    logit_error=3e-07,
)
# logit test: parameter-free RMSNorms on dt, B, C
FALCON_MAMBA = MAMBA.derive(
    "falcon_mamba",
    classes="FalconMamba",
    layer="FalconMambaBlock",
    keys=(
        Key(
            "mixer_rms_eps",
            "mixers.mamba.inner_norm_eps",
            default=1e-6,
            into=float,
            out=lambda a: a.mixers.mamba.inner_norm_eps or 1e-6,
        ),
    ),
    fixed=(("mixers.mamba.mlp", False), ("mixers.mamba.inner_norm", "rms")),
    logit_error=2.2e-07,
    function_fields=("architecture.mixers.mamba.inner_norm_eps",),
)
BAMBA = LLAMA.derive(
    "bamba",
    free=("position.rotary_fraction",),  # its hook writes the rotating share
    classes="Bamba",
    kinds=("mamba2", "global"),
    keys=(
        ROPE,
        *BAMBA_MIXER,
        Key(
            "attn_layer_indices",
            read=False,
            out=lambda a: [i for i, k in enumerate(a.layer_kinds()) if k is LayerKind.GLOBAL],
        ),
    ),
    fixed=(("mixers.mamba2.mlp", True),),
    read=_read_bamba,
    extras=frozenset({"mamba2"}),
    names=_bamba_names,
    logit_error=4.4e-07,
)
# logit test: Mamba-2, attention and MLP layers (M-M*-); MoE layers (ME*E-) too
NEMOTRON_H = MAMBA2.derive(
    "nemotron_h",
    classes="NemotronH",
    layer="NemotronHBlock",
    fixed_bias=None,  # attention unbiased (the writer checks), the MLP's as mlp_bias says
    mlp_bias=None,
    builds_activations=("squared-relu",),
    kinds=tuple(_NEMOTRON_H_CODES),
    free=("mlp.moe", "mlp.moe.first_dense_layers", "mlp.moe.layer_period", "attention.mlp"),
    keys=(*dropped(MAMBA2.keys), *NEMOTRON_H_KEYS),
    # one shared expert: transformers always builds it
    fixed=(
        ("mixers.mamba2.mlp", False),
        *PLAIN_ATTENTION,
        ("mlp.moe.n_shared", 1),
        *SIGMOID_SCORES,
    ),
    steps=(read_norm, read_position, read_bias, _read_nemotron_h),
    read=_read_nemotron_h_moe,
    write=nemotron_h,
    extras=V3_EXTRAS | {"mamba2", "moe_latent"},
    names=_nemotron_h_names,
    logit_error=3.5e-07,
    function_fields=tuple(f for f in ROUTER_FIELDS if not f.endswith("n_groups")),
)
# logit test: attention beside Mamba-2, every muP factor; three mixer norms
FALCON_H1 = BAMBA.derive(
    "falcon_h1",
    classes="FalconH1",
    kinds=("global+mamba2",),
    keys=(*dropped((ROPE, *BAMBA_MIXER, "attn_layer_indices")), *FALCON_H1_KEYS),
    read=_read_falcon_h1,
    extras=frozenset({"mamba2_norm", "parallel_mamba2", "sublayer_multipliers"}),
    names=_falcon_h1_names,
    logit_error=4.7e-07,
    function_fields=(
        "architecture.attention.scale",
        "architecture.attention.input_multiplier",
        "architecture.attention.output_multiplier",
        "architecture.mlp.gate_multiplier",
        "architecture.mlp.output_multiplier",
        "architecture.mixers.mamba2.norm",
        "architecture.mixers.mamba2.input_multiplier",
        "architecture.mixers.mamba2.projection_multipliers",
        "architecture.mixers.mamba2.output_multiplier",
    ),
)
# logit test: scaled dt/B/C norms; attention without positions; unnormalized top-k
JAMBA = MIXTRAL.derive(
    "jamba",
    classes="Jamba",
    layer="JambaAttentionDecoderLayer",
    rope_key=None,
    position="none",
    eps_default=None,
    sliding_everywhere=False,
    read=_read_jamba,
    keys=(
        *dropped(("num_local_experts", "sliding_window")),  # the hook's
        Key("num_experts_per_tok", "mlp.moe.n_active", when=has_moe, read=False),
        *JAMBA_MIXER,
    ),
    fixed=(("mixers.mamba.mlp", True), ("mixers.mamba.inner_norm", "rms-scaled")),
    kinds=("mamba", "global"),
    free=("mlp.moe", "mlp.moe.layer_period"),
    write=jamba,
    extras=frozenset({"mamba"}),
    names=_jamba_names,
    logit_error=3.2e-07,
    function_fields=("architecture.mixers.mamba.inner_norm_eps",),
)
# logit test: Mamba-2 layers with two weight-shared blocks (A, B, A) over [x,
# embeddings], q/k/v and gate/up adapters, RoPE, the dt floor active, weights at 5x the
# default init (three seeds, three batches each; 4.6e-7 at the default init)
ZAMBA2 = MAMBA2.derive(
    "zamba2",
    classes="Zamba2",
    layer="Zamba2HybridLayer",
    eps_key="rms_norm_eps",
    rope_key="rope_parameters",
    tied_default=True,
    activation_default="gelu",
    eps_default=1e-05,
    fixed_bias=None,
    mlp_bias=None,
    builds_activations=("geglu", "swiglu"),
    free=("attention.head_dim",),  # its hook: heads of 2 x d_model / n_heads
    keys=(*dropped(MAMBA2.keys), *ZAMBA2_KEYS),
    fixed=(
        ("mixers.mamba2.mlp", False),
        ("norm.eps", 1e-05),  # the Mamba-2 norm keeps 1e-5 and archdb's takes the card's one
        *PLAIN_ATTENTION,
        ("bias.qkv", False),
        ("bias.attn_out", False),
        ("mixers.mamba2.conv_bias", True),  # use_conv_bias is not read
        ("shared_blocks.concat_embeddings", True),
        ("shared_blocks.mlp_adapters", True),
        ("shared_blocks.output_projection", True),
    ),
    steps=(read_norm,),
    read=_read_zamba2,
    write=zamba2,
    extras=frozenset({"mamba2", "shared_blocks", "time_step_floor"}),
    names=_zamba2_names,
    logit_error=1.4e-06,
    function_fields=("architecture.attention.scale", "architecture.mixers.mamba2.time_step_floor"),
)
