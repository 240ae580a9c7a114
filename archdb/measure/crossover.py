"""Where attention takes over: the context at which attention's FLOPs per token pass the MLP's.

A fold over the plan (no torch): each layer's channel parts (MLP, MoE) count their linear
layers as the FLOP counter does (matmuls and bias adds; MoE: the router, the active
experts, the shared experts), each attention its score and value products per scored key
(``score_flops_per_key``: 2·h·(d_qk + d_v)) times the keys a query scores at context L
(``mean_keys``: each attention spec answers for its own kernel); they are what grows.
Averages are over the decoder stack's layers, so dense first layers, layer periods and
local/global patterns weigh as often as they occur; encoder-decoders are read through
their decoder's self-attention; weight-shared blocks (Zamba2) count at each invocation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from archdb.conventions import FlopClass
from archdb.plan import make_plan
from archdb.plan.layout import BuildError, check_buildable, fill_unknowns
from archdb.plan.plan import LayerRun, layer_runs
from archdb.schema import Architecture, Card
from archdb.tally import Tally

MAX_CONTEXT = 1e12  # beyond this a crossover is reported as never reached


class Mode(StrEnum):
    """How many keys a query scores at context L."""

    DENSE = "dense"  # every query scores all L keys
    CAUSAL = "causal"  # on average L/2 keys: the causal mask halves the work
    WINDOWED = "causal, windows"  # causal, and local/chunked layers stop at their window


def channel_flops(run: LayerRun) -> float:
    """Linear-layer FLOPs per token of one layer's channel parts (0 for a mixer alone)."""
    tally = Tally(seq_len=1)
    for part in run.channels:
        part.flops(tally)
    return float(tally.dense[FlopClass.LINEAR])


@dataclass(frozen=True)
class Crossover:
    card_id: str
    year: int
    mlp_flops: float  # per token, averaged over layers
    attention_per_key: float  # per token and key, averaged over layers
    contexts: dict[str, float | None]  # mode -> crossover context (None: never)
    attention_family: str | None
    windowed: bool


def _flags(mode: Mode) -> tuple[bool, bool]:
    """(causal, windows) of a mode."""
    return mode is not Mode.DENSE, mode is Mode.WINDOWED


Keys = Callable[[float, Mode], float]  # (context, mode) -> keys one query scores


def _scoring(runs: list[LayerRun]) -> Iterator[tuple[int, Any]]:
    """(layers, attention) of each attention that scores keys (linear attention keeps a
    state: no keys to score)."""
    return ((run.count, a) for run in runs for a in run.attentions if a.score_flops_per_key())


def _attending(runs: list[LayerRun]) -> list[tuple[int, Keys, float]]:
    """(layers, its keys per query, FLOPs per key) of each attention that scores keys."""
    return [
        (n, lambda context, mode, a=a: a.mean_keys(context, *_flags(mode)), a.score_flops_per_key())
        for n, a in _scoring(runs)
    ]


def crossover_context(arch: Architecture, mode: Mode) -> float | None:
    """The context L at which attention FLOPs per token equal the MLP's, summed over layers.

    Solves  Σ_attentions per_key·keys(L)  =  Σ_layers channel FLOPs  for L, where
    keys(L) = L (dense), L/2 (causal), and for local layers of window W under causal
    masking min(position, W) averaged over the sequence: L/2 up to W, W − W²/(2L) beyond
    (chunked layers: the position within the chunk). Beyond L attention costs more. None
    when attention never catches up (linear attention, or every layer windowed below the
    crossover). ``arch`` has its unknowns filled (``fill_unknowns``).
    """
    runs = layer_runs(make_plan(arch).decoder)
    return _crossover(_channel_total(runs), _attending(runs), mode)


def _channel_total(runs: list[LayerRun]) -> float:
    return sum(run.count * channel_flops(run) for run in runs)


def _crossover(target: float, attending: list[tuple[int, Keys, float]], mode: Mode) -> float | None:
    """Where the attentions (read once: the bisection asks for hundreds of contexts) cost
    ``target``, the stack's channel FLOPs per token."""

    def attention(context: float) -> float:
        return sum(n * per_key * keys(context, mode) for n, keys, per_key in attending)

    if attention(MAX_CONTEXT) < target:
        return None
    low, high = 0.0, MAX_CONTEXT
    for _ in range(200):  # attention grows with L: bisect to float precision
        mid = (low + high) / 2
        low, high = (mid, high) if attention(mid) < target else (low, mid)
    return high


def card_crossover(card: Card) -> Crossover | None:
    """Every mode's crossover for a card; None when the card lacks the sizes."""
    try:
        arch, _ = fill_unknowns(card.architecture)
        check_buildable(arch)
    except BuildError:
        return None
    if not arch.has_attention():
        return None  # attention-free (Mamba-2): no attention cost to cross the MLP's
    runs = layer_runs(make_plan(arch).decoder)
    layers = sum(run.count for run in runs)
    channels, attending = _channel_total(runs), _attending(runs)
    return Crossover(
        card_id=card.id,
        year=card.release_date.year,
        mlp_flops=channels / layers,
        attention_per_key=sum(n * per_key for n, _, per_key in attending) / layers,
        contexts={m.value: _crossover(channels, attending, m) for m in Mode},
        attention_family=arch.attention_family,
        windowed=any(a.window is not None for _, a in _scoring(runs)),
    )
