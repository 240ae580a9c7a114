"""An architecture diagram of a card, drawn from its plan as static SVG (no script).

Top to bottom: the embedding; each stack as a strip of its layers, one cell a layer, the
top half its token mixer and the bottom half its MLP, with each kind's count in a legend
(readable at 10 layers and at 126); one block opened up (the norms where the card puts
them, the attention with its heads, the MLP or MoE with its experts, parallel or serial,
soft-caps, sinks, gates); and the head. Every string that comes from the card is escaped.

``diagram_svg(card)`` is a pure function: the same card gives the same bytes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from html import escape

from archdb.measure.analytic import param_count
from archdb.plan import make_plan
from archdb.plan.layout import BuildError, fill_unknowns
from archdb.plan.mlp import MoESpec
from archdb.schema import Architecture, AttentionVariant, Card, LayerKind, NormPosition

WIDTH = 600
STRIP_WIDTH = 560  # pixels the layers of a stack share
MAX_CELLS = 1024  # beyond this many layers a strip draws runs of equal layers

# Each layer kind's words and colour (Okabe-Ito, as the reports' figures).
MIXER_WORDS = {
    LayerKind.GLOBAL: ("global attention", "#0072B2"),
    LayerKind.LOCAL: ("local (sliding-window) attention", "#56B4E9"),
    LayerKind.GLOBAL_NOPE: ("global attention, no positions", "#CC79A7"),
    LayerKind.CHUNKED: ("chunked attention", "#009E73"),
    LayerKind.MAMBA2: ("Mamba-2 (state space)", "#E69F00"),
    LayerKind.MAMBA: ("Mamba (state space)", "#E69F00"),
    LayerKind.GATED_DELTANET: ("Gated DeltaNet (linear attention)", "#D55E00"),
    LayerKind.KDA: ("KDA (linear attention)", "#D55E00"),
    LayerKind.LIGHTNING: ("lightning (linear) attention", "#D55E00"),
    LayerKind.RG_LRU: ("RG-LRU (recurrent)", "#F0E442"),
    LayerKind.SHORT_CONV: ("short convolution", "#999933"),
    LayerKind.GLOBAL_MAMBA2: ("attention beside Mamba-2 (parallel)", "#882255"),
    LayerKind.MLP: ("no token mixer (MLP only)", "#dddddd"),
    LayerKind.MOE: ("no token mixer (MoE only)", "#dddddd"),
}
MLP_COLOURS = {"dense MLP": "#7f7f7f", "MoE": "#000000", "no MLP": "#f2f2f2"}


@dataclass
class _Canvas:
    """SVG elements appended top to bottom."""

    parts: list[str] = field(default_factory=list)
    y: float = 0.0

    def text(self, x: float, y: float, words: str, size: int = 12, weight: str = "normal",
             anchor: str = "start") -> None:  # fmt: skip
        self.parts.append(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" font-weight="{weight}" '
            f'text-anchor="{anchor}">{escape(words)}</text>'
        )

    def box(self, x: float, y: float, w: float, h: float, fill: str, label: str = "",
            stroke: str = "#333333") -> None:  # fmt: skip
        self.parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="0.6" rx="3"/>'
        )
        if label:
            self.text(x + w / 2, y + h / 2 + 4, label, 11, anchor="middle")


def _mixer_words(arch: Architecture, kind: LayerKind) -> str:
    words, _ = MIXER_WORDS.get(kind, (kind.value, "#999999"))
    att = arch.attention
    if kind.attention and att.variant is AttentionVariant.LINEAR:
        words = "linear attention"
    elif kind.attention and att.variant is AttentionVariant.LATENT:
        words = words.replace("attention", "latent attention (MLA)", 1)
    if kind is LayerKind.LOCAL and att.sliding_window:
        words += f", window {att.sliding_window:,}"
    return words


def _mlp_words(mlp: object) -> str:
    if mlp is None:
        return "no MLP"
    return "MoE" if isinstance(mlp, MoESpec) else "dense MLP"


@dataclass(frozen=True)
class StackLayers:
    """A stack's layers as words: each layer's mixer and MLP, in order."""

    name: str
    mixers: list[str]
    colours: list[str]
    mlps: list[str]


def stack_layers(card: Card) -> list[StackLayers]:
    """Each stack of the card (encoder first) as its layers' mixer and MLP words: the MLPs
    from the card's plan, or from its fields when a size it needs is unknown."""
    arch, _ = fill_unknowns(card.architecture)
    if not arch.n_layers:
        return []
    try:
        plan = make_plan(arch)
    except BuildError:
        plan = None
    stacks = [("decoder", arch.n_layers, arch.layer_kinds())]
    if arch.n_encoder_layers:  # an encoder's layers attend globally, in both directions
        stacks.insert(
            0, ("encoder", arch.n_encoder_layers, [LayerKind.GLOBAL] * arch.n_encoder_layers)
        )
    out = []
    for index, (name, _, pattern) in enumerate(stacks):
        mixers = [_mixer_words(arch, k) for k in pattern]
        colours = [MIXER_WORDS.get(k, ("", "#999999"))[1] for k in pattern]
        if plan is not None:
            stack = plan.stacks[index]
            mlps = [_mlp_words(getattr(b, "mlp", None)) for b in stack.layers()]
        else:
            mlps = [_card_mlp(arch, i, k) for i, k in enumerate(pattern)]
        out.append(StackLayers(name, mixers, colours, mlps))
    return out


