"""Attention extras: sinks (gpt-oss) and output gates (Qwen3-Next): counts equal
transformers' attention modules, the sink softmax equals gpt-oss's, and the schema refuses
them where the builder has no meaning for them."""

from __future__ import annotations

import re

import pytest
import torch

from archdb.builder.model import build_model, count_parameters
from archdb.measure.analytic import flops, param_count
from archdb.parts import kernels as kernels_part
from archdb.plan import make_plan
from archdb.plan.layout import BuildError
from tests.conftest import (
    hf_import_count,
    latent_dims,
    make_arch,
    moe_block,
    needs_transformers,
    qk_norm,
)

GlobalKernel = kernels_part.modules().GlobalKernel

pytestmark = needs_transformers


def _attention_params(arch) -> int:
    return make_plan(arch).decoder.blocks[0].mixer.params()


def test_sinks_are_one_parameter_per_head_like_gpt_oss():
    from transformers import GptOssConfig
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention

    config = GptOssConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16)
    with torch.device("meta"):
        reference = GptOssAttention(config, 0)
    arch = make_arch(
        **{
            "attention.sinks": True,
            "attention.head_dim": 16,
            "bias.qkv": True,
            "bias.attn_out": True,
        }
    )
    expected = sum(p.numel() for p in reference.parameters())
    assert _attention_params(arch) == expected
    plain = make_arch(**{"attention.head_dim": 16, "bias.qkv": True, "bias.attn_out": True})
    assert param_count(arch).total - param_count(plain).total == 2 * 4  # 2 layers x 4 heads
    assert count_parameters(build_model(arch, device="meta")) == param_count(arch).total


def test_sink_softmax_equals_gpt_oss():
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward

    torch.manual_seed(0)
    b, h, t, d = 2, 4, 7, 8
    q, k, v = (torch.randn(b, h, t, d) for _ in range(3))
    kernel = GlobalKernel(d, causal=True, softcap=None, sink_heads=h)
    with torch.no_grad():
        kernel.sinks.copy_(torch.randn(h))
    module = torch.nn.Module()
    module.sinks, module.num_key_value_groups, module.training = kernel.sinks, 1, False
    mask = torch.full((t, t), float("-inf")).triu(1)
    expected, _ = eager_attention_forward(module, q, k, v, mask, d**-0.5)
    with torch.no_grad():
        ours = kernel(q, k, v).transpose(1, 2)
    assert torch.allclose(ours, expected, atol=1e-6)


def test_elementwise_output_gate_doubles_the_query_projection_like_qwen3_next():
    from transformers.models.qwen3_next.configuration_qwen3_next import Qwen3NextConfig
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextAttention

    config = Qwen3NextConfig(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16
    )
    with torch.device("meta"):
        reference = Qwen3NextAttention(config, 3)
    arch = make_arch(
        **{
            "attention.output_gate": "elementwise",
            "attention.head_dim": 16,
            **qk_norm("per-head"),
        }
    )
    assert _attention_params(arch) == sum(p.numel() for p in reference.parameters())
    model = build_model(arch, device="meta")
    assert model.decoder.layers[0].attn.sublayer.q.out_features == 4 * 16 * 2


def test_headwise_gate_adds_one_value_per_head_and_gates_the_output():
    plain = make_arch(**{"bias.qkv": True})
    gated = make_arch(**{"attention.output_gate": "headwise", "bias.qkv": True})
    assert param_count(gated).total - param_count(plain).total == 2 * (64 + 1) * 4  # 2 layers
    torch.manual_seed(0)
    attn = build_model(gated).eval().decoder.layers[0].attn.sublayer
    assert attn.o.bias is None  # o is linear: o(y / 2) = o(y) / 2
    x = torch.randn(1, 5, 64)
    with torch.no_grad():
        attn.q.weight[16::17].fill_(0)  # the gate rows: the last of each head's 17 outputs
        attn.q.bias[16::17].fill_(1e4)  # sigmoid = 1: the gate is open
        open_gate = attn(x)
        attn.q.bias[16::17].fill_(0)  # sigmoid(0) = 1/2 on every head
        half = attn(x)
    assert torch.allclose(half * 2, open_gate, atol=1e-6)
    assert not torch.allclose(half, open_gate)


