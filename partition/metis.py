"""Multi-constraint METIS k-way partitioning through ctypes (and pymetis).

pymetis hardcodes one balance constraint (and silently ignores a second weight), so the two-weight
runs of Türk's models (bytes, pages) call ``METIS_PartGraphKway`` of the
``libmetis.so`` shipped by the ``cmeel-metis`` wheel directly:
``ncon = 2``, ``ubvec = [1 + imb, 1 + imb]``. pymetis stays for
single-constraint runs (:func:`pymetis_part_graph`) and as a cross-check.

The library is looked up as ``<site-packages>/cmeel.prefix/lib/libmetis.so``
on ``sys.path`` (``cmeel-gklib``'s ``libGKlib.so`` beside it is loaded first,
globally, because the wheel's RUNPATH does not resolve); the environment
variable ``ABC_LIBMETIS`` overrides the path.

``idx_t`` and ``real_t`` of that build are 32-bit (``IDXTYPEWIDTH 32`` and
``REALTYPEWIDTH 32`` in its ``metis.h``; :func:`load_libmetis` reads the
header and refuses another width). METIS sums vertex weights per
constraint and edge weights (the edge cut) in ``idx_t``; the arrays handed to
it therefore must keep each total below 2**31. :func:`scale_weights` divides
byte weights by a power-of-two unit so that the total stays at or below
``WEIGHT_LIMIT`` (2**29, headroom for METIS's intermediate sums).
:func:`partition_graph` does that and reports the unit used.

Messages METIS prints on stdout during a successful call (e.g. "Cannot
bisect a graph with 0 vertices" for a tiny graph and many parts) are
collected and re-issued as :class:`MetisWarning`.

Examples
--------
>>> import numpy as np
>>> xadj = np.array([0, 1, 2, 3, 4]); adjncy = np.array([1, 0, 3, 2])  # edges 0-1, 2-3
>>> part, cut = part_graph_kway(xadj, adjncy, np.ones((4, 2), int), 2, seed=1)
>>> sorted(np.bincount(part).tolist()), cut
([2, 2], 0)
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "MetisError",
    "MetisWarning",
    "IDX_MAX",
    "WEIGHT_LIMIT",
    "find_libmetis",
    "METHODS",
    "header_widths",
    "load_libmetis",
    "part_graph_kway",
    "pymetis_part_graph",
    "scale_weights",
    "GraphPartition",
    "partition_graph",
]

#: Largest value of METIS's 32-bit ``idx_t``.
IDX_MAX = 2**31 - 1
#: Bound on every per-constraint total (and on the total edge weight) passed to METIS.
WEIGHT_LIMIT = 2**29

METIS_NOPTIONS = 40
METIS_OK, METIS_ERROR_INPUT, METIS_ERROR_MEMORY, METIS_ERROR = 1, -2, -3, -4
# moptions_et indices of metis.h 5.2
OPT_PTYPE, OPT_OBJTYPE, OPT_CTYPE, OPT_IPTYPE, OPT_RTYPE, OPT_DBGLVL = 0, 1, 2, 3, 4, 5
OPT_NIPARTS, OPT_NITER, OPT_NCUTS, OPT_SEED, OPT_NO2HOP, OPT_ONDISK = 6, 7, 8, 9, 10, 11
OPT_MINCONN, OPT_CONTIG, OPT_COMPRESS, OPT_CCORDER, OPT_PFACTOR = 12, 13, 14, 15, 16
OPT_NSEPS, OPT_UFACTOR, OPT_NUMBERING = 17, 18, 19
OBJTYPE_CUT, OBJTYPE_VOL = 0, 1

_LIB = None


class MetisError(RuntimeError):
    """libmetis is missing or returned an error code."""


class MetisWarning(UserWarning):
    """Something METIS printed on a successful call (e.g. a part it could not fill)."""


@contextlib.contextmanager
def _c_stdout_to(buf: list):
    """Collect what C code prints on file descriptor 1 (METIS reports there)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdout: nothing to redirect
        yield
        return
    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield
        finally:
            libc.fflush(None)
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            buf.append(tmp.read().decode(errors="replace"))


