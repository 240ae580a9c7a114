"""Load the YAML catalogue into typed cards, reporting every problem with file and line.

Two passes keep loading fast and errors precise:

- The fast pass parses with yaml_rs (a Rust YAML 1.2 parser: ``true``/``false`` are the
  only booleans, ``1e-4`` is a float) which refuses duplicate keys and bounds alias
  expansion, then validates every card with pydantic. A valid file never pays for line
  numbers.
- Only when something is wrong does the locating pass compose the text with PyYAML into
  nodes that keep their line marks, and map each problem to the node it concerns.
  PyYAML's own loaders are unsafe for a reviewed data file in two quiet ways (a
  duplicate key silently keeps the last value; aliases expand without bound), so this
  pass walks the nodes itself and reports every duplicate key, non-standard tag and
  runaway alias in the file, not just the first.
"""

from __future__ import annotations

import difflib
import gc
import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml_rs
from pydantic import ValidationError

from archdb import cache
from archdb.schema import Card

if TYPE_CHECKING:
    import pandas as pd

CATALOGUE_ENV = "ARCHDB_CATALOGUE"
CATALOGUE_RULES = (
    "Default: $ARCHDB_CATALOGUE, else data/models.yaml of the archdb checkout you stand "
    "in (found upward from the current folder), else the catalogue installed with archdb."
)
_PYPROJECT_LIMIT = 1_000_000  # bytes read of a pyproject.toml when recognising a checkout


def packaged_catalogue() -> Path:
    """The catalogue shipped with the package: archdb/data/models.yaml in an installed
    wheel; in an editable install, data/models.yaml of the source checkout (pyproject.toml
    installs data/ as archdb/data/, so there is one committed copy)."""
    package = Path(__file__).resolve().parent
    installed = package / "data" / "models.yaml"
    return installed if installed.is_file() else package.parent / "data" / "models.yaml"


DEFAULT_PATH = packaged_catalogue()  # the last resort of resolve_catalogue


def checkout_catalogue(start: Path | None = None) -> Path | None:
    """data/models.yaml of the archdb project checkout that holds ``start`` (default: the
    current folder): the nearest folder upward with that file beside a pyproject.toml
    whose project is named archdb. None outside a checkout."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "data" / "models.yaml"
        if candidate.is_file() and _is_archdb_project(folder / "pyproject.toml"):
            return candidate
    return None


def _is_archdb_project(pyproject: Path) -> bool:
    try:
        with pyproject.open("rb") as file:
            data = tomllib.loads(file.read(_PYPROJECT_LIMIT).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    project = data.get("project")
    return isinstance(project, dict) and project.get("name") == "archdb"


class CatalogueLocationError(ValueError):
    """No catalogue a command may write to (only the installed, read-only copy)."""


def resolve_catalogue(explicit: Path | str | None = None, *, writing: bool = False) -> Path:
    """The catalogue to use: ``explicit`` (--catalogue), else $ARCHDB_CATALOGUE, else the
    checkout's data/models.yaml (see ``checkout_catalogue``), else the packaged copy.

    ``writing`` (archdb new, import-hf) refuses the copy inside an installed wheel: a
    card added there would vanish with the next upgrade.
    """
    if explicit is not None and str(explicit):
        return Path(explicit)
    if env := os.environ.get(CATALOGUE_ENV):
        return Path(env)
    found = checkout_catalogue()
    if found is not None:
        return found
    packaged = packaged_catalogue()
    if writing and packaged.parent.parent == Path(__file__).resolve().parent:
        raise CatalogueLocationError(
            "no catalogue to write to: the installed one is read-only; run inside an archdb "
            f"checkout, or name a catalogue with --catalogue or ${CATALOGUE_ENV}"
        )
    return packaged


ALIAS_EXPANSION_LIMIT = 10_000  # nodes aliases may re-use, in total, per file
_ALIAS_LIMITS = yaml_rs.AliasLimits(max_total_replayed_events=ALIAS_EXPANSION_LIMIT)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the catalogue, located for a human."""

    file: str
    line: int  # 1-based
    column: int  # 1-based
    card_id: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = " ".join(x for x in (self.card_id, self.field) if x)
        return (
            f"{self.file}:{self.line}:{self.column}: {where + ': ' if where else ''}{self.message}"
        )


