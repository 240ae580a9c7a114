"""Benchmark: wall time of the test suite as the README runs it (issue goal: under 45 s with
``pytest -n 2`` on a quiet 2-core machine).

Run: .venv/bin/python benchmarks/suite_time.py [--repeat 3] [-- extra pytest arguments]

Each run is a fresh ``python -m pytest -n 2 -q -p no:cacheprovider`` from the repository
root (no cache from an earlier run is read). The report gives each run's wall time, the CPU
time of the run's processes (user + system: less sensitive to other work on a shared
machine), the load average before it, and the median wall and CPU time over the runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 45.0  # seconds, wall, pytest -n 2


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(extra: list[str]) -> tuple[float, float, float, str]:
    """One suite run: (wall seconds, CPU seconds, load average before, pytest's last line)."""
    load = os.getloadavg()[0]
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
    if done.returncode != 0:
        failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
        raise SystemExit("\n".join([f"the suite failed (exit {done.returncode}): {last}", *failed]))
    return wall, _children_cpu() - cpu, load, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments, after --")
    args = parser.parse_args()
    walls, cpus = [], []
    for i in range(args.repeat):
        wall, cpu, load, last = run_once(args.pytest_args)
        walls.append(wall)
        cpus.append(cpu)
        print(f"run {i + 1}: {wall:6.1f} s wall, {cpu:6.1f} s CPU, load before {load:.2f}: {last}")
    wall = statistics.median(walls)
    verdict = "under" if wall < TARGET else "over"
    print(
        f"median: {wall:.1f} s wall ({verdict} the {TARGET:.0f} s goal), "
        f"{statistics.median(cpus):.1f} s CPU"
    )


if __name__ == "__main__":
    main()
