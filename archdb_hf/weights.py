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

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from archdb.errors import ArchdbError
from archdb.files import read_bounded

if TYPE_CHECKING:
    import torch
    from torch import nn

MAX_INDEX_BYTES = 64 * 2**20  # an index lists tensor names: a few MB for the largest models


class WeightsError(ArchdbError, ValueError):
    """A checkpoint does not fit the built model (names the tensor), or cannot be read."""


# --- reading a checkpoint directory ----------------------------------------------------


class Checkpoint:
    """The tensors of a safetensors checkpoint, read lazily, remembering which were used."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.files = _tensor_files(self.directory)  # tensor name -> file
        self.used: set[str] = set()
        self._handles: dict[Path, object] = {}

    def names(self) -> list[str]:
        return sorted(self.files)

    def has(self, name: str) -> bool:
        return name in self.files

    def shape(self, name: str) -> tuple[int, ...]:
        try:
            return tuple(self._handle(name).get_slice(name).get_shape())
        except WeightsError:
            raise
        except Exception as exc:  # safetensors' own error: the shard lacks the tensor, ...
            raise self._unreadable(name, exc) from None

    def take(self, name: str) -> torch.Tensor:
        if name not in self.files:
            raise WeightsError(f"{self.directory}: the checkpoint has no tensor {name!r}")
        self.used.add(name)
        try:
            tensor = self._handle(name).get_tensor(name)
        except WeightsError:
            raise
        except Exception as exc:
            raise self._unreadable(name, exc) from None
        if tensor.is_floating_point() and not bool(tensor.isfinite().all()):
            raise WeightsError(
                f"{self.files[name]}: tensor {name!r} holds NaN or infinite values: "
                "refusing to load a broken checkpoint"
            )
        return tensor

    def _unreadable(self, name: str, exc: Exception) -> WeightsError:
        return WeightsError(
            f"{self.files[name]}: cannot read tensor {name!r} (the index names this file; "
            f"{str(exc)[:200]})"
        )

    def _handle(self, name: str):
        from safetensors import safe_open

        path = self.files[name]
        if path not in self._handles:
            try:
                self._handles[path] = safe_open(str(path), framework="pt")
            except Exception as exc:  # safetensors raises its own error types
                raise WeightsError(f"{path}: not a readable safetensors file: {exc}") from None
        return self._handles[path]


def _tensor_files(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        raise WeightsError(f"{directory}: not a directory (give a checkpoint directory)")
    single, index = directory / "model.safetensors", directory / "model.safetensors.index.json"
    for path in (index, single):  # a pipe, a device or a folder there: say so, never open it
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise WeightsError(f"{path}: not a regular file")
    if index.is_file():
        return _sharded(directory, index)
    if single.is_file():
        from safetensors import safe_open

        try:
            with safe_open(str(single), framework="pt") as f:
                return dict.fromkeys(f.keys(), single)
        except Exception as exc:
            raise WeightsError(f"{single}: not a readable safetensors file: {exc}") from None
    raise WeightsError(
        f"{directory}: no model.safetensors or model.safetensors.index.json "
        "(archdb reads transformers' safetensors checkpoints)"
    )


def _sharded(directory: Path, index: Path) -> dict[str, Path]:
    try:
        raw = read_bounded(index, MAX_INDEX_BYTES)  # never waits on a pipe
    except OSError as exc:
        raise WeightsError(f"{index}: cannot read the index: {exc.strerror or exc}") from None
    try:
        weight_map = json.loads(raw.decode("utf-8"))["weight_map"]
    except (ValueError, KeyError, TypeError) as exc:
        raise WeightsError(f"{index}: not a safetensors index ({exc})") from None
    if not isinstance(weight_map, dict):
        raise WeightsError(f"{index}: weight_map must map tensor names to shard files")
    files: dict[str, Path] = {}
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or "/" in shard or "\\" in shard or shard.startswith("."):
            raise WeightsError(f"{index}: tensor {name!r} names a shard outside the directory")
        files[str(name)] = directory / shard
    missing = sorted({p for p in files.values() if not p.is_file()})
    if missing:
        raise WeightsError(f"{index}: shard {missing[0].name} is missing")
    return files


# --- where each archdb tensor comes from -----------------------------------------------


@dataclass(frozen=True)
class Source:
    """Checkpoint tensors and how to make one archdb tensor of them.

    ``name`` is relative to the layer prefix inside a layer; ``{e}`` is an expert, the
    experts' (out, in) weights stacked as (experts, in, out) when ``experts``. ``cut``
    gives the (start, stop) rows of a fused projection, or with ``per_head`` (heads,
    parts, width) the parts each head's rows group into (GPT-NeoX's [q, k, v] per head);
    ``transpose`` reads Conv1D's (in, out) layout.
    """

    name: str
    cut: Callable[[Dims], tuple[int, int]] | None = None
    transpose: bool = False
    per_head: Callable[[Dims], tuple[int, int, int]] | None = None  # (heads, parts, part)
    experts: bool = False
    roll: int = 0  # rows rotated (OPT's position table)
    interleaved: int | None = None  # every 2nd last-dim entry from this one (gpt-oss gate_up)
    flatten: bool = False  # a (1, n) tensor read as (n,) (ERNIE 4.5's correction bias)
    # rows stored per group as [part 0, part 1, ...] of these widths, read back as all
    # groups' part 0, then all groups' part 1, ... (Qwen3-Next's in_proj_qkvz per key head)
    grouped: Callable[[Dims], tuple[int, tuple[int, ...]]] | None = None  # (groups, widths)
    # (applied before cut: Falcon's fused [q..., k, v] per key/value group, then cut to q, k, v)
    joined: tuple[str, ...] = ()  # further tensors whose rows follow name's (Qwen3.5's z)
    fallback: str | None = None  # read when name is absent (T5's wi for a non-gated MLP)


@dataclass(frozen=True)
class Dims:
    """Widths a fused tensor is cut by."""

    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    n_experts: int = 0
    expert_d_ff: int = 0
    # a Gated DeltaNet's key heads, value heads, key and value head widths
    deltanet: tuple[int, int, int, int] = (0, 0, 0, 0)


@dataclass(frozen=True)
class Names:
    """One transformers model_type's names: the top-level tensors and a layer's."""

    top: dict[str, Source]  # archdb name -> source
    layer: dict[str, Source]  # archdb name after "decoder.layers.{i}." -> source
    prefix: str = "model.layers.{i}."  # the checkpoint's layer prefix
    tied_head: tuple[str, ...] = ()  # checkpoint names a tied head may carry (unused)
    # layer tensors that hold a constant of the function (xIELU's beta and eps buffers):
    # checked against the value archdb computes with, never loaded
    constants: dict[str, float] = field(default_factory=dict)
    # a multimodal release's layout: its decoder's tensors under another prefix, read as
    # the text model's names (checkpoint prefix -> the prefix the table names) ...
    wrapped: dict[str, str] = field(default_factory=dict)
    # ... and the parts a card does not describe (vision tower, MTP layers): skipped
    outside: tuple[str, ...] = ()
    # a check of the layer tensors that are functions of loaded ones (MiniMax's block
    # decays, from slope_rate): called per layer prefix, it reads (so uses) and checks them
    derived: Callable[[Checkpoint, str], None] | None = None
    # names that depend on the built model, merged into ``top`` (Zamba2's shared blocks
    # are saved under the first layer that invokes each): model -> archdb name -> source
    of_model: Callable[[nn.Module], dict[str, Source]] | None = None
    # checkpoint tensors that repeat another (a shared block saved again under each layer
    # that runs it): (model, checkpoint names) -> copy -> the tensor it must equal
    copies: Callable[[nn.Module, list[str]], dict[str, str]] | None = None
    # an encoder-decoder's encoder layers (archdb names after "encoder.layers.{i}.") and
    # their checkpoint prefix
    encoder_layer: dict[str, Source] = field(default_factory=dict)
    encoder_prefix: str = ""
    # copies of the shared embedding a checkpoint may carry (T5's per-stack embed_tokens)
    embedding_copies: tuple[str, ...] = ()
    # checkpoint tensors no forward pass reads (transformers' LongCat-Flash before 5.25 saved
    # gate and up rows for its zero-computation experts): (model, checkpoint names) -> those names
    unread: Callable[[nn.Module, list[str]], set[str]] | None = None


def _q(d: Dims) -> tuple[int, int]:
    return 0, d.n_heads * d.head_dim


def _k(d: Dims) -> tuple[int, int]:
    q = d.n_heads * d.head_dim
    return q, q + d.n_kv_heads * d.head_dim


def _v(d: Dims) -> tuple[int, int]:
    q, kv = d.n_heads * d.head_dim, d.n_kv_heads * d.head_dim
    return q + kv, q + 2 * kv


def _first_ff(d: Dims) -> tuple[int, int]:
    return 0, d.d_ff


def _second_ff(d: Dims) -> tuple[int, int]:
    return d.d_ff, 2 * d.d_ff


def _first_expert_ff(d: Dims) -> tuple[int, int]:
    return 0, d.expert_d_ff


def _second_expert_ff(d: Dims) -> tuple[int, int]:
    return d.expert_d_ff, 2 * d.expert_d_ff


def _llama_layer(norms: dict[str, str], mlp: str = "mlp") -> dict[str, Source]:
    """A Llama-style layer: separate projections, norms named per family."""
    layer = {
        f"attn.sublayer.{p}.{t}": Source(f"self_attn.{p}_proj.{t}")
        for p in "qkvo"
        for t in ("weight", "bias")
    }
    layer |= {
        f"mlp.sublayer.{p}.{t}": Source(f"{mlp}.{p}_proj.{t}")
        for p in ("gate", "up", "down")
        for t in ("weight", "bias")
    }
    layer |= {
        f"{slot}.{t}": Source(f"{name}.{t}")
        for slot, name in norms.items()
        for t in ("weight", "bias")
    }
    for qk in ("q", "k"):  # per-head norms are a Norm; OLMo 2's full norms wrap one
        layer[f"attn.sublayer.qk_norm.{qk}_norm.weight"] = Source(f"self_attn.{qk}_norm.weight")
        layer[f"attn.sublayer.qk_norm.{qk}_norm.norm.weight"] = Source(
            f"self_attn.{qk}_norm.weight"
        )
    return layer


_PRE = {"attn.before": "input_layernorm", "mlp.before": "post_attention_layernorm"}
_LLAMA_TOP = {
    "embed.table.weight": Source("model.embed_tokens.weight"),
    "decoder.final_norm.weight": Source("model.norm.weight"),
    "decoder.final_norm.bias": Source("model.norm.bias"),  # Nemotron's LayerNorm1P
    "head.lm_head.weight": Source("lm_head.weight"),
}


def _moe(router: str, experts: str, gate: str, up: str, down: str) -> dict[str, Source]:
    """Per-expert checkpoint weights (out, in) stacked as archdb's (experts, in, out)."""
    return {
        "mlp.sublayer.router.proj.weight": Source(f"{router}.weight"),
        # DeepSeek-V3's score-correction bias (a buffer in both models)
        "mlp.sublayer.router.correction_bias": Source(f"{router}.e_score_correction_bias"),
        "mlp.sublayer.experts.gate": Source(f"{experts}.{{e}}.{gate}.weight", experts=True),
        "mlp.sublayer.experts.up": Source(f"{experts}.{{e}}.{up}.weight", experts=True),
        "mlp.sublayer.experts.down": Source(f"{experts}.{{e}}.{down}.weight", experts=True),
        "mlp.sublayer.shared.gate.weight": Source("mlp.shared_experts.gate_proj.weight"),
        "mlp.sublayer.shared.up.weight": Source("mlp.shared_experts.up_proj.weight"),
        "mlp.sublayer.shared.down.weight": Source("mlp.shared_experts.down_proj.weight"),
    }


