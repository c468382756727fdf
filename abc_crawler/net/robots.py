"""robots.txt per host (RFC 9309), cached per rank.

Which rules apply (RFC 9309 §2.2.1). The crawler matches its *product token*
(``--robots-token``; by default :func:`robots_token` of ``--user-agent``: the
name inside a ``(compatible; NAME/…)`` comment, else the first product's name —
so ``Mozilla/5.0 (compatible; MyBot/1.0; +https://…)`` obeys the ``MyBot``
group, not a ``Mozilla`` one). A ``User-agent`` line names a group by the
leading letters, ``-`` and ``_`` of its value, compared case-insensitively
and whole (``MyBot/2.0`` names ``mybot``; ``My`` does not match ``MyBot``).
Every group naming the token is obeyed, combined; without one, every ``*``
group, combined; without those, nothing is disallowed. Consecutive
``User-agent`` lines open one group; a ``User-agent`` line after a rule opens
the next; ``Sitemap`` and unknown lines do not end a group. Only the first
500 KiB of a file are parsed (:data:`MAX_PARSE_BYTES`, the RFC's minimum;
cut at a line end). The rules of the chosen groups are matched by protego
(longest match wins, ``Allow`` on a tie, ``*`` and ``$``, percent-encoding
normalized). ``Crawl-delay`` of the chosen groups is kept (the largest valid
one); ``Sitemap`` lines are kept for :mod:`abc_crawler.net.sitemaps`.

What a robots.txt answer means:

* 2xx: the rules apply (Crawl-delay honoured);
* 3xx: the ``Location`` is followed (:meth:`RobotsCache.next_hop`), up to five
  redirects, to another scheme or host too when it is in scope; a longer chain,
  or one leaving the scope, counts as "unavailable" (as a 4xx);
* 4xx: no rules, everything allowed;
* 5xx or a transport error (timeout, reset): the host is unreachable for now;
  its URLs wait, the robots.txt is tried again after a back-off
  (``robots_retry_seconds``, doubling); after three failures the host is given
  up and its URLs are counted as ``robots_unavailable``. A failure that no
  retry can mend — the address rule refused the host's address, or TLS
  verification failed — gives the host up at once, and its URLs are counted
  under that kind (``address_refused``, ``tls_…``).

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

import math
import re
from dataclasses import dataclass, field

from protego import Protego

from ..store import logs

_log = logs.get("robots")

__all__ = ["HostRobots", "RobotsCache", "RobotsRules", "robots_url", "robots_token", "check_token", "redirect_target",
           "permanent_failure",
           "encode_shared", "decode_shared", "SHARE_MAX_BYTES", "MAX_PARSE_BYTES", "MAX_REDIRECTS"]

#: robots.txt bodies larger than this are not shared (each rank fetches such a file itself);
#: RFC 9309 asks crawlers to parse at least 500 KiB
SHARE_MAX_BYTES = 512 * 1024

#: the part of a robots.txt that is parsed (RFC 9309 §2.5: at least 500 KiB)
MAX_PARSE_BYTES = 500 * 1024

#: redirects of a robots.txt request followed (RFC 9309 §2.3.1.2: at least five)
MAX_REDIRECTS = 5

MAX_TRIES = 3

_TOKEN = re.compile(r"[A-Za-z_-]+")
_COMPATIBLE = re.compile(r"\(\s*compatible\s*;\s*([^;/()\s]+)", re.IGNORECASE)


def check_token(token: str) -> str:
    """``token`` if it is an RFC 9309 product token (letters, ``-``, ``_``), else ValueError.

    >>> check_token("abc-crawler")
    'abc-crawler'
    """
    if not _TOKEN.fullmatch(token or ""):
        raise ValueError(f"{token!r} is not a robots.txt product token (letters, '-' and '_' only)")
    return token


def robots_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched on, derived from a User-Agent.

    >>> robots_token("Mozilla/5.0 (compatible; MyBot/1.0; +https://bot.example/)")
    'MyBot'
    >>> robots_token("abc-crawler/0.1"), robots_token("abc-crawler"), robots_token("Googlebot-Image/1.0")
    ('abc-crawler', 'abc-crawler', 'Googlebot-Image')
    >>> robots_token("Bot2000/1.0")
    Traceback (most recent call last):
    ...
    ValueError: 'Bot2000' (from User-Agent 'Bot2000/1.0') is not a robots.txt product token (letters, '-' and '_' only): give --robots-token
    """
    m = _COMPATIBLE.search(user_agent)
    name = m.group(1) if m else user_agent.strip().split("/", 1)[0].split(None, 1)[0] if user_agent.strip() else ""
    if not _TOKEN.fullmatch(name):
        raise ValueError(f"{name!r} (from User-Agent {user_agent!r}) is not a robots.txt product token "
                         "(letters, '-' and '_' only): give --robots-token")
    return name


