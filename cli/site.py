"""The site command: build the static web site of the catalogue (archdb.site)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from archdb.catalogue import DEFAULT_PATH, CatalogueError

from .common import EXIT_DATA, EXIT_USAGE, CataloguePath, console, fail, load, print_problems


def site(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Directory to write.", file_okay=False)
    ] = Path("_site"),
    catalogue: CataloguePath = DEFAULT_PATH,
) -> None:
    """Build a static web site of the catalogue: index, a page per card, trends, compare.

    The same catalogue always gives the same bytes. OUTPUT is replaced only if it is
    empty or an earlier site; it works offline and on GitHub Pages.

    Example: archdb site -o _site
    """
    from archdb.site import SiteError, build_site  # torch and matplotlib: this command only

    try:
        result = build_site(load(catalogue), output)
    except CatalogueError as exc:
        print_problems(exc.problems)
        raise typer.Exit(EXIT_DATA) from None
    except SiteError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}", EXIT_DATA) from None
    console.print(
        f"wrote {result.pages} pages and {result.figures} figures to {output} "
        f"in {result.seconds:.1f} s",
        highlight=False,
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command()(site)
