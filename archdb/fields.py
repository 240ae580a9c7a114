"""Schema facts in one place: the roles a card field plays, and one walk over the schema.

A field's role is metadata on its schema annotation (``Annotated[Width | None,
Unknown()]``), so what null means, whether the builder needs the value, what a build
computes with when an output-only choice is not recorded, and whether ``archdb new``
asks for it are stated where the field is declared. The lists other layers need
(``UNKNOWN_WHEN_NULL``, the builder's ``REQUIRED``, ``FUNCTION_DEFAULTS``, the prompted
fields, the writer's skeleton, key orders, the catalogue header) are generated from it by
:func:`schema_fields`, the one walker over pydantic annotations.

This module imports nothing from archdb: the schema imports it.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

# --- roles ------------------------------------------------------------------------


@dataclass(frozen=True)
class Unknown:
    """Null means "not published or not verified", and a card's note must say why.

    ``build``: the builder cannot assemble a model without the value (BuildError names
    it), unless ``fill_unknowns`` states an assumption for it."""

    build: bool = True


@dataclass(frozen=True)
class OutputOnly:
    """A choice that changes a model's outputs but no count: null means "not recorded",
    and a build computes with ``default`` for the reason ``why`` (listed per card as an
    assumption where ``applies`` says the choice is in play)."""

    default: object
    why: str
    applies: Callable[[Any], bool] | None = None  # Architecture -> bool; None: always

    def in_play(self, arch: Any) -> bool:
        return self.applies is None or self.applies(arch)


@dataclass(frozen=True)
class Switch:
    """A mechanism switched on by true, or by its value (a clamp's floor); null means off,
    as false does ("null for none"): false records nothing more than null, and a null is
    a recorded choice, never a value left out."""


@dataclass(frozen=True)
class Asked:
    """``archdb new`` prompts for this field (as it does for every Unknown one) when
    ``applies`` to the answers so far (a plain dict card): RoPE's base only for RoPE
    cards, a window only for patterns with local layers."""

    applies: Callable[[dict[str, Any]], bool] | None = None
    required: bool = False  # asked until answered (the card's identity)
    after: str | None = None  # a sibling field whose answer it depends on, asked first

    def in_play(self, card: dict[str, Any]) -> bool:
        return self.applies is None or self.applies(card)


@dataclass(frozen=True)
class Usual:
    """The value a new card starts from for a field every card states (kind: decoder-only)."""

    value: object


# --- dotted paths -------------------------------------------------------------------


def get_path(value: Any, path: str) -> Any:
    """The value at a dotted path of a model or of nested mappings; None when any step is
    missing or null."""
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else getattr(value, part, None)
        if value is None:
            return None
    return value


def leaf_values(model: BaseModel, prefix: str = "", into: dict | None = None) -> dict[str, Any]:
    """Every field value of a model under its dotted path, nested models walked once (40%
    faster than a getattr chain per path); the fields of an absent (null) model have no
    entry."""
    leaves: dict[str, Any] = {} if into is None else into
    for name, value in model.__dict__.items():
        if isinstance(value, BaseModel):
            leaf_values(value, f"{prefix}{name}.", leaves)
        else:
            leaves[f"{prefix}{name}"] = value
    return leaves


def set_path(
    data: dict[str, Any], path: str, value: Any, make: Callable[[str], dict] | None = None
) -> None:
    """Set a dotted path in nested dicts; a missing step becomes ``make(its path)`` (an
    empty dict by default)."""
    node = data
    *parents, leaf = path.split(".")
    for depth, part in enumerate(parents):
        if not isinstance(node.get(part), dict):
            node[part] = make(".".join(parents[: depth + 1])) if make else {}
        node = node[part]
    node[leaf] = value


# --- the walk ---------------------------------------------------------------------


@dataclass(frozen=True)
class FieldFact:
    """One field of a schema model, reached by a dotted path."""

    path: str
    info: FieldInfo
    inner: Any  # the type without None, list or Annotated
    is_list: bool
    model: type[BaseModel] | None  # the sub-model type, when the field holds one
    required: bool  # present in every card (no default), possibly null
    nullable: bool

    def role(self, kind: type) -> Any:
        return next((m for m in self.info.metadata if isinstance(m, kind)), None)

    @property
    def choices(self) -> tuple[str, ...]:
        if isinstance(self.inner, type) and issubclass(self.inner, Enum):
            return tuple(str(m.value) for m in self.inner)
        return ()


def unwrap(annotation: Any) -> tuple[Any, bool, bool]:
    """The type inside an annotation, whether it is a list of it, and whether it is nullable."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return unwrap(typing.get_args(annotation)[0])
    if origin is list:
        return unwrap(typing.get_args(annotation)[0])[0], True, False
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(annotation))
        if len(args) != 1:
            return annotation, False, nullable
        inner, is_list, inner_nullable = unwrap(args[0])
        return inner, is_list, nullable or inner_nullable
    return annotation, False, False


