"""Assembly: a card's plan (``archdb.plan``) becomes a torch model, spec by spec.

``build_model(arch)`` builds on the current default device; for the full size of a
published model use ``build_model(arch, device="meta")``: every parameter gets a shape and
no memory, so exact counts of 600B-parameter models take milliseconds.

Conventions the builder fixes where a card has no field (they change neither parameter
counts nor FLOPs beyond what is stated):
- encoder-decoders share one token embedding between encoder and decoder (T5, and
  Vaswani et al. 2017's shared source/target embedding); ``tied_embeddings`` says whether
  the output head reuses it;
- a T5-style relative bias is one table per stack (encoder two-sided, decoder causal),
  computed once per forward and added in every self-attention layer; cross-attention
  has no position scheme;
- the QK norm, where a card has one, uses the card's norm type and affine terms;
- a factorized embedding (``embedding_dim``) is projected in after the lookup and out
  before the output head, both without bias (OPT-350M).
"""

from __future__ import annotations

import contextlib
import gc
import math
from collections.abc import Iterator
from operator import attrgetter

import torch
from torch import nn

from archdb.device import meta_build
from archdb.parts import blocks as blocks_part
from archdb.parts import compressed, moe, shared
from archdb.parts import mlp as mlp_part
from archdb.parts import norms as norms_part
from archdb.parts import positions as positions_part
from archdb.parts.positions import RelativeXLSpec, longrope_switches
from archdb.plan import plan as P
from archdb.schema import Architecture

from .altup import Gemma3nBlock
from .registry import builds, module_of

ParallelBlock, PerLayerGate, Residual, ResiDualResidual, SerialBlock, Stack = attrgetter(
    "ParallelBlock", "PerLayerGate", "Residual", "ResiDualResidual", "SerialBlock", "Stack"
)(blocks_part.modules())
Act = mlp_part.modules().Act
norm_module = norms_part.modules().norm_module
RelativeXL, Rotary, distance_index, rotary_tables, sinusoid_table = attrgetter(
    "RelativeXL", "Rotary", "distance_index", "rotary_tables", "sinusoid_table"
)(positions_part.modules())

# --- the model shapes: decoder, encoder-decoder, encoder (masked LM) -----------------------


class TokenEmbedding(nn.Module):
    """Token lookup, projected to d_model when the embedding is factorized."""

    flop_class = "embedding"

    def __init__(
        self, vocab: int, width: int, d_model: int, multiplier: float | None = None
    ) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab, width)
        self.proj = nn.Linear(width, d_model, bias=False) if width != d_model else None
        self.multiplier = multiplier  # Gemma: sqrt(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.table(tokens)
        x = x if self.proj is None else self.proj(x)
        if self.multiplier is None or self.multiplier == 1.0:  # 1: the identity, no op
            return x
        return x * self.multiplier


class OutputHead(nn.Module):
    """Hidden states -> logits, with the optional projection and final soft-cap."""

    def __init__(
        self,
        d_model: int,
        width: int,
        vocab: int,
        bias: bool,
        softcap: float | None,
        logit_scale: float | None = None,
    ) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, width, bias=False) if width != d_model else None
        self.lm_head = nn.Linear(width, vocab, bias=bias)
        self.softcap = softcap
        self.logit_scale = logit_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.proj is not None:
            x = self.proj(x)
        logits = self.lm_head(x)
        if self.logit_scale not in (None, 1.0):  # Command R: scaled before any soft-cap
            logits = logits * self.logit_scale
        if self.softcap is not None:  # Gemma 2: c * tanh(logits / c)
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits


