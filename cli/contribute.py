"""Contributing commands: new (a card from flags or prompts), import-hf (from a config.json).

Both build the card as data, validate it with the catalogue's own loader and insert it in
id order with archdb.writer, which leaves every other byte of the catalogue as it was.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from archdb import query
from archdb.catalogue import CatalogueLocationError, resolve_catalogue
from archdb.query import FieldSpec, QueryError
from archdb.schema import UNKNOWN_WHEN_NULL, SourceKind
from archdb.table import FIELD_COLUMNS

from .common import (
    EXIT_DATA,
    EXIT_USAGE,
    CataloguePath,
    console,
    err_console,
    fail,
    load,
    print_problems,
)
from .query import complete_card, user_errors

DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print the card's YAML instead of adding it.")
]
Interactive = Annotated[
    bool | None,
    typer.Option(
        "--interactive/--no-interactive",
        help="Prompt for what the flags leave out (default: when stdin is a terminal).",
    ),
]


@contextmanager
def contribute_errors() -> Iterator[None]:
    """The library's write and import errors become a message and exit code 1."""
    from archdb.hf_import import HFImportError
    from archdb.writer import WriteError

    with user_errors():
        try:
            yield
        except WriteError as exc:
            print_problems(exc.problems)
            raise typer.Exit(EXIT_DATA) from None
        except HFImportError as exc:
            raise fail(str(exc), EXIT_DATA) from None
        except CatalogueLocationError as exc:
            raise fail(str(exc), EXIT_USAGE) from None


def _interactive(flag: bool | None) -> bool:
    return sys.stdin.isatty() if flag is None else flag


# --- values typed by a contributor ----------------------------------------------------


def _card_field(name: str) -> FieldSpec:
    spec = query.resolve_field(name)
    if spec.name not in FIELD_COLUMNS:
        raise QueryError(f"{name} is derived, not a card field: it cannot be set")
    return spec


def _card_value(spec: FieldSpec, text: str) -> Any:
    """Text -> the value a card holds (lists of kinds, floats for float fields)."""
    if spec.kind == "list":
        item = FieldSpec(spec.name, "enum" if spec.choices else "str", spec.choices)
        return [query.parse_value(i, item) for i in text.strip("[]() ").split(",") if i.strip()]
    value = query.parse_value(text, spec)
    return float(value) if spec.kind == "float" and value is not None else value


def _assignments(pairs: list[str], what: str) -> list[tuple[FieldSpec, str]]:
    out = []
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep:
            raise QueryError(f"{what} {pair!r}: write FIELD=VALUE, e.g. norm.type=rmsnorm")
        out.append((_card_field(name), text))
    return out


def _prompt(spec: FieldSpec, current: Any, required: bool = False) -> Any:
    """Ask for one field until the answer parses; blank keeps the current value (or null)."""
    label = spec.name.removeprefix("architecture.")
    if spec.choices:
        label += f" ({', '.join(spec.choices)})"
    shown = "" if current is None else _show(current)
    while True:
        text = typer.prompt(label, default=shown, show_default=bool(shown))
        if not text.strip():
            if required:
                err_console.print(f"{label} is required")
                continue
            return None
        try:
            return _card_value(spec, text)
        except QueryError as exc:
            err_console.print(f"[red]{exc}[/]", highlight=False)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --- new ----------------------------------------------------------------------------

_IDENTITY = ("id", "name", "family", "organization", "release_date", "open_weights")
_CORE = (
    "architecture.kind", "architecture.d_model", "architecture.n_layers",
    "architecture.vocab_size", "architecture.context_length", "architecture.norm.type",
    "architecture.norm.position", "architecture.norm.affine", "architecture.norm.final",
    "architecture.attention.variant", "architecture.attention.n_heads",
    "architecture.attention.n_kv_heads", "architecture.attention.head_dim",
    "architecture.attention.qk_norm", "architecture.attention.logit_softcap",
    "architecture.attention.layer_pattern", "architecture.attention.sliding_window",
    "architecture.position.type", "architecture.position.rope_theta",
    "architecture.mlp.activation", "architecture.mlp.d_ff", "architecture.bias.qkv",
    "architecture.bias.attn_out", "architecture.bias.mlp", "architecture.parallel_layers",
    "architecture.tied_embeddings", "architecture.final_logit_softcap", "params_published",
)  # fmt: skip


