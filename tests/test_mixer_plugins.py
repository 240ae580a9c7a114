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


def test_lightning_is_a_plugin():
    assert "lightning" in MIXERS


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


def test_plugin_layer_kinds_follow_the_built_in_ones():
    kinds = [k.value for k in LayerKind]
    assert kinds[-len(MIXERS) :] == list(MIXERS)


def test_the_schema_imports_the_plugins_without_torch_or_the_plan():
    code = (
        "import sys, archdb.schema, archdb.catalogue; "
        "assert 'archdb.mixers.lightning' in sys.modules; "
        "print(sorted(m for m in sys.modules if m.startswith(('torch', 'archdb.plan'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
