"""The catalogue as a table: one row per card, its fields flattened, derived figures added.

This is the library's one way to tabulate the catalogue. ``card_row`` is plain Python (the
quick CLI commands use it without importing pandas, whose import alone takes ~0.5 s);
``catalogue_frame`` turns the same rows into a pandas DataFrame for the reports.

Column naming:

- A column with a dot is a card field, named by its dotted path exactly as in the card,
  its sources' ``supports`` and its ``notes``: ``architecture.norm.type``,
  ``training.z_loss``, ``architecture.mlp.moe.n_experts``. Enums are their string values;
  ``architecture.attention.layer_pattern`` is its kinds joined by commas
  (``"local,global"``); an absent sub-model (``moe``, ``latent``) gives null sub-fields.
  ``sources`` and ``notes`` are not tabulated.
- A column without a dot is derived, never stored in a card: ``year``, ``series``, the
  ratios, the analytic counts, and the categories the adoption trends count
  (``bias_scheme``, ``softcap_scheme``, ``layer_mix``, ...). ``DERIVED_COLUMNS`` lists them
  with their meaning.

Null means what it means in the card: unknown for a core value, "not used" for an
optional feature. Derived figures are null whenever an input is.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from archdb import cache
from archdb.columns import (
    COLUMNS_FILE,
    FORMULA_COUNTS,
    SIZE_BANDS,
    FieldSpec,
    Row,
    columns_json,
    size_band,
)
from archdb.fields import FieldFact, field_at, leaf_values, schema_fields
from archdb.schema import (
    CHANNEL_ONLY,
    RECURRENT_KINDS,
    Architecture,
    AttentionVariant,
    Card,
    OutputGate,
    PositionType,
    RopeScalingType,
    mirror_only_paths,
    sourced_paths,
)

if TYPE_CHECKING:
    import pandas as pd

# Card-level fields left out of the table: provenance, not data to tabulate.
_SKIPPED = frozenset({"sources", "notes"})

# Derived columns: name -> (Python type, meaning). The order here is the column order.
DERIVED_COLUMNS: dict[str, tuple[type, str]] = {
    "year": (int, "release year"),
    # Not the card's ``lineage`` (the card it descends from): a naming convention.
    "series": (str, "family slug without its trailing version: llama-2 -> llama"),
    "head_dim_effective": (int, "attention.head_dim, or d_model / n_heads"),
    "gated": (bool, "the MLP activation is a gated linear unit"),
    "moe": (bool, "the MLP is a mixture of experts"),
    "attention_family": (str, "mha, gqa, mqa, mla or linear"),
    "layer_mix": (
        str,
        "the distinct token mixers of the layer pattern (mlp and moe entries, which mix "
        "no tokens, left out; shared-global for weight-shared attention blocks, Zamba2; "
        "global|mamba2 for attention and Mamba-2 in parallel in one layer, Falcon-H1), "
        "sorted, joined by +",
    ),
    "bias_scheme": (str, "none, all, qkv-only or partial: which linear layers carry a bias"),
    "softcap_scheme": (str, "none, attention, final or attention+final logit soft-capping"),
    "z_loss_used": (bool, "training.z_loss > 0"),
    "dropout_used": (bool, "training.dropout > 0"),
    "weight_decay_used": (bool, "training.weight_decay > 0"),
    "mtp_used": (bool, "architecture.mtp.n_modules > 0: multi-token-prediction modules"),
    "token_mixers": (
        str,
        "attention-only (every token mixer is softmax or latent attention), hybrid "
        "(attention beside recurrent or linear mixers: "
        f"{', '.join(sorted(kind.value for kind in RECURRENT_KINDS))}; "
        "Zamba2's shared attention blocks count as attention) or attention-free",
    ),
    "sinks_used": (bool, "attention.sinks true (null: none)"),
    "output_gate_scheme": (str, "attention.output_gate, none when null"),
    "sparse_attention_used": (bool, "attention.sparse set: indexer top-k selection (DSA)"),
    "rope_scaling_scheme": (
        str,
        "position.rope_scaling.type; no-rope for a position scheme other than RoPE; null "
        "for a RoPE card without one: most cards predate the field and leave it unrecorded",
    ),
    "kv_sharing_used": (bool, "attention.kv_shared_layers > 0: cross-layer KV sharing"),
    "d_ff_ratio": (float, "d_ff / d_model (one branch of a gated unit; one expert of a MoE)"),
    "dense_d_ff_ratio": (
        float,
        "d_ff / d_model of the dense MLP layers: a dense model's d_ff_ratio, a MoE's "
        "mlp.moe.dense_d_ff / d_model (null when every layer is MoE)",
    ),
    "expert_d_ff_ratio": (float, "one routed expert's d_ff / d_model (null for a dense model)"),
    "aspect_ratio": (float, "d_model / n_layers"),
    "head_ratio": (float, "n_heads * head_dim / d_model"),
    "query_groups": (float, "query heads per key/value head"),
    "values_sourced": (int, "architecture values the card states (each cites a source)"),
    "values_mirror_only": (
        int,
        "of those, values whose only source is a mirror (a copy of an official file)",
    ),
    "params_exact": (int, "parameters, from the analytic formula"),
    "params_non_embedding": (int, "parameters outside the embedding and output matrices"),
    "params_active": (int, "parameters a token uses (MoE: active experts only)"),
    "active_ratio": (float, "params_active / params_exact: the share of parameters a token uses"),
    "size_band": (
        str,
        f"size band of params_exact: {', '.join(b for b, _, _ in SIZE_BANDS)} (experts included)",
    ),
    "params_mtp": (
        int,
        "parameters of the multi-token-prediction modules (architecture.mtp), left out of "
        "params_exact; the shared embedding and head not counted again; 0 when the card "
        "states none, null when not recorded",
    ),
    "params_with_mtp": (int, "params_exact + params_mtp: the main model with its MTP modules"),
    "kv_cache_bytes_per_token": (
        float,
        "KV-cache bytes per token of an 8,192-token sequence at 2 bytes per element "
        "(the cache of the whole sequence / 8,192; local layers cache only their window)",
    ),
    "flops_per_token": (
        float,
        "forward FLOPs per token at min(2048, context) tokens (2 per multiply-add), from "
        "the analytic formula",
    ),
    "flops_per_token_mtp": (
        float,
        "forward FLOPs per token of the MTP modules (each through the shared output head) "
        "at the same length, apart from flops_per_token",
    ),
    "norm_flops_share": (
        float,
        "share of those forward FLOPs spent in norms, QK norms included (analytic, by "
        "operator class)",
    ),
}

_ANALYTIC_KEYS = (
    *FORMULA_COUNTS,
    "d_ff_ratio",
    "aspect_ratio",
    "head_ratio",
    "query_groups",
)


# --- columns of the card's own fields ----------------------------------------------


def _column_type(fact: FieldFact) -> type | None:
    """The scalar Python type a field's column holds (lists and enums as text)."""
    inner = fact.inner
    if fact.is_list or (isinstance(inner, type) and issubclass(inner, Enum | str | dt.date)):
        return str
    return inner if inner in (bool, int, float) else None


