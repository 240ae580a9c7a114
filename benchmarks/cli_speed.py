"""Benchmark: wall time of the query commands, start to finish (SPEC: under 0.3 s each).

Run: .venv/bin/python benchmarks/cli_speed.py [--repeat 7] [--catalogue data/models.yaml]

Each command runs as a user runs it: a fresh interpreter through the ``archdb`` entry
point, output to a pipe. The report gives the best and median of N runs per command, the
floor every command pays (interpreter start, and importing the CLI), and whether any heavy
module (torch, pandas, matplotlib, fvcore, transformers) was imported on the way.

Python normally caches compiled bytecode (.pyc) after a module's first import; a machine
that sets PYTHONDONTWRITEBYTECODE recompiles every module on every start instead, which
costs a CLI like this one 0.1-0.2 s. The commands run as installed CLIs normally run
(bytecode cached, after one warm-up run); --no-bytecode-cache measures the other way.
"""

from __future__ import annotations

import argparse
import os
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


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[3:])} failed ({done.returncode}): {done.stderr[-500:]}")
    return elapsed


def heavy_imports(args: list[str]) -> list[str]:
    """Heavy top-level packages a command imports (python -X importtime lists each import)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY, *args],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    return sorted(h for h in HEAVY if h in names)


def row(name: str, times: list[float], heavy: str = "") -> str:
    best, median = min(times), statistics.median(times)
    verdict = "ok" if median < TARGET else "SLOW"
    return f"{name:<14} {best:>7.3f} {median:>8.3f}   {verdict:<5} {heavy}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--catalogue", type=Path, default=None, help="default: the shipped one")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="recompile every module on every start (PYTHONDONTWRITEBYTECODE=1)",
    )
    args = parser.parse_args()
    if args.no_bytecode_cache:
        ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"bytecode cache: {'off' if args.no_bytecode_cache else 'on'}")
    catalogue = ["-C", str(args.catalogue)] if args.catalogue else []

    print(f"{'command':<14} {'best s':>7} {'median s':>8}   target < {TARGET} s")
    floors = {
        "python": [sys.executable, "-c", "pass"],
        "import CLI": [sys.executable, "-c", "import archdb_cli.main"],
    }
    for name, argv in floors.items():
        print(row(name, [timed(argv) for _ in range(args.repeat)]))
    for name, command in COMMANDS.items():
        extra = catalogue if command[0] != "validate" else [str(args.catalogue)] * bool(catalogue)
        argv = [sys.executable, "-c", ENTRY, *command, *extra]
        timed(argv)  # warm-up: writes bytecode and the validation cache
        times = [timed(argv) for _ in range(args.repeat)]
        heavy = heavy_imports([*command, *extra])
        print(row(name, times, f"imports {', '.join(heavy)}" if heavy else ""))


if __name__ == "__main__":
    main()
