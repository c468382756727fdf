"""``abc-report`` on small hand-built session directories.

The main session ``s`` (2 ranks, crawled with a part vector) is small enough
to compute every figure by hand:

====  =================  =====  =====  ==========================
 i    URL                owner  bytes  links (distinct)
====  =================  =====  =====  ==========================
 0    http://a.test/     0      1000   → 1, → 2
 1    http://a.test/x    0      3000   → 0, → 4, → 2
 2    http://b.test/     1      2000   → 3, → 0
 3    http://b.test/p    1      4000   → 1, → 4
 4    http://a.test/z    —      —      (never requested; a.test's majority rank: 0)
====  =================  =====  =====  ==========================

URL lengths: 14 for the two host roots, 15 for the others. Remote links:
0→2 (15), 1→2 (15), 2→0 (15), 3→1 (16), 3→4 (16): volume 77; pages with a
remote link: 0, 1, 2, 3, each to one other rank: messages 4; distinct
(sender, URL) pairs: (0, url 2), (1, url 0), (1, url 1), (1, url 4): wire
15 + 15 + 16 + 16 = 62; rank pairs (0, 1), (1, 0): at least 2 MPI messages.
Bytes per rank 4000 / 6000: storage imbalance (6000 − 5000) / 5000 = 20 %;
requests 2 / 2: 0 %.
"""
from __future__ import annotations

import doctest
import importlib
import io
import json
import pkgutil
from pathlib import Path

import numpy as np
import pytest

from abc_crawler.graph import metrics
from abc_crawler import report
from abc_crawler.web.ownership import N_BUCKETS
from abc_crawler.partition.partvec import make_partvec, save_partvec
from abc_crawler.store.session import SessionGraph, atomic_write_json, save_graph
from abc_crawler.web.urls import fingerprint, host_of

URLS = ["http://a.test/", "http://a.test/x", "http://b.test/", "http://b.test/p", "http://a.test/z"]
RANKS = [0, 0, 1, 1, -1]
BYTES = [1000, 3000, 2000, 4000, 0]
LINKS = [(0, 1), (0, 2), (0, 2), (1, 0), (1, 4), (1, 2), (2, 3), (2, 0), (3, 1), (3, 4)]  # (0, 2) twice
HAND = {"volume_bytes": 77, "wire_bytes": 62, "messages_thesis": 4, "messages_mpi": 2,
        "storage_pct": 20.0, "request_pct": 0.0}


def hand_graph(ranks=RANKS, K=2) -> SessionGraph:
    g = SessionGraph.from_urls(URLS, ranks=K)
    g.url_rank = np.array(ranks, np.int16)
    g.url_bytes = np.array(BYTES, np.int64)
    req = g.url_rank >= 0
    g.url_status = np.where(req, 200, 0).astype(np.int16)
    g.url_superstep = np.where(req, 0, -1).astype(np.int32)
    g.link_src = np.array([s for s, _ in LINKS], np.int32)
    g.link_dst = np.array([d for _, d in LINKS], np.int32)
    g.node_url = np.arange(4, dtype=np.int32)
    g.url_node = np.array([0, 1, 2, 3, -1], np.int32)
    e = sorted({(s, d) for s, d in LINKS if s != d and d < 4})
    g.edge_src = np.array([s for s, _ in e], np.int32)
    g.edge_dst = np.array([d for _, d in e], np.int32)
    return g


