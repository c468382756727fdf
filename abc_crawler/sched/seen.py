"""One rank's URL-seen set, with the "reported to rank 0" mark folded in.

``FPSet`` (Cython, ``kernels/_fpset.pyx``) holds exact 64-bit fingerprints in an
open-addressing table with one flag byte per slot: ``SEEN`` (the URL-seen set:
URLs admitted here or sent to their owner) and ``REPORTED`` (URLs whose text
rank 0 already has from this rank). About 13–26 bytes per fingerprint instead of
the 80 + 34 of two Python sets of ints.

``PyFPSet`` is the pure-Python reference with the same interface (the tests
check the two against each other). A crawl never falls back to it: without the compiled
extension (a broken build) :func:`new_fpset` refuses, saying how to build it.

>>> s = new_fpset()
>>> s.add(2**64 - 1), s.add(2**64 - 1), (2**64 - 1) in s, len(s)
(True, False, True, 1)
>>> s.report(7), s.report(7), 7 in s, s.is_reported(7)
(True, False, False, True)
"""
from __future__ import annotations

import numpy as np

__all__ = ["SEEN", "REPORTED", "PyFPSet", "new_fpset"]

SEEN = 1
REPORTED = 2


class PyFPSet:
    """Reference implementation: a dict fingerprint -> flags."""

    def __init__(self, capacity: int = 1024, journal: bool = False):
        self._f: dict[int, int] = {}
        self.n_reported = 0
        self._n_seen = 0
        self.journal = journal
        self._changes: list[int] = []

    def _set(self, fp: int, bit: int) -> bool:
        if not 0 <= fp < 1 << 64:
            raise OverflowError("fingerprint out of the uint64 range")
        f = self._f.get(fp, 0)
        if f & bit:
            return False
        self._f[fp] = f | bit
        if self.journal:
            self._changes.append(fp)
        return True

    def add(self, fp: int) -> bool:
        if self._set(fp, SEEN):
            self._n_seen += 1
            return True
        return False

    def __contains__(self, fp: int) -> bool:
        return bool(self._f.get(fp, 0) & SEEN)

    def __len__(self) -> int:
        return self._n_seen

    def report(self, fp: int) -> bool:
        if self._set(fp, REPORTED):
            self.n_reported += 1
            return True
        return False

    def is_reported(self, fp: int) -> bool:
        return bool(self._f.get(fp, 0) & REPORTED)

    @property
    def journal(self) -> bool:
        return self._journal

    @journal.setter
    def journal(self, on: bool) -> None:
        self._journal = bool(on)
        if not on:
            self._changes = []

    def take_changes(self) -> tuple[np.ndarray, np.ndarray]:
        keys = np.array(self._changes, dtype=np.uint64)
        flags = np.array([self._f[k] for k in self._changes], dtype=np.uint8)
        self._changes = []
        return keys, flags

    def seen_keys(self) -> np.ndarray:
        return np.array([k for k, f in self._f.items() if f & SEEN], dtype=np.uint64)

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.array(list(self._f), dtype=np.uint64),
                np.array(list(self._f.values()), dtype=np.uint8))

    def merge(self, keys, flags) -> None:
        if len(keys) != len(flags):
            raise ValueError("keys and flags differ in length")
        for k, new in zip(np.asarray(keys, dtype=np.uint64).tolist(), np.asarray(flags, dtype=np.uint8).tolist()):
            new &= 3
            if not new:
                continue
            f = self._f.get(k, 0)
            if new & SEEN and not f & SEEN:
                self._n_seen += 1
            if new & REPORTED and not f & REPORTED:
                self.n_reported += 1
            self._f[k] = f | new


try:
    from ..kernels._fpset import FPSet
except ImportError as exc:  # a broken build: said when a crawl needs it, never hidden
    FPSet = None
    _MISSING = f"{type(exc).__name__}: {exc}"


def new_fpset(journal: bool = False):
    """The compiled fingerprint set (``kernels/_fpset.pyx``); an :class:`~abc_crawler.exceptions.AbcError`
    when it was not built."""
    if FPSet is None:
        from ..exceptions import AbcError

        raise AbcError("the compiled URL-seen set abc_crawler.kernels._fpset is missing "
                       f"({_MISSING}): build the extensions with `make venv` (or `pip install -e .`)")
    return FPSet(journal=journal)
