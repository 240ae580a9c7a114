"""The Python API: archdb.build / params / flops / cache_bytes, its doctests and the README."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
import torch

import archdb
from archdb import api
from archdb.measure.analytic import cache_size, param_count
from archdb.plan.layout import BuildError
from tests.conftest import make_arch, shipped_catalogue

# builds by card id read the shipped catalogue's validated cards from the cache
pytestmark = pytest.mark.usefixtures("warm_shipped_cache")

README = Path(__file__).resolve().parent.parent / "README.md"


def test_doctests_of_the_api_pass():
    failed, attempted = doctest.testmod(api)
    assert attempted >= 3 and failed == 0


def test_readme_python_section_runs(capsys):
    section = README.read_text(encoding="utf-8").split("## Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len([line for line in code.splitlines() if line.strip()]) == 5
    exec(compile(code, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "LocalKernel" in out and "torch.Size([2, 128, 256])" in out


def test_build_a_toy_at_a_stated_length_by_id_family_or_card():
    card = shipped_catalogue().resolve("gemma-2")
    for ref in ("gemma-2", card.id, card):
        model = archdb.build(ref, seq_len=96)
        logits = model(torch.randint(0, 256, (3, 96)))
        assert logits.shape == (3, 96, 256)
    kernels = [b.attn.sublayer.kernel for b in model.decoder.layers]
    assert [getattr(k, "window", None) for k in kernels] == [24, None]  # 16 of 64 -> 24 of 96


def test_build_full_size_is_on_meta_with_the_exact_count():
    model = archdb.build("mistral-7b", "full", dtype=torch.bfloat16)
    params = list(model.parameters())
    assert all(p.is_meta and p.dtype is torch.bfloat16 for p in params)
    assert sum(p.numel() for p in params) == archdb.params("mistral-7b").total


def test_encoder_decoder_takes_one_tensor():
    model = archdb.build("t5-11b", seq_len=32)
    assert model(torch.randint(0, 256, (1, 32))).shape == (1, 32, 256)


def test_weights_load_into_the_full_size_only():
    with pytest.raises(BuildError, match="build with size='full'"):
        archdb.build("gpt-2", weights="gpt2-checkpoint")


def test_weights_from_a_directory_without_a_checkpoint_name_it(tmp_path):
    from archdb_hf.weights import WeightsError

    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(WeightsError, match=r"no model\.safetensors"):
        archdb.build("gpt-2", "full", weights=tmp_path)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: archdb.build("gpt-2", "huge"), "size must be 'toy' or 'full'"),
        (lambda: archdb.params("gpt-2", seq_len=10), "seq_len sets a toy's context"),
    ],
)
def test_bad_arguments_raise_build_errors(call, message):
    with pytest.raises(BuildError, match=message):
        call()


def test_figures_equal_the_formulas_and_the_catalogue_argument():
    arch = shipped_catalogue().resolve("mistral-7b").architecture
    assert archdb.params("mistral-7b") == param_count(arch)
    cache = archdb.cache_bytes("mistral-7b", context=32768, bytes_per_element=1)
    assert cache == cache_size(arch, 32768, 1)
    # 32 layers x K,V x 8 heads x 128 dims, each layer keeping its 4096-token window
    assert cache.total == 32 * 2 * 8 * 128 * 4096 and cache.per_token == cache.total / 32768
    toy = archdb.flops("mistral-7b", "toy", seq_len=128)
    assert toy.seq_len == 128 and toy.per_token > 0
    assert archdb.flops("mistral-7b", seq_len=4096).seq_len == 4096


def test_a_card_from_another_catalogue(write_catalogue):
    from tests.conftest import card_text

    path = write_catalogue(card_text("toy-1b"))
    assert archdb.params("toy-1b", catalogue=path).total > 1e9 * 0.5
    with pytest.raises(KeyError, match="no card or family named"):
        archdb.params("toy-1b")


def test_the_small_architecture_builds_at_a_longer_toy_length():
    from archdb.builder.model import build_model, example_inputs
    from archdb.builder.shrink import shrink

    toy = shrink(make_arch(), seq_len=256)
    model = build_model(toy.arch)
    assert model(*example_inputs(model, 256)).shape == (1, 256, 256)
    assert "scaled to this context" in toy.rule
