"""Weight-shared transformer blocks (Zamba2): the schema refuses what cannot be built, the
plan counts each block's weights once and every invocation's FLOPs and K/V cache, the
built model equals the formulas, and the toy keeps a reused block. (Counts against
transformers: tests/test_params_vs_hf.py; imports and logits: test_hf_import.py,
test_fidelity.py.)"""

from __future__ import annotations

import copy

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model, count_parameters
from archdb.builder.shrink import shrink
from archdb.measure.analytic import flops, param_count
from archdb.measure.flops import measure_flops
from archdb.plan import make_plan
from archdb.plan.layout import BuildError
from archdb.plan.plan import cache_bytes
from tests.conftest import make_arch, mamba2_dims

# Zamba2's layout at toy size: Mamba-2 layers, two blocks over [x, embeddings] (heads
# 2 d_model / n_heads wide) invoked before layers 1, 3, 5 (blocks A, B, A), adapters on
# q, k, v and the gate/up projection, a projection per invocation.
SHARED = {
    "n_layers": 6,
    "tied_embeddings": True,
    "attention.layer_pattern": ["mamba2"],
    "attention.n_heads": 4,
    "attention.n_kv_heads": 4,
    "attention.head_dim": 32,
    "attention.scale": 0.25,
    "mlp.activation": "geglu",
    "mixers": {"mamba2": mamba2_dims(time_step_floor=0.001)},
    "shared_blocks": {
        "n_blocks": 2,
        "layers": [1, 3, 5],
        "concat_embeddings": True,
        "adapter_rank": 4,
        "mlp_adapters": True,
        "attention_adapters": True,
        "output_projection": True,
    },
}


def _arch(**blocks):
    changes = copy.deepcopy(SHARED)
    changes["shared_blocks"] |= blocks
    return make_arch(**changes)


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ({"layers": [1, 6]}, "beyond n_layers"),
        ({"layers": [3, 1]}, "strictly increasing"),
        ({"n_blocks": 4}, "would never run"),
        ({"adapter_rank": None}, "adapter_rank is required"),
        ({"mlp_adapters": False, "attention_adapters": False}, "adapter_rank is required"),
    ],
)
def test_schema_refuses_inconsistent_shared_blocks(blocks, message):
    with pytest.raises(ValidationError, match=message):
        _arch(**blocks)


def test_attention_adapters_need_the_input_width_in_and_out():
    with pytest.raises(ValidationError, match="n_kv_heads = n_heads"):
        make_arch(**{**SHARED, "attention.n_kv_heads": 2})
    with pytest.raises(ValidationError, match="gated activation"):
        make_arch(**{**SHARED, "mlp.activation": "gelu"})


def test_unsupported_combinations_are_build_errors():
    arch = make_arch(**{**SHARED, "norm.position": "post"})
    with pytest.raises(BuildError, match="not pre-norm"):
        make_plan(arch)


def test_parameters_count_shared_weights_once_and_invocations_each():
    plan = make_plan(_arch()).decoder.shared
    block, invocation = plan.block.params(), plan.invocation.params()
    assert plan.params() == 2 * block + 3 * invocation
    more = param_count(_arch(layers=[1, 3, 4, 5])).total - param_count(_arch()).total
    assert more == invocation  # a fourth invocation reuses block B: only its own parameters
    d, r, ff = 64, 4, 128
    assert invocation == 3 * (2 * d * r + r * 2 * d) + (d * r + r * 2 * ff) + d * d


def test_built_model_shares_the_blocks_and_equals_the_formulas():
    arch = _arch()
    model = build_model(arch)
    shared = model.decoder.shared
    assert len(shared.blocks) == 2 and len(shared.invocations) == 3
    assert count_parameters(model) == param_count(arch).total
    measured = measure_flops(model, 12)
    assert measured.by_class == {k: v for k, v in flops(arch, 12).dense.items()}
    # every invocation counts: a fourth adds one block's and one invocation's FLOPs
    one = flops(_arch(layers=[1, 3, 4, 5]), 12)
    assert sum(one.dense.values()) > sum(flops(arch, 12).dense.values())


def test_the_same_weights_run_at_every_invocation_of_a_block():
    """Zeroing block A's MLP down-projection changes the output of invocations 0 and 2 and
    not of invocation 1 (block B)."""
    torch.manual_seed(0)
    model = build_model(_arch()).eval()
    shared = model.decoder.shared
    x, emb = torch.randn(1, 5, 64), torch.randn(1, 5, 64)
    before = [shared(i, x, emb) for i in range(3)]
    with torch.no_grad():
        shared.blocks[0].mlp.down.weight.zero_()
    after = [shared(i, x, emb) for i in range(3)]
    assert torch.allclose(before[1], after[1])
    assert not torch.allclose(before[0], after[0]) and not torch.allclose(before[2], after[2])


def test_each_invocation_caches_its_own_keys_and_values():
    plan = make_plan(_arch())
    without = make_plan(make_arch(**{**SHARED, "shared_blocks": None, "tied_embeddings": True}))
    per_invocation = 2 * 4 * 32 * 100  # K and V, 4 heads of 32, 100 tokens
    assert cache_bytes(plan, 100, 2) - cache_bytes(without, 100, 2) == 3 * per_invocation * 2


def test_the_shared_blocks_join_the_layer_input_not_its_residual():
    """With the Mamba-2 mixer's output projection zeroed, each layer is the identity on its
    residual stream whatever the shared blocks add to its input."""
    torch.manual_seed(0)
    model = build_model(_arch()).eval()
    with torch.no_grad():
        for layer in model.decoder.layers:
            layer.attn.sublayer.out_proj.weight.zero_()
        x = torch.randn(1, 5, 64)
        assert torch.equal(model.decoder.final_norm(x), model.decoder(x))


