"""The dashboard without a browser: /status.json's schema (docs/DASHBOARD.md), the snapshot's
pure functions, the incremental exchange series, the HTTP server's answers and error paths, the
stop token, and that a failure in a request thread reaches the crawl's main thread."""
from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from abc_crawler.store import crash
from abc_crawler.graph.coordinator import Coordinator, SuperstepReport, encode_report
from abc_crawler.crawl import STATUS_FIELDS
from abc_crawler.dashboard.page import Page
from abc_crawler.dashboard.publisher import Dashboard
from abc_crawler.dashboard.server import MAX_BODY, MAX_CONNECTIONS, StatusServer, parse_address
from abc_crawler.dashboard.snapshot import build_snapshot, degree_bins, graph_figures
from abc_crawler.dashboard.sources import ExchangeSeries
from abc_crawler.dashboard.vitals import VitalsSender, decode_vitals
from dashcheck import documented_schema, schema_problems

# -- inputs shaped like a real crawl's ------------------------------------------------------------
FLAT_SUMMARY = {"nodes": 40, "edges": 120, "scc_count": 7, "dangling": 3, "diameter": 6, "avg_distance": 2.5,
                "stats_nodes": 20, "capped": True, "in_degree_hist": [3, 10, 9, 8, 5, 3, 1, 0, 1],
                "out_degree_hist": [3, 4, 10, 12, 8, 3]}
WHOLE_SUMMARY = {"nodes": 40, "edges": 120, "dangling": 3,
                 "whole": {"scope": "whole graph", "nodes": 40, "edges": 120, "scc_count": 5, "largest_scc": 30,
                           "avg_distance": {"estimate": 3.1, "se": 0.05, "rse": 0.016},
                           "effective_diameter": {"estimate": 5.2, "se": 0.2, "rse": 0.04},
                           "reachable_pairs": None},
                 "first_n": {"scope": "first 20 pages", "n": 20, "capped": True, "scc_count": 4, "largest_scc": 12,
                             "diameter": 6, "avg_distance": 2.5, "effective_diameter": 4.0},
                 "in_degree_hist": {"lo": [0, 1, 2], "hi": [0, 1, 3], "count": [3, 10, 17]},
                 "out_degree_hist": {"lo": [0, 1, 2], "hi": [0, 1, 3], "count": [3, 4, 22]}}


def vitals(rank: int, step: int = 5) -> dict:
    return {"rank": rank, "superstep": step, "elapsed_s": 2.0, "requests": 10 + rank, "pages_ok": 9 + rank,
            "pages_failed": 1, "bytes": 1000 * (rank + 1), "queued": 4, "frontier": 3, "outbox": 1, "in_flight": 0,
            "idle_s": 0.5, "idle_slot_s": 0.25, "exchange_s": 0.1, "errors": {"http_4xx": 1},
            "hosts": [["a.test:80", 8, 2], [f"r{rank}.test:80", 3, 1]]}


def snapshot(summary=None, **kw) -> dict:
    series = ExchangeSeries()
    series.update(SimpleNamespace(step_volume={0: [5], 1: [7]}, step_t={0: 0.1, 1: 0.4},
                                  exchange_rows=[(0, 0, 1, 3, 1), (1, 0, 1, 4, 1), (1, 1, 0, 0, 1)]), 1)
    from abc_crawler.dashboard.publisher import rank_entry
    from abc_crawler.dashboard.snapshot import merge_errors, merge_hosts

    v = [vitals(0), None, vitals(2)]
    args = dict(seq=3, meta={"session_dir": "s", "ranks": 3, "assignment": "hash", "max_pages": None,
                             "time_limit": 30.0, "started": "2026-01-01T00:00:00Z"},
                state="running", stopped=None, elapsed=2.0, superstep=5,
                totals={"requests": 33, "pages_ok": 29, "pages_failed": 2, "bytes": 4000, "errors": 2,
                        "frontier": 6, "queued": 8, "outbox": 2},
                ranks=[rank_entry(r, x, 1.5 if x else None) for r, x in enumerate(v)], exchange=series.as_dict(),
                graph=FLAT_SUMMARY if summary is None else summary,
                errors=merge_errors([x and x["errors"] for x in v]), hosts=merge_hosts([x and x["hosts"] for x in v]),
                history=[(0.5, 3, 100), (1.0, 10, 900), (2.0, 33, 4000)], updated="2026-01-01T00:00:02Z")
    args.update(kw)
    return build_snapshot(**args)


