"""The validator table of a session, and what a later session (``--previous``) takes from it.

Every session writes, at its end, ``validators.npz`` beside its graph: one row per URL that got
an HTTP answer stored in the session's WARC files (format: ``docs/SESSION_FORMAT.md``) — the
validators the server sent (``ETag``, ``Last-Modified``), the status, the payload digest, the
record it lives in (file, offset, length, ``WARC-Date``), the record that holds its payload
(itself, or for a revisit the earlier record it refers to), and the body size it stands for.

* Each rank collects the rows of the pages it stores (:class:`ValidatorLog`, fed by the WARC
  writer once a page's records are in the file); the rows since the last checkpoint go into the
  checkpoint log, so a resume keeps exactly the rows of the records it keeps; at the end the ranks
  send their rows to rank 0 (:meth:`abc_crawler.mpi.exchange.Communicator.gather_bytes`), which writes
  the table (:func:`write_table`).
* ``abc-crawl --previous SESSION``: rank 0 reads the earlier session's table and graph
  (:func:`previous_shares`), gives every row to the rank that owns its URL *in the new session*
  (so K or the assignment may change) with the links the page had, and sends each rank only its
  share (``Scatterv``). A rank looks its URLs up by fingerprint (:class:`PreviousShare`): a URL
  answered 200 before, whose payload is in a WARC file, is asked with ``If-None-Match`` /
  ``If-Modified-Since``; a 304 is stored as a revisit of that payload and the page keeps the links
  it had. URLs the earlier session knew (links it found) but never requested become seeds.

Examples
--------
>>> row = {c: ([""] if kind == "str" else [0]) for c, kind in COLUMNS.items()} | {"etag": ['"x1"']}
>>> unpack_table(concat_tables([pack_table(row), pack_table(row)]))["etag"]
['"x1"', '"x1"']
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..exceptions import ConfigError
from .session import atomic_write_bytes, npz_bytes, npz_stored_bytes, pack_strings, take_strings, unpack_strings
from ..web.urls import fingerprint

__all__ = ["COLUMNS", "ValidatorLog", "PreviousPage", "PreviousShare", "pack_table", "unpack_table",
           "concat_tables", "write_table", "load_table", "previous_shares", "TABLE_FORMAT", "SPILL_ROWS"]

TABLE_FORMAT = 1

#: the columns of a validator table: "str" (UTF-8, packed) or a NumPy dtype
COLUMNS: dict[str, str] = {
    "url": "str", "fp": "uint64", "status": "int16", "etag": "str", "last_modified": "str",
    "digest": "str", "file": "str", "offset": "int64", "length": "int64", "date": "str",
    "payload_url": "str", "payload_date": "str", "body_bytes": "int64", "not_modified": "bool",
}


def pack_table(cols: dict) -> dict[str, np.ndarray]:
    """Columns (lists) as arrays: a string column ``c`` as ``c_blob`` + ``c_off``."""
    out = {}
    for c, kind in COLUMNS.items():
        if kind == "str":
            out[f"{c}_blob"], out[f"{c}_off"] = pack_strings(cols[c])
        else:
            out[c] = np.asarray(cols[c], dtype=kind)
    return out


def unpack_table(arrays) -> dict[str, list | np.ndarray]:
    """The inverse of :func:`pack_table` (strings as lists)."""
    return {c: (unpack_strings(arrays[f"{c}_blob"], arrays[f"{c}_off"]) if kind == "str" else np.asarray(arrays[c]))
            for c, kind in COLUMNS.items()}


def concat_tables(tables: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Packed tables one after the other."""
    out = {}
    for c, kind in COLUMNS.items():
        if kind == "str":
            blobs = [t[f"{c}_blob"] for t in tables]
            offs, base = [np.zeros(1, np.int64)], 0
            for t in tables:
                o = np.asarray(t[f"{c}_off"], dtype=np.int64)
                offs.append(o[1:] + base)
                base += int(o[-1]) if len(o) else 0
            out[f"{c}_blob"] = np.concatenate(blobs) if blobs else np.zeros(0, np.uint8)
            out[f"{c}_off"] = np.concatenate(offs)
        else:
            parts = [np.asarray(t[c], dtype=kind) for t in tables]
            out[c] = np.concatenate(parts) if parts else np.zeros(0, dtype=kind)
    return out


