"""MLP activations (``mlp.activation``): the vocabulary and what each one computes.

An activation is a member of ``Activation`` and its ``ActivationRule`` in ``ACTIVATIONS``:
its function (applied to the gate of a gated unit), its FLOPs per element and whether it
is gated (act(gate(x)) * up(x), two input branches). A gated unit whose branches meet
otherwise than act(gate) * up gives its ``combine`` (gpt-oss's clamped SwiGLU); learned
scalars of the function go in ``learned`` (xIELU's). The torch module is
``archdb.parts.mlp``'s ``Act`` running the rule; its MLP specs build on it.
Adding an activation is one member and one entry here (an import-time check keeps the two
in step); ``archdb schema`` then regenerates the catalogue header that lists them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from archdb import conventions as cv


class Activation(StrEnum):
    RELU = "relu"
    GELU = "gelu"
    SQUARED_RELU = "squared-relu"
    SILU = "silu"
    SWIGLU = "swiglu"
    GEGLU = "geglu"
    REGLU = "reglu"
    # relu(gate)^2 * up: the gated squared ReLU (BitNet b1.58 2B4T; transformers' bitnet
    # applies hidden_act "relu2" to the gate of its gated MLP)
    SQUARED_REGLU = "squared-reglu"
    # gpt-oss: (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha * g), g = min(gate, limit)
    CLAMPED_SWIGLU = "clamped-swiglu"
    # DeepSeek-V4: silu(min(gate, limit)) * clamp(up, -limit, limit)
    CLIPPED_SWIGLU = "clipped-swiglu"
    # Apertus: xIELU (Huang 2024), two learned scalars per MLP (alpha_p, alpha_n)
    XIELU = "xielu"
    # x * sigmoid(1.702 x): OpenAI's sigmoid approximation of GELU (CLIP; transformers'
    # ``quick_gelu``), a different function from either GELU form
    QUICK_GELU = "quick-gelu"
    # Phi-3-small: (clamp(up, -limit, limit) + 1) * quick_gelu(min(gate, limit)), the
    # "GEGLU" of the Phi-3 report with its config's gegelu_limit
    GEGELU = "gegelu"

    @property
    def gated(self) -> bool:
        """Whether the unit has two input branches, act(gate(x)) * up(x)."""
        return ACTIVATIONS[self].gated


def _relu(x):
    import torch

    return torch.relu(x)


def _gelu(x):  # the tanh approximation (GPT-2, Gemma)
    import torch.nn.functional as F

    return F.gelu(x, approximate="tanh")


def _silu(x):
    import torch.nn.functional as F

    return F.silu(x)


def _quick_gelu(x):  # x * sigmoid(1.702 x) (Hendrycks & Gimpel 2016, section 2)
    import torch

    return x * torch.sigmoid(1.702 * x)


def _squared_relu(x):  # relu(x)^2 (So et al. 2021, Primer; Nemotron-4)
    import torch

    return torch.relu(x).square()


@dataclass(frozen=True)
class ClampedSwiGLU:
    """gpt-oss's gated unit (openai/gpt-oss ``swiglu``; transformers GptOssExperts): the
    gate clamped above at ``limit``, the linear branch to [-limit, limit], then
    (up + 1) * gate * sigmoid(alpha * gate)."""

    limit: float = 7.0  # swiglu_limit
    alpha: float = 1.702  # swiglu_alpha

    def gate(self, x):
        import torch

        x = x.clamp(max=self.limit)
        return x * torch.sigmoid(x * self.alpha)

    def __call__(self, gate, up):
        return (up.clamp(min=-self.limit, max=self.limit) + 1) * self.gate(gate)


CLAMPED_SWIGLU = ClampedSwiGLU()  # gpt-oss's limit and alpha: the defaults of null fields
# Phi-3-small's gegelu is the same function with the 1.702 of quick_gelu (x sigmoid(1.702 x),
# its GELU) as the gain: the clamp above at the limit, the linear branch to [-limit, limit],
# then (up + 1) * gate * sigmoid(1.702 gate); the limit is gegelu_limit (20.0 in its config)
GEGELU = ClampedSwiGLU(limit=20.0, alpha=1.702)


@dataclass(frozen=True)
class ClippedSwiGLU:
    """DeepSeek-V4's gated unit (transformers DeepseekV4MLP, DeepseekV4Experts): the gate
    clamped above at ``limit``, the linear branch to [-limit, limit], then silu(gate) * up."""

    limit: float = 7.0  # swiglu_limit (the clamped unit's default where a card gives none)

    def gate(self, x):
        return _silu(x.clamp(max=self.limit))

    def __call__(self, gate, up):
        return self.gate(gate) * up.clamp(min=-self.limit, max=self.limit)


CLIPPED_SWIGLU = ClippedSwiGLU()

_SOFTPLUS_INVERSE_08 = math.log(math.expm1(0.8))  # stored so that softplus gives 0.8
_SOFTPLUS_INVERSE_03 = math.log(math.expm1(0.8 - 0.5))


@dataclass(frozen=True)
class XIELU:
    """xIELU (Huang 2024, https://arxiv.org/abs/2411.13010), as transformers'
    XIELUActivation computes it: with a_p = softplus(alpha_p), a_n = beta + softplus(alpha_n),
    a_p x^2 + beta x for x > 0, else (expm1(min(x, eps)) - x) a_n + beta x. beta and eps
    are constants of the function; alpha_p and alpha_n are learned, one each per MLP."""

    beta: float = 0.5
    eps: float = -1e-6
    initial: tuple[tuple[str, float], ...] = (
        ("alpha_p", _SOFTPLUS_INVERSE_08),
        ("alpha_n", _SOFTPLUS_INVERSE_03),
    )

    def __call__(self, x, alpha_p, alpha_n):
        import torch
        import torch.nn.functional as F

        a_p = F.softplus(alpha_p)
        a_n = self.beta + F.softplus(alpha_n)
        positive = a_p * x * x + self.beta * x
        negative = (torch.expm1(x.clamp(max=self.eps)) - x) * a_n + self.beta * x
        return torch.where(x > 0, positive, negative)


XIELU_RULE = XIELU()


@dataclass(frozen=True)
class ActivationRule:
    """The non-linearity (of the gate, for gated units), named as in module trees."""

    name: str
    fn: Callable
    flops_per_element: int = cv.ELEMENTWISE  # the non-linearity alone (all but the product)
    combine: Callable | None = None  # (gate, up) -> output, where not fn(gate) * up
    # learned scalars of the function, one set per MLP (xIELU): (name, initial raw value),
    # passed to fn after its input; flops_per_call: their own transformation per call
    learned: tuple[tuple[str, float], ...] = ()
    flops_per_call: int = 0
    gated: bool = False  # act(gate(x)) * up(x) (Shazeer 2020): two input branches
    # torch operators the function runs that only this activation brings (xIELU's expm1):
    # the FLOP counter and the runtime profile read them here, so a new activation is
    # counted without an edit to archdb.measure
    ops: tuple[str, ...] = ()


ACTIVATIONS: dict[Activation, ActivationRule] = {
    Activation.RELU: ActivationRule("relu", _relu),
    Activation.GELU: ActivationRule("gelu", _gelu),
    Activation.SQUARED_RELU: ActivationRule("squared-relu", _squared_relu, flops_per_element=2),
    Activation.SILU: ActivationRule("silu", _silu),
    # per element: 1.702 x, sigmoid, x * (the FLOP counter's sigmoid costs one)
    Activation.QUICK_GELU: ActivationRule("quick-gelu", _quick_gelu, flops_per_element=3),
    # gated units (Shazeer 2020): act(gate(x)) * up(x)
    Activation.SWIGLU: ActivationRule("silu", _silu, gated=True),
    Activation.GEGLU: ActivationRule("gelu", _gelu, gated=True),
    Activation.REGLU: ActivationRule("relu", _relu, gated=True),
    Activation.SQUARED_REGLU: ActivationRule(
        "squared-relu", _squared_relu, flops_per_element=2, gated=True
    ),
    # per element: two clamps, alpha *, sigmoid, gate *, up + 1 (and the product)
    Activation.CLAMPED_SWIGLU: ActivationRule(
        "clamped-swiglu",
        CLAMPED_SWIGLU.gate,
        flops_per_element=6,
        combine=CLAMPED_SWIGLU,
        gated=True,
    ),
    # per element: as the clamped SwiGLU (two clamps, 1.702 *, sigmoid, gate *, up + 1)
    Activation.GEGELU: ActivationRule(
        "gegelu", GEGELU.gate, flops_per_element=6, combine=GEGELU, gated=True
    ),
    # per element: two clamps, silu (and the product)
    Activation.CLIPPED_SWIGLU: ActivationRule(
        "clipped-swiglu",
        CLIPPED_SWIGLU.gate,
        flops_per_element=3,
        combine=CLIPPED_SWIGLU,
        gated=True,
    ),
    # per element: alpha_p x, * x, beta x, +; clamp, expm1, - x, * a_n, beta x, + (the
    # selection is free); per call: two softplus and beta + of the learned scalars
    Activation.XIELU: ActivationRule(
        "xielu",
        XIELU_RULE,
        flops_per_element=10,
        learned=XIELU_RULE.initial,
        flops_per_call=3,
        ops=("expm1", "softplus"),
    ),
}
if set(ACTIVATIONS) != set(Activation):
    raise RuntimeError("every activation needs its rule in archdb.choices.activations")


def activation_ops() -> tuple[str, ...]:
    """The element-wise torch operators the activations bring, one each, sorted."""
    return tuple(sorted({op for rule in ACTIVATIONS.values() for op in rule.ops}))
