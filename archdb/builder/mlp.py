"""Feed-forward blocks: activations, plain and gated MLPs.

Gated units (Shazeer 2020, https://arxiv.org/abs/2002.05202) multiply an activated gate
by a linear "up" branch; d_ff is the width of one branch, which the down-projection reads.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archdb.schema import Activation


class Act(nn.Module):
    """A pointwise non-linearity; gated subclasses also multiply by the up branch."""

    flop_class = "elementwise"
    name = "act"

    def fn(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, h: torch.Tensor, up: torch.Tensor | None = None) -> torch.Tensor:
        a = self.fn(h)
        return a if up is None else a * up

    def extra_repr(self) -> str:
        return self.name


class ReLU(Act):
    name = "relu"

    def fn(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


class GELU(Act):
    name = "gelu"

    def fn(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


class SiLU(Act):
    name = "silu"

    def fn(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


class SquaredReLU(Act):
    """relu(x)^2 (So et al. 2021, Primer; Nemotron-4)."""

    name = "squared-relu"

    def fn(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x).square()


# enum value -> the non-linearity applied (to the gate, for gated units)
ACTIVATIONS: dict[Activation, type[Act]] = {
    Activation.RELU: ReLU,
    Activation.GELU: GELU,
    Activation.SQUARED_RELU: SquaredReLU,
    Activation.SILU: SiLU,
    Activation.SWIGLU: SiLU,
    Activation.GEGLU: GELU,
    Activation.REGLU: ReLU,
}


class MLP(nn.Module):
    """down(act(up(x)))."""

    def __init__(self, d_model: int, d_ff: int, act: Act, bias: bool) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.act = act
        self.down = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.up(x)))


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)): SwiGLU, GeGLU, ReGLU."""

    def __init__(self, d_model: int, d_ff: int, act: Act, bias: bool) -> None:
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=bias)
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.act = act
        self.down = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.gate(x), self.up(x)))


def make_mlp(activation: Activation, d_model: int, d_ff: int, bias: bool) -> nn.Module:
    cls = GatedMLP if activation.gated else MLP
    return cls(d_model, d_ff, ACTIVATIONS[activation](), bias)
