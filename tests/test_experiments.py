"""The experiments behind claims 19 and 20 measure what they say, and can fail."""

from __future__ import annotations

import pytest
import torch

from archdb.measure import experiments as ex
from archdb.reports.claims import Verdict, check_claims
from archdb.reports.measured import ClaimMeasurements
from archdb.schema import NormPosition
from archdb.table import catalogue_frame
from tests.conftest import shipped_catalogue

pytestmark = pytest.mark.xdist_group("experiments")


def pre_ln_card():
    return shipped_catalogue().get("pre-ln-transformer")


@pytest.fixture(scope="module")
def placement():
    return ex.norm_placement(pre_ln_card())


def test_post_ln_gradients_grow_toward_the_top_and_pre_ln_stay_even(placement):
    post = placement.profile(NormPosition.POST)
    pre = placement.profile(NormPosition.PRE)
    assert len(post.layer_norms) == 6  # one per decoder layer of the card
    assert list(post.layer_norms) == sorted(post.layer_norms)  # growing with depth
    assert post.spread > 4
    assert pre.spread < 2.5


def test_with_pytorch_default_init_both_placements_are_even(placement):
    for position in NormPosition.POST, NormPosition.PRE:
        assert placement.default_init_profile(position).spread < 1.5


def test_the_experiment_really_moves_the_norms():
    base = ex.experiment_architecture(pre_ln_card())
    post = ex.with_norm_position(base, NormPosition.POST)
    assert post.norm.position is NormPosition.POST and post.norm.final is False
    assert (base.n_layers, base.n_encoder_layers) == (6, 6)  # the card's depth


def test_linear_attention_equals_the_fast_weight_programmer():
    result = ex.fast_weight_equivalence(seed=3)
    assert result.max_difference < 1e-12


def test_the_identity_check_detects_a_different_attention():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 8, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    softmax = (
        torch.softmax(
            (q @ k.transpose(-1, -2)).masked_fill(
                ~torch.ones(8, 8, dtype=torch.bool).tril(), float("-inf")
            ),
            dim=-1,
        )
        @ v
    )
    assert (softmax - ex.fast_weight_programmer(q, k, v)).abs().max() > 1e-3


def test_only_linear_cards_run_the_linear_kernel():
    catalogue = shipped_catalogue()
    assert ex.uses_linear_kernel(catalogue.get("linear-transformer"))
    assert not ex.uses_linear_kernel(catalogue.get("llama-2-7b"))


def test_claims_19_and_20_read_the_measurements(placement):
    frame = catalogue_frame(shipped_catalogue())
    fast = ex.fast_weight_equivalence()
    measured = ClaimMeasurements(placement, fast, ("linear-transformer",))
    results = {r.key: r for r in check_claims(frame, measured)}
    assert results["norm-placement-gradients"].verdict is Verdict.HOLDS
    assert "Post-LN" in results["norm-placement-gradients"].evidence
    assert results["fast-weights"].verdict is Verdict.HOLDS
    assert results["fast-weights"].deciding == ("linear-transformer",)
    unmeasured = {r.key: r for r in check_claims(frame)}
    assert unmeasured["norm-placement-gradients"].verdict is Verdict.NOT_CHECKABLE
    assert unmeasured["fast-weights"].verdict is Verdict.NOT_CHECKABLE


def test_an_even_post_ln_profile_contradicts_claim_19(placement):
    even = ex.GradientProfile(NormPosition.POST, ex.Init.XAVIER, (1.0, 1.0, 1.0))
    flat = ex.NormPlacementResult(
        placement.card_id,
        placement.dims,
        (
            even,
            *[
                p
                for p in placement.profiles
                if p.position is not NormPosition.POST or p.init is not ex.Init.XAVIER
            ],
        ),
    )
    frame = catalogue_frame(shipped_catalogue())
    results = {r.key: r for r in check_claims(frame, ClaimMeasurements(flat))}
    assert results["norm-placement-gradients"].verdict is Verdict.CONTRADICTED
