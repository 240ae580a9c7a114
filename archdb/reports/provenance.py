"""How much of the catalogue rests only on mirrors: copies of an official file (a
fine-tune's config, a registry's verbatim copy) cited where the official artifact could
not be read. Counted from the table's ``values_sourced`` and ``values_mirror_only``."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from archdb.reports import render

TOP_CARDS = 10  # cards named on the page, most mirror-only values first


@dataclass(frozen=True)
class MirrorShare:
    values: int  # sourced architecture values in the catalogue
    mirror_only: int  # of those, resting only on a mirror
    cards: int  # cards with at least one such value
    top: list[tuple[str, int, int]]  # (id, mirror-only values, sourced values)

    @property
    def share(self) -> float:
        return self.mirror_only / self.values if self.values else 0.0


def mirror_share(frame: pd.DataFrame, top: int = TOP_CARDS) -> MirrorShare:
    sourced = frame["values_sourced"].fillna(0).astype(int)
    mirrored = frame["values_mirror_only"].fillna(0).astype(int)
    ranked = sorted(
        ((str(i), int(mirrored[i]), int(sourced[i])) for i in frame.index if mirrored[i] > 0),
        key=lambda t: (-t[1], t[0]),
    )
    return MirrorShare(int(sourced.sum()), int(mirrored.sum()), len(ranked), ranked[:top])


def mirror_section(frame: pd.DataFrame) -> str:
    """The README section: the share of values resting only on mirrors, and the cards."""
    found = mirror_share(frame)
    head = (
        "## Values resting only on mirrors\n\n"
        f"{found.mirror_only:,} of the catalogue's {found.values:,} sourced architecture "
        f"values ({found.share:.1%}), in {found.cards} cards, rest only on a mirror: a copy "
        "of an official file (named in the source's `copies`), cited where the official "
        "artifact could not be read. `archdb show ID` marks them."
    )
    if not found.top:
        return head
    rows = [[card, f"{n} of {total}"] for card, n, total in found.top]
    caption = f"The {len(rows)} cards with the most:"
    return f"{head}\n\n{caption}\n\n" + render.table(["card", "mirror-only values"], rows)
