"""The builder: every card's toy builds and runs, each choice becomes its block, the toy
rule keeps what it says it keeps, and masks hide what they should."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from operator import attrgetter

import pytest
import torch
from archdb_cli.main import app
from typer.testing import CliRunner

from archdb.builder.loss import lm_loss
from archdb.builder.model import EncoderDecoderLM, build_model, example_inputs, module_tree
from archdb.builder.shrink import TOY_RULE, TOY_SIZES, shrink
from archdb.catalogue import load_catalogue
from archdb.measure.analytic import param_count
from archdb.parts import attention as attention_part
from archdb.parts import blocks as blocks_part
from archdb.parts import moe as moe_part
from archdb.parts import norms as norms_part
from archdb.parts import positions as positions_part
from archdb.plan.layout import BuildError, fill_unknowns, is_moe_layer, null_fields, rotary_dims
from archdb.schema import Architecture, NormType
from tests.conftest import (
    CHOICES,
    MAMBA2_ONLY,
    card_text,
    make_arch,
    moe_block,
    qk_norm,
    shipped_catalogue,
)

HeadAttention, LatentAttention = attrgetter("HeadAttention", "LatentAttention")(
    attention_part.modules()
)
ParallelBlock, ResiDualResidual, SerialBlock = attrgetter(
    "ParallelBlock", "ResiDualResidual", "SerialBlock"
)(blocks_part.modules())
MoE = moe_part.modules().MoE
HeadwiseNorm, Norm = attrgetter("HeadwiseNorm", "Norm")(norms_part.modules())
AlibiBias, LearnedPositions, RelativeBias, RelativeXL = attrgetter(
    "AlibiBias", "LearnedPositions", "RelativeBias", "RelativeXL"
)(positions_part.modules())

CARDS = list(shipped_catalogue())


def _has_sizes(card) -> bool:
    return not null_fields(card.architecture, TOY_SIZES)


def run(arch: Architecture, seq_len: int | None = None) -> torch.Tensor:
    torch.manual_seed(0)
    model = build_model(arch).eval()
    with torch.no_grad():
        return model(*example_inputs(model, seq_len or arch.context_length))


# --- every card -----------------------------------------------------------------------


@pytest.mark.parametrize("card", [c for c in CARDS if not _has_sizes(c)], ids=lambda c: c.id)
def test_a_card_without_its_sizes_has_no_toy_and_says_why(card):
    """Every other card shrinks to a toy (the next test, card by card); each distinct toy
    is built, run and checked causal once, where fvcore counts it
    (test_measure.py::test_every_toy_runs_causally_and_fvcore_and_the_formula_agree)."""
    with pytest.raises(BuildError, match="unknown \\(null\\) sizes"):
        shrink(fill_unknowns(card.architecture)[0])


@pytest.mark.parametrize("card", [c for c in CARDS if _has_sizes(c)], ids=lambda c: c.id)
def test_toy_rule_keeps_ratios_pattern_and_experts(card):
    full = fill_unknowns(card.architecture)[0]
    before = full.model_dump()
    toy = shrink(full)
    assert full.model_dump() == before, "shrink must not change its input"
    assert shrink(full) == toy, "shrink is deterministic"
    t = toy.arch
    assert t.d_model <= max(full.d_model, 64) and t.vocab_size == 256
    for name in (
        "kind",
        "norm",
        "position",
        "bias",
        "parallel_layers",
        "tied_embeddings",
        "final_logit_softcap",
    ):
        kept = getattr(t, name)
        if name == "position":
            assert kept.type == full.position.type and kept.rope_theta == full.position.rope_theta
        else:
            assert kept == getattr(full, name)
    assert t.mlp.activation == full.mlp.activation
    assert t.attention.qk_norm == full.attention.qk_norm
    assert t.attention.logit_softcap == full.attention.logit_softcap
    moved = " ".join(toy.approximated)
    if full.has_mlp() and "d_ff/d_model" not in moved:
        assert Fraction(t.mlp.d_ff, t.d_model) == Fraction(full.mlp.d_ff, full.d_model)
    attends = full.has_attention() and full.attention.latent is None
    if attends and "n_heads*head_dim" not in moved:
        inner = Fraction(t.attention.n_heads * t.head_dim_effective, t.d_model)
        assert inner == Fraction(full.attention.n_heads * full.head_dim_effective, full.d_model)
    if attends and "rotary" not in moved:
        toy_hd, full_hd = t.head_dim_effective, full.head_dim_effective
        assert Fraction(rotary_dims(t, toy_hd), toy_hd) == Fraction(
            rotary_dims(full, full_hd), full_hd
        )
    if attends:
        assert t.query_groups == full.query_groups
    if attends and (v := full.attention.v_head_dim) is not None:  # value heads scaled alike
        assert abs(t.attention.v_head_dim - v * t.head_dim_effective / full.head_dim_effective) < 2
    moe, tmoe = full.mlp.moe, t.mlp.moe
    if moe is not None:
        assert (tmoe.n_shared, tmoe.layer_period) == (moe.n_shared, moe.layer_period)
        assert (tmoe.n_groups, tmoe.top_k_groups) == (moe.n_groups, moe.top_k_groups)
        if moe.n_experts <= TOY_RULE.experts_max:
            assert (tmoe.n_experts, tmoe.n_active) == (moe.n_experts, moe.n_active)
        else:  # capped; the routing still chooses (validation checks the groups can hold it)
            assert tmoe.n_experts <= max(TOY_RULE.experts_max, 2 * (moe.n_groups or 1))
            assert 1 <= tmoe.n_active <= min(moe.n_active, tmoe.n_experts - 1)
        assert tmoe.first_dense_layers == min(moe.first_dense_layers, 1)
        assert any(is_moe_layer(t, i) for i in range(t.n_layers))
    if len(full.attention.layer_pattern) < full.n_layers:  # one period (or more) of it
        assert t.attention.layer_pattern == full.attention.layer_pattern
        assert t.n_layers % len(t.attention.layer_pattern) == 0 or t.n_layers == full.n_layers
    else:  # a per-layer list: the card's first layers, the fewest holding every kind
        assert t.attention.layer_pattern == full.attention.layer_pattern[: t.n_layers]
        if moe is None or moe.first_dense_layers <= 1:  # no leading dense layers cut
            kinds = _layer_kinds(full)
            assert _layer_kinds(t) == kinds[: t.n_layers]
            assert set(kinds[: t.n_layers]) == set(kinds)
            fewest = set(kinds[: t.n_layers - 1]) != set(kinds)
            assert fewest or t.n_layers in (TOY_RULE.min_layers, full.n_layers)
    assert toy.rule and toy.kept and toy.dims["d_model"] == t.d_model


def _layer_kinds(arch: Architecture) -> list[tuple[str, bool]]:
    """Each layer's kind: its pattern entry and whether its MLP is the MoE."""
    pattern = arch.attention.layer_pattern
    return [(pattern[i % len(pattern)].value, is_moe_layer(arch, i)) for i in range(arch.n_layers)]


