"""Where attention takes over: the context at which attention's FLOPs per token pass the MLP's.

A fold over the plan (no torch): each layer's channel parts (MLP, MoE) count their linear
layers as the FLOP counter does (matmuls and bias adds; MoE: the router, the active
experts, the shared experts), each attention its score and value products per scored key
(``score_flops_per_key``: 2·h·(d_qk + d_v)); they are what grows. Averages are over the
decoder stack's layers, so dense first layers, layer periods and local/global patterns
weigh as often as they occur; encoder-decoders are read through their decoder's
self-attention; weight-shared blocks (Zamba2) count at each invocation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import partial

from archdb.conventions import FlopClass
from archdb.plan import make_plan
from archdb.plan.compressed import CompressedAttention
from archdb.plan.layout import BuildError, check_buildable, fill_unknowns
from archdb.plan.plan import LayerRun, layer_runs
from archdb.schema import Architecture, Card, LayerKind
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


def keys_per_query(kind: LayerKind, window: int | None, context: float, mode: Mode) -> float:
    """Average keys one query scores in a sequence of ``context`` tokens."""
    if mode is Mode.DENSE:
        return context
    if mode is Mode.CAUSAL or kind not in (LayerKind.LOCAL, LayerKind.CHUNKED):
        return context / 2
    if context <= window:
        return context / 2
    if kind is LayerKind.LOCAL:  # min(position, window), averaged over positions
        return window - window * window / (2 * context)
    full, rest = divmod(context, window)  # chunks: position within the chunk
    return (full * window * window / 2 + rest * rest / 2) / context


@dataclass(frozen=True)
class Crossover:
    card_id: str
    year: int
    mlp_flops: float  # per token, averaged over layers
    attention_per_key: float  # per token and key, averaged over layers
    contexts: dict[str, float | None]  # mode -> crossover context (None: never)
    attention_family: str | None
    windowed: bool


Keys = Callable[[float, Mode], float]  # (context, mode) -> keys one query scores


def _scoring(runs: list[LayerRun]) -> Iterator[tuple[int, object]]:
    """(layers, attention) of each attention that scores keys (linear attention keeps a
    state: no keys to score)."""
    return ((run.count, a) for run in runs for a in run.attentions if a.score_flops_per_key())


def _attending(runs: list[LayerRun]) -> list[tuple[int, Keys, float]]:
    """(layers, its keys per query, FLOPs per key) of each attention that scores keys."""
    return [(n, _keys_of(a), float(a.score_flops_per_key())) for n, a in _scoring(runs)]


def _window_of(attention: object) -> int | None:
    if isinstance(attention, CompressedAttention):
        return attention.window
    return attention.kernel.window  # type: ignore[attr-defined]


def _keys_of(attention: object) -> Keys:
    """How many keys an attention's query scores: by its kernel's kind and window, or, for
    DeepSeek-V4's compressed attention, its window plus the compressed entries it reads."""
    if isinstance(attention, CompressedAttention):

        def compressed(context: float, mode: Mode) -> float:
            window = keys_per_query(LayerKind.LOCAL, attention.window, context, mode)
            return window + attention.entries_per_query(context, mode is not Mode.DENSE)

        return compressed
    kernel = attention.kernel  # type: ignore[attr-defined]
    return partial(keys_per_query, kernel.kind, kernel.window)


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
        windowed=any(_window_of(a) is not None for _, a in _scoring(runs)),
    )
