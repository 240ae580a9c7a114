"""Build reports/ from a catalogue: compute, render, write. The project's main job.

``build_reports`` is deterministic: the same catalogue gives byte-identical files
(figures included, see ``archdb.reports.figures``), and it removes the figures it no
longer makes, so the directory always matches the catalogue exactly.
"""

from __future__ import annotations

import hashlib
import io
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

import pandas as pd

from archdb import conventions as cv
from archdb import files
from archdb.catalogue import Catalogue
from archdb.columns import Row, number_text
from archdb.outputs import MANIFEST, OwnedDirectory, manifest_bytes
from archdb.reports import analyses as an
from archdb.reports import claims, families, figures, measured, provenance, render, verification
from archdb.reports import distributions as dist
from archdb.reports import mechanisms as mech_page
from archdb.reports.adoption import Adoption, adoption_all, consensus, trend_rows
from archdb.reports.claims import ClaimResult, check_claims
from archdb.reports.numeric import EQUAL, ERAS, SIZE_BANDS, shapes
from archdb.reports.weighting import Cutoff, cutoff
from archdb.table import catalogue_rows, frame_from_rows

FIGURES = "figures"
PAGES = (
    "README.md",
    "adoption.md",
    "distributions.md",
    "analyses.md",
    "families.md",
    "claims.md",
    "mechanisms.md",
    "fidelity.md",
)


@dataclass(frozen=True)
class ReportData:
    """Everything the pages show, computed once from the catalogue."""

    source: str
    content_key: str  # the catalogue content hash the pages name (``content_key``)
    frame: pd.DataFrame
    adoptions: list[Adoption]
    claims: list[ClaimResult]
    mechanisms: mech_page.MechanismsData
    fidelities: list[verification.CardFidelity]
    rows: list[Row] = field(default_factory=list)  # the table rows the frame was made of
    analyses: an.Analyses | None = None  # the analyses page's figures


# Report data and renders kept in one process: a test worker reuses the shipped catalogue's
# across its tests, between the half dozen synthetic catalogues those tests build.
_MEMO_SIZE = 8
_computed: OrderedDict[str, ReportData] = OrderedDict()
_rendered: OrderedDict[int, tuple[ReportData, dict[str, bytes]]] = OrderedDict()


def content_key(catalogue: Catalogue) -> str:
    """SHA-256 of everything ``compute`` reads: the catalogue's name and cards, and the
    cached mechanisms measurements beside it (their bytes, or their absence)."""
    from archdb.measure import mechanisms as mech

    digest = hashlib.sha256(catalogue.path.name.encode() + b"\0")
    for card in catalogue:
        digest.update(card.model_dump_json().encode() + b"\0")
    measurements = mech.read_bytes(mech.cache_path(catalogue.path))  # bounded, regular only
    digest.update(b"no measurements" if measurements is None else measurements)
    return digest.hexdigest()


def compute(catalogue: Catalogue) -> ReportData:
    """Everything the pages show, computed once per catalogue content in a process (the
    site and ``--check`` reuse a build's data). The claim experiments come from their
    cache when the catalogue's experiment cards were measured before
    (``archdb.reports.measured``)."""
    key = content_key(catalogue)
    if key in _computed:
        _computed.move_to_end(key)
        return _computed[key]
    data = _compute(catalogue, key)
    _computed[key] = data
    while len(_computed) > _MEMO_SIZE:
        _computed.popitem(last=False)
    return data


def _compute(catalogue: Catalogue, key: str | None = None) -> ReportData:
    rows = catalogue_rows(catalogue)
    frame = frame_from_rows(rows)
    adoptions = adoption_all(trend_rows(rows))
    from archdb.measure import mechanisms as mech

    cached = mech.load(mech.cache_path(catalogue.path), {c.id: c for c in catalogue})
    evidence = measured.runtime_evidence(cached)
    claim_input = replace(measured.measure_claims(catalogue), runtime_profile=evidence)
    claims = check_claims(frame, claim_input)
    mechanisms = mech_page.compute(catalogue, cached)
    fidelities = verification.card_fidelities(catalogue)
    key = key or content_key(catalogue)
    studies = an.analyses(rows, catalogue, cutoff(rows))
    return ReportData(
        catalogue.path.name, key, frame, adoptions, claims, mechanisms, fidelities, rows, studies
    )


