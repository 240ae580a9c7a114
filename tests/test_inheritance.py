"""What `archdb new --like` records: inherited values rest on the other card's sources."""

from __future__ import annotations

from archdb.inheritance import compress, default_supports, inherit
from archdb.schema import Card, inherited_paths, sourced_paths
from archdb.writer import card_data, validate_card
from tests.conftest import make_card

NORM = ["architecture.norm.type", "architecture.norm.position", "architecture.norm.affine"]


def test_compress_writes_a_group_once_when_every_value_in_it_is_chosen() -> None:
    universe = [*NORM, "architecture.d_model", "architecture.attention.n_heads"]
    assert compress(NORM, universe) == ["architecture.norm"]
    assert compress(
        [*NORM, "architecture.d_model", "architecture.attention.n_heads"], universe
    ) == ["architecture"]
    assert compress(NORM[:2], universe) == ["architecture.norm.position", "architecture.norm.type"]
    assert compress([], universe) == []


def test_default_supports_are_the_architecture_values_given() -> None:
    universe = [*NORM, "architecture.d_model"]
    given = {"architecture.d_model", "params_published", "lineage"}
    assert default_supports(given, universe) == ["architecture.d_model"]
    assert default_supports({"params_published"}, universe) == []


def _draft(parent: Card, **changes: object) -> dict:
    data = card_data(make_card("child-2b", year=2024))
    data["architecture"] = card_data(parent)["architecture"]
    data["sources"] = [
        {
            "kind": "paper",
            "title": "Child paper",
            "url": "https://example.org/child",
            "locator": "Table 1",
            "supports": sorted(changes),
        }
    ]
    for path, value in changes.items():
        node = data
        *parents, leaf = path.split(".")
        for name in parents:
            node = node[name]
        node[leaf] = value
    return data


def test_inherited_values_rest_on_the_parents_sources_and_validate() -> None:
    made = make_card("parent-1b", year=2023)
    note = {"architecture.attention.head_dim": "Not published."}
    parent = Card.model_validate(card_data(made) | {"notes": made.notes | note})
    data = _draft(parent, **{"architecture.d_model": 4096})
    listed = inherit(parent, data, {"architecture.d_model"})
    card = validate_card(data)
    inherited = set(sourced_paths(card)) - {"architecture.d_model"}
    assert {item.path for item in listed} == inherited
    assert all(item.sources == ("A test source",) for item in listed)
    assert inherited_paths(card) == dict.fromkeys(inherited, "parent-1b")
    own, copied = card.sources
    assert own.supports == ["architecture.d_model"] and own.inherited_from is None
    assert copied.inherited_from == "parent-1b" and copied.url == "https://example.org/x"
    assert "architecture.d_model" not in copied.supports  # it covers only what was inherited
    assert "training" not in copied.supports and "params_published" not in copied.supports
    assert card.notes["architecture.attention.head_dim"] == (
        "Inherited from parent-1b: Not published."
    )


def test_a_source_the_parent_inherited_keeps_its_card_and_no_config_routing() -> None:
    grandparent = make_card("grand-1b", year=2022)
    parent_data = _draft(grandparent, **{"architecture.d_model": 4096})
    parent_data |= {"id": "parent-1b", "name": "parent-1b", "family": "parent"}
    inherit(grandparent, parent_data, {"architecture.d_model"})
    parent_data["sources"][0] |= {"kind": "config", "model_type": "llama"}
    parent = validate_card(parent_data)
    data = _draft(parent, **{"architecture.n_layers": 48})
    inherit(parent, data, {"architecture.n_layers"})
    card = validate_card(data)
    assert [(s.url, s.kind.value, s.inherited_from) for s in card.sources] == [
        ("https://example.org/child", "paper", None),  # the child's own
        ("https://example.org/child", "config", "parent-1b"),  # the parent's own
        ("https://example.org/x", "paper", "grand-1b"),  # the grandparent's, inherited twice
    ]
    assert card.sources[1].model_type is None  # the parent's config routes the parent only
    assert card.sources[1].supports == ["architecture.d_model"]
