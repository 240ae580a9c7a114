"""Layer-wise scaling (architecture.layer_widths, OpenELM): each layer built at its own
query heads, KV heads and dense width; exact counts, FLOPs and KV cache per layer."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.measure.analytic import cache_size, flops, param_count
from archdb.measure.flops import measure_flops
from archdb.measure.params import full_size_params
from archdb.plan.layout import fill_unknowns
from tests.conftest import make_arch, shipped_catalogue

# three layers widening with depth, as OpenELM's do: head_dim 16, 4 query heads per KV head
# in the first two layers, 2 in the last
LAYERWISE: dict[str, Any] = {
    "n_layers": 3,
    "attention.n_heads": 4,
    "attention.n_kv_heads": 2,
    "attention.head_dim": 16,
    "attention.qk_norm": "per-head",
    "attention.qk_norm_type": "rmsnorm",
    "attention.qk_norm_affine": "scale",
    "mlp.d_ff": 192,
    "tied_embeddings": True,
    "layer_widths": {
        "n_heads_per_layer": [2, 4, 4],
        "n_kv_heads_per_layer": [1, 1, 2],
        "d_ff_per_layer": [64, 128, 192],
    },
}
D, V, HD = 64, 128, 16


def _hand_count(heads: list[int], kv: list[int], d_ff: list[int]) -> int:
    """Embedding (tied), per layer: q/k/v and out projections, q and k norms over a head,
    SwiGLU's three matrices and the two block norms; the final norm."""
    total = V * D + D
    for h, k, f in zip(heads, kv, d_ff, strict=True):
        total += D * (h + 2 * k) * HD + h * HD * D + 2 * HD + 3 * D * f + 2 * D
    return total


def test_the_count_is_the_sum_of_each_layers_own_widths():
    arch = make_arch(**LAYERWISE)
    expected = _hand_count([2, 4, 4], [1, 1, 2], [64, 128, 192])
    assert param_count(arch).total == expected
    assert sum(p.numel() for p in build_model(arch).parameters()) == expected
    uniform = make_arch(**{**LAYERWISE, "layer_widths": None})
    assert param_count(uniform).total == _hand_count([4] * 3, [2] * 3, [192] * 3) > expected


def test_each_layer_is_built_at_its_own_widths():
    layers = build_model(make_arch(**LAYERWISE)).decoder.layers
    shapes = [
        (
            layer.attn.sublayer.q.out_features,
            layer.attn.sublayer.k.out_features,
            layer.mlp.sublayer.down.in_features,
        )
        for layer in layers
    ]
    assert shapes == [(2 * HD, 1 * HD, 64), (4 * HD, 1 * HD, 128), (4 * HD, 2 * HD, 192)]


def test_fvcore_counts_what_the_formula_counts():
    arch = make_arch(**LAYERWISE)
    t = 20
    measured = measure_flops(build_model(arch), t)
    formula = flops(arch, t).dense
    assert measured.by_class == pytest.approx(formula, rel=1e-12)
    # the projections alone: 2 FLOPs per multiply-add over each layer's own weights
    heads, kv, d_ff = [2, 4, 4], [1, 1, 2], [64, 128, 192]
    weights = sum(
        D * (h + 2 * k) * HD + h * HD * D + 3 * D * f
        for h, k, f in zip(heads, kv, d_ff, strict=True)
    )
    uniform = flops(make_arch(**{**LAYERWISE, "layer_widths": None}), t).dense
    uniform_weights = 3 * (D * 8 * HD + 4 * HD * D + 3 * D * 192)
    assert formula["linear"] - uniform["linear"] == 2 * t * (weights - uniform_weights)


def test_the_kv_cache_holds_each_layers_own_kv_heads():
    arch = make_arch(**LAYERWISE)
    context, nbytes = 32, 2
    expected = sum(2 * k * HD * context * nbytes for k in (1, 1, 2))
    assert cache_size(arch, context, nbytes).total == expected


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"layer_widths.d_ff_per_layer": [64, 128]},
            "layer_widths.d_ff_per_layer has 2 entries; n_layers is 3",
        ),
        (
            {"layer_widths.n_kv_heads_per_layer": [1, 3, 2]},
            "layer 1's n_kv_heads \\(3\\) must divide",
        ),
        ({"attention.n_heads": 8}, "attention.n_heads \\(8\\) must be the widest layer's, 4"),
        ({"mlp.d_ff": 256}, "mlp.d_ff \\(256\\) must be the widest layer's, 192"),
        ({"attention.variant": "linear"}, "layer_widths is for softmax attention layers"),
        ({"position.type": "alibi", "position.rope_theta": None}, "per-head score biases"),
        ({"kind": "encoder-decoder", "n_encoder_layers": 2}, "for a single stack"),
    ],
)
def test_layer_widths_are_validated(changes, message):
    with pytest.raises(ValidationError, match=message):
        make_arch(**{**copy.deepcopy(LAYERWISE), **changes})


def test_the_toy_keeps_layers_of_different_widths():
    wide = {
        **copy.deepcopy(LAYERWISE),
        "d_model": 640,
        "attention.head_dim": 160,
        "mlp.d_ff": 1920,
        "layer_widths.d_ff_per_layer": [640, 1280, 1920],
    }
    toy = shrink(make_arch(**wide)).arch
    # card layers 0 and 2 (the narrowest and the widest), d_model 64: ratios kept
    assert toy.n_layers == 2
    assert toy.layer_widths.model_dump() == {
        "n_heads_per_layer": [2, 4],
        "n_kv_heads_per_layer": [1, 2],
        "d_ff_per_layer": [64, 192],
    }
    assert (toy.attention.n_heads, toy.attention.n_kv_heads, toy.mlp.d_ff) == (4, 2, 192)
    model = build_model(toy)
    assert [layer.mlp.sublayer.down.in_features for layer in model.decoder.layers] == [64, 192]


# The released OpenELM models: parameters of the official code's layers (corenet
# general_gpt.py), computed per layer from the per-layer widths in the cards
OPENELM = {
    "openelm-270m": 271_527_168,
    "openelm-450m": 457_179_136,
    "openelm-1.1b": 1_079_891_456,
    "openelm-3b": 3_036_647_424,
}


def _official_count(arch) -> int:
    """OpenELM's layers as its code builds them: a fused qkv projection, an out projection,
    q and k RMSNorms over head_dim, a GLU proj_1 of 2 * d_ff and proj_2, two block norms;
    the shared embedding and a final norm."""
    d, hd, w = arch.d_model, arch.attention.head_dim, arch.layer_widths
    total = arch.vocab_size * d + d
    for h, k, f in zip(w.n_heads_per_layer, w.n_kv_heads_per_layer, w.d_ff_per_layer, strict=True):
        total += d * (h + 2 * k) * hd + h * hd * d + 2 * hd + d * 2 * f + f * d + 2 * d
    return total


@pytest.mark.parametrize("card_id", list(OPENELM))
def test_openelm_cards_count_the_released_parameters(card_id):
    card = shipped_catalogue().get(card_id)
    arch = fill_unknowns(card.architecture)[0]
    assert _official_count(arch) == OPENELM[card_id]
    assert param_count(arch).total == OPENELM[card_id]
    assert full_size_params(arch).total == OPENELM[card_id]
