"""GPT-1, GPT-2, GPT-J, GPT-NeoX, Phi 1/2, OPT and Falcon."""

from __future__ import annotations

import math
from dataclasses import replace

from archdb.plan.layout import embedding_width, learned_rows
from archdb.schema import Architecture, GeluApproximation, NormPosition, QKNorm
from archdb_hf import tensors as w
from archdb_hf.draft import (
    Draft,
    HFImportError,
    read_bias_flag,
    read_layer_period,
    read_only,
    shown_briefly,
)
from archdb_hf.families.llama import ROTARY_FRACTION, SIZES
from archdb_hf.families.spec import FamilySpec
from archdb_hf.keymap import Key, dropped, gelu_key, key_or, merged, one_bias_flag, require
from archdb_hf.tensors import QKV_CUTS, QKVO, Dims, Names, Source, llama_layer

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_gpt_neox(d: Draft) -> None:
    if d.value("architecture.parallel_layers"):  # input_layernorm feeds attention, ...
        d.set("architecture.norm.shared_in_parallel", False, "family")


def _read_falcon(d: Draft) -> None:
    new_arch = d.read("new_decoder_architecture", default=False)
    if d.read("multi_query", default=True) and not new_arch:
        d.set("architecture.attention.n_kv_heads", 1, "config")
    elif not new_arch:
        d.set(
            "architecture.attention.n_kv_heads", d.value("architecture.attention.n_heads"), "family"
        )
    if d.value("architecture.parallel_layers"):
        norms = d.read("num_ln_in_parallel_attn", default=2 if new_arch else 1)
        d.set(
            "architecture.norm.shared_in_parallel",
            norms == 1,
            d.origin_of("num_ln_in_parallel_attn"),
        )
    if d.read("alibi", default=False):
        d.set("architecture.position.type", "alibi", "config")
        d.clear("architecture.position.rope_theta")
    read_bias_flag(d, "bias", False)


def _read_gpt_bigcode(d: Draft) -> None:
    """multi_query: one key/value head (StarCoder, SantaCoder), else one per query head."""
    heads = 1 if d.read("multi_query", default=True) else d.value("architecture.attention.n_heads")
    d.set("architecture.attention.n_kv_heads", heads, d.origin_of("multi_query"))


def _read_bloom(d: Draft) -> None:
    why = "the card's residual stream carries the block input, not its normalized copy"
    read_only(d, "apply_residual_connection_post_layernorm", False, why)


def _read_gpt_neo(d: Draft) -> None:
    """attention_types: [[kinds, repeats], ...], expanded as GPTNeoConfig does; the
    layer count is checked before any list is built (a hostile repeat count builds none)."""
    types = d.read("attention_types", default=[[["global", "local"], 12]])
    n = d.value("architecture.n_layers")
    ok = isinstance(types, list) and all(
        isinstance(t, list) and len(t) == 2 and isinstance(t[0], list)
        and all(k in ("global", "local") for k in t[0]) and isinstance(t[1], int) and t[1] >= 0
        for t in types
    )  # fmt: skip
    if not ok or sum(len(kinds) * repeats for kinds, repeats in types) != n:
        raise HFImportError(
            f"attention_types is not [[kinds, repeats], ...] of global and local layers "
            f"for num_layers {n}"
        )
    layers = [kind for kinds, repeats in types for _ in range(repeats) for kind in kinds]
    origin = d.origin_of("attention_types")
    d.set("architecture.attention.layer_pattern", read_layer_period(layers), origin)
    if "local" not in layers:
        d.set("architecture.attention.sliding_window", None, "config")


def _read_mpt(d: Draft) -> None:
    """transformers' MPT port: ALiBi over power-of-two heads (its slopes for other counts
    are not the paper's), multi-head attention, a 4 x d_model MLP, no biases; the
    attn_config switches it does not read are refused unless off."""
    read_only(d, "expansion_ratio", 4, "transformers' MPT builds a 4 x d_model MLP")
    read_only(d, "no_bias", True, "transformers' MPT builds no biases")
    attn = d.read("attn_config", default={}) or {}
    for key, want, why in _MPT_ATTENTION:
        if attn.get(key, want) != want:
            raise HFImportError(f"config.json: attn_config.{key} {shown_briefly(attn[key])}: {why}")
    heads = d.value("architecture.attention.n_heads")
    if heads & (heads - 1):
        raise HFImportError(
            f"n_heads {heads}: MPT's ALiBi slopes for a head count other than a power of "
            "two are not the paper's"
        )
    if attn.get("clip_qkv") is not None:
        d.set("architecture.attention.qkv_clip", attn["clip_qkv"], "config")
    if attn.get("softmax_scale") is not None:
        d.set("architecture.attention.scale", attn["softmax_scale"], "config")


_MPT_ATTENTION = (  # attn_config key, the one value transformers' port builds, why
    ("attn_type", "multihead_attention", "transformers' MPT builds multi-head attention only"),
    ("alibi", True, "transformers' MPT has ALiBi and no position table"),
    ("alibi_bias_max", 8, "the card's ALiBi slopes are the paper's (bias max 8)"),
    ("qk_ln", False, "transformers' MPT has no QK LayerNorm"),
)


