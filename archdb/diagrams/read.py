"""A card's architecture diagram as data: ``describe(card)`` reads the card's plan (or,
when the plan cannot be made, its fields) into a ``Diagram`` of words and counts, which
``archdb.diagrams.draw`` draws. A new model kind is one entry of ``STACK_ROLES``."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass

from archdb.choices.norms import NORMS
from archdb.parts.attention import HeadAttention, LatentAttention
from archdb.parts.compressed import CompressedAttention, HyperBlock
from archdb.parts.kernels import LinearKernel
from archdb.parts.mlp import DenseMLP
from archdb.parts.moe import MoESpec
from archdb.parts.norms import NORM_SLOTS, NormSlots, NormSpec
from archdb.parts.parallel import ParallelMixers, ScaledMixer
from archdb.parts.shortcut import ShortcutBlock
from archdb.plan import make_plan
from archdb.plan import params as plan_params
from archdb.plan.layout import Assumption, BuildError, fill_unknowns
from archdb.plan.plan import Block, Plan, Stack
from archdb.schema import (
    CHANNEL_ONLY,
    Architecture,
    Card,
    Kind,
    LayerKind,
    NormPosition,
    PositionType,
)

# --- what is drawn, and in which words ----------------------------------------------------


@dataclass(frozen=True)
class StackRole:
    """One stack of a model kind: its name, whether it attends causally, and whether its
    layers follow the card's layer pattern (an encoder-decoder's encoder is all global)."""

    name: str
    causal: bool
    card_pattern: bool


# A model kind's stacks, in the plan's order (Plan.stacks).
STACK_ROLES: dict[Kind, tuple[StackRole, ...]] = {
    Kind.DECODER_ONLY: (StackRole("decoder", causal=True, card_pattern=True),),
    Kind.ENCODER_DECODER: (
        StackRole("encoder", causal=False, card_pattern=False),
        StackRole("decoder", causal=True, card_pattern=True),
    ),
    Kind.ENCODER_ONLY: (StackRole("encoder", causal=False, card_pattern=True),),
}

# Each layer kind's words and colour (Okabe-Ito, as the reports' figures). A mixer plugin
# without an entry is drawn with its pattern entry and grey.
MIXER_WORDS: dict[LayerKind, tuple[str, str]] = {
    LayerKind.GLOBAL: ("global attention", "#0072B2"),
    LayerKind.LOCAL: ("local (sliding-window) attention", "#56B4E9"),
    LayerKind.GLOBAL_NOPE: ("global attention, no positions", "#CC79A7"),
    LayerKind.CHUNKED: ("chunked attention", "#009E73"),
    LayerKind.BLOCKSPARSE: ("block-sparse attention (local and strided blocks)", "#117733"),
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
OTHER_MIXER = "#999999"
DENSE, MOE, NO_MLP = "dense MLP", "MoE", "no MLP"
MLP_COLOURS = {DENSE: "#7f7f7f", MOE: "#000000", NO_MLP: "#f2f2f2"}

# Where a block's norms sit, in words (the card's norm.position).
NORM_PLACEMENT: dict[NormPosition, str] = {
    NormPosition.PRE: "before each sublayer (pre-norm)",
    NormPosition.POST: "after each residual add (post-norm)",
    NormPosition.DOUBLE: "before each sublayer and on its output (double norm)",
    NormPosition.POST_BRANCH: "on each sublayer's output, inside the residual branch",
    NormPosition.RESIDUAL: "after each add, with a second pre-norm stream (ResiDual)",
    NormPosition.NORMED_SKIP: "before each sublayer; the skip carries the normed input",
}


def mixer_words(kind: LayerKind) -> str:
    return MIXER_WORDS.get(kind, (kind.value, OTHER_MIXER))[0]


def mixer_colour(kind: LayerKind) -> str:
    return MIXER_WORDS.get(kind, (kind.value, OTHER_MIXER))[1]


@dataclass(frozen=True)
class Part:
    """A box of the diagram: a title and its detail lines."""

    role: str  # "norm", "attention", "mixer", "cross", "mlp", "moe"
    title: str
    lines: tuple[str, ...] = ()

    @property
    def words(self) -> str:
        return "; ".join((self.title, *self.lines))


@dataclass(frozen=True)
class Norms:
    """A block's norms: their kind in words and where they sit."""

    name: str  # "RMSNorm", "LayerNorm (no bias)", ...
    slots: NormSlots
    placement: str  # NORM_PLACEMENT's words


