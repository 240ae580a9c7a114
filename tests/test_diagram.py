"""Architecture diagrams: every card draws; each names its layer kinds with their counts
and its blocks' norms, attention and MLP/MoE choices, drawn where the plan puts them;
strips stay readable from 6 layers to thousands; strings are escaped; CLI and API."""

from __future__ import annotations

import re
from html import unescape

import pytest
from archdb_cli.main import app
from typer.testing import CliRunner

import archdb
from archdb.diagrams import MIXER_WORDS, describe, diagram_svg, summary
from archdb.schema import LayerKind, NormPosition, pattern_counts
from tests.conftest import make_card, shipped_catalogue

# A card for every layer kind, MoE, MLA, MTP, shared blocks, parallel layers, each norm
# placement, and the encoder-decoder kind.
SAMPLE = (
    "gemma-2-9b",  # local + global, double norm, soft-caps
    "gemma-3-27b",  # five local to one global
    "llama-4-scout",  # chunked + global without positions, MoE
    "qwen3-next-80b-a3b",  # Gated DeltaNet + attention, MoE with a shared expert
    "kimi-linear-48b-a3b",  # KDA + MLA
    "minimax-text-01",  # lightning attention, normed skip
    "recurrentgemma-2b",  # RG-LRU
    "lfm2-700m",  # short convolutions
    "zamba2-2.7b",  # Mamba-2 with shared attention blocks
    "nemotron-h-8b",  # Mamba-2, attention and MLP-only layers
    "nemotron-3-nano-30b-a3b",  # Mamba-2, attention and MoE-only layers
    "mamba-130m",  # Mamba alone
    "deepseek-v3",  # MLA, MoE after dense layers, MTP
    "gpt-oss-20b",  # sinks, local + global, MoE
    "gpt-j-6b",  # parallel attention and MLP
    "olmo-2-7b",  # norm on the sublayer's output, inside the branch
    "opt-350m",  # post-norm
    "t5-base",  # encoder-decoder
)

# Words that name each layer kind in a diagram's legend (independent of the module's table).
KEYWORDS = {
    LayerKind.GLOBAL: "global attention",
    LayerKind.LOCAL: "local (sliding-window)",
    LayerKind.GLOBAL_NOPE: "no positions",
    LayerKind.CHUNKED: "chunked",
    LayerKind.MAMBA2: "Mamba-2",
    LayerKind.MAMBA: "Mamba (state space)",
    LayerKind.GATED_DELTANET: "Gated DeltaNet",
    LayerKind.KDA: "KDA",
    LayerKind.LIGHTNING: "lightning",
    LayerKind.RG_LRU: "RG-LRU",
    LayerKind.SHORT_CONV: "short convolution",
    LayerKind.GLOBAL_MAMBA2: "beside Mamba-2",
    LayerKind.MLP: "MLP only",
    LayerKind.MOE: "MoE only",
}
NORM_BOX = 'fill="#f4f4f4"'  # the fill of a norm's box, and of nothing else


def _texts(svg: str) -> list[str]:
    return [unescape(t) for t in re.findall(r"<text [^>]*>([^<]*)</text>", svg)]


def _card(card_id: str):
    return shipped_catalogue().get(card_id)


def test_the_sample_spans_every_layer_kind_and_both_stacked_kinds():
    kinds = {k for i in SAMPLE for k in _card(i).architecture.attention.layer_pattern}
    assert kinds >= set(KEYWORDS) - {LayerKind.GLOBAL_MAMBA2}  # no card has it yet
    assert {_card(i).architecture.kind.value for i in SAMPLE} == {
        "decoder-only",
        "encoder-decoder",
    }


def test_every_card_draws():
    for card in shipped_catalogue():
        svg = diagram_svg(card)
        assert svg.startswith("<svg ") and svg.endswith("</svg>\n"), card.id
        assert "<script" not in svg and " on" not in svg.split(">", 1)[0], card.id


