"""Load the YAML catalogue into typed cards, reporting every problem with file and line.

Two passes keep loading fast and errors precise:

- A screen of the raw bytes refuses what the two parsers below would read differently,
  each with its line: a file over ``MAX_BYTES``, a byte-order mark, bytes that are not
  UTF-8, and characters YAML does not allow in a stream (NUL, ESC and other controls, even
  in a comment) or reads as a line break only in YAML 1.1 (U+0085, U+2028, U+2029),
  and runs of over ``MAX_DIGITS`` digits (converting a huge number is quadratic).
- The fast pass parses with yaml_rs (a Rust YAML 1.2 core-schema parser: ``true``/``false``
  are the only booleans, ``1e-4`` is a float, ``2024-06-01`` is a string whether quoted or
  not and becomes a date only where the schema asks for one) which refuses duplicate keys
  and bounds alias expansion and nesting, then validates every card with pydantic. A valid
  file never pays for line numbers.
- Only when something is wrong does the locating pass compose the text with PyYAML into
  nodes that keep their line marks, and map each problem to the node it concerns.
  PyYAML's own loaders are unsafe for a reviewed data file in two quiet ways (a
  duplicate key silently keeps the last value; aliases expand without bound), so this
  pass walks the nodes itself and reports every duplicate key, non-standard tag and
  runaway alias in the file, not just the first. It resolves plain scalars with the same
  YAML 1.2 core rules as the fast pass (``archdb.locate.resolve_plain``; a differential
  test holds the two to one semantics), and refuses explicit tags.
"""

from __future__ import annotations

import codecs
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml_rs
from pydantic import ValidationError

from archdb import cache, files
from archdb.collector import collector_paused
from archdb.errors import ArchdbError, ArgumentError, UnknownCardError, close_names
from archdb.locations import (  # noqa: F401 (re-exported: the rules that find the catalogue)
    CATALOGUE_ENV,
    CATALOGUE_RULES,
    DEFAULT_PATH,
    CatalogueLocationError,
    checkout_catalogue,
    packaged_catalogue,
    resolve_catalogue,
)
from archdb.problems import ALIAS_EXPANSION_LIMIT, Problem
from archdb.schema import SECONDARY_KINDS, Card, resting_kinds
from archdb.seal import content_hash

if TYPE_CHECKING:
    import pandas as pd

_ALIAS_LIMITS = yaml_rs.AliasLimits(max_total_replayed_events=ALIAS_EXPANSION_LIMIT)
MAX_BYTES = 64 * 2**20  # a catalogue file's size limit: 10,000 cards take about 45 MiB
MAX_PROBLEMS_SHOWN = 20  # per kind of problem the byte screen finds

# Characters YAML 1.2 does not allow in a stream (c-printable's complement), with U+0085,
# U+2028 and U+2029, which YAML 1.1 (the locating parser) reads as line breaks and YAML 1.2
# (the fast parser) does not, and U+FEFF, a byte-order mark away from the file's start.
_NOT_YAML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
MAX_DIGITS = 100  # digits in a row (underscores between them allowed)
# Each repetition is one digit and the underscores after it: no ambiguity, so linear.
_LONG_NUMBER = re.compile(f"(?:[0-9]_*){{{MAX_DIGITS + 1}}}[0-9_]*")  # the whole run
_LINE_BREAK = re.compile("\r\n|\r|\n")


