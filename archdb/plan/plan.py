"""The plan: a card read once into specs, and the folds over it.

``make_plan`` is the only reader of a card's structure. A plan is an embedding, an
optional absolute position table, one or two stacks of blocks and an output head; each
stack keeps its distinct blocks with how often each occurs, so a card of 10^4 layers is a
handful of (block, count) pairs. Parameters, FLOPs and the KV cache are folds over the
specs here; the torch model is the fold in ``archdb.builder.model``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.mixers import MIXERS as MIXER_PLUGINS
from archdb.parts.attention import Mixer
from archdb.parts.blocksparse import BlockSparseLayout
from archdb.parts.compressed import HyperBlock, HyperConnection, HyperHead
from archdb.parts.kernels import FloorLogTemperature, SoftmaxKernel
from archdb.parts.mlp import (
    CLAMPED_SWIGLU,
    GEGELU,
    ActivationRule,
    ClampedSwiGLU,
    ClippedSwiGLU,
    DenseMLP,
    activation_rule,
)
from archdb.parts.moe import MoESpec, RouterSpec
from archdb.parts.norms import NORM_SLOTS, NormSlots, NormSpec, QKNormSpec, bare_rms
from archdb.parts.parallel import ParallelMixers, ScaledMixer, scaled
from archdb.parts.positions import (
    SCHEMES,
    AbsolutePositions,
    RotarySpec,
    StackBias,
    yarn_softmax_factor,
)
from archdb.parts.shared import SharedBlocks
from archdb.parts.shortcut import ShortcutBlock
from archdb.schema import (
    CHANNEL_ONLY,
    Activation,
    Architecture,
    BesideNorms,
    GeluApproximation,
    Kind,
    LayerKind,
    MoE,
    NormPosition,
    QKNorm,
    RopeLayout,
    RouterScore,
    SinusoidLayout,
)
from archdb.tally import Tally, linear_params

from .layout import (
    HeadDims,
    LayerSpec,
    check_buildable,
    embedding_width,
    fill_unknowns,
    head_dims,
    layer_groups,
    layer_head_dims,
    layer_key,
    learned_rows,
    relative_buckets,
)
from .mtp import MTPModule, MTPStack
from .readers import MIXERS, shared_blocks
from .recurrent import RECURRENT, RecurrentMixer

# --- specs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenEmbedding:
    """Token lookup, projected to d_model when the embedding is factorized."""

    vocab: int
    width: int
    d_model: int
    multiplier: float | None = None  # factor on the looked-up vectors (Gemma: sqrt(d))

    def params(self) -> int:
        return self.embedding_params() + self.projection_params()

    def embedding_params(self) -> int:
        return self.vocab * self.width

    def projection_params(self) -> int:
        return self.width * self.d_model if self.width != self.d_model else 0

    def flops(self, tally: Tally) -> None:
        if self.width != self.d_model:
            tally.linear(self.width, self.d_model, False)
        if self.multiplier not in (None, 1.0):  # x * multiplier, counted with the lookup
            tally.elementwise(self.d_model, C.EMBEDDING)


@dataclass(frozen=True)
class OutputHead:
    """Hidden states -> logits, with the optional projection, bias and final soft-cap."""

    d_model: int
    width: int
    vocab: int
    bias: bool
    softcap: float | None
    tied: bool  # the embedding's table is the output matrix
    logit_scale: float | None = None  # factor on the logits, before the soft-cap (Cohere)

    def params(self) -> int:
        proj = self.d_model * self.width if self.width != self.d_model else 0
        return proj + self.embedding_params()

    def embedding_params(self) -> int:
        return (0 if self.tied else self.vocab * self.width) + (self.vocab if self.bias else 0)

    def flops(self, tally: Tally) -> None:
        if self.width != self.d_model:
            tally.linear(self.d_model, self.width, False)
        tally.linear(self.width, self.vocab, self.bias)
        if self.logit_scale not in (None, 1.0):
            tally.elementwise(self.vocab)  # logits * logit_scale
        if self.softcap is not None:
            tally.elementwise(cv.SOFTCAP * self.vocab)


@dataclass(frozen=True)
class MaskedLMParts:
    """An encoder-only model's own parts (schema.EncoderOnly): the token-type table whose
    row 0 joins the embedding sum, the masked-LM head's transform (linear, activation,
    norm) before the output projection, and the pooler, counted but not on the logits' path."""

    d_model: int
    token_types: int  # rows
    transform: Activation | None
    gelu_exact: bool
    transform_bias: bool
    norm: NormSpec
    pooler: bool

    @property
    def rule(self) -> ActivationRule:
        assert self.transform is not None  # asked only of a head with its transform
        return activation_rule(self.transform, self.gelu_exact)

    def params(self) -> int:
        d = self.d_model
        n = self.embedding_params() + (linear_params(d, d, True) if self.pooler else 0)
        if self.transform is not None:
            n += linear_params(d, d, self.transform_bias) + self.norm.params(d)
        return n

    def embedding_params(self) -> int:
        return self.token_types * self.d_model

    def embedding_flops(self, tally: Tally) -> None:
        if self.token_types:  # + token_type_table[0]
            tally.elementwise(self.d_model, C.EMBEDDING)

    def head_flops(self, tally: Tally) -> None:
        if self.transform is None:
            return
        d = self.d_model
        tally.linear(d, d, self.transform_bias)
        tally.add(C.ELEMENTWISE, tally.seq_len * d * self.rule.flops_per_element)
        self.norm.flops(tally, d)


