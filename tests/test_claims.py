"""The claims check on small synthetic catalogues, where the test decides the verdict."""

from __future__ import annotations

import ast
import datetime as dt
import inspect
from pathlib import Path
from typing import Any

import pytest

from archdb.reports import claims, distributions
from archdb.reports.claims import (
    CLAIMS,
    ClaimResult,
    Verdict,
    check_claims,
    combine,
    named,
)
from archdb.schema import Card
from archdb.table import catalogue_frame
from tests.conftest import catalogue, make_card, qk_norm, shipped_catalogue

RMS = {"architecture.norm.type": "rmsnorm", "architecture.norm.affine": "scale"}
MODERN = {
    **RMS,
    "architecture.bias": {"qkv": False, "attn_out": False, "mlp": False},
    "architecture.mlp.activation": "swiglu",
    "architecture.mlp.d_ff": 2752,
    "architecture.position": {"type": "rope", "rope_theta": 10000.0},
    "architecture.attention.n_kv_heads": 2,
    "architecture.tied_embeddings": False,
}


def modern(card_id: str, changes: dict[str, Any] | None = None, **fields: Any) -> Card:
    """A Llama-like card of 2024 (pre RMSNorm, SwiGLU at ~8/3, RoPE, GQA, no bias)."""
    fields.setdefault("year", 2024)
    return make_card(card_id, {**MODERN, **(changes or {})}, **fields)


def check(key: str, *cards: Card) -> ClaimResult:
    return claims.check(key, catalogue_frame(catalogue(*cards)))


def recent_crowd(n: int = 4) -> list[Card]:
    return [modern(f"crowd-{i}-7b", family=f"crowd-{i}") for i in range(n)]


# --- the machinery -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "verdict"),
    [
        ([True, True], Verdict.HOLDS),
        ([True, None], Verdict.HOLDS),
        ([False, False], Verdict.CONTRADICTED),
        ([True, False, None], Verdict.PARTLY),
        ([None, None], Verdict.NOT_CHECKABLE),
        ([], Verdict.NOT_CHECKABLE),
    ],
)
def test_combine(parts: list[bool | None], verdict: Verdict) -> None:
    assert combine(parts) is verdict


def test_lecture_names_match_cards() -> None:
    frame = catalogue_frame(
        catalogue(
            make_card("command-r-35b", family="command-r"),
            make_card("command-r-plus-104b", family="command-r-plus"),
            make_card("gemma-2-9b", family="gemma-2"),
            make_card("gemma-2-27b", family="gemma-2", params_published=27_000_000_000),
            make_card("gemma-3-4b", family="gemma-3"),
            make_card("llama-7b", family="llama"),
            make_card("llama-2-70b", family="llama-2"),
            make_card("t5-11b", family="t5"),
            make_card("t5-v1.1-xxl", family="t5-v1.1"),
            make_card("nemotron-4-340b", family="nemotron-4", name="Nemotron-4 340B"),
        )
    )

    def ids(name: str, flagship: bool = False) -> list[str]:
        return sorted(named(frame, name, flagship).index)

    assert ids("Command R") == ["command-r-35b"]
    assert ids("Command R+") == ["command-r-plus-104b"]
    assert ids("Gemma 2") == ["gemma-2-27b", "gemma-2-9b"]
    assert ids("Gemma 2", flagship=True) == ["gemma-2-27b"]
    assert ids("Llama") == ["llama-2-70b", "llama-7b"]  # the whole lineage
    assert ids("T5 v1.1") == ["t5-v1.1-xxl"]
    assert ids("T5 11B") == ["t5-11b"]
    assert ids("Nemotron-4 340B") == ["nemotron-4-340b"]
    assert ids("Grok") == []


def test_every_claim_has_a_check_in_order() -> None:
    assert len(CLAIMS) == 20
    assert list(CLAIMS)[:3] == ["pre-norm", "double-norm", "rmsnorm"]
    assert [k for k, c in CLAIMS.items() if c.measured] == [
        "norm-runtime",
        "norm-placement-gradients",
        "fast-weights",
    ]
    results = check_claims(catalogue_frame(catalogue(*recent_crowd())))
    assert [r.key for r in results] == list(CLAIMS)
    assert [r.number for r in results] == list(range(1, 21))  # the place on the page
    assert [r.claim for r in results] == [c.text for c in CLAIMS.values()]


def test_a_claim_key_is_registered_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        claims.claim("pre-norm", "again", thresholds={})(lambda frame: None)
    assert CLAIMS["pre-norm"].text.startswith("Pre-norm is nearly universal")


