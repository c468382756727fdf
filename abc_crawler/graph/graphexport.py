"""``abc-graph``'s writers: a session's graph in Common Crawl's layout, Parquet, GraphML and edge lists.

Every format, level and column is described in docs/GRAPH_EXPORT.md; the graphs themselves are
:func:`abc_crawler.graph.webgraph.level_graph`'s, the ranks :mod:`abc_crawler.graph.graphrank`'s.

* :func:`vertex_columns` — per vertex: what the session knows of it (page level: URL, status,
  MIME, link depth, crawl rank, outcome; host and domain level: the same summed over its URLs).
* :func:`write_cc` — ``vertices.txt.gz``, ``edges.txt.gz``, ``ranks.txt.gz`` (+ ``ranks.json``).
* :func:`write_parquet` — ``vertices.parquet``, ``edges.parquet`` (pyarrow).
* :func:`write_graphml` — ``graph.graphml``, streamed (networkx's ``write_graphml`` holds the whole
  graph as Python objects: measured in ``bench/graph_export.py``).
* :func:`write_edgelist` — ``vertices.txt`` and ``edges.txt`` ("src dst").
* :func:`write_ranks` — Common Crawl's ranks file.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from .graphrank import Harmonic, PageRank, positions
from ..web.parser import KIND_NAMES
from .webgraph import LevelGraph, page_links

__all__ = ["FORMATS", "ExportError", "vertex_columns", "edge_columns", "url_outcomes", "url_mimes", "url_depths",
           "write_cc", "write_parquet", "write_graphml", "write_edgelist", "write_ranks", "ranks_header",
           "export", "check_out_dir"]

FORMATS = ("cc", "parquet", "graphml", "edgelist")
#: gzip level of the text files (Common Crawl's files are gzip; level 6 is gzip's default)
GZIP_LEVEL = 6


class ExportError(Exception):
    """Bad input or output (one line, shown to the user)."""


# -- what the session knows of each URL ----------------------------------------------------------

def url_outcomes(g) -> list[str]:
    """Each URL's outcome: ``node`` (crawled HTML page), ``redirect``, the URL's kind in graph.npz
    (how it failed, why it is not a node, why it was given up), ``status_NNN``, or
    ``not_requested`` (``""`` for a row without URL text)."""
    nodes = g.url_node
    out = []
    for i, u in enumerate(g.urls):
        k = g.kind_of(i)
        if not u:
            out.append("")
        elif g.url_rank[i] < 0:
            out.append(k or "not_requested")
        elif k:
            out.append(k)
        elif nodes[i] >= 0:
            out.append("node")
        elif 300 <= g.url_status[i] < 400:
            out.append("redirect")
        else:
            out.append(f"status_{int(g.url_status[i])}")
    return out


def url_mimes(g, session_dir: Path) -> list[str | None]:
    """The media type of each URL's response, from the session's CDXJ indexes (``warc/*.cdxj``:
    the HTTP Content-Type's media type); a revisit record's is that of the response with the same
    payload digest. None when unknown (no answer, no index on this host)."""
    by_url: dict[str, str] = {}
    by_digest: dict[str, str] = {}
    revisits: dict[str, str] = {}
    for f in sorted((Path(session_dir) / "warc").glob("*.cdxj")):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                brace = line.find("{")
                if brace < 0:
                    continue
                try:
                    rec = json.loads(line[brace:])
                except ValueError:
                    continue
                url, mime, digest = rec.get("url"), rec.get("mime"), rec.get("digest")
                if not url:
                    continue
                if mime == "warc/revisit":
                    if digest:
                        revisits[url] = digest
                elif mime:
                    by_url[url] = mime
                    if digest:
                        by_digest.setdefault(digest, mime)
    for url, digest in revisits.items():
        if url not in by_url and digest in by_digest:
            by_url[url] = by_digest[digest]
    return [by_url.get(u) for u in g.urls]


def _seed_urls(session_dir: Path) -> list[str] | None:
    """The session's seeds (canonical), from the seeds named in manifest.json; None if unknown."""
    from ..web.urls import UrlError, canonicalize, scheme_of

    try:
        manifest = json.loads((Path(session_dir) / "manifest.json").read_text())
        seeds = manifest["config"]["seeds"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(seeds, str):
        return None
    if scheme_of(seeds.strip()) in ("http", "https") and not os.path.exists(seeds):
        lines = [seeds.strip()]
    else:
        try:
            lines = Path(seeds).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
    out = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            u = canonicalize(line)
        except UrlError:
            continue
        if u:
            out.append(u)
    return out


def url_depths(g, session_dir: Path) -> np.ndarray | None:
    """Each URL's link depth: the fewest links from a seed (breadth-first over ``link_*``; a seed
    is 0, a URL no seed leads to -1). None when the seeds are unknown (the seeds file named in
    manifest.json is not readable here)."""
    seeds = _seed_urls(session_dir)
    if seeds is None:
        return None
    row = {u: i for i, u in enumerate(g.urls) if u}
    sources = sorted({row[u] for u in seeds if u in row})
    n = len(g.urls)
    depth = np.full(n, -1, dtype=np.int32)
    if not sources:
        return depth
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    a = csr_matrix((np.ones(len(g.link_src)), (g.link_src, g.link_dst)), shape=(n, n))
    d = dijkstra(a, directed=True, unweighted=True, indices=sources, min_only=True)
    ok = np.isfinite(d)
    depth[ok] = d[ok].astype(np.int32)
    return depth


def edge_columns(g, lg: LevelGraph) -> dict[str, np.ndarray]:
    """Edge columns: ``src``, ``dst``; page level: ``kind`` (``navigation``, ``embed``, ``redirect``
    or ``refresh``: the link's kind in graph.npz, the first of these for a pair linked as several)
    and ``crawled`` (the link is an edge of graph.npz's crawled page graph, ``edge_*``); host and
    domain level: ``weight`` (distinct page links behind the edge)."""
    cols: dict[str, np.ndarray] = {"src": lg.src, "dst": lg.dst}
    if lg.level == "page":
        ls, ld, lk = page_links(g, lg.kinds)
        kind = lk[ls != ld]                   # the same order as lg's edges: sorted, distinct pairs
        assert kind.shape[0] == lg.m
        cols["kind"] = np.array(KIND_NAMES, dtype=object)[kind]
        u = max(len(g.urls), 1)
        crawled = g.node_url[g.edge_src].astype(np.int64) * u + g.node_url[g.edge_dst]
        cols["crawled"] = np.isin(lg.src.astype(np.int64) * u + lg.dst, crawled)
    else:
        cols["weight"] = lg.weight
    return cols


def vertex_columns(g, lg: LevelGraph, session_dir: Path) -> dict[str, object]:
    """Vertex columns (name → NumPy array or list; None entries are nulls), see docs/GRAPH_EXPORT.md."""
    outcome = url_outcomes(g)
    mime = url_mimes(g, session_dir)
    depth = url_depths(g, session_dir)
    if lg.level == "page":
        cols: dict[str, object] = {"id": np.arange(lg.n, dtype=np.int64), "url": list(g.urls)}
        cols["status"] = g.url_status.astype(np.int16)
        cols["mime"] = mime
        cols["depth"] = None if depth is None else [None if x < 0 else int(x) for x in depth.tolist()]
        cols["rank"] = [None if r < 0 else int(r) for r in g.url_rank.tolist()]
        cols["bytes"] = g.url_bytes.astype(np.int64)
        cols["superstep"] = [None if s < 0 else int(s) for s in g.url_superstep.tolist()]
        cols["node"] = [None if x < 0 else int(x) for x in g.url_node.tolist()]
        cols["kind"] = [g.kind_of(i) or None for i in range(lg.n)]
        cols["outcome"] = outcome
        return cols
    n = lg.n
    v = lg.url_vertex
    has = v >= 0
    vv = v[has]

    def count(mask) -> np.ndarray:
        return np.bincount(vv[np.asarray(mask)[has]], minlength=n).astype(np.int64)

    st = g.url_status
    requested = g.url_rank >= 0
    cols = {"id": np.arange(n, dtype=np.int64), lg.level: list(lg.names), f"{lg.level}_rev": lg.labels}
    if lg.level == "domain":
        cols["n_hosts"] = np.array([len(h) for h in lg.host_of_domain], dtype=np.int64)
    cols["urls"] = count(np.ones(len(v), bool))
    cols["requested"] = count(requested)
    cols["nodes"] = count(g.url_node >= 0)
    cols["status_2xx"] = count((st >= 200) & (st < 300))
    cols["status_3xx"] = count((st >= 300) & (st < 400))
    cols["status_4xx"] = count((st >= 400) & (st < 500))
    cols["status_5xx"] = count(st >= 500)
    cols["failed"] = count(st == -1)
    cols["bytes"] = np.bincount(vv, weights=g.url_bytes[has].astype(np.float64), minlength=n).astype(np.int64)
    if depth is None:
        cols["depth"] = None
    else:
        dmin = np.full(n, np.iinfo(np.int32).max, dtype=np.int64)
        ok = has & (depth >= 0)
        np.minimum.at(dmin, v[ok], depth[ok])
        cols["depth"] = [None if x == np.iinfo(np.int32).max else int(x) for x in dmin.tolist()]
    # ranks that requested its URLs (a host's pages may be split over ranks), and its outcomes
    rk = requested & has
    pairs = np.unique(v[rk].astype(np.int64) * 65536 + g.url_rank[rk].astype(np.int64))
    ranks: list[list[int]] = [[] for _ in range(n)]
    for p in pairs.tolist():
        ranks[p // 65536].append(p % 65536)
    cols["ranks"] = ranks
    names = sorted({o for o in outcome if o})
    code = {o: i for i, o in enumerate(names)}
    oc = np.array([code.get(o, -1) for o in outcome], dtype=np.int64)
    ok = has & (oc >= 0)
    keys, counts = np.unique(v[ok].astype(np.int64) * max(len(names), 1) + oc[ok], return_counts=True)
    outcomes: list[dict[str, int]] = [{} for _ in range(n)]
    for k, c in zip(keys.tolist(), counts.tolist()):
        outcomes[k // max(len(names), 1)][names[k % max(len(names), 1)]] = c
    cols["outcomes"] = outcomes
    return cols


def _rank_columns(pr: PageRank | None, hc: Harmonic | None) -> dict[str, np.ndarray]:
    cols = {}
    if hc is not None:
        cols["harmonicc_pos"] = positions(hc.values)
        cols["harmonicc_val"] = hc.values
        cols["harmonicc_se"] = hc.se
    if pr is not None:
        cols["pr_pos"] = positions(pr.values)
        cols["pr_val"] = pr.values
    return cols


# -- output directories --------------------------------------------------------------------------

def check_out_dir(out: Path) -> None:
    """OUT may be absent or an empty directory; anything else is refused."""
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise ExportError(f"{out}: exists and is not a directory")
        if any(out.iterdir()):
            raise ExportError(f"{out}: exists and is not empty (give a new or empty directory)")


def _open_text(path: Path, gz: bool):
    if gz:
        return gzip.open(path, "wt", encoding="utf-8", newline="\n", compresslevel=GZIP_LEVEL)
    return open(path, "w", encoding="utf-8", newline="\n")


def _write_lines(path: Path, lines, gz: bool, header: str | None = None, chunk: int = 200_000) -> None:
    """Write an iterable of lines (without newlines) through a temporary name and a rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    with _open_text(tmp, gz) as fh:
        if header is not None:
            fh.write(header + "\n")
        buf = []
        for line in lines:
            buf.append(line)
            if len(buf) >= chunk:
                fh.write("\n".join(buf) + "\n")
                buf = []
        if buf:
            fh.write("\n".join(buf) + "\n")
    os.replace(tmp, path)


def _pair_lines(a: np.ndarray, b: np.ndarray, sep: str):
    for lo in range(0, len(a), 200_000):
        yield from (f"{x}{sep}{y}" for x, y in zip(a[lo:lo + 200_000].tolist(), b[lo:lo + 200_000].tolist()))


# -- Common Crawl ----------------------------------------------------------------------------------

def ranks_header(level: str) -> str:
    """Common Crawl's ranks-file header (domain graphs add ``#n_hosts``; a page graph's names are
    its URLs: ``#url``)."""
    head = "#harmonicc_pos\t#harmonicc_val\t#pr_pos\t#pr_val\t" + ("#url" if level == "page" else "#host_rev")
    return head + "\t#n_hosts" if level == "domain" else head


def write_ranks(path: Path, lg: LevelGraph, pr: PageRank, hc: Harmonic) -> None:
    """Common Crawl's ranks file: the header line, then one tab-separated line per vertex
    (harmonic centrality position and value, PageRank position and value, reversed name; domain
    level: number of hosts), sorted by harmonic centrality position. Gzipped when ``path`` ends
    in ``.gz``."""
    hpos, ppos = positions(hc.values), positions(pr.values)
    order = np.argsort(hpos, kind="stable")
    labels = lg.labels
    hv, pv = hc.values.tolist(), pr.values.tolist()
    hp, pp = hpos.tolist(), ppos.tolist()
    extra = [f"\t{len(h)}" for h in lg.host_of_domain] if lg.level == "domain" else None
    lines = (f"{hp[i]}\t{hv[i]!r}\t{pp[i]}\t{pv[i]!r}\t{labels[i]}" + (extra[i] if extra else "")
             for i in order.tolist())
    _write_lines(Path(path), lines, str(path).endswith(".gz"), ranks_header(lg.level))


def ranks_meta(lg: LevelGraph, pr: PageRank, hc: Harmonic) -> dict:
    return {"level": lg.level, "vertices": lg.n, "edges": lg.m, "self_links_dropped": lg.self_links,
            "harmonic_centrality": {"method": hc.method, "log2m": hc.log2m, "rse": hc.rse,
                                    "se": "rse * (harmonicc_val + 1) per vertex (0 when exact)",
                                    "passes": hc.passes, "seconds": round(hc.seconds, 3), "description": hc.describe()},
            "pagerank": {"damping": pr.damping, "tol": pr.tol, "iterations": pr.iterations,
                         "residual": pr.residual, "dangling": "mass spread uniformly (networkx)",
                         "seconds": round(pr.seconds, 3)}}


def write_cc(out: Path, g, lg: LevelGraph, pr: PageRank, hc: Harmonic) -> list[Path]:
    """Common Crawl's host/domain graph layout: ``vertices.txt.gz`` (id TAB reversed name; domain
    level also TAB number of hosts), ``edges.txt.gz`` (from TAB to, sorted), ``ranks.txt.gz`` and
    ``ranks.json`` (how the ranks were computed, with the error of an estimate)."""
    if lg.level == "page":
        raise ExportError("--format cc is Common Crawl's host and domain graph layout (vertices are reversed "
                          "host names): use --level host or domain, or another format for pages")
    labels = lg.labels
    if lg.level == "domain":
        vlines = (f"{i}\t{labels[i]}\t{len(lg.host_of_domain[i])}" for i in range(lg.n))
    else:
        vlines = (f"{i}\t{labels[i]}" for i in range(lg.n))
    files = [out / "vertices.txt.gz", out / "edges.txt.gz", out / "ranks.txt.gz", out / "ranks.json"]
    _write_lines(files[0], vlines, True)
    _write_lines(files[1], _pair_lines(lg.src, lg.dst, "\t"), True)
    write_ranks(files[2], lg, pr, hc)
    files[3].write_text(json.dumps(ranks_meta(lg, pr, hc), indent=1) + "\n")
    return files


# -- Parquet ---------------------------------------------------------------------------------------

def _arrow_table(cols: dict[str, object]):
    import pyarrow as pa

    arrays, names = [], []
    for name, col in cols.items():
        if col is None:
            continue
        if name in ("ranks",):
            arr = pa.array(col, type=pa.list_(pa.int16()))
        elif name == "outcomes":
            arr = pa.array([list(d.items()) for d in col], type=pa.map_(pa.string(), pa.int64()))
        elif isinstance(col, np.ndarray) and col.dtype != object:
            arr = pa.array(col)
        elif name in ("depth", "rank", "superstep", "node"):
            arr = pa.array(col, type=pa.int32() if name != "rank" else pa.int16())
        else:
            arr = pa.array(col if not isinstance(col, np.ndarray) else col.tolist(), type=pa.string())
        arrays.append(arr)
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def write_parquet(out: Path, g, lg: LevelGraph, session_dir: Path, pr: PageRank | None = None,
                  hc: Harmonic | None = None) -> list[Path]:
    """``vertices.parquet`` (:func:`vertex_columns`, plus the ranks when given) and
    ``edges.parquet`` (:func:`edge_columns`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = vertex_columns(g, lg, session_dir)
    cols.update(_rank_columns(pr, hc))
    vt = _arrow_table(cols)
    ec = edge_columns(g, lg)
    et = pa.Table.from_arrays([pa.array(c.tolist() if c.dtype == object else c) for c in ec.values()],
                              names=list(ec))
    meta = {b"abc.level": lg.level.encode(), b"abc.self_links_dropped": str(lg.self_links).encode()}
    if hc is not None and pr is not None:
        meta[b"abc.ranks"] = json.dumps(ranks_meta(lg, pr, hc)).encode()
    files = [out / "vertices.parquet", out / "edges.parquet"]
    for table, path in ((vt, files[0]), (et, files[1])):
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
        tmp = path.with_name(f".{path.name}.tmp")
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    return files


# -- GraphML ---------------------------------------------------------------------------------------

_GRAPHML_TYPES = {"b": "boolean", "i": "long", "u": "long", "f": "double"}


def _graphml_attr(name: str, col) -> tuple[str, list]:
    """(GraphML type, values as Python objects or None)."""
    if isinstance(col, np.ndarray) and col.dtype != object:
        return _GRAPHML_TYPES[col.dtype.kind], col.tolist()
    values = list(col)
    if name == "ranks":
        return "string", [" ".join(map(str, r)) for r in values]
    if name == "outcomes":
        return "string", [json.dumps(d, sort_keys=True) for d in values]
    sample = next((x for x in values if x is not None), "")
    return ("long" if isinstance(sample, int) and not isinstance(sample, bool) else "string"), values


def write_graphml(out: Path, g, lg: LevelGraph, session_dir: Path, pr: PageRank | None = None,
                  hc: Harmonic | None = None) -> list[Path]:
    """``graph.graphml``: a directed graph, node ids ``n<id>``, the vertex columns as node data
    (lists and maps as text: ``ranks`` space-separated, ``outcomes`` as JSON), the edge columns
    (but src/dst) as edge data; written as a stream."""
    cols = vertex_columns(g, lg, session_dir)
    cols.update(_rank_columns(pr, hc))
    cols.pop("id")
    vattrs = [(name, *_graphml_attr(name, col)) for name, col in cols.items() if col is not None]
    ecols = edge_columns(g, lg)
    eattrs = [(name, *_graphml_attr(name, col)) for name, col in ecols.items() if name not in ("src", "dst")]
    path = out / "graph.graphml"
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        w = fh.write
        w('<?xml version="1.0" encoding="utf-8"?>\n'
          '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
          'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
          'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
          'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n')
        for k, (name, typ, _) in enumerate(vattrs):
            w(f'<key id="v{k}" for="node" attr.name={quoteattr(name)} attr.type="{typ}"/>\n')
        for k, (name, typ, _) in enumerate(eattrs):
            w(f'<key id="e{k}" for="edge" attr.name={quoteattr(name)} attr.type="{typ}"/>\n')
        w(f'<graph id={quoteattr(lg.level)} edgedefault="directed">\n')

        def fmt(typ, x):
            if typ == "boolean":
                return "true" if x else "false"
            if typ == "double":
                return repr(float(x))
            return escape(str(x))

        buf = []
        for i in range(lg.n):
            data = "".join(f'<data key="v{k}">{fmt(typ, vals[i])}</data>'
                           for k, (_, typ, vals) in enumerate(vattrs) if vals[i] is not None)
            buf.append(f'<node id="n{i}">{data}</node>\n')
            if len(buf) >= 50_000:
                w("".join(buf))
                buf = []
        src, dst = lg.src.tolist(), lg.dst.tolist()
        for j in range(lg.m):
            data = "".join(f'<data key="e{k}">{fmt(typ, vals[j])}</data>' for k, (_, typ, vals) in enumerate(eattrs))
            buf.append(f'<edge source="n{src[j]}" target="n{dst[j]}">{data}</edge>\n')
            if len(buf) >= 50_000:
                w("".join(buf))
                buf = []
        w("".join(buf))
        w("</graph>\n</graphml>\n")
    os.replace(tmp, path)
    return [path]


# -- edge list -------------------------------------------------------------------------------------

def write_edgelist(out: Path, g, lg: LevelGraph) -> list[Path]:
    """``vertices.txt`` (id TAB name: the URL, host or domain, not reversed) and ``edges.txt``
    (one "src dst" line per edge, sorted)."""
    files = [out / "vertices.txt", out / "edges.txt"]
    names = lg.names
    _write_lines(files[0], (f"{i}\t{names[i]}" for i in range(lg.n)), False)
    _write_lines(files[1], _pair_lines(lg.src, lg.dst, " "), False)
    return files


def export(g, lg: LevelGraph, fmt: str, out: Path, session_dir: Path, *, pr: PageRank | None = None,
           hc: Harmonic | None = None) -> list[Path]:
    """Write ``lg`` in ``fmt`` into the directory ``out`` (created; must be absent or empty)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "cc" and lg.level == "page":
        write_cc(out, g, lg, pr, hc)                    # raises the message
    check_out_dir(out)
    # written into a directory of its own beside OUT, renamed to OUT once complete (rename(2) takes
    # an empty directory's place): OUT never holds a partial export
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        if fmt == "cc":
            files = write_cc(tmp, g, lg, pr, hc)
        elif fmt == "parquet":
            files = write_parquet(tmp, g, lg, session_dir, pr, hc)
        elif fmt == "graphml":
            files = write_graphml(tmp, g, lg, session_dir, pr, hc)
        else:
            files = write_edgelist(tmp, g, lg)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / f.name for f in files]
