"""Map a Hugging Face ``config.json`` to a card.

A released config holds the sizes (``hidden_size``, ``num_key_value_heads``, ...) but not
every architectural choice: transformers keeps some in its modeling code (where the norms
sit, whether the MLP is gated, whether attention and MLP run in parallel, which linear
layers carry a bias). So each supported ``model_type`` has one ``FamilySpec``
(``archdb_hf.families``) saying what its transformers implementation does, the config
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
reads before mapping anything (``config_shape``: a key a family reads into a card field has
that field's type and bounds, the others are listed in ``ConfigShape``), so a wrong type
is an HFImportError naming the key, never a traceback; every step is linear in the
config's size.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import math
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import annotated_types
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    create_model,
)
from pydantic.fields import FieldInfo

from archdb.errors import ArchdbError, validation_message
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
    MODEL_CLASS_PATTERN,
    MODEL_TYPE_PATTERN,
    UNKNOWN_WHEN_NULL,
    Architecture,
)
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import MOE_LAYOUT, ROPE_SCALING_KEYS, Key, read_activation, value_at

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


def pattern_letters(value: object) -> object:
    """EXAONE 4 may spell sliding_window_pattern in letters: "LLLG" (L sliding, G full) is
    every fourth layer full, 4; anything else is left for the integer check to refuse."""
    if isinstance(value, str) and len(value) <= MAX_PATTERN and re.fullmatch(r"L*G", value):
        return len(value)
    return value


class _Keys(BaseModel):
    """Keys are checked; others pass through (they are reported as unmapped)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)


class RopeScaling(_Keys):
    """A RoPE scaling block's numbers (its factor is checked where it is read: a factor
    no card field holds is reported, not refused)."""

    original_max_position_embeddings: Tokens | None = None
    beta_fast: Number | None = None
    beta_slow: Number | None = None
    mscale: Number | None = None
    mscale_all_dim: Number | None = None
    low_freq_factor: Number | None = None
    high_freq_factor: Number | None = None
    attention_factor: Number | None = None


class RopeParameters(RopeScaling):
    rope_theta: Number | None = None
    partial_rotary_factor: Share | None = None
    rope_type: Name | None = None
    compress: RopeParameters | None = None  # DeepSeek-V4's compressed layers
    full_attention: RopeParameters | None = None
    sliding_attention: RopeParameters | None = None


class LinearAttnConfig(_Keys):
    """Kimi Linear's linear_attn_config: KDA sizes and the 1-based layer lists."""

    num_heads: Heads | None = None
    head_dim: Width | None = None
    short_conv_kernel_size: Width | None = None
    kda_layers: Annotated[list[Layers], Field(max_length=MAX_DEPTH)] | None = None
    full_attn_layers: Annotated[list[Layers], Field(max_length=MAX_DEPTH)] | None = None


class AttnConfig(_Keys):
    """MPT's and DBRX's attn_config: attention settings their ports read or ignore."""

    attn_type: Name | None = None
    alibi: StrictBool | None = None
    alibi_bias_max: Number | None = None
    clip_qkv: Number | None = None
    qk_ln: StrictBool | None = None
    softmax_scale: Number | None = None
    kv_n_heads: Heads | None = None
    rope_theta: Number | None = None


class FfnConfig(_Keys):
    """DBRX's ffn_config: its experts and router."""

    ffn_hidden_size: Width | None = None
    moe_num_experts: Heads | None = None
    moe_top_k: Heads | None = None
    moe_normalize_expert_weights: Number | None = None
    ffn_act_fn: dict[str, Name] | None = None