def render_reports(data: ReportData) -> dict[str, bytes]:
    """Every page and figure, by path relative to the output directory: a pure function of
    the report data (the same data gives the same bytes), so rendered once per data."""
    if id(data) in _rendered:
        _rendered.move_to_end(id(data))
        return dict(_rendered[id(data)][1])
    rendered = _render(data)
    _rendered[id(data)] = (data, rendered)  # the data kept alive: its id is not reused
    while len(_rendered) > _MEMO_SIZE:
        _rendered.popitem(last=False)
    return dict(rendered)


def _render(data: ReportData) -> dict[str, bytes]:
    rendered: dict[str, bytes] = {}

    def fig(name: str, make: Callable[[], object]) -> str | None:
        made = make()
        if made is None:
            return None
        relative = f"{FIGURES}/{name}.svg"
        buffer = io.BytesIO()
        figures.save_svg(made, buffer)
        rendered[relative] = buffer.getvalue()
        return relative

    pages = {
        "adoption.md": _adoption_page(data, fig),
        "distributions.md": _distributions_page(data, fig),
        "analyses.md": _analyses_page(data, fig),
        "families.md": _families_page(data),
        "claims.md": _claims_page(data),
        "mechanisms.md": _page(
            data,
            "Mechanisms measured: runtime, decode traffic, attention's takeover",
            *mech_page.page(data.mechanisms, fig),
        ),
        "fidelity.md": _page(
            data,
            "Fidelity: which builds compute the released function",
            _scope(data),
            *verification.page_sections(data.fidelities),
        ),
    }
    pages["README.md"] = _index_page(data, fig)
    for name in PAGES:
        rendered[name] = pages[name].encode("utf-8")
    return rendered


def build_reports(catalogue: Catalogue, output: Path) -> list[Path]:
    """Write every page and figure under ``output``; return the paths written.

    ``output`` must be empty or a directory archdb wrote (``archdb.outputs``): only the
    files it listed are replaced or removed.
    """
    directory = OwnedDirectory(output)
    directory.claim()
    written = write_files(render_reports(compute(catalogue)), output)
    directory.commit(written)
    return written


def write_files(rendered: dict[str, bytes], output: Path) -> list[Path]:
    """Write rendered files under ``output``, figures first (the order of a build). No
    link inside ``output`` is followed (``OwnedDirectory.write``)."""
    output.mkdir(parents=True, exist_ok=True)
    directory = OwnedDirectory(output)
    files.real_dirs(output, Path(FIGURES) / "_")
    return [directory.write(relative, content) for relative, content in rendered.items()]


# --- pages ---------------------------------------------------------------------------

FigureSaver = Callable[[str, Callable[[], object]], "str | None"]


def _page(data: ReportData, title: str, *sections: str) -> str:
    body = "\n\n".join(s.strip("\n") for s in sections if s)
    return f"{render.generated(data.content_key)}\n\n# {title}\n\n{body}\n"


def _cutoff(data: ReportData) -> Cutoff:
    return data.adoptions[0].cutoff if data.adoptions else Cutoff(None)


def _scope(data: ReportData) -> str:
    frame = data.frame
    research = int(frame["research_variant"].fillna(False).astype(bool).sum())
    years = frame["year"].dropna()
    span = f"{int(years.min())}–{int(years.max())}" if len(years) else "none"
    return (
        f"From `{data.source}`: {len(frame)} cards ({len(frame) - research} released models, "
        f"{research} research variants left out of the trends), {frame['family'].nunique()} "
        f"families, released {span}"
        + (f"; {_cutoff(data).label(_cutoff(data).year or 0)}." if _cutoff(data).partial else ".")
    )


