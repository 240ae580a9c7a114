"""Gemma 3n / Gemma 4 E2B and E4B mechanisms: cross-layer KV sharing and per-layer
embeddings (the exact counts against transformers are in test_params_vs_hf.py, the logits
in test_fidelity.py)."""

from __future__ import annotations

from operator import attrgetter

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.measure.analytic import cache_size, param_count
from tests.conftest import GEMMA3N_LIKE, GEMMA4_ON_DEVICE, make_arch


def test_the_cache_counts_only_the_layers_that_keep_their_own_kv():
    """The last 6 of 12 layers reuse KV: the cache is that of the first 6 layers alone."""
    shared = make_arch(**GEMMA4_ON_DEVICE)
    own_only = make_arch(
        **{
            **GEMMA4_ON_DEVICE,
            "n_layers": 6,
            "attention.kv_shared_layers": None,
            "mlp.kv_shared_d_ff": None,
        }
    )
    for context in (4, 64):
        assert cache_size(shared, context, 2).total == cache_size(own_only, context, 2).total


def test_a_reusing_layer_has_no_key_value_projections_or_norms():
    model = build_model(make_arch(**GEMMA4_ON_DEVICE))
    own, reusing = model.decoder.layers[5].attn.sublayer, model.decoder.layers[11].attn.sublayer
    assert own.k is not None and own.v is not None and own.qk_norm.k_norm is not None
    assert (reusing.k, reusing.v, reusing.qk_norm.k_norm, reusing.value_norm) == (None,) * 4
    assert reusing.q.out_features == own.q.out_features  # its own queries, global width
    assert model.decoder.layers[11].mlp.sublayer.down.in_features == 256  # double-wide
    assert model.decoder.layers[5].mlp.sublayer.down.in_features == 128


def test_reusing_layers_attend_with_the_last_own_layer_of_their_kind():
    """Layers 6-11 read what layers 4 (local) and 5 (global) stored: when layer 4 stops
    storing, the local reusing layers read layer 3's keys and values and the logits move."""
    torch.manual_seed(0)
    model = build_model(make_arch(**GEMMA4_ON_DEVICE)).eval()
    layers = model.decoder.layers
    stores = {id(layers[i].attn.sublayer._kv_store) for i in range(12)}
    assert len(stores) == 1  # one store shared by the stack
    tokens = torch.randint(0, 128, (1, 20))
    with torch.no_grad():
        before = model(tokens)
        layers[4].attn.sublayer.kv_sharing = None  # layer 4 stops storing: 3's keys stay
        after = model(tokens)
    assert not torch.allclose(before, after)


def test_per_layer_embedding_tables_are_embedding_parameters():
    arch = make_arch(**GEMMA4_ON_DEVICE)
    without = make_arch(**{**GEMMA4_ON_DEVICE, "per_layer_embeddings": None})
    count, base = param_count(arch), param_count(without)
    table = 128 * 12 * 16
    projection = 64 * 12 * 16 + 16  # d -> layers * width, and the norm over width
    gates = 12 * (2 * 64 * 16 + 64)  # each layer's gate, projection and norm
    assert count.total - base.total == table + projection + gates
    assert count.embedding - base.embedding == table


def test_ids_beyond_a_shorter_per_layer_table_read_its_first_row():
    """Gemma 3n's table (262,144 rows) is shorter than its vocabulary (262,400)."""
    arch = make_arch(
        **{**GEMMA4_ON_DEVICE, "per_layer_embeddings": {"width": 8, "vocab_size": 100}}
    )
    per_layer = build_model(arch).per_layer
    x = torch.randn(1, 3, 64)
    beyond = per_layer(torch.tensor([[120, 100, 5]]), x)
    first = per_layer(torch.tensor([[0, 0, 5]]), x)
    assert beyond.shape == (1, 3, 12, 8)
    assert torch.equal(beyond, first)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.kv_shared_layers": 12}, "must leave at least one of the 12 layers"),
        (
            {"attention.kv_shared_layers": 1},  # layer 11 is global; none before it is
            None,
        ),
        (
            {"attention.kv_shared_layers": 0},
            "mlp.kv_shared_d_ff needs attention.kv_shared_layers > 0",
        ),
    ],
)
def test_kv_sharing_is_validated(changes, message):
    if message is None:  # a valid layout: the global layer 5 keeps its own KV
        make_arch(**{**GEMMA4_ON_DEVICE, **changes})
        return
    with pytest.raises(ValidationError, match=message):
        make_arch(**{**GEMMA4_ON_DEVICE, **changes})


def test_a_shared_kind_without_an_own_layer_is_refused():
    changes = {**GEMMA4_ON_DEVICE, "n_layers": 6, "attention.kv_shared_layers": 1}
    with pytest.raises(ValidationError, match="for the shared global layers"):
        make_arch(**changes)


