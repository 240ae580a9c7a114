"""T5, mT5 and the Switch Transformer (encoder-decoders)."""

from __future__ import annotations

from collections.abc import Callable

from archdb.schema import T5_MAX_DISTANCE, Architecture
from archdb_hf.draft import Draft, HFImportError, read_only, shown_briefly
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import Key, dropped, require
from archdb_hf.tensors import Names, Source, top_names

# --- config -> card (import-hf) ----------------------------------------------------------

# feed_forward_proj -> (activation, GELU form): T5 1.0's ReLU, 1.1's gated GELU, which
# T5Config turns into gelu_new, the tanh form
_FEED_FORWARD = {"relu": ("relu", None), "gated-gelu": ("geglu", "tanh")}


def _read_t5(d: Draft) -> None:
    """The MLP from feed_forward_proj, and what T5 and Switch share (_read_stacks)."""
    _read_feed_forward(d, "relu")
    _read_stacks(d)


def _read_mt5(d: Draft) -> None:
    """T5's reading, but MT5ForConditionalGeneration never rescales the decoder's output
    (logit_scale: fixed at 1), tied or not."""
    _read_feed_forward(d, "gated-gelu")
    _read_stacks(d, rescaled=False)


def _read_feed_forward(d: Draft, default: str) -> None:
    proj = d.read("feed_forward_proj", default=default)
    if not isinstance(proj, str) or proj not in _FEED_FORWARD:
        raise HFImportError(
            f"config.json: feed_forward_proj {shown_briefly(proj)}: the card reads T5's relu "
            "(1.0) and gated-gelu (1.1)"
        )
    activation, form = _FEED_FORWARD[proj]
    d.set("architecture.mlp.activation", activation, d.origin_of("feed_forward_proj"))
    if form is not None:
        d.set("architecture.mlp.gelu_approximation", form, d.origin_of("feed_forward_proj"))
    d.used.update(k for k in ("dense_act_fn", "is_gated_act") if k in d.config)  # derived


def _read_stacks(d: Draft, rescaled: bool = True) -> None:
    """An encoder-decoder; a tied head reads the decoder's output at d_model ** -0.5, an
    untied one as it is (transformers' scale_decoder_outputs, where a config states it; not
    ``rescaled``: never); the relative bias over T5's 128 positions."""
    read_only(d, "is_encoder_decoder", True, "the card is T5's encoder-decoder")
    if not rescaled:
        d.read("tie_word_embeddings")
        d.set("architecture.logit_scale", 1.0, "family")
        _read_distance(d)
        return
    key = "scale_decoder_outputs" if "scale_decoder_outputs" in d.config else "tie_word_embeddings"
    scaled = d.read(key) if key in d.config else d.value("architecture.tied_embeddings")
    if not isinstance(scaled, bool):
        raise HFImportError(f"config.json: {key} {shown_briefly(scaled)} is not true or false")
    scale = d.value("architecture.d_model") ** -0.5 if scaled else 1.0
    d.set("architecture.logit_scale", scale, d.origin_of(key))
    _read_distance(d)


def _read_distance(d: Draft) -> None:
    why = f"archdb's relative bias reaches T5's {T5_MAX_DISTANCE} positions"
    read_only(d, "relative_attention_max_distance", T5_MAX_DISTANCE, why)


# --- card -> config (the reference): what no key writes ---------------------------------


def _t5(a: Architecture) -> dict:
    # transformers 5 forces tie_word_embeddings=True for the whole T5 family
    # (configuration_t5.py), so T5 v1.1's untied output layer has no transformers twin.
    require(bool(a.tied_embeddings), "transformers 5 ties every T5 model's output layer")
    return {}


def _mt5(a: Architecture) -> dict:
    require(bool(a.tied_embeddings), "transformers 5 ties every mT5 model's output layer")
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


