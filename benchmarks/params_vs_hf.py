"""Benchmark: archdb's exact parameters vs Hugging Face transformers' at full size.

For every catalogue card whose family transformers implements, build transformers' model
for the card's published architecture on the meta device and compare its parameter count
with archdb's (meta-device model and analytic formula). Also prints, for every card, the
exact count against the authors' published figure, flagging gaps over 5%.

Run: .venv/bin/python benchmarks/params_vs_hf.py [--catalogue data/models.yaml] [--markdown]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from pathlib import Path

from archdb.catalogue import DEFAULT_PATH, load_catalogue
from archdb.measure.analytic import param_count
from archdb.measure.params import full_size_params
from archdb.plan.layout import BuildError
from archdb_hf.families.card_to_config import NotRepresentable
from archdb_hf.families.registry import model_type_of
from archdb_hf.testing import hf_parameter_count


def compare(card) -> dict:
    row = {"id": card.id, "family": card.family, "published": card.params_published}
    try:
        t0 = time.perf_counter()
        meta = full_size_params(card.architecture, card.params_published)
        row["meta_s"] = time.perf_counter() - t0
        row["archdb"] = meta.total
        row["analytic_equal"] = param_count(card.architecture).total == meta.total
        row["vs_published"] = meta.relative_difference
    except BuildError as exc:
        row["error"] = str(exc)
        return row
    model_type = model_type_of(card)
    row["hf_type"] = model_type
    if model_type is None:
        return row
    try:
        t0 = time.perf_counter()
        row["hf"] = hf_parameter_count(card.architecture, model_type)
        row["hf_s"] = time.perf_counter() - t0
    except NotRepresentable as exc:
        row["hf_note"] = f"not representable: {exc}"
    return row


def _fmt(n: int | None) -> str:
    return "" if n is None else f"{n:,}"


def print_hf_table(rows: list[dict]) -> None:
    print("\n## archdb vs transformers (full size, meta device)\n")
    print("| card | transformers type | archdb | transformers | difference | |")
    print("|---|---|---:|---:|---:|---|")
    for r in rows:
        if r.get("hf_type") is None or "archdb" not in r:
            continue
        if "hf" in r:
            diff = r["archdb"] - r["hf"]
            verdict = "equal" if diff == 0 else "DIFFERENT"
            print(
                f"| {r['id']} | {r['hf_type']} | {_fmt(r['archdb'])} | {_fmt(r['hf'])} | "
                f"{diff:+,} | {verdict} |"
            )
        else:
            print(f"| {r['id']} | {r['hf_type']} | {_fmt(r['archdb'])} | | | {r['hf_note']} |")


def print_published_table(rows: list[dict]) -> None:
    print("\n## exact vs published (every card)\n")
    print("| card | exact (archdb) | published | exact vs published | formula = meta |")
    print("|---|---:|---:|---:|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['id']} | | {_fmt(r['published'])} | | {r['error']} |")
            continue
        rel = r["vs_published"]
        rel_text = "" if rel is None else f"{rel:+.2%}" + (" **>5%**" if abs(rel) > 0.05 else "")
        print(
            f"| {r['id']} | {_fmt(r['archdb'])} | {_fmt(r['published'])} | {rel_text} | "
            f"{'yes' if r['analytic_equal'] else 'NO'} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--catalogue", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)  # transformers' init chatter
    cards = list(load_catalogue(args.catalogue))
    t0 = time.perf_counter()
    rows = [compare(c) for c in cards]
    total = time.perf_counter() - t0
    print_hf_table(rows)
    print_published_table(rows)
    compared = [r for r in rows if "hf" in r]
    equal = sum(r["archdb"] == r["hf"] for r in compared)
    meta_time = sum(r.get("meta_s", 0.0) for r in rows)
    print(
        f"\n{equal}/{len(compared)} cards equal to transformers; "
        f"{sum('archdb' in r for r in rows)}/{len(rows)} cards counted on the meta device in "
        f"{meta_time:.1f} s (whole benchmark {total:.1f} s)"
    )


if __name__ == "__main__":
    main()
