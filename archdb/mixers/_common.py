"""Counting helpers the recurrent mixers share (plugins and the plan's built-in specs):
plain integers and FLOP conventions, no torch and no plan, so the schema can import them."""

from __future__ import annotations

from archdb import conventions as cv
from archdb.choices.norms import RMS_EPS
from archdb.tally import Tally, linear_params

__all__ = ["Tally", "card_norm_eps", "linear_params"]


def card_norm_eps(arch) -> float:
    """A mixer's gated RMSNorm takes the card's norm epsilon (transformers' Mamba2Mixer,
    BambaMixer, Qwen3-Next's gated DeltaNet and Kimi Linear's KDA all pass the blocks' one)."""
    return RMS_EPS if arch.norm.eps is None else arch.norm.eps


def depthwise_conv_flops(tally: Tally, channels: int, kernel: int, bias: bool) -> None:
    """Depthwise causal conv: a multiply and a sum per tap, then the bias."""
    tally.elementwise(cv.FLOPS_PER_MAC * channels * kernel + (channels if bias else 0))


def conv_flops(tally: Tally, channels: int, kernel: int, bias: bool) -> None:
    """The depthwise conv, then SiLU (Mamba, Mamba-2, Gated DeltaNet)."""
    depthwise_conv_flops(tally, channels, kernel, bias)
    tally.elementwise(channels)  # SiLU


def delta_rule_flops(tally: Tally, hk: int, hv: int, dk: int, dv: int, decay_rates: int) -> None:
    """The gated delta rule per token (Gated DeltaNet, KDA): L2-normed q and k
    (x * rsqrt(sum x^2 + eps)) and q's 1/sqrt(dk) on the hk key heads; per value head the
    decay exp(g) S (``decay_rates`` exponentials: one per head, or one per key channel),
    the read k^T S, delta (v - k^T S) beta, S += k delta^T, the output q^T S."""
    tally.elementwise(2 * hk * (3 * dk + 2) + hk * dk)
    tally.elementwise(decay_rates + hv * dk * dv + 2 * hv * dk * dv + 2 * hv * dv)
    tally.elementwise(2 * hv * dk * dv + 2 * hv * dk * dv)
