"""A released config.json from the Hugging Face Hub, for ``archdb import-hf ORG/MODEL[@REV]``:
read through huggingface_hub, online, or from its local cache when offline, and named by
the commit it was read at, so the card's source URL points at exactly those bytes.

This module only fetches: it hands a local file to the importer (``archdb_hf.importer``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from archdb.errors import ArchdbError, UsageError

HUB = "https://huggingface.co"
FILENAME = "config.json"
# The Hub's repository names: an owner and a name, letters, digits, '-', '_' and '.'
# (no '--' or '..', no leading or trailing '-' or '.'); 96 characters each at most.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9])?"
REPO_ID = re.compile(rf"{_NAME}/{_NAME}")
# A branch, a tag or a commit: git's ref characters, bounded.
REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]{0,199}")
COMMIT = re.compile(r"[0-9a-f]{40}")


class HubError(ArchdbError):
    """The config could not be read from the Hub nor from its cache (exit 1)."""


@dataclass(frozen=True)
class HubConfig:
    """A config.json read from the Hub (or its cache) at one commit."""

    repo_id: str
    commit: str  # the 40-hex commit the revision resolved to
    path: Path  # the file, in the Hugging Face cache
    offline: bool  # read from the cache without asking the Hub

    @property
    def url(self) -> str:
        """The config's page on the Hub, pinned to the commit."""
        return f"{HUB}/{self.repo_id}/blob/{self.commit}/{FILENAME}"


def parse_reference(text: str) -> tuple[str, str | None]:
    """ORG/MODEL[@REVISION] -> (repo id, revision or None); UsageError when malformed."""
    repo_id, at, revision = text.partition("@")
    shown = text[:200].encode("unicode_escape").decode("ascii")
    if REPO_ID.fullmatch(repo_id) is None or "--" in repo_id or ".." in repo_id:
        raise UsageError(
            f"{shown!r} is neither a local file nor a Hub model ORG/MODEL[@REVISION] "
            "(letters, digits, '-', '_' and '.'; e.g. microsoft/phi-2@main)"
        )
    if at and (REVISION.fullmatch(revision) is None or ".." in revision):
        raise UsageError(
            f"revision {revision[:200].encode('unicode_escape').decode('ascii')!r}: give a "
            "branch, a tag or a commit (letters, digits, '-', '_', '.', '/')"
        )
    return repo_id, revision or None


def offline_requested() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub reads it, read now (the library reads it once,
    when first imported)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def fetch_config(reference: str) -> HubConfig:
    """config.json of ORG/MODEL[@REVISION]: from the Hub, or from the local cache when
    HF_HUB_OFFLINE is set or the Hub cannot be reached."""
    repo_id, revision = parse_reference(reference)
    if offline_requested():
        return _download(repo_id, revision, offline=True)
    try:
        return _download(repo_id, revision, offline=False)
    except _Unreachable:
        return _download(repo_id, revision, offline=True)


class _Unreachable(Exception):
    """The Hub could not be asked (no network, offline mode): try the cache."""


def _download(repo_id: str, revision: str | None, offline: bool) -> HubConfig:
    from huggingface_hub import errors, hf_hub_download

    name = f"{repo_id}@{revision or 'main'}"
    cache = os.environ.get("HF_HUB_CACHE") or None  # read now, as HF_HUB_OFFLINE
    try:
        path = Path(
            hf_hub_download(
                repo_id, FILENAME, revision=revision, cache_dir=cache, local_files_only=offline
            )
        )
    except errors.GatedRepoError:
        raise HubError(
            f"{name}: a gated repository: accept its terms on {HUB}/{repo_id} and log in "
            "(`hf auth login`), or download config.json and give its path with --source"
        ) from None
    except errors.RepositoryNotFoundError:
        raise HubError(f"{name}: no such model on the Hub (or a private one)") from None
    except errors.RevisionNotFoundError:
        raise HubError(f"{name}: the model has no revision {revision!r}") from None
    except errors.LocalEntryNotFoundError:  # the Hub not asked or not reached, not cached
        where = cache or "the default Hugging Face cache"
        raise HubError(
            f"{name}: {FILENAME} is not in the local cache ({where}) and the Hub could not "
            "be asked (offline, or unreachable): connect, or download it there first"
        ) from None
    except errors.EntryNotFoundError:
        raise HubError(f"{name}: the repository has no {FILENAME}") from None
    except errors.HfHubHTTPError as exc:
        raise HubError(f"{name}: the Hub answered {_brief(exc)}") from None
    except (errors.OfflineModeIsEnabled, OSError, errors.HTTPError) as exc:  # the network's
        if offline:
            raise HubError(f"{name}: the local cache could not be read: {_brief(exc)}") from None
        raise _Unreachable from exc
    return HubConfig(repo_id, _commit_of(path, name), path, offline)


def _commit_of(path: Path, name: str) -> str:
    """The commit a cached file belongs to: its snapshot folder's name."""
    commit = path.parent.name
    if COMMIT.fullmatch(commit) is None:
        raise HubError(f"{name}: the cache holds {FILENAME} outside a commit's snapshot: {path}")
    return commit


def _brief(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]
