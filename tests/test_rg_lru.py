"""Griffin's RG-LRU (RecurrentGemma's recurrent block) as a layer-pattern mixer.

The mixer's forward pass equals transformers' RecurrentGemmaRecurrentBlock on the same
weights; its state is a constant of the context; the schema refuses a pattern and sizes
that disagree; import-hf reads RecurrentGemma's spellings; the toy keeps the gate blocks
tied to the attention heads. (Counts: tests/test_params_vs_hf.py; the default config:
test_hf_import.py; logits: test_fidelity.py.)"""

from __future__ import annotations

import re

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.fidelity import LOGIT_TOLERANCE
from archdb.measure.analytic import flops
from archdb.measure.flops import measure_flops
from archdb.mixers.rg_lru import rg_lru_module
from archdb.plan import make_plan
from archdb.plan.plan import cache_bytes
from archdb_hf.importer import HFImportError, Identity, import_config
from tests.conftest import RG_LRU_HYBRID, assert_causal, make_arch, needs_transformers
from tests.test_fidelity import _error_with_changes

pytestmark = needs_transformers

_GATES = {
    f"rg_lru.{g}_{t}": f"{g}.{t}"
    for g in ("input_gate", "recurrent_gate")
    for t in ("weight", "bias")
} | {"rg_lru.recurrent_param": "recurrent_param"}


def test_rg_lru_forward_equals_transformers_on_the_same_weights():
    import transformers
    from transformers.models.recurrent_gemma.modeling_recurrent_gemma import (
        RecurrentGemmaRecurrentBlock,
    )

    config = transformers.RecurrentGemmaConfig(
        hidden_size=64, lru_width=96, num_attention_heads=4, conv1d_width=4
    )
    torch.manual_seed(0)
    reference = RecurrentGemmaRecurrentBlock(config, layer_idx=0).eval()
    ours = rg_lru_module()(64, 96, 4, 4).eval()
    with torch.no_grad():
        for name, p in reference.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3)
            ours.get_parameter(_GATES.get(name, name)).copy_(p)
        x = torch.randn(2, 13, 64)
        expected, _ = reference(x, torch.arange(13)[None].expand(2, 13), None, use_cache=False)
        got = ours(x)
    assert {_GATES.get(n, n) for n, _ in reference.named_parameters()} == {
        n for n, _ in ours.named_parameters()
    }
    assert float((got - expected).abs().max() / expected.abs().max()) < 1e-5


def test_the_first_token_is_not_normalized():
    """Position 0 resets the state: h_0 = i_0 x_0, without sqrt(1 - a_0^2)."""
    torch.manual_seed(0)
    mixer = rg_lru_module()(16, 16, 2, 3).eval()
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        xs = mixer.conv_1d(mixer.linear_x(x))
        first = xs[:, 0] * torch.sigmoid(mixer.input_gate(xs))[:, 0]
        y = torch.nn.functional.gelu(mixer.linear_y(x), approximate="tanh")[:, 0]
        assert torch.allclose(mixer(x)[:, 0], mixer.linear_out(first * y), atol=1e-6)


def test_rg_lru_state_is_a_constant_of_the_context():
    hawk = make_arch(
        **{
            **RG_LRU_HYBRID,
            "attention.layer_pattern": ["rg-lru"],
            "n_layers": 2,
            "attention.sliding_window": None,
        }
    )
    per_layer = 96 + 96 * 3  # one entry per channel, the conv's last 3 inputs
    for context in (16, 4096, 1_000_000):
        assert cache_bytes(make_plan(hawk), context, 2) == 2 * 2 * per_layer
    # two RG-LRU layers and one local MQA layer: one KV head of 16, capped at the window
    griffin = make_plan(make_arch(**RG_LRU_HYBRID))
    for context in (100, 10_000):
        assert cache_bytes(griffin, context, 1) == 2 * per_layer + 2 * 16 * 16


def test_rg_lru_layers_are_causal_and_keep_their_mlp():
    torch.manual_seed(0)
    model = build_model(make_arch(**RG_LRU_HYBRID)).eval()
    assert [type(x.attn.sublayer).__name__ for x in model.decoder.layers] == [
        "RgLruMixer", "RgLruMixer", "HeadAttention",
    ]  # fmt: skip
    assert all(layer.mlp is not None for layer in model.decoder.layers)
    assert_causal(model, length=30, split=20)