def _card_mlp(arch: Architecture, index: int, kind: LayerKind) -> str:
    """A layer's MLP read from the card alone (its plan could not be made)."""
    if kind is LayerKind.MOE:
        return "MoE"
    moe = arch.mlp.moe
    if moe is None or index < (moe.first_dense_layers or 0):
        return "dense MLP"
    return "MoE"


def _strip(canvas: _Canvas, layers: StackLayers, x: float) -> None:
    """A stack's layers as cells (mixer above, MLP below) and its legend with counts."""
    n = len(layers.mixers)
    y = canvas.y
    canvas.text(x, y + 12, f"{layers.name}: {n} layers", 12, "bold")
    y += 18
    cells = _runs(layers) if n > MAX_CELLS else [(m, c, p, 1) for m, c, p in
                                                   zip(layers.mixers, layers.colours, layers.mlps,
                                                       strict=True)]  # fmt: skip
    unit = STRIP_WIDTH / max(n, 1)
    cx = x
    for _, colour, mlp, count in cells:
        w = unit * count
        canvas.parts.append(
            f'<rect x="{cx:.2f}" y="{y:.1f}" width="{w:.2f}" height="16" fill="{colour}" '
            'stroke="#ffffff" stroke-width="0.3"/>'
        )
        canvas.parts.append(
            f'<rect x="{cx:.2f}" y="{y + 16:.1f}" width="{w:.2f}" height="7" '
            f'fill="{MLP_COLOURS[mlp]}" stroke="#ffffff" stroke-width="0.3"/>'
        )
        cx += w
    y += 30
    mixer_counts = Counter(layers.mixers)
    colour_of = dict(zip(layers.mixers, layers.colours, strict=True))
    for words, count in sorted(mixer_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        canvas.box(x, y, 10, 10, colour_of[words], stroke="#666666")
        canvas.text(x + 16, y + 9, f"{words} × {count}", 11)
        y += 15
    for words, count in sorted(Counter(layers.mlps).items(), key=lambda kv: (-kv[1], kv[0])):
        canvas.box(x, y + 2, 10, 6, MLP_COLOURS[words], stroke="#666666")
        canvas.text(x + 16, y + 9, f"{words} × {count}", 11)
        y += 15
    canvas.y = y + 6


def _runs(layers: StackLayers) -> list[tuple[str, str, str, int]]:
    runs: list[tuple[str, str, str, int]] = []
    for m, c, p in zip(layers.mixers, layers.colours, layers.mlps, strict=True):
        if runs and runs[-1][:3] == (m, c, p):
            runs[-1] = (m, c, p, runs[-1][3] + 1)
        else:
            runs.append((m, c, p, 1))
    return runs


def norm_words(arch: Architecture) -> str:
    norm = arch.norm
    kind = norm.type.value if norm.type is not None else "norm"
    where = {
        NormPosition.PRE: "before each sublayer (pre-norm)",
        NormPosition.POST: "after each residual add (post-norm)",
        NormPosition.DOUBLE: "before and after each sublayer (double norm)",
    }.get(norm.position, norm.position.value if norm.position is not None else "unknown")
    return f"{kind} {where}"


def attention_words(arch: Architecture) -> str:
    att = arch.attention
    parts = [f"{att.variant.value if att.variant else 'attention'}"]
    if att.n_heads:
        heads = f"{att.n_heads} heads"
        if att.n_kv_heads and att.n_kv_heads != att.n_heads:
            heads += f", {att.n_kv_heads} KV heads"
        parts.append(heads)
    if arch.head_dim_effective:
        parts.append(f"head_dim {arch.head_dim_effective}")
    if att.qk_norm and att.qk_norm.value != "none":
        parts.append(f"QK norm ({att.qk_norm.value})")
    if att.logit_softcap:
        parts.append(f"logit soft-cap {att.logit_softcap:g}")
    if att.sinks:
        parts.append("sinks")
    if att.output_gate:
        parts.append(f"output gate ({att.output_gate.value})")
    if att.sparse is not None:
        parts.append(f"sparse: top-{att.sparse.top_k:,} keys")
    parts.append(position_words(arch))
    return ", ".join(parts)


def position_words(arch: Architecture) -> str:
    position = arch.position
    if position.type is None:
        return "positions unknown"
    if position.type.value == "none":
        return "no position encoding (NoPE)"
    if position.type.value == "rope":
        words = "RoPE"
        if position.rope_theta:
            words += f" θ {position.rope_theta:,.0f}"
        if position.rotary_fraction not in (None, 1.0):
            words += f" on {position.rotary_fraction:g} of each head"
        return words
    return position.type.value


def mlp_words(arch: Architecture) -> str:
    mlp = arch.mlp
    if mlp.activation is None and mlp.d_ff is None and mlp.moe is None:
        return "no MLP"
    act = mlp.activation.value if mlp.activation else "activation unknown"
    if mlp.moe is None:
        return f"dense MLP: {act}, d_ff {_number(mlp.d_ff)}"
    moe = mlp.moe
    words = f"MoE: {moe.n_experts} experts, top-{moe.n_active}"
    if moe.n_shared:
        words += f", {moe.n_shared} shared"
    words += f", {act}, expert d_ff {_number(mlp.d_ff)}"
    if moe.first_dense_layers:
        words += f"; first {moe.first_dense_layers} layers dense"
    return words


def _block(canvas: _Canvas, arch: Architecture, x: float, stacks: list[StackLayers]) -> None:
    """One block opened up, serial or parallel, with the norms where the card puts them:
    an attention layer where the stack has one, else its most common layer."""
    y = canvas.y
    cross = len(stacks) == 2
    attends = any(k.attention for k in arch.attention.layer_pattern)
    decoder = stacks[-1] if stacks else None
    if attends or decoder is None:
        title, mixer_label = "one block (an attention layer)", f"attention: {attention_words(arch)}"
    else:
        common = Counter(decoder.mixers).most_common(1)[0][0]
        title, mixer_label = f"one block (a {common} layer)", common
    has_mlp = decoder is None or any(m != "no MLP" for m in decoder.mlps)
    canvas.text(x, y + 12, title, 12, "bold")
    y += 22
    norm = norm_words(arch)
    position = arch.norm.position
    w = 520
    mlp_label = mlp_words(arch)

    def norm_box(label: str = "") -> None:
        nonlocal y
        canvas.box(x + 40, y, w - 80, 18, "#eeeeee", label or norm)
        y += 24

    canvas.text(x, y + 4, f"norm: {norm}", 11)
    y += 14
    if arch.parallel_layers:
        norm_box()
        half = (w - 20) / 2
        canvas.box(x, y, half, 34, "#cfe3f3", "attention")
        canvas.box(x + half + 20, y, half, 34, "#e5e5e5", "MLP (parallel)")
        y += 40
        canvas.text(x, y + 10, mixer_label, 10)
        canvas.text(x, y + 24, mlp_label, 10)
        y += 32
        canvas.box(x + w / 2 - 9, y, 18, 18, "#ffffff", "+")
        y += 26
    else:
        sublayers = [("#cfe3f3", mixer_label)]
        if cross:
            sublayers.append(("#d9ead3", "cross-attention to the encoder"))
        if has_mlp:
            sublayers.append(("#e5e5e5", mlp_label))
        for fill, label in sublayers:
            if position in (NormPosition.PRE, NormPosition.DOUBLE, None):
                norm_box()
            canvas.box(x, y, w, 30, fill, _fit(label))
            y += 36
            if position in (NormPosition.DOUBLE, NormPosition.POST_BRANCH):
                norm_box()
            canvas.box(x + w / 2 - 9, y, 18, 18, "#ffffff", "+")
            y += 24
            if position is NormPosition.POST:
                norm_box()
    canvas.text(x, y + 10, "serial" if not arch.parallel_layers else "parallel", 10)
    canvas.y = y + 18


def _number(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _fit(label: str, chars: int = 86) -> str:
    return label if len(label) <= chars else label[: chars - 1] + "…"


def diagram_svg(card: Card) -> str:
    """The card's architecture as an SVG document (a str)."""
    arch, _ = fill_unknowns(card.architecture)
    canvas = _Canvas()
    x = 20
    title = f"{card.name} ({card.id}): {arch.kind.value if arch.kind else 'kind unknown'}"
    canvas.text(x, 24, title, 15, "bold")
    try:
        size = f"{param_count(arch).total:,} parameters (exact, built)"
    except BuildError:
        size = "parameters not computable (a size is unknown)"
    canvas.text(x, 42, f"{size}; d_model {_number(arch.d_model)}", 11)
    canvas.y = 56
    embed = f"embedding: {_number(arch.vocab_size)} tokens × {_number(arch.d_model)}"
    canvas.box(x, canvas.y, 520, 24, "#fff2cc", embed)
    canvas.y += 32
    stacks = stack_layers(card)
    for layers in stacks:
        _strip(canvas, layers, x)
    if not stacks:
        canvas.text(x, canvas.y + 10, "layer count unknown", 11)
        canvas.y += 18
    if arch.shared_blocks is not None:
        sb = arch.shared_blocks
        canvas.text(x, canvas.y + 10, f"shared attention blocks: {sb.n_blocks}, run before "
                    f"{len(sb.layers)} layers", 11)  # fmt: skip
        canvas.text(x + 12, canvas.y + 24, _fit(f"attention: {attention_words(arch)}", 100), 10)
        canvas.text(x + 12, canvas.y + 37, _fit(mlp_words(arch), 100), 10)
        canvas.y += 46
    _block(canvas, arch, x, stacks)
    head = "final norm → LM head" + (" (tied to the embedding)" if arch.tied_embeddings else "")
    if arch.final_logit_softcap:
        head += f", logit soft-cap {arch.final_logit_softcap:g}"
    canvas.box(x, canvas.y, 520, 24, "#fff2cc", head)
    canvas.y += 32
    if arch.mtp is not None and arch.mtp.n_modules:
        canvas.text(x, canvas.y + 8, f"multi-token prediction: {arch.mtp.n_modules} module(s)", 11)
        canvas.y += 18
    height = canvas.y + 10
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'width="{WIDTH}" height="{height:.0f}" font-family="DejaVu Sans, sans-serif" '
        f'role="img" aria-label="{escape(card.name)} architecture">'
        + "".join(canvas.parts)
        + "</svg>\n"
    )


def summary(card: Card) -> dict[str, str]:
    """The diagram in words, one line a part (the compare page marks those that differ)."""
    arch, _ = fill_unknowns(card.architecture)
    stacks = stack_layers(card)
    layers = "; ".join(
        f"{s.name}: "
        + ", ".join(f"{words} × {n}" for words, n in sorted(Counter(s.mixers).items()))
        for s in stacks
    )
    mlps = "; ".join(
        f"{s.name}: " + ", ".join(f"{words} × {n}" for words, n in sorted(Counter(s.mlps).items()))
        for s in stacks
    )
    return {
        "layers": layers or "layer count unknown",
        "norm": norm_words(arch),
        "attention": attention_words(arch),
        "MLP": mlp_words(arch),
        "MLP by layer": mlps or "unknown",
        "blocks": "parallel" if arch.parallel_layers else "serial",
        "head": "tied to the embedding" if arch.tied_embeddings else "its own matrix",
    }
