"""Feed-forward specs: activations (one registry), dense and gated MLPs, mixtures of experts.

An activation is a rule: its function (applied to the gate of a gated unit) and its FLOPs
per element; whether it is gated is ``Activation.gated`` on the enum. The torch module is
``archdb.builder.mlp.Act`` running that function. Adding an activation is one entry in
``ACTIVATIONS`` (and its enum value).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from archdb.measure import conventions as cv
from archdb.measure.conventions import FlopClass as C
from archdb.schema import Activation

from .tally import Tally, linear_params


def _relu(x):
    import torch

    return torch.relu(x)


def _gelu(x):  # the tanh approximation (GPT-2, Gemma)
    import torch.nn.functional as F

    return F.gelu(x, approximate="tanh")


def _gelu_exact(x):  # the erf form (GPT-NeoX, BERT)
    import torch.nn.functional as F

    return F.gelu(x)


def _silu(x):
    import torch.nn.functional as F

    return F.silu(x)


def _squared_relu(x):  # relu(x)^2 (So et al. 2021, Primer; Nemotron-4)
    import torch

    return torch.relu(x).square()


@dataclass(frozen=True)
class ActivationRule:
    """The non-linearity (of the gate, for gated units), named as in module trees."""

    name: str
    fn: Callable
    flops_per_element: int = cv.ELEMENTWISE  # the non-linearity alone


ACTIVATIONS: dict[Activation, ActivationRule] = {
    Activation.RELU: ActivationRule("relu", _relu),
    Activation.GELU: ActivationRule("gelu", _gelu),
    Activation.SQUARED_RELU: ActivationRule("squared-relu", _squared_relu, flops_per_element=2),
    Activation.SILU: ActivationRule("silu", _silu),
    # gated units (Shazeer 2020, ``Activation.gated``): act(gate(x)) * up(x)
    Activation.SWIGLU: ActivationRule("silu", _silu),
    Activation.GEGLU: ActivationRule("gelu", _gelu),
    Activation.REGLU: ActivationRule("relu", _relu),
}


GELU_EXACT = ActivationRule("gelu-exact", _gelu_exact)  # GELU/GeGLU with gelu_approximation exact


def activation_rule(activation: Activation, gelu_exact: bool = False) -> ActivationRule:
    """The rule of an activation; GELU and GeGLU by erf when ``gelu_exact``."""
    if gelu_exact and activation in (Activation.GELU, Activation.GEGLU):
        return GELU_EXACT
    return ACTIVATIONS[activation]


@dataclass(frozen=True)
class DenseMLP:
    """down(act(up(x))), or down(act(gate(x)) * up(x)) for gated activations."""

    d_model: int
    d_ff: int  # width of one branch
    activation: Activation
    bias: bool
    gelu_exact: bool = False  # GELU/GeGLU by erf rather than the tanh approximation

    @property
    def rule(self) -> ActivationRule:
        return ACTIVATIONS[self.activation]

    def params(self) -> int:
        branches = 2 if self.activation.gated else 1
        d, f = self.d_model, self.d_ff
        return branches * linear_params(d, f, self.bias) + linear_params(f, d, self.bias)

    def inactive_params(self) -> int:
        return 0

    def flops(self, tally: Tally, tokens: int | None = None) -> None:
        tokens = tally.seq_len if tokens is None else tokens
        gated, d, f = self.activation.gated, self.d_model, self.d_ff
        for _ in range(2 if gated else 1):
            tally.linear(d, f, self.bias, tokens)
        per = self.rule.flops_per_element + (cv.ELEMENTWISE if gated else 0)  # (+ gating product)
        tally.add(C.ELEMENTWISE, tokens * f * per)
        tally.linear(f, d, self.bias, tokens)

    def module(self, ctx=None):
        from archdb.builder.mlp import make_mlp

        return make_mlp(self.activation, self.d_model, self.d_ff, self.bias, self.gelu_exact)


@dataclass(frozen=True)
class MoESpec:
    """A top-k router over routed experts, plus shared experts every token uses."""

    d_model: int
    n_experts: int
    n_active: int
    expert: DenseMLP
    shared: DenseMLP | None
    router_bias: bool = False
    shared_gate: bool = False  # sigmoid(Linear(d -> 1)) scales the shared experts' output
    normalize: bool = True  # softmax over the k chosen logits, not a share of all experts

    def params(self) -> int:
        n = linear_params(self.d_model, self.n_experts, self.router_bias)  # the router
        n += self.n_experts * self.expert.params()
        n += linear_params(self.d_model, 1, False) if self.shared_gate else 0
        return n + (self.shared.params() if self.shared else 0)

    def inactive_params(self) -> int:
        return (self.n_experts - self.n_active) * self.expert.params()

    def flops(self, tally: Tally) -> None:
        t, d, k = tally.seq_len, self.d_model, self.n_active
        tally.linear(d, self.n_experts, self.router_bias)  # router
        # a softmax over the k chosen logits, or over every expert's (not renormalized)
        tally.add(C.SOFTMAX, t * cv.SOFTMAX * (k if self.normalize else self.n_experts))
        self.expert.flops(tally, t * k)  # k experts per token
        tally.elementwise(2 * k * d)  # weight each expert's output, sum them
        if self.shared is not None:
            self.shared.flops(tally)
            tally.elementwise(d)
        if self.shared_gate:
            tally.linear(d, 1, False)
            tally.elementwise(1 + d)  # sigmoid, then the product

    def module(self, ctx=None):
        from archdb.builder.mlp import Act
        from archdb.builder.moe import Experts, MoE, Router

        e = self.expert
        act = Act(e.activation, e.gelu_exact)
        experts = Experts(self.n_experts, self.d_model, e.d_ff, act, e.activation.gated, e.bias)
        experts.archdb_active = self.n_active  # read by the measured parameter count
        shared = self.shared.module() if self.shared is not None else None
        router = Router(
            self.d_model, self.n_experts, self.n_active, self.router_bias, self.normalize
        )
        return MoE(router, experts, shared, self.shared_gate)
