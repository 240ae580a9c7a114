"""Filter expressions over the catalogue: ``norm.type=rmsnorm``, ``year>=2023``, ...

A query is a list of conditions (all must hold), optional families, a sort order, the
columns to show and a row limit. It runs over the rows of ``archdb.table`` (one flat row
per card, derived figures included), so ``list``, ``export`` and the reports agree on
every value and every column name.

Field names resolve in this order: an exact column (``architecture.norm.type``, ``year``,
``d_ff_ratio``), the same path without its ``architecture.`` prefix (``norm.type``), a
short alias (``activation``, ``params``, ``attention``), then a unique last segment
(``d_model``, ``vocab_size``, ``rope_theta``). Unknown or ambiguous names are errors that
list what would work.

Operators: ``=``/``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` (numbers and dates),
``in (a,b)`` and ``not in (a,b)``, ``~`` (contains, case-insensitive). A list field such as
``layer_pattern`` matches ``=``/``in``/``~`` when any of its entries does. ``null`` is a
value: ``sliding_window!=null``. A card whose value is null (unknown, or the feature is
not used) matches no comparison except ``=null``. Several conditions in one expression
join with ``and``.

Every string here comes from a command line and is hostile: parsing is linear in its
length (no regular expression that can backtrack), total (any text gives a condition or
a QueryError, never another exception) and errors quote at most a short prefix of it.
"""

from __future__ import annotations

import datetime as dt
import difflib
import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from archdb.columns import BOOL_LABELS, COUNTED_COLUMNS, FieldSpec, Row, fields
from archdb.errors import UsageError

if TYPE_CHECKING:
    from archdb.schema import Card


class QueryError(UsageError, ValueError):
    """A malformed expression, an unknown field or a value the field cannot take."""


def _brief(text: str, limit: int = 60) -> str:
    """User text quoted in an error: its repr (controls escaped), cut to a readable length."""
    shown = repr(text)
    return shown if len(shown) <= limit else f"{shown[: limit - 4]}...{shown[-1]}"


# --- fields ------------------------------------------------------------------------


# Short names researchers type; each points at one column.
ALIASES: dict[str, str] = {
    "params": "params_published",
    "date": "release_date",
    "activation": "architecture.mlp.activation",
    "norm": "architecture.norm.type",
    "norm_position": "architecture.norm.position",
    "position": "architecture.position.type",
    "attention": "attention_family",
    "head_dim": "head_dim_effective",
    "heads": "architecture.attention.n_heads",
    "kv_heads": "architecture.attention.n_kv_heads",
    "layers": "architecture.n_layers",
    "experts": "architecture.mlp.moe.n_experts",
    "window": "architecture.attention.sliding_window",
    "kv_bytes": "kv_cache_bytes_per_token",
}

# Leaf names too vague to stand alone ("mlp" would mean bias.mlp): write bias.mlp.
_VAGUE_LEAVES = frozenset({"mlp", "qkv", "attn_out", "final", "affine", "type"})


@cache
def _lookup() -> tuple[dict[str, str], dict[str, list[str]]]:
    """Name -> column for every accepted spelling, and the spellings that are ambiguous."""
    columns = fields()
    names: dict[str, str] = {}
    by_last: dict[str, list[str]] = {}
    for column in columns:
        by_last.setdefault(column.rsplit(".", 1)[-1], []).append(column)
    ambiguous: dict[str, list[str]] = {}
    for last, cols in by_last.items():
        if last in _VAGUE_LEAVES:  # never a short name ("mlp" alone)
            if len(cols) > 1:
                ambiguous[last] = cols
            continue
        # a leaf names its shallowest field when only one is that shallow: n_kv_heads is
        # attention.n_kv_heads; a sub-block's own (attention.global_layers.n_kv_heads,
        # mixers.mamba2.n_heads) takes its dotted path
        depth = min(c.count(".") for c in cols)
        shallowest = [c for c in cols if c.count(".") == depth]
        if len(shallowest) == 1:
            names[last] = shallowest[0]
        else:
            ambiguous[last] = cols
    for column in columns:
        names[column] = column
        if column.startswith("architecture."):
            names[column.removeprefix("architecture.")] = column
    names.update(ALIASES)
    for alias in ALIASES:
        ambiguous.pop(alias, None)
    return names, ambiguous


def short_names() -> list[str]:
    """The short field names worth listing in help and errors: aliases and unique leaves."""
    return list(_short_names())


