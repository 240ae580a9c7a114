"""Shared test data and fixtures; tests import from here, never from each other.

- ``VALID_CARD`` / ``card_text``: a valid card as YAML text, to mutate one mistake at a time;
- ``make_card`` / ``catalogue``: synthetic Card records (a GPT-3-like base changed by
  dotted paths, notes added for every null that needs one) for table, report and claim
  tests;
- ``make_arch`` / ``CHOICES``: a small architecture (d_model 64) and one variation per
  architectural choice, for builder and measurement tests.

All three go through ``apply_changes``: one way to change test data by dotted path.
"""

from __future__ import annotations

import os

# One torch thread per pytest-xdist worker: two workers already fill the two cores, and
# oversubscribed BLAS threads made the torch-heavy tests several times slower under load.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import atexit
import copy
import datetime as dt
import functools
import gc
import itertools
import shutil
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from archdb.catalogue import Catalogue
from archdb.fields import get_path, set_path
from archdb.schema import (
    UNKNOWN_WHEN_NULL,
    Activation,
    Architecture,
    AttentionVariant,
    Card,
    NormType,
    QKNorm,
)

# Building and tracing models allocates millions of objects that live as long as a test:
# at the default thresholds (700, 10, 10) the collector ran ~9,700 times in test_measure
# and test_builder, 14 of their 89 CPU-seconds. At 50,000 it runs ~110 times, for the same
# peak memory (2.0 GB either way).
gc.set_threshold(50_000, 20, 100)


# A complete, valid card; line numbers below are relied on by the bad-card corpus.
VALID_CARD = """\
- id: toy-1b
  name: Toy 1B
  family: toy
  organization: Example Lab
  release_date: 2023-03-01
  open_weights: true
  params_published: 1_000_000_000
  training:
    tokens: 100_000_000_000
    dropout: 0.0
    weight_decay: 0.1
    z_loss: 0.0001
  architecture:
    kind: decoder-only
    d_model: 2048
    n_layers: 16
    vocab_size: 32000
    context_length: 4096
    norm: {type: rmsnorm, position: pre, affine: scale, final: true}
    attention:
      variant: softmax
      n_heads: 16
      n_kv_heads: 4
      head_dim: null
      qk_norm: none
      logit_softcap: null
      sliding_window: null
      layer_pattern: [global]
    position: {type: rope, rope_theta: 10000.0}
    mlp: {activation: swiglu, d_ff: 5632, moe: null}
    bias: {qkv: false, attn_out: false, mlp: false}
    parallel_layers: false
    tied_embeddings: false
    final_logit_softcap: null
  sources:
    - kind: config
      title: config.json
      url: https://example.org/toy-1b/config.json
      locator: config.json
      supports: [architecture]
"""


def card_text(card_id: str = "toy-1b") -> str:
    return VALID_CARD.replace("toy-1b", card_id)


# A module of tests against transformers is skipped without it, as a module-level
# pytest.importorskip("transformers") did, but collecting it imports nothing (transformers
# costs a process 1-2 s): its tests import transformers themselves.
needs_transformers = pytest.mark.skipif(
    find_spec("transformers") is None, reason="could not import 'transformers'"
)


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, input: str | None = None) -> CliResult:
    """``archdb *args`` in this process, as a shell sees it: exit code, stdout, stderr
    apart. An exception the CLI lets escape (a traceback in a real process) fails the
    test. A fresh interpreter per call cost the suite seconds of imports each; the
    entry point's own contract is tested in real processes (test_validate_cli.py,
    test_hostile_cli.py, test_wheel.py)."""
    from archdb_cli.main import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)
    return CliResult(result.exit_code, result.stdout, result.stderr)


@functools.cache
def shipped_catalogue() -> Catalogue:
    """The shipped catalogue, loaded once per test process (0.1 s a load: modules read it
    at collection, tests in their bodies) for tests that only read it; a test that
    changes a card (cards are mutable) loads its own with ``load_catalogue()``. Loaded
    without the validation cache: collection comes before any fixture points the cache at
    the session's folder, and the user's own cache is never a test's to read or write."""
    from archdb.catalogue import DEFAULT_PATH, load_catalogue

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARCHDB_NO_CACHE", "1")
        return load_catalogue(DEFAULT_PATH)


@functools.cache
def shipped_toys() -> dict[str, Architecture | None]:
    """Every shipped card's toy by card id (None for a card without its sizes), shrunk
    once per test process: test_measure and test_params_vs_hf both parametrize over the
    toys at collection, and each worker collects every module."""
    from archdb.builder.shrink import shrink
    from archdb.plan.layout import BuildError, fill_unknowns

    toys: dict[str, Architecture | None] = {}
    for card in shipped_catalogue():
        try:
            toys[card.id] = shrink(fill_unknowns(card.architecture)[0]).arch
        except BuildError:
            toys[card.id] = None
    return toys


