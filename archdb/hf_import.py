"""Map a Hugging Face ``config.json`` to a card.

A released config holds the sizes (``hidden_size``, ``num_key_value_heads``, ...) but not
every architectural choice: transformers keeps some in its modeling code (where the norms
sit, whether the MLP is gated, whether attention and MLP run in parallel, which linear
layers carry a bias). So each supported ``model_type`` has one small ``Family`` entry
saying what its transformers implementation does, plus the config class's defaults for
keys a config may leave out. The card then cites two sources: the config for what was
read from it, and the transformers modeling file for what the family supplied.

Spellings differ between architectures and are all accepted: ``hidden_size`` / ``n_embd``,
``hidden_act`` / ``hidden_activation`` / ``activation_function``, ``rms_norm_eps`` /
``layer_norm_eps``, ``layer_types`` or ``sliding_window_pattern`` for per-layer attention,
``rope_theta`` / ``rope_parameters`` / ``rotary_emb_base``, ``rope_scaling`` dicts, and
multimodal configs whose language model sits under ``text_config``. Every key that maps to
no card field is reported, so nothing is dropped silently.

A config is hostile input: ``read_config`` bounds the bytes read, the number of digits and
the nesting of the JSON, and ``import_config`` checks the type and range of every key it
reads (``ConfigShape``) before mapping anything, so a wrong type is an HFImportError naming
the key, never a traceback; every step is linear in the config's size.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from archdb.files import read_bounded
from archdb.schema import (
    MAX_CONTEXT,
    MAX_COUNT,
    MAX_DEPTH,
    MAX_MAGNITUDE,
    MAX_PATTERN,
    MAX_VOCAB,
    MAX_WIDTH,
    UNKNOWN_WHEN_NULL,
)

TRANSFORMERS_MODELS = (
    "https://github.com/huggingface/transformers/blob/main/src/transformers/models"
)


class HFImportError(ValueError):
    """The config cannot become a card (unknown model type, missing sizes, bad identity)."""


# --- reading and checking a config -----------------------------------------------

MAX_CONFIG_BYTES = 16 * 2**20  # a config.json is a few kB; id2label tables reach 100s of kB
MAX_JSON_DEPTH = 64  # a config nests three or four levels
MAX_DIGITS = 40  # digits of a JSON number: far beyond any bounded size


def read_config(path: Path | str) -> dict[str, Any]:
    """A config.json as a dict: at most MAX_CONFIG_BYTES, bounded numbers and nesting."""
    path = Path(path)
    try:
        raw = read_bounded(path, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise HFImportError(f"{path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise HFImportError(f"{path}: larger than {MAX_CONFIG_BYTES // 2**20} MiB: not a config")
    try:
        data = json.loads(
            raw.decode("utf-8"),
            parse_int=_bounded_int,
            parse_float=_bounded_float,
            parse_constant=_no_constant,
        )
    except RecursionError:
        raise HFImportError(f"{path}: JSON nested too deeply: not a config") from None
    except UnicodeDecodeError as exc:
        raise HFImportError(f"{path}: not UTF-8 (byte {exc.start}): not a config") from None
    except json.JSONDecodeError as exc:
        raise HFImportError(
            f"{path}:{exc.lineno}:{exc.colno}: not a JSON config: {exc.msg}"
        ) from None
    except ValueError as exc:  # from the number hooks below
        raise HFImportError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise HFImportError(f"{path}: expected a JSON object (a config.json)")
    if _depth(data) > MAX_JSON_DEPTH:
        raise HFImportError(f"{path}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return data


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"a number with {len(text):,} digits: refused")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > MAX_DIGITS * 2:
        raise ValueError(f"a number written with {len(text):,} characters: refused")
    return float(text)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _depth(value: object) -> int:
    """Nesting depth of JSON data, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_JSON_DEPTH:
            break
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        )
        stack.extend((child, level + 1) for child in children)
    return deepest


def _finite_number(value: object) -> float:
    """A JSON number (not a boolean, not a string, finite) as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return float(value)


def _sized(low: int, high: int) -> Any:
    return Annotated[StrictInt, Field(ge=low, le=high)]


Number = Annotated[float, BeforeValidator(_finite_number), Field(ge=0, le=MAX_MAGNITUDE)]
Share = Annotated[float, BeforeValidator(_finite_number), Field(ge=0, le=1)]
Width = _sized(1, MAX_WIDTH)
Heads = _sized(1, MAX_COUNT)
Layers = _sized(1, MAX_DEPTH)
Tokens = _sized(1, MAX_CONTEXT)
Name = Annotated[StrictStr, Field(max_length=200)]


class _Keys(BaseModel):
    """Keys are checked; others pass through (they are reported as unmapped)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)


class RopeParameters(_Keys):
    rope_theta: Number | None = None
    partial_rotary_factor: Share | None = None
    rope_type: Name | None = None
    full_attention: RopeParameters | None = None
    sliding_attention: RopeParameters | None = None


class ConfigShape(_Keys):
    """The type and range of every key import_config reads (bounds: archdb.schema's)."""

    model_type: Name | None = None
    name_or_path: Name | None = Field(None, alias="_name_or_path")
    text_config: dict[str, Any] | None = None
    # sizes
    hidden_size: Width | None = None
    n_embd: Width | None = None
    n_embed: Width | None = None
    d_model: Width | None = None
    num_hidden_layers: Layers | None = None
    n_layer: Layers | None = None
    num_layers: Layers | None = None
    num_attention_heads: Heads | None = None
    n_head: Heads | None = None
    num_heads: Heads | None = None
    num_key_value_heads: Heads | None = None
    num_kv_heads: Heads | None = None
    n_head_kv: Heads | None = None
    head_dim: Width | None = None
    vocab_size: _sized(1, MAX_VOCAB) | None = None
    max_position_embeddings: Tokens | None = None
    n_positions: Tokens | None = None
    max_sequence_length: Tokens | None = None
    seq_length: Tokens | None = None
    n_ctx: Tokens | None = None
    intermediate_size: Width | None = None
    n_inner: Width | None = None
    ffn_hidden_size: Width | None = None
    ffn_dim: Width | None = None
    word_embed_proj_dim: Width | None = None
    # activation
    hidden_activation: Name | None = None
    hidden_act: Name | None = None
    activation_function: Name | None = None
    activation: Name | None = None
    # positions
    rope_parameters: RopeParameters | None = None
    rope_theta: Number | None = None
    rotary_emb_base: Number | None = None
    rope_embedding_base: Number | None = None
    rope_local_base_freq: Number | None = None
    partial_rotary_factor: Share | None = None
    rotary_pct: Share | None = None
    rope_scaling: dict[str, Any] | None = None
    rotary: StrictBool | None = None
    rotary_dim: _sized(0, MAX_WIDTH) | None = None
    alibi: StrictBool | None = None
    # attention
    attn_logit_softcapping: Number | None = None
    final_logit_softcapping: Number | None = None
    sliding_window: Tokens | None = None
    layer_types: Annotated[list[Name], Field(max_length=MAX_PATTERN)] | None = None
    sliding_window_pattern: _sized(1, MAX_PATTERN) | None = None
    use_sliding_window: StrictBool | None = None
    max_window_layers: _sized(0, MAX_DEPTH) | None = None
    multi_query: StrictBool | None = None
    new_decoder_architecture: StrictBool | None = None
    qk_layernorm: StrictBool | None = None
    use_qk_norm: StrictBool | None = None
    query_pre_attn_scalar: Number | None = None
    logit_scale: Number | None = None
    # numerics: what changes outputs but not counts (see _function)
    rms_norm_eps: Number | None = None
    layer_norm_eps: Number | None = None
    layer_norm_epsilon: Number | None = None
    norm_epsilon: Number | None = None
    norm_eps: Number | None = None
    rope_interleave: StrictBool | None = None
    norm_topk_prob: StrictBool | None = None
    swiglu_limit: Number | None = None
    swiglu_alpha: Number | None = None
    # blocks, norms, biases, embeddings
    use_parallel_residual: StrictBool | None = None
    parallel_attn: StrictBool | None = None
    num_ln_in_parallel_attn: _sized(1, 2) | None = None
    do_layer_norm_before: StrictBool | None = None
    remove_final_layer_norm: StrictBool | None = Field(None, alias="_remove_final_layer_norm")
    layer_norm_elementwise_affine: StrictBool | None = None
    attention_bias: StrictBool | None = None
    mlp_bias: StrictBool | None = None
    bias: StrictBool | None = None
    enable_bias: StrictBool | None = None
    tie_word_embeddings: StrictBool | None = None
    # mixture of experts and latent attention
    num_local_experts: Heads | None = None
    num_experts: Heads | None = None
    n_routed_experts: Heads | None = None
    num_experts_per_tok: Heads | None = None
    n_shared_experts: _sized(0, MAX_COUNT) | None = None
    moe_intermediate_size: Width | None = None
    decoder_sparse_step: Layers | None = None
    mlp_only_layers: Annotated[list[_sized(0, MAX_DEPTH)], Field(max_length=MAX_DEPTH)] | None = (
        None
    )
    first_k_dense_replace: _sized(0, MAX_DEPTH) | None = None
    moe_layer_freq: Layers | None = None
    kv_lora_rank: Width | None = None
    q_lora_rank: Width | None = None
    qk_rope_head_dim: Width | None = None
    qk_nope_head_dim: Width | None = None
    v_head_dim: Width | None = None
    num_nextn_predict_layers: _sized(0, MAX_DEPTH) | None = None
    # state-space mixers (Mamba-2)
    expand: Number | None = None
    state_size: Width | None = None
    n_groups: Heads | None = None
    conv_kernel: Width | None = None
    use_bias: StrictBool | None = None
    use_conv_bias: StrictBool | None = None
    # linear attention (Qwen3-Next's Gated DeltaNet) and shared-expert widths
    linear_num_key_heads: Heads | None = None
    linear_num_value_heads: Heads | None = None
    linear_key_head_dim: Width | None = None
    linear_value_head_dim: Width | None = None
    linear_conv_kernel_dim: Width | None = None
    shared_expert_intermediate_size: Width | None = None
    # hybrid Mamba-2 models (Bamba)
    attn_layer_indices: (
        Annotated[list[_sized(0, MAX_DEPTH)], Field(max_length=MAX_DEPTH)] | None
    ) = None
    mamba_n_heads: Heads | None = None
    mamba_d_head: Width | Literal["auto"] | None = None
    mamba_n_groups: Heads | None = None
    mamba_d_state: Width | None = None
    mamba_d_conv: Width | None = None
    mamba_expand: Number | None = None
    mamba_conv_bias: StrictBool | None = None
    mamba_proj_bias: StrictBool | None = None


