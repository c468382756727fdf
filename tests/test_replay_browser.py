"""Replay in a real browser (issue 33): a page with every kind of requisite, crawled, replayed by
pywb from the session's WARC files and CDXJ indexes, looks in headless Chromium as the live page did.

* A generated web with rich pages (``requisite_pages``) is served; before the crawl, Chromium
  (Debian's, driven by Playwright, the hosts ``hNNN.test`` mapped to loopback by
  ``--host-resolver-rules``) opens one rich page and takes a screenshot, once as is and once with
  every style sheet refused (the control: an unstyled page).
* The web is crawled by 2 ranks; the origin server is stopped.
* pywb serves the session on loopback (as in ``test_replay.py``); Chromium opens the same page
  through it framed, the way an archivist views it (``/abc/TS/URL``: pywb's banner on top, the
  rewritten page in its frame, ``/abc/TSmp_/URL``; pywb sends a top-level ``mp_`` page to the
  framed view, so the frame is what is compared).
* From the browser's own request log (Playwright ``request`` / ``response`` / ``requestfailed``
  events): every subresource the page asks for — both style sheets and the ``@import``-ed one,
  images with ``srcset`` (at device scale factors 1 and 2, so both candidates are asked for),
  the CSS backgrounds of the style sheet, of ``<style>`` and of a ``style`` attribute, the script,
  the iframe and its image — comes from the archive with 200: none 404, none failed, no request
  to the live hosts. Every requisite of the manifest's truth (``embeds``, transitively) is asked
  for, but the style sheet named by the ``Link`` header, which Chromium does not apply (it ignores
  ``Link: rel=stylesheet``; Firefox applies it): that one is read from the archive directly.
* The replayed page has the live page's computed styles (``site.css``'s background, the
  ``@import``-ed ``base.css``'s heading) and its script ran. The screenshot of pywb's frame (the
  banner left out) shows the styled page: the background colour of ``site.css`` covers it as on
  the live page (over the same region), and >= 95 % of its pixels equal the live screenshot's
  within a small tolerance; the CSS-less control has none of that colour and differs from the
  live screenshot in most pixels, so the comparison can fail.

Screenshots go to ``test-artifacts/`` (``replay-live.png``, ``replay-live-no-css.png``,
``replay-pywb.png``).

``make test`` installs Chromium and sets ``ABC_REQUIRE_BROWSER=1``: there a missing browser fails
these tests; elsewhere they are skipped with the reason.
"""
from __future__ import annotations

import io
import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from browsers import chromium, pywb as pywb_server
from crawlcheck import crawl_cli, generate, serve

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("ABC_TEST_ARTIFACTS", ROOT / "test-artifacts"))
# tests/browsers.py's Chromium, with the test web's hosts on loopback (the port is kept)
MORE_ARGS = ["--host-resolver-rules=MAP *.test 127.0.0.1", "--no-proxy-server"]
VIEWPORT = {"width": 800, "height": 600}
TIMEOUT_MS = 30_000
#: pixels equal within this tolerance (per channel) ...
TOLERANCE = 8
#: ... in at least this share of the page
SAME_SHARE = 0.95

pytestmark = pytest.mark.timeout(420)

# a replayed archive URL: /abc/TIMESTAMP[MODIFIER_]/ORIGINAL
_ARCHIVED = re.compile(r"^/abc/(\d{14})([a-z]{2}_)?/(.+)$")


@pytest.fixture(scope="module")
def browser():
    yield from chromium(MORE_ARGS, TIMEOUT_MS)


class Log:
    """Every request of a page (frames included), its final answer or its failure."""

    def __init__(self, page):
        self.requests: list = []
        self.responses: list[tuple[str, int]] = []
        self.failed: list[str] = []
        page.on("request", lambda r: self.requests.append(r))
        page.on("response", lambda r: self.responses.append((r.url, r.status)))
        page.on("requestfailed", lambda r: self.failed.append(f"{r.url}: {r.failure}"))

    def final(self) -> dict[str, int | None]:
        """First URL of each request chain (redirects followed) -> status of its last answer (None: none)."""
        out = {}
        for r in self.requests:
            if r.redirected_to is not None:
                continue                 # an intermediate hop: its chain's last request is listed too
            first = r
            while first.redirected_from is not None:
                first = first.redirected_from
            resp = r.response() if r.failure is None else None
            out[first.url] = resp.status if resp is not None else None
        return out