# -- the schema --------------------------------------------------------------------------------------
@pytest.mark.parametrize("summary", [FLAT_SUMMARY, WHOLE_SUMMARY, None], ids=["first-n", "whole", "no-stats"])
def test_snapshot_matches_the_documented_schema(summary):
    schema = documented_schema()
    assert len(schema) > 60 and schema["per_rank[].pages_ok"] == "int|null"
    snap = snapshot(summary if summary is not None else {"nodes": 3, "edges": 2})
    assert schema_problems(json.loads(json.dumps(snap)), schema) == []


def test_schema_check_finds_an_undocumented_key_a_missing_one_and_a_wrong_type():
    schema = documented_schema()
    snap = json.loads(json.dumps(snapshot(WHOLE_SUMMARY)))
    snap["surprise"] = 1
    snap["per_rank"][0]["pages_ok"] = "many"
    del snap["rate"]["now"]
    snap["graph"]["figures"][0]["scope"] = None
    assert sorted(schema_problems(snap, schema)) == [
        "graph.figures[].scope: None is not str", "per_rank[].pages_ok: 'many' is not int|null",
        "rate.now: missing", "surprise: not documented"]


def test_documentation_of_the_schema_is_parsed_whole():
    # a row the parser cannot read would silently shrink the schema: every key of the table is read
    text = (documented_schema.__globals__["DOC"]).read_text()
    section = text.split("## `/status.json`", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    assert len(documented_schema()) == len(rows)


# -- pure functions ------------------------------------------------------------------------------------
def test_graph_figures_name_scope_and_kind_in_both_summary_shapes():
    flat = {(f["name"], f["scope"], f["kind"]) for f in graph_figures(FLAT_SUMMARY)}
    assert ("scc_count", "first 20 pages", "exact") in flat and ("nodes", "whole graph", "exact") in flat
    uncapped = {(f["name"], f["scope"]) for f in graph_figures(dict(FLAT_SUMMARY, capped=False))}
    assert ("scc_count", "whole graph") in uncapped
    figs = graph_figures(WHOLE_SUMMARY)
    by = {(f["name"], f["scope"]): f for f in figs}
    assert by[("scc_count", "whole graph")]["value"] == 5 and by[("scc_count", "whole graph")]["kind"] == "exact"
    assert by[("scc_count", "first 20 pages")]["value"] == 4
    est = by[("avg_distance", "whole graph")]
    assert (est["kind"], est["value"], est["se"]) == ("estimate", 3.1, 0.05)
    assert ("reachable_pairs", "whole graph") not in by           # not computed yet: left out
    assert graph_figures(None) == [] and graph_figures({}) == []
    # the SCC figure shown first is the whole graph's when there is one
    assert next(f for f in figs if f["name"] == "scc_count")["scope"] == "whole graph"


@given(st.lists(st.integers(0, 50), max_size=300))
def test_degree_bins_keep_every_node_in_doubling_bins(hist):
    b = degree_bins(hist)
    top = max((d for d, c in enumerate(hist) if c), default=-1)
    assert sum(b["count"]) == sum(hist)
    assert b["lo"] == sorted(b["lo"]) and all(lo <= hi for lo, hi in zip(b["lo"], b["hi"]))
    assert all(b["lo"][i + 1] == b["hi"][i] + 1 for i in range(len(b["lo"]) - 1))       # contiguous
    assert (b["hi"][-1] if b["hi"] else -1) == top
    for lo, hi, c in zip(b["lo"], b["hi"], b["count"]):
        assert c == sum(hist[lo:hi + 1]) and (lo < 2 or hi <= 2 * lo - 1)


def test_rate_now_is_over_the_window_and_average_over_the_crawl():
    s = snapshot(history=[(0.0, 0, 0), (4.0, 40, 400), (6.0, 60, 600), (10.0, 160, 1600)], elapsed=10.0,
                 totals={"requests": 160, "bytes": 1600})
    assert s["rate"]["now"] == (160 - 40) / 6.0              # since the newest point at least 5 s back
    short = snapshot(history=[(8.0, 100, 0), (10.0, 160, 0)], elapsed=10.0, totals={"requests": 160})
    assert short["rate"]["now"] == 30.0                      # less than 5 s of history: since its oldest point
    assert s["rate"]["average"] == 16.0 and s["throughput"]["average"] == 160.0
    with pytest.raises(ValueError, match="state"):
        snapshot(state="sleeping")


# -- the exchange series, read a little at a time ------------------------------------------------------
def _fed_coordinator(steps: int, ranks: int, seed: int):
    rng = np.random.default_rng(seed)
    co = Coordinator(ranks=ranks)
    for step in range(steps):
        for r in range(ranks):
            sb = [int(x) if d != r and rng.random() < 0.6 else 0 for d, x in enumerate(rng.integers(1, 500, ranks))]
            co.consume(encode_report(SuperstepReport(rank=r, superstep=step, volume=int(rng.integers(0, 900)),
                                            send_bytes=sb, send_urls=[1 if b else 0 for b in sb])))
        co.end_superstep(step, 0.25 * step)
        yield co, step


def _truth(co) -> dict:
    ex = co.exchange_arrays()
    n = len(ex["step_t"])
    rows = ex["rows"]
    return {"volume_bytes": ex["step_volume"].sum(axis=1).tolist(),
            "wire_bytes": np.bincount(rows[:, 0], weights=rows[:, 3], minlength=n).astype(int).tolist(),
            "messages": np.bincount(rows[:, 0], minlength=n).tolist(), "t": ex["step_t"].round(3).tolist()}


def reference_bins(columns: dict[str, list], max_points: int) -> dict:
    """The series cut to at most max_points by summing bins of the smallest power-of-2 width (t: a bin's last)."""
    n = len(columns["t"])
    width = 1
    while -(-n // width) > max_points:
        width *= 2
    out = {"width": width, "superstep": list(range(0, n, width))}
    for k, v in columns.items():
        out[k] = [v[min(i + width, n) - 1] for i in range(0, n, width)] if k == "t" else [
            sum(v[i:i + width]) for i in range(0, n, width)]
    return out


class _DictCoordinator:
    """The coordinator's other shape (plain lists and dicts keyed by superstep)."""

    def __init__(self, co):
        ex = co.exchange_arrays()
        self.exchange_rows = [tuple(r) for r in ex["rows"].tolist()]
        self.step_volume = {s: v for s, v in enumerate(ex["step_volume"].tolist())}
        self.step_t = {s: t for s, t in enumerate(ex["step_t"].tolist())}


@pytest.mark.parametrize("seed,max_points", [(1, 240), (2, 7), (3, 16), (4, 1)])
def test_exchange_series_read_incrementally_equals_the_whole_arrays_binned(seed, max_points):
    rng = np.random.default_rng(seed)
    series = ExchangeSeries(max_points)
    co = None
    for co, step in _fed_coordinator(120, 3, seed):
        if rng.random() < 0.3:                  # the publisher skips supersteps (rate limit)
            series.update(co, step)
    series.update(co, 119)
    series.update(co, 119)                      # nothing new: nothing counted twice
    truth = _truth(co)
    d = series.as_dict()
    assert d["series"] == reference_bins(truth, max_points)
    assert (d["supersteps"], d["volume_bytes"], d["wire_bytes"], d["messages_mpi"]) == (
        120, sum(truth["volume_bytes"]), sum(truth["wire_bytes"]), len(co.exchange_arrays()["rows"]))
    other = ExchangeSeries(max_points)
    other.update(_DictCoordinator(co), 59)
    other.update(_DictCoordinator(co), 119)
    assert other.as_dict() == d


def test_exchange_series_check_sees_a_row_counted_twice():
    # control: re-reading from the first row (a wrong cursor) does not match the arrays
    cos = list(_fed_coordinator(20, 2, 7))
    co = cos[-1][0]
    s = ExchangeSeries()
    s.update(co, 9)
    s._rows = 0
    s.update(co, 19)
    assert s.as_dict()["series"]["messages"] != _truth(co)["messages"]


# -- vitals -----------------------------------------------------------------------------------------------
def test_vitals_encode_a_ranks_counters_and_refresh_hosts_at_most_once_per_interval():
    from abc_crawler.dashboard.vitals import top_hosts

    admitted = Counter({"a.test": 9, "b.test": 5, "c.test": 1})
    pending = {"a.test": 4, "b.test": 0}.get
    status = np.zeros(len(STATUS_FIELDS), np.int64)
    for k, v in {"work": 10, "requests": 30, "pages_ok": 25, "bytes": 999, "failed": 3, "frontier": 6,
                 "outbox": 1}.items():
        status[STATUS_FIELDS.index(k)] = v
    sender = VitalsSender(STATUS_FIELDS, hosts_seconds=3600)
    asked = []

    def encode():
        return decode_vitals([sender.encode(
            status, rank=2, superstep=17, elapsed_s=3.0, errors=Counter({"timeout": 2}), idle_s=1.25,
            idle_slot_s=0.5, exchange_s=0.2, hosts=lambda: asked.append(1) or top_hosts(admitted.items(), pending))])[0]

    v = encode()
    assert v["rank"] == 2 and v["superstep"] == 17 and v["requests"] == 30 and v["pages_failed"] == 3
    assert (v["queued"], v["frontier"], v["outbox"], v["in_flight"]) == (10, 6, 1, 3)
    assert v["errors"] == {"timeout": 2} and v["idle_slot_s"] == 0.5 and v["elapsed_s"] == 3.0
    assert v["hosts"] == [["a.test", 9, 4], ["b.test", 5, 0], ["c.test", 1, 0]]
    admitted["z.test"] = 100                                # within the interval: the old list is sent
    assert encode()["hosts"][0][0] == "a.test" and len(asked) == 1
    sender.hosts_seconds = 0
    assert encode()["hosts"][0] == ["z.test", 100, 0] and len(asked) == 2
    assert decode_vitals([b"", None]) == [None, None] and decode_vitals(None) == []


# -- the publisher ---------------------------------------------------------------------------------------------
class _FakeServer:
    def __init__(self):
        self.published, self.stop_requested, self.url, self.token, self.polls = [], False, "http://x/", "t", 0

    def publish(self, data, finished=False):
        self.published.append((data, finished))

    def start(self):
        pass


def _status(**kw):
    st_ = np.zeros(len(STATUS_FIELDS), np.int64)
    for k, v in kw.items():
        st_[STATUS_FIELDS.index(k)] = v
    return st_


def test_publisher_builds_schema_valid_snapshots_at_most_once_per_interval_and_a_final_one():
    server = _FakeServer()
    meta = {"session_dir": "s", "ranks": 2, "assignment": None, "max_pages": 100, "time_limit": None,
            "started": "2026-01-01T00:00:00Z"}
    dash = Dashboard(server, STATUS_FIELDS, meta, ranks=2, min_interval=3600)
    dash.start("hash")
    co = None
    feed = _fed_coordinator(6, 2, 3)
    co, step = next(feed)
    t0 = time.monotonic()
    raw = [json.dumps(vitals(r, step)).encode() for r in range(2)]
    dash.publish(step, _status(requests=20, pages_ok=19, bytes=500, work=5), raw, co, t0)
    co, step = next(feed)
    dash.publish(step, _status(requests=40), raw, co, t0)             # within min_interval: no snapshot
    assert [s["state"] for s, _ in server.published] == ["starting", "running"]
    snap = server.published[-1][0]
    assert snap["requests"] == 20 and snap["queued"] == 5 and snap["per_rank"][1]["pages_ok"] == 10
    assert snap["assignment"] == "hash" and snap["seq"] == 2 and snap["superstep"] == 0
    schema = documented_schema()
    assert all(schema_problems(json.loads(json.dumps(s)), schema) == [] for s, _ in server.published)
    dash.min_interval = 0
    server.stop_requested = True
    co, step = next(feed)
    dash.publish(step, _status(requests=41), None, co, t0)
    assert server.published[-1][0]["state"] == "stopping"
    stats = {"requests": 50, "pages_crawled": 45, "pages_failed": 5, "bytes_stored": 9999, "wall_s": 3.5,
             "stopped": "signal", "errors": {"timeout": 5}, "graph": WHOLE_SUMMARY,
             "per_rank": [{"pages": 20, "bytes": 5000, "requests": 25, "idle_slot_s": 0.1},
                          {"pages": 25, "bytes": 4999, "requests": 25, "idle_slot_s": 0.2}]}
    for co, step in feed:
        pass
    dash.finish(stats, co, step)
    final, finished = server.published[-1]
    assert finished and final["state"] == "finished" and final["stopped"] == "signal"
    assert (final["requests"], final["pages_ok"], final["errors"]) == (50, 45, {"timeout": 5})
    assert [r["pages_ok"] for r in final["per_rank"]] == [20, 25] and final["exchange"]["supersteps"] == 6
    assert schema_problems(json.loads(json.dumps(final)), schema) == []


def test_publisher_builds_often_only_while_someone_polls(monkeypatch):
    from abc_crawler.dashboard import publisher

    monkeypatch.setattr(publisher, "WATCHED_SECONDS", 0.0)     # a poll makes the page watched for an instant
    server = _FakeServer()
    meta = {"session_dir": "s", "ranks": 1, "assignment": None, "max_pages": None, "time_limit": None, "started": "x"}
    dash = Dashboard(server, STATUS_FIELDS, meta, ranks=1, min_interval=0.0, idle_interval=3600)
    co, step = next(_fed_coordinator(1, 1, 1))
    t0 = time.monotonic()
    for _ in range(3):                                          # nobody polls: one snapshot, then the idle interval
        dash.publish(step, _status(requests=1), None, co, t0)
    assert len(server.published) == 1
    server.polls += 1                                           # a poll since the last superstep: build now
    dash.publish(step, _status(requests=2), None, co, t0)
    assert len(server.published) == 2 and server.published[-1][0]["requests"] == 2


# -- the server ----------------------------------------------------------------------------------------------------
@pytest.fixture
def server():
    stops = []
    srv = StatusServer(("127.0.0.1", 0), lambda: stops.append(1)).start()
    srv.publish(snapshot(WHOLE_SUMMARY))
    srv.stops = stops
    yield srv
    srv.close()


def request(srv, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection(*srv.address, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def raw(srv, data: bytes) -> bytes:
    """Send ``data`` as it is (a request ending in ``Connection: close``); everything the server answers."""
    with socket.create_connection(srv.address, timeout=10) as s:
        s.sendall(data)
        return s.makefile("rb").read()


def test_get_page_and_status(server):
    code, h, body = request(server, "GET", "/")
    assert code == 200 and h["Content-Type"].startswith("text/html") and b"<script>" in body
    assert "script-src 'sha256-" in h["Content-Security-Policy"] and "default-src 'none'" in h["Content-Security-Policy"]
    elsewhere = body.replace(b"http://www.w3.org/2000/svg", b"")       # the SVG namespace is a name, not a load
    assert b"cdn" not in body.lower() and b"http://" not in elsewhere and b"https://" not in body
    code, h, body = request(server, "GET", "/status.json?x=1")
    assert code == 200 and h["Content-Type"] == "application/json" and h["Cache-Control"] == "no-store"
    assert json.loads(body)["seq"] == 3
    code, h, body = request(server, "HEAD", "/status.json")
    assert code == 200 and body == b"" and int(h["Content-Length"]) > 100
    assert server.polls == 2 and server.stops == []
    assert request(server, "GET", "/chart/ranks.svg")[0] == 404            # the page draws its own charts


def test_page_csp_hashes_allow_exactly_its_inline_style_and_script():
    import base64
    import hashlib
    import re

    page = Page.load()
    html = page.html.decode()
    script = re.search(r"<script>(.*)</script>", html, re.S).group(1)
    style = re.search(r"<style>(.*)</style>", html, re.S).group(1)
    digest = lambda s: base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()  # noqa: E731
    assert f"script-src 'sha256-{digest(script)}'" in page.csp and f"style-src 'sha256-{digest(style)}'" in page.csp
    assert digest(script + " ") not in page.csp                    # control: another script would be refused


@pytest.mark.parametrize("method,path,code", [
    ("GET", "/nope", 404), ("GET", "/status.jsonx", 404), ("GET", "/chart/nope.svg", 404), ("POST", "/", 405),
    ("POST", "/status.json", 405), ("PUT", "/status.json", 405), ("DELETE", "/", 405), ("GET", "/stop", 405),
    ("PATCH", "/stop", 405), ("BREW", "/", 405), ("BREW", "/coffee", 404), ("OPTIONS", "/status.json", 405)])
def test_bad_method_or_unknown_path(server, method, path, code):
    got, h, body = request(server, method, path, body=b"" if method in ("POST", "PUT", "PATCH") else None)
    assert got == code and "error" in json.loads(body)
    if code == 405:
        assert h["Allow"] in ("GET, HEAD", "POST")
    assert server.stops == []


def test_stop_needs_the_token(server):
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for body in (b"", b"token=", b"token=wrong", b"token=" + server.token[:-1].encode(), b"tok=" + server.token.encode(),
                 b"\xff\xfe"):
        code, _, reply = request(server, "POST", "/stop", body=body, headers=form)
        assert code == 403 and b"token" in reply, body
    assert server.stops == [] and server.refused_stops == 6
    code, _, reply = request(server, "POST", "/stop", body=f"token={server.token}".encode(), headers=form)
    assert code == 202 and json.loads(reply) == {"stopping": True} and server.stops == [1]
    code, _, _ = request(server, "POST", "/stop", body=f"token={server.token}".encode(), headers=form)
    assert code == 202 and server.stops == [1]                    # asked once, stopped once
    server.publish(snapshot(state="finished", stopped="signal"), finished=True)
    code, _, _ = request(server, "POST", "/stop", body=f"token={server.token}".encode(), headers=form)
    assert code == 409


def test_oversized_missing_length_and_chunked_bodies_are_refused_unread(server):
    big = b"token=" + b"x" * MAX_BODY
    code, h, body = request(server, "POST", "/stop", body=big)
    assert code == 413 and h.get("Connection") == "close" and b"at most" in body
    reply = raw(server, b"POST /stop HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 411")
    reply = raw(server, b"POST /stop HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                        b"5\r\ntoken\r\n0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 411")
    reply = raw(server, b"POST /stop HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -4\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400")
    code, _, _ = request(server, "GET", "/status.json", body=b"abc")
    assert code == 400
    assert server.stops == []


def test_loopback_server_answers_only_loopback_host_names(server):
    port = server.address[1]
    for host in (f"127.0.0.1:{port}", "localhost:8080", f"[::1]:{port}", "dash.localhost", "127.0.0.2"):
        assert request(server, "GET", "/status.json", headers={"Host": host})[0] == 200, host
    for host in (f"evil.example:{port}", "10.0.0.1", "localhost.evil.example"):
        assert request(server, "GET", "/status.json", headers={"Host": host})[0] == 421, host


def test_connections_past_the_limit_get_503_and_the_rest_are_served(server):
    held = [socket.create_connection(server.address, timeout=10) for _ in range(MAX_CONNECTIONS)]
    try:
        deadline = time.monotonic() + 10
        reply = b""
        while time.monotonic() < deadline:          # the held ones are being accepted one by one
            reply = raw(server, b"GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            if reply.startswith(b"HTTP/1.1 503"):
                break
            time.sleep(0.05)
        assert reply.startswith(b"HTTP/1.1 503") and server.refused >= 1
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 10
    while request(server, "GET", "/status.json")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_bind_errors_and_addresses():
    taken = StatusServer(("127.0.0.1", 0), lambda: None)
    try:
        cfg = SimpleNamespace(dashboard=f"127.0.0.1:{taken.address[1]}", max_pages=None, time_limit=None)
        with pytest.raises(Exception, match=r"dashboard 127\.0\.0\.1:\d+: cannot listen"):
            Dashboard.bind(cfg, "s", 2, STATUS_FIELDS)
    finally:
        taken.close()
    for bad in ("127.0.0.1", "127.0.0.1:70000", ":80", "[zz]:1", "a b:1"):
        with pytest.raises(ValueError):
            parse_address(bad)
    six = StatusServer(("::1", 0), lambda: None)
    try:
        assert six.url.startswith("http://[::1]:")
    finally:
        six.close()


# -- failures are not swallowed -------------------------------------------------------------------------------
@pytest.fixture
def thread_hook():
    old = threading.excepthook
    crash.clear_thread_failures()
    crash.install_thread_hook()
    yield
    threading.excepthook = old
    crash.clear_thread_failures()


def _failure_within(seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            crash.raise_thread_failures()
        except crash.ThreadCrash as exc:
            return exc
        time.sleep(0.02)
    return None


def test_a_failing_request_thread_surfaces_in_the_main_thread(server, thread_hook):
    # a client that goes away is no failure
    with socket.create_connection(server.address, timeout=5):
        pass
    request(server, "GET", "/status.json")
    assert _failure_within(0.5) is None
    server.publish({"seq": 9, "bad": float("nan")})     # JSON cannot hold NaN: serializing it raises
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        request(server, "GET", "/status.json")
    exc = _failure_within(10)
    assert exc is not None and isinstance(exc.exc, ValueError) and "Out of range float" in str(exc.exc)
    assert exc.thread.startswith("Thread-") and "json" in exc.text
