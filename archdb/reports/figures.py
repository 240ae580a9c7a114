"""Figures of the reports, drawn with matplotlib and written as reproducible SVG.

Each function takes report data (an ``Adoption``, the catalogue frame) and returns a
``matplotlib.figure.Figure``; ``save_svg`` writes it. No pyplot: figures are plain
objects, so nothing global (backend, open-figure list) leaks between them.

Byte-identical output: text stays text (``svg.fonttype: none``, so no glyph outlines
that depend on the installed fonts), element ids come from a fixed hash salt, and the
metadata carries no date and no library version.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, PercentFormatter
from matplotlib.transforms import Bbox

from archdb import conventions as cv
from archdb.reports.adoption import ANY, Adoption, Consensus, ValueTrend
from archdb.reports.analyses import Concentration, LayerMix, OrganizationLag, YearSpread
from archdb.reports.distributions import kv_cache_per_param, mlp_group, released
from archdb.reports.weighting import Cutoff

STYLE = {
    "svg.hashsalt": "archdb",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.5,
    "legend.frameon": False,
    "legend.fontsize": 7,
    "path.simplify": False,
    # Titles sit on the axes' top edge, where matplotlib's automatic placement puts them for
    # these figures (no ticks or offset text above the axes); fixed, a draw skips measuring
    # every y axis a second time to check.
    "axes.titley": 1.0,
}
SVG_METADATA = {"Date": None, "Creator": "archdb report"}
# Colour-blind-safe palette (Okabe-Ito), assigned in a fixed order.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
GROUP_COLOURS = {"gated": PALETTE[0], "non-gated": PALETTE[1], "MoE (one expert)": PALETTE[2]}


@contextmanager
def style() -> Iterator[None]:
    """The reports' matplotlib settings, for drawing and saving alike."""
    with mpl.rc_context(STYLE):
        yield


def save_svg(fig: Figure, path: Path | BinaryIO) -> None:
    with style():
        fig.savefig(path, format="svg", metadata=SVG_METADATA)


def _figure(
    width: float,
    height: float,
    *,
    left: float = 0.11,
    right: float = 0.97,
    bottom: float = 0.15,
    top: float = 0.89,
    wspace: float = 0.2,
    hspace: float = 0.2,
) -> Figure:
    """A figure with fixed margins (a layout engine would cost a draw pass per figure)."""
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(
        left=left, right=right, bottom=bottom, top=top, wspace=wspace, hspace=hspace
    )
    return fig


# --- adoption ------------------------------------------------------------------------


LEGEND_ENTRY_INCHES = 0.17  # one legend line at the report style's font size
# A figure with more lines than the palette has colours repeats colours: values used by
# fewer than this many models (all years) then share one grey "others" line; the report's
# table below the figure still lists each of them.
RARE_MODELS = 3
OTHERS_COLOUR = "#999999"


def figure_values(adoption: Adoption) -> list[ValueTrend]:
    """The lines of an adoption figure: every value, or, when they outnumber the palette,
    the values of ``RARE_MODELS`` models or more and one line summing the rarer ones."""
    values = list(adoption.values)
    if len(values) <= len(PALETTE):
        return values
    rare = [t for t in values if t.value != ANY and sum(t.counts.values()) < RARE_MODELS]
    if len(rare) < 2:
        return values
    counts: dict[int, int] = {}
    for t in rare:
        for year, n in t.counts.items():
            counts[year] = counts.get(year, 0) + n
    first = min((t.first_use for t in rare), key=lambda f: f.date)
    label = f"{len(rare)} others, < {RARE_MODELS} models each"
    members = tuple(v for t in rare for v in t.counted)
    others = ValueTrend(label, counts, first, None, None, members)
    kept = [t for t in values if t not in rare]
    return [*(t for t in kept if t.value != ANY), others, *(t for t in kept if t.value == ANY)]


def _shares(adoption: Adoption, trend: ValueTrend, years: list[int]) -> list[float]:
    """The trend's weighted share by year; NaN (a gap) where too few are known."""
    return [math.nan if (s := adoption.share(trend, y)) is None else s for y in years]


