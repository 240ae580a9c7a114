"""Numerical fidelity: a card imported from a transformers config, built by archdb with
that checkpoint's weights, computes the same logits as transformers.

For each family: a tiny random transformers model (float32, eager attention, sliding
windows shorter than the test sequence) is saved with ``save_pretrained``, its
config.json imported as ``archdb import-hf`` does, the card built at full size with
``weights=`` the directory, and both run on one batch of two sequences. The error is
max |archdb - transformers| / max |transformers| over all logits.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
import torch

import archdb
from archdb import api
from archdb.fidelity import LOGIT_TOLERANCE
from archdb.schema import Card
from archdb_hf.families.registry import LOGIT_EXACT
from archdb_hf.importer import HFImportError, Identity, import_config, read_config
from archdb_hf.weights import WeightsError, load_weights
from tests.conftest import apply_changes, needs_transformers

if TYPE_CHECKING:
    import transformers

pytestmark = needs_transformers

SEQ, BATCH, WINDOW = 24, 2, 8
_DENSE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=128,
    max_position_embeddings=64,
)
GPT_OSS_ROPE = {"rope_type": "yarn", "rope_theta": 100.0, "factor": 4.0, "beta_fast": 32.0,
                "beta_slow": 1.0, "original_max_position_embeddings": 64,
                "truncate": False}  # fmt: skip
# model_type -> its tiny config (values off the defaults where a default would hide a bug)
TINY: dict[str, dict] = {
    "llama": {**_DENSE, "rms_norm_eps": 1e-5, "rope_theta": 500000.0},
    "mistral": {**_DENSE, "sliding_window": WINDOW},
    # LayerNorms, a plain tanh-GELU MLP, every projection biased (use_bias), a window
    "starcoder2": {**_DENSE, "sliding_window": WINDOW, "norm_epsilon": 1e-3},
    "qwen2": {**_DENSE},
    # LayerNorms; q/k/v biases without o's; half of each head rotating (the default: 0.25)
    "stablelm": {**_DENSE, "use_qkv_bias": True, "partial_rotary_factor": 0.5,
                 "layer_norm_eps": 1e-3},
    "qwen3": {**_DENSE, "head_dim": 24},
    "gemma": {**_DENSE, "head_dim": 24},
    "gemma2": {**_DENSE, "head_dim": 16, "sliding_window": WINDOW, "query_pre_attn_scalar": 24,
               "attn_logit_softcapping": 5.0, "final_logit_softcapping": 3.0},
    "gemma3_text": {**_DENSE, "num_hidden_layers": 6, "head_dim": 16, "sliding_window": WINDOW,
                    "query_pre_attn_scalar": 24},
    "olmo2": {**_DENSE},
    "phi3": {**_DENSE, "sliding_window": WINDOW},
    "gpt2": {"n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 128, "n_positions": 64},
    "openai-gpt": {"n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 128, "n_positions": 64},
    # Hy3: a dense layer, then sigmoid-routed experts beside two shared ones, scaled
    "hy_v3": {**_DENSE, "num_experts": 4, "num_experts_per_tok": 2, "num_shared_experts": 2,
              "moe_intermediate_size": 24, "router_scaling_factor": 2.5},
    "glm": {**_DENSE, "head_dim": 16, "rms_norm_eps": 1e-4},
    "xglm": {"d_model": 64, "num_layers": 2, "attention_heads": 4, "ffn_dim": 128,
             "vocab_size": 128, "max_position_embeddings": 64},
    "ctrl": {"n_embd": 64, "n_layer": 2, "n_head": 4, "dff": 128, "vocab_size": 128,
             "n_positions": 64},
    "llama4_text": {"hidden_size": 64, "intermediate_size": 24, "intermediate_size_mlp": 96,
                    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
                    "head_dim": 16, "vocab_size": 128, "num_local_experts": 4,
                    "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
                    "attention_chunk_size": 8, "floor_scale": 4, "rms_norm_eps": 1e-4},
    "gpt_neox": {**_DENSE, "num_key_value_heads": None},
    "mixtral": {**_DENSE, "num_local_experts": 4, "num_experts_per_tok": 2,
                "sliding_window": WINDOW},
    # MiMo-V2-Flash: full layers with their own (fewer) KV heads and no sinks, sinks on the
    # sliding layers (a window that binds), value heads narrower than q/k, partial RoPE at
    # two bases, the value factor, a dense first layer then V3's router
    "mimo_v2_flash": {**_DENSE, "num_hidden_layers": 4, "head_dim": 24, "v_head_dim": 16,
                      "sliding_window": WINDOW, "attention_value_scale": 0.6,
                      "layer_types": ["full_attention", "sliding_attention"] * 2,
                      "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"],
                      "n_routed_experts": 8, "num_experts_per_tok": 3,
                      "moe_intermediate_size": 32, "n_group": 4, "topk_group": 2,
                      "routed_scaling_factor": 1.7,
                      "rope_parameters": {
                          "full_attention": {"rope_type": "default", "rope_theta": 50000.0,
                                             "partial_rotary_factor": 0.334},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0,
                                                "partial_rotary_factor": 0.334}}},
    # Qwen2-MoE: q/k/v biases, top-k shares of a softmax over all experts (unnormalized),
    # the gated shared expert
    "qwen2_moe": {**_DENSE, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
                  "num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": False},
    "qwen3_moe": {**_DENSE, "moe_intermediate_size": 32, "num_experts": 4,
                  "num_experts_per_tok": 2, "norm_topk_prob": False},
    "olmo": {**_DENSE},
    # full-width QK norms over GQA's narrower keys; top-k shares of a softmax over all experts
    "olmoe": {**_DENSE, "intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2},
    "cohere": {**_DENSE, "logit_scale": 0.25, "use_qk_norm": True},
    "phi": {**_DENSE, "num_key_value_heads": None, "qk_layernorm": True},
    # multi-query attention (StarCoder's); the erf GELU
    "gpt_bigcode": {"n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 128, "n_positions": 64,
                    "activation_function": "gelu"},
    # fused per-head q/k/v rows, per-head QK LayerNorms, half the head dims rotating
    "persimmon": {**_DENSE, "num_key_value_heads": None, "layer_norm_eps": 1e-3},
    # ALiBi over 6 heads (not a power of two: the paper's interleaved slopes), the
    # embeddings' LayerNorm, fused per-head q/k/v rows
    "bloom": {"hidden_size": 48, "n_layer": 2, "n_head": 6, "vocab_size": 128,
              "layer_norm_epsilon": 1e-3},
    # scores left unscaled; a local layer whose window binds, between global ones
    "gpt_neo": {"hidden_size": 64, "num_layers": 3, "num_heads": 4, "vocab_size": 128,
                "max_position_embeddings": 64, "window_size": WINDOW,
                "attention_types": [[["global", "local", "global"], 1]]},
    # ALiBi, no biases, LayerNorms without bias; q, k and v clamped; a scale of its own
    "mpt": {"d_model": 64, "n_heads": 4, "n_layers": 2, "vocab_size": 128, "max_seq_len": 64,
            "attn_config": {"clip_qkv": 0.5, "softmax_scale": 0.2}},
    # every layer's experts (top 2 of 4, renormalized), GQA through a clamped fused Wqkv,
    # the RoPE base where the release states it and where transformers reads it
    "dbrx": {"d_model": 64, "n_heads": 4, "n_layers": 2, "vocab_size": 128, "max_seq_len": 64,
             "attn_config": {"kv_n_heads": 2, "clip_qkv": 0.5, "rope_theta": 500.0},
             "ffn_config": {"ffn_hidden_size": 48, "moe_num_experts": 4, "moe_top_k": 2},
             "rope_parameters": {"rope_type": "default", "rope_theta": 500.0}},
    "gptj": {"n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 128, "n_positions": 64,
             "rotary_dim": 8},
    "falcon": {**_DENSE, "num_key_value_heads": None, "intermediate_size": None,
               "ffn_hidden_size": 128},
    "opt": {"hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
            "vocab_size": 128, "max_position_embeddings": 64, "word_embed_proj_dim": 64},
    "nemotron": {**_DENSE},
    "cohere2": {**_DENSE, "sliding_window": WINDOW, "num_hidden_layers": 4, "logit_scale": 0.25},
    "nemotron_h": {**_DENSE, "num_hidden_layers": None, "hybrid_override_pattern": "M-M*-",
                   "head_dim": 16, "mamba_num_heads": 8, "mamba_head_dim": 12, "n_groups": 2,
                   "ssm_state_size": 16, "use_conv_bias": True},
    # short-conv layers around attention (conv biases on, auto-adjusted MLP width 2/3 x 192
    # rounded up to 32); LFM2's norm eps 1e-5
    "lfm2": {**_DENSE, "num_hidden_layers": 4, "intermediate_size": 192, "block_multiple_of": 32,
             "layer_types": ["conv", "full_attention", "conv", "conv"], "conv_bias": True,
             "conv_L_cache": 4},
    # LFM2-MoE: a dense first layer, then experts under a sigmoid router whose expert bias
    # only chooses, renormalized and scaled
    "lfm2_moe": {**_DENSE, "num_hidden_layers": 4, "num_dense_layers": 1,
                 "layer_types": ["conv", "full_attention", "conv", "conv"],
                 "num_experts": 8, "num_experts_per_tok": 3, "moe_intermediate_size": 32,
                 "use_expert_bias": True, "routed_scaling_factor": 1.7, "conv_L_cache": 4},
    # a clamp low enough to cut many gate and up values; YaRN with gpt-oss's exact
    # (untruncated) band; weights 2.5x the default init, so that band shows in the logits
    "gpt_oss": {**_DENSE, "intermediate_size": 32, "head_dim": 16, "num_local_experts": 4,
                "num_experts_per_tok": 2, "sliding_window": WINDOW, "swiglu_limit": 0.1,
                "swiglu_alpha": 1.3, "rope_parameters": GPT_OSS_ROPE, "initializer_range": 0.05},
    # xIELU's learned scalars start off their initial values (like the norms, by _tiny)
    "apertus": {**_DENSE, "head_dim": 24, "rope_parameters": {
        "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 16}},
    # global layers with their own KV heads, head width, proportional RoPE and values from
    # keys; a value norm; the layer scalar; (moe) experts beside a dense MLP
    "gemma4_text": {**_DENSE, "num_hidden_layers": 6, "head_dim": 16, "global_head_dim": 32,
                    "num_global_key_value_heads": 1, "attention_k_eq_v": True,
                    "sliding_window": WINDOW, "hidden_size_per_layer_input": 0,
                    "final_logit_softcapping": 3.0, "enable_moe_block": True,
                    "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 32},
    # Gemma 3n: AltUp's 4 streams, LAuReL, gaussian top-k on the first 3 layers' gates,
    # per-layer embeddings on a table shorter than the vocabulary (ids beyond it read row 0),
    # the last 5 of 10 layers reusing KV
    "gemma3n_text": {**_DENSE, "num_hidden_layers": 10, "head_dim": 16, "sliding_window": WINDOW,
                     "hidden_size_per_layer_input": 16, "vocab_size_per_layer_input": 100,
                     "num_kv_shared_layers": 5, "laurel_rank": 8,
                     "activation_sparsity_pattern": [0.95] * 3 + [0.0] * 7,
                     "final_logit_softcapping": 3.0},
    # muP factors away from 1 (logits_scaling not a power of two: divided vs multiplied)
    "granite": {**_DENSE, "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
                "attention_multiplier": 0.03, "logits_scaling": 6.0, "mlp_bias": True},
    "granitemoe": {**_DENSE, "intermediate_size": 32, "num_local_experts": 4,
                   "num_experts_per_tok": 2, "embedding_multiplier": 12.0,
                   "residual_multiplier": 0.22, "attention_multiplier": 0.03,
                   "logits_scaling": 6.0, "attention_bias": True},
    # DeepSeekMoE: a dense first layer, then routed and shared experts; each router's
    # choices off their defaults (groups that bind, a routed scale, V3's correction bias)
    "deepseek_v3": {**_DENSE, "num_hidden_layers": 3, "num_key_value_heads": 4,
                    "first_k_dense_replace": 1, "n_routed_experts": 8, "num_experts_per_tok": 3,
                    "moe_intermediate_size": 32, "n_group": 4, "topk_group": 2,
                    "routed_scaling_factor": 1.7, "kv_lora_rank": 16, "q_lora_rank": 24,
                    "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16},
    "deepseek_v2": {**_DENSE, "num_hidden_layers": 3, "num_key_value_heads": 4,
                    "first_k_dense_replace": 1, "n_routed_experts": 8, "num_experts_per_tok": 3,
                    "moe_intermediate_size": 32, "topk_method": "group_limited_greedy",
                    "n_group": 4, "topk_group": 2, "routed_scaling_factor": 3.0,
                    "kv_lora_rank": 16, "q_lora_rank": None, "qk_rope_head_dim": 8,
                    "qk_nope_head_dim": 16, "v_head_dim": 16},
    "glm4_moe": {**_DENSE, "num_hidden_layers": 3, "head_dim": 16, "partial_rotary_factor": 0.5,
                 "use_qk_norm": True, "attention_bias": True, "first_k_dense_replace": 1,
                 "n_routed_experts": 8, "num_experts_per_tok": 3, "moe_intermediate_size": 32,
                 "n_shared_experts": 1, "n_group": 4, "topk_group": 2,
                 "routed_scaling_factor": 1.7, "norm_topk_prob": True},
    # Sarvam-30B's and -105B's configs on GLM-4.5's and DeepSeek-V3's code: their classes'
    # defaults (QK norms on, every head dim rotating, one group, a 2.5 routed scale)
    "sarvam_moe": {**_DENSE, "num_hidden_layers": 3, "head_dim": 16, "n_routed_experts": 8,
                   "num_experts_per_tok": 3, "moe_intermediate_size": 32, "n_shared_experts": 1},
    "sarvam_mla": {**_DENSE, "num_hidden_layers": 3, "num_key_value_heads": 4,
                   "n_routed_experts": 8, "num_experts_per_tok": 3, "moe_intermediate_size": 32,
                   "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
                   "v_head_dim": 16},
    # DSA: an indexer of 8 heads keeps 8 of the 24 keys, on V3's MLA and V3's router
    # (groups that bind, a routed scale, a random correction bias)
    "deepseek_v32": {**_DENSE, "num_hidden_layers": 3, "num_key_value_heads": 4,
                     "first_k_dense_replace": 1, "n_routed_experts": 8, "num_experts_per_tok": 3,
                     "moe_intermediate_size": 32, "n_group": 4, "topk_group": 2,
                     "routed_scaling_factor": 1.7, "kv_lora_rank": 16, "q_lora_rank": 24,
                     "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16,
                     "index_n_heads": 8, "index_head_dim": 16, "index_topk": 8},
    # GLM-5: DSA with the indexer's RoPE on interleaved pairs, V3's router (groups that
    # bind, a routed scale, a random correction bias); block norms at 1e-3 while
    # transformers' MLA latent norms keep 1e-6 (attention.latent.norm_eps)
    "glm_moe_dsa": {**_DENSE, "num_hidden_layers": 3, "num_key_value_heads": 4,
                    "first_k_dense_replace": 1, "rms_norm_eps": 1e-3,
                    "n_routed_experts": 8, "num_experts_per_tok": 3, "moe_intermediate_size": 32,
                    "n_group": 4, "topk_group": 2, "routed_scaling_factor": 1.7,
                    "kv_lora_rank": 16, "q_lora_rank": 24,
                    "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16,
                    "index_n_heads": 8, "index_head_dim": 16, "index_topk": 8},
    # attention beside Mamba-2 (Falcon-H1), every multiplier off 1; the chunked scan's
    # chunk (8) shorter than the sequence
    "falcon_h1": {**_DENSE, "num_hidden_layers": 3, "mamba_d_ssm": 128, "mamba_n_heads": 8,
                  "mamba_n_groups": 2, "mamba_d_state": 16, "mamba_chunk_size": 8,
                  "embedding_multiplier": 3.0, "lm_head_multiplier": 0.3,
                  "key_multiplier": 0.6, "attention_in_multiplier": 1.3,
                  "attention_out_multiplier": 0.7, "ssm_in_multiplier": 1.2,
                  "ssm_out_multiplier": 0.8, "ssm_multipliers": [0.5, 1.5, 0.75, 1.25, 0.9],
                  "mlp_multipliers": [0.8, 1.2]},
    # Granite 4.0-H: Mamba-2 and attention layers without positions, experts beside the
    # shared MLP, Granite's four factors
    "granitemoehybrid": {**_DENSE, "num_hidden_layers": 3, "intermediate_size": 32,
                         "num_local_experts": 4, "num_experts_per_tok": 2,
                         "shared_intermediate_size": 96, "mamba_n_heads": 8,
                         "mamba_n_groups": 2, "mamba_d_state": 16, "mamba_chunk_size": 8,
                         "layer_types": ["linear_attention", "full_attention",
                                         "linear_attention"],
                         "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
                         "attention_multiplier": 0.03, "logits_scaling": 6.0},
    # Mamba-1: dt rank and epsilons off their defaults; untied head (Mamba: tied by default)
    "mamba": {"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 128, "state_size": 8,
              "time_step_rank": 6, "layer_norm_epsilon": 1e-4, "use_bias": True,
              "tie_word_embeddings": False},
    "falcon_mamba": {"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 128,
                     "state_size": 8, "mixer_rms_eps": 1e-3, "use_conv_bias": False},
    # Jamba: one attention layer (no positions) in 4, experts every other layer, unnormalized
    "jamba": {**_DENSE, "num_hidden_layers": 4, "attn_layer_period": 4, "attn_layer_offset": 2,
              "num_experts": 4, "num_experts_per_tok": 2, "mamba_d_state": 8,
              "mamba_dt_rank": 6, "rms_norm_eps": 1e-4},
    # NoPE on every other layer (the default interval is 4), a theta off the default
    "smollm3": {**_DENSE, "num_hidden_layers": 4, "no_rope_layer_interval": 2,
                "rope_parameters": {"rope_type": "default", "rope_theta": 5000.0}},
    # a sliding window that binds; YaRN on the full layers only, the sliding layers at
    # their own default-type RoPE (a last full layer)
    "olmo3": {**_DENSE, "num_hidden_layers": 3, "sliding_window": WINDOW,
              "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
              "rope_parameters": {
                  "full_attention": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                     "original_max_position_embeddings": 16},
                  "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}},
    # sigmoid scores, a (randomized) correction bias, full QK norm, RoPE on half of head_dim
    # given as the legacy rotary_dim
    "minimax_m2": {**_DENSE, "intermediate_size": 32, "head_dim": 16, "num_local_experts": 8,
                   "num_experts_per_tok": 3, "rotary_dim": 8},
    # q/k/v biases without the o bias (the default), and an MLP bias
    "seed_oss": {**_DENSE, "head_dim": 24, "mlp_bias": True},
    # post-branch norms, per-head QK norm; sliding layers with RoPE, full layers without
    "exaone4": {**_DENSE, "num_hidden_layers": 4, "head_dim": 24, "sliding_window": WINDOW,
                "sliding_window_pattern": 2},
    # biases everywhere but the head; RoPE on interleaved pairs
    "ernie4_5": {**_DENSE, "head_dim": 24, "use_bias": True},
    # a dense first layer, then experts with shared experts; the correction bias (a frozen
    # parameter in transformers) randomized
    "ernie4_5_moe": {**_DENSE, "num_hidden_layers": 3, "head_dim": 16,
                     "moe_intermediate_size": 32, "moe_num_experts": 8, "moe_k": 3,
                     "moe_num_shared_experts": 1},
    # Mamba-2: two B, C groups (the gated norm is per group), biased projections, chunks of
    # 8 in transformers' torch scan (no mamba_ssm / causal-conv1d kernels here)
    "mamba2": {"hidden_size": 64, "num_hidden_layers": 2, "num_heads": 8, "head_dim": 16,
               "expand": 2, "state_size": 16, "n_groups": 2, "conv_kernel": 4, "vocab_size": 128,
               "chunk_size": 8, "use_bias": True, "layer_norm_epsilon": 1e-4},
    "bamba": {**_DENSE, "num_hidden_layers": 4, "attn_layer_indices": [1], "mamba_n_heads": 8,
              "mamba_d_head": 16, "mamba_expand": 2, "mamba_d_state": 16, "mamba_n_groups": 2,
              "mamba_d_conv": 4, "mamba_chunk_size": 8, "rms_norm_eps": 1e-4},
    # Gated DeltaNet with 2 key heads of 2 value heads each (in_proj_qkvz grouped per key
    # head), gated attention every 2nd layer, a gated shared expert; transformers' torch
    # delta rule works in chunks of 64: the sequence is longer (SEQ_FOR)
    "qwen3_next": {**_DENSE, "num_hidden_layers": 4, "head_dim": 16, "max_position_embeddings": 128,
                   "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
                   "num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": True,
                   "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                   "linear_key_head_dim": 16, "linear_value_head_dim": 8,
                   "linear_conv_kernel_dim": 4, "full_attention_interval": 2},
    # Qwen3.5: the text decoders (what a qwen3_5 / qwen3_5_moe config's text_config holds);
    # in_proj_qkv, in_proj_z, in_proj_b, in_proj_a separate; default M-RoPE sections
    "qwen3_5_text": {**_DENSE, "num_hidden_layers": 4, "head_dim": 16,
                     "max_position_embeddings": 128, "rms_norm_eps": 1e-4,
                     "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                     "linear_key_head_dim": 16, "linear_value_head_dim": 8,
                     "linear_conv_kernel_dim": 4, "full_attention_interval": 2},
    "qwen3_5_moe_text": {**_DENSE, "intermediate_size": None, "num_hidden_layers": 4,
                         "head_dim": 16, "max_position_embeddings": 128,
                         "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
                         "num_experts": 4, "num_experts_per_tok": 2,
                         "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                         "linear_key_head_dim": 16, "linear_value_head_dim": 8,
                         "linear_conv_kernel_dim": 4, "full_attention_interval": 2},
    # Griffin: RG-LRU, RG-LRU, local MQA attention (window 8 of 24 tokens), a recurrence
    # wider than d_model; d_model 80, whose sqrt(80) the bfloat16 normalizer rounds
    "recurrent_gemma": {**_DENSE, "hidden_size": 80, "intermediate_size": 192,
                        "num_hidden_layers": 3, "num_key_value_heads": 1, "lru_width": 96,
                        "attention_window_size": WINDOW, "conv1d_width": 4,
                        "logits_soft_cap": 5.0, "rms_norm_eps": 1e-4,
                        "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0,
                                            "partial_rotary_factor": 0.5}},
}  # fmt: skip
# Kimi Linear: KDA (a decay per key channel, low-rank decay and output gate) and MLA without
# positions, a query latent; its norms at 1e-4, the latent norms at transformers' fixed
# 1e-6; a dense first layer, then V3's router (groups that bind, a routed scale, a random
# correction bias)
# DeepSeek-V4: a local, a CSA (an entry per 4 tokens, the indexer keeps 3), an HCA (per 8)
# and another CSA layer over 24 tokens and a window of 8; mHC streams; the first layer's
# experts chosen by a random token table; the compressed layers' YaRN past 16 tokens
TINY["deepseek_v4"] = {
    **{k: v for k, v in _DENSE.items() if k != "intermediate_size"},
    "num_hidden_layers": 4, "num_key_value_heads": 1, "head_dim": 32, "q_lora_rank": 24,
    "partial_rotary_factor": 0.25, "o_groups": 2, "o_lora_rank": 16, "sliding_window": WINDOW,
    "layer_types": ["sliding_attention", "compressed_sparse_attention",
                    "heavily_compressed_attention", "compressed_sparse_attention"],
    "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
    "index_n_heads": 2, "index_head_dim": 16, "index_topk": 3, "moe_intermediate_size": 32,
    "n_routed_experts": 8, "num_experts_per_tok": 2, "routed_scaling_factor": 1.7,
    "mlp_layer_types": ["hash_moe", "moe", "moe", "moe"], "rms_norm_eps": 1e-5,
    "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "beta_fast": 32, "beta_slow": 1,
                        "original_max_position_embeddings": 16},
}  # fmt: skip
TINY["kimi_linear"] = {
    **_DENSE, "num_hidden_layers": 5, "num_key_value_heads": 4, "max_position_embeddings": 128,
    "layer_types": ["linear_attention", "linear_attention", "full_attention",
                    "linear_attention", "full_attention"],
    "mlp_layer_types": ["dense"] + ["sparse"] * 4, "intermediate_size": 96,
    "moe_intermediate_size": 32, "num_local_experts": 8, "num_experts_per_tok": 3,
    "n_group": 4, "topk_group": 2, "routed_scaling_factor": 1.7, "rms_norm_eps": 1e-4,
    "kv_lora_rank": 16, "q_lora_rank": 24, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
    "v_head_dim": 16, "linear_num_heads": 4, "linear_head_dim": 16, "linear_conv_kernel_dim": 3,
}  # fmt: skip
TINY |= {
    # MiniMax-01: lightning layers around softmax attention (blocks of 8 tokens, shorter
    # than the sequence), experts on every layer, every alpha and beta factor off 1
    "minimax": {**_DENSE, "num_hidden_layers": 4, "head_dim": 16, "intermediate_size": 32,
                "num_local_experts": 4, "num_experts_per_tok": 2, "block_size": 8,
                "layer_types": ["linear_attention", "linear_attention", "full_attention",
                                "linear_attention"],
                "full_attn_alpha_factor": 1.3, "full_attn_beta_factor": 0.7,
                "linear_attn_alpha_factor": 1.2, "linear_attn_beta_factor": 0.8,
                "mlp_alpha_factor": 1.5, "mlp_beta_factor": 0.6},
}  # fmt: skip
TINY |= {
    # Hunyuan: the QK norm after RoPE, dynamic scaling with an alpha (a fixed NTK base),
    # attention biases; (moe) softmax top-3 of 8 renormalized beside the shared MLP
    "hunyuan_v1_dense": {**_DENSE, "head_dim": 16, "attention_bias": True, "rope_parameters": {
        "rope_type": "dynamic", "rope_theta": 10000.0, "factor": 1.0, "alpha": 50.0}},
    "hunyuan_v1_moe": {**_DENSE, "head_dim": 16, "intermediate_size": 32, "num_experts": 8,
                       "moe_topk": 3, "rope_parameters": {
                           "rope_type": "dynamic", "rope_theta": 10000.0, "factor": 1.0,
                           "alpha": 50.0}},
}  # fmt: skip
# Zamba2: two shared blocks run A, B, A before layers 1, 3, 5, with q/k/v and gate/up
# adapters and RoPE; two B, C groups; a dt floor (time_step_min) high enough to clamp
TINY["zamba2"] = {
    **_DENSE, "num_key_value_heads": None, "num_hidden_layers": 6,
    "layers_block_type": ["mamba", "hybrid"] * 3, "num_mem_blocks": 2,
    "use_shared_attention_adapter": True, "adapter_rank": 8, "use_mem_rope": True,
    "rope_parameters": {"rope_type": "default", "rope_theta": 500.0}, "n_mamba_heads": 8,
    "mamba_ngroups": 2, "mamba_d_state": 16, "chunk_size": 8, "time_step_min": 0.08,
    "initializer_range": 0.1,
}  # fmt: skip
# LongCat-Flash: two shortcut-connected MoE layers (four MLA sublayers, scaled latents,
# interleaved RoPE), softmax over 6 routed and 4 zero-computation experts with a random
# correction bias, top-3 unnormalized, times 6
TINY["longcat_flash"] = {
    **_DENSE, "num_hidden_layers": None, "num_layers": 2, "num_key_value_heads": None,
    "ffn_hidden_size": 96, "expert_ffn_hidden_size": 48, "n_routed_experts": 6,
    "zero_expert_num": 4, "moe_topk": 3, "routed_scaling_factor": 6.0, "kv_lora_rank": 16,
    "q_lora_rank": 24, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16,
    "head_dim": 8, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
}  # fmt: skip
# encoder-only families: their masked-LM model, one segment; RoBERTa counts positions from
# its padding row, so its tokens leave the padding id (1) out
TINY["bert"] = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 96,
    "vocab_size": 128,
    "max_position_embeddings": 64,
    "type_vocab_size": 3,
    "layer_norm_eps": 1e-6,
    "hidden_act": "gelu",
}
TINY["roberta"] = {
    **TINY["bert"],
    "max_position_embeddings": 66,
    "type_vocab_size": 1,
    "pad_token_id": 1,
    "layer_norm_eps": 1e-5,
}
# ModernBERT: every other layer global, two-sided windows of +-4 tokens (local_attention 8)
# in a 24-token sequence, two RoPE bases, biases and norm biases on (its defaults are off)
TINY["modernbert"] = {
    "hidden_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "intermediate_size": 96,
    "vocab_size": 128,
    "max_position_embeddings": 64,
    "layer_types": ["full_attention", "sliding_attention"] * 2,
    "local_attention": WINDOW,
    "norm_bias": True,
    "attention_bias": True,
    "mlp_bias": True,
    "classifier_bias": True,
    "norm_eps": 1e-6,
    "rope_parameters": {
        "full_attention": {"rope_type": "default", "rope_theta": 5000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 500.0},
    },
}
# RWKV-4: time mixing narrower than the stream would not run in transformers, so equal;
# a channel-mixing width off 4 x d_model
TINY["rwkv"] = {
    "hidden_size": 64,
    "num_hidden_layers": 3,
    "vocab_size": 128,
    "attention_hidden_size": 64,
    "intermediate_size": 96,
    "context_length": 64,
    "layer_norm_epsilon": 1e-6,
}
# xLSTM: q/k narrower than v, a feed-forward width off the 7B's factor, norm and read-out
# epsilons off their defaults, both soft caps binding; widths multiples of 64, as
# transformers' cache sizes them
TINY["xlstm"] = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "vocab_size": 128,
    "num_heads": 4,
    "qk_dim_factor": 0.5,
    "v_dim_factor": 1.0,
    "ffn_proj_factor": 1.3,
    "norm_eps": 1e-5,
    "eps": 1e-4,
    "gate_soft_cap": 2.0,
    "output_logit_soft_cap": 1.5,
}
# BitNet: Llama with sub-norms before o_proj and down_proj and relu(gate)^2 * up; biased
# attention and an epsilon off the default
TINY["bitnet"] = {**_DENSE, "attention_bias": True, "rms_norm_eps": 1e-4}
MASKED_LM = ("bert", "roberta", "modernbert")
FIRST_TOKEN = {"roberta": 2}  # the smallest token id a test sequence uses
# longer than the 64-token chunks of transformers' torch delta rule
# (xLSTM: transformers runs 64-token chunks in the parallel form, the rest step by step)
SEQ_FOR = dict.fromkeys(
    ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "kimi_linear", "xlstm"), 80
)
IDENTITY = Identity("tiny-1", "Tiny 1", "tiny", "Tests", "2024-01-01")


def _nudge_vectors(model: torch.nn.Module) -> None:
    """Norms start at 1 (or 0), biases at 0: give every vector values a wrong form would
    show."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)


