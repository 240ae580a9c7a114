"""archdb site: deterministic, escaped, complete, and careful with its output directory.

The browser tests (tests/test_site_browser.py) check the pages behave; these check the
files themselves, quickly, on a small catalogue with a hostile card.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from archdb.catalogue import DEFAULT_PATH, load_catalogue
from archdb.fidelity import fidelity
from archdb.measure.analytic import derived_figures
from archdb.site import SiteError, build_site
from archdb.site.data import format_value, toy_tree
from archdb.site.markdown import to_html
from archdb.site.pages import json_script
from tests.conftest import (
    card_text,
    empty_report_memos,
    run_cli,
    shared_site,
    store_sealed,
    stored_payload,
)
from tests.site_fixtures import HOSTILE_ID, HOSTILE_NAME, write
from tests.site_fixtures import small_catalogue as write_small_catalogue


@pytest.fixture(scope="module")
def small_catalogue(tmp_path_factory) -> Path:
    return write_small_catalogue(tmp_path_factory.mktemp("catalogue"))


@pytest.fixture(scope="module")
def small_site(small_catalogue, shared_folder) -> Path:
    """Read only: built once per session, by this worker or the browser tests' (their
    hostile card's pages); its report render is in this worker's memo either way."""
    return shared_site(shared_folder, small_catalogue)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_same_catalogue_gives_the_same_bytes(
    small_catalogue, small_site, tmp_path, fresh_report_memos
):
    again = tmp_path / "again"  # computed and rendered afresh, not from the memos or files
    build_site(load_catalogue(small_catalogue), again)
    first, second = _files(small_site), _files(again)
    assert sorted(first) == sorted(second)
    differing = [name for name in first if first[name] != second[name]]
    assert differing == []


def test_site_has_every_page_figure_and_asset(small_site):
    files = _files(small_site)
    for page in ("index", "compare", "trends", "adoption", "distributions", "families", "claims"):
        assert f"{page}.html" in files
    for card in ("toy-1b", "toy-7b", HOSTILE_ID):
        assert f"cards/{card}.html" in files
    assert "static/site.css" in files and "static/site.js" in files
    figures = [name for name in files if name.startswith("figures/")]
    assert figures and all(name.endswith(".svg") for name in figures)
    # every figure a page shows exists, and nothing is fetched from elsewhere
    for name, data in files.items():
        if name.endswith(".html"):
            text = data.decode()
            for src in re.findall(r'<img src="([^"]+)"', text):
                assert src in files, (name, src)
            assert not re.search(r'src="(?:https?:)?//', text), name
            assert not re.search(r'rel="stylesheet" href="(?:https?:)?//', text), name


def test_card_text_is_never_markup(small_site):
    for name in ("index.html", f"cards/{HOSTILE_ID}.html", "compare.html", "adoption.html"):
        text = (small_site / name).read_text()
        assert "<script>alert" not in text and "<img src=x" not in text, name
        assert "</td><b>" not in text, name
        # the only scripts: our file and the comparison's inert JSON
        for tag in re.findall(r"<script[^>]*>", text):
            assert tag in (
                '<script src="static/site.js">',
                '<script src="../static/site.js">',
                '<script type="application/json" id="compare-data">',
            ), (name, tag)
    index = (small_site / "index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    page = (small_site / f"cards/{HOSTILE_ID}.html").read_text()
    assert "<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>" in page
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in page  # the note
    assert 'title="&quot;&gt;&lt;img src=x onerror=alert(4)&gt;"' in page  # the source


def test_comparison_data_is_inert_json_that_round_trips(small_site):
    text = (small_site / "compare.html").read_text()
    payload = re.search(r'id="compare-data">(.*?)</script>', text, re.S).group(1)
    assert "<" not in payload and ">" not in payload and "&" not in payload
    data = json.loads(payload)
    assert data["cards"][HOSTILE_ID]["name"] == HOSTILE_NAME
    assert data["fields"][data["fields"].index("architecture.d_model")]


def test_json_script_escapes_what_could_end_the_element():
    html = json_script("x", {"a": "</script><!-- & -->"})
    assert html.count("</script>") == 1
    assert "\\u003c/script\\u003e\\u003c!-- \\u0026 --\\u003e" in html


def test_card_page_shows_sources_figures_and_toy(small_site, small_catalogue):
    card = load_catalogue(small_catalogue).get("toy-1b")
    page = (small_site / "cards/toy-1b.html").read_text()
    assert '<a href="https://example.org/toy-1b/config.json" rel="noopener noreferrer">' in page
    # the d_model row links its source
    row = re.search(r'<tr id="field-architecture.d_model">.*?</tr>', page).group(0)
    assert 'href="https://example.org/toy-1b/config.json"' in row
    figures = derived_figures(card)
    assert f"{figures['params_exact']:,} total" in page
    assert f"at {figures['kv_seq_len']:,} tokens (" in page
    own = card.architecture.context_length
    assert f"at its own context of {own:,} tokens</dd>" in page  # no recurrent state
    level = fidelity(card)
    assert f">{level.level}</span>" in page  # the words `archdb show` uses
    assert '<pre class="tree">' in page and "Embedding 256x" in page


def test_card_pages_state_fidelity_as_archdb_show_does(small_site, small_catalogue):
    """The site and `archdb show` give one fidelity level, in the same words."""
    for card in load_catalogue(small_catalogue):
        page = (small_site / f"cards/{card.id}.html").read_text()
        level = fidelity(card)
        assert f">{level.level}</span>" in page
    assert toy_tree(load_catalogue(DEFAULT_PATH).get("command-a")).text is None


def test_small_shares_are_printed_as_the_cli_prints_them():
    assert format_value(0.000122, "norm_flops_share") == "0.000122"
    assert format_value(11008, "architecture.mlp.d_ff") == "11,008"
    assert format_value(6.7e9, "params_exact") == "6.7B"


def test_unused_features_are_one_line_and_notes_are_shown_once(small_site, small_catalogue):
    card = load_catalogue(small_catalogue).get("toy-1b")
    page = (small_site / "cards/toy-1b.html").read_text()
    folded = re.findall(r'<details class="unused"><summary>Not used by this model: (\d+) ', page)
    assert len(folded) == 1 and int(folded[0]) > 10  # one folded line, not a row each
    assert ">not used</td>" not in page
    for key, note in card.notes.items():
        assert page.count(note.replace("'", "&#x27;").replace('"', "&quot;")) == 1, key


def test_report_markdown_becomes_safe_html():
    html = to_html(
        "# Title <b>\n\nA [page](claims.md#claim-2), [bad](javascript:alert(1)), `llama`, "
        "**bold** and *it*.\n\n| a | b |\n|---|---:|\n| x \\| y | 1 |\n\n- one\n- two\n\n"
        '<a id="claim-3"></a>\n\n![fig](figures/x.svg)\n',
        link_code=lambda text: f"cards/{text}.html" if text == "llama" else None,
    )
    assert "<h1>Title &lt;b&gt;</h1>" in html
    assert '<a href="claims.html#claim-2">page</a>' in html
    assert "javascript" in html and 'href="javascript' not in html
    assert '<a href="cards/llama.html"><code>llama</code></a>' in html
    assert "<strong>bold</strong>" in html and "<em>it</em>" in html
    assert "<td>x | y</td>" in html and '<td class="num">1</td>' in html
    assert "<ul><li>one</li><li>two</li></ul>" in html
    assert '<span id="claim-3" class="anchor"></span>' in html
    assert '<img src="figures/x.svg" alt="fig"' in html


def test_rebuild_replaces_an_earlier_site_and_drops_stale_pages(
    small_catalogue, small_site, tmp_path, monkeypatch
):
    import torch

    from archdb.reports import build

    out = tmp_path / "site"
    threads = torch.get_num_threads()
    # the module's catalogue: its report data and render are the small site's (memoized)
    build_site(load_catalogue(small_catalogue), out)
    assert torch.get_num_threads() == threads  # the build runs on one, then restores it
    assert (out / "cards/toy-7b.html").exists() and (out / f"cards/{HOSTILE_ID}.html").exists()
    # A one-card catalogue's render, its figures drawn but not saved as SVG (most of a
    # render; what this test checks is which pages the rebuild leaves) and kept from the
    # other tests' memos; test_same_catalogue_gives_the_same_bytes checks the real bytes.
    empty_report_memos(monkeypatch)
    monkeypatch.setattr(build.figures, "save_svg", lambda fig, path: None)
    one = write(tmp_path / "one.yaml", card_text("toy-1b"))
    build_site(load_catalogue(one), out)
    assert not (out / "cards/toy-7b.html").exists()
    assert not (out / f"cards/{HOSTILE_ID}.html").exists()
    assert (out / "cards/toy-1b.html").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers


def test_a_folder_of_other_files_is_left_alone(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    # refused before any report data is computed
    cat = load_catalogue(write(tmp_path / "one.yaml", card_text("toy-1b")))
    with pytest.raises(SiteError, match="did not make"):
        build_site(cat, out)
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]
    result = run_cli("site", "-o", str(out), "-C", str(tmp_path / "one.yaml"))
    assert result.returncode == 2
    assert "did not make" in result.stderr and "Traceback" not in result.stderr


def test_cli_builds_the_site_and_reports_bad_data(small_catalogue, small_site, tmp_path):
    out = tmp_path / "_site"  # the module's catalogue: its report render is memoized
    result = run_cli("site", "-o", str(out), "-C", str(small_catalogue))
    assert result.returncode == 0, result.stderr
    assert re.search(r"wrote \d+ pages and \d+ figures to .*_site in [\d.]+ s", result.stdout)
    assert (out / "index.html").is_file()
    bad = write(tmp_path / "bad.yaml", card_text("toy-1b").replace("d_model: 2048", "d_model: -1"))
    result = run_cli("site", "-o", str(tmp_path / "x"), "-C", str(bad))
    assert result.returncode == 1
    assert "bad.yaml" in result.stderr and "d_model" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "x").exists()


def test_claims_page_shows_verdicts_as_words_not_emoji(small_site):
    page = (small_site / "claims.html").read_text()
    assert '<span class="verdict ' in page
    assert not re.search("[\u2705\U0001f7e1\u274c\u2b1c]", page)


def test_toy_trees_are_cached_by_architecture_and_planted_entries_ignored(
    private_cache, monkeypatch
):
    """The site's toy trees: built once per architecture, code and torch version; a store
    with a wrong-typed or oversized entry is not read."""
    from archdb import cache
    from archdb.site import data

    cards = list(load_catalogue(DEFAULT_PATH))[:3]
    built = data.toy_trees(cards)
    assert built == {c.id: toy_tree(c) for c in cards}  # what the site showed before
    (store,) = private_cache.glob("toy-trees-*.json")

    def no_build(card, *_):
        raise AssertionError(f"{card.id} built again")

    with monkeypatch.context() as patch:
        patch.setattr(data, "toy_tree", no_build)
        assert data.toy_trees(cards) == built  # read back: nothing built
        other = cards[0].model_copy(update={"id": "other"})
        assert data.toy_trees([other])["other"] == built[cards[0].id]  # same architecture
    doc = json.loads(stored_payload(store))
    for planted in ([1, "rule"], ["x" * (cache.MAX_TREE_CHARS + 1), "rule"], ["tree"], "tree"):
        first = next(iter(doc["toy-trees"]))
        store_sealed(store, json.dumps({**doc, "toy-trees": {**doc["toy-trees"], first: planted}}))
        assert data.toy_trees(cards) == built  # the store ignored, every toy built again
