"""What a correct crawl of a generated web requests and finds (the manifest's ``expected``)."""
from __future__ import annotations

from collections import deque

from .canonical import split_url

__all__ = ["USER_AGENT", "robots_parsers", "compute_expected"]

#: The product token robots.txt rules are matched on (the crawler's).
USER_AGENT = "abc-crawler"


def robots_parsers(robots: dict) -> dict:
    """A protego parser per ``host[:port]`` that has a robots.txt."""
    from protego import Protego
    return {host: Protego.parse(txt) for host, txt in robots.items() if txt is not None}


def compute_expected(pages: dict, seeds: list[str], hosts: list[str], robots: dict,
                     user_agent: str = USER_AGENT, hostile_hosts=(), in_scope=None) -> dict:
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
    statuses: dict[str, int] = {}
    nodes = []
    for u in requested:
        e = pages.get(u)
        st = e["status"] if e else 404
        statuses[str(st)] = statuses.get(str(st), 0) + 1
        if e and st == 200 and e["content_type"] == "text/html":
            nodes.append(u)
    nodeset = set(nodes)
    edges = sorted({(u, v) for u in nodes for v in pages[u]["links"] if v != u and v in nodeset})
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
