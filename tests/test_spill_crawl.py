"""``--memory-budget`` small enough that the URL-seen set and the frontier spill to disk, on a
served web: the crawl is exactly the crawl without it (every page once, the same graph), and a
crawl killed with URLs on disk resumes with nothing lost or fetched twice."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawlcheck import LAB, MPIEXEC, check_session, crawl_cli, generate, kill_every_rank, newest_checkpoint, serve

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("spillweb")
    # dense links (40 a page, not 10): a rank's first few pages name far more of its URLs than the
    # 64K budget keeps in memory (262) plus what the disk queues buffer (3,276 bytes), however fast
    # it fetches; with 10 a page the frontier's peak is near that line and a run may not spill at all
    generate(d, n_hosts=6, n_pages=1500, seed=44, mean_links=40.0)
    return d


def _memory(session: Path) -> list[dict]:
    return [r["memory"] for r in json.loads((session / "stats.json").read_text())["per_rank"]]


def test_a_crawl_that_spills_is_the_crawl_that_does_not(web, tmp_path):
    with serve(web) as srv:
        r = crawl_cli(2, web, tmp_path / "spill", "--memory-budget", "64K", "--phases", "off",
                      "--checkpoint-seconds", "0")              # (no checkpoint: the prefix goes at once)
        assert r.returncode == 0, r.stderr[-3000:]
        spilled = check_session(web, tmp_path / "spill", srv.rows())
        mark = srv.mark()
        r = crawl_cli(2, web, tmp_path / "plain", "--phases", "off")
        assert r.returncode == 0, r.stderr[-3000:]
        plain = check_session(web, tmp_path / "plain", srv.rows(mark))
    mem = _memory(tmp_path / "spill")
    assert all(m["memory_budget"] == 64 << 10 for m in mem)
    assert sum(m["seen_spills"] for m in mem) > 0 and sum(m["seen_disk_bytes"] for m in mem) > 0
    assert all(m["frontier_disk_bytes"] > 0 for m in mem)              # each rank wrote URLs to disk
    assert all(m["frontier_urls_on_disk"] == 0 for m in mem)            # all came back
    assert all(m["frontier_trimmed_urls"] > 0 for m in mem)             # what was crawled left the columns
    assert not list((tmp_path / "spill" / "spill").glob("*.u64"))       # runs and segments removed
    assert not list((tmp_path / "spill" / "spill").glob("*.seg-*"))
    # check_session held both to the generator's truth (nodes, edges, every page once by the server's log)
    for key in ("requests", "pages_crawled", "pages_failed", "duplicates"):
        assert spilled["stats"][key] == plain["stats"][key]
    assert spilled["log"]["once"] == plain["log"]["once"]
    # rank 0 says what its graph and the statistics kernels hold (issue 35: where rank 0's memory goes)
    m0 = _memory(tmp_path / "plain")[0]
    assert m0["graph_bytes"] > 0 and m0["stats_bytes"]["degrees"] > 0 and m0["stats_bytes"]["whole_scc"] > 0
    assert set(m0["stats_bytes"]) >= {"degrees", "whole_scc", "hyperball"}
    # SPAWC's O(n^2) first-N kernels hold memory only while they are the way the figures are kept;
    # once the kernel thread recomputes instead (issue 37), they are freed
    incremental = plain["stats"]["graph"]["first_n"]["method"] == "incremental"
    assert ({"apsd", "scc"} <= set(m0["stats_bytes"])) == incremental
    assert not incremental or m0["stats_bytes"]["apsd"] > 0
    assert "stats_bytes" not in _memory(tmp_path / "plain")[1]
    # the default budget: half the machine's memory over the ranks on it
    total = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0]) * 1024
    assert all(m["memory_budget"] == total // 2 // 2 for m in _memory(tmp_path / "plain"))


def test_a_crawl_killed_with_urls_on_disk_resumes_with_nothing_lost_or_fetched_twice(web, tmp_path):
    session = tmp_path / "s"
    with serve(web, latency=0.004) as srv:
        cmd = [MPIEXEC, "-n", "2", str(BIN / "abc-crawl"), str(web / "seeds.txt"), *LAB, "--resolve",
               str(web / "resolve.txt"), "--session-dir", str(session), "--politeness-delay", "0",
               "--phases", "off", "--checkpoint-seconds", "0.3", "--superstep-seconds", "0.3", "--no-stats",
               "--progress-seconds", "60", "--memory-budget", "64K"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            on_disk = False
            while proc.poll() is None and time.monotonic() < deadline:
                segs = list((session / "spill").glob("frontier-rank-*.seg-*.bin")) if session.is_dir() else []
                on_disk = on_disk or any(p.stat().st_size for p in segs)
                if on_disk and newest_checkpoint(session, 2) >= 2:
                    break
                time.sleep(0.01)
            assert proc.poll() is None, "the crawl ended before it could be killed"
            assert on_disk, "no frontier URL went to disk before the kill"
            kill_every_rank(proc, session)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        run1 = srv.rows()
        mark = srv.mark()
        r = subprocess.run([MPIEXEC, "-n", "2", str(BIN / "abc-crawl"), "--resume", str(session)],
                           capture_output=True, text=True, timeout=180)
        run2 = srv.rows(mark)
    assert r.returncode == 0, r.stderr[-3000:]
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["stopped"] == "done" and len(manifest["resumed"]) == 1
    facts = check_session(web, session, [run1, run2])       # every page, once (a page cut back with the WARC aside)
    assert facts["stats"]["requests"] == len(facts["manifest"]["expected"]["requested"])
    mem = _memory(session)
    assert all(m["memory_budget"] == 64 << 10 for m in mem)
    assert sum(m["frontier_trimmed_urls"] for m in mem) > 0
