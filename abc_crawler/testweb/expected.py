"""What a correct crawl of a generated web requests and finds (the manifest's ``expected``), and
the bytes the embedded server sends for each URL (:class:`ServedBytes`, what a crawl must store)."""
from __future__ import annotations

import hashlib
import re
from collections import deque
from dataclasses import dataclass

from .canonical import split_url

__all__ = ["USER_AGENT", "robots_parsers", "compute_expected", "ServedBytes", "Served", "session_counter"]

#: The product token robots.txt rules are matched on (the crawler's).
USER_AGENT = "abc-crawler"


def robots_parsers(robots: dict) -> dict:
    """A protego parser per ``host[:port]`` that has a robots.txt."""
    from protego import Protego
    return {host: Protego.parse(txt) for host, txt in robots.items() if txt is not None}


def compute_expected(pages: dict, seeds: list[str], hosts: list[str], robots: dict,
                     user_agent: str = USER_AGENT, hostile_hosts=(), in_scope=None, requisites: bool = True) -> dict:
    """What a correct crawl from ``seeds`` requests and finds.

    ``pages``: the manifest's ``pages`` (URL -> entry with ``status``,
    ``content_type``, ``links``); ``hosts``: served ``host[:port]``;
    ``robots``: ``{host[:port]: robots.txt text or None}``.

    ``requested`` is the closure from the seeds over followable links
    (redirect Locations included) restricted to http(s) URLs on served hosts
    and not disallowed by robots.txt (protego, ``user_agent``).  URLs absent
    from ``pages`` answer 404.  ``nodes`` are the requested URLs with status
    200 and content type text/html; ``edges`` the distinct ``(u, v)``, u != v,
    both nodes, v a followable link of u.

    ``requisites`` (the crawler's default, ``--page-requisites``): a page's ``embeds`` (its style
    sheets, images, scripts, frames; a style sheet's url() and @import) are requested too, and
    ``refresh`` targets (``<meta http-equiv=refresh>``, the ``Refresh`` header) always are; edges
    are of navigation and refresh links, never embeds (the page graph).

    ``in_scope`` (optional): a function of a URL, False for URLs a crawl's scope rules
    (``--allowed-domains``, ``--url-filter``) reject; they count as out of scope.

    ``hostile_hosts`` (``host[:port]``, see :mod:`.hostile`): links to them
    are neither requested nor out of scope; when given, the result has one
    more key, ``hostile_links`` (the hostile URLs reached, sorted), and the
    manifest's ``hostile`` section says what becomes of them.
    """
    served = set(hosts)
    hostile = set(hostile_hosts)
    hostile_seen: set[str] = set()
    parsers = robots_parsers(robots)
    seen: set[str] = set()
    requested: list[str] = []
    disallowed: set[str] = set()
    oos: set[str] = set()
    queue: deque[str] = deque()

    def consider(url: str) -> None:
        if url in seen:
            return
        seen.add(url)
        scheme, net, _ = split_url(url)
        if hostile and net in hostile and scheme == "http":
            hostile_seen.add(url)
            return
        if scheme != "http" or net not in served or (in_scope is not None and not in_scope(url)):
            oos.add(url)
            return
        rp = parsers.get(net)
        if rp is not None and not rp.can_fetch(url, user_agent):
            disallowed.add(url)
            return
        requested.append(url)
        queue.append(url)

    for s in seeds:
        consider(s)
    while queue:
        u = queue.popleft()
        entry = pages.get(u)
        if entry:
            for v in entry["links"]:
                consider(v)
            for v in entry.get("refresh", ()):
                consider(v)
            if requisites:
                for v in entry.get("embeds", ()):
                    consider(v)
    statuses: dict[str, int] = {}
    nodes = []
    for u in requested:
        e = pages.get(u)
        st = e["status"] if e else 404
        statuses[str(st)] = statuses.get(str(st), 0) + 1
        if e and st == 200 and e["content_type"] == "text/html":
            nodes.append(u)
    nodeset = set(nodes)
    edges = sorted({(u, v) for u in nodes for v in pages[u]["links"] + pages[u].get("refresh", [])
                    if v != u and v in nodeset})
    out = {
        "requested": sorted(requested),
        "nodes": sorted(nodes),
        "edges": [list(e) for e in edges],
        "disallowed": sorted(disallowed),
        "out_of_scope_links": sorted(oos),
        "statuses": dict(sorted(statuses.items())),
    }
    if hostile:
        out["hostile_links"] = sorted(hostile_seen)
    return out


