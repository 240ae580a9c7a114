"""Exact parameter counts, FLOPs per token and KV-cache bytes from a card: pure Python.

No torch here: query commands call ``derived_figures`` for every card and must stay fast.
Every figure is a fold over the card's plan (``archdb.plan``), the same plan the builder
turns into modules, so the parameter count equals the meta-device model's and, on a toy,
the FLOP count equals what fvcore measures with archdb's handles (tests check both).
Conventions are in ``archdb.conventions`` and travel with every result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.parts.kernels import KERNELS
from archdb.plan import plan as P
from archdb.plan.layout import BuildError, check_buildable, fill_unknowns
from archdb.schema import Architecture, Card, LayerKind

# --- results --------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamCount:
    """Exact parameter counts under stated conventions."""

    total: int  # every parameter once; tied embeddings counted once
    non_embedding: int  # without vocabulary and position tables
    active: int  # per token: routed experts only for the top-k
    embedding: int  # total - non_embedding
    convention: str = cv.PARAMS_CONVENTION


@dataclass(frozen=True)
class FlopCount:
    """Forward FLOPs of one sequence, by operator class, dense and causal."""

    seq_len: int
    dense: dict[str, int]  # per sequence, as the toy's kernels compute them
    causal: dict[str, int]  # per sequence, unmasked attention scores only
    convention: str = field(default=cv.FLOP_CONVENTION)
    attention_convention: str = field(default=cv.ATTENTION_CONVENTION)

    @property
    def per_token(self) -> float:
        return sum(self.dense.values()) / self.seq_len

    @property
    def per_token_causal(self) -> float:
        return sum(self.causal.values()) / self.seq_len

    def per_token_by_class(self, causal: bool = False) -> dict[str, float]:
        counts = self.causal if causal else self.dense
        return {k: v / self.seq_len for k, v in counts.items()}


@dataclass(frozen=True)
class CacheSize:
    """K/V cache and recurrent state of one sequence of ``context`` tokens at
    ``bytes_per_element`` each (a recurrent state counts once, whatever the context)."""

    context: int
    bytes_per_element: float
    total: float  # bytes
    convention: str = cv.KV_CONVENTION

    @property
    def per_token(self) -> float:
        return self.total / self.context


# --- parameters ---------------------------------------------------------------------------


def param_count(arch: Architecture) -> ParamCount:
    """Exact parameters of the model the builder makes from this architecture."""
    return plan_param_count(P.make_plan(arch))


def plan_param_count(plan: P.Plan) -> ParamCount:
    split = P.params(plan)
    return ParamCount(
        total=split.total,
        non_embedding=split.total - split.embedding,
        active=split.total - split.inactive,
        embedding=split.embedding,
    )


# --- FLOPs ----------------------------------------------------------------------------------


def flops(arch: Architecture, seq_len: int) -> FlopCount:
    """Forward FLOPs of one sequence of ``seq_len`` tokens (and as many source tokens)."""
    if seq_len < 1:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    return plan_flop_count(P.make_plan(arch), seq_len)


def plan_flop_count(plan: P.Plan, seq_len: int) -> FlopCount:
    tally = P.flops(plan, seq_len)
    keys = [c.value for c in C]
    return FlopCount(
        seq_len=seq_len,
        dense={k: tally.dense[k] for k in keys},
        causal={k: tally.causal[k] for k in keys},
    )


def flops_per_token(arch: Architecture, seq_len: int) -> float:
    return flops(arch, seq_len).per_token


def dense_keys(kind: LayerKind, window: int | None, t: int) -> int:
    """Keys scored by all t queries of a causal layer, masked ones included (as computed)."""
    return KERNELS[kind].dense_keys(window, t)


def causal_keys(kind: LayerKind, window: int | None, t: int) -> int:
    """Keys a causal layer's t queries may attend to (the useful, unmasked scores)."""
    return KERNELS[kind].causal_keys(window, t)


# --- KV cache -------------------------------------------------------------------------------


