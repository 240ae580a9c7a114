"""Schema facts in one place: field roles generate the lists other layers use, and the
catalogue's header is generated from the schema."""

from __future__ import annotations

import os

import pytest
from archdb_cli.main import app
from typer.testing import CliRunner

from archdb.catalogue import DEFAULT_PATH, load_catalogue
from archdb.fields import Asked, OutputOnly, Unknown, field_at, prompted, with_role
from archdb.header import catalogue_header, split_header
from archdb.plan.layout import FUNCTION_DEFAULTS, REQUIRED, function_assumptions
from archdb.schema import UNKNOWN_WHEN_NULL, Card
from archdb.writer import WriteError, skeleton, write_header
from tests.conftest import VALID_CARD, make_arch, make_card, moe_block, qk_norm


def test_committed_header_is_what_the_schema_generates():
    header, _ = split_header(DEFAULT_PATH.read_text(encoding="utf-8"))
    assert header == catalogue_header(), "stale header: run `archdb schema`"


def test_header_lists_every_field_and_every_output_only_default():
    header = catalogue_header()
    for path in ("shared_in_parallel?", "indexer_rope_layout?", "inner_norm_eps?", "copies?"):
        assert path in header
    unwrapped = " ".join(line.lstrip("# ") for line in header.splitlines())
    assert "norm.eps: 1e-5 (layernorm)" in unwrapped and "1e-6 (rmsnorm)" in unwrapped
    assert "mixers.mamba.inner_norm_eps: 1e-6" in header
    assert "mlp.activation: relu | gelu | squared-relu" in header
    assert all(line.startswith("#") and len(line) <= 92 for line in header.splitlines())


def test_roles_generate_the_lists():
    unknown = dict(with_role(Card, Unknown))
    assert tuple(unknown) == UNKNOWN_WHEN_NULL
    assert "architecture.attention.n_kv_heads" in UNKNOWN_WHEN_NULL
    # the builder needs every Unknown architecture value but the KV heads (MLA has none)
    assert "attention.n_kv_heads" not in REQUIRED and "d_model" in REQUIRED
    assert set(REQUIRED) == {
        p.removeprefix("architecture.")
        for p, role in unknown.items()
        if role.build and p.startswith("architecture.")
    }
    output_only = dict(with_role(Card, OutputOnly))
    assert set(FUNCTION_DEFAULTS) == {p.removeprefix("architecture.") for p in output_only}
    assert FUNCTION_DEFAULTS["norm.unit_offset"][0] is False
    assert field_at(Card, "architecture.attention.sliding_window").role(Asked) is not None


def test_function_assumptions_only_for_choices_in_play():
    dense = make_card("toy-1b")
    stated = {a.field for a in function_assumptions(dense.architecture)}
    assert dense.architecture.position.type.value == "learned"
    assert "norm.eps" in stated and "position.rope_layout" not in stated  # RoPE only
    rope = make_card("toy-rope", {"architecture.position.type": "rope"})
    assert "position.rope_layout" in {a.field for a in function_assumptions(rope.architecture)}
    assert not any(p.startswith(("mlp.moe.", "mixers.", "mlp.swiglu_")) for p in stated)
    assert "attention.input_multiplier" not in stated  # Falcon-H1's factors: Mamba-2 only
    moe = make_card("toy-moe", {"architecture.mlp.moe": moe_block()})
    stated = {a.field for a in function_assumptions(moe.architecture)}
    assert {"mlp.moe.normalize_top_k", "mlp.moe.score_function"} <= stated
    recorded = make_card("toy-eps", {"architecture.norm.eps": 1e-5})
    assert "norm.eps" not in {a.field for a in function_assumptions(recorded.architecture)}


def test_new_asks_the_identity_then_the_core_in_schema_order():
    paths = [p for p, _ in prompted(Card)]
    assert paths[:6] == ["id", "name", "family", "organization", "release_date", "open_weights"]
    assert paths.index("architecture.attention.layer_pattern") < paths.index(
        "architecture.attention.sliding_window"
    )  # a window is asked only after a pattern with local layers
    window = dict(prompted(Card))["architecture.attention.sliding_window"]
    pattern = {"architecture": {"attention": {"layer_pattern": ["global"]}}}
    assert not window.in_play(pattern)
    pattern["architecture"]["attention"]["layer_pattern"] = ["local", "global"]
    assert window.in_play(pattern)


