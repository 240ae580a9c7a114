"""Hunyuan (dense and MoE)."""

from __future__ import annotations

from functools import partial
from typing import Any

from archdb.schema import Architecture, RopeScalingType
from archdb_hf.draft import (
    Draft,
    HFImportError,
    read_mtp,
    read_only,
    rope_parameters_of,
    shown_briefly,
)
from archdb_hf.families.card_to_config import (
    moe_of,
    mtp_config,
    rope_config,
    rope_scaling_config,
)
from archdb_hf.families.deepseek import SIGMOID_SCORES, leading_layers, shared_and_dense
from archdb_hf.families.llama import LLAMA, ROPE
from archdb_hf.families.qwen import QWEN3_MOE
from archdb_hf.keymap import Key, key_or, require
from archdb_hf.tensors import LLAMA_TOP, PRE_NORMS, Names, Source, llama_layer, moe_names

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_hunyuan(d: Draft) -> None:
    """Hunyuan (dense and MoE): the per-head QK norm reads the rotated q and k; a "dynamic"
    rope_scaling with an alpha is a fixed NTK stretch of the base (ntk-alpha). The released
    configs' switches transformers does not read are refused where they would change the
    model (cross-layer KV sharing, MLA)."""
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
    full, _ = rope_parameters_of(d)
    scaling = d.config.get("rope_scaling") or full
    kind = scaling.get("rope_type") or scaling.get("type")
    alpha = scaling.get("alpha")
    if kind != "dynamic" or not alpha:
        return
    if not isinstance(alpha, int | float) or alpha <= 0:
        raise HFImportError(
            f"rope_scaling alpha must be a positive number (got {shown_briefly(alpha)})"
        )
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


def _uniform(key: str, value: Any) -> Any:
    """A number Hunyuan's released configs may repeat per layer: one for every layer."""
    if isinstance(value, list):
        if len(set(value)) != 1:
            raise HFImportError(
                f"config.json: {key} differs between layers ({shown_briefly(value)}): the "
                "card holds one value for every layer"
            )
        value = value[0]
    return value


def _read_hunyuan_moe(d: Draft) -> None:
    """Every layer: softmax-routed experts (the chosen renormalized) plus one shared MLP,
    all intermediate_size wide (transformers reads no moe_intermediate_size)."""
    _read_hunyuan(d)
    d_ff = d.value("architecture.mlp.d_ff")
    widths = _uniform("moe_intermediate_size", d.read("moe_intermediate_size", default=d_ff))
    shared = _uniform("num_shared_expert", d.read("num_shared_expert", default=1))
    if widths != d_ff or shared != 1 or not d.read("use_mixed_mlp_moe", default=True):
        raise HFImportError(
            f"moe_intermediate_size {widths}, num_shared_expert {shared}: transformers' "
            f"Hunyuan builds every expert and one shared MLP intermediate_size ({d_ff}) wide"
        )
    if d.read("moe_layer_num_skipped", default=0):
        raise HFImportError(
            "moe_layer_num_skipped is not 0, but transformers' Hunyuan makes every layer MoE"
        )
    d.set("architecture.mlp.moe.shared_d_ff", d_ff, "config")


def _read_hy_v3(d: Draft) -> None:
    """Hy3 (transformers' HYV3DecoderLayer; its sizes: the keys): dense layers, then MoE
    layers, as mlp_layer_types lists them (by default one dense layer); the shared experts
    one MLP of moe_intermediate_size x num_shared_experts. The released configs' switches
    for what transformers always builds (the QK norm, the sigmoid router with its bias and
    renormalization) are read, and refused unless on."""
    n = d.value("architecture.n_layers")
    types = d.per_layer("mlp_layer_types", n)
    if types is None:  # HYV3Config's default
        types = ["dense"] * min(n, 1) + ["sparse"] * max(n - 1, 0)
    first = leading_layers(types, "dense", "sparse", n)
    if first == n:
        raise HFImportError("mlp_layer_types has no sparse layer: the card is of an MoE model")
    stated = d.read("first_k_dense_replace", default=first)  # the released configs' key
    if stated != first:
        raise HFImportError(
            f"first_k_dense_replace {shown_briefly(stated)} disagrees with mlp_layer_types "
            f"({first} dense layers), which transformers builds"
        )
    d.set("architecture.mlp.moe.first_dense_layers", first, d.origin_of("mlp_layer_types"))
    shared_and_dense(d)
    for key in ("qk_norm", "moe_router_use_sigmoid", "moe_router_enable_expert_bias",
                "route_norm"):  # fmt: skip
        read_only(d, key, True, "transformers' HYV3 always builds it")
    read_mtp(d)


