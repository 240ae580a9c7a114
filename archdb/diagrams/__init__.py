"""An architecture diagram of a card, drawn from its plan as static SVG (no script).

Top to bottom: the embedding; each stack as a strip of its layers (one cell a layer, its
token mixer above and its MLP below, rows wrapped at a multiple of the layer pattern's
period so the pattern lines up, each kind's count in a legend: readable at 10 layers and
at 10,000); each distinct layer of the stack opened up (the norms where the plan puts
them, the attention with its heads, KV heads and head_dim, the recurrent mixer with its
sizes, the MLP or MoE with its experts, serial or parallel, soft-caps, sinks, gates);
and the head. A card whose plan cannot be made (a size it needs is unknown) is drawn
from its own fields, with what is unknown said.

- ``read``: ``describe(card)``, the card as a ``Diagram`` (plain data: words and counts);
- ``draw``: ``render(diagram)``, the SVG;
- here: ``diagram_svg(card)`` (both, a pure function: the same card gives the same bytes)
  and ``summary(card)``, the diagram in words for the compare page.
"""

from __future__ import annotations

from archdb.schema import Card

from .draw import render
from .read import MIXER_WORDS, STACK_ROLES, Diagram, StackView, describe, mixer_words

__all__ = ["MIXER_WORDS", "STACK_ROLES", "Diagram", "describe", "diagram_svg", "render", "summary"]


def diagram_svg(card: Card) -> str:
    """The card's architecture as an SVG document (a str)."""
    return render(describe(card))


# --- the diagram in words (the compare page) ---------------------------------------------


def summary(card: Card) -> dict[str, str]:
    """The diagram in words, one line a part, the same parts for every card (the compare
    page marks those that differ between models)."""
    diagram = describe(card)

    def each_stack(words) -> str:
        if len(diagram.stacks) == 1:
            return words(diagram.stacks[0])
        return "; ".join(f"{s.role.name}: {words(s)}" for s in diagram.stacks) or "unknown"

    def parts(*roles: str) -> str:
        found = []
        for stack in diagram.stacks:
            for layer in stack.types:
                for part in layer.shape.sublayers:
                    if part.role in roles and part.words not in found:
                        found.append(part.words)
        return " | ".join(found) or "none"

    def norms(stack: StackView) -> str:
        return " | ".join(
            sorted({f"{t.shape.norms.name} {t.shape.norms.placement}" for t in stack.types})
        )

    return {
        "layers": each_stack(
            lambda s: ", ".join(f"{mixer_words(k)} × {n}" for k, n in s.kind_counts())
        ),
        "MLP by layer": each_stack(lambda s: ", ".join(f"{w} × {n}" for w, n in s.mlp_counts())),
        "norm": each_stack(norms),
        "attention": parts("attention", "cross"),
        "other token mixers": parts("mixer"),
        "MLP": parts("mlp", "moe"),
        "blocks": "parallel"
        if any(t.shape.parallel for s in diagram.stacks for t in s.types)
        else "serial",
        "embedding": "; ".join(diagram.embedding.lines),
        "head": "; ".join(diagram.head.lines),
    }
