"""Catalogues for the site's tests: small ones, and one with a hostile card."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import card_text

HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_ID = "zzz-xss-1b"  # sorts after every shipped card: appended to the catalogue
_SOURCE_TITLE = '"><img src=x onerror=alert(4)>'
_NOTE = "</script><script>alert(2)</script> <img src=x onerror=alert(3)> & more"


def hostile_card() -> str:
    """A valid card whose every free-text field is markup (it must show as text)."""
    text = card_text(HOSTILE_ID)
    text = text.replace("name: Toy 1B", f"name: '{HOSTILE_NAME}'")
    text = text.replace("family: toy", "family: xss")
    text = text.replace("organization: Example Lab", "organization: 'Evil & Co </td><b>x</b>'")
    text = text.replace("title: config.json", f"title: '{_SOURCE_TITLE}'")
    return text + f"  notes:\n    architecture.d_model: '{_NOTE}'\n"


def write(path: Path, *cards: str) -> Path:
    path.write_text("".join(cards), encoding="utf-8")
    return path


def small_catalogue(folder: Path) -> Path:
    """Two toy cards and the hostile one: the site tests' catalogue, whose site the file
    and the browser tests share (``tests.conftest.shared_site``)."""
    return write(folder / "models.yaml", card_text("toy-1b"), card_text("toy-7b"), hostile_card())