@pytest.mark.parametrize(
    "changes",
    [
        {"attention.sinks": True, "attention.variant": "linear"},
        {
            "attention.output_gate": "elementwise",
            "attention.variant": "latent",
            "attention.latent": latent_dims(),
        },
        {"attention.qkv_clip": 8.0, "attention.variant": "linear"},
    ],
)
def test_extras_outside_softmax_head_attention_are_refused(changes):
    with pytest.raises(BuildError, match=re.escape("outside softmax head attention")):
        make_plan(make_arch(**changes))


@pytest.mark.parametrize(
    "changes",
    [{}, {"attention_bias": False, "tie_word_embeddings": True, "num_local_experts": 4}],
)
def test_import_hf_gpt_oss_small_configs_are_exact(changes):
    sizes = dict(
        vocab_size=1000,
        hidden_size=64,
        intermediate_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_local_experts=8,
        num_experts_per_tok=2,
        sliding_window=16,
    )
    ours, expected, card = hf_import_count("gpt_oss", **{**sizes, **changes})
    assert ours == expected
    arch = card.architecture
    assert arch.attention.sinks and arch.mlp.moe.router_bias
    assert [k.value for k in arch.attention.layer_pattern] == ["local", "global"]
    assert arch.mlp.activation.value == "clamped-swiglu"
    assert (arch.mlp.swiglu_limit, arch.mlp.swiglu_alpha) == (7.0, 1.702)  # GptOssConfig's


def test_clamped_swiglu_equals_gpt_oss_experts_gate():
    from transformers import GptOssConfig
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssExperts

    from archdb.parts import mlp as mlp_part

    Act = mlp_part.modules().Act
    from archdb.parts.mlp import ClampedSwiGLU
    from archdb.schema import Activation

    config = GptOssConfig(swiglu_limit=0.5, swiglu_alpha=1.3)
    reference = GptOssExperts.__new__(GptOssExperts)
    reference.alpha, reference.limit = config.swiglu_alpha, config.swiglu_limit
    torch.manual_seed(0)
    gate_up = torch.randn(6, 2 * 16)  # interleaved: gate in even columns, up in odd
    expected = reference._apply_gate(gate_up)
    act = Act(Activation.CLAMPED_SWIGLU, clamp=ClampedSwiGLU(limit=0.5, alpha=1.3))
    assert torch.equal(act(gate_up[:, 0::2], gate_up[:, 1::2]), expected)
    assert not torch.allclose(
        Act(Activation.CLAMPED_SWIGLU)(gate_up[:, 0::2], gate_up[:, 1::2]), expected
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mlp.swiglu_limit": 7.0}, "swiglu_limit is for clamped-swiglu and clipped-swiglu only"),
        ({"mlp.swiglu_alpha": 1.702}, "swiglu_alpha is clamped-swiglu only"),
    ],
)
def test_clamp_parameters_belong_to_the_clamped_swiglu(changes, message):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**changes)
    assert make_arch(**{"mlp.activation": "clamped-swiglu", **changes}).mlp.activation.gated


def test_the_clipped_swiglu_takes_a_limit_and_no_alpha():
    """DeepSeek-V4's unit: silu(min(gate, limit)) * clamp(up, -limit, limit)."""
    from pydantic import ValidationError

    from archdb.parts import mlp as mlp_part

    Act = mlp_part.modules().Act
    from archdb.schema import Activation

    clipped = {"mlp.activation": "clipped-swiglu"}
    assert make_arch(**clipped, **{"mlp.swiglu_limit": 10.0}).mlp.swiglu_limit == 10.0
    with pytest.raises(ValidationError, match="swiglu_alpha is clamped-swiglu only"):
        make_arch(**clipped, **{"mlp.swiglu_alpha": 1.702})
    gate, up = torch.tensor([[20.0, -3.0]]), torch.tensor([[-30.0, 2.0]])
    got = Act(Activation.CLIPPED_SWIGLU)(gate, up)  # the default limit: 7
    expected = torch.nn.functional.silu(torch.tensor([[7.0, -3.0]])) * torch.tensor([[-7.0, 2.0]])
    assert torch.allclose(got, expected)


