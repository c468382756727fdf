"""Where a followed link goes: the URL-seen set lets each URL through once; a URL of this rank
enters its frontier, another rank's goes into ``outbox[owner]`` for the superstep's all-to-all;
and every page with its links goes into the :class:`SuperstepReport` for rank 0 — built here, in
one place. The seen set also remembers URLs sent to other ranks, so a URL leaves this rank at
most once; the owner's seen set makes "fetched at most once" hold across ranks.

What travels with a URL to its owner (:mod:`abc_crawler.web.urlline`): the redirect hops that led to
it, its link depth (``--max-depth``) and whether it is a sitemap file. Only links — targets found
on a page — count towards Türk's volume and messages and go into the report; seeds and the URLs
sitemaps list are not links.

Past its memory share the seen set keeps most fingerprints on disk (:mod:`abc_crawler.sched.seenruns`)
and answers None for a URL it cannot decide in memory; such URLs wait in :attr:`Router.pending` and
go on — to the frontier or the outbox, in the order they came — when :meth:`Router.resolve` checks
them in bulk: at the exchange (before the outboxes are sent, and after what other ranks sent is
received), or when :data:`PENDING_MAX` wait."""
from __future__ import annotations

import numpy as np

from ..graph.coordinator import SuperstepReport, encode_report
from ..web.urlline import decode_line, encode_line
from ..web.urls import fingerprint, host_of
from .counters import RankCounters
from .discovery import LINK, SITEMAP, UNKNOWN, Discovery
from .links import Target
from .quotas import HostQuotas

__all__ = ["Router", "PENDING_MAX"]

#: URLs waiting for the seen set's disk check, at most, before it runs
PENDING_MAX = 1 << 16