@dataclass(frozen=True)
class Shape:
    """What a layer is: its sublayers in order (mixer, cross-attention, MLP), how its
    norms sit, and what else it does. Layers of one shape are one layer type."""

    norms: Norms
    sublayers: tuple[Part, ...]
    parallel: bool = False  # attention and MLP read one input and are summed
    shared_norm: bool = False  # parallel: one norm feeds both
    notes: tuple[str, ...] = ()
    unnormed: tuple[int, ...] = ()  # sublayers without a norm of their own (LongCat's MoE)


@dataclass(frozen=True)
class LayerType:
    """One distinct layer of a stack: its letter in the strip, its pattern entry (the
    colour of its cells), how many layers it is, and its shape, opened up."""

    letter: str
    kind: LayerKind
    count: int
    shape: Shape

    @property
    def mlp(self) -> str:
        roles = {p.role for p in self.shape.sublayers}
        return MOE if "moe" in roles else DENSE if "mlp" in roles else NO_MLP


@dataclass(frozen=True)
class StackView:
    """A stack: its layers' kinds and types in order, and its distinct layers."""

    role: StackRole
    kinds: tuple[LayerKind, ...]  # one a layer
    which: tuple[int, ...]  # one a layer: its index in ``types``
    types: tuple[LayerType, ...]
    notes: tuple[str, ...] = ()
    marked: tuple[int, ...] = ()  # layers a shared block runs before (Zamba2)
    shared: tuple[Part, ...] = ()  # those shared blocks' attention and MLP

    @property
    def n_layers(self) -> int:
        return len(self.kinds)

    def mlps(self) -> list[str]:
        return [self.types[t].mlp for t in self.which]

    def kind_counts(self) -> list[tuple[LayerKind, int]]:
        return _by_count(Counter(self.kinds))

    def mlp_counts(self) -> list[tuple[str, int]]:
        return _by_count(Counter(self.mlps()))


@dataclass(frozen=True)
class Diagram:
    """A card's architecture as words and counts, ready to draw."""

    title: str
    facts: str
    embedding: Part
    stacks: tuple[StackView, ...]
    head: Part
    extras: tuple[Part, ...] = ()  # multi-token prediction
    unknown: str = ""  # why the plan could not be made (then drawn from the card)
    pattern: str = ""  # the card's layer pattern, when its layer count is unknown
    assumed: tuple[str, ...] = ()  # choices filled because the card leaves them unknown


def norms_words(norms: Norms) -> str:
    return f"norms: {norms.name} {norms.placement}"


def _by_count(counts: Counter) -> list:
    return sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))


# --- reading a card --------------------------------------------------------------------------


def describe(card: Card) -> Diagram:
    """The card's diagram as data: from its plan, or from its fields when the plan cannot
    be made."""
    arch, assumptions = fill_unknowns(card.architecture)
    kind = arch.kind.value if arch.kind else "kind unknown"
    title = f"{card.name} ({card.id}): {kind}"
    assumed = tuple(_assumption_words(a) for a in assumptions)
    try:
        plan = make_plan(arch)
    except BuildError as exc:
        why = str(exc).removeprefix("cannot build: ")
        return _from_card(arch, title, f"no exact counts, {why}", assumed)
    return _from_plan(arch, plan, title, assumed)


def _assumption_words(assumption: Assumption) -> str:
    value = getattr(assumption.value, "value", assumption.value)
    if isinstance(value, bool):
        value = str(value).lower()
    return f"{assumption.field} = {value} ({assumption.why})"


def _roles(arch: Architecture, n_stacks: int) -> tuple[StackRole, ...]:
    roles = STACK_ROLES.get(arch.kind) if arch.kind is not None else None
    if roles is None or len(roles) != n_stacks:  # a kind this table does not know yet
        roles = tuple(StackRole(f"stack {i + 1}", True, True) for i in range(n_stacks))
    return roles


