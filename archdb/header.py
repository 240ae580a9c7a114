"""The catalogue's header, generated from the schema: the readable schema at the top of
data/models.yaml (field tree, what null means, the output-only choices and their
defaults, the vocabularies, the size bounds). ``archdb schema`` rewrites it; a test
fails when the committed header differs from what the schema generates.
"""

from __future__ import annotations

import textwrap
from enum import Enum

from pydantic import BaseModel

from archdb.fields import OutputOnly, schema_fields, unwrap, with_role
from archdb.schema import (
    MAX_CONTEXT,
    MAX_DEPTH,
    MAX_PARAMS,
    MAX_TOKENS,
    MAX_VOCAB,
    MAX_WIDTH,
    UNKNOWN_WHEN_NULL,
    Card,
)

WIDTH = 92  # characters of a header line, "# " included

# Prose the schema cannot generate: the conventions that keep numbers comparable (each
# field's own convention is its description: `archdb fields`).
CONVENTIONS = (
    "d_ff is the width the down-projection reads (one branch of a gated unit, as in "
    "released configs' intermediate_size; one routed expert for MoE). vocab_size is the "
    "released embedding's row count (padded). n_layers is the decoder (or only) stack; a "
    "layer_pattern entry is one layer's token mixer (or, in single-sublayer stacks such as "
    "Nemotron-H, one sublayer), tiled from layer 0, and a pattern as long as n_layers lists "
    "every layer. Attention fields describe the attention layers only; a recurrent mixer's "
    "sizes sit in mixers. A QK norm with parameters (per-head, per-head-untied, full) "
    "states its own qk_norm_type and qk_norm_affine, and parallel blocks state "
    "norm.shared_in_parallel: neither follows another field when null. "
    "Every architecture value must be covered by a source (a dotted "
    "path in its supports; a prefix covers its sub-fields). Derived ratios are never stored."
)


def catalogue_header() -> str:
    """The header text, every line a comment, ending with a newline."""
    lines = [
        "yaml-language-server: $schema=./models.schema.json",
        "",
        "archdb catalogue: one card per published model, sorted by id.",
        "",
        *_wrap(
            "This header is generated from archdb/schema.py by `archdb schema` (a test "
            "checks it); `archdb fields` describes every field. Card fields ({...} a group of "
            "fields, [...] a list, ? optional: the key may be left out; every other key is "
            "required, unknown keys are errors):"
        ),
        *_card_tree(),
        "",
        *_wrap(
            "Null on a core value means 'not published or not verified', and the card's "
            "notes must say why: " + ", ".join(UNKNOWN_WHEN_NULL) + " (and the window of "
            "local layers). On an optional feature (a soft-cap, a window, moe, a mixer) null "
            "means 'not used'."
        ),
        "",
        *_wrap(
            "Output-only choices change outputs but no count; null means 'not recorded', "
            "and a build computes with the default stated here:"
        ),
        *[
            line
            for path, role in with_role(Card, OutputOnly)
            for line in _wrap(
                f"{path.removeprefix('architecture.')}: {_value(role.default)} ({role.why})",
                indent="  ",
                hanging="    ",
            )
        ],
        "",
        "Vocabularies:",
        *[
            line
            for path, choices in _vocabularies()
            for line in _wrap(f"{path}: {' | '.join(choices)}", indent="  ", hanging="    ")
        ],
        "",
        *_wrap("Conventions: " + CONVENTIONS),
        "",
        *_wrap(
            "The file is UTF-8 without a byte-order mark, read as YAML 1.2 (plain values, no "
            "tags). Text is printable (no control characters; notes may span lines). Every "
            "size has an upper bound far above any real model "
            f"(d_model {MAX_WIDTH:,}, n_layers {MAX_DEPTH:,}, vocab_size {MAX_VOCAB:,}, "
            f"context {MAX_CONTEXT:,} tokens, {MAX_PARAMS:.0e} parameters, "
            f"{MAX_TOKENS:.0e} tokens): see archdb/schema.py. The full schema: "
            "data/models.schema.json."
        ),
    ]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


def _wrap(text: str, indent: str = "", hanging: str = "") -> list[str]:
    return textwrap.wrap(
        text,
        width=WIDTH - 2,
        initial_indent=indent,
        subsequent_indent=hanging or indent,
        break_on_hyphens=False,
        break_long_words=False,
    )


def _card_tree() -> list[str]:
    """The card's fields, a line (or a wrapped run of lines) per group: the top-level
    scalars, training, each of the architecture's groups, sources."""
    lines: list[str] = []
    scalars: list[str] = []
    for name, info in Card.model_fields.items():
        inner, is_list, _ = unwrap(info.annotation)
        label = name if info.is_required() else f"{name}?"
        if name == "architecture":
            lines += _wrap(", ".join(scalars), indent="  ", hanging="    ")
            scalars = []
            lines += _wrap("architecture {" + _tree(inner, groups=False) + ",", "  ", "    ")
            for group, group_info in inner.model_fields.items():
                held, _, _ = unwrap(group_info.annotation)
                if isinstance(held, type) and issubclass(held, BaseModel):
                    mark = "" if group_info.is_required() else "?"
                    lines += _wrap(f"{group}{mark} {{{_tree(held)}}},", "    ", "      ")
            lines[-1] = lines[-1].rstrip(",") + "}"
        elif isinstance(inner, type) and issubclass(inner, BaseModel):
            body = _tree(inner)
            scalars.append(f"{label} [{{{body}}}]" if is_list else f"{label} {{{body}}}")
        else:
            scalars.append(label)
    return lines + _wrap(", ".join(scalars), indent="  ", hanging="    ")


def _tree(model: type[BaseModel], groups: bool = True) -> str:
    """A model's fields as a brace list, sub-models nested: ``norm {type, ...}``."""
    parts = []
    for name, info in model.model_fields.items():
        inner, is_list, _ = unwrap(info.annotation)
        label = name if info.is_required() else f"{name}?"
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            if not groups:
                continue
            body = _tree(inner)
            label += f" [{{{body}}}]" if is_list else f" {{{body}}}"
        parts.append(label)
    return ", ".join(parts)


def _vocabularies() -> list[tuple[str, tuple[str, ...]]]:
    """Each enum-valued field (its shortest path) with its values, once per enum."""
    seen: dict[type, str] = {}
    for f in schema_fields(Card):
        if isinstance(f.inner, type) and issubclass(f.inner, Enum) and f.inner not in seen:
            seen[f.inner] = f.path.removeprefix("architecture.")
    return [(path, tuple(str(m.value) for m in enum)) for enum, path in seen.items()]


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(map(_value, value)) + "]"
    if isinstance(value, float) and 0 < value < 1e-3:
        return f"{value:.0e}".replace("e-0", "e-")  # 1e-6, as configs write it
    return str(value)


def split_header(text: str) -> tuple[str, str]:
    """The leading comment block (the header) and the rest of a catalogue's text."""
    end = 0
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        end += len(line)
    return text[:end], text[end:]
