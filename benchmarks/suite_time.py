"""Benchmark: wall time of the test suite as the README runs it (issue goal: under 45 s with
``pytest -n 2`` on a quiet 2-core machine).

Run: .venv/bin/python benchmarks/suite_time.py [--repeat 3] [--against REV] [-- pytest args]

Each run is a fresh ``python -m pytest -n 2 -q -p no:cacheprovider`` from the repository
root (no cache from an earlier run is read). The report gives each run's wall time, the CPU
time of the run's processes (user + system: less sensitive to other work on a shared
machine), the load average before it, and the median wall and CPU time over the runs.

``--against REV`` compares with an earlier revision: REV is checked out into a temporary
git worktree and its suite runs alternately with this checkout's, run for run, so that a
slow or fast stretch of a shared machine falls on both sides alike; the report adds each
side's medians and the ratio of the pairs' wall times. Both sides run this interpreter
with its packages; REV's ``archdb`` and ``archdb_cli`` come first on REV's PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 45.0  # seconds, wall, pytest -n 2


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(root: Path, extra: list[str]) -> tuple[float, float, float, str]:
    """One suite run in ``root``: (wall seconds, CPU seconds, load average before, pytest's
    last line)."""
    load = os.getloadavg()[0]
    cpu = _children_cpu()
    env = os.environ.copy()
    if root != REPO:  # the CLI package is cli/ installed as archdb_cli: REV's, by a link
        links = root / ".suite-time-path"
        links.mkdir(exist_ok=True)
        if not (links / "archdb_cli").exists():
            (links / "archdb_cli").symlink_to(root / "cli")
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(links)])
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", *extra],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
    if done.returncode != 0:
        failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
        raise SystemExit(
            "\n".join([f"the suite failed in {root} (exit {done.returncode}): {last}", *failed])
        )
    return wall, _children_cpu() - cpu, load, last


def _summary(name: str, walls: list[float], cpus: list[float]) -> str:
    wall = statistics.median(walls)
    verdict = "under" if wall < TARGET else "over"
    return (
        f"{name}median: {wall:.1f} s wall ({verdict} the {TARGET:.0f} s goal), "
        f"{statistics.median(cpus):.1f} s CPU"
    )


def measure(repeat: int, extra: list[str]) -> None:
    walls, cpus = [], []
    for i in range(repeat):
        wall, cpu, load, last = run_once(REPO, extra)
        walls.append(wall)
        cpus.append(cpu)
        print(f"run {i + 1}: {wall:6.1f} s wall, {cpu:6.1f} s CPU, load before {load:.2f}: {last}")
    print(_summary("", walls, cpus))


def compare(rev: str, repeat: int, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="suite-time-") as tmp:
        old = Path(tmp) / "rev"
        git = ["git", "-C", str(REPO)]
        subprocess.run([*git, "worktree", "add", "-q", "--detach", str(old), rev], check=True)
        try:
            sides: dict[str, tuple[list[float], list[float]]] = {rev: ([], []), "this": ([], [])}
            for i in range(repeat):
                for name, root in ((rev, old), ("this", REPO)):
                    wall, cpu, load, last = run_once(root, extra)
                    sides[name][0].append(wall)
                    sides[name][1].append(cpu)
                    print(
                        f"run {i + 1} {name}: {wall:6.1f} s wall, {cpu:6.1f} s CPU, "
                        f"load before {load:.2f}: {last}"
                    )
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(old)], check=False)
    for name, (walls, cpus) in sides.items():
        print(_summary(f"{name}: ", walls, cpus))
    ratios = [new / was for new, was in zip(sides["this"][0], sides[rev][0], strict=True)]
    print(
        f"this / {rev}, wall, run for run: median {statistics.median(ratios):.2f} "
        f"({', '.join(f'{r:.2f}' for r in ratios)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", metavar="REV", help="alternate runs with this revision's")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments, after --")
    args = parser.parse_args()
    if args.against:
        compare(args.against, args.repeat, args.pytest_args)
    else:
        measure(args.repeat, args.pytest_args)


if __name__ == "__main__":
    main()
