"""Where a followed link goes: the URL-seen set lets each URL through once; a URL of this rank
enters its frontier, another rank's goes into ``outbox[owner]`` for the superstep's all-to-all;
and every page with its links goes into the :class:`SuperstepReport` for rank 0 — built here, in
one place. The seen set also remembers URLs sent to other ranks, so a URL leaves this rank at
most once; the owner's seen set makes "fetched at most once" hold across ranks."""
from __future__ import annotations

from ..coordinator import SuperstepReport, encode_report
from ..urls import fingerprint, host_of
from .counters import RankCounters
from .hosts import HostTable
from .links import Target

__all__ = ["Router"]


class Router:
    """URL-seen test, frontier or outbox, and the report to rank 0, of one rank."""

    def __init__(self, rank: int, size: int, frontier, seen, counters: RankCounters, hosts: HostTable, host_cap: int):
        self.rank = rank
        self.size = size
        self.frontier = frontier
        self.seen = seen
        self.counters = counters
        self.hosts = hosts
        self.host_cap = host_cap
        self.outbox: list[list[str]] = [[] for _ in range(size)]
        self.report = SuperstepReport(rank=rank)
        self.hops: dict[int, int] = {}            # fp -> redirect hops that led to this URL

    def route(self, src_fp: int | None, targets: list[Target], hops: int = 0) -> None:
        """MV, URL-seen test, frontier or outbox, report to rank 0. ``src_fp``: the page the links
        were found on (None for seeds); ``hops`` > 0 marks the targets of a redirect chain
        (carried to the owner)."""
        rep = self.report
        me = self.rank
        seen = self.seen
        remote: set[int] = set()
        volume = 0
        if src_fp is not None:
            rep.link_src.extend([src_fp] * len(targets))
        for url, fp, r, wire in targets:
            if wire:
                volume += wire
                remote.add(r)
            if src_fp is not None:
                rep.link_dst.append(fp)
                if seen.report(fp):
                    rep.new_fp.append(fp)
                    rep.new_urls.append(url)
            if not seen.add(fp):
                continue
            if r == me:
                self.admit_local(url, fp, hops)
            else:
                self.outbox[r].append(url if not hops else f"{url}\t{hops}")
        c = self.counters
        c.volume += volume
        rep.volume += volume
        c.messages_thesis += len(remote)
        c.links["followed"] += len(targets)

    def admit_local(self, url: str, fp: int, hops: int) -> None:
        """Put a new URL of this rank into URLStates (within the per-host limit)."""
        host = host_of(url)
        st = self.hosts[host]
        if st.admitted >= self.host_cap:
            self.counters.links["over_host_limit"] += 1
            return
        st.admitted += 1
        if hops:
            self.hops[fp] = hops
        self.frontier.add(url, host)

    def receive(self, data: bytes) -> None:
        """URLs another rank found for this one (lines ``URL`` or ``URL\\tHOPS``)."""
        if not data:
            return
        for line in data.decode().split("\n"):
            if not line:
                continue
            url, _, h = line.partition("\t")
            fp = fingerprint(url)
            if not self.seen.add(fp):
                continue
            self.admit_local(url, fp, int(h) if h else 0)

    def pop_hops(self, fp: int) -> int:
        return self.hops.pop(fp, 0)

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

    def record_given_up(self, url: str, kind: str) -> None:
        """A URL of this rank completed without a request (its host given up, robots.txt), for the graph."""
        fp = fingerprint(url)
        rep = self.report
        rep.given_up_fp.append(fp)
        rep.given_up_kind.append(kind)
        if self.seen.report(fp):
            rep.new_fp.append(fp)
            rep.new_urls.append(url)

    @property
    def queued(self) -> int:
        """URLs waiting in the outboxes."""
        return sum(len(o) for o in self.outbox)

    def payloads(self) -> list[bytes]:
        """The outboxes as one buffer per destination (``\\n``-terminated lines), emptied; the
        wire figures go into the counters and the report."""
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

    def drop_outbox(self) -> None:
        self.outbox = [[] for _ in range(self.size)]

    def take_report(self, superstep: int) -> bytes:
        """The report of this superstep, encoded; a new one starts."""
        rep = self.report
        rep.superstep = superstep
        data = encode_report(rep)
        self.report = SuperstepReport(rank=self.rank)
        return data