# --- card -> config (the reference): what no key writes ---------------------------------


def _hunyuan_rope(a: Architecture) -> dict:
    """RoPE as Hunyuan's configs spell it: ntk-alpha is their "dynamic" scaling with an
    alpha (the code then fixes the base at rope_theta * alpha^(d/(d-2)); factor unused, 1)."""
    params = rope_config(a)["rope_parameters"]
    s = a.position.rope_scaling
    if s is not None and s.type is RopeScalingType.NTK_ALPHA:
        params |= {"rope_type": "dynamic", "factor": 1.0, "alpha": s.factor}
    elif s is not None:
        params |= rope_scaling_config(a)
    return params


def _hunyuan_v1_moe(a: Architecture) -> dict:
    moe = moe_of(a)
    require(moe.shared_d_ff == a.mlp.d_ff, "one shared MLP as wide as an expert")
    return {}


def _hy_v3(a: Architecture) -> dict:
    """mlp_layer_types from the dense layers, and the MTP count kept as an attribute."""
    moe = a.mlp.moe
    # HYV3MLP sizes a zero-width shared MLP as intermediate_size: at least one is built
    require(moe.n_shared >= 1, "mlp.moe.n_shared at least 1 (HYV3 always builds one)")
    require(moe.shared_d_ff == moe.n_shared * a.mlp.d_ff,
            "the shared experts one MLP of moe_intermediate_size x num_shared_experts")  # fmt: skip
    dense = moe.first_dense_layers
    types = ["dense"] * dense + ["sparse"] * (a.n_layers - dense)
    return {"mlp_layer_types": types} | mtp_config(a, "num_nextn_predict_layers")


# --- checkpoint names (loading weights) --------------------------------------------------


def _hunyuan_layer() -> dict[str, Source]:
    """Llama's names; the per-head QK norms are query_layernorm and key_layernorm."""
    layer = llama_layer(PRE_NORMS)
    for qk, name in (("q", "query"), ("k", "key")):
        layer[f"attn.sublayer.qk_norm.{qk}_norm.weight"] = Source(
            f"self_attn.{name}_layernorm.weight"
        )
        del layer[f"attn.sublayer.qk_norm.{qk}_norm.norm.weight"]
    return layer


