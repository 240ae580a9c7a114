"""DeepSeek Sparse Attention's lightning indexer (DSA: DeepSeek-V3.2, GLM-5).

The indexer scores every previous token for each query and keeps the ``top_k`` best; the
attention kernel then masks every other key. As transformers' eager ``DeepseekV32Indexer``:
queries from the MLA query latent (``wq_b``), one LayerNorm-ed key per token (``wk``,
``k_norm``), RoPE on the first rotary dims, and a per-head weight (``weights_proj``):
score(t, s) = sum_h w_h(t) / sqrt(heads) * relu(q_h(t) . k(s) / sqrt(head_dim)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archdb.plan.sparse import INDEXER_KEY_NORM, IndexerSpec

from .kernels import future_mask
from .norms import norm_module
from .positions import Rotary
from .registry import builds, module_of


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


@builds(IndexerSpec)
def lightning_indexer(s: IndexerSpec, ctx) -> LightningIndexer:
    return LightningIndexer(
        s.d_model,
        s.q_rank,
        s.heads,
        s.head_dim,
        s.top_k,
        norm_module(INDEXER_KEY_NORM, s.head_dim),
        module_of(s.rotary, ctx) if s.rotary else None,
    )
