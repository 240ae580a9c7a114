"""Attention layers: projections around a kernel (see kernels.py).

- ``HeadAttention``: softmax or linear attention with n_heads queries and n_kv_heads
  key/value heads (MHA when equal, MQA when 1, GQA between; Ainslie et al. 2023);
- ``LatentAttention``: DeepSeek-V2's multi-head latent attention (MLA,
  https://arxiv.org/abs/2405.04434): keys and values are expanded from a small cached
  latent, plus one RoPE key shared by all heads.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from archdb.device import linear
from archdb.plan import attention as spec

from .attributes import set_plain
from .norms import QKNormPair, norm_module
from .positions import RelativeXL, Rotary
from .registry import builds, module_of


class HeadAttention(nn.Module):
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int,
        head_dim: int,
        kernel: nn.Module,
        qkv_bias: bool,
        out_bias: bool,
        rotary: Rotary | None = None,
        qk_norm: QKNormPair | None = None,
        relative: RelativeXL | None = None,
        takes_bias: bool = True,
        gate_width: int = 0,
        values_from_keys: bool = False,
        value_norm: nn.Module | None = None,
        kv_sharing: str | None = None,
        kv_store: dict | None = None,
        kv_kind: str = "",
        qk_norm_after_rope: bool = False,
        qkv_clip: float | None = None,
        v_dim: int | None = None,
        value_scale: float | None = None,
    ) -> None:
        super().__init__()
        set_plain(
            self,
            n_heads=n_heads,
            n_kv_heads=n_kv_heads,
            head_dim=head_dim,
            # value heads of their own width (MiMo-V2-Flash), scaled once projected
            v_dim=v_dim or head_dim,
            value_scale=value_scale,
            qk_norm_after_rope=qk_norm_after_rope,  # Hunyuan norms the rotated q and k
            qkv_clip=qkv_clip,  # MPT/DBRX clip_qkv: projections clamped to [-clip, clip]
            # an output gate widens each query head by its gate values (Qwen3-Next's layout)
            gate_width=gate_width,
        )
        self.q = linear(d_model, n_heads * (head_dim + gate_width), bias=qkv_bias)
        # cross-layer KV sharing (Gemma 3n/4): "store" leaves this layer's keys and values
        # in the model's store (a plain dict shared by the layers, not a submodule) under
        # its kind, "reuse" attends with them and has no k or v
        set_plain(self, kv_sharing=kv_sharing, kv_kind=kv_kind, _kv_store=kv_store)
        reuses = kv_sharing == "reuse"
        self.k = None if reuses else linear(d_model, n_kv_heads * head_dim, bias=qkv_bias)
        # Gemma 4's global layers (k_eq_v): no value projection, the raw keys are the values
        own_v = not values_from_keys and not reuses
        self.v = linear(d_model, n_kv_heads * self.v_dim, qkv_bias) if own_v else None
        self.value_norm = None if reuses else value_norm  # Gemma 4: a bare RMS norm per head
        self.o = linear(n_heads * self.v_dim, d_model, bias=out_bias)
        self.qk_norm = qk_norm
        self.rotary = rotary
        self.relative = relative  # Transformer-XL positions, computed in the layer
        set_plain(self, takes_bias=takes_bias)  # False: a NoPE layer ignores the score bias
        self.kernel = kernel

    def forward(
        self, x: torch.Tensor, bias: torch.Tensor | None = None, memory: torch.Tensor | None = None
    ) -> torch.Tensor:
        """x: (B, T, d); memory: the encoder output for cross-attention, else None."""
        # static head counts in unflatten/flatten rather than sizes read from x: a traced
        # size read is several graph nodes (fvcore), the views are the same
        src = x if memory is None else memory
        q = self._clipped(self.q(x)).unflatten(-1, (self.n_heads, self.head_dim + self.gate_width))
        gate = None
        if self.gate_width:
            q, gate = q.split([self.head_dim, self.gate_width], dim=-1)
        if self.k is None:  # reuse: the normed, rotated keys and values of an earlier layer
            assert self._kv_store is not None
            if self.qk_norm is not None and not self.qk_norm_after_rope:
                q, _ = self.qk_norm(q, None)
            if self.rotary is not None:
                (q,) = self.rotary(q)
            if self.qk_norm is not None and self.qk_norm_after_rope:
                q, _ = self.qk_norm(q, None)
            k, v = self._kv_store[self.kv_kind]
        else:
            k = self._clipped(self.k(src)).unflatten(-1, (self.n_kv_heads, self.head_dim))
            if self.v is None:
                v = k
            else:
                v = self._clipped(self.v(src)).unflatten(-1, (self.n_kv_heads, self.v_dim))
                if self.value_scale is not None:
                    v = v * self.value_scale
            if self.value_norm is not None:
                v = self.value_norm(v)
            if self.qk_norm is not None and not self.qk_norm_after_rope:
                q, k = self.qk_norm(q, k)
            if self.rotary is not None:
                q, k = self.rotary(q, k)
            if self.qk_norm is not None and self.qk_norm_after_rope:
                q, k = self.qk_norm(q, k)
            if self.kv_sharing == "store":
                assert self._kv_store is not None
                self._kv_store[self.kv_kind] = k, v
        groups = self.n_heads // self.n_kv_heads
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H, T, D)
        if not self.takes_bias:
            bias = None
        if self.relative is not None:
            bias = self.relative(q, k)
        out = self.kernel(q, k, v, bias).transpose(1, 2)  # (B, T, H, D)
        if gate is not None:
            out = out * torch.sigmoid(gate)
        return self.o(out.flatten(2))  # (B, T, d)

    def _clipped(self, projected: torch.Tensor) -> torch.Tensor:
        if self.qkv_clip is None:
            return projected
        return projected.clamp(-self.qkv_clip, self.qkv_clip)

    def extra_repr(self) -> str:
        text = f"heads={self.n_heads}, kv_heads={self.n_kv_heads}, head_dim={self.head_dim}"
        return text + (f", kv={self.kv_sharing} {self.kv_kind}" if self.kv_sharing else "")


def repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    """(B, T, kv_heads, D) -> (B, T, kv_heads * groups, D): each KV head serves ``groups``
    consecutive query heads."""
    return x if groups == 1 else x.repeat_interleave(groups, dim=2)


class LatentAttention(nn.Module):
    """MLA: q through an optional low-rank bottleneck, k/v expanded from a cached latent."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        kv_rank: int,
        q_rank: int | None,
        rope_dim: int,
        nope_dim: int,
        v_dim: int,
        kernel: nn.Module,
        make_norm,
        qkv_bias: bool,
        out_bias: bool,
        rotary: Rotary | None,
        indexer: nn.Module | None = None,
        lora_scales: tuple[float, float] | None = None,
    ) -> None:
        super().__init__()
        self.lora_scales = lora_scales  # LongCat-Flash: (on q, on the normed KV latent)
        self.n_heads, self.rope_dim, self.nope_dim, self.v_dim = n_heads, rope_dim, nope_dim, v_dim
        self.kv_rank = kv_rank
        qk = nope_dim + rope_dim
        if q_rank is None:
            self.q = linear(d_model, n_heads * qk, bias=qkv_bias)
        else:
            self.q = nn.Sequential(
                linear(d_model, q_rank, bias=qkv_bias),
                make_norm(q_rank),
                linear(q_rank, n_heads * qk, bias=False),
            )
        self.kv_down = linear(d_model, kv_rank + rope_dim, bias=qkv_bias)
        self.kv_norm = make_norm(kv_rank)
        self.kv_up = linear(kv_rank, n_heads * (nope_dim + v_dim), bias=False)
        self.o = linear(n_heads * v_dim, d_model, bias=out_bias)
        self.rotary = rotary
        self.kernel = kernel
        self.indexer = indexer  # DSA: picks the keys each query reads from the query latent

    def forward(
        self, x: torch.Tensor, bias: torch.Tensor | None = None, memory: torch.Tensor | None = None
    ) -> torch.Tensor:
        h = self.n_heads
        selected = None
        if self.indexer is not None:
            down, norm, up = self.q
            q_latent = norm(down(x))
            selected = self.indexer(x, q_latent)
            q = up(q_latent).unflatten(-1, (h, -1))
        else:
            q = self.q(x).unflatten(-1, (h, -1))
        latent, k_rope = self.kv_down(x).split((self.kv_rank, self.rope_dim), dim=-1)
        latent = self.kv_norm(latent)
        if self.lora_scales is not None:
            q, latent = q * self.lora_scales[0], latent * self.lora_scales[1]
        q_nope, q_rope = q.split((self.nope_dim, self.rope_dim), dim=-1)
        kv = self.kv_up(latent).unflatten(-1, (h, -1))
        k_nope, v = kv.split((self.nope_dim, self.v_dim), dim=-1)
        k_rope = k_rope.unsqueeze(2)  # one key head, shared
        if self.rotary is not None:
            q_rope, k_rope = self.rotary(q_rope, k_rope)
        q = torch.cat((q_nope, q_rope), dim=-1)
        k = torch.cat((k_nope, k_rope.expand(-1, -1, h, -1)), dim=-1)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if selected is None:
            out = self.kernel(q, k, v, bias)
        else:
            out = self.kernel(q, k, v, bias, selected=selected)
        return self.o(out.transpose(1, 2).flatten(2))

    def extra_repr(self) -> str:
        return (
            f"heads={self.n_heads}, kv_rank={self.kv_rank}, nope_dim={self.nope_dim}, "
            f"rope_dim={self.rope_dim}, v_dim={self.v_dim}"
        )


