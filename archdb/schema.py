"""The model card schema: one typed record per published model.

Conventions that keep numbers comparable across cards (they are repeated in the field
descriptions, which become the committed JSON Schema that editors show):

- ``d_ff`` is the hidden width that the MLP's down-projection reads. For gated units
  (SwiGLU, GeGLU, ReGLU) that is one branch, as in released configs'
  ``intermediate_size``; some papers (Gemma's, for one) count both branches, and the
  card notes it. For mixture-of-experts layers it is one routed expert's width.
- ``vocab_size`` is the row count of the released embedding matrix (padded); the
  tokenizer's own size goes in ``tokenizer_vocab_size`` where it differs.
- ``n_layers`` counts the decoder stack (or the only stack); encoder-decoders give the
  encoder's depth in ``n_encoder_layers``.
- ``params_published`` is the authors' headline figure. Exact counts are computed by
  the builder, never typed in. Derived ratios are properties, never stored.
- Within ``architecture``, ``null`` on a core value means "not published or not
  verified" and needs an entry in the card's ``notes`` saying why; on an optional
  feature (a soft-cap, a sliding window, MoE) it means the feature is not used.

Every field is required unless it says otherwise: a survey needs each choice visible in
every card, not inherited from a default. Unknown fields are rejected.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Mapping
from enum import StrEnum
from operator import attrgetter
from types import MappingProxyType
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    PrivateAttr,
    StrictBool,
    create_model,
    model_validator,
)

from archdb.choices.activations import Activation
from archdb.choices.norms import NormType, default_eps_text
from archdb.field_types import (
    MAX_CONTEXT,
    MAX_COUNT,
    MAX_DEPTH,
    MAX_IMPLIED_PARAMS,
    MAX_MAGNITUDE,
    MAX_PARAMS,
    MAX_PATTERN,
    MAX_TOKENS,
    MAX_VOCAB,
    MAX_WIDTH,
    Count,
    CountOrZero,
    Depth,
    DepthOrZero,
    Fraction,
    NonNegativeFloat,
    ParamCount,
    PositiveFloat,
    Strict,
    TokenCount,
    Tokens,
    Vocab,
    Width,
)
from archdb.fields import Asked, OutputOnly, Switch, Unknown, Usual, get_path, with_role
from archdb.mixers import MIXERS, in_schema_order

# re-exported: one dotted-path helper (archdb.fields), the vocabularies declared beside
# their rules (archdb.choices) and the size bounds (archdb.field_types)
__all__ = [
    "MAX_CONTEXT",
    "MAX_COUNT",
    "MAX_MAGNITUDE",
    "MAX_PARAMS",
    "MAX_TOKENS",
    "MAX_VOCAB",
    "MAX_WIDTH",
    "Activation",
    "NormType",
    "get_path",
]

# --- controlled vocabularies -------------------------------------------------------


class Kind(StrEnum):
    DECODER_ONLY = "decoder-only"
    ENCODER_DECODER = "encoder-decoder"
    ENCODER_ONLY = "encoder-only"


class NormAffine(StrEnum):
    """Which learnable parameters a norm carries."""

    SCALE_AND_BIAS = "scale-and-bias"  # classic LayerNorm: gamma and beta
    SCALE = "scale"  # RMSNorm, or LayerNorm without beta (Command R, PaLM)
    NONE = "none"  # non-parametric (OLMo 1)


class NormPosition(StrEnum):
    POST = "post"  # x = Norm(x + Sublayer(x)): the original Transformer, OPT-350M
    PRE = "pre"  # x = x + Sublayer(Norm(x)): GPT-2 onwards
    DOUBLE = "double"  # x = x + Norm(Sublayer(Norm(x))): "sandwich", Grok-1, Gemma 2/3
    POST_BRANCH = "post-branch"  # x = x + Norm(Sublayer(x)): OLMo 2, inside the branch
    RESIDUAL = "resi-dual"  # ResiDual: a Post-LN stream plus a Pre-LN stream (Xie 2023)
    # x = Norm(x) + Sublayer(Norm(x)): the skip carries the normed input, so each norm
    # also re-normalizes the stream (MiniMax-01's postnorm: true; transformers' minimax)
    NORMED_SKIP = "normed-skip"


class PositionType(StrEnum):
    SINUSOIDAL = "sinusoidal"
    LEARNED = "learned"  # learned absolute position embeddings
    RELATIVE_BIAS = "relative-bias"  # T5-style bucketed bias on attention logits
    RELATIVE_XL = "relative-xl"  # Transformer-XL: projected sinusoidal relative embeddings
    ROPE = "rope"
    ALIBI = "alibi"
    NONE = "none"  # NoPE


class AttentionVariant(StrEnum):
    SOFTMAX = "softmax"  # multi-head softmax attention (MHA, GQA or MQA by kv heads)
    LATENT = "latent"  # multi-head latent attention (DeepSeek-V2 MLA)
    LINEAR = "linear"  # linear attention / fast weight programmer (Katharopoulos 2020)
    # DeepSeek-V4: one shared key=value head over a sliding window, plus per-layer
    # compressed entries (attention.compressed; layer kinds compressed-sparse and
    # heavily-compressed)
    COMPRESSED = "compressed"


class RopeScalingType(StrEnum):
    """How RoPE frequencies are stretched for contexts beyond the pre-training length."""

    LINEAR = "linear"  # position interpolation: every frequency / factor (Chen et al. 2023)
    DYNAMIC = "dynamic"  # NTK-aware: the base grows with the sequence beyond original_context
    YARN = "yarn"  # YaRN (Peng et al. 2023): per-band interpolation and a logit temperature
    LLAMA3 = "llama3"  # Llama 3.1: low frequencies / factor, high kept, a smooth band between
    # LongRoPE (Ding et al. 2024; Phi-3/3.5, Phi-4-mini): each frequency divided by a factor of
    # its own, the short set for sequences up to original_context, the long set beyond
    LONGROPE = "longrope"
    # Hunyuan: a fixed NTK-aware stretch of the base, theta * alpha^(d/(d-2)) with factor =
    # alpha, the same at every length (configs say "dynamic" with an alpha key)
    NTK_ALPHA = "ntk-alpha"


class OutputGate(StrEnum):
    """A sigmoid gate on each head's attention output, read from a widened query projection."""

    ELEMENTWISE = "elementwise"  # one gate per output channel: q_proj twice as wide (Qwen3-Next)
    HEADWISE = "headwise"  # one gate per head: q_proj n_heads wider


class RouterScore(StrEnum):
    """How a router turns its logits into one score per routed expert."""

    SOFTMAX = "softmax"  # a softmax over all routed experts (Mixtral, DeepSeek-V2)
    SIGMOID = "sigmoid"  # each expert's sigmoid on its own (DeepSeek-V3, GLM-4.5)
    SQRT_SOFTPLUS = "sqrt-softplus"  # sqrt(softplus(logit)) per expert (DeepSeek-V4)


class BesideNorms(StrEnum):
    """Where the norms sit around a MoE layer with a dense MLP beside its routed experts."""

    # each branch between its own pre- and post-norm, their sum through the block's
    # post-norm; the router reads the un-normed stream (Gemma 4 26B-A4B)
    PER_BRANCH = "per-branch"
    # both branches read the block's pre-norm, their sum passes the block's post-norm, no
    # norms of their own; the router reads the normed input (Grok-2's residual MoE)
    SHARED = "shared"


class GroupScore(StrEnum):
    """How group-limited routing ranks a group of experts."""

    MAX = "max"  # its best expert's score (DeepSeek-V2 group_limited_greedy)
    TOP2_SUM = "top2-sum"  # its two best scores, after the correction bias (V3 noaux_tc)


# the built-in layer-pattern entries (member name, entry), in schema order: each mixer
# plugin's member goes after the entry its ``after`` names (archdb.mixers.in_schema_order)
_BUILT_IN_KINDS = (
    ("GLOBAL", "global"),  # full attention, with the card's position scheme
    # sliding-window attention, with the card's position scheme: each query sees a causal
    # band of `sliding_window` keys, itself included. GPT-3's "locally banded sparse"
    # layers are this function (OpenAI's Sparse Transformer code: attn_mode "local")
    ("LOCAL", "local"),
    ("GLOBAL_NOPE", "global-nope"),  # full attention without position encoding (Llama 4)
    ("CHUNKED", "chunked"),  # attention within fixed blocks of `sliding_window` tokens (Llama 4)
    ("MLP", "mlp"),  # the card's dense MLP alone, no token mixer (Nemotron-H's "-" layers)
    ("MOE", "moe"),  # the card's MoE alone, no token mixer (Nemotron 3's "E" layers)
    # full attention and a Mamba-2 mixer (the mamba2 plugin, archdb.mixers.mamba2) side by
    # side, reading the same normed input, their outputs summed into one residual add
    # (Falcon-H1); the mixer's sizes in mixers.mamba2
    ("GLOBAL_MAMBA2", "global+mamba2"),
    # DeepSeek-V4's compressed layers (attention variant compressed): the sliding window of
    # a local layer plus compressed entries of the whole past, one per
    # attention.compressed.sparse_ratio tokens of which an indexer picks attention.sparse.top_k
    # per query (CSA), or one per heavy_ratio tokens, all read (HCA)
    ("COMPRESSED_SPARSE", "compressed-sparse"),
    ("HEAVILY_COMPRESSED", "heavily-compressed"),
    # Phi-3-small's block-sparse layers: causal attention over blocks of tokens, a query
    # reading its latest attention.block_sparse.local_blocks blocks and every
    # vertical_stride-th block before them (each head's stride shifted); sizes in
    # attention.block_sparse
    ("BLOCKSPARSE", "blocksparse"),
)


class LayerKind(StrEnum):
    """One entry of the per-layer pattern, tiled over the layers: an attention kind or a
    non-attention token mixer whose sizes sit in ``architecture.mixers``."""

    # the built-in entries and, each after the entry it names, one member per mixer plugin
    # (archdb.mixers: Mamba-2, MiniMax-01's lightning, ...): its entry upper-cased, '_' for '-', as
    # the name; its sizes in mixers.<that name, lower>
    _ignore_ = ("_members", "_name", "_entry")
    _members = vars()
    for _name, _entry in in_schema_order(_BUILT_IN_KINDS):
        _members[_name] = _entry

    @property
    def attention(self) -> bool:
        """Whether the layer's token mixer is (or includes) attention (else a recurrent
        mixer, or none)."""
        return self not in {*RECURRENT_KINDS, *CHANNEL_ONLY}

    @property
    def recurrent(self) -> LayerKind | None:
        """The recurrent mixer this layer runs, alone or beside attention (None: none)."""
        if self is LayerKind.GLOBAL_MAMBA2:
            return LayerKind.MAMBA2
        return self if self in RECURRENT_KINDS else None

    @property
    def windowed(self) -> bool:
        """Whether the layer sees only `sliding_window` keys (a window or a chunk) of the
        raw tokens (compressed layers: beside their compressed entries)."""
        return self in {LayerKind.LOCAL, LayerKind.CHUNKED, *COMPRESSED_KINDS}

    @property
    def compressed(self) -> bool:
        """Whether the layer also reads compressed entries (DeepSeek-V4's CSA and HCA)."""
        return self in COMPRESSED_KINDS

    @property
    def positional(self) -> bool:
        """Whether the card's position scheme acts in this layer (NoPE layers opt out)."""
        return self.attention and self is not LayerKind.GLOBAL_NOPE


# DeepSeek-V4's layers with compressed entries beside the sliding window
COMPRESSED_KINDS = frozenset({LayerKind.COMPRESSED_SPARSE, LayerKind.HEAVILY_COMPRESSED})
# pattern entries that are a whole layer without a token mixer: the card's MLP or its MoE
CHANNEL_ONLY = frozenset({LayerKind.MLP, LayerKind.MOE})
# pattern entries whose token mixer is recurrent, sized in architecture.mixers
RECURRENT_KINDS = frozenset(LayerKind(kind) for kind in MIXERS)
# the non-attention mixers' entries in schema order; each one's sizes in mixers.<field>
MIXER_KINDS = tuple(kind for kind in LayerKind if kind in RECURRENT_KINDS)
# the non-attention mixers' entries, as messages and descriptions list them
MIXER_ENTRIES = ", ".join(kind.value for kind in MIXER_KINDS)


def mixer_field(kind: LayerKind) -> str:
    """The field of architecture.mixers that holds a non-attention entry's sizes."""
    return kind.value.replace("-", "_")


class QKNorm(StrEnum):
    """Normalization of queries and keys before their dot product."""

    NONE = "none"
    PER_HEAD = "per-head"  # one norm over each head's dims, shared by heads (Gemma 3, Qwen 3)
    PER_HEAD_UNTIED = "per-head-untied"  # per-head norm, own scale per head (Command R+)
    FULL = "full"  # one norm over the whole projection (OLMo 2)
    L2 = "l2"  # parameter-free L2 normalization (Llama 4)

    @property
    def learned(self) -> bool:
        """Whether the norm has learnable terms, and so a type and affine of its own that
        the card states (attention.qk_norm_type, qk_norm_affine)."""
        return self in {QKNorm.PER_HEAD, QKNorm.PER_HEAD_UNTIED, QKNorm.FULL}


class GeluApproximation(StrEnum):
    """How a GELU is computed: the exact erf form or Hendrycks & Gimpel's tanh approximation."""

    EXACT = "exact"  # x * Phi(x) (GPT-NeoX, BERT)
    TANH = "tanh"  # 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) (GPT-2 "gelu_new", Gemma)


class RopeLayout(StrEnum):
    """Which query/key dims RoPE rotates together as one pair."""

    HALF_SPLIT = "half-split"  # dims i and i + d/2 (GPT-NeoX, Llama in transformers)
    INTERLEAVED = "interleaved"  # dims 2i and 2i + 1 (Su et al. 2021, GPT-J, Meta's Llama code)


class SinusoidLayout(StrEnum):
    """Where a sinusoidal table puts each frequency's sine and cosine, and which
    frequencies and positions it uses."""

    # sin and cos of frequency 10000^(-2k/d) at dims 2k and 2k + 1 (Vaswani et al. 2017)
    INTERLEAVED = "interleaved"
    # the sines of those frequencies in the first half, the cosines in the second (CTRL)
    HALVES = "halves"
    # fairseq's: halves, frequencies 10000^(-k/(d/2 - 1)), positions counted from 2 after
    # the padding index (XGLM)
    FAIRSEQ = "fairseq"


class SourceKind(StrEnum):
    PAPER = "paper"
    CONFIG = "config"  # an official released config file
    MODEL_CARD = "model-card"
    CODE = "code"  # official reference implementation
    BLOG = "blog"  # the organization's own announcement
    # A verbatim copy of an official artifact (a mirror, a registry that reproduces the
    # file as released): weaker than the original, so it names what it copies.
    MIRROR = "mirror"
    # A file made from the official artifact but not identical to it (a quantized
    # re-release's config, a fine-tune's or a successor's config): names the original and
    # says what differs.
    DERIVED = "derived"
    # A library's class defaults standing in for a released config: names the library,
    # its version and the class.
    DEFAULTS = "defaults"


# Sources that stand in for an official artifact, weakest last: a value resting only on
# these is not read from the original (archdb.schema.resting_kinds)
SECONDARY_KINDS = (SourceKind.MIRROR, SourceKind.DERIVED, SourceKind.DEFAULTS)


# --- field types (the bounded sizes: archdb.field_types) ------------------------------

