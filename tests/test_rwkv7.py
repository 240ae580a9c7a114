"""RWKV-7 "Goose": the time-mixing plugin and the token-shifted MLP. Exact parameters of the
released checkpoints by a hand formula from RWKV-LM's code, the toy's build and forward
pass, FLOPs against the formula class by class, the recurrent state, the first layer's
values reaching the others."""

from __future__ import annotations

import pytest
import torch

from archdb.builder.model import build_model, count_parameters
from archdb.catalogue import load_catalogue
from archdb.measure.flops import measure_flops
from archdb.plan import flops as plan_flops
from archdb.plan import make_plan
from archdb.plan import params as plan_params
from tests.conftest import make_arch

# a tiny RWKV-7 as a card states it: an embedding LayerNorm (blocks.0.ln0), pre-norm
# LayerNorm layers of time mixing then the token-shifted squared-ReLU MLP, a final
# LayerNorm, an untied head, no positions
RWKV7_LIKE = {
    "d_model": 64,
    "n_layers": 3,
    "vocab_size": 128,
    "norm": {"type": "layernorm", "position": "pre", "affine": "scale-and-bias",
             "final": True, "eps": 1e-5},
    "attention.layer_pattern": ["rwkv7"],
    "attention.n_heads": None,
    "attention.n_kv_heads": None,
    "position": {"type": "none"},
    "mlp": {"activation": "squared-relu", "d_ff": 256, "moe": None, "token_shift": True},
    "mixers": {"rwkv7": {"head_dim": 16, "decay_rank": 8, "rate_rank": 8, "value_rank": 4,
                         "gate_rank": 16, "mlp": True}},
    "embedding_norm": True,
    "tied_embeddings": False,
}  # fmt: skip


def checkpoint_params(
    vocab: int, d: int, layers: int, d_ff: int, ranks: tuple[int, int, int, int]
) -> int:
    """The tensors of a released RWKV-x070 .pth, by RWKV-LM's RWKV_Tmix_x070,
    RWKV_CMix_x070 and Block: emb and head (vocab x d each); blocks.0.ln0 and ln_out (2d
    each); per block ln1, ln2 (2d each); att.x_r/w/k/v/a/g, w0, a0, v0, k_k, k_a (11 of d),
    r_k (heads x 64 = d), ln_x (2d), receptance/key/value/output (d x d each), w1/w2,
    a1/a2, v1/v2, g1/g2 (d x rank and rank x d each; blocks.0 holds v0/v1/v2 too, unused);
    ffn.x_k (d), ffn.key (d x d_ff), ffn.value (d_ff x d)."""
    att = 14 * d + 4 * d * d + 2 * d * sum(ranks)
    ffn = d + 2 * d * d_ff
    return 2 * vocab * d + 2 * 2 * d + layers * (att + ffn + 2 * 2 * d)


# (card id, vocab, d_model, layers, d_ff, ranks (decay, rate, value, gate), the count)
RELEASES = [
    ("rwkv-7-world-0.1b", 65536, 768, 12, 3072, (64, 64, 32, 128), 191_084_544),
    ("rwkv-7-world-0.4b", 65536, 1024, 24, 4096, (64, 64, 32, 128), 450_834_432),
    ("rwkv-7-world-1.5b", 65536, 2048, 24, 8192, (96, 96, 64, 256), 1_527_668_736),
]


@pytest.mark.parametrize(("card_id", "vocab", "d", "layers", "d_ff", "ranks", "count"), RELEASES)
def test_cards_count_the_released_checkpoints_exactly(
    card_id, vocab, d, layers, d_ff, ranks, count
):
    assert checkpoint_params(vocab, d, layers, d_ff, ranks) == count
    card = load_catalogue().get(card_id)
    arch, m = card.architecture, card.architecture.mixers.rwkv7
    assert (arch.vocab_size, arch.d_model, arch.n_layers, arch.mlp.d_ff) == (vocab, d, layers, d_ff)
    assert (m.decay_rank, m.rate_rank, m.value_rank, m.gate_rank) == ranks
    assert plan_params(make_plan(arch)).total == count
    assert count_parameters(build_model(arch, device="meta")) == count


