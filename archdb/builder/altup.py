"""Gemma 3n's block: AltUp's streams (Baykal et al. 2023, https://arxiv.org/abs/2301.13310)
around a sandwich-norm layer with a LAuReL branch beside its attention.

The stack's stream is a tensor (n_inputs, B, T, d): ``AltUpStreams`` makes it from the
embedding and reduces it back before the final norm; each ``Gemma3nBlock`` predicts the
streams, runs attention and the MLP on the active prediction, corrects every stream and
adds the per-layer embeddings' gate to the streams after the first. The order of
operations follows transformers' Gemma3nTextDecoderLayer, so the logits match it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from operator import attrgetter

import torch
from torch import nn

from archdb.parts import blocks as blocks_part
from archdb.parts import norms as norms_part
from archdb.plan import plan as spec

from .registry import builds

PerLayerGate, Residual, Stream = attrgetter("PerLayerGate", "Residual", "Stream")(
    blocks_part.modules()
)
norm_module = norms_part.modules().norm_module


class AltUpLayer(nn.Module):
    """A layer's router, prediction and correction coefficients, and output scale."""

    def __init__(
        self, d_model: int, n: int, active: int, correct_scale: bool, make_norm: Callable
    ) -> None:
        super().__init__()
        self.d_model, self.n, self.active, self.correct_scale = d_model, n, active, correct_scale
        self.correct_output_scale = nn.Parameter(torch.zeros(d_model))
        self.correction_coefs = nn.Linear(n, n, bias=False)
        self.prediction_coefs = nn.Linear(n, n * n, bias=False)
        self.modality_router = nn.Linear(d_model, n, bias=False)
        self.router_norm = make_norm(d_model)

    def modalities(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) -> (B, T, n): the router's coefficients, tanh(linear(norm(x) / d))."""
        return torch.tanh(self.modality_router(self.router_norm(x) * self.d_model**-1.0))

    def predict(self, streams: torch.Tensor) -> torch.Tensor:
        """Each stream plus a mix of all streams: (n, B, T, d) -> (n, B, T, d)."""
        m = self.modalities(streams[self.active])
        coefs = self.prediction_coefs(m).reshape(*m.shape[:-1], self.n, self.n).permute(0, 1, 3, 2)
        mixed = torch.matmul(streams.permute(1, 2, 3, 0), coefs).permute(3, 0, 1, 2)
        return mixed + streams

    def correct(self, predictions: torch.Tensor, activated: torch.Tensor) -> torch.Tensor:
        """Every stream moved by the block's innovation times (1 + its coefficient)."""
        m = self.modalities(activated)
        innovation = activated - predictions[self.active]
        coefs = (self.correction_coefs(m) + 1.0).permute(2, 0, 1).unsqueeze(-1)  # (n, B, T, 1)
        return innovation.unsqueeze(0) * coefs + predictions

    def extra_repr(self) -> str:
        return f"streams={self.n}, active={self.active}, correct_scale={self.correct_scale}"


class Laurel(nn.Module):
    """h + norm(right(left(h))): a low-rank residual branch (LAuReL)."""

    def __init__(self, d_model: int, rank: int, norm: nn.Module) -> None:
        super().__init__()
        self.left = nn.Linear(d_model, rank, bias=False)
        self.right = nn.Linear(rank, d_model, bias=False)
        self.norm = norm

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.norm(self.right(self.left(h)))


def _rescaled(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """x with its RMS per token set to ``target`` (the RMS floored at sqrt(1e-5))."""
    magnitude = torch.sqrt(torch.mean(x**2, dim=-1, keepdim=True).clamp(min=1e-5))
    return x * target / magnitude


class AltUpStreams(nn.Module):
    """The streams from the embedding, and back to one stream after the last layer."""

    def __init__(self, d_model: int, n: int) -> None:
        super().__init__()
        self.projections = nn.ModuleList(
            nn.Linear(d_model, d_model, bias=False) for _ in range(n - 1)
        )
        self.unembed = nn.ModuleList(nn.Linear(d_model, d_model, bias=False) for _ in range(n - 1))

    def expand(self, x: torch.Tensor) -> torch.Tensor:
        target = torch.mean(x**2, dim=-1, keepdim=True) ** 0.5
        return torch.stack([x, *(_rescaled(p(x), target) for p in self.projections)])

    def collapse(self, streams: torch.Tensor) -> torch.Tensor:
        first = streams[0]
        target = torch.mean(first**2, dim=-1, keepdim=True) ** 0.5
        back = [_rescaled(p(streams[i + 1]), target) for i, p in enumerate(self.unembed)]
        return torch.mean(torch.stack([first, *back]), dim=0)


class Gemma3nBlock(nn.Module):
    """AltUp predict; attention and LAuReL on the active prediction, averaged by 1/sqrt(2);
    the MLP; AltUp correct; the per-layer gate added to the streams after the first."""

    def __init__(
        self,
        altup: AltUpLayer,
        laurel: Laurel,
        attn: Residual,
        mlp: Residual,
        per_layer: PerLayerGate,
    ) -> None:
        super().__init__()
        self.altup, self.laurel, self.attn, self.mlp = altup, laurel, attn, mlp
        self.per_layer = per_layer

    def forward(
        self,
        x: torch.Tensor,
        dual: torch.Tensor | None,
        bias: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
        per_layer: torch.Tensor | None = None,
    ) -> Stream:
        assert per_layer is not None
        alt = self.altup
        predictions = alt.predict(x)
        active = predictions[alt.active]
        normed = self.attn.before(active)
        laurel = self.laurel(normed)
        attn = active + self.attn.branch(self.attn.sublayer(normed, bias))
        h, _ = self.mlp((attn + laurel) / math.sqrt(2), None)
        corrected = alt.correct(predictions, h)
        first = corrected[alt.active]
        if alt.correct_scale:
            first = first * alt.correct_output_scale
        gated = self.per_layer.branch(first, per_layer)
        return torch.cat([corrected[:1], corrected[1:] + gated]), dual


# --- from specs ----------------------------------------------------------------------------


@builds(spec.AltUpLayer)
def altup_layer(s: spec.AltUpLayer, ctx: object = None) -> AltUpLayer:
    make_norm = functools.partial(norm_module, s.norm)
    return AltUpLayer(s.d_model, s.n, s.active, s.correct_scale, make_norm)


@builds(spec.Laurel)
def laurel(s: spec.Laurel, ctx: object = None) -> Laurel:
    return Laurel(s.d_model, s.rank, norm_module(s.norm, s.d_model))


@builds(spec.AltUpStreams)
def altup_streams(s: spec.AltUpStreams, ctx: object = None) -> AltUpStreams:
    return AltUpStreams(s.d_model, s.n)
