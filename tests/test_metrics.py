"""``GET /metrics`` (issue 34): the dashboard's snapshot in the Prometheus text format.

The collector on a hand-built snapshot (every sample's value, the families and label names of
docs/DASHBOARD.md), the route of the status server, and a 2-rank crawl of the embedded test web
scraped every few milliseconds: every scrape parses with ``prometheus_client.parser``, has the
documented families and labels, no counter decreases or disappears, and the last snapshot (state
``done``) has the counters of the session's ``stats.json``.

The server ends with ``abc-crawl``, so the last snapshot is served only between the session being
written and the exit (about 0.1 s); the poller keeps one connection open (its handler thread
serves it until rank 0 exits) and asks every 5 ms, so it sees that snapshot. Should a very busy
machine make it miss it, the last scrape it has is compared instead (every counter at most
``stats.json``'s) and a warning says so.
"""
from __future__ import annotations

import http.client
import json
import re
import subprocess
import threading
import time
import warnings
from pathlib import Path

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from abc_crawler.dashboard.metrics import CRAWL_STATES, METRICS, crawl_state, exposition
from abc_crawler.dashboard.server import StatusServer
from crawlcheck import BIN, LAB, MPIEXEC, generate, serve

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "DASHBOARD.md"

pytestmark = pytest.mark.timeout(300)


