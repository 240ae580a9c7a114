"""import-hf reads a config.json as transformers reads it, for every supported model type:
the diff-written default config (what save_pretrained writes) and a config carrying other
families' keys import to the card of the full default config; the table of each type's
keys is the pinned transformers release's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archdb_hf.families import config_keys
from archdb_hf.families.registry import SPECS
from archdb_hf.importer import HFImportError, Identity, import_config
from tests.conftest import needs_transformers

pytestmark = needs_transformers

IDENTITY = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2024-01-01")
URL = "https://huggingface.co/org/model/blob/main/config.json"
TYPES = sorted(SPECS)


def _default(model_type: str):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoConfig.for_model(model_type)


def _card(config: dict) -> object:
    try:
        return import_config(config, source_url=URL, identity=IDENTITY).card["architecture"]
    except HFImportError as exc:
        return f"refused: {exc}"


@pytest.mark.parametrize("model_type", TYPES)
def test_the_diff_written_default_config_imports_to_the_same_card(model_type):
    config = _default(model_type)
    diff = config.to_diff_dict()
    diff.setdefault("model_type", model_type)
    assert _card(diff) == _card(config.to_dict())


@pytest.mark.parametrize("model_type", TYPES)
def test_keys_of_other_model_types_do_not_change_the_card(model_type):
    """Every key another supported type's class defines or reads, and this one's neither
    defines nor reads, with that type's default value: ignored, as transformers does."""
    full = _default(model_type).to_dict()
    own = config_keys.table()[model_type]
    foreign: dict = {}
    for other in TYPES:
        if other == model_type:
            continue
        for key, value in _default(other).to_dict().items():
            if key not in own and key not in full:
                foreign.setdefault(key, value)
    assert foreign, "no key of another type to add"
    assert _card({**full, **foreign}) == _card(full)
    if not isinstance(_card(full), str):  # imported (not refused): the keys are listed
        imported = import_config({**full, **foreign}, source_url=URL, identity=IDENTITY)
        assert set(foreign) <= set(imported.ignored) | set(imported.unmapped)


def test_the_key_table_is_the_pinned_releases():
    from archdb_hf.testing import config_keys_table

    committed = json.loads(
        Path(config_keys.__file__).with_name(config_keys.TABLE).read_text(encoding="utf-8")
    )
    assert committed == config_keys_table(), (
        "archdb_hf/families/config_keys.json is stale: python -c 'from archdb_hf.testing "
        "import write_config_keys; write_config_keys()'"
    )
