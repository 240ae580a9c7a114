"""ERNIE 4.5."""

from __future__ import annotations

from functools import partial

from archdb.schema import Architecture
from archdb_hf.draft import Draft, HFImportError, read_bias_flag
from archdb_hf.families.card_to_config import moe_of
from archdb_hf.families.llama import LLAMA, ROPE
from archdb_hf.keymap import DENSE_D_FF, Key, one_bias_flag, require
from archdb_hf.tensors import Names, Source, qwen3_moe_names

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_ernie4_5_moe(d: Draft) -> None:
    """ERNIE 4.5 MoE: experts (and shared experts as one MLP) on the layers from
    moe_layer_start_index to moe_layer_end_index, every moe_layer_interval-th; softmax
    scores, the correction bias choosing, the chosen renormalized."""
    if d.read("use_bias", default=False):
        raise HFImportError(
            "use_bias is true: biased dense and shared MLPs beside unbiased experts have no "
            "card field"
        )
    read_bias_flag(d, "use_bias", False)
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
    n_shared = d.value("architecture.mlp.moe.n_shared")
    d.set("architecture.mlp.moe.first_dense_layers", first_dense, "config")
    d.set("architecture.mlp.moe.layer_period", interval, "config")
    expert_d_ff = d.value("architecture.mlp.d_ff")
    d.set(
        "architecture.mlp.moe.shared_d_ff", expert_d_ff * n_shared if n_shared else None, "config"
    )
    if first_dense or interval > 1:
        d.set("architecture.mlp.moe.dense_d_ff", d.read("intermediate_size"), "config")
    d.read("moe_norm_min")  # the floor of the renormalizing sum (1e-12): no card field


# --- card -> config (the reference): what no key writes ---------------------------------


def _ernie4_5_moe(a: Architecture) -> dict:
    moe = moe_of(a)
    require(
        moe.first_dense_layers % moe.layer_period == 0,
        "the first MoE layer a multiple of layer_period (moe_layer_interval) from 0",
    )
    require(
        moe.shared_d_ff == (a.mlp.d_ff * moe.n_shared if moe.n_shared else None),
        "shared experts as wide as n_shared routed experts",
    )
    return {}


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
    classes="Ernie4_5",
    mlp_bias=False,
    tied_default=True,
    rope_theta_default=500000.0,
    eps_default=1e-05,
    rope_layout="interleaved",
    keys=(
        Key("attention_bias"),
        Key("mlp_bias"),
        ROPE,
        Key("use_bias", "bias.qkv", out=one_bias_flag, read=False),
    ),
    free=("bias.attn_out", "bias.mlp"),
    # use_bias: a bias on q, k, v, o and the MLP (not the head); false by default
    read=partial(read_bias_flag, key="use_bias", default=False),
    logit_error=2.5e-07,
)
# logit test: ERNIE 4.5's dense layers then experts every k-th layer (the shared experts
# one MLP), softmax scores with a correction bias; no biases (use_bias false)
ERNIE4_5_MOE = ERNIE4_5.derive(
    "ernie4_5_moe",
    classes="Ernie4_5_Moe",
    fixed_bias=(False, False, False),
    keys=(
        Key("use_bias", out=lambda a: False, read=False),
        Key("moe_intermediate_size", "mlp.d_ff", default=1536),  # Ernie4_5_MoeConfig's defaults
        DENSE_D_FF,
        Key("moe_num_experts", "mlp.moe.n_experts", default=64, also=("num_experts",)),
        Key("moe_k", "mlp.moe.n_active", default=6, also=("num_experts_per_tok",)),
        Key("moe_num_shared_experts", "mlp.moe.n_shared", default=2),
        Key("moe_layer_start_index", "mlp.moe.first_dense_layers", read=False),
        Key("moe_layer_end_index", out=lambda a: a.n_layers - 1, read=False),
        Key("moe_layer_interval", "mlp.moe.layer_period", read=False),
    ),
    free=("mlp.moe.shared_d_ff",),
    fixed=(
        ("mlp.moe.score_function", "softmax"),
        ("mlp.moe.score_correction_bias", True),
        ("mlp.moe.normalize_top_k", True),
        ("mlp.moe.routed_scale", 1.0),
    ),
    read=_read_ernie4_5_moe,
    write=_ernie4_5_moe,
    extras=frozenset({"correction_bias"}),
    names=_ernie4_5_moe_names,
    logit_error=2.2e-07,
    function_fields=("architecture.mlp.moe.score_correction_bias",),
)  # fmt: skip
