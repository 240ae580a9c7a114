"""Loading a transformers-format checkpoint into a built model.

A checkpoint directory holds ``model.safetensors``, or shards listed by
``model.safetensors.index.json``. Which checkpoint tensor fills which archdb parameter is
one table per ``model_type`` (its family spec's ``names``): fused projections (GPT-2's c_attn,
GPT-NeoX's query_key_value, Phi-3's qkv_proj and gate_up_proj) are cut into archdb's
separate q, k, v (gate, up) rows; GPT-2's Conv1D weights are transposed; per-expert MoE
weights are stacked into archdb's (experts, in, out) tensors (gpt-oss's are stored so,
gate and up interleaved column by column, and are split by stride); a tied head reads the
embedding. Every archdb tensor must be filled and every checkpoint tensor used, with
the same shape: anything else is a ``WeightsError`` naming the tensor, so nothing is
silently left at its random initial value. So is a tensor the safetensors library cannot
read (a shard that lacks a tensor its index names, a damaged file): the error names the
tensor and the file. A floating-point tensor holding NaN or an infinity is refused, not
loaded with a warning: such a checkpoint computes NaN logits, and a warning scrolled away
would leave a model that looks loaded.

Only the ``safetensors`` package is needed (no transformers).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from archdb_hf.tensors import (
    Checkpoint,
    Dims,
    Names,
    Source,
    WeightsError,
)

if TYPE_CHECKING:
    import torch
    from torch import nn


def _names_of(model_type: str) -> Callable[[], Names] | None:
    from archdb_hf.families.registry import SPECS

    spec = SPECS.get(model_type)
    return spec.names if spec is not None else None


def supported_model_types() -> list[str]:
    from archdb_hf.families.registry import SPECS

    return sorted(m for m, spec in SPECS.items() if spec.names is not None)


# --- loading ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    """What a load filled: archdb tensors, checkpoint tensors read, and their elements."""

    directory: Path
    model_type: str
    tensors: int  # archdb tensors filled
    checkpoint_tensors: int
    elements: int


def checkpoint_model_type(directory: Path | str) -> str:
    """The model_type of a checkpoint directory's config.json (its text_config's for
    multimodal wrappers)."""
    from archdb_hf.draft import HFImportError, read_config

    try:
        config = read_config(Path(directory) / "config.json")
    except HFImportError as exc:
        raise WeightsError(str(exc)) from None
    text = config.get("text_config")
    model_type = (text if isinstance(text, dict) else config).get("model_type")
    from archdb_hf.families.registry import ALIASES

    return ALIASES.get(str(model_type), str(model_type))


def load_weights(
    model: nn.Module, directory: Checkpoint | Path | str, model_type: str | None = None
) -> Loaded:
    """Fill every parameter of ``model`` from the checkpoint in ``directory``.

    ``model_type`` defaults to the directory's config.json. Raises WeightsError naming
    the first missing, unexpected or mis-shaped tensor; the model is changed only when
    every tensor fits.
    """
    import torch

    ckpt = directory if isinstance(directory, Checkpoint) else Checkpoint(directory)
    model_type = model_type or checkpoint_model_type(ckpt.directory)
    values = match_weights(model, ckpt, model_type)
    targets = _loadable_tensors(model)
    with torch.no_grad():
        for name, value in values.items():
            param = targets[name]
            if param.is_meta:
                raise WeightsError("the model is on the meta device: build it on a real device")
            param.copy_(value.to(param.dtype))
    return Loaded(
        ckpt.directory,
        model_type,
        len(values),
        len(ckpt.used),
        sum(v.numel() for v in values.values()),
    )


class TensorCheckpoint(Checkpoint):
    """Named tensors already in memory (meta tensors check names and shapes only)."""

    def __init__(self, tensors: dict[str, torch.Tensor], label: str = "<tensors>") -> None:
        self.directory = Path(label)
        self.tensors = tensors
        self.files = dict.fromkeys(tensors, self.directory)
        self.used = set()

    def take(self, name: str) -> torch.Tensor:
        if name not in self.tensors:
            raise WeightsError(f"{self.directory}: the checkpoint has no tensor {name!r}")
        self.used.add(name)
        return self.tensors[name]


def match_weights(model: nn.Module, ckpt: Checkpoint, model_type: str) -> dict[str, torch.Tensor]:
    """Each archdb parameter's value from the checkpoint, every name and shape checked."""

    names_of = _names_of(model_type)
    if names_of is None:
        raise WeightsError(
            f"no weight-name mapping for model_type {model_type!r}; archdb loads "
            f"{', '.join(supported_model_types())}"
        )
    names = names_of()
    if names.of_model is not None:
        names = replace(names, top=names.top | names.of_model(model))
    if names.wrapped or names.outside:
        ckpt = _Unwrapped(ckpt, names)
    dims = _dims(model)
    targets = _loadable_tensors(model)
    values: dict[str, torch.Tensor] = {}
    cuts: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for name, param in targets.items():
        source = _source(names, name)
        if source is None:
            raise WeightsError(
                f"archdb tensor {name} {tuple(param.shape)} has no source in the "
                f"{model_type} name mapping"
            )
        try:
            value = _read(ckpt, source, dims, cuts)
        except (RuntimeError, IndexError, ValueError) as exc:  # a fused tensor of another shape
            raise WeightsError(
                f"archdb {name} is {tuple(param.shape)}; the checkpoint's {_shown(source)} "
                f"cannot give it ({str(exc)[:200]})"
            ) from None
        if tuple(value.shape) != tuple(param.shape):
            raise WeightsError(
                f"shape mismatch: archdb {name} is {tuple(param.shape)}, the checkpoint's "
                f"{_shown(source)} gives {tuple(value.shape)}"
            )
        values[name] = value
    _check_cuts(cuts)
    _check_constants(ckpt, names)
    if names.derived is not None:
        for i in range(len(getattr(getattr(model, "decoder", None), "layers", ()))):
            names.derived(ckpt, names.prefix.format(i=i))
    copies = names.copies(model, ckpt.names()) if names.copies is not None else {}
    _check_copies(ckpt, copies)
    unread = names.unread(model, ckpt.names()) if names.unread is not None else set()
    unused = [
        n
        for n in ckpt.names()
        if n not in ckpt.used
        and n not in copies
        and n not in unread
        and not _tied_copy(n, names, model)
    ]
    if unused:
        more = f" (and {len(unused) - 1} more)" if len(unused) > 1 else ""
        raise WeightsError(
            f"unexpected checkpoint tensor {unused[0]!r}{more}: archdb has no place for it"
        )
    return values


