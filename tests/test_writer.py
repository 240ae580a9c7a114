"""Adding a card: validate first, insert in id order, leave every other byte unchanged."""

from __future__ import annotations

import os
import re

import pytest

from archdb.catalogue import DEFAULT_PATH, load_catalogue, parse_cards
from archdb.writer import (
    WriteError,
    card_data,
    insert_card,
    plan_insert,
    render_card,
    validate_card,
)
from tests.conftest import card_text, shipped_catalogue

HEADER = "# a catalogue header\n# second line\n\n"


def card(card_id: str):
    cards, problems = parse_cards(card_text(card_id))
    assert not problems
    return cards[0]


def only_added(new: str, old: str, block: str) -> str:
    """The piece (block plus its blank-line separator) whose removal gives the old text back.

    Proves that the insertion changed nothing else: not a byte before or after it.
    """
    for piece in (block + "\n", "\n" + block, block):
        at = new.find(piece)
        while at >= 0:
            if new[:at] + new[at + len(piece) :] == old:
                return piece
            at = new.find(piece, at + 1)
    raise AssertionError("the file changed outside the inserted card")


@pytest.mark.parametrize(
    ("new_id", "position"),
    [("toy-0a", 0), ("toy-2b", 1), ("toy-9z", 2)],
)
def test_insert_at_the_sorted_position_keeps_other_bytes(tmp_path, new_id, position):
    old = HEADER + card_text("toy-1b") + "\n" + card_text("toy-3b")
    path = tmp_path / "models.yaml"
    path.write_text(old, encoding="utf-8")
    inserted = insert_card(path, card(new_id))
    new = path.read_text(encoding="utf-8")
    only_added(new, old, render_card(card(new_id)))
    cards = load_catalogue(path).ids()
    assert cards == sorted(["toy-1b", "toy-3b", new_id])
    assert cards.index(new_id) == position
    assert new.splitlines()[inserted.line - 1] == f"- id: {new_id}"


def test_comments_and_odd_formatting_elsewhere_survive(tmp_path):
    odd = card_text("toy-1b").replace("  name: Toy 1B", "  name:   'Toy 1B'   # quoted, spaced")
    old = HEADER + odd + "\n# a comment above toy-3b\n" + card_text("toy-3b") + "\n# trailer\n"
    path = tmp_path / "models.yaml"
    path.write_text(old, encoding="utf-8")
    insert_card(path, card("toy-2b"))
    new = path.read_text(encoding="utf-8")
    assert only_added(new, old, render_card(card("toy-2b"))).endswith("\n\n")
    # the new card goes above the comment that belongs to toy-3b, not between them
    assert new.index("toy-2b") < new.index("# a comment above toy-3b") < new.index("id: toy-3b")


