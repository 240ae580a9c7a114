"""BERT, RoBERTa and ModernBERT: encoder-only masked-LM models (transformers'
*ForMaskedLM)."""

from __future__ import annotations

from archdb.plan.layout import learned_rows
from archdb.schema import (
    Activation,
    Architecture,
    Kind,
    LayerKind,
    NormAffine,
)
from archdb_hf.draft import Draft, HFImportError, shown_briefly
from archdb_hf.families.card_to_config import layer_types_of
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import Key, require
from archdb_hf.tensors import Names, Source, first_ff, k_rows, q_rows, second_ff, v_rows

# RobertaEmbeddings: positions count from padding_idx + 1 (the config's pad_token_id)
ROBERTA_PAD_DEFAULT = 1

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_encoder(d: Draft, position_offset: int) -> None:
    """What BertForMaskedLM and RobertaForMaskedLM build around the stack."""
    if d.read("is_decoder", default=False) or d.read("add_cross_attention", default=False):
        raise HFImportError("config.json: is_decoder/add_cross_attention make a decoder")
    d.set("architecture.kind", "encoder-only", "family")
    d.set("architecture.embedding_norm", True, "family")  # embeddings.LayerNorm
    d.set("architecture.bias.lm_head", True, "family")  # the decoder's own bias
    rows = d.value("architecture.context_length")
    if rows is not None:
        d.set("architecture.position.learned_rows", rows, "config")
        d.set("architecture.context_length", rows - position_offset, "family")
    origin = d.origin_of("type_vocab_size")
    d.set("architecture.encoder.token_types", d.read("type_vocab_size", default=2), origin)
    d.set("architecture.encoder.position_offset", position_offset, "family")
    # the head's transform uses the config's hidden_act, as the MLP does
    d.set("architecture.encoder.head_transform", d.value("architecture.mlp.activation"), "family")
    d.set("architecture.encoder.head_transform_bias", True, "family")
    d.set("architecture.encoder.pooler", False, "family")  # *ForMaskedLM: no pooler


def _read_bert(d: Draft) -> None:
    _read_encoder(d, 0)


def _read_roberta(d: Draft) -> None:
    pad = d.read("pad_token_id", default=ROBERTA_PAD_DEFAULT)
    _read_encoder(d, pad + 1)
    # RobertaLMHead applies GELU whatever hidden_act says: a card states one activation
    # for both only when they agree
    if d.value("architecture.mlp.activation") != Activation.GELU.value:
        raise HFImportError(
            "config.json: RoBERTa's masked-LM head uses GELU, and a hidden_act other than "
            "gelu gives its layers another activation, which a card cannot state"
        )


def _read_modernbert(d: Draft) -> None:
    """ModernBERT: pre-norm layers (the first without its attention norm), a final norm,
    global and two-sided local attention with two RoPE bases, GeGLU, the masked-LM head's
    transform; biases and norm biases as the config switches them."""
    d.set("architecture.kind", "encoder-only", "family")
    d.set("architecture.embedding_norm", True, "family")  # embeddings.norm
    d.set("architecture.norm.first_mixer_norm", False, "family")  # layer 0: attn_norm Identity
    d.set("architecture.norm.final", True, "family")  # final_norm
    norm_bias = d.read("norm_bias", default=False)
    affine = "scale-and-bias" if norm_bias else "scale"
    d.set("architecture.norm.affine", affine, d.origin_of("norm_bias"))
    d.set("architecture.bias.lm_head", d.read("decoder_bias", default=True), "config")
    window = d.read("local_attention", default=128)
    if LayerKind.LOCAL in d.value("architecture.attention.layer_pattern"):
        d.set("architecture.attention.sliding_window", window, d.origin_of("local_attention"))
    head_act = d.read("classifier_activation", default="gelu")
    if head_act != "gelu":
        shown = shown_briefly(head_act)
        raise HFImportError(f"config.json: classifier_activation {shown} is not read")
    d.set("architecture.encoder.token_types", 0, "family")
    d.set("architecture.encoder.position_offset", 0, "family")
    d.set("architecture.encoder.head_transform", "gelu", d.origin_of("classifier_activation"))
    bias = d.read("classifier_bias", default=False)
    d.set("architecture.encoder.head_transform_bias", bias, d.origin_of("classifier_bias"))
    d.set("architecture.encoder.pooler", False, "family")


