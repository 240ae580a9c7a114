"""The catalogue table: flattened card fields, derived columns, stable dtypes."""

from __future__ import annotations

import pandas as pd
import pytest

from archdb.table import COLUMNS, DERIVED_COLUMNS, card_row, catalogue_frame, series
from tests.conftest import catalogue, make_card, shipped_catalogue

# --- tests ---------------------------------------------------------------------------


def test_row_flattens_fields_by_dotted_path() -> None:
    row = card_row(
        make_card(
            "mm-1b",
            {
                "architecture.attention.layer_pattern": ["local", "global"],
                "architecture.attention.sliding_window": 512,
            },
        )
    )
    assert row["id"] == "mm-1b"
    assert row["architecture.norm.type"] == "layernorm"  # enums are their values
    assert row["architecture.attention.layer_pattern"] == "local,global"
    assert row["architecture.mlp.moe.n_experts"] is None  # absent sub-model: null leaves
    assert row["release_date"] == "2020-01-01"
    assert "sources" not in row and "notes" not in row
    assert list(row) == list(COLUMNS)


def test_derived_columns() -> None:
    card = make_card(
        "mm-7b",
        {
            "architecture.mlp.activation": "swiglu",
            "architecture.mlp.d_ff": 2816,
            "architecture.attention.n_kv_heads": 2,
            "architecture.bias": {"qkv": True, "attn_out": False, "mlp": False},
            "architecture.attention.logit_softcap": 50.0,
            "architecture.final_logit_softcap": 30.0,
            "training.z_loss": 0.0001,
            "training.weight_decay": 0.0,
        },
        family="mm-2",
    )
    row = card_row(card)
    assert row["series"] == "mm"
    assert row["gated"] is True
    assert row["d_ff_ratio"] == pytest.approx(2.75)
    assert row["aspect_ratio"] == 128
    assert row["query_groups"] == 4
    assert row["attention_family"] == "gqa"
    assert row["bias_scheme"] == "qkv-only"
    assert row["softcap_scheme"] == "attention+final"
    assert row["z_loss_used"] is True
    assert row["weight_decay_used"] is False
    assert row["dropout_used"] is None  # unknown stays unknown
    assert row["layer_mix"] == "global"


@pytest.mark.parametrize(
    ("family", "expected"),
    [
        ("gpt-3", "gpt"),
        ("t5-v1.1", "t5"),
        ("t5", "t5"),
        ("llama", "llama"),
        ("command-r-plus", "command-r-plus"),
        ("qwen-2.5", "qwen"),
    ],
)
def test_series_strips_only_a_trailing_version(family: str, expected: str) -> None:
    assert series(family) == expected


def test_frame_dtypes_do_not_depend_on_content() -> None:
    empty = catalogue_frame(catalogue())
    full = catalogue_frame(
        catalogue(make_card("aa-1b"), make_card("bb-1b", {"training.z_loss": 0.0}))
    )
    assert list(empty.columns) == list(full.columns) == list(COLUMNS)
    assert (empty.dtypes == full.dtypes).all()
    assert full["training.z_loss"].dtype == "Float64"
    assert full["architecture.d_model"].dtype == "Int64"
    assert full["z_loss_used"].dtype == "boolean"
    assert full["architecture.norm.type"].dtype == "string"
    assert full.loc["aa-1b", "training.z_loss"] is pd.NA
    assert list(full.index) == ["aa-1b", "bb-1b"]


def test_every_derived_column_is_documented() -> None:
    assert all(meaning for _, meaning in DERIVED_COLUMNS.values())
    assert not any("." in name for name in DERIVED_COLUMNS)  # dots are card paths only


def test_shipped_catalogue_tabulates() -> None:
    frame = catalogue_frame(shipped_catalogue())
    assert len(frame) >= 1
    assert frame["id"].is_unique


def test_the_column_file_is_current():
    """archdb/columns.json (what queries read without the schema) is the schema's today."""
    from archdb.columns import COLUMNS_FILE, columns_json
    from archdb.table import column_table

    assert COLUMNS_FILE.read_text(encoding="utf-8") == columns_json(column_table()), (
        "archdb/columns.json is stale: python -c 'from archdb.table import "
        "write_column_file; write_column_file()'"
    )