def _read_dbrx(d: Draft) -> None:
    """DBRX's attn_config (key/value heads, the clamp, the RoPE base) and ffn_config (every
    layer's experts under a softmax router; moe_normalize_expert_weights 1: the top k's
    shares rescaled to sum to 1, null: kept), with DbrxConfig's sub-config defaults."""
    read_only(d, "tie_word_embeddings", False, "transformers' DBRX refuses a tied head")
    attn = d.read("attn_config", default={}) or {}
    ffn = d.read("ffn_config", default={}) or {}
    d.set("architecture.attention.n_kv_heads", attn.get("kv_n_heads", 1), "config")
    if attn.get("clip_qkv") is not None:
        d.set("architecture.attention.qkv_clip", attn["clip_qkv"], "config")
    # the released configs give the base here; transformers 5.25 reads only rope_parameters
    # (10000 when absent), a difference the card does not take
    d.set("architecture.position.rope_theta", attn.get("rope_theta", 10000.0), "config")
    act = (ffn.get("ffn_act_fn") or {}).get("name", "silu")
    if act != "silu":
        raise HFImportError(
            f"ffn_config.ffn_act_fn {shown_briefly(act)}: the card's DBRX experts are SwiGLU"
        )
    norm = ffn.get("moe_normalize_expert_weights", 1.0)
    if norm not in (None, 1):
        raise HFImportError(
            f"ffn_config.moe_normalize_expert_weights {shown_briefly(norm)}: the top k's shares "
            "are rescaled by their sum (1) or kept (null)"
        )
    moe = {"n_experts": ffn.get("moe_num_experts", 4), "n_active": ffn.get("moe_top_k", 1),
           "n_shared": 0, "first_dense_layers": 0, "layer_period": 1,
           "normalize_top_k": norm is not None}  # fmt: skip
    d.set("architecture.mlp.moe", moe, "config")
    d.set("architecture.mlp.d_ff", ffn.get("ffn_hidden_size", 3584), "config")


# OpenAIGPT's own ACT_FNS, not ACT2FN: its "gelu" is gelu_new, the tanh form (GPT-1's gelu())
_OPENAI_AFN = {"gelu": ("gelu", "tanh"), "relu": ("relu", None), "silu": ("silu", None),
               "swish": ("silu", None)}  # fmt: skip


def _read_openai_gpt(d: Draft) -> None:
    """afn through OpenAIGPT's ACT_FNS; the MLP is 4 x n_embd whatever the config says."""
    raw = d.read("afn", default="gelu")
    if not isinstance(raw, str) or raw not in _OPENAI_AFN:
        raise HFImportError(
            f"afn {shown_briefly(raw)}: OpenAIGPT's ACT_FNS has {', '.join(_OPENAI_AFN)}"
        )
    activation, form = _OPENAI_AFN[raw]
    d.set("architecture.mlp.activation", activation, d.origin_of("afn"))
    if form is not None:
        d.set("architecture.mlp.gelu_approximation", form, d.origin_of("afn"))
    d.set("architecture.mlp.d_ff", 4 * d.value("architecture.d_model"), "family")


def _scaled_embeddings(d: Draft, key: str | None) -> None:
    """Token embeddings x sqrt(d_model) (XGLM's scale_embedding, CTRL always)."""
    scaled = d.read(key, default=True) if key else True
    d_model = d.value("architecture.d_model")
    factor = math.sqrt(d_model) if scaled else 1.0
    d.set("architecture.embedding_multiplier", factor, d.origin_of(key) if key else "family")


def _read_xglm(d: Draft) -> None:
    """XGLM: fairseq's sinusoids from position 2; the table's padding row (pad_token_id)
    must lie before them, as fairseq's index 1 does."""
    _scaled_embeddings(d, "scale_embedding")
    pad = d.read("pad_token_id", default=1)
    if pad is not None and not (isinstance(pad, int) and not isinstance(pad, bool) and pad < 2):
        raise HFImportError(
            f"config.json: pad_token_id {shown_briefly(pad)}: XGLM zeroes that row of its "
            "position table, which from 2 on holds a token's position"
        )


def _read_ctrl(d: Draft) -> None:
    """CTRL: the blocks' LayerNorms fix 1e-6, the final one layer_norm_epsilon; both one."""
    _scaled_embeddings(d, None)
    read_only(d, "layer_norm_epsilon", 1e-6, "CTRL's blocks fix their LayerNorms at 1e-6")


def _read_opt(d: Draft) -> None:
    pre = d.value("architecture.norm.position") == "pre"
    removed = d.read("_remove_final_layer_norm", default=False)
    d.set("architecture.norm.final", pre and not removed, d.origin_of("do_layer_norm_before"))
    affine = d.read("layer_norm_elementwise_affine", default=True)
    d.set(
        "architecture.norm.affine",
        "scale-and-bias" if affine else "none",
        d.origin_of("layer_norm_elementwise_affine"),
    )
    read_bias_flag(d, "enable_bias", True)
    if d.value("architecture.embedding_dim") == d.value("architecture.d_model"):
        d.clear("architecture.embedding_dim")  # no projection: the width is d_model's
    context = d.value("architecture.context_length")
    if context is not None:  # OPTLearnedPositionalEmbedding reserves two rows (offset 2)
        d.set("architecture.position.learned_rows", context + 2, "family")