def test_append_after_last_card_and_into_header_only_file(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(HEADER, encoding="utf-8")
    insert_card(path, card("toy-1b"))
    insert_card(path, card("toy-2b"))
    text = path.read_text(encoding="utf-8")
    assert text.startswith(HEADER)
    assert load_catalogue(path).ids() == ["toy-1b", "toy-2b"]
    assert "\n\n- id: toy-2b" in text  # blank-line separation, as the default style


def test_crlf_files_get_crlf_cards(tmp_path):
    old = (HEADER + card_text("toy-1b")).replace("\n", "\r\n")
    path = tmp_path / "models.yaml"
    path.write_bytes(old.encode())
    insert_card(path, card("toy-2b"))
    raw = path.read_bytes()
    assert b"\n" not in raw.replace(b"\r\n", b"")
    assert raw.startswith(old.encode())


def test_existing_id_is_refused_and_file_untouched(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(HEADER + card_text("toy-1b"), encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(WriteError, match="'toy-1b' already exists"):
        insert_card(path, card("toy-1b"))
    assert path.read_bytes() == before


def test_invalid_card_is_refused_with_located_problems(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(HEADER + card_text("toy-1b"), encoding="utf-8")
    before = path.read_bytes()
    data = card_data(card("toy-2b"))
    data["architecture"]["attention"]["n_kv_heads"] = 5
    data["architecture"]["d_model"] = None
    with pytest.raises(WriteError) as err:
        insert_card(path, data)
    text = str(err.value)
    assert "architecture.attention.n_kv_heads" in text and "must divide" in text
    assert path.read_bytes() == before
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")], "temporary file left"


def test_a_broken_catalogue_is_not_written_to(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(card_text("toy-1b").replace("d_model: 2048", "d_model: -1"), "utf-8")
    with pytest.raises(WriteError, match="fix them before adding"):
        insert_card(path, card("toy-2b"))


def test_validate_card_reports_unknown_fields():
    data = card_data(card("toy-2b"))
    data["colour"] = "red"
    with pytest.raises(WriteError, match="unknown field"):
        validate_card(data)


def test_rendering_round_trips_every_shipped_card():
    """The renderer writes each real card so that the loader reads back the same card."""
    cat = shipped_catalogue()
    text = "".join(render_card(c) for c in cat)
    cards, problems = parse_cards(text)
    assert problems == []
    assert cards == list(cat.cards)


def test_rendering_quotes_what_yaml_would_misread():
    data = card_data(card("toy-2b"))
    data["name"] = "yes"  # YAML 1.1 would read a boolean
    data["organization"] = "Lab: #1"  # ": " and " #" need quotes
    data["notes"] = {"architecture": "1e3"}  # YAML 1.2 would read a float
    rendered = render_card(data)
    cards, problems = parse_cards(rendered)
    assert problems == []
    assert (cards[0].name, cards[0].organization) == ("yes", "Lab: #1")
    assert cards[0].notes == {"architecture": "1e3"}


def test_plan_is_pure_text(tmp_path):
    old = HEADER + card_text("toy-1b")
    plan = plan_insert(old, card("toy-0"))
    assert plan.offset == len(HEADER)
    assert plan.apply(old).startswith(HEADER + "- id: toy-0\n")


def test_shipped_catalogue_insertion_changes_only_the_new_card(tmp_path):
    path = tmp_path / "models.yaml"
    old = DEFAULT_PATH.read_text(encoding="utf-8")
    path.write_text(old, encoding="utf-8")
    new_card = card("zz-toy-1b")
    insert_card(path, new_card)
    only_added(path.read_text(encoding="utf-8"), old, render_card(new_card))


def descendant(card_id: str, parent: str) -> dict:
    """A card's data naming ``parent`` as its lineage, with a source that states it."""
    data = card_data(card(card_id)) | {"lineage": parent}
    data["sources"][0]["supports"] = [*data["sources"][0]["supports"], "lineage"]
    return data


def test_a_card_with_a_lineage_joins_the_catalogue_holding_its_parent(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(card_text("toy-1b"), encoding="utf-8")
    child = descendant("toy-2b", "toy-1b")
    assert validate_card(child).lineage == "toy-1b"  # checked on its own: no catalogue yet
    insert_card(path, child)
    assert load_catalogue(path).get("toy-2b").lineage == "toy-1b"


def test_a_lineage_outside_the_catalogue_is_refused_before_writing(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(card_text("toy-1b"), encoding="utf-8")
    before = path.read_bytes()
    orphan = descendant("toy-2b", "toy-0b")
    with pytest.raises(WriteError, match="lineage 'toy-0b' is not a card of"):
        insert_card(path, orphan)
    assert path.read_bytes() == before


def test_a_lineage_naming_the_card_itself_is_refused_on_its_own():
    with pytest.raises(WriteError, match="lineage: names the card itself"):
        validate_card(descendant("toy-2b", "toy-2b"))


def test_card_starts_are_those_of_the_pure_python_composer(monkeypatch):
    """The writer finds cards with libyaml's marks: the same offsets as PyYAML's own, for
    the shipped catalogue's first cards and for wide characters, CRLF and a "-" alone."""
    from archdb import writer

    shipped = DEFAULT_PATH.read_text(encoding="utf-8")
    first = shipped[: [m.start() for m in re.finditer(r"\n- id:", shipped)][16] + 1]  # 16 cards
    wide = card_text("toy-1b").replace("Toy 1B", "Toy 😀 é∞ 1B") + "# ∞\n" + card_text("toy-2b")
    alone = "- a: 1\n# é\n-\n  b: 😀\n  c: 2\n- d: [∞]\n"
    texts = [first, wide, wide.replace("\n", "\r\n"), alone]
    fast = [writer._item_starts(text, "<t>") for text in texts]
    monkeypatch.setattr(writer, "SAFE_LOADER", writer.yaml.SafeLoader)
    assert fast == [writer._item_starts(text, "<t>") for text in texts]
    assert [len(starts) for starts in fast] == [16, 2, 2, 3]
    assert fast[3] == [0, alone.index("-\n"), alone.index("- d")]
