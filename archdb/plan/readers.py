"""Reading a card's mixers into part specs: which spec each layer's attention gets.

A maker reads the card through the plan's reader (``plan._Reader``: the architecture
``a``, head widths ``dims``, the position ``scheme``, and helpers for the layer's kernel,
rotary block, QK norm and score bias); ``spec`` is the layer (None: cross-attention). The
specs themselves, with their parameters, FLOPs, cache and modules, are in ``archdb.parts``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from archdb.parts.attention import HeadAttention, LatentAttention, Mixer
from archdb.parts.compressed import CompressedAttention, Compressor, EntryIndexer, RopeBase
from archdb.parts.kernels import LinearKernel
from archdb.parts.mlp import DenseMLP
from archdb.parts.norms import bare_rms
from archdb.parts.positions import RelativeXLSpec
from archdb.parts.shared import Invocation, SharedAttention, SharedBlock, SharedBlocks
from archdb.parts.sparse import IndexerSpec
from archdb.schema import Architecture, AttentionVariant, LayerKind, RopeLayout

from .layout import LayerSpec, layer_spec

Reader = Any  # plan._Reader, not imported: plan imports this module


# --- DeepSeek V4's compressed attention ---------------------------------------------------


def rope_of(arch: Architecture, compressed_layer: bool) -> RopeBase:
    """A layer's rotation: the local layers' base unscaled, the compressed layers' (and
    their entries' and indexer's) compress_rope_theta with the card's rope_scaling."""
    comp, pos = arch.attention.compressed, arch.position
    if compressed_layer:
        return RopeBase(comp.rope_dim, comp.compress_rope_theta, pos.rope_scaling)
    return RopeBase(comp.rope_dim, pos.rope_theta or 10_000.0)


def compressed_attention(reader: Any, spec: LayerSpec, causal: bool) -> CompressedAttention:
    """The mixer of one layer of a variant-compressed card (``reader``: plan._Reader; V4 is
    decoder-only, so there is no cross-attention and ``spec`` is always a layer)."""
    arch = reader.a
    att, comp = arch.attention, arch.attention.compressed
    compressed = spec.kind.compressed
    rope = rope_of(arch, compressed)
    eps = arch.norm.eps
    compressor = indexer = None
    if compressed:
        sparse_layer = spec.kind is LayerKind.COMPRESSED_SPARSE
        ratio = comp.sparse_ratio if sparse_layer else comp.heavy_ratio
        compressor = Compressor(reader.d, att.head_dim, ratio, sparse_layer, reader.norm, rope)
        if sparse_layer:
            sp = att.sparse
            own = Compressor(reader.d, sp.indexer_head_dim, ratio, True, reader.norm, rope)
            indexer = EntryIndexer(
                reader.d, comp.q_lora_rank, sp.indexer_heads, sp.indexer_head_dim, sp.top_k, own
            )
    return CompressedAttention(
        d_model=reader.d,
        n_heads=att.n_heads,
        head_dim=att.head_dim,
        q_rank=comp.q_lora_rank,
        groups=comp.output_groups,
        rank=comp.output_rank,
        window=att.sliding_window,
        norm=reader.norm,
        eps=eps,
        rope=rope,
        compressor=compressor,
        indexer=indexer,
    )


# --- shared blocks (Zamba2) ----------------------------------------------------------------


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


# --- attention: head, latent, compressed ----------------------------------------------------