class CatalogueError(ArchdbError):
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
    sha256: str = ""  # of the exact bytes the cards were read from ("" for a selection)

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

        for expression in expressions:
            if not isinstance(expression, str):
                raise ArgumentError(
                    f"where() takes query strings ('year>=2024'), got "
                    f"{type(expression).__name__} {expression!r:.40}"
                )
        conditions = query.parse_where(expressions)
        rows = query.rows(self.cards, query.needs_counts(query.Query(conditions), columns=[]))
        kept = tuple(
            card
            for card, row in zip(self.cards, rows, strict=True)
            if all(c.matches(row) for c in conditions)
        )
        return Catalogue(self.path, kept)  # a selection: no longer the file's cards

    def frame(self) -> pd.DataFrame:
        """The cards as the pandas DataFrame the reports use (archdb.table), by id."""
        from archdb.table import catalogue_frame

        return catalogue_frame(self.cards)

    def family(self, family: str) -> list[Card]:
        return [c for c in self.cards if c.family == family]

    def resolve(self, name: str) -> Card:
        """A card id, or a family name meaning its largest published model."""
        if not isinstance(name, str):
            raise ArgumentError(
                f"name must be a card id or family name (str), got {type(name).__name__}"
            )
        card = self.get(name)
        if card is not None:
            return card
        members = self.family(name)
        if members:
            return max(members, key=lambda c: (c.params_published or 0, c.release_date))
        raise UnknownCardError(name, self.suggest(name))

    def suggest(self, name: str) -> list[str]:
        return close_names(name, [*self.ids(), *(c.family for c in self.cards)])


def load_catalogue(path: Path | str | None = None) -> Catalogue:
    """Load and validate the catalogue (through the validation cache); raise
    CatalogueError listing every problem.

    Without ``path``, the catalogue ``resolve_catalogue`` finds.
    """
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(
            f"path must be a str or a Path of a catalogue file, got {type(path).__name__}"
        )
    path = resolve_catalogue(None if path is None else os.fspath(path))
    sha256, cards, problems = _checked(path, use_cache=True)
    if problems:
        raise CatalogueError(problems)
    return Catalogue(path, tuple(cards), sha256)


def check_catalogue(path: Path, use_cache: bool = False) -> tuple[list[Card], list[Problem]]:
    """Validate a catalogue file, returning the valid cards and all problems found.

    Always a full load unless ``use_cache``: then a file that validated before, byte for
    byte and under the same schema, is read from the validation cache instead (see
    archdb.cache), so that query commands start faster. ``archdb validate`` never trusts
    the cache.
    """
    _, cards, problems = _checked(path, use_cache, hashed=use_cache)
    return cards, problems


def _checked(
    path: Path, use_cache: bool, hashed: bool = True
) -> tuple[str, list[Card], list[Problem]]:
    """``check_catalogue``, with the SHA-256 of the bytes the cards were read from (""
    unless ``hashed``: hashing a large catalogue costs a validation a few percent)."""
    filename = str(path)
    try:
        raw = read_bounded(path)
    except OSError as exc:
        message = f"cannot read file: {_os_reason(exc)}"
        return "", [], [Problem(filename, 1, 1, None, None, message)]
    if len(raw) > MAX_BYTES:
        message = f"file is larger than {MAX_BYTES // 2**20} MiB: refused"
        return "", [], [Problem(filename, 1, 1, None, None, message)]
    sha256 = content_hash(raw) if hashed or use_cache else ""
    if use_cache and (cached := cache.read(sha256)) is not None:
        return sha256, cached, []
    text, problems = decode_catalogue(raw, filename)
    if problems:
        return sha256, [], problems
    cards, problems = parse_cards(text, filename, screened=True)
    if use_cache and not problems:
        cache.write(sha256, cards)
    return sha256, cards, problems