@pytest.mark.parametrize("card_id", SAMPLE)
def test_the_diagram_names_each_layer_kind_with_its_count_and_the_blocks_choices(card_id):
    card = _card(card_id)
    arch = card.architecture
    texts = _texts(diagram_svg(card))
    text = " ".join(texts)  # a wrapped sentence joined again
    legend = [t for t in texts if re.search(r" × \d+$", t)]
    for kind, count in pattern_counts(arch.attention.layer_pattern, arch.n_layers).items():
        if count:
            assert f"{MIXER_WORDS[kind][0]} × {count}" in legend, (kind, legend)
            assert KEYWORDS[kind] in MIXER_WORDS[kind][0]
    if arch.n_encoder_layers:
        assert f"encoder: {arch.n_encoder_layers} layers, bidirectional" in texts
        assert "cross-attention to the encoder · MHA" in texts
    assert f"decoder: {arch.n_layers} layers, causal" in texts
    # the norms: their kind and placement, once for the stack
    words = {
        NormPosition.PRE: "(pre-norm)",
        NormPosition.POST: "(post-norm)",
        NormPosition.DOUBLE: "(double norm)",
        NormPosition.POST_BRANCH: "inside the residual branch",
        NormPosition.NORMED_SKIP: "the skip carries the normed input",
    }[arch.norm.position]
    norm = {"rmsnorm": "RMSNorm", "layernorm": "LayerNorm"}[arch.norm.type.value]
    assert re.search(rf"norms: {norm}[^:]*{re.escape(words)}", text), text
    # the attention: heads, KV heads and head_dim (or MLA's latent), per the card
    att = arch.attention
    if any(k.attention for k in att.layer_pattern):
        if att.variant.value == "latent":
            assert "latent (MLA)" in text
            assert f"{att.n_heads} heads, KV latent {att.latent.kv_lora_rank:,}" in text
        else:
            kv, hd = att.n_kv_heads, arch.head_dim_effective
            assert f"{att.n_heads} heads, {kv} KV heads, head_dim {hd}" in text
        if att.logit_softcap:
            assert f"attention logits soft-capped at {att.logit_softcap:g}" in text
        if att.sinks:
            assert "a learned sink logit per head" in text
        if att.output_gate:
            assert f"sigmoid output gate ({att.output_gate.value})" in text
    # the MLP or MoE, with its experts, and how many layers have which
    moe = arch.mlp.moe
    if moe is not None:
        assert f"MoE: {moe.n_experts} experts, top-{moe.n_active}" in text
        if moe.n_shared:
            assert f"{moe.n_shared} shared expert" in text
        if moe.first_dense_layers:
            assert f"dense MLP × {moe.first_dense_layers}" in legend
    elif arch.has_mlp():
        assert f"dense MLP: {arch.mlp.activation.value}" in text
    else:
        assert f"no MLP × {arch.n_layers}" in legend and "dense MLP" not in text
    assert ("in parallel, summed" in texts) == bool(arch.parallel_layers)
    if arch.final_logit_softcap:
        assert f"logits soft-capped at {arch.final_logit_softcap:g}" in text
    if arch.mtp is not None and arch.mtp.n_modules:
        assert f"multi-token prediction: {arch.mtp.n_modules} module(s), beside the model" in text
    if arch.shared_blocks is not None:
        assert f"shared blocks: {arch.shared_blocks.n_blocks} weight set(s)" in text
        assert text.count("▼") >= len(arch.shared_blocks.layers)


@pytest.mark.parametrize(
    ("card_id", "boxes", "where"),
    [
        ("llama-2-7b", 2, ["RMSNorm"] * 2),  # before attention, before the MLP
        ("opt-350m", 2, ["LayerNorm (after the add)"] * 2),
        ("olmo-2-7b", 2, ["RMSNorm (on the output)"] * 2),
        ("gpt-j-6b", 1, ["LayerNorm (one, feeding both)"]),
        # two layer types (local, global), each norm before and on the output of both
        ("gemma-2-9b", 8, ["RMSNorm, scale 1 + w", "RMSNorm, scale 1 + w (on the output)"] * 4),
    ],
)
def test_norms_are_drawn_where_the_plan_puts_them(card_id, boxes, where):
    svg = diagram_svg(_card(card_id))
    assert svg.count(NORM_BOX) == boxes
    labels = [
        unescape(m) for m in re.findall(r'fill="#f4f4f4"[^>]*/><text [^>]*>([^<]*)</text>', svg)
    ]
    assert labels == where


