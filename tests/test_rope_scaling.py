"""RoPE scaling: each type's frequencies equal transformers', the schema asks for each
type's parameters, and a scaled toy keeps its parameters but not its outputs."""

from __future__ import annotations

import math
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


SHORT = [1.0, 1.1, 1.3, 1.6, 2.0, 2.6, 3.3, 4.0]
LONG = [1.0, 2.0, 4.0, 8.0, 12.0, 20.0, 30.0, 48.0]


@pytest.mark.parametrize("length", [1, 64, 65, 4096])
@pytest.mark.parametrize("attention_factor", [None, 0.9])
def test_longrope_frequencies_equal_transformers(length, attention_factor):
    """transformers' _compute_longrope_parameters for a sequence of ``length`` tokens: the
    short divisors up to original_max_position_embeddings (64), the long ones past it;
    factor left out of the config: max_position_embeddings / original (4096 / 64)."""
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": SHORT,
              "long_factor": LONG}  # fmt: skip
    if attention_factor is not None:
        params["attention_factor"] = attention_factor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()
        config = transformers.Phi3Config(
            hidden_size=128,
            num_attention_heads=4,
            partial_rotary_factor=0.5,
            max_position_embeddings=4096,
            original_max_position_embeddings=64,
            rope_parameters=params,
        )
        expected, factor = ROPE_INIT_FUNCTIONS["longrope"](config, "cpu", seq_len=length)
    scaling = RopeScaling(
        type="longrope",
        factor=64.0,
        original_context=64,
        short_factor=SHORT,
        long_factor=LONG,
        attention_factor=attention_factor,
    )
    ours, our_factor = scaled_frequencies(16, 10000.0, length, scaling)
    assert torch.equal(ours, expected)  # the same arithmetic, bit for bit
    assert our_factor == factor
    plain, _ = scaled_frequencies(16, 10000.0, length, None)
    assert torch.allclose(plain / torch.tensor(SHORT if length <= 64 else LONG), ours)


def test_a_longrope_build_switches_sets_at_the_original_context():
    """One table per set: a 16-token sequence rotates with the short divisors, a 17-token
    one with the long ones at every position, its first 16 included."""
    short = [1.0, 1.1, 1.2, 1.4, 1.6, 2.0, 2.5, 3.0]
    long = [1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0, 20.0]
    scaling = {"type": "longrope", "factor": 4.0, "original_context": 16,
               "short_factor": short, "long_factor": long}  # fmt: skip
    rotary = build_model(make_arch(**{"position.rope_scaling": scaling})).decoder.layers[0]
    rotary = rotary.attn.sublayer.rotary
    x = torch.ones(1, 17, 1, 16)
    factor = (1 + math.log(4.0) / math.log(16)) ** 0.5
    theta = 10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float32) / 16)
    for t, divisors in ((16, short), (17, long)):
        (out,) = rotary(x[:, :t])
        angle = (t - 1) / (torch.tensor(divisors) * theta)  # the last position
        expected = torch.cat((angle.cos() - angle.sin(), angle.cos() + angle.sin())) * factor
        assert torch.allclose(out[0, t - 1, 0], expected, atol=1e-6)


@pytest.mark.parametrize(
    ("scaling", "message"),
    [
        (
            {"type": "longrope", "factor": 4.0, "original_context": 16, "short_factor": SHORT},
            "short_factor and long_factor are required for, and only for, longrope",
        ),
        (
            {
                "type": "yarn",
                "factor": 4.0,
                "original_context": 16,
                "short_factor": SHORT,
                "long_factor": LONG,
            },
            "short_factor and long_factor are required for, and only for, longrope",
        ),
        (
            {
                "type": "longrope",
                "factor": 4.0,
                "original_context": 16,
                "short_factor": SHORT,
                "long_factor": LONG[:7],
            },
            "short_factor has 8 values but long_factor 7",
        ),
        (
            {
                "type": "longrope",
                "factor": 4.0,
                "original_context": 16,
                "short_factor": SHORT[:4],
                "long_factor": LONG[:4],
            },
            "have 4 values, but the heads rotate 8 pairs of dims",
        ),
        (
            {"type": "longrope", "factor": 4.0, "short_factor": SHORT, "long_factor": LONG},
            "original_context is required for longrope",
        ),
        (
            {"type": "linear", "factor": 2.0, "attention_factor": 1.0},
            "attention_factor is longrope only",
        ),
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


def test_a_longrope_toy_takes_the_cards_factors_at_evenly_spaced_frequencies():
    from archdb import api
    from archdb.builder.shrink import shrink

    card = api.card("phi-4-mini").architecture
    toy = shrink(card).arch
    full, cut = card.position.rope_scaling, toy.position.rope_scaling
    pairs = int(toy.head_dim_effective * 0.75) // 2
    assert len(cut.short_factor) == len(cut.long_factor) == pairs < len(full.long_factor)
    assert (cut.long_factor[0], cut.long_factor[-1]) == (full.long_factor[0], full.long_factor[-1])
    assert set(cut.long_factor) <= set(full.long_factor)
    assert cut.original_context == full.original_context
    assert build_model(toy)  # the toy builds
