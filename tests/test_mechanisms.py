"""Mechanisms: operator classes, the profiler on a tiny model, decode arithmetic and steps,
the attention/MLP crossover, the measurements cache and the page rendered from it.

Nothing here re-runs the slow full-width profiles: one smoke test profiles a toy layer.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from archdb_cli.main import app
from typer.testing import CliRunner

from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.measure import decode
from archdb.measure import mechanisms as mech
from archdb.measure import profile as P
from archdb.measure.analytic import param_count
from archdb.measure.crossover import Mode, card_crossover, crossover_context
from archdb.measure.decode_step import CachedAttention, CachedLatentAttention, attach_caches
from archdb.plan.layout import fill_unknowns
from archdb.reports import claims
from archdb.reports import mechanisms as page
from archdb.reports.claims import Verdict
from archdb.schema import RopeLayout
from archdb.table import catalogue_frame
from tests.conftest import shipped_catalogue

CATALOGUE = shipped_catalogue()


def arch_of(card_id: str):
    return fill_unknowns(CATALOGUE.get(card_id).architecture)[0]


# --- operator classes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("aten::addmm", P.OpClass.CONTRACTION),
        ("aten::linear", P.OpClass.CONTRACTION),
        ("aten::bmm", P.OpClass.CONTRACTION),
        ("aten::einsum", P.OpClass.CONTRACTION),
        ("autograd::engine::evaluate_function: AddmmBackward0", P.OpClass.CONTRACTION),
        ("aten::native_layer_norm", P.OpClass.NORM),
        ("aten::native_layer_norm_backward", P.OpClass.NORM),
        ("autograd::engine::evaluate_function: NativeLayerNormBackward0", P.OpClass.NORM),
        ("aten::rms_norm", P.OpClass.NORM),
        ("aten::_softmax", P.OpClass.SOFTMAX),
        ("aten::_softmax_backward_data", P.OpClass.SOFTMAX),
        ("autograd::engine::evaluate_function: SoftmaxBackward0", P.OpClass.SOFTMAX),
        ("aten::gelu", P.OpClass.ELEMENTWISE),
        ("autograd::engine::evaluate_function: GeluBackward0", P.OpClass.ELEMENTWISE),
        ("aten::add_", P.OpClass.ELEMENTWISE),
        ("aten::masked_fill", P.OpClass.ELEMENTWISE),
        ("aten::transpose", P.OpClass.OTHER),
        ("aten::cat", P.OpClass.OTHER),
        ("aten::index", P.OpClass.OTHER),
        ("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", P.OpClass.OTHER),
    ],
)
def test_op_class(name: str, cls: P.OpClass) -> None:
    assert P.op_class(name) is cls


def test_own_flops_follow_the_convention() -> None:
    x = [8, 16]
    assert P.own_flops("aten::native_layer_norm", [x, [16], [16], [16]]) == 7 * 128
    assert P.own_flops("aten::native_layer_norm", [x, [16], [], [], []]) == 5 * 128
    assert P.own_flops("aten::rms_norm", [x, [], [16], []]) == 4 * 128
    assert P.own_flops("aten::_softmax", [x, [], []]) == 5 * 128
    assert P.own_flops("aten::_softmax_backward_data", [x, x, [], []]) == 4 * 128
    assert P.own_flops("aten::add", [x, [16], []]) == 128  # broadcast: the largest input
    assert P.own_flops("aten::view", [x, []]) == 0


@dataclass
class FakeRange:
    start: float


@dataclass(eq=False)
class FakeEvent:
    name: str
    start: float
    sequence_nr: int = -1
    flops: int = 0
    input_shapes: list = field(default_factory=list)
    cpu_parent: Any = None

    @property
    def time_range(self) -> FakeRange:
        return FakeRange(self.start)


def test_attribute_follows_norm_scope_into_the_backward_pass() -> None:
    """A decomposed norm's ops and their gradients are norms; a matmul's are contractions."""
    scope = FakeEvent(P.NORM_SCOPE, 0)
    pow_ = FakeEvent("aten::pow", 1, 5, input_shapes=[[4, 8], []], cpu_parent=scope)
    linear = FakeEvent("aten::linear", 2, 6)
    mm = FakeEvent("aten::mm", 3, -1, flops=512, input_shapes=[[4, 8], [8, 8]], cpu_parent=linear)
    t = FakeEvent("aten::t", 2.5, -1, cpu_parent=linear)
    node = FakeEvent(P.BACKWARD_ROOT + "PowBackward0", 10, 5)
    mul = FakeEvent("aten::mul", 11, -1, input_shapes=[[4, 8], []], cpu_parent=node)
    mm_node = FakeEvent(P.BACKWARD_ROOT + "MmBackward0", 12, 6)
    mm_grad = FakeEvent("aten::mm", 13, -1, flops=512, cpu_parent=mm_node)
    events = [scope, pow_, linear, mm, t, node, mul, mm_node, mm_grad]
    times = {id(e): 1.0 for e in events}
    got = {
        e.name + str(e.start): a
        for e, a in zip(events[1:], P.attribute(events, times), strict=True)
    }
    assert got["aten::pow1"].cls is P.OpClass.NORM and got["aten::pow1"].flops == 32
    assert got["aten::t2.5"].cls is P.OpClass.CONTRACTION and got["aten::t2.5"].flops == 0
    assert got["aten::mm3"].flops == 512
    assert got["aten::mul11"].cls is P.OpClass.NORM  # PowBackward0 has the pow's number
    assert got["aten::mm13"].cls is P.OpClass.CONTRACTION
    runtime, flops = P.by_class(P.attribute(events, times))
    assert runtime["norm"] == 3.0  # the node, pow and mul; the scope range is not counted
    assert flops["tensor contraction"] == 1024


# --- the profiler on a tiny layer --------------------------------------------------------


def tiny_llama_stack():
    toy = shrink(arch_of("llama-2-7b")).arch.model_copy(update={"n_layers": 1})
    torch.manual_seed(0)
    stack = build_model(toy).decoder
    P.mark_norms(stack)
    return toy, stack


def test_profiler_smoke_counts_a_toy_layer_exactly() -> None:
    toy, stack = tiny_llama_stack()
    t, d, f = 16, toy.d_model, toy.mlp.d_ff
    h, kv = toy.attention.n_heads, toy.attention.n_kv_heads
    hd = d // h
    x = torch.randn(1, t, d)
    runtime, flops, wall = P.profile_pass(stack, x, backward=False, device="cpu")
    projections = 2 * t * d * (h * hd + 2 * kv * hd) + 2 * t * h * hd * d
    mlp = 3 * 2 * t * d * f
    attention = 2 * 2 * t * t * h * hd  # QK^T and AV, the dense kernel
    assert flops["tensor contraction"] == projections + mlp + attention
    assert flops["norm"] == 3 * t * d * 4  # two block norms and the final one, RMSNorm 3 + 1
    assert flops["softmax"] == 5 * h * t * t
    assert runtime["norm"] > 0 and runtime["tensor contraction"] > 0 and wall > 0
    runtime_b, flops_b, _ = P.profile_pass(stack, x.requires_grad_(), True, "cpu")
    assert flops_b["tensor contraction"] == 3 * flops["tensor contraction"]
    assert flops_b["norm"] > flops["norm"] and runtime_b["norm"] > 0


# --- decode steps -------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["half-split", "interleaved"])
def test_cached_attention_equals_the_full_forward_at_the_last_token(layout) -> None:
    toy = shrink(arch_of("llama-3-8b")).arch
    position = toy.position.model_copy(update={"rope_layout": RopeLayout(layout)})
    toy = toy.model_copy(update={"n_layers": 1, "position": position})
    torch.manual_seed(0)
    attn = build_model(toy).decoder.layers[0].attn.sublayer
    b, t = 2, 9
    x = torch.randn(b, t, toy.d_model)
    full = attn(x)[:, -1:]
    cached = CachedAttention(attn, b, t)
    (k,) = attn.rotary(attn.k(x).view(b, t, attn.n_kv_heads, attn.head_dim))
    cached.k_cache.copy_(k.transpose(1, 2))
    cached.v_cache.copy_(attn.v(x).view(b, t, attn.n_kv_heads, attn.head_dim).transpose(1, 2))
    torch.testing.assert_close(cached(x[:, -1:]), full)


def test_cached_latent_attention_equals_mla_at_the_last_token() -> None:
    toy = shrink(arch_of("deepseek-v2")).arch.model_copy(update={"n_layers": 1})
    torch.manual_seed(0)
    attn = build_model(toy).decoder.layers[0].attn.sublayer
    b, t = 2, 7
    x = torch.randn(b, t, toy.d_model)
    full = attn(x)[:, -1:]
    cached = CachedLatentAttention(attn, b, t)
    latent, k_rope = attn.kv_down(x).split((attn.kv_rank, attn.rope_dim), dim=-1)
    cached.latent_cache.copy_(attn.kv_norm(latent))
    (k_rope,) = attn.rotary(k_rope.view(b, t, 1, attn.rope_dim))
    cached.rope_cache.copy_(k_rope[:, :, 0])
    torch.testing.assert_close(cached(x[:, -1:]), full, rtol=1e-4, atol=1e-5)


def test_attach_caches_swaps_and_resizes() -> None:
    toy = shrink(arch_of("gemma-2-9b")).arch.model_copy(update={"n_layers": 2})
    stack = build_model(toy).decoder
    attach_caches(stack, 1, 16)
    attach_caches(stack, 1, 64)  # again, for a longer context
    caches = [m for m in stack.modules() if isinstance(m, CachedAttention)]
    window = toy.attention.sliding_window
    assert [c.slots for c in caches] == [min(64, window), 64]  # local, then global
    assert stack(torch.randn(1, 1, toy.d_model)).shape == (1, 1, toy.d_model)


# --- decode arithmetic ------------------------------------------------------------------------


def test_decode_traffic_of_llama_2_7b_by_hand() -> None:
    t = decode.decode_traffic(CATALOGUE.get("llama-2-7b"), context=8192, dtype_bytes=2)
    cache = 32 * 2 * 32 * 128 * 8192 * 2  # layers, K and V, heads, head dim, tokens, bytes
    assert t.cache_bytes == cache
    params = param_count(arch_of("llama-2-7b"))
    weights = params.active - params.embedding + 32000 * 4096  # the head, read in full
    assert t.weight_bytes == 2 * weights and t.weight_flops == 2 * weights
    assert t.attention_flops == 32 * 2 * 32 * 256 * 8192  # 2·h·(d_qk + d_v) per key
    assert t.variant == "MHA" and t.intensity == pytest.approx(1.0)


def test_decode_traffic_variants_and_moe() -> None:
    moe = decode.decode_traffic(CATALOGUE.get("mixtral-8x7b"))
    assert moe.weight_bytes < param_count(arch_of("mixtral-8x7b")).total * 2 / 2
    gqa = decode.decode_traffic(CATALOGUE.get("llama-3-8b"))
    assert gqa.attention_flops / gqa.cache_bytes == pytest.approx(4.0)  # 32 query / 8 KV heads
    assert decode.decode_traffic(CATALOGUE.get("gemma-2-9b")).variant == "sliding window"
    assert decode.decode_traffic(CATALOGUE.get("deepseek-v2")).variant == "MLA"
    assert decode.decode_traffic(CATALOGUE.get("t5-11b")) is None  # encoder-decoder


# --- the crossover ------------------------------------------------------------------------------


def test_crossover_by_hand_llama_2_7b() -> None:
    # MLP 3 x 2·4096·11008 = 270,532,608 FLOPs; attention 4·32·128 = 16,384 per key
    arch = arch_of("llama-2-7b")
    assert crossover_context(arch, Mode.DENSE) == pytest.approx(270_532_608 / 16_384)
    assert crossover_context(arch, Mode.CAUSAL) == pytest.approx(2 * 270_532_608 / 16_384)
    assert crossover_context(arch, Mode.WINDOWED) == pytest.approx(33_024)


def test_decode_and_crossover_read_each_layers_own_attention_gemma_4_31b() -> None:
    """Folds over the plan: Gemma 4 31B's 10 global layers attend with 512-wide heads
    (2·32·(512 + 512) = 65,536 FLOPs a key, over all 8,192 cached tokens), its 50 local
    layers with 256-wide heads (32,768 a key, over their 1,024-token window)."""
    arch = arch_of("gemma-4-31b")
    by_hand = 50 * 32_768 * 1_024 + 10 * 65_536 * 8_192
    assert decode.attention_decode_flops(arch, 8_192) == by_hand == 7_046_430_720
    mlp = 60 * 3 * 2 * arch.d_model * arch.mlp.d_ff  # no bias: the linear layers alone
    per_key_sum = 50 * 32_768 + 10 * 65_536  # every layer scores all L keys when dense
    assert crossover_context(arch, Mode.DENSE) == pytest.approx(mlp / per_key_sum)


def test_decode_counts_both_attentions_of_a_longcat_layer() -> None:
    """A LongCat-Flash layer runs two attentions (ShortcutBlock): each reads its cache."""
    arch = arch_of("longcat-flash-chat")
    one = arch.model_copy(update={"n_layers": 1})
    plan_layer = decode.attention_decode_flops(one, 1_000)
    latent = arch.attention.latent
    per_key = 2 * arch.attention.n_heads * (2 * latent.kv_lora_rank + latent.qk_rope_head_dim)
    assert plan_layer == 2 * per_key * 1_000


def test_decode_reads_deepseek_v4s_window_and_entries() -> None:
    """DeepSeek-V4-Flash at 8,192 tokens: each of its 43 layers reads its 128-token raw
    window; the 21 CSA layers add at most the indexer's 512 of their 2,048 entries (ratio
    4), the 20 HCA layers all 64 of theirs (ratio 128); 64 heads of 512, keys = values:
    2·64·(512 + 512) = 131,072 FLOPs a key. Each CSA layer's indexer scores all 2,048
    entries first: 64 heads of 128, a product, ReLU, weight and sum (2·128 + 4 each)."""
    arch = arch_of("deepseek-v4-flash")
    keys = 43 * 128 + 21 * 512 + 20 * 64
    indexer = 21 * 2_048 * 64 * (2 * 128 + 4)
    assert decode.attention_decode_flops(arch, 8_192) == 131_072 * keys + indexer
    dense = crossover_context(arch, Mode.DENSE)
    windowed = crossover_context(arch, Mode.WINDOWED)
    assert dense is not None and windowed is not None and windowed > 100 * dense


def test_a_linear_attention_card_never_crosses_over() -> None:
    """Linear attention keeps a state and scores no keys: no crossover in any mode, and
    no window read from a kernel that has none."""
    found = card_crossover(CATALOGUE.get("linear-transformer"))
    assert found is not None and found.attention_per_key == 0 and not found.windowed
    assert set(found.contexts.values()) == {None}


def test_crossover_by_hand_gemma_2_9b_with_windows() -> None:
    # MLP 3 x 2·3584·14336 = 308,281,344; 16 heads of 256: 16,384 FLOPs per key. Half the
    # layers are local (W = 4096): averaged, L/2 + W - W²/(2L) keys = 2·308,281,344/16,384
    # = 37,632, i.e. L² - 67,072·L - 16,777,216 = 0.
    arch = arch_of("gemma-2-9b")
    assert crossover_context(arch, Mode.DENSE) == pytest.approx(18_816)
    root = (67_072 + (67_072**2 + 4 * 16_777_216) ** 0.5) / 2
    assert crossover_context(arch, Mode.WINDOWED) == pytest.approx(root)
    assert crossover_context(arch_of("linear-transformer"), Mode.DENSE) is None


# --- the cache, the page and claim 18 -----------------------------------------------------------


def profile_entry(card_id: str = "transformer-big", target: str = "bert-large-layer") -> dict:
    def one(name: str, scale: int) -> dict:
        return {
            "pass": name,
            "flops": {
                "tensor contraction": 998_000 * scale,
                "norm": 500 * scale,
                "softmax": 1_000 * scale,
                "element-wise": 500 * scale,
                "other": 0,
            },
            "runtime_us": {
                "tensor contraction": [600.0, 620.0, 640.0],
                "norm": [100.0, 100.0, 90.0],
                "softmax": [150.0, 160.0, 170.0],
                "element-wise": [140.0, 130.0, 120.0],
                "other": [10.0, 10.0, 10.0],
            },
            "wall_ms": [1.5, 1.4, 1.6],
        }

    return {
        "target": target,
        "label": "BERT-large-like encoder layer",
        "card_id": card_id,
        "card_hash": mech.card_hash(CATALOGUE.get(card_id)),
        "layers": 1,
        "batch": 8,
        "seq_len": 512,
        "note": "a <b>note</b> | with a pipe",
        "passes": [one("forward", 1), one("forward+backward", 3)],
    }


def decode_entry() -> dict:
    return {
        "target": "llama-2-7b",
        "label": "Llama 2 7B (MHA)",
        "card_id": "llama-2-7b",
        "card_hash": mech.card_hash(CATALOGUE.get("llama-2-7b")),
        "batch": 8,
        "contexts": {
            "512": {"ms": [10.0, 11.0], "median_ms": 10.5, "bytes": 1e9},
            "4096": {"ms": [21.0, 20.0], "median_ms": 20.5, "bytes": 2e9},
        },
    }


def cache_doc(**changes: Any) -> dict:
    doc = {
        "script_version": mech.SCRIPT_VERSION,
        "device": {"device": "cpu", "cpu": "Test CPU", "threads": 2, "cores": 2, "torch": "2.x"},
        "repeats": 3,
        "refresh_seconds": 123.4,
        "runs": [{"targets": ["bert-large-layer", "llama-2-7b"], "seconds": 123.4}],
        "profiles": [profile_entry()],
        "decode": [decode_entry()],
    }
    return doc | changes


def write_doc(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "mechanisms.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def cards() -> dict:
    return {c.id: c for c in CATALOGUE}


def test_cache_round_trip_and_stale_entries(tmp_path: Path) -> None:
    stale = profile_entry("llama-2-7b", "llama-2-7b") | {"card_hash": "0" * 16}
    path = tmp_path / "m.json"
    mech.write(path, cache_doc(profiles=[profile_entry(), stale]))
    loaded = mech.load(path, cards())
    assert [p["target"] for p in loaded.profiles] == ["bert-large-layer"]
    assert loaded.stale == ["llama-2-7b"]
    assert mech.load(tmp_path / "missing.json", cards()) is None
    assert mech.load(write_doc(tmp_path, cache_doc(script_version=0)), cards()) is None


def test_card_hash_ignores_output_only_fields_but_not_sizes() -> None:
    card = CATALOGUE.get("palm-8b")  # records none of the output-only fields
    arch = card.architecture
    recorded = arch.model_copy(
        update={
            "norm": arch.norm.model_copy(update={"eps": 1e-5, "unit_offset": True}),
            "position": arch.position.model_copy(update={"rope_layout": "interleaved"}),
            "embedding_multiplier": 2.0,
            "logit_scale": 0.5,
        }
    )
    assert mech.card_hash(card.model_copy(update={"architecture": recorded})) == mech.card_hash(
        card
    )
    wider = arch.model_copy(update={"d_model": arch.d_model * 2})
    assert mech.card_hash(card.model_copy(update={"architecture": wider})) != mech.card_hash(card)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object at the top level"),
        (json.dumps(cache_doc(repeats="5")), "repeats: Input should be a valid integer"),
        (json.dumps(cache_doc(profiles=[{"target": 1}])), "profiles[0]"),
        (json.dumps(cache_doc(decode=[decode_entry() | {"contexts": {"x": {}}}])), "context"),
    ],
)
def test_a_tampered_cache_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mechanisms.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(
        mech.MeasurementError, match=message.replace("[", r"\[").replace("]", r"\]")
    ):
        mech.load(path, cards())


def _uneven_runtimes() -> dict:
    entry = profile_entry()
    entry["passes"][0]["runtime_us"]["norm"] = [100.0]  # one timing where others have three
    return entry


def _decode_at(context: str, **values: Any) -> dict:
    point = {"ms": [10.0, 11.0], "median_ms": 10.5, "bytes": 1e9} | values
    return decode_entry() | {"contexts": {context: point}}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (cache_doc(profiles=[_uneven_runtimes()]), "runtime_us lists differ in length"),
        (cache_doc(decode=[_decode_at("01024")]), "01024 \\(the key\\): a context must be"),
        (cache_doc(decode=[_decode_at("²")]), r"\\xb2 \(the key\): a context must be a token"),
        (cache_doc(decode=[_decode_at("9" * 5000)]), r"9{37}\.\.\. \(the key\): a context"),
        (cache_doc(decode=[_decode_at("512", ms=[0.0, 0.0])]), r"512\.ms\[0\]: must be a positive"),
        (cache_doc(decode=[_decode_at("512", median_ms=0)]), "512.median_ms: must be a positive"),
        (
            cache_doc(decode=[decode_entry() | {"batch": 10**30}]),
            "batch: Input should be less than",
        ),
    ],
)
def test_a_measurement_out_of_bounds_is_a_clear_error(
    tmp_path: Path, doc: dict, message: str
) -> None:
    with pytest.raises(mech.MeasurementError, match=message):
        mech.load(write_doc(tmp_path, doc), cards())


def test_a_measurements_file_is_read_only_when_regular(tmp_path: Path) -> None:
    """A link to /dev/zero is refused before a byte is read; a named pipe is not waited on."""
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, why in ((zero, "not a regular file"), (fifo, "a pipe or socket, not a file")):
        with pytest.raises(mech.MeasurementError, match=f"{path}: cannot read: {why}"):
            mech.read_raw(path)


def test_an_oversized_cache_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mechanisms.json"
    path.write_text(" " * (mech.MAX_BYTES + 1), encoding="utf-8")
    with pytest.raises(mech.MeasurementError, match="more than"):
        mech.read_raw(path)


def test_merge_keeps_other_targets() -> None:
    old = cache_doc(profiles=[profile_entry(), profile_entry("llama-2-7b", "llama-2-7b")])
    new = cache_doc(
        profiles=[profile_entry() | {"label": "new"}],
        decode=[],
        runs=[{"targets": ["bert-large-layer"], "seconds": 10.0}],
    )
    merged = mech.merge(old, new)
    assert [(p["target"], p["label"]) for p in merged["profiles"]] == [
        ("bert-large-layer", "new"),
        ("llama-2-7b", "BERT-large-like encoder layer"),
    ]
    assert merged["decode"] == old["decode"]
    assert merged["refresh_seconds"] == 133.4  # the old run measured what is kept


@functools.cache
def _page_data_without_measurements() -> page.MechanismsData:
    """The page's analytic rows of the shipped catalogue (every card's decode traffic and
    crossover: most of a second), computed once for the two page tests."""
    return page.compute(CATALOGUE, None)


def test_page_renders_from_a_small_cache(tmp_path: Path) -> None:
    measured = mech.load(write_doc(tmp_path, cache_doc()), cards())
    assert page.compute([], measured).measured is measured  # the rows: the cached ones
    data = dataclasses.replace(_page_data_without_measurements(), measured=measured)
    saved: list[str] = []

    def fig(name: str, make) -> str:
        saved.append(name)
        assert make() is not None
        return f"figures/{name}.svg"

    text = "\n\n".join(page.page(data, fig))
    assert "Test CPU" in text and "took 123 s (one run)" in text
    # FLOPs: norm + softmax = 1,500 of 1,000,000 = 0.15%; runtime median shares over runs
    assert (
        "| BERT-large-like encoder layer | forward | 99.8% | 0.050% | 0.10% | 0.050% | 0 | 0.15% |"
        in text
    )
    assert "25.2% (25.0%–25.5%)" in text  # 250/1000, 260/1020, 260/1030: median and range
    assert "&lt;b&gt;note&lt;/b&gt; \\| with a pipe" in text and "<b>" not in text
    assert "×1.95; bytes ×2.00" in text  # 20.5 / 10.5 ms against the bytes
    assert "| `llama-2-7b` | 2023 | mha | 0.271 | 16,512 | 33,024 | 33,024 |" in text
    assert saved == [
        "mechanisms-profile",
        "mechanisms-decode-traffic",
        "mechanisms-decode-time",
        "mechanisms-crossover",
    ]


def test_page_without_measurements_says_how_to_get_them() -> None:
    text = "\n\n".join(page.page(_page_data_without_measurements(), lambda n, m: None))
    assert text.count("Not measured yet: run `archdb measure mechanisms`") == 2


def test_claim_18_rests_on_the_measured_runtime_share(tmp_path: Path) -> None:
    from archdb.reports.measured import ClaimMeasurements, runtime_evidence

    measured = mech.load(write_doc(tmp_path, cache_doc()), cards())
    evidence = runtime_evidence(measured)
    frame = catalogue_frame(CATALOGUE)
    result = claims.check("norm-runtime", frame, ClaimMeasurements(runtime_profile=evidence))
    # 0.15% of FLOPs (near 0.17%), 25.0% of runtime (near 25%), 167x: every part holds
    assert result.verdict is Verdict.HOLDS
    assert "0.150% of the FLOPs and 25.2% of the runtime" in result.evidence
    assert "Test CPU" in result.evidence and "layer norm, RMSNorm and softmax" in result.evidence
    assert result.deciding == ("transformer-big",)
    low = profile_entry()
    for p in low["passes"]:
        p["runtime_us"]["softmax"] = [10.0, 10.0, 10.0]
    measured = mech.load(write_doc(tmp_path, cache_doc(profiles=[low])), cards())
    result = claims.check(
        "norm-runtime", frame, ClaimMeasurements(runtime_profile=runtime_evidence(measured))
    )
    assert result.verdict is Verdict.PARTLY
    assert any("not ~25%" in d for d in result.disagreements)


def test_measure_cli_rejects_bad_usage() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["measure", "mechanisms", "--device", "tpu"])
    assert result.exit_code == 2 and "--device must be cpu or cuda" in result.output
    result = runner.invoke(app, ["measure", "mechanisms", "--only", "nope"])
    assert result.exit_code == 2 and "unknown target 'nope'" in result.output


def test_report_with_a_tampered_cache_exits_cleanly(tmp_path: Path, write_catalogue) -> None:
    from tests.conftest import card_text, run_cli

    path = write_catalogue(card_text())
    cache = mech.cache_path(path)
    cache.parent.mkdir()
    cache.write_text(json.dumps(cache_doc(profiles=[{"target": 1}])), encoding="utf-8")
    command = ["report", "-C", str(path), "-o", str(tmp_path / "out")]
    result = run_cli(*command)
    assert result.returncode == 1, result.stderr
    assert "profiles[0]" in result.stderr and "Traceback" not in result.stderr


def test_profile_targets_keep_the_cards_widths() -> None:
    targets = {t.key: t for t in P.TARGETS}
    bert = P.target_architecture(CATALOGUE.get("transformer-big"), targets["bert-large-layer"])
    assert (bert.d_model, bert.attention.n_heads, bert.mlp.d_ff) == (1024, 16, 4096)
    assert bert.norm.position.value == "post" and bert.mlp.activation.value == "gelu"
    moe = P.target_architecture(CATALOGUE.get("qwen3-30b-a3b"), targets["qwen3-30b-a3b"])
    assert (moe.n_layers, moe.mlp.moe.n_experts, moe.mlp.moe.n_active) == (1, 32, 8)
    assert (moe.d_model, moe.mlp.d_ff) == (2048, 768)
    assert {t.card_id for t in P.TARGETS} <= set(CATALOGUE.ids())
