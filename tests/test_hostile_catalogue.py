"""Hostile catalogues: bounded sizes, printable text, one YAML semantics, bounded reads.

Every case must end in located problems (file:line, the field) in bounded time: never a
traceback, never a hang, never a different reading by the fast and the locating parser.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path

import pytest
import yaml_rs

from archdb import locate
from archdb.catalogue import (
    MAX_BYTES,
    YAML_ERRORS,
    CatalogueError,
    check_catalogue,
    load_yaml,
    parse_cards,
    screen_text,
)
from archdb.schema import MAX_DEPTH, pattern_counts
from tests.conftest import VALID_CARD, card_text


def problems_of(text: str) -> list:
    return parse_cards(text, "models.yaml")[1]


def only_problem(text: str):
    problems = problems_of(text)
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


# --- bounds ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field", "line"),
    [
        ("n_layers: 16", "n_layers: 1_000_000_000_000", "architecture.n_layers", 16),
        ("d_model: 2048", "d_model: 10_000_000_000_000_000_000", "architecture.d_model", 15),
        ("vocab_size: 32000", "vocab_size: 100_000_000", "architecture.vocab_size", 17),
        ("context_length: 4096", "context_length: 2147483648", "architecture.context_length", 18),
        ("params_published: 1_000_000_000", "params_published: 10_000_000_000_000_000",
         "params_published", 7),
        ("tokens: 100_000_000_000", "tokens: 1_000_000_000_000_000_000", "training.tokens", 9),
        ("n_heads: 16", "n_heads: 16_777_216", "architecture.attention.n_heads", 22),
        ("rope_theta: 10000.0", "rope_theta: 1.0e300", "architecture.position.rope_theta", 29),
        ("d_ff: 5632", "d_ff: 5632000000", "architecture.mlp.d_ff", 30),
    ],
)  # fmt: skip
def test_every_size_has_an_upper_bound(old, new, field, line):
    problem = only_problem(VALID_CARD.replace(old, new))
    assert (problem.field, problem.line, problem.card_id) == (field, line, "toy-1b")
    assert "less than or equal to" in problem.message


def test_a_trillion_layers_is_a_quick_located_error():
    start = time.perf_counter()
    problem = only_problem(VALID_CARD.replace("n_layers: 16", "n_layers: 1_000_000_000_000"))
    assert time.perf_counter() - start < 2  # a hang before; milliseconds now
    assert str(problem).startswith("models.yaml:16:15: toy-1b architecture.n_layers:")
    assert f"less than or equal to {MAX_DEPTH}" in problem.message


def test_layer_counts_cost_the_pattern_not_the_depth():
    from archdb.schema import LayerKind

    pattern = [LayerKind.LOCAL] * 5 + [LayerKind.GLOBAL]
    start = time.perf_counter()
    counts = pattern_counts(pattern, 10**12)  # far past the bound: still instant
    assert time.perf_counter() - start < 1  # a walk of 10**12 layers would take hours
    assert counts == {LayerKind.LOCAL: 833_333_333_334, LayerKind.GLOBAL: 166_666_666_666}
    assert pattern_counts(pattern, 26) == {LayerKind.LOCAL: 22, LayerKind.GLOBAL: 4}
    assert pattern_counts(pattern, 3) == {LayerKind.LOCAL: 3, LayerKind.GLOBAL: 0}


# --- control characters and lengths in card text ------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field", "char"),
    [
        ("name: Toy 1B", 'name: "Toy \\e[31m1B"', "name", "U+001B"),  # ESC: terminal colour
        ("name: Toy 1B", 'name: "Toy \\e]8;;http://x\\e\\\\1B"', "name", "U+001B"),  # OSC link
        ("name: Toy 1B", 'name: "Toy\\x001B"', "name", "U+0000"),
        ("organization: Example Lab", 'organization: "Lab\\x9b2J"', "organization", "U+009B"),
        ("name: Toy 1B", 'name: "Toy\\u202e1B"', "name", "U+202E"),  # right-to-left override
        ("name: Toy 1B", 'name: "Toy\\n1B"', "name", "U+000A"),  # names are one line
        ("title: config.json", 'title: "config\\tjson"', "sources.0.title", "U+0009"),
        ("locator: config.json", 'locator: "config\\rjson"', "sources.0.locator", "U+000D"),
        ("url: https://example.org/toy-1b/config.json", 'url: "https://e.org/\\x07"',
         "sources.0.url", "U+0007"),
    ],
)  # fmt: skip
def test_card_text_refuses_control_characters(old, new, field, char):
    problem = only_problem(VALID_CARD.replace(old, new))
    assert problem.field == field
    assert f"control character {char}" in problem.message
    assert "\x1b" not in str(problem) and "\x00" not in str(problem)  # escaped when shown


def test_notes_may_span_lines_but_not_hold_escapes():
    with_notes = VALID_CARD + '  notes:\n    architecture: "first line\\nsecond line"\n'
    assert problems_of(with_notes) == []
    problem = only_problem(with_notes.replace("first line", "first \\e[2J line"))
    assert problem.field == "notes.architecture"
    assert "U+001B" in problem.message


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("name: Toy 1B", "name: " + "N" * 201, "name"),
        ("title: config.json", "title: " + "t" * 1001, "sources.0.title"),
        ("url: https://example.org/toy-1b/config.json", "url: https://e.org/" + "u" * 2000,
         "sources.0.url"),
    ],
)  # fmt: skip
def test_string_lengths_are_bounded(old, new, field):
    problem = only_problem(VALID_CARD.replace(old, new))
    assert problem.field == field
    assert "at most" in problem.message
    assert len(str(problem)) < 300  # the hostile value is quoted only in part


def test_a_hostile_key_is_escaped_in_the_problem():
    problem = only_problem(VALID_CARD.replace("  family: toy\n", '  family: toy\n  "\\e[2J": 1\n'))
    assert problem.line == 4
    assert "\x1b" not in str(problem) and "\\x1b" in str(problem)


# --- one YAML semantics: the byte screen ------------------------------------------------


def located(raw: bytes, tmp_path: Path) -> list:
    path = tmp_path / "models.yaml"
    path.write_bytes(raw)
    cards, problems = check_catalogue(path)
    assert cards == []
    return problems


def test_nul_in_a_comment_is_refused_not_a_truncation(tmp_path):
    three = (card_text("toy-1a") + "\n" + card_text("toy-1b") + "\n" + card_text("toy-1c")).encode()
    assert len(check_catalogue(_written(tmp_path, three))[0]) == 3
    hostile = three.replace(b"- id: toy-1b", b"# comment \x00 here\n- id: toy-1b")
    (problem,) = located(hostile, tmp_path)
    assert (problem.line, problem.column) == (
        hostile[: hostile.index(b"\x00")].count(b"\n") + 1,
        11,
    )
    assert "U+0000 is not allowed" in problem.message


def _written(tmp_path: Path, raw: bytes) -> Path:
    path = tmp_path / "ok.yaml"
    path.write_bytes(raw)
    return path


def test_a_byte_order_mark_is_named_at_line_one(tmp_path):
    (problem,) = located(b"\xef\xbb\xbf" + VALID_CARD.encode(), tmp_path)
    assert (problem.line, problem.column) == (1, 1)
    assert "byte-order mark" in problem.message


def test_bytes_that_are_not_utf8_are_located(tmp_path):
    raw = VALID_CARD.replace("Example Lab", "Example L\udcffab").encode("utf-8", "surrogateescape")
    (problem,) = located(raw, tmp_path)
    assert (problem.line, problem.column) == (4, 26)
    assert "not UTF-8: byte 0xFF" in problem.message


@pytest.mark.parametrize(
    ("char", "code"), [("\x1b", "U+001B"), ("\x85", "U+0085"), ("\u2028", "U+2028"),
                       ("\x7f", "U+007F"), ("\ufeff", "U+FEFF")]
)  # fmt: skip
def test_characters_the_parsers_read_differently_are_refused(tmp_path, char, code):
    raw = VALID_CARD.replace("  family: toy", f"  family: toy # {char}").encode()
    (problem,) = located(raw, tmp_path)
    assert (problem.line, problem.column) == (3, 17)
    assert code in problem.message


def test_an_endless_file_is_read_only_up_to_the_limit(tmp_path):
    start = time.perf_counter()
    cards, problems = check_catalogue(Path("/dev/zero"))
    assert time.perf_counter() - start < 5
    assert cards == [] and len(problems) == 1
    assert f"larger than {MAX_BYTES // 2**20} MiB" in problems[0].message


def test_an_unreadable_path_is_one_problem(tmp_path):
    (problem,) = check_catalogue(tmp_path / "missing.yaml")[1]
    assert "cannot read file: No such file or directory" in problem.message
    (problem,) = check_catalogue(tmp_path)[1]
    assert "cannot read file: Is a directory" in problem.message


# --- one YAML semantics: both parsers, value by value -------------------------------


def fast(text: str) -> tuple[str, object]:
    """The fast pass's reading: the screen, then yaml_rs."""
    if screen_text(text, "t"):
        return "refused", None
    try:
        return "ok", load_yaml(text)
    except YAML_ERRORS:
        return "refused", None


