"""BERT, RoBERTa and ModernBERT: encoder-only masked-LM models (transformers'
*ForMaskedLM)."""

from __future__ import annotations

from archdb.field_types import MAX_VOCAB
from archdb.plan.layout import learned_rows
from archdb.schema import Activation, Architecture, GeluApproximation, LayerKind, NormAffine
from archdb_hf.draft import Draft, HFImportError, shown_briefly
from archdb_hf.families.card_to_config import layer_types_of
from archdb_hf.families.llama import SIZES
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import Key, key_or, require
from archdb_hf.tensors import QKV_CUTS, Names, Source, first_ff, renamed, second_ff

# RobertaEmbeddings: positions count from padding_idx + 1 (the config's pad_token_id)
ROBERTA_PAD_DEFAULT = 1

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_bert(d: Draft, position_offset: int = 0) -> None:
    """What BertForMaskedLM and RobertaForMaskedLM build around the stack."""
    if d.read("is_decoder", default=False) or d.read("add_cross_attention", default=False):
        raise HFImportError("config.json: is_decoder/add_cross_attention make a decoder")
    d.set("architecture.embedding_norm", True, "family")  # embeddings.LayerNorm
    rows = d.value("architecture.context_length")
    if rows is not None:
        d.set("architecture.position.learned_rows", rows, "config")
        d.set("architecture.context_length", rows - position_offset, "family")
    d.set("architecture.encoder.position_offset", position_offset, "family")
    # the head's transform uses the config's hidden_act, as the MLP does
    d.set("architecture.encoder.head_transform", d.value("architecture.mlp.activation"), "family")


def _read_roberta(d: Draft) -> None:
    pad = d.read("pad_token_id", default=ROBERTA_PAD_DEFAULT)
    if isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad < MAX_VOCAB:
        # the position table starts after the padding index
        raise HFImportError(f"config.json: pad_token_id {shown_briefly(pad)} is not a token id")
    _read_bert(d, pad + 1)
    # RobertaLMHead applies GELU whatever hidden_act says: a card states one activation
    # for both only when they agree
    if d.read("hidden_act", default="gelu") != "gelu":
        raise HFImportError(
            "config.json: RoBERTa's masked-LM head uses the erf GELU, and a hidden_act other "
            "than gelu gives its layers another activation, which a card cannot state"
        )


def _read_modernbert(d: Draft) -> None:
    """ModernBERT: pre-norm layers (the first without its attention norm), a final norm,
    global and two-sided local attention with two RoPE bases, GeGLU, the masked-LM head's
    transform; biases and norm biases as the config switches them."""
    d.set("architecture.embedding_norm", True, "family")  # embeddings.norm
    d.set("architecture.norm.first_mixer_norm", False, "family")  # layer 0: attn_norm Identity
    window = d.read("local_attention", default=128)
    if LayerKind.LOCAL in d.value("architecture.attention.layer_pattern"):
        d.set("architecture.attention.sliding_window", window, d.origin_of("local_attention"))
    head_act = d.read("classifier_activation", default="gelu")
    if head_act != "gelu":
        shown = shown_briefly(head_act)
        raise HFImportError(f"config.json: classifier_activation {shown} is not read")
    d.set("architecture.encoder.head_transform", "gelu", d.origin_of("classifier_activation"))


# --- card -> config (the reference) ------------------------------------------------------


def _encoder(a: Architecture) -> None:
    """The checks every encoder family shares (heads of d_model / n_heads, the embeddings
    normed)."""
    require(a.encoder is not None, "an encoder-only card")
    sizes = (a.vocab_size, a.d_model, a.n_layers, a.mlp.d_ff, a.context_length)
    require(None not in sizes, "every size known (vocab_size, d_model, n_layers, d_ff)")
    require(bool(a.embedding_norm), "an embedding norm (embeddings.LayerNorm, embeddings.norm)")


def _bert(a: Architecture) -> dict:
    _encoder(a)
    require(a.encoder.head_transform is a.mlp.activation, "the head transform uses hidden_act")
    return {}


def _hidden_act(a: Architecture) -> str:
    """BERT's activation in ACT2FN's spelling: "gelu" is the erf form, "gelu_new" the tanh
    one (the google-research/bert code after February 2019)."""
    if a.mlp.gelu_approximation is GeluApproximation.TANH:
        return "gelu_new"
    return a.mlp.activation.value


def _roberta(a: Architecture) -> dict:
    offset = a.encoder.position_offset if a.encoder is not None else 0
    require(offset >= 1, "RoBERTa's positions start after its padding row")
    require(a.mlp.activation is Activation.GELU, "RobertaLMHead's GELU is the layers' too")
    tanh = a.mlp.gelu_approximation is GeluApproximation.TANH
    require(not tanh, "the erf GELU: RobertaLMHead's gelu is the erf form, the layers' too")
    return _bert(a) | {"pad_token_id": offset - 1}


def _modernbert(a: Architecture) -> dict:
    _encoder(a)
    require(a.norm.first_mixer_norm is False, "layer 0 has no attention norm")
    require(a.position.rope_scaling is None, "no RoPE scaling")
    require(a.encoder.head_transform is Activation.GELU, "the head's classifier_activation gelu")
    local = a.position.rope_theta_local or a.position.rope_theta
    rope = {"full_attention": {"rope_type": "default", "rope_theta": a.position.rope_theta},
            "sliding_attention": {"rope_type": "default", "rope_theta": local}}  # fmt: skip
    return {"rope_parameters": rope}


