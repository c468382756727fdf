"""P2: how close abc-crawl (1 rank) comes to a bare pycurl + lxml + canonicalize loop over the same URLs.

    .venv/bin/python bench/stack_limit.py [--web synthetic|corpus] [--runs 5] [--hosts 400] [--pages 20000]
                                         [--no-warc-run] [--warc-batch-run N]
                                         [--out bench/results/stack_limit.json]

The URL list is what a 1-rank abc-crawl of the web requested (its
graph.npz, ``url_rank >= 0``; robots.txt not included), taken from the first
abc-crawl run. Then, interleaved for ``--runs`` rounds (order rotated each
round), each in its own process on the same nginx:

``fetch``        pycurl ``CurlMulti``, 32 easy handles, one keep-alive
                 connection per host, the URLs of a host fetched in batches of
                 16 over it (abc's Bucket: L = 16, 32 hosts in flight), body
                 collected with a write callback into a list and joined, as
                 abc's fetcher does; no parsing. The ceiling of the stack.
``fetch+parse``  + ``abc_crawler.web.parser.extract_links`` on every 200
                 ``text/html`` body (lxml, the crawler's own function).
``loop``         + ``abc_crawler.web.urls.canonicalize(href, base)`` of every link
                 and of every redirect's Location, the scope test on the host
                 and the 64-bit fingerprint: the per-page work of the crawler
                 without frontier, Bucket, URL-seen set, MPI, WARC or session
                 output. **The stack limit** as the issue defines it.
``loop+cache``   + the crawler's own decision cache (``LinkClassifier.targets``:
                 a relative href resolves the same on every page of one
                 directory, so the canonical URL is cached per (base
                 directory, href)): the stricter limit, since abc-crawl has it.
``abc-1``        ``mpiexec -n 1 abc-crawl --no-stats --politeness-delay 0``
                 (WARC and session written as usual).
``abc-1-nowarc`` (``--no-warc-run``) the same with ``--no-warc``.
``abc-1-batchN`` (``--warc-batch-run N``) the same with ``--warc-batch N``
                 (WARC records compressed N pages at a time; the default is 64).

Figures: pages per CPU-second = URLs / user+system seconds of the whole
process (tree), start-up included, for every variant alike; pages/s on wall
time. Goal (issue P2): abc-1 ≥ 60 % of ``loop``'s pages per CPU-second (also
printed against ``loop+cache``). A default run takes about 9 minutes (corpus: 12).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import nginx  # noqa: E402
from harness import BIN, medians, rotated, run_abc, run_measured, write_result  # noqa: E402

try:        # (the loop may run under an earlier tree's venv: before 4cceadb its modules were not in folders)
    from abc_crawler.web.urls import UrlError, canonicalize, fingerprint, host_of  # noqa: E402  (once, not per page)
except ImportError:
    from abc_crawler.urls import UrlError, canonicalize, fingerprint, host_of  # noqa: E402

MODES = ("fetch", "fetch+parse", "loop", "loop+cache")


# -- the loop (runs in a child process) --------------------------------------------------------

def batches_of(urls: list[str], batch: int) -> list[tuple[str, list[str]]]:
    """URLs grouped by host (first-seen order), cut in batches of ``batch``: (host, urls)."""
    by_host: dict[str, list[str]] = {}
    for u in urls:
        by_host.setdefault(host_of(u), []).append(u)
    # interleave the hosts' batches so that many hosts are in flight, as the Bucket does
    queues = [[(h, lst[i:i + batch]) for i in range(0, len(lst), batch)] for h, lst in by_host.items()]
    out = []
    while queues:
        nxt = []
        for q in queues:
            out.append(q.pop(0))
            if q:
                nxt.append(q)
        queues = nxt
    return out


def canonical_links(page: str, base: str | None, hrefs: list[str], scope, cache: dict | None) -> tuple[int, int]:
    """The loop's per-link work on one page: (in-scope links, XOR of their fingerprints).

    ``canonicalize`` the base against the page URL, then every href against
    it, the scope test and the 64-bit fingerprint. With ``cache`` (a dict), a
    relative href's result is kept per (base directory, href), as the crawler's
    decision cache does. ``page_costs.py`` times the same function.
    """
    try:
        b = canonicalize(base, page) if base else page
    except UrlError:
        b = page
    b = b or page
    nq = b.find("?")
    bdir = b[: b.rfind("/", 0, nq if nq >= 0 else len(b)) + 1]
    n = x = 0
    for h in hrefs:
        key = (bdir, h) if cache is not None and h and h[0] not in "?# \t\n\r" else None
        if key is not None and key in cache:
            u = cache[key]
        else:
            try:
                u = canonicalize(h, b)
            except UrlError:
                u = None
            if u is not None and not scope.allows_url(u):
                u = None
            if key is not None:
                cache[key] = u
        if u is not None:
            n += 1
            x ^= fingerprint(u)
    return n, x


def stack_loop(urls: list[str], resolve: list[str], mode: str, handles: int = 32, batch: int = 16) -> dict:
    """Fetch every URL (and parse / canonicalize, by ``mode``); counts and in-loop CPU/wall seconds."""
    import pycurl

    try:
        from abc_crawler.web.parser import extract_links
        from abc_crawler.web.scope import Scope
    except ImportError:                        # an earlier tree (see the imports above)
        from abc_crawler.parser import extract_links
        from abc_crawler.scope import Scope
    scope = Scope.from_lines(resolve)
    parse = mode in ("fetch+parse", "loop", "loop+cache")
    canon = mode in ("loop", "loop+cache")
    cached = mode == "loop+cache"
    cache: dict[tuple[str, str], str | None] = {}
    work = batches_of(urls, batch)
    work.reverse()
    multi = pycurl.CurlMulti()
    multi.setopt(pycurl.M_MAX_HOST_CONNECTIONS, 1)
    multi.setopt(pycurl.M_MAXCONNECTS, 2 * handles)
    free = []
    for _ in range(handles):
        c = pycurl.Curl()
        c.setopt(pycurl.NOSIGNAL, 1)
        c.setopt(pycurl.FOLLOWLOCATION, 0)
        c.setopt(pycurl.PROXY, "")
        c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        c.setopt(pycurl.USERAGENT, "abc-crawler/0.1 (stack limit)")
        c.setopt(pycurl.HTTPHEADER, ["Accept: text/html,*/*;q=0.5", "Accept-Encoding: identity"])
        c.setopt(pycurl.TIMEOUT, 10)
        c.setopt(pycurl.RESOLVE, resolve)
        free.append(c)
    state: dict = {}          # curl -> [host, remaining urls, chunks, url]
    busy: set[str] = set()
    waiting: list[tuple[str, list[str]]] = []
    n = ok = links = canon_links = errors = nbytes = 0
    fp_sum = 0
    cpu0, t0 = time.process_time(), time.perf_counter()

    def start(c, st) -> None:
        url = st[1].pop()
        st[3] = url
        st[2] = chunks = []
        c.setopt(pycurl.URL, url)
        c.setopt(pycurl.WRITEFUNCTION, chunks.append)
        multi.add_handle(c)

    def take_batch(c) -> bool:
        for i in range(len(waiting) - 1, -1, -1):
            if waiting[i][0] not in busy:
                host, lst = waiting.pop(i)
                break
        else:
            while work:
                host, lst = work.pop()
                if host not in busy:
                    break
                waiting.append((host, lst))
            else:
                return False
        busy.add(host)
        st = [host, list(reversed(lst)), None, None]
        state[c] = st
        start(c, st)
        return True

    while free and take_batch(free[-1]):
        free.pop()
    while state:
        multi.select(0.05)
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        while True:
            q, good, bad = multi.info_read()
            for c in good + [b[0] for b in bad]:
                multi.remove_handle(c)
                st = state[c]
                n += 1
                if c in good:
                    body = b"".join(st[2])
                    nbytes += len(body)
                    status = c.getinfo(pycurl.RESPONSE_CODE)
                    page = st[3]
                    hrefs: list[str] = []
                    base = None
                    if status == 200:
                        ok += 1
                        ctype = (c.getinfo(pycurl.CONTENT_TYPE) or "").split(";")[0].strip().lower()
                        if parse and ctype == "text/html":
                            p = extract_links(body)
                            if p.ok:
                                hrefs, base = p.links, p.base
                    elif 300 <= status < 400:
                        loc = c.getinfo(pycurl.REDIRECT_URL)
                        if loc:
                            hrefs = [loc]
                    links += len(hrefs)
                    if canon and hrefs:
                        k, x = canonical_links(page, base, hrefs, scope, cache if cached else None)
                        canon_links += k
                        fp_sum ^= x
                else:
                    errors += 1
                if st[1]:
                    start(c, st)
                else:
                    busy.discard(st[0])
                    del state[c]
                    if not take_batch(c):
                        free.append(c)
            if not q:
                break
        for c in list(free):
            if take_batch(c):
                free.remove(c)
            else:
                break
    return {"mode": mode, "pages": n, "ok": ok, "errors": errors, "bytes": nbytes, "links": links,
            "canonical_links": canon_links, "loop_cpu_s": time.process_time() - cpu0,
            "loop_wall_s": time.perf_counter() - t0}


# -- driver ------------------------------------------------------------------------------------

def requested_urls(session: Path) -> list[str]:
    import numpy as np

    from abc_crawler.store.session import load_graph

    g = load_graph(session)
    order = np.flatnonzero(g.url_rank >= 0)
    order = order[np.argsort(g.url_superstep[order], kind="stable")]
    return [g.urls[i] for i in order]


def run_loop(mode: str, urls_file: Path, web: Path, tmp: Path, python=None) -> dict:
    """The loop in its own process (``python``: another checkout's venv's, whose abc_crawler it then uses)."""
    out = tmp / f"loop-{time.monotonic_ns()}.json"
    r = run_measured([str(python or BIN / "python"), __file__, "_loop", "--mode", mode, "--urls", str(urls_file),
                      "--resolve", str(web / "resolve.txt"), "--json", str(out)], 1800)
    if r["rc"] != 0:
        raise RuntimeError(f"loop {mode} failed: {r['stderr'][-2000:]}")
    res = json.loads(out.read_text())
    pages = res["pages"]
    return {"pages": pages, "wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "pages_per_s": pages / r["wall_s"],
            "pages_per_cpu_s": pages / r["cpu_s"], "loop_cpu_s": res["loop_cpu_s"], "loop_wall_s": res["loop_wall_s"],
            "loop_pages_per_cpu_s": pages / res["loop_cpu_s"], "errors": res["errors"], "links": res["links"],
            "canonical_links": res["canonical_links"], "abc_crawler": res.get("abc_crawler")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--web", choices=["synthetic", "corpus"], default="synthetic")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18081)
    ap.add_argument("--no-warc-run", action="store_true", help="also abc-crawl --no-warc")
    ap.add_argument("--warc-batch-run", type=int, default=None, metavar="N", help="also abc-crawl --warc-batch N")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.warc_batch_run is not None and a.warc_batch_run < 1:
        ap.error(f"--warc-batch-run: expected at least 1, got {a.warc_batch_run}")
    print(harness.describe_header("P2: abc-crawl vs the bare stack"), flush=True)
    if a.web == "synthetic":
        web = harness.generated_web(a.hosts, a.pages, a.seed, a.port)
    else:
        import corpus
        web = corpus.prepare(corpus.DEFAULT_OUT, port=8080)
    extra = ["--no-stats", "--politeness-delay", "0"]
    abc_variants = {"abc-1": []}                # abc-crawl variants: their flags beyond ``extra``
    if a.no_warc_run:
        abc_variants["abc-1-nowarc"] = ["--no-warc"]
    if a.warc_batch_run:
        abc_variants[f"abc-1-batch{a.warc_batch_run}"] = ["--warc-batch", str(a.warc_batch_run)]
    configs = [*abc_variants, *MODES]
    raw: dict[str, list] = {c: [] for c in configs}
    tmp = Path(tempfile.mkdtemp(prefix="abc-stack-"))
    urls_file = tmp / "urls.txt"
    try:
        with nginx.serve(web, max_seconds=a.runs * 1800 + 600):
            for run in range(a.runs):
                for cfg in rotated(configs, run):
                    if cfg in abc_variants:
                        flags = extra + abc_variants[cfg]
                        keep = not urls_file.exists()
                        session = tmp / f"{cfg}-{run}"
                        row = run_abc(1, web, session, *flags, keep=keep)
                        if keep:
                            urls = requested_urls(session)
                            urls_file.write_text("\n".join(urls) + "\n")
                            shutil.rmtree(session, ignore_errors=True)
                    else:
                        row = run_loop(cfg, urls_file, web, tmp)
                    raw[cfg].append(row)
                    print(f"[run {run + 1}/{a.runs}] {cfg:12s} {row['pages']:6d} pages  wall {row['wall_s']:6.1f} s"
                          f"  CPU {row['cpu_s']:6.1f} s  {row['pages_per_s']:7.1f} pages/s"
                          f"  {row['pages_per_cpu_s']:7.1f} pages/CPU-s", flush=True)
        med = {c: medians(rows) for c, rows in raw.items()}
        limit = med["loop"]["pages_per_cpu_s"]
        share = {c: med[c]["pages_per_cpu_s"] / limit for c in med}
        share_cached = {c: med[c]["pages_per_cpu_s"] / med["loop+cache"]["pages_per_cpu_s"] for c in med}
        res = {"benchmark": "P2 stack_limit", "web": str(web), "args": vars(a), "abc_flags": extra, "medians": med,
               "share_of_loop": share, "share_of_loop_cache": share_cached, "goal": {"target_share": 0.60, "met": share["abc-1"] >= 0.60}, "raw": raw}
        path = write_result(f"stack_limit-{a.web}", res, a.out)
        print(f"\n{a.web} web ({web}), {len(urls_file.read_text().split())} URLs, medians of {a.runs} interleaved runs:")
        print(f"  {'variant':13s} {'wall s':>7s} {'CPU s':>7s} {'pages/s':>8s} {'pages/CPU-s':>12s} {'of loop':>8s}"
              f" {'of loop+cache':>13s} {'in-loop pages/CPU-s':>20s}")
        for c in configs:
            m = med[c]
            inner = m.get("loop_pages_per_cpu_s") or m.get("crawl_pages_per_cpu_s")
            print(f"  {c:13s} {m['wall_s']:7.1f} {m['cpu_s']:7.1f} {m['pages_per_s']:8.1f} {m['pages_per_cpu_s']:12.1f}"
                  f" {100 * share[c]:7.1f}% {100 * share_cached[c]:12.1f}% {inner:20.1f}")
        print(f"  goal abc-1 >= 60 % of loop: {'met' if share['abc-1'] >= 0.6 else 'missed'} ({100 * share['abc-1']:.1f} %;"
              f" {100 * share_cached['abc-1']:.1f} % of loop+cache)")
        print(f"wrote {path}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _loop_main(argv) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=MODES, required=True)
    ap.add_argument("--urls", required=True)
    ap.add_argument("--resolve", required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args(argv)
    urls = Path(a.urls).read_text().split()
    resolve = [l.strip() for l in Path(a.resolve).read_text().splitlines() if l.strip() and not l.startswith("#")]
    res = stack_loop(urls, resolve, a.mode)
    import abc_crawler
    res["abc_crawler"] = str(Path(abc_crawler.__file__).parent)       # whose parser and canonicalize ran
    Path(a.json).write_text(json.dumps(res))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_loop":
        sys.exit(_loop_main(sys.argv[2:]))
    sys.exit(main())