# -- the documentation ---------------------------------------------------------------------------------
def documented_metrics() -> dict[str, tuple[str, tuple[str, ...]]]:
    """metric name → (type, label names), from the table under ``## `/metrics``` of docs/DASHBOARD.md."""
    section = DOC.read_text().split("## `/metrics`", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        m = re.match(r"\| `(abc_[a-z_]+)` \| (counter|gauge) \|([^|]*)\|", line)
        if m:
            out[m.group(1)] = (m.group(2), tuple(re.findall(r"`([a-z_]+)`", m.group(3))))
    return out


def test_the_documented_families_are_the_collectors():
    doc = documented_metrics()
    assert len(doc) >= 20 and doc["abc_requests_total"] == ("counter", ("rank", "outcome"))
    assert doc == {name: (kind, labels) for name, kind, labels, _ in METRICS}
    for name, (kind, _) in doc.items():      # the Prometheus conventions
        assert name.startswith("abc_") and name.endswith("_total") == (kind == "counter"), name
        assert not re.search(r"_(s|ms|kb|mb|secs?|milliseconds)(_total)?$", name), name


def test_doctests():
    import doctest

    from abc_crawler.dashboard import metrics

    assert doctest.testmod(metrics).failed == 0


# -- parsing a scrape ---------------------------------------------------------------------------------
def parse(text: str) -> dict[str, dict]:
    """family name as documented → {"type", "samples": {(sample name, sorted label items): value}}."""
    fams = {}
    for f in text_string_to_metric_families(text):
        name = f.name + "_total" if f.type == "counter" else f.name
        fams[name] = {"type": f.type, "samples": {(s.name, tuple(sorted(s.labels.items()))): s.value
                                                   for s in f.samples}}
    return fams


def shape_problems(fams: dict, doc: dict) -> list[str]:
    """What in a parsed scrape disagrees with the documentation: families, types, sample names, labels."""
    bad = [f"missing family {n}" for n in sorted(set(doc) - set(fams))]
    bad += [f"undocumented family {n}" for n in sorted(set(fams) - set(doc))]
    for name, f in fams.items():
        if name not in doc:
            continue
        kind, labels = doc[name]
        if f["type"] != kind:
            bad.append(f"{name}: type {f['type']}, documented {kind}")
        for sample, items in f["samples"]:
            if sample != name:
                bad.append(f"{name}: sample named {sample}")
            if tuple(sorted(k for k, _ in items)) != tuple(sorted(labels)):
                bad.append(f"{name}: labels {[k for k, _ in items]}, documented {list(labels)}")
    return bad


def counters(fams: dict) -> dict:
    return {key: v for f in fams.values() if f["type"] == "counter" for key, v in f["samples"].items()}


def decreases(before: dict, after: dict) -> list[str]:
    """Counter samples of scrape ``before`` that are lower, or gone, in the later scrape ``after``."""
    b, a = counters(before), counters(after)
    return [f"{k}: {v} -> {a.get(k)}" for k, v in b.items() if k not in a or a[k] < v]


def value(fams: dict, name: str, **labels) -> float:
    """The sum of ``name``'s samples with these labels (all of them when none are given)."""
    return sum(v for (_, items), v in fams[name]["samples"].items() if set(labels.items()) <= set(items))


# -- the collector on a hand-built snapshot --------------------------------------------------------------
def hand_snapshot(**kw) -> dict:
    rank0 = {"rank": 0, "superstep": 7, "seen_s": 3.0, "pages_ok": 40, "pages_failed": 3, "bytes": 123456,
             "requests": 52, "responses": 47, "retries": 2, "queued": 9, "frontier": 6, "outbox": 2, "in_flight": 1,
             "idle_s": 1.5, "idle_slot_s": 0.25, "idle_rest_s": None, "idle_empty_s": None, "exchange_s": 0.4,
             "errors_total": 5}
    rank1 = dict.fromkeys(rank0, None) | {"rank": 1}            # not heard from yet
    snap = {"schema": 1, "seq": 12, "state": "running", "stopped": None, "ranks": 2, "elapsed_s": 4.25,
            "rate": {"now": 11.5, "average": 9.25, "window_s": 5.0},
            "per_rank": [rank0, rank1], "errors": {"http_4xx": 3, "retried_timeout": 2},
            "dropped": {"over_host_limit": 4},
            "exchange": {"supersteps": 8, "volume_bytes": 700, "wire_bytes": 300, "wire_urls": 11, "messages_mpi": 5,
                         "per_rank": {"volume_bytes": [400, 300], "sent_bytes": [120, 180], "sent_urls": [5, 6]}},
            "graph": {"nodes": 38, "edges": 90, "kernels": {"nodes_behind": 2, "max_delay_s": 0.125, "lag_s": None}},
            "stall": None}
    snap.update(kw)
    return snap


def test_collector_writes_every_figure_of_the_snapshot():
    fams = parse(exposition(hand_snapshot()).decode())
    assert shape_problems(fams, documented_metrics()) == []
    req = fams["abc_requests_total"]["samples"]
    assert {dict(items)["outcome"]: v for (_, items), v in req.items()} == {"ok": 40, "failed": 3, "retried": 2,
                                                                           "other": 47 - 40 - 3}
    assert all(dict(items)["rank"] == "0" for _, items in req)      # rank 1 not heard from: no sample
    assert value(fams, "abc_stored_bytes_total", rank="0") == 123456
    assert [value(fams, n) for n in ("abc_frontier_urls", "abc_queued_urls", "abc_outbox_urls")] == [6, 9, 2]
    assert fams["abc_idle_seconds_total"]["samples"] == {
        ("abc_idle_seconds_total", (("cause", "slot"), ("rank", "0"))): 0.25}      # rest, empty: not known
    assert value(fams, "abc_exchange_seconds_total", rank="0") == 0.4
    assert value(fams, "abc_errors_total", kind="http_4xx") == 3 and value(fams, "abc_errors_total") == 5
    assert value(fams, "abc_dropped_urls_total", reason="over_host_limit") == 4
    assert [value(fams, "abc_exchange_sent_bytes_total", rank=r) for r in "01"] == [120, 180]
    assert [value(fams, "abc_exchange_sent_urls_total", rank=r) for r in "01"] == [5, 6]
    assert [value(fams, "abc_exchange_volume_bytes_total", rank=r) for r in "01"] == [400, 300]
    assert (value(fams, "abc_exchange_messages_total"), value(fams, "abc_supersteps_total")) == (5, 8)
    assert (value(fams, "abc_pages_per_second"), value(fams, "abc_pages_per_second_average")) == (11.5, 9.25)
    assert [value(fams, n) for n in ("abc_elapsed_seconds", "abc_ranks", "abc_snapshot_seq")] == [4.25, 2, 12]
    assert (value(fams, "abc_graph_nodes"), value(fams, "abc_graph_edges")) == (38, 90)
    assert (value(fams, "abc_stats_lag_nodes"), value(fams, "abc_stats_max_delay_seconds")) == (2, 0.125)
    assert fams["abc_stats_final_lag_seconds"]["samples"] == {}     # only once finished
    assert {dict(items)["state"]: v for (_, items), v in fams["abc_crawl_state"]["samples"].items()} == {
        s: float(s == "running") for s in CRAWL_STATES}


@pytest.mark.parametrize("kw,state", [
    ({"state": "starting"}, "starting"), ({"stall": {"seconds": 90.0}}, "stalled"), ({"state": "stopping"}, "stopping"),
    ({"state": "finished", "stopped": "done"}, "done"), ({"state": "finished", "stopped": "max-pages"}, "stopped"),
    ({"state": "finished", "stopped": "stalled"}, "stopped")])
def test_crawl_state_is_one_hot(kw, state):
    assert crawl_state(hand_snapshot(**kw)) == state
    fams = parse(exposition(hand_snapshot(**kw)).decode())
    assert [dict(i)["state"] for (_, i), v in fams["abc_crawl_state"]["samples"].items() if v == 1] == [state]


def test_a_starting_snapshot_and_no_statistics_write_every_family_without_samples():
    fams = parse(exposition({"schema": 1, "seq": 0, "state": "starting"}).decode())
    assert shape_problems(fams, documented_metrics()) == [] and len(fams) == len(METRICS)
    assert fams["abc_requests_total"]["samples"] == {} and value(fams, "abc_crawl_state", state="starting") == 1
    nostats = parse(exposition(hand_snapshot(graph={"nodes": 3, "edges": 2, "kernels": None})).decode())
    assert all(nostats[n]["samples"] == {} for n in ("abc_stats_lag_nodes", "abc_stats_max_delay_seconds"))


def test_the_checks_see_a_decrease_a_lost_sample_and_an_undocumented_label():
    # controls: the checks the live test relies on fail where they should
    before = parse(exposition(hand_snapshot()).decode())
    lower = hand_snapshot()
    lower["per_rank"][0] = dict(lower["per_rank"][0], bytes=100)
    assert decreases(before, parse(exposition(lower).decode())) == [
        "('abc_stored_bytes_total', (('rank', '0'),)): 123456.0 -> 100.0"]
    gone = hand_snapshot(dropped={})
    assert decreases(before, parse(exposition(gone).decode())) == [
        "('abc_dropped_urls_total', (('reason', 'over_host_limit'),)): 4.0 -> None"]
    text = exposition(hand_snapshot()).decode().replace('abc_ranks 2.0', 'abc_ranks{host="x"} 2.0')
    assert shape_problems(parse(text), documented_metrics()) == ["abc_ranks: labels ['host'], documented []"]


def test_the_publisher_s_final_snapshot_has_the_counters_of_stats_json():
    import numpy as np

    from abc_crawler.crawl import STATUS_FIELDS
    from abc_crawler.dashboard.publisher import Dashboard

    class Server:
        polls, stop_requested, published = 0, False, []

        def publish(self, data, finished=False):
            self.published.append(data)

    co = type("Co", (), {"ranks": 2, "exchange_rows": [(0, 0, 1, 30, 2), (1, 1, 0, 50, 3)],
                         "step_volume": {0: [10, 20], 1: [5, 0]}, "step_t": {0: 0.1, 1: 0.3},
                         "step_pages": {0: [3, 1], 1: [2, 2]}, "kernels": None, "n_nodes": 7, "n_edges": 9})()
    server = Server()
    dash = Dashboard(server, STATUS_FIELDS, {"ranks": 2}, ranks=2)
    st = np.zeros(len(STATUS_FIELDS), np.int64)
    vit = [json.dumps({"rank": r, "superstep": 1, "pages_ok": 2, "pages_failed": 1, "requests": 4, "bytes": 10,
                       "errors": {"http_4xx": 1}, "idle_s": 0.5, "idle_slot_s": 0.125}).encode() for r in range(2)]
    dash.publish(1, st, vit, co, time.monotonic())
    live = parse(exposition(server.published[-1]).decode())
    assert value(live, "abc_requests_total", rank="0", outcome="other") == 5 - 2 - 1    # 5 answered by rank 0
    stats = {"requests": 12, "pages_crawled": 7, "pages_failed": 2, "bytes_stored": 700, "wall_s": 2.0,
             "stopped": "done", "errors": {"http_4xx": 2},
             "graph": {"nodes": 7, "edges": 9, "kernel_lag_s": 0.25, "kernel_max_delay_s": 0.5},
             "per_rank": [{"pages": 3, "bytes": 300, "requests": 6, "responses": 6, "retries": 0, "idle_slot_s": 0.25,
                           "idle_rest_s": 1.0, "idle_empty_s": 0.0},
                          {"pages": 4, "bytes": 400, "requests": 6, "responses": 5, "retries": 1, "idle_slot_s": 0.5,
                           "idle_rest_s": 0.75, "idle_empty_s": 0.125}]}
    dash.finish(stats, co, 1)
    final = parse(exposition(server.published[-1]).decode())
    assert shape_problems(final, documented_metrics()) == [] and decreases(live, final) == []
    assert value(final, "abc_requests_total") == 12 and value(final, "abc_requests_total", outcome="ok") == 7
    assert [value(final, "abc_requests_total", rank=r) for r in "01"] == [6, 6]
    assert value(final, "abc_requests_total", rank="1", outcome="retried") == 1
    assert value(final, "abc_stored_bytes_total") == 700 and value(final, "abc_crawl_state", state="done") == 1
    assert value(final, "abc_idle_seconds_total", rank="1", cause="empty") == 0.125
    assert value(final, "abc_idle_seconds_total", cause="rest") == 1.75
    assert value(final, "abc_stats_final_lag_seconds") == 0.25 and value(final, "abc_exchange_sent_urls_total") == 5


# -- the route --------------------------------------------------------------------------------------------
def _get(srv, method: str, path: str, body=None):
    conn = http.client.HTTPConnection(*srv.address, timeout=10)
    try:
        conn.request(method, path, body=body)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def test_metrics_route_serves_the_latest_snapshot():
    srv = StatusServer(("127.0.0.1", 0), lambda: None).start()
    try:
        srv.publish(hand_snapshot())
        code, h, body = _get(srv, "GET", "/metrics")
        assert code == 200 and h["Content-Type"] == CONTENT_TYPE_LATEST and h["Cache-Control"] == "no-store"
        assert value(parse(body.decode()), "abc_snapshot_seq") == 12
        assert srv.latest.metrics_bytes() is srv.latest.metrics_bytes()           # made once per snapshot
        code, h, head = _get(srv, "HEAD", "/metrics")
        assert code == 200 and head == b"" and int(h["Content-Length"]) == len(body)
        srv.publish(hand_snapshot(seq=13, state="stopping"))
        fams = parse(_get(srv, "GET", "/metrics?x=1")[2].decode())
        assert value(fams, "abc_snapshot_seq") == 13 and value(fams, "abc_crawl_state", state="stopping") == 1
        code, h, _ = _get(srv, "POST", "/metrics", body=b"")
        assert code == 405 and h["Allow"] == "GET, HEAD"
        assert _get(srv, "GET", "/metricsx")[0] == 404
        assert srv.scrapes == 3 and srv.polls == 3
    finally:
        srv.close()


# -- a live crawl ---------------------------------------------------------------------------------------------
class Scraper(threading.Thread):
    """GET /metrics every ``every`` s on one kept-alive connection until the server goes away;
    keeps each distinct text (in order) and when it was read."""

    def __init__(self, port: int, every: float = 0.005):
        super().__init__(daemon=True)
        self.port, self.every = port, every
        self.texts: list[tuple[float, str]] = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        conn = None
        deadline = time.monotonic() + 240
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/metrics")
                r = conn.getresponse()
                body = r.read().decode()
                if r.status != 200 or r.getheader("Content-Type") != CONTENT_TYPE_LATEST:
                    self.errors.append(f"{r.status} {r.getheader('Content-Type')}")
                elif not self.texts or self.texts[-1][1] != body:
                    self.texts.append((time.monotonic(), body))
            except (ConnectionError, OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                    conn = None
                try:                                           # the server is gone: the crawl has ended
                    http.client.HTTPConnection("127.0.0.1", self.port, timeout=1).connect()
                except OSError:
                    return
            time.sleep(self.every)


def test_metrics_during_a_2_rank_crawl_parse_grow_and_end_at_stats_json(tmp_path):
    web = tmp_path / "web"
    generate(web, n_hosts=4, n_pages=400, seed=34)
    session = tmp_path / "s"
    with serve(web):
        cmd = [MPIEXEC, "-n", "2", str(BIN / "abc-crawl"), str(web / "seeds.txt"), *LAB, "--resolve",
               str(web / "resolve.txt"), "--session-dir", str(session), "--politeness-delay", "0.02",
               "--progress-seconds", "1", "--time-limit", "150", "--test-rank-header", "--dashboard", "127.0.0.1:0"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
        reader.start()
        scraper = None
        try:
            deadline = time.monotonic() + 60
            m = None
            while m is None:
                assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)[-3000:]
                m = next((re.search(r"dashboard http://127\.0\.0\.1:(\d+)/", ln) for ln in lines
                          if "dashboard http" in ln), None)
                time.sleep(0.02)
            scraper = Scraper(int(m.group(1)))
            scraper.start()
            proc.wait(timeout=200)
            reader.join(timeout=10)
            scraper.join(timeout=20)
        finally:
            if scraper is not None:
                scraper.stop.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    out = "".join(lines)
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    assert scraper.errors == []
    stats = json.loads((session / "stats.json").read_text())
    assert stats["stopped"] == "done" and stats["requests"] > 200

    doc = documented_metrics()
    scrapes = [parse(text) for _, text in scraper.texts]          # every scrape parses
    for i, fams in enumerate(scrapes):
        assert shape_problems(fams, doc) == [], i
    for i in range(1, len(scrapes)):
        assert decreases(scrapes[i - 1], scrapes[i]) == [], i
    states = [next(dict(items)["state"] for (_, items), v in f["abc_crawl_state"]["samples"].items() if v == 1)
              for f in scrapes]
    running = [f for f, s in zip(scrapes, states) if s == "running"]
    # a live crawl, scraped often: several snapshots, both ranks heard from, the counts growing
    assert len(running) >= 3, states
    assert {dict(i)["rank"] for (_, i) in running[-1]["abc_requests_total"]["samples"]} == {"0", "1"}
    assert len({value(f, "abc_requests_total") for f in running}) >= 3
    assert all(value(f, "abc_frontier_urls") >= 0 and value(f, "abc_pages_per_second") >= 0 for f in running)

    last = scrapes[-1]
    totals = {"requests": value(last, "abc_requests_total"), "pages": value(last, "abc_requests_total", outcome="ok"),
              "failed": value(last, "abc_requests_total", outcome="failed"),
              "bytes": value(last, "abc_stored_bytes_total")}
    truth = {"requests": stats["requests"], "pages": stats["pages_crawled"], "failed": stats["pages_failed"],
             "bytes": stats["bytes_stored"]}
    if states[-1] != "done":
        # missed the last snapshot (see the module docstring): the last scrape is a snapshot before the end
        warnings.warn(f"/metrics: the final snapshot was not scraped (last state {states[-1]}); "
                      "compared the last scrape with stats.json as a lower bound")
        assert all(totals[k] <= truth[k] for k in truth), (totals, truth)
        return
    assert totals == truth
    ex = stats["exchange"]
    assert (value(last, "abc_exchange_sent_bytes_total"), value(last, "abc_exchange_sent_urls_total"),
            value(last, "abc_exchange_volume_bytes_total"), value(last, "abc_exchange_messages_total")) == (
        ex["wire_bytes"], ex["wire_urls"], ex["volume_bytes"], ex["messages_mpi"])
    for pr in stats["per_rank"]:
        r = str(pr["rank"])
        assert value(last, "abc_requests_total", rank=r) == pr["requests"]
        assert value(last, "abc_requests_total", rank=r, outcome="ok") == pr["pages"]
        assert value(last, "abc_stored_bytes_total", rank=r) == pr["bytes"]
        for cause in ("slot", "rest", "empty"):
            assert value(last, "abc_idle_seconds_total", rank=r, cause=cause) == pytest.approx(pr[f"idle_{cause}_s"])
    assert {dict(i)["kind"]: v for (_, i), v in last["abc_errors_total"]["samples"].items()} == stats["errors"]
    assert value(last, "abc_stats_final_lag_seconds") == pytest.approx(stats["graph"]["kernel_lag_s"])
    assert value(last, "abc_stats_lag_nodes") == 0 and value(last, "abc_graph_nodes") == stats["graph"]["nodes"]