def _applies(data: dict[str, Any], path: str) -> bool:
    """Fields that only make sense given other answers (a window needs local layers)."""
    from archdb.writer import get_path

    if path == "architecture.attention.sliding_window":
        pattern = get_path(data, "architecture.attention.layer_pattern") or []
        return bool({"local", "chunked"} & set(pattern))
    if path == "architecture.position.rope_theta":
        return get_path(data, "architecture.position.type") == "rope"
    return True


def _ask_everything(data: dict[str, Any]) -> None:
    from archdb.writer import get_path, set_path

    fields = query.fields()
    for path in _IDENTITY:
        set_path(data, path, _prompt(fields[path], get_path(data, path), required=True))
    for path in _CORE:
        if not _applies(data, path):
            continue
        value = _prompt(fields[path], get_path(data, path))
        set_path(data, path, value)
        if value is None and path in UNKNOWN_WHEN_NULL and path not in data["notes"]:
            note = typer.prompt(f"why is {path} unknown? (a note)", default="", show_default=False)
            if note.strip():
                data["notes"][path] = note.strip()


def _guess_kind(url: str) -> str:
    if "arxiv.org" in url:
        return SourceKind.PAPER.value
    if url.endswith(("config.json", "params.json")):
        return SourceKind.CONFIG.value
    if "huggingface.co" in url:
        return SourceKind.MODEL_CARD.value
    return SourceKind.CODE.value if "github.com" in url else SourceKind.BLOG.value


def _source(url: str, kind: str | None, title: str | None, locator: str | None,
            supports: str) -> dict[str, Any]:  # fmt: skip
    kind = kind or _guess_kind(url)
    if kind not in {k.value for k in SourceKind}:
        raise QueryError(
            f"source kind {kind!r}: choose from {', '.join(k.value for k in SourceKind)}"
        )
    return {
        "kind": kind,
        "title": title or url.rstrip("/").rsplit("/", 1)[-1],
        "url": url,
        "locator": locator,
        "supports": [s.strip() for s in supports.split(",") if s.strip()],
    }


def _ask_source() -> dict[str, Any]:
    url = typer.prompt("source URL (paper, official config or model card)")
    kinds = ", ".join(k.value for k in SourceKind)
    kind = typer.prompt(f"source kind ({kinds})", default=_guess_kind(url))
    title = typer.prompt("source title", default=url.rstrip("/").rsplit("/", 1)[-1])
    locator = typer.prompt("where in it (table, section, file)", default="", show_default=False)
    supports = typer.prompt("card fields it supports, comma-separated", default="architecture")
    return _source(url, kind, title, locator or None, supports)


