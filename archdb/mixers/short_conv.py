"""LFM2's gated short convolution (Liquid AI; transformers' Lfm2ShortConv) as a
layer-pattern mixer (``short-conv``), declared whole: sizes, plan spec and torch module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pydantic import Field, StrictBool

from archdb.field_types import Strict, Width
from archdb.tally import Tally

from ._common import depthwise_conv_flops, linear_params
from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.short_conv) ------------------------------------------------


class ShortConv(Strict):
    """LFM2's gated short convolution, laid out as transformers' Lfm2ShortConv:
    in_proj (d_model -> 3 d_model: B, C, x); B * x; a depthwise causal conv over time;
    C * conv; out_proj (d_model -> d_model). Its width is d_model."""

    conv_kernel: Width = Field(
        description="Depthwise causal conv width in tokens (conv_L_cache); the state kept "
        "between tokens is its last conv_kernel - 1 inputs."
    )
    bias: StrictBool = Field(
        description="Bias on in_proj, the conv and out_proj alike (conv_bias; one flag)."
    )
    mlp: StrictBool = Field(
        description="Whether a short-conv layer also has the card's MLP (LFM2: true)."
    )


# --- plan spec -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ShortConvMixer:
    """in_proj -> (B, C, x); B * x; depthwise causal conv over time; C * conv; out_proj
    (transformers' Lfm2ShortConv). No non-linearity: the gates are plain products."""

    d_model: int
    conv_kernel: int
    bias: bool

    def params(self) -> int:
        d = self.d_model
        n = linear_params(d, 3 * d, self.bias)
        n += d * self.conv_kernel + (d if self.bias else 0)
        return n + linear_params(d, d, self.bias)

    def flops(self, tally: Tally) -> None:
        d = self.d_model
        tally.linear(d, 3 * d, self.bias)
        tally.elementwise(d)  # B * x
        # the conv, without the SiLU Mamba-2's has
        depthwise_conv_flops(tally, d, self.conv_kernel, self.bias)
        tally.elementwise(d)  # C * conv
        tally.linear(d, d, self.bias)

    def cache_entries(self, context: int) -> int:
        """The conv's last conv_kernel - 1 inputs (B * x): a constant, whatever the context."""
        return self.d_model * (self.conv_kernel - 1)

    def module(self, ctx):
        return short_conv_module()(self.d_model, self.conv_kernel, self.bias)


def _plan(sizes: ShortConv, reader) -> ShortConvMixer:
    return ShortConvMixer(reader.d, sizes.conv_kernel, sizes.bias)


def _toy(sizes: ShortConv, arch, frame: ToyFrame) -> dict:
    """The toy keeps the kernel width; the conv's width is the toy's d_model."""
    return {}


# --- torch module --------------------------------------------------------------------------


@functools.cache
def short_conv_module():
    """The torch module class (torch imported here, on first build)."""
    import torch
    from torch import nn

    from ._recurrent import CausalDepthwiseConv

    class ShortConvMixer(nn.Module):
        """LFM2's gated short convolution (Liquid AI; transformers' Lfm2ShortConv):
        B, C, x = in_proj(h); y = out_proj(C * conv(B * x)), the conv depthwise and causal."""

        flop_class = "elementwise"

        def __init__(self, d_model: int, conv_kernel: int, bias: bool) -> None:
            super().__init__()
            self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
            self.conv = CausalDepthwiseConv(d_model, conv_kernel, bias)
            self.out_proj = nn.Linear(d_model, d_model, bias=bias)

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            b_gate, c_gate, values = self.in_proj(x).chunk(3, dim=-1)
            return self.out_proj(c_gate * self.conv(b_gate * values))

    return ShortConvMixer


PLUGIN = MixerPlugin(
    kind="short-conv",
    after="gated-deltanet",
    sizes=ShortConv,
    description="Short-convolution sizes; required for, and only for, short-conv layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda sizes, d: 3 * d,  # in_proj to B, C, x
)
