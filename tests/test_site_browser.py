"""The site in a real browser: headless chromium (Debian's), driven by Selenium.

The shipped catalogue's site is served over http on 127.0.0.1 and visited: the index
lists every card, its search, filters and sorting work, a card page links its sources,
the comparison shows the chosen models side by side, every figure loads and no page logs
a console error. The site of tests/test_site.py's small catalogue, with a hostile card
(its name is ``<script>alert(1)</script>``), shows that no card text ever runs. Both
sites are built once per test session (``tests.conftest.shared_site``), by whichever
worker asks first. Screenshots go to .artifacts/site/.

Skipped with the reason when chromium, chromedriver or selenium is missing, except in
CI (CI=true), where test_browser_tests_run_in_ci fails instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from archdb.catalogue import DEFAULT_PATH, load_catalogue
from archdb.site.build import COMPARE_DEFAULTS
from archdb.site.pages import NAV
from tests import browser
from tests.conftest import shared_site
from tests.site_fixtures import HOSTILE_ID, HOSTILE_NAME, small_catalogue

ARTIFACTS = Path(__file__).resolve().parent.parent / ".artifacts" / "site"
MISSING = browser.missing()
needs_browser = pytest.mark.skipif(MISSING is not None, reason=f"no browser: {MISSING}")


def test_browser_tests_run_in_ci():
    """CI installs chromium (.ci/run): there, a skipped browser test is a failure."""
    if os.environ.get("CI", "").lower() not in ("true", "1"):
        pytest.skip("not in CI; browser tests run when chromium is installed")
    assert MISSING is None, f"CI must run the browser tests, but: {MISSING}"


@pytest.fixture(scope="module")
def site_dir(shared_folder) -> Path:
    """The shipped catalogue's site (read only; its report render is the session's, which
    tests/test_wheel.py checks against an installed wheel's)."""
    return shared_site(shared_folder, DEFAULT_PATH)


@pytest.fixture(scope="module")
def site(site_dir):
    with browser.serve(site_dir) as base:
        yield base


@pytest.fixture(scope="module")
def hostile_site(shared_folder, tmp_path_factory):
    """The small catalogue's site, with the hostile card (tests/test_site.py's)."""
    catalogue = small_catalogue(tmp_path_factory.mktemp("catalogue"))
    with browser.serve(shared_site(shared_folder, catalogue)) as base:
        yield base


@pytest.fixture(scope="module")
def chrome(tmp_path_factory):
    if MISSING is not None:
        pytest.skip(f"no browser: {MISSING}")
    with browser.chromium(tmp_path_factory.mktemp("profile")) as driver:
        yield driver


@pytest.fixture
def visit(chrome, site):
    """Open a page; afterwards, assert it logged no console error and ran no dialog."""
    visited: list[str] = []

    def go(page: str, base: str = site):
        chrome.get(base + page)
        visited.append(page)
        return chrome

    yield go
    errors = [e for e in chrome.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == [], f"console errors on {visited}: {errors}"
    assert chrome.execute_script("return window.__dialogs") == [], visited


# The index rows the browser shows, found in the page by one script: Selenium's
# is_displayed and get_attribute are a round trip each, a row at a time (most of these
# tests' time with 250 rows).
VISIBLE_ROWS = "[...document.querySelectorAll('#cards tbody tr')].filter(r => r.checkVisibility())"


def _visible_rows(driver) -> list:
    return driver.execute_script(f"return {VISIBLE_ROWS}")


def _visible_attribute(driver, name: str) -> list[str | None]:
    """One attribute of every shown row, in the rows' order."""
    return driver.execute_script(
        f"return {VISIBLE_ROWS}.map(r => r.getAttribute(arguments[0]))", name
    )


def _screenshot(driver, name: str, max_height: int = 8000) -> Path:
    """The whole page (down to ``max_height`` px), not only what the window shows."""
    import base64

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    # the window's width: a capture beyond the viewport lays the page out without the
    # scrollbar, at the whole window's width
    width, height = driver.execute_script(
        "return [window.innerWidth, document.documentElement.scrollHeight]"
    )
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": min(height, max_height), "scale": 1},
        },
    )
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


