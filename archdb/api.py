"""The Python API: build a card into a model, and its exact parameters, FLOPs and KV cache.

Every function takes a Card, or a card id or family name (a family means its largest
published model) resolved in ``catalogue`` (a Catalogue or a path; default the shipped
one). Only ``build`` imports torch.

>>> import archdb
>>> archdb.params("gpt-3-175b").total
174604259328
>>> archdb.flops("gpt-3-175b", seq_len=2048).seq_len
2048
>>> archdb.cache_bytes("mistral-7b", context=8192).per_token
65536.0
>>> moe = archdb.trends("moe")  # family-weighted unless weight="card"
>>> moe["weighting"], moe["values"][0]["value"]
('family', 'dense')
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from archdb import conventions as cv
from archdb.catalogue import Catalogue, load_catalogue
from archdb.errors import ArgumentError, UsageError
from archdb.measure.analytic import (
    CacheSize,
    FlopCount,
    ParamCount,
    default_seq_len,
    plan_cache_size,
    plan_flop_count,
    plan_param_count,
)
from archdb.plan import make_plan
from archdb.plan.layout import BuildError, fill_unknowns
from archdb.problems import printable
from archdb.schema import Architecture, Card

if TYPE_CHECKING:
    import torch
    from torch import nn

Size = Literal["toy", "full"]
CardLike = Card | str


# Documented bounds, checked before anything is allocated.
MAX_TOY_SEQ_LEN = 1 << 16  # a toy's context (its masks and RoPE tables grow with it)
MAX_TOKENS = 1 << 30  # lengths of the analytic figures (flops, cache_bytes)
MAX_BYTES_PER_ELEMENT = 64  # a cache element's bytes (float64 is 8; more is a mistake)


def _whole(name: str, value: object, bound: int) -> int:
    """A positive whole number up to ``bound``, or ArgumentError naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(
            f"{name} must be a whole number, got {type(value).__name__} {value!r:.40}"
        )
    if not 1 <= value <= bound:
        raise ArgumentError(f"{name} must be from 1 to {bound:,}, got {value:,}")
    return value


def _positive_real(name: str, value: object, bound: float) -> float:
    """A finite number above 0 and up to ``bound``, or ArgumentError naming the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(f"{name} must be a number, got {type(value).__name__} {value!r:.40}")
    if isinstance(value, int) and value > bound:  # before float(): a 400-digit int overflows
        raise ArgumentError(f"{name} must be a finite number above 0 and up to {bound}")
    if not math.isfinite(value) or not 0 < value <= bound:
        raise ArgumentError(
            f"{name} must be a finite number above 0 and up to {bound}, got {value!r:.40}"
        )
    return float(value)


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be True or False, got {type(value).__name__}")
    return value


def _strings(name: str, value: object, example: str) -> list[str]:
    """One string or an iterable of them (None: none), or ArgumentError naming ``name``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Iterable) or isinstance(value, (bytes, dict)):
        raise ArgumentError(f"{name} takes strings ({example}), got {type(value).__name__}")
    items = list(value)
    for item in items:
        if not isinstance(item, str):
            raise ArgumentError(f"{name} takes strings ({example}), got {item!r:.40}")
    return items


def _catalogue(catalogue: object) -> Catalogue:
    """``catalogue`` as a Catalogue: itself, loaded from a path, or the default one."""
    if isinstance(catalogue, Catalogue):
        return catalogue
    if catalogue is not None and not isinstance(catalogue, (str, os.PathLike)):
        raise ArgumentError(
            f"catalogue must be a Catalogue or a path, got {type(catalogue).__name__}"
        )
    return load_catalogue(catalogue)


def _device(device: object) -> None:
    """A device torch knows and this machine has ('cuda' without a GPU is refused here,
    not deep inside the build), checked with a tensor of no elements."""
    import torch

    if not isinstance(device, (str, torch.device)):
        raise ArgumentError(
            f"device must be a str ('cpu', 'cuda:0', 'meta') or a torch.device, got "
            f"{type(device).__name__}"
        )
    try:
        torch.empty(0, device=device)
    except Exception as exc:  # torch raises RuntimeError, AssertionError, NotImplementedError
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
        raise ArgumentError(
            f"device {str(device)!r:.60} cannot be used here: {printable(reason)}"
        ) from None


