"""Shared test support: serve a generated web, run abc-crawl, check a session against the truth.

Every check recomputes from the session's own files (graph.npz, exchange.npz,
WARC files) and the generator's manifest; nothing is taken from stats.json
without being recomputed.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from abc_crawler.ownership import make_assignment
from abc_crawler.session import load_graph
from abc_crawler.urls import host_of

BIN = Path(sys.executable).parent
MPIEXEC = str(BIN / "mpiexec")


def free_port(addr: str = "127.0.0.1") -> int:
    import socket

    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def generate(out: Path, **kw) -> dict:
    """A generated web on a free loopback port; returns its manifest."""
    from abc_crawler.testweb.generator import generate_web

    return generate_web(out, port=free_port(), **kw)


@contextlib.contextmanager
def serve(web_dir: Path, log: Path | None = None, max_seconds: int = 600, latency: float = 0.0):
    """Run ``abc-testweb serve`` in a subprocess (its own core) for the duration of the block."""
    ready = web_dir / f".ready-{os.getpid()}-{time.monotonic_ns()}"
    cmd = [str(BIN / "abc-testweb"), "serve", str(web_dir), "--max-seconds", str(max_seconds), "--ready-file", str(ready)]
    if log is not None:
        cmd += ["--access-log", str(log)]
    if latency:
        cmd += ["--latency", str(latency)]
    proc = subprocess.Popen(cmd)
    try:
        deadline = time.monotonic() + 20
        while not ready.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"test-web server exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError("test-web server did not start within 20 s")
            time.sleep(0.02)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def crawl_cli(ranks: int, web_dir: Path, session: Path, *extra: str, timeout: float = 180,
              seeds: Path | None = None) -> subprocess.CompletedProcess:
    """``mpiexec -n RANKS abc-crawl`` on a served web; bounded by ``timeout``."""
    cmd = [MPIEXEC, "-n", str(ranks), str(BIN / "abc-crawl"), str(seeds or web_dir / "seeds.txt"),
           "--resolve", str(web_dir / "resolve.txt"), "--session-dir", str(session),
           "--politeness-delay", "0", "--progress-seconds", "1", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def read_log(path: Path) -> list[dict]:
    rows = []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def warc_records(session: Path) -> dict[str, Counter]:
    """URL → Counter of record types over every rank's WARC file."""
    from warcio.archiveiterator import ArchiveIterator

    out: dict[str, Counter] = defaultdict(Counter)
    for f in sorted((session / "warc").glob("*.warc.gz")):
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh):
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                if uri:
                    out[uri][rec.rec_type] += 1
    return out