@pytest.fixture
def write_catalogue(tmp_path: Path):
    def write(text: str, name: str = "models.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


# --- scheduling under pytest-xdist (``pytest -n 2``) ------------------------------------------

# Modules whose tests share per-process work run on one worker: the report data and its
# render (memoized per catalogue in archdb.reports.build) and the claim experiments
# (memoized below); a module-scoped site, browser or wheel built once, not once per worker.
XDIST_GROUPS = {
    "test_claims.py": "experiments",
    "test_experiments.py": "experiments",
    "test_figures.py": "experiments",
    "test_measured_cache.py": "experiments",
    "test_mechanisms.py": "experiments",
    "test_reports.py": "experiments",
    "test_site.py": "site",
    "test_site_browser.py": "experiments",  # the shipped site: the fresh build's render
    "test_wheel.py": "wheel",
}


# Tests against transformers, by test-file prefix: each one's family (its parameter names
# a model_type or a shipped card) is one unit of work, so each worker imports only its
# share of transformers' modeling modules (63 families: 2.5 s a process).
TRANSFORMERS_TESTS = (
    "test_families.py",
    "test_fidelity.py",
    "test_hf_import.py",
    "test_params_vs_hf.py",
    "test_measure.py::test_the_full_size_meta_model",
)


@functools.cache
def _family_of_parameter(parameter: str) -> str | None:
    """The transformers model_type a test parameter names: a model_type ("llama"), one
    with a case number ("llama-0", "olmo3-changes1"), or a shipped card ("llama-2-7b",
    "t5-v1.1-base, t5-v1.1-small", "gpt-oss-120b(+1)"); None for anything else."""
    from archdb_hf.families.registry import SPECS

    families = _card_families()
    first = parameter.split(", ")[0].split("(")[0]
    if first in families:
        return families[first]
    return next((c for c in (parameter, parameter.rsplit("-", 1)[0]) if c in SPECS), None)


@functools.cache
def _card_families() -> dict[str, str | None]:
    """Each shipped card's transformers model_type; none when the catalogue does not load
    (the tests that read it report why: the run goes on, scheduled without them)."""
    from archdb.catalogue import CatalogueError
    from archdb_hf.families.registry import model_type_of

    try:
        return {card.id: model_type_of(card) for card in shipped_catalogue()}
    except CatalogueError:
        return {}


def _work_unit(nodeid: str) -> str:
    """A test's unit of work under ``-n 2``: its group, its transformers family, or itself."""
    test = nodeid.rsplit("/", 1)[-1]
    module = test.split("::", 1)[0]
    if module in XDIST_GROUPS:
        return XDIST_GROUPS[module]
    if test.startswith(TRANSFORMERS_TESTS) and test.endswith("]"):
        family = _family_of_parameter(test[test.index("[") + 1 : -1])
        if family is not None:
            return f"transformers:{family}"
    return nodeid


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own (-p no:xdist: unused)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n 2`` alone: tests go one by one to whichever worker is free, except that each
    group in ``XDIST_GROUPS`` and each transformers family goes to one worker whole,
    largest first. (xdist's own ``--dist loadgroup`` reads ``xdist_group`` marks through
    a node-id attribute pytest 9 no longer uses.) An explicit ``--dist`` keeps xdist's
    scheduler."""
    if config.getoption("dist") != "load" or config.getoption("distload", False):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupedScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid)

        def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
            # A finished unit leaves the node's books: xdist recounts every unit a node
            # ever ran after each test, quadratic in thousands of one-test units.
            nodeid = self.registered_collections[node][item_index]
            units = self.assigned_work[node]
            unit = units[self._split_scope(nodeid)]
            unit[nodeid] = True
            if all(unit.values()):
                del units[self._split_scope(nodeid)]
            self._reschedule(node)

    return GroupedScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Out of the cyclic collector's sight: what is alive after collection (torch,
    transformers, every test's parameters) lives to the end, and each full collection
    rescanned it (with the threshold above: test_measure 86 -> 69 CPU-s serially)."""
    gc.freeze()


# And again at exit (after every atexit handler registered later, before the interpreter
# shuts down): its final collections rescanned all the tests left alive (models, memos),
# 1.5-3 s per pytest-xdist worker during which the run waited for the worker to end.
atexit.register(gc.freeze)


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory):
    """archdb's caches for the session's module- and session-scoped fixtures (a shared site,
    the figures), which run before any test's private cache: never the user's own
    ~/.cache/archdb, whose entries would make one run's results depend on an earlier one."""
    patch = pytest.MonkeyPatch()
    patch.setenv("ARCHDB_CACHE_DIR", str(tmp_path_factory.mktemp("session-cache")))
    yield
    patch.undo()


@pytest.fixture(scope="session", autouse=True)
def experiments_once_per_session():
    """The claim experiments are pure functions of a card (fixed seeds): each runs once per
    test session, however many report builds and claim tests ask for it."""
    from archdb.measure import experiments as ex

    patch = pytest.MonkeyPatch()
    placements: dict[str, ex.NormPlacementResult] = {}
    measure = ex.norm_placement

    def norm_placement(card: Card) -> ex.NormPlacementResult:
        key = card.model_dump_json()
        if key not in placements:
            placements[key] = measure(card)
        return placements[key]

    patch.setattr(ex, "norm_placement", norm_placement)
    patch.setattr(ex, "fast_weight_equivalence", functools.cache(ex.fast_weight_equivalence))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def shipped_catalogue_untouched():
    """No test may write the shipped catalogue (an import meant to fail once added a card
    to it): every test ends with the file as it found it."""
    from archdb.catalogue import DEFAULT_PATH

    def state():
        st = DEFAULT_PATH.stat()
        return st.st_ino, st.st_size, st.st_mtime_ns

    before = state()
    yield
    assert state() == before, f"the test wrote {DEFAULT_PATH}: restore it with git"


_CACHE_NUMBERS = itertools.count()


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """Each test gets its own validation cache, so no test sees another's results. The
    folder is made by the first write there (archdb.cache makes it): most tests write none,
    and a folder made per test cost each run thousands of mkdirs, and as many removals when
    pytest later deletes the run's temporary folders."""
    folder = tmp_path_factory.getbasetemp() / "caches" / str(next(_CACHE_NUMBERS))
    monkeypatch.setenv("ARCHDB_CACHE_DIR", str(folder))
    monkeypatch.delenv("ARCHDB_NO_CACHE", raising=False)
    return folder


@pytest.fixture(scope="session")
def shipped_cache_entry(tmp_path_factory) -> Path:
    """The validation cache's entry for the shipped catalogue, made once per session by a
    full load (parse, validate, write: what a user's first command does). The folder's
    sealing key lies beside it (``archdb.seal.KEY_NAME``)."""
    from archdb.catalogue import DEFAULT_PATH, check_catalogue

    folder = tmp_path_factory.mktemp("shipped-entry")
    os.chmod(folder, 0o700)
    patch = pytest.MonkeyPatch()
    patch.setenv("ARCHDB_CACHE_DIR", str(folder))
    patch.delenv("ARCHDB_NO_CACHE", raising=False)
    try:
        cards, problems = check_catalogue(DEFAULT_PATH, use_cache=True)
    finally:
        patch.undo()
    assert cards and not problems, problems
    (entry,) = folder.glob("*.json")
    return entry


@pytest.fixture
def warm_shipped_cache(private_cache: Path, shipped_cache_entry: Path) -> None:
    """This test's private cache starts with the shipped catalogue's entry and the key that
    sealed it (hard links: the cache replaces files, never writes into them), as a user's
    does after their first command: commands on the shipped catalogue read it back, every
    card validated again by the schema, instead of parsing the YAML (each test's first
    load cost 0.1-0.3 s). The full load is the fixture's own, and test_cache's."""
    from archdb import seal

    private_cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    for source in (shipped_cache_entry.with_name(seal.KEY_NAME), shipped_cache_entry):
        try:
            os.link(source, private_cache / source.name)
        except OSError:  # a file system without hard links
            shutil.copy2(source, private_cache / source.name)


