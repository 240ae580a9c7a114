"""Map a Hugging Face ``config.json`` to a card.

A released config holds the sizes (``hidden_size``, ``num_key_value_heads``, ...) but not
every architectural choice: transformers keeps some in its modeling code (where the norms
sit, whether the MLP is gated, whether attention and MLP run in parallel, which linear
layers carry a bias). So each supported ``model_type`` has one ``FamilySpec``
(``archdb.families``) saying what its transformers implementation does, the config
class's defaults for keys a config may leave out, and a ``read`` hook on the draft card
for the choices that depend on config keys. The card then cites two sources: the config for what was
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
import struct
from collections.abc import Mapping
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

from archdb.errors import ArchdbError
from archdb.families.spec import FamilySpec
from archdb.fields import get_path, set_path, unwrap
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
    Architecture,
)

TRANSFORMERS_MODELS = (
    "https://github.com/huggingface/transformers/blob/main/src/transformers/models"
)


class HFImportError(ArchdbError, ValueError):
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


def _pattern_letters(value: object) -> object:
    """EXAONE 4 may spell sliding_window_pattern in letters: "LLLG" (L sliding, G full) is
    every fourth layer full, 4; anything else is left for the integer check to refuse."""
    if isinstance(value, str) and len(value) <= MAX_PATTERN and re.fullmatch(r"L*G", value):
        return len(value)
    return value


class _Keys(BaseModel):
    """Keys are checked; others pass through (they are reported as unmapped)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)


class RopeParameters(_Keys):
    rope_theta: Number | None = None
    partial_rotary_factor: Share | None = None
    rope_type: Name | None = None
    full_attention: RopeParameters | None = None
    sliding_attention: RopeParameters | None = None


class LinearAttnConfig(_Keys):
    """Kimi Linear's linear_attn_config: KDA sizes and the 1-based layer lists."""

    num_heads: Heads | None = None
    head_dim: Width | None = None
    short_conv_kernel_size: Width | None = None
    kda_layers: Annotated[list[Layers], Field(max_length=MAX_DEPTH)] | None = None
    full_attn_layers: Annotated[list[Layers], Field(max_length=MAX_DEPTH)] | None = None


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
    # one width, or one per layer (Gemma 3n; only equal widths map to a card)
    intermediate_size: Width | Annotated[list[Width], Field(max_length=MAX_DEPTH)] | None = None
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
    sliding_window_pattern: (
        Annotated[_sized(1, MAX_PATTERN), BeforeValidator(_pattern_letters)] | None
    ) = None
    use_sliding_window: StrictBool | None = None
    max_window_layers: _sized(0, MAX_DEPTH) | None = None
    multi_query: StrictBool | None = None
    new_decoder_architecture: StrictBool | None = None
    qk_layernorm: StrictBool | None = None
    use_qk_norm: StrictBool | None = None
    query_pre_attn_scalar: Number | None = None
    logit_scale: Number | None = None
    # muP factors (Granite)
    embedding_multiplier: Number | None = None
    residual_multiplier: Number | None = None
    attention_multiplier: Number | None = None
    logits_scaling: Number | None = None
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
    attention_out_bias: StrictBool | None = None  # Seed-OSS: o_proj's own bias flag
    # ERNIE 4.5 MoE: experts, and which layers have them
    moe_num_experts: Heads | None = None
    moe_k: Heads | None = None
    moe_num_shared_experts: _sized(0, MAX_COUNT) | None = None
    moe_layer_start_index: _sized(0, MAX_DEPTH) | None = None
    moe_layer_end_index: Annotated[StrictInt, Field(ge=-1, le=MAX_DEPTH)] | None = None
    moe_layer_interval: Layers | None = None
    moe_norm_min: Number | None = None
    mlp_bias: StrictBool | None = None
    bias: StrictBool | None = None
    enable_bias: StrictBool | None = None
    tie_word_embeddings: StrictBool | None = None
    # mixture of experts and latent attention
    num_local_experts: _sized(0, MAX_COUNT) | None = None  # 0: dense (Granite 4.0-H Micro)
    num_experts: Heads | None = None
    n_routed_experts: Heads | None = None
    num_experts_per_tok: Heads | None = None
    n_shared_experts: _sized(0, MAX_COUNT) | None = None
    # a per-layer list only in Hunyuan's released configs (_PER_LAYER_LISTS)
    moe_intermediate_size: Width | Annotated[list[Width], Field(max_length=MAX_DEPTH)] | None = None
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
    # routers (DeepSeek-V2/V3, GLM-4.5)
    scoring_func: Name | None = None
    topk_method: Name | None = None
    n_group: Heads | None = None
    topk_group: Heads | None = None
    routed_scaling_factor: Number | None = None
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
    # Mamba-1 (Mamba, Falcon Mamba) and Jamba's layer periods
    time_step_rank: Width | Literal["auto"] | None = None
    mixer_rms_eps: Number | None = None
    mamba_dt_rank: Width | Literal["auto"] | None = None
    attn_layer_period: Layers | None = None
    attn_layer_offset: _sized(0, MAX_DEPTH) | None = None
    expert_layer_period: Layers | None = None
    expert_layer_offset: _sized(0, MAX_DEPTH) | None = None
    # Gemma 4: global layers' own sizes, values from keys, experts beside a dense MLP
    global_head_dim: Width | None = None
    num_global_key_value_heads: Heads | None = None
    attention_k_eq_v: StrictBool | None = None
    enable_moe_block: StrictBool | None = None
    top_k_experts: Heads | None = None
    hidden_size_per_layer_input: _sized(0, MAX_WIDTH) | None = None
    per_layer_config: (
        Annotated[dict[str, dict[str, _sized(1, MAX_WIDTH)]], Field(max_length=MAX_DEPTH)] | None
    ) = None
    num_kv_shared_layers: _sized(0, MAX_DEPTH) | None = None
    # LFM2's short-conv hybrids (and LFM2-MoE)
    conv_L_cache: Width | None = None
    conv_bias: StrictBool | None = None
    full_attn_idxs: Annotated[list[_sized(0, MAX_DEPTH)], Field(max_length=MAX_DEPTH)] | None = None
    block_ff_dim: Width | None = None
    block_auto_adjust_ff_dim: StrictBool | None = None
    block_ffn_dim_multiplier: Number | None = None
    block_multiple_of: Width | None = None
    tie_embedding: StrictBool | None = None
    num_dense_layers: _sized(0, MAX_DEPTH) | None = None
    use_expert_bias: StrictBool | None = None
    routed_scaling_factor: Number | None = None
    # single-sublayer stacks (Nemotron-H, Nemotron 3)
    hybrid_override_pattern: Annotated[str, Field(max_length=MAX_PATTERN)] | None = None
    layers_block_type: Annotated[list[Name], Field(max_length=MAX_PATTERN)] | None = None
    attention_head_dim: Width | None = None
    mamba_num_heads: Heads | None = None
    mamba_head_dim: Width | None = None
    ssm_state_size: Width | None = None
    mlp_hidden_act: Name | None = None
    moe_shared_expert_intermediate_size: Width | None = None
    moe_latent_size: Width | None = None
    # Zamba2: Mamba-2 sizes, shared blocks and their adapters
    n_mamba_heads: Heads | None = None
    mamba_ngroups: Heads | None = None
    mamba_headdim: Width | None = None
    num_mem_blocks: Heads | None = None
    adapter_rank: Width | None = None
    use_shared_attention_adapter: StrictBool | None = None
    use_mem_rope: StrictBool | None = None
    use_long_context: StrictBool | None = None
    add_bias_linear: StrictBool | None = None
    time_step_min: Number | None = None
    # SmolLM3: which layers rotate (1) and which are NoPE (0), or every n-th layer NoPE
    no_rope_layers: Annotated[list[_sized(0, 1)], Field(max_length=MAX_DEPTH)] | None = None
    no_rope_layer_interval: Layers | None = None
    # Kimi Linear: KDA sizes (in linear_attn_config, or transformers' flat keys), its MoE
    linear_attn_config: LinearAttnConfig | None = None
    linear_num_heads: Heads | None = None
    linear_head_dim: Width | None = None
    num_experts_per_token: Heads | None = None
    num_shared_experts: _sized(0, MAX_COUNT) | None = None
    num_expert_group: Heads | None = None
    model_max_length: Width | None = None
    # Griffin's RG-LRU blocks (RecurrentGemma); the first released configs spell the
    # pattern _block_types
    lru_width: Width | None = None
    attention_window_size: Width | None = None
    conv1d_width: Width | None = None
    logits_soft_cap: Number | None = None
    block_types: Annotated[list[Name], Field(max_length=MAX_PATTERN)] | None = None
    block_types_legacy: Annotated[list[Name], Field(max_length=MAX_PATTERN)] | None = Field(
        None, alias="_block_types"
    )
    embeddings_scale_by_sqrt_dim: StrictBool | None = None
    w_init_variance_scale: Number | None = None
    final_w_init_variance_scale: Number | None = None
    # MiniMax-01: its residual factors (transformers' and the released remote code's names),
    # the released config's layer list (0 lightning, 1 softmax) and residual placement
    block_size: Width | None = None
    full_attn_alpha_factor: Number | None = None
    full_attn_beta_factor: Number | None = None
    linear_attn_alpha_factor: Number | None = None
    linear_attn_beta_factor: Number | None = None
    mlp_alpha_factor: Number | None = None
    mlp_beta_factor: Number | None = None
    layernorm_full_attention_alpha: Number | None = None
    layernorm_full_attention_beta: Number | None = None
    layernorm_linear_attention_alpha: Number | None = None
    layernorm_linear_attention_beta: Number | None = None
    layernorm_mlp_alpha: Number | None = None
    layernorm_mlp_beta: Number | None = None
    attn_type_list: Annotated[list[_sized(0, 1)], Field(max_length=MAX_DEPTH)] | None = None
    postnorm: StrictBool | None = None
    # Hunyuan: top-k under its own name, per-layer lists in released configs, and
    # switches transformers does not build
    moe_topk: Heads | Annotated[list[Heads], Field(max_length=MAX_DEPTH)] | None = None
    num_shared_expert: (
        _sized(0, MAX_COUNT) | Annotated[list[_sized(0, MAX_COUNT)], Field(max_length=MAX_DEPTH)]
    ) | None = None
    use_cla: StrictBool | None = None
    use_mla: StrictBool | None = None
    use_mixed_mlp_moe: StrictBool | None = None
    moe_layer_num_skipped: _sized(0, MAX_DEPTH) | None = None
    # multi-token-prediction modules under their families' names (architecture.mtp)
    mtp_num_hidden_layers: _sized(0, MAX_DEPTH) | None = None
    num_mtp_modules: _sized(0, MAX_DEPTH) | None = None
    mtp_transformer_layers: Layers | None = None
    use_mtp: StrictBool | None = None
    # LongCat-Flash: zero-computation experts, the experts' width, the query-key head width
    zero_expert_num: _sized(0, MAX_COUNT) | None = None
    expert_ffn_hidden_size: Width | None = None
    qk_head_dim: Width | None = None
    mla_scale_q_lora: StrictBool | None = None
    mla_scale_kv_lora: StrictBool | None = None
    zero_expert_type: Name | None = None
    attention_method: Name | None = None


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
    scalar = d.read("query_pre_attn_scalar", default=256)  # Gemma 2's and 3's default
    if scalar and d.family.module != "gemma":  # Gemma 2/3 scale by query_pre_attn_scalar**-0.5
        origin = d.origin_of("query_pre_attn_scalar")
        d.set("architecture.attention.scale", float(scalar) ** -0.5, origin)
    if d.family.module == "gemma2":  # Gemma2Config's softcaps where the config omits them
        for key, (path, cap) in _GEMMA2_SOFTCAPS.items():
            if key not in d.config:
                d.set(path, cap, "family")
    if d.family.module == "gemma3":
        _gemma3_rope_defaults(d)


_GEMMA2_SOFTCAPS = {
    "attn_logit_softcapping": ("architecture.attention.logit_softcap", 50.0),
    "final_logit_softcapping": ("architecture.final_logit_softcap", 30.0),
}


def _gemma3_rope_defaults(d: _Draft) -> None:
    """Gemma3TextConfig's RoPE bases where the config gives none: 1e6 on the full layers,
    1e4 on the sliding ones (not the Llama default the generic reading falls back to)."""
    if d.origins.get("architecture.position.rope_theta") == "family":
        d.set("architecture.position.rope_theta", 1_000_000.0, "family")
    _, local = _rope_parameters(d)
    if local.get("rope_theta") is None and d.config.get("rope_local_base_freq") is None:
        d.set("architecture.position.rope_theta_local", 10_000.0, "family")


def _granite(d: _Draft) -> None:
    """Granite's four muP factors; GraniteConfig's defaults are 1.0 each (no 1/sqrt(d_head))."""
    factors = (
        ("embedding_multiplier", "architecture.embedding_multiplier"),
        ("residual_multiplier", "architecture.residual_multiplier"),
        ("attention_multiplier", "architecture.attention.scale"),
    )
    for key, path in factors:
        d.set(path, _positive(d, key), d.origin_of(key))
    divisor = _positive(d, "logits_scaling")
    d.set("architecture.logit_scale", 1.0 / divisor, d.origin_of("logits_scaling"))
    d.note(
        "architecture.logit_scale",
        f"GraniteForCausalLM divides the logits by logits_scaling ({divisor:g}); the card "
        "stores the factor 1/logits_scaling.",
    )


