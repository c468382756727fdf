"""What travels with a URL to the rank that owns it: one text line per URL.

A URL found on one rank and owned by another crosses in the superstep
exchange as a line of the destination's buffer (:mod:`abc_crawler.mpi.exchange`).
Besides the URL, the line carries what the owner needs to treat the URL as its
finder would have:

* ``hops`` — redirects that led to it (``--max-redirects``);
* ``depth`` — link hops from a seed (``--max-depth``; a redirect does not add
  one), or, for a sitemap file, how deep it sits in sitemap indexes;
* ``sitemap`` — the URL is a sitemap file (:mod:`abc_crawler.net.sitemaps`), not a
  page;
* ``hop`` — how a page was found when it was not a plain link (the crawl log's hop letter,
  :mod:`abc_crawler.crawl.discovery`): ``E`` a requisite (embed), ``R`` a refresh, ``M`` a URL a
  sitemap lists; so the owner logs it as its finder would have.

Format: ``URL``, ``URL\\tHOPS``, ``URL\\tHOPS\\tDEPTH`` or ``URL\\tHOPS\\tDEPTH\\tX`` with ``X``
``s`` (a sitemap file) or the hop letter ``E``, ``R``, ``M`` — trailing fields at their defaults
(0, 0, a page found by a link) are left out, so a plain URL line is the URL alone, and before a
hop letter zero HOPS and DEPTH are empty (``URL\\t\\t\\tE``); lines written before depth, sitemaps
and hop letters existed (``URL`` and ``URL\\tHOPS``, e.g. in a checkpoint's outbox) read the same.
A canonical URL never holds a tab or a newline (they are percent-encoded).

>>> encode_line("http://a.test/", 0, 0), encode_line("http://a.test/", 2, 0), encode_line("http://a.test/s.xml", 0, 1, True)
('http://a.test/', 'http://a.test/\\t2', 'http://a.test/s.xml\\t0\\t1\\ts')
>>> encode_line("http://a.test/i.png", 0, 0, hop=ord("E")), encode_line("http://a.test/r", 1, 3, hop=ord("R"))
('http://a.test/i.png\\t\\t\\tE', 'http://a.test/r\\t1\\t3\\tR')
>>> decode_line("http://a.test/\\t2"), decode_line("http://a.test/s.xml\\t0\\t1\\ts")
(('http://a.test/', 2, 0, False, None), ('http://a.test/s.xml', 0, 1, True, None))
>>> decode_line("http://a.test/i.png\\t\\t\\tE")
('http://a.test/i.png', 0, 0, False, 69)
"""
from __future__ import annotations

__all__ = ["encode_line", "decode_line", "LINE_HOPS"]

#: the hop letters a page's line carries (a plain link carries none): embed, refresh, sitemap-listed
LINE_HOPS = frozenset(b"ERM")


def encode_line(url: str, hops: int = 0, depth: int = 0, sitemap: bool = False, hop: int | None = None) -> str:
    """The line for ``url`` and what travels with it (see the module docstring); ``hop``: the
    discovery hop (a byte, ``ord("E")``) when it is one of :data:`LINE_HOPS` — others are not sent."""
    if sitemap:
        return f"{url}\t{hops}\t{depth}\ts"
    if hop in LINE_HOPS:
        return f"{url}\t{hops or ''}\t{depth or ''}\t{chr(hop)}"
    if depth:
        return f"{url}\t{hops}\t{depth}"
    if hops:
        return f"{url}\t{hops}"
    return url


def decode_line(line: str) -> tuple[str, int, int, bool, int | None]:
    """``(url, hops, depth, sitemap, hop)`` of a line (``hop``: the letter's byte, None for a link or
    a sitemap file); ValueError on a malformed one."""
    if "\t" not in line:
        return line, 0, 0, False, None
    parts = line.split("\t")
    flag = parts[3] if len(parts) == 4 else ""
    if len(parts) > 4 or (len(parts) == 4 and (len(flag) != 1 or flag not in "sERM")):
        raise ValueError(f"malformed URL line {line[:200]!r}")
    try:
        hops = int(parts[1]) if parts[1] else 0
        depth = int(parts[2]) if len(parts) > 2 and parts[2] else 0
    except ValueError:
        raise ValueError(f"malformed URL line {line[:200]!r}") from None
    if hops < 0 or depth < 0:
        raise ValueError(f"malformed URL line {line[:200]!r}")
    return parts[0], hops, depth, flag == "s", (ord(flag) if flag and flag != "s" else None)