def write_session(d: Path, g: SessionGraph, assignment: str, figures: dict, rows, step_volume,
                  per_rank=None, remap=False) -> Path:
    """A session directory as abc-crawl writes it (only the keys the report reads)."""
    d.mkdir(parents=True, exist_ok=True)
    save_graph(d, g)
    K = g.ranks
    req = g.url_rank >= 0
    if per_rank is None:
        b = np.bincount(g.url_rank[req], weights=g.url_bytes[req], minlength=K)
        n = np.bincount(g.url_rank[req], minlength=K)
        per_rank = [{"rank": r, "pages": int(n[r]), "bytes": int(b[r]), "requests": int(n[r]), "cpu_s": 0.1}
                    for r in range(K)]
    stats = {"ranks": K, "pages_crawled": int(req.sum()), "pages_failed": 0, "requests": int(req.sum()),
             "bytes_stored": int(g.url_bytes[req].sum()), "wall_s": 1.5, "assignment": assignment,
             "stopped": "done", "per_rank": per_rank,
             "exchange": {"supersteps": len(step_volume), "volume_bytes": figures["volume_bytes"],
                          "wire_bytes": figures["wire_bytes"], "messages_thesis": figures["messages_thesis"],
                          "messages_mpi": figures["messages_mpi"]},
             "imbalance": {"storage_pct": figures["storage_pct"], "request_pct": figures["request_pct"]},
             "overlap_pages": 0}
    atomic_write_json(d / "stats.json", stats)
    atomic_write_json(d / "manifest.json", {"format": 1, "ranks": K, "assignment": assignment,
                                            "config": {"assign_buckets": N_BUCKETS, "remap": remap},
                                            "stopped": "done"})
    buf = io.BytesIO()
    np.savez(buf, rows=np.array(rows, np.int64).reshape(-1, 5), step_volume=np.array(step_volume, np.int64),
             step_pages=np.ones((len(step_volume), K), np.int64), step_t=np.arange(1, len(step_volume) + 1) * 0.5)
    (d / "exchange.npz").write_bytes(buf.getvalue())
    return d


def brute_force(g: SessionGraph, owner) -> dict:
    """Volume, messages and wire bytes (docs/SESSION_FORMAT.md) by plain loops (no NumPy, no partition package)."""
    links = sorted({(s, d) for s, d in zip(g.link_src.tolist(), g.link_dst.tolist()) if g.url_rank[s] >= 0})
    vol, msgs, wire = 0, 0, set()
    by_src: dict[int, set] = {}
    for s, d in links:
        if owner[s] != owner[d]:
            vol += len(g.urls[d].encode()) + 1
            by_src.setdefault(s, set()).add(owner[d])
            wire.add((owner[s], d))
    msgs = sum(len(v) for v in by_src.values())
    return {"volume_bytes": vol, "messages_thesis": msgs,
            "wire_bytes": sum(len(g.urls[d].encode()) + 1 for _, d in wire)}


@pytest.fixture()
def sessions(tmp_path):
    """s0: a hash session of the same web (the one the vector was 'made from'); s: crawled with the vector."""
    K = 2
    hash_owner = [fingerprint(u) % N_BUCKETS % K for u in URLS]
    g0 = hand_graph(ranks=hash_owner[:4] + [-1])
    bf = brute_force(g0, hash_owner)
    s0_fig = {**bf, "messages_mpi": 5, "storage_pct": 12.5, "request_pct": 0.0}
    s0 = write_session(tmp_path / "s0", g0, "hash", s0_fig, rows=[[0, 0, 1, 10, 1]] * 5, step_volume=[[1, 2]])
    pv = make_partvec(hand_graph(), np.array([0, 0, 1, 1, -1]), K, "page-gp", source=str(s0))
    stored = {"K": 2, "volume_bytes": 77, "messages_thesis": 4, "storage_pct": 20.0, "request_pct": 0.0,
              "bytes_per_rank": [4000, 6000], "requests_per_rank": [2, 2]}
    pv.metrics = {"predicted": stored}
    save_partvec(tmp_path / "pv.npz", pv)
    s = write_session(tmp_path / "s", hand_graph(), f"partvec:{tmp_path / 'pv.npz'}", HAND,
                      rows=[[0, 0, 1, 15, 1], [1, 1, 0, 47, 3]], step_volume=[[30, 0], [0, 47]])
    return {"s": s, "s0": s0, "s0_fig": s0_fig, "hash_owner": hash_owner, "stored": stored}


