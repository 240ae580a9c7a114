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

import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.parts.norms import NormSpec
from archdb.parts.positions import RotarySpec
from archdb.schema import NormType
from archdb.tally import Tally, linear_params

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

    def module(self, ctx: Any = None) -> Any:
        return modules().lightning_indexer(self, ctx)


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from archdb.parts import kernels as kernels_part
    from archdb.parts import norms as norms_part
    from archdb.parts import positions as positions_part

    future_mask = kernels_part.modules().future_mask
    norm_module = norms_part.modules().norm_module
    Rotary = positions_part.modules().Rotary

    class LightningIndexer(nn.Module):
        """Returns which keys each query attends to: (B, 1, Tq, Tk) booleans, causal."""

        flop_class = "attention"

        def __init__(
            self,
            d_model: int,
            q_rank: int,
            heads: int,
            head_dim: int,
            top_k: int,
            key_norm: nn.Module,
            rotary: Rotary | None,
        ) -> None:
            super().__init__()
            self.heads, self.head_dim, self.top_k = heads, head_dim, top_k
            self.wq_b = nn.Linear(q_rank, heads * head_dim, bias=False)
            self.wk = nn.Linear(d_model, head_dim, bias=False)
            self.k_norm = key_norm
            self.weights_proj = nn.Linear(d_model, heads, bias=False)
            self.rotary = rotary
            self.scale = head_dim**-0.5

        def scores(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
            """Index scores (B, Tq, Tk), future keys included (the caller masks them)."""
            b, t, _ = x.shape
            q = self.wq_b(q_latent).view(b, t, self.heads, self.head_dim)
            k = self.k_norm(self.wk(x)).view(b, t, 1, self.head_dim)
            if self.rotary is not None:
                q, k = self.rotary(q, k)
            per_head = torch.matmul(q.transpose(1, 2), k.permute(0, 2, 3, 1))  # (B, H, Tq, Tk)
            per_head = F.relu(per_head * self.scale)
            weights = self.weights_proj(x) * self.heads**-0.5  # (B, Tq, H)
            return torch.matmul(weights.unsqueeze(-2), per_head.transpose(1, 2)).squeeze(-2)

        def forward(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
            t = x.shape[1]
            future = future_mask(t, x.device)
            index = self.scores(x, q_latent).masked_fill(future, float("-inf"))
            chosen = index.topk(min(self.top_k, t), dim=-1).indices
            picked = torch.ones_like(chosen, dtype=torch.bool)
            selected = torch.zeros_like(index, dtype=torch.bool).scatter(-1, chosen, picked)
            # while fewer than top_k keys precede a query, top-k also picks masked future keys
            return torch.logical_and(selected, ~future).unsqueeze(1)

        def extra_repr(self) -> str:
            return f"heads={self.heads}, head_dim={self.head_dim}, top_k={self.top_k}"

    def lightning_indexer(s: IndexerSpec, ctx) -> LightningIndexer:
        return LightningIndexer(
            s.d_model,
            s.q_rank,
            s.heads,
            s.head_dim,
            s.top_k,
            norm_module(INDEXER_KEY_NORM, s.head_dim),
            s.rotary.module(ctx) if s.rotary else None,
        )

    return SimpleNamespace(
        LightningIndexer=LightningIndexer,
        lightning_indexer=lightning_indexer,
    )