def _positive(d: _Draft, key: str) -> float:
    """A multiplier (default 1.0): zero would erase the stream or divide by zero."""
    value = d.read(key, default=1.0)
    if not value:
        raise HFImportError(f"config.json: {key} must be a positive number (got {value!r})")
    return float(value)


def _granitemoe(d: _Draft) -> None:
    """GraniteMoe: Granite's factors; every layer's MLP is the experts (Mixtral's routing)."""
    _granite(d)
    _mixtral(d)


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
    # q_a_layernorm and kv_a_layernorm take the RMSNorm class's default, not rms_norm_eps
    d.set("architecture.attention.latent.norm_eps", 1e-6, "family")
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
    _mtp(d)


def _mtp(
    d: _Draft,
    key: str = "num_nextn_predict_layers",
    layers_key: str | None = None,
    switch: str | None = None,
) -> None:
    """The MTP modules beside the model (architecture.mtp): their count under ``key``, the
    blocks of each under ``layers_key``, none when ``switch`` is false; counted apart from
    the model, as transformers builds none."""
    n = d.read(key)
    if switch is not None and d.read(switch) is False:
        n = 0
    if n is None:
        return
    d.set("architecture.mtp.n_modules", n, "config")
    layers = d.read(layers_key) if layers_key else None
    if n and layers is not None:
        d.set("architecture.mtp.layers_per_module", layers, "config")


def _deepseek_v2(d: _Draft) -> None:
    _deepseek(d)
    if d.value("architecture.mlp.moe.n_experts"):
        _softmax_router(d)


def _softmax_router(d: _Draft) -> None:
    """transformers' DeepseekV2TopkRouter: softmax shares of all experts, greedy or
    group-limited (groups ranked by their best score), times routed_scaling_factor;
    it never renormalizes (norm_topk_prob is not read)."""
    scoring = d.read("scoring_func", default="softmax")
    if scoring != "softmax":
        raise HFImportError(
            f"scoring_func {_short(scoring)}: transformers' deepseek_v2 scores by softmax"
        )
    d.set("architecture.mlp.moe.score_function", "softmax", "family")
    d.set("architecture.mlp.moe.normalize_top_k", False, "family")
    if d.read("norm_topk_prob", default=False):
        d.note(
            "architecture.mlp.moe.normalize_top_k",
            "config.json sets norm_topk_prob true, which transformers' deepseek_v2 does "
            "not read: the card follows transformers (no renormalization).",
        )
    method = d.read("topk_method", default="greedy")
    if method == "group_limited_greedy":
        _groups(d, "max", d.read("n_group", required=True), d.read("topk_group", required=True))
    elif method != "greedy":
        raise HFImportError(
            f"topk_method {_short(method)}: transformers' deepseek_v2 routes greedy or "
            "group_limited_greedy"
        )
    elif d.config.get("n_group") == 1 and d.config.get("topk_group") == 1:
        # greedy reads no groups; one group holding every expert is greedy too (V2-Lite's
        # config states it); other group counts stay reported as unread
        _groups(d, "max", d.read("n_group"), d.read("topk_group"))
    scale = d.read("routed_scaling_factor", default=1.0)  # DeepseekV2Config's default
    d.set("architecture.mlp.moe.routed_scale", float(scale), d.origin_of("routed_scaling_factor"))


def _sigmoid_router(
    d: _Draft, default_groups: int, default_top_groups: int, default_scale: float
) -> None:
    """transformers' DeepseekV3TopkRouter (GLM-4.5's too): sigmoid scores plus the
    e_score_correction_bias to choose, groups ranked by their two best, the chosen scores
    renormalized when norm_topk_prob, times routed_scaling_factor (noaux_tc)."""
    for key in ("scoring_func", "topk_method"):  # transformers does not read them
        d.read(key)
    d.set("architecture.mlp.moe.score_function", "sigmoid", "family")
    d.set("architecture.mlp.moe.score_correction_bias", True, "family")
    normalize = d.read("norm_topk_prob", default=True)
    d.set("architecture.mlp.moe.normalize_top_k", normalize, d.origin_of("norm_topk_prob"))
    n_groups = d.read("n_group", default=default_groups)
    _groups(d, "top2-sum", n_groups, d.read("topk_group", default=default_top_groups))
    scale = d.read("routed_scaling_factor", default=default_scale)
    d.set("architecture.mlp.moe.routed_scale", float(scale), d.origin_of("routed_scaling_factor"))


def _groups(d: _Draft, score: str, n_groups: int, top_k_groups: int) -> None:
    d.set("architecture.mlp.moe.n_groups", n_groups, d.origin_of("n_group"))
    d.set("architecture.mlp.moe.top_k_groups", top_k_groups, d.origin_of("topk_group"))
    if n_groups > 1:
        d.set("architecture.mlp.moe.group_score", score, "family")


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
    _mixer_only_stack(d, "mamba2", "Mamba-2")


def _mixer_only_stack(d: _Draft, kind: str, label: str) -> None:
    """What transformers fixes for a stack of mixer-only layers (Mamba, Mamba-2): pre
    RMSNorm, no attention, MLP, positions or biases; the output head as the config says."""
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
        ("attention.layer_pattern", [kind]),
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
    free = f"Attention-free: every layer is a {label} mixer (the transformers implementation)."
    for path in ("attention.n_heads", "attention.n_kv_heads", "attention.qk_norm"):
        d.note(f"architecture.{path}", free)
    for path in ("mlp.activation", "mlp.d_ff"):
        d.note(f"architecture.{path}", f"No MLP: a {label} layer is the mixer alone.")
    d.note("architecture.context_length", f"{label} has no position limit in its config.")
    _tied(d)


def _mamba_dt_rank(d: _Draft, key: str) -> int:
    """time_step_rank / mamba_dt_rank; "auto" is ceil(hidden_size / 16) in transformers."""
    rank = d.read(key, default="auto")
    return math.ceil(d.value("architecture.d_model") / 16) if rank == "auto" else rank


def _mamba_layers(d: _Draft, inner_norm: str) -> None:
    """Mamba and Falcon Mamba: norm, mixer, residual per layer; no attention, no MLP."""
    d_model = d.read("hidden_size", required=True)
    d.set("architecture.d_model", d_model, "config")
    d.set("architecture.n_layers", d.read("num_hidden_layers", required=True), "config")
    d.set("architecture.vocab_size", d.read("vocab_size", required=True), "config")
    if str(d.read("hidden_act", default="silu")).lower() not in ("silu", "swish"):
        raise HFImportError("hidden_act: the Mamba mixer's gate and conv use SiLU only")
    inner = d.read("intermediate_size") or int(d.read("expand", default=2) * d_model)
    sizes = {
        "d_inner": inner,
        "state_size": d.read("state_size", default=16),
        "conv_kernel": d.read("conv_kernel", default=4),
        "dt_rank": _mamba_dt_rank(d, "time_step_rank"),
        "conv_bias": d.read("use_conv_bias", default=True),
        "proj_bias": d.read("use_bias", default=False),
    }
    for name, value in sizes.items():
        d.set(f"architecture.mixers.mamba.{name}", value, "config")
    d.set("architecture.mixers.mamba.inner_norm", inner_norm, "family")
    if inner_norm == "rms":
        eps = float(d.read("mixer_rms_eps", default=1e-6))
        d.set("architecture.mixers.mamba.inner_norm_eps", eps, d.origin_of("mixer_rms_eps"))
    d.set("architecture.mixers.mamba.mlp", False, "family")
    _mixer_only_stack(d, "mamba", "Mamba")


def _mamba(d: _Draft) -> None:
    _mamba_layers(d, "none")


def _falcon_mamba(d: _Draft) -> None:
    """Falcon Mamba: Mamba with parameter-free RMSNorms on dt, B and C (mixer_rms_eps)."""
    _mamba_layers(d, "rms")


def _jamba(d: _Draft) -> None:
    """Jamba: Mamba-1 layers (learned-scale RMSNorms on dt, B, C at rms_norm_eps) and
    attention without positions at i % attn_layer_period == attn_layer_offset; every layer
    has the MLP, the experts at i % expert_layer_period == expert_layer_offset."""
    n_layers = d.value("architecture.n_layers")
    period, offset = d.read("attn_layer_period", default=8), d.read("attn_layer_offset", default=4)
    if offset >= period:
        raise HFImportError(f"attn_layer_offset ({offset}) must be below attn_layer_period")
    kinds = ["global" if i % period == offset else "mamba" for i in range(n_layers)]
    d.set("architecture.attention.layer_pattern", _period(kinds), "config")
    experts = d.read("num_experts", "num_local_experts", default=16)
    e_period = d.read("expert_layer_period", default=2)
    e_offset = d.read("expert_layer_offset", default=1)
    if experts > 1:
        if e_offset != e_period - 1:  # archdb's MoE layers are i % k == k - 1
            raise HFImportError(
                f"expert_layer_offset ({e_offset}) other than expert_layer_period - 1: the "
                "card's MoE layers are every layer_period-th counting from 1"
            )
        d_ff = d.value("architecture.mlp.d_ff")
        d.moe(
            n_experts=experts,
            n_active=d.read("num_experts_per_tok", default=2),
            layer_period=e_period,
            dense_d_ff=d_ff if e_period > 1 else None,
        )
        d.set("architecture.mlp.moe.normalize_top_k", False, "family")  # JambaTopKRouter
    else:
        d.set("architecture.mlp.moe", None, "config")
    if "mamba" in kinds:
        sizes = {
            "d_inner": int(d.read("mamba_expand", default=2) * d.value("architecture.d_model")),
            "state_size": d.read("mamba_d_state", default=16),
            "conv_kernel": d.read("mamba_d_conv", default=4),
            "dt_rank": _mamba_dt_rank(d, "mamba_dt_rank"),
            "conv_bias": d.read("mamba_conv_bias", default=True),
            "proj_bias": d.read("mamba_proj_bias", default=False),
        }
        for name, value in sizes.items():
            d.set(f"architecture.mixers.mamba.{name}", value, "config")
        d.set("architecture.mixers.mamba.inner_norm", "rms-scaled", "family")
        eps = float(d.read("rms_norm_eps", default=1e-6))
        d.set("architecture.mixers.mamba.inner_norm_eps", eps, d.origin_of("rms_norm_eps"))
        d.set("architecture.mixers.mamba.mlp", True, "family")


_GRIFFIN_BLOCKS = {"recurrent": "rg-lru", "attention": "local"}


