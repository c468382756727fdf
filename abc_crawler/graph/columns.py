"""Growable columns of rank 0's tables (:mod:`abc_crawler.graph.coordinator`): NumPy arrays and
one text buffer, no Python object per row (issue 35)."""
from __future__ import annotations

import numpy as np

__all__ = ["URLText"]


class _Rows:
    """A growable 2-D table (amortized doubling): per-superstep counters stay compact NumPy
    rows however long the crawl, not a Python tuple or list per superstep."""

    def __init__(self, width: int, dtype=np.int64):
        self.a = np.zeros((64, width), dtype=dtype)
        self.n = 0

    def _reserve(self, n: int) -> None:
        if n > len(self.a):
            grown = np.zeros((max(n, 2 * len(self.a)), self.a.shape[1]), dtype=self.a.dtype)
            grown[:self.n] = self.a[:self.n]
            self.a = grown

    def append(self, row) -> None:
        self._reserve(self.n + 1)
        self.a[self.n] = row
        self.n += 1

    def _row(self, i: int) -> None:
        if i >= self.n:
            self._reserve(i + 1)
            self.n = i + 1

    def add_at(self, i: int, col: int, value) -> None:
        """``table[i, col] += value``, rows up to ``i`` created (zero) as needed."""
        self._row(i)
        self.a[i, col] += value

    def set_at(self, i: int, col: int, value) -> None:
        self._row(i)
        self.a[i, col] = value

    def view(self) -> np.ndarray:
        return self.a[:self.n]


class _Col:
    """A growable 1-D column (grown by half: at most a third of it unused): one NumPy array, no
    Python object per row."""

    __slots__ = ("a", "n", "fill")

    def __init__(self, dtype, fill=0):
        self.a = np.full(64, fill, dtype=dtype)
        self.n = 0
        self.fill = fill

    def __len__(self) -> int:
        return self.n

    def grow(self, k: int) -> None:
        """``k`` more rows, at the fill value."""
        n = self.n + k
        if n > len(self.a):
            grown = np.full(max(n, len(self.a) + len(self.a) // 2), self.fill, dtype=self.a.dtype)
            grown[:self.n] = self.a[:self.n]
            self.a = grown
        self.n = n

    def extend(self, values) -> None:
        values = np.asarray(values)
        n0 = self.n
        self.grow(len(values))
        self.a[n0:self.n] = values

    def view(self) -> np.ndarray:
        return self.a[:self.n]

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)) and not 0 <= i < self.n:
            raise IndexError(i)
        return self.a[:self.n][i]


class URLText:
    """The URL table's text: every row's URL, UTF-8, one after the other with a ``\\n`` after each
    (a row whose text never came has the empty one), and the offset of each; ``len`` and ``[i]`` as
    a list of ``str`` would have them, at ~URL length + 8 B a row instead of ~60 B more."""

    def __init__(self):
        self.blob = bytearray()
        self.off = _Col(np.int64)
        self.off.extend([0])
        self._late: dict[int, str] = {}       # a row's text that came after the row (not expected)

    def __len__(self) -> int:
        return len(self.off) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):                 # a range of rows, decoded at once
            start, stop, step = i.indices(len(self))
            if step != 1 or stop <= start:
                return [self[j] for j in range(start, stop, step)]
            o = self.off.a
            out = self.blob[o[start]:o[stop] - 1].decode("utf-8").split("\n")
            if self._late:
                for j, t in self._late.items():
                    if start <= j < stop and not out[j - start]:
                        out[j - start] = t
            return out
        if not 0 <= i < len(self):
            raise IndexError(i)
        o = self.off.a
        s = self.blob[o[i]:o[i + 1] - 1].decode("utf-8")
        return s or self._late.get(i, "")

    def __iter__(self):
        yield from self[:]

    def text_lengths(self, rows: np.ndarray) -> np.ndarray:
        """The text length of each row (0: none came)."""
        o = self.off.a
        return o[rows + 1] - o[rows] - 1

    def append_blob(self, blob: bytes, n: int) -> None:
        """``n`` rows' texts joined by ``\\n`` (a report's ``new_urls``), in order."""
        if n == 0:
            return
        ends = np.flatnonzero(np.frombuffer(blob, dtype=np.uint8) == 10)
        if len(ends) != n - 1:
            raise ValueError(f"a report's URL blob holds {len(ends) + 1} URLs for {n} fingerprints")
        base = len(self.blob)
        self.blob += blob
        self.blob += b"\n"
        self.off.extend(np.concatenate([ends + 1, [len(blob) + 1]]) + base)

    def append(self, texts: list[str]) -> None:
        if texts:
            self.append_blob("\n".join(texts).encode("utf-8"), len(texts))

    def empty(self, n: int) -> None:
        """``n`` rows without text (yet)."""
        if n:
            base = len(self.blob)
            self.blob += b"\n" * n
            self.off.extend(np.arange(base + 1, base + n + 1))

    def set_late(self, i: int, text: str) -> None:
        if text and not self[i]:
            self._late[i] = text

    def nbytes(self) -> int:
        return len(self.blob) + self.off.a.nbytes
