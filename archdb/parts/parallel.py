"""Mixers composed within one layer: attention with factors on its input and output, and
attention beside a recurrent mixer (Falcon-H1), as specs.

Falcon-H1 (https://arxiv.org/abs/2507.22448) runs full attention and a Mamba-2 mixer on the
same normed input in every layer and adds both outputs to the residual stream at once:
``x + m_attn_out * attn(m_attn_in * n(x)) + mamba(n(x))``. The pair is one sublayer of the
block, so norms, residual adds and the MLP stay the block's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from archdb.tally import Tally


@dataclass(frozen=True)
class ScaledMixer:
    """m_out * f(m_in * x): a mixer with factors on its input and output (muP, Falcon-H1)."""

    d_model: int
    inner: Any  # an attention spec (archdb.parts.attention.Mixer)
    input_multiplier: float | None
    output_multiplier: float | None

    def params(self) -> int:
        return self.inner.params()

    def flops(self, tally: Tally) -> None:
        if self.input_multiplier is not None:
            tally.elementwise(self.d_model)
        self.inner.flops(tally)
        if self.output_multiplier is not None:
            tally.elementwise(self.d_model)

    def cache_entries(self, context: int) -> int:
        return self.inner.cache_entries(context)

    def module(self, ctx: Any = None) -> Any:
        return modules().scaled_mixer(self, ctx)


@dataclass(frozen=True)
class ParallelMixers:
    """attention(x) + recurrent(x): two token mixers on one input, outputs summed."""

    d_model: int
    attention: Any  # an attention spec, possibly a ScaledMixer
    recurrent: Any  # a recurrent spec (archdb.plan.recurrent.RecurrentMixer)

    def params(self) -> int:
        return self.attention.params() + self.recurrent.params()

    def flops(self, tally: Tally) -> None:
        self.attention.flops(tally)
        self.recurrent.flops(tally)
        tally.elementwise(self.d_model)  # the sum of the two outputs

    def cache_entries(self, context: int) -> int:
        """The attention's K/V for the context plus the recurrent state (a constant)."""
        return self.attention.cache_entries(context) + self.recurrent.cache_entries(context)

    def module(self, ctx: Any = None) -> Any:
        return modules().parallel_mixers(self, ctx)


def scaled(
    d_model: int, mixer: Any, input_multiplier: float | None, output_multiplier: float | None
) -> Any:
    """The mixer itself when it has no factors, else wrapped with them."""
    if input_multiplier is None and output_multiplier is None:
        return mixer
    return ScaledMixer(d_model, mixer, input_multiplier, output_multiplier)


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    from torch import nn

    # this module, for the specs: the torch classes below take the same names
    from archdb.parts import parallel as spec

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

    def scaled_mixer(s: spec.ScaledMixer, ctx) -> ScaledMixer:
        return ScaledMixer(s.inner.module(ctx), s.input_multiplier, s.output_multiplier)

    def parallel_mixers(s: spec.ParallelMixers, ctx) -> ParallelMixers:
        return ParallelMixers(s.attention.module(ctx), s.recurrent.module(ctx))

    return SimpleNamespace(
        ScaledMixer=ScaledMixer,
        ParallelMixers=ParallelMixers,
        scaled_mixer=scaled_mixer,
        parallel_mixers=parallel_mixers,
    )
