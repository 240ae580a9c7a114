"""Shortcut-connected MoE layers (LongCat-Flash, https://arxiv.org/abs/2509.01322; transformers'
LongcatFlashDecoderLayer): two serial pre-norm (attention, dense MLP) pairs, and routed
experts that read the first dense MLP's normed input and join the residual stream after
the second dense MLP, so their dispatch overlaps the second attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from archdb.tally import Tally

from .attention import Mixer
from .mlp import DenseMLP, MoESpec
from .norms import NormSpec

PAIRS = 2  # (attention, dense MLP) pairs per layer


@dataclass(frozen=True)
class ShortcutBlock:
    """One LongCat-Flash layer: x1 = x + attn0(n0(x)); m = n1(x1); x2 = x1 + mlp0(m);
    x3 = x2 + attn1(n2(x2)); out = x3 + mlp1(n3(x3)) + moe(m)."""

    d_model: int
    mixers: tuple[Mixer, Mixer]
    dense: DenseMLP  # both dense MLPs (own weights, one spec)
    moe: MoESpec
    norm: NormSpec

    N_NORMS = 2 * PAIRS

    def params(self) -> int:
        n = sum(m.params() for m in self.mixers) + PAIRS * self.dense.params()
        return n + self.moe.params() + self.N_NORMS * self.norm.params(self.d_model)

    def inactive_params(self) -> int:
        return self.moe.inactive_params()

    def flops(self, tally: Tally) -> None:
        d = self.d_model
        for _ in range(self.N_NORMS):
            self.norm.flops(tally, d)
        tally.elementwise((self.N_NORMS + 1) * d)  # four residual adds, + the experts' output
        for mixer in self.mixers:
            mixer.flops(tally)
        for _ in range(PAIRS):
            self.dense.flops(tally)
        self.moe.flops(tally)

    def cache_entries(self, context: int) -> int:
        return sum(m.cache_entries(context) for m in self.mixers)
