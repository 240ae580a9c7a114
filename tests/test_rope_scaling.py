"""RoPE scaling: the four types' frequencies equal transformers', the schema asks for
each type's parameters, and a scaled toy keeps its parameters but not its outputs."""

from __future__ import annotations

import re
import warnings

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.measure.analytic import param_count
from archdb.parts import positions as positions_part
from archdb.schema import RopeScaling
from tests.conftest import make_arch, needs_transformers, qk_norm

scaled_frequencies = positions_part.modules().scaled_frequencies

pytestmark = needs_transformers

CASES = [
    ({"type": "linear", "factor": 4.0}, {}, 128),
    (
        {"type": "llama3", "factor": 8.0, "original_context": 64},
        {"low_freq_factor": 1.0, "high_freq_factor": 4.0},
        256,
    ),
    (
        {"type": "yarn", "factor": 32.0, "original_context": 64},
        {"beta_fast": 32.0, "beta_slow": 1.0},
        2048,
    ),
    ({"type": "dynamic", "factor": 2.0, "original_context": 64}, {}, 128),
    (  # gpt-oss: the exact band between beta_fast and beta_slow, not rounded to whole dims
        {"type": "yarn", "factor": 32.0, "original_context": 4096},
        {"beta_fast": 32.0, "beta_slow": 1.0, "truncate": False},
        8192,
    ),
    (  # DeepSeek-V2: cos/sin at mscale / mscale_all_dim's terms (here 1.0)
        {"type": "yarn", "factor": 40.0, "original_context": 4096},
        {"beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 0.707},
        8192,
    ),
    (  # Kimi K2's band (beta 1 and 1) and a pair whose ratio is not 1
        {"type": "yarn", "factor": 32.0, "original_context": 4096},
        {"beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 0.5},
        8192,
    ),
]


@pytest.mark.parametrize(("card", "extra", "length"), CASES, ids=lambda c: str(c)[:20])
def test_frequencies_equal_transformers(card, extra, length):
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    kind = card["type"]
    original = card.get("original_context", length)
    params = {"rope_type": kind, "rope_theta": 10000.0, "factor": card["factor"], **extra}
    if kind in ("llama3", "yarn"):
        params["original_max_position_embeddings"] = original
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()
        config = transformers.LlamaConfig(
            hidden_size=256,
            num_attention_heads=4,
            head_dim=64,
            # dynamic grows the base past max_position_embeddings: the original context
            max_position_embeddings=original if kind == "dynamic" else length,
            rope_parameters=params,
        )
        init = ROPE_INIT_FUNCTIONS[kind]
        expected, factor = (
            init(config, "cpu", seq_len=length) if kind == "dynamic" else init(config, "cpu")
        )
    ours, our_factor = scaled_frequencies(64, 10000.0, length, RopeScaling(**card, **extra))
    assert torch.allclose(ours, expected.float(), rtol=1e-5)
    assert our_factor == pytest.approx(factor)
    assert not torch.allclose(ours, scaled_frequencies(64, 10000.0, length, None)[0])


@pytest.mark.parametrize(
    ("scaling", "message"),
    [
        ({"type": "yarn", "factor": 4.0}, "original_context is required for yarn"),
        (
            {"type": "llama3", "factor": 8.0, "original_context": 8192},
            "low_freq_factor and high_freq_factor are required for, and only for, llama3",
        ),
        ({"type": "linear", "factor": 2.0, "beta_fast": 32.0}, "beta_fast and beta_slow are yarn"),
        ({"type": "linear", "factor": 2.0, "truncate": False}, "truncate is yarn only"),
        (
            {"type": "linear", "factor": 2.0, "mscale_all_dim": 1.0},
            "mscale and mscale_all_dim are yarn only",
        ),
        (
            {"type": "yarn", "factor": 4.0, "original_context": 64, "mscale": 1.0},
            "mscale needs mscale_all_dim",
        ),
    ],
)
def test_schema_asks_for_each_types_parameters(scaling, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**{"position.rope_scaling": scaling})
    with pytest.raises(ValidationError, match=re.escape("rope_scaling is set but")):
        make_arch(
            **{
                "position.type": "learned",
                "position.rope_theta": None,
                "position.rope_scaling": {"type": "linear", "factor": 2.0},
            }
        )


def test_scaling_changes_outputs_not_parameters():
    plain = make_arch()
    scaled = make_arch(**{"position.rope_scaling": {"type": "linear", "factor": 4.0}})
    assert param_count(plain).total == param_count(scaled).total
    tokens = torch.randint(0, 128, (1, 16))
    outputs = []
    for arch in (plain, scaled):
        torch.manual_seed(0)
        with torch.no_grad():
            outputs.append(build_model(arch).eval()(tokens))
    assert outputs[0].shape == outputs[1].shape
    assert not torch.allclose(*outputs)
    layer = build_model(scaled).decoder.layers[0].attn.sublayer
    expected, _ = scaled_frequencies(16, 10000.0, 64, RopeScaling(type="linear", factor=4.0))
    assert torch.allclose(layer.rotary.cos[1, :8], torch.cos(expected))


def test_ntk_alpha_stretches_the_base_once_at_every_length():
    """Hunyuan's alpha: base theta * alpha^(d/(d-2)) whatever the table length, and no
    original context needed (transformers' ntk_alpha)."""
    scaling = RopeScaling(type="ntk-alpha", factor=1000.0)
    dims, theta = 16, 10000.0
    base = theta * 1000.0 ** (dims / (dims - 2))
    expected = 1.0 / base ** (torch.arange(0, dims, 2, dtype=torch.float32) / dims)
    for length in (8, 100_000):
        inv, factor = scaled_frequencies(dims, theta, length, scaling)
        assert factor == 1.0 and torch.allclose(inv, expected, rtol=1e-6, atol=0)


def test_qk_norm_after_rope_needs_a_qk_norm():
    with pytest.raises(ValidationError, match="qk_norm_after_rope needs a qk_norm"):
        make_arch(**{"attention.qk_norm": "none", "attention.qk_norm_after_rope": True})
    assert make_arch(**qk_norm("per-head"), **{"attention.qk_norm_after_rope": True})
