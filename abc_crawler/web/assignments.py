"""The assignment ``--assign`` names, built from its spelling: hash, site-hash, or a part vector
read from a file (with :func:`abc_crawler.partition.partvec.load_partvec`). It sits above both
:mod:`abc_crawler.web.ownership` (the owner rules) and :mod:`abc_crawler.partition.partvec` (the
vector's file), which imports the owner rules: so neither imports the other back.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..exceptions import AssignmentError
from .ownership import (N_BUCKETS, Assignment, HashAssignment, PartvecAssignment, SiteHashAssignment, owners_hash,
                        owners_measured, owners_site_hash, partvec_owners)
from ..store.session import SessionGraph
from ..partition.partvec import load_partvec, remap as remap_pv

__all__ = ["make_assignment", "load_partvec_assignment", "owners_for_assignment"]


def load_partvec_assignment(path: str, ranks: int, remap: bool = False) -> PartvecAssignment:
    """Read a part vector (file, or a session directory holding ``partvec.npz``) for ``ranks`` ranks.

    A vector made for another number of ranks is refused unless ``remap``: then
    whole parts are merged, or (part, host) groups split, onto the new ranks by
    greedy bin packing of their bytes and pages (:func:`abc_crawler.partition.partvec.remap`).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "partvec.npz"
    try:
        pv = load_partvec(p)
    except FileNotFoundError:
        raise AssignmentError(f"assign: {p}: no part vector (run abc-repartition on the session first)") from None
    except ValueError as exc:
        raise AssignmentError(f"assign: {exc}") from None
    if pv.K != ranks:
        if not remap:
            raise AssignmentError(
                f"assign: {p} was made for {pv.K} ranks, this crawl has {ranks}; "
                f"run abc-repartition --parts {ranks}, or pass --remap to map its parts onto {ranks} ranks")
        pv = remap_pv(pv, ranks)
    return PartvecAssignment(pv, str(p))


def make_assignment(spec: str, ranks: int, buckets: int = N_BUCKETS, remap: bool = False) -> Assignment:
    """Build the assignment named by ``--assign``: hash, site-hash, or a part-vector path."""
    if spec == "hash":
        return HashAssignment(ranks, buckets)
    if spec == "site-hash":
        return SiteHashAssignment(ranks, buckets)
    return load_partvec_assignment(spec, ranks, remap)


def owners_for_assignment(graph: SessionGraph, assignment: str, K: int | None = None,
                          n_buckets: int = N_BUCKETS, session_dir: str | os.PathLike | None = None,
                          measured: bool = True) -> np.ndarray:
    """Owners of every URL under a session's assignment string.

    Parameters
    ----------
    graph : SessionGraph
    assignment : str
        ``"hash"``, ``"site-hash"`` or ``"partvec:<path>"`` (as in
        ``stats.json``). A relative partvec path is resolved against
        ``session_dir`` first, then the working directory.
    K : int, optional
        Number of ranks; default ``graph.ranks``.
    n_buckets : int, optional
    session_dir : path, optional
    measured : bool, optional
        If True (default), requested URLs keep their measured ``url_rank``
        and the assignment only decides the never-requested ones.

    Returns
    -------
    numpy.ndarray of int64, shape (U,)
    """
    K = graph.ranks if K is None else K
    if assignment == "hash":
        o = owners_hash(graph, K, n_buckets)
    elif assignment == "site-hash":
        o = owners_site_hash(graph, K, n_buckets)
    elif assignment.startswith("partvec:"):
        p = assignment[len("partvec:"):]
        cand = [os.path.join(session_dir, p)] if session_dir is not None and not os.path.isabs(p) else []
        cand.append(p)
        path = next((c for c in cand if os.path.exists(c)), cand[-1])
        pv = load_partvec(path)
        if pv.K != K:
            # the crawl only accepts a vector for another K with --remap, which maps it like this
            pv = remap_pv(pv, K)
        o = partvec_owners(pv, graph)
    else:
        raise ValueError(f"unknown assignment {assignment!r} (hash, site-hash, partvec:<path>)")
    return owners_measured(graph, o) if measured else o