def _n_label(adoption: Adoption, year: int) -> str:
    """A year's tick: the year (2026* when partial), families and cards known / all."""
    found = adoption.year(year)
    assert found is not None
    return (
        f"{adoption.cutoff.short_label(year)}\n{found.families_known}/{found.families}"
        f"\n{found.cards_known}/{found.cards}"
    )


def adoption_figure(adoption: Adoption) -> Figure:
    """Weighted share of each value of one choice by release year (known values only)."""
    years = adoption.shown_years()
    lines = figure_values(adoption)
    # the legend (one entry a line, plus the known-share bars) sets the height when long
    height = max(3.0, 0.5 + LEGEND_ENTRY_INCHES * (len(lines) + 1))
    with style():
        fig = _figure(7.0, height, left=0.09, right=0.74, bottom=0.36 * 3.0 / height)
        ax = fig.add_subplot()
        colours = iter(PALETTE * 2)
        for trend in lines:
            dashed = trend.value == ANY
            others = trend not in adoption.values
            ax.plot(
                years,
                _shares(adoption, trend, years),
                # the aggregate: a wide pale band under the values it sums, so a value
                # line it coincides with (global+local before 2023) shows on top of it
                marker="" if dashed else "o",
                markersize=3,
                linewidth=6 if dashed else 1.2,
                alpha=0.28 if dashed else 1.0,
                solid_capstyle="round",
                zorder=1 if dashed else 2,
                linestyle=":" if others else "-",
                color=OTHERS_COLOUR if others else next(colours),
                label=f"{ANY} but {adoption.choice.absent}" if dashed else trend.value,
            )
        _known_bars(ax, adoption, years)
        _share_axis(ax, years)
        ax.set_xticks(years, [_n_label(adoption, y) for y in years], fontsize=6)
        note = adoption.cutoff.note()
        ax.set_xlabel(
            "release year; under it: families, then cards, known / all\ngaps: too few known "
            "(under half the year's families)" + (f"; {note}" if note else ""),
            fontsize=7,
        )
        ax.set_title(
            f"{adoption.choice.title}: {adoption.weighting}-weighted share of the known "
            "values, by release year",
            loc="left",
        )
        if adoption.values:
            ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def consensus_figure(adoptions: list[Adoption], consensus: list[Consensus]) -> Figure:
    """Small multiples: each choice's latest-year most common value, its share by year
    with its 95% interval."""
    pairs = [(a, c) for a, c in zip(adoptions, consensus, strict=True) if c.trend is not None]
    all_years = sorted({y for a, _ in pairs for y in a.shown_years()})
    weighting = adoptions[0].weighting if adoptions else "family"
    note = adoptions[0].cutoff.note() if adoptions else ""
    cols = 4
    rows = max(1, -(-len(pairs) // cols))
    with style():
        height = 2.0 * rows + 0.95
        fig = _figure(
            8.0,
            height,
            left=0.08,
            right=0.98,
            bottom=0.3 / height,
            top=1 - 1.25 / height,
            wspace=0.15,
            hspace=0.9,
        )
        axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
        for ax, (adoption, cons) in zip(axes.flat, pairs, strict=False):
            assert cons.trend is not None
            years = adoption.shown_years()
            found = [adoption.share_of(cons.trend, y) for y in years]
            low = [math.nan if s is None else s.low for s in found]
            high = [math.nan if s is None else s.high for s in found]
            _known_bars(ax, adoption, years)
            ax.fill_between(years, low, high, color=PALETTE[0], alpha=0.18, linewidth=0)
            ax.plot(
                years,
                _shares(adoption, cons.trend, years),
                marker="o",
                markersize=2.5,
                linewidth=1.2,
                color=PALETTE[0],
            )
            ax.axhline(0.5, color="#999999", linewidth=0.6, linestyle=":")
            ax.set_title(
                f"{adoption.choice.title}:\n{_value_label(adoption, cons)}", fontsize=7, loc="left"
            )
        # The axes share their limits and their tickers (locator, formatter): set once for
        # all (each call on every axes would redo the others' limits, quadratic in axes).
        first = axes.flat[0]
        _share_axis(first, all_years, label=False)
        if all_years:
            ticks = all_years[::2] if len(all_years) > 5 else all_years
            cut = adoptions[0].cutoff
            first.set_xticks(ticks, [cut.short_label(y) for y in ticks])
        for ax in list(axes.flat)[len(pairs) :]:
            ax.set_visible(False)
        fig.suptitle(
            f"{weighting.capitalize()}-weighted share of the known values using each "
            "choice's latest most common value, by release year;\nshaded: its 95% interval "
            "(Wilson, on families); dotted: half; grey: the share of the year's "
            f"{'families' if weighting == 'family' else 'cards'} whose value is known;\n"
            "'no consensus': the lower bound is not above half, or fewer than 5 families are "
            "known; 'too few known': under half the year's families"
            + (f"\n{note}" if note else ""),
            fontsize=8,
            x=0.01,
            y=1 - 0.1 / height,
            ha="left",
            va="top",
        )
    return fig


def _value_label(adoption: Adoption, cons: Consensus) -> str:
    value = cons.trend.value if cons.trend else "–"
    label = f"{ANY} but {adoption.choice.absent}" if value == ANY else value
    year = cons.year
    if year is not None and cons.too_few_known:
        return f"{label}\ntoo few known: {year.families_known}/{year.families} families"
    if year is not None and not cons.is_consensus:
        label += f"\nno consensus: {year.families_known}/{year.families} families known"
    return label


def _known_bars(ax: Axes, adoption: Adoption, years: list[int]) -> None:
    """Grey bars: the share of each year's families (or cards) whose value is known."""
    family = adoption.weighting == "family"
    known = []
    for y in years:
        found = adoption.year(y)
        assert found is not None
        known.append(
            found.families_known / found.families if family else found.cards_known / found.cards
        )
    label = f"share of {'families' if family else 'cards'} known"
    ax.bar(years, known, width=0.7, color="#e3e3e3", linewidth=0, zorder=0, label=label)


def _share_axis(ax: Axes, years: list[int], label: bool = True) -> None:
    ax.set_ylim(-0.04, 1.04)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    if years:
        ax.set_xlim(min(years) - 0.5, max(years) + 0.5)
        ax.set_xticks(years)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v)}"))
    if label:
        ax.set_xlabel("release year")


