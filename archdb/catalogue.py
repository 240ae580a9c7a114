"""Load the YAML catalogue into typed cards, reporting every problem with file and line.

PyYAML's own loaders are unsafe for a reviewed data file in two quiet ways: a duplicate
key silently keeps the last value (data is lost), and aliases can expand without bound.
So the catalogue is *composed* into YAML nodes (which keep their line marks) and built
into Python values here, refusing duplicate keys, non-standard tags and runaway aliases,
and every validation error is mapped back to the node it came from.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from archdb.schema import Card

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "data" / "models.yaml"

_YAML = "tag:yaml.org,2002:"
SCALAR_TAGS = {_YAML + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
ALIAS_EXPANSION_LIMIT = 10_000  # nodes an alias may re-use, in total, per file
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: 5x faster
_SCALARS = yaml.constructor.SafeConstructor()


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
        return f"{self.file}:{self.line}:{self.column}: {where + ': ' if where else ''}{self.message}"


class CatalogueError(Exception):
    """The catalogue could not be loaded; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))


@dataclass(frozen=True)
class Catalogue:
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


def load_catalogue(path: Path | str = DEFAULT_PATH) -> Catalogue:
    """Load and validate the catalogue; raise CatalogueError listing every problem."""
    path = Path(path)
    cards, problems = check_catalogue(path)
    if problems:
        raise CatalogueError(problems)
    return Catalogue(path, tuple(cards))


