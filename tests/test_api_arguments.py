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
        (lambda: archdb.build("gpt-2", dtype="float16"), "floating-point torch.dtype"),
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
        (lambda: archdb.trends("moe", where=[5]), "where takes strings"),
        (lambda: archdb.trends("moe", since="2020"), "since must be a whole number"),
        (lambda: archdb.params("gpt-2", catalogue=42), "catalogue must be a Catalogue or a path"),
        # round two: every argument of the API, not just the first ones tried
        (lambda: archdb.load(123), "path must be a str or a Path"),
        (lambda: archdb.load(b"models.yaml"), "path must be a str or a Path"),
        (lambda: archdb.build("gpt-2", device="banana"), "device 'banana' cannot be used here"),
        (lambda: archdb.build("gpt-2", device=5.5), "device must be a str"),
        (lambda: archdb.build("gpt-2", dtype=_torch().int64), "floating-point torch.dtype"),
        (
            lambda: archdb.build("gpt-2", size="full", weights=123),
            "weights must be a checkpoint directory",
        ),
        (
            lambda: archdb.cache_bytes("gpt-2-124m", bytes_per_element=10**400),
            "bytes_per_element must be a finite number above 0 and up to 64",
        ),
        (
            lambda: archdb.cache_bytes("gpt-2-124m", bytes_per_element=1e308),
            "bytes_per_element must be a finite number above 0 and up to 64",
        ),
        (lambda: archdb.cache_bytes("gpt-2-124m", context=2**31), "context must be from 1"),
        (lambda: archdb.cache_bytes("gpt-2-124m", context=True), "context must be a whole"),
        (lambda: archdb.trends("moe", where=5), "where takes strings"),
        (lambda: archdb.trends("moe", kinds=5), "kinds takes strings"),
        (lambda: archdb.trends("moe", kinds=[5]), "kinds takes strings"),
        (lambda: archdb.trends("moe", band="yes"), "band must be True or False"),
        (lambda: archdb.trends("moe", weight=5), "weight must be 'family' or 'card'"),
        (lambda: archdb.trends("moe", catalogue=5), "catalogue must be a Catalogue or a path"),
        (lambda: archdb.load().resolve(None), "name must be a card id or family name"),
        (lambda: archdb.diagram(None), "card_or_id must be a Card or a card id"),
    ],
)
def test_a_misused_argument_raises_the_documented_error(call, message):
    with pytest.raises(ArgumentError, match=message) as raised:
        call()
    assert isinstance(raised.value, UsageError) and isinstance(raised.value, ArchdbError)


def _torch():
    import torch

    return torch


def test_a_device_this_machine_lacks_is_refused_before_building():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ArgumentError, match="device 'cuda' cannot be used here"):
        archdb.build("gpt-2-124m", device="cuda")


def test_control_characters_in_a_device_are_shown_escaped():
    with pytest.raises(ArgumentError) as raised:
        archdb.build("gpt-2-124m", device="\x1b[31m")
    assert "\x1b" not in str(raised.value) and "\\x1b" in str(raised.value)


def test_a_single_string_is_one_kind_or_one_condition():
    one = archdb.trends("moe", kinds="decoder-only", where="year>=2020")
    assert one == archdb.trends("moe", kinds=["decoder-only"], where=["year>=2020"])
    assert archdb.trends("moe", where=None) == archdb.trends("moe")


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

    from archdb_hf.weights import Checkpoint, WeightsError

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

    from archdb_hf.weights import Checkpoint, WeightsError

    values = torch.ones(3)
    values[1] = bad
    folder = _checkpoint(tmp_path / "ckpt", {"w": values, "ok": torch.ones(3)})
    ckpt = Checkpoint(folder)
    assert torch.equal(ckpt.take("ok"), torch.ones(3))
    with pytest.raises(WeightsError, match="tensor 'w' holds NaN or infinite values"):
        ckpt.take("w")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: f.write_bytes(b"\x00" * 16), "not a readable safetensors file"),
        (lambda f: f.write_bytes(f.read_bytes()[:-5]), "not a readable safetensors file"),
    ],
)
def test_a_damaged_shard_is_a_weights_error_naming_the_file(tmp_path, damage, message):
    import torch

    from archdb_hf.weights import Checkpoint, WeightsError

    folder = _checkpoint(tmp_path / "ckpt", {"w": torch.ones(4)})
    shard = folder / "model-00001-of-00001.safetensors"
    damage(shard)
    with pytest.raises(WeightsError, match=f"{shard}: {message}"):
        Checkpoint(folder).take("w")


def test_an_index_that_is_a_pipe_is_a_weights_error(tmp_path):
    import os

    from archdb_hf.weights import Checkpoint, WeightsError

    folder = tmp_path / "ckpt"
    folder.mkdir()
    os.mkfifo(folder / "model.safetensors.index.json")
    with pytest.raises(WeightsError, match=r"model\.safetensors\.index\.json: not a regular file"):
        Checkpoint(folder)


def test_an_index_naming_a_shard_outside_the_folder_is_refused(tmp_path):
    import torch

    from archdb_hf.weights import Checkpoint, WeightsError

    for shard in ("../elsewhere.safetensors", "/etc/passwd", ".hidden"):
        folder = _checkpoint(tmp_path / "ckpt", {"w": torch.ones(2)}, index={"w": shard})
        with pytest.raises(WeightsError, match="names a shard outside the directory"):
            Checkpoint(folder)
