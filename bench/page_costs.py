"""P2 by stage: the CPU a page costs after it is fetched, abc-crawl's path against the bare loop's.

    .venv/bin/python bench/page_costs.py [--runs 5] [--hosts 400] [--pages 20000] [--limit N]
                                        [--out bench/results/page_costs.json]

``bench/stack_limit.py`` measures whole crawls, where the network, the
machine's neighbours and start-up move the figures by ±10 %. This script
takes the fetch out: every 200 page of the generated web (the same web as
``stack_limit.py``, read from its files, in a fixed shuffled order) is handed
to each variant as the Response the fetcher would have built (nginx's head
and headers), in one process, each variant over all pages per round, rounds
interleaved (order rotated), CPU from ``time.process_time``:

``parse``        ``extract_links`` of every page (the loop and abc share it).
``loop``         the bare loop's per-page work in ``stack_limit.py``: parse,
                 then ``canonicalize`` + scope + fingerprint of every link.
``abc links``    abc's link path alone over the parsed pages:
                 ``LinkClassifier.targets`` (decision cache, trap limits,
                 owner) and ``Router.route`` (URL-seen set, report to rank 0,
                 frontier), fresh crawler state per round.
``abc links py`` the same with the link path's Python references in place of
                 its compiled pass (``LinkClassifier.targets_reference``,
                 which decides with ``classify_reference``, and
                 ``ada_url.join_url``: :func:`python_link_path`).
``abc warc``     ``RankWarc.write`` alone (request + response record).
``abc warc py``  the same with the writer's Python references in place of its
                 compiled pieces (the records' bytes, base32 of a digest,
                 the CDXJ line and its SURT key: :func:`python_warc_pieces`).
``abc``          ``BatchRunner.process``: everything abc does with a
                 response (WARC, parse, links, route, counters); the WARC
                 records that still wait in a batch are written (flushed)
                 inside the timing.
``abc batch 1``  the same with ``--warc-batch 1``: each page's WARC records
                 compressed as the page arrives, not 64 pages at a time.
``abc nowarc``   the same with ``--no-warc`` (the content digest is still
                 taken for duplicate detection).
``abc py links`` ``abc`` with the link path's Python references.
``abc py warc``  ``abc`` with the WARC writer's Python references.

Medians of µs per page; what abc adds over the loop is ``abc - loop``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import rotated, write_result  # noqa: E402
from stack_limit import canonical_links  # noqa: E402

VARIANTS = ("parse", "loop", "abc links", "abc links py", "abc warc", "abc warc py", "abc", "abc batch 1", "abc nowarc",
            "abc py links", "abc py warc")

_HEAD = [("Server", "nginx/1.22.1"), ("Date", "Wed, 25 Nov 2026 10:00:00 GMT"), ("Content-Type", None),
         ("Content-Length", None), ("Last-Modified", "Wed, 25 Nov 2026 09:00:00 GMT"), ("Connection", "keep-alive"),
         ("ETag", '"6565f0a0-1a2b"'), ("Accept-Ranges", "bytes")]


def load_pages(web: Path, limit: int | None, seed: int = 1) -> list[tuple[str, str, bytes]]:
    """(URL, Content-Type, body) of every 200 page with a file in the web's routes, shuffled."""
    routes = json.loads((web / "routes.json").read_text())
    port = json.loads((web / "manifest.json").read_text())["port"]
    out = []
    for host, paths in routes["hosts"].items():
        for path, r in paths.items():
            if r.get("status") == 200 and r.get("file"):
                out.append((f"http://{host}:{port}{path}", r["type"], (web / "sites" / host / r["file"]).read_bytes()))
    out.sort()
    random.Random(seed).shuffle(out)
    return out[:limit] if limit else out