def _stack_kinds(arch: Architecture, role: StackRole, n: int) -> list[LayerKind]:
    if role.card_pattern:
        return arch.layer_kinds()[:n] if arch.n_layers == n else _tiled(arch, n)
    return [LayerKind.GLOBAL] * n


def _tiled(arch: Architecture, n: int) -> list[LayerKind]:
    pattern = arch.attention.layer_pattern
    return [pattern[i % len(pattern)] for i in range(n)]


def _from_plan(arch: Architecture, plan: Plan, title: str, assumed: tuple[str, ...]) -> Diagram:
    split = plan_params(plan)
    facts = f"{_short(split.total)} parameters ({split.total:,} exact"
    if split.inactive:
        facts += f", {_short(split.total - split.inactive)} active per token"
    facts += f") · d_model {plan.embedding.d_model:,} · context {plan.context_length:,}"
    stacks = tuple(
        _stack_view(arch, stack, role)
        for stack, role in zip(plan.stacks, _roles(arch, len(plan.stacks)), strict=True)
    )
    extras = ()
    if plan.mtp is not None:
        module = plan.mtp.module
        extras = (
            Part(
                "mtp",
                f"multi-token prediction: {plan.mtp.n_modules} module(s), beside the model",
                (
                    f"each: norms on the hidden state and the next token's embedding, a "
                    f"2·d_model → d_model projection, {module.n_blocks} block(s) like the "
                    "last layer, the shared head",
                    "not run in the model's forward pass; counted apart",
                ),
            ),
        )
    return Diagram(
        title,
        facts,
        _embedding(plan),
        stacks,
        _head(plan),
        extras,
        assumed=assumed,
    )


def _stack_view(arch: Architecture, stack: Stack, role: StackRole) -> StackView:
    """A stack's layers grouped by what they are (the plan keeps blocks apart by their
    place in the pattern too; the diagram merges blocks that read the same)."""
    kinds = _stack_kinds(arch, role, stack.n_layers)
    shapes: dict[int, tuple[LayerKind, Shape]] = {}  # plan block index -> what it is
    keys: dict[tuple[LayerKind, Shape], int] = {}
    which: list[int] = []
    for i, kind in enumerate(kinds):
        b = stack.which(i)
        if b not in shapes:
            shapes[b] = (kind, _shape(arch, stack.blocks[b], kind))
        which.append(keys.setdefault(shapes[b], len(keys)))
    counts = Counter(which)
    types = [LayerType(_letter(t), kind, counts[t], shape) for (kind, shape), t in keys.items()]
    notes: list[str] = []
    if stack.final_norm is not None:
        notes.append(f"a final {_norm_name(stack.final_norm)} after the last layer")
    if stack.bias is not None:
        relative = stack.bias.type is PositionType.RELATIVE_BIAS
        notes.append(
            f"one position bias for the whole stack: {stack.bias.type.value}"
            + (f", {stack.bias.buckets} buckets" if relative else "")
        )
    if stack.streams is not None:
        notes.append(f"AltUp: {stack.streams.n} streams in and out of the stack")
    marked: tuple[int, ...] = ()
    shared: tuple[Part, ...] = ()
    if stack.shared is not None:
        sb = stack.shared
        marked = tuple(sb.layers)
        attention = sb.block.attention
        shared = (
            Part(
                "attention",
                f"shared blocks: {sb.n_blocks} weight set(s), run before {len(sb.layers)} "
                "layers (▼)",
                (
                    f"attention: {attention.n_heads} heads, {attention.n_kv_heads} KV heads, "
                    f"head_dim {attention.head_dim}",
                    _mlp_part(sb.block.mlp).words,
                    "each invocation: its own adapters"
                    + (f" (rank {sb.invocation.rank})" if sb.invocation.rank else "")
                    + "; input: the stream"
                    + (" and the embeddings" if sb.concat_embeddings else ""),
                ),
            ),
        )
    return StackView(role, tuple(kinds), tuple(which), tuple(types), tuple(notes), marked, shared)


def _letter(index: int) -> str:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return letters[index] if index < len(letters) else f"T{index + 1}"