def card(card_or_id: CardLike, catalogue: Catalogue | Path | str | None = None) -> Card:
    """The card itself, or the card (or family's largest card) of that name."""
    if isinstance(card_or_id, Card):
        return card_or_id
    if not isinstance(card_or_id, str):
        raise ArgumentError(
            f"card_or_id must be a Card or a card id or family name (str), got "
            f"{type(card_or_id).__name__}"
        )
    return _catalogue(catalogue).resolve(card_or_id)


def architecture(
    card_or_id: CardLike,
    size: Size = "full",
    *,
    seq_len: int | None = None,
    catalogue: Catalogue | Path | str | None = None,
) -> Architecture:
    """The architecture a build uses: the card's (unknown choices filled), or its toy's."""
    from archdb.builder.shrink import shrink

    if seq_len is not None:
        _whole("seq_len", seq_len, MAX_TOY_SEQ_LEN)
    arch, _ = fill_unknowns(card(card_or_id, catalogue).architecture)
    if size == "toy":
        return shrink(arch, seq_len=seq_len).arch
    if size != "full":
        raise BuildError(f"size must be 'toy' or 'full', got {size!r}")
    if seq_len is not None:
        raise BuildError(
            "seq_len sets a toy's context; a full-size model keeps the card's context_length"
        )
    return arch


def build(
    card_or_id: CardLike,
    size: Size = "toy",
    *,
    seq_len: int | None = None,
    catalogue: Catalogue | Path | str | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    weights: Path | str | None = None,
) -> nn.Module:
    """The card's model: forward(tokens [batch, seq]) -> logits [batch, seq, vocab].

    ``size="toy"``: the toy rule's CPU-sized model (``archdb.builder.shrink``), with a
    context of ``seq_len`` tokens (default 64; windows and chunks keep their share of it).
    ``size="full"``: the published size, on the meta device unless ``device`` says
    otherwise (shapes without memory: a 405B model takes milliseconds, not 800 GB).
    Encoder-decoders take the same tokens as source and target unless given both.
    Parameters are randomly initialised, or with ``weights`` (a transformers safetensors
    checkpoint directory, ``size="full"`` only) loaded by ``archdb_hf.weights.load_weights``:
    every tensor filled, or a WeightsError naming the one that does not fit. The model
    then lives on ``device`` (default CPU) and ``model.archdb_loaded`` says what was read.
    """
    from archdb.builder.model import build_model

    if dtype is not None:
        import torch

        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ArgumentError(
                f"dtype must be a floating-point torch.dtype (torch.float16, ...), got "
                f"{type(dtype).__name__} {dtype!r:.40}"
            )
    if device is not None:
        _device(device)
    if weights is not None and not isinstance(weights, (str, os.PathLike)):
        raise ArgumentError(
            f"weights must be a checkpoint directory (str or Path), got {type(weights).__name__}"
        )
    if weights is not None and size != "full":
        raise BuildError("weights= loads a released checkpoint: build with size='full'")
    arch = architecture(card_or_id, size, seq_len=seq_len, catalogue=catalogue)
    checkpoint = None
    if weights is not None:  # a bad directory fails before a large model is allocated
        from archdb_hf.weights import Checkpoint

        checkpoint = Checkpoint(weights)
    if device is None and size == "full":
        device = "meta" if weights is None else "cpu"
    model = build_model(arch, device=device)
    if dtype is not None:
        model = model.to(dtype)
    if checkpoint is not None:
        from archdb_hf.weights import load_weights

        model.archdb_loaded = load_weights(model, checkpoint)
    return model


def params(
    card_or_id: CardLike,
    size: Size = "full",
    *,
    seq_len: int | None = None,
    catalogue: Catalogue | Path | str | None = None,
) -> ParamCount:
    """Exact parameters (total, non-embedding, active, embedding) of the built model."""
    arch = architecture(card_or_id, size, seq_len=seq_len, catalogue=catalogue)
    return plan_param_count(make_plan(arch))


def flops(
    card_or_id: CardLike,
    size: Size = "full",
    *,
    seq_len: int | None = None,
    catalogue: Catalogue | Path | str | None = None,
) -> FlopCount:
    """Forward FLOPs of one sequence, by operator class (dense kernels and causal).

    Full size: at ``seq_len`` tokens (default min(2048, context)). Toy: at its context,
    ``seq_len`` (default 64), the length ``archdb build`` checks with fvcore.
    """
    if size == "toy":
        arch = architecture(card_or_id, "toy", seq_len=seq_len, catalogue=catalogue)
        length = arch.context_length
    else:
        if seq_len is not None:  # 0 is an error, not the default
            _whole("seq_len", seq_len, MAX_TOKENS)
        arch = architecture(card_or_id, size, catalogue=catalogue)
        length = default_seq_len(arch) if seq_len is None else seq_len
    return plan_flop_count(make_plan(arch), length)