def _qwen3_moe() -> Names:
    layer = _llama_layer(_PRE)
    layer |= _moe("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _parallel(
    prefix: str,
    norm: str,
    attn: str,
    projections: dict[str, str],
    mlp: dict[str, str],
    top: dict[str, Source],
    tied_head: tuple[str, ...] = (),
) -> Names:
    """A parallel block with one shared norm: x + attn(n(x)) + mlp(n(x)) (GPT-J, Phi-2,
    Command R, Falcon); ``projections`` and ``mlp`` map archdb's names to the family's."""
    layer: dict[str, Source] = {}
    for t in ("weight", "bias"):
        layer[f"before_attn.{t}"] = Source(f"{norm}.{t}")
        for ours, theirs in projections.items():
            layer[f"attn.{ours}.{t}"] = Source(f"{attn}.{theirs}.{t}")
        for ours, theirs in mlp.items():
            layer[f"mlp.{ours}.{t}"] = Source(f"{theirs}.{t}")
    return Names(top, layer, prefix=prefix, tied_head=tied_head)


_QKVO = {"q": "q_proj", "k": "k_proj", "v": "v_proj"}


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
    from archdb_hf.importer import HFImportError, read_config

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
    for name, param in targets.items():
        source = _source(names, name)
        if source is None:
            raise WeightsError(
                f"archdb tensor {name} {tuple(param.shape)} has no source in the "
                f"{model_type} name mapping"
            )
        value = _read(ckpt, source, dims)
        if tuple(value.shape) != tuple(param.shape):
            raise WeightsError(
                f"shape mismatch: archdb {name} is {tuple(param.shape)}, the checkpoint's "
                f"{_shown(source)} gives {tuple(value.shape)}"
            )
        values[name] = value
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


def _read(ckpt: Checkpoint, source: Source, dims: Dims) -> torch.Tensor:
    import torch

    if source.fallback is not None and not ckpt.has(source.name) and ckpt.has(source.fallback):
        source = replace(source, name=source.fallback, fallback=None)
    if source.experts and "{e}" not in source.name:  # fused (experts, out, in) -> (.., in, out)
        value = ckpt.take(source.name)
        if source.cut is not None:
            start, stop = source.cut(dims)
            value = value[:, start:stop]
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
        start, stop = source.cut(dims)
        value = value[start:stop]
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
    from archdb.builder.attention import HeadAttention
    from archdb.builder.moe import Experts
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
