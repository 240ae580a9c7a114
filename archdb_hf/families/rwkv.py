"""RWKV-4 (transformers' ``rwkv``): time mixing (``archdb.mixers.rwkv``) and channel
mixing (``mlp.channel_mix``) in pre-norm LayerNorm layers, a LayerNorm on the embeddings
(the first block's pre_ln), a final LayerNorm and the output head; no positions."""

from __future__ import annotations

from archdb.schema import Architecture
from archdb_hf.draft import Draft, attention_free, read_tied
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import Key, require
from archdb_hf.tensors import Names, Source, renamed, top_names

# --- config -> card (import-hf) ----------------------------------------------------------

# what RwkvModel fixes in code beyond an attention-free stack of LayerNorms with bias
_FIXED = {
    "mlp.activation": "squared-relu",
    "mlp.moe": None,
    "mlp.channel_mix": True,
    "bias.mlp": False,
    "embedding_norm": True,
    "mixers.rwkv.mlp": True,
}


def _read_rwkv(d: Draft) -> None:
    """Sizes from the config, the rest as RwkvModel builds it."""
    d_model = d.read("hidden_size", required=True)
    d.set("architecture.d_model", d_model, "config")
    d.set("architecture.n_layers", d.read("num_hidden_layers", required=True), "config")
    d.set("architecture.vocab_size", d.read("vocab_size", required=True), "config")
    d.set("architecture.context_length", d.read("context_length", default=1024), "config")
    width = d.read("attention_hidden_size") or d_model  # None: hidden_size
    d.set("architecture.mixers.rwkv.width", width, d.origin_of("attention_hidden_size"))
    d_ff = d.read("intermediate_size") or 4 * d_model  # None: 4 x hidden_size
    d.set("architecture.mlp.d_ff", d_ff, d.origin_of("intermediate_size"))
    eps = float(d.read("layer_norm_epsilon", default=1e-5))
    d.set("architecture.norm.eps", eps, d.origin_of("layer_norm_epsilon"))
    attention_free(d, "rwkv", "RWKV's time mixing")
    for path, value in _FIXED.items():
        d.set(f"architecture.{path}", value, "family")
    if d.read("rescale_every", default=6):
        d.note(
            "architecture",
            "rescale_every halves the hidden states (and the matching weights) every few "
            "layers at inference to keep 16-bit values in range; the function is the same "
            "up to the LayerNorms' epsilon, and the card records the unscaled model.",
        )
    read_tied(d)


# --- card -> config (the reference): what no key writes ---------------------------------


def _rwkv(a: Architecture) -> dict:
    require(a.mixers is not None and a.mixers.rwkv is not None, "the rwkv sizes")
    require(bool(a.mlp.channel_mix), "RWKV's channel mixing")
    require(bool(a.embedding_norm), "the first block's pre_ln")
    return {}


# --- weight names --------------------------------------------------------------------------


def _rwkv_names() -> Names:
    """RwkvForCausalLM: rwkv.blocks.{i}.attention (time mixing) and .feed_forward (channel
    mixing); the mixing weights stored (1, 1, d_model)."""
    layer = {
        "attn.sublayer.time_decay": Source("attention.time_decay"),
        "attn.sublayer.time_first": Source("attention.time_first"),
        "attn.sublayer.output.weight": Source("attention.output.weight"),
        "mlp.sublayer.mix_key": Source("feed_forward.time_mix_key", flatten=True),
        "mlp.sublayer.mix_receptance": Source("feed_forward.time_mix_receptance", flatten=True),
        "mlp.sublayer.up.weight": Source("feed_forward.key.weight"),
        "mlp.sublayer.receptance.weight": Source("feed_forward.receptance.weight"),
        "mlp.sublayer.down.weight": Source("feed_forward.value.weight"),
    }
    for part in ("key", "value", "receptance"):
        layer[f"attn.sublayer.mix_{part}"] = Source(f"attention.time_mix_{part}", flatten=True)
        layer[f"attn.sublayer.{part}.weight"] = Source(f"attention.{part}.weight")
    layer |= renamed({"attn.before": "ln1", "mlp.before": "ln2"})
    top = top_names("rwkv.embeddings.weight", "rwkv.ln_out", head="head.weight")
    top |= renamed({"embed_norm": "rwkv.blocks.0.pre_ln"})
    return Names(top, layer, prefix="rwkv.blocks.{i}.", tied_head=("head.weight",))


# --- the family ----------------------------------------------------------------------------

RWKV = FamilySpec(
    "rwkv",
    classes="Rwkv",
    layer="RwkvBlock",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    position="none",
    mlp_bias=False,
    activation_default="relu",
    fixed_bias=(False, False, False),
    builds_activations=("squared-relu",),  # channel mixing
    kinds=("rwkv",),
    keys=tuple(
        Key(name, path, out=out, read=False)  # the steps read them
        for name, path, out in (
            ("vocab_size", "vocab_size", None),
            ("hidden_size", "d_model", None),
            ("num_hidden_layers", "n_layers", None),
            ("attention_hidden_size", "mixers.rwkv.width", None),
            ("intermediate_size", "mlp.d_ff", None),
            ("context_length", "context_length", None),
            ("layer_norm_epsilon", "norm.eps", lambda a: a.norm.eps or 1e-5),
            # the unscaled model (the same function up to epsilon)
            ("rescale_every", None, lambda a: 0),
            ("tie_word_embeddings", "tied_embeddings", lambda a: bool(a.tied_embeddings)),
        )
    ),
    free=("attention.qk_norm",),
    steps=(_read_rwkv,),
    write=_rwkv,
    extras=frozenset({"embedding_norm", "rwkv", "channel_mix"}),
    names=_rwkv_names,
    logit_error=6.8e-06,  # tests/test_fidelity.py: the recurrence's float32 sums over tokens
)