@needs_browser
def test_index_lists_every_card(visit):
    driver = visit("index.html")
    ids = load_catalogue(DEFAULT_PATH).ids()
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#cards tbody tr')].map(r => r.id)"
    )
    assert len(rows) == len(ids)
    assert sorted(r.removeprefix("row-") for r in rows) == sorted(ids)
    # the table's rendered text in one script (Selenium's .text walks the 250 rows itself)
    text = driver.execute_script("return document.getElementById('cards').innerText")
    for card_id in ids:
        assert card_id in text
    assert driver.find_element("id", "count").text == f"{len(ids)} of {len(ids)} cards"
    assert _screenshot(driver, "index").stat().st_size > 10_000


@needs_browser
def test_filter_and_search_narrow_the_rows(visit):
    from selenium.webdriver.support.select import Select

    driver = visit("index.html")
    total = len(_visible_rows(driver))
    # RMSNorm, then MoE: both narrow the rows and neither empties them (no LayerNorm card
    # is MoE, so LayerNorm then MoE would leave nothing to check)
    Select(driver.find_element("css selector", 'select[data-filter="norm"]')).select_by_value(
        "rmsnorm"
    )
    norms = _visible_attribute(driver, "data-norm")
    assert 0 < len(norms) < total
    assert set(norms) == {"rmsnorm"}
    assert driver.find_element("id", "count").text == f"{len(norms)} of {total} cards"
    Select(driver.find_element("css selector", 'select[data-filter="moe"]')).select_by_value("moe")
    both = _visible_attribute(driver, "data-moe")
    assert 0 < len(both) < len(norms)
    assert set(both) == {"moe"}
    driver.find_element("id", "reset").click()
    assert len(_visible_rows(driver)) == total
    driver.find_element("id", "search").send_keys("gemma 2")
    found = driver.execute_script(f"return {VISIBLE_ROWS}.map(r => r.innerText)")
    assert 0 < len(found) < total
    assert all("gemma" in text.lower() and "2" in text for text in found)


@needs_browser
def test_sorting_by_a_column_orders_the_rows(visit):
    driver = visit("index.html")
    header = driver.find_element("xpath", "//th[button[text()='params']]")
    column = header.get_property("cellIndex")

    def params() -> list[float]:
        keys = driver.execute_script(
            f"return {VISIBLE_ROWS}.map(r => r.cells[arguments[0]].getAttribute('data-sort'))",
            column,
        )
        return [float(k) for k in keys if k]

    header.find_element("tag name", "button").click()
    assert header.get_attribute("aria-sort") == "ascending"
    ascending = params()
    assert len(ascending) > 50 and ascending == sorted(ascending)
    header.find_element("tag name", "button").click()
    assert header.get_attribute("aria-sort") == "descending"
    assert params() == sorted(ascending, reverse=True)
    first = _visible_attribute(driver, "id")[0]
    cards = load_catalogue().cards
    largest = max(c.params_published or 0 for c in cards)  # ties (1.6T twice) in any order
    assert first in {"row-" + c.id for c in cards if c.params_published == largest}


@needs_browser
def test_card_page_links_its_sources(visit):
    card = load_catalogue().get("llama-2-7b")
    driver = visit(f"cards/{card.id}.html")
    assert driver.find_element("tag name", "h1").text == card.name
    links = driver.find_elements("css selector", "ol.sources a")
    assert [a.get_attribute("href") for a in links] == [s.url for s in card.sources]
    row = driver.find_element("id", "field-architecture.d_model")
    assert "4096" in row.text
    cited = {a.get_attribute("href") for a in row.find_elements("tag name", "a")}
    assert cited and cited <= {s.url for s in card.sources}
    assert ">logit-exact</span>" in driver.page_source  # as `archdb show` says
    tree = driver.find_element("css selector", "pre.tree").text
    assert "embed" in tree and "layers" in tree
    _screenshot(driver, "card-llama-2-7b")


