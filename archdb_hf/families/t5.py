"""T5 and the Switch Transformer (encoder-decoders; compared, not imported)."""

from __future__ import annotations

from collections.abc import Callable

from archdb.schema import Architecture
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import Key, dropped, require
from archdb_hf.tensors import Names, Source, top_names

# --- card -> config (the reference): what no key writes ---------------------------------


def _t5(a: Architecture) -> dict:
    # transformers 5 forces tie_word_embeddings=True for the whole T5 family
    # (configuration_t5.py), so T5 v1.1's untied output layer has no transformers twin.
    require(bool(a.tied_embeddings), "transformers 5 ties every T5 model's output layer")
    return {}


def _switch(a: Architecture) -> dict:
    """SwitchTransformersStack makes layer i sparse where i % step == 1 (step: num_layers
    // num_sparse_*_layers), or every layer at step 1: the card's layer_period 2 or 1.
    Its dense MLPs and its experts are one width, d_ff."""
    # transformers 5 ties the stacks' embeddings to the shared table only together with
    # the head (tie_word_embeddings): an untied config builds three tables, not one
    require(bool(a.tied_embeddings), "a tied head: transformers 5's untied "
            "switch_transformers gives each stack an embedding table of its own")  # fmt: skip
    moe = a.mlp.moe
    require(moe is not None, "a mixture of experts (mlp.moe): every Switch model has one")
    require(
        moe.layer_period in (1, 2) and a.n_layers % moe.layer_period == 0
        and (a.n_encoder_layers or 0) % moe.layer_period == 0,
        "mlp.moe.layer_period 1 or 2, dividing both stacks' depths: transformers' "
        "switch_transformers makes every layer sparse, or every second from layer 1",
    )  # fmt: skip
    require(moe.dense_d_ff in (None, a.mlp.d_ff), "mlp.moe.dense_d_ff equal to mlp.d_ff")
    return {}


def _sparse_layers(layers: int, a: Architecture) -> int:
    return layers // a.mlp.moe.layer_period


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


def _switch_mlp(index: int) -> dict[str, Source]:
    """A dense layer's DenseActDense (wi, wo), or a sparse layer's router and experts."""
    ff = f"layer.{index}.mlp"
    experts = f"{ff}.experts.expert_{{e}}"
    return {
        "mlp.before.weight": Source(f"layer.{index}.layer_norm.weight"),
        "mlp.sublayer.up.weight": Source(f"{ff}.wi.weight"),
        "mlp.sublayer.down.weight": Source(f"{ff}.wo.weight"),
        "mlp.sublayer.router.proj.weight": Source(f"{ff}.router.classifier.weight"),
        "mlp.sublayer.experts.up": Source(f"{experts}.wi.weight", experts=True),
        "mlp.sublayer.experts.down": Source(f"{experts}.wo.weight", experts=True),
    }


def _t5_names(mlp: Callable[[int], dict[str, Source]] = _t5_mlp) -> Names:
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
    decoder |= _t5_attention("cross", "EncDecAttention", 1) | mlp(2)
    return Names(
        top,
        decoder,
        prefix="decoder.block.{i}.",
        tied_head=("lm_head.weight",),
        encoder_layer=_t5_attention("attn", "SelfAttention", 0) | mlp(1),
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
# T5 1.0's layers with a top-1 softmax router over experts of d_ff in every second layer
# (or every layer). Counts only (tests/test_fidelity.py: its logits equal archdb's until an
# expert is full)
SWITCH_TRANSFORMERS = T5.derive(
    "switch_transformers",
    classes="SwitchTransformers",
    layer="SwitchTransformersBlock",
    model_class="SwitchTransformersForConditionalGeneration",
    builds_activations=("relu",),  # its DenseActDense is never gated
    keys=(
        *dropped(("feed_forward_proj",)),
        Key("dense_act_fn", out=lambda a: "relu"),
        Key("num_experts", "mlp.moe.n_experts"),
        Key("num_sparse_encoder_layers", out=lambda a: _sparse_layers(a.n_encoder_layers, a)),
        Key("num_sparse_decoder_layers", out=lambda a: _sparse_layers(a.n_layers, a)),
    ),
    fixed=(
        ("kind", "encoder-decoder"),
        ("mlp.moe.n_active", 1),
        ("mlp.moe.normalize_top_k", False),  # the top expert's softmax share, as it is
    ),
    free=("mlp.moe.layer_period", "mlp.moe.dense_d_ff"),
    write=_switch,
    names=lambda: _t5_names(_switch_mlp),
    unverified="transformers drops the tokens past each expert's expert_capacity in a "
    "sequence (64 in the released configs), which no card field holds",
)