def responses(pages):
    from abc_crawler.net.fetcher import Response

    out = []
    for url, ctype, body in pages:
        headers = [(k, ctype if k == "Content-Type" else str(len(body)) if k == "Content-Length" else v) for k, v in _HEAD]
        raw = ("HTTP/1.1 200 OK\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode()
        host = url.split("/")[2]
        now = time.time()
        out.append(Response(key=("page", host), url=url, status=200, status_line="HTTP/1.1 200 OK", headers=headers,
                            raw_head=raw, body=body, t_start=now, t_end=now,
                            request_headers=[("Host", host), ("User-Agent", "abc-crawler/0.1"),
                                             ("Accept", "text/html,*/*;q=0.5"), ("Accept-Encoding", "identity")]))
    return out


class _OneRank:
    """What RankCrawler asks of its communicator when it is built (no MPI: one process)."""
    rank, size = 0, 1

    def ranks_on_node(self) -> int:
        return 1


def _crawler(resolve: list[str], tmp: str, warc: bool, batch: int = 64):
    from abc_crawler.config import CrawlConfig
    from abc_crawler.crawl import RankCrawler, StopFlag
    from abc_crawler.web.ownership import HashAssignment
    from abc_crawler.web.scope import Scope

    # a contact: since issue 34 a configuration without a resolve list must name one (none is contacted here)
    cfg = CrawlConfig.build({"seeds": "seeds.txt", "warc": warc, "warc_batch": batch,
                             "contact": "https://example.invalid/abc-bench"})
    return RankCrawler(cfg, _OneRank(), Scope.from_lines(resolve), HashAssignment(1), [], tmp, StopFlag())


#: the variants run with the link path's Python references, and what they run
_PYTHON_LINKS = {"abc links py": "abc links", "abc py links": "abc"}
#: the variants run with the WARC writer's Python references, and what they run
_PYTHON_WARC = {"abc warc py": "abc warc", "abc py warc": "abc"}


@contextlib.contextmanager
def python_link_path():
    """The link path's Python references in place of its compiled pass while inside:
    ``LinkClassifier.targets_reference`` (the loop, ``classify_reference``, ``canonicalize_reference``,
    the trap limits' Python) and ada's join through ``ada_url``'s wrapper."""
    import ada_url
    from abc_crawler.crawl.links import LinkClassifier
    from abc_crawler.web import urls

    targets, join = LinkClassifier.targets, urls._join
    LinkClassifier.targets, urls._join = LinkClassifier.targets_reference, ada_url.join_url
    try:
        yield
    finally:
        LinkClassifier.targets, urls._join = targets, join


@contextlib.contextmanager
def python_warc_pieces():
    """The WARC writer's Python references in place of its compiled pieces while inside
    (:mod:`abc_crawler.store._warcrec`): ``page_records_reference``, ``record_reference``,
    ``b32_sha1_reference`` (the content digest) and ``cdxj_line_reference`` (which keys with
    ``surt_key_reference``)."""
    from abc_crawler.store import cdxj, warc

    names = ("page_records", "record", "b32_sha1", "cdxj_line")     # the names warc.py calls
    saved = [getattr(warc, n) for n in names]
    for n, ref in zip(names, (warc.page_records_reference, warc.record_reference, warc.b32_sha1_reference,
                              cdxj.cdxj_line_reference)):
        setattr(warc, n, ref)
    try:
        yield
    finally:
        for n, fn in zip(names, saved):
            setattr(warc, n, fn)


def measure(variant: str, pages, resolve: list[str]) -> float:
    """CPU seconds of one variant over all pages."""
    if variant in _PYTHON_LINKS:
        with python_link_path():
            return measure(_PYTHON_LINKS[variant], pages, resolve)
    if variant in _PYTHON_WARC:
        with python_warc_pieces():
            return measure(_PYTHON_WARC[variant], pages, resolve)
    from abc_crawler.web.parser import extract_links
    from abc_crawler.web.scope import Scope
    from abc_crawler.web.urls import fingerprint
    from abc_crawler.store.warc import RankWarc

    tmp = tempfile.mkdtemp(prefix="abc-pagecost-")
    try:
        if variant == "parse":
            bodies = [b for _, _, b in pages]
            t = time.process_time()
            for body in bodies:
                extract_links(body)
            return time.process_time() - t
        if variant == "loop":                       # stack_limit.py's per-page work (mode "loop")
            scope = Scope.from_lines(resolve)
            t = time.process_time()
            for url, _, body in pages:
                p = extract_links(body)
                canonical_links(url, p.base, p.links, scope, None)
            return time.process_time() - t
        if variant == "abc links":
            parsed = [(url, fingerprint(url), extract_links(body)) for url, _, body in pages]
            c = _crawler(resolve, tmp, False)
            t = time.process_time()
            for url, fp, p in parsed:
                c.router.route(fp, c.links.targets(url, p.base, p.links))
            return time.process_time() - t
        rs = responses(pages)
        if variant == "abc warc":
            w = RankWarc(tmp, 0)
            t = time.process_time()
            for r in rs:
                w.write(r)
            w.close()
            return time.process_time() - t
        c = _crawler(resolve, tmp, variant != "abc nowarc", 1 if variant == "abc batch 1" else 64)
        t = time.process_time()
        for r in rs:
            c.runner.process(r)
        c.warc.flush()
        dt = time.process_time() - t
        c.warc.close()
        return dt
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18081)
    ap.add_argument("--limit", type=int, default=None, help="use only the first N pages")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.runs < 1:
        ap.error(f"--runs: expected at least 1, got {a.runs}")
    print(harness.describe_header("P2 by stage: CPU per fetched page, abc against the bare loop"), flush=True)
    web = harness.generated_web(a.hosts, a.pages, a.seed, a.port)
    resolve = [ln.strip() for ln in (web / "resolve.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    pages = load_pages(web, a.limit)
    print(f"{len(pages)} pages of {web} ({sum(len(b) for _, _, b in pages) / len(pages):.0f} bytes each on average)")
    raw: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for run in range(a.runs):
        for v in rotated(list(VARIANTS), run):
            raw[v].append(measure(v, pages, resolve))
        print(f"[run {run + 1}/{a.runs}] " + "  ".join(f"{v} {1e6 * raw[v][-1] / len(pages):.1f}" for v in VARIANTS)
              + " us/page", flush=True)
    med = {v: 1e6 * statistics.median(raw[v]) / len(pages) for v in VARIANTS}
    print(f"\nmedians of {a.runs} interleaved runs, µs of CPU per page:")
    for v in VARIANTS:
        print(f"  {v:12s} {med[v]:7.1f}")
    print(f"  the compiled link pass: {med['abc links py'] - med['abc links']:.1f} µs per page less on the link path alone,"
          f" {med['abc py links'] - med['abc']:.1f} µs in the whole page (abc / abc py links = {med['abc'] / med['abc py links']:.3f})")
    print(f"  the compiled WARC pieces: {med['abc warc py'] - med['abc warc']:.1f} µs per page less in the writer alone,"
          f" {med['abc py warc'] - med['abc']:.1f} µs in the whole page (abc / abc py warc = {med['abc'] / med['abc py warc']:.3f})")
    print(f"  abc adds over the loop: {med['abc'] - med['loop']:.1f} µs per page (WARC {med['abc'] - med['abc nowarc']:.1f});"
          f" loop / abc = {100 * med['loop'] / med['abc']:.1f} % (without WARC {100 * med['loop'] / med['abc nowarc']:.1f} %)")
    res = {"benchmark": "P2 page_costs", "web": str(web), "pages": len(pages), "args": vars(a),
           "us_per_page": med, "raw_cpu_s": raw}
    print(f"wrote {write_result('page_costs', res, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
