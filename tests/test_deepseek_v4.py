"""DeepSeek-V4 (attention.variant compressed, hyper_connections, hash-routed experts):
parameter counts equal transformers' DeepseekV4ForCausalLM on the meta device, for a toy
and for the released sizes; the toy's logits equal transformers' with the same weights; the
schema refuses what the builder cannot build."""

from __future__ import annotations

import copy

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.measure.analytic import cache_size, param_count
from archdb.parts.compressed import visible_entries
from archdb.plan.layout import BuildError
from archdb_hf.families.deepseek import DEEPSEEK_V4
from tests.conftest import V4_ATTENTION, V4_LAYER, make_arch, shipped_catalogue

transformers = pytest.importorskip("transformers")


def _hf_model(arch, device: str | None = None):
    config = transformers.DeepseekV4Config(**DEEPSEEK_V4.write(arch))
    config._attn_implementation = "eager"
    with torch.device(device or "cpu"):
        return transformers.DeepseekV4ForCausalLM(config)


def _hf_params(arch) -> int:
    return sum(p.numel() for p in _hf_model(arch, "meta").parameters())


def test_toy_counts_transformers_parameters():
    arch = make_arch(**V4_LAYER)
    assert param_count(arch).total == _hf_params(arch) == 272_747


@pytest.mark.parametrize(
    ("card_id", "total"),
    [("deepseek-v4-flash", 284_332_230_231), ("deepseek-v4-pro", 1_572_997_179_491)],
)
def test_released_sizes_count_transformers_parameters(card_id, total):
    """The cards' full sizes, built by transformers from the config the card writes back."""
    card = shipped_catalogue().get(card_id)
    assert param_count(card.architecture).total == _hf_params(card.architecture) == total


# --- the same weights, the same logits -----------------------------------------------------

RENAMED = {
    "embed.table.": "model.embed_tokens.",
    "head.lm_head.": "lm_head.",
    "decoder.final_norm.": "model.norm.",
    "decoder.streams.fn": "model.hc_head.hc_fn",
    "decoder.streams.base": "model.hc_head.hc_base",
    "decoder.streams.scale": "model.hc_head.hc_scale",
    "decoder.layers.": "model.layers.",
    ".attn.indexer.weights_proj.": ".self_attn.compressor.indexer.scorer.weights_proj.",
    ".attn.indexer.compressor.": ".self_attn.compressor.indexer.",
    ".attn.indexer.": ".self_attn.compressor.indexer.",
    ".attn.": ".self_attn.",
    ".attn_norm.": ".input_layernorm.",
    ".mlp_norm.": ".post_attention_layernorm.",
    ".mlp_hc.": ".ffn_hc.",
    ".mlp.router.proj.": ".mlp.gate.",
    ".mlp.router.correction_bias": ".mlp.gate.e_score_correction_bias",
    ".mlp.router.table": ".mlp.gate.tid2eid",
    ".mlp.shared.gate.": ".mlp.shared_experts.gate_proj.",
    ".mlp.shared.up.": ".mlp.shared_experts.up_proj.",
    ".mlp.shared.down.": ".mlp.shared_experts.down_proj.",
}


def _their_name(ours: str) -> str:
    for a, b in RENAMED.items():
        ours = ours.replace(a, b, 1)
    return ours


def _load_transformers_weights(model, hf) -> None:
    """Every archdb tensor from transformers' state dict: renamed, experts unfused."""
    theirs = hf.state_dict()
    loaded = set()
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if ".mlp.experts." in name:
                prefix, part = name.rsplit(".mlp.experts.", 1)
                base = _their_name(prefix) + ".mlp.experts."
                gate, up = theirs[base + "gate_up_proj"].chunk(2, dim=1)  # (E, ff, d) each
                source = {
                    "gate": gate.transpose(1, 2),
                    "up": up.transpose(1, 2),
                    "down": theirs[base + "down_proj"].transpose(1, 2),
                }[part]
                loaded.add(base + ("down_proj" if part == "down" else "gate_up_proj"))
            else:
                loaded.add(_their_name(name))
                source = theirs[_their_name(name)]
            tensor.copy_(source)
    assert loaded == set(theirs), set(theirs) - loaded  # nothing left at its initial value


def test_toy_logits_equal_transformers():
    """Random weights everywhere (the slot biases, sinks and mHC terms included, a random
    token -> experts table): 40 tokens read 10 CSA entries (top 3) and 5 HCA entries."""
    arch = make_arch(**V4_LAYER)
    torch.manual_seed(0)
    hf = _hf_model(arch).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            p.copy_(torch.randn_like(p) * (0.5 if name.endswith("scale") else 0.1))
        for name, b in hf.named_buffers():
            if name.endswith("tid2eid"):
                b.copy_(torch.randint(0, 8, b.shape))
            elif name.endswith("e_score_correction_bias"):
                b.copy_(torch.randn_like(b) * 0.1)
    model = build_model(arch).eval()
    _load_transformers_weights(model, hf)
    tokens = torch.randint(0, arch.vocab_size, (2, 40))
    with torch.no_grad():
        expected = hf(tokens).logits
        got = model(tokens)
    assert expected.abs().max() > 0.1
    assert torch.allclose(got, expected, atol=1e-5, rtol=0), (got - expected).abs().max()


# --- the attention -------------------------------------------------------------------------


