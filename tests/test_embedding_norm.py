"""The embedding norm (BLOOM's word_embeddings_layernorm): counted, built and, with ALiBi
over a head count that is not a power of two, equal to transformers' BloomForCausalLM."""

from __future__ import annotations

import pytest
import torch

from archdb.builder.model import build_model, count_parameters
from archdb.measure.analytic import flops, param_count
from archdb.plan import make_plan
from archdb.plan.layout import BuildError
from tests.conftest import make_arch, needs_transformers

pytestmark = needs_transformers

# BLOOM: ALiBi, LayerNorms with bias, biases everywhere, the tanh GELU, a tied head
_BLOOM_CARD = {
    "norm.type": "layernorm",
    "norm.affine": "scale-and-bias",
    "position.type": "alibi",
    "position.rope_theta": None,
    "mlp.activation": "gelu",
    "mlp.gelu_approximation": "tanh",
    "mlp.d_ff": 4 * 48,
    "d_model": 48,
    "attention.n_heads": 6,  # not a power of two: ALiBi's interleaved slopes
    "attention.n_kv_heads": 6,
    "bias.qkv": True,
    "bias.attn_out": True,
    "bias.mlp": True,
    "tied_embeddings": True,
    "embedding_norm": True,
}


def test_the_embedding_norm_is_one_norm_of_d_model_before_the_first_block():
    plain = make_arch(**{**_BLOOM_CARD, "embedding_norm": None})
    normed = make_arch(**_BLOOM_CARD)
    assert param_count(normed).total - param_count(plain).total == 2 * 48  # weight, bias
    assert count_parameters(build_model(normed, device="meta")) == param_count(normed).total
    extra = sum(flops(normed, 16).dense.values()) - sum(flops(plain, 16).dense.values())
    assert extra > 0
    with pytest.raises(BuildError, match="embedding_norm in an encoder-decoder model"):
        make_plan(make_arch(**{"kind": "encoder-decoder", "n_encoder_layers": 2,
                               "embedding_norm": True}))  # fmt: skip


def test_a_bloom_equals_transformers_bloom():
    from transformers import BloomConfig, BloomForCausalLM

    torch.manual_seed(0)
    config = BloomConfig(vocab_size=128, hidden_size=48, n_layer=2, n_head=6)
    reference = BloomForCausalLM(config).eval()
    model = build_model(make_arch(**_BLOOM_CARD)).eval()
    theirs, ours = dict(reference.named_parameters()), dict(model.named_parameters())
    heads, hd = 6, 8
    with torch.no_grad():
        for p in theirs.values():
            p.add_(torch.randn_like(p) * 0.1)
        ours["embed.table.weight"].copy_(theirs["transformer.word_embeddings.weight"])
        for t in ("weight", "bias"):
            ours[f"embed_norm.{t}"].copy_(theirs[f"transformer.word_embeddings_layernorm.{t}"])
            ours[f"decoder.final_norm.{t}"].copy_(theirs[f"transformer.ln_f.{t}"])
        for i in range(2):
            block, layer = f"transformer.h.{i}.", f"decoder.layers.{i}."
            for t in ("weight", "bias"):
                fused = theirs[block + f"self_attention.query_key_value.{t}"]
                per_head = fused.reshape(heads, 3, hd, *fused.shape[1:])  # [q, k, v] per head
                for j, name in enumerate("qkv"):
                    part = per_head[:, j].reshape(heads * hd, *fused.shape[1:])
                    ours[f"{layer}attn.sublayer.{name}.{t}"].copy_(part)
                pairs = {
                    "attn.sublayer.o": "self_attention.dense",
                    "attn.before": "input_layernorm",
                    "mlp.before": "post_attention_layernorm",
                    "mlp.sublayer.up": "mlp.dense_h_to_4h",
                    "mlp.sublayer.down": "mlp.dense_4h_to_h",
                }
                for mine, bloom in pairs.items():
                    ours[f"{layer}{mine}.{t}"].copy_(theirs[f"{block}{bloom}.{t}"])
    assert count_parameters(model) == sum(p.numel() for p in theirs.values())
    tokens = torch.randint(0, 128, (2, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(tokens).logits
        got = model(tokens)
        model.embed_norm = None  # the norm is not decoration
        without = model(tokens)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(without, expected, rtol=1e-3, atol=1e-3)
