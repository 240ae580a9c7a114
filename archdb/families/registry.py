"""Every transformers family archdb knows, once (``SPECS``): one ``FamilySpec`` per
``model_type``, each declared as a difference from its parent family.

import-hf (config -> card), the reference (card -> config), the checkpoint names and the
fidelity levels all read this table; nothing routes by a catalogue family name. A card
reaches its family through the ``model_type`` its config source declares (``resolve``).
"""

from __future__ import annotations

import re

from archdb import hf_import as imp
from archdb import weights as w
from archdb.families import card_to_config as ref
from archdb.families.spec import FamilySpec
from archdb.schema import Card

LLAMA = FamilySpec(
    "llama",
    layer="LlamaDecoderLayer",
    config_class="LlamaConfig",
    model_class="LlamaForCausalLM",
    mlp_bias=None,
    write=ref.llama,
    names=w._llama,
    logit_error=0.0,
)
GPT2 = FamilySpec(
    "gpt2",
    layer="GPT2Block",
    config_class="GPT2Config",
    model_class="GPT2LMHeadModel",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    position="learned",
    fixed_bias=(True, True, True),
    tied_default=True,
    activation_default="gelu_new",
    d_ff_default_ratio=4,
    write=ref.gpt2,
    names=w._gpt2,
    logit_error=2.9e-07,
)
MISTRAL = LLAMA.derive(
    "mistral",
    layer="MistralDecoderLayer",
    config_class="MistralConfig",
    model_class="MistralForCausalLM",
    mlp_bias=False,
    sliding_everywhere=True,
    write=ref.mistral,
    logit_error=3.2e-07,
)
MIXTRAL = MISTRAL.derive(
    "mixtral",
    layer="MixtralDecoderLayer",
    config_class="MixtralConfig",
    model_class="MixtralForCausalLM",
    eps_default=1e-05,
    read=imp._mixtral,
    write=ref.mixtral,
    names=w._mixtral,
    logit_error=3.3e-07,
)
QWEN2 = LLAMA.derive(
    "qwen2",
    layer="Qwen2DecoderLayer",
    config_class="Qwen2Config",
    model_class="Qwen2ForCausalLM",
    fixed_bias=(True, False, False),
    mlp_bias=False,
    write=ref.qwen2,
    logit_error=0.0,
)
QWEN3 = LLAMA.derive(
    "qwen3",
    layer="Qwen3DecoderLayer",
    config_class="Qwen3Config",
    model_class="Qwen3ForCausalLM",
    qk_norm="per-head",
    mlp_bias=False,
    write=ref.qwen3,
    logit_error=3.7e-07,
)
QWEN3_MOE = QWEN3.derive(
    "qwen3_moe",
    layer="Qwen3MoeDecoderLayer",
    config_class="Qwen3MoeConfig",
    model_class="Qwen3MoeForCausalLM",
    read=imp._qwen3_moe,
    write=ref.qwen3_moe,
    names=w._qwen3_moe,
    logit_error=2.7e-07,
)
PHI3 = LLAMA.derive(
    "phi3",
    layer="Phi3DecoderLayer",
    config_class="Phi3Config",
    model_class="Phi3ForCausalLM",
    mlp_bias=False,
    eps_default=1e-05,
    sliding_everywhere=True,
    write=ref.phi3,
    names=w._phi3,
    logit_error=3e-07,
)
# logit test: Llama with NoPE layers
SMOLLM3 = LLAMA.derive(
    "smollm3",
    layer="SmolLM3DecoderLayer",
    config_class="SmolLM3Config",
    model_class="SmolLM3ForCausalLM",
    tied_default=True,
    rope_theta_default=2000000.0,
    read=imp._smollm3,
    write=ref.smollm3,
    logit_error=0.0,
)
# logit test: Llama with q/k/v and o bias flags of their own
SEED_OSS = LLAMA.derive(
    "seed_oss",
    layer="SeedOssDecoderLayer",
    config_class="SeedOssConfig",
    model_class="SeedOssForCausalLM",
    attention_bias_default=True,
    read=imp._seed_oss,
    write=ref.seed_oss,
    logit_error=3.2e-07,
)
# logit test: Llama with one bias flag and RoPE on interleaved pairs
ERNIE4_5 = LLAMA.derive(
    "ernie4_5",
    layer="Ernie4_5DecoderLayer",
    config_class="Ernie4_5Config",
    model_class="Ernie4_5ForCausalLM",
    mlp_bias=False,
    tied_default=True,
    rope_theta_default=500000.0,
    eps_default=1e-05,
    rope_layout="interleaved",
    read=imp._ernie4_5,
    write=ref.ernie4_5,
    logit_error=2.5e-07,
)
# logit test: softmax scores with a correction bias, shared experts
ERNIE4_5_MOE = ERNIE4_5.derive(
    "ernie4_5_moe",
    layer="Ernie4_5_MoeDecoderLayer",
    config_class="Ernie4_5_MoeConfig",
    model_class="Ernie4_5_MoeForCausalLM",
    read=imp._ernie4_5_moe,
    write=ref.ernie4_5_moe,
    extras=frozenset({"correction_bias"}),
    names=w._ernie4_5_moe,
    logit_error=2.2e-07,
    function_fields=("architecture.mlp.moe.score_correction_bias",),
)
# logit test: Llama with the per-head QK norm after RoPE, ntk-alpha RoPE
HUNYUAN_V1_DENSE = LLAMA.derive(
    "hunyuan_v1_dense",
    layer="HunYuanDenseV1DecoderLayer",
    config_class="HunYuanDenseV1Config",
    model_class="HunYuanDenseV1ForCausalLM",
    qk_norm="per-head",
    mlp_bias=False,
    eps_default=1e-05,
    read=imp._hunyuan,
    write=ref.hunyuan_v1_dense,
    extras=frozenset({"qk_norm_after_rope"}),
    names=w._hunyuan_v1_dense,
    logit_error=0.0,
    function_fields=("architecture.attention.qk_norm_after_rope",),
)
# logit test: Hunyuan dense, with softmax top-k renormalized beside a shared MLP
HUNYUAN_V1_MOE = HUNYUAN_V1_DENSE.derive(
    "hunyuan_v1_moe",
    layer="HunYuanMoEV1DecoderLayer",
    config_class="HunYuanMoEV1Config",
    model_class="HunYuanMoEV1ForCausalLM",
    read=imp._hunyuan_moe,
    write=ref.hunyuan_v1_moe,
    names=w._hunyuan_v1_moe,
    logit_error=2.3e-07,
)
APERTUS = LLAMA.derive(
    "apertus",
    layer="ApertusDecoderLayer",
    config_class="ApertusConfig",
    model_class="ApertusForCausalLM",
    gated=False,
    qk_norm="per-head",
    mlp_bias=False,
    activation_default="xielu",
    rope_theta_default=12000000.0,
    eps_default=1e-05,
    write=ref.apertus,
    names=w._apertus,
    logit_error=5.5e-07,
)
GRANITE = LLAMA.derive(
    "granite",
    layer="GraniteDecoderLayer",
    config_class="GraniteConfig",
    model_class="GraniteForCausalLM",
    read=imp._granite,
    write=ref.granite,
    extras=frozenset({"residual_multiplier"}),
    logit_error=7.1e-08,
    function_fields=("architecture.attention.scale", "architecture.residual_multiplier"),
)
GRANITEMOE = GRANITE.derive(
    "granitemoe",
    layer="GraniteMoeDecoderLayer",
    config_class="GraniteMoeConfig",
    model_class="GraniteMoeForCausalLM",
    mlp_bias=False,
    read=imp._granitemoe,
    write=ref.granitemoe,
    names=w._granitemoe,
    logit_error=1.4e-07,
)
OLMO = LLAMA.derive(
    "olmo",
    layer="OlmoDecoderLayer",
    config_class="OlmoConfig",
    model_class="OlmoForCausalLM",
    eps_key=None,
    norm="layernorm",
    norm_affine="none",
    mlp_bias=False,
    write=ref.olmo,
    names=w._olmo,
    logit_error=0.0,
)
OLMO2 = LLAMA.derive(
    "olmo2",
    layer="Olmo2DecoderLayer",
    config_class="Olmo2Config",
    model_class="Olmo2ForCausalLM",
    norm_position="post-branch",
    qk_norm="full",
    mlp_bias=False,
    eps_default=1e-05,
    write=ref.olmo2,
    names=w.post_branch_names,
    logit_error=0.0,
)
# logit test: OLMo 2 with sliding layers; YaRN on the full layers only
OLMO3 = OLMO2.derive(
    "olmo3",
    layer="Olmo3DecoderLayer",
    config_class="Olmo3Config",
    model_class="Olmo3ForCausalLM",
    rope_theta_default=500000.0,
    read=imp._olmo3,
    write=ref.olmo3,
    names=w.post_branch_names,
    logit_error=6.8e-07,
)
# logit test: post-branch norms, per-head QK norm, NoPE full layers
EXAONE4 = OLMO2.derive(
    "exaone4",
    layer="Exaone4DecoderLayer",
    config_class="Exaone4Config",
    model_class="Exaone4ForCausalLM",
    qk_norm="per-head",
    full_layer="global-nope",
    read=imp._exaone4,
    write=ref.exaone4,
    names=w.post_branch_names,
    logit_error=6.5e-07,
)
COHERE = LLAMA.derive(
    "cohere",
    layer="CohereDecoderLayer",
    config_class="CohereConfig",
    model_class="CohereForCausalLM",
    eps_key="layer_norm_eps",
    norm="layernorm",
    mlp_bias=False,
    parallel=True,
    shared_norm_in_parallel=True,
    tied_default=True,
    rope_layout="interleaved",
    read=imp._cohere,
    write=ref.cohere,
    names=w._cohere,
    logit_error=3.9e-07,
)
COHERE2 = COHERE.derive(
    "cohere2",
    layer="Cohere2DecoderLayer",
    config_class="Cohere2Config",
    model_class="Cohere2ForCausalLM",
    default_pattern=("local", "local", "local", "global-nope"),
    full_layer="global-nope",
    write=ref.cohere2,
    logit_error=2.6e-07,
)
NEMOTRON = LLAMA.derive(
    "nemotron",
    layer="NemotronDecoderLayer",
    config_class="NemotronConfig",
    model_class="NemotronForCausalLM",
    eps_key="norm_eps",
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    activation_default="relu2",
    rotary_fraction_default=0.5,
    write=ref.nemotron,
    logit_error=0.0,
)
GEMMA = LLAMA.derive(
    "gemma",
    layer="GemmaDecoderLayer",
    config_class="GemmaConfig",
    model_class="GemmaForCausalLM",
    mlp_bias=False,
    tied_default=True,
    activation_default="gelu_pytorch_tanh",
    read=imp._gemma,
    write=ref.gemma,
    logit_error=2.4e-07,
)
GEMMA2 = GEMMA.derive(
    "gemma2",
    layer="Gemma2DecoderLayer",
    config_class="Gemma2Config",
    model_class="Gemma2ForCausalLM",
    norm_position="double",
    default_pattern=("local", "global"),
    write=ref.gemma2,
    names=w.sandwich_names,
    logit_error=6.8e-07,
    function_fields=("architecture.attention.scale",),
)
GEMMA3_TEXT = GEMMA2.derive(
    "gemma3_text",
    module="gemma3",
    layer="Gemma3DecoderLayer",
    config_class="Gemma3TextConfig",
    model_class="Gemma3ForCausalLM",
    qk_norm="per-head",
    default_pattern=("local", "local", "local", "local", "local", "global"),
    aliases=("gemma3",),
    write=ref.gemma3_text,
    names=w.sandwich_names,
    logit_error=9.7e-07,
)
# logit test: AltUp, LAuReL, gaussian top-k, per-layer embeddings, KV sharing (three
# seeds)
GEMMA3N_TEXT = GEMMA3_TEXT.derive(
    "gemma3n_text",
    module="gemma3n",
    layer="Gemma3nTextDecoderLayer",
    config_class="Gemma3nTextConfig",
    model_class="Gemma3nForCausalLM",
    rope_theta_default=1000000.0,
    default_pattern=("local", "local", "local", "local", "global"),
    read=imp._gemma3n,
    aliases=("gemma3n",),
    write=ref.gemma3n_text,
    extras=frozenset(
        {
            "activation_sparsity",
            "altup",
            "kv_sharing",
            "laurel",
            "per_layer_embeddings",
            "value_norm",
        }
    ),
    names=w._gemma3n,
    logit_error=4e-06,
)
# logit test: the loosest family so far (still under the tolerance): 6.1e-6 with experts
# beside the dense MLP, 4.0e-6 dense (three seeds each); E2B/E4B's per-layer embeddings
# and KV sharing: 5.6e-6, 7.3e-6 with the double-wide MLP (three seeds each)
GEMMA4_TEXT = GEMMA3_TEXT.derive(
    "gemma4_text",
    module="gemma4",
    layer="Gemma4TextDecoderLayer",
    config_class="Gemma4TextConfig",
    model_class="Gemma4ForCausalLM",
    default_pattern=("global",),
    read=imp._gemma4,
    aliases=("gemma4",),
    write=ref.gemma4_text,
    extras=frozenset(
        {
            "dense_beside",
            "global_layers",
            "kv_sharing",
            "layer_scalar",
            "per_layer_embeddings",
            "router_scales",
            "value_norm",
        }
    ),
    names=w._gemma4,
    logit_error=7.3e-06,
    function_fields=("architecture.attention.scale", "architecture.layer_scalar"),
)
# logit test: Griffin's RG-LRU beside local MQA attention, the bfloat16 sqrt(d)
# embedding scale (three seeds: 2.3e-7, 2.3e-7, 3.0e-7)
RECURRENT_GEMMA = GEMMA.derive(
    "recurrent_gemma",
    layer="RecurrentGemmaDecoderLayer",
    config_class="RecurrentGemmaConfig",
    model_class="RecurrentGemmaForCausalLM",
    rotary_fraction_default=0.5,
    read=imp._recurrent_gemma,
    write=ref.recurrent_gemma,
    extras=frozenset({"rg_lru"}),
    names=w._recurrent_gemma,
    logit_error=3.1e-07,
)
# logit test: MLA; softmax shares, groups by their max, routed scale
DEEPSEEK_V2 = LLAMA.derive(
    "deepseek_v2",
    layer="DeepseekV2DecoderLayer",
    config_class="DeepseekV2Config",
    model_class="DeepseekV2ForCausalLM",
    rope_layout="interleaved",
    read=imp._deepseek_v2,
    write=ref.deepseek_v2,
    extras=frozenset({"expert_groups", "routed_scale"}),
    names=w._deepseek,
    logit_error=3e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.n_groups",
        "architecture.mlp.moe.routed_scale",
        "architecture.attention.latent.norm_eps",
    ),
)
# logit test: MLA; sigmoid, correction bias, groups by top-2 sum, scale
DEEPSEEK_V3 = DEEPSEEK_V2.derive(
    "deepseek_v3",
    layer="DeepseekV3DecoderLayer",
    config_class="DeepseekV3Config",
    model_class="DeepseekV3ForCausalLM",
    mlp_bias=False,
    rope_layout="half-split",
    read=imp._deepseek_v3,
    write=ref.deepseek_v3,
    extras=frozenset({"correction_bias", "expert_groups", "routed_scale", "sigmoid_scores"}),
    logit_error=3.2e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.n_groups",
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.routed_scale",
        "architecture.attention.latent.norm_eps",
    ),
)
# logit test: V3 with the lightning indexer (8 of 24 keys), MoE layers too
DEEPSEEK_V32 = DEEPSEEK_V3.derive(
    "deepseek_v32",
    layer="DeepseekV32DecoderLayer",
    config_class="DeepseekV32Config",
    model_class="DeepseekV32ForCausalLM",
    rope_layout="interleaved",
    indexed_layer=True,
    read=imp._deepseek_v32,
    write=ref.deepseek_v32,
    extras=frozenset(
        {"correction_bias", "expert_groups", "routed_scale", "sigmoid_scores", "sparse"}
    ),
    names=w._dsa,
    logit_error=2.9e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.n_groups",
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.routed_scale",
        "architecture.attention.latent.norm_eps",
        "architecture.attention.sparse.indexer_rope_layout",
    ),
)
# logit test: V3.2's DSA, interleaved indexer RoPE, MoE; latent norms at 1e-6
GLM_MOE_DSA = DEEPSEEK_V32.derive(
    "glm_moe_dsa",
    layer="GlmMoeDsaDecoderLayer",
    config_class="GlmMoeDsaConfig",
    model_class="GlmMoeDsaForCausalLM",
    read=imp._glm_moe_dsa,
    write=ref.glm_moe_dsa,
    logit_error=2.1e-07,
)
# logit test: DeepSeek-V3's router on GQA with partial RoPE and QK norm
GLM4_MOE = DEEPSEEK_V3.derive(
    "glm4_moe",
    layer="Glm4MoeDecoderLayer",
    config_class="Glm4MoeConfig",
    model_class="Glm4MoeForCausalLM",
    rotary_fraction_default=0.5,
    eps_default=1e-05,
    read=imp._glm4_moe,
    write=ref.glm4_moe,
    names=w._qwen3_moe,
    logit_error=3.5e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.n_groups",
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.routed_scale",
    ),
)
# logit test: KDA (recurrent form vs transformers' chunks of 64) and NoPE MLA with
# latent norms at 1e-6, V3's router after a dense layer (three token draws)
KIMI_LINEAR = DEEPSEEK_V3.derive(
    "kimi_linear",
    layer="KimiLinearDecoderLayer",
    config_class="KimiLinearConfig",
    model_class="KimiLinearForCausalLM",
    rope_key=None,
    position="none",
    eps_default=1e-05,
    linear_layer="kda",
    read=imp._kimi_linear,
    write=ref.kimi_linear,
    extras=frozenset({"correction_bias", "expert_groups", "kda", "routed_scale", "sigmoid_scores"}),
    names=w._kimi_linear,
    logit_error=3.1e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.n_groups",
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.routed_scale",
        "architecture.attention.latent.norm_eps",
    ),
)
# logit test: LongCat-Flash: shortcut-connected MoE layers, MLA with scaled latents, 6
# routed and 4 zero-computation experts (a random correction bias: 29-53% of the choices
# zero experts; three seeds, three batches each)
LONGCAT_FLASH = DEEPSEEK_V3.derive(
    "longcat_flash",
    layer="LongcatFlashDecoderLayer",
    config_class="LongcatFlashConfig",
    model_class="LongcatFlashForCausalLM",
    rope_theta_default=10000000.0,
    eps_default=1e-05,
    rope_layout="interleaved",
    read=imp._longcat_flash,
    write=ref.longcat_flash,
    extras=frozenset({"correction_bias", "routed_scale", "shortcut_moe", "zero_experts"}),
    names=w._longcat_flash,
    logit_error=3.4e-07,
    function_fields=(
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.normalize_top_k",
        "architecture.mlp.moe.routed_scale",
        "architecture.attention.latent.norm_eps",
        "architecture.attention.latent.lora_scaled",
    ),
)
# logit test: sigmoid scores with a correction bias, full QK norm, partial RoPE
MINIMAX_M2 = QWEN3_MOE.derive(
    "minimax_m2",
    layer="MiniMaxM2DecoderLayer",
    config_class="MiniMaxM2Config",
    model_class="MiniMaxM2ForCausalLM",
    qk_norm="full",
    rope_theta_default=5000000.0,
    read=imp._minimax_m2,
    write=ref.minimax_m2,
    extras=frozenset({"correction_bias", "sigmoid_scores"}),
    names=w._minimax_m2,
    logit_error=2.5e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.score_correction_bias",
    ),
)
# logit test: lightning attention (blocks of 8 in transformers, recurrent here) around
# softmax attention, Mixtral's MoE, every alpha/beta factor off 1 (three token seeds)
MINIMAX = MIXTRAL.derive(
    "minimax",
    layer="MiniMaxDecoderLayer",
    config_class="MiniMaxConfig",
    model_class="MiniMaxForCausalLM",
    norm_position="normed-skip",
    rope_theta_default=1000000.0,
    sliding_everywhere=False,
    linear_layer="lightning",
    read=imp._minimax,
    aliases=("minimax_text_01", "minimax_m1"),
    write=ref.minimax,
    extras=frozenset({"lightning", "skip_multipliers", "sublayer_multipliers"}),
    names=w._minimax,
    logit_error=3.3e-07,
)
GPT_OSS = LLAMA.derive(
    "gpt_oss",
    layer="GptOssDecoderLayer",
    config_class="GptOssConfig",
    model_class="GptOssForCausalLM",
    mlp_bias=False,
    read=imp._gpt_oss,
    write=ref.gpt_oss,
    extras=frozenset({"router_bias", "sinks"}),
    names=w._gpt_oss,
    logit_error=3.5e-07,
)
QWEN3_NEXT = QWEN3_MOE.derive(
    "qwen3_next",
    layer="Qwen3NextDecoderLayer",
    config_class="Qwen3NextConfig",
    model_class="Qwen3NextForCausalLM",
    linear_layer="gated-deltanet",
    read=imp._qwen3_next,
    write=ref.qwen3_next,
    extras=frozenset({"gated_deltanet", "output_gate", "shared_gate"}),
    names=w._qwen3_next,
    logit_error=4.1e-07,
)
QWEN3_5_TEXT = QWEN3_NEXT.derive(
    "qwen3_5_text",
    module="qwen3_5",
    layer="Qwen3_5DecoderLayer",
    config_class="Qwen3_5TextConfig",
    model_class="Qwen3_5ForCausalLM",
    rotary_fraction_default=0.25,
    read=imp._qwen3_5_text,
    aliases=("qwen3_5",),
    write=ref.qwen3_5_text,
    extras=frozenset({"gated_deltanet", "output_gate"}),
    names=w._qwen3_5_text,
    logit_error=3.9e-07,
)
QWEN3_5_MOE_TEXT = QWEN3_5_TEXT.derive(
    "qwen3_5_moe_text",
    module="qwen3_5_moe",
    layer="Qwen3_5MoeDecoderLayer",
    config_class="Qwen3_5MoeTextConfig",
    model_class="Qwen3_5MoeForCausalLM",
    read=imp._qwen3_5_moe_text,
    aliases=("qwen3_5_moe",),
    write=ref.qwen3_5_moe_text,
    extras=frozenset({"gated_deltanet", "output_gate", "shared_gate"}),
    names=w._qwen3_5_moe_text,
    logit_error=3.5e-07,
)
LFM2 = LLAMA.derive(
    "lfm2",
    layer="Lfm2DecoderLayer",
    config_class="Lfm2Config",
    model_class="Lfm2ForCausalLM",
    eps_key="norm_eps",
    qk_norm="per-head",
    mlp_bias=False,
    tied_default=True,
    rope_theta_default=1000000.0,
    eps_default=1e-05,
    conv_layer="short-conv",
    read=imp._lfm2,
    write=ref.lfm2,
    extras=frozenset({"short_conv"}),
    names=w._lfm2,
    logit_error=2.4e-07,
)
# logit test: sigmoid router whose expert bias only chooses, scaled
LFM2_MOE = LFM2.derive(
    "lfm2_moe",
    layer="Lfm2MoeDecoderLayer",
    config_class="Lfm2MoeConfig",
    model_class="Lfm2MoeForCausalLM",
    read=imp._lfm2_moe,
    write=ref.lfm2_moe,
    extras=frozenset({"correction_bias", "routed_scale", "short_conv", "sigmoid_scores"}),
    names=w._lfm2_moe,
    logit_error=2.3e-07,
)
GPTJ = GPT2.derive(
    "gptj",
    layer="GPTJBlock",
    config_class="GPTJConfig",
    model_class="GPTJForCausalLM",
    position="rope",
    fixed_bias=(False, False, True),
    parallel=True,
    shared_norm_in_parallel=True,
    tied_default=False,
    rope_layout="interleaved",
    read=imp._gptj,
    write=ref.gptj,
    names=w._gptj,
    logit_error=3.4e-07,
)
GPT_NEOX = GPT2.derive(
    "gpt_neox",
    layer="GPTNeoXLayer",
    config_class="GPTNeoXConfig",
    model_class="GPTNeoXForCausalLM",
    eps_key="layer_norm_eps",
    rope_key="rope_parameters",
    position="rope",
    fixed_bias=None,
    attention_bias_default=True,
    mlp_bias=True,
    tied_default=False,
    activation_default="gelu",
    d_ff_default_ratio=None,
    rotary_fraction_default=0.25,
    read=imp._gpt_neox,
    write=ref.gpt_neox,
    names=w._gpt_neox,
    logit_error=2.7e-07,
)
PHI = GPTJ.derive(
    "phi",
    layer="PhiDecoderLayer",
    config_class="PhiConfig",
    model_class="PhiForCausalLM",
    eps_key="layer_norm_eps",
    rope_key="rope_parameters",
    fixed_bias=(True, True, True),
    d_ff_default_ratio=None,
    rotary_fraction_default=0.5,
    rope_layout="half-split",
    read=imp._phi,
    write=ref.phi,
    names=w._phi,
    logit_error=2.5e-07,
)
OPT = GPT2.derive(
    "opt",
    layer="OPTDecoderLayer",
    config_class="OPTConfig",
    model_class="OPTForCausalLM",
    eps_key=None,
    fixed_bias=None,
    activation_default="relu",
    d_ff_default_ratio=None,
    read=imp._opt,
    write=ref.opt,
    names=w._opt,
    logit_error=0.0,
)
FALCON = GPT_NEOX.derive(
    "falcon",
    layer="FalconDecoderLayer",
    config_class="FalconConfig",
    model_class="FalconForCausalLM",
    eps_key="layer_norm_epsilon",
    attention_bias_default=False,
    mlp_bias=False,
    tied_default=True,
    d_ff_default_ratio=4,
    rotary_fraction_default=None,
    read=imp._falcon,
    write=ref.falcon,
    names=w._falcon,
    logit_error=2.4e-07,
)
MAMBA2 = LLAMA.derive(
    "mamba2",
    layer="Mamba2Block",
    config_class="Mamba2Config",
    model_class="Mamba2ForCausalLM",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    mlp_bias=False,
    steps=(imp._mamba2,),
    write=ref.mamba2,
    extras=frozenset({"mamba2"}),
    names=w._mamba2,
    logit_error=4.7e-07,
)
# logit test: Mamba-1's selective scan, recurrent form (three seeds each)
MAMBA = MAMBA2.derive(
    "mamba",
    layer="MambaBlock",
    config_class="MambaConfig",
    model_class="MambaForCausalLM",
    eps_default=1e-05,
    steps=(imp._mamba,),
    write=ref.mamba,
    extras=frozenset({"mamba"}),
    names=w._mamba,
    logit_error=3e-07,
)
# logit test: parameter-free RMSNorms on dt, B, C
FALCON_MAMBA = MAMBA.derive(
    "falcon_mamba",
    layer="FalconMambaBlock",
    config_class="FalconMambaConfig",
    model_class="FalconMambaForCausalLM",
    steps=(imp._falcon_mamba,),
    write=ref.falcon_mamba,
    logit_error=2.2e-07,
    function_fields=("architecture.mixers.mamba.inner_norm_eps",),
)
BAMBA = LLAMA.derive(
    "bamba",
    layer="BambaDecoderLayer",
    config_class="BambaConfig",
    model_class="BambaForCausalLM",
    read=imp._bamba,
    write=ref.bamba,
    extras=frozenset({"mamba2"}),
    names=w._bamba,
    logit_error=4.4e-07,
)
# logit test: Mamba-2, attention and MLP layers (M-M*-); MoE layers (ME*E-) too
NEMOTRON_H = MAMBA2.derive(
    "nemotron_h",
    layer="NemotronHBlock",
    config_class="NemotronHConfig",
    model_class="NemotronHForCausalLM",
    steps=(imp._nemotron_h,),
    write=ref.nemotron_h,
    extras=frozenset(
        {"correction_bias", "expert_groups", "mamba2", "routed_scale", "sigmoid_scores"}
    ),
    names=w._nemotron_h,
    logit_error=3.5e-07,
    function_fields=(
        "architecture.mlp.moe.score_function",
        "architecture.mlp.moe.score_correction_bias",
        "architecture.mlp.moe.routed_scale",
    ),
)
# logit test: attention beside Mamba-2, every muP factor; three mixer norms
FALCON_H1 = BAMBA.derive(
    "falcon_h1",
    layer="FalconH1DecoderLayer",
    config_class="FalconH1Config",
    model_class="FalconH1ForCausalLM",
    read=imp._falcon_h1,
    write=ref.falcon_h1,
    extras=frozenset({"mamba2_norm", "parallel_mamba2", "sublayer_multipliers"}),
    names=w._falcon_h1,
    logit_error=4.7e-07,
    function_fields=(
        "architecture.attention.scale",
        "architecture.attention.input_multiplier",
        "architecture.attention.output_multiplier",
        "architecture.mlp.gate_multiplier",
        "architecture.mlp.output_multiplier",
        "architecture.mixers.mamba2.norm",
        "architecture.mixers.mamba2.input_multiplier",
        "architecture.mixers.mamba2.projection_multipliers",
        "architecture.mixers.mamba2.output_multiplier",
    ),
)
# logit test: Mamba-2 and NoPE attention, experts and a shared MLP
GRANITEMOEHYBRID = GRANITEMOE.derive(
    "granitemoehybrid",
    layer="GraniteMoeHybridDecoderLayer",
    config_class="GraniteMoeHybridConfig",
    model_class="GraniteMoeHybridForCausalLM",
    linear_layer="mamba2",
    type_aliases=(("mamba", "linear_attention"), ("attention", "full_attention")),
    read=imp._granitemoehybrid,
    write=ref.granitemoehybrid,
    extras=frozenset({"mamba2", "residual_multiplier"}),
    names=w._granitemoehybrid,
    logit_error=2.6e-07,
)
# logit test: scaled dt/B/C norms; attention without positions; unnormalized top-k
JAMBA = MIXTRAL.derive(
    "jamba",
    layer="JambaAttentionDecoderLayer",
    config_class="JambaConfig",
    model_class="JambaForCausalLM",
    rope_key=None,
    position="none",
    eps_default=None,
    sliding_everywhere=False,
    read=imp._jamba,
    write=ref.jamba,
    extras=frozenset({"mamba"}),
    names=w._jamba,
    logit_error=3.2e-07,
    function_fields=("architecture.mixers.mamba.inner_norm_eps",),
)
# logit test: Mamba-2 layers with two weight-shared blocks (A, B, A) over [x,
# embeddings], q/k/v and gate/up adapters, RoPE, the dt floor active, weights at 5x the
# default init (three seeds, three batches each; 4.6e-7 at the default init)
ZAMBA2 = MAMBA2.derive(
    "zamba2",
    layer="Zamba2HybridLayer",
    config_class="Zamba2Config",
    model_class="Zamba2ForCausalLM",
    eps_key="rms_norm_eps",
    rope_key="rope_parameters",
    tied_default=True,
    activation_default="gelu",
    eps_default=1e-05,
    steps=(imp._zamba2,),
    write=ref.zamba2,
    extras=frozenset({"mamba2", "shared_blocks", "time_step_floor"}),
    names=w._zamba2,
    logit_error=1.4e-06,
    function_fields=("architecture.attention.scale", "architecture.mixers.mamba2.time_step_floor"),
)

