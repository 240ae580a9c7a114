"""The collector pause: state restored, and freezing left to the installed entry point."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest
from archdb_cli.main import LazyCommands

from archdb.collector import collector_paused
from tests.conftest import run_cli


@pytest.mark.parametrize("enabled", [True, False])
def test_the_pause_restores_the_collector_as_it_was(enabled):
    (gc.enable if enabled else gc.disable)()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), collector_paused():
            raise RuntimeError("the pause ends on errors too")
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_a_command_run_in_process_freezes_nothing():
    """Only ``archdb_cli.main.run`` (one process, one command) freezes a command's
    imports; a process that runs many commands (tests, an embedding app) keeps them
    collectable."""
    assert LazyCommands.freeze_imports is False
    frozen = gc.get_freeze_count()
    result = run_cli("validate")
    assert result.returncode == 0, result.stderr
    assert gc.get_freeze_count() <= frozen  # frozen objects may die, none join
    assert gc.isenabled()


def test_importing_the_cli_freezes_nothing():
    """Importing the CLI module (as an embedding app or a test does) leaves the collector
    as it was; only the entry point freezes."""
    code = (
        "import gc; before = gc.get_freeze_count(); import archdb_cli.main; "
        "print(gc.isenabled(), gc.get_freeze_count() <= before)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]