class _Unwrapped(Checkpoint):
    """A multimodal release read as its text decoder: wrapped names renamed, the parts
    outside the card (``Names.outside``) left out; reads go to (and are counted by) the
    checkpoint itself."""

    def __init__(self, inner: Checkpoint, names: Names) -> None:
        self.directory, self.inner, self.used = inner.directory, inner, set()
        self.real: dict[str, str] = {}  # the table's name -> the checkpoint's
        for name in inner.names():
            if name.startswith(names.outside):
                continue
            renamed = name
            for theirs, ours in names.wrapped.items():
                if name.startswith(theirs):
                    renamed = ours + name.removeprefix(theirs)
                    break
            if renamed in self.real:
                raise WeightsError(
                    f"{self.directory}: the checkpoint holds both {self.real[renamed]!r} and "
                    f"{name!r}: one model, stored twice"
                )
            self.real[renamed] = name
        self.files = dict.fromkeys(self.real, self.directory)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.inner.shape(self.real[name])

    def take(self, name: str) -> torch.Tensor:
        if name not in self.real:
            raise WeightsError(f"{self.directory}: the checkpoint has no tensor {name!r}")
        self.used.add(name)
        return self.inner.take(self.real[name])


def _check_copies(ckpt: Checkpoint, copies: dict[str, str]) -> None:
    """A repeated tensor must equal the one it repeats (its shape, for meta tensors)."""
    import torch

    for copy, original in copies.items():
        a, b = ckpt.take(copy), ckpt.take(original)
        same = a.shape == b.shape and (a.is_meta or b.is_meta or torch.equal(a, b))
        if not same:
            raise WeightsError(
                f"checkpoint tensor {copy!r} differs from {original!r}, the shared weights "
                "it repeats: archdb holds them once"
            )


