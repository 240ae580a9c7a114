"""Benchmark: how long building and measuring takes, card by card.

For every card: the toy's build and forward pass (the goal: about a second on a CPU), its
fvcore trace, the full size's exact count on the meta device, and the analytic
``derived_figures`` (the goal: under 1 ms, since query commands call it per card).

Run: .venv/bin/python benchmarks/build_speed.py [--catalogue PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from pathlib import Path

import torch

from archdb.builder.model import build_model, example_inputs
from archdb.builder.shrink import shrink
from archdb.catalogue import DEFAULT_PATH, load_catalogue
from archdb.measure.analytic import derived_figures
from archdb.measure.flops import measure_flops
from archdb.measure.params import full_size_params
from archdb.plan.layout import BuildError, fill_unknowns


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_card(card, repeat: int) -> dict:
    row = {"id": card.id}
    row["derived_ms"] = 1000 * _median(lambda: derived_figures(card), max(repeat, 20))
    try:
        toy = shrink(fill_unknowns(card.architecture)[0]).arch
    except BuildError:
        return row

    def toy_forward() -> None:
        model = build_model(toy).eval()
        with torch.no_grad():
            model(*example_inputs(model, toy.context_length))

    row["toy_s"] = _median(toy_forward, repeat)
    row["fvcore_s"] = _median(lambda: measure_flops(build_model(toy), toy.context_length), repeat)
    with contextlib.suppress(BuildError):  # a null vocab_size: the toy builds, the full not
        row["meta_s"] = _median(lambda: full_size_params(card.architecture), repeat)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--catalogue", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    rows = [time_card(c, args.repeat) for c in load_catalogue(args.catalogue)]
    print(
        f"{'card':24} {'toy build+fwd s':>15} {'fvcore s':>9} {'meta count s':>12} "
        f"{'derived ms':>10}"
    )
    for r in rows:
        cells = [f"{r[k]:.3f}" if k in r else "-" for k in ("toy_s", "fvcore_s", "meta_s")]
        print(f"{r['id']:24} {cells[0]:>15} {cells[1]:>9} {cells[2]:>12} {r['derived_ms']:>10.3f}")

    def total(key: str) -> float:
        return sum(r.get(key, 0.0) for r in rows)

    print(
        f"\n{len(rows)} cards: toys built and run in {total('toy_s'):.1f} s "
        f"(slowest {max(r.get('toy_s', 0) for r in rows):.2f} s), fvcore "
        f"{total('fvcore_s'):.1f} s, full-size meta counts {total('meta_s'):.1f} s, "
        f"derived_figures {total('derived_ms') / len(rows):.3f} ms per card on average "
        f"(slowest {max(r['derived_ms'] for r in rows):.3f} ms)"
    )


if __name__ == "__main__":
    main()