def run(capsys, *args):
    rc = report.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_hand_figures_measured_predicted_hash_and_ratios(sessions):
    s = report.load_session(sessions["s"])
    s0 = report.load_session(sessions["s0"])
    rep = report.build_report(s, s0, thesis=False)
    cols = rep["columns"]
    for key, v in HAND.items():
        assert cols["measured"][key] == v, key
    assert cols["measured"]["bytes_per_rank"] == [4000, 6000]
    # the vector's owner rule on s0's graph: rank per URL, a.test/z by a.test's majority (rank 0)
    p = cols["predicted_on_against"]
    exact = ("volume_bytes", "messages_thesis", "storage_pct", "request_pct")
    assert {k: p[k] for k in exact} == {k: HAND[k] for k in exact}
    # order-dependent figures: lower bounds only
    assert p["wire_bytes"] is None and p["wire_bytes_min"] == 62 and p["wire_urls"] == 4
    assert p["messages_mpi"] is None and p["messages_mpi_min"] == 2
    assert p["bytes_per_rank"] == [4000, 6000] and p["requests_per_rank"] == [2, 2]
    # the stored prediction is shown as stored
    assert cols["predicted_stored"]["volume_bytes"] == 77 and cols["predicted_stored"]["messages_mpi"] is None
    assert cols["predicted_stored"]["wire_bytes"] is None
    assert rep["prediction_error"]["predicted_stored"] == {k: 0 for k in
                                                            ("volume_bytes", "messages_thesis", "storage_pct",
                                                             "request_pct")}
    assert all(v == 0 for v in rep["prediction_error"]["predicted_on_against"].values())
    # hash baseline on s's graph, against plain loops over xxh3 % 4096 % 2
    bf = brute_force(s.graph, sessions["hash_owner"])
    h = cols["hash_on_session"]
    assert (h["volume_bytes"], h["messages_thesis"], h["wire_bytes_min"]) == (
        bf["volume_bytes"], bf["messages_thesis"], bf["wire_bytes"])
    # re-derivation from graph.npz + exchange.npz agrees with stats.json
    rec = rep["recomputed"]
    assert rec["available"] and rec["check"] == {"consistent": True, "differences": {}}
    assert rec["wire_url_bytes"] == 62 and rec["wire_ok"] and rec["messages_mpi"] == 2 and rec["wire_bytes"] == 62
    # against: measured of s0 and ratios
    f0 = sessions["s0_fig"]
    assert cols["against_measured"]["volume_bytes"] == f0["volume_bytes"]
    assert rep["ratios"]["volume_bytes"] == pytest.approx(77 / f0["volume_bytes"])
    assert rep["ratios"]["messages_mpi"] == pytest.approx(2 / 5)
    assert rep["ratios"]["storage_pct"] == pytest.approx(20.0 - 12.5)
    # per superstep from exchange.npz
    ps = rep["per_superstep"]["session"]
    assert ps["volume"] == [30, 47] and ps["messages_mpi"] == [1, 1] and ps["wire_bytes"] == [15, 47]
    assert rep["partvec"]["model"] == "page-gp" and rep["partvec"]["K"] == 2 and "pv" not in rep["partvec"]


