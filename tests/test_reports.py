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
from archdb.reports import build, families, provenance, render, verification
from archdb.reports import distributions as dist
from archdb.reports.adoption import (
    ANY,
    CHOICE_KEYS,
    CHOICES,
    UnknownChoiceError,
    adoption,
    consensus,
    find_choice,
    select_trend_rows,
    trend_rows,
)
from archdb.reports.build import PAGES, build_reports, stale_files
from archdb.reports.numeric import numeric_field, numeric_trend
from archdb.reports.weighting import Cutoff, weighted_spread
from archdb.table import catalogue_frame, catalogue_rows
from tests.conftest import FreshBuild, catalogue, make_card, qk_norm, shared_render

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
    assert result.weighting == "family"
    rms = next(t for t in result.values if t.value == "rmsnorm")
    assert result.years == (2019, 2020, 2021, 2022, 2023, 2024)
    # 2021: family rms (one card) against family ln (two cards): one vote each
    assert result.share(rms, 2021) == 0.5
    assert result.share(rms, 2022) == 0.5  # a half is not a majority
    assert result.share(rms, 2023) == 1.0  # the null is not counted as "not rmsnorm"
    assert rms.first_use.date == "2021-06-01" and rms.first_use.models == ("rms-2021",)
    assert rms.majority_year == 2023
    assert rms.consensus_since is None  # never five families known
    ln = next(t for t in result.values if t.value == "layernorm")
    assert ln.majority_year == 2019 and ln.consensus_since is None
    assert result.unknown == ("unknown-2023",)
    assert result.total[2023] == 2 and result.known[2023] == 1
    year = result.year(2021)
    assert year is not None and (year.families, year.cards) == (2, 3)
    assert result.cutoff.date == "2024-06-01" and result.cutoff.is_partial(2024)


def test_card_weighting_counts_every_card() -> None:
    rows = trend_rows(catalogue_rows(_norm_catalogue()))
    result = adoption(rows, find_choice("norm-type"), "card")
    rms = next(t for t in result.values if t.value == "rmsnorm")
    assert result.share(rms, 2021) == pytest.approx(1 / 3)
    share = result.share_of(rms, 2021)
    assert share is not None and (share.n_cards, share.n_families, share.cards) == (3, 2, 1)


def test_consensus_needs_five_families_and_a_lower_bound_above_half() -> None:
    """Six families of 2024 on RMSNorm, one with three sizes; 2023 has four families."""
    cards = catalogue(
        *(make_card(f"fam{i}-1b", RMS, year=2023) for i in range(4)),
        *(make_card(f"fam{i}-1b", RMS, year=2024, family=f"new{i}") for i in range(4, 9)),
        make_card("big-1b", RMS, year=2024),
        make_card("big-7b", RMS, year=2024),
        make_card("big-70b", year=2024),  # LayerNorm
    )
    result = adoption(catalogue_rows(cards), find_choice("norm-type"), cutoff=Cutoff("2024-12-31"))
    rms = next(t for t in result.values if t.value == "rmsnorm")
    share_2023 = result.share_of(rms, 2023)
    assert share_2023 is not None and share_2023.share == 1.0 and not share_2023.consensus
    share = result.share_of(rms, 2024)
    # 5 families wholly, big two thirds: 5.667 of 6 families; by card 7 of 8
    assert share is not None and share.share == pytest.approx((5 + 2 / 3) / 6)
    # Wilson on 6 families: centre 0.77097, half-width 0.22489
    assert share.low == pytest.approx(0.5461, abs=1e-4) and share.consensus
    assert rms.majority_year == 2023 and rms.consensus_since == 2024
    headline = consensus(result)
    assert headline.is_consensus and headline.latest_year == 2024
    by_card = adoption(catalogue_rows(cards), find_choice("norm-type"), "card")
    assert by_card.share(next(t for t in by_card.values if t.value == "rmsnorm"), 2024) == 7 / 8


def test_research_variants_and_window_are_left_out() -> None:
    rows = trend_rows(catalogue_rows(_norm_catalogue()), since=2021, until=2023)
    assert {r["year"] for r in rows} == {2021, 2022, 2023}
    assert all(not r["research_variant"] for r in trend_rows(catalogue_rows(_norm_catalogue())))


