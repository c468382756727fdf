"""In-process crawls under mpiexec (1, 2 and 4 ranks) with pytest-mpi.

Rank 0 generates the web and serves it from a subprocess; every rank runs
`run_crawl` on MPI.COMM_WORLD; rank 0 checks the session against the
generator's truth (crawlcheck.check_session). Each test is under a timeout, and
`make test` wraps the whole mpiexec in one too.
"""
import json
import tempfile
from pathlib import Path

import pytest

from budget import per_test

pytestmark = [pytest.mark.mpi, pytest.mark.timeout(per_test(__file__))]   # tests/mpi/budget.py


def _bcast(obj):
    from mpi4py import MPI
    return MPI.COMM_WORLD.bcast(obj, root=0)


def _crawl_and_check(tmp_root: Path, *, hosts, pages, seed, extra=None):
    from mpi4py import MPI

    from abc_crawler.config import CrawlConfig
    from abc_crawler.mpi.exchange import Communicator
    from abc_crawler.run import run_crawl
    from crawlcheck import LAB_TOML, check_session, generate, serve

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    web = tmp_root / "web"
    session = tmp_root / f"session-{comm.Get_size()}"
    log = tmp_root / "access.log"
    server = None
    error = None
    if rank == 0:
        try:
            generate(web, n_hosts=hosts, n_pages=pages, seed=seed)
            server = serve(web, log)
            server.__enter__()
        except Exception as exc:  # pragma: no cover - reported to every rank below
            error = repr(exc)
    error = _bcast(error)
    assert error is None, error
    try:
        values = {"seeds": str(web / "seeds.txt"), "resolve": str(web / "resolve.txt"),
                  "session_dir": str(session), "politeness_delay": 0.0, "progress_seconds": 5.0,
                  "test_rank_header": True}
        values.update(extra or {})
        cfg = CrawlConfig.build(values, str(LAB_TOML))
        status = run_crawl(cfg, Communicator(comm))
        assert status == 0
    finally:
        comm.Barrier()
        if server is not None:
            server.__exit__(None, None, None)
    if rank == 0:
        return check_session(web, session, log)
    return None


def test_crawl_finds_exactly_the_reachable_web():
    tmp = Path(_bcast(tempfile.mkdtemp(prefix="abc-mpi-") if _rank() == 0 else None))
    facts = _crawl_and_check(tmp, hosts=10, pages=300, seed=21)
    if facts is not None:
        stats = facts["stats"]
        from mpi4py import MPI
        assert stats["ranks"] == MPI.COMM_WORLD.Get_size()
        assert stats["stopped"] == "done"
        assert len(stats["per_rank"]) == stats["ranks"]
        # live graph statistics equal scipy's on the saved graph: whole graph (exact SCCs,
        # HyperBall estimates within 4 standard errors: node ids follow the crawl order, so
        # the estimate differs run to run) and first N pages (exact; here N >= every page)
        from graphcheck import check_graph_stats
        check_graph_stats(tmp / f"session-{MPI.COMM_WORLD.Get_size()}", sigmas=4.0)
        assert not stats["graph"]["first_n"]["capped"]


def test_crawl_with_small_supersteps_and_batches():
    """Many supersteps (R=7) and one-URL batches exercise the exchange and the Bucket harder."""
    tmp = Path(_bcast(tempfile.mkdtemp(prefix="abc-mpi-") if _rank() == 0 else None))
    facts = _crawl_and_check(tmp, hosts=6, pages=150, seed=5,
                             extra={"superstep_pages": 7, "batch_urls": 1, "concurrency": 3})
    if facts is not None:
        assert facts["stats"]["exchange"]["supersteps"] >= 5


def _rank():
    from mpi4py import MPI
    return MPI.COMM_WORLD.Get_rank()