def test_a_query_reads_an_entry_only_once_its_window_has_closed():
    """Query i reads (i + 1) // ratio entries, at most top_k of them in a CSA layer."""
    assert [visible_entries(t, 4, None) for t in (3, 4, 8)] == [0, 1, 6]  # 0 0 0 1; + 1 1 1 2
    assert visible_entries(40, 4, 3) == sum(min((i + 1) // 4, 3) for i in range(40))


def test_cache_holds_the_window_and_every_entry():
    """Per layer: one key=value head over the window; CSA entries (and the indexer's) every
    4 tokens, HCA entries every 8, for the whole context."""
    arch = make_arch(**V4_ATTENTION)
    context, hd = 64, 32
    window = 8 * hd
    entries = (context // 4) * (hd + 16) + (context // 8) * hd
    assert cache_size(arch, context, 1).total == 3 * window + entries


def test_the_toy_is_causal_and_its_hash_layer_routes_by_token():
    arch = make_arch(**V4_LAYER)
    torch.manual_seed(0)
    model = build_model(arch).eval()
    tokens = torch.randint(0, arch.vocab_size, (1, 30))
    changed = tokens.clone()
    changed[0, -1] = (changed[0, -1] + 1) % arch.vocab_size
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert torch.equal(a[:, :-1], b[:, :-1]) and not torch.equal(a[:, -1], b[:, -1])
    router = model.decoder.layers[0].mlp.router
    assert type(router).__name__ == "HashRouter" and router.table.shape == (128, 2)
    assert type(model.decoder.layers[1].mlp.router).__name__ == "Router"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attention.sliding_window": None}, "sliding_window"),
        ({"attention.sparse": None}, "attention.sparse .the indexer. is required"),
        ({"attention.n_kv_heads": 2}, "one shared key=value head"),
        ({"attention.compressed": None}, "attention.compressed is required"),
        ({"attention.layer_pattern": ["global", "local"]}, "takes local, compressed-sparse"),
        ({"attention.compressed.output_groups": 3}, r"output_groups \(3\) must divide"),
        ({"attention.variant": "softmax"}, "attention.compressed is required"),
    ],
)
def test_the_schema_refuses_an_impossible_v4_attention(changes, message):
    with pytest.raises(ValidationError, match=message):  # a copy: changes reach into dicts
        make_arch(**copy.deepcopy(V4_ATTENTION) | changes)


def test_hyper_connections_need_compressed_attention():
    with pytest.raises(BuildError, match="hyper_connections outside"):
        param_count(make_arch(hyper_connections={"n_streams": 2, "sinkhorn_iters": 3, "eps": 1e-6}))


# --- import-hf ----------------------------------------------------------------------------

RATIOS = {
    "sliding_attention": 0,
    "compressed_sparse_attention": 4,
    "heavily_compressed_attention": 128,
}


def _released_style(config: dict) -> dict:
    """A config as DeepSeek released V4's: compress_ratios (one entry more, the MTP layer's),
    num_hash_layers, rope_scaling and qk_rope_head_dim in place of transformers' spellings."""
    out = dict(config, model_type="deepseek_v4", architectures=["DeepseekV4ForCausalLM"])
    out["compress_ratios"] = [RATIOS[t] for t in out.pop("layer_types")] + [0]
    out["num_hash_layers"] = out.pop("mlp_layer_types").count("hash_moe")
    out["rope_scaling"] = {"type": "yarn", **out.pop("rope_parameters")}
    del out["rope_scaling"]["rope_type"]
    out["qk_rope_head_dim"] = round(out.pop("partial_rotary_factor") * out["head_dim"])
    out["num_nextn_predict_layers"] = 1
    return out


@pytest.mark.parametrize("card_id", ["deepseek-v4-flash", "deepseek-v4-pro"])
def test_a_released_style_config_imports_to_the_card(card_id):
    from archdb.writer import validate_card
    from archdb_hf.draft import Identity
    from archdb_hf.importer import import_config

    card = shipped_catalogue().get(card_id)
    config = _released_style(DEEPSEEK_V4.write(card.architecture))
    identity = Identity("deepseek-v4-x", "V4", "deepseek-v4", "DeepSeek-AI", "2026-04-24")
    result = import_config(config, source_url="https://huggingface.co/o/m", identity=identity)
    imported = validate_card(result.card).architecture
    assert imported == card.architecture
    assert "mtp" in " ".join(result.card["notes"])  # the MTP layer: said, not recorded


def test_hash_layers_must_open_the_model():
    from archdb_hf.draft import HFImportError, Identity
    from archdb_hf.importer import import_config

    card = shipped_catalogue().get("deepseek-v4-flash")
    config = DEEPSEEK_V4.write(card.architecture) | {"model_type": "deepseek_v4"}
    assert config["mlp_layer_types"][:2] == ["hash_moe", "hash_moe"]
    config["mlp_layer_types"] = ["moe", *config["mlp_layer_types"][1:]]
    identity = Identity("deepseek-v4-x", "V4", "deepseek-v4", "DeepSeek-AI", "2026-04-24")
    with pytest.raises(HFImportError, match="not hash_moe layers then moe layers"):
        import_config(config, source_url="https://huggingface.co/o/m", identity=identity)


def test_a_decode_step_reads_the_window_and_the_entries():
    """One query at 64 tokens, 512 FLOPs a key (4 heads, q.k and AV of 32): the local
    layer its 8-token window; the CSA layer its window and 3 of 16 entries, after the
    indexer scored all 16 (2 heads: 2 x 16 + 4 each); the HCA layer its window and 8."""
    from archdb.measure.crossover import Mode, card_crossover
    from archdb.measure.decode import attention_decode_flops

    arch = make_arch(**V4_ATTENTION)
    per_key = 512
    local, csa, hca = per_key * 8, per_key * (8 + 3) + 16 * 2 * 36, per_key * (8 + 8)
    assert attention_decode_flops(arch, 64) == local + csa + hca
    # the entries grow with the context, so attention overtakes the MLP even with windows
    card = shipped_catalogue().get("deepseek-v4-flash")
    assert card_crossover(card).contexts[Mode.WINDOWED.value] is not None