class PerLayerInputs(nn.Module):
    """Per-layer embeddings (Gemma 3n, Gemma 4 E2B/E4B): tokens and their scaled embedding
    -> (B, T, layers, width), each layer's own input; see archdb.schema.PerLayerEmbeddings."""

    flop_class = "embedding"

    def __init__(
        self, vocab: int, n_layers: int, width: int, d_model: int, norm: nn.Module, clip: bool
    ) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab, n_layers * width)
        self.proj = nn.Linear(d_model, n_layers * width, bias=False)
        self.norm = norm  # over each layer's width
        self.vocab, self.n_layers, self.width, self.d_model = vocab, n_layers, width, d_model
        self.clip = clip  # the table is shorter than the vocabulary (Gemma 3n)

    def forward(self, tokens: torch.Tensor, embedded: torch.Tensor) -> torch.Tensor:
        shape = (*tokens.shape, self.n_layers, self.width)
        ids = torch.where(tokens < self.vocab, tokens, 0) if self.clip else tokens
        looked_up = self.table(ids).view(shape) * self.width**0.5
        projected = self.norm((self.proj(embedded) * self.d_model**-0.5).view(shape))
        return (projected + looked_up) * 2.0**-0.5


@builds(P.PerLayerInputs)
def per_layer_inputs(s: P.PerLayerInputs, ctx: object = None) -> PerLayerInputs:
    norm = norm_module(s.norm, s.width)
    return PerLayerInputs(s.vocab, s.n_layers, s.width, s.d_model, norm, s.clip_ids)


@builds(P.PerLayerGate)
def per_layer_gate(s: P.PerLayerGate, ctx: object = None) -> PerLayerGate:
    act = Act(s.activation, s.gelu_exact)
    return PerLayerGate(s.d_model, s.width, act, norm_module(s.norm, s.d_model))


class DecoderLM(nn.Module):
    """tokens (B, T) -> logits (B, T, vocab)."""

    def __init__(
        self,
        embed: TokenEmbedding,
        positions: nn.Module,
        decoder: Stack,
        head: OutputHead,
        per_layer: PerLayerInputs | None = None,
        embed_norm: nn.Module | None = None,
        token_ids: moe.modules().TokenIds | None = None,
    ) -> None:
        super().__init__()
        self.embed, self.positions, self.decoder, self.head = embed, positions, decoder, head
        self.per_layer = per_layer
        self.embed_norm = embed_norm  # BLOOM: a LayerNorm on the embedded tokens
        self.token_ids = token_ids  # DeepSeek-V4's hash routers read the tokens

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.token_ids is not None:
            self.token_ids.ids = tokens
        x = self.embed(tokens)
        h = self.positions(x)
        if self.embed_norm is not None:
            h = self.embed_norm(h)
        if self.per_layer is None:
            return self.head(self.decoder(h))
        return self.head(self.decoder(h, None, self.per_layer(tokens, x)))


