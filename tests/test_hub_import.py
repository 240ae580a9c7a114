"""`archdb import-hf ORG/MODEL[@REVISION]`: the config read through huggingface_hub, here
always from a prepared local cache (HF_HUB_OFFLINE: no test touches the network), and the
source URL pinned to the commit read."""

from __future__ import annotations

from pathlib import Path

import pytest

from archdb.catalogue import load_catalogue
from archdb_hf import hub
from tests.conftest import card_text, run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "hf" / "phi-2.json"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OLDER = "fedcba9876543210fedcba9876543210fedcba98"
PINNED = f"https://huggingface.co/microsoft/phi-2/blob/{COMMIT}/config.json"
IDENTITY = ["--organization", "Microsoft", "--release-date", "2023-12-12", "--params", "2.7B",
            "--no-interactive"]  # fmt: skip


def _cache_config(cache: Path, repo_id: str, commit: str, text: str, *refs: str) -> None:
    """One config.json laid out as huggingface_hub's cache keeps it: the file under its
    commit's snapshot, and each ref (a branch or tag) naming that commit."""
    folder = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(text, encoding="utf-8")
    for ref in refs:
        (folder / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (folder / "refs" / ref).write_text(commit)


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """phi-2's config at COMMIT (main) and an older one at OLDER (tag v0), offline."""
    cache = tmp_path / "hub"
    config = FIXTURE.read_text(encoding="utf-8")
    _cache_config(cache, "microsoft/phi-2", COMMIT, config, "main")
    _cache_config(
        cache,
        "microsoft/phi-2",
        OLDER,
        config.replace('"num_hidden_layers": 32', '"num_hidden_layers": 24'),
        "v0",
    )
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.fixture
def small(write_catalogue) -> Path:
    return write_catalogue(card_text("toy-1b"))


def test_import_hf_reads_the_cached_config_and_pins_the_commit(hub_cache, small) -> None:
    result = run_cli("import-hf", "microsoft/phi-2", *IDENTITY, "-C", str(small))
    assert result.returncode == 0, result.stderr
    assert f"microsoft/phi-2: config.json at commit {COMMIT} (offline" in result.stderr
    card = load_catalogue(small).get("phi-2")
    source = card.sources[0]
    assert (source.url, source.kind.value, source.model_type) == (PINNED, "config", "phi")
    assert (card.architecture.n_layers, card.architecture.d_model) == (32, 2560)
    assert card.name == "phi 2"  # guessed from the repository's name


@pytest.mark.parametrize(
    ("revision", "commit", "layers"),
    [("main", COMMIT, 32), (COMMIT, COMMIT, 32), ("v0", OLDER, 24), (OLDER, OLDER, 24)],
)
def test_a_revision_is_a_branch_a_tag_or_a_commit(hub_cache, revision, commit, layers) -> None:
    fetched = hub.fetch_config(f"microsoft/phi-2@{revision}")
    assert (fetched.commit, fetched.offline) == (commit, True)
    assert fetched.url == f"https://huggingface.co/microsoft/phi-2/blob/{commit}/config.json"
    assert f'"num_hidden_layers": {layers}' in fetched.path.read_text()


@pytest.mark.parametrize(
    ("ref", "code", "message"),
    [
        ("microsoft/phi-2@v9", 1, "microsoft/phi-2@v9: config.json is not in the local cache"),
        ("microsoft/phi-3", 1, "microsoft/phi-3@main: config.json is not in the local cache"),
        ("not a model", 2, "'not a model' is neither a local file nor a Hub model"),
        ("org/--model", 2, "is neither a local file nor a Hub model ORG/MODEL[@REVISION]"),
        ("../etc/passwd", 2, "is neither a local file nor a Hub model"),
        ("a/b@x;rm -rf", 2, "revision 'x;rm -rf': give a branch, a tag or a commit"),
        ("a/b@../../x", 2, "give a branch, a tag or a commit"),
        ("a\x1b[31m/b", 2, "argument 'a\\x1b[31m/b' holds a control character"),
        ("o/" + "m" * 5000, 2, "is neither a local file nor a Hub model"),
    ],
)
def test_a_bad_reference_is_a_clear_error(hub_cache, small, ref, code, message) -> None:
    result = run_cli("import-hf", ref, *IDENTITY, "-C", str(small))
    assert result.returncode == code, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert "\x1b" not in result.stderr
    assert load_catalogue(small).ids() == ["toy-1b"]


def test_a_local_file_still_needs_its_source(hub_cache, small, tmp_path) -> None:
    local = tmp_path / "config.json"
    local.write_bytes(FIXTURE.read_bytes())
    result = run_cli("import-hf", str(local), *IDENTITY, "-C", str(small))
    assert result.returncode == 2 and "is a local file: give --source" in result.stderr
    given = run_cli("import-hf", str(local), "--source", PINNED, *IDENTITY, "-C", str(small))
    assert given.returncode == 0, given.stderr
    assert load_catalogue(small).get("phi-2").sources[0].url == PINNED


def test_an_unreachable_hub_falls_back_to_the_cache(hub_cache, monkeypatch) -> None:
    """Online (HF_HUB_OFFLINE unset), the Hub cannot be reached: the cache answers."""
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE")
    download = huggingface_hub.hf_hub_download
    asked: list[bool] = []

    def no_network(*args, local_files_only: bool = False, **kwargs):
        asked.append(local_files_only)
        if not local_files_only:
            raise OSError("Name or service not known")
        return download(*args, local_files_only=True, **kwargs)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_network)
    fetched = hub.fetch_config("microsoft/phi-2")
    assert asked == [False, True] and (fetched.commit, fetched.offline) == (COMMIT, True)


def test_the_hubs_answers_become_clear_errors(hub_cache, monkeypatch) -> None:
    import huggingface_hub
    from huggingface_hub import errors

    monkeypatch.delenv("HF_HUB_OFFLINE")

    def answer(kind: type[Exception]):
        def download(*args, **kwargs):
            error = kind.__new__(kind)
            Exception.__init__(error, "404 Client Error")
            raise error

        return download

    cases = [
        (errors.RepositoryNotFoundError, "microsoft/phi-2@main: no such model on the Hub"),
        (errors.GatedRepoError, "a gated repository: accept its terms"),
        (errors.RevisionNotFoundError, "the model has no revision"),
        (errors.RemoteEntryNotFoundError, "the repository has no config.json"),
    ]
    for kind, message in cases:
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", answer(kind))
        with pytest.raises(hub.HubError, match=message):
            hub.fetch_config("microsoft/phi-2")