def _open(browser, url: str, *, scale: int = 1, block_css: bool = False) -> tuple:
    """A new page at ``url``, loaded with every subresource; (page, log, context)."""
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=scale)
    ctx.set_default_timeout(TIMEOUT_MS)
    page = ctx.new_page()
    if block_css:
        page.route("**/*.css", lambda route: route.abort())
    log = Log(page)
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, log, ctx


def _png_rgb(data: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(data)).convert("RGB")


def _same_share(a, b, tolerance: int = TOLERANCE) -> float:
    """Share of pixels of two same-sized images equal within ``tolerance`` on every channel."""
    from PIL import ImageChops

    assert a.size == b.size, (a.size, b.size)
    diff = ImageChops.difference(a, b).convert("RGB")
    r, g, bl = diff.split()
    mx = ImageChops.lighter(ImageChops.lighter(r, g), bl)
    hist = mx.histogram()
    return sum(hist[: tolerance + 1]) / (a.size[0] * a.size[1])


def _share_of_colour(img, rgb: tuple[int, int, int], tolerance: int = TOLERANCE) -> float:
    from PIL import Image

    return _same_share(img, Image.new("RGB", img.size, rgb), tolerance)


def _requisites(manifest: dict, url: str) -> set[str]:
    """The page's requisites in the manifest's truth, transitively (a style sheet's, a frame's)."""
    out, todo = set(), [url]
    while todo:
        for e in manifest["pages"][todo.pop()].get("embeds", []):
            if e not in out:
                out.add(e)
                todo.append(e)
    return out