def test_a_hybrid_opens_each_layer_type_with_only_the_sublayers_it_has():
    """Nemotron-H's attention layers have no MLP, its MLP layers no mixer (drawing the
    card's MLP under its attention would be wrong)."""
    (stack,) = describe(_card("nemotron-h-8b")).stacks
    shapes = {t.kind: [p.role for p in t.shape.sublayers] for t in stack.types}
    assert shapes == {
        LayerKind.MAMBA2: ["mixer"],
        LayerKind.MLP: ["mlp"],
        LayerKind.GLOBAL: ["attention"],
    }
    assert [t.count for t in stack.types] == [24, 24, 4]
    assert sorted(stack.mlp_counts()) == [("dense MLP", 24), ("no MLP", 28)]


def test_layers_that_read_the_same_are_one_type_and_the_strip_letters_them():
    (stack,) = describe(_card("deepseek-v3")).stacks  # 3 dense layers, then 58 MoE
    assert [(t.letter, t.count, t.mlp) for t in stack.types] == [
        ("A", 3, "dense MLP"),
        ("B", 58, "MoE"),
    ]
    texts = _texts(diagram_svg(_card("deepseek-v3")))
    assert texts.count("A") == 3 + 1 and texts.count("B") == 58 + 1  # cells and badge
    gemma = _texts(diagram_svg(_card("gemma-3-27b")))
    assert "pattern: A×5 B, repeated over 62 layers" in gemma


@pytest.mark.parametrize("n_layers", [6, 10, 126, 5000])
def test_the_strip_draws_every_layer_readably(n_layers):
    card = make_card("toy-1b", {"architecture.n_layers": n_layers})
    svg = diagram_svg(card)
    cells = re.findall(
        r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)" height="16.0" fill="#0072B2"', svg
    )
    widths = [float(w) for w in cells]
    if n_layers <= 500:
        assert len(cells) == n_layers and min(widths) >= 9  # one cell a layer, wide enough
        starts = [int(r) for r in re.findall(r'text-anchor="end" fill="#5b6475">(\d+)<', svg)]
        row = starts[1] - 1 if len(starts) > 1 else n_layers  # rows numbered by first layer
        assert starts == [1 + i * row for i in range(-(-n_layers // row))]
    else:
        assert len(cells) == 1  # thousands of equal layers: one run
    assert f"global attention × {n_layers}" in _texts(svg)
    assert float(re.search(r'height="(\d+)"', svg).group(1)) < 1000


def test_an_encoder_only_card_draws_one_bidirectional_stack():
    card = _card("bert-base")
    diagram = describe(card)
    assert [(s.role.name, s.role.causal) for s in diagram.stacks] == [("encoder", False)]
    texts = _texts(diagram_svg(card))
    assert f"encoder: {card.architecture.n_layers} layers, bidirectional" in texts
    assert not any(t.startswith("decoder") for t in texts)
    assert "+ token type 0 of 2 (one segment)" in texts  # BERT's segment rows
    assert "masked-LM transform: 768 → 768, gelu, LayerNorm" in texts


def test_norm_placements_in_the_words_the_compare_page_shows():
    assert "(double norm)" in summary(_card("gemma-2-9b"))["norm"]
    assert "(pre-norm)" in summary(_card("llama-2-7b"))["norm"]
    assert "(post-norm)" in summary(_card("opt-350m"))["norm"]
    keys = {tuple(summary(c)) for c in list(shipped_catalogue())[:40]}
    assert len(keys) == 1  # every card has the same parts, for the compare table


def test_card_strings_are_escaped():
    card = make_card("evil-1b", name='<script>alert(1)</script> & "x"')
    svg = diagram_svg(card)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;" in svg


def test_api_and_cli_draw_the_same_diagram(tmp_path):
    expected = diagram_svg(_card("gemma-2-9b"))
    assert archdb.diagram("gemma-2-9b") == expected
    out = tmp_path / "g.svg"
    runner = CliRunner()
    result = runner.invoke(app, ["diagram", "gemma-2-9b", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == expected
    again = runner.invoke(app, ["diagram", "gemma-2-9b", "-o", str(out)])
    assert again.exit_code == 2 and "exists" in again.output
    missing = runner.invoke(app, ["diagram", "no-such-model"])
    assert missing.exit_code == 1 and "no card or family named" in missing.output


def test_a_card_with_unknown_sizes_still_draws_what_is_known():
    card = _card("lamda-137b")  # vocabulary size not published
    texts = _texts(diagram_svg(card))
    text = " ".join(texts)
    assert "no exact counts" in text and "architecture.vocab_size" in text
    assert "unknown tokens × 8,192" in texts
    assert f"decoder: {card.architecture.n_layers} layers, causal" in texts
