"""The round trip card -> config -> card: what a family's config.json cannot carry.

A card written as its family's config (``card_to_config.convert``) and read back by
import-hf should be the card again. Each recorded value that does not come back is a
choice transformers' family would not build from that config: the comparison with it
would not be of the same model.
"""

from __future__ import annotations

import json

from archdb.families.card_to_config import convert
from archdb.hf_import import HFImportError, Identity, import_config
from archdb.schema import Architecture, PositionType

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
    """Card fields whose value does not come back through config.json (``REFUSED`` when
    import-hf cannot read the written config); NotRepresentable when the family cannot
    build the card at all."""
    config = convert(arch, model_type) | {"model_type": model_type}
    config = json.loads(json.dumps(config))  # what a saved config.json holds
    try:
        imported = import_config(
            config, source_url="https://example.org/config.json", identity=_IDENTITY
        )
    except HFImportError:
        return {REFUSED}
    back = recorded(Architecture.model_validate(imported.card["architecture"]))
    return {path for path, value in recorded(arch).items() if back.get(path) != value}


def function_losses(arch: Architecture, model_type: str) -> set[str]:
    """The round trip's losses that change what transformers' model computes: not the
    multi-token-prediction modules (counted apart, never in the forward pass), nor a
    context length no table is sized by, nor the QK norm of a stack without attention."""
    return {path for path in round_trip_losses(arch, model_type) if not _idle(path, arch)}


def _idle(path: str, arch: Architecture) -> bool:
    if path.startswith("mtp."):
        return True
    if path == "context_length":
        return arch.position.type is not PositionType.LEARNED
    if path == "attention.qk_norm":
        return not any(kind.attention for kind in arch.attention.layer_pattern)
    return False