def test_any_line_counts_every_on_value_together() -> None:
    cards = catalogue(
        make_card("aa-2024", qk_norm("full", prefix="architecture.attention."), year=2024),
        make_card("bb-2024", qk_norm("per-head", prefix="architecture.attention."), year=2024),
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
        make_card("aa-2024", qk_norm("full", prefix="architecture.attention."), year=2024),
        make_card("bb-2023", {"architecture.attention.qk_norm": "l2"}, year=2023),
    )
    result = adoption(catalogue_rows(cards), find_choice("qk-norm"), cutoff=Cutoff("2024-12-31"))
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


@pytest.mark.parametrize("name", ["no-such-choice", "d_model", "release_date"])
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


def _line_catalogue():
    return catalogue(
        make_card("lm-1b", family="lm", year=2020),
        make_card("lm-2-1b", RMS, family="lm-2", year=2022, lineage="lm-1b"),
        make_card("lm-code-1b", family="lm-code", year=2021, lineage="lm-1b"),
        make_card("lm-2-chat-1b", RMS, family="lm-2-chat", year=2023, lineage="lm-2-1b"),
        make_card("lm-7b", family="lm", year=2020),  # same slug, no link: its own line
        make_card("other-1b", year=2021),
        make_card("toy-1b", research_variant=True, lineage="lm-1b"),
    )


def test_lines_follow_lineage_links_not_slugs() -> None:
    frame = catalogue_frame(_line_catalogue())
    assert families.parents(frame) == {
        "lm-2-1b": "lm-1b",
        "lm-code-1b": "lm-1b",
        "lm-2-chat-1b": "lm-2-1b",
    }  # the research variant is left out
    assert families.lines(frame) == ["lm-1b"]
    # Each card after its parent; siblings by release date.
    assert families.members(frame, "lm-1b") == ["lm-1b", "lm-code-1b", "lm-2-1b", "lm-2-chat-1b"]
    assert families.unlinked(frame) == ["lm-7b", "other-1b"]


def test_line_evolution_compares_each_card_with_its_parent() -> None:
    table = families.evolution(catalogue_frame(_line_catalogue()), "lm-1b")
    assert table["from"].tolist() == ["", "lm-1b", "lm-1b", "lm-2-1b"]
    # lm-2-chat keeps its parent's RMSNorm: no change, though the row above differs.
    assert table["changed"].tolist() == ["", "", "norm", ""]


def test_a_lineage_cycle_is_broken_into_a_tree() -> None:
    frame = catalogue_frame(
        catalogue(
            make_card("aa-1b", lineage="bb-1b"),
            make_card("bb-1b", lineage="aa-1b"),
            make_card("cc-1b", lineage="bb-1b"),
        )
    )
    assert families.parents(frame) == {"bb-1b": "aa-1b", "cc-1b": "bb-1b"}
    assert families.lines(frame) == ["aa-1b"]
    assert families.members(frame, "aa-1b") == ["aa-1b", "bb-1b", "cc-1b"]