def robots_url(host_url_prefix: str) -> str:
    """``http://host[:port]`` → ``http://host[:port]/robots.txt``."""
    return host_url_prefix.rstrip("/") + "/robots.txt"


_KEYS = {
    "user-agent": "ua", "useragent": "ua", "user agent": "ua",
    "allow": "allow",
    "disallow": "disallow", "dissallow": "disallow", "dissalow": "disallow", "disalow": "disallow",
    "diasllow": "disallow", "disallaw": "disallow",
    "crawl-delay": "delay", "crawldelay": "delay", "crawl delay": "delay",
    "sitemap": "sitemap", "site-map": "sitemap", "sitemaps": "sitemap",
}


def _lines(text: str):
    """``(kind, value)`` of the lines of a robots.txt that mean something (comments and blanks dropped)."""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        kind = _KEYS.get(key.strip().lower()) if sep else None
        if kind is None:                       # "Disallow /x": a known key without its colon
            parts = line.split(None, 1)
            kind = _KEYS.get(parts[0].lower())
            if kind is None:
                continue
            value = parts[1] if len(parts) > 1 else ""
        yield kind, value.strip()


@dataclass
class _Group:
    agents: list = field(default_factory=list)
    rules: list = field(default_factory=list)       # (directive, value)
    delays: list = field(default_factory=list)


def _decode(body: bytes) -> str:
    if body[:3] == b"\xef\xbb\xbf":
        body = body[3:]
    elif body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return body[:MAX_PARSE_BYTES].decode("utf-16", errors="replace")
    if len(body) > MAX_PARSE_BYTES:
        body = body[:MAX_PARSE_BYTES]
        cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
        if cut >= 0:
            body = body[:cut]
    return body.decode("utf-8", errors="replace")


