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
silently left at its random initial value.

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
        return tuple(self._handle(name).get_slice(name).get_shape())

    def take(self, name: str) -> torch.Tensor:
        if name not in self.files:
            raise WeightsError(f"{self.directory}: the checkpoint has no tensor {name!r}")
        self.used.add(name)
        return self._handle(name).get_tensor(name)

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
    raw = read_bounded(index, MAX_INDEX_BYTES)
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
    # checkpoint tensors no forward pass reads (transformers' LongCat-Flash saves gate and
    # up rows for its zero-computation experts): (model, checkpoint names) -> those names
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
_SANDWICH = {
    "attn.before": "input_layernorm",
    "attn.branch": "post_attention_layernorm",
    "mlp.before": "pre_feedforward_layernorm",
    "mlp.branch": "post_feedforward_layernorm",
}
_POST_BRANCH = {
    "attn.branch": "post_attention_layernorm",
    "mlp.branch": "post_feedforward_layernorm",
}
_LLAMA_TOP = {
    "embed.table.weight": Source("model.embed_tokens.weight"),
    "decoder.final_norm.weight": Source("model.norm.weight"),
    "decoder.final_norm.bias": Source("model.norm.bias"),  # Nemotron's LayerNorm1P
    "head.lm_head.weight": Source("lm_head.weight"),
}


def _llama(norms: dict[str, str] = _PRE) -> Names:
    return Names(_LLAMA_TOP, _llama_layer(norms), tied_head=("lm_head.weight",))


def _phi3() -> Names:
    layer = _llama_layer(_PRE)
    layer |= {
        f"attn.sublayer.{p}.weight": Source("self_attn.qkv_proj.weight", cut=cut)
        for p, cut in (("q", _q), ("k", _k), ("v", _v))
    }
    layer["mlp.sublayer.gate.weight"] = Source("mlp.gate_up_proj.weight", cut=_first_ff)
    layer["mlp.sublayer.up.weight"] = Source("mlp.gate_up_proj.weight", cut=_second_ff)
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


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