SLUG = r"^[a-z0-9]+(?:[-.][a-z0-9]+)*$"
Slug = Annotated[str, Field(pattern=SLUG, min_length=2, max_length=80)]
FieldPath = Annotated[
    str, Field(pattern=r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*$", max_length=200)
]

# Card text is shown in terminals and HTML: no control characters (ESC starts terminal
# escape sequences, NUL truncates C strings), no C1 controls, no line or paragraph
# separators and no bidirectional overrides (they reorder what a reviewer sees). Notes may
# span lines; every other string is one line.
_FORBIDDEN_EXCEPT_NEWLINE = "\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL_IN_TEXT = re.compile(f"[{_FORBIDDEN_EXCEPT_NEWLINE}]")
_CONTROL_IN_LINE = re.compile(f"[\n{_FORBIDDEN_EXCEPT_NEWLINE}]")


def _refuse_controls(pattern: re.Pattern[str]) -> AfterValidator:
    newlines_allowed = "\n" not in pattern.pattern

    def check(value: str) -> str:
        # every forbidden character is unprintable: a printable text needs no search
        if (value.replace("\n", " ") if newlines_allowed else value).isprintable():
            return value
        found = pattern.search(value)
        if found:
            raise ValueError(
                f"contains the control character U+{ord(found.group()):04X} at character "
                f"{found.start() + 1}: card text must be printable"
            )
        return value

    return AfterValidator(check)


_ONE_LINE = _refuse_controls(_CONTROL_IN_LINE)
Name = Annotated[str, Field(min_length=2, max_length=200), _ONE_LINE]
Title = Annotated[str, Field(min_length=3, max_length=1_000), _ONE_LINE]
Locator = Annotated[str, Field(max_length=5_000), _ONE_LINE]
Url = Annotated[str, Field(pattern=r"^https?://\S+$", max_length=2_000), _ONE_LINE]
Text = Annotated[str, Field(max_length=10_000), _refuse_controls(_CONTROL_IN_TEXT)]


# --- when an output-only choice is in play (its role's ``applies``) ---------------------
# Each takes an Architecture; a choice inside an absent sub-model (moe, sparse, a mixer)
# is never in play, so these only test what the sub-model's presence does not.


def _rope(a: Architecture) -> bool:
    return a.position.type is PositionType.ROPE


def _sinusoidal(a: Architecture) -> bool:
    return a.position.type is PositionType.SINUSOIDAL


def _gelu(a: Architecture) -> bool:
    return a.mlp.activation in (Activation.GELU, Activation.GEGLU)


def _clamped(a: Architecture) -> bool:
    return a.mlp.activation in (Activation.CLAMPED_SWIGLU, Activation.CLIPPED_SWIGLU)


def _gegelu(a: Architecture) -> bool:
    return a.mlp.activation is Activation.GEGELU


def _yarn(a: Architecture) -> bool:
    return a.position.rope_scaling.type is RopeScalingType.YARN


def _with_mamba2(a: Architecture) -> bool:
    """Falcon-H1's muP factors: in play only beside a Mamba-2 mixer (the one family that
    sets them), not on every attention card."""
    return a.mixers is not None and a.mixers.mamba2 is not None


def _with_qk_norm(a: Architecture) -> bool:
    return a.attention.qk_norm not in (None, QKNorm.NONE)


def _with_qk_norm_and_nope(a: Architecture) -> bool:
    """A QK norm beside NoPE layers: whether those layers norm too is a choice."""
    return _with_qk_norm(a) and LayerKind.GLOBAL_NOPE in a.attention.layer_pattern


def _with_residual_factors(a: Architecture) -> bool:
    """MiniMax-01's residual factors: in play only beside a mixer that declares them
    (lightning attention; archdb.mixers' ``residual_factors``)."""
    return any(p.residual_factors and p.sizes_of(a) is not None for p in MIXERS.values())


def _with_mamba2_or_residual_factors(a: Architecture) -> bool:
    return _with_mamba2(a) or _with_residual_factors(a)


def _with_value_heads(a: Architecture) -> bool:
    """MiMo-V2-Flash's value factor: in play only beside value heads of their own width."""
    return a.attention.v_head_dim is not None


T5_MAX_DISTANCE = 128  # T5's relative-bias max_distance (not on cards; the T5 default)
# T5's buckets: half per direction (a causal stack has one), of which half are exact
# distances (at least one) and the rest log-spaced up to the max distance, so the exact
# ones must stay below it
RELATIVE_BUCKETS = range(4, 2 * T5_MAX_DISTANCE)


def _windowed_answer(card: dict) -> bool:
    """``archdb new`` asks for a window after a pattern with local or chunked layers."""
    pattern = card.get("architecture", {}).get("attention", {}).get("layer_pattern") or []
    return bool({LayerKind.LOCAL.value, LayerKind.CHUNKED.value} & set(pattern))


def _qk_norm_params_answer(card: dict) -> bool:
    """``archdb new`` asks for the QK norm's type and affine after a QK norm with
    parameters (per-head, per-head-untied or full)."""
    attention = card.get("architecture", {}).get("attention") or {}
    kind = attention.get("qk_norm")
    return kind in {q.value for q in QKNorm if q.learned}


def _rope_answer(card: dict) -> bool:
    """``archdb new`` asks for RoPE's base after a rope position type."""
    position = card.get("architecture", {}).get("position") or {}
    return position.get("type") == PositionType.ROPE.value


# --- architecture sub-models, one per design axis --------------------------------


class Norm(Strict):
    type: Annotated[NormType | None, Unknown()] = Field(
        description="Normalization function; null if unknown."
    )
    position: Annotated[NormPosition | None, Unknown()] = Field(
        description="Where the norm sits relative to each sublayer and the residual stream."
    )
    affine: Annotated[NormAffine | None, Unknown()] = Field(
        description="Learnable parameters of each norm: scale-and-bias (LayerNorm), scale "
        "(RMSNorm, bias-free LayerNorm) or none (non-parametric)."
    )
    final: Annotated[StrictBool | None, Unknown()] = Field(
        description="A norm after the last block, before the output head (pre-norm models)."
    )
    shared_in_parallel: StrictBool | None = Field(
        default=None,
        description="Parallel blocks only, and required there: true when one norm feeds "
        "both attention and MLP (GPT-J, PaLM), false for one norm each (GPT-NeoX). Null for "
        "serial blocks.",
    )
    eps: Annotated[
        PositiveFloat | None,
        OutputOnly(default_eps_text(), "the usual epsilon of the norm type"),
    ] = Field(
        default=None,
        description="Epsilon added to the variance (LayerNorm) or mean square (RMSNorm). "
        "Optional; null: not recorded (the builder assumes 1e-5 LayerNorm, 1e-6 RMSNorm).",
    )
    unit_offset: Annotated[
        StrictBool | None, OutputOnly(False, "the norm applies its scale w, not (1 + w)")
    ] = Field(
        default=None,
        description="The scale is stored as w and applied as (1 + w) (Gemma's RMSNorm). "
        "Optional; null: not recorded (the builder applies w).",
    )
    first_mixer_norm: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="Pre-norm only: false when the first layer's attention reads the "
        "embedding norm's output with no norm of its own (ModernBERT: attn_norm is an "
        "identity in layer 0). Optional; null: every layer has its norms.",
    )
    sublayer_norms: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="A norm inside each sublayer, before its output projection: over the "
        "heads' concatenated outputs before o_proj, and over act(gate) * up (or act(up)) "
        "before down_proj; of the card's norm type, affine terms and epsilon (BitNet b1.58 "
        "2B4T's subln: transformers' bitnet attn_sub_norm and ffn_sub_norm). Softmax "
        "attention and dense MLPs only. Optional; null for none.",
    )


class Latent(Strict):
    """Multi-head latent attention (DeepSeek-V2): K and V come from a low-rank latent."""

    kv_lora_rank: Width = Field(description="Width of the compressed KV latent (cached).")
    q_lora_rank: Width | None = Field(
        description="Width of the query's low-rank bottleneck; null for a full-rank query."
    )
    qk_rope_head_dim: Width = Field(description="Per-head dims carrying RoPE (shared key).")
    qk_nope_head_dim: Width = Field(description="Per-head query/key dims without RoPE.")
    v_head_dim: Width = Field(description="Per-head value width.")
    norm_eps: Annotated[
        PositiveFloat | None,
        OutputOnly("norm.eps", "the latent norms take the blocks' epsilon"),
    ] = Field(
        default=None,
        description="Epsilon of the RMSNorms on the query and KV latents, where it is not "
        "norm.eps (transformers' DeepSeek-V2/V3, V3.2 and GLM-MoE-DSA code fixes 1e-6 "
        "whatever rms_norm_eps says). Optional; null: norm.eps.",
    )
    lora_scaled: Annotated[
        StrictBool | None, OutputOnly(False, "the latents are not rescaled (DeepSeek-V2/V3)")
    ] = Field(
        default=None,
        description="LongCat-Flash's MLA scaling: the query (both its parts, after the "
        "up-projection) is multiplied by sqrt(d_model / q_lora_rank) and the normed KV latent "
        "(so the non-RoPE keys and the values) by sqrt(d_model / kv_lora_rank); the RoPE key "
        "is not. Optional; null: no scaling.",
    )


class GlobalLayers(Strict):
    """Attention sizes of the full-attention (global) layers where they differ from the
    other attention layers' (Gemma 4: fewer, wider KV heads and a partial RoPE)."""

    n_kv_heads: Count | None = Field(
        default=None,
        description="Key/value heads of global layers (Gemma 4 num_global_key_value_heads). "
        "Optional; null: attention.n_kv_heads.",
    )
    head_dim: Width | None = Field(
        default=None,
        description="Query/key/value head width of global layers (Gemma 4 global_head_dim). "
        "Optional; null: the other layers' head width.",
    )
    rotary_fraction: Fraction | None = Field(
        default=None,
        description="Proportional partial RoPE of global layers (transformers' rope_type "
        "'proportional', Gemma 4 0.25): pairs (i, i + head_dim/2) for i below fraction * "
        "head_dim/2 rotate with frequency base^(-2i/head_dim), the other pairs stay as they "
        "are. Optional; null: the card's position scheme unchanged.",
    )
    values_from_keys: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="Global layers have no value projection: the values are the key "
        "projection's output, taken before the key norm and RoPE (Gemma 4 "
        "attention_k_eq_v). Optional; null for a value projection of their own.",
    )
    sinks: StrictBool | None = Field(
        default=None,
        description="Whether global layers keep the attention sinks (attention.sinks) of the "
        "other layers; false: only the local layers have sinks (MiMo-V2-Flash: "
        "add_full_attention_sink_bias false). Optional; null: as the other layers.",
    )


class SparseAttention(Strict):
    """DeepSeek Sparse Attention (DSA, DeepSeek-V3.2): a lightning indexer scores the
    previous tokens and each query attends to its top_k of them only."""

    indexer_heads: Count = Field(
        description="Heads of the lightning indexer (index_n_heads): queries read from the "
        "MLA query latent (q_lora_rank), one weight per head from the hidden state."
    )
    indexer_head_dim: Width = Field(
        description="Width of each indexer query head and of the indexer's one shared key "
        "(index_head_dim; its first qk_rope_head_dim dims carry RoPE; the key is LayerNorm-ed "
        "with scale and bias)."
    )
    top_k: Count = Field(
        description="Keys each query attends to (index_topk): the top_k indexer scores over "
        "the previous tokens (all of them while there are fewer)."
    )
    indexer_rope_layout: Annotated[
        RopeLayout | None,
        OutputOnly("half-split", "rotate_half in the DSA indexer, as transformers' DeepSeek-V3.2"),
    ] = Field(
        default=None,
        description="Pairing of the indexer's rotated dims: half-split (i, i + dims/2; "
        "DeepSeek-V3.2 in transformers) or interleaved (2i, 2i + 1; GLM-5's "
        "indexer_rope_interleave). Optional; null: not recorded (the builder uses half-split).",
    )


class NopeTemperature(Strict):
    """Llama 4's attention temperature tuning (transformers' Llama4TextAttention, after
    arXiv 2501.19399): in the global-nope layers the query at 0-based position p is
    multiplied by 1 + scale x ln(1 + floor((p + 1) / floor_scale)), so positions before
    floor_scale - 1 keep 1 and later queries sharpen step by step."""

    floor_scale: Tokens = Field(description="Positions per step of the factor (floor_scale).")
    scale: PositiveFloat = Field(description="Factor per unit of the logarithm (attn_scale).")


class BlockSparse(Strict):
    """Phi-3-small's block-sparse attention (configuration_phi3_small.py; vLLM's
    blocksparse_attention utils compute the same layout). Tokens are cut into blocks of
    block_size from the start of the sequence; a query in block b reads, causally, the keys of
    blocks b - local_blocks + 1 .. b and of every earlier block j with
    (j + 1 + shift_h) mod vertical_stride == 0, where shift_h = h * max(1, vertical_stride //
    n_heads) for query head h when head_shifted, else 0. Shifted heads read different
    vertical blocks, so a layer's heads together read every block. Every key is cached (a
    later query of some head may read it)."""

    block_size: Tokens = Field(description="Tokens per block (blocksparse_block_size).")
    local_blocks: Count = Field(
        description="Latest blocks every query reads, its own included "
        "(blocksparse_num_local_blocks): a local band of local_blocks x block_size tokens."
    )
    vertical_stride: Count = Field(
        description="Beyond the local band, one block in this many is read "
        "(blocksparse_vert_stride)."
    )
    head_shifted: StrictBool = Field(
        description="Each query head shifts its vertical blocks by h x max(1, vertical_stride "
        "// n_heads) blocks (blocksparse_homo_head_pattern false); false: every head reads the "
        "same blocks."
    )


class CompressedAttention(Strict):
    """DeepSeek-V4's attention (transformers' DeepseekV4Attention): a low-rank query
    (q_lora_rank, RMS-normed, then every head RMS-normed without weights); one key=value head
    of attention.head_dim from one projection and an RMSNorm; RoPE on the last rope_dim dims
    of each head, undone on the output; attention sinks (attention.sinks); a sliding window of
    attention.sliding_window raw tokens in every layer; and a grouped low-rank output
    projection. Compressed layers add compressed entries: each entry is a softmax-gated sum
    (with a learned bias per slot) of projected tokens, RMS-normed and rotated at its window's
    first position with compress_rope_theta and the card's rope_scaling. CSA entries
    (compressed-sparse) cover 2 x sparse_ratio tokens with stride sparse_ratio and an indexer
    (attention.sparse) picks top_k of them per query; HCA entries (heavily-compressed) cover
    heavy_ratio tokens, none shared, all read."""

    q_lora_rank: Width = Field(description="Width of the query's low-rank bottleneck.")
    rope_dim: Width = Field(
        description="Trailing dims of each query/key head that RoPE rotates (qk_rope_head_dim)."
    )
    output_groups: Count = Field(
        description="Head groups of the grouped output projection (o_groups): each group's "
        "heads are projected to output_rank on their own, then all groups to d_model."
    )
    output_rank: Width = Field(description="Width each head group is projected to (o_lora_rank).")
    sparse_ratio: Count = Field(
        description="Tokens per compressed entry of compressed-sparse layers "
        "(compress_rates.compressed_sparse_attention; V4: 4)."
    )
    heavy_ratio: Count = Field(
        description="Tokens per compressed entry of heavily-compressed layers "
        "(compress_rates.heavily_compressed_attention; V4: 128)."
    )
    compress_rope_theta: PositiveFloat = Field(
        description="RoPE base of the compressed layers (their queries, keys and entries); the "
        "local layers rotate with position.rope_theta and no scaling."
    )


class HyperConnections(Strict):
    """Manifold-constrained hyper-connections (mHC; DeepSeek-V4, transformers'
    DeepseekV4HyperConnection): the residual stream is n_streams copies of d_model. Before
    each sublayer a linear map of the weightless-RMS-normed streams gives, with a bias and
    one scale per kind, n pre weights (sigmoid + eps: the sublayer's input is their mix of
    the streams), n post weights (2 sigmoid: how much of the output each stream receives)
    and an n x n mix of the streams (softmax + eps, then sinkhorn_iters Sinkhorn-Knopp
    normalizations). After the stack one more map gives the n weights that collapse the
    streams into one before the final norm."""

    n_streams: Count = Field(description="Parallel residual streams (hc_mult; V4: 4).")
    sinkhorn_iters: Count = Field(
        description="Sinkhorn-Knopp iterations that make the stream mix doubly stochastic "
        "(hc_sinkhorn_iters; V4: 20)."
    )
    eps: PositiveFloat = Field(description="Floor added to the weights and sums (hc_eps).")


