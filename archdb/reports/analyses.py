"""The analyses a researcher asks for after the trends: how sparse MoE models are, how big
their caches, contexts and heads are, how layers are mixed, how long models are trained,
how fast organizations adopt a choice, and how much one family dominates a year.

Every figure here is family-weighted (``archdb.reports.weighting``): in each year, every
family with a known value weighs 1, split among its cards of that year, so eight sizes
from one table count as one design. Each table gives n families and n cards per year, and
the catalogue's latest year is marked partial. Plain functions over the rows of
``archdb.table``; the cards themselves are read only for their layer patterns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from archdb.reports.weighting import Cutoff, Row, card_weights, weighted_spread, weighted_values
from archdb.schema import Card, LayerKind

KV_FROM_PARAMS = 5e9  # KV caches are compared among decoders this big (exact parameters)
LOCAL_KINDS = frozenset({LayerKind.LOCAL, LayerKind.CHUNKED})

# The choices whose adoption lag is measured, with the test a card's row passes.
LAG_CHOICES: tuple[tuple[str, str, Callable[[Row], bool | None]], ...] = (
    ("RMSNorm", "architecture.norm.type", lambda r: r["architecture.norm.type"] == "rmsnorm"),
    ("gated MLP", "gated", lambda r: bool(r["gated"])),
    ("RoPE", "architecture.position.type", lambda r: r["architecture.position.type"] == "rope"),
    ("GQA", "attention_family", lambda r: r["attention_family"] == "gqa"),
    ("MoE", "moe", lambda r: bool(r["moe"])),
)
LAG_MIN_CARDS = 3  # organizations with fewer cards are left out of the lag table


def in_scope(rows: Iterable[Row]) -> list[Row]:
    """Released decoder-only and encoder-decoder cards (research variants and encoder-only
    models out), as the trends count them."""
    return [
        r
        for r in rows
        if not r.get("research_variant") and r.get("architecture.kind") != "encoder-only"
    ]


# --- a numeric figure by year --------------------------------------------------------


@dataclass(frozen=True)
class YearSpread:
    """One year's family-weighted quartiles of a number, with what they rest on."""

    year: int
    families: int  # families with a known value
    cards: int  # cards with a known value
    q1: float
    median: float
    q3: float


def by_year(rows: Sequence[Row], number_of: Callable[[Row], float | None]) -> list[YearSpread]:
    """Each year's family-weighted median and quartiles of ``number_of`` (None: unknown)."""
    out = []
    weights = weighted_values(rows, number_of, "family")
    for year, pairs in weights.items():
        spread = weighted_spread(pairs)
        if spread is None:
            continue
        known = [r for r in rows if r["year"] == year and number_of(r) is not None]
        out.append(
            YearSpread(
                year,
                len({r["family"] for r in known}),
                spread.n,
                spread.q1,
                spread.median,
                spread.q3,
            )
        )
    return out


def _value(column: str) -> Callable[[Row], float | None]:
    def number(row: Row) -> float | None:
        value = row.get(column)
        return None if value is None else float(value)

    return number


def _where(
    test: Callable[[Row], bool], number: Callable[[Row], float | None]
) -> Callable[[Row], float | None]:
    def number_if(row: Row) -> float | None:
        return number(row) if test(row) else None

    return number_if


def _is_moe(row: Row) -> bool:
    return bool(row.get("moe"))


# --- the analyses --------------------------------------------------------------------


@dataclass(frozen=True)
class MoeSparsity:
    active_ratio: list[YearSpread]  # active / total parameters
    experts: list[YearSpread]  # routed experts per MoE layer
    top_k: list[YearSpread]  # experts each token is routed to


def moe_sparsity(rows: Sequence[Row]) -> MoeSparsity:
    return MoeSparsity(
        by_year(rows, _where(_is_moe, _value("active_ratio"))),
        by_year(rows, _where(_is_moe, _value("architecture.mlp.moe.n_experts"))),
        by_year(rows, _where(_is_moe, _value("architecture.mlp.moe.n_active"))),
    )


