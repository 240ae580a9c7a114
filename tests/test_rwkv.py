"""RWKV-4: the time-mixing plugin and the channel-mixing MLP against transformers' Rwkv
model: exact parameters, logits, FLOPs against the formula, the recurrent state."""

from __future__ import annotations

import pytest
import torch
import transformers

from archdb.builder.model import build_model, count_parameters
from archdb.measure.flops import measure_flops
from archdb.plan import flops as plan_flops
from archdb.plan import make_plan
from archdb.plan import params as plan_params
from tests.conftest import make_arch

# a tiny RWKV-4 as a card states it: an embedding LayerNorm (pre_ln), pre-norm LayerNorm
# layers of time mixing then channel mixing, a final LayerNorm, an untied head, no positions
RWKV_LIKE = {
    "d_model": 64,
    "n_layers": 3,
    "norm": {"type": "layernorm", "position": "pre", "affine": "scale-and-bias",
             "final": True, "eps": 1e-5},
    "attention.layer_pattern": ["rwkv"],
    "attention.n_heads": None,
    "attention.n_kv_heads": None,
    "position": {"type": "none"},
    "mlp": {"activation": "squared-relu", "d_ff": 96, "moe": None, "channel_mix": True},
    "mixers": {"rwkv": {"width": 64, "mlp": True}},
    "embedding_norm": True,
    "tied_embeddings": False,
}  # fmt: skip


def _config(width: int = 64) -> transformers.RwkvConfig:
    return transformers.RwkvConfig(
        vocab_size=128, hidden_size=64, attention_hidden_size=width, intermediate_size=96,
        num_hidden_layers=3, layer_norm_epsilon=1e-5, rescale_every=0, context_length=64,
    )  # fmt: skip


def _copy_weights(ours: torch.nn.Module, theirs: torch.nn.Module) -> None:
    base = theirs.rwkv
    pairs = [
        (ours.embed.table.weight, base.embeddings.weight),
        (ours.embed_norm.weight, base.blocks[0].pre_ln.weight),
        (ours.embed_norm.bias, base.blocks[0].pre_ln.bias),
        (ours.decoder.final_norm.weight, base.ln_out.weight),
        (ours.decoder.final_norm.bias, base.ln_out.bias),
        (ours.head.lm_head.weight, theirs.head.weight),
    ]
    for mine, block in zip(ours.decoder.layers, base.blocks, strict=True):
        att, ff, tm, cm = block.attention, block.feed_forward, mine.attn.sublayer, mine.mlp.sublayer
        for norm, theirs_norm in ((mine.attn.before, block.ln1), (mine.mlp.before, block.ln2)):
            pairs += [(norm.weight, theirs_norm.weight), (norm.bias, theirs_norm.bias)]
        pairs += [(tm.time_decay, att.time_decay), (tm.time_first, att.time_first)]
        for part in ("key", "value", "receptance"):
            pairs += [(getattr(tm, f"mix_{part}"), getattr(att, f"time_mix_{part}").flatten())]
            pairs += [(getattr(tm, part).weight, getattr(att, part).weight)]
        pairs += [(tm.output.weight, att.output.weight)]
        pairs += [(cm.mix_key, ff.time_mix_key.flatten())]
        pairs += [(cm.mix_receptance, ff.time_mix_receptance.flatten())]
        pairs += [(cm.up.weight, ff.key.weight), (cm.down.weight, ff.value.weight)]
        pairs += [(cm.receptance.weight, ff.receptance.weight)]
    with torch.no_grad():
        for mine, reference in pairs:
            mine.copy_(reference)


@pytest.mark.parametrize("width", [64, 48])
def test_parameters_equal_transformers_rwkv(width):
    """Also with a time-mixing width other than d_model (attention_hidden_size), which
    transformers counts though its forward pass needs the two equal."""
    arch = make_arch(**(RWKV_LIKE | {"mixers": {"rwkv": {"width": width, "mlp": True}}}))
    with torch.device("meta"):
        theirs = transformers.RwkvForCausalLM(_config(width))
    expected = sum(p.numel() for p in theirs.parameters())
    assert plan_params(make_plan(arch)).total == expected
    assert count_parameters(build_model(arch, device="meta")) == expected


def test_logits_equal_transformers_rwkv():
    torch.manual_seed(0)
    theirs = transformers.RwkvForCausalLM(_config()).eval()
    with torch.no_grad():  # decays and bonuses off their initial values
        for p in theirs.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours = build_model(make_arch(**RWKV_LIKE)).eval()
    _copy_weights(ours, theirs)
    tokens = torch.randint(0, 128, (2, 20))
    with torch.no_grad():
        expected = theirs(tokens).logits
        got = ours(tokens)
    assert (got - expected).abs().max() / expected.abs().max() < 1e-5


def test_rwkv_reads_only_earlier_tokens():
    torch.manual_seed(0)
    model = build_model(make_arch(**RWKV_LIKE)).eval()
    tokens = torch.randint(0, 128, (1, 10))
    changed = tokens.clone()
    changed[0, 6] = (tokens[0, 6] + 1) % 128
    with torch.no_grad():
        moved = (model(tokens) - model(changed)).abs().amax(-1)[0] > 1e-6
    assert moved.tolist() == [i >= 6 for i in range(10)]


def test_fvcore_counts_what_the_formula_counts():
    arch = make_arch(**RWKV_LIKE)
    counted = measure_flops(build_model(arch), 16)
    formula = plan_flops(make_plan(arch), 16)
    assert counted.total == sum(formula.dense.values())
    for cls, n in formula.dense.items():
        assert counted.by_class[cls] == n, cls


def test_the_state_is_the_wkv_triple_and_both_previous_tokens():
    """Per layer: numerator, denominator and maximum per channel of the width, and the
    previous token's input to the time mixing and to the channel mixing."""
    plan = make_plan(make_arch(**RWKV_LIKE))
    assert plan.decoder.cache_entries(10) == plan.decoder.cache_entries(100_000)
    assert plan.decoder.cache_entries(10) == 3 * (3 * 64 + 64 + 64)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mlp": {"activation": "swiglu", "d_ff": 96, "moe": None, "channel_mix": True}},
         "mlp.channel_mix is a dense, non-gated MLP"),
        ({"mixers": None}, "rwkv"),
    ],
)  # fmt: skip
def test_rwkv_fields_are_refused_where_they_mean_nothing(changes, message):
    with pytest.raises(ValueError, match=message):
        make_arch(**(RWKV_LIKE | changes))
