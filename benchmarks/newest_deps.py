"""Benchmark (information, never a gate): which tests break on the newest releases of
archdb's dependencies, ahead of the next update of requirements.lock.

Run: .venv/bin/python benchmarks/newest_deps.py [--keep DIR] [--json] [-- pytest args]

It makes a throwaway venv, installs torch at the lock's CPU build from PyTorch's CPU index
or a local --find-links folder (the newest torch on the public index is a multi-GB CUDA
build, and torch is not what this check watches), then the project with its test extras at
the newest releases pyproject.toml's ranges allow (``pip install --upgrade
--upgrade-strategy eager``, no lock), and runs the suite there (``pytest -n 2``, or the
pytest arguments given after ``--``). It prints every package whose version differs from
requirements.lock, and every test that fails or errors with the first line of its message.

Exit 0 whatever the tests do: a failing test here is news for the next lock update, not a
broken main. Exit 1 only when the environment could not be made (pip's message is shown).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import venv
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCK = REPO / "requirements.lock"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
PINNED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


@dataclass(frozen=True)
class Broken:
    test: str  # pytest's node id
    outcome: str  # failed or error
    message: str  # the first line of pytest's message


@dataclass(frozen=True)
class Report:
    changed: dict[str, tuple[str, str]]  # package -> (locked, newest)
    broken: list[Broken]
    summary: str  # pytest's counts
    seconds: float  # install and test run, wall


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(lock: Path = LOCK) -> dict[str, str]:
    """Package -> version pinned by the lock (pip-compile's ``name==version`` lines)."""
    pins = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        match = PINNED.match(line.strip())
        if match:
            pins[_normal(match.group(1))] = match.group(2)
    return pins


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(python), "-m", "pip", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise SystemExit(f"pip {' '.join(args[:3])} ... failed (exit {done.returncode}):\n{tail}")
    return done


def make_newest_env(folder: Path, torch: str) -> Path:
    """A venv in ``folder`` with torch at version ``torch`` and everything else at its
    newest release; returns its interpreter."""
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    python = folder / "bin" / "python"
    # pip also looks in its configured --find-links folders (a local wheel, offline)
    _pip(python, "install", "-q", "--no-deps", "--index-url", TORCH_INDEX, f"torch=={torch}")
    held = folder / "torch-held.txt"
    held.write_text(f"torch=={torch}\n", encoding="utf-8")
    _pip(python, "install", "-q", "--upgrade", "--upgrade-strategy", "eager",
         "-c", str(held), "-e", f"{REPO}[test]")  # fmt: skip
    return python


def installed_versions(python: Path) -> dict[str, str]:
    listed = json.loads(_pip(python, "list", "--format", "json").stdout)
    return {_normal(p["name"]): p["version"] for p in listed}


def changed_from_lock(newest: dict[str, str], locked: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Packages the lock pins whose newest release differs, and new ones (locked: '-')."""
    return {
        name: (locked.get(name, "-"), version)
        for name, version in sorted(newest.items())
        if locked.get(name) != version and name not in {"pip", "setuptools", "archdb"}
    }


def broken_tests(junit: Path) -> list[Broken]:
    """Every failing or erroring test of a pytest junit-xml report."""
    broken = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        for outcome in ("failure", "error"):
            found = case.find(outcome)
            if found is None:
                continue
            module = case.get("classname", "").replace(".", "/")
            test = f"{module}.py::{case.get('name')}" if module else str(case.get("name"))
            text = found.get("message") or found.text or ""
            first = text.strip().splitlines()[0] if text.strip() else ""
            broken.append(Broken(test, "failed" if outcome == "failure" else "error", first))
    return broken


def run_suite(python: Path, junit: Path, extra: list[str]) -> str:
    """The suite in the newest venv; returns pytest's last line (its counts)."""
    args = extra or ["-n", "2"]
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    done = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
         *args],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else f"(no output; exit {done.returncode})"


def check(folder: Path, extra: list[str]) -> Report:
    start = time.perf_counter()
    locked = locked_versions()
    python = make_newest_env(folder, locked["torch"])
    changed = changed_from_lock(installed_versions(python), locked)
    junit = folder / "junit.xml"
    summary = run_suite(python, junit, extra)
    broken = broken_tests(junit) if junit.is_file() else []
    return Report(changed, broken, summary, time.perf_counter() - start)


def show(report: Report) -> str:
    lines = ["Newest releases that differ from requirements.lock:"]
    width = max((len(n) for n in report.changed), default=0)
    for name, (locked, newest) in report.changed.items():
        lines.append(f"  {name:<{width}}  {locked} -> {newest}")
    if not report.changed:
        lines.append("  none: the lock is current")
    lines.append(f"Suite on the newest releases: {report.summary} ({report.seconds:.0f} s)")
    for item in report.broken:
        lines.append(f"  {item.outcome}: {item.test}")
        if item.message:
            lines.append(f"      {item.message[:200]}")
    if not report.broken:
        lines.append("  no test breaks")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="Make the venv here and leave it.")
    parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
    parser.add_argument("pytest_args", nargs="*", help="After --: pytest's arguments.")
    args = parser.parse_args()
    if args.keep is not None:
        report = check(args.keep.resolve(), args.pytest_args)
    else:
        with tempfile.TemporaryDirectory(prefix="archdb-newest-") as tmp:
            report = check(Path(tmp), args.pytest_args)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(show(report))


if __name__ == "__main__":
    sys.exit(main())