@cache
def _short_names() -> tuple[str, ...]:
    names, _ = _lookup()
    return tuple(sorted(n for n in names if "." not in n))


_Letters = dict[str, list[tuple[int, ...]]]


@cache
def _spelling_letters() -> tuple[tuple[str, ...], tuple[int, ...], _Letters]:
    """Every accepted spelling, its length, and for each character c and count k, the
    characters a word with k c's shares with each spelling: ``letters[c][k][i]`` is
    ``min(k, names[i].count(c))``, up to k = the most c's in any spelling."""
    names = tuple(_lookup()[0])
    letters: _Letters = {}
    for c in set("".join(names)):
        counts = [name.count(c) for name in names]
        letters[c] = [tuple(min(k, n) for n in counts) for k in range(max(counts) + 1)]
    return names, tuple(map(len, names)), letters


def close_spellings(key: str, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """``difflib.get_close_matches(key, spellings, n, cutoff)``, the same answer, several
    times faster: difflib's quick bound (twice the characters in common over both lengths)
    is computed for all spellings at once from counts made once, and only the spellings
    within it are matched. difflib recounts each spelling per call: a millisecond a typo."""
    names, lengths, letters = _spelling_letters()
    shared = [
        letters[c][min(k, len(letters[c]) - 1)] for c, k in Counter(key).items() if c in letters
    ]
    in_common = [sum(column) for column in zip(*shared, strict=True)] if shared else None
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(key)
    scored: list[tuple[float, str]] = []
    for i, name in enumerate(names):
        common = in_common[i] if in_common else 0
        if 2.0 * common / (lengths[i] + len(key)) < cutoff:  # difflib's quick_ratio bound
            continue
        matcher.set_seq1(name)
        if (score := matcher.ratio()) >= cutoff:
            scored.append((score, name))
    return [name for _, name in heapq.nlargest(n, scored)]


def display_name(column: str) -> str:
    """The shortest spelling that resolves to a column: what tables and errors show."""
    names, _ = _lookup()
    spellings = [n for n, c in names.items() if c == column]
    return min(spellings, key=lambda n: (len(n), n)) if spellings else column


def resolve_field(name: str) -> FieldSpec:
    """A field by any accepted spelling; QueryError naming valid fields otherwise."""
    names, ambiguous = _lookup()
    key = name.strip()
    if key in names:
        return fields()[names[key]]
    if key in ambiguous:
        options = ", ".join(display_name(c) for c in ambiguous[key])
        raise QueryError(f"field {_brief(key)} is ambiguous: say which one ({options})")
    close = close_spellings(key)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise QueryError(
        f"unknown field {_brief(key)}: {hint}valid fields: {', '.join(short_names())}; or any "
        "card path such as norm.type or training.z_loss (`archdb fields` lists them all)"
    )


# --- values ------------------------------------------------------------------------

_SUFFIXES = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
# Unambiguous, so matching is linear: sign, digits with an optional fraction (or only a
# fraction), an optional exponent, an optional size suffix.
_NUMBER = re.compile(
    r"([-+]?)(\d[\d_]*(?:\.\d*)?|\.\d+)(?:e([-+]?\d+))?([kmbgt]?)", re.IGNORECASE | re.ASCII
)
MAX_NUMBER_CHARS = 40  # far more digits than any bounded card value needs
_NULLS = {"null", "none"}
_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def _number(text: str, spec: FieldSpec) -> int | float:
    """'100000', '100k', '7B', '1.5e9', '8/3' -> a number of the field's kind."""
    if "/" in text:
        num, _, den = text.partition("/")
        if "/" in den:
            raise QueryError(f"{display_name(spec.name)} takes one ratio a/b, not {_brief(text)}")
        try:
            numerator, denominator = _number(num, spec), _number(den, spec)
        except QueryError:  # name the whole ratio, not the half that failed
            raise QueryError(
                f"{display_name(spec.name)} takes a number, not {_brief(text)}"
            ) from None
        if denominator == 0:
            raise QueryError(f"{display_name(spec.name)}: {_brief(text)} divides by zero")
        value: int | float = numerator / denominator
        if not math.isfinite(value):
            raise QueryError(f"{display_name(spec.name)}: {_brief(text)} is too large")
    else:
        value = _plain_number(text, spec)
    if spec.kind == "int" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _plain_number(text: str, spec: FieldSpec) -> int | float:
    compact = text.replace(" ", "")
    match = _NUMBER.fullmatch(compact) if len(compact) <= MAX_NUMBER_CHARS else None
    if not match:
        raise QueryError(f"{display_name(spec.name)} takes a number, not {_brief(text)}")
    sign, digits, exponent, suffix = match.groups()
    scale = _SUFFIXES.get(suffix.lower(), 1)
    digits = digits.replace("_", "")
    if exponent is None and "." not in digits:  # an integer: exact, however large
        return int(sign + digits) * scale
    value = float(f"{sign}{digits}e{exponent or 0}") * scale
    if not math.isfinite(value):
        raise QueryError(f"{display_name(spec.name)}: {_brief(text)} is too large")
    return value


def _date(text: str, spec: FieldSpec) -> str:
    """'2024', '2024-06' or '2024-06-01' -> an ISO date string (rows hold ISO strings)."""
    parts = text.split("-")
    try:
        if len(text) > 10 or not all(p.isascii() and p.isdigit() for p in parts):
            raise ValueError(text)
        year, month, day = (int(p) for p in [*parts, "1", "1"][:3])
        return dt.date(year, month, day).isoformat()
    except (TypeError, ValueError, OverflowError):
        raise QueryError(
            f"{display_name(spec.name)} takes a date (YYYY, YYYY-MM or YYYY-MM-DD), "
            f"not {_brief(text)}"
        ) from None


def _choice(text: str, spec: FieldSpec) -> str:
    value = text.lower()
    if value in spec.choices:
        return value
    close = difflib.get_close_matches(value, spec.choices, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]}? " if close else ""
    choices = ", ".join(spec.choices)
    raise QueryError(
        f"{display_name(spec.name)} cannot be {_brief(text)}: {hint}choose from {choices}"
    )


