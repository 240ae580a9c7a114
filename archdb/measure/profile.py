"""Where runtime goes: a torch.profiler run of full-width layers, by operator class.

The classes are those of Ivanov et al., "Data Movement Is All You Need" (MLSys 2021,
https://arxiv.org/abs/2007.00072): *tensor contractions* (matmul, bmm, linear, einsum,
convolution), *statistical normalizations* (layer norm, RMSNorm and softmax; reported
apart as well), *element-wise* operators (activations, residual adds, scaling, masking,
and the reductions that implement bias gradients), and *other* (views, copies,
concatenation, indexing, routing, allocation).

Which class an aten op belongs to is decided by the operator the model called, not by the
kernel that ran: in the forward pass, the outermost aten op (its children included, so the
transpose inside ``linear`` is part of the contraction); in the backward pass, the
autograd node computing that operator's gradient. Every op inside a norm block (RMSNorm
decomposes into pow, mean, rsqrt and mul on the CPU) is a normalization, and so is the
gradient of each such op, matched through the autograd sequence number.

FLOPs per class: the profiler's own count (``with_flops``, 2 per multiply-add) for the
contraction kernels (mm, addmm, bmm, baddbmm, convolution), and archdb's convention
(``archdb.conventions``) for the rest, counted on each outermost op: one FLOP per
element of its largest input for element-wise ops and reductions, softmax 5 per element,
its backward 4, LayerNorm 5 plus 1 per affine term, its backward 11 (8 for the input
gradient, 3 for scale and bias), RMSNorm 3 plus 1 per affine term; data movement costs 0.

Runtime per class: the profiler's self time of every op attributed to the class (self
CPU time on the CPU, self device time on CUDA), so nested ops are never counted twice.
"""

from __future__ import annotations

import math
import os
import platform
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import torch
from torch import nn

from archdb import conventions as cv
from archdb.builder.model import build_model
from archdb.choices.activations import activation_ops
from archdb.conventions import PASSES
from archdb.parts import norms as norms_part
from archdb.plan.layout import fill_unknowns
from archdb.schema import Activation, Card

Norm = norms_part.modules().Norm


class OpClass(StrEnum):
    """Ivanov et al.'s operator classes; NORM and SOFTMAX together are their
    *statistical normalizations*."""

    CONTRACTION = "tensor contraction"
    NORM = "norm"
    SOFTMAX = "softmax"
    ELEMENTWISE = "element-wise"
    OTHER = "other"


STATISTICAL = (OpClass.NORM, OpClass.SOFTMAX)

# Normalized op names (lower case, no "aten::", no underscores, no "backward" suffix).
CONTRACTIONS = frozenset(
    [
        "mm",
        "addmm",
        "bmm",
        "baddbmm",
        "addbmm",
        "matmul",
        "linear",
        "einsum",
        "dot",
        "mv",
        "addmv",
        "tensordot",
        "conv1d",
        "conv2d",
        "conv3d",
        "convolution",
        "convolutionbackward",
    ]
)
CONTRACTION_KERNELS = frozenset(["mm", "addmm", "bmm", "baddbmm", "addbmm", "convolution"])
NORMS = frozenset(
    [
        "layernorm",
        "nativelayernorm",
        "rmsnorm",
        "fusedrmsnorm",
        "groupnorm",
        "nativegroupnorm",
        "batchnorm",
        "nativebatchnorm",
    ]
)
SOFTMAXES = frozenset(["softmax", "logsoftmax", "softmaxbackwarddata", "logsoftmaxbackwarddata"])
ELEMENTWISE = frozenset(
    [
        "add",
        "sub",
        "rsub",
        "mul",
        "div",
        "neg",
        "exp",
        "log",
        "log2",
        "tanh",
        "sigmoid",
        "relu",
        "gelu",
        "silu",
        "elu",
        "pow",
        "sqrt",
        "rsqrt",
        "square",
        "reciprocal",
        "maskedfill",
        "where",
        "clamp",
        "threshold",
        "abs",
        "sign",
        "sum",
        "mean",
        "cumsum",
        "amax",
        "max",
        "maximum",
        "min",
        "lerp",
        "addcmul",
        "addcdiv",
        "sin",
        "cos",
        "erf",
    ]
) | {op.replace("_", "") for op in activation_ops()}  # declared with each activation's rule
NORM_SCOPE = "archdb::norm"  # the profiler range wrapped around every norm block
BACKWARD_ROOT = "autograd::engine::evaluate_function: "