def new(
    card_id: Annotated[str | None, typer.Option("--id", help="Slug: family and size.")] = None,
    name: Annotated[str | None, typer.Option(help="Display name, e.g. 'Llama 2 7B'.")] = None,
    family: Annotated[str | None, typer.Option(help="Family slug, e.g. llama-2.")] = None,
    organization: Annotated[str | None, typer.Option(help="Who released it.")] = None,
    release_date: Annotated[str | None, typer.Option(help="YYYY-MM-DD.")] = None,
    open_weights: Annotated[bool | None, typer.Option("--open-weights/--closed-weights")] = None,
    params: Annotated[
        str | None, typer.Option(help="Published parameter count: 7B, 175e9.")
    ] = None,
    like: Annotated[
        str | None,
        typer.Option(help="Start from this card's architecture.", autocompletion=complete_card),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="FIELD=VALUE for any card field (repeatable), e.g. norm.type=rmsnorm."
        ),
    ] = None,
    note: Annotated[
        list[str] | None,
        typer.Option(
            help="FIELD=TEXT: why a value is null, or where sources disagree (repeatable)."
        ),
    ] = None,
    source: Annotated[str | None, typer.Option(help="Source URL.")] = None,
    source_kind: Annotated[
        str | None,
        typer.Option(help="paper, config, model-card, code, blog (default: guessed from the URL)."),
    ] = None,
    source_title: Annotated[str | None, typer.Option(help="Paper title or file name.")] = None,
    source_locator: Annotated[
        str | None, typer.Option(help="Table 2, Section 3, config.json.")
    ] = None,
    supports: Annotated[
        str, typer.Option(help="Card fields the source gives, comma-separated.")
    ] = "architecture",
    interactive: Interactive = None,
    dry_run: DryRun = False,
    catalogue: CataloguePath = None,
) -> None:
    """Add a new card: from flags, from prompts offering each vocabulary, or both.

    Every value needs a source; a null core value needs a note saying why.
    The card is validated, then inserted into the catalogue in id order;
    nothing else in the file changes. `archdb fields` lists every field
    and its allowed values.

    Examples:
      archdb new                         (prompts for every field)
      archdb new --like llama-2-7b --id llama-2-13b --name 'Llama 2 13B'
        --family llama-2 --organization 'Meta AI' --open-weights
        --release-date 2023-07-18 --params 13B --set d_model=5120
        --set n_layers=40 --set heads=40 --set kv_heads=40 --set d_ff=13824
        --source https://arxiv.org/abs/2307.09288 --source-locator 'Table 1'
        --no-interactive
      archdb new ... --dry-run           (print the YAML, write nothing)
    """
    from archdb.writer import card_data, insert_card, render_card, set_path, skeleton

    with contribute_errors():
        data = skeleton()
        if like:
            data["architecture"] = card_data(load(catalogue).resolve(like))["architecture"]
        identity = {"id": card_id, "name": name, "family": family,
                    "organization": organization, "release_date": release_date,
                    "open_weights": open_weights}  # fmt: skip
        for path, value in identity.items():
            if value is not None:
                set_path(data, path, value)
        if params is not None:
            set_path(data, "params_published", _card_value(_card_field("params"), params))
        for spec, text in _assignments(set_ or [], "--set"):
            set_path(data, spec.name, _card_value(spec, text))
        for spec, text in _assignments(note or [], "--note"):
            data["notes"][spec.name] = text.strip()
        if source:
            data["sources"].append(_source(source, source_kind, source_title, source_locator,
                                           supports))  # fmt: skip
        if _interactive(interactive):
            _ask_everything(data)
            if not data["sources"]:
                data["sources"].append(_ask_source())
        _finish(data, render_card, insert_card, catalogue, dry_run)


def _finish(
    data: dict[str, Any], render: Any, insert: Any, catalogue: Path | None, dry_run: bool
) -> None:
    from archdb.writer import validate_card

    card = validate_card(_without_empty(data))
    if dry_run:
        sys.stdout.write(render(card))
        return
    added = insert(resolve_catalogue(catalogue, writing=True), card)
    console.print(
        f"[green]✓[/] added {card.id} to {added.path}:{added.line}; check it with "
        f"`archdb show {card.id}` and `git diff {added.path}`",
        highlight=False,
    )


def _without_empty(data: dict[str, Any]) -> dict[str, Any]:
    """Drop an empty notes map: the card file leaves out what is at its default."""
    return {k: v for k, v in data.items() if not (k == "notes" and not v)}


# --- import-hf ----------------------------------------------------------------------


