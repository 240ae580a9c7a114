"""Where the catalogue is: one rule for every command and ``archdb.load``.

Kept apart from the loader so that the CLI can state and apply the rule without importing
pydantic (its help text and start-up stay light).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from archdb.errors import UsageError

CATALOGUE_ENV = "ARCHDB_CATALOGUE"
CATALOGUE_RULES = (
    "Default: $ARCHDB_CATALOGUE, else data/models.yaml of the archdb checkout you stand "
    "in (found upward from the current folder), else the catalogue installed with archdb."
)
_PYPROJECT_LIMIT = 1_000_000  # bytes read of a pyproject.toml when recognising a checkout


def packaged_catalogue() -> Path:
    """The catalogue shipped with the package: archdb/data/models.yaml in an installed
    wheel; in an editable install, data/models.yaml of the source checkout (pyproject.toml
    installs data/ as archdb/data/, so there is one committed copy)."""
    package = Path(__file__).resolve().parent
    installed = package / "data" / "models.yaml"
    return installed if installed.is_file() else package.parent / "data" / "models.yaml"


DEFAULT_PATH = packaged_catalogue()  # the last resort of resolve_catalogue


def checkout_catalogue(start: Path | None = None) -> Path | None:
    """data/models.yaml of the archdb project checkout that holds ``start`` (default: the
    current folder): the nearest folder upward with that file beside a pyproject.toml
    whose project is named archdb. None outside a checkout."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "data" / "models.yaml"
        if candidate.is_file() and _is_archdb_project(folder / "pyproject.toml"):
            return candidate
    return None


def _is_archdb_project(pyproject: Path) -> bool:
    try:
        with pyproject.open("rb") as file:
            data = tomllib.loads(file.read(_PYPROJECT_LIMIT).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    project = data.get("project")
    return isinstance(project, dict) and project.get("name") == "archdb"


class CatalogueLocationError(UsageError, ValueError):
    """No catalogue a command may write to (only the installed, read-only copy)."""


def resolve_catalogue(explicit: Path | str | None = None, *, writing: bool = False) -> Path:
    """The catalogue to use: ``explicit`` (--catalogue), else $ARCHDB_CATALOGUE, else the
    checkout's data/models.yaml (see ``checkout_catalogue``), else the packaged copy.

    ``writing`` (archdb new, import-hf) refuses the copy inside an installed wheel: a
    card added there would vanish with the next upgrade.
    """
    if explicit is not None and str(explicit):
        return Path(explicit)
    if env := os.environ.get(CATALOGUE_ENV):
        return Path(env)
    found = checkout_catalogue()
    if found is not None:
        return found
    packaged = packaged_catalogue()
    if writing and packaged.parent.parent == Path(__file__).resolve().parent:
        raise CatalogueLocationError(
            "no catalogue to write to: the installed one is read-only; run inside an archdb "
            f"checkout, or name a catalogue with --catalogue or ${CATALOGUE_ENV}"
        )
    return packaged