def check_shape(config: Mapping[str, Any], prefix: str = "") -> None:
    """HFImportError naming the first keys whose type or range is wrong."""
    try:
        ConfigShape.model_validate(config)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:3]:
            key = prefix + ".".join(str(p) for p in err["loc"])
            message = str(err["msg"]).removeprefix("Value error, ")
            problems.append(f"{key}: {message} (got {_brief(err.get('input'))})")
        more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        raise HFImportError(f"config.json: {'; '.join(problems)}{more}") from None


def _brief(value: object, limit: int = 40) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"a number of {value.bit_length():,} bits"
    if isinstance(value, dict | list):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


# Keys that carry no architecture: bookkeeping, token ids, numerical constants and the
# dropout of fine-tuning (a card's training.dropout is the pre-training rate).
IGNORED_KEYS = frozenset(
    {
        "_name_or_path", "architectures", "auto_map", "model_type", "torch_dtype", "dtype",
        "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id",
        "sep_token_id", "decoder_start_token_id", "use_cache", "initializer_range",
        "initializer_factor", "tokenizer_class", "task_specific_params", "summary_type",
        "summary_use_proj", "summary_activation", "summary_proj_to_labels",
        "summary_first_dropout", "gradient_checkpointing", "pretraining_tp",
        "cache_implementation", "output_attentions", "output_hidden_states", "return_dict",
        "id2label", "label2id", "problem_type", "use_bfloat16", "attention_dropout",
        "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop", "hidden_dropout_prob",
        "attention_probs_dropout_prob", "classifier_dropout", "embedding_dropout", "dropout",
        "activation_dropout", "ffn_dropout", "scale_attn_weights", "reorder_and_upcast_attn",
        "scale_attn_by_inverse_layer_idx", "use_flash_attn", "_attn_implementation",
        # PretrainedConfig's serialization and generation defaults, and training-only knobs
        "chunk_size_feed_forward", "is_decoder", "add_cross_attention", "tie_encoder_decoder",
        "cross_attention_hidden_size", "output_router_logits", "router_jitter_noise",
        "init_std", "layerdrop", "_sliding_window_pattern", "torchscript", "pruned_heads",
        "finetuning_task", "tf_legacy_loss", "return_dict_in_generate", "output_scores",
        "max_length", "min_length", "do_sample", "early_stopping", "num_beams",
        "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p", "typical_p",
        "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
        "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
        "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens",
        "begin_suppress_tokens", "forced_bos_token_id", "forced_eos_token_id", "prefix",
    }
)  # fmt: skip
# Keys that are harmless at their usual value but change the model otherwise.
MUST_BE = {"is_encoder_decoder": False, "use_bidirectional_attention": False}


# --- the families ----------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """What one transformers implementation fixes in code, and its config defaults."""

    module: str  # transformers/models/<module>/modeling_<module>.py
    layer: str  # the decoder-layer class, cited as the source's locator
    norm: str = "rmsnorm"
    norm_position: str = "pre"
    norm_affine: str = "scale"
    gated: bool = True  # act(gate(x)) * up(x), then down
    position: str = "rope"
    qk_norm: str = "none"
    fixed_bias: tuple[bool, bool, bool] | None = None  # (qkv, attn_out, mlp) set in code
    attention_bias_default: bool = False  # attention_bias when the config omits it
    mlp_bias: bool | None = False  # fixed in code, or None: the config's mlp_bias key
    parallel: bool = False
    shared_norm_in_parallel: bool | None = None
    tied_default: bool = False
    activation_default: str = "silu"
    rope_theta_default: float = 10000.0
    d_ff_default_ratio: int | None = None  # d_ff = ratio * d_model when the config omits it
    rotary_fraction_default: float | None = None
    default_pattern: tuple[str, ...] = ("global",)  # without layer_types / sliding_window_pattern
    full_layer: str = "global"  # the card kind of a "full_attention" layer
    sliding_everywhere: bool = False  # a non-null sliding_window applies to every layer
    hook: Callable[[_Draft], None] | None = None  # choices that depend on config keys
    # the whole mapping, for families whose layers are not attention + MLP (Mamba-2)
    steps: tuple[Callable[[_Draft], None], ...] | None = None
    linear_layer: str | None = None  # the card kind of a "linear_attention" layer
    rope_layout: str = "half-split"  # rotate_half in the modeling code; interleaved: pairs


def _gpt_neox(d: _Draft) -> None:
    parallel = d.read("use_parallel_residual", default=True)
    d.set("architecture.parallel_layers", parallel, d.origin_of("use_parallel_residual"))
    if parallel:  # input_layernorm feeds attention, post_attention_layernorm the MLP
        d.set("architecture.norm.shared_in_parallel", False, "family")


def _falcon(d: _Draft) -> None:
    new_arch = d.read("new_decoder_architecture", default=False)
    if d.read("multi_query", default=True) and not new_arch:
        d.set("architecture.attention.n_kv_heads", 1, "config")
    elif not new_arch:
        d.set(
            "architecture.attention.n_kv_heads", d.value("architecture.attention.n_heads"), "family"
        )
    parallel = d.read("parallel_attn", default=True)
    d.set("architecture.parallel_layers", parallel, d.origin_of("parallel_attn"))
    if parallel:
        norms = d.read("num_ln_in_parallel_attn", default=2 if new_arch else 1)
        d.set(
            "architecture.norm.shared_in_parallel",
            norms == 1,
            d.origin_of("num_ln_in_parallel_attn"),
        )
    if d.read("alibi", default=False):
        d.set("architecture.position.type", "alibi", "config")
        d.clear("architecture.position.rope_theta")
    uses_bias = d.read("bias", default=False)
    for part in ("qkv", "attn_out", "mlp"):
        d.set(f"architecture.bias.{part}", uses_bias, d.origin_of("bias"))


