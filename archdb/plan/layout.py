"""Reading a card for the plan: pure Python, no torch.

Which values a build needs, the defaults for unknown choices, which combinations are
unsupported, and the per-layer facts of a card (its kind, window, RoPE base, MoE or
dense, head widths). ``archdb.plan.plan.make_plan`` is the only caller that turns these
into specs; nothing else reads a card's fields for structure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel

from archdb.errors import ArchdbError
from archdb.fields import OutputOnly, Unknown, with_role
from archdb.parts.mlp import CLAMPED_UNITS
from archdb.parts.positions import SCHEMES
from archdb.schema import (
    MIXER_ENTRIES,
    Activation,
    Architecture,
    AttentionVariant,
    Card,
    Kind,
    LayerKind,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
    QKNorm,
    get_path,
)


class BuildError(ArchdbError, ValueError):
    """A card cannot be built: a value it needs is null, or a combination is unsupported."""


# Fields without which a model cannot be assembled (null means "unknown" on a card): the
# architecture fields whose schema role is Unknown(build=True).
REQUIRED: tuple[str, ...] = tuple(
    path.removeprefix("architecture.")
    for path, role in with_role(Card, Unknown)
    if role.build and path.startswith("architecture.")
)


def null_fields(arch: Architecture, paths: tuple[str, ...]) -> list[str]:
    """Which of ``paths`` (and the KV heads where needed) are null: attention fields only
    where some layer attends, MLP fields only where some layer has an MLP."""
    attention, mlp = arch.has_attention(), arch.has_mlp()
    required = [
        p
        for p in paths
        if (attention or not p.startswith("attention.")) and (mlp or not p.startswith("mlp."))
    ]
    missing = [p for p in required if get_path(arch, p) is None]
    if (
        attention
        and arch.attention.variant is not AttentionVariant.LATENT
        and arch.attention.n_kv_heads is None
    ):
        missing.append("attention.n_kv_heads")
    return missing


def check_buildable(arch: Architecture) -> None:
    """Raise BuildError naming every null value the builder needs."""
    missing = null_fields(arch, REQUIRED)
    if missing:
        fields = ", ".join(f"architecture.{p}" for p in missing)
        raise BuildError(f"cannot build: unknown (null) values: {fields}")
    unsupported = _unsupported(arch)
    if unsupported:
        raise BuildError(f"cannot build: {unsupported}")


def _unsupported(arch: Architecture) -> str | None:
    att, pos = arch.attention, arch.position.type
    scheme = SCHEMES[pos]
    kinds = set(att.layer_pattern)
    windowed = any(kind.windowed for kind in kinds)
    if scheme.score_bias and windowed:
        return "a position bias (alibi, relative-bias, relative-xl) with local or chunked layers"
    if pos is PositionType.RELATIVE_XL and (
        arch.kind is not Kind.DECODER_ONLY or att.variant is not AttentionVariant.SOFTMAX
    ):
        return "relative-xl positions outside softmax attention in a decoder-only model"
    if LayerKind.BLOCKSPARSE in kinds and (arch.kind is not Kind.DECODER_ONLY or scheme.score_bias):
        return "blocksparse layers outside a decoder-only model, or with a position bias"
    if arch.kind is Kind.ENCODER_DECODER and kinds != {LayerKind.GLOBAL}:
        return "encoder-decoder models with a layer pattern other than [global]"
    if arch.kind is Kind.ENCODER_ONLY and not _encoder_layers_built(arch):
        return (
            "encoder-only models other than softmax attention in every layer, global or "
            "local, and dense (experts, chunks and recurrent mixers are not built in encoders)"
        )
    odd = _odd_rotation(arch)
    if odd is not None:
        return odd
    offset = arch.encoder.position_offset if arch.encoder is not None else 0
    if offset and pos is PositionType.LEARNED and learned_rows(arch) < arch.context_length + offset:
        return "a learned position table shorter than context_length + encoder.position_offset"
    if arch.embedding_norm and arch.kind is Kind.ENCODER_DECODER:
        return "embedding_norm in an encoder-decoder model"
    if att.variant is AttentionVariant.LINEAR:
        if arch.kind is not Kind.DECODER_ONLY:
            return "linear attention outside a decoder-only model"
        if scheme.stack_bias or att.logit_softcap:
            return "linear attention has no score matrix to bias or soft-cap"
        if windowed:
            return "linear attention with local or chunked layers"
    if any(kind.recurrent is not None for kind in kinds):
        if arch.kind is not Kind.DECODER_ONLY or arch.parallel_layers:
            return (
                f"recurrent ({MIXER_ENTRIES}), mlp or moe layers "
                "outside a serial decoder-only model"
            )
        if pos in (PositionType.ALIBI, PositionType.RELATIVE_BIAS, PositionType.RELATIVE_XL):
            return "a position bias (alibi, relative-bias, relative-xl) with recurrent layers"
    mlp = arch.mlp
    if mlp.gate_multiplier and mlp.moe is not None:
        return "mlp.gate_multiplier with a mixture of experts"
    if arch.norm.position is NormPosition.NORMED_SKIP and (
        arch.parallel_layers or arch.kind is not Kind.DECODER_ONLY
    ):
        return "norm.position normed-skip outside serial decoder-only blocks"
    if (compressed := _unsupported_compressed(arch)) is not None:
        return compressed
    if att.temperature_length is not None and (
        arch.kind is not Kind.DECODER_ONLY
        or att.variant is not AttentionVariant.SOFTMAX
        or not kinds <= {LayerKind.GLOBAL, LayerKind.GLOBAL_NOPE}
    ):
        return "attention.temperature_length outside decoder-only global softmax attention"
    extras = att.sinks or att.output_gate is not None or att.qkv_clip is not None
    compressed_sinks = att.variant is AttentionVariant.COMPRESSED and att.sinks
    if extras and att.variant is not AttentionVariant.SOFTMAX and not compressed_sinks:
        return "attention sinks, an output gate or a qkv clip outside softmax head attention"
    if arch.mlp.activation is Activation.XIELU and arch.mlp.moe is not None:
        return "xielu in mixture-of-experts layers (its learned scalars are per dense MLP)"
    dense_rope = kinds == {LayerKind.GLOBAL} and pos is PositionType.ROPE
    dsa = att.sparse is not None and att.variant is not AttentionVariant.COMPRESSED
    if dsa and (arch.kind is not Kind.DECODER_ONLY or not dense_rope):
        return "sparse attention (DSA) outside a decoder-only model of global RoPE layers"
    if att.variant is AttentionVariant.LATENT and att.qk_norm not in (None, QKNorm.NONE):
        return "QK norm on latent attention"
    if arch.layer_scalar and (arch.parallel_layers or arch.kind is not Kind.DECODER_ONLY):
        return "a layer scalar outside serial decoder-only blocks"
    if arch.layer_scalar and arch.norm.position is NormPosition.RESIDUAL:
        return "a layer scalar with ResiDual"
    if att.kv_shared_layers and arch.kind is not Kind.DECODER_ONLY:
        return "cross-layer KV sharing outside a decoder-only model"
    if arch.per_layer_embeddings is not None and (
        arch.parallel_layers
        or arch.kind is not Kind.DECODER_ONLY
        or arch.norm.position is NormPosition.RESIDUAL
    ):
        return "per-layer embeddings outside serial decoder-only blocks (ResiDual aside)"
    if (arch.altup is not None or arch.laurel_rank is not None) and not _gemma3n_block(arch):
        return (
            "altup or laurel_rank outside Gemma 3n's block (both, with per-layer "
            "embeddings, double norms, serial decoder-only layers of softmax attention and "
            "a dense MLP, no layer scalar or residual multiplier)"
        )
    plain = (None, Activation.XIELU, *CLAMPED_UNITS)
    if arch.per_layer_embeddings is not None and arch.mlp.activation in plain:
        return "per-layer embeddings without a plain MLP activation for their gate"
    moe = arch.mlp.moe
    if moe is not None and moe.dense_beside_d_ff is not None and arch.parallel_layers:
        return "a dense MLP beside the experts in parallel layers"
    if arch.parallel_layers and arch.norm.position is NormPosition.RESIDUAL:
        return "ResiDual with parallel layers"
    if arch.parallel_layers and arch.kind is not Kind.DECODER_ONLY:
        return "parallel layers in an encoder-decoder"
    return _unsupported_shared(arch)


def _unsupported_compressed(arch: Architecture) -> str | None:
    """DeepSeek-V4's attention and mHC streams are built as transformers' deepseek_v4 has
    them: serial pre-norm decoder layers, RoPE, sinks, no biases or QK norm."""
    att = arch.attention
    if arch.hyper_connections is not None and (
        arch.kind is not Kind.DECODER_ONLY
        or arch.parallel_layers
        or arch.norm.position is not NormPosition.PRE
        or att.variant is not AttentionVariant.COMPRESSED
    ):
        return "hyper_connections outside serial pre-norm decoder layers of compressed attention"
    if att.variant is not AttentionVariant.COMPRESSED:
        return None
    plain = att.qk_norm in (None, QKNorm.NONE) and not arch.bias.qkv and not arch.bias.attn_out
    extras = att.output_gate is not None or att.qkv_clip is not None or att.logit_softcap
    if arch.kind is not Kind.DECODER_ONLY or arch.position.type is not PositionType.ROPE:
        return "compressed attention outside a decoder-only RoPE model"
    if not att.sinks or not plain or extras or att.kv_shared_layers:
        return (
            "compressed attention other than DeepSeek-V4's (sinks; no QK norm, biases, output "
            "gate, qkv clip, soft-cap or KV sharing)"
        )
    return None


def _unsupported_shared(arch: Architecture) -> str | None:
    """Shared blocks (Zamba2) join a serial pre-norm decoder's layers before their norm;
    their attention is plain softmax head attention."""
    if arch.shared_blocks is None:
        return None
    att = arch.attention
    if arch.kind is not Kind.DECODER_ONLY or arch.parallel_layers:
        return "shared blocks outside a serial decoder-only model"
    if arch.norm.position is not NormPosition.PRE:
        return "shared blocks in a stack that is not pre-norm (they join a layer's norm input)"
    extras = att.sinks or att.output_gate is not None or att.value_norm or att.sparse
    extras = extras or att.query_rank is not None
    if extras or att.global_layers is not None or att.qk_norm not in (None, QKNorm.NONE):
        return (
            "shared blocks with a QK norm, sinks, output gate, value norm, low-rank query or "
            "global_layers"
        )
    if arch.position.type not in (PositionType.ROPE, PositionType.NONE):
        return "shared blocks with positions other than rope or none"
    if arch.layer_scalar or arch.mlp.gate_multiplier or arch.mlp.output_multiplier:
        return "shared blocks with a layer scalar or MLP multipliers"
    return None


def _gemma3n_block(arch: Architecture) -> bool:
    """AltUp and LAuReL are built as Gemma 3n's block, which has all of these."""
    return (
        arch.altup is not None
        and arch.laurel_rank is not None
        and arch.per_layer_embeddings is not None
        and arch.kind is Kind.DECODER_ONLY
        and not arch.parallel_layers
        and arch.norm.position is NormPosition.DOUBLE
        and arch.mlp.moe is None
        and not arch.layer_scalar
        and arch.residual_multiplier in (None, 1.0)
        and all(kind.attention and kind.recurrent is None for kind in arch.attention.layer_pattern)
        and arch.attention.variant is AttentionVariant.SOFTMAX
    )