def _tiny(model_type: str, directory) -> transformers.PreTrainedModel:
    import transformers

    torch.manual_seed(0)
    kwargs = {k: v for k, v in TINY[model_type].items() if v is not None}
    kwargs = {"bos_token_id": None, "eos_token_id": None, "pad_token_id": None} | kwargs
    config = transformers.AutoConfig.for_model(model_type, **kwargs)
    config._attn_implementation = "eager"
    auto = transformers.AutoModelForMaskedLM if model_type in MASKED_LM else None
    auto = auto or transformers.AutoModelForCausalLM
    model = auto.from_config(config, attn_implementation="eager")
    _nudge_vectors(model)
    with torch.no_grad():
        # DeepSeek-V3's correction bias (ERNIE 4.5's: a frozen parameter) starts at 0, as
        # do the RG-LRU's (2-D) gate biases
        for name, b in [*model.named_buffers(), *model.named_parameters()]:
            if name.endswith(("e_score_correction_bias", "expert_bias", "gate_bias")):
                b.copy_(torch.randn_like(b) * 0.1)
            elif name.endswith("position_bias"):  # DeepSeek-V4's window slots: zeros
                b.copy_(torch.randn_like(b))
            elif name.endswith("tid2eid"):  # ... and its hash layers' token -> experts table
                b.copy_(torch.randint(0, config.num_local_experts, b.shape))
    model.save_pretrained(directory)
    return model.eval()


