"""FLOP and parameter arithmetic shared by every spec of the plan and every mixer plugin
(pure Python: the schema imports the plugins, the plan the schema)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from archdb import conventions as cv
from archdb.conventions import FlopClass as C

__all__ = ["Counted", "Tally", "linear_params"]


def linear_params(d_in: int, d_out: int, bias: bool) -> int:
    """A d_in -> d_out linear's weights, and its bias."""
    return d_in * d_out + (d_out if bias else 0)


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


class Counted(Protocol):
    """What every spec of the plan answers: its parameters and its forward FLOPs."""

    def params(self) -> int: ...

    def flops(self, tally: Tally) -> None: ...