class ConfigShape(_Keys):
    """The type and range of the keys import_config reads that no family ``Key`` reads
    straight into a card field (those are derived from the field: ``config_shape``): the
    generic steps' keys and other spellings, keys written only or converted on reading,
    and the hooks' keys (bounds: archdb.schema's)."""

    model_type: Name | None = None
    name_or_path: Name | None = Field(None, alias="_name_or_path")
    text_config: dict[str, Any] | None = None
    attn_config: AttnConfig | None = None  # MPT's, DBRX's
    ffn_config: FfnConfig | None = None  # DBRX's
    expansion_ratio: Heads | None = None  # MPT's MLP width, in d_model
    no_bias: StrictBool | None = None  # MPT's
    # sizes
    hidden_size: Width | None = None
    n_embd: Width | None = None
    n_embed: Width | None = None
    d_model: Width | None = None
    num_hidden_layers: Layers | None = None
    n_layer: Layers | None = None
    num_layers: Layers | None = None
    n_layers: Layers | None = None
    num_attention_heads: Heads | None = None
    n_head: Heads | None = None
    num_heads: Heads | None = None
    n_heads: Heads | None = None
    attention_heads: Heads | None = None  # XGLM
    num_key_value_heads: Heads | None = None
    num_kv_heads: Heads | None = None
    n_head_kv: Heads | None = None
    head_dim: Width | None = None
    vocab_size: _sized(1, MAX_VOCAB) | None = None
    max_position_embeddings: Tokens | None = None
    n_positions: Tokens | None = None
    max_sequence_length: Tokens | None = None
    seq_length: Tokens | None = None
    max_seq_len: Tokens | None = None
    n_ctx: Tokens | None = None
    # one width, or one per layer (Gemma 3n; only equal widths map to a card)
    intermediate_size: Width | Annotated[list[Width], Field(max_length=MAX_DEPTH)] | None = None
    n_inner: Width | None = None
    ffn_hidden_size: Width | None = None
    ffn_dim: Width | None = None
    dff: Width | None = None  # CTRL
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
    rope_scaling: RopeScaling | None = None
    rotary: StrictBool | None = None
    rotary_dim: _sized(0, MAX_WIDTH) | None = None
    alibi: StrictBool | None = None
    # attention
    attn_logit_softcapping: Number | None = None
    final_logit_softcapping: Number | None = None
    # 0: no window (Qwen2MoeConfig saves 0 when use_sliding_window is false)
    sliding_window: _sized(0, MAX_CONTEXT) | None = None
    layer_types: Annotated[list[Name], Field(max_length=MAX_PATTERN)] | None = None
    sliding_window_pattern: (
        Annotated[_sized(1, MAX_PATTERN), BeforeValidator(pattern_letters)] | None
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
    swiglu_limit: Number | None = None
    swiglu_alpha: Number | None = None
    # blocks, norms, biases, embeddings
    parallel_attn: StrictBool | None = None
    num_ln_in_parallel_attn: _sized(1, 2) | None = None
    do_layer_norm_before: StrictBool | None = None
    remove_final_layer_norm: StrictBool | None = Field(None, alias="_remove_final_layer_norm")
    layer_norm_elementwise_affine: StrictBool | None = None
    attention_bias: StrictBool | None = None
    # ERNIE 4.5 MoE: experts, and which layers have them
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
    num_experts_per_tok: Heads | None = None
    n_shared_experts: _sized(0, MAX_COUNT) | None = None
    # a per-layer list only in Hunyuan's released configs (_PER_LAYER_LISTS)
    moe_intermediate_size: Width | Annotated[list[Width], Field(max_length=MAX_DEPTH)] | None = None
    mlp_only_layers: Annotated[list[_sized(0, MAX_DEPTH)], Field(max_length=MAX_DEPTH)] | None = (
        None
    )
    # a period (DeepSeek), or one 0/1 per layer (MiMo-V2-Flash's released config)
    moe_layer_freq: Layers | Annotated[list[_sized(0, 1)], Field(max_length=MAX_DEPTH)] | None = (
        None
    )
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
    # Llama 4: its chunks, MoE period and the NoPE layers' temperature tuning (released
    # configs state the switch as a number, read as transformers does: by its truth)
    attention_chunk_size: Tokens | None = None
    moe_layers: Annotated[list[_sized(0, MAX_DEPTH)], Field(max_length=MAX_DEPTH)] | None = None
    intermediate_size_mlp: Width | None = None
    use_qk_norm: StrictBool | None = None
    attn_temperature_tuning: StrictBool | _sized(0, MAX_COUNT) | None = None
    # Kimi Linear: KDA sizes (in linear_attn_config, or transformers' flat keys), its MoE
    linear_attn_config: LinearAttnConfig | None = None
    linear_num_heads: Heads | None = None
    linear_head_dim: Width | None = None
    num_experts_per_token: Heads | None = None
    num_shared_experts: _sized(0, MAX_COUNT) | None = None
    num_expert_group: Heads | None = None
    model_max_length: Width | None = None
    # the hooks' per-layer kinds (DeepSeek-V3.2, V4, Kimi Linear, MiMo-V2-Flash) and
    # DeepSeek-V4's compression rates
    mlp_layer_types: Annotated[list[Name], Field(max_length=MAX_DEPTH)] | None = None
    compress_rates: Annotated[dict[Name, Width], Field(max_length=MAX_PATTERN)] | None = None
    compress_ratios: (
        Annotated[list[_sized(0, MAX_CONTEXT)], Field(max_length=MAX_DEPTH + 1)] | None
    ) = None
    compress_rate_csa: Width | None = None
    compress_rate_hca: Width | None = None
    attention_value_scale: Number | None = None  # MiMo-V2-Flash
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


def config_shape(keys: Iterable[Key]) -> type[ConfigShape]:
    """``ConfigShape`` plus every key that holds one card field as it is (each ``Key`` of
    the name has a path and is read unconverted, by the map or, written as the field, by
    a hook): its type and range are the field's (archdb.schema), so such keys are not
    listed again above. A converted key, or one held in fields of different types, keeps
    its entry above."""
    found: dict[str, set[Any]] = {}
    mixed: set[str] = set()
    for key in keys:
        if key.path is None:
            continue
        for name in (key.name, *key.also):
            # a hook reads a written-only key: as the field, unless written converted
            if key.into is not None or (not key.read and key.out is not None):
                mixed.add(name)
            found.setdefault(name, set()).add(_config_type(field_at(key.path)))
    derived: dict[str, Any] = {
        name: (kinds.pop() | None, None)
        for name, kinds in sorted(found.items())
        if len(kinds) == 1 and None not in kinds and name not in mixed
        and name not in ConfigShape.model_fields
    }  # fmt: skip
    return create_model("DerivedConfigShape", __base__=ConfigShape, **derived)


def field_at(path: str) -> FieldInfo | None:
    """The schema field at a dotted path under architecture (None: no such field)."""
    model: Any = Architecture
    info = None
    for part in path.split("."):
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return None
        info = fields[part]
        model = unwrap(info.annotation)[0]
    return info


def _config_type(info: FieldInfo | None) -> Any:
    """A config value's type for a schema field: its bounds, any JSON number for a float
    (configs write 10000 for 10000.0); None for what a config does not spell as the card
    does (lists, sub-models, free text)."""
    if info is None:
        return None
    held, is_list, _ = unwrap(info.annotation)
    if is_list:
        return None
    bounds = [
        annotated_types.Ge(1) if isinstance(b, annotated_types.Gt) and b.gt == 0 and held is int
        else b
        for b in _bounds(info)
    ]  # fmt: skip
    if held is bool:
        return StrictBool
    if held is int:
        return Annotated[(StrictInt, *bounds)] if bounds else StrictInt
    if held is float:
        return Annotated[(float, BeforeValidator(_finite_number), *bounds)]
    if isinstance(held, type) and issubclass(held, enum.Enum):
        return held
    return None


def _bounds(info: FieldInfo) -> list[Any]:
    """The numeric bounds of a field, wherever pydantic keeps them."""
    found, stack = [], [*info.metadata, info.annotation]
    while stack:
        item = stack.pop()
        if isinstance(item, annotated_types.Gt | annotated_types.Ge | annotated_types.Le):
            if item not in found:
                found.append(item)
        elif isinstance(item, FieldInfo):
            stack.extend(item.metadata)
        elif typing.get_args(item):
            stack.extend(typing.get_args(item))
    return sorted(found, key=lambda b: type(b).__name__)


def check_shape(
    config: Mapping[str, Any], prefix: str = "", shape: type[ConfigShape] = ConfigShape
) -> None:
    """HFImportError naming the first keys whose type or range is wrong."""
    try:
        shape.model_validate(config)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:3]:
            key = prefix + ".".join(str(p) for p in err["loc"])
            message = validation_message(err)
            problems.append(f"{key}: {message} (got {shown_briefly(err.get('input'))})")
        more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        raise HFImportError(f"config.json: {'; '.join(problems)}{more}") from None


