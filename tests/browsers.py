"""What the browser and replay tests share: Debian's headless Chromium driven by Playwright
(fail-if-missing under ABC_REQUIRE_BROWSER, which make test sets), and pywb serving WARC files
and CDXJ indexes on loopback."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from crawlcheck import BIN, free_port

CHROMIUM = "/usr/bin/chromium"
# the flags known to work here: no sandbox as root, and no background connections (the network is closed)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(args=(), timeout_ms: float | None = None):
    """A generator for a module fixture: one launched Chromium (``CHROMIUM_ARGS`` and ``args``), closed
    after the module; skipped, or failed under ABC_REQUIRE_BROWSER, when Chromium or Playwright is missing."""
    why = None
    if not Path(CHROMIUM).exists():
        why = f"{CHROMIUM} is missing (apt-get install chromium; make test installs it)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = why or "the playwright package is missing (pip install -e '.[test]')"
    if why:
        if os.environ.get("ABC_REQUIRE_BROWSER"):
            pytest.fail(why)
        pytest.skip(why)
    kw = {} if timeout_ms is None else {"timeout": timeout_ms}
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *args], **kw)
        try:
            yield b
        finally:
            b.close()


#: no proxy from the environment (pywb listens on loopback)
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@contextmanager
def pywb(root: Path, warc_dirs, seconds: int = 300):
    """pywb on loopback for at most ``seconds``, serving collection ``abc`` under ``root``, built from
    the WARC files and CDXJ indexes of ``warc_dirs``; yields its port."""
    coll = root / "collections" / "abc"
    (coll / "archive").mkdir(parents=True)
    (coll / "indexes").mkdir()
    for d in warc_dirs:
        for f in Path(d).iterdir():
            shutil.copy(f, coll / ("archive" if f.name.endswith(".warc.gz") else "indexes") / f.name)
    port = free_port()
    proc = subprocess.Popen(["timeout", str(seconds), str(BIN / "wayback"), "-p", str(port), "-b", "127.0.0.1",
                             "-d", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _DIRECT.open(f"http://127.0.0.1:{port}/", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("pywb did not start")
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=20)