def kv_cache(rows: Sequence[Row]) -> list[YearSpread]:
    """KV-cache bytes per token (the catalogue's definition: 8,192 tokens, 2 bytes an
    element) of decoders of ``KV_FROM_PARAMS`` exact parameters or more."""

    def big_decoder(row: Row) -> bool:
        params = row.get("params_exact")
        return row.get("architecture.kind") == "decoder-only" and (params or 0) >= KV_FROM_PARAMS

    return by_year(rows, _where(big_decoder, _value("kv_cache_bytes_per_token")))


def context_length(rows: Sequence[Row]) -> list[YearSpread]:
    return by_year(rows, _value("architecture.context_length"))


def rope_base(rows: Sequence[Row]) -> list[YearSpread]:
    """RoPE's theta among the cards that rotate (the global layers' base)."""

    def rotates(row: Row) -> bool:
        return row.get("architecture.position.type") == "rope"

    return by_year(rows, _where(rotates, _value("architecture.position.rope_theta")))


def head_dim(rows: Sequence[Row]) -> list[YearSpread]:
    return by_year(rows, _value("head_dim_effective"))


def tokens_per_parameter(rows: Sequence[Row]) -> list[YearSpread]:
    """Training tokens over exact parameters, where the tokens are sourced."""

    def ratio(row: Row) -> float | None:
        tokens, params = row.get("training.tokens"), row.get("params_exact")
        return None if not tokens or not params else float(tokens) / float(params)

    return by_year(rows, ratio)


@dataclass(frozen=True)
class LayerMix:
    """One year's layer mixing: the share of families whose stack mixes kinds, and among
    those the median ratio of the minority kind's layers to the others."""

    year: int
    families: int
    cards: int
    local_share: float  # family-weighted share of cards with local/chunked attention layers
    local_to_global: float | None  # median local:global layers among those cards
    linear_share: float  # family-weighted share of cards with recurrent mixer layers
    linear_to_full: float | None  # median recurrent:attention layers among those cards


def _layer_counts(card: Card) -> tuple[int, int, int, int]:
    """(local attention layers, other attention layers, recurrent mixer layers, all
    token-mixing layers) of a card's pattern."""
    local = attention = recurrent = 0
    for kind, count in card.architecture.layer_kind_counts().items():
        if kind.recurrent is not None:
            recurrent += count
        if kind.attention:
            attention += count
            local += count if kind in LOCAL_KINDS else 0
    return local, attention - local, recurrent, attention + recurrent


def layer_mix(rows: Sequence[Row], cards: Iterable[Card]) -> list[LayerMix]:
    counts = {c.id: _layer_counts(c) for c in cards}
    rows = [r for r in rows if r["id"] in counts]
    weights = card_weights(rows, lambda r: True, "family")
    out = []
    for year in sorted({r["year"] for r in rows}):
        cards_of_year = [r for r in rows if r["year"] == year]
        total = sum(weights[r["id"]] for r in cards_of_year)
        local = [r for r in cards_of_year if counts[r["id"]][0] and counts[r["id"]][1]]
        linear = [r for r in cards_of_year if counts[r["id"]][2] and counts[r["id"]][1]]
        local_ratio = [(counts[r["id"]][0] / counts[r["id"]][1], weights[r["id"]]) for r in local]
        linear_ratio = [
            (
                counts[r["id"]][2] / (counts[r["id"]][0] + counts[r["id"]][1]),
                weights[r["id"]],
            )
            for r in linear
        ]
        local_spread, linear_spread = weighted_spread(local_ratio), weighted_spread(linear_ratio)
        out.append(
            LayerMix(
                year,
                len({r["family"] for r in cards_of_year}),
                len(cards_of_year),
                sum(weights[r["id"]] for r in local) / total,
                local_spread.median if local_spread else None,
                sum(weights[r["id"]] for r in linear) / total,
                linear_spread.median if linear_spread else None,
            )
        )
    return out