def parse_value(text: str, spec: FieldSpec) -> Any:
    """Text typed by a user -> the value as a row holds it; None for ``null``."""
    text = text.strip().strip("'\"")
    words = BOOL_LABELS.get(spec.name, ())  # trends' words: moe=dense is moe=false
    if text.lower() in words:
        return text.lower() == words[0]
    if text.lower() in _NULLS and text.lower() not in spec.choices:  # qk_norm "none" is a value
        return None
    if spec.numeric:
        return _number(text, spec)
    if spec.kind == "bool":
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        also = f" (or {words[0]} and {words[1]})" if words else ""
        raise QueryError(f"{display_name(spec.name)} takes true or false{also}, not {_brief(text)}")
    if spec.kind == "date":
        return _date(text, spec)
    if spec.choices:
        return _choice(text, spec)
    return text


# --- conditions --------------------------------------------------------------------

_FIELD = re.compile(r"[A-Za-z_][\w.]*", re.ASCII)
_SYMBOLS = (">=", "<=", "!=", "==", "=", ">", "<", "~")  # longest first


@dataclass(frozen=True)
class Condition:
    """``field op value``: one test of a row."""

    field: FieldSpec
    op: str  # =, !=, <, <=, >, >=, in, not in, ~
    values: tuple[Any, ...]
    text: str

    def matches(self, row: Row) -> bool:
        actual = row.get(self.field.name)
        if self.op == "~":
            return actual is not None and str(self.values[0]).lower() in str(actual).lower()
        if self.op in _ORDER:
            return actual is not None and _ORDER[self.op](actual, self.values[0])
        if actual is None:  # unknown or unused: only an explicit null matches
            return self.op in ("=", "in") and None in self.values
        wanted = {_fold(v) for v in self.values}
        entries = str(actual).split(",") if self.field.kind == "list" else [actual]
        hit = any(_fold(e) in wanted for e in entries)
        return hit if self.op in ("=", "in") else not hit

    def __str__(self) -> str:
        return self.text


def _fold(value: Any) -> Any:
    """Text compares case-insensitively; numbers, booleans and dates as they are."""
    return value.lower() if isinstance(value, str) else value