def _shape(arch: Architecture, block: Block | ShortcutBlock | HyperBlock, kind: LayerKind) -> Shape:
    """A plan block in words."""
    position = arch.norm.position or NormPosition.PRE
    placement = NORM_PLACEMENT.get(position, position.value)
    if isinstance(block, HyperBlock):
        norms = Norms(_norm_name(block.norm), NORM_SLOTS[NormPosition.PRE], placement)
        parts = (_compressed_part(block.mixer), _mlp_part(block.mlp, _n_shared(arch)))
        note = (
            f"mHC: {block.hyper.n} residual streams, mixed before and after each sublayer "
            f"({block.hyper.sinkhorn_iters} Sinkhorn-Knopp iterations)"
        )
        return Shape(norms, parts, notes=(note,))
    if isinstance(block, ShortcutBlock):
        attention = [_mixer_part(arch, m, kind) for m in block.mixers]
        dense = _mlp_part(block.dense)
        norms = Norms(_norm_name(block.norm), NORM_SLOTS[NormPosition.PRE], placement)
        note = (
            "shortcut MoE: the experts read the first MLP's normed input and join the "
            "stream after the second MLP"
        )
        moe = _mlp_part(block.moe, _n_shared(arch))
        moe = Part(moe.role, f"{moe.title} (shortcut: no norm of its own)", moe.lines)
        parts = (attention[0], dense, attention[1], dense, moe)
        return Shape(norms, parts, notes=(note,), unnormed=(len(parts) - 1,))
    norms = Norms(_norm_name(block.norm), block.slots, placement)
    parts: list[Part] = []
    if block.mixer is not None:
        parts.append(_mixer_part(arch, block.mixer, kind))
    if block.cross is not None:
        parts.append(_attention_part(arch, block.cross, cross=True))
    if block.mlp is not None:
        parts.append(_mlp_part(block.mlp, _n_shared(arch)))
    notes: list[str] = []
    if block.residual_multiplier is not None:
        notes.append(f"each sublayer's output × {block.residual_multiplier:g}")
    if block.mixer_skip is not None or block.mlp_skip is not None:
        skips = [f"{s:g}" for s in (block.mixer_skip, block.mlp_skip) if s is not None]
        notes.append(f"the skip path × {' and '.join(skips)}")
    if block.resi_dual:
        notes.append("ResiDual: a second stream sums the outputs, normed once at the end")
    if block.scalar:
        notes.append("a learned scalar on the layer's output")
    if block.per_layer is not None:
        notes.append(
            f"per-layer embedding: a gated input of width {block.per_layer.width} after the MLP"
        )
    if block.altup is not None:
        notes.append(f"AltUp: {block.altup.n} streams, one active, corrected after")
    if block.laurel is not None:
        notes.append(f"LAuReL: a rank-{block.laurel.rank} path beside the attention")
    return Shape(norms, tuple(parts), block.parallel, block.shared_norm, tuple(notes))


def _n_shared(arch: Architecture) -> int:
    moe = arch.mlp.moe
    return (moe.n_shared or 1) if moe is not None else 1


def _norm_name(spec: NormSpec) -> str:
    rule = NORMS.get(spec.type)
    name = rule.name if rule is not None else str(spec.type)
    if not spec.scale and not spec.bias:
        name += " (no parameters)"
    elif spec.type.value == "layernorm" and not spec.bias:
        name += " (no bias)"
    elif spec.type.value == "rmsnorm" and spec.bias:
        name += " (with bias)"
    if spec.unit_offset:
        name += ", scale 1 + w"
    return name


def _mixer_part(arch: Architecture, mixer: object, kind: LayerKind) -> Part:
    if isinstance(mixer, ScaledMixer):
        inner = _mixer_part(arch, mixer.inner, kind)
        factors = [
            f"{what} × {m:g}"
            for what, m in (("input", mixer.input_multiplier), ("output", mixer.output_multiplier))
            if m is not None
        ]
        return Part(inner.role, inner.title, (*inner.lines, ", ".join(factors)))
    if isinstance(mixer, ParallelMixers):
        attention = _mixer_part(arch, mixer.attention, LayerKind.GLOBAL)
        recurrent = _recurrent_part(mixer.recurrent, kind.recurrent or kind)
        return Part(
            "attention",
            f"{attention.title} beside {recurrent.title}, outputs summed",
            (*attention.lines, f"{recurrent.title}: " + "; ".join(recurrent.lines)),
        )
    if isinstance(mixer, HeadAttention | LatentAttention):
        return _attention_part(arch, mixer)
    if isinstance(mixer, CompressedAttention):
        return _compressed_part(mixer)
    return _recurrent_part(mixer, kind)