def find_libmetis() -> Path:
    """Path of ``libmetis.so`` from the cmeel-metis wheel.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    MetisError
        When no ``cmeel.prefix/lib/libmetis.so`` is found (install the
        ``partition`` extra: ``pip install cmeel-metis``).
    """
    env = os.environ.get("ABC_LIBMETIS")
    if env:
        if not Path(env).is_file():
            raise MetisError(f"ABC_LIBMETIS={env}: no such file")
        return Path(env)
    seen = []
    roots = list(sys.path)
    try:
        import site

        roots += site.getsitepackages() + [site.getusersitepackages()]
    except Exception:  # pragma: no cover - unusual interpreters
        pass
    for root in roots:
        if not root:
            continue
        cand = Path(root) / "cmeel.prefix" / "lib" / "libmetis.so"
        seen.append(str(cand.parent))
        if cand.is_file():
            return cand
    raise MetisError("libmetis.so not found (looked in <site-packages>/cmeel.prefix/lib on sys.path); "
                     "install it with `pip install cmeel-metis` (the `partition` extra) "
                     "or point ABC_LIBMETIS at a libmetis.so built with 32-bit idx_t/real_t")


def header_widths(lib_path: Path) -> tuple[int, int] | None:
    """``(IDXTYPEWIDTH, REALTYPEWIDTH)`` from the ``metis.h`` beside a libmetis, or None.

    The header is looked up as ``<prefix>/include/metis.h`` for
    ``<prefix>/lib/libmetis.so`` (the cmeel layout).
    """
    h = Path(lib_path).parent.parent / "include" / "metis.h"
    if not h.is_file():
        return None
    widths = {}
    for line in h.read_text(errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "#define" and parts[1] in ("IDXTYPEWIDTH", "REALTYPEWIDTH"):
            widths.setdefault(parts[1], int(parts[2]))
    if len(widths) != 2:
        return None
    return widths["IDXTYPEWIDTH"], widths["REALTYPEWIDTH"]


def load_libmetis():
    """Load libmetis once (with libGKlib, globally) and declare the prototypes.

    Raises
    ------
    MetisError
        The library is missing, cannot be loaded, or its ``metis.h`` declares
        an ``idx_t``/``real_t`` other than 32-bit (this binding's types).
    """
    global _LIB
    if _LIB is not None:
        return _LIB
    path = find_libmetis()
    widths = header_widths(path)
    if widths is not None and widths != (32, 32):
        raise MetisError(f"{path}: metis.h declares IDXTYPEWIDTH {widths[0]} / REALTYPEWIDTH {widths[1]}; "
                         "this binding needs the 32-bit build (cmeel-metis ships one)")
    gk = path.with_name("libGKlib.so")
    try:
        if gk.is_file():
            ctypes.CDLL(str(gk), mode=ctypes.RTLD_GLOBAL)
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise MetisError(f"cannot load {path}: {e}") from None
    P = ctypes.POINTER
    i32, f32 = ctypes.c_int32, ctypes.c_float
    lib.METIS_SetDefaultOptions.argtypes = [P(i32)]
    lib.METIS_SetDefaultOptions.restype = ctypes.c_int
    lib.METIS_PartGraphKway.argtypes = [P(i32), P(i32), P(i32), P(i32), P(i32), P(i32), P(i32),
                                        P(i32), P(f32), P(f32), P(i32), P(i32), P(i32)]
    lib.METIS_PartGraphKway.restype = ctypes.c_int
    lib.METIS_PartGraphRecursive.argtypes = lib.METIS_PartGraphKway.argtypes
    lib.METIS_PartGraphRecursive.restype = ctypes.c_int
    _LIB = lib
    return lib


def _as_idx(a, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.size and a.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers, got dtype {a.dtype}")
    if a.size and (a.min() < -IDX_MAX - 1 or a.max() > IDX_MAX):
        raise ValueError(f"{name} has values outside METIS's 32-bit idx_t")
    return np.ascontiguousarray(a, dtype=np.int32)


def _ptr(a: np.ndarray | None, ctype=ctypes.c_int32):
    return None if a is None else a.ctypes.data_as(ctypes.POINTER(ctype))


def part_graph_kway(xadj, adjncy, vwgt, nparts: int, adjwgt=None, *, imbalance: float | list = 0.05,
                    seed: int | None = None, objtype: str = "cut", ncuts: int = 1,
                    niter: int | None = None, check_symmetry: bool = True,
                    recursive: bool = False) -> tuple[np.ndarray, int]:
    """``METIS_PartGraphKway`` (or ``METIS_PartGraphRecursive``) with ``ncon`` balance constraints.

    Parameters
    ----------
    xadj : array_like of int, shape (n+1,)
    adjncy : array_like of int, shape (2m,)
        Symmetric adjacency without self-loops, 0-based.
    vwgt : array_like of int, shape (n,) or (n, ncon)
        Non-negative vertex weights; ``ncon = vwgt.shape[1]``. Each column
        total must stay below 2**31 (see :func:`scale_weights`).
    nparts : int
        Number of parts, ``1 <= nparts <= n``.
    adjwgt : array_like of int, shape (2m,), optional
        Positive edge weights, equal in both directions; total below 2**31.
    imbalance : float or sequence of float, optional
        Allowed imbalance per constraint; ``ubvec = 1 + imbalance`` (default
        0.05, i.e. ``ubvec = [1.05, 1.05]``).
    seed : int, optional
        ``METIS_OPTION_SEED``.
    objtype : {"cut", "vol"}, optional
    ncuts : int, optional
        ``METIS_OPTION_NCUTS`` (best of that many runs).
    niter : int, optional
        ``METIS_OPTION_NITER``.
    check_symmetry : bool, optional
        Verify that every edge is stored both ways with equal weight
        (O(m log m)); METIS's behaviour on asymmetric input is undefined.
    recursive : bool, optional
        Use recursive bisection (``METIS_PartGraphRecursive``) instead of
        direct k-way partitioning. With two constraints it finds much lower
        cuts on web graphs (page graph of the 20k-URL synthetic web at K=8:
        1.05 M against 1.30–1.51 M for k-way, after the same repair).

    Returns
    -------
    part : numpy.ndarray of int32, shape (n,)
    edgecut : int
        Edge cut reported by METIS.

    Raises
    ------
    ValueError
        Invalid arguments (checked here, before the C call).
    MetisError
        libmetis missing or returning an error code.
    """
    xadj = _as_idx(xadj, "xadj")
    adjncy = _as_idx(adjncy, "adjncy")
    n = xadj.shape[0] - 1
    if xadj.ndim != 1 or n < 0:
        raise ValueError("xadj must be 1-D of length n+1 >= 1")
    if n == 0:
        raise ValueError("graph has no vertices")
    if xadj[0] != 0 or xadj[-1] != adjncy.shape[0] or np.any(np.diff(xadj) < 0):
        raise ValueError("xadj must start at 0, be non-decreasing and end at len(adjncy)")
    if adjncy.size and (adjncy.min() < 0 or adjncy.max() >= n):
        raise ValueError("adjncy holds vertex ids outside [0, n)")
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(xadj))
    if np.any(src == adjncy):
        raise ValueError("graph has self-loops; METIS requires none")
    w = np.asarray(vwgt)
    if w.ndim == 1:
        w = w[:, None]
    if w.ndim != 2 or w.shape[0] != n or w.shape[1] < 1:
        raise ValueError(f"vwgt has shape {np.shape(vwgt)}, expected ({n},) or ({n}, ncon)")
    ncon = w.shape[1]
    if w.size and w.min() < 0:
        raise ValueError("vertex weights must be >= 0")
    totals = np.asarray(w, dtype=np.int64).sum(axis=0)
    if np.any(totals > IDX_MAX):
        raise ValueError(f"vertex-weight totals {totals.tolist()} overflow METIS's 32-bit idx_t; "
                         "scale them (scale_weights)")
    w = _as_idx(w, "vwgt")
    if not isinstance(nparts, (int, np.integer)) or nparts < 1:
        raise ValueError(f"nparts must be an integer >= 1, got {nparts!r}")
    if nparts > n:
        raise ValueError(f"nparts={nparts} exceeds the number of vertices {n}")
    if adjwgt is not None:
        aw64 = np.asarray(adjwgt)
        if aw64.shape != adjncy.shape:
            raise ValueError(f"adjwgt has shape {aw64.shape}, expected {adjncy.shape}")
        if aw64.size and aw64.min() < 1:
            raise ValueError("edge weights must be >= 1")
        if aw64.astype(np.int64).sum() > IDX_MAX:
            raise ValueError("total edge weight overflows METIS's 32-bit idx_t; scale it (scale_weights)")
        adjwgt = _as_idx(aw64, "adjwgt")
    if check_symmetry and adjncy.size:
        fw = src * n + adjncy
        bw = adjncy.astype(np.int64) * n + src
        of, ob = np.argsort(fw, kind="stable"), np.argsort(bw, kind="stable")
        if not np.array_equal(fw[of], bw[ob]):
            raise ValueError("adjacency is not symmetric (every edge must be stored both ways)")
        if adjwgt is not None and not np.array_equal(adjwgt[of], adjwgt[ob]):
            raise ValueError("edge weights differ between the two directions of an edge")
    ub = np.broadcast_to(np.asarray(imbalance, dtype=np.float64), (ncon,))
    if np.any(~np.isfinite(ub)) or np.any(ub <= 0):
        raise ValueError(f"imbalance must be > 0, got {imbalance!r}")
    ubvec = np.ascontiguousarray(1.0 + ub, dtype=np.float32)
    if objtype not in ("cut", "vol"):
        raise ValueError(f"objtype must be 'cut' or 'vol', got {objtype!r}")
    if ncuts < 1:
        raise ValueError("ncuts must be >= 1")

    if nparts == 1:
        return np.zeros(n, dtype=np.int32), 0

    lib = load_libmetis()
    options = np.full(METIS_NOPTIONS, -1, dtype=np.int32)
    lib.METIS_SetDefaultOptions(_ptr(options))
    options[OPT_OBJTYPE] = OBJTYPE_CUT if objtype == "cut" else OBJTYPE_VOL
    options[OPT_NUMBERING] = 0
    options[OPT_NCUTS] = ncuts
    if seed is not None:
        options[OPT_SEED] = int(seed) & 0x7FFFFFFF
    if niter is not None:
        options[OPT_NITER] = int(niter)
    c_n, c_ncon, c_np = ctypes.c_int32(n), ctypes.c_int32(ncon), ctypes.c_int32(int(nparts))
    edgecut = ctypes.c_int32(0)
    part = np.zeros(n, dtype=np.int32)
    w = np.ascontiguousarray(w)
    printed: list = []
    with _c_stdout_to(printed):
        fn = lib.METIS_PartGraphRecursive if recursive else lib.METIS_PartGraphKway
        rc = fn(ctypes.byref(c_n), ctypes.byref(c_ncon), _ptr(xadj), _ptr(adjncy),
                                     _ptr(w), None, _ptr(adjwgt), ctypes.byref(c_np), None,
                                     _ptr(ubvec, ctypes.c_float), _ptr(options), ctypes.byref(edgecut),
                                     _ptr(part))
    said = " ".join(" ".join(printed).replace("*", " ").split())
    if rc != METIS_OK:
        what = {METIS_ERROR_INPUT: "input error", METIS_ERROR_MEMORY: "out of memory"}.get(rc, "error")
        raise MetisError(f"METIS_PartGraph{'Recursive' if recursive else 'Kway'} returned {rc} ({what})" + (f": {said}" if said else ""))
    if said:
        warnings.warn(f"METIS: {said}", MetisWarning, stacklevel=2)
    return part, int(edgecut.value)


def pymetis_part_graph(xadj, adjncy, nparts: int, vweights=None, adjwgt=None, *,
                       imbalance: float = 0.05, seed: int | None = None) -> tuple[np.ndarray, int]:
    """Single-constraint k-way partition with pymetis.

    Parameters
    ----------
    xadj, adjncy : array_like of int
    nparts : int
    vweights : array_like of int, shape (n,), optional
        One weight per vertex (pymetis ignores any second constraint).
    adjwgt : array_like of int, optional
    imbalance : float, optional
        Mapped to ``ufactor = round(1000 * imbalance)``.
    seed : int, optional

    Returns
    -------
    part : numpy.ndarray of int64
    edgecut : int
    """
    try:
        import pymetis
    except ImportError:  # pragma: no cover - depends on the environment
        raise MetisError("pymetis is not installed (pip install pymetis)") from None
    opts = pymetis.Options(ufactor=max(1, int(round(1000 * imbalance))))
    if seed is not None:
        opts.seed = int(seed)
    vw = None if vweights is None else np.asarray(vweights, dtype=np.int64).tolist()
    ew = None if adjwgt is None else np.asarray(adjwgt, dtype=np.int64).tolist()
    adj = pymetis.CSRAdjacency(np.asarray(xadj, dtype=np.int64).tolist(),
                               np.asarray(adjncy, dtype=np.int64).tolist())
    cut, part = pymetis.part_graph(int(nparts), adjacency=adj, vweights=vw, eweights=ew,
                                   recursive=False, options=opts)
    return np.asarray(part, dtype=np.int64), int(cut)


def scale_weights(w, limit: int = WEIGHT_LIMIT) -> tuple[np.ndarray, int]:
    """Divide integer weights by a power-of-two unit until their total fits ``limit``.

    Rounds to nearest, so a weight below half a unit becomes 0. That is
    allowed for vertex weights; edge weights must be raised back to at least
    1 by the caller (as :func:`partition_graph` does).

    Parameters
    ----------
    w : array_like of int
    limit : int, optional

    Returns
    -------
    scaled : numpy.ndarray of int64
    unit : int
        ``scaled ≈ w / unit``; 1 when no scaling was needed.
    """
    w = np.asarray(w, dtype=np.int64)
    unit = 1
    total = int(w.sum())
    while total // unit > limit:
        unit *= 2
    if unit == 1:
        return w.copy(), 1
    return (w + unit // 2) // unit, unit


@dataclass
class GraphPartition:
    """Result of :func:`partition_graph`.

    Attributes
    ----------
    part : numpy.ndarray of int64
        Part of each vertex.
    cut : int
        Cut cost on the true (unscaled) edge costs, after repair and refinement.
    metis_edgecut : int
        Edge cut METIS reported for the winning run (the first run when an
        extra start wins), on the possibly scaled weights, before repair.
    imbalance_pct : list of float
        Imbalance per constraint (bytes, pages), in percent, at the end.
    units : list of int
        Divisor applied to each weight column for METIS (1 = none);
        ``edge_unit`` likewise for edge costs.
    edge_unit : int
    seconds : float
        Wall time of METIS, repair and refinement (all starts).
    repair : dict
        Report of :func:`~abc_crawler.partition.balance.rebalance` and
        :func:`~abc_crawler.partition.balance.refine` for the chosen start.
    start : str
        Which start won: ``"metis"`` or the name of an extra start.
    starts : dict
        Cut and balance of every start, for the record.
    """

    part: np.ndarray
    cut: int
    metis_edgecut: int
    imbalance_pct: list
    units: list
    edge_unit: int
    seconds: float
    repair: dict = field(default_factory=dict)
    start: str = "metis"
    starts: dict = field(default_factory=dict)


#: METIS methods :func:`partition_graph` can run: k-way and recursive bisection.
METHODS = ("kway", "rb")


def partition_graph(g, K: int, imbalance: float = 0.05, seed: int | None = None, *,
                    ncon: int = 2, repair: bool = True, ncuts: int = 1,
                    starts: dict | None = None, methods=("kway",), tries: int = 1) -> GraphPartition:
    """Partition a :class:`~abc_crawler.partition.models.WeightedGraph` with two constraints.

    METIS (``ncon = 2``: bytes and pages, ``ubvec = 1 + imbalance``) gives a
    partition; with ``repair`` it is then made to meet the tolerance exactly
    on the true weights (:func:`~abc_crawler.partition.balance.rebalance`)
    and its cut improved by greedy moves that keep both caps
    (:func:`~abc_crawler.partition.balance.refine`). Extra ``starts``
    (e.g. the site-graph partition projected onto pages) go through the same
    repair and refinement; the balanced result with the lowest cut wins (the
    least imbalanced one if none is balanced).

    Parameters
    ----------
    g : WeightedGraph
        Page or site graph; ``g.vwgt`` columns are (bytes, pages).
    K : int
        Number of parts.
    imbalance : float, optional
        Tolerance ε for both constraints (default 0.05).
    seed : int, optional
    ncon : {2, 1}, optional
        2 = balance bytes and pages (default); 1 = pages only.
    repair : bool, optional
        Repair and refine on the true weights (default True).
    ncuts : int, optional
        METIS runs to pick the best from.
    starts : dict of str to array_like, optional
        Additional initial partitions of ``g``'s vertices, by name.
    methods : sequence of {"kway", "rb"}, optional
        METIS methods to run: ``METIS_PartGraphKway`` and/or
        ``METIS_PartGraphRecursive`` (default k-way only).
    tries : int, optional
        METIS runs per method, with seeds ``seed, seed + 1, …`` (default 1).
        Every run is a start; all go through the same repair and refinement
        and the balanced one with the lowest cut wins. Starts are named
        ``metis`` (k-way, first seed), ``metis-rb`` (recursive bisection,
        first seed), with ``+i`` appended for the i-th further seed.

    Returns
    -------
    GraphPartition
    """
    from ..graph.metrics import imbalance_pct
    from .balance import is_balanced, part_weights, rebalance, refine

    t0 = time.perf_counter()
    if ncon not in (1, 2):
        raise ValueError("ncon must be 1 or 2")
    vw = g.vwgt[:, -ncon:]
    cols, units = [], []
    for c in range(vw.shape[1]):
        s, u = scale_weights(vw[:, c])
        cols.append(s)
        units.append(u)
    keep = [c for c in range(len(cols)) if cols[c].sum() > 0] or [len(cols) - 1]
    W = np.stack([cols[c] for c in keep], axis=1)
    ew, eunit = scale_weights(g.adjwgt)
    ew = np.maximum(ew, 1)
    if tries < 1:
        raise ValueError("tries must be >= 1")
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise ValueError(f"methods must be a non-empty subset of {METHODS}, got {methods!r}")
    cands, edgecuts = {}, {}
    for method in methods:
        for i in range(tries):
            name = ("metis" if method == "kway" else "metis-rb") + (f"+{i}" if i else "")
            sd = None if seed is None else seed + i
            if seed is None and i:
                sd = i
            part, edgecut = part_graph_kway(g.xadj, g.adjncy, W, K, ew, imbalance=imbalance, seed=sd,
                                            ncuts=ncuts, check_symmetry=False, recursive=method == "rb")
            cands[name] = part.astype(np.int64)
            edgecuts[name] = edgecut
    for name, p in (starts or {}).items():
        p = np.asarray(p, dtype=np.int64)
        if p.shape != (g.n_vertices,) or (p.size and (p.min() < 0 or p.max() >= K)):
            raise ValueError(f"start {name!r} is not a {K}-way partition of the {g.n_vertices} vertices")
        cands[name] = p
    results = {}
    for name, p in cands.items():
        rep: dict = {}
        if repair and K > 1:
            p, r1 = rebalance(p, vw, K, imbalance, g.xadj, g.adjncy, g.adjwgt)
            p, r2 = refine(p, vw, K, imbalance, g.xadj, g.adjncy, g.adjwgt)
            rep = {"moves": r1["moves"], "feasible": r1["feasible"], "refine_moves": r2["moves"],
                   "refine_gain": r2["gain"]}
        imb = np.atleast_1d(imbalance_pct(part_weights(p, g.vwgt, K)))
        results[name] = (p, g.cut(p), is_balanced(p, vw, K, imbalance), float(imb.max()), rep,
                         [float(x) for x in imb])
    best = min(results, key=lambda k: (not results[k][2], results[k][1] if results[k][2] else results[k][3]))
    p, cut, _, _, rep, imb = results[best]
    edgecut = edgecuts.get(best, edgecuts[next(iter(edgecuts))])
    return GraphPartition(p, cut, edgecut, imb, units, eunit, time.perf_counter() - t0, rep, best,
                          {k: {"cut": v[1], "balanced": v[2], "imbalance_pct": v[5]} for k, v in results.items()})
