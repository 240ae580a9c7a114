"""Exact parameter counts of a built model, read from its modules (meta device for full size).

This is the measured side; ``analytic.param_count`` is the formula. The two must agree for
every card (tests check it), and this side is what Hugging Face's models are compared to.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from archdb.builder.layout import fill_unknowns
from archdb.builder.model import build_model
from archdb.builder.moe import Experts
from archdb.builder.positions import LearnedPositions, RelativeBias
from archdb.schema import Architecture

from .conventions import PARAMS_CONVENTION


@dataclass(frozen=True)
class ParamReport:
    """Parameters of one built model, with the published figure where there is one."""

    total: int  # every tensor once: a tied output head is the embedding's tensor
    non_embedding: int
    active: int
    embedding: int
    published: int | None = None
    assumptions: tuple[str, ...] = ()
    convention: str = PARAMS_CONVENTION

    @property
    def relative_difference(self) -> float | None:
        """(exact - published) / published."""
        if not self.published:
            return None
        return (self.total - self.published) / self.published


def measure_params(
    model: nn.Module, published: int | None = None, assumptions: tuple[str, ...] = ()
) -> ParamReport:
    total = sum(p.numel() for p in model.parameters())
    embedding = _embedding_params(model)
    inactive = 0
    for module in model.modules():
        if isinstance(module, Experts):
            n_experts = module.up.shape[0]
            per_expert = sum(p.numel() for p in module.parameters()) // n_experts
            top_k = _top_k(model, module)
            inactive += (n_experts - top_k) * per_expert
    return ParamReport(
        total=total,
        non_embedding=total - embedding,
        active=total - inactive,
        embedding=embedding,
        published=published,
        assumptions=assumptions,
    )


def full_size_params(arch: Architecture, published: int | None = None) -> ParamReport:
    """Build the full-size model on the meta device (no memory) and count it."""
    _, assumed = fill_unknowns(arch)
    model = build_model(arch, device="meta")
    return measure_params(model, published, tuple(str(a) for a in assumed))


def _embedding_params(model: nn.Module) -> int:
    """Token table, an untied head (and its bias), position tables: each tensor once."""
    tensors: dict[int, int] = {}
    embed = getattr(model, "embed", None)
    head = getattr(model, "head", None)
    if embed is not None:
        tensors[id(embed.table.weight)] = embed.table.weight.numel()
    if head is not None:
        for p in (head.lm_head.weight, head.lm_head.bias):
            if p is not None:
                tensors[id(p)] = p.numel()
    for module in model.modules():
        if isinstance(module, LearnedPositions | RelativeBias):
            for p in module.parameters():
                tensors[id(p)] = p.numel()
    return sum(tensors.values())


def _top_k(model: nn.Module, experts: Experts) -> int:
    for module in model.modules():
        if getattr(module, "experts", None) is experts:
            return module.router.top_k
    raise ValueError("experts without a router")
