"""Grok-2's mechanisms: the residual MoE (a dense MLP beside the routed experts on the
block's one pre-norm, their sum scaled by 1/sqrt(2) before the block's post-norm), a router
whose logits are soft-capped before the softmax, and xAI's attention temperature past
attn_temperature_len (SGLang's grok.py, moe/router.py and decode_attention.py); the grok-2
card's exact count."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from pydantic import ValidationError

from archdb.builder.model import build_model, count_parameters
from archdb.conventions import FlopClass as C
from archdb.diagrams import describe
from archdb.measure.analytic import flops, param_count
from archdb.measure.flops import measure_flops
from archdb.parts import kernels as kernels_part
from archdb.parts import moe as moe_part
from archdb.parts.kernels import SoftmaxKernel
from archdb.parts.moe import RouterSpec
from archdb.plan.layout import BuildError
from archdb.schema import LayerKind
from archdb.tally import Tally
from tests.conftest import GROK2_LIKE, make_arch, moe_block, shipped_catalogue

SharedNormMoE = moe_part.modules().SharedNormMoE
BesideMoE = moe_part.modules().BesideMoE
Router = moe_part.modules().Router
GlobalKernel = kernels_part.modules().GlobalKernel


def _router(**changes) -> Router:
    spec = RouterSpec(16, 8, 2, **changes)
    torch.manual_seed(0)
    router = Router(spec)
    with torch.no_grad():  # logits of tens: the cap bends them
        router.proj.weight.mul_(20.0)
    return router


def test_a_capped_router_keeps_the_chosen_experts_probabilities_of_the_capped_logits():
    router = _router(normalize=False, softcap=30.0)
    x = torch.randn(10, 16)
    index, weight = router(x)
    capped = 30.0 * torch.tanh(router.proj(x) / 30.0)
    probs = capped.softmax(dim=-1)  # over all 8 experts, not renormalized over the 2
    expected, expected_index = probs.topk(2, dim=-1)
    torch.testing.assert_close(index, expected_index)
    torch.testing.assert_close(weight, expected)
    assert bool((weight.sum(dim=-1) < 0.999).any())  # not renormalized over the two
    uncapped = router.proj(x).softmax(dim=-1).gather(1, index)
    assert not torch.allclose(weight, uncapped)  # the cap changed the weights


def test_mixtrals_route_softmaxes_the_capped_chosen_logits():
    router = _router(softcap=5.0)
    assert router.spec.softmax_of_top_k
    x = torch.randn(10, 16)
    index, weight = router(x)
    logits = router.proj(x)
    top = logits.topk(2, dim=-1).indices  # the cap is monotonic: the same experts
    torch.testing.assert_close(index, top)
    chosen = logits.gather(1, top)
    torch.testing.assert_close(weight, (5.0 * torch.tanh(chosen / 5.0)).softmax(dim=-1))


def test_the_router_cap_adds_no_parameters_and_three_flops_per_expert():
    plain, capped = RouterSpec(16, 8, 2), RouterSpec(16, 8, 2, softcap=30.0)
    assert plain.params() == capped.params() == 16 * 8
    with_cap, without = Tally(10), Tally(10)
    capped.flops(with_cap)
    plain.flops(without)
    assert with_cap.dense[C.ELEMENTWISE] - without.dense[C.ELEMENTWISE] == 10 * 8 * 3


def _mlp_residual(arch):
    torch.manual_seed(0)
    model = build_model(arch)
    return model, model.decoder.layers[0].mlp


def test_the_branches_share_the_blocks_norms_and_add_none_of_their_own():
    arch = make_arch(**GROK2_LIKE)
    d, layers = arch.d_model, arch.n_layers
    model, residual = _mlp_residual(arch)
    assert isinstance(residual.sublayer, SharedNormMoE)
    gemma_norms = {**GROK2_LIKE["mlp.moe"], "beside_norms": "per-branch"}  # a copy
    per_branch = make_arch(**{**GROK2_LIKE, "mlp.moe": gemma_norms})
    assert isinstance(_mlp_residual(per_branch)[1].sublayer, BesideMoE)
    # Gemma 4's layout: the dense post-norm and the experts' pre- and post-norm, per layer
    gap = count_parameters(build_model(per_branch)) - count_parameters(model)
    assert gap == 3 * d * layers
    dense, experts, router = 3 * d * 96, 8 * 3 * d * 32, d * 8
    assert sum(p.numel() for p in residual.sublayer.parameters()) == dense + experts + router
    assert param_count(arch).total == count_parameters(model)


def test_the_sum_of_both_branches_is_scaled_by_one_over_root_two_between_the_norms():
    arch = make_arch(**GROK2_LIKE)
    _, residual = _mlp_residual(arch)
    moe, dense = residual.sublayer.moe, residual.sublayer.dense
    x = torch.randn(1, 6, arch.d_model)
    h = residual.before(x).reshape(6, -1)  # the block's pre-norm: both branches read it
    gelu = lambda v: F.gelu(v, approximate="tanh")  # noqa: E731
    dense_out = dense.down(gelu(dense.gate(h)) * dense.up(h))
    logits = 30.0 * torch.tanh(moe.router.proj(h) / 30.0)
    weight, index = logits.softmax(dim=-1).topk(2, dim=-1)
    e = moe.experts
    routed = torch.zeros_like(h)
    for t in range(6):
        for k in range(2):
            i = int(index[t, k])
            one = (gelu(h[t] @ e.gate[i]) * (h[t] @ e.up[i])) @ e.down[i]
            routed[t] += weight[t, k] * one
    expected = x + residual.branch(((dense_out + routed) / math.sqrt(2)).view_as(x))
    with torch.no_grad():
        out, _ = residual(x, None)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("moe", "message"),
    [
        ({"beside_norms": "shared"}, "beside_norms needs mlp.moe.dense_beside_d_ff"),
        (
            {"dense_beside_d_ff": 96, "beside_norms": "shared", "router_scales": True},
            "router_scales .* needs beside_norms per-branch",
        ),
        (
            {"dense_beside_d_ff": 96, "router_scales": True, "router_softcap": 30.0},
            "router_softcap with router_scales",
        ),
        ({"router_softcap": 0.0}, "router_softcap"),
    ],
)
def test_an_impossible_residual_moe_is_refused(moe, message):
    with pytest.raises(ValidationError, match=message):
        make_arch(**{"norm.position": "double", "mlp.moe": moe_block(**moe)})


def test_grok_2_counts_its_official_module_shapes():
    card = shipped_catalogue().get("grok-2")
    assert card is not None
    d, vocab, layers, kv = 8192, 131072, 64, 8 * 128
    attention = 2 * d * d + 2 * d * kv
    dense, expert, router, norms = 3 * d * 32768, 3 * d * 16384, d * 8, 4 * d
    layer = attention + dense + 8 * expert + router + norms
    total = layers * layer + 2 * vocab * d + d  # untied head, final norm
    counts = param_count(card.architecture)
    assert counts.total == total == 269_515_497_472
    assert total * 2 == 539_030_994_944  # bfloat16 bytes: ~502 GiB, the README's ~500 GB
    assert counts.active == 114_896_674_816  # 2 of 8 experts per token


# --- xAI's attention temperature -----------------------------------------------------------


def test_queries_past_the_temperature_length_scale_their_capped_logits_by_log2_ratio():
    kernel = GlobalKernel(8, causal=True, softcap=2.0)
    kernel.temperature_length = 4
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 12, 8) * 3 for _ in range(3))
    scores = 2.0 * torch.tanh(torch.matmul(q * 8**-0.5, k.transpose(-1, -2)) / 2.0)
    factor = torch.tensor([max(1.0, math.log2(p) / 2) if p else 1.0 for p in range(12)])
    assert factor[4] == 1.0 and factor[8] == 1.5  # 1 up to L = 4, then log2(p) / log2(4)
    hidden = torch.ones(12, 12, dtype=torch.bool).triu(1)
    probs = (scores * factor[:, None]).masked_fill(hidden, float("-inf")).softmax(dim=-1)
    torch.testing.assert_close(kernel(q, k, v), torch.matmul(probs, v))
    kernel.temperature_length = None
    assert not torch.allclose(kernel(q, k, v)[..., 5:, :], torch.matmul(probs, v)[..., 5:, :])


def test_the_temperature_costs_one_flop_per_score_and_three_per_query():
    with_it = SoftmaxKernel(LayerKind.GLOBAL, 8, True, None, None, temperature_length=4)
    without = SoftmaxKernel(LayerKind.GLOBAL, 8, True, None, None)
    a, b = Tally(10), Tally(10)
    with_it.flops(a, 2, 8)
    without.flops(b, 2, 8)
    assert a.dense[C.ATTENTION] - b.dense[C.ATTENTION] == 2 * 10 * 10 + 3 * 10
    assert a.causal[C.ATTENTION] - b.causal[C.ATTENTION] == 2 * 55 + 3 * 10


def test_a_grok_2_like_toy_counts_the_temperature_as_fvcore_does():
    arch = make_arch(**GROK2_LIKE)  # temperature past position 4 of 64
    model = build_model(arch)
    assert measure_flops(model, 64).total == sum(flops(arch, 64).dense.values())


@pytest.mark.parametrize(
    "changes",
    [
        {"attention.layer_pattern": ["local", "global"], "attention.sliding_window": 8},
        {"kind": "encoder-decoder", "n_encoder_layers": 2},
    ],
)
def test_the_temperature_is_refused_outside_decoder_only_global_attention(changes):
    arch = make_arch(**{"attention.temperature_length": 4, **changes})
    with pytest.raises(BuildError, match="temperature_length"):
        build_model(arch)


def _moe_words(card_id: str) -> str:
    """The words of a card's MoE box in its diagram."""
    diagram = describe(shipped_catalogue().get(card_id))
    layers = [t for stack in diagram.stacks for t in stack.types]
    return " ".join(p.words for t in layers for p in t.shape.sublayers if p.role == "moe")


def test_the_diagram_names_the_capped_router_and_where_the_branches_norms_are():
    grok = _moe_words("grok-2")
    assert "router: softmax of logits capped at 30" in grok
    assert "a dense MLP beside the experts: d_ff 32,768, on the block's norms" in grok
    assert "d_ff 2,112, own norms per branch" in _moe_words("gemma-4-26b-a4b")