def _bfloat16(value: float) -> float:
    """value as a bfloat16 holds it: float32, then the top 16 bits, rounded to nearest even."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _recurrent_gemma(d: _Draft) -> None:
    """RecurrentGemma (Griffin): block_types tiled over the layers, RG-LRU blocks and local
    attention of attention_window_size; the MLP's intermediate_size is both GeGLU branches;
    biases on the MLP and attention's output; (1 + w) RMSNorms; embeddings times
    sqrt(hidden_size) held in bfloat16; logits soft-capped at logits_soft_cap."""
    n_layers = d.value("architecture.n_layers")
    types = d.read("block_types", "_block_types", default=["recurrent", "recurrent", "attention"])
    if not types:
        raise HFImportError("block_types is empty: no layer kind to tile")
    unknown = [t for t in types if t not in _GRIFFIN_BLOCKS]
    if unknown:
        raise HFImportError(
            f"block_types: {_brief(unknown[0])} is not a Griffin block "
            f"({', '.join(_GRIFFIN_BLOCKS)})"
        )
    tiled = (types * (n_layers // len(types) + 1))[:n_layers]  # transformers' tiling
    kinds = _period([_GRIFFIN_BLOCKS[t] for t in tiled])
    d.set("architecture.attention.layer_pattern", kinds, d.origin_of("block_types"))
    window = d.read("attention_window_size", default=2048)
    d.set("architecture.attention.sliding_window", window if "local" in kinds else None,
          d.origin_of("attention_window_size"))  # fmt: skip
    configured = d.value("architecture.mlp.d_ff")
    d.set("architecture.mlp.d_ff", configured // 2, "config")
    d.note(
        "architecture.mlp.d_ff",
        f"One GeGLU branch: RecurrentGemmaMlp halves intermediate_size ({configured}).",
    )
    for part in ("attn_out", "mlp"):  # o_proj and the MLP always have biases
        d.set(f"architecture.bias.{part}", True, "family")
    d.set("architecture.norm.unit_offset", True, "family")
    d_model = d.value("architecture.d_model")
    d.set("architecture.embedding_multiplier", _bfloat16(d_model**0.5), "family")
    d.note(
        "architecture.embedding_multiplier",
        f"sqrt(hidden_size) = {d_model**0.5:.6g} as a bfloat16 (RecurrentGemmaModel's "
        "normalizer buffer).",
    )
    if d.read("embeddings_scale_by_sqrt_dim", default=True) is False:
        d.note(
            "architecture.embedding_multiplier",
            "The config says embeddings_scale_by_sqrt_dim false; transformers scales anyway.",
        )
    cap = d.read("logits_soft_cap", default=30.0)
    if not cap:
        raise HFImportError("logits_soft_cap must be positive: transformers divides by it")
    d.set("architecture.final_logit_softcap", float(cap), d.origin_of("logits_soft_cap"))
    d.used.update(
        k for k in ("w_init_variance_scale", "final_w_init_variance_scale") if k in d.config
    )
    if "rg-lru" not in kinds:
        return
    if str(d.read("hidden_activation", default="gelu_pytorch_tanh")).lower() not in _GELU_TANH:
        raise HFImportError("hidden_activation: the RG-LRU block's gate branch is tanh GELU only")
    sizes = {
        "lru_width": d.read("lru_width", default=d_model),
        "n_heads": d.value("architecture.attention.n_heads"),
        "conv_kernel": d.read("conv1d_width", default=4),
    }
    for name, value in sizes.items():
        d.set(f"architecture.mixers.rg_lru.{name}", value, "config")
    d.set("architecture.mixers.rg_lru.mlp", True, "family")
    d.note(
        "architecture.mixers.rg_lru.n_heads",
        "num_attention_heads: transformers uses it for the gates' blocks too.",
    )


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
    if d.read("norm_topk_prob") is None:  # Qwen3NextConfig's default, unlike Qwen3-MoE's
        d.set("architecture.mlp.moe.normalize_top_k", True, "family")
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
    _mtp(d, "mtp_num_hidden_layers")
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
    _expand_mamba2(d, "BambaMixer", required=True)


def _expand_mamba2(d: _Draft, mixer: str, required: bool, **defaults: int) -> None:
    """The mamba_* sizes of a mixer as wide as mamba_expand x hidden_size (Bamba, Granite
    4.0-H), whose layers also have the MLP; ``defaults`` where the config class has them."""
    d_model = d.value("architecture.d_model")
    heads = d.read("mamba_n_heads", required=required, default=defaults.get("n_heads"))
    inner = int(d.read("mamba_expand", required=required, default=defaults.get("expand")) * d_model)
    head_dim = d.read("mamba_d_head", default="auto")
    if head_dim == "auto":
        head_dim = inner // heads
    if heads * head_dim != inner:
        raise HFImportError(
            f"mamba_n_heads x mamba_d_head ({heads} x {head_dim}) differs from mamba_expand x "
            f"hidden_size ({inner}): transformers' {mixer} cannot run this config"
        )
    _silu_conv(d)
    sizes = {
        "n_heads": heads,
        "head_dim": head_dim,
        "state_size": d.read("mamba_d_state", required=required, default=defaults.get("state")),
        "n_groups": d.read("mamba_n_groups", default=1),
        "conv_kernel": d.read("mamba_d_conv", required=required, default=defaults.get("conv")),
        "conv_bias": d.read("mamba_conv_bias", default=True),
        "proj_bias": d.read("mamba_proj_bias", default=False),
    }
    for name, value in sizes.items():
        d.set(f"architecture.mixers.mamba2.{name}", value, "config")
    d.set("architecture.mixers.mamba2.mlp", True, "family")


def _granitemoehybrid(d: _Draft) -> None:
    """Granite 4.0-H: Mamba-2 and attention layers, each followed by routed experts beside
    a shared MLP (the shared MLP alone without experts); Granite's factors; RoPE only with
    position_embedding_type rope (GraniteMoeHybridConfig's defaults throughout)."""
    _granite(d)
    if not d.read("layer_types"):  # the config class's default: every layer linear_attention
        d.set("architecture.attention.layer_pattern", ["mamba2"], "family")
    if "mamba2" in d.value("architecture.attention.layer_pattern"):
        _expand_mamba2(
            d, "GraniteMoeHybridMambaLayer", False, n_heads=128, expand=2, state=256, conv=4
        )
        _no_time_step_clamp(d)
        d.read("mamba_chunk_size")  # the chunked kernel's block: no effect on outputs
    shared = d.read("shared_intermediate_size", default=1024)
    n_experts = d.read("num_local_experts", default=8)
    n_active = d.read("num_experts_per_tok", default=2)
    if n_experts:
        d.moe(n_experts=n_experts, n_active=n_active, n_shared=1, shared_d_ff=shared)
        d.set("architecture.mlp.moe.normalize_top_k", True, "family")  # softmax of the top-k
    else:  # the shared MLP is the layer's only MLP
        d.set("architecture.mlp.d_ff", shared, d.origin_of("shared_intermediate_size"))
    if d.read("position_embedding_type") != "rope":
        d.set("architecture.position.type", "none", d.origin_of("position_embedding_type"))
        d.clear("architecture.position.rope_theta")
        d.note(
            "architecture.position.type",
            "GraniteMoeHybridModel applies RoPE only when position_embedding_type is rope.",
        )


def _no_time_step_clamp(d: _Draft) -> None:
    """time_step_limit (0, inf) leaves dt as it is; any other clamp is not expressible."""
    limit = d.read("time_step_limit", default=(0.0, float("inf")))
    bounds = [_serialized_float(v) for v in limit] if isinstance(limit, list | tuple) else None
    if limit is not None and bounds != [0, math.inf]:
        raise HFImportError(f"time_step_limit {limit!r} clamps dt: not expressible")


def _falcon_h1(d: _Draft) -> None:
    """Falcon-H1: attention beside a Mamba-2 mixer in every layer, and its muP factors."""
    d.read("layers_block_type")  # always "hybrid" per layer: the pattern below says so
    d.set("architecture.attention.layer_pattern", ["global+mamba2"], "family")
    d_model, heads = d.value("architecture.d_model"), d.read("mamba_n_heads", default=128)
    inner = d.read("mamba_d_ssm", default=1024)  # FalconH1Config's defaults throughout
    if inner is None:
        inner = int(d.read("mamba_expand", default=2) * d_model)
    head_dim = d.read("mamba_d_head", default="auto")
    if head_dim == "auto":
        head_dim = inner // heads
    if heads * head_dim != inner:
        raise HFImportError(
            f"mamba_n_heads x mamba_d_head ({heads} x {head_dim}) differs from the mixer width "
            f"({inner}): transformers' FalconH1Mixer cannot run this config"
        )
    proj_bias = d.read("mamba_proj_bias", default=False)
    if d.read("projectors_bias", default=False) != proj_bias:
        raise HFImportError(
            "mamba_proj_bias (in_proj) and projectors_bias (out_proj) differ: "
            "mixers.mamba2.proj_bias holds one bias setting for both"
        )
    _no_time_step_clamp(d)
    d.read("mamba_chunk_size")  # the chunked kernel's block: no effect on outputs
    norm = "none"
    if d.read("mamba_rms_norm", default=False):
        before = d.read("mamba_norm_before_gate", default=True)
        norm = "before-gate" if before else "gated"
    sizes = {
        "n_heads": heads,
        "head_dim": head_dim,
        "state_size": d.read("mamba_d_state", default=256),
        "n_groups": d.read("mamba_n_groups", default=1),
        "conv_kernel": d.read("mamba_d_conv", default=4),
        "conv_bias": d.read("mamba_conv_bias", default=True),
        "proj_bias": proj_bias,
    }
    for name, value in sizes.items():
        d.set(f"architecture.mixers.mamba2.{name}", value, "config")
    d.set("architecture.mixers.mamba2.mlp", True, "family")
    d.set("architecture.mixers.mamba2.norm", norm, d.origin_of("mamba_rms_norm"))
    _falcon_h1_factors(d)


def _falcon_h1_factors(d: _Draft) -> None:
    """Falcon-H1's multipliers (FalconH1Config's defaults are 1.0 each)."""
    factors = (
        ("embedding_multiplier", "architecture.embedding_multiplier"),
        ("lm_head_multiplier", "architecture.logit_scale"),
        ("attention_in_multiplier", "architecture.attention.input_multiplier"),
        ("attention_out_multiplier", "architecture.attention.output_multiplier"),
        ("ssm_in_multiplier", "architecture.mixers.mamba2.input_multiplier"),
        ("ssm_out_multiplier", "architecture.mixers.mamba2.output_multiplier"),
    )
    for key, path in factors:
        d.set(path, _positive(d, key), d.origin_of(key))
    head_dim = d.value("architecture.attention.head_dim")
    if head_dim is None:
        head_dim = d.value("architecture.d_model") // d.value("architecture.attention.n_heads")
    key = _positive(d, "key_multiplier")
    d.set("architecture.attention.scale", key / math.sqrt(head_dim), d.origin_of("key_multiplier"))
    d.note(
        "architecture.attention.scale",
        f"FalconH1Attention multiplies the keys by key_multiplier ({key:g}) and scales the "
        f"scores by 1/sqrt(head_dim): the card stores key_multiplier/sqrt({head_dim}).",
    )
    ssm = _factor_list(d, "ssm_multipliers", 5)
    d.set("architecture.mixers.mamba2.projection_multipliers", ssm, d.origin_of("ssm_multipliers"))
    gate, down = _factor_list(d, "mlp_multipliers", 2)
    d.set("architecture.mlp.gate_multiplier", gate, d.origin_of("mlp_multipliers"))
    d.set("architecture.mlp.output_multiplier", down, d.origin_of("mlp_multipliers"))


def _serialized_float(value: Any) -> Any:
    """A number as transformers saves it: inf becomes {"__float__": "Infinity"}."""
    if isinstance(value, dict) and value.get("__float__") == "Infinity":
        return math.inf
    return value


def _factor_list(d: _Draft, key: str, n: int) -> list[float]:
    """A list of n positive multipliers (default: n ones)."""
    values = d.read(key, default=None) or [1.0] * n
    if not isinstance(values, list | tuple) or len(values) != n:
        raise HFImportError(f"config.json: {key} must be a list of {n} numbers")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values):
        raise HFImportError(f"config.json: {key} must hold positive numbers (got {values!r})")
    return [float(v) for v in values]


def _gemma4(d: _Draft) -> None:
    """Gemma 4: global layers with their own head width (and, with attention_k_eq_v, their
    own KV heads and no value projection), proportional partial RoPE on them only, a value
    norm, unscaled scores, RMSNorm applying w; 26B-A4B: experts beside a dense MLP."""
    d_model = d.value("architecture.d_model")
    d.set("architecture.norm.unit_offset", False, "family")  # Gemma4RMSNorm: x * w
    d.set("architecture.embedding_multiplier", d_model**0.5, "family")
    d.set("architecture.attention.scale", 1.0, "family")  # self.scaling = 1.0
    d.set("architecture.attention.value_norm", True, "family")  # v_norm, without a scale
    d.set("architecture.layer_scalar", True, "family")  # layer_scalar on each layer's output
    _gemma4_pattern(d)
    _gemma4_global_layers(d)
    _gemma_on_device(d, per_layer_default=256)  # Gemma4TextConfig's default width
    bidirectional = d.read("use_bidirectional_attention")
    if bidirectional == "vision":
        d.note(
            "architecture.attention",
            "use_bidirectional_attention 'vision': image tokens attend to each other both "
            "ways; text tokens, which the card describes, stay causal.",
        )
    elif bidirectional is not None:
        d.unmapped["use_bidirectional_attention"] = bidirectional
    if d.read("enable_moe_block", default=False):
        dense = d.value("architecture.mlp.d_ff")
        d.set("architecture.mlp.d_ff", d.read("moe_intermediate_size", required=True), "config")
        d.moe(
            n_experts=d.read("num_experts", required=True),
            n_active=d.read("top_k_experts", required=True),
        )
        d.set("architecture.mlp.moe.dense_beside_d_ff", dense, "config")
        d.set("architecture.mlp.moe.router_scales", True, "family")
        d.set("architecture.mlp.moe.normalize_top_k", True, "family")  # top-k renormalized
    else:
        d.read("num_experts", "top_k_experts", "moe_intermediate_size", "expert_intermediate_size")


def _gemma_on_device(d: _Draft, per_layer_default: int, shared_default: int = 0) -> None:
    """Gemma 3n / Gemma 4 E2B and E4B: per-layer embeddings and cross-layer KV sharing;
    Gemma 4's use_double_wide_mlp doubles the reusing layers' MLP."""
    width = d.read("hidden_size_per_layer_input", default=per_layer_default)
    rows = d.read("vocab_size_per_layer_input", default=262_144)  # both configs' default
    if width:
        d.set(
            "architecture.per_layer_embeddings.width",
            width,
            d.origin_of("hidden_size_per_layer_input"),
        )
        d.set(
            "architecture.per_layer_embeddings.vocab_size",
            rows,
            d.origin_of("vocab_size_per_layer_input"),
        )
    shared = d.read("num_kv_shared_layers", default=shared_default)
    if shared:
        origin = d.origin_of("num_kv_shared_layers")
        d.set("architecture.attention.kv_shared_layers", shared, origin)
    d_ff = d.value("architecture.mlp.d_ff")
    if d.read("use_double_wide_mlp", default=False) and shared and isinstance(d_ff, int):
        d.set("architecture.mlp.kv_shared_d_ff", 2 * d_ff, "config")


