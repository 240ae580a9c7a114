"""Encoder-only models (BERT, RoBERTa): the plan, the built model, exact parameters against
transformers' masked-LM models, their logits, FLOPs, and the cards' errors."""

from __future__ import annotations

import copy
import re

import pytest
import torch
import transformers

from archdb.builder.model import build_model, count_parameters
from archdb.measure.analytic import derived_figures
from archdb.plan import flops as plan_flops
from archdb.plan import make_plan
from archdb.plan import params as plan_params
from tests.conftest import make_arch, make_card

# a tiny BERT, as the card states it
BERT_LIKE = {
    "kind": "encoder-only",
    "d_model": 64,
    "n_layers": 2,
    "vocab_size": 128,
    "context_length": 32,
    "norm": {"type": "layernorm", "position": "post", "affine": "scale-and-bias",
             "final": False, "eps": 1e-12},
    "attention.n_kv_heads": 4,
    "position": {"type": "learned", "learned_rows": 32},
    "mlp": {"activation": "gelu", "d_ff": 96, "moe": None, "gelu_approximation": "exact"},
    "bias": {"qkv": True, "attn_out": True, "mlp": True, "lm_head": True},
    "tied_embeddings": True,
    "embedding_norm": True,
    "encoder": {"token_types": 2, "head_transform": "gelu", "pooler": False},
}  # fmt: skip
# RoBERTa: one token type, positions from row padding_idx + 1 = 2
ROBERTA_LIKE = BERT_LIKE | {
    "norm": {**BERT_LIKE["norm"], "eps": 1e-5},
    "position": {"type": "learned", "learned_rows": 34},
    "encoder": {"token_types": 1, "position_offset": 2, "head_transform": "gelu",
                "pooler": False},
}  # fmt: skip


def _config(model_type: str, **extra) -> transformers.PretrainedConfig:
    rows = 34 if model_type == "roberta" else 32
    return transformers.AutoConfig.for_model(
        model_type, vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=96, max_position_embeddings=rows,
        type_vocab_size=1 if model_type == "roberta" else 2,
        layer_norm_eps=1e-5 if model_type == "roberta" else 1e-12, **extra,
    )  # fmt: skip


def _card(model_type: str, **changes):
    base = copy.deepcopy(ROBERTA_LIKE if model_type == "roberta" else BERT_LIKE)
    return make_arch(**(base | changes))


def _copy_weights(ours: torch.nn.Module, theirs: torch.nn.Module, model_type: str) -> None:
    """transformers' masked-LM tensors into the built model, by the two layouts' names."""
    base = getattr(theirs, model_type)
    emb = base.embeddings
    pairs = [
        (ours.embed.table.weight, emb.word_embeddings.weight),
        (ours.positions.table.weight, emb.position_embeddings.weight),
        (ours.token_types.table.weight, emb.token_type_embeddings.weight),
        (ours.embed_norm.weight, emb.LayerNorm.weight),
        (ours.embed_norm.bias, emb.LayerNorm.bias),
    ]
    head = theirs.cls.predictions if model_type == "bert" else theirs.lm_head
    transform = head.transform if model_type == "bert" else head
    dense = transform.dense
    norm = transform.LayerNorm if model_type == "bert" else head.layer_norm
    pairs += [(ours.transform.dense.weight, dense.weight), (ours.transform.dense.bias, dense.bias)]
    pairs += [(ours.transform.norm.weight, norm.weight), (ours.transform.norm.bias, norm.bias)]
    pairs += [(ours.head.lm_head.bias, head.decoder.bias if model_type == "bert" else head.bias)]
    for mine, layer in zip(ours.encoder.layers, base.encoder.layer, strict=True):
        att, sub = layer.attention, mine.attn.sublayer
        q, k, v = att.self.query, att.self.key, att.self.value
        for mine_proj, their_proj in ((sub.q, q), (sub.k, k), (sub.v, v)):
            pairs += [(mine_proj.weight, their_proj.weight), (mine_proj.bias, their_proj.bias)]
        pairs += [(sub.o.weight, att.output.dense.weight), (sub.o.bias, att.output.dense.bias)]
        pairs += [(mine.attn.after.weight, att.output.LayerNorm.weight)]
        pairs += [(mine.attn.after.bias, att.output.LayerNorm.bias)]
        mlp = mine.mlp.sublayer
        pairs += [(mlp.up.weight, layer.intermediate.dense.weight)]
        pairs += [(mlp.up.bias, layer.intermediate.dense.bias)]
        pairs += [(mlp.down.weight, layer.output.dense.weight)]
        pairs += [(mlp.down.bias, layer.output.dense.bias)]
        pairs += [(mine.mlp.after.weight, layer.output.LayerNorm.weight)]
        pairs += [(mine.mlp.after.bias, layer.output.LayerNorm.bias)]
    with torch.no_grad():
        for mine, reference in pairs:
            mine.copy_(reference)