# Families archdb compares with but does not import: their writers check the card's
# choices themselves (the fixed-choice fields above are not read for them).
OPENAI_GPT = FamilySpec(
    "openai-gpt",
    module="openai",
    layer="Block",
    config_class="OpenAIGPTConfig",
    model_class="OpenAIGPTLMHeadModel",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    imports=False,
    write=ref.openai_gpt,
)
# logit test: encoder-decoder, model(input_ids, decoder_input_ids): T5 1.0 (ReLU, tied
# head read at d_model ** -0.5) exact to the bit; 1.1 (gated GELU, untied head) 2.9e-7
T5 = FamilySpec(
    "t5",
    layer="T5Block",
    config_class="T5Config",
    model_class="T5ForConditionalGeneration",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    imports=False,
    write=ref.t5,
    names=w._t5,
    logit_error=2.9e-07,
    function_fields=("architecture.attention.scale",),
)
LLAMA4_TEXT = FamilySpec(
    "llama4_text",
    module="llama4",
    layer="Llama4TextDecoderLayer",
    config_class="Llama4TextConfig",
    model_class="Llama4ForCausalLM",
    imports=False,
    write=ref.llama4_text,
)
CHAMELEON = FamilySpec(
    "chameleon",
    layer="ChameleonDecoderLayer",
    config_class="ChameleonConfig",
    model_class="ChameleonForConditionalGeneration",
    imports=False,
    write=ref.chameleon,
    decoder_only_of="vqmodel",
)