def test_toy_keeps_every_block_and_reuses_one():
    nine = _arch(layers=[0, 1, 2, 3, 4, 5])
    full = make_arch(
        **{**SHARED, "d_model": 2560, "n_layers": 54, "attention.head_dim": 1280,
           "mlp.d_ff": 10240,
           "mixers": {"mamba2": mamba2_dims(n_heads=80, head_dim=64, time_step_floor=0.001)},
           "shared_blocks": {**SHARED["shared_blocks"], "adapter_rank": 128,
                             "layers": [6, 12, 18, 24, 30, 36, 42, 47, 51]}}
    )  # fmt: skip
    toy = shrink(full).arch
    sb = toy.shared_blocks
    assert (sb.n_blocks, sb.layers, toy.n_layers) == (2, [1, 3, 5], 6)
    assert sb.adapter_rank == round(128 * toy.d_model / 2560) or sb.adapter_rank == 2
    assert toy.attention.n_heads * toy.head_dim_effective == 2 * toy.d_model
    assert shrink(nine).arch.shared_blocks.layers == [1, 3, 5]
    model = build_model(toy)
    assert model(torch.randint(0, 256, (1, 8))).shape == (1, 8, 256)


# --- import-hf ------------------------------------------------------------------------------


def _import(**changes):
    from archdb_hf.importer import Identity, import_config

    transformers = pytest.importorskip("transformers")
    config = transformers.Zamba2Config(**changes).to_dict() | {"model_type": "zamba2"}
    identity = Identity("zamba2-x", "Zamba2 X", "zamba2", "Zyphra", "2024-11-22")
    url = "https://huggingface.co/Zyphra/x/blob/main/config.json"
    return import_config(config, source_url=url, identity=identity)


def test_import_reads_the_hybrid_layers_blocks_and_adapters():
    types = ["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba"]
    card = _import(
        hidden_size=64, num_hidden_layers=6, layers_block_type=types, num_attention_heads=4,
        num_mem_blocks=2, use_shared_attention_adapter=True, adapter_rank=8, use_mem_rope=True,
        n_mamba_heads=4, time_step_min=0.01,
    ).card["architecture"]  # fmt: skip
    assert card["shared_blocks"] == {
        "n_blocks": 2,
        "layers": [1, 3, 4],
        "concat_embeddings": True,
        "adapter_rank": 8,
        "mlp_adapters": True,
        "attention_adapters": True,
        "output_projection": True,
    }
    att = card["attention"]
    assert (att["head_dim"], att["scale"]) == (32, 16**-0.5)  # 2 d / heads; (hd / 2)^-0.5
    assert card["position"]["type"] == "rope"
    assert card["mixers"]["mamba2"]["time_step_floor"] == 0.01
    assert card["mixers"]["mamba2"]["head_dim"] == 32  # 2 x 64 / 4 heads


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tie_word_embeddings": False}, "untied"),
        ({"rms_norm_eps": 1e-6}, "keeps 1e-5"),
        ({"num_hidden_layers": 2, "layers_block_type": ["mamba", "mamba"]}, "no hybrid layer"),
        ({"num_hidden_layers": 2, "layers_block_type": ["mamba", "attention"]}, "mamba or hybrid"),
    ],
)
def test_import_refuses_what_the_schema_cannot_hold(changes, message):
    from archdb_hf.importer import HFImportError

    with pytest.raises(HFImportError, match=message):
        _import(**changes)


def test_decode_and_crossover_count_every_invocations_attention():
    """Decoding attends at each invocation (3 here) and multiplies a block's weights each
    time it runs; the crossover compares the invocations' attention with their MLP."""
    from archdb.measure.crossover import Mode, crossover_context
    from archdb.measure.decode import attention_decode_flops, decode_traffic
    from tests.conftest import make_card

    arch = _arch()
    per_key = 2 * 4 * (32 + 32)  # 2 h (d_qk + d_v)
    assert attention_decode_flops(arch, 100) == 3 * per_key * 100
    card = make_card("zamba2-toy", architecture=arch.model_dump(mode="json"))
    traffic = decode_traffic(card, context=100)
    block = make_plan(arch).decoder.shared.block.params()
    params = param_count(arch)
    weights = params.active - params.embedding + 128 * 64  # the head in full
    assert traffic.weight_flops == 2 * (weights + block)  # block A runs twice
    mlp = 2 * 64 * 128 * 3  # the gated MLP's three projections, per invocation
    assert crossover_context(arch, Mode.DENSE) == pytest.approx(mlp / per_key)


def test_import_names_the_zyphra_fork_spelling():
    """Zyphra's first Zamba2 configs (transformers_version 4.43.0.dev0) spell layers m/g,
    with keys transformers' Zamba2 does not read: refused by name, not misread."""
    from archdb_hf.importer import HFImportError, Identity, import_config

    transformers = pytest.importorskip("transformers")
    config = transformers.Zamba2Config(num_hidden_layers=2, layers_block_type=["mamba", "hybrid"])
    data = config.to_dict() | {"model_type": "zamba2", "layers_block_type": ["m", "g"]}
    identity = Identity("zamba2-x", "Zamba2 X", "zamba2", "Zyphra", "2024-11-22")
    with pytest.raises(HFImportError, match="Zyphra's transformers fork"):
        import_config(
            data, source_url="https://huggingface.co/x/blob/main/c.json", identity=identity
        )