def _gemma3n(d: _Draft) -> None:
    """Gemma 3n's text model: Gemma 4's attention and sandwich norms (RMSNorm applying w,
    unscaled scores, a value norm) without global-layer sizes or layer scalar; AltUp,
    LAuReL, per-layer embeddings, KV sharing and gaussian top-k on the first MLP gates."""
    d_model = d.value("architecture.d_model")
    d.set("architecture.norm.unit_offset", False, "family")  # Gemma3nRMSNorm: x * w
    d.set("architecture.embedding_multiplier", d_model**0.5, "family")
    d.set("architecture.attention.scale", 1.0, "family")  # self.scaling = 1.0
    d.set("architecture.attention.value_norm", True, "family")  # v_norm, without a scale
    if "final_logit_softcapping" not in d.config:  # Gemma3nTextConfig's default
        d.set("architecture.final_logit_softcap", 30.0, "family")
    if d.value("architecture.position.rope_theta_local") is None:
        _, local = _rope_parameters(d)
        if local.get("rope_theta") is None and d.config.get("rope_local_base_freq") is None:
            d.set("architecture.position.rope_theta_local", 10_000.0, "family")
    _gemma_on_device(d, per_layer_default=256, shared_default=15)  # the config's defaults
    altup = {
        "n_inputs": d.read("altup_num_inputs", default=4),
        "active_index": d.read("altup_active_idx", default=0),
        "correct_scale": d.read("altup_correct_scale", default=True),
    }
    for name, value in altup.items():
        d.set(f"architecture.altup.{name}", value, "config")
    d.read("altup_coef_clip")  # clamps the coefficients in training mode only
    d.set("architecture.laurel_rank", d.read("laurel_rank", default=64), "config")
    _activation_sparsity(d)


def _activation_sparsity(d: _Draft) -> None:
    """activation_sparsity_pattern: one target for a run of leading layers, 0 after them
    (Gemma3nTextConfig's default: 0.95 on the first 10 layers when there are more)."""
    n = d.value("architecture.n_layers")
    pattern = d.read("activation_sparsity_pattern")
    if pattern is None:
        pattern = [0.95] * 10 + [0.0] * (n - 10) if n > 10 else [0.0] * n
    if not isinstance(pattern, list) or len(pattern) != n:
        raise HFImportError("config.json: activation_sparsity_pattern needs one value per layer")
    first = next((i for i, v in enumerate(pattern) if not v), len(pattern))
    targets = set(pattern[:first])
    if any(pattern[first:]) or len(targets) > 1:
        raise HFImportError(
            "config.json: activation_sparsity_pattern must be one target on leading layers, "
            "then zeros (the card's activation_sparsity)"
        )
    if first:
        target = float(pattern[0])
        d.set(
            "architecture.mlp.activation_sparsity.target",
            target,
            d.origin_of("activation_sparsity_pattern"),
        )
        d.set(
            "architecture.mlp.activation_sparsity.first_layers",
            first,
            d.origin_of("activation_sparsity_pattern"),
        )


def _gemma4_pattern(d: _Draft) -> None:
    """Without layer_types, five sliding layers to one full, the last layer forced full."""
    if d.read("layer_types"):
        return
    n = d.value("architecture.n_layers")
    kinds = ["global" if (i + 1) % 6 == 0 or i == n - 1 else "local" for i in range(n)]
    d.set("architecture.attention.layer_pattern", _period(kinds), "family")
    d.set("architecture.attention.sliding_window", d.read("sliding_window", default=512), "config")


def _gemma4_global_layers(d: _Draft) -> None:
    full, _ = _rope_parameters(d)
    # _position took the full-attention RoPE block for the card's: it is the global layers'
    for path in list(d.values):
        if path.startswith(("architecture.position.rope_scaling", "architecture.position.rot")):
            d.clear(path)
    d.unmapped.pop("rope_scaling", None)
    d.notes.pop("architecture.position", None)
    d.notes.pop("architecture.position.rope_scaling", None)
    kind = full.get("rope_type", "default")
    if kind not in ("default", "proportional"):
        raise HFImportError(f"full-attention rope_type {_brief(kind)} is not one the card holds")
    overrides: dict[str, Any] = {}
    fraction = full.get("partial_rotary_factor")
    if kind == "proportional" and fraction is not None and fraction < 1:
        overrides["rotary_fraction"] = float(fraction)
    head_dim = d.value("architecture.attention.head_dim")
    kv = d.value("architecture.attention.n_kv_heads")
    k_eq_v = d.read("attention_k_eq_v", default=False)
    if k_eq_v:
        overrides["values_from_keys"] = True
    per_layer = d.read("per_layer_config")
    if per_layer is not None:  # how transformers 5.24 saves global_head_dim and its KV heads
        global_head_dim, global_kv = _global_layer_sizes(d, per_layer)
    else:
        global_head_dim = d.read("global_head_dim", default=512)  # Gemma4TextConfig's default
        global_kv = d.read("num_global_key_value_heads")
        if global_kv is not None and not k_eq_v:
            d.unmapped["num_global_key_value_heads"] = f"{global_kv} (unused without k_eq_v)"
            global_kv = None
    if global_head_dim is not None and global_head_dim != head_dim:
        overrides["head_dim"] = global_head_dim
    if global_kv is not None and global_kv != kv:
        overrides["n_kv_heads"] = global_kv
    if "global" not in (d.value("architecture.attention.layer_pattern") or []):
        return
    for name, value in overrides.items():
        origin = "family" if name == "head_dim" and "global_head_dim" not in d.config else "config"
        d.set(f"architecture.attention.global_layers.{name}", value, origin)


def _global_layer_sizes(d: _Draft, per_layer: Mapping[str, Any]) -> tuple[Any, Any]:
    """(head_dim, KV heads) that per_layer_config gives every full-attention layer; the
    card holds one set of global-layer sizes, so anything else is refused."""
    pattern = d.value("architecture.attention.layer_pattern") or []
    n = d.value("architecture.n_layers")
    full = {i for i in range(n) if pattern[i % len(pattern)] == "global"}
    sizes = {tuple(sorted(v.items())) for v in per_layer.values()}
    if not all(str(k).isdigit() and len(str(k)) <= 6 for k in per_layer):
        raise HFImportError("per_layer_config keys must be layer indices")
    if {int(k) for k in per_layer} != full or len(sizes) != 1:
        raise HFImportError(
            "per_layer_config gives sizes other than one set for every full-attention "
            "layer: per-layer widths have no card field"
        )
    own = dict(next(iter(sizes)))
    unknown = set(own) - {"head_dim", "num_key_value_heads"}
    if unknown:
        raise HFImportError(f"per_layer_config sets {', '.join(sorted(unknown))}: no card field")
    return own.get("head_dim"), own.get("num_key_value_heads")