def test_the_toy_counts_what_the_formula_counts():
    arch = make_arch(**RWKV7_LIKE)
    expected = checkpoint_params(128, 64, 3, 256, (8, 8, 4, 16))
    assert plan_params(make_plan(arch)).total == expected
    assert count_parameters(build_model(arch)) == expected


def test_forward_pass_runs_and_reads_only_earlier_tokens():
    torch.manual_seed(0)
    model = build_model(make_arch(**RWKV7_LIKE)).eval()
    with torch.no_grad():  # off the initial values, so every path carries signal
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    tokens = torch.randint(0, 128, (2, 10))
    changed = tokens.clone()
    changed[:, 6] = (tokens[:, 6] + 1) % 128
    with torch.no_grad():
        logits = model(tokens)
        moved = (logits - model(changed)).abs().amax(-1)[0] > 1e-6
    assert logits.shape == (2, 10, 128) and torch.isfinite(logits).all()
    assert moved.tolist() == [i >= 6 for i in range(10)]


def test_later_layers_mix_in_the_first_layers_values():
    """The value residual: changing layer 0's value projection changes layer 2's output
    through v_first even with layer 1's whole time mixing and every MLP silenced."""
    torch.manual_seed(0)
    model = build_model(make_arch(**RWKV7_LIKE)).eval()
    layers = model.decoder.layers
    x = torch.randn(1, 5, 64)
    with torch.no_grad():
        layers[0].attn.sublayer(x)  # stores layer 0's values
        before = layers[2].attn.sublayer(x)
        layers[0].attn.sublayer.value.weight.mul_(2.0)
        layers[0].attn.sublayer(x)
        after = layers[2].attn.sublayer(x)
    assert (before - after).abs().max() > 1e-4


def test_fvcore_counts_what_the_formula_counts():
    arch = make_arch(**RWKV7_LIKE)
    counted = measure_flops(build_model(arch), 12)
    formula = plan_flops(make_plan(arch), 12)
    assert counted.total == sum(formula.dense.values())
    for cls, n in formula.dense.items():
        assert counted.by_class[cls] == n, cls


def test_the_state_is_the_heads_matrices_and_both_previous_tokens():
    """Per layer: a head_dim x head_dim state per head (d_model x head_dim entries), and
    the previous token's input to the time mixing and to the channel mixing."""
    plan = make_plan(make_arch(**RWKV7_LIKE))
    assert plan.decoder.cache_entries(10) == plan.decoder.cache_entries(100_000)
    assert plan.decoder.cache_entries(10) == 3 * (64 * 16 + 64 + 64)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mixers": {"rwkv7": RWKV7_LIKE["mixers"]["rwkv7"] | {"head_dim": 24}}},
         "head_dim .24. must divide d_model"),
        ({"attention.layer_pattern": ["rwkv7", "rwkv"],
          "mixers": RWKV7_LIKE["mixers"] | {"rwkv": {"width": 64, "mlp": True}}},
         "layer_pattern must be \\[rwkv7\\]"),
        ({"mlp": {"activation": "swiglu", "d_ff": 96, "moe": None, "token_shift": True}},
         "mlp.token_shift is a dense, non-gated MLP"),
        ({"mlp": {"activation": "squared-relu", "d_ff": 96, "moe": None, "token_shift": True,
                  "channel_mix": True}},
         "not with channel_mix"),
        ({"mixers": None}, "rwkv7"),
    ],
)  # fmt: skip
def test_rwkv7_fields_are_refused_where_they_mean_nothing(changes, message):
    with pytest.raises(ValueError, match=message):
        make_arch(**(RWKV7_LIKE | changes))
