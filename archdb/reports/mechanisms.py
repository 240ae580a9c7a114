"""The mechanisms page: where runtime goes, what decoding moves, where attention takes over.

Pure rendering over two inputs: the catalogue's decoders (decode arithmetic and crossover
contexts are computed from the cards here, analytically; encoder-only cards decode nothing)
and the cached measurements (``archdb.measure.mechanisms``: profiles and decode timings,
run by ``archdb measure mechanisms``). Nothing is measured while the report is built, so the page is
deterministic.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from archdb import conventions as cv
from archdb.measure.crossover import Crossover, Mode, card_crossover
from archdb.measure.decode import (
    DECODE_BYTES,
    DECODE_CONTEXT,
    TRAFFIC_CONVENTION,
    DecodeTraffic,
    decode_traffic,
)
from archdb.measure.mechanisms import (
    PROFILE_CLASSES,
    Measurements,
    ShareRow,
    device_line,
    share_rows,
)
from archdb.plan.layout import DEFAULT_WINDOW
from archdb.reports import render
from archdb.reports.figures import PALETTE, style
from archdb.schema import WINDOW_PATH, Card, Kind, get_path, null_means_unknown

IVANOV = (
    "Ivanov et al., “Data Movement Is All You Need” (MLSys 2021, https://arxiv.org/abs/2007.00072)"
)
VARIANTS = ("MHA", "GQA", "MQA", "MLA", "sliding window", "linear (state)")
REFRESH = "`archdb measure mechanisms`"


@dataclass(frozen=True)
class MechanismsData:
    """What the page shows: analytic rows from the catalogue, cached measurements."""

    traffic: list[DecodeTraffic]
    crossovers: list[Crossover]
    measured: Measurements | None
    assumed_windows: tuple[str, ...] = ()  # cards whose local window is unpublished


def _window_unpublished(card: Card) -> bool:
    return get_path(card, WINDOW_PATH) is None and null_means_unknown(card, WINDOW_PATH)


def compute(cards: Iterable[Card], measured: Measurements | None) -> MechanismsData:
    # decoders only: an encoder-only model keeps no cache to read per token
    released = [
        c for c in cards if not c.research_variant and c.architecture.kind is not Kind.ENCODER_ONLY
    ]
    traffic = [t for c in released if (t := decode_traffic(c)) is not None]
    crossovers = [x for c in released if (x := card_crossover(c)) is not None]
    assumed = tuple(sorted(c.id for c in released if _window_unpublished(c)))
    return MechanismsData(traffic, crossovers, measured, assumed)


def _assumed_window_note(data: MechanismsData) -> str:
    """Which rows rest on an assumed window (GPT-3's band is unpublished)."""
    if not data.assumed_windows:
        return ""
    ids = ", ".join(f"`{_md(i)}`" for i in data.assumed_windows)
    return (
        f" Local windows that are not published are assumed to be {DEFAULT_WINDOW} tokens "
        f"(archdb/plan/layout.py, DEFAULT_WINDOW), so these rows rest on that assumption: {ids}."
    )


# --- the page -------------------------------------------------------------------------------

FigureSaver = Callable[[str, Callable[[], object]], "str | None"]


def page(data: MechanismsData, fig: FigureSaver) -> list[str]:
    """The page's sections (the caller adds the title and the generated-file notice)."""
    return [
        "Three mechanisms behind the lecture's claims, measured: how a layer's runtime "
        "splits by operator class against how its FLOPs split; what one generated token "
        "reads from memory against what it computes; and the context length from which "
        "attention costs more than the MLP. Profiles and timings are cached measurements "
        f"(refreshed by {REFRESH}); the arithmetic is computed from the catalogue's cards.",
        _profile_section(data.measured, fig),
        _traffic_section(data, fig),
        _decode_timing_section(data.measured, fig),
        _crossover_section(data, fig),
    ]


def _md(text: object, limit: int = 300) -> str:
    """Text from the cache as inert Markdown: no tags, no table breaks, bounded."""
    out = str(text)[:limit].replace("\n", " ").replace("|", "\\|").replace("`", "'")
    return out.replace("<", "&lt;").replace(">", "&gt;")


def _pct(x: float) -> str:
    if x == 0:
        return "0"
    if x < 0.001:
        return f"{x:.3%}"
    if x < 0.01:
        return f"{x:.2%}"
    return f"{x:.1%}"


def _stale_note(measured: Measurements) -> str:
    if not measured.stale:
        return ""
    return (
        f"\n\nStale (their card changed since they were measured; run {REFRESH}): "
        + ", ".join(f"`{_md(s)}`" for s in sorted(measured.stale))
        + "."
    )


def _profile_section(measured: Measurements | None, fig: FigureSaver) -> str:
    head = "## Where runtime goes: operator classes\n\n"
    if measured is None or not measured.profiles:
        return head + f"Not measured yet: run {REFRESH} to profile the layers."
    rows = share_rows(measured)
    path = fig("mechanisms-profile", lambda: profile_figure(rows))
    setups = "\n".join(
        f"- **{_md(e['label'])}**: `{_md(e['card_id'])}`, {e['layers']} layer(s) at "
        f"full width, batch {e['batch']} × {e['seq_len']} tokens"
        + (f"; {_md(e['note'])}" if e["note"] else "")
        for e in measured.profiles
    )
    refresh = (
        f" Measuring them took {measured.refresh_seconds:,.0f} s "
        + (f"(over {measured.runs} runs)." if measured.runs > 1 else "(one run).")
        if measured.refresh_seconds
        else ""
    )
    flops_table = _table(
        ["layer", "pass", *PROFILE_CLASSES, "statistical (norm + softmax)"],
        [
            [_md(r.label), r.pass_name]
            + [_pct(r.flops[c]) for c in (*PROFILE_CLASSES, "statistical")]
            for r in rows
        ],
    )
    runtime_table = _table(
        ["layer", "pass", *PROFILE_CLASSES, "statistical (norm + softmax)", "wall time"],
        [
            [_md(r.label), r.pass_name]
            + [_share_range(r.runtime[c]) for c in (*PROFILE_CLASSES, "statistical")]
            + [f"{r.wall_ms:,.0f} ms"]
            for r in rows
        ],
    )
    return (
        head
        + f"Operator classes of {IVANOV}: *tensor contractions* (matmul, bmm, linear, einsum), "
        "*statistical normalizations* (layer norm, RMSNorm and softmax; shown apart and "
        "together), *element-wise* operators (activations, residual adds, scaling, masking, "
        "bias-gradient reductions) and *other* (views, copies, concatenation, indexing, "
        "routing). An op belongs to the class of the operator the model called: the "
        "outermost aten op in the forward pass, the autograd node in the backward pass; "
        "everything inside a norm block, and its gradient, is a norm.\n\n"
        f"Measured on {_md(device_line(measured))}; {measured.repeats} profiled runs "
        "per pass after a warm-up. *forward* runs without gradients; *forward+backward* "
        "computes the weight and input gradients."
        + refresh
        + "\n\n"
        + setups
        + "\n\n### Share of FLOPs\n\n"
        + flops_table
        + "\n\n"
        + _md(_flop_convention(), limit=2000)
        + ".\n\n### Share of runtime (median over runs, min–max in brackets)\n\n"
        + runtime_table
        + "\n\nRuntime is the profiler's self time of each op (CPU time on a CPU, device time "
        "on CUDA) summed by class; profiler overhead is spread over every op."
        + (
            f"\n\n{render.figure(path, 'FLOPs and runtime shares by operator class')}"
            if path
            else ""
        )
        + _stale_note(measured)
    )


def _flop_convention() -> str:
    from archdb.measure.profile import FLOP_CONVENTION  # torch: only when profiles exist

    return FLOP_CONVENTION


def _share_range(v: tuple[float, float, float]) -> str:
    return f"{_pct(v[0])} ({_pct(v[1])}–{_pct(v[2])})"


def _table(header: list[str], rows: list[list[str]]) -> str:
    right = [False, False] + [True] * (len(header) - 2)
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if r else "---" for r in right) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _gb(x: float) -> str:
    return f"{x / 1e9:,.2f}"


