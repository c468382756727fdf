"""A batch's robots.txt, asked before its host's first page (RFC 9309): its answer (cut at a slot's
end and asked again, redirects followed up to five, to another host in scope too, the file shared
with the other ranks, its Sitemap lines into the crawl), and the hops of its redirects — each a
request like any other, after the host's rest and within a held slot. A part of
:class:`abc_crawler.crawl.fetching.BatchRunner`, which it is mixed into (its attributes are the
runner's)."""
from __future__ import annotations

from ..net.fetcher import Response
from ..net.robots import SHARE_MAX_BYTES, redirect_target
from ..sched.phases import CUT_SLOW
from ..web.urls import host_of

__all__ = ["RobotsFetching"]


class RobotsFetching:
    """The robots.txt part of :class:`abc_crawler.crawl.fetching.BatchRunner`."""

    def _on_robots(self, b, r: Response, cause: str | None, now: float) -> None:
        host = b.host
        b.side_fetch = False
        self.lines.robots(r, b.redirects, b.via, cause)
        other = host_of(r.url)
        if other != host:                        # a redirect's hop to another host: that host rests too
            v = self.hosts[other]                # (a back-off it got meanwhile kept), and its own batch,
            v.next_at = max(now + self._rest(other, r.t_end - r.t_start),   # held while the hop was out, goes on
                            self.frontier.blocked_until(other))
            ob = self.batches.get(other)
            if ob is not None and ob.current is None and not ob.side_fetch:
                self._wake(ob, v.next_at)
        st = self.hosts[host]
        if cause is not None:                    # the slot ended first: ask again in the host's next slot
            if cause == CUT_SLOW:
                st.robots_cuts += 1
            if cause != CUT_SLOW or st.robots_cuts < self.cfg.max_slot_cuts:
                self.robots.forget(host)
                self._rested(b, r, now)
                return
            self.counters.errors["robots_slot_too_short"] += 1   # and on as a timeout (back-off)
        st.robots_cuts = 0
        if r.error is None and 300 <= r.status < 400 and self._robots_redirect(b, r, now):
            return
        self.robots.on_response(host, r.status if r.error is None else 0, r.body, now, error=r.error)
        if self.cfg.sitemaps and r.error is None:    # its Sitemap lines, from the rank that fetched it
            self.router.route_sitemaps(self.links.sitemap_targets(r.url, self.robots.take_sitemaps(host)), 0,
                                       via=r.url)
        if (self.share_robots and r.error is None and 200 <= r.status < 500
                and len(r.body) <= SHARE_MAX_BYTES and host not in self.own_hosts):
            self.robots_out.append((host, r.status, r.body))
        if r.error is not None:
            self.counters.errors[f"robots_{r.error}"] += 1
        elif r.status >= 500:
            self.counters.errors["robots_5xx"] += 1
        self._rested(b, r, now)

    def _robots_redirect(self, b, r: Response, now: float) -> bool:
        """Follow a robots.txt redirect (RFC 9309: up to five, to another scheme or host in scope);
        False when the chain ends here (the 3xx then means "unavailable")."""
        host = b.host
        nxt = self.robots.next_hop(host, redirect_target(r.url, r.header("location"), self.links.host_in_scope))
        if nxt is None:
            self.counters.errors["robots_redirect_unfollowed"] += 1
            return False
        # the next hop is a request like any other: after the host's rest, within a held slot (and
        # after the other host's rest, when it goes to another one: _robots_hop)
        st = self.hosts[host]
        st.next_at = now + self._rest(host, r.t_end - r.t_start)
        b.robots_next = nxt
        b.via, b.redirects = r.url, b.redirects + 1
        self._wake(b, st.next_at)
        return True

    def _robots_hop(self, b, now: float) -> bool:
        """Ask the next hop of a robots.txt redirect chain, if one waits (False: none does)."""
        nxt = b.robots_next
        if nxt is None:
            return False
        host = b.host
        limit = full = None
        if self.gate is not None:
            limit, full = self.gate.request_limit(host, max(self.cfg.politeness_delay, self.cfg.ip_politeness_delay))
            if limit == 0.0:                     # the slot is over: ask again in the host's next slot
                b.robots_next = None
                self.robots.forget(host)
                return False
        other = host_of(nxt)
        addr = self.groups.spacing_address(other)         # the address the hop goes to
        if other != host:                        # that host's rest, its request in flight, its address first
            ob = self.batches.get(other)
            if self.hosts[other].next_at > now:
                self._wake(b, self.hosts[other].next_at)
                return True
            if ob is not None and (ob.current is not None or ob.side_fetch):
                self._wake(b, now + self._rest(other, 0.0))   # (looked at again then: its answer sets the rest)
                return True
            if addr is not None and self.groups.next_at.get(addr, 0.0) > now:
                self._wait_address(b, addr)
                return True
        b.robots_next = None
        self._stamp(b, limit, full, now)
        b.addr = addr
        if other != host:                                 # nothing else to that host until the hop's answer
            self.hosts[other].next_at = max(self.hosts[other].next_at, now + self.cfg.timeout)
        b.side_fetch = True
        b.asked += 1
        self._submit(b, (self.ROBOTS_KEY, host), nxt, limit)
        return True