def _opt(d: _Draft) -> None:
    pre = d.read("do_layer_norm_before", default=True)
    d.set(
        "architecture.norm.position", "pre" if pre else "post", d.origin_of("do_layer_norm_before")
    )
    removed = d.read("_remove_final_layer_norm", default=False)
    d.set("architecture.norm.final", bool(pre and not removed), d.origin_of("do_layer_norm_before"))
    affine = d.read("layer_norm_elementwise_affine", default=True)
    d.set(
        "architecture.norm.affine",
        "scale-and-bias" if affine else "none",
        d.origin_of("layer_norm_elementwise_affine"),
    )
    uses_bias = d.read("enable_bias", default=True)
    for part in ("qkv", "attn_out", "mlp"):
        d.set(f"architecture.bias.{part}", uses_bias, d.origin_of("enable_bias"))
    embed = d.read("word_embed_proj_dim")
    if embed is not None and embed != d.value("architecture.d_model"):
        d.set("architecture.embedding_dim", embed, "config")
    context = d.value("architecture.context_length")
    if context is not None:  # OPTLearnedPositionalEmbedding reserves two rows (offset 2)
        d.set("architecture.position.learned_rows", context + 2, "family")


def _phi(d: _Draft) -> None:
    if d.read("qk_layernorm", default=False):  # one LayerNorm over head_dim, shared by heads
        d.set("architecture.attention.qk_norm", "per-head", "config")
    d.set("architecture.bias.lm_head", True, "family")  # PhiForCausalLM: Linear(bias=True)


def _gptj(d: _Draft) -> None:
    d.read("rotary")  # GPT-J's "rotary": true is the rope scheme itself
    rotary_dim = d.read("rotary_dim", default=64)
    head_dim = d.value("architecture.d_model") // d.value("architecture.attention.n_heads")
    if rotary_dim and rotary_dim < head_dim:
        d.set(
            "architecture.position.rotary_fraction",
            rotary_dim / head_dim,
            d.origin_of("rotary_dim"),
        )
    d.set("architecture.bias.lm_head", True, "family")  # GPTJForCausalLM: nn.Linear default bias


def _cohere(d: _Draft) -> None:
    if d.read("use_qk_norm", default=False):  # a LayerNorm per head, each head its own scale
        d.set("architecture.attention.qk_norm", "per-head-untied", "config")
    scale = d.read("logit_scale", default=0.0625)  # CohereConfig's default
    if scale:
        d.set("architecture.logit_scale", float(scale), d.origin_of("logit_scale"))


def _gemma(d: _Draft) -> None:
    # Gemma's RMSNorm applies (1 + w); the embeddings are scaled by sqrt(hidden_size)
    d.set("architecture.norm.unit_offset", True, "family")
    d.set("architecture.embedding_multiplier", d.value("architecture.d_model") ** 0.5, "family")
    scalar = d.read("query_pre_attn_scalar")
    if scalar and d.family.module != "gemma":  # Gemma 2/3 scale by query_pre_attn_scalar**-0.5
        d.set("architecture.attention.scale", float(scalar) ** -0.5, "config")


def _mixtral(d: _Draft) -> None:
    d.moe(
        n_experts=d.read("num_local_experts", required=True),
        n_active=d.read("num_experts_per_tok", required=True),
    )
    d.set("architecture.mlp.moe.normalize_top_k", True, "family")  # softmax of the top-k


def _qwen3_moe(d: _Draft) -> None:
    dense_layers = d.read("mlp_only_layers", default=[]) or []
    if dense_layers:
        d.unmapped["mlp_only_layers"] = dense_layers
    period = d.read("decoder_sparse_step", default=1)
    dense_d_ff = d.value("architecture.mlp.d_ff") if period > 1 else None
    d.set("architecture.mlp.d_ff", d.read("moe_intermediate_size", required=True), "config")
    d.moe(
        n_experts=d.read("num_experts", "num_local_experts", required=True),
        n_active=d.read("num_experts_per_tok", required=True),
        layer_period=period,
        dense_d_ff=dense_d_ff,
    )
    normalize = d.read("norm_topk_prob", default=False)  # Qwen3MoeConfig's default
    d.set("architecture.mlp.moe.normalize_top_k", normalize, d.origin_of("norm_topk_prob"))


def _deepseek(d: _Draft) -> None:
    d.latent(
        kv_lora_rank=d.read("kv_lora_rank", required=True),
        q_lora_rank=d.read("q_lora_rank"),
        qk_rope_head_dim=d.read("qk_rope_head_dim", required=True),
        qk_nope_head_dim=d.read("qk_nope_head_dim", required=True),
        v_head_dim=d.read("v_head_dim", required=True),
    )
    n_routed = d.read("n_routed_experts")
    if n_routed is None:
        return
    dense_d_ff = d.value("architecture.mlp.d_ff")
    expert_d_ff = d.read("moe_intermediate_size", required=True)
    n_shared = d.read("n_shared_experts", default=0) or 0
    first_dense = d.read("first_k_dense_replace", default=0)
    period = d.read("moe_layer_freq", default=1)
    d.set("architecture.mlp.d_ff", expert_d_ff, "config")
    d.moe(
        n_experts=n_routed,
        n_active=d.read("num_experts_per_tok", required=True),
        n_shared=n_shared,
        shared_d_ff=expert_d_ff * n_shared if n_shared else None,
        first_dense_layers=first_dense,
        layer_period=period,
        dense_d_ff=dense_d_ff if first_dense or period > 1 else None,
    )
    d.note(
        "architecture.mlp.moe.shared_d_ff",
        "The shared experts form one MLP of "
        "moe_intermediate_size x n_shared_experts (the transformers implementation).",
    )
    mtp = d.read("num_nextn_predict_layers")
    if mtp:
        d.unmapped["num_nextn_predict_layers"] = mtp


_ATTENTION_FREE = (
    "Attention-free: every layer is a Mamba-2 mixer (the transformers implementation)."
)


def _silu_conv(d: _Draft) -> None:
    """transformers' Mamba-2 mixers apply hidden_act after the conv and clamp the time step
    to time_step_limit; archdb's applies SiLU and does not clamp."""
    act = d.read("hidden_act", default="silu")
    if act not in ("silu", "swish"):
        raise HFImportError(
            f"hidden_act {str(act)[:40]!r}: archdb's Mamba-2 mixer applies SiLU after its conv "
            "(transformers applies hidden_act)"
        )
    limit = d.read("time_step_limit")  # transformers clamps softplus(dt) to it
    if limit is not None and not _unclamped(limit):
        raise HFImportError(
            f"time_step_limit {str(limit)[:40]!r}: archdb's Mamba-2 mixer does not clamp the "
            "time step (only (0, inf) is supported)"
        )


_SAVED_INFINITY = {"__float__": "Infinity"}  # how transformers' config.json spells inf


def _unclamped(limit: Any) -> bool:
    if not isinstance(limit, list | tuple) or len(limit) != 2:
        return False
    low, high = limit
    low_ok = isinstance(low, int | float) and not isinstance(low, bool) and low <= 0
    return low_ok and (high == float("inf") or high == _SAVED_INFINITY)


