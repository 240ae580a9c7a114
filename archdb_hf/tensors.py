"""A transformers-format checkpoint's tensors, and where each archdb tensor comes from.

``Checkpoint`` reads a directory (``model.safetensors`` or the shards an index lists) with
bounded reads; ``Source`` says how one archdb tensor is made of checkpoint tensors (cut,
transposed, stacked per expert, joined); a family's ``Names`` is its table of sources.
The families declare their tables from the pieces here; loading a model by its family
(``archdb_hf.weights``) sits above them.

Only the ``safetensors`` package is needed (no transformers).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    ``transpose`` reads Conv1D's (in, out) layout (fused experts, stored (experts, out, in)
    or with their rows stacked (experts x out, in): either layout, by shape).
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


def q_rows(d: Dims) -> tuple[int, int]:
    return 0, d.n_heads * d.head_dim


def k_rows(d: Dims) -> tuple[int, int]:
    q = d.n_heads * d.head_dim
    return q, q + d.n_kv_heads * d.head_dim


def v_rows(d: Dims) -> tuple[int, int]:
    q, kv = d.n_heads * d.head_dim, d.n_kv_heads * d.head_dim
    return q + kv, q + 2 * kv


def first_ff(d: Dims) -> tuple[int, int]:
    return 0, d.d_ff


def second_ff(d: Dims) -> tuple[int, int]:
    return d.d_ff, 2 * d.d_ff


def first_expert_ff(d: Dims) -> tuple[int, int]:
    return 0, d.expert_d_ff


def second_expert_ff(d: Dims) -> tuple[int, int]:
    return d.expert_d_ff, 2 * d.expert_d_ff


def fused_experts(router: str, experts: str) -> dict[str, Source]:
    """A router and fused experts (gate_up_proj holding each expert's gate then up,
    down_proj), stored (experts, in, out), as Qwen3-VL-MoE releases them and transformers
    saves Llama 4's, or (experts, out, in), as it saves Qwen3-VL-MoE's: either layout is read,
    by shape, as transformers' loader reads them."""
    gate_up = f"{experts}.gate_up_proj"
    return {
        "mlp.sublayer.router.proj.weight": Source(f"{router}.weight"),
        "mlp.sublayer.experts.gate": Source(
            gate_up, cut=first_expert_ff, experts=True, transpose=True
        ),
        "mlp.sublayer.experts.up": Source(
            gate_up, cut=second_expert_ff, experts=True, transpose=True
        ),
        "mlp.sublayer.experts.down": Source(f"{experts}.down_proj", experts=True, transpose=True),
    }


def renamed(modules: Mapping[str, str]) -> dict[str, Source]:
    """Each archdb module's weight and bias, read from the family's module of that name
    (``modules``: archdb's -> the checkpoint's); a bias the model lacks is never read."""
    return {
        f"{ours}.{t}": Source(f"{theirs}.{t}")
        for ours, theirs in modules.items()
        for t in ("weight", "bias")
    }


def llama_layer(norms: dict[str, str], mlp: str = "mlp") -> dict[str, Source]:
    """A Llama-style layer: separate projections, norms named per family."""
    modules = {f"attn.sublayer.{p}": f"self_attn.{p}_proj" for p in "qkvo"}
    modules |= {f"mlp.sublayer.{p}": f"{mlp}.{p}_proj" for p in ("gate", "up", "down")}
    layer = renamed(modules | norms)
    for qk in ("q", "k"):  # per-head norms are a Norm; OLMo 2's full norms wrap one
        layer[f"attn.sublayer.qk_norm.{qk}_norm.weight"] = Source(f"self_attn.{qk}_norm.weight")
        layer[f"attn.sublayer.qk_norm.{qk}_norm.norm.weight"] = Source(
            f"self_attn.{qk}_norm.weight"
        )
    return layer


def top_names(
    embed: str, final_norm: str = "", head: str = "lm_head.weight", head_bias: str = ""
) -> dict[str, Source]:
    """The top-level tensors of most checkpoints: the embedding table, the final norm's
    weight and bias (``final_norm``: their module), the output head and its bias."""
    top = {"embed.table.weight": Source(embed), "head.lm_head.weight": Source(head)}
    if final_norm:
        top |= renamed({"decoder.final_norm": final_norm})
    if head_bias:
        top["head.lm_head.bias"] = Source(head_bias)
    return top


PRE_NORMS = {"attn.before": "input_layernorm", "mlp.before": "post_attention_layernorm"}
LLAMA_TOP = top_names("model.embed_tokens.weight", "model.norm")  # the bias: Nemotron's


def moe_names(router: str, experts: str, gate: str, up: str, down: str) -> dict[str, Source]:
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


def qwen3_moe_names() -> Names:
    layer = llama_layer(PRE_NORMS)
    layer |= moe_names("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def parallel_names(
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
    modules = {"before_attn": norm}
    modules |= {f"attn.{ours}": f"{attn}.{theirs}" for ours, theirs in projections.items()}
    modules |= {f"mlp.{ours}": theirs for ours, theirs in mlp.items()}
    return Names(top, renamed(modules), prefix=prefix, tied_head=tied_head)


QKVO = {"q": "q_proj", "k": "k_proj", "v": "v_proj"}


# --- shared by several families -----------------------------------------------------------

QKV_CUTS = (("q", q_rows), ("k", k_rows), ("v", v_rows))  # a fused [q, k, v] projection's rows


def llama_with(layer: dict[str, Source], **names: Any) -> Names:
    """Llama's names (its pre-norms, a tied head) with the family's ``layer`` tensors added
    or renamed, and ``names``' other fields (a multimodal release's layout)."""
    return Names(LLAMA_TOP, llama_layer(PRE_NORMS) | layer, tied_head=("lm_head.weight",), **names)
