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

import functools
from dataclasses import dataclass
from operator import attrgetter
from types import SimpleNamespace
from typing import Any

from archdb.parts.kernels import ScoredThroughKernel, SoftmaxKernel
from archdb.parts.mlp import DenseMLP
from archdb.parts.norms import NormSpec
from archdb.parts.positions import RotarySpec
from archdb.tally import Tally, linear_params


@dataclass(frozen=True)
class SharedAttention(ScoredThroughKernel):
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

    def module(self, ctx: Any = None) -> Any:
        return modules().SharedBlocks(self, ctx)


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    from torch import nn

    from archdb.parts import attention as attention_part
    from archdb.parts import blocks as blocks_part
    from archdb.parts import norms as norms_part

    # this module, for the specs: the torch classes below take the same names
    from archdb.parts import shared as S

    repeat_kv = attention_part.modules().repeat_kv
    SerialBlock, Stack, scaled = attrgetter("SerialBlock", "Stack", "scaled")(blocks_part.modules())
    norm_module = norms_part.modules().norm_module

    class Adapter(nn.Module):
        """LoRA: up(down(x)), no bias; added to a shared projection's output."""

        def __init__(self, d_in: int, rank: int, d_out: int) -> None:
            super().__init__()
            self.down = nn.Linear(d_in, rank, bias=False)
            self.up = nn.Linear(rank, d_out, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.up(self.down(x))

    class Invocation(nn.Module):
        """What one invocation owns: adapters on q, k, v and on the fused gate/up projection,
        and the linear back to d_model (each optional)."""

        def __init__(self, spec: S.Invocation) -> None:
            super().__init__()
            rank = spec.rank or 0
            q, k, v = (
                (Adapter(i, rank, o) for i, o in spec.attention) if spec.attention else [None] * 3
            )
            self.q_adapter, self.k_adapter, self.v_adapter = q, k, v
            self.gate_up_adapter = Adapter(spec.mlp[0], rank, spec.mlp[1]) if spec.mlp else None
            d = spec.d_model
            self.proj = nn.Linear(d, d, bias=False) if spec.projection else None

    def _adapted(x: torch.Tensor, y: torch.Tensor, adapter: Adapter | None) -> torch.Tensor:
        return y if adapter is None else y + adapter(x)

    class SharedAttention(nn.Module):
        """Head attention from the block's input width back to d_model, with an invocation's
        q/k/v adapters added to the shared projections."""

        def __init__(self, spec: S.SharedAttention, ctx) -> None:
            super().__init__()
            self.n_heads, self.n_kv_heads, self.head_dim = (
                spec.n_heads,
                spec.n_kv_heads,
                spec.head_dim,
            )
            q, k, v = spec.widths
            self.q = nn.Linear(spec.in_width, q, bias=spec.qkv_bias)
            self.k = nn.Linear(spec.in_width, k, bias=spec.qkv_bias)
            self.v = nn.Linear(spec.in_width, v, bias=spec.qkv_bias)
            self.o = nn.Linear(q, spec.d_model, bias=spec.out_bias)
            self.rotary = spec.rotary.module(ctx) if spec.rotary else None
            self.kernel = spec.kernel.module()

        def forward(self, x: torch.Tensor, own: Invocation) -> torch.Tensor:
            q = _adapted(x, self.q(x), own.q_adapter).unflatten(-1, (self.n_heads, self.head_dim))
            k = _adapted(x, self.k(x), own.k_adapter).unflatten(
                -1, (self.n_kv_heads, self.head_dim)
            )
            v = _adapted(x, self.v(x), own.v_adapter).unflatten(
                -1, (self.n_kv_heads, self.head_dim)
            )
            if self.rotary is not None:
                q, k = self.rotary(q, k)
            groups = self.n_heads // self.n_kv_heads
            k, v = repeat_kv(k, groups), repeat_kv(v, groups)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H, T, D)
            out = self.kernel(q, k, v).transpose(1, 2)  # (B, T, H, D)
            return self.o(out.flatten(2))

    class SharedBlock(nn.Module):
        """One weight set: norm, attention, norm, MLP, with no residual add inside."""

        def __init__(self, spec: S.SharedBlock, ctx) -> None:
            super().__init__()
            self.input_norm = norm_module(spec.norm, spec.in_width)
            self.attention = SharedAttention(spec.attention, ctx)
            self.mlp_norm = norm_module(spec.norm, spec.d_model)
            self.mlp = spec.mlp.module(ctx)

        def forward(self, x: torch.Tensor, own: Invocation) -> torch.Tensor:
            h = self.mlp_norm(self.attention(self.input_norm(x), own))
            if own.gate_up_adapter is None:
                return self.mlp(h)
            gate, up = own.gate_up_adapter(h).chunk(2, dim=-1)  # Zamba2's fused gate/up order
            mlp = self.mlp
            return mlp.down(mlp.act(mlp.gate(h) + gate, mlp.up(h) + up))

    class SharedBlocks(nn.Module):
        """The shared weight sets and the invocations; invocation i runs block i mod n_blocks."""

        def __init__(self, spec: S.SharedBlocks, ctx) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(SharedBlock(spec.block, ctx) for _ in range(spec.n_blocks))
            self.invocations = nn.ModuleList(Invocation(spec.invocation) for _ in spec.layers)
            self.at = {layer: i for i, layer in enumerate(spec.layers)}  # layer -> invocation
            self.concat_embeddings = spec.concat_embeddings

        def forward(self, i: int, x: torch.Tensor, embeddings: torch.Tensor) -> torch.Tensor:
            own = self.invocations[i]
            h = torch.cat([x, embeddings], dim=-1) if self.concat_embeddings else x
            y = self.blocks[i % len(self.blocks)](h, own)
            return y if own.proj is None else own.proj(y)

        def extra_repr(self) -> str:
            return f"layers={sorted(self.at)}"

    class SharedStack(Stack):
        """A decoder stack whose listed layers first take a shared block's output into the
        input of their first sublayer's norm (not into their residual stream)."""

        def __init__(self, layers, final_norm, position_bias, shared: SharedBlocks) -> None:
            super().__init__(layers, final_norm, position_bias, resi_dual=False)
            self.shared = shared

        def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
            t = x.shape[1]
            bias = None if self.position_bias is None else self.position_bias(t, t)
            embeddings = x
            for index, layer in enumerate(self.layers):
                i = self.shared.at.get(index)
                if i is None:
                    x, _ = layer(x, None, bias, memory)
                else:
                    x = _joined(layer, x, self.shared(i, x, embeddings), bias)
            return self.final_norm(x)

    def _joined(layer: SerialBlock, x: torch.Tensor, extra: torch.Tensor, bias) -> torch.Tensor:
        """The layer with ``extra`` added to its first sublayer's normed input only:
        x + f(norm(x + extra)), then the layer's other sublayers as usual."""
        first = layer.attn if layer.attn is not None else layer.mlp
        assert first is not None  # every layer has a sublayer
        args = (bias,) if first is layer.attn else ()
        y = scaled(first.branch(first.sublayer(first.before(x + extra), *args)), first.multiplier)
        x = first.after(x + y)
        if first is layer.attn and layer.mlp is not None:
            x, _ = layer.mlp(x, None)
        return x

    return SimpleNamespace(
        Adapter=Adapter,
        Invocation=Invocation,
        _adapted=_adapted,
        SharedAttention=SharedAttention,
        SharedBlock=SharedBlock,
        SharedBlocks=SharedBlocks,
        SharedStack=SharedStack,
        _joined=_joined,
    )