def test_registered_names_are_the_models_each_check_looks_up() -> None:
    """The deciding models declared with each claim are exactly those its check names."""
    frame = catalogue_frame(shipped_catalogue())
    for key, spec in CLAIMS.items():
        assert spec.judge(frame).looked_up == spec.names, key


def test_the_claims_frame_keeps_every_column_the_claims_name() -> None:
    """The claims work on ``CLAIM_COLUMNS`` alone: a column named in their code (or in the
    distributions helpers they call) and missing there would fail only on the catalogue
    that reaches that line."""
    columns = set(catalogue_frame(catalogue()).columns)
    named_in_code = set()
    for module in (claims, distributions):
        tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
        strings = (n.value for n in ast.walk(tree) if isinstance(n, ast.Constant))
        named_in_code |= {s for s in strings if isinstance(s, str) and s in columns}
    assert "architecture.norm.affine" in named_in_code  # the scan sees single-quoted names
    assert named_in_code - set(claims.CLAIM_COLUMNS) == set()
    frame = claims.claim_frame(catalogue_frame(catalogue(*recent_crowd())))
    assert set(claims.CLAIM_COLUMNS) <= set(frame.columns)


def test_an_empty_catalogue_checks_nothing_and_breaks_nothing() -> None:
    results = check_claims(catalogue_frame(catalogue()))
    assert all(r.verdict is Verdict.NOT_CHECKABLE for r in results)
    assert all(r.evidence for r in results)


# --- claims with named models -----------------------------------------------------------

OPT_POST = {"architecture.norm.position": "post"}


def test_claim_1_holds_with_opt_350m_post_norm() -> None:
    result = check(
        "pre-norm", *recent_crowd(), make_card("opt-350m", OPT_POST, year=2022, family="opt")
    )
    assert result.verdict is Verdict.HOLDS
    assert "opt-350m" in result.deciding
    assert not result.disagreements


def test_claim_1_names_a_disagreeing_card() -> None:
    result = check("pre-norm", *recent_crowd(), make_card("opt-350m", year=2022, family="opt"))
    assert result.verdict is Verdict.PARTLY
    assert any("opt-350m" in d and "post-norm" in d for d in result.disagreements)


def test_claim_1_says_which_card_is_missing() -> None:
    result = check("pre-norm", *recent_crowd())
    assert result.verdict is Verdict.HOLDS  # the general part alone
    assert "no card for OPT-350M" in result.missing


def test_claim_1_contradicted_when_modern_models_post_norm() -> None:
    post = [modern(f"post-{i}-7b", OPT_POST, family=f"post-{i}") for i in range(3)]
    result = check("pre-norm", *post, make_card("opt-350m", year=2022, family="opt"))
    assert result.verdict is Verdict.CONTRADICTED


def test_claim_2_double_and_post_branch() -> None:
    double = {"architecture.norm.position": "double"}
    cards = [
        modern("grok-1", double, family="grok-1"),
        modern("gemma-2-9b", double, family="gemma-2"),
        modern("olmo-2-7b", {"architecture.norm.position": "post-branch"}, family="olmo-2"),
    ]
    assert check("double-norm", *cards).verdict is Verdict.HOLDS
    cards[2] = modern("olmo-2-7b", family="olmo-2")
    result = check("double-norm", *cards)
    assert result.verdict is Verdict.PARTLY
    assert any(d.startswith("OLMo 2: olmo-2-7b") for d in result.disagreements)


def test_claim_3_reports_palm_layernorm() -> None:
    palm = make_card("palm-540b", {"architecture.norm.affine": "scale"}, year=2022, family="palm")
    result = check("rmsnorm", *recent_crowd(), palm)
    assert result.verdict is Verdict.PARTLY
    assert any("palm-540b" in d and "affine scale" in d for d in result.disagreements)
    assert "no card for Command R" in result.missing


def test_claim_6_accepts_either_gemma_convention() -> None:
    gemma = {"architecture.mlp.activation": "geglu", "architecture.mlp.d_ff": 4096}  # 4x/branch
    t5 = {"architecture.mlp.activation": "relu", "architecture.mlp.d_ff": 65536}  # 64x
    cards = [
        *[make_card(f"plain-{i}-1b", family=f"plain-{i}") for i in range(3)],
        *recent_crowd(),
        modern("gemma-2-9b", gemma, family="gemma-2"),
        make_card("t5-11b", t5, family="t5", year=2019),
    ]
    result = check("d-ff-ratio", *cards)
    assert result.verdict is Verdict.HOLDS, result
    assert any("8 counting both branches" in f for f in result.findings)


