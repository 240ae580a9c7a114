"""`archdb validate` and the CLI's error contract: exit codes, file:line, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from archdb_cli.main import app
from typer.testing import CliRunner

from tests.conftest import VALID_CARD, card_text, run_cli

runner = CliRunner()


def archdb(*args: str) -> subprocess.CompletedProcess:
    """Run the real entry point, as a user would, to see exit codes and stderr."""
    code = "from archdb_cli.main import run; run()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )


def test_valid_catalogue_summary(write_catalogue):
    path = write_catalogue(VALID_CARD + card_text("toy-2b"))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "2 cards, 1 families, years 2023–2023" in result.output


def test_validate_reports_the_values_resting_on_secondary_sources(write_catalogue):
    mirrored = card_text("toy-2b").replace(
        "    - kind: config\n",
        "    - kind: mirror\n      copies: https://example.org/official/config.json\n",
        1,
    )
    path = write_catalogue(VALID_CARD + mirrored)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "mirror" in result.output and "(50.0%)" in result.output  # one card of two
    assert "derived 0 (0.0%), defaults 0 (0.0%)" in result.output
    result = runner.invoke(app, ["validate", str(path), "--json"])
    shares = json.loads(result.output)["secondary_sources"]
    assert shares["mirror"]["share"] == 0.5
    assert shares["derived"] == {"values": 0, "share": 0.0}


def test_shipped_catalogue_validates():
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 0, result.output
    assert "cards" in result.output


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (VALID_CARD.replace("n_kv_heads: 4", "n_kv_heads: 3"), ":23:"),
        (VALID_CARD.replace("  name: Toy 1B\n", "  name: Toy 1B\n  name: Toy\n"), ":3:"),
        (VALID_CARD.replace("name: Toy 1B", "name: !!python/object/apply:os.system [id]"), ":2:"),
        (VALID_CARD + VALID_CARD, ":41:"),
        ("- [unclosed\n", ":2:"),
    ],
)
def test_invalid_catalogue_exits_1_with_location_and_no_traceback(write_catalogue, text, where):
    """In this process (an escaping exception fails the test); the real entry point's exit
    code and clean stderr for a broken catalogue: test_commands_reading_a_broken_catalogue."""
    path = write_catalogue(text)
    result = run_cli("validate", str(path))
    assert result.returncode == 1
    assert f"{path}{where}" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_file_is_a_clean_error(tmp_path):
    result = archdb("validate", str(tmp_path / "nope.yaml"))
    assert result.returncode == 1
    assert "cannot read file" in result.stderr
    assert "Traceback" not in result.stderr


def test_usage_error_exits_2():
    result = archdb("validate", "--no-such-flag")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_list_json_prints_every_card(write_catalogue):
    import json

    path = write_catalogue(VALID_CARD + card_text("toy-2b"))
    result = run_cli("list", "--json", "--catalogue", str(path))
    assert result.returncode == 0, result.stderr
    cards = json.loads(result.stdout)
    assert [c["id"] for c in cards] == ["toy-1b", "toy-2b"]
    assert cards[0]["architecture"]["attention"]["n_kv_heads"] == 4


def test_commands_reading_a_broken_catalogue_exit_1(write_catalogue):
    path = write_catalogue(VALID_CARD.replace("d_model: 2048", "d_model: wide"))
    result = archdb("list", "--catalogue", str(path))
    assert result.returncode == 1
    assert f"{path}:15:" in result.stderr
    assert "Traceback" not in result.stderr
