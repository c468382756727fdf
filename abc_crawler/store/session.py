"""Session directory I/O: atomic writes and the columnar graph file.

The format is documented in ``docs/SESSION_FORMAT.md``; this module is the one
place that reads and writes it.

Examples
--------
>>> import tempfile, numpy as np
>>> d = tempfile.mkdtemp()
>>> g = SessionGraph.from_urls(["http://a.test/", "http://a.test/x"], ranks=2)
>>> save_graph(d, g)
>>> load_graph(d).urls
['http://a.test/', 'http://a.test/x']
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..web.urls import fingerprint

__all__ = [
    "FORMAT_VERSION",
    "file_record",
    "rank_files",
    "prepare_rank_dir",
    "SessionGraph",
    "atomic_write_bytes",
    "atomic_write_json",
    "save_graph",
    "load_graph",
    "read_json",
    "pack_strings",
    "unpack_strings",
]

FORMAT_VERSION = 1


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    A reader sees either the old file or the new one, never a partial one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=1, sort_keys=False) + "\n").encode())


def read_json(path: str | os.PathLike) -> Any:
    with open(path, "rb") as fh:
        return json.load(fh)


def pack_strings(strings: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """Pack strings into (UTF-8 blob as uint8, int64 offsets of length n+1)."""
    encoded = [s.encode() for s in strings]
    off = np.zeros(len(encoded) + 1, dtype=np.int64)
    if encoded:
        np.cumsum([len(b) for b in encoded], out=off[1:])
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return blob, off


def take_strings(blob: np.ndarray, off: np.ndarray, order: np.ndarray,
                 chunk: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """Packed strings (:func:`pack_strings`) reordered: string ``order[i]`` becomes string ``i``,
    with no Python object per string (``chunk`` strings at a time, so the byte index it builds
    stays bounded).

    >>> blob, off = pack_strings(["ab", "", "cde"])
    >>> unpack_strings(*take_strings(blob, off, np.array([2, 0, 1])))
    ['cde', 'ab', '']
    """
    off = np.asarray(off, dtype=np.int64)
    blob = np.asarray(blob, dtype=np.uint8)
    order = np.asarray(order, dtype=np.intp)
    lens = (off[1:] - off[:-1])[order]
    new_off = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_off[1:])
    out = np.empty(int(new_off[-1]), dtype=np.uint8)
    starts = off[:-1][order]
    for a in range(0, len(order), chunk):
        b = min(a + chunk, len(order))
        lo, hi = int(new_off[a]), int(new_off[b])
        if hi > lo:
            # the byte at new position p comes from starts[i] + (p - new_off[i]) for its string i
            shift = np.repeat(starts[a:b] - new_off[a:b], lens[a:b])
            out[lo:hi] = blob[np.arange(lo, hi, dtype=np.int64) + shift]
    return out, new_off


def unpack_strings(blob: np.ndarray, off: np.ndarray) -> list[str]:
    raw = blob.tobytes()
    o = off.tolist()
    return [raw[o[i]:o[i + 1]].decode() for i in range(len(o) - 1)]


@dataclass
class SessionGraph:
    """The crawled graph of one session (see docs/SESSION_FORMAT.md).

    ``urls`` is a Python list; every other field is a NumPy array.
    """

    ranks: int
    urls: list[str]
    url_fp: np.ndarray
    url_status: np.ndarray
    url_rank: np.ndarray
    url_bytes: np.ndarray
    url_superstep: np.ndarray
    url_node: np.ndarray
    link_src: np.ndarray
    link_dst: np.ndarray
    node_url: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    extra: dict = field(default_factory=dict)
    url_kind: np.ndarray | None = None      # int16 per URL: index into kinds (0: none)
    kinds: list[str] = field(default_factory=lambda: [""])   # why a URL is not a node / how it failed
    #: uint8 per link: how it was found (abc_crawler.web.parser: 0 navigation, 1 embed, 2 redirect,
    #: 3 refresh); None in sessions written before link kinds (read as all navigation)
    link_kind: np.ndarray | None = None

    def link_kinds(self) -> np.ndarray:
        """The kind of every link (all navigation for a session written before link kinds)."""
        if self.link_kind is None:
            return np.zeros(self.link_src.shape[0], dtype=np.uint8)
        return self.link_kind

    def kind_of(self, i: int) -> str:
        """The outcome kind of URL ``i`` ("" when none: a node, a redirect, a URL never tried)."""
        return "" if self.url_kind is None else self.kinds[int(self.url_kind[i])]

    @classmethod
    def from_urls(cls, urls: list[str], ranks: int) -> "SessionGraph":
        """An empty graph over ``urls`` (nothing requested, no links); for tests and tools."""
        u = len(urls)
        e32 = np.zeros(0, dtype=np.int32)
        return cls(
            ranks=ranks,
            urls=list(urls),
            url_fp=np.array([fingerprint(x) for x in urls], dtype=np.uint64),
            url_status=np.zeros(u, dtype=np.int16),
            url_rank=np.full(u, -1, dtype=np.int16),
            url_bytes=np.zeros(u, dtype=np.int64),
            url_superstep=np.full(u, -1, dtype=np.int32),
            url_node=np.full(u, -1, dtype=np.int32),
            link_src=e32, link_dst=e32.copy(), node_url=e32.copy(),
            edge_src=e32.copy(), edge_dst=e32.copy(),
        )

    @property
    def requested(self) -> np.ndarray:
        """Boolean mask of URLs that were requested in the session."""
        return self.url_rank >= 0

    @property
    def n_nodes(self) -> int:
        return int(self.node_url.shape[0])


_ARRAY_FIELDS = [f.name for f in fields(SessionGraph)
                 if f.name not in ("ranks", "urls", "extra", "url_kind", "kinds", "link_kind")]


def npz_bytes(**arrays) -> bytes:
    """A compressed ``.npz`` file (what ``np.load`` reads) as bytes, deflate level 1
    (:func:`npz_stored_bytes`: the same, stored, for bytes that cross memory, not a disk).

    ``np.savez_compressed`` deflates at zlib's default level 6: on a 20,000-page
    crawl's graph that is 0.29 CPU-s against 0.05 s at level 1 for 10 % more
    bytes (mostly incompressible fingerprints), and it runs on rank 0 at the
    end of every crawl.
    """
    import zipfile

    return _npz(arrays, zipfile.ZIP_DEFLATED)


def npz_stored_bytes(**arrays) -> bytes:
    """:func:`npz_bytes` without compression: what a rank hands to rank 0 at the end, which rank 0
    reads at once (deflating it cost as much as writing the file that it becomes)."""
    import zipfile

    return _npz(arrays, zipfile.ZIP_STORED)


def _npz(arrays: dict, compression: int) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression, compresslevel=1 if compression == zipfile.ZIP_DEFLATED else None) as zf:
        for name, a in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(a), allow_pickle=False)
    return buf.getvalue()


def save_graph(session_dir: str | os.PathLike, g: SessionGraph) -> None:
    """Write ``graph.npz`` atomically."""
    blob, off = pack_strings(g.urls)
    arrays = {name: getattr(g, name) for name in _ARRAY_FIELDS}
    if g.url_kind is not None:
        arrays["url_kind"] = g.url_kind
        arrays["kind_blob"], arrays["kind_off"] = pack_strings(g.kinds)
    if g.link_kind is not None:
        arrays["link_kind"] = g.link_kind
    data = npz_bytes(format=np.int64(FORMAT_VERSION), ranks=np.int64(g.ranks), url_blob=blob, url_off=off, **arrays)
    atomic_write_bytes(Path(session_dir) / "graph.npz", data)


def load_graph(session_dir: str | os.PathLike) -> SessionGraph:
    """Read ``graph.npz`` of a session directory (or the file itself)."""
    p = Path(session_dir)
    if p.is_dir():
        p = p / "graph.npz"
    if not p.exists():
        raise FileNotFoundError(f"{p}: no graph.npz (is this a session directory?)")
    try:
        return _read_graph(p)
    except (zipfile.BadZipFile, EOFError, KeyError) as exc:      # cut short, or not one
        raise ValueError(f"{p}: not a readable graph.npz ({type(exc).__name__}: {exc})") from None


def _read_graph(p: Path) -> SessionGraph:
    with np.load(p, allow_pickle=False) as z:
        version = int(z["format"])
        if version != FORMAT_VERSION:
            raise ValueError(f"{p}: graph format {version}, this ABC reads {FORMAT_VERSION}")
        kinds = {"url_kind": z["url_kind"], "kinds": unpack_strings(z["kind_blob"], z["kind_off"])} \
            if "url_kind" in z.files else {}       # written since per-URL outcome kinds exist
        if "link_kind" in z.files:                 # written since link kinds exist (issue 33)
            kinds["link_kind"] = z["link_kind"]
        return SessionGraph(
            ranks=int(z["ranks"]),
            urls=unpack_strings(z["url_blob"], z["url_off"]),
            **{name: z[name] for name in _ARRAY_FIELDS}, **kinds,
        )


# -- where the files are (the ranks may share no file system) -----------------------

#: a rank's own files: ``rank-N.…`` (checkpoints, errors), or WARC files and their indexes named
#: ``SESSION-rank-NNNNN-SSSSS.warc.gz`` / ``.cdxj`` (:func:`abc_crawler.store.warcnames.warc_name`)
_RANK_FILE = re.compile(r"^rank-0*(\d+)\.|^[A-Za-z0-9_-]+-rank-(\d{5})-\d{5}\.(?:warc\.gz|cdxj)$")


def file_record(session_dir: str | os.PathLike, rel: str) -> dict:
    """``{"path": rel, "bytes": size, "sha256": hex}`` of a file under the session directory."""
    with open(Path(session_dir) / rel, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
        size = fh.tell()
    return {"path": rel, "bytes": size, "sha256": digest}


def rank_files(session_dir: str | os.PathLike, rank: int, session_wide: bool = False) -> list[dict]:
    """The files this rank wrote under ``session_dir`` on its host, with sizes and SHA-256, sorted by path.

    A rank's own files are named ``rank-N.*`` (any zero padding) in any
    subdirectory (``checkpoint/``, ``errors/``), or ``SESSION-rank-NNNNN-SSSSS.warc.gz`` and
    ``.cdxj`` (``warc/``); with ``session_wide`` (rank 0)
    also every file not named after a rank: the session-wide files. Not listed:
    ``manifest.json`` (it holds this list), temporary files of atomic writes
    (``.*.tmp``), and files named after other ranks (their own files where the
    hosts share a disk, or copies gathered by ``--gather-warc``).
    """
    out = []
    for rel in _rank_paths(Path(session_dir), rank, session_wide):
        try:
            out.append(file_record(session_dir, rel))
        except FileNotFoundError:       # removed meanwhile (a pruned checkpoint)
            continue
    return out


def _rank_paths(root: Path, rank: int, session_wide: bool) -> list[str]:
    """Relative paths of :func:`rank_files`, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            if rel == "manifest.json" or (name.startswith(".") and name.endswith(".tmp")):
                continue
            m = _RANK_FILE.match(name)
            if (m is not None and int(m.group(1) or m.group(2)) == rank) or (m is None and session_wide):
                out.append(rel)
    return sorted(out)


def prepare_rank_dir(session_dir: str | os.PathLike, rank: int, subdirs: Iterable[str] = (),
                     fresh: bool = True) -> str | None:
    """Make sure this rank can write its files under ``session_dir`` on its host; None, or why not.

    Creates the directory and ``subdirs`` and writes, syncs and removes a
    probe file in each. With ``fresh`` (a new session) the rank's own files
    must not exist yet: a directory of that name on this host may hold an
    earlier session, whose files a new one must not append to.
    """
    root = Path(session_dir)
    for d in [root, *(root / s for s in subdirs)]:
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"cannot create the session directory {d} ({exc.strerror or exc})"
        probe = d / f".probe-rank-{rank:05d}-{os.getpid()}"
        try:
            with open(probe, "wb") as fh:
                fh.write(b"abc")
                fh.flush()
                os.fsync(fh.fileno())
            probe.unlink()
        except OSError as exc:
            return f"cannot write in the session directory {d} ({exc.strerror or exc})"
    if fresh:
        mine = _rank_paths(root, rank, session_wide=False)
        if mine:
            return (f"{root / mine[0]} exists: the session directory on this host already holds a session's files "
                    "(choose another --session-dir)")
    return None
