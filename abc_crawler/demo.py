"""``make demo``: a real 8-rank crawl of a generated multi-site web served on loopback.

Steps (each one a real command a user can run by hand; they are printed):

1. ``abc-testweb generate demo/web`` — a synthetic web (``docs/TESTWEB.md``);
2. ``abc-testweb serve demo/web`` in the background — the embedded server;
3. ``mpiexec -n 8 abc-crawl demo/web/seeds.txt --config lab.toml --resolve demo/web/resolve.txt``
   — session 1 with the URL-hash assignment, with the lab settings of ``lab.toml``;
4. ``abc-repartition`` on session 1 and ``abc-crawl --assign`` with the part
   vector — session 2; ``abc-report`` compares them (when the partitioning
   tools are installed).

It ends by printing where to look: each rank's log (``SESSION/logs/``), the crawl log
(``SESSION/logs/crawl/``, merged by ``abc-report SESSION --crawl-log``) and how to get the
Prometheus metrics (the demo runs no dashboard: ``--dashboard 127.0.0.1:0``, then ``/metrics``).

Nothing outside 127.0.0.1 is contacted: the crawl runs with a resolve list.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main", "LAB_TOML"]

#: the lab settings of a loopback crawl, checked in at the top of the repository (the crawler's
#: defaults are for the open web: a 1 s politeness delay per request and 37.5 s phase slots)
LAB_TOML = Path(__file__).resolve().parents[1] / "lab.toml"


def _bin(name: str) -> str:
    here = Path(sys.executable).parent
    cand = here / name
    return str(cand) if cand.exists() else (shutil.which(name) or name)


def _run(cmd: list[str], timeout: float) -> None:
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, timeout=timeout)


def where_to_look(session: Path, others: list[Path]) -> list[str]:
    """The demo's last lines: where a session's logs, crawl log and metrics are.

    >>> print("\\n".join(where_to_look(Path("demo/sessions/s2"), [Path("demo/sessions/s1")])))
    demo: where to look (demo/sessions/s2; demo/sessions/s1 alike):
      rank logs   demo/sessions/s2/logs/         rank-NNNNN.log, one per rank (--log-level)
      crawl log   demo/sessions/s2/logs/crawl/   rank-NNNNN.log, one line per fetch (Heritrix's crawl.log)
                  abc-report demo/sessions/s2 --crawl-log   prints them merged in time order
      metrics     served by a crawl's dashboard while it runs (the demo runs none): add
                  --dashboard 127.0.0.1:0 to an abc-crawl command above, then read
                  http://127.0.0.1:PORT/metrics (Prometheus text; PORT: the one it prints)
    """
    alike = f"; {', '.join(map(str, others))} alike" if others else ""
    return [f"demo: where to look ({session}{alike}):",
            f"  rank logs   {session / 'logs'}/         rank-NNNNN.log, one per rank (--log-level)",
            f"  crawl log   {session / 'logs' / 'crawl'}/   rank-NNNNN.log, one line per fetch (Heritrix's crawl.log)",
            f"              abc-report {shlex.quote(str(session))} --crawl-log   prints them merged in time order",
            "  metrics     served by a crawl's dashboard while it runs (the demo runs none): add",
            "              --dashboard 127.0.0.1:0 to an abc-crawl command above, then read",
            "              http://127.0.0.1:PORT/metrics (Prometheus text; PORT: the one it prints)"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m abc_crawler.demo", description=__doc__.splitlines()[0])
    p.add_argument("--dir", default="demo", help="where the web and the sessions go (default: demo/)")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--hosts", type=int, default=40)
    p.add_argument("--pages", type=int, default=3000)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    root = Path(args.dir)
    if root.exists():
        shutil.rmtree(root)
    web = root / "web"
    _run([_bin("abc-testweb"), "generate", str(web), "--hosts", str(args.hosts), "--pages", str(args.pages),
          "--seed", str(args.seed), "--port", "0"], timeout=300)
    ready = root / "server.ready"
    server_cmd = [_bin("abc-testweb"), "serve", str(web), "--access-log", str(root / "access.log"),
                  "--max-seconds", "1800", "--ready-file", str(ready)]
    print("$ " + " ".join(shlex.quote(c) for c in server_cmd) + " &", flush=True)
    server = subprocess.Popen(server_cmd)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            if server.poll() is not None or time.monotonic() > deadline:
                print("demo: the test-web server did not start", file=sys.stderr)
                return 1
            time.sleep(0.05)
        mpiexec = _bin("mpiexec")
        # the lab settings of a loopback web (the defaults are for the open web), a short delay kept
        common = [str(web / "seeds.txt"), "--config", str(LAB_TOML), "--resolve", str(web / "resolve.txt"),
                  "--politeness-delay", "0.05"]
        s1 = root / "sessions" / "s1-hash"
        _run([mpiexec, "-n", str(args.ranks), _bin("abc-crawl"), *common, "--session-dir", str(s1)], timeout=1200)
        try:
            import abc_crawler.partition.cli  # noqa: F401
            import abc_crawler.report  # noqa: F401
        except ImportError:
            print("demo: partitioning tools not installed; session 1 is in", s1)
            print("\n".join(where_to_look(s1, [])), flush=True)
            return 0
        _run([_bin("abc-repartition"), str(s1), "--parts", str(args.ranks), "--model", "page-gp"], timeout=600)
        s2 = root / "sessions" / "s2-page-gp"
        _run([mpiexec, "-n", str(args.ranks), _bin("abc-crawl"), *common, "--session-dir", str(s2),
              "--assign", str(s1 / "partvec.npz")], timeout=1200)
        _run([_bin("abc-report"), str(s2), "--against", str(s1)], timeout=600)
        print("\n".join(where_to_look(s2, [s1])), flush=True)
        return 0
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
