"""Issue 37: where each rank's CPU goes, by part of the crawl, measured with CPU clocks (not sampled).

    nice -n 10 .venv/bin/python bench/rank_cpu.py [--ranks 1 8] [--runs 3] [--hosts 60] [--pages 4000]
        [--seed 37] [--port 18371] [--web DIR] [--split-turns] [--tree DIR] [--out bench/results/rank_cpu.json]

The crawl is ``bench/cpu_guard.py``'s ``new:default:K`` (this checkout's lab settings, everything
else at its default) on the same web and nginx. Every rank starts with a ``sitecustomize`` module
of this script's (on ``PYTHONPATH``; it changes no code of the crawler) that wraps a few methods
with the main thread's CPU clock (``time.thread_time``) and writes, at the rank's exit, the CPU of
each part *exclusive* of the wrapped parts inside it, so the parts add up to the main thread's
CPU:

``pages``        ``BatchRunner.process``: what abc does with an answer (WARC, parse, links,
                 routing, crawl log, validators, counters).
``answers``      ``BatchRunner.on_answer`` less ``process``: an answer's bookkeeping (batch, host
                 rest, retries, robots.txt and sitemap answers).
``fetch``        ``Fetcher.poll``: libcurl (``perform``, ``select``) and turning its transfers into
                 responses.
``turns``        ``BatchRunner.drive`` less the above: a loop turn's scheduling (Bucket,
                 batches, phase slots, the next wake-up).
``exchange``     ``RankCrawler._exchange`` less the fetching it does while it waits: MPI tests,
                 encoding and decoding the superstep's messages, the sleeps' wake-ups.
``loop rest``    ``RankCrawler.run`` less the above: supersteps, checkpoints, progress, rank 0's
                 graph and reports.
``setup and end`` ``run_crawl`` less ``run``: the session's start (settings, seeds, robots state)
                 and end (stats, graph, validator table, WARC index, manifest).
``start-up``     everything before ``run_crawl``: the interpreter, imports (NumPy, MPI's
                 initialization, lxml, pycurl, ABC), the command line.

With ``--split-turns`` the turn is split further (each part again exclusive of the others):
``t.plan`` (``BatchRunner.start`` less the two below), ``t.schedule`` (``Frontier.schedule``: the
Bucket), ``t.slots`` (``SlotGate.update``: the phase window, also asked by each request),
``t.leases`` (``SlotGate.take_leases``: MPI probes for leases) and ``t.wake-up``
(``Frontier.next_wakeup``); ``turns`` is then what is left of ``drive``. It also counts the
fetcher's polls (``Fetcher.poll`` calls) beside the planned turns (``drive`` calls): under phase
slots a turn may poll several times while it waits for a lease.

``--tree DIR`` measures another checkout (with its own ``.venv``) on the same web, e.g. the tree
before a change; its code must have the wrapped methods.

``other threads`` is the process's CPU (``time.process_time``) less its main thread's: rank 0's
statistics kernels. What no rank sees (``mpiexec``, hydra, MPI's finalization, the interpreter's
exit) is the whole tree's CPU (``harness.run_measured``) less the ranks' sum.

Why not py-spy (``bench/cpu_stages.py``): at more ranks than cores a sampler counts a rank that
waits for a core as busy, which overstates start-up (all ranks import at once) and the loop's
wake-ups. The CPU clocks count only CPU. A wrapped call costs a few microseconds of its own (two
clock reads and a Python frame), some 11,000 calls at 1 rank (an answer, a page, a loop turn):
about 2 % more CPU than an unwrapped crawl.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import nginx  # noqa: E402

#: the parts, in the order printed
PARTS = ("pages", "answers", "fetch", "turns", "exchange", "loop rest", "setup and end", "start-up")

#: the turn's own parts, printed after ``turns`` with ``--split-turns``
TURN_PARTS = ("t.plan", "t.schedule", "t.slots", "t.leases", "t.wake-up")

#: (module, class, method, part) wrapped in each rank
WRAPPED = (
    ("abc_crawler.crawl.fetching", "BatchRunner", "process", "pages"),
    ("abc_crawler.crawl.fetching", "BatchRunner", "on_answer", "answers"),
    ("abc_crawler.net.fetcher", "Fetcher", "poll", "fetch"),
    ("abc_crawler.crawl.fetching", "BatchRunner", "drive", "turns"),
    ("abc_crawler.crawl.loop", "RankCrawler", "_exchange", "exchange"),
    ("abc_crawler.crawl.loop", "RankCrawler", "run", "loop rest"),
)

#: wrapped too with ``--split-turns``
WRAPPED_TURNS = (
    ("abc_crawler.crawl.fetching", "BatchRunner", "start", "t.plan"),
    ("abc_crawler.sched.frontier", "Frontier", "schedule", "t.schedule"),
    ("abc_crawler.crawl.slots", "SlotGate", "update", "t.slots"),
    ("abc_crawler.crawl.slots", "SlotGate", "take_leases", "t.leases"),
    ("abc_crawler.sched.frontier", "Frontier", "next_wakeup", "t.wake-up"),
)

SITECUSTOMIZE = r'''
"""bench/rank_cpu.py's probe: CPU of a few methods, exclusive of the wrapped ones inside (see there)."""
import atexit, importlib, json, os, sys, time