def _compressed_part(mixer: CompressedAttention) -> Part:
    """DeepSeek-V4's attention in words."""
    lines = [
        f"{mixer.n_heads} heads of {mixer.head_dim}, one key=value head, query rank "
        f"{mixer.q_rank}, sinks",
        f"window of {mixer.window} tokens; output: {mixer.groups} groups to rank {mixer.rank}",
    ]
    title = "compressed attention"
    if mixer.compressor is not None:
        every = mixer.compressor.ratio
        if mixer.indexer is not None:
            title = "compressed sparse attention (CSA)"
            lines.append(f"an entry per {every} tokens; the indexer keeps {mixer.indexer.top_k}")
        else:
            title = "heavily compressed attention (HCA)"
            lines.append(f"an entry per {every} tokens, all read")
    else:
        title = "sliding-window attention"
    return Part("attention", title, tuple(lines))


def _recurrent_part(spec: object, kind: LayerKind) -> Part:
    """A recurrent mixer (a plugin's spec): its words and its integer sizes."""
    sizes = []
    if dataclasses.is_dataclass(spec):
        for f in dataclasses.fields(spec):
            value = getattr(spec, f.name)
            if f.name != "d_model" and isinstance(value, int) and not isinstance(value, bool):
                sizes.append(f"{f.name} {value:,}")
    return Part("mixer", mixer_words(kind), (", ".join(sizes),) if sizes else ())


def _scope(kernel: object, cross: bool) -> str:
    """Which keys a query reads, in words."""
    if cross:
        return "cross-attention to the encoder"
    if isinstance(kernel, LinearKernel):
        return "linear attention"
    kind = getattr(kernel, "kind", LayerKind.GLOBAL)
    window = getattr(kernel, "window", None)
    if kind is LayerKind.LOCAL:
        return f"local attention, window {window:,}" if window else "local attention"
    if kind is LayerKind.CHUNKED:
        return f"chunked attention, chunks of {window:,}" if window else "chunked attention"
    if kind is LayerKind.GLOBAL_NOPE:
        return "global attention, no positions"
    if (blocks := getattr(kernel, "blocks", None)) is not None:
        return blocks.describe()
    return "global attention"


def _grouping(n_heads: int, n_kv_heads: int) -> str:
    if n_kv_heads == n_heads:
        return "MHA"
    return "MQA" if n_kv_heads == 1 else f"GQA, {n_heads // n_kv_heads} queries per KV head"


def _attention_part(arch: Architecture, mixer: object, cross: bool = False) -> Part:
    kernel = mixer.kernel
    lines: list[str] = []
    if isinstance(mixer, LatentAttention):
        title = f"{_scope(kernel, cross)} · latent (MLA)"
        q = f"query latent {mixer.q_rank:,}" if mixer.q_rank else "full-rank queries"
        lines.append(f"{mixer.n_heads} heads, KV latent {mixer.kv_rank:,}, {q}")
        lines.append(
            f"q·k head {mixer.nope_dim} + {mixer.rope_dim} rotary dims, v head {mixer.v_dim}"
        )
    else:
        title = f"{_scope(kernel, cross)} · {_grouping(mixer.n_heads, mixer.n_kv_heads)}"
        lines.append(
            f"{mixer.n_heads} heads, {mixer.n_kv_heads} KV heads, head_dim {mixer.head_dim}"
        )
    if cross:
        lines.append("queries from the decoder, keys and values from every encoder output")
    else:
        lines.append(_positions(arch, mixer))
        lines.append("causal" if getattr(kernel, "causal", True) else "bidirectional")
    lines.extend(_attention_extras(mixer))
    return Part("cross" if cross else "attention", title, tuple(lines))


