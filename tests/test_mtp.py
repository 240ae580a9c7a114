"""Multi-token-prediction modules (architecture.mtp): a field, counted apart from the model.

The main model's exact count is the one compared with transformers (which builds no MTP
weights), so the modules never change it; their parameters and FLOPs are figures of their
own, checked here against the builder's count of one more layer and a published figure.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from archdb.measure.analytic import default_seq_len, derived_figures, flops, param_count
from archdb.schema import MTP
from tests.conftest import latent_dims, make_arch, make_card, moe_block, shipped_catalogue

MOE_MLA = {
    "n_layers": 3,
    "attention.variant": "latent",
    "attention.latent": latent_dims(),
    "mlp.moe": moe_block(first_dense_layers=1, dense_d_ff=256),
}


def _with(arch, **changes):
    return arch.model_copy(update=changes)


def _card(arch):
    return make_card("mtp-1b").model_copy(update={"architecture": arch})


def test_the_main_model_count_leaves_the_modules_out():
    arch = make_arch(**MOE_MLA)
    with_mtp = make_arch(**MOE_MLA, mtp={"n_modules": 2})
    assert param_count(with_mtp) == param_count(arch)
    assert flops(with_mtp, 16).dense == flops(arch, 16).dense


@pytest.mark.parametrize(
    "changes",
    [
        MOE_MLA,
        {"n_layers": 2},
        {"n_layers": 4, "norm.type": "layernorm", "norm.affine": "scale-and-bias"},
    ],
)
@pytest.mark.parametrize("n_modules, layers", [(1, 1), (3, 1), (2, 2)])
def test_a_module_is_its_norms_projection_and_blocks_like_the_last_layer(
    changes, n_modules, layers
):
    """Counted by building one more layer with the builder: the module adds its blocks,
    a bias-free 2d -> d projection and three norms of the card's kind."""
    torch = pytest.importorskip("torch")  # noqa: F841
    from archdb.builder.model import build_model, count_parameters

    arch = make_arch(**changes)
    deeper = _with(arch, n_layers=arch.n_layers + 1)
    block = count_parameters(build_model(deeper, device="meta")) - count_parameters(
        build_model(arch, device="meta")
    )
    d = arch.d_model
    norm = d * (2 if arch.norm.affine.value == "scale-and-bias" else 1)
    figures = derived_figures(
        _card(_with(arch, mtp=MTP(n_modules=n_modules, layers_per_module=layers)))
    )
    assert figures["params_mtp"] == n_modules * (layers * block + 2 * d * d + 3 * norm)
    assert figures["params_with_mtp"] == figures["params_exact"] + figures["params_mtp"]


def test_mtp_flops_are_the_modules_forward_each_through_the_head():
    arch = make_arch(**MOE_MLA)
    deeper = _with(arch, n_layers=arch.n_layers + 1)
    seq = default_seq_len(arch)  # the length derived figures count at
    block = (sum(flops(deeper, seq).dense.values()) - sum(flops(arch, seq).dense.values())) / seq
    d, vocab = arch.d_model, arch.vocab_size
    got = derived_figures(_card(_with(arch, mtp=MTP(n_modules=2))))["flops_per_token_mtp"]
    head = 2 * d * vocab
    projection = 2 * 2 * d * d
    # the module's own norms: measured as three norms' worth of what a norm costs here
    per_norm = (got / 2 - block - head - projection) / 3
    assert per_norm == pytest.approx(_norm_flops_per_token(arch), rel=0, abs=1e-9)


def _norm_flops_per_token(arch) -> float:
    from archdb.plan import plan as P
    from archdb.tally import Tally

    tally = Tally(1)
    P.make_plan(arch).decoder.final_norm.flops(tally, arch.d_model)
    return sum(tally.dense.values())


def test_no_modules_is_zero_and_unrecorded_is_null():
    base = make_card("mtp-1b")
    none = derived_figures(base)
    assert none["params_mtp"] is None and none["flops_per_token_mtp"] is None
    zero = base.model_copy(update={"architecture": _with(base.architecture, mtp=MTP(n_modules=0))})
    figures = derived_figures(zero)
    assert figures["params_mtp"] == 0 and figures["flops_per_token_mtp"] == 0
    assert figures["params_with_mtp"] == figures["params_exact"]


@pytest.mark.parametrize(
    "mtp, message",
    [
        ({"n_modules": -1}, "greater than or equal to 0"),
        ({"n_modules": 1, "layers_per_module": 0}, "greater than 0"),
        ({"n_modules": 1, "blocks": 2}, "Extra inputs"),
    ],
)
def test_bad_mtp_fields_are_refused(mtp, message):
    with pytest.raises(ValidationError, match=message):
        make_arch(mtp=mtp)


def test_an_encoder_decoder_cannot_have_mtp_modules():
    with pytest.raises(ValidationError, match="mtp modules are for decoder-only models"):
        make_arch(kind="encoder-decoder", n_encoder_layers=2, mtp={"n_modules": 1})