def _head_attention(r: Reader, spec: LayerSpec | None, causal: bool) -> HeadAttention:
    a, dims, att = r.a, r.dims_of(spec), r.a.attention
    takes_bias = r.takes_bias(spec)
    relative_xl = None
    if takes_bias and r.scheme.layer_bias:
        relative_xl = RelativeXLSpec(r.d, dims.n_heads, dims.qk_dim, a.context_length)
    linear = att.variant is AttentionVariant.LINEAR
    return HeadAttention(
        d_model=r.d,
        n_heads=dims.n_heads,
        n_kv_heads=dims.n_kv_heads,
        head_dim=dims.qk_dim,
        qkv_bias=bool(a.bias.qkv),
        out_bias=bool(a.bias.attn_out),
        kernel=LinearKernel() if linear else r.kernel(spec, causal),
        rotary=r.rotary(spec),
        qk_norm=r.qk_norm(spec),
        takes_bias=takes_bias,
        relative_xl=relative_xl,
        cached=causal or spec is None,
        output_gate=att.output_gate,
        values_from_keys=dims.values_from_keys,
        value_norm=bare_rms(a.norm.eps) if att.value_norm else None,
        kv_sharing=_kv_sharing(r, spec),
        kv_kind=spec.kind.value if spec is not None else "",
        qk_norm_after_rope=bool(att.qk_norm_after_rope),
        qkv_clip=att.qkv_clip,
        v_dim=dims.v_dim if dims.v_dim != dims.qk_dim else None,
        value_scale=_factor_or_none(att.value_multiplier),
        sub_norm=r.norm if a.norm.sublayer_norms else None,
        query_rank=att.query_rank,
        query_norm=r.norm if att.query_rank is not None else None,
    )


def _factor_or_none(value: float | None) -> float | None:
    """A recorded factor other than 1 (1 and null change nothing)."""
    return None if value is None or value == 1.0 else value


def _kv_sharing(r: Reader, spec: LayerSpec | None) -> str | None:
    """A layer's part in cross-layer KV sharing: none without it (or in cross-attention);
    else the last kv_shared_layers reuse, the others store theirs."""
    if spec is None or not r.a.attention.kv_shared_layers:
        return None
    return "reuse" if spec.reuses_kv else "store"


def _indexer(r: Reader, spec: LayerSpec | None, causal: bool) -> IndexerSpec | None:
    """DSA's indexer on causal self-attention layers of a card with attention.sparse."""
    sparse, lat = r.a.attention.sparse, r.a.attention.latent
    if sparse is None or spec is None or not causal:
        return None
    rotary = r.rotary(spec)
    if rotary is not None:  # the indexer's own pairing of rotated dims
        interleaved = sparse.indexer_rope_layout is RopeLayout.INTERLEAVED
        rotary = replace(rotary, interleaved=interleaved)
    return IndexerSpec(
        r.d, lat.q_lora_rank, sparse.indexer_heads, sparse.indexer_head_dim, sparse.top_k, rotary
    )


def _latent_attention(r: Reader, spec: LayerSpec | None, causal: bool) -> LatentAttention:
    a, lat = r.a, r.a.attention.latent
    indexer = _indexer(r, spec, causal)
    kernel = r.kernel(spec, causal)
    if indexer is not None:
        kernel = replace(kernel, top_k=indexer.top_k)
    return LatentAttention(
        d_model=r.d,
        n_heads=r.dims.n_heads,
        kv_rank=lat.kv_lora_rank,
        q_rank=lat.q_lora_rank,
        rope_dim=lat.qk_rope_head_dim,
        nope_dim=lat.qk_nope_head_dim,
        v_dim=lat.v_head_dim,
        norm=r.norm if lat.norm_eps is None else replace(r.norm, eps=lat.norm_eps),
        qkv_bias=bool(a.bias.qkv),
        out_bias=bool(a.bias.attn_out),
        kernel=kernel,
        rotary=r.rotary(spec),
        takes_bias=r.takes_bias(spec),
        cached=causal or spec is None,
        indexer=indexer,
        lora_scales=_lora_scales(r.d, lat) if lat.lora_scaled else None,
    )


def _lora_scales(d_model: int, lat) -> tuple[float, float]:
    """LongCat-Flash's factors: sqrt(d / q_lora_rank) on q, sqrt(d / kv_lora_rank) on the
    normed KV latent (a full-rank query is not scaled)."""
    q = (d_model / lat.q_lora_rank) ** 0.5 if lat.q_lora_rank else 1.0
    return q, (d_model / lat.kv_lora_rank) ** 0.5


# attention variant -> the spec of a layer's mixer
MIXERS: dict[AttentionVariant, Callable[[Reader, LayerSpec | None, bool], Mixer]] = {
    AttentionVariant.SOFTMAX: _head_attention,
    AttentionVariant.LINEAR: _head_attention,
    AttentionVariant.LATENT: _latent_attention,
    AttentionVariant.COMPRESSED: compressed_attention,
}
