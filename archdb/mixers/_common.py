"""Counting helpers the recurrent mixers share (plugins and the plan's built-in specs):
plain integers and FLOP conventions, no torch and no plan, so the schema can import them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archdb.measure import conventions as cv

if TYPE_CHECKING:  # the plan imports the schema, which imports the plugins
    from archdb.plan.tally import Tally


def linear_params(d_in: int, d_out: int, bias: bool) -> int:
    """A d_in -> d_out linear's weights, and its bias."""
    return d_in * d_out + (d_out if bias else 0)


def depthwise_conv_flops(tally: Tally, channels: int, kernel: int, bias: bool) -> None:
    """Depthwise causal conv: a multiply and a sum per tap, then the bias."""
    tally.elementwise(cv.FLOPS_PER_MAC * channels * kernel + (channels if bias else 0))