def _field_columns(root: type[BaseModel]) -> dict[str, type]:
    """Every leaf field of the card by dotted path (sub-models walked), with its type."""
    columns: dict[str, type] = {}
    for fact in schema_fields(root):
        if fact.path.split(".", 1)[0] in _SKIPPED or (fact.model and not fact.is_list):
            continue
        if (leaf := _column_type(fact)) is not None:
            columns[fact.path] = leaf
    return columns


FIELD_COLUMNS: dict[str, type] = _field_columns(Card)
_FIELD_PATHS = tuple(FIELD_COLUMNS)
COLUMNS: dict[str, type] = {**FIELD_COLUMNS, **{k: t for k, (t, _) in DERIVED_COLUMNS.items()}}


def _scalar(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list):
        return ",".join(str(_scalar(v)) for v in value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


# --- derived columns ---------------------------------------------------------------

_VERSION_SUFFIX = re.compile(r"-v?\d+(?:\.\d+)*$")


def series(family: str) -> str:
    """A family slug without its trailing version: gpt-3 -> gpt, t5-v1.1 -> t5, t5 -> t5."""
    return _VERSION_SUFFIX.sub("", family) or family


def _bias_scheme(card: Card) -> str | None:
    b = card.architecture.bias
    flags = (b.qkv, b.attn_out, b.mlp)
    if None in flags:
        return None
    if not any(flags):
        return "none"
    if all(flags):
        return "all"
    return "qkv-only" if flags == (True, False, False) else "partial"


def _softcap_scheme(card: Card) -> str:
    attn = card.architecture.attention.logit_softcap is not None
    final = card.architecture.final_logit_softcap is not None
    return {(False, False): "none", (True, False): "attention", (False, True): "final"}.get(
        (attn, final), "attention+final"
    )


def _positive(value: float | None) -> bool | None:
    return None if value is None else value > 0


def _mtp_used(card: Card) -> bool | None:
    mtp = card.architecture.mtp
    return None if mtp is None else mtp.n_modules > 0


def _token_mixers(arch: Architecture) -> str:
    """attention-only, hybrid or attention-free: which token mixers the stack runs."""
    kinds = set(arch.attention.layer_pattern) - CHANNEL_ONLY
    linear = arch.attention.variant is AttentionVariant.LINEAR  # attention kinds mix linearly
    attends = arch.shared_blocks is not None or (not linear and any(k.attention for k in kinds))
    other = linear or any(k.recurrent for k in kinds)
    if attends:
        return "hybrid" if other else "attention-only"
    return "attention-free"


def _rope_scaling_scheme(arch: Architecture) -> str | None:
    """The RoPE scaling type; null where unrecorded. The schema reads a null rope_scaling as
    none, but cards written before the field leave it null on models that scale (Llama
    3.1's llama3, as its notes say): counted as none, they would read as a false "none"."""
    position = arch.position
    if position.type is None:
        return None
    if position.type is not PositionType.ROPE:
        return "no-rope"
    return None if position.rope_scaling is None else position.rope_scaling.type.value


def _analytic(card: Card, counts: bool, figures: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ratios of one card and, with ``counts``, its analytic counts (exact params, KV
    cache, FLOPs; ``figures`` when already known); without, those are null."""
    arch = card.architecture
    out: dict[str, Any] = dict.fromkeys(_COUNTED_KEYS)
    if counts:
        out.update(figures if figures is not None else counted_figures(card))
    moe = arch.mlp.moe
    exact, active = out.get("params_exact"), out.get("params_active")
    out.update(
        d_ff_ratio=arch.d_ff_ratio,
        dense_d_ff_ratio=arch.d_ff_ratio if moe is None else _ratio(moe.dense_d_ff, arch.d_model),
        expert_d_ff_ratio=None if moe is None else arch.d_ff_ratio,
        aspect_ratio=arch.aspect_ratio,
        head_ratio=arch.head_ratio,
        query_groups=arch.query_groups,
        active_ratio=active / exact if exact and active is not None else None,
        size_band=size_band(exact),
    )
    return out


def _ratio(numerator: int | None, denominator: int | None) -> float | None:
    return None if numerator is None or not denominator else numerator / denominator


_COUNTED_KEYS = (*_ANALYTIC_KEYS, "norm_flops_share")


def counted_figures(card: Card) -> dict[str, Any]:
    """The card's analytic counts (the formula: about half a millisecond a card)."""
    from archdb.measure.analytic import derived_figures  # not needed by counts=False

    computed = derived_figures(card)
    return {k: computed.get(k) for k in _COUNTED_KEYS}


def _derived(card: Card, counts: bool, figures: dict[str, Any] | None = None) -> Row:
    arch = card.architecture
    # a parallel layer (Falcon-H1's global+mamba2) as global|mamba2: apart from a stack
    # of serial global and mamba2 layers (Bamba), which joins to global+mamba2
    mixers = {
        k.value.replace("+", "|") for k in arch.attention.layer_pattern if k not in CHANNEL_ONLY
    }
    if arch.shared_blocks is not None:  # attention outside the pattern (Zamba2)
        mixers.add("shared-global")
    kinds = sorted(mixers)
    return {
        "year": card.year,
        "series": series(card.family),
        "head_dim_effective": arch.head_dim_effective,
        "gated": arch.gated,
        "moe": arch.mlp.moe is not None,
        "attention_family": arch.attention_family,
        "layer_mix": "+".join(kinds),
        "bias_scheme": _bias_scheme(card),
        "softcap_scheme": _softcap_scheme(card),
        "z_loss_used": _positive(card.training.z_loss),
        "values_sourced": len(sourced_paths(card)),
        "values_mirror_only": len(mirror_only_paths(card)),
        "dropout_used": _positive(card.training.dropout),
        "weight_decay_used": _positive(card.training.weight_decay),
        "mtp_used": _mtp_used(card),
        "token_mixers": _token_mixers(arch),
        "sinks_used": bool(arch.attention.sinks),
        "output_gate_scheme": _scalar(arch.attention.output_gate) or "none",
        "sparse_attention_used": arch.attention.sparse is not None,
        "rope_scaling_scheme": _rope_scaling_scheme(arch),
        "kv_sharing_used": bool(arch.attention.kv_shared_layers),
        **_analytic(card, counts, figures),
    }


# Derived columns whose values come from a fixed vocabulary.
_DERIVED_CHOICES: dict[str, tuple[str, ...]] = {
    "attention_family": ("mha", "gqa", "mqa", "mla", "linear"),
    "bias_scheme": ("none", "all", "qkv-only", "partial"),
    "softcap_scheme": ("none", "attention", "final", "attention+final"),
    "token_mixers": ("attention-only", "hybrid", "attention-free"),
    "output_gate_scheme": ("none", *(g.value for g in OutputGate)),
    "rope_scaling_scheme": ("no-rope", *(t.value for t in RopeScalingType)),
}


def _spec_for_card_path(path: str, scalar: type) -> FieldSpec:
    fact = field_at(Card, path)
    info, inner, is_list, choices = fact.info, fact.inner, fact.is_list, fact.choices
    if is_list:
        kind = "list"
    elif choices:
        kind = "enum"
    elif inner is dt.date:
        kind = "date"
    else:
        kind = scalar.__name__
    return FieldSpec(path, kind, choices, info.description or "")


def column_table() -> list[FieldSpec]:
    """Every queryable column, in table order, as the schema defines it today: what
    ``archdb schema`` writes to ``archdb/columns.json`` for ``archdb.columns.fields``."""
    specs = {p: _spec_for_card_path(p, t) for p, t in FIELD_COLUMNS.items()}
    for name, (scalar, meaning) in DERIVED_COLUMNS.items():
        choices = _DERIVED_CHOICES.get(name, ())
        kind = "enum" if choices else scalar.__name__
        specs[name] = FieldSpec(name, kind, choices, meaning, derived=True)
    return list(specs.values())


# --- the table ---------------------------------------------------------------------


def card_row(card: Card, counts: bool = True, figures: dict[str, Any] | None = None) -> Row:
    """One card as a flat row: its fields by dotted path, then the derived columns.

    ``counts=False`` skips the analytic formula (exact params, KV cache, FLOPs: about half
    a millisecond a card, leaving them null), for commands that only count choices, such as
    trends; ``figures`` gives those counts when they are already known.
    """
    leaves = leaf_values(card)
    row: Row = {path: _scalar(leaves.get(path)) for path in _FIELD_PATHS}
    derived = _derived(card, counts, figures)
    row.update((k, derived[k]) for k in DERIVED_COLUMNS)
    return row


def catalogue_rows(cards: Iterable[Card], counts: bool = True) -> list[Row]:
    """The cards' rows; their analytic counts come from the figures cache (archdb.cache)
    where an identical architecture was counted by the same code before."""
    if not counts:
        return [card_row(card, False) for card in cards]
    cards = list(cards)
    figures = cache.looked_up(
        lambda: cache.read_figures(frozenset(_COUNTED_KEYS)),
        cache.write_figures,
        ((cache.figures_key(card.architecture), card) for card in cards),
        counted_figures,
    )
    return [card_row(card, True, f) for card, f in zip(cards, figures, strict=True)]


_DTYPES = {bool: "boolean", int: "Int64", float: "Float64", str: "string"}


def catalogue_frame(catalogue: Iterable[Card]) -> pd.DataFrame:
    """The catalogue (a Catalogue or any cards) as a DataFrame: one row per card, in
    catalogue order, indexed by id.

    Columns have nullable dtypes fixed by the schema (Int64, Float64, boolean, string),
    so a column keeps its type whatever the catalogue holds, and null is always pd.NA.
    """
    return frame_from_rows(catalogue_rows(catalogue))


def frame_from_rows(rows: list[Row]) -> pd.DataFrame:
    """The DataFrame of rows made by ``card_row`` (for callers that already have them)."""
    import pandas as pd

    data = {
        name: pd.array([row[name] for row in rows], dtype=_DTYPES[kind])
        for name, kind in COLUMNS.items()
    }
    frame = pd.DataFrame(data)
    return frame.set_index(pd.Index(frame["id"], name="card"))


def write_column_file() -> None:
    """Regenerate ``archdb/columns.json`` from the schema (after a schema change):
    python -c 'from archdb.table import write_column_file; write_column_file()'"""
    COLUMNS_FILE.write_text(columns_json(column_table()), encoding="utf-8")