# --- card -> config (the reference) ------------------------------------------------------


def _encoder(a: Architecture) -> None:
    """The checks every encoder family shares (one head per KV head, heads of d_model /
    n_heads, the embeddings normed, no pooler)."""
    require(a.kind is Kind.ENCODER_ONLY and a.encoder is not None, "an encoder-only card")
    sizes = (a.vocab_size, a.d_model, a.n_layers, a.mlp.d_ff, a.context_length)
    require(None not in sizes, "every size known (vocab_size, d_model, n_layers, d_ff)")
    require(a.attention.n_kv_heads == a.attention.n_heads, "one key/value head per query head")
    require(a.attention.n_heads * a.head_dim_effective == a.d_model, "n_heads*head_dim = d_model")
    require(bool(a.embedding_norm), "an embedding norm (embeddings.LayerNorm, embeddings.norm)")
    require(not a.encoder.pooler, "transformers' masked-LM model has no pooler")


def _masked_lm(a: Architecture, position_offset: int) -> dict:
    _encoder(a)
    e = a.encoder
    require(e.head_transform is a.mlp.activation, "the head transform uses hidden_act")
    require(e.head_transform_bias, "the head transform's dense layer has a bias")
    require(e.position_offset == position_offset, f"position_offset {position_offset}")
    return {}


def _bert(a: Architecture) -> dict:
    return _masked_lm(a, 0)


def _roberta(a: Architecture) -> dict:
    offset = a.encoder.position_offset if a.encoder is not None else 0
    require(offset >= 1, "RoBERTa's positions start after its padding row")
    require(a.mlp.activation is Activation.GELU, "RobertaLMHead's GELU is the layers' too")
    return _masked_lm(a, offset) | {"pad_token_id": offset - 1}


def _modernbert(a: Architecture) -> dict:
    _encoder(a)
    e = a.encoder
    require(
        a.norm.affine in (NormAffine.SCALE, NormAffine.SCALE_AND_BIAS), "LayerNorm with a scale"
    )
    require(a.norm.first_mixer_norm is False, "layer 0 has no attention norm")
    require(a.position.rotary_fraction in (None, 1.0), "RoPE on every head dim")
    require(a.position.rope_scaling is None, "no RoPE scaling")
    require(not e.token_types and not e.position_offset, "no token types")
    require(e.head_transform is Activation.GELU, "the head's classifier_activation gelu")
    local = a.position.rope_theta_local or a.position.rope_theta
    rope = {"full_attention": {"rope_type": "default", "rope_theta": a.position.rope_theta},
            "sliding_attention": {"rope_type": "default", "rope_theta": local}}  # fmt: skip
    return {"rope_parameters": rope}


# the sizes every encoder config states (import-hf's generic steps read them)
ENCODER_SIZES = (
    Key("vocab_size", "vocab_size", read=False),
    Key("hidden_size", "d_model", read=False),
    Key("num_hidden_layers", "n_layers", read=False),
    Key("num_attention_heads", "attention.n_heads", read=False),
    Key("intermediate_size", "mlp.d_ff", read=False),
    Key("tie_word_embeddings", "tied_embeddings", out=lambda a: bool(a.tied_embeddings),
        read=False),
)  # fmt: skip


# --- weight names --------------------------------------------------------------------------


