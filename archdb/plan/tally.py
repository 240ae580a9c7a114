"""FLOP and parameter arithmetic shared by every spec of the plan (pure Python)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from archdb.measure import conventions as cv
from archdb.measure.conventions import FlopClass as C
from archdb.mixers._common import linear_params

__all__ = ["Tally", "linear_params"]


@dataclass
class Tally:
    """Forward FLOPs of one sequence of ``seq_len`` tokens, by class, dense and causal.

    Specs add their operations; ``repeat`` multiplies everything added while a group of
    identical layers is counted once.
    """

    seq_len: int
    dense: Counter[str] = field(default_factory=Counter)
    causal: Counter[str] = field(default_factory=Counter)
    repeat: int = 1

    def add(self, cls: C, n: int, causal: int | None = None) -> None:
        self.dense[cls] += n * self.repeat
        self.causal[cls] += (n if causal is None else causal) * self.repeat

    def linear(self, d_in: int, d_out: int, bias: bool, tokens: int | None = None) -> None:
        n = self.seq_len if tokens is None else tokens
        self.add(C.LINEAR, n * (cv.FLOPS_PER_MAC * d_in * d_out + (d_out if bias else 0)))

    def elementwise(self, per_token: int, cls: C = C.ELEMENTWISE) -> None:
        self.add(cls, self.seq_len * per_token)