@needs_browser
def test_compare_shows_the_chosen_models_side_by_side(visit):
    from selenium.webdriver.support.select import Select

    driver = visit("compare.html?ids=llama-2-7b,gemma-2-9b")
    heads = [th.text for th in driver.find_elements("css selector", "#comparison thead th")]
    assert heads == ["field", "llama-2-7b", "gemma-2-9b"]

    def row(field: str):  # one round trip, not two for each of the hundred rows
        return driver.find_element("xpath", f"//*[@id='comparison']//tbody/tr[td[1]='{field}']")

    d_model = row("d_model")
    cells = [td.text for td in d_model.find_elements("tag name", "td")]
    assert cells == ["d_model", "4096", "3584 ×0.875"]
    assert "differs" in d_model.get_attribute("class")
    assert "differs" not in row("norm.type").get_attribute("class")
    # the two diagrams side by side, loaded, and the architecture in words, differences marked
    images = driver.find_elements("css selector", "#diagrams img.diagram")
    assert [i.get_attribute("src").rsplit("/", 1)[1] for i in images] == [
        "llama-2-7b.svg",
        "gemma-2-9b.svg",
    ]
    assert all(driver.execute_script("return arguments[0].naturalWidth", i) > 0 for i in images)
    words = {
        tr.find_element("tag name", "td").text: tr.get_attribute("class")
        for tr in driver.find_elements("css selector", "#diagrams table tbody tr")
    }
    assert "differs" in words["norm"] and "differs" in words["layers"]  # double vs pre; local
    assert "differs" not in words["blocks"]  # both serial
    card_diagram = driver.find_element("css selector", "#diagrams img.diagram")
    assert card_diagram.size["width"] > 100
    _screenshot(driver, "compare")
    Select(driver.find_elements("css selector", "select.pick")[2]).select_by_value("gpt-3-175b")
    heads = [th.text for th in driver.find_elements("css selector", "#comparison thead th")]
    assert heads == ["field", "llama-2-7b", "gemma-2-9b", "gpt-3-175b"]
    assert "ids=llama-2-7b,gemma-2-9b,gpt-3-175b" in driver.current_url
    driver.find_element("id", "only-diff").click()
    classes = driver.execute_script(
        "return [...document.querySelectorAll('#comparison tbody tr')].map(r => r.className)"
    )
    assert classes and all("differs" in c.split() for c in classes)


@needs_browser
def test_a_card_named_script_is_shown_as_text(visit, hostile_site):
    driver = visit("index.html", hostile_site)
    row = driver.find_element("id", f"row-{HOSTILE_ID}")
    assert HOSTILE_NAME in row.text
    assert "Evil & Co </td><b>x</b>" in row.text
    driver = visit(f"cards/{HOSTILE_ID}.html", hostile_site)
    assert driver.find_element("tag name", "h1").text == HOSTILE_NAME
    assert "<img src=x onerror=alert(3)>" in driver.find_element("tag name", "main").text
    assert driver.find_elements("css selector", "main img:not(.diagram), main b, main script") == []
    (diagram,) = driver.find_elements("css selector", "main img.diagram")  # the site's own
    assert diagram.get_attribute("src").endswith(f"/diagrams/{HOSTILE_ID}.svg")
    driver = visit(f"compare.html?ids={HOSTILE_ID},toy-1b", hostile_site)
    name_row = driver.find_element("xpath", "//tbody/tr[td[1]='name']")
    assert HOSTILE_NAME in name_row.text
    assert driver.find_elements("css selector", "#comparison img, #comparison script") == []


@needs_browser
@pytest.mark.parametrize(
    "page", ["trends.html", "adoption.html", "distributions.html", "families.html", "claims.html"]
)
def test_trend_pages_show_their_figures(visit, page):
    driver = visit(page)
    assert driver.find_element("tag name", "h1").text
    # each image's state and each link in one script: a round trip per element cost
    # seconds on the claims page's 450 links
    images = driver.execute_script(
        "return [...document.querySelectorAll('main img')]"
        ".map(i => [i.src, i.complete && i.naturalWidth > 0])"
    )
    if page not in ("families.html", "claims.html"):  # the two pages without figures
        assert images
    assert [src for src, loaded in images if not loaded] == []
    if page == "claims.html":  # the deciding models' ids link to their pages
        links = driver.execute_script(
            "return [...document.querySelectorAll('main a')].map(a => a.href)"
        )
        cards = [h for h in links if "/cards/" in h]
        assert cards and all(re.search(r"/cards/[a-z0-9.-]+\.html$", h) for h in cards)
    if page == "adoption.html":
        _screenshot(driver, "adoption")