_thread, _process = time.thread_time, time.process_time
_excl = {}
_calls = {}
_stack = [0.0]          # per open wrapped call: the CPU of the wrapped calls inside it so far
_marks = {}


def _wrap(module, cls, name, part):
    klass = getattr(importlib.import_module(module), cls)
    orig = getattr(klass, name)

    def probe(*args, **kwargs):
        _stack.append(0.0)
        t = _thread()
        try:
            return orig(*args, **kwargs)
        finally:
            spent = _thread() - t
            inner = _stack.pop()
            _excl[part] = _excl.get(part, 0.0) + spent - inner
            _calls[part] = _calls.get(part, 0) + 1
            _stack[-1] += spent

    probe.__name__, probe.__qualname__, probe.__doc__ = orig.__name__, orig.__qualname__, orig.__doc__
    setattr(klass, name, probe)


def _wrap_run_crawl():
    run = importlib.import_module("abc_crawler.run")
    orig = run.run_crawl

    def run_crawl(*args, **kwargs):
        _marks["enter"] = _thread()
        _stack.append(0.0)
        try:
            return orig(*args, **kwargs)
        finally:
            spent = _thread() - _marks["enter"]
            _excl["setup and end"] = spent - _stack.pop()
            _marks["leave"] = _thread()

    run.run_crawl = run_crawl


for _m, _c, _n, _p in WRAPPED:
    _wrap(_m, _c, _n, _p)
_wrap_run_crawl()


@atexit.register
def _dump():
    main, proc = _thread(), _process()
    out = dict(_excl)
    enter = _marks.get("enter")
    out["start-up"] = enter if enter is not None else main
    out["after"] = main - _marks["leave"] if "leave" in _marks else 0.0
    rank = os.environ.get("PMI_RANK", "0")
    with open(os.path.join(OUT, f"rank-{rank}.json"), "w") as fh:
        json.dump({"parts": out, "calls": _calls, "main_thread": main, "process": proc}, fh)
