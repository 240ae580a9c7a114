"""Lineage trees: how models changed from the card each descends from.

A card's ``lineage`` names the catalogue card it descends from: trained from its weights
(Code Llama from Llama 2) or the previous release of the same line (Llama 3.1 from Llama
3). Those links form trees; each tree with at least two released cards is a line, shown
from its root, each card after the one it descends from, with the design choices that
changed from that card. A card that names no lineage and that no card descends from is its
own line (``unlinked``): it has nothing to compare with. Research variants are left out.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from archdb.reports.distributions import released

# The columns an evolution table shows: short label -> table column.
EVOLUTION_COLUMNS: dict[str, str] = {
    "d_model": "architecture.d_model",
    "layers": "architecture.n_layers",
    "norm": "architecture.norm.type",
    "norm pos": "architecture.norm.position",
    "activation": "architecture.mlp.activation",
    "d_ff/d_model": "d_ff_ratio",
    "position": "architecture.position.type",
    "attention": "attention_family",
    "groups": "query_groups",
    "layers mix": "layer_mix",
    "qk norm": "architecture.attention.qk_norm",
    "soft-cap": "softcap_scheme",
    "bias": "bias_scheme",
    "parallel": "architecture.parallel_layers",
    "tied": "architecture.tied_embeddings",
    "moe": "moe",
    "vocab": "architecture.vocab_size",
    "context": "architecture.context_length",
}
# Changes in these columns are sizes, not design choices: not listed under "changed".
_SIZES = {"d_model", "layers", "vocab", "context", "d_ff/d_model", "groups"}


def parents(frame: pd.DataFrame) -> dict[str, str]:
    """Each released card's parent: the card its ``lineage`` names, if released too.

    A link that would close a cycle is dropped, so every line is a tree with one root."""
    part = released(frame[["lineage", "research_variant"]])  # not a copy of every column
    ids = set(part.index)
    links = {
        str(card): str(parent)
        for card, parent in part["lineage"].items()
        if isinstance(parent, str) and parent in ids
    }
    for card in sorted(links):
        seen = {card}
        node = links.get(card)
        while node is not None and node not in seen:
            seen.add(node)
            node = links.get(node)
        if node == card:  # card's chain comes back to it: break the cycle here
            del links[card]
    return links


def _children(frame: pd.DataFrame, links: dict[str, str]) -> dict[str, list[str]]:
    dates = frame["release_date"]
    children: dict[str, list[str]] = defaultdict(list)
    for card, parent in links.items():
        children[parent].append(card)
    for kids in children.values():
        kids.sort(key=lambda c: (str(dates[c]), c))
    return children


def members(frame: pd.DataFrame, root: str) -> list[str]:
    """The ids of ``root``'s tree, each after the card it descends from (earliest first)."""
    return _tree(_children(frame, parents(frame)), root)


def _tree(children: dict[str, list[str]], root: str) -> list[str]:
    order: list[str] = []
    stack = [root]
    while stack:
        card = stack.pop()
        order.append(card)
        stack.extend(reversed(children.get(card, [])))
    return order


def lines(frame: pd.DataFrame, min_cards: int = 2) -> list[str]:
    """Roots of the trees holding at least ``min_cards`` released cards, oldest first."""
    links = parents(frame)
    part = released(frame)
    children = _children(frame, links)
    roots = [str(c) for c in part.index if c not in links]
    sized = [r for r in roots if len(_tree(children, r)) >= min_cards]
    return sorted(sized, key=lambda r: (str(part.at[r, "release_date"]), r))


def unlinked(frame: pd.DataFrame) -> list[str]:
    """Released cards with no lineage link either way: each is its own line."""
    links = parents(frame)
    linked = set(links) | set(links.values())
    return [str(c) for c in released(frame).index if c not in linked]


def evolution(frame: pd.DataFrame, root: str) -> pd.DataFrame:
    """The line from ``root``, one card per row, with what changed from the card it
    descends from (the ``from`` column)."""
    links = parents(frame)
    order = _tree(_children(frame, links), root)
    shown = ["name", "release_date", "params_published", *EVOLUTION_COLUMNS.values()]
    cards = frame.loc[order, list(dict.fromkeys(shown))]  # the line's rows, shown columns
    table = pd.DataFrame(
        {
            "model": cards["name"],
            "date": cards["release_date"],
            "params": cards["params_published"],
            "from": [frame.at[links[c], "name"] if c in links else "" for c in order],
        },
        index=cards.index,
    )
    for label, column in EVOLUTION_COLUMNS.items():
        table[label] = cards[column]
    table["changed"] = [
        ", ".join(_changed(table.loc[c], table.loc[links[c]])) if c in links else "" for c in order
    ]
    return table


def _changed(row: pd.Series, parent: pd.Series) -> list[str]:
    """The design choices (not sizes) that differ between a card and its parent."""
    return [
        label
        for label in EVOLUTION_COLUMNS
        if label not in _SIZES and not _same(row[label], parent[label])
    ]


def _same(a: object, b: object) -> bool:
    """Equal, or not comparable: an unknown value is not a change."""
    if pd.isna(a) or pd.isna(b):
        return True
    return bool(a == b)
