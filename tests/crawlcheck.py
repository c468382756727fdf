"""Shared test support: serve a generated web, run abc-crawl, check a session against the truth.

Every check recomputes from the session's own files (graph.npz, exchange.npz,
WARC files) and the generator's manifest; nothing is taken from stats.json
without being recomputed. And what the crawler says it did is checked against
what the server saw and sent: every WARC record read back (digests) and compared
byte for byte with the server's bytes (tests/warccheck.py), and the server's
access log of the crawl (tests/logcheck.py: each page answered once, the
politeness rests), read after a FLUSH request (``serve()``: ``mark()``/``rows()``).
The controls that show each check can fail are in tests/test_check_controls.py.
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

from abc_crawler.web.assignments import make_assignment
from abc_crawler.store.crawllog import log_files, read_lines
from abc_crawler.store.session import SessionGraph, load_graph
from abc_crawler.web.urls import host_of
from logcheck import row_url
from ownership_ref import owner_function

BIN = Path(sys.executable).parent
MPIEXEC = str(BIN / "mpiexec")
#: the lab settings every test crawl of a loopback web starts from (the defaults are the open web's)
LAB_TOML = Path(__file__).resolve().parents[1] / "lab.toml"
LAB = ("--config", str(LAB_TOML))


def free_port(addr: str = "127.0.0.1") -> int:
    import socket

    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def generate(out: Path, **kw) -> dict:
    """A generated web on a free loopback port; returns its manifest."""
    from abc_crawler.testweb.generator import generate_web

    return generate_web(out, port=free_port(), **kw)


class Served:
    """A running ``abc-testweb serve`` (:func:`serve`): its process, port and access log.

    ``mark()`` before a crawl and ``rows(mark)`` after it give the log lines of that crawl: both
    send a FLUSH request (docs/TESTWEB.md), answered once every other connection has ended and
    the log is flushed, so nothing is read before the server wrote it and no sleep is needed."""

    def __init__(self, proc: subprocess.Popen, port: int, log: Path):
        self.proc, self.port, self.log = proc, port, log

    def flush(self) -> dict:
        from abc_crawler.testweb.server import flush_request
        return flush_request("127.0.0.1", self.port)

    def mark(self) -> int:
        """The log's size now (every connection ended)."""
        info = self.flush()
        assert info["open"] == 0, f"connections still open: {info}"
        return info["log_bytes"]

    def rows(self, since: int = 0) -> list[dict]:
        """The log lines written after ``mark()`` returned ``since``, once every connection ended."""
        end = self.mark()
        with open(self.log, "rb") as fh:
            fh.seek(since)
            data = fh.read(end - since)
        return [json.loads(x) for x in data.decode().splitlines() if x.strip()]


def own_addresses(web_dir: Path, first: str = "127.0.2.") -> tuple[Path, list[str]]:
    """Every host of the web on a loopback address of its own: a resolve file beside the web's
    (``resolve-own.txt``) and the addresses, for ``serve(..., also=...)``."""
    lines = (web_dir / "resolve.txt").read_text().split()
    addrs = [f"{first}{i + 1}" for i in range(len(lines))]
    out = web_dir / "resolve-own.txt"
    out.write_text("".join(f"{ln.rsplit(':', 1)[0]}:{a}\n" for ln, a in zip(lines, addrs)))
    return out, addrs


@contextlib.contextmanager
def serve(web_dir: Path, log: Path | None = None, max_seconds: int = 600, latency: float = 0.0,
          also: list[str] | tuple[str, ...] = ()):
    """Run ``abc-testweb serve`` in a subprocess (its own core) for the duration of the block;
    yields a :class:`Served`. The access log is always written (``log``, or a new file next to
    ``web_dir``) and is complete once the block has ended (the server exited normally)."""
    stamp = f"{os.getpid()}-{time.monotonic_ns()}"
    ready = web_dir / f".ready-{stamp}"
    log = Path(log) if log is not None else web_dir.parent / f"access-{web_dir.name}-{stamp}.log"
    cmd = [str(BIN / "abc-testweb"), "serve", str(web_dir), "--max-seconds", str(max_seconds), "--ready-file",
           str(ready), "--access-log", str(log)]
    if latency:
        cmd += ["--latency", str(latency)]
    if also:
        cmd += ["--also-addr", ",".join(also)]
    proc = subprocess.Popen(cmd)
    clean = False
    try:
        deadline = time.monotonic() + 20
        while not ready.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"test-web server exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError("test-web server did not start within 20 s")
            time.sleep(0.02)
        yield Served(proc, json.loads(ready.read_text())["port"], log)
        clean = True
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # SIGTERM: the server closes every connection and flushes the log, then exits 0
    assert not clean or proc.returncode == 0, f"test-web server ended with {proc.returncode}: its log may be cut"


