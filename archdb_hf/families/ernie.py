"""ERNIE 4.5."""

from __future__ import annotations

from archdb.schema import (
    Architecture,
    LayerKind,
    RopeLayout,
    RouterScore,
)
from archdb_hf.draft import Draft, HFImportError
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import (
    base_config,
    need_dense,
    need_llama_like,
    need_pattern,
    require,
    rope_config,
)
from archdb_hf.families.llama import LLAMA
from archdb_hf.tensors import Names, Source, qwen3_moe_names

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_ernie4_5(d: Draft) -> None:
    """ERNIE 4.5: use_bias puts a bias on q, k, v, o and the MLP (not the head)."""
    uses_bias = d.read("use_bias", default=False)  # Ernie4_5Config's default
    for part in ("qkv", "attn_out", "mlp"):
        d.set(f"architecture.bias.{part}", uses_bias, d.origin_of("use_bias"))


def _read_ernie4_5_moe(d: Draft) -> None:
    """ERNIE 4.5 MoE: experts (and shared experts as one MLP) on the layers from
    moe_layer_start_index to moe_layer_end_index, every moe_layer_interval-th; softmax
    scores, the correction bias choosing, the chosen renormalized."""
    if d.read("use_bias", default=False):
        raise HFImportError(
            "use_bias is true: biased dense and shared MLPs beside unbiased experts have no "
            "card field"
        )
    _read_ernie4_5(d)
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


# --- card -> config (the reference) ------------------------------------------------------


def ernie4_5(a: Architecture) -> dict:
    """Llama whose one use_bias covers q, k, v, o and the MLP; RoPE on interleaved pairs."""
    need_llama_like(a)
    need_dense(a)
    need_pattern(a, LayerKind.GLOBAL)
    uses_bias = a.bias.qkv
    ref.need_bias(a, uses_bias, uses_bias, uses_bias)
    require(a.position.rope_layout is not RopeLayout.HALF_SPLIT, "RoPE on interleaved pairs")
    return base_config(a) | rope_config(a) | {"use_bias": uses_bias}


def ernie4_5_moe(a: Architecture) -> dict:
    """ERNIE 4.5's dense layers then experts every k-th layer (the shared experts one MLP),
    softmax scores with a correction bias; no biases (use_bias false)."""
    need_llama_like(a)
    need_pattern(a, LayerKind.GLOBAL)
    ref.need_bias(a, False, False, False)
    require(a.position.rope_layout is not RopeLayout.HALF_SPLIT, "RoPE on interleaved pairs")
    moe = a.mlp.moe
    require(moe is not None, "experts (mlp.moe)")
    require(moe.score_function is not RouterScore.SIGMOID, "mlp.moe.score_function softmax")
    require(moe.normalize_top_k is not False, "the chosen scores renormalized")
    require(
        moe.first_dense_layers % moe.layer_period == 0,
        "the first MoE layer a multiple of layer_period (moe_layer_interval) from 0",
    )
    require(
        moe.shared_d_ff == (a.mlp.d_ff * moe.n_shared if moe.n_shared else None),
        "shared experts as wide as n_shared routed experts",
    )
    return (
        base_config(a)
        | rope_config(a)
        | {
            "intermediate_size": moe.dense_d_ff or a.mlp.d_ff,
            "moe_intermediate_size": a.mlp.d_ff,
            "moe_num_experts": moe.n_experts,
            "moe_k": moe.n_active,
            "moe_num_shared_experts": moe.n_shared,
            "moe_layer_start_index": moe.first_dense_layers,
            "moe_layer_end_index": a.n_layers - 1,
            "moe_layer_interval": moe.layer_period,
            "use_bias": False,
        }
    )


# --- checkpoint names (loading weights) --------------------------------------------------


def _ernie4_5_moe_names() -> Names:
    """Qwen3-MoE's names; the correction bias a (1, experts) tensor in mlp.moe_statics."""
    names = qwen3_moe_names()
    bias = Source("mlp.moe_statics.e_score_correction_bias", flatten=True)
    names.layer["mlp.sublayer.router.correction_bias"] = bias
    return names


# --- the families ----------------------------------------------------------------------

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
    read=_read_ernie4_5,
    write=ernie4_5,
    logit_error=2.5e-07,
)
# logit test: softmax scores with a correction bias, shared experts
ERNIE4_5_MOE = ERNIE4_5.derive(
    "ernie4_5_moe",
    layer="Ernie4_5_MoeDecoderLayer",
    config_class="Ernie4_5_MoeConfig",
    model_class="Ernie4_5_MoeForCausalLM",
    read=_read_ernie4_5_moe,
    write=ernie4_5_moe,
    extras=frozenset({"correction_bias"}),
    names=_ernie4_5_moe_names,
    logit_error=2.2e-07,
    function_fields=("architecture.mlp.moe.score_correction_bias",),
)