def test_xielu_equals_transformers_and_counts_its_two_scalars():
    from transformers.activations import XIELUActivation

    from archdb.parts import mlp as mlp_part

    Act = mlp_part.modules().Act
    from archdb.schema import Activation

    reference = XIELUActivation(dtype=torch.float32)
    act = Act(Activation.XIELU)
    for name in ("alpha_p", "alpha_n"):  # the same initial values (a_p = a_n = 0.8)
        assert torch.allclose(getattr(act, name), getattr(reference, name), rtol=1e-6)
    with torch.no_grad():
        for p in (reference.alpha_p, reference.alpha_n):
            p.add_(0.3)
        act.alpha_p.copy_(reference.alpha_p)
        act.alpha_n.copy_(reference.alpha_n)
    x = torch.linspace(-6, 6, 101)
    assert torch.equal(act(x), reference(x))
    plain = make_arch(**{"mlp.activation": "relu"})
    xielu = make_arch(**{"mlp.activation": "xielu"})
    assert param_count(xielu).total - param_count(plain).total == 2 * 2  # 2 layers x 2
    assert count_parameters(build_model(xielu, device="meta")) == param_count(xielu).total


def test_an_activations_own_operators_are_counted_from_its_rule():
    """xIELU's expm1 and softplus are declared with its rule and nowhere in archdb.measure:
    fvcore's count of an xIELU toy equals the formula, and the runtime profile classes its
    operators as element-wise."""
    from archdb.choices.activations import ACTIVATIONS, Activation, activation_ops
    from archdb.measure import flops as measured
    from archdb.measure import profile
    from archdb.measure.analytic import flops

    assert set(ACTIVATIONS[Activation.XIELU].ops) == {"expm1", "softplus"} <= set(activation_ops())
    for op in activation_ops():
        assert f"aten::{op}" in measured.HANDLES
        assert profile.op_class(f"aten::{op}") is profile.OpClass.ELEMENTWISE
    arch = make_arch(**{"mlp.activation": "xielu"})
    counted = measured.measure_flops(build_model(arch), 16)
    assert counted.total == sum(flops(arch, 16).dense.values())


def test_xielu_experts_are_refused():
    with pytest.raises(BuildError, match="xielu in mixture-of-experts layers"):
        make_plan(make_arch(**{"mlp.activation": "xielu", "mlp.moe": moe_block()}))


# MPT: ALiBi, bias-free LayerNorms and linears, an exact-GELU MLP, a tied head; clip_qkv
_MPT_CARD = {
    "norm.type": "layernorm",
    "norm.affine": "scale",
    "position.type": "alibi",
    "position.rope_theta": None,
    "mlp.activation": "gelu",
    "mlp.gelu_approximation": "exact",
    "mlp.d_ff": 256,
    "attention.n_kv_heads": 4,
    "tied_embeddings": True,
}


