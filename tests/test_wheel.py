"""The built wheel works outside a checkout: installed into a fresh venv, run from an empty
folder (validate, list, show, report, and the README's Python examples); its reports of
the shipped catalogue are the checkout's, byte for byte.

The venv reuses the dependencies already installed here through a .pth file (no
download), but sees none of the checkout: archdb comes from the wheel. The wheel is built
by the project's own build backend and installed by pip, one process each.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.conftest import shared_render

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "archdb", "archdb_hf", "cli")
SOURCES += ("data/models.yaml",)
SOURCES += ("data/models.schema.json", "data/measurements")
MEASUREMENTS = REPO / "data" / "measurements"  # what `archdb report` reads beside the catalogue

pytestmark = pytest.mark.wheel


def _setuptools_is_recent() -> bool:
    major = int(version("setuptools").split(".")[0])
    return major >= 77  # pyproject's build requirement (PEP 639 license field)


def _build_wheel(tmp: Path) -> Path:
    """Build from a copy of the tracked sources, so the checkout gets no build/ folder,
    through pyproject's build backend in one process: what ``pip wheel
    --no-build-isolation`` runs, without pip's own start-up around it."""
    src = tmp / "src"
    for name in SOURCES:
        target = src / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, target)
    dist = tmp / "dist"
    dist.mkdir()
    backend = tomllib.loads((src / "pyproject.toml").read_text())["build-system"]["build-backend"]
    build = f"import {backend} as backend, sys; print(backend.build_wheel(sys.argv[1]))"
    subprocess.run(
        [sys.executable, "-c", build, dist], cwd=src, check=True, capture_output=True, timeout=120
    )
    (wheel,) = dist.glob("archdb-*.whl")
    return wheel