@dataclass(frozen=True)
class PerLayerInputs:
    """Per-layer embeddings (Gemma 3n, Gemma 4 E2B/E4B): each token's input to every
    layer, (norm(proj(e) / sqrt(d)) + table[token] * sqrt(width)) / sqrt(2), e the scaled
    token embedding; see schema.PerLayerEmbeddings."""

    vocab: int
    n_layers: int
    width: int
    d_model: int
    norm: NormSpec  # over each layer's width
    clip_ids: bool  # the table is shorter than the vocabulary: ids beyond it read row 0

    @property
    def packed(self) -> int:
        return self.n_layers * self.width

    def params(self) -> int:
        return self.embedding_params() + self.d_model * self.packed + self.norm.params(self.width)

    def embedding_params(self) -> int:
        return self.vocab * self.packed

    def flops(self, tally: Tally) -> None:
        tally.linear(self.d_model, self.packed, False)
        self.norm.flops(tally, self.width, tally.seq_len * self.n_layers)
        # table * sqrt(width), proj / sqrt(d), the sum and its 1/sqrt(2)
        tally.elementwise(4 * self.packed, C.EMBEDDING)


@dataclass(frozen=True)
class PerLayerGate:
    """A layer's use of its per-layer input, after the MLP:
    x + norm(proj(act(gate(x)) * input)), gate d -> width, proj width -> d, no biases."""

    d_model: int
    width: int
    activation: Activation
    gelu_exact: bool
    norm: NormSpec  # over d_model
    streams: int = 1  # AltUp: added to every stream after the first

    def params(self) -> int:
        return 2 * self.d_model * self.width + self.norm.params(self.d_model)

    def flops(self, tally: Tally) -> None:
        rule = activation_rule(self.activation, self.gelu_exact)
        tally.linear(self.d_model, self.width, False)
        per = rule.flops_per_element + cv.ELEMENTWISE  # act(gate) * input
        tally.add(C.ELEMENTWISE, tally.seq_len * self.width * per + rule.flops_per_call)
        tally.linear(self.width, self.d_model, False)
        self.norm.flops(tally, self.d_model)
        tally.elementwise(self.streams * self.d_model)  # residual add(s)


@dataclass(frozen=True)
class AltUpLayer:
    """A layer's AltUp (Gemma 3n): predict the streams from the active one, correct them
    by the block's innovation; see schema.AltUp."""

    d_model: int
    n: int  # streams
    active: int
    correct_scale: bool
    norm: NormSpec  # the router's norm over d_model

    def params(self) -> int:
        n, d = self.n, self.d_model
        # output scale, correction and prediction coefficients, router and its norm
        return d + n * n + n * n * n + d * n + self.norm.params(d)

    def router_flops(self, tally: Tally) -> None:
        d, n = self.d_model, self.n
        self.norm.flops(tally, d)
        tally.elementwise(d)  # / d_model
        tally.linear(d, n, False)
        tally.elementwise(n)  # tanh

    def flops(self, tally: Tally) -> None:
        d, n = self.d_model, self.n
        self.router_flops(tally)  # predict
        tally.linear(n, n * n, False)
        tally.elementwise(cv.FLOPS_PER_MAC * d * n * n + n * d)  # the streams' mix, + streams
        self.router_flops(tally)  # correct
        tally.linear(n, n, False)
        tally.elementwise(d + n + 2 * n * d)  # innovation, 1 + coefs, times, + predictions
        if self.correct_scale:
            tally.elementwise(d)


@dataclass(frozen=True)
class Laurel:
    """LAuReL (Gemma 3n): h + norm(right(left(h))), h the attention's normed input."""

    d_model: int
    rank: int
    norm: NormSpec

    def params(self) -> int:
        return 2 * self.d_model * self.rank + self.norm.params(self.d_model)

    def flops(self, tally: Tally) -> None:
        tally.linear(self.d_model, self.rank, False)
        tally.linear(self.rank, self.d_model, False)
        self.norm.flops(tally, self.d_model)
        tally.elementwise(self.d_model)  # h +
        tally.elementwise(2 * self.d_model)  # (x + attn + laurel) / sqrt(2), its 2 ops


