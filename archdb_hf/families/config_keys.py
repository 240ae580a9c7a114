"""Which config.json keys each supported model type's transformers config class defines.

A released config may carry keys of other families' vocabularies (left by conversion
scripts, or set as extra attributes, which transformers keeps and saves); transformers'
model of the type never reads them, so neither does the importer. The table is data,
generated from the config classes of the pinned transformers release
(``archdb_hf.testing.config_keys_table``; a test checks it is current), so
archdb needs no transformers at run time.

A key that no supported class defines (a legacy name such as ``rope_scaling``, or one a
family's own read hook takes) is not foreign to anyone and is left to the importer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import Any

TABLE = "config_keys.json"


@cache
def table() -> dict[str, frozenset[str]]:
    """model_type -> the keys its config class defines (attributes and their aliases)."""
    doc = json.loads(files("archdb_hf.families").joinpath(TABLE).read_text(encoding="utf-8"))
    return {model_type: frozenset(keys) for model_type, keys in doc["keys"].items()}


@cache
def _all_keys() -> frozenset[str]:
    return frozenset().union(*table().values())


def foreign_keys(config: Mapping[str, Any], model_type: str) -> list[str]:
    """The keys of ``config`` that belong to other model types' classes but not to
    ``model_type``'s: transformers' model of the type ignores them."""
    own = table().get(model_type)
    if own is None:
        return []
    every = _all_keys()
    return sorted(k for k in config if k in every and k not in own)
