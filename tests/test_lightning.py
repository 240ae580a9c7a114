"""MiniMax-01's lightning attention as a layer-pattern mixer (lightning), and MiniMax's block:
the residual taken after each norm (normed-skip) with alpha (skip) and beta (output)
factors per sublayer kind.

Counts equal transformers' MiniMaxLightningAttention and whole MiniMax models, the
recurrent forward pass equals transformers' blocked one on the same weights (sequences
longer than a block), the decay rule is MiniMax's per layer, the state is a constant of
the context, FLOPs measured by fvcore equal the formula, and import-hf maps transformers'
and the released remote code's keys exactly."""

from __future__ import annotations

import re

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model, count_parameters
from archdb.measure.analytic import cache_size, param_count
from archdb.mixers.lightning import lightning_module, minimax_decay_rates
from archdb.plan import make_plan
from archdb.plan.plan import cache_bytes
from tests.conftest import (
    MINIMAX_HYBRID,
    assert_causal,
    hf_import_count,
    lightning_dims,
    make_arch,
    needs_transformers,
)

pytestmark = needs_transformers


MINIMAX_SMALL = dict(
    vocab_size=1000,
    hidden_size=64,
    intermediate_size=32,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    num_local_experts=4,
    num_experts_per_tok=2,
    layer_types=["linear_attention"] * 3 + ["full_attention"],
    block_size=8,
)


def _minimax_config(**changes):
    import transformers

    return transformers.MiniMaxConfig(**{**MINIMAX_SMALL, **changes})


@pytest.mark.parametrize("changes", [{}, {"num_attention_heads": 8, "head_dim": 8}])
def test_lightning_counts_and_names_equal_transformers(changes):
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    config = _minimax_config(**changes)
    with torch.device("meta"):
        reference = MiniMaxLightningAttention(config, 0)
    dims = lightning_dims(n_heads=config.num_attention_heads, head_dim=config.head_dim)
    heads = {"attention.n_heads": dims["n_heads"], "attention.head_dim": dims["head_dim"]}
    arch = make_arch(**{**MINIMAX_HYBRID, **heads, "mixers": {"lightning": dims}})
    mixer = make_plan(arch).decoder.blocks[0].mixer
    expected = sum(p.numel() for p in reference.parameters())
    assert mixer.params() == expected
    module = mixer.module(_Ctx(0, 4))
    assert count_parameters(module) == expected
    renamed = {n.replace("norm_weight", "norm.weight") for n, _ in module.named_parameters()}
    assert renamed == {n for n, _ in reference.named_parameters()}


class _Ctx:
    def __init__(self, layer: int, n_layers: int) -> None:
        self.layer, self.n_layers = layer, n_layers


@pytest.mark.parametrize(("layer", "seq"), [(0, 19), (2, 24), (3, 5)])
def test_lightning_forward_equals_transformers_blocks_on_the_same_weights(layer, seq):
    """transformers sums a block of 8 tokens at a time; archdb's recurrence one token at a
    time: the same function, across blocks and a partial last block."""
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    torch.manual_seed(0)
    config = _minimax_config()
    reference = MiniMaxLightningAttention(config, layer).eval()
    rates = minimax_decay_rates(4, layer, 4)
    ours = lightning_module()(64, 4, 16, rates, 1e-6)
    assert torch.allclose(ours.slope_rate, reference.slope_rate)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            p.copy_(torch.randn_like(p) * 0.2)
            ours.get_parameter(name.replace("norm.weight", "norm_weight")).copy_(p)
        x = torch.randn(2, seq, 64)
        expected, _ = reference(x, None, None)
        assert torch.allclose(ours(x), expected, atol=1e-5, rtol=1e-5)


def test_the_decay_rule_is_minimaxs_per_layer_and_head():
    """ALiBi's head slopes 2^(-8h/H), shrunk towards the top of the stack: the last layer
    barely decays."""
    first, last = minimax_decay_rates(8, 0, 80), minimax_decay_rates(8, 79, 80)
    assert first[0] == pytest.approx(2 ** (-1) * (1 + 1e-5))
    assert first[-1] == pytest.approx(2 ** (-8) * (1 + 1e-5))
    assert max(last) < 1e-4
    model = build_model(make_arch(**MINIMAX_HYBRID))
    rates = [model.decoder.layers[i].attn.sublayer.slope_rate.flatten() for i in (0, 1)]
    assert torch.allclose(rates[0], torch.tensor(minimax_decay_rates(4, 0, 4)))
    assert torch.allclose(rates[1], torch.tensor(minimax_decay_rates(4, 1, 4)))


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"tie_word_embeddings": True, "full_attn_alpha_factor": 3.5, "mlp_beta_factor": 0.5},
        {"layer_types": ["linear_attention", "full_attention"] * 2},
    ],
)
def test_minimax_card_counts_equal_transformers_model(changes):
    from archdb_hf.testing import hf_parameter_count

    ours, expected, card = hf_import_count("minimax", **{**MINIMAX_SMALL, **changes})
    assert ours == expected
    arch = card.architecture
    assert param_count(arch).total == expected
    assert hf_parameter_count(arch, "minimax") == expected