def _positions(arch: Architecture, mixer: object) -> str:
    rotary = getattr(mixer, "rotary", None)
    if rotary is not None:
        words = f"RoPE θ {rotary.theta:,.0f}"
        full = getattr(mixer, "head_dim", None) or (
            getattr(mixer, "rope_dim", 0) + getattr(mixer, "nope_dim", 0)
        )
        if isinstance(mixer, HeadAttention) and rotary.dims < full:
            words += f" on {rotary.dims} of {full} dims"
        if rotary.scaling is not None:
            words += f", {rotary.scaling.type.value} scaling × {rotary.scaling.factor:g}"
        return words
    if getattr(mixer, "takes_bias", False):
        return f"position bias on the scores ({arch.position.type.value})"
    if getattr(mixer, "relative_xl", None) is not None:
        return "Transformer-XL relative positions"
    if arch.position.type in (PositionType.LEARNED, PositionType.SINUSOIDAL):
        return "positions added at the embedding"
    return "no positions (NoPE)"


def _attention_extras(mixer: object) -> list[str]:
    out = []
    kernel = mixer.kernel
    qk = getattr(mixer, "qk_norm", None)
    if qk is not None:
        out.append(f"QK norm ({qk.kind.value}, {_norm_name(qk.norm)})")
    if getattr(kernel, "softcap", None):
        out.append(f"attention logits soft-capped at {kernel.softcap:g}")
    if getattr(kernel, "sink_heads", 0):
        out.append("a learned sink logit per head")
    if length := getattr(kernel, "temperature_length", None):  # Grok-2
        out.append(f"logits past position {length:,} × log2(p) / log2({length:,})")
    if (floor := getattr(kernel, "floor_temperature", None)) is not None:  # Llama 4
        out.append(f"queries × 1 + {floor.scale:g} ln(1 + floor((p + 1) / {floor.floor_scale:,}))")
    if getattr(kernel, "top_k", None):
        out.append(f"sparse: each query reads its top {kernel.top_k:,} keys (an indexer)")
    gate = getattr(mixer, "output_gate", None)
    if gate is not None:
        out.append(f"sigmoid output gate ({gate.value})")
    if getattr(mixer, "values_from_keys", False):
        out.append("values are the keys (no value projection)")
    if getattr(mixer, "value_norm", None) is not None:
        out.append("a norm over each value head")
    if getattr(mixer, "reuses_kv", False):
        earlier = f"an earlier {mixer.kv_kind} layer" if mixer.kv_kind else "an earlier layer"
        out.append(f"reuses the keys and values of {earlier}")
    if getattr(mixer, "query_rank", None):
        out.append(f"low-rank query: {mixer.query_rank:,} wide, normed, then the heads")
    if getattr(mixer, "qkv_clip", None):
        out.append(f"q, k, v clipped to ±{mixer.qkv_clip:g}")
    biases = [name for name, on in (("q, k, v", mixer.qkv_bias), ("output", mixer.out_bias)) if on]
    if biases:
        out.append("bias on " + " and ".join(biases))
    return out