_SIZES = {"lru_width": 96, "n_heads": 4, "conv_kernel": 4, "mlp": True}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.layer_pattern": ["rg-lru", "local"]}, "mixers.rg_lru is required"),
        ({"mixers": {"rg_lru": _SIZES}}, "mixers.rg_lru is required for, and only for"),
        (
            {**RG_LRU_HYBRID, "mixers": {"rg_lru": {**_SIZES, "n_heads": 5}}},
            "mixers.rg_lru.n_heads (5) must divide lru_width (96)",
        ),
    ],
)
def test_schema_refuses_rg_lru_sizes_that_disagree(changes, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        make_arch(**changes)


def test_toy_keeps_the_gate_blocks_equal_to_the_attention_heads():
    full = make_arch(
        **{
            **RG_LRU_HYBRID,
            "d_model": 2560,
            "n_layers": 26,
            "context_length": 8192,
            "attention.n_heads": 10,
            "attention.sliding_window": 2048,
            "mlp.d_ff": 7680,
            "mixers": {"rg_lru": {**_SIZES, "lru_width": 2560, "n_heads": 10}},
        }
    )
    toy = shrink(full).arch
    rg = toy.mixers.rg_lru
    assert toy.attention.n_heads == rg.n_heads == 10 and toy.attention.n_kv_heads == 1
    assert rg.lru_width == toy.d_model and rg.conv_kernel == 4
    assert toy.attention.layer_pattern == full.attention.layer_pattern
    assert measure_flops(build_model(toy), 24).by_class == flops(toy, 24).dense


def test_a_model_without_the_soft_cap_is_not_transformers_recurrent_gemma():
    from archdb_hf.families.card_to_config import NotRepresentable
    from archdb_hf.testing import hf_parameter_count

    with pytest.raises(NotRepresentable, match="RecurrentGemma always caps"):
        hf_parameter_count(
            make_arch(**{**RG_LRU_HYBRID, "final_logit_softcap": None}), "recurrent_gemma"
        )


# --- import-hf ------------------------------------------------------------------------

_IDENTITY = Identity("rg-1", "RG 1", "recurrentgemma", "Example Lab", "2024-04-09")
_URL = "https://huggingface.co/org/model/blob/main/config.json"
_CONFIG = {
    "model_type": "recurrent_gemma",
    "hidden_size": 2560,
    "intermediate_size": 15360,
    "num_hidden_layers": 26,
    "num_attention_heads": 10,
    "num_key_value_heads": 1,
    "vocab_size": 256000,
    "lru_width": 2560,
    "attention_window_size": 2048,
    "conv1d_width": 4,
    "logits_soft_cap": 30.0,
    "partial_rotary_factor": 0.5,
    "rope_theta": 10000.0,
    "_block_types": ["recurrent", "recurrent", "attention"],
    "embeddings_scale_by_sqrt_dim": True,
    "hidden_activation": "gelu_pytorch_tanh",
}


def test_import_reads_recurrent_gemma_spellings():
    """The released configs' _block_types, both GeGLU branches in intermediate_size, the
    bfloat16 normalizer, the soft-cap and the attention's output and MLP biases."""
    imported = import_config(_CONFIG, source_url=_URL, identity=_IDENTITY)
    arch = imported.card["architecture"]
    assert arch["attention"]["layer_pattern"] == ["rg-lru", "rg-lru", "local"]
    assert arch["attention"]["sliding_window"] == 2048
    assert arch["mlp"]["d_ff"] == 7680 and arch["mlp"]["activation"] == "geglu"
    assert arch["mixers"] == {
        "rg_lru": {"lru_width": 2560, "n_heads": 10, "conv_kernel": 4, "mlp": True}
    }
    assert arch["embedding_multiplier"] == 50.5  # sqrt(2560) = 50.596 in bfloat16
    assert arch["final_logit_softcap"] == 30.0
    assert arch["bias"] == {"qkv": False, "attn_out": True, "mlp": True}
    assert arch["position"]["rotary_fraction"] == 0.5 and arch["norm"]["unit_offset"] is True
    assert not imported.unmapped


def test_import_tiles_the_block_types_over_the_layers():
    config = {**_CONFIG, "num_hidden_layers": 4, "_block_types": ["recurrent", "attention"]}
    arch = import_config(config, source_url=_URL, identity=_IDENTITY).card["architecture"]
    assert arch["attention"]["layer_pattern"] == ["rg-lru", "local"]


def test_an_attention_free_config_imports_and_counts_as_transformers():
    """Hawk's layout (RG-LRU blocks only): no window, the gate blocks from the head count."""
    from tests.conftest import hf_import_count

    ours, theirs, card = hf_import_count(
        "recurrent_gemma",
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=4,
        vocab_size=128,
        lru_width=96,
        block_types=["recurrent"],
    )
    arch = card.architecture
    assert arch.attention.layer_pattern == ["rg-lru"] and arch.attention.sliding_window is None
    assert arch.mixers.rg_lru.n_heads == 4 and ours == theirs


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"_block_types": ["recurrent", "mamba"]}, "'mamba' is not a Griffin block"),
        ({"_block_types": []}, "block_types is empty"),
        ({"hidden_activation": "silu"}, "gate branch is tanh GELU only"),
        ({"logits_soft_cap": 0.0}, "logits_soft_cap must be a positive number (got 0.0)"),
    ],
)
def test_import_refuses_what_recurrent_gemma_cannot_build(changes, message):
    with pytest.raises(HFImportError, match=re.escape(message)):
        import_config({**_CONFIG, **changes}, source_url=_URL, identity=_IDENTITY)


@pytest.mark.parametrize(
    "changes",
    [
        {"embedding_multiplier": 80**0.5},  # sqrt(d) unrounded: transformers' is bfloat16
        {"attention.sliding_window": 9},
        {"position.rotary_fraction": None},
        {"final_logit_softcap": None},
    ],
)
def test_each_recurrent_gemma_choice_changes_the_logits(changes, tmp_path):
    assert _error_with_changes("recurrent_gemma", tmp_path, changes) > 10 * LOGIT_TOLERANCE
