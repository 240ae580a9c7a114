"""The catalogue as the query commands read it: a plain-data snapshot of a validated file.

``list``, ``show``, ``compare`` and ``trends`` need the catalogue's table rows, a card's
record and field lines (``archdb.views``), the families' largest cards and the latest
release date: plain data, computed from the validated cards and kept in the cache
(``archdb.seal``) under the SHA-256 of the exact catalogue bytes and of archdb's source.
A query then reads JSON and imports neither pydantic, nor torch, nor the schema.
``archdb validate`` never reads a snapshot.

A snapshot is sealed records made as they are first needed, so that no command pays for
what it does not read and ``show`` on a large catalogue reads one card:

- the index: the ids in file order, each family's largest card, the latest release date;
- the rows: one table row per card (``archdb.table.card_row`` with its counts);
- one view per card (``archdb.views.card_views``), made when the card is first shown.

A record is checked on read for its shape and for the ids it claims. A record that is
missing or fails is made again from a full load of the catalogue, which costs speed and
changes no answer; if the file changed meanwhile, the whole snapshot is the new file's.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archdb import files
from archdb.columns import Row
from archdb.errors import UnknownCardError, close_names
from archdb.seal import (
    content_hash,
    prune,
    read_sealed,
    source_fingerprint,
    usable_dir,
    write_sealed,
)

if TYPE_CHECKING:
    from archdb.catalogue import Catalogue

FORMAT = "archdb-snapshot-2"
KEPT = 4  # snapshots kept in the cache: the newest catalogues (and code) a user queried
MAX_CATALOGUE_BYTES = 64 * 2**20  # archdb.catalogue.MAX_BYTES: a larger file is refused there
MAX_RECORD_BYTES = 1024 * 2**20  # a record is a few times its catalogue; larger is not ours
_RECORD = re.compile(r"snapshot-([0-9a-f]{64})-(?:index|rows|view-[0-9]+)\.json")


@dataclass
class Snapshot:
    """The catalogue at ``path`` as plain data; rows and views are read on first use."""

    path: Path
    key: str  # names the records: the format, archdb's source and the catalogue bytes
    ids: tuple[str, ...]
    largest: dict[str, str]  # family -> the id of its largest published model
    cutoff: str | None  # the latest release date (ISO): where the partial year ends
    _catalogue: Catalogue | None = field(default=None, repr=False)  # once loaded
    _rows: list[Row] | None = field(default=None, repr=False)
    _views: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def resolve(self, name: str) -> str:
        """A card id, or a family name meaning its largest published model (as
        ``Catalogue.resolve``); UnknownCardError with close spellings otherwise."""
        if name in self.ids:
            return name
        if name in self.largest:
            return self.largest[name]
        raise UnknownCardError(name, close_names(name, [*self.ids, *self.largest]))

    def rows(self) -> list[Row]:
        """Every card's table row, in file order."""
        if self._rows is None:
            blob = read_sealed(record_name(self.key, "rows"), MAX_RECORD_BYTES)
            self._rows = _checked_rows(blob, self.ids)
        if self._rows is None:
            from archdb.table import catalogue_rows

            catalogue = self._loaded()
            self._rows = catalogue_rows(catalogue.cards)
            self._store("rows", rows_record(self._rows))
        return self._rows

    def rows_of(self, card_ids: list[str]) -> list[Row]:
        by_id = {row["id"]: row for row in self.rows()}
        return [by_id[i] for i in card_ids]

    def views(self, card_ids: list[str]) -> list[dict[str, Any]]:
        """What ``show`` prints of each card: ``{"record": ..., "fields": [...]}``."""
        for card_id in card_ids:
            if card_id not in self._views and (found := self._read_view(card_id)):
                self._views[card_id] = found
        missing = [i for i in dict.fromkeys(card_ids) if i not in self._views]
        if missing:
            from archdb.views import card_views

            catalogue = self._loaded()
            made = card_views([catalogue.resolve(i) for i in missing if i in self.ids])
            for view in made:
                card_id = view["record"]["id"]
                self._views[card_id] = view
                self._store(f"view-{self.ids.index(card_id)}", json.dumps(view).encode())
        return [self._views[i] for i in card_ids]

    def view(self, card_id: str) -> dict[str, Any]:
        return self.views([card_id])[0]

    def _read_view(self, card_id: str) -> dict[str, Any] | None:
        if card_id not in self.ids:
            return None
        name = record_name(self.key, f"view-{self.ids.index(card_id)}")
        return _checked_view(read_sealed(name, MAX_RECORD_BYTES), card_id)

    def _loaded(self) -> Catalogue:
        """The validated catalogue, loaded once; if the file changed since the index was
        read, this snapshot becomes the new file's (nothing read before is kept)."""
        if self._catalogue is None:
            from archdb.catalogue import load_catalogue

            catalogue = load_catalogue(self.path)
            if snapshot_key(catalogue.sha256) != self.key:
                self.__dict__.update(snapshot_of(catalogue).__dict__)
            self._catalogue = catalogue
        return self._catalogue

    def _store(self, part: str, payload: bytes) -> None:
        if self._catalogue is not None and self._catalogue.sha256:
            write_sealed(record_name(self.key, part), payload)