class RobotsRules:
    r"""The rules of one robots.txt for one product token (see the module docstring).

    >>> r = RobotsRules.parse(b"User-agent: *\nDisallow: /\n\nUser-agent: MyBot/2\nDisallow: /private\nCrawl-delay: 2",
    ...                       "mybot")
    >>> r.allowed("http://h.test/x"), r.allowed("http://h.test/private/y"), r.crawl_delay, r.group
    (True, False, 2.0, 'mybot')
    """

    __slots__ = ("group", "crawl_delay", "sitemaps", "_protego")

    def __init__(self, group: str, rules: list, crawl_delay: float, sitemaps: list):
        self.group = group                    # "token", "*", or "" (no group applies)
        self.crawl_delay = crawl_delay
        self.sitemaps = sitemaps
        lines = [f"{'Allow' if d == 'allow' else 'Disallow'}: {v}" for d, v in rules if v]
        self._protego = Protego.parse("User-agent: *\n" + "\n".join(lines)) if lines else None

    @classmethod
    def parse(cls, body: bytes, token: str) -> "RobotsRules":
        text = _decode(body)
        token = token.lower()
        groups: list[_Group] = []
        sitemaps: list[str] = []
        current: _Group | None = None
        after_agent = False
        for kind, value in _lines(text):
            if kind == "ua":
                if current is None or not after_agent:
                    current = _Group()
                    groups.append(current)
                after_agent = True
                if value.startswith("*"):
                    current.agents.append("*")
                else:
                    m = _TOKEN.match(value)
                    if m:
                        current.agents.append(m.group(0).lower())
            elif kind == "sitemap":
                if value:
                    sitemaps.append(value)
            else:
                after_agent = False
                if current is None:
                    continue                   # a rule before any User-agent line: ignored
                if kind == "delay":
                    try:
                        d = float(value)
                    except ValueError:
                        continue
                    if math.isfinite(d) and d >= 0:
                        current.delays.append(d)
                else:
                    current.rules.append((kind, value))
        chosen = [g for g in groups if token in g.agents]
        group = token
        if not chosen:
            chosen = [g for g in groups if "*" in g.agents]
            group = "*" if chosen else ""
        rules = [r for g in chosen for r in g.rules]
        delays = [d for g in chosen for d in g.delays]
        return cls(group, rules, max(delays) if delays else 0.0, sitemaps)

    def allowed(self, url: str) -> bool:
        return True if self._protego is None else self._protego.can_fetch(url, "*")


#: failures of a robots.txt request that no retry mends: the host is given up at once
def permanent_failure(kind: str | None) -> bool:
    """True for ``address_refused`` and TLS failures (``tls_…``)."""
    return kind is not None and (kind == "address_refused" or kind.startswith("tls_"))


@dataclass
class HostRobots:
    state: str = "unknown"           # unknown | fetching | ready | retry | dead
    rules: RobotsRules | None = None
    crawl_delay: float = 0.0
    failures: int = 0
    retry_at: float = 0.0
    reason: str = "robots_unavailable"   # what the URLs of a dead host are counted as
    hops: int = 0                    # redirects followed for the request in flight
    sitemaps: list = field(default_factory=list)   # Sitemap lines not yet taken (this rank's own fetch)