@pytest.mark.parametrize("model_type", ["bert", "roberta"])
def test_parameters_equal_transformers_masked_lm(model_type):
    arch = _card(model_type)
    theirs = transformers.AutoModelForMaskedLM.from_config(_config(model_type))
    expected = sum(p.numel() for p in theirs.parameters())  # the tied decoder counted once
    assert plan_params(make_plan(arch)).total == expected
    assert count_parameters(build_model(arch, device="meta")) == expected


def test_the_pooler_adds_berts_pooler():
    with_pooler = _card("bert", **{"encoder.pooler": True})
    pooler = transformers.models.bert.modeling_bert.BertPooler(_config("bert"))
    added = sum(p.numel() for p in pooler.parameters())
    assert (
        plan_params(make_plan(with_pooler)).total
        == plan_params(make_plan(_card("bert"))).total + added
    )
    model = build_model(with_pooler)
    assert count_parameters(model) == plan_params(make_plan(with_pooler)).total
    assert model.pooler(torch.zeros(1, 3, 64)).shape == (1, 64)


@pytest.mark.parametrize("model_type", ["bert", "roberta"])
def test_logits_equal_transformers_masked_lm(model_type):
    torch.manual_seed(0)
    config = _config(model_type, hidden_act="gelu", attn_implementation="eager")
    theirs = transformers.AutoModelForMaskedLM.from_config(config).eval()
    ours = build_model(_card(model_type)).eval()
    _copy_weights(ours, theirs, model_type)
    tokens = torch.randint(3, 128, (2, 20))  # RoBERTa's padding id (1) would keep its own row
    with torch.no_grad():
        expected = theirs(input_ids=tokens).logits
        got = ours(tokens)
    assert (got - expected).abs().max() / expected.abs().max() < 1e-5


def test_a_tanh_gelu_bert_is_written_gelu_new_and_matches_transformers():
    """Google's BERT code computes the tanh GELU since February 2019: a card stating it is
    written as ACT2FN's gelu_new, which transformers builds, and the logits agree; RoBERTa's
    head keeps the erf GELU, so its cards must too."""
    from archdb_hf.reference import NotRepresentable, convert

    card = _card("bert", **{"mlp.gelu_approximation": "tanh"})
    config = convert(card, "bert")
    assert config["hidden_act"] == "gelu_new"
    assert convert(_card("bert"), "bert")["hidden_act"] == "gelu"
    torch.manual_seed(0)
    built = _config("bert", hidden_act="gelu_new", attn_implementation="eager")
    theirs = transformers.AutoModelForMaskedLM.from_config(built).eval()
    ours = build_model(card).eval()
    _copy_weights(ours, theirs, "bert")
    tokens = torch.randint(3, 128, (2, 20))
    with torch.no_grad():
        expected = theirs(input_ids=tokens).logits
        assert (ours(tokens) - expected).abs().max() / expected.abs().max() < 1e-5
    tanh_roberta = _card("roberta", **{"mlp.gelu_approximation": "tanh"})
    with pytest.raises(NotRepresentable, match="RobertaLMHead's gelu is the erf form"):
        convert(tanh_roberta, "roberta")


