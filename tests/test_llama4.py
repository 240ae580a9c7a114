"""Llama 4's mechanisms (transformers' Llama4TextAttention and Llama4TextMoe): the NoPE
layers' attention temperature tuning, the QK norm only where q and k rotate, each expert's
input weighted by its score; the card fields that hold them, and import-hf's reading."""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.conventions import FlopClass as C
from archdb.parts import kernels as kernels_part
from archdb.parts.kernels import FloorLogTemperature, SoftmaxKernel
from archdb.plan import make_plan
from archdb.schema import LayerKind
from archdb.tally import Tally
from archdb_hf.importer import HFImportError, Identity, import_config
from archdb_hf.reference import NotRepresentable, convert
from tests.conftest import LLAMA4_LIKE, make_arch

GlobalKernel = kernels_part.modules().GlobalKernel


def test_the_nope_temperature_multiplies_each_querys_logits_by_its_floor_log_step():
    kernel = GlobalKernel(8, causal=True, softcap=None)
    kernel.floor_temperature = FloorLogTemperature(floor_scale=4, scale=0.1)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 12, 8) * 3 for _ in range(3))
    scores = torch.matmul(q * 8**-0.5, k.transpose(-1, -2))
    factor = torch.tensor([1 + 0.1 * math.log1p((p + 1) // 4) for p in range(12)])
    assert factor[2] == 1.0 and factor[3] > 1.0  # the first step at p + 1 = floor_scale
    hidden = torch.ones(12, 12, dtype=torch.bool).triu(1)
    probs = (scores * factor[:, None]).masked_fill(hidden, float("-inf")).softmax(dim=-1)
    torch.testing.assert_close(kernel(q, k, v), torch.matmul(probs, v))


def test_the_nope_temperature_costs_one_flop_per_score_and_six_per_query():
    floor = FloorLogTemperature(4, 0.1)
    with_it = SoftmaxKernel(LayerKind.GLOBAL_NOPE, 8, True, None, None, floor_temperature=floor)
    without = SoftmaxKernel(LayerKind.GLOBAL_NOPE, 8, True, None, None)
    a, b = Tally(10), Tally(10)
    with_it.flops(a, 2, 8)
    without.flops(b, 2, 8)
    assert a.dense[C.ATTENTION] - b.dense[C.ATTENTION] == 2 * 10 * 10 + 6 * 10


def test_only_the_nope_layers_are_tempered_and_only_the_rotating_ones_norm_q_and_k():
    blocks = make_plan(make_arch(**LLAMA4_LIKE)).decoder.blocks
    kinds = [b.mixer.kernel.kind for b in blocks]
    assert kinds == [LayerKind.CHUNKED] * 3 + [LayerKind.GLOBAL_NOPE]
    assert [b.mixer.qk_norm is not None for b in blocks] == [True, True, True, False]
    tempered = [b.mixer.kernel.floor_temperature for b in blocks]
    assert tempered == [None, None, None, FloorLogTemperature(4, 0.1)]
    every_layer = make_plan(make_arch(**{**LLAMA4_LIKE, "attention.qk_norm_rope_only": None}))
    assert all(b.mixer.qk_norm is not None for b in every_layer.decoder.blocks)


def test_weighted_inputs_differ_from_weighted_outputs_through_a_gated_expert():
    torch.manual_seed(0)
    weighted_in = build_model(make_arch(**LLAMA4_LIKE))
    moe = weighted_in.decoder.layers[0].mlp.sublayer
    assert moe.weighted_input
    x = torch.randn(1, 5, 64)
    flat = x.reshape(-1, 64)
    index, weight = moe.router(flat)
    by_hand = moe.experts(flat * weight, index).squeeze(1) + moe.shared(flat)  # top-1
    assert index.shape[1] == 1
    torch.testing.assert_close(moe(x).reshape(-1, 64), by_hand)
    moe.weighted_input = False
    assert not torch.allclose(moe(x).reshape(-1, 64), by_hand)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.qk_norm": "none"}, "qk_norm_rope_only needs a qk_norm"),
        ({"attention.layer_pattern": ["chunked"]}, "qk_norm_rope_only needs"),
        (
            {"attention.qk_norm_rope_only": None, "attention.layer_pattern": ["chunked"]},
            "nope_temperature needs global-nope softmax layers",
        ),
        (
            {"attention.temperature_length": 4},
            "nope_temperature and temperature_length: a model has one attention temperature",
        ),
    ],
)
def test_the_llama4_fields_are_refused_without_their_layers(changes, message):
    with pytest.raises(ValidationError, match=message):
        make_arch(**{**LLAMA4_LIKE, **changes})


def _config(**changes) -> dict:
    config = {
        "model_type": "llama4_text",
        "vocab_size": 128,
        "hidden_size": 64,
        "intermediate_size": 24,
        "intermediate_size_mlp": 96,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "num_local_experts": 4,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2,
        "attention_chunk_size": 8,
    }
    return config | changes


IDENTITY = Identity("llama-4-toy", "Llama 4 toy", "llama-4", "Example Lab", "2025-04-05")


def _import(**changes) -> dict:
    url = "https://example.org/config.json"
    return import_config(_config(**changes), source_url=url, identity=IDENTITY).card


def test_import_reads_llama4s_layers_router_and_temperature():
    arch = _import()["architecture"]
    att, moe = arch["attention"], arch["mlp"]["moe"]
    assert att["layer_pattern"] == ["chunked", "chunked", "chunked", "global-nope"]
    assert (att["qk_norm"], att["qk_norm_rope_only"]) == ("l2", True)
    assert att["nope_temperature"] == {"floor_scale": 8192, "scale": 0.1}  # the defaults
    assert (moe["layer_period"], moe["dense_d_ff"], moe["n_shared"], moe["shared_d_ff"]) == (
        2,
        96,
        1,
        24,
    )
    assert (moe["score_function"], moe["normalize_top_k"], moe["weighted_input"]) == (
        "sigmoid",
        False,
        True,
    )
    assert arch["position"]["rope_layout"] == "interleaved"
    plain = _import(use_qk_norm=False, attn_temperature_tuning=False, attention_chunk_size=None)
    att = plain["architecture"]["attention"]
    assert att["layer_pattern"] == ["global", "global", "global", "global-nope"]
    assert att["qk_norm"] == "none" and att.get("nope_temperature") is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"no_rope_layers": [1, 1, 0]}, "no_rope_layers is not a 0/1 entry for each of the 4"),
        ({"no_rope_layers": [1, 2, 1, 0]}, "no_rope_layers.1: Input should be less than or"),
        ({"no_rope_layer_interval": 0}, "no_rope_layer_interval: Input should be greater"),
        ({"layer_types": ["full_attention"] * 4}, "layer_types differs"),
        ({"moe_layers": [0, 3]}, "moe_layers is not every interleave_moe_layer_step-th"),
        ({"interleave_moe_layer_step": 0}, "interleave_moe_layer_step: Input should be great"),
    ],
)
def test_import_refuses_llama4_configs_the_card_cannot_hold(changes, message):
    with pytest.raises(HFImportError, match=message):
        _import(**changes)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.qk_norm_rope_only": False}, "Llama 4's NoPE layers norm no q or k"),
        (
            {"attention.layer_pattern": ["chunked", "global", "chunked", "global-nope"]},
            "the rotating layers all chunked or all full",
        ),
        ({"mlp.moe.weighted_input": False}, "mlp.moe.weighted_input True"),
    ],
)
def test_the_reference_refuses_what_llama4s_code_does_not_build(changes, message):
    with pytest.raises(NotRepresentable, match=message):
        convert(make_arch(**{**LLAMA4_LIKE, **changes}), "llama4_text")


def test_the_diagram_names_the_temperature_and_the_weighted_inputs():
    from archdb.diagrams import describe
    from tests.conftest import shipped_catalogue

    diagram = describe(shipped_catalogue().get("llama-4-scout"))
    layers = [t for stack in diagram.stacks for t in stack.types]
    words = [" ".join(p.words for p in t.shape.sublayers) for t in layers]
    chunked, nope = words
    assert "QK norm" in chunked and "QK norm" not in nope
    assert "queries × 1 + 0.1 ln(1 + floor((p + 1) / 8,192))" in nope
    assert "floor" not in chunked
    assert "each expert's input × its weight" in chunked