def test_files_written_and_stdout_table(sessions, capsys, tmp_path):
    out = tmp_path / "out"
    rc, stdout, err = run(capsys, sessions["s"], "--against", sessions["s0"], "--out", out, "--parts", "2,3,64")
    assert rc == 0, err
    lines = stdout.splitlines()
    row = next(ln for ln in lines if ln.startswith("volume_bytes"))
    assert row.split()[2:5] == ["77", "77", "77"]           # measured, stored, on s0
    row = next(ln for ln in lines if ln.startswith("wire_bytes"))
    assert row.split()[1:5] == ["62", "—", "≥", "62"]     # measured, stored (none), bound on s0
    assert "ratio" in stdout and "stored prediction: measured figures equal it exactly" in stdout
    md = (out / "report.md").read_text()
    data = json.loads((out / "report.json").read_text())
    assert data["columns"]["measured"]["volume_bytes"] == 77
    assert set(data["plots"]) == {"measured_vs_predicted", "per_rank", "supersteps", "thesis"}
    for name in data["plots"].values():
        assert f"]({name})" in md                           # embedded by relative path
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| volume_bytes (MV) | 77 | 77 | 77 |" in md
    assert "## Definitions" in md and "connectivity − 1" in md
    # thesis table: K=64 > 4 pages skipped; K=3 > 2 hosts has no site model
    th = data["thesis"]
    assert th["skipped"] == [64] and [r["K"] for r in th["rows"]] == [2, 3]
    assert th["rows"][1]["site-gp"] is None and th["rows"][1]["page-gp"] is not None
    assert data["dataset"]["page"]["vertices"] == 4 and data["dataset"]["site"]["vertices"] == 2
    assert not list(out.glob(".*.tmp"))                     # atomic writes leave no temporaries


def test_default_out_dir_and_no_plots(sessions, capsys):
    rc, stdout, err = run(capsys, sessions["s"], "--no-plots", "--no-thesis")
    assert rc == 0, err
    d = sessions["s"] / "report"
    assert sorted(p.name for p in d.iterdir()) == ["report.json", "report.md"]
    data = json.loads((d / "report.json").read_text())
    assert data["against"] is None and "predicted_on_against" not in data["columns"]
    assert "thesis" not in data


def test_thesis_table_two_separate_cliques():
    """Two hosts, each a 4-clique of equal pages: GP/HP split them with no cut, K=2."""
    urls = [f"http://{h}.test/{i}" for h in "ab" for i in range(4)]
    g = SessionGraph.from_urls(urls, ranks=2)
    g.url_rank[:] = 0
    g.url_bytes[:] = 1000
    pairs = [(h * 4 + i, h * 4 + j) for h in range(2) for i in range(4) for j in range(4) if i != j]
    g.link_src = np.array([p[0] for p in pairs], np.int32)
    g.link_dst = np.array([p[1] for p in pairs], np.int32)
    th = report.thesis_table(g, [2, 4, 16], hp=True, seed=1)
    assert th["skipped"] == [16] and [r["K"] for r in th["rows"]] == [2, 4]
    r2 = th["rows"][0]
    for m in ("page-gp", "site-gp"):
        assert r2[m]["volume_bytes"] == 0 and r2[m]["storage_pct"] == 0 and r2[m]["request_pct"] == 0, m
    for m in ("page-hp", "site-hp"):
        assert r2[m]["messages_thesis"] == 0, m
    hash_owner = [fingerprint(u) % N_BUCKETS % 2 for u in urls]
    assert r2["hash"]["volume_bytes"] == brute_force(g, hash_owner)["volume_bytes"]
    site_owner = [fingerprint(host_of(u)) % N_BUCKETS % 2 for u in urls]
    assert r2["site-hash"]["volume_bytes"] == brute_force(g, site_owner)["volume_bytes"]
    r4 = th["rows"][1]
    assert r4["site-gp"] is None and r4["site-hp"] is None      # 4 parts > 2 hosts
    assert r4["page-gp"]["request_pct"] == 0                     # 2 pages per part
    no_hp = report.thesis_table(g, [2], hp=False)
    assert no_hp["rows"][0]["page-hp"] is None and any("--no-hp" in n for n in no_hp["notes"])


def test_stats_that_disagree_with_the_files_are_flagged(sessions):
    st = json.loads((sessions["s"] / "stats.json").read_text())
    st["exchange"]["volume_bytes"] = 78
    st["imbalance"]["request_pct"] = 0.5
    atomic_write_json(sessions["s"] / "stats.json", st)
    rep = report.build_report(report.load_session(sessions["s"]), thesis=False)
    assert rep["recomputed"]["check"] == {"consistent": False,
                                          "differences": {"volume_bytes": [78, 77], "request_pct": [0.5, 0.0]}}
    assert any("differ" in n for n in rep["notes"])
    assert rep["prediction_error"]["predicted_stored"]["volume_bytes"] == 1


