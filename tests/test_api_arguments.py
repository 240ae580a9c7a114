"""The Python API validates its arguments: documented errors naming the argument, raised
before anything is allocated (issue: hardening, round two)."""

from __future__ import annotations

import pytest

import archdb
from archdb.errors import ArchdbError, ArgumentError, UsageError


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: archdb.build(None), "card_or_id must be a Card or a card id"),
        (lambda: archdb.params(None), "card_or_id must be a Card or a card id"),
        (lambda: archdb.params(123), "card_or_id must be a Card or a card id"),
        (lambda: archdb.build("gpt-2", seq_len="64"), "seq_len must be a whole number"),
        (lambda: archdb.build("gpt-2", seq_len=64.5), "seq_len must be a whole number"),
        (lambda: archdb.build("gpt-2", seq_len=True), "seq_len must be a whole number"),
        (lambda: archdb.build("gpt-2", seq_len=10**9), "seq_len must be from 1 to 65,536"),
        (lambda: archdb.build("gpt-2", dtype="float16"), "dtype must be a torch.dtype"),
        (lambda: archdb.build("gpt-2", seq_len=0), "seq_len must be from 1 to 65,536"),
        (lambda: archdb.flops("gpt-2-124m", seq_len=0), "seq_len must be from 1"),
        (lambda: archdb.flops("gpt-2-124m", seq_len=-5), "seq_len must be from 1"),
        (lambda: archdb.cache_bytes("gpt-2-124m", context=0), "context must be from 1"),
        (lambda: archdb.cache_bytes("gpt-2-124m", bytes_per_element="2"), "must be a number"),
        (
            lambda: archdb.cache_bytes("gpt-2-124m", bytes_per_element=float("nan")),
            "bytes_per_element must be a finite number above 0",
        ),
        (
            lambda: archdb.cache_bytes("gpt-2-124m", bytes_per_element=0),
            "bytes_per_element must be a finite number above 0",
        ),
        (lambda: archdb.load().where(123), "where\\(\\) takes query strings"),
        (lambda: archdb.trends(123), "choice must be a str"),
        (lambda: archdb.trends("moe", where=[5]), "where takes query strings"),
        (lambda: archdb.trends("moe", since="2020"), "since must be a whole number"),
        (lambda: archdb.params("gpt-2", catalogue=42), "catalogue must be a Catalogue or a path"),
    ],
)
def test_a_misused_argument_raises_the_documented_error(call, message):
    with pytest.raises(ArgumentError, match=message) as raised:
        call()
    assert isinstance(raised.value, UsageError) and isinstance(raised.value, ArchdbError)


def test_seq_len_zero_is_not_the_default_length():
    """flops(seq_len=0) once returned the figures for 2,048 tokens."""
    assert archdb.flops("gpt-2-124m", seq_len=1).seq_len == 1
    with pytest.raises(ArgumentError):
        archdb.flops("gpt-2-124m", seq_len=0)


def _checkpoint(folder, tensors: dict, index: dict | None = None):
    import json

    from safetensors.torch import save_file

    folder.mkdir(exist_ok=True)
    save_file(tensors, str(folder / "model-00001-of-00001.safetensors"))
    weight_map = index or dict.fromkeys(tensors, "model-00001-of-00001.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return folder


def test_a_shard_without_the_tensor_its_index_names_is_a_weights_error(tmp_path):
    import torch

    from archdb.weights import Checkpoint, WeightsError

    folder = _checkpoint(
        tmp_path / "ckpt",
        {"a.weight": torch.ones(2, 2)},
        index={
            "a.weight": "model-00001-of-00001.safetensors",
            "b.weight": "model-00001-of-00001.safetensors",  # not in that file
        },
    )
    ckpt = Checkpoint(folder)
    with pytest.raises(
        WeightsError,
        match=r"model-00001-of-00001.safetensors: cannot read "
        r"tensor 'b.weight'",
    ):
        ckpt.take("b.weight")
    with pytest.raises(WeightsError, match=r"'b\.weight'"):
        ckpt.shape("b.weight")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_tensor_values_are_refused(tmp_path, bad):
    import torch

    from archdb.weights import Checkpoint, WeightsError

    values = torch.ones(3)
    values[1] = bad
    folder = _checkpoint(tmp_path / "ckpt", {"w": values, "ok": torch.ones(3)})
    ckpt = Checkpoint(folder)
    assert torch.equal(ckpt.take("ok"), torch.ones(3))
    with pytest.raises(WeightsError, match="tensor 'w' holds NaN or infinite values"):
        ckpt.take("w")