def test_the_toy_keeps_a_period_of_own_layers_then_one_of_reusing_layers():
    full = make_arch(
        **{
            **GEMMA4_ON_DEVICE,
            "n_layers": 35,
            "attention.kv_shared_layers": 20,
            "d_model": 1536,
            "attention.head_dim": 256,
            "mlp.d_ff": 6144,
            "mlp.kv_shared_d_ff": 12288,
            "attention.global_layers": {"head_dim": 512},
            "per_layer_embeddings": {"width": 256, "vocab_size": 262144},
            "vocab_size": 262144,
        }
    )
    toy = shrink(full)
    arch = toy.arch
    assert (arch.n_layers, arch.attention.kv_shared_layers) == (12, 6)
    assert arch.mlp.kv_shared_d_ff == 2 * arch.mlp.d_ff
    assert arch.per_layer_embeddings.width * 1536 == 256 * arch.d_model
    assert arch.per_layer_embeddings.vocab_size == arch.vocab_size == 256
    assert any("reuse an earlier layer's keys and values" in k for k in toy.kept)
    logits = build_model(arch)(torch.randint(0, 256, (1, 20)))
    assert logits.shape == (1, 20, 256)


# --- Gemma 3n: AltUp, LAuReL, activation sparsity ---------------------------------------


def test_gaussian_top_k_zeroes_the_target_share_of_a_gaussian_gate():
    """relu(g - (mean + std * Phi^-1(0.95))): about 95% of Gaussian gate values become 0."""
    from archdb.parts import mlp as mlp_part

    Act, SparseGatedMLP = attrgetter("Act", "SparseGatedMLP")(mlp_part.modules())
    from archdb.schema import Activation

    mlp = SparseGatedMLP(64, 4096, Act(Activation.GEGLU), False, 0.95)
    assert mlp.std_multiplier == pytest.approx(1.6448536, rel=1e-6)
    gate = torch.randn(8, 4096, generator=torch.Generator().manual_seed(0))
    mean, std = gate.mean(-1, keepdim=True), gate.std(-1, keepdim=True, unbiased=False)
    kept = torch.relu(gate - (mean + std * mlp.std_multiplier))
    assert (kept == 0).float().mean().item() == pytest.approx(0.95, abs=0.01)


def test_only_the_first_layers_have_a_sparse_gate():
    from archdb.parts import mlp as mlp_part

    SparseGatedMLP = mlp_part.modules().SparseGatedMLP

    model = build_model(make_arch(**GEMMA3N_LIKE))
    sparse = [isinstance(b.mlp.sublayer, SparseGatedMLP) for b in model.decoder.layers]
    assert sparse == [True] * 3 + [False] * 7


def test_altup_keeps_its_streams_through_the_stack():
    """Each layer maps (4, B, T, d) streams to (4, B, T, d); the logits read their mean."""
    model = build_model(make_arch(**GEMMA3N_LIKE)).eval()
    seen = []
    model.decoder.layers[0].register_forward_hook(lambda m, i, o: seen.append(o[0].shape))
    with torch.no_grad():
        logits = model(torch.randint(0, 128, (2, 12)))
    assert seen == [(4, 2, 12, 64)] and logits.shape == (2, 12, 128)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"altup": {"n_inputs": 4, "active_index": 4, "correct_scale": True}}, "active_index"),
        ({"altup": {"n_inputs": 1, "active_index": 0, "correct_scale": True}}, "at least 2"),
        ({"mlp.activation_sparsity": {"target": 0.9, "first_layers": 11}}, "exceeds n_layers"),
        ({"mlp.activation": "gelu"}, "dense gated MLP"),
    ],
)
def test_gemma3n_fields_are_validated(changes, message):
    with pytest.raises(ValidationError, match=message):
        make_arch(**{**GEMMA3N_LIKE, **changes})


def test_altup_without_its_block_is_refused_by_name():
    from archdb.plan.layout import BuildError

    with pytest.raises(BuildError, match="altup or laurel_rank outside Gemma 3n's block"):
        build_model(make_arch(**{**GEMMA3N_LIKE, "laurel_rank": None}))


def test_the_gemma3n_toy_keeps_altup_laurel_and_a_share_of_sparse_layers():
    full = make_arch(
        **{
            **GEMMA3N_LIKE,
            "n_layers": 30,
            "attention.kv_shared_layers": 10,
            "d_model": 2048,
            "attention.head_dim": 256,
            "mlp.d_ff": 8192,
            "laurel_rank": 64,
            "mlp.activation_sparsity": {"target": 0.95, "first_layers": 10},
            "per_layer_embeddings": {"width": 256, "vocab_size": 262144},
            "vocab_size": 262400,
        }
    )
    toy = shrink(full).arch
    assert (toy.n_layers, toy.attention.kv_shared_layers) == (10, 5)
    assert toy.laurel_rank * 2048 == 64 * toy.d_model
    assert toy.mlp.activation_sparsity.first_layers == 3
    assert toy.per_layer_embeddings.vocab_size < toy.vocab_size
    assert build_model(toy)(torch.randint(0, 256, (1, 20))).shape == (1, 20, 256)
