"""The mechanisms measurements: run them (slow), cache them as plain JSON, read them back.

``archdb measure mechanisms`` runs the runtime profiles (``profile``) and the decode step
timings (``decode``) and writes ``data/measurements/mechanisms.json`` next to the
catalogue. ``archdb report`` only reads that file, so reports stay fast and byte-identical.

Each entry is keyed by its card's architecture hash and the script version: an entry is
used only while both match (a change to an unrelated card keeps it; a change to the
profiled card, or to how we measure, makes it stale and the report says so). Reading is
defensive: the file is bounded in size, parsed as JSON only, and checked field by field.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archdb import files
from archdb.errors import ArchdbError
from archdb.schema import Card

PROFILE_CLASSES = ("tensor contraction", "norm", "softmax", "element-wise", "other")
STATISTICAL = ("norm", "softmax")  # Ivanov et al.'s statistical normalizations

SCRIPT_VERSION = 1  # bump when what or how we measure changes: cached results go stale
MAX_BYTES = 2_000_000  # a cache file larger than this is not ours
FILENAME = "mechanisms.json"


class MeasurementError(ArchdbError, ValueError):
    """The cache file cannot be read: names the file and what is wrong."""


def cache_path(catalogue_path: Path) -> Path:
    """Where a catalogue's measurements live: data/measurements/ beside data/models.yaml."""
    return catalogue_path.parent / "measurements" / FILENAME


def card_hash(card: Card) -> str:
    """A short hash of everything in the card that shapes a built model. Null fields are
    left out, so a new optional schema field (null on every old card) keeps the entries.
    So are the fields that change outputs but not counts (``FUNCTION_DEFAULTS``): they
    change the values a build computes, not the work measured (a constant inside an op,
    or one element-wise op on a weight vector or on the embeddings), so recording them
    on a profiled card keeps its entries; and the MTP modules (``mtp``), which the built
    model leaves out."""
    exclude = _function_fields() | {"mtp": True}
    text = card.architecture.model_dump_json(exclude_none=True, exclude=exclude)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _function_fields() -> dict[str, Any]:
    """``FUNCTION_DEFAULTS``' dotted paths as pydantic's nested ``exclude`` argument."""
    from archdb.plan.layout import FUNCTION_DEFAULTS

    nested: dict[str, Any] = {}
    for path in FUNCTION_DEFAULTS:
        *parents, leaf = path.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = True
    return nested