# --- the toy's depth ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("card_id", "depth"),
    [
        ("kimi-linear-48b-a3b", 4),  # 27: (3 KDA, 1 MLA) x 6, then 2 KDA, 1 MLA
        ("nemotron-h-8b", 8),  # 52: M-M-M-M* ...
        ("nemotron-h-56b", 8),  # 118
        ("nemotron-3-nano-30b-a3b", 6),  # 52: MEMEM* ...
        ("nemotron-3-nano-4b", 13),  # 42: its first attention is layer 13
        ("bamba-9b", 10),  # 32: 9 Mamba-2, then attention
        ("lfm2-700m", 3),  # 16: 2 short convs, then attention
    ],
)
def test_a_per_layer_pattern_gives_the_toy_its_first_layers_of_every_kind(card_id, depth):
    """A pattern that lists every layer has no shorter period: the toy is the card's first
    layers, the fewest that hold every kind of layer the card has."""
    full = fill_unknowns(shipped_catalogue().get(card_id).architecture)[0]
    toy = shrink(full)
    assert toy.arch.n_layers == depth
    assert toy.arch.attention.layer_pattern == full.attention.layer_pattern[:depth]
    kinds = _layer_kinds(full)
    assert set(_layer_kinds(toy.arch)) == set(kinds)
    assert set(kinds[: depth - 1]) != set(kinds)
    assert f"layer pattern (the first {depth} of the card's {full.n_layers} layers" in "".join(
        toy.kept
    )
    assert "for a per-layer pattern the fewest first layers holding every kind" in toy.rule


def test_kimi_linear_toy_is_its_repeating_unit_with_the_dense_layer_first():
    toy = shrink(fill_unknowns(shipped_catalogue().get("kimi-linear-48b-a3b").architecture)[0]).arch
    layers = build_model(toy, device="meta").decoder.layers
    mixers = [type(x.attn.sublayer).__name__ for x in layers]
    assert mixers == ["KimiDeltaAttentionMixer"] * 3 + ["LatentAttention"]
    assert [isinstance(x.mlp.sublayer, MoE) for x in layers] == [False, True, True, True]


def test_a_per_layer_list_keeps_what_one_period_of_the_same_pattern_keeps():
    """The same layers written as a period (tiled) and as a per-layer list: the period
    keeps its whole self, the list the fewest first layers with every kind."""
    pattern = ["local", "global", "local", "local"]
    base = {"attention.sliding_window": 8, "n_layers": 8}
    periodic = shrink(make_arch(**base, **{"attention.layer_pattern": pattern})).arch
    assert [k.value for k in periodic.attention.layer_pattern] == pattern
    assert periodic.n_layers == 4
    listed = shrink(make_arch(**base, **{"attention.layer_pattern": pattern * 2})).arch
    assert [k.value for k in listed.attention.layer_pattern] == ["local", "global"]
    assert listed.n_layers == 2


