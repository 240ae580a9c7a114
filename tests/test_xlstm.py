"""xLSTM: the mLSTM plugin (archdb.mixers.mlstm) and the xlstm family against transformers'
xLSTM: exact parameters (small and at xLSTM 7B's sizes), each output-changing field
against transformers' logits, FLOPs against the formula, the recurrent state, the toy
rule, import-hf with its refusals, and the card -> config -> card round trip."""

from __future__ import annotations

import math
import re

import pytest
import torch

import archdb
from archdb.builder.model import build_model, count_parameters
from archdb.builder.shrink import shrink
from archdb.fidelity import LOGIT_TOLERANCE
from archdb.measure.flops import measure_flops
from archdb.plan import flops as plan_flops
from archdb.plan import make_plan
from archdb.plan import params as plan_params
from archdb.writer import validate_card
from archdb_hf.families.card_to_config import NotRepresentable
from archdb_hf.importer import HFImportError, Identity, import_config, read_config
from archdb_hf.reference import convert, round_trip_losses
from archdb_hf.testing import hf_parameter_count
from tests.conftest import (
    apply_changes,
    assert_causal,
    make_arch,
    needs_transformers,
    shipped_catalogue,
)

pytestmark = needs_transformers

# a tiny xLSTM as a card states it: pre-RMSNorm mLSTM then gated SiLU feed-forward in each
# block, a final RMSNorm, an untied head with soft-capped logits, no positions
XLSTM_LIKE = {
    "d_model": 128,
    "n_layers": 2,
    "vocab_size": 128,
    "norm": {"type": "rmsnorm", "position": "pre", "affine": "scale", "final": True,
             "eps": 1e-5},
    "attention.layer_pattern": ["mlstm"],
    "attention.n_heads": None,
    "attention.n_kv_heads": None,
    "attention.qk_norm": None,
    "context_length": None,  # no position limit
    "position": {"type": "none"},
    "mlp": {"activation": "swiglu", "d_ff": 192, "moe": None},
    "mixers": {"mlstm": {"n_heads": 4, "key_head_dim": 16, "value_head_dim": 32,
                         "gate_soft_cap": 2.0, "denominator_eps": 1e-4, "mlp": True}},
    "final_logit_softcap": 1.5,
    "tied_embeddings": False,
}  # fmt: skip
IDENTITY = Identity("xlstm-tiny", "xLSTM tiny", "xlstm", "Tests", "2024-01-01")
URL = "https://example.org/config.json"


def _mlstm(**changes) -> dict:
    return {"mixers": {"mlstm": XLSTM_LIKE["mixers"]["mlstm"] | changes}}


def _import(config: dict):
    return import_config(config, source_url=URL, identity=IDENTITY)


def _default_config(**changes) -> dict:
    """transformers' xLSTMConfig defaults (the 7B's sizes) as a saved config.json."""
    import transformers

    return {**transformers.xLSTMConfig().to_dict(), "model_type": "xlstm", **changes}


# --- counts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [{}, _mlstm(key_head_dim=8, value_head_dim=16), _mlstm(n_heads=2, key_head_dim=64)],
)
def test_parameters_equal_transformers_xlstm(changes):
    arch = make_arch(**(XLSTM_LIKE | changes))
    expected = hf_parameter_count(arch, "xlstm")
    assert plan_params(make_plan(arch)).total == expected
    assert count_parameters(build_model(arch, device="meta")) == expected


def test_xlstm_7b_sizes_count_exactly():
    """xLSTMConfig's defaults are the 7B's sizes: 32 blocks of 8 heads, q/k 2048 and v
    4096 wide, a 10944 feed-forward, a 50304-token vocabulary with an untied head."""
    card = validate_card(_import(_default_config()).card)
    arch = card.architecture
    assert (arch.d_model, arch.n_layers, arch.mlp.d_ff, arch.vocab_size) == (4096, 32, 10944, 50304)
    m = arch.mixers.mlstm
    assert (m.n_heads, m.key_head_dim, m.value_head_dim) == (8, 256, 512)
    assert plan_params(make_plan(arch)).total == 6_865_424_896
    assert hf_parameter_count(arch, "xlstm") == 6_865_424_896