class Attention(Strict):
    variant: Annotated[AttentionVariant, Usual(AttentionVariant.SOFTMAX), Asked()] = Field(
        description="softmax, latent (MLA), linear or compressed (DeepSeek-V4)."
    )
    n_heads: Annotated[Count | None, Unknown()] = Field(description="Query heads per layer.")
    n_kv_heads: Annotated[Count | None, Unknown(build=False)] = Field(
        description="Key/value heads: equal to n_heads for MHA, 1 for MQA, between for GQA."
    )
    head_dim: Annotated[Width | None, Asked()] = Field(
        description="Per-head width; null means d_model / n_heads (which must divide)."
    )
    qk_norm: Annotated[QKNorm | None, Unknown()] = Field(
        description="Norm on queries and keys before QK^T: none; per-head (one scale shared "
        "by the heads); per-head-untied (a scale per head); full (over the whole projection); "
        "l2 (parameter-free). The first three state qk_norm_type and qk_norm_affine."
    )
    qk_norm_type: Annotated[NormType | None, Asked(_qk_norm_params_answer, required=True)] = Field(
        default=None,
        description="Type of the QK norm's function, stated on every card whose qk_norm "
        "has parameters (per-head, per-head-untied, full), from the code that defines "
        "q_norm / k_norm (Qwen 3: rmsnorm; Chameleon: layernorm under RMSNorm blocks). Null "
        "(or left out) for qk_norm none, l2 or unknown; it never follows norm.type.",
    )
    qk_norm_affine: Annotated[NormAffine | None, Asked(_qk_norm_params_answer, required=True)] = (
        Field(
            default=None,
            description="Learnable terms of the QK norm, stated with qk_norm_type (Qwen 3: "
            "scale; Chameleon: scale-and-bias per head). Null (or left out) for qk_norm none, l2 "
            "or unknown; it never follows norm.affine.",
        )
    )
    logit_softcap: Annotated[PositiveFloat | None, Asked()] = Field(
        description="Attention logits soft-capped as c*tanh(x/c); null if not used."
    )
    qk_norm_after_rope: Annotated[
        StrictBool | None,
        OutputOnly(False, "the QK norm reads q and k before RoPE (Qwen 3)", _with_qk_norm),
    ] = Field(
        default=None,
        description="The QK norm applies to the rotated queries and keys (Hunyuan: "
        "query_layernorm after apply_rotary_pos_emb); false: before RoPE (Qwen 3, OLMo 2). "
        "Optional; null: not recorded (the builder norms before RoPE).",
    )
    qk_norm_rope_only: Annotated[
        StrictBool | None,
        OutputOnly(False, "the global-nope layers norm q and k too", _with_qk_norm_and_nope),
    ] = Field(
        default=None,
        description="Only the layers that rotate q and k have the QK norm; the pattern's "
        "global-nope layers have none (Llama 4 Scout: Llama4TextAttention builds qk_norm only "
        "where use_rope). Optional; null: not recorded (the builder norms in every attention "
        "layer).",
    )
    sliding_window: Annotated[Tokens | None, Asked(_windowed_answer, after="layer_pattern")] = (
        Field(
            description="Window of the pattern's local layers (chunk size of chunked layers), in "
            "tokens: the causal band of keys a query sees, itself included. A locally banded "
            "layer (GPT-3, 'similar to the Sparse Transformer') is a local layer and its band is "
            "this window. Null if the pattern has neither; with local layers, null means the "
            "window is unpublished (a note says so) and the builder assumes the default "
            "archdb/plan/layout.py states (DEFAULT_WINDOW)."
        )
    )
    layer_pattern: Annotated[list[LayerKind], Usual([LayerKind.GLOBAL]), Asked()] = Field(
        min_length=1,
        max_length=MAX_PATTERN,
        description="Per-layer token mixers, tiled from the first layer over all layers: "
        "[global] for every layer full; [local, global] alternates (Gemma 2); [global, local] "
        "alternates dense and locally banded layers (GPT-3); five locals and "
        "a global (Gemma 3); three locals and a global-nope (Llama 4); "
        "[gated-deltanet x3, global] (Qwen3-Next); [mamba2] attention-free (Mamba-2); "
        "short-conv and global layers in an explicit list (LFM2); [mamba x4, global, "
        "mamba x3] (Jamba, Mamba-1 layers); kda and global layers in an explicit list "
        "(Kimi Linear); [rg-lru, rg-lru, local] (Griffin, RecurrentGemma); [lightning x7, "
        "global] (MiniMax-01). A "
        "period that starts mid-cycle is the rotated list; a list as long as n_layers is an "
        "explicit per-layer list (irregular models). Non-attention entries "
        f"({MIXER_ENTRIES}) take their sizes from "
        "architecture.mixers; the other "
        "attention fields describe the attention entries (and shared_blocks' attention) only "
        "and may be null when there are none. "
        "Single-sublayer stacks (Nemotron-H) list every sublayer as its own layer: mlp is "
        "a layer that is the card's dense MLP alone, moe one that is its MoE alone (the MoE "
        "layers are then exactly the moe entries), with attention.mlp and mixers.*.mlp "
        "false; n_layers counts these entries (Nemotron-H's hybrid_override_pattern, one "
        "character a layer: M mamba2, * global, - mlp, E moe).",
    )
    latent: Latent | None = Field(default=None, description="MLA dimensions; latent only.")
    compressed: CompressedAttention | None = Field(
        default=None,
        description="DeepSeek-V4's attention sizes (see CompressedAttention); variant "
        "compressed only. Optional; null otherwise.",
    )
    sinks: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="Attention sinks: a learned logit per head joins each query's softmax "
        "and takes probability mass without a value (gpt-oss). Optional; null for none.",
    )
    v_head_dim: Width | None = Field(
        default=None,
        description="Width of each value head where it differs from the query/key head_dim "
        "(MiMo-V2-Flash: 128 beside 192): the value projection gives n_kv_heads x v_head_dim, "
        "the output projection reads n_heads x v_head_dim. Softmax attention (not latent) "
        "only. Optional; null: head_dim.",
    )
    value_multiplier: Annotated[
        PositiveFloat | None,
        OutputOnly(1.0, "values enter attention as projected", _with_value_heads),
    ] = Field(
        default=None,
        description="Factor on the value projection's output (MiMo-V2-Flash: "
        "attention_value_scale 0.707). Optional; null: not recorded (the builder uses 1).",
    )
    output_gate: OutputGate | None = Field(
        default=None,
        description="Sigmoid gate on each head's output before o_proj, read from the query "
        "projection widened for it: elementwise (a gate per channel, Qwen3-Next) or headwise "
        "(one per head). Optional; null for none.",
    )
    global_layers: GlobalLayers | None = Field(
        default=None,
        description="Sizes of the global (full-attention) layers where they differ from the "
        "other layers': KV heads, head width, proportional RoPE fraction, values taken from "
        "the keys (Gemma 4). Optional; null when every attention layer has the same sizes.",
    )
    value_norm: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="A parameter-free RMSNorm over each value head before attention (Gemma "
        "3n, Gemma 4 v_norm). Optional; null for none.",
    )
    query_rank: Width | None = Field(
        default=None,
        description="Low-rank query of head attention, softmax or linear (Step-3's Multi-Matrix "
        "Factorization Attention, share_q_dim): q = W_up norm(W_down x), W_down from d_model "
        "to query_rank (with bias.qkv), a norm of the card's norm type, affine terms and "
        "epsilon over its query_rank features (Step-3's inter_norm), W_up to n_heads x "
        "head_dim without bias; keys and values are projected from the input as usual (MFA: "
        "one shared key/value head, n_kv_heads 1). MLA states its own query bottleneck in "
        "latent.q_lora_rank. Optional; null: a full-rank query projection.",
    )
    qkv_clip: PositiveFloat | None = Field(
        default=None,
        description="Every query, key and value projection output clamped to [-clip, clip] "
        "before RoPE and the product (MPT's and DBRX's clip_qkv). Optional; null for none.",
    )
    sparse: SparseAttention | None = Field(
        default=None,
        description="Sparse selection by a lightning indexer (DSA: DeepSeek-V3.2, GLM-5) on "
        "latent attention with a query latent; every attention layer runs its own indexer. "
        "With variant compressed (DeepSeek-V4), the indexer of the compressed-sparse layers: "
        "its keys are compressed entries of indexer_head_dim made as the layer's own, and it "
        "picks top_k of them per query. Optional; null for dense attention.",
    )
    mlp: StrictBool | None = Field(
        default=None,
        description="Whether an attention layer also has the card's MLP (or MoE) after the "
        "attention, as mixers.*.mlp says for recurrent layers. Optional; null: yes (the "
        "transformer block); false where each layer is one sublayer and the MLPs are their "
        "own mlp or moe entries of layer_pattern (Nemotron-H).",
    )
    scale: Annotated[
        PositiveFloat | None, OutputOnly("1/sqrt(qk head width)", "scaled dot-product attention")
    ] = Field(
        default=None,
        description="Multiplier of the query-key scores where it is not 1/sqrt(qk head "
        "width) (Gemma 2/3: query_pre_attn_scalar ** -0.5; Granite: attention_multiplier, "
        "e.g. 0.0078125, in place of 1/sqrt(d_head)). Optional; null: not recorded "
        "(the builder uses 1/sqrt of the query/key head width). Falcon-H1 multiplies its "
        "keys by key_multiplier before RoPE: the same function, key_multiplier/sqrt(d_head).",
    )
    input_multiplier: Annotated[
        PositiveFloat | None,
        OutputOnly(1.0, "attention reads the normed stream unscaled", _with_mamba2),
    ] = Field(
        default=None,
        description="Factor on the attention's input, before the query/key/value "
        "projections (Falcon-H1: attention_in_multiplier). Optional; null: not recorded "
        "(the builder uses 1).",
    )
    output_multiplier: Annotated[
        PositiveFloat | None,
        OutputOnly(1.0, "attention's output is not rescaled", _with_mamba2_or_residual_factors),
    ] = Field(
        default=None,
        description="Factor on the attention's output, after o_proj, before it joins the "
        "residual stream or a parallel mixer (Falcon-H1: attention_out_multiplier; "
        "MiniMax: layernorm_full_attention_beta). Optional; null: not recorded (the builder "
        "uses 1).",
    )
    skip_multiplier: Annotated[
        PositiveFloat | None,
        OutputOnly(
            1.0, "the residual stream joins attention's output unscaled", _with_residual_factors
        ),
    ] = Field(
        default=None,
        description="Factor on the residual stream where an attention layer's output joins "
        "it: a * x + f(x), x normed first under norm.position normed-skip (MiniMax: "
        "layernorm_full_attention_alpha, transformers full_attn_alpha_factor). Optional; "
        "null: not recorded (the builder uses 1).",
    )
    nope_temperature: NopeTemperature | None = Field(
        default=None,
        description="Llama 4's attention temperature tuning on the pattern's global-nope "
        "layers (attn_temperature_tuning; see NopeTemperature). Optional; null for none.",
    )
    temperature_length: Tokens | None = Field(
        default=None,
        description="xAI's attention temperature (Grok-2: attn_temperature_len 1024): the "
        "logits of a query at 0-based position p > L, after any soft-cap, are multiplied by "
        "log2(p) / log2(L), sharpening long-range attention; positions up to L keep 1. "
        "Decoder-only models of global softmax attention. Optional; null for none.",
    )
    block_sparse: BlockSparse | None = Field(
        default=None,
        description="Layout of the pattern's blocksparse layers (Phi-3-small; see "
        "BlockSparse); required for, and only for, a pattern with blocksparse layers.",
    )
    kv_shared_layers: DepthOrZero | None = Field(
        default=None,
        description="Cross-layer KV sharing: the last this-many decoder layers compute no "
        "keys or values of their own; each attends with those of the last earlier layer of "
        "its attention kind (local or global) that computes them (Gemma 3n, Gemma 4 E2B/E4B: "
        "num_kv_shared_layers). Such a layer keeps its query projection, query norm and "
        "output projection, has no key/value projections or norms, and adds nothing to the "
        "KV cache. Optional; null or 0: every layer computes its own.",
    )