def read_bounded(path: Path | str, limit: int = MAX_BYTES) -> bytes:
    """At most ``limit + 1`` bytes of a catalogue file (see archdb.files)."""
    return files.read_bounded(path, limit)


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def decode_catalogue(raw: bytes, filename: str) -> tuple[str, list[Problem]]:
    """The file's text, or the problems that stop both parsers from reading it alike."""
    if raw.startswith(codecs.BOM_UTF8):
        message = "the file starts with a UTF-8 byte-order mark: save it as UTF-8 without one"
        return "", [Problem(filename, 1, 1, None, None, message)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = len(raw[raw.rfind(b"\n", 0, exc.start) + 1 : exc.start].decode(errors="replace"))
        byte = raw[exc.start : exc.start + 1].hex().upper()
        message = f"not UTF-8: byte 0x{byte} cannot be decoded ({exc.reason})"
        return "", [Problem(filename, line, column + 1, None, None, message)]
    if _looks_clean(raw):
        return text, []
    return text, _character_problems(text, filename)


def screen_text(text: str, filename: str) -> list[Problem]:
    """The byte screen's problems for text already decoded (a lone surrogate included)."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        message = f"character U+{ord(text[exc.start]):04X} is not valid Unicode"
        return [_problem_at(text, exc.start, filename, message)]
    return [] if _looks_clean(raw) else _character_problems(text, filename)


# A fast screen over the bytes, one C pass: only a file that fails it is scanned again
# with the regular expressions that locate each problem. Forbidden control bytes become
# NUL and digits "0" (underscores dropped: YAML reads 1_000 as one number), so a control
# byte is a NUL and a run of digits a run of zeros.
_C0_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_SCREEN = bytes(0 if b in _C0_BYTES else ord("0") if 0x30 <= b <= 0x39 else b for b in range(256))


def _looks_clean(raw: bytes) -> bool:
    """No forbidden control byte, no forbidden non-ASCII character, no long digit run."""
    screened = raw.translate(_SCREEN, delete=b"_")
    if b"\x00" in screened or b"0" * (MAX_DIGITS + 1) in screened:
        return False
    return raw.isascii() or not _forbidden_non_ascii(raw)


# The lead bytes of the forbidden non-ASCII characters in UTF-8: C1 controls (C2 80-9F),
# the line and paragraph separators (E2 80 A8-A9), the byte-order mark and U+FFFE/FFFF
# (EF ...). They are rare in a catalogue, so each occurrence is looked at (a regular
# expression over the whole decoded text costs more than the rest of the screen).
_FORBIDDEN_LEADS = (b"\xc2", b"\xe2", b"\xef")
_NOT_YAML_NON_ASCII = re.compile("[\x80-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def _forbidden_non_ascii(raw: bytes) -> bool:
    for lead in _FORBIDDEN_LEADS:
        at = raw.find(lead)
        while at != -1:
            char = raw[at : at + 3].decode("utf-8", errors="ignore")[:1]
            if _NOT_YAML_NON_ASCII.match(char):
                return True
            at = raw.find(lead, at + 1)
    return False


def _character_problems(text: str, filename: str) -> list[Problem]:
    """Each character YAML forbids or the two parsers read differently, and each run of
    digits too long to be a bounded number, with its line."""
    problems: list[Problem] = []
    for found in _NOT_YAML.finditer(text):
        if len(problems) == MAX_PROBLEMS_SHOWN:
            break
        char = f"U+{ord(found.group()):04X}"
        message = f"character {char} is not allowed in a YAML file (even in a comment)"
        problems.append(_problem_at(text, found.start(), filename, message))
    for found in _LONG_NUMBER.finditer(text):
        if len(problems) >= 2 * MAX_PROBLEMS_SHOWN:
            break
        message = (
            f"over {MAX_DIGITS} digits in a row: no bounded value needs them (and converting "
            "a huge number costs time quadratic in its length)"
        )
        problems.append(_problem_at(text, found.start(), filename, message))
    return problems


def _problem_at(text: str, offset: int, filename: str, message: str) -> Problem:
    """A problem at a character offset, with YAML's line breaks (LF, CRLF or CR)."""
    line_start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset))
    line = len(_LINE_BREAK.findall(text, 0, line_start + 1)) + 1
    return Problem(filename, line, offset - line_start, None, None, message)


def parse_cards(
    text: str, filename: str = "<string>", screened: bool = False, standalone: bool = False
) -> tuple[list[Card], list[Problem]]:
    """Validate catalogue text: the valid cards, and every problem located by line.

    The text is screened first (as ``decode_catalogue`` screens a file's bytes) unless the
    caller already did. ``standalone`` text holds cards about to join another catalogue
    (``archdb.writer``): their lineage is checked against that catalogue, not this text.
    """
    if not screened and (problems := screen_text(text, filename)):
        return [], problems
    # the cyclic collector would rescan the cards again and again (quadratic growth)
    with collector_paused():
        return _parse_cards(text, filename, standalone)