#: the computed styles the style sheets set, and whether the script ran
_STYLE = """() => {
    const b = getComputedStyle(document.body), h = getComputedStyle(document.querySelector('h1'));
    return {body_bg: b.backgroundColor, body_bg_image: b.backgroundImage, h1_color: h.color,
            h1_border: h.borderBottomWidth, js: document.documentElement.dataset.js || null};
}"""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def _get(url: str) -> tuple[int, bytes]:
    try:
        with _OPENER.open(url, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(scope="module")
def crawled(browser, tmp_path_factory):
    """The web, its manifest, the rich page, the live screenshots (styled and CSS-less), the session."""
    d = tmp_path_factory.mktemp("replay-browser")
    web = d / "web"
    manifest = generate(web, n_hosts=4, n_pages=80, seed=33, requisite_pages=2)
    rich = sorted(u for u in manifest["pages"] if re.search(r"/req\d+/index\.html$", u))
    assert len(rich) == 2, rich
    url = rich[0]
    live = {}
    with serve(web, max_seconds=300):
        for scale in (1, 2):
            page, log, ctx = _open(browser, url, scale=scale)
            try:
                live[scale] = {"log": log.final(), "failed": list(log.failed)}
                if scale == 1:
                    live["png"] = page.screenshot()
                    live["style"] = page.evaluate(_STYLE)
            finally:
                ctx.close()
        page, log, ctx = _open(browser, url, block_css=True)
        try:
            live["png_no_css"] = page.screenshot()
        finally:
            ctx.close()
        r = crawl_cli(2, web, d / "s", "--no-stats")
    assert r.returncode == 0, r.stderr[-2000:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "replay-live.png").write_bytes(live["png"])
    (ARTIFACTS / "replay-live-no-css.png").write_bytes(live["png_no_css"])
    return d, manifest, url, live


@pytest.fixture(scope="module")
def pywb(crawled):
    """pywb on loopback serving the session (collection ``abc``: its WARC files and CDXJ indexes)."""
    d = crawled[0]
    with pywb_server(d / "pywb", [d / "s" / "warc"]) as port:
        yield port


def _timestamp(session: Path, url: str) -> str:
    for f in (session / "warc").glob("*.cdxj"):
        for line in f.read_text().splitlines():
            key, ts, js = line.split(" ", 2)
            if json.loads(js)["url"] == url:
                return ts
    raise AssertionError(f"{url} is not in the session's CDXJ indexes")


def _check_requests(log: Log, port: int, what: str) -> set[str]:
    """Every request went to pywb and ended 200 (redirects followed); returns the archived URLs asked for."""
    final = log.final()
    assert not log.failed, (what, log.failed)
    bad = [(u, s) for u, s in log.responses if s >= 400]
    assert not bad, (what, bad)
    asked = set()
    for u, status in final.items():
        p = urlsplit(u)
        assert (p.hostname, p.port) == ("127.0.0.1", port), f"{what}: a request left the archive: {u}"
        assert status == 200, (what, u, status)
        m = _ARCHIVED.match(p.path + (f"?{p.query}" if p.query else ""))
        if m:
            asked.add(m.group(3))
    return asked


def test_rich_page_replays_from_the_archive_as_it_looked_live(browser, crawled, pywb):
    d, manifest, url, live = crawled
    port = pywb
    want = _requisites(manifest, url)
    link_header = {e for e in manifest["pages"][url]["embeds"] if e.endswith("/header.css")}
    assert len(link_header) == 1
    for name in ("site.css", "base.css", "bg.png", "font.png", "inline.png", "div.png", "img.png", "img-2x.png",
                 "app.js", "frame.html", "frame.png"):
        assert any(u.endswith(f"/{name}") for u in want), name

    # live: the page asked for every requisite (but the Link header's style sheet) and got each with 200
    live_asked = {}
    for scale in (1, 2):
        assert not live[scale]["failed"], live[scale]["failed"]
        live_asked[scale] = {u for u in live[scale]["log"] if u != url}
        assert all(live[scale]["log"][u] == 200 for u in live_asked[scale]), live[scale]["log"]
    assert live_asked[1] | live_asked[2] == want - link_header, (live_asked, want)
    assert live["style"]["js"] == "ran" and live["style"]["h1_border"] == "4px"

    # replayed, framed as an archivist views it: pywb's banner on top, the page in its frame
    ts = _timestamp(d / "s", url)
    base = f"http://127.0.0.1:{port}/abc/{ts}"
    shot = None
    for scale in (1, 2):
        page, log, ctx = _open(browser, f"{base}/{url}", scale=scale)
        try:
            asked = _check_requests(log, port, f"x{scale}")
            assert asked - {url} == live_asked[scale], (scale, sorted(asked ^ (live_asked[scale] | {url})))
            inner = next(f for f in page.frames if f.url == f"{base}mp_/{url}")
            assert inner.evaluate(_STYLE) == live["style"]      # site.css, its @import, the script
            if scale == 1:
                shot = inner.frame_element().screenshot()
        finally:
            ctx.close()

    # the Link header's style sheet (Chromium does not apply it) is in the archive all the same
    for u in link_header:
        status, body = _get(f"{base}id_/{u}")
        p = urlsplit(u)
        assert (status, body) == (200, (d / "web" / "sites" / p.hostname / p.path.lstrip("/")).read_bytes()), u

    (ARTIFACTS / "replay-pywb.png").write_bytes(shot)
    replay = _png_rgb(shot)
    # the live screenshots over the frame's region (the same width, the frame is shorter)
    box = (0, 0, *replay.size)
    assert replay.size[0] == VIEWPORT["width"] and replay.size[1] > VIEWPORT["height"] // 2, replay.size
    shot_live, shot_bare = (_png_rgb(x).crop(box) for x in (live["png"], live["png_no_css"]))
    bg = tuple(int(x) for x in re.findall(r"\d+", live["style"]["body_bg"])[:3])
    assert len(bg) == 3 and bg != (255, 255, 255)
    # site.css's background colour covers most of the live page and of the replayed one, none of the bare one
    assert _share_of_colour(shot_live, bg) > 0.8
    assert _share_of_colour(replay, bg) > 0.8
    assert _share_of_colour(shot_bare, bg) < 0.01
    same = _same_share(shot_live, replay)
    assert same >= SAME_SHARE, f"only {same:.1%} of the replayed page's pixels equal the live page's"
    # the control: without its style sheets the page differs in most pixels, so the comparison can fail
    bare = _same_share(shot_live, shot_bare)
    assert bare < 0.5, f"{bare:.1%} of the CSS-less page's pixels equal the styled page's"