# --- attention -----------------------------------------------------------------------


@dataclass(frozen=True)
class HeadDims:
    """Per-layer attention widths (MLA: q/k width is nope + rope, v its own)."""

    n_heads: int
    n_kv_heads: int
    qk_dim: int  # width of one query/key head as the kernel sees it
    v_dim: int  # width of one value head
    rotary_dims: int  # dims of each q/k head that rotate (0 without RoPE)
    # proportional RoPE (Gemma 4's global layers): the whole head goes through the rotary
    # module, only this many leading frequency pairs with a non-zero angle; None: standard
    rotating_pairs: int | None = None
    values_from_keys: bool = False  # no value projection: values are the keys (k_eq_v)


def head_dims(arch: Architecture) -> HeadDims:
    att = arch.attention
    if att.latent is not None:
        lat = att.latent
        return HeadDims(
            n_heads=att.n_heads,  # type: ignore[arg-type]
            n_kv_heads=att.n_heads,  # type: ignore[arg-type]
            qk_dim=lat.qk_nope_head_dim + lat.qk_rope_head_dim,
            v_dim=lat.v_head_dim,
            rotary_dims=lat.qk_rope_head_dim if arch.position.type is PositionType.ROPE else 0,
        )
    hd = arch.head_dim_effective
    assert hd is not None
    return HeadDims(
        n_heads=att.n_heads,  # type: ignore[arg-type]
        n_kv_heads=att.n_kv_heads,  # type: ignore[arg-type]
        qk_dim=hd,
        v_dim=att.v_head_dim or hd,
        rotary_dims=rotary_dims(arch, hd),
    )


