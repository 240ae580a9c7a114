"""Where attention takes over: the context at which attention's FLOPs per token pass the MLP's.

Pure Python over a card (no torch). Only the matmuls count on both sides, since they are
what grows: attention's score and value products (QK^T and AV) against the MLP's
projections (both branches of a gated unit; for MoE the active experts, the shared
experts and the router). Averages are over the decoder stack's layers, so dense first
layers, layer periods and local/global patterns weigh as often as they occur;
encoder-decoders are read through their decoder's self-attention; weight-shared blocks
(Zamba2) count as one attention-and-MLP layer per invocation.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from archdb import conventions as cv
from archdb.plan.layout import (
    BuildError,
    LayerSpec,
    check_buildable,
    decoder_groups,
    fill_unknowns,
    head_dims,
    shared_groups,
)
from archdb.schema import Architecture, AttentionVariant, Card, LayerKind

MAX_CONTEXT = 1e12  # beyond this a crossover is reported as never reached


class Mode(StrEnum):
    """How many keys a query scores at context L."""

    DENSE = "dense"  # every query scores all L keys
    CAUSAL = "causal"  # on average L/2 keys: the causal mask halves the work
    WINDOWED = "causal, windows"  # causal, and local/chunked layers stop at their window


def mlp_flops(arch: Architecture, spec: LayerSpec) -> float:
    """Matmul FLOPs per token of one layer's MLP: 2·d·d_ff per projection (3 when gated);
    0 for a layer without one (a mixer alone: Mamba-2's and Nemotron-H's mixer layers)."""
    if spec.d_ff is None:
        return 0.0
    d, gated = arch.d_model, arch.mlp.activation.gated
    projections = 3 if gated else 2
    if not spec.moe:
        return cv.FLOPS_PER_MAC * d * spec.d_ff * projections
    moe = arch.mlp.moe
    flops = cv.FLOPS_PER_MAC * d * (moe.n_experts + moe.n_active * spec.d_ff * projections)
    if moe.n_shared:
        flops += cv.FLOPS_PER_MAC * d * moe.shared_d_ff * projections
    return flops


def keys_per_query(kind: LayerKind, window: int | None, context: float, mode: Mode) -> float:
    """Average keys one query scores in a sequence of ``context`` tokens."""
    if mode is Mode.DENSE:
        return context
    if mode is Mode.CAUSAL or kind not in (LayerKind.LOCAL, LayerKind.CHUNKED):
        return context / 2
    if context <= window:
        return context / 2
    if kind is LayerKind.LOCAL:  # min(position, window), averaged over positions
        return window - window * window / (2 * context)
    full, rest = divmod(context, window)  # chunks: position within the chunk
    return (full * window * window / 2 + rest * rest / 2) / context


def attention_per_key(arch: Architecture) -> float:
    """QK^T and AV FLOPs per token of one attention layer for each key it scores:
    2·n_heads·(d_qk + d_v), i.e. 4·n_heads·d_head with equal key and value widths.
    A recurrent mixer (Mamba-2, Gated DeltaNet) scores no keys."""
    dims = head_dims(arch)
    return cv.FLOPS_PER_MAC * dims.n_heads * (dims.qk_dim + dims.v_dim)


@dataclass(frozen=True)
class Crossover:
    card_id: str
    year: int
    mlp_flops: float  # per token, averaged over layers
    attention_per_key: float  # per token and key, averaged over layers
    contexts: dict[str, float | None]  # mode -> crossover context (None: never)
    attention_family: str | None
    windowed: bool


def crossover_context(arch: Architecture, mode: Mode) -> float | None:
    """The context L at which attention FLOPs per token equal the MLP's, averaged over layers.

    Solves  Σ_layers 2·h·(d_qk + d_v)·keys(L)  =  Σ_layers MLP  for L, where
    keys(L) = L (dense), L/2 (causal), and for local layers of window W under causal
    masking min(position, W) averaged over the sequence: L/2 up to W, W − W²/(2L) beyond
    (chunked layers: the position within the chunk). The MLP is 2·d_model·d_ff per
    projection (three for gated units); MoE layers count the router, the active experts
    and the shared experts. Beyond L attention costs more. None when attention never
    catches up (linear attention, or every layer windowed below the crossover).
    """
    if arch.attention.variant is AttentionVariant.LINEAR:
        return None  # a fixed-size state: the cost per token does not grow with L
    groups = decoder_groups(arch) + shared_groups(arch)  # Zamba2's invocations attend
    target = sum(n * mlp_flops(arch, spec) for spec, n in groups)
    # the attending groups (recurrent ones score no keys), the per-key cost read once: the
    # bisection below asks for hundreds of contexts
    attending = [(n, spec.kind, spec.window) for spec, n in groups if spec.kind.attention]
    per_key = attention_per_key(arch) if attending else 0.0

    def attention(context: float) -> float:
        return sum(
            n * (per_key * keys_per_query(kind, window, context, mode))
            for n, kind, window in attending
        )

    if attention(MAX_CONTEXT) < target:
        return None
    low, high = 0.0, MAX_CONTEXT
    for _ in range(200):  # attention grows with L: bisect to float precision
        mid = (low + high) / 2
        low, high = (mid, high) if attention(mid) < target else (low, mid)
    return high


def card_crossover(card: Card) -> Crossover | None:
    """Every mode's crossover for a card; None when the card lacks the sizes."""
    try:
        arch, _ = fill_unknowns(card.architecture)
        check_buildable(arch)
    except BuildError:
        return None
    if not arch.has_attention():
        return None  # attention-free (Mamba-2): no attention cost to cross the MLP's
    groups = decoder_groups(arch) + shared_groups(arch)
    layers = sum(n for _, n in groups)
    return Crossover(
        card_id=card.id,
        year=card.release_date.year,
        mlp_flops=sum(n * mlp_flops(arch, s) for s, n in groups) / layers,
        attention_per_key=attention_per_key(arch),
        contexts={m.value: crossover_context(arch, m) for m in Mode},
        attention_family=arch.attention_family,
        windowed=any(s.window is not None for s, _ in groups),
    )
