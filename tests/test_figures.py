"""Report figures: every text inside the figure, point labels inside their axes and apart,
the known share drawn, and the same bytes on every render."""

from __future__ import annotations

import io
from itertools import combinations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text

from archdb.reports import build, figures
from archdb.table import catalogue_frame
from tests.conftest import FreshBuild
from tests.test_table import make_card


@pytest.fixture(scope="module")
def report_figures(fresh_shipped_build: FreshBuild) -> dict[str, Figure]:
    """Every figure `archdb report` makes from the shipped catalogue, by file name: the
    Figure objects of the session's fresh build (tests/conftest.py), whose SVG bytes
    test_reports.py compares with the shared render's."""
    return fresh_shipped_build.figures


def _drawn(fig: Figure):
    """Laid out by a draw with Agg's text metrics, no pixels rasterized: the checks read
    extents, which are the same either way."""
    canvas = FigureCanvasAgg(fig)
    with figures.style():
        fig.draw_without_rendering()
    return canvas.get_renderer()


def _texts(fig: Figure) -> list[Text]:
    """Titles, point labels and legend entries (tick labels: see the tight box)."""
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.get_legend() is not None:
            texts += ax.get_legend().get_texts()
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _check_labels(fig: Figure) -> int:
    """Assert every text is inside the figure and point labels are inside and apart."""
    renderer = _drawn(fig)
    page = fig.bbox
    drawn = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)  # inches -> pixels
    assert page.x0 - 0.5 <= drawn.x0 and drawn.x1 <= page.x1 + 0.5, (fig, drawn, page)
    assert page.y0 - 0.5 <= drawn.y0 and drawn.y1 <= page.y1 + 0.5, (fig, drawn, page)
    for text in _texts(fig):
        box = text.get_window_extent(renderer)
        assert page.x0 - 0.5 <= box.x0 and box.x1 <= page.x1 + 0.5, text.get_text()
        assert page.y0 - 0.5 <= box.y0 and box.y1 <= page.y1 + 0.5, text.get_text()
    labelled = 0
    for ax in fig.axes:
        labels = [t for t in ax.texts if isinstance(t, Annotation)]
        # the text itself: an Annotation's own extent adds its leader line
        boxes = [(t.get_text(), Text.get_window_extent(t, renderer)) for t in labels]
        legend = ax.get_legend()
        legend_box = legend.get_window_extent(renderer) if legend is not None else None
        for name, box in boxes:
            assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1, f"{name} leaves the axes"
            assert ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1, f"{name} leaves the axes"
            if legend_box is not None:
                assert not box.overlaps(legend_box), name
        for (a, box_a), (b, box_b) in combinations(boxes, 2):
            assert not box_a.overlaps(box_b), f"{a} overlaps {b}"
        labelled += len(labels)
    return labelled


def test_every_report_figure_keeps_its_texts_inside_and_labels_apart(report_figures) -> None:
    assert {"d-ff-ratio", "vocab", "kv-cache", "aspect-ratio", "consensus"} <= set(report_figures)
    labelled = {name: _check_labels(fig) for name, fig in report_figures.items()}
    assert labelled["d-ff-ratio"] >= 5 and labelled["vocab"] >= 10  # labels exist to check


def test_crowded_labels_at_the_edge_are_placed_apart_inside() -> None:
    """Twelve models released the same day with nearly the same ratio, the latest date on
    the axis: every label would start at the right edge and on top of the others."""
    cards = [
        make_card(f"crowded-model-{i:02d}", {"architecture.mlp.d_ff": 4096 + 64 * i}, year=2025)
        for i in range(12)
    ]
    cards.append(make_card("early-1b", year=2019))
    frame = catalogue_frame(cards)
    fig = figures.d_ff_figure(frame, {c.id for c in cards})
    assert _check_labels(fig) == 13


def test_figures_show_how_many_values_are_known(report_figures) -> None:
    z_loss = report_figures["adoption-z-loss"]
    ticks = [t.get_text() for t in z_loss.axes[0].get_xticklabels()]
    # each year: "k/n" of its families, then of its cards, with a known value
    latest, families, cards = ticks[-1].split("\n")
    k, n = map(int, families.split("/"))
    assert 0 < k < n, ticks
    assert int(cards.split("/")[0]) >= k
    bars = [p.get_height() for p in z_loss.axes[0].patches]
    assert bars and max(bars) < 1  # no year has every family's z-loss
    titles = [ax.get_title(loc="left") for ax in report_figures["consensus"].axes]
    assert any(t.startswith("Z-loss:") and "too few known: " in t for t in titles), titles
    assert latest.rstrip("*") == max(t.split("\n")[0].rstrip("*") for t in ticks)


def test_figures_render_to_the_same_bytes(report_figures, fresh_shipped_build) -> None:
    """Saved again, after the layout tests' draws, a figure gives the bytes its build
    wrote."""
    for name in ("d-ff-ratio", "vocab", "consensus"):
        again = io.BytesIO()
        figures.save_svg(report_figures[name], again)
        built = fresh_shipped_build.output / build.FIGURES / f"{name}.svg"
        assert again.getvalue() == built.read_bytes(), name


def test_point_labels_cannot_be_misread(report_figures) -> None:
    """Each labelled point is ringed, once; a label away from its point has a leader line
    to it; points at one spot share one label."""
    for name in ("kv-cache", "vocab", "aspect-ratio", "d-ff-ratio"):
        fig = report_figures[name]
        _drawn(fig)
        ax = fig.axes[0]
        labels = [t for t in ax.texts if isinstance(t, Annotation)]
        rings = [c for c in ax.collections if len(c.get_facecolors()) == 0]
        assert len(rings) == 1 and len(rings[0].get_offsets()) == len(labels), name
        scale = fig.dpi / 72
        for label in labels:
            px, py = ax.transData.transform(label.xy)
            box = Text.get_window_extent(label)
            dx = max(box.x0 - px, 0.0, px - box.x1)
            dy = max(box.y0 - py, 0.0, py - box.y1)
            near = (dx * dx + dy * dy) ** 0.5 <= (figures.RING_RADIUS + 2.5) * scale
            assert near or label.arrow_patch is not None, (name, label.get_text())
        spots = [tuple(ax.transData.transform(t.xy).round()) for t in labels]
        assert len(spots) == len(set(spots)), name


def test_models_at_one_spot_share_one_label() -> None:
    cards = [make_card(card_id, year=2024) for card_id in ("twin-a-1b", "twin-b-1b")]
    cards.append(make_card("other-1b", {"architecture.mlp.d_ff": 2048}, year=2020))
    fig = figures.d_ff_figure(catalogue_frame(cards), {c.id for c in cards})
    labels = sorted(t.get_text() for t in fig.axes[0].texts if isinstance(t, Annotation))
    assert labels == ["other-1b", "twin-a-1b, twin-b-1b"]


def test_legends_inside_the_axes_cover_no_point(report_figures) -> None:
    for name, fig in report_figures.items():
        renderer = _drawn(fig)
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            box = legend.get_window_extent(renderer)
            if not box.overlaps(ax.bbox):
                continue  # beside or below the axes
            for collection in ax.collections:
                offsets = collection.get_offsets()
                if len(offsets) == 0:
                    continue
                for x, y in ax.transData.transform(offsets):
                    assert not box.contains(x, y), (name, legend.get_texts()[0].get_text())
