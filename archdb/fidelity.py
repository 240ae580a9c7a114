"""How far a card's build is verified against a reference implementation (transformers).

Three levels, from strongest:

- ``logit-exact``: the card's transformers family is one whose tiny random checkpoints
  archdb loads and reproduces to ``LOGIT_TOLERANCE`` relative logit error
  (tests/test_fidelity.py), and the card records every choice that changes outputs but
  not counts (``FUNCTION_FIELDS``), so its build computes the released function;
- ``count-exact``: transformers' family code builds the card with archdb's exact
  parameter count (tests/test_params_vs_hf.py), but outputs are not verified for it;
- ``not comparable``: no transformers family represents the card, with the reason.

Pure Python, no torch or transformers: ``archdb show`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from archdb.schema import Activation, Card, PositionType, RopeScalingType, get_path

LOGIT_TOLERANCE = 1e-5  # max |archdb - transformers| / max |transformers| over the logits

# transformers model_types reproduced logit for logit (each one a case in test_fidelity.py),
# with the largest relative error measured on its tiny checkpoint (float32, CPU, three
# batches of 2 x 24 tokens, windows of 8), rounded up
LOGIT_EXACT: dict[str, float] = {
    "llama": 0.0,
    "mistral": 3.2e-7,
    "qwen2": 0.0,
    "qwen3": 3.7e-7,
    "gemma": 2.4e-7,
    "gemma2": 6.8e-7,
    "gemma3_text": 9.7e-7,
    "olmo2": 0.0,
    "phi3": 3.0e-7,
    "gpt2": 2.9e-7,
    "gpt_neox": 2.7e-7,
    "mixtral": 3.3e-7,
    "qwen3_moe": 2.7e-7,
    "olmo": 0.0,
    "cohere": 3.9e-7,
    "phi": 2.5e-7,
    "gptj": 3.4e-7,
    "falcon": 2.4e-7,
    "opt": 0.0,
    "nemotron": 0.0,
    "cohere2": 2.6e-7,
    "gpt_oss": 3.5e-7,
    "apertus": 5.5e-7,
    # the loosest family so far (still under the tolerance): 6.1e-6 with experts beside
    # the dense MLP, 4.0e-6 dense (three seeds each); E2B/E4B's per-layer embeddings and
    # KV sharing: 5.6e-6, 7.3e-6 with the double-wide MLP (three seeds each)
    "gemma4_text": 7.3e-6,
    # AltUp, LAuReL, gaussian top-k, per-layer embeddings, KV sharing (three seeds)
    "gemma3n_text": 4.0e-6,
    "granite": 7.1e-8,
    "granitemoe": 1.4e-7,
    "deepseek_v2": 3.0e-7,  # MLA; softmax shares, groups by their max, routed scale
    "deepseek_v3": 3.2e-7,  # MLA; sigmoid, correction bias, groups by top-2 sum, scale
    "deepseek_v32": 2.9e-7,  # V3 with the lightning indexer (8 of 24 keys), MoE layers too
    "glm_moe_dsa": 2.1e-7,  # V3.2's DSA, interleaved indexer RoPE, MoE; latent norms at 1e-6
    "falcon_h1": 4.7e-7,  # attention beside Mamba-2, every muP factor; three mixer norms
    "granitemoehybrid": 2.6e-7,  # Mamba-2 and NoPE attention, experts and a shared MLP
    "glm4_moe": 3.5e-7,  # DeepSeek-V3's router on GQA with partial RoPE and QK norm
    "lfm2": 2.4e-7,
    "lfm2_moe": 2.3e-7,  # sigmoid router whose expert bias only chooses, scaled
    "nemotron_h": 3.5e-7,  # Mamba-2, attention and MLP layers (M-M*-); MoE layers (ME*E-) too
    # Mamba-1's selective scan, recurrent form (three seeds each)
    "mamba": 3.0e-7,
    "falcon_mamba": 2.2e-7,  # parameter-free RMSNorms on dt, B, C
    "jamba": 3.2e-7,  # scaled dt/B/C norms; attention without positions; unnormalized top-k
    "smollm3": 0.0,  # Llama with NoPE layers
    "olmo3": 6.8e-7,  # OLMo 2 with sliding layers; YaRN on the full layers only
    "seed_oss": 3.2e-7,  # Llama with q/k/v and o bias flags of their own
    "exaone4": 6.5e-7,  # post-branch norms, per-head QK norm, NoPE full layers
    "ernie4_5": 2.5e-7,  # Llama with one bias flag and RoPE on interleaved pairs
    "ernie4_5_moe": 2.2e-7,  # softmax scores with a correction bias, shared experts
    "minimax_m2": 2.5e-7,  # sigmoid scores with a correction bias, full QK norm, partial RoPE
    "hunyuan_v1_dense": 0.0,  # Llama with the per-head QK norm after RoPE, ntk-alpha RoPE
    "hunyuan_v1_moe": 2.3e-7,  # and softmax top-k renormalized beside a shared MLP
    "mamba2": 4.7e-7,
    "bamba": 4.4e-7,
    "qwen3_next": 4.1e-7,
    "qwen3_5_text": 3.9e-7,
    "qwen3_5_moe_text": 3.5e-7,
    # KDA (recurrent form vs transformers' chunks of 64) and NoPE MLA with latent norms at
    # 1e-6, V3's router after a dense layer (three token draws)
    "kimi_linear": 3.1e-7,
    # lightning attention (blocks of 8 in transformers, recurrent here) around softmax
    # attention, Mixtral's MoE, every alpha/beta factor off 1 (three token seeds)
    "minimax": 3.3e-7,
    # encoder-decoder, model(input_ids, decoder_input_ids): T5 1.0 (ReLU, tied head read at
    # d_model ** -0.5) exact to the bit; 1.1 (gated GELU, untied head) 2.9e-7
    "t5": 2.9e-7,
}
# Griffin's RG-LRU beside local MQA attention, the bfloat16 sqrt(d) embedding scale (three
# seeds: 2.3e-7, 2.3e-7, 3.0e-7)
LOGIT_EXACT["recurrent_gemma"] = 3.1e-7
# Mamba-2 layers with two weight-shared blocks (A, B, A) over [x, embeddings], q/k/v and
# gate/up adapters, RoPE, the dt floor active, weights at 5x the default init (three
# seeds, three batches each; 4.6e-7 at the default init)
LOGIT_EXACT["zamba2"] = 1.4e-6
# LongCat-Flash: shortcut-connected MoE layers, MLA with scaled latents, 6 routed and 4
# zero-computation experts (a random correction bias: 29-53% of the choices zero experts;
# three seeds, three batches each)
LOGIT_EXACT["longcat_flash"] = 3.4e-7

# logit-exact model_types whose MoE routing archdb does not build: their MoE cards stay
# count-exact, with what is missing
MOE_NOT_BUILT: dict[str, str] = {}

# model_types whose tiny checkpoints are logit-exact on the parts archdb implements, with
# what is not: their cards stay count-exact
PARTIAL: dict[str, tuple[float, str]] = {}

# Card fields that change outputs but not counts; null means "not recorded"
FUNCTION_FIELDS = (
    "architecture.norm.eps",
    "architecture.norm.unit_offset",
    "architecture.embedding_multiplier",
    "architecture.logit_scale",
)
# ... and per family, fields whose null default is not that family's function
FAMILY_FIELDS: dict[str, tuple[str, ...]] = {
    "gemma2": ("architecture.attention.scale",),  # query_pre_attn_scalar ** -0.5
    "gemma3_text": ("architecture.attention.scale",),
    "gemma4_text": ("architecture.attention.scale", "architecture.layer_scalar"),
    "gemma3n_text": ("architecture.attention.scale",),
    # attention_multiplier replaces 1/sqrt(d_head); each sublayer's output is scaled
    "granite": ("architecture.attention.scale", "architecture.residual_multiplier"),
    "granitemoe": ("architecture.attention.scale", "architecture.residual_multiplier"),
    "granitemoehybrid": ("architecture.attention.scale", "architecture.residual_multiplier"),
    # routers other than Mixtral's softmax top-k (archdb.plan.mlp.RouterSpec)
    "deepseek_v2": ("architecture.mlp.moe.score_function", "architecture.mlp.moe.n_groups",
                    "architecture.mlp.moe.routed_scale"),
    "deepseek_v3": ("architecture.mlp.moe.score_function", "architecture.mlp.moe.n_groups",
                    "architecture.mlp.moe.score_correction_bias",
                    "architecture.mlp.moe.routed_scale"),
}  # fmt: skip
FAMILY_FIELDS["glm4_moe"] = FAMILY_FIELDS["deepseek_v3"]
# transformers' MLA latent norms keep 1e-6 whatever rms_norm_eps says
FAMILY_FIELDS["deepseek_v2"] += ("architecture.attention.latent.norm_eps",)
FAMILY_FIELDS["deepseek_v3"] += ("architecture.attention.latent.norm_eps",)
FAMILY_FIELDS["deepseek_v32"] = FAMILY_FIELDS["glm_moe_dsa"] = (
    *FAMILY_FIELDS["deepseek_v3"],
    "architecture.attention.sparse.indexer_rope_layout",
)
# key_multiplier/sqrt(d_head) as attention.scale, and the factors on each sublayer
FAMILY_FIELDS["falcon_h1"] = tuple(
    f"architecture.{p}"
    for p in (
        "attention.scale",
        "attention.input_multiplier",
        "attention.output_multiplier",
        "mlp.gate_multiplier",
        "mlp.output_multiplier",
        "mixers.mamba2.norm",
        "mixers.mamba2.input_multiplier",
        "mixers.mamba2.projection_multipliers",
        "mixers.mamba2.output_multiplier",
    )
)
# T5 folds 1/sqrt(d_kv) into its initialization: the scores are not rescaled (scale 1)
FAMILY_FIELDS["t5"] = ("architecture.attention.scale",)
# Nemotron 3's MoE layers route as DeepSeek-V3 (its dense Nemotron-H cards have no router)
FAMILY_FIELDS["nemotron_h"] = (
    "architecture.mlp.moe.score_function",
    "architecture.mlp.moe.score_correction_bias",
    "architecture.mlp.moe.routed_scale",
)
# the epsilon of the dt/B/C norms (Falcon Mamba's mixer_rms_eps, Jamba's rms_norm_eps)
FAMILY_FIELDS["falcon_mamba"] = FAMILY_FIELDS["jamba"] = (
    "architecture.mixers.mamba.inner_norm_eps",
)
FAMILY_FIELDS["ernie4_5_moe"] = ("architecture.mlp.moe.score_correction_bias",)
# scores scaled by (head_dim / 2) ** -0.5; dt clamped below at time_step_min
FAMILY_FIELDS["zamba2"] = (
    "architecture.attention.scale",
    "architecture.mixers.mamba2.time_step_floor",
)
# sigmoid scores with a correction bias; no groups, no routed scale (their nulls are right)
FAMILY_FIELDS["minimax_m2"] = (
    "architecture.mlp.moe.score_function",
    "architecture.mlp.moe.score_correction_bias",
)
# V3's router; MLA's latent norms at transformers' fixed 1e-6 (not the card's norm.eps)
FAMILY_FIELDS["kimi_linear"] = (
    *FAMILY_FIELDS["deepseek_v3"],
    "architecture.attention.latent.norm_eps",
)
# LongCat-Flash: a correction bias, unnormalized weights times routed_scaling_factor, MLA's
# latent norms at 1e-6 and its latents scaled
FAMILY_FIELDS["longcat_flash"] = tuple(
    f"architecture.{p}"
    for p in (
        "mlp.moe.score_correction_bias",
        "mlp.moe.normalize_top_k",
        "mlp.moe.routed_scale",
        "attention.latent.norm_eps",
        "attention.latent.lora_scaled",
    )
)
# Hunyuan norms the rotated queries and keys
FAMILY_FIELDS["hunyuan_v1_dense"] = FAMILY_FIELDS["hunyuan_v1_moe"] = (
    "architecture.attention.qk_norm_after_rope",
)


@dataclass(frozen=True)
class Fidelity:
    level: str  # "logit-exact", "count-exact", "not comparable"
    why: str

    def __str__(self) -> str:
        return f"{self.level} ({self.why})" if self.why else self.level


def function_fields(card: Card, model_type: str | None = None) -> list[str]:
    """The output-changing fields this card needs recorded (RoPE and GELU where used)."""
    arch = card.architecture
    fields = list(FUNCTION_FIELDS) + list(FAMILY_FIELDS.get(model_type or "", ()))
    if arch.mlp.moe is None:  # a family's router fields bind its MoE cards only
        fields = [p for p in fields if not p.startswith("architecture.mlp.moe.")]
    if arch.position.type is PositionType.ROPE:
        fields.append("architecture.position.rope_layout")
    if arch.mlp.activation in (Activation.GELU, Activation.GEGLU):
        fields.append("architecture.mlp.gelu_approximation")
    if arch.mlp.moe is not None:
        fields.append("architecture.mlp.moe.normalize_top_k")
    if arch.mlp.activation is Activation.CLAMPED_SWIGLU:
        fields += ["architecture.mlp.swiglu_limit", "architecture.mlp.swiglu_alpha"]
    scaling = arch.position.rope_scaling
    if scaling is not None and scaling.type is RopeScalingType.YARN:
        fields.append("architecture.position.rope_scaling.truncate")
    return fields


def fidelity(card: Card) -> Fidelity:
    """Whether the card's build is verified against transformers, and how."""
    from archdb.measure.hf_reference import REFERENCES, NotRepresentable, convert, model_type_for
    from archdb.plan.layout import fill_unknowns

    model_type = model_type_for(card.family, card.architecture)
    if model_type is None or model_type not in REFERENCES:
        return Fidelity("not comparable", "no transformers family implements this card")
    try:
        convert(fill_unknowns(card.architecture)[0], model_type)
    except NotRepresentable as exc:
        return Fidelity("not comparable", f"transformers' {model_type} cannot build it: {exc}")
    if model_type in PARTIAL:
        _, missing_piece = PARTIAL[model_type]
        return Fidelity(
            "count-exact", f"{model_type}: latent attention logit-exact; not built: {missing_piece}"
        )
    if model_type not in LOGIT_EXACT:
        return Fidelity("count-exact", f"{model_type}: outputs not verified for this family")
    if model_type in MOE_NOT_BUILT and card.architecture.mlp.moe is not None:
        why = MOE_NOT_BUILT[model_type]
        return Fidelity("count-exact", f"{model_type}: logit-exact without MoE; not built: {why}")
    missing = [p for p in function_fields(card, model_type) if get_path(card, p) is None]
    if missing:
        shown = ", ".join(p.removeprefix("architecture.") for p in missing)
        return Fidelity("count-exact", f"{model_type} is logit-exact; card lacks {shown}")
    return Fidelity("logit-exact", f"{model_type}, relative error < {LOGIT_TOLERANCE:g}")
