"""CDXJ indexes of WARC files, in pywb's format, so replay tools need not index them again.

One line per ``response`` and ``revisit`` record (``warcinfo`` and ``request`` records are not
indexed, as cdxj-indexer's defaults do)::

    test,h000:8123)/d1/p3.html 20260102030405 {"url": "http://h000.test:8123/d1/p3.html", "mime": "text/html", "status": "200", "digest": "sha1:…", "length": "1234", "offset": "5678", "filename": "s1-rank-00000-00000.warc.gz"}

* the key is the URL's SURT form (``surt.surt``, the Internet Archive's canonicalization, as
  pywb and cdxj-indexer compute it), then the record's ``WARC-Date`` as 14 digits;
* ``mime``: the media type of the HTTP Content-Type (``warc/revisit`` for revisit records),
  ``status``: the HTTP status code, ``digest``: ``WARC-Payload-Digest``, ``length`` and
  ``offset``: the record's gzip member in the file, ``filename``: the file's name — the values
  as strings, in that order, written by ``json.dumps``;
* lines sorted (as strings) with repeated lines written once, so pywb can search the file.

The writer (:class:`abc_crawler.store.warc.RankWarc`) makes the lines as it writes the records and
:func:`write_index` puts them beside the WARC file (``x.warc.gz`` → ``x.cdxj``) when it closes
the file. :func:`index_lines` makes the same lines by reading a file (warcio's reader): for
``abc-index`` (:mod:`abc_crawler.index_cli`) and for a resume, which cuts the current file back.
``tests/test_cdxj.py`` checks both against cdxj-indexer's output on the same files.

Examples
--------
>>> cdxj_line("http://h.test:8080/a?b=1&a=2", "2026-01-02T03:04:05.123456Z", "text/html", "200",
...           "sha1:AAAA", 10, 20, "f.warc.gz")[:52]
'test,h:8080)/a?a=2&b=1 20260102030405 {"url": "http:'
"""
from __future__ import annotations

import heapq
import os
import re
import types
from json.encoder import encode_basestring_ascii
from pathlib import Path

__all__ = ["media_type", "cdxj_line", "cdxj_line_reference", "surt_key", "surt_key_reference", "surt_slow", "timestamp14",
           "index_path", "index_lines", "write_index", "read_index",
           "IndexRuns", "RUN_LINES"]


#: URLs whose SURT key is computed here, not by the ``surt`` package (the IA canonicalization is
#: about 60 µs a URL, a fifth of what a whole page costs a rank): http(s), a host of lower-case
#: letters, digits, ``-`` and single dots that does not look like an IPv4 address, after one
#: leading ``www``/``wwwN.`` label, which the SURT form drops (the IA canonicalizer's host
#: massage; a host with a second one goes to the package), an optional port, a path of
#: unreserved characters without ``//``, dot segments or a query. For these the canonicalization
#: only lower-cases the path, drops a trailing slash (not the root's) and a default port;
#: ``tests/test_cdxj.py`` compares with ``surt.surt`` (hypothesis).
#: The path is segments each followed by ``/`` and then at most one more, so there is one way to
#: match it: with the segment's ``/`` optional (before 2026-11-28) a failing URL tried every way
#: of cutting a segment into pieces, 2^n for a segment of n characters (a 20-character segment and
#: a query: 0.9 s a URL, each 2 more characters 4x that).
_PLAIN_URL = re.compile(r"^(https?)://(?:www[0-9]*\.)?((?!www)(?![0-9.]+(?::|/|$))[a-z0-9-]+(?:\.[a-z0-9-]+)*)"
                        r"(?::([1-9][0-9]{0,4}))?"
                        r"(/(?:[A-Za-z0-9_~-]+(?:\.[A-Za-z0-9_~-]+)*/)*(?:[A-Za-z0-9_~-]+(?:\.[A-Za-z0-9_~-]+)*)?)?$")
_DEFAULT_PORT = {"http": "80", "https": "443"}