def test_a_per_layer_list_keeps_a_dense_first_layer_and_every_mlp_kind():
    """Two leading dense layers cut to one, MoE every second layer after them: the toy
    runs until every entry has met each MLP it meets in the card."""
    kinds = ["global", "local", "global", "local", "local", "global"]
    moe = moe_block(first_dense_layers=2, layer_period=2, dense_d_ff=128)
    full = make_arch(
        **{"attention.layer_pattern": kinds, "attention.sliding_window": 8, "n_layers": 6},
        **{"mlp.moe": moe},
    )
    toy = shrink(full).arch
    assert toy.n_layers == 5 and toy.mlp.moe.first_dense_layers == 1
    assert set(_layer_kinds(toy)) == set(_layer_kinds(full))
    assert len(set(_layer_kinds(full))) == 4  # local and global, each dense and MoE
    layers = build_model(toy, device="meta").decoder.layers
    assert [isinstance(x.mlp.sublayer, MoE) for x in layers] == [False, False, True, False, True]


def test_a_per_layer_list_with_kv_sharing_keeps_every_layer():
    """Its shared layers are the stack's last: no shorter prefix holds one."""
    full = make_arch(
        **{
            "attention.layer_pattern": ["local", "global"] * 3,
            "attention.sliding_window": 8,
            "attention.kv_shared_layers": 2,
            "n_layers": 6,
        }
    )
    toy = shrink(full).arch
    assert (toy.n_layers, toy.attention.kv_shared_layers) == (6, 2)


@pytest.mark.parametrize(
    ("card_id", "depth"),
    [
        ("gemma-3-1b", 6),  # 26 layers: (5 local, 1 global) x 4 and a short tail, tiled
        ("gemma-4-e2b", 10),  # KV sharing: a period that keeps its KV, one that reuses
        ("llama-4-maverick", 4),  # 4-layer pattern, MoE every second layer
    ],
)
def test_a_periodic_pattern_keeps_one_period(card_id, depth):
    full = fill_unknowns(shipped_catalogue().get(card_id).architecture)[0]
    toy = shrink(full)
    assert toy.arch.n_layers == depth
    assert toy.arch.attention.layer_pattern == full.attention.layer_pattern
    assert f"layer pattern (period {len(full.attention.layer_pattern)})" in "".join(toy.kept)


@pytest.mark.parametrize(
    ("changes", "experts"),
    [
        ({}, (16, 6)),  # Nemotron 3 Nano's 128, top-6
        ({"n_active": 20}, (16, 15)),  # top-k stays below the experts
        ({"n_groups": 8, "top_k_groups": 4, "group_score": "top2-sum"}, (16, 6)),  # 2 a group
        ({"n_groups": 16, "top_k_groups": 4, "group_score": "top2-sum"}, (32, 6)),  # groups win
        ({"n_groups": 8, "top_k_groups": 2, "group_score": "max", "n_active": 8}, (16, 4)),
        ({"n_experts": 16, "n_active": 16}, (16, 16)),  # at the cap: kept as it is
    ],
)
def test_the_toy_caps_routed_experts_and_keeps_routing(changes, experts):
    """128 experts x 23 MoE layers ran a test worker out of memory: a toy keeps at most 16
    routed experts a layer, the card's groups (two a group where groups rank by their two
    best), top-k within what the top groups hold."""
    moe = {"n_experts": 128, "n_active": 6, "n_shared": 1, "shared_d_ff": 512,
           "first_dense_layers": 0, "layer_period": 1, "dense_d_ff": None} | changes  # fmt: skip
    arch = make_arch(**{"mlp.moe": moe})
    toy = shrink(arch)
    assert (toy.arch.mlp.moe.n_experts, toy.arch.mlp.moe.n_active) == experts
    assert toy.arch.mlp.moe.n_shared == 1
    model = build_model(toy.arch)
    logits = model(torch.randint(0, 256, (2, 16)))
    assert logits.shape == (2, 16, 256)
    assert ("capped" in " ".join(toy.kept)) is (moe["n_experts"] > 16)
    assert "routed experts <= 16" in toy.rule


def test_unbuildable_sizes_are_named():
    arch = make_arch(d_model=None, **{"mlp.d_ff": None})
    with pytest.raises(BuildError, match=r"architecture\.d_model.*architecture\.mlp\.d_ff"):
        shrink(arch)


def test_null_choices_are_filled_and_reported():
    arch = make_arch(**{"bias.qkv": None, "tied_embeddings": None, "norm.final": None})
    filled, assumed = fill_unknowns(arch)
    assert {a.field for a in assumed} == {"bias.qkv", "tied_embeddings", "norm.final"}
    assert filled.bias.qkv is False and filled.tied_embeddings is False and filled.norm.final
    assert fill_unknowns(make_arch()) == (make_arch(), ())


# --- one choice, one block ----------------------------------------------------------------


@pytest.mark.parametrize(
    "changes", CHOICES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items())[:60]
)
def test_each_choice_builds_and_runs(changes):
    logits = run(make_arch(**changes))
    assert torch.isfinite(logits).all()


def _blocks(model):
    return list(model.decoder.layers)


def test_norm_types_and_affine_terms():
    ln = build_model(make_arch(**{"norm.type": "layernorm", "norm.affine": "scale-and-bias"}))
    assert (
        _is_norm(ln.decoder.final_norm, NormType.LAYERNORM)
        and ln.decoder.final_norm.bias is not None
    )
    none = build_model(make_arch(**{"norm.type": "layernorm", "norm.affine": "none"}))
    assert none.decoder.final_norm.weight is None and none.decoder.final_norm.bias is None
    assert _is_norm(build_model(make_arch()).decoder.final_norm, NormType.RMSNORM)
    assert repr(ln.decoder.final_norm) == "LayerNorm(64, scale=True, bias=True)"


