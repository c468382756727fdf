"""``abc-graph``: a finished session's crawled graph for web-graph tools (docs/GRAPH_EXPORT.md).

    abc-graph export SESSION --level page|host|domain --format cc|parquet|graphml|edgelist OUT
    abc-graph rank SESSION --level page|host|domain [OUT] [--top N]

``export`` writes the page, host or domain graph of SESSION's ``graph.npz`` into the new (or
empty) directory OUT: ``cc`` is Common Crawl's layout (vertices, edges and ranks files, host and
domain level), ``parquet`` vertex and edge tables, ``graphml`` one GraphML file, ``edgelist``
"src dst" lines and a vertex file. ``rank`` computes harmonic centrality (exact up to
``--exact-max`` vertices, else HyperBall's estimate with its error) and PageRank, prints the top
vertices and, given OUT, writes Common Crawl's ranks file (gzipped when OUT ends in ``.gz``).
"""
from __future__ import annotations

import argparse
import sys
import time
import zipfile
from pathlib import Path

from .graph.graphexport import FORMATS, ExportError, check_out_dir, export, ranks_meta, write_ranks
from .graph.graphrank import DEFAULT_EXACT_MAX, DEFAULT_LOG2M, harmonic_centrality, pagerank, positions
from .web.parser import KIND_NAMES
from .graph.webgraph import LEVELS, level_graph

__all__ = ["main"]

PROG = "abc-graph"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line naming the bad input, exit 2
        raise ExportError(message)


def load_session_graph(path: str):
    """SESSION's graph (refused with a clear message when SESSION is not a finished session)."""
    from .store.session import load_graph

    p = Path(path)
    if not p.exists():
        raise ExportError(f"{path}: no such session directory")
    if not p.is_dir():
        raise ExportError(f"{path}: not a session directory (give the directory abc-crawl wrote)")
    if not (p / "graph.npz").is_file():
        hint = " (the crawl is still running or was killed: abc-crawl --resume finishes it)" \
            if (p / "manifest.json").is_file() else ""
        raise ExportError(f"{path}: not a finished session: no graph.npz{hint}")
    try:
        return load_graph(p)
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ExportError(f"{p / 'graph.npz'}: cannot be read: {exc}") from None


def _ranks(lg, a):
    hc = harmonic_centrality(lg.n, lg.src, lg.dst, exact_max=a.exact_max, log2m=a.log2m, seed=a.seed)
    pr = pagerank(lg.n, lg.src, lg.dst)
    return pr, hc


def _common(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("session", metavar="SESSION", help="a finished session directory (its graph.npz)")
    ap.add_argument("--level", required=True, choices=LEVELS, help="page, host (Common Crawl's host names) or "
                    "domain (registrable domains by the public suffix list)")
    ap.add_argument("--exact-max", type=int, default=DEFAULT_EXACT_MAX, metavar="N",
                    help=f"exact harmonic centrality up to N vertices, HyperBall's estimate above (default "
                    f"{DEFAULT_EXACT_MAX})")
    ap.add_argument("--log2m", type=int, default=DEFAULT_LOG2M, metavar="B",
                    help=f"HyperBall: 2^B registers per counter, 4..16 (default {DEFAULT_LOG2M}: standard error "
                    f"{100 * 1.04 / 2 ** (DEFAULT_LOG2M / 2):.1f}%%)")
    ap.add_argument("--seed", type=int, default=0, help="HyperBall's hash seed (default 0)")
    ap.add_argument("--link-kinds", default="all", metavar="KINDS",
                    help=f"the links the graph is made of: all (default, as Common Crawl's graphs) or a comma-"
                    f"separated list of {', '.join(KIND_NAMES)}")


def _parse_kinds(text: str):
    """``--link-kinds``: None (every kind) or the kinds' codes."""
    if text.strip() == "all":
        return None
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in KIND_NAMES]
    if bad or not names:
        raise ExportError(f"--link-kinds: unknown kind {', '.join(map(repr, bad)) or repr(text)}: expected all or "
                          f"a comma-separated list of {', '.join(KIND_NAMES)}")
    return [KIND_NAMES.index(x) for x in names]


def _check_numbers(a) -> None:
    if not 4 <= a.log2m <= 16:
        raise ExportError(f"--log2m must be in 4..16, got {a.log2m}")
    if a.exact_max < 0:
        raise ExportError(f"--exact-max must be >= 0, got {a.exact_max}")