def test_hy3_mtp_layer_matches_the_readme_figure():
    """Hy3's README table gives 3.8B MTP layer parameters (the shared embedding and head
    excluded, as the schema counts them)."""
    figures = derived_figures(shipped_catalogue().get("hy3"))
    assert figures["params_mtp"] == pytest.approx(3.8e9, rel=0.02)


def test_cards_record_mtp_from_their_configs():
    cat = shipped_catalogue()
    modules = {c.id: c.architecture.mtp.n_modules for c in cat.cards if c.architecture.mtp}
    assert modules["deepseek-v3"] == 1 and modules["kimi-k2"] == 0
    assert modules["minimax-m2.5"] == 3 and modules["glm-5"] == 1
    for card in cat.cards:
        if card.architecture.mtp is not None:
            assert any("architecture.mtp" in s.supports for s in card.sources), card.id


def test_import_hf_reads_num_nextn_predict_layers_into_the_card():
    pytest.importorskip("transformers")
    from tests.conftest import hf_import_count

    ours, theirs, card = hf_import_count(
        "deepseek_v3",
        hidden_size=64,
        intermediate_size=128,
        moe_intermediate_size=32,
        num_hidden_layers=3,
        first_k_dense_replace=1,
        num_attention_heads=4,
        num_key_value_heads=4,
        n_routed_experts=8,
        num_experts_per_tok=2,
        n_group=2,
        topk_group=1,
        q_lora_rank=32,
        kv_lora_rank=16,
        qk_rope_head_dim=8,
        qk_nope_head_dim=16,
        v_head_dim=16,
        vocab_size=256,
        num_nextn_predict_layers=2,
    )
    assert card.architecture.mtp == MTP(n_modules=2)
    assert ours == theirs  # transformers builds no MTP layer, and the count has none


def test_show_and_list_give_the_mtp_figures(tmp_path):
    from archdb_cli.main import app
    from typer.testing import CliRunner

    runner = CliRunner()
    shown = runner.invoke(app, ["show", "deepseek-v3", "--json"])
    assert shown.exit_code == 0, shown.output
    derived = json.loads(shown.output)["derived"]
    assert derived["params_with_mtp"] == derived["params_exact"] + derived["params_mtp"]
    assert derived["params_mtp"] > 10**10 and derived["flops_per_token_mtp"] > 0
    listed = runner.invoke(
        app, ["list", "-w", "mtp.n_modules=0", "-c", "id,params_mtp,params_with_mtp", "--csv"]
    )
    assert listed.exit_code == 0, listed.output
    rows = listed.output.strip().splitlines()
    assert rows[0] == "id,params_mtp,params_with_mtp"
    assert "kimi-k2,0," in listed.output
    trends = runner.invoke(app, ["trends", "mtp"])
    assert trends.exit_code == 0 and "Multi-token prediction" in trends.output


_SMALL = {
    "hidden_size": 64,
    "intermediate_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 128,
}
QWEN3_NEXT = {
    **_SMALL,
    "model_type": "qwen3_next",
    "moe_intermediate_size": 32,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 4,
    "full_attention_interval": 2,
}
MINIMAX_M2 = {
    **_SMALL,
    "model_type": "minimax_m2",
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}


@pytest.mark.parametrize(
    ("base", "keys", "expected"),
    [
        (QWEN3_NEXT, {"mtp_num_hidden_layers": 1}, MTP(n_modules=1)),
        (MINIMAX_M2, {"use_mtp": True, "num_mtp_modules": 3, "mtp_transformer_layers": 2},
         MTP(n_modules=3, layers_per_module=2)),
        (MINIMAX_M2, {"use_mtp": False, "num_mtp_modules": 3}, MTP(n_modules=0)),
    ],
)  # fmt: skip
def test_import_hf_reads_each_familys_mtp_keys(base, keys, expected):
    from archdb_hf.importer import Identity, import_config

    result = import_config(
        {**base, **keys},
        source_url="https://huggingface.co/org/model/blob/main/config.json",
        identity=Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2025-01-01"),
    )
    assert MTP.model_validate(result.card["architecture"]["mtp"]) == expected
    assert not {"mtp_num_hidden_layers", "num_mtp_modules", "use_mtp"} & set(result.unmapped)


def test_recording_mtp_keeps_a_cards_measurements():
    """The built model leaves the modules out: the hash keying measured results ignores them."""
    from archdb.measure.mechanisms import card_hash

    card = make_card("mtp-1b")
    with_mtp = card.model_copy(
        update={"architecture": _with(card.architecture, mtp=MTP(n_modules=1))}
    )
    assert card_hash(with_mtp) == card_hash(card)
    deeper = card.model_copy(update={"architecture": _with(card.architecture, n_layers=3)})
    assert card_hash(deeper) != card_hash(card)
