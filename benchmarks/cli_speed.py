"""Benchmark: wall time of the query commands, start to finish (SPEC: under 0.3 s each).

Run: .venv/bin/python benchmarks/cli_speed.py [--repeat 7] [--catalogue data/models.yaml]

Each command runs as a user runs it: a fresh interpreter through the ``archdb`` entry
point, output to a pipe, in two set-ups:

- cached: Python's compiled bytecode (.pyc) of archdb's own modules is on disk, as after
  any earlier run (one warm-up run writes it);
- no bytecode cache: PYTHONDONTWRITEBYTECODE=1 and no __pycache__ under archdb/ and cli/,
  so every archdb module is compiled from source on every start (a fresh checkout on a
  machine that sets the variable). Installed dependencies keep the bytecode pip wrote.

The report gives, per command and set-up, the median wall time and the median CPU time
(user + system: less sensitive to other work on a shared machine) of N runs, the floor
every command pays (interpreter start, importing the CLI), and any heavy module (torch,
pandas, matplotlib, fvcore, transformers) imported on the way.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET = 0.3  # seconds
HEAVY = ("torch", "pandas", "matplotlib", "fvcore", "transformers")
ENTRY = "from archdb_cli.main import run; run()"

COMMANDS: dict[str, list[str]] = {
    "list": ["list"],
    "list --where": ["list", "-w", "year>=2024", "-w", "attention=gqa", "-w", "vocab_size>100k"],
    "list --json": ["list", "--json", "-c", "all"],
    "show": ["show", "gemma-2-9b"],
    "show --json": ["show", "gemma-2-9b", "--json"],
    "compare": ["compare", "llama-2-7b", "gemma-2-9b"],
    "trends": ["trends"],
    "validate": ["validate"],
}


ENV = dict(os.environ)
PROJECT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[3:])} failed ({done.returncode}): {done.stderr[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def drop_bytecode() -> None:
    """Remove the compiled bytecode of archdb's own modules (it is rebuilt on a later run)."""
    for folder in (PROJECT / "archdb", PROJECT / "cli"):
        for cache in folder.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)


def heavy_imports(args: list[str]) -> list[str]:
    """Heavy top-level packages a command imports (python -X importtime lists each import)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY, *args],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    return sorted(h for h in HEAVY if h in names)


def measure(argv: list[str], repeat: int, cached: bool) -> tuple[float, float]:
    """Median wall and CPU seconds over ``repeat`` runs in one set-up."""
    env = dict(ENV)
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        timed(argv, env)  # warm-up: writes bytecode and the validation cache
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        drop_bytecode()
    runs = [timed(argv, env) for _ in range(repeat)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--catalogue", type=Path, default=None, help="default: the shipped one")
    args = parser.parse_args()
    catalogue = ["-C", str(args.catalogue)] if args.catalogue else []
    print(f"median of {args.repeat} runs, seconds; target < {TARGET} s wall")
    print(f"{'':<14} {'cached':>15}   {'no bytecode cache':>17}")
    print(f"{'command':<14} {'wall':>7} {'cpu':>7}   {'wall':>8} {'cpu':>8}   verdict")
    floors = {
        "python": [sys.executable, "-c", "pass"],
        "import CLI": [sys.executable, "-c", "import archdb_cli.main"],
    }
    rows = [(name, argv, "") for name, argv in floors.items()]
    for name, command in COMMANDS.items():
        extra = catalogue if command[0] != "validate" else [str(args.catalogue)] * bool(catalogue)
        heavy = heavy_imports([*command, *extra])
        rows.append((name, [sys.executable, "-c", ENTRY, *command, *extra],
                     f"imports {', '.join(heavy)}" if heavy else ""))  # fmt: skip
    for name, argv, note in rows:
        wall, cpu = measure(argv, args.repeat, cached=True)
        cold_wall, cold_cpu = measure(argv, args.repeat, cached=False)
        verdict = "ok" if max(wall, cold_wall) < TARGET else "SLOW"
        print(f"{name:<14} {wall:>7.3f} {cpu:>7.3f}   {cold_wall:>8.3f} {cold_cpu:>8.3f}   "
              f"{verdict} {note}".rstrip())  # fmt: skip
    if hasattr(os, "getloadavg"):
        print(f"load average {os.getloadavg()[0]:.1f} (other work inflates wall times)")


if __name__ == "__main__":
    main()
