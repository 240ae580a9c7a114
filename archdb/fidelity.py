"""How far a card's build is verified against a reference implementation (transformers).

Three levels, from strongest:

- ``logit-exact``: the card's transformers family is one whose tiny random checkpoints
  archdb loads and reproduces to ``LOGIT_TOLERANCE`` relative logit error (its family
  spec's ``logit_error``, measured by tests/test_fidelity.py), and the card records every
  choice that changes outputs but not counts (``FUNCTION_FIELDS``, and the family's own
  ``function_fields``), so its build computes the released function;
- ``count-exact``: transformers' family code builds the card with archdb's exact
  parameter count (tests/test_params_vs_hf.py), but outputs are not verified for it;
- ``not comparable``: no transformers family represents the card, with the reason.

Pure Python, no torch or transformers: ``archdb show`` prints it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import astuple, dataclass

from archdb.fields import OutputOnly, Switch, field_at
from archdb.schema import Activation, Card, PositionType, RopeScalingType, get_path

LOGIT_TOLERANCE = 1e-5  # max |archdb - transformers| / max |transformers| over the logits

# Card fields that change outputs but not counts; null means "not recorded"
FUNCTION_FIELDS = (
    "architecture.norm.eps",
    "architecture.norm.unit_offset",
    "architecture.embedding_multiplier",
    "architecture.logit_scale",
)


@dataclass(frozen=True)
class Fidelity:
    level: str  # "logit-exact", "count-exact", "not comparable"
    why: str

    def __str__(self) -> str:
        return f"{self.level} ({self.why})" if self.why else self.level


def function_fields(card: Card, model_type: str | None = None) -> list[str]:
    """The output-changing fields this card needs recorded (RoPE and GELU where used)."""
    from archdb_hf.families.registry import SPECS

    arch = card.architecture
    spec = SPECS.get(model_type or "")
    own = spec.function_fields if spec is not None else ()
    # a family's router fields bind its MoE cards only, and an output-only choice the
    # cards where it is in play (Llama 4's QK norm in the rotating layers only: Scout's)
    fields = list(FUNCTION_FIELDS) + [p for p in own if _in_play(card, p)]
    if arch.position.type is PositionType.ROPE:
        fields.append("architecture.position.rope_layout")
    if arch.position.type is PositionType.SINUSOIDAL:
        fields.append("architecture.position.sinusoid_layout")
    if arch.mlp.activation in (Activation.GELU, Activation.GEGLU):
        fields.append("architecture.mlp.gelu_approximation")
    if arch.mlp.moe is not None:
        fields.append("architecture.mlp.moe.normalize_top_k")
    if arch.mlp.activation is Activation.CLAMPED_SWIGLU:
        fields += ["architecture.mlp.swiglu_limit", "architecture.mlp.swiglu_alpha"]
    if arch.mlp.activation is Activation.CLIPPED_SWIGLU:
        fields.append("architecture.mlp.swiglu_limit")
    if arch.mlp.activation is Activation.GEGELU:
        fields.append("architecture.mlp.gegelu_limit")
    scaling = arch.position.rope_scaling
    if scaling is not None and scaling.type is RopeScalingType.YARN:
        fields.append("architecture.position.rope_scaling.truncate")
    return fields


def _switch(path: str) -> bool:
    """A field whose null is a recorded "off" (fields.Switch), not a value left out."""
    return field_at(Card, path).role(Switch) is not None


def _in_play(card: Card, path: str) -> bool:
    if path.startswith("architecture.mlp.moe.") and card.architecture.mlp.moe is None:
        return False
    role = field_at(Card, path).role(OutputOnly)
    return role is None or role.in_play(card.architecture)


def fidelity(card: Card) -> Fidelity:
    """Whether the card's build is verified against transformers, and how."""
    return fidelities([card])[card.id]


def fidelities(cards: Iterable[Card]) -> dict[str, Fidelity]:
    """Each card's fidelity by id, from the cache (archdb.cache) where the same card was
    judged by the same code before: judging imports the family specs, which the query
    commands otherwise never load."""
    from archdb import cache

    cards = list(cards)
    entries = cache.looked_up(
        cache.read_fidelity,
        cache.write_fidelity,
        ((cache.figures_key(card), card) for card in cards),
        lambda card: list(astuple(_judged(card))),
    )
    return {card.id: Fidelity(*entry) for card, entry in zip(cards, entries, strict=True)}


def _judged(card: Card) -> Fidelity:
    from archdb.plan.layout import fill_unknowns
    from archdb_hf.families.registry import SPECS, model_type_of
    from archdb_hf.reference import NotRepresentable, convert, round_trip_losses

    model_type = model_type_of(card)
    spec = SPECS.get(model_type or "")
    if spec is None or spec.write is None:
        return Fidelity("not comparable", "no transformers family implements this card")
    try:  # writing the family's config (for the round trip, where it imports) is the test
        if spec.imports:
            lost = round_trip_losses(card.architecture, model_type)
        else:
            lost = set()
            convert(fill_unknowns(card.architecture)[0], model_type)
    except NotRepresentable as exc:
        return Fidelity("not comparable", f"transformers' {model_type} cannot build it: {exc}")
    if spec.logit_error is None:
        why = f": {spec.unverified}" if spec.unverified else " for this family"
        return Fidelity("count-exact", f"{model_type}: outputs not verified{why}")
    nulls = [p for p in function_fields(card, model_type) if get_path(card, p) is None]
    missing = [p for p in nulls if not _switch(p)]
    if missing:
        shown = ", ".join(p.removeprefix("architecture.") for p in missing)
        return Fidelity("count-exact", f"{model_type} is logit-exact; card lacks {shown}")
    if nulls:  # a switch's null is off: the family's code has the mechanism, the card's not
        shown = ", ".join(p.removeprefix("architecture.") for p in nulls)
        why = f"transformers' {model_type} always applies {shown}; the card's model does not"
        return Fidelity("count-exact", why)
    if lost:  # the reference would compute another function than the card's
        shown = ", ".join(sorted(lost))
        return Fidelity("count-exact", f"{model_type}: the config written for it loses {shown}")
    return Fidelity("logit-exact", f"{model_type}, relative error < {LOGIT_TOLERANCE:g}")
