"""The survey's counting at the command line and in the API: weighting, kinds, size bands,
dense vs MoE, and the rough edges of list, compare and flops (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from archdb_cli.main import app
from archdb_cli.query import format_value
from typer.testing import CliRunner

import archdb
from archdb.columns import number_text, size_band
from archdb.schema import Card
from tests.conftest import make_card, moe_block

runner = CliRunner()
RMS = {"architecture.norm.type": "rmsnorm", "architecture.norm.affine": "scale"}
D_MODEL = 1024  # the synthetic cards' width


def _moe(d_ff: int) -> dict:
    return {**RMS, "architecture.mlp.moe": moe_block(), "architecture.mlp.d_ff": d_ff}


def _survey() -> list[Card]:
    """2024: family "big" in four sizes (d_ff 2048, 2048, 2048, 8192: three
    layernorm, one rmsnorm), families "one" and "two" (d_ff 4096, rmsnorm), a MoE family
    (expert d_ff 512) and an encoder-only BERT; 2025: one card, so 2024 is complete."""
    return [
        make_card("big-1b", {"architecture.mlp.d_ff": 2048}, year=2024),
        make_card("big-2b", {"architecture.mlp.d_ff": 2048}, year=2024),
        make_card("big-3b", {"architecture.mlp.d_ff": 2048}, year=2024),
        make_card("big-4b", {**RMS, "architecture.mlp.d_ff": 8192}, year=2024),
        make_card("one-1b", RMS, year=2024),
        make_card("two-1b", RMS, year=2024),
        make_card("mix-1b", _moe(512), year=2024),
        make_card(
            "bert-base",
            {
                "architecture.kind": "encoder-only",
                "architecture.encoder": {"token_types": 2, "head_transform": None, "pooler": False},
            },
            year=2024,
        ),
        make_card("late-1b", RMS, year=2025),
    ]


@pytest.fixture
def survey(tmp_path: Path) -> Path:
    path = tmp_path / "models.yaml"
    ordered = sorted(_survey(), key=lambda c: c.id)
    cards = [c.model_dump(mode="json", exclude_none=False) for c in ordered]
    path.write_text(yaml.safe_dump(cards, sort_keys=False, allow_unicode=True))
    return path


def _json(*args: str) -> object:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


# --- weighting and kinds -------------------------------------------------------------


def test_trends_counts_families_by_default_and_cards_on_request(survey: Path) -> None:
    (family,) = _json("trends", "norm-type", "-C", str(survey))
    (card,) = _json("trends", "norm-type", "--weight", "card", "-C", str(survey))
    assert family["weighting"] == "family" and card["weighting"] == "card"
    rms_family = next(v for v in family["values"] if v["value"] == "rmsnorm")
    rms_card = next(v for v in card["values"] if v["value"] == "rmsnorm")
    # families: big 1/4, one, two, mix: 3.25 of 4; cards: 4 of 7 (BERT not counted)
    assert rms_family["shares"]["2024"] == pytest.approx(3.25 / 4, abs=1e-4)
    assert rms_card["shares"]["2024"] == pytest.approx(4 / 7, abs=1e-4)
    year = family["years"]["2024"]
    assert (year["families"], year["cards"], year["partial"]) == (4, 7, False)
    assert family["partial_year"] == 2025 and family["cutoff"] == "2025-06-01"


def test_trends_leave_encoder_only_models_out_unless_asked(survey: Path) -> None:
    (default,) = _json("trends", "kind", "-C", str(survey))
    assert {v["value"] for v in default["values"]} == {"decoder-only"}
    (every,) = _json("trends", "kind", "--kind", "all", "-C", str(survey))
    encoders = next(v for v in every["values"] if v["value"] == "encoder-only")
    assert encoders["shares"]["2024"] == pytest.approx(1 / 5, abs=1e-4)  # 1 of 5 families
    (only,) = _json("trends", "kind", "--kind", "encoder-only", "-C", str(survey))
    assert [v["value"] for v in only["values"]] == ["encoder-only"]
    bad = runner.invoke(app, ["trends", "kind", "--kind", "decoder", "-C", str(survey)])
    assert bad.exit_code == 2 and "unknown kind 'decoder'" in bad.output


def test_the_api_gives_what_trends_json_prints(survey: Path) -> None:
    (cli,) = _json("trends", "moe", "--weight", "card", "-C", str(survey))
    assert archdb.trends("moe", weight="card", catalogue=survey) == cli
    found = archdb.trends("moe", catalogue=survey)
    moe = next(v for v in found["values"] if v["value"] == "moe")
    assert found["weighting"] == "family" and moe["shares"]["2024"] == 0.25
    with pytest.raises(archdb.api.UsageError, match="unknown weighting"):
        archdb.trends("moe", weight="model", catalogue=survey)


# --- numbers: dense vs MoE, size bands ---------------------------------------------


def test_d_ff_ratio_keeps_dense_layers_and_experts_apart(survey: Path) -> None:
    found = _json("trends", "d_ff_ratio", "-C", str(survey))
    dense, moe = found["groups"]
    assert (dense["group"], moe["group"]) == ("dense", "MoE, one expert")
    # dense 2024, family-weighted: big's four sizes weigh 1/4 each (2, 2, 2, 8), one and
    # two weigh 1 (4 each): the weighted median sits among the 4s
    assert dense["years"]["2024"]["median"] == pytest.approx(4.0)
    assert dense["years"]["2024"]["families_known"] == 3
    assert moe["years"]["2024"]["median"] == pytest.approx(512 / D_MODEL)
    by_card = _json("trends", "d_ff_ratio", "--weight", "card", "-C", str(survey))
    # by card: 2, 2, 2, 4, 4, 8: big's sizes pull the median down to (2 + 4) / 2
    assert by_card["groups"][0]["years"]["2024"]["median"] == pytest.approx(3.0)


def test_numbers_split_by_size_band(survey: Path) -> None:
    found = _json("trends", "vocab_size", "--band", "-C", str(survey))
    decoders = [c for c in _survey() if c.architecture.kind != "encoder-only"]
    expected: dict[str, int] = {}
    for card in decoders:
        band = size_band(archdb.params(card).total)
        expected[band] = expected.get(band, 0) + 1
    assert {g["group"]: g["overall"]["n"] for g in found["groups"]} == expected
    bands = set(expected)
    table = runner.invoke(app, ["trends", "vocab_size", "--band", "-C", str(survey)])
    assert table.exit_code == 0 and all(f"({band})" in table.output for band in bands)
    refused = runner.invoke(app, ["trends", "norm-type", "--band", "-C", str(survey)])
    assert refused.exit_code == 2 and "--band and --mlp split numbers" in refused.output


# --- list, compare, flops ------------------------------------------------------------


def test_list_limit_says_how_many_match(survey: Path) -> None:
    result = runner.invoke(app, ["list", "-w", "norm=rmsnorm", "-n", "2", "-C", str(survey)])
    assert result.exit_code == 0
    assert result.output.splitlines()[0] == "2 of 5 matching (9 cards)"
    whole = runner.invoke(app, ["list", "-w", "norm=rmsnorm", "-C", str(survey)])
    assert whole.output.splitlines()[0] == "5 of 9 cards"


def test_list_reads_a_boolean_as_trends_spells_it(survey: Path) -> None:
    def ids(*where: str) -> list[str]:
        args = [a for w in where for a in ("-w", w)]
        rows = _json("list", *args, "-c", "id,moe", "-C", str(survey))
        return [r["id"] for r in rows]

    assert ids("moe=dense") == ids("moe=false") and "mix-1b" not in ids("moe=dense")
    assert ids("moe=moe") == ["mix-1b"] == ids("moe=true")
    shown = runner.invoke(app, ["list", "-w", "moe=moe", "-c", "id,moe", "-C", str(survey)])
    assert "mix-1b   moe" in shown.output  # the value reads as trends prints it
    bad = runner.invoke(app, ["list", "-w", "moe=sparse", "-C", str(survey)])
    assert bad.exit_code == 2 and "true or false (or moe and dense)" in bad.output


def test_list_computes_active_ratio_and_kv_bytes_at_a_context(survey: Path) -> None:
    rows = _json("list", "-c", "id,active_ratio,kv_bytes", "--context", "1024", "-C", str(survey))
    by_id = {r["id"]: r for r in rows}
    mix = archdb.params(next(c for c in _survey() if c.id == "mix-1b"))
    assert by_id["mix-1b"]["active_ratio"] == pytest.approx(mix.active / mix.total)
    assert by_id["one-1b"]["active_ratio"] == 1.0
    card = next(c for c in _survey() if c.id == "one-1b")
    assert by_id["one-1b"]["kv_bytes"] == archdb.cache_bytes(card, context=1024).per_token
    table = runner.invoke(
        app, ["list", "-c", "id,kv_bytes", "--context", "32768", "-C", str(survey)]
    )
    assert "KV cache per token at 32,768 tokens, 2 bytes per element" in table.output


def test_compare_prints_no_meaningless_ratio(survey: Path) -> None:
    found = _json("compare", "one-1b", "mix-1b", "late-1b", "--context", "512", "-C", str(survey))
    rows = {r["field"]: r for r in found["rows"]}
    assert found["kv_cache_context"] == 512
    assert rows["year"]["ratios"] == [None, None, None]
    assert rows["values_sourced"]["ratios"] == [None, None, None]
    assert rows["d_ff_ratio"]["ratios"][1] is None  # an expert's width against a dense one
    sizes = {c.id: archdb.params(c).total for c in _survey() if c.id in ("one-1b", "mix-1b")}
    assert rows["params_exact"]["ratios"][1] == pytest.approx(sizes["mix-1b"] / sizes["one-1b"])
    text = runner.invoke(
        app, ["compare", "one-1b", "mix-1b", "--context", "512", "-C", str(survey)]
    )
    assert "KV cache per token at 512 tokens" in text.output
    d_ff_line = next(
        line for line in text.output.splitlines() if line.strip().startswith("d_ff_ratio")
    )
    assert "×" not in d_ff_line


def test_flops_counts_the_kv_cache_at_the_sequence_length(survey: Path) -> None:
    found = _json("flops", "one-1b", "--seq-len", "512", "-C", str(survey))
    assert found["kv_seq_len"] == 512
    assert found["kv_cache_bytes"] == found["kv_cache_bytes_per_token"] * 512
    stated = _json("flops", "one-1b", "--seq-len", "512", "--context", "2048", "-C", str(survey))
    assert stated["kv_seq_len"] == 2048


@pytest.mark.parametrize(
    ("value", "column", "text"),
    [
        (4096, "d_model", "4096"),
        (11008, "mlp.d_ff", "11,008"),
        (2.6875, "d_ff_ratio", "2.69"),
        (50291.5, "vocab_size", "50,292"),
        (2024, "year", "2024"),
        (524288.0, "kv_cache_bytes_per_token", "512 KiB"),
        (14301331456.0, "flops_per_token", "14.3B"),
        (True, "moe", "moe"),
        (False, "gated", "non-gated"),
        (True, "open_weights", "yes"),
    ],
)
def test_one_number_format(value: object, column: str, text: str) -> None:
    assert format_value(value, column) == text


def test_report_tables_and_cli_agree_on_numbers() -> None:
    from archdb.reports.render import fmt

    for value in (4096, 11008, 256000, 2.6875, 1234.5, 0.000122):
        assert fmt(value) == number_text(value)
