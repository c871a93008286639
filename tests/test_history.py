"""The performance history: commits measured on an H100, published as pages whose graphs draw
in headless Chromium (Debian's ``chromium`` and ``chromium-driver``, which README's test line
and ``.ci/run`` install), with no network but the npm registry the published files come from."""

import functools
import http.server
import json
import math
import shutil
import threading
from pathlib import Path

import pytest

from benchmarks import publish_history

RESULTS = publish_history.CONFIG.parent / "results"
BENCHMARKS = ("default_calls.IsingDefaultCall.track_flips_per_ns", "default_calls.ReadmeJob.track_seconds")
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _h100_results() -> list:
    return [json.loads(path.read_text()) for folder in RESULTS.iterdir() if folder.is_dir() and "h100" in folder.name
            for path in folder.glob("*-existing-*.json")]


def test_history_holds_ten_commits_measured_on_an_h100():
    results = _h100_results()
    assert len({r["commit_hash"] for r in results}) >= 10
    for result in results:
        for name in BENCHMARKS:
            values = result["results"][name][0]
            assert all(math.isfinite(v) and v > 0 for v in values), (result["commit_hash"], name, values)


@pytest.fixture
def browser():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    assert not missing, f"{missing} missing: apt-get install chromium chromium-driver (README's test line does)"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()


def _serve(folder: Path) -> http.server.ThreadingHTTPServer:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_published_history_draws_the_ising_step_in_chromium(browser, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    html = tmp_path / "html"
    publish_history.main(["--html", str(html)])
    server = _serve(html)
    try:
        browser.get(f"http://127.0.0.1:{server.server_port}/#{BENCHMARKS[0]}")
        series = WebDriverWait(browser, 60).until(lambda b: b.execute_script(
            "var plot = window.jQuery && jQuery('#main-graph').data('plot');"
            "return plot ? plot.getData().map(s => [s.label, s.data.filter(p => p[1] !== null).map(p => p[1])])"
            "            : null;"))
        painted = browser.execute_script(
            "var c = document.querySelector('#main-graph canvas.flot-base');"
            "var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0;"
            "for (var i = 3; i < d.length; i += 4) n += d[i] > 0; return n;")
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        server.shutdown()
    assert not errors, errors  # every script and style sheet came from the folder
    assert painted > 10_000  # axes, grid, lines and points drawn on the canvas
    by_size = dict(series)
    assert sorted(by_size) == ["L-16384", "L-2048"] and all(len(v) >= 10 for v in by_size.values()), series
    # the step of the measurements moved into the sweeps: the history's first commits measure
    # in a pass of their own at every sweep, the last ones count inside the sweeps
    assert min(by_size["L-16384"][-5:]) > 5 * max(by_size["L-16384"][:2]), by_size["L-16384"]