def _check_constants(ckpt: Checkpoint, names: Names) -> None:
    """Each checkpoint tensor that stores a constant of the function must hold the value
    archdb computes with (in the tensor's own precision)."""
    if not names.constants:
        return
    import torch

    layer = re.compile("^" + re.escape(names.prefix).replace(re.escape("{i}"), r"\d+") + "(.+)$")
    for name in ckpt.names():
        match = layer.match(name)
        expected = names.constants.get(match.group(1)) if match else None
        if expected is None:
            continue
        value = ckpt.take(name)
        if value.numel() != 1 or float(value) != float(torch.tensor(expected, dtype=value.dtype)):
            raise WeightsError(
                f"checkpoint tensor {name!r} holds {value.flatten()[:2].tolist()}, but archdb's "
                f"function fixes it at {expected:g}"
            )


def _loadable_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter once, under its first name (a tied head is the embedding's), and
    every buffer a checkpoint fills."""
    parameters, buffers = _state_tensors(model)
    return parameters | buffers


def checkpoint_buffers(model: nn.Module) -> dict[str, torch.Tensor]:
    """The persistent buffers: state a checkpoint carries but no gradient trains (a
    router's score-correction bias, Gemma 4's layer scalars); RoPE tables and masks are
    not persistent."""
    return _state_tensors(model)[1]


def _state_tensors(
    model: nn.Module,
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The parameters and the persistent buffers, each tensor under its first name: what
    ``named_parameters()`` and the persistent part of ``named_buffers()`` give, read in one
    walk of the modules (``state_dict``) instead of three (a full-size model has thousands)."""
    from torch import nn

    parameters: dict[str, torch.Tensor] = {}
    buffers: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) not in seen:  # a shared tensor (a tied head) again, under a later name
            seen.add(id(tensor))
            (parameters if isinstance(tensor, nn.Parameter) else buffers)[name] = tensor
    return parameters, buffers


def _tied_copy(name: str, names: Names, model: nn.Module) -> bool:
    """A tied model's checkpoint may still carry the head it shares with the embedding."""
    if name in names.embedding_copies:
        return True
    head = getattr(model, "head", None)
    tied = head is not None and head.lm_head.weight is model.embed.table.weight
    return tied and name in names.tied_head


_LAYER = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.(.+)$")


def _source(names: Names, name: str) -> Source | None:
    if name in names.top:
        return names.top[name]
    match = _LAYER.match(name)
    if not match:
        return None
    stack, i, rest = match.groups()
    layer, prefix = names.layer, names.prefix
    if stack == "encoder":
        layer, prefix = names.encoder_layer, names.encoder_prefix
    if rest not in layer:
        return None
    src = layer[rest]
    prefix = prefix.format(i=i)
    fallback = None if src.fallback is None else prefix + src.fallback
    return replace(
        src,
        name=prefix + src.name,
        joined=tuple(prefix + j for j in src.joined),
        fallback=fallback,
    )


def _check_cuts(cuts: dict[tuple[str, int], list[tuple[int, int, int]]]) -> None:
    """The cuts of a fused tensor tile it: rows left over or cuts that overlap mean the
    card's sizes (heads, widths) are not the checkpoint's, and the cuts would load
    other rows than the model's. (One cut read again, by a shared block's copies, is
    one cut.)"""
    for (name, axis), reads in cuts.items():
        length, expected = reads[0][0], 0
        spans = sorted(set(reads))  # by start: every read of one tensor has its length
        for _, start, stop in spans:
            if start != expected:
                break
            expected = stop
        if expected != length or any(r[0] != length for r in reads):
            shown = ", ".join(f"{start}:{stop}" for _, start, stop in spans)
            raise WeightsError(
                f"the checkpoint's {name} has {length} entries along dimension {axis}, but "
                f"archdb reads {shown} of it: the card's sizes differ from the checkpoint's"
            )


def _cut(value: torch.Tensor, source: Source, dims: Dims, axis: int, cuts: dict) -> torch.Tensor:
    """The rows (axis 0) or columns (axis 1) of a fused tensor that ``source`` names,
    recorded so that ``_check_cuts`` can see the whole tensor is read."""
    start, stop = source.cut(dims)
    cuts.setdefault((source.name, axis), []).append((value.shape[axis], start, stop))
    return value[start:stop] if axis == 0 else value[:, start:stop]


