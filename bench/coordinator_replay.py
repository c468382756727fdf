#!/usr/bin/env python
"""Does rank 0 keep up at cluster scale? (issue 35, item 4)

Feeds rank 0's :class:`abc_crawler.graph.coordinator.Coordinator` — with the statistics kernels on
(:class:`~abc_crawler.graph.coordinator.KernelWorker`, the crawl's defaults) and the live host ranks —
superstep reports as ``--ranks`` (64) crawl ranks would send them, at a rising rate: for each
target rate R pages/s, ``--steps`` supersteps of ``--superstep-seconds`` (1 s) whose reports hold
R × superstep-seconds pages in all, each page with ``--links`` links (a share to pages crawled
before, the rest to new URLs, whose text travels in the report as the crawl sends it), spread over
``--hosts`` hosts. The reports are encoded before the clock starts (the ranks make them); rank 0's
part is timed: decoding and merging every report of a superstep and closing it
(``consume`` × ranks + ``end_superstep``), with the kernel thread working beside it as in a crawl.

Per rate it prints the seconds rank 0's loop needs per superstep (median and last), the statistics
kernels' backlog (pages handed to the thread that its figures do not count yet) after the last
superstep and its trend, and whether rank 0 kept up: its loop within the superstep's time and the
backlog not growing from superstep to superstep. The highest rate that kept up is the figure; what
limits the next one is named (the loop, or the kernel thread).

    .venv/bin/python bench/coordinator_replay.py                       # 64 ranks, 2,500 .. 40,000 pages/s
    .venv/bin/python bench/coordinator_replay.py --rates 5000 20000 --steps 8
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness  # noqa: E402

from abc_crawler.graph.coordinator import Coordinator, SuperstepReport, encode_report  # noqa: E402
from abc_crawler.graph.kernelworker import KernelWorker  # noqa: E402
from abc_crawler.graph.hostranks import LiveHostRanks  # noqa: E402
from abc_crawler.web.urls import fingerprint  # noqa: E402


class Web:
    """A growing synthetic web: URL ids, their text and fingerprints, and who crawled what."""

    def __init__(self, hosts: int, seed: int):
        self.rng = np.random.default_rng(seed)
        self.hosts = hosts
        self.urls: list[str] = []
        self.fps: list[int] = []
        self.crawled = 0                    # URL ids below this were crawled (pages)
        self.reported: list[set[int]] = []  # per rank: URL ids whose text it sent already

    def new_url(self) -> int:
        i = len(self.urls)
        u = f"http://h{int(self.rng.integers(self.hosts)):05d}.test/p{i}.html"
        self.urls.append(u)
        self.fps.append(fingerprint(u))
        return i

    def reports(self, ranks: int, pages: int, links: int, old_share: float, step: int) -> list[bytes]:
        """One superstep's encoded reports: ``pages`` new pages over the ranks, each with its links."""
        while len(self.reported) < ranks:
            self.reported.append(set())
        while len(self.urls) < self.crawled + pages:
            self.new_url()
        out = []
        per = np.full(ranks, pages // ranks)
        per[: pages % ranks] += 1
        page = self.crawled
        for r in range(ranks):
            rep = SuperstepReport(rank=r, superstep=step)
            mine = self.reported[r]
            for _ in range(int(per[r])):
                fp = self.fps[page]
                rep.page_fp.append(fp)
                rep.page_status.append(200)
                rep.page_bytes.append(4000)
                rep.page_node.append(True)
                rep.page_kind.append("")
                if page not in mine:
                    mine.add(page)
                    rep.new_fp.append(fp)
                    rep.new_urls.append(self.urls[page])
                n_old = int(links * old_share)
                targets = ([int(t) for t in self.rng.integers(0, max(page, 1), n_old)]
                           + [self.new_url() for _ in range(links - n_old)])
                for t in targets:
                    rep.link_src.append(fp)
                    rep.link_dst.append(self.fps[t])
                    rep.link_kind.append(0)
                    if t not in mine:
                        mine.add(t)
                        rep.new_fp.append(self.fps[t])
                        rep.new_urls.append(self.urls[t])
                page += 1
            rep.send_bytes = [0] * ranks
            rep.send_urls = [0] * ranks
            out.append(encode_report(rep))
        self.crawled = page
        return out


def run_rate(rate: int, a, web: Web, co: Coordinator, step0: int) -> dict:
    pages = int(rate * a.superstep_seconds)
    loop, behind = [], []
    step = step0
    for _ in range(a.steps):
        reps = web.reports(a.ranks, pages, a.links, a.old_share, step)        # the ranks' work, not timed
        t = time.perf_counter()
        for data in reps:
            co.consume(data)
        co.end_superstep(step, float(step))
        loop.append(time.perf_counter() - t)
        # what a superstep's wait leaves the kernel thread: the rest of the superstep's time
        time.sleep(max(0.0, a.superstep_seconds - loop[-1]))
        done = int(co.kernels.summary().get("nodes") or 0)
        behind.append(co.n_nodes - done)
        step += 1
    grows = len(behind) >= 3 and behind[-1] > behind[len(behind) // 2] > behind[0] and behind[-1] > pages
    kept = statistics.median(loop) <= a.superstep_seconds and not grows
    return {"rate": rate, "pages_per_step": pages, "loop_s_median": round(statistics.median(loop), 4),
            "loop_s_last": round(loop[-1], 4), "kernel_backlog": behind, "backlog_grows": grows,
            "kept_up": kept, "nodes": co.n_nodes, "limit": None if kept else (
                "rank 0's loop (decode + merge)" if statistics.median(loop) > a.superstep_seconds
                else "the statistics kernels' thread")}, step


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--rates", type=int, nargs="+", default=[2500, 5000, 10000, 20000, 40000])
    ap.add_argument("--steps", type=int, default=6, help="supersteps per rate")
    ap.add_argument("--superstep-seconds", type=float, default=1.0)
    ap.add_argument("--links", type=int, default=10, help="links per page")
    ap.add_argument("--old-share", type=float, default=0.5, help="share of links to URLs known before")
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--stats-max-pages", type=int, default=20000, help="abc-crawl's --stats-max-pages")
    ap.add_argument("--out", help="result JSON (default bench/results/coordinator_replay.json)")
    a = ap.parse_args()
    web = Web(a.hosts, seed=35)
    co = Coordinator(a.ranks, KernelWorker(a.stats_max_pages), host_ranks=LiveHostRanks())
    rows, step = [], 0
    print(f"{a.ranks} ranks, {a.links} links a page ({a.old_share:.0%} to known URLs), {a.hosts} hosts, "
          f"supersteps of {a.superstep_seconds} s, statistics kernels and live host ranks on", flush=True)
    for rate in a.rates:
        row, step = run_rate(rate, a, web, co, step)
        rows.append(row)
        print(f"{rate:>7,} pages/s: loop {row['loop_s_median']:.3f} s a superstep (last {row['loop_s_last']:.3f}), "
              f"kernel backlog {row['kernel_backlog'][-1]:,} pages ({'growing' if row['backlog_grows'] else 'steady'}), "
              f"{row['nodes']:,} pages so far: {'kept up' if row['kept_up'] else 'fell behind: ' + row['limit']}",
              flush=True)
    best = max((r["rate"] for r in rows if r["kept_up"]), default=0)
    print(f"highest rate kept up: {best:,} pages/s (goal 20,000)")
    co.kernels.close()
    harness.write_result("coordinator_replay", {"args": vars(a), "machine": harness.machine_info(), "rates": rows,
                                                "highest_kept_up": best}, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
