"""Step-3's architecture: Multi-Matrix Factorization Attention (attention.query_rank: one
key/value head, every query head expanded from one normed low-rank projection) and MoE
layers between leading and trailing dense ones (mlp.moe.last_dense_layers).

transformers has no step3 model type, so the attention is checked against a reference
written here from the released modeling code's description (q_proj, inter_norm RMSNorm,
wq; k_proj and v_proj to one head; rotate_half RoPE; o_proj), and the card's count
against the released config's module shapes."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from archdb import conventions as cv
from archdb.builder.model import build_model, count_parameters
from archdb.builder.shrink import shrink
from archdb.measure.analytic import cache_size, flops, param_count
from archdb.parts.attention import HeadAttention
from archdb.plan import make_plan
from archdb.plan.layout import BuildError, is_moe_layer
from archdb.tally import Tally
from tests.conftest import STEP3_LIKE, latent_dims, make_arch, moe_block, shipped_catalogue

D, HEADS, HEAD_DIM, RANK = 64, 4, 32, 24  # STEP3_LIKE's attention (make_arch's d_model)
MFA = {
    "attention.n_kv_heads": 1,
    "attention.head_dim": HEAD_DIM,
    "attention.query_rank": RANK,
    "norm.eps": 1e-5,
}


def _mfa_formula(d: int, heads: int, head_dim: int, rank: int) -> int:
    """q_proj d x rank, inter_norm's scale, wq rank x heads*head_dim, one key and one value
    head, o_proj: Step-3's attention without biases."""
    return d * rank + rank + rank * heads * head_dim + 2 * d * head_dim + heads * head_dim * d


def _attention(arch) -> HeadAttention:
    mixer = make_plan(arch).decoder.blocks[0].mixer
    assert isinstance(mixer, HeadAttention)
    return mixer


# --- parameters -------------------------------------------------------------------------


def test_the_low_rank_query_replaces_the_full_query_projection_in_the_count():
    mfa, mqa = make_arch(**MFA), make_arch(**{**MFA, "attention.query_rank": None})
    assert _attention(mfa).params() == _mfa_formula(D, HEADS, HEAD_DIM, RANK)
    full_query = D * HEADS * HEAD_DIM
    low_rank = D * RANK + RANK + RANK * HEADS * HEAD_DIM
    per_layer = low_rank - full_query
    assert param_count(mfa).total - param_count(mqa).total == mfa.n_layers * per_layer
    assert count_parameters(build_model(mfa, device="meta")) == param_count(mfa).total


def test_the_query_bottleneck_takes_the_qkv_bias_and_the_card_norm_terms():
    biased = make_arch(**MFA, **{"bias.qkv": True})
    # q_proj's bias (rank), k and v biases (one head each); wq has none
    extra = RANK + 2 * HEAD_DIM
    assert _attention(biased).params() == _mfa_formula(D, HEADS, HEAD_DIM, RANK) + extra
    layernorm = make_arch(**MFA, **{"norm.type": "layernorm", "norm.affine": "scale-and-bias"})
    assert _attention(layernorm).params() == _mfa_formula(D, HEADS, HEAD_DIM, RANK) + RANK
    model = build_model(layernorm, device="meta")
    q = model.decoder.layers[0].attn.sublayer.q
    assert [tuple(p.shape) for p in q.parameters()] == [(RANK, D), (RANK,), (RANK,), (128, RANK)]


# --- FLOPs -------------------------------------------------------------------------------


def test_the_low_rank_query_costs_two_matmuls_and_one_norm():
    t = 16
    mixer = _attention(make_arch(**MFA))
    tally = Tally(t)
    mixer.flops(tally)
    mac = cv.FLOPS_PER_MAC
    q = mac * (D * RANK + RANK * HEADS * HEAD_DIM)
    kv_o = mac * (2 * D * HEAD_DIM + HEADS * HEAD_DIM * D)
    assert tally.dense["linear"] == t * (q + kv_o)
    assert tally.dense["norm"] == t * RANK * (cv.RMSNORM + cv.AFFINE)  # inter_norm, scaled


