"""BitNet b1.58 (transformers' bitnet): Llama with a norm inside each sublayer and the gated
squared ReLU.

transformers' BitNetForCausalLM is Llama's layout plus ``attn_sub_norm`` (an RMSNorm over
the heads' outputs before o_proj) and ``ffn_sub_norm`` (one over relu(gate)^2 * up before
down_proj): the card's ``norm.sublayer_norms``. The released checkpoint's ternary weights
are a quantization of these linear layers (BitLinear), not a different architecture.
"""

from __future__ import annotations

from archdb.schema import Architecture
from archdb_hf.families.llama import LLAMA, llama_names
from archdb_hf.keymap import Key, require
from archdb_hf.tensors import Names, Source

# --- card -> config (the reference): what no key can write ------------------------------


def _bitnet(a: Architecture) -> dict:
    require(bool(a.norm.sublayer_norms), "norm.sublayer_norms: BitNet's layers always have them")
    require(
        a.attention.n_heads * a.head_dim_effective == a.d_model,
        "attn_sub_norm is hidden_size wide: n_heads * head_dim must equal d_model",
    )
    return {}


# --- checkpoint names (loading weights) --------------------------------------------------


def _bitnet_names() -> Names:
    names = llama_names()
    names.layer["attn.sublayer.sub_norm.weight"] = Source("self_attn.attn_sub_norm.weight")
    names.layer["mlp.sublayer.sub_norm.weight"] = Source("mlp.ffn_sub_norm.weight")
    return names


# --- the family ------------------------------------------------------------------------

BITNET = LLAMA.derive(
    "bitnet",
    classes="BitNet",
    mlp_bias=False,
    activation_default="relu2",
    rope_theta_default=500000.0,
    eps_default=1e-05,
    keys=(Key("mlp_bias"), Key("hidden_act", out=lambda a: "relu2", read=False)),
    fixed=(("norm.sublayer_norms", True),),
    write=_bitnet,
    extras=frozenset({"sublayer_norms"}),
    names=_bitnet_names,
    logit_error=0.0,
)