# --- distributions -------------------------------------------------------------------


def d_ff_figure(frame: pd.DataFrame, named: set[str]) -> Figure | None:
    """d_ff/d_model by release date, coloured gated / non-gated / MoE; ``named`` labelled."""
    data = released(frame).assign(group=mlp_group(frame))
    if data["d_ff_ratio"].isna().all():
        return None
    with style():
        fig = _figure(6.4, 3.2)
        ax = fig.add_subplot()
        for group, colour in GROUP_COLOURS.items():
            part = data[(data["group"] == group).fillna(False).astype(bool)]
            part = part[part["d_ff_ratio"].notna()]
            ax.scatter(
                _when(part),
                part["d_ff_ratio"].astype(float),
                s=14,
                color=colour,
                label=f"{group} ({len(part)})",
                zorder=3,
            )
        ax.axhline(4.0, color=GROUP_COLOURS["non-gated"], linewidth=0.8, linestyle=":")
        ax.axhline(8 / 3, color=GROUP_COLOURS["gated"], linewidth=0.8, linestyle=":")
        ax.set_yscale("log")
        _log_ticks(ax, "y", [0.5, 1, 2, 8 / 3, 4, 8, 16, 32, 64])
        ax.set_ylabel("d_ff / d_model (log)")
        ax.set_xlabel("release date")
        ax.set_title("d_ff/d_model, each dot a card; dotted: 4 and 8/3", loc="left")
        ax.legend(loc="upper left")
        _label_points(ax, data, "d_ff_ratio", named)
    return fig


