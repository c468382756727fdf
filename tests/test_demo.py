"""`make demo`'s path on a smaller web: the Makefile target itself (abc_crawler.demo: generate, serve,
crawl, repartition, crawl with the part vector, report), each session checked like every other
crawl (tests/crawlcheck.py, with the server's access log the demo writes)."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from crawlcheck import check_session, read_log

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parent.parent
SMALL = "--ranks 2 --hosts 6 --pages 200 --seed 3"


def _t(iso: str) -> float:
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


@pytest.mark.timeout(900)
def test_make_demo_on_a_small_web(tmp_path):
    out = tmp_path / "demo"
    # -o: the installed venv counts as up to date (this test does not reinstall anything)
    r = subprocess.run(["make", "-C", str(ROOT), "-o", str(VENV / ".abc-installed"), f"VENV={VENV}", "demo",
                        f"DEMO_ARGS=--dir {out} {SMALL}"], capture_output=True, text=True, timeout=840)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    web, s1, s2 = out / "web", out / "sessions" / "s1-hash", out / "sessions" / "s2-page-gp"
    # every step ran: the commands are printed, the sessions, the part vector and the report exist
    for step in ("abc-testweb generate", "abc-testweb serve", "abc-crawl", "abc-repartition", "abc-report"):
        assert f"{step}" in r.stdout, step
    assert (s1 / "partvec.npz").is_file() and (s2 / "report" / "report.md").is_file()
    assert "session" in r.stderr and "overlap pages" in r.stderr          # the crawls' summary tables
    # its last lines say where the rank logs, the crawl log and the metrics are
    for where in (f"{s2 / 'logs'}/", f"{s2 / 'logs' / 'crawl'}/", f"abc-report {s2} --crawl-log",
                  "--dashboard 127.0.0.1:0", "/metrics"):
        assert where in r.stdout.rsplit("demo: where to look", 1)[-1], where
    # the server's log (complete: the demo stopped the server before it returned), split between the
    # two sessions by their start and end times
    rows = read_log(out / "access.log")
    m1, m2 = (json.loads((s / "manifest.json").read_text()) for s in (s1, s2))
    end1, start2 = _t(m1["ended"]), _t(m2["started"])
    assert end1 < start2
    log1 = [x for x in rows if x["t_start"] <= end1]
    log2 = [x for x in rows if x["t_start"] >= start2]
    assert len(log1) + len(log2) == len(rows)
    f1 = check_session(web, s1, log1)
    f2 = check_session(web, s2, log2)
    assert f1["requested"] == f2["requested"]
    assert f2["stats"]["assignment"] == f"partvec:{s1 / 'partvec.npz'}"
    # the part vector's session exchanges less than the hash session (what the demo shows)
    assert f2["stats"]["exchange"]["volume_bytes"] < f1["stats"]["exchange"]["volume_bytes"]