class CatalogueError(Exception):
    """The catalogue could not be loaded; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))


@dataclass(frozen=True)
class Catalogue:
    """Validated cards, in file order: iterate, ``get`` an id, filter with ``where``, or
    tabulate with ``frame``.

    >>> import archdb
    >>> cat = archdb.load()
    >>> cat.get("llama-2-7b").architecture.d_model
    4096
    >>> recent_gqa = cat.where("year>=2024", "attention=gqa")
    >>> all(card.year >= 2024 for card in recent_gqa)
    True
    >>> cat.frame().loc["gemma-2-9b", "architecture.norm.type"]
    'rmsnorm'
    """

    path: Path
    cards: tuple[Card, ...]

    def __iter__(self) -> Iterator[Card]:
        return iter(self.cards)

    def __len__(self) -> int:
        return len(self.cards)

    def ids(self) -> list[str]:
        return [c.id for c in self.cards]

    def get(self, card_id: str) -> Card | None:
        return next((c for c in self.cards if c.id == card_id), None)

    def where(self, *expressions: str) -> Catalogue:
        """The cards matching every expression of ``archdb list --where`` (``year>=2024``,
        ``attention=gqa``, ``activation in (swiglu,geglu)``, joined by ``and`` or given
        apart); raise archdb.query.QueryError on a malformed one."""
        from archdb import query

        conditions = query.parse_where(expressions)
        rows = query.rows(self.cards)
        kept = tuple(
            card
            for card, row in zip(self.cards, rows, strict=True)
            if all(c.matches(row) for c in conditions)
        )
        return Catalogue(self.path, kept)

    def frame(self) -> pd.DataFrame:
        """The cards as the pandas DataFrame the reports use (archdb.table), by id."""
        from archdb.table import catalogue_frame

        return catalogue_frame(self.cards)

    def family(self, family: str) -> list[Card]:
        return [c for c in self.cards if c.family == family]

    def resolve(self, name: str) -> Card:
        """A card id, or a family name meaning its largest published model."""
        card = self.get(name)
        if card is not None:
            return card
        members = self.family(name)
        if members:
            return max(members, key=lambda c: (c.params_published or 0, c.release_date))
        raise UnknownCardError(name, self.suggest(name))

    def suggest(self, name: str) -> list[str]:
        choices = sorted(set(self.ids()) | {c.family for c in self.cards})
        return difflib.get_close_matches(name, choices, n=5, cutoff=0.5)


class UnknownCardError(KeyError):
    def __init__(self, name: str, suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"no card or family named {name!r}{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


def load_catalogue(path: Path | str | None = None) -> Catalogue:
    """Load and validate the catalogue; raise CatalogueError listing every problem.

    Without ``path``, the catalogue ``resolve_catalogue`` finds.
    """
    path = resolve_catalogue(path)
    cards, problems = check_catalogue(path)
    if problems:
        raise CatalogueError(problems)
    return Catalogue(path, tuple(cards))


def check_catalogue(path: Path, use_cache: bool = True) -> tuple[list[Card], list[Problem]]:
    """Validate a catalogue file, returning the valid cards and all problems found.

    A file that validated before, byte for byte and under the same schema, is read from
    the validation cache instead (see archdb.cache): query commands start faster.
    """
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [Problem(str(path), 1, 1, None, None, f"cannot read file: {exc}")]
    if use_cache and (cached := cache.read(raw)) is not None:
        return cached, []
    cards, problems = parse_cards(text, str(path))
    if use_cache and not problems:
        cache.write(raw, cards)
    return cards, problems


def parse_cards(text: str, filename: str = "<string>") -> tuple[list[Card], list[Problem]]:
    """Validate catalogue text: the valid cards, and every problem located by line."""
    # Loading allocates many small objects that all stay alive: the cyclic collector
    # would rescan them again and again (quadratic growth), so it pauses meanwhile.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_cards(text, filename)
    finally:
        if gc_was_enabled:
            gc.enable()


def _parse_cards(text: str, filename: str) -> tuple[list[Card], list[Problem]]:
    try:
        data = yaml_rs.loads(text, alias_limits=_ALIAS_LIMITS)
    except yaml_rs.YAMLDecodeError as exc:
        return [], _locating().structure_problems(text, filename, str(exc))
    if _may_have_tag(text):  # yaml_rs drops unknown tags silently: let the node pass judge
        problems = _locating().structure_problems(text, filename, None)
        if problems:
            return [], problems
    if not isinstance(data, list):
        kind = "nothing" if data is None else type(data).__name__
        return [], [Problem(filename, 1, 1, None, None, f"expected a list of cards, got {kind}")]

    cards: list[Card] = []
    failures: list[tuple[int, ValidationError | int]] = []  # (card, error or first index)
    first_seen: dict[str, int] = {}
    for index, item in enumerate(data):
        try:
            card = Card.model_validate(item)
        except ValidationError as exc:
            failures.append((index, exc))
            continue
        if card.id in first_seen:
            failures.append((index, first_seen[card.id]))
            continue
        first_seen[card.id] = index
        cards.append(card)
    if not failures:
        return cards, _locating().order_problems(text, filename, cards)
    return cards, _locating().locate_failures(text, filename, failures)


def _locating():
    from archdb import locate

    return locate


def _may_have_tag(text: str) -> bool:
    """Whether a "!" stands where a YAML node may start (line start, after a blank, "[", "{"
    or ","): a tag, or a "!" in prose. str.find keeps this fast on large files, where a
    regular expression scan costs more than parsing."""
    at = text.find("!")
    while at != -1:
        if at == 0 or text[at - 1] in " \t\r\n[{,":
            return True
        at = text.find("!", at + 1)
    return False