def test_every_position_reads_every_other():
    """Bidirectional: changing the last token changes the first position's logits."""
    torch.manual_seed(0)
    model = build_model(_card("bert")).eval()
    tokens = torch.randint(0, 128, (1, 10))
    changed = tokens.clone()
    changed[0, -1] = (tokens[0, -1] + 1) % 128
    with torch.no_grad():
        assert not torch.allclose(model(tokens)[0, 0], model(changed)[0, 0])


def test_an_encoder_card_has_figures_and_no_kv_cache():
    """Its figures are the plan's; an encoder keeps no cache between tokens, so the KV
    figure is not applicable (null), not zero."""
    arch = _card("bert")
    card = make_card("bert-toy", architecture=arch.model_dump(mode="json"))
    figures = derived_figures(card)
    assert figures["params_exact"] == plan_params(make_plan(arch)).total
    assert figures["kv_cache_bytes_per_token"] is None
    seq = figures["flops_seq_len"]
    tally = plan_flops(make_plan(arch), seq)
    assert figures["flops_per_token"] == pytest.approx(sum(tally.dense.values()) / seq)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"encoder": None}, "encoder is required for, and only for, encoder-only"),
        ({"position": {"type": "rope", "rope_theta": 1e4}},
         "encoder.position_offset needs learned positions"),
        ({"encoder.head_transform": "geglu"}, "one activation, not a gated unit"),
    ],
)  # fmt: skip
def test_encoder_fields_are_refused_where_they_mean_nothing(changes, message):
    base = copy.deepcopy(ROBERTA_LIKE if "position" in changes else BERT_LIKE)
    with pytest.raises(ValueError, match=re.escape(message)):
        make_arch(**(base | changes))


def test_a_decoder_cannot_carry_encoder_fields():
    with pytest.raises(ValueError, match="encoder is required for, and only for, encoder-only"):
        make_arch(encoder={"token_types": 2, "head_transform": None, "pooler": False})


@pytest.mark.parametrize(
    ("card_id", "model_type"), [("bert-base", "bert"), ("roberta-base", "roberta")]
)
def test_the_shipped_cards_count_as_transformers_builds_them(card_id, model_type):
    """Full size on the meta device: the card's count is transformers' masked-LM model's
    (BERT's with its pooler, which BertForMaskedLM leaves out)."""
    import archdb

    arch = archdb.load().get(card_id).architecture
    config = transformers.AutoConfig.for_model(
        model_type, vocab_size=arch.vocab_size, hidden_size=arch.d_model,
        num_hidden_layers=arch.n_layers, num_attention_heads=arch.attention.n_heads,
        intermediate_size=arch.mlp.d_ff, max_position_embeddings=arch.position.learned_rows,
        type_vocab_size=arch.encoder.token_types,
    )  # fmt: skip
    with torch.device("meta"):
        theirs = transformers.AutoModelForMaskedLM.from_config(config)
    expected = sum(p.numel() for p in theirs.parameters())
    if arch.encoder.pooler:
        expected += arch.d_model * arch.d_model + arch.d_model
    assert count_parameters(build_model(arch, device="meta")) == expected
    assert plan_params(make_plan(arch)).total == expected


@pytest.mark.parametrize("half", [0, 1, 4])
@pytest.mark.parametrize("t", [1, 3, 9, 10, 30])
def test_two_sided_windows_count_the_band_the_kernel_reads(half, t):
    """Useful scores are the pairs |i - j| <= half; the kernel computes the whole band of
    2 half + 1 slots once the sequence is longer than it, every pair before."""
    from archdb.parts.kernels import two_sided_keys

    pairs = sum(1 for i in range(t) for j in range(t) if abs(i - j) <= half)
    band = 2 * half + 1
    assert two_sided_keys(half, t) == ((t * band if t > band else t * t), pairs)