def _read_switch(d: Draft) -> None:
    """T5 1.0's layers (dense_act_fn, not feed_forward_proj, names the MLP's activation);
    experts every second layer of both stacks, or in every layer, as num_sparse_*_layers
    say; one expert a token, its softmax share as it is. expert_capacity is read and
    noted: the card holds no capacity."""
    read_only(d, "dense_act_fn", "relu", "the card's Switch MLPs are ReLU (T5 1.0's)")
    read_only(d, "router_bias", False, "the card's Switch router has no bias")
    _read_stacks(d)
    # training only (the router's losses, its dtype, its padding rule, returned logits), or
    # derived from num_sparse_*_layers
    d.used.update(k for k in d.config if k.startswith("router_") or k in _SWITCH_DERIVED)
    encoder = d.read("num_layers", default=12)
    decoder = d.read("num_decoder_layers") or encoder  # T5Config: as deep as the encoder
    periods = {
        _switch_period(d, "num_sparse_encoder_layers", encoder),
        _switch_period(d, "num_sparse_decoder_layers", decoder),
    }
    if len(periods) != 1:
        raise HFImportError(
            "config.json: the encoder and the decoder place their experts differently; the "
            "card's mlp.moe holds one layout for both stacks"
        )
    period = periods.pop()
    moe = {"n_experts": d.read("num_experts", default=8), "n_active": 1, "n_shared": 0,
           "first_dense_layers": 0, "layer_period": period, "normalize_top_k": False,
           "dense_d_ff": d.value("architecture.mlp.d_ff") if period > 1 else None}  # fmt: skip
    d.set("architecture.mlp.moe", moe, "config")
    capacity = d.read("expert_capacity", default=64)
    d.note(
        "architecture.mlp.moe",
        f"config.json's expert_capacity {shown_briefly(capacity)}: transformers drops the "
        "tokens past it in each expert and sequence; the card records no capacity.",
    )


_SWITCH_DERIVED = ("add_router_probs", "encoder_sparse_step", "decoder_sparse_step")


def _switch_period(d: Draft, sparse_key: str, layers: object) -> int:
    """SwitchTransformersStack's sparse layers as a card period: i % step == 1 with step
    layers // num_sparse (layers 1, 3, 5, ... at step 2), or every layer at step 1."""
    sparse = d.read(sparse_key, default=3)
    counts = (layers, sparse)
    ok = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in counts)
    step = layers // sparse if ok and sparse <= layers else 0
    if step not in (1, 2) or layers % step:
        raise HFImportError(
            f"config.json: {sparse_key} {shown_briefly(sparse)} of {shown_briefly(layers)} "
            "layers: the card's experts sit in every layer or every second one from layer 1"
        )
    return step


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
    position="relative-bias",
    fixed_bias=(False, False, False),
    gated=False,
    activation_default="relu",  # feed_forward_proj's default
    builds_activations=("relu", "geglu"),
    # q.k unscaled: T5 folds 1/sqrt(d_kv) into the query's initialization
    fixed=(("kind", "encoder-decoder"), ("attention.scale", 1.0)),
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
            default=32,
            out=lambda a: a.position.relative_buckets or 32,
        ),
        Key(
            "feed_forward_proj",
            out=lambda a: "gated-gelu" if a.mlp.activation.gated else "relu",
            read=False,
        ),
        Key("tie_word_embeddings", "tied_embeddings", default=True),
        Key("n_positions", "context_length", read=False),  # the released configs' context
    ),
    released_keys=("n_positions",),
    free=("mlp.gelu_approximation", "logit_scale"),
    read=_read_t5,
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
        Key("dense_act_fn", out=lambda a: "relu", read=False),
        Key("num_experts", "mlp.moe.n_experts", read=False),
        Key(
            "num_sparse_encoder_layers",
            out=lambda a: _sparse_layers(a.n_encoder_layers, a),
            read=False,
        ),
        Key("num_sparse_decoder_layers", out=lambda a: _sparse_layers(a.n_layers, a), read=False),
    ),
    fixed=(
        *T5.fixed,
        ("mlp.moe.n_active", 1),
        ("mlp.moe.normalize_top_k", False),  # the top expert's softmax share, as it is
    ),
    free=(*T5.free, "mlp.moe.layer_period", "mlp.moe.dense_d_ff"),
    read=_read_switch,
    write=_switch,
    names=lambda: _t5_names(_switch_mlp),
    unverified="transformers drops the tokens past each expert's expert_capacity in a "
    "sequence (64 in the released configs), which no card field holds",
)
# T5 1.1's layers as transformers' MT5 builds them: its config forces a tied head, which
# its model never rescales (the released mT5 models are untied: not comparable)
MT5 = T5.derive(
    "mt5",
    classes="MT5",
    layer="MT5Block",
    model_class="MT5ForConditionalGeneration",
    fixed=(*T5.fixed, ("logit_scale", 1.0)),
    free=("mlp.gelu_approximation",),
    read=_read_mt5,
    write=_mt5,
    names=_t5_names,
    logit_error=2.8e-07,  # tests/test_fidelity.py, a tied tiny checkpoint
)
