"""The reference: a card written as its transformers family's config (card -> config).

The tests and the fidelity levels build transformers' model of a card from this config;
each family's writer (``FamilySpec.write``) and the checks every writer shares
(``archdb_hf.families.card_to_config``) sit below, the registry of families beside it.
"""

from __future__ import annotations

from archdb.schema import Architecture
from archdb_hf.families.card_to_config import NotRepresentable, check_extras, function_keys
from archdb_hf.families.registry import SPECS

__all__ = ["NotRepresentable", "convert"]


def convert(arch: Architecture, model_type: str) -> dict:
    """The card as its family's transformers config; NotRepresentable when the family
    cannot build it (an optional mechanism it lacks, or a fixed choice the card differs on)."""
    spec = SPECS[model_type]
    check_extras(arch, spec)
    written = spec.write(arch)
    return written | function_keys(spec, arch, written)