def _card(directory) -> Card:
    config = read_config(directory / "config.json")
    imported = import_config(
        config, source_url="https://example.org/config.json", identity=IDENTITY
    )
    return Card.model_validate(imported.card)


def relative_error(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return float((ours - reference).abs().max() / reference.abs().max())


def _logit_error(card: Card, directory, reference, seq: int = SEQ, low: int = 0) -> float:
    """The relative logit error of the card's model, its weights loaded from
    ``directory``, against transformers' ``reference`` on BATCH sequences of ``seq``
    tokens (ids from ``low``)."""
    model = archdb.build(card, "full", weights=directory).eval()
    tokens = torch.randint(low, 128, (BATCH, seq), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return relative_error(model(tokens), reference(tokens).logits)


def _error_with_changes(model_type: str, directory, changes: dict, seq: int = SEQ) -> float:
    """The relative logit error of the tiny checkpoint's card with architecture paths
    changed, on sequences of ``seq`` tokens: how far a wrong value of a function field
    moves the outputs."""
    reference = _tiny(model_type, directory)
    data = _card(directory).model_dump(mode="json")
    apply_changes(data["architecture"], changes)
    return _logit_error(Card.model_validate(data), directory, reference, seq)


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_logits_equal_transformers(model_type, tmp_path):
    reference = _tiny(model_type, tmp_path)
    card = _card(tmp_path)
    model = archdb.build(card, "full", weights=tmp_path).eval()
    assert model.archdb_loaded.model_type == model_type
    seq, low = SEQ_FOR.get(model_type, SEQ), FIRST_TOKEN.get(model_type, 0)
    tokens = torch.randint(low, 128, (BATCH, seq), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(tokens).logits
        got = model(tokens)
    assert got.shape == expected.shape == (BATCH, seq, 128)
    assert relative_error(got, expected) < LOGIT_TOLERANCE


# Gemma 4 E2B/E4B's layout: per-layer embeddings; the last 6 of 12 layers attend with the
# keys and values of the last sliding and the last full layer before them, through a
# double-wide MLP; no experts, the global layers' values from their own projection
GEMMA4_ON_DEVICE = {
    "num_hidden_layers": 12, "hidden_size_per_layer_input": 16, "vocab_size_per_layer_input": 128,
    "num_kv_shared_layers": 6, "use_double_wide_mlp": True, "enable_moe_block": False,
    "attention_k_eq_v": False, "num_global_key_value_heads": None,
}  # fmt: skip


# --- encoder-decoders: model(input_ids, decoder_input_ids) ---------------------------------
# The card (a catalogue card made tiny) is the start, transformers' config comes from the
# card -> config converter (archdb_hf.reference.convert): transformers 5 ties every T5
# head, so a T5 1.1 config would not load as its release does.
_T5_TINY = {"d_model": 64, "n_layers": 3, "n_encoder_layers": 2, "vocab_size": 128,
            "attention.n_heads": 4, "attention.n_kv_heads": 4,
            "attention.head_dim": 24,  # d_kv off d_model / n_heads
            "mlp.d_ff": 128, "norm.eps": 1e-2, "attention.scale": 1.0}  # fmt: skip
# variant -> (model_type, the catalogue card made tiny, its changes): T5 1.0 (ReLU, the
# tied head read at d_model ** -0.5) and T5 1.1 (gated GELU, an untied head, no rescale)
ENCODER_DECODER_TINY: dict[str, tuple[str, str, dict]] = {
    "t5": ("t5", "t5-small", {**_T5_TINY, "logit_scale": 64**-0.5}),
    "t5-v1.1": ("t5", "t5-v1.1-small", {**_T5_TINY, "logit_scale": 1.0}),
    # mT5 as transformers builds it: T5 1.1's layers, a tied head never rescaled
    "mt5": ("mt5", "mt5-small", {**_T5_TINY, "tied_embeddings": True, "logit_scale": 1.0}),
    # experts in layer 1 of each stack (4 layers each); no token past an expert's capacity
    "switch": (
        "switch_transformers",
        "switch-base-8",
        {
            **_T5_TINY,
            "n_layers": 4,
            "n_encoder_layers": 4,
            "mlp.moe.dense_d_ff": 128,
            "logit_scale": 64**-0.5,
        },
    ),
}
SOURCE_SEQ, TARGET_SEQ = 30, 20  # distances past T5's 8 exact buckets (16 per direction)


def _tiny_encoder_decoder(
    variant: str, directory, **config: object
) -> tuple[Card, transformers.PreTrainedModel]:
    """The tiny card and transformers' model of it (its family's model class), saved
    (float32, eager), with ``config`` keys changed; an untied card's checkpoint carries
    lm_head.weight as T5 1.1's releases do."""
    import transformers
    from safetensors.torch import load_file, save_file

    from archdb_hf.families.registry import SPECS
    from archdb_hf.reference import convert

    model_type, card_id, changes = ENCODER_DECODER_TINY[variant]
    spec = SPECS[model_type]
    data = api.card(card_id).model_dump(mode="json")
    card = Card.model_validate(
        data | {"architecture": apply_changes(data["architecture"], changes)}
    )
    arch = card.architecture
    tied = arch.model_copy(update={"tied_embeddings": True})  # transformers 5 ties every T5
    kwargs = convert(tied, model_type) | {
        "layer_norm_epsilon": arch.norm.eps,
        "tie_word_embeddings": arch.tied_embeddings,  # False: no d_model ** -0.5 rescale
        "decoder_start_token_id": 0, "pad_token_id": 0, "eos_token_id": 1,
    } | config  # fmt: skip
    torch.manual_seed(0)
    config = getattr(transformers, spec.config_class)(**kwargs)
    config._attn_implementation = "eager"
    reference = getattr(transformers, spec.model_class)(config).eval()
    _nudge_vectors(reference)
    reference.save_pretrained(directory)
    if not arch.tied_embeddings:
        tensors = load_file(directory / "model.safetensors")
        tensors["lm_head.weight"] = tensors["shared.weight"].clone()
        save_file(tensors, directory / "model.safetensors", metadata={"format": "pt"})
    return card, reference


def encoder_decoder_error(variant: str, directory, **config: object) -> float:
    card, reference = _tiny_encoder_decoder(variant, directory, **config)
    model = archdb.build(card, "full", weights=directory).eval()
    assert model.archdb_loaded.model_type == ENCODER_DECODER_TINY[variant][0]
    generator = torch.Generator().manual_seed(1)
    source = torch.randint(0, 128, (BATCH, SOURCE_SEQ), generator=generator)
    target = torch.randint(0, 128, (BATCH, TARGET_SEQ), generator=generator)
    with torch.no_grad():
        expected = reference(input_ids=source, decoder_input_ids=target).logits
        got = model(source, target)
    assert got.shape == expected.shape == (BATCH, TARGET_SEQ, 128)
    return relative_error(got, expected)


@pytest.mark.parametrize("variant", sorted(ENCODER_DECODER_TINY))
@pytest.mark.usefixtures("warm_shipped_cache")
def test_encoder_decoder_logits_equal_transformers(variant, tmp_path):
    assert encoder_decoder_error(variant, tmp_path) < LOGIT_TOLERANCE


@pytest.mark.usefixtures("warm_shipped_cache")
def test_switch_logits_equal_transformers_until_an_expert_is_full(tmp_path):
    """Below every expert's capacity archdb's Switch build is transformers' function (the
    router's softmax share of the top expert, experts in layer 1 of each stack). With 3
    tokens per expert, transformers drops the rest, which no card field holds: the reason
    the Switch cards stay count-exact."""
    assert SOURCE_SEQ < 64  # the released configs' expert_capacity
    assert encoder_decoder_error("switch", tmp_path) < LOGIT_TOLERANCE
    assert encoder_decoder_error("switch", tmp_path / "full", expert_capacity=3) > 1e-3


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("attention.scale", None),  # 1/sqrt(d_kv): T5 folds it into the initialization
        ("logit_scale", 1.0),  # T5 1.0's tied head reads the decoder at d_model ** -0.5
        ("norm.eps", 1e-6),
    ],
)
@pytest.mark.usefixtures("warm_shipped_cache")
def test_each_t5_function_field_changes_the_logits(path, value, tmp_path):
    card, reference = _tiny_encoder_decoder("t5", tmp_path)
    data = card.model_dump(mode="json")
    apply_changes(data["architecture"], {path: value})
    model = archdb.build(Card.model_validate(data), "full", weights=tmp_path).eval()
    tokens = torch.randint(0, 128, (BATCH, SOURCE_SEQ), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(input_ids=tokens, decoder_input_ids=tokens).logits
        assert relative_error(model(tokens, tokens), expected) > 100 * LOGIT_TOLERANCE


@pytest.mark.usefixtures("warm_shipped_cache")
def test_a_t5_checkpoint_loads_by_its_names(tmp_path):
    """Each stack's relative-bias table comes from its first block; a gated checkpoint
    (wi_0, wi_1) does not fit a ReLU card: its wi_0 is named as having no place."""
    from safetensors.torch import load_file

    card, _ = _tiny_encoder_decoder("t5", tmp_path)
    model = archdb.build(card, "full", weights=tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    for stack in ("encoder", "decoder"):
        table = tensors[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
        assert torch.equal(getattr(model, stack).position_bias.table.weight, table)
    assert model.head.lm_head.weight is model.embed.table.weight  # tied: one tensor
    gated, _ = _tiny_encoder_decoder("t5-v1.1", tmp_path / "gated")
    with pytest.raises(WeightsError, match=r"unexpected checkpoint tensor .*wi_0"):
        archdb.build(card, "full", weights=tmp_path / "gated")
    assert gated.architecture.mlp.activation.value == "geglu"


VARIANTS = [  # a family's other layouts, each off the TINY config
    ("gpt_neox", {"hidden_act": "quick_gelu"}),  # x * sigmoid(1.702 x): no GELU form
    ("gpt_neox", {"use_parallel_residual": False}),  # serial blocks (RedPajama-INCITE)
    ("gpt_bigcode", {"multi_query": False}),  # per head [q, k, v] rows in c_attn
    ("falcon_h1", {"mamba_rms_norm": True, "mamba_norm_before_gate": True}),
    ("falcon_h1", {"mamba_rms_norm": True, "mamba_norm_before_gate": False}),
    ("granitemoehybrid", {"num_local_experts": 0, "position_embedding_type": "rope"}),
    ("gemma4_text", GEMMA4_ON_DEVICE),
    ("gemma4_text", {**GEMMA4_ON_DEVICE, "use_double_wide_mlp": False}),
    # Nemotron 3: MoE layers (non-gated ReLU^2 experts, a shared expert) under DeepSeek-V3's
    # router with groups that bind, a routed scale and a random correction bias
    (
        "nemotron_h",
        {
            "hybrid_override_pattern": "ME*E-",
            "n_routed_experts": 8,
            "num_experts_per_tok": 3,
            "moe_intermediate_size": 32,
            "moe_shared_expert_intermediate_size": 48,
            "n_group": 4,
            "topk_group": 2,
            "routed_scaling_factor": 1.7,
        },
    ),
    # Nemotron 3 Super: the same MoE layers with the experts in a latent width
    (
        "nemotron_h",
        {
            "hybrid_override_pattern": "ME*E-",
            "n_routed_experts": 8,
            "num_experts_per_tok": 3,
            "moe_intermediate_size": 32,
            "moe_shared_expert_intermediate_size": 48,
            "moe_latent_size": 24,
            "n_group": 4,
            "topk_group": 2,
            "routed_scaling_factor": 1.7,
        },
    ),
]


@pytest.mark.parametrize(("model_type", "changes"), VARIANTS)
def test_family_variants_equal_transformers(model_type, changes, tmp_path, monkeypatch):
    """GPT-NeoX with quick GELU and with serial blocks; Falcon-H1's optional mixer norm
    (before or after the SiLU(z) gate); Granite 4.0-H dense (the shared MLP alone) with
    RoPE; Gemma 4 E2B/E4B (per-layer embeddings, KV sharing, with and without the
    double-wide MLP); Nemotron 3's MoE layers, with and without a latent width."""
    monkeypatch.setitem(TINY, model_type, {**TINY[model_type], **changes})
    reference = _tiny(model_type, tmp_path)
    card = _card(tmp_path)
    assert _logit_error(card, tmp_path, reference) < LOGIT_TOLERANCE


# --- unusual but valid settings, for every family whose config class has them ------------
# (windows shorter than the sequence, partial rotary and shared experts are in TINY itself)
_LATENT = {
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "glm_moe_dsa",
    "longcat_flash",
    "kimi_linear",
}  # fmt: skip  (their head_dim is not the attention's width)
# settings transformers accepts but archdb refuses to import, each with the reason it gives
REFUSED = {
    ("zamba2", "head_dim"): "Zamba2Config derives it",
    ("zamba2", "tie_word_embeddings"): "leaves Zamba2's shared blocks untied",
}
# settings transformers itself refuses (not valid configs of the family)
INVALID = {
    ("mamba2", "head_dim"),  # Mamba2Config checks head_dim against its heads
    ("dbrx", "tie_word_embeddings"),  # DbrxConfig refuses a tied head
}


def _unusual(model_type: str) -> list[tuple[str, object]]:
    """A head_dim other than hidden / heads and the head tied the other way round, where
    the type's config class has them."""
    import transformers

    # no special-token ids: a default may lie outside the default vocabulary (StarCoder 2's)
    config = transformers.AutoConfig.for_model(model_type, bos_token_id=None, eos_token_id=None)
    keys = set(config.to_dict()) | set(getattr(config, "attribute_map", {}))
    base = TINY[model_type]
    width = base.get("hidden_size") or base.get("n_embd") or 64
    heads = base.get("num_attention_heads") or base.get("n_head") or 4
    found: list[tuple[str, object]] = []
    if "head_dim" in keys and model_type not in _LATENT:
        found.append(("head_dim", width // heads + 8))
    if "tie_word_embeddings" in keys:
        found.append(("tie_word_embeddings", not getattr(config, "tie_word_embeddings", False)))
    return [(k, v) for k, v in found if (model_type, k) not in INVALID]


UNUSUAL = [(t, k, v) for t in sorted(TINY) for k, v in _unusual(t)]


@pytest.mark.parametrize(("model_type", "key", "value"), UNUSUAL)
def test_unusual_settings_load_and_equal_transformers(
    model_type, key, value, tmp_path, monkeypatch
):
    """The tiny checkpoint with one unusual setting: its config is imported, its weights
    load, and the logits are transformers' (or import-hf refuses it, saying why)."""
    monkeypatch.setitem(TINY, model_type, {**TINY[model_type], key: value})
    reference = _tiny(model_type, tmp_path)
    if (model_type, key) in REFUSED:
        with pytest.raises(HFImportError, match=re.escape(REFUSED[model_type, key])):
            _card(tmp_path)
        return
    seq, low = SEQ_FOR.get(model_type, SEQ), FIRST_TOKEN.get(model_type, 0)
    assert _logit_error(_card(tmp_path), tmp_path, reference, seq, low=low) < LOGIT_TOLERANCE


# text decoders transformers builds only inside their multimodal release: the release's
# config (text_config, a one-block vision tower) and its ForConditionalGeneration
RELEASED_TINY: dict[str, tuple[str, dict]] = {
    "qwen3_vl_text": ("qwen3_vl", {**_DENSE, "head_dim": 16, "tie_word_embeddings": False}),
    # every layer's experts (renormalized top k), GQA, a tied head
    "qwen3_vl_moe_text": ("qwen3_vl_moe", {**_DENSE, "head_dim": 16, "moe_intermediate_size": 24,
                                           "num_experts": 4, "num_experts_per_tok": 2}),
}  # fmt: skip
_TINY_VISION = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                "out_hidden_size": 64, "num_position_embeddings": 16,
                "deepstack_visual_indexes": [0]}  # fmt: skip


def tiny_release(model_type: str, directory) -> transformers.PreTrainedModel:
    """The tiny multimodal release of a ``released_as`` family (a one-block vision tower),
    saved to ``directory``."""
    import transformers

    release, text = RELEASED_TINY[model_type]
    torch.manual_seed(0)
    text = text | {"bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    tied = text.pop("tie_word_embeddings", True)
    config = transformers.AutoConfig.for_model(
        release, text_config=text, vision_config=_TINY_VISION, tie_word_embeddings=tied
    )
    config._attn_implementation = "eager"
    reference = transformers.AutoModelForImageTextToText.from_config(config).eval()
    _nudge_vectors(reference)
    reference.save_pretrained(directory)
    return reference


@pytest.mark.parametrize("model_type", sorted(RELEASED_TINY))
def test_a_text_decoder_inside_its_multimodal_release_equals_transformers(model_type, tmp_path):
    """The release's checkpoint (decoder under model.language_model., vision tower under
    model.visual.): archdb imports the release's config, loads the decoder, skips the
    tower, and equals the release's logits on text."""
    release, text = RELEASED_TINY[model_type]
    tied = text.get("tie_word_embeddings", True)
    reference = tiny_release(model_type, tmp_path)
    card = _card(tmp_path)
    assert card.architecture.tied_embeddings is tied
    model = archdb.build(card, "full", weights=tmp_path).eval()
    assert model.archdb_loaded.model_type == model_type
    tokens = torch.randint(0, 128, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(input_ids=tokens).logits
        assert relative_error(model(tokens), expected) < LOGIT_TOLERANCE
    if release == "qwen3_vl_moe":  # as released: fused experts stored (experts, in, out)
        from safetensors.torch import load_file, save_file

        tensors = load_file(tmp_path / "model.safetensors")
        fused = [n for n in tensors if n.endswith(("experts.gate_up_proj", "experts.down_proj"))]
        assert fused
        for name in fused:
            tensors[name] = tensors[name].transpose(1, 2).contiguous()
        save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
        model = archdb.build(card, "full", weights=tmp_path).eval()
        with torch.no_grad():
            assert relative_error(model(tokens), expected) < LOGIT_TOLERANCE


def test_every_logit_exact_family_is_tested_here():
    """... and a family tested here but not logit-exact says why (the Switch Transformer:
    equal only until an expert is full)."""
    from archdb_hf.families.registry import SPECS

    encoder_decoders = {model_type for model_type, _, _ in ENCODER_DECODER_TINY.values()}
    exact = encoder_decoders & set(LOGIT_EXACT)
    assert set(LOGIT_EXACT) == set(TINY) | exact | set(RELEASED_TINY)
    assert all(SPECS[model_type].unverified for model_type in encoder_decoders - exact)


def test_a_wrong_shape_is_an_error_naming_the_tensor(tmp_path):
    _tiny("llama", tmp_path)
    card = _card(tmp_path)
    wider = card.model_copy(
        update={"architecture": card.architecture.model_copy(update={"vocab_size": 130})}
    )
    with pytest.raises(WeightsError, match=r"embed\.table\.weight is \(130, 64\).*embed_tokens"):
        archdb.build(wider, "full", weights=tmp_path)


def test_a_missing_tensor_is_an_error_naming_it(tmp_path):
    from safetensors.torch import load_file, save_file

    _tiny("llama", tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    del tensors["model.layers.1.mlp.up_proj.weight"]
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(WeightsError, match=r"no tensor 'model\.layers\.1\.mlp\.up_proj\.weight'"):
        archdb.build(_card(tmp_path), "full", weights=tmp_path)


def test_an_unexpected_tensor_is_an_error_naming_it(tmp_path):
    from safetensors.torch import load_file, save_file

    _tiny("llama", tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["model.layers.0.self_attn.extra.weight"] = torch.zeros(2)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(
        WeightsError, match=r"unexpected checkpoint tensor 'model\.layers\.0\.self_attn\.extra"
    ):
        archdb.build(_card(tmp_path), "full", weights=tmp_path)


def test_a_fused_tensor_with_rows_left_over_is_an_error_not_a_partial_read(tmp_path):
    """A card with fewer KV heads than the checkpoint cuts k and v of the card's widths
    from Phi-3's fused qkv_proj: every cut fits, but the rows past them are the
    checkpoint's, so the card's sizes are refused rather than the wrong rows loaded."""
    _tiny("phi3", tmp_path)
    card = _card(tmp_path)
    attention = card.architecture.attention.model_copy(update={"n_kv_heads": 1})
    fewer = card.model_copy(
        update={"architecture": card.architecture.model_copy(update={"attention": attention})}
    )
    with pytest.raises(WeightsError, match=r"qkv_proj\.weight has 128 entries .* reads 0:64"):
        archdb.build(fewer, "full", weights=tmp_path)


def test_a_fused_per_head_tensor_of_another_shape_is_an_error_naming_it(tmp_path):
    from safetensors.torch import load_file, save_file

    _tiny("gpt_neox", tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    name = "gpt_neox.layers.0.attention.query_key_value.weight"
    tensors[name] = tensors[name][:-1].clone()  # one row short: it no longer splits per head
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(WeightsError, match=r"query_key_value\.weight .*cannot give it"):
        archdb.build(_card(tmp_path), "full", weights=tmp_path)


def test_shards_load_like_one_file(tmp_path):
    import transformers

    _tiny("qwen3", tmp_path / "one")
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "one")
    model.save_pretrained(tmp_path / "shards", max_shard_size="20KB")
    assert (tmp_path / "shards" / "model.safetensors.index.json").is_file()
    card = _card(tmp_path / "one")
    one = archdb.build(card, "full", weights=tmp_path / "one")
    shards = archdb.build(card, "full", weights=tmp_path / "shards")
    assert shards.archdb_loaded.checkpoint_tensors == one.archdb_loaded.checkpoint_tensors
    for a, b in zip(one.parameters(), shards.parameters(), strict=True):
        assert torch.equal(a, b)


def test_no_parameter_is_left_at_its_initial_value(tmp_path):
    _tiny("gemma2", tmp_path)
    card = _card(tmp_path)
    fresh = archdb.build(card, "full", device="cpu")
    loaded = archdb.build(card, "full", weights=tmp_path)
    before = dict(fresh.named_parameters())
    for name, p in loaded.named_parameters():
        assert not torch.equal(p, before[name]), name


def test_a_meta_model_cannot_take_weights(tmp_path):
    _tiny("llama", tmp_path)
    model = archdb.build(_card(tmp_path), "full")  # meta device
    with pytest.raises(WeightsError, match="meta device"):
        load_weights(model, tmp_path)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("norm.unit_offset", False),
        ("attention.scale", None),
        ("embedding_multiplier", None),
        ("norm.eps", 1e-2),
    ],
)
def test_each_function_field_changes_the_logits(path, value, tmp_path):
    """The fields are not decoration: a wrong value breaks the comparison."""
    assert _error_with_changes("gemma2", tmp_path, {path: value}) > 100 * LOGIT_TOLERANCE


@pytest.mark.parametrize(
    ("model_type", "other"),
    [("gpt2", "exact"), ("gpt_bigcode", "tanh"), ("gpt_neox", "tanh"), ("starcoder2", "exact"),
     ("bloom", "exact")],
)  # fmt: skip
def test_the_gelu_form_changes_the_logits(model_type, other, tmp_path, monkeypatch):
    """The tanh and erf GELUs differ by under 1e-3, which the tiny checkpoints' small
    weights hide (GPT-BigCode's logits move by 4e-6); with weights ten times larger the
    right form still matches and the other fails the comparison."""
    monkeypatch.setitem(TINY, model_type, {**TINY[model_type], "initializer_range": 0.2})
    reference = _tiny(model_type, tmp_path)
    assert _logit_error(_card(tmp_path), tmp_path, reference) < LOGIT_TOLERANCE
    changes = {"mlp.gelu_approximation": other}
    assert _error_with_changes(model_type, tmp_path, changes) > 10 * LOGIT_TOLERANCE


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("mlp.swiglu_limit", None),  # gpt-oss's 7.0 clamps nothing here
        ("mlp.swiglu_alpha", None),
        ("position.rope_scaling.truncate", None),  # the band rounded out to whole dims
        ("mlp.activation", "swiglu"),  # no clamp, no + 1
    ],
)
def test_each_gpt_oss_function_field_changes_the_logits(path, value, tmp_path):
    changes = {path: value}
    if value == "swiglu":
        changes |= {"mlp.swiglu_limit": None, "mlp.swiglu_alpha": None}
    assert _error_with_changes("gpt_oss", tmp_path, changes) > 100 * LOGIT_TOLERANCE


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("residual_multiplier", None),
        ("attention.scale", 3.0),  # tiny random weights: only a far value shows in softmax
        ("logit_scale", 1 / 8),
        ("embedding_multiplier", None),
    ],
)
def test_each_granite_multiplier_changes_the_logits(path, value, tmp_path):
    """Granite's muP factors: each one dropped (or a near value) breaks the comparison."""
    assert _error_with_changes("granite", tmp_path, {path: value}) > 100 * LOGIT_TOLERANCE


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("attention.nope_temperature", None),  # the NoPE layer's queries untempered
        ("attention.qk_norm_rope_only", False),  # the NoPE layer's q and k normed too
        ("mlp.moe.weighted_input", None),  # each expert's output weighted, not its input
        ("mlp.moe.score_function", "softmax"),
        ("norm.eps", 1e-6),  # the QK norm's epsilon is the blocks'
    ],
)
def test_each_llama4_function_field_changes_the_logits(path, value, tmp_path):
    """Llama 4's mechanisms: each one dropped (or the default epsilon) breaks the comparison."""
    assert _error_with_changes("llama4_text", tmp_path, {path: value}) > 10 * LOGIT_TOLERANCE


@pytest.mark.parametrize(
    ("model_type", "path", "value"),
    [
        ("xglm", "position.sinusoid_layout", "interleaved"),
        ("xglm", "position.sinusoid_layout", "halves"),  # fairseq's frequencies, position 2
        ("xglm", "embedding_multiplier", None),
        ("ctrl", "position.sinusoid_layout", "interleaved"),
        ("ctrl", "embedding_multiplier", None),
    ],
)
def test_the_sinusoid_layout_and_embedding_scale_change_the_logits(
    model_type, path, value, tmp_path
):
    """XGLM's and CTRL's tables and their sqrt(d_model) embeddings are not decoration."""
    assert _error_with_changes(model_type, tmp_path, {path: value}) > 100 * LOGIT_TOLERANCE


def test_bitnets_squared_gate_changes_the_logits(tmp_path):
    """relu(gate)^2 * up, not relu(gate) * up: the square is not decoration."""
    changes = {"mlp.activation": "reglu"}
    assert _error_with_changes("bitnet", tmp_path, changes) > 100 * LOGIT_TOLERANCE


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("attention.qk_norm_after_rope", False),  # the QK norm before RoPE, as Qwen 3's
        ("position.rope_scaling", None),  # the base unstretched
        ("position.rope_scaling.factor", 40.0),  # another alpha
    ],
)
def test_hunyuan_qk_norm_order_and_alpha_change_the_logits(path, value, tmp_path):
    assert _error_with_changes("hunyuan_v1_dense", tmp_path, {path: value}) > 100 * LOGIT_TOLERANCE


