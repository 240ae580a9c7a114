"""Measurement: the analytic formulas equal the built models (parameters on the meta device,
where every full-size model also takes its released checkpoint's names; FLOPs counted by
fvcore on every toy, which also runs and is causal), and the conventions are the ones stated."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import archdb
from archdb import conventions as cv
from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.measure.analytic import (
    cache_size,
    causal_keys,
    default_seq_len,
    dense_keys,
    derived_figures,
    flops,
    param_count,
    training_flops,
)
from archdb.measure.flops import UncountedOperatorError, measure_flops, route_to_real_experts
from archdb.measure.params import full_size_params, measure_params
from archdb.plan.layout import BuildError, fill_unknowns
from archdb.schema import LayerKind
from tests.conftest import (
    CHOICES,
    last_token_changed,
    latent_dims,
    make_arch,
    moe_block,
    shipped_catalogue,
    shipped_toys,
)

CARDS = list(shipped_catalogue())


def _buildable(card) -> bool:
    try:
        param_count(card.architecture)
    except BuildError:
        return False
    return True


TOYS = [(card_id, toy) for card_id, toy in shipped_toys().items() if toy is not None]


def _distinct(toys: list) -> list:
    """One case per distinct toy: the sizes of a ladder often shrink to the same toy, and
    measuring it again proves nothing new. Named by its first card and how many share it;
    each case carries every card's id, for the failure messages."""
    groups: dict[str, list] = {}
    for card_id, toy in toys:
        groups.setdefault(toy.model_dump_json(), []).append((card_id, toy))
    cases = []
    for (first, toy), *others in groups.values():
        cards = ", ".join([first, *(card_id for card_id, _ in others)])
        cases.append(pytest.param(toy, cards, id=f"{first}(+{len(others)})" if others else first))
    return cases


DISTINCT_TOYS = _distinct(TOYS)
META_TRACE_PARAMS = 50_000_000  # toys above it, dense ones, are traced on the meta device
# fvcore traces each toy on 40 of its 64 tokens: the toy windows and chunks (16 tokens)
# still cut in and 40 is not a multiple of them (a last, shorter chunk), while recurrent
# mixers trace a few graph nodes a token. The 200-token toys below cover longer inputs.
TRACED_TOKENS = 40


# --- parameters ----------------------------------------------------------------------------


# transformers keeps MoE experts fused in memory and splits them when saving: the saved
# per-expert layout is test_fidelity's tiny checkpoints; these save them as held in memory
FUSED_EXPERTS_ON_DISK = {"gpt_oss"}  # (experts, in, out) tensors


def _released_names(card) -> tuple[str, dict] | None:
    """The transformers model_type whose released checkpoint names the card's full-size
    model must take (open weights, a names mapping, experts saved as held in memory, a
    card the family's code builds: T5 1.1's untied head has no transformers 5 twin), with
    the config its writer makes of the card."""
    from archdb_hf.families.card_to_config import NotRepresentable
    from archdb_hf.families.registry import SPECS, model_type_of

    model_type = model_type_of(card)
    dense = card.architecture.mlp.moe is None or model_type in FUSED_EXPERTS_ON_DISK
    if not (card.open_weights and dense and model_type in SPECS and SPECS[model_type].names):
        return None
    try:
        return model_type, SPECS[model_type].write(fill_unknowns(card.architecture)[0])
    except NotRepresentable:
        return None


@pytest.mark.parametrize("card", [c for c in CARDS if _buildable(c)], ids=lambda c: c.id)
def test_the_full_size_meta_model_counts_the_formula_and_takes_the_released_names(card):
    """One full-size build per card on the meta device: its exact counts equal the
    formula's, and, where the card's transformers family has a names mapping,
    transformers' own model of the card (the synthesized checkpoint) has every name a
    place in it, shape for shape."""
    model = archdb.build(card, "full")
    measured = measure_params(model, card.params_published)
    formula = param_count(card.architecture)
    assert (formula.total, formula.non_embedding, formula.active) == (
        measured.total,
        measured.non_embedding,
        measured.active,
    )
    if card.params_published:
        assert measured.relative_difference == pytest.approx(
            (measured.total - card.params_published) / card.params_published
        )
    if (released := _released_names(card)) is not None:
        _assert_takes_the_released_names(card, model, *released)