# LongRoPE's per-frequency divisors: one per rotated pair of dims, so at most MAX_WIDTH / 2
LongRopeFactors = Annotated[
    tuple[PositiveFloat, ...], Field(min_length=1, max_length=MAX_WIDTH // 2)
]


class RopeScaling(Strict):
    type: RopeScalingType = Field(
        description="linear (position interpolation), dynamic (NTK-aware base growth), yarn "
        "or llama3 (band-wise), longrope (per-frequency factors), as transformers' rope_type; "
        "ntk-alpha (Hunyuan): the base fixed at rope_theta * alpha^(d/(d-2)), d the rotated "
        "dims, at every length."
    )
    factor: PositiveFloat = Field(
        description="Context extension factor (rope_scaling.factor); ntk-alpha: the alpha "
        "(rope_scaling.alpha; Hunyuan's factor key is unused); longrope: the config's factor, "
        "or max_position_embeddings / original_max_position_embeddings where it has none "
        "(transformers' rule), which sets only the default attention_factor."
    )
    original_context: Tokens | None = Field(
        default=None,
        description="Pre-training context the scaling starts from "
        "(original_max_position_embeddings); required for dynamic, yarn, llama3 and longrope.",
    )
    short_factor: LongRopeFactors | None = Field(
        default=None,
        description="longrope only: one divisor per rotated frequency (rotated dims / 2 of "
        "them, highest frequency first), used while a sequence is at most original_context "
        "tokens long (rope_scaling.short_factor).",
    )
    long_factor: LongRopeFactors | None = Field(
        default=None,
        description="longrope only: the divisors used for a whole sequence longer than "
        "original_context (rope_scaling.long_factor); same length as short_factor.",
    )
    attention_factor: PositiveFloat | None = Field(
        default=None,
        description="longrope only: the factor on the cos/sin tables (rope_scaling."
        "attention_factor). Optional; null: transformers' default, sqrt(1 + ln factor / ln "
        "original_context) for factor > 1, else 1.",
    )
    low_freq_factor: PositiveFloat | None = Field(
        default=None, description="llama3 only: wavelengths above original/low are divided."
    )
    high_freq_factor: PositiveFloat | None = Field(
        default=None, description="llama3 only: wavelengths below original/high are kept."
    )
    beta_fast: PositiveFloat | None = Field(
        default=None, description="yarn only: rotations where interpolation stops (32)."
    )
    beta_slow: PositiveFloat | None = Field(
        default=None, description="yarn only: rotations where extrapolation stops (1)."
    )
    mscale: PositiveFloat | None = Field(
        default=None,
        description="yarn only, with mscale_all_dim (DeepSeek's YaRN): the weight of ln(factor) "
        "in the cos/sin factor's numerator, (0.1 mscale ln f + 1) / (0.1 mscale_all_dim ln f + "
        "1) (transformers' yarn ignores it without mscale_all_dim). Optional; null: not used.",
    )
    mscale_all_dim: PositiveFloat | None = Field(
        default=None,
        description="yarn only (DeepSeek's YaRN): the softmax scale of every query-key "
        "product is multiplied by (0.1 mscale_all_dim ln f + 1)^2, the non-rotary dims "
        "included (transformers' yarn_apply_mscale in DeepSeek-V2/V3's attention), and the "
        "cos/sin factor divided by its root. Optional; null: not used (the cos/sin factor "
        "0.1 ln f + 1, the softmax scale unchanged).",
    )
    truncate: Annotated[
        StrictBool | None,
        OutputOnly(True, "YaRN's band rounded to whole dims (transformers)", _yarn),
    ] = Field(
        default=None,
        description="yarn only: the band between beta_fast and beta_slow is rounded out to "
        "whole dims (transformers' truncate; gpt-oss: false, the exact band). Optional; "
        "null: not recorded (the builder rounds, transformers' default).",
    )

    @model_validator(mode="after")
    def _parameters(self) -> RopeScaling:
        t = self.type
        needs_original = t not in (RopeScalingType.LINEAR, RopeScalingType.NTK_ALPHA)
        if needs_original and self.original_context is None:
            raise ValueError(f"position.rope_scaling.original_context is required for {t.value}")
        llama3 = (self.low_freq_factor, self.high_freq_factor)
        if (t is RopeScalingType.LLAMA3) != all(v is not None for v in llama3):
            raise ValueError(
                "position.rope_scaling.low_freq_factor and high_freq_factor are required "
                "for, and only for, llama3"
            )
        if t is not RopeScalingType.YARN and (self.beta_fast or self.beta_slow):
            raise ValueError("position.rope_scaling.beta_fast and beta_slow are yarn only")
        if t is not RopeScalingType.YARN and self.truncate is not None:
            raise ValueError("position.rope_scaling.truncate is yarn only")
        if t is not RopeScalingType.YARN and (self.mscale or self.mscale_all_dim):
            raise ValueError("position.rope_scaling.mscale and mscale_all_dim are yarn only")
        if self.mscale is not None and self.mscale_all_dim is None:
            raise ValueError(
                "position.rope_scaling.mscale needs mscale_all_dim: transformers' yarn reads "
                "mscale only as the numerator of mscale / mscale_all_dim"
            )
        self._check_longrope()
        return self

    def _check_longrope(self) -> None:
        longrope = self.type is RopeScalingType.LONGROPE
        given = [f is not None for f in (self.short_factor, self.long_factor)]
        if (longrope and not all(given)) or (not longrope and any(given)):
            raise ValueError(
                "position.rope_scaling.short_factor and long_factor are required for, and "
                "only for, longrope"
            )
        if not longrope and self.attention_factor is not None:
            raise ValueError("position.rope_scaling.attention_factor is longrope only")
        if longrope and len(self.short_factor) != len(self.long_factor):
            raise ValueError(
                f"position.rope_scaling.short_factor has {len(self.short_factor)} values but "
                f"long_factor {len(self.long_factor)}: one each per rotated frequency"
            )


class Position(Strict):
    type: Annotated[PositionType | None, Unknown()] = Field(
        description="Position scheme of the (non-NoPE) layers."
    )
    rope_theta: Annotated[PositiveFloat | None, Asked(_rope_answer)] = Field(
        default=None, description="RoPE base frequency; RoPE only."
    )
    rope_theta_local: PositiveFloat | None = Field(
        default=None, description="RoPE base of local layers where it differs (Gemma 3)."
    )
    rotary_fraction: Fraction | None = Field(
        default=None, description="Share of each head's dims that rotate (GPT-J 0.25); RoPE only."
    )
    relative_buckets: Count | None = Field(
        default=None, description="Buckets of a T5-style relative bias; relative-bias only."
    )
    learned_rows: Tokens | None = Field(
        default=None,
        description="Rows of the learned position table where they differ from "
        "context_length (OPT: 2050 for 2048 positions, two rows reserved); learned only. "
        "Optional.",
    )
    rope_scaling: RopeScaling | None = Field(
        default=None,
        description="RoPE frequency scaling for long context (linear, dynamic, yarn, "
        "llama3), in every RoPE layer except local layers with their own rope_theta_local "
        "(Gemma 3); RoPE only. Optional; null for none.",
    )
    rope_layout: Annotated[
        RopeLayout | None,
        OutputOnly("half-split", "rotate_half, as transformers' RoPE families", _rope),
    ] = Field(
        default=None,
        description="Which dims RoPE rotates as a pair: half-split (i, i + d/2) or "
        "interleaved (2i, 2i + 1), in the layout of the released transformers-format "
        "checkpoint (the one weights= loads): Meta's and Mistral's reference code rotates "
        "interleaved pairs of their original checkpoints, whose conversion permutes the q/k "
        "rows to half-split. RoPE only. Optional; null: not recorded (the builder uses "
        "half-split).",
    )
    sinusoid_layout: Annotated[
        SinusoidLayout | None,
        OutputOnly("interleaved", "sines and cosines interleaved (Vaswani et al.)", _sinusoidal),
    ] = Field(
        default=None,
        description="The sinusoidal table's layout (see SinusoidLayout): interleaved (the "
        "original Transformer), halves (CTRL) or fairseq's (XGLM). Sinusoidal only. Optional; "
        "null: not recorded (the builder uses interleaved).",
    )


def _mixer_fields() -> dict[str, tuple[object, object]]:
    """Every mixer plugin's sizes field (archdb.mixers), in the schema order of their
    layer-pattern entries."""
    fields = {
        p.field: (p.sizes | None, Field(default=None, description=p.description))
        for p in MIXERS.values()
    }
    return {mixer_field(kind): fields[mixer_field(kind)] for kind in MIXER_KINDS}


Mixers = create_model(
    "Mixers",
    __base__=Strict,
    __module__=__name__,
    __doc__="Sizes of the non-attention token mixers named in attention.layer_pattern.",
    **_mixer_fields(),
)


class MTP(Strict):
    """Multi-token-prediction modules beside the main model (DeepSeek-V3 section 2.2).

    Module k predicts the token k + 1 places ahead from module k - 1's hidden state (the
    main model's for k = 1) and the embedding of the token k places ahead. Convention, as
    DeepSeek-V3's, GLM-4.5's, MiMo's and Qwen3-Next's released modules: two norms of the
    card's kind (one on that hidden state, one on that embedding), their concatenation
    projected 2 d_model -> d_model without bias, ``layers_per_module`` blocks like the main
    model's last layer, and a final norm; the token embedding and the output head are the
    main model's, shared and not counted again. Trained alongside the main model and used
    for speculative decoding, never in its forward pass: the exact parameter count (the one
    compared with transformers, which builds no MTP weights) leaves them out, and the toy
    does not build them.
    """

    n_modules: DepthOrZero = Field(
        description="Sequential MTP modules (num_nextn_predict_layers; Qwen3-Next and "
        "Qwen3.5: mtp_num_hidden_layers; MiniMax: num_mtp_modules); 0: the release states "
        "none."
    )
    layers_per_module: Depth = Field(
        default=1,
        description="Transformer blocks in each module (MiniMax: mtp_transformer_layers). "
        "Optional; 1.",
    )


class SharedBlocks(Strict):
    """Transformer blocks whose weights are reused at several depths of the decoder (Zamba,
    Zamba2), laid out as transformers' Zamba2. A block is the card's attention (attention.*
    sizes, scale, positions, bias.qkv and bias.attn_out) and the card's dense MLP (mlp.*,
    bias.mlp), each behind a norm of the card's type and epsilon, with no residual add
    inside: h = attention(norm(input)); h = mlp(norm(h)). An invocation before decoder
    layer L adds its output to L's input before L's norm; L's residual stream does not
    take it (Zamba2's hybrid layer: x + mamba(norm(x + T))). Counting convention:
    parameters count each block's shared weights once and each invocation's own adapters
    and projection once per invocation; FLOPs per token count every invocation; every
    invocation keeps its own K/V cache."""

    n_blocks: Count = Field(
        description="Distinct weight sets (num_mem_blocks); invocation i (0-based, in depth "
        "order) runs block i mod n_blocks (Zamba2: 2, used ABAB). At most the number of "
        "invocations."
    )
    layers: list[DepthOrZero] = Field(
        min_length=1,
        max_length=MAX_DEPTH,
        description="Decoder layers (0-based, strictly increasing, below n_layers) each "
        "preceded by one invocation (transformers' hybrid_layer_ids: the 'hybrid' entries "
        "of layers_block_type).",
    )
    concat_embeddings: StrictBool = Field(
        description="Whether a block reads the hidden state concatenated with the token "
        "embeddings, [x, embeddings], 2 x d_model wide (Zamba, Zamba2: the first norm and "
        "the q/k/v projections read that width; o_proj writes d_model), or x alone."
    )
    adapter_rank: Width | None = Field(
        description="Rank of the per-invocation LoRA adapters (adapter_rank): an "
        "invocation owns, per adapted projection, a down (input width -> rank) and an up "
        "(rank -> output width) linear without bias whose product is added to the shared "
        "projection's output. Null: no adapters."
    )
    mlp_adapters: StrictBool = Field(
        description="Adapters on the MLP's gate and up projections, as one fused gate/up "
        "adapter (Zamba2: always). Needs adapter_rank and a gated activation."
    )
    attention_adapters: StrictBool = Field(
        description="Adapters on the attention's q, k and v projections, each from and to "
        "the block's input width (use_shared_attention_adapter; Zamba2-7B). Needs "
        "adapter_rank, n_kv_heads = n_heads and n_heads x head_dim = the input width."
    )
    output_projection: StrictBool = Field(
        description="A per-invocation linear d_model -> d_model without bias on the block's "
        "output before it joins the layer's input (Zamba2: the hybrid layer's linear)."
    )


class MoE(Strict):
    n_experts: Count = Field(description="Routed experts per MoE layer.")
    n_active: Count = Field(description="Routed experts each token uses (top-k).")
    n_shared: CountOrZero = Field(description="Shared experts every token uses.")
    shared_d_ff: Width | None = Field(
        description="Hidden width of the shared expert block; null when n_shared is 0."
    )
    first_dense_layers: DepthOrZero = Field(description="Leading layers with a dense MLP.")
    last_dense_layers: DepthOrZero | None = Field(
        default=None,
        description="Trailing layers with a dense MLP, after the MoE layers (Step-3: its last "
        "layer; moe_layers_enum 4..59 of 61 layers). layer_period counts from "
        "first_dense_layers as before; these last layers are dense whatever it says. "
        "Optional; null or 0: none.",
    )
    layer_period: Depth = Field(
        description="After the dense first layers, every k-th layer is MoE, counting from 1: "
        "layer i (0-based) is MoE when (i - first_dense_layers + 1) % k == 0; 1 for all of "
        "them, 2 for layers 1, 3, 5, ... (Llama 4 Maverick)."
    )
    dense_d_ff: Width | None = Field(
        description="Hidden width of the dense MLP layers; null when every layer is MoE."
    )
    router_bias: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="Bias on the router's logit projection (gpt-oss). Optional; null for none.",
    )
    shared_gate: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="A per-token sigmoid gate, Linear(d_model -> 1), scales the shared experts' "
        "output (Qwen2-MoE, Qwen3-Next). Optional; null for none; needs n_shared > 0.",
    )
    dense_beside_d_ff: Width | None = Field(
        default=None,
        description="Width of a dense MLP that runs beside the routed experts in every MoE "
        "layer on the same input, the two outputs summed (Gemma 4 26B-A4B: 2112; Grok-2: "
        "32768), under double norms placed as beside_norms says; mlp.output_multiplier "
        "scales both branches (their sum). Optional; null for none.",
    )
    beside_norms: BesideNorms | None = Field(
        default=None,
        description="With dense_beside_d_ff only: per-branch (each branch between its own "
        "pre- and post-norm, their sum through the block's post-norm, the router on the "
        "un-normed stream: Gemma 4) or shared (both branches and the router read the "
        "block's pre-norm, their sum passes the block's post-norm: Grok-2's residual_moe). "
        "Optional; null: per-branch.",
    )
    router_softcap: PositiveFloat | None = Field(
        default=None,
        description="Router logits soft-capped as c*tanh(x/c) before the score function "
        "(Grok-2: router_logit_softcapping 30). Optional; null for none.",
    )
    latent_dim: Width | None = Field(
        default=None,
        description="Latent MoE (Nemotron 3 Super: moe_latent_size): the routed experts read "
        "and write this width instead of d_model; one Linear(d_model -> latent_dim) before "
        "them and one Linear(latent_dim -> d_model) after their weighted sum, shared by all "
        "experts, with the MLP's bias. The router and the shared experts stay at d_model. "
        "Optional; null: the experts work at d_model.",
    )
    router_scales: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="Gemma 4's router: it reads the residual stream through its own "
        "parameter-free RMSNorm, a learned per-channel scale and d_model^-0.5, and a learned "
        "per-expert scale multiplies each chosen expert's weight. Optional; null for a linear "
        "router on the MLP's input.",
    )
    normalize_top_k: Annotated[
        StrictBool | None, OutputOnly(True, "a softmax over the chosen experts' logits (Mixtral)")
    ] = Field(
        default=None,
        description="The chosen experts' scores are divided by their sum (norm_topk_prob), "
        "before routed_scale; with softmax scores that is a softmax over their k logits "
        "(Mixtral), rather than their share of a softmax over all experts. Optional; null: "
        "not recorded (the builder normalizes).",
    )
    score_function: Annotated[
        RouterScore | None, OutputOnly("softmax", "a softmax over all routed experts (Mixtral)")
    ] = Field(
        default=None,
        description="Router logits to expert scores: softmax over all routed experts "
        "(Mixtral, DeepSeek-V2) or an elementwise sigmoid (DeepSeek-V3, GLM-4.5; "
        "scoring_func). The chosen experts' scores are their weights. Optional; null: not "
        "recorded (the builder uses softmax).",
    )
    n_groups: Count | None = Field(
        default=None,
        description="Group-limited routing (n_group): the routed experts form n_groups equal "
        "groups in index order, and a token's top-k is taken only within its top_k_groups "
        "best groups (ranked by group_score). Optional; null: no groups (as 1).",
    )
    top_k_groups: Count | None = Field(
        default=None,
        description="Groups a token's experts may come from (topk_group); set with n_groups, "
        "at most n_groups, and the kept groups must hold n_active experts.",
    )
    group_score: GroupScore | None = Field(
        default=None,
        description="How a group is ranked for top_k_groups: max (its best expert score, "
        "DeepSeek-V2 group_limited_greedy) or top2-sum (the sum of its two best scores "
        "after the correction bias, DeepSeek-V3 noaux_tc). Required when n_groups > 1.",
    )
    score_correction_bias: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="A per-expert bias added to the scores to choose the experts, not to "
        "weight them (DeepSeek-V3's auxiliary-loss-free balancing, e_score_correction_bias; "
        "a buffer, not counted as a parameter). Optional; null for none.",
    )
    routed_scale: Annotated[
        PositiveFloat | None, OutputOnly(1.0, "the routed experts' weights are not rescaled")
    ] = Field(
        default=None,
        description="The routed experts' weights are multiplied by this after any top-k "
        "normalization, before the shared experts are added (routed_scaling_factor). "
        "Optional; null: not recorded (the builder uses 1).",
    )
    weighted_input: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="Each chosen expert's weight multiplies its input rather than its output "
        "(Llama 4: routed_in = x * score); through a gated MLP the two differ. Optional; null "
        "for the output.",
    )
    zero_experts: CountOrZero | None = Field(
        default=None,
        description="Zero-computation experts beside the routed ones (LongCat-Flash "
        "zero_expert_num): the router scores n_experts + zero_experts candidates (its "
        "projection, correction bias and softmax span all of them) and takes its n_active "
        "best; a chosen zero expert returns its input times its weight, with no parameters. "
        "A token thus runs between 0 and n_active real experts: archdb's FLOPs per token and "
        "active parameters count the maximum, n_active real experts (an upper bound; the "
        "expected count depends on the trained router). Optional; null: none.",
    )
    hash_layers: DepthOrZero | None = Field(
        default=None,
        description="Leading MoE layers whose experts are chosen by a fixed token-id -> "
        "expert-ids table (a vocab_size x n_active buffer, not a parameter) in place of the "
        "top-k of the scores; the router's scores still weight the chosen experts "
        "(DeepSeek-V4 num_hash_layers). Optional; null or 0: every router picks by top-k.",
    )
    shortcut_dense_d_ff: Width | None = Field(
        default=None,
        description="Shortcut-connected MoE layers (LongCat-Flash ScMoE): each of the "
        "n_layers layers holds two serial (attention, dense MLP) pairs, every sublayer "
        "pre-normed, the dense MLPs of this width (ffn_hidden_size), and the routed experts, "
        "which read the first dense MLP's normed input and whose output joins the residual "
        "stream after the second dense MLP. n_layers counts these double layers "
        "(transformers' num_layers: 2 x n_layers attention sublayers, each with its own KV "
        "cache). Optional; null: one attention and one MLP per layer.",
    )


def _check_beside_norms(moe: MoE) -> None:
    """The norm layout of a dense MLP beside the experts, and the routers it admits."""
    if moe.beside_norms is not None and moe.dense_beside_d_ff is None:
        raise ValueError("mlp.moe.beside_norms needs mlp.moe.dense_beside_d_ff")
    if moe.router_scales and moe.beside_norms is BesideNorms.SHARED:
        raise ValueError(
            "mlp.moe.router_scales is Gemma 4's router on the un-normed stream: it needs "
            "beside_norms per-branch (or null)"
        )
    if moe.router_scales and moe.router_softcap is not None:
        raise ValueError(
            "mlp.moe.router_softcap with router_scales: Gemma 4's router has no soft-cap, "
            "and the builder does not combine them"
        )


def _check_groups(moe: MoE) -> None:
    """Group-limited routing: equal groups whose kept ones hold the top-k."""
    if (moe.n_groups is None) != (moe.top_k_groups is None):
        raise ValueError("mlp.moe.n_groups and mlp.moe.top_k_groups are set together")
    if moe.n_groups is None:
        if moe.group_score is not None:
            raise ValueError("mlp.moe.group_score is set but mlp.moe.n_groups is not")
        return
    if moe.n_experts % moe.n_groups:
        raise ValueError(
            f"mlp.moe.n_groups ({moe.n_groups}) must divide n_experts ({moe.n_experts})"
        )
    if moe.n_groups > 1 and moe.zero_experts:
        # LongCat-Flash's zero experts compete with the routed ones ungrouped
        raise ValueError("mlp.moe.zero_experts with n_groups > 1: no group holds a zero expert")
    if moe.top_k_groups > moe.n_groups:
        raise ValueError(
            f"mlp.moe.top_k_groups ({moe.top_k_groups}) exceeds n_groups ({moe.n_groups})"
        )
    per_group = moe.n_experts // moe.n_groups
    if moe.n_active > moe.top_k_groups * per_group:
        raise ValueError(
            f"mlp.moe.n_active ({moe.n_active}) exceeds the experts of the top_k_groups kept "
            f"groups ({moe.top_k_groups} x {per_group})"
        )
    if moe.n_groups > 1 and moe.group_score is None:
        raise ValueError("mlp.moe.group_score is required when n_groups > 1")
    if moe.group_score is GroupScore.TOP2_SUM and per_group < 2:
        raise ValueError("mlp.moe.group_score top2-sum needs at least 2 experts per group")