def _traffic_section(data: MechanismsData, fig: FigureSaver) -> str:
    rows = sorted(data.traffic, key=lambda t: (_variant_order(t.variant), t.card_id))
    path = fig("mechanisms-decode-traffic", lambda: traffic_figure(rows))
    table = _table(
        [
            "model",
            "variant",
            "weights GB",
            "cache GB",
            "cache share",
            "GFLOPs/token",
            "FLOPs/byte",
            "attention FLOPs/cache byte",
        ],
        [
            [
                f"`{_md(t.card_id)}`",
                t.variant,
                _gb(t.weight_bytes),
                _gb(t.cache_bytes),
                _pct(t.cache_share),
                f"{t.flops / 1e9:,.1f}",
                f"{t.intensity:.2f}",
                f"{t.attention_flops / t.cache_bytes:.1f}" if t.cache_bytes else "–",
            ]
            for t in rows
        ],
    )
    medians = []
    for v in VARIANTS:
        part = [t.cache_share for t in rows if t.variant == v]
        if part:
            medians.append(f"{v} {_pct(statistics.median(part))} ({len(part)})")
    return (
        "## What decoding moves: bytes per generated token\n\n"
        f"Per decoder-only card: the bytes one generated token reads at a context of "
        f"{DECODE_CONTEXT:,} tokens and {DECODE_BYTES} bytes per element, and the FLOPs it "
        "does; their ratio, the arithmetic intensity, sits near 1 FLOP per byte, two orders "
        "of magnitude below what processors need to be compute-bound: decoding is "
        "memory-bound, and the cache is what attention variants shrink. Conventions: "
        + _md(TRAFFIC_CONVENTION, limit=2000)
        + ".\n\nMedian share of the cache in the bytes read, by variant (cards): "
        + ", ".join(medians)
        + "."
        + _assumed_window_note(data)
        + (
            f"\n\n{render.figure(path, 'decode bytes per token by attention variant')}"
            if path
            else ""
        )
        + "\n\n"
        + table
    )