def _index_page(data: ReportData, fig: FigureSaver) -> str:
    cons = [consensus(a) for a in data.adoptions]
    overview = fig("consensus", lambda: figures.consensus_figure(data.adoptions, cons))
    return _page(
        data,
        "Architecture consensus of language models",
        _scope(data),
        "Pages: [adoption by year](adoption.md) · [distributions](distributions.md) · "
        "[analyses](analyses.md) · [family evolution](families.md) · [claims check](claims.md) · "
        "[mechanisms measured](mechanisms.md) · [fidelity](fidelity.md)",
        "## Consensus by choice\n\n"
        f"{render.weighting_note(data.adoptions[0].weighting if data.adoptions else 'family')}. "
        "For each design choice: the value with the largest share in the latest complete "
        "year with a known value, that share with its 95% interval (Wilson, on the known "
        "families), the "
        "year's families and cards (known / all), when the value first appeared in the "
        "catalogue, the first year its share passed one half, and the year from which it has "
        "been the consensus (through the latest complete year; the partial year is shown "
        "apart, its share so far). A value is a year's consensus when its interval's lower bound "
        "is above one half and at least 5 families are known; a choice known for under half "
        "of a year's families has *too few known* that year, and no share.\n\n"
        + render.consensus_table(cons, _cutoff(data)),
        render.figure(overview, "Family-weighted share of each consensus value by year")
        if overview
        else "",
        f"## Claims of the lecture\n\n{render.verdict_counts(data.claims)}. Details, deciding "
        "models and disagreements: [claims.md](claims.md).\n\n"
        + render.claims_summary(data.claims, "claims.md"),
        "## Where the catalogue disagrees with the lecture\n\n"
        "Sourced values that contradict what the lecture says, with the models: findings, "
        "not errors.\n\n" + render.disagreements(data.claims, "claims.md"),
        provenance.mirror_section(data.frame),
        "## Fidelity of the builds\n\n"
        f"{verification.summary(data.fidelities)} Per card, with the reason: "
        "[fidelity.md](fidelity.md).",
    )


def _adoption_page(data: ReportData, fig: FigureSaver) -> str:
    weighting = data.adoptions[0].weighting if data.adoptions else "family"
    sections = [
        _scope(data),
        f"{render.weighting_note(weighting)}. Each table: the share of each year's known "
        "values using each value, with its 95% interval (Wilson, on the year's known "
        "families), in **bold** when it is the year's consensus (lower bound above one half, "
        "5 or more families known); *too few known* where the value is known for under half "
        "of the year's families; the last rows give n families and n cards (known / all, "
        "grey bars in the figures: the known share); the first card to use each value; the "
        "first year its share passed one half; and the year from which it has been the "
        "consensus through the latest year. Lines in italics count every value but the "
        "'off' one together. Research variants are left out, and so are encoder-only "
        "models: the trends count decoder-only and encoder-decoder models.",
    ]
    for adoption in data.adoptions:
        path = fig(f"adoption-{adoption.choice.key}", lambda a=adoption: figures.adoption_figure(a))
        sections.append(render.adoption_section(adoption, path))
    return _page(data, "Adoption of each choice by year", *sections)


