"""Non-attention token mixers as plugins: one module each, found in this package.

Every module here whose name does not start with '_' is a plugin: it defines ``PLUGIN``, a
``MixerPlugin`` that declares in one place the mixer's layer-pattern entry and its place
among the entries (``after``), its sizes (a pydantic sub-model of ``architecture.mixers``)
and their validation, its plan spec (parameters laid out as the reference
implementation's, FLOPs of the recurrent form, its constant state, its torch module
factory) and its toy rule. ``MIXERS`` (layer-pattern entry -> plugin, in module-name
order; ``in_schema_order`` places them among the built-in entries) is the one table that
the schema (the ``LayerKind`` member, the ``Mixers`` field and their checks), the plan, the
builder and the toy rule read. Adding a mixer is adding a module (and its tests);
``archdb schema`` then regenerates the catalogue header.

Plugins import the schema's building blocks (``archdb.field_types``, ``archdb.fields``)
and the FLOP conventions, never the schema nor the plan (the plan's ``Tally`` only for
type checking), and torch only inside functions: the schema imports this package on
every command, query commands included.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable

from ._plugin import MixerPlugin, ToyFrame

__all__ = ["MIXERS", "MixerPlugin", "ToyFrame", "in_schema_order"]


def _discover() -> dict[str, MixerPlugin]:
    plugins: dict[str, MixerPlugin] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        plugin = importlib.import_module(f"{__name__}.{info.name}").PLUGIN
        if not isinstance(plugin, MixerPlugin) or plugin.kind in plugins:
            raise RuntimeError(f"archdb.mixers.{info.name}: PLUGIN must be a new MixerPlugin")
        plugins[plugin.kind] = plugin
    return plugins


MIXERS: dict[str, MixerPlugin] = _discover()


def in_schema_order(built_in: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The layer-pattern entries as (member name, entry) in schema order: the built-in ones
    as given, each plugin's right after the entry its ``after`` names (a plugin's included;
    plugins after the same entry in module-name order)."""
    followers: dict[str, list[MixerPlugin]] = {}
    for plugin in MIXERS.values():
        followers.setdefault(plugin.after, []).append(plugin)
    ordered: list[tuple[str, str]] = []

    def place(member: str, entry: str) -> None:
        ordered.append((member, entry))
        for plugin in followers.pop(entry, []):
            place(plugin.member, plugin.kind)

    for member, entry in built_in:
        place(member, entry)
    if followers:
        raise RuntimeError(f"archdb.mixers: no layer-pattern entry {sorted(followers)} to follow")
    return ordered