def crawl_cli(ranks: int, web_dir: Path, session: Path, *extra: str, timeout: float = 180,
              seeds: Path | None = None, cpus: set[int] | None = None, lab: bool = True) -> subprocess.CompletedProcess:
    """``mpiexec -n RANKS abc-crawl`` on a served web; bounded by ``timeout``. ``cpus``: the CPUs
    the launcher and every rank may run on (CPU affinity, inherited by the ranks). ``lab``: with the
    lab settings and no politeness delay (else the open-web defaults, as a user gets them)."""
    cmd = [MPIEXEC, "-n", str(ranks), str(BIN / "abc-crawl"), str(seeds or web_dir / "seeds.txt"),
           *(LAB if lab else ()), "--resolve", str(web_dir / "resolve.txt"), "--session-dir", str(session),
           *(("--politeness-delay", "0") if lab else ()), "--progress-seconds", "1", "--test-rank-header", *extra]
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=pin)


def read_log(path: Path) -> list[dict]:
    rows = []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def check_outlinks(g, warc: dict, cfg: dict) -> None:
    """--warc-outlinks: the metadata record of each stored answer lists exactly the links graph.npz
    has from its URL, kind by kind (L navigation, E embed, R redirect or refresh), each once (a 304
    to --previous too: its revisit lists the links the page keeps)."""
    from abc_crawler.web.parser import EMBED, NAV, REDIRECT, REFRESH

    letter = {NAV: "L", EMBED: "E", REDIRECT: "R", REFRESH: "R"}
    graph: dict[str, set] = defaultdict(set)
    for s, d, k in zip(g.link_src.tolist(), g.link_dst.tolist(), g.link_kinds().tolist()):
        graph[g.urls[s]].add((g.urls[d], letter[k]))
    out = warc["outlinks"]
    for uri, links in out.items():
        assert len(links) == len(set(links)), ("outlinks: a link listed twice", uri)
        want = graph.get(uri, set())
        assert set(links) == want, ("outlinks: the metadata record is not the graph's links", uri,
                                    sorted(want - set(links))[:3], sorted(set(links) - want)[:3])
    if cfg.get("warc", True) and cfg.get("warc_outlinks", False):
        missing = sorted(u for u in graph if u in warc["stored"] and u not in out)
        assert not missing, ("outlinks: answers with links and no metadata record", missing[:5])
    elif not cfg.get("warc_outlinks", False):
        assert not out, "outlinks: metadata records written with --no-warc-outlinks"


def warc_records(session: Path) -> dict[str, Counter]:
    """URL → Counter of record types over every rank's WARC file (digests checked by warcio)."""
    from warccheck import read_session_warc

    out: dict[str, Counter] = defaultdict(Counter)
    for rec in read_session_warc(session):
        if rec.uri:
            out[rec.uri][rec.type] += 1
    return out


def _log_runs(log) -> list[list[dict]] | None:
    """A log given to check_session as a path, the rows of one run, or a list of runs' rows."""
    if log is None:
        return None
    if isinstance(log, (str, Path)):
        return [read_log(Path(log))]
    log = list(log)
    if log and isinstance(log[0], list):
        return log
    return [log]


