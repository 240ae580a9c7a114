"""A card the builder cannot run is refused at build time with archdb's own error naming
the field, never left to fail inside a forward pass with a bare torch error."""

from __future__ import annotations

import itertools

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.plan import make_plan
from archdb.plan.layout import BuildError
from tests.conftest import make_arch


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"attention.head_dim": 7}, "attention.head_dim 7"),
        ({"attention.head_dim": 9, "attention.n_heads": 8}, "attention.head_dim 9"),
    ],
)
def test_an_odd_number_of_rotated_dims_is_refused_naming_the_width(changes, field):
    """RoPE turns pairs of dims: 7 or 9 dims cannot be paired (a rotary fraction is rounded
    down to an even number of dims, so it never leaves one over)."""
    arch = make_arch(**changes)
    with pytest.raises(BuildError, match=f"{field}: RoPE rotates pairs of dims"):
        make_plan(arch)
    with pytest.raises(BuildError, match="RoPE rotates pairs"):
        build_model(arch)


def test_an_odd_head_without_rope_builds_and_runs():
    arch = make_arch(**{"attention.head_dim": 7, "position": {"type": "learned"}})
    logits = build_model(arch)(torch.randint(0, arch.vocab_size, (1, 5)))
    assert logits.shape == (1, 5, arch.vocab_size)


# widths, rotary fractions, KV heads, MLP widths and windows, in every combination: each
# card is refused (by the schema or at build time) or its toy runs
GRID = {
    "attention.head_dim": [None, 7, 12, 24],
    "position.rotary_fraction": [None, 0.3, 0.5],
    "attention.n_kv_heads": [1, 3, 4],
    "mlp.d_ff": [7, 128],
    "attention.layer_pattern": [["global"], ["global", "local"]],
}


@pytest.mark.parametrize("values", list(itertools.product(*GRID.values())))
def test_every_card_that_builds_runs(values):
    changes = dict(zip(GRID, values, strict=True))
    if changes["attention.layer_pattern"] != ["global"]:
        changes["attention.sliding_window"] = 3
    try:
        arch = make_arch(**changes)
        model = build_model(arch)
    except (ValidationError, BuildError):
        return  # refused, with the field named
    with torch.no_grad():
        logits = model(torch.randint(0, arch.vocab_size, (1, 9)))
    assert logits.shape == (1, 9, arch.vocab_size)
