"""The round trip card -> config -> card: what a family's config.json cannot carry.

A card written as its family's config (``archdb_hf.reference.convert``) and read back by
import-hf should be the card again. Each recorded value that does not come back is a
choice transformers' family would not build from that config: the comparison with it
would not be of the same model.
"""

from __future__ import annotations

import json

from archdb.plan.layout import fill_unknowns
from archdb.schema import Architecture
from archdb_hf.importer import HFImportError, Identity, import_config
from archdb_hf.reference import convert

# values that live outside a transformers config (the tokenizer's own vocabulary)
NOT_CONFIG = frozenset({"tokenizer_vocab_size"})
REFUSED = "(import-hf refuses the written config)"
_IDENTITY = Identity("round-trip", "Round trip", "round-trip", "archdb", "2024-01-01")


def _flat(data: dict, prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat |= _flat(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def recorded(arch: Architecture) -> dict[str, object]:
    """The values a card records (nulls are 'not recorded'), head width as built."""
    values = {k: v for k, v in _flat(arch.model_dump(mode="json")).items() if v is not None}
    values["attention.head_dim"] = arch.head_dim_effective
    return {k: v for k, v in values.items() if k not in NOT_CONFIG}


def round_trip_losses(arch: Architecture, model_type: str) -> set[str]:
    """The card's recorded values that do not come back through config.json (``REFUSED``
    when import-hf cannot read the written config); what the build assumes for the card's
    nulls is not recorded, so never a loss. NotRepresentable when the family cannot build
    the card at all."""
    filled, assumed = fill_unknowns(arch)
    config = convert(filled, model_type) | {"model_type": model_type}
    config = json.loads(json.dumps(config))  # what a saved config.json holds
    try:
        imported = import_config(
            config, source_url="https://example.org/config.json", identity=_IDENTITY
        )
    except HFImportError:
        return {REFUSED}
    back = recorded(Architecture.model_validate(imported.card["architecture"]))
    lost = {path for path, value in recorded(filled).items() if back.get(path) != value}
    return lost - {a.field for a in assumed}
