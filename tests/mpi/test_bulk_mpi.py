"""Bulk bytes outside the superstep exchange, under mpiexec (1, 2 and 4 ranks): rank 0 scatters a
different part to every rank (the previous session's shares, ``--previous``) and every rank's
bytes reach rank 0 (the validator rows at the end), byte for byte, empty parts included."""
import pytest

from budget import per_test

pytestmark = [pytest.mark.mpi, pytest.mark.timeout(per_test(__file__))]   # tests/mpi/budget.py


def _part(rank: int) -> bytes:
    import random

    rng = random.Random(rank)
    n = [0, 1, 70_000, 5, 3][rank % 5]
    return bytes(rng.getrandbits(8) for _ in range(n))


def test_scatter_then_gather_bytes():
    from mpi4py import MPI

    from abc_crawler.mpi.exchange import Communicator

    comm = Communicator(MPI.COMM_WORLD)
    chunks = [_part(r) for r in range(comm.size)] if comm.rank == 0 else None
    mine = comm.scatter_bytes(chunks)
    assert mine == _part(comm.rank)
    back = comm.gather_bytes(mine[::-1])
    if comm.rank == 0:
        assert back == [_part(r)[::-1] for r in range(comm.size)]
    else:
        assert back is None


def test_scatter_needs_one_chunk_per_rank():
    from mpi4py import MPI

    from abc_crawler.mpi.exchange import Communicator

    comm = Communicator(MPI.COMM_WORLD)
    if comm.rank == 0:
        with pytest.raises(ValueError, match="one chunk per rank"):
            comm.scatter_bytes([b""] * (comm.size + 1))
