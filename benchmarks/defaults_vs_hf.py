"""Benchmark: every family import-hf supports, on transformers' own default config.

For each model type, transformers' default config (completed where it leaves a size unset:
``DEFAULT_COMPLETIONS``) is saved as a config.json dict, imported with import-hf, and the
card built at full size on the meta device; its parameter count is compared with
transformers' model of the same config (trainable parameters; frozen statistics are
buffers in both; entries transformers allocates but never reads, LongCat-Flash's zero
experts' rows, left out as the default-config test leaves them). The same default is also
imported as save_pretrained writes it (``to_diff_dict``: keys equal to the defaults left
out). Prints one row per model type: the three counts (full dict, diff-written dict,
transformers), whether they are equal, whether the family is logit-exact
(archdb.fidelity), and the time the import and build took.

Run: .venv/bin/python benchmarks/defaults_vs_hf.py [--markdown] [--only TYPE ...]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

from archdb.builder.model import build_model, count_parameters
from archdb.writer import validate_card
from archdb_hf.families.registry import LOGIT_EXACT, SPECS
from archdb_hf.importer import Identity, import_config, supported_model_types
from archdb_hf.testing import DEFAULT_COMPLETIONS, card_parameters

IDENTITY = Identity("default-1b", "Default 1B", "default", "Benchmark Lab", "2025-01-01")


def measure(model_type: str) -> dict:
    import torch
    import transformers

    spec = SPECS[model_type]
    released = spec.released_as or model_type  # Qwen3-VL's decoder: its release's config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = transformers.AutoConfig.for_model(
            released, **DEFAULT_COMPLETIONS.get(model_type, {})
        )
        with torch.device("meta"):  # the family's own model class (BERT's masked-LM model)
            model = getattr(transformers, spec.model_class)(config)
    # what a card counts: not a release's vision tower, frozen statistics or expert rows
    # no forward pass reads (as the default-config test counts)
    theirs = card_parameters(model, spec)
    started = time.perf_counter()
    ours = _count({**config.to_dict(), "model_type": released})
    seconds = time.perf_counter() - started
    # what save_pretrained writes (use_diff=True): keys equal to the defaults left out
    diff = _count({**config.to_diff_dict(), "model_type": released})
    return {
        "model_type": model_type,
        "ours": ours,
        "diff": diff,
        "theirs": theirs,
        "seconds": seconds,
    }


def _count(config: dict) -> int:
    result = import_config(
        config,
        source_url="https://huggingface.co/org/model/blob/main/config.json",
        identity=IDENTITY,
    )
    card = validate_card(result.card)
    return count_parameters(build_model(card.architecture, device="meta"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--only", nargs="*", help="model types to run (default: all)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    rows = [measure(t) for t in (args.only or supported_model_types())]
    if args.markdown:
        print(
            "| model_type | archdb (full) | archdb (diff) | transformers | equal | logit-exact "
            "| s |"
        )
        print("|---|---:|---:|---:|---|---|---:|")
    for r in rows:
        equal = "yes" if r["ours"] == r["theirs"] == r["diff"] else "NO"
        error = LOGIT_EXACT.get(r["model_type"])
        exact = "no" if error is None else f"yes ({error:.1e})"
        cells = (
            r["model_type"],
            f"{r['ours']:,}",
            f"{r['diff']:,}",
            f"{r['theirs']:,}",
            equal,
            exact,
        )
        if args.markdown:
            print(f"| {' | '.join(cells)} | {r['seconds']:.2f} |")
        else:
            print(
                f"{cells[0]:<20} {cells[1]:>18} {cells[2]:>18} {cells[3]:>18} {equal:<4} "
                f"{exact:<16} {r['seconds']:.2f} s"
            )
    equal = sum(r["ours"] == r["theirs"] == r["diff"] for r in rows)
    median = sorted(r["seconds"] for r in rows)[len(rows) // 2]
    print(f"\n{equal} of {len(rows)} model types equal; median import and build {median:.2f} s")


if __name__ == "__main__":
    main()