def test_skeleton_has_every_required_field_null():
    data = skeleton()
    arch = data["architecture"]
    assert arch["kind"] == "decoder-only" and arch["attention"]["variant"] == "softmax"
    assert arch["attention"]["layer_pattern"] == ["global"]
    assert arch["mlp"] == {"activation": None, "d_ff": None, "moe": None}
    assert "eps" not in arch["norm"]  # optional: left out, not null
    assert data["sources"] == [] and data["notes"] == {}


def _header_copy(tmp_path, header: str):
    body = VALID_CARD
    path = tmp_path / "models.yaml"
    path.write_text(header + "\n" + body, encoding="utf-8")
    return path, body


def test_write_header_replaces_only_the_header(tmp_path):
    path, body = _header_copy(tmp_path, "# an old header\n# of two lines\n")
    before = load_catalogue(path).cards
    assert write_header(path, catalogue_header()) is True
    text = path.read_text(encoding="utf-8")
    assert text == catalogue_header() + "\n" + body
    assert load_catalogue(path).cards == before
    assert write_header(path, catalogue_header()) is False  # in step: not rewritten


def test_write_header_refuses_a_read_only_catalogue(tmp_path):
    path, _ = _header_copy(tmp_path, "# old\n")
    os.chmod(path, 0o444)
    try:
        with pytest.raises(WriteError, match="read-only"):
            write_header(path, catalogue_header())
    finally:
        os.chmod(path, 0o644)
    assert path.read_text(encoding="utf-8").startswith("# old\n")


def test_schema_command_regenerates_the_header(tmp_path, monkeypatch):
    path, body = _header_copy(tmp_path, "# stale\n")
    monkeypatch.setenv("ARCHDB_CATALOGUE", str(path))
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    assert "rewrote the header" in result.output
    assert path.read_text(encoding="utf-8") == catalogue_header() + "\n" + body
    assert (tmp_path / "models.schema.json").is_file()


def test_parallel_blocks_state_their_norms():
    """norm.shared_in_parallel no longer means 'one each' when null: parallel cards say."""
    with pytest.raises(ValueError, match="shared_in_parallel is required with parallel_layers"):
        make_card("toy-par", {"architecture.parallel_layers": True})
    one_each = make_card(
        "toy-par",
        {"architecture.parallel_layers": True, "architecture.norm.shared_in_parallel": False},
    )
    assert one_each.architecture.norm.shared_in_parallel is False


def test_toy_dims_are_every_size_the_card_sets():
    from archdb.builder.shrink import toy_dims
    from tests.conftest import mamba2_dims

    hybrid = make_card(
        "toy-hybrid",
        {
            "architecture.attention.layer_pattern": ["mamba2", "global"],
            "architecture.mixers": {"mamba2": mamba2_dims()},
            "architecture.mlp.moe": moe_block(),
        },
    )
    dims = toy_dims(hybrid.architecture)
    assert dims["mixers.mamba2.state_size"] == mamba2_dims()["state_size"]
    assert dims["n_experts"] == 4 and dims["d_model"] == hybrid.architecture.d_model
    assert not any(isinstance(v, bool) for v in dims.values())


def test_fill_unknowns_fills_only_unknown_fields():
    """The fill rules stay one ordered function; each value it fills has the Unknown role
    (or is the local window), so a null it fills is one a card must explain."""
    from archdb.plan.layout import fill_unknowns

    unknown = {
        p.removeprefix("architecture.")
        for p, _ in with_role(Card, Unknown)
        if p.startswith("architecture.")
    }
    nulls = {p: None for p in unknown if p not in {"d_model", "n_layers", "attention.n_heads",
                                                   "mlp.d_ff", "mlp.activation"}}  # fmt: skip
    nulls.pop("vocab_size")
    card = make_card("toy-null", {f"architecture.{p}": v for p, v in nulls.items()})
    _, made = fill_unknowns(card.architecture)
    assert {a.field for a in made} == set(nulls)


