"""DeepSeek Sparse Attention's lightning indexer (DSA: DeepSeek-V3.2, GLM-5).

Per layer, laid out as transformers' ``DeepseekV32Indexer``: ``wq_b`` reads the MLA query
latent into ``heads`` query heads of ``head_dim``; ``wk`` gives one key per token, normalized
by a LayerNorm with scale and bias (eps 1e-6); the first ``rope_dim`` dims of queries and key
are rotated; ``weights_proj`` gives one weight per head from the hidden state. The score of
key s for query t is sum_h w_h(t) * relu(q_h(t) . k(s) / sqrt(head_dim)) / sqrt(heads), and
the attention that follows reads the ``top_k`` best-scored previous keys only.

FLOP convention: the indexer scores every previous token (causal count; the dense count is
what the masked implementation computes, every key); the attention kernel counts top_k keys
per query (every previous key while there are fewer) as useful and the full masked score
matrix as dense. Cache: the indexer's key (``head_dim`` per token) beside MLA's latent.
"""

from __future__ import annotations

from dataclasses import dataclass

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.schema import NormType
from archdb.tally import Tally, linear_params

from .norms import NormSpec
from .positions import RotarySpec

INDEXER_KEY_NORM = NormSpec(NormType.LAYERNORM, scale=True, bias=True, eps=1e-6)


@dataclass(frozen=True)
class IndexerSpec:
    """The lightning indexer of one layer: its projections, scores and key cache."""

    d_model: int
    q_rank: int  # width of the MLA query latent the indexer's queries read
    heads: int
    head_dim: int
    top_k: int
    rotary: RotarySpec | None

    def params(self) -> int:
        n = linear_params(self.q_rank, self.heads * self.head_dim, False)  # wq_b
        n += linear_params(self.d_model, self.head_dim, False)  # wk
        n += INDEXER_KEY_NORM.params(self.head_dim)  # k_norm
        return n + linear_params(self.d_model, self.heads, False)  # weights_proj

    def flops(self, tally: Tally, dense_keys: int, causal_keys: int) -> None:
        h, hd = self.heads, self.head_dim
        tally.linear(self.q_rank, h * hd, False)
        tally.linear(self.d_model, hd, False)
        INDEXER_KEY_NORM.flops(tally, hd)
        if self.rotary is not None:
            self.rotary.flops(tally, h + 1)  # the query heads and the one key
        tally.linear(self.d_model, h, False)
        tally.elementwise(h)  # the weights times 1/sqrt(heads)
        # per score and head: q.k, times the scale, relu, and the weighted sum over heads
        per_score = h * (cv.FLOPS_PER_MAC * hd + 2 * cv.ELEMENTWISE + cv.FLOPS_PER_MAC)
        tally.add(C.ATTENTION, dense_keys * per_score, causal_keys * per_score)

    def cache_entries(self, context: int) -> int:
        return self.head_dim * context  # one indexer key per token