def aspect_figure(frame: pd.DataFrame, named: set[str]) -> Figure | None:
    """d_model/n_layers against parameters."""
    data = released(frame)
    data = data.assign(params=_params(data))
    data = data[data["aspect_ratio"].notna() & data["params"].notna()]
    if data.empty:
        return None
    with style():
        fig = _figure(6.4, 3.2)
        ax = fig.add_subplot()
        ax.scatter(
            data["params"].astype(float),
            data["aspect_ratio"].astype(float),
            s=14,
            color=PALETTE[0],
            zorder=3,
        )
        ax.axhline(128, color="#999999", linewidth=0.8, linestyle=":")
        ax.axhline(100, color="#999999", linewidth=0.8, linestyle="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log_ticks(ax, "y", [16, 32, 64, 100, 128, 256, 512])
        ax.set_xlabel("parameters (published, else exact; log)")
        ax.set_ylabel("d_model / n_layers (log)")
        ax.set_title(
            "Aspect ratio: ~128 in GPT-3 and Llama (dotted), Kaplan's ~100 (dashed)", loc="left"
        )
        _label_points(ax, data, "aspect_ratio", named, x="params")
    return fig


def head_ratio_figure(frame: pd.DataFrame) -> Figure | None:
    """n_heads·d_head/d_model by release date; every model off 1 is labelled."""
    data = released(frame)
    data = data[data["head_ratio"].notna()]
    if data.empty:
        return None
    off = {str(i) for i, v in data["head_ratio"].items() if abs(float(v) - 1) > 1e-9}
    with style():
        fig = _figure(6.4, 4.6, bottom=0.09, top=0.93)  # room for its many labels
        ax = fig.add_subplot()
        ax.scatter(_when(data), data["head_ratio"].astype(float), s=14, color=PALETTE[0], zorder=3)
        ax.set_yscale("log")
        _log_ticks(ax, "y", [0.5, 1, 2, 4, 8, 16])
        ax.set_ylabel("n_heads·d_head / d_model (log)")
        ax.set_xlabel("release date")
        ax.set_title("n_heads·d_head / d_model, each dot a card", loc="left")
        _label_points(ax, data, "head_ratio", off)
    return fig


def vocab_figure(frame: pd.DataFrame, named: set[str]) -> Figure | None:
    """Vocabulary size by release date, with the lecture's two bands shaded."""
    data = released(frame)
    data = data[data["architecture.vocab_size"].notna()]
    if data.empty:
        return None
    with style():
        fig = _figure(6.4, 3.0)
        ax = fig.add_subplot()
        ax.axhspan(
            30_000,
            50_000,
            color=PALETTE[1],
            alpha=0.12,
            linewidth=0,
            label="30k–50k (early, monolingual)",
        )
        ax.axhspan(
            100_000,
            250_000,
            color=PALETTE[0],
            alpha=0.12,
            linewidth=0,
            label="100k–250k (modern, multilingual)",
        )
        ax.scatter(
            _when(data),
            data["architecture.vocab_size"].astype(float),
            s=14,
            color=PALETTE[0],
            zorder=3,
        )
        ax.set_yscale("log")
        _log_ticks(
            ax,
            "y",
            [8_000, 16_000, 32_000, 64_000, 128_000, 256_000],
            fmt=lambda v, _: f"{v / 1000:.0f}k",
        )
        ax.set_ylabel("vocabulary rows (log)")
        ax.set_xlabel("release date")
        ax.set_title("Vocabulary size over time, each dot a card", loc="left")
        ax.legend(loc="lower right")  # the bands span the top; nothing lies there
        _label_points(ax, data, "architecture.vocab_size", named)
    return fig


def kv_cache_figure(frame: pd.DataFrame, named: set[str]) -> Figure | None:
    """KV-cache bytes per token against parameters, by attention family; None without data."""
    data = released(frame)
    data = data.assign(params=_params(data), per_b=kv_cache_per_param(data))
    data = data[data["kv_cache_bytes_per_token"].notna() & data["params"].notna()]
    if data.empty:
        return None
    with style():
        fig = _figure(6.4, 3.2)
        ax = fig.add_subplot()
        families = sorted(str(f) for f in data["attention_family"].dropna().unique())
        for i, fam in enumerate(families):
            part = data[(data["attention_family"] == fam).fillna(False).astype(bool)]
            ax.scatter(
                part["params"].astype(float),
                part["kv_cache_bytes_per_token"].astype(float),
                s=14,
                color=PALETTE[i % len(PALETTE)],
                label=f"{fam} ({len(part)})",
                zorder=3,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("parameters (published, else exact; log)")
        ax.set_ylabel("KV-cache bytes per token (log)")
        ax.set_title(
            f"KV cache per token at {cv.DEFAULT_KV_CONTEXT:,} tokens, "
            f"{cv.DEFAULT_KV_DTYPE_BYTES} B/element: GQA/MQA/MLA below MHA",
            loc="left",
        )
        ax.legend(loc="upper left")
        _label_points(ax, data, "kv_cache_bytes_per_token", named, x="params")
    return fig


# --- helpers -------------------------------------------------------------------------


def _when(frame: pd.DataFrame) -> list[float]:
    """Release dates as fractional years, so points of one year spread along the axis."""
    out = []
    for value in frame["release_date"]:
        day = dt.date.fromisoformat(str(value))
        out.append(day.year + (day.timetuple().tm_yday - 1) / 366)
    return out


def _params(frame: pd.DataFrame) -> pd.Series:
    published = frame["params_published"].astype("Float64")
    return published.fillna(frame["params_exact"].astype("Float64"))


def _label_points(
    ax: Axes, frame: pd.DataFrame, column: str, ids: set[str], x: str | None = None
) -> None:
    """Write the card id next to each point of ``ids`` so no label can be read as another
    point's: each labelled point is ringed; models at one spot share one label; a label
    sits as close to its ring as it can, and one moved away is tied to it by a straight
    leader line ending at the ring; every label stays inside the axes, apart from the
    other labels and the legend, and off the points where it can be.

    A deterministic placement pass, measured with the Agg renderer's real text extents:
    labels are placed left to right; each takes the nearest free candidate position
    around its point (right, left, above, below, then the corners, at growing distances),
    first among those that cover no point, then among the rest.
    """
    part = frame[frame.index.isin(list(ids))]
    part = part[part[column].notna()]
    if part.empty:
        return
    xs = part[x].astype(float).tolist() if x else _when(part)
    points = sorted(zip(xs, part[column].astype(float).tolist(), map(str, part.index), strict=True))
    ax.autoscale_view()  # settle the limits, so data -> display is final
    ax.set_autoscale_on(False)  # and keep them so when the rings are drawn
    renderer = _renderer(ax.figure)
    scale = ax.figure.dpi / 72  # display pixels per point
    inner = ax.bbox.padded(-LABEL_PAD * scale)
    blocked = [_span(leg.get_window_extent(renderer)) for leg in [ax.get_legend()] if leg]
    markers = [m for c in ax.collections for m in _marker_spans(ax, c.get_offsets(), scale)]
    spots = _same_spot(ax, points, scale)
    for (xv, yv), names in spots:
        label = _joined(names)
        probe = ax.text(0, 0, label, fontsize=LABEL_SIZE)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        px, py = ax.transData.transform((xv, yv))
        box = _place(px, py, extent.width, extent.height, scale, inner, blocked, markers)
        near = _distance(box, px, py) <= (RING_RADIUS + 2.5) * scale
        ax.annotate(
            label,
            (xv, yv),
            xytext=((box.x0 - px) / scale, (box.y0 - py) / scale),
            textcoords="offset points",
            fontsize=LABEL_SIZE,
            color="#222222",
            va="bottom",
            ha="left",
            arrowprops=None if near else _leader(box, px, py, scale),
        )
        gap_x, gap_y = LABEL_GAP * scale, LABEL_PAD * scale / 2
        blocked.append((box.x0 - gap_x, box.y0 - gap_y, box.x1 + gap_x, box.y1 + gap_y))
    rings = np.array([spot for spot, _ in spots], dtype=float)
    ax.scatter(
        rings[:, 0],
        rings[:, 1],
        s=(2 * RING_RADIUS) ** 2,
        facecolors="none",
        edgecolors="#222222",
        linewidths=0.6,
        zorder=4,
    )


def _joined(names: list[str], width: int = 44) -> str:
    """Ids of one spot, comma-separated, in lines of about ``width`` characters."""
    lines = [names[0]]
    for name in names[1:]:
        if len(lines[-1]) + 2 + len(name) > width:
            lines[-1] += ","
            lines.append(name)
        else:
            lines[-1] += f", {name}"
    return "\n".join(lines)


def _same_spot(
    ax: Axes, points: list[tuple[float, float, str]], scale: float
) -> list[tuple[tuple[float, float], list[str]]]:
    """The points with their ids, those drawn at one spot (within a pixel or so) merged."""
    spots: list[tuple[tuple[float, float], list[str], tuple[float, float]]] = []
    for xv, yv, name in points:
        px, py = ax.transData.transform((xv, yv))
        for _, names, (sx, sy) in spots:
            if abs(sx - px) <= SAME_SPOT * scale and abs(sy - py) <= SAME_SPOT * scale:
                names.append(name)
                break
        else:
            spots.append(((xv, yv), [name], (px, py)))
    return [(spot, names) for spot, names, _ in spots]


def _distance(box: Bbox, px: float, py: float) -> float:
    """From a point to the nearest point of a box, display pixels."""
    dx = max(box.x0 - px, 0.0, px - box.x1)
    dy = max(box.y0 - py, 0.0, py - box.y1)
    return (dx * dx + dy * dy) ** 0.5


def _leader(box: Bbox, px: float, py: float, scale: float) -> dict[str, Any]:
    """A straight leader line from the side of the label nearest its point to the point's
    ring, where it ends: one line, one ring, read one way only."""
    side_x = 0.0 if box.x0 >= px else 1.0 if box.x1 <= px else 0.5
    side_y = 0.0 if box.y0 >= py else 1.0 if box.y1 <= py else 0.5
    return {
        "arrowstyle": "-",
        "color": "#444444",
        "linewidth": 0.5,
        "shrinkA": 0.5,
        "shrinkB": RING_RADIUS,  # points: the line stops at the ring
        "relpos": (side_x, side_y),
    }


LABEL_SIZE = 6
LABEL_PAD = 1.5  # points kept clear between a label and the axes' edge or another label
RING_RADIUS = 3.6  # points: the ring around a labelled point (its marker is about 2)
SAME_SPOT = 1.5  # points: labelled points closer than this share one label
LABEL_GAP = 3.0  # points kept clear beside a label, so two on a row never read as one
# Where a label may sit around its point: level with it on the right or the left, then
# above or below it, starting (or ending) at the point's x, so it reads as the point's.
_DIRECTIONS = ((1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))
_NEAR = (0, 4, 8, 14)  # points of extra distance tried first
_FAR = (22, 32, 44, 58, 76, 100)  # then these, before the first free slot anywhere


def _place(
    px: float,
    py: float,
    width: float,
    height: float,
    scale: float,
    inner: Bbox,
    blocked: list[Span],
    markers: list[Span],
) -> Bbox:
    """The nearest free box for a label of its size around (px, py), in display pixels:
    first one that covers no point, near then far; then one that may cover a point."""
    gap = (RING_RADIUS + 1.5) * scale

    def candidates(steps: tuple[int, ...]) -> Iterator[Bbox]:
        for step in steps:
            d = gap + step * scale
            for dx, dy in _DIRECTIONS:
                if dy == 0:  # level with the point, its middle on the point's row
                    x0 = px + d if dx > 0 else px - d - width
                    y0 = py - height / 2
                else:  # above or below, from the point's x rightwards or leftwards
                    x0 = px - gap / 2 if dx > 0 else px + gap / 2 - width
                    y0 = py + d if dy > 0 else py - d - height
                yield _clamp(Bbox.from_bounds(x0, y0, width, height), inner)

    def free(box: Bbox, avoid_points: bool) -> bool:
        span = _span(box)
        if any(_overlaps(span, other) for other in blocked):
            return False
        return not (avoid_points and any(_overlaps(span, m) for m in markers))

    for steps, avoid_points in ((_NEAR, True), (_FAR, True), (_NEAR, False), (_FAR, False)):
        for box in candidates(steps):
            if free(box, avoid_points):
                return box
    # Nothing free near the point: the first free slot anywhere in the axes, top down.
    for row in range(int(inner.height // height)):
        for column in range(int(inner.width // width)):
            box = Bbox.from_bounds(
                inner.x0 + column * width, inner.y1 - (row + 1) * height, width, height
            )
            if not any(_overlaps(_span(box), other) for other in blocked):
                return box
    raise ValueError("no room left in the axes for another point label")


# A box's extents as plain floats, ordered (x0 <= x1, y0 <= y1): the placement tests
# thousands of pairs, and Bbox.overlaps re-reads both boxes' numpy extents on each call.
Span = tuple[float, float, float, float]


def _span(box: Bbox) -> Span:
    x0, y0, x1, y1 = (float(v) for v in box.extents)
    return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def _overlaps(a: Span, b: Span) -> bool:
    """``Bbox.overlaps``: the boxes intersect or touch."""
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _clamp(box: Bbox, inner: Bbox) -> Bbox:
    """``box`` moved (not resized) to lie inside ``inner``."""
    dx = max(inner.x0 - box.x0, 0.0) + min(inner.x1 - box.x1, 0.0)
    dy = max(inner.y0 - box.y0, 0.0) + min(inner.y1 - box.y1, 0.0)
    return box.translated(dx, dy)


def _marker_spans(ax: Axes, offsets: Any, scale: float) -> list[Span]:
    """The display boxes of a scatter's markers, all points transformed in one call (a
    call per point cost more than the placement itself)."""
    r = 2.0 * scale
    if len(offsets) == 0:
        return []
    return [
        (cx - r, cy - r, cx + r, cy + r)
        for cx, cy in np.asarray(ax.transData.transform(offsets), dtype=float).tolist()
    ]


def _renderer(fig: Figure) -> Any:
    """The Agg renderer measuring text, so placement uses the extents fonts really have."""
    canvas = fig.canvas
    if not hasattr(canvas, "get_renderer"):
        canvas = FigureCanvasAgg(fig)
    return canvas.get_renderer()


def _log_ticks(ax: Axes, axis: str, ticks: list[float], fmt=None) -> None:
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(mpl.ticker.FixedLocator(ticks))
    target.set_minor_locator(LogLocator(subs=()))
    target.set_minor_formatter(NullFormatter())
    target.set_major_formatter(
        FuncFormatter(fmt or (lambda v, _: f"{v:.3g}" if abs(v - 8 / 3) > 1e-9 else "8/3"))
    )


# --- analyses --------------------------------------------------------------------------


def year_spread_figure(
    title: str,
    ylabel: str,
    series: list[tuple[str, list[YearSpread]]],
    cut: Cutoff,
    *,
    log: bool = False,
) -> Figure | None:
    """Family-weighted medians by year, one line per series, with the middle half shaded;
    the partial year is drawn hollow and labelled with its cutoff."""
    drawn = [(label, points) for label, points in series if points]
    if not drawn:
        return None
    with style():
        fig = _figure(6.4, 2.8, left=0.14, bottom=0.17, right=0.76)
        ax = fig.add_subplot()
        for colour, (label, points) in zip(PALETTE, drawn, strict=False):
            years = [p.year for p in points]
            ax.fill_between(
                years, [p.q1 for p in points], [p.q3 for p in points], color=colour, alpha=0.15
            )
            ax.plot(years, [p.median for p in points], color=colour, marker="o", ms=3, label=label)
            for p in points:
                if cut.is_partial(p.year):
                    ax.plot([p.year], [p.median], marker="o", ms=7, mfc="white", color=colour)
        if log:
            ax.set_yscale("log")
        ax.set_xlabel(f"release year ({cut.note()})" if cut.partial else "release year")
        ax.set_ylabel(ylabel)
        ax.set_title(title, loc="left")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0f}"))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def layer_mix_figure(mix: list[LayerMix], cut: Cutoff) -> Figure | None:
    """Family-weighted share of cards mixing local with global attention, and recurrent
    mixers with attention, by year."""
    if not mix:
        return None
    with style():
        fig = _figure(6.4, 2.6, bottom=0.17)
        ax = fig.add_subplot()
        years = [m.year for m in mix]
        lines = (
            ([m.local_share for m in mix], "o", "local + global attention"),
            ([m.linear_share for m in mix], "s", "recurrent + attention"),
        )
        for colour, (shares, marker, label) in zip(PALETTE, lines, strict=False):
            ax.plot(years, shares, marker=marker, ms=3, color=colour, label=label)
        _share_axis(ax, years)
        ax.set_xlabel(f"release year ({cut.note()})" if cut.partial else "release year")
        ax.set_title("Stacks that mix layer kinds (family-weighted share)", loc="left")
        ax.legend(loc="upper left")  # the shares stay low: the corner is empty
    return fig


def adoption_lag_figure(lags: list[OrganizationLag], choices: list[str]) -> Figure | None:
    """Years from the field's first use to each organization's first use, one row per
    organization; blank where it never used the choice."""
    if not lags:
        return None
    with style():
        fig = _figure(6.4, 0.6 + 0.22 * len(lags), left=0.4, right=0.97, bottom=0.05, top=0.85)
        ax = fig.add_subplot()
        ax.grid(False)
        for y, org in enumerate(lags):
            for x, choice in enumerate(choices):
                lag = org.lag[choice]
                if lag is None:
                    continue
                ax.scatter([x], [y], s=40 + 25 * lag, color=PALETTE[min(lag, len(PALETTE) - 1)])
                ax.annotate(str(lag), (x, y), xytext=(7, -3), textcoords="offset points")
        ax.set_xticks(range(len(choices)), choices)
        ax.xaxis.tick_top()
        ax.set_yticks(range(len(lags)), [f"{_short(o.organization)} ({o.cards})" for o in lags])
        ax.set_ylim(len(lags) - 0.5, -0.5)
        ax.set_xlim(-0.5, len(choices) - 0.3)
        ax.set_title("Years after the field's first use, by organization", loc="left", pad=18)
    return fig


def concentration_figure(years: list[Concentration], cut: Cutoff) -> Figure | None:
    """The share of each year's cards that its largest family published."""
    if not years:
        return None
    with style():
        fig = _figure(6.4, 2.6, bottom=0.17)
        ax = fig.add_subplot()
        xs = [c.year for c in years]
        bars = ax.bar(xs, [c.share for c in years], color=PALETTE[0], width=0.7)
        for bar, c in zip(bars, years, strict=True):
            if cut.is_partial(c.year):
                bar.set_hatch("//")
                bar.set_facecolor("white")
                bar.set_edgecolor(PALETTE[0])
            ax.annotate(
                c.largest,
                (c.year, c.share),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                rotation=90,
                va="bottom",
                fontsize=6,
            )
        _share_axis(ax, xs)
        ax.set_ylim(0, 1.45)  # room for the family names above full bars
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_xlabel(f"release year ({cut.note()})" if cut.partial else "release year")
        ax.set_title("Share of a year's cards from its largest family", loc="left")
    return fig


def _short(text: str, width: int = 34) -> str:
    """A label cut to ``width`` characters, with an ellipsis when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"
