"""Issue 37: where a crawl's CPU goes at default settings, by stage, from py-spy profiles of every rank.

    nice -n 10 .venv/bin/python bench/cpu_stages.py [--tree REV_OR_DIR] [--ranks 1 8] [--runs 1]
        [--rate 100] [--hosts 60] [--pages 4000] [--seed 37] [--port 18371]
        [--web DIR (a web directory instead, e.g. bench/corpus.py's)] [--out bench/results/cpu_stages.json]

The crawl is ``bench/cpu_guard.py``'s ``new:default:K`` (the tree's lab settings and nothing else:
statistics, WARC, requisites, sitemaps, checkpoints, crawl log and progress at their defaults) on the
same web and nginx, with every rank started under ``py-spy record --nonblocking`` (``--rate`` Hz,
Python frames, idle samples left out, so a sample is a thread on a CPU; the statistics kernels'
thread is sampled beside the main one). The files of all ranks are summed (rank 0 is also shown on
its own at K > 1: it builds the graph and runs the kernels). ``py-spy`` comes with ``make
bench-setup`` (the ``bench`` extra); ``--tree`` is profiled with this venv's py-spy.

What a sample is: py-spy counts a thread as busy when it is not blocked in the kernel, so a
thread that is runnable but waiting for a core counts too. At 1 rank (two threads, two cores) the
shares are shares of CPU; with more ranks than cores they are shares of runnable time, which
overstates what all ranks do at once (start-up: every rank imports at the same moment; the end: the
ranks wait for rank 0 together) and keeps the proportions of the rest. So the shares of the crawl
proper, without start-up and the session's start and end, are printed too, and the CPU of those is
better measured whole: ``mpiexec -n K python -c "import ...; Barrier()"`` for start-up, and the
whole tree's CPU less the ranks' stats.json ``cpu_s`` (taken before the session is written) for the
end. MPICH polls while it waits, so a rank waiting in MPI is busy, and that CPU is real
(``bench/cpu_guard.py`` counts it).

A sample's stage is decided by its stack, from the leaf upwards: the first frame of ABC's code whose
file (and, for a few, function) is in :data:`RULES` names it; a stack inside an import is start-up.
Library frames (lxml, pycurl, zlib, hashlib, mpi4py, json, numpy) have no rule, so their time goes
to the ABC function that called them: lxml's to parse, zlib's and SHA-1's to WARC, MPI's to the
exchange. What is not ABC's code at all (py-spy sees Python threads only; mpiexec and hydra are C)
is not in the table; the whole-tree CPU of the same settings is ``bench/cpu_guard.py``'s.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import nginx  # noqa: E402

#: (stage, file regex on the path, function regex or None); the first rule matching a frame decides
RULES: list[tuple[str, str, str | None]] = [
    ("checkpoints and rank 0's report journal", r"abc_crawler/(checkpoint|crawl/state)\.py$", None),
    ("checkpoints and rank 0's report journal", r"abc_crawler/", r"write_checkpoint|take_increment|counts_for_checkpoint|"
                                                                 r"state_for_checkpoint|^checkpoint$|as_plain"),
    ("CDXJ index", r"abc_crawler/cdxj\.py$", None),
    ("CDXJ index", r"abc_crawler/warc\.py$", r"_index_status|_close_file"),
    ("validators", r"abc_crawler/validators\.py$", None),
    ("validators", r"abc_crawler/warc\.py$", r"_placed"),
    ("WARC (digest, records, gzip, write)", r"abc_crawler/warc\.py$", None),
    ("parse (lxml link extraction)", r"abc_crawler/parser\.py$", None),
    ("MPI collectives of start and end (ranks busy-waiting for rank 0)", r"abc_crawler/exchange\.py$",
     r"bcast|gather|barrier|allreduce|scatter"),
    ("exchange (MPI, superstep messages)", r"abc_crawler/crawl/routing\.py$", r"payloads|receive|take_report|drop_outbox"),
    ("exchange (MPI, superstep messages)", r"abc_crawler/(exchange|robots)\.py$", r"^(Communicator|SuperstepExchange|_wait|"
                                                                                   r"encode_shared|decode_shared)|"
                                                                                   r"wait|test|start_superstep|"
                                                                                   r"encode_shared|decode_shared"),
    ("exchange (MPI, superstep messages)", r"abc_crawler/crawl/loop\.py$", r"_exchange|frames|unframe|_status|_set_budget|"
                                                                           r"_idle_while_exchanging"),
    ("exchange (MPI, superstep messages)", r"abc_crawler/coordinator\.py$", r"encode_report"),
    ("exchange (MPI, superstep messages)", r"abc_crawler/crawl/slots\.py$", r"announce|receive_work"),
    ("link path (classify, canonicalize, scope, traps)", r"abc_crawler/(crawl/links|urls|scope|limits|urlline)\.py$", None),
    ("link path (classify, canonicalize, scope, traps)", r"abc_crawler/crawl/pages\.py$", r"_distinct|_header_links"),
    ("routing (owner, seen set, admit, host quotas, report)", r"abc_crawler/(crawl/routing|seen|ownership|assignments|"
                                                               r"crawl/quotas|crawl/discovery)\.py$", None),
    ("routing (owner, seen set, admit, host quotas, report)", r"abc_crawler/urlstates\.py$",
     r"^(URLStates\.)?(add|_append|_new_origin|_new_chunk|_host_added)$"),
    ("crawl log", r"abc_crawler/(crawllog|crawl/attempts)\.py$", None),
    ("statistics kernels (rank 0's thread)", r"(abc_crawler/)?kernels/", None),
    ("statistics kernels (rank 0's thread)", r"abc_crawler/kernelworker\.py$", None),
    ("statistics kernels (rank 0's thread)", r"abc_crawler/coordinator\.py$", r"KernelWorker|^_run$|^_apply$|_distances_due|"
                                                                              r"_publish|^_finish$"),
    ("rank 0's graph (reports into the graph)", r"abc_crawler/(coordinator|webgraph)\.py$", None),
    ("progress, dashboard, stall watch", r"abc_crawler/(progress|watchdog|crawl/stall|dashboard/.*)\.py$", None),
    ("robots.txt and sitemaps", r"abc_crawler/(robots|sitemaps)\.py$", None),
    ("robots.txt and sitemaps", r"abc_crawler/crawl/(fetching|pages)\.py$", r"robots|sitemap"),
    ("page outcome (decode, status, counters)", r"abc_crawler/crawl/(pages|counters)\.py$", None),
    ("fetch bookkeeping (pycurl, batches, frontier, slots, politeness)",
     r"abc_crawler/(fetcher|crawl/fetching|frontier|urlstates|crawl/slots|phases|politeness|visits|crawl/decisions|"
     r"addresses|ipgroups|clock|proxies|tls)\.py$", None),
    ("session start and end (setup, graph, stats.json, validators.npz)",
     r"abc_crawler/(run|session|config|cli|gather|crash|logs|graphexport|graphrank|units|stopping)\.py$", None),
    ("superstep loop (the rest of loop.py)", r"abc_crawler/crawl/loop\.py$", None),
]
#: the concern folders of abc_crawler since 4cceadb (a module's stage is the same in either layout)
_FOLDERS = re.compile(r"abc_crawler/(?:net|store|mpi|sched|web|graph)/")
_RULES = [(s, re.compile(f), re.compile(n) if n else None) for s, f, n in RULES]
_IMPORT = {"_find_and_load", "_find_and_load_unlocked", "_load_unlocked", "exec_module", "_call_with_frames_removed"}
STARTUP = "start-up (imports, MPI init)"
OTHER = "other (interpreter, libraries outside ABC's calls)"


def stage_of(frames: list[dict], stack: list[int]) -> str:
    """The stage of one sample (``stack``: frame indices, root first)."""
    for i in stack:
        if frames[i]["name"] in _IMPORT or frames[i]["name"].endswith("._find_and_load"):
            return STARTUP
    for i in reversed(stack):
        f = frames[i]
        path, name = _FOLDERS.sub("abc_crawler/", f.get("file") or ""), f["name"]
        for stage, frx, nrx in _RULES:
            if frx.search(path) and (nrx is None or nrx.search(name)):
                return stage
    return OTHER


def profile(tree: Path, ranks: int, web: Path, out_dir: Path, rate: int, tmp: Path, label: str,
            extra: list[str] = ()) -> dict:
    """One crawl with every rank under py-spy; the per-rank speedscope files and the run's figures."""
    pyspy = shutil.which("py-spy", path=str(harness.BIN)) or "py-spy"
    prefix = out_dir / f"cpu-stages-{label}-rank"
    wrap = ["sh", "-c", f'exec {pyspy} record --nonblocking -r {rate} -f speedscope -o {prefix}-"$PMI_RANK".json'
                        ' -- "$@" >/dev/null 2>&1', "sh"]
    for old in out_dir.glob(f"cpu-stages-{label}-rank-*.json"):
        old.unlink()
    row = harness.run_tree_abc(tree, ranks, web, tmp / f"s-{label}", *extra, wrap=wrap, timeout=1800)
    files = sorted(out_dir.glob(f"cpu-stages-{label}-rank-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    if len(files) != ranks:
        raise RuntimeError(f"expected {ranks} py-spy files {prefix}-N.json, found {len(files)}")
    return {"files": files, "run": {k: v for k, v in row.items() if not k.startswith("_")},
            "rank_cpu_s": [p["cpu_s"] for p in row["_stats"]["per_rank"]]}


OUTSIDE = (STARTUP, "MPI collectives of start and end (ranks busy-waiting for rank 0)",
           "session start and end (setup, graph, stats.json, validators.npz)")


def with_crawl_shares(s: dict) -> dict:
    """``s`` plus ``stages_crawl``: the shares of the crawl proper (supersteps), start-up and the
    session's start and end left out. With more ranks than cores py-spy overstates those (every
    rank imports at once, and the ranks wait for rank 0 together at the end; a runnable thread
    waiting for a core is sampled as busy): their CPU is better measured whole (see the docstring)."""
    rest = sum(v for k, v in s["stages"] if k not in OUTSIDE) or 1.0
    s["stages_crawl"] = [(k, round(100 * v / rest, 1)) for k, v in s["stages"] if k not in OUTSIDE]
    return s


def print_summary(title: str, s: dict, top: int = 15) -> None:
    print(f"\n{title}: {s['samples']} samples = {s['seconds']} s on CPU (or runnable)")
    crawl = dict(s["stages_crawl"])
    print("  % of samples, % of the crawl proper (no start-up, session start and end), stage")
    for k, v in s["stages"]:
        print(f"  {v:5.1f} %  {('%5.1f %%' % crawl[k]) if k in crawl else '       '}  {k}")
    print("  top self time (function):")
    for k, v in s["self"][:top]:
        print(f"    {v:5.1f} %  {k}")
    print("  top inclusive time (function):")
    for k, v in s["inclusive"][:top]:
        print(f"    {v:5.1f} %  {k}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", default=str(harness.ROOT), help="the tree to profile: a directory with its .venv or a git revision")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--runs", type=int, default=1, help="profiled crawls per K (their samples summed)")
    ap.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    ap.add_argument("--hosts", type=int, default=60)
    ap.add_argument("--pages", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--port", type=int, default=18371)
    ap.add_argument("--web", default=None, help="a web directory to crawl instead of a generated one (e.g. the "
                                                "corpus of bench/corpus.py)")
    ap.add_argument("--crawl-arg", action="append", default=[], metavar="ARG",
                    help="one more abc-crawl argument (repeat it; e.g. --crawl-arg=--no-stats)")
    ap.add_argument("--label", default="", help="a name in the profile files' names (two trees' profiles side by side)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    tree = harness.checkout(args.tree)
    print(harness.describe_header(f"issue 37: CPU by stage at default settings, tree {tree}", ["py-spy"]), flush=True)
    web = Path(args.web) if args.web else harness.generated_web(args.hosts, args.pages, seed=args.seed, port=args.port)
    if not (web / "manifest.json").is_file():
        ap.error(f"--web {web}: no manifest.json (a web directory of abc-testweb generate or bench/corpus.py)")
    out_dir = harness.RESULTS
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="abc-cpu-stages-"))
    result: dict = {"benchmark": "issue 37 cpu_stages", "tree": str(tree), "web": str(web), "args": vars(args),
                    "lab_flags": harness.lab_flags(tree), "crawl_args": args.crawl_arg, "profiles": {}}
    try:
        with nginx.serve(web, max_seconds=len(args.ranks) * args.runs * 1800 + 600):
            for k in args.ranks:
                runs = [profile(tree, k, web, out_dir, args.rate, tmp, f"{args.label}{k}r-{i}", args.crawl_arg)
                        for i in range(args.runs)]
                files = [f for r in runs for f in r["files"]]
                entry = {"all": with_crawl_shares(harness.summarize_speedscope(files, stage_of)),
                         "runs": [{"run": r["run"], "rank_cpu_s": r["rank_cpu_s"],
                                   "files": [str(f.relative_to(harness.ROOT)) for f in r["files"]]} for r in runs]}
                for r in runs:
                    # (the whole tree's rusage misses the ranks here: py-spy does not reap its child)
                    print(f"K={k}: {r['run']['pages']} pages, wall {r['run']['wall_s']:.1f} s, the ranks' CPU"
                          f" (stats.json) {sum(r['rank_cpu_s']):.2f} s (rank 0 {r['rank_cpu_s'][0]:.2f} s) under py-spy")
                print_summary(f"K={k}, all ranks", entry["all"])
                if k > 1:
                    entry["rank0"] = with_crawl_shares(harness.summarize_speedscope([r["files"][0] for r in runs], stage_of))
                    entry["others"] = with_crawl_shares(harness.summarize_speedscope([f for r in runs for f in r["files"][1:]],
                                                                                     stage_of))
                    print_summary(f"K={k}, rank 0", entry["rank0"], 8)
                    print_summary(f"K={k}, ranks 1..{k - 1}", entry["others"], 8)
                result["profiles"][str(k)] = entry
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nresult: {harness.write_result('cpu_stages', result, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