def _names(base: str, head: str, transform: str, head_norm: str) -> Names:
    """*ForMaskedLM's tensors: ``base`` the encoder model's attribute, ``head`` the
    masked-LM head's, ``transform`` and ``head_norm`` the head's dense layer and norm."""
    layer: dict[str, Source] = {}
    for t in ("weight", "bias"):
        for ours, theirs in (("q", "query"), ("k", "key"), ("v", "value")):
            layer[f"attn.sublayer.{ours}.{t}"] = Source(f"attention.self.{theirs}.{t}")
        layer[f"attn.sublayer.o.{t}"] = Source(f"attention.output.dense.{t}")
        layer[f"attn.after.{t}"] = Source(f"attention.output.LayerNorm.{t}")
        layer[f"mlp.sublayer.up.{t}"] = Source(f"intermediate.dense.{t}")
        layer[f"mlp.sublayer.down.{t}"] = Source(f"output.dense.{t}")
        layer[f"mlp.after.{t}"] = Source(f"output.LayerNorm.{t}")
    top = {
        "embed.table.weight": Source(f"{base}.embeddings.word_embeddings.weight"),
        "positions.table.weight": Source(f"{base}.embeddings.position_embeddings.weight"),
        "token_types.table.weight": Source(f"{base}.embeddings.token_type_embeddings.weight"),
        "head.lm_head.bias": Source(f"{head}.decoder.bias", fallback=f"{head}.bias"),
        "head.lm_head.weight": Source(f"{head}.decoder.weight"),  # read only when untied
    }
    for t in ("weight", "bias"):
        top[f"embed_norm.{t}"] = Source(f"{base}.embeddings.LayerNorm.{t}")
        top[f"transform.dense.{t}"] = Source(f"{transform}.{t}")
        top[f"transform.norm.{t}"] = Source(f"{head_norm}.{t}")
    # tied (transformers 5 ties both when tie_word_embeddings): the decoder's weight is
    # the word table and its bias the head's; untied, the decoder has its own bias and the
    # head's bias is a parameter no forward pass reads
    tied = (f"{head}.decoder.weight", f"{head}.decoder.bias")
    prefix = f"{base}.encoder.layer.{{i}}."

    def unread(model: object, names: list[str]) -> set[str]:
        both = f"{head}.decoder.bias" in names and f"{head}.bias" in names
        return {f"{head}.bias"} if both else set()

    return Names(top, {}, tied_head=tied, encoder_layer=layer, encoder_prefix=prefix, unread=unread)


def _modernbert_names() -> Names:
    """ModernBertForMaskedLM: fused Wqkv ([q, k, v] rows) and Wi ([activated, linear]
    rows); layer 0 has no attn_norm."""
    layer = {
        "attn.sublayer.q.weight": Source("attn.Wqkv.weight", cut=q_rows),
        "attn.sublayer.k.weight": Source("attn.Wqkv.weight", cut=k_rows),
        "attn.sublayer.v.weight": Source("attn.Wqkv.weight", cut=v_rows),
        "attn.sublayer.o.weight": Source("attn.Wo.weight"),
        "mlp.sublayer.gate.weight": Source("mlp.Wi.weight", cut=first_ff),
        "mlp.sublayer.up.weight": Source("mlp.Wi.weight", cut=second_ff),
        "mlp.sublayer.down.weight": Source("mlp.Wo.weight"),
    }
    # biases and norm biases, where the config switches them on
    for ours, part in (("q", q_rows), ("k", k_rows), ("v", v_rows)):
        layer[f"attn.sublayer.{ours}.bias"] = Source("attn.Wqkv.bias", cut=part)
    layer["attn.sublayer.o.bias"] = Source("attn.Wo.bias")
    layer["mlp.sublayer.gate.bias"] = Source("mlp.Wi.bias", cut=first_ff)
    layer["mlp.sublayer.up.bias"] = Source("mlp.Wi.bias", cut=second_ff)
    layer["mlp.sublayer.down.bias"] = Source("mlp.Wo.bias")
    for t in ("weight", "bias"):
        layer[f"attn.before.{t}"] = Source(f"attn_norm.{t}")
        layer[f"mlp.before.{t}"] = Source(f"mlp_norm.{t}")
    top = {
        "embed.table.weight": Source("model.embeddings.tok_embeddings.weight"),
        "head.lm_head.bias": Source("decoder.bias"),
        "head.lm_head.weight": Source("decoder.weight"),  # read only when untied
    }
    for t in ("weight", "bias"):
        top[f"embed_norm.{t}"] = Source(f"model.embeddings.norm.{t}")
        top[f"encoder.final_norm.{t}"] = Source(f"model.final_norm.{t}")
        top[f"transform.dense.{t}"] = Source(f"head.dense.{t}")
        top[f"transform.norm.{t}"] = Source(f"head.norm.{t}")
    prefix = "model.layers.{i}."
    return Names(top, {}, tied_head=("decoder.weight",), encoder_layer=layer, encoder_prefix=prefix)


