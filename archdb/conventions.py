"""Counting conventions shared by the analytic formula and the fvcore measurement.

Pure Python: no torch. Both sides import these numbers, so a FLOP means the same thing
in ``archdb.measure.analytic`` (formulas over a card) and in ``archdb.measure.flops``
(handles over a traced toy).

FLOPs are floating-point operations, **2 per multiply-add**: a matmul of (m, k) by (k, n)
costs 2*m*k*n. fvcore calls multiply-adds "flops"; we never do. Counts are for one forward
pass, per token, at a stated sequence length (batch size 1).

Elementwise work is counted by convention, not measured in cycles: every elementwise
function (add, multiply, divide, exp, tanh, GELU, SiLU, ReLU, ...) costs one FLOP per
output element, a reduction one FLOP per input element, and the fused kernels below cost
what their decomposition would. Data movement (views, concatenation, gathers, masking,
top-k selection, embedding lookups) costs nothing.
"""

from __future__ import annotations

from enum import StrEnum

FLOPS_PER_MAC = 2
ELEMENTWISE = 1  # per output element: add, mul, div, neg, exp, tanh, GELU, SiLU, ReLU, ...
REDUCTION = 1  # per input element: sum, cumsum
SOFTMAX = 5  # per element: max, subtract, exp, sum, divide
LAYERNORM = 5  # per element: mean, subtract, square, mean, multiply by rsqrt
RMSNORM = 3  # per element: square, mean, multiply by rsqrt
AFFINE = 1  # per element for a norm's scale, and again for its bias
SOFTCAP = 3  # per element: c * tanh(x / c)
ROPE = 3  # per rotated element: x * cos + swap(x) * sin
LINEAR_FEATURE_MAP = 2  # per element: elu(x) + 1 (linear attention)
STD = 3  # per input element: subtract the mean, square, sum (a population std)

DEFAULT_KV_DTYPE_BYTES = 2  # bf16/fp16 cache entries
DEFAULT_SEQ_LEN = 2048  # full-size figures use min(this, the card's context_length)
DEFAULT_KV_CONTEXT = 8192  # KV-cache figures: one stated sequence length for every model


class FlopClass(StrEnum):
    """Operator classes of the per-class breakdown."""

    LINEAR = "linear"  # weight matmuls: projections, MLPs, experts, router, output head
    ATTENTION = "attention"  # inside the attention kernel: QK^T, AV, score scale/bias/cap
    SOFTMAX = "softmax"  # attention and router softmax
    NORM = "norm"  # every norm, QK norms included
    ELEMENTWISE = "elementwise"  # activations, gating, residual adds, RoPE, output soft-cap
    EMBEDDING = "embedding"  # lookups (free) and adding absolute position embeddings


FLOP_CONVENTION = (
    "FLOPs = 2 x multiply-adds, one forward pass, per token at the stated sequence length "
    "(batch 1); elementwise functions 1 FLOP per element, reductions 1 per input element "
    f"(a standard deviation {STD}), "
    f"softmax {SOFTMAX}, LayerNorm {LAYERNORM} (+{AFFINE} per affine term), RMSNorm "
    f"{RMSNORM} (+{AFFINE}), soft-cap {SOFTCAP}, RoPE {ROPE} per rotated element; "
    "gathers, masking and top-k are free; recurrent mixers (Mamba, Mamba-2, Gated DeltaNet, "
    "KDA, LFM2's short conv, Griffin's RG-LRU, MiniMax's lightning attention, RWKV's time "
    "mixing) in their "
    "recurrent form, one state update and read-out per token "
    "(a depthwise conv: 2 per tap and channel)"
)
ATTENTION_CONVENTION = (
    "dense: what the toy's kernels compute (every query scores all keys of a global "
    "layer, its window of a local layer, its chunk of a chunked layer, masked entries "
    "included); causal: only the unmasked scores, the useful work of a causal decoder"
)
ENCODER_DECODER_CONVENTION = (
    "encoder-decoder: per target token, with a source of the same length; the encoder's "
    "work is included"
)
PARAMS_CONVENTION = (
    "total: every parameter once (tied embeddings counted once); non-embedding: without "
    "the token embedding, an untied output head and its bias, and position tables; "
    "active: per token, routed experts counted only for the top-k; multi-token-prediction "
    "modules (architecture.mtp) are not counted (params_mtp gives them)"
)
KV_CONVENTION = (
    "K and V entries the decoder caches for one sequence of the stated length (MLA: the "
    "latent plus the shared RoPE key; encoder-decoder: self- plus cross-attention over a "
    "source as long), local and chunked layers capped by their window, plus each "
    "recurrent mixer's fixed state (Mamba, Mamba-2, Gated DeltaNet, KDA: state and conv inputs; "
    "short conv: its last kernel - 1 inputs; RG-LRU: one entry per channel and conv inputs; "
    "lightning: a head_dim x head_dim state per head; once, whatever the length), times the "
    "bytes "
    "per element; per token = that total / the length"
)

PASSES = ("forward", "forward+backward")  # the passes a runtime profile times, in order
