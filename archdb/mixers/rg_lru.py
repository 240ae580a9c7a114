"""Griffin's recurrent block (De et al. 2024; transformers' RecurrentGemmaRecurrentBlock) as a
layer-pattern mixer (``rg-lru``), declared whole: sizes and their check, plan spec, toy rule
and torch module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pydantic import Field, StrictBool

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.field_types import Count, Strict, Width
from archdb.tally import Tally

from ._common import depthwise_conv_flops, linear_params
from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.rg_lru) ----------------------------------------------------


class RgLru(Strict):
    """Griffin's recurrent block (De et al. 2024, arXiv 2402.19427), laid out as
    transformers' RecurrentGemmaRecurrentBlock: y = GELU_tanh(linear_y(x)); a depthwise causal
    conv (with bias) over linear_x(x); the RG-LRU on it; linear_out(RG-LRU * y). linear_x,
    linear_y and linear_out have biases. The RG-LRU per channel: input gate i_t and
    recurrence gate r_t = sigmoid(block-diagonal linear of the conv output, with bias);
    a_t = exp(-8 r_t softplus(Lambda)); h_t = a_t h_{t-1} + sqrt(1 - a_t^2) (i_t x_t), the
    first token not scaled by sqrt(1 - a^2) (a reset at position 0)."""

    lru_width: Width = Field(
        description="Width of the recurrence (lru_width; null in transformers' config means "
        "d_model): linear_x and linear_y map d_model to it, linear_out maps it back; one "
        "recurrent state entry per channel."
    )
    n_heads: Count = Field(
        description="Blocks of the block-diagonal input and recurrence gates: each gate is "
        "n_heads matrices of (lru_width / n_heads)^2 plus a bias (transformers reuses "
        "num_attention_heads for it, so it equals attention.n_heads there); must divide "
        "lru_width."
    )
    conv_kernel: Width = Field(
        description="Depthwise causal conv width over the linear_x branch, with bias "
        "(conv1d_width); the state kept between tokens is its last conv_kernel - 1 inputs."
    )
    mlp: StrictBool = Field(
        description="Whether an rg-lru layer also has the card's MLP after the mixer "
        "(Griffin, RecurrentGemma: true)."
    )


def _check(sizes: RgLru, arch) -> None:
    if sizes.lru_width % sizes.n_heads:
        raise ValueError(
            f"mixers.rg_lru.n_heads ({sizes.n_heads}) must divide lru_width ({sizes.lru_width})"
        )


# --- plan spec -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RgLruMixer:
    """Griffin's recurrent block (transformers' RecurrentGemmaRecurrentBlock): a GELU
    branch linear_y; linear_x, a depthwise causal conv with bias, then the RG-LRU with its
    block-diagonal input and recurrence gates; the product of the two branches; linear_out.
    Every projection, the conv and the gates have biases."""

    d_model: int
    lru_width: int
    n_heads: int
    conv_kernel: int

    @property
    def block(self) -> int:
        return self.lru_width // self.n_heads

    def params(self) -> int:
        d, w = self.d_model, self.lru_width
        n = 2 * linear_params(d, w, True)  # linear_y, linear_x
        n += w * self.conv_kernel + w  # depthwise conv and its bias
        n += 2 * (w * self.block + w)  # input and recurrence gates: blocks and biases
        n += w  # Lambda, the recurrence's parameter
        return n + linear_params(w, d, True)

    def flops(self, tally: Tally) -> None:
        d, w = self.d_model, self.lru_width
        tally.linear(d, w, True)  # linear_y
        tally.elementwise(w)  # GELU
        tally.linear(d, w, True)  # linear_x
        depthwise_conv_flops(tally, w, self.conv_kernel, True)
        # the two gates: block-diagonal weight matmuls with bias, then a sigmoid each
        tally.add(C.LINEAR, tally.seq_len * 2 * (cv.FLOPS_PER_MAC * w * self.block + w))
        tally.elementwise(2 * w)
        tally.add(C.ELEMENTWISE, 2 * w)  # -8 softplus(Lambda), once per forward
        tally.elementwise(3 * w)  # log a = r * that; a = exp(log a); a^2
        tally.elementwise(w + 2 * w + w)  # i * x; sqrt(1 - a^2); times it
        tally.elementwise(2 * w)  # state update h = a h + x
        tally.elementwise(w)  # h * y
        tally.linear(w, d, True)  # linear_out

    def cache_entries(self, context: int) -> int:
        """One state entry per channel and the conv's last inputs: a constant."""
        return self.lru_width + self.lru_width * (self.conv_kernel - 1)

    def module(self, ctx):
        return rg_lru_module()(self.d_model, self.lru_width, self.n_heads, self.conv_kernel)


def _plan(sizes: RgLru, reader) -> RgLruMixer:
    return RgLruMixer(reader.d, sizes.lru_width, sizes.n_heads, sizes.conv_kernel)