@dataclass(frozen=True)
class AltUpStreams:
    """AltUp's streams around the stack: n - 1 projections of the embedding in, rescaled to
    its RMS; n - 1 projections back out, rescaled to the first stream's, then the mean."""

    d_model: int
    n: int

    def params(self) -> int:
        return 2 * (self.n - 1) * self.d_model * self.d_model

    def flops(self, tally: Tally) -> None:
        d, n = self.d_model, self.n
        for _ in range(2):  # in and out
            tally.elementwise(2 * d + 1)  # target RMS: square, mean, ** 0.5
            for _ in range(n - 1):  # projection; its RMS (square, mean, clamp, sqrt); * /
                tally.linear(d, d, False)
                tally.elementwise(4 * d + 2)
        tally.elementwise(n * d)  # the mean of the streams


@dataclass(frozen=True)
class Block:
    """One layer: a mixer and an MLP (or MoE) on the residual stream, with norms; either
    may be absent (Mamba-2's mixer-only layers, Nemotron-H's single-sublayer layers)."""

    d_model: int
    mixer: Mixer | RecurrentMixer | ScaledMixer | ParallelMixers | None  # None: MLP alone
    mlp: DenseMLP | MoESpec | None  # None: the mixer alone (Mamba-2's layers)
    norm: NormSpec
    slots: NormSlots
    parallel: bool = False
    shared_norm: bool = False  # parallel blocks: one norm feeds both branches (GPT-J)
    resi_dual: bool = False
    cross: Mixer | None = None  # an encoder-decoder's decoder attends to the encoder
    scalar: bool = False  # a learned scalar multiplies the layer's output (Gemma 4)
    residual_multiplier: float | None = None  # factor on each sublayer's output (Granite)
    # factors on the residual stream where the mixer's / the MLP's output joins it (MiniMax)
    mixer_skip: float | None = None
    mlp_skip: float | None = None
    per_layer: PerLayerGate | None = None  # per-layer embeddings' use, after the MLP
    altup: AltUpLayer | None = None  # Gemma 3n's block: AltUp around it, LAuReL beside
    laurel: Laurel | None = None
    mixer_norm: bool = True  # False: the mixer reads the stream unnormed (ModernBERT layer 0)

    @property
    def n_norms(self) -> int:
        s = self.slots
        if self.parallel:
            before = (1 if self.shared_norm else 2) if s.before else 0
            return before + 2 * s.branch + s.after
        return s.count * len(self.sublayers()) - self.norms_skipped

    @property
    def norms_skipped(self) -> int:
        """The mixer's pre-norm, where the layer has none."""
        return int(not self.mixer_norm and self.mixer is not None and self.slots.before)

    def sublayers(self) -> list:
        """The serial sublayers in order: mixer, cross-attention, MLP (those present)."""
        return [sub for sub in (self.mixer, self.cross, self.mlp) if sub is not None]

    def skip_of(self, sublayer: object) -> float | None:
        """The factor on the residual stream where this sublayer's output joins it."""
        if sublayer is self.mixer:
            return self.mixer_skip
        return self.mlp_skip if sublayer is self.mlp else None

    def params(self) -> int:
        n = sum(sub.params() for sub in self.sublayers())
        n += self.per_layer.params() if self.per_layer is not None else 0
        n += self.altup.params() if self.altup is not None else 0
        n += self.laurel.params() if self.laurel is not None else 0
        return n + self.norm.params(self.d_model) * self.n_norms

    def inactive_params(self) -> int:
        return self.mlp.inactive_params() if self.mlp is not None else 0

    def flops(self, tally: Tally) -> None:
        d = self.d_model
        if self.parallel:
            for _ in range(self.n_norms):
                self.norm.flops(tally, d)
            tally.elementwise(2 * d)  # x + attn + mlp
            assert self.mixer is not None and self.mlp is not None  # parallel: both present
            if self.residual_multiplier is not None:
                tally.elementwise(2 * d)  # m * attn, m * mlp
            self.mixer.flops(tally)
            self.mlp.flops(tally)
            return
        for sublayer in self.sublayers():
            skipped = self.norms_skipped if sublayer is self.mixer else 0
            for _ in range(self.slots.count - skipped):
                self.norm.flops(tally, d)
            tally.elementwise(d * (2 if self.resi_dual else 1))  # residual add (+ dual add)
            if self.residual_multiplier is not None:
                tally.elementwise(d)  # m * f(x)
            if self.skip_of(sublayer) is not None:
                tally.elementwise(d)  # a * x
            sublayer.flops(tally)
        if self.per_layer is not None:
            self.per_layer.flops(tally)
        if self.altup is not None:
            self.altup.flops(tally)
        if self.laurel is not None:
            self.laurel.flops(tally)
        if self.scalar:
            tally.elementwise(d)

    def cache_entries(self, context: int) -> int:
        cross = self.cross.cache_entries(context) if self.cross else 0
        own = self.mixer.cache_entries(context) if self.mixer is not None else 0
        # an MLP that reads the previous token keeps it (RWKV's channel mix)
        mlp = self.mlp.cache_entries(context) if isinstance(self.mlp, DenseMLP) else 0
        return own + cross + mlp