def _read_gptj(d: Draft) -> None:
    d.read("rotary")  # GPT-J's "rotary": true is the rope scheme itself
    rotary_dim = d.read("rotary_dim", default=64)
    head_dim = d.value("architecture.d_model") // d.value("architecture.attention.n_heads")
    if rotary_dim and rotary_dim < head_dim:
        d.set(
            "architecture.position.rotary_fraction",
            rotary_dim / head_dim,
            d.origin_of("rotary_dim"),
        )


# --- card -> config (the reference): what no key writes ---------------------------------


def _gpt2(a: Architecture) -> dict:
    require(bool(a.tied_embeddings), "GPT-2 ties its embeddings")
    return {}


def _scales_embeddings(a: Architecture) -> bool:
    """scale_embedding: the card's factor is sqrt(d_model), the one other than 1 XGLM
    builds (the round trip shows any other factor as lost, as for CTRL and Gemma)."""
    factor = a.embedding_multiplier
    return factor is not None and math.isclose(factor, math.sqrt(a.d_model))


def _afn(a: Architecture) -> str:
    activation = a.mlp.activation.value
    if activation == "gelu":
        exact = a.mlp.gelu_approximation is GeluApproximation.EXACT
        require(not exact, "the tanh GELU: OpenAIGPT's ACT_FNS has no erf form")
    else:
        require(activation in _OPENAI_AFN, "mlp.activation gelu, relu or silu (ACT_FNS)")
    return activation


def _multi_query(a: Architecture) -> bool:
    kv = a.attention.n_kv_heads
    require(kv in (None, 1, a.attention.n_heads), "one key/value head, or one per query head")
    return kv == 1