_ORDER = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _split_condition(text: str) -> tuple[str, str, str] | None:
    """'field op value' -> its three parts, or None; one left-to-right scan, so linear."""
    body = text.strip()
    found = _FIELD.match(body)
    if not found:
        return None
    name, at = found.group(), found.end()
    rest = body[at:].lstrip()
    spaced = len(rest) < len(body) - at
    for symbol in _SYMBOLS:
        if rest.startswith(symbol):
            return name, symbol, rest[len(symbol) :].strip()
    if spaced:  # a word operator needs a blank before it, and a non-word character after
        lowered = rest[:16].lower()
        if lowered.startswith("not"):
            after_not = rest[3:].lstrip()
            if len(after_not) < len(rest) - 3 and after_not[:2].lower() == "in":
                return _word_operator(name, "not in", after_not[2:])
        elif lowered.startswith("in"):
            return _word_operator(name, "in", rest[2:])
    return None


def _word_operator(name: str, op: str, after: str) -> tuple[str, str, str] | None:
    if after[:1].isalnum() or after[:1] == "_":
        return None  # 'index' is not 'in dex'
    return name, op, after.strip()


def _list_items(raw: str) -> list[str]:
    """'(a, b)', '[a,b]' or 'a,b' -> the non-blank items."""
    inner = raw.strip()
    inner = inner[1:] if inner[:1] in "([" else inner
    inner = inner[:-1] if inner[-1:] in ")]" else inner
    return [item for item in inner.split(",") if item.strip()]


def parse_condition(text: str) -> Condition:
    """One ``field op value`` expression -> a Condition; QueryError says what is wrong."""
    parts = _split_condition(text)
    if parts is None:
        raise QueryError(
            f"cannot read {_brief(text)}: write FIELD OP VALUE, e.g. 'norm.type=rmsnorm', "
            "'year>=2023', 'vocab_size>100k' or 'activation in (swiglu,geglu)'; "
            "operators: = != < <= > >= in, not in, ~"
        )
    name, symbol, raw = parts
    spec = resolve_field(name)
    op = "=" if symbol == "==" else symbol
    if not raw:
        raise QueryError(f"{_brief(text)} has no value after {op!r}")
    if op in ("in", "not in"):
        items = _list_items(raw)
        if not items:
            raise QueryError(f"{_brief(text)}: list the values, e.g. {name} in (a,b)")
        values = tuple(parse_value(item, spec) for item in items)
    elif op == "~":
        if spec.numeric or spec.kind == "bool":
            raise QueryError(f"~ (contains) needs a text field; {name} is {spec.kind}")
        values = (raw.strip().strip("'\""),)
    else:
        values = (parse_value(raw, spec),)
    if op in _ORDER:
        if not spec.ordered:
            raise QueryError(f"{op} compares numbers or dates; {name} is {spec.kind}: use = or in")
        if values == (None,):
            raise QueryError(f"{_brief(text)}: null cannot be compared with {op}; use = or !=")
    return Condition(spec, op, values, text.strip())


# "and" as a word between blanks; lookarounds of one character, so the scan is linear
_AND = re.compile(r"(?<=\s)and(?=\s)", re.IGNORECASE)


def split_and(expression: str) -> list[str]:
    """An expression's conditions: the parts between blank-separated 'and' words."""
    return [part.strip() for part in _AND.split(expression.strip())]


def parse_where(expressions: Iterable[str]) -> list[Condition]:
    """Every condition of several expressions (each may join conditions with 'and')."""
    return [parse_condition(part) for expr in expressions for part in split_and(expr.strip())]


# --- queries -----------------------------------------------------------------------


@dataclass(frozen=True)
class SortKey:
    field: FieldSpec
    descending: bool = False


def parse_sort(text: str | None) -> list[SortKey]:
    """'year,-params' -> sort by year, then by params descending."""
    if not text:
        return []
    keys = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        descending = part.startswith("-")
        keys.append(SortKey(resolve_field(part.lstrip("+-")), descending))
    return keys


DEFAULT_COLUMNS = (
    "id",
    "year",
    "params",
    "d_model",
    "n_layers",
    "attention",
    "norm",
    "activation",
    "position",
    "vocab_size",
)


@dataclass(frozen=True)
class Column:
    """A column to show: its header (the name as typed) and its field."""

    header: str
    field: FieldSpec


def parse_columns(text: str | None) -> list[Column]:
    """'id,year,norm.type' -> columns; 'all' -> every column of the table."""
    if text and text.strip() == "all":
        return [Column(display_name(name), spec) for name, spec in fields().items()]
    names = [n.strip() for n in text.split(",")] if text else list(DEFAULT_COLUMNS)
    return [Column(name, resolve_field(name)) for name in names if name]