def _bert_names() -> Names:
    return _names(
        "bert",
        "cls.predictions",
        "cls.predictions.transform.dense",
        "cls.predictions.transform.LayerNorm",
    )


def _roberta_names() -> Names:
    return _names("roberta", "lm_head", "lm_head.dense", "lm_head.layer_norm")


# --- the families ----------------------------------------------------------------------

BERT = FamilySpec(
    "bert",
    layer="BertLayer",
    config_class="BertConfig",
    model_class="BertForMaskedLM",
    eps_key="layer_norm_eps",
    rope_key=None,
    norm="layernorm",
    norm_position="post",
    norm_affine="scale-and-bias",
    gated=False,
    position="learned",
    fixed_bias=(True, True, True),
    tied_default=True,
    activation_default="gelu",
    eps_default=1e-12,
    lm_head_bias=True,  # the decoder's own bias
    builds_activations=("gelu", "relu"),
    keys=(
        *ENCODER_SIZES,
        Key("hidden_act", out=lambda a: a.mlp.activation.value, read=False),
        Key("max_position_embeddings", "position.learned_rows", out=learned_rows, read=False),
        Key("type_vocab_size", "encoder.token_types", read=False),
    ),
    fixed=(("norm.final", False),),
    read=_read_bert,
    write=_bert,
    extras=frozenset({"embedding_norm", "masked_lm"}),
    names=_bert_names,
    logit_error=0.0,  # tests/test_fidelity.py: the same operations in the same order
)
MODERNBERT = FamilySpec(
    "modernbert",
    layer="ModernBertEncoderLayer",
    config_class="ModernBertConfig",
    model_class="ModernBertForMaskedLM",
    eps_key="norm_eps",
    norm="layernorm",
    norm_affine="scale",
    gated=True,
    position="rope",
    tied_default=True,
    activation_default="gelu",
    eps_default=1e-5,
    mlp_bias=None,  # the config's mlp_bias
    default_pattern=("global", "local", "local"),
    full_layer="global",
    kinds=("global", "local"),
    keys=(
        *ENCODER_SIZES,
        Key("max_position_embeddings", "context_length", read=False),
        Key("layer_types", out=layer_types_of, read=False),
        Key(
            "local_attention",
            "attention.sliding_window",
            read=False,
            out=lambda a: a.attention.sliding_window or 128,
        ),
        Key(
            "norm_bias",
            "norm.affine",
            read=False,
            out=lambda a: a.norm.affine is NormAffine.SCALE_AND_BIAS,
        ),
        Key("attention_bias", "bias.qkv", read=False),
        Key("mlp_bias", "bias.mlp", read=False),
        Key("decoder_bias", "bias.lm_head", out=lambda a: bool(a.bias.lm_head), read=False),
        Key("classifier_bias", "encoder.head_transform_bias", read=False),
    ),
    read=_read_modernbert,
    write=_modernbert,
    extras=frozenset({"embedding_norm", "masked_lm"}),
    names=_modernbert_names,
    logit_error=1.7e-07,
)
ROBERTA = BERT.derive(
    "roberta",
    layer="RobertaLayer",
    config_class="RobertaConfig",
    model_class="RobertaForMaskedLM",
    read=_read_roberta,
    write=_roberta,
    names=_roberta_names,
    logit_error=0.0,
)
