"""Adoption of the 2024-2026 mechanisms by year: hybrid token mixers, attention sinks, the
attention output gate, sparse attention, RoPE scaling and cross-layer KV sharing; the
layer-mix figure's grouping of rare combinations."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from archdb_cli.main import app
from typer.testing import CliRunner

from archdb.reports.adoption import ANY, Adoption, adoption, find_choice, trend_rows
from archdb.table import catalogue_rows
from tests.conftest import (
    ARCH_BASE,
    DSA,
    FALCON_H1_LIKE,
    GEMMA4_ON_DEVICE,
    MAMBA2_ONLY,
    catalogue,
    latent_dims,
    make_card,
    mamba2_dims,
    qk_norm,
)

runner = CliRunner()

YARN = {"type": "yarn", "factor": 4.0, "original_context": 16, "beta_fast": 32.0, "beta_slow": 1.0}


def _arch(changes: dict[str, Any] | None = None) -> dict[str, Any]:
    """The conftest toy architecture (RoPE, SwiGLU) with ``changes`` (dotted paths)."""
    prefixed = {f"architecture.{path}": value for path, value in (changes or {}).items()}
    return {"architecture": copy.deepcopy(ARCH_BASE), **prefixed}


def _cards():
    """2023: a transformer and a Mamba-2 stack; 2024: a serial and a parallel hybrid;
    2025: sinks with YaRN, an output gate, DSA, KV sharing, linear attention and a
    research variant (left out)."""
    return catalogue(
        make_card("dense-2023", _arch(), year=2023),
        make_card("mamba-2023", _arch(MAMBA2_ONLY), year=2023),
        make_card(
            "jamba-2024",
            _arch(
                {
                    "attention.layer_pattern": ["mamba2", "global"],
                    "mixers": {"mamba2": mamba2_dims(mlp=True)},
                }
            ),
            year=2024,
        ),
        make_card("falcon-2024", _arch(FALCON_H1_LIKE), year=2024),
        make_card(
            "oss-2025",
            _arch({"attention.sinks": True, "position.rope_scaling": YARN}),
            year=2025,
        ),
        make_card(
            "gated-2025",
            _arch({"attention.output_gate": "elementwise", **qk_norm("per-head")}),
            year=2025,
        ),
        make_card(
            "dsa-2025",
            _arch(
                {
                    "attention.variant": "latent",
                    "attention.n_kv_heads": 4,
                    "attention.latent": latent_dims(q_lora_rank=24),
                    "attention.sparse": DSA,
                }
            ),
            year=2025,
        ),
        make_card("gemma-2025", _arch(GEMMA4_ON_DEVICE), year=2025),
        make_card("linear-2025", _arch({"attention.variant": "linear"}), year=2025),
        make_card(
            "research-2025",
            _arch({"attention.sinks": True}),
            research_variant=True,
            year=2025,
        ),
    )


def _adoption(key: str) -> Adoption:
    return adoption(trend_rows(catalogue_rows(_cards(), counts=False)), find_choice(key))


def _counts(result: Adoption) -> dict[str, dict[int, int]]:
    return {t.value: dict(t.counts) for t in result.values}


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (
            "token-mixers",
            {
                "attention-only": {2023: 1, 2025: 4},
                "attention-free": {2023: 1, 2025: 1},  # Mamba-2; linear attention
                "hybrid": {2024: 2},  # serial (Jamba-like) and parallel (Falcon-H1-like)
                ANY: {2023: 1, 2024: 2, 2025: 1},
            },
        ),
        # sinks on one released model: the research variant's are not counted
        ("sinks", {"none": {2023: 2, 2024: 2, 2025: 4}, "sinks": {2025: 1}}),
        ("output-gate", {"none": {2023: 2, 2024: 2, 2025: 4}, "elementwise": {2025: 1}}),
        ("sparse-attention", {"dense": {2023: 2, 2024: 2, 2025: 4}, "sparse": {2025: 1}}),
        ("kv-sharing", {"none": {2023: 2, 2024: 2, 2025: 4}, "shared": {2025: 1}}),
        # a RoPE card without rope_scaling is unknown, not "none"; Mamba-2 has no RoPE
        ("rope-scaling", {"no-rope": {2023: 1}, "yarn": {2025: 1}}),
    ],
)
def test_mechanism_adoption_counts(key: str, expected: dict[str, dict[int, int]]) -> None:
    result = _adoption(key)
    assert _counts(result) == expected
    assert result.total == {2023: 2, 2024: 2, 2025: 5}


def test_rope_scaling_counts_an_unrecorded_scaling_as_unknown() -> None:
    result = _adoption("rope-scaling")
    assert result.known == {2023: 1, 2025: 1}
    assert result.unknown == (
        "dense-2023",
        "falcon-2024",
        "jamba-2024",
        "dsa-2025",
        "gated-2025",
        "gemma-2025",
        "linear-2025",
    )
    yarn = next(t for t in result.values if t.value == "yarn")
    assert result.year(2025).raw_share("yarn").share == 1.0  # of the one known value
    assert not result.holds_majority(yarn, 2025)  # 1 of 5 models: never a majority
    assert result.year(2025).too_few_known and result.share_of(yarn, 2025) is None


def test_the_hybrid_share_reads_by_year() -> None:
    result = _adoption("token-mixers")
    hybrid = next(t for t in result.values if t.value == "hybrid")
    assert [result.share(hybrid, y) for y in result.years] == [0.0, 1.0, 0.0]
    assert hybrid.first_use.models == ("falcon-2024", "jamba-2024")
    assert hybrid.majority_year == 2024 and hybrid.consensus_since is None


def _write(tmp_path: Path) -> Path:
    cards = [c.model_dump(mode="json", exclude_none=False) for c in _cards()]
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(cards, sort_keys=False, allow_unicode=True))
    return path


@pytest.mark.parametrize(
    ("key", "title", "value"),
    [
        ("token-mixers", "Hybrid token mixers", "hybrid"),
        ("sinks", "Attention sinks", "sinks"),
        ("output-gate", "Attention output gate", "elementwise"),
        ("sparse-attention", "Sparse attention", "sparse"),
        ("rope-scaling", "RoPE scaling", "yarn"),
        ("kv-sharing", "Cross-layer KV sharing", "shared"),
    ],
)
def test_trends_cli_shows_each_mechanism(tmp_path: Path, key: str, title: str, value: str) -> None:
    path = _write(tmp_path)
    table = runner.invoke(app, ["trends", key, "--catalogue", str(path)])
    assert table.exit_code == 0, table.output
    assert f"{title} ({key})" in table.output
    line = next(x.split() for x in table.output.splitlines() if x.strip().startswith(value))
    assert line[-3] == ("2024" if key == "token-mixers" else "2025")  # first use
    data = json.loads(
        runner.invoke(app, ["trends", key, "--json", "--catalogue", str(path)]).output
    )
    (entry,) = data
    assert entry["choice"] == key
    counts = next(v["counts"] for v in entry["values"] if v["value"] == value)
    assert counts == ({"2024": 2} if key == "token-mixers" else {"2025": 1})


def test_trends_of_rope_scaling_counts_the_unknown(tmp_path: Path) -> None:
    result = runner.invoke(app, ["trends", "rope-scaling", "--catalogue", str(_write(tmp_path))])
    assert result.exit_code == 0
    assert "unknown: 7 cards" in result.output
    assert "1/5" in result.output  # 2025: one known value of five models


def test_list_filters_by_the_new_columns(tmp_path: Path) -> None:
    path = str(_write(tmp_path))
    result = runner.invoke(
        app, ["list", "-w", "token_mixers=hybrid", "-c", "id", "--csv", "-C", path]
    )
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["id", "falcon-2024", "jamba-2024"]


# --- the layer-mix figure --------------------------------------------------------------


def _layer_mix_cards(kinds: int):
    """One common pattern (global, four models) and ``kinds`` rare ones, one model each."""
    rare = [
        {"attention.layer_pattern": ["local", "global"], "attention.sliding_window": 16},
        {"attention.layer_pattern": ["local"], "attention.sliding_window": 16},
        {"attention.layer_pattern": ["global", "global-nope"]},
        {"attention.layer_pattern": ["mamba2", "global"], "mixers": {"mamba2": mamba2_dims()}},
        FALCON_H1_LIKE,
        {"attention.layer_pattern": ["local", "global-nope"], "attention.sliding_window": 16},
        {"attention.layer_pattern": ["chunked", "global-nope"], "attention.sliding_window": 16},
        {"attention.layer_pattern": ["chunked", "global"], "attention.sliding_window": 16},
        {"attention.layer_pattern": ["chunked"], "attention.sliding_window": 16},
    ][:kinds]
    cards = [make_card(f"global-{i}", _arch(), year=2024) for i in range(4)]
    cards += [make_card(f"rare-{i}", _arch(c), year=2025) for i, c in enumerate(rare)]
    return trend_rows(catalogue_rows(catalogue(*cards), counts=False))


def test_layer_mix_figure_groups_rare_patterns_beyond_the_palette() -> None:
    from archdb.reports import figures  # matplotlib: imported by the figure tests only

    result = adoption(_layer_mix_cards(9), find_choice("layer-mix"))
    assert len(result.values) == 11  # global, nine rare patterns, any but global
    lines = figures.figure_values(result)
    assert [t.value for t in lines] == ["global", "9 others, < 3 models each", ANY]
    others = lines[1]
    assert others.counts == {2025: 9} and result.share(others, 2025) == pytest.approx(1.0)
    fig = figures.adoption_figure(result)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "9 others, < 3 models each" in legend and "any but global" in legend


def test_layer_mix_figure_keeps_every_value_within_the_palette() -> None:
    from archdb.reports import figures

    result = adoption(_layer_mix_cards(6), find_choice("layer-mix"))
    assert figures.figure_values(result) == list(result.values)  # 8 lines: no grouping


def test_layer_mix_tells_parallel_from_serial_hybrids() -> None:
    rows = {r["id"]: r for r in catalogue_rows(_cards(), counts=False)}
    assert rows["falcon-2024"]["layer_mix"] == "global|mamba2"  # one parallel layer kind
    assert rows["jamba-2024"]["layer_mix"] == "global+mamba2"  # serial layers of two kinds
    assert rows["mamba-2023"]["layer_mix"] == "mamba2"
