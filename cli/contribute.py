"""Contributing commands: new (a card from flags or prompts), import-hf (from a config.json).

Both build the card as data, validate it with the catalogue's own loader and insert it in
id order with archdb.writer, which leaves every other byte of the catalogue as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from archdb import query
from archdb.fields import prompted
from archdb.inheritance import default_supports, inherit
from archdb.locations import resolve_catalogue
from archdb.query import FieldSpec, QueryError
from archdb.schema import UNKNOWN_WHEN_NULL, WINDOW_PATH, Card, SourceKind, sourced_paths
from archdb.table import FIELD_COLUMNS

from .common import (
    EXIT_DATA,
    EXIT_USAGE,
    CataloguePath,
    ask,
    check_stdin,
    err_console,
    errors_as_json,
    fail,
    load,
    print_json,
    say,
    styled,
    visible,
)
from .query import complete_card, complete_field

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
JsonResult = Annotated[
    bool,
    typer.Option("--json", help="Print the result as JSON (the card added, or the errors)."),
]


def _interactive(flag: bool | None) -> bool:
    """Whether to prompt: as asked, else when stdin is a terminal; asked with stdin
    closed, a one-line error."""
    if flag:
        check_stdin()
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
        text = ask(label, default=shown, show_default=bool(shown))
        if not text.strip():
            if required:
                err_console.print(f"{label} is required")
                continue
            return None
        try:
            return _card_value(spec, text)
        except QueryError as exc:
            err_console.print(styled((str(exc), "red")))


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --- new ----------------------------------------------------------------------------

# What `new` asks, in schema order, from the fields' roles (archdb.fields): the identity
# until answered, then each core value while it applies to the answers so far.
_PROMPTED = prompted(Card)


def _ask_everything(data: dict[str, Any]) -> set[str]:
    """Prompt for every field in play; returns the paths asked (the contributor's now)."""
    from archdb.writer import get_path, set_path

    fields = query.fields()
    asked_paths = set()
    for path, asked in _PROMPTED:
        if not asked.in_play(data):
            continue
        value = _prompt(fields[path], get_path(data, path), required=asked.required)
        set_path(data, path, value)
        asked_paths.add(path)
        unknown = path in UNKNOWN_WHEN_NULL or path == WINDOW_PATH  # a window: local layers
        if value is None and unknown and path not in data["notes"]:
            note = ask(f"why is {path} unknown? (a note)", default="", show_default=False)
            if note.strip():
                data["notes"][path] = note.strip()
    return asked_paths


def _guess_kind(url: str) -> str:
    if "arxiv.org" in url:
        return SourceKind.PAPER.value
    if url.endswith(("config.json", "params.json")):
        return SourceKind.CONFIG.value
    if "huggingface.co" in url:
        return SourceKind.MODEL_CARD.value
    return SourceKind.CODE.value if "github.com" in url else SourceKind.BLOG.value


# --- card paths a note or a source may name -----------------------------------------------


def card_path(name: str) -> str:
    """A dotted path the card's notes and sources may name: a field (by path or short
    name), a group of fields (``architecture.attention``, ``attention``) or a top-level
    entry (``sources``)."""
    name = name.strip()
    for candidate in (name, f"architecture.{name}"):
        if candidate in FIELD_COLUMNS or any(c.startswith(candidate + ".") for c in FIELD_COLUMNS):
            return candidate
    if name in Card.model_fields:
        return name
    return _card_field(name).name  # a short name (heads, kv_heads), or a QueryError


def _paths(text: str) -> list[str]:
    return [card_path(p) for p in text.replace(";", ",").split(",") if p.strip()]


# --- sources ----------------------------------------------------------------------------

SOURCE_KEYS = ("url", "kind", "title", "locator", "supports")
SOURCES_FILE_LIMIT = 1_000_000  # bytes: a list of sources, not a data set


def _source(url: str, kind: str | None = None, title: str | None = None,
            locator: str | None = None, supports: str | list[str] | None = None,
            ) -> dict[str, Any]:  # fmt: skip
    """One source as card data; supports None until ``_fill_supports`` gives the default."""
    if not isinstance(url, str) or not url.strip():
        raise QueryError("a source needs a url")
    kind = kind or _guess_kind(url)
    if kind not in {k.value for k in SourceKind}:
        raise QueryError(
            f"source kind {kind!r}: choose from {', '.join(k.value for k in SourceKind)}"
        )
    listed = supports if isinstance(supports, list) or supports is None else [supports]
    return {
        "kind": kind,
        "title": title or url.rstrip("/").rsplit("/", 1)[-1],
        "url": url.strip(),
        "locator": locator or None,
        "supports": None if listed is None else [p for item in listed for p in _paths(str(item))],
    }


def _fill_supports(sources: list[dict[str, Any]], default: list[str]) -> None:
    """Sources whose flags did not say what they support support ``default``."""
    for source in sources:
        if source["supports"] is None:
            if not default:
                raise QueryError(
                    f"source {source['url']}: say which fields it gives (supports=...): "
                    "with --like and no architecture value set, every value is inherited"
                )
            source["supports"] = list(default)


def parse_source(spec: str) -> dict[str, Any]:
    """One --source: a bare URL, or KEY=VALUE items separated by ';' (keys: url, kind,
    title, locator, supports; supports lists paths separated by ',')."""
    if not any(spec.lstrip().startswith(f"{k}=") for k in SOURCE_KEYS):
        return _source(spec)
    items: dict[str, str] = {}
    for item in spec.split(";"):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in SOURCE_KEYS:
            raise QueryError(
                f"--source item {item.strip()!r}: write KEY=VALUE with KEY one of "
                f"{', '.join(SOURCE_KEYS)}, items separated by ';'"
            )
        if key in items:
            raise QueryError(f"--source gives {key} twice: {spec!r}")
        items[key] = value.strip()
    if "url" not in items:
        raise QueryError(f"--source {spec!r} has no url=")
    return _source(**items)


def read_sources(path: Path) -> list[dict[str, Any]]:
    """--sources FILE: a JSON list of {url, kind, title, locator, supports}."""
    with path.open("rb") as file:
        raw = file.read(SOURCES_FILE_LIMIT + 1)
    if len(raw) > SOURCES_FILE_LIMIT:
        raise QueryError(f"{path}: larger than {SOURCES_FILE_LIMIT:,} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise QueryError(f"{path}: not a JSON list of sources ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise QueryError(f"{path}: expected a JSON list of objects with {', '.join(SOURCE_KEYS)}")
    sources = []
    for n, entry in enumerate(data, 1):
        unknown = sorted(set(entry) - set(SOURCE_KEYS))
        if unknown:
            raise QueryError(f"{path}: source {n} has unknown keys {', '.join(unknown)}")
        if not all(isinstance(v, str | list | None) for v in entry.values()):
            raise QueryError(f"{path}: source {n}: values must be strings (supports: a list)")
        sources.append(_source(**{k: v for k, v in entry.items() if v is not None}))
    return sources


def _ask_source(default_supports: str = "architecture") -> dict[str, Any]:
    url = ask("source URL (paper, official config or model card)")
    kinds = ", ".join(k.value for k in SourceKind)
    kind = ask(f"source kind ({kinds})", default=_guess_kind(url))
    title = ask("source title", default=url.rstrip("/").rsplit("/", 1)[-1])
    locator = ask("where in it (table, section, file)", default="", show_default=False)
    supports = ask("card fields it supports, comma-separated", default=default_supports)
    return _source(url, kind, title, locator or None, supports)


def _sources_from_flags(
    specs: list[str], file: Path | None, legacy: dict[str, str | None]
) -> list[dict[str, Any]]:
    """Every source the flags give, in order: --source (repeatable), then --sources FILE.

    The single-source flags (--source-kind, --source-title, --source-locator, --supports)
    describe one bare --source URL; with several sources each says its own in KEY=VALUE form.
    """
    given = {k: v for k, v in legacy.items() if v is not None}
    if given and len(specs) != 1:
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in given)
        raise QueryError(
            f"{flags} describe one --source URL; with {len(specs)} sources write each as "
            "--source 'url=...;kind=...;title=...;locator=...;supports=a.b,c.d'"
        )
    sources = []
    for spec in specs:
        if given:
            if any(spec.lstrip().startswith(f"{k}=") for k in SOURCE_KEYS):
                raise QueryError("give a bare URL with --source-kind/--source-title/...")
            sources.append(
                _source(spec, given.get("source_kind"), given.get("source_title"),
                        given.get("source_locator"), given.get("supports"))
            )  # fmt: skip
        else:
            sources.append(parse_source(spec))
    if file is not None:
        sources += read_sources(file)
    return sources


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
        typer.Option(
            help="Start from this card's architecture: every value not given is listed and "
            "recorded as inherited, resting on this card's sources (copied with "
            "inherited_from), not on the new card's.",
            autocompletion=complete_card,
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="FIELD=VALUE for any card field (repeatable), e.g. norm.type=rmsnorm.",
            autocompletion=complete_field,
        ),
    ] = None,
    note: Annotated[
        list[str] | None,
        typer.Option(
            help="PATH=TEXT: why a value is null, or where sources disagree (repeatable); "
            "PATH is a field or a group such as architecture.attention.",
            autocompletion=complete_field,
        ),
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(
            help="A source (repeatable): a URL, or "
            "'url=URL;kind=paper;title=T;locator=Table 1;supports=architecture,training.tokens'."
        ),
    ] = None,
    sources_file: Annotated[
        Path | None,
        typer.Option(
            "--sources",
            help="A JSON file listing sources: [{url, kind, title, locator, supports}].",
            dir_okay=False,
        ),
    ] = None,
    source_kind: Annotated[
        str | None,
        typer.Option(help="paper, config, model-card, code, blog (one bare --source URL)."),
    ] = None,
    source_title: Annotated[str | None, typer.Option(help="Paper title or file name.")] = None,
    source_locator: Annotated[
        str | None, typer.Option(help="Table 2, Section 3, config.json.")
    ] = None,
    supports: Annotated[
        str | None,
        typer.Option(help="Card fields the source gives, comma-separated (default: architecture)."),
    ] = None,
    interactive: Interactive = None,
    dry_run: DryRun = False,
    as_json: JsonResult = False,
    catalogue: CataloguePath = None,
) -> None:
    """Add a new card: from flags, from prompts offering each vocabulary, or both.

    Every value needs a source; a null core value needs a note saying why.
    The card is validated, then inserted into the catalogue in id order;
    nothing else in the file changes. `archdb fields` lists every field
    and its allowed values. Several sources: repeat --source, each as
    'url=...;kind=...;title=...;locator=...;supports=a.b,c.d', or list
    them in a JSON file given with --sources.

    Examples:
      archdb new                         (prompts for every field)
      archdb new --like llama-2-7b --id llama-2-13b --name 'Llama 2 13B'
        --family llama-2 --organization 'Meta AI' --open-weights
        --release-date 2023-07-18 --params 13B --set d_model=5120
        --set n_layers=40 --set heads=40 --set kv_heads=40 --set d_ff=13824
        --source 'url=https://arxiv.org/abs/2307.09288;locator=Table 1'
        --source 'url=https://huggingface.co/meta-llama/Llama-2-13b-hf;
        kind=model-card;supports=architecture.vocab_size'   (one argument)
        --no-interactive
      archdb new ... --dry-run           (print the YAML, write nothing)
    """
    from archdb.writer import card_data, insert_card, render_card, set_path, skeleton

    errors_as_json(as_json)
    data = skeleton()
    parent = load(catalogue).resolve(like) if like else None
    if parent is not None:
        data["architecture"] = card_data(parent)["architecture"]
    given: set[str] = set()
    identity = {"id": card_id, "name": name, "family": family,
                "organization": organization, "release_date": release_date,
                "open_weights": open_weights}  # fmt: skip
    for path, value in identity.items():
        if value is not None:
            set_path(data, path, value)
    if params is not None:
        set_path(data, "params_published", _card_value(_card_field("params"), params))
        given.add("params_published")
    for spec, text in _assignments(set_ or [], "--set"):
        set_path(data, spec.name, _card_value(spec, text))
        given.add(spec.name)
    for pair in note or []:
        path, sep, text = pair.partition("=")
        if not sep:
            raise QueryError(f"--note {pair!r}: write PATH=TEXT, e.g. architecture.norm=...")
        data["notes"][card_path(path)] = text.strip()
    legacy = {"source_kind": source_kind, "source_title": source_title,
              "source_locator": source_locator, "supports": supports}  # fmt: skip
    data["sources"] += _sources_from_flags(source or [], sources_file, legacy)
    if _interactive(interactive):
        given |= _ask_everything(data)
    supports = _own_supports(parent, given)
    if _interactive(interactive) and not data["sources"]:
        data["sources"].append(_ask_source(",".join(supports) or "architecture"))
    _fill_supports(data["sources"], supports)
    inherited = inherit(parent, data, given) if parent is not None else []
    if inherited and not as_json:
        _report_inherited(parent, inherited)
    _finish(data, render_card, insert_card, catalogue, dry_run, as_json)


