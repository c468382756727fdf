"""Issue 37's guard on per-page CPU: P1 (abc / Scrapy) and P2 (abc / the bare stack) at default settings,
this tree against an earlier one, interleaved on one nginx web; also the C peer, wget2.

    nice -n 10 .venv/bin/python bench/cpu_guard.py --against REV_OR_DIR [--tree REV_OR_DIR]
        [--ranks 1 [8]] [--runs 3] [--hosts 60] [--pages 4000] [--seed 37] [--port 18371]
        [--web DIR (a web directory instead, e.g. bench/corpus.py's)] [--no-scrapy] [--no-wget2] [--no-ab] [--wget2-threads 1] [--out bench/results/cpu_guard.json]

``--against``: the earlier tree, a directory with its own ``.venv`` or a git revision of this
repository (checked out as a worktree at ``/tmp/abc-tree-<sha7>`` with its own ``make venv``, kept
for the next run: :func:`harness.checkout`). ``--tree``: the tree under test, by default this
checkout (give a revision, e.g. ``HEAD``, to measure a commit while the work tree is being edited).

Every round runs each of these once, in an order rotated every round, on one generated web served
by nginx (``harness.generated_web``: 60 hosts, 4,322 pages, 4,207 URLs to request; a web of its own,
seed 37, so no crawl setting was tuned on it):

``new:default:K`` / ``old:default:K``
    ``mpiexec -n K abc-crawl SEEDS --resolve resolve.txt --session-dir S`` plus the tree's lab
    settings and nothing else (:func:`harness.lab_flags`): statistics on, WARC on, page requisites,
    sitemaps, robots.txt, checkpoints every 10 s, the crawl log, progress lines every 2 s, all at
    their defaults. The lab settings, for a tree with ``lab.toml``: ``--config lab.toml`` =
    ``--politeness-delay 0 --delay-factor 0 --max-delay 0 --ip-politeness-delay 0
    --max-crawl-delay 0.1 --phase-seconds 1.0`` (the open web's defaults are 1 s, 2.0, 30 s, 0.25 s,
    30 s and auto = 37.5 s); for a tree before ``lab.toml`` (``23cebd5``), whose defaults were the
    lab's but for the politeness delay: ``--politeness-delay 0``.
``new:ab:K`` / ``old:ab:K`` (not with ``--no-ab``)
    the same plus ``--no-stats --politeness-delay 0``: the setting of the rank-loop redesign's A/B
    (``bench/ab_trees.py``).
``loop:new`` / ``loop:old``
    ``bench/stack_limit.py``'s bare loop (mode ``loop``: pycurl, 32 handles, one connection per
    host, batches of 16; ``extract_links``, ``canonicalize`` + scope + fingerprint of every link; no
    frontier, no output) over the URLs the first ``new:default:1`` crawl requested, run with each
    tree's venv, so with that tree's parser and canonicalize.
``scrapy``
    ``bench/scrapy_spider.py`` as ``bench/vs_scrapy.py`` runs it (robots.txt, one connection per
    host, 32 requests in flight, no delay, nothing stored).
``wget2`` (not with ``--no-wget2``)
    Debian's ``wget2`` (``apt-get install -y wget2``; installed by the script when missing and run
    as root): ``--recursive --level=inf --span-hosts --domains=<the resolve list's hosts>
    --robots=on --max-threads=1 --no-http2 --tries=1``, its files (one per page) written under a
    temp directory on a tmpfs (``/dev/shm``; ``--wget2-dir`` chooses another place). On this VM's
    ext4 disk under load, creating those 3,933 files cost 3–5 s of system CPU against 0.4 s on
    tmpfs (wget2's own work, user + system: 0.6–0.8 s), so on disk the figure measures the file
    system, not the crawler; abc's WARC files (a few big files) cost little system time (0.3 s in
    all for a 1-rank crawl, network included) and go to the session under /tmp as usual.
    wget2 has no per-host connection limit (any of its threads takes any host's next URL), so one
    thread is the setting that keeps it to one connection per host; ``--wget2-threads`` changes it.
    It resolves names with the system resolver: it runs under ``unshare --mount`` with the resolve
    list bind-mounted over ``/etc/hosts`` in its own mount namespace (root needed; nothing else
    sees it). Its robots.txt matching obeys only the ``User-agent: *`` groups, and it follows
    ``<a>``, ``<link>``, ``<img>`` and the like but not sitemaps, so it requests a slightly
    different set of URLs (its count is printed).

Figures: pages = URLs requested, robots.txt excluded (abc: stats.json ``requests``; Scrapy:
responses but robots.txt; wget2: rows of ``--stats-site`` but robots.txt; the loop: URLs);
CPU = user+system seconds of the whole process tree of the run (mpiexec, hydra, every rank,
interpreter start-up and session writing included; ``harness.run_measured``); nginx's CPU is
reported apart. Medians over the rounds; every ratio is the median of the per-round ratios
(a round holds every configuration, so each ratio is taken side by side): abc / Scrapy (P1, goal
≥ 10), abc / loop of the same tree (P2, goal ≥ 0.60), new / old per configuration, wget2 / abc.
Also abc's in-crawl pages per CPU-second (stats.json ``cpu_s``: the ranks' own CPU from the start
of the crawl to its end, start-up and session writing excluded).

A run at ``--ranks 1 --runs 3`` takes about 3 minutes on a 2-core VM, ``--ranks 1 8 --runs 5``
about 9 (plus about 3 minutes the first time a revision's worktree gets its venv). Run it under
``nice -n 10`` on a shared machine; the figures of 2026-11-27 are in docs/BENCHMARKS.md
("Per-page CPU at default settings").
"""
from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import nginx  # noqa: E402
from stack_limit import requested_urls, run_loop  # noqa: E402
from vs_scrapy import run_scrapy  # noqa: E402