def _parse_cards(
    text: str, filename: str, standalone: bool = False
) -> tuple[list[Card], list[Problem]]:
    try:
        data = load_yaml(text)
    except YAML_ERRORS as exc:
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
        known = None if standalone else {card.id for card in cards}
        found = order_findings(cards, known)  # located only when there are any (PyYAML)
        return cards, _locating().order_problems(text, filename, cards, found) if found else []
    return cards, _locating().locate_failures(text, filename, failures)


def order_findings(cards: list[Card], ids: set[str] | None) -> list[tuple[int, tuple, str]]:
    """Cards are kept sorted by id so that a new card has exactly one place to go, and a
    card's lineage and the cards its sources were inherited from are cards of the
    catalogue (``ids``; None skips that check, for a card checked before it joins a
    catalogue): (card index, field path, message) of each break of those rules."""
    return [
        (i, ("id",), f"cards are sorted by id: move {cards[i].id!r} before {cards[i - 1].id!r}")
        for i in range(1, len(cards))
        if cards[i].id < cards[i - 1].id
    ] + [
        (i, ("lineage",), f"lineage {card.lineage!r} is not a card of this catalogue")
        for i, card in enumerate(cards)
        if ids is not None and card.lineage is not None and card.lineage not in ids
    ] + [
        (i, ("sources", j, "inherited_from"), f"inherited_from {source.inherited_from!r} is "
         "not a card of this catalogue: name the card the source was copied from")
        for i, card in enumerate(cards)
        for j, source in enumerate(card.sources)
        if ids is not None and source.inherited_from is not None
        and source.inherited_from not in ids
    ]  # fmt: skip


# What yaml_rs raises on text it cannot turn into Python data: a syntax error, an int too
# long to convert (ValueError), a mapping used as a key (TypeError: unhashable).
YAML_ERRORS = (yaml_rs.YAMLDecodeError, ValueError, TypeError, RecursionError)


def load_yaml(text: str) -> object:
    """The fast pass's reading of YAML text: core schema, no dates, bounded aliases.
    Raises one of YAML_ERRORS on text it cannot read."""
    return yaml_rs.loads(text, alias_limits=_ALIAS_LIMITS, parse_datetime=False)


def _locating():
    from archdb import locate

    return locate


def _may_have_tag(text: str) -> bool:
    """Whether a "!" may start a tag: it follows a line break, or blanks after which comes a
    line break, one of ":-?[{,", or an anchor ("&name"). A "!" in prose ("a != b" in a
    note's continuation line) is not a tag, so the slow node pass is skipped for it. Every
    look-back is bounded and unsure cases count as a tag, keeping the scan linear."""
    at = text.find("!")
    while at != -1:
        if _tag_may_start(text, at):
            return True
        at = text.find("!", at + 1)
    return False


_LOOK_BACK = 256  # characters; a longer run of blanks or anchor name counts as a tag


def _tag_may_start(text: str, at: int) -> bool:
    start = at
    while start > 0 and text[start - 1] in " \t":
        start -= 1
        if at - start > _LOOK_BACK:
            return True
    if start == 0 or text[start - 1] in "\r\n:-?[{,":
        return True
    if start == at:  # "!" inside a word: "a!b" is no tag
        return False
    token = start
    while token > 0 and text[token - 1] not in " \t\r\n[]{},":
        token -= 1
        if start - token > _LOOK_BACK:
            return True
    return text[token] == "&"


def secondary_shares(cards: list[Card]) -> dict[str, tuple[int, float]]:
    """How many sourced values of the cards rest only on each secondary kind (a value an
    official source covers rests on that), and their share of all sourced values."""
    counts: Counter[str] = Counter()
    total = 0
    for card in cards:
        for kind in resting_kinds(card).values():
            total += 1
            if kind in SECONDARY_KINDS:
                counts[kind.value] += 1
    return {
        k.value: (counts[k.value], counts[k.value] / total if total else 0.0)
        for k in SECONDARY_KINDS
    }
