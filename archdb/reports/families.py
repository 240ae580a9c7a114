"""Per-lineage evolution tables: how a line of models (Llama 1 -> 4) changed over versions.

A lineage is the family slug without its trailing version (``archdb.table.lineage``):
``llama``, ``llama-2`` ... ``llama-4`` form the lineage ``llama``. Each version of the
lineage is shown by its flagship, the card with the largest published parameter count,
and each row says which choices changed from the previous version.
"""

from __future__ import annotations

import pandas as pd

from archdb.reports.distributions import released

# The columns an evolution table shows: short label -> table column.
EVOLUTION_COLUMNS: dict[str, str] = {
    "d_model": "architecture.d_model",
    "layers": "architecture.n_layers",
    "norm": "architecture.norm.type",
    "norm pos": "architecture.norm.position",
    "activation": "architecture.mlp.activation",
    "d_ff/d_model": "d_ff_ratio",
    "position": "architecture.position.type",
    "attention": "attention_family",
    "groups": "query_groups",
    "layers mix": "layer_mix",
    "qk norm": "architecture.attention.qk_norm",
    "soft-cap": "softcap_scheme",
    "bias": "bias_scheme",
    "parallel": "architecture.parallel_layers",
    "tied": "architecture.tied_embeddings",
    "moe": "moe",
    "vocab": "architecture.vocab_size",
    "context": "architecture.context_length",
}
# Changes in these columns are sizes, not design choices: not listed under "changed".
_SIZES = {"d_model", "layers", "vocab", "context", "d_ff/d_model", "groups"}


def lineages(frame: pd.DataFrame, min_versions: int = 2) -> list[str]:
    """Lineages with at least ``min_versions`` families, sorted by name."""
    counts = released(frame).groupby("lineage")["family"].nunique()
    return sorted(str(name) for name, n in counts.items() if n >= min_versions)


def flagships(frame: pd.DataFrame, lineage: str) -> pd.DataFrame:
    """One card per family of the lineage, the largest published, ordered by release."""
    part = released(frame)
    part = part[part["lineage"] == lineage]
    size = part["params_published"].astype("Float64").fillna(part["params_exact"].astype("Float64"))
    ranked = part.assign(_size=size.fillna(-1.0)).sort_values(
        ["family", "_size", "release_date", "id"],
        ascending=[True, False, False, True],
        kind="stable",
    )
    best = ranked.groupby("family", sort=False).head(1).drop(columns="_size")
    return best.sort_values(["release_date", "family"], kind="stable")


def evolution(frame: pd.DataFrame, lineage: str) -> pd.DataFrame:
    """The lineage's flagships, one per row, with the choices that changed from the last."""
    ships = flagships(frame, lineage)
    table = pd.DataFrame(
        {
            "model": ships["name"],
            "date": ships["release_date"],
            "params": ships["params_published"],
        },
        index=ships.index,
    )
    for label, column in EVOLUTION_COLUMNS.items():
        table[label] = ships[column]
    changed = []
    previous = None
    for _, row in table.iterrows():
        if previous is None:
            changed.append("")
        else:
            diffs = [
                label
                for label in EVOLUTION_COLUMNS
                if label not in _SIZES and not _same(row[label], previous[label])
            ]
            changed.append(", ".join(diffs))
        previous = row
    table["changed"] = changed
    return table


def _same(a: object, b: object) -> bool:
    """Equal, or not comparable: an unknown value is not a change."""
    if pd.isna(a) or pd.isna(b):
        return True
    return bool(a == b)
