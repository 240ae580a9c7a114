"""xLSTM (transformers' ``xlstm``; NX-AI's xLSTM 7B): every block is a pre-norm mLSTM layer
(``archdb.mixers.mlstm``) then a pre-norm gated SiLU feed-forward (the card's MLP), with
RMSNorms, a final RMSNorm, an untied head whose logits are soft-capped; no positions."""

from __future__ import annotations

import math

from archdb.schema import Architecture
from archdb_hf.draft import Draft, HFImportError, attention_free
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import require
from archdb_hf.tensors import Names, Source, top_names

# --- config -> card (import-hf) ----------------------------------------------------------

# what xLSTMModel fixes in code beyond an attention-free stack of RMSNorms with a scale
# (the final one always applied, whatever add_out_norm says): a gated SiLU feed-forward
_FIXED = {"mlp.activation": "swiglu", "mlp.moe": None, "bias.mlp": False}
# xLSTMConfig's defaults (NX-AI/xLSTM-7b's sizes), for keys a config leaves out
_DEFAULTS = {
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "vocab_size": 50304,
    "num_heads": 8,
    "qk_dim_factor": 0.5,
    "v_dim_factor": 1.0,
    "ffn_proj_factor": 2.667,
    "ffn_round_up_to_multiple_of": 64,
    "gate_soft_cap": 15.0,
    "output_logit_soft_cap": 30.0,
    "eps": 1e-6,
}
# how the kernels run, not what they compute: the function is the same whichever is set
_KERNEL_KEYS = (
    "chunkwise_kernel",
    "sequence_kernel",
    "step_kernel",
    "mode",
    "chunk_size",
    "return_last_states",
    "autocast_kernel_dtype",
    "inference_state_dtype",
    "norm_reduction_force_float32",
    "max_inference_chunksize",
)
_MAX_FACTOR = 64.0  # a width factor beyond this is not a model (the schema bounds widths)


def _positive(d: Draft, key: str, *, integer: bool = False, upper: float = 1e9) -> float:
    """A positive, finite number of the config (its class default when absent)."""
    value = d.read(key, default=_DEFAULTS.get(key))
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise HFImportError(f"config.json: {key} must be a number (got {type(value).__name__})")
    if not (0 < value <= upper and math.isfinite(value)):
        raise HFImportError(f"config.json: {key} must be in (0, {upper:g}] (got {value!r:.30})")
    return value


def _head_width(d: Draft, key: str, d_model: int, heads: int) -> int:
    """int(d_model x factor) / heads, as xLSTMLayer sizes q/k and v, checked to split."""
    width = int(d_model * _positive(d, key, upper=_MAX_FACTOR))
    if width < heads or width % heads:
        raise HFImportError(
            f"config.json: int(hidden_size x {key}) = {width} does not split into "
            f"num_heads ({heads}) heads: transformers' xLSTMLayer cannot run it"
        )
    return width // heads


