"""Assembly: an Architecture (a card's) becomes a torch model. Only this module reads cards.

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
import math

import torch
from torch import nn

from archdb.schema import (
    Architecture,
    AttentionVariant,
    Kind,
    LayerKind,
    NormPosition,
    PositionType,
)

from .attention import HeadAttention, LatentAttention
from .blocks import ParallelBlock, Residual, ResiDualResidual, SerialBlock, Stack
from .kernels import ChunkedKernel, GlobalKernel, LinearKernel, LocalKernel
from .layout import (
    NORM_SLOTS,
    T5_MAX_DISTANCE,
    LayerSpec,
    check_buildable,
    decoder_layers,
    embedding_width,
    fill_unknowns,
    head_dims,
    layer_spec,
    learned_rows,
    norm_spec,
    parallel_shared_norm,
    qk_norm_spec,
    relative_buckets,
    score_bias_layer,
)
from .mlp import ACTIVATIONS, make_mlp
from .moe import Experts, MoE, Router
from .norms import make_norm, make_qk_norm
from .positions import (
    AlibiBias,
    LearnedPositions,
    RelativeBias,
    RelativeXL,
    Rotary,
    SinusoidalPositions,
    distance_index,
    rotary_tables,
    sinusoid_table,
)

# --- the two model shapes ----------------------------------------------------------------


class TokenEmbedding(nn.Module):
    """Token lookup, projected to d_model when the embedding is factorized."""

    flop_class = "embedding"

    def __init__(self, vocab: int, width: int, d_model: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab, width)
        self.proj = nn.Linear(width, d_model, bias=False) if width != d_model else None

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.table(tokens)
        return x if self.proj is None else self.proj(x)


class OutputHead(nn.Module):
    """Hidden states -> logits, with the optional projection and final soft-cap."""

    def __init__(
        self, d_model: int, width: int, vocab: int, bias: bool, softcap: float | None
    ) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, width, bias=False) if width != d_model else None
        self.lm_head = nn.Linear(width, vocab, bias=bias)
        self.softcap = softcap

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.proj is not None:
            x = self.proj(x)
        logits = self.lm_head(x)
        if self.softcap is not None:  # Gemma 2: c * tanh(logits / c)
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits


class DecoderLM(nn.Module):
    """tokens (B, T) -> logits (B, T, vocab)."""

    def __init__(
        self, embed: TokenEmbedding, positions: nn.Module, decoder: Stack, head: OutputHead
    ) -> None:
        super().__init__()
        self.embed, self.positions, self.decoder, self.head = embed, positions, decoder, head

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.decoder(self.positions(self.embed(tokens))))


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

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        memory = self.encoder(self.positions(self.embed(source)))
        return self.head(self.decoder(self.positions(self.embed(target)), memory))


# --- assembly ----------------------------------------------------------------------------


def build_model(arch: Architecture, device: str | torch.device | None = None) -> nn.Module:
    """The model a card describes; ``device="meta"`` for shapes without memory.

    Null choices are filled as ``layout.fill_unknowns`` states (the same defaults the
    analytic formulas use); null sizes raise BuildError.
    """
    arch, _ = fill_unknowns(arch)
    check_buildable(arch)
    ctx = torch.device(device) if device is not None else contextlib.nullcontext()
    with ctx:
        model = _Assembler(arch).model()
    return model


class _Assembler:
    """Reads the architecture once and hands plain numbers to the blocks."""

    def __init__(self, arch: Architecture) -> None:
        self.arch = arch
        self.d = arch.d_model
        self.norm_spec = norm_spec(arch)
        self.dims = head_dims(arch)
        self.rotary_tables: dict[tuple[int, float], tuple[torch.Tensor, torch.Tensor]] = {}
        self.xl_tables: tuple[torch.Tensor, torch.Tensor] | None = None

    def model(self) -> nn.Module:
        a = self.arch
        width = embedding_width(a)
        embed = TokenEmbedding(a.vocab_size, width, self.d)
        head = OutputHead(self.d, width, a.vocab_size, bool(a.bias.lm_head), a.final_logit_softcap)
        if a.tied_embeddings:
            head.lm_head.weight = embed.table.weight
        positions = self.absolute_positions()
        decoder = self.stack(decoder_layers(a), causal=True, cross=a.kind is Kind.ENCODER_DECODER)
        if a.kind is Kind.ENCODER_DECODER:
            enc_layers = [layer_spec(a, i, LayerKind.GLOBAL) for i in range(a.n_encoder_layers)]
            encoder = self.stack(enc_layers, causal=False, cross=False)
            return EncoderDecoderLM(embed, positions, encoder, decoder, head)
        return DecoderLM(embed, positions, decoder, head)

    # --- positions ---

    def absolute_positions(self) -> nn.Module:
        kind = self.arch.position.type
        if kind is PositionType.SINUSOIDAL:
            return SinusoidalPositions(self.arch.context_length, self.d)
        if kind is PositionType.LEARNED:
            return LearnedPositions(learned_rows(self.arch), self.d)
        return nn.Identity()

    def score_bias(self, causal: bool) -> nn.Module | None:
        a = self.arch
        if a.position.type is PositionType.RELATIVE_BIAS:
            buckets = relative_buckets(a)
            return RelativeBias(
                buckets,
                self.dims.n_heads,
                a.context_length,
                bidirectional=not causal,
                max_distance=T5_MAX_DISTANCE,
            )
        if a.position.type is PositionType.ALIBI:
            return AlibiBias(self.dims.n_heads, a.context_length)
        return None

    # --- stacks and blocks ---

    def stack(self, specs: list[LayerSpec], causal: bool, cross: bool) -> Stack:
        resi_dual = self.arch.norm.position is NormPosition.RESIDUAL
        final = self.norm() if self.arch.norm.final else nn.Identity()
        layers = [self.block(s, causal, cross) for s in specs]
        return Stack(layers, final, self.score_bias(causal), resi_dual)

    def block(self, spec: LayerSpec, causal: bool, cross: bool) -> nn.Module:
        attn, mlp = self.attention(spec, causal), self.mlp(spec)
        if self.arch.parallel_layers:
            return self.parallel_block(attn, mlp)
        cross_attn = self.residual(self.attention(None, causal=False)) if cross else None
        return SerialBlock(self.residual(attn), self.residual(mlp), cross_attn)

    def residual(self, sublayer: nn.Module) -> Residual:
        slots = NORM_SLOTS[self.arch.norm.position]
        cls = ResiDualResidual if self.arch.norm.position is NormPosition.RESIDUAL else Residual
        return cls(
            sublayer,
            self.norm_if(slots.before),
            self.norm_if(slots.branch),
            self.norm_if(slots.after),
        )

    def parallel_block(self, attn: nn.Module, mlp: nn.Module) -> ParallelBlock:
        slots = NORM_SLOTS[self.arch.norm.position]
        shared = parallel_shared_norm(self.arch) or not slots.before
        return ParallelBlock(
            attn,
            mlp,
            before_attn=self.norm_if(slots.before),
            before_mlp=None if shared else self.norm_if(slots.before),
            branch_attn=self.norm_if(slots.branch),
            branch_mlp=self.norm_if(slots.branch),
            after=self.norm_if(slots.after),
        )

    def norm(self, width: int | None = None) -> nn.Module:
        s = self.norm_spec
        return make_norm(s.type, width or self.d, s.scale, s.bias)

    def norm_if(self, present: bool) -> nn.Module:
        return self.norm() if present else nn.Identity()

    # --- sublayers ---

    def attention(self, spec: LayerSpec | None, causal: bool) -> nn.Module:
        """Self-attention for a layer spec; ``spec=None`` is cross-attention."""
        a, dims, bias = self.arch, self.dims, self.arch.bias
        kernel = self.kernel(spec, causal)
        rotary = None
        if spec is not None and spec.rope_theta is not None and dims.rotary_dims:
            rotary = self.rotary(dims.rotary_dims, spec.rope_theta)
        if a.attention.variant is AttentionVariant.LATENT:
            lat = a.attention.latent
            return LatentAttention(
                self.d,
                dims.n_heads,
                lat.kv_lora_rank,
                lat.q_lora_rank,
                lat.qk_rope_head_dim,
                lat.qk_nope_head_dim,
                lat.v_head_dim,
                kernel,
                self.norm,
                bias.qkv,
                bias.attn_out,
                rotary,
            )
        s = qk_norm_spec(a)
        qk_norm = make_qk_norm(
            a.attention.qk_norm, s.type, dims.n_heads, dims.n_kv_heads, dims.qk_dim, s.scale, s.bias
        )
        takes_bias = spec is not None and score_bias_layer(spec, a)
        relative = None
        if takes_bias and a.position.type is PositionType.RELATIVE_XL:
            relative = self.relative_xl()
        return HeadAttention(
            self.d,
            dims.n_heads,
            dims.n_kv_heads,
            dims.qk_dim,
            kernel,
            bias.qkv,
            bias.attn_out,
            rotary,
            qk_norm,
            relative,
            takes_bias,
        )

    def relative_xl(self) -> RelativeXL:
        """Transformer-XL positions; layers share the distance tables, not the weights."""
        if not self.xl_tables:
            n = self.arch.context_length
            self.xl_tables = (sinusoid_table(n, self.d), distance_index(n))
        return RelativeXL(
            self.d,
            self.dims.n_heads,
            self.dims.qk_dim,
            1.0 / math.sqrt(self.dims.qk_dim),
            *self.xl_tables,
        )

    def rotary(self, dims: int, theta: float) -> Rotary:
        """A rotary block; layers with the same theta share one pair of angle tables."""
        key = (dims, theta)
        if key not in self.rotary_tables:
            self.rotary_tables[key] = rotary_tables(dims, theta, self.arch.context_length)
        return Rotary(dims, theta, self.arch.context_length, self.rotary_tables[key])

    def kernel(self, spec: LayerSpec | None, causal: bool) -> nn.Module:
        att = self.arch.attention
        if att.variant is AttentionVariant.LINEAR:
            return LinearKernel()
        qk, cap = self.dims.qk_dim, att.logit_softcap
        if spec is not None and spec.kind is LayerKind.LOCAL:
            return LocalKernel(qk, causal, cap, spec.window)
        if spec is not None and spec.kind is LayerKind.CHUNKED:
            return ChunkedKernel(qk, causal, cap, spec.window)
        return GlobalKernel(qk, causal, cap)

    def mlp(self, spec: LayerSpec) -> nn.Module:
        a = self.arch
        act, bias = a.mlp.activation, a.bias.mlp
        if not spec.moe:
            return make_mlp(act, self.d, spec.d_ff, bias)
        moe = a.mlp.moe
        shared = make_mlp(act, self.d, moe.shared_d_ff, bias) if moe.n_shared else None
        experts = Experts(moe.n_experts, self.d, spec.d_ff, ACTIVATIONS[act](), act.gated, bias)
        return MoE(Router(self.d, moe.n_experts, moe.n_active), experts, shared)


# --- reading a built model ----------------------------------------------------------------


def count_parameters(model: nn.Module) -> int:
    """Every parameter once: a tied output head shares the embedding's tensor."""
    return sum(p.numel() for p in model.parameters())


def example_inputs(model: nn.Module, seq_len: int, batch: int = 1) -> tuple[torch.Tensor, ...]:
    """Token ids for a forward pass (source and target for encoder-decoders)."""
    vocab = model.embed.table.num_embeddings
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (batch, seq_len), generator=gen)
    if isinstance(model, EncoderDecoderLM):
        return tokens, torch.randint(0, vocab, (batch, seq_len), generator=gen)
    return (tokens,)


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
