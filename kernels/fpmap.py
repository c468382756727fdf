"""Exact 64-bit keys to int64 values: the compiled :class:`FPMap` (``_fpmap.pyx``), its pure-Python
reference :class:`PyFPMap` (the tests check the two against each other) and :func:`new_fpmap`,
which refuses, saying how to build it, when the extension is missing (no silent fallback).

>>> m = new_fpmap()
>>> m.put(2**64 - 1, 5); m.get(2**64 - 1), m.get(3), len(m)
(5, -1, 1)
>>> rows, new = m.intern(np.array([7, 2**64 - 1, 7, 9], dtype=np.uint64), start=1)
>>> rows.tolist(), new.tolist()
([1, 5, 1, 2], [7, 9])
"""
from __future__ import annotations

import numpy as np

__all__ = ["PyFPMap", "new_fpmap"]


class PyFPMap:
    """Reference implementation: a dict."""

    def __init__(self, capacity: int = 1024):
        self._d: dict[int, int] = {}

    def get(self, k: int, default: int = -1) -> int:
        return self._d.get(int(k), default)

    def put(self, k: int, v: int) -> None:
        self._d[int(k)] = int(v)

    def __contains__(self, k: int) -> bool:
        return int(k) in self._d

    def __len__(self) -> int:
        return len(self._d)

    def lookup(self, ks, default: int = -1) -> np.ndarray:
        return np.array([self._d.get(k, default) for k in np.asarray(ks, dtype=np.uint64).tolist()], dtype=np.int64)

    def intern(self, ks, start: int) -> tuple[np.ndarray, np.ndarray]:
        out, fresh = [], []
        for k in np.asarray(ks, dtype=np.uint64).tolist():
            v = self._d.get(k)
            if v is None:
                v = self._d[k] = start + len(fresh)
                fresh.append(k)
            out.append(v)
        return np.array(out, dtype=np.int64), np.array(fresh, dtype=np.uint64)

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.array(list(self._d), dtype=np.uint64), np.array(list(self._d.values()), dtype=np.int64))


try:
    from abc_crawler.kernels._fpmap import FPMap
except ImportError as exc:  # a broken build: said when it is needed, never hidden
    FPMap = None
    _MISSING = f"{type(exc).__name__}: {exc}"


def new_fpmap(capacity: int = 1024):
    """The compiled map; an :class:`~abc_crawler.exceptions.AbcError` when it was not built."""
    if FPMap is None:
        from abc_crawler.exceptions import AbcError

        raise AbcError("the compiled fingerprint map abc_crawler.kernels._fpmap is missing "
                       f"({_MISSING}): build the extensions with `make venv` (or `pip install -e .`)")
    if capacity < 1:
        raise ValueError("capacity must be >= 1")
    return FPMap(capacity)