def _mamba2(d: _Draft) -> None:
    """Mamba-2: norm, mixer, residual per layer; no attention, no MLP, no positions."""
    d_model = d.read("hidden_size", required=True)
    d.set("architecture.d_model", d_model, "config")
    d.set("architecture.n_layers", d.read("num_hidden_layers", required=True), "config")
    d.set("architecture.vocab_size", d.read("vocab_size", required=True), "config")
    heads, head_dim = d.read("num_heads", required=True), d.read("head_dim", required=True)
    expand = d.read("expand", required=True)
    if heads * head_dim != int(expand * d_model):
        raise HFImportError(
            f"num_heads x head_dim ({heads} x {head_dim}) differs from expand x hidden_size "
            f"({int(expand * d_model)}): transformers' Mamba2Mixer cannot run this config"
        )
    _silu_conv(d)
    mamba2 = {
        "n_heads": heads,
        "head_dim": head_dim,
        "state_size": d.read("state_size", required=True),
        "n_groups": d.read("n_groups", default=1),
        "conv_kernel": d.read("conv_kernel", required=True),
        "conv_bias": d.read("use_conv_bias", default=True),
        "proj_bias": d.read("use_bias", default=False),
    }
    for name, value in mamba2.items():
        d.set(f"architecture.mixers.mamba2.{name}", value, "config")
    d.set("architecture.mixers.mamba2.mlp", False, "family")
    for path, value in (
        ("norm.type", "rmsnorm"),
        ("norm.position", "pre"),
        ("norm.affine", "scale"),
        ("norm.final", True),
        ("attention.variant", "softmax"),
        ("attention.n_heads", None),
        ("attention.n_kv_heads", None),
        ("attention.qk_norm", None),
        ("attention.logit_softcap", None),
        ("attention.sliding_window", None),
        ("attention.layer_pattern", ["mamba2"]),
        ("position.type", "none"),
        ("mlp.activation", None),
        ("mlp.d_ff", None),
        ("mlp.moe", None),
        ("bias.qkv", False),
        ("bias.attn_out", False),
        ("bias.mlp", False),
        ("parallel_layers", False),
        ("final_logit_softcap", None),
    ):
        d.set(f"architecture.{path}", value, "family")
    for path in ("attention.n_heads", "attention.n_kv_heads", "attention.qk_norm"):
        d.note(f"architecture.{path}", _ATTENTION_FREE)
    for path in ("mlp.activation", "mlp.d_ff"):
        d.note(f"architecture.{path}", "No MLP: a Mamba-2 layer is the mixer alone.")
    d.note("architecture.context_length", "Mamba-2 has no position limit in its config.")
    _tied(d)


def _gpt_oss(d: _Draft) -> None:
    """gpt-oss: sinks, a biased router over biased experts, the clamped SwiGLU."""
    _mixtral(d)
    d.set("architecture.mlp.moe.router_bias", True, "family")
    d.set("architecture.bias.mlp", True, "family")  # the experts' projections
    d.set("architecture.attention.sinks", True, "family")
    d.set("architecture.mlp.activation", "clamped-swiglu", "family")  # GptOssExperts
    limit = d.read("swiglu_limit", default=7.0)  # GptOssConfig's defaults
    d.set("architecture.mlp.swiglu_limit", float(limit), d.origin_of("swiglu_limit"))
    alpha = d.read("swiglu_alpha", default=1.702)
    d.set("architecture.mlp.swiglu_alpha", float(alpha), d.origin_of("swiglu_alpha"))


def _qwen3_next(d: _Draft) -> None:
    """Qwen3-Next: Gated DeltaNet and gated attention layers, MoE with a gated shared expert."""
    _qwen3_moe(d)
    _gated_shared_expert(d)
    _gated_hybrid(d)


def _gated_shared_expert(d: _Draft) -> None:
    """Qwen3-Next's shared expert: one MLP, its output scaled by sigmoid(shared_expert_gate)."""
    shared = d.read("shared_expert_intermediate_size")
    if shared:
        d.set("architecture.mlp.moe.n_shared", 1, "family")
        d.set("architecture.mlp.moe.shared_d_ff", shared, "config")
        d.set("architecture.mlp.moe.shared_gate", True, "family")


def _gated_hybrid(d: _Draft) -> None:
    """Qwen3-Next's and Qwen3.5's layers: Gated DeltaNet, and attention with a sigmoid
    output gate per element; zero-centred RMSNorms (x * (1 + w))."""
    d.read("attn_output_gate")  # Qwen3.5 configs state it; the modeling code always gates
    d.set("architecture.attention.output_gate", "elementwise", "family")
    d.set("architecture.norm.unit_offset", True, "family")  # Qwen3NextRMSNorm: x * (1 + w)
    if not d.read("layer_types"):  # released configs give the interval, not the list
        interval = d.read("full_attention_interval", default=4)
        pattern = ["gated-deltanet"] * (interval - 1) + ["global"]
        d.set("architecture.attention.layer_pattern", pattern, "config")
    if "gated-deltanet" in (d.value("architecture.attention.layer_pattern") or []):
        sizes = {
            "n_key_heads": d.read("linear_num_key_heads", required=True),
            "n_value_heads": d.read("linear_num_value_heads", required=True),
            "key_head_dim": d.read("linear_key_head_dim", required=True),
            "value_head_dim": d.read("linear_value_head_dim", required=True),
            "conv_kernel": d.read("linear_conv_kernel_dim", required=True),
        }
        for name, value in sizes.items():
            d.set(f"architecture.mixers.gated_deltanet.{name}", value, "config")
        d.set("architecture.mixers.gated_deltanet.mlp", True, "family")


def _qwen3_5_text(d: _Draft) -> None:
    """Qwen3.5 (dense): Qwen3-Next's layers with a dense SwiGLU MLP on every layer; the
    DeltaNet's projections are separate tensors (same sizes)."""
    _gated_hybrid(d)
    _mrope_note(d)


def _qwen3_5_moe_text(d: _Draft) -> None:
    """Qwen3.5 MoE: every layer's MLP is the experts plus a gated shared expert; the router
    always renormalizes its top k (Qwen3VLMoeTextTopKRouter, no norm_topk_prob key)."""
    _qwen3_moe(d)
    d.set("architecture.mlp.moe.normalize_top_k", True, "family")
    _gated_shared_expert(d)
    _gated_hybrid(d)
    _mrope_note(d)


def _mrope_note(d: _Draft) -> None:
    full, _ = _rope_parameters(d)
    if full.get("mrope_section") is not None:
        d.note(
            "architecture.position",
            f"rope_parameters give M-RoPE sections {_short(full['mrope_section'])}: text "
            "tokens have equal position ids on the three axes, so each rotary pair turns as "
            "in plain RoPE (recorded); image and video positions are not modelled.",
        )


def _bamba(d: _Draft) -> None:
    """Bamba: Mamba-2 layers, attention at attn_layer_indices; every layer has the MLP."""
    n_layers = d.value("architecture.n_layers")
    indices = set(d.read("attn_layer_indices", default=[]) or [])
    if any(i >= n_layers for i in indices):
        raise HFImportError(
            f"attn_layer_indices names a layer beyond num_hidden_layers ({n_layers})"
        )
    kinds = ["global" if i in indices else "mamba2" for i in range(n_layers)]
    d.set("architecture.attention.layer_pattern", _period(kinds), "config")
    d_model, heads = d.value("architecture.d_model"), d.read("mamba_n_heads", required=True)
    inner = int(d.read("mamba_expand", required=True) * d_model)
    head_dim = d.read("mamba_d_head", default="auto")
    if head_dim == "auto":
        head_dim = inner // heads
    if heads * head_dim != inner:
        raise HFImportError(
            f"mamba_n_heads x mamba_d_head ({heads} x {head_dim}) differs from mamba_expand x "
            f"hidden_size ({inner}): transformers' BambaMixer cannot run this config"
        )
    _silu_conv(d)
    sizes = {
        "n_heads": heads,
        "head_dim": head_dim,
        "state_size": d.read("mamba_d_state", required=True),
        "n_groups": d.read("mamba_n_groups", default=1),
        "conv_kernel": d.read("mamba_d_conv", required=True),
        "conv_bias": d.read("mamba_conv_bias", default=True),
        "proj_bias": d.read("mamba_proj_bias", default=False),
    }
    for name, value in sizes.items():
        d.set(f"architecture.mixers.mamba2.{name}", value, "config")
    d.set("architecture.mixers.mamba2.mlp", True, "family")


