"""--gather-warc's transport under mpiexec (1, 2 and 4 ranks): every rank's files reach rank 0's
directory byte for byte, in chunks (sizes around the chunk size), and a copy whose SHA-256 does not
match the sender's listing is discarded and reported. Each rank writes in a directory of its own,
as on hosts that share no disk."""
import hashlib
import tempfile
from pathlib import Path

import pytest

from budget import per_test

pytestmark = [pytest.mark.mpi, pytest.mark.timeout(per_test(__file__))]   # tests/mpi/budget.py

CHUNK = 1000


def _setup():
    from mpi4py import MPI

    from abc_crawler.mpi.exchange import Communicator
    from abc_crawler.store.session import rank_files

    comm = Communicator(MPI.COMM_WORLD)
    base = Path(comm.bcast(tempfile.mkdtemp(prefix="abc-gather-") if comm.rank == 0 else None))
    mine = base / f"host-of-rank-{comm.rank}"           # no rank sees another's files
    sizes = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7, 2 * CHUNK, 5]
    rng = __import__("random").Random(comm.rank)
    for i, name in enumerate((f"rank-{comm.rank:05d}.warc.gz", f"rank-{comm.rank:05d}.more.warc.gz")):
        size = sizes[(2 * comm.rank + i) % len(sizes)]
        (mine / "warc").mkdir(parents=True, exist_ok=True)
        (mine / "warc" / name).write_bytes(bytes(rng.getrandbits(8) for _ in range(size)))
    (mine / "checkpoint").mkdir()
    (mine / "checkpoint" / f"rank-{comm.rank:05d}.log").write_bytes(b"not gathered")
    listings = comm.gather(rank_files(mine, comm.rank))
    hosts = comm.gather(f"host{comm.rank}")
    return comm, base, mine, listings, hosts


def test_every_rank_s_warc_files_reach_rank_0_verified():
    from abc_crawler.mpi.gather import gather_warc

    comm, base, mine, listings, hosts = _setup()
    result = gather_warc(comm, mine, listings, hosts, chunk_bytes=CHUNK)
    if comm.rank == 0:
        others = [f for files in listings[1:] for f in files if f["path"].startswith("warc/")]
        assert result["errors"] == [] and result["present"] == []
        assert result["copied"] == [f["path"] for f in others]
        for f in others:
            data = (mine / f["path"]).read_bytes()
            assert len(data) == f["bytes"] and hashlib.sha256(data).hexdigest() == f["sha256"]
        assert sorted(p.name for p in (mine / "checkpoint").iterdir()) == ["rank-00000.log"]
        assert not list(mine.rglob("*.tmp"))
    else:
        assert result is None
    _cleanup(comm, base)


def test_a_copy_that_does_not_match_the_listing_is_discarded_and_reported():
    from abc_crawler.mpi.gather import gather_warc

    comm, base, mine, listings, hosts = _setup()
    if comm.rank == 0 and comm.size > 1:
        listings[1][-1]["sha256"] = "0" * 64            # rank 1's second WARC file: a wrong checksum
        bad = listings[1][-1]["path"]
    result = gather_warc(comm, mine, listings, hosts, chunk_bytes=CHUNK)
    if comm.rank == 0 and comm.size > 1:
        assert len(result["errors"]) == 1
        assert result["errors"][0].startswith(f"{bad} from rank 1 on host1: SHA-256 differs")
        assert bad not in result["copied"] and not (mine / bad).exists()
        assert len(result["copied"]) == 2 * (comm.size - 1) - 1
        assert not list(mine.rglob("*.tmp"))
    _cleanup(comm, base)


def _cleanup(comm, base):
    import shutil

    comm.barrier()
    if comm.rank == 0:
        shutil.rmtree(base)
