"""Run ``.ci/run`` several times in a row, each on a fresh clean clone of one commit, while CPU
burners keep the machine's cores busy: the suite must pass on a loaded machine (issue 32), not
only on a quiet one. Prints one line per run (wall time, passed/failed counts from pytest's
summary lines, exit status) and stops at the first failure unless ``--keep-going``.

    python bench/ci_under_load.py --runs 3 --burners 2 --commit HEAD

The burners are pure-Python busy loops that stop by themselves after ``--timeout`` × ``--runs``
seconds (and are killed when this script ends); each CI run is killed after ``--timeout``.
Logs: ``--logs DIR/run-N.log``."""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BURN = ("import time\nend = time.monotonic() + {seconds}\nx = 0\n"
        "while time.monotonic() < end:\n    x += 1\n")
SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|errors?)\b.*?) in [\d.]+s", re.M)


def burners(n: int, seconds: float) -> list[subprocess.Popen]:
    """``n`` busy loops that end by themselves after ``seconds``."""
    return [subprocess.Popen([sys.executable, "-c", BURN.format(seconds=seconds)]) for _ in range(n)]


def one_run(commit: str, log: Path, timeout: float) -> tuple[int, float, list[str]]:
    """Clone ``commit`` into a fresh directory and run its ``.ci/run``: (exit status, wall
    seconds, pytest summary lines)."""
    where = Path(tempfile.mkdtemp(prefix="abc-ci-"))
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(where / "tree")], check=True)
        subprocess.run(["git", "-C", str(where / "tree"), "checkout", "-q", commit], check=True)
        t0 = time.monotonic()
        with open(log, "wb") as out:
            p = subprocess.Popen(["bash", ".ci/run"], cwd=where / "tree", stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                rc = -1
        wall = time.monotonic() - t0
        text = log.read_text(errors="replace")
        return rc, wall, [m.group(1) for m in SUMMARY.finditer(text)]
    finally:
        shutil.rmtree(where, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="consecutive CI runs (default 3)")
    ap.add_argument("--burners", type=int, default=2, help="CPU burners running throughout (default 2)")
    ap.add_argument("--commit", default="HEAD", help="the commit to clone and test (default HEAD)")
    ap.add_argument("--timeout", type=float, default=5400.0, help="seconds before a CI run is killed (default 5400)")
    ap.add_argument("--logs", default="/tmp/abc-ci-under-load", help="directory of the runs' logs")
    ap.add_argument("--keep-going", action="store_true", help="run them all even after a failure")
    a = ap.parse_args(argv)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", a.commit], check=True,
                            capture_output=True, text=True).stdout.strip()
    logs = Path(a.logs)
    logs.mkdir(parents=True, exist_ok=True)
    print(f"commit {commit[:12]}, {a.runs} runs of .ci/run, {a.burners} burners, {os.cpu_count()} CPUs", flush=True)
    burn = burners(a.burners, a.timeout * a.runs)
    failed = 0
    try:
        for i in range(1, a.runs + 1):
            load0 = os.getloadavg()[0]
            rc, wall, summary = one_run(commit, logs / f"run-{i}.log", a.timeout)
            ok = rc == 0
            failed += not ok
            print(f"run {i}: {'passed' if ok else 'FAILED'} (exit {rc}) in {wall:.0f} s "
                  f"({wall / 60:.1f} min), load {load0:.1f} at start; "
                  f"{' | '.join(summary) or 'no pytest summary'}; log {logs / f'run-{i}.log'}", flush=True)
            if not ok and not a.keep_going:
                break
    finally:
        for p in burn:
            p.kill()
            p.wait()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
