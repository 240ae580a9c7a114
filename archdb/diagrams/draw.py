"""A ``Diagram`` drawn as static SVG (no script), top to bottom: the title and facts; the
embedding; each stack as a strip of its layers (one cell a layer, its token mixer above
and its MLP below, lettered by layer type, rows wrapped at a multiple of the pattern's
period so the pattern lines up, thousands of layers as runs) with each kind's count; each
layer type opened up (the residual stream on the left, each sublayer branching off it and
returning at a ⊕, the norms where the plan puts them); the head. Every string is escaped
where it is written; the same diagram gives the same bytes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

from .read import (
    MLP_COLOURS,
    Diagram,
    LayerType,
    Part,
    StackView,
    mixer_colour,
    mixer_words,
    norms_words,
)

# --- drawing ---------------------------------------------------------------------------------

WIDTH = 400  # the diagram's width in pixels: a phone shows it whole, a desktop 3 side by side
MARGIN = 10
INNER = WIDTH - 2 * MARGIN
CHAR = 0.6  # a character's width, in font sizes (DejaVu Sans and its kin, for wrapping)
TITLE_SIZE, DETAIL_SIZE = 11.5, 10.5  # a box's title and its lines, pixels
LINE = 13.5  # pixels a detail line takes
CELL_MIN = 9  # narrowest cell of a strip, pixels
CELL_MAX = 36
MAX_ROWS = 14  # beyond this many rows a strip draws runs of equal layers in one row
RESIDUAL_X = MARGIN + 8  # the residual stream's line in an opened block
BRANCH_X = MARGIN + 24  # where a block's sublayers start
FILLS = {
    "attention": "#d6e6f5",
    "cross": "#d9ead3",
    "mixer": "#fde9c9",
    "mlp": "#e8e8e8",
    "moe": "#d0d0d0",
    "norm": "#f4f4f4",
    "embedding": "#fff2cc",
    "head": "#fff2cc",
    "mtp": "#f3e6f7",
}


def wrap(text: str, width: float, size: float) -> list[str]:
    """``text`` in lines of at most ``width`` pixels at font ``size`` (by CHAR), split at
    spaces; a word longer than a line is cut."""
    limit = max(8, int(width / (CHAR * size)))
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        while len(word) > limit:
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:limit])
            word = word[limit:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= limit:
            current = candidate
        else:
            lines.append(current)
            current = word
    if current or not lines:
        lines.append(current)
    return lines


@dataclass
class _Canvas:
    """SVG elements, appended top to bottom; ``y`` is the next free row."""

    parts: list[str] = field(default_factory=list)
    y: float = 0.0

    def text(
        self,
        x: float,
        y: float,
        words: str,
        size: float = 11,
        weight: str = "normal",
        anchor: str = "start",
        fill: str = "#1d2330",
        css: str = "",
    ) -> None:
        cls = f' class="{css}"' if css else ""
        bold = ' font-weight="bold"' if weight == "bold" else ""
        end = f' text-anchor="{anchor}"' if anchor != "start" else ""
        self.parts.append(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}"{bold}{end} fill="{fill}"{cls}>'
            f"{escape(words)}</text>"
        )

    def rect(
        self,
        x: float,
        y: float,
        w: float,
        h: float,
        fill: str,
        stroke: str = "#555555",
        rx: float = 3,
        width: float = 0.7,
    ) -> None:
        self.parts.append(
            f'<rect x="{x:.2f}" y="{y:.1f}" width="{w:.2f}" height="{h:.1f}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{width:g}" rx="{rx:g}"/>'
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#666666",
             width: float = 1.2) -> None:  # fmt: skip
        self.parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{stroke}" stroke-width="{width:g}"/>'
        )

    def paragraph(self, x: float, words: str, width: float, size: float = 11,
                  weight: str = "normal", fill: str = "#1d2330") -> None:  # fmt: skip
        for line in wrap(words, width, size):
            self.y += size + 3
            self.text(x, self.y, line, size, weight, fill=fill)


def _box(canvas: _Canvas, x: float, w: float, part: Part, fill: str | None = None) -> float:
    """A part as a box at the canvas's row: its title bold, its lines below; returns the
    box's height (the canvas's row moves below it)."""
    title = wrap(part.title, w - 12, TITLE_SIZE)
    lines = [line for detail in part.lines for line in wrap(detail, w - 12, DETAIL_SIZE)]
    h = 8 + 14 * len(title) + LINE * len(lines)
    canvas.rect(x, canvas.y, w, h, fill or FILLS.get(part.role, "#ffffff"))
    y = canvas.y + 3
    for line in title:
        y += 14
        canvas.text(x + 6, y, line, TITLE_SIZE, "bold")
    for line in lines:
        y += LINE
        canvas.text(x + 6, y, line, DETAIL_SIZE)
    canvas.y += h
    return h


def _period(sequence: list[int], limit: int = 64) -> int:
    """The shortest period the sequence repeats with (a partial last repeat allowed)."""
    n = len(sequence)
    for p in range(1, min(limit, n) + 1):
        if all(sequence[i] == sequence[i - p] for i in range(p, n)):
            return p
    return n


def _row_length(n: int, period: int) -> int:
    """Cells in a row of the strip: as many as fit, a multiple of the pattern's period
    when it fits a row (so the pattern lines up in columns), rows about equally full."""
    fit = int((INNER - 26) // CELL_MIN)
    if n <= fit:
        return n
    rows = math.ceil(n / fit)
    even = math.ceil(n / rows)
    if period < n and period <= fit:
        return min(fit // period, math.ceil(even / period)) * period
    return even


def _strip(canvas: _Canvas, stack: StackView) -> None:
    """A stack's layers as cells (mixer above, MLP below), in rows numbered by their first
    layer; each cell of a stack with several layer types carries its type's letter."""
    n = stack.n_layers
    mlps = stack.mlps()
    period = _period(list(stack.which))
    row = _row_length(n, period)
    rows = math.ceil(n / row)
    x0 = MARGIN + 26
    if rows > MAX_ROWS:  # thousands of layers: one row of runs of equal layers
        _run_strip(canvas, stack, x0)
        return
    cell = min(CELL_MAX, (WIDTH - MARGIN - x0) / row)
    lettered = len(stack.types) > 1 and cell >= 8
    marked = set(stack.marked)
    for r in range(rows):
        y = canvas.y + 6
        canvas.text(x0 - 4, y + 12, f"{r * row + 1}", 9, anchor="end", fill="#5b6475")
        for c in range(min(row, n - r * row)):
            i = r * row + c
            x = x0 + c * cell
            kind = stack.kinds[i]
            canvas.rect(x, y, cell, 16, mixer_colour(kind), "#ffffff", 0, 0.6)
            canvas.rect(x, y + 16, cell, 6, MLP_COLOURS[mlps[i]], "#ffffff", 0, 0.6)
            if lettered:
                ink = "#ffffff" if _dark(mixer_colour(kind)) else "#1d2330"
                canvas.text(x + cell / 2, y + 12, stack.types[stack.which[i]].letter, 9,
                            anchor="middle", fill=ink)  # fmt: skip
            if i in marked:
                canvas.text(x + cell / 2, y - 1, "▼", 7, anchor="middle", fill="#882255")
        canvas.y = y + 22 + (4 if marked else 0)
    canvas.y += 4
    if 1 < period <= n // 2:
        canvas.paragraph(
            MARGIN,
            f"pattern: {_pattern_words(stack, period)}, repeated over {n} layers",
            INNER,
            10,
            fill="#5b6475",
        )