def _lfm2_ff_width(d: _Draft, width: int) -> int:
    """The MLP width Lfm2MLP builds: with block_auto_adjust_ff_dim, two thirds of the
    configured width, times block_ffn_dim_multiplier, rounded up to block_multiple_of
    (no rounding when the multiplier is null), as Llama's reference code sizes it."""
    if not d.read("block_auto_adjust_ff_dim", default=True):
        return width
    width = int(2 * width / 3)
    if "block_ffn_dim_multiplier" in d.config and d.config["block_ffn_dim_multiplier"] is None:
        return width
    width = int(d.read("block_ffn_dim_multiplier", default=1.0) * width)
    multiple = d.read("block_multiple_of", default=256)
    return multiple * ((width + multiple - 1) // multiple)


def _lfm2_layers(d: _Draft) -> None:
    """LFM2: short-conv layers, attention at full_attn_idxs (or layer_types); the config's
    tie_embedding spelling; every layer keeps its MLP."""
    if "tie_embedding" in d.config:  # Lfm2Config reads it over tie_word_embeddings
        d.set("architecture.tied_embeddings", d.read("tie_embedding"), "config")
        d.used.add("tie_word_embeddings")
    n_layers = d.value("architecture.n_layers")
    indices = d.read("full_attn_idxs")
    if not d.read("layer_types") and indices is not None:
        if any(i >= n_layers for i in indices):
            raise HFImportError(
                f"full_attn_idxs names a layer beyond num_hidden_layers ({n_layers})"
            )
        attention = set(indices)
        kinds = ["global" if i in attention else "short-conv" for i in range(n_layers)]
        d.set("architecture.attention.layer_pattern", _period(kinds), "config")
    if "short-conv" in (d.value("architecture.attention.layer_pattern") or []):
        d.set("architecture.mixers.short_conv.conv_kernel", d.read("conv_L_cache", default=3),
              d.origin_of("conv_L_cache"))  # fmt: skip
        d.set("architecture.mixers.short_conv.bias", d.read("conv_bias", default=False),
              d.origin_of("conv_bias"))  # fmt: skip
        d.set("architecture.mixers.short_conv.mlp", True, "family")
    else:
        d.read("conv_L_cache")
        d.read("conv_bias")


def _lfm2(d: _Draft) -> None:
    configured = d.read("block_ff_dim", "intermediate_size", required=True)
    width = _lfm2_ff_width(d, configured)
    d.set("architecture.mlp.d_ff", width, "config")
    if width != configured:
        d.note(
            "architecture.mlp.d_ff",
            f"The width Lfm2MLP builds from the configured {configured} "
            "(block_auto_adjust_ff_dim: 2/3 of it, times block_ffn_dim_multiplier, rounded up "
            "to block_multiple_of).",
        )
    _lfm2_layers(d)


def _lfm2_moe(d: _Draft) -> None:
    """LFM2-MoE: num_dense_layers dense MLPs (intermediate_size, not adjusted), then routed
    experts of moe_intermediate_size; a sigmoid router whose expert bias only chooses."""
    first_dense = d.read("num_dense_layers", default=2)
    dense_d_ff = d.value("architecture.mlp.d_ff")
    d.set("architecture.mlp.d_ff", d.read("moe_intermediate_size", required=True), "config")
    d.moe(
        n_experts=d.read("num_experts", required=True),
        n_active=d.read("num_experts_per_tok", required=True),
        first_dense_layers=first_dense,
        dense_d_ff=dense_d_ff if first_dense else None,
    )
    # Lfm2MoeTopKRouter: sigmoid scores, the expert bias only chooses, the chosen scores
    # renormalized (norm_topk_prob), times routed_scaling_factor
    d.set("architecture.mlp.moe.score_function", "sigmoid", "family")
    d.set("architecture.mlp.moe.score_correction_bias", d.read("use_expert_bias", default=True),
          "config")  # fmt: skip
    d.set("architecture.mlp.moe.normalize_top_k", d.read("norm_topk_prob", default=True),
          "config")  # fmt: skip
    d.set("architecture.mlp.moe.routed_scale", d.read("routed_scaling_factor", default=1.0),
          "config")  # fmt: skip
    _lfm2_layers(d)


# Nemotron-H's layer kinds: hybrid_override_pattern's characters, layers_block_type's names
_NEMOTRON_H_CODES = {"M": "mamba2", "*": "global", "-": "mlp", "E": "moe"}
_NEMOTRON_H_TYPES = {
    "linear_attention": "mamba2",
    "mamba": "mamba2",
    "full_attention": "global",
    "attention": "global",
    "mlp": "mlp",
    "moe": "moe",
}
_NEMOTRON_H_DEFAULT = ["mamba2", "moe", "global", "mlp"]  # NemotronHConfig without a pattern


def _nemotron_h_kinds(d: _Draft) -> list[str]:
    """Every layer's kind, from layers_block_type or the older hybrid_override_pattern."""
    types = d.read("layers_block_type")
    if types is not None:
        table, where, entries = _NEMOTRON_H_TYPES, "layers_block_type", list(types)
    else:
        pattern = d.read("hybrid_override_pattern")
        if pattern is None:
            return list(_NEMOTRON_H_DEFAULT)
        table, where, entries = _NEMOTRON_H_CODES, "hybrid_override_pattern", list(pattern)
    for index, entry in enumerate(entries):
        if entry not in table:
            raise HFImportError(
                f"{where}[{index}] is {_brief(entry)}: not a Nemotron-H layer kind "
                f"({', '.join(table)})"
            )
    if not entries:
        raise HFImportError(f"{where} is empty: the model has no layers")
    return [table[e] for e in entries]


def _nemotron_h(d: _Draft) -> None:
    """Nemotron-H and Nemotron 3: each layer is one pre-normed sublayer (a Mamba-2 mixer,
    attention without positions, a ReLU^2 MLP or an MoE), listed per layer by the config."""
    if d.read("moe_latent_size") is not None:
        raise HFImportError(
            "moe_latent_size is set: the experts work in a projected latent width (latent "
            "MoE), which the card cannot hold"
        )
    kinds = _nemotron_h_kinds(d)
    stated = d.read("num_hidden_layers")
    if stated is not None and stated != len(kinds):
        raise HFImportError(
            f"the layer pattern lists {len(kinds)} layers but num_hidden_layers is {stated}: "
            "the config contradicts itself"
        )
    d.set("architecture.d_model", d.read("hidden_size", required=True), "config")
    d.set("architecture.n_layers", len(kinds), "config")
    d.set("architecture.vocab_size", d.read("vocab_size", required=True), "config")
    d.set("architecture.context_length", d.read("max_position_embeddings", default=4096),
          d.origin_of("max_position_embeddings"))  # fmt: skip
    d.set("architecture.attention.layer_pattern", _period(kinds), "config")
    for path, value in (
        ("norm.type", "rmsnorm"),
        ("norm.position", "pre"),
        ("norm.affine", "scale"),
        ("norm.final", True),
        ("parallel_layers", False),
        ("position.type", "none"),
        ("attention.variant", "softmax"),
        ("attention.qk_norm", "none"),
        ("attention.logit_softcap", None),
        ("attention.sliding_window", None),
        ("final_logit_softcap", None),
    ):
        d.set(f"architecture.{path}", value, "family")
    attention_bias = d.read("attention_bias", default=False)
    for path in ("bias.qkv", "bias.attn_out"):
        d.set(f"architecture.{path}", attention_bias, d.origin_of("attention_bias"))
    mixer_act = d.read("mamba_hidden_act", default="silu")
    if mixer_act != "silu":
        raise HFImportError(
            f"mamba_hidden_act is {_brief(mixer_act)}: the card's Mamba-2 mixer gates with silu"
        )
    _nemotron_h_attention(d, "global" in kinds)
    if d.read("sliding_window") is not None:
        d.unmapped["sliding_window"] = d.config["sliding_window"]
    raw = str(d.read("mlp_hidden_act", default="relu2"))
    activation = _activation(raw, gated=False)
    d.set("architecture.mlp.activation", activation, d.origin_of("mlp_hidden_act"))
    if activation is None:
        d.unmapped["mlp_hidden_act"] = raw
        d.note("architecture.mlp.activation", f"config activation {raw!r} has no schema value.")
    dense = d.read("intermediate_size", default=21504)
    d.set("architecture.mlp.d_ff", dense, d.origin_of("intermediate_size"))
    d.set("architecture.mlp.moe", None, "family")
    d.set("architecture.bias.mlp", d.read("mlp_bias", default=False), d.origin_of("mlp_bias"))
    if "moe" in kinds:
        _nemotron_h_moe(d, dense if "mlp" in kinds else None)
    if "mamba2" in kinds:
        sizes = {
            "n_heads": d.read("mamba_num_heads", default=128),
            "head_dim": d.read("mamba_head_dim", default=64),
            "state_size": d.read("ssm_state_size", default=128),
            "n_groups": d.read("n_groups", default=8),
            "conv_kernel": d.read("conv_kernel", default=4),
            "conv_bias": d.read("use_conv_bias", default=True),
            "proj_bias": d.read("use_bias", default=False),
        }
        for name, value in sizes.items():
            d.set(f"architecture.mixers.mamba2.{name}", value, "config")
        d.set("architecture.mixers.mamba2.mlp", False, "family")
        # NemotronHMamba2Mixer sizes itself from heads x head_dim; expand is not read
        d.used.update(k for k in ("expand", "mamba_proj_bias") if k in d.config)
    if d.read("tie_word_embeddings", default=False):
        raise HFImportError(
            "tie_word_embeddings is true, but transformers' NemotronHForCausalLM keeps a "
            "separate output head whatever the config says: the card would not be the model"
        )
    d.set("architecture.tied_embeddings", False, d.origin_of("tie_word_embeddings"))
    if d.read("num_nextn_predict_layers", default=0):
        d.note(
            "architecture",
            "The multi-token-prediction layers (num_nextn_predict_layers) are left out, as "
            "transformers leaves them out of NemotronHForCausalLM.",
        )


def _nemotron_h_attention(d: _Draft, attends: bool) -> None:
    """Head sizes where some layer attends (else null: an attention-free pattern)."""
    for path, key, default in (
        ("n_heads", "num_attention_heads", 32),
        ("n_kv_heads", "num_key_value_heads", 8),
        ("head_dim", "head_dim", 128),
    ):
        # Nemotron-H's first configs spell the head width attention_head_dim
        keys = (key, "attention_head_dim") if key == "head_dim" else (key,)
        value = d.read(*keys, default=default) if attends else None
        d.set(f"architecture.attention.{path}", value, d.origin_of(key) if attends else "family")
    if attends:  # an attention layer is the attention alone
        d.set("architecture.attention.mlp", False, "family")
    else:
        d.note("architecture.attention", _ATTENTION_FREE)


def _nemotron_h_moe(d: _Draft, dense_d_ff: int | None) -> None:
    """Nemotron 3's MoE layers: ReLU^2 experts and one ReLU^2 shared expert (transformers
    builds it whatever n_shared_experts says), routed by DeepSeek-V3's sigmoid router."""
    expert = d.read("moe_intermediate_size", default=7688)
    d.set("architecture.mlp.d_ff", expert, d.origin_of("moe_intermediate_size"))
    d.read("n_shared_experts")
    d.moe(
        n_experts=d.read("n_routed_experts", "num_local_experts", default=8),
        n_active=d.read("num_experts_per_tok", default=2),
        n_shared=1,
        shared_d_ff=d.read("moe_shared_expert_intermediate_size", default=7688),
        dense_d_ff=dense_d_ff,
    )
    # NemotronHTopkRouter is DeepSeek-V3's (NemotronHConfig's defaults: no groups, scale 1)
    _sigmoid_router(d, 1, 1, default_scale=1.0)


def _rope_interleave(d: _Draft) -> None:  # DeepSeek-V3: rope_interleave (default true)
    if d.value("architecture.position.type") == "rope":
        interleaved = d.read("rope_interleave", default=True)
        layout = "interleaved" if interleaved else "half-split"
        d.set("architecture.position.rope_layout", layout, d.origin_of("rope_interleave"))


def _deepseek_v3(d: _Draft) -> None:
    _deepseek(d)
    _rope_interleave(d)
    if d.value("architecture.mlp.moe.n_experts"):
        _sigmoid_router(d, 8, 4, default_scale=2.5)  # DeepseekV3Config's defaults


def _longcat_flash(d: _Draft) -> None:
    """LongCat-Flash (transformers' LongcatFlashDecoderLayer): num_layers layers of two MLA
    sublayers and two dense MLPs (ffn_hidden_size) with the experts beside them
    (expert_ffn_hidden_size); MLA always through the query bottleneck, its latents scaled;
    a softmax router over n_routed_experts + zero_expert_num candidates, a correction bias
    to choose, the chosen scores never renormalized, times routed_scaling_factor."""
    d.latent(
        kv_lora_rank=d.read("kv_lora_rank", default=512),
        q_lora_rank=d.read("q_lora_rank", default=1536),
        qk_rope_head_dim=d.read("qk_rope_head_dim", default=64),
        qk_nope_head_dim=d.read("qk_nope_head_dim", default=128),
        v_head_dim=d.read("v_head_dim", default=128),
    )
    qk = d.value("architecture.attention.latent.qk_nope_head_dim") + d.value(
        "architecture.attention.latent.qk_rope_head_dim"
    )
    if d.read("qk_head_dim", default=qk) != qk:
        raise HFImportError(
            "config.json: qk_head_dim is not qk_nope_head_dim + qk_rope_head_dim: the query "
            "heads would not split into the MLA parts"
        )
    d.set("architecture.attention.latent.norm_eps", 1e-6, "family")  # the RMSNorm default
    if d.read("attention_method", default="MLA") != "MLA":
        raise HFImportError("config.json: attention_method is not MLA, the only one archdb builds")
    # the released remote code scales each latent when its switch is on; transformers' code
    # always scales both
    q_scaled = d.read("mla_scale_q_lora", default=True)
    if d.read("mla_scale_kv_lora", default=True) != q_scaled:
        raise HFImportError(
            "config.json: mla_scale_q_lora and mla_scale_kv_lora differ; "
            "attention.latent.lora_scaled scales both latents or neither"
        )
    origin = "config" if "mla_scale_q_lora" in d.config else "family"
    d.set("architecture.attention.latent.lora_scaled", q_scaled, origin)
    if d.read("zero_expert_type", default="identity") != "identity":
        raise HFImportError(
            "config.json: zero_expert_type is not identity: archdb's zero experts return their "
            "input"
        )
    dense_d_ff = d.value("architecture.mlp.d_ff") or 12288  # ffn_hidden_size
    expert_d_ff = d.read("expert_ffn_hidden_size", default=2048)
    d.set("architecture.mlp.d_ff", expert_d_ff, d.origin_of("expert_ffn_hidden_size"))
    top_k = d.read("moe_topk", default=12)
    if isinstance(top_k, list):
        raise HFImportError("config.json: moe_topk is a list; LongCat-Flash's is one number")
    d.moe(n_experts=d.read("n_routed_experts", default=512), n_active=top_k)
    moe = "architecture.mlp.moe"
    origin = "config" if "ffn_hidden_size" in d.config else "family"
    d.set(f"{moe}.shortcut_dense_d_ff", dense_d_ff, origin)
    d.set(f"{moe}.zero_experts", d.read("zero_expert_num", default=256) or 0, "config")
    if d.read("router_bias", default=False):
        d.set(f"{moe}.router_bias", True, "config")
    d.set(f"{moe}.score_function", "softmax", "family")
    d.set(f"{moe}.score_correction_bias", True, "family")
    d.set(f"{moe}.normalize_top_k", False, "family")
    scale = d.read("routed_scaling_factor", default=6.0)
    d.set(f"{moe}.routed_scale", float(scale), d.origin_of("routed_scaling_factor"))
    d.note(
        f"{moe}.zero_experts",
        "transformers' LongcatFlashExperts also allocates gate_up_proj rows for the zero "
        "experts, which it never reads; the card counts none.",
    )


def _glm4_moe(d: _Draft) -> None:
    """GLM-4.5: DeepSeek-V3's MoE layout and router on GQA attention (q/k/v bias only,
    per-head QK norm when use_qk_norm, partial RoPE)."""
    if d.read("use_qk_norm", default=False):
        d.set("architecture.attention.qk_norm", "per-head", "config")
    d.set("architecture.bias.attn_out", False, "family")  # o_proj has no bias
    n_shared = d.read("n_shared_experts", default=1)  # defaults: Glm4MoeConfig's
    dense_d_ff = d.value("architecture.mlp.d_ff")
    expert_d_ff = d.read("moe_intermediate_size", default=1408)
    first_dense = d.read("first_k_dense_replace", default=1)
    d.set("architecture.mlp.d_ff", expert_d_ff, d.origin_of("moe_intermediate_size"))
    d.moe(
        n_experts=d.read("n_routed_experts", default=128),
        n_active=d.read("num_experts_per_tok", default=8),
        n_shared=n_shared,
        shared_d_ff=expert_d_ff * n_shared if n_shared else None,
        first_dense_layers=first_dense,
        dense_d_ff=dense_d_ff if first_dense else None,
    )
    _sigmoid_router(d, 1, 1, default_scale=1.0)  # Glm4MoeConfig's defaults
    _mtp(d)


def _sparse(d: _Draft, interleaved: bool) -> None:
    """DeepSeek Sparse Attention: the lightning indexer's sizes and top-k."""
    d.set(
        "architecture.attention.sparse.indexer_heads",
        d.read("index_n_heads", required=True),
        "config",
    )
    d.set(
        "architecture.attention.sparse.indexer_head_dim",
        d.read("index_head_dim", required=True),
        "config",
    )
    d.set("architecture.attention.sparse.top_k", d.read("index_topk", required=True), "config")
    # GlmMoeDsaIndexer always interleaves; DeepseekV32Indexer always half-splits
    own = d.read("indexer_rope_interleave", default=interleaved)
    layout = "interleaved" if own else "half-split"
    path = "architecture.attention.sparse.indexer_rope_layout"
    d.set(path, layout, d.origin_of("indexer_rope_interleave"))


def _dense_then_moe(d: _Draft) -> None:
    """DeepSeek-V3.2's mlp_layer_types must be first_k_dense_replace dense layers, then MoE."""
    types = d.read("mlp_layer_types")
    moe_first = d.value("architecture.mlp.moe.first_dense_layers")
    n = d.value("architecture.n_layers")
    if types is None or moe_first is None or n is None:
        return
    if list(types) != ["dense"] * moe_first + ["sparse"] * (n - moe_first):
        raise HFImportError(
            "config.json's mlp_layer_types is not first_k_dense_replace dense layers then MoE "
            "layers: the card's mlp.moe cannot express it"
        )


def _deepseek_v32(d: _Draft) -> None:
    _deepseek_v3(d)
    _sparse(d, interleaved=False)
    _dense_then_moe(d)


def _indexer_modes(d: _Draft, n_layers: int) -> list[str]:
    """GLM-MoE-DSA's per-layer indexer: "full" runs one, "shared" reuses the previous
    layer's top-k; derived as GlmMoeDsaConfig does from the pattern or freq/offset."""
    modes = d.read("indexer_types")
    if modes is not None:
        return list(modes)
    pattern = d.read("index_topk_pattern")
    if pattern is not None:
        if isinstance(pattern, str):
            return ["full" if c == "F" else "shared" for c in pattern]
        return list(pattern)
    freq = max(d.read("index_topk_freq", default=1), 1)
    offset = d.read("index_skip_topk_offset", default=2)
    return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n_layers)]


def _glm_moe_dsa(d: _Draft) -> None:
    _deepseek_v3(d)
    _sparse(d, interleaved=True)
    _dense_then_moe(d)
    modes = _indexer_modes(d, d.read("num_hidden_layers", required=True))
    if any(mode != "full" for mode in modes):
        raise HFImportError(
            "config.json shares indexer top-k across layers (indexer_types / index_topk_freq): "
            "attention.sparse runs an indexer in every layer and cannot express that"
        )