def _is_norm(module, kind: NormType) -> bool:
    return isinstance(module, Norm) and module.kind is kind


@pytest.mark.parametrize(
    ("position", "slots"),
    [
        ("pre", (True, False, False)),
        ("post", (False, False, True)),
        ("double", (True, True, False)),
        ("post-branch", (False, True, False)),
        ("resi-dual", (False, False, True)),
    ],
)
def test_norm_positions_fill_their_slots(position, slots):
    model = build_model(make_arch(**{"norm.position": position}))
    for block in _blocks(model):
        for res in (block.attn, block.mlp):
            got = tuple(
                not isinstance(getattr(res, s), torch.nn.Identity)
                for s in ("before", "branch", "after")
            )
            assert got == slots
            assert isinstance(res, ResiDualResidual) == (position == "resi-dual")


def test_post_norm_output_is_normalized():
    model = build_model(
        make_arch(
            **{
                "norm.position": "post",
                "norm.final": False,
                "norm.affine": "none",
                "norm.type": "layernorm",
            }
        )
    )
    hidden = {}
    model.decoder.register_forward_hook(lambda m, i, o: hidden.setdefault("x", o))
    with torch.no_grad():
        model(*example_inputs(model, 16))
    x = hidden["x"]
    assert torch.allclose(x.mean(-1), torch.zeros(1, 16), atol=1e-4)


def test_parallel_blocks_share_a_norm_or_have_one_each():
    shared = build_model(make_arch(parallel_layers=True, **{"norm.shared_in_parallel": True}))
    each = build_model(make_arch(parallel_layers=True, **{"norm.shared_in_parallel": False}))
    assert all(isinstance(b, ParallelBlock) and b.before_mlp is None for b in _blocks(shared))
    assert all(_is_norm(b.before_mlp, NormType.RMSNORM) for b in _blocks(each))
    assert all(isinstance(b, SerialBlock) for b in _blocks(build_model(make_arch())))


def test_layer_pattern_sets_kernels_windows_and_positions():
    arch = make_arch(
        **{
            "attention.layer_pattern": ["chunked", "local", "global-nope", "global"],
            "attention.sliding_window": 8,
            "n_layers": 8,
            "position.rope_theta_local": 1e4,
            "position.rope_theta": 5e5,
        }
    )
    attns = [b.attn.sublayer for b in _blocks(build_model(arch))]
    kinds = [type(a.kernel).__name__ for a in attns]
    assert kinds == ["ChunkedKernel", "LocalKernel", "GlobalKernel", "GlobalKernel"] * 2
    assert attns[0].kernel.chunk == 8 and attns[1].kernel.window == 8
    assert attns[1].rotary.theta == 1e4 and attns[0].rotary.theta == 5e5
    assert attns[2].rotary is None and attns[3].rotary.theta == 5e5


def test_attention_heads_and_latent_dims():
    gqa = build_model(make_arch()).decoder.layers[0].attn.sublayer
    assert isinstance(gqa, HeadAttention) and (gqa.n_heads, gqa.n_kv_heads) == (4, 2)
    assert gqa.k.out_features == 2 * 16 and gqa.q.out_features == 4 * 16
    mla = build_model(make_arch(**next(c for c in CHOICES if "attention.latent" in c)))
    layer = mla.decoder.layers[0].attn.sublayer
    assert isinstance(layer, LatentAttention)
    assert layer.kv_down.out_features == 16 + 8 and layer.kv_up.out_features == 4 * (16 + 16)


def test_qk_norm_variants_have_their_parameters():
    def qk(kind, **more):
        return (
            build_model(make_arch(**(qk_norm(kind) | more))).decoder.layers[0].attn.sublayer.qk_norm
        )

    assert qk("none") is None
    assert qk("per-head").q_norm.weight.shape == (16,)
    untied = qk("per-head-untied")
    assert isinstance(untied.q_norm, HeadwiseNorm) and untied.k_norm.weight.shape == (2, 16)
    assert qk("full").q_norm.norm.weight.shape == (64,)
    assert sum(p.numel() for p in qk("l2").parameters()) == 0
    cham = qk(
        "per-head-untied",
        **{"attention.qk_norm_type": "layernorm", "attention.qk_norm_affine": "scale-and-bias"},
    )
    assert _is_norm(cham.q_norm.norm, NormType.LAYERNORM) and cham.q_norm.bias.shape == (4, 16)


def test_moe_layers_follow_first_dense_and_period():
    arch = make_arch(
        n_layers=6,
        **{"mlp.moe": moe_block(first_dense_layers=1, layer_period=2, dense_d_ff=256)},
    )
    moe = [isinstance(b.mlp.sublayer, MoE) for b in _blocks(build_model(arch))]
    assert moe == [False, False, True, False, True, False]  # layers 2 and 4