SPECS: dict[str, FamilySpec] = {
    s.model_type: s for s in globals().values() if isinstance(s, FamilySpec)
}
# model_types read as another (multimodal wrappers, remote code) -> that family
ALIASES: dict[str, str] = {a: s.model_type for s in SPECS.values() for a in s.aliases}

# the model classes transformers names after a decoder layer's prefix (LlamaDecoderLayer:
# LlamaForCausalLM, LlamaModel); a class name matches a family only with one of these
_MODEL_CLASS_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "Model")


def resolve(
    model_type: str, classes: list[str] | tuple[str, ...] = ()
) -> tuple[str, str | None] | None:
    """The family of a config's ``model_type`` (through the aliases), or else of the model
    class its ``architectures`` name (Kimi K2's custom ``kimi_k2`` is a
    ``DeepseekV3ForCausalLM``), with how it was recognised; None when no family matches."""
    found = ALIASES.get(model_type, model_type)
    if found in SPECS:
        return found, None
    for name in classes:
        for spec in SPECS.values():
            prefix = re.sub(r"(DecoderLayer|Layer|Block)$", "", spec.layer)
            if name.startswith(prefix) and name[len(prefix) :] in _MODEL_CLASS_SUFFIXES:
                return spec.model_type, (
                    f"the config's model_type {model_type!r} is custom, its architectures "
                    f"name {name}"
                )
    return None


