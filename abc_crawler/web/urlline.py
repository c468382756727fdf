"""What travels with a URL to the rank that owns it: one text line per URL.

A URL found on one rank and owned by another crosses in the superstep
exchange as a line of the destination's buffer (:mod:`abc_crawler.mpi.exchange`).
Besides the URL, the line carries what the owner needs to treat the URL as its
finder would have:

* ``hops`` — redirects that led to it (``--max-redirects``);
* ``depth`` — link hops from a seed (``--max-depth``; a redirect does not add
  one), or, for a sitemap file, how deep it sits in sitemap indexes;
* ``sitemap`` — the URL is a sitemap file (:mod:`abc_crawler.net.sitemaps`), not a
  page.

Format: ``URL``, ``URL\\tHOPS``, ``URL\\tHOPS\\tDEPTH`` or ``URL\\tHOPS\\tDEPTH\\ts``
— trailing fields at their defaults (0, 0, page) are left out, so a plain
URL line is the URL alone and lines written before depth and sitemaps existed
(``URL`` and ``URL\\tHOPS``, e.g. in a checkpoint's outbox) read the same.
A canonical URL never holds a tab or a newline (they are percent-encoded).

>>> encode_line("http://a.test/", 0, 0), encode_line("http://a.test/", 2, 0), encode_line("http://a.test/s.xml", 0, 1, True)
('http://a.test/', 'http://a.test/\\t2', 'http://a.test/s.xml\\t0\\t1\\ts')
>>> decode_line("http://a.test/\\t2"), decode_line("http://a.test/s.xml\\t0\\t1\\ts")
(('http://a.test/', 2, 0, False), ('http://a.test/s.xml', 0, 1, True))
"""
from __future__ import annotations

__all__ = ["encode_line", "decode_line"]


def encode_line(url: str, hops: int = 0, depth: int = 0, sitemap: bool = False) -> str:
    """The line for ``url`` and what travels with it (see the module docstring)."""
    if sitemap:
        return f"{url}\t{hops}\t{depth}\ts"
    if depth:
        return f"{url}\t{hops}\t{depth}"
    if hops:
        return f"{url}\t{hops}"
    return url


def decode_line(line: str) -> tuple[str, int, int, bool]:
    """``(url, hops, depth, sitemap)`` of a line; ValueError on a malformed one."""
    if "\t" not in line:
        return line, 0, 0, False
    parts = line.split("\t")
    if len(parts) > 4 or (len(parts) == 4 and parts[3] != "s"):
        raise ValueError(f"malformed URL line {line[:200]!r}")
    hops = int(parts[1]) if parts[1] else 0
    depth = int(parts[2]) if len(parts) > 2 and parts[2] else 0
    if hops < 0 or depth < 0:
        raise ValueError(f"malformed URL line {line[:200]!r}")
    return parts[0], hops, depth, len(parts) == 4