def cache_bytes(
    card_or_id: CardLike,
    *,
    context: int = cv.DEFAULT_KV_CONTEXT,
    bytes_per_element: float = cv.DEFAULT_KV_DTYPE_BYTES,
    catalogue: Catalogue | Path | str | None = None,
) -> CacheSize:
    """K/V cache of one sequence of ``context`` tokens: ``.total`` and ``.per_token`` bytes."""
    _whole("context", context, MAX_TOKENS)
    _positive_real("bytes_per_element", bytes_per_element, MAX_BYTES_PER_ELEMENT)
    arch = architecture(card_or_id, "full", catalogue=catalogue)
    try:
        return plan_cache_size(make_plan(arch), context, bytes_per_element)
    except ValueError as exc:
        raise BuildError(str(exc)) from None


def trends(
    choice: str,
    *,
    weight: str = "family",
    since: int | None = None,
    until: int | None = None,
    where: Iterable[str] = (),
    kinds: Iterable[str] | None = None,
    band: bool = False,
    mlp: bool = False,
    catalogue: Catalogue | Path | str | None = None,
) -> dict[str, Any]:
    """What ``archdb trends CHOICE --json`` prints, as plain data.

    A choice (``norm-type``, ``moe``) or a categorical field gives its adoption by year:
    each value's shares with their 95% intervals, n families and n cards per year, first
    use, majority and consensus. A numeric field (``d_ff_ratio``, ``vocab_size``) gives
    its weighted spread by year, per group (``band``: size bands of exact parameters;
    ``mlp``: dense vs MoE, always for ``d_ff_ratio``). ``weight`` is ``family`` (each
    family weighs 1 a year, split among its cards) or ``card``; the result names it.
    ``kinds`` defaults to decoder-only and encoder-decoder (``["all"]``: every kind);
    ``where`` takes the conditions of ``archdb list --where``.
    """
    from archdb.reports.adoption import (
        adoption,
        adoption_record,
        catalogue_cutoff,
        find_choice,
        parse_kinds,
        select_trend_rows,
    )
    from archdb.reports.numeric import SIZE_COLUMN, numeric_field, numeric_record, numeric_trends
    from archdb.reports.weighting import parse_weighting

    if not isinstance(choice, str):
        raise ArgumentError(
            f"choice must be a str ('moe', 'norm-type'), got {type(choice).__name__}"
        )
    where = _strings("where", where, "'year>=2024'")
    for name, year in (("since", since), ("until", until)):
        if year is not None:
            _whole(name, year, 9999)
    _flag("band", band)
    _flag("mlp", mlp)
    if not isinstance(weight, str):
        raise ArgumentError(f"weight must be 'family' or 'card', got {type(weight).__name__}")
    weighting = parse_weighting(weight)
    asked = parse_kinds(_strings("kinds", kinds, "'decoder-only', 'all'") or None)
    catalogue = _catalogue(catalogue)
    cut = catalogue_cutoff(catalogue)
    numeric = numeric_field(choice)
    if numeric is None:
        if band or mlp:
            raise UsageError("band and mlp split numbers (d_ff_ratio, vocab_size), not choices")
        found = find_choice(choice)
        rows = select_trend_rows(catalogue, where, [found.column], asked)
        return adoption_record(adoption(rows, found, weighting, cut).window(since, until))
    columns = [numeric.name, *([SIZE_COLUMN] if band else [])]
    rows = select_trend_rows(catalogue, where, columns, asked)
    counted = numeric_trends(
        rows, numeric, weighting, since, until, by_band=band, by_mlp=mlp, cut=cut
    )
    return numeric_record(counted, numeric, weighting)


def diagram(card_or_id: CardLike, *, catalogue: Catalogue | Path | str | None = None) -> str:
    """The card's architecture diagram as an SVG document (``archdb.diagram``): its
    embedding, each stack's layers by kind with counts, one block opened up, the head."""
    from archdb.diagrams import diagram_svg

    return diagram_svg(card(card_or_id, catalogue))