class RobotsCache:
    """robots.txt state of every host this rank talks to.

    ``agent`` is the product token (``--robots-token``), or a User-Agent it is
    derived from (:func:`robots_token`).
    """

    def __init__(self, agent: str, retry_seconds: float = 5.0, enabled: bool = True,
                 max_crawl_delay: float = float("inf"), visits=None):
        self.agent = robots_token(agent)
        self.max_crawl_delay = max_crawl_delay    # a host asking a longer Crawl-delay is skipped
        self.retry_seconds = retry_seconds
        self.enabled = enabled
        # where each host's entry lives: the ``robots`` slot of its record in ``visits`` (a mapping
        # host -> record, :class:`abc_crawler.sched.visits.HostVisits`), or a table of this cache's own
        self._visits = visits
        self._own: dict[str, HostRobots] = {}
        self.fetches = 0
        self.adopted = 0                  # answers taken from other ranks
        self.redirects = 0                # robots.txt redirects followed

    def get(self, host: str) -> HostRobots:
        if self._visits is not None:
            v = self._visits[host]
            h = v.robots
            if h is None:
                h = v.robots = self._new()
            return h
        h = self._own.get(host)
        if h is None:
            h = self._own[host] = self._new()
        return h

    def _new(self) -> HostRobots:
        h = HostRobots()
        if not self.enabled:
            h.state = "ready"
        return h

    def crawl_delays(self) -> dict[str, float]:
        """host -> the Crawl-delay its robots.txt asks (hosts that ask one)."""
        entries = ((host, v.robots) for host, v in self._visits.items()) if self._visits is not None \
            else self._own.items()
        return {host: h.crawl_delay for host, h in entries if h is not None and h.crawl_delay > 0}

    def needs_fetch(self, host: str, now: float) -> bool:
        h = self.get(host)
        return h.state == "unknown" or (h.state == "retry" and h.retry_at <= now)

    def forget(self, host: str) -> None:
        """The request for ``host``'s robots.txt was cut before an answer: it is asked again."""
        h = self.get(host)
        h.state = "unknown"
        h.hops = 0

    def next_hop(self, host: str, location_url: str | None) -> str | None:
        """After a 3xx answer to ``host``'s robots.txt request: the URL to ask next — the
        canonical ``location_url`` (None when the caller found it unusable or out of scope) —
        or None when the chain ends here (more than :data:`MAX_REDIRECTS`)."""
        h = self.get(host)
        if location_url is None or h.hops >= MAX_REDIRECTS:
            h.hops = 0
            return None
        h.hops += 1
        self.redirects += 1
        return location_url

    def on_response(self, host: str, status: int, body: bytes, now: float, fetched: bool = True,
                    error: str | None = None) -> None:
        """Record the answer for ``host``'s robots.txt (``status`` 0 = transport error, of kind
        ``error``); ``fetched=False``: another rank fetched it (not counted as this rank's fetch)."""
        if fetched:
            self.fetches += 1
        h = self.get(host)
        h.hops = 0
        if 200 <= status < 300:
            h.rules = RobotsRules.parse(body, self.agent)
            h.crawl_delay = h.rules.crawl_delay
            h.state = "ready"
            if h.crawl_delay > self.max_crawl_delay:     # Nutch's fetcher.max.crawl.delay: skipped
                h.state = "dead"
                h.reason = "crawl_delay_too_long"
                if fetched:
                    _log.warning("host %s skipped: its robots.txt asks Crawl-delay %g s, more than --max-crawl-delay %g s",
                                 host, h.crawl_delay, self.max_crawl_delay)
            if fetched:
                h.sitemaps = list(h.rules.sitemaps)
        elif 300 <= status < 500:
            h.rules = None
            h.state = "ready"
        elif status == 0 and permanent_failure(error):
            h.state = "dead"
            h.reason = error
            if fetched:
                _log.warning("host %s given up: its robots.txt could not be fetched (%s)", host, error)
        else:
            h.failures += 1
            if h.failures >= MAX_TRIES:
                h.state = "dead"
                if fetched:
                    _log.warning("host %s given up: robots.txt failed %d times (last: %s); its URLs count as %s",
                                 host, h.failures, error or f"status {status}", h.reason)
            else:
                h.state = "retry"
                h.retry_at = now + self.retry_seconds * 2.0 ** min(h.failures - 1, 60)
                if fetched:
                    _log.info("host %s: robots.txt %s, asked again in %g s", host, error or f"status {status}",
                              h.retry_at - now)

    def take_sitemaps(self, host: str) -> list[str]:
        """The ``Sitemap`` lines of the robots.txt this rank fetched for ``host``, once."""
        h = self.get(host)
        out, h.sitemaps = h.sitemaps, []
        return out

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
        return h.rules.allowed(url)


def redirect_target(url: str, location: str | None, in_scope) -> str | None:
    """The canonical URL a robots.txt redirect from ``url`` points to, when it can be followed:
    an http(s) URL (another scheme, host or port is fine) that ``in_scope(url)`` accepts; else None.

    >>> redirect_target("http://a.test/robots.txt", "https://a.test/robots.txt", lambda u: True)
    'https://a.test/robots.txt'
    >>> redirect_target("http://a.test/robots.txt", "ftp://a.test/r", lambda u: True) is None
    True
    >>> redirect_target("http://a.test/robots.txt", "//evil.example/robots.txt", lambda u: u.startswith("http://a.test/")) is None
    True
    """
    from ..web.urls import UrlError, canonicalize

    if not location:
        return None
    try:
        target = canonicalize(location, url)
    except UrlError:
        return None
    if target is None or not in_scope(target):
        return None
    return target


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