def cdxj_indexer(path: Path) -> list[str]:
    """The sorted CDXJ lines cdxj-indexer (PyPI; its command line) makes of one WARC file."""
    r = subprocess.run([str(BIN / "cdxj-indexer"), "--sort", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines(keepends=True)


def check_indexes(session: Path) -> int:
    """Every WARC file of a session has its CDXJ index, equal to cdxj-indexer's; returns the number of files."""
    from abc_crawler.cdxj import index_path, read_index

    files = sorted((session / "warc").glob("*.warc.gz"))
    for f in files:
        idx = index_path(f)
        assert idx.exists(), f"{f} has no index"
        assert read_index(idx) == cdxj_indexer(f), f
    return len(files)


def recompute_metrics(session: Path) -> dict:
    """The metrics of stats.json (docs/SESSION_FORMAT.md) from graph.npz + exchange.npz with the session's own owner()."""
    g = load_graph(session)
    manifest = json.loads((session / "manifest.json").read_text())
    cfg = manifest["config"]
    assign = make_assignment(cfg["assign"], g.ranks, cfg["assign_buckets"], cfg.get("remap", False))
    owners = np.array([assign.owner(u) if u else -1 for u in g.urls], dtype=np.int64)
    req = g.url_rank >= 0
    src, dst = g.link_src, g.link_dst
    own_src = g.url_rank[src].astype(np.int64)
    own_dst = owners[dst]
    lens = np.array([len(u.encode()) + 1 for u in g.urls], dtype=np.int64)
    cross = own_src != own_dst
    volume = int(lens[dst][cross].sum())
    pairs = {(int(s), int(o)) for s, o, c in zip(src, own_dst, cross) if c}
    messages_thesis = len(pairs)
    k = g.ranks
    w_bytes = np.bincount(g.url_rank[req], weights=g.url_bytes[req], minlength=k)
    w_req = np.bincount(g.url_rank[req], minlength=k).astype(np.int64)
    stats = json.loads((session / "stats.json").read_text())
    w_req += np.array([p.get("retries", 0) for p in stats["per_rank"]], dtype=np.int64)   # retries are requests too

    def imb(w):
        avg = w.sum() / k
        return 0.0 if avg <= 0 else float((w.max() - avg) / avg * 100)

    with np.load(session / "exchange.npz") as z:
        rows = z["rows"]
    return {"volume_bytes": volume, "messages_thesis": messages_thesis, "messages_mpi": int(rows.shape[0]),
            "wire_bytes": int(rows[:, 3].sum()) if rows.size else 0,
            "storage_pct": imb(w_bytes), "request_pct": imb(w_req), "owners": owners, "graph": g}


def check_session(web_dir: Path, session: Path, log: Path | None = None, complete: bool = True) -> dict:
    """Assert a finished session is exactly right against the generator's truth; returns facts for more checks."""
    manifest = json.loads((web_dir / "manifest.json").read_text())
    exp = manifest["expected"]
    stats = json.loads((session / "stats.json").read_text())
    m = recompute_metrics(session)
    g = m["graph"]
    hostile_hosts = {h.split(":")[0] for h in manifest.get("hostile_hosts", [])}

    def normal(url: str) -> bool:
        return host_of(url).split(":")[0] not in hostile_hosts

    requested_all = {g.urls[i] for i in np.flatnonzero(g.url_rank >= 0)}
    requested = {u for u in requested_all if normal(u)}
    nodes = {g.urls[i] for i in g.node_url if normal(g.urls[i])}
    edges = {(g.urls[g.node_url[s]], g.urls[g.node_url[d]]) for s, d in zip(g.edge_src, g.edge_dst)}
    edges = {e for e in edges if normal(e[0]) and normal(e[1])}
    if complete:
        missing = set(exp["requested"]) - requested
        extra = requested - set(exp["requested"])
        assert not missing and not extra, f"missing {sorted(missing)[:5]} extra {sorted(extra)[:5]}"
        assert nodes == set(exp["nodes"])
        assert edges == {tuple(e) for e in exp["edges"]}
    else:
        assert requested <= set(exp["requested"])
        exp_edges = {tuple(e) for e in exp["edges"]}
        assert edges == {e for e in exp_edges if e[0] in nodes and e[1] in nodes}
    # ownership: each rank requested exactly its own pages
    req_idx = np.flatnonzero(g.url_rank >= 0)
    assert np.array_equal(g.url_rank[req_idx].astype(np.int64), m["owners"][req_idx])
    assert stats["overlap_pages"] == 0
    # WARC: one response (or revisit) per URL that got an HTTP response, none for others
    recs = warc_records(session)
    answered = {g.urls[i] for i in req_idx if g.url_status[i] > 0}
    for url in answered:
        c = recs.get(url, Counter())
        assert c["response"] + c["revisit"] == 1, (url, c)
        assert c["request"] == 1, (url, c)
    assert set(recs) <= answered
    # metrics recomputed from files equal stats.json exactly
    ex = stats["exchange"]
    for key in ("volume_bytes", "messages_thesis", "messages_mpi", "wire_bytes"):
        assert ex[key] == m[key], (key, ex[key], m[key])
    assert stats["imbalance"]["storage_pct"] == round(m["storage_pct"], 4)
    assert stats["imbalance"]["request_pct"] == round(m["request_pct"], 4)
    assert ex["wire_bytes"] <= ex["volume_bytes"]
    assert stats["requests"] - stats.get("retries", 0) == len(requested_all)
    assert stats["graph"]["nodes"] == g.n_nodes and stats["graph"]["edges"] == len(g.edge_src)
    if not hostile_hosts:
        assert g.n_nodes == len(nodes) and len(g.edge_src) == len(edges)
    if log is not None:
        rows = read_log(log)
        disallowed = set(exp["disallowed"])
        port = manifest["port"]
        netloc = (lambda h: h if port == 80 else f"{h}:{port}")
        hits = [r for r in rows if f"http://{netloc(r['host'])}{r['path']}" in disallowed]
        assert not hits, hits[:3]
        robots = Counter((r["host"], r["rank"]) for r in rows if r["path"] == "/robots.txt"
                         and r["host"] not in hostile_hosts)
        assert robots and max(robots.values()) == 1, robots.most_common(3)
        served = {h.split(":")[0] for h in manifest["hosts"]} | hostile_hosts
        assert {r["host"].split(":")[0] for r in rows} <= served
    return {"stats": stats, "metrics": m, "manifest": manifest, "requested": requested,
            "requested_all": requested_all, "records": recs}


def host_overlaps(rows: list[dict]) -> int:
    """Pairs of requests to one host from different ranks whose [t_start, t_end] intervals overlap."""
    by_host: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for r in rows:
        by_host[r["host"]].append((r["t_start"], r["t_end"], r["rank"]))
    n = 0
    for iv in by_host.values():
        iv.sort()
        for i, (s0, e0, r0) in enumerate(iv):
            for s1, e1, r1 in iv[i + 1:]:
                if s1 >= e0:
                    break
                if r1 != r0:
                    n += 1
    return n


def rank_pids(marker: str) -> list[int]:
    """PIDs of abc-crawl rank processes (not mpiexec) whose command line contains ``marker``."""
    import subprocess

    out = subprocess.run(["pgrep", "-f", "--", marker], capture_output=True, text=True).stdout.split()
    pids = []
    for p in out:
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and not cmd[0].endswith(b"mpiexec") and any(c.endswith(b"abc-crawl") for c in cmd):
            pids.append(int(p))
    return sorted(pids)