def test_fvcore_counts_what_the_formula_says_for_the_step3_toy():
    from archdb.measure.flops import measure_flops

    arch = make_arch(**STEP3_LIKE)
    t = 20
    measured = measure_flops(build_model(arch), t)
    assert measured.total == sum(flops(arch, t).dense.values())
    assert measured.by_class["norm"] == flops(arch, t).dense["norm"]


# --- forward ------------------------------------------------------------------------------


def _reference_mfa(x, w, theta: float, eps: float) -> torch.Tensor:
    """Step-3's attention as its modeling code describes it, from plain tensors."""
    b, t, _ = x.shape
    q = x @ w["q_proj"].T
    q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + eps) * w["inter_norm"]
    q = (q @ w["wq"].T).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)  # (B, H, T, D)
    k = (x @ w["k_proj"].T).view(b, t, 1, HEAD_DIM).transpose(1, 2)
    v = (x @ w["v_proj"].T).view(b, t, 1, HEAD_DIM).transpose(1, 2)
    inv = theta ** (-torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM)
    angles = torch.arange(t, dtype=torch.float32)[:, None] * inv[None]
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()

    def rotate_half(z):
        return torch.cat((-z[..., HEAD_DIM // 2 :], z[..., : HEAD_DIM // 2]), -1)

    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    scores = (q @ k.transpose(-1, -2)) * HEAD_DIM**-0.5  # the one key head serves every head
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    weights = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    out = (weights @ v).transpose(1, 2).reshape(b, t, HEADS * HEAD_DIM)
    return out @ w["o_proj"].T


def test_mfa_equals_the_released_code_description():
    torch.manual_seed(0)
    arch = make_arch(**MFA, **{"position.rope_theta": 500_000.0})
    attention = build_model(arch).decoder.layers[0].attn.sublayer.eval()
    down, norm, up = attention.q
    weights = {
        "q_proj": down.weight,
        "inter_norm": norm.weight,
        "wq": up.weight,
        "k_proj": attention.k.weight,
        "v_proj": attention.v.weight,
        "o_proj": attention.o.weight,
    }
    with torch.no_grad():
        norm.weight.add_(torch.randn_like(norm.weight) * 0.1)  # a scale that is not all ones
        x = torch.randn(2, 11, D)
        got = attention(x)
        expected = _reference_mfa(x, weights, 500_000.0, 1e-5)
    assert got.shape == (2, 11, D)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-6)
    with torch.no_grad():  # the norm is on the path: another scale changes the output
        norm.weight.mul_(2.0)
        assert not torch.allclose(attention(x), got, atol=1e-4)


def test_the_step3_toy_runs_causally():
    from tests.conftest import assert_causal

    assert_causal(build_model(make_arch(**STEP3_LIKE)).eval())


# --- KV cache -------------------------------------------------------------------------------


def test_the_cache_holds_one_key_and_one_value_head_whatever_the_query_rank():
    mfa = make_arch(**MFA)
    assert _attention(mfa).cache_entries(100) == 2 * HEAD_DIM * 100
    mqa = make_arch(**{**MFA, "attention.query_rank": None})
    assert cache_size(mfa, 512, 2).total == cache_size(mqa, 512, 2).total
    assert cache_size(mfa, 512, 2).total == mfa.n_layers * 2 * HEAD_DIM * 512 * 2


# --- MoE placement -----------------------------------------------------------------------------


def test_trailing_dense_layers_are_dense_and_counted_as_such():
    arch = make_arch(**STEP3_LIKE)
    assert [is_moe_layer(arch, i) for i in range(4)] == [False, True, True, False]
    model = build_model(arch, device="meta")
    kinds = [type(layer.mlp.sublayer).__name__ for layer in model.decoder.layers]
    assert kinds == ["GatedMLP", "MoE", "MoE", "GatedMLP"]
    without = {**STEP3_LIKE, "mlp.moe": {**STEP3_LIKE["mlp.moe"], "last_dense_layers": None}}
    d, dense, expert, shared = D, 256, 128, 64
    moe_layer = d * 4 + 4 * 3 * d * expert + 3 * d * shared  # router, 4 experts, shared
    assert param_count(make_arch(**without)).total - param_count(arch).total == (
        moe_layer - 3 * d * dense
    )


def test_the_toy_keeps_one_trailing_dense_layer_and_the_query_rank_ratio():
    card = shipped_catalogue().get("step-3")
    toy = shrink(card.architecture)
    arch = toy.arch
    moe = arch.mlp.moe
    assert (moe.first_dense_layers, moe.last_dense_layers) == (1, 1)
    assert [is_moe_layer(arch, i) for i in range(arch.n_layers)] == [False, True, False]
    assert arch.attention.query_rank * 7168 == 2048 * arch.d_model  # 2048 / 7168 kept
    assert arch.attention.n_kv_heads == 1
    assert any("last dense layers 1 -> 1" in line for line in toy.kept)


# --- schema -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {
                "attention.variant": "latent",
                "attention.latent": latent_dims(),
                "attention.query_rank": 16,
            },
            "attention.query_rank is for softmax or linear head attention",
        ),
        (
            {"mlp.moe": moe_block(last_dense_layers=1)},
            "dense_d_ff is required for, and only for, models with dense layers",
        ),
        (
            {"mlp.moe": moe_block(first_dense_layers=1, last_dense_layers=1, dense_d_ff=96)},
            r"first_dense_layers \+ last_dense_layers \(2\) leave no MoE layer",
        ),
        (
            {
                "kind": "encoder-decoder",
                "n_encoder_layers": 2,
                "n_layers": 3,
                "mlp.moe": moe_block(last_dense_layers=1, dense_d_ff=96),
            },
            "last_dense_layers is for decoder-only models",
        ),
        (
            {
                "attention.layer_pattern": ["global", "moe"],
                "attention.mlp": False,
                "mlp.moe": moe_block(last_dense_layers=1, dense_d_ff=96),
            },
            "last_dense_layers with moe entries in layer_pattern",
        ),
    ],
)
def test_the_schema_refuses_what_the_fields_cannot_mean(changes, message):
    with pytest.raises(ValidationError, match=message):
        make_arch(**changes)