def _rows(table: dict[str, np.ndarray]) -> int:
    return len(table["fp"])


#: rows a rank keeps as Python objects before it packs them (and, with a spill file, writes them out)
SPILL_ROWS = 4096


class ValidatorLog:
    """One rank's validator rows: appended as its pages are stored (:meth:`on_page`, the WARC
    writer's callback), packed at every checkpoint (:meth:`take_increment`, saved in the checkpoint
    log; :meth:`apply_increment` on resume), sent to rank 0 at the end (:meth:`to_bytes`).

    With a ``spill`` file (what a crawling rank uses: ``SESSION/spill/validators-rank-NNNNN.bin``)
    the packed rows go there, every :data:`SPILL_ROWS` rows and at every checkpoint, and the rank
    holds at most that many rows in memory however many pages it stores (issue 35: they were
    ~380 B a page, kept to the end); :meth:`to_bytes` reads them back once, at the end. Without
    one (tests, tools) the packed rows stay in memory."""

    def __init__(self, spill: str | os.PathLike | None = None):
        self.spill = Path(spill) if spill is not None else None
        self._fh = None
        self.reset()

    def reset(self) -> None:
        """No rows (a resume starts here, then applies the saved increments)."""
        self._cols: dict[str, list] = {c: [] for c in COLUMNS}
        self._chunks: list[dict[str, np.ndarray]] = []   # packed rows (in memory: no spill file)
        self._parts: list[tuple[int, int, int]] = []    # (offset, bytes, rows) of each packed part spilled
        self._taken = 0                                  # parts already returned by take_increment
        self._rows_packed = 0
        self._carry: dict[str, "PreviousPage"] = {}     # URL -> the earlier answer a 304 stands for
        if self.spill is not None:
            self.spill.parent.mkdir(parents=True, exist_ok=True)
            if self._fh is not None:
                self._fh.close()
            self._fh = open(self.spill, "w+b")

    def __len__(self) -> int:
        return len(self._cols["fp"]) + self._rows_packed

    @property
    def rows_in_memory(self) -> int:
        """Rows held as Python objects or packed in memory (not spilled)."""
        return len(self._cols["fp"]) + sum(_rows(t) for t in self._chunks)

    def expect_not_modified(self, url: str, prev: "PreviousPage") -> None:
        """The page at ``url`` was answered 304: its row carries the earlier answer's validators
        (unless the 304 sent new ones) and body size."""
        self._carry[url] = prev

    def on_page(self, rec) -> None:
        """A page's answer is stored (an :class:`abc_crawler.store.warc.PageRecord`)."""
        r = rec.response
        cols = self._cols
        prev = self._carry.pop(r.url, None) if rec.kind == "not_modified" else None
        etag = r.header("etag")
        lm = r.header("last-modified")
        if prev is not None:
            etag = etag if etag is not None else prev.etag
            lm = lm if lm is not None else prev.last_modified
        cols["url"].append(r.url)
        cols["fp"].append(fingerprint(r.url))
        cols["status"].append(r.status)
        cols["etag"].append(etag or "")
        cols["last_modified"].append(lm or "")
        cols["digest"].append(rec.digest)
        cols["file"].append(rec.file)
        cols["offset"].append(rec.offset)
        cols["length"].append(rec.length)
        cols["date"].append(rec.date)
        cols["payload_url"].append(rec.payload_url)
        cols["payload_date"].append(rec.payload_date)
        cols["body_bytes"].append(prev.body_bytes if prev is not None else len(r.body))
        cols["not_modified"].append(rec.kind == "not_modified")
        if self._fh is not None and len(cols["fp"]) >= SPILL_ROWS:
            self._pack()

    def _pack(self) -> None:
        """The rows in Python lists packed: written to the spill file, or kept packed."""
        t = pack_table(self._cols)
        self._cols = {c: [] for c in COLUMNS}
        self._store(t)

    def _store(self, t: dict[str, np.ndarray]) -> None:
        """A packed part: into the spill file, or kept in memory without one."""
        n = _rows(t)
        if not n:
            return
        self._rows_packed += n
        if self._fh is None:
            self._chunks.append(t)
            return
        data = npz_bytes(**t)
        off = self._fh.seek(0, os.SEEK_END)
        self._fh.write(data)
        self._parts.append((off, len(data), n))

    def _read_parts(self, parts) -> list[dict[str, np.ndarray]]:
        fh = self._fh
        fh.flush()
        out = []
        for off, size, _ in parts:
            fh.seek(off)
            with np.load(io.BytesIO(fh.read(size)), allow_pickle=False) as z:
                out.append({k: z[k] for k in z.files})
        return out

    def take_increment(self) -> dict[str, np.ndarray]:
        """The rows since the last call, packed (kept, and returned for the checkpoint log)."""
        if self._fh is None:
            start = len(self._chunks)
            self._pack()
            new = self._chunks[start:]
        else:
            self._pack()
            new = self._read_parts(self._parts[self._taken:])
            self._taken = len(self._parts)
        if len(new) == 1:
            return new[0]
        return concat_tables(new) if new else pack_table(self._cols)

    def apply_increment(self, t: dict[str, np.ndarray]) -> None:
        """A resume: rows saved by :meth:`take_increment` before."""
        self._store(t)
        self._taken = len(self._parts)

    def table(self) -> dict[str, np.ndarray]:
        """Every row so far, packed."""
        self._pack()
        tables = self._chunks if self._fh is None else self._read_parts(self._parts)
        return concat_tables(tables) if tables else pack_table(self._cols)

    def to_bytes(self) -> bytes:
        """Every row, packed, as ``.npz`` bytes for rank 0 (:func:`write_table`; not compressed)."""
        return npz_stored_bytes(**self.table())

    def close(self, remove: bool = True) -> None:
        """The spill file closed (and removed: the rows went to rank 0)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            if remove:
                self.spill.unlink(missing_ok=True)
                try:
                    self.spill.parent.rmdir()
                except OSError:
                    pass


def write_table(session_dir: str | os.PathLike, parts: list[bytes]) -> int:
    """Rank 0: write ``validators.npz`` from every rank's :meth:`ValidatorLog.to_bytes`, rows sorted
    by fingerprint; returns the number of rows."""
    tables = []
    for data in parts:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            tables.append({k: z[k] for k in z.files})
    t = concat_tables(tables)
    order = np.argsort(t["fp"], kind="stable")
    out = {}
    for c, kind in COLUMNS.items():    # reordered packed, with no Python object per row
        if kind == "str":
            out[f"{c}_blob"], out[f"{c}_off"] = take_strings(t[f"{c}_blob"], t[f"{c}_off"], order)
        else:
            out[c] = np.asarray(t[c], dtype=kind)[order]
    atomic_write_bytes(Path(session_dir) / "validators.npz", npz_bytes(format=np.int64(TABLE_FORMAT), **out))
    return len(order)


def load_table(session_dir: str | os.PathLike) -> dict[str, list | np.ndarray]:
    """``validators.npz`` of a session (columns as lists and arrays)."""
    p = Path(session_dir) / "validators.npz"
    with np.load(p, allow_pickle=False) as z:
        version = int(z["format"])
        if version != TABLE_FORMAT:
            raise ValueError(f"{p}: validator table format {version}, this ABC reads {TABLE_FORMAT}")
        return unpack_table(z)


# -- a later session ------------------------------------------------------------------------------

class PreviousPage(NamedTuple):
    """What a rank knows of one of its URLs from the earlier session."""

    etag: str
    last_modified: str
    digest: str
    payload_url: str
    payload_date: str
    body_bytes: int
    node: bool
    links: list[str]
    #: the kind of each of ``links`` (:data:`abc_crawler.web.parser.NAV`, ``EMBED``, ``REDIRECT``,
    #: ``REFRESH``), as the earlier session's graph has it
    kinds: list[int]

    def conditional_headers(self) -> tuple[tuple[str, str], ...]:
        """``If-None-Match`` and/or ``If-Modified-Since`` with the validators the server sent."""
        h = []
        if self.etag:
            h.append(("If-None-Match", self.etag))
        if self.last_modified:
            h.append(("If-Modified-Since", self.last_modified))
        return tuple(h)


_SHARE_STR = ("etag", "last_modified", "digest", "payload_url", "payload_date")


class PreviousShare:
    """One rank's share of the earlier session: its URLs that can be asked conditionally, by
    fingerprint (sorted; binary search), with the links each page had; and the seeds."""

    def __init__(self, arrays: dict):
        self.fp = np.asarray(arrays["fp"], dtype=np.uint64)
        self.strings = {c: unpack_strings(arrays[f"{c}_blob"], arrays[f"{c}_off"]) for c in _SHARE_STR}
        self.body_bytes = np.asarray(arrays["body_bytes"], dtype=np.int64)
        self.node = np.asarray(arrays["node"], dtype=bool)
        self.link_off = np.asarray(arrays["link_off"], dtype=np.int64)
        self.link_idx = np.asarray(arrays["link_idx"], dtype=np.int64)
        self.link_kind = np.asarray(arrays["link_kind"], dtype=np.uint8)
        self.link_urls = unpack_strings(arrays["link_urls_blob"], arrays["link_urls_off"])
        self.seeds = unpack_strings(arrays["seeds_blob"], arrays["seeds_off"])

    @classmethod
    def from_bytes(cls, data: bytes) -> "PreviousShare":
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return cls({k: z[k] for k in z.files})

    def __len__(self) -> int:
        return len(self.fp)

    def _find(self, fp: int) -> int:
        fps = self.fp
        i = int(np.searchsorted(fps, np.uint64(fp)))
        return i if i < len(fps) and int(fps[i]) == fp else -1

    def conditional_headers(self, fp: int) -> tuple[tuple[str, str], ...]:
        """The conditional request headers of the URL with fingerprint ``fp`` (``()``: none)."""
        i = self._find(fp) if len(self.fp) else -1
        if i < 0:
            return ()
        s = self.strings
        return PreviousPage(s["etag"][i], s["last_modified"][i], "", "", "", 0, False, [], []).conditional_headers()

    def lookup(self, fp: int) -> PreviousPage | None:
        """The earlier answer of the URL with fingerprint ``fp``, or None."""
        i = self._find(fp) if len(self.fp) else -1
        if i < 0:
            return None
        s = self.strings
        a, b = int(self.link_off[i]), int(self.link_off[i + 1])
        urls = self.link_urls
        return PreviousPage(s["etag"][i], s["last_modified"][i], s["digest"][i], s["payload_url"][i],
                            s["payload_date"][i], int(self.body_bytes[i]), bool(self.node[i]),
                            [urls[j] for j in self.link_idx[a:b].tolist()], self.link_kind[a:b].tolist())


def _share_bytes(rows: np.ndarray, cols: dict, node: np.ndarray, links: list[list[tuple[int, int]]],
                 graph_urls: list[str], seeds: list[str]) -> bytes:
    """One rank's share (rows of the table, sorted by fingerprint) as ``.npz`` bytes; ``links``: per
    row, its links as (URL-table row, kind)."""
    local: dict[int, int] = {}
    idx, kinds, off = [], [], [0]
    for i in rows.tolist():
        for u, k in links[i]:
            idx.append(local.setdefault(u, len(local)))
            kinds.append(k)
        off.append(len(idx))
    arrays = {"fp": cols["fp"][rows], "body_bytes": cols["body_bytes"][rows], "node": node[rows],
              "link_off": np.array(off, dtype=np.int64), "link_idx": np.array(idx, dtype=np.int32),
              "link_kind": np.array(kinds, dtype=np.uint8)}
    for c in _SHARE_STR:
        arrays[f"{c}_blob"], arrays[f"{c}_off"] = pack_strings([cols[c][i] for i in rows.tolist()])
    arrays["link_urls_blob"], arrays["link_urls_off"] = pack_strings([graph_urls[u] for u in local])
    arrays["seeds_blob"], arrays["seeds_off"] = pack_strings(seeds)
    return npz_bytes(**arrays)


def previous_shares(session_dir: str | os.PathLike, assignment, ranks: int, scope) -> tuple[list[bytes], dict]:
    """Rank 0: every rank's share of the earlier session at ``session_dir`` under the new
    ``assignment`` (see the module docstring), and a summary (rows, conditional URLs, seeds).

    A URL can be asked conditionally when its earlier answer was a 200 (or a 304 standing for
    one) with an ``ETag`` or ``Last-Modified`` and its payload is in a WARC file. Seeds: URLs of
    the earlier graph that were never requested there and are in the new session's scope.
    """
    from .session import load_graph

    sd = Path(session_dir)
    for name in ("validators.npz", "graph.npz"):
        if not (sd / name).is_file():
            raise ConfigError(f"previous: {sd} has no {name} (not a finished session of an abc-crawler "
                              "that writes validator tables)")
    try:
        cols = load_table(sd)
        g = load_graph(sd)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"previous: cannot read {sd} ({exc})") from None
    n = len(cols["fp"])
    usable = np.array([(s == 200 or nm) and bool(e or lm) and bool(f) for s, nm, e, lm, f in zip(
        cols["status"].tolist(), cols["not_modified"].tolist(), cols["etag"], cols["last_modified"],
        cols["file"])], dtype=bool) if n else np.zeros(0, bool)
    # the page's graph row: node or not, and its links (URL-table rows) with their kinds: a page's
    # navigation links, requisites and refresh targets, and a style sheet's requisites (not a node)
    row_of = {fp: i for i, fp in enumerate(g.url_fp.tolist())}
    grow = np.array([row_of.get(fp, -1) for fp in cols["fp"].tolist()], dtype=np.int64)
    node = np.array([r >= 0 and g.url_node[r] >= 0 for r in grow.tolist()], dtype=bool)
    by_src: dict[int, list[tuple[int, int]]] = {}
    for s, d, k in zip(g.link_src.tolist(), g.link_dst.tolist(), g.link_kinds().tolist()):
        by_src.setdefault(s, []).append((d, k))
    links = [by_src.get(r, []) for r in grow.tolist()]
    owner = np.array([assignment.owner(u, fp) for u, fp in zip(cols["url"], cols["fp"].tolist())], dtype=np.int64)
    seeds: list[list[str]] = [[] for _ in range(ranks)]
    for i in np.flatnonzero(g.url_rank < 0).tolist():
        u = g.urls[i]
        if u and scope.allows_url(u):
            seeds[assignment.owner(u, int(g.url_fp[i]))].append(u)
    shares = []
    for r in range(ranks):
        rows = np.flatnonzero(usable & (owner == r))
        rows = rows[np.argsort(cols["fp"][rows], kind="stable")]
        shares.append(_share_bytes(rows, cols, node, links, g.urls, seeds[r]))
    summary = {"session": str(sd), "rows": n, "conditional": int(usable.sum()), "seeds": sum(map(len, seeds))}
    return shares, summary