def test_the_xlstm_7b_card_counts_6_865_424_896_against_the_papers_7b():
    """The catalogue's xlstm-7b: embedding and untied head 2 x 50304 x 4096; per block
    q, k (4096 -> 2048), v, output gate, out_proj (4096 x 4096), the two gates (4096 -> 8
    with bias), the per-head norm's 4096 scales, the 3 x 4096 x 10944 feed-forward and two
    RMSNorms; a final RMSNorm. 6.87B, 1.9% under the paper's headline "7-billion"."""
    card = shipped_catalogue().get("xlstm-7b")
    arch = card.architecture
    per_block = (
        2 * 4096 * 2048 + 3 * 4096 * 4096 + 2 * (4096 * 8 + 8) + 4096 + 3 * 4096 * 10944 + 2 * 4096
    )
    expected = 2 * 50304 * 4096 + 32 * per_block + 4096
    assert expected == 6_865_424_896
    assert plan_params(make_plan(arch)).total == expected
    assert hf_parameter_count(arch, "xlstm") == expected
    assert card.params_published == 7_000_000_000
    assert 0.98 < expected / card.params_published < 0.99
    # the card and xLSTMConfig's defaults (given as NX-AI/xLSTM-7b's) build the same model
    imported = validate_card(_import(_default_config()).card).architecture
    assert plan_params(make_plan(imported)).total == expected


# --- the forward pass -----------------------------------------------------------------------