def _attention_types(a: Architecture) -> list:
    pattern = [kind.value for kind in a.attention.layer_pattern]
    require(a.n_layers % len(pattern) == 0, "layer_pattern tiles n_layers")
    return [[pattern, a.n_layers // len(pattern)]]


def _mpt(a: Architecture) -> dict:
    heads = a.attention.n_heads
    require(heads & (heads - 1) == 0, "n_heads a power of two (MPT's ALiBi slopes)")
    attn = {"alibi": True}
    if a.attention.qkv_clip is not None:
        attn["clip_qkv"] = a.attention.qkv_clip
    if a.attention.scale is not None:
        attn["softmax_scale"] = a.attention.scale
    return {"attn_config": attn}


def _dbrx(a: Architecture) -> dict:
    moe = a.mlp.moe
    require(moe is not None, "a mixture of experts in every layer (mlp.moe)")
    require(not a.tied_embeddings, "an untied head (transformers' DBRX refuses a tie)")
    theta = a.position.rope_theta or 10000.0
    # the released configs' base (attn_config.rope_theta, which DbrxAttention requires) and
    # the one transformers 5.25 rotates by (rope_parameters)
    attn = {"kv_n_heads": a.attention.n_kv_heads or a.attention.n_heads, "rope_theta": theta}
    if a.attention.qkv_clip is not None:
        attn["clip_qkv"] = a.attention.qkv_clip
    renormalized = 1.0 if moe.normalize_top_k is not False else None
    ffn = {"ffn_hidden_size": a.mlp.d_ff, "moe_num_experts": moe.n_experts,
           "moe_top_k": moe.n_active, "moe_normalize_expert_weights": renormalized}  # fmt: skip
    rope = {"rope_type": "default", "rope_theta": theta}
    return {"attn_config": attn, "ffn_config": ffn, "rope_parameters": rope}


def _parallel_residual(a: Architecture) -> bool:
    if a.parallel_layers:  # else serial blocks (use_parallel_residual false: RedPajama-INCITE)
        require(not a.norm.shared_in_parallel, "norm.shared_in_parallel must be False")
    return bool(a.parallel_layers)


def _phi_qk(a: Architecture) -> bool:
    """qk_layernorm: one LayerNorm over head_dim, shared by heads."""
    require(a.attention.qk_norm in (QKNorm.NONE, QKNorm.PER_HEAD), "attention.qk_norm per-head")
    return a.attention.qk_norm is QKNorm.PER_HEAD


def _layer_norm_before(a: Architecture) -> bool:
    require(a.norm.position in (NormPosition.PRE, NormPosition.POST), "pre- or post-norm")
    pre = a.norm.position is NormPosition.PRE
    require(a.norm.final is pre, f"norm.final must be {pre}")
    return pre


def _parallel_attn(a: Architecture) -> bool:
    require(bool(a.parallel_layers), "parallel_layers (Falcon's parallel_attn)")
    return True


def _classic_mqa(a: Architecture) -> bool:
    return a.attention.n_kv_heads == 1 and bool(a.norm.shared_in_parallel)  # Falcon-7B


def size_keys(d_model: str, n_layers: str, n_heads: str) -> tuple[Key, ...]:
    """The core sizes under a family's spellings of them, which import-hf's generic steps
    read: the keys are written only."""
    return (
        Key("vocab_size", "vocab_size", read=False),
        Key(d_model, "d_model", read=False),
        Key(n_layers, "n_layers", read=False),
        Key(n_heads, "attention.n_heads", read=False),
    )


GPT_SIZES = size_keys("n_embd", "n_layer", "n_head")
# Llama's sizes but the MLP width (each family names it), one key/value head per query
# head and heads of d_model / n_heads
NEOX_SIZES = merged(SIZES, dropped(("intermediate_size", "num_key_value_heads", "head_dim")))
QK_LAYERNORM = Key("qk_layernorm", "attention.qk_norm", default=False, out=_phi_qk,
                   into=lambda on: "per-head" if on else "none")  # fmt: skip
LEARNED_ROWS = Key("n_positions", "context_length", out=learned_rows, read=False)


# --- checkpoint names (loading weights) --------------------------------------------------


def _gpt2_top() -> dict[str, Source]:
    """GPT-2's top-level tensors (GPT-BigCode's and GPT-Neo's too): wte, wpe, ln_f."""
    top = w.top_names("transformer.wte.weight", "transformer.ln_f")
    return top | {"positions.table.weight": Source("transformer.wpe.weight")}


def _gpt2_names() -> Names:
    layer: dict[str, Source] = {}
    for t in ("weight", "bias"):
        conv = t == "weight"  # Conv1D stores its weight (in, out)
        layer[f"attn.before.{t}"] = Source(f"ln_1.{t}")
        layer[f"mlp.before.{t}"] = Source(f"ln_2.{t}")
        for ours, theirs in (
            ("attn.sublayer.o", "attn.c_proj"),
            ("mlp.sublayer.up", "mlp.c_fc"),
            ("mlp.sublayer.down", "mlp.c_proj"),
        ):
            layer[f"{ours}.{t}"] = Source(f"{theirs}.{t}", transpose=conv)
        for p, cut in QKV_CUTS:
            layer[f"attn.sublayer.{p}.{t}"] = Source(f"attn.c_attn.{t}", cut=cut, transpose=conv)
    return Names(_gpt2_top(), layer, prefix="transformer.h.{i}.", tied_head=("lm_head.weight",))


def _openai_gpt_names() -> Names:
    """GPT-2's layers (Conv1D, fused c_attn) with their LayerNorms after each sublayer;
    tokens_embed and positions_embed, no final norm."""
    top = w.top_names("transformer.tokens_embed.weight")
    top["positions.table.weight"] = Source("transformer.positions_embed.weight")
    layer = {k.replace(".before.", ".after."): v for k, v in _gpt2_names().layer.items()}
    return Names(top, layer, prefix="transformer.h.{i}.", tied_head=("lm_head.weight",))


def _xglm_names() -> Names:
    top = w.top_names("model.embed_tokens.weight", "model.layer_norm")
    layer = llama_layer({"attn.before": "self_attn_layer_norm", "mlp.before": "final_layer_norm"})
    layer |= w.renamed(
        {
            "attn.sublayer.o": "self_attn.out_proj",
            "mlp.sublayer.up": "fc1",
            "mlp.sublayer.down": "fc2",
        }
    )
    return Names(top, layer, tied_head=("lm_head.weight",))


def _ctrl_names() -> Names:
    top = w.top_names("transformer.w.weight", "transformer.layernorm", head_bias="lm_head.bias")
    modules = {"attn.before": "layernorm1", "mlp.before": "layernorm2",
               "mlp.sublayer.up": "ffn.0", "mlp.sublayer.down": "ffn.2"}  # fmt: skip
    for ours, theirs in (("q", "Wq"), ("k", "Wk"), ("v", "Wv"), ("o", "dense")):
        modules[f"attn.sublayer.{ours}"] = f"multi_head_attention.{theirs}"
    layer = w.renamed(modules)
    return Names(top, layer, prefix="transformer.h.{i}.", tied_head=("lm_head.weight",))


def _neox_heads(d: Dims) -> tuple[int, int, int]:
    return d.n_heads, 3, d.head_dim  # rows grouped per head as [q, k, v]


def _fused_heads_layer(attn: str) -> dict[str, Source]:
    """GPT-NeoX's layer names (Persimmon's and BLOOM's under their ``attn`` module): q, k
    and v rows grouped per head in query_key_value. Parallel blocks name their norms
    before_attn/before_mlp and sublayers directly; serial ones wrap them in residuals."""
    layer: dict[str, Source] = {}
    norms = {"attn": "input_layernorm", "mlp": "post_attention_layernorm"}
    for t in ("weight", "bias"):
        for part, name in norms.items():
            layer[f"before_{part}.{t}"] = layer[f"{part}.before.{t}"] = Source(f"{name}.{t}")
        for where in ("attn", "attn.sublayer"):
            for index, p in enumerate("qkv"):
                layer[f"{where}.{p}.{t}"] = Source(
                    f"{attn}.query_key_value.{t}",
                    cut=lambda d, i=index: (i, i + 1),
                    per_head=_neox_heads,
                )
            layer[f"{where}.o.{t}"] = Source(f"{attn}.dense.{t}")
        for where in ("mlp", "mlp.sublayer"):
            layer[f"{where}.up.{t}"] = Source(f"mlp.dense_h_to_4h.{t}")
            layer[f"{where}.down.{t}"] = Source(f"mlp.dense_4h_to_h.{t}")
    return layer


def _gpt_neox_names() -> Names:
    top = w.top_names("gpt_neox.embed_in.weight", "gpt_neox.final_layer_norm", "embed_out.weight")
    layer = _fused_heads_layer("attention")
    return Names(top, layer, prefix="gpt_neox.layers.{i}.", tied_head=("embed_out.weight",))


def _gpt_neo_names() -> Names:
    modules = {"attn.before": "ln_1", "mlp.before": "ln_2", "mlp.sublayer.up": "mlp.c_fc",
               "mlp.sublayer.down": "mlp.c_proj"}  # fmt: skip
    modules |= {f"attn.sublayer.{p}": f"attn.attention.{p}_proj" for p in "qkvo"}
    modules["attn.sublayer.o"] = "attn.attention.out_proj"
    return Names(
        _gpt2_top(), w.renamed(modules), prefix="transformer.h.{i}.", tied_head=("lm_head.weight",)
    )


def _mpt_names() -> Names:
    layer = {
        f"attn.sublayer.{p}.weight": Source("attn.Wqkv.weight", cut=cut) for p, cut in QKV_CUTS
    }
    modules = {"attn.before": "norm_1", "mlp.before": "norm_2", "attn.sublayer.o": "attn.out_proj",
               "mlp.sublayer.up": "ffn.up_proj", "mlp.sublayer.down": "ffn.down_proj"}  # fmt: skip
    layer |= {f"{ours}.weight": Source(f"{theirs}.weight") for ours, theirs in modules.items()}
    top = w.top_names("transformer.wte.weight", "transformer.norm_f")
    return Names(top, layer, prefix="transformer.blocks.{i}.", tied_head=("lm_head.weight",))


def _dbrx_names() -> Names:
    """Fused q | k | v rows; each expert's gate (w1) and up (v1) rows, and its down
    projection's columns (w2), stacked experts after experts."""
    layer = {f"attn.sublayer.{p}.weight": Source("norm_attn_norm.attn.Wqkv.weight", cut=cut)
             for p, cut in QKV_CUTS}  # fmt: skip
    layer |= {
        "attn.before.weight": Source("norm_attn_norm.norm_1.weight"),
        "mlp.before.weight": Source("norm_attn_norm.norm_2.weight"),
        "attn.sublayer.o.weight": Source("norm_attn_norm.attn.out_proj.weight"),
        "mlp.sublayer.router.proj.weight": Source("ffn.router.layer.weight"),
    }
    for ours, theirs in (("gate", "w1"), ("up", "v1"), ("down", "w2")):
        name = f"ffn.experts.mlp.{theirs}"  # w2 holds (in, out) per expert: read transposed
        layer[f"mlp.sublayer.experts.{ours}"] = Source(name, experts=True, transpose=ours == "down")
    top = w.top_names("transformer.wte.weight", "transformer.norm_f")
    return Names(top, layer, prefix="transformer.blocks.{i}.")


def _bloom_names() -> Names:
    top = w.top_names("transformer.word_embeddings.weight", "transformer.ln_f")
    top |= w.renamed({"embed_norm": "transformer.word_embeddings_layernorm"})
    layer = _fused_heads_layer("self_attention")
    return Names(top, layer, prefix="transformer.h.{i}.", tied_head=("lm_head.weight",))


def _persimmon_names() -> Names:
    layer = _fused_heads_layer("self_attn")
    # one LayerNorm over head_dim, shared by the heads
    layer |= w.renamed(
        {f"attn.sublayer.qk_norm.{qk}_norm": f"self_attn.{qk}_layernorm" for qk in "qk"}
    )
    top = w.top_names("model.embed_tokens.weight", "model.final_layernorm")
    return Names(top, layer, tied_head=("lm_head.weight",))


def _gptj_names() -> Names:
    top = w.top_names("transformer.wte.weight", "transformer.ln_f", head_bias="lm_head.bias")
    projections = QKVO | {"o": "out_proj"}
    mlp = {"up": "mlp.fc_in", "down": "mlp.fc_out"}
    return w.parallel_names("transformer.h.{i}.", "ln_1", "attn", projections, mlp, top)


def _phi_names() -> Names:
    top = w.top_names(
        "model.embed_tokens.weight", "model.final_layernorm", head_bias="lm_head.bias"
    )
    projections = QKVO | {"o": "dense"}
    names = w.parallel_names(
        "model.layers.{i}.", "input_layernorm", "self_attn", projections,
        {"up": "mlp.fc1", "down": "mlp.fc2"}, top,
    )  # fmt: skip
    # qk_layernorm: one LayerNorm per head, shared by heads
    names.layer.update(
        w.renamed({f"attn.qk_norm.{qk}_norm": f"self_attn.{qk}_layernorm" for qk in "qk"})
    )
    return names


def _falcon_groups(d: Dims) -> tuple[int, tuple[int, ...]]:
    """Falcon's fused query_key_value rows: per key/value head, its query heads, then its
    key and its value (one group for Falcon-7B's multi-query; new_decoder_architecture's
    grouped heads for Falcon-40B, 180B and Falcon2-11B)."""
    per_group = d.n_heads // d.n_kv_heads if d.n_kv_heads else 0
    return d.n_kv_heads, (per_group * d.head_dim, d.head_dim, d.head_dim)


def _falcon_names() -> Names:
    top = w.top_names("transformer.word_embeddings.weight", "transformer.ln_f")
    names = w.parallel_names(
        "transformer.h.{i}.", "input_layernorm", "self_attention", {"o": "dense"},
        {"up": "mlp.dense_h_to_4h", "down": "mlp.dense_4h_to_h"}, top,
        tied_head=("lm_head.weight",),
    )  # fmt: skip
    for t in ("weight", "bias"):
        for p, cut in QKV_CUTS:  # [q heads, k, v] per key/value group
            fused = f"self_attention.query_key_value.{t}"
            names.layer[f"attn.{p}.{t}"] = Source(fused, cut=cut, grouped=_falcon_groups)
        # two norms (num_ln_in_parallel_attn 2: Falcon-40B, 180B)
        names.layer[f"before_attn.{t}"] = Source(f"input_layernorm.{t}", fallback=f"ln_attn.{t}")
        names.layer[f"before_mlp.{t}"] = Source(f"ln_mlp.{t}")
    return names


def _gpt_bigcode_names() -> Names:
    """GPT-2's layout in nn.Linear (out, in) tensors; c_attn holds, per key/value head, its
    query heads, then its key and its value (Falcon's grouping: [q, k, v] per head, or
    every query head then the one key and value under multi_query)."""
    modules = {"attn.before": "ln_1", "mlp.before": "ln_2", "attn.sublayer.o": "attn.c_proj",
               "mlp.sublayer.up": "mlp.c_fc", "mlp.sublayer.down": "mlp.c_proj"}  # fmt: skip
    layer = w.renamed(modules)
    for t in ("weight", "bias"):
        for p, cut in QKV_CUTS:
            fused = Source(f"attn.c_attn.{t}", cut=cut, grouped=_falcon_groups)
            layer[f"attn.sublayer.{p}.{t}"] = fused
    return Names(_gpt2_top(), layer, prefix="transformer.h.{i}.", tied_head=("lm_head.weight",))


def _opt_names() -> Names:
    """OPT's learned table reserves its first two rows (positions start at row 2): they
    are rotated to the end, so archdb's row p is OPT's row p + 2 (a lossless reorder)."""
    modules = {f"attn.sublayer.{p}": f"self_attn.{theirs}"
               for p, theirs in (QKVO | {"o": "out_proj"}).items()}  # fmt: skip
    modules |= {"mlp.sublayer.up": "fc1", "mlp.sublayer.down": "fc2"}
    for slot in ("before", "after"):  # pre- or post-norm (do_layer_norm_before)
        modules |= {f"attn.{slot}": "self_attn_layer_norm", f"mlp.{slot}": "final_layer_norm"}
    layer = w.renamed(modules)
    top = w.top_names("model.decoder.embed_tokens.weight", "model.decoder.final_layer_norm")
    top |= {
        "positions.table.weight": Source("model.decoder.embed_positions.weight", roll=-2),
        "embed.proj.weight": Source("model.decoder.project_in.weight"),  # OPT-350M
        "head.proj.weight": Source("model.decoder.project_out.weight"),
    }
    return Names(top, layer, prefix="model.decoder.layers.{i}.", tied_head=("lm_head.weight",))


# --- the families ----------------------------------------------------------------------

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
    keys=(
        *GPT_SIZES,
        Key("n_inner", "mlp.d_ff", read=False),
        LEARNED_ROWS,
        # ACT2FN: gelu is the erf form (Cerebras-GPT's), gelu_new the tanh form
        gelu_key("activation_function", "gelu_new"),
    ),
    write=_gpt2,
    names=_gpt2_names,
    logit_error=2.9e-07,
)
# GPT-2 in nn.Linear layers, with multi-query attention
GPT_BIGCODE = GPT2.derive(
    "gpt_bigcode",
    classes="GPTBigCode",
    layer="GPTBigCodeBlock",
    activation_default="gelu_pytorch_tanh",
    keys=(
        gelu_key("activation_function", "gelu_pytorch_tanh"),
        Key("multi_query", "attention.n_kv_heads", out=_multi_query, read=False),
        Key("tie_word_embeddings", "tied_embeddings", read=False),
    ),
    read=_read_gpt_bigcode,
    names=_gpt_bigcode_names,
    logit_error=0.0,
)
GPTJ = GPT2.derive(
    "gptj",
    classes="GPTJ",
    layer="GPTJBlock",
    position="rope",
    fixed_bias=(False, False, True),
    lm_head_bias=True,  # GPTJForCausalLM: nn.Linear's default bias
    parallel=True,
    shared_norm_in_parallel=True,
    tied_default=False,
    rope_layout="interleaved",
    keys=(
        Key("rotary_dim", "position.rotary_fraction", read=False,
            out=lambda a: int(a.head_dim_effective * (a.position.rotary_fraction or 1.0))),
        Key("n_positions", "context_length", read=False),
        Key("tie_word_embeddings", "tied_embeddings", read=False),
    ),
    read=_read_gptj,
    names=_gptj_names,
    logit_error=3.4e-07,
)  # fmt: skip
GPT_NEOX = FamilySpec(
    "gpt_neox",
    classes="GPTNeoX",
    layer="GPTNeoXLayer",
    eps_key="layer_norm_eps",
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    attention_bias_default=True,
    mlp_bias=True,
    activation_default="gelu",
    rotary_fraction_default=0.25,
    keys=(
        *NEOX_SIZES,
        Key("intermediate_size", "mlp.d_ff", read=False),
        Key("use_parallel_residual", "parallel_layers", default=True, out=_parallel_residual),
        Key("rotary_pct", "position.rotary_fraction", read=False,
            out=lambda a: a.position.rotary_fraction or 1.0),
        # gelu_fast: GPT-NeoX-20B's spelling, the formula of GPT-NeoX's fused bias_gelu
        gelu_key("hidden_act", "gelu_fast"),
        Key("attention_bias", "bias.qkv", read=False),
    ),
    free=("norm.shared_in_parallel",),
    read=_read_gpt_neox,
    names=_gpt_neox_names,
    logit_error=2.7e-07,
)  # fmt: skip
PHI = GPTJ.derive(
    "phi",
    classes="Phi",
    eps_key="layer_norm_eps",
    rope_key="rope_parameters",
    fixed_bias=(True, True, True),  # and the output head's: Linear(bias=True)
    d_ff_default_ratio=None,
    rotary_fraction_default=0.5,
    rope_layout="half-split",
    keys=(
        *dropped(GPTJ.keys),
        *SIZES,
        ROTARY_FRACTION,
        QK_LAYERNORM,
    ),
    read=None,
    names=_phi_names,
    logit_error=2.5e-07,
)  # fmt: skip
OPT = GPT2.derive(
    "opt",
    classes="OPT",
    eps_key=None,
    activation_default="relu",
    d_ff_default_ratio=None,
    keys=(
        *dropped(GPT2.keys),
        *NEOX_SIZES,
        Key("ffn_dim", "mlp.d_ff", read=False),
        Key("word_embed_proj_dim", "embedding_dim", out=embedding_width),
        Key(
            "do_layer_norm_before",
            "norm.position",
            default=True,
            into=lambda pre: "pre" if pre else "post",
            out=_layer_norm_before,
        ),
    ),
    free=("norm.final",),
    read=_read_opt,
    names=_opt_names,
    logit_error=0.0,
)  # fmt: skip
FALCON = GPT_NEOX.derive(
    "falcon",
    classes="Falcon",
    eps_key="layer_norm_epsilon",
    attention_bias_default=False,
    mlp_bias=False,
    tied_default=True,
    d_ff_default_ratio=4,
    rotary_fraction_default=None,
    keys=(
        *dropped(k for k in GPT_NEOX.keys if k not in NEOX_SIZES),
        Key("num_kv_heads", "attention.n_kv_heads", read=False),
        Key("new_decoder_architecture", out=lambda a: not _classic_mqa(a), read=False),
        Key("multi_query", out=lambda a: a.attention.n_kv_heads == 1, read=False),
        Key("parallel_attn", "parallel_layers", default=True, out=_parallel_attn),
        Key("bias", "bias.qkv", out=one_bias_flag, read=False),
        Key("ffn_hidden_size", "mlp.d_ff", read=False),
        Key("num_ln_in_parallel_attn", "norm.shared_in_parallel", read=False,
            out=lambda a: 1 if a.norm.shared_in_parallel else 2),
        # no path: ALiBi imports, but the generic check refuses it (the key writes false)
        Key("alibi", out=lambda a: False, read=False),
        # where the card records it (Falcon2-11B's config states 8192; Falcon-7B's omits
        # it and FalconConfig's default, 2048, is the card's)
        Key(
            "max_position_embeddings",
            "context_length",
            read=False,
            when=lambda a: a.context_length is not None,
        ),
    ),
    free=("bias.attn_out", "bias.mlp", "norm.shared_in_parallel"),
    read=_read_falcon,
    names=_falcon_names,
    logit_error=2.4e-07,
)  # fmt: skip
# GPT-NeoX's serial layout with squared-ReLU and per-head QK LayerNorms
PERSIMMON = GPT_NEOX.derive(
    "persimmon",
    classes="Persimmon",
    attention_bias_default=True,
    fixed_bias=(True, True, True),
    activation_default="relu2",
    rotary_fraction_default=0.5,
    qk_norm="per-head",
    keys=(
        *dropped(("use_parallel_residual", "rotary_pct", "hidden_act", "attention_bias")),
        ROTARY_FRACTION,
        replace(QK_LAYERNORM, default=True),
    ),
    free=(),
    read=None,
    names=_persimmon_names,
    logit_error=0.0,
)
# GPT-2 in nn.Linear layers, global and 256-token local layers, scores left unscaled
GPT_NEO = GPT2.derive(
    "gpt_neo",
    classes="GPTNeo",
    layer="GPTNeoBlock",
    fixed_bias=(False, True, True),
    kinds=("global", "local"),
    keys=(
        *dropped(GPT2.keys),
        *size_keys("hidden_size", "num_layers", "num_heads"),
        Key("intermediate_size", "mlp.d_ff", read=False),
        Key("max_position_embeddings", "context_length", out=learned_rows, read=False),
        key_or("window_size", "attention.sliding_window", 256, default=256),
        Key("attention_types", "attention.layer_pattern", out=_attention_types, read=False),
        gelu_key("activation_function", "gelu_new"),
        Key("tie_word_embeddings", "tied_embeddings", read=False),
    ),
    fixed=(("attention.scale", 1.0),),  # q.k, no 1/sqrt(head_dim)
    read=_read_gpt_neo,
    names=_gpt_neo_names,
    logit_error=2.8e-07,
)  # fmt: skip
# MPT as transformers ports it: ALiBi, LayerNorms without bias, no biases anywhere,
# a fused Wqkv, an exact-GELU MLP 4 x d_model wide (expansion_ratio is not read)
MPT = FamilySpec(
    "mpt",
    classes="Mpt",
    layer="MptBlock",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    norm="layernorm",
    norm_affine="scale",
    gated=False,
    position="alibi",
    fixed_bias=(False, False, False),
    tied_default=True,
    activation_default="gelu",
    d_ff_default_ratio=4,
    keys=(
        *size_keys("d_model", "n_layers", "n_heads"),
        Key("max_seq_len", "context_length", read=False),
        Key("tie_word_embeddings", "tied_embeddings", read=False),
    ),
    fixed=(("mlp.gelu_approximation", "exact"),),
    free=("attention.qkv_clip",),
    extras=frozenset({"qkv_clip"}),
    read=_read_mpt,
    write=_mpt,
    names=_mpt_names,
    logit_error=2.5e-07,
)
# DBRX (MPT's llm-foundry lineage): RoPE, GQA through the clamped Wqkv, LayerNorms at
# their default epsilon, every layer's SwiGLU experts under a softmax router, untied
DBRX = MPT.derive(
    "dbrx",
    classes="Dbrx",
    layer="DbrxBlock",
    eps_key=None,
    gated=True,
    position="rope",
    tied_default=False,
    activation_default="silu",
    d_ff_default_ratio=None,
    keys=dropped(("tie_word_embeddings",)),
    fixed=(),
    free=("attention.n_kv_heads", "attention.qkv_clip", "position.rope_theta", "mlp.d_ff",
          "mlp.moe.n_experts", "mlp.moe.n_active", "mlp.moe.normalize_top_k"),
    read=_read_dbrx,
    write=_dbrx,
    names=_dbrx_names,
    logit_error=2.4e-07,
)  # fmt: skip
# GPT-NeoX's fused heads with ALiBi, a LayerNorm on the embeddings and a 4 x d_model MLP
BLOOM = FamilySpec(
    "bloom",
    classes="Bloom",
    layer="BloomBlock",
    eps_key="layer_norm_epsilon",
    rope_key=None,
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    position="alibi",
    fixed_bias=(True, True, True),
    tied_default=True,
    activation_default="gelu_pytorch_tanh",  # bloom_gelu_forward: the tanh form, in code
    d_ff_default_ratio=4,
    keys=(
        *size_keys("hidden_size", "n_layer", "n_head"),
        Key("tie_word_embeddings", "tied_embeddings", read=False),
        Key("seq_length", "context_length", read=False),  # the training context (no table)
    ),
    released_keys=("seq_length",),
    fixed=(("embedding_norm", True), ("mlp.gelu_approximation", "tanh")),
    extras=frozenset({"embedding_norm"}),
    read=_read_bloom,
    names=_bloom_names,
    logit_error=2.8e-07,
)
OPENAI_GPT = GPT2.derive(
    "openai-gpt",
    module="openai",
    layer="Block",
    config_class="OpenAIGPTConfig",
    model_class="OpenAIGPTLMHeadModel",
    norm_position="post",
    activation_default="gelu_new",
    # its MLP is 4 x n_embd (no n_inner); afn, not activation_function
    keys=(
        Key("n_inner"),
        Key("activation_function"),
        Key("afn", "mlp.activation", out=_afn, read=False),
    ),
    builds_activations=("gelu", "relu", "silu"),
    fixed=(("norm.final", False),),
    read=_read_openai_gpt,
    names=_openai_gpt_names,
    logit_error=9.3e-08,
)
# fairseq's decoder (XGLM): pre-norm LayerNorms, biased projections, GELU, embeddings x
# sqrt(d_model), fairseq's sinusoids
XGLM = FamilySpec(
    "xglm",
    classes="XGLM",
    eps_key=None,  # nn.LayerNorm's 1e-5, no key
    rope_key=None,
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    position="sinusoidal",
    fixed_bias=(True, True, True),
    tied_default=True,
    activation_default="gelu",
    eps_default=1e-5,
    keys=(
        *size_keys("d_model", "num_layers", "attention_heads"),
        Key("ffn_dim", "mlp.d_ff", read=False),
        Key("max_position_embeddings", "context_length", read=False),
        Key("scale_embedding", "embedding_multiplier", out=_scales_embeddings, read=False),
        gelu_key("activation_function", "gelu_new"),
    ),
    fixed=(("position.sinusoid_layout", "fairseq"),),
    read=_read_xglm,
    names=_xglm_names,
    logit_error=0.0,
)
# Salesforce's CTRL: pre-norm LayerNorms at 1e-6, biased projections and head, ReLU,
# embeddings x sqrt(d_model), sinusoids in halves
CTRL = FamilySpec(
    "ctrl",
    layer="EncoderLayer",
    config_class="CTRLConfig",
    model_class="CTRLLMHeadModel",
    eps_key=None,  # the blocks' 1e-6 is fixed; layer_norm_epsilon only the final norm's
    rope_key=None,
    norm="layernorm",
    norm_affine="scale-and-bias",
    gated=False,
    position="sinusoidal",
    fixed_bias=(True, True, True),
    lm_head_bias=True,
    tied_default=True,
    activation_default="relu",
    eps_default=1e-6,
    keys=(
        *GPT_SIZES,
        Key("dff", "mlp.d_ff", read=False),
        Key("n_positions", "context_length", read=False),
    ),
    fixed=(("position.sinusoid_layout", "halves"), ("norm.eps", 1e-6)),
    read=_read_ctrl,
    names=_ctrl_names,
    logit_error=1.8e-07,
)
