"""DeepSeek Sparse Attention (DSA): the lightning indexer's selection, its counts against
transformers' DeepseekV32Indexer, its FLOPs and cache, import-hf of deepseek_v32 and
glm_moe_dsa, and the schema's refusals."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.measure.analytic import cache_size, flops
from archdb.plan import make_plan
from archdb.plan.layout import BuildError, check_buildable
from archdb_hf.importer import HFImportError, Identity, import_config
from tests.conftest import DSA, hf_import_count, latent_dims, make_arch, moe_block

MLA = {
    "attention.variant": "latent",
    "attention.n_kv_heads": 4,
    "attention.latent": latent_dims(q_lora_rank=24),
}
SPARSE = MLA | {"attention.sparse": DSA}  # 2 indexer heads of 16, top 8


def _mixer(arch):
    return make_plan(arch).decoder.blocks[0].mixer


def _attention_module(model):
    return next(m for m in model.modules() if type(m).__name__ == "LatentAttention")


def test_indexer_parameters_equal_transformers_indexer():
    pytest.importorskip("transformers")
    from transformers import DeepseekV32Config
    from transformers.models.deepseek_v32.modeling_deepseek_v32 import DeepseekV32Indexer

    config = DeepseekV32Config(
        hidden_size=64,
        q_lora_rank=24,
        qk_rope_head_dim=8,
        index_n_heads=2,
        index_head_dim=16,
        index_topk=8,
    )
    with torch.device("meta"):
        reference = DeepseekV32Indexer(config, 0)
    ours = _mixer(make_arch(**SPARSE)).indexer
    # wq_b, wk, k_norm (a LayerNorm: scale and bias), weights_proj
    expected = 24 * 32 + 64 * 16 + 2 * 16 + 64 * 2
    assert ours.params() == sum(p.numel() for p in reference.parameters()) == expected


def test_each_query_reads_at_most_top_k_previous_keys():
    torch.manual_seed(0)
    model = build_model(make_arch(**SPARSE)).eval()
    attention = _attention_module(model)
    x = torch.randn(1, 20, 64)
    q_latent = attention.q[1](attention.q[0](x))
    selected = attention.indexer(x, q_latent)[0, 0]  # (Tq, Tk)
    counts = selected.sum(-1).tolist()
    assert counts == [min(8, i + 1) for i in range(20)]
    assert not selected.triu(1).any()  # never a future key
    # the kept keys are the best index scores among the previous tokens
    scores = attention.indexer.scores(x, q_latent)[0]
    for i in range(8, 20):
        kept = scores[i, : i + 1][selected[i, : i + 1]]
        dropped = scores[i, : i + 1][~selected[i, : i + 1]]
        assert kept.min() >= dropped.max()


def test_a_key_outside_the_selection_does_not_change_the_output():
    torch.manual_seed(0)
    model = build_model(make_arch(**SPARSE)).eval()
    attention = _attention_module(model)
    x = torch.randn(1, 20, 64)
    selected = attention.indexer(x, attention.q[1](attention.q[0](x)))[0, 0]
    dropped = int((~selected[19, :19]).nonzero()[0])
    calls = []
    handle = attention.kernel.register_forward_hook(lambda m, args, out: calls.append(args))
    attention(x)
    handle.remove()
    q, k, v, *_ = calls[0]
    moved_v = v.clone()
    moved_v[:, :, dropped] += 100.0  # only a query that reads this key can change
    out = attention.kernel(q, k, v, None, selected=selected.view(1, 1, 20, 20))
    moved = attention.kernel(q, k, moved_v, None, selected=selected.view(1, 1, 20, 20))
    assert torch.equal(out[:, :, 19], moved[:, :, 19])
    assert not torch.equal(out[:, :, dropped], moved[:, :, dropped])  # it reads itself


def test_top_k_above_the_sequence_is_dense_latent_attention():
    torch.manual_seed(0)
    dense = build_model(make_arch(**MLA)).eval()
    sparse = build_model(make_arch(**MLA | {"attention.sparse": DSA | {"top_k": 64}})).eval()
    missing, unexpected = sparse.load_state_dict(dense.state_dict(), strict=False)
    assert not unexpected and all(".indexer." in name for name in missing)
    tokens = torch.randint(0, 128, (1, 24))
    assert torch.allclose(dense(tokens), sparse(tokens), atol=1e-6)


def test_flops_count_the_indexer_over_previous_tokens_and_attention_over_top_k():
    t, k, h = 40, 8, 4
    base, dsa = flops(make_arch(**MLA), t), flops(make_arch(**SPARSE), t)
    useful = k * (k + 1) // 2 + (t - k) * k  # attention keys: min(top_k, i + 1) per query
    attention_per_score = h * 2 * (24 + 16)  # QK^T (nope 16 + rope 8) and AV (v 16)
    softmax = h * 5
    causal = t * (t + 1) // 2
    indexer_per_score = 2 * (2 * 16 + 2 + 2)  # heads x (q.k, scale, relu, weighted sum)
    saved = (causal - useful) * (attention_per_score + softmax)
    assert (
        sum(base.causal.values()) - sum(dsa.causal.values())
        == (saved - causal * indexer_per_score - _indexer_token_flops(t)) * 2
    )  # two layers
    # the dense (masked) figure computes every score, as the toy does
    assert sum(dsa.dense.values()) - sum(base.dense.values()) == 2 * (
        t * t * indexer_per_score + _indexer_token_flops(t)
    )


def _indexer_token_flops(t: int) -> int:
    q = 2 * 24 * 32  # wq_b
    key = 2 * 64 * 16 + 16 * 7  # wk, LayerNorm with scale and bias
    rope = 3 * 8 * 3  # two query heads and the key, 8 rotated dims
    weights = 2 * 64 * 2 + 2  # weights_proj, times 1/sqrt(heads)
    return t * (q + key + rope + weights)


def test_cache_holds_the_indexer_key_beside_the_latent():
    per_token = cache_size(make_arch(**SPARSE), context=64, bytes_per_element=2).per_token
    assert per_token == 2 * (16 + 8 + 16) * 2  # layers x (latent + rope key + indexer key)


def test_schema_refuses_dsa_without_a_query_latent_or_with_too_narrow_an_indexer():
    with pytest.raises(ValidationError, match="q_lora_rank"):
        make_arch(**MLA | {"attention.latent": latent_dims(), "attention.sparse": DSA})
    with pytest.raises(ValidationError, match="q_lora_rank"):
        make_arch(**{"attention.sparse": DSA})  # softmax attention has no query latent
    with pytest.raises(ValidationError, match=r"indexer_head_dim \(4\) is below"):
        make_arch(**MLA | {"attention.sparse": DSA | {"indexer_head_dim": 4}})
    with pytest.raises(BuildError, match="sparse attention"):
        check_buildable(
            make_arch(
                **SPARSE
                | {"attention.layer_pattern": ["local", "global"], "attention.sliding_window": 8}
            )
        )


@pytest.mark.parametrize("model_type", ["deepseek_v32", "glm_moe_dsa"])
def test_small_dsa_configs_import_to_transformers_count(model_type):
    pytest.importorskip("transformers")
    sizes = dict(
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=4,
        intermediate_size=128,
        moe_intermediate_size=32,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_group=1,
        topk_group=1,
        first_k_dense_replace=1,
        kv_lora_rank=16,
        q_lora_rank=24,
        qk_rope_head_dim=8,
        qk_nope_head_dim=16,
        v_head_dim=16,
        index_n_heads=2,
        index_head_dim=32,
        index_topk=8,
        vocab_size=256,
    )
    ours, theirs, card = hf_import_count(model_type, **sizes)
    assert ours == theirs
    sparse = card.architecture.attention.sparse
    assert (sparse.indexer_heads, sparse.indexer_head_dim, sparse.top_k) == (2, 32, 8)
    layout = "interleaved" if model_type == "glm_moe_dsa" else "half-split"
    assert sparse.indexer_rope_layout == layout  # what each family's indexer code does


def _import(config: dict):
    identity = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2025-01-01")
    url = "https://huggingface.co/org/model/blob/main/config.json"
    return import_config(config, source_url=url, identity=identity)


def test_shared_indexer_layers_and_odd_mlp_layers_are_refused():
    pytest.importorskip("transformers")
    from transformers import GlmMoeDsaConfig

    config = GlmMoeDsaConfig(num_hidden_layers=4).to_dict() | {"model_type": "glm_moe_dsa"}
    assert _import(config).card["architecture"]["attention"]["sparse"]["top_k"] == 2048
    shared = config | {"indexer_types": ["full", "shared", "full", "shared"]}
    with pytest.raises(HFImportError, match="shares indexer top-k across layers"):
        _import(shared)
    with pytest.raises(HFImportError, match="shares indexer top-k"):
        _import({k: v for k, v in config.items() if k != "indexer_types"} | {"index_topk_freq": 2})
    odd = config | {"mlp_layer_types": ["dense", "sparse", "dense", "sparse"]}
    with pytest.raises(HFImportError, match="mlp_layer_types"):
        _import(odd)


def test_toy_keeps_selection_below_the_toy_context():
    from archdb.builder.shrink import shrink

    full = make_arch(
        **MLA
        | {
            "d_model": 512,
            "attention.latent": latent_dims(q_lora_rank=192, qk_rope_head_dim=64),
            "attention.sparse": {"indexer_heads": 64, "indexer_head_dim": 128, "top_k": 2048},
            "mlp.moe": moe_block(),
        }
    )
    toy = shrink(full).arch
    sparse = toy.attention.sparse
    assert sparse.top_k == 16 and sparse.indexer_heads == 4
    assert sparse.indexer_head_dim == 2 * toy.attention.latent.qk_rope_head_dim