def _fact(path: str, info: FieldInfo) -> FieldFact:
    inner, is_list, nullable = unwrap(info.annotation)
    model = inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None
    return FieldFact(path, info, inner, is_list, model, info.is_required(), nullable)


def walk(model: type[BaseModel], prefix: str = "") -> Iterator[FieldFact]:
    """Every field of ``model`` in declaration order, each sub-model's fields right after
    the field that holds it (lists of models are leaves: sources)."""
    for name, info in model.model_fields.items():
        fact = _fact(f"{prefix}{name}", info)
        yield fact
        if fact.model is not None and not fact.is_list:
            yield from walk(fact.model, fact.path + ".")


@cache
def schema_fields(root: type[BaseModel]) -> tuple[FieldFact, ...]:
    return tuple(walk(root))


def field_at(root: type[BaseModel], path: str) -> FieldFact:
    """The field at a dotted path (KeyError naming the first unknown part)."""
    model: type[BaseModel] | None = root
    fact = None
    done = ""
    for part in path.split("."):
        if model is None or part not in model.model_fields:
            raise KeyError(f"{done + part!r} is not a field")
        fact = _fact(done + part, model.model_fields[part])
        model, done = fact.model, f"{done}{part}."
    assert fact is not None
    return fact


def with_role(root: type[BaseModel], kind: type) -> tuple[tuple[str, Any], ...]:
    """(path, role) of every field carrying a role of ``kind``, in schema order."""
    return tuple((f.path, role) for f in schema_fields(root) if (role := f.role(kind)) is not None)


def required_skeleton(model: type[BaseModel]) -> dict[str, Any]:
    """Every field without a default, null; a required, non-nullable sub-model expanded;
    fields with a value every card states by default (kind, variant) at that value."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        fact = _fact(name, info)
        if not fact.required:
            continue
        if fact.model is not None and not fact.nullable and not fact.is_list:
            out[name] = required_skeleton(fact.model)
        else:
            out[name] = _stated_default(info)
    return out


def _stated_default(info: FieldInfo) -> Any:
    usual = next((m for m in info.metadata if isinstance(m, Usual)), None)
    if usual is None:
        return None
    value = usual.value.value if isinstance(usual.value, Enum) else usual.value
    return (
        [v.value if isinstance(v, Enum) else v for v in value]
        if isinstance(value, (list, tuple))
        else value
    )


def prompted(root: type[BaseModel]) -> tuple[tuple[str, Asked], ...]:
    """(path, how) of every field ``archdb new`` asks for, in schema order: the Asked ones
    and every Unknown one."""
    out: list[tuple[str, Asked]] = []
    for f in schema_fields(root):
        asked = f.role(Asked)
        if asked is None and f.role(Unknown) is not None:
            asked = Asked()
        if asked is not None:
            out.append((f.path, asked))
    for path, asked in [item for item in out if item[1].after]:
        out.remove((path, asked))
        sibling = f"{path.rpartition('.')[0]}.{asked.after}".lstrip(".")
        where = next(i for i, (p, _) in enumerate(out) if p == sibling)
        out.insert(where + 1, (path, asked))
    return tuple(out)
