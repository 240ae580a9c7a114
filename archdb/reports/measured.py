"""What claims 18 to 20 read beyond the catalogue, gathered for the claims check.

- Claims 19 and 20 read the experiments of ``archdb.measure.experiments`` (torch, a few
  seconds). Their results are pure functions of the cards they run on and of the code that
  builds and measures them, so they are cached as plain JSON (``archdb.seal.cache_dir()``
  / ``experiments``), keyed by the content hash of those cards and a fingerprint of that
  code: ``archdb report``, ``archdb report --check`` and ``archdb site`` run them once per
  catalogue. Nothing in the cache is trusted: an entry must carry archdb's seal
  (``archdb.seal.read_sealed``), is parsed as JSON (never pickle), validated field by
  field with bounds, and must repeat its key; anything else is ignored and the
  experiments run again. A cache that cannot be written only costs time.
- Claim 18 reads the cached runtime profile (``archdb.measure.mechanisms``), never re-run.

The measurement layer knows nothing of claims: choosing the cards, caching and the
``ClaimMeasurements`` record live here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache as memoize
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from archdb import files, seal
from archdb.measure import mechanisms as mech
from archdb.measure.mechanisms import Measurements, ShareRow
from archdb.schema import AttentionVariant, Card, NormPosition

if TYPE_CHECKING:  # torch: imported only when an experiment result is made
    from archdb.measure.experiments import FastWeightResult, NormPlacementResult

FORMAT = "archdb-experiments-1"
MAX_ENTRY_BYTES = 1_000_000  # an entry is a few hundred bytes; larger is not ours
_PACKAGE = Path(__file__).resolve().parent.parent
# The code whose output is cached: a change to any of it makes every entry stale.
_CODE = ("schema.py", "measure/experiments.py", "builder", "plan")


RUNTIME_TARGET = "bert-large-layer"  # Ivanov et al.'s setting: one BERT-large layer, training


@dataclass(frozen=True)
class ProfileEvidence:
    """What claim 18 reads: the BERT-large-like layer's training pass, and every row."""

    card_id: str
    row: ShareRow
    setup: str
    device: str
    rows: tuple[ShareRow, ...]


def runtime_evidence(measured: Measurements | None) -> ProfileEvidence | None:
    """Claim 18's evidence from the cached runtime profiles, or None without one."""
    if measured is None:
        return None
    entry = measured.profile(RUNTIME_TARGET)
    if entry is None:
        return None
    setup = (
        f"{entry['label']} ({entry['note']}), batch {entry['batch']} x {entry['seq_len']} "
        "tokens, forward+backward"
    )
    return ProfileEvidence(
        entry["card_id"],
        mech.share_row(entry["label"], entry["passes"][-1]),
        setup,
        mech.device_line(measured),
        tuple(mech.share_rows(measured)),
    )


@dataclass(frozen=True)
class ClaimMeasurements:
    """The experiments' results for the claims check; None where no card allows one."""

    norm_placement: NormPlacementResult | None = None
    fast_weights: FastWeightResult | None = None
    linear_kernel_cards: tuple[str, ...] = ()  # linear-attention cards whose toy runs the kernel
    # claim 18: the cached runtime profile (archdb.measure.mechanisms), read, never re-run
    runtime_profile: ProfileEvidence | None = None


@dataclass(frozen=True)
class ExperimentInputs:
    """The cards the experiments run on: the first Pre-LN research card for norm
    placement, every linear-attention card for the fast weight identity."""

    pre_ln: Card | None
    linear: tuple[Card, ...]

    @classmethod
    def of(cls, cards: Iterable[Card]) -> ExperimentInputs:
        cards = list(cards)
        pre_ln = [
            c
            for c in cards
            if c.research_variant and c.architecture.norm.position is NormPosition.PRE
        ]
        linear = tuple(
            c for c in cards if c.architecture.attention.variant is AttentionVariant.LINEAR
        )
        return cls(pre_ln[0] if pre_ln else None, linear)

    def content_hash(self) -> str:
        """SHA-256 of the cards the experiments read (the rest of the catalogue is not)."""
        digest = hashlib.sha256(FORMAT.encode())
        for card in (self.pre_ln, *self.linear):
            digest.update(b"\0" + (card.model_dump_json().encode() if card else b"null"))
        return digest.hexdigest()


def measure_claims(cards: Iterable[Card]) -> ClaimMeasurements:
    """The experiments' results for these cards: from the cache when an entry matches,
    else run (and stored)."""
    inputs = ExperimentInputs.of(cards)
    if inputs.pre_ln is None and not inputs.linear:
        return ClaimMeasurements()  # nothing to run: no torch either
    key = entry_key(inputs)
    cached = read(key)
    if cached is not None:
        return cached
    measured = run(inputs)
    write(key, measured)
    return measured