@pytest.mark.parametrize("norms", [1, 2])
def test_falcons_new_decoder_architecture_equals_transformers(norms, tmp_path, monkeypatch):
    """Falcon-40B/180B's layout: grouped key/value heads in the fused projection, and two
    norms (ln_attn, ln_mlp) per parallel block; Falcon2-11B's one (input_layernorm)."""
    new = {"new_decoder_architecture": True, "num_kv_heads": 2, "num_ln_in_parallel_attn": norms}
    monkeypatch.setitem(TINY, "falcon", TINY["falcon"] | new)
    reference = _tiny("falcon", tmp_path)
    card = _card(tmp_path)
    assert card.architecture.norm.shared_in_parallel is (norms == 1)
    assert card.architecture.attention.n_kv_heads == 2
    assert _logit_error(card, tmp_path, reference) < LOGIT_TOLERANCE


# DeepSeek's YaRN over an original context of 8 tokens (SEQ reads three times past it), its
# two temperature terms apart: cos/sin at their ratio, the whole softmax at the second squared
DEEPSEEK_YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 16.0, "beta_fast": 32.0,
                 "beta_slow": 1.0, "original_max_position_embeddings": 8, "mscale": 1.0,
                 "mscale_all_dim": 2.0}  # fmt: skip


@pytest.mark.parametrize("model_type", ["deepseek_v2", "deepseek_v3"])
def test_deepseek_yarn_past_the_original_context_equals_transformers(
    model_type, tmp_path, monkeypatch
):
    monkeypatch.setitem(TINY, model_type, TINY[model_type] | {"rope_parameters": DEEPSEEK_YARN})
    reference = _tiny(model_type, tmp_path)
    card = _card(tmp_path)
    scaling = card.architecture.position.rope_scaling
    assert (scaling.type.value, scaling.original_context) == ("yarn", 8)
    assert (scaling.mscale, scaling.mscale_all_dim) == (1.0, 2.0)
    assert _logit_error(card, tmp_path, reference) < LOGIT_TOLERANCE