def test_fewer_wire_bytes_than_the_urls_sent_is_flagged(sessions):
    s = sessions["s"]
    st = json.loads((s / "stats.json").read_text())
    st["exchange"]["wire_bytes"] = 60
    atomic_write_json(s / "stats.json", st)
    buf = io.BytesIO()
    np.savez(buf, rows=np.array([[0, 0, 1, 15, 1], [1, 1, 0, 45, 3]], np.int64),
             step_volume=np.array([[30, 0], [0, 47]], np.int64))
    (s / "exchange.npz").write_bytes(buf.getvalue())
    rep = report.build_report(report.load_session(s), thesis=False)
    assert rep["recomputed"]["check"]["consistent"]         # stats.json agrees with exchange.npz ...
    assert not rep["recomputed"]["wire_ok"]                 # ... but 62 URL bytes had to cross
    assert any("fewer wire bytes" in n for n in rep["notes"])


def test_missing_part_vector_is_a_note_not_an_error(sessions, capsys, tmp_path):
    (tmp_path / "pv.npz").unlink()
    rc, stdout, err = run(capsys, sessions["s"], "--no-plots", "--no-thesis")
    assert rc == 0, err
    data = json.loads((sessions["s"] / "report" / "report.json").read_text())
    assert data["partvec"]["found"] is False
    assert set(data["columns"]) == {"measured", "hash_on_session"}
    assert data["recomputed"]["available"] is False
    assert "not found" in stdout


def test_relative_part_vector_path_and_remapped_crawl(sessions, tmp_path):
    """A session run with 1 rank and --remap on the K=2 vector: owners as the crawl computed them."""
    g = hand_graph(ranks=[0, 0, 0, 0, -1], K=1)
    s1 = write_session(tmp_path / "one", g, "partvec:pv.npz",  # relative to the session's parent
                       {"volume_bytes": 0, "wire_bytes": 0, "messages_thesis": 0, "messages_mpi": 0,
                        "storage_pct": 0.0, "request_pct": 0.0}, rows=[], step_volume=[[0]], remap=True)
    s = report.load_session(s1)
    info = report.resolve_partvec(s)
    assert info["found"] and info["K"] == 1 and info["remapped_from"] == 2 and info["stored"] is None
    rep = report.build_report(s, report.load_session(sessions["s"]), thesis=False)
    assert rep["columns"]["predicted_on_against"]["volume_bytes"] == 0
    assert "predicted_stored" not in rep["columns"]
    assert rep["recomputed"]["check"]["consistent"]
    # without --remap the vector is not the one the crawl used
    m = json.loads((s1 / "manifest.json").read_text())
    m["config"]["remap"] = False
    atomic_write_json(s1 / "manifest.json", m)
    info = report.resolve_partvec(report.load_session(s1))
    assert not info["found"] and "without --remap" in info["note"]