# Own FLOPs per element of the largest input, where not 1 (element-wise) or 0 (other).
SOFTMAX_BACKWARD = 4  # y * g, sum, subtract, multiply
LAYERNORM_BACKWARD = 11  # 8 for the input gradient, 3 for the scale and bias gradients
OWN_FLOPS = {
    "softmax": cv.SOFTMAX,
    "logsoftmax": cv.SOFTMAX,
    "softmaxbackwarddata": SOFTMAX_BACKWARD,
    "logsoftmaxbackwarddata": SOFTMAX_BACKWARD,
    "nativelayernormbackward": LAYERNORM_BACKWARD,
}
FLOP_CONVENTION = (
    "FLOPs: the profiler's count (2 per multiply-add) for matmul kernels; otherwise archdb's "
    "convention per element of an op's largest input: element-wise ops and reductions 1, "
    f"softmax {cv.SOFTMAX} (backward {SOFTMAX_BACKWARD}), LayerNorm {cv.LAYERNORM} + "
    f"{cv.AFFINE} per affine term (backward {LAYERNORM_BACKWARD}), RMSNorm {cv.RMSNORM} + "
    f"{cv.AFFINE} (its backward is the sum of its parts' gradients); data movement 0"
)


def normalize(name: str) -> str:
    """'aten::native_layer_norm_backward' -> 'nativelayernorm'; 'AddmmBackward0' -> 'addmm'."""
    name = name.removeprefix(BACKWARD_ROOT).removeprefix("aten::").lower()
    name = name.removeprefix("torch::autograd::")
    name = re.sub(r"backward\d*$", "", name.replace("_", ""))
    return name


def op_class(name: str) -> OpClass:
    """The class of an op or autograd node by its name alone (norm scope aside)."""
    raw = name.removeprefix(BACKWARD_ROOT).removeprefix("aten::").lower().replace("_", "")
    if raw in ("softmaxbackwarddata", "logsoftmaxbackwarddata"):
        return OpClass.SOFTMAX
    key = normalize(name)
    if key in CONTRACTIONS:
        return OpClass.CONTRACTION
    if key in NORMS:
        return OpClass.NORM
    if key in SOFTMAXES:
        return OpClass.SOFTMAX
    if key in ELEMENTWISE:
        return OpClass.ELEMENTWISE
    return OpClass.OTHER


def own_flops(name: str, shapes: Sequence[Sequence[int]]) -> int:
    """FLOPs of a non-contraction op under the convention above (0 for data movement)."""
    raw = name.removeprefix("aten::").lower().replace("_", "")
    largest = max((math.prod(s) for s in shapes if s), default=0)
    if raw in OWN_FLOPS:
        return OWN_FLOPS[raw] * largest
    key = normalize(name)
    if key in ("layernorm", "nativelayernorm"):  # x, normalized_shape, weight, bias, eps
        affine = sum(1 for s in shapes[2:4] if s)
        return (cv.LAYERNORM + cv.AFFINE * affine) * largest
    if key in ("rmsnorm", "fusedrmsnorm"):  # x, normalized_shape, weight, eps
        affine = 1 if len(shapes) > 2 and shapes[2] else 0
        return (cv.RMSNORM + cv.AFFINE * affine) * largest
    if key in SOFTMAXES:
        return cv.SOFTMAX * largest
    if key in ELEMENTWISE:
        return cv.ELEMENTWISE * largest
    return 0


# --- attributing profiler events ---------------------------------------------------------


class Event(Protocol):
    """What we read of a torch.profiler FunctionEvent (tests pass plain objects)."""

    name: str
    cpu_parent: Any
    sequence_nr: int
    flops: int
    input_shapes: Any

    @property
    def time_range(self) -> Any: ...


@dataclass(frozen=True)
class Attributed:
    cls: OpClass
    time_us: float
    flops: int


def _ancestors(event: Event) -> list[Event]:
    chain = []
    parent = event.cpu_parent
    while parent is not None:
        chain.append(parent)
        parent = parent.cpu_parent
    return chain  # nearest first


