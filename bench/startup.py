"""Issue 37: what a rank's start-up costs, by layer, before it fetches anything.

    .venv/bin/python bench/startup.py [--runs 11] [--ranks 1 8] [--against REV_OR_DIR]
                                      [--out bench/results/startup.json]

Each line is the CPU (user + system, of the process and everything under it) of one command, the
median of ``--runs`` runs, every tree's commands interleaved run by run:

``python``          ``python -c pass``: the interpreter and ``site`` (the venv's ``.pth`` files).
``numpy``           ``import numpy`` (with ``OPENBLAS_NUM_THREADS=1``, as ABC sets it).
``mpi4py load``     ``mpi4py.MPI`` loaded without ``MPI_Init`` (``mpi4py.rc.initialize = False``):
                    the extension and ``libmpi``.
``mpi4py``          ``from mpi4py import MPI``: load and ``MPI_Init`` (a singleton, no mpiexec).
``libraries``       numpy, lxml, pycurl and mpi4py together: the floor under ABC's own imports.
``abc``             ``import abc_crawler.cli, abc_crawler.run``: what ``abc-crawl`` imports
                    before it parses its arguments; ``abc - libraries`` is ABC's own share.
``mpiexec -n K``    the whole tree of ``mpiexec -n K python -c "import abc_crawler.cli,
                    abc_crawler.run; Barrier()"`` for each ``--ranks`` K (mpiexec and hydra
                    included): the start-up of a K-rank crawl before its first request, with K
                    interpreters on this machine's cores.

``--against`` gives a second checkout, and the median of the runs' differences (old − new) is
printed beside the medians: on a shared machine both trees' runs move together, so the differences
vary less than either tree's own figures. It is a git revision (made a worktree with its own venv, as
``bench/cpu_guard.py`` makes it) or a directory with a ``.venv``; both trees are byte-compiled
first (an editable install writes no bytecode).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

CASES = [
    ("python", "pass"),
    ("numpy", "import numpy"),
    ("mpi4py load", "import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI"),
    ("mpi4py", "from mpi4py import MPI"),
    ("libraries", "import numpy, lxml.etree, pycurl; from mpi4py import MPI"),
    ("abc", "import abc_crawler.cli, abc_crawler.run"),
]
BARRIER = "import abc_crawler.cli, abc_crawler.run; from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"


def cpu_of(cmd: list[str], tree: Path) -> float:
    """CPU seconds of ``cmd`` and every process under it, run in ``tree``: ``python -c`` puts the
    working directory first on ``sys.path``, so run elsewhere it would import whichever
    ``abc_crawler`` is there, not the tree's."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    c0 = harness.children_cpu()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=300, cwd=tree)
    return harness.children_cpu() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--ranks", type=int, nargs="*", default=[1, 8])
    ap.add_argument("--against", default=None, help="a second tree: a git revision or a directory with its .venv")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.runs < 1:
        ap.error(f"--runs: expected at least 1, got {a.runs}")
    if any(k < 1 for k in a.ranks):
        ap.error(f"--ranks: expected counts of at least 1, got {a.ranks}")
    trees = {"new": harness.ROOT}
    if a.against:
        trees["old"] = harness.checkout(a.against)
    for t in trees.values():
        harness.tree_bytecode(t)
    print(harness.describe_header("issue 37: start-up CPU by layer"), flush=True)
    for name, t in trees.items():
        print(f"{name}: {t}")
    rows = [(label, None, code) for label, code in CASES] + [(f"mpiexec -n {k}", k, BARRIER) for k in a.ranks]
    raw: dict[tuple[str, str], list[float]] = {(n, r[0]): [] for n in trees for r in rows}
    for run in range(a.runs):
        for label, k, code in rows:
            for name in harness.rotated(list(trees), run):
                b = harness.tree_bin(trees[name])
                cmd = [str(b / "python"), "-c", code]
                if k is not None:
                    cmd = [str(b / "mpiexec"), "-n", str(k), *cmd]
                raw[(name, label)].append(cpu_of(cmd, trees[name]))
        print(f"[run {run + 1}/{a.runs}]", flush=True)
    med = {f"{n}:{label}": 1000 * statistics.median(v) for (n, label), v in raw.items()}
    paired = {}
    if "old" in trees:           # the noise of a shared machine moves both alike: differences run by run
        paired = {label: 1000 * statistics.median([o - n for o, n in zip(raw[("old", label)], raw[("new", label)])])
                  for label, _, _ in rows}
    print(f"\nmedians of {a.runs} runs, ms of CPU:")
    print(f"  {'':16s}" + "".join(f"{n:>10s}" for n in trees) + ("   old - new (median of the runs' differences)"
                                                                  if paired else ""))
    for label, _, _ in rows:
        print(f"  {label:16s}" + "".join(f"{med[f'{n}:{label}']:10.1f}" for n in trees)
              + (f"{paired[label]:10.1f}" if paired else ""))
    for n in trees:
        own = med[f"{n}:abc"] - med[f"{n}:libraries"]
        print(f"  {n}: ABC's own imports beyond the libraries {own:.1f} ms a rank")
    res = {"benchmark": "startup", "trees": {n: str(t) for n, t in trees.items()}, "args": vars(a),
           "ms": med, "old_minus_new_ms": paired, "raw_s": {f"{n}:{label}": v for (n, label), v in raw.items()}}
    print(f"wrote {harness.write_result('startup', res, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
