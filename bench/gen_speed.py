"""Speed of ``abc-testweb generate``: the generator at git revision ``--baseline`` against the working tree's.

    .venv/bin/python bench/gen_speed.py [--baseline REV] [--hosts 2000] [--sizes 50000 200000]
                                        [--seed 7] [--port 18091] [--rounds 1] [--tmp DIR] [--build-only]
                                        [--out bench/results/gen_speed.json]

``old`` is ``abc_crawler/testweb`` as it was at ``--baseline`` (default ``3c1079e``,
before the fix of the quadratic ``some_source``), extracted with ``git archive`` and
imported under another name; ``new`` is the working tree's. For every size of
``--sizes`` (pages, on ``--hosts`` hosts) and every round, each variant runs
``generate_web`` in a fresh process (order alternating per round) into a directory
under ``--tmp``; the figures are its wall and CPU seconds, the CPU seconds of
``_Gen.build`` (the link graph, where the quadratic part was; the rest is
rendering and file writes, linear) and pages per second,
medians over the rounds, and the speed-up (old wall / new wall, median of the rounds). Every pair of webs must be
byte-identical (a digest of every file's path and bytes): the generator's output
for given arguments must not change.

``--build-only`` times ``_Gen.build`` alone in memory (no rendering, no files, so
no identity check): the part that grew quadratically, at sizes where the old
generator's whole run takes hours.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from harness import describe_header, write_result  # noqa: E402

DEFAULT_BASELINE = "3c1079e"

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
mod = __import__(sys.argv[2] + ".generator", fromlist=["generate_web"])
h, n, seed, port = map(int, sys.argv[4:8])
phase = {}
build = mod._Gen.build
def timed_build(self):
    t0 = time.process_time()
    build(self)
    phase["build_cpu_s"] = time.process_time() - t0
mod._Gen.build = timed_build
t, c = time.perf_counter(), time.process_time()
if sys.argv[8] == "build":   # the link graph alone, in memory: no files
    mod._Gen(h, n, seed, "127.0.0.1", port, dict(mod.DEFAULT_KNOBS)).build()
else:
    mod.generate_web(sys.argv[3], n_hosts=h, n_pages=n, seed=seed, port=port)
print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, **phase,
                  "maxrss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))
"""


def baseline_package(rev: str, into: Path) -> tuple[str, str]:
    """``abc_crawler/testweb`` at ``rev`` as package ``testweb_old`` under ``into``: (sys.path entry, name)."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "abc_crawler/testweb"], check=True,
                         capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    (into / "abc_crawler" / "testweb").rename(into / "testweb_old")
    return str(into), "testweb_old"


def tree_digest(root: Path) -> str:
    """sha256 over every file's relative path and bytes, in sorted order."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            f = Path(dirpath) / name
            h.update(str(f.relative_to(root)).encode() + b"\0")
            h.update(f.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def run_one(path_entry: str, pkg: str, out: Path, hosts: int, pages: int, seed: int, port: int,
            build_only: bool = False) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run([sys.executable, "-c", _CHILD, path_entry, pkg, str(out), str(hosts), str(pages),
                        str(seed), str(port), "build" if build_only else "web"],
                       capture_output=True, text=True, timeout=6 * 3600)
    if r.returncode != 0:
        raise RuntimeError(f"{pkg} generate_web failed: {r.stderr[-2000:]}")
    row = json.loads(r.stdout.strip().splitlines()[-1])
    row["pages_per_s"] = pages / row["wall_s"]
    row["digest"] = None if build_only else tree_digest(out)
    shutil.rmtree(out, ignore_errors=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision of the previous generator")
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000], help="pages per web")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--port", type=int, default=18091)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tmp", default=None, help="where the webs are written (default: the system's temp dir)")
    ap.add_argument("--build-only", action="store_true",
                    help="time the link graph alone (_Gen.build, in memory, no files, no identity check)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    print(describe_header(f"test-web generator speed: {a.baseline} (old) vs working tree (new)"))
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="gen-speed-", dir=a.tmp) as td:
        tmp = Path(td)
        old = baseline_package(a.baseline, tmp)
        new = (str(ROOT), "abc_crawler.testweb")
        for n in a.sizes:
            rows: dict = {"old": [], "new": []}
            for rnd in range(a.rounds):
                order = ["old", "new"] if rnd % 2 == 0 else ["new", "old"]
                got = {}
                for v in order:
                    entry, pkg = old if v == "old" else new
                    got[v] = run_one(entry, pkg, tmp / f"web-{v}", a.hosts, n, a.seed, a.port,
                                     a.build_only)
                    rows[v].append(got[v])
                    print(f"  {a.hosts} hosts {n} pages round {rnd + 1} {v}: {got[v]['wall_s']:.1f} s wall, "
                          f"{got[v]['cpu_s']:.1f} s CPU (link graph {got[v]['build_cpu_s']:.1f} s), "
                          f"{got[v]['pages_per_s']:.0f} pages/s, "
                          f"{got[v]['maxrss_gb']:.2f} GB", flush=True)
                if got["old"]["digest"] != got["new"]["digest"]:
                    raise SystemExit(f"{n} pages: the webs differ ({got['old']['digest']} vs {got['new']['digest']})")
            med = {v: {k: statistics.median(r[k] for r in rows[v]) for k in ("wall_s", "cpu_s", "build_cpu_s", "pages_per_s")}
                   for v in rows}
            ratio = statistics.median(o["wall_s"] / w["wall_s"] for o, w in zip(rows["old"], rows["new"]))
            results[str(n)] = {"rows": rows, "medians": med, "speedup_wall": ratio}
            print(f"{a.hosts} hosts, {n} pages: old {med['old']['pages_per_s']:.0f} pages/s "
                  f"({med['old']['wall_s']:.1f} s, link graph {med['old']['build_cpu_s']:.1f} s CPU), "
                  f"new {med['new']['pages_per_s']:.0f} pages/s ({med['new']['wall_s']:.1f} s, link graph "
                  f"{med['new']['build_cpu_s']:.1f} s CPU), speed-up {ratio:.2f}x"
                  + ("" if a.build_only else "; webs byte-identical"), flush=True)
    path = write_result("gen_speed", {"baseline": a.baseline, "build_only": a.build_only, "hosts": a.hosts, "seed": a.seed, "port": a.port,
                                      "rounds": a.rounds, "sizes": results}, a.out)
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