class TokenTypes(nn.Module):
    """The token-type (segment) table; one segment: row 0 joins every token's embedding."""

    flop_class = "embedding"

    def __init__(self, rows: int, d_model: int) -> None:
        super().__init__()
        self.table = nn.Embedding(rows, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.table.weight[0]


class HeadTransform(nn.Module):
    """The masked-LM head's transform (BERT's BertPredictionHeadTransform): norm(act(dense(h)))."""

    def __init__(self, d_model: int, act: nn.Module, norm: nn.Module, bias: bool) -> None:
        super().__init__()
        self.dense = nn.Linear(d_model, d_model, bias=bias)
        self.act, self.norm = act, norm

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(self.act(self.dense(h)))


class Pooler(nn.Module):
    """BERT's pooler: tanh(dense(first token's state)), for sentence tasks; the masked-LM
    logits never read it, so it is counted and not run."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(h[:, 0]))


class MaskedLM(nn.Module):
    """An encoder-only model: tokens (B, T) -> masked-LM logits (B, T, vocab), one segment
    (token type 0), every position reading every other."""

    def __init__(
        self,
        embed: TokenEmbedding,
        token_types: TokenTypes | None,
        positions: nn.Module,
        embed_norm: nn.Module | None,
        encoder: Stack,
        transform: HeadTransform | None,
        head: OutputHead,
        pooler: Pooler | None,
    ) -> None:
        super().__init__()
        self.embed, self.token_types, self.positions = embed, token_types, positions
        self.embed_norm, self.encoder = embed_norm, encoder
        self.transform, self.head, self.pooler = transform, head, pooler

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        if self.token_types is not None:
            x = self.token_types(x)
        h = self.positions(x)
        if self.embed_norm is not None:
            h = self.embed_norm(h)
        h = self.encoder(h)
        return self.head(h if self.transform is None else self.transform(h))


class EncoderDecoderLM(nn.Module):
    """(source tokens (B, S), target tokens (B, T)) -> logits (B, T, vocab)."""

    def __init__(
        self,
        embed: TokenEmbedding,
        positions: nn.Module,
        encoder: Stack,
        decoder: Stack,
        head: OutputHead,
    ) -> None:
        super().__init__()
        self.embed, self.positions, self.head = embed, positions, head
        self.encoder, self.decoder = encoder, decoder

    def forward(self, source: torch.Tensor, target: torch.Tensor | None = None) -> torch.Tensor:
        """target defaults to the source tokens (one tensor in, logits for it out)."""
        target = source if target is None else target
        memory = self.encoder(self.positions(self.embed(source)))
        return self.head(self.decoder(self.positions(self.embed(target)), memory))


# --- assembly: the fold of a plan into modules ---------------------------------------------


def build_model(arch: Architecture, device: str | torch.device | None = None) -> nn.Module:
    """The model a card describes; ``device="meta"`` for shapes without memory.

    Null choices are filled as ``layout.fill_unknowns`` states (the same defaults the
    analytic formulas use); null sizes raise BuildError.
    """
    plan = P.make_plan(arch)
    if device is None:
        with _collector_paused():
            return build_plan(plan)
    device = torch.device(device)
    meta = device.type == "meta"
    with (
        device,
        _MetaValuesSkipped() if meta else _NO_MODE,
        meta_build() if meta else _NO_MODE,
        _collector_paused(),
    ):
        return build_plan(plan)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """A build allocates thousands of modules and no garbage worth a cycle search, yet every
    automatic collection it set off rescanned each live object of the process."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_NO_MODE = contextlib.nullcontext()
# Initializers a module's constructor runs, and the in-place fills they end in
_INITIALIZERS = frozenset(
    {
        nn.init.uniform_,
        nn.init.normal_,
        nn.init.trunc_normal_,
        nn.init.constant_,
        nn.init.ones_,
        nn.init.zeros_,
        nn.init.xavier_uniform_,
        nn.init.xavier_normal_,
        nn.init.kaiming_uniform_,
        nn.init.kaiming_normal_,
        torch.Tensor.uniform_,
        torch.Tensor.normal_,
        torch.Tensor.fill_,
        torch.Tensor.zero_,
    }
)


class _MetaValuesSkipped(torch.overrides.TorchFunctionMode):
    """A meta tensor holds no values, yet torch computes them through Python
    decompositions: the random initializers (a third of a full-size build's time) and the
    constant fills (a meta ``full`` costs 7 empties; a norm makes one). On meta, skip them:
    an initializer returns its tensor, a fill is an empty of its shape and dtype."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _INITIALIZERS:
            target = args[0] if args else kwargs.get("tensor")  # torch.nn.init passes tensor=
            if getattr(target, "is_meta", False):
                return target
        elif func in _CONSTANT_FILLS:
            shape, dtype = _filled_shape(func, args, kwargs)
            if dtype is not _UNKNOWN:
                return torch.empty(shape, dtype=dtype, device="meta")
        return func(*args, **kwargs)


_CONSTANT_FILLS = frozenset({torch.zeros, torch.ones, torch.full})
_UNKNOWN = object()


def _filled_shape(func, args: tuple, kwargs: dict) -> tuple[tuple[int, ...], object]:
    """The shape and dtype ``torch.zeros/ones/full`` would make, or ``_UNKNOWN`` for a call
    read here no further (a device or other arguments, or a full whose value decides its
    dtype): those run as torch runs them."""
    if set(kwargs) - {"dtype"}:
        return (), _UNKNOWN
    dtype = kwargs.get("dtype")
    if func is torch.full:
        if len(args) != 2:
            return (), _UNKNOWN
        shape, value = args
        if dtype is None and type(value) is not float:  # an int or bool fill: its dtype
            return (), _UNKNOWN
    else:
        shape = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
    return tuple(shape), dtype


def build_plan(plan: P.Plan) -> nn.Module:
    """Every spec's module, joined as the plan lays them out."""
    ctx = BuildContext(plan.context_length)
    e, h = plan.embedding, plan.head
    embed = TokenEmbedding(e.vocab, e.width, e.d_model, e.multiplier)
    head = OutputHead(h.d_model, h.width, h.vocab, h.bias, h.softcap, h.logit_scale)
    if h.tied:
        head.lm_head.weight = embed.table.weight
    embed.table.archdb_embedding = head.lm_head.archdb_embedding = True  # see measure.params
    positions = module_of(plan.positions, ctx) if plan.positions else ctx.empty
    decoder = _stack(plan.decoder, ctx)
    if plan.encoder is not None:
        encoder = _stack(plan.encoder, ctx)
        return EncoderDecoderLM(embed, positions, encoder, decoder, head)
    embed_norm = norm_module(plan.embedding_norm, e.d_model) if plan.embedding_norm else None
    if plan.masked_lm is not None:
        return _masked_lm(plan, embed, positions, embed_norm, _stack(plan.decoder, ctx), head)
    per_layer = None
    if plan.per_layer_inputs is not None:
        per_layer = module_of(plan.per_layer_inputs)
        per_layer.table.archdb_embedding = True  # a token table (see measure.params)
    token_ids = ctx.tokens if ctx.tokens.read else None
    return DecoderLM(embed, positions, decoder, head, per_layer, embed_norm, token_ids)


def _masked_lm(
    plan: P.Plan,
    embed: TokenEmbedding,
    positions: nn.Module,
    embed_norm: nn.Module | None,
    encoder: Stack,
    head: OutputHead,
) -> MaskedLM:
    m = plan.masked_lm
    assert m is not None
    token_types = TokenTypes(m.token_types, m.d_model) if m.token_types else None
    if token_types is not None:
        token_types.table.archdb_embedding = True  # a table (see measure.params)
    transform = None
    if m.transform is not None:
        act = Act(m.transform, m.gelu_exact)
        transform = HeadTransform(m.d_model, act, norm_module(m.norm, m.d_model), m.transform_bias)
    pooler = Pooler(m.d_model) if m.pooler else None
    return MaskedLM(embed, token_types, positions, embed_norm, encoder, transform, head, pooler)


class BuildContext:
    """Tables that depend only on positions, shared by every layer that needs them."""

    def __init__(self, context: int) -> None:
        self.context = context
        self.rotary_tables: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
        self.xl_tables: tuple[torch.Tensor, torch.Tensor] | None = None
        # the layer being built and its stack's depth (MiniMax's lightning decay reads them)
        self.layer, self.n_layers = 0, 1
        # cross-layer KV sharing: the keys and values each attention kind's last storing
        # layer computed in the current forward pass, read by the layers that reuse them
        self.kv_store: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        # the token ids of the current forward pass, for routers that route by them (V4)
        self.tokens = moe.modules().TokenIds()
        # the one empty norm slot (and absent final norm or positions) every place shares:
        # it holds nothing, and a full-size model has tens of thousands of empty slots
        self.empty = nn.Identity()

    def rotary(
        self,
        dims: int,
        theta: float,
        context: int,
        scaling=None,
        interleaved: bool = False,
        rotating_pairs: int | None = None,
    ) -> Rotary:
        key = (dims, theta, scaling, interleaved, rotating_pairs)
        if key not in self.rotary_tables:
            self.rotary_tables[key] = rotary_tables(
                dims, theta, context, scaling, interleaved, rotating_pairs
            )
        short = None
        if longrope_switches(scaling, context):  # the short factors' tables, up to original
            short_key = (*key, "short")
            if short_key not in self.rotary_tables:
                self.rotary_tables[short_key] = rotary_tables(
                    dims, theta, scaling.original_context, scaling, interleaved, rotating_pairs
                )
            short = self.rotary_tables[short_key]
        return Rotary(dims, theta, context, self.rotary_tables[key], interleaved, short)

    def trailing_rotary(self, rope) -> compressed.modules().TrailingRotary:
        """DeepSeek-V4's rotation of one rope type; its tables shared by every user."""
        key = ("trailing", rope)
        if key not in self.rotary_tables:
            self.rotary_tables[key] = compressed.modules().trailing_tables(rope, self.context)
        return compressed.modules().TrailingRotary(rope.dims, self.rotary_tables[key])

    def relative_xl(self, spec: RelativeXLSpec) -> RelativeXL:
        """Transformer-XL positions; layers share the distance tables, not the weights."""
        if not self.xl_tables:
            n = spec.context
            self.xl_tables = (sinusoid_table(n, spec.d_model), distance_index(n))
        scale = 1.0 / math.sqrt(spec.head_dim)
        return RelativeXL(spec.d_model, spec.n_heads, spec.head_dim, scale, *self.xl_tables)


def _stack(stack: P.Stack, ctx: BuildContext) -> Stack:
    final = norm_module(stack.final_norm, stack.d_model) if stack.final_norm else ctx.empty
    layers = []
    for index, block in enumerate(stack.layers()):
        ctx.layer, ctx.n_layers = index, stack.n_layers  # lightning's decay reads its depth
        layers.append(_block(block, ctx))
    bias = module_of(stack.bias, ctx) if stack.bias else None
    if stack.shared is not None:  # weight-shared blocks before some layers (Zamba2)
        return shared.modules().SharedStack(layers, final, bias, module_of(stack.shared, ctx))
    streams = module_of(stack.streams) if stack.streams else None
    return Stack(layers, final, bias, stack.resi_dual, streams)


def _block(block: P.Block | P.ShortcutBlock | P.HyperBlock, ctx: BuildContext) -> nn.Module:
    if isinstance(block, P.ShortcutBlock | P.HyperBlock):  # LongCat-Flash's, V4's: their own
        return module_of(block, ctx)

    def norm_if(present: bool) -> nn.Module:
        return norm_module(block.norm, block.d_model) if present else ctx.empty

    slots = block.slots
    attn = module_of(block.mixer, ctx) if block.mixer is not None else None
    mlp = module_of(block.mlp, ctx) if block.mlp is not None else None
    if block.parallel:
        assert attn is not None and mlp is not None  # the plan gives parallel blocks both
        return ParallelBlock(
            attn,
            mlp,
            before_attn=norm_if(slots.before),
            before_mlp=None if block.shared_norm else norm_if(slots.before),
            branch_attn=norm_if(slots.branch),
            branch_mlp=norm_if(slots.branch),
            after=norm_if(slots.after),
            multiplier=block.residual_multiplier,
        )

    def residual(sublayer: nn.Module, norms_itself: bool = False, skip=None) -> Residual:
        before = ctx.empty if norms_itself else norm_if(slots.before)
        norms = before, norm_if(slots.branch), norm_if(slots.after)
        multiplier = block.residual_multiplier
        if block.resi_dual:
            return ResiDualResidual(sublayer, *norms, multiplier=multiplier)
        return Residual(sublayer, *norms, multiplier, skip, slots.normed_skip)

    cross = residual(module_of(block.cross, ctx)) if block.cross else None
    # a MoE with a dense MLP beside it norms each branch's input itself (Gemma 4)
    own_norm = bool(getattr(block.mlp, "reads_residual", False))
    ffn = residual(mlp, own_norm, block.mlp_skip) if mlp is not None else None
    per_layer = module_of(block.per_layer) if block.per_layer is not None else None
    if block.altup is not None:  # Gemma 3n (the plan's checks give it all four parts)
        assert block.laurel is not None and attn is not None and ffn is not None
        assert per_layer is not None
        laurel = module_of(block.laurel)
        return Gemma3nBlock(module_of(block.altup), laurel, residual(attn), ffn, per_layer)
    mixer = None
    if attn is not None:  # ModernBERT's first layer: no norm of the mixer's own
        mixer = residual(attn, not block.mixer_norm, skip=block.mixer_skip)
    return SerialBlock(mixer, ffn, cross, block.scalar, per_layer)


# --- reading a built model ----------------------------------------------------------------


def count_parameters(model: nn.Module) -> int:
    """Every parameter once: a tied output head shares the embedding's tensor."""
    return sum(p.numel() for p in model.parameters())


def example_inputs(model: nn.Module, seq_len: int, batch: int = 1) -> tuple[torch.Tensor, ...]:
    """Token ids for a forward pass (source and target for encoder-decoders), on the
    model's device: a model on the meta device traces the same graph without memory."""
    vocab = model.embed.table.num_embeddings
    device = model.embed.table.weight.device
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (batch, seq_len), generator=gen)
    if isinstance(model, EncoderDecoderLM):
        target = torch.randint(0, vocab, (batch, seq_len), generator=gen)
        return tokens.to(device), target.to(device)
    return (tokens.to(device),)