@pytest.mark.parametrize(
    "changes",
    [
        # plain YaRN: cos/sin at 0.1 ln f + 1, the softmax untempered
        {"position.rope_scaling.mscale": None, "position.rope_scaling.mscale_all_dim": None},
        {"position.rope_scaling.mscale": 2.0},  # the softmax tempered, cos/sin not
        {"position.rope_scaling": None},  # the frequencies unstretched
    ],
)
def test_each_deepseek_yarn_term_changes_the_logits(changes, tmp_path, monkeypatch):
    monkeypatch.setitem(
        TINY, "deepseek_v3", TINY["deepseek_v3"] | {"rope_parameters": DEEPSEEK_YARN}
    )
    assert _error_with_changes("deepseek_v3", tmp_path, changes) > 100 * LOGIT_TOLERANCE


# LongRoPE over an original context of 16 tokens: 6 rotated pairs (head_dim 16, 0.75 of it),
# short and long divisors far apart so that the set a sequence uses shows in the logits
PHI3_LONGROPE = {
    "max_position_embeddings": 64,
    "original_max_position_embeddings": 16,
    "partial_rotary_factor": 0.75,
    "rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0,
                        "short_factor": [1.0, 1.5, 2.0, 3.0, 5.0, 8.0],
                        "long_factor": [1.0, 4.0, 9.0, 20.0, 40.0, 64.0]},
}  # fmt: skip


