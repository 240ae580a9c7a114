"""Position schemes (one registry): where each acts and what it costs.

A scheme can add a table to the token embeddings (sinusoidal, learned), rotate query and
key dims (RoPE), put a bias on attention scores shared by a stack's layers (ALiBi, T5)
or computed in each layer (Transformer-XL). NoPE layers (``global-nope``) opt out of all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.schema import PositionType, RopeScaling
from archdb.tally import Tally

T5_MAX_DISTANCE = 128  # T5's relative-bias max_distance (not on cards; the T5 default)


def yarn_mscale(factor: float, weight: float = 1.0) -> float:
    """YaRN's temperature term 0.1 * weight * ln(factor) + 1 (Peng et al. 2023, Eq. 21);
    1 where nothing is stretched (factor <= 1)."""
    return 0.1 * weight * math.log(factor) + 1.0 if factor > 1 else 1.0


def yarn_rotary_factor(scaling: RopeScaling) -> float:
    """The factor on YaRN's cos/sin tables: mscale / mscale_all_dim's terms where the card
    records DeepSeek's pair (the whole softmax takes the rest), else 0.1 ln f + 1."""
    if scaling.mscale_all_dim is not None and scaling.mscale is not None:
        return yarn_mscale(scaling.factor, scaling.mscale) / yarn_mscale(
            scaling.factor, scaling.mscale_all_dim
        )
    return yarn_mscale(scaling.factor)


def yarn_softmax_factor(scaling: RopeScaling | None) -> float:
    """The factor on every query-key product's softmax scale: DeepSeek's mscale_all_dim
    term squared (transformers' yarn_apply_mscale), 1 for every other scaling."""
    if scaling is None or scaling.mscale_all_dim is None:
        return 1.0
    return yarn_mscale(scaling.factor, scaling.mscale_all_dim) ** 2


@dataclass(frozen=True)
class Scheme:
    """Where a position scheme acts."""

    absolute: bool = False  # a table added to the embeddings
    rotary: bool = False  # rotates q/k dims
    stack_bias: bool = False  # one score bias per stack, shared by its layers
    layer_bias: bool = False  # a score bias computed in each layer (Transformer-XL)

    @property
    def score_bias(self) -> bool:
        return self.stack_bias or self.layer_bias


SCHEMES: dict[PositionType, Scheme] = {
    PositionType.SINUSOIDAL: Scheme(absolute=True),
    PositionType.LEARNED: Scheme(absolute=True),
    PositionType.ROPE: Scheme(rotary=True),
    PositionType.ALIBI: Scheme(stack_bias=True),
    PositionType.RELATIVE_BIAS: Scheme(stack_bias=True),
    PositionType.RELATIVE_XL: Scheme(layer_bias=True),
    PositionType.NONE: Scheme(),
}


@dataclass(frozen=True)
class AbsolutePositions:
    """A table added to the token embeddings: fixed sinusoids or learned rows."""

    type: PositionType
    rows: int
    d_model: int
    offset: int = 0  # rows before the first token's (RoBERTa: 2)

    def params(self) -> int:
        return self.rows * self.d_model if self.type is PositionType.LEARNED else 0

    def embedding_params(self) -> int:
        return self.params()

    def flops(self, tally: Tally) -> None:
        tally.elementwise(self.d_model, C.EMBEDDING)


@dataclass(frozen=True)
class StackBias:
    """A score bias computed once per stack: ALiBi's slopes or T5's bucket table."""

    type: PositionType
    n_heads: int
    context: int
    causal: bool
    buckets: int

    def params(self) -> int:
        return self.buckets * self.n_heads if self.type is PositionType.RELATIVE_BIAS else 0

    def embedding_params(self) -> int:
        return self.params()


@dataclass(frozen=True)
class RotarySpec:
    """RoPE on the first ``dims`` dims of each query and key head."""

    dims: int
    theta: float
    context: int
    scaling: RopeScaling | None = None  # frequencies stretched for long context (tables only)
    interleaved: bool = False  # pairs dims (2i, 2i + 1), not (i, i + dims/2)
    # proportional RoPE (Gemma 4's global layers): the frequencies of the whole head, only
    # the first ``rotating_pairs`` pairs with a non-zero angle; None: standard RoPE
    rotating_pairs: int | None = None

    def flops(self, tally: Tally, heads: int) -> None:
        tally.elementwise(cv.ROPE * self.dims * heads)


@dataclass(frozen=True)
class RelativeXLSpec:
    """Transformer-XL's per-layer terms: W_R on distance embeddings, biases u and v."""

    d_model: int
    n_heads: int
    head_dim: int
    context: int

    def params(self) -> int:
        inner = self.n_heads * self.head_dim
        return self.d_model * inner + 2 * inner  # W_R, u, v

    def flops(self, tally: Tally) -> int:
        """Adds the per-layer terms; returns the FLOPs added per score."""
        h, hd = self.n_heads, self.head_dim
        tally.linear(self.d_model, h * hd, False)  # W_R on one embedding per distance
        tally.add(C.ATTENTION, tally.seq_len * h * hd)  # q + v
        tally.add(C.ATTENTION, tally.seq_len * h * cv.FLOPS_PER_MAC * hd)  # u . k, per key
        return cv.FLOPS_PER_MAC * hd + 2 * cv.ELEMENTWISE  # (q + v) . r, + u.k, * scale