@dataclass
class Query:
    where: list[Condition] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    sort: list[SortKey] = field(default_factory=list)
    limit: int | None = None
    # kv_cache_bytes_per_token for a sequence of this many tokens at this many bytes per
    # element (None: the table's 8,192 tokens at 2 bytes), conditions and sorting included
    kv_context: int | None = None
    kv_bytes_per_element: float | None = None


def rows(cards: Iterable[Card], counts: bool = True) -> list[Row]:
    """The table rows of some cards (archdb.table's one way to flatten a card); without
    ``counts`` the analytic counts (exact params, KV cache, FLOPs) are left null."""
    from archdb.table import catalogue_rows  # the schema: not for queries over a snapshot

    return catalogue_rows(cards, counts)


def needs_counts(query: Query, columns: Sequence[Column] | None = None) -> bool:
    """Whether a query (and the columns it shows; None: every column) reads an analytic
    count. The formula and its imports cost about 70 ms for the 187 shipped cards."""
    if columns is None:
        return True
    read = [c.field for c in query.where] + [k.field for k in query.sort]
    read += [c.field for c in columns]
    return any(spec.name in COUNTED_COLUMNS for spec in read)


def select(
    cards: Sequence[Card], query: Query, columns: Sequence[Column] | None = None
) -> list[Row]:
    """The rows of the cards that pass every condition, sorted and cut to the limit.

    ``columns`` names the columns the caller reads from the rows besides those of the
    conditions and sort keys (None: all of them); the analytic counts are computed only
    when one of these needs them.
    """
    selected = matching(cards, query, columns)
    return selected[: query.limit] if query.limit is not None else selected


def matching(
    cards: Sequence[Card], query: Query, columns: Sequence[Column] | None = None
) -> list[Row]:
    """Every row ``select`` would give before the limit cuts them (how many match)."""
    check_families(query, {c.family for c in cards})
    chosen = [c for c in cards if not query.families or c.family in query.families]
    counts = needs_counts(query, columns)
    all_rows = rows(chosen, counts)
    if counts and (query.kv_context is not None or query.kv_bytes_per_element is not None):
        _recount_kv(chosen, all_rows, query)
    return filtered(all_rows, query)


def check_families(query: Query, known: Iterable[str]) -> None:
    """A QueryError naming the query's families that are not among ``known``."""
    unknown = sorted(set(query.families) - set(known))
    if unknown:
        names = sorted(set(known))
        hints = [m for f in unknown for m in difflib.get_close_matches(f, names, n=3)]
        hint = f"did you mean {', '.join(hints)}? " if hints else ""
        named = ", ".join(f if f.isprintable() and len(f) <= 60 else _brief(f) for f in unknown[:5])
        raise QueryError(f"no family named {named}: {hint}families: {', '.join(names)}")


def filtered(all_rows: Iterable[Row], query: Query) -> list[Row]:
    """The rows of the query's families that pass every condition, in its sort order
    (nulls last), before the limit: plain data in, plain data out."""
    families = set(query.families)
    selected = [
        r
        for r in all_rows
        if (not families or r["family"] in families) and all(c.matches(r) for c in query.where)
    ]
    for key in reversed(query.sort):  # stable sorts, last key first
        present = [r for r in selected if r.get(key.field.name) is not None]
        missing = [r for r in selected if r.get(key.field.name) is None]
        present.sort(key=lambda r, k=key: r[k.field.name], reverse=key.descending)
        selected = present + missing  # nulls last in either direction
    return selected


def _recount_kv(cards: Sequence[Card], found: list[Row], query: Query) -> None:
    """Each row's KV cache per token at the query's context and element size."""
    from archdb import conventions as cv
    from archdb.measure.analytic import cache_size

    context = query.kv_context or cv.DEFAULT_KV_CONTEXT
    width = query.kv_bytes_per_element or cv.DEFAULT_KV_DTYPE_BYTES
    for card, row in zip(cards, found, strict=True):
        if row.get("kv_cache_bytes_per_token") is not None:
            size = cache_size(card.architecture, context, width)
            row["kv_cache_bytes_per_token"] = size.per_token


def project(selected: Iterable[Row], columns: Sequence[Column]) -> list[Row]:
    """Rows cut to the chosen columns, keyed by each column's header."""
    return [{c.header: row.get(c.field.name) for c in columns} for row in selected]
