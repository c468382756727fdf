"""The Scrapy side of bench/vs_scrapy.py: a spider that follows every in-scope link, like abc-crawl.

    .venv/bin/python bench/scrapy_spider.py SEEDS --resolve RESOLVE [--concurrency 32] [--delay 0]
                                           [--timeout 10] [--stats-out F.json] [--max-seconds 1800]

Same politeness and scope as ``abc-crawl`` with the benchmark's settings:

* robots.txt obeyed (``ROBOTSTXT_OBEY``, Protego, matched on the product token
  ``abc-crawler`` like abc-crawl's default User-Agent). Scrapy ignores
  ``Crawl-delay``; abc-crawl obeys it (a few small hosts of the generated web
  have one) — it costs abc-crawl wall time, not CPU;
* one connection per host (``CONCURRENT_REQUESTS_PER_DOMAIN = 1``), the same
  delay between requests to a host (``DOWNLOAD_DELAY``, not randomized; 0 by
  default, like the benchmark's ``--politeness-delay 0``), ``CONCURRENT_REQUESTS``
  = abc-crawl's per-rank ``--concurrency`` (32), no retries, no cookies,
  redirects followed (abc-crawl treats a ``Location`` as a link; the set of
  URLs requested is the same), 10 s timeout, bodies over 10 MiB dropped;
* scope = the resolve list: a request whose ``host[:port]`` (default port
  omitted, as in abc-crawl's canonical URLs) is not in it is dropped by
  :class:`ScopeMiddleware` before the robots middleware, and the only name
  resolver installed is :class:`ResolveListResolver`, which answers the
  resolve list's address for listed names and fails every other lookup — no
  name ever reaches the system resolver. Only the ``http`` download handler
  is enabled;
* links: ``<a href>`` and ``<area href>``, joined with the page's ``<base>``
  (``get_base_url``), ``rel=nofollow`` skipped, nothing followed from a page
  whose ``<meta name=robots>`` says ``nofollow``/``none``; Scrapy's duplicate
  filter (request fingerprints of w3lib-canonicalized URLs) lets a URL through
  once. The broad-crawl settings of Scrapy's documentation
  (``DownloaderAwarePriorityQueue``, no cookies/retries, ``LOG_LEVEL INFO``)
  are used; no items are produced and nothing is stored.

``--stats-out`` receives Scrapy's stats as JSON plus ``pages`` (responses
other than robots.txt: what abc-crawl counts as ``requests``) and
``cpu_s`` (this process's user+system seconds).
"""
from __future__ import annotations

import argparse
import json
import resource
import signal
import sys
import time
from urllib.parse import urljoin, urlsplit

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.utils.response import get_base_url
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import IHostnameResolver, IHostResolution
from zope.interface import implementer

__all__ = ["CompareSpider", "ResolveListResolver", "ScopeMiddleware", "read_resolve", "netloc_key"]

_DEFAULT_PORT = {"http": 80, "https": 443}


def read_resolve(path: str) -> dict[str, str]:
    """``{"host:port": addr}`` from a curl-style resolve file."""
    out = {}
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#"):
                host, port, addr = line.rsplit(":", 2)
                out[f"{host.lower()}:{int(port)}"] = addr.strip("[]")
    return out


def netloc_key(url: str) -> str | None:
    """``host[:port]`` as in abc-crawl's scope (default port of the scheme omitted), or None."""
    try:
        p = urlsplit(url)
        port = p.port
    except ValueError:
        return None
    if p.scheme not in _DEFAULT_PORT or not p.hostname:
        return None
    port = port or _DEFAULT_PORT[p.scheme]
    return p.hostname if port in (80, 443) else f"{p.hostname}:{port}"


def scope_of(resolve: dict[str, str]) -> set[str]:
    out = set()
    for hp in resolve:
        host, port = hp.rsplit(":", 1)
        out.add(host if int(port) in (80, 443) else hp)
    return out


@implementer(IHostResolution)
class _Resolution:
    def __init__(self, name: str):
        self.name = name

    def cancel(self) -> None:
        pass


@implementer(IHostnameResolver)
class ResolveListResolver:
    """A name resolver that knows only the resolve list (``ABC_RESOLVE`` setting); every other name fails."""

    def __init__(self, reactor, table: dict[str, str]):
        self.reactor = reactor
        self.by_name: dict[str, str] = {}
        for hp, addr in table.items():
            self.by_name[hp.rsplit(":", 1)[0]] = addr
        self.refused = 0

    @classmethod
    def from_crawler(cls, crawler, reactor):
        return cls(reactor, read_resolve(crawler.settings.get("ABC_RESOLVE")))

    def install_on_reactor(self) -> None:
        self.reactor.installNameResolver(self)

    def resolveHostName(self, resolutionReceiver, hostName, portNumber=0, addressTypes=None,
                        transportSemantics="TCP"):
        resolution = _Resolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        addr = self.by_name.get(hostName.lower().rstrip("."))
        if addr is not None:
            resolutionReceiver.addressResolved(IPv4Address("TCP", addr, portNumber))
        else:
            self.refused += 1
        resolutionReceiver.resolutionComplete()
        return resolution


