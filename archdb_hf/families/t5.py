"""T5 (encoder-decoder; compared, not imported)."""

from __future__ import annotations

from archdb.schema import Architecture
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import Key, require
from archdb_hf.tensors import Names, Source, top_names

# --- card -> config (the reference): what no key writes ---------------------------------


def _t5(a: Architecture) -> dict:
    # transformers 5 forces tie_word_embeddings=True for the whole T5 family
    # (configuration_t5.py), so T5 v1.1's untied output layer has no transformers twin.
    require(bool(a.tied_embeddings), "transformers 5 ties every T5 model's output layer")
    return {}


# --- checkpoint names (loading weights) --------------------------------------------------

_STACKS = ("encoder", "decoder")


def _t5_attention(slot: str, sublayer: str, index: int) -> dict[str, Source]:
    layer = {f"{slot}.before.weight": Source(f"layer.{index}.layer_norm.weight")}
    for p in "qkvo":
        layer[f"{slot}.sublayer.{p}.weight"] = Source(f"layer.{index}.{sublayer}.{p}.weight")
    return layer


def _t5_mlp(index: int) -> dict[str, Source]:
    """T5's DenseReluDense: wi and wo, or (gated-gelu, v1.1) wi_0 the gate, wi_1 the up."""
    ff = f"layer.{index}.DenseReluDense"
    return {
        "mlp.before.weight": Source(f"layer.{index}.layer_norm.weight"),
        "mlp.sublayer.gate.weight": Source(f"{ff}.wi_0.weight"),
        "mlp.sublayer.up.weight": Source(f"{ff}.wi_1.weight", fallback=f"{ff}.wi.weight"),
        "mlp.sublayer.down.weight": Source(f"{ff}.wo.weight"),
    }


def _t5_names() -> Names:
    """T5: one shared embedding; each stack's relative-bias table sits in its first
    block's self-attention; decoder blocks are [self-attention, cross-attention, MLP],
    encoder blocks [self-attention, MLP]. A tied head is the shared embedding (T5 1.0),
    an untied one lm_head (T5 1.1); its d_model ** -0.5 rescale is the card's logit_scale."""
    bias = "block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    top = top_names("shared.weight")
    for s in _STACKS:
        top[f"{s}.final_norm.weight"] = Source(f"{s}.final_layer_norm.weight")
        top[f"{s}.position_bias.table.weight"] = Source(f"{s}.{bias}")
    decoder = _t5_attention("attn", "SelfAttention", 0)
    decoder |= _t5_attention("cross", "EncDecAttention", 1) | _t5_mlp(2)
    return Names(
        top,
        decoder,
        prefix="decoder.block.{i}.",
        tied_head=("lm_head.weight",),
        encoder_layer=_t5_attention("attn", "SelfAttention", 0) | _t5_mlp(1),
        encoder_prefix="encoder.block.{i}.",
        embedding_copies=tuple(f"{s}.embed_tokens.weight" for s in _STACKS),
    )


# --- the families ----------------------------------------------------------------------

# logit test: encoder-decoder, model(input_ids, decoder_input_ids): T5 1.0 (ReLU, tied
# head read at d_model ** -0.5) exact to the bit; 1.1 (gated GELU, untied head) 2.9e-7
T5 = FamilySpec(
    "t5",
    layer="T5Block",
    config_class="T5Config",
    model_class="T5ForConditionalGeneration",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    imports=False,
    position="relative-bias",
    fixed_bias=(False, False, False),
    builds_activations=("relu", "geglu"),
    fixed=(("kind", "encoder-decoder"),),
    keys=(
        Key("vocab_size", "vocab_size"),
        Key("d_model", "d_model"),
        Key("d_kv", "attention.head_dim", out=lambda a: a.head_dim_effective),
        Key("d_ff", "mlp.d_ff"),
        Key("num_layers", "n_encoder_layers"),
        Key("num_decoder_layers", "n_layers"),
        Key("num_heads", "attention.n_heads"),
        Key(
            "relative_attention_num_buckets",
            "position.relative_buckets",
            out=lambda a: a.position.relative_buckets or 32,
        ),
        Key("feed_forward_proj", out=lambda a: "gated-gelu" if a.mlp.activation.gated else "relu"),
        Key("tie_word_embeddings", "tied_embeddings"),
    ),
    write=_t5,
    names=_t5_names,
    logit_error=2.9e-07,
    function_fields=("architecture.attention.scale",),
)
