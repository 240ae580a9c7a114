"""Writers racing, interrupted or pointed at odd files: never a lost card, never debris.

Concurrency is tested with real processes (each its own interpreter state and file
descriptors), as two `archdb new` runs would be.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archdb.catalogue import load_catalogue, parse_cards
from archdb.writer import WriteError, insert_card, lock_path
from tests.conftest import card_text

HEADER = "# header\n\n"


def card(card_id: str):
    cards, problems = parse_cards(card_text(card_id))
    assert not problems
    return cards[0]


def catalogue(tmp_path: Path, *ids: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(HEADER + "\n".join(card_text(i) for i in ids), encoding="utf-8")
    return path


def debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _insert_after(barrier, path: str, card_id: str, queue) -> None:
    """Child process: wait for every writer, then add one card; report the outcome."""
    os.environ["ARCHDB_NO_CACHE"] = "1"
    barrier.wait()
    try:
        insert_card(path, card(card_id))
        queue.put((card_id, "added"))
    except WriteError as exc:
        queue.put((card_id, f"refused: {exc}"))
    except BaseException as exc:
        queue.put((card_id, f"crashed: {exc!r}"))


def race(path: Path, ids: list[str]) -> dict[str, str]:
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(len(ids)), ctx.Queue()
    workers = [ctx.Process(target=_insert_after, args=(barrier, str(path), i, queue)) for i in ids]
    for worker in workers:
        worker.start()
    results = dict(queue.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    return results


def test_concurrent_writers_all_succeed_and_no_card_is_lost(tmp_path):
    path = catalogue(tmp_path, "toy-1m")
    before = path.read_text(encoding="utf-8")
    new_ids = ["toy-1a", "toy-1c", "toy-1p", "toy-1z", "toy-2a", "toy-0a"]
    results = race(path, new_ids)
    assert set(results.values()) == {"added"}, results
    ids = load_catalogue(path).ids()
    assert ids == sorted([*new_ids, "toy-1m"])  # six added, none lost, still sorted
    text = path.read_text(encoding="utf-8")
    assert text.startswith(HEADER) and card_text("toy-1m").strip() in text
    assert len(text) > len(before)
    assert debris(tmp_path) == []


def test_same_id_race_reports_already_exists(tmp_path):
    path = catalogue(tmp_path, "toy-1m")
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    workers = [
        ctx.Process(target=_insert_after, args=(barrier, str(path), "toy-1a", queue))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    outcomes = sorted(queue.get(timeout=120)[1] for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
    assert outcomes[0] == "added"
    assert outcomes[1].startswith("refused:") and "already exists" in outcomes[1]
    assert load_catalogue(path).ids() == ["toy-1a", "toy-1m"]


def test_a_held_lock_makes_a_writer_wait_then_give_up_cleanly(tmp_path, monkeypatch):
    import archdb.writer as writer

    path = catalogue(tmp_path, "toy-1m")
    before = path.read_bytes()
    monkeypatch.setattr(writer, "LOCK_TIMEOUT", 0.3)
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        start = time.perf_counter()
        with pytest.raises(WriteError, match="locked by another writer"):
            insert_card(path, card("toy-1a"))
        assert 0.3 <= time.perf_counter() - start < 5
    finally:
        os.close(fd)
    assert path.read_bytes() == before
    insert_card(path, card("toy-1a"))  # released: it goes through
    assert load_catalogue(path).ids() == ["toy-1a", "toy-1m"]


def test_a_read_only_catalogue_is_refused_and_unchanged(tmp_path):
    path = catalogue(tmp_path, "toy-1m")
    before = path.read_bytes()
    path.chmod(0o444)
    try:
        with pytest.raises(WriteError, match="read-only: it was not changed"):
            insert_card(path, card("toy-1a"))
        assert path.read_bytes() == before
        assert oct(path.stat().st_mode & 0o777) == "0o444"
    finally:
        path.chmod(0o644)
    assert debris(tmp_path) == []


def test_a_symlinked_catalogue_is_written_through_and_stays_a_link(tmp_path):
    real = catalogue(tmp_path, "toy-1m")
    link_dir = tmp_path / "elsewhere"
    link_dir.mkdir()
    link = link_dir / "models.yaml"
    link.symlink_to(real)
    inserted = insert_card(link, card("toy-1a"))
    assert inserted.path == link
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert load_catalogue(real).ids() == ["toy-1a", "toy-1m"]
    assert debris(tmp_path) == [] and debris(link_dir) == []


def test_the_file_mode_survives_a_write(tmp_path):
    path = catalogue(tmp_path, "toy-1m")
    path.chmod(0o640)
    insert_card(path, card("toy-1a"))
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_failed_replace_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = catalogue(tmp_path, "toy-1m")
    before = path.read_bytes()

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(WriteError, match="cannot write: No space left on device"):
        insert_card(path, card("toy-1a"))
    assert path.read_bytes() == before
    assert debris(tmp_path) == []


SLOW_WRITER = """
import os, sys, time
from pathlib import Path
from archdb.catalogue import parse_cards
from archdb.writer import insert_card
from tests.conftest import card_text

def stall(fd):  # the new text is in the temporary file: now wait for SIGTERM
    Path(sys.argv[2]).touch()
    time.sleep(60)

os.fsync = stall
insert_card(sys.argv[1], parse_cards(card_text("toy-1a"))[0][0])
"""


def test_sigterm_during_a_write_leaves_no_debris_and_the_catalogue_unchanged(tmp_path):
    path = catalogue(tmp_path, "toy-1m")
    before = path.read_bytes()
    ready = tmp_path / "ready"
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "ARCHDB_NO_CACHE": "1", "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(path), str(ready)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, "the writer ended before writing"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert len(debris(tmp_path)) == 1  # the temporary file exists now
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        proc.kill()
    assert debris(tmp_path) == []
    assert path.read_bytes() == before