def _rope_interleave(d: _Draft) -> None:  # DeepSeek-V3: rope_interleave (default true)
    if d.value("architecture.position.type") == "rope":
        interleaved = d.read("rope_interleave", default=True)
        layout = "interleaved" if interleaved else "half-split"
        d.set("architecture.position.rope_layout", layout, d.origin_of("rope_interleave"))


def _deepseek_v3(d: _Draft) -> None:
    _deepseek(d)
    _rope_interleave(d)


_LLAMA = Family("llama", "LlamaDecoderLayer", mlp_bias=None)
_NEOX_LIKE = dict(norm="layernorm", norm_affine="scale-and-bias", gated=False)

FAMILIES: dict[str, Family] = {
    "llama": _LLAMA,
    "mistral": Family("mistral", "MistralDecoderLayer", sliding_everywhere=True),
    "mixtral": Family("mixtral", "MixtralDecoderLayer", sliding_everywhere=True, hook=_mixtral),
    "qwen2": Family("qwen2", "Qwen2DecoderLayer", fixed_bias=(True, False, False)),
    "qwen3": Family("qwen3", "Qwen3DecoderLayer", qk_norm="per-head"),
    "qwen3_moe": Family("qwen3_moe", "Qwen3MoeDecoderLayer", qk_norm="per-head", hook=_qwen3_moe),
    "phi3": Family("phi3", "Phi3DecoderLayer", sliding_everywhere=True),
    "gemma": Family("gemma", "GemmaDecoderLayer", tied_default=True,
                    activation_default="gelu_pytorch_tanh", hook=_gemma),
    "gemma2": Family("gemma2", "Gemma2DecoderLayer", norm_position="double", tied_default=True,
                     activation_default="gelu_pytorch_tanh", default_pattern=("local", "global"),
                     hook=_gemma),
    "gemma3_text": Family("gemma3", "Gemma3DecoderLayer", norm_position="double",
                          qk_norm="per-head", tied_default=True,
                          activation_default="gelu_pytorch_tanh",
                          default_pattern=("local",) * 5 + ("global",), hook=_gemma),
    "olmo": Family("olmo", "OlmoDecoderLayer", norm="layernorm", norm_affine="none"),
    "olmo2": Family("olmo2", "Olmo2DecoderLayer", norm_position="post-branch", qk_norm="full"),
    "cohere": Family("cohere", "CohereDecoderLayer", norm="layernorm", parallel=True,
                     shared_norm_in_parallel=True, tied_default=True, hook=_cohere,
                     rope_layout="interleaved"),
    "cohere2": Family("cohere2", "Cohere2DecoderLayer", norm="layernorm", parallel=True,
                      shared_norm_in_parallel=True, tied_default=True,
                      default_pattern=("local", "local", "local", "global-nope"),
                      full_layer="global-nope", hook=_cohere,
                      rope_layout="interleaved"),
    "deepseek_v2": Family("deepseek_v2", "DeepseekV2DecoderLayer", mlp_bias=None,
                          hook=_deepseek, rope_layout="interleaved"),
    "deepseek_v3": Family("deepseek_v3", "DeepseekV3DecoderLayer", hook=_deepseek_v3),
    "gpt2": Family("gpt2", "GPT2Block", **_NEOX_LIKE, position="learned",
                   fixed_bias=(True, True, True), tied_default=True,
                   activation_default="gelu_new", d_ff_default_ratio=4),
    "gptj": Family("gptj", "GPTJBlock", **_NEOX_LIKE, fixed_bias=(False, False, True),
                   parallel=True, shared_norm_in_parallel=True, activation_default="gelu_new",
                   d_ff_default_ratio=4, hook=_gptj, rope_layout="interleaved"),
    "gpt_neox": Family("gpt_neox", "GPTNeoXLayer", **_NEOX_LIKE, attention_bias_default=True,
                       mlp_bias=True, activation_default="gelu", rotary_fraction_default=0.25,
                       hook=_gpt_neox),
    "falcon": Family("falcon", "FalconDecoderLayer", **_NEOX_LIKE, tied_default=True,
                     activation_default="gelu", d_ff_default_ratio=4, hook=_falcon),
    "phi": Family("phi", "PhiDecoderLayer", **_NEOX_LIKE, fixed_bias=(True, True, True),
                  parallel=True, shared_norm_in_parallel=True, activation_default="gelu_new",
                  rotary_fraction_default=0.5, hook=_phi),
    "nemotron": Family("nemotron", "NemotronDecoderLayer", norm="layernorm",
                       norm_affine="scale-and-bias", gated=False, activation_default="relu2",
                       rotary_fraction_default=0.5, mlp_bias=None),
    "mamba2": Family("mamba2", "Mamba2Block", steps=(_mamba2,)),
    "bamba": Family("bamba", "BambaDecoderLayer", mlp_bias=None, hook=_bamba),
    "gpt_oss": Family("gpt_oss", "GptOssDecoderLayer", hook=_gpt_oss),
    "apertus": Family("apertus", "ApertusDecoderLayer", qk_norm="per-head", gated=False,
                      activation_default="xielu", rope_theta_default=12_000_000.0),
    "qwen3_next": Family("qwen3_next", "Qwen3NextDecoderLayer", qk_norm="per-head",
                         hook=_qwen3_next, linear_layer="gated-deltanet"),
    "qwen3_5_text": Family("qwen3_5", "Qwen3_5DecoderLayer", qk_norm="per-head",
                           rotary_fraction_default=0.25, hook=_qwen3_5_text,
                           linear_layer="gated-deltanet"),
    "qwen3_5_moe_text": Family("qwen3_5_moe", "Qwen3_5MoeDecoderLayer", qk_norm="per-head",
                               rotary_fraction_default=0.25, hook=_qwen3_5_moe_text,
                               linear_layer="gated-deltanet"),
    "opt": Family("opt", "OPTDecoderLayer", **_NEOX_LIKE, position="learned", tied_default=True,
                  activation_default="relu", hook=_opt),
}  # fmt: skip
# multimodal wrappers: their text_config is the decoder
_ALIASES = {"gemma3": "gemma3_text", "qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text"}


def supported_model_types() -> list[str]:
    return sorted(FAMILIES)


# --- activations -------------------------------------------------------------------

_GELU = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "gelu_accurate",
         "quick_gelu", "gelu_tanh"}  # fmt: skip


def _activation(raw: str, gated: bool) -> str | None:
    name = raw.lower()
    if name in _GELU:
        return "geglu" if gated else "gelu"
    if name in ("silu", "swish"):
        return "swiglu" if gated else "silu"
    if name == "relu":
        return "reglu" if gated else "relu"
    if name in ("relu2", "squared_relu", "relu_squared") and not gated:
        return "squared-relu"
    if name == "xielu" and not gated:  # Apertus: up, xIELU, down
        return "xielu"
    return None


# --- the draft card --------------------------------------------------------------

_MISSING = object()


