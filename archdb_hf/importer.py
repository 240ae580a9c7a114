"""import-hf: a Hugging Face ``config.json`` read into a card, as transformers reads it.

This module finds the family: the config's ``model_type`` (or, for a custom one, the model
class its ``architectures`` name) among the families archdb supports
(``archdb_hf.families.registry``), and drops the keys that belong to other families'
vocabularies (transformers' model of the type never reads them). The reading itself, one
family's steps and hook on a draft card, is ``archdb_hf.draft``, which the families build
on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from archdb_hf.draft import (
    HFImportError,
    Identity,
    Imported,
    architectures_of,
    check_shape,
    config_shape,
    decoder_config,
    guess_identity,
    imported,
    read_config,
)
from archdb_hf.families.config_keys import foreign_keys
from archdb_hf.families.registry import SPECS, resolve

__all__ = [
    "HFImportError",
    "Identity",
    "Imported",
    "guess_identity",
    "import_config",
    "read_config",
    "supported_model_types",
]

# keys that Hunyuan's released configs give per layer (one value repeated), read by its hook
PER_LAYER_LISTS = ("moe_intermediate_size", "moe_topk", "num_shared_expert")
PER_LAYER_READERS = ("hunyuan_v1_dense", "hunyuan_v1_moe")


def supported_model_types() -> list[str]:
    """The model types import-hf reads."""
    return sorted(m for m, spec in SPECS.items() if spec.imports)


def import_config(config: Mapping[str, Any], *, source_url: str, identity: Identity) -> Imported:
    """A card for the model a config.json describes; HFImportError if it cannot be mapped."""
    if not re.match(r"^https?://\S+$", source_url or ""):
        raise HFImportError("a source is required: give the config's URL (https://...)")
    check_shape(config, shape=families_shape())
    decoder, wrapper_note = decoder_config(config)
    if wrapper_note:
        check_shape(decoder, prefix="text_config.", shape=families_shape())
    model_type, via = _family_of(decoder, config)
    released_form = SPECS[model_type].released_form
    if released_form is not None and (spelled := released_form(decoder)) is not None:
        declared = decoder["model_type"]  # the alias itself: released_form recognised it
        renamed = f"{declared}'s remote-code keys read as {SPECS[model_type].config_class}'s"
        try:  # the renamed keys meet the shape the original names escaped
            check_shape(spelled, shape=families_shape())
        except HFImportError as exc:
            raise HFImportError(f"{exc} ({renamed})") from None
        via = f"{via}; {renamed}" if via else renamed
        decoder = spelled
    _refuse_per_layer_lists(decoder, model_type)
    foreign = foreign_keys(decoder, model_type)  # other families' keys: never read
    if foreign:
        decoder = {k: v for k, v in decoder.items() if k not in foreign}
    notes = (wrapper_note,) if wrapper_note else ()
    if via:
        notes += (f"Imported as transformers' {model_type}: {via}.",)
    result = imported(
        config, decoder, SPECS[model_type], source_url=source_url, identity=identity, notes=notes
    )
    if foreign:
        result.ignored[:] = sorted({*result.ignored, *foreign})
    return result


@cache
def families_shape() -> type:
    """The type and range of every key: hand-written, and derived from the families' keys."""
    return config_shape(key for spec in SPECS.values() for key in spec.keys)


def _refuse_per_layer_lists(decoder: Mapping[str, Any], model_type: str) -> None:
    if model_type in PER_LAYER_READERS:
        return
    for key in PER_LAYER_LISTS:
        if isinstance(decoder.get(key), list):
            raise HFImportError(
                f"config.json: {key} is a per-layer list, which {model_type} reads as one number"
            )


def _family_of(decoder: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[str, str | None]:
    """The supported model_type a config belongs to, and how it was recognised. A custom
    model_type (Kimi K2 says ``kimi_k2``) is read through ``architectures`` when that names
    a supported family's model class (``DeepseekV3ForCausalLM``)."""
    declared = str(decoder.get("model_type"))
    classes = architectures_of(decoder) or architectures_of(config)
    found = resolve(declared, classes)
    if found is not None and found[0] in supported_model_types():
        return found
    raise HFImportError(
        f"model_type {declared!r} is not supported; supported: {', '.join(supported_model_types())}"
    )
