"""How far each card's build is verified against a reference implementation: the level
``archdb.fidelity`` gives (logit-exact, count-exact, not comparable) and why, per card,
with the counts by level. Computed from the cards (the table holds no fidelity column)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from archdb.catalogue import Catalogue
from archdb.fidelity import LOGIT_TOLERANCE, fidelities
from archdb.reports import render

LEVELS = ("logit-exact", "count-exact", "not comparable")  # strongest first


@dataclass(frozen=True)
class CardFidelity:
    card: str
    model_type: str | None  # transformers' family for the card, if any
    level: str
    why: str


def card_fidelities(catalogue: Catalogue) -> list[CardFidelity]:
    """Every card's level, strongest level first, then by id."""
    from archdb_hf.families.registry import model_type_of  # as fidelity does: lazily

    verdicts = fidelities(catalogue)  # one read (and at most one write) of the cache
    found = []
    for card in catalogue:
        verified = verdicts[card.id]
        model_type = model_type_of(card)
        found.append(CardFidelity(card.id, model_type, verified.level, verified.why))
    return sorted(found, key=lambda f: (LEVELS.index(f.level), f.card))


def level_counts(found: list[CardFidelity]) -> list[tuple[str, int]]:
    """Cards per level, every level listed (a level no card reaches counts 0)."""
    counts = Counter(f.level for f in found)
    return [(level, counts[level]) for level in LEVELS]


def summary(found: list[CardFidelity]) -> str:
    """One sentence for the index page: the cards at each level."""
    parts = [f"{n} {level}" for level, n in level_counts(found)]
    return f"Of {len(found)} cards: {', '.join(parts)}."


def page_sections(found: list[CardFidelity]) -> list[str]:
    """The fidelity page after its scope line: the levels, their counts, every card."""
    explain = (
        "A card's build is **logit-exact** when transformers' family for it is one whose tiny "
        "random checkpoints archdb loads and reproduces to a relative logit error below "
        f"{LOGIT_TOLERANCE:g} (tests/test_fidelity.py) and the card records every choice that "
        "changes outputs but not counts (norm epsilon and scale form, embedding and logit "
        "factors, RoPE layout, GELU form, top-k renormalization, attention scale where its "
        "family needs one). **count-exact**: transformers builds the card with archdb's exact "
        "parameter count, but its outputs are not verified (its family is not verified, or "
        "the card lacks a field, or the family's code always applies a mechanism the card's "
        "model has not, named in *why*). **not comparable**: no transformers family "
        "represents the card."
    )
    counts = render.table(["level", "cards"], level_counts(found), right=[1])
    rows = [[f"`{f.card}`", f.model_type, f.level, f.why] for f in found]
    cards = render.table(["card", "transformers family", "level", "why"], rows)
    return [explain, "## Cards by level\n\n" + counts, "## Every card\n\n" + cards]