def test_claim_8_contradicted_without_rope() -> None:
    learned = {"architecture.position": {"type": "learned"}}
    cards = [modern(f"abs-{i}-7b", learned, family=f"abs-{i}") for i in range(4)]
    result = check("rope", *cards)
    assert result.verdict is Verdict.CONTRADICTED
    assert set(result.deciding) == {c.id for c in cards}


def test_claim_8_partly_when_rope_is_only_a_majority() -> None:
    learned = {"architecture.position": {"type": "learned"}}
    result = check("rope", *recent_crowd(3), modern("abs-7b", learned, family="abs"))
    assert result.verdict is Verdict.PARTLY  # 75%: the consensus, but not "nearly all"
    assert result.deciding == ("abs-7b",)


def test_claim_13_first_z_loss_is_not_palm() -> None:
    z = {"training.z_loss": 0.0001}
    cards = [
        make_card("early-1b", z, year=2021, family="early"),
        make_card("palm-540b", z, year=2022, family="palm"),
    ]
    result = check("z-loss", *cards)
    assert result.verdict is Verdict.PARTLY
    assert any("first z-loss card is early-1b" in d for d in result.disagreements)


def test_claims_14_and_15_name_the_lectures_mistakes() -> None:
    gemma2 = modern("gemma-2-9b", {"architecture.attention.logit_softcap": 50.0}, family="gemma-2")
    olmo2 = modern("olmo-2-7b", qk_norm("full", prefix="architecture.attention."), family="olmo-2")
    qk = check("qk-norm", gemma2, olmo2)
    assert qk.verdict is Verdict.PARTLY
    assert any(
        d.startswith("Gemma 2: gemma-2-9b has attention.qk_norm none") for d in qk.disagreements
    )
    cap = check("softcap", gemma2, olmo2)
    assert cap.verdict is Verdict.PARTLY
    assert any(d.startswith("OLMo 2: olmo-2-7b") for d in cap.disagreements)


def test_claim_17_gemma_global_layers_use_rope() -> None:
    local = {
        "architecture.attention.layer_pattern": ["local", "global"],
        "architecture.attention.sliding_window": 4096,
    }
    nope = {
        "architecture.attention.layer_pattern": ["local", "local", "local", "global-nope"],
        "architecture.attention.sliding_window": 4096,
    }
    cards = [
        modern("gemma-2-9b", local, family="gemma-2"),
        modern("command-r7b", nope, family="command-r7b", name="Command R7B"),
    ]
    result = check("long-context-mix", *cards)
    assert result.verdict is Verdict.PARTLY
    assert any("gemma-2-9b has layer_mix global+local" in d for d in result.disagreements)
    assert "command-r7b" in result.deciding


def test_claim_17_judges_the_lectures_command_r_not_command_a() -> None:
    """The lecture names Command R: its line holds through Command R7B; Command A, named by
    the spec's summary only, is a finding and decides nothing."""
    nope = {
        "architecture.attention.layer_pattern": ["local", "local", "local", "global-nope"],
        "architecture.attention.sliding_window": 4096,
    }
    plain = modern("command-r", family="command-r", name="Command R")
    command_a = modern("command-a", nope, family="command-a", name="Command A")
    only_original = check("long-context-mix", plain, command_a)
    assert only_original.verdict is Verdict.CONTRADICTED
    assert "command-a" not in only_original.deciding
    assert any(f.startswith("Command A (named by the spec") for f in only_original.findings)
    r7b = modern("command-r7b", nope, family="command-r7b", name="Command R7B")
    line = check("long-context-mix", plain, r7b)
    assert line.verdict is Verdict.HOLDS
    assert any("holds through command-r7b, not through command-r" in f for f in line.findings)


def test_claims_name_their_window_and_scope() -> None:
    """Every claim says what it was judged on; 'the last year' is the year before the lecture."""
    results = claims.check_claims(catalogue_frame(catalogue(*recent_crowd())))
    assert all(r.window and r.scope for r in results)
    rope = next(r for r in results if r.key == "rope")
    start = (claims.LECTURE_DATE - dt.timedelta(days=claims.RECENT_DAYS)).isoformat()
    assert rope.window == f"the 12 months before the lecture: released {start} to 2025-04-30"