def shown_briefly(value: object, limit: int = 40) -> str:
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
        "activation_dropout", "ffn_dropout", "dropout_rate", "scale_attn_weights",
        "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "use_flash_attn",
        "_attn_implementation",
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


def positive(key: str) -> Callable[[Any], float]:
    """A multiplier's reading: zero would erase the stream or divide by zero."""

    def checked(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise HFImportError(
                f"config.json: {key} must be a positive number (got {shown_briefly(value)})"
            )
        return float(value)

    return checked


def read_positive(d: Draft, key: str) -> float:
    """A multiplier (default 1.0), positive."""
    return positive(key)(d.read(key, default=1.0))


def multiplier(key: str, path: str) -> Key:
    """A factor's key (the config classes' default 1.0), read positive, written as the
    card's (1.0 where null)."""
    return Key(key, path, default=1.0, into=positive(key), out=lambda a: value_at(a, path) or 1.0)


def read_mtp(
    d: Draft,
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


def sigmoid_router(d: Draft) -> None:
    """transformers' DeepseekV3TopkRouter (GLM-4.5's, Nemotron 3's; its sizes and switches:
    the family's keys, its sigmoid scores and correction bias: fixed): groups ranked by
    their two best; scoring_func and topk_method are not read."""
    for key in ("scoring_func", "topk_method"):
        d.read(key)
    if (d.value("architecture.mlp.moe.n_groups") or 1) > 1:
        d.set("architecture.mlp.moe.group_score", "top2-sum", "family")


def read_groups(d: Draft, score: str, n_groups: int, top_k_groups: int) -> None:
    d.set("architecture.mlp.moe.n_groups", n_groups, d.origin_of("n_group"))
    d.set("architecture.mlp.moe.top_k_groups", top_k_groups, d.origin_of("topk_group"))
    if n_groups > 1:
        d.set("architecture.mlp.moe.group_score", score, "family")


def silu_conv(d: Draft) -> None:
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


def check_mamba2_width(
    d: Draft, inner: int, mixer: str, keys: tuple[str, str] = ("mamba_n_heads", "mamba_d_head")
) -> None:
    """A Mamba-2 mixer's heads (its sizes: the family's keys, spelled ``keys``) against its
    inner width; a head width of "auto" is that width over the heads."""
    sizes = "architecture.mixers.mamba2."
    heads, head_dim = d.value(sizes + "n_heads"), d.value(sizes + "head_dim")
    if head_dim == "auto":
        head_dim = inner // heads
        d.set(sizes + "head_dim", head_dim, "family")
    if heads * head_dim != inner:
        raise HFImportError(
            f"{keys[0]} x {keys[1]} ({heads} x {head_dim}) differs from the mixer width "
            f"({inner}): transformers' {mixer} cannot run this config"
        )


def no_time_step_clamp(d: Draft) -> None:
    """time_step_limit (0, inf) leaves dt as it is; any other clamp is not expressible."""
    limit = d.read("time_step_limit", default=(0.0, float("inf")))
    bounds = [_serialized_float(v) for v in limit] if isinstance(limit, list | tuple) else None
    if limit is not None and bounds != [0, math.inf]:
        raise HFImportError(f"time_step_limit {limit!r} clamps dt: not expressible")


def _serialized_float(value: Any) -> Any:
    """A number as transformers saves it: inf becomes {"__float__": "Infinity"}."""
    if isinstance(value, dict) and value.get("__float__") == "Infinity":
        return math.inf
    return value


# --- the draft card --------------------------------------------------------------


class Draft:
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

    def read_nullable(self, key: str, default: Any) -> Any:
        """``key``'s value, ``default`` when absent, and None when the config states null:
        a config class that takes an explicit null as off (Exaone 4's sliding_window)."""
        if key in self.config and self.config[key] is None:
            self.used.add(key)
            self.key_origin[key] = "config"
            return None
        return self.read(key, default=default)

    def per_layer(self, key: str, n_layers: int) -> list[Any] | None:
        """A per-layer list of the config (None when absent), refused unless it has one
        entry per layer: transformers would index past it, or leave layers unset."""
        values = self.read(key)
        if values is None:
            return None
        if not isinstance(values, list) or len(values) != n_layers:
            count = len(values) if isinstance(values, list) else type(values).__name__
            raise HFImportError(
                f"config.json's {key} lists {count} entries but num_hidden_layers is "
                f"{n_layers}: one a layer is needed"
            )
        return values

    def layer_numbers(self, key: str, values: Any, n_layers: int, *, base: int = 0) -> list[int]:
        """Layer numbers of a config list (``base`` 0 or 1), each checked to name a layer."""
        if not isinstance(values, list):
            raise HFImportError(f"config.json's {key} must be a list of layer numbers")
        for number in values:
            if isinstance(number, bool) or not isinstance(number, int):
                raise HFImportError(f"config.json's {key} holds {number!r:.20}, not a layer number")
            if not base <= number < n_layers + base:
                raise HFImportError(
                    f"config.json's {key} names layer {number}, outside layers {base} to "
                    f"{n_layers - 1 + base}"
                )
        return values

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


def _sizes(d: Draft) -> None:
    f = d.family
    d_model = d.read("hidden_size", "n_embd", "n_embed", "d_model", required=True)
    d.set("architecture.d_model", d_model, "config")
    d.set(
        "architecture.n_layers",
        d.read("num_hidden_layers", "n_layer", "num_layers", "n_layers", required=True),
        "config",
    )
    n_heads = d.read(
        "num_attention_heads", "n_head", "num_heads", "n_heads", "attention_heads", required=True
    )
    d.set("architecture.attention.n_heads", n_heads, "config")
    kv = d.read("num_key_value_heads", "num_kv_heads", "n_head_kv", default=n_heads)
    d.set("architecture.attention.n_kv_heads", kv, d.origin_of("num_key_value_heads"))
    head_dim = d.read("head_dim")
    if head_dim is not None:
        d.set("architecture.attention.head_dim", head_dim, "config")
    d.set("architecture.vocab_size", d.read("vocab_size", required=True), "config")
    context = d.read(
        "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "max_seq_len"
    )
    if context is not None:
        d.set("architecture.context_length", context, "config")
    if d.config.get("n_ctx") == context:
        d.used.add("n_ctx")
    d_ff = d.read("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim", "dff")
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


def _mlp(d: Draft) -> None:
    f = d.family
    spellings = ("hidden_activation", "hidden_act", "activation_function", "activation")
    raw = d.read(*spellings, default=f.activation_default)
    d.used.update(k for k in spellings if k in d.config)  # legacy duplicates (Gemma's hidden_act)
    mapped = read_activation(str(raw), f.gated)
    origin = d.origin_of("hidden_activation")
    d.set("architecture.mlp.activation", mapped, origin)
    if mapped is None:
        d.unmapped["activation"] = raw
        d.note("architecture.mlp.activation", f"config activation {raw!r} has no schema value.")
    d.set("architecture.mlp.moe", None, "family")


def read_norm(d: Draft) -> None:
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


# a stack of one recurrent mixer (Mamba, RWKV, xLSTM): no attention, positions or
# attention biases, one sublayer path
_ATTENTION_FREE = {
    "attention.variant": "softmax",
    "attention.n_heads": None,
    "attention.n_kv_heads": None,
    "attention.qk_norm": None,
    "attention.logit_softcap": None,
    "attention.sliding_window": None,
    "position.type": "none",
    "bias.qkv": False,
    "bias.attn_out": False,
    "final_logit_softcap": None,
}


def attention_free(d: Draft, kind: str, what: str) -> None:
    """A stack whose every layer is the recurrent mixer ``kind`` (``what``, in the notes):
    the family's norms, and none of attention's fields."""
    read_norm(d)
    for path, value in _ATTENTION_FREE.items():
        d.set(f"architecture.{path}", value, "family")
    d.set("architecture.attention.layer_pattern", [kind], "family")
    free = f"Attention-free: every layer is {what} (the transformers implementation)."
    for path in ("attention.n_heads", "attention.n_kv_heads", "attention.qk_norm"):
        d.note(f"architecture.{path}", free)


def read_bias(d: Draft) -> None:
    f = d.family
    if f.lm_head_bias:
        d.set("architecture.bias.lm_head", True, "family")
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


def rope_parameters_of(d: Draft) -> tuple[dict[str, Any], dict[str, Any]]:
    """The full-attention and local-attention RoPE settings, whatever the spelling."""
    params = d.read("rope_parameters", default={}) or {}
    if "full_attention" in params or "sliding_attention" in params:
        return params.get("full_attention") or {}, params.get("sliding_attention") or {}
    return params, {}


def read_position(d: Draft) -> None:
    f = d.family
    d.set("architecture.position.type", f.position, "family")
    if f.position != "rope":
        return
    full, local = rope_parameters_of(d)
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


_FACTOR_LISTS = {"short_factor", "long_factor"}  # longrope's per-frequency divisors
_SCALING_BOOKKEEPING = {"rope_type", "type", "factor", "rope_theta", "partial_rotary_factor"}


def _rope_scaling(d: Draft, scaling: dict[str, Any]) -> None:
    """position.rope_scaling from a config's scaling block; what the card cannot hold
    (unknown types and keys) is reported and noted."""
    kind = scaling.get("rope_type") or scaling.get("type")
    keys = ROPE_SCALING_KEYS.get(str(kind))
    if kind == "longrope":
        scaling = _longrope_block(d, scaling)
    factor = scaling.get("factor")
    if keys is None or not isinstance(factor, int | float) or factor <= 0:
        d.unmapped["rope_scaling"] = scaling
        d.note(
            "architecture.position",
            f"config.json rope scaling {short_text(scaling)} is not "
            "represented in the card (rope_theta is the base frequency).",
        )
        return
    mapped: dict[str, Any] = {"type": kind, "factor": float(factor)}
    for name, key in keys.items():
        value = scaling.get(key)
        if name == "truncate":  # a flag (gpt-oss: false); anything else is reported below
            if isinstance(value, bool):
                mapped[name] = value
        elif name in _FACTOR_LISTS:
            mapped[name] = _factor_list(key, value)
        elif value is not None:
            mapped[name] = value if name == "original_context" else float(value)
    for name, value in mapped.items():
        d.set(f"architecture.position.rope_scaling.{name}", value, "config")
    context = d.value("architecture.context_length")
    if kind == "dynamic" and "original_context" not in mapped and context is not None:
        # transformers' dynamic NTK stretches past max_position_embeddings (InternLM2)
        d.set("architecture.position.rope_scaling.original_context", context, "family")
    held = {key for name, key in keys.items() if name != "truncate" or name in mapped}
    rest = {k: v for k, v in scaling.items() if k not in _SCALING_BOOKKEEPING and k not in held}
    if rest:
        d.unmapped["rope_scaling"] = rest
        d.note(
            "architecture.position.rope_scaling",
            f"config.json rope scaling also sets {short_text(rest)}, which the card does not hold.",
        )


def _longrope_block(d: Draft, scaling: dict[str, Any]) -> dict[str, Any]:
    """LongRoPE's block as transformers reads it: a top-level original_max_position_embeddings
    wins over the block's (Phi-3 keeps it there), and without a factor key the factor is
    max_position_embeddings / original_max_position_embeddings."""
    scaling = dict(scaling)
    top = d.read("original_max_position_embeddings")
    if top is not None:
        scaling["original_max_position_embeddings"] = top
    original = scaling.get("original_max_position_embeddings")
    context = d.value("architecture.context_length")
    valid = isinstance(original, int) and not isinstance(original, bool) and original > 0
    if not valid:
        raise HFImportError(
            "rope_scaling longrope needs original_max_position_embeddings, a positive whole "
            f"number (got {shown_briefly(original)})"
        )
    if scaling.get("factor") is None and isinstance(context, int):
        scaling["factor"] = context / original
    return scaling


def _factor_list(key: str, value: Any) -> list[float]:
    """A longrope factor list as floats; anything but a list of positive numbers is refused."""
    numbers = isinstance(value, list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in value
    )
    if not numbers or not value:
        raise HFImportError(
            f"rope_scaling {key} must be a list of positive numbers (got {shown_briefly(value)})"
        )
    return [float(v) for v in value]


def short_text(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


_LAYER_KINDS = {
    "full_attention": None,
    "sliding_attention": "local",
    "chunked_attention": "chunked",
    # DeepSeek-V4's compressed layers (the deepseek_v4 hook reads their sizes)
    "compressed_sparse_attention": "compressed-sparse",
    "heavily_compressed_attention": "heavily-compressed",
}


def _pattern_from_types(types: list[str], d: Draft) -> list[str]:
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
                f"layer_types[{index}] is {shown_briefly(t)}: not an attention kind the card knows "
                f"({', '.join(_LAYER_KINDS)})"
            )
        kinds.append(_LAYER_KINDS[t] or d.family.full_layer)
    return read_layer_period(kinds)


def read_layer_period(kinds: list[str]) -> list[str]:
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


def _attention(d: Draft) -> None:
    f = d.family
    d.set("architecture.attention.variant", "softmax", "family")
    d.set("architecture.attention.qk_norm", f.qk_norm, "family")
    d.set("architecture.attention.logit_softcap", d.read("attn_logit_softcapping"), "config")
    d.set("architecture.final_logit_softcap", d.read("final_logit_softcapping"), "config")
    window = d.read("sliding_window")
    types = d.read("layer_types")
    every = pattern_letters(d.read("sliding_window_pattern"))
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
    uses_window = bool(
        {"local", "chunked", "compressed-sparse", "heavily-compressed"} & set(pattern)
    )
    d.set("architecture.attention.sliding_window", window if uses_window else None, "config")
    if window and not uses_window:
        d.unmapped["sliding_window"] = f"{window} (not applied: every layer is full attention)"
    if "max_window_layers" in d.config and not use_window:
        d.used.add("max_window_layers")


def _qk_norm_terms(d: Draft) -> None:
    """After the hooks: every imported family builds q_norm / k_norm with its own block
    norm class (Qwen3RMSNorm, CohereLayerNorm, Phi's nn.LayerNorm), so a QK norm with
    parameters takes the blocks' type and affine, unless a hook stated its own."""
    from archdb.schema import QKNorm

    qk = d.value("architecture.attention.qk_norm")
    for part in ("type", "affine") if qk and QKNorm(qk).learned else ():
        path = f"architecture.attention.qk_norm_{part}"
        if d.value(path) is None:
            d.set(path, d.value(f"architecture.norm.{part}"), "family")


GELU_TANH = {"gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_accurate", "gelu_tanh"}
_GELU_EXACT = {"gelu", "gelu_python"}
_EPS_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon", "norm_eps")


def _function(d: Draft) -> None:
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
        form = "tanh" if raw in GELU_TANH else "exact" if raw in _GELU_EXACT else None
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


def read_tied(d: Draft) -> None:
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


def imported(
    config: Mapping[str, Any],
    decoder: Mapping[str, Any],
    family: FamilySpec,
    *,
    source_url: str,
    identity: Identity,
    notes: tuple[str, ...] = (),
) -> Imported:
    """The card ``family`` makes of ``decoder`` (the language model's keys of ``config``,
    checked by ``check_shape`` and stripped of other families' keys): its steps, its read
    hook, the function fields; ``notes`` on the architecture (a wrapper, a recognition)."""
    d = Draft(decoder, family)
    for step in family.steps or (
        _sizes,
        read_norm,
        _attention,
        read_position,
        _mlp,
        read_bias,
        read_tied,
    ):
        step(d)
    read_keys(d, family.keys)
    fill_moe_layout(d)
    read_fixed(d, family.fixed)
    if family.read:
        family.read(d)
    read_fixed(d, family.fixed, parts=True)
    _qk_norm_terms(d)
    _function(d)
    for note in notes:
        d.note("architecture", note)
    return _result(d, family.model_type, source_url, identity, config)


def architectures_of(config: Mapping[str, Any]) -> list[str]:
    """The model classes a config's ``architectures`` names (bounded, strings only)."""
    names = config.get("architectures")
    if not isinstance(names, list):
        return []
    return [n for n in names[:16] if isinstance(n, str) and len(n) <= 200]


OUTER_KEYS = ("tie_word_embeddings",)  # a multimodal release's keys its decoder obeys


def decoder_config(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """A multimodal config's language decoder (text_config); the release's own
    tie_word_embeddings, where it states one, is the one its model reads (Gemma 3's,
    Qwen3-VL's and Qwen3.5's ForConditionalGeneration tie by the outer key)."""
    text = config.get("text_config")
    if isinstance(text, Mapping):
        outer = config.get("model_type", "a multimodal model")
        tied = {k: config[k] for k in OUTER_KEYS if k in config}
        return {**text, "model_type": text.get("model_type", outer), **tied}, (
            f"{outer} is multimodal: the card records its language decoder (text_config)."
        )
    return config, None


def _result(
    d: Draft, model_type: str, source_url: str, identity: Identity, original: Mapping[str, Any]
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
    stated = {"model_type", "architectures"} if "model_type" in sources[0] else set()
    ignored = sorted(k for k in d.config if k in IGNORED_KEYS and k not in stated)
    unmapped = dict(d.unmapped)
    for key, value in d.config.items():
        if key in MUST_BE and value in (MUST_BE[key], None):
            ignored.append(key)
        elif key not in d.used and key not in IGNORED_KEYS and key not in unmapped:
            unmapped[key] = value
    if original is not d.config:
        ignored += sorted(k for k in original if k not in ("text_config", *OUTER_KEYS))
    return Imported(card, model_type, from_config, from_family, unmapped, ignored, unknown)


def _declared_family(decoder: Mapping[str, Any], original: Mapping[str, Any]) -> dict[str, str]:
    """The config's own model_type and first model class, as written, for the config
    source: they route the card to its family later (names that do not fit the schema's
    pattern are left out, so a hostile name never reaches the card)."""
    declared: dict[str, str] = {}
    model_type = decoder.get("model_type")
    if isinstance(model_type, str) and re.fullmatch(MODEL_TYPE_PATTERN, model_type):
        declared["model_type"] = model_type
        classes = architectures_of(decoder) or architectures_of(original)
        if classes and re.fullmatch(MODEL_CLASS_PATTERN, classes[0]):
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


def _leaf(d: Draft, path: str) -> bool:
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


# --- a family's keys and fixed choices, read into the draft ----------------------------


def read_keys(d: Draft, keys: Iterable[Key]) -> None:
    """Every key the draft's generic steps do not read, into its field; absent and
    without a default, the field is left to the steps and hooks."""
    for key in keys:
        if not key.read or key.path is None:
            continue
        if key.given is not None and d.value(f"architecture.{key.given}") is None:
            continue
        if key.kind is not None and key.kind not in (
            d.value("architecture.attention.layer_pattern") or ()
        ):
            continue
        value = d.read(key.name, *key.also, default=key.default, required=key.required)
        if value is None:
            continue
        try:
            value = key.into(value) if key.into else value
        except (TypeError, ValueError) as exc:  # a converted key's type is the converter's
            raise HFImportError(f"config.json: {key.name} {shown_briefly(value)}: {exc}") from exc
        d.set(f"architecture.{key.path}", value, d.origin_of(key.name))


def read_fixed(d: Draft, fixed: Iterable[tuple[str, Any]], parts: bool = False) -> None:
    """The card values the family's code fixes: before the read hook those of the parts
    every model has; after it (``parts``) those of an optional part (an MoE, a mixer),
    where the config has the part."""
    for path, value in fixed:
        part = "architecture." + path.rsplit(".", 1)[0] + "."
        if path.startswith(("mlp.moe.", "mixers.")) != parts:
            continue
        if not parts or any(p.startswith(part) for p in d.values):
            d.set(f"architecture.{path}", value, "family")


def fill_moe_layout(d: Draft) -> None:
    """An MoE the keys read: the layout its config does not state is the code's (no shared
    experts, experts from the first layer on every layer)."""
    if not any(p.startswith("architecture.mlp.moe.") for p in d.values):
        return
    if d.value("architecture.mlp.moe.n_experts") is None:
        return
    for name, value in MOE_LAYOUT.items():
        if d.value(f"architecture.mlp.moe.{name}") is None:
            d.set(f"architecture.mlp.moe.{name}", value, "family")


# --- shared by several families ----------------------------------------------------------


def read_bias_flag(d: Draft, key: str, default: bool) -> None:
    """One config flag for the biases of q, k, v, o and the MLP alike."""
    on = d.read(key, default=default)
    for part in ("qkv", "attn_out", "mlp"):
        d.set(f"architecture.bias.{part}", on, d.origin_of(key))


def read_only(d: Draft, key: str, want: Any, why: str) -> None:
    """Reads ``key`` (absent: ``want``), refused unless it is ``want``, the one choice the
    family's code builds; ``why`` says so."""
    value = d.read(key, default=want)
    if value != want:
        raise HFImportError(f"config.json: {key} {shown_briefly(value)}: {why}")


def in_order(*hooks: Callable[[Draft], None]) -> Callable[[Draft], None]:
    """One read hook that runs ``hooks`` one after another (a family's and its parent's)."""

    def read(d: Draft) -> None:
        for hook in hooks:
            hook(d)

    return read