def attribute(events: Iterable[Event], times: dict[int, float]) -> list[Attributed]:
    """Each event's class, self time (``times`` by id(event)) and own FLOPs."""
    events = list(events)
    in_norm: dict[int, bool] = {}
    last_with_seq: dict[int, Event] = {}
    for e in sorted(events, key=lambda e: e.time_range.start):
        chain = _ancestors(e)
        in_norm[id(e)] = e.name == NORM_SCOPE or any(a.name == NORM_SCOPE for a in chain)
        root = chain[-1] if chain else e
        if e.sequence_nr >= 0 and not root.name.startswith(BACKWARD_ROOT):
            last_with_seq[e.sequence_nr] = e  # the op that created autograd node seq
    norm_nodes = {seq for seq, e in last_with_seq.items() if in_norm[id(e)]}

    out = []
    for e in events:
        if e.name == NORM_SCOPE:
            continue  # the range's own time is our hook's overhead
        chain = _ancestors(e)
        root = chain[-1] if chain else e
        if root.name.startswith(BACKWARD_ROOT):
            backward_norm = root.sequence_nr >= 0 and root.sequence_nr in norm_nodes
            cls = OpClass.NORM if backward_norm else op_class(root.name)
        elif in_norm[id(e)]:
            cls = OpClass.NORM
        else:
            aten = [a for a in (e, *chain) if a.name.startswith("aten::")]
            cls = op_class(aten[-1].name) if aten else OpClass.OTHER
        out.append(Attributed(cls, times.get(id(e), 0.0), _event_flops(e, chain)))
    return out


def _event_flops(e: Event, chain: list[Event]) -> int:
    key = normalize(e.name)
    if key in CONTRACTION_KERNELS:
        return int(e.flops or 0)
    outermost = e.name.startswith("aten::") and not any(a.name.startswith("aten::") for a in chain)
    if not outermost or op_class(e.name) is OpClass.CONTRACTION:
        return 0
    return own_flops(e.name, [list(s) for s in (e.input_shapes or []) if isinstance(s, list)])


def by_class(items: Iterable[Attributed]) -> tuple[dict[str, float], dict[str, int]]:
    """Runtime (microseconds) and FLOPs summed per class, every class present."""
    time: Counter[str] = Counter()
    flops: Counter[str] = Counter()
    for item in items:
        time[item.cls.value] += item.time_us
        flops[item.cls.value] += item.flops
    return (
        {c.value: float(time[c.value]) for c in OpClass},
        {c.value: int(flops[c.value]) for c in OpClass},
    )


# --- what is profiled --------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One or a few full-width layers of a card, at a stated batch and sequence length."""

    key: str
    label: str
    card_id: str
    layers: int
    batch: int
    seq_len: int
    encoder: bool = False
    activation: Activation | None = None  # replaces the card's, where a label says so
    experts: int | None = None  # routed experts built, where memory needs fewer (stated)
    note: str = ""


# Ivanov et al. profile one BERT-large encoder layer (d_model 1024, 16 heads, d_ff 4096,
# Post-LN, GELU) at batch 8, sequence 512. No BERT card exists: transformer-big's encoder
# layer has that shape and placement; its ReLU is replaced by BERT's GELU.
TARGETS: tuple[Target, ...] = (
    Target(
        "bert-large-layer",
        "BERT-large-like encoder layer",
        "transformer-big",
        layers=1,
        batch=8,
        seq_len=512,
        encoder=True,
        activation=Activation.GELU,
        note="transformer-big's Post-LN encoder layer (d_model 1024, 16 heads, d_ff 4096) "
        "with BERT's GELU in place of ReLU; no dropout",
    ),
    Target("llama-2-7b", "Llama 2 7B layer", "llama-2-7b", layers=1, batch=1, seq_len=512),
    Target(
        "gemma-2-9b",
        "Gemma 2 9B layer",
        "gemma-2-9b",
        layers=1,
        batch=1,
        seq_len=512,
        note="its first layer (local, window 4096 > 512: every key in reach)",
    ),
    Target(
        "qwen3-30b-a3b",
        "Qwen3 30B-A3B MoE layer",
        "qwen3-30b-a3b",
        layers=1,
        batch=1,
        seq_len=512,
        experts=32,
        note="32 of its 128 routed experts built (a full layer's weight gradients need over "
        "10 GB on the shared CPU machine); each token still runs 8 experts of width 768, so "
        "FLOPs per token are the card's; tokens dispatched per expert",
    ),
    Target(
        "deepseek-v2",
        "DeepSeek-V2 MLA layer",
        "deepseek-v2",
        layers=1,
        batch=1,
        seq_len=512,
        note="its first layer: MLA with the dense MLP (d_ff 12288)",
    ),
)
PROFILE_VOCAB = 256  # the embedding is not profiled: a small table saves memory