class ActivationSparsity(Strict):
    """Gaussian top-k (Gemma 3n): in each of the first ``first_layers`` layers' gated MLPs,
    the gate projection g becomes relu(g - (mean(g) + std(g) * Phi^-1(target))) before the
    activation, mean and (population) std over g's d_ff values of each token, Phi^-1 the
    standard normal quantile: about ``target`` of the gate values become 0 for Gaussian g."""

    target: Fraction = Field(description="Target fraction of zeros (Gemma 3n: 0.95).")
    first_layers: Depth = Field(description="Leading decoder layers with it (Gemma 3n: 10).")


class MLP(Strict):
    activation: Annotated[Activation | None, Unknown()] = Field(
        description="Non-linearity; gated units list the GLU."
    )
    d_ff: Annotated[Width | None, Unknown()] = Field(
        description="Width the down-projection reads: one branch for gated units (as in "
        "released configs' intermediate_size), one routed expert for MoE."
    )
    moe: MoE | None = Field(description="Mixture-of-experts layout; null for a dense MLP.")
    gelu_approximation: Annotated[
        GeluApproximation | None, OutputOnly("tanh", "GPT-2's and Gemma's GELU", _gelu)
    ] = Field(
        default=None,
        description="GELU and GeGLU only: exact (erf) or the tanh approximation. Optional; "
        "null: not recorded (the builder uses tanh).",
    )
    swiglu_limit: Annotated[
        PositiveFloat | None, OutputOnly(7.0, "gpt-oss's clamp of the clamped SwiGLU", _clamped)
    ] = Field(
        default=None,
        description="clamped-swiglu and clipped-swiglu only: the gate is clamped to at most "
        "this value and the linear branch to [-limit, limit] (gpt-oss: 7.0, DeepSeek-V4: 10.0, "
        "swiglu_limit). Optional; null: not recorded (the builder uses 7.0).",
    )
    swiglu_alpha: Annotated[
        PositiveFloat | None,
        OutputOnly(1.702, "gpt-oss's sigmoid gain of the clamped SwiGLU", _clamped),
    ] = Field(
        default=None,
        description="clamped-swiglu only: the gain in gate * sigmoid(alpha * gate) (gpt-oss: "
        "1.702, swiglu_alpha). Optional; null: not recorded (the builder uses 1.702).",
    )
    gegelu_limit: Annotated[
        PositiveFloat | None, OutputOnly(20.0, "Phi-3-small's clamp of its gegelu", _gegelu)
    ] = Field(
        default=None,
        description="gegelu only: the gate is clamped to at most this value and the linear "
        "branch to [-limit, limit] (Phi-3-small: gegelu_limit 20.0). Optional; null: not "
        "recorded (the builder uses 20.0, the default of Phi3SmallConfig).",
    )
    gate_multiplier: Annotated[
        PositiveFloat | None,
        OutputOnly(1.0, "the gate projection enters the activation unscaled", _with_mamba2),
    ] = Field(
        default=None,
        description="Gated units only: factor on the gate projection before the activation, "
        "act(m * gate(x)) * up(x) (Falcon-H1: mlp_multipliers[0]). Optional; null: not "
        "recorded (the builder uses 1).",
    )
    output_multiplier: Annotated[
        PositiveFloat | None,
        OutputOnly(1.0, "the MLP's output is not rescaled", _with_mamba2_or_residual_factors),
    ] = Field(
        default=None,
        description="Factor on the MLP's output, after the down-projection (a MoE's: after "
        "its experts are summed; with a dense MLP beside the experts, that branch's too, so "
        "their sum is scaled) (Falcon-H1: mlp_multipliers[1]; MiniMax: layernorm_mlp_beta; "
        "Grok-2's residual MoE: 1/sqrt(2)). Optional; null: not recorded (the builder uses 1).",
    )
    skip_multiplier: Annotated[
        PositiveFloat | None,
        OutputOnly(
            1.0, "the residual stream joins the MLP's output unscaled", _with_residual_factors
        ),
    ] = Field(
        default=None,
        description="Factor on the residual stream where the MLP's output joins it: a * x + "
        "f(x), x normed first under norm.position normed-skip (MiniMax: layernorm_mlp_alpha, "
        "transformers mlp_alpha_factor). Optional; null: not recorded (the builder uses 1).",
    )
    kv_shared_d_ff: Width | None = Field(
        default=None,
        description="Dense width of the layers that reuse another layer's keys and values "
        "(attention.kv_shared_layers) where it differs from d_ff (Gemma 4 E2B: "
        "use_double_wide_mlp, 2 x d_ff). Optional; null: d_ff.",
    )
    activation_sparsity: ActivationSparsity | None = Field(
        default=None,
        description="Statistical top-k on the gate of the first layers' MLPs (Gemma 3n "
        "activation_sparsity_pattern): see ActivationSparsity. Optional; null for none.",
    )
    channel_mix: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="RWKV's channel mixing (Peng et al. 2023): the MLP reads each token "
        "interpolated with the previous one (a learned weight per channel, one for the key "
        "and one for the receptance), and its output is gated by sigmoid(receptance(x)), a "
        "d_model x d_model projection: sigmoid(r(x_r)) * down(act(up(x_k))), no biases. "
        "Optional; null: a plain MLP.",
    )
    token_shift: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="RWKV-7's channel mixing (Peng et al. 2025, arXiv 2503.14456): the MLP "
        "reads each token interpolated with the previous one, x + (previous - x) m with one "
        "learned m per channel, and has no gate: down(act(up(x_k))), no biases. Unlike "
        "channel_mix (RWKV-4's), no receptance. Optional; null: a plain MLP.",
    )

    @model_validator(mode="after")
    def _clamp_parameters(self) -> MLP:
        clamped = self.activation is Activation.CLAMPED_SWIGLU
        clipped = self.activation is Activation.CLIPPED_SWIGLU
        if not (clamped or clipped) and self.swiglu_limit is not None:
            raise ValueError("mlp.swiglu_limit is for clamped-swiglu and clipped-swiglu only")
        if not clamped and self.swiglu_alpha is not None:
            raise ValueError("mlp.swiglu_alpha is clamped-swiglu only")
        if self.activation is not Activation.GEGELU and self.gegelu_limit is not None:
            raise ValueError("mlp.gegelu_limit is for gegelu only")
        if self.gate_multiplier is not None and self.activation and not self.activation.gated:
            raise ValueError("mlp.gate_multiplier is for gated units only")
        if self.channel_mix and (
            self.moe is not None or (self.activation and self.activation.gated)
        ):
            raise ValueError("mlp.channel_mix is a dense, non-gated MLP (RWKV's)")
        if self.token_shift and (
            self.channel_mix or self.moe is not None or (self.activation and self.activation.gated)
        ):
            raise ValueError(
                "mlp.token_shift is a dense, non-gated MLP (RWKV-7's), not with channel_mix"
            )
        return self


class EncoderOnly(Strict):
    """What an encoder-only model (BERT, RoBERTa, ModernBERT) adds around its stack, as
    transformers' ``*ForMaskedLM`` lays it out: the stack attends in both directions, the
    token-type rows join the embedding sum, and the masked-LM head reads every position.
    The built model computes the masked-LM logits of one segment (token type 0, no padding:
    RoBERTa's padding token keeps its own position row, which the builder does not model).
    A local layer's window is two-sided in an encoder: a query reads the keys at most
    attention.sliding_window // 2 positions away on either side (ModernBERT's
    local_attention)."""

    token_types: DepthOrZero = Field(
        description="Rows of the token-type (segment) table added to the token embeddings "
        "(type_vocab_size: BERT 2, RoBERTa 1); 0: none (ModernBERT). The built model adds "
        "row 0, one segment."
    )
    position_offset: DepthOrZero = Field(
        default=0,
        description="Learned-position rows before the first token's (RoBERTa: padding_idx "
        "+ 1 = 2, its table holding context_length + 2 rows); 0: the first row.",
    )
    head_transform: Activation | None = Field(
        description="The masked-LM head's transform before the output projection: a "
        "d_model -> d_model linear, this activation and a norm of the card's norm (BERT's "
        "BertPredictionHeadTransform, gelu); null: the head reads the final states directly."
    )
    head_transform_bias: StrictBool = Field(
        default=True,
        description="Bias on the head transform's linear (ModernBERT: classifier_bias).",
    )
    pooler: StrictBool = Field(
        description="A pooler: a d_model -> d_model linear with bias and tanh on the first "
        "token's final state (BERT's BertPooler, for sentence tasks). Counted in the "
        "parameters; the masked-LM logits never read it."
    )


class LayerWidths(Strict):
    """Per-layer attention and MLP widths (layer-wise scaling, OpenELM: each layer has its
    own query heads, KV heads and dense width; head_dim is common). One entry per decoder
    layer, first layer first. attention.n_heads, attention.n_kv_heads and mlp.d_ff state
    the widest layer's values (the columns and ratios read them)."""

    n_heads_per_layer: list[Count] = Field(
        min_length=1,
        max_length=MAX_PATTERN,
        description="Query heads of each layer (OpenELM num_query_heads).",
    )
    n_kv_heads_per_layer: list[Count] = Field(
        min_length=1,
        max_length=MAX_PATTERN,
        description="Key/value heads of each layer (OpenELM num_kv_heads); each divides "
        "its layer's query heads.",
    )
    d_ff_per_layer: list[Width] = Field(
        min_length=1,
        max_length=MAX_PATTERN,
        description="Dense MLP width of each layer (OpenELM: make_divisible(ffn_multipliers"
        "[i] * model_dim, ffn_dim_divisor)).",
    )


class PerLayerEmbeddings(Strict):
    """Per-layer embeddings (PLE: Gemma 3n, Gemma 4 E2B/E4B): every layer reads a small
    vector of its own for each token. A table of vocab_size rows holds n_layers * width
    values per token (looked up, times sqrt(width)); a projection d_model -> n_layers *
    width of the scaled token embedding (times d_model^-0.5, then an RMSNorm of the card's
    norm over each layer's width) is added and the sum times 2^-0.5 is the per-layer
    input. After its MLP, each layer adds norm(proj(act(gate(x)) * input)): gate d_model ->
    width and proj width -> d_model without bias, act the MLP's activation, norm the
    card's norm over d_model. Token ids beyond vocab_size read row 0 (Gemma 3n)."""

    width: Width = Field(description="Per-layer input width (hidden_size_per_layer_input).")
    vocab_size: Vocab = Field(
        description="Rows of the per-layer table (vocab_size_per_layer_input)."
    )


class AltUp(Strict):
    """Alternating updates (AltUp, Baykal et al. 2023, https://arxiv.org/abs/2301.13310;
    Gemma 3n): the residual stream is n_inputs streams of d_model. The first is the scaled
    token embedding, each other one a d_model x d_model projection of it rescaled to its
    RMS. Each layer runs on the active stream only: it predicts every stream as itself plus
    a mix of all streams whose n_inputs x n_inputs coefficients a router computes from the
    active stream (tanh(linear(norm(x) / d_model)), n_inputs^2 coefficients), runs the
    block on the active prediction, then corrects every stream by the block's innovation
    (its output minus the active prediction) times 1 + router coefficients (n_inputs of
    them). After the last layer, the other streams are projected back (one d_model x
    d_model each, rescaled to the first stream's RMS) and the streams averaged before the
    final norm. Per layer: router d_model x n_inputs, its norm, n_inputs^2 x n_inputs
    prediction and n_inputs x n_inputs correction coefficients, and a d_model output
    scale."""

    n_inputs: Count = Field(description="Streams (altup_num_inputs; Gemma 3n: 4).")
    active_index: CountOrZero = Field(
        description="The stream each layer computes on (altup_active_idx; Gemma 3n: 0)."
    )
    correct_scale: StrictBool = Field(
        description="The corrected active stream times the learned output scale before it "
        "feeds the per-layer embeddings' gate (altup_correct_scale)."
    )


class Bias(Strict):
    qkv: Annotated[StrictBool | None, Unknown()] = Field(
        description="Bias on the query/key/value projections."
    )
    attn_out: Annotated[StrictBool | None, Unknown()] = Field(
        description="Bias on the attention output projection."
    )
    mlp: Annotated[StrictBool | None, Unknown()] = Field(
        description="Bias on the MLP's linear layers."
    )
    lm_head: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="Bias on the output head (GPT-J, Phi-2). Optional; null for none.",
    )