def test_moe_runs_each_token_through_top_k_experts():
    arch = make_arch(**{"mlp.moe": moe_block(n_active=1)})
    moe = build_model(arch).decoder.layers[0].mlp.sublayer
    x = torch.randn(1, 5, 64)
    index, weight = moe.router(x.view(-1, 64))
    assert torch.allclose(weight, torch.ones_like(weight))  # softmax over one expert
    experts = moe.experts
    e = int(index[0, 0])
    expected = (
        torch.nn.functional.silu(x[0, 0] @ experts.gate[e]) * (x[0, 0] @ experts.up[e])
    ) @ experts.down[e]
    assert torch.allclose(moe(x)[0, 0], expected, atol=1e-5)


def test_tied_embeddings_share_one_tensor_and_factorized_embeddings_project():
    tied = build_model(make_arch(tied_embeddings=True))
    assert tied.head.lm_head.weight is tied.embed.table.weight
    untied = build_model(make_arch())
    assert untied.head.lm_head.weight is not untied.embed.table.weight
    factorized = build_model(make_arch(embedding_dim=32, tied_embeddings=True))
    assert factorized.embed.table.weight.shape == (128, 32)
    assert factorized.embed.proj.in_features == 32 and factorized.head.proj.out_features == 32


def test_heads_far_narrower_than_d_model_keep_the_toy_within_the_rule():
    """8 heads of 2 dims on d_model 4096: no toy width keeps the ratio with heads of at
    least 8 dims, so the ratio moves, rather than the toy growing to 16,384 wide (four
    times the card) to keep it."""
    full = make_arch(d_model=4096, **{"mlp.d_ff": 8192, "attention.n_heads": 8},
                     **{"attention.n_kv_heads": 2, "attention.head_dim": 2})  # fmt: skip
    toy = shrink(full)
    assert toy.arch.d_model == TOY_RULE.d_model_max
    assert toy.arch.attention.head_dim == TOY_RULE.head_dim_min
    assert "n_heads*head_dim/d_model 0.003906 -> 0.0625" in toy.approximated
    logits = build_model(toy.arch)(torch.randint(0, 256, (1, 8)))
    assert logits.shape == (1, 8, 256)


def test_a_learned_table_shorter_than_the_context_is_refused():
    """Positions past the table's rows would have no row: the card says so, rather than the
    toy shrinking it to a negative row count."""
    learned = {"position.type": "learned", "position.rope_theta": None}
    with pytest.raises(ValueError, match=r"learned_rows \(60\) is below context_length \(64\)"):
        make_arch(**learned, context_length=64, **{"position.learned_rows": 60})
    assert make_arch(**learned, context_length=64, **{"position.learned_rows": 66})


def test_hash_routing_is_for_decoder_only_models():
    """A hash router reads the ids of the tokens its own stack runs on; an encoder and a
    decoder each have their own, so such a card is refused rather than built unrunnable."""
    switch = {"mlp.moe": moe_block(n_experts=4, n_active=1, hash_layers=1)}
    with pytest.raises(ValueError, match="hash_layers is for decoder-only models"):
        make_arch(**switch, kind="encoder-decoder", n_encoder_layers=2)
    assert make_arch(**switch).mlp.moe.hash_layers == 1


def test_zero_experts_are_not_grouped():
    """Group-limited routing ranks groups of routed experts; a zero-computation expert
    belongs to none, so a card with both is refused rather than built unrunnable."""
    grouped = moe_block(n_experts=8, n_active=2, n_groups=4, top_k_groups=2, group_score="max")
    with pytest.raises(ValueError, match="zero_experts with n_groups > 1"):
        make_arch(**{"mlp.moe": grouped | {"zero_experts": 2}})
    assert make_arch(**{"mlp.moe": grouped}).mlp.moe.n_groups == 4


def test_t5_buckets_need_one_exact_distance_per_direction_below_the_max_distance():
    """T5's encoder splits its buckets by direction, then half into exact distances and
    half log-spaced up to 128: 2 buckets left no exact one (a division by zero), 256 would
    put the exact ones past the max distance."""
    t5 = {"position.type": "relative-bias", "position.rope_theta": None}
    for buckets in (2, 3, 256):
        with pytest.raises(ValueError, match=rf"relative_buckets \({buckets}\) must be 4 to 255"):
            make_arch(**t5, **{"position.relative_buckets": buckets})
    for buckets in (4, 255):
        model = build_model(make_arch(**t5, **{"position.relative_buckets": buckets}))
        assert model(torch.randint(0, 128, (1, 8))).isfinite().all()


def test_parallel_layers_have_an_mlp_beside_attention():
    with pytest.raises(ValueError, match="parallel_layers sums attention and the MLP"):
        make_arch(parallel_layers=True, **{"norm.shared_in_parallel": True, "attention.mlp": False})


def test_heads_of_an_attention_free_card_size_nothing_in_its_toy():
    """Heads that no layer uses (transformers' Bamba config without attention layers
    keeps its num_attention_heads) need not divide the toy's width."""
    unused = {"d_model": 768, "attention.n_heads": 128, "attention.v_head_dim": 128}
    toy = shrink(make_arch(**MAMBA2_ONLY | unused)).arch
    assert toy.d_model < 128
    assert toy.attention.n_heads is toy.attention.v_head_dim is None
    assert build_model(toy)(torch.randint(0, 256, (1, 8))).shape == (1, 8, 256)