@dataclass(frozen=True)
class Stack:
    """Blocks in order, kept compact: the distinct blocks and which one each layer is."""

    d_model: int
    n_layers: int
    blocks: tuple[Block | ShortcutBlock | HyperBlock, ...]  # distinct, in order of first use
    counts: tuple[int, ...]  # how many layers each block is
    which: Callable[[int], int]  # layer index -> position in ``blocks``
    final_norm: NormSpec | None
    bias: StackBias | None
    resi_dual: bool
    # Gemma 3n's AltUp streams in and out; DeepSeek-V4's mHC streams, collapsed at the end
    streams: AltUpStreams | HyperHead | None = None
    shared: SharedBlocks | None = None  # weight-shared blocks run before some layers (Zamba2)

    def groups(self) -> Iterator[tuple[Block, int]]:
        return zip(self.blocks, self.counts, strict=True)

    def layers(self) -> Iterator[Block]:
        return (self.blocks[self.which(i)] for i in range(self.n_layers))

    def params(self) -> int:
        n = sum(b.params() * c for b, c in self.groups())
        n += self.final_norm.params(self.d_model) if self.final_norm else 0
        n += self.streams.params() if self.streams else 0
        n += self.shared.params() if self.shared else 0
        return n + (self.bias.params() if self.bias else 0)

    def flops(self, tally: Tally) -> None:
        for block, count in self.groups():
            tally.repeat = count
            block.flops(tally)
        tally.repeat = 1
        if self.streams is not None:
            self.streams.flops(tally)
        if self.shared is not None:
            self.shared.flops(tally)
        if self.final_norm is not None:
            self.final_norm.flops(tally, self.d_model)
        if self.resi_dual:
            tally.elementwise(self.d_model)  # x + LN(dual)

    def cache_entries(self, context: int) -> int:
        shared = self.shared.cache_entries(context) if self.shared else 0
        return shared + sum(b.cache_entries(context) * c for b, c in self.groups())


@dataclass(frozen=True)
class LayerRun:
    """Layers of a stack that run the same sublayers, as the measures that fold over the
    plan read them (archdb.measure.crossover, archdb.measure.decode): the attentions that
    score keys (each answering ``score_flops_per_key``, ``decode_flops`` and
    ``state_entries``), the channel parts (MLP, MoE) and how many layers (or shared-block
    invocations) run them."""

    attentions: tuple
    channels: tuple
    count: int


def attentions_of(mixer: object) -> list:
    """The attention specs a token mixer runs, its wrappers opened (factors on a mixer, a
    parallel attention-and-recurrent pair); none for a recurrent mixer."""
    if isinstance(mixer, ScaledMixer):
        return attentions_of(mixer.inner)
    if isinstance(mixer, ParallelMixers):
        return attentions_of(mixer.attention)
    return [mixer] if hasattr(mixer, "score_flops_per_key") else []


def layer_runs(stack: Stack) -> list[LayerRun]:
    """The stack's layers grouped as they run (shared blocks at each invocation)."""
    runs = []
    for block, count in stack.groups():
        if isinstance(block, ShortcutBlock):  # two attentions, two dense MLPs, the MoE
            channels = (block.dense, block.dense, block.moe)
            runs.append(LayerRun(tuple(block.mixers), channels, count))
            continue
        attentions = attentions_of(block.mixer) if block.mixer is not None else []
        channels = (block.mlp,) if block.mlp is not None else ()
        runs.append(LayerRun(tuple(attentions), channels, count))
    if stack.shared is not None:
        shared = stack.shared
        runs.append(LayerRun((shared.block.attention,), (shared.block.mlp,), shared.n_invocations))
    return runs


@dataclass(frozen=True)
class Plan:
    """A card as specs: embedding, positions, encoder (if any), decoder, head."""

    embedding: TokenEmbedding
    positions: AbsolutePositions | None
    encoder: Stack | None
    decoder: Stack
    head: OutputHead
    context_length: int
    per_layer_inputs: PerLayerInputs | None = None  # per-layer embeddings (Gemma 3n/4)
    mtp: MTPStack | None = None  # multi-token-prediction modules, apart from the model
    embedding_norm: NormSpec | None = None  # on the embedded tokens (BLOOM), d_model wide
    masked_lm: MaskedLMParts | None = None  # an encoder-only model's (``decoder`` its stack)

    @property
    def stacks(self) -> tuple[Stack, ...]:
        return (self.decoder,) if self.encoder is None else (self.encoder, self.decoder)

    def blocks(self) -> Iterator[tuple[Block, int]]:
        for stack in self.stacks:
            yield from stack.groups()


# --- reading a card ------------------------------------------------------------------------


