"""Architecture diagrams: every card draws; each names its layer kinds with their counts
and its block's norms, attention and MLP/MoE choices; strings are escaped; CLI and API."""

from __future__ import annotations

import re
from html import unescape

import pytest
from archdb_cli.main import app
from typer.testing import CliRunner

import archdb
from archdb.diagrams import diagram_svg, summary
from archdb.schema import LayerKind, pattern_counts
from tests.conftest import make_card, shipped_catalogue

# A card for every layer kind, MoE, MLA, MTP, shared blocks, parallel layers, each norm
# placement, and the encoder-decoder kind.
SAMPLE = (
    "gemma-2-9b",  # local + global, double norm, soft-caps
    "gemma-3-27b",  # five local to one global
    "llama-4-scout",  # chunked + global without positions, MoE
    "qwen3-next-80b-a3b",  # Gated DeltaNet + attention, MoE with a shared expert
    "kimi-linear-48b-a3b",  # KDA + MLA
    "minimax-text-01",  # lightning attention
    "recurrentgemma-2b",  # RG-LRU
    "lfm2-700m",  # short convolutions
    "zamba2-2.7b",  # Mamba-2 with shared attention blocks
    "nemotron-h-8b",  # Mamba-2, attention and MLP-only layers
    "mamba-130m",  # Mamba alone
    "deepseek-v3",  # MLA, MoE after dense layers, MTP
    "gpt-j-6b",  # parallel attention and MLP
    "olmo-2-7b",  # norm after the sublayer, inside the branch
    "opt-350m",  # post-norm
    "t5-base",  # encoder-decoder
)


# Words that name each layer kind in a diagram's legend (independent of the module's table).
KEYWORDS = {
    LayerKind.GLOBAL: "global",
    LayerKind.LOCAL: "local",
    LayerKind.GLOBAL_NOPE: "no positions",
    LayerKind.CHUNKED: "chunked",
    LayerKind.MAMBA2: "Mamba-2",
    LayerKind.MAMBA: "Mamba",
    LayerKind.GATED_DELTANET: "Gated DeltaNet",
    LayerKind.KDA: "KDA",
    LayerKind.LIGHTNING: "lightning",
    LayerKind.RG_LRU: "RG-LRU",
    LayerKind.SHORT_CONV: "short convolution",
    LayerKind.GLOBAL_MAMBA2: "beside Mamba-2",
    LayerKind.MLP: "MLP only",
    LayerKind.MOE: "MoE only",
}


def _text(svg: str) -> str:
    return unescape(svg)


def test_every_card_draws():
    for card in shipped_catalogue():
        svg = diagram_svg(card)
        assert svg.startswith("<svg ") and svg.endswith("</svg>\n"), card.id
        assert "<script" not in svg


@pytest.mark.parametrize("card_id", SAMPLE)
def test_the_diagram_names_each_layer_kind_with_its_count_and_the_blocks_choices(card_id):
    card = shipped_catalogue().get(card_id)
    arch = card.architecture
    text = _text(diagram_svg(card))
    counts = pattern_counts(arch.attention.layer_pattern, arch.n_layers)
    legend = [line for line in re.findall(r">([^<]*× \d+)</text>", text)]
    for kind, count in counts.items():
        if count:
            keyword = KEYWORDS[kind]
            assert any(keyword in line and line.endswith(f"× {count}") for line in legend), (
                kind,
                count,
                legend,
            )
    if arch.n_encoder_layers:
        assert f"encoder: {arch.n_encoder_layers} layers" in text
        assert f"decoder: {arch.n_layers} layers" in text
        assert "cross-attention to the encoder" in text
    else:
        assert f"decoder: {arch.n_layers} layers" in text
    assert arch.norm.type.value in text  # the block's norm
    if arch.attention.n_heads and any(k.attention for k in arch.attention.layer_pattern):
        assert f"{arch.attention.n_heads} heads" in text
    moe = arch.mlp.moe
    if moe is not None:
        assert f"MoE: {moe.n_experts} experts, top-{moe.n_active}" in text
        if moe.first_dense_layers:
            assert f"dense MLP × {moe.first_dense_layers}" in text
    elif arch.mlp.activation is not None:
        assert f"dense MLP: {arch.mlp.activation.value}" in text
    else:
        assert "no MLP × " in text and "dense MLP" not in text
    assert ("parallel" in text) == bool(arch.parallel_layers) or "parallel)" in text
    if arch.mtp is not None and arch.mtp.n_modules:
        assert f"multi-token prediction: {arch.mtp.n_modules}" in text
    if arch.shared_blocks is not None:
        assert f"shared attention blocks: {arch.shared_blocks.n_blocks}" in text


def test_norm_placements_are_drawn_where_the_card_puts_them():
    def norms_around_attention(card_id: str) -> list[str]:
        words = summary(shipped_catalogue().get(card_id))["norm"]
        return [words]

    assert "double norm" in norms_around_attention("gemma-2-9b")[0]
    assert "pre-norm" in norms_around_attention("llama-2-7b")[0]
    assert "post-norm" in norms_around_attention("opt-350m")[0]


def test_card_strings_are_escaped():
    card = make_card("evil-1b", name='<script>alert(1)</script> & "x"')
    svg = diagram_svg(card)
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_api_and_cli_draw_the_same_diagram(tmp_path):
    expected = diagram_svg(shipped_catalogue().get("gemma-2-9b"))
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
    card = shipped_catalogue().get("lamda-137b")  # vocabulary size not published
    text = _text(diagram_svg(card))
    assert "parameters not computable" in text and "embedding: unknown tokens" in text
    assert f"decoder: {card.architecture.n_layers} layers" in text