def test_ntk_alpha_needs_two_rotated_pairs():
    """Hunyuan's alpha^(d / (d - 2)) has no value for heads that rotate 2 dims."""
    ntk = {"position.rope_scaling": {"type": "ntk-alpha", "factor": 1000.0}}
    with pytest.raises(ValueError, match="the heads rotate 2, and it needs at least 4"):
        make_arch(**ntk, **{"attention.head_dim": 2})
    assert build_model(make_arch(**ntk, **{"attention.head_dim": 4}))


def test_a_toy_the_schema_refuses_is_a_build_error():
    with pytest.raises(
        BuildError,
        match="toy rule cannot shrink this card: vocab_size: Input should be greater than 0",
    ):
        shrink(make_arch(), replace(TOY_RULE, vocab=0))


def test_position_blocks():
    learned = build_model(
        make_arch(
            **{"position.type": "learned", "position.rope_theta": None, "position.learned_rows": 66}
        )
    )
    assert isinstance(learned.positions, LearnedPositions)
    assert learned.positions.table.weight.shape == (66, 64)
    t5 = build_model(
        make_arch(
            **{
                "position.type": "relative-bias",
                "position.rope_theta": None,
                "position.relative_buckets": 8,
            }
        )
    )
    assert isinstance(t5.decoder.position_bias, RelativeBias)
    assert t5.decoder.position_bias.table.weight.shape == (8, 4)
    assert isinstance(
        build_model(
            make_arch(**{"position.type": "alibi", "position.rope_theta": None})
        ).decoder.position_bias,
        AlibiBias,
    )
    xl = build_model(make_arch(**{"position.type": "relative-xl", "position.rope_theta": None}))
    assert isinstance(xl.decoder.layers[0].attn.sublayer.relative, RelativeXL)


@pytest.mark.parametrize("changes", CHOICES, ids=lambda c: ",".join(c)[:50])
def test_meta_buffers_have_the_shapes_of_real_ones(changes):
    """Position tables and constant fills (norm scales, biases) are allocated by shape
    alone on the meta device: the same names, shapes and dtypes as the computed ones."""
    arch = make_arch(**changes)

    def tensors(model):
        named = [*model.named_buffers(), *model.named_parameters()]
        return {name: (t.shape, t.dtype) for name, t in named}

    real, meta = build_model(arch), build_model(arch, device="meta")
    assert tensors(meta) == tensors(real)
    assert all(t.is_meta for t in [*meta.buffers(), *meta.parameters()])


def test_encoder_decoder_shares_embeddings_and_has_cross_attention():
    arch = make_arch(kind="encoder-decoder", n_encoder_layers=3, tied_embeddings=True)
    model = build_model(arch)
    assert isinstance(model, EncoderDecoderLM) and len(model.encoder.layers) == 3
    assert all(b.cross is not None for b in model.decoder.layers)
    assert all(b.cross is None for b in model.encoder.layers)
    assert model.head.lm_head.weight is model.embed.table.weight


# --- masks --------------------------------------------------------------------------------


def _one_layer(**changes) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(make_arch(n_layers=1, **changes)).eval()


def _influence(model, t: int, position: int) -> torch.Tensor:
    """Which output positions change when the token at ``position`` changes."""
    (tokens,) = example_inputs(model, t)
    other = tokens.clone()
    other[0, position] = (other[0, position] + 1) % 128
    with torch.no_grad():
        delta = (model(tokens) - model(other)).abs().amax(-1)[0]
    return delta > 1e-6


def test_sliding_window_sees_only_its_window():
    model = _one_layer(**{"attention.layer_pattern": ["local"], "attention.sliding_window": 8})
    seen = _influence(model, 32, 4)
    assert seen[4:12].all() and not seen[12:].any() and not seen[:4].any()


def test_chunked_attention_stays_in_its_chunk():
    model = _one_layer(**{"attention.layer_pattern": ["chunked"], "attention.sliding_window": 8})
    seen = _influence(model, 30, 9)  # chunk 8..15; the last chunk (24..29) is shorter
    assert seen[9:16].all() and not seen[16:].any() and not seen[:9].any()


@pytest.mark.parametrize("variant", ["global", "linear"])
def test_global_and_linear_attention_are_causal(variant):
    changes = {"attention.variant": "linear"} if variant == "linear" else {}
    seen = _influence(_one_layer(**changes), 16, 5)
    assert seen[5:].all() and not seen[:5].any()


def test_encoder_attends_both_ways():
    model = build_model(make_arch(kind="encoder-decoder", n_encoder_layers=1, n_layers=1)).eval()
    src, tgt = example_inputs(model, 12)
    other = src.clone()
    other[0, -1] = (other[0, -1] + 1) % 128
    with torch.no_grad():
        delta = (model(src, tgt) - model(other, tgt)).abs().amax(-1)[0]
    assert (delta > 1e-6).all()  # every target position sees the whole source


