"""Benchmark: the maximum relative logit error of every logit-exact family, measured as
tests/test_fidelity.py measures it (its tiny checkpoints and its error), next to the
figure archdb_hf.families.registry.LOGIT_EXACT records.

For each model_type: the tiny transformers checkpoint (float32, eager attention) saved,
its config imported, the card built at full size with those weights, one batch of two
sequences through both; the error is max |archdb - transformers| / max |transformers|.

Run: .venv/bin/python benchmarks/logit_errors.py [MODEL_TYPE ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

import torch

from archdb.fidelity import LOGIT_TOLERANCE
from archdb_hf.families.registry import LOGIT_EXACT
from tests import test_fidelity as tf


def measure(model_type: str) -> float:
    """One family's error, as test_fidelity's logit tests compute it."""
    variants = [v for v, (mt, _, _) in tf.ENCODER_DECODER_TINY.items() if mt == model_type]
    if variants:  # each layout of the family (T5 1.0 and 1.1): the largest error
        errors = []
        for variant in variants:
            with tempfile.TemporaryDirectory() as tmp:
                errors.append(tf.encoder_decoder_error(variant, Path(tmp)))
        return max(errors)
    with tempfile.TemporaryDirectory() as tmp:
        import archdb

        if model_type in tf.RELEASED_TINY:  # a decoder inside its multimodal release
            reference = tf.tiny_release(model_type, Path(tmp))
        else:
            reference = tf._tiny(model_type, Path(tmp))
        model = archdb.build(tf._card(Path(tmp)), "full", weights=Path(tmp)).eval()
        seq = tf.SEQ_FOR.get(model_type, tf.SEQ)
        low = tf.FIRST_TOKEN.get(model_type, 0)  # RoBERTa's padding id keeps its own row
        draw = torch.Generator().manual_seed(1)
        tokens = torch.randint(low, 128, (tf.BATCH, seq), generator=draw)
        with torch.no_grad():
            return tf.relative_error(model(tokens), reference(tokens).logits)


def main(argv: list[str]) -> int:
    chosen = argv or list(LOGIT_EXACT)
    print(f"{'model_type':<20} {'measured':>10} {'recorded':>10}")
    worst = 0.0
    for model_type in chosen:
        error = measure(model_type)
        worst = max(worst, error)
        print(f"{model_type:<20} {error:>10.2g} {LOGIT_EXACT.get(model_type, float('nan')):>10.2g}")
    print(f"largest: {worst:.2g} (tolerance {LOGIT_TOLERANCE:g})")
    return 0 if worst < LOGIT_TOLERANCE else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