def test_claim_8_counts_the_year_before_the_lecture_not_the_newest_card() -> None:
    """A RoPE-less dense model released after the lecture does not change claim 8's verdict."""
    before = [modern(f"d-{i}-7b", family=f"d-{i}", release_date="2025-01-15") for i in range(3)]
    after = [
        modern(
            f"a-{i}-7b",
            {"architecture.position": {"type": "alibi"}},
            family=f"a-{i}",
            release_date="2025-09-01",
            year=2025,
        )
        for i in range(5)
    ]
    result = check("rope", *before, *after)
    assert result.verdict is Verdict.HOLDS
    assert result.evidence.startswith("RoPE in 100% of 3 family-years")
    assert any(f.startswith("since the lecture: RoPE in 0%") for f in result.findings)


# --- general statements --------------------------------------------------------------


def test_claim_4_counts_modern_bias() -> None:
    with_bias = {"architecture.bias": {"qkv": True, "attn_out": True, "mlp": True}}
    biased = [modern(f"b-{i}-7b", with_bias, family=f"b-{i}") for i in range(3)]
    assert check("no-bias", *recent_crowd(4), *biased).verdict is Verdict.HOLDS
    assert check("no-bias", *recent_crowd(2), *biased).verdict is Verdict.CONTRADICTED


def test_claim_12_needs_published_values() -> None:
    assert check("dropout", *recent_crowd()).verdict is Verdict.NOT_CHECKABLE
    known = {"training.dropout": 0.0, "training.weight_decay": 0.1}
    cards = [modern(f"k-{i}-7b", known, family=f"k-{i}") for i in range(3)]
    assert check("dropout", *cards).verdict is Verdict.HOLDS


def test_claim_16_recent_gqa() -> None:
    mha = {"architecture.attention.n_kv_heads": 8}
    assert check("gqa", *recent_crowd(3)).verdict is Verdict.HOLDS
    cards = [modern(f"mha-{i}-7b", mha, family=f"mha-{i}") for i in range(3)]
    result = check("gqa", *recent_crowd(1), *cards)
    assert result.verdict is Verdict.PARTLY  # GQA shrinks the cache, but is not the majority
    assert set(result.deciding) == {c.id for c in cards}


def test_claim_18_without_a_profile_is_not_checkable() -> None:
    result = check("norm-runtime", *recent_crowd())
    assert result.verdict is Verdict.NOT_CHECKABLE
    assert any("analytic forward FLOPs" in f for f in result.findings)
    assert any("runtime profile" in m for m in result.missing)


def test_claims_19_and_20_without_measurements_name_their_cards() -> None:
    linear = make_card(
        "linear-transformer",
        {"architecture.attention.variant": "linear", "architecture.norm.position": "post"},
        year=2020,
        research_variant=True,
    )
    pre_ln = make_card("pre-ln-transformer", year=2020, research_variant=True)
    frame = catalogue_frame(catalogue(linear, pre_ln))
    r19 = claims.check("norm-placement-gradients", frame)
    r20 = claims.check("fast-weights", frame)
    assert r19.verdict is r20.verdict is Verdict.NOT_CHECKABLE
    assert set(r19.deciding) == {"linear-transformer", "pre-ln-transformer"}
    assert r20.deciding == ("linear-transformer",)
    assert r19.missing and r20.missing


# --- the shipped catalogue ---------------------------------------------------------------


def test_shipped_catalogue_verdicts_are_backed_by_models() -> None:
    results = check_claims(catalogue_frame(shipped_catalogue()))
    assert len(results) == 20
    for r in results:
        assert r.evidence
        if r.verdict is not Verdict.NOT_CHECKABLE:
            assert r.deciding, f"claim {r.key} has a verdict but no deciding model"
        else:
            assert r.missing, f"claim {r.key} does not say what is missing"


def test_claim_9_is_judged_per_era_counting_families_not_sizes() -> None:
    """One family of six sizes with wide heads weighs as much as one other family in its
    year: 2024 has 3 families at ratio 1 and 1 off (75%, fails 'nearly all'), where cards
    would count 3 of 9; 2025 has 4 families all at 1 and holds. The verdict names both."""
    wide = {"architecture.attention.head_dim": 256}  # 4 heads x 256 = 1024 = 1.5 x d_model
    crowd_2024 = [modern(f"n-{i}-7b", family=f"n-{i}") for i in range(3)]
    sizes = [modern(f"wide-{i}b", wide, family="wide") for i in range(1, 7)]
    crowd_2025 = [
        modern(f"m-{i}-7b", family=f"m-{i}", release_date="2025-02-01", year=2025) for i in range(4)
    ]
    result = check("head-dims", *crowd_2024, *sizes, *crowd_2025)
    assert result.verdict is Verdict.PARTLY
    assert "holds (2025 on); fails (2023–2024)" in result.evidence
    assert "2023–2024 75% (n 4)" in result.evidence
    assert "2025 on 100% (n 4)" in result.evidence
