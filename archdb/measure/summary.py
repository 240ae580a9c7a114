"""What ``archdb build`` and ``archdb flops`` report, as plain data (the CLI renders it).

A build summary holds the module tree, the dims (and, for a toy, the scaling rule and
what it kept), exact parameters with the published figure, and FLOPs per token with
their conventions. Toys are measured with fvcore as well as the formula.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from archdb import conventions as cv
from archdb.builder.model import build_model, module_tree
from archdb.builder.shrink import shrink, toy_dims
from archdb.plan.layout import fill_unknowns
from archdb.schema import Card

from .analytic import (
    CacheSize,
    FlopCount,
    cache_size,
    default_seq_len,
    flops,
    param_count,
    training_flops,
)
from .flops import FlopMeasurement, measure_flops, route_to_real_experts
from .params import ParamReport, measure_params

Size = Literal["toy", "full"]


@dataclass(frozen=True)
class FlopFigures:
    """FLOPs per token at seq_len: the formula (dense and causal) and, for toys, fvcore."""

    seq_len: int
    analytic: float
    analytic_causal: float
    by_class: dict[str, float]
    by_class_causal: dict[str, float]
    fvcore: float | None = None
    fvcore_by_class: dict[str, float] | None = None
    convention: str = cv.FLOP_CONVENTION
    attention_convention: str = cv.ATTENTION_CONVENTION
    encoder_decoder_convention: str | None = None

    @property
    def relative_difference(self) -> float | None:
        """(fvcore - analytic) / analytic on the toy."""
        return None if self.fvcore is None else (self.fvcore - self.analytic) / self.analytic


def flop_figures(
    count: FlopCount, measured: FlopMeasurement | None, encoder_decoder: bool
) -> FlopFigures:
    t = count.seq_len
    return FlopFigures(
        seq_len=t,
        analytic=count.per_token,
        analytic_causal=count.per_token_causal,
        by_class=count.per_token_by_class(),
        by_class_causal=count.per_token_by_class(causal=True),
        fvcore=None if measured is None else measured.per_token,
        fvcore_by_class=None
        if measured is None
        else {k: v / t for k, v in measured.by_class.items()},
        encoder_decoder_convention=cv.ENCODER_DECODER_CONVENTION if encoder_decoder else None,
    )


@dataclass(frozen=True)
class BuildSummary:
    id: str
    size: Size
    dims: dict
    scaling: dict | None  # toy only: rule, kept, approximated
    params: ParamReport
    flops: FlopFigures
    modules: list[dict] = field(default_factory=list)
    assumptions: tuple[str, ...] = ()
    routing: str | None = None  # how routing-dependent FLOPs were counted (zero experts)

    def to_dict(self) -> dict:
        p = self.params
        return {
            "id": self.id,
            "size": self.size,
            "dims": self.dims,
            "scaling": self.scaling,
            "params": p.total,
            "params_detail": {
                "total": p.total,
                "non_embedding": p.non_embedding,
                "active": p.active,
                "embedding": p.embedding,
                "published": p.published,
                "relative_difference": p.relative_difference,
                "convention": p.convention,
            },
            "seq_len": self.flops.seq_len,
            "flops": _flops_dict(self.flops),
            "assumptions": list(self.assumptions),
            "routing": self.routing,
            "modules": self.modules,
        }


def _flops_dict(f: FlopFigures) -> dict:
    out = {k: v for k, v in asdict(f).items() if v is not None and k != "seq_len"}
    if f.fvcore is not None:
        out["relative_difference"] = f.relative_difference
    return out


def build_summary(card: Card, size: Size = "toy", seq_len: int | None = None) -> BuildSummary:
    """Build a card's toy (on CPU, measured with fvcore) or full size (meta device).

    ``seq_len``: the toy's context and the length its FLOPs are measured at (default the
    toy rule's 64 tokens); for the full size, the length of the FLOP formula (default
    min(2048, context)).
    """
    arch, assumed = fill_unknowns(card.architecture)
    scaling = None
    if size == "toy":
        toy = shrink(arch, seq_len=seq_len)
        arch = toy.arch
        scaling = {"rule": toy.rule, "kept": list(toy.kept), "approximated": list(toy.approximated)}
        model = build_model(arch)
        seq_len = arch.context_length
        routing = route_to_real_experts(model)
        measured = measure_flops(model, seq_len)
        published = None
    else:
        model = build_model(arch, device="meta")
        seq_len = seq_len or default_seq_len(arch)
        measured = routing = None
        published = card.params_published
    notes = tuple(str(a) for a in assumed)
    params = measure_params(model, published, notes)
    figures = flop_figures(flops(arch, seq_len), measured, arch.n_encoder_layers is not None)
    return BuildSummary(
        card.id,
        size,
        toy_dims(arch),
        scaling,
        params,
        figures,
        module_tree(model),
        notes,
        routing,
    )


@dataclass(frozen=True)
class FlopsSummary:
    """Full-size FLOPs and KV cache of a card, and the toy's fvcore check."""

    id: str
    full: FlopFigures
    params: ParamReport
    cache: CacheSize
    training_tokens: int | None
    training_flops: float | None
    toy: BuildSummary

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "seq_len": self.full.seq_len,
            "flops": _flops_dict(self.full),
            "params": self.params.total,
            "params_active": self.params.active,
            "kv_cache_bytes": self.cache.total,
            "kv_cache_bytes_per_token": self.cache.per_token,
            "kv_dtype_bytes": self.cache.bytes_per_element,
            "kv_seq_len": self.cache.context,
            "kv_convention": self.cache.convention,
            "training_tokens": self.training_tokens,
            "training_flops_6nd": self.training_flops,
            "training_convention": "6 x active parameters x training tokens",
            "toy": {
                "dims": self.toy.dims,
                "scaling": self.toy.scaling,
                "seq_len": self.toy.flops.seq_len,
                "flops": _flops_dict(self.toy.flops),
            },
            "assumptions": list(self.toy.assumptions),
        }


def flops_summary(
    card: Card,
    seq_len: int | None = None,
    *,
    toy_seq_len: int | None = None,
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
) -> FlopsSummary:
    """FLOPs per token of the full-size card at seq_len (default min(2048, context)), the
    KV cache at ``context`` tokens, and the toy's fvcore check at ``toy_seq_len``."""
    arch, assumed = fill_unknowns(card.architecture)
    seq = seq_len or default_seq_len(arch)
    full = flop_figures(flops(arch, seq), None, arch.n_encoder_layers is not None)
    counts = param_count(arch)
    params = ParamReport(
        counts.total,
        counts.non_embedding,
        counts.active,
        counts.embedding,
        card.params_published,
        tuple(str(a) for a in assumed),
    )
    return FlopsSummary(
        id=card.id,
        full=full,
        params=params,
        cache=cache_size(arch, context, bytes_per_element),
        training_tokens=card.training.tokens,
        training_flops=training_flops(card),
        toy=build_summary(card, "toy", toy_seq_len),
    )
