"""Measurement commands: `measure mechanisms` re-runs the slow profiles and decode timings.

`archdb report` never runs them: it renders from the cached JSON this command writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import EXIT_USAGE, CataloguePath, fail, load, say

measure_app = typer.Typer(
    help="Re-run slow measurements and cache them for the reports.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)


@measure_app.command()
def mechanisms(
    device: Annotated[
        str, typer.Option("--device", help="cpu, or cuda (cuda:N) where a GPU exists.")
    ] = "cpu",
    repeats: Annotated[
        int, typer.Option("--repeats", min=1, max=50, help="Profiled runs per pass.")
    ] = 5,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Measure only these targets (repeatable); keep the rest."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", dir_okay=False, help="Cache file (default: beside the catalogue)."
        ),
    ] = None,
    catalogue: CataloguePath = None,
) -> None:
    """Profile full-width layers by operator class and time decode steps; cache as JSON.

    Takes minutes on a CPU. `archdb report` then renders reports/mechanisms.md from the
    cache without re-running anything.

    Examples:
      archdb measure mechanisms
      archdb measure mechanisms --device cuda --only llama-2-7b
    """
    import torch

    from archdb.measure import decode, profile
    from archdb.measure import mechanisms as mech

    if not (device == "cpu" or device.startswith("cuda")):
        raise fail(f"--device must be cpu or cuda, got {device!r}", EXIT_USAGE)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise fail("--device cuda: no CUDA device is available here", EXIT_USAGE)
    known = {t.key for t in profile.TARGETS} | {t.key for t in decode.DECODE_TARGETS}
    unknown = sorted(set(only or ()) - known)
    if unknown:
        raise fail(
            f"unknown target {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}",
            EXIT_USAGE,
        )
    cat = load(catalogue)
    path = output or mech.cache_path(cat.path)
    try:
        old = mech.read_raw(path)
    except mech.MeasurementError as exc:
        raise fail(f"{exc}; remove it or choose another --output") from None
    cards = {c.id: c for c in cat}
    try:
        doc = mech.run_all(
            cards,
            device,
            repeats,
            set(only) if only else None,
            progress=say,
        )
    except mech.MeasurementError as exc:
        raise fail(str(exc)) from None
    mech.write(path, mech.merge(old if only else None, doc))
    say(f"wrote {path}: measured in {doc['refresh_seconds']:.0f} s")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.add_typer(measure_app, name="measure")