@needs_browser
def test_the_site_works_from_files_without_a_server(chrome, site_dir):
    for page, query in (("index.html", ""), ("compare.html", "?ids=gpt-3-175b,llama-2-7b")):
        chrome.get((site_dir / page).as_uri() + query)
        rows = chrome.find_elements("css selector", "#cards tbody tr, #comparison tbody tr")
        assert len(rows) > 20, page
        assert [e for e in chrome.get_log("browser") if e["level"] == "SEVERE"] == [], page


TOP_PAGES = tuple(f"{href}" for href, _ in NAV)
CARD_PAGES = (
    "cards/llama-2-7b.html",  # a dense decoder
    "cards/nemotron-h-8b.html",  # a hybrid
    "cards/deepseek-v3.html",  # a MoE
    "cards/t5-base.html",  # an encoder-decoder
    "cards/zamba2-2.7b.html",  # shared blocks
)


def _longest_url_card() -> str:
    """The card whose source URL is longest (a URL that never wraps widens its page)."""
    cards = load_catalogue().cards
    card = max(cards, key=lambda c: max(len(s.url) for s in c.sources))
    return f"cards/{card.id}.html"


@needs_browser
@pytest.mark.parametrize("width", [400, 1400])
def test_every_page_fits_the_screen_without_raw_markdown(visit, site, width):
    """At a phone's 400 px and a desktop's 1,400 px: every top page and a card of each
    design scrolls only down (wide tables scroll inside themselves), shows no Markdown as
    text; the navigation is a bar on the desktop and one menu line on the phone; a
    screenshot of each, whole."""
    driver = visit("index.html")
    driver.set_window_size(width, 900)
    try:
        for page in (*TOP_PAGES, *CARD_PAGES, _longest_url_card()):
            driver.get(site + page)
            wide, viewport, text, bar, menu, header = driver.execute_script(
                "const d = document.documentElement;"
                "const shown = e => e && e.getClientRects().length > 0;"
                "return [d.scrollWidth, d.clientWidth, document.body.innerText,"
                " shown(document.querySelector('nav.bar')),"
                " shown(document.querySelector('details.menu')),"
                " document.querySelector('header.site').getBoundingClientRect().height]"
            )
            assert wide <= viewport, f"{page} is {wide} px wide at {viewport} px"
            assert _raw_markdown(text) is None, f"raw Markdown on {page}: {_raw_markdown(text)}"
            assert (bar, menu) == ((False, True) if width == 400 else (True, False)), page
            assert header < 60, f"the header of {page} takes {header} px"  # one line
            _screenshot(driver, f"{width}-{page.replace('/', '-').removesuffix('.html')}")
        if width == 400:  # the menu opens to every page
            driver.get(site + "trends.html")
            driver.find_element("css selector", "details.menu summary").click()
            links = driver.find_elements("css selector", "details.menu nav a")
            assert [a.text for a in links] == [label for _, label in NAV]
            assert all(a.is_displayed() for a in links)
    finally:
        driver.set_window_size(1500, 1000)


@needs_browser
def test_the_index_opens_newest_first(visit):
    driver = visit("index.html")
    ids = [i.removeprefix("row-") for i in _visible_attribute(driver, "id")]
    dates = {c.id: c.release_date for c in load_catalogue().cards}
    assert [dates[i] for i in ids] == sorted(dates.values(), reverse=True)


@needs_browser
@pytest.mark.parametrize("width", [400, 1400])
def test_the_compare_page_opens_on_two_designs_with_their_differences_marked(visit, width):
    """Without a choice in the address: two well-known models of different design, their
    diagrams loaded side by side (at 1,400 px) and the parts that differ marked."""
    driver = visit("compare.html")
    driver.set_window_size(width, 900)
    try:
        driver.refresh()
        chosen = [
            s.get_attribute("value") for s in driver.find_elements("css selector", "select.pick")
        ]
        assert chosen[:2] == list(COMPARE_DEFAULTS) and chosen[2:] == ["", ""]
        images = driver.find_elements("css selector", "#diagrams img.diagram")
        assert [i.get_attribute("src").rsplit("/", 1)[1] for i in images] == [
            f"{i}.svg" for i in COMPARE_DEFAULTS
        ]
        assert all(driver.execute_script("return arguments[0].naturalWidth", i) > 0 for i in images)
        first, second = (i.rect for i in images)
        if width == 1400:
            assert first["y"] == second["y"] and first["x"] + first["width"] <= second["x"]
        marks = [
            [m.text for m in f.find_elements("tag name", "mark")]
            for f in driver.find_elements("css selector", "#diagrams figcaption")
        ]
        assert marks[0] and marks[0] == marks[1] and "layers" in marks[0]
        differs = [
            tr.find_element("tag name", "td").text
            for tr in driver.find_elements("css selector", "#diagrams tr.differs")
        ]
        assert differs == marks[0]
        _screenshot(driver, f"{width}-compare-default")
        # the search box narrows every list, each keeping its own choice
        driver.find_element("id", "pick-filter").send_keys("google 2024")
        lists = driver.execute_script(
            "return [...document.querySelectorAll('select.pick')]"
            ".map(s => [...s.options].map(o => o.value + ' ' + o.textContent))"
        )
        for kept, choice in zip(lists, chosen, strict=True):
            found = [o for o in kept if o.split(" ")[0] not in ("", choice)]
            assert found and all("Google" in o and "2024" in o for o in found), found
            assert any(o.startswith(f"{choice} ") for o in kept) or not choice
    finally:
        driver.set_window_size(1500, 1000)