# --- toy rule ------------------------------------------------------------------------------


def _toy(sizes: RgLru, arch, frame: ToyFrame) -> dict:
    """The gate blocks follow the toy's attention heads where the card's equal its
    attention heads (transformers has one count for both), else at most 4; the width keeps
    its ratio to d_model, rounded to a whole number of blocks."""
    tied = frame.toy_heads is not None and sizes.n_heads == arch.attention.n_heads
    heads = frame.toy_heads if tied else min(sizes.n_heads, frame.rule.mha_heads)
    blocks = max(1, round(sizes.lru_width * frame.toy_d_model / frame.d_model / heads))
    return {"n_heads": heads, "lru_width": blocks * heads}


# --- torch module --------------------------------------------------------------------------


@functools.cache
def rg_lru_module():
    """The torch module class (torch imported here, on first build)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from ._recurrent import CausalDepthwiseConv, linear_scan

    class BlockDiagonalLinear(nn.Module):
        """x @ W + b with W block-diagonal: n_blocks (block x block) matrices, each applied to
        its own slice of the channels (the RG-LRU's gates; weight (n_blocks, in, out) as in
        transformers). A weight matmul, so its FLOPs are counted as linear."""

        flop_class = "linear"

        def __init__(self, n_blocks: int, block: int) -> None:
            super().__init__()
            self.n_blocks, self.block = n_blocks, block
            self.weight = nn.Parameter(torch.empty(n_blocks, block, block))
            self.bias = nn.Parameter(torch.zeros(n_blocks, block))
            if self.weight.device.type != "meta":
                nn.init.normal_(self.weight, std=block**-0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, width = x.shape
            blocks = x.reshape(b * t, self.n_blocks, self.block).transpose(0, 1)  # (H, BT, blk)
            y = torch.matmul(blocks, self.weight) + self.bias[:, None, :]
            return y.transpose(0, 1).reshape(b, t, width)

    class RgLruMixer(nn.Module):
        """Griffin's recurrent block (De et al. 2024, https://arxiv.org/abs/2402.19427) as
        transformers' RecurrentGemmaRecurrentBlock: out = linear_out(RG-LRU(conv(linear_x(x)))
        * GELU_tanh(linear_y(x))). The RG-LRU per channel: a_t = exp(-8 r_t softplus(Lambda)),
        h_t = a_t h_{t-1} + sqrt(1 - a_t^2) (i_t x_t), with the input and recurrence gates
        i_t, r_t sigmoids of block-diagonal linears; the first token is not normalized."""

        flop_class = "elementwise"
        C = 8.0  # the paper's constant c in a = sigma(Lambda)^(c r)

        def __init__(self, d_model: int, lru_width: int, n_heads: int, conv_kernel: int) -> None:
            super().__init__()
            self.linear_y = nn.Linear(d_model, lru_width)
            self.linear_x = nn.Linear(d_model, lru_width)
            self.conv_1d = CausalDepthwiseConv(lru_width, conv_kernel, True)
            self.input_gate = BlockDiagonalLinear(n_heads, lru_width // n_heads)
            self.recurrent_gate = BlockDiagonalLinear(n_heads, lru_width // n_heads)
            self.recurrent_param = nn.Parameter(torch.empty(lru_width))
            self.linear_out = nn.Linear(lru_width, d_model)
            if self.recurrent_param.device.type != "meta":  # sigmoid(-Lambda) in [0.9, 0.999]
                a = torch.empty(lru_width).uniform_(0.9, 0.999)
                with torch.no_grad():
                    self.recurrent_param.copy_(torch.log(1 / a - 1))

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            y = F.gelu(self.linear_y(x), approximate="tanh")
            xs = self.conv_1d(self.linear_x(x))
            input_gate = torch.sigmoid(self.input_gate(xs))
            recurrent_gate = torch.sigmoid(self.recurrent_gate(xs))
            log_a = recurrent_gate * (-self.C * F.softplus(self.recurrent_param))
            a = torch.exp(log_a)
            multiplier = torch.sqrt(1 - a * a)
            # position 0 resets the state: its input is taken as is (transformers' reset)
            multiplier = torch.cat([torch.ones_like(multiplier[:, :1]), multiplier[:, 1:]], dim=1)
            inputs = xs * input_gate * multiplier
            return self.linear_out(linear_scan(a, inputs) * y)

    return RgLruMixer


PLUGIN = MixerPlugin(
    kind="rg-lru",
    after="kda",
    sizes=RgLru,
    description="RG-LRU sizes; required for, and only for, rg-lru layers.",
    plan=_plan,
    toy=_toy,
    # three d x lru_width projections, two block-diagonal gates of lru_width x block
    widest=lambda r, d: r.lru_width + r.lru_width * (r.lru_width // r.n_heads) // d + 1,
    check=_check,
)