def _factor(value: float | None) -> float | None:
    """A multiplier the model applies: None when absent or 1 (no operation, no FLOPs)."""
    return None if value is None or value == 1.0 else value


def make_plan(arch: Architecture) -> Plan:
    """The plan of a card; null choices filled as ``fill_unknowns`` states."""
    arch, _ = fill_unknowns(arch)
    check_buildable(arch)
    return _Reader(arch).plan()


class _Reader:
    """Reads the architecture once and hands plain numbers to the specs."""

    def __init__(self, arch: Architecture) -> None:
        self.a = arch
        self.d = arch.d_model
        self.norm = NormSpec.of(
            arch.norm.type, arch.norm.affine, arch.norm.eps, arch.norm.unit_offset
        )
        self.dims = head_dims(arch) if arch.has_attention() else None
        self.scheme = SCHEMES[arch.position.type]

    def plan(self) -> Plan:
        a, width = self.a, embedding_width(self.a)
        encoder = None
        if a.kind is Kind.ENCODER_DECODER:
            encoder = self.stack([LayerKind.GLOBAL], a.n_encoder_layers, causal=False, cross=False)
        causal = a.kind is not Kind.ENCODER_ONLY  # an encoder-only stack reads both ways
        decoder = self.stack(
            a.attention.layer_pattern, a.n_layers, causal, a.kind is Kind.ENCODER_DECODER
        )
        positions = None
        if self.scheme.absolute:
            offset = a.encoder.position_offset if a.encoder is not None else 0
            layout = a.position.sinusoid_layout or SinusoidLayout.INTERLEAVED
            positions = AbsolutePositions(a.position.type, learned_rows(a), self.d, offset, layout)
        return Plan(
            embedding=TokenEmbedding(a.vocab_size, width, self.d, _factor(a.embedding_multiplier)),
            positions=positions,
            encoder=encoder,
            decoder=decoder,
            head=OutputHead(
                self.d,
                width,
                a.vocab_size,
                bool(a.bias.lm_head),
                a.final_logit_softcap,
                bool(a.tied_embeddings),
                _factor(a.logit_scale),
            ),
            context_length=a.context_length,
            per_layer_inputs=self.per_layer_inputs(),
            mtp=self.mtp(decoder),
            embedding_norm=self.norm if a.embedding_norm else None,
            masked_lm=self.masked_lm(),
        )

    def masked_lm(self) -> MaskedLMParts | None:
        e = self.a.encoder
        if e is None:
            return None
        exact = self.a.mlp.gelu_approximation is GeluApproximation.EXACT
        return MaskedLMParts(
            self.d,
            e.token_types,
            e.head_transform,
            exact,
            e.head_transform_bias,
            self.norm,
            e.pooler,
        )

    def mtp(self, decoder: Stack) -> MTPStack | None:
        """The card's MTP modules, each block like the main model's last layer."""
        m = self.a.mtp
        if m is None or not m.n_modules:
            return None
        last = decoder.blocks[decoder.which(decoder.n_layers - 1)]
        return MTPStack(m.n_modules, MTPModule(self.d, self.norm, last, m.layers_per_module))

    def per_layer_inputs(self) -> PerLayerInputs | None:
        a, ple = self.a, self.a.per_layer_embeddings
        if ple is None:
            return None
        clip = ple.vocab_size < a.vocab_size
        return PerLayerInputs(ple.vocab_size, a.n_layers, ple.width, self.d, self.norm, clip)

    def per_layer_gate(self) -> PerLayerGate | None:
        a, ple = self.a, self.a.per_layer_embeddings
        if ple is None:
            return None
        exact = a.mlp.gelu_approximation is GeluApproximation.EXACT
        streams = a.altup.n_inputs - 1 if a.altup is not None else 1
        return PerLayerGate(self.d, ple.width, a.mlp.activation, exact, self.norm, streams)

    def stack(self, pattern: list[LayerKind], n: int, causal: bool, cross: bool) -> Stack:
        a = self.a
        groups = layer_groups(a, pattern, n)
        keys = {key: j for j, (key, _, _) in enumerate(groups)}
        blocks = [self.block(spec, causal, cross) for _, spec, _ in groups]
        counts = [count for _, _, count in groups]

        def which(i: int) -> int:
            return keys[layer_key(a, pattern, i)]

        bias = None
        if self.scheme.stack_bias and self.dims is not None:
            bias = StackBias(
                a.position.type, self.dims.n_heads, a.context_length, causal, relative_buckets(a)
            )
        resi_dual = a.norm.position is NormPosition.RESIDUAL
        final = self.norm if a.norm.final else None
        streams = AltUpStreams(self.d, a.altup.n_inputs) if a.altup is not None else None
        if (hc := a.hyper_connections) is not None:
            streams = HyperHead(self.d, hc.n_streams, hc.eps, a.norm.eps)
        shared = shared_blocks(self) if causal else None  # the decoder's (Zamba2)
        return Stack(
            self.d, n, tuple(blocks), tuple(counts), which, final, bias, resi_dual, streams, shared
        )

    def block(
        self, spec: LayerSpec, causal: bool, cross: bool
    ) -> Block | ShortcutBlock | HyperBlock:
        a = self.a
        if a.mlp.moe is not None and a.mlp.moe.shortcut_dense_d_ff is not None:
            return self.shortcut_block(spec, causal)
        if (hc := a.hyper_connections) is not None:
            hyper = HyperConnection(self.d, hc.n_streams, hc.sinkhorn_iters, hc.eps, a.norm.eps)
            return HyperBlock(self.d, self.mixer(spec, causal), self.mlp(spec), self.norm, hyper)
        slots = NORM_SLOTS[a.norm.position]
        return Block(
            d_model=self.d,
            mixer=self.mixer(spec, causal),
            mlp=self.mlp(spec),
            norm=self.norm,
            slots=slots,
            parallel=bool(a.parallel_layers),
            shared_norm=a.norm.shared_in_parallel is True or not slots.before,
            resi_dual=a.norm.position is NormPosition.RESIDUAL,
            cross=self.mixer(None, causal=False) if cross and not a.parallel_layers else None,
            scalar=bool(a.layer_scalar),
            residual_multiplier=_factor(a.residual_multiplier),
            mixer_skip=self.mixer_skip(spec),
            mlp_skip=_factor(a.mlp.skip_multiplier),
            per_layer=self.per_layer_gate(),
            altup=self.altup_layer(),
            laurel=Laurel(self.d, a.laurel_rank, self.norm) if a.laurel_rank else None,
            mixer_norm=spec.mixer_norm,
        )

    def shortcut_block(self, spec: LayerSpec, causal: bool) -> ShortcutBlock:
        """A LongCat-Flash layer: two attention sublayers, two dense MLPs, the experts."""
        moe, m = self.mlp(spec), self.a.mlp
        assert isinstance(moe, MoESpec) and m.moe is not None  # the schema checks it
        exact = m.gelu_approximation is GeluApproximation.EXACT
        dense = DenseMLP(
            self.d, m.moe.shortcut_dense_d_ff, m.activation, bool(self.a.bias.mlp), exact
        )
        mixers = (self.mixer(spec, causal), self.mixer(spec, causal))
        return ShortcutBlock(self.d, mixers, dense, moe, self.norm)

    def mixer_skip(self, spec: LayerSpec) -> float | None:
        """The residual factor of a layer's token mixer: a mixer plugin's own (lightning's),
        or attention's."""
        if (plugin := MIXER_PLUGINS.get(spec.kind)) is not None:
            skip = plugin.skip_multiplier
            return None if skip is None else skip(plugin.sizes_of(self.a))
        return _factor(self.a.attention.skip_multiplier) if spec.kind.attention else None

    def altup_layer(self) -> AltUpLayer | None:
        alt = self.a.altup
        if alt is None:
            return None
        return AltUpLayer(self.d, alt.n_inputs, alt.active_index, alt.correct_scale, self.norm)

    def mixer(
        self, spec: LayerSpec | None, causal: bool
    ) -> Mixer | RecurrentMixer | ScaledMixer | ParallelMixers | None:
        """A layer's token mixer: attention of the card's variant, the recurrent mixer its
        pattern entry names, or none (mlp/moe entries); ``spec=None`` is cross-attention."""
        if spec is not None and spec.kind in CHANNEL_ONLY:
            return None
        if spec is not None and not spec.kind.attention:
            return RECURRENT[spec.kind](self, spec)
        attn = MIXERS[self.a.attention.variant](self, spec, causal)
        if spec is None:  # cross-attention: the multipliers are self-attention's
            return attn
        att = self.a.attention
        attn = scaled(self.d, attn, _factor(att.input_multiplier), _factor(att.output_multiplier))
        if (kind := spec.kind.recurrent) is not None:  # attention beside a mixer (Falcon-H1)
            return ParallelMixers(self.d, attn, RECURRENT[kind](self, spec))
        return attn

    def dims_of(self, spec: LayerSpec | None) -> HeadDims:
        """Head widths of a layer (global layers may have their own; None: cross-attention)."""
        if spec is not None and spec.heads is not None:  # layer-wise scaling (OpenELM)
            return replace(self.dims, n_heads=spec.heads[0], n_kv_heads=spec.heads[1])
        if spec is None or self.a.attention.global_layers is None:
            return self.dims
        return layer_head_dims(self.a, spec.kind)

    def qk_norm(self, spec: LayerSpec | None = None) -> QKNormSpec | None:
        att, dims = self.a.attention, self.dims_of(spec)
        if att.qk_norm is QKNorm.NONE:
            return None
        if att.qk_norm_rope_only and spec is not None and spec.kind is LayerKind.GLOBAL_NOPE:
            return None  # Llama 4 Scout: only the rotating layers norm q and k
        if att.qk_norm.learned:  # its own type and terms, stated on the card (validated)
            kind, affine = att.qk_norm_type, att.qk_norm_affine
            # the QK norm shares the blocks' epsilon, and their (1 + w) scale when of their kind
            offset = self.a.norm.unit_offset if kind is self.a.norm.type else None
            norm = NormSpec.of(kind, affine, self.a.norm.eps, offset)
        else:  # l2: parameter-free, x / rms(x) per head, at the blocks' epsilon
            norm = bare_rms(self.a.norm.eps)
        keys = 0 if spec is not None and spec.reuses_kv else dims.n_kv_heads  # queries only
        return QKNormSpec(att.qk_norm, norm, dims.n_heads, keys, dims.qk_dim)

    def kernel(self, spec: LayerSpec | None, causal: bool) -> SoftmaxKernel:
        kind = LayerKind.GLOBAL if spec is None else spec.kind
        window = None if spec is None else spec.window
        cap = self.a.attention.logit_softcap
        sinks = self.dims_of(spec).n_heads if self._has_sinks(spec) else 0
        qk_dim = self.dims_of(spec).qk_dim
        scale = self.a.attention.scale
        # DeepSeek's YaRN tempers the whole softmax, not only the rotated dims
        softmax_factor = yarn_softmax_factor(self.a.position.rope_scaling)
        if softmax_factor != 1.0:
            scale = (scale if scale is not None else qk_dim**-0.5) * softmax_factor
        # xAI's temperature on the decoder's own queries (the schema keeps it to global layers)
        temperature = None if spec is None else self.a.attention.temperature_length
        blocks = None
        if kind is LayerKind.BLOCKSPARSE and (layout := self.a.attention.block_sparse) is not None:
            blocks = BlockSparseLayout.of(layout, self.dims_of(spec).n_heads)
        floor = None  # Llama 4's temperature tuning, on its NoPE layers
        if kind is LayerKind.GLOBAL_NOPE and (nope := self.a.attention.nope_temperature):
            floor = FloorLogTemperature(nope.floor_scale, nope.scale)
        return SoftmaxKernel(
            kind,
            qk_dim,
            causal,
            cap,
            window,
            sinks,
            scale,
            blocks=blocks,
            temperature_length=temperature,
            floor_temperature=floor,
        )

    def _has_sinks(self, spec: LayerSpec | None) -> bool:
        """Sinks on the card's self-attention layers, but not on global layers whose
        global_layers.sinks is false (MiMo-V2-Flash: only the sliding layers have them)."""
        att = self.a.attention
        if not att.sinks or spec is None:
            return False
        g = att.global_layers
        return not (spec.kind is LayerKind.GLOBAL and g is not None and g.sinks is False)

    def rotary(self, spec: LayerSpec | None) -> RotarySpec | None:
        dims = self.dims_of(spec)
        if spec is None or spec.rope_theta is None or not dims.rotary_dims:
            return None
        pos = self.a.position
        # local layers with a base of their own keep it unscaled (Gemma 3's sliding layers)
        own_base = spec.kind is LayerKind.LOCAL and pos.rope_theta_local is not None
        scaling = None if own_base else pos.rope_scaling
        interleaved = pos.rope_layout is RopeLayout.INTERLEAVED
        return RotarySpec(
            dims.rotary_dims,
            spec.rope_theta,
            self.a.context_length,
            scaling,
            interleaved,
            dims.rotating_pairs,
        )

    def takes_bias(self, spec: LayerSpec | None) -> bool:
        return spec is not None and self.scheme.score_bias and spec.kind.positional

    def clamp(self) -> ClampedSwiGLU | ClippedSwiGLU | None:
        """A clamped SwiGLU's limit and alpha (gpt-oss's where the card records none); a
        gegelu's limit (Phi-3-small's 20.0 where none) with quick_gelu's fixed gain."""
        m = self.a.mlp
        if m.activation is Activation.GEGELU:
            return replace(GEGELU, limit=m.gegelu_limit or GEGELU.limit)
        if m.activation is Activation.CLIPPED_SWIGLU:
            return ClippedSwiGLU(m.swiglu_limit or CLAMPED_SWIGLU.limit)
        if m.activation is not Activation.CLAMPED_SWIGLU:
            return None
        return ClampedSwiGLU(
            m.swiglu_limit or CLAMPED_SWIGLU.limit, m.swiglu_alpha or CLAMPED_SWIGLU.alpha
        )

    def mlp(self, spec: LayerSpec) -> DenseMLP | MoESpec | None:
        a = self.a
        act, bias = a.mlp.activation, bool(a.bias.mlp)
        if spec.d_ff is None:
            return None
        exact = a.mlp.gelu_approximation is GeluApproximation.EXACT
        clamp = self.clamp()
        if not spec.moe:
            gate, out = _factor(a.mlp.gate_multiplier), _factor(a.mlp.output_multiplier)
            mix, shift = bool(a.mlp.channel_mix), bool(a.mlp.token_shift)
            sub_norm = self.norm if a.norm.sublayer_norms else None
            return DenseMLP(
                self.d,
                spec.d_ff,
                act,
                bias,
                exact,
                clamp,
                gate,
                out,
                spec.sparsity,
                mix,
                sub_norm,
                shift,
            )
        moe = a.mlp.moe
        shared = (
            DenseMLP(self.d, moe.shared_d_ff, act, bias, exact, clamp) if moe.n_shared else None
        )
        expert = DenseMLP(moe.latent_dim or self.d, spec.d_ff, act, bias, exact, clamp)
        out = _factor(a.mlp.output_multiplier)
        beside = branch_norm = None
        if moe.dense_beside_d_ff is not None:  # scaled as the experts are: their sum is
            width = moe.dense_beside_d_ff
            beside = DenseMLP(self.d, width, act, bias, exact, output_multiplier=out)
            # Grok-2's branches share the block's norms; Gemma 4's have their own
            branch_norm = None if moe.beside_norms is BesideNorms.SHARED else self.norm
        router = router_spec(self.d, moe)
        if spec.index < (moe.hash_layers or 0):  # experts chosen by the token id
            router = replace(router, hash_vocab=a.vocab_size, correction_bias=False)
        return MoESpec(
            router,
            expert,
            shared,
            bool(moe.shared_gate),
            beside,
            branch_norm,
            bool(moe.router_scales),
            out,
            bias if moe.latent_dim is not None else None,
            bool(moe.weighted_input),
        )


