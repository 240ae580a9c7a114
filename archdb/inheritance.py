"""A card started from another (``archdb new --like X``) says what it took from X and
on whose word: every value the contributor did not give is listed, and rests on X's own
sources, copied into the new card with ``inherited_from: X`` and supporting only those
values, never on the new card's source.

Plain data in, plain data out (no torch, no pandas): the CLI prints the list.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from archdb.fields import get_path
from archdb.schema import Card, covered, sourced_paths

ROOT = "architecture"  # what --like copies
NOTE_PREFIX = "Inherited from {card}: "
NOTE_LIMIT = 10_000  # characters: the schema's Text bound


@dataclass(frozen=True)
class Inherited:
    """One value the new card took from the other card, and the sources it rests on."""

    path: str
    value: Any
    sources: tuple[str, ...]  # titles of the other card's sources that support it


def inherited_values(parent: Card, data: dict[str, Any], given: Collection[str]) -> list[str]:
    """The paths of ``parent``'s sourced values that the new card (``data``) keeps
    unchanged, that the contributor did not give (``given``: --set, answered prompts) and
    that no source of the new card's own supports."""
    own = {
        path
        for source in data["sources"]
        if not source.get("inherited_from")
        for path in source.get("supports") or ()
    }
    return [
        path
        for path in sourced_paths(parent)
        if path not in given
        and not covered(path, own)
        and get_path(data, path) is not None
        and get_path(data, path) == get_path(parent, path)
    ]


def inherit(parent: Card, data: dict[str, Any], given: Collection[str]) -> list[Inherited]:
    """Record in ``data`` what it inherits from ``parent``: each of the parent's sources
    that supports an inherited value, copied with ``inherited_from`` and supports cut to
    those values; the parent's notes on values kept unchanged (a null's reason), marked.
    Returns every inherited value with the titles of its sources, in schema order."""
    paths = inherited_values(parent, data, given)
    universe = set(sourced_paths(parent)) | set(given)
    titles: dict[str, list[str]] = {path: [] for path in paths}
    for source in parent.sources:
        supported = set(source.supports)
        mine = {path for path in paths if covered(path, supported)}
        if not mine:
            continue
        entry = source.model_dump(mode="python", exclude_defaults=True)
        # the config the parent's source declares routes the parent, not this model
        entry.pop("model_type", None)
        entry.pop("model_class", None)
        entry["supports"] = compress(mine, universe)
        entry.setdefault("inherited_from", parent.id)  # a source the parent inherited: its card
        data["sources"].append(entry)
        for path in sorted(mine):
            titles[path].append(source.title)
    _copy_notes(parent, data, given)
    return [Inherited(p, get_path(parent, p), tuple(titles[p])) for p in paths]


def compress(paths: Iterable[str], universe: Collection[str], prefix: str = ROOT) -> list[str]:
    """``paths`` as few dotted prefixes as cover them and nothing else of ``universe``
    (the card's sourced values and the ones the contributor gave): a group whose every
    value is inherited is written once (``architecture.norm``)."""
    chosen = set(paths)
    under = [u for u in {*universe, *chosen} if u == prefix or u.startswith(prefix + ".")]
    if not under:
        return []
    if all(u in chosen for u in under):
        return [prefix]
    children = sorted(
        {f"{prefix}.{u[len(prefix) + 1 :].split('.')[0]}" for u in under if u != prefix}
    )
    return [p for child in children for p in compress(chosen, universe, child)]


def default_supports(given: Iterable[str], universe: Collection[str]) -> list[str]:
    """What the new card's own source supports when its flags do not say: the architecture
    values the contributor gave, grouped as ``compress`` does (as a card of its own
    defaults to ``architecture``; a lineage or a training fact is listed explicitly)."""
    arch = {p for p in given if p.startswith(ROOT + ".")}
    return compress(arch, {*universe, *arch}) if arch else []


def _copy_notes(parent: Card, data: dict[str, Any], given: Collection[str]) -> None:
    """The parent's notes on architecture values the new card keeps as they were (why a
    value is null, where sources disagree), marked as the parent's: every note but those
    on a value the contributor gave or on a group holding one."""
    notes = data.setdefault("notes", {})
    prefix = NOTE_PREFIX.format(card=parent.id)
    for path, text in parent.notes.items():
        if not path.startswith(ROOT) or path in notes or covered(path, set(given)):
            continue
        if any(g.startswith(path + ".") for g in given):
            continue
        notes[path] = prefix + text[: NOTE_LIMIT - len(prefix)]