def _variant_order(v: str) -> int:
    return VARIANTS.index(v) if v in VARIANTS else len(VARIANTS)


def _decode_timing_section(measured: Measurements | None, fig: FigureSaver) -> str:
    head = "## Decode step time against context, measured\n\n"
    if measured is None or not measured.decode:
        return head + f"Not measured yet: run {REFRESH} to time decode steps."
    entries = measured.decode
    path = fig("mechanisms-decode-time", lambda: decode_time_figure(entries))
    contexts = sorted({int(c) for e in entries for c in e["contexts"]})
    rows = []
    for e in entries:
        first = e["contexts"][str(contexts[0])]
        cells = []
        for c in contexts:
            v = e["contexts"].get(str(c))
            if v is None:
                cells.append("–")
                continue
            cells.append(
                f"{v['median_ms']:,.0f} ms (×{v['median_ms'] / first['median_ms']:.2f}; "
                f"bytes ×{v['bytes'] / first['bytes']:.2f})"
            )
        rows.append([_md(e["label"]), *cells])
    return (
        head
        + "One full-width layer of each card (its first, or the local layer named), a batch of "
        f"{entries[0]['batch']} sequences, one new token each after a cache of the stated "
        "length: weights are read once per step, the cache once per sequence. K/V are cached "
        "per KV head and read without expanding them to the query heads; MLA reads its "
        "latent in the absorbed form; the sliding-window layer reads its window only. Each "
        "cell: the median step time, its ratio to the shortest context, and the ratio the "
        "arithmetic predicts (bytes read, float32): where decoding is bound by memory "
        "traffic the two ratios agree. Measured "
        f"on {_md(device_line(measured))}. Each cell is the median of "
        f"{len(entries[0]['contexts'][str(contexts[0])]['ms'])} steps after two warm-ups; on a "
        "machine shared with other jobs single steps vary widely.\n\n"
        + _table(["layer", *(f"L = {c:,}" for c in contexts)], rows)
        + (f"\n\n{render.figure(path, 'decode step time against context')}" if path else "")
        + _stale_note(measured)
    )


