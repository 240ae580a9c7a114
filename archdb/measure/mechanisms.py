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
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    ValidationError,
    model_validator,
)

from archdb import files
from archdb.conventions import PASSES
from archdb.errors import ArchdbError, validation_message
from archdb.schema import Card

PROFILE_CLASSES = ("tensor contraction", "norm", "softmax", "element-wise", "other")
STATISTICAL = ("norm", "softmax")  # Ivanov et al.'s statistical normalizations

SCRIPT_VERSION = 1  # bump when what or how we measure changes: cached results go stale
MAX_BYTES = 2_000_000  # a cache file larger than this is not ours
FILENAME = "mechanisms.json"


class MeasurementError(ArchdbError, ValueError):
    """The measurements file cannot be read: names the file and what is wrong (one
    problem a line in ``problems``)."""

    def __init__(self, problems: str | list[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else problems
        super().__init__("\n".join(self.problems))


ModelT = TypeVar("ModelT", bound=BaseModel)


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
# The committed file is data a pull request can change: it is read as a regular file of
# bounded size (never a device, a pipe or a link to one) and validated by a typed schema
# (pydantic, strict: no coercion, finite numbers, bounded strings, lists and counts), so a
# malformed file is a MeasurementError naming the file and the field, never a crash.

MAX_COUNT = 10**9  # sizes, batches, layers and token counts of a measurement stay below
MAX_VALUES = 10_000  # timings kept per operator class, or per context
MAX_ENTRIES = 100  # profiles or decode timings in one file
MAX_NUMBER = 1e30  # no FLOP count, byte count or timing comes near this

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_TOKEN_COUNT = re.compile(r"[1-9][0-9]{0,8}")  # ASCII digits, no leading zero, bounded


def _text(value: object, limit: int = 200) -> str:
    """Plain text of at most ``limit`` characters: no control character (a label or note
    reaches the reports' Markdown and the terminal)."""
    if not isinstance(value, str) or len(value) > limit or _CONTROL.search(value):
        raise ValueError(f"must be text of at most {limit} characters, no control characters")
    return value


def _number(value: object, positive: bool = False) -> int | float:
    """A finite JSON number (an int stays an int: the reports print it as written), at
    least 0 (or above 0), below MAX_NUMBER."""
    if type(value) not in (int, float) or not math.isfinite(value):  # type: ignore[arg-type]
        raise ValueError(f"must be a finite number below {MAX_NUMBER:.0e}")
    low_ok = value > 0 if positive else value >= 0  # type: ignore[operator]
    if not low_ok or value >= MAX_NUMBER:  # type: ignore[operator]
        kind = "positive" if positive else "non-negative"
        raise ValueError(f"must be a {kind} number below {MAX_NUMBER:.0e}")
    return value  # type: ignore[return-value]


def _token_count(value: object) -> str:
    if not isinstance(value, str) or not _TOKEN_COUNT.fullmatch(value):
        raise ValueError("a context must be a token count: ASCII digits, no leading zero")
    return value


def _device_value(value: object) -> str | int | float:
    return _number(value) if type(value) in (int, float) else _text(value)


Text = Annotated[str, PlainValidator(_text)]
Note = Annotated[str, PlainValidator(partial(_text, limit=2_000))]
Key = Annotated[str, PlainValidator(partial(_text, limit=40))]
NonNegative = Annotated[int | float, PlainValidator(_number)]
Positive = Annotated[int | float, PlainValidator(partial(_number, positive=True))]
CardHash = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]
Count = Annotated[int, Field(ge=1, lt=MAX_COUNT)]
TokenCount = Annotated[str, PlainValidator(_token_count)]
DeviceValue = Annotated[str | int | float, PlainValidator(_device_value)]
OpClassName = Literal["tensor contraction", "norm", "softmax", "element-wise", "other"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class PassRecord(_Record):
    """One pass of a profile: FLOPs and runtimes (one per repeat) by operator class."""

    pass_name: Literal["forward", "forward+backward"] = Field(alias="pass")
    target: Text | None = None  # the profile's, repeated
    flops: dict[OpClassName, NonNegative]
    runtime_us: dict[
        OpClassName, Annotated[list[NonNegative], Field(min_length=1, max_length=MAX_VALUES)]
    ]
    wall_ms: Annotated[list[Positive], Field(min_length=1, max_length=MAX_VALUES)]

    @model_validator(mode="after")
    def _every_class_once_a_repeat(self) -> PassRecord:
        if set(self.flops) != set(PROFILE_CLASSES) or set(self.runtime_us) != set(PROFILE_CLASSES):
            raise ValueError(f"flops and runtime_us need every class: {', '.join(PROFILE_CLASSES)}")
        if len({len(times) for times in self.runtime_us.values()}) > 1:
            raise ValueError("runtime_us lists differ in length (one timing a repeat and class)")
        return self


class ProfileRecord(_Record):
    target: Text
    label: Text
    card_id: Text
    card_hash: CardHash
    note: Note
    layers: Count
    batch: Count
    seq_len: Count
    passes: list[PassRecord]

    @model_validator(mode="after")
    def _both_passes(self) -> ProfileRecord:
        if tuple(p.pass_name for p in self.passes) != PASSES:
            raise ValueError(f"passes must be {', '.join(PASSES)}, in that order")
        return self


class ContextRecord(_Record):
    bytes: Positive
    median_ms: Positive
    ms: Annotated[list[Positive], Field(min_length=1, max_length=MAX_VALUES)]


class DecodeRecord(_Record):
    target: Text
    label: Text
    card_id: Text
    card_hash: CardHash
    batch: Count
    contexts: Annotated[dict[TokenCount, ContextRecord], Field(min_length=1, max_length=100)]


class RunRecord(_Record):
    targets: Annotated[list[Text], Field(max_length=MAX_ENTRIES)]
    seconds: NonNegative


class _Version(BaseModel):
    """Only the script version: a file from another version is stale, not malformed."""

    model_config = ConfigDict(extra="ignore", strict=True)
    script_version: int


class MeasurementsFile(_Record):
    """data/measurements/mechanisms.json, as ``run_all`` writes it."""

    script_version: int  # SCRIPT_VERSION: another version's file is not validated at all
    device: Annotated[
        dict[Key, DeviceValue],
        Field(max_length=20),
    ]
    repeats: Count
    refresh_seconds: NonNegative | None = None
    runs: Annotated[list[RunRecord], Field(max_length=MAX_ENTRIES)] | None = None
    profiles: Annotated[list[ProfileRecord], Field(max_length=MAX_ENTRIES)]
    decode: Annotated[list[DecodeRecord], Field(max_length=MAX_ENTRIES)]

    @model_validator(mode="after")
    def _targets_once(self) -> MeasurementsFile:
        for section in (self.profiles, self.decode):
            targets = [entry.target for entry in section]
            if len(set(targets)) != len(targets):
                raise ValueError("a target is measured twice in one section")
        return self


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None without a file; MeasurementError when it is not a regular
    file (a device, a pipe, a link to either) or larger than any measurements file."""
    try:
        blob = files.read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MeasurementError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(blob) > MAX_BYTES:
        raise MeasurementError(f"{path}: more than {MAX_BYTES:,} bytes, more than it holds")
    return blob


def _validated(model: type[ModelT], blob: bytes, path: Path) -> ModelT:
    try:
        return model.model_validate_json(blob)
    except ValidationError as exc:
        raise MeasurementError(
            [f"{path}: {_problem(error)}" for error in exc.errors()[:5]]
        ) from None


def _problem(error: Any) -> str:
    """One pydantic error as a line for a person: where, then what."""
    if error["type"] == "json_invalid":
        return f"not valid JSON ({error['msg'].removeprefix('Invalid JSON: ')})"
    if error["type"] == "model_type" and not error["loc"]:
        return "expected a JSON object at the top level"
    return _where(error["loc"]) + validation_message(error)


def _where(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as ``profiles[0].passes[1].wall_ms[3]: ``, a key from the
    file shown escaped and cut short."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part == "[key]":  # the key itself is wrong, not its value
            text += " (the key)"
        else:
            text += f".{_shown(str(part))}"
    return f"{text.lstrip('.')}: " if text else "top level: "


def _shown(key: str) -> str:
    escaped = key.encode("unicode_escape").decode("ascii")
    return escaped if len(escaped) <= 40 else escaped[:37] + "..."


def read_file(path: Path) -> MeasurementsFile | None:
    """The validated file, or None without one or when another script version wrote it;
    MeasurementError naming the file and the field when it is not a measurements file."""
    blob = read_bytes(path)
    if blob is None:
        return None
    if _validated(_Version, blob, path).script_version != SCRIPT_VERSION:
        return None
    return _validated(MeasurementsFile, blob, path)


def read_raw(path: Path) -> dict[str, Any] | None:
    """The file as plain data (what ``merge`` adds to), or None without a usable one."""
    document = read_file(path)
    return None if document is None else document.model_dump(by_alias=True, exclude_none=True)


def load(path: Path, cards: dict[str, Card]) -> Measurements | None:
    """The usable entries of the cache at ``path`` for these cards; None without a file
    or when it was written by another script version. An entry whose card is missing or
    changed is listed as stale."""
    document = read_file(path)
    if document is None:
        return None
    out = Measurements(
        device=dict(document.device),
        repeats=document.repeats,
        refresh_seconds=None
        if document.refresh_seconds is None
        else float(document.refresh_seconds),
        runs=len(document.runs) if document.runs is not None else 1,
    )
    for section in ("profiles", "decode"):
        for entry in getattr(document, section):
            card = cards.get(entry.card_id)
            if card is None or card_hash(card) != entry.card_hash:
                out.stale.append(entry.target)
                continue
            getattr(out, section).append(entry.model_dump(by_alias=True))
    return out