def layer_head_dims(arch: Architecture, kind: LayerKind) -> HeadDims:
    """A layer's head widths: the card's, or for global layers its global_layers sizes."""
    dims = head_dims(arch)
    g = arch.attention.global_layers
    if g is None or kind is not LayerKind.GLOBAL:
        return dims
    hd = g.head_dim or dims.qk_dim
    rotary, pairs = rotary_dims(arch, hd), None
    if g.rotary_fraction is not None and rotary:
        rotary, pairs = hd, int(g.rotary_fraction * hd // 2)
    return HeadDims(
        n_heads=dims.n_heads,
        n_kv_heads=g.n_kv_heads or dims.n_kv_heads,
        qk_dim=hd,
        v_dim=arch.attention.v_head_dim or hd,
        rotary_dims=rotary,
        rotating_pairs=pairs,
        values_from_keys=bool(g.values_from_keys),
    )


def rotary_dims(arch: Architecture, head_dim: int) -> int:
    """Dims of a head that rotate: all of them, or int(head_dim * fraction) rounded to even."""
    if arch.position.type is not PositionType.ROPE:
        return 0
    fraction = arch.position.rotary_fraction
    if fraction is None:
        return head_dim
    dims = int(head_dim * fraction)
    return dims - dims % 2


@dataclass(frozen=True)
class LayerSpec:
    """One decoder layer: its mixer kind, whether it uses positions, and its MLP."""

    index: int
    kind: LayerKind
    window: int | None  # local window or chunk size, tokens
    rope_theta: float | None  # None: no rotary embedding in this layer
    moe: bool
    d_ff: int | None  # dense width, or one routed expert's width; None: no MLP sublayer
    reuses_kv: bool = False  # attends with an earlier layer's keys and values (KV sharing)
    sparsity: float | None = None  # Gemma 3n's gaussian top-k target on the MLP's gate
    mixer_norm: bool = True  # False: the mixer has no pre-norm (ModernBERT's first layer)
    heads: tuple[int, int] | None = None  # own (query, KV) heads (layer_widths); None: the card's


def layer_spec(arch: Architecture, index: int, kind: LayerKind) -> LayerSpec:
    att, pos, moe = arch.attention, arch.position, arch.mlp.moe
    windowed = kind.windowed
    theta = None
    if pos.type is PositionType.ROPE and kind.positional:
        theta = pos.rope_theta or DEFAULT_ROPE_THETA
        if kind is LayerKind.LOCAL and pos.rope_theta_local is not None:
            theta = pos.rope_theta_local
    is_moe = is_moe_layer(arch, index)
    d_ff = arch.mlp.d_ff
    if moe is not None and not is_moe:
        d_ff = moe.dense_d_ff
    reuses = reuses_kv(arch, index)
    if reuses and arch.mlp.kv_shared_d_ff is not None:
        d_ff = arch.mlp.kv_shared_d_ff
    widths = own_widths(arch, index)
    if widths is not None:
        d_ff = widths[2]
    if not layer_has_mlp(arch, kind):
        d_ff, is_moe = None, False
    else:
        assert d_ff is not None
    return LayerSpec(
        index=index,
        kind=kind,
        window=att.sliding_window if windowed else None,
        rope_theta=theta,
        moe=is_moe,
        d_ff=d_ff,
        reuses_kv=reuses,
        sparsity=sparsity_of(arch, index) if d_ff is not None else None,
        mixer_norm=has_mixer_norm(arch, index),
        heads=widths[:2] if widths is not None else None,
    )


def own_widths(arch: Architecture, index: int) -> tuple[int, int, int] | None:
    """A layer's own (query heads, KV heads, dense width) under layer_widths (OpenELM's
    layer-wise scaling); None when every layer has the card's."""
    w = arch.layer_widths
    if w is None:
        return None
    return w.n_heads_per_layer[index], w.n_kv_heads_per_layer[index], w.d_ff_per_layer[index]


def sparsity_of(arch: Architecture, index: int) -> float | None:
    """The gaussian top-k target of a layer's MLP gate (Gemma 3n's first layers)."""
    sparsity = arch.mlp.activation_sparsity
    return sparsity.target if sparsity is not None and index < sparsity.first_layers else None


def reuses_kv(arch: Architecture, index: int) -> bool:
    """Whether a decoder layer is one of the last attention.kv_shared_layers, which attend
    with an earlier layer's keys and values."""
    shared = arch.attention.kv_shared_layers or 0
    return bool(shared) and index >= (arch.n_layers or 0) - shared


def layer_has_mlp(arch: Architecture, kind: LayerKind) -> bool:
    """Attention layers have an MLP unless attention.mlp is false; a recurrent mixer's
    sizes say whether it does; mlp and moe entries are one."""
    return arch.kind_has_mlp(kind)


DEFAULT_ROPE_THETA = 10_000.0  # RoPE's original base, used where a card gives none

# (place in the attention pattern, is a MoE layer, reuses another layer's keys and values,
# has a sparse MLP gate, has its mixer's norm, routes by token id, its own widths)
LayerKey = tuple[int, bool, bool, bool, bool, bool, tuple[int, int, int] | None]


def layer_key(arch: Architecture, pattern: list[LayerKind], index: int) -> LayerKey:
    """Layers differ only by their place in the pattern, whether they are MoE, whether
    they reuse an earlier layer's keys and values, whether their MLP gate is sparse,
    whether their mixer has its norm, whether they route by token id, and their own
    widths (layer_widths)."""
    sparse = sparsity_of(arch, index) is not None
    place, moe, reuses = index % len(pattern), is_moe_layer(arch, index), reuses_kv(arch, index)
    hashed = moe and index < (arch.mlp.moe.hash_layers or 0)
    widths = own_widths(arch, index)
    return place, moe, reuses, sparse, has_mixer_norm(arch, index), hashed, widths


def has_mixer_norm(arch: Architecture, index: int) -> bool:
    """Whether layer ``index``'s mixer has its pre-norm (not ModernBERT's first layer)."""
    return not (index == 0 and arch.norm.first_mixer_norm is False)


def layer_groups(
    arch: Architecture, pattern: list[LayerKind] | None = None, n: int | None = None
) -> list[tuple[LayerKey, LayerSpec, int]]:
    """The distinct layers of a stack (default: the decoder), in order of first use, each
    with its key, its spec (at its first index) and how many layers it is."""
    pattern = arch.attention.layer_pattern if pattern is None else pattern
    n = (arch.n_layers or 0) if n is None else n
    first: dict[LayerKey, int] = {}
    counts: dict[LayerKey, int] = {}
    for i in range(n):
        key = layer_key(arch, pattern, i)
        first.setdefault(key, i)
        counts[key] = counts.get(key, 0) + 1
    return [(k, layer_spec(arch, first[k], pattern[k[0]]), c) for k, c in counts.items()]


def decoder_groups(arch: Architecture) -> list[tuple[LayerSpec, int]]:
    """The decoder's distinct layers and how many layers each is (for fast formulas)."""
    return [(spec, count) for _, spec, count in layer_groups(arch)]


def shared_groups(arch: Architecture) -> list[tuple[LayerSpec, int]]:
    """The shared blocks' invocations as layers (Zamba2): full attention with the card's
    MLP, as many as there are invocations; [] without shared blocks (for fast formulas)."""
    sb = arch.shared_blocks
    if sb is None:
        return []
    return [(layer_spec(arch, sb.layers[0], LayerKind.GLOBAL), len(sb.layers))]


def shared_reuse(arch: Architecture) -> int:
    """How many times more than once the shared blocks run: invocations - blocks."""
    sb = arch.shared_blocks
    return 0 if sb is None else len(sb.layers) - sb.n_blocks


def is_moe_layer(arch: Architecture, index: int) -> bool:
    """MoE layers: the pattern's moe entries where it has any (Nemotron 3); else, between
    the leading and the trailing dense ones (Step-3: its last layer), every layer_period-th
    (Llama 4: 1, 3, 5, ...)."""
    moe, pattern = arch.mlp.moe, arch.attention.layer_pattern
    if moe is None or index < moe.first_dense_layers:
        return False
    if LayerKind.MOE in pattern:
        return pattern[index % len(pattern)] is LayerKind.MOE
    last = moe.last_dense_layers or 0
    if last and arch.n_layers is not None and index >= arch.n_layers - last:
        return False
    return (index - moe.first_dense_layers + 1) % moe.layer_period == 0


# --- encoders, embeddings -------------------------------------------------------------


def embedding_width(arch: Architecture) -> int:
    """Width of the token embedding (factorized embeddings project it to d_model)."""
    return arch.embedding_dim or arch.d_model  # type: ignore[return-value]


def _odd_rotation(arch: Architecture) -> str | None:
    """RoPE turns pairs of dims: a head whose rotated dims are odd cannot run (a forward
    pass would fail on the unpaired dim), so the build refuses it and names the width."""
    if arch.position.type is not PositionType.ROPE or not arch.has_attention():
        return None
    att = arch.attention
    widths = [("attention.head_dim", arch.head_dim_effective)]
    if att.latent is not None:  # MLA rotates only its shared rope part
        widths = [("attention.latent.qk_rope_head_dim", att.latent.qk_rope_head_dim)]
    if att.global_layers is not None and att.global_layers.head_dim is not None:
        widths.append(("attention.global_layers.head_dim", att.global_layers.head_dim))
    for field, width in widths:
        if width and rotary_dims(arch, width) % 2:
            return f"{field} {width}: RoPE rotates pairs of dims, and {width} rotated dims is odd"
    return None


def _encoder_layers_built(arch: Architecture) -> bool:
    """An encoder-only stack the builder makes: BERT's, RoBERTa's and ModernBERT's layers
    (global and two-sided local attention)."""
    att = arch.attention
    return (
        att.variant is AttentionVariant.SOFTMAX
        and set(att.layer_pattern) <= {LayerKind.GLOBAL, LayerKind.LOCAL}
        and arch.mlp.moe is None
        and arch.mixers is None
        and arch.mtp is None
        and not arch.parallel_layers
    )


def learned_rows(arch: Architecture) -> int:
    """Rows of a learned position table: the card's learned_rows, else context_length."""
    rows = getattr(arch.position, "learned_rows", None)
    return rows or arch.context_length  # type: ignore[return-value]


DEFAULT_RELATIVE_BUCKETS = 32  # T5's bucket count, for relative-bias cards that give none


def relative_buckets(arch: Architecture) -> int:
    return arch.position.relative_buckets or DEFAULT_RELATIVE_BUCKETS


def lcm(*values: int) -> int:
    out = 1
    for v in values:
        out = out * v // math.gcd(out, v)
    return out


# --- unknown values ---------------------------------------------------------------------


@dataclass(frozen=True)
class Assumption:
    """A null (unknown) card value the builder had to fill, and why that value."""

    field: str
    value: object
    why: str

    @property
    def counts_params(self) -> bool:
        """Whether the parameter count can depend on it (a window changes FLOPs, cache)."""
        return self.field != "attention.sliding_window"

    def __str__(self) -> str:
        shown = getattr(self.value, "value", self.value)
        return f"architecture.{self.field} = {shown} ({self.why})"


TABLE_LENGTH = 2048  # position tables for cards without a context_length
# A local layer's window where the card's source does not publish it (GPT-3's locally
# banded layers): the Sparse Transformer's stride for text (Child et al. 2019, Section
# 7.2, "a stride of 128"), the band of the paper GPT-3 cites for its sparse layers.
DEFAULT_WINDOW = 128


def fill_unknowns(arch: Architecture) -> tuple[Architecture, tuple[Assumption, ...]]:
    """Fill null *choices* with stated defaults so a card with gaps still builds.

    Only choices get defaults, never sizes: a null d_model, n_layers, n_heads or d_ff
    leaves the card unbuildable (BuildError), and a null vocab_size leaves the full size
    uncountable (the toy replaces the vocabulary anyway). One size is the exception: an
    unpublished local window (GPT-3's banded layers) gets ``DEFAULT_WINDOW``, since it
    changes FLOPs and the KV cache but no parameter. Every default is returned as an
    Assumption and reported next to the figures it affects. Null choices that change only
    outputs (norm epsilon, RoPE layout, ...) stay null: the builder computes with
    ``FUNCTION_DEFAULTS`` for them, listed per card by ``function_assumptions``.
    """
    window_unknown = (
        arch.attention.sliding_window is None and LayerKind.LOCAL in arch.attention.layer_pattern
    )
    updates: dict[str, object] = {}
    made: list[Assumption] = []

    def current(path: str) -> object:
        return updates[path] if path in updates else get_path(arch, path)

    def fill(path: str, value: object, why: str) -> None:
        if current(path) is None:
            updates[path] = value
            made.append(Assumption(path, value, why))

    fill("norm.type", NormType.LAYERNORM, "the original Transformer's norm")
    fill("norm.position", NormPosition.PRE, "pre-norm, the usual placement")
    affine = (
        NormAffine.SCALE if current("norm.type") is NormType.RMSNORM else NormAffine.SCALE_AND_BIAS
    )
    fill("norm.affine", affine, "the norm type's usual affine terms")
    post = current("norm.position") is NormPosition.POST
    fill("norm.final", not post, "a final norm exactly when the stack is not post-norm")
    fill("attention.qk_norm", QKNorm.NONE, "no QK norm")
    mha = arch.attention.variant is not AttentionVariant.LATENT and arch.attention.n_heads
    if mha:
        fill("attention.n_kv_heads", arch.attention.n_heads, "multi-head attention")
    pos = arch.position
    if pos.rope_theta or pos.rotary_fraction:
        fill("position.type", PositionType.ROPE, "the card gives RoPE settings")
    elif pos.relative_buckets:
        fill("position.type", PositionType.RELATIVE_BIAS, "the card gives relative buckets")
    fill("position.type", PositionType.NONE, "no position scheme")
    for part in ("qkv", "attn_out", "mlp"):
        fill(f"bias.{part}", False, "no bias")
    if window_unknown:
        why = "unpublished; the Sparse Transformer's stride for text (Child et al. 2019, 7.2)"
        fill("attention.sliding_window", DEFAULT_WINDOW, why)
    fill("parallel_layers", False, "serial blocks")
    fill("tied_embeddings", False, "separate output head")
    fill("context_length", TABLE_LENGTH, "position tables sized for this many tokens")
    if arch.tokenizer_vocab_size is not None:
        fill("vocab_size", arch.tokenizer_vocab_size, "the tokenizer's size, no padding")
    if not updates:
        return arch, ()
    return _replaced(arch, updates), tuple(made)


# Choices that change outputs but not counts (a null means "not recorded"): the value
# the builder computes with, and why, from each field's OutputOnly schema role. They never
# change a parameter or cache figure (nor a FLOP, the router's few aside), so they are
# stated apart from fill_unknowns' count assumptions.
_OUTPUT_ONLY: tuple[tuple[str, OutputOnly], ...] = tuple(
    (path.removeprefix("architecture."), role)
    for path, role in with_role(Card, OutputOnly)
    if path.startswith("architecture.")
)
FUNCTION_DEFAULTS: dict[str, tuple[object, str]] = {
    path: (role.default, role.why) for path, role in _OUTPUT_ONLY
}


def function_assumptions(arch: Architecture) -> tuple[Assumption, ...]:
    """The FUNCTION_DEFAULTS a build of this card computes with: its null output-only
    choices that are in play (their sub-model present, their role's condition met)."""
    made = []
    for path, role in _OUTPUT_ONLY:
        parent, _, _ = path.rpartition(".")
        if get_path(arch, path) is not None or (parent and get_path(arch, parent) is None):
            continue
        if role.in_play(arch):
            made.append(Assumption(path, role.default, role.why))
    return tuple(made)


def _replaced(model: BaseModel, updates: dict[str, object]) -> BaseModel:
    """A copy with dotted paths replaced: the filled values are valid by construction, so
    no re-validation (which would build pydantic's validators on a query command's path)."""
    direct: dict[str, object] = {}
    nested: dict[str, dict[str, object]] = {}
    for path, value in updates.items():
        head, _, rest = path.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    for head, sub in nested.items():
        direct[head] = _replaced(getattr(model, head), sub)
    return model.model_copy(update=direct)