def _read_xlstm(d: Draft) -> None:
    """Sizes from the config, the rest as xLSTMModel builds it."""
    d_model = int(_positive(d, "hidden_size", integer=True))
    embedding = d.read("embedding_dim")
    if embedding is not None and embedding != d_model:
        raise HFImportError(
            f"config.json: embedding_dim ({embedding!r:.20}) differs from hidden_size "
            f"({d_model}): xLSTMModel's embeddings would not fit its blocks"
        )
    d.set("architecture.d_model", d_model, d.origin_of("hidden_size"))
    depth_key = "num_blocks" if d.config.get("num_blocks") is not None else "num_hidden_layers"
    n_layers = int(_positive(d, depth_key, integer=True))
    d.set("architecture.n_layers", n_layers, d.origin_of(depth_key))
    if depth_key == "num_blocks":
        d.read("num_hidden_layers")  # xLSTMModel stacks num_blocks blocks
    vocab = int(_positive(d, "vocab_size", integer=True))
    d.set("architecture.vocab_size", vocab, d.origin_of("vocab_size"))
    if d.read("use_bias", default=False):
        raise HFImportError(
            "config.json: use_bias true is not supported: xLSTMModel would put biases on "
            "every projection and norm but its out_norm (xLSTM 7B has none)"
        )
    heads = int(_positive(d, "num_heads", integer=True))
    for name, key, value in (
        ("n_heads", "num_heads", heads),
        ("key_head_dim", "qk_dim_factor", _head_width(d, "qk_dim_factor", d_model, heads)),
        ("value_head_dim", "v_dim_factor", _head_width(d, "v_dim_factor", d_model, heads)),
        ("gate_soft_cap", "gate_soft_cap", float(_positive(d, "gate_soft_cap"))),
        ("denominator_eps", "eps", float(_positive(d, "eps", upper=1.0))),
    ):
        d.set(f"architecture.mixers.mlstm.{name}", value, d.origin_of(key))
    factor = _positive(d, "ffn_proj_factor", upper=_MAX_FACTOR)
    multiple = int(_positive(d, "ffn_round_up_to_multiple_of", integer=True, upper=2**20))
    # xLSTM's round_up_to_next_multiple_of, on the same float
    d_ff = int(((d_model * factor + multiple - 1) // multiple) * multiple)
    d.set("architecture.mlp.d_ff", d_ff, d.origin_of("ffn_proj_factor"))
    attention_free(d, "mlstm", "an mLSTM")
    cap = float(_positive(d, "output_logit_soft_cap"))
    d.set("architecture.final_logit_softcap", cap, d.origin_of("output_logit_soft_cap"))
    for path, value in _FIXED.items():
        d.set(f"architecture.{path}", value, "family")
    _read_layout_keys(d)
    d.note("architecture.context_length", "xLSTM has no position limit in its config.")


def _read_layout_keys(d: Draft) -> None:
    """Keys that change how the model is stored or run, not its function."""
    for key in _KERNEL_KEYS:
        d.read(key)
    if d.read("weight_mode", default="single") != "single":
        raise HFImportError(
            "config.json: weight_mode must be 'single' (transformers' xLSTMForCausalLM "
            "cannot initialize the fused layout, and archdb loads the single layout's names)"
        )
    if d.read("add_out_norm", default=True) is False:
        d.note("architecture.norm.final", "xLSTMModel applies out_norm whatever add_out_norm says.")
    if d.read("tie_word_embeddings") is True:
        d.note(
            "architecture.tied_embeddings",
            "tie_word_embeddings is true, but xLSTMForCausalLM declares no tied weights: "
            "its lm_head is a tensor of its own.",
        )


# --- card -> config (the reference) ------------------------------------------------------


def _factor(width: int, d_model: int) -> float:
    """A factor f with int(d_model x f) == width, as xLSTMLayer sizes its projections;
    width / d_model itself when it is exact (xLSTMConfig's cache widths round it up)."""
    exact = width / d_model
    return exact if int(d_model * exact) == width else (width + 0.5) / d_model


def _xlstm(a: Architecture) -> dict:
    require(a.mixers is not None and a.mixers.mlstm is not None, "the mlstm sizes")
    m = a.mixers.mlstm
    require(m.gate_soft_cap is not None, "mixers.mlstm.gate_soft_cap (xLSTMConfig needs one)")
    require(a.final_logit_softcap is not None, "final_logit_softcap (xLSTMConfig needs one)")
    d, d_ff = a.d_model, a.mlp.d_ff
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": d,
        "embedding_dim": d,
        "num_hidden_layers": a.n_layers,
        "num_blocks": a.n_layers,
        "num_heads": m.n_heads,
        "qk_dim_factor": _factor(m.n_heads * m.key_head_dim, d),
        "v_dim_factor": _factor(m.n_heads * m.value_head_dim, d),
        "gate_soft_cap": m.gate_soft_cap,
        "eps": m.denominator_eps,
        # rounding d_model x (d_ff / d_model) up to a multiple of d_ff gives d_ff exactly
        "ffn_proj_factor": d_ff / d,
        "ffn_round_up_to_multiple_of": d_ff,
        "output_logit_soft_cap": a.final_logit_softcap,
        "use_bias": False,
        "weight_mode": "single",
        "tie_word_embeddings": False,
    }


# --- weight names --------------------------------------------------------------------------


def _xlstm_names() -> Names:
    """xLSTMForCausalLM: backbone.blocks.{i}.mlstm_layer (the mixer) and .ffn; the pre-norms
    norm_mlstm and norm_ffn; backbone.out_norm; lm_head."""
    layer = {
        "attn.before.weight": Source("norm_mlstm.weight"),
        "attn.sublayer.norm_weight": Source("mlstm_layer.multihead_norm.weight"),
        "mlp.before.weight": Source("norm_ffn.weight"),
        "mlp.sublayer.gate.weight": Source("ffn.proj_up_gate.weight"),
        "mlp.sublayer.up.weight": Source("ffn.proj_up.weight"),
        "mlp.sublayer.down.weight": Source("ffn.proj_down.weight"),
    }
    for part in ("q", "k", "v", "ogate_preact", "out_proj", "igate_preact", "fgate_preact"):
        layer[f"attn.sublayer.{part}.weight"] = Source(f"mlstm_layer.{part}.weight")
    for gate in ("igate_preact", "fgate_preact"):
        layer[f"attn.sublayer.{gate}.bias"] = Source(f"mlstm_layer.{gate}.bias")
    top = top_names("backbone.embeddings.weight", "backbone.out_norm")
    return Names(top, layer, prefix="backbone.blocks.{i}.")


# --- the family ----------------------------------------------------------------------------

XLSTM = FamilySpec(
    "xlstm",
    classes="xLSTM",
    layer="xLSTMBlock",
    eps_key="norm_eps",
    rope_key=None,
    norm="rmsnorm",
    norm_affine="scale",
    position="none",
    mlp_bias=False,
    eps_default=1e-6,
    fixed_bias=(False, False, False),
    kinds=("mlstm",),
    free=("attention.variant", "attention.qk_norm"),  # no attention
    # every block has its feed-forward; xLSTMForCausalLM declares no tied weights: its head
    # is its own whatever tie_word_embeddings says
    fixed=(("mixers.mlstm.mlp", True), ("tied_embeddings", False)),
    steps=(_read_xlstm,),
    write=_xlstm,
    names=_xlstm_names,
    logit_error=1.9e-06,  # tests/test_fidelity.py (80 tokens: a parallel chunk, then steps)
)
