"""The dashboard and the HTML report in a real browser: Debian's headless Chromium, driven by Playwright.

During a 4-rank crawl of a generated web served on loopback, the page shows the same
pages-crawled and SCC figures as ``/status.json`` (the snapshot it says it shows, and no older
than one refresh), every chart loads, a screenshot is written to ``test-artifacts/``; the stop
button refuses a wrong token and, with the printed one, ends the crawl with a complete session.
``abc-report --html`` opens from disk with every figure drawn and no failed load.

``make test`` installs Chromium (Debian's ``chromium``) and sets ``ABC_REQUIRE_BROWSER=1``: there a
missing browser fails these tests; elsewhere they are skipped with the reason.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from browsers import chromium
from crawlcheck import BIN, LAB, MPIEXEC, check_session, crawl_cli, generate, serve
from dashcheck import documented_schema, schema_problems

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("ABC_TEST_ARTIFACTS", ROOT / "test-artifacts"))
# (Chromium: tests/browsers.py) wait_for_function gets arrow functions: an expression string would be
# eval'd, which the page's CSP refuses
REFRESH = 1.0                     # the page's polling interval in these tests (?refresh=1)
#: the least time the live crawl needs by its politeness rests alone (the test stops it long before:
#: about 30 s of watching here, so a machine 4 times slower still stops it), and its --time-limit
MIN_CRAWL_S = 200
TIME_LIMIT = 400

pytestmark = pytest.mark.timeout(420)


@pytest.fixture(scope="module")
def browser():
    yield from chromium()


def watch(page) -> dict:
    """Console errors, failed requests and HTTP error answers of ``page``."""
    seen = {"console": [], "failed": [], "http_errors": []}
    page.on("console", lambda m: seen["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["console"].append(str(e)))
    page.on("requestfailed", lambda r: seen["failed"].append(f"{r.url}: {r.failure}"))
    page.on("response", lambda r: seen["http_errors"].append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return seen


class Poller(threading.Thread):
    """Reads /status.json every 0.1 s while the crawl runs: seq -> snapshot, and when each seq was first seen."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url = url
        self.snaps: dict[int, dict] = {}
        self.first_seen: list[tuple[float, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + 300
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                s = json.loads(urllib.request.urlopen(self.url + "status.json", timeout=5).read())
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.1)
                continue
            if s["seq"] not in self.snaps:
                self.snaps[s["seq"]] = s
                self.first_seen.append((time.monotonic(), s["seq"]))
            time.sleep(0.1)

    def latest_before(self, t: float) -> int:
        return max((seq for at, seq in self.first_seen if at <= t), default=0)


def dom_figures(page) -> dict:
    return page.evaluate("""() => ({
        seq: Number(document.body.dataset.seq),
        pages: document.getElementById('pages-crawled').textContent,
        scc: document.getElementById('scc-count').textContent,
        scope: document.getElementById('scc-scope').textContent,
        state: document.getElementById('state').textContent})""")


def scc_figure(snap: dict) -> dict | None:
    return next((f for f in snap["graph"]["figures"] if f["name"] == "scc_count"), None)


def test_dashboard_in_chromium_during_a_4_rank_crawl(browser, tmp_path):
    web = tmp_path / "web"
    truth = generate(web, n_hosts=8, n_pages=2000, seed=21)
    # the crawl cannot end by itself while the page is watched: its biggest host alone owes
    # MIN_CRAWL_S of politeness rests (0.3 s between two requests, whichever ranks send them; checked
    # on every crawl's log), several times what the watching takes, and its time limit is longer; it
    # ends by the stop button
    per_host = Counter(u.split("/")[2] for u in truth["expected"]["requested"])
    assert max(per_host.values()) * 0.3 >= MIN_CRAWL_S and TIME_LIMIT > MIN_CRAWL_S, per_host.most_common(3)
    session = tmp_path / "s"
    with serve(web):
        cmd = [MPIEXEC, "-n", "4", str(BIN / "abc-crawl"), str(web / "seeds.txt"), *LAB, "--resolve", str(web / "resolve.txt"),
               "--session-dir", str(session), "--politeness-delay", "0.3", "--batch-urls", "2",
               "--progress-seconds", "1", "--time-limit", str(TIME_LIMIT), "--dashboard", "127.0.0.1:0"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
        reader.start()
        poller = None
        try:
            deadline = time.monotonic() + 60
            m = None
            while m is None:
                assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)[-3000:]
                m = next((re.search(r"dashboard (http://127\.0\.0\.1:\d+/) stop token (\S+)", ln) for ln in lines
                          if "dashboard http" in ln), None)
                time.sleep(0.05)
            url, token = m.groups()
            # printed before the first progress line
            first_progress = next(i for i, ln in enumerate(lines + ["[ end"]) if ln.startswith("["))
            assert any("dashboard http" in ln for ln in lines[:first_progress])
            poller = Poller(url)
            poller.start()

            page = browser.new_page(viewport={"width": 1360, "height": 1200})
            seen = watch(page)
            page.goto(url + f"?refresh={REFRESH}")
            page.wait_for_function("() => Number(document.body.dataset.seq) >= 3", timeout=60_000)

            # the DOM shows the figures of the snapshot it names, never an older one than it showed
            # before, and it catches up with every snapshot the server published: after each reading
            # it reaches the newest one /status.json had served by then (an event waited for, bounded
            # for a busy machine, not a staleness in seconds that a slow machine misses)
            matched, values, shown = 0, set(), 0
            for _ in range(40):
                newest = poller.latest_before(time.monotonic())
                dom = dom_figures(page)
                assert dom["seq"] >= shown, (dom, shown)
                shown = dom["seq"]
                snap = poller.snaps.get(dom["seq"])
                if snap is not None and snap["state"] == "running":
                    assert int(dom["pages"].replace(",", "")) == snap["pages_ok"]
                    scc = scc_figure(snap)
                    assert scc is not None and dom["scc"] == f"{scc['value']:,}"
                    assert dom["scope"] == f"({scc['scope']}, {scc['kind']})"
                    matched += 1
                    values.add(snap["pages_ok"])
                if matched >= 5 and len(values) >= 3:
                    break
                page.wait_for_function(f"() => Number(document.body.dataset.seq) >= {newest}", timeout=30_000)
                time.sleep(0.6)
            assert matched >= 5 and len(values) >= 3, (matched, values)    # a live crawl, compared often

            # every chart drawn (SVG made by the page's script); nothing failed to load. The degree
            # chart has a point per degree bin seen so far: early in the crawl there may be fewer
            # than 4 bins, so wait (bounded) until the live crawl has them
            page.wait_for_function("() => document.querySelectorAll('#chart-degrees circle.point').length >= 4",
                                   timeout=60_000)
            drawn = page.evaluate("""() => Object.fromEntries(Array.from(document.querySelectorAll('div.chart')).map(
                d => [d.id, {svgs: d.querySelectorAll('svg').length, bars: d.querySelectorAll('rect.bar').length,
                             points: d.querySelectorAll('circle.point').length,
                             lines: d.querySelectorAll('polyline').length}]))""")
            assert sorted(drawn) == ["chart-degrees", "chart-errors", "chart-exchange", "chart-progress", "chart-ranks"]
            assert drawn["chart-ranks"] == {"svgs": 4, "bars": 16, "points": 0, "lines": 0}      # 4 panes x 4 ranks
            assert drawn["chart-progress"]["svgs"] == 2 and drawn["chart-progress"]["lines"] == 2
            assert drawn["chart-exchange"]["svgs"] == 2 and drawn["chart-exchange"]["lines"] == 3
            last = poller.snaps[max(poller.snaps)]
            assert drawn["chart-degrees"]["points"] >= 4 and drawn["chart-degrees"]["lines"] == 2
            ranks_rows = page.evaluate("document.querySelectorAll('#ranks-table tbody tr').length")
            assert ranks_rows == 4 and last["ranks"] == 4
            schema = documented_schema()
            for seq in sorted(poller.snaps)[-5:]:
                assert schema_problems(poller.snaps[seq], schema) == [], seq
            assert seen["console"] == [] and seen["failed"] == [] and seen["http_errors"] == [], seen
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
            assert (ARTIFACTS / "dashboard.png").stat().st_size > 20_000

            # the stop button: refused without the right token, and the crawl goes on
            page.fill("#token", "not-the-token")
            page.click("#stop")
            page.wait_for_function("() => document.getElementById('stop-result').textContent.includes('refused (403)')",
                                   timeout=10_000)
            before = max(poller.snaps)
            t_wait = time.monotonic()
            while max(poller.snaps) < before + 2:
                assert time.monotonic() - t_wait < 30
                time.sleep(0.1)
            assert proc.poll() is None
            assert all(poller.snaps[s]["state"] == "running" for s in poller.snaps if s > before)

            # with the printed token it stops the crawl as SIGTERM does
            page.fill("#token", token)
            page.click("#stop")
            page.wait_for_function("() => document.getElementById('stop-result').textContent.startsWith('stopping')",
                                   timeout=10_000)
            proc.wait(timeout=90)
            reader.join(timeout=10)
            assert proc.returncode == 0, "".join(lines)[-3000:]
            # the one answer >= 400 the page met was the refused stop
            assert seen["http_errors"] == [f"403 {url}stop"] and seen["failed"] == [], seen
            assert len(seen["console"]) == 1 and "403" in seen["console"][0], seen
            page.close()
        finally:
            if poller is not None:
                poller.stop.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["stopped"] == "signal"
    stats = json.loads((session / "stats.json").read_text())
    assert stats["stopped"] == "signal" and 0 < stats["requests"] < len(truth["expected"]["requested"])
    check_session(web, session, complete=False)
    out = "".join(lines)
    assert "Traceback" not in out, out[-3000:]
    # the summary's last line says how the crawl ended (abc_crawler/sched/stopping.py)
    assert re.search(r"^abc-crawl: stopped by a signal with [\d,]+ URLs queued", out, re.M), out[-3000:]


def test_html_report_opens_in_chromium_with_every_figure(browser, tmp_path):
    web = tmp_path / "web"
    generate(web, n_hosts=5, n_pages=150, seed=4)
    session = tmp_path / "s"
    with serve(web):
        r = crawl_cli(2, web, session, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = subprocess.run([str(BIN / "abc-report"), str(session), "--html", "--parts", "2,4"], capture_output=True,
                         text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    out = session / "report"
    report = json.loads((out / "report.json").read_text())
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert len(report["plots"]) == 4                                 # thesis plot included
    assert not re.search(r'(?:src|href)="(?!data:)', html)          # nothing but data: URIs to load
    # the report opens from anywhere on disk: moved away from its PNGs it is the same page
    alone = tmp_path / "elsewhere" / "report.html"
    alone.parent.mkdir()
    shutil.copy(out / "report.html", alone)
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    seen = watch(page)
    page.goto(alone.as_uri())
    page.wait_for_load_state("load")
    images = page.evaluate("Array.from(document.images).map(i => ({alt: i.alt, ok: i.complete && i.naturalWidth > 0}))")
    assert len(images) == len(report["plots"]) and all(i["ok"] for i in images), images
    assert page.evaluate("document.querySelectorAll('table').length") == len(re.findall(r"^\| ---", md, re.M))
    assert page.evaluate("document.querySelector('h1').textContent") == f"ABC session report: {session.name}"
    assert seen["console"] == [] and seen["failed"] == [] and seen["http_errors"] == [], seen
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    page.close()


def test_browser_checks_see_a_broken_figure_and_a_failed_load(browser, tmp_path):
    """Controls: a page with an image that cannot load and a console error is caught by the same checks."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><title>x</title><img alt="a" src="data:image/svg+xml;base64,AAAA">'
                   '<img alt="b" src="missing.svg"><script>console.error("boom")</script>')
    page = browser.new_page()
    seen = watch(page)
    page.goto(bad.as_uri())
    page.wait_for_load_state("load")
    images = page.evaluate("Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)")
    assert images == [False, False]
    assert seen["failed"] and "boom" in seen["console"]
    page.close()