def _kimi_linear(d: _Draft) -> None:
    """Kimi Linear: KDA and MLA layers (MLA without positions), DeepSeek-V3's MoE and
    router after dense first layers. Released configs give linear_attn_config (sizes and
    1-based layer lists) and their own MoE key names; transformers' saved configs add
    the flat linear_* keys and the per-layer lists (KimiLinearConfig reads both)."""
    linear = d.read("linear_attn_config", default={}) or {}
    _kimi_layers(d, linear)
    sizes = {  # linear_attn_config over the flat keys, as KimiLinearConfig reads them
        "n_heads": ("num_heads", "linear_num_heads", 32),
        "head_dim": ("head_dim", "linear_head_dim", 128),
        "conv_kernel": ("short_conv_kernel_size", "linear_conv_kernel_dim", 4),
    }
    for name, (nested, flat, default) in sizes.items():
        value = d.read(flat, default=default)
        origin = d.origin_of(flat)
        if linear.get(nested) is not None:
            value, origin = linear[nested], "config"
        d.set(f"architecture.mixers.kda.{name}", value, origin)
    head_dim = d.value("architecture.mixers.kda.head_dim")
    d.set("architecture.mixers.kda.decay_rank", head_dim, "family")  # KimiLinearForgetGate
    d.set("architecture.mixers.kda.output_gate", True, "family")
    d.set("architecture.mixers.kda.output_gate_rank", head_dim, "family")
    d.set("architecture.mixers.kda.mlp", True, "family")
    if d.read("mla_use_nope", default=True) is False:
        d.note("architecture.position", "config.json sets mla_use_nope false, which "
               "transformers' kimi_linear does not read: its MLA layers never rotate.")  # fmt: skip
    for key in ("qk_head_dim", "rope_theta", "rope_scaling"):  # derived, or unused (NoPE)
        d.read(key)
    d.latent(
        kv_lora_rank=d.read("kv_lora_rank", default=512),  # defaults: KimiLinearConfig's
        q_lora_rank=d.read("q_lora_rank"),
        qk_rope_head_dim=d.read("qk_rope_head_dim", default=64),
        qk_nope_head_dim=d.read("qk_nope_head_dim", default=128),
        v_head_dim=d.read("v_head_dim", default=128),
    )
    # q_a_layernorm and kv_a_layernorm take the RMSNorm class's default, not rms_norm_eps
    d.set("architecture.attention.latent.norm_eps", 1e-6, "family")
    context = d.read("model_max_length", "max_position_embeddings", default=1048576)
    d.set("architecture.context_length", context, d.origin_of("model_max_length"))
    tied = d.read("tie_word_embeddings", default=False)
    d.set("architecture.tied_embeddings", False, "family")  # _tied_weights_keys is empty
    if tied:
        d.note("architecture.tied_embeddings", "config.json says tie_word_embeddings, which "
               "KimiLinearForCausalLM ignores: its head is its own.")  # fmt: skip
    _kimi_moe(d)


def _kimi_layers(d: _Draft, linear: Mapping[str, Any]) -> None:
    """The layer pattern from the 1-based full_attn_layers and kda_layers, else
    transformers' default (full attention at every fourth layer after the first)."""
    if d.read("layer_types"):
        return
    n_layers = d.value("architecture.n_layers")
    full, kda = linear.get("full_attn_layers"), linear.get("kda_layers")
    if full is None or kda is None:
        kinds = ["global" if i and i % 4 == 0 else "kda" for i in range(n_layers)]
        d.set("architecture.attention.layer_pattern", _period(kinds), "family")
        return
    kinds: list[str | None] = [None] * n_layers
    for kind, layers in (("global", full), ("kda", kda)):
        for number in layers:
            if number > n_layers or kinds[number - 1] is not None:
                raise HFImportError(
                    f"linear_attn_config names layer {number} twice or beyond "
                    f"num_hidden_layers ({n_layers})"
                )
            kinds[number - 1] = kind
    if None in kinds:
        missing = kinds.index(None) + 1
        raise HFImportError(f"linear_attn_config lists layer {missing} as neither kda nor full")
    d.set("architecture.attention.layer_pattern", _period(kinds), "config")


def _kimi_moe(d: _Draft) -> None:
    """KimiLinearMoE: routed experts plus one shared MLP after the dense first layers;
    KimiLinearTopkRouter scores with a sigmoid, picks with the correction bias, groups by
    their two best, renormalizes when moe_renormalize, scales by routed_scaling_factor."""
    dense_d_ff = d.value("architecture.mlp.d_ff")
    expert_d_ff = d.read("moe_intermediate_size", default=1024)
    n_shared = d.read("num_shared_experts", "n_shared_experts", default=1)
    types = d.read("mlp_layer_types")
    first = d.read("first_k_dense_replace", default=1)
    if types is not None:
        first = next((i for i, t in enumerate(types) if t != "dense"), len(types))
        if list(types) != ["dense"] * first + ["sparse"] * (len(types) - first):
            raise HFImportError(
                "config.json's mlp_layer_types is not dense layers then MoE layers: the "
                "card's mlp.moe cannot express it"
            )
    if d.read("moe_layer_freq", default=1) != 1:
        d.note(
            "architecture.mlp.moe.layer_period",
            "config.json's moe_layer_freq is not read by transformers' kimi_linear: every "
            "layer after the dense ones is MoE.",
        )
    activation = d.read("moe_router_activation_func", default="sigmoid")
    if activation != "sigmoid":
        raise HFImportError(
            f"moe_router_activation_func {_brief(activation)}: transformers' kimi_linear "
            "scores experts with a sigmoid"
        )
    d.read("use_grouped_topk")  # KimiLinearTopkRouter always ranks groups (one: a no-op)
    d.set("architecture.mlp.d_ff", expert_d_ff, d.origin_of("moe_intermediate_size"))
    d.moe(
        n_experts=d.read("num_experts", "num_local_experts", default=256),
        n_active=d.read("num_experts_per_token", "num_experts_per_tok", default=8),
        n_shared=n_shared,
        shared_d_ff=expert_d_ff * n_shared if n_shared else None,
        first_dense_layers=first,
        dense_d_ff=dense_d_ff if first else None,
    )
    d.set("architecture.mlp.moe.score_function", "sigmoid", "family")
    d.set("architecture.mlp.moe.score_correction_bias", True, "family")
    normalize = d.read("moe_renormalize", "norm_topk_prob", default=True)
    d.set("architecture.mlp.moe.normalize_top_k", normalize, d.origin_of("moe_renormalize"))
    n_groups = d.read("num_expert_group", "n_group", default=1)
    d.set("architecture.mlp.moe.n_groups", n_groups, d.origin_of("num_expert_group"))
    d.set("architecture.mlp.moe.top_k_groups", d.read("topk_group", default=1),
          d.origin_of("topk_group"))  # fmt: skip
    if n_groups > 1:
        d.set("architecture.mlp.moe.group_score", "top2-sum", "family")
    scale = d.read("routed_scaling_factor", default=2.446)
    d.set("architecture.mlp.moe.routed_scale", float(scale), d.origin_of("routed_scaling_factor"))
    mtp = d.read("num_nextn_predict_layers")
    if mtp:
        d.unmapped["num_nextn_predict_layers"] = mtp


def _smollm3(d: _Draft) -> None:
    """SmolLM3: Llama whose layers with no_rope_layers[i] == 0 skip RoPE (by default every
    no_rope_layer_interval-th); a sliding window only with use_sliding_window."""
    n = d.value("architecture.n_layers")
    rotates = d.read("no_rope_layers")
    if rotates is None:
        interval = d.read("no_rope_layer_interval", default=4)  # SmolLM3Config's default
        rotates = [int((i + 1) % interval != 0) for i in range(n)]
    else:
        d.read("no_rope_layer_interval")  # only builds no_rope_layers when it is absent
    if len(rotates) != n:
        raise HFImportError(
            f"no_rope_layers lists {len(rotates)} layers but num_hidden_layers is {n}: "
            "the config contradicts itself"
        )
    pattern = d.value("architecture.attention.layer_pattern")
    windowed = bool(d.read("use_sliding_window", default=False))  # SmolLM3Config's default
    kinds = []
    for i, rope in enumerate(rotates):
        local = windowed and pattern[i % len(pattern)] == "local"
        if local and not rope:
            raise HFImportError(
                f"layer {i} is a sliding-window layer without RoPE: no card layer kind holds it"
            )
        kinds.append("local" if local else "global" if rope else "global-nope")
    d.set("architecture.attention.layer_pattern", _period(kinds), d.origin_of("no_rope_layers"))
    if "local" not in kinds:
        window = d.value("architecture.attention.sliding_window")
        d.set("architecture.attention.sliding_window", None, "config")
        if window:
            d.unmapped["sliding_window"] = f"{window} (not applied: use_sliding_window false)"


def _olmo3(d: _Draft) -> None:
    """OLMo 3: OLMo 2 with sliding layers (by default three to every full one, windows of
    4096) and a RoPE block per layer type; rope_scaling goes to the full layers only."""
    pattern = d.value("architecture.attention.layer_pattern")
    if not d.read("layer_types"):  # Olmo3Config: every fourth layer full attention
        pattern = ["local", "local", "local", "global"]
        d.set("architecture.attention.layer_pattern", pattern, "family")
    if "local" in pattern and d.value("architecture.attention.sliding_window") is None:
        window = d.read("sliding_window", default=4096)  # Olmo3Config's default
        d.set("architecture.attention.sliding_window", window, d.origin_of("sliding_window"))
        d.unmapped.pop("sliding_window", None)
    _full, local = _rope_parameters(d)
    if "local" not in pattern or d.value("architecture.position.rope_scaling.type") is None:
        return
    if local.get("rope_type", "default") != "default":
        raise HFImportError(
            "rope_parameters.sliding_attention scales RoPE too: the card holds one scaling, "
            "for the full-attention layers"
        )
    theta = local.get("rope_theta") or d.value("architecture.position.rope_theta")
    d.set("architecture.position.rope_theta_local", float(theta), "config")
    d.note(
        "architecture.position.rope_theta_local",
        "OLMo 3 scales RoPE on its full-attention layers only: the sliding layers' own base "
        "(rope_theta_local) keeps them unscaled.",
    )


def _minimax_m2(d: _Draft) -> None:
    """MiniMax-M2: every layer's MLP is the experts (intermediate_size each, no shared
    expert); sigmoid scores, the correction bias choosing, the chosen scores renormalized;
    partial RoPE from the legacy rotary_dim (of head_dim) when no partial_rotary_factor."""
    d.moe(
        n_experts=d.read("num_local_experts", "num_experts", default=256),  # the config's defaults
        n_active=d.read("num_experts_per_tok", default=8),
    )
    d.read("scoring_func")  # MiniMaxM2TopKRouter is sigmoid whatever the config says
    _mtp(d, "num_mtp_modules", "mtp_transformer_layers", switch="use_mtp")
    d.set("architecture.mlp.moe.score_function", "sigmoid", "family")
    d.set("architecture.mlp.moe.score_correction_bias", True, "family")
    d.set("architecture.mlp.moe.normalize_top_k", True, "family")
    d.set("architecture.mlp.moe.routed_scale", 1.0, "family")
    rotary_dim = d.read("rotary_dim")
    if rotary_dim is None:
        return
    head_dim = d.value("architecture.attention.head_dim") or 128  # MiniMaxM2Config's default
    fraction = rotary_dim / head_dim
    given = d.value("architecture.position.rotary_fraction")
    if given is not None and abs(given - fraction) > 1e-9:
        raise HFImportError(
            f"rotary_dim {rotary_dim} of head_dim {head_dim} contradicts partial_rotary_factor "
            f"{given}: the config contradicts itself"
        )
    if fraction < 1:
        d.set("architecture.position.rotary_fraction", fraction, "config")


