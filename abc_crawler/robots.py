"""robots.txt per host (RFC 9309), parsed with protego and cached per rank.

What a robots.txt answer means:

* 2xx: the rules apply (Crawl-delay honoured);
* 3xx: treated as "unavailable, 4xx" = allow all (the fetcher does not follow
  redirects; following them is a later change);
* 4xx: no rules, everything allowed;
* 5xx or a transport error (timeout, reset): the host is unreachable for now;
  its URLs wait, the robots.txt is tried again after a back-off
  (``robots_retry_seconds``, doubling); after three failures the host is given
  up and its URLs are counted as ``robots_unavailable``.

Each rank fetches a host's robots.txt at most once (plus those retries).

Sharing. Under page-level assignment every rank crawls pages of every host,
so without help each host's robots.txt would be fetched once per rank: at
8 ranks and 400 hosts, 3,200 requests instead of 400, each one more request
to the host and, in the first seconds of a crawl, one more wait per host
before its first page. So a rank that gets a definitive answer (2xx, 3xx,
4xx) sends it to every other rank with the next superstep exchange
(:func:`encode_shared` / :func:`decode_shared`), and a rank that has not
asked yet adopts it (:meth:`RobotsCache.adopt`). Two ranks may still ask in
the same superstep; each host is asked far fewer than K times.
"""
from __future__ import annotations

from dataclasses import dataclass

from protego import Protego

__all__ = ["HostRobots", "RobotsCache", "robots_url", "encode_shared", "decode_shared", "SHARE_MAX_BYTES"]

#: robots.txt bodies larger than this are not shared (each rank fetches such a file itself);
#: RFC 9309 asks crawlers to parse at least 500 KiB
SHARE_MAX_BYTES = 512 * 1024

MAX_TRIES = 3


def robots_url(host_url_prefix: str) -> str:
    """``http://host[:port]`` → ``http://host[:port]/robots.txt``."""
    return host_url_prefix.rstrip("/") + "/robots.txt"


@dataclass
class HostRobots:
    state: str = "unknown"           # unknown | fetching | ready | retry | dead
    rules: Protego | None = None
    crawl_delay: float = 0.0
    failures: int = 0
    retry_at: float = 0.0


class RobotsCache:
    """robots.txt state of every host this rank talks to."""

    def __init__(self, user_agent: str, retry_seconds: float = 5.0, enabled: bool = True):
        # RFC 9309 matches the product token, e.g. "abc-crawler" of "abc-crawler/0.1".
        self.agent = user_agent.split("/", 1)[0].strip() or user_agent
        self.retry_seconds = retry_seconds
        self.enabled = enabled
        self.hosts: dict[str, HostRobots] = {}
        self.fetches = 0
        self.adopted = 0                  # answers taken from other ranks

    def get(self, host: str) -> HostRobots:
        h = self.hosts.get(host)
        if h is None:
            h = self.hosts[host] = HostRobots()
            if not self.enabled:
                h.state = "ready"
        return h

    def needs_fetch(self, host: str, now: float) -> bool:
        h = self.get(host)
        return h.state == "unknown" or (h.state == "retry" and h.retry_at <= now)

    def forget(self, host: str) -> None:
        """The request for ``host``'s robots.txt was cut before an answer: it is asked again."""
        self.get(host).state = "unknown"

    def on_response(self, host: str, status: int, body: bytes, now: float, fetched: bool = True) -> None:
        """Record the answer for ``host``'s robots.txt (``status`` 0 = transport error);
        ``fetched=False``: another rank fetched it (not counted as this rank's fetch)."""
        if fetched:
            self.fetches += 1
        h = self.get(host)
        if 200 <= status < 300:
            text = body.decode("utf-8", errors="replace")
            h.rules = Protego.parse(text)
            delay = h.rules.crawl_delay(self.agent)
            h.crawl_delay = float(delay) if delay else 0.0
            h.state = "ready"
        elif 300 <= status < 500:
            h.rules = None
            h.state = "ready"
        else:
            h.failures += 1
            if h.failures >= MAX_TRIES:
                h.state = "dead"
            else:
                h.state = "retry"
                h.retry_at = now + self.retry_seconds * 2.0 ** min(h.failures - 1, 60)

    def adopt(self, host: str, status: int, body: bytes, now: float) -> bool:
        """Take another rank's definitive answer for ``host`` unless this rank has one; True if taken."""
        h = self.get(host)
        if h.state == "ready" or h.state == "dead":
            return False
        self.on_response(host, status, body, now, fetched=False)
        self.adopted += 1
        return True

    def allowed(self, host: str, url: str) -> bool:
        h = self.get(host)
        if h.rules is None:
            return True
        return h.rules.can_fetch(url, self.agent)


def encode_shared(records: list[tuple[str, int, bytes]]) -> bytes:
    """``(host, status, body)`` records as one buffer: ``host\tstatus\tlength\n`` then the body."""
    return b"".join(b"%s\t%d\t%d\n%s" % (host.encode(), status, len(body), body) for host, status, body in records)


def decode_shared(data: bytes) -> list[tuple[str, int, bytes]]:
    """The inverse of :func:`encode_shared`; raises ValueError on a malformed buffer."""
    out = []
    i = 0
    while i < len(data):
        nl = data.index(b"\n", i)
        host, status, n = data[i:nl].split(b"\t")
        end = nl + 1 + int(n)
        if end > len(data):
            raise ValueError("robots record runs past the end of the buffer")
        out.append((host.decode(), int(status), data[nl + 1:end]))
        i = end
    return out