@pytest.fixture(scope="module")
def pages_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pages of the lineage and the fidelity catalogues together, rendered once for
    the tests below, which read only the pages' text: no figure is drawn (every figure
    function gives None, as for a catalogue without the data; drawing and saving them is
    most of a render's time, and the determinism test checks them); past the memos,
    which keep whole renders."""
    out = tmp_path_factory.mktemp("pages")
    data = build._compute(catalogue(*_line_catalogue(), *_fidelity_catalogue()))
    with pytest.MonkeyPatch.context() as patch:
        for module in (build.figures, build.mech_page):
            for name in dir(module):
                if name.endswith("_figure") and not name.startswith("_"):
                    patch.setattr(module, name, lambda *args, **kwargs: None)
        build.write_files(build._render(data), out)
    assert not (out / build.FIGURES).is_dir() or not any((out / build.FIGURES).iterdir())
    return out


@pytest.mark.xdist_group("experiments")
def test_families_page_shows_lines_and_the_unlinked_fallback(pages_built: Path) -> None:
    page = (pages_built / "families.md").read_text()
    assert "## lm-1b (`lm-1b`)" in page and page.count("\n## ") == 1
    assert "5 released cards name no lineage" in page
    assert "(their families: gpt-2 (2), lm (1), other (1), palm (1))" in page


# --- values resting only on mirrors -----------------------------------------------------

MIRRORED_SOURCES = [
    {
        "kind": "paper",
        "title": "The paper",
        "url": "https://example.org/paper",
        "locator": "Table 1",
        "supports": ["architecture.d_model", "training", "params_published"],
    },
    {
        "kind": "mirror",
        "title": "A fine-tune's copy of config.json",
        "url": "https://example.org/copy/config.json",
        "locator": "config.json",
        "copies": "https://example.org/official/config.json",
        "supports": ["architecture"],
    },
]


def test_mirror_share_counts_values_whose_only_source_is_a_mirror() -> None:
    mirrored = make_card("mirrored-1b", sources=MIRRORED_SOURCES)
    frame = catalogue_frame(catalogue(make_card("plain-1b"), mirrored))
    values = int(frame.at["plain-1b", "values_sourced"])
    assert frame.at["plain-1b", "values_mirror_only"] == 0
    # Every value of the mirrored card but d_model (the paper states it) rests on the copy.
    assert frame.at["mirrored-1b", "values_mirror_only"] == values - 1
    found = provenance.mirror_share(frame)
    assert (found.values, found.mirror_only, found.cards) == (2 * values, values - 1, 1)
    assert found.top == [("mirrored-1b", values - 1, values)]
    section = provenance.mirror_section(frame)
    assert f"{values - 1} of the catalogue's {2 * values} sourced" in section
    assert f"| mirrored-1b | {values - 1} of {values} |" in section


def test_mirror_section_without_mirrors_names_no_cards() -> None:
    section = provenance.mirror_section(catalogue_frame(catalogue(make_card("plain-1b"))))
    assert "0 of the catalogue's" in section and "|" not in section


# --- fidelity per card --------------------------------------------------------------

GPT2_FUNCTION = {  # every output-only field a GPT-2 card needs recorded
    "architecture.norm.eps": 1e-5,
    "architecture.norm.unit_offset": False,
    "architecture.embedding_multiplier": 1.0,
    "architecture.logit_scale": 1.0,
    "architecture.mlp.gelu_approximation": "tanh",
}


def _fidelity_catalogue():
    """A complete GPT-2 card, one without its epsilon, and a family transformers lacks."""
    lacking = {k: v for k, v in GPT2_FUNCTION.items() if k != "architecture.norm.eps"}
    return catalogue(
        make_card("gpt-2-big", GPT2_FUNCTION),
        make_card("gpt-2-small", lacking),
        make_card("palm-8b"),
    )


def test_card_fidelities_give_each_cards_level_and_reason() -> None:
    found = verification.card_fidelities(_fidelity_catalogue())
    assert [(f.card, f.model_type, f.level) for f in found] == [
        ("gpt-2-big", "gpt2", "logit-exact"),
        ("gpt-2-small", "gpt2", "count-exact"),
        ("palm-8b", None, "not comparable"),
    ]
    assert found[1].why == "gpt2 is logit-exact; card lacks norm.eps"
    assert verification.level_counts(found[1:]) == [
        ("logit-exact", 0),
        ("count-exact", 1),
        ("not comparable", 1),
    ]


def test_fidelity_page_and_index_state_the_levels(pages_built: Path) -> None:
    page = (pages_built / "fidelity.md").read_text()
    assert "| logit-exact | 1 |" in page and "| not comparable | 8 |" in page
    assert "| `gpt-2-small` | gpt2 | count-exact | gpt2 is logit-exact; card lacks norm.eps |" in (
        page
    )
    assert "| `palm-8b` | – | not comparable | no transformers family implements this card |" in (
        page
    )
    index = (pages_built / "README.md").read_text()
    assert "Of 10 cards: 1 logit-exact, 1 count-exact, 8 not comparable." in index
    assert "[fidelity](fidelity.md)" in index


# --- the build -----------------------------------------------------------------------


@pytest.mark.xdist_group("experiments")
def test_build_is_deterministic_and_removes_stale_figures(
    fresh_shipped_build: FreshBuild, shared_folder: Path
) -> None:
    """A build of the shipped catalogue in this process, from a compute and a render of its
    own (memos emptied), over a stale figure it removed, gives the bytes of the session's
    render (``stale_files`` compares them). The second build of the session, in another
    process with another hash seed, is an installed wheel's `archdb report`, checked byte
    for byte against the same render in tests/test_wheel.py. Every page names the
    catalogue content hash it was built from."""
    shipped = load_catalogue()
    fresh = fresh_shipped_build.output
    files = sorted(p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file())
    assert Path("figures/old.svg") not in files
    assert {str(p) for p in files} >= set(PAGES)
    key = build.content_key(shipped)
    for page in PAGES:
        header = (fresh / page).read_text().splitlines()[:2]
        assert header == [render.GENERATED, f"<!-- Built from catalogue content sha256:{key} -->"]
    svg = (fresh / "figures" / "adoption-norm-type.svg").read_text()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg
    adoption_page = (fresh / "adoption.md").read_text()
    for c in CHOICES:  # every figure is linked from its page
        assert f"(figures/adoption-{c.key}.svg)" in adoption_page
    assert "(figures/consensus.svg)" in (fresh / "README.md").read_text()
    shared_render(shared_folder, shipped)  # the fixture's render, read back into the memo
    assert stale_files(shipped, fresh) == []
    claims_page = (fresh / "claims.md").read_bytes()
    (fresh / "claims.md").write_text("edited")
    try:
        assert stale_files(shipped, fresh) == ["claims.md"]
    finally:
        (fresh / "claims.md").write_bytes(claims_page)


def test_the_content_hash_changes_with_any_card() -> None:
    """The hash a page names is the catalogue's content: one changed value changes it."""
    cards = list(_norm_catalogue())
    changes = {"architecture.d_model": 2 * cards[0].architecture.d_model}
    changed = [make_card(cards[0].id, changes, year=cards[0].year), *cards[1:]]
    key = build.content_key(catalogue(*cards))
    assert key == build.content_key(catalogue(*cards)) and len(key) == 64
    assert key != build.content_key(catalogue(*changed))


