"""FLOPs of a toy measured with fvcore, with archdb's handles for every operator.

fvcore traces the model and counts operators through per-op handles. Its defaults would
mislead here in three ways, so none of them are used:
- its matmul handles return multiply-adds under the name "flops": ours return 2 x MACs;
- it silently ignores a list of operators (ReLU, clamp, masked_fill, max, ...) and has no
  handle for a fused ``scaled_dot_product_attention`` or for norms and activations: we
  start from an empty table, say which operators are free (data movement) and fail on
  any other operator without a handle, so nothing is dropped silently;
- it counts integer index arithmetic like any other: our elementwise handles count
  floating-point outputs only.
The per-class breakdown comes from the operator (linear, softmax, norms, embedding) or
else from the ``flop_class`` of the innermost builder module that runs it.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
from torch import nn

with warnings.catch_warnings():  # fvcore's import scripts a helper; torch 2.x warns on that
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from fvcore.nn.jit_analysis import JitModelAnalysis
    from fvcore.nn.jit_handles import get_shape

from archdb import conventions as cv
from archdb.builder.model import example_inputs
from archdb.choices.activations import activation_ops
from archdb.conventions import FlopClass

Handle = Callable[[list, list], int]


class UncountedOperatorError(RuntimeError):
    """The traced model ran an operator the counter has no rule for."""


# --- handles --------------------------------------------------------------------------------


def _numel(val) -> int:
    shape = get_shape(val)
    n = 1
    for s in shape or ():
        n *= s
    return n


def _is_float(val) -> bool:
    kind = val.type().scalarType() if hasattr(val.type(), "scalarType") else None
    return kind in {"Float", "Double", "Half", "BFloat16"}


def _is_none(val) -> bool:
    return isinstance(val.type(), torch._C.NoneType)


def linear_flops(inputs: list, outputs: list) -> int:
    d_in = get_shape(inputs[1])[1]
    out = _numel(outputs[0])
    bias = 0 if len(inputs) < 3 or _is_none(inputs[2]) else out
    return cv.FLOPS_PER_MAC * out * d_in + bias


def matmul_flops(inputs: list, outputs: list) -> int:
    """(..., m, k) @ (..., k, n): 2 * k per output element, broadcasting included."""
    k = get_shape(inputs[0])[-1]
    return cv.FLOPS_PER_MAC * _numel(outputs[0]) * k


def per_output(cost: int) -> Handle:
    def handle(inputs: list, outputs: list) -> int:
        return cost * _numel(outputs[0]) if _is_float(outputs[0]) else 0

    return handle


def per_input(cost: int) -> Handle:
    def handle(inputs: list, outputs: list) -> int:
        return cost * _numel(inputs[0]) if _is_float(inputs[0]) else 0

    return handle


def layer_norm_flops(inputs: list, outputs: list) -> int:
    affine = sum(not _is_none(v) for v in inputs[2:4])
    return _numel(inputs[0]) * (cv.LAYERNORM + cv.AFFINE * affine)


def rms_norm_flops(inputs: list, outputs: list) -> int:
    scale = len(inputs) > 2 and not _is_none(inputs[2])
    return _numel(inputs[0]) * (cv.RMSNORM + cv.AFFINE * scale)


def free(inputs: list, outputs: list) -> int:
    return 0


ELEMENTWISE_OPS = (
    "add",
    "add_",
    "sub",
    "rsub",
    "mul",
    "mul_",
    "div",
    "neg",
    "tanh",
    "gelu",
    "silu",
    "relu",
    "square",
    "pow",
    "elu",
    "exp",
    "log2",  # xAI's attention temperature (Grok-2)
    "log1p",  # Llama 4's attention temperature tuning
    "sigmoid",
    "softplus",
    "rsqrt",
    "sqrt",
    "abs",
    "floor_divide",
    "remainder",
    "floor",
    "clamp",  # one comparison per output element (gpt-oss's clamped SwiGLU)
    "maximum",  # one comparison per output element (RWKV's running maximum)
)
# ... and the operators only an activation runs, declared with its rule
ELEMENTWISE_OPS += tuple(op for op in activation_ops() if op not in ELEMENTWISE_OPS)
HANDLES: dict[str, Handle] = {
    "aten::linear": linear_flops,
    "aten::matmul": matmul_flops,
    "aten::bmm": matmul_flops,
    "aten::softmax": per_output(cv.SOFTMAX),
    "aten::layer_norm": layer_norm_flops,
    "aten::rms_norm": rms_norm_flops,
    "aten::sum": per_input(cv.REDUCTION),
    "aten::cumsum": per_input(cv.REDUCTION),
    "aten::amax": per_input(cv.REDUCTION),  # a router group's best score
    "aten::mean": per_input(cv.REDUCTION),  # Gemma 3n: AltUp's magnitudes, gaussian top-k
    "aten::std": per_input(cv.STD),  # Gemma 3n's gaussian top-k
    "aten::embedding": free,  # a lookup; listed so it shows in the breakdown
    **{f"aten::{op}": per_output(cv.ELEMENTWISE) for op in ELEMENTWISE_OPS},
}
# Data movement and bookkeeping: no arithmetic on floating-point values.
FREE_OPS = frozenset(
    f"aten::{op}"
    for op in (
        "view",
        "reshape",
        "flatten",
        "unflatten",
        "flip",  # interleaved RoPE swaps each pair's two dims
        "view_as",
        "expand",
        "expand_as",
        "permute",
        "transpose",
        "t",
        "contiguous",
        "unsqueeze",
        "squeeze",
        "select",
        "slice",
        "narrow",
        "index",
        "index_select",
        "gather",
        "cat",
        "stack",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "unfold",
        "constant_pad_nd",
        "pad",
        "repeat",
        "repeat_interleave",
        "roll",  # RoPE's half-split layout swaps the two halves
        "topk",
        "scatter",  # a top-k selection written into a mask (DSA's indexer)
        "masked_fill",
        "where",  # a selection between two computed tensors (xIELU)
        "tril",
        "triu",
        "ones",
        "zeros",
        "ones_like",
        "zeros_like",
        "new_zeros",
        "arange",
        "full",
        "full_like",
        "empty",
        "to",
        "type_as",
        "detach",
        "clone",
        "copy_",
        "size",
        "Int",
        "ScalarImplicit",
        "ge",
        "gt",
        "le",
        "lt",
        "eq",
        "ne",
        "bitwise_not",
        "logical_and",  # of two boolean masks (DSA's selection within the causal mask)
        "logical_or",  # of two boolean masks (an encoder's two-sided window)
        "lift_fresh",
        "alias",
        "numel",
        # MoE dispatch: (token, expert) pairs sorted by expert, counted, put back in order
        "sort",
        "argsort",
        "bincount",
        "index_copy",
        "new_empty",
        "empty_like",
    )
)


class _Counter(JitModelAnalysis):
    """fvcore's graph walker with archdb's handles and an explicit list of free ops."""

    def __init__(self, model: nn.Module, inputs: tuple) -> None:
        super().__init__(model, inputs)
        self._ignored_ops = set(FREE_OPS)  # replaces fvcore's silent-ignore list
        self.set_op_handle(**HANDLES)
        self.unsupported_ops_warnings(False)
        self.uncalled_modules_warnings(False)


# --- measurement ---------------------------------------------------------------------------


OP_CLASS = {
    "linear": FlopClass.LINEAR,
    "softmax": FlopClass.SOFTMAX,
    "layer_norm": FlopClass.NORM,
    "rms_norm": FlopClass.NORM,
    "embedding": FlopClass.EMBEDDING,
}


@dataclass(frozen=True)
class FlopMeasurement:
    """FLOPs of one forward pass of a toy, as fvcore traced it."""

    seq_len: int
    by_class: dict[str, int]  # per sequence
    by_operator: dict[str, int]  # per sequence
    convention: str = field(default=cv.FLOP_CONVENTION)
    attention_convention: str = field(default=cv.ATTENTION_CONVENTION)

    @property
    def total(self) -> int:
        return sum(self.by_class.values())

    @property
    def per_token(self) -> float:
        return self.total / self.seq_len


def route_to_real_experts(model: nn.Module) -> str | None:
    """Zero-computation experts (LongCat-Flash) make the experts' FLOPs depend on routing.
    The formula counts the most a token runs, every top-k slot a real expert: route the
    model so (the zero experts' correction bias at -1e9) for a like-for-like fvcore check,
    and say so; None when the model has no zero experts."""
    from archdb.parts import moe as moe_part

    MoE = moe_part.modules().MoE

    routed = None
    for moe in (m for m in model.modules() if isinstance(m, MoE)):
        zero = moe.experts.zero_experts
        if zero:
            assert moe.router.correction_bias is not None
            real = moe.experts.up.shape[0]
            moe.router.correction_bias[real:] = -1e9
            k = moe.experts.archdb_active
            routed = (
                f"{zero} zero-computation experts make the experts' FLOPs depend on routing: "
                f"the formula counts the most a token runs (all {k} of its top-k slots real "
                f"experts); the toy's fvcore trace is routed the same way (the zero experts' "
                f"bias at -1e9), so the two compare like with like. Under uniform routing a "
                f"token would run {k * real / (real + zero):.3g} real experts on average."
            )
    return routed


def measure_flops(model: nn.Module, seq_len: int) -> FlopMeasurement:
    """Trace one forward pass of batch 1 and count every operator (dense kernels)."""
    model.eval()
    inputs = example_inputs(model, seq_len)
    # torch's tracer records the Python call stack of every operation it traces, at a cost
    # that grows with the stack's depth (a caller such as a test runner adds dozens of
    # frames): in a fresh thread the stack holds only the trace's own frames.
    with ThreadPoolExecutor(max_workers=1) as pool:
        per_module, unsupported = pool.submit(_trace_and_count, model, inputs).result()
    if unsupported:
        ops = ", ".join(f"{op} x{n}" for op, n in sorted(unsupported.items()))
        raise UncountedOperatorError(f"operators without a FLOP rule: {ops}")
    return FlopMeasurement(seq_len, _by_class(model, per_module), dict(per_module[""]))


def _trace_and_count(model: nn.Module, inputs: tuple) -> tuple[dict[str, Counter], Counter]:
    """fvcore's counts per module and operator, and the operators without a handle."""
    # The caller's thread-local torch state (grad mode, autocast, a `with torch.device(..)`)
    # does not reach this thread: what the trace needs is set here. The warnings filter is
    # process-wide, as it always was.
    with torch.no_grad(), warnings.catch_warnings():
        # fvcore traces with torch.jit, which torch 2.x marks deprecated; the trace is sound
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="torch.jit")
        analysis = _Counter(model, inputs)
        return analysis.by_module_and_operator(), analysis.unsupported_ops()


def _by_class(model: nn.Module, per_module: dict[str, Counter]) -> dict[str, int]:
    """Attribute each module's own operators (its count minus its children's) to a class."""
    names = {m: n for n, m in model.named_modules()}
    out = Counter({c.value: 0 for c in FlopClass})
    for name, module in model.named_modules():
        own = Counter(per_module.get(name, Counter()))
        for child in module.children():
            own.subtract(per_module.get(names[child], Counter()))
        for op, n in own.items():
            if n:
                out[_op_class(op, module, model, names)] += n
    return dict(out)


def _op_class(op: str, module: nn.Module, model: nn.Module, names: dict) -> str:
    if op in OP_CLASS:
        return OP_CLASS[op].value
    owner_name = names[module]
    while True:
        declared = getattr(module, "flop_class", None)
        if declared is not None:
            return FlopClass(declared).value
        if not owner_name:
            return FlopClass.ELEMENTWISE.value
        owner_name = owner_name.rpartition(".")[0]
        module = model.get_submodule(owner_name)
