"""The crawl log (issue 34): each rank's ``logs/crawl/rank-NNNNN.log`` in Heritrix's crawl.log format
(abc_crawler/store/crawllog.py, docs/SESSION_FORMAT.md), checked against what the server saw (its access
log, rank by rank), against the WARC records, merged by ``abc-report --crawl-log``, and after a
kill -9 and a resume."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from abc_crawler.store.checkpoint import checkpoint_steps, load_checkpoint
from abc_crawler.store.crawllog import CrawlLog, format_line, log_path, merge, status_code
from crawlcheck import LAB, MPIEXEC, crawl_cli, generate, kill_every_rank, newest_checkpoint, serve
from logcheck import row_url
from warccheck import members, read_session_warc, split_record

BIN = Path(sys.executable).parent
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FETCH = re.compile(r"^\d{17}\+\d+$")
DIGEST = re.compile(r"^sha1:[A-Z2-7]{32}$")


def parse(line: str) -> dict:
    """The fields of a crawl-log line (Heritrix's order; whitespace-separated, status and size padded)."""
    f = line.split()
    assert len(f) == 12, line
    return {"ts": f[0], "status": int(f[1]), "size": f[2], "url": f[3], "path": f[4], "via": f[5], "mime": f[6],
            "worker": f[7], "fetch": f[8], "digest": f[9], "source": f[10],
            "notes": [] if f[11] == "-" else f[11].split(","), "line": line}


def rank_lines(session: Path, ranks: int) -> dict[int, list[dict]]:
    out = {}
    for r in range(ranks):
        text = log_path(session, r).read_text()
        assert text.endswith("\n"), f"rank {r}: the log ends in the middle of a line"
        out[r] = [parse(x) for x in text.splitlines()]
    return out


def is_prerequisite_or_sitemap(x: dict) -> bool:
    return x["path"].startswith("P") or "sitemap" in x["notes"]


# -- units ----------------------------------------------------------------------------------------
def test_status_codes_are_heritrix_codes():
    assert [status_code(k) for k in ("dns_failed", "connect_failed", "recv_error", "timeout", "internal_KeyError",
                                     "too_many_redirects", "address_refused", "robots_unavailable", "host_unreachable",
                                     "robots_disallowed", "tls_expired", "curl_77", "slot_too_short")] == \
        [-6, -2, -3, -4, -5, -7, -5001, -61, -62, -9998, -2, -3, -4]


def test_a_line_has_heritrix_fields_and_a_resumed_log_drops_a_cut_line(tmp_path):
    log = CrawlLog(tmp_path, 7)
    log.write(301, 12, "http://a.test/x", "LR", "http://a.test/", "text/html; charset=utf-8", 100.0, 100.25,
              "sha1:ABC", "2t,retry")
    log.given_up("http://a.test/private", "robots_disallowed", "L", "-")
    log.close()
    lines = log_path(tmp_path, 7).read_text().splitlines()
    a, b = parse(lines[0]), parse(lines[1])
    assert (a["status"], a["size"], a["path"], a["via"], a["mime"], a["worker"], a["fetch"], a["notes"]) == (
        301, "12", "LR", "http://a.test/", "text/html;charset=utf-8", "#007", "19700101000140000+250", ["2t", "retry"])
    assert (b["status"], b["size"], b["fetch"], b["digest"], b["notes"]) == (-9998, "-", "-", "-", ["err=robots_disallowed"])
    assert TS.match(a["ts"]) and a["source"] == "-"
    # a kill cut the last line: the next run's rank removes the piece and appends whole lines
    with open(log_path(tmp_path, 7), "a") as fh:
        fh.write("2026-01-01T00:00:00.000Z   200")
    log = CrawlLog(tmp_path, 7)
    log.given_up("http://a.test/other", "host_unreachable", "L", "-")
    log.close()
    again = log_path(tmp_path, 7).read_text().splitlines()
    assert again[:2] == lines and len(again) == 3 and parse(again[2])["status"] == -62


def test_merge_is_in_time_order_and_leaves_out_a_cut_last_line(tmp_path):
    def line(t, url):
        return format_line(t, 200, 1, url, "L", "-", "text/html", "#000", t, t, "-", "-")

    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(line(1.0, "http://a/1") + line(3.0, "http://a/3") + line(3.0, "http://a/3b"))
    b.write_text(line(2.0, "http://b/2") + line(3.0, "http://b/3") + line(4.0, "http://b/4")[:30])
    urls = [x.split()[3] for x in merge([a, b])]
    assert urls == ["http://a/1", "http://b/2", "http://a/3", "http://a/3b", "http://b/3"]


# -- a crawl ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """A generated web crawled at 2 ranks (no phase slots: a request cut at a slot's end may be
    answered on the server's side after the crawler gave up on it), with the server's access log."""
    d = tmp_path_factory.mktemp("crawllog")
    web = d / "web"
    manifest = generate(web, n_hosts=4, n_pages=120, seed=7)
    session = d / "s"
    with serve(web) as srv:
        mark = srv.mark()
        r = crawl_cli(2, web, session, "--phases", "off", "--checkpoint-seconds", "0.3", timeout=180)
        rows = srv.rows(mark)
    assert r.returncode == 0, r.stderr[-3000:]
    return {"web": web, "manifest": manifest, "session": session, "rows": rows}


def test_every_request_the_server_saw_has_its_line_and_every_answer_line_its_request(crawled):
    manifest, rows = crawled["manifest"], crawled["rows"]
    lines = rank_lines(crawled["session"], 2)
    assert all(lines.values()), "a rank wrote no line"
    # (rank, URL, status, body bytes): the server's rows, the crawl log's HTTP answers, as multisets
    port = manifest["port"]
    served = Counter((r["rank"], row_url(r, port), r["status"], str(r["bytes"])) for r in rows)
    logged = Counter((k, x["url"], x["status"], x["size"]) for k, xs in lines.items() for x in xs if x["status"] > 0)
    assert served and all(r["rank"] in (0, 1) for r in rows)
    assert served - logged == Counter(), ("requests without their line", list((served - logged).items())[:5])
    assert logged - served == Counter(), ("lines without their request", list((logged - served).items())[:5])
    # no answer: the pages robots.txt disallows, given up without a request (Heritrix's -9998)
    neg = [x for xs in lines.values() for x in xs if x["status"] <= 0]
    assert {x["url"] for x in neg} == set(manifest["expected"]["disallowed"]) and neg
    assert all(x["status"] == -9998 and x["size"] == x["fetch"] == x["digest"] == "-"
               and x["notes"] == ["err=robots_disallowed"] for x in neg), neg[:3]
    # the fields: times, the rank as Heritrix's thread, the fetch start + duration, the digest
    for k, xs in lines.items():
        assert [x["ts"] for x in xs] == sorted(x["ts"] for x in xs), f"rank {k}: lines out of time order"
        for x in xs:
            assert TS.match(x["ts"]) and x["worker"] == f"#{k:03d}" and x["source"] == "-", x["line"]
            if x["status"] > 0:
                assert FETCH.match(x["fetch"]) and DIGEST.match(x["digest"]) and x["mime"] != "-", x["line"]


def test_page_lines_carry_the_warc_payload_digest(crawled):
    lines = rank_lines(crawled["session"], 2)
    stored = {}
    for rec in read_session_warc(crawled["session"]):
        if rec.type in ("response", "revisit"):
            status = int(rec.block.split(b" ", 2)[1])
            rank = int(rec.file.split("-rank-")[1][:5])
            stored[rec.uri] = (rank, status, rec.headers["WARC-Payload-Digest"], rec.type)
    pages = {(k, x["url"]): x for k, xs in lines.items() for x in xs if x["status"] > 0 and not is_prerequisite_or_sitemap(x)}
    assert len(pages) == len(stored) and {u for _, u in pages} == set(stored)
    ok = 0
    for (k, url), x in pages.items():
        rank, status, digest, kind = stored[url]
        assert (rank, status) == (k, x["status"]), (x["line"], stored[url])
        assert x["digest"] == digest, (x["line"], digest)          # the WARC record's payload digest
        assert ("duplicate:digest" in x["notes"]) == (kind == "revisit"), (x["line"], kind)
        ok += status == 200
    assert ok >= 100


def test_discovery_paths_and_vias(crawled):
    manifest, web = crawled["manifest"], crawled["web"]
    lines = [x for xs in rank_lines(crawled["session"], 2).values() for x in xs]
    seeds = set((web / "seeds.txt").read_text().split())
    by_url = {}
    for x in lines:
        by_url.setdefault(x["url"], []).append(x)
    # seeds: "-"; robots.txt: P, via a page of its host; sitemap.xml of a seed host: I (inferred)
    assert {x["url"] for x in lines if x["path"] == "-"} == seeds
    robots = [x for x in lines if x["url"].endswith("/robots.txt")]
    assert robots and all(x["path"] == "P" and x["via"].startswith(x["url"][:-len("robots.txt")]) for x in robots)
    assert all(x["path"] == "I" and x["via"] == "-" for x in lines if "sitemap" in x["notes"])
    # a link's via (when the page was fetched on the same rank) is a page that links to it
    edges = {tuple(e) for e in manifest["expected"]["edges"]}
    nodes = set(manifest["expected"]["nodes"])
    known = [x for x in lines if x["path"] == "L" and x["via"] != "-"]
    assert known and len(known) < len([x for x in lines if x["path"] == "L"])   # links from the other rank: -
    for x in known:
        assert x["via"] in nodes, x["line"]
        if x["url"] in nodes:
            assert (x["via"], x["url"]) in edges, x["line"]
    # a redirect's target: R after the hop that found the chain, via the redirecting URL (its 3xx line)
    redirected = [x for x in lines if x["path"].endswith("R")]
    assert redirected
    for x in redirected:
        assert re.fullmatch(r"[LEM]?R+", x["path"]), x["line"]
        if x["via"] != "-":
            assert any(300 <= v["status"] < 400 for v in by_url[x["via"]]), x["line"]


def test_abc_report_merges_the_ranks_logs_in_time_order(crawled):
    session = crawled["session"]
    r = subprocess.run([str(BIN / "abc-report"), str(session), "--crawl-log"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines(keepends=True)
    files = [log_path(session, k).read_text().splitlines(keepends=True) for k in range(2)]
    assert Counter(out) == Counter(files[0] + files[1]) and files[0] and files[1]
    assert [x[:24] for x in out] == sorted(x[:24] for x in out)
    assert {parse(x)["worker"] for x in out} == {"#000", "#001"}
    # interleaved, not one file after the other
    workers = [parse(x)["worker"] for x in out]
    assert sum(a != b for a, b in zip(workers, workers[1:])) > 2
    # a session without crawl logs is refused in one line
    r2 = subprocess.run([str(BIN / "abc-report"), str(crawled["web"]), "--crawl-log"], capture_output=True,
                        text=True, timeout=60)
    assert r2.returncode == 2 and "no crawl log" in r2.stderr


# -- kill -9 after a checkpoint, then --resume --------------------------------------------------------
def _stored_at_checkpoint(session: Path, rank: int) -> list[tuple[str, int, str]]:
    """(URL, status, payload digest) of the response and revisit records in the rank's WARC files
    up to the sizes its newest checkpoint recorded."""
    step = max(checkpoint_steps(session, rank))
    out = []
    for name, size in load_checkpoint(session, rank, step)["warc"]["files"]:
        data = (session / "warc" / name).read_bytes()[:size]
        for raw in members(data):
            h, block = split_record(raw)
            if h["WARC-Type"] in ("response", "revisit"):
                out.append((h["WARC-Target-URI"], int(block.split(b" ", 2)[1]), h["WARC-Payload-Digest"]))
    return out


def test_a_kill_after_a_checkpoint_keeps_the_lines_before_it_and_resume_appends(tmp_path):
    web = tmp_path / "web"
    manifest = generate(web, n_hosts=3, n_pages=400, seed=11)
    session = tmp_path / "s"
    cmd = [MPIEXEC, "-n", "2", str(BIN / "abc-crawl"), str(web / "seeds.txt"), *LAB, "--resolve",
           str(web / "resolve.txt"), "--session-dir", str(session), "--phases", "off", "--checkpoint-seconds", "0.2",
           "--superstep-seconds", "0.2", "--no-stats", "--progress-seconds", "60", "--test-rank-header"]
    with serve(web, latency=0.03) as srv:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 90
            while newest_checkpoint(session, 2) < 2 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert proc.poll() is None, "the crawl ended before it could be killed"
            kill_every_rank(proc, session, 2)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert json.loads((session / "manifest.json").read_text())["stopped"] == "running"
        before = {}
        for k in range(2):
            text = log_path(session, k).read_text()
            before[k] = text[:text.rfind("\n") + 1]           # (a line cut by the kill is not kept)
            logged = {(x["url"], x["status"], x["digest"]) for x in map(parse, before[k].splitlines())}
            stored = _stored_at_checkpoint(session, k)
            assert stored, f"rank {k} stored nothing before its checkpoint"
            lost = [s for s in stored if s not in logged]
            assert not lost, (f"rank {k}: pages stored before the checkpoint without their line", lost[:5])
        mark = srv.mark()
        r = subprocess.run([MPIEXEC, "-n", "2", str(BIN / "abc-crawl"), "--resume", str(session)],
                           capture_output=True, text=True, timeout=180)
        run2 = srv.rows(mark)
    assert r.returncode == 0, r.stderr[-3000:]
    # the resumed ranks appended: the lines before the kill first, then one per request of the new run
    port = manifest["port"]
    appended = Counter()
    for k in range(2):
        text = log_path(session, k).read_text()
        assert text.startswith(before[k]) and text.endswith("\n")
        appended.update((k, x["url"], x["status"], x["size"]) for x in map(parse, text[len(before[k]):].splitlines())
                        if x["status"] > 0)
    served = Counter((row["rank"], row_url(row, port), row["status"], str(row["bytes"])) for row in run2)
    assert served and appended == served, (list((served - appended).items())[:3], list((appended - served).items())[:3])
