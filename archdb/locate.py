"""The locating pass: map catalogue problems to file lines through PyYAML's nodes.

Only run when something is wrong (see archdb.catalogue): composing the text into nodes
that keep their marks costs several times the fast parse. PyYAML's own loaders are unsafe
for a reviewed data file in two quiet ways (a duplicate key silently keeps the last value;
aliases expand without bound), so this pass walks the nodes itself and reports every
duplicate key, explicit tag, runaway alias and too-deep nesting of a file, not just the
first.

PyYAML reads YAML 1.1 (``yes`` is a boolean, ``010`` is octal 8, ``2024-06-01`` a date);
the fast pass reads YAML 1.2's core schema. So this pass resolves plain scalars itself, with
``resolve_plain``: the fast parser's rules exactly (a differential test holds the two to
one semantics). Quoted scalars are always strings; explicit tags are refused, because the
two parsers give them different meanings (yaml_rs reads ``!!str 5`` as the number 5).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable

import yaml
from pydantic import ValidationError

from archdb.errors import validation_message
from archdb.fields import field_at
from archdb.problems import ALIAS_EXPANSION_LIMIT, Problem
from archdb.schema import Card

_YAML = "tag:yaml.org,2002:"
PLAIN = "archdb:plain"  # an untagged plain scalar, resolved by resolve_plain
QUOTED = "archdb:quoted"  # an untagged quoted or block scalar: always a string
MAX_NESTING = 64  # levels of lists and mappings; a card needs five
# PyYAML's safe loading through libyaml when available: 5x faster than its pure-Python one
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(SAFE_LOADER):  # type: ignore[misc,valid-type]
    """Composes nodes without YAML 1.1's implicit types: scalars keep their style."""

    def resolve(self, kind: type, value: object, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            return PLAIN if implicit[0] else QUOTED
        return super().resolve(kind, value, implicit)


# --- YAML 1.2 core scalars, as the fast parser (yaml_rs) reads them ----------------

_DIGITS = r"[0-9_]*[0-9][0-9_]*"  # underscores may separate digits: 175_000_000_000
_DECIMAL = re.compile(_DIGITS)
_PREFIXED = {
    "x": (re.compile(r"[0-9a-fA-F_]*[0-9a-fA-F][0-9a-fA-F_]*"), 16),
    "o": (re.compile(r"[0-7_]*[0-7][0-7_]*"), 8),
    "b": (re.compile(r"[01_]*[01][01_]*"), 2),
}
_FLOAT = re.compile(rf"(?:_*\.{_DIGITS}|{_DIGITS}(?:\.[0-9_]*)?)(?:[eE][-+]?{_DIGITS})?")
_INF = re.compile(r"[-+]?\.inf", re.IGNORECASE)
_NAN = re.compile(r"\.nan", re.IGNORECASE)
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}


def resolve_plain(text: str) -> object:
    """A plain (unquoted) scalar's value: null, a boolean, an int, a float or the string.

    ValueError for an integer too long for Python to convert (over 4,300 digits), where
    the fast parser fails too.
    """
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if _INF.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    if _NAN.fullmatch(text):
        return math.nan
    sign = text[:1] if text[:1] in "+-" else ""
    rest = text[len(sign) :]
    if rest[:1] == "0" and rest[1:2].lower() in _PREFIXED:
        digits, base = _PREFIXED[rest[1:2].lower()]
        return int(sign + rest[2:].replace("_", ""), base) if digits.fullmatch(rest[2:]) else text
    if _DECIMAL.fullmatch(rest):
        return int(sign + rest.replace("_", ""))
    if _FLOAT.fullmatch(rest):
        return float(sign + rest.replace("_", ""))
    return text


def compose(text: str) -> yaml.Node | None:
    """The text's node tree, with line marks (YAMLError if PyYAML cannot parse it)."""
    return yaml.compose(text, Loader=_Loader)


def load_values(text: str) -> tuple[object, list[Problem]]:
    """The text read as plain data by this pass, with every structural problem.

    The differential tests compare this with the fast parser's reading.
    """
    root = compose(text)
    if root is None:
        return None, []
    problems: list[Problem] = []
    value = _Builder("<string>")._build(root, None, (), problems, 0)
    return value, problems


def structure_problems(text: str, filename: str, parser_error: str | None) -> list[Problem]:
    """Every syntax error, duplicate key, bad tag and runaway alias, each with its line."""
    try:
        root = compose(text)
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
        first_line = parser_error.strip().split("\n", 1)[0]
        problems.append(Problem(filename, line, col, None, None, f"YAML: {first_line}"))
    return problems


def _line_col(message: str) -> tuple[int, int]:
    found = re.search(r"line (\d+), column (\d+)", message)
    return (int(found.group(1)), int(found.group(2))) if found else (1, 1)


