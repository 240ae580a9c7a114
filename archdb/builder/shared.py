"""Weight-shared transformer blocks (Zamba2) as torch modules, and the stack that runs them.

``SharedBlocks`` holds the ``n_blocks`` weight sets and one ``Invocation`` per listed layer
(its LoRA adapters and projection); ``SharedStack`` runs invocation i before layer
``layers[i]`` and adds its output to that layer's input before the layer's norm, leaving
the layer's residual stream as it was (transformers' Zamba2HybridLayer). Specs and the
counting conventions: ``archdb.plan.shared``.
"""

from __future__ import annotations

import torch
from torch import nn

from archdb.plan import shared as S

from .attention import repeat_kv
from .blocks import SerialBlock, Stack, scaled
from .norms import norm_module
from .registry import builds, module_of


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
        q, k, v = (Adapter(i, rank, o) for i, o in spec.attention) if spec.attention else [None] * 3
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
        self.n_heads, self.n_kv_heads, self.head_dim = spec.n_heads, spec.n_kv_heads, spec.head_dim
        q, k, v = spec.widths
        self.q = nn.Linear(spec.in_width, q, bias=spec.qkv_bias)
        self.k = nn.Linear(spec.in_width, k, bias=spec.qkv_bias)
        self.v = nn.Linear(spec.in_width, v, bias=spec.qkv_bias)
        self.o = nn.Linear(q, spec.d_model, bias=spec.out_bias)
        self.rotary = module_of(spec.rotary, ctx) if spec.rotary else None
        self.kernel = module_of(spec.kernel)

    def forward(self, x: torch.Tensor, own: Invocation) -> torch.Tensor:
        q = _adapted(x, self.q(x), own.q_adapter).unflatten(-1, (self.n_heads, self.head_dim))
        k = _adapted(x, self.k(x), own.k_adapter).unflatten(-1, (self.n_kv_heads, self.head_dim))
        v = _adapted(x, self.v(x), own.v_adapter).unflatten(-1, (self.n_kv_heads, self.head_dim))
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
        self.mlp = module_of(spec.mlp, ctx)

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


builds(S.SharedBlocks)(SharedBlocks)  # made from its spec and the build's context


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