@dataclass(frozen=True)
class OrganizationLag:
    """How many years after the field's first card with a choice an organization released
    its own first one (None: it never did)."""

    organization: str
    cards: int
    first: dict[str, int | None]  # choice -> the organization's first year with it
    lag: dict[str, int | None]  # choice -> years after the field's first use


@dataclass(frozen=True)
class FieldAdoption:
    choice: str
    first_year: int | None  # the field's first card with the choice
    majority_year: int | None  # the first year its family-weighted share passed one half


def field_adoption(rows: Sequence[Row]) -> list[FieldAdoption]:
    out = []
    for choice, column, test in LAG_CHOICES:
        known = [r for r in rows if r.get(column) is not None]
        using = [r for r in known if test(r)]
        first = min((r["year"] for r in using), default=None)
        weights = card_weights(known, lambda r: True, "family")
        majority = None
        for year in sorted({r["year"] for r in known}):
            total = sum(weights[r["id"]] for r in known if r["year"] == year)
            share = sum(weights[r["id"]] for r in using if r["year"] == year) / total
            if share > 0.5:
                majority = year
                break
        out.append(FieldAdoption(choice, first, majority))
    return out


def adoption_lag(rows: Sequence[Row]) -> list[OrganizationLag]:
    """Each organization with ``LAG_MIN_CARDS`` cards or more, most cards first."""
    field = {f.choice: f for f in field_adoption(rows)}
    by_org: dict[str, list[Row]] = {}
    for r in rows:
        by_org.setdefault(str(r["organization"]), []).append(r)
    out = []
    for org, org_rows in by_org.items():
        if len(org_rows) < LAG_MIN_CARDS:
            continue
        first: dict[str, int | None] = {}
        lag: dict[str, int | None] = {}
        for choice, column, test in LAG_CHOICES:
            years = [r["year"] for r in org_rows if r.get(column) is not None and test(r)]
            first[choice] = min(years, default=None)
            start = field[choice].first_year
            lag[choice] = None if first[choice] is None or start is None else first[choice] - start
        out.append(OrganizationLag(org, len(org_rows), first, lag))
    return sorted(out, key=lambda o: (-o.cards, o.organization))


@dataclass(frozen=True)
class Concentration:
    """How much one family dominates a year's cards."""

    year: int
    families: int
    cards: int
    largest: str  # the family with most cards (ties: the first by name)
    largest_cards: int

    @property
    def share(self) -> float:
        return self.largest_cards / self.cards


def concentration(rows: Sequence[Row]) -> list[Concentration]:
    out = []
    for year in sorted({r["year"] for r in rows}):
        sizes: dict[str, int] = {}
        for r in rows:
            if r["year"] == year:
                sizes[r["family"]] = sizes.get(r["family"], 0) + 1
        largest = min(sizes, key=lambda f: (-sizes[f], f))
        out.append(Concentration(year, len(sizes), sum(sizes.values()), largest, sizes[largest]))
    return out


@dataclass(frozen=True)
class Analyses:
    """Every analysis of the page, computed once."""

    cutoff: Cutoff
    moe: MoeSparsity
    kv_cache: list[YearSpread]
    context: list[YearSpread]
    rope_base: list[YearSpread]
    head_dim: list[YearSpread]
    layer_mix: list[LayerMix]
    tokens_per_parameter: list[YearSpread]
    field_adoption: list[FieldAdoption]
    adoption_lag: list[OrganizationLag]
    concentration: list[Concentration]


def analyses(rows: Sequence[Row], cards: Iterable[Card], cut: Cutoff) -> Analyses:
    """The page's analyses over the catalogue's rows (and its cards' layer patterns)."""
    scoped = in_scope(rows)
    ids = {r["id"] for r in scoped}
    return Analyses(
        cut,
        moe_sparsity(scoped),
        kv_cache(scoped),
        context_length(scoped),
        rope_base(scoped),
        head_dim(scoped),
        layer_mix(scoped, [c for c in cards if c.id in ids]),
        tokens_per_parameter(scoped),
        field_adoption(scoped),
        adoption_lag(scoped),
        concentration(scoped),
    )
