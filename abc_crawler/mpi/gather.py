"""``abc-crawl --gather-warc``: every rank's finished WARC files copied to rank 0's session directory.

On clusters without a shared file system each rank's WARC file stays on the
host the rank ran on (the ranks may share no file system); ``manifest.json`` lists where. With
``--gather-warc`` rank 0 also collects them at the end of the session:

1. every rank has listed its files with sizes and SHA-256
   (:func:`abc_crawler.store.session.rank_files`);
2. rank 0 plans (:func:`gather_plan`): a WARC file of another rank is copied
   unless rank 0's directory already holds one of that name with the same
   size and SHA-256 (a rank on rank 0's host, or a shared file system);
3. the files stream to rank 0 over MPI, one rank at a time, in chunks
   (:meth:`abc_crawler.mpi.exchange.Communicator.send_files_to_root`); rank 0
   writes each to a temporary name while hashing it, and renames it into
   ``warc/`` only when its size and SHA-256 equal the sender's listing. A copy
   that does not verify is discarded and reported; the original stays where
   it is.

Examples
--------
>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> listing = [[], [{"path": "warc/rank-00001.warc.gz", "bytes": 3, "sha256": "ab"},
...                 {"path": "checkpoint/rank-00001.log", "bytes": 9, "sha256": "cd"}]]
>>> gather_plan(d, listing)
{1: [{'path': 'warc/rank-00001.warc.gz', 'bytes': 3, 'sha256': 'ab'}]}
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from .exchange import GATHER_CHUNK_BYTES
from ..store.session import file_record

__all__ = ["gather_plan", "gather_warc", "VerifyingWriter"]


def gather_plan(session_dir, listings: list[list[dict]]) -> dict[int, list[dict]]:
    """Rank 0: the WARC files (``warc/…`` entries of each rank's listing) to copy, per rank."""
    root = Path(session_dir)
    plan: dict[int, list[dict]] = {}
    for rank, files in enumerate(listings):
        if rank == 0:
            continue
        want = []
        for f in files:
            if not f["path"].startswith("warc/"):
                continue
            here = root / f["path"]
            if here.is_file() and here.stat().st_size == f["bytes"] and \
                    file_record(root, f["path"])["sha256"] == f["sha256"]:
                continue
            want.append(f)
        if want:
            plan[rank] = want
    return plan


class VerifyingWriter:
    """A temporary file next to ``dest`` that is hashed as it is written; :meth:`commit` renames it
    into place only if its size and SHA-256 are the expected ones."""

    def __init__(self, dest: Path, size: int, sha256: str):
        self.dest, self.size, self.sha256 = dest, size, sha256
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
        self._fh = os.fdopen(fd, "wb")
        self._hash = hashlib.sha256()
        self.written = 0

    def write(self, data) -> None:
        self._fh.write(data)
        self._hash.update(data)
        self.written += len(data)

    def commit(self, sender_failed: bool = False) -> str | None:
        """Rename into place; None, or why the copy was discarded."""
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        why = None
        if sender_failed:
            why = "the sending rank could not read it"
        elif self.written != self.size:
            why = f"{self.written} bytes arrived, the sender listed {self.size}"
        elif self._hash.hexdigest() != self.sha256:
            why = "SHA-256 differs from the sender's listing"
        if why is None:
            os.replace(self.tmp, self.dest)
        else:
            os.unlink(self.tmp)
        return why


def gather_warc(comm, session_dir, listings: list[list[dict]] | None, hosts: list[str] | None,
                chunk_bytes: int = GATHER_CHUNK_BYTES) -> dict | None:
    """Every rank calls it; rank 0 passes every rank's listing and host. Returns, on rank 0,
    ``{"host": …, "copied": [paths], "present": [paths], "errors": [lines]}`` (None elsewhere)."""
    root = Path(session_dir)
    plan = comm.bcast(gather_plan(root, listings) if comm.rank == 0 else None)
    if comm.rank != 0:
        if comm.rank in plan:
            comm.send_files_to_root([root / f["path"] for f in plan[comm.rank]], chunk_bytes)
        comm.barrier()
        return None
    copied, errors = [], []
    for rank in sorted(plan):
        writers = [VerifyingWriter(root / f["path"], f["bytes"], f["sha256"]) for f in plan[rank]]
        lengths = comm.recv_files_from(rank, writers, chunk_bytes)
        for f, w, n in zip(plan[rank], writers, lengths):
            why = w.commit(sender_failed=n < 0)
            if why is None:
                copied.append(f["path"])
            else:
                errors.append(f"{f['path']} from rank {rank} on {hosts[rank]}: {why}; the copy was discarded, "
                              f"the file is on {hosts[rank]}")
    comm.barrier()
    wanted = {f["path"] for files in plan.values() for f in files}
    present = sorted(f["path"] for files in listings[1:] for f in files
                     if f["path"].startswith("warc/") and f["path"] not in wanted)
    return {"host": hosts[0], "copied": copied, "present": present, "errors": errors}
