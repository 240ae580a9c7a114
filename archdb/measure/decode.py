"""What decoding moves: bytes read per generated token against FLOPs per token.

Generating one token at batch 1 reads every active weight once and the whole KV cache
(or recurrent state) once, and does about 2 FLOPs per weight and a few per cached entry:
an arithmetic intensity near 1 FLOP per byte at 16-bit weights, far below what a CPU or
GPU needs to be compute-bound. Grouped-query, multi-query and latent attention shrink the
cache that dominates at long contexts; sliding windows cap it.

``decode_traffic`` is the arithmetic over a card (pure Python). ``time_decode_steps``
measures one decode step of a full-width layer on the current machine, so the trend the
arithmetic predicts (time grows with the bytes read) can be checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archdb import conventions as cv
from archdb.measure.analytic import plan_cache_size, plan_param_count
from archdb.plan import make_plan
from archdb.plan.layout import (
    BuildError,
    check_buildable,
    embedding_width,
    fill_unknowns,
    shared_reuse,
)
from archdb.plan.plan import Plan, layer_runs
from archdb.schema import Architecture, AttentionVariant, Card, Kind, LayerKind

DECODE_CONTEXT = 8192  # tokens already in the cache
DECODE_BYTES = 2  # bf16/fp16 weights and cache entries

TRAFFIC_CONVENTION = (
    f"batch 1, {DECODE_CONTEXT:,} tokens in the cache, {DECODE_BYTES} bytes per weight and "
    "per cache entry; bytes = every active weight once (MoE: the routed top-k and shared "
    "experts; the output head in full, the embedding's one row ignored) + the K/V cache "
    "(MLA: latent and RoPE key; local and chunked layers: their window; linear attention: "
    "its fixed state); FLOPs = 2 per weight use (a shared block's at each invocation) + "
    "attention over the cached keys "
    "(2·h·(d_qk + d_v) per key; MLA in its absorbed form, 2·h·(2·kv_rank + d_rope))"
)


def variant(arch: Architecture) -> str:
    """The attention variant the traffic figure groups by."""
    if arch.attention.variant is AttentionVariant.LINEAR:
        return "linear (state)"
    if any(k in (LayerKind.LOCAL, LayerKind.CHUNKED) for k in arch.attention.layer_pattern):
        return "sliding window"
    return (arch.attention_family or "unknown").upper()


@dataclass(frozen=True)
class DecodeTraffic:
    card_id: str
    year: int
    variant: str
    context: int
    weight_bytes: float
    cache_bytes: float
    weight_flops: float
    attention_flops: float

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.cache_bytes

    @property
    def flops(self) -> float:
        return self.weight_flops + self.attention_flops

    @property
    def intensity(self) -> float:
        """FLOPs per byte read."""
        return self.flops / self.bytes

    @property
    def cache_share(self) -> float:
        return self.cache_bytes / self.bytes


def decode_traffic(
    card: Card, context: int = DECODE_CONTEXT, dtype_bytes: int = DECODE_BYTES
) -> DecodeTraffic | None:
    """Bytes read and FLOPs for one generated token at ``context``; None for
    encoder-decoders (their encoder does not run per token) and cards without sizes."""
    try:
        arch, _ = fill_unknowns(card.architecture)
        check_buildable(arch)
    except BuildError:
        return None
    if arch.kind is not Kind.DECODER_ONLY:
        return None
    plan = make_plan(arch)  # read once: weights, cache and attention all fold over it
    params = plan_param_count(plan)
    head = arch.vocab_size * embedding_width(arch)
    weights = params.active - params.embedding + head
    return DecodeTraffic(
        card_id=card.id,
        year=card.release_date.year,
        variant=variant(arch),
        context=context,
        weight_bytes=weights * dtype_bytes,
        cache_bytes=plan_cache_bytes(plan, context, dtype_bytes),
        weight_flops=cv.FLOPS_PER_MAC * (weights + _reused_weights(arch, plan)),
        attention_flops=plan_attention_decode_flops(plan, context),
    )


def _reused_weights(arch: Architecture, plan: Plan) -> int:
    """Weights a token multiplies more than once: a shared block's, per extra invocation
    (Zamba2; read once, used at each invocation)."""
    reuse = shared_reuse(arch)
    if not reuse:
        return 0
    shared = plan.decoder.shared
    assert shared is not None
    return reuse * shared.block.params()


def cache_bytes(arch: Architecture, context: int, dtype_bytes: int = DECODE_BYTES) -> float:
    """The whole cache (or state) a decode step reads at ``context`` tokens."""
    return plan_cache_bytes(make_plan(arch), context, dtype_bytes)


def plan_cache_bytes(plan: Plan, context: int, dtype_bytes: int) -> float:
    """``cache_bytes`` of a plan: the KV cache and recurrent states (``plan_cache_size``),
    and linear attention's state."""
    runs = layer_runs(plan.decoder)
    states = sum(run.count * a.state_entries() for run in runs for a in run.attentions)
    return plan_cache_size(plan, context, dtype_bytes).total + states * dtype_bytes