@pytest.mark.parametrize("seq", [9, 16, 17, 40])
def test_phi3_longrope_below_and_past_the_original_context_equals_transformers(
    seq, tmp_path, monkeypatch
):
    """Up to 16 tokens the short factors rotate every position, past them the long ones
    (transformers picks the set per forward pass, by length); cos/sin carry
    sqrt(1 + ln 4 / ln 16) either way."""
    monkeypatch.setitem(TINY, "phi3", TINY["phi3"] | PHI3_LONGROPE)
    reference = _tiny("phi3", tmp_path)
    card = _card(tmp_path)
    scaling = card.architecture.position.rope_scaling
    assert (scaling.type.value, scaling.factor, scaling.original_context) == ("longrope", 4.0, 16)
    assert scaling.long_factor == (1.0, 4.0, 9.0, 20.0, 40.0, 64.0)
    assert _logit_error(card, tmp_path, reference, seq) < LOGIT_TOLERANCE


@pytest.mark.parametrize(
    ("seq", "changes"),
    [
        (12, {"position.rope_scaling.short_factor": [1.0, 4.0, 9.0, 20.0, 40.0, 64.0]}),
        (24, {"position.rope_scaling.long_factor": [1.0, 1.5, 2.0, 3.0, 5.0, 8.0]}),
        (24, {"position.rope_scaling.original_context": 32}),  # the short set past 16
        (12, {"position.rope_scaling.attention_factor": 1.0}),
        (12, {"position.rope_scaling": None}),
    ],
)
def test_each_longrope_term_changes_the_logits(seq, changes, tmp_path, monkeypatch):
    monkeypatch.setitem(TINY, "phi3", TINY["phi3"] | PHI3_LONGROPE)
    assert _error_with_changes("phi3", tmp_path, changes, seq) > 100 * LOGIT_TOLERANCE