def router_spec(d_model: int, moe: MoE) -> RouterSpec:
    """The card's router; a null function field takes its FUNCTION_DEFAULTS value."""
    return RouterSpec(
        d_model,
        moe.n_experts,
        moe.n_active,
        bias=bool(moe.router_bias),
        score=moe.score_function or RouterScore.SOFTMAX,
        normalize=moe.normalize_top_k is not False,
        n_groups=moe.n_groups or 1,
        top_k_groups=moe.top_k_groups or 1,
        group_score=moe.group_score,
        correction_bias=bool(moe.score_correction_bias),
        scale=moe.routed_scale or 1.0,
        zero_experts=moe.zero_experts or 0,
        softcap=moe.router_softcap,
    )


# --- folds -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamSplit:
    total: int
    embedding: int  # token table, untied head (and bias), position tables
    inactive: int  # routed experts a token does not use


def params(plan: Plan) -> ParamSplit:
    """Exact parameters: every tensor once (a tied head is the embedding's table)."""
    parts = [plan.embedding, plan.head] + ([plan.positions] if plan.positions else [])
    parts += [plan.per_layer_inputs] if plan.per_layer_inputs else []
    parts += [plan.masked_lm] if plan.masked_lm else []
    total = sum(p.params() for p in parts) + sum(s.params() for s in plan.stacks)
    if plan.embedding_norm is not None:
        total += plan.embedding_norm.params(plan.embedding.d_model)
    embedding = sum(p.embedding_params() for p in parts)
    embedding += sum(s.bias.embedding_params() for s in plan.stacks if s.bias)
    inactive = sum(b.inactive_params() * c for b, c in plan.blocks())
    return ParamSplit(total, embedding, inactive)


