"""How ``pytest -n 2`` splits the suite (tests/conftest.py): module groups stay whole, a
transformers test goes with its family, and a catalogue that does not load leaves the
tests to report it instead of ending the run in an internal error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import tests.conftest as suite
from archdb.catalogue import CatalogueError

FIDELITY = "tests/test_fidelity.py::test_logits_equal_transformers"
FULL_SIZE = "tests/test_measure.py::test_the_full_size_meta_model_counts_the_formula"


@pytest.fixture
def fresh_units() -> Iterator[None]:
    """The parameter memos emptied before and after: a test here changes what they read."""
    suite._card_families.cache_clear()
    suite._family_of_parameter.cache_clear()
    yield
    suite._card_families.cache_clear()
    suite._family_of_parameter.cache_clear()


def test_groups_families_and_single_tests(fresh_units) -> None:
    assert suite._work_unit("tests/test_figures.py::test_x") == "experiments"
    assert suite._work_unit("tests/test_site_browser.py::test_x[a]") == "experiments"
    assert suite._work_unit(f"{FIDELITY}[llama]") == "transformers:llama"
    small = "tests/test_params_vs_hf.py::test_small_configs_match_transformers[mixtral-4]"
    assert suite._work_unit(small) == "transformers:mixtral"
    # a shipped card's family is its config source's, not the first word of its id
    assert suite._work_unit(f"{FULL_SIZE}[gemma-2-9b]") == "transformers:gemma2"
    toys = "tests/test_params_vs_hf.py::test_catalogue_toys_match_transformers"
    assert suite._work_unit(f"{toys}[t5-v1.1-base, t5-v1.1-small]") == "transformers:t5"
    # tests outside the transformers files, and parameters naming no family, stay single
    toy = "tests/test_measure.py::test_every_toy_runs_causally_and_fvcore[gemma-2-9b]"
    assert suite._work_unit(toy) == toy
    assert suite._work_unit(f"{FULL_SIZE}[palm-540b]") == f"{FULL_SIZE}[palm-540b]"
    assert suite._work_unit(f"{FIDELITY}[no-such-family]") == f"{FIDELITY}[no-such-family]"


def test_a_catalogue_that_does_not_load_leaves_scheduling_to_model_types(
    fresh_units, monkeypatch
) -> None:
    def broken():
        raise CatalogueError([])

    monkeypatch.setattr(suite, "shipped_catalogue", broken)
    assert suite._work_unit(f"{FIDELITY}[llama]") == "transformers:llama"
    assert suite._work_unit(f"{FULL_SIZE}[gemma-2-9b]") == f"{FULL_SIZE}[gemma-2-9b]"