def module_tree(model: nn.Module) -> list[dict]:
    """The model as nested {name, module, params, children} nodes, compact and JSON-ready.

    A stack's layers are folded into runs of identical structure, so a Gemma-3-like toy
    reads as "layers.0-4 (x5)" and "layers.5" rather than six copies. Empty slots
    (nn.Identity) are left out. Parameters count each tensor once (a tied head shows 0).
    """
    seen: set[int] = set()
    return [
        _node(name, child, seen)
        for name, child in model.named_children()
        if not isinstance(child, nn.Identity)
    ]


def _node(name: str, module: nn.Module, seen: set[int]) -> dict:
    if isinstance(module, nn.ModuleList):
        runs = _fold_layers(module, seen)
        return {
            "name": name,
            "module": f"{len(module)} layers",
            "params": sum(r["params"] for r in runs),
            "children": runs,
        }
    children = [
        _node(n, c, seen) for n, c in module.named_children() if not isinstance(c, nn.Identity)
    ]
    own = sum(p.numel() for p in module.parameters(recurse=False) if _first(p, seen))
    total = own + sum(c["params"] for c in children)
    return {"name": name, "module": _label(module), "params": total, "children": children}


def _fold_layers(layers: nn.ModuleList, seen: set[int]) -> list[dict]:
    runs: list[list[int]] = []
    texts = [repr(layer) for layer in layers]
    for i, text in enumerate(texts):
        if runs and texts[runs[-1][0]] == text:
            runs[-1].append(i)
        else:
            runs.append([i])
    nodes = []
    for run in runs:
        first, last = run[0], run[-1]
        node = _node(str(first), layers[first], seen)
        for i in run[1:]:
            node["params"] += _new_params(layers[i], seen)
        if last > first:
            node["name"] = f"{first}-{last}"
            node["module"] += f" x{len(run)}"
        nodes.append(node)
    return nodes


def _new_params(module: nn.Module, seen: set[int]) -> int:
    return sum(p.numel() for p in module.parameters() if _first(p, seen))


def _first(p: nn.Parameter, seen: set[int]) -> bool:
    if id(p) in seen:
        return False
    seen.add(id(p))
    return True


def _label(module: nn.Module) -> str:
    if isinstance(module, nn.Linear):
        bias = " +bias" if module.bias is not None else ""
        return f"Linear {module.in_features}->{module.out_features}{bias}"
    if isinstance(module, nn.Embedding):
        return f"Embedding {module.num_embeddings}x{module.embedding_dim}"
    extra = module.extra_repr()
    return f"{type(module).__name__}({extra})" if extra else type(module).__name__
