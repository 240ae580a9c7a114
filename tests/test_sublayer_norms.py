"""Sub-norms (``norm.sublayer_norms``, BitNet's subln) and the gated squared ReLU
(``squared-reglu``): counts, FLOPs, the built modules and where the schema refuses them.

Against transformers: tests/test_params_vs_hf.py (counts) and tests/test_fidelity.py
(logits of a tiny bitnet checkpoint).
"""

from __future__ import annotations

import re

import pytest
import torch

from archdb.builder.model import build_model, count_parameters
from archdb.choices.activations import ACTIVATIONS, Activation
from archdb.measure.analytic import flops, param_count
from archdb.measure.flops import measure_flops
from tests.conftest import latent_dims, make_arch, mamba2_dims, moe_block

BITNET = {"norm.sublayer_norms": True, "mlp.activation": "squared-reglu"}
D, HEADS, HEAD_DIM, D_FF, LAYERS = 64, 4, 16, 128, 2  # conftest's base architecture


def test_each_layer_gains_one_scale_per_attention_output_and_per_mlp_activation():
    plain = make_arch(**{"mlp.activation": "squared-reglu"})
    subln = make_arch(**BITNET)
    assert param_count(subln).total - param_count(plain).total == LAYERS * (HEADS * HEAD_DIM + D_FF)
    assert count_parameters(build_model(subln, device="meta")) == param_count(subln).total


def test_a_scale_free_norm_adds_no_parameters_but_still_normalizes():
    arch = make_arch(**BITNET, **{"norm.type": "layernorm", "norm.affine": "none"})
    plain = make_arch(**{"norm.type": "layernorm", "norm.affine": "none"})
    assert param_count(arch).total == param_count(plain).total
    assert sum(flops(arch, 16).dense.values()) > sum(flops(plain, 16).dense.values())


def test_the_formula_counts_what_the_model_runs():
    arch = make_arch(**BITNET)
    t = 20
    assert measure_flops(build_model(arch), t).total == sum(flops(arch, t).dense.values())
    plain = make_arch(**{"mlp.activation": "squared-reglu"})
    # an RMSNorm with a scale: square, mean, rsqrt and two products per element
    added = sum(flops(arch, t).dense.values()) - sum(flops(plain, t).dense.values())
    widths = HEADS * HEAD_DIM + D_FF
    assert added % (LAYERS * t * widths) == 0 and added > 0


def test_the_built_layer_normalizes_before_o_and_before_down():
    torch.manual_seed(0)
    block = build_model(make_arch(**BITNET, **{"norm.eps": 1e-5})).eval().decoder.layers[0]
    attn, mlp = block.attn.sublayer, block.mlp.sublayer
    assert attn.sub_norm.weight.shape == (HEADS * HEAD_DIM,)
    assert mlp.sub_norm.weight.shape == (D_FF,)
    x = torch.randn(2, 5, D)
    with torch.no_grad():
        mlp.sub_norm.weight.copy_(torch.rand(D_FF) + 0.5)
        h = torch.relu(mlp.gate(x)).square() * mlp.up(x)
        rms = h.pow(2).mean(-1, keepdim=True).add(1e-5).rsqrt()
        assert torch.allclose(mlp(x), mlp.down(h * rms * mlp.sub_norm.weight), atol=1e-6)
        # the attention output's scale is invisible to o but for the norm: doubling v
        # doubles the heads' outputs, which the sub-norm takes back out
        before = attn(x)
        attn.v.weight.mul_(2)
        assert torch.allclose(attn(x), before, atol=1e-4)  # but for the epsilon


def test_without_the_field_the_layers_are_unchanged():
    block = build_model(make_arch(), device="meta").decoder.layers[0]
    assert block.attn.sublayer.sub_norm is None and block.mlp.sublayer.sub_norm is None


def test_the_gated_squared_relu_squares_the_gate_only():
    rule = ACTIVATIONS[Activation.SQUARED_REGLU]
    assert Activation.SQUARED_REGLU.gated and not Activation.SQUARED_RELU.gated
    gate, up = torch.tensor([-2.0, 0.5, 3.0]), torch.tensor([5.0, 2.0, -1.0])
    act = build_model(make_arch(**BITNET)).decoder.layers[0].mlp.sublayer.act
    assert torch.equal(act(gate, up), torch.tensor([0.0, 0.5, -9.0]))
    assert rule.flops_per_element == ACTIVATIONS[Activation.SQUARED_RELU].flops_per_element


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"attention.variant": "latent", "attention.latent": latent_dims()},
            "norm.sublayer_norms is for softmax attention, not variant latent",
        ),
        (
            {"attention.variant": "linear"},
            "norm.sublayer_norms is for softmax attention, not variant linear",
        ),
        ({"mlp.moe": moe_block()}, "norm.sublayer_norms is for dense MLPs"),
        (
            {
                "attention.layer_pattern": ["mamba2", "global"],
                "mixers": {"mamba2": mamba2_dims()},
            },
            "norm.sublayer_norms has no place in recurrent mixers (mamba2)",
        ),
    ],
)
def test_sub_norms_are_refused_where_they_mean_nothing(changes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make_arch(**{"norm.sublayer_norms": True}, **changes)