def _minimax(d: _Draft) -> None:
    """MiniMax-01: lightning layers ("linear_attention") and softmax attention, Mixtral's
    MoE on every layer, the residual taken after each norm, alpha (skip) and beta (output)
    factors per sublayer kind. Reads transformers' keys or the released remote code's
    (attn_type_list, layernorm_*_alpha/beta, rotary_dim, postnorm)."""
    _mixtral(d)
    if not d.read("postnorm", default=True):
        raise HFImportError(
            "postnorm is false (the residual taken before each norm): transformers' minimax "
            "and every MiniMax-01 release take it after, the one layout archdb maps"
        )
    n_layers = d.value("architecture.n_layers")
    codes = d.read("attn_type_list")
    if not d.read("layer_types"):
        if codes is not None and len(codes) != n_layers:
            raise HFImportError(
                f"attn_type_list lists {len(codes)} layers but num_hidden_layers is {n_layers}: "
                "the config contradicts itself"
            )
        if codes is None:  # MiniMaxConfig's default: full attention, then lightning, ...
            codes = [(i + 1) % 2 for i in range(n_layers)]
        kinds = ["global" if code else "lightning" for code in codes]
        origin = "config" if d.origin_of("attn_type_list") == "config" else "family"
        d.set("architecture.attention.layer_pattern", _period(kinds), origin)
    d.read("block_size")  # the chunk of tokens its kernel takes at once: same function
    shared = d.read("shared_intermediate_size", default=0)
    d.read("shared_moe_mode")  # how a shared expert's output would be gated
    if shared:
        raise HFImportError(
            f"shared_intermediate_size is {_brief(shared)}: the remote code's shared expert "
            "(gated by a learned coefficient) is not in transformers' minimax nor the card"
        )
    factors = (
        ("attention.skip_multiplier", "full_attn_alpha_factor", "layernorm_full_attention_alpha"),
        ("attention.output_multiplier", "full_attn_beta_factor", "layernorm_full_attention_beta"),
        ("mlp.skip_multiplier", "mlp_alpha_factor", "layernorm_mlp_alpha"),
        ("mlp.output_multiplier", "mlp_beta_factor", "layernorm_mlp_beta"),
    )
    for path, key, legacy in factors:
        d.set(f"architecture.{path}", float(d.read(key, legacy, default=1.0)), d.origin_of(key))
    if "lightning" in (d.value("architecture.attention.layer_pattern") or []):
        heads = d.value("architecture.attention.n_heads")
        if d.config.get("model_type") in _MINIMAX_REMOTE and heads & (heads - 1):
            raise HFImportError(
                f"num_attention_heads is {heads}, not a power of 2: MiniMax's remote code then "
                "interleaves ALiBi's slopes of the next power, not the decay rule the card "
                "names (minimax, transformers')"
            )
        head_dim = (
            d.value("architecture.attention.head_dim") or d.value("architecture.d_model") // heads
        )
        lightning = {
            "n_heads": (heads, "config"),
            "head_dim": (head_dim, "config"),
            "decay": ("minimax", "family"),
            "mlp": (True, "family"),
        }
        for name, (value, origin) in lightning.items():
            d.set(f"architecture.mixers.lightning.{name}", value, origin)
        for name, key, legacy in (
            ("skip_multiplier", "linear_attn_alpha_factor", "layernorm_linear_attention_alpha"),
            ("output_multiplier", "linear_attn_beta_factor", "layernorm_linear_attention_beta"),
        ):
            value = float(d.read(key, legacy, default=1.0))
            d.set(f"architecture.mixers.lightning.{name}", value, d.origin_of(key))
    rotary_dim = d.read("rotary_dim")  # the released config's rotating share of head_dim
    if rotary_dim is not None:
        head_dim = d.value("architecture.attention.head_dim") or (
            d.value("architecture.d_model") // d.value("architecture.attention.n_heads")
        )
        if rotary_dim < head_dim:
            d.set("architecture.position.rotary_fraction", rotary_dim / head_dim, "config")
    if d.value("architecture.position.rotary_fraction") is not None:
        d.note(
            "architecture.position.rotary_fraction",
            "transformers' minimax (5.x) rotates the whole head: its rotary ignores a partial "
            "share, so its logits differ from this card's; MiniMax's released remote code "
            "rotates rotary_dim of head_dim, as the card does.",
        )


def _seed_oss(d: _Draft) -> None:
    """Seed-OSS: Llama whose attention_bias covers q, k and v only (default true); o_proj
    has its own attention_out_bias (default false)."""
    out = d.read("attention_out_bias", default=False)  # SeedOssConfig's default
    d.set("architecture.bias.attn_out", out, d.origin_of("attention_out_bias"))


def _exaone4(d: _Draft) -> None:
    """EXAONE 4: with a sliding window, sliding layers (RoPE) and full layers without RoPE
    (by default three to one, windows of 4096); without one, every layer full with RoPE."""
    window = d.read("sliding_window", default=4096)  # Exaone4Config's default when absent
    if "sliding_window" in d.config and d.config["sliding_window"] is None:
        window = None  # an explicit null: no sliding layers
    n = d.value("architecture.n_layers")
    types = d.read("layer_types")
    if types:
        sliding = [t == "sliding_attention" for t in types]  # checked by _pattern_from_types
    else:  # every sliding_window_pattern-th layer full
        every = _pattern_letters(d.read("sliding_window_pattern", default=4))
        sliding = [(i + 1) % every != 0 for i in range(n)]
    # no window: sliding layers attend to everything, and every layer rotates
    kinds = ["global"] * n if window is None else ["local" if s else "global-nope" for s in sliding]
    d.set("architecture.attention.layer_pattern", _period(kinds), d.origin_of("layer_types"))
    d.unmapped.pop("sliding_window", None)
    d.set("architecture.attention.sliding_window", window if "local" in kinds else None, "config")
    if window is not None and "local" not in kinds:
        d.note(
            "architecture.attention.layer_pattern",
            f"sliding_window {window} is set, so the full-attention layers skip RoPE.",
        )


def _ernie4_5(d: _Draft) -> None:
    """ERNIE 4.5: use_bias puts a bias on q, k, v, o and the MLP (not the head)."""
    uses_bias = d.read("use_bias", default=False)  # Ernie4_5Config's default
    for part in ("qkv", "attn_out", "mlp"):
        d.set(f"architecture.bias.{part}", uses_bias, d.origin_of("use_bias"))


def _ernie4_5_moe(d: _Draft) -> None:
    """ERNIE 4.5 MoE: experts (and shared experts as one MLP) on the layers from
    moe_layer_start_index to moe_layer_end_index, every moe_layer_interval-th; softmax
    scores, the correction bias choosing, the chosen renormalized."""
    if d.read("use_bias", default=False):
        raise HFImportError(
            "use_bias is true: biased dense and shared MLPs beside unbiased experts have no "
            "card field"
        )
    _ernie4_5(d)
    n = d.value("architecture.n_layers")
    start = d.read("moe_layer_start_index", default=1)  # Ernie4_5_MoeConfig's defaults
    end = d.read("moe_layer_end_index", default=-1)
    end = n - 1 if end == -1 else end
    interval = d.read("moe_layer_interval", default=1)
    moe_layers = [i for i in range(n) if (i + 1) % interval == 0 and start <= i <= end]
    first_dense = moe_layers[0] - interval + 1 if moe_layers else -1
    archdb_rule = [
        i for i in range(max(first_dense, 0), n) if (i - first_dense + 1) % interval == 0
    ]
    if not moe_layers or first_dense < 0 or archdb_rule != moe_layers:
        raise HFImportError(
            f"experts on layers {start}..{end} every {interval}: not leading dense layers "
            "then every k-th layer MoE, the placements a card holds"
        )
    expert_d_ff = d.read("moe_intermediate_size", default=1536)
    n_shared = d.read("moe_num_shared_experts", default=2)
    dense_d_ff = d.value("architecture.mlp.d_ff")
    d.set("architecture.mlp.d_ff", expert_d_ff, d.origin_of("moe_intermediate_size"))
    d.moe(
        n_experts=d.read("moe_num_experts", "num_experts", default=64),
        n_active=d.read("moe_k", "num_experts_per_tok", default=6),
        n_shared=n_shared,
        shared_d_ff=expert_d_ff * n_shared if n_shared else None,
        first_dense_layers=first_dense,
        layer_period=interval,
        dense_d_ff=dense_d_ff if first_dense or interval > 1 else None,
    )
    d.read("moe_norm_min")  # the floor of the renormalizing sum (1e-12): no card field
    d.set("architecture.mlp.moe.score_function", "softmax", "family")
    d.set("architecture.mlp.moe.score_correction_bias", True, "family")
    d.set("architecture.mlp.moe.normalize_top_k", True, "family")
    d.set("architecture.mlp.moe.routed_scale", 1.0, "family")


def _hunyuan(d: _Draft) -> None:
    """Hunyuan (dense and MoE): the per-head QK norm reads the rotated q and k; a "dynamic"
    rope_scaling with an alpha is a fixed NTK stretch of the base (ntk-alpha). The released
    configs' switches transformers does not read are refused where they would change the
    model (cross-layer KV sharing, MLA)."""
    d.set("architecture.attention.qk_norm_after_rope", True, "family")
    for key in ("use_cla", "use_mla"):
        if d.read(key, default=False):
            raise HFImportError(
                f"{key} is true, which transformers' Hunyuan does not build: the card would "
                "not be the model"
            )
    if d.read("use_qk_norm", default=True) is False:
        raise HFImportError(
            "use_qk_norm is false, but transformers' Hunyuan always builds query_layernorm "
            "and key_layernorm: the card would not be the model"
        )
    # released configs name the head width attention_head_dim; transformers sizes heads
    # from head_dim (or hidden_size / heads): they must agree
    width = d.read("attention_head_dim")
    effective = d.value("architecture.attention.head_dim") or (
        d.value("architecture.d_model") // d.value("architecture.attention.n_heads")
    )
    if width is not None and width != effective:
        raise HFImportError(
            f"attention_head_dim {width} differs from the head width transformers builds "
            f"({effective}): set head_dim"
        )
    if width is not None:
        d.set("architecture.attention.head_dim", width, "config")
    full, _ = _rope_parameters(d)
    scaling = d.config.get("rope_scaling") or full
    kind = scaling.get("rope_type") or scaling.get("type")
    alpha = scaling.get("alpha")
    if kind != "dynamic" or not alpha:
        return
    if not isinstance(alpha, int | float) or alpha <= 0:
        raise HFImportError(f"rope_scaling alpha must be a positive number (got {_brief(alpha)})")
    for path in list(d.values):
        if path.startswith("architecture.position.rope_scaling"):
            d.clear(path)
    d.unmapped.pop("rope_scaling", None)
    d.notes.pop("architecture.position", None)
    d.notes.pop("architecture.position.rope_scaling", None)
    d.set("architecture.position.rope_scaling.type", "ntk-alpha", "config")
    d.set("architecture.position.rope_scaling.factor", float(alpha), "config")
    d.note(
        "architecture.position.rope_scaling",
        f"config.json's dynamic scaling with alpha {alpha:g}: the base fixed at rope_theta * "
        "alpha^(d/(d-2)) (transformers' ntk_alpha); its other keys are unused.",
    )


def _one_per_layer(d: _Draft, key: str, default: int) -> int:
    """A number Hunyuan's released configs repeat per layer; one value for every layer."""
    value = d.read(key, default=default)
    if isinstance(value, list):
        if len(set(value)) != 1:
            raise HFImportError(
                f"config.json: {key} differs between layers ({_brief(value)}): the card holds "
                "one value for every layer"
            )
        value = value[0]
    return value


def _hunyuan_moe(d: _Draft) -> None:
    """Every layer: softmax-routed experts (the chosen renormalized) plus one shared MLP,
    all intermediate_size wide (transformers reads no moe_intermediate_size)."""
    _hunyuan(d)
    d_ff = d.value("architecture.mlp.d_ff")
    widths = _one_per_layer(d, "moe_intermediate_size", d_ff)
    shared = _one_per_layer(d, "num_shared_expert", 1)
    if widths != d_ff or shared != 1 or not d.read("use_mixed_mlp_moe", default=True):
        raise HFImportError(
            f"moe_intermediate_size {widths}, num_shared_expert {shared}: transformers' "
            f"Hunyuan builds every expert and one shared MLP intermediate_size ({d_ff}) wide"
        )
    if d.read("moe_layer_num_skipped", default=0):
        raise HFImportError(
            "moe_layer_num_skipped is not 0, but transformers' Hunyuan makes every layer MoE"
        )
    d.moe(
        n_experts=d.read("num_experts", "num_local_experts", default=1),  # the config's defaults
        n_active=_one_per_layer(d, "moe_topk", 1),
        n_shared=1,
        shared_d_ff=d_ff,
    )
    d.set("architecture.mlp.moe.score_function", "softmax", "family")
    d.set("architecture.mlp.moe.normalize_top_k", True, "family")


def _zamba2(d: _Draft) -> None:
    """Zamba2: a Mamba-2 layer everywhere, and before each "hybrid" layer a shared block
    (Zamba2Config's defaults throughout; its derived keys are checked, not trusted)."""
    d_model = d.read("hidden_size", default=2560)
    n_layers = d.read("num_hidden_layers", default=54)
    d.set("architecture.d_model", d_model, d.origin_of("hidden_size"))
    d.set("architecture.n_layers", n_layers, d.origin_of("num_hidden_layers"))
    d.set("architecture.vocab_size", d.read("vocab_size", default=32000), "config")
    context = d.read("max_position_embeddings", default=4096)
    if d.read("use_long_context", default=False):  # Zamba2Config sets 16384
        context = 16384
        d.note("architecture.context_length", "use_long_context: Zamba2Config sets 16384.")
    d.set("architecture.context_length", context, d.origin_of("max_position_embeddings"))
    hybrid = _zamba2_hybrid_layers(d, n_layers)
    _zamba2_mamba2(d, d_model)
    _zamba2_block(d, d_model, hybrid)
    for path, value in (
        ("norm.type", "rmsnorm"),
        ("norm.position", "pre"),
        ("norm.affine", "scale"),
        ("norm.final", True),
        ("parallel_layers", False),
        ("final_logit_softcap", None),
    ):
        d.set(f"architecture.{path}", value, "family")
    if not d.read("tie_word_embeddings", default=True):
        raise HFImportError(
            "tie_word_embeddings is false: transformers then leaves Zamba2's shared blocks "
            "untied (a full copy per invocation), which is not the shared architecture"
        )
    d.set("architecture.tied_embeddings", True, d.origin_of("tie_word_embeddings"))
    if d.read("rms_norm_eps", default=1e-5) != 1e-5:
        raise HFImportError(
            "rms_norm_eps is not 1e-5: Zamba2's Mamba-2 norm keeps 1e-5, and archdb's mixer "
            "norm takes the card's one epsilon"
        )
    # the kernels' and initialization's knobs: no effect on the function
    for key in ("use_mamba_kernels", "chunk_size", "use_mem_eff_path", "time_step_max",
                "time_step_floor", "num_logits_to_keep", "attention_hidden_size",
                "kv_channels", "num_query_groups", "hybrid_layer_ids"):  # fmt: skip
        d.read(key)


_ZAMBA2_MAMBA = ("mamba", "linear_attention")  # layers_block_type spellings (5.x, 4.x)