# --- routing a card to its family --------------------------------------------------------


def model_type_of(card: Card) -> str | None:
    """The transformers family of a card: the one its config source declares
    (``Source.model_type``, and the model class it names), else, for cards whose sources
    do not state it yet, the catalogue family's (``_BY_FAMILY``); None when transformers
    has no family for it."""
    for source in card.sources:
        if source.model_type is not None:
            found = resolve(source.model_type, [source.model_class] if source.model_class else [])
            return found[0] if found is not None else None
    model_type = _BY_FAMILY.get(card.family)
    if model_type is not None and card.architecture.mlp.moe is not None:
        model_type = _MOE_OF.get(model_type, model_type)
    return model_type


# Cards whose sources do not yet state their config's model_type: catalogue family -> the
# transformers model type that implements it (GPT-3 under GPT-2: its paper reuses GPT-2's
# architecture). A card leaves this table when its config source states its model_type.
_BY_FAMILY: dict[str, str] = {
    "gpt-1": "openai-gpt",
    "gpt-2": "gpt2",
    "gpt-3": "gpt2",
    "gpt-j": "gptj",
    "gpt-neox": "gpt_neox",
    "pythia": "gpt_neox",
    "opt": "opt",
    "llama": "llama",
    "llama-2": "llama",
    "llama-3": "llama",
    "llama-3.1": "llama",
    "llama-3.2": "llama",
    "llama-3.3": "llama",
    "llama-4": "llama4_text",
    "mistral": "mistral",
    "mistral-nemo": "mistral",
    "mixtral": "mixtral",
    "phi-3": "phi3",
    "phi-4": "phi3",
    "smollm2": "llama",
    "smollm3": "smollm3",
    "ernie-4.5": "ernie4_5",
    "exaone-4": "exaone4",
    "seed-oss": "seed_oss",
    "qwen2": "qwen2",
    "qwen2.5": "qwen2",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma-2": "gemma2",
    "gemma-3": "gemma3_text",
    "gemma-4": "gemma4_text",
    "gemma-3n": "gemma3n_text",
    "olmo": "olmo",
    "olmo-2": "olmo2",
    "olmo-3": "olmo3",
    "falcon": "falcon",
    "falcon-2": "falcon",
    "command-r": "cohere",
    "command-r-plus": "cohere",
    "command-a": "cohere2",
    "nemotron-4": "nemotron",
    "deepseek-v2": "deepseek_v2",
    "deepseek-v3": "deepseek_v3",
    "minimax-m2": "minimax_m2",
    "kimi-k2": "deepseek_v3",  # config.json: model_type kimi_k2, DeepseekV3ForCausalLM
    "deepseek-v3.2": "deepseek_v32",
    "glm-5": "glm_moe_dsa",
    "t5": "t5",
    "t5-v1.1": "t5",
    "phi-2": "phi",
    "phi-1.5": "phi",
    "chameleon": "chameleon",
    "mamba-2": "mamba2",
    "mamba2": "mamba2",  # the catalogue's Mamba-2 cards
    "bamba": "bamba",
    "mamba": "mamba",
    "falcon-mamba": "falcon_mamba",
    "jamba": "jamba",
    "jamba-1.5": "jamba",
    "gpt-oss": "gpt_oss",
    "apertus": "apertus",
    "qwen3-next": "qwen3_next",
    "granite-3.0": "granite",
    "granite-3.1": "granite",
    "granite-3.3": "granite",
    "granite-4.1": "granite",
    "lfm2": "lfm2",
    "lfm2.5": "lfm2",
    "nemotron-h": "nemotron_h",
    "nemotron-3": "nemotron_h",
    "qwen3.5": "qwen3_5_text",
    "qwen3.6": "qwen3_5_text",  # Qwen3.6's configs are model_type qwen3_5 / qwen3_5_moe
    "kimi-linear": "kimi_linear",
    "minimax-01": "minimax",
}
_BY_FAMILY |= {"recurrentgemma": "recurrent_gemma", "griffin": "recurrent_gemma"}
_BY_FAMILY["zamba2"] = "zamba2"
_BY_FAMILY["longcat-flash"] = "longcat_flash"
_MOE_OF: dict[str, str] = {
    "qwen3": "qwen3_moe",
    "granite": "granitemoe",
    "lfm2": "lfm2_moe",
    "qwen3_5_text": "qwen3_5_moe_text",
}
_MOE_OF["ernie4_5"] = "ernie4_5_moe"
_BY_FAMILY["hunyuan"] = "hunyuan_v1_dense"
_MOE_OF["hunyuan_v1_dense"] = "hunyuan_v1_moe"


# the families whose tiny checkpoints archdb reproduces, with the measured error (a view)
LOGIT_EXACT: dict[str, float] = {
    m: s.logit_error for m, s in SPECS.items() if s.logit_error is not None
}
