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
"""
from __future__ import annotations

from dataclasses import dataclass

from protego import Protego

__all__ = ["HostRobots", "RobotsCache", "robots_url"]

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

    def on_response(self, host: str, status: int, body: bytes, now: float) -> None:
        """Record the answer for ``host``'s robots.txt (``status`` 0 = transport error)."""
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
                h.retry_at = now + self.retry_seconds * (2 ** (h.failures - 1))

    def allowed(self, host: str, url: str) -> bool:
        h = self.get(host)
        if h.rules is None:
            return True
        return h.rules.can_fetch(url, self.agent)