def record_name(key: str, part: str) -> str:
    return f"snapshot-{key}-{part}.json"  # as _RECORD matches


def snapshot_key(catalogue_sha256: str) -> str:
    text = f"{FORMAT}:{source_fingerprint()}:{catalogue_sha256}"
    return hashlib.sha256(text.encode()).hexdigest()


def open_snapshot(path: Path) -> Snapshot:
    """The snapshot of the catalogue file at ``path``: from the cache, or made from a full
    load (and stored). A catalogue that does not validate raises CatalogueError."""
    found = _read_index(path)
    if found is not None:
        return found
    from archdb.catalogue import load_catalogue

    return snapshot_of(load_catalogue(path))


def _read_index(path: Path) -> Snapshot | None:
    if usable_dir() is None:
        return None
    try:
        raw = files.read_bounded(path, MAX_CATALOGUE_BYTES)
    except OSError:
        return None  # the full load says why
    if len(raw) > MAX_CATALOGUE_BYTES:
        return None
    key = snapshot_key(content_hash(raw))
    data = _parsed(read_sealed(record_name(key, "index"), MAX_RECORD_BYTES))
    return None if data is None else _checked_index(data, path, key)


def _parsed(blob: bytes | None) -> Any:
    """A record's JSON, or None when it is missing or not JSON."""
    if blob is None:
        return None
    try:
        return json.loads(blob)
    except (ValueError, RecursionError):  # a 5,000-digit number is a ValueError too
        return None


def _checked_index(data: Any, path: Path, key: str) -> Snapshot | None:
    """The index record as a Snapshot, or None unless every part has its expected shape."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
        return None
    ids, largest, cutoff = data.get("ids"), data.get("largest"), data.get("cutoff")
    if not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
        return None
    if not (isinstance(largest, dict) and set(largest.values()) <= set(ids)):
        return None
    if not (cutoff is None or isinstance(cutoff, str)):
        return None
    return Snapshot(path, key, tuple(ids), largest, cutoff)


def _checked_rows(blob: bytes | None, ids: tuple[str, ...]) -> list[Row] | None:
    """The rows record (the column names, then each card's values in that order: a third
    of the bytes of a list of dicts, parsed four times faster), if it holds one row per id,
    in order. The seal vouches for the bytes and JSON for the values' types."""
    data = _parsed(blob)
    if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], list)):
        return None
    columns, values = data
    if not isinstance(values, list) or len(values) != len(ids) or "id" not in columns:
        return None
    at = columns.index("id")
    if not all(isinstance(v, list) and len(v) == len(columns) for v in values):
        return None
    if any(v[at] != card_id for v, card_id in zip(values, ids, strict=True)):
        return None
    return [dict(zip(columns, v, strict=True)) for v in values]


def rows_record(rows: list[Row]) -> bytes:
    """The bytes of the rows record (``_checked_rows`` reads them)."""
    columns = list(rows[0]) if rows else ["id"]
    values = [[row[c] for c in columns] for row in rows]
    return json.dumps([columns, values], ensure_ascii=False).encode()


def _checked_view(blob: bytes | None, card_id: str) -> dict[str, Any] | None:
    """A card's view record, if it is that card's."""
    view = _parsed(blob)
    if not isinstance(view, dict) or not isinstance(view.get("fields"), list):
        return None
    record = view.get("record")
    if not isinstance(record, dict) or record.get("id") != card_id:
        return None
    return view


def snapshot_of(catalogue: Catalogue) -> Snapshot:
    """The snapshot of a catalogue loaded from its file, its index stored in the cache
    when there is one (a cache that cannot be written only costs speed)."""
    cards = catalogue.cards
    families = dict.fromkeys(c.family for c in cards)
    largest = {f: catalogue.resolve(f).id for f in families}
    cutoff = max((str(c.release_date) for c in cards), default=None)
    key = snapshot_key(catalogue.sha256)
    ids = tuple(c.id for c in cards)
    snapshot = Snapshot(catalogue.path, key, ids, largest, cutoff, catalogue)
    if catalogue.sha256 and usable_dir() is not None:
        index = {"format": FORMAT, "key": key, "ids": list(ids), "largest": largest}
        write_sealed(record_name(key, "index"), json.dumps(index | {"cutoff": cutoff}).encode())
        prune(_RECORD, KEPT)
    return snapshot