@dataclass(frozen=True)
class Measurements:
    """Usable cached results; stale or missing entries are listed, not used."""

    device: dict[str, Any]
    repeats: int
    refresh_seconds: float | None  # all runs that measured the cached entries, summed
    runs: int = 1
    profiles: list[dict[str, Any]] = field(default_factory=list)
    decode: list[dict[str, Any]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    def profile(self, key: str) -> dict[str, Any] | None:
        return next((p for p in self.profiles if p["target"] == key), None)


# --- summaries (plain numbers from the cache) ---------------------------------------------


@dataclass(frozen=True)
class ShareRow:
    label: str
    pass_name: str
    flops: dict[str, float]  # class -> share; "statistical" = norm + softmax
    runtime: dict[str, tuple[float, float, float]]  # class -> (median, min, max)
    wall_ms: float


def share_rows(measured: Measurements) -> list[ShareRow]:
    rows = []
    for entry in measured.profiles:
        for p in entry["passes"]:
            rows.append(share_row(entry["label"], p))
    return rows


def share_row(label: str, p: dict[str, Any]) -> ShareRow:
    total = sum(p["flops"][c] for c in PROFILE_CLASSES) or 1
    flops = {c: p["flops"][c] / total for c in PROFILE_CLASSES}
    flops["statistical"] = sum(flops[c] for c in STATISTICAL)
    runs = len(p["runtime_us"][PROFILE_CLASSES[0]])
    per_run = []
    for i in range(runs):
        t = sum(p["runtime_us"][c][i] for c in PROFILE_CLASSES) or 1
        shares = {c: p["runtime_us"][c][i] / t for c in PROFILE_CLASSES}
        shares["statistical"] = sum(shares[c] for c in STATISTICAL)
        per_run.append(shares)
    runtime = {
        c: (
            statistics.median(r[c] for r in per_run),
            min(r[c] for r in per_run),
            max(r[c] for r in per_run),
        )
        for c in per_run[0]
    }
    return ShareRow(label, p["pass"], flops, runtime, statistics.median(p["wall_ms"]))


def device_line(measured: Measurements) -> str:
    d = measured.device
    kind = d.get("gpu") or f"CPU {d.get('cpu', 'unknown')}"
    load = ""
    if "load_average_start" in d and "load_average_end" in d:
        load = f", load average {d['load_average_start']} → {d['load_average_end']} (1 min)"
    return (
        f"{d.get('device', '?')} ({kind}, {d.get('threads', '?')} threads of "
        f"{d.get('cores', '?')} cores{load}), torch {d.get('torch', '?')}, float32"
    )


# --- running ---------------------------------------------------------------------------------


def run_all(
    cards: dict[str, Card],
    device: str = "cpu",
    repeats: int = 5,
    only: set[str] | None = None,
    progress=print,
) -> dict[str, Any]:
    """Run every profile and decode timing; return the cache document."""
    from archdb.measure import decode, profile

    start = time.perf_counter()
    doc: dict[str, Any] = {
        "script_version": SCRIPT_VERSION,
        "device": profile.device_info(device) | {"load_average_start": _load()},
        "repeats": repeats,
        "profiles": [],
        "decode": [],
    }
    for target in profile.TARGETS:
        if only and target.key not in only:
            continue
        card = _card(cards, target.card_id)
        progress(f"profiling {target.label} ({target.card_id})")
        passes = profile.profile_target(card, target, repeats, device)
        doc["profiles"].append(
            {
                "target": target.key,
                "label": target.label,
                "card_id": card.id,
                "card_hash": card_hash(card),
                "layers": target.layers,
                "batch": target.batch,
                "seq_len": target.seq_len,
                "note": target.note,
                "passes": [p.to_dict() for p in passes],
            }
        )
    if device == "cpu":  # decode timings are a CPU memory-bandwidth experiment
        for target in decode.DECODE_TARGETS:
            if only and target.key not in only:
                continue
            card = _card(cards, target.card_id)
            progress(f"timing decode steps of {target.label}")
            result = decode.time_decode_steps(card, target, repeats=max(repeats, 7))
            result |= {
                "label": target.label,
                "card_id": card.id,
                "card_hash": card_hash(card),
                "batch": decode.DECODE_BATCH,
            }
            doc["decode"].append(result)
    seconds = round(time.perf_counter() - start, 1)
    doc["device"]["load_average_end"] = _load()
    doc["refresh_seconds"] = seconds
    targets = sorted({e["target"] for e in doc["profiles"] + doc["decode"]})
    doc["runs"] = [{"targets": targets, "seconds": seconds}]
    return doc


def _load() -> float:
    """The machine's 1-minute load average: timings on a busy machine are noisier."""
    return round(os.getloadavg()[0], 1)


def _card(cards: dict[str, Card], card_id: str) -> Card:
    if card_id not in cards:
        raise MeasurementError(f"the catalogue has no card {card_id!r} to measure")
    return cards[card_id]


def merge(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """New entries replace old ones with the same target; others are kept (``--only``)."""
    if not old or old.get("script_version") != new["script_version"]:
        return new
    out = dict(new)
    for section in ("profiles", "decode"):
        fresh = {e["target"] for e in new[section]}
        out[section] = [e for e in old.get(section, []) if e["target"] not in fresh]
        out[section] += new[section]
        out[section].sort(key=lambda e: e["target"])
    # the runs that measured what is kept: a refresh in several --only runs adds up
    replaced = set(new["runs"][0]["targets"])
    out["runs"] = [r for r in _runs(old) if not set(r["targets"]) <= replaced] + new["runs"]
    out["refresh_seconds"] = round(sum(r["seconds"] for r in out["runs"]), 1)
    return out


def _runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if isinstance(doc.get("runs"), list):
        return doc["runs"]
    targets = sorted({e["target"] for e in doc.get("profiles", []) + doc.get("decode", [])})
    return [{"targets": targets, "seconds": doc.get("refresh_seconds", 0.0)}]


def write(path: Path, doc: dict[str, Any]) -> None:
    """Atomically replace the cache file (``files.write_atomic``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n"
    files.write_atomic(path, text.encode("utf-8"), durable=True)


# --- reading ---------------------------------------------------------------------------------


def read_raw(path: Path) -> dict[str, Any] | None:
    """The cache document, or None without a file; MeasurementError when it is not ours."""
    try:
        blob = files.read_regular(path, MAX_BYTES)  # no device, pipe or link to one
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MeasurementError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(blob) > MAX_BYTES:
        raise MeasurementError(f"{path}: more than {MAX_BYTES:,} bytes, more than it holds")
    try:
        doc = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise MeasurementError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise MeasurementError(f"{path}: expected a JSON object at the top level")
    return doc


def load(path: Path, cards: dict[str, Card]) -> Measurements | None:
    """The usable entries of the cache at ``path`` for these cards; None without a file
    or when it was written by another script version."""
    doc = read_raw(path)
    if doc is None or doc.get("script_version") != SCRIPT_VERSION:
        return None
    device = _check(doc, "device", dict, path)
    device = {str(k)[:40]: _plain(v) for k, v in list(device.items())[:20]}
    repeats = _check(doc, "repeats", int, path)
    refresh = doc.get("refresh_seconds")
    refresh = float(refresh) if isinstance(refresh, (int, float)) else None
    runs = doc.get("runs")
    n_runs = len(runs) if isinstance(runs, list) else 1
    out = Measurements(device=device, repeats=repeats, refresh_seconds=refresh, runs=n_runs)
    for section, checker in (("profiles", _check_profile), ("decode", _check_decode)):
        entries = _check(doc, section, list, path)
        for i, entry in enumerate(entries):
            where = f"{path}: {section}[{i}]"
            if not isinstance(entry, dict):
                raise MeasurementError(f"{where}: expected an object")
            checker(entry, where)
            card = cards.get(entry["card_id"])
            if card is None or card_hash(card) != entry["card_hash"]:
                out.stale.append(entry["target"])
                continue
            getattr(out, section).append(entry)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return str(value)[:200]


def _check(doc: dict[str, Any], key: str, kind: type, where: Any) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise MeasurementError(f"{where}: field {key!r} must be a {kind.__name__}")
    return value


MAX_COUNT = 10**9  # sizes, batches, layers and token counts of a measurement stay below
MAX_VALUES = 10_000  # timings kept per operator class
_TOKEN_COUNT = re.compile(r"[1-9][0-9]{0,8}")  # ASCII digits, no leading zero, bounded


def _numbers(value: Any, where: str, *, positive: bool = False) -> None:
    """A non-empty, bounded list of finite numbers, non-negative (or positive)."""
    if not isinstance(value, list) or not value or len(value) > MAX_VALUES:
        raise MeasurementError(f"{where}: expected a non-empty list of numbers")
    for v in value:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok or not math.isfinite(v) or not 0 <= v < 1e30 or (positive and v == 0):
            kind = "a positive" if positive else "a non-negative"
            raise MeasurementError(f"{where}: {str(v)[:40]!r} is not {kind} number")


def _count(entry: dict[str, Any], key: str, where: str) -> int:
    value = _check(entry, key, int, where)
    if not 0 < value < MAX_COUNT:
        raise MeasurementError(f"{where}: field {key!r} must be a count from 1 to {MAX_COUNT:,}")
    return value


def _check_profile(entry: dict[str, Any], where: str) -> None:
    from archdb.measure.profile import PASSES, OpClass

    for key in ("target", "label", "card_id", "card_hash", "note"):
        _check(entry, key, str, where)
    for key in ("layers", "batch", "seq_len"):
        _count(entry, key, where)
    passes = _check(entry, "passes", list, where)
    names = [p.get("pass") if isinstance(p, dict) else None for p in passes]
    if names != list(PASSES):
        raise MeasurementError(f"{where}: passes must be {', '.join(PASSES)}")
    for p in passes:
        flops, runtime = _check(p, "flops", dict, where), _check(p, "runtime_us", dict, where)
        for cls in OpClass:
            _numbers([flops.get(cls.value)], f"{where}: flops {cls.value}")
            _numbers(runtime.get(cls.value), f"{where}: runtime_us {cls.value}")
        _numbers(p.get("wall_ms"), f"{where}: wall_ms", positive=True)
        lengths = {len(runtime[cls.value]) for cls in OpClass}
        if len(lengths) > 1:  # one timing per repeat and class: lists of one length
            raise MeasurementError(f"{where}: runtime_us lists differ in length")


def _check_decode(entry: dict[str, Any], where: str) -> None:
    for key in ("target", "label", "card_id", "card_hash"):
        _check(entry, key, str, where)
    _count(entry, "batch", where)
    contexts = _check(entry, "contexts", dict, where)
    for context, values in contexts.items():
        if not _TOKEN_COUNT.fullmatch(context) or not isinstance(values, dict):
            raise MeasurementError(f"{where}: context {context[:20]!r} is not a token count")
        _numbers(values.get("ms"), f"{where}: {context} ms", positive=True)
        _numbers(
            [values.get("median_ms"), values.get("bytes")], f"{where}: {context}", positive=True
        )