class Architecture(Strict):
    kind: Annotated[Kind, Usual(Kind.DECODER_ONLY), Asked()]
    d_model: Annotated[Width | None, Unknown()] = Field(description="Residual stream width.")
    n_layers: Annotated[Depth | None, Unknown()] = Field(
        description="Decoder (or only) stack depth."
    )
    n_encoder_layers: Depth | None = Field(
        default=None, description="Encoder depth; encoder-decoder models only."
    )
    vocab_size: Annotated[Vocab | None, Unknown()] = Field(
        description="Rows of the released embedding matrix."
    )
    embedding_dim: Width | None = Field(
        default=None,
        description="Width of a factorized embedding projected to d_model (OPT-350M: 512); "
        "optional, null when the embedding is d_model wide.",
    )
    tokenizer_vocab_size: Vocab | None = Field(
        default=None, description="The tokenizer's own size, where it differs from vocab_size."
    )
    context_length: Annotated[Tokens | None, Unknown()] = Field(
        description="Maximum sequence length of the release."
    )
    norm: Norm
    attention: Attention
    position: Position
    mlp: MLP
    bias: Bias
    parallel_layers: Annotated[StrictBool | None, Unknown()] = Field(
        description="Attention and MLP read the same input and their outputs are summed."
    )
    tied_embeddings: Annotated[StrictBool | None, Unknown()] = Field(
        description="Output projection shares the input embedding matrix."
    )
    final_logit_softcap: Annotated[PositiveFloat | None, Asked()] = Field(
        description="Output logits soft-capped as c*tanh(x/c); null if not used."
    )
    mixers: Mixers | None = Field(
        default=None,
        description=f"Sizes of the non-attention mixers ({MIXER_ENTRIES}) the layer pattern "
        "names. Optional; null when every layer is attention.",
    )
    embedding_multiplier: Annotated[
        PositiveFloat | None, OutputOnly(1.0, "embeddings enter the first block as looked up")
    ] = Field(
        default=None,
        description="Factor on the token embeddings before the first block (Gemma: "
        "sqrt(d_model); Granite: embedding_multiplier; MiniCPM: scale_emb). Optional; null: "
        "not recorded (the builder uses 1).",
    )
    embedding_norm: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="A norm of the card's norm type and terms (norm.type, affine, eps) on the "
        "embedded tokens before the first block, after any position table is added (BLOOM's "
        "word_embeddings_layernorm). Optional; null: none.",
    )
    logit_scale: Annotated[
        PositiveFloat | None, OutputOnly(1.0, "the head's logits are not rescaled")
    ] = Field(
        default=None,
        description="Factor on the output logits, before any soft-cap (Command R: 0.0625). "
        "A model that divides its logits stores the reciprocal (Granite: 1/logits_scaling; "
        "MiniCPM: dim_model_base/d_model, its head reading h / (d_model/dim_model_base)). "
        "Optional; null: not recorded (the builder uses 1).",
    )
    layer_scalar: Annotated[StrictBool | None, Switch()] = Field(
        default=None,
        description="A learned scalar multiplies each layer's output, residual stream "
        "included (Gemma 4 layer_scalar, Google's skip_scale). Held as a checkpoint buffer "
        "as in transformers, so parameter counts leave it out (Google's reference counts "
        "one per layer). Optional; null for none.",
    )
    residual_multiplier: Annotated[
        PositiveFloat | None, OutputOnly(1.0, "sublayer outputs join the residual stream unscaled")
    ] = Field(
        default=None,
        description="Factor on each sublayer's output (attention, mixer, MLP) before it is "
        "added to the residual stream: x + m * f(norm(x)) (Granite: residual_multiplier; "
        "MiniCPM: scale_depth / sqrt(n_layers)). Optional; null: not recorded (the builder "
        "uses 1).",
    )
    altup: AltUp | None = Field(
        default=None,
        description="Alternating updates (Gemma 3n): several residual streams, each layer "
        "computing on one (see AltUp). Its block: the attention output and a LAuReL branch "
        "averaged as (x + attn + laurel) / sqrt(2) before the MLP, and the per-layer "
        "embeddings' gate added to the streams after the first. Optional; null for one "
        "stream.",
    )
    laurel_rank: Width | None = Field(
        default=None,
        description="LAuReL (learned augmented residual layer, Gemma 3n laurel_rank): beside "
        "each layer's attention, h + norm(W_r W_l h) with h the attention's normed input, "
        "W_l d_model -> rank and W_r rank -> d_model without bias, norm the card's norm; "
        "combined with the attention's residual sum as (x + attn + laurel) / sqrt(2). "
        "Optional; null for none.",
    )
    encoder: EncoderOnly | None = Field(
        default=None,
        description="Token types, position offset, masked-LM head and pooler of an "
        "encoder-only model (see EncoderOnly); required for, and only for, encoder-only.",
    )
    layer_widths: LayerWidths | None = Field(
        default=None,
        description="Each decoder layer's query heads, KV heads and dense width where they "
        "vary with depth (OpenELM's layer-wise scaling; see LayerWidths). Optional; null: "
        "every layer has attention.n_heads, attention.n_kv_heads and mlp.d_ff.",
    )
    per_layer_embeddings: PerLayerEmbeddings | None = Field(
        default=None,
        description="Per-layer embeddings (PLE, Gemma 3n and Gemma 4 E2B/E4B): a token "
        "table and a projection give each layer its own input, added after its MLP (see "
        "PerLayerEmbeddings). The table counts as embedding parameters. Optional; null for "
        "none.",
    )
    mtp: MTP | None = Field(
        default=None,
        description="Multi-token-prediction modules released beside the main model, "
        "counted apart from it (see MTP). Optional; null: not recorded.",
    )
    hyper_connections: HyperConnections | None = Field(
        default=None,
        description="Manifold-constrained hyper-connections in place of the single residual "
        "stream (DeepSeek-V4; see HyperConnections). Optional; null: one residual stream.",
    )
    shared_blocks: SharedBlocks | None = Field(
        default=None,
        description="Weight-shared transformer blocks invoked before some decoder layers "
        "(Zamba2), built from the card's attention and MLP fields. Optional; null for none.",
    )

    # --- derived figures: computed, never stored --------------------------------

    @property
    def head_dim_effective(self) -> int | None:
        if self.attention.head_dim is not None:
            return self.attention.head_dim
        if self.d_model and self.attention.n_heads:
            return self.d_model // self.attention.n_heads
        return None

    @property
    def gated(self) -> bool | None:
        return None if self.mlp.activation is None else self.mlp.activation.gated

    @property
    def d_ff_ratio(self) -> float | None:
        return _ratio(self.mlp.d_ff, self.d_model)

    @property
    def aspect_ratio(self) -> float | None:
        """d_model / n_layers (Kaplan et al. found ~100 best; GPT-3 and Llama sit near 128)."""
        return _ratio(self.d_model, self.n_layers)

    @property
    def head_ratio(self) -> float | None:
        """n_heads * head_dim / d_model: 1 for nearly every model, 16 for T5 11B."""
        if self.attention.n_heads is None or self.head_dim_effective is None:
            return None
        return _ratio(self.attention.n_heads * self.head_dim_effective, self.d_model)

    @property
    def query_groups(self) -> float | None:
        """Query heads per KV head: 1 for MHA, n_heads for MQA."""
        return _ratio(self.attention.n_heads, self.attention.n_kv_heads)

    @property
    def attention_family(self) -> str | None:
        """mha, gqa, mqa, mla or linear: how keys and values are shared."""
        att = self.attention
        if att.variant is AttentionVariant.LATENT:
            return "mla"
        if att.variant is AttentionVariant.LINEAR:
            return "linear"
        if att.n_heads is None or att.n_kv_heads is None:
            return None
        if att.n_kv_heads == att.n_heads:
            return "mha"
        return "mqa" if att.n_kv_heads == 1 else "gqa"

    def layer_kinds(self) -> list[LayerKind]:
        """The attention pattern expanded to one entry per decoder layer (O(n_layers): for
        building layers; counts come from layer_kind_counts)."""
        return expand_pattern(self.attention.layer_pattern, self.n_layers or 0)

    def layer_kind_counts(self) -> dict[LayerKind, int]:
        """How many decoder layers have each attention kind, in O(pattern length)."""
        return pattern_counts(self.attention.layer_pattern, self.n_layers or 0)

    # --- cross-field rules --------------------------------------------------------

    @staticmethod
    def _check_query_rank(att: Attention) -> None:
        """A low-rank query (Step-3's MFA) is head attention's; MLA and DeepSeek-V4 state
        their own query bottleneck."""
        head = att.variant in (AttentionVariant.SOFTMAX, AttentionVariant.LINEAR)
        if att.query_rank is not None and not head:
            raise ValueError(
                "attention.query_rank is for softmax or linear head attention: MLA states its "
                "query bottleneck in attention.latent.q_lora_rank, DeepSeek-V4 in "
                "attention.compressed.q_lora_rank"
            )

    @staticmethod
    def _check_value_heads(att: Attention) -> None:
        """Value heads of their own width, and sinks kept off the global layers."""
        g = att.global_layers
        if att.v_head_dim is not None:
            if att.variant is AttentionVariant.LATENT:
                raise ValueError(
                    "attention.v_head_dim is for softmax attention: MLA states its value width "
                    "in attention.latent.v_head_dim"
                )
            if att.output_gate is not None or (g is not None and g.values_from_keys):
                raise ValueError(
                    "attention.v_head_dim with an output gate or values from keys: no released "
                    "model combines them, and the builder does not"
                )
        if att.value_multiplier is not None and att.v_head_dim is None:
            raise ValueError("attention.value_multiplier needs attention.v_head_dim")
        if g is not None and g.sinks is not None and not att.sinks:
            raise ValueError("attention.global_layers.sinks needs attention.sinks")

    @staticmethod
    def _check_block_sparse(att: Attention) -> None:
        """Block-sparse layouts go with blocksparse layers of softmax attention."""
        blocksparse = LayerKind.BLOCKSPARSE in att.layer_pattern
        if blocksparse != (att.block_sparse is not None):
            raise ValueError(
                "attention.block_sparse is required for, and only for, a layer_pattern with "
                "blocksparse layers"
            )
        if blocksparse and att.variant is not AttentionVariant.SOFTMAX:
            raise ValueError("blocksparse layers are softmax attention: set variant softmax")

    @model_validator(mode="after")
    def _consistent(self) -> Architecture:
        att, pos, moe = self.attention, self.position, self.mlp.moe
        if att.n_heads and att.n_kv_heads and att.n_heads % att.n_kv_heads:
            raise ValueError(
                f"attention.n_kv_heads ({att.n_kv_heads}) must divide attention.n_heads "
                f"({att.n_heads})"
            )
        if att.head_dim is None and self.d_model and att.n_heads and self.d_model % att.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) is not divisible by attention.n_heads "
                f"({att.n_heads}): give attention.head_dim"
            )
        kinds = set(att.layer_pattern)
        uses_local = any(kind.windowed for kind in kinds)
        # a local layer's window may be unpublished (a null the card's notes explain);
        # a chunk size never is: chunked layers are recorded only from released configs
        if LayerKind.CHUNKED in kinds and att.sliding_window is None:
            raise ValueError("attention.layer_pattern has chunked layers: set sliding_window")
        if att.sliding_window is not None and not uses_local:
            raise ValueError(
                "attention.sliding_window is set but attention.layer_pattern has no local or "
                "chunked layer: add one to the pattern or set sliding_window to null"
            )
        self._check_qk_norm_terms(att)
        if (att.variant is AttentionVariant.LATENT) != (att.latent is not None):
            raise ValueError("attention.latent is required for, and only for, variant latent")
        if (att.variant is AttentionVariant.COMPRESSED) != (att.compressed is not None):
            raise ValueError(
                "attention.compressed is required for, and only for, variant compressed"
            )
        if att.compressed is not None:
            self._check_compressed(att)
        elif {LayerKind.COMPRESSED_SPARSE, LayerKind.HEAVILY_COMPRESSED} & kinds:
            raise ValueError(
                "attention.layer_pattern has compressed layers: they need variant compressed"
            )
        if att.sparse is not None and att.compressed is None:
            self._check_sparse(att)
        if att.qk_norm_after_rope and att.qk_norm in (None, QKNorm.NONE):
            raise ValueError("attention.qk_norm_after_rope needs a qk_norm")
        if att.qk_norm_rope_only and not _with_qk_norm_and_nope(self):
            raise ValueError("attention.qk_norm_rope_only needs a qk_norm and global-nope layers")
        if att.nope_temperature is not None and (
            LayerKind.GLOBAL_NOPE not in kinds or att.variant is not AttentionVariant.SOFTMAX
        ):
            raise ValueError("attention.nope_temperature needs global-nope softmax layers")
        if att.nope_temperature is not None and att.temperature_length is not None:
            raise ValueError(
                "attention.nope_temperature and temperature_length: a model has one attention "
                "temperature (Llama 4's or xAI's)"
            )
        self._check_value_heads(att)
        self._check_query_rank(att)
        self._check_block_sparse(att)
        if self.mtp is not None and self.mtp.n_modules and self.kind is not Kind.DECODER_ONLY:
            raise ValueError("mtp modules are for decoder-only models (DeepSeek-V3's layout)")
        self._check_mixers()
        self._check_global_layers()
        self._check_kv_sharing()
        self._check_gemma3n()
        self._check_shared_blocks()
        self._check_layer_widths()
        self._check_rotated_pairs()
        if pos.type is not PositionType.ROPE:
            for name in ("rope_theta", "rope_theta_local", "rotary_fraction", "rope_scaling"):
                if getattr(pos, name) is not None:
                    raise ValueError(f"position.{name} is set but position.type is not rope")
        if pos.type is not PositionType.SINUSOIDAL and pos.sinusoid_layout is not None:
            raise ValueError("position.sinusoid_layout is set but position.type is not sinusoidal")
        if pos.type is not PositionType.RELATIVE_BIAS and pos.relative_buckets is not None:
            raise ValueError(
                "position.relative_buckets is set but position.type is not relative-bias"
            )
        if (buckets := pos.relative_buckets) is not None and buckets not in RELATIVE_BUCKETS:
            raise ValueError(
                f"position.relative_buckets ({buckets}) must be {RELATIVE_BUCKETS.start} to "
                f"{RELATIVE_BUCKETS.stop - 1}: T5 keeps a quarter of them (half in a causal "
                f"stack) for exact distances, at least one, below its max of {T5_MAX_DISTANCE}"
            )
        if pos.type is not PositionType.LEARNED and pos.learned_rows is not None:
            raise ValueError("position.learned_rows is set but position.type is not learned")
        rows, context = pos.learned_rows, self.context_length
        if rows is not None and context is not None and rows < context:
            raise ValueError(
                f"position.learned_rows ({rows}) is below context_length ({context}): a "
                "learned position table holds a row for every position"
            )
        if (self.kind is Kind.ENCODER_DECODER) != (self.n_encoder_layers is not None):
            raise ValueError("n_encoder_layers is required for, and only for, encoder-decoder")
        if (self.kind is Kind.ENCODER_ONLY) != (self.encoder is not None):
            raise ValueError("encoder is required for, and only for, encoder-only")
        if self.kind is Kind.ENCODER_ONLY and self.mtp is not None and self.mtp.n_modules:
            raise ValueError("mtp modules are for decoder-only models (DeepSeek-V3's layout)")
        moe = self.mlp.moe
        if self.kind is not Kind.DECODER_ONLY and moe is not None and moe.hash_layers:
            # a hash router reads the ids of the tokens its stack runs on: one stream of them
            raise ValueError("mlp.moe.hash_layers is for decoder-only models (DeepSeek-V4's)")
        if self.encoder is not None:
            self._check_encoder(self.encoder)
        self._check_first_mixer_norm()
        self._check_sublayer_norms()
        if self.norm.shared_in_parallel is not None and not self.parallel_layers:
            raise ValueError("norm.shared_in_parallel is only for parallel_layers: true")
        if self.parallel_layers and self.attention.mlp is False:
            raise ValueError(
                "parallel_layers sums attention and the MLP: attention.mlp cannot be false"
            )
        if self.parallel_layers and self.norm.shared_in_parallel is None:
            raise ValueError(
                "norm.shared_in_parallel is required with parallel_layers: true (true: one "
                "norm feeds attention and MLP, GPT-J; false: one norm each, GPT-NeoX)"
            )
        if moe is not None:
            if moe.n_active > moe.n_experts:
                raise ValueError(
                    f"mlp.moe.n_active ({moe.n_active}) exceeds mlp.moe.n_experts ({moe.n_experts})"
                )
            if (moe.n_shared > 0) != (moe.shared_d_ff is not None):
                raise ValueError("mlp.moe.shared_d_ff is required for, and only for, n_shared > 0")
            if moe.router_scales and moe.dense_beside_d_ff is None:
                raise ValueError(
                    "mlp.moe.router_scales is Gemma 4's router, which reads the residual "
                    "stream beside a dense MLP: it needs mlp.moe.dense_beside_d_ff"
                )
            if moe.dense_beside_d_ff is not None and self.norm.position is not NormPosition.DOUBLE:
                raise ValueError(
                    "mlp.moe.dense_beside_d_ff needs norm.position double (the branches sit "
                    "between pre- and post-norms, as mlp.moe.beside_norms places them)"
                )
            _check_beside_norms(moe)
            if moe.latent_dim is not None and moe.dense_beside_d_ff is not None:
                raise ValueError(
                    "mlp.moe.latent_dim with dense_beside_d_ff: no released model combines "
                    "them, and the builder does not"
                )
            if moe.shared_gate and not moe.n_shared:
                raise ValueError("mlp.moe.shared_gate needs shared experts (n_shared > 0)")
            self._check_shortcut(moe)
            _check_groups(moe)
            self._check_last_dense(moe)
            all_moe = moe.first_dense_layers == 0 and moe.layer_period == 1
            all_moe = all_moe and not moe.last_dense_layers
            if LayerKind.MOE in att.layer_pattern:  # placed by the pattern's moe entries
                all_moe = LayerKind.MLP not in att.layer_pattern
            if all_moe != (moe.dense_d_ff is None):
                raise ValueError(
                    "mlp.moe.dense_d_ff is required for, and only for, models with dense layers "
                    "(first_dense_layers > 0, last_dense_layers > 0 or layer_period > 1)"
                )
        implied = self.implied_params_bound()
        if implied > MAX_IMPLIED_PARAMS:
            raise ValueError(
                f"the sizes imply up to {implied:.1e} parameters, over the limit of "
                f"{MAX_IMPLIED_PARAMS:.0e}: far above any model; check d_model, n_layers, "
                "the head counts, d_ff, the experts and vocab_size"
            )
        return self

    def _check_last_dense(self, moe: MoE) -> None:
        """Trailing dense layers leave at least one MoE layer between them and the leading
        ones, and are placed by the layer count, not by the pattern's moe entries."""
        if not moe.last_dense_layers:
            return
        if self.kind is not Kind.DECODER_ONLY:
            raise ValueError("mlp.moe.last_dense_layers is for decoder-only models")
        if LayerKind.MOE in self.attention.layer_pattern:
            raise ValueError(
                "mlp.moe.last_dense_layers with moe entries in layer_pattern: the entries place "
                "the MoE layers; set last_dense_layers to null"
            )
        if moe.shortcut_dense_d_ff is not None:
            raise ValueError(
                "mlp.moe.shortcut_dense_d_ff needs every layer MoE: no last_dense_layers"
            )
        dense = moe.first_dense_layers + moe.last_dense_layers
        if self.n_layers is not None and dense >= self.n_layers:
            raise ValueError(
                f"mlp.moe.first_dense_layers + last_dense_layers ({dense}) leave no MoE layer "
                f"of n_layers ({self.n_layers})"
            )

    def _check_shortcut(self, moe: MoE) -> None:
        """Shortcut-connected MoE layers: pre-norm serial attention layers, all of them MoE."""
        if moe.shortcut_dense_d_ff is None:
            return
        kinds = set(self.attention.layer_pattern)
        plain = kinds <= {LayerKind.GLOBAL, LayerKind.MOE} and not self.parallel_layers
        if not plain or self.norm.position is not NormPosition.PRE:
            raise ValueError(
                "mlp.moe.shortcut_dense_d_ff needs serial pre-norm layers of global attention"
            )
        if moe.first_dense_layers or moe.layer_period != 1 or moe.dense_beside_d_ff is not None:
            raise ValueError(
                "mlp.moe.shortcut_dense_d_ff needs every layer MoE (first_dense_layers 0, "
                "layer_period 1) and no dense_beside_d_ff"
            )

    @staticmethod
    def _check_qk_norm_terms(att: Attention) -> None:
        """A QK norm with parameters states its own type and affine (they no longer follow
        the blocks' norm when null); any other qk_norm states neither."""
        terms = {"qk_norm_type": att.qk_norm_type, "qk_norm_affine": att.qk_norm_affine}
        if att.qk_norm is not None and att.qk_norm.learned:
            missing = [f"attention.{name}" for name, value in terms.items() if value is None]
            if missing:
                raise ValueError(
                    f"attention.qk_norm {att.qk_norm.value} needs {' and '.join(missing)} "
                    "stated: the QK norm's own type and learnable terms, from the code that "
                    "defines q_norm / k_norm (a null no longer means the blocks' norm)"
                )
        elif any(value is not None for value in terms.values()):
            raise ValueError(
                "attention.qk_norm_type and qk_norm_affine are only for a per-head, "
                "per-head-untied or full qk_norm"
            )

    def _check_rotated_pairs(self) -> None:
        """LongRoPE divides each rotated frequency by a factor of its own: one per pair of
        rotated dims, int(head_dim x rotary_fraction) / 2 (transformers' count). Hunyuan's
        NTK alpha raises alpha to d / (d - 2), d the rotated dims: it needs two pairs."""
        scaling = self.position.rope_scaling
        head_dim = self.head_dim_effective
        if scaling is None or head_dim is None:
            return
        fraction = self.position.rotary_fraction
        pairs = int(head_dim * (fraction if fraction is not None else 1.0)) // 2
        if scaling.type is RopeScalingType.NTK_ALPHA and pairs < 2:
            raise ValueError(
                f"position.rope_scaling ntk-alpha raises alpha to d / (d - 2), d the rotated "
                f"dims: the heads rotate {2 * pairs}, and it needs at least 4"
            )
        if scaling.short_factor is not None and len(scaling.short_factor) != pairs:
            raise ValueError(
                f"position.rope_scaling.short_factor and long_factor have "
                f"{len(scaling.short_factor)} values, but the heads rotate {pairs} pairs of "
                "dims: give one factor per rotated frequency"
            )

    def _check_mixers(self) -> None:
        kinds = {k.recurrent for k in self.attention.layer_pattern}
        mixers = self.mixers
        for kind in MIXER_KINDS:
            name = mixer_field(kind)
            if (kind in kinds) != (mixers is not None and getattr(mixers, name) is not None):
                raise ValueError(
                    f"mixers.{name} is required for, and only for, {kind.value} layers in "
                    "attention.layer_pattern"
                )
        self._check_single_sublayers()
        if mixers is None:
            return
        for kind in MIXER_KINDS:  # what a plugin's sizes need from the card
            plugin = MIXERS.get(kind)
            sizes = None if plugin is None else plugin.sizes_of(self)
            if sizes is not None and plugin.check is not None:
                plugin.check(sizes, self)

    def _check_layer_widths(self) -> None:
        """Per-layer widths: one entry per layer, KV heads dividing query heads, the card's
        own fields the widest layer's, on a plain softmax-attention stack."""
        w, att = self.layer_widths, self.attention
        if w is None:
            return
        n = self.n_layers
        if n is None:
            raise ValueError("layer_widths needs n_layers")
        for name in ("n_heads_per_layer", "n_kv_heads_per_layer", "d_ff_per_layer"):
            values = getattr(w, name)
            if len(values) != n:
                raise ValueError(f"layer_widths.{name} has {len(values)} entries; n_layers is {n}")
        for i, (h, kv) in enumerate(zip(w.n_heads_per_layer, w.n_kv_heads_per_layer, strict=True)):
            if h % kv:
                raise ValueError(
                    f"layer_widths: layer {i}'s n_kv_heads ({kv}) must divide its n_heads ({h})"
                )
        widest = {
            "attention.n_heads": (att.n_heads, max(w.n_heads_per_layer)),
            "attention.n_kv_heads": (att.n_kv_heads, max(w.n_kv_heads_per_layer)),
            "mlp.d_ff": (self.mlp.d_ff, max(w.d_ff_per_layer)),
        }
        for path, (stated, largest) in widest.items():
            if stated != largest:
                raise ValueError(
                    f"{path} ({stated}) must be the widest layer's, {largest}, with layer_widths"
                )
        plain = att.variant is AttentionVariant.SOFTMAX and set(att.layer_pattern) <= {
            LayerKind.GLOBAL,
            LayerKind.LOCAL,
        }
        if not plain or self.mlp.moe is not None or att.global_layers is not None:
            raise ValueError(
                "layer_widths is for softmax attention layers with dense MLPs (no latent, "
                "linear or recurrent mixers, MoE or global_layers)"
            )
        if att.kv_shared_layers or self.shared_blocks is not None:
            raise ValueError(
                "layer_widths cannot be combined with kv_shared_layers or shared_blocks"
            )
        if self.position.type in (PositionType.ALIBI, PositionType.RELATIVE_BIAS):
            raise ValueError("layer_widths needs a position scheme without per-head score biases")
        if self.kind is Kind.ENCODER_DECODER:
            raise ValueError("layer_widths is for a single stack (decoder-only or encoder-only)")

    def _check_global_layers(self) -> None:
        att, g = self.attention, self.attention.global_layers
        if g is None:
            return
        if LayerKind.GLOBAL not in att.layer_pattern:
            raise ValueError("attention.global_layers is set but the pattern has no global layer")
        if att.variant is not AttentionVariant.SOFTMAX:
            raise ValueError("attention.global_layers is for softmax head attention only")
        if g.n_kv_heads and att.n_heads and att.n_heads % g.n_kv_heads:
            raise ValueError(
                f"attention.global_layers.n_kv_heads ({g.n_kv_heads}) must divide "
                f"attention.n_heads ({att.n_heads})"
            )
        if g.rotary_fraction is not None and self.position.type is not PositionType.ROPE:
            raise ValueError("attention.global_layers.rotary_fraction needs position.type rope")

    def _check_kv_sharing(self) -> None:
        """Shared layers read an earlier layer of their kind: some layer keeps its own KV,
        and every kind among the shared layers has one that computes them."""
        att, shared = self.attention, self.attention.kv_shared_layers or 0
        if self.mlp.kv_shared_d_ff is not None and not shared:
            raise ValueError("mlp.kv_shared_d_ff needs attention.kv_shared_layers > 0")
        if self.mlp.kv_shared_d_ff is not None and self.mlp.moe is not None:
            raise ValueError("mlp.kv_shared_d_ff is a dense width: not with mlp.moe")
        if not shared:
            return
        n = self.n_layers or 0
        if shared >= n:
            raise ValueError(
                f"attention.kv_shared_layers ({shared}) must leave at least one of the "
                f"{n} layers computing its own keys and values"
            )
        if att.variant is not AttentionVariant.SOFTMAX:
            raise ValueError("attention.kv_shared_layers is for softmax head attention only")
        pattern, first = att.layer_pattern, n - shared
        # one period of the pattern covers every kind a layer index can have
        own = {pattern[i % len(pattern)] for i in range(max(0, first - len(pattern)), first)}
        reused = {pattern[i % len(pattern)] for i in range(first, min(n, first + len(pattern)))}
        if not all(k.attention for k in reused):
            raise ValueError("attention.kv_shared_layers: the shared layers must all attend")
        if missing := sorted(k.value for k in reused - own):
            raise ValueError(
                "attention.kv_shared_layers: no earlier layer computes keys and values for "
                f"the shared {', '.join(missing)} layers"
            )

    def _check_first_mixer_norm(self) -> None:
        if self.norm.first_mixer_norm is False and not (
            self.norm.position is NormPosition.PRE and self.embedding_norm
        ):
            raise ValueError(
                "norm.first_mixer_norm: false needs pre-norm layers and embedding_norm (the "
                "first layer reads the embedding norm's output)"
            )

    def _check_sublayer_norms(self) -> None:
        """Sub-norms sit before softmax attention's o_proj and a dense MLP's down_proj: a
        latent or compressed attention, an MoE or a recurrent mixer has no such slot."""
        if not self.norm.sublayer_norms:
            return
        att = self.attention
        if att.variant is not AttentionVariant.SOFTMAX:
            raise ValueError(
                f"norm.sublayer_norms is for softmax attention, not variant {att.variant.value}"
            )
        if self.mlp.moe is not None:
            raise ValueError("norm.sublayer_norms is for dense MLPs: set mlp.moe to null")
        recurrent = sorted(kind.value for kind in set(att.layer_pattern) & RECURRENT_KINDS)
        if recurrent or self.mlp.channel_mix:
            names = ", ".join(recurrent) or "rwkv channel mix"
            raise ValueError(f"norm.sublayer_norms has no place in recurrent mixers ({names})")
        if self.shared_blocks is not None or self.hyper_connections is not None:
            raise ValueError(
                "norm.sublayer_norms is for plain attention + MLP layers: not with "
                "shared_blocks or hyper_connections"
            )

    def _check_encoder(self, encoder: EncoderOnly) -> None:
        if encoder.position_offset and self.position.type is not PositionType.LEARNED:
            raise ValueError("encoder.position_offset needs learned positions")
        if encoder.head_transform is not None and encoder.head_transform.gated:
            raise ValueError("encoder.head_transform is one activation, not a gated unit")

    def _check_gemma3n(self) -> None:
        """AltUp's active stream is one of its streams; activation sparsity acts on the
        gate of a dense gated MLP, in layers the stack has."""
        alt, sparsity = self.altup, self.mlp.activation_sparsity
        if alt is not None and alt.n_inputs < 2:
            raise ValueError("altup.n_inputs must be at least 2 (one stream is no AltUp)")
        if alt is not None and alt.active_index >= alt.n_inputs:
            raise ValueError(
                f"altup.active_index ({alt.active_index}) must be below altup.n_inputs "
                f"({alt.n_inputs})"
            )
        if sparsity is None:
            return
        if self.mlp.moe is not None or (self.mlp.activation and not self.mlp.activation.gated):
            raise ValueError("mlp.activation_sparsity acts on the gate of a dense gated MLP")
        if not 0 < sparsity.target < 1:
            raise ValueError("mlp.activation_sparsity.target must lie strictly between 0 and 1")
        if self.n_layers is not None and sparsity.first_layers > self.n_layers:
            raise ValueError(
                f"mlp.activation_sparsity.first_layers ({sparsity.first_layers}) exceeds "
                f"n_layers ({self.n_layers})"
            )

    def _check_single_sublayers(self) -> None:
        """mlp and moe entries make every layer one sublayer (Nemotron-H): no token mixer
        keeps an MLP, and the MoE sits exactly on the moe entries."""
        att, moe = self.attention, self.mlp.moe
        kinds = set(att.layer_pattern)
        if not any(kind not in CHANNEL_ONLY for kind in kinds):
            raise ValueError("attention.layer_pattern needs a token mixer (attention or recurrent)")
        if not kinds & CHANNEL_ONLY:
            return
        mixer_mlp = [
            path
            for path, has in (
                ("attention.mlp", any(k.attention for k in kinds) and att.mlp is not False),
                *(
                    (f"mixers.{mixer_field(kind)}.mlp", self.kind_has_mlp(kind))
                    for kind in MIXER_KINDS
                ),
            )
            if has
        ]
        if mixer_mlp:
            raise ValueError(
                "attention.layer_pattern has mlp or moe entries (one sublayer per layer): set "
                + ", ".join(mixer_mlp)
                + " to false"
            )
        if (LayerKind.MOE in kinds) != (moe is not None):
            raise ValueError("mlp.moe is required for, and only for, moe entries in layer_pattern")
        if moe is not None and (moe.first_dense_layers, moe.layer_period) != (0, 1):
            raise ValueError(
                "moe entries in layer_pattern place the MoE layers: set "
                "mlp.moe.first_dense_layers to 0 and layer_period to 1"
            )

    def kind_has_mlp(self, kind: LayerKind) -> bool:
        """Whether a layer of this kind has an MLP (or MoE) sublayer: attention layers
        unless attention.mlp is false; recurrent ones as their sizes say; mlp/moe entries."""
        m = self.mixers or Mixers()
        if kind in CHANNEL_ONLY:
            return True
        if kind in RECURRENT_KINDS:
            sizes = getattr(m, mixer_field(kind))
            return sizes is not None and sizes.mlp
        return self.attention.mlp is not False

    def has_attention(self) -> bool:
        """Whether any layer's token mixer is attention (attention-free models: none)."""
        if self.shared_blocks is not None:  # the shared blocks attend (Zamba2)
            return True
        return any(kind.attention for kind in self.attention.layer_pattern)

    def has_mlp(self) -> bool:
        """Whether any layer has an MLP (Mamba-2's layers are the mixer alone)."""
        if self.shared_blocks is not None:  # the shared blocks' MLP (Zamba2)
            return True
        return any(self.kind_has_mlp(kind) for kind in self.attention.layer_pattern)

    def _check_shared_blocks(self) -> None:
        """Invocations at increasing layers inside the stack, every block invoked, and
        adapters that fit the projections they adapt."""
        sb = self.shared_blocks
        if sb is None:
            return
        layers = sb.layers
        if any(b <= a for a, b in itertools.pairwise(layers)):
            raise ValueError("shared_blocks.layers must be strictly increasing")
        if self.n_layers is not None and layers[-1] >= self.n_layers:
            raise ValueError(
                f"shared_blocks.layers names layer {layers[-1]}, beyond n_layers "
                f"({self.n_layers}; layers count from 0)"
            )
        if sb.n_blocks > len(layers):
            raise ValueError(
                f"shared_blocks.n_blocks ({sb.n_blocks}) exceeds the invocations "
                f"({len(layers)}): a block would never run"
            )
        if (sb.mlp_adapters or sb.attention_adapters) != (sb.adapter_rank is not None):
            raise ValueError(
                "shared_blocks.adapter_rank is required for, and only for, mlp_adapters or "
                "attention_adapters"
            )
        att = self.attention
        if att.variant is not AttentionVariant.SOFTMAX:
            raise ValueError("shared_blocks are built with softmax head attention")
        if self.mlp.moe is not None:
            raise ValueError("shared_blocks use the card's dense MLP: mlp.moe must be null")
        if sb.mlp_adapters and self.mlp.activation is not None and not self.mlp.activation.gated:
            raise ValueError(
                "shared_blocks.mlp_adapters adapt the fused gate/up projection: they need a "
                "gated activation"
            )
        if sb.attention_adapters:
            width = (2 if sb.concat_embeddings else 1) * (self.d_model or 0)
            inner = (att.n_heads or 0) * (self.head_dim_effective or 0)
            if att.n_kv_heads != att.n_heads or (self.d_model and inner != width):
                raise ValueError(
                    "shared_blocks.attention_adapters map the block's input width to itself "
                    f"({width}): they need n_kv_heads = n_heads and n_heads x head_dim "
                    f"= {width} (got {att.n_kv_heads} KV heads, {inner})"
                )

    @staticmethod
    def _check_compressed(att: Attention) -> None:
        """DeepSeek-V4: one shared key=value head, a window in every layer, an indexer
        exactly where compressed-sparse layers are, groups that split the heads evenly."""
        comp, kinds = att.compressed, set(att.layer_pattern)
        allowed = {LayerKind.LOCAL, *COMPRESSED_KINDS}
        if not kinds <= allowed:
            odd = ", ".join(sorted(k.value for k in kinds - allowed))
            raise ValueError(
                f"attention.layer_pattern has {odd}: variant compressed takes local, "
                "compressed-sparse and heavily-compressed layers"
            )
        if att.n_kv_heads not in (None, 1):
            raise ValueError("variant compressed has one shared key=value head: n_kv_heads 1")
        if att.sliding_window is None:
            raise ValueError("variant compressed needs attention.sliding_window")
        if (LayerKind.COMPRESSED_SPARSE in kinds) != (att.sparse is not None):
            raise ValueError(
                "attention.sparse (the indexer) is required for, and only for, a pattern with "
                "compressed-sparse layers"
            )
        if att.head_dim is not None and comp.rope_dim > att.head_dim:
            raise ValueError(
                f"attention.compressed.rope_dim ({comp.rope_dim}) exceeds head_dim ({att.head_dim})"
            )
        if att.n_heads is not None and att.n_heads % comp.output_groups:
            raise ValueError(
                f"attention.compressed.output_groups ({comp.output_groups}) must divide "
                f"n_heads ({att.n_heads})"
            )
        if att.sparse is not None and att.sparse.indexer_head_dim < comp.rope_dim:
            raise ValueError(
                f"attention.sparse.indexer_head_dim ({att.sparse.indexer_head_dim}) is below "
                f"attention.compressed.rope_dim ({comp.rope_dim})"
            )

    @staticmethod
    def _check_sparse(att: Attention) -> None:
        """DSA's indexer reads the MLA query latent and rotates part of its head."""
        lat, sparse = att.latent, att.sparse
        if lat is None or lat.q_lora_rank is None:
            raise ValueError(
                "attention.sparse needs latent attention with a query latent "
                "(attention.latent.q_lora_rank): the indexer's queries read it"
            )
        if sparse.indexer_head_dim < lat.qk_rope_head_dim:
            raise ValueError(
                f"attention.sparse.indexer_head_dim ({sparse.indexer_head_dim}) is below "
                f"attention.latent.qk_rope_head_dim ({lat.qk_rope_head_dim}): the indexer "
                "rotates that many dims of each head"
            )

    def implied_params_bound(self) -> int:
        """A quick upper bound on the parameters the sizes imply (unknown sizes count 1).

        Each size is bounded alone, but their products are not: 100,000 layers of a
        million-wide model would overflow the 64-bit counts that tables and reports hold.
        """
        att, mlp, moe = self.attention, self.mlp, self.mlp.moe
        d = self.d_model or 1
        head = self.head_dim_effective or 1
        widths = [d, (att.n_heads or 1) * head, (att.n_kv_heads or 1) * head]
        if att.latent is not None:
            widths += astuple_ints(att.latent)
        if att.global_layers is not None and att.global_layers.head_dim is not None:
            widths.append((att.n_heads or 1) * att.global_layers.head_dim)
        if att.sparse is not None:
            widths.append(att.sparse.indexer_heads * att.sparse.indexer_head_dim)
        for plugin in MIXERS.values():
            if (sizes := plugin.sizes_of(self)) is not None:
                widths.append(plugin.widest(sizes, d))
        ffs = [mlp.d_ff or 1, mlp.kv_shared_d_ff or 1]
        if moe is not None:
            ffs += [moe.dense_d_ff or 1, moe.shared_d_ff or 1, moe.dense_beside_d_ff or 1]
            ffs.append(2 * (moe.shortcut_dense_d_ff or 1))  # two dense MLPs per layer
        experts = 1 + (moe.n_experts + moe.n_shared if moe is not None else 0)
        if moe is not None and moe.shortcut_dense_d_ff is not None:
            widths.append(2 * max(widths))  # two attention sublayers per layer
        layers = (self.n_layers or 1) + (self.n_encoder_layers or 0)
        if (sb := self.shared_blocks) is not None:  # blocks twice as wide; an adapter set each
            layers += 2 * sb.n_blocks + len(sb.layers) * (2 + (sb.adapter_rank or 0))
        per_layer = 4 * d * max(widths) + 3 * d * max(ffs) * experts
        rows = (self.vocab_size or 1) + (self.position.learned_rows or self.context_length or 1)
        total = layers * per_layer + 2 * rows * max(d, self.embedding_dim or 1)
        if self.altup is not None:  # the streams' projections in and out
            total += 2 * self.altup.n_inputs * d * d + layers * self.altup.n_inputs**3
        if self.laurel_rank is not None:
            total += 2 * layers * d * self.laurel_rank
        if (ple := self.per_layer_embeddings) is not None:  # its table and projection
            total += (ple.vocab_size + d) * layers * ple.width + 2 * layers * d * ple.width
        return total