@pytest.mark.parametrize("t", [5, 9, 24])
def test_a_two_sided_window_reads_exactly_its_neighbours(t):
    """Changing token j moves position i's output only when |i - j| <= window // 2 (one
    local layer: only its attention carries a token's change to another position)."""
    torch.manual_seed(0)
    arch = _card(
        "bert",
        **{"n_layers": 1, "attention.layer_pattern": ["local"], "attention.sliding_window": 8},
    )
    model = build_model(arch).eval()
    tokens = torch.randint(0, 128, (1, t))
    changed = tokens.clone()
    changed[0, 0] = (tokens[0, 0] + 1) % 128
    with torch.no_grad():
        moved = (model(tokens) - model(changed)).abs().amax(-1)[0] > 1e-6
    assert moved.tolist() == [i <= 4 for i in range(t)]


def test_the_first_layer_without_its_attention_norm_is_one_norm_fewer():
    """ModernBERT's layer 0 reads the embedding norm's output directly."""
    modern = {"norm": {"type": "layernorm", "position": "pre", "affine": "scale",
                       "final": True, "first_mixer_norm": False}}  # fmt: skip
    without = _card("bert", **modern)
    with_all = _card("bert", **{"norm": {**modern["norm"], "first_mixer_norm": None}})
    assert plan_params(make_plan(with_all)).total - plan_params(make_plan(without)).total == 64
    model = build_model(without)
    assert isinstance(model.encoder.layers[0].attn.before, torch.nn.Identity)
    assert not isinstance(model.encoder.layers[1].attn.before, torch.nn.Identity)
    assert count_parameters(model) == plan_params(make_plan(without)).total
    with pytest.raises(ValueError, match="first_mixer_norm: false needs pre-norm"):
        _card("bert", **{"norm.first_mixer_norm": False})  # BERT's layers are post-norm


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"is_decoder": True}, "is_decoder/add_cross_attention make a decoder"),
        ({"hidden_act": "\x1b[31m" + "x" * 500}, "hidden_act"),
    ],
)
def test_import_hf_refuses_bert_configs_it_would_build_wrongly(changes, message):
    """A BERT config with a decoder's switches or an activation archdb does not know is
    refused with the key named (a hostile string escaped and cut short)."""
    from archdb_hf.importer import HFImportError

    with pytest.raises(HFImportError, match=re.escape(message)) as raised:
        _import_bert(changes)
    assert "\x1b" not in str(raised.value) and len(str(raised.value)) < 400


def test_a_key_transformers_5_no_longer_reads_is_ignored_as_it_ignores_it():
    """BertModel 5.x builds absolute positions whatever position_embedding_type says: the
    key is listed as ignored, and the card is the absolute-position model."""
    result = _import_bert({"position_embedding_type": "relative_key"})
    assert "position_embedding_type" in result.ignored
    assert result.card["architecture"]["position"]["type"] == "learned"


def _import_bert(changes: dict):
    from archdb_hf.importer import Identity, import_config

    config = {**transformers.BertConfig().to_dict(), **changes}
    identity = Identity("bert-x", "BERT x", "bert", "Lab", "2019-01-01")
    return import_config(config, source_url="https://example.org/config.json", identity=identity)


@pytest.mark.parametrize("act", ["gelu_new", "relu"])
def test_import_hf_refuses_a_roberta_whose_layers_and_head_would_differ(act):
    """RobertaLMHead applies the erf GELU whatever hidden_act says: another activation (the
    tanh GELU included) would give the layers one the card cannot state beside it."""
    from archdb_hf.importer import HFImportError, Identity, import_config

    config = {**transformers.RobertaConfig().to_dict(), "hidden_act": act}
    identity = Identity("roberta-x", "RoBERTa x", "roberta", "Lab", "2019-07-26")
    with pytest.raises(HFImportError, match="RoBERTa's masked-LM head uses the erf GELU"):
        import_config(config, source_url="https://example.org/config.json", identity=identity)