WGET2 = "wget2"


def ensure_wget2() -> str:
    """Debian's wget2, installed with apt-get when missing (as root, like ``make bench-setup``'s nginx)."""
    path = shutil.which(WGET2)
    if path:
        return path
    print("wget2 is missing: apt-get install -y wget2", flush=True)
    subprocess.run("apt-get update -qq && apt-get install -y -qq wget2", shell=True, check=True, timeout=900)
    return shutil.which(WGET2) or "/usr/bin/wget2"


def wget2_version() -> str | None:
    try:
        return subprocess.run([WGET2, "--version"], capture_output=True, text=True, timeout=10).stdout.split("\n")[0]
    except OSError:
        return None


def resolve_lines(web: Path) -> list[tuple[str, str]]:
    """(host, address) of the web's resolve list (``HOST:PORT:ADDR`` lines)."""
    out = []
    for ln in (web / "resolve.txt").read_text().splitlines():
        ln = ln.strip()
        if ln and not ln.startswith("#"):
            host, _port, addr = ln.rsplit(":", 2)
            out.append((host, addr))
    return out


def run_wget2(web: Path, tmp: Path, threads: int, timeout: float, files_dir: str | None = None) -> dict:
    """One recursive wget2 crawl of the web (see the module's docstring); its figures. Its files go
    under ``files_dir`` (default: tmpfs, ``/dev/shm``, where there is one; else ``tmp``)."""
    hosts = resolve_lines(web)
    hosts_file = tmp / "wget2-hosts"
    if not hosts_file.exists():
        hosts_file.write_text(Path("/etc/hosts").read_text() + "".join(f"{a} {h}\n" for h, a in hosts))
    if files_dir is None:
        files_dir = "/dev/shm" if Path("/dev/shm").is_dir() else str(tmp)
    out = Path(tempfile.mkdtemp(prefix="abc-wget2-", dir=files_dir))
    seeds = [u for u in (web / "seeds.txt").read_text().split() if not u.startswith("#")]
    wcmd = [WGET2, "--recursive", "--level=inf", "--span-hosts", "--domains=" + ",".join(h for h, _ in hosts),
            "--robots=on", f"--max-threads={threads}", "--no-http2", "--tries=1", "--timeout=10",
            "--directory-prefix", str(out / "files"), "--quiet", f"--stats-site=csv:{out / 'site.csv'}",
            "--user-agent=abc-crawler/0.1 (wget2 peer)", *seeds]
    cmd = ["unshare", "--mount", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts_file), *wcmd]
    try:
        r = harness.run_measured(cmd, timeout)
        # wget2's status is 8 when a server answered an error (the web has 404s and 500s)
        if r["rc"] not in (0, 8) or not (out / "site.csv").exists():
            raise RuntimeError(f"wget2 failed (status {r['rc']}): {r['stderr'][-2000:]}")
        with open(out / "site.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    robots = sum(1 for x in rows if x["URL"].endswith("/robots.txt"))
    pages = len(rows) - robots
    return {"pages": pages, "robots": robots, "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
            "pages_per_s": pages / r["wall_s"], "pages_per_cpu_s": pages / r["cpu_s"] if r["cpu_s"] else None}


def configs_of(args) -> list[str]:
    settings = ["default"] + ([] if args.no_ab else ["ab"])
    out = [f"{t}:{s}:{k}" for k in args.ranks for s in settings for t in ("new", "old")]
    out += ["loop:new", "loop:old"]
    if not args.no_scrapy:
        out.append("scrapy")
    if not args.no_wget2:
        out.append("wget2")
    return out


#: flags of each setting beyond the tree's lab settings
SETTINGS = {"default": [], "ab": ["--no-stats", "--politeness-delay", "0"]}


def ratio_rows(raw: dict, num: str, den: str, key: str = "pages_per_cpu_s") -> list[float]:
    """Per-round ratios num / den (rounds where both ran)."""
    return [a[key] / b[key] for a, b in zip(raw[num], raw[den]) if a.get(key) and b.get(key)]


def fmt_ratio(vals: list[float]) -> str:
    if not vals:
        return "-"
    return f"{statistics.median(vals):.3f} ({', '.join(f'{v:.3f}' for v in vals)})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True, help="the earlier tree: a directory with its .venv, or a git revision")
    ap.add_argument("--tree", default=str(harness.ROOT), help="the tree under test (default: this checkout)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=60)
    ap.add_argument("--pages", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--port", type=int, default=18371, help="port of the generated web (its own web per port)")
    ap.add_argument("--web", default=None, help="a web directory to crawl instead of a generated one (e.g. the "
                                                "Debian documentation corpus of bench/corpus.py)")
    ap.add_argument("--concurrency", type=int, default=32, help="Scrapy's CONCURRENT_REQUESTS (abc's default)")
    ap.add_argument("--no-scrapy", action="store_true")
    ap.add_argument("--no-wget2", action="store_true")
    ap.add_argument("--no-ab", action="store_true", help="only the default setting, not the A/B one")
    ap.add_argument("--wget2-threads", type=int, default=1)
    ap.add_argument("--wget2-dir", default=None, help="where wget2 writes its files (default: /dev/shm, a tmpfs)")
    ap.add_argument("--timeout", type=float, default=900.0, help="longest single run")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs: at least 1")
    trees = {"new": harness.checkout(args.tree), "old": harness.checkout(args.against)}
    if not args.no_wget2:
        ensure_wget2()
    print(harness.describe_header(f"issue 37 CPU guard: new = {trees['new']}, old = {trees['old']}",
                                  ["scrapy", "twisted"]), flush=True)
    commits = {}
    for name, tree in trees.items():
        c = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        d = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "abc_crawler", "kernels"],
                           capture_output=True, text=True)
        commits[name] = {"tree": str(tree), "commit": c.stdout.strip(), "dirty": bool(d.stdout.strip()),
                         "lab_flags": harness.lab_flags(tree)}
        print(f"{name}: {tree} at {commits[name]['commit']}{' (work tree modified)' if commits[name]['dirty'] else ''};"
              f" lab flags {' '.join(commits[name]['lab_flags'])}", flush=True)
    if not args.no_wget2:
        print(f"wget2: {wget2_version()}, --max-threads={args.wget2_threads}", flush=True)
    web = Path(args.web) if args.web else harness.generated_web(args.hosts, args.pages, seed=args.seed, port=args.port)
    if not (web / "manifest.json").exists():
        ap.error(f"--web {web}: no manifest.json (a web directory of abc-testweb generate or bench/corpus.py)")
    configs = configs_of(args)
    raw: dict[str, list[dict]] = {c: [] for c in configs}
    scrapy_args = SimpleNamespace(concurrency=args.concurrency, delay=0.0, timeout=args.timeout)
    tmp = Path(tempfile.mkdtemp(prefix="abc-cpu-guard-"))
    urls_file = tmp / "urls.txt"
    t_start = time.monotonic()
    try:
        with nginx.serve(web, max_seconds=args.runs * len(configs) * args.timeout + 600) as ng:
            # the loop's URL list: what the tree under test requested at 1 rank, default settings (not timed)
            session = tmp / "urls-session"
            harness.run_tree_abc(trees["new"], 1, web, session, timeout=args.timeout, keep=True)
            urls_file.write_text("\n".join(requested_urls(session)) + "\n")
            shutil.rmtree(session, ignore_errors=True)
            for run in range(args.runs):
                for cfg in harness.rotated(configs, run):
                    c0 = ng.cpu_seconds()
                    if cfg == "scrapy":
                        row = run_scrapy(web, scrapy_args, tmp)
                    elif cfg == "wget2":
                        row = run_wget2(web, tmp, args.wget2_threads, args.timeout, args.wget2_dir)
                    elif cfg.startswith("loop:"):
                        row = run_loop("loop", urls_file, web, tmp, python=harness.tree_bin(trees[cfg[5:]]) / "python")
                    else:
                        name, setting, k = cfg.split(":")
                        row = harness.run_tree_abc(trees[name], int(k), web, tmp / f"{name}-{setting}-{k}",
                                                   *SETTINGS[setting], timeout=args.timeout)
                    row["nginx_cpu_s"] = ng.cpu_seconds() - c0
                    raw[cfg].append(row)
                    print(f"[round {run + 1}/{args.runs}] {cfg:16s} {row['pages']:6d} pages  wall {row['wall_s']:6.1f} s"
                          f"  CPU {row['cpu_s']:6.2f} s  {row['pages_per_cpu_s']:8.1f} pages/CPU-s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    minutes = (time.monotonic() - t_start) / 60
    med = {c: harness.medians(rows) for c, rows in raw.items()}
    abc_cfgs = [c for c in configs if c.count(":") == 2]
    ratios: dict[str, dict[str, list[float]]] = {}
    for c in abc_cfgs:
        name, setting, k = c.split(":")
        other = f"{'old' if name == 'new' else 'new'}:{setting}:{k}"
        ratios[c] = {"vs_scrapy": ratio_rows(raw, c, "scrapy") if "scrapy" in raw else [],
                     "vs_loop": ratio_rows(raw, c, f"loop:{name}"),
                     "wget2_vs": ratio_rows(raw, "wget2", c) if "wget2" in raw else []}
        if name == "new":
            ratios[c]["new_vs_old"] = ratio_rows(raw, c, other)
            ratios[c]["new_vs_old_in_crawl"] = ratio_rows(raw, c, other, "crawl_pages_per_cpu_s")
    ratios["loop:new"] = {"new_vs_old": ratio_rows(raw, "loop:new", "loop:old")}

    print(f"\nweb {web} ({len(resolve_lines(web))} hosts); medians of {args.runs} interleaved rounds ({minutes:.1f} min):")
    print(f"  {'config':16s} {'pages':>6s} {'wall s':>7s} {'CPU s':>7s} {'pages/CPU-s':>11s} {'in-crawl':>9s}"
          f" {'nginx CPU s':>11s}")
    for c in configs:
        m = med[c]
        inner = m.get("crawl_pages_per_cpu_s") or m.get("loop_pages_per_cpu_s")
        print(f"  {c:16s} {m['pages']:6.0f} {m['wall_s']:7.1f} {m['cpu_s']:7.2f} {m['pages_per_cpu_s']:11.1f}"
              f" {('%9.1f' % inner) if inner else '':>9s} {m['nginx_cpu_s']:11.2f}")
    print("\nratios of pages per CPU-second (median of the per-round ratios; per round in brackets):")
    for c in abc_cfgs:
        r = ratios[c]
        print(f"  {c:16s} P1 abc/Scrapy {fmt_ratio(r['vs_scrapy'])}")
        print(f"  {'':16s} P2 abc/loop   {fmt_ratio(r['vs_loop'])}")
        if "new_vs_old" in r:
            print(f"  {'':16s} new/old       {fmt_ratio(r['new_vs_old'])}   in-crawl {fmt_ratio(r['new_vs_old_in_crawl'])}")
        if r["wget2_vs"]:
            print(f"  {'':16s} wget2/abc     {fmt_ratio(r['wget2_vs'])}")
    print(f"  loop new/old {fmt_ratio(ratios['loop:new']['new_vs_old'])}")
    if "wget2" in med:
        w = med["wget2"]["pages_per_cpu_s"]
        for c in abc_cfgs:
            a = med[c]["pages_per_cpu_s"]
            print(f"  per-page budget to reach wget2, {c}: {1e6 / a:.0f} µs now, {1e6 / w:.0f} µs for wget2"
                  f" (cut {1e6 / a - 1e6 / w:.0f} µs a page)")
    res = {"benchmark": "issue 37 cpu_guard", "web": str(web), "args": vars(args), "trees": commits,
           "settings": SETTINGS, "wget2": wget2_version() if not args.no_wget2 else None, "minutes": minutes,
           "medians": med, "ratios": ratios, "raw": raw}
    path = harness.write_result("cpu_guard", res, args.out)
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