class _Draft:
    """A card being filled from a config: every value remembers where it came from."""

    def __init__(self, config: Mapping[str, Any], family: Family) -> None:
        self.config = config
        self.family = family
        self.used: set[str] = set()
        self.values: dict[str, Any] = {}
        self.origins: dict[str, str] = {}  # card path -> "config" or "family"
        self.notes: dict[str, str] = {}
        self.unmapped: dict[str, Any] = {}
        self.key_origin: dict[str, str] = {}

    def read(self, *keys: str, default: Any = None, required: bool = False) -> Any:
        """The first key present (and not null); marks it used and records its origin."""
        for key in keys:
            if key in self.config:
                self.used.add(key)
                if self.config[key] is not None:
                    self.key_origin[keys[0]] = "config"
                    return self.config[key]
        if required:
            raise HFImportError(f"config.json has no {' or '.join(keys)}: cannot map it")
        self.key_origin[keys[0]] = "family"
        return default

    def origin_of(self, key: str) -> str:
        return self.key_origin.get(key, "family")

    def set(self, path: str, value: Any, origin: str) -> None:
        self.values[path] = value
        self.origins[path] = origin

    def clear(self, path: str) -> None:
        self.values.pop(path, None)
        self.origins.pop(path, None)

    def value(self, path: str) -> Any:
        return self.values.get(path)

    def note(self, path: str, text: str) -> None:
        self.notes[path] = f"{self.notes[path]} {text}" if path in self.notes else text

    def moe(
        self,
        n_experts: int,
        n_active: int,
        n_shared: int = 0,
        shared_d_ff: int | None = None,
        first_dense_layers: int = 0,
        layer_period: int = 1,
        dense_d_ff: int | None = None,
    ) -> None:
        moe = dict(
            n_experts=n_experts,
            n_active=n_active,
            n_shared=n_shared,
            shared_d_ff=shared_d_ff,
            first_dense_layers=first_dense_layers,
            layer_period=layer_period,
            dense_d_ff=dense_d_ff,
        )
        for name, value in moe.items():
            self.set(f"architecture.mlp.moe.{name}", value, "config")

    def latent(self, **dims: Any) -> None:
        self.set("architecture.attention.variant", "latent", "config")
        for name, value in dims.items():
            self.set(f"architecture.attention.latent.{name}", value, "config")
        self.set("architecture.attention.head_dim", dims["v_head_dim"], "config")
        self.note(
            "architecture.attention.head_dim",
            "MLA: v_head_dim; each query/key head is qk_nope_head_dim + qk_rope_head_dim wide.",
        )


# --- mapping ---------------------------------------------------------------------