def test_a_qk_norm_with_parameters_states_its_type_and_affine():
    """attention.qk_norm_type / qk_norm_affine no longer follow the blocks' norm when null:
    a per-head, per-head-untied or full QK norm states both; none and l2 state neither."""
    for kind in ("per-head", "per-head-untied", "full"):
        with pytest.raises(ValueError, match=rf"qk_norm {kind} needs attention\.qk_norm_type and"):
            make_card("toy-qk", {"architecture.attention.qk_norm": kind})
    half = {
        "architecture.attention.qk_norm": "full",
        "architecture.attention.qk_norm_type": "rmsnorm",
    }
    with pytest.raises(ValueError, match=r"needs attention\.qk_norm_affine stated"):
        make_card("toy-qk", half)
    stray = qk_norm("l2", prefix="architecture.attention.")
    stray["architecture.attention.qk_norm_affine"] = "scale"
    with pytest.raises(ValueError, match="only for a per-head, per-head-untied or full"):
        make_card("toy-qk", stray)
    card = make_card("toy-qk", qk_norm("per-head", prefix="architecture.attention."))
    assert card.architecture.attention.qk_norm_type.value == "rmsnorm"


def test_a_missing_qk_norm_type_is_located_at_the_cards_qk_norm(write_catalogue):
    text = VALID_CARD.replace("qk_norm: none", "qk_norm: per-head")
    result = CliRunner().invoke(app, ["validate", str(write_catalogue(text))])
    assert result.exit_code == 1
    out = " ".join(result.output.split())
    assert ":25:" in out and "toy-1b architecture.attention.qk_norm" in out
    assert "needs attention.qk_norm_type and attention.qk_norm_affine stated" in out
    fixed = text.replace(
        "qk_norm: per-head\n",
        "qk_norm: per-head\n      qk_norm_type: layernorm\n      qk_norm_affine: scale\n",
    )
    assert CliRunner().invoke(app, ["validate", str(write_catalogue(fixed))]).exit_code == 0


def test_the_plan_reads_the_qk_norm_as_stated_not_the_blocks_norm():
    from archdb.parts.norms import bare_rms
    from archdb.plan import make_plan
    from archdb.schema import NormType

    def qk(**changes):
        return make_plan(make_arch(**changes)).decoder.blocks[0].mixer.qk_norm

    # layernorm blocks, an RMSNorm QK norm with a scale: one weight per head dim, no bias
    rms = qk(**{"norm.type": "layernorm", "norm.affine": "scale-and-bias"}, **qk_norm("per-head"))
    assert (rms.norm.type, rms.norm.scale, rms.norm.bias) == (NormType.RMSNORM, True, False)
    assert rms.params() == 2 * 16  # q and k, head_dim 16
    biased = qk(**qk_norm("full", "layernorm", "scale-and-bias"))  # under RMSNorm blocks
    assert biased.norm.type is NormType.LAYERNORM and biased.params() == 2 * (64 + 2 * 16)
    # l2: a bare RMS norm at the blocks' epsilon (Llama4TextL2Norm(rms_norm_eps))
    assert qk(**qk_norm("l2"), **{"norm.eps": 1e-4}).norm == bare_rms(1e-4)
    assert qk(**qk_norm("none")) is None


def test_new_asks_for_the_qk_norm_terms_only_after_a_qk_norm_with_parameters():
    paths = [p for p, _ in prompted(Card)]
    at = paths.index("architecture.attention.qk_norm")
    assert paths[at + 1 : at + 3] == [
        "architecture.attention.qk_norm_type",
        "architecture.attention.qk_norm_affine",
    ]
    asked = dict(prompted(Card))["architecture.attention.qk_norm_type"]
    assert asked.required  # in play, a blank answer is asked again
    for kind, in_play in (("none", False), ("l2", False), ("per-head", True), ("full", True)):
        assert asked.in_play({"architecture": {"attention": {"qk_norm": kind}}}) is in_play
