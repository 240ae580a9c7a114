"""Mamba-1 (the selective SSM of Mamba, Falcon Mamba and Jamba) as a layer-pattern mixer.

The mixer's forward pass equals transformers' MambaMixer, FalconMambaMixer and
JambaMambaMixer on the same weights; its state is a constant of the context; the schema
refuses a pattern and sizes that disagree; the toy keeps the inner width and dt rank
ratios. (Counts: tests/test_params_vs_hf.py; imports and logits: test_hf_import.py,
test_fidelity.py.)"""

from __future__ import annotations

import re

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.measure.analytic import flops
from archdb.measure.flops import measure_flops
from archdb.mixers.mamba import MambaInnerNorm, mamba_module
from archdb.plan import make_plan
from archdb.plan.plan import cache_bytes
from tests.conftest import (
    MAMBA_HYBRID,
    MAMBA_ONLY,
    assert_causal,
    make_arch,
    mamba_dims,
    needs_transformers,
)

pytestmark = needs_transformers

_SIZES = dict(hidden_size=64, state_size=16, conv_kernel=4, expand=2, time_step_rank=4)


def _reference(model_type: str, **changes):
    """transformers' mixer of a family, from its own config class."""
    import transformers

    config = transformers.AutoConfig.for_model(model_type, **{**_SIZES, **changes})
    if model_type == "mamba":
        from transformers.models.mamba.modeling_mamba import MambaMixer as Reference
    elif model_type == "falcon_mamba":
        from transformers.models.falcon_mamba.modeling_falcon_mamba import (
            FalconMambaMixer as Reference,
        )
    else:
        from transformers.models.jamba.modeling_jamba import JambaMambaMixer as Reference
    if model_type == "falcon_mamba":  # as FalconMambaBlock builds it
        return Reference(config, layer_idx=0, initialize_mixer_weights=False)
    return Reference(config, layer_idx=0)


_NORM_NAMES = {f"{x}_layernorm.weight": f"{x}_norm_weight" for x in ("dt", "b", "c")}


@pytest.mark.parametrize(
    ("model_type", "changes", "norm", "eps"),
    [
        ("mamba", {"use_bias": True}, MambaInnerNorm.NONE, None),
        ("falcon_mamba", {"use_conv_bias": False, "mixer_rms_eps": 1e-3}, "rms", 1e-3),
        ("jamba", {"rms_norm_eps": 1e-3}, "rms-scaled", 1e-3),
    ],
)
def test_mamba_forward_equals_transformers_on_the_same_weights(model_type, changes, norm, eps):
    if model_type == "jamba":  # Jamba's sizes carry the mamba_ prefix
        changes = {
            "hidden_size": 64, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
            "mamba_dt_rank": 4, **changes,
        }  # fmt: skip
    torch.manual_seed(0)
    reference = _reference(model_type, **changes).eval()
    bias = changes.get("use_bias", False)
    conv_bias = changes.get("use_conv_bias", True)
    ours = mamba_module()(64, 128, 16, 4, 4, conv_bias, bias, MambaInnerNorm(norm), eps)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3)
            ours.get_parameter(_NORM_NAMES.get(name, name)).copy_(p)
        x = torch.randn(2, 11, 64)
        expected = reference(x)
        got = ours(x)
    names = {_NORM_NAMES.get(n, n) for n, _ in reference.named_parameters()}
    assert names == {n for n, _ in ours.named_parameters()}
    assert float((got - expected).abs().max() / expected.abs().max()) < 1e-5


def test_the_inner_norm_changes_the_output():
    torch.manual_seed(0)
    plain = mamba_module()(64, 128, 16, 4, 4, True, False)
    normed = mamba_module()(64, 128, 16, 4, 4, True, False, MambaInnerNorm.RMS)
    normed.load_state_dict(plain.state_dict())
    x = torch.randn(1, 7, 64)
    with torch.no_grad():
        assert not torch.allclose(plain(x), normed(x))


def test_mamba_state_is_a_constant_of_the_context():
    plan = make_plan(make_arch(**MAMBA_ONLY))
    per_layer = 128 * 16 + 128 * 3  # SSM state d_inner x N, conv inputs d_inner x (K - 1)
    for context in (16, 4096, 1_000_000):
        assert cache_bytes(plan, context, 2) == 2 * 2 * per_layer
    hybrid = make_plan(make_arch(**MAMBA_HYBRID))  # one mamba, one attention layer
    assert cache_bytes(hybrid, 100, 1) == per_layer + 2 * 2 * 16 * 100


def test_mamba_layers_are_causal_and_mixer_only_when_mlp_is_false():
    torch.manual_seed(0)
    model = build_model(make_arch(**MAMBA_HYBRID)).eval()
    assert [type(x.attn.sublayer).__name__ for x in model.decoder.layers] == [
        "MambaMixer", "HeadAttention",
    ]  # fmt: skip
    assert all(layer.mlp is not None for layer in model.decoder.layers)
    assert build_model(make_arch(**MAMBA_ONLY), device="meta").decoder.layers[0].mlp is None
    assert_causal(model)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.layer_pattern": ["mamba"]}, "mixers.mamba is required for, and only for"),
        ({"mixers": {"mamba": mamba_dims()}}, "mixers.mamba is required for, and only for"),
        (
            {**MAMBA_ONLY, "mixers": {"mamba": mamba_dims(inner_norm="layernorm")}},
            "inner_norm",
        ),
    ],
)
def test_schema_refuses_mamba_sizes_that_disagree_with_the_pattern(changes, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**changes)


def test_toy_of_a_full_size_mamba_keeps_its_ratios_and_counts_exactly():
    full = make_arch(
        **{
            **MAMBA_ONLY,
            "d_model": 768,
            "n_layers": 24,
            "mixers": {"mamba": mamba_dims(d_inner=1536, dt_rank=48, state_size=16)},
        }
    )
    toy = shrink(full).arch
    m = toy.mixers.mamba
    assert (toy.d_model, toy.n_layers) == (64, 2)
    assert (m.d_inner, m.dt_rank, m.state_size, m.conv_kernel) == (128, 4, 16, 4)
    assert measure_flops(build_model(toy), 24).total == sum(flops(toy, 24).dense.values())
