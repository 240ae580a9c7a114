"""Benchmark: wall time of the query commands, start to finish.

Goals: list, show, compare and trends under 0.15 s, validate under 0.3 s; on a catalogue of
5,000 cards, show under 0.3 s and list and trends under 1 s once its snapshot is stored.

Run: .venv/bin/python benchmarks/cli_speed.py [--repeat 7] [--catalogue data/models.yaml]
     .venv/bin/python benchmarks/cli_speed.py --cards 5000   (the shipped cards cloned
     under new ids, a valid catalogue of that many cards)

Pin it to one core (taskset -c 0) on a quiet machine.

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
import tempfile
import time
from pathlib import Path

# seconds; every other command: QUERY_TARGET. list --json prints every whole card.
TARGETS = {"validate": 0.3, "list --json": 0.3}
QUERY_TARGET = 0.15
LARGE_TARGETS = {"show": 0.3, "show --json": 0.3}  # with --cards: the rest under 1 s
LARGE_TARGET = 1.0
HEAVY = ("torch", "pandas", "matplotlib", "fvcore", "transformers", "pydantic", "yaml_rs")
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


def cloned_catalogue(cards: int, folder: Path) -> Path:
    """The shipped catalogue's cards cloned under new ids (``llama-2-7b-c3``) until there
    are ``cards``, sorted by id as a catalogue is: the shape of a large catalogue."""
    text = (PROJECT / "data" / "models.yaml").read_text(encoding="utf-8")
    head, _, body = text.partition("\n- id: ")
    blocks = ["- id: " + b for b in body.split("\n- id: ")]
    clones = []
    for n in range(cards):
        block = blocks[n % len(blocks)]
        if n >= len(blocks):
            card_id, _, rest = block.removeprefix("- id: ").partition("\n")
            block = f"- id: {card_id}-c{n // len(blocks)}\n{rest}"
        clones.append(block.rstrip("\n") + "\n")
    clones.sort(key=lambda b: b.split("\n", 1)[0])
    path = folder / "models.yaml"
    path.write_text(head + "\n" + "\n".join(clones), encoding="utf-8")
    return path


def target(name: str, large: bool) -> float:
    if large:
        return LARGE_TARGETS.get(name, LARGE_TARGET)
    return TARGETS.get(name, QUERY_TARGET)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--catalogue", type=Path, default=None, help="default: the shipped one")
    parser.add_argument("--cards", type=int, default=None, help="clone the shipped cards to N")
    args = parser.parse_args()
    if args.cards:
        args.catalogue = cloned_catalogue(args.cards, Path(tempfile.mkdtemp()))
    catalogue = ["-C", str(args.catalogue)] if args.catalogue else []
    goals = "validate < 0.3 s, the rest < 0.15 s"
    if args.cards:
        goals = "show < 0.3 s, the rest < 1 s"
    print(f"median of {args.repeat} runs, seconds; goals (wall): {goals}")
    print(f"{'':<14} {'cached':>15}   {'no bytecode cache':>17}")
    print(f"{'command':<14} {'wall':>7} {'cpu':>7}   {'wall':>8} {'cpu':>8}   verdict")
    floors = {
        "python": [sys.executable, "-c", "pass"],
        "import CLI": [sys.executable, "-c", "import archdb_cli.main"],
    }
    rows: list[tuple[str, list[str], list[str]]] = [(n, a, []) for n, a in floors.items()]
    for name, command in COMMANDS.items():
        extra = catalogue if command[0] != "validate" else [str(args.catalogue)] * bool(catalogue)
        rows.append((name, [sys.executable, "-c", ENTRY, *command, *extra], [*command, *extra]))
    for name, argv, command in rows:
        wall, cpu = measure(argv, args.repeat, cached=True)  # its warm-up stores the caches
        heavy = heavy_imports(command) if command else []
        note = f"imports {', '.join(heavy)}" if heavy else ""
        cold_wall, cold_cpu = measure(argv, args.repeat, cached=False)
        goal = target(name, bool(args.cards))
        verdict = "ok" if max(wall, cold_wall) < goal else "SLOW"
        print(f"{name:<14} {wall:>7.3f} {cpu:>7.3f}   {cold_wall:>8.3f} {cold_cpu:>8.3f}   "
              f"{verdict} {note}".rstrip())  # fmt: skip
    if hasattr(os, "getloadavg"):
        print(f"load average {os.getloadavg()[0]:.1f} (other work inflates wall times)")


if __name__ == "__main__":
    main()
