"""Distributions of the derived ratios and sizes, with the outliers named.

Pure functions over ``archdb.table.catalogue_frame``: DataFrame in, DataFrame out.
Research variants are left out, as in the trends.

Outliers follow Tukey's rule on the log of the value (ratios and sizes spread
multiplicatively: 2x above the median is as far as 2x below): a value is an outlier when
it lies more than 1.5 inter-quartile ranges outside the quartiles of its group. A group
needs at least ``MIN_GROUP`` values to have quartiles at all.
"""

from __future__ import annotations

import math

import pandas as pd

MIN_GROUP = 4
TUKEY_K = 1.5

STAT_COLUMNS = ["group", "n", "min", "q1", "median", "q3", "max"]
OUTLIER_COLUMNS = ["group", "id", "name", "year", "value", "low", "high"]


def released(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame without research variants."""
    return frame[~frame["research_variant"].fillna(False).astype(bool)]


def mlp_group(frame: pd.DataFrame) -> pd.Series:
    """gated / non-gated for dense MLPs; MoE apart, since its d_ff is one expert's width."""
    gated = frame["gated"].map({True: "gated", False: "non-gated"}, na_action="ignore")
    group = gated.where(~frame["moe"].fillna(False).astype(bool), "MoE (one expert)")
    return group.astype("string")


def stats(frame: pd.DataFrame, column: str, by: pd.Series | str | None = None) -> pd.DataFrame:
    """Count, range and quartiles of a column, per group (``by``) or over all rows."""
    data = _valued(frame, column, by)
    rows = []
    for group, values in data.groupby("group", sort=True)["value"]:
        v = values.astype(float)
        rows.append(
            {
                "group": group,
                "n": len(v),
                "min": v.min(),
                "q1": v.quantile(0.25),
                "median": v.median(),
                "q3": v.quantile(0.75),
                "max": v.max(),
            }
        )
    return pd.DataFrame(rows, columns=STAT_COLUMNS)


def outliers(frame: pd.DataFrame, column: str, by: pd.Series | str | None = None) -> pd.DataFrame:
    """The rows outside Tukey's fences (on log values) of their group, by group and value."""
    data = _valued(frame, column, by)
    found = []
    for group, part in data.groupby("group", sort=True):
        values = part["value"].astype(float)
        if len(values) < MIN_GROUP or (values <= 0).any():
            continue
        logs = values.map(math.log)
        q1, q3 = logs.quantile(0.25), logs.quantile(0.75)
        low, high = q1 - TUKEY_K * (q3 - q1), q3 + TUKEY_K * (q3 - q1)
        outside = part[(logs < low - 1e-12) | (logs > high + 1e-12)]
        for card_id, row in outside.iterrows():
            found.append(
                {
                    "group": group,
                    "id": card_id,
                    "name": row["name"],
                    "year": row["year"],
                    "value": float(row["value"]),
                    "low": math.exp(low),
                    "high": math.exp(high),
                }
            )
    result = pd.DataFrame(found, columns=OUTLIER_COLUMNS)
    return result.sort_values(["group", "value", "id"], kind="stable", ignore_index=True)


def exceptions(
    frame: pd.DataFrame, column: str, expected: float, rel_tol: float = 1e-9
) -> pd.DataFrame:
    """Rows whose value differs from ``expected`` (e.g. head ratio != 1), largest first."""
    data = _valued(frame, column, None)
    data = data.assign(value=data["value"].astype(float))
    keep = [not math.isclose(v, expected, rel_tol=rel_tol) for v in data["value"]]
    off = data[pd.Series(keep, index=data.index, dtype=bool)]
    return off.sort_values(["value", "year"], ascending=[False, True], kind="stable")[
        ["name", "year", "value"]
    ]


def per_year(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per release year: count, median, and the smallest and largest value with their model."""
    data = _valued(frame, column, None)
    rows = []
    for year, part in data.groupby("year", sort=True):
        values = part["value"].astype(float)
        lo, hi = values.idxmin(), values.idxmax()
        rows.append(
            {
                "year": int(year),
                "n": len(part),
                "median": values.median(),
                "min": values[lo],
                "min_model": lo,
                "max": values[hi],
                "max_model": hi,
            }
        )
    return pd.DataFrame(
        rows, columns=["year", "n", "median", "min", "min_model", "max", "max_model"]
    )


def kv_cache_per_param(frame: pd.DataFrame) -> pd.Series:
    """KV-cache bytes per token per billion parameters: how much cache a model's size costs."""
    params = (
        frame["params_exact"].astype("Float64").fillna(frame["params_published"].astype("Float64"))
    )
    return (frame["kv_cache_bytes_per_token"].astype("Float64") / (params / 1e9)).rename(
        "kv_bytes_per_token_per_b"
    )


def _valued(frame: pd.DataFrame, column: str, by: pd.Series | str | None) -> pd.DataFrame:
    """id-indexed name/year/value/group of the released rows where the value is known."""
    frame = released(frame)
    if by is None:
        group = pd.Series("all", index=frame.index, dtype="string")
    elif isinstance(by, str):
        group = frame[by].astype("string")
    else:
        group = by.reindex(frame.index)
    data = pd.DataFrame(
        {"name": frame["name"], "year": frame["year"], "value": frame[column], "group": group},
        index=frame.index,
    )
    return data.dropna(subset=["value", "group"]).sort_index(kind="stable")