'''


def probe_dir(tmp: Path, split_turns: bool = False) -> Path:
    """A directory holding the probe as ``sitecustomize.py``, writing into ``tmp/out``."""
    d = tmp / "probe"
    d.mkdir(parents=True, exist_ok=True)
    (tmp / "out").mkdir(exist_ok=True)
    wrapped = WRAPPED + (WRAPPED_TURNS if split_turns else ())
    (d / "sitecustomize.py").write_text(f"OUT = {str(tmp / 'out')!r}\nWRAPPED = {wrapped!r}\n" + SITECUSTOMIZE)
    return d


def one_crawl(ranks: int, web: Path, tmp: Path, split_turns: bool = False, tree=None) -> dict:
    """One crawl with the probe in every rank: the tree's CPU, and each rank's parts."""
    probe = probe_dir(tmp, split_turns)
    for old in (tmp / "out").glob("rank-*.json"):
        old.unlink()
    row = harness.run_tree_abc(tree or harness.ROOT, ranks, web, tmp / "session", wrap=["env", f"PYTHONPATH={probe}"])
    files = sorted((tmp / "out").glob("rank-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    if len(files) != ranks:
        raise RuntimeError(f"expected {ranks} probe files in {tmp / 'out'}, found {len(files)}")
    per_rank = [json.loads(p.read_text()) for p in files]
    return {"pages": row["pages"], "tree_cpu_s": row["cpu_s"], "wall_s": row["wall_s"], "per_rank": per_rank}


def summarize(runs: list[dict]) -> dict:
    """Medians over runs of: each part summed over ranks, rank 0's parts, the other threads, the tree."""
    def med(f):
        return statistics.median(f(r) for r in runs)

    s = {"n_pages": runs[0]["pages"], "tree_cpu_s": med(lambda r: r["tree_cpu_s"]), "wall_s": med(lambda r: r["wall_s"])}
    for p in (*PARTS, *TURN_PARTS, "after"):
        s[p] = med(lambda r: sum(x["parts"].get(p, 0.0) for x in r["per_rank"]))
        s[f"rank0 {p}"] = med(lambda r: r["per_rank"][0]["parts"].get(p, 0.0))
    s["other threads"] = med(lambda r: sum(x["process"] - x["main_thread"] for x in r["per_rank"]))
    s["ranks"] = med(lambda r: sum(x["process"] for x in r["per_rank"]))
    s["not in ranks"] = med(lambda r: r["tree_cpu_s"] - sum(x["process"] for x in r["per_rank"]))
    s["turns n"] = med(lambda r: sum(x["calls"].get("turns", 0) for x in r["per_rank"]))
    s["answers n"] = med(lambda r: sum(x["calls"].get("answers", 0) for x in r["per_rank"]))
    s["polls n"] = med(lambda r: sum(x["calls"].get("fetch", 0) for x in r["per_rank"]))
    return s


def print_table(k: int, s: dict) -> None:
    tree = s["tree_cpu_s"]
    print(f"\nK={k}: {s['n_pages']} pages, whole tree {tree:.2f} CPU-s (medians), {s['turns n']:.0f} loop turns"
          f" ({s['polls n']:.0f} polls) for {s['answers n']:.0f} answers")
    print(f"  {'part':16s} {'CPU-s':>7s} {'share':>7s} {'µs/page':>8s}" + (f" {'rank 0':>7s}" if k > 1 else ""))
    split = any(s.get(p) for p in TURN_PARTS)
    rows = [*PARTS[:4], *(TURN_PARTS if split else ()), *PARTS[4:], "after", "other threads", "not in ranks"]
    for p in rows:
        v = s[p]
        r0 = f" {s[f'rank0 {p}']:7.3f}" if k > 1 and f"rank0 {p}" in s else ""
        print(f"  {p:16s} {v:7.3f} {100 * v / tree:6.1f}% {1e6 * v / s['n_pages']:8.1f}{r0}")
    print(f"  {'(sum)':16s} {sum(s[p] for p in rows):7.3f}  (parts are medians; the whole tree's median {tree:.3f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=60)
    ap.add_argument("--pages", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--port", type=int, default=18371)
    ap.add_argument("--web", default=None, help="a web directory to crawl instead of a generated one")
    ap.add_argument("--split-turns", action="store_true",
                    help="split the loop's turns into planning, Bucket, slots, leases and wake-up")
    ap.add_argument("--tree", default=None,
                    help="another checkout (a directory with its .venv) to measure instead of this one")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.runs < 1 or any(k < 1 for k in a.ranks):
        ap.error(f"--runs and --ranks must be at least 1, got --runs {a.runs} --ranks {a.ranks}")
    print(harness.describe_header("Issue 37: each rank's CPU by part of the crawl (CPU clocks)"), flush=True)
    tree = harness.checkout(a.tree) if a.tree else None
    print(f"tree: {tree or harness.ROOT}", flush=True)
    web = Path(a.web) if a.web else harness.generated_web(a.hosts, a.pages, a.seed, a.port)
    raw: dict[int, list[dict]] = {k: [] for k in a.ranks}
    with tempfile.TemporaryDirectory(prefix="abc-rankcpu-") as tmp, \
            nginx.serve(web, max_seconds=a.runs * len(a.ranks) * 600 + 300):
        for run in range(a.runs):
            for k in harness.rotated(list(a.ranks), run):
                raw[k].append(one_crawl(k, web, Path(tmp) / f"k{k}", a.split_turns, tree))
                print(f"[run {run + 1}/{a.runs}] K={k}: {raw[k][-1]['tree_cpu_s']:.2f} CPU-s", flush=True)
    summary = {k: summarize(v) for k, v in raw.items()}
    for k in a.ranks:
        print_table(k, summary[k])
    res = {"benchmark": "rank_cpu", "web": str(web), "args": vars(a), "summary": summary, "raw": raw}
    print(f"wrote {harness.write_result('rank_cpu', res, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