def cdxj_indexer(path: Path) -> list[str]:
    """The sorted CDXJ lines cdxj-indexer (PyPI; its command line) makes of one WARC file."""
    r = subprocess.run([str(BIN / "cdxj-indexer"), "--sort", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines(keepends=True)


def check_indexes(session: Path) -> int:
    """Every WARC file of a session has its CDXJ index, equal to cdxj-indexer's; returns the number of files."""
    from abc_crawler.store.cdxj import index_path, read_index

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
    if cfg.get("remap"):               # a remapped vector: the crawler's own bin packing decides
        assign = make_assignment(cfg["assign"], g.ranks, cfg["assign_buckets"], True).owner
    else:                              # otherwise the documented rule, written here (tests/ownership_ref.py)
        assign = owner_function(cfg["assign"], g.ranks, cfg["assign_buckets"])
    owners = np.array([assign(u) if u else -1 for u in g.urls], dtype=np.int64)
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
        steps = z["step_volume"].shape[0]
    return {"volume_bytes": volume, "messages_thesis": messages_thesis, "messages_mpi": int(rows.shape[0]),
            "wire_bytes": int(rows[:, 3].sum()) if rows.size else 0, "supersteps": steps,
            "storage_pct": imb(w_bytes), "request_pct": imb(w_req), "owners": owners, "graph": g}


def derived_exchange(session: Path, owners=None, graph=None) -> dict:
    """The exchange a session's links call for, derived without the crawler's exchange files:
    ``{(superstep, src, dst): (urls, least bytes, most bytes)}``.

    A rank sends each URL it found and does not own to its owner once per session, in the
    exchange of the superstep in which it processed the page that linked it
    (docs/SESSION_FORMAT.md, "Definitions" and ``exchange.npz``). From graph.npz: the pages each
    rank requested (``url_rank``), the superstep each was processed in (``url_superstep``), their
    followed in-scope links (``link_*``); owners recomputed by tests/ownership_ref.py (``owners``:
    one per URL row, as :func:`recompute_metrics` gives them). For every (rank r, URL v) with
    owner(v) ≠ r, the first superstep of r's pages linking v; each row counts those URLs.

    A URL's line is the URL and a newline, but it carries the redirects that led to it when there
    were some (``abc_crawler/web/urlline.py``: ``URL\\tHOPS``, and ``\\tDEPTH`` under ``--max-depth``),
    and the hop letter of a requisite or a refresh target (``URL\\tHOPS\\tDEPTH\\tE``, empty zeros).
    How many redirects a line carries is the sender's knowledge (its page may have been reached by a
    redirect, and by a plain link), not recorded in the session, so the bytes are bounded: at least
    the URLs' own lines, at most those plus the fields a redirect target (any target, under
    ``--max-depth``) can carry, at most ``--max-redirects`` and ``--max-depth`` + 1."""
    g = graph if graph is not None else load_graph(session)
    if owners is None:
        owners = recompute_metrics(session)["owners"]
    cfg = json.loads((session / "manifest.json").read_text())["config"]
    hops_w = 1 + len(str(cfg.get("max_redirects") or 0))
    depth_w = 1 + len(str((cfg.get("max_depth") or 0) + 1)) if cfg.get("max_depth") is not None else 0
    kinds = g.link_kind if getattr(g, "link_kind", None) is not None else np.zeros(len(g.link_src), np.uint8)
    first: dict[tuple[int, int], int] = {}
    redirected: set[int] = set()
    flagged: set[int] = set()                  # found as a requisite or a refresh target: may carry its letter
    for u, v, kind in zip(g.link_src.tolist(), g.link_dst.tolist(), kinds.tolist()):
        if kind == 2:
            redirected.add(v)
        elif kind in (1, 3):
            flagged.add(v)
        r = int(g.url_rank[u])
        if r < 0 or int(owners[v]) == r:
            continue
        st = int(g.url_superstep[u])
        if first.get((r, v), st + 1) > st:
            first[(r, v)] = st
    rows: dict[tuple[int, int, int], list[int]] = defaultdict(lambda: [0, 0, 0])
    for (r, v), st in first.items():
        line = len(g.urls[v].encode()) + 1
        extra = depth_w + hops_w if depth_w else (hops_w if v in redirected else 0)
        if v in flagged:                        # "\tHOPS\tDEPTH\tE", HOPS and DEPTH possibly empty
            extra = hops_w + (depth_w or 1) + 2
        row = rows[(st, r, int(owners[v]))]
        row[0] += 1
        row[1] += line
        row[2] += line + extra
    return {k: tuple(v) for k, v in rows.items()}


def _seed_hosts(session: Path) -> int:
    """Distinct hosts of the session's seeds (each has its /sitemap.xml listed, by its owner)."""
    cfg = json.loads((session / "manifest.json").read_text())["config"]
    try:
        lines = Path(cfg["seeds"]).read_text().split()
    except OSError:
        return 0
    return len({host_of(u) for u in lines if u.startswith(("http://", "https://"))})


def check_exchange(session: Path, owners=None, graph=None, *, exact: bool = True) -> dict:
    """Assert the exchange the crawler reports (``stats.json`` ``messages_mpi``, ``wire_urls``,
    ``wire_bytes`` and the rows of ``exchange.npz``) is the one the session's links call for
    (:func:`derived_exchange`), an independent count of the messages.

    ``exact``: every row of ``exchange.npz`` is a derived (superstep, src, dst) with exactly its
    URLs and bytes within its bounds, and every derived row is there: so ``messages_mpi`` is the
    number of derived rows and ``wire_urls`` their URLs, exactly. For a complete session that ran
    once, with no sitemap URL listed (a sitemap's URLs travel to their owners too, and are not links)
    and no ``--max-depth`` (the links of a page past it are in ``link_*`` but are not sent).

    Otherwise (``exact=False``) the derived exchange bounds the reported one from above: a URL can be
    sent only once its rank has found it, so for each (src, dst) the URLs sent up to every
    superstep are at most the derived ones up to it, and the totals accordingly.
    Returns ``{"rows": derived rows, "urls": derived URLs}``."""
    stats = json.loads((session / "stats.json").read_text())
    ex = stats["exchange"]
    with np.load(session / "exchange.npz") as z:
        got = {(int(a), int(b), int(c)): (int(d), int(e)) for a, b, c, d, e in z["rows"].tolist()}
    want = derived_exchange(session, owners, graph)
    problems: list = []
    if exact:
        for key in sorted(set(got) | set(want)):
            w, gt = want.get(key), got.get(key)
            if w is None:
                problems.append(("an exchange row no link calls for", key, gt))
            elif gt is None:
                problems.append(("a derived exchange row missing from exchange.npz", key, w))
            elif gt[1] != w[0] or not w[1] <= gt[0] <= w[2]:
                problems.append(("an exchange row's URLs or bytes are not the derived ones", key,
                                 {"urls": gt[1], "bytes": gt[0]}, {"urls": w[0], "bytes": (w[1], w[2])}))
        n_rows, n_urls = len(want), sum(w[0] for w in want.values())
        lo, hi = sum(w[1] for w in want.values()), sum(w[2] for w in want.values())
        if ex["messages_mpi"] != n_rows:
            problems.append(("messages_mpi is not the derived number of messages", ex["messages_mpi"], n_rows))
        if ex.get("wire_urls", n_urls) != n_urls:
            problems.append(("wire_urls is not the derived number of URLs", ex.get("wire_urls"), n_urls))
        if not lo <= ex["wire_bytes"] <= hi:
            problems.append(("wire_bytes is outside the derived bounds", ex["wire_bytes"], (lo, hi)))
    else:
        # the page URLs sitemaps list, and the sitemap files robots.txt and indexes name, travel to
        # their owners too, and are no links of graph.npz: at most that many more URLs than the links
        # call for (a seed host's /sitemap.xml is asked by its owner: never sent; CI: test_sitemaps'
        # crawl sent 117 URLs against 114 derived from its links)
        sm = stats.get("sitemaps", {})
        extra = sm.get("urls", 0) + max(0, sm.get("files_listed", 0) - _seed_hosts(session))
        pairs = {k[1:] for k in got} | {k[1:] for k in want}
        for pair in sorted(pairs):
            steps = sorted({k[0] for k in got if k[1:] == pair} | {k[0] for k in want if k[1:] == pair})
            sent = found = 0
            for st in steps:
                sent += got.get((st, *pair), (0, 0))[1]
                found += want.get((st, *pair), (0, 0, 0))[0]
                if sent > found + extra:
                    problems.append(("more URLs sent than the links found so far call for", (st, *pair), sent, found,
                                     extra))
                    break
        if ex.get("wire_urls", 0) > sum(w[0] for w in want.values()) + extra:
            problems.append(("wire_urls above the derived URLs", ex.get("wire_urls"), sum(w[0] for w in want.values()),
                             extra))
    if ex["messages_mpi"] != len(got) or ex["wire_bytes"] != sum(g[0] for g in got.values()):
        problems.append(("stats.json's exchange is not exchange.npz's", ex, len(got)))
    assert not problems, problems[:5]
    return {"rows": len(want), "urls": sum(w[0] for w in want.values())}


def check_session(web_dir: Path, session: Path, log=None, complete: bool = True, *,
                  expect_delay: float | None = None) -> dict:
    """Assert a finished session is exactly right against the generator's truth and the server's log;
    returns facts for more checks.

    ``log``: the server's access log of the crawl (a path, its rows, or one list of rows per run
    of a resumed session, in order); without it the checks of the log are skipped.
    ``expect_delay``: the politeness delay the log is checked against (default: the session's; a
    delay given here is checked without the session's adaptive part).
    """
    from warccheck import check_warc_payloads, read_session_warc

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
        assert not missing and not extra, f"requested: missing {sorted(missing)[:5]} extra {sorted(extra)[:5]}"
        want = set(exp["nodes"])
        assert nodes == want, f"nodes: missing {sorted(want - nodes)[:5]} extra {sorted(nodes - want)[:5]}"
        want_e = {tuple(e) for e in exp["edges"]}
        assert edges == want_e, f"edges: missing {sorted(want_e - edges)[:5]} extra {sorted(edges - want_e)[:5]}"
    else:
        assert requested <= set(exp["requested"]), f"requested: extra {sorted(requested - set(exp['requested']))[:5]}"
        exp_edges = {tuple(e) for e in exp["edges"]}
        want_e = {e for e in exp_edges if e[0] in nodes and e[1] in nodes}
        assert edges == want_e, f"edges: missing {sorted(want_e - edges)[:5]} extra {sorted(edges - want_e)[:5]}"
    # ownership: each rank requested exactly its own pages (the owner rule recomputed independently)
    req_idx = np.flatnonzero(g.url_rank >= 0)
    wrong = req_idx[g.url_rank[req_idx].astype(np.int64) != m["owners"][req_idx]]
    assert wrong.size == 0, ("ownership: pages requested by another rank than their owner",
                             [(g.urls[i], int(g.url_rank[i]), int(m["owners"][i])) for i in wrong[:5]])
    assert stats["overlap_pages"] == 0
    # WARC: every record reads back with its digests; each stored head and payload is what the
    # server sends for its URL, byte for byte; one response (or revisit) and one request per URL
    # that got an HTTP response, none for others
    warc = check_warc_payloads(web_dir, read_session_warc(session))
    recs = warc["types"]
    answered = {g.urls[i] for i in req_idx if g.url_status[i] > 0}
    for url in answered:
        c = recs.get(url, Counter())
        assert c["response"] + c["revisit"] == 1, (url, c)
        assert c["request"] == 1, (url, c)
    assert set(recs) <= answered
    # revisits: bodies this rank already stored, and 304s to conditional requests (--previous)
    assert sum(c["revisit"] for c in recs.values()) == stats["duplicates"] + stats.get("not_modified", 0)
    # metrics recomputed from files equal stats.json exactly
    ex = stats["exchange"]
    for key in ("volume_bytes", "messages_thesis", "messages_mpi", "wire_bytes", "supersteps"):
        assert ex[key] == m[key], ("metrics: stats.json differs from the recomputed figure", key, ex[key], m[key])
    for key in ("storage_pct", "request_pct"):
        assert stats["imbalance"][key] == round(m[key], 4), ("metrics: imbalance", key, stats["imbalance"][key], m[key])
    # the exchange against the one the links call for (an independent count of the messages, not a
    # comparison of two files the crawler wrote); a resumed or --previous session is left out (a
    # resume sends again what a cut-back superstep sent; a re-crawl's 304 pages route their earlier links)
    cfg = json.loads((session / "manifest.json").read_text())["config"]
    resumed = json.loads((session / "manifest.json").read_text()).get("resumed")
    if not resumed and not cfg.get("previous"):
        exact = (stats["stopped"] == "done" and cfg.get("max_depth") is None
                 and not stats.get("sitemaps", {}).get("urls", 0))
        check_exchange(session, m["owners"], g, exact=exact)
    assert ex["wire_bytes"] <= ex["volume_bytes"]
    check_outlinks(g, warc, cfg)
    left = stats.get("slot_cuts", {}).get("left", 0)      # cut at a slot's end, counted, not asked again
    assert stats["requests"] - stats.get("retries", 0) - left == len(requested_all), (
        "requests: stats.json's count is not the requested URLs", stats["requests"], stats.get("retries", 0),
        left, len(requested_all))
    assert stats["graph"]["nodes"] == g.n_nodes and stats["graph"]["edges"] == len(g.edge_src), (
        "graph: stats.json's nodes/edges are not graph.npz's")
    # every requested URL's outcome kind is in the graph: a node has none; the final failures counted
    # in stats.json are exactly the URLs whose kind says so (per URL, not only in the totals)
    kinds = Counter(g.kind_of(i) for i in req_idx)
    node_rows = set(g.node_url.tolist())
    assert all(g.kind_of(i) == "" for i in node_rows)
    for i in req_idx:
        k = g.kind_of(i)
        if g.url_status[i] == -1:
            assert k and not k.startswith(("http_", "status_")), (g.urls[i], k)
        elif g.url_status[i] >= 400:
            assert k == f"http_{g.url_status[i] // 100}xx", (g.urls[i], g.url_status[i], k)
    for k, n in kinds.items():
        if k.startswith(("http_", "internal_")) or k in ("timeout", "decompression_bomb", "body_too_large",
                                                         "unparsable_html", "redirect_limit"):
            assert stats["errors"].get(k, 0) == n, ("errors: stats.json's count of a kind is not the URLs of it",
                                                     k, n, stats["errors"].get(k))
    assert not any(k.startswith("internal_") for k in stats["errors"]), stats["errors"]
    assert not any(g.kind_of(i).startswith("internal_") for i in range(len(g.urls))), "internal error in graph"
    if not hostile_hosts:
        assert g.n_nodes == len(nodes) and len(g.edge_src) == len(edges)
    runs = _log_runs(log)
    facts = {"stats": stats, "metrics": m, "manifest": manifest, "requested": requested,
             "requested_all": requested_all, "records": recs, "stored": warc["stored"]}
    if runs is not None:
        # the pages the server must have answered: every requested one of a complete crawl; of a crawl
        # stopped early, those the session says were answered (an HTTP status), at the least
        answered_normal = {u for u in answered if normal(u)}
        facts["log"] = check_log(web_dir, session, runs, manifest, stats, warc["stored"],
                                 requested if complete else answered_normal, expect_delay)
    return facts


def sitemap_cuts(session) -> int:
    """Sitemap requests the session's crawl logs record as cut at a slot's end and asked again
    (annotations ``sitemap`` and ``slotcut:<cause>``; not a file given up after too many cuts,
    ``err=slot_too_short`` or ``err=slot_never_full``)."""
    n = 0
    for path in log_files(session).values():
        for line in read_lines(path):
            notes = line.split()[-1].split(",")
            if ("sitemap" in notes and any(x.startswith("slotcut:") for x in notes)
                    and not {"err=slot_too_short", "err=slot_never_full"} & set(notes)):
                n += 1
    return n


def check_log(web_dir: Path, session: Path, runs: list[list[dict]], manifest: dict, stats: dict,
              stored: dict, requested: set[str] | None, expect_delay: float | None = None) -> dict:
    """The session against the server's access log (tests/logcheck.py): nothing disallowed or
    outside the served hosts, each page answered once, robots.txt once per host and rank, and the
    politeness rests of every rank."""
    from logcheck import ANY_SLOT, SlotGrid, check_once, check_politeness

    exp = manifest["expected"]
    port = manifest["port"]
    hostile_hosts = {h.split(":")[0] for h in manifest.get("hostile_hosts", [])}
    normal_hosts = {h.split(":")[0] for h in manifest["hosts"]}
    rows = [r for run in runs for r in run]
    # a log that holds nothing of a crawl that was answered is not a log of it (an empty log would
    # pass every check below). The server logs a response once it has sent it: requests the crawler
    # cut before their answer (a slot's end, a time limit) may leave no row, so the count is of answers.
    answered = stats.get("pages_crawled", 0) + stats.get("pages_redirected", 0) + len(stored)
    assert rows or answered == 0, \
        f"log: the access log holds no request of a session that was answered {answered} times"
    # every crawl of the suite sends its rank (tests/conftest.py): a row without one is a crawl
    # whose per-rank checks below would see nothing
    assert all(r["rank"] >= 0 for r in rows if r["host"].split(":")[0] in normal_hosts), \
        "requests without a rank: the crawl ran without --test-rank-header"
    disallowed = set(exp["disallowed"])
    hits = [r for r in rows if row_url(r, port) in disallowed]
    assert not hits, ("requests for pages robots.txt disallowed", hits[:3])
    assert {r["host"].split(":")[0] for r in rows} <= normal_hosts | hostile_hosts
    cuts = stats.get("slot_cuts", {}).get("total", 0)
    # failed attempts are bounded by the log (each explained by the server's answer or by a slot
    # boundary of the run's grid); the crawler's count of requests asked again is checked against it.
    # stats.json records the slot grid of the last run only: an earlier run of a resumed session
    # ran under slots too, on a grid that is not recorded
    grid = SlotGrid.of_session(stats)
    grids = [grid if grid is None or k == len(runs) - 1 else ANY_SLOT for k in range(len(runs))]
    once = check_once(runs, port, normal_hosts, stored, cuts + stats.get("retries", 0), requested, grids)
    if stats["stopped"] == "done":
        # nothing was fetched that the session does not know of (a crawl stopped early may leave
        # requests in flight that it drops, to ask again after a resume)
        # (sitemap files are no pages: the generated webs have none but /sitemap.xml of each seed
        # host, asked with --sitemaps (the default) and counted in stats.json's "sitemaps")
        cfg = json.loads((session / "manifest.json").read_text())["config"]
        sitemap_rows = [r for r in rows if r["path"] == "/sitemap.xml" and r["host"] in normal_hosts]
        if cfg.get("sitemaps", True):
            # a sitemap request cut at its slot's end (its rank stopped with the answer unread) is
            # asked again in the host's next slot: the server saw it once more than it was fetched
            again = sitemap_cuts(session)
            assert len(sitemap_rows) <= stats.get("sitemaps", {}).get("fetched", 0) + again, (
                len(sitemap_rows), stats.get("sitemaps"), again)
        else:
            assert not sitemap_rows, sitemap_rows[:3]
        unknown = {row_url(r, port) for r in rows if r["path"] not in ("/robots.txt", "/sitemap.xml")
                   and r["host"] in normal_hosts and r["rank"] >= 0}
        g = load_graph(session)
        unknown -= {g.urls[i] for i in np.flatnonzero(g.url_rank >= 0)}
        assert not unknown, sorted(unknown)[:5]
    cfg = json.loads((session / "manifest.json").read_text())["config"]
    delay = cfg["politeness_delay"] if expect_delay is None else expect_delay
    crawl_delays = {h.split(":")[0]: (v.get("crawl_delay") or 0.0) for h, v in manifest.get("robots", {}).items()}
    if not cfg.get("robots", True):
        crawl_delays = {}
    polite = [check_politeness(run, port, delay=delay, crawl_delays=crawl_delays,
                               factor=cfg.get("delay_factor", 0.0) if expect_delay is None else 0.0,
                               max_delay=cfg.get("max_delay", 0.0),
                               across_ranks=bool(stats["per_rank"][0].get("phases")))
              for run in runs]
    return {"once": once, "politeness": polite}


def url_outcomes(g) -> dict[str, str]:
    """URL -> its outcome as the generator's hostile ``outcomes`` name it (abc_crawler/testweb/hostile.py):
    ``node``, ``redirect``, the URL's kind in graph.npz, or ``not_requested``."""
    nodes = set(g.node_url.tolist())
    out = {}
    for i, u in enumerate(g.urls):
        if not u:
            continue
        k = g.kind_of(i)
        if g.url_rank[i] < 0:
            out[u] = k or "not_requested"
        elif k:
            out[u] = k
        elif i in nodes:
            out[u] = "node"
        elif 300 <= g.url_status[i] < 400:
            out[u] = "redirect"
        else:
            out[u] = f"status_{g.url_status[i]}"
    return out


def hostile_outcome_problems(manifest: dict, outcomes: dict[str, str]) -> list[tuple]:
    """(mode, URL, outcome, expected) for every hostile URL whose outcome is not the mode's own
    (the manifest's ``hostile[mode]["outcomes"]``; URLs not listed must not be requested, except on
    hosts with an ``other_outcome``)."""
    problems = []
    for mode, h in manifest["hostile"].items():
        want = h["outcomes"]
        for url, w in want.items():
            got = outcomes.get(url, "not_requested")
            if got not in (w if isinstance(w, list) else [w]):
                problems.append((mode, url, got, w))
        prefix = f"http://{h['host']}/"
        for url, got in outcomes.items():
            if url.startswith(prefix) and url not in want and got != "not_requested":
                if h["other_outcome"] is None or got != h["other_outcome"]:
                    problems.append((mode, url, got, h["other_outcome"] or "not requested"))
    return problems


def host_overlaps(rows: list[dict]) -> int:
    """Pairs of requests to one host from different ranks whose [t_start, t_write] intervals overlap:
    each lies within the client's own [send, receive] of the request (t_start is taken after the
    request was read, t_write before its answer's last write), so an overlap here is one between
    the ranks, however late the server took its times."""
    by_host: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    assert all(r["rank"] >= 0 for r in rows), "requests without --test-rank-header"
    for r in rows:
        by_host[r["host"]].append((r["t_start"], r.get("t_write") or r["t_start"], r["rank"]))
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


def newest_checkpoint(session: Path, ranks: int = 4) -> int:
    """The newest superstep every rank has checkpointed (-1: some rank has none yet). A kill before
    every rank holds a common checkpoint leaves nothing to resume from, and --resume refuses it."""
    from abc_crawler.store.checkpoint import checkpoint_steps

    return min(max(checkpoint_steps(session, r), default=-1) for r in range(ranks))


def kill_every_rank(proc, session: Path, ranks: int | None = None) -> None:
    """``kill -9`` every rank of the crawl writing ``session`` (``ranks``: how many there must be),
    then wait for its launcher ``proc`` to end."""
    import signal

    pids = rank_pids(str(session))
    if ranks is not None:
        assert len(pids) == ranks, pids
    for p in pids:
        os.kill(p, signal.SIGKILL)
    proc.communicate(timeout=60)


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


def graph_crawled_by(urls: list[str], parts, ranks: int) -> SessionGraph:
    """A session graph in which every URL of ``urls`` was requested by rank ``parts[i]`` and answered
    200 with 1,000 bytes in superstep 0, each a node: what a test builds a part vector from."""
    import numpy as np

    n = len(urls)
    g = SessionGraph.from_urls(urls, ranks=ranks)
    g.url_rank = np.asarray(parts).astype(np.int16)
    g.url_status = np.full(n, 200, np.int16)
    g.url_bytes = np.full(n, 1000, np.int64)
    g.url_superstep = np.zeros(n, np.int32)
    g.url_node = np.arange(n, dtype=np.int32)
    g.node_url = np.arange(n, dtype=np.int32)
    return g