def cache_size(
    arch: Architecture,
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
) -> CacheSize:
    """K/V cache of one sequence of ``context`` tokens (the one definition archdb uses)."""
    return plan_cache_size(P.make_plan(arch), context, bytes_per_element)


def plan_cache_size(plan: P.Plan, context: int, bytes_per_element: float) -> CacheSize:
    if context < 1:
        raise ValueError(f"context must be positive, got {context}")
    if bytes_per_element <= 0:
        raise ValueError(f"bytes_per_element must be positive, got {bytes_per_element}")
    total = P.cache_bytes(plan, context, bytes_per_element)
    return CacheSize(context, bytes_per_element, total)


# --- everything a query shows --------------------------------------------------------------


def default_seq_len(arch: Architecture) -> int:
    """The stated sequence length of full-size FLOPs: 2048, or the context if shorter."""
    return min(cv.DEFAULT_SEQ_LEN, arch.context_length or cv.DEFAULT_SEQ_LEN)


def derived_figures(card: Card) -> dict:
    """Derived figures of a card (None where the card lacks what a figure needs)."""
    arch = card.architecture
    out: dict = {
        "params_exact": None,
        "params_non_embedding": None,
        "params_active": None,
        "params_mtp": None,
        "params_with_mtp": None,
        "flops_per_token_mtp": None,
        "d_ff_ratio": arch.d_ff_ratio,
        "aspect_ratio": arch.aspect_ratio,
        "head_ratio": arch.head_ratio,
        "query_groups": arch.query_groups,
        "kv_cache_bytes_per_token": None,
        "flops_per_token": None,
        "norm_flops_share": None,
        "flops_seq_len": None,
        "kv_seq_len": cv.DEFAULT_KV_CONTEXT,
        "kv_dtype_bytes": cv.DEFAULT_KV_DTYPE_BYTES,
        "assumptions": [],
    }
    try:
        filled, assumed = fill_unknowns(arch)
        check_buildable(filled)
    except BuildError:
        return out
    plan = P.make_plan(filled)
    params = plan_param_count(plan)
    seq = default_seq_len(filled)
    forward = plan_flop_count(plan, seq)
    cache = plan_cache_size(plan, cv.DEFAULT_KV_CONTEXT, cv.DEFAULT_KV_DTYPE_BYTES)
    out |= {
        "params_exact": params.total,
        "params_non_embedding": params.non_embedding,
        "params_active": params.active,
        # an encoder-only model keeps no cache between tokens: not applicable, not zero
        "kv_cache_bytes_per_token": None if plan.masked_lm else cache.per_token,
        "flops_per_token": forward.per_token,
        "norm_flops_share": forward.dense.get(C.NORM, 0) / sum(forward.dense.values()),
        "flops_seq_len": seq,
        "assumptions": [str(x) for x in assumed],
    }
    if filled.mtp is not None:
        mtp = mtp_figures(plan, seq)
        out |= {
            "params_mtp": mtp.params,
            "params_with_mtp": params.total + mtp.params,
            "flops_per_token_mtp": mtp.flops_per_token,
        }
    return out


@dataclass(frozen=True)
class MTPFigures:
    """The multi-token-prediction modules' own figures (zero when the card states none)."""

    params: int  # every module, the shared embedding and head not counted again
    flops_per_token: float  # all modules forward, each through the shared head


def mtp_figures(plan: P.Plan, seq_len: int) -> MTPFigures:
    """Parameters and FLOPs per token of the plan's MTP modules, at ``seq_len`` tokens."""
    if plan.mtp is None:
        return MTPFigures(0, 0.0)
    tally = P.mtp_flops(plan, seq_len)
    assert tally is not None
    per_token = sum(tally.dense.values()) / seq_len
    return MTPFigures(plan.mtp.params(), per_token)


def training_flops(card: Card) -> float | None:
    """Training compute ~ 6 * N * D: N active parameters, D the card's training tokens."""
    if card.training.tokens is None:
        return None
    try:
        return 6 * param_count(card.architecture).active * card.training.tokens
    except BuildError:
        return None