def _hy_v3_names() -> Names:
    """Llama's layer; the MoE layers under the released checkpoints' names (which
    transformers keeps when it saves)."""
    layer = llama_layer(PRE_NORMS)
    layer |= moe_names("mlp.router.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    layer["mlp.sublayer.router.correction_bias"] = Source("mlp.expert_bias")
    layer |= {
        f"mlp.sublayer.shared.{p}.weight": Source(f"mlp.shared_mlp.{p}_proj.weight")
        for p in ("gate", "up", "down")
    }
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


def _hunyuan_v1_dense_names() -> Names:
    return Names(LLAMA_TOP, _hunyuan_layer(), tied_head=("lm_head.weight",))


def _hunyuan_v1_moe_names() -> Names:
    """Saved per expert (transformers' qwen2_moe layout); the router is mlp.gate.wg, the
    shared MLP mlp.shared_mlp."""
    layer = _hunyuan_layer()
    layer |= moe_names("mlp.gate", "mlp.experts", "gate_proj", "up_proj", "down_proj")
    layer["mlp.sublayer.router.proj.weight"] = Source("mlp.gate.wg.weight")
    for p in ("gate", "up", "down"):
        layer[f"mlp.sublayer.shared.{p}.weight"] = Source(f"mlp.shared_mlp.{p}_proj.weight")
    return Names(LLAMA_TOP, layer, tied_head=("lm_head.weight",))


# --- the families ----------------------------------------------------------------------

# logit test: Llama with the per-head QK norm after RoPE, ntk-alpha RoPE
HUNYUAN_V1_DENSE = LLAMA.derive(
    "hunyuan_v1_dense",
    # Tencent's remote-code keys, read to refuse what transformers would build otherwise
    released_keys=(
        "attention_head_dim",
        "use_qk_norm",
        "moe_intermediate_size",
        "norm_topk_prob",
        "mlp_bias",
    ),
    classes="HunYuanDenseV1",
    qk_norm="per-head",
    mlp_bias=False,
    eps_default=1e-05,
    keys=(Key("mlp_bias"), Key("rope_parameters", out=_hunyuan_rope, read=False)),
    fixed=(("attention.qk_norm_after_rope", True),),
    read=_read_hunyuan,
    extras=frozenset({"qk_norm_after_rope"}),
    names=_hunyuan_v1_dense_names,
    logit_error=0.0,
    function_fields=("architecture.attention.qk_norm_after_rope",),
)
# logit test: Hunyuan dense, with softmax top-k renormalized beside a shared MLP
HUNYUAN_V1_MOE = HUNYUAN_V1_DENSE.derive(
    "hunyuan_v1_moe",
    classes="HunYuanMoEV1",
    keys=(
        Key("num_experts", "mlp.moe.n_experts", default=1, also=("num_local_experts",)),
        Key("moe_topk", "mlp.moe.n_active", default=1, into=partial(_uniform, "moe_topk")),
    ),
    fixed=(
        ("attention.qk_norm_after_rope", True),
        ("mlp.moe.n_shared", 1),
        ("mlp.moe.score_function", "softmax"),
        ("mlp.moe.normalize_top_k", True),
    ),
    free=("mlp.moe.shared_d_ff",),
    read=_read_hunyuan_moe,
    write=_hunyuan_v1_moe,
    names=_hunyuan_v1_moe_names,
    logit_error=2.3e-07,
)
# logit test: Qwen3-MoE's attention and experts, dense layers first, DeepSeek-V3's sigmoid
# router without groups beside shared experts
HY_V3 = QWEN3_MOE.derive(
    "hy_v3",
    # Tencent's released keys, read to refuse what transformers would build otherwise
    released_keys=("first_k_dense_replace", "qk_norm", "moe_router_use_sigmoid",
                   "moe_router_enable_expert_bias", "route_norm", "num_nextn_predict_layers"),
    classes="HYV3",
    rope_theta_default=11_158_840.0,
    eps_default=1e-05,
    keys=(
        Key("decoder_sparse_step"),
        Key("norm_topk_prob"),
        Key("num_shared_experts", "mlp.moe.n_shared", default=1),
        key_or("router_scaling_factor", "mlp.moe.routed_scale", 1.0, default=2.826, into=float),
        ROPE,
    ),
    fixed=(*SIGMOID_SCORES, ("mlp.moe.normalize_top_k", True)),
    free=("mlp.moe.shared_d_ff", "mlp.moe.first_dense_layers", "mlp.moe.dense_d_ff", "mtp"),
    read=_read_hy_v3,
    write=_hy_v3,
    extras=frozenset({"correction_bias", "sigmoid_scores", "routed_scale"}),
    names=_hy_v3_names,
    logit_error=3.7e-07,
    function_fields=tuple(
        f"architecture.mlp.moe.{name}"
        for name in ("score_function", "score_correction_bias", "routed_scale")
    ),
)  # fmt: skip
