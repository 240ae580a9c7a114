"""GPT-1, GPT-2, GPT-J, GPT-NeoX, Phi 1/2, OPT and Falcon."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archdb.plan.layout import embedding_width, learned_rows
from archdb.schema import (
    Activation,
    Architecture,
    GeluApproximation,
    LayerKind,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
)
from archdb_hf import tensors as w
from archdb_hf.draft import Draft
from archdb_hf.families import card_to_config as ref
from archdb_hf.families.card_to_config import (
    base_config,
    need_activation,
    need_dense,
    need_pattern,
    need_serial,
    need_softmax_attention,
    require,
)
from archdb_hf.families.spec import FamilySpec
from archdb_hf.tensors import QKVO, Dims, Names, Source, k_rows, q_rows, v_rows

if TYPE_CHECKING:
    from archdb_hf.families.spec import FamilySpec

# --- config -> card (import-hf) ----------------------------------------------------------


def _read_gpt_neox(d: Draft) -> None:
    parallel = d.read("use_parallel_residual", default=True)
    d.set("architecture.parallel_layers", parallel, d.origin_of("use_parallel_residual"))
    if parallel:  # input_layernorm feeds attention, post_attention_layernorm the MLP
        d.set("architecture.norm.shared_in_parallel", False, "family")


def _read_falcon(d: Draft) -> None:
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


def _read_opt(d: Draft) -> None:
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


def _read_phi(d: Draft) -> None:
    if d.read("qk_layernorm", default=False):  # one LayerNorm over head_dim, shared by heads
        d.set("architecture.attention.qk_norm", "per-head", "config")
    d.set("architecture.bias.lm_head", True, "family")  # PhiForCausalLM: Linear(bias=True)


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
    d.set("architecture.bias.lm_head", True, "family")  # GPTJForCausalLM: nn.Linear default bias


# --- card -> config (the reference) ------------------------------------------------------


def gpt2(a: Architecture) -> dict:
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    need_serial(a)
    need_activation(a, Activation.GELU)
    need_softmax_attention(a)
    need_pattern(a, LayerKind.GLOBAL)  # GPT-2 attends densely in every layer (GPT-3 does not)
    need_dense(a)
    ref.need_position(a, PositionType.LEARNED)
    ref.need_bias(a, True, True, True)
    require(bool(a.tied_embeddings), "GPT-2 ties its embeddings")
    require(a.attention.n_heads * a.head_dim_effective == a.d_model, "n_heads*head_dim = d_model")
    return {
        "vocab_size": a.vocab_size,
        "n_embd": a.d_model,
        "n_layer": a.n_layers,
        "n_head": a.attention.n_heads,
        "n_inner": a.mlp.d_ff,
        "n_positions": learned_rows(a),
    }


def openai_gpt(a: Architecture) -> dict:
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.POST, final=False)
    need_serial(a)
    need_activation(a, Activation.GELU)
    need_softmax_attention(a)
    need_dense(a)
    ref.need_position(a, PositionType.LEARNED)
    ref.need_bias(a, True, True, True)
    require(a.mlp.d_ff == 4 * a.d_model, "GPT-1's MLP is 4 x d_model")
    require(bool(a.tied_embeddings), "GPT-1 ties its embeddings")
    return {
        "vocab_size": a.vocab_size,
        "n_embd": a.d_model,
        "n_layer": a.n_layers,
        "n_head": a.attention.n_heads,
        "n_positions": learned_rows(a),
    }


def gptj(a: Architecture) -> dict:
    """GPT-J; its output head always has a bias (a card without bias.lm_head differs)."""
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    ref.need_parallel(a, shared=True)
    need_activation(a, Activation.GELU)
    need_softmax_attention(a)
    need_dense(a)
    ref.need_position(a, PositionType.ROPE)
    require(
        not a.bias.qkv and not a.bias.attn_out and a.bias.mlp, "GPT-J: no attention bias, MLP bias"
    )
    hd = a.head_dim_effective
    return {
        "vocab_size": a.vocab_size,
        "n_embd": a.d_model,
        "n_layer": a.n_layers,
        "n_head": a.attention.n_heads,
        "n_inner": a.mlp.d_ff,
        "rotary_dim": int(hd * (a.position.rotary_fraction or 1.0)),
        "n_positions": a.context_length,
        "tie_word_embeddings": a.tied_embeddings,
    }


def gpt_neox(a: Architecture) -> dict:
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    if a.parallel_layers:  # else serial blocks (use_parallel_residual false: RedPajama-INCITE)
        ref.need_parallel(a, shared=False)
    need_activation(a, Activation.GELU)
    need_softmax_attention(a)
    need_dense(a)
    ref.need_bias(a, True, True, True)
    # ACT2FN: gelu is the erf form, gelu_fast the tanh form (GPT-NeoX-20B's spelling, the
    # formula of GPT-NeoX's fused bias_gelu); null is tanh, as the builder's
    exact = a.mlp.gelu_approximation is GeluApproximation.EXACT
    hidden_act = "gelu" if exact else "gelu_fast"
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "num_attention_heads": a.attention.n_heads,
        "intermediate_size": a.mlp.d_ff,
        "use_parallel_residual": bool(a.parallel_layers),
        "rotary_pct": a.position.rotary_fraction or 1.0,
        "max_position_embeddings": a.context_length,
        "tie_word_embeddings": a.tied_embeddings,
        "hidden_act": hidden_act,
    }


def phi(a: Architecture) -> dict:
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    ref.need_parallel(a, shared=True)
    need_activation(a, Activation.GELU)
    need_softmax_attention(a)
    need_dense(a)
    b = a.bias
    require(b.qkv and b.attn_out and b.mlp, "Phi has a bias on every linear layer")
    # Phi's output head always has a bias: a card without bias.lm_head counts differently
    return base_config(a) | {"partial_rotary_factor": a.position.rotary_fraction or 1.0}


def opt(a: Architecture) -> dict:
    require(a.norm.position in (NormPosition.PRE, NormPosition.POST), "pre- or post-norm")
    ref.need_norm(
        a,
        NormType.LAYERNORM,
        NormAffine.SCALE_AND_BIAS,
        a.norm.position,
        final=a.norm.position is NormPosition.PRE,
    )
    need_serial(a)
    need_activation(a, Activation.RELU)
    need_softmax_attention(a)
    need_dense(a)
    ref.need_position(a, PositionType.LEARNED)
    ref.need_bias(a, True, True, True)
    # OPT's table has max_position_embeddings + 2 rows; the config states the positions.
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "ffn_dim": a.mlp.d_ff,
        "num_attention_heads": a.attention.n_heads,
        "max_position_embeddings": a.context_length,
        "word_embed_proj_dim": embedding_width(a),
        "do_layer_norm_before": a.norm.position is NormPosition.PRE,
        "tie_word_embeddings": a.tied_embeddings,
    }


def falcon(a: Architecture) -> dict:
    ref.need_norm(a, NormType.LAYERNORM, NormAffine.SCALE_AND_BIAS, NormPosition.PRE)
    require(bool(a.parallel_layers), "parallel_layers (Falcon's parallel_attn)")
    need_activation(a, Activation.GELU)
    need_softmax_attention(a)
    need_dense(a)
    b = a.bias
    require(b.qkv == b.attn_out == b.mlp, "Falcon's bias flag covers every linear layer")
    shared = bool(a.norm.shared_in_parallel)
    kv = a.attention.n_kv_heads
    classic_mqa = kv == 1 and shared  # Falcon-7B: multi_query, one norm
    return {
        "vocab_size": a.vocab_size,
        "hidden_size": a.d_model,
        "num_hidden_layers": a.n_layers,
        "num_attention_heads": a.attention.n_heads,
        "num_kv_heads": kv,
        "new_decoder_architecture": not classic_mqa,
        "multi_query": kv == 1,
        "parallel_attn": True,
        "bias": b.qkv,
        "ffn_hidden_size": a.mlp.d_ff,
        "num_ln_in_parallel_attn": 1 if shared else 2,
        "tie_word_embeddings": a.tied_embeddings,
        "alibi": False,
    } | _falcon_positions(a)


def _falcon_positions(a: Architecture) -> dict:
    """max_position_embeddings where the card records it (Falcon2-11B's config states 8192;
    Falcon-7B's original config omits it and FalconConfig's default, 2048, is the card's)."""
    return {} if a.context_length is None else {"max_position_embeddings": a.context_length}


# --- checkpoint names (loading weights) --------------------------------------------------


def _gpt2_names() -> Names:
    def conv(name: str, cut=None) -> Source:  # Conv1D stores (in, out)
        return Source(name, cut=cut, transpose=True)

    def bias(name: str, cut=None) -> Source:
        return Source(name, cut=cut)

    layer = {
        "attn.before.weight": Source("ln_1.weight"),
        "attn.before.bias": Source("ln_1.bias"),
        "mlp.before.weight": Source("ln_2.weight"),
        "mlp.before.bias": Source("ln_2.bias"),
        "attn.sublayer.o.weight": conv("attn.c_proj.weight"),
        "attn.sublayer.o.bias": bias("attn.c_proj.bias"),
        "mlp.sublayer.up.weight": conv("mlp.c_fc.weight"),
        "mlp.sublayer.up.bias": bias("mlp.c_fc.bias"),
        "mlp.sublayer.down.weight": conv("mlp.c_proj.weight"),
        "mlp.sublayer.down.bias": bias("mlp.c_proj.bias"),
    }
    for p, cut in (("q", q_rows), ("k", k_rows), ("v", v_rows)):
        layer[f"attn.sublayer.{p}.weight"] = conv("attn.c_attn.weight", cut)
        layer[f"attn.sublayer.{p}.bias"] = bias("attn.c_attn.bias", cut)
    top = {
        "embed.table.weight": Source("transformer.wte.weight"),
        "positions.table.weight": Source("transformer.wpe.weight"),
        "decoder.final_norm.weight": Source("transformer.ln_f.weight"),
        "decoder.final_norm.bias": Source("transformer.ln_f.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    return Names(top, layer, prefix="transformer.h.{i}.", tied_head=("lm_head.weight",))


def _neox_heads(d: Dims) -> tuple[int, int, int]:
    return d.n_heads, 3, d.head_dim  # rows grouped per head as [q, k, v]


def _gpt_neox_names() -> Names:
    """Parallel blocks name their norms before_attn/before_mlp and sublayers directly;
    serial ones (use_parallel_residual false) wrap them in residuals."""
    layer: dict[str, Source] = {}
    norms = {"attn": "input_layernorm", "mlp": "post_attention_layernorm"}
    for t in ("weight", "bias"):
        for part, name in norms.items():
            layer[f"before_{part}.{t}"] = layer[f"{part}.before.{t}"] = Source(f"{name}.{t}")
        for where in ("attn", "attn.sublayer"):
            for index, p in enumerate("qkv"):
                layer[f"{where}.{p}.{t}"] = Source(
                    f"attention.query_key_value.{t}",
                    cut=lambda d, i=index: (i, i + 1),
                    per_head=_neox_heads,
                )
            layer[f"{where}.o.{t}"] = Source(f"attention.dense.{t}")
        for where in ("mlp", "mlp.sublayer"):
            layer[f"{where}.up.{t}"] = Source(f"mlp.dense_h_to_4h.{t}")
            layer[f"{where}.down.{t}"] = Source(f"mlp.dense_4h_to_h.{t}")
    top = {
        "embed.table.weight": Source("gpt_neox.embed_in.weight"),
        "decoder.final_norm.weight": Source("gpt_neox.final_layer_norm.weight"),
        "decoder.final_norm.bias": Source("gpt_neox.final_layer_norm.bias"),
        "head.lm_head.weight": Source("embed_out.weight"),
    }
    return Names(top, layer, prefix="gpt_neox.layers.{i}.", tied_head=("embed_out.weight",))


def _gptj_names() -> Names:
    top = {
        "embed.table.weight": Source("transformer.wte.weight"),
        "decoder.final_norm.weight": Source("transformer.ln_f.weight"),
        "decoder.final_norm.bias": Source("transformer.ln_f.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
        "head.lm_head.bias": Source("lm_head.bias"),
    }
    projections = QKVO | {"o": "out_proj"}
    mlp = {"up": "mlp.fc_in", "down": "mlp.fc_out"}
    return w.parallel_names("transformer.h.{i}.", "ln_1", "attn", projections, mlp, top)


def _phi_names() -> Names:
    top = {
        "embed.table.weight": Source("model.embed_tokens.weight"),
        "decoder.final_norm.weight": Source("model.final_layernorm.weight"),
        "decoder.final_norm.bias": Source("model.final_layernorm.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
        "head.lm_head.bias": Source("lm_head.bias"),
    }
    projections = QKVO | {"o": "dense"}
    names = w.parallel_names(
        "model.layers.{i}.", "input_layernorm", "self_attn", projections,
        {"up": "mlp.fc1", "down": "mlp.fc2"}, top,
    )  # fmt: skip
    for qk in ("q", "k"):  # qk_layernorm: one LayerNorm per head, shared by heads
        for t in ("weight", "bias"):
            names.layer[f"attn.qk_norm.{qk}_norm.{t}"] = Source(f"self_attn.{qk}_layernorm.{t}")
    return names


def _falcon_groups(d: Dims) -> tuple[int, tuple[int, ...]]:
    """Falcon's fused query_key_value rows: per key/value head, its query heads, then its
    key and its value (one group for Falcon-7B's multi-query; new_decoder_architecture's
    grouped heads for Falcon-40B, 180B and Falcon2-11B)."""
    per_group = d.n_heads // d.n_kv_heads if d.n_kv_heads else 0
    return d.n_kv_heads, (per_group * d.head_dim, d.head_dim, d.head_dim)


def _falcon_names() -> Names:
    top = {
        "embed.table.weight": Source("transformer.word_embeddings.weight"),
        "decoder.final_norm.weight": Source("transformer.ln_f.weight"),
        "decoder.final_norm.bias": Source("transformer.ln_f.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
    }
    names = w.parallel_names(
        "transformer.h.{i}.", "input_layernorm", "self_attention", {"o": "dense"},
        {"up": "mlp.dense_h_to_4h", "down": "mlp.dense_4h_to_h"}, top,
        tied_head=("lm_head.weight",),
    )  # fmt: skip
    for p, cut in (
        ("q", q_rows),
        ("k", k_rows),
        ("v", v_rows),
    ):  # [q heads, k, v] per key/value group
        for t in ("weight", "bias"):
            fused = f"self_attention.query_key_value.{t}"
            names.layer[f"attn.{p}.{t}"] = Source(fused, cut=cut, grouped=_falcon_groups)
    for t in ("weight", "bias"):  # two norms (num_ln_in_parallel_attn 2: Falcon-40B, 180B)
        names.layer[f"before_attn.{t}"] = Source(f"input_layernorm.{t}", fallback=f"ln_attn.{t}")
        names.layer[f"before_mlp.{t}"] = Source(f"ln_mlp.{t}")
    return names


def _opt_names() -> Names:
    """OPT's learned table reserves its first two rows (positions start at row 2): they
    are rotated to the end, so archdb's row p is OPT's row p + 2 (a lossless reorder)."""
    layer = {
        f"attn.sublayer.{p}.{t}": Source(f"self_attn.{theirs}.{t}")
        for p, theirs in (QKVO | {"o": "out_proj"}).items()
        for t in ("weight", "bias")
    }
    for t in ("weight", "bias"):
        layer[f"attn.before.{t}"] = layer[f"attn.after.{t}"] = Source(f"self_attn_layer_norm.{t}")
        layer[f"mlp.before.{t}"] = layer[f"mlp.after.{t}"] = Source(f"final_layer_norm.{t}")
        layer[f"mlp.sublayer.up.{t}"] = Source(f"fc1.{t}")
        layer[f"mlp.sublayer.down.{t}"] = Source(f"fc2.{t}")
    top = {
        "embed.table.weight": Source("model.decoder.embed_tokens.weight"),
        "positions.table.weight": Source("model.decoder.embed_positions.weight", roll=-2),
        "decoder.final_norm.weight": Source("model.decoder.final_layer_norm.weight"),
        "decoder.final_norm.bias": Source("model.decoder.final_layer_norm.bias"),
        "head.lm_head.weight": Source("lm_head.weight"),
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
    write=gpt2,
    names=_gpt2_names,
    logit_error=2.9e-07,
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
    read=_read_gptj,
    write=gptj,
    names=_gptj_names,
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
    read=_read_gpt_neox,
    write=gpt_neox,
    names=_gpt_neox_names,
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
    read=_read_phi,
    write=phi,
    names=_phi_names,
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
    read=_read_opt,
    write=opt,
    names=_opt_names,
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
    read=_read_falcon,
    write=falcon,
    names=_falcon_names,
    logit_error=2.4e-07,
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
    write=openai_gpt,
)