class Router:
    """URL-seen test, frontier or outbox, and the report to rank 0, of one rank."""

    def __init__(self, rank: int, size: int, frontier, seen, counters: RankCounters,
                 quotas: HostQuotas, track_depth: bool = False):
        self.rank = rank
        self.size = size
        self.frontier = frontier
        self.seen = seen
        self.counters = counters
        self.hosts = frontier.hosts                # the per-host records (admissions)
        self.quotas = quotas                       # --max-pages-per-host over all ranks (crawl/quotas)
        self.outbox: list[list[str]] = [[] for _ in range(size)]
        self.report = SuperstepReport(rank=rank)
        self.track_depth = track_depth             # --max-depth given: depths are kept (frontier column)
        self.discovery = Discovery()               # per URL: the hop that found it, its referrer (crawl log)
        frontier.on_refill = self.discovery.add    # URLs back from the frontier's disk queues
        frontier.on_trim = self.discovery.trim     # the completed prefix out of the columns
        self._msg_src: int | None = None           # the page whose links were routed last, and the
        self._msg_ranks: set[int] = set()          # ranks they went to (Türk's messages per page)
        # URLs the seen set could not decide in memory: (url, fp, owner, hops, depth, sitemap, hop, via)
        self.pending: list[tuple] = []
        self._maybe_spill = getattr(seen, "maybe_spill", None)   # (a seen set that never spills: none)

    def route(self, src_fp: int | None, targets: list[Target], hops: int = 0, depth: int = 0,
              sitemap: bool = False, follow: bool = True, tally: str | None = "followed",
              hop: int | None = None, via: str | None = None, kind: int = 0) -> None:
        """MV, URL-seen test, frontier or outbox, report to rank 0. ``src_fp``: the page the links
        were found on (None for seeds and the URLs of sitemaps: not links, no MV); ``hops`` > 0
        marks the targets of a redirect chain, ``depth`` their link hops from a seed (with
        --max-depth) or a sitemap file's index level, ``sitemap`` sitemap files (all carried to
        the owner). ``follow`` False: reported to rank 0 (links of the graph) but not crawled
        (--max-depth); ``tally``: the ``links`` reason they are counted under (None: not counted).
        ``hop`` and ``via``: how the targets were found and on which URL, for the crawl log
        (:mod:`.discovery`; ``hop`` None: a link, or a sitemap file, or unknown for a redirect).
        ``kind``: the links' kind in the report (:data:`abc_crawler.web.parser.NAV`, ``EMBED``,
        ``REDIRECT``, ``REFRESH``)."""
        rep = self.report
        me = self.rank
        seen = self.seen
        remote: set[int] = set()
        volume = 0
        ref = None                                 # the referrer's id, made at the first local URL
        if src_fp is not None:
            rep.link_src.extend([src_fp] * len(targets))
            rep.link_kind.extend([kind] * len(targets))
        for url, fp, r, wire in targets:
            if wire and src_fp is not None:
                volume += wire
                remote.add(r)
            if src_fp is not None:
                rep.link_dst.append(fp)
                if seen.report(fp):
                    rep.new_fp.append(fp)
                    rep.new_urls.append(url)
            if not follow:
                continue
            new = seen.add(fp)
            if not new:
                if new is None:
                    self.pending.append((url, fp, r, hops, depth, sitemap, hop, via))
                continue
            if r == me:
                if ref is None:
                    ref = self.discovery.referrer(via) if via else -1
                self.admit_local(url, fp, hops, depth, sitemap, hop, ref)
            else:
                self.outbox[r].append(encode_line(url, hops, depth, sitemap, hop))
        c = self.counters
        c.volume += volume
        rep.volume += volume
        if src_fp is not None and src_fp == self._msg_src:   # the same page's links of another kind:
            remote -= self._msg_ranks                          # a rank is one message per page (Türk)
            self._msg_ranks |= remote
        elif src_fp is not None:
            self._msg_src, self._msg_ranks = src_fp, set(remote)
        c.messages_thesis += len(remote)
        if tally is not None:
            c.links[tally] += len(targets)
        if len(self.pending) >= PENDING_MAX:
            self.resolve()

    def resolve(self) -> None:
        """The URLs waiting for the seen set's disk check: the new ones go on, in order; then the
        seen set may spill its table (nothing waits any more)."""
        pend = self.pending
        if not pend:
            if self._maybe_spill is not None:
                self._maybe_spill()
            return
        self.pending = []
        new = self.seen.resolve(np.fromiter((p[1] for p in pend), dtype=np.uint64, count=len(pend)))
        refs: dict[str, int] = {}
        me = self.rank
        for (url, fp, r, hops, depth, sitemap, hop, via), ok in zip(pend, new.tolist()):
            if not ok:
                continue
            if r == me:
                ref = -1
                if via:
                    ref = refs.get(via)
                    if ref is None:
                        ref = refs[via] = self.discovery.referrer(via)
                self.admit_local(url, fp, hops, depth, sitemap, hop, ref)
            else:
                self.outbox[r].append(encode_line(url, hops, depth, sitemap, hop))
        self._maybe_spill()

    def route_sitemaps(self, targets: list[Target], level: int, via: str | None = None,
                       hop: int = SITEMAP) -> None:
        """Sitemap files into the crawl (``level``: how deep in sitemap indexes; ``via``: the
        robots.txt or sitemap index that named them); not links."""
        self.route(None, targets, depth=level, sitemap=True, tally=None, hop=hop, via=via)

    def admit_local(self, url: str, fp: int, hops: int, depth: int = 0, sitemap: bool = False,
                    hop: int | None = None, via: int = -1) -> None:
        """Put a new URL of this rank into URLStates, within the per-host limit over all ranks: past
        this rank's share it waits for the next exchange's settle (:mod:`.quotas`); once the host
        has its limit in all, it is dropped and counted."""
        host = host_of(url)
        st = self.hosts[host]
        what = self.quotas.decide(host, st.admitted)
        if what == "drop":
            self.counters.links["over_host_limit"] += 1
            return
        if what == "defer":
            self.quotas.defer(host, (url, fp, hops, depth, sitemap, hop))
            return
        self._admit(url, fp, host, st, hops, depth, sitemap, hop, via)

    def settle_quotas(self) -> None:
        """After an exchange's quota reports: new per-host quotas; deferred URLs within them are
        admitted, those of a host full in all are dropped and counted."""
        q = self.quotas
        for host, quota in q.settle():
            st = self.hosts[host]
            if host in q.full:
                self.counters.links["over_host_limit"] += q.drop_all(host)
                continue
            for url, fp, hops, depth, sitemap, *hop in q.take(host, quota - st.admitted):   # (no hop: a checkpoint's
                self._admit(url, fp, host, st, hops, depth, sitemap, *hop)                # of an earlier version)

    def _admit(self, url: str, fp: int, host: str, st, hops: int, depth: int, sitemap: bool,
               hop: int | None = None, via: int = -1) -> None:
        """Into the frontier, with the facts that came with the URL (its columns)."""
        st.admitted += 1
        if not (sitemap or self.track_depth):
            depth = 0                              # a page's depth matters with --max-depth only
        if hop is None:                            # what the URL line says: a sitemap file, a link
            hop = SITEMAP if sitemap else (UNKNOWN if hops else LINK)
        idx = self.frontier.add(url, host, hops, depth, sitemap, hop, via)
        if idx >= 0:                               # (-1: on disk; on_refill adds it when it is back)
            self.discovery.add(idx, hop, via)

    def receive(self, data: bytes) -> None:
        """URLs another rank found for this one (lines of :mod:`abc_crawler.web.urlline`)."""
        if not data:
            return
        for line in data.decode().split("\n"):
            if not line:
                continue
            url, h, depth, sitemap, hop = decode_line(line)
            fp = fingerprint(url)
            new = self.seen.add(fp)
            if not new:
                if new is None:
                    self.pending.append((url, fp, self.rank, h, depth, sitemap, hop, None))
                continue
            self.admit_local(url, fp, h, depth, sitemap, hop)
        self.resolve()

    def path_via(self, idx: int | None) -> tuple[str, str]:
        """The crawl log's discovery path and via of URL ``idx`` of this rank."""
        if idx is None:
            return self.discovery.path_via(None, 0, 0)
        f = self.frontier
        return self.discovery.path_via(idx, f.hops_of(idx), 0 if f.is_sitemap(idx) else f.depth_of(idx))

    def record_page(self, fp: int, url: str, status: int, nbytes: int, is_node: bool, kind: str = "") -> None:
        """A final answer, for rank 0's graph (``kind``: how it failed or why it is not a node)."""
        rep = self.report
        rep.page_fp.append(fp)
        if self.seen.report(fp):
            rep.new_fp.append(fp)
            rep.new_urls.append(url)
        rep.page_status.append(status)
        rep.page_bytes.append(nbytes)
        rep.page_node.append(is_node)
        rep.page_kind.append(kind)

    def record_given_up(self, idx: int, url: str, kind: str) -> None:
        """URL ``idx`` of this rank completed without a request (its host given up, robots.txt), for
        the graph; a sitemap file is not (it is not a page)."""
        if self.frontier.is_sitemap(idx):
            return
        fp = fingerprint(url)
        rep = self.report
        rep.given_up_fp.append(fp)
        rep.given_up_kind.append(kind)
        if self.seen.report(fp):
            rep.new_fp.append(fp)
            rep.new_urls.append(url)

    @property
    def queued(self) -> int:
        """URLs waiting in the outboxes or for the seen set's disk check."""
        return sum(len(o) for o in self.outbox) + len(self.pending)

    def payloads(self) -> list[bytes]:
        """The outboxes as one buffer per destination (``\\n``-terminated lines), emptied; the
        wire figures go into the counters and the report."""
        self.resolve()
        payloads = []
        rep = self.report
        c = self.counters
        rep.send_bytes = [0] * self.size
        rep.send_urls = [0] * self.size
        for dst, urls in enumerate(self.outbox):
            if dst == self.rank or not urls:
                payloads.append(b"")
                continue
            data = ("\n".join(urls) + "\n").encode()
            payloads.append(data)
            rep.send_bytes[dst] = len(data)
            rep.send_urls[dst] = len(urls)
            c.wire_bytes += len(data)
            c.wire_urls += len(urls)
            c.messages_mpi += 1
        self.drop_outbox()
        return payloads

    def restore_pending(self, report: SuperstepReport, outbox: list[list[str]]) -> None:
        """A resume: the report and the outboxes of the checkpointed superstep."""
        self.report = report
        self.outbox = [list(o) for o in outbox]

    def drop_outbox(self) -> None:
        self.outbox = [[] for _ in range(self.size)]

    def take_report(self, superstep: int) -> bytes:
        """The report of this superstep, encoded; a new one starts."""
        rep = self.report
        rep.superstep = superstep
        data = encode_report(rep)
        self.report = SuperstepReport(rank=self.rank)
        return data