@dataclass
class Served:
    """One response as the server sends it: ``head`` is the status line and headers up to the
    ``Date`` line the connection adds (then ``Connection: keep-alive|close`` and the blank line);
    ``keep`` says which; the body (``length`` bytes) comes from :meth:`body`."""

    status: int
    head: bytes
    keep: bool
    length: int
    _data: bytes | None
    _plan: object = None

    def body(self) -> bytes:
        if self._data is not None:
            return self._data
        return b"".join(bytes(c) for c in self._plan.body_iter())

    def wire_head(self, date_line: bytes) -> bytes:
        """The whole head as sent, given its ``Date: ...\\r\\n`` line."""
        return self.head + date_line + (b"Connection: keep-alive\r\n\r\n" if self.keep
                                        else b"Connection: close\r\n\r\n")


_SID = re.compile(rb"\?sid=([0-9a-f]{16})")


def session_counter(prefix: str, sid: str, limit: int = 2_000_000) -> int | None:
    """The session counter value before the page whose first link carries ``sid`` (the
    ``session`` generator of :mod:`.dynamic` numbers its ids per server run), or None."""
    for c in range(limit):
        if hashlib.blake2b(f"{prefix}|{c + 1}".encode(), digest_size=8).hexdigest() == sid:
            return c
    return None


class ServedBytes:
    """What the embedded server sends for the URLs of a web directory: its routes (routes.json,
    ``sites/``, hostile ``modes``; ``docs/TESTWEB.md``) answered by a :class:`.routes.WebSite`
    of its own, so a test compares what a crawl stored with what the server sent, byte for byte.

    Two answers depend on the server's history, and :meth:`response` takes it into account:
    ``fail_first`` routes answer their failure status to the first requests of a URL (pass the
    status stored), ``session`` pages number their session ids per server run (pass the body
    stored: the counter is found from its first id). Hostile transports (drip, reset, stall) send
    less than their response: a crawler must not store them as complete.
    """

    def __init__(self, web_dir):
        from .routes import WebSite
        self.site = WebSite(web_dir, cache_bytes=0)

    def response(self, host: str, target: str, status: int | None = None, stored: bytes | None = None) -> Served:
        """The response to ``GET target`` with ``Host: host`` (the name without port); with
        ``status``: the first of the server's successive answers that has it (``fail_first``)."""
        site = self.site
        site.hits.pop((host, target), None)
        if stored is not None:
            self._session_state(host, target, stored)
        first = None
        for _ in range(16):
            st, head, body = site.respond(host, target)
            if first is None:
                first = (st, head, body)
            if status is None or st == status:
                break
        else:
            st, head, body = first
        if isinstance(body, bytes):
            return Served(st, head, True, len(body), body)
        return Served(st, body.head, bool(body.sized), body.length, body.data, body)

    def _session_state(self, host: str, target: str, stored: bytes) -> None:
        mode = self.site.modes.get(host)
        if not mode:
            return
        path = target.split("?", 1)[0]
        for prefix, route in mode["prefix"]:
            if route.get("dynamic") == "session" and path.startswith(prefix):
                m = _SID.search(stored)
                if m is not None:
                    p = str(route.get("prefix", "/s/"))
                    c = session_counter(p, m.group(1).decode())
                    if c is not None:
                        self.site.ctx[("session", p)] = c
                return
