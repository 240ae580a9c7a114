"""Weight-shared transformer blocks invoked at several depths (Zamba2), as specs.

Zamba2 (Glorioso et al. 2024, https://arxiv.org/abs/2411.15242; transformers' Zamba2Model)
keeps ``n_blocks`` transformer blocks and runs block ``i mod n_blocks`` before the i-th
listed decoder layer. A block reads ``[x, embeddings]`` (or ``x``), normalizes it, attends
(o_proj back to d_model), normalizes again and applies the gated MLP, with no residual add
inside. Each invocation owns LoRA adapters on the shared projections and a linear back to
d_model; its output joins the next layer's input before that layer's norm.

Conventions: parameters count each block once and each invocation's own adapters and
projection once per invocation; FLOPs count every invocation (the block's work, its
adapters, its projection and the add into the layer's input); every invocation keeps its
own K/V cache (transformers caches each hybrid layer's keys under its own index).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archdb.schema import LayerKind
from archdb.tally import Tally, linear_params

from .attention import SoftmaxKernel
from .layout import layer_spec
from .mlp import DenseMLP
from .norms import NormSpec
from .positions import RotarySpec


@dataclass(frozen=True)
class SharedAttention:
    """Head attention from the block's input width (2 d_model with the embeddings) back to
    d_model: q, k, v read ``in_width``, o_proj writes ``d_model``."""

    in_width: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    qkv_bias: bool
    out_bias: bool
    kernel: SoftmaxKernel
    rotary: RotarySpec | None

    @property
    def widths(self) -> tuple[int, int, int]:
        """Output widths of q, k and v."""
        kv = self.n_kv_heads * self.head_dim
        return self.n_heads * self.head_dim, kv, kv

    def params(self) -> int:
        n = sum(linear_params(self.in_width, w, self.qkv_bias) for w in self.widths)
        n += self.kernel.params()
        return n + linear_params(self.n_heads * self.head_dim, self.d_model, self.out_bias)

    def flops(self, tally: Tally) -> None:
        for width in self.widths:
            tally.linear(self.in_width, width, self.qkv_bias)
        if self.rotary is not None:
            self.rotary.flops(tally, self.n_heads + self.n_kv_heads)
        self.kernel.flops(tally, self.n_heads, self.head_dim)
        tally.linear(self.n_heads * self.head_dim, self.d_model, self.out_bias)

    def cache_entries(self, context: int) -> int:
        return 2 * self.n_kv_heads * self.head_dim * self.kernel.cached_keys(context)

    def score_flops_per_key(self) -> int:
        return self.n_heads * self.kernel.matmuls_per_score(self.head_dim)

    def decode_flops(self, context: int) -> int:
        return self.score_flops_per_key() * self.kernel.cached_keys(context)

    def state_entries(self) -> int:
        return 0


@dataclass(frozen=True)
class SharedBlock:
    """One set of shared weights: norm, attention, norm, MLP (no residual inside)."""

    in_width: int
    d_model: int
    norm: NormSpec
    attention: SharedAttention
    mlp: DenseMLP

    def params(self) -> int:
        norms = self.norm.params(self.in_width) + self.norm.params(self.d_model)
        return norms + self.attention.params() + self.mlp.params()

    def flops(self, tally: Tally) -> None:
        self.norm.flops(tally, self.in_width)  # the concatenation itself moves data only
        self.attention.flops(tally)
        self.norm.flops(tally, self.d_model)
        self.mlp.flops(tally)


@dataclass(frozen=True)
class Invocation:
    """What each invocation owns: LoRA adapters (down to ``rank``, up to the adapted
    projection's width, added to its output) and the projection back to d_model."""

    d_model: int
    rank: int | None
    attention: tuple[tuple[int, int], ...]  # (input, output) widths of q, k, v; () for none
    mlp: tuple[int, int] | None  # (d_model, 2 d_ff): the fused gate/up adapter; None: none
    projection: bool

    @property
    def adapted(self) -> tuple[tuple[int, int], ...]:
        return self.attention + ((self.mlp,) if self.mlp is not None else ())

    def params(self) -> int:
        n = sum(self._adapter_params(d_in, d_out) for d_in, d_out in self.adapted)
        return n + (self.d_model * self.d_model if self.projection else 0)

    def _adapter_params(self, d_in: int, d_out: int) -> int:
        assert self.rank is not None
        return linear_params(d_in, self.rank, False) + linear_params(self.rank, d_out, False)

    def flops(self, tally: Tally) -> None:
        for d_in, d_out in self.adapted:
            tally.linear(d_in, self.rank, False)
            tally.linear(self.rank, d_out, False)
            tally.elementwise(d_out)  # added to the shared projection's output
        if self.projection:
            tally.linear(self.d_model, self.d_model, False)
        tally.elementwise(self.d_model)  # added to the layer's input


@dataclass(frozen=True)
class SharedBlocks:
    """The blocks (identical in shape, ``n_blocks`` weight sets) and their invocations
    before the decoder layers ``layers``; invocation i runs block i mod n_blocks."""

    block: SharedBlock
    n_blocks: int
    layers: tuple[int, ...]
    invocation: Invocation
    concat_embeddings: bool

    @property
    def n_invocations(self) -> int:
        return len(self.layers)

    def params(self) -> int:
        return self.n_blocks * self.block.params() + self.n_invocations * self.invocation.params()

    def flops(self, tally: Tally) -> None:
        saved, tally.repeat = tally.repeat, self.n_invocations
        self.block.flops(tally)
        self.invocation.flops(tally)
        tally.repeat = saved

    def cache_entries(self, context: int) -> int:
        return self.n_invocations * self.block.attention.cache_entries(context)


Reader = Any  # plan._Reader, not imported: plan imports this module


def shared_blocks(r: Reader) -> SharedBlocks | None:
    """The card's shared blocks (None without them), read through the plan's reader."""
    a = r.a
    sb = a.shared_blocks
    if sb is None:
        return None
    d = r.d
    width = 2 * d if sb.concat_embeddings else d
    dims = r.dims
    spec = layer_spec(a, 0, LayerKind.GLOBAL)  # full causal attention with the card's positions
    attention = SharedAttention(
        in_width=width,
        d_model=d,
        n_heads=dims.n_heads,
        n_kv_heads=dims.n_kv_heads,
        head_dim=dims.qk_dim,
        qkv_bias=bool(a.bias.qkv),
        out_bias=bool(a.bias.attn_out),
        kernel=r.kernel(spec, True),
        rotary=r.rotary(spec),
    )
    mlp = r.mlp(spec)
    assert isinstance(mlp, DenseMLP)  # the schema keeps shared blocks dense
    block = SharedBlock(width, d, r.norm, attention, mlp)
    qkv = tuple((width, w) for w in attention.widths) if sb.attention_adapters else ()
    gate_up = (d, 2 * mlp.d_ff) if sb.mlp_adapters else None
    invocation = Invocation(d, sb.adapter_rank, qkv, gate_up, sb.output_projection)
    return SharedBlocks(block, sb.n_blocks, tuple(sb.layers), invocation, sb.concat_embeddings)
