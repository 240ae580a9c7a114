"""Reports: adoption counts, distributions, lineages, deterministic build, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from archdb_cli.main import app
from typer.testing import CliRunner

from archdb.catalogue import DEFAULT_PATH, load_catalogue
from archdb.reports import distributions as dist
from archdb.reports import families
from archdb.reports.adoption import (
    ANY,
    CHOICE_KEYS,
    CHOICES,
    UnknownChoiceError,
    adoption,
    consensus,
    find_choice,
    trend_rows,
)
from archdb.reports.build import PAGES, build_reports, stale_files
from archdb.table import catalogue_frame, catalogue_rows
from tests.conftest import catalogue, make_card

REPO = DEFAULT_PATH.parent.parent
RMS = {"architecture.norm.type": "rmsnorm", "architecture.norm.affine": "scale"}


def _norm_catalogue():
    """LayerNorm until 2021; RMSNorm half of 2022 and all of 2023-2024; a 2023 null."""
    cards = [
        make_card("ln-2019", year=2019),
        make_card("ln-2020", year=2020),
        make_card("rms-2021", RMS, year=2021),
        make_card("ln-2021", year=2021),
        make_card("ln-2021b", year=2021),
        make_card("rms-2022", RMS, year=2022),
        make_card("ln-2022", year=2022),
        make_card("rms-2023", RMS, year=2023),
        make_card("unknown-2023", {"architecture.norm.type": None}, year=2023),
        make_card("rms-2024", RMS, year=2024),
        make_card("research-2024", research_variant=True, year=2024),
    ]
    return catalogue(*cards)


def _norm_adoption():
    rows = trend_rows(catalogue_rows(_norm_catalogue()))
    return adoption(rows, find_choice("norm-type"))


# --- adoption ------------------------------------------------------------------------


def test_adoption_shares_first_use_and_majority() -> None:
    result = _norm_adoption()
    rms = next(t for t in result.values if t.value == "rmsnorm")
    assert result.years == (2019, 2020, 2021, 2022, 2023, 2024)
    assert result.share(rms, 2021) == pytest.approx(1 / 3)
    assert result.share(rms, 2022) == 0.5  # a half is not a majority
    assert result.share(rms, 2023) == 1.0  # the null is not counted as "not rmsnorm"
    assert rms.first_use.date == "2021-06-01" and rms.first_use.models == ("rms-2021",)
    assert rms.majority_year == 2023
    assert rms.consensus_since == 2023
    ln = next(t for t in result.values if t.value == "layernorm")
    assert ln.majority_year == 2019 and ln.consensus_since is None
    assert result.unknown == ("unknown-2023",)
    assert result.total[2023] == 2 and result.known[2023] == 1


def test_research_variants_and_window_are_left_out() -> None:
    rows = trend_rows(catalogue_rows(_norm_catalogue()), since=2021, until=2023)
    assert {r["year"] for r in rows} == {2021, 2022, 2023}
    assert all(not r["research_variant"] for r in trend_rows(catalogue_rows(_norm_catalogue())))


def test_any_line_counts_every_on_value_together() -> None:
    cards = catalogue(
        make_card("aa-2024", {"architecture.attention.qk_norm": "full"}, year=2024),
        make_card("bb-2024", {"architecture.attention.qk_norm": "per-head"}, year=2024),
        make_card("cc-2024", year=2024),
    )
    result = adoption(catalogue_rows(cards), find_choice("qk-norm"))
    any_line = result.values[-1]
    assert any_line.value == ANY
    assert result.share(any_line, 2024) == pytest.approx(2 / 3)
    headline = consensus(result)
    assert headline.trend is any_line  # QK norm of some kind is the 2024 majority


def test_consensus_prefers_a_value_over_an_any_that_repeats_it() -> None:
    cards = catalogue(
        make_card("aa-2024", {"architecture.attention.qk_norm": "full"}, year=2024),
        make_card("bb-2023", {"architecture.attention.qk_norm": "l2"}, year=2023),
    )
    result = adoption(catalogue_rows(cards), find_choice("qk-norm"))
    assert consensus(result).trend.value == "full"


def test_adoption_of_no_rows_is_empty() -> None:
    for c in CHOICES:
        result = adoption([], c)
        assert result.years == () and result.values == ()
        assert consensus(result).trend is None


@pytest.mark.parametrize(
    ("name", "column"),
    [
        ("norm-type", "architecture.norm.type"),
        ("norm.type", "architecture.norm.type"),
        ("architecture.norm.type", "architecture.norm.type"),
        ("norm.affine", "architecture.norm.affine"),
        ("attention", "attention_family"),
    ],
)
def test_find_find_choice_or_field(name: str, column: str) -> None:
    assert find_choice(name).column == column


@pytest.mark.parametrize("name", ["no-such-choice", "d_model"])
def test_find_choice_refuses_unknown_and_numeric(name: str) -> None:
    with pytest.raises(UnknownChoiceError):
        find_choice(name)


# --- distributions and lineages ------------------------------------------------------


def _ratio_catalogue():
    plain = [make_card(f"plain-{i}b", {"architecture.mlp.d_ff": 4096}) for i in range(1, 6)]
    wide = make_card("wide-1b", {"architecture.mlp.d_ff": 65536})  # 64x, like T5 11B
    glu = [
        make_card(
            f"glu-{i}b",
            {"architecture.mlp.activation": "swiglu", "architecture.mlp.d_ff": 2730 + i},
        )
        for i in range(1, 5)
    ]
    return catalogue(*plain, wide, *glu)


def test_outliers_are_named_within_their_group() -> None:
    frame = catalogue_frame(_ratio_catalogue())
    group = dist.mlp_group(frame)
    found = dist.outliers(frame, "d_ff_ratio", group)
    assert list(found["id"]) == ["wide-1b"]
    assert found.loc[0, "group"] == "non-gated" and found.loc[0, "value"] == 64
    stats = dist.stats(frame, "d_ff_ratio", group).set_index("group")
    assert stats.loc["non-gated", "median"] == 4.0
    assert stats.loc["gated", "n"] == 4


def test_small_groups_have_no_outliers() -> None:
    frame = catalogue_frame(
        catalogue(make_card("aa-1b"), make_card("bb-1b", {"architecture.mlp.d_ff": 65536}))
    )
    assert dist.outliers(frame, "d_ff_ratio").empty


def test_head_ratio_exceptions() -> None:
    wide_heads = make_card("t5ish-11b", {"architecture.attention.head_dim": 2048})
    frame = catalogue_frame(catalogue(make_card("aa-1b"), wide_heads))
    off = dist.exceptions(frame, "head_ratio", 1.0)
    assert list(off.index) == ["t5ish-11b"] and off.iloc[0]["value"] == 16


def test_lineage_evolution_lists_what_changed() -> None:
    cat = catalogue(
        make_card("lm-1b", family="lm", year=2020),
        make_card("lm-7b", family="lm", year=2020, params_published=7_000_000_000),
        make_card("lm-2-7b", RMS, family="lm-2", year=2022),
        make_card("other-1b", year=2021),
    )
    frame = catalogue_frame(cat)
    assert families.lineages(frame) == ["lm"]
    table = families.evolution(frame, "lm")
    assert list(table["model"]) == ["lm-7b", "lm-2-7b"]  # the bigger size leads its family
    assert table["changed"].tolist() == ["", "norm"]


# --- the build -----------------------------------------------------------------------


@pytest.mark.xdist_group("experiments")
def test_build_is_deterministic_and_removes_stale_figures(tmp_path: Path) -> None:
    cat = _norm_catalogue()
    first, second = tmp_path / "a", tmp_path / "b"
    build_reports(cat, first)
    (second / "figures").mkdir(parents=True)
    (second / "figures" / "old.svg").write_text("stale")
    build_reports(cat, second)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel
    assert {str(p) for p in files} >= set(PAGES)
    svg = (first / "figures" / "adoption-norm-type.svg").read_text()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg
    adoption_page = (first / "adoption.md").read_text()
    for c in CHOICES:  # every figure is linked from its page
        assert f"(figures/adoption-{c.key}.svg)" in adoption_page
    assert "(figures/consensus.svg)" in (first / "README.md").read_text()
    assert stale_files(cat, first) == []
    (first / "claims.md").write_text("edited")
    assert stale_files(cat, first) == ["claims.md"]


def test_build_survives_an_empty_catalogue(tmp_path: Path) -> None:
    written = build_reports(catalogue(), tmp_path)
    assert {p.name for p in written} >= set(PAGES)
    assert "not checkable yet" in (tmp_path / "claims.md").read_text()


@pytest.mark.xdist_group("experiments")
def test_committed_reports_match_the_catalogue() -> None:
    """reports/ is generated: regenerate it with `archdb report` after editing the data."""
    stale = stale_files(load_catalogue(), REPO / "reports")
    assert not stale, f"reports/ is stale ({', '.join(stale)}): run `archdb report`"


# --- the CLI -------------------------------------------------------------------------

runner = CliRunner()


def _write(tmp_path: Path) -> Path:
    """The synthetic catalogue as a YAML file the CLI can read."""
    import yaml

    cards = [c.model_dump(mode="json", exclude_none=False) for c in _norm_catalogue()]
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(cards, sort_keys=False, allow_unicode=True))
    return path


def test_trends_table_and_json(tmp_path: Path) -> None:
    path = _write(tmp_path)
    result = runner.invoke(app, ["trends", "norm.type", "--catalogue", str(path)])
    assert result.exit_code == 0, result.output
    assert "rmsnorm" in result.output and "2023" in result.output
    result = runner.invoke(
        app, ["trends", "norm-type", "--since", "2022", "--json", "--catalogue", str(path)]
    )
    data = json.loads(result.output)
    assert data[0]["choice"] == "norm-type"
    rms = next(v for v in data[0]["values"] if v["value"] == "rmsnorm")
    assert rms["shares"] == {"2022": 0.5, "2023": 1.0, "2024": 1.0}
    assert rms["first_use"]["models"] == ["rms-2022"]  # the window starts in 2022


def test_trends_all_choices(tmp_path: Path) -> None:
    result = runner.invoke(app, ["trends", "--json", "--catalogue", str(_write(tmp_path))])
    assert result.exit_code == 0
    assert [d["choice"] for d in json.loads(result.output)] == [c.key for c in CHOICES]


@pytest.mark.parametrize(
    "args",
    [
        ["trends", "no-such-choice"],
        ["trends", "d_model"],
        ["trends", "--since", "2024", "--until", "2020"],
    ],
)
def test_trends_usage_errors(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


@pytest.mark.xdist_group("experiments")
def test_report_writes_and_checks(tmp_path: Path) -> None:
    path, out = _write(tmp_path), tmp_path / "out"
    result = runner.invoke(app, ["report", "--catalogue", str(path), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "README.md").is_file()
    (out / "adoption.md").write_text("edited")
    check = runner.invoke(app, ["report", "--check", "--catalogue", str(path), "-o", str(out)])
    assert check.exit_code == 1 and "adoption.md" in check.output


def test_trends_imports_neither_pandas_nor_matplotlib() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from archdb_cli.main import app\n"
        "result = CliRunner().invoke(app, ['trends', 'norm-type'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in ('pandas', 'matplotlib', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


def test_trends_help_lists_every_choice() -> None:
    from archdb_cli.report import trends

    doc = " ".join((trends.__doc__ or "").split())
    assert all(key in doc for key in CHOICE_KEYS)
