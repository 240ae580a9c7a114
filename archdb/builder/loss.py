"""The language-modelling loss, with the output z-loss where a card trains with one.

z-loss (PaLM, https://arxiv.org/abs/2204.02311, Section 5) adds alpha * log(Z)^2, Z the
softmax normalizer of the output logits, to keep log Z near 0 and the logits from
drifting; a card's ``training.z_loss`` is alpha (PaLM 1e-4; 0 for none).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Loss:
    total: torch.Tensor  # what to backpropagate
    cross_entropy: torch.Tensor
    z_loss: torch.Tensor  # already multiplied by its coefficient


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, z_loss: float = 0.0) -> Loss:
    """Mean next-token cross-entropy plus ``z_loss * mean(log(Z)^2)``.

    logits: (B, T, vocab); targets: (B, T) token ids, already shifted to the next token.
    """
    flat = logits.reshape(-1, logits.shape[-1]).float()
    ce = F.cross_entropy(flat, targets.reshape(-1))
    log_z = torch.logsumexp(flat, dim=-1)
    z = z_loss * log_z.square().mean()
    return Loss(total=ce + z, cross_entropy=ce, z_loss=z)