def _print_top(lg, pr, hc, top: int) -> None:
    print(f"{lg.level} graph: {lg.n} vertices, {lg.m} edges ({lg.self_links} page links inside one "
          f"{lg.level} dropped)")
    print(f"harmonic centrality: {hc.describe()}; {hc.seconds:.2f} s")
    print(f"PageRank: damping {pr.damping}, {pr.iterations} iterations to an L1 change of {pr.residual:.1e}; "
          f"{pr.seconds:.2f} s")
    if top <= 0 or lg.n == 0:
        return
    hpos, ppos = positions(hc.values), positions(pr.values)
    order = sorted(range(lg.n), key=lambda i: hpos[i])[:top]
    est = hc.method != "exact"
    hc_head = "harmonic centrality" + (" (± 2 s.e.)" if est else "")
    print(f"{'#hc':>6}  {hc_head:<24}  {'#pr':>6}  {'PageRank':<10}  {lg.level}")
    for i in order:
        h = f"{hc.values[i]:.2f}" + (f" ± {2 * hc.se[i]:.2f}" if est else "")
        print(f"{hpos[i]:>6}  {h:<24}  {ppos[i]:>6}  {pr.values[i]:<10.6f}  {lg.names[i]}")


def _main(argv) -> int:
    ap = _Parser(prog=PROG, description="A finished session's crawled graph for web-graph tools: page, host "
                 "and domain graphs in Common Crawl's layout, Parquet, GraphML or edge lists, and their "
                 "harmonic centrality and PageRank (docs/GRAPH_EXPORT.md).")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    ex = sub.add_parser("export", help="write the graph in a format", description="Write SESSION's page, host "
                        "or domain graph into the new or empty directory OUT.")
    _common(ex)
    ex.add_argument("--format", required=True, choices=FORMATS, help="cc (Common Crawl: vertices.txt.gz, "
                    "edges.txt.gz, ranks.txt.gz; host and domain level), parquet, graphml or edgelist")
    ex.add_argument("--ranks", action="store_true", help="parquet, graphml: add harmonic centrality and "
                    "PageRank columns (cc always has them)")
    ex.add_argument("out", metavar="OUT", help="output directory (must not exist or be empty)")
    rk = sub.add_parser("rank", help="harmonic centrality and PageRank", description="Rank SESSION's vertices "
                        "by harmonic centrality and PageRank, print the top ones, and write Common Crawl's "
                        "ranks file to OUT when given.")
    _common(rk)
    rk.add_argument("out", metavar="OUT", nargs="?", help="the ranks file to write (.gz: gzipped); must not "
                    "exist, or be empty")
    rk.add_argument("--top", type=int, default=20, help="vertices to print (default 20; 0: none)")
    a, extra = ap.parse_known_args(argv)
    # "rank SESSION --level host OUT": argparse gives an optional positional after the options back
    if a.command == "rank" and a.out is None and len(extra) == 1 and not extra[0].startswith("-"):
        a.out, extra = extra[0], []
    if extra:
        raise ExportError(f"unrecognized arguments: {' '.join(extra)}")
    if a.command is None:
        ap.print_help(sys.stderr)
        return 2
    _check_numbers(a)
    kinds = _parse_kinds(a.link_kinds)
    if a.command == "export":
        out = Path(a.out)
        if a.format == "cc" and a.level == "page":
            raise ExportError("--format cc is Common Crawl's host and domain graph layout (vertices are reversed "
                              "host names): use --level host or domain, or another format for pages")
        check_out_dir(out)
        g = load_session_graph(a.session)
        t0 = time.perf_counter()
        lg = level_graph(g, a.level, kinds)
        pr = hc = None
        if a.format == "cc" or a.ranks:
            pr, hc = _ranks(lg, a)
        files = export(g, lg, a.format, out, Path(a.session), pr=pr, hc=hc)
        print(f"{lg.level} graph: {lg.n} vertices, {lg.m} edges ({lg.self_links} page links inside one "
              f"{lg.level} dropped)" + (f"; harmonic centrality {hc.describe()}" if hc is not None else ""))
        print(f"wrote {', '.join(str(f) for f in files)} in {time.perf_counter() - t0:.2f} s")
        return 0
    out = Path(a.out) if a.out else None
    if out is not None:
        if out.is_dir():
            raise ExportError(f"{out}: is a directory (give the ranks file's name)")
        if out.exists() and out.stat().st_size > 0:
            raise ExportError(f"{out}: exists and is not empty")
    g = load_session_graph(a.session)
    lg = level_graph(g, a.level, kinds)
    pr, hc = _ranks(lg, a)
    _print_top(lg, pr, hc, a.top)
    if out is not None:
        import json

        out.parent.mkdir(parents=True, exist_ok=True)
        write_ranks(out, lg, pr, hc)
        meta = out.with_name(out.name.removesuffix(".gz").removesuffix(".txt") + ".json")
        meta.write_text(json.dumps(ranks_meta(lg, pr, hc), indent=1) + "\n")
        print(f"wrote {out} and {meta}")
    return 0


def main(argv=None) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except ExportError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