def _norm_bias(a: Architecture) -> bool:
    require(
        a.norm.affine in (NormAffine.SCALE, NormAffine.SCALE_AND_BIAS), "LayerNorm with a scale"
    )
    return a.norm.affine is NormAffine.SCALE_AND_BIAS


# the sizes every encoder config states (import-hf's generic steps read them): five of
# Llama's, and the tie written as a bool
ENCODER_SIZES = (
    *(k for k in SIZES if k.name in ("vocab_size", "hidden_size", "num_hidden_layers",
                                     "num_attention_heads", "intermediate_size")),
    Key("tie_word_embeddings", "tied_embeddings", out=lambda a: bool(a.tied_embeddings),
        read=False),
)  # fmt: skip
# what *ForMaskedLM builds around the stack: no final norm (post-norm layers), a bias on
# the head transform's dense layer, no pooler
MASKED_LM = (
    ("kind", "encoder-only"),
    ("norm.final", False),
    ("encoder.head_transform_bias", True),
    ("encoder.pooler", False),
)


# --- weight names --------------------------------------------------------------------------


def _names(base: str, head: str, transform: str, head_norm: str) -> Names:
    """*ForMaskedLM's tensors: ``base`` the encoder model's attribute, ``head`` the
    masked-LM head's, ``transform`` and ``head_norm`` the head's dense layer and norm."""
    top = {
        "embed.table.weight": Source(f"{base}.embeddings.word_embeddings.weight"),
        "positions.table.weight": Source(f"{base}.embeddings.position_embeddings.weight"),
        "token_types.table.weight": Source(f"{base}.embeddings.token_type_embeddings.weight"),
        "head.lm_head.bias": Source(f"{head}.decoder.bias", fallback=f"{head}.bias"),
        "head.lm_head.weight": Source(f"{head}.decoder.weight"),  # read only when untied
    }
    modules = {f"attn.sublayer.{ours}": f"attention.self.{theirs}"
               for ours, theirs in (("q", "query"), ("k", "key"), ("v", "value"))}  # fmt: skip
    modules |= {"attn.sublayer.o": "attention.output.dense",
                "attn.after": "attention.output.LayerNorm", "mlp.sublayer.up": "intermediate.dense",
                "mlp.sublayer.down": "output.dense", "mlp.after": "output.LayerNorm"}  # fmt: skip
    layer = renamed(modules)
    top |= renamed({"embed_norm": f"{base}.embeddings.LayerNorm", "transform.dense": transform,
                    "transform.norm": head_norm})  # fmt: skip
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
    rows); layer 0 has no attn_norm; biases and norm biases where the config has them."""
    top = {
        "embed.table.weight": Source("model.embeddings.tok_embeddings.weight"),
        "head.lm_head.bias": Source("decoder.bias"),
        "head.lm_head.weight": Source("decoder.weight"),  # read only when untied
    }
    layer = renamed({"attn.sublayer.o": "attn.Wo", "mlp.sublayer.down": "mlp.Wo",
                     "attn.before": "attn_norm", "mlp.before": "mlp_norm"})  # fmt: skip
    for t in ("weight", "bias"):
        for ours, cut in QKV_CUTS:
            layer[f"attn.sublayer.{ours}.{t}"] = Source(f"attn.Wqkv.{t}", cut=cut)
        layer[f"mlp.sublayer.gate.{t}"] = Source(f"mlp.Wi.{t}", cut=first_ff)
        layer[f"mlp.sublayer.up.{t}"] = Source(f"mlp.Wi.{t}", cut=second_ff)
    top |= renamed({"embed_norm": "model.embeddings.norm", "encoder.final_norm": "model.final_norm",
                    "transform.dense": "head.dense", "transform.norm": "head.norm"})  # fmt: skip
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
        Key("hidden_act", out=_hidden_act, read=False),
        Key("max_position_embeddings", "position.learned_rows", out=learned_rows, read=False),
        Key("type_vocab_size", "encoder.token_types", default=2),
    ),
    fixed=(*MASKED_LM, ("encoder.position_offset", 0)),
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
        key_or("local_attention", "attention.sliding_window", 128, read=False),
        Key(
            "norm_bias",
            "norm.affine",
            default=False,
            into=lambda on: "scale-and-bias" if on else "scale",
            out=_norm_bias,
        ),
        Key("attention_bias", "bias.qkv", read=False),
        Key("mlp_bias", "bias.mlp", read=False),
        Key("decoder_bias", "bias.lm_head", default=True, out=lambda a: bool(a.bias.lm_head)),
        Key("classifier_bias", "encoder.head_transform_bias", default=False),
    ),
    fixed=(
        ("kind", "encoder-only"),
        ("encoder.token_types", 0),
        ("encoder.position_offset", 0),
        ("encoder.pooler", False),
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
    fixed=MASKED_LM,
    read=_read_roberta,
    write=_roberta,
    names=_roberta_names,
    logit_error=0.0,
)
