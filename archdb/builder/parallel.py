"""Composed mixers as torch modules: factors around a mixer, and two mixers side by side
(Falcon-H1: attention beside Mamba-2). See ``archdb.plan.parallel``."""

from __future__ import annotations

import torch
from torch import nn

from archdb.plan import parallel as spec

from .registry import builds, module_of


class ScaledMixer(nn.Module):
    """m_out * f(m_in * x)."""

    def __init__(
        self, inner: nn.Module, input_multiplier: float | None, output_multiplier: float | None
    ) -> None:
        super().__init__()
        self.inner = inner
        self.input_multiplier, self.output_multiplier = input_multiplier, output_multiplier

    def forward(self, x: torch.Tensor, *args) -> torch.Tensor:
        if self.input_multiplier is not None:
            x = x * self.input_multiplier
        y = self.inner(x, *args)
        return y if self.output_multiplier is None else y * self.output_multiplier

    def extra_repr(self) -> str:
        return f"input={self.input_multiplier}, output={self.output_multiplier}"


class ParallelMixers(nn.Module):
    """attention(x) + recurrent(x) on the same normed input."""

    def __init__(self, attention: nn.Module, recurrent: nn.Module) -> None:
        super().__init__()
        self.attention, self.recurrent = attention, recurrent

    def forward(self, x: torch.Tensor, *args) -> torch.Tensor:
        return self.attention(x, *args) + self.recurrent(x)


@builds(spec.ScaledMixer)
def scaled_mixer(s: spec.ScaledMixer, ctx) -> ScaledMixer:
    return ScaledMixer(module_of(s.inner, ctx), s.input_multiplier, s.output_multiplier)


@builds(spec.ParallelMixers)
def parallel_mixers(s: spec.ParallelMixers, ctx) -> ParallelMixers:
    return ParallelMixers(module_of(s.attention, ctx), module_of(s.recurrent, ctx))