def _mlp_part(mlp: DenseMLP | MoESpec, n_shared: int = 1) -> Part:
    if isinstance(mlp, MoESpec):
        router = mlp.router
        expert = mlp.expert
        lines = [f"each expert: {expert.activation.value}, d_ff {expert.d_ff:,}"]
        if mlp.shared is not None:
            lines.append(
                f"{n_shared} shared expert{'s' if n_shared > 1 else ''}, always used: "
                f"d_ff {mlp.shared.d_ff:,}"
                + (" in all" if n_shared > 1 else "")
                + (", gated" if mlp.shared_gate else "")
            )
        words = f"router: {router.score.value}"
        if router.softcap is not None:
            words += f" of logits capped at {router.softcap:g}"
        if router.n_groups > 1:
            words += f", {router.n_groups} groups, best {router.top_k_groups}"
        if router.correction_bias:
            words += ", bias-corrected choice"
        if router.normalize and router.top_k > 1:
            words += ", top-k weights renormalized"
        if router.scale != 1.0:
            words += f", × {router.scale:g}"
        lines.append(words)
        if mlp.weighted_input:
            lines.append("each expert's input × its weight (not its output)")
        if router.zero_experts:
            lines.append(f"{router.zero_experts} zero-computation (identity) experts")
        if mlp.beside is not None:
            norms = "own norms per branch" if mlp.branch_norm else "on the block's norms"
            lines.append(f"a dense MLP beside the experts: d_ff {mlp.beside.d_ff:,}, {norms}")
        if mlp.output_multiplier is not None:
            lines.append(f"output × {mlp.output_multiplier:g}")
        title = f"MoE: {router.n_experts} experts, top-{router.top_k}"
        return Part("moe", title, tuple(lines))
    ratio = mlp.d_ff / mlp.d_model
    lines = [f"d_ff {mlp.d_ff:,} ({ratio:.3g} × d_model)"]
    if mlp.bias:
        lines.append("with biases")
    if mlp.clamp is not None:
        lines.append(f"clamped at ±{mlp.clamp.limit:g}")
    factors = [
        f"{what} × {m:g}"
        for what, m in (("gate", mlp.gate_multiplier), ("output", mlp.output_multiplier))
        if m is not None
    ]
    if factors:
        lines.append(", ".join(factors))
    if mlp.sparsity is not None:
        lines.append(f"gaussian top-k gate: about {mlp.sparsity:g} of it zero")
    if mlp.channel_mix:
        lines.append("channel mixing: token-shifted inputs, a sigmoid receptance gate")
    if mlp.token_shift:
        lines.append("channel mixing: the input token-shifted, no gate")
    return Part("mlp", f"dense MLP: {mlp.activation.value}", tuple(lines))


def _embedding(plan: Plan) -> Part:
    emb = plan.embedding
    lines = [f"{emb.vocab:,} tokens × {emb.width:,}"]
    if emb.width != emb.d_model:
        lines[0] += f", projected to {emb.d_model:,}"
    if emb.multiplier is not None:
        root = math.isclose(emb.multiplier, math.sqrt(emb.d_model), rel_tol=1e-3)
        lines.append(f"scaled × {emb.multiplier:.4g}" + (" (√d_model)" if root else ""))
    if plan.masked_lm is not None and plan.masked_lm.token_types:
        lines.append(f"+ token type 0 of {plan.masked_lm.token_types} (one segment)")
    if plan.positions is not None:
        pos = plan.positions
        lines.append(
            f"+ {pos.type.value} absolute positions"
            + (f", {pos.rows:,} rows" if pos.type is PositionType.LEARNED else "")
            + (f" from row {pos.offset}" if pos.offset else "")
        )
    if plan.embedding_norm is not None:
        lines.append(f"then a {_norm_name(plan.embedding_norm)}")
    if plan.per_layer_inputs is not None:
        ple = plan.per_layer_inputs
        lines.append(
            f"per-layer embeddings: {ple.vocab:,} tokens × {ple.n_layers} layers × {ple.width}"
        )
    return Part("embedding", "token embedding", tuple(lines))


def _head(plan: Plan) -> Part:
    head = plan.head
    words = f"{head.d_model:,} → {head.vocab:,} logits"
    if head.width != head.d_model:
        words = f"{head.d_model:,} → {head.width:,} → {head.vocab:,} logits"
    lines = [words + (", tied to the embedding" if head.tied else ", its own matrix")]
    m = plan.masked_lm
    if m is not None and m.transform is not None:  # the masked-LM head's transform first
        transform = f"{head.d_model:,} → {head.d_model:,}, {m.transform.value}, "
        lines.insert(0, f"masked-LM transform: {transform}{_norm_name(m.norm)}")
    if m is not None and m.pooler:
        lines.append(f"a pooler beside it: tanh({head.d_model:,} → {head.d_model:,}), unused")
    if head.bias:
        lines.append("with a bias")
    if head.logit_scale is not None:
        lines.append(f"logits × {head.logit_scale:g}")
    if head.softcap is not None:
        lines.append(f"logits soft-capped at {head.softcap:g}")
    return Part("head", "output head", tuple(lines))