def _crossover_section(data: MechanismsData, fig: FigureSaver) -> str:
    rows = sorted(data.crossovers, key=lambda x: (x.year, x.card_id))
    path = fig("mechanisms-crossover", lambda: crossover_figure(rows))

    def ctx(value: float | None) -> str:
        return "never" if value is None else f"{value:,.0f}"

    table = _table(
        ["model", "year", "attention", "MLP GFLOPs/token", *(m.value for m in Mode)],
        [
            [
                f"`{_md(x.card_id)}`",
                str(x.year),
                (x.attention_family or "?") + (" + windows" if x.windowed else ""),
                f"{x.mlp_flops / 1e9:,.3f}",
                *(ctx(x.contexts[m.value]) for m in Mode),
            ]
            for x in rows
        ],
    )
    dense = [x.contexts[Mode.DENSE.value] for x in rows if x.contexts[Mode.DENSE.value]]
    return (
        "## Where attention takes over\n\n"
        "For every card, the context length L from which attention's FLOPs per token (the "
        "score and value products, QK^T and AV) exceed the MLP's (its projections: both "
        "branches of a gated unit, and for MoE the active and shared experts and the router), "
        "averaged over the layers. *dense*: every query scores L keys, "
        f"{2 * cv.FLOPS_PER_MAC}·L·n_heads·d_head FLOPs per token and layer; *causal*: the "
        "mask halves it; "
        "*causal, windows*: local and chunked layers stop at their window, so attention may "
        "never catch up. Encoder-decoders: their decoder's self-attention."
        + _assumed_window_note(data)
        + (
            f" The median dense crossover is {statistics.median(dense):,.0f} tokens."
            if dense
            else ""
        )
        + (
            f"\n\n{render.figure(path, 'attention-MLP crossover against release year')}"
            if path
            else ""
        )
        + "\n\n"
        + table
    )


# --- figures ----------------------------------------------------------------------------------


def _figure(width: float, height: float, **margins: float) -> Figure:
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(**margins)
    return fig


def profile_figure(rows: list[ShareRow]) -> Figure | None:
    """Stacked bars: FLOPs and runtime shares by class, per layer and pass."""
    if not rows:
        return None
    labels = []
    for r in rows:
        short = "fwd" if r.pass_name == "forward" else "fwd+bwd"
        name = r.label.removesuffix(" layer")
        labels += [f"{name}, {short}: FLOPs", f"{name}, {short}: runtime"]
    height = 0.22 * len(labels) + 1.2
    with style():
        fig = _figure(7.0, height, left=0.4, right=0.97, bottom=0.5 / height, top=1 - 0.75 / height)
        ax = fig.add_subplot()
        y = list(range(len(labels)))[::-1]
        left = [0.0] * len(labels)
        for i, cls in enumerate(PROFILE_CLASSES):
            values = []
            for r in rows:
                values += [r.flops[cls], r.runtime[cls][0]]
            ax.barh(y, values, left=left, color=PALETTE[i], label=cls, height=0.7)
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_formatter(_percent())
        ax.set_title(
            "Share of FLOPs and of runtime (median) by operator class", loc="left", pad=16, x=-0.6
        )
        ax.legend(loc="lower left", ncol=5, bbox_to_anchor=(-0.6, 1.0), borderaxespad=0.2)
    return fig


def _percent():
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)


