"""LongCat-Flash's mechanisms: shortcut-connected MoE layers (two MLA sublayers and two
dense MLPs per layer, the experts beside them) and zero-computation experts."""

from __future__ import annotations

import pytest
import torch

from archdb.builder.model import build_model
from archdb.measure.analytic import flops
from archdb.measure.flops import measure_flops
from archdb.parts import moe as moe_part
from archdb.parts import shortcut as shortcut_part
from archdb.plan.plan import make_plan
from tests.conftest import make_arch
from tests.test_params_vs_hf import LONGCAT

MoE = moe_part.modules().MoE
ShortcutBlock = shortcut_part.modules().ShortcutBlock

T = 24


def _moes(model: torch.nn.Module) -> list[MoE]:
    return [m for m in model.modules() if isinstance(m, MoE)]


def _route_to(model: torch.nn.Module, real: bool) -> None:
    """Make every token choose only real experts (real) or only zero experts."""
    for moe in _moes(model):
        n = moe.experts.up.shape[0]
        bias = moe.router.correction_bias
        bias.zero_()
        (bias[n:] if real else bias[:n]).fill_(-1e9)


def test_a_layer_holds_two_attentions_two_dense_mlps_and_the_experts():
    arch = make_arch(**LONGCAT)
    model = build_model(arch)
    blocks = [m for m in model.modules() if isinstance(m, ShortcutBlock)]
    assert len(blocks) == arch.n_layers
    assert [len(blocks[0].attn), len(blocks[0].dense)] == [2, 2]
    plan = make_plan(arch)
    one_layer = plan.decoder.blocks[0].mixers[0].cache_entries(100)
    assert plan.decoder.cache_entries(100) == 2 * arch.n_layers * one_layer


def test_flops_count_the_most_real_experts_a_token_can_run():
    arch = make_arch(**LONGCAT)
    formula = sum(flops(arch, T).dense.values())
    model = build_model(arch)
    _route_to(model, real=True)  # every choice a real expert: the maximum, as counted
    assert measure_flops(model, T).total == formula
    _route_to(model, real=False)  # every choice a zero expert: no expert work at all
    assert measure_flops(model, T).total < formula


def test_a_zero_expert_returns_its_input_times_its_weight():
    arch = make_arch(**LONGCAT)
    model = build_model(arch)
    _route_to(model, real=False)
    moe = _moes(model)[0]
    x = torch.randn(1, 5, arch.d_model)
    index, weight = moe.router(x.view(5, -1))
    assert bool((index >= moe.experts.up.shape[0]).all())
    expected = x.view(5, -1) * weight.sum(dim=-1, keepdim=True)
    torch.testing.assert_close(moe(x).view(5, -1), expected)


@pytest.mark.parametrize("bad", [{"norm.position": "double"}, {"parallel_layers": True}])
def test_shortcut_layers_need_serial_pre_norm(bad):
    extra = {"norm.shared_in_parallel": True} if "parallel_layers" in bad else {}
    with pytest.raises(ValueError, match="shortcut_dense_d_ff"):
        make_arch(**LONGCAT, **bad, **extra)


def _imported(**changes):
    import transformers

    from archdb.writer import validate_card
    from archdb_hf.importer import Identity, import_config

    config = transformers.LongcatFlashConfig(num_layers=2).to_dict() | changes
    identity = Identity("cat-1b", "Cat 1B", "cat", "Example Lab", "2025-01-01")
    url = "https://example.org/config.json"
    return validate_card(import_config(config, source_url=url, identity=identity).card)


def test_import_reads_the_released_configs_switches():
    """The released config.json's mla_scale_* and zero_expert_type keys (transformers'
    class has none): both scales off is a card without scaling, anything archdb cannot
    build is refused by name."""
    from archdb_hf.importer import HFImportError

    arch = _imported().architecture
    assert arch.attention.latent.lora_scaled and arch.mlp.moe.zero_experts == 256
    assert arch.mlp.moe.shortcut_dense_d_ff == 12288 and arch.mlp.d_ff == 2048
    off = _imported(mla_scale_q_lora=False, mla_scale_kv_lora=False).architecture
    assert off.attention.latent.lora_scaled is False
    with pytest.raises(HFImportError, match="mla_scale_q_lora and mla_scale_kv_lora differ"):
        _imported(mla_scale_q_lora=False)
    with pytest.raises(HFImportError, match="zero_expert_type 'copy': archdb's zero experts"):
        _imported(zero_expert_type="copy")
    with pytest.raises(HFImportError, match="qk_head_dim"):
        _imported(qk_head_dim=100)


def test_build_states_how_routing_dependent_flops_are_counted():
    """LongCat-Flash's zero-computation experts: `archdb build` routes its toy as the
    formula counts (every top-k slot a real expert), says so, and the two then agree."""
    from archdb.measure.summary import build_summary
    from tests.conftest import shipped_catalogue

    summary = build_summary(shipped_catalogue().get("longcat-flash-chat"))
    assert summary.routing is not None and "compare like with like" in summary.routing
    assert abs(summary.flops.relative_difference) < 0.005
    assert summary.to_dict()["routing"] == summary.routing