def test_build_survives_an_empty_catalogue(tmp_path: Path) -> None:
    written = build_reports(catalogue(), tmp_path)
    assert {p.name for p in written} >= set(PAGES)
    assert "not checkable yet" in (tmp_path / "claims.md").read_text()


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
    assert rms["counts"] == {"2022": 1, "2023": 1, "2024": 1}
    # the window only hides years: first use and majority are the whole catalogue's
    assert rms["first_use"]["models"] == ["rms-2021"]
    ln = next(v for v in data[0]["values"] if v["value"] == "layernorm")
    assert ln["first_use"]["date"].startswith("2019") and ln["majority_year"] == 2019
    assert data[0]["weighting"] == "family" and data[0]["cutoff"] == "2024-06-01"
    assert data[0]["partial_year"] == 2024 and data[0]["years"]["2024"]["partial"]
    assert data[0]["years"]["2023"] == {
        "known": 1,
        "models": 2,
        "families": 2,
        "cards": 2,
        "families_known": 1,
        "cards_known": 1,
        "too_few_known": False,
        "partial": False,
    }
    low, high = rms["intervals"]["2023"]
    assert low == pytest.approx(0.2065, abs=1e-4) and high == 1.0  # Wilson, 1 of 1 family
    assert data[0]["unknown"] == ["unknown-2023"]
    table = runner.invoke(app, ["trends", "norm.type", "--since", "2022", "-C", str(path)])
    lines = [line.strip() for line in table.output.splitlines()]
    layernorm = next(line for line in lines if line.startswith("layernorm"))
    assert layernorm.split()[-3:] == ["2019", "2019", "–"]  # first, >50%, since
    assert "2021" not in table.output.splitlines()[1]  # the header shows 2022 on only
    assert "1/2" in table.output  # 2023: one known value of two models
    assert "2024* is partial: the catalogue runs to 2024-06-01" in table.output
    assert "family-weighted" in table.output
    assert "unknown: 1 card\n" in table.output  # one card, said as one
    for what in ("norm.type", "d_ff_ratio"):  # a window without the partial year: no footnote
        before = runner.invoke(app, ["trends", what, "--until", "2023", "-C", str(path)])
        assert before.exit_code == 0 and "family-weighted" in before.output
        assert "is partial" not in before.output
    by_card = runner.invoke(
        app, ["trends", "norm-type", "--weight", "card", "--json", "-C", str(path)]
    )
    rms_cards = next(v for v in json.loads(by_card.output)[0]["values"] if v["value"] == "rmsnorm")
    assert rms_cards["shares"]["2021"] == pytest.approx(1 / 3, abs=1e-4)
    bad = runner.invoke(app, ["trends", "norm-type", "--weight", "size", "-C", str(path)])
    assert bad.exit_code == 2 and "unknown weighting 'size'" in bad.output