def check_catalogue(path: Path) -> tuple[list[Card], list[Problem]]:
    """Validate a catalogue file, returning the valid cards and all problems found."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [Problem(str(path), 1, 1, None, None, f"cannot read file: {exc}")]
    return parse_cards(text, str(path))


def parse_cards(text: str, filename: str = "<string>") -> tuple[list[Card], list[Problem]]:
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return [], [Problem(filename, line, col, None, None, f"YAML syntax: {exc.problem}")]
    except yaml.YAMLError as exc:
        return [], [Problem(filename, 1, 1, None, None, f"YAML error: {exc}")]
    if root is None:
        return [], [Problem(filename, 1, 1, None, None, "the file is empty: expected a list of cards")]
    if not isinstance(root, yaml.SequenceNode):
        return [], [_at(filename, root, None, None, "expected a list of cards at the top level")]

    builder = _Builder(filename)
    cards: list[Card] = []
    problems: list[Problem] = []
    first_seen: dict[str, int] = {}
    for node in root.value:
        data, build_problems = builder.build_card(node)
        card_id = _card_id(node)
        if build_problems:
            problems.extend(build_problems)
            continue
        try:
            card = Card.model_validate(data)
        except ValidationError as exc:
            problems.extend(_locate(filename, node, card_id, err) for err in exc.errors())
            continue
        if card.id in first_seen:
            problems.append(
                _at(filename, _find(node, ("id",)), card.id, "id",
                    f"duplicate id: already used by the card at line {first_seen[card.id]}")
            )
            continue
        first_seen[card.id] = node.start_mark.line + 1
        cards.append(card)
    problems.extend(_order_problems(filename, root.value, cards, problems))
    return cards, problems


# --- building values from nodes ------------------------------------------------------


class _Builder:
    """Turns composed nodes into plain values, refusing what PyYAML would let through."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.seen: set[int] = set()
        self.sizes: dict[int, int] = {}
        self.alias_expansion = 0

    def build_card(self, node: yaml.Node) -> tuple[object, list[Problem]]:
        problems: list[Problem] = []
        card_id = _card_id(node)
        value = self._build(node, card_id, (), problems)
        return value, problems

    def _build(self, node: yaml.Node, card_id: str | None, path: tuple, out: list[Problem]) -> object:
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            if id(node) in self.seen:  # an alias re-uses a node: bound what it expands to
                self.alias_expansion += _expanded_size(node, self.sizes)
                if self.alias_expansion > ALIAS_EXPANSION_LIMIT:
                    out.append(self._problem(node, card_id, path,
                               f"aliases expand to over {ALIAS_EXPANSION_LIMIT} nodes: refused"))
                    return None
            self.seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.tag not in SCALAR_TAGS:
                out.append(self._problem(node, card_id, path, f"tag {node.tag!r} is not allowed: "
                                         "only plain YAML scalars, lists and mappings"))
                return None
            return _SCALARS.yaml_constructors[node.tag](_SCALARS, node)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _YAML + "seq":
                out.append(self._problem(node, card_id, path, f"tag {node.tag!r} is not allowed"))
                return None
            return [self._build(item, card_id, (*path, i), out) for i, item in enumerate(node.value)]
        if node.tag != _YAML + "map":
            out.append(self._problem(node, card_id, path, f"tag {node.tag!r} is not allowed"))
            return None
        mapping: dict[object, object] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _YAML + "merge":
                out.append(self._problem(key_node, card_id, path, "merge keys (<<) are not allowed"))
                continue
            key = self._build(key_node, card_id, path, out)
            if not isinstance(key, str):
                out.append(self._problem(key_node, card_id, path, f"key {key!r} is not a string"))
                continue
            if key in mapping:
                out.append(self._problem(key_node, card_id, (*path, key),
                           "duplicate key: YAML would silently keep only the last value"))
                continue
            mapping[key] = self._build(value_node, card_id, (*path, key), out)
        return mapping

    def _problem(self, node: yaml.Node, card_id: str | None, path: tuple, msg: str) -> Problem:
        return _at(self.filename, node, card_id, _dotted(path), msg)


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes a collection expands to with aliases followed; memoized, so linear in nodes."""
    if id(node) in memo:
        return memo[id(node)]
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(n, memo) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[id(node)] = size
    return size


# --- locating problems ---------------------------------------------------------------

_PATH_PREFIX = re.compile(r"^([a-z_]+(?:\.[a-z_]+)*) ")


def _locate(filename: str, card_node: yaml.Node, card_id: str | None, err: dict) -> Problem:
    """Map a pydantic error to the node it concerns; cross-field messages name their field."""
    loc = tuple(err["loc"])
    message = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "value_error" and (m := _PATH_PREFIX.match(message)):
        refined = (*loc, *m.group(1).split("."))
        if _find(card_node, refined, exact=True) is not None:
            loc = refined
    if err["type"] == "missing":
        message = "required field is missing"
    elif err["type"] == "extra_forbidden":
        valid = _valid_fields(loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        message = f"unknown field: {hint}valid fields here: {', '.join(valid)}"
    elif "input" in err and not isinstance(err["input"], dict | list):
        message = f"{message} (got {err['input']!r})"
    return _at(filename, _find(card_node, loc), card_id, _dotted(loc), message)


def _valid_fields(loc: tuple) -> list[str]:
    model: type = Card
    for part in loc:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[part].annotation
        model = next((a for a in getattr(annotation, "__args__", (annotation,))
                      if hasattr(a, "model_fields")), annotation)
        if getattr(model, "__origin__", None) is list:
            model = model.__args__[0]
    return list(getattr(model, "model_fields", {}))


def _find(node: yaml.Node, loc: Iterable, exact: bool = False) -> yaml.Node | None:
    """The node at a path of keys and indexes, or the deepest ancestor that exists."""
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            child = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
        if child is None:
            return None if exact else node
        node = child
    return node


def _card_id(node: yaml.Node) -> str | None:
    found = _find(node, ("id",), exact=True)
    return found.value if isinstance(found, yaml.ScalarNode) else None


def _dotted(loc: Iterable) -> str | None:
    text = ".".join(str(p) for p in loc)
    return text or None


def _at(filename: str, node: yaml.Node | None, card_id: str | None, field: str | None,
        message: str) -> Problem:
    mark = node.start_mark if node is not None else None
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    return Problem(filename, line, col, card_id, field, message)


def _order_problems(filename: str, nodes: list, cards: list[Card], problems: list) -> list[Problem]:
    """Cards are kept sorted by id so a new card has exactly one place to go."""
    if problems:
        return []
    out = []
    for (prev, card), node in zip(zip(cards, cards[1:]), nodes[1:], strict=False):
        if card.id < prev.id:
            out.append(_at(filename, _find(node, ("id",)), card.id, "id",
                           f"cards are sorted by id: move {card.id!r} before {prev.id!r}"))
    return out