def _own_supports(parent: Any, given: set[str]) -> list[str]:
    """What the new card's own sources support unless their flags say: everything
    (``architecture``) for a card of its own; with --like, only what the contributor gave."""
    if parent is None:
        return ["architecture"]
    return default_supports(given, sourced_paths(parent))


def _report_inherited(parent: Any, inherited: list[Any]) -> None:
    """Every inherited value, on stderr (stdout stays clean for --dry-run's YAML)."""
    say(
        (f"{len(inherited)} value(s) inherited from {parent.id}", "yellow"),
        f", recorded as resting on its sources (copied with inherited_from: {parent.id}); "
        "give them with --set, or a source of this model's that states them:",
        err=True,
    )
    for item in inherited:
        on = "; ".join(item.sources)
        say(f"  {item.path.removeprefix('architecture.')} = {_short(_show(item.value))}",
            (f"  ({on})", "dim"), err=True)  # fmt: skip


def _finish(
    data: dict[str, Any],
    render: Any,
    insert: Any,
    catalogue: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    from archdb.writer import check_lineage, validate_card

    card = validate_card(_without_empty(data))
    if dry_run:
        if card.lineage is not None or any(s.inherited_from for s in card.sources):
            # a real insert checks them under the lock
            check_lineage(card, load(catalogue).ids(), "the catalogue")
        if as_json:
            print_json({"added": False, "card": card.model_dump(mode="json"),
                        "yaml": render(card)})  # fmt: skip
        else:
            sys.stdout.write(render(card))
        return
    added = insert(resolve_catalogue(catalogue, writing=True), card)
    if as_json:
        print_json({"added": True, "id": card.id, "path": str(added.path), "line": added.line})
        return
    say(
        ("✓ ", "green"),
        f"added {card.id} to {added.path}:{added.line}; check it with "
        f"`archdb show {card.id}` and `git diff {added.path}`",
    )


def _without_empty(data: dict[str, Any]) -> dict[str, Any]:
    """Drop an empty notes map: the card file leaves out what is at its default."""
    return {k: v for k, v in data.items() if not (k == "notes" and not v)}


# --- import-hf ----------------------------------------------------------------------


def import_hf(
    config_ref: Annotated[
        str,
        typer.Argument(
            metavar="ORG/MODEL[@REVISION] | PATH",
            help="A model on the Hugging Face Hub (its config.json is read through "
            "huggingface_hub, or from its local cache offline), or a local config.json.",
            show_default=False,
        ),
    ],
    source: Annotated[
        str | None,
        typer.Option(
            help="URL of the released config.json: required with a local file; a Hub model "
            "records its own, pinned to the commit read."
        ),
    ] = None,
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
    as_json: JsonResult = False,
    catalogue: CataloguePath = None,
) -> None:
    """Import a card from a Hugging Face config.json (Llama, Gemma, Qwen, ...).

    ORG/MODEL[@REVISION] reads the model's config.json through huggingface_hub
    (from its local cache when HF_HUB_OFFLINE is set or the Hub cannot be
    reached) and records its URL pinned to the commit read. Sizes come from
    the config; the choices transformers keeps in code
    (norm placement, gated MLP, parallel blocks, biases) come from the
    model family, cited as a second source. Config keys with no card field
    are listed, never dropped silently. An unsupported model_type names
    the closest card to start `archdb new --like` from.

    Examples:
      archdb import-hf google/gemma-2-9b --organization 'Google DeepMind'
        --release-date 2024-06-27 --params 9B
      archdb import-hf microsoft/phi-2@main --dry-run
      archdb import-hf config.json --organization 'Google DeepMind'
        --source https://huggingface.co/google/gemma-2-9b/blob/main/config.json
        --release-date 2024-06-27 --params 9B
    """
    from archdb.writer import insert_card, render_card
    from archdb_hf.importer import Identity, guess_identity

    errors_as_json(as_json)
    config_path, source = _config_and_source(config_ref, source, as_json)
    config = _read_config(config_path)
    guessed = guess_identity(config, source)
    answers = {"id": card_id or guessed.get("id"), "name": name or guessed.get("name"),
               "family": family or guessed.get("family"), "organization": organization,
               "release_date": release_date}  # fmt: skip
    _complete_identity(answers, _interactive(interactive))
    count = _card_value(_card_field("params"), params) if params else None
    identity = Identity(**answers, open_weights=open_weights, params_published=count)
    imported = _import(config, source, identity, catalogue)
    if not as_json:
        _report_import(imported)
    _finish(imported.card, render_card, insert_card, catalogue, dry_run, as_json)


def _model_type(config: dict[str, Any]) -> str:
    """The decoder's model_type (a multimodal config's text_config), for messages."""
    text = config.get("text_config")
    inner = text.get("model_type") if isinstance(text, dict) else None
    return str(inner or config.get("model_type"))[:100]


def _import(config: dict[str, Any], source: str, identity: Any, catalogue: Path) -> Any:
    from archdb_hf.importer import HFImportError, import_config, supported_model_types

    try:
        return import_config(config, source_url=source, identity=identity)
    except HFImportError:
        if _model_type(config) not in supported_model_types():
            _unsupported(config, catalogue)
        raise


def _unsupported(config: dict[str, Any], catalogue: Path) -> None:
    """An unsupported model_type: name the supported ones and the closest card to copy."""
    from archdb.similar import closest_card
    from archdb_hf.importer import supported_model_types

    match = closest_card(config, load(catalogue))
    hint = ""
    if match is not None:
        alike = f" (alike in {', '.join(match.shared)})" if match.shared else ""
        hint = f"; start from the closest card instead: archdb new --like {match.card.id}{alike}"
    raise fail(
        f"model_type {_model_type(config)!r} is not supported (supported: "
        f"{', '.join(supported_model_types())}){hint}",
        EXIT_DATA,
    )


def _config_and_source(ref: str, source: str | None, quiet: bool) -> tuple[Path, str]:
    """A local file with its --source, or a Hub model's config.json (read into the
    Hugging Face cache) with its URL pinned to the commit read."""
    from archdb_hf import hub

    if source is not None:
        return Path(ref), source
    if _is_file(ref):
        raise fail(
            f"{visible(ref[:200])} is a local file: give --source, the URL of the released "
            "config.json (or name the model as ORG/MODEL[@REVISION] to read it from the Hub)",
            EXIT_USAGE,
        )
    fetched = hub.fetch_config(ref)  # a UsageError unless ref reads as ORG/MODEL[@REV]
    if not quiet:
        cache = " (offline: from the local cache)" if fetched.offline else ""
        say(f"{fetched.repo_id}: config.json at commit {fetched.commit}{cache}", err=True)
    return fetched.path, fetched.url


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL
        return False


def _read_config(path: Path) -> dict[str, Any]:
    from archdb_hf.importer import read_config  # bounded size, digits and nesting

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
    say((str(imported.model_type), "bold"),
        f": {len(imported.from_config)} fields from config.json, "
        f"{len(imported.from_family)} from the family's transformers implementation",
        err=True)  # fmt: skip
    source = imported.card["sources"][0]
    if "model_type" in source:  # it routes the card to its transformers family later
        declared = f" ({source['model_class']})" if "model_class" in source else ""
        say(f"  recorded on the source: model_type {source['model_type']}{declared}", err=True)
    if imported.from_family:
        paths = ", ".join(p.removeprefix("architecture.") for p in imported.from_family)
        say(f"  from the family: {paths}", err=True)
    for key, value in imported.unmapped.items():
        say(("  not mapped", "yellow"), f": {key} = {_short(value)}", err=True)
    for path in imported.unknown:
        say(("  unknown", "yellow"), f": {path} (null, with a note)", err=True)
    if imported.ignored:
        say(f"  ignored (no architecture): {', '.join(imported.ignored)}", err=True)


def _short(value: Any, limit: int = 200) -> str:
    """A config value for one line: long values (a 20,000-entry list) are cut."""
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command()(new)
    from archdb_hf.importer import supported_model_types  # plain Python: cheap to import

    types = ", ".join(supported_model_types())
    app.command("import-hf", epilog=f"Supported model_type values: {types}.")(import_hf)