def test_lightning_state_is_a_constant_of_the_context():
    arch = make_arch(**MINIMAX_HYBRID)
    plan = make_plan(arch)
    state = 3 * 4 * 16 * 16  # three lightning layers: 4 heads x a 16 x 16 state
    kv = 2 * 2 * 16  # one attention layer: K and V of 2 heads x 16 per token
    for context in (1, 100, 100_000):
        assert cache_bytes(plan, context, 1) == state + kv * context
    assert cache_size(arch, context=100).total == 2 * (state + kv * 100)


def test_minimax_toy_is_causal_and_counts_flops_exactly():
    from archdb.measure.analytic import flops
    from archdb.measure.flops import measure_flops

    torch.manual_seed(0)
    arch = make_arch(**MINIMAX_HYBRID)
    model = build_model(arch).eval()
    kinds = [type(layer.attn.sublayer).__name__ for layer in model.decoder.layers]
    assert kinds == ["LightningMixer"] * 3 + ["ScaledMixer"]
    assert_causal(model)
    assert measure_flops(model, 24).total == sum(flops(arch, 24).dense.values())


def test_normed_skip_adds_the_normed_input_scaled_by_alpha():
    """MiniMax's block: h = norm(x); x' = alpha * h + beta * f(h)."""
    arch = make_arch(**{"norm.position": "normed-skip", "attention.skip_multiplier": 2.0})
    block = build_model(arch).decoder.layers[0].attn
    x = torch.randn(1, 5, 64)
    with torch.no_grad():
        h = block.before(x)
        expected = 2.0 * h + block.sublayer(h, None)
        assert torch.allclose(block(x, None, None)[0], expected, atol=1e-6)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"attention.layer_pattern": ["lightning", "global"]},
            "mixers.lightning is required for, and only for",
        ),
        ({"mixers": {"lightning": lightning_dims()}}, "mixers.lightning is required for"),
        (
            {**MINIMAX_HYBRID, "mixers": {"lightning": lightning_dims(decay="alibi")}},
            "decay",
        ),
        (
            {**MINIMAX_HYBRID, "mixers": {"lightning": lightning_dims(skip_multiplier=0)}},
            "skip_multiplier",
        ),
    ],
)
def test_schema_refuses_lightning_sizes_that_disagree_with_the_pattern(changes, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**changes)


def test_normed_skip_is_refused_in_parallel_blocks():
    from archdb.plan.layout import BuildError

    arch = make_arch(
        **{
            "norm.position": "normed-skip",
            "parallel_layers": True,
            "norm.shared_in_parallel": False,
        }
    )
    with pytest.raises(BuildError, match="normed-skip outside serial decoder-only blocks"):
        make_plan(arch)


REMOTE_CODE = {  # the released remote code's spelling (MiniMaxText01Config)
    "model_type": "minimax",
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 32,
    "num_hidden_layers": 8,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "attn_type_list": [0] * 7 + [1],
    "layernorm_full_attention_alpha": 3.5,
    "layernorm_full_attention_beta": 1.0,
    "layernorm_linear_attention_alpha": 3.25,
    "layernorm_linear_attention_beta": 0.75,
    "layernorm_mlp_alpha": 2.5,
    "layernorm_mlp_beta": 0.5,
    "postnorm": True,
    "rotary_dim": 8,
    "rope_theta": 10_000_000,
    "max_position_embeddings": 4096,
}


def _import(config: dict):
    from archdb_hf.importer import Identity, import_config

    identity = Identity("minimax-tiny", "MiniMax tiny", "minimax-01", "Example Lab", "2025-01-14")
    return import_config(config, source_url="https://huggingface.co/o/m", identity=identity).card


def test_import_hf_reads_the_released_remote_code_keys():
    from archdb.writer import validate_card

    arch = validate_card(_import(REMOTE_CODE)).architecture
    assert [k.value for k in arch.attention.layer_pattern] == ["lightning"] * 7 + ["global"]
    assert arch.norm.position == "normed-skip"
    assert (arch.attention.skip_multiplier, arch.attention.output_multiplier) == (3.5, 1.0)
    li = arch.mixers.lightning
    assert (li.n_heads, li.head_dim, li.skip_multiplier, li.output_multiplier) == (
        4,
        16,
        3.25,
        0.75,
    )
    assert (arch.mlp.skip_multiplier, arch.mlp.output_multiplier) == (2.5, 0.5)
    assert arch.position.rotary_fraction == 0.5
    assert arch.mlp.moe.n_experts == 4


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"postnorm": False}, "postnorm is false"),
        (
            {"model_type": "minimax_m1", "num_attention_heads": 6, "hidden_size": 96},
            "num_attention_heads is 6, not a power of 2",
        ),
        ({"attn_type_list": [0, 1]}, "attn_type_list lists 2 layers"),
        ({"attn_type_list": [0, 2] * 4}, "attn_type_list.1: Input should be less than"),
        ({"layernorm_mlp_alpha": "2"}, "layernorm_mlp_alpha: must be a number"),
    ],
)
def test_hostile_minimax_configs_are_refused_naming_the_key(changes, fragment):
    from archdb_hf.importer import HFImportError

    with pytest.raises(HFImportError, match=re.escape(fragment)):
        _import({**REMOTE_CODE, **changes})
