"""The Python API: archdb.load, Catalogue.where/frame, and the rule that finds the catalogue."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

import pytest
from archdb_cli.main import COMMANDS, app
from typer.testing import CliRunner

import archdb
import archdb.catalogue
import archdb.locations
from archdb.catalogue import (
    CATALOGUE_ENV,
    CatalogueLocationError,
    checkout_catalogue,
    load_catalogue,
    packaged_catalogue,
    resolve_catalogue,
)
from archdb.query import QueryError

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "data" / "models.yaml"


# --- archdb.load -------------------------------------------------------------------


@pytest.mark.parametrize("module", [archdb, archdb.catalogue])
def test_docstring_examples_run(module) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_load_get_where_frame() -> None:
    cat = archdb.load(SHIPPED)
    assert len(cat) == len(list(cat)) == len(load_catalogue(REPO / "data" / "models.yaml"))
    assert cat.get("gemma-2-9b").architecture.vocab_size == 256_000
    assert cat.get("no-such-card") is None
    recent = cat.where("year>=2024", "attention=gqa")
    assert 0 < len(recent) < len(cat)
    assert all(c.year >= 2024 and c.architecture.attention_family == "gqa" for c in recent)
    # one expression with `and` is the same filter; a where narrows a where
    assert recent.ids() == cat.where("year>=2024 and attention=gqa").ids()
    layernorm = recent.where("norm=layernorm")
    assert "command-r-plus" in layernorm.ids() and set(layernorm.ids()) < set(recent.ids())
    assert all(c.architecture.norm.type.value == "layernorm" for c in layernorm)
    frame = recent.frame()
    assert list(frame.index) == recent.ids()
    assert (frame["year"] >= 2024).all()


def test_where_speaks_the_list_language_and_its_errors() -> None:
    cat = archdb.load(SHIPPED)
    swiglu = cat.where("activation in (swiglu)", "vocab_size>100k")
    assert all(c.architecture.vocab_size > 100_000 for c in swiglu)
    with pytest.raises(QueryError, match="no_such_field"):
        cat.where("no_such_field=1")


def test_import_archdb_stays_light() -> None:
    """Importing archdb and reaching its functions loads neither pandas nor torch."""
    code = "import sys, archdb; archdb.params; archdb.build\n"
    code += "print([m for m in ('pandas', 'torch') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_load_build_params_flops_never_import_the_transformers_package() -> None:
    """The core answers without archdb_hf (import-hf, the family specs, checkpoints): it
    is imported only where a checkpoint is loaded or a card's fidelity judged."""
    code = "import sys, archdb\n"
    code += "archdb.load(); archdb.build('llama-3-8b'); archdb.params('deepseek-v3')\n"
    code += "archdb.flops('gpt-2-124m')\n"
    code += "print(sorted(m for m in sys.modules if m.startswith('archdb_hf')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- which catalogue -----------------------------------------------------------------


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CATALOGUE_ENV, raising=False)
    inside = REPO / "archdb" / "reports"  # any folder of the checkout
    monkeypatch.chdir(inside)
    assert resolve_catalogue() == SHIPPED  # the checkout, found upward
    monkeypatch.setenv(CATALOGUE_ENV, str(tmp_path / "env.yaml"))
    assert resolve_catalogue() == tmp_path / "env.yaml"  # the environment beats it
    assert resolve_catalogue(tmp_path / "flag.yaml") == tmp_path / "flag.yaml"  # the flag wins
    monkeypatch.delenv(CATALOGUE_ENV)
    monkeypatch.chdir(tmp_path)
    assert checkout_catalogue() is None
    assert resolve_catalogue() == packaged_catalogue()  # outside a checkout: the packaged one
    assert packaged_catalogue().read_bytes() == SHIPPED.read_bytes()


def test_a_folder_is_a_checkout_only_with_an_archdb_pyproject(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "models.yaml").write_text("[]\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert checkout_catalogue(deep) is None  # no pyproject.toml
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    assert checkout_catalogue(deep) is None
    (tmp_path / "pyproject.toml").write_text("[project\nname = archdb")  # unreadable TOML
    assert checkout_catalogue(deep) is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "archdb"\n')
    assert checkout_catalogue(deep) == tmp_path / "data" / "models.yaml"


def test_writing_refuses_the_installed_copy(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv(CATALOGUE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    installed = Path(archdb.locations.__file__).resolve().parent / "data" / "models.yaml"
    monkeypatch.setattr(archdb.locations, "packaged_catalogue", lambda: installed)
    assert resolve_catalogue() == installed
    with pytest.raises(CatalogueLocationError, match="--catalogue"):
        resolve_catalogue(writing=True)
    assert resolve_catalogue(tmp_path / "mine.yaml", writing=True) == tmp_path / "mine.yaml"


def test_cli_follows_the_rules_and_help_names_no_machine_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    monkeypatch.delenv(CATALOGUE_ENV, raising=False)
    for command in COMMANDS:
        text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        assert str(REPO) not in text and "site-packages" not in text, command
    assert "ARCHDB_CATALOGUE" in runner.invoke(app, ["list", "--help"]).output
    broken = tmp_path / "broken.yaml"
    broken.write_text("- id: 1\n")
    result = runner.invoke(app, ["validate"], env={CATALOGUE_ENV: str(broken)})
    assert result.exit_code == 1 and "broken.yaml:1" in result.output
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 0 and str(packaged_catalogue()) in result.output
