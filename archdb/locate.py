"""The locating pass: map catalogue problems to file lines through PyYAML's nodes.

Only run when something is wrong (see archdb.catalogue): composing the text into nodes
that keep their marks costs several times the fast parse. PyYAML's own loaders are unsafe
for a reviewed data file in two quiet ways (a duplicate key silently keeps the last value;
aliases expand without bound), so this pass walks the nodes itself and reports every
duplicate key, non-standard tag and runaway alias of a file, not just the first.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

import yaml
from pydantic import ValidationError

from archdb.catalogue import ALIAS_EXPANSION_LIMIT, Problem
from archdb.schema import Card

_YAML = "tag:yaml.org,2002:"
SCALAR_TAGS = {_YAML + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: 5x faster
_SCALARS = yaml.constructor.SafeConstructor()


def structure_problems(text: str, filename: str, parser_error: str | None) -> list[Problem]:
    """Every syntax error, duplicate key, bad tag and runaway alias, each with its line."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return [Problem(filename, line, col, None, None, f"YAML syntax: {exc.problem}")]
    except yaml.YAMLError as exc:
        return [Problem(filename, 1, 1, None, None, f"YAML error: {exc}")]
    problems: list[Problem] = []
    if root is not None:
        builder = _Builder(filename)
        nodes = root.value if isinstance(root, yaml.SequenceNode) else [root]
        for node in nodes:
            problems.extend(builder.build_card(node)[1])
    if not problems and parser_error:  # the two parsers disagree: trust the stricter one
        line, col = _line_col(parser_error)
        problems.append(Problem(filename, line, col, None, None, f"YAML: {parser_error}"))
    return problems


def _line_col(message: str) -> tuple[int, int]:
    found = re.search(r"line (\d+), column (\d+)", message)
    return (int(found.group(1)), int(found.group(2))) if found else (1, 1)


def locate_failures(
    text: str, filename: str, failures: list[tuple[int, ValidationError | int]]
) -> list[Problem]:
    root = yaml.compose(text, Loader=_Loader)
    problems: list[Problem] = []
    for index, failure in failures:
        node = root.value[index]
        card_id = _card_id(node)
        if isinstance(failure, int):
            first_line = root.value[failure].start_mark.line + 1
            message = f"duplicate id: already used by the card at line {first_line}"
            problems.append(_at(filename, _find(node, ("id",)), card_id, "id", message))
        else:
            problems.extend(_locate(filename, node, card_id, err) for err in failure.errors())
    return problems


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

    def _build(
        self, node: yaml.Node, card_id: str | None, path: tuple, out: list[Problem]
    ) -> object:
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            if id(node) in self.seen:  # an alias re-uses a node: bound what it expands to
                self.alias_expansion += _expanded_size(node, self.sizes)
                if self.alias_expansion > ALIAS_EXPANSION_LIMIT:
                    out.append(
                        self._problem(
                            node,
                            card_id,
                            path,
                            f"aliases expand to over {ALIAS_EXPANSION_LIMIT} nodes: refused",
                        )
                    )
                    return None
            self.seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.tag not in SCALAR_TAGS:
                out.append(
                    self._problem(
                        node,
                        card_id,
                        path,
                        f"tag {node.tag!r} is not allowed: "
                        "only plain YAML scalars, lists and mappings",
                    )
                )
                return None
            return _SCALARS.yaml_constructors[node.tag](_SCALARS, node)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _YAML + "seq":
                out.append(self._problem(node, card_id, path, f"tag {node.tag!r} is not allowed"))
                return None
            return [
                self._build(item, card_id, (*path, i), out) for i, item in enumerate(node.value)
            ]
        if node.tag != _YAML + "map":
            out.append(self._problem(node, card_id, path, f"tag {node.tag!r} is not allowed"))
            return None
        mapping: dict[object, object] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _YAML + "merge":
                out.append(
                    self._problem(key_node, card_id, path, "merge keys (<<) are not allowed")
                )
                continue
            key = self._build(key_node, card_id, path, out)
            if not isinstance(key, str):
                out.append(self._problem(key_node, card_id, path, f"key {key!r} is not a string"))
                continue
            if key in mapping:
                out.append(
                    self._problem(
                        key_node,
                        card_id,
                        (*path, key),
                        "duplicate key: YAML would silently keep only the last value",
                    )
                )
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
            loc, message = refined, message[m.end() :]
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
        model = next(
            (
                a
                for a in getattr(annotation, "__args__", (annotation,))
                if hasattr(a, "model_fields")
            ),
            annotation,
        )
        if getattr(model, "__origin__", None) is list:
            model = model.__args__[0]
    return list(getattr(model, "model_fields", {}))


def _find(node: yaml.Node, loc: Iterable, exact: bool = False) -> yaml.Node | None:
    """The node at a path of keys and indexes, or the deepest ancestor that exists."""
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            child = next((v for k, v in node.value if k.value == part), None)
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
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


def _at(
    filename: str, node: yaml.Node | None, card_id: str | None, field: str | None, message: str
) -> Problem:
    mark = node.start_mark if node is not None else None
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    return Problem(filename, line, col, card_id, field, message)


def order_problems(text: str, filename: str, cards: list[Card]) -> list[Problem]:
    """Cards are kept sorted by id so that a new card has exactly one place to go, and a
    card's lineage names a card of the same catalogue."""
    ids = {card.id for card in cards}
    found = [
        (i, ("id",), f"cards are sorted by id: move {cards[i].id!r} before {cards[i - 1].id!r}")
        for i in range(1, len(cards))
        if cards[i].id < cards[i - 1].id
    ] + [
        (i, ("lineage",), f"lineage {card.lineage!r} is not a card of this catalogue")
        for i, card in enumerate(cards)
        if card.lineage is not None and card.lineage not in ids
    ]
    if not found:
        return []
    root = yaml.compose(text, Loader=_Loader)
    return [
        _at(filename, _find(root.value[i], path), cards[i].id, path[0], message)
        for i, path, message in sorted(found)
    ]