def _zamba2_hybrid_layers(d: _Draft, n_layers: int) -> list[int]:
    types = d.read("layers_block_type", "layer_types", required=True)
    if len(types) != n_layers:
        raise HFImportError(
            f"layers_block_type lists {len(types)} layers but num_hidden_layers is {n_layers}"
        )
    if any(kind in ("m", "g") for kind in types):
        raise HFImportError(
            "layers_block_type is spelled m/g: a config of Zyphra's transformers fork "
            "(lora_rank, state_size, ffn_hidden_size, ...), whose keys transformers' Zamba2 "
            "does not read; import a config in transformers' Zamba2 format"
        )
    for index, kind in enumerate(types):
        if kind not in (*_ZAMBA2_MAMBA, "hybrid"):
            raise HFImportError(
                f"layers_block_type[{index}] is {_brief(kind)}: Zamba2's layers are mamba or hybrid"
            )
    hybrid = [i for i, kind in enumerate(types) if kind == "hybrid"]
    if not hybrid:
        raise HFImportError(
            "layers_block_type has no hybrid layer: without shared blocks the model is "
            "Mamba-2 alone (import it as mamba2)"
        )
    d.set("architecture.attention.layer_pattern", ["mamba2"], "family")
    return hybrid


def _zamba2_mamba2(d: _Draft, d_model: int) -> None:
    """Zamba2MambaMixer: a conv bias always (use_conv_bias is not read), SiLU, dt clamped
    below at time_step_min, the gated norm at 1e-5; add_bias_linear on in/out_proj."""
    heads = d.read("n_mamba_heads", default=8)
    inner = int(d.read("mamba_expand", default=2) * d_model)
    head_dim = inner // heads
    declared = d.read("mamba_headdim")
    if heads * head_dim != inner or declared not in (None, head_dim):
        raise HFImportError(
            f"n_mamba_heads ({heads}) does not split mamba_expand x hidden_size ({inner}) "
            f"into heads of mamba_headdim ({declared}): transformers cannot run this config"
        )
    if d.read("use_conv_bias", default=True) is False:
        d.note(
            "architecture.mixers.mamba2.conv_bias",
            "use_conv_bias is false, but Zamba2MambaMixer's conv always has a bias "
            "(transformers ignores the key).",
        )
    floor = float(d.read("time_step_min", default=0.001))
    sizes = {
        "n_heads": heads,
        "head_dim": head_dim,
        "state_size": d.read("mamba_d_state", default=64),
        "n_groups": d.read("mamba_ngroups", default=1),
        "conv_kernel": d.read("mamba_d_conv", default=4),
        "conv_bias": True,
        "proj_bias": d.read("add_bias_linear", default=False),
        "mlp": False,
        "time_step_floor": floor,
    }
    for name, value in sizes.items():
        key = {"n_heads": "n_mamba_heads", "time_step_floor": "time_step_min"}.get(name, name)
        d.set(f"architecture.mixers.mamba2.{name}", value, d.origin_of(key))


def _zamba2_block(d: _Draft, d_model: int, hybrid: list[int]) -> None:
    """The shared blocks: attention over [x, embeddings] with heads 2 d_model / n_heads
    wide and scores scaled by (head_dim / 2) ** -0.5, the gated MLP, adapters, a projection."""
    heads = d.read("num_attention_heads", default=32)
    kv = d.read("num_key_value_heads", default=heads)
    head_dim = 2 * d_model // heads
    if d.read("attention_head_dim", "head_dim") not in (None, head_dim):
        raise HFImportError(
            f"attention_head_dim is not 2 x hidden_size / num_attention_heads ({head_dim}): "
            "Zamba2Config derives it"
        )
    for path, value, origin in (
        ("variant", "softmax", "family"),
        ("n_heads", heads, d.origin_of("num_attention_heads")),
        ("n_kv_heads", kv, d.origin_of("num_key_value_heads")),
        ("head_dim", head_dim, "family"),
        ("qk_norm", "none", "family"),
        ("logit_softcap", None, "family"),
        ("sliding_window", None, "family"),
        ("scale", (head_dim / 2) ** -0.5, "family"),
    ):
        d.set(f"architecture.attention.{path}", value, origin)
    if d.read("use_mem_rope", default=False):
        d.set("architecture.position.type", "rope", d.origin_of("use_mem_rope"))
        full, _ = _rope_parameters(d)
        theta = d.read("rope_theta") or full.get("rope_theta") or 10000.0
        d.set("architecture.position.rope_theta", float(theta), "config")
    else:
        d.set("architecture.position.type", "none", d.origin_of("use_mem_rope"))
        d.read("rope_theta", "rope_parameters")  # not applied without use_mem_rope
    raw = str(d.read("hidden_act", default="gelu"))
    activation = _activation(raw, gated=True)
    if activation is None:
        raise HFImportError(f"hidden_act {_brief(raw)} has no gated activation in the schema")
    d.set("architecture.mlp.activation", activation, d.origin_of("hidden_act"))
    d.set("architecture.mlp.d_ff", d.read("intermediate_size") or 4 * d_model, "config")
    d.set("architecture.mlp.moe", None, "family")
    bias = d.read("add_bias_linear", default=False)
    d.set("architecture.bias.qkv", False, "family")
    d.set("architecture.bias.attn_out", False, "family")
    d.set("architecture.bias.mlp", bias, d.origin_of("add_bias_linear"))
    n_blocks = d.read("num_mem_blocks", default=1)
    blocks = {
        "n_blocks": min(n_blocks, len(hybrid)),  # transformers ties at most one per layer
        "layers": hybrid,
        "concat_embeddings": True,
        "adapter_rank": d.read("adapter_rank", default=128),
        "mlp_adapters": True,
        "attention_adapters": d.read("use_shared_attention_adapter", default=False),
        "output_projection": True,
    }
    for name, value in blocks.items():
        origin = (
            "family"
            if name in ("concat_embeddings", "mlp_adapters", "output_projection")
            else "config"
        )
        d.set(f"architecture.shared_blocks.{name}", value, origin)


# MiniMax-01's and MiniMax-M1's remote code: the layout transformers' minimax implements
# (the importer reads their attn_type_list, layernorm_*_alpha/beta, rotary_dim, postnorm)
_MINIMAX_REMOTE = ("minimax_text_01", "minimax_m1")


def supported_model_types() -> list[str]:
    from archdb.families.registry import SPECS

    return sorted(m for m, spec in SPECS.items() if spec.imports)


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

    def __init__(self, config: Mapping[str, Any], family: FamilySpec) -> None:
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
    if isinstance(d_ff, list):  # one width per layer (Gemma 3n): the card holds one
        if len(set(d_ff)) != 1:
            raise HFImportError(
                "config.json: intermediate_size gives layers different widths: per-layer "
                "widths have no card field"
            )
        d_ff = d_ff[0]
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
    aliases = dict(d.family.type_aliases)
    for index, t in enumerate(types):
        t = aliases.get(t, t) if isinstance(t, str) else t
        if t == "linear_attention" and d.family.linear_layer:
            kinds.append(d.family.linear_layer)
            continue
        if t == "conv" and d.family.conv_layer:
            kinds.append(d.family.conv_layer)
            continue
        if t == "indexed_attention" and d.family.indexed_layer:
            kinds.append(d.family.full_layer)  # its indexer: attention.sparse
            continue
        if t not in _LAYER_KINDS:
            raise HFImportError(
                f"layer_types[{index}] is {_brief(t)}: not an attention kind the card knows "
                f"({', '.join(_LAYER_KINDS)})"
            )
        kinds.append(_LAYER_KINDS[t] or d.family.full_layer)
    return _period(kinds)


def _period(kinds: list[str]) -> list[str]:
    """The shortest prefix whose tiling gives every layer: l l l l l g l l ... -> l l l l l g;
    the whole list when that prefix does not repeat (irregular models: Bamba's
    attention at layers 9, 18 and 27 of 32 has a "period" of 28, whose second tile would
    only be its first four layers).

    That prefix's length is the list's smallest period: its length minus its longest
    border (a proper prefix that is also a suffix), found by the Knuth-Morris-Pratt failure
    function in linear time. A period is kept only when it tiles at least twice, since the
    schema reads a list as long as n_layers as the explicit per-layer list.
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
    return kinds[:period] if 2 * period <= len(kinds) else kinds


def _attention(d: _Draft) -> None:
    f = d.family
    d.set("architecture.attention.variant", "softmax", "family")
    d.set("architecture.attention.qk_norm", f.qk_norm, "family")
    d.set("architecture.attention.logit_softcap", d.read("attn_logit_softcapping"), "config")
    d.set("architecture.final_logit_softcap", d.read("final_logit_softcapping"), "config")
    window = d.read("sliding_window")
    types = d.read("layer_types")
    every = _pattern_letters(d.read("sliding_window_pattern"))
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


def _qk_norm_terms(d: _Draft) -> None:
    """After the hooks: every imported family builds q_norm / k_norm with its own block
    norm class (Qwen3RMSNorm, CohereLayerNorm, Phi's nn.LayerNorm), so a QK norm with
    parameters takes the blocks' type and affine, unless a hook stated its own."""
    from archdb.schema import QKNorm

    qk = d.value("architecture.attention.qk_norm")
    for part in ("type", "affine") if qk and QKNorm(qk).learned else ():
        path = f"architecture.attention.qk_norm_{part}"
        if d.value(path) is None:
            d.set(path, d.value(f"architecture.norm.{part}"), "family")


_GELU_TANH = {"gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_accurate", "gelu_tanh"}
_GELU_EXACT = {"gelu", "gelu_python"}
_EPS_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon", "norm_eps")


def _function(d: _Draft) -> None:
    """Choices that change outputs but not counts: norm epsilon and scale form, GELU form,
    RoPE layout, and the unit factors (set by family hooks where they are not 1)."""
    f = d.family
    eps = d.read(*_EPS_KEYS, default=f.norm_eps_default)
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
    for path in (
        "architecture.embedding_multiplier",
        "architecture.logit_scale",
        "architecture.residual_multiplier",
    ):
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
    _refuse_per_layer_lists(decoder, model_type)
    from archdb.families.registry import SPECS

    family = SPECS[model_type]
    d = _Draft(decoder, family)
    for step in family.steps or (_sizes, _norm, _attention, _position, _mlp, _bias, _tied):
        step(d)
    if family.read:
        family.read(d)
    _qk_norm_terms(d)
    _function(d)
    if wrapper_note:
        d.note("architecture", wrapper_note)
    if via:
        d.note("architecture", f"Imported as transformers' {model_type}: {via}.")
    return _result(d, model_type, source_url, identity, config)


# keys that Hunyuan's released configs give per layer (one value repeated), read by its hook
_PER_LAYER_LISTS = ("moe_intermediate_size", "moe_topk", "num_shared_expert")


def _refuse_per_layer_lists(decoder: Mapping[str, Any], model_type: str) -> None:
    if model_type in ("hunyuan_v1_dense", "hunyuan_v1_moe"):
        return
    for key in _PER_LAYER_LISTS:
        if isinstance(decoder.get(key), list):
            raise HFImportError(
                f"config.json: {key} is a per-layer list, which {model_type} reads as one number"
            )


def _family_of(decoder: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[str, str | None]:
    """The supported model_type a config belongs to, and how it was recognised. A custom
    model_type (Kimi K2 says ``kimi_k2``) is read through ``architectures`` when that names
    a supported family's model class (``DeepseekV3ForCausalLM``)."""
    from archdb.families.registry import resolve

    declared = str(decoder.get("model_type"))
    classes = _architectures(decoder) or _architectures(config)
    found = resolve(declared, classes)
    if found is not None and found[0] in supported_model_types():
        return found
    raise HFImportError(
        f"model_type {declared!r} is not supported; supported: {', '.join(supported_model_types())}"
    )


def _architectures(config: Mapping[str, Any]) -> list[str]:
    names = config.get("architectures")
    if not isinstance(names, list):
        return []
    return [n for n in names[:16] if isinstance(n, str) and len(n) <= 200]


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
            **_declared_family(d.config, original),
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


def _declared_family(decoder: Mapping[str, Any], original: Mapping[str, Any]) -> dict[str, str]:
    """The config's own model_type and first model class, as written, for the config
    source: they route the card to its family later (names that do not fit the schema's
    pattern are left out, so a hostile name never reaches the card)."""
    declared: dict[str, str] = {}
    model_type = decoder.get("model_type")
    if isinstance(model_type, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", model_type):
        declared["model_type"] = model_type
        classes = _architectures(decoder) or _architectures(original)
        if classes and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,99}", classes[0]):
            declared["model_class"] = classes[0]
    return declared


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
        set_path(nested, path, value)
    return nested


def _get(data: Mapping[str, Any], path: str) -> Any:
    return get_path({"architecture": data}, path)


def _ordered_architecture(arch: dict[str, Any]) -> dict[str, Any]:
    """The schema's key order at every level, with every required field present (null
    where unknown)."""
    return _ordered(Architecture, {"kind": "decoder-only", **arch})


def _ordered(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name not in data and not info.is_required():
            continue
        value = data.get(name)
        held = unwrap(info.annotation)[0]
        if isinstance(value, dict) and isinstance(held, type) and issubclass(held, BaseModel):
            value = _ordered(held, value)
        out[name] = value
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