def test_window_hides_years_but_keeps_the_facts() -> None:
    whole = _norm_adoption()
    shown = whole.window(since=2022)
    assert shown.years == (2022, 2023, 2024)
    assert shown.values == whole.values  # same first use, majority and consensus
    assert shown.window(until=2022).years == (2022,)
    assert shown.window(until=2022).unknown == ()  # the 2023 null is not shown
    assert whole.window(since=2030).years == ()


def test_a_value_known_for_few_families_has_no_share() -> None:
    """Z-loss as the catalogue has it: 100% of the known, but 1 known family of 4."""
    zl = {"training.z_loss": 1e-4}
    cards = catalogue(
        make_card("zl-2024", zl, year=2024),
        *(make_card(f"quiet-{i}-2024", year=2024) for i in range(3)),
        make_card("zl-2025a", zl, year=2025),
        make_card("zl-2025b", zl, year=2025),
        make_card("quiet-2025", year=2025),
    )
    full_year = Cutoff("2025-12-31")
    result = adoption(catalogue_rows(cards), find_choice("z-loss"), cutoff=full_year)
    (used,) = result.values
    assert result.share(used, 2024) is None and result.year(2024).too_few_known
    assert result.known[2024] == 1
    assert not result.holds_majority(used, 2024)
    assert result.holds_majority(used, 2025)  # 1 of 2 families known: enough
    assert used.majority_year == 2025 and used.consensus_since is None  # two families
    headline = consensus(result)
    assert not headline.is_consensus and headline.latest_count == 2
    rows_2024 = [r for r in catalogue_rows(cards) if r["year"] == 2024]
    only_2024 = consensus(adoption(rows_2024, find_choice("z-loss"), cutoff=full_year))
    assert only_2024.trend.value == "z-loss" and only_2024.latest_share is None
    assert only_2024.too_few_known and only_2024.trend.majority_year is None
    table = render.consensus_table([headline, only_2024], full_year)
    lines = table.splitlines()
    assert "| n families · n cards (known / all) |" in lines[0]
    assert (
        "*no consensus* (most common: z-loss) | 100% [21–100] in 2025 | 1 / 2 · 2 / 3 |"
        in (lines[2])
    )
    assert "*too few known* (1 of 4 families) | – in 2024 | 1 / 4 · 1 / 4 |" in lines[3]


# --- numeric trends ------------------------------------------------------------------


def test_equal_weights_match_pandas_quantiles() -> None:
    import pandas as pd

    for values in ([3.0], [1.0, 2.0], [4.0, 1.0, 8 / 3, 3.5, 2.0], list(range(11))):
        got = weighted_spread([(float(v), 1.0) for v in values])
        series = pd.Series(values, dtype=float)
        expected = [series.min(), series.quantile(0.25), series.median()]
        expected += [series.quantile(0.75), series.max()]
        assert [got.low, got.q1, got.median, got.q3, got.high] == pytest.approx(expected)
        assert got.n == len(values)
    assert weighted_spread([]) is None


