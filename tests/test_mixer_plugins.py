"""Token-mixer plugins (archdb.mixers): each module's one declaration reaches the schema
(its LayerKind member, its Mixers field, its checks), the plan and the toy rule, and the
schema imports them without torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from archdb.mixers import MIXERS
from archdb.plan.recurrent import RECURRENT
from archdb.schema import RECURRENT_KINDS, Architecture, LayerKind, Mixers


def test_every_recurrent_mixer_is_a_plugin():
    plugins = {"mamba2", "gated-deltanet", "short-conv", "mamba", "kda", "rg-lru", "lightning"}
    assert plugins <= set(MIXERS) and set(RECURRENT) == {LayerKind(k) for k in MIXERS}


@pytest.mark.parametrize("kind", sorted(MIXERS))
def test_a_plugin_is_a_layer_kind_a_mixers_field_and_a_plan_maker(kind):
    plugin = MIXERS[kind]
    member = LayerKind[plugin.member]
    assert member.value == kind and member in RECURRENT_KINDS
    assert member.recurrent is member and not member.attention
    field = Mixers.model_fields[plugin.field]
    assert field.description == plugin.description and field.default is None
    assert "mlp" in plugin.sizes.model_fields  # whether its layers keep the card's MLP
    assert member in RECURRENT
    described = Architecture.model_fields["mixers"].description
    assert kind in described


# card dumps list fields in schema order and the measurement cache is keyed by them: a
# plugin takes its place by ``after``, and moving a mixer into a plugin keeps the order
SCHEMA_ORDER = [
    "global", "local", "global-nope", "chunked", "mamba2", "gated-deltanet", "short-conv",
    "mlp", "moe", "global+mamba2", "mamba", "kda", "rg-lru", "lightning",
]  # fmt: skip


def test_layer_kinds_and_mixers_fields_keep_the_schema_order():
    assert [k.value for k in LayerKind][: len(SCHEMA_ORDER)] == SCHEMA_ORDER
    recurrent = [k for k in SCHEMA_ORDER if LayerKind(k) in RECURRENT_KINDS]
    assert list(Mixers.model_fields)[: len(recurrent)] == [k.replace("-", "_") for k in recurrent]


@pytest.mark.parametrize("kind", sorted(MIXERS))
def test_a_plugin_follows_the_entry_it_names(kind):
    kinds = [k.value for k in LayerKind]
    after, at = kinds.index(MIXERS[kind].after), kinds.index(kind)
    assert after < at and all(k in MIXERS for k in kinds[after + 1 : at])  # only plugins between


def test_a_plugin_after_an_unknown_entry_is_refused(monkeypatch):
    from dataclasses import replace

    from archdb import mixers

    stray = replace(MIXERS["lightning"], kind="stray", after="no-such-entry")
    monkeypatch.setitem(mixers.MIXERS, "stray", stray)
    with pytest.raises(RuntimeError, match="no layer-pattern entry"):
        mixers.in_schema_order([("GLOBAL", "global")])


def test_the_schema_imports_the_plugins_without_torch_or_the_plan():
    code = (
        "import sys, archdb.schema, archdb.catalogue; "
        "assert 'archdb.mixers.lightning' in sys.modules; "
        "print(sorted(m for m in sys.modules if m.startswith(('torch', 'archdb.plan'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