def _distributions_page(data: ReportData, fig: FigureSaver) -> str:
    frame = data.frame
    group = dist.mlp_group(frame)
    ff_out = dist.outliers(frame, "d_ff_ratio", group)
    aspect_out = dist.outliers(frame, "aspect_ratio")
    head_off = dist.exceptions(frame, "head_ratio", 1.0)
    vocab_years = dist.per_year(frame, "architecture.vocab_size")
    vocab_out = dist.outliers(frame, "architecture.vocab_size", "year")
    kv = frame.assign(kv_per_b=dist.kv_cache_per_param(frame))
    kv_out = dist.outliers(kv, "kv_per_b", "attention_family")

    deciding = {r.key: set(r.deciding) for r in data.claims}  # label what claims cite
    ff_named = set(ff_out["id"]) | deciding["d-ff-ratio"]
    ff_fig = fig("d-ff-ratio", lambda: figures.d_ff_figure(frame, ff_named))
    aspect_named = set(aspect_out["id"]) | deciding["aspect-ratio"]
    aspect_fig = fig("aspect-ratio", lambda: figures.aspect_figure(frame, aspect_named))
    head_fig = fig("head-ratio", lambda: figures.head_ratio_figure(frame))
    vocab_named = set(vocab_years["min_model"]) | set(vocab_years["max_model"])
    vocab_fig = fig("vocab", lambda: figures.vocab_figure(frame, vocab_named))
    kv_fig = fig("kv-cache", lambda: figures.kv_cache_figure(frame, set(kv_out["id"])))

    def with_figure(path: str | None, alt: str) -> str:
        return render.figure(path, alt) if path else ""

    shape = shapes(trend_rows(data.rows), _cutoff(data))
    weighted = (
        f"{render.weighting_note(shape.weighting)}; medians and quartiles interpolate "
        "between the weighted values. Per year: families and cards with a known value / all; "
        "*too few known* where under half the year's families are known. Decoder-only and "
        "encoder-decoder models; research variants left out."
    )
    note = _cutoff(data).note()
    eras = [label for label, _, _ in ERAS]
    bands = [label for label, _, _ in SIZE_BANDS]
    sections = [
        _scope(data),
        "Shape rules depend on size and era: each section gives them by year and by size "
        "band (exact parameters, experts included) and period, counted by family. The "
        "figures show every card as a dot; the pooled tables under them count each card "
        "once over every year (card-weighted) and serve as context and for the outlier "
        "fences. Outliers: values more than 1.5 inter-quartile ranges outside the quartiles "
        f"of their group, on log values; groups of fewer than {dist.MIN_GROUP} have none.",
        "## d_ff / d_model: dense layers and experts apart\n\n"
        "d_ff is the width the down-projection reads: one branch of a gated unit; for a "
        "mixture of experts one routed expert (narrow by design), and its dense layers "
        "(`mlp.moe.dense_d_ff`) apart. The groups are never pooled.",
        with_figure(ff_fig, "d_ff/d_model by release date, each dot a card"),
        f"By year. {weighted}\n\n" + render.numeric_year_table(shape.d_ff_by_year),
        *(
            f"By size band and period: {label}. Weighted median [Q1–Q3] · families / cards "
            f"with a value.\n\n" + render.band_era_table(cells, bands, eras)
            for label, cells in shape.d_ff_bands.items()
        ),
        note,
        "Pooled, card-weighted (context):\n\n"
        + render.stats_table(dist.stats(frame, "d_ff_ratio", group)),
        render.outlier_table(ff_out, "d_ff/d_model"),
        "## d_model / n_layers against parameters",
        with_figure(aspect_fig, "aspect ratio against parameters, each dot a card"),
        "By size band and period, dense models. "
        f"{render.weighting_note(shape.weighting)}. Weighted median [Q1–Q3] · families / "
        "cards with a value.\n\n" + render.band_era_table(shape.aspect_bands, bands, eras),
        "Pooled, card-weighted (context):\n\n"
        + render.stats_table(dist.stats(frame, "aspect_ratio")),
        render.outlier_table(aspect_out, "d_model/n_layers"),
        "## n_heads · d_head / d_model",
        with_figure(head_fig, "head ratio by release date, each dot a card"),
        "Share of models with n_heads·d_head = d_model, by year. "
        f"{render.weighting_note(shape.weighting)}; the share's 95% interval (Wilson, on "
        "families) in brackets.\n\n"
        + render.share_year_table(shape.head_ratio, EQUAL, _cutoff(data))
        + (f"\n\n{note}" if note else ""),
        "Pooled, card-weighted (context):\n\n"
        + render.stats_table(dist.stats(frame, "head_ratio")),
        "Every model where n_heads·d_head ≠ d_model:\n\n"
        + render.exceptions_table(head_off, "ratio"),
        "## Vocabulary size over time",
        with_figure(vocab_fig, "vocabulary size by release date, each dot a card"),
        f"By year. {weighted}\n\n" + render.numeric_year_table([shape.vocab_by_year]),
        note,
        "Smallest and largest by year (each card counted):\n\n"
        + render.per_year_table(vocab_years),
        render.outlier_table(vocab_out, "vocabulary"),
        "## KV-cache bytes per token against parameters\n\n"
        f"The K/V cache of one sequence of {cv.DEFAULT_KV_CONTEXT:,} tokens at "
        f"{cv.DEFAULT_KV_DTYPE_BYTES} bytes per element, divided by its length (local and "
        "chunked layers keep only their window); compared across sizes as bytes per token "
        "per billion parameters.",
    ]
    if kv_fig is None:
        sections.append(
            "Not available: the catalogue gives no KV-cache figure (it comes "
            "from `archdb.measure.analytic`)."
        )
    else:
        sections += [
            with_figure(
                kv_fig,
                f"KV-cache bytes per token for a sequence of {cv.DEFAULT_KV_CONTEXT:,} tokens "
                f"({cv.DEFAULT_KV_DTYPE_BYTES} bytes per element) against parameters",
            ),
            render.stats_table(dist.stats(kv, "kv_per_b", "attention_family")),
            render.outlier_table(kv_out, "bytes/token/B"),
        ]
    return _page(data, "Distributions of ratios and sizes", *sections)