def stored_payload(path: Path) -> bytes:
    """A cache record's bytes as archdb stored them, its seal line (archdb.cache) left off."""
    blob = path.read_bytes()
    assert blob.startswith(b"archdb-sealed-1 "), blob[:40]
    return blob.split(b"\n", 1)[1]


def store_sealed(path: Path, payload: bytes | str) -> None:
    """Write a cache record as archdb would (sealed with the folder's key): for tests of
    the checks behind the seal, which stand for a record archdb wrote wrongly."""
    from archdb import seal

    data = payload.encode() if isinstance(payload, str) else payload
    name = path.relative_to(seal.cache_dir()).as_posix()
    path.write_bytes(seal.sealed(name, data))


# --- one way to change test data -----------------------------------------------------------


def apply_changes(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Set dotted paths in nested dicts (in place) and return them."""
    for path, value in changes.items():
        set_path(data, path, value)
    return data


# --- synthetic cards ------------------------------------------------------------------------

CARD_BASE: dict[str, Any] = {
    "id": "base",
    "name": "Base",
    "family": "base",
    "organization": "Test",
    "release_date": dt.date(2020, 1, 1),
    "open_weights": True,
    "params_published": 1_000_000_000,
    "training": {"tokens": None, "dropout": None, "weight_decay": None, "z_loss": None},
    "architecture": {
        "kind": "decoder-only",
        "d_model": 1024,
        "n_layers": 8,
        "vocab_size": 50_000,
        "context_length": 2048,
        "norm": {"type": "layernorm", "position": "pre", "affine": "scale-and-bias", "final": True},
        "attention": {
            "variant": "softmax",
            "n_heads": 8,
            "n_kv_heads": 8,
            "head_dim": None,
            "qk_norm": "none",
            "logit_softcap": None,
            "sliding_window": None,
            "layer_pattern": ["global"],
        },
        "position": {"type": "learned"},
        "mlp": {"activation": "gelu", "d_ff": 4096, "moe": None},
        "bias": {"qkv": True, "attn_out": True, "mlp": True},
        "parallel_layers": False,
        "tied_embeddings": True,
        "final_logit_softcap": None,
    },
    "sources": [
        {
            "kind": "paper",
            "title": "A test source",
            "url": "https://example.org/x",
            "locator": None,
            "supports": ["architecture", "training", "params_published"],
        }
    ],
}


def make_card(card_id: str, changes: dict[str, Any] | None = None, **fields: Any) -> Card:
    """A valid card: BASE with ``fields`` (top level) and ``changes`` (dotted paths) applied.

    Example: make_card("llama-2-7b", {"architecture.norm.type": "rmsnorm"}, year=2023)
    (``year`` sets the release date to 1 June of that year; ``family`` defaults to the
    id without its size).
    """
    data = copy.deepcopy(CARD_BASE)
    data["id"] = card_id
    data["name"] = card_id
    data["family"] = fields.pop("family", card_id.rsplit("-", 1)[0] if "-" in card_id else card_id)
    if "year" in fields:
        data["release_date"] = dt.date(fields.pop("year"), 6, 1)
    data.update(fields)
    if data.get("lineage"):  # a lineage needs a source that states it
        data["sources"][0]["supports"].append("lineage")
    apply_changes(data, changes or {})
    notes = {p: "synthetic" for p in UNKNOWN_WHEN_NULL if get_path(data, p) is None}
    notes.update({p: "synthetic" for p in ("training.tokens", "training.dropout")})
    data["notes"] = notes
    return Card.model_validate(data)


def catalogue(*cards: Card) -> Catalogue:
    return Catalogue(Path("synthetic.yaml"), tuple(sorted(cards, key=lambda c: c.id)))


# --- a small architecture, and one variation per choice --------------------------------------

ARCH_BASE: dict[str, Any] = {
    "kind": "decoder-only",
    "d_model": 64,
    "n_layers": 2,
    "vocab_size": 128,
    "context_length": 64,
    "norm": {"type": "rmsnorm", "position": "pre", "affine": "scale", "final": True},
    "attention": {
        "variant": "softmax",
        "n_heads": 4,
        "n_kv_heads": 2,
        "head_dim": None,
        "qk_norm": "none",
        "logit_softcap": None,
        "sliding_window": None,
        "layer_pattern": ["global"],
    },
    "position": {"type": "rope", "rope_theta": 10000.0},
    "mlp": {"activation": "swiglu", "d_ff": 128, "moe": None},
    "bias": {"qkv": False, "attn_out": False, "mlp": False},
    "parallel_layers": False,
    "tied_embeddings": False,
    "final_logit_softcap": None,
}


# a block-sparse layout whose vertical blocks fall inside a 20-token test sequence: blocks of
# 2 tokens, a local band of 2 blocks, every third block before it, shifted per head
BLOCK_SPARSE = {"block_size": 2, "local_blocks": 2, "vertical_stride": 3, "head_shifted": True}


def moe_block(**changes: Any) -> dict[str, Any]:
    """A mixture of experts for ``mlp.moe``: 4 experts, top-2, MoE from the first layer."""
    defaults = {
        "n_experts": 4,
        "n_active": 2,
        "n_shared": 0,
        "shared_d_ff": None,
        "first_dense_layers": 0,
        "layer_period": 1,
        "dense_d_ff": None,
    }
    return defaults | changes


def qk_norm(
    kind: str, norm_type: str = "rmsnorm", affine: str = "scale", prefix: str = "attention."
) -> dict[str, str]:
    """A QK norm as a card states it: a kind with parameters (per-head, per-head-untied,
    full) comes with its own type and affine (an RMSNorm scale unless told), which no
    longer follow the block norm."""
    out = {f"{prefix}qk_norm": kind}
    if QKNorm(kind).learned:
        out |= {f"{prefix}qk_norm_type": norm_type, f"{prefix}qk_norm_affine": affine}
    return out


# Gemma 4's attention: 5 local : 1 global, the global layers with their own KV heads, a
# wider head, proportional partial RoPE and values taken from the keys; a value norm
GEMMA4_ATTENTION: dict[str, Any] = {
    "n_layers": 6,
    "norm.position": "double",
    "mlp.activation": "geglu",
    "tied_embeddings": True,
    **qk_norm("per-head"),
    "attention.head_dim": 16,
    "attention.value_norm": True,
    "attention.scale": 1.0,
    "attention.sliding_window": 8,
    "attention.layer_pattern": ["local"] * 5 + ["global"],
    "attention.global_layers": {
        "n_kv_heads": 1,
        "head_dim": 32,
        "rotary_fraction": 0.25,
        "values_from_keys": True,
    },
    "position.rope_theta": 1_000_000.0,
    "position.rope_theta_local": 10_000.0,
    "final_logit_softcap": 30.0,
    "layer_scalar": True,
}
# Gemma 4 26B-A4B's feed-forward: routed experts beside a dense MLP, its scaled router
GEMMA4_MOE: dict[str, Any] = {
    "mlp.d_ff": 32,
    "mlp.moe": moe_block(n_experts=8, n_active=2, dense_beside_d_ff=96, router_scales=True),
}

# Grok-2's residual MoE: a dense MLP beside the experts on the block's pre-norm, their sum
# scaled by 1/sqrt(2) before the block's post-norm; a soft-capped router without
# renormalization; capped attention and output logits, xAI's attention temperature past
# position 4, scaled embeddings and logits
GROK2_LIKE: dict[str, Any] = {
    "norm.position": "double",
    "mlp.activation": "geglu",
    "mlp.d_ff": 32,
    "mlp.moe": moe_block(
        n_experts=8,
        n_active=2,
        dense_beside_d_ff=96,
        beside_norms="shared",
        router_softcap=30.0,
        normalize_top_k=False,
    ),
    "mlp.output_multiplier": 0.7071067811865476,
    "attention.logit_softcap": 30.0,
    "attention.temperature_length": 4,
    "final_logit_softcap": 50.0,
    "embedding_multiplier": 8.0,
    "logit_scale": 0.5,
}


# Gemma 4 E2B/E4B: per-layer embeddings; the last 6 of 12 layers attend with the keys and
# values of the last local and the last global layer before them, through a double-wide
# MLP; the global layers' values from their own projection (no k_eq_v)
GEMMA4_ON_DEVICE: dict[str, Any] = {
    **GEMMA4_ATTENTION,
    "n_layers": 12,
    "attention.global_layers": {"head_dim": 32, "rotary_fraction": 0.25},
    "attention.kv_shared_layers": 6,
    "mlp.kv_shared_d_ff": 256,
    "per_layer_embeddings": {"width": 16, "vocab_size": 128},
}


# Gemma 3n: AltUp's four streams, LAuReL beside attention, gaussian top-k on the first
# layers' MLP gates, per-layer embeddings on a table shorter than the vocabulary, the last
# period of layers reusing KV
GEMMA3N_LIKE: dict[str, Any] = {
    **GEMMA4_ATTENTION,
    "n_layers": 10,
    "attention.layer_pattern": ["local"] * 4 + ["global"],
    "attention.global_layers": None,
    "layer_scalar": None,
    "attention.kv_shared_layers": 5,
    "per_layer_embeddings": {"width": 16, "vocab_size": 100},
    "altup": {"n_inputs": 4, "active_index": 0, "correct_scale": True},
    "laurel_rank": 8,
    "mlp.activation_sparsity": {"target": 0.95, "first_layers": 3},
}


# Step-3: MFA (one key/value head, a normed low-rank query) and a shared expert beside
# softmax-share routing, the MoE layers between a leading and a trailing dense layer
STEP3_LIKE: dict[str, Any] = {
    "n_layers": 4,
    "attention.n_kv_heads": 1,
    "attention.head_dim": 32,
    "attention.query_rank": 24,
    "mlp.moe": moe_block(
        n_shared=1,
        shared_d_ff=64,
        first_dense_layers=1,
        last_dense_layers=1,
        dense_d_ff=256,
        normalize_top_k=False,
    ),
}

# Llama 4 Scout: three chunked RoPE layers and a NoPE layer; the L2 QK norm only where q and
# k rotate, the NoPE layer's queries tempered from position 3 (floor_scale 4); top-1 of 4
# experts by sigmoid, each expert's input weighted, beside a shared expert; interleaved RoPE
LLAMA4_LIKE: dict[str, Any] = {
    "n_layers": 4,
    "attention.layer_pattern": ["chunked", "chunked", "chunked", "global-nope"],
    "attention.sliding_window": 8,
    "attention.qk_norm": "l2",
    "attention.qk_norm_rope_only": True,
    "attention.nope_temperature": {"floor_scale": 4, "scale": 0.1},
    "position.rope_layout": "interleaved",
    "mlp.d_ff": 32,
    "mlp.moe": moe_block(
        n_active=1,
        n_shared=1,
        shared_d_ff=32,
        score_function="sigmoid",
        normalize_top_k=False,
        weighted_input=True,
    ),
}


def latent_dims(**changes: Any) -> dict[str, Any]:
    """Latent-attention (MLA) dims for ``attention.latent``, no query bottleneck."""
    defaults = {
        "kv_lora_rank": 16,
        "q_lora_rank": None,
        "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 16,
        "v_head_dim": 16,
    }
    return defaults | changes


DSA = {"indexer_heads": 2, "indexer_head_dim": 16, "top_k": 8}  # attention.sparse


def compressed_dims(**changes: Any) -> dict[str, Any]:
    """DeepSeek-V4's attention sizes for ``attention.compressed``, scaled to the toys."""
    defaults = {
        "q_lora_rank": 24,
        "rope_dim": 8,
        "output_groups": 2,
        "output_rank": 16,
        "sparse_ratio": 4,
        "heavy_ratio": 8,
        "compress_rope_theta": 160000.0,
    }
    return defaults | changes


# DeepSeek-V4's attention on three layers: a local one, a CSA one (the indexer keeps 3
# entries a query), an HCA one
V4_ATTENTION: dict[str, Any] = {
    "n_layers": 3,
    "attention.variant": "compressed",
    "attention.n_kv_heads": 1,
    "attention.head_dim": 32,
    "attention.sinks": True,
    "attention.sliding_window": 8,
    "attention.layer_pattern": ["local", "compressed-sparse", "heavily-compressed"],
    "attention.compressed": compressed_dims(),
    "attention.sparse": DSA | {"top_k": 3, "indexer_rope_layout": "interleaved"},
    "position.rope_layout": "interleaved",
}
# ... and the rest of DeepSeek-V4's layer: mHC streams, hash-routed then top-k experts
V4_LAYER: dict[str, Any] = V4_ATTENTION | {
    "hyper_connections": {"n_streams": 4, "sinkhorn_iters": 20, "eps": 1e-6},
    "mlp.activation": "clipped-swiglu",
    "mlp.swiglu_limit": 10.0,
    "mlp.d_ff": 32,
    "mlp.moe": moe_block(
        n_experts=8,
        n_shared=1,
        shared_d_ff=32,
        score_function="sqrt-softplus",
        score_correction_bias=True,
        normalize_top_k=True,
        routed_scale=1.5,
        hash_layers=1,
    ),
}


def mamba2_dims(**changes) -> dict[str, Any]:
    """Mamba-2 sizes for a d_model 64 toy (inner width 128 = 2 x d_model)."""
    dims = {
        "n_heads": 8,
        "head_dim": 16,
        "state_size": 16,
        "n_groups": 2,
        "conv_kernel": 4,
        "conv_bias": True,
        "proj_bias": False,
        "mlp": False,
    }
    return {**dims, **changes}


# Falcon-H1's layer: attention beside Mamba-2 (no mixer norm), every muP factor set
FALCON_H1_LIKE: dict[str, Any] = {
    "attention.layer_pattern": ["global+mamba2"],
    "attention.scale": 0.09,
    "attention.input_multiplier": 1.5,
    "attention.output_multiplier": 0.75,
    "mixers": {
        "mamba2": mamba2_dims(
            mlp=True,
            norm="none",
            input_multiplier=1.25,
            projection_multipliers=[0.5, 0.25, 0.5, 1.5, 0.75],
            output_multiplier=0.25,
        )
    },
    "mlp.gate_multiplier": 0.875,
    "mlp.output_multiplier": 0.5,
    "embedding_multiplier": 5.5,
    "logit_scale": 0.04,
}


def deltanet_dims(**changes) -> dict[str, Any]:
    """Gated DeltaNet sizes for a d_model 64 toy (2 key heads, 4 value heads)."""
    dims = {
        "n_key_heads": 2,
        "n_value_heads": 4,
        "key_head_dim": 16,
        "value_head_dim": 8,
        "conv_kernel": 4,
        "mlp": True,
    }
    return {**dims, **changes}


def mamba_dims(**changes) -> dict[str, Any]:
    """Mamba-1 sizes for a d_model 64 toy (inner width 128 = 2 x d_model, dt rank 4)."""
    dims = {
        "d_inner": 128,
        "state_size": 16,
        "conv_kernel": 4,
        "dt_rank": 4,
        "conv_bias": True,
        "proj_bias": False,
        "inner_norm": "none",
        "mlp": False,
    }
    return {**dims, **changes}


# An attention-free Mamba-2 stack: attention and MLP fields describe no layer.
MAMBA2_ONLY = {
    "attention.layer_pattern": ["mamba2"],
    "attention.n_heads": None,
    "attention.n_kv_heads": None,
    "attention.qk_norm": None,
    "position.type": "none",
    "position.rope_theta": None,
    "mlp.activation": None,
    "mlp.d_ff": None,
    "mixers": {"mamba2": mamba2_dims()},
}
# RWKV-7: attention-free, its token-shifted squared-ReLU MLP, an embedding LayerNorm.
RWKV7_ONLY = {
    **MAMBA2_ONLY,
    "attention.layer_pattern": ["rwkv7"],
    "norm": {"type": "layernorm", "position": "pre", "affine": "scale-and-bias", "final": True},
    "mlp": {"activation": "squared-relu", "d_ff": 128, "moe": None, "token_shift": True},
    "mixers": {"rwkv7": {"head_dim": 16, "decay_rank": 8, "rate_rank": 8, "value_rank": 4,
                         "gate_rank": 16, "mlp": True}},
    "embedding_norm": True,
}  # fmt: skip
# An attention-free Mamba-1 stack (Mamba, Falcon Mamba: inner_norm "rms").
MAMBA_ONLY = {
    **MAMBA2_ONLY,
    "attention.layer_pattern": ["mamba"],
    "mixers": {"mamba": mamba_dims()},
}
# Jamba's layout: Mamba-1 layers with an MLP and scaled dt/B/C norms, attention without
# positions, MoE every other layer.
MAMBA_HYBRID = {
    "attention.layer_pattern": ["mamba", "global"],
    "position.type": "none",
    "position.rope_theta": None,
    "mixers": {"mamba": mamba_dims(mlp=True, inner_norm="rms-scaled", inner_norm_eps=1e-6)},
}
# Griffin's (RecurrentGemma's) layout: two RG-LRU layers, then local MQA attention with
# half-rotary RoPE; biases on attention's output and the MLP; a lru_width off d_model
RG_LRU_HYBRID = {
    "attention.layer_pattern": ["rg-lru", "rg-lru", "local"],
    "n_layers": 3,
    "attention.n_kv_heads": 1,
    "attention.sliding_window": 16,
    "position.rotary_fraction": 0.5,
    "mlp.activation": "geglu",
    "bias.attn_out": True,
    "bias.mlp": True,
    "tied_embeddings": True,
    "final_logit_softcap": 30.0,
    "mixers": {"rg_lru": {"lru_width": 96, "n_heads": 4, "conv_kernel": 4, "mlp": True}},
}
# Qwen3-Next's 3:1 hybrid: three Gated DeltaNet layers, then one attention layer.
DELTANET_HYBRID = {
    "attention.layer_pattern": ["gated-deltanet"] * 3 + ["global"],
    "n_layers": 4,
    "mixers": {"gated_deltanet": deltanet_dims()},
}


def kda_dims(**changes) -> dict[str, Any]:
    """Kimi Delta Attention sizes for a d_model 64 toy (4 heads of 16, gate ranks 8 and 12)."""
    dims = {
        "n_heads": 4,
        "head_dim": 16,
        "conv_kernel": 4,
        "decay_rank": 8,
        "output_gate": True,
        "output_gate_rank": 12,
        "mlp": True,
    }
    return {**dims, **changes}


# Kimi Linear's 3:1 hybrid: three KDA layers, then one attention layer.
KDA_HYBRID = {
    "attention.layer_pattern": ["kda"] * 3 + ["global"],
    "n_layers": 4,
    "mixers": {"kda": kda_dims()},
}


def lightning_dims(**changes) -> dict[str, Any]:
    """Lightning attention sizes for a d_model 64 toy (4 heads of 16, as the attention's)."""
    return {"n_heads": 4, "head_dim": 16, "decay": "minimax", "mlp": True, **changes}


# MiniMax-01's layout at toy size: three lightning layers, then softmax attention, every
# layer a MoE; the residual taken after each norm, with alpha/beta factors per sublayer kind
MINIMAX_HYBRID = {
    "n_layers": 4,
    "norm.position": "normed-skip",
    "attention.layer_pattern": ["lightning"] * 3 + ["global"],
    "attention.skip_multiplier": 1.25,
    "attention.output_multiplier": 0.5,
    "mlp.skip_multiplier": 2.0,
    "mlp.output_multiplier": 0.8,
    "mlp.moe": moe_block(),
    "mixers": {"lightning": lightning_dims(skip_multiplier=1.5, output_multiplier=0.75)},
}


def hf_import_count(model_type: str, **sizes) -> tuple[int, int, object]:
    """(archdb's full-size count of the imported card, transformers' count, the card)."""
    import warnings

    import torch
    import transformers

    from archdb.builder.model import build_model, count_parameters
    from archdb.writer import validate_card
    from archdb_hf.importer import Identity, import_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()
        config = transformers.AutoConfig.for_model(model_type, **sizes)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
    identity = Identity("imported-1b", "Imported 1B", "imported", "Example Lab", "2025-01-01")
    result = import_config(
        {**config.to_dict(), "model_type": model_type},
        source_url="https://huggingface.co/org/model/blob/main/config.json",
        identity=identity,
    )
    card = validate_card(result.card)
    ours = count_parameters(build_model(card.architecture, device="meta"))
    return ours, sum(p.numel() for p in model.parameters()), card


def assert_causal(model: Any, length: int = 12, split: int = 8, vocab: int = 128) -> Any:
    """Random tokens, then the same with every token from ``split`` on changed: the logits
    before ``split`` must stay, those after must move (the model is causal and reads its
    input). Returns the first logits."""
    import torch

    tokens = torch.randint(0, vocab, (1, length))
    changed = tokens.clone()
    changed[0, split:] = (changed[0, split:] + 1) % vocab
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert torch.allclose(a[:, :split], b[:, :split], atol=1e-6)
    assert not torch.allclose(a[:, split:], b[:, split:])
    return a


def last_token_changed(model: Any, arch: Architecture) -> tuple[Any, Any]:
    """The logits of ``model`` (eval, no grad) on ``example_inputs`` of the context length,
    and its logits with the last token changed: both sequences in one batch of two, one
    forward pass (sequences of a batch never mix, so a leak would show here too)."""
    import torch

    from archdb.builder.model import example_inputs

    inputs = example_inputs(model, arch.context_length)
    changed = list(inputs)
    changed[-1] = inputs[-1].clone()
    changed[-1][0, -1] = (changed[-1][0, -1] + 1) % arch.vocab_size
    with torch.no_grad():
        logits = model(*(torch.cat(pair) for pair in zip(inputs, changed, strict=True)))
    return logits[:1], logits[1:]


def make_arch(**changes) -> Architecture:
    """A small architecture (d_model 64, 2 layers) with dotted-path changes:
    make_arch(**{"norm.position": "post"})."""
    return Architecture.model_validate(apply_changes(copy.deepcopy(ARCH_BASE), changes))


CHOICES = [
    {  # LongRoPE: both factor sets built (context 64 over an original 16)
        "position.rope_scaling": {
            "type": "longrope",
            "factor": 4.0,
            "original_context": 16,
            "short_factor": [1.0, 1.1, 1.2, 1.4, 1.6, 2.0, 2.5, 3.0],
            "long_factor": [1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0, 20.0],
        }
    },
    {
        "position.rope_scaling": {
            "type": "yarn",
            "factor": 4.0,
            "original_context": 16,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
        }
    },
    {
        "mlp.moe": moe_block(n_shared=1, shared_d_ff=64, shared_gate=True, router_bias=True),
        "bias.mlp": True,
    },
    {  # DeepSeek-V3's router: sigmoid, correction bias, top-2-sum groups, a routed scale
        "mlp.moe": moe_block(
            n_experts=8,
            n_active=3,
            n_shared=1,
            shared_d_ff=64,
            score_function="sigmoid",
            n_groups=4,
            top_k_groups=2,
            group_score="top2-sum",
            score_correction_bias=True,
            routed_scale=2.5,
        ),
    },
    {  # DeepSeek-V2's: softmax shares, groups ranked by their best expert, scaled
        "mlp.moe": moe_block(
            n_experts=8,
            n_active=3,
            n_groups=4,
            top_k_groups=2,
            group_score="max",
            normalize_top_k=False,
            routed_scale=16.0,
        ),
    },
    {"attention.sinks": True},
    {  # gpt-oss-like: clamped SwiGLU experts behind a biased router, sinks, exact YaRN band
        "mlp.activation": "clamped-swiglu",
        "mlp.swiglu_limit": 0.5,
        "mlp.swiglu_alpha": 1.5,
        "mlp.moe": moe_block(router_bias=True),
        "bias.mlp": True,
        "attention.sinks": True,
        "position.rope_scaling": {
            "type": "yarn",
            "factor": 4.0,
            "original_context": 16,
            "truncate": False,
        },
    },
    {
        "attention.sinks": True,
        "attention.layer_pattern": ["local", "chunked", "global"],
        "attention.sliding_window": 16,
        "n_layers": 3,
    },
    {"attention.output_gate": "elementwise", **qk_norm("per-head")},
    {"attention.output_gate": "headwise", "attention.n_kv_heads": 1},
    # muP factors (Granite): sublayer outputs scaled before the residual add
    {"residual_multiplier": 0.22, "embedding_multiplier": 12.0, "logit_scale": 0.125},
    {"residual_multiplier": 0.22, "parallel_layers": True, "norm.shared_in_parallel": True},
    {"residual_multiplier": 0.22, "norm.position": "resi-dual"},
    MAMBA2_ONLY,
    DELTANET_HYBRID,
    MAMBA_ONLY,
    {**MAMBA_ONLY, "mixers": {"mamba": mamba_dims(inner_norm="rms", proj_bias=True)}},
    MAMBA_HYBRID,
    RG_LRU_HYBRID,
    {  # Hawk: RG-LRU layers alone (with their MLP), attention-free
        **MAMBA2_ONLY,
        "attention.layer_pattern": ["rg-lru"],
        "mlp.activation": "geglu",
        "mlp.d_ff": 96,
        "mixers": {"rg_lru": {"lru_width": 64, "n_heads": 2, "conv_kernel": 3, "mlp": True}},
    },
    {  # Jamba-like: Mamba-2 layers with an MLP, one attention layer in two
        "attention.layer_pattern": ["mamba2", "global"],
        "mixers": {"mamba2": mamba2_dims(mlp=True, n_groups=1, proj_bias=True)},
    },
    FALCON_H1_LIKE,
    KDA_HYBRID,
    {  # KDA without its output gate, beside NoPE attention
        **KDA_HYBRID,
        "mixers": {"kda": kda_dims(output_gate=False, output_gate_rank=None)},
        "position.type": "none",
        "position.rope_theta": None,
    },
    MINIMAX_HYBRID,
    RWKV7_ONLY,
    {"norm.position": "normed-skip", "attention.skip_multiplier": 2.0},
    {  # attention beside Mamba-2 with a before-gate norm and no factors; a plain MLP
        "attention.layer_pattern": ["global+mamba2", "global"],
        "mixers": {"mamba2": mamba2_dims(mlp=True, norm="before-gate")},
        "mlp.activation": "gelu",
        "mlp.output_multiplier": 0.5,
    },
    *({"norm.type": n.value} for n in NormType),
    {"norm.type": "layernorm", "norm.affine": "scale-and-bias"},
    {"norm.type": "layernorm", "norm.affine": "none"},
    {"norm.position": "post", "norm.final": False},
    {"norm.position": "double"},
    {"norm.position": "post-branch"},
    {"norm.position": "resi-dual"},
    *({"mlp.activation": a.value} for a in Activation),
    {"position.type": "sinusoidal", "position.rope_theta": None},
    {"position.type": "learned", "position.rope_theta": None},
    {"position.type": "learned", "position.rope_theta": None, "position.learned_rows": 66},
    {"position.type": "relative-bias", "position.rope_theta": None, "position.relative_buckets": 8},
    {"position.type": "relative-xl", "position.rope_theta": None},
    {"position.type": "alibi", "position.rope_theta": None},
    {"position.type": "none", "position.rope_theta": None},
    {"position.rotary_fraction": 0.5},
    {"attention.n_kv_heads": 4},
    {"attention.n_kv_heads": 1},
    {"attention.head_dim": 32},
    *(qk_norm(q.value) for q in QKNorm),
    qk_norm("per-head-untied", "layernorm", "scale-and-bias"),  # Chameleon's
    {"attention.logit_softcap": 50.0, "final_logit_softcap": 30.0},
    GEMMA4_ATTENTION,
    {**GEMMA4_ATTENTION, **GEMMA4_MOE},
    GROK2_LIKE,
    GEMMA4_ON_DEVICE,
    GEMMA3N_LIKE,
    {  # per-layer embeddings on a shorter table (Gemma 3n), KV sharing without a wider MLP
        **GEMMA4_ON_DEVICE,
        "mlp.kv_shared_d_ff": None,
        "attention.kv_shared_layers": 3,
        "per_layer_embeddings": {"width": 8, "vocab_size": 100},
    },
    {"attention.layer_pattern": ["local", "global"], "attention.sliding_window": 16},
    {  # Phi-3-small's block-sparse layers beside dense ones, its gegelu and muP factors
        "attention.layer_pattern": ["blocksparse", "global"],
        "attention.block_sparse": BLOCK_SPARSE,
        "attention.scale": 0.0625,
        "mlp.activation": "gegelu",
        "mlp.gegelu_limit": 2.0,
        "embedding_multiplier": 10.0,
        "logit_scale": 0.125,
    },
    {
        "attention.layer_pattern": ["local"] * 5 + ["global"],
        "attention.sliding_window": 8,
        "position.rope_theta_local": 10000.0,
        "position.rope_theta": 1e6,
        "n_layers": 6,
    },
    {
        "attention.layer_pattern": ["chunked"] * 3 + ["global-nope"],
        "n_layers": 4,
        "attention.sliding_window": 16,
        "attention.qk_norm": "l2",
    },
    {
        "attention.variant": "latent",
        "attention.n_kv_heads": 4,
        "attention.latent": latent_dims(q_lora_rank=24),
    },
    {
        "attention.variant": "latent",
        "attention.n_kv_heads": 4,
        "attention.latent": latent_dims(),
    },
    {  # DSA (DeepSeek-V3.2): an indexer keeps 8 keys per query, half-split indexer RoPE
        "attention.variant": "latent",
        "attention.n_kv_heads": 4,
        "attention.latent": latent_dims(q_lora_rank=24),
        "attention.sparse": DSA,
    },
    {  # GLM-5: interleaved RoPE in the indexer and in MLA, a YaRN-scaled base
        "attention.variant": "latent",
        "attention.n_kv_heads": 4,
        "attention.latent": latent_dims(q_lora_rank=24),
        "attention.sparse": DSA | {"indexer_rope_layout": "interleaved"},
        "position.rope_layout": "interleaved",
    },
    V4_ATTENTION,  # DeepSeek-V4's attention (compressed), and its whole layer
    V4_LAYER,
    *(  # latent and compressed attention need their dims: the entries above
        {"attention.variant": v.value}
        for v in AttentionVariant
        if v not in (AttentionVariant.LATENT, AttentionVariant.COMPRESSED)
    ),
    {"mlp.moe": moe_block(n_shared=1, shared_d_ff=64, first_dense_layers=1, dense_d_ff=256)},
    STEP3_LIKE,
    LLAMA4_LIKE,
    {
        "mlp.moe": moe_block(n_active=1, layer_period=2, dense_d_ff=256),
        "bias.mlp": True,
    },
    {"parallel_layers": True, "norm.shared_in_parallel": True},
    {"parallel_layers": True, "norm.shared_in_parallel": False},
    {"parallel_layers": True, "norm.shared_in_parallel": True, "norm.position": "double"},
    {"bias.qkv": True, "bias.attn_out": True, "bias.mlp": True, "bias.lm_head": True},
    {"tied_embeddings": True},
    {"embedding_dim": 32, "tied_embeddings": True},
    {
        "kind": "encoder-decoder",
        "n_encoder_layers": 3,
        "position.type": "relative-bias",
        "position.rope_theta": None,
        "position.relative_buckets": 32,
    },
    {
        "kind": "encoder-decoder",
        "n_encoder_layers": 2,
        "norm.position": "post",
        "norm.final": False,
        "position.type": "sinusoidal",
        "position.rope_theta": None,
        "tied_embeddings": True,
    },
    {
        "kind": "encoder-decoder",
        "n_encoder_layers": 2,
        "norm.position": "resi-dual",
        "position.type": "sinusoidal",
        "position.rope_theta": None,
    },
]


def empty_report_memos(patch: pytest.MonkeyPatch) -> None:
    """Empty report memos (archdb.reports.build), so the next build computes and renders
    afresh instead of handing back an earlier build's bytes."""
    from collections import OrderedDict

    from archdb.reports import build

    patch.setattr(build, "_computed", OrderedDict())
    patch.setattr(build, "_rendered", OrderedDict())


@pytest.fixture
def fresh_report_memos(monkeypatch):
    """``empty_report_memos`` for one test."""
    empty_report_memos(monkeypatch)


# --- renders shared by the session's workers ------------------------------------------------


@pytest.fixture(scope="session")
def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every pytest-xdist worker of this session sees (the parent of the workers'
    own base temps), or the base temp when one process runs the tests."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def made_once(folder: Path, make: Any) -> str | None:
    """Make ``folder`` with ``make(folder)`` once per test session: the first worker to
    ask makes it under a lock, the others wait for it and read it. Returns None when this
    call made it, else the text ``make`` returned when it did."""
    import fcntl

    done = folder.with_name(f"{folder.name}.done")
    with folder.with_name(f"{folder.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            done.write_text(make(folder) or "")
            return None
    return done.read_text()


def use_shared_cache(patch: pytest.MonkeyPatch, shared: Path) -> None:
    """archdb's cache, one for the session's workers: the claim experiments of a catalogue
    (most of computing its report data) measured by one worker are read by the other
    (entries are written atomically, and one found malformed is measured again)."""
    patch.setenv("ARCHDB_CACHE_DIR", str(shared / "cache"))


def shared_render(shared: Path, cat: Catalogue) -> Any:
    """The catalogue's report data, computed in this worker, with its render in this
    worker's memo (``archdb.reports.build``): rendered once per session by whichever
    worker asks first, read back from its files by the others. Sound because rendering is
    a pure function of the data (the shipped catalogue's render is checked byte for byte
    against an installed wheel's, written by another process: test_wheel) and the files
    are named by ``content_key``, everything the data is computed from. For tests that
    need a catalogue's rendered bytes, not a render of their own."""
    import json

    from archdb.reports import build

    with pytest.MonkeyPatch.context() as patch:
        use_shared_cache(patch, shared)
        data = build.compute(cat)
    folder = _render_folder(shared, cat)
    order = made_once(folder, lambda f: _share(build.render_reports(data), f))
    if order is not None and id(data) not in build._rendered:
        rendered = {name: (folder / name).read_bytes() for name in json.loads(order)}
        build._rendered[id(data)] = (data, rendered)  # as render_reports keeps its own
    return data


def _render_folder(shared: Path, cat: Catalogue) -> Path:
    from archdb.reports.build import content_key

    return shared / f"render-{content_key(cat)}"


def _share(rendered: dict[str, bytes], folder: Path) -> str:
    """Write a render for the other workers; returns its order of files."""
    import json

    from archdb.reports.build import write_files

    write_files(rendered, folder)
    return json.dumps(list(rendered))


def shared_site(shared: Path, catalogue_path: Path) -> Path:
    """The site of a catalogue, built once per session for the read-only tests of every
    worker; its report render is ``shared_render``'s."""
    from archdb.catalogue import load_catalogue
    from archdb.reports.build import content_key
    from archdb.site import build_site

    cat = load_catalogue(catalogue_path)
    shared_render(shared, cat)
    out = shared / f"site-{content_key(cat)}"

    def build(folder: Path) -> None:
        build_site(cat, folder)

    made_once(out, build)
    return out


@dataclass(frozen=True)
class FreshBuild:
    """A build of the shipped catalogue's reports in this process, past the memos."""

    output: Path  # what it wrote, over an earlier build's stale figure
    figures: dict[str, Any]  # every matplotlib Figure it saved, by file stem, in order


@pytest.fixture(scope="session")
def fresh_shipped_build(
    tmp_path_factory: pytest.TempPathFactory, shared_folder: Path
) -> FreshBuild:
    """The shipped catalogue's reports built once per session by this worker with a
    compute and a render of its own (memos emptied), over a stale figure: the
    determinism test checks what it wrote and removed; the figure tests check the Figure
    objects this render saved. Its render is also the
    session's ``shared_render`` of the shipped catalogue (unless another worker's came
    first): the site of the shipped catalogue, whose browser tests are in this worker's
    group, renders no second time."""
    from archdb.catalogue import load_catalogue
    from archdb.outputs import MANIFEST
    from archdb.reports import build, figures

    shipped = load_catalogue()
    output = tmp_path_factory.mktemp("fresh-report")
    (output / build.FIGURES).mkdir()
    (output / build.FIGURES / "old.svg").write_text("stale")  # an earlier run's figure
    (output / MANIFEST).write_text(f"{build.FIGURES}/old.svg\n")
    made: list[Any] = []
    save = figures.save_svg

    def save_and_keep(fig: Any, path: Any) -> None:
        made.append(fig)
        save(fig, path)

    with pytest.MonkeyPatch.context() as patch:
        empty_report_memos(patch)
        patch.setattr(figures, "save_svg", save_and_keep)
        use_shared_cache(patch, shared_folder)
        written = build.build_reports(shipped, output)
        rendered = build.render_reports(build.compute(shipped))  # the memos' build
    made_once(_render_folder(shared_folder, shipped), lambda f: _share(rendered, f))
    names = [p.stem for p in written if p.parent.name == build.FIGURES]
    assert len(names) == len(made)  # one figure per written file, in order
    return FreshBuild(output, dict(zip(names, made, strict=True)))
