#!/usr/bin/env python
"""One rank's URL-seen set and frontier under ``--memory-budget`` (issue 35, item 3), no fetching.

``--urls`` synthetic URLs (``http://hK.test/pN``, N counting per host, hosts drawn at random from
``--hosts``) go through the routing path of one rank — :class:`~abc_crawler.crawl.routing.Router`
with the seen set and the frontier the crawl builds for the budget (``SpillingSeen``, ``Frontier``
with its disk queues) — as pages of ``--links`` links, a superstep's exchange every ``--pages``
pages. Meanwhile the frontier gives URLs out through its Bucket (scheduled, taken, completed) at
``--take`` URLs per URL routed (below 1: it grows), and at the end it is drained.

Checked as they come out, with no record per URL: every URL exactly once and each host's URLs in
the order they were linked (host K's next URL must be pN for the next N). Printed: the RSS after
set-up (the baseline), the peak RSS (``VmHWM``) and its excess over the baseline, against the
budget; what spilled (seen runs, frontier disk bytes); where the memory goes at the end (the
structures' own counts); the time. Each budget runs in its own process, one after the other.

    .venv/bin/python bench/frontier_spill.py --urls 10000000 --budgets 256M
    .venv/bin/python bench/frontier_spill.py --urls 2000000 --budgets 64M 64G      # with and without spilling
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def run_one(urls: int, hosts: int, links: int, pages: int, take: float, budget: int, seed: int) -> dict:
    import numpy as np

    from abc_crawler.crawl.counters import RankCounters
    from abc_crawler.crawl.quotas import HostQuotas
    from abc_crawler.crawl.routing import Router
    from abc_crawler.sched.budget import within_budget
    from abc_crawler.sched.frontier import Frontier
    from abc_crawler.web.urls import fingerprint

    spill = Path(tempfile.mkdtemp(prefix="abc-spill-bench-"))
    f = Frontier()
    seen = within_budget(f, budget, spill, 0, checkpoints=False)
    router = Router(0, 1, f, seen, RankCounters(), HostQuotas(10 ** 12, 0, 1, site_level=False))
    rng = np.random.default_rng(seed)
    nxt_in = np.zeros(hosts, dtype=np.int64)      # next path number linked, per host
    nxt_out = np.zeros(hosts, dtype=np.int64)     # next path number expected out, per host
    names = [f"h{k}.test" for k in range(hosts)]
    bad = {"order": 0, "foreign": 0}
    out = 0

    def take_some(n: int, now: float) -> int:
        nonlocal out
        got = 0
        while got < n:
            f.schedule(now)
            els = f.ready(now, eager=True)
            if not els:
                break
            for e in els:
                for i in e.urls:
                    u = f.url(i)
                    h = int(u[8:u.index(".", 8)])
                    p = int(u[u.rindex("/p") + 2:])
                    if p != nxt_out[h]:
                        bad["order"] += 1
                    nxt_out[h] = p + 1
                    f.complete(i)
                    got += 1
                f.finish(e, now, 0.0)
        out += got
        return got

    base = _status("VmRSS")
    peak = {"rss": 0}
    t0 = time.perf_counter()
    routed = 0
    debt = 0.0
    page = 0
    src = fingerprint("http://seed.test/")
    while routed < urls:
        n = min(links, urls - routed)
        hs = rng.integers(0, hosts, size=n)
        targets = []
        for h in hs.tolist():
            u = f"http://{names[h]}/p{nxt_in[h]}"
            nxt_in[h] += 1
            targets.append((u, fingerprint(u), 0, 0))
        router.route(src, targets, tally=None)
        routed += n
        page += 1
        if page % pages == 0:
            router.payloads()                         # the exchange: the seen set's disk check, spills
            router.take_report(page)
            if (page // pages) % 8 == 0:
                rss = _status("VmRSS")
                if rss > peak["rss"]:                 # what the structures hold at the highest RSS seen
                    peak.update(rss=rss, at_url=routed, seen_table=seen.mem.nbytes, frontier=f.nbytes(),
                                columns_urls=len(f.states), waiting_in_memory=f.n_in_list,
                                discovery=router.discovery.nbytes())
            debt += take * pages * links
            debt -= take_some(int(debt), float(page))
    router.payloads()
    while f.pending:
        if not take_some(1 << 20, 1e9):
            break
    secs = time.perf_counter() - t0
    missing = int((nxt_in - nxt_out).sum())
    res = {
        "budget": budget, "urls": urls, "hosts": hosts, "out": out, "missing": missing,
        "out_of_order": bad["order"], "baseline_rss": base, "peak_rss": _status("VmHWM"),
        "seen_spills": seen.spills, "seen_runs": len(seen.runs.runs), "seen_disk_bytes": seen.runs.bytes_written,
        "frontier_disk_bytes": f.overflow_bytes_written, "seconds": secs,
        "at_peak": peak,
        "end": {"seen_table": seen.mem.nbytes, "frontier": f.nbytes(), "discovery": router.discovery.nbytes(),
                "urlstates_entries": len(f)},
    }
    f.close_overflow()
    seen.close()
    shutil.rmtree(spill, ignore_errors=True)
    return res


def main() -> None:
    from abc_crawler.units import parse_size

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--urls", type=int, default=10_000_000)
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--links", type=int, default=50, help="links per page")
    ap.add_argument("--pages", type=int, default=256, help="pages per superstep (the crawl's --superstep-pages)")
    ap.add_argument("--take", type=float, default=0.3, help="URLs given out per URL routed, while routing")
    ap.add_argument("--budgets", nargs="+", default=["256M"], help="--memory-budget values, each its own run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(run_one(a.urls, a.hosts, a.links, a.pages, a.take, parse_size(a.one), a.seed)))
        return
    for b in a.budgets:
        r = subprocess.run([sys.executable, __file__, "--one", b, "--urls", str(a.urls), "--hosts", str(a.hosts),
                            "--links", str(a.links), "--pages", str(a.pages), "--take", str(a.take),
                            "--seed", str(a.seed)], capture_output=True, text=True)
        if r.returncode:
            print(r.stderr[-3000:])
            sys.exit(r.returncode)
        x = json.loads(r.stdout.strip().splitlines()[-1])
        mb = 1 << 20
        ok = x["missing"] == 0 and x["out_of_order"] == 0 and x["out"] == x["urls"]
        print(f"--memory-budget {b}: {x['urls']:,} URLs over {x['hosts']:,} hosts in {x['seconds']:.0f} s "
              f"({x['urls'] / x['seconds']:,.0f} URLs/s)")
        print(f"  out: {x['out']:,}, missing {x['missing']}, out of order {x['out_of_order']}: "
              f"{'every URL once, each host in order' if ok else 'WRONG'}")
        print(f"  RSS: baseline {x['baseline_rss'] / mb:.0f} MB, peak {x['peak_rss'] / mb:.0f} MB, "
              f"peak - baseline {(x['peak_rss'] - x['baseline_rss']) / mb:.0f} MB "
              f"(budget {x['budget'] / mb:.0f} MB: {'within' if x['peak_rss'] - x['baseline_rss'] <= x['budget'] else 'OVER'})")
        print(f"  spilled: seen set {x['seen_spills']} times ({x['seen_runs']} runs, {x['seen_disk_bytes'] / mb:.0f} MB "
              f"written), frontier {x['frontier_disk_bytes'] / mb:.0f} MB written")
        p = x["at_peak"]
        if p.get("at_url"):
            print(f"  at the highest RSS sampled ({p['rss'] / mb:.0f} MB, {p['at_url']:,} URLs routed): seen table "
                  f"{p['seen_table'] / mb:.1f} MB, frontier {p['frontier'] / mb:.1f} MB ({p['columns_urls']:,} URLs in "
                  f"the columns, {p['waiting_in_memory']:,} waiting in memory), discovery {p['discovery'] / mb:.1f} MB")
        e = x["end"]
        print(f"  at the end: seen table {e['seen_table'] / mb:.1f} MB, frontier {e['frontier'] / mb:.1f} MB "
              f"({e['urlstates_entries']:,} URLStates entries), discovery {e['discovery'] / mb:.1f} MB")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