def test_gpt_oss_gate_and_up_are_read_from_interleaved_columns(tmp_path):
    from safetensors.torch import load_file

    _tiny("gpt_oss", tmp_path)
    model = archdb.build(_card(tmp_path), "full", weights=tmp_path)
    fused = load_file(tmp_path / "model.safetensors")["model.layers.1.mlp.experts.gate_up_proj"]
    experts = model.decoder.layers[1].mlp.sublayer.experts
    assert fused.shape == (4, 64, 64)  # (experts, in, 2 x d_ff)
    assert torch.equal(experts.gate, fused[..., 0::2])
    assert torch.equal(experts.up, fused[..., 1::2])


def test_qwen3_next_deltanet_projections_are_regrouped_per_key_head(tmp_path):
    """transformers stores in_proj_qkvz as [q, k, v, z] per key head and in_proj_ba as
    [b, a] per key head; archdb holds all q, then all k, v and z (b, then a)."""
    from safetensors.torch import load_file

    _tiny("qwen3_next", tmp_path)
    model = archdb.build(_card(tmp_path), "full", weights=tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    fused = tensors["model.layers.0.linear_attn.in_proj_qkvz.weight"]  # (2 x 64, 64)
    mixer = model.decoder.layers[0].attn.sublayer
    q, k, v, z = mixer.in_proj_qkvz.weight.split([32, 32, 32, 32])
    assert torch.equal(q, torch.cat([fused[0:16], fused[64:80]]))  # key head 0, then 1
    assert torch.equal(k, torch.cat([fused[16:32], fused[80:96]]))
    assert torch.equal(v, torch.cat([fused[32:48], fused[96:112]]))  # 2 value heads each
    assert torch.equal(z, torch.cat([fused[48:64], fused[112:128]]))
    ba = tensors["model.layers.0.linear_attn.in_proj_ba.weight"]  # (2 x [b, b, a, a], 64)
    assert torch.equal(mixer.in_proj_ba.weight, ba[[0, 1, 4, 5, 2, 3, 6, 7]])


@pytest.mark.parametrize("model_type", ["mamba2", "bamba", "qwen3_next", "qwen3_5_text"])
def test_a_mixers_gated_norm_takes_the_cards_epsilon(model_type, tmp_path):
    """transformers' Mamba-2 and Gated DeltaNet norms use the blocks' epsilon (1e-4 here,
    1e-6 for Qwen3-Next's default): a different one breaks the comparison."""
    from archdb.mixers.gated_deltanet import gated_deltanet_module
    from archdb.mixers.mamba2 import mamba2_module

    reference = _tiny(model_type, tmp_path)
    card = _card(tmp_path)
    model = archdb.build(card, "full", weights=tmp_path).eval()
    kinds = mamba2_module() | gated_deltanet_module()
    mixers = [m for m in model.modules() if isinstance(m, kinds)]
    assert mixers and {m.eps for m in mixers} == {card.architecture.norm.eps}
    for mixer in mixers:
        mixer.eps = 1.0  # only the mixers' norms change
    seq = SEQ_FOR.get(model_type, SEQ)
    tokens = torch.randint(0, 128, (BATCH, seq), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert relative_error(model(tokens), reference(tokens).logits) > 100 * LOGIT_TOLERANCE


def test_a_qwen3_5_release_loads_its_text_decoder(tmp_path):
    """Qwen3.5 is released as Qwen3_5ForConditionalGeneration: config model_type qwen3_5
    with a text_config, the decoder under model.language_model., a vision tower under
    model.visual. and an MTP layer under mtp. (neither in the card): archdb imports the
    wrapper's config, loads the decoder, skips the rest, and equals the wrapper's text
    logits."""
    import transformers
    from safetensors.torch import load_file, save_file

    torch.manual_seed(0)
    text = TINY["qwen3_5_text"] | {"bos_token_id": None, "eos_token_id": None,
                                   "pad_token_id": None}  # fmt: skip
    vision = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
              "out_hidden_size": 64, "num_position_embeddings": 16}  # fmt: skip
    config = transformers.Qwen3_5Config(text_config=text, vision_config=vision)
    config._attn_implementation = "eager"
    reference = transformers.Qwen3_5ForConditionalGeneration(config).eval()
    _nudge_vectors(reference)
    reference.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    assert any(n.startswith("model.visual.") for n in tensors)
    tensors["mtp.fc.weight"] = torch.zeros(64, 128)  # as released: one MTP layer
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    card = _card(tmp_path)
    model = archdb.build(card, "full", weights=tmp_path).eval()
    assert model.archdb_loaded.model_type == "qwen3_5_text"
    decoder = [n for n in tensors if n.startswith(("model.language_model.", "lm_head."))]
    assert model.archdb_loaded.checkpoint_tensors == len(decoder)
    tokens = torch.randint(0, 128, (BATCH, 80), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(input_ids=tokens).logits
        assert relative_error(model(tokens), expected) < LOGIT_TOLERANCE
    tensors["model.layers.0.mlp.up_proj.weight"] = torch.zeros(128, 64)  # a second copy
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(WeightsError, match="stored twice"):
        archdb.build(card, "full", weights=tmp_path)


def test_xielu_constants_in_the_checkpoint_are_checked_not_loaded(tmp_path):
    from safetensors.torch import load_file, save_file

    _tiny("apertus", tmp_path)
    card = _card(tmp_path)
    assert card.architecture.mlp.activation.value == "xielu"
    model = archdb.build(card, "full", weights=tmp_path)
    act = model.decoder.layers[1].mlp.sublayer.act
    tensors = load_file(tmp_path / "model.safetensors")
    assert torch.equal(act.alpha_n, tensors["model.layers.1.mlp.act_fn.alpha_n"])
    assert not any("beta" in name for name, _ in model.named_parameters())
    tensors["model.layers.1.mlp.act_fn.beta"] = torch.tensor(0.25)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(
        WeightsError, match=r"'model\.layers\.1\.mlp\.act_fn\.beta' holds \[0\.25\]"
    ):
        archdb.build(card, "full", weights=tmp_path)


def test_a_granite_card_without_its_multipliers_is_not_logit_exact(tmp_path):
    from archdb.fidelity import fidelity

    _tiny("granite", tmp_path)
    identity = Identity("granite-tiny", "Granite tiny", "granite-4.1", "Tests", "2024-01-01")
    config = read_config(tmp_path / "config.json")
    card = Card.model_validate(
        import_config(config, source_url="https://example.org/c.json", identity=identity).card
    )
    assert card.architecture.logit_scale == 1 / 6  # the reciprocal of logits_scaling
    assert str(fidelity(card)) == "logit-exact (granite, relative error < 1e-05)"
    data = card.model_dump(mode="json")
    data["architecture"]["residual_multiplier"] = None
    assert fidelity(Card.model_validate(data)).why == (
        "granite is logit-exact; card lacks residual_multiplier"
    )


def test_cli_build_reports_the_loaded_weights(tmp_path):
    import json

    import yaml
    from archdb_cli.main import app
    from typer.testing import CliRunner

    _tiny("gpt2", tmp_path / "ckpt")
    card = _card(tmp_path / "ckpt").model_dump(mode="json", exclude_none=False)
    catalogue = tmp_path / "models.yaml"
    catalogue.write_text(yaml.safe_dump([card], sort_keys=False), encoding="utf-8")
    runner = CliRunner()
    args = ["build", "tiny-1", "--size", "full", "--weights", str(tmp_path / "ckpt")]
    result = runner.invoke(app, [*args, "-C", str(catalogue)])
    assert result.exit_code == 0, result.output
    assert "Weights: 36 tensors" in result.output
    assert "(transformers gpt2); none left random" in result.output
    shown = json.loads(runner.invoke(app, [*args, "-C", str(catalogue), "--json"]).output)
    assert shown["weights"]["model_type"] == "gpt2"
    assert shown["weights"]["tensors"] == 36  # 16 per layer, wte, wpe, ln_f (2)
    toy = runner.invoke(app, ["build", "tiny-1", "--weights", "x", "-C", str(catalogue)])
    assert toy.exit_code == 2 and "use it with --size full" in toy.output
    (tmp_path / "empty").mkdir()
    bad = runner.invoke(app, [*args[:5], str(tmp_path / "empty"), "-C", str(catalogue)])
    assert bad.exit_code == 1 and "no model.safetensors" in bad.output


def test_an_imported_card_of_a_verified_family_is_logit_exact(tmp_path):
    from archdb.fidelity import fidelity

    _tiny("gemma2", tmp_path)
    config = read_config(tmp_path / "config.json")
    identity = Identity("gemma-2-tiny", "Gemma 2 tiny", "gemma-2", "Tests", "2024-01-01")
    card = Card.model_validate(
        import_config(config, source_url="https://example.org/c.json", identity=identity).card
    )
    assert str(fidelity(card)) == "logit-exact (gemma2, relative error < 1e-05)"
    data = card.model_dump(mode="json")
    data["architecture"]["attention"]["scale"] = None
    unscaled = fidelity(Card.model_validate(data))
    assert unscaled.level == "count-exact"
    assert unscaled.why == "gemma2 is logit-exact; card lacks attention.scale"
    config["rope_scaling"] = {"rope_type": "linear", "factor": 8.0}
    scaled = Card.model_validate(
        import_config(config, source_url="https://example.org/c.json", identity=identity).card
    )
    assert scaled.architecture.position.rope_scaling is not None  # recorded, and built
    assert str(fidelity(scaled)) == "logit-exact (gemma2, relative error < 1e-05)"


@pytest.mark.parametrize(
    ("card_id", "line"),
    [
        ("llama-2-7b", "Fidelity: logit-exact (llama, relative error < 1e-05)"),
        (
            "granite-4.1-8b",
            "Fidelity: count-exact (granite is logit-exact; card lacks norm.eps, "
            "embedding_multiplier, logit_scale, attention.scale, residual_multiplier)",
        ),
        (  # null is Zamba2's recorded "no clamp" (a switch), not a value left out
            "zamba2-2.7b",
            "Fidelity: count-exact (transformers' zamba2 always applies "
            "mixers.mamba2.time_step_floor; the card's model does not)",
        ),
        (
            "switch-base-8",
            "Fidelity: count-exact (switch_transformers: outputs not verified: transformers "
            "drops the tokens past each expert's expert_capacity in a sequence",
        ),
        ("palm-540b", "Fidelity: not comparable (no transformers family implements this card)"),
        ("t5-v1.1-xxl", "Fidelity: not comparable (transformers' t5 cannot build it: "),
    ],
)
@pytest.mark.usefixtures("warm_shipped_cache")
def test_show_states_the_fidelity_in_one_line(card_id, line):
    import json

    from archdb_cli.main import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["show", card_id])
    assert result.exit_code == 0
    assert [text for text in result.output.splitlines() if text.startswith("Fidelity:")] == [
        next(text for text in result.output.splitlines() if text.startswith(line))
    ]
    shown = json.loads(CliRunner().invoke(app, ["show", card_id, "--json"]).output)
    assert line.removeprefix("Fidelity: ").startswith(shown["fidelity"]["level"])


@pytest.mark.usefixtures("warm_shipped_cache")
def test_function_assumptions_name_the_null_fields_only(tmp_path):
    from archdb.plan.layout import function_assumptions

    listed = [a.field for a in function_assumptions(api.card("palm-8b").architecture)]
    assert listed == [
        "norm.eps",
        "norm.unit_offset",
        "attention.scale",
        "position.rope_layout",  # RoPE: its layout matters; no GELU, so no GELU form
        "embedding_multiplier",
        "logit_scale",
        "residual_multiplier",
    ]
    _tiny("gemma2", tmp_path)
    assert function_assumptions(_card(tmp_path).architecture) == ()


@pytest.mark.parametrize("normalize", [True, False])
def test_qwen3_moe_routing_follows_norm_topk_prob(normalize, tmp_path, monkeypatch):
    monkeypatch.setitem(TINY, "qwen3_moe", {**TINY["qwen3_moe"], "norm_topk_prob": normalize})
    reference = _tiny("qwen3_moe", tmp_path)
    card = _card(tmp_path)
    assert card.architecture.mlp.moe.normalize_top_k is normalize
    assert _logit_error(card, tmp_path, reference) < LOGIT_TOLERANCE


@pytest.mark.parametrize(
    ("model_type", "changes"),
    [
        ("deepseek_v3", {"score_function": "softmax"}),
        ("deepseek_v3", {"n_groups": None, "top_k_groups": None, "group_score": None}),
        ("deepseek_v3", {"routed_scale": 1.0}),
        ("deepseek_v3", {"normalize_top_k": False}),
        ("deepseek_v2", {"group_score": "top2-sum"}),
        ("deepseek_v2", {"normalize_top_k": True}),
        ("deepseek_v2", {"score_function": "sigmoid"}),
        ("glm_moe_dsa", {"routed_scale": 1.0}),
    ],
)
def test_each_router_field_changes_the_logits(model_type, changes, tmp_path):
    """The routers' choices are exercised: a wrong value breaks the comparison."""
    moe_changes = {f"mlp.moe.{name}": value for name, value in changes.items()}
    assert _error_with_changes(model_type, tmp_path, moe_changes) > 100 * LOGIT_TOLERANCE


def test_the_mla_latent_norms_take_their_own_epsilon(tmp_path):
    """transformers' MLA families build q_a_layernorm and kv_a_layernorm at 1e-6 whatever
    rms_norm_eps says (1e-3 here): import-hf records it, and the blocks' epsilon in its
    place breaks the comparison."""
    from archdb.parts import norms as norms_part

    Norm = norms_part.modules().Norm

    _tiny("glm_moe_dsa", tmp_path)
    card = _card(tmp_path)
    assert (card.architecture.norm.eps, card.architecture.attention.latent.norm_eps) == (1e-3, 1e-6)
    attention = archdb.build(card, "full").decoder.layers[0].attn.sublayer
    assert {attention.q[1].eps, attention.kv_norm.eps} == {1e-6}
    assert isinstance(attention.kv_norm, Norm)
    changes = {"attention.latent.norm_eps": None}  # null: the blocks' norm.eps
    assert _error_with_changes("glm_moe_dsa", tmp_path, changes) > 100 * LOGIT_TOLERANCE


def test_the_correction_bias_is_loaded_and_required(tmp_path):
    """DeepSeek-V3's e_score_correction_bias is a buffer in both models: loaded, and a card
    without one has no place for the checkpoint's tensor."""
    _tiny("deepseek_v3", tmp_path)
    card = _card(tmp_path)
    assert card.architecture.mlp.moe.score_correction_bias is True
    model = archdb.build(card, "full", weights=tmp_path)
    bias = model.decoder.layers[1].mlp.sublayer.router.correction_bias
    assert bias.abs().sum() > 0  # the checkpoint's random values, not the zeros it starts at
    assert not any(p is bias for p in model.parameters())  # a buffer: not counted
    data = card.model_dump(mode="json")
    data["architecture"]["mlp"]["moe"]["score_correction_bias"] = None
    with pytest.raises(WeightsError, match=r"unexpected checkpoint tensor .*e_score_correction"):
        archdb.build(Card.model_validate(data), "full", weights=tmp_path)


@pytest.mark.parametrize(
    "changes",
    [{"mixers.mamba2.time_step_floor": None}, {"attention.scale": None}],
    ids=["no-dt-floor", "plain-scale"],
)
def test_zamba2s_dt_floor_and_attention_scale_change_the_logits(changes, tmp_path):
    """Zamba2 clamps dt below at time_step_min and scales scores by (head_dim / 2) ** -0.5:
    without either, the logits move far beyond the tolerance."""
    assert _error_with_changes("zamba2", tmp_path, changes) > 100 * LOGIT_TOLERANCE


def test_zamba2s_repeated_shared_block_must_equal_the_first(tmp_path):
    """A checkpoint may repeat a shared block under a later hybrid layer that runs it (as
    transformers' state_dict does): an equal copy loads, a different one is an error."""
    from safetensors.torch import load_file, save_file

    _tiny("zamba2", tmp_path)
    card = _card(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    name = "model.layers.1.shared_transformer.self_attn.q_proj.weight"  # block A
    copy = name.replace("layers.1.", "layers.5.")  # block A again (A, B, A)
    tensors[copy] = tensors[name].clone()
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    archdb.build(card, "full", weights=tmp_path)
    tensors[copy] = tensors[name] + 1.0
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(WeightsError, match=r"layers\.5\.shared.*differs from"):
        archdb.build(card, "full", weights=tmp_path)


@pytest.mark.parametrize(
    "changes",
    [
        {"attention.latent.lora_scaled": False},
        {"mlp.moe.normalize_top_k": True},
        {"mlp.moe.routed_scale": 1.0},
        {"position.rope_layout": "half-split"},
    ],
    ids=["lora-scaled", "normalize", "routed-scale", "rope-layout"],
)
def test_each_longcat_choice_changes_the_logits(changes, tmp_path):
    """LongCat-Flash's choices are exercised: a wrong value breaks the comparison."""
    assert _error_with_changes("longcat_flash", tmp_path, changes) > 100 * LOGIT_TOLERANCE


def test_longcat_zero_expert_rows_are_skipped_but_other_tensors_are_not(tmp_path):
    """transformers up to 5.24 saved gate/up tensors for the zero-computation experts
    (here experts 6-9 of 6 routed and 4 zero: rows it never read); 5.25, the pinned
    release, saves none. archdb loads either release's checkpoint, reads none of those
    tensors, and still refuses a tensor it has no place for."""
    from safetensors.torch import load_file, save_file

    from archdb_hf.testing import allocates_zero_expert_rows

    _tiny("longcat_flash", tmp_path)
    path = tmp_path / "model.safetensors"
    tensors = load_file(path)
    zero_rows = [
        f"model.layers.{layer}.mlp.experts.{expert}.{proj}_proj.weight"
        for layer in range(2)
        for expert in range(6, 10)
        for proj in ("gate", "up")
    ]
    saved = {name for name in zero_rows if name in tensors}
    assert saved == (set(zero_rows) if allocates_zero_expert_rows() else set())
    archdb.build(_card(tmp_path), "full", weights=tmp_path)  # the installed release's
    before_5_25 = tensors | {name: torch.zeros(48, 64) for name in zero_rows}
    save_file(before_5_25, path, metadata={"format": "pt"})
    archdb.build(_card(tmp_path), "full", weights=tmp_path)
    before_5_25["model.layers.0.mlp.experts.10.gate_proj.weight"] = torch.zeros(48, 64)
    save_file(before_5_25, path, metadata={"format": "pt"})
    with pytest.raises(WeightsError, match=r"experts\.10\.gate_proj"):
        archdb.build(_card(tmp_path), "full", weights=tmp_path)