def import_hf(
    config_path: Annotated[
        Path, typer.Argument(metavar="PATH", help="A local config.json.", dir_okay=False)
    ],
    source: Annotated[str, typer.Option(help="URL of the released config.json (required).")],
    card_id: Annotated[
        str | None, typer.Option("--id", help="Card id (default: from the URL).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Display name (default: from the URL).")] = None,
    family: Annotated[
        str | None, typer.Option(help="Family slug (default: the id up to its size).")
    ] = None,
    organization: Annotated[str | None, typer.Option(help="Who released it.")] = None,
    release_date: Annotated[str | None, typer.Option(help="YYYY-MM-DD of the release.")] = None,
    params: Annotated[str | None, typer.Option(help="Published parameter count: 7B.")] = None,
    open_weights: Annotated[bool, typer.Option("--open-weights/--closed-weights")] = True,
    interactive: Interactive = None,
    dry_run: DryRun = False,
    catalogue: CataloguePath = None,
) -> None:
    """Import a card from a Hugging Face config.json (Llama, Gemma, Qwen, ...).

    Sizes come from the config; the choices transformers keeps in code
    (norm placement, gated MLP, parallel blocks, biases) come from the
    model family, cited as a second source. Config keys with no card field
    are listed, never dropped silently.

    Examples:
      archdb import-hf config.json --organization 'Google DeepMind'
        --source https://huggingface.co/google/gemma-2-9b/blob/main/config.json
        --release-date 2024-06-27 --params 9B
      archdb import-hf config.json --source URL --id gemma-2-9b --dry-run
    """
    from archdb.hf_import import Identity, guess_identity, import_config
    from archdb.writer import insert_card, render_card

    with contribute_errors():
        config = _read_config(config_path)
        guessed = guess_identity(config, source)
        answers = {"id": card_id or guessed.get("id"), "name": name or guessed.get("name"),
                   "family": family or guessed.get("family"), "organization": organization,
                   "release_date": release_date}  # fmt: skip
        _complete_identity(answers, _interactive(interactive))
        count = _card_value(_card_field("params"), params) if params else None
        identity = Identity(**answers, open_weights=open_weights, params_published=count)
        imported = import_config(config, source_url=source, identity=identity)
        _report_import(imported)
        _finish(imported.card, render_card, insert_card, catalogue, dry_run)


def _read_config(path: Path) -> dict[str, Any]:
    from archdb.hf_import import read_config  # bounded size, digits and nesting

    return read_config(path)


def _complete_identity(answers: dict[str, Any], interactive: bool) -> None:
    missing = [k for k, v in answers.items() if not v]
    if missing and not interactive:
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in missing)
        raise fail(f"the config does not say who released the model or when: give {flags}",
                   EXIT_USAGE)  # fmt: skip
    fields = query.fields()
    for key, value in answers.items():
        if interactive and not value:
            answers[key] = _prompt(fields[key], None, required=True)
    if isinstance(answers["release_date"], str):
        try:
            answers["release_date"] = dt.date.fromisoformat(answers["release_date"])
        except ValueError:
            raise fail(f"--release-date {answers['release_date']!r}: use YYYY-MM-DD",
                       EXIT_USAGE) from None  # fmt: skip


def _report_import(imported: Any) -> None:
    """What came from where, on stderr (stdout stays clean for --dry-run's YAML)."""
    say = err_console.print
    say(f"[bold]{imported.model_type}[/]: {len(imported.from_config)} fields from config.json, "
        f"{len(imported.from_family)} from the family's transformers implementation",
        highlight=False)  # fmt: skip
    if imported.from_family:
        say(
            "  from the family: "
            + ", ".join(p.removeprefix("architecture.") for p in imported.from_family),
            highlight=False,
        )
    for key, value in imported.unmapped.items():
        say(f"  [yellow]not mapped[/]: {key} = {value}", highlight=False, soft_wrap=True)
    for path in imported.unknown:
        say(f"  [yellow]unknown[/]: {path} (null, with a note)", highlight=False)
    if imported.ignored:
        say(
            f"  ignored (no architecture): {', '.join(imported.ignored)}",
            highlight=False,
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command()(new)
    from archdb.hf_import import supported_model_types  # plain Python: cheap to import

    types = ", ".join(supported_model_types())
    app.command("import-hf", epilog=f"Supported model_type values: {types}.")(import_hf)