def _stored_in_out(value: torch.Tensor, source: Source, dims: Dims) -> bool:
    """Whether fused experts are stored (experts, in, out) where transformers keeps (experts,
    out, in) (Qwen3-VL-MoE's releases): told by the axis of the expert width, as
    transformers' loader tells (a shape that fits both reads as (experts, out, in))."""
    if source.cut is not None:  # gate and up: two widths of outputs
        width, axis = 2 * dims.expert_d_ff, 1
    else:  # down: a width of inputs
        width, axis = dims.expert_d_ff, 2
    return value.ndim == 3 and value.shape[axis] != width and value.shape[3 - axis] == width


def _read(ckpt: Checkpoint, source: Source, dims: Dims, cuts: dict) -> torch.Tensor:
    import torch

    if source.fallback is not None and not ckpt.has(source.name) and ckpt.has(source.fallback):
        source = replace(source, name=source.fallback, fallback=None)
    if source.experts and "{e}" not in source.name:  # fused (experts, out, in) -> (.., in, out)
        value = ckpt.take(source.name)
        if value.ndim == 2 and dims.n_experts and value.shape[0] % dims.n_experts == 0:
            value = value.reshape(dims.n_experts, -1, value.shape[1])  # stacked rows (DBRX)
        if source.transpose and _stored_in_out(value, source, dims):
            value = value.transpose(1, 2)
        if source.cut is not None:
            value = _cut(value, source, dims, 1, cuts)
        return value.transpose(1, 2).contiguous()
    if source.experts:  # (out, in) per expert -> (experts, in, out)
        parts = [ckpt.take(source.name.replace("{e}", str(e))) for e in range(dims.n_experts)]
        return torch.stack([p.t() for p in parts])
    value = ckpt.take(source.name)
    if source.joined:
        value = torch.cat([value, *(ckpt.take(name) for name in source.joined)])
    if source.interleaved is not None:
        value = value[..., source.interleaved :: 2]
    if source.flatten:
        value = value.flatten()
    if source.roll:
        value = value.roll(source.roll, 0)
    if source.transpose:
        value = value.t()
    if source.per_head is not None and source.cut is not None:
        heads, parts, width = source.per_head(dims)
        start, stop = source.cut(dims)
        grouped = value.reshape(heads, parts, width, *value.shape[1:])
        return grouped[:, start:stop].reshape(heads * (stop - start) * width, *value.shape[1:])
    if source.grouped is not None:  # regrouped first: a cut reads the regrouped rows
        groups, widths = source.grouped(dims)
        if groups == 0 or value.shape[0] != groups * sum(widths):
            return value  # the shape check names the mismatch
        parts = value.reshape(groups, sum(widths), *value.shape[1:]).split(widths, dim=1)
        value = torch.cat([part.reshape(-1, *value.shape[1:]) for part in parts])
    if source.cut is not None:
        value = _cut(value, source, dims, 0, cuts)
    return value.contiguous()


def _shown(source: Source) -> str:
    name = source.name.replace("{e}", "*")
    if source.joined:
        return " + ".join((name, *source.joined)) + " (rows stacked)"
    if source.interleaved is not None:
        return f"{name} (every 2nd column from {source.interleaved})"
    return f"{name} (rows cut)" if source.cut else name


def _dims(model: nn.Module) -> Dims:
    """Widths read off the built model's first attention and MLP."""
    from archdb.parts import attention as attention_part

    HeadAttention = attention_part.modules().HeadAttention
    from archdb.parts import moe as moe_part

    Experts = moe_part.modules().Experts
    from archdb.mixers.gated_deltanet import gated_deltanet_module

    modules = list(model.modules())  # one walk: a full-size model has thousands
    att = next((m for m in modules if isinstance(m, HeadAttention)), None)
    deltanet = gated_deltanet_module()
    gdn = next((m for m in modules if isinstance(m, deltanet)), None)
    experts = next((m for m in modules if isinstance(m, Experts)), None)
    d_ff = 0
    for m in modules:
        gate = getattr(m, "gate", None)
        if hasattr(m, "up") and hasattr(m, "down") and hasattr(gate, "out_features"):
            d_ff = gate.out_features
            break
    return Dims(
        n_heads=att.n_heads if att else 0,
        n_kv_heads=att.n_kv_heads if att else 0,
        head_dim=att.head_dim if att else 0,
        d_ff=d_ff,
        n_experts=experts.up.shape[0] if experts is not None else 0,
        expert_d_ff=experts.up.shape[2] if experts is not None else 0,
        deltanet=(gdn.hk, gdn.hv, gdn.dk, gdn.dv) if gdn is not None else (0, 0, 0, 0),
    )