def attention_decode_flops(arch: Architecture, context: int) -> float:
    """FLOPs of one new query over its cached keys, summed over the attention layers."""
    return plan_attention_decode_flops(make_plan(arch), context)


def plan_attention_decode_flops(plan: Plan, context: int) -> float:
    """``attention_decode_flops`` of a plan, a fold over its layers: each attention's
    ``decode_flops`` (MLA in its absorbed form, windows capped, linear attention's state;
    recurrent mixers such as Mamba-2 score no keys), a shared block's at each invocation."""
    runs = layer_runs(plan.decoder)
    return float(sum(run.count * a.decode_flops(context) for run in runs for a in run.attentions))


# --- measured decode steps ---------------------------------------------------------------


@dataclass(frozen=True)
class DecodeTarget:
    key: str
    card_id: str
    label: str
    layer: int = 0  # which layer of the card (its kind and MLP)


DECODE_TARGETS: tuple[DecodeTarget, ...] = (
    DecodeTarget("llama-2-7b", "llama-2-7b", "Llama 2 7B (MHA)"),
    DecodeTarget("llama-3-8b", "llama-3-8b", "Llama 3 8B (GQA, 8 KV heads)"),
    DecodeTarget("falcon-7b", "falcon-7b", "Falcon 7B (MQA)"),
    DecodeTarget("gemma-2-9b", "gemma-2-9b", "Gemma 2 9B local layer (window 4096)"),
    DecodeTarget("deepseek-v2", "deepseek-v2", "DeepSeek-V2 (MLA)"),
)
DECODE_CONTEXTS = (512, 1024, 2048, 4096, 8192)
DECODE_BATCH = 8  # sequences decoded together: the cache is read per sequence, weights once
MEASURE_BYTES = 4  # float32 on the CPU


def step_bytes(arch: Architecture, layer_params: int, context: int) -> float:
    """Bytes one measured step reads: the layer's weights once, the batch's caches."""
    one_layer = arch.model_copy(update={"n_layers": 1})
    cache = cache_bytes(one_layer, context, MEASURE_BYTES)
    return layer_params * MEASURE_BYTES + DECODE_BATCH * cache


def measured_architecture(card: Card, target: DecodeTarget) -> Architecture:
    """One layer of the card at full width, with the layer kind of ``target.layer``."""
    arch, _ = fill_unknowns(card.architecture)
    pattern = arch.attention.layer_pattern
    kind = pattern[target.layer % len(pattern)]
    attention = arch.attention.model_copy(update={"layer_pattern": [kind]})
    return arch.model_copy(update={"n_layers": 1, "vocab_size": 256, "attention": attention})


def time_decode_steps(
    card: Card, target: DecodeTarget, contexts=DECODE_CONTEXTS, repeats: int = 7
) -> dict[str, Any]:
    """Median and range of one decode step's time at each context (milliseconds)."""
    import statistics
    import time

    import torch

    from archdb.builder.model import build_model
    from archdb.measure.decode_step import attach_caches, layer_weights

    arch = measured_architecture(card, target)
    torch.manual_seed(0)
    stack = build_model(arch).decoder
    params = layer_weights(stack)
    x = torch.randn(DECODE_BATCH, 1, arch.d_model)
    out: dict[str, Any] = {"target": target.key, "contexts": {}}
    with torch.no_grad():
        for context in contexts:
            attach_caches(stack, DECODE_BATCH, context)
            for _ in range(2):
                stack(x)
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                stack(x)
                times.append((time.perf_counter() - start) * 1000)
            out["contexts"][str(context)] = {
                "ms": [round(t, 4) for t in times],
                "median_ms": round(statistics.median(times), 4),
                "bytes": step_bytes(arch, params, context),
            }
    return out
