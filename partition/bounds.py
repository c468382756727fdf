"""How far can a balanced partition cut the link-exchange volume? Bounds on a session graph.

``python -m abc_crawler.partition.bounds SESSION [--parts 8] [--imbalance 0.05] [--json]``
prints, for the session's graph, what stands between the hash assignment's
volume and a given reduction target (default 20×):

* the **volume breakdown** of an assignment (hash, and the page-gp part
  vector of the session if there is one): links between hosts, inside hosts,
  and to never-requested URLs, each computed by
  :func:`~abc_crawler.partition.assignment_metrics.predict` on that subset of links, so
  the parts add up to ``volume_bytes`` exactly;
* the **hosts that must be split**: a host whose pages or bytes exceed the
  per-rank cap ``(1 + ε) · total / K`` cannot sit on one rank, so its
  internal links are cut somewhere (:func:`forced_splits`);
* a **hub lower bound**, valid for *every* assignment that meets both caps
  (:func:`hub_lower_bound`): a page v linked from ``indeg(v)`` distinct
  pages shares a rank with at most ``m(v)`` of them, where ``m(v)`` is the
  largest number of its sources that fits into one rank beside v (at most
  ``cap_pages − 1`` pages, and the ``m`` lightest sources plus v within
  ``cap_bytes``); every other source pays ``len(v) + 1``. Summed over all
  link targets (their link sets are disjoint) this bounds the volume from
  below;
* the **site-level cut**: the inter-host volume when every host stays whole,
  minimized by METIS on the site graph with the balance relaxed (so that the
  big hosts fit) — how much of the inter-host volume related hosts sharing a
  rank can keep local.

The hub bound is a proof, the others are measurements: a page-level
partition can in principle beat the site-level cut by splitting hosts, and
the split cost of a big host has no cheap exact lower bound (the spectral
bounds of Donath–Hoffman type are 0 on these graphs: the page graphs have
many small, loosely attached pieces).

Examples
--------
>>> import numpy as np
>>> from abc_crawler.store.session import SessionGraph
>>> urls = ["http://a.test/hub"] + [f"http://a.test/{i}" for i in range(5)]
>>> g = SessionGraph.from_urls(urls, ranks=2)
>>> g.url_rank[:] = 0; g.url_bytes[:] = 10
>>> g.link_src = np.arange(1, 6, dtype=np.int32); g.link_dst = np.zeros(5, np.int32)
>>> # 6 pages on K=2 ranks at ε=0: a rank holds 3 pages, so the hub keeps at most 2 of its 5 sources
>>> hub_lower_bound(g, 2, 0.0)["bound"] == 3 * (len("http://a.test/hub") + 1)
True
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from ..graph.metrics import url_wire_cost
from ..store.session import SessionGraph, load_graph
from .assignment_metrics import predict
from .models import distinct_links, site_graph, url_lengths
from ..web.ownership import owners_hash, url_hosts

__all__ = ["caps", "hub_lower_bound", "hub_lower_bound_reference", "forced_splits", "volume_breakdown",
           "site_level_cut", "analyse", "main"]


def caps(graph: SessionGraph, K: int, eps: float) -> tuple[int, float]:
    """Per-rank caps ``(pages, bytes)`` of an assignment that meets tolerance ε on both.

    A rank may hold at most ``floor((1 + ε) · n / K)`` requested pages (page
    counts are integers) and ``(1 + ε) · B / K`` bytes.
    """
    req = graph.url_rank >= 0
    n = int(req.sum())
    B = float(graph.url_bytes[req].astype(np.int64).sum())
    return int(np.floor((1.0 + eps) * n / K + 1e-9)), (1.0 + eps) * B / K


def hub_lower_bound(graph: SessionGraph, K: int, eps: float = 0.05, *, url_len=None, links=None) -> dict:
    """Lower bound on ``volume_bytes`` of every assignment within ε on both constraints.

    For a link target v with distinct sources S(v) (self-link excluded), the
    sources on v's rank number at most ``m(v)``: the largest m with
    ``m <= cap_pages − [v requested]`` and the m lightest sources (by bytes)
    plus v's bytes within ``cap_bytes``. The other ``|S(v)| − m(v)`` links pay
    ``len(v) + 1`` each. A never-requested target has no weight, so only the
    caps of its sources count.

    Parameters
    ----------
    graph : SessionGraph
    K : int
    eps : float
    url_len, links : optional
        Precomputed :func:`~.models.url_lengths` / :func:`~.models.distinct_links`.

    Returns
    -------
    dict
        ``bound`` (bytes), ``cap_pages``, ``cap_bytes``, ``targets`` (number
        of targets that contribute), ``by_host`` (host → bound, largest first),
        ``top`` (the 10 largest contributions: url, in-degree, kept, bytes).
    """
    url_len = url_lengths(graph) if url_len is None else url_len
    s, d = distinct_links(graph) if links is None else links
    keep = s != d
    s, d = s[keep], d[keep]
    capP, capB = caps(graph, K, eps)
    req = graph.url_rank >= 0
    ub = graph.url_bytes.astype(np.int64)
    if s.size == 0:
        return {"bound": 0, "cap_pages": capP, "cap_bytes": capB, "targets": 0, "by_host": {}, "top": []}
    o = np.lexsort((ub[s], d))
    s, d = s[o], d[o]
    start = np.r_[0, np.flatnonzero(d[1:] != d[:-1]) + 1]
    tgt = d[start]
    indeg = np.diff(np.r_[start, d.size])
    own = np.where(req[tgt], ub[tgt], 0)
    # cumulative bytes of the lightest sources, per target group
    cb = np.cumsum(ub[s])
    base = np.r_[0, cb[start[1:] - 1]] if start.size > 1 else np.zeros(1, np.int64)
    within = cb - np.repeat(base, indeg) + np.repeat(own, indeg)  # bytes of v + its j+1 lightest sources
    fits = within <= capB + 1e-9
    # fits is monotone (non-decreasing sums) inside each group: count the prefix that fits
    nfit = np.add.reduceat(fits.astype(np.int64), start)
    lim = capP - req[tgt].astype(np.int64)
    if np.any(own > capB + 1e-9):  # a page heavier than a rank: no assignment meets the caps
        nfit = np.where(own > capB + 1e-9, 0, nfit)
    m = np.minimum(np.maximum(lim, 0), nfit)
    lost = np.maximum(indeg - m, 0)
    contrib = lost * url_wire_cost(url_len[tgt])
    hid, names = url_hosts(graph)
    by = np.bincount(hid[tgt], weights=contrib, minlength=len(names))
    order = np.argsort(-by)
    top = np.argsort(-contrib)[:10]
    return {"bound": int(contrib.sum()), "cap_pages": capP, "cap_bytes": capB,
            "targets": int((contrib > 0).sum()),
            "by_host": {names[h]: int(by[h]) for h in order if by[h] > 0},
            "top": [{"url": graph.urls[int(tgt[i])], "indegree": int(indeg[i]), "kept_max": int(m[i]),
                     "bytes": int(contrib[i])} for i in top if contrib[i] > 0]}


def hub_lower_bound_reference(graph: SessionGraph, K: int, eps: float = 0.05) -> int:
    """Pure-Python reference of :func:`hub_lower_bound` (``bound`` only; for tests)."""
    capP, capB = caps(graph, K, eps)
    src_of: dict[int, set] = {}
    for u, v in zip(graph.link_src.tolist(), graph.link_dst.tolist()):
        if u != v and graph.url_rank[u] >= 0:
            src_of.setdefault(v, set()).add(u)
    total = 0
    for v, srcs in src_of.items():
        is_req = graph.url_rank[v] >= 0
        used = int(graph.url_bytes[v]) if is_req else 0
        kept = 0
        if used <= capB:
            for w in sorted(int(graph.url_bytes[u]) for u in srcs):
                if kept >= capP - (1 if is_req else 0) or used + w > capB + 1e-9:
                    break
                used += w
                kept += 1
        total += (len(srcs) - kept) * url_wire_cost(len(graph.urls[v].encode()))
    return total


def forced_splits(graph: SessionGraph, K: int, eps: float = 0.05, hosts=None) -> list[dict]:
    """Hosts too big for one rank: at least ``ceil(max(pages/cap_pages, bytes/cap_bytes))`` ranks each.

    Returns
    -------
    list of dict
        One per host with requested pages, largest first: ``host``,
        ``pages``, ``bytes``, ``pages_pct``, ``bytes_pct`` (of the session),
        ``min_ranks`` (1 when the host fits on one rank).
    """
    hid, names = url_hosts(graph) if hosts is None else hosts
    req = graph.url_rank >= 0
    capP, capB = caps(graph, K, eps)
    P = np.bincount(hid[req], minlength=len(names))
    B = np.bincount(hid[req], weights=graph.url_bytes[req].astype(np.float64), minlength=len(names))
    n, tb = max(int(req.sum()), 1), max(float(B.sum()), 1.0)
    out = []
    for h in np.argsort(-np.maximum(P / n, B / tb)):
        if P[h] == 0:
            continue
        need = int(max(np.ceil(P[h] / max(capP, 1) - 1e-12), np.ceil(B[h] / max(capB, 1e-9) - 1e-12), 1))
        out.append({"host": names[h], "pages": int(P[h]), "bytes": int(B[h]), "pages_pct": 100 * P[h] / n,
                    "bytes_pct": 100 * B[h] / tb, "min_ranks": need})
    return out


def volume_breakdown(graph: SessionGraph, owners, K: int, *, url_len=None, links=None, hosts=None) -> dict:
    """``volume_bytes`` of ``owners`` split by link kind, each part by :func:`~.assignment_metrics.predict`.

    Returns
    -------
    dict
        ``volume_bytes`` (all links), ``inter_host`` (links between hosts,
        target requested), ``intra_host`` (links inside a host, target
        requested), ``unrequested`` (links to never-requested URLs); the
        three parts sum to ``volume_bytes``. Also the totals of each link
        kind (``*_total``: their volume if every such link were remote).
    """
    url_len = url_lengths(graph) if url_len is None else url_len
    s, d = distinct_links(graph) if links is None else links
    hid = (url_hosts(graph) if hosts is None else hosts)[0]
    req = graph.url_rank >= 0
    kinds = {"inter_host": req[d] & (hid[s] != hid[d]), "intra_host": req[d] & (hid[s] == hid[d]),
             "unrequested": ~req[d]}
    out = {"volume_bytes": predict(graph, owners, K, url_len=url_len, links=(s, d))["volume_bytes"]}
    for k, msk in kinds.items():
        out[k] = predict(graph, owners, K, url_len=url_len, links=(s[msk], d[msk]))["volume_bytes"]
        sd = s[msk] != d[msk]
        out[k + "_total"] = int(url_wire_cost(url_len[d[msk][sd]]).sum())
    return out


def site_level_cut(graph: SessionGraph, K: int, imbalances=(0.05, 0.5, 2.0), *, url_len=None, hosts=None,
                   tries: int = 4) -> list[dict]:
    """Inter-host volume of the best site-level assignment METIS finds, per balance tolerance.

    Every host stays whole (site graph, two constraints); with a large
    tolerance the big hosts fit, so the cut shows how much of the inter-host
    volume co-locating related hosts can save at all. Links to
    never-requested URLs of known hosts count, as under a site assignment.
    """
    from .metis import partition_graph

    sg = site_graph(graph, url_lengths(graph) if url_len is None else url_len, hosts)
    out = []
    if sg.n_vertices < K:
        return out
    for eps in imbalances:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = partition_graph(sg, K, eps, 1, repair=False, methods=("kway", "rb"), tries=tries, ncuts=4)
        out.append({"imbalance": eps, "cut": int(r.cut), "imbalance_pct": r.imbalance_pct})
    return out


def analyse(graph: SessionGraph, K: int = 8, eps: float = 0.05, partvec_path=None, target: float = 20.0) -> dict:
    """All of the above for one session graph (see the module docstring)."""
    url_len, hosts = url_lengths(graph), url_hosts(graph)
    links = distinct_links(graph)
    hashed = owners_hash(graph, K)
    res = {"K": K, "imbalance": eps, "target_x": target,
           "hash": volume_breakdown(graph, hashed, K, url_len=url_len, links=links, hosts=hosts)}
    hv = res["hash"]["volume_bytes"]
    res["target_volume"] = hv / target
    if partvec_path is not None and Path(partvec_path).exists():
        from .partvec import load_partvec

        pv = load_partvec(partvec_path)
        if pv.K == K:
            own = pv.owners_of_graph(graph, hosts)
            res["partvec"] = volume_breakdown(graph, own, K, url_len=url_len, links=links, hosts=hosts)
            res["partvec"]["model"] = pv.model
    res["hub_bound"] = hub_lower_bound(graph, K, eps, url_len=url_len, links=links)
    res["forced_splits"] = [h for h in forced_splits(graph, K, eps, hosts) if h["min_ranks"] > 1]
    res["site_level"] = site_level_cut(graph, K, url_len=url_len, hosts=hosts)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m abc_crawler.partition.bounds", description=__doc__.splitlines()[0])
    ap.add_argument("session")
    ap.add_argument("--parts", "-k", type=int, default=8)
    ap.add_argument("--imbalance", type=float, default=0.05)
    ap.add_argument("--partvec", help="part vector to break down (default SESSION/partvec.npz if present)")
    ap.add_argument("--target", type=float, default=20.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    g = load_graph(a.session)
    pvp = a.partvec or str(Path(a.session) / "partvec.npz")
    r = analyse(g, a.parts, a.imbalance, pvp, a.target)
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    h = r["hash"]
    print(f"K = {a.parts}, tolerance {a.imbalance:g}: hash volume {h['volume_bytes']:,} B; "
          f"{a.target:g}x target = {r['target_volume']:,.0f} B")
    for name in ("hash", "partvec"):
        if name in r:
            b = r[name]
            print(f"  {name + (' (' + b['model'] + ')' if 'model' in b else ''):<22} volume {b['volume_bytes']:>11,} = "
                  f"inter-host {b['inter_host']:,} (of {b['inter_host_total']:,}) + intra-host {b['intra_host']:,} "
                  f"(of {b['intra_host_total']:,}) + to never-requested {b['unrequested']:,} "
                  f"(of {b['unrequested_total']:,})")
    hb = r["hub_bound"]
    print(f"  caps per rank: {hb['cap_pages']:,} pages, {hb['cap_bytes']:,.0f} bytes")
    for f in r["forced_splits"]:
        print(f"  must split {f['host']}: {f['pages']:,} pages ({f['pages_pct']:.1f} %), "
              f"{f['bytes_pct']:.1f} % of bytes -> at least {f['min_ranks']} ranks")
    print(f"  hub lower bound (any assignment within the caps): {hb['bound']:,} B over {hb['targets']} targets; "
          f"by host {dict(list(hb['by_host'].items())[:4])}")
    for s in r["site_level"]:
        print(f"  site-level (hosts whole) METIS cut at tolerance {s['imbalance']:g}: {s['cut']:,} B "
              f"(imbalance {', '.join(f'{x:.1f}' for x in s['imbalance_pct'])} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
