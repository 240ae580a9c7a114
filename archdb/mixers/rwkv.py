"""RWKV-4's time mixing (Peng et al. 2023; transformers' RwkvSelfAttention) as a
layer-pattern mixer (``rwkv``), declared whole: sizes, plan spec, toy rule and torch module.
Its layers' MLP is the card's, as RWKV's channel mixing (``mlp.channel_mix``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pydantic import Field, StrictBool

from archdb.conventions import FlopClass as C
from archdb.field_types import Strict, Width
from archdb.tally import Tally

from ._common import linear_params
from ._plugin import MixerPlugin, ToyFrame

# --- sizes (architecture.mixers.rwkv) ------------------------------------------------------


class Rwkv(Strict):
    """RWKV-4's time mixing (Peng et al. 2023, arXiv 2305.13048), laid out as transformers'
    RwkvSelfAttention: each token's input interpolated with the previous token's (a learned
    weight per channel for the key, the value and the receptance); key, value and
    receptance projections d_model -> width without bias; the WKV recurrence per channel,
    with a learned decay w = -exp(time_decay) and a bonus u = time_first for the current
    token; sigmoid(receptance) times it; an output projection width -> d_model. The state
    between tokens: the WKV numerator, denominator and running maximum per channel, and the
    previous token's input."""

    width: Width = Field(
        description="Width of the key, value and receptance (attention_hidden_size; null in "
        "transformers' config means d_model)."
    )
    mlp: StrictBool = Field(
        description="Whether an rwkv layer also has the card's MLP after the mixer (RWKV: "
        "true, its channel mixing)."
    )


# --- plan spec -----------------------------------------------------------------------------

# element-wise operations of the WKV recurrence per channel, as the module runs them: per
# token, k + u, a maximum, two exponentials and their two differences, the output's
# numerator, denominator and quotient (6); after every token but the last (the state the
# sequence leaves is not computed), the decayed maximum, a maximum, two exponentials and
# their differences, and the numerator and denominator updates (5)
WKV_OUTPUT_OPS = 12
WKV_STATE_OPS = 11
MIXES = 3  # key, value, receptance: x m + previous (1 - m), three operations each


@dataclass(frozen=True)
class RwkvMixer:
    """Token-shifted key, value and receptance; the WKV recurrence; sigmoid(receptance)
    times it; the output projection (transformers' RwkvSelfAttention)."""

    d_model: int
    width: int

    def params(self) -> int:
        d, w = self.d_model, self.width
        own = 2 * w + MIXES * d  # time_decay, time_first, the three mixing weights
        return own + 3 * linear_params(d, w, False) + linear_params(w, d, False)

    def flops(self, tally: Tally) -> None:
        d, w = self.d_model, self.width
        tally.elementwise(MIXES * 3 * d)
        tally.add(C.ELEMENTWISE, MIXES * d + 2 * w)  # 1 - m, and w = -exp(decay): per forward
        for _ in range(3):
            tally.linear(d, w, False)
        tally.elementwise(w)  # sigmoid(receptance)
        tally.elementwise(WKV_OUTPUT_OPS * w)
        tally.add(C.ELEMENTWISE, WKV_STATE_OPS * w * (tally.seq_len - 1))
        tally.elementwise(w)  # receptance * wkv
        tally.linear(w, d, False)

    def cache_entries(self, context: int) -> int:
        """The WKV numerator, denominator and maximum per channel, and the previous
        token's input: a constant, whatever the context."""
        return 3 * self.width + self.d_model

    def module(self, ctx):
        return rwkv_module()(self.d_model, self.width)


def _plan(sizes: Rwkv, reader) -> RwkvMixer:
    return RwkvMixer(reader.d, sizes.width)


def _toy(sizes: Rwkv, arch, frame: ToyFrame) -> dict:
    """The width keeps its ratio to d_model."""
    return {"width": max(1, round(sizes.width * frame.toy_d_model / frame.d_model))}


# --- torch module --------------------------------------------------------------------------


@functools.cache
def rwkv_module():
    """The torch module class (torch imported here, on first build)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class RwkvMixer(nn.Module):
        """RWKV-4's time mixing (https://arxiv.org/abs/2305.13048) as transformers'
        RwkvSelfAttention computes it on the CPU: the WKV recurrence in its stable form,
        every exponential taken against a running maximum, one token at a time."""

        flop_class = "elementwise"

        def __init__(self, d_model: int, width: int) -> None:
            super().__init__()
            self.time_decay = nn.Parameter(torch.zeros(width))
            self.time_first = nn.Parameter(torch.zeros(width))
            self.mix_key = nn.Parameter(torch.full((d_model,), 0.5))
            self.mix_value = nn.Parameter(torch.full((d_model,), 0.5))
            self.mix_receptance = nn.Parameter(torch.full((d_model,), 0.5))
            self.key = nn.Linear(d_model, width, bias=False)
            self.value = nn.Linear(d_model, width, bias=False)
            self.receptance = nn.Linear(d_model, width, bias=False)
            self.output = nn.Linear(width, d_model, bias=False)

        def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
            previous = F.pad(x, (0, 0, 1, -1))  # each token's predecessor, zeros first
            k = self.key(x * self.mix_key + previous * (1 - self.mix_key))
            v = self.value(x * self.mix_value + previous * (1 - self.mix_value))
            r = self.receptance(x * self.mix_receptance + previous * (1 - self.mix_receptance))
            return self.output(torch.sigmoid(r) * self.wkv(k, v))

        def wkv(self, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            w, u = -torch.exp(self.time_decay), self.time_first
            num = torch.zeros_like(k[:, 0])
            den = torch.zeros_like(k[:, 0])
            top = torch.full_like(k[:, 0], -1e38)  # the running maximum of the exponents
            out = []
            last = k.shape[1] - 1
            for t in range(last + 1):
                kt, vt = k[:, t], v[:, t]
                ku = kt + u  # the current token's bonus
                m = torch.maximum(top, ku)
                e1, e2 = torch.exp(top - m), torch.exp(ku - m)
                out.append((e1 * num + e2 * vt) / (e1 * den + e2))
                if t == last:  # the state after the sequence is not needed here
                    break
                decayed = top + w
                m = torch.maximum(decayed, kt)
                e1, e2 = torch.exp(decayed - m), torch.exp(kt - m)
                num, den, top = e1 * num + e2 * vt, e1 * den + e2, m
            return torch.stack(out, dim=1)

    return RwkvMixer


PLUGIN = MixerPlugin(
    kind="rwkv",
    after="rg-lru",
    sizes=Rwkv,
    description="RWKV time-mixing sizes; required for, and only for, rwkv layers.",
    plan=_plan,
    toy=_toy,
    widest=lambda r, d: r.width,  # key, value, receptance and output: d x width each
)
