"""Read a finished session directory for ``abc-report``.

:func:`load_session` reads ``stats.json`` (the keys the report compares must be
there), ``manifest.json`` (optional), ``graph.npz`` and ``exchange.npz`` into a
:class:`SessionFiles`; anything missing or unreadable is a :class:`ReportError`
naming the file (one line, exit status 2).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..exceptions import AbcError
from ..web.ownership import N_BUCKETS
from ..store.session import SessionGraph, load_graph

__all__ = ["PROG", "ReportError", "SessionFiles", "load_session", "STATS_KEYS"]

#: The command's name, first word of its messages.
PROG = "abc-report"


class ReportError(AbcError):
    """Bad input: reported as one line, exit status 2."""


@dataclass
class SessionFiles:
    """A finished session directory as the report reads it.

    Attributes
    ----------
    path : pathlib.Path
    stats : dict
        ``stats.json``.
    manifest : dict
        ``manifest.json`` ({} if absent).
    graph : SessionGraph
    exchange : dict of numpy.ndarray
        ``exchange.npz`` (``rows``, ``step_volume``, ``step_pages``, ``step_t``).
    """

    path: Path
    stats: dict
    manifest: dict
    graph: SessionGraph
    exchange: dict

    @property
    def ranks(self) -> int:
        return int(self.stats.get("ranks") or self.graph.ranks)

    @property
    def assignment(self) -> str:
        """``hash``, ``site-hash`` or ``partvec:<path>`` (manifest first, then stats)."""
        return str(self.manifest.get("assignment") or self.stats.get("assignment") or "hash")

    @property
    def config(self) -> dict:
        c = self.manifest.get("config")
        return c if isinstance(c, dict) else {}

    @property
    def n_buckets(self) -> int:
        return int(self.config.get("assign_buckets") or N_BUCKETS)

    @property
    def remap(self) -> bool:
        return bool(self.config.get("remap", False))

    @property
    def name(self) -> str:
        return self.path.name or str(self.path)


def _read_json(path: Path, required: bool) -> dict:
    if not path.is_file():
        if required:
            raise ReportError(f"{path.parent}: no {path.name} (is this a finished session directory?)")
        return {}
    try:
        with open(path, "rb") as fh:
            obj = json.load(fh)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: unreadable ({e})") from None
    if not isinstance(obj, dict):
        raise ReportError(f"{path}: expected a JSON object")
    return obj


#: The figures of ``stats.json`` the report compares, by section.
STATS_KEYS = {"exchange": ("volume_bytes", "wire_bytes", "messages_thesis", "messages_mpi"),
               "imbalance": ("storage_pct", "request_pct")}


def load_session(path) -> SessionFiles:
    """Read a session directory; :class:`ReportError` (one line) for anything missing.

    Parameters
    ----------
    path : str or path-like
        Session directory holding ``stats.json``, ``graph.npz`` and
        ``exchange.npz`` (``manifest.json`` is read when present).
    """
    p = Path(path)
    if not p.exists():
        raise ReportError(f"{p}: no such session directory")
    if not p.is_dir():
        raise ReportError(f"{p}: not a directory (give the session directory)")
    stats = _read_json(p / "stats.json", required=True)
    for sect, keys in STATS_KEYS.items():
        d = stats.get(sect)
        missing = [k for k in keys if not isinstance(d, dict) or k not in d]
        if missing:
            raise ReportError(f"{p / 'stats.json'}: missing {sect}.{missing[0]}")
    manifest = _read_json(p / "manifest.json", required=False)
    if not (p / "graph.npz").is_file():
        raise ReportError(f"{p}: no graph.npz (is this a finished session directory?)")
    try:
        graph = load_graph(p)
    except (OSError, ValueError, KeyError) as e:
        raise ReportError(f"{p / 'graph.npz'}: unreadable ({e})") from None
    ex_path = p / "exchange.npz"
    if not ex_path.is_file():
        raise ReportError(f"{p}: no exchange.npz (is this a finished session directory?)")
    try:
        with np.load(ex_path, allow_pickle=False) as z:
            exchange = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise ReportError(f"{ex_path}: unreadable ({e})") from None
    rows = exchange.get("rows")
    if rows is None or rows.ndim != 2 or rows.shape[1] != 5:
        raise ReportError(f"{ex_path}: 'rows' missing or not of shape (N, 5)")
    exchange.setdefault("step_volume", np.zeros((0, graph.ranks), np.int64))
    exchange.setdefault("step_t", np.zeros(0))
    return SessionFiles(p, stats, manifest, graph, exchange)