def target_architecture(card: Card, target: Target):
    """The card's architecture cut to ``target.layers`` layers, widths untouched."""
    arch, _ = fill_unknowns(card.architecture)
    updates: dict[str, Any] = {"n_layers": target.layers, "vocab_size": PROFILE_VOCAB}
    if target.encoder:
        updates["n_encoder_layers"] = target.layers
    mlp_updates: dict[str, Any] = {}
    if target.activation is not None:
        mlp_updates["activation"] = target.activation
    if target.experts is not None:
        mlp_updates["moe"] = arch.mlp.moe.model_copy(update={"n_experts": target.experts})
    if mlp_updates:
        updates["mlp"] = arch.mlp.model_copy(update=mlp_updates)
    return arch.model_copy(update=updates)


def layer_stack(card: Card, target: Target, device: str = "cpu") -> tuple[nn.Module, int]:
    """The stack of layers to profile, and d_model. The builder's experts already run
    expert by expert over the tokens routed to each, as real implementations do."""
    torch.manual_seed(0)
    arch = target_architecture(card, target)
    model = build_model(arch, device=device)
    stack = model.encoder if target.encoder else model.decoder
    return stack, arch.d_model


def mark_norms(model: nn.Module) -> list[Any]:
    """Wrap every norm block's forward in a profiler range; returns the hook handles."""
    handles = []
    for module in model.modules():
        if isinstance(module, Norm):
            handles.append(module.register_forward_pre_hook(_enter_norm))
            handles.append(module.register_forward_hook(_exit_norm))
    return handles


def _enter_norm(module: nn.Module, args: Any) -> None:
    scope = torch.autograd.profiler.record_function(NORM_SCOPE)
    scope.__enter__()
    module._archdb_scope = scope  # type: ignore[assignment]


def _exit_norm(module: nn.Module, args: Any, output: Any) -> None:
    module._archdb_scope.__exit__(None, None, None)  # type: ignore[union-attr]


# --- running --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PassProfile:
    """One pass of one target: FLOPs per class, runtime per class for each repeat."""

    target: str
    pass_name: str
    flops: dict[str, int]
    runtime_us: dict[str, list[float]]  # class -> one value per repeat
    wall_ms: list[float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "pass": self.pass_name,
            "flops": self.flops,
            "runtime_us": self.runtime_us,
            "wall_ms": self.wall_ms,
        }


def device_info(device: str) -> dict[str, Any]:
    """What the measurements ran on, for the report."""
    info: dict[str, Any] = {
        "device": device,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return info


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()[:200]
    except OSError:
        pass
    return platform.processor() or "unknown"


def profile_pass(
    stack: nn.Module, x: torch.Tensor, backward: bool, device: str
) -> tuple[dict[str, float], dict[str, int], float]:
    """One profiled pass: runtime (us) and FLOPs per class, and its wall time (ms)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    cuda = device.startswith("cuda")
    if cuda:
        activities.append(ProfilerActivity.CUDA)
    grad = torch.randn_like(x) if backward else None
    with profile(activities=activities, record_shapes=True, with_flops=True) as prof:
        start = _now(cuda)
        if backward:
            stack(x).backward(grad)
        else:
            with torch.no_grad():
                stack(x)
        wall = _now(cuda) - start
    events = list(prof.events())
    times = {
        id(e): float(e.self_device_time_total if cuda else e.self_cpu_time_total) for e in events
    }
    runtime, flops = by_class(attribute(events, times))
    stack.zero_grad(set_to_none=True)
    x.grad = None
    return runtime, flops, wall * 1000


def _now(cuda: bool) -> float:
    import time

    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter()


def profile_target(
    card: Card, target: Target, repeats: int = 5, device: str = "cpu"
) -> list[PassProfile]:
    """Forward (no grad) and forward+backward of a target: one warm-up, then ``repeats``."""
    stack, d = layer_stack(card, target, device)
    mark_norms(stack)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(target.batch, target.seq_len, d, generator=gen).to(device)
    results = []
    for pass_name in PASSES:
        backward = pass_name != "forward"
        xin = x.requires_grad_(backward)
        profile_pass(stack, xin, backward, device)  # warm-up
        runs = [profile_pass(stack, xin, backward, device) for _ in range(repeats)]
        runtime = {c.value: [r[0][c.value] for r in runs] for c in OpClass}
        results.append(
            PassProfile(target.key, pass_name, runs[0][1], runtime, [r[2] for r in runs])
        )
    del stack
    return results


# --- summaries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Share:
    median: float
    low: float
    high: float
