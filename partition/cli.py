"""``abc-repartition``: partition a session's graph for the next session.

Usage::

    abc-repartition SESSION --parts K [--model page-gp|site-gp|page-hp|site-hp]
                    [--imbalance 0.05] [--seed S] [--out PATH] [--threads 2]
                    [--hp-weight pages|both|bytes] [--hp-preset P] [--no-site-start]
                    [--method kway|rb|both] [--tries N] [--ncuts N]
                    [--no-export] [--json]
    abc-repartition SESSION --parts K --remap [PARTVEC]

Builds Türk's model of ``SESSION/graph.npz`` (:mod:`.models`), partitions it
into K parts (METIS with two constraints for the graph models, Mt-KaHyPar
KM1 for the hypergraph models, then a two-constraint balance repair; for the
graph models METIS runs ``--tries`` seeds of k-way and of recursive bisection
(``--method``), for page-gp the site-graph partition projected onto pages is
a further start, and the lowest cut after repair and refinement wins), writes
the part vector ``SESSION/partvec.npz`` (or ``--out``; format in
:mod:`.partvec`), exports ``SESSION/page.graph`` and ``SESSION/page.hgr``
(plus ``site.graph``/``site.hgr`` for site models) and prints the predicted
metrics (:func:`.assignment_metrics.predict`) of the model beside the ``hash`` and
``site-hash`` baselines on the same graph (and the session's own measured
assignment, when ``stats.json`` or ``manifest.json`` names it).

Site models assign every page of a host to the host's part.

``--remap`` maps an existing part vector (default ``SESSION/partvec.npz``)
onto K ranks without repartitioning (:func:`.partvec.remap`).

Exit status: 0 on success, 2 on bad input (one line on stderr), 1 when a
partitioner library is missing or fails.
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from ..store.session import SessionGraph, load_graph, read_json
from .assignment_metrics import predict
from .metis import MetisWarning
from .models import MODELS, build_model, distinct_links, page_graph, page_hypergraph, url_lengths
from ..web.assignments import owners_for_assignment
from ..web.ownership import owners_hash, owners_site_hash, url_hosts
from .partvec import PARTVEC_FILE, load_partvec, remap, save_partvec
from .repartition import BadInput, run_model

__all__ = ["main"]

PROG = "abc-repartition"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit 2
        raise BadInput(message)


def _session_assignment(session: Path) -> str | None:
    for name in ("stats.json", "manifest.json"):
        p = session / name
        if p.is_file():
            try:
                a = read_json(p).get("assignment")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(a, str):
                return a
    return None


def _fmt_row(name: str, m: dict) -> str:
    return (f"{name:<28} {m['volume_bytes']:>15,} {m['messages_thesis']:>12,} {m['cut_page_graph']:>15,} "
            f"{m['km1_page_hypergraph']:>12,} {m['storage_pct']:>9.2f} {m['request_pct']:>9.2f}")


def _print_table(rows: list[tuple[str, dict]], out) -> None:
    print(f"{'assignment':<28} {'volume_bytes':>15} {'messages':>12} {'page-graph cut':>15} "
          f"{'page-hg km1':>12} {'storage%':>9} {'request%':>9}", file=out)
    for name, m in rows:
        print(_fmt_row(name, m), file=out)


def _export(session: Path, graph: SessionGraph, model: str, res: dict, url_len, hosts,
            hp_weight: str = "pages") -> list[str]:
    from .export import write_hmetis, write_metis_graph

    gran = MODELS[model][0]
    m = res["model"]
    written = []
    pg = m if model == "page-gp" else (res["guide"] if model == "page-hp" else page_graph(graph, url_len))
    ph = m if model == "page-hp" else page_hypergraph(graph)
    write_metis_graph(session / "page.graph", pg)
    write_hmetis(session / "page.hgr", ph, weight=hp_weight)
    written += ["page.graph", "page.hgr"]
    if gran == "site":
        sg = m if model == "site-gp" else res["guide"]
        sh = m if model == "site-hp" else build_model(graph, "site-hp", hosts=hosts)
        write_metis_graph(session / "site.graph", sg)
        write_hmetis(session / "site.hgr", sh, weight=hp_weight)
        written += ["site.graph", "site.hgr"]
    return written


def _main(argv) -> int:
    ap = _Parser(prog=PROG, description="Partition a session's web graph (Türk's models) into a part "
                 "vector for the next session.")
    ap.add_argument("session", help="session directory (holds graph.npz)")
    ap.add_argument("--parts", "-k", type=int, required=True, help="K, ranks of the next session")
    ap.add_argument("--model", default="page-gp", choices=list(MODELS),
                    help="page/site graph (METIS, volume) or hypergraph (Mt-KaHyPar, messages); default page-gp")
    ap.add_argument("--imbalance", type=float, default=0.05, help="tolerance on both weights (default 0.05)")
    ap.add_argument("--seed", type=int, default=1, help="partitioner seed (default 1)")
    ap.add_argument("--out", help=f"part-vector path (default SESSION/{PARTVEC_FILE})")
    ap.add_argument("--threads", type=int, default=2, help="Mt-KaHyPar threads (default 2)")
    ap.add_argument("--hp-weight", default="pages", choices=["pages", "both", "bytes"],
                    help="single weight given to Mt-KaHyPar before the two-constraint repair (default pages)")
    ap.add_argument("--hp-preset", default="default", choices=["default", "quality", "deterministic",
                                                               "highest_quality"],
                    help="Mt-KaHyPar preset (only 'deterministic' repeats exactly for a seed)")
    ap.add_argument("--method", default="both", choices=["kway", "rb", "both"],
                    help="graph models: METIS k-way, recursive bisection, or both as starts (default both)")
    ap.add_argument("--tries", type=int, default=4,
                    help="graph models: METIS runs per method with seeds S, S+1, ...; the lowest cut "
                         "after repair wins (default 4)")
    ap.add_argument("--ncuts", type=int, default=4, help="graph models: METIS_OPTION_NCUTS per run (default 4)")
    ap.add_argument("--no-site-start", action="store_true",
                    help="page-gp: do not try the site-graph partition as a second start")
    ap.add_argument("--no-export", action="store_true", help="do not write .graph/.hgr files")
    ap.add_argument("--remap", nargs="?", const="", metavar="PARTVEC",
                    help="remap an existing part vector (default SESSION/partvec.npz) onto --parts ranks")
    ap.add_argument("--json", action="store_true", help="print the metrics as JSON instead of a table")
    a = ap.parse_args(argv)

    K = a.parts
    if K < 1:
        raise BadInput(f"--parts must be >= 1, got {K}")
    if K > 32767:
        raise BadInput(f"--parts {K} exceeds 32767 (ranks are int16 in the part vector)")
    if not (0 < a.imbalance <= 1):
        raise BadInput(f"--imbalance must be in (0, 1], got {a.imbalance}")
    if a.seed < 0:
        raise BadInput(f"--seed must be >= 0, got {a.seed}")
    if a.ncuts < 1:
        raise BadInput(f"--ncuts must be >= 1, got {a.ncuts}")
    if a.tries < 1:
        raise BadInput(f"--tries must be >= 1, got {a.tries}")
    if a.threads < 1:
        raise BadInput(f"--threads must be >= 1, got {a.threads}")
    session = Path(a.session)
    if not session.is_dir():
        raise BadInput(f"{session}: no such session directory")
    if not (session / "graph.npz").is_file():
        raise BadInput(f"{session}: no graph.npz (is this a session directory?)")
    try:
        graph = load_graph(session)
    except (ValueError, OSError, KeyError) as e:
        raise BadInput(f"{session}/graph.npz: {e}") from None
    n_req = int((graph.url_rank >= 0).sum())
    if n_req == 0:
        raise BadInput(f"{session}: the session requested no pages; nothing to partition")
    out = Path(a.out) if a.out else session / PARTVEC_FILE
    url_len, hosts = url_lengths(graph), url_hosts(graph)
    links = distinct_links(graph)
    say = sys.stderr if a.json else sys.stdout

    def base_rows() -> list[tuple[str, dict]]:
        rows = [("hash", predict(graph, owners_hash(graph, K), K, url_len=url_len, links=links)),
                ("site-hash", predict(graph, owners_site_hash(graph, K, hosts=hosts), K,
                                      url_len=url_len, links=links))]
        asg = _session_assignment(session)
        if asg is not None:
            try:
                own = owners_for_assignment(graph, asg, graph.ranks, session_dir=session)
                rows.append((f"session ({asg}, K={graph.ranks}, measured)",
                             predict(graph, own, graph.ranks, url_len=url_len, links=links)))
            except (ValueError, OSError) as e:
                print(f"{PROG}: note: measured row skipped: {e}", file=sys.stderr)
        return rows

    if a.remap is not None:
        src = Path(a.remap) if a.remap else session / PARTVEC_FILE
        try:
            pv0 = load_partvec(src)
        except (ValueError, OSError) as e:
            raise BadInput(str(e)) from None
        pv = remap(pv0, K)
        m = predict(graph, pv.owners_of_graph(graph, hosts), K, url_len=url_len, links=links)
        rows = [(f"{pv.model} (K {pv0.K}->{K})", m)] + base_rows()
        pv.metrics = {"remapped_from": pv0.K, "predicted": m, "baselines": {n: r for n, r in rows[1:]}}
        save_partvec(out, pv)
        if a.json:
            print(json.dumps(pv.metrics, indent=1))
        else:
            print(f"{PROG}: remapped {src} from K={pv0.K} to K={K} by greedy bin packing", file=say)
            _print_table(rows, say)
        print(f"wrote {out}", file=say)
        return 0

    print(f"{PROG}: {session}: {n_req:,} requested pages on {len(set(hosts[0][graph.url_rank >= 0].tolist())):,} "
          f"hosts, {links[0].size:,} links; K={K}, model {a.model}, imbalance {a.imbalance:g}, seed {a.seed}",
          file=say)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MetisWarning)
        res = run_model(graph, a.model, K, imbalance=a.imbalance, seed=a.seed, threads=a.threads,
                        hp_weight=a.hp_weight, hp_preset=a.hp_preset, site_start=not a.no_site_start,
                        url_len=url_len, hosts=hosts, tries=a.tries, ncuts=a.ncuts,
                        methods=("kway", "rb") if a.method == "both" else (a.method,))
    for wmsg in caught:
        print(f"{PROG}: note: {wmsg.message}", file=sys.stderr)
    rep = res["report"]
    m = predict(graph, res["owners"], K, url_len=url_len, links=links)
    rows = [(f"{a.model} (predicted)", m)] + base_rows()
    pv = res["partvec"]
    pv.source = str(session)
    pv.metrics = {"predicted": m, "baselines": {n: r for n, r in rows[1:]}, "partition": rep,
                  "build_s": res["build_s"]}
    save_partvec(out, pv)
    written = [] if a.no_export else _export(session, graph, a.model, res, url_len, hosts, a.hp_weight)
    mdl = res["model"]
    size = (f"{mdl.n_vertices:,} vertices, {mdl.n_edges:,} edges" if hasattr(mdl, "n_edges")
            else f"{mdl.n_vertices:,} vertices, {mdl.n_nets:,} nets, {mdl.n_pins:,} pins")
    if a.json:
        print(json.dumps(pv.metrics, indent=1))
    else:
        tool = (f"METIS (ncon=2, best start: {rep['start']})" if rep["objective"] == "cut"
                else f"Mt-KaHyPar KM1 (weight {rep['weight']})")
        print(f"  model: {size} (built in {res['build_s']:.2f} s); {tool} + repair: "
              f"{rep['seconds']:.2f} s, {rep['repair'].get('moves', 0)} moves; "
              f"{rep['objective']} {rep.get('cut', rep.get('km1')):,}", file=say)
        _print_table(rows, say)
    lim = 100 * a.imbalance
    if max(m["storage_pct"], m["request_pct"]) > lim + 1e-9:
        print(f"{PROG}: warning: imbalance target {lim:g}% not reached (storage {m['storage_pct']:.2f}%, "
              f"requests {m['request_pct']:.2f}%): a page or host is too heavy for this tolerance", file=sys.stderr)
    print(f"wrote {out}" + (f"; exported {', '.join(str(session / w) for w in written)}" if written else ""),
          file=say)
    return 0


def main(argv=None) -> int:
    """Entry point of ``abc-repartition``; returns the exit status."""
    from .hypergraph import HypergraphError
    from .metis import MetisError

    try:
        return _main(sys.argv[1:] if argv is None else list(argv))
    except BadInput as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except (MetisError, HypergraphError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