def traffic_figure(rows: list[DecodeTraffic]) -> Figure | None:
    """Left: weights against cache bytes per generated token; right: FLOPs per cache byte
    of the attention part; both by attention variant."""
    if not rows:
        return None
    with style():
        fig = _figure(7.0, 3.4, left=0.09, right=0.98, bottom=0.2, top=0.88, wspace=0.3)
        ax, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        present = [v for v in VARIANTS if any(t.variant == v for t in rows)]
        for i, v in enumerate(VARIANTS):
            part = [t for t in rows if t.variant == v]
            if not part:
                continue
            ax.scatter(
                [t.weight_bytes / 1e9 for t in part],
                [max(t.cache_bytes, 1e3) / 1e9 for t in part],
                s=14,
                color=PALETTE[i],
                label=f"{v} ({len(part)})",
                zorder=3,
            )
            x = present.index(v)
            right.scatter(
                [x] * len(part),
                [t.attention_flops / t.cache_bytes for t in part if t.cache_bytes]
                or [float("nan")] * len(part),
                s=14,
                color=PALETTE[i],
                zorder=3,
            )
        lo, hi = 0.1, 2e3
        ax.plot([lo, hi], [lo, hi], color="#999999", linewidth=0.8, linestyle=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("active weights read per token, GB (log)")
        ax.set_ylabel(f"cache at {DECODE_CONTEXT:,} tokens, GB (log; dotted: = weights)")
        ax.set_title("Bytes read per generated token", loc="left")
        ax.legend(loc="upper left")
        right.set_yscale("log")
        right.set_xticks(range(len(present)), present, rotation=30, ha="right")
        right.set_xlim(-0.6, len(present) - 0.4)
        right.set_ylabel("attention FLOPs per cache byte (log)")
        right.set_title("Attention's arithmetic intensity", loc="left")
    return fig


def decode_time_figure(entries: list[dict[str, Any]]) -> Figure | None:
    """Measured step time against context, next to the bytes-predicted line."""
    if not entries:
        return None
    with style():
        fig = _figure(6.4, 3.0, left=0.1, right=0.97, bottom=0.15, top=0.9)
        ax = fig.add_subplot()
        for i, e in enumerate(entries):
            contexts = sorted(int(c) for c in e["contexts"])
            first = e["contexts"][str(contexts[0])]
            ms = [e["contexts"][str(c)]["median_ms"] / first["median_ms"] for c in contexts]
            pred = [e["contexts"][str(c)]["bytes"] / first["bytes"] for c in contexts]
            colour = PALETTE[i % len(PALETTE)]
            ax.plot(contexts, ms, marker="o", markersize=3, color=colour, label=e["label"])
            ax.plot(contexts, pred, linestyle=":", color=colour, linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context (tokens in the cache, log)")
        ax.set_ylabel("step time / time at the shortest context")
        ax.set_title("Decode step time (solid) and bytes read (dotted), relative", loc="left")
        ax.legend(loc="upper left")
    return fig


def crossover_figure(rows: list[Crossover]) -> Figure | None:
    """Crossover context by release year: dense, causal and windowed."""
    points = [x for x in rows if x.contexts[Mode.DENSE.value] is not None]
    if not points:
        return None
    with style():
        fig = _figure(6.4, 3.5, left=0.11, right=0.97, bottom=0.27, top=0.9)
        ax = fig.add_subplot()
        markers = {Mode.DENSE: "o", Mode.CAUSAL: "s", Mode.WINDOWED: "^"}
        for i, mode in enumerate(Mode):
            part = [x for x in points if x.contexts[mode.value] is not None]
            if mode is Mode.WINDOWED:
                part = [x for x in part if x.windowed]
            offset = (i - 1) * 0.12
            ax.scatter(
                [x.year + offset for x in part],
                [x.contexts[mode.value] for x in part],
                s=14,
                marker=markers[mode],
                color=PALETTE[i],
                label=mode.value + (" (windowed cards)" if mode is Mode.WINDOWED else ""),
                zorder=3,
            )
        ax.set_yscale("log")
        ax.set_xlabel("release year")
        ax.set_ylabel("context where attention FLOPs pass the MLP's (log)")
        ax.set_title("Where attention takes over, by release year", loc="left")
        ax.legend(
            loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=3
        )  # under the axes, off the data
    return fig