# --- from specs ----------------------------------------------------------------------------


def _optional(part: object, ctx: object) -> nn.Module | None:
    return None if part is None else module_of(part, ctx)


@builds(spec.HeadAttention)
def head_attention(s: spec.HeadAttention, ctx) -> HeadAttention:
    return HeadAttention(
        s.d_model,
        s.n_heads,
        s.n_kv_heads,
        s.head_dim,
        module_of(s.kernel),
        s.qkv_bias,
        s.out_bias,
        _optional(s.rotary, ctx),
        _optional(s.qk_norm, ctx),
        _optional(s.relative_xl, ctx),
        s.takes_bias,
        s.gate_width,
        s.values_from_keys,
        norm_module(s.value_norm, s.head_dim) if s.value_norm else None,
        s.kv_sharing,
        ctx.kv_store if s.kv_sharing else None,
        s.kv_kind,
        s.qk_norm_after_rope,
        s.qkv_clip,
        s.v_dim,
        s.value_scale,
    )


@builds(spec.LatentAttention)
def latent_attention(s: spec.LatentAttention, ctx) -> LatentAttention:
    return LatentAttention(
        s.d_model,
        s.n_heads,
        s.kv_rank,
        s.q_rank,
        s.rope_dim,
        s.nope_dim,
        s.v_dim,
        module_of(s.kernel),
        functools.partial(norm_module, s.norm),
        s.qkv_bias,
        s.out_bias,
        _optional(s.rotary, ctx),
        _optional(s.indexer, ctx),
        s.lora_scales,
    )