def run(inputs: ExperimentInputs) -> ClaimMeasurements:
    from archdb.measure import experiments as ex

    return ClaimMeasurements(
        norm_placement=ex.norm_placement(inputs.pre_ln) if inputs.pre_ln else None,
        fast_weights=ex.fast_weight_equivalence() if inputs.linear else None,
        linear_kernel_cards=tuple(c.id for c in inputs.linear if ex.uses_linear_kernel(c)),
    )


# --- the cache -------------------------------------------------------------------------


@memoize
def code_fingerprint() -> str:
    """What produced the results: the cache format, the code that builds and measures the
    models, and torch's version."""
    digest = hashlib.sha256(FORMAT.encode())
    for name in _CODE:
        path = _PACKAGE / name
        for source in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(source.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            digest.update(source.read_bytes())
    digest.update(metadata.version("torch").encode())
    return digest.hexdigest()


def entry_key(inputs: ExperimentInputs) -> str:
    return hashlib.sha256(f"{code_fingerprint()}:{inputs.content_hash()}".encode()).hexdigest()


def entry_name(key: str) -> str:
    return f"experiments/{key}.json"


def entry_path(key: str) -> Path:
    return seal.cache_dir() / entry_name(key)


def _store() -> Path | None:
    """The experiments folder, when the cache folder and it are the user's own."""
    base = seal.usable_dir()
    return None if base is None else files.private_dir(base / "experiments")


MAX_TEXT = 200  # characters of a card id, a shape or dimensions line
MAX_ITEMS = 10_000  # layers of a gradient profile, linear-attention cards
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT, pattern=r"^[^\x00-\x1f\x7f-\x9f]*$")]


class _Strict(BaseModel):
    """A stored record: no unknown field, no coercion, finite numbers, bounded sizes."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class _Profile(_Strict):
    position: NormPosition
    init: Text
    layer_norms: Annotated[tuple[float, ...], Field(min_length=1, max_length=MAX_ITEMS)]


class _Placement(_Strict):
    card_id: Text
    dims: Text
    profiles: Annotated[tuple[_Profile, ...], Field(max_length=16)]


class _FastWeights(_Strict):
    shape: Text
    kernel_vs_programmer: float
    attention_vs_programmer: float


class _Entry(_Strict):
    format: Literal["archdb-experiments-1"]
    key: Text
    norm_placement: _Placement | None
    fast_weights: _FastWeights | None
    linear_kernel_cards: Annotated[tuple[Text, ...], Field(max_length=MAX_ITEMS)]


def read(key: str) -> ClaimMeasurements | None:
    """The cached results under ``key``, or None (missing, not sealed by archdb,
    malformed, out of bounds, or not this key's)."""
    if _store() is None:
        return None
    blob = seal.read_sealed(entry_name(key), MAX_ENTRY_BYTES)
    if blob is None:
        return None
    try:
        entry = _Entry.model_validate_json(blob)
        if entry.key != key:
            return None  # copied from another entry
        return _from_entry(entry)
    except (ValueError, RecursionError):  # ValidationError is a ValueError
        return None


def _from_entry(entry: _Entry) -> ClaimMeasurements:
    from archdb.measure import experiments as ex

    placement = None
    if entry.norm_placement is not None:
        p = entry.norm_placement
        profiles = tuple(
            ex.GradientProfile(q.position, ex.Init(q.init), q.layer_norms) for q in p.profiles
        )
        if any(not q.layer_norms or min(q.layer_norms) <= 0 for q in profiles):
            raise ValueError("a gradient norm profile must be positive")  # not ours: rerun
        placement = ex.NormPlacementResult(p.card_id, p.dims, profiles)
    fast = None
    if entry.fast_weights is not None:
        f = entry.fast_weights
        fast = ex.FastWeightResult(f.shape, f.kernel_vs_programmer, f.attention_vs_programmer)
    return ClaimMeasurements(placement, fast, entry.linear_kernel_cards)


def _to_entry(key: str, measured: ClaimMeasurements) -> _Entry:
    p, f = measured.norm_placement, measured.fast_weights
    return _Entry(
        format=FORMAT,
        key=key,
        norm_placement=None
        if p is None
        else _Placement(
            card_id=p.card_id,
            dims=p.dims,
            profiles=tuple(
                _Profile(position=q.position, init=q.init.value, layer_norms=q.layer_norms)
                for q in p.profiles
            ),
        ),
        fast_weights=None
        if f is None
        else _FastWeights(
            shape=f.shape,
            kernel_vs_programmer=f.kernel_vs_programmer,
            attention_vs_programmer=f.attention_vs_programmer,
        ),
        linear_kernel_cards=measured.linear_kernel_cards,
    )


def write(key: str, measured: ClaimMeasurements) -> None:
    """Store results atomically, sealed; failure to write only costs time."""
    try:
        text = json.dumps(_to_entry(key, measured).model_dump(mode="json"), allow_nan=False)
    except ValueError:  # a non-finite result is not cached: the next run measures again
        return
    if _store() is None:
        return
    seal.write_sealed(entry_name(key), text.encode())