def _tiny_checkpoint(directory) -> torch.nn.Module:
    """transformers' xLSTM of XLSTM_LIKE, its 1-d tensors moved off their initial values,
    saved to ``directory``."""
    import transformers

    torch.manual_seed(0)
    no_ids = {"bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    config = transformers.xLSTMConfig(**convert(make_arch(**XLSTM_LIKE), "xlstm"), **no_ids)
    model = transformers.xLSTMForCausalLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(directory)
    return model


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("mixers.mlstm.gate_soft_cap", 15.0),
        ("mixers.mlstm.denominator_eps", 0.1),  # read-out denominators are mostly above 1e-4
        ("norm.eps", 1e-6),  # the block norms' and the per-head LayerNorm's
        ("final_logit_softcap", 30.0),
    ],
)
def test_each_xlstm_function_field_changes_the_logits(path, value, tmp_path):
    """The imported card is logit-exact; each output-only field, changed, is not."""
    reference = _tiny_checkpoint(tmp_path)
    card = validate_card(_import(read_config(tmp_path / "config.json")).card)
    tokens = torch.randint(0, 128, (2, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(tokens).logits

        def error(arch_data: dict) -> float:
            data = card.model_dump(mode="json") | {"architecture": arch_data}
            model = archdb.build(validate_card(data), "full", weights=tmp_path).eval()
            return float((model(tokens) - expected).abs().max() / expected.abs().max())

        exact = card.model_dump(mode="json")["architecture"]
        assert error(exact) < LOGIT_TOLERANCE
        assert error(apply_changes(exact, {path: value})) > 100 * LOGIT_TOLERANCE


def test_mlstm_reads_only_earlier_tokens():
    torch.manual_seed(0)
    assert_causal(build_model(make_arch(**XLSTM_LIKE)).eval())


@pytest.mark.parametrize("cap", [2.0, None])
def test_fvcore_counts_what_the_formula_counts(cap):
    arch = make_arch(**(XLSTM_LIKE | _mlstm(gate_soft_cap=cap)))
    counted = measure_flops(build_model(arch), 16)
    formula = plan_flops(make_plan(arch), 16)
    assert counted.total == sum(formula.dense.values())
    for cls, n in formula.dense.items():
        assert counted.by_class[cls] == n, cls


def test_the_state_is_each_heads_memory_normalizer_and_maximum():
    """Per layer and head: the 16 x 32 memory C, the 16-wide normalizer n, the maximum m."""
    plan = make_plan(make_arch(**XLSTM_LIKE))
    assert plan.decoder.cache_entries(10) == plan.decoder.cache_entries(100_000)
    assert plan.decoder.cache_entries(10) == 2 * 4 * (16 * 32 + 16 + 1)


def test_the_toy_keeps_two_heads_of_at_most_16():
    card = validate_card(_import(_default_config()).card)
    toy = shrink(card.architecture).arch.mixers.mlstm
    assert (toy.n_heads, toy.key_head_dim, toy.value_head_dim) == (2, 16, 16)
    assert (toy.gate_soft_cap, toy.denominator_eps, toy.mlp) == (15.0, 1e-6, True)


# --- import-hf ---------------------------------------------------------------------------


def test_import_hf_reads_the_7b_form():
    """NX-AI's layout: num_blocks and embedding_dim (no num_hidden_layers), the kernel and
    dtype keys taken as they are; the head untied whatever tie_word_embeddings says."""
    config = _default_config(num_blocks=24, embedding_dim=4096, tie_word_embeddings=True)
    del config["num_hidden_layers"]
    result = _import(config)
    arch = validate_card(result.card).architecture
    assert arch.n_layers == 24 and not arch.tied_embeddings
    assert (arch.final_logit_softcap, arch.norm.eps) == (30.0, 1e-6)
    assert arch.position.type.value == "none"
    assert result.unmapped == {}
    assert "declares no tied weights" in result.card["notes"]["architecture.tied_embeddings"]
    assert "no position limit" in result.card["notes"]["architecture.context_length"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"use_bias": True}, "use_bias true is not supported"),
        ({"qk_dim_factor": 0.3}, "int(hidden_size x qk_dim_factor) = 1228 does not split"),
        ({"embedding_dim": 2048}, "embedding_dim (2048) differs from hidden_size (4096)"),
        ({"weight_mode": "<b>"}, "weight_mode must be 'single'"),
        ({"weight_mode": "fused"}, "cannot initialize the fused layout"),
        ({"gate_soft_cap": "15"}, "gate_soft_cap must be a number (got str)"),
        ({"v_dim_factor": 1e300}, "v_dim_factor must be in (0, 64]"),
        ({"eps": math.nan}, "eps must be in (0, 1]"),
        ({"num_blocks": 0}, "num_blocks must be in (0, 1e+09]"),
        ({"ffn_round_up_to_multiple_of": 2.5}, "ffn_round_up_to_multiple_of must be a number"),
    ],
)
def test_import_hf_refuses_what_transformers_would_not_build(changes, message):
    with pytest.raises(HFImportError, match=re.escape(message)):
        _import(_default_config(**changes))


def test_the_reference_round_trips_and_refuses_what_xlstm_cannot_build():
    for changes in ({}, _mlstm(key_head_dim=8, value_head_dim=24), {"mlp.d_ff": 100}):
        assert round_trip_losses(make_arch(**(XLSTM_LIKE | changes)), "xlstm") == set()
    for changes, message in [
        ({"tied_embeddings": True}, "tied_embeddings False (xlstm's code fixes it)"),
        ({"final_logit_softcap": None}, "final_logit_softcap (xLSTMConfig needs one)"),
        (_mlstm(gate_soft_cap=None), "gate_soft_cap (xLSTMConfig needs one)"),
        ({"norm.type": "layernorm"}, "norm.type must be rmsnorm"),
    ]:
        with pytest.raises(NotRepresentable, match=re.escape(message)):
            convert(make_arch(**(XLSTM_LIKE | changes)), "xlstm")