@pytest.mark.parametrize("setup, args, msg", [
    (None, ["{tmp}/nope"], "no such session directory"),
    ("file", ["{tmp}/afile"], "not a directory"),
    ("rm stats.json", ["{s}"], "no stats.json"),
    ("rm graph.npz", ["{s}"], "no graph.npz"),
    ("rm exchange.npz", ["{s}"], "no exchange.npz"),
    ("bad stats.json", ["{s}"], "stats.json: unreadable"),
    ("no exchange key", ["{s}"], "missing exchange.volume_bytes"),
    ("bad graph.npz", ["{s}"], "graph.npz: unreadable"),
    ("cut graph.npz", ["{s}"], "graph.npz: unreadable"),
    (None, ["{s}", "--against", "{tmp}/nope"], "no such session directory"),
    (None, ["{s}", "--parts", "2,x"], "--parts"),
    (None, ["{s}", "--parts", "0"], "--parts"),
    (None, ["{s}", "--threads", "0"], "--threads"),
    (None, [], "required"),
])
def test_bad_input_exits_2_with_one_line(sessions, capsys, tmp_path, setup, args, msg):
    s = sessions["s"]
    if setup == "file":
        (tmp_path / "afile").write_text("x")
    elif setup and setup.startswith("rm "):
        (s / setup[3:]).unlink()
    elif setup == "bad stats.json":
        (s / "stats.json").write_text("{not json")
    elif setup == "no exchange key":
        st = json.loads((s / "stats.json").read_text())
        del st["exchange"]["volume_bytes"]
        atomic_write_json(s / "stats.json", st)
    elif setup == "bad graph.npz":
        (s / "graph.npz").write_bytes(b"not a zip")
    elif setup == "cut graph.npz":                    # a zip cut short (a full disk, a copy stopped)
        data = (s / "graph.npz").read_bytes()
        (s / "graph.npz").write_bytes(data[:len(data) // 2])
    rc, out, err = run(capsys, *[a.format(s=s, tmp=tmp_path) for a in args])
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("abc-report: error:") and msg in lines[0], err
    assert not (s / "report").exists()


@pytest.mark.parametrize("mod", [report, *(importlib.import_module(f"abc_crawler.report.{m.name}")
                                            for m in pkgutil.iter_modules(report.__path__)), metrics])
def test_docstring_examples(mod):
    res = doctest.testmod(mod, raise_on_error=False)
    assert res.failed == 0


def test_where_the_time_went_names_the_bound():
    from abc_crawler.report.timing import time_figures, time_rows

    def stats(wall, host_bound, slot, exch=1.0):
        return {"wall_s": wall, "bounds": {"host_bound_s": host_bound, "hosts": [{"host": "big.test", "requests": 9,
                                                                                   "bound_s": host_bound}],
                                           "rank_busy_s": [wall - slot, 2.0]},
                "per_rank": [{"idle_slot_s": slot, "idle_rest_s": 1.0, "idle_empty_s": 0.5, "exchange_s": exch,
                              "handovers": 3}, {"idle_slot_s": 0.0, "idle_rest_s": 0.0, "idle_empty_s": 2.0,
                                                "exchange_s": 0.2, "handovers": 1}],
                "slot_cuts": {"total": 7}}

    hash_s, gp = stats(40.0, 38.0, 1.0), stats(240.0, 38.0, 200.0)
    # hash_s: a session from before these figures
    gp["per_rank"][0].update(loop_gap_s=0.4, loop_gaps=[[100.0, 0.3], [90.0, 0.1]], lease_wait_max_ms=12)
    gp["per_rank"][1].update(loop_gap_s=12.5, loop_gaps=[[50.0, 7.25], [80.0, 5.25]], lease_wait_max_ms=48)
    tf = time_figures(gp, hash_s)
    assert tf["session"]["bound_by"] == "waiting for phase slots" and tf["against"]["bound_by"] == "a host's politeness"
    assert tf["wall_ratio"] == 6.0 and tf["session"]["handovers"] == 4 and tf["session"]["host"] == "big.test"
    assert time_figures(stats(40.0, 5.0, 1.0, exch=30.0))["session"]["bound_by"] == "the exchange"
    assert time_figures(stats(40.0, 5.0, 1.0))["session"]["bound_by"] == "the ranks' own work"
    head, body = time_rows(tf)
    assert head == ["where the time went", "session", "against"]
    rows = {r[0]: r[1:] for r in body}
    assert rows["wall time, s"] == ["240.0", "40.0"] and rows["wall time, session / against"][0] == "6.00"
    assert rows["waiting for slots, all ranks, s"] == ["200.0", "1.0"]
    assert rows["longest time a rank's loop stood still (busy elsewhere or descheduled), s"] == ["7.25", "—"]
    assert rows["loops standing still 50 ms or more, all ranks, s"] == ["12.9", "—"]
    assert rows["longest hand-over (a lease from sending to taking), ms"] == ["48", "—"]


def test_graph_figures_name_scope_and_kind_for_new_and_old_sessions():
    from abc_crawler.report.timing import graph_figure_rows

    new = {"graph": {"nodes": 10, "edges": 20, "dangling": 1,
                     "whole": {"nodes": 10, "edges": 20, "scc_count": 3, "largest_scc": 8},
                     "first_n": {"n": 5, "capped": True, "scc_count": 2, "largest_scc": 4, "diameter": 3,
                                 "avg_distance": 1.5, "effective_diameter": 2.1}}}
    labels = [k for k, _ in graph_figure_rows(new)]
    assert labels[0] == "graph, whole (exact)" and any(lbl.startswith("graph, first 5 pages (exact)") for lbl in labels)
    old = {"graph": {"nodes": 30000, "edges": 9, "scc_count": 5036, "dangling": 2, "diameter": 55,
                     "avg_distance": 16.98, "stats_nodes": 20000, "capped": True}}
    rows = dict(graph_figure_rows(old))
    assert rows["graph, whole (exact)"] == "30000 nodes, 9 edges"
    assert "5036 SCC" in rows["graph, first 20000 pages (exact)"]    # not presented as the whole graph's


# -- report.html (abc-report --html) ----------------------------------------------------------------------
def test_html_report_holds_the_markdown_tables_and_every_plot_inline(sessions, capsys, tmp_path):
    import base64
    import re

    rc, _, err = run(capsys, sessions["s"], "--out", tmp_path / "plain", "--parts", "2")
    assert rc == 0, err
    out = tmp_path / "out"
    rc, stdout, err = run(capsys, sessions["s"], "--out", out, "--parts", "2", "--html")
    assert rc == 0, err
    assert "report.html" in stdout
    md = (out / "report.md").read_text()
    timeless = lambda text: re.sub(r"in \d+\.\d s\)", "in … s)", text)  # noqa: E731 - partitioning time
    assert timeless(md) == timeless((tmp_path / "plain" / "report.md").read_text())    # the Markdown stays
    html = (out / "report.html").read_text()
    data = json.loads((out / "report.json").read_text())
    # every Markdown table is an HTML table with as many rows
    md_tables = [len(t.strip().splitlines()) - 1 for t in re.findall(r"((?:^\|.*\|\n)+)", md, re.M)]
    html_tables = [t.count("<tr>") for t in re.findall(r"<table>.*?</table>", html, re.S)]
    assert html_tables == md_tables and len(md_tables) >= 5
    assert "<td style=\"text-align: right;\">77</td>" in html
    # every plot inline, as the SVG drawing of that figure; nothing else is loaded
    srcs = re.findall(r'<img alt="([^"]*)" src="([^"]*)"', html)
    assert len(srcs) == len(data["plots"]) == 4
    for alt, src in srcs:
        assert src.startswith("data:image/svg+xml;base64,")
        svg = base64.b64decode(src.split(",", 1)[1])
        assert b"<svg" in svg[:400] and b"</svg>" in svg[-20:], alt
    assert not re.search(r'(?:src|href)="(?!data:)', html) and "http-equiv=\"Content-Security-Policy\"" in html


def test_html_report_shows_markup_in_its_text_as_text_and_refuses_a_missing_plot():
    from abc_crawler.report.html import render_html

    page = render_html("# s\n\n- session <script>alert(1)</script> <img src=x onerror=y>\n", {}, "t<b>")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img" not in page and "<title>t&lt;b&gt;</title>" in page
    with pytest.raises(ValueError, match="no SVG for the plot"):
        render_html("![p](p.png)\n", {}, "t")
