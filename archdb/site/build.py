"""Build the static site of a catalogue into a directory: ``build_site``.

The site is the reports' data and figures (``archdb.reports``), a page per card (with
the toy ``archdb build`` makes), an index and a comparison page. Deterministic: the same
catalogue gives the same bytes (files are written in a fixed order from ordered data;
figures are the reports' reproducible SVG).

Safe to point at a directory: the site is written into a fresh sibling directory and
swapped in at the end, under a lock on the parent, so a reader never sees half a site;
an existing directory is replaced only if it is empty or a site this command made
(it holds ``MARKER``), never a folder of someone else's files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from archdb.catalogue import Catalogue
from archdb.diagrams import diagram_svg
from archdb.errors import UsageError
from archdb.fidelity import fidelities
from archdb.files import write_new
from archdb.measure.analytic import derived_figures
from archdb.reports.build import FIGURES, PAGES, compute, render_reports
from archdb.table import catalogue_rows

from . import markdown, pages
from .data import cache_at_context, compare_data, toy_trees

MARKER = ".archdb-site"
STATIC = ("site.css", "site.js")


class SiteError(UsageError):
    """The output directory cannot be used (it holds files this command did not make)."""


@dataclass
class SiteBuild:
    """What a build wrote and how long each part took (seconds)."""

    output: Path
    pages: int = 0
    figures: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(self.timings.values())


# The compare page opens on two well-known models of different design: a dense Llama-era
# decoder and a MoE one with latent attention (else the catalogue's first two).
COMPARE_DEFAULTS = ("llama-3-8b", "deepseek-v3")


def build_site(catalogue: Catalogue, output: Path) -> SiteBuild:
    """Write the whole site of ``catalogue`` to ``output`` (replacing an earlier build)."""
    output = Path(output)
    result = SiteBuild(output)
    _check_target(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with _locked(output.parent):
        _check_target(output)  # again, now that no other build can change it
        stage = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
        try:
            with _one_torch_thread():
                _write_site(catalogue, stage, result)
            _swap(stage, output)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
    return result


def _write_site(catalogue: Catalogue, out: Path, result: SiteBuild) -> None:
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        result.timings[name] = result.timings.get(name, 0.0) + now - clock
        clock = now

    data = compute(catalogue)  # the reports' tables, claims and experiments
    lap("report data")
    rendered = render_reports(data)  # the report's pages and figures, as bytes
    (out / FIGURES).mkdir()
    for relative in sorted(rendered):
        if relative.startswith(f"{FIGURES}/"):
            write_new(out / relative, rendered[relative])
            result.figures += 1
    report_md = [(name, rendered[name].decode("utf-8")) for name in PAGES]
    lap("figures")

    cards = list(catalogue)
    ids = {c.id for c in cards}
    rows = catalogue_rows(cards)  # their counts from the figures cache the report data filled
    write = _writer(out, result)
    newest = sorted(range(len(cards)), key=lambda i: (cards[i].release_date, cards[i].id))[::-1]
    write(
        "index.html",
        pages.index_page(
            [cards[i] for i in newest], [rows[i] for i in newest], catalogue.path.name
        ),
    )

    def card_link(text: str) -> str | None:
        return f"cards/{text}.html" if text in ids else None

    for name, body in markdown.pages(report_md, card_link).items():
        write(name, pages.report_page(name, body))
    defaults = [i for i in COMPARE_DEFAULTS if i in ids] or [c.id for c in cards[:2]]
    write("compare.html", pages.compare_page(compare_data(cards, rows), defaults))
    lap("pages")

    (out / "diagrams").mkdir()
    for card in cards:
        write(f"diagrams/{card.id}.svg", diagram_svg(card))
    lap("diagrams")

    (out / "cards").mkdir()
    trees = toy_trees(cards)
    levels = fidelities(cards)  # the words `archdb show` prints
    for card, row in zip(cards, rows, strict=True):
        figures = derived_figures(card)
        facts = pages.CardFacts(
            row=row,
            figures=figures,
            fidelity=levels[card.id],
            toy=trees[card.id],
            disagreements=pages.disagreements_of(card.id, data.claims),
            cache_at_context=cache_at_context(card, figures["kv_dtype_bytes"]),
        )
        write(f"cards/{card.id}.html", pages.card_page(card, facts))
    lap("card pages")

    (out / "static").mkdir()
    for name in STATIC:
        write_new(out / "static" / name, files("archdb.site").joinpath("static", name).read_bytes())
    write_new(out / ".nojekyll", b"")
    write_new(out / MARKER, b"Made by `archdb site`; the command replaces this directory.\n")
    lap("static")


def _writer(out: Path, result: SiteBuild):
    """Write a page into the staging folder: a new file, made exclusively (the folder is
    archdb's own, fresh and private, so nothing can be there already)."""

    def write(name: str, text: str) -> None:
        write_new(out / name, text.encode("utf-8"))
        result.pages += 1

    return write


def _check_target(output: Path) -> None:
    if output.is_symlink():  # the site is swapped in whole: a link would be replaced, or left
        raise SiteError(
            f"{output} is a symbolic link: give the folder it points to ({output.resolve()}) "
            "or a new name"
        )
    if not output.exists():
        return
    if not output.is_dir():
        raise SiteError(f"{output} is a file, not a directory")
    if (output / MARKER).is_file() or not any(output.iterdir()):
        return
    raise SiteError(
        f"{output} holds files `archdb site` did not make: choose a new or empty directory"
    )


def _swap(stage: Path, output: Path) -> None:
    """Put the new site in place; the old one (if any) is removed only afterwards."""
    os.chmod(stage, 0o755)  # mkdtemp makes it private; a site is for reading
    if not output.exists() and not output.is_symlink():
        stage.rename(output)
        return
    # renamed onto a fresh empty folder of our own: no other file can take its name
    old = Path(tempfile.mkdtemp(prefix=f".{output.name}.old.", dir=output.parent))
    try:
        os.rename(output, old)
    except BaseException:
        old.rmdir()  # nothing moved: no .old folder left behind
        raise
    try:
        stage.rename(output)
    except BaseException:
        os.rename(old, output)  # the old site back in place, whole
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def _one_torch_thread() -> Iterator[None]:
    """Run torch on one thread, then restore its setting. The models built here (the
    claims' experiments, the toys) are tiny: threads only add spin-waiting, which on shared
    cores is ruinous (claims experiments, 2-core machine under load: 1.8 s on one thread,
    246 s on two). The reports come out byte-identical either way."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` itself: two builds into it take turns."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the staged swap still keeps the site whole
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