def _assert_takes_the_released_names(card, model, model_type: str, written: dict) -> None:
    transformers = pytest.importorskip("transformers")
    from archdb_hf.families.registry import SPECS
    from archdb_hf.testing import reference_config
    from archdb_hf.weights import TensorCheckpoint, checkpoint_buffers, match_weights

    spec = SPECS[model_type]
    config = reference_config(spec, written)
    with torch.device("meta"), _no_init_weights():  # shapes only: skip the random fills
        theirs = getattr(transformers, spec.model_class)(config)
    state = theirs.state_dict()
    if model_type == "gpt_neox":  # named lm_head in memory, embed_out on disk (save_pretrained)
        state["embed_out.weight"] = state.pop("lm_head.weight")
    if model_type == "nemotron_h":  # model.* in memory, NVIDIA's backbone.* on disk
        state = {re.sub(r"^model\.", "backbone.", k): v for k, v in state.items()}
    values = match_weights(model, TensorCheckpoint(state, card.id), model_type)
    # every parameter, and the buffers a checkpoint holds (Gemma 4's layer scalars)
    assert len(values) == len(dict(model.named_parameters())) + len(checkpoint_buffers(model))


def _no_init_weights():
    """transformers' own switch that skips weight initialisation (from_pretrained's)."""
    try:
        from transformers.initialization import no_init_weights  # transformers 5
    except ImportError:
        from transformers.modeling_utils import no_init_weights  # transformers 4
    return no_init_weights()


@pytest.mark.parametrize("changes", CHOICES, ids=lambda c: ",".join(c)[:50])
def test_analytic_params_equal_the_model_for_every_choice(changes):
    arch = make_arch(**changes)
    model = build_model(arch)
    assert param_count(arch).total == sum(p.numel() for p in model.parameters())


def test_parameter_conventions():
    untied = param_count(make_arch())
    tied = param_count(make_arch(tied_embeddings=True))
    assert untied.total - tied.total == 128 * 64  # the head, counted once when tied
    assert untied.non_embedding == tied.non_embedding  # vocab matrices are not counted
    assert untied.embedding == 2 * 128 * 64
    moe = make_arch(**{"mlp.moe": moe_block(n_experts=8)})
    count = param_count(moe)
    expert = 3 * 64 * 128
    assert count.total - count.active == 2 * (8 - 2) * expert  # 2 layers, 6 idle experts
    assert measure_params(build_model(moe)).active == count.active


def test_meta_count_is_fast_and_large():
    arch = make_arch(
        d_model=16384,
        n_layers=126,
        vocab_size=128_256,
        **{"attention.n_heads": 128, "attention.n_kv_heads": 8, "mlp.d_ff": 53248},
    )
    assert full_size_params(arch).total == param_count(arch).total > 400e9


# --- FLOPs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("toy", "cards"), DISTINCT_TOYS)
def test_every_toy_runs_causally_and_fvcore_and_the_formula_agree(toy, cards):
    """Each distinct toy of the catalogue, built once: it runs, its logits are finite and
    causal (bidirectional for encoder-only cards), and fvcore's count of a forward pass
    equals the FLOP formula."""
    torch.manual_seed(0)
    model = build_model(toy).eval()
    logits, again = last_token_changed(model, toy)
    assert logits.shape == (1, toy.context_length, toy.vocab_size), cards
    assert torch.isfinite(logits).all(), cards
    # changing the last token must not change any earlier position's logits, but in an
    # encoder-only model, which reads both ways, it changes them all
    bidirectional = toy.kind.value == "encoder-only"
    assert torch.allclose(logits[:, :-1], again[:, :-1], atol=1e-5) != bidirectional, cards
    assert not torch.allclose(logits[:, -1], again[:, -1]), cards
    # The count reads shapes only: a large dense toy is traced on the meta device, the same
    # graph without the tracer's arithmetic. Experts dispatch tokens by a data-dependent
    # sort, which the meta device cannot run: MoE toys (at most 16 experts a layer) run
    # for real.
    if param_count(toy).total > META_TRACE_PARAMS and toy.mlp.moe is None:
        model = build_model(toy, device="meta")
    route_to_real_experts(model)
    t = TRACED_TOKENS
    window = toy.attention.sliding_window
    assert t < toy.context_length and (window is None or not t <= window < toy.context_length)
    measured = measure_flops(model, t)
    formula = flops(toy, t)
    total = sum(formula.dense.values())
    assert abs(measured.total - total) <= 0.005 * total, cards
    for cls, n in formula.dense.items():  # class by class, too
        assert abs(measured.by_class[cls] - n) <= 0.005 * total, (cls, cards)
    attends = toy.has_attention()  # attention-free stacks (Mamba-2) score no keys
    assert (measured.by_class["attention"] > 0) == attends, cards
    softmax = attends and toy.attention.variant.value != "linear"
    assert (measured.by_class["softmax"] > 0) == softmax, cards


@pytest.mark.parametrize("card_id", ["gemma-2-9b", "llama-4-scout"])
def test_fvcore_and_the_formula_agree_on_a_longer_toy(card_id):
    """A toy of 200 tokens: windows and chunks scale to 50 (a quarter), 200 is not a
    multiple of them, and fvcore still equals the formula class by class."""
    card = next(c for c in CARDS if c.id == card_id)
    toy = shrink(fill_unknowns(card.architecture)[0], seq_len=200).arch
    assert (toy.context_length, toy.attention.sliding_window) == (200, 50)
    measured = measure_flops(build_model(toy), 200)
    assert measured.by_class == pytest.approx(flops(toy, 200).dense, rel=1e-12)


