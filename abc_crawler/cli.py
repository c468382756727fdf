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
import gc
import os
import sys
from contextlib import contextmanager


@contextmanager
def _collector_off(freeze: bool = False):
    """The imports of a crawl make some 30,000 objects that live as long as the process, and the
    collector would go through them again and again meanwhile (65 collections, 17-20 ms a rank of
    its ~0.35 s start-up): it is off while they are made (and restored after); ``freeze``: what
    exists then is frozen out of every later collection (:func:`crawl_main`)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_on:
            gc.enable()


with _collector_off():
    from .config import DURATIONS, GROUPS, SETTINGS, SIZES, group_of, shown_default
    from .exceptions import AbcError

__all__ = ["crawl_main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """Every rank parses the same argv; only rank 0 prints a usage error (all exit with status 2)."""

    def error(self, message: str):
        if _is_rank0():
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


_METAVARS = {"session_dir": "DIR", "resolve": "FILE", "url_filter": "FILE", "ca_bundle": "FILE", "previous": "SESSION",
             "assign": "hash|site-hash|PARTVEC", "dashboard": "ADDR:PORT", "allowed_domains": "DOMAINS",
             "proxy": "URL", "user_agent": "TEXT", "robots_token": "TOKEN", "contact": "URL-OR-EMAIL",
             "accept_regex": "REGEX", "reject_regex": "REGEX", "delay_factor": "F", "stats_distance_error": "E"}


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = _Parser(
        prog="abc-crawl",
        usage="mpiexec -n K %(prog)s [options] SEEDS\n       mpiexec -n K %(prog)s --resume SESSION [options]",
        description="Crawl from SEEDS on every MPI rank (run under mpiexec -n K) and write a session directory.",
        epilog="Sizes take units (10M, 1G: powers of 1,024; 10MB: of 1,000) and durations too (90s, 5m, 2h). "
               "Every setting may also be given in a TOML file (--config), its key the flag's name.",
    )
    p.add_argument("seeds", nargs="?", metavar="SEEDS",
                   help="a seed URL (http:// or https://), or a seeds file: one URL per line; blank lines and # comments are skipped")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--config", metavar="FILE", action="append",
                   help="TOML file with any of the settings below (flags win); may be given more than once, a later file wins "
                        "(e.g. the lab settings of lab.toml, then a file of your own)")
    p.add_argument("--resume", metavar="SESSION",
                   help="continue a crawl that was killed or stopped, from its newest checkpoint (same number of ranks; "
                        "its settings are reused, flags given now win)")
    groups = {title: p.add_argument_group(title) for title, _ in GROUPS}
    by_name = {s.name: s for s in SETTINGS}
    order = [n for _, names in GROUPS for n in names] + [s.name for s in SETTINGS if group_of(s.name) is None]
    for s in (by_name[n] for n in order):
        flag = "--" + s.name.replace("_", "-")
        title = group_of(s.name)
        where = p if title is None else groups[title]
        if title is None:
            text = argparse.SUPPRESS             # a test hook: accepted, not listed
        else:
            text = s.help + ("" if s.default is None else f" (default: {shown_default(s)})")
        if s.type is bool:
            where.add_argument(flag, dest=s.name, default=None, action=argparse.BooleanOptionalAction, help=text)
        else:
            metavar = ("SIZE" if s.name in SIZES else "SECONDS" if s.name in DURATIONS
                       else "{" + ",".join(s.choices) + "}" if s.choices else _METAVARS.get(s.name)
                       or ("N" if s.type is int else s.name.upper().replace("_", "-")))
            where.add_argument(flag, dest=s.name, default=None, metavar=metavar, help=text)
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
    with _collector_off(freeze=True):     # what the imports made: never scanned again
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
        # then the job is aborted (abc_crawler.store.crash).
        from .store.crash import handle_crash

        return handle_crash(exc)


if __name__ == "__main__":
    sys.exit(crawl_main())