def _venv_with(wheel: Path, tmp: Path) -> Path:
    """A fresh venv holding only the wheel; the dependencies (and pip) come from this
    environment through a .pth file. pip runs once, in the venv's own Python (so it
    installs there and writes the ``archdb`` script for that Python), ignoring what the
    .pth shows it: it never resolves, upgrades or uninstalls anything outside the venv."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    deps = [p for p in sys.path if p.endswith("-packages") and Path(p).is_dir()]
    (site,) = (venv / "lib").glob("python3.*/site-packages")
    (site / "_archdb_test_deps.pth").write_text("\n".join(deps) + "\n")
    install = ("install", "-q", "--no-deps", "--no-index", "--ignore-installed")
    quiet = ("--no-warn-conflicts", "--disable-pip-version-check", "--no-compile")
    subprocess.run(
        [venv / "bin" / "python", "-m", "pip", *install, *quiet, wheel],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    if not _setuptools_is_recent():
        pytest.skip("building the wheel needs setuptools>=77: pip install -e '.[test]'")
    tmp = tmp_path_factory.mktemp("wheel")
    venv = _venv_with(_build_wheel(tmp), tmp)
    empty = tmp / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARCHDB_", "PYTHON"))}
    env |= {"ARCHDB_CACHE_DIR": str(tmp / "cache"), "NO_COLOR": "1", "COLUMNS": "200"}
    return venv, empty, env


def _run(installed, *args: str, cwd: Path | None = None, **extra: str):
    """One command in the empty folder (generous timeout: seconds on an idle machine,
    minutes on a shared busy one)."""
    _, empty, env = installed
    return subprocess.run(
        args, cwd=cwd or empty, env=env | extra, capture_output=True, text=True, timeout=900
    )


def _package_files() -> set[str]:
    """What the wheel must install, as paths in site-packages: every file of archdb and
    archdb_hf, and of cli/ (as archdb_cli), the catalogue, its schema and its measurements."""
    files = {"archdb/data/models.yaml", "archdb/data/models.schema.json"}
    files |= {f"archdb/{p.relative_to(REPO).as_posix()}" for p in MEASUREMENTS.glob("*.json")}
    for folder, package in (
        ("archdb", "archdb"),
        ("archdb_hf", "archdb_hf"),
        ("cli", "archdb_cli"),
    ):
        for path in (REPO / folder).rglob("*"):
            name = path.relative_to(REPO).as_posix()
            if path.is_file() and "__pycache__" not in name:
                files.add(package + name.removeprefix(folder))
    return files


def test_the_wheel_ships_the_catalogue_and_the_cli_finds_it(installed) -> None:
    """Every module and data file is installed, and the query commands find the packaged
    catalogue. The builder and the reports from the wheel are the README example's and
    the report's tests below; each command in full is the in-process CLI tests' (archdb
    build gemma-2: test_builder's, whose modules the file check shows installed)."""
    venv, empty, _ = installed
    (site,) = venv.glob("lib/python3.*/site-packages")
    shipped_files = {
        path.relative_to(site).as_posix()
        for package in ("archdb", "archdb_hf", "archdb_cli")
        for path in (site / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert shipped_files == _package_files()
    archdb = str(venv / "bin" / "archdb")
    where = _run(
        installed, str(venv / "bin" / "python"), "-c", "import archdb; print(archdb.__file__)"
    )
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr

    validate = _run(installed, archdb, "validate")
    assert validate.returncode == 0, validate.stderr
    packaged = venv.glob("lib/python3.*/site-packages/archdb/data/models.yaml")
    shipped = (REPO / "data" / "models.yaml").read_text(encoding="utf-8").count("\n- id: ")
    assert f"{next(packaged)}: {shipped} cards" in validate.stdout
    shipped_schema = next(venv.glob("lib/python3.*/site-packages/archdb/data/models.schema.json"))
    assert shipped_schema.read_bytes() == (REPO / "data" / "models.schema.json").read_bytes()

    listed = _run(installed, archdb, "list", "-w", "year>=2024", "--json", "-c", "id,year")
    assert listed.returncode == 0, listed.stderr
    assert {r["id"] for r in json.loads(listed.stdout)} >= {"gemma-2-9b", "llama-3.1-405b"}

    shown = _run(installed, archdb, "show", "llama-2-7b")
    assert shown.returncode == 0 and "Llama 2 7B" in shown.stdout, shown.stderr

    # ARCHDB_CATALOGUE wins over the packaged copy (validate: test_api_load, in process).
    broken = empty.parent / "broken.yaml"
    broken.write_text("- id: 1\n")
    bad = _run(installed, archdb, "list", ARCHDB_CATALOGUE=str(broken))
    assert bad.returncode == 1 and "broken.yaml:1" in bad.stderr, bad.stderr


def test_the_installed_report_is_the_checkouts(installed, shared_folder: Path) -> None:
    """`archdb report -o DIR` from the wheel, in an empty folder, in another process with
    another hash seed, writes the checkout's reports of the shipped catalogue byte for
    byte (every figure, claim 18 and the mechanisms page included: their measurements ship
    in the wheel), into the current folder and nothing into the installation. The claim
    experiments come from the session's cache (the same code measured them)."""
    from archdb.catalogue import DEFAULT_PATH, load_catalogue
    from archdb.outputs import MANIFEST, manifest_bytes
    from archdb.reports.build import render_reports

    expected = render_reports(shared_render(shared_folder, load_catalogue(DEFAULT_PATH)))
    expected[MANIFEST] = manifest_bytes(expected)
    venv, empty, _ = installed
    cache = {"ARCHDB_CACHE_DIR": str(shared_folder / "cache")}  # as use_shared_cache
    result = _run(installed, str(venv / "bin" / "archdb"), "report", "-o", "out", **cache)
    assert result.returncode == 0, result.stderr
    out = empty / "out"
    written = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert sorted(written) == sorted(expected)
    differing = sorted(name for name in expected if written[name] != expected[name])
    assert not differing, f"the installed wheel's reports differ from the checkout's: {differing}"
    assert not list(venv.rglob("*.svg"))  # nothing written into the installation


# Each example in a namespace of its own, as a user pastes it into a fresh interpreter
# (names do not leak from one to the next), in one process: one import of torch.
RUN_EACH = """\
import sys
for n, example in enumerate(sys.argv[1:], 1):
    print(f"--- example {n}", flush=True)
    exec(compile(example, f"<README example {n}>", "exec"), {"__name__": "__main__"})
"""


def test_the_readme_python_examples_run_from_the_wheel(installed) -> None:
    venv, _, _ = installed
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python", 1)[1]
    section = section.split("\n## ", 1)[0]
    examples = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(examples) == 2  # a built toy, then the catalogue
    result = _run(installed, str(venv / "bin" / "python"), "-c", RUN_EACH, *examples)
    assert result.returncode == 0, result.stderr
    _, toy, catalogue = result.stdout.split("--- example ")
    assert "torch.Size([2, 128, 256])" in toy  # the toy's logits
    assert "4096" in catalogue  # Llama 2 7B's d_model, printed by the example
