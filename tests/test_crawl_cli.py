"""End to end: `mpiexec -n K abc-crawl` on generated webs served on loopback.

Every crawl is bounded: the subprocess has a timeout, the server a --max-seconds.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from crawlcheck import LAB, check_session, crawl_cli, generate, rank_pids, serve, warc_records


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("web")
    generate(d, n_hosts=12, n_pages=400, seed=7)
    with serve(d) as srv:
        yield d, srv


def _summary(stderr: str) -> dict[str, str]:
    """The final summary table (two-space indented ``key  value`` lines) of abc-crawl's stderr."""
    keys = ("stopped", "requests", "pages ok / failed / redirected", "overlap pages", "graph, whole (exact)",
            "session")
    out = {}
    for line in stderr.splitlines():
        for k in keys:
            if line.startswith(f"  {k}  ") or line.startswith(f"  {k} "):
                out[k] = line[len(k) + 2:].strip()
    return out


def test_cli_8_ranks_crawls_exactly_the_reachable_web(web, tmp_path):
    d, srv = web
    session = tmp_path / "s8"
    mark = srv.mark()
    r = crawl_cli(8, d, session, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = srv.rows(mark)                  # a FLUSH request: the log of this crawl, complete
    facts = check_session(d, session, rows)
    stats = facts["stats"]
    assert stats["ranks"] == 8 and stats["stopped"] == "done"
    assert len({x["rank"] for x in rows}) == 8          # every rank fetched something
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["stopped"] == "done" and manifest["ranks"] == 8 and manifest["ended"]
    # the final summary table tells the session's own figures
    summary = _summary(r.stderr)
    assert summary["stopped"] == "done: every URL in scope was crawled" and summary["overlap pages"] == "0"
    assert r.stderr.strip().splitlines()[-1] == "abc-crawl: done: every URL in scope was crawled"
    assert summary["requests"].startswith(f"{stats['requests']} in ")
    assert summary["pages ok / failed / redirected"] == (
        f"{stats['pages_crawled']} / {stats['pages_failed']} / {stats['pages_redirected']}")
    assert summary["graph, whole (exact)"].startswith(f"{stats['graph']['nodes']} nodes, {stats['graph']['edges']} edges")
    assert summary["session"] == str(session)


def test_out_of_scope_links_and_bad_redirects_are_counted_never_fetched(web, tmp_path):
    d, srv = web
    session = tmp_path / "s2"
    mark = srv.mark()
    r = crawl_cli(2, d, session)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = srv.rows(mark)
    stats = json.loads((session / "stats.json").read_text())
    manifest = json.loads((d / "manifest.json").read_text())
    oos_hosts = set(manifest["out_of_scope_hosts"])
    assert stats["links"]["out_of_scope"] > 0
    assert set(stats["out_of_scope_hosts"]) <= oos_hosts | {h.split(":")[0] for h in oos_hosts} | {
        h for h in stats["out_of_scope_hosts"] if h.split(":")[0] in {o.split(":")[0] for o in oos_hosts}}
    # the generator writes one redirect to file:///etc/passwd and one to ftp://
    bad = [u for u, p in manifest["pages"].items() if p["status"] in (301, 302, 307, 308)
           and (p["location"] or "").split(":")[0].lower() in ("file", "ftp")
           and u in set(manifest["expected"]["requested"])]
    assert bad, "the generated web should hold redirects to file:// and ftp://"
    assert stats["errors"]["redirect_unsupported_scheme"] == len(bad)
    recs = warc_records(session)
    assert not any(u.split(":")[0] not in ("http", "https") for u in recs)
    check_session(d, session, rows)


def test_site_hash_assignment(web, tmp_path):
    d, srv = web
    session = tmp_path / "site"
    mark = srv.mark()
    r = crawl_cli(4, d, session, "--assign", "site-hash")
    assert r.returncode == 0, r.stderr[-3000:]
    facts = check_session(d, session, srv.rows(mark))
    g = facts["metrics"]["graph"]
    from abc_crawler.web.urls import host_of
    by_host = {}
    for i in range(len(g.urls)):
        if g.url_rank[i] >= 0:
            by_host.setdefault(host_of(g.urls[i]), set()).add(int(g.url_rank[i]))
    assert all(len(r) == 1 for r in by_host.values())


def test_max_pages_is_never_exceeded(web, tmp_path):
    d, srv = web
    session = tmp_path / "max"
    mark = srv.mark()
    r = crawl_cli(4, d, session, "--max-pages", "57")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = srv.rows(mark)
    stats = json.loads((session / "stats.json").read_text())
    assert stats["requests"] == 57
    assert json.loads((session / "manifest.json").read_text())["stopped"] == "max-pages"
    facts = check_session(d, session, rows, complete=False)
    assert facts["log"]["once"]["answers"] == 57          # the server saw exactly 57 page requests


def test_without_robots_the_log_shows_disallowed_fetches(web, tmp_path):
    """The robots check of check_session can fail: turning robots off makes it see requests."""
    d, srv = web
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["expected"]["disallowed"], "the web has disallowed pages"
    session = tmp_path / "norobots"
    mark = srv.mark()
    r = crawl_cli(2, d, session, "--no-robots")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = srv.rows(mark)
    from abc_crawler.store.session import load_graph
    g = load_graph(session)
    requested = {g.urls[i] for i in range(len(g.urls)) if g.url_rank[i] >= 0}
    assert requested & set(manifest["expected"]["disallowed"])
    with pytest.raises(AssertionError):
        check_session(d, session)
    # the log alone sees them too
    from crawlcheck import check_log
    with pytest.raises(AssertionError, match="robots.txt disallowed"):
        check_log(d, session, [rows], manifest, json.loads((session / "stats.json").read_text()), {}, None)


@pytest.mark.parametrize("content,reason", [(None, "seeds file not found"), ("", "no usable seed URL"),
                                            ("# nothing\n\nftp://x.test/\n", "no usable seed URL")])
def test_missing_or_empty_seeds_exit_2_with_one_line(web, tmp_path, content, reason):
    d, _ = web
    seeds = tmp_path / "seeds.txt"
    if content is not None:
        seeds.write_text(content)
    r = crawl_cli(2, d, tmp_path / "s", seeds=seeds, timeout=60)
    assert r.returncode == 2
    err_lines = [x for x in r.stderr.splitlines() if x.startswith("abc-crawl:")]
    assert len(err_lines) == 1 and reason in err_lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_bad_seed_lines_reported_once_and_crawl_goes_on(web, tmp_path):
    d, _ = web
    good = (d / "seeds.txt").read_text().split()
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"# my seeds\n\n{good[0]}\nnot a url\nftp://h000.test/\nmailto:x@y.test\nhttp://elsewhere.example/\n")
    r = crawl_cli(2, d, tmp_path / "s", "--max-pages", "20", seeds=seeds, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [x for x in r.stderr.splitlines() if x.startswith(str(seeds))]
    assert [x.split(":")[1] for x in lines] == ["4", "5", "6", "7"]
    assert len(set(lines)) == 4
    assert json.loads((tmp_path / "s" / "stats.json").read_text())["requests"] == 20


def test_bad_setting_exits_2(web, tmp_path):
    d, _ = web
    r = crawl_cli(2, d, tmp_path / "s", "--concurrency", "many", timeout=60)
    assert r.returncode == 2
    assert r.stderr.count("concurrency: expected int") == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_one_rank_stops_all_and_leaves_a_complete_session(tmp_path, sig):
    d = tmp_path / "web"
    generate(d, n_hosts=6, n_pages=600, seed=11)
    session = tmp_path / "sig"
    with serve(d) as srv:
        cmd = [str(Path(os.sys.executable).parent / "mpiexec"), "-n", "4",
               str(Path(os.sys.executable).parent / "abc-crawl"), str(d / "seeds.txt"), *LAB,
               "--resolve", str(d / "resolve.txt"), "--session-dir", str(session),
               "--politeness-delay", "0.3", "--batch-urls", "2", "--no-stats", "--phases", "off",
               "--checkpoint-seconds", "0.5"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            # wait until the crawl is under way: a checkpoint of superstep >= 2 exists
            while time.monotonic() < deadline and not any(
                    int(p.name.split(".")[1]) >= 2 for p in (session / "checkpoint").glob("rank-00000.*.ckpt")):
                time.sleep(0.05)
            pids = rank_pids(str(session))
            assert len(pids) == 4, pids
            os.kill(pids[-1], sig)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        rows = srv.rows()
    assert proc.returncode == 0, err[-3000:]
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["stopped"] == "signal"
    stats = json.loads((session / "stats.json").read_text())
    manifest_web = json.loads((d / "manifest.json").read_text())
    assert 0 < stats["requests"] < len(manifest_web["expected"]["requested"])
    # with the log: the rest of 0.3 s before every request (phases off) held up to the signal
    facts = check_session(d, session, rows, complete=False)
    polite = facts["log"]["politeness"]
    assert sum(p["spaced"] for p in polite) == sum(p["pairs"] for p in polite) > 0   # every request rested


def test_time_limit_stops_all_ranks_with_a_complete_session(tmp_path):
    d = tmp_path / "web"
    generate(d, n_hosts=4, n_pages=400, seed=12)
    session = tmp_path / "tl"
    with serve(d) as srv:
        # a hang is caught by crawl_cli's timeout; how fast the ranks stop is no test of a busy machine
        r = crawl_cli(2, d, session, "--time-limit", "1.5", "--politeness-delay", "0.3", "--batch-urls", "2",
                      "--phases", "off", "--no-stats", timeout=120)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((session / "manifest.json").read_text())["stopped"] == "time-limit"
    stats = json.loads((session / "stats.json").read_text())
    assert 0 < stats["requests"] < len(json.loads((d / "manifest.json").read_text())["expected"]["requested"])
    assert stats["wall_s"] >= 1.5          # it ran until the limit (the crawl's own clock)
    check_session(d, session, rows, complete=False)