def slow(text: str) -> tuple[str, object, list]:
    """The locating pass's reading: the screen, then PyYAML's nodes and resolve_plain."""
    import yaml

    if screen_text(text, "t"):
        return "refused", None, []
    try:
        value, problems = locate.load_values(text)
    except yaml.YAMLError:
        return "refused", None, []
    return "ok", value, problems


def same(a: object, b: object) -> bool:
    """Equal values of equal types, NaN equal to itself, recursively."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


AGREEMENT_CORPUS = [
    "date: 2024-06-01",
    "date: '2024-06-01'",
    'date: "2024-06-01"',
    "when: 2024-06-01T10:00:00",
    "a: yes\nb: no\nc: on\nd: off\ne: y",  # YAML 1.1 booleans: strings in 1.2
    "a: true\nb: False\nc: TRUE\nd: tRUE",
    "a: 010\nb: 0o17\nc: 0x1F\nd: 0b101",  # octal 8 in 1.1; 10 in 1.2
    "a: 1e3\nb: 1.5e-3\nc: .5\nd: 1.\ne: -.inf\nf: .NaN\ng: .nan",
    "a: 1_000\nb: 175_000_000_000\nc: 1__0\nd: _1",
    "a: 190:20:30\nb: 1:20",  # sexagesimal in 1.1
    "a: ~\nb: null\nc: Null\nd:\ne: ''",
    "1: one\n2: two",  # non-string keys
    "true: x",
    "a: " + "9" * 5000,  # an int too long to convert
    "a: " + "9" * 60,
    "a: !!str 5",  # tags: yaml_rs reads this as 5, PyYAML as '5': refused in the slow pass
    "a: !!int '5'",
    "a: !custom x",
    "a: &x [1, 2]\nb: *x",
    "a: &x {k: 1}\nb:\n  <<: *x",  # merge keys
    "a: 1\na: 2",  # duplicate keys
    "1: a\n01: b",
    "[" * 300 + "]" * 300,  # nesting past both parsers' limits
    "- [a, b]\n- {c: d}",
    "a: 'it''s'\nb: \"tab\\there\"\nc: >-\n  folded\n  text\nd: |\n  literal\n",
    "a: '\\e'",
    "{a: 1}: x",  # a mapping as a key
    "? [a, b]\n: x",  # a sequence as a key
    "# only a comment\n",
    "",
]


@pytest.mark.parametrize("text", AGREEMENT_CORPUS)
def test_the_two_parsers_agree(text):
    """Whatever the fast pass accepts, the locating pass reads to the same values, or
    refuses (explicit tags); whatever the fast pass refuses, the locating pass locates."""
    (status, value), (slow_status, slow_value, problems) = fast(text), slow(text)
    if status == "refused":
        assert slow_status == "refused" or problems, slow_value
        return
    assert slow_status == "ok"
    if any("tag" in p.message for p in problems):
        assert "!" in text
        return
    assert same(value, slow_value), (value, slow_value)


def test_quoted_dates_stay_strings_and_unquoted_dates_are_dates_only_in_release_date():
    assert load_yaml("d: 2024-06-01") == {"d": "2024-06-01"}
    assert load_yaml("d: '2024-06-01'") == {"d": "2024-06-01"}
    named = VALID_CARD.replace("name: Toy 1B", "name: '2024-06-01'")
    cards, problems = parse_cards(named)
    assert problems == [] and cards[0].name == "2024-06-01"
    for spelling in ("release_date: 20230301", "release_date: 2023-03-01T00:00:00",
                     "release_date: 1677628800"):  # fmt: skip
        problem = only_problem(VALID_CARD.replace("release_date: 2023-03-01", spelling))
        assert problem.field == "release_date"
        assert "YYYY-MM-DD" in problem.message


def test_plain_scalars_resolve_alike_on_a_seeded_fuzz():
    """200,000 random plain scalars from number-like characters: identical readings."""
    rng = random.Random(20261201)
    alphabet = "0123456789_+-.eExXoObBaAfFinINtrulTRUL~"
    tried = 0
    for _ in range(200_000):
        scalar = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        try:
            expected = load_yaml(f"a: {scalar}")
        except yaml_rs.YAMLDecodeError:
            continue
        tried += 1
        assert same(locate.resolve_plain(scalar), expected["a"]), scalar
    assert tried > 150_000


def test_huge_ints_and_non_string_keys_are_located_at_their_line():
    big = only_problem(VALID_CARD.replace("d_model: 2048", "d_model: " + "9" * 5000))
    assert (big.line, big.column) == (15, 14)  # found by the byte screen, before parsing
    assert big.message.startswith("over 100 digits in a row")
    keyed = only_problem(VALID_CARD.replace("    dropout: 0.0\n", "    dropout: 0.0\n    7: x\n"))
    assert (keyed.line, keyed.field) == (11, "training.7")


def test_deep_nesting_is_refused_with_its_line():
    deep = VALID_CARD.replace(
        "  family: toy\n", "  family: toy\n  deep: " + "[" * 500 + "]" * 500 + "\n"
    )
    problems = problems_of(deep)
    assert problems and all(p.line == 4 for p in problems)
    assert "nested deeper than" in problems[0].message


def test_load_catalogue_raises_catalogue_error_for_every_hostile_file(tmp_path):
    from archdb.catalogue import load_catalogue

    for raw in (b"\xef\xbb\xbf- a", b"- \xff", b"# \x00", b"[" * 1000):
        path = _written(tmp_path, raw)
        with pytest.raises(CatalogueError) as caught:
            load_catalogue(path)
        assert caught.value.problems


# --- sizes together --------------------------------------------------------------------

AT_THE_BOUNDS = [
    ("d_model: 2048", "d_model: 1_048_576"),
    ("n_layers: 16", "n_layers: 10_000"),
    ("vocab_size: 32000", "vocab_size: 16_777_216"),
    ("context_length: 4096", "context_length: 1_073_741_824"),
    ("d_ff: 5632", "d_ff: 1_048_576"),
    ("params_published: 1_000_000_000", "params_published: 1_000_000_000_000_000"),
    ("tokens: 100_000_000_000", "tokens: 100_000_000_000_000_000"),
    ("n_heads: 16", "n_heads: 1024"),
    ("n_kv_heads: 4", "n_kv_heads: 1024"),
    ("rope_theta: 10000.0", "rope_theta: 1.0e12"),
    ("layer_pattern: [global]", "layer_pattern: [local, global]"),
    ("sliding_window: null", "sliding_window: 1_073_741_824"),
]


def test_sizes_whose_product_is_absurd_are_refused_at_architecture():
    text = VALID_CARD.replace("n_layers: 16", "n_layers: 100_000")
    text = text.replace("d_model: 2048", "d_model: 1_048_576").replace(
        "d_ff: 5632", "d_ff: 1_048_576"
    )
    problem = only_problem(text)
    assert (problem.line, problem.field) == (14, "architecture")
    assert "over the limit of 1e+17" in problem.message


@pytest.mark.parametrize("layers", ["10_000", "100_000"])
def test_a_card_at_the_bounds_tabulates_quickly_without_overflow(layers):
    from archdb.table import card_row, frame_from_rows

    text = VALID_CARD
    for old, new in AT_THE_BOUNDS:
        text = text.replace(old, new)
    if layers == "100_000":  # the deepest stack, at ordinary widths
        text = VALID_CARD.replace("n_layers: 16", "n_layers: 100_000")
    cards, problems = parse_cards(text)
    assert problems == []
    frame_from_rows([card_row(parse_cards(VALID_CARD)[0][0])])  # imports paid before timing
    start = time.perf_counter()
    frame = frame_from_rows([card_row(cards[0])])
    assert time.perf_counter() - start < 5
    assert int(frame["params_exact"].iloc[0]) > 0


def test_a_named_pipe_is_refused_not_waited_on(tmp_path):
    import os

    fifo = tmp_path / "models.yaml"
    os.mkfifo(fifo)
    start = time.perf_counter()
    (problem,) = check_catalogue(fifo)[1]
    assert time.perf_counter() - start < 2
    assert "a pipe or socket, not a file" in problem.message


def test_an_unknown_card_name_is_quoted_in_brief(tmp_path):
    from archdb.catalogue import load_catalogue
    from archdb.errors import UnknownCardError

    catalogue = load_catalogue(_written(tmp_path, VALID_CARD.encode()))
    with pytest.raises(UnknownCardError) as caught:
        catalogue.resolve("\x1b[2J" + "x" * 100_000)
    assert len(str(caught.value)) < 200 and "\x1b" not in str(caught.value)


# --- a seeded mutation fuzz of whole catalogues ---------------------------------------

MUTATION_TOKENS = [
    "null", "~", "true", "yes", "0", "-1", "1e400", ".nan", "010", "0x1F", "1_000", "'x'",
    '"\\e[2J"', "[]", "{}", "[a, b]", "{a: 1}", "&a x", "*a", "!!str 5", "!x y", "<<: *a",
    "2024-13-45", "'2024-06-01'", "9" * 120, "é", "- x", ": :", "? x", "|", ">-", "#",
    "[[[[", "}}}", "\t", "  ", "id: toy-1b", "local", "global", "global-nope", "moe: {}",
    "latent: {kv_lora_rank: 1}", "1.0e12", "-0.0", "1/0", "\\x00", "'", '"', "`", "@",
]  # fmt: skip


def _mutated(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        op = rng.randrange(5)
        if op == 0 and ":" in lines[i]:
            lines[i] = lines[i].split(":", 1)[0] + ": " + rng.choice(MUTATION_TOKENS)
        elif op == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op == 2:
            del lines[i]
        elif op == 3:
            lines[i] += " " + rng.choice(MUTATION_TOKENS)
        else:
            key, value = rng.choice(MUTATION_TOKENS), rng.choice(MUTATION_TOKENS)
            lines.insert(i, " " * rng.randrange(8) + f"{key}: {value}")
    return "\n".join(lines)


def test_mutated_catalogues_give_cards_or_located_problems():
    """1,000 seeded mutations of a two-card file: every one loads or lists its problems,
    each one line with a file:line prefix and no raw control character."""
    rng = random.Random(1201)
    base = card_text("toy-1b") + "\n" + card_text("toy-2b")
    refused = 0
    for _ in range(1_000):
        cards, problems = parse_cards(_mutated(rng, base), "models.yaml")
        refused += bool(problems)
        for problem in problems:
            shown = str(problem)
            assert shown.startswith("models.yaml:") and "\n" not in shown and "\x1b" not in shown
        if not problems:
            assert [c.id for c in cards] == ["toy-1b", "toy-2b"]
    assert refused > 500