@pytest.mark.parametrize("clip", [None, 0.05])
def test_a_clipped_mpt_equals_transformers_mpt(clip):
    """archdb's qkv clip, ALiBi and bias-free norms against MptForCausalLM with the same
    weights; tiny random weights put the projections near 0.1, so a clip of 0.05 binds."""
    from transformers import MptConfig, MptForCausalLM

    torch.manual_seed(0)
    config = MptConfig(
        d_model=64, n_heads=4, n_layers=2, expansion_ratio=4, max_seq_len=64, vocab_size=128,
        attn_config={"clip_qkv": clip, "alibi": True},
    )  # fmt: skip
    reference = MptForCausalLM(config).eval()
    arch = make_arch(**_MPT_CARD, **{"attention.qkv_clip": clip})
    model = build_model(arch).eval()
    theirs = dict(reference.named_parameters())
    ours = dict(model.named_parameters())
    with torch.no_grad():
        for p in theirs.values():
            p.add_(torch.randn_like(p) * 0.1)
        ours["embed.table.weight"].copy_(theirs["transformer.wte.weight"])
        ours["decoder.final_norm.weight"].copy_(theirs["transformer.norm_f.weight"])
        for i in range(2):
            block, layer = f"transformer.blocks.{i}.", f"decoder.layers.{i}."
            q, k, v = theirs[block + "attn.Wqkv.weight"].chunk(3)
            for name, w in (("q", q), ("k", k), ("v", v)):
                ours[f"{layer}attn.sublayer.{name}.weight"].copy_(w)
            ours[layer + "attn.sublayer.o.weight"].copy_(theirs[block + "attn.out_proj.weight"])
            ours[layer + "attn.before.weight"].copy_(theirs[block + "norm_1.weight"])
            ours[layer + "mlp.before.weight"].copy_(theirs[block + "norm_2.weight"])
            ours[layer + "mlp.sublayer.up.weight"].copy_(theirs[block + "ffn.up_proj.weight"])
            ours[layer + "mlp.sublayer.down.weight"].copy_(theirs[block + "ffn.down_proj.weight"])
    assert count_parameters(model) == sum(p.numel() for p in theirs.values())
    tokens = torch.randint(0, 128, (2, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(tokens).logits
        got = model(tokens)
        unclipped = build_model(make_arch(**_MPT_CARD)).eval()
        unclipped.load_state_dict(model.state_dict())
        free = unclipped(tokens)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert torch.equal(free, got) == (clip is None)  # the clip binds at 0.05


def test_a_qkv_clip_costs_one_comparison_per_projected_element():
    plain, clipped = make_arch(), make_arch(**{"attention.qkv_clip": 8.0})
    assert param_count(plain).total == param_count(clipped).total
    plain_flops = sum(flops(plain, 16).dense.values())
    clipped_flops = sum(flops(clipped, 16).dense.values())
    att, n_layers = clipped.attention, clipped.n_layers
    hd = clipped.d_model // att.n_heads
    projected = (att.n_heads + 2 * att.n_kv_heads) * hd  # q, k and v of one token
    assert clipped_flops - plain_flops == n_layers * 16 * projected


# --- value heads of their own width and sinks off the global layers (MiMo-V2-Flash) ---------


def test_value_heads_and_sliding_only_sinks_equal_mimo_v2_flash_attention():
    """Each layer's attention counts as transformers' MiMoV2FlashAttention: q/k at
    head_dim, v and o at v_head_dim, sinks on the sliding layer only, the full layer with
    its own (fewer) KV heads."""
    from transformers import MiMoV2FlashConfig
    from transformers.models.mimo_v2_flash.modeling_mimo_v2_flash import MiMoV2FlashAttention

    config = MiMoV2FlashConfig(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=1, head_dim=24, v_head_dim=16,
        num_hidden_layers=2, layer_types=["full_attention", "sliding_attention"],
    )  # fmt: skip
    arch = make_arch(
        **{
            "attention.layer_pattern": ["global", "local"],
            "attention.sliding_window": 8,
            "attention.n_kv_heads": 2,
            "attention.head_dim": 24,
            "attention.v_head_dim": 16,
            "attention.sinks": True,
            "attention.global_layers": {"n_kv_heads": 1, "sinks": False},
        }
    )
    blocks = make_plan(arch).decoder.blocks
    with torch.device("meta"):
        for i in (0, 1):
            theirs = sum(p.numel() for p in MiMoV2FlashAttention(config, i).parameters())
            assert blocks[i].mixer.params() == theirs
    assert blocks[0].mixer.kernel.sink_heads == 0 and blocks[1].mixer.kernel.sink_heads == 4
    model = build_model(arch)
    assert model.decoder.layers[0].attn.sublayer.o.in_features == 4 * 16
    out = model(torch.randint(0, arch.vocab_size, (1, 12)))
    assert out.shape == (1, 12, arch.vocab_size)


def test_a_value_norm_spans_the_value_heads_own_width():
    """Values 16 wide beside 24-wide keys: the value norm normalizes 16 dims."""
    arch = make_arch(
        **{"attention.head_dim": 24, "attention.v_head_dim": 16, "attention.value_norm": True}
    )
    model = build_model(arch)
    attention = model.decoder.layers[0].attn.sublayer
    v = torch.randn(1, 2, 3, 16) * 5
    assert torch.allclose(attention.value_norm(v).pow(2).mean(-1), torch.ones(1, 2, 3), atol=1e-3)
    assert model(torch.randint(0, arch.vocab_size, (1, 12))).isfinite().all()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.value_multiplier": 0.7}, "value_multiplier needs attention.v_head_dim"),
        (
            {"attention.v_head_dim": 8, "attention.output_gate": "elementwise"},
            "v_head_dim with an output gate",
        ),
        (
            {"attention.layer_pattern": ["global", "local"], "attention.sliding_window": 8,
             "attention.global_layers": {"sinks": False}},
            "global_layers.sinks needs attention.sinks",
        ),
    ],
)  # fmt: skip
def test_value_head_fields_are_refused_where_they_mean_nothing(changes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make_arch(**changes)