def _run_strip(canvas: _Canvas, stack: StackView, x0: float) -> None:
    n, mlps = stack.n_layers, stack.mlps()
    unit = (WIDTH - MARGIN - x0) / n
    y = canvas.y + 6
    canvas.text(x0 - 4, y + 12, "1", 9, anchor="end", fill="#5b6475")
    start = 0
    for i in range(1, n + 1):
        if i < n and (stack.kinds[i], mlps[i]) == (stack.kinds[start], mlps[start]):
            continue
        x, w = x0 + start * unit, (i - start) * unit
        canvas.rect(x, y, w, 16, mixer_colour(stack.kinds[start]), "#ffffff", 0, 0.3)
        canvas.rect(x, y + 16, w, 6, MLP_COLOURS[mlps[start]], "#ffffff", 0, 0.3)
        start = i
    canvas.y = y + 26


def _pattern_words(stack: StackView, period: int) -> str:
    runs: list[list] = []
    for t in stack.which[:period]:
        letter = stack.types[t].letter
        if runs and runs[-1][0] == letter:
            runs[-1][1] += 1
        else:
            runs.append([letter, 1])
    return " ".join(f"{letter}×{k}" if k > 1 else letter for letter, k in runs)


def _dark(colour: str) -> bool:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b < 140


def _legend(canvas: _Canvas, stack: StackView) -> None:
    """Each mixer kind and MLP kind of the stack with its count."""
    for kind, count in stack.kind_counts():
        canvas.y += 15
        canvas.rect(MARGIN, canvas.y - 9, 10, 10, mixer_colour(kind), "#666666", 1)
        canvas.text(MARGIN + 16, canvas.y, f"{mixer_words(kind)} × {count}", 11)
    for words, count in stack.mlp_counts():
        canvas.y += 15
        canvas.rect(MARGIN, canvas.y - 6, 10, 5, MLP_COLOURS[words], "#666666", 1)
        canvas.text(MARGIN + 16, canvas.y, f"{words} × {count}", 11)
    canvas.y += 6


