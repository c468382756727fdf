"""How each URL of a rank was found, for the crawl log's discovery path and via fields
(:mod:`abc_crawler.store.crawllog`): two columns beside URLStates (by URL index), no object per URL.

* ``hop``, one byte: the hop that found the URL (or, for a redirect target, the chain of redirects
  that ended at it): ``-`` a seed, ``L`` a link, ``M`` a sitemap (a sitemap file named by
  robots.txt or a sitemap index, or a URL a sitemap lists: Heritrix's manifest hop), ``I`` a
  ``/sitemap.xml`` inferred for a seed host; 0 when not known. The redirect hops that led to a URL
  travel with it (:mod:`abc_crawler.web.urlline`), its link depth too with ``--max-depth``:
  :func:`discovery_path` makes the path of them.
* ``via``, an int32: the referrer — the page the URL was found on (a redirecting page for a redirect
  target, robots.txt or the sitemap for a sitemap's URLs) as an id into a table of referrer URLs
  (UTF-8 in one growing buffer, one entry per page that gave this rank a URL), -1 when not known:
  a URL found by another rank comes with no referrer (sending it would cost the exchange as much as
  the URL itself).

The columns grow with URLStates and are saved in the checkpoint log's increments.

>>> d = Discovery()
>>> d.add(0, SEED); d.add(1, LINK, d.referrer("http://a.test/"))
>>> d.path_via(1, hops=0, depth=0), d.path_via(0, hops=1, depth=0), d.path_via(5, 0, 0)
(('L', 'http://a.test/'), ('R', '-'), ('-', '-'))
>>> discovery_path(LINK, hops=1, depth=3), discovery_path(SITEMAP, 0, 0)
('LLLR', 'M')
"""
from __future__ import annotations

from array import array

import numpy as np

__all__ = ["Discovery", "discovery_path", "UNKNOWN", "SEED", "LINK", "SITEMAP", "INFERRED", "EMBED"]

UNKNOWN, SEED, LINK, SITEMAP, INFERRED, EMBED = 0, ord("-"), ord("L"), ord("M"), ord("I"), ord("E")


def discovery_path(hop: int, hops: int, depth: int) -> str:
    """The hop letters that led to a URL: its link depth in ``L`` (when known: ``--max-depth``; else
    the last one), ``M`` or ``I`` for a sitemap's, the letter of another hop (``E`` an embed, one
    link deeper than its page; ``R`` a refresh), then an ``R`` per redirect; ``-`` for a seed.

    >>> discovery_path(EMBED, 0, 3), discovery_path(EMBED, 0, 0), discovery_path(ord("R"), 1, 2)
    ('LLE', 'E', 'LLRR')
    """
    if hop == SITEMAP or hop == INFERRED:
        base = chr(hop)
    elif hop == LINK or hop == SEED or hop == UNKNOWN:
        base = "L" * depth if depth else ("L" if hop == LINK else "")
    else:
        base = "L" * max(0, depth - (hop == EMBED)) + chr(hop)
    return (base + "R" * hops) if hops else (base or "-")


class Discovery:
    """The ``hop`` and ``via`` columns of one rank's URLs and its referrer table."""

    def __init__(self):
        self.hop = bytearray()
        self.via = array("i")
        self._text = bytearray()          # referrer URLs, UTF-8, concatenated
        self._end = array("q")            # end of each in _text
        self._mark = 0                    # checkpoint increments: URLs / referrers already written
        self._mark_ref = 0
        self.base = 0                     # URLs below it were dropped with URLStates' completed prefix

    def __len__(self) -> int:
        return self.base + len(self.hop)

    def trim(self, base: int) -> None:
        """URLs below ``base`` are dropped (URLStates dropped them: completed, and written to the
        checkpoint log); their paths are "not known" from now on."""
        k = min(base, len(self)) - self.base
        if k > 0:
            del self.hop[:k]
            del self.via[:k]
            self.base += k

    def nbytes(self) -> int:
        """Bytes held: the two columns and the referrer table."""
        return len(self.hop) + 4 * len(self.via) + len(self._text) + 8 * len(self._end)

    def referrer(self, url: str) -> int:
        """A new referrer id for ``url``."""
        self._text += url.encode()
        self._end.append(len(self._text))
        return len(self._end) - 1

    def add(self, idx: int, hop: int, via: int = -1) -> None:
        """URL ``idx`` of URLStates (the next one) was found so."""
        if idx != len(self):
            self.pad(idx)
        self.hop.append(hop)
        self.via.append(via)

    def pad(self, n: int) -> None:
        """Unknown entries up to ``n`` URLs."""
        k = n - len(self)
        if k > 0:
            self.hop += bytes(k)
            self.via.extend([-1] * k)

    def hop_of(self, idx: int | None) -> int:
        """The hop that found URL ``idx`` (UNKNOWN when not known)."""
        if idx is None or not self.base <= idx < len(self):
            return UNKNOWN
        return self.hop[idx - self.base]

    def referrer_url(self, ref: int) -> str:
        if ref < 0:
            return "-"
        return self._text[self._end[ref - 1] if ref else 0:self._end[ref]].decode()

    def path_via(self, idx: int | None, hops: int, depth: int) -> tuple[str, str]:
        """The discovery path and via of URL ``idx`` (None or past the columns: not known)."""
        if idx is None or not self.base <= idx < len(self):
            return discovery_path(UNKNOWN, hops, depth), "-"
        j = idx - self.base
        return discovery_path(self.hop[j], hops, depth), self.referrer_url(self.via[j])

    # -- checkpoints ---------------------------------------------------------
    def take_increment(self) -> dict:
        """What was added since the last call (for the checkpoint log)."""
        m, n, r = self._mark, len(self), self._mark_ref
        b = self.base                     # (URLStates drops nothing a checkpoint has yet to write)
        start = self._end[r - 1] if r else 0
        inc = {"first": m, "hop": bytes(self.hop[m - b:n - b]), "via": np.array(self.via[m - b:n - b], dtype=np.int32),
               "ref_first": r, "ref_text": bytes(self._text[start:]),
               "ref_end": np.array(self._end[r:], dtype=np.int64) - start}
        self._mark, self._mark_ref = n, len(self._end)
        return inc

    def apply_increment(self, inc: dict | None) -> None:
        """Append an increment (replaying a checkpoint log; None: one written without these columns,
        its URLs stay unknown)."""
        if inc is None:
            return
        if inc["first"] > len(self):
            self.pad(inc["first"])
        if inc["first"] != len(self) or inc["ref_first"] != len(self._end):
            return
        self.hop += inc["hop"]
        self.via.extend(np.asarray(inc["via"], dtype=np.int32).tolist())
        base = len(self._text)
        self._text += inc["ref_text"]
        self._end.extend((np.asarray(inc["ref_end"], dtype=np.int64) + base).tolist())
        self._mark, self._mark_ref = len(self), len(self._end)

    def restored(self, n: int) -> None:
        """After the increments of a resume: ``n`` URLs (those without an entry are not known)."""
        self.pad(n)
        self._mark, self._mark_ref = len(self), len(self._end)
