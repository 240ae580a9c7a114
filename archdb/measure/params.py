"""Exact parameter counts of a built model, read from its modules (meta device for full size).

This is the measured side; ``analytic.param_count`` is the formula. The two must agree for
every card (tests check it), and this side is what Hugging Face's models are compared to.
Which tensors are embeddings and which experts a token skips is what the plan's specs
marked on the modules they made (``archdb_embedding``, ``archdb_active``).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from archdb.builder.model import build_model
from archdb.conventions import PARAMS_CONVENTION
from archdb.plan.layout import fill_unknowns
from archdb.schema import Architecture


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
    embedding: dict[int, int] = {}  # each tensor once (a tied head is the table)
    inactive = 0
    for module in model.modules():
        # the marks are plain instance attributes: read from the instance's dict, as a
        # getattr that misses raises (and catches) inside nn.Module on each of 1000s
        marks = vars(module)
        if marks.get("archdb_embedding", False):
            embedding |= {id(p): p.numel() for p in module.parameters()}
        active = marks.get("archdb_active")
        if active is not None:  # routed experts: a token uses `active` of them
            n_experts = module.up.shape[0]
            per_expert = sum(p.numel() for p in module.parameters()) // n_experts
            inactive += (n_experts - active) * per_expert
    n_embedding = sum(embedding.values())
    return ParamReport(
        total=total,
        non_embedding=total - n_embedding,
        active=total - inactive,
        embedding=n_embedding,
        published=published,
        assumptions=assumptions,
    )


def full_size_params(arch: Architecture, published: int | None = None) -> ParamReport:
    """Build the full-size model on the meta device (no memory) and count it."""
    _, assumed = fill_unknowns(arch)
    model = build_model(arch, device="meta")
    counted = tuple(str(a) for a in assumed if a.counts_params)
    return measure_params(model, published, counted)