def _norm_box(canvas: _Canvas, x: float, w: float, name: str, where: str) -> None:
    canvas.rect(x, canvas.y, w, 17, FILLS["norm"], "#888888")
    canvas.text(x + w / 2, canvas.y + 12, f"{name} {where}".strip(), 10, anchor="middle")
    canvas.y += 17


def _add(canvas: _Canvas, from_x: float) -> None:
    """A residual add: the branch returns to the stream at a ⊕."""
    y = canvas.y + 9
    canvas.line(from_x, canvas.y, from_x, y, "#888888", 1)
    canvas.line(RESIDUAL_X + 6, y, from_x, y, "#888888", 1)
    canvas.parts.append(
        f'<circle cx="{RESIDUAL_X}" cy="{y:.1f}" r="6" fill="#ffffff" stroke="#444444" '
        'stroke-width="1"/>'
    )
    canvas.text(RESIDUAL_X, y + 4, "+", 11, "bold", "middle")
    canvas.y = y + 9


def _branch(canvas: _Canvas) -> None:
    """The stream feeds a sublayer: a line from the residual stream to the sublayer's
    first box, drawn next at the canvas's row."""
    canvas.y += 6
    y = canvas.y + 8
    canvas.line(RESIDUAL_X, y, BRANCH_X, y, "#888888", 1)


def _block(
    canvas: _Canvas, layer: LayerType, single: bool, seen: dict[str, str], norms_said: bool
) -> None:
    """One layer type opened up: the residual stream on the left, each sublayer branching
    off it and returning at a ⊕, its norms where the plan puts them."""
    heading = (
        f"each layer ({layer.count}), opened up"
        if single
        else f"{layer.letter}: {layer.count} layer{'s' if layer.count > 1 else ''}"
    )
    canvas.y += 8
    if not single:
        canvas.rect(MARGIN, canvas.y, 16, 16, mixer_colour(layer.kind), "#666666", 2)
        ink = "#ffffff" if _dark(mixer_colour(layer.kind)) else "#1d2330"
        canvas.text(MARGIN + 8, canvas.y + 12, layer.letter, 10, "bold", "middle", ink)
    canvas.text(MARGIN + (0 if single else 22), canvas.y + 12, heading, 11.5, "bold")
    canvas.y += 18
    shape = layer.shape
    if not norms_said:
        canvas.paragraph(MARGIN, norms_words(shape.norms), INNER, 10.5, fill="#5b6475")
        canvas.y += 4
    top, first = canvas.y, len(canvas.parts)
    slots = shape.norms.slots
    name = shape.norms.name
    w = WIDTH - MARGIN - BRANCH_X
    if shape.parallel and len(shape.sublayers) == 2:
        _branch(canvas)
        if slots.before:
            if shape.shared_norm:
                _norm_box(canvas, BRANCH_X, w, name, "(one, feeding both)")
            else:
                half = (w - 8) / 2
                y = canvas.y
                _norm_box(canvas, BRANCH_X, half, name, "")
                canvas.y = y
                _norm_box(canvas, BRANCH_X + half + 8, half, name, "")
            canvas.y += 4
        half = (w - 8) / 2
        y = canvas.y
        heights = []
        for k, part in enumerate(shape.sublayers):
            canvas.y = y
            heights.append(_box(canvas, BRANCH_X + k * (half + 8), half, _seen(part, seen)))
        canvas.y = y + max(heights)
        canvas.text(BRANCH_X + w / 2, canvas.y + 10, "in parallel, summed", 9, anchor="middle",
                    fill="#5b6475")  # fmt: skip
        canvas.y += 12
        _add(canvas, BRANCH_X + w / 2)
        if slots.after:
            _norm_box(canvas, MARGIN, INNER, name, "(after the add)")
    else:
        for k, part in enumerate(shape.sublayers):
            _branch(canvas)
            normed = k not in shape.unnormed
            if slots.before and normed:
                where = "(normed input also on the skip)" if slots.normed_skip else ""
                _norm_box(canvas, BRANCH_X, w, name, where)
                canvas.y += 3
            _box(canvas, BRANCH_X, w, _seen(part, seen))
            if slots.branch and normed:
                canvas.y += 3
                _norm_box(canvas, BRANCH_X, w, name, "(on the output)")
            _add(canvas, BRANCH_X + w / 2)
            if slots.after and normed:
                canvas.y += 2
                _norm_box(canvas, MARGIN, INNER, name, "(after the add)")
            canvas.y += 2
    canvas.parts.insert(  # the stream, under what joins it
        first,
        f'<line x1="{RESIDUAL_X}" y1="{top:.1f}" x2="{RESIDUAL_X}" y2="{canvas.y:.1f}" '
        'stroke="#444444" stroke-width="1.6"/>',
    )
    for note in shape.notes:
        canvas.paragraph(MARGIN, f"· {note}", INNER, 10.5, fill="#5b6475")
    canvas.y += 4