def _mixtral() -> Names:
    layer = _llama_layer(_PRE)
    layer |= _moe("block_sparse_moe.gate", "block_sparse_moe.experts", "w1", "w3", "w2")
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _qwen3_moe() -> Names:
    layer = _llama_layer(_PRE)
    layer |= _moe("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _granitemoe() -> Names:
    """GraniteMoe: the experts' gate and up fused in one stacked input_linear."""
    layer = _llama_layer(_PRE)
    moe = "block_sparse_moe"
    layer |= {
        "mlp.sublayer.router.proj.weight": Source(f"{moe}.router.layer.weight"),
        "mlp.sublayer.experts.gate": Source(
            f"{moe}.input_linear.weight", cut=_first_expert_ff, experts=True
        ),
        "mlp.sublayer.experts.up": Source(
            f"{moe}.input_linear.weight", cut=_second_expert_ff, experts=True
        ),
        "mlp.sublayer.experts.down": Source(f"{moe}.output_linear.weight", experts=True),
    }
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _minimax_m2() -> Names:
    """Mixtral's names (saved per expert as w1, w3, w2); the correction bias sits on the
    MoE block, not its gate."""
    names = _mixtral()
    bias = Source("block_sparse_moe.e_score_correction_bias")
    names.layer["mlp.sublayer.router.correction_bias"] = bias
    return names


def _minimax() -> Names:
    """MiniMax-01: Mixtral's names (transformers saves the experts per expert as w1, w3,
    w2); lightning layers' self_attn.qkv_proj, output_gate, out_proj, norm and their decay
    rates slope_rate. The block decays transformers also stores (query_decay, key_decay,
    diagonal_decay) are functions of slope_rate and block_size: checked, not loaded."""
    names = _mixtral()
    # softmax attention with a beta factor is wrapped in a ScaledMixer (its tensors under
    # .inner): the same checkpoint names
    names.layer.update(
        {
            "attn.sublayer.inner." + rest: source
            for name, source in list(names.layer.items())
            if (rest := name.removeprefix("attn.sublayer.")) != name
        }
    )
    ours, theirs = "attn.sublayer.", "self_attn."
    names.layer.update(
        {
            ours + "qkv_proj.weight": Source(theirs + "qkv_proj.weight"),
            ours + "output_gate.weight": Source(theirs + "output_gate.weight"),
            ours + "out_proj.weight": Source(theirs + "out_proj.weight"),
            ours + "norm_weight": Source(theirs + "norm.weight"),
            ours + "slope_rate": Source(theirs + "slope_rate"),
        }
    )
    return replace(names, derived=_minimax_block_decays)


def _minimax_block_decays(ckpt: Checkpoint, layer_prefix: str) -> None:
    """transformers' MiniMaxLightningAttention stores its block decays beside slope_rate:
    each must equal what its decay_factors computes from that slope_rate."""
    import torch

    if not ckpt.has(layer_prefix + "self_attn.slope_rate"):
        return  # a softmax attention layer
    slope = ckpt.take(layer_prefix + "self_attn.slope_rate").float()
    stored = {
        n: layer_prefix + "self_attn." + n for n in ("query_decay", "key_decay", "diagonal_decay")
    }
    block = ckpt.shape(stored["query_decay"])[1]
    steps = torch.arange(block, dtype=torch.float32) + 1
    gaps = steps[:, None] - steps[None, :]
    expected = {
        "query_decay": torch.exp(-slope * steps[:, None]),
        "key_decay": torch.exp(-slope * (block - steps[:, None])),
        "diagonal_decay": torch.exp(
            torch.where(gaps >= 0, -slope[None] * gaps, torch.tensor(float("-inf")))
        ),
    }
    for name, full in stored.items():
        value = ckpt.take(full).float()
        if value.shape != expected[name].shape or not torch.allclose(
            value, expected[name], rtol=1e-3, atol=1e-6
        ):
            raise WeightsError(
                f"checkpoint tensor {full!r} is not the block decay its slope_rate gives"
            )


def _ernie4_5_moe() -> Names:
    """Qwen3-MoE's names; the correction bias a (1, experts) tensor in mlp.moe_statics."""
    names = _qwen3_moe()
    bias = Source("mlp.moe_statics.e_score_correction_bias", flatten=True)
    names.layer["mlp.sublayer.router.correction_bias"] = bias
    return names


def _hunyuan_layer() -> dict[str, Source]:
    """Llama's names; the per-head QK norms are query_layernorm and key_layernorm."""
    layer = _llama_layer(_PRE)
    for qk, name in (("q", "query"), ("k", "key")):
        layer[f"attn.sublayer.qk_norm.{qk}_norm.weight"] = Source(
            f"self_attn.{name}_layernorm.weight"
        )
        del layer[f"attn.sublayer.qk_norm.{qk}_norm.norm.weight"]
    return layer


def _hunyuan_v1_dense() -> Names:
    return Names(_LLAMA_TOP, _hunyuan_layer(), tied_head=("lm_head.weight",))


def _hunyuan_v1_moe() -> Names:
    """Saved per expert (transformers' qwen2_moe layout); the router is mlp.gate.wg, the
    shared MLP mlp.shared_mlp."""
    layer = _hunyuan_layer()
    layer |= _moe("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    layer["mlp.sublayer.router.proj.weight"] = Source("mlp.gate.wg.weight")
    for p in ("gate", "up", "down"):
        layer[f"mlp.sublayer.shared.{p}.weight"] = Source(f"mlp.shared_mlp.{p}_proj.weight")
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _gpt2() -> Names:
    def conv(name: str, cut=None) -> Source:  # Conv1D stores (in, out)
        return Source(name, cut=cut, transpose=True)

    def bias(name: str, cut=None) -> Source:
        return Source(name, cut=cut)

    layer = {
        "attn.before.weight": Source("ln_1.weight"),
        "attn.before.bias": Source("ln_1.bias"),
        "mlp.before.weight": Source("ln_2.weight"),
        "mlp.before.bias": Source("ln_2.bias"),
        "attn.sublayer.o.weight": conv("attn.c_proj.weight"),
        "attn.sublayer.o.bias": bias("attn.c_proj.bias"),
        "mlp.sublayer.up.weight": conv("mlp.c_fc.weight"),
        "mlp.sublayer.up.bias": bias("mlp.c_fc.bias"),
        "mlp.sublayer.down.weight": conv("mlp.c_proj.weight"),
        "mlp.sublayer.down.bias": bias("mlp.c_proj.bias"),
    }
    for p, cut in (("q", _q), ("k", _k), ("v", _v)):
        layer[f"attn.sublayer.{p}.weight"] = conv("attn.c_attn.weight", cut)
        layer[f"attn.sublayer.{p}.bias"] = bias("attn.c_attn.bias", cut)
    top = {
        "embed.table.weight": Source("transformer.wte.weight"),
        "positions.table.weight": Source("transformer.wpe.weight"),
        "decoder.final_norm.weight": Source("transformer.ln_f.weight"),
        "decoder.final_norm.bias": Source("transformer.ln_f.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    return Names(top, layer, prefix="transformer.h.{i}.", tied_head=("lm_head.weight",))


def _neox_heads(d: Dims) -> tuple[int, int, int]:
    return d.n_heads, 3, d.head_dim  # rows grouped per head as [q, k, v]


def _gpt_neox() -> Names:
    """Parallel blocks name their norms before_attn/before_mlp and sublayers directly;
    serial ones (use_parallel_residual false) wrap them in residuals."""
    layer: dict[str, Source] = {}
    norms = {"attn": "input_layernorm", "mlp": "post_attention_layernorm"}
    for t in ("weight", "bias"):
        for part, name in norms.items():
            layer[f"before_{part}.{t}"] = layer[f"{part}.before.{t}"] = Source(f"{name}.{t}")
        for where in ("attn", "attn.sublayer"):
            for index, p in enumerate("qkv"):
                layer[f"{where}.{p}.{t}"] = Source(
                    f"attention.query_key_value.{t}",
                    cut=lambda d, i=index: (i, i + 1),
                    per_head=_neox_heads,
                )
            layer[f"{where}.o.{t}"] = Source(f"attention.dense.{t}")
        for where in ("mlp", "mlp.sublayer"):
            layer[f"{where}.up.{t}"] = Source(f"mlp.dense_h_to_4h.{t}")
            layer[f"{where}.down.{t}"] = Source(f"mlp.dense_4h_to_h.{t}")
    top = {
        "embed.table.weight": Source("gpt_neox.embed_in.weight"),
        "decoder.final_norm.weight": Source("gpt_neox.final_layer_norm.weight"),
        "decoder.final_norm.bias": Source("gpt_neox.final_layer_norm.bias"),
        "head.lm_head.weight": Source("embed_out.weight"),
    }
    return Names(top, layer, prefix="gpt_neox.layers.{i}.", tied_head=("embed_out.weight",))


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


def _gptj() -> Names:
    top = {
        "embed.table.weight": Source("transformer.wte.weight"),
        "decoder.final_norm.weight": Source("transformer.ln_f.weight"),
        "decoder.final_norm.bias": Source("transformer.ln_f.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
        "head.lm_head.bias": Source("lm_head.bias"),
    }
    projections = _QKVO | {"o": "out_proj"}
    mlp = {"up": "mlp.fc_in", "down": "mlp.fc_out"}
    return _parallel("transformer.h.{i}.", "ln_1", "attn", projections, mlp, top)


def _phi() -> Names:
    top = {
        "embed.table.weight": Source("model.embed_tokens.weight"),
        "decoder.final_norm.weight": Source("model.final_layernorm.weight"),
        "decoder.final_norm.bias": Source("model.final_layernorm.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
        "head.lm_head.bias": Source("lm_head.bias"),
    }
    projections = _QKVO | {"o": "dense"}
    names = _parallel(
        "model.layers.{i}.", "input_layernorm", "self_attn", projections,
        {"up": "mlp.fc1", "down": "mlp.fc2"}, top,
    )  # fmt: skip
    for qk in ("q", "k"):  # qk_layernorm: one LayerNorm per head, shared by heads
        for t in ("weight", "bias"):
            names.layer[f"attn.qk_norm.{qk}_norm.{t}"] = Source(f"self_attn.{qk}_layernorm.{t}")
    return names


def _cohere() -> Names:
    projections = _QKVO | {"o": "o_proj"}
    mlp = {p: f"mlp.{p}_proj" for p in ("gate", "up", "down")}
    names = _parallel(
        "model.layers.{i}.", "input_layernorm", "self_attn", projections, mlp,
        _LLAMA_TOP, tied_head=("lm_head.weight",),
    )  # fmt: skip
    for qk in ("q", "k"):  # use_qk_norm: a LayerNorm per head with its own scale
        names.layer[f"attn.qk_norm.{qk}_norm.weight"] = Source(f"self_attn.{qk}_norm.weight")
    return names


def _falcon() -> Names:
    top = {
        "embed.table.weight": Source("transformer.word_embeddings.weight"),
        "decoder.final_norm.weight": Source("transformer.ln_f.weight"),
        "decoder.final_norm.bias": Source("transformer.ln_f.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    names = _parallel(
        "transformer.h.{i}.", "input_layernorm", "self_attention", {"o": "dense"},
        {"up": "mlp.dense_h_to_4h", "down": "mlp.dense_4h_to_h"}, top,
        tied_head=("lm_head.weight",),
    )  # fmt: skip
    for p, cut in (("q", _q), ("k", _k), ("v", _v)):  # multi-query: [q heads, k, v]
        for t in ("weight", "bias"):
            names.layer[f"attn.{p}.{t}"] = Source(f"self_attention.query_key_value.{t}", cut=cut)
    return names


def _opt() -> Names:
    """OPT's learned table reserves its first two rows (positions start at row 2): they
    are rotated to the end, so archdb's row p is OPT's row p + 2 (a lossless reorder)."""
    layer = {
        f"attn.sublayer.{p}.{t}": Source(f"self_attn.{theirs}.{t}")
        for p, theirs in (_QKVO | {"o": "out_proj"}).items()
        for t in ("weight", "bias")
    }
    for t in ("weight", "bias"):
        layer[f"attn.before.{t}"] = layer[f"attn.after.{t}"] = Source(f"self_attn_layer_norm.{t}")
        layer[f"mlp.before.{t}"] = layer[f"mlp.after.{t}"] = Source(f"final_layer_norm.{t}")
        layer[f"mlp.sublayer.up.{t}"] = Source(f"fc1.{t}")
        layer[f"mlp.sublayer.down.{t}"] = Source(f"fc2.{t}")
    top = {
        "embed.table.weight": Source("model.decoder.embed_tokens.weight"),
        "positions.table.weight": Source("model.decoder.embed_positions.weight", roll=-2),
        "decoder.final_norm.weight": Source("model.decoder.final_layer_norm.weight"),
        "decoder.final_norm.bias": Source("model.decoder.final_layer_norm.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
        "embed.proj.weight": Source("model.decoder.project_in.weight"),  # OPT-350M
        "head.proj.weight": Source("model.decoder.project_out.weight"),
    }
    return Names(top, layer, prefix="model.decoder.layers.{i}.", tied_head=("lm_head.weight",))


def _deepseek() -> Names:
    """Latent attention (MLA) and DeepSeekMoE's routed and shared experts."""
    layer = _llama_layer(_PRE)
    layer |= _moe("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    attn = {
        "q.0": "q_a_proj",  # with a query bottleneck (q_lora_rank)
        "q.1": "q_a_layernorm",
        "q.2": "q_b_proj",
        "q": "q_proj",  # without one
        "kv_down": "kv_a_proj_with_mqa",
        "kv_norm": "kv_a_layernorm",
        "kv_up": "kv_b_proj",
    }
    for ours, theirs in attn.items():
        for t in ("weight", "bias"):
            layer[f"attn.sublayer.{ours}.{t}"] = Source(f"self_attn.{theirs}.{t}")
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _dsa() -> Names:
    """DeepSeek-V3's names plus each layer's lightning indexer (DeepSeek-V3.2, GLM-5)."""
    names = _deepseek()
    for part in ("wq_b.weight", "wk.weight", "k_norm.weight", "k_norm.bias", "weights_proj.weight"):
        names.layer[f"attn.sublayer.indexer.{part}"] = Source(f"self_attn.indexer.{part}")
    return names


def _gpt_oss() -> Names:
    """Sinks per layer; a biased router; experts fused as (experts, in, out) tensors with
    gate and up interleaved column by column (gate_up[..., ::2], gate_up[..., 1::2])."""
    layer = _llama_layer(_PRE)
    layer["attn.sublayer.kernel.sinks"] = Source("self_attn.sinks")
    experts = "mlp.experts."
    layer |= {
        "mlp.sublayer.router.proj.weight": Source("mlp.router.weight"),
        "mlp.sublayer.router.proj.bias": Source("mlp.router.bias"),
        "mlp.sublayer.experts.gate": Source(experts + "gate_up_proj", interleaved=0),
        "mlp.sublayer.experts.up": Source(experts + "gate_up_proj", interleaved=1),
        "mlp.sublayer.experts.gate_bias": Source(experts + "gate_up_proj_bias", interleaved=0),
        "mlp.sublayer.experts.up_bias": Source(experts + "gate_up_proj_bias", interleaved=1),
        "mlp.sublayer.experts.down": Source(experts + "down_proj"),
        "mlp.sublayer.experts.down_bias": Source(experts + "down_proj_bias"),
    }
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _apertus() -> Names:
    """Llama's names with Apertus's norm names; the xIELU's learned scalars, and its beta
    and eps saved as buffers (constants of the function: checked, not loaded)."""
    from archdb.plan.mlp import XIELU_RULE

    names = _llama({"attn.before": "attention_layernorm", "mlp.before": "feedforward_layernorm"})
    for name, _ in XIELU_RULE.initial:
        names.layer[f"mlp.sublayer.act.{name}"] = Source(f"mlp.act_fn.{name}")
    names.constants.update({"mlp.act_fn.beta": XIELU_RULE.beta, "mlp.act_fn.eps": XIELU_RULE.eps})
    return names


_MAMBA2_MIXER = ("in_proj", "conv1d", "out_proj")


def _mamba2_mixer(theirs: str) -> dict[str, Source]:
    """A Mamba-2 mixer (archdb's sits in the attention slot) as transformers names it:
    in_proj fused as [z, x, B, C, dt] rows in both; conv1d (channels, 1, kernel)."""
    layer = {
        f"attn.sublayer.{p}.{t}": Source(f"{theirs}.{p}.{t}")
        for p in _MAMBA2_MIXER
        for t in ("weight", "bias")
    }
    layer |= {f"attn.sublayer.{p}": Source(f"{theirs}.{p}") for p in ("dt_bias", "A_log", "D")}
    layer["attn.sublayer.norm_weight"] = Source(f"{theirs}.norm.weight")  # grouped, gated
    return layer


def _mamba2() -> Names:
    top = {
        "embed.table.weight": Source("backbone.embeddings.weight"),
        "decoder.final_norm.weight": Source("backbone.norm_f.weight"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    layer = {"attn.before.weight": Source("norm.weight")} | _mamba2_mixer("mixer")
    return Names(top, layer, prefix="backbone.layers.{i}.", tied_head=("lm_head.weight",))


def _bamba() -> Names:
    """Llama-style attention layers, Mamba-2 layers (``mamba.``), an MLP after each."""
    names = _llama({"attn.before": "input_layernorm", "mlp.before": "pre_ff_layernorm"})
    names.layer.update(
        {
            f"mlp.sublayer.{p}.{t}": Source(f"feed_forward.{p}_proj.{t}")
            for p in ("gate", "up", "down")
            for t in ("weight", "bias")
        }
    )
    names.layer.update(_mamba2_mixer("mamba"))
    top = _LLAMA_TOP | {"decoder.final_norm.weight": Source("model.final_layernorm.weight")}
    return replace(names, top=top)  # _LLAMA_TOP is shared: never changed in place


def _zamba2() -> Names:
    """Mamba-2 layers (``mamba.``; a hybrid layer's under ``mamba_decoder.``, beside its
    linear and the shared block it runs): see ``_zamba2_shared``."""
    top = _LLAMA_TOP | {"decoder.final_norm.weight": Source("model.final_layernorm.weight")}
    layer = {"attn.before.weight": Source("input_layernorm.weight")} | _mamba2_mixer("mamba")
    return Names(
        top,
        layer,
        tied_head=("lm_head.weight",),
        of_model=_zamba2_shared,
        copies=_zamba2_copies,
    )


_ZAMBA2_SHARED = re.compile(r"^model\.layers\.(\d+)\.shared_transformer\.(.+)$")


def _zamba2_copies(model: nn.Module, names: list[str]) -> dict[str, str]:
    """A checkpoint may hold each shared block again under every later hybrid layer that
    runs it (transformers' state_dict does; save_pretrained drops the tied copies)."""
    shared = getattr(model.decoder, "shared", None)
    if shared is None:
        return {}
    hybrid = sorted(shared.at, key=shared.at.__getitem__)
    n = len(shared.blocks)
    first = {layer: hybrid[i % n] for i, layer in enumerate(hybrid) if i >= n}
    copies = {}
    for name in names:
        match = _ZAMBA2_SHARED.match(name)
        if match and int(match.group(1)) in first:
            layer, rest = int(match.group(1)), match.group(2)
            copies[name] = f"model.layers.{first[layer]}.shared_transformer.{rest}"
    return copies


def _zamba2_shared(model: nn.Module) -> dict[str, Source]:
    """transformers saves shared block b once, under the first hybrid layer that runs it
    (the b-th), with every adapter of the invocations it serves (adapter list index = the
    invocation); each hybrid layer keeps its own linear and Mamba-2 layer."""
    shared = getattr(model.decoder, "shared", None)
    if shared is None:
        return {}
    hybrid = sorted(shared.at, key=shared.at.__getitem__)  # invocation order
    n = len(shared.blocks)
    out: dict[str, Source] = {}
    for layer in hybrid:
        theirs = f"model.layers.{layer}.mamba_decoder."
        out[f"decoder.layers.{layer}.attn.before.weight"] = Source(
            theirs + "input_layernorm.weight"
        )
        for ours, src in _mamba2_mixer("mamba").items():
            out[f"decoder.layers.{layer}.{ours}"] = replace(src, name=theirs + src.name)
    for b in range(n):
        theirs, ours = (
            f"model.layers.{hybrid[b]}.shared_transformer.",
            f"decoder.shared.blocks.{b}.",
        )
        out[ours + "input_norm.weight"] = Source(theirs + "input_layernorm.weight")
        out[ours + "mlp_norm.weight"] = Source(theirs + "pre_ff_layernorm.weight")
        for p in "qkvo":
            out[ours + f"attention.{p}.weight"] = Source(theirs + f"self_attn.{p}_proj.weight")
        for t in ("weight", "bias"):  # add_bias_linear: the MLP's biases
            fused = theirs + f"feed_forward.gate_up_proj.{t}"
            out[ours + f"mlp.gate.{t}"] = Source(fused, cut=_first_ff)
            out[ours + f"mlp.up.{t}"] = Source(fused, cut=_second_ff)
            out[ours + f"mlp.down.{t}"] = Source(theirs + f"feed_forward.down_proj.{t}")
    for i, layer in enumerate(hybrid):
        block, ours = (
            f"model.layers.{hybrid[i % n]}.shared_transformer.",
            f"decoder.shared.invocations.{i}.",
        )
        adapters = {f"{p}_adapter": f"self_attn.linear_{p}_adapter_list.{i}" for p in "qkv"}
        adapters["gate_up_adapter"] = f"feed_forward.gate_up_proj_adapter_list.{i}"
        for name, theirs in adapters.items():
            out[ours + f"{name}.down.weight"] = Source(block + theirs + ".0.weight")
            out[ours + f"{name}.up.weight"] = Source(block + theirs + ".1.weight")
        out[ours + "proj.weight"] = Source(f"model.layers.{layer}.linear.weight")
    return out


def _qkvz_groups(d: Dims) -> tuple[int, tuple[int, ...]]:
    hk, hv, dk, dv = d.deltanet
    return hk, (dk, dk, hv // hk * dv, hv // hk * dv)  # per key head: q, k, its v and z


def _ba_groups(d: Dims) -> tuple[int, tuple[int, ...]]:
    hk, hv, _, _ = d.deltanet
    return hk, (hv // hk, hv // hk)  # per key head: its value heads' b, then a


def _qwen3_next() -> Names:
    """Gated attention (q_proj rows per head [query, gate], as archdb's), Gated DeltaNet
    (``linear_attn.``: in_proj_qkvz and in_proj_ba grouped per key head in the checkpoint,
    per part in archdb), MoE with a sigmoid-gated shared expert."""
    layer = _llama_layer(_PRE)
    layer |= _moe("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    layer |= {
        f"mlp.sublayer.shared.{p}.weight": Source(f"mlp.shared_expert.{p}_proj.weight")
        for p in ("gate", "up", "down")
    }
    layer["mlp.sublayer.shared_gate.weight"] = Source("mlp.shared_expert_gate.weight")
    ours, theirs = "attn.sublayer.", "linear_attn."
    layer |= {
        ours + "in_proj_qkvz.weight": Source(theirs + "in_proj_qkvz.weight", grouped=_qkvz_groups),
        ours + "in_proj_ba.weight": Source(theirs + "in_proj_ba.weight", grouped=_ba_groups),
        ours + "conv1d.weight": Source(theirs + "conv1d.weight"),  # channels [q, k, v]: as ours
        ours + "norm_weight": Source(theirs + "norm.weight"),
    }
    layer |= {ours + p: Source(theirs + p) for p in ("out_proj.weight", "dt_bias", "A_log")}
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _qwen3_5_deltanet() -> dict[str, Source]:
    """Qwen3.5's Gated DeltaNet: in_proj_qkv and in_proj_z (in_proj_b and in_proj_a) are
    separate tensors, each per part, whose rows stack into archdb's fused projections."""
    ours, theirs = "attn.sublayer.", "linear_attn."
    layer = {
        ours + "in_proj_qkvz.weight": Source(
            theirs + "in_proj_qkv.weight", joined=(theirs + "in_proj_z.weight",)
        ),
        ours + "in_proj_ba.weight": Source(
            theirs + "in_proj_b.weight", joined=(theirs + "in_proj_a.weight",)
        ),
        ours + "conv1d.weight": Source(theirs + "conv1d.weight"),
        ours + "norm_weight": Source(theirs + "norm.weight"),
    }
    return layer | {ours + p: Source(theirs + p) for p in ("out_proj.weight", "dt_bias", "A_log")}


def _qwen3_5_text() -> Names:
    """Qwen3.5 (dense): Qwen3-Next's gated attention, its own DeltaNet names, Llama's MLP."""
    layer = _llama_layer(_PRE) | _qwen3_5_deltanet()
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",), **_QWEN3_5_RELEASE)


def _qwen3_5_moe_text() -> Names:
    """Qwen3.5 MoE: Qwen3-Next's experts and gated shared expert, Qwen3.5's DeltaNet."""
    names = _qwen3_next()
    names.layer.update(_qwen3_5_deltanet())  # replaces Qwen3-Next's grouped projections
    return replace(names, **_QWEN3_5_RELEASE)


# Qwen3.5's released checkpoints (Qwen3_5ForConditionalGeneration): the decoder under
# model.language_model., the vision tower under model.visual., the MTP layer under mtp.
_QWEN3_5_RELEASE = {
    "wrapped": {"model.language_model.": "model."},
    "outside": ("model.visual.", "mtp."),
}


def _olmo() -> Names:  # non-parametric LayerNorms: no norm tensors
    return _llama({})


def _gemma4() -> Names:
    """Sandwich norms, the layer scalar; 26B-A4B: the dense MLP beside fused experts."""
    layer = _llama_layer(_SANDWICH)
    layer["layer_scalar"] = Source("layer_scalar")
    dense = {"dense_before": "pre_feedforward_layernorm",
             "dense_after": "post_feedforward_layernorm_1",
             "experts_before": "pre_feedforward_layernorm_2",
             "experts_after": "post_feedforward_layernorm_2"}  # fmt: skip
    for ours, theirs in dense.items():
        layer[f"mlp.sublayer.{ours}.weight"] = Source(f"{theirs}.weight")
    for p in ("gate", "up", "down"):
        layer[f"mlp.sublayer.dense.{p}.weight"] = Source(f"mlp.{p}_proj.weight")
    router = {"scale": "router.scale", "per_expert_scale": "router.per_expert_scale",
              "proj.weight": "router.proj.weight"}  # fmt: skip
    for ours, theirs in router.items():
        layer[f"mlp.sublayer.moe.router.{ours}"] = Source(theirs)
    # fused (experts, 2 * d_ff, d) gate and up rows, (experts, d, d_ff) down: archdb's
    # (experts, in, out) is their transpose
    layer["mlp.sublayer.moe.experts.gate"] = Source(
        "experts.gate_up_proj", cut=_first_expert_ff, experts=True
    )
    layer["mlp.sublayer.moe.experts.up"] = Source(
        "experts.gate_up_proj", cut=_second_expert_ff, experts=True
    )
    layer["mlp.sublayer.moe.experts.down"] = Source("experts.down_proj", experts=True)
    top = _LLAMA_TOP | _PER_LAYER_TOP
    return Names(top, layer | _PER_LAYER_GATE, tied_head=("lm_head.weight",))


# Per-layer embeddings (Gemma 3n, Gemma 4 E2B/E4B): the token table, projection and norm
# of archdb's per_layer module, and each layer's gate (in the layer: per_layer.*)
_PER_LAYER_TOP = {
    "per_layer.table.weight": Source("model.embed_tokens_per_layer.weight"),
    "per_layer.proj.weight": Source("model.per_layer_model_projection.weight"),
    "per_layer.norm.weight": Source("model.per_layer_projection_norm.weight"),
}
_PER_LAYER_GATE = {
    "per_layer.gate.weight": Source("per_layer_input_gate.weight"),
    "per_layer.proj.weight": Source("per_layer_projection.weight"),
    "per_layer.norm.weight": Source("post_per_layer_input_norm.weight"),
}


def _gemma3n() -> Names:
    """Gemma 3n: sandwich norms, the per-layer embeddings, AltUp (each layer's router and
    coefficients, the stack's projections in and out) and LAuReL."""
    layer = _llama_layer(_SANDWICH) | _PER_LAYER_GATE
    for name in ("correction_coefs", "prediction_coefs", "modality_router", "router_norm"):
        layer[f"altup.{name}.weight"] = Source(f"altup.{name}.weight")
    layer["altup.correct_output_scale"] = Source("altup.correct_output_scale")
    for ours, theirs in (("left", "linear_left"), ("right", "linear_right"),
                         ("norm", "post_laurel_norm")):  # fmt: skip
        layer[f"laurel.{ours}.weight"] = Source(f"laurel.{theirs}.weight")
    top = _LLAMA_TOP | _PER_LAYER_TOP
    for i in range(_MAX_STREAMS):
        top[f"decoder.streams.projections.{i}.weight"] = Source(
            f"model.altup_projections.{i}.weight"
        )
        top[f"decoder.streams.unembed.{i}.weight"] = Source(
            f"model.altup_unembed_projections.{i}.weight"
        )
    return Names(top, layer, tied_head=("lm_head.weight",), **_GEMMA3N_RELEASE)


_MAX_STREAMS = 64  # AltUp projections named (one fewer than the streams; Gemma 3n: 3)
# Gemma 3n's released checkpoints (Gemma3nForConditionalGeneration): the decoder under
# model.language_model., the vision and audio towers and their embedders outside the card
_GEMMA3N_RELEASE = {
    "wrapped": {"model.language_model.": "model."},
    "outside": ("model.vision_tower.", "model.audio_tower.", "model.embed_vision.",
                "model.embed_audio."),
}  # fmt: skip


def _lfm2() -> Names:
    """LFM2: short-conv layers (conv.in_proj, conv.conv, conv.out_proj) or attention with
    out_proj and q/k_layernorm; the MLP's w1 (gate), w3 (up), w2 (down); operator_norm and
    ffn_norm; the final norm is called embedding_norm."""
    layer = {
        f"attn.sublayer.{p}.{t}": Source(f"self_attn.{theirs}.{t}")
        for p, theirs in (_QKVO | {"o": "out_proj"}).items()
        for t in ("weight", "bias")
    }
    for qk in ("q", "k"):
        layer[f"attn.sublayer.qk_norm.{qk}_norm.weight"] = Source(
            f"self_attn.{qk}_layernorm.weight"
        )
    for part in ("in_proj", "conv", "out_proj"):
        for t in ("weight", "bias"):
            layer[f"attn.sublayer.{part}.{t}"] = Source(f"conv.{part}.{t}")
    for ours, theirs in (("gate", "w1"), ("up", "w3"), ("down", "w2")):
        layer[f"mlp.sublayer.{ours}.weight"] = Source(f"feed_forward.{theirs}.weight")
    layer["attn.before.weight"] = Source("operator_norm.weight")
    layer["mlp.before.weight"] = Source("ffn_norm.weight")
    top = {
        "embed.table.weight": Source("model.embed_tokens.weight"),
        "decoder.final_norm.weight": Source("model.embedding_norm.weight"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    return Names(top, layer, tied_head=("lm_head.weight",))


def _lfm2_moe() -> Names:
    """LFM2-MoE: LFM2's names; in MoE layers feed_forward holds the router (gate), its
    expert bias, and per-expert w1 (gate), w3 (up), w2 (down), as released checkpoints
    store them."""
    names = _lfm2()
    ff = "feed_forward"
    moe = _moe(f"{ff}.gate", f"{ff}.experts", "w1", "w3", "w2")
    moe["mlp.sublayer.router.correction_bias"] = Source(f"{ff}.expert_bias")
    names.layer.update(moe)
    return names


def _nemotron_h() -> Names:
    """One pre-normed sublayer a layer, each transformers' "mixer", saved under NVIDIA's
    "backbone." names: archdb keeps the norm before its mixer (Mamba-2, attention) or its
    MLP (the mlp entries)."""
    top = {
        "embed.table.weight": Source("backbone.embeddings.weight"),
        "decoder.final_norm.weight": Source("backbone.norm_f.weight"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    layer = {
        "attn.before.weight": Source("norm.weight"),
        "mlp.before.weight": Source("norm.weight"),
    }
    for t in ("weight", "bias"):
        layer |= {f"attn.sublayer.{p}.{t}": Source(f"mixer.{p}_proj.{t}") for p in "qkvo"}
        layer |= {f"mlp.sublayer.{p}.{t}": Source(f"mixer.{p}_proj.{t}") for p in ("up", "down")}
        layer |= {
            f"attn.sublayer.{p}.{t}": Source(f"mixer.{p}.{t}")
            for p in ("in_proj", "conv1d", "out_proj")
        }
    layer |= {f"attn.sublayer.{p}": Source(f"mixer.{p}") for p in ("dt_bias", "A_log", "D")}
    layer["attn.sublayer.norm_weight"] = Source("mixer.norm.weight")
    # Nemotron 3's MoE layers: non-gated experts and one shared expert, V3's router
    layer |= _moe("mixer.gate", "mixer.experts", "gate_proj", "up_proj", "down_proj")
    for p in ("up", "down"):
        layer[f"mlp.sublayer.shared.{p}.weight"] = Source(f"mixer.shared_experts.{p}_proj.weight")
    return Names(top, layer, prefix="backbone.layers.{i}.")


def _mamba_mixer(prefix: str) -> dict[str, Source]:
    """A Mamba-1 mixer's tensors (transformers' MambaMixer names under ``prefix``)."""
    layer = {
        f"attn.sublayer.{p}.{t}": Source(f"{prefix}.{p}.{t}")
        for p in ("in_proj", "conv1d", "x_proj", "dt_proj", "out_proj")
        for t in ("weight", "bias")
    }
    layer |= {f"attn.sublayer.{p}": Source(f"{prefix}.{p}") for p in ("A_log", "D")}
    layer |= {  # Jamba's scaled norms on dt, B and C
        f"attn.sublayer.{x}_norm_weight": Source(f"{prefix}.{x}_layernorm.weight")
        for x in ("dt", "b", "c")
    }
    return layer


def _mamba() -> Names:
    """Mamba and Falcon Mamba: a norm and the mixer per layer under backbone."""
    top = {
        "embed.table.weight": Source("backbone.embeddings.weight"),
        "decoder.final_norm.weight": Source("backbone.norm_f.weight"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    layer = _mamba_mixer("mixer") | {"attn.before.weight": Source("norm.weight")}
    return Names(top, layer, prefix="backbone.layers.{i}.", tied_head=("lm_head.weight",))


def _jamba() -> Names:
    """Jamba: Llama-style attention layers and Mamba layers, each with feed_forward (an
    MLP, or per-expert weights and a router)."""
    norms = {"attn.before": "input_layernorm", "mlp.before": "pre_ff_layernorm"}
    layer = _llama_layer(norms, mlp="feed_forward") | _mamba_mixer("mamba")
    layer |= _moe("feed_forward.router", "feed_forward.experts", "gate_proj", "up_proj",
                  "down_proj")  # fmt: skip
    top = _LLAMA_TOP | {"decoder.final_norm.weight": Source("model.final_layernorm.weight")}
    return Names(top, layer, tied_head=("lm_head.weight",))


# transformers model_type -> its names (one place per family)
def _falcon_h1() -> Names:
    """Falcon-H1: self_attn and mamba side by side (archdb's ParallelMixers), its norms
    input_layernorm and pre_ff_layernorm, its MLP feed_forward; the attention sits one
    module deeper (.inner) when it has input or output factors."""
    layer = _llama_layer(
        {"attn.before": "input_layernorm", "mlp.before": "pre_ff_layernorm"}, "feed_forward"
    )
    for key in [k for k in layer if k.startswith("attn.sublayer.")]:
        rest = key.removeprefix("attn.sublayer.")
        source = layer.pop(key)
        layer[f"attn.sublayer.attention.{rest}"] = source
        layer[f"attn.sublayer.attention.inner.{rest}"] = source
    mamba = {"in_proj.weight": "in_proj.weight", "in_proj.bias": "in_proj.bias",
             "conv1d.weight": "conv1d.weight", "conv1d.bias": "conv1d.bias",
             "dt_bias": "dt_bias", "A_log": "A_log", "D": "D", "norm_weight": "norm.weight",
             "out_proj.weight": "out_proj.weight", "out_proj.bias": "out_proj.bias"}  # fmt: skip
    for ours, theirs in mamba.items():
        layer[f"attn.sublayer.recurrent.{ours}"] = Source(f"mamba.{theirs}")
    top = {
        "embed.table.weight": Source("model.embed_tokens.weight"),
        "decoder.final_norm.weight": Source("model.final_layernorm.weight"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    return Names(top, layer, tied_head=("lm_head.weight",))


def _granitemoehybrid() -> Names:
    """Granite 4.0-H: attention (self_attn) or Mamba-2 (mamba) layers; routed experts
    (GraniteMoe's fused input_linear) beside shared_mlp, whose gate and up are one fused
    input_linear too; with no experts the shared MLP is the layer's MLP."""
    layer = _granitemoehybrid_mlp(_granitemoe().layer)
    mamba = {"in_proj.weight": "in_proj.weight", "in_proj.bias": "in_proj.bias",
             "conv1d.weight": "conv1d.weight", "conv1d.bias": "conv1d.bias",
             "dt_bias": "dt_bias", "A_log": "A_log", "D": "D", "norm_weight": "norm.weight",
             "out_proj.weight": "out_proj.weight", "out_proj.bias": "out_proj.bias"}  # fmt: skip
    for ours, theirs in mamba.items():
        layer[f"attn.sublayer.{ours}"] = Source(f"mamba.{theirs}")
    return Names(_LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _granitemoehybrid_mlp(layer: dict[str, Source]) -> dict[str, Source]:
    shared = "shared_mlp"
    for prefix in ("mlp.sublayer.shared", "mlp.sublayer"):  # beside experts, or alone
        layer[f"{prefix}.gate.weight"] = Source(f"{shared}.input_linear.weight", cut=_first_ff)
        layer[f"{prefix}.up.weight"] = Source(f"{shared}.input_linear.weight", cut=_second_ff)
        layer[f"{prefix}.down.weight"] = Source(f"{shared}.output_linear.weight")
    return layer


def _kimi_linear() -> Names:
    """Kimi Linear as transformers saves it (its load-time renames reversed): MLA layers
    as DeepSeek's; KDA layers with q/k/v convs stored apart (stacked into archdb's one
    conv over [q, k, v]), the decay's f_a/f_b, dt_bias and A_log (1, 1, heads, 1) on the
    attention, o_norm; every MLP under block_sparse_moe., the dense first layers' too,
    experts as w1 (gate), w3 (up), w2 (down)."""
    names = _deepseek()
    mlp = "block_sparse_moe"
    names.layer.update(_llama_layer(_PRE, mlp=mlp))
    names.layer.update(_moe(f"{mlp}.gate", f"{mlp}.experts", "w1", "w3", "w2"))
    names.layer.update(
        {
            f"mlp.sublayer.shared.{p}.weight": Source(f"{mlp}.shared_experts.{p}_proj.weight")
            for p in ("gate", "up", "down")
        }
    )
    ours, theirs = "attn.sublayer.", "self_attn."
    kda = ("q_proj", "k_proj", "v_proj", "f_a_proj", "f_b_proj", "b_proj", "g_a_proj", "g_b_proj")
    names.layer.update({ours + f"{p}.weight": Source(theirs + f"{p}.weight") for p in kda})
    names.layer.update(
        {
            ours + "o_proj.weight": Source(theirs + "o_proj.weight"),
            ours + "conv1d.weight": Source(
                theirs + "q_conv1d.weight",
                joined=(theirs + "k_conv1d.weight", theirs + "v_conv1d.weight"),
            ),
            ours + "dt_bias": Source(theirs + "dt_bias"),
            ours + "A_log": Source(theirs + "A_log", flatten=True),
            ours + "norm_weight": Source(theirs + "o_norm.weight"),
        }
    )
    return names


def _recurrent_gemma() -> Names:
    """RecurrentGemma: each layer's temporal_block is attention (q/k/v/o_proj) or Griffin's
    recurrent block (linear_x, linear_y, conv_1d, rg_lru's gates and recurrent_param,
    linear_out); temporal_pre_norm and channel_pre_norm; mlp_block; final_norm."""
    block = "temporal_block"
    layer = {
        f"attn.sublayer.{p}.{t}": Source(f"{block}.{p}_proj.{t}")
        for p in "qkvo"
        for t in ("weight", "bias")
    }
    for part in ("linear_x", "linear_y", "linear_out", "conv_1d"):
        layer |= {
            f"attn.sublayer.{part}.{t}": Source(f"{block}.{part}.{t}") for t in ("weight", "bias")
        }
    for gate in ("input_gate", "recurrent_gate"):
        layer |= {
            f"attn.sublayer.{gate}.{t}": Source(f"{block}.rg_lru.{gate}_{t}")
            for t in ("weight", "bias")
        }
    layer["attn.sublayer.recurrent_param"] = Source(f"{block}.rg_lru.recurrent_param")
    layer |= {
        f"mlp.sublayer.{p}.{t}": Source(f"mlp_block.{p}_proj.{t}")
        for p in ("gate", "up", "down")
        for t in ("weight", "bias")
    }
    layer["attn.before.weight"] = Source("temporal_pre_norm.weight")
    layer["mlp.before.weight"] = Source("channel_pre_norm.weight")
    top = _LLAMA_TOP | {"decoder.final_norm.weight": Source("model.final_norm.weight")}
    return Names(top, layer, tied_head=("lm_head.weight",))


_STACKS = ("encoder", "decoder")


def _t5_attention(slot: str, sublayer: str, index: int) -> dict[str, Source]:
    layer = {f"{slot}.before.weight": Source(f"layer.{index}.layer_norm.weight")}
    for p in "qkvo":
        layer[f"{slot}.sublayer.{p}.weight"] = Source(f"layer.{index}.{sublayer}.{p}.weight")
    return layer


def _t5_mlp(index: int) -> dict[str, Source]:
    """T5's DenseReluDense: wi and wo, or (gated-gelu, v1.1) wi_0 the gate, wi_1 the up."""
    ff = f"layer.{index}.DenseReluDense"
    return {
        "mlp.before.weight": Source(f"layer.{index}.layer_norm.weight"),
        "mlp.sublayer.gate.weight": Source(f"{ff}.wi_0.weight"),
        "mlp.sublayer.up.weight": Source(f"{ff}.wi_1.weight", fallback=f"{ff}.wi.weight"),
        "mlp.sublayer.down.weight": Source(f"{ff}.wo.weight"),
    }


def _t5() -> Names:
    """T5: one shared embedding; each stack's relative-bias table sits in its first
    block's self-attention; decoder blocks are [self-attention, cross-attention, MLP],
    encoder blocks [self-attention, MLP]. A tied head is the shared embedding (T5 1.0),
    an untied one lm_head (T5 1.1); its d_model ** -0.5 rescale is the card's logit_scale."""
    bias = "block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    top = {
        "embed.table.weight": Source("shared.weight"),
        "head.lm_head.weight": Source("lm_head.weight"),
        **{f"{s}.final_norm.weight": Source(f"{s}.final_layer_norm.weight") for s in _STACKS},
        **{f"{s}.position_bias.table.weight": Source(f"{s}.{bias}") for s in _STACKS},
    }
    decoder = _t5_attention("attn", "SelfAttention", 0)
    decoder |= _t5_attention("cross", "EncDecAttention", 1) | _t5_mlp(2)
    return Names(
        top,
        decoder,
        prefix="decoder.block.{i}.",
        tied_head=("lm_head.weight",),
        encoder_layer=_t5_attention("attn", "SelfAttention", 0) | _t5_mlp(1),
        encoder_prefix="encoder.block.{i}.",
        embedding_copies=tuple(f"{s}.embed_tokens.weight" for s in _STACKS),
    )


def sandwich_names() -> Names:  # Gemma 2 and 3: a norm before and after each sublayer
    return _llama(_SANDWICH)


def post_branch_names() -> Names:  # OLMo 2 and 3, EXAONE 4: norms on the branch outputs
    return _llama(_POST_BRANCH)


def _longcat_flash() -> Names:
    """LongCat-Flash's layers: two MLA sublayers (self_attn.{0,1}), two dense MLPs
    (mlps.{0,1}), their pre-norms (input_layernorm.{j}, post_attention_layernorm.{j}) and
    the experts (mlp.router.classifier, mlp.experts.{e}); the MTP layers (model.mtp) are
    outside the card, as transformers leaves them."""
    layer: dict[str, Source] = {}
    attn = {
        "q.0": "q_a_proj",
        "q.1": "q_a_layernorm",
        "q.2": "q_b_proj",
        "kv_down": "kv_a_proj_with_mqa",
        "kv_norm": "kv_a_layernorm",
        "kv_up": "kv_b_proj",
        "o": "o_proj",
    }
    for j in (0, 1):
        for ours, theirs in attn.items():
            for t in ("weight", "bias"):
                layer[f"attn.{j}.{ours}.{t}"] = Source(f"self_attn.{j}.{theirs}.{t}")
        for part in ("gate", "up", "down"):
            layer[f"dense.{j}.{part}.weight"] = Source(f"mlps.{j}.{part}_proj.weight")
        layer[f"attn_norms.{j}.weight"] = Source(f"input_layernorm.{j}.weight")
        layer[f"mlp_norms.{j}.weight"] = Source(f"post_attention_layernorm.{j}.weight")
    layer |= {
        "moe.router.proj.weight": Source("mlp.router.classifier.weight"),
        "moe.router.proj.bias": Source("mlp.router.classifier.bias"),
        "moe.router.correction_bias": Source("mlp.router.e_score_correction_bias"),
    }
    for part in ("gate", "up", "down"):
        layer[f"moe.experts.{part}"] = Source(f"mlp.experts.{{e}}.{part}_proj.weight", experts=True)
    return Names(
        _LLAMA_TOP,
        layer,
        tied_head=("lm_head.weight",),
        outside=("model.mtp.",),
        unread=_zero_expert_rows,
    )


_EXPERT_ROW = re.compile(r"model\.layers\.\d+\.mlp\.experts\.(\d+)\.(?:gate|up)_proj\.weight")


def _zero_expert_rows(model: nn.Module, names: list[str]) -> set[str]:
    """gate/up tensors of experts numbered from n_experts on: the zero-computation
    experts', which compute nothing (transformers allocates and saves them)."""
    from archdb.builder.moe import Experts

    experts = next((m for m in model.modules() if isinstance(m, Experts)), None)
    if experts is None or not experts.zero_experts:
        return set()
    n, zero = experts.up.shape[0], experts.zero_experts
    found = {name: _EXPERT_ROW.fullmatch(name) for name in names}
    return {k for k, m in found.items() if m and n <= int(m.group(1)) < n + zero}


def _names_of(model_type: str) -> Callable[[], Names] | None:
    from archdb.families.registry import SPECS

    spec = SPECS.get(model_type)
    return spec.names if spec is not None else None


def supported_model_types() -> list[str]:
    from archdb.families.registry import SPECS

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
    from archdb.hf_import import HFImportError, read_config

    try:
        config = read_config(Path(directory) / "config.json")
    except HFImportError as exc:
        raise WeightsError(str(exc)) from None
    text = config.get("text_config")
    model_type = (text if isinstance(text, dict) else config).get("model_type")
    from archdb.families.registry import ALIASES

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
    return dict(model.named_parameters()) | checkpoint_buffers(model)


def checkpoint_buffers(model: nn.Module) -> dict[str, torch.Tensor]:
    """The persistent buffers: state a checkpoint carries but no gradient trains (a
    router's score-correction bias, Gemma 4's layer scalars); RoPE tables and masks are
    not persistent."""
    persistent = model.state_dict(keep_vars=True)
    return {name: b for name, b in model.named_buffers() if name in persistent}


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
    if source.cut is not None:
        start, stop = source.cut(dims)
        value = value[start:stop]
    if source.grouped is not None:
        groups, widths = source.grouped(dims)
        if groups == 0 or value.shape[0] != groups * sum(widths):
            return value  # the shape check names the mismatch
        parts = value.reshape(groups, sum(widths), *value.shape[1:]).split(widths, dim=1)
        value = torch.cat([part.reshape(-1, *value.shape[1:]) for part in parts])
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
    from archdb.builder.recurrent import GatedDeltaNetMixer

    att = next((m for m in model.modules() if isinstance(m, HeadAttention)), None)
    gdn = next((m for m in model.modules() if isinstance(m, GatedDeltaNetMixer)), None)
    experts = next((m for m in model.modules() if isinstance(m, Experts)), None)
    d_ff = 0
    for m in model.modules():
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