def locate_failures(
    text: str, filename: str, failures: list[tuple[int, ValidationError | int]]
) -> list[Problem]:
    try:
        root = compose(text)
    except yaml.YAMLError as exc:  # the fast parser read what PyYAML cannot: refuse it
        return structure_problems(text, filename, str(exc))
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
        value = self._build(node, card_id, (), problems, 1)
        return value, problems

    def _build(
        self, node: yaml.Node, card_id: str | None, path: tuple, out: list[Problem], depth: int
    ) -> object:
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            if depth > MAX_NESTING:
                message = f"nested deeper than {MAX_NESTING} levels: refused"
                out.append(self._problem(node, card_id, path, message))
                return None
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
            if node.tag == QUOTED:
                return node.value
            if node.tag != PLAIN:
                message = f"tag {node.tag!r} is not allowed: write plain values, untagged"
                out.append(self._problem(node, card_id, path, message))
                return None
            try:
                return resolve_plain(node.value)
            except ValueError:
                message = f"number with {len(node.value):,} characters: refused"
                out.append(self._problem(node, card_id, path, message))
                return None
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _YAML + "seq":
                out.append(self._problem(node, card_id, path, f"tag {node.tag!r} is not allowed"))
                return None
            return [
                self._build(item, card_id, (*path, i), out, depth + 1)
                for i, item in enumerate(node.value)
            ]
        if node.tag != _YAML + "map":
            out.append(self._problem(node, card_id, path, f"tag {node.tag!r} is not allowed"))
            return None
        mapping: dict[object, object] = {}
        for key_node, value_node in node.value:
            key = self._build(key_node, card_id, path, out, depth + 1)
            if key_node.tag == PLAIN and key_node.value == "<<":
                out.append(
                    self._problem(key_node, card_id, path, "merge keys (<<) are not allowed")
                )
            elif not isinstance(key, str):
                message = f"key {_brief(key)} is not a string"
                out.append(self._problem(key_node, card_id, path, message))
            key = _hashable(key)
            if key is _UNHASHABLE:
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
            mapping[key] = self._build(value_node, card_id, (*path, key), out, depth + 1)
        return mapping

    def _problem(self, node: yaml.Node, card_id: str | None, path: tuple, msg: str) -> Problem:
        return _at(self.filename, node, card_id, _dotted(path), msg)


_UNHASHABLE = object()


def _hashable(key: object) -> object:
    """A complex key as the fast parser holds it (a list as a tuple, a mapping as a
    frozenset of its items), or _UNHASHABLE."""
    if isinstance(key, list):
        key = tuple(key)
    elif isinstance(key, dict):
        key = frozenset(key.items()) if all(_is_hashable(v) for v in key.values()) else key
    return key if _is_hashable(key) else _UNHASHABLE


def _is_hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes a collection expands to with aliases followed; memoized, so linear in nodes.
    Iterative (children before parents), so deep nesting cannot exhaust the stack."""
    stack = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        if id(current) in memo:
            continue
        children = _children(current)
        if children_done:
            memo[id(current)] = 1 + sum(memo[id(c)] for c in children)
        else:
            stack.append((current, True))
            stack.extend((c, False) for c in children if id(c) not in memo)
    return memo[id(node)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


# --- locating problems ---------------------------------------------------------------

_PATH_PREFIX = re.compile(r"^([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*) ")


def _locate(filename: str, card_node: yaml.Node, card_id: str | None, err: dict) -> Problem:
    """Map a pydantic error to the node it concerns; cross-field messages name their field."""
    loc = tuple(err["loc"])
    message = validation_message(err)
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
        message = f"{message} (got {_brief(err['input'])})"
    return _at(filename, _find(card_node, loc), card_id, _dotted(loc), message)


def _brief(value: object, limit: int = 60) -> str:
    """A value's repr cut to a readable length (a hostile value may be megabytes long)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"a number of {value.bit_length():,} bits"
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _valid_fields(loc: tuple) -> list[str]:
    """The field names of the model at a pydantic error location (list indices skipped)."""
    path = ".".join(str(part) for part in loc if not isinstance(part, int))
    model = field_at(Card, path).model if path else Card
    return list(model.model_fields) if model is not None else []


def _find(node: yaml.Node, loc: Iterable, exact: bool = False) -> yaml.Node | None:
    """The node at a path of keys and indexes, or the deepest ancestor that exists."""
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if _key_is(k, part)), None)
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            child = node.value[part]
        if child is None:
            return None if exact else node
        node = child
    return node


def _key_is(key: yaml.Node, part: object) -> bool:
    """Whether a key node is the key ``part`` of the parsed data (1: x has the key 1)."""
    if not isinstance(key, yaml.ScalarNode):
        return False
    if key.tag != PLAIN:
        return key.value == part
    try:
        value = resolve_plain(key.value)
    except ValueError:
        return False
    return value == part and type(value) is type(part)


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


def order_problems(
    text: str, filename: str, cards: list[Card], found: list[tuple[int, tuple, str]]
) -> list[Problem]:
    """The catalogue rules' findings (``archdb.catalogue.order_findings``: card index,
    field path, message) located in the text."""
    try:
        root = compose(text)
    except yaml.YAMLError as exc:
        return structure_problems(text, filename, str(exc))
    return [
        _at(filename, _find(root.value[i], path), cards[i].id, path[0], message)
        for i, path, message in sorted(found)
    ]