def flops(plan: Plan, seq_len: int) -> Tally:
    """Forward FLOPs of one sequence of ``seq_len`` tokens (and as many source tokens)."""
    tally = Tally(seq_len)
    for stack in plan.stacks:  # each stack reads its own embedded tokens
        plan.embedding.flops(tally)
        if plan.positions is not None:
            plan.positions.flops(tally)
        if plan.per_layer_inputs is not None and stack is plan.decoder:
            plan.per_layer_inputs.flops(tally)
        if plan.masked_lm is not None:
            plan.masked_lm.embedding_flops(tally)
        if plan.embedding_norm is not None:
            plan.embedding_norm.flops(tally, plan.embedding.d_model)
        stack.flops(tally)
    if plan.masked_lm is not None:
        plan.masked_lm.head_flops(tally)
    plan.head.flops(tally)
    return tally


def mtp_flops(plan: Plan, seq_len: int) -> Tally | None:
    """Forward FLOPs of the MTP modules over one sequence, the shared head's included;
    None without modules."""
    if plan.mtp is None:
        return None
    tally = Tally(seq_len)
    plan.mtp.flops(tally, plan.head)
    return tally


def cache_bytes(plan: Plan, context: int, bytes_per_element: float) -> float:
    """Bytes of K/V cache and recurrent state for one sequence of ``context`` tokens
    (decoder self-attention, windowed layers only their window, plus cross-attention over
    as many source tokens; a recurrent mixer's state once, whatever the context)."""
    return plan.decoder.cache_entries(context) * bytes_per_element