def test_full_size_builds_on_meta_without_memory():
    arch = make_arch(
        d_model=8192,
        n_layers=80,
        vocab_size=128_000,
        **{"attention.n_heads": 64, "attention.n_kv_heads": 8, "mlp.d_ff": 28672},
    )
    model = build_model(arch, device="meta")
    assert all(p.is_meta for p in model.parameters())
    assert sum(p.numel() for p in model.parameters()) > 60e9


def test_module_tree_folds_alike_layers():
    arch = make_arch(
        n_layers=6,
        **{"attention.layer_pattern": ["local"] * 5 + ["global"], "attention.sliding_window": 8},
    )
    model = build_model(arch)
    tree = module_tree(model)
    layers = next(n for n in tree if n["name"] == "decoder")["children"][0]
    assert [c["name"] for c in layers["children"]] == ["0-4", "5"]
    assert sum(n["params"] for n in tree) == sum(p.numel() for p in model.parameters())


# --- the loss ---------------------------------------------------------------------------


def test_z_loss_adds_alpha_log_z_squared():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11) * 3
    targets = torch.randint(0, 11, (2, 5))
    plain = lm_loss(logits, targets)
    assert plain.z_loss == 0 and torch.isclose(plain.total, plain.cross_entropy)
    with_z = lm_loss(logits, targets, z_loss=1e-4)
    log_z = torch.logsumexp(logits, dim=-1)
    assert torch.isclose(with_z.z_loss, 1e-4 * (log_z**2).mean())
    assert torch.isclose(with_z.total, plain.cross_entropy + with_z.z_loss)
    # a shift of every logit moves log Z, not the cross-entropy: only z-loss sees it
    shifted = lm_loss(logits + 10, targets, z_loss=1e-4)
    assert torch.isclose(shifted.cross_entropy, plain.cross_entropy, atol=1e-5)
    assert shifted.z_loss > with_z.z_loss


def test_a_card_trains_its_toy_with_its_z_loss():
    card = next((c for c in CARDS if c.training.z_loss and _has_sizes(c)), None)
    if card is None:
        pytest.skip("no card with a z-loss")
    arch = shrink(fill_unknowns(card.architecture)[0]).arch
    torch.manual_seed(0)
    model = build_model(arch)
    (tokens,) = example_inputs(model, 16)
    loss = lm_loss(model(tokens)[:, :-1], tokens[:, 1:], card.training.z_loss)
    loss.total.backward()
    assert loss.z_loss > 0
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


# --- the CLI ------------------------------------------------------------------------------


def _cli(*args: str):
    result = CliRunner().invoke(app, list(args))
    data = None
    if "--json" in args and result.exit_code == 0:
        data = json.loads(result.stdout)
    return result, data


@pytest.mark.usefixtures("warm_shipped_cache")
def test_cli_build_family_gives_its_largest_toy_as_json():
    result, data = _cli("build", "gpt-3", "--json")
    assert result.exit_code == 0, result.output
    assert data["id"] == load_catalogue().resolve("gpt-3").id
    assert data["size"] == "toy" and data["dims"]["d_model"] == 64
    assert {"rule", "kept", "approximated"} <= set(data["scaling"])
    assert data["seq_len"] == data["dims"]["context_length"]
    f = data["flops"]
    assert abs(f["fvcore"] - f["analytic"]) <= 0.005 * f["analytic"]
    assert f["analytic_causal"] < f["analytic"]
    assert data["params"] == sum(n["params"] for n in data["modules"])


@pytest.mark.usefixtures("warm_shipped_cache")
def test_cli_build_full_size_counts_on_meta():
    card = load_catalogue().resolve("llama-2")
    result, data = _cli("build", "llama-2", "--size", "full", "--json")
    assert result.exit_code == 0, result.output
    assert data["params"] == param_count(card.architecture).total
    assert data["params_detail"]["published"] == card.params_published
    assert "fvcore" not in data["flops"] and data["scaling"] is None


@pytest.mark.usefixtures("warm_shipped_cache")
def test_cli_build_prints_tree_dims_rule_params_and_flops():
    result, _ = _cli("build", "gemma-2")
    assert result.exit_code == 0, result.output
    for text in ("LocalKernel", "Dims", "toy rule", "Parameters", "FLOPs per token", "fvcore"):
        assert text in result.output


@pytest.mark.usefixtures("warm_shipped_cache")
def test_cli_flops_at_a_sequence_length():
    args = ("flops", "llama-2-7b", "--seq-len", "4096", "--toy-seq-len", "96", "--json")
    result, data = _cli(*args)
    assert result.exit_code == 0, result.output
    assert data["seq_len"] == 4096 and data["flops"]["analytic"] > 2 * data["params"] * 0.9
    assert data["toy"]["seq_len"] == data["toy"]["dims"]["context_length"] == 96
    toy = data["toy"]["flops"]
    assert abs(toy["fvcore"] - toy["analytic"]) <= 0.005 * toy["analytic"]
    assert data["kv_cache_bytes_per_token"] > 0


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("build", "no-such-model"), 1, "no card or family named"),
        (("build", "gpt-3", "--size", "huge"), 2, "'huge' is not one of"),
        (("flops", "gpt-3", "--seq-len", "0"), 2, "Invalid value for '--seq-len'"),
        (("build", "gpt-3", "--seq-len", "0"), 2, "Invalid value for '--seq-len'"),
        (("build", "gpt-3", "--seq-len", "1000000"), 2, "Invalid value for '--seq-len'"),
        (("flops", "gpt-3", "--context", "0"), 2, "Invalid value for '--context'"),
        (("flops", "gpt-3", "--bytes-per-element", "0"), 2, "Invalid value for"),
    ],
)
@pytest.mark.usefixtures("warm_shipped_cache")
def test_cli_bad_input_is_a_message_and_an_exit_code(args, code, message):
    result, _ = _cli(*args)
    assert result.exit_code == code
    assert message in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.usefixtures("warm_shipped_cache")