def _sizes(d: _Draft) -> None:
    f = d.family
    d_model = d.read("hidden_size", "n_embd", "n_embed", "d_model", required=True)
    d.set("architecture.d_model", d_model, "config")
    d.set(
        "architecture.n_layers",
        d.read("num_hidden_layers", "n_layer", "num_layers", required=True),
        "config",
    )
    n_heads = d.read("num_attention_heads", "n_head", "num_heads", required=True)
    d.set("architecture.attention.n_heads", n_heads, "config")
    kv = d.read("num_key_value_heads", "num_kv_heads", "n_head_kv", default=n_heads)
    d.set("architecture.attention.n_kv_heads", kv, d.origin_of("num_key_value_heads"))
    head_dim = d.read("head_dim")
    if head_dim is not None:
        d.set("architecture.attention.head_dim", head_dim, "config")
    d.set("architecture.vocab_size", d.read("vocab_size", required=True), "config")
    context = d.read("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
    if context is not None:
        d.set("architecture.context_length", context, "config")
    if d.config.get("n_ctx") == context:
        d.used.add("n_ctx")
    d_ff = d.read("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim")
    if d_ff is None and f.d_ff_default_ratio:
        d.set("architecture.mlp.d_ff", f.d_ff_default_ratio * d_model, "family")
    elif d_ff is not None:
        d.set("architecture.mlp.d_ff", d_ff, "config")


def _mlp(d: _Draft) -> None:
    f = d.family
    spellings = ("hidden_activation", "hidden_act", "activation_function", "activation")
    raw = d.read(*spellings, default=f.activation_default)
    d.used.update(k for k in spellings if k in d.config)  # legacy duplicates (Gemma's hidden_act)
    mapped = _activation(str(raw), f.gated)
    origin = d.origin_of("hidden_activation")
    d.set("architecture.mlp.activation", mapped, origin)
    if mapped is None:
        d.unmapped["activation"] = raw
        d.note("architecture.mlp.activation", f"config activation {raw!r} has no schema value.")
    d.set("architecture.mlp.moe", None, "family")


def _norm(d: _Draft) -> None:
    f = d.family
    for name, value in (
        ("type", f.norm),
        ("position", f.norm_position),
        ("affine", f.norm_affine),
        ("final", True),
    ):
        d.set(f"architecture.norm.{name}", value, "family")
    d.set("architecture.parallel_layers", f.parallel, "family")
    if f.parallel and f.shared_norm_in_parallel is not None:
        d.set("architecture.norm.shared_in_parallel", f.shared_norm_in_parallel, "family")


def _bias(d: _Draft) -> None:
    f = d.family
    if f.fixed_bias is not None:
        for part, value in zip(("qkv", "attn_out", "mlp"), f.fixed_bias, strict=True):
            d.set(f"architecture.bias.{part}", value, "family")
        return
    attn = d.read("attention_bias", default=f.attention_bias_default)
    d.set("architecture.bias.qkv", attn, d.origin_of("attention_bias"))
    d.set("architecture.bias.attn_out", attn, d.origin_of("attention_bias"))
    if f.mlp_bias is not None:
        d.set("architecture.bias.mlp", f.mlp_bias, "family")
    else:
        d.set("architecture.bias.mlp", d.read("mlp_bias", default=False), d.origin_of("mlp_bias"))


def _rope_parameters(d: _Draft) -> tuple[dict[str, Any], dict[str, Any]]:
    """The full-attention and local-attention RoPE settings, whatever the spelling."""
    params = d.read("rope_parameters", default={}) or {}
    if "full_attention" in params or "sliding_attention" in params:
        return params.get("full_attention") or {}, params.get("sliding_attention") or {}
    return params, {}


def _position(d: _Draft) -> None:
    f = d.family
    d.set("architecture.position.type", f.position, "family")
    if f.position != "rope":
        return
    full, local = _rope_parameters(d)
    theta = d.read("rope_theta", "rotary_emb_base", "rope_embedding_base")
    origin = "config"
    if theta is None:
        theta = full.get("rope_theta")
        origin = "config" if theta is not None else "family"
    d.set("architecture.position.rope_theta", float(theta or f.rope_theta_default), origin)
    local_theta = d.read("rope_local_base_freq") or local.get("rope_theta")
    if local_theta is not None and float(local_theta) != float(theta or f.rope_theta_default):
        d.set("architecture.position.rope_theta_local", float(local_theta), "config")
    fraction = d.read("partial_rotary_factor", "rotary_pct") or full.get("partial_rotary_factor")
    origin = "config" if fraction is not None else "family"
    fraction = fraction if fraction is not None else f.rotary_fraction_default
    if fraction is not None and fraction < 1:
        d.set("architecture.position.rotary_fraction", float(fraction), origin)
    scaling = d.read("rope_scaling") or (
        full if full.get("rope_type", "default") != "default" else None
    )
    if scaling:
        _rope_scaling(d, dict(scaling))


_SCALING_KEYS = {  # card field -> config key, per scaling type (factor for all)
    "linear": {},
    "dynamic": {"original_context": "original_max_position_embeddings"},
    "yarn": {
        "original_context": "original_max_position_embeddings",
        "beta_fast": "beta_fast",
        "beta_slow": "beta_slow",
        "truncate": "truncate",
    },
    "llama3": {
        "original_context": "original_max_position_embeddings",
        "low_freq_factor": "low_freq_factor",
        "high_freq_factor": "high_freq_factor",
    },
}
_SCALING_BOOKKEEPING = {"rope_type", "type", "factor", "rope_theta", "partial_rotary_factor"}


def _rope_scaling(d: _Draft, scaling: dict[str, Any]) -> None:
    """position.rope_scaling from a config's scaling block; what the card cannot hold
    (DeepSeek's mscale, unknown types) is reported and noted."""
    kind = scaling.get("rope_type") or scaling.get("type")
    keys = _SCALING_KEYS.get(str(kind))
    factor = scaling.get("factor")
    if keys is None or not isinstance(factor, int | float) or factor <= 0:
        d.unmapped["rope_scaling"] = scaling
        d.note(
            "architecture.position",
            f"config.json rope scaling {_short(scaling)} is not "
            "represented in the card (rope_theta is the base frequency).",
        )
        return
    mapped: dict[str, Any] = {"type": kind, "factor": float(factor)}
    for name, key in keys.items():
        value = scaling.get(key)
        if name == "truncate":  # a flag (gpt-oss: false); anything else is reported below
            if isinstance(value, bool):
                mapped[name] = value
        elif value is not None:
            mapped[name] = value if name == "original_context" else float(value)
    for name, value in mapped.items():
        d.set(f"architecture.position.rope_scaling.{name}", value, "config")
    held = {key for name, key in keys.items() if name != "truncate" or name in mapped}
    rest = {k: v for k, v in scaling.items() if k not in _SCALING_BOOKKEEPING and k not in held}
    if rest:
        d.unmapped["rope_scaling"] = rest
        d.note(
            "architecture.position.rope_scaling",
            f"config.json rope scaling also sets {_short(rest)}, which the card does not hold.",
        )


def _short(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


_LAYER_KINDS = {
    "full_attention": None,
    "sliding_attention": "local",
    "chunked_attention": "chunked",
}


def _pattern_from_types(types: list[str], d: _Draft) -> list[str]:
    layers = d.value("architecture.n_layers")
    if len(types) != layers:
        raise HFImportError(
            f"layer_types lists {len(types)} layers but num_hidden_layers is {layers}: "
            "the config contradicts itself"
        )
    kinds = []
    for index, t in enumerate(types):
        if t == "linear_attention" and d.family.linear_layer:
            kinds.append(d.family.linear_layer)
            continue
        if t not in _LAYER_KINDS:
            raise HFImportError(
                f"layer_types[{index}] is {_brief(t)}: not an attention kind the card knows "
                f"({', '.join(_LAYER_KINDS)})"
            )
        kinds.append(_LAYER_KINDS[t] or d.family.full_layer)
    return _period(kinds)


def _period(kinds: list[str]) -> list[str]:
    """The shortest prefix whose tiling gives every layer: l l l l l g l l ... -> l l l l l g.

    That prefix's length is the list's smallest period: its length minus its longest
    border (a proper prefix that is also a suffix), found by the Knuth-Morris-Pratt failure
    function in linear time.
    """
    border = [0] * len(kinds)
    k = 0
    for i in range(1, len(kinds)):
        while k and kinds[i] != kinds[k]:
            k = border[k - 1]
        if kinds[i] == kinds[k]:
            k += 1
        border[i] = k
    period = len(kinds) - (border[-1] if kinds else 0)
    return kinds[:period]


def _attention(d: _Draft) -> None:
    f = d.family
    d.set("architecture.attention.variant", "softmax", "family")
    d.set("architecture.attention.qk_norm", f.qk_norm, "family")
    d.set("architecture.attention.logit_softcap", d.read("attn_logit_softcapping"), "config")
    d.set("architecture.final_logit_softcap", d.read("final_logit_softcapping"), "config")
    window = d.read("sliding_window")
    types = d.read("layer_types")
    every = d.read("sliding_window_pattern")
    use_window = d.read("use_sliding_window", default=True)
    if types:
        pattern, origin = _pattern_from_types(list(types), d), "config"
    elif every:
        pattern = ["local"] * (every - 1) + [f.full_layer]
        origin = "config"
    elif f.sliding_everywhere and window and use_window:
        pattern, origin = ["local"], "config"
    elif f.default_pattern != ("global",) and window:
        pattern, origin = list(f.default_pattern), "family"
    else:
        pattern, origin = ["global"], "family"
    d.set("architecture.attention.layer_pattern", pattern, origin)
    uses_window = bool({"local", "chunked"} & set(pattern))
    d.set("architecture.attention.sliding_window", window if uses_window else None, "config")
    if window and not uses_window:
        d.unmapped["sliding_window"] = f"{window} (not applied: every layer is full attention)"
    if "max_window_layers" in d.config and not use_window:
        d.used.add("max_window_layers")


_GELU_TANH = {"gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_accurate", "gelu_tanh"}
_GELU_EXACT = {"gelu", "gelu_python"}
# config classes' epsilon defaults where they are not 1e-6 (RMSNorm) or 1e-5 (LayerNorm)
_EPS_DEFAULTS = {"olmo2": 1e-5, "phi3": 1e-5, "mixtral": 1e-5, "apertus": 1e-5}
_EPS_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon", "norm_eps")


def _function(d: _Draft) -> None:
    """Choices that change outputs but not counts: norm epsilon and scale form, GELU form,
    RoPE layout, and the unit factors (set by family hooks where they are not 1)."""
    f = d.family
    default = _EPS_DEFAULTS.get(f.module, 1e-5 if f.norm == "layernorm" else 1e-6)
    eps = d.read(*_EPS_KEYS, default=default)
    d.used.update(k for k in _EPS_KEYS if k in d.config)
    if eps > 0:
        d.set("architecture.norm.eps", float(eps), d.origin_of(_EPS_KEYS[0]))
    if d.value("architecture.norm.unit_offset") is None:  # Nemotron's LayerNorm1P: (1 + w)
        d.set("architecture.norm.unit_offset", f.module == "nemotron", "family")
    if d.value("architecture.position.type") == "rope" and (
        d.value("architecture.position.rope_layout") is None
    ):
        d.set("architecture.position.rope_layout", f.rope_layout, "family")
    activation = d.value("architecture.mlp.activation")
    if activation in ("gelu", "geglu"):
        raw = str(d.read("hidden_activation", "hidden_act", "activation_function", "activation",
                         default=f.activation_default)).lower()  # fmt: skip
        form = "tanh" if raw in _GELU_TANH else "exact" if raw in _GELU_EXACT else None
        origin = d.origin_of("hidden_activation")
        if form is None:
            d.note("architecture.mlp.gelu_approximation", f"{raw!r} is neither erf nor tanh GELU.")
        else:
            d.set("architecture.mlp.gelu_approximation", form, origin)
    for path in ("architecture.embedding_multiplier", "architecture.logit_scale"):
        if d.value(path) is None:
            d.set(path, 1.0, "family")


def _tied(d: _Draft) -> None:
    tied = d.read("tie_word_embeddings", default=d.family.tied_default)
    d.set("architecture.tied_embeddings", tied, d.origin_of("tie_word_embeddings"))


# --- the result ------------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """What a config does not say: who released the model, when, under which id."""

    id: str
    name: str
    family: str
    organization: str
    release_date: dt.date | str
    open_weights: bool = True
    params_published: int | None = None


@dataclass
class Imported:
    card: dict[str, Any]  # plain data in schema order, for writer.validate_card
    model_type: str
    from_config: list[str]  # card paths read from config.json
    from_family: list[str]  # card paths the transformers implementation fixes
    unmapped: dict[str, Any]  # config keys (or code facts) with no card field
    ignored: list[str]  # bookkeeping keys: token ids, dtype, dropout of fine-tuning, eps
    unknown: list[str] = field(default_factory=list)  # core fields left null (with a note)


def import_config(config: Mapping[str, Any], *, source_url: str, identity: Identity) -> Imported:
    """A card for the model a config.json describes; HFImportError if it cannot be mapped."""
    if not re.match(r"^https?://\S+$", source_url or ""):
        raise HFImportError("a source is required: give the config's URL (https://...)")
    check_shape(config)
    decoder, wrapper_note = _decoder_config(config)
    if wrapper_note:
        check_shape(decoder, prefix="text_config.")
    model_type, via = _family_of(decoder, config)
    family = FAMILIES[model_type]
    d = _Draft(decoder, family)
    for step in family.steps or (_sizes, _norm, _attention, _position, _mlp, _bias, _tied):
        step(d)
    if family.hook:
        family.hook(d)
    _function(d)
    if wrapper_note:
        d.note("architecture", wrapper_note)
    if via:
        d.note("architecture", f"Imported as transformers' {model_type}: {via}.")
    return _result(d, model_type, source_url, identity, config)


def _family_of(decoder: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[str, str | None]:
    """The supported model_type a config belongs to, and how it was recognised. A custom
    model_type (Kimi K2 says ``kimi_k2``) is read through ``architectures`` when that names
    a supported family's model class (``DeepseekV3ForCausalLM``)."""
    declared = str(decoder.get("model_type"))
    model_type = _ALIASES.get(declared, declared)
    if model_type in FAMILIES:
        return model_type, None
    for name in _architectures(decoder) or _architectures(config):
        if (found := _model_type_of_class(name)) is not None:
            return (
                found,
                f"the config's model_type {declared!r} is custom, its architectures name {name}",
            )
    raise HFImportError(
        f"model_type {declared!r} is not supported; supported: {', '.join(supported_model_types())}"
    )


def _architectures(config: Mapping[str, Any]) -> list[str]:
    names = config.get("architectures")
    if not isinstance(names, list):
        return []
    return [n for n in names[:16] if isinstance(n, str) and len(n) <= 200]


# the model classes transformers names after a decoder layer's prefix (LlamaDecoderLayer:
# LlamaForCausalLM, LlamaModel); a class name matches a family only with one of these
_MODEL_CLASS_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "Model")


def _model_type_of_class(name: str) -> str | None:
    for model_type, family in FAMILIES.items():
        prefix = re.sub(r"(DecoderLayer|Layer|Block)$", "", family.layer)
        if name.startswith(prefix) and name[len(prefix) :] in _MODEL_CLASS_SUFFIXES:
            return model_type
    return None


def _decoder_config(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    text = config.get("text_config")
    if isinstance(text, Mapping):
        outer = config.get("model_type", "a multimodal model")
        return {**text, "model_type": text.get("model_type", outer)}, (
            f"{outer} is multimodal: the card records its language decoder (text_config)."
        )
    return config, None


def _result(
    d: _Draft, model_type: str, source_url: str, identity: Identity, original: Mapping[str, Any]
) -> Imported:
    architecture = _nest({k.removeprefix("architecture."): v for k, v in d.values.items()})
    architecture = _ordered_architecture(architecture)
    notes = dict(d.notes)
    unknown = [
        p
        for p in UNKNOWN_WHEN_NULL
        if p.startswith("architecture.") and _get(architecture, p) is None
    ]
    for path in unknown:
        notes.setdefault(
            path,
            "Not in config.json, and the transformers implementation does "
            "not fix it: fill it from the paper or model card.",
        )
    if identity.params_published is None:
        notes["params_published"] = (
            "Not given when the card was imported from config.json: "
            "add the authors' headline figure."
        )
    from_config = sorted(p for p, o in d.origins.items() if o == "config" and _leaf(d, p))
    from_family = sorted(p for p, o in d.origins.items() if o == "family" and _leaf(d, p))
    leaves = from_config + from_family
    sources = [
        {
            "kind": "config",
            "title": _config_title(source_url),
            "url": source_url,
            "locator": "config.json",
            "supports": _covering(from_config, leaves),
        }
    ]
    if from_family:
        module = d.family.module
        sources.append(
            {
                "kind": "code",
                "title": f"transformers modeling_{module}.py",
                "url": f"{TRANSFORMERS_MODELS}/{module}/modeling_{module}.py",
                "locator": f"{d.family.layer} and the config class defaults",
                "supports": _covering(from_family, leaves),
            }
        )
    card = {
        "id": identity.id,
        "name": identity.name,
        "family": identity.family,
        "organization": identity.organization,
        "release_date": identity.release_date,
        "open_weights": identity.open_weights,
        "params_published": identity.params_published,
        "training": {"tokens": None, "dropout": None, "weight_decay": None, "z_loss": None},
        "architecture": architecture,
        "sources": sources,
        "notes": notes,
    }
    ignored = sorted(k for k in d.config if k in IGNORED_KEYS)
    unmapped = dict(d.unmapped)
    for key, value in d.config.items():
        if key in MUST_BE and value in (MUST_BE[key], None):
            ignored.append(key)
        elif key not in d.used and key not in IGNORED_KEYS and key not in unmapped:
            unmapped[key] = value
    if original is not d.config:
        ignored += sorted(k for k in original if k != "text_config")
    return Imported(card, model_type, from_config, from_family, unmapped, ignored, unknown)


def _covering(paths: list[str], leaves: list[str]) -> list[str]:
    """Paths with each sub-model whose every sourced leaf is in ``paths`` named once.

    supports: [architecture.norm] says the same as its four leaves, and reads better.
    """
    mine = set(paths)
    out: set[str] = set()
    for path in paths:
        cover = path
        parent = path.rpartition(".")[0]
        while parent.count(".") >= 1:  # sub-models of architecture, never architecture itself
            under = [leaf for leaf in leaves if leaf.startswith(parent + ".")]
            if not all(leaf in mine for leaf in under):
                break
            cover, parent = parent, parent.rpartition(".")[0]
        out.add(cover)
    return sorted(out)


def _leaf(d: _Draft, path: str) -> bool:
    """Only non-null leaves need a source (a null optional feature means 'not used')."""
    return d.values.get(path) is not None


def _config_title(url: str) -> str:
    match = re.match(r"^https?://huggingface\.co/([^/]+/[^/]+)/", url)
    return f"{match.group(1)} config.json" if match else "config.json"


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for path, value in flat.items():
        node = nested
        *parents, leaf = path.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[leaf] = value
    return nested


def _get(data: Mapping[str, Any], path: str) -> Any:
    node: Any = {"architecture": data}
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


_ARCH_ORDER = (
    "kind",
    "d_model",
    "n_layers",
    "vocab_size",
    "embedding_dim",
    "context_length",
    "norm",
    "attention",
    "position",
    "mlp",
    "bias",
    "parallel_layers",
    "tied_embeddings",
    "final_logit_softcap",
    "mixers",
    "embedding_multiplier",
    "logit_scale",
)
_SUB_ORDER = {
    "norm": ("type", "position", "affine", "final", "shared_in_parallel", "eps", "unit_offset"),
    "attention": (
        "variant",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "qk_norm",
        "logit_softcap",
        "sliding_window",
        "layer_pattern",
        "latent",
        "sinks",
        "output_gate",
        "scale",
    ),
    "position": (
        "type",
        "rope_theta",
        "rope_theta_local",
        "rotary_fraction",
        "learned_rows",
        "rope_scaling",
        "rope_layout",
    ),
    "mlp": ("activation", "d_ff", "moe", "gelu_approximation", "swiglu_limit", "swiglu_alpha"),
    "bias": ("qkv", "attn_out", "mlp", "lm_head"),
}
_REQUIRED_NULLS = {"attention": ("head_dim",), "": ("context_length",)}


def _ordered_architecture(arch: dict[str, Any]) -> dict[str, Any]:
    """Schema order, with every required field present (null where unknown)."""
    arch = {"kind": "decoder-only", **arch}
    for name in _REQUIRED_NULLS[""]:
        arch.setdefault(name, None)
    out: dict[str, Any] = {}
    for key in _ARCH_ORDER:
        if key not in arch:
            continue
        value = arch[key]
        if key in _SUB_ORDER and isinstance(value, dict):
            for name in _REQUIRED_NULLS.get(key, ()):
                value.setdefault(name, None)
            value = {k: value[k] for k in _SUB_ORDER[key] if k in value}
            if key == "mlp" and isinstance(value.get("moe"), dict):
                value["moe"] = dict(value["moe"])
        out[key] = value
    return out


# --- identity from a URL ---------------------------------------------------------

_SIZE = re.compile(r"^(\d+(\.\d+)?[kmbt]|\d+x\d+(\.\d+)?[kmbt]|a\d+(\.\d+)?[kmbt])$")


def slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")
    return re.sub(r"-{2,}", "-", slug)


def guess_identity(config: Mapping[str, Any], source_url: str) -> dict[str, str]:
    """Defaults for id, name and family from the Hub URL or the config's _name_or_path.

    meta-llama/Llama-2-7b-hf gives id llama-2-7b-hf, name "Llama 2 7b hf" and family llama-2
    (the id up to its first size-like part).
    """
    match = re.match(r"^https?://huggingface\.co/([^/]+)/([^/]+)", source_url or "")
    repo = match.group(2) if match else str(config.get("_name_or_path", "")).rsplit("/", 1)[-1]
    card_id = slugify(repo)
    if not card_id:
        return {}
    parts = card_id.split("-")
    size_at = next((i for i, p in enumerate(parts) if i and _SIZE.match(p)), len(parts))
    return {"id": card_id, "name": repo.replace("-", " "), "family": "-".join(parts[:size_at])}