def _seen(part: Part, seen: dict[str, str]) -> Part:
    """A part drawn in full the first time; a later layer type with the very same part
    names the type that shows it."""
    key = part.words
    if key in seen and part.lines:
        return Part(part.role, part.title, (f"as in layer type {seen[key]}",))
    return part


def render(diagram: Diagram) -> str:
    """The diagram as an SVG document (a str)."""
    canvas = _Canvas()
    canvas.y = 4
    canvas.paragraph(MARGIN, diagram.title, INNER, 14, "bold")
    canvas.paragraph(MARGIN, diagram.facts, INNER, 10.5, fill="#5b6475")
    if diagram.unknown:
        canvas.paragraph(MARGIN, f"drawn from the card's fields: {diagram.unknown}", INNER,
                         10.5, fill="#9b1c12")  # fmt: skip
    canvas.y += 8
    _box(canvas, MARGIN, INNER, diagram.embedding)
    for stack in diagram.stacks:
        canvas.y += 14
        direction = "causal" if stack.role.causal else "bidirectional"
        canvas.paragraph(
            MARGIN, f"{stack.role.name}: {stack.n_layers} layers, {direction}", INNER, 12.5, "bold"
        )
        _strip(canvas, stack)
        _legend(canvas, stack)
        for part in stack.shared:
            canvas.y += 4
            _box(canvas, MARGIN, INNER, part)
        seen: dict[str, str] = {}
        norms = {layer.shape.norms for layer in stack.types}
        said = len(norms) == 1  # the same in every layer: said once for the stack
        if said:
            canvas.paragraph(MARGIN, norms_words(next(iter(norms))), INNER, 10.5)
        for layer in stack.types:
            _block(canvas, layer, len(stack.types) == 1, seen, said)
            for part in layer.shape.sublayers:
                seen.setdefault(part.words, layer.letter)
        for note in stack.notes:
            canvas.paragraph(MARGIN, f"· {note}", INNER, 10.5, fill="#5b6475")
    if not diagram.stacks:
        canvas.y += 8
        canvas.paragraph(MARGIN, diagram.pattern or "layer count unknown", INNER, 11)
    canvas.y += 10
    _box(canvas, MARGIN, INNER, diagram.head)
    for part in diagram.extras:
        canvas.y += 8
        _box(canvas, MARGIN, INNER, part)
    if diagram.assumed:
        canvas.y += 4
        canvas.paragraph(
            MARGIN,
            "assumed (unknown on the card): " + "; ".join(diagram.assumed),
            INNER,
            9.5,
            fill="#5b6475",
        )
    height = math.ceil(canvas.y + 10)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" font-family="DejaVu Sans, Verdana, sans-serif" '
        f'role="img" aria-label="{escape(diagram.title)}">'
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>'
        + "".join(canvas.parts)
        + "</svg>\n"
    )
