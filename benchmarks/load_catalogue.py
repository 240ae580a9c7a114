"""Benchmark: load and validate N synthetic cards (SPEC: 10,000 in under 3 s, linear).

Run: .venv/bin/python benchmarks/load_catalogue.py [--sizes 1000 5000 10000] [--repeat 3]
Prints the median time per size and the per-card cost, so linear growth is visible.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from archdb.catalogue import DEFAULT_PATH, check_catalogue


def synthetic_catalogue(n: int) -> str:
    """n copies of the shipped catalogue's first card, with unique ids in sorted order."""
    text = DEFAULT_PATH.read_text(encoding="utf-8")
    start = text.index("\n- id: ") + 1
    end = text.find("\n- id: ", start)
    template = text[start : end if end > 0 else len(text)].rstrip("\n") + "\n"
    first_id = template.split("\n", 1)[0].removeprefix("- id: ").strip()
    return "".join(template.replace(first_id, f"card-{i:06d}", 1) for i in range(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'cards':>8} {'median s':>9} {'us/card':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"cards-{n}.yaml"
            path.write_text(synthetic_catalogue(n), encoding="utf-8")
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                cards, problems = check_catalogue(path, use_cache=False)
                times.append(time.perf_counter() - t0)
                assert len(cards) == n and not problems, problems[:3]
            median = statistics.median(times)
            print(f"{n:>8} {median:>9.3f} {median / n * 1e6:>8.1f}")


if __name__ == "__main__":
    main()