def expand_pattern(pattern: list[LayerKind], n_layers: int) -> list[LayerKind]:
    """Tile a per-layer pattern from the first layer: ([local, global], 4) -> l g l g."""
    return [pattern[i % len(pattern)] for i in range(n_layers)]


def pattern_counts(pattern: list[LayerKind], n_layers: int) -> dict[LayerKind, int]:
    """Layers of each kind when a pattern is tiled over n_layers, without expanding it:
    entry i of a period p is used by layers i, i + p, ... below n_layers."""
    period = len(pattern)
    counts: dict[LayerKind, int] = {}
    for i, kind in enumerate(pattern):
        uses = (n_layers - i + period - 1) // period if i < n_layers else 0
        counts[kind] = counts.get(kind, 0) + uses
    return counts


def astuple_ints(model: BaseModel) -> tuple[int, ...]:
    """The int fields of a sub-model (the latent ranks and head widths)."""
    return tuple(v for v in model.__dict__.values() if isinstance(v, int))


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if not num or not den else num / den


# --- the card ------------------------------------------------------------------

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _iso_date(value: object) -> object:
    """A date is written YYYY-MM-DD: no timestamps, no numbers, no other spellings."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    if isinstance(value, str) and _ISO_DATE.match(value):
        return value
    raise ValueError(f"write the date as YYYY-MM-DD (got {_short_repr(value)})")


def _short_repr(value: object, limit: int = 60) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**40 else "a huge number"
    return text if len(text) <= limit else text[: limit - 3] + "..."


IsoDate = Annotated[dt.date, BeforeValidator(_iso_date)]


# what a config source may state of its transformers family (import-hf records only these)
MODEL_TYPE_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
MODEL_CLASS_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,99}$"


class Source(Strict):
    kind: SourceKind
    title: Title = Field(description="Paper title, file name or page title.")
    url: Url
    locator: Locator | None = Field(
        description="Where in the source: 'Table 2', 'Section 2.1', 'config.json'."
    )
    copies: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="Mirror and derived sources: the URL of the official artifact this copy "
        "reproduces, or the file is derived from (e.g. the organization's config.json); "
        "defaults: optionally the artifact the defaults stand for. Null otherwise.",
    )
    differs: Text | None = Field(
        default=None,
        max_length=1_000,
        description="Derived sources only: what differs from the original (e.g. 'adds "
        "quantization_config; NVFP4 weights'), so a reader knows which keys still hold.",
    )
    library: Name | None = Field(
        default=None,
        description="Defaults sources only: the library, its version and the class whose "
        "defaults are read (e.g. 'transformers 4.57.1 KimiLinearConfig').",
    )
    model_type: str | None = Field(
        default=None,
        pattern=MODEL_TYPE_PATTERN,
        description="Config sources only (kind config, or a mirror of one): the model_type "
        "the config declares, as written (its model_type key; a multimodal config's "
        "text_config's). It routes the card to its transformers family for the fidelity "
        "checks. Optional otherwise null.",
    )
    model_class: str | None = Field(
        default=None,
        pattern=MODEL_CLASS_PATTERN,
        description="With model_type: the first model class the config's architectures "
        "list names (how a custom model_type such as kimi_k2 reaches its family: "
        "DeepseekV3ForCausalLM). Optional otherwise null.",
    )
    supports: list[FieldPath] = Field(
        min_length=1,
        max_length=500,
        description="Card fields this source gives, as dotted paths; a prefix covers its "
        "sub-fields ('architecture.attention' covers attention.n_heads).",
    )
    inherited_from: Slug | None = Field(
        default=None,
        description="Id of the catalogue card this entry was copied from by `archdb new "
        "--like`: that card's source, whose supports lists only the values the new card "
        "inherited from it without a source of its own. They rest on the other model's "
        "source: replace the entry with this model's own source where one states them. "
        "Optional otherwise null.",
    )

    @model_validator(mode="after")
    def _secondary_names_its_original(self) -> Source:
        copying = self.kind in (SourceKind.MIRROR, SourceKind.DERIVED)
        if copying and self.copies is None:
            raise ValueError(
                f"copies is required for kind {self.kind.value}: name the URL of the official "
                "artifact it copies or is derived from"
            )
        if self.copies is not None and self.kind not in SECONDARY_KINDS:
            raise ValueError(
                "copies is for kinds mirror, derived and defaults only: an official source "
                "copies nothing"
            )
        if (self.kind is SourceKind.DERIVED) != (self.differs is not None):
            raise ValueError(
                "differs is required for, and only for, kind derived: say what the file "
                "changes from the original (a verbatim copy is kind mirror)"
            )
        if (self.kind is SourceKind.DEFAULTS) != (self.library is not None):
            raise ValueError(
                "library is required for, and only for, kind defaults: name the library, "
                "its version and the class whose defaults are read"
            )
        config_kinds = (SourceKind.CONFIG, *SECONDARY_KINDS)
        if self.model_type is not None and self.kind not in config_kinds:
            raise ValueError(
                "model_type is for config sources (kind config, mirror, derived or defaults) only"
            )
        if self.model_class is not None and self.model_type is None:
            raise ValueError("model_class goes with the model_type the config declares")
        return self


class Training(Strict):
    tokens: TokenCount | None = Field(description="Pre-training tokens; null if not published.")
    dropout: Fraction | None = Field(description="Pre-training dropout; 0 for none.")
    weight_decay: NonNegativeFloat | None = Field(description="AdamW decay.")
    z_loss: NonNegativeFloat | None = Field(
        description="Coefficient of the output z-loss (alpha*log^2 Z); 0 for none."
    )


class Card(Strict):
    id: Annotated[Slug, Asked(required=True)] = Field(
        description="Unique lowercase slug: family and size, e.g. llama-2-7b."
    )
    name: Annotated[Name, Asked(required=True)] = Field(
        description="Display name, e.g. 'Llama 2 7B'."
    )
    family: Annotated[Slug, Asked(required=True)] = Field(
        description="Family slug shared by sizes and versions, e.g. llama-2."
    )
    organization: Annotated[Name, Asked(required=True)]
    release_date: Annotated[IsoDate, Asked(required=True)] = Field(
        description="First public release (paper or weights), written YYYY-MM-DD."
    )
    open_weights: Annotated[StrictBool, Asked(required=True)]
    params_published: Annotated[ParamCount | None, Unknown(build=False)] = Field(
        description="The authors' headline parameter count, e.g. 175_000_000_000."
    )
    training: Training
    architecture: Architecture
    sources: list[Source] = Field(min_length=1, max_length=100)
    notes: dict[FieldPath, Text] = Field(
        default_factory=dict,
        max_length=500,
        description="Per-field notes: why a value is null, where sources disagree, what a "
        "value's convention is.",
    )
    lineage: Slug | None = Field(
        default=None,
        description="Id of the catalogue card this model descends from: trained from its "
        "weights (DeepSeek-R1 from DeepSeek-V3) or the previous release of the same line "
        "(Llama 3.1 from Llama 3), as a source states: list lineage in that source's "
        "supports. Optional; null for a new line.",
    )
    research_variant: StrictBool = Field(
        default=False,
        description="A research architecture rather than a released model (Pre-LN "
        "Transformer, ResiDual, linear Transformer); left out of consensus trends.",
    )

    # what each sourced value rests on, worked out by the validation (resting_kinds)
    _resting: tuple[Architecture, list[Source], dict[str, SourceKind | None]] | None = PrivateAttr(
        default=None
    )

    @property
    def year(self) -> int:
        return self.release_date.year

    @model_validator(mode="after")
    def _checks(self) -> Card:
        if not dt.date(2017, 1, 1) <= self.release_date <= dt.date.today():
            raise ValueError(
                f"release_date {self.release_date} is implausible: "
                "expected a date from 2017 to today"
            )
        explained = set(self.notes)
        missing = [p for p in unexplained_nulls(self) if not covered(p, explained)]
        if missing:
            raise ValueError(
                f"{missing[0]} is null without a note: say why under notes "
                f"(unexplained nulls: {', '.join(missing)})"
            )
        if self.lineage == self.id:
            raise ValueError("lineage names the card itself: name the card it descends from")
        if any(source.inherited_from == self.id for source in self.sources):
            raise ValueError(
                "a source is inherited_from the card itself: name the card it was copied from"
            )
        supported = {path for source in self.sources for path in source.supports}
        if self.lineage is not None and "lineage" not in supported:
            raise ValueError(
                "lineage has no source: list lineage in the supports of the source (model "
                "card, paper) that says the model descends from that card"
            )
        # one walk both checks the sources and finds what each value rests on (reports)
        rests = _resting_kinds(self)
        self._resting = (self.architecture, self.sources, rests)
        uncovered = [p for p, kind in rests.items() if kind is None]
        if uncovered:
            raise ValueError(
                f"{uncovered[0]} has no source: list it (or a prefix of it) in a source's "
                f"supports (unsourced: {', '.join(uncovered)})"
            )
        return self


# Fields where null means "unknown", as opposed to "feature not used": their role.
UNKNOWN_WHEN_NULL: tuple[str, ...] = tuple(path for path, _ in with_role(Card, Unknown))


WINDOW_PATH = "architecture.attention.sliding_window"


def null_means_unknown(card: Card, path: str) -> bool:
    """Whether a null at ``path`` means "unknown" on this card (else "not used"): the core
    values, and a local layer's window (GPT-3 publishes banded layers, not their band)."""
    if path in UNKNOWN_WHEN_NULL:
        return True
    return path == WINDOW_PATH and LayerKind.LOCAL in card.architecture.attention.layer_pattern