def _spread_rows(points: list[an.YearSpread], cut: Cutoff, fmt) -> list[list[str]]:
    return [
        [
            cut.short_label(p.year),
            f"{p.families} · {p.cards}",
            fmt(p.median),
            f"{fmt(p.q1)}–{fmt(p.q3)}",
        ]
        for p in points
    ]


def _spread_table(points: list[an.YearSpread], cut: Cutoff, what: str, fmt) -> str:
    return render.table(
        ["year", "n families · n cards", f"median {what}", "middle half"],
        _spread_rows(points, cut, fmt),
        right=(2, 3),
    )


def _analyses_page(data: ReportData, fig: FigureSaver) -> str:
    studies = data.analyses
    assert studies is not None
    cut = studies.cutoff
    note = render.weighting_note("family")
    partial = f" {cut.note()}." if cut.partial else ""
    caption = f"{note}; n families · n cards are those with a known value.{partial}"

    def num(value: float) -> str:
        return number_text(value)

    def pct(value: float) -> str:
        return f"{100 * value:.1f}%"

    def kib(value: float) -> str:
        return f"{value / 1024:,.0f} KiB"

    def spread(name: str, title: str, ylabel: str, series: list) -> str | None:
        return fig(
            f"analyses-{name}",
            lambda: figures.year_spread_figure(title, ylabel, series, cut, log=True),
        )

    moe = studies.moe
    moe_fig = spread(
        "moe",
        "MoE: active over total parameters",
        "active / total",
        [("MoE cards", moe.active_ratio)],
    )
    moe_rows = [
        [
            cut.short_label(a.year),
            f"{a.families} · {a.cards}",
            pct(a.median),
            f"{pct(a.q1)}–{pct(a.q3)}",
            num(e.median),
            num(k.median),
        ]
        for a, e, k in zip(moe.active_ratio, moe.experts, moe.top_k, strict=False)
    ]
    kv_fig = spread(
        "kv-cache",
        "KV cache per token, decoders of 5B or more",
        "bytes per token",
        [("decoders ≥ 5B", studies.kv_cache)],
    )
    context_fig = spread(
        "context",
        "Context length and RoPE base",
        "tokens / theta",
        [("context length", studies.context), ("RoPE theta", studies.rope_base)],
    )
    head_fig = spread("head-dim", "Head dimension", "head_dim", [("head_dim", studies.head_dim)])
    mix_fig = fig("analyses-layer-mix", lambda: figures.layer_mix_figure(studies.layer_mix, cut))
    tokens_fig = spread(
        "tokens-per-parameter",
        "Training tokens per parameter",
        "tokens / parameter",
        [("sourced tokens", studies.tokens_per_parameter)],
    )
    choices = [f.choice for f in studies.field_adoption]
    lag_fig = fig(
        "analyses-adoption-lag",
        lambda: figures.adoption_lag_figure(studies.adoption_lag, choices),
    )
    conc_fig = fig(
        "analyses-concentration",
        lambda: figures.concentration_figure(studies.concentration, cut),
    )

    def with_figure(path: str | None, alt: str) -> str:
        return render.figure(path, alt) if path else ""

    def ratio(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    mix_rows = [
        [
            cut.short_label(m.year),
            f"{m.families} · {m.cards}",
            f"{100 * m.local_share:.0f}%",
            ratio(m.local_to_global),
            f"{100 * m.linear_share:.0f}%",
            ratio(m.linear_to_full),
        ]
        for m in studies.layer_mix
    ]
    field_rows = [
        [f.choice, str(f.first_year or "–"), str(f.majority_year or "–")]
        for f in studies.field_adoption
    ]
    lag_rows = [
        [o.organization, str(o.cards)]
        + ["–" if o.first[c] is None else f"{o.first[c]} (+{o.lag[c]})" for c in choices]
        for o in studies.adoption_lag
    ]
    conc_rows = [
        [
            cut.short_label(c.year),
            str(c.families),
            str(c.cards),
            f"`{c.largest}`",
            f"{c.largest_cards} ({100 * c.share:.0f}%)",
        ]
        for c in studies.concentration
    ]
    return _page(
        data,
        "Analyses: sparsity, caches, context, heads, layer mixing, training length, "
        "adoption lag and concentration",
        _scope(data),
        "Each section is a table and a figure, computed from the catalogue. " + caption,
        "## MoE sparsity by year\n\nMoE cards only: active over total parameters (exact "
        "counts, experts included), routed experts per MoE layer and experts per token "
        "(top-k), family-weighted medians.\n\n"
        + render.table(
            ["year", "n families · n cards", "active / total", "middle half", "experts", "top-k"],
            moe_rows,
            right=(2, 3, 4, 5),
        )
        + "\n\n"
        + with_figure(moe_fig, "MoE active over total parameters by year"),
        "## KV-cache bytes per token by year\n\nDecoder-only cards of "
        f"{an.KV_FROM_PARAMS / 1e9:.0f}B exact parameters or more, the catalogue's KV-cache "
        "definition: one sequence of 8,192 tokens, 2 bytes an element (local layers only "
        "their window, MLA its latent), over the tokens.\n\n"
        + _spread_table(studies.kv_cache, cut, "per token", kib)
        + "\n\n"
        + with_figure(kv_fig, "KV cache per token by year"),
        "## Context length and RoPE base by year\n\nThe released context length of every "
        "card, and RoPE's theta (the global layers' base) of the cards that rotate.\n\n"
        "Context length:\n\n"
        + _spread_table(studies.context, cut, "tokens", num)
        + "\n\nRoPE base:\n\n"
        + _spread_table(studies.rope_base, cut, "theta", num)
        + "\n\n"
        + with_figure(context_fig, "Context length and RoPE base by year"),
        "## Head dimension by year\n\n"
        + _spread_table(studies.head_dim, cut, "head_dim", num)
        + "\n\n"
        + with_figure(head_fig, "Head dimension by year"),
        "## Local:global and linear:full layers by year\n\nThe family-weighted share of "
        "cards whose stack mixes local (sliding-window or chunked) with global attention "
        "layers, and among them the median ratio of local to global layers; likewise for "
        "recurrent or linear mixers beside attention layers (hybrids).\n\n"
        + render.table(
            [
                "year",
                "n families · n cards",
                "local + global",
                "local:global",
                "recurrent + attention",
                "recurrent:attention",
            ],
            mix_rows,
            right=(2, 3, 4, 5),
        )
        + "\n\n"
        + with_figure(mix_fig, "Stacks that mix layer kinds by year"),
        "## Training tokens per parameter by year\n\nWhere the card's training tokens are "
        "sourced, over its exact parameter count.\n\n"
        + _spread_table(studies.tokens_per_parameter, cut, "tokens per parameter", num)
        + "\n\n"
        + with_figure(tokens_fig, "Training tokens per parameter by year"),
        "## Adoption lag by organization\n\nThe field's first card with each choice and the "
        "first year its family-weighted share passed one half:\n\n"
        + render.table(["choice", "first use", "majority"], field_rows)
        + f"\n\nEach organization with {an.LAG_MIN_CARDS} or more cards: the year of its "
        "first card with the choice and, in brackets, the years after the field's first "
        "use (– never).\n\n"
        + render.table(["organization", "cards", *choices], lag_rows)
        + "\n\n"
        + with_figure(lag_fig, "Adoption lag by organization"),
        "## Concentration by year\n\nHow much of a year's cards its largest family "
        "published: the reason the trends count families, not cards.\n\n"
        + render.table(
            ["year", "families", "cards", "largest family", "its cards"], conc_rows, right=(1, 2)
        )
        + "\n\n"
        + with_figure(conc_fig, "Share of each year's cards from its largest family"),
    )


def _families_page(data: ReportData) -> str:
    roots = families.lines(data.frame)
    alone = families.unlinked(data.frame)
    sections = [
        _scope(data),
        "A line is a tree of cards linked by their `lineage` field: the card a model "
        "descends from, trained from its weights (Code Llama from Llama 2) or the previous "
        "release of the same line (Llama 3.1 from Llama 3), as a cited source states. Each "
        "table starts at the line's root; every other row follows the card it descends from "
        "(*from*), and *changed* lists the design choices that differ from that card (an "
        "unknown value is not a change).",
        f"{len(alone)} released cards name no lineage and no card descends from them: each "
        "is its own line, with nothing to compare (their families: "
        f"{render.family_counts(data.frame.loc[alone, 'family'])}).",
    ]
    if not roots:
        sections.append("No line has two cards in the catalogue yet.")
    for root in roots:
        title = f"## {data.frame.at[root, 'name']} (`{root}`)"
        sections += [title, render.evolution_table(families.evolution(data.frame, root))]
    return _page(data, "Lineages: how models changed from the card they descend from", *sections)


def _claims_page(data: ReportData) -> str:
    return _page(
        data,
        "Claims of the lecture, checked against the catalogue",
        _scope(data),
        "Each claim is split into parts: its general statement and the models it names. All "
        "checkable parts hold: *holds*; all fail: *contradicted*; some of each: *partly*; "
        "nothing checkable: *not checkable yet*. The lecture is dated "
        f"{claims.LECTURE_DATE} ({claims.LECTURE_DATE_REASON}). Each claim states the "
        "release dates it is judged on and its scope; shares and medians are "
        f"{claims.COUNTED} (a 'family-year'), so a family that published many sizes counts "
        "once. The shape rules (claims 6, 9 and 10) are judged per era "
        f"({', '.join(label for label, _, _ in claims.ERAS)}) and per size band, the pooled "
        "figure given only as context. Thresholds: 'nearly all' is at least "
        f"{claims.NEARLY_ALL:.0%}, 'most' more than {claims.MOST:.0%}, 'modern' from "
        f"{claims.MODERN_SINCE} on, 'early' up to {claims.EARLY_UNTIL}, 'the last year' the "
        f"{claims.RECENT_DAYS} days up to the lecture, 'about x' within "
        f"{claims.ABOUT:.0%} unless a claim says otherwise. Where the sourced values disagree "
        "with the lecture, the section says so and names the models.\n\n"
        f"{render.verdict_counts(data.claims)}.",
        render.claims_summary(data.claims),
        *[render.claim_section(r) for r in data.claims],
    )


def stale_files(catalogue: Catalogue, output: Path) -> list[str]:
    """The files under ``output`` that differ from a fresh build (missing, changed, extra):
    the rendered bytes compared with the disk, nothing written."""
    expected = render_reports(compute(catalogue))
    actual = (
        {p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file()}
        if output.is_dir()
        else set()
    )
    owned = {p for p in actual if PurePosixPath(p).parent == PurePosixPath(FIGURES)}
    owned |= {p for p in actual if p in {*PAGES, MANIFEST}}
    expected[MANIFEST] = manifest_bytes(expected)
    stale = set(expected) ^ owned
    stale |= {p for p in set(expected) & owned if not _same_bytes(output / p, expected[p])}
    return sorted(stale)


def _same_bytes(path: Path, content: bytes) -> bool:
    try:
        return path.stat().st_size == len(content) and path.read_bytes() == content
    except OSError:
        return False