def test_cli_build_runs_the_toy_at_a_stated_length():
    result, data = _cli("build", "mistral-7b", "--seq-len", "256", "--json")
    assert result.exit_code == 0, result.output
    assert data["seq_len"] == data["dims"]["context_length"] == 256
    assert data["dims"]["sliding_window"] == 64  # 16 of 64 tokens, scaled to 256
    assert "scaled to this context" in data["scaling"]["rule"]
    f = data["flops"]
    assert abs(f["fvcore"] - f["analytic"]) <= 1e-9 * f["analytic"]


@pytest.mark.usefixtures("warm_shipped_cache")
def test_cli_flops_states_the_kv_cache_length_and_element_size():
    args = ("flops", "mistral-7b", "--context", "32768", "--bytes-per-element", "1", "--json")
    result, data = _cli(*args)
    assert result.exit_code == 0, result.output
    assert (data["kv_seq_len"], data["kv_dtype_bytes"]) == (32768, 1)
    # 32 layers x K,V x 8 KV heads x 128 dims, each keeping its 4096-token window
    assert data["kv_cache_bytes"] == 32 * 2 * 8 * 128 * 4096
    assert data["kv_cache_bytes_per_token"] == data["kv_cache_bytes"] / 32768
    result, _ = _cli("flops", "mistral-7b")
    assert "8192 tokens" in result.output and "65,536 per token" in result.output  # one format


@pytest.mark.usefixtures("warm_shipped_cache")
def test_cli_a_card_without_sizes_fails_cleanly(write_catalogue):
    path = write_catalogue(
        card_text("toy-1b")
        .replace("d_ff: 5632", "d_ff: null")
        .replace("  sources:", "  notes: {architecture.mlp.d_ff: unknown}\n  sources:")
    )
    result, _ = _cli("build", "toy-1b", "--catalogue", str(path))
    assert result.exit_code == 1
    assert "architecture.mlp.d_ff" in result.output and "Traceback" not in result.output


def test_a_meta_build_skips_initializers_and_real_builds_keep_them():
    """Full-size builds on the meta device skip torch's initializers (no values to fill):
    the same parameters by name and shape, and a real build after one is still seeded."""
    arch = make_arch(**{"mlp.moe": moe_block()})
    meta = build_model(arch, device="meta")
    torch.manual_seed(0)
    real = build_model(arch)
    assert all(p.is_meta for p in meta.parameters())
    shapes = {n: p.shape for n, p in meta.named_parameters()}
    assert shapes == {n: p.shape for n, p in real.named_parameters()}
    torch.manual_seed(0)
    again = build_model(arch)
    for (name, p), q in zip(real.named_parameters(), again.parameters(), strict=True):
        assert torch.equal(p, q), name
    assert real.embed.table.weight.std() > 0.5  # normal(0, 1), not skipped


def test_linear_is_torchs_linear_with_its_values_or_in_a_meta_build_its_shapes():
    """builder.device.linear: outside a meta build torch's own layer, the same random draw;
    in one the same class, names, shapes and dtypes, with no leftover of the skipped init."""
    from torch import nn

    from archdb.device import linear, meta_build

    for bias in (True, False):
        torch.manual_seed(0)
        ours = linear(8, 4, bias)
        torch.manual_seed(0)
        torchs = nn.Linear(8, 4, bias)
        assert type(ours) is nn.Linear
        assert all(map(torch.equal, ours.state_dict().values(), torchs.state_dict().values()))
        with torch.device("meta"), meta_build():
            shapes_only = linear(8, 4, bias)
        assert type(shapes_only) is nn.Linear and "reset_parameters" not in vars(shapes_only)
        assert all(t.is_meta for t in shapes_only.parameters())
        assert [(n, t.shape, t.dtype) for n, t in shapes_only.named_parameters()] == [
            (n, t.shape, t.dtype) for n, t in torchs.named_parameters()
        ]
    assert linear(8, 4).weight.device.type == "cpu"  # the flag ends with its build


def test_empty_norm_slots_share_one_identity_and_stay_out_of_the_tree():
    """A build's empty norm slots are one nn.Identity (tens of thousands at full size):
    no parameters, left out of the module tree, the forward pass unchanged."""
    model = build_model(make_arch(), device="meta")
    empties = {id(m) for m in model.modules() if isinstance(m, torch.nn.Identity)}
    residual = model.decoder.layers[0].attn
    assert isinstance(residual.after, torch.nn.Identity) and len(empties) == 1
    assert "Identity" not in json.dumps(module_tree(model))
