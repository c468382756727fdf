"""Command-line entry points.

``abc-crawl SEEDS [options]`` — run under ``mpiexec -n K``. Every option of
:data:`abc_crawler.config.SETTINGS` is a flag (``--max-pages``), and a TOML
file given with ``--config`` may hold the same keys; flags win. Expected
problems (bad seeds file, bad resolve file, bad setting) print one line on
stderr and exit with status 2.

Every rank parses the same command line, but only rank 0 opens the files it
names (``--config``, seeds, ``--resolve``, ``--assign``): the ranks may run on
hosts that share no file system, so the settings are built and checked on
rank 0 and broadcast (:func:`abc_crawler.run.run_crawl`).
"""
from __future__ import annotations

import argparse
import os
import sys

from .config import SETTINGS
from .exceptions import AbcError

__all__ = ["crawl_main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """Every rank parses the same argv; only rank 0 prints a usage error (all exit with status 2)."""

    def error(self, message: str):
        if _is_rank0():
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="abc-crawl",
        description="Crawl from SEEDS on every MPI rank (run under mpiexec -n K) and write a session directory.",
    )
    p.add_argument("seeds", nargs="?", help="seeds file: one URL per line; blank lines and # comments are skipped")
    p.add_argument("--config", metavar="FILE", action="append",
                   help="TOML file with any of the settings below (flags win); may be given more than once, a later file wins "
                        "(e.g. the lab settings of lab.toml, then a file of your own)")
    p.add_argument("--resume", metavar="SESSION",
                   help="continue a crawl that was killed or stopped, from its newest checkpoint (same number of ranks; "
                        "its settings are reused, flags given now win)")
    for s in SETTINGS:
        flag = "--" + s.name.replace("_", "-")
        default = "" if s.default is None else f" (default: {s.default})"
        if s.type is bool:
            p.add_argument(flag, dest=s.name, default=None, action=argparse.BooleanOptionalAction,
                           help=s.help + default)
        else:
            p.add_argument(flag, dest=s.name, default=None, metavar=s.name.upper().replace("_", "-"),
                           help=s.help + default)
    return p


def _is_rank0() -> bool:
    """True unless an MPI launcher says this process is a rank other than 0."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if var in os.environ:
            return os.environ[var] == "0"
    return True


def crawl_main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    values = vars(args)
    config_file = values.pop("config")
    resume = values.pop("resume")
    if resume is not None:
        values.pop("seeds")
    from .run import run_crawl   # imports MPI

    try:
        return run_crawl(None, resume=resume, overrides=values, config_file=config_file)
    except AbcError as exc:
        # inputs are checked collectively (every rank returns 2 together); one that escapes on a
        # single rank must not leave the others waiting in a collective
        print(f"abc-crawl: {exc}", file=sys.stderr)
        sys.stderr.flush()
        from mpi4py import MPI

        if MPI.COMM_WORLD.Get_size() > 1:
            MPI.COMM_WORLD.Abort(2)
        return 2
    except BaseException as exc:
        # A bug on one rank must not leave the others waiting in a collective forever: the
        # reason is written into the session (errors/rank-NNNNN.txt, manifest "crashed"),
        # then the job is aborted (abc_crawler.crash).
        from .crash import handle_crash

        return handle_crash(exc)


if __name__ == "__main__":
    sys.exit(crawl_main())
