"""Multi-token-prediction modules (``architecture.mtp``): counted beside the main model.

DeepSeek-V3's layout (section 2.2), which GLM-4.5, MiMo and Qwen3-Next release too: each
module normalizes the previous hidden state and the next token's embedding, projects their
concatenation 2d -> d, runs blocks like the main model's last layer, and normalizes again
before the main model's (shared) output head. The main model's forward pass never runs
them, so neither the exact parameter count nor the builder includes them: the plan keeps
them apart and reports their parameters and FLOPs as figures of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from archdb.parts.norms import NormSpec
from archdb.tally import Counted, Tally, linear_params

MTP_NORMS = 3  # hidden-state norm, embedding norm, the module's final norm


@dataclass(frozen=True)
class MTPModule:
    """One module: two input norms, the 2d -> d projection, its blocks, a final norm."""

    d_model: int
    norm: NormSpec
    block: Counted  # the main model's last layer (a plan.Block), repeated ``n_blocks`` times
    n_blocks: int

    def params(self) -> int:
        d = self.d_model
        own = MTP_NORMS * self.norm.params(d) + linear_params(2 * d, d, False)
        return own + self.n_blocks * self.block.params()

    def flops(self, tally: Tally) -> None:
        d = self.d_model
        for _ in range(MTP_NORMS):
            self.norm.flops(tally, d)
        tally.linear(2 * d, d, False)
        for _ in range(self.n_blocks):
            self.block.flops(tally)


@dataclass(frozen=True)
class MTPStack:
    """The card's ``n_modules`` sequential modules, each read by the shared output head."""

    n_modules: int
    module: MTPModule

    def params(self) -> int:
        return self.n_modules * self.module.params()

    def flops(self, tally: Tally, head: Counted) -> None:  # head: the plan's OutputHead
        """Every module's forward over the sequence, each with its pass through the head."""
        for _ in range(self.n_modules):
            self.module.flops(tally)
            head.flops(tally)
