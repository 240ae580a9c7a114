"""A real headless browser for the site's tests: Debian's chromium driven by Selenium.

The binary and driver are given explicitly (never downloaded): /usr/bin/chromium and
/usr/bin/chromedriver, or ARCHDB_CHROMIUM / ARCHDB_CHROMEDRIVER. ``missing()`` says why
the browser tests cannot run here; in CI (CI=true) that is a failure, not a skip.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path(os.environ.get("ARCHDB_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("ARCHDB_CHROMEDRIVER", "/usr/bin/chromedriver"))
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1500,1000",
)
# Replaces alert/confirm/prompt before any page script runs: a call is recorded, so a
# test can assert no card text ever ran as script.
RECORD_DIALOGS = (
    "window.__dialogs = [];"
    "for (const name of ['alert', 'confirm', 'prompt']) {"
    "  window[name] = function (m) { window.__dialogs.push(name + ':' + String(m)); };"
    "}"
)


def missing() -> str | None:
    """Why the browser tests cannot run, or None when they can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is not installed (pip install -e '.[test]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (path.is_file() and os.access(path, os.X_OK)):
            return f"{path} not found: apt-get install chromium chromium-driver"
    return None


@contextmanager
def chromium(profile: Path) -> Iterator[object]:
    """A headless chromium with a fresh profile, its console log kept for the tests."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must never download
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_DIALOGS})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over http on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for the loop's next poll: at the default 0.5 s, half a second per
    # server at the end of the module
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
