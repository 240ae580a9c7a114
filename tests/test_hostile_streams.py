"""Hostile standard streams (issue 27, item 3), in real processes (the streams are the
process's own): a stdout that cannot encode the CLI's symbols degrades to ASCII; a
COLUMNS too small (or not a number) is ignored; a closed stdout or stdin is a one-line
error and exit 1; a reader that leaves (`| head`) ends the command quietly; a full disk
names itself. Never exit 70, never a traceback (``tests.hostile.process``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import VALID_CARD
from tests.hostile import process

CLOSED_STDOUT = "archdb: error: standard output is closed: nothing to write to"
STDIN_HINT = "give the values as flags with --no-interactive"


@pytest.fixture
def invalid(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(VALID_CARD.replace("n_kv_heads: 4", "n_kv_heads: 3"), encoding="utf-8")
    return path


# --- encodings -----------------------------------------------------------------------------

ENCODINGS = [
    {"PYTHONIOENCODING": "ascii", "PYTHONUTF8": "0"},
    {"PYTHONIOENCODING": "latin-1", "PYTHONUTF8": "0"},
    {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""},
]
COMMANDS = [
    (("validate",), 0),
    (("list", "-n", "3"), 0),
    (("show", "gemma-2-9b"), 0),
    (("compare", "llama-2-7b", "gemma-2-9b"), 0),
    (("trends", "norm-type"), 0),
    (("fields",), 0),
    (("show", "gemma-2-9"), 1),  # an error with a suggestion, on stderr
    (("--help",), 0),
]


@pytest.mark.parametrize("env", ENCODINGS, ids=["ascii", "latin-1", "C-locale"])
@pytest.mark.parametrize(("command", "code"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_a_non_utf8_stdout_degrades_to_ascii(command, code, env):
    result = process(*command, env=env)
    assert result.returncode == code, result.stderr
    out, err = result.stdout, result.stderr
    assert (out if code == 0 else err).strip()
    if env.get("PYTHONIOENCODING") != "latin-1":
        assert out.isascii() and err.isascii(), (out[:200], err[:200])
    assert b"?" * 3 not in out  # the CLI's own symbols have ASCII stand-ins


def test_an_invalid_catalogue_s_problems_print_in_ascii(invalid):
    result = process("validate", str(invalid), env=ENCODINGS[0])
    assert result.returncode == 1
    assert result.stderr.decode("ascii").startswith(f"x {invalid}:")


# --- COLUMNS ------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["0", "-5", "3", "39", "wide", "", "1e9"])
@pytest.mark.parametrize("command", [("list", "-n", "2"), ("show", "gpt-2-124m")])
def test_a_tiny_or_garbage_columns_is_ignored(columns, command):
    unset = process(*command, env={"COLUMNS": "80"})
    narrow = process(*command, env={"COLUMNS": columns})
    assert narrow.returncode == 0 and narrow.stdout.strip()
    assert narrow.stdout == unset.stdout  # laid out as if COLUMNS were unset (80 here)


def test_a_huge_columns_stays_bounded():
    result = process("list", "-n", "2", env={"COLUMNS": "1000000000", "FORCE_COLOR": "1"})
    assert result.returncode == 0 and len(result.stdout) < 100_000


# --- closed streams ---------------------------------------------------------------------


def _closing(*fds: int):
    def close() -> None:
        for fd in fds:
            os.close(fd)

    return close


@pytest.mark.parametrize(
    "command",
    [
        ("list",),
        ("export",),
        ("compare", "gpt-2-124m", "gpt-3-175b"),
        ("show", "gpt-2-124m"),
        ("validate",),
        ("trends", "moe"),
        ("list", "--json"),
    ],
)
def test_a_closed_stdout_is_a_one_line_error(command):
    result = process(*command, stdout=None, stderr=subprocess.PIPE, preexec_fn=_closing(1))
    assert result.returncode == 1
    assert result.stderr.decode().strip() == CLOSED_STDOUT


def test_closed_stdout_and_stderr_still_exit_1():
    result = process("list", stdout=None, stderr=None, preexec_fn=_closing(1, 2))
    assert result.returncode == 1


def test_a_closed_stderr_does_not_hide_the_exit_code():
    result = process("show", "no-such-card", stderr=None, preexec_fn=_closing(2))
    assert result.returncode == 1 and result.stdout == b""


def test_interactive_new_with_a_closed_stdin_is_a_one_line_error(tmp_path):
    catalogue = tmp_path / "models.yaml"
    catalogue.write_text(VALID_CARD, encoding="utf-8")
    before = catalogue.read_bytes()
    result = process("new", "--interactive", "-C", str(catalogue), preexec_fn=_closing(0))
    assert result.returncode == 1
    assert result.stderr.decode().strip() == (
        f"error: standard input is closed: no answers to read; {STDIN_HINT}"
    )
    assert result.stdout == b"" and catalogue.read_bytes() == before


@pytest.mark.parametrize("answers", [b"", b"toy-2b\n", b"toy-2b\nToy 2B\ntoy\n"])
def test_interactive_new_whose_input_ends_early_is_a_one_line_error(tmp_path, answers):
    catalogue = tmp_path / "models.yaml"
    catalogue.write_text(VALID_CARD, encoding="utf-8")
    before = catalogue.read_bytes()
    result = process("new", "--interactive", "-C", str(catalogue), input=answers)
    assert result.returncode == 1
    assert result.stderr.decode().strip() == (
        f"error: standard input ended before every answer was read; {STDIN_HINT}"
    )
    assert catalogue.read_bytes() == before


# --- a reader that leaves, a full disk -----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ("list",),
        ("list", "--json"),
        ("show", "gpt-3-175b"),
        ("export",),
        ("export", "-o", "/dev/stdout"),
        ("compare", "gpt-2-124m", "gpt-3-175b"),
        ("trends", "norm-type"),
        ("diagram", "gpt-2-124m"),
        ("validate",),
    ],
)
def test_a_broken_pipe_exits_quietly(command):
    """`archdb ... | head`: the reader is gone before a byte is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = process(*command, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert result.returncode == 1
    assert result.stderr == b""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [("list",), ("show", "gpt-2-124m"), ("export",)])
def test_a_full_stdout_names_the_reason(command):
    with open("/dev/full", "wb") as full:
        result = process(*command, stdout=full, stderr=subprocess.PIPE)
    assert result.returncode == 1
    assert result.stderr.decode().strip().endswith("No space left on device")