def test_numeric_trend_by_year_with_unknowns_and_a_window() -> None:
    cards = catalogue(
        make_card("aa-2022", {"architecture.mlp.d_ff": 4096}, year=2022),
        make_card("bb-2022", {"architecture.mlp.d_ff": 8192}, year=2022),
        make_card("cc-2023", {"architecture.mlp.d_ff": 2048}, year=2023),
        make_card("dd-2023", {"architecture.mlp.d_ff": None}, year=2023),
        make_card("ee-2024", {"architecture.mlp.d_ff": 4096}, research_variant=True, year=2024),
    )
    rows = select_trend_rows(cards)
    trend = numeric_trend(rows, numeric_field("d_ff_ratio"))
    assert trend.years == (2022, 2023)  # the research variant is left out
    d_model = cards.get("aa-2022").architecture.d_model
    assert trend.by_year[2022].median == pytest.approx((4096 + 8192) / 2 / d_model)
    assert trend.known(2023) == 1 and trend.total[2023] == 2
    assert trend.unknown == ("dd-2023",)
    assert trend.overall.n == 3
    assert numeric_trend(rows, numeric_field("d_ff"), since=2023).years == (2023,)
    assert numeric_field("norm.type") is None and numeric_field("year") is None


def test_trends_numeric_choice_on_the_shipped_catalogue() -> None:
    """`trends d_ff_ratio --where activation=swiglu --weight card`: the figures pandas
    gives, dense models and MoE experts apart."""
    frame = load_catalogue().where("activation=swiglu").frame()
    frame = frame[~frame["research_variant"].fillna(False).astype(bool)]
    frame = frame[frame["architecture.kind"] != "encoder-only"]
    args = ["trends", "d_ff_ratio", "-w", "activation=swiglu", "--weight", "card"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["weighting"] == "card"
    assert [g["group"] for g in data["groups"]] == ["dense", "MoE, one expert"]
    parts = (frame[~frame["moe"]], frame[frame["moe"]])
    for group, part in zip(data["groups"], parts, strict=True):
        for year, values in part.groupby("year")["d_ff_ratio"]:
            values = values.dropna().astype(float)
            got = group["years"][str(year)]
            assert got["known"] == len(values) and got["models"] == len(part[part["year"] == year])
            assert got["median"] == pytest.approx(values.median())
            assert got["q1"] == pytest.approx(values.quantile(0.25))
            assert got["q3"] == pytest.approx(values.quantile(0.75))
    table = runner.invoke(app, args)
    assert table.exit_code == 0
    assert all(
        w in table.output
        for w in ("median", "Q1", "Q3", "2024", "(MoE, one expert)", "card-weighted")
    )
    dense = data["groups"][0]
    overall = dense["overall"]
    span = f"{min(dense['years'])}–{max(dense['years'])}"  # the row over every year shown
    (last, *_) = [line for line in table.output.splitlines() if line.strip().startswith(span)]
    assert last.split()[1] == f"{overall['n']}/{overall['n']}"
    assert f"{overall['median']:.3g}" in last
    family = json.loads(runner.invoke(app, ["trends", "d_ff_ratio", "--json"]).output)
    assert family["weighting"] == "family" and "each family" in family["weighting_rule"]


def test_trends_all_choices(tmp_path: Path) -> None:
    result = runner.invoke(app, ["trends", "--json", "--catalogue", str(_write(tmp_path))])
    assert result.exit_code == 0
    assert [d["choice"] for d in json.loads(result.output)] == [c.key for c in CHOICES]


@pytest.mark.parametrize(
    "args",
    [
        ["trends", "no-such-choice"],
        ["trends", "release_date"],
        ["trends", "d_ff_ratio", "--where", "no_such_field=1"],
        ["trends", "norm-type", "-w", "norm"],
        ["trends", "--since", "2024", "--until", "2020"],
    ],
)
def test_trends_usage_errors(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


@pytest.mark.xdist_group("experiments")
def test_report_writes_and_checks(shared_folder: Path, tmp_path: Path) -> None:
    """On the shipped catalogue, whose render this worker has (``shared_render``)."""
    path, out = DEFAULT_PATH, tmp_path / "out"
    shared_render(shared_folder, load_catalogue(path))
    result = runner.invoke(app, ["report", "--catalogue", str(path), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "README.md").is_file()
    check = ["report", "--check", "--catalogue", str(path), "-o", str(out)]
    assert runner.invoke(app, check).exit_code == 0
    (out / "adoption.md").write_text("edited")
    edited = runner.invoke(app, check)
    assert edited.exit_code == 1 and "adoption.md" in edited.output


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
    doc = " ".join(runner.invoke(app, ["trends", "--help"]).output.split())
    assert all(key in doc for key in CHOICE_KEYS)