@pytest.mark.parametrize(
    "changes",
    [
        {"bias.mlp": True, "mlp.d_ff": 96},
        {"kind": "encoder-decoder", "n_encoder_layers": 2},
    ],
    ids=["dense", "encoder-decoder"],
)
def test_a_meta_device_trace_counts_what_a_real_one_counts(changes):
    """The largest dense toys are traced on the meta device: the same graph, the same
    count."""
    arch = make_arch(**changes)
    meta = measure_flops(build_model(arch, device="meta"), 48)
    assert meta == measure_flops(build_model(arch), 48) and meta.total > 0


@pytest.mark.parametrize("changes", CHOICES, ids=lambda c: ",".join(c)[:50])
def test_fvcore_and_the_formula_agree_for_every_choice(changes):
    arch = make_arch(**changes)
    # shorter than the choices' contexts, longer than their windows and chunks (8 and 16
    # tokens), a multiple of neither: windows cut in and a last chunk is short
    t = 20
    assert measure_flops(build_model(arch), t).total == sum(flops(arch, t).dense.values())


def test_flops_are_two_per_multiply_add():
    class TwoLinears(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Module()
            self.embed.table = nn.Embedding(10, 8)
            self.a = nn.Linear(8, 16, bias=True)
            self.b = nn.Linear(16, 4, bias=False)

        def forward(self, tokens):
            return self.b(self.a(self.embed.table(tokens)))

    m = measure_flops(TwoLinears(), 5)
    assert m.by_class["linear"] == 5 * (2 * 8 * 16 + 16 + 2 * 16 * 4)
    assert m.per_token == 2 * 8 * 16 + 16 + 2 * 16 * 4


def test_attention_matmuls_are_counted():
    arch = make_arch(n_layers=1)
    t = 32
    m = measure_flops(build_model(arch), t)
    h, hd = 4, 16
    scores_and_values = 2 * (2 * t * t * h * hd)
    scale, softmax = t * h * hd, cv.SOFTMAX * h * t * t
    assert m.by_class["attention"] == scores_and_values + scale
    assert m.by_class["softmax"] == softmax


def test_fused_attention_is_refused_not_skipped():
    class Fused(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Module()
            self.embed.table = nn.Embedding(10, 8)

        def forward(self, tokens):
            x = self.embed.table(tokens).unsqueeze(1)
            return F.scaled_dot_product_attention(x, x, x, is_causal=True)

    with pytest.raises(UncountedOperatorError, match="scaled_dot_product_attention"):
        measure_flops(Fused(), 6)


def test_interleaved_rope_costs_what_half_split_rope_costs():
    # Both layouts rotate by the same multiply-adds; only the pairing (a flip or a cat) differs.
    by_layout = {
        layout: measure_flops(build_model(make_arch(**{"position.rope_layout": layout})), 16)
        for layout in ("half-split", "interleaved")
    }
    assert by_layout["interleaved"].total == by_layout["half-split"].total > 0
    assert by_layout["interleaved"].by_class == by_layout["half-split"].by_class


def test_norms_activations_and_softcaps_are_counted():
    plain = flops(make_arch(), 32).per_token_by_class()
    capped = flops(
        make_arch(**{"attention.logit_softcap": 50.0, "final_logit_softcap": 30.0}), 32
    ).per_token_by_class()
    assert plain["norm"] > 0 and plain["elementwise"] > 0
    assert capped["elementwise"] - plain["elementwise"] == cv.SOFTCAP * 128  # final, on logits
    assert capped["attention"] - plain["attention"] == 2 * 4 * 32 * cv.SOFTCAP  # per score


def test_causal_and_window_accounting():
    t, w = 64, 16
    assert dense_keys(LayerKind.GLOBAL, None, t) == t * t
    assert causal_keys(LayerKind.GLOBAL, None, t) == t * (t + 1) // 2
    assert dense_keys(LayerKind.LOCAL, w, t) == t * w
    assert causal_keys(LayerKind.LOCAL, w, t) == sum(min(i + 1, w) for i in range(t))
    assert dense_keys(LayerKind.CHUNKED, w, 40) == 2 * w * w + 8 * 8
    assert causal_keys(LayerKind.CHUNKED, w, 40) == sum((i % w) + 1 for i in range(40))
    assert dense_keys(LayerKind.LOCAL, 100, t) == t * t  # a window longer than the sequence
    local = make_arch(**{"attention.layer_pattern": ["local"], "attention.sliding_window": w})
    per_token = [flops(local, n).per_token_by_class()["attention"] for n in (128, 512)]
    assert per_token[0] == per_token[1]  # capped by the window: independent of length
    glob = [flops(make_arch(), n).per_token_by_class()["attention"] for n in (128, 512)]
    assert glob[1] > 3 * glob[0]
    dense, causal = flops(make_arch(), 512).per_token, flops(make_arch(), 512).per_token_causal
    assert causal < dense


def test_linear_flops_are_twice_the_matmul_weights():
    """A bias-free model: linear FLOPs/token = 2 x (parameters - embedding table - norms)."""
    arch = make_arch(d_model=256, **{"attention.n_heads": 8, "mlp.d_ff": 512})
    counts, model = param_count(arch), build_model(arch)
    norms = sum(p.numel() for n, p in model.named_parameters() if "norm" in n or "before" in n)
    per_token = flops(arch, 16).per_token_by_class()["linear"]
    assert per_token == 2 * (counts.total - 128 * 256 - norms)


def test_moe_counts_only_active_experts():
    def moe(k):
        return make_arch(**{"mlp.moe": moe_block(n_experts=8, n_active=k)})

    one, two = (flops(moe(k), 32).per_token_by_class()["linear"] for k in (1, 2))
    assert two - one == 2 * 3 * 2 * 64 * 128  # one more expert in each of 2 layers


def test_encoder_decoder_counts_encoder_and_cross_attention():
    dec = flops(make_arch(), 32).per_token
    encdec = flops(make_arch(kind="encoder-decoder", n_encoder_layers=2), 32).per_token
    assert encdec > 1.5 * dec


# --- KV cache ----------------------------------------------------------------------------


def test_kv_cache_for_mha_gqa_mqa_mla_and_windows():
    def kv(**changes):
        return cache_size(make_arch(**changes), context=64, bytes_per_element=2).per_token

    assert kv(**{"attention.n_kv_heads": 4}) == 2 * 2 * 4 * 16 * 2  # layers, K+V, heads, dim
    assert kv() == 2 * 2 * 2 * 16 * 2
    assert kv(**{"attention.n_kv_heads": 1}) == 2 * 2 * 1 * 16 * 2
    mla = kv(
        **{
            "attention.variant": "latent",
            "attention.n_kv_heads": 4,
            "attention.latent": latent_dims(),
        }
    )
    assert mla == 2 * (16 + 8) * 2
    local = kv(**{"attention.layer_pattern": ["local", "global"], "attention.sliding_window": 16})
    assert local == (2 * 2 * 16 * 2) * (16 / 64 + 1)  # the local layer caches 16 of 64
    assert kv(**{"attention.variant": "linear"}) == 0


def test_every_card_has_derived_figures_fast_and_complete():
    keys = {
        "params_exact",
        "params_non_embedding",
        "params_active",
        "d_ff_ratio",
        "aspect_ratio",
        "head_ratio",
        "query_groups",
        "kv_cache_bytes_per_token",
        "flops_per_token",
    }
    for card in CARDS:
        figures = derived_figures(card)
        assert keys <= set(figures)
        if _buildable(card):
            assert figures["params_exact"] == param_count(card.architecture).total
            assert figures["flops_seq_len"] == default_seq_len(fill_unknowns(card.architecture)[0])
        else:
            assert figures["params_exact"] is None


def test_training_compute_is_six_n_d():
    card = next(c for c in CARDS if c.training.tokens and _buildable(c))
    assert training_flops(card) == 6 * param_count(card.architecture).active * card.training.tokens


def test_toy_forward_is_deterministic_and_measured_on_cpu():
    arch = make_arch()
    torch.manual_seed(0)
    a = measure_flops(build_model(arch), 16)
    b = measure_flops(build_model(arch), 16)
    assert a == b and a.per_token == a.total / 16


# --- the plan -------------------------------------------------------------------------------


def test_a_plan_of_ten_thousand_layers_stays_compact_and_exact():
    from archdb.plan import make_plan

    pattern = ["local"] * 5 + ["global"]
    windowed = {"attention.layer_pattern": pattern, "attention.sliding_window": 16}
    deep = make_arch(n_layers=10_002, **windowed)
    plan = make_plan(deep)
    assert [c for _, c in plan.decoder.groups()] == [1667] * 6  # 10,002 layers, 6 blocks
    one = param_count(make_arch(n_layers=6, **windowed))
    per_layer_set = one.total - 2 * 128 * 64 - 64  # six layers: less the tables, final norm
    assert param_count(deep).total == one.total + 1666 * per_layer_set
    kv = cache_size(deep, context=64, bytes_per_element=2)
    assert kv.total == 1667 * 2 * 2 * 16 * 2 * (5 * 16 + 64)  # 5 local layers keep 16 keys