class ScopeMiddleware:
    """Downloader middleware: a request outside the resolve list never leaves (also redirects, robots.txt)."""

    def __init__(self, scope: set[str]):
        self.scope = scope
        self.dropped = 0

    @classmethod
    def from_crawler(cls, crawler):
        return cls(scope_of(read_resolve(crawler.settings.get("ABC_RESOLVE"))))

    def process_request(self, request, spider=None):
        if netloc_key(request.url) not in self.scope:
            self.dropped += 1
            raise IgnoreRequest(f"out of scope: {request.url}")
        return None


class CompareSpider(scrapy.Spider):
    name = "abc_compare"

    def __init__(self, seeds: str, resolve: str, **kw):
        super().__init__(**kw)
        with open(seeds) as fh:
            self.seed_urls = [u.strip() for u in fh if u.strip() and not u.startswith("#")]
        self.scope = scope_of(read_resolve(resolve))
        self.allowed_domains = sorted({k.split(":")[0] for k in self.scope})
        self.links_followed = 0
        self.links_out_of_scope = 0

    async def start(self):
        for u in self.seed_urls:
            yield scrapy.Request(u, callback=self.parse)

    def parse(self, response):
        if not isinstance(response, HtmlResponse):
            return
        sel = response.selector
        for content in sel.xpath("//meta[translate(@name,'ROBTS','robts')='robots']/@content").getall():
            tokens = {t.strip().lower() for t in content.split(",")}
            if "nofollow" in tokens or "none" in tokens:
                return
        base = get_base_url(response)
        scope = self.scope
        for a in sel.xpath("//a[@href] | //area[@href]"):
            attrs = a.attrib
            rel = attrs.get("rel")
            if rel and "nofollow" in rel.lower().split():
                continue
            url = urljoin(base, attrs["href"].strip())
            if netloc_key(url) not in scope:
                self.links_out_of_scope += 1
                continue
            self.links_followed += 1
            yield scrapy.Request(url, callback=self.parse)


def settings(resolve: str, concurrency: int, delay: float, timeout: float) -> dict:
    return {
        "ABC_RESOLVE": resolve,
        "TWISTED_DNS_RESOLVER": f"{__name__}.ResolveListResolver",
        "DOWNLOAD_HANDLERS": {"https": None, "ftp": None, "s3": None, "file": None, "data": None},
        "DOWNLOADER_MIDDLEWARES": {f"{__name__}.ScopeMiddleware": 50},
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_USER_AGENT": "abc-crawler",
        "USER_AGENT": "abc-crawler/0.1 (scrapy comparison)",
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "DOWNLOAD_TIMEOUT": timeout,
        "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
        "DOWNLOAD_WARNSIZE": 0,
        "RETRY_ENABLED": False,
        "COOKIES_ENABLED": False,
        "REDIRECT_ENABLED": True,
        "HTTPERROR_ALLOW_ALL": False,
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "DEPTH_LIMIT": 0,
        "LOG_LEVEL": "INFO",
        "LOGSTATS_INTERVAL": 30,
        "TELNETCONSOLE_ENABLED": False,
        "DNSCACHE_ENABLED": False,
        "URLLENGTH_LIMIT": 100000,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seeds")
    ap.add_argument("--resolve", required=True)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--stats-out")
    ap.add_argument("--max-seconds", type=float, default=1800.0, help="SIGALRM ends the crawl after this")
    a = ap.parse_args(argv)
    from scrapy.crawler import CrawlerProcess

    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(SystemExit(124)))
    signal.alarm(int(a.max_seconds))
    proc = CrawlerProcess(settings(a.resolve, a.concurrency, a.delay, a.timeout), install_root_handler=True)
    crawler = proc.create_crawler(CompareSpider)
    t0 = time.monotonic()
    proc.crawl(crawler, seeds=a.seeds, resolve=a.resolve)
    proc.start()
    wall = time.monotonic() - t0
    stats = dict(crawler.stats.get_stats())
    ru = resource.getrusage(resource.RUSAGE_SELF)
    responses = stats.get("downloader/response_count", 0)
    robots = stats.get("robotstxt/response_count", 0)
    out = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in stats.items()}
    out.update({"pages": responses - robots, "responses": responses, "robots": robots, "crawl_wall_s": wall,
                "cpu_s": ru.ru_utime + ru.ru_stime, "max_rss_kb": ru.ru_maxrss,
                "links_followed": crawler.spider.links_followed if crawler.spider else None,
                "links_out_of_scope": crawler.spider.links_out_of_scope if crawler.spider else None})
    if a.stats_out:
        with open(a.stats_out, "w") as fh:
            json.dump(out, fh, indent=1, default=str)
    print(f"scrapy: {out['pages']} pages (+{robots} robots.txt) in {wall:.1f} s, "
          f"{out['cpu_s']:.1f} CPU-s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