def surt_key_reference(url: str) -> str:
    """The SURT key pywb and cdxj-indexer give a URL (``surt.surt``; the URL itself when it cannot
    be parsed), computed directly for plain URLs (:data:`_PLAIN_URL`). :func:`surt_key` is this
    compiled (:mod:`abc_crawler.store._warcrec`), which hands every URL that is not plain to it.

    >>> surt_key_reference("http://h000.test:8123/D1/p3.html"), surt_key_reference("https://a.b.test:443/x/")
    ('test,h000:8123)/d1/p3.html', 'test,b,a)/x')
    """
    m = _PLAIN_URL.match(url)
    if m is not None and (m[3] is None or int(m[3]) <= 65535):
        scheme, host, port, path = m.groups()
        key = ",".join(reversed(host.split(".")))
        if port is not None and port != _DEFAULT_PORT[scheme]:
            key += ":" + port
        path = (path or "/").lower()
        if len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        return key + ")" + path
    return surt_slow(url)


def surt_slow(url: str) -> str:
    """``surt.surt(url)``, as cdxj-indexer calls it."""
    try:
        return _surt()(url)
    except Exception:  # noqa: BLE001 - cdxj-indexer falls back the same way
        return url


def _surt():
    """``surt.surt``, imported once without importing ``tldextract`` until it is used.

    ``surt.handyurl`` imports ``tldextract`` (and with it ``requests``, ``urllib3`` and
    ``filelock``: 100-150 ms of CPU, a tenth of a rank's whole CPU on a 4,000-page crawl at 8
    ranks) for two methods (``getPublicSuffix``, ``getPublicPrefix``) that the SURT form never
    calls. While ``surt`` is imported, ``tldextract`` is a stand-in module that imports the real
    one at its first attribute read; afterwards it is taken out of ``sys.modules`` again, so any
    other ``import tldextract`` gets the real module.
    """
    import sys

    if "surt" not in sys.modules and "tldextract" not in sys.modules:
        stand_in = _DeferredModule("tldextract")
        sys.modules["tldextract"] = stand_in
        try:
            import surt
        finally:
            if sys.modules.get("tldextract") is stand_in:
                del sys.modules["tldextract"]
    import surt

    return surt.surt


class _DeferredModule(types.ModuleType):
    """A module object that imports the module of its name at its first attribute read."""

    def __getattr__(self, name: str):
        import importlib

        return getattr(importlib.import_module(self.__name__), name)


def timestamp14(warc_date: str) -> str:
    """``YYYYMMDDhhmmss`` of a ``WARC-Date`` (the fraction dropped).

    >>> timestamp14("2026-01-02T03:04:05.123456Z")
    '20260102030405'
    """
    d = warc_date
    return d[0:4] + d[5:7] + d[8:10] + d[11:13] + d[14:16] + d[17:19]


def cdxj_line_reference(url: str, warc_date: str, mime: str | None, status: str | None, digest: str | None,
                        length: int, offset: int, filename: str, _q=encode_basestring_ascii) -> str:
    """One index line (with its newline); fields that are None are left out, as cdxj-indexer does.
    The JSON is what ``json.dumps`` writes for the same dict (keys in this order, ``", "`` and
    ``": "`` separators, non-ASCII escaped), made with its C string encoder. :func:`cdxj_line` is
    this compiled (:mod:`abc_crawler.store._warcrec`)."""
    parts = [f'{{"url": {_q(url)}']
    if mime is not None:
        parts.append(f'"mime": {_q(mime)}')
    if status is not None:
        parts.append(f'"status": {_q(status)}')
    if digest is not None:
        parts.append(f'"digest": {_q(digest)}')
    parts.append(f'"length": "{length}", "offset": "{offset}", "filename": {_q(filename)}}}')
    return f"{surt_key_reference(url)} {timestamp14(warc_date)} {', '.join(parts)}\n"


def index_path(warc_path: str | os.PathLike) -> Path:
    """Where a WARC file's index goes: beside it, ``.warc.gz`` replaced by ``.cdxj``."""
    p = Path(warc_path)
    name = p.name[: -len(".warc.gz")] if p.name.endswith(".warc.gz") else p.name
    return p.with_name(name + ".cdxj")


def write_index(warc_path: str | os.PathLike, lines: list[str]) -> Path:
    """Write the index of ``warc_path`` atomically: ``lines`` sorted, each distinct line once."""
    return _write_sorted(warc_path, sorted(lines))