# the same paths as getters: a card is checked on every load, and attrgetter walks a
# dotted path in C (their parents are sub-models every card has)
_UNKNOWN_GETTERS = tuple((path, attrgetter(path)) for path in UNKNOWN_WHEN_NULL)


def unexplained_nulls(card: Card) -> list[str]:
    nulls = [path for path, get in _UNKNOWN_GETTERS if get(card) is None]
    if get_path(card, WINDOW_PATH) is None and null_means_unknown(card, WINDOW_PATH):
        nulls.append(WINDOW_PATH)
    return nulls


def sourced_paths(card: Card) -> list[str]:
    """Every non-null architecture leaf value: each needs a source that supports it."""
    paths: list[str] = []

    def walk(model: BaseModel, prefix: str) -> None:
        for name, value in model.__dict__.items():
            if isinstance(value, BaseModel):
                walk(value, f"{prefix}.{name}")
            elif value is not None and name not in _UNSOURCED_LEAVES:
                paths.append(f"{prefix}.{name}")

    walk(card.architecture, "architecture")
    return paths


_UNSOURCED_LEAVES = {"kind", "variant"}  # categorical defaults every card states


def mirror_only_paths(card: Card) -> list[str]:
    """Sourced values with no official source: each rests on a copy, a derived file or a
    library's defaults (SECONDARY_KINDS)."""
    return [p for p, kind in resting_kinds(card).items() if kind in SECONDARY_KINDS]


def resting_kinds(card: Card) -> Mapping[str, SourceKind | None]:
    """Each sourced value and what it rests on: an official kind where one covers it
    (the first such source listed), else the strongest secondary kind (a verbatim copy
    before a derived file before defaults); None where nothing covers it.

    Validation works this out once per card (a None is an unsourced value) and keeps it,
    for as long as the card holds the same architecture and sources."""
    kept = getattr(card, "_resting", None)
    if kept is not None and kept[0] is card.architecture and kept[1] is card.sources:
        return MappingProxyType(kept[2])
    return _resting_kinds(card)


def _resting_kinds(card: Card) -> dict[str, SourceKind | None]:
    official = [s for s in card.sources if s.kind not in SECONDARY_KINDS]
    secondary = sorted(
        (s for s in card.sources if s.kind in SECONDARY_KINDS),
        key=lambda s: SECONDARY_KINDS.index(s.kind),
    )
    ordered = [*official, *secondary]
    first: dict[str, int] = {}  # a supported path -> the first source in that order naming it
    for i, source in enumerate(ordered):
        for path in source.supports:
            first.setdefault(path, i)
    rests: dict[str, SourceKind | None] = {}

    # one walk of the values: a source that supports a path covers everything under it
    def walk(model: BaseModel, prefix: str, best: int | None) -> None:
        for name, value in model.__dict__.items():
            if value is None:  # most fields are unset: nothing to rest on
                continue
            path = f"{prefix}.{name}"
            here = first.get(path)
            rank = best if here is None else here if best is None else min(best, here)
            if isinstance(value, BaseModel):
                walk(value, path, rank)
            elif name not in _UNSOURCED_LEAVES:
                rests[path] = None if rank is None else ordered[rank].kind

    walk(card.architecture, "architecture", first.get("architecture"))
    return rests


def inherited_paths(card: Card) -> dict[str, str]:
    """Sourced values whose only sources were inherited from another card (``archdb new
    --like``), each with the id of that card."""
    own = {p for s in card.sources if s.inherited_from is None for p in s.supports}
    found: dict[str, str] = {}
    for path in sourced_paths(card):
        if covered(path, own):
            continue
        found[path] = next(
            s.inherited_from
            for s in card.sources
            if s.inherited_from is not None and covered(path, set(s.supports))
        )
    return found


def covered(path: str, supported: set[str]) -> bool:
    """A path is covered by itself or by any of its dotted prefixes."""
    while path:
        if path in supported:
            return True
        path = path.rpartition(".")[0]
    return False


def catalogue_json_schema() -> dict:
    """JSON Schema of the catalogue file (a list of cards), for YAML-aware editors."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "archdb catalogue",
        "description": "A list of model cards, sorted by id. See data/models.yaml's header.",
        "type": "array",
        "items": {"$ref": "#/$defs/Card"},
    }
    card = Card.model_json_schema(ref_template="#/$defs/{model}")
    defs = card.pop("$defs", {})
    schema["$defs"] = {**defs, "Card": card}
    return schema