def test_every_card_page_shows_its_diagram(site_dir):
    cards = load_catalogue().cards
    for card in cards:
        page = (site_dir / "cards" / f"{card.id}.html").read_text(encoding="utf-8")
        assert f'<img class="diagram" src="../diagrams/{card.id}.svg"' in page, card.id
        svg = (site_dir / "diagrams" / f"{card.id}.svg").read_text(encoding="utf-8")
        assert svg.startswith("<svg ") and "<script" not in svg
    assert len(list((site_dir / "diagrams").glob("*.svg"))) == len(cards)


# Markdown a converter would have turned into HTML: a link, bold text, a heading, a table
# row (a card's note may hold "d ** -0.5" or "x**0.5 ... y**-0.5": Python, not bold)
RAW_MARKDOWN = re.compile(
    r"\]\((?:https?://|[\w./-]+\.(?:md|html|svg|png)\b)[^)\s]*\)|(?:^|\s)\*\*[A-Za-z][^*\n]{0,80}?[A-Za-z.)]\*\*(?=[\s.,;:]|$)"
    r"|^#{1,6} \w|^\|.*\|$",
    re.M,
)


def _raw_markdown(text: str) -> str | None:
    found = RAW_MARKDOWN.search(text)
    return None if found is None else found.group(0)


def test_no_page_shows_raw_markdown(site_dir):
    """No page's text holds Markdown and no link points at a Markdown file: every report
    page went through the converter, its links to other reports made pages of the site."""
    from html import unescape

    for page in site_dir.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        body = re.sub(r"<script\b.*?</script>", "", html.split("<main>", 1)[1], flags=re.S)
        text = unescape(re.sub(r"<[^>]+>", "", body))
        assert _raw_markdown(text) is None, f"{page.relative_to(site_dir)}: {_raw_markdown(text)}"
        links = re.findall(r'href="(?![a-z]+:)([^"#]*\.md)(?:#[^"]*)?"', html)  # own pages
        assert links == [], f"{page.relative_to(site_dir)} links Markdown files: {links}"


def test_card_pages_give_the_cache_at_8192_tokens_and_at_their_own_context(site_dir):
    hybrid = (site_dir / "cards/qwen3.5-27b.html").read_text(encoding="utf-8")
    context = load_catalogue().get("qwen3.5-27b").architecture.context_length
    assert " at 8,192 tokens (" in hybrid
    assert (
        f"at its own context of {context:,} tokens, the recurrent layers&#x27; fixed state "
        "included" in hybrid
    )
    dense = (site_dir / "cards/llama-2-7b.html").read_text(encoding="utf-8")
    assert "at its own context of 4,096 tokens</dd>" in dense and "fixed state" not in dense


def test_every_internal_link_of_the_site_resolves(site_dir):
    """Every href and src in every page of the shipped catalogue's site names a file of
    the site (fragments and external addresses aside)."""
    import re
    from urllib.parse import unquote, urlsplit

    broken = []
    for page in site_dir.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        for target in re.findall(r'(?:href|src)="([^"]+)"', html):
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            if not (page.parent / unquote(parts.path)).resolve().is_file():
                broken.append(f"{page.relative_to(site_dir)} -> {target}")
    assert broken == []