def test_shared_blocks_refuse_a_low_rank_query():
    from tests.test_shared_blocks import SHARED

    arch = make_arch(**{**SHARED, "attention.query_rank": 16})
    with pytest.raises(BuildError, match="low-rank query"):
        make_plan(arch)


# --- the catalogue card --------------------------------------------------------------------------


def test_step3_counts_exactly_what_its_released_shapes_give():
    card = shipped_catalogue().get("step-3")
    arch = card.architecture
    d, vocab, layers, heads, head_dim, rank = 7168, 128_815, 61, 64, 256, 2048
    attention = _mfa_formula(d, heads, head_dim, rank) + 2 * d  # and the two block norms
    dense = 3 * d * 18_432
    expert = 3 * d * 5120
    moe = d * 48 + 48 * expert + expert  # router, routed experts, the shared expert
    embeddings = 2 * vocab * d + d  # embedding, untied head, final norm
    total = layers * attention + 5 * dense + 56 * moe + embeddings
    assert total == 316_294_538_240  # the README's 316B language model
    counted = param_count(arch)
    assert counted.total == total
    assert counted.active == total - 56 * 45 * expert  # 3 of 48 routed experts a token
    assert round(counted.active / 1e9) == 39  # 38.84B (the README: 38B activated)
    assert [i for i in range(61) if not is_moe_layer(arch, i)] == [0, 1, 2, 3, 60]
    assert count_parameters(build_model(arch, device="meta")) == total


def test_step3_caches_two_256_wide_heads_per_layer():
    arch = shipped_catalogue().get("step-3").architecture
    assert cache_size(arch, 4096, 2).per_token == 61 * 2 * 256 * 2  # 61 KiB in bf16


def test_trailing_dense_layers_wait_for_a_known_depth():
    """With n_layers unknown the last layers cannot be told: only the leading dense layers
    are placed (no layer is taken for a trailing one)."""
    arch = make_arch(**{**STEP3_LIKE, "n_layers": None})
    assert [is_moe_layer(arch, i) for i in range(4)] == [False, True, True, True]