def _from_card(arch: Architecture, title: str, why: str, assumed: tuple[str, ...]) -> Diagram:
    """The diagram of a card whose plan cannot be made: its fields, unknowns said."""
    stacks = []
    n_stacks = 2 if arch.n_encoder_layers else 1
    sizes = (arch.n_encoder_layers, arch.n_layers) if n_stacks == 2 else (arch.n_layers,)
    position = arch.norm.position or NormPosition.PRE
    norm_name = NORMS[arch.norm.type].name if arch.norm.type else "norm"
    norms = Norms(norm_name, NORM_SLOTS[position], NORM_PLACEMENT.get(position, position.value))
    for role, n in zip(_roles(arch, n_stacks), sizes, strict=True):
        if not n:
            continue
        kinds = _stack_kinds(arch, role, n)
        keys: dict[tuple[LayerKind, str], int] = {}
        which = []
        for i, kind in enumerate(kinds):
            which.append(keys.setdefault((kind, _card_mlp(arch, i, kind)), len(keys)))
        counts = Counter(which)
        types = []
        for (kind, mlp), t in keys.items():
            parts = [_card_mixer(arch, kind)] if kind not in CHANNEL_ONLY else []
            if role.name == "decoder" and n_stacks == 2:
                parts.append(Part("cross", "cross-attention to the encoder"))
            if mlp != NO_MLP:
                parts.append(Part("moe" if mlp == MOE else "mlp", card_mlp_words(arch)))
            shape = Shape(norms, tuple(parts), bool(arch.parallel_layers))
            types.append(LayerType(_letter(t), kind, counts[t], shape))
        stacks.append(StackView(role, tuple(kinds), tuple(which), tuple(types)))
    embedding = Part(
        "embedding",
        "token embedding",
        (f"{_number(arch.vocab_size)} tokens × {_number(arch.d_model)}",),
    )
    head = Part(
        "head",
        "output head",
        (
            "tied to the embedding" if arch.tied_embeddings else "its own matrix",
            *(
                [f"logits soft-capped at {arch.final_logit_softcap:g}"]
                if arch.final_logit_softcap
                else []
            ),
        ),
    )
    facts = f"d_model {_number(arch.d_model)} · " + (
        f"{arch.n_layers} layers" if arch.n_layers else "layer count unknown"
    )
    pattern = ""
    if not arch.n_layers:
        kinds = ", ".join(mixer_words(k) for k in arch.attention.layer_pattern)
        pattern = f"layer count unknown; each run of layers: {kinds}"
    return Diagram(
        title, facts, embedding, tuple(stacks), head, unknown=why, assumed=assumed, pattern=pattern
    )


def _card_mixer(arch: Architecture, kind: LayerKind) -> Part:
    if not kind.attention:
        return Part("mixer", mixer_words(kind))
    return Part("attention", mixer_words(kind), (card_attention_words(arch),))


def _card_mlp(arch: Architecture, index: int, kind: LayerKind) -> str:
    """A layer's MLP read from the card alone (its plan could not be made)."""
    if kind is LayerKind.MOE:
        return MOE
    if kind is LayerKind.MLP:
        return DENSE
    if not arch.kind_has_mlp(kind):
        return NO_MLP
    moe = arch.mlp.moe
    if moe is None or index < (moe.first_dense_layers or 0):
        return DENSE
    last = moe.last_dense_layers or 0
    if last and arch.n_layers is not None and index >= arch.n_layers - last:
        return DENSE
    return MOE


def card_attention_words(arch: Architecture) -> str:
    att = arch.attention
    parts = [att.variant.value if att.variant else "attention"]
    if att.n_heads:
        heads = f"{att.n_heads} heads"
        if att.n_kv_heads:
            heads += f", {att.n_kv_heads} KV heads"
        parts.append(heads)
    if arch.head_dim_effective:
        parts.append(f"head_dim {arch.head_dim_effective}")
    if arch.position.type is not None:
        parts.append(f"positions: {arch.position.type.value}")
    return ", ".join(parts)


def card_mlp_words(arch: Architecture) -> str:
    mlp = arch.mlp
    act = mlp.activation.value if mlp.activation else "activation unknown"
    if mlp.moe is None:
        return f"dense MLP: {act}, d_ff {_number(mlp.d_ff)}"
    moe = mlp.moe
    words = f"MoE: {moe.n_experts} experts, top-{moe.n_active}"
    if moe.n_shared:
        words += f", {moe.n_shared} shared"
    return words + f", {act}, expert d_ff {_number(mlp.d_ff)}"


def _number(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _short(n: int) -> str:
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)