def _write_sorted(warc_path: str | os.PathLike, lines) -> Path:
    """The index of ``warc_path`` from ``lines`` in sorted order, each distinct line once: streamed
    to a temporary file beside it (no copy of the whole index), fsynced, then renamed."""
    path = index_path(warc_path)
    tmp = path.with_name(f".{path.name}.merge.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            last = None
            for line in lines:
                if line != last:
                    out.write(line)
                last = line
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


#: index lines a rank keeps in memory for its current WARC file before it writes them out as a
#: sorted run (:class:`IndexRuns`)
RUN_LINES = 16_384


class IndexRuns:
    """The index lines of one WARC file being written, in bounded memory: at most
    :data:`RUN_LINES` lines as objects; each full batch is sorted and written beside the WARC file
    as a run (``.NAME.run-K.tmp``, removed once the index is written, and by a resume); at the
    end the runs and the last lines are merged into the index, each distinct line once — the
    same file :func:`write_index` makes of all the lines at once (a 1 GB WARC file's lines
    were ~250 B a page, all held until the file closed)."""

    def __init__(self, warc_path: str | os.PathLike, run_lines: int | None = None):
        self.warc_path = Path(warc_path)
        self.run_lines = run_lines or RUN_LINES
        self.lines: list[str] = []
        self.runs: list[Path] = []

    def __len__(self) -> int:
        return len(self.lines)

    def append(self, line: str) -> None:
        self.lines.append(line)
        if len(self.lines) >= self.run_lines:
            self._write_run()

    def extend(self, lines) -> None:
        for line in lines:
            self.append(line)

    def _write_run(self) -> None:
        p = self.warc_path.with_name(f".{self.warc_path.name}.run-{len(self.runs)}.tmp")
        self.lines.sort()
        with open(p, "w", encoding="utf-8") as fh:
            fh.writelines(self.lines)
        self.runs.append(p)
        self.lines = []

    def write(self) -> Path:
        """The index file, merged from the runs and the lines left; the runs removed."""
        self.lines.sort()
        files = [open(p, encoding="utf-8") for p in self.runs]
        try:
            path = _write_sorted(self.warc_path, heapq.merge(self.lines, *files))
        finally:
            for fh in files:
                fh.close()
        self.discard()
        return path

    def discard(self) -> None:
        """Forget the lines; the runs removed."""
        for p in self.runs:
            p.unlink(missing_ok=True)
        self.runs = []
        self.lines = []


def read_index(path: str | os.PathLike) -> list[str]:
    """The lines of an index file (with their newlines)."""
    with open(path, encoding="utf-8") as fh:
        return fh.readlines()


def index_lines(warc_path: str | os.PathLike) -> list[str]:
    """The index lines of a WARC file, read record by record (unsorted; see :func:`write_index`)."""
    from warcio.archiveiterator import ArchiveIterator

    name = Path(warc_path).name
    out = []
    with open(warc_path, "rb") as fh:
        it = ArchiveIterator(fh, no_record_parse=False)
        for rec in it:
            kind = rec.rec_type
            if kind not in ("response", "revisit"):
                continue
            h = rec.http_headers
            if kind == "revisit":
                mime = "warc/revisit"
            else:
                ct = h.get_header("content-type") if h else None
                mime = media_type(ct)
            status = h.get_statuscode() if h else None
            url = rec.rec_headers.get_header("WARC-Target-URI")
            digest = rec.rec_headers.get_header("WARC-Payload-Digest")
            date = rec.rec_headers.get_header("WARC-Date")
            rec.content_stream().read()             # to the end of the record: its length is known then
            out.append(cdxj_line(url, date, mime, status, digest, it.get_record_length(), it.get_record_offset(),
                                 name))
    return out


_MEDIA_SPLIT = re.compile(r"[;\s]").split


def media_type(content_type: str | None) -> str | None:
    """The ``mime`` of a line: the Content-Type up to ``;`` or a blank, as cdxj-indexer takes it;
    None without the header.

    >>> media_type("text/html; charset=utf-8"), media_type(None)
    ('text/html', None)
    """
    return None if content_type is None else _MEDIA_SPLIT(content_type.strip(), maxsplit=1)[0].strip()


try:                                    # the compiled twins (built with the kernels by setup.py)
    from . import _warcrec
except ImportError:                     # pragma: no cover - an install without its extensions
    surt_key, cdxj_line = surt_key_reference, cdxj_line_reference
else:
    _warcrec.bind_cdxj(surt_key_reference, encode_basestring_ascii)
    surt_key, cdxj_line = _warcrec.surt_key, _warcrec.cdxj_line
