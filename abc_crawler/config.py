"""Crawl settings: every default in one place, one frozen validated object.

Settings come from an optional TOML file (``--config FILE``; keys are the
long flag names, with ``-`` or ``_``) and from command-line flags, which win.
An unknown key is an error that names it. Components receive the
:class:`CrawlConfig` explicitly; nothing reads settings from globals.

Under MPI only rank 0 builds the config (:func:`abc_crawler.run.run_crawl`):
the ranks may run on hosts that share no file system, so the
TOML file and every path a setting names are opened on rank 0's host alone,
and the validated config is broadcast.

Examples
--------
>>> cfg = CrawlConfig.build({"seeds": "seeds.txt", "max_pages": 10, "contact": "https://example.org/bot"})
>>> cfg.max_pages, cfg.superstep_pages, cfg.user_agent
(10, 256, 'abc-crawler/0.1.0 (+https://example.org/bot)')
>>> CrawlConfig.build({"seeds": "s", "superstep_pages": 0})
Traceback (most recent call last):
...
abc_crawler.exceptions.ConfigError: superstep-pages: must be >= 1, got 0
"""
from __future__ import annotations

import os
import re

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .exceptions import ConfigError
from .web.ownership import N_BUCKETS
from .units import format_duration, format_size, parse_duration, parse_size

__all__ = ["CrawlConfig", "SETTINGS", "Setting", "read_config_file", "clock_skew", "robots_token_of", "config_paths",
           "phase_seconds_of", "contact_kind", "user_agent_has_contact", "default_user_agent", "from_header", "GROUPS",
           "HIDDEN", "SIZES", "DURATIONS", "group_of", "shown_default", "accept_types_of"]


@dataclass(frozen=True)
class Setting:
    name: str
    type: type
    default: Any
    help: str
    minimum: float | None = None
    choices: tuple | None = None
    maximum: float | None = None


# The one table of defaults. Order is the order of the CLI reference.
#: set to 1 in the environment of a crawl, turns the test hook ``--test-rank-header`` on unless the
#: command line says otherwise (the test suite sets it, so that the README's and ``make demo``'s
#: commands, run verbatim, still let the test web's access log tell the ranks apart)
TEST_RANK_HEADER_ENV = "ABC_TEST_RANK_HEADER"

SETTINGS: tuple[Setting, ...] = (
    Setting("session_dir", str, None, "session directory to write (default sessions/<UTC timestamp>)"),
    Setting("resolve", str, None, "curl-style resolve file, lines HOST:PORT:ADDR; when given, only these hosts are ever contacted"),
    Setting("allowed_domains", str, None, "D[,D...]: only hosts equal to one of these domains or under it are in scope (IDNA-normalized)"),
    Setting("url_filter", str, None, "file of +REGEX / -REGEX lines (# comments): the first regex found in a URL decides, no match rejects (Nutch's regex URL filter); applied after --reject-regex and --accept-regex"),
    Setting("accept_regex", str, None, "REGEX: only URLs in which it is found (re.search) are in scope (wget's --accept-regex); checked after --reject-regex, before --url-filter"),
    Setting("reject_regex", str, None, "REGEX: URLs in which it is found are out of scope (wget's --reject-regex); checked first"),
    Setting("page_requisites", bool, True, "fetch each page's requisites — stylesheets, images, scripts, frames, icons, fonts, CSS url() and @import, embeds (wget's --page-requisites) — even one hop past --max-depth, so that archived pages replay whole"),
    Setting("requisites_any_host", bool, False, "fetch requisites from hosts outside --allowed-domains, --accept-regex/--reject-regex and --url-filter too (e.g. a site's CDN; Heritrix's transclusion rule); the resolve list, the address rule, robots.txt and politeness still apply"),
    Setting("accept_types", str, None, "MIME-TYPE-PREFIX[,...]: only answers of these types are stored whole (e.g. text/html,text/css,image/); the body of another type is cut after its headers, recorded as such and counted (default: every type)"),
    Setting("max_depth", int, None, "follow links at most this many hops from a seed (redirects do not count; sitemap URLs start at 0)", 0),
    Setting("allow_private_addresses", bool, False, "allow connections to loopback, private, link-local and other non-public addresses (an intranet crawl); without --resolve they are refused"),
    Setting("max_pages", int, None, "stop once this many URLs have been requested in all (the crawl never exceeds it)", 1),
    Setting("time_limit", float, None, "stop after this many seconds of crawling", 0.0),
    Setting("assign", str, "hash", "page-to-rank assignment: hash, site-hash, or a part vector (partvec.npz, or a session directory holding one)"),
    Setting("remap", bool, False, "accept a part vector made for another number of ranks by remapping its parts"),
    Setting("assign_buckets", int, N_BUCKETS, "logical buckets of the two-stage hash mapping (WebGather)", 1),
    Setting("concurrency", int, 32, "requests in flight at once per rank (each to another host)", 1),
    Setting("superstep_pages", int, 256, "R: responses a rank processes per superstep before it exchanges", 1),
    Setting("superstep_seconds", float, 0.5, "longest superstep in seconds before a rank exchanges", 0.001),
    Setting("batch_urls", int, 16, "L: URLs per Bucket element, fetched over one connection", 1),
    Setting("bucket_columns", int, 199, "Bucket columns (a prime not equal to the number of phases)", 1),
    Setting("bucket_rows", int, 8, "Bucket rows (elements per column)", 1),
    Setting("window", int, 250_000, "URLStates sliding-window size (entries scanned per pass)", 1),
    Setting("bucket_flush_seconds", float, 0.05, "an element waiting this long is fetched with fewer than L URLs", 0.0),
    Setting("politeness_delay", float, 1.0, "least seconds between two requests to one host, from the end of one to the start of the next, whichever ranks send them (robots.txt Crawl-delay and --delay-factor raise it)", 0.0),
    Setting("delay_factor", float, 2.0, "after a response that took t seconds its host rests max(politeness delay, Crawl-delay, F x t), the adaptive part capped at --max-delay (Heritrix's delayFactor)", 0.0),
    Setting("max_delay", float, 30.0, "cap, in seconds, on the adaptive rest delay-factor x response time", 0.0),
    Setting("max_crawl_delay", float, 30.0, "a host whose robots.txt asks a longer Crawl-delay (seconds) is skipped, its URLs counted as crawl_delay_too_long", 0.0),
    Setting("ip_politeness_delay", float, 0.25, "least seconds between two requests to one IP address, over all the hosts that share it and all ranks (with --resolve, names on one address share it)", 0.0),
    Setting("active_hosts", int, 512, "hosts a rank fetches from at once (each paced by its politeness rest); --concurrency bounds the requests in flight", 1),
    Setting("timeout", float, 10.0, "seconds per request (transfer included)", 0.1),
    Setting("connect_timeout", float, 5.0, "seconds to connect", 0.1),
    Setting("proxy", str, None, "forward proxy for every request: an http://, https:// or socks5h:// URL, or 'env' for the http_proxy, https_proxy, all_proxy and no_proxy variables (default: none)"),
    Setting("ca_bundle", str, None, "PEM file of the certificate authorities TLS certificates are verified against (default: the system's bundle)"),
    Setting("max_body_bytes", int, 10 * 1024 * 1024, "largest body kept, or per type: TYPE-PREFIX=SIZE[,...] with a bare SIZE for the other types (e.g. text/html=5M,image/=2M,20M; the longest matching prefix wins); larger responses are aborted and counted as body_too_large", 1),
    Setting("max_inflated_bytes", int, 10 * 1024 * 1024, "largest body after Content-Encoding is decoded (gzip/deflate bombs)", 1),
    Setting("max_url_length", int, 2048, "longer URLs are dropped as traps", 16),
    Setting("max_links_per_page", int, 10_000, "links taken from one page (the rest are counted and dropped)", 1),
    Setting("max_path_depth", int, 32, "URLs with more path segments are dropped as traps", 1),
    Setting("max_segment_repeats", int, 3, "URLs repeating one path segment more often are dropped as traps", 1),
    Setting("max_pages_per_host", int, 100_000, "URLs of one host admitted in all ranks together, whatever the assignment (a host over it gets exactly the limit)", 1),
    Setting("max_redirects", int, 10, "longest redirect chain followed from one URL", 0),
    Setting("max_retries", int, 2, "retries of a URL after a timeout, reset or 429/503", 0, maximum=255),
    Setting("retry_backoff_seconds", float, 1.0, "first back-off of a host after a retryable failure (doubles; Retry-After wins, capped at 60 s)", 0.0),
    Setting("host_max_failures", int, 8, "consecutive transport failures after which a host is given up", 1),
    Setting("user_agent", str, None, "User-Agent header (default abc-crawler/VERSION (+CONTACT)); robots.txt rules are matched on its product token"),
    Setting("robots_token", str, None, "product token robots.txt groups are matched on (default: NAME of a '(compatible; NAME/...)' comment of the user agent, else its first product's name)"),
    Setting("contact", str, None, "who runs the crawl, for site operators: a URL (http/https) or an e-mail address, put in the default User-Agent as (+CONTACT) and, an e-mail, sent as the From header; required without --resolve unless --user-agent carries one"),
    Setting("robots", bool, True, "obey robots.txt (RFC 9309)"),
    Setting("sitemaps", bool, True, "read the Sitemap lines of robots.txt files and /sitemap.xml of every seed host; their URLs enter the frontier like seeds (not links)"),
    Setting("robots_retry_seconds", float, 5.0, "first back-off after a robots.txt 5xx/timeout (doubles, 3 tries, then the host is given up)", 0.0),
    Setting("phases", str, "auto", "KSpider phase swapping: on, off, or auto (on for page-level assignment with more than one rank, off for site-level); hosts a part vector keeps on one rank are never gated",
            choices=("auto", "on", "off")),
    Setting("slot_handover", bool, True, "a rank that holds a host's phase slot but has nothing queued for it hands the slot to a rank that announced work for the host"),
    Setting("n_phases", int, 0, "number of phases (0: the number of ranks); must be >= the number of ranks", 0),
    Setting("max_slot_cuts", int, 3, "a request cut at the end of its phase slot this many times in a row fails as slot_too_short (it cannot fit in a slot)", 1, maximum=255),
    Setting("phase_seconds", float, 0.0, "length of a phase time slot (0: auto, long enough for the longest rest a host can owe plus a request, so that a holder always gets a request in: 37.51 s at the defaults)", 0.0),
    Setting("phase_warmup", int, 3, "fast rotation while the frontier fills: the first n-phases slots last phase-seconds/2^W, the next n-phases twice that, ..., then phase-seconds; each rank serves each phase once per length, and a cut in a warm-up slot does not count towards max-slot-cuts; no slot shorter than 50 ms or four guards (0: off)", 0),
    Setting("phase_guard", float, 0.005, "least unused seconds at both ends of a slot; the guard grows to each rank's measured clock error bound (RTT/2 + drift) when that is larger; requests are cut at the slot end", 0.0),
    Setting("clock_refresh_seconds", float, 30.0, "seconds between NTP-style clock re-synchronizations", 0.1),
    Setting("stall_seconds", float, 60.0, "stall watchdog: a crawl with queued work that sends no request for this long plus twice the longest rest or back-off in force says so (progress line, stats.json, dashboard); after three times that it stops with status 3 and stopped: stalled", 1.0),
    Setting("test_stall", float, None, "test hook: after this many seconds of crawling no rank starts a request any more (its work stays queued), to check the stall watchdog", 0.0),
    Setting("test_clock_skew", str, None, "test hook RANK:SECONDS[,RANK:SECONDS...]: shift these ranks' clocks to check clock alignment"),
    Setting("test_rank_header", bool, False, "test hook: send an X-ABC-Rank header with every request (the test web's access log attributes requests to ranks by it)"),
    Setting("test_crash", str, None, "test hook RANK:SUPERSTEP (raise in that rank's crawl loop) or kernels:SUPERSTEP (fail rank 0's kernel thread) to check crash records and resume"),
    Setting("checkpoint_seconds", float, 10.0, "seconds between checkpoints (0: none); abc-crawl --resume SESSION continues from the newest", 0.0),
    Setting("stats", bool, True, "run the live graph-statistics kernels on rank 0"),
    Setting("stats_max_pages", int, 20_000, "exact distances and SCCs (APSD/SCC, O(n^2) memory) cover the first N pages; SCCs and estimated distances of the whole graph cover every page", 1),
    Setting("stats_edges", str, "pages", "the graph the statistics cover: pages (navigation, redirect and refresh links between HTML pages, the graph Türk's and SPAWC's models are about) or all (embeds too)",
            choices=("pages", "all")),
    Setting("stats_distance_error", float, 0.1, "target relative standard error of one HyperBall counter (whole-graph distance estimates): 2^b registers per node, b = ceil(log2((1.04/e)^2)) in 4..12", 0.02),
    Setting("progress_seconds", float, 2.0, "seconds between progress lines when output is not a terminal", 0.1),
    Setting("log_level", str, "info", "messages at this level and above go to each rank's log file SESSION/logs/rank-NNNNN.log: debug, info, warning or error; errors also go to stderr, and the summary counts the warnings",
            choices=("debug", "info", "warning", "error")),
    Setting("dashboard", str, None, "ADDR:PORT: rank 0 serves a live status page there (GET /, /status.json, /metrics for Prometheus; POST /stop with the printed token); 127.0.0.1:0 picks a free port; a non-loopback address exposes it to the network"),
    Setting("warc", bool, True, "write per-rank WARC files"),
    Setting("gather_warc", bool, False, "at the end, stream every rank's finished WARC files to rank 0's session directory over MPI (verified against their SHA-256), for ranks on hosts without a shared file system"),
    Setting("warc_outlinks", bool, True, "after each stored answer that links somewhere, a WARC metadata record (application/warc-fields, WARC-Concurrent-To the answer's record) lists the links followed, one 'outlink: URL HOP' line each, HOP the crawl log's and Heritrix's hop code: L navigation, E embed (a requisite), R redirect or refresh"),
    Setting("warc_max_bytes", int, 1_000_000_000, "a rank's WARC file is closed (and its CDXJ index written) once it holds this many bytes; the next one continues", 1),
    Setting("previous", str, None, "a session directory of an earlier crawl: its URLs are asked with If-None-Match/If-Modified-Since, a 304 is stored as a revisit and keeps the page's links; URLs it knew but did not fetch become seeds"),
    Setting("memory_budget", int, None, "bytes a rank's URL-seen set and frontier may hold in memory before they spill to disk under SESSION/spill (sorted fingerprint runs checked in bulk; each host's later URLs in order); takes units (512M, 2G); default: half the machine's memory shared by the ranks on it", 64 << 10),
    Setting("warc_batch", int, 64, "pages whose WARC records are serialized and compressed together (1: each page as it arrives); a batch also ends at 1 MiB of bodies and before every checkpoint", 1),
)

_BY_NAME = {s.name: s for s in SETTINGS}

#: ``abc-crawl --help`` in groups by concern, in this order; every setting is in exactly one
#: (tests/test_cli_units.py checks it). The test hooks (:data:`HIDDEN`) are accepted but not shown.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("input and output", ("session_dir", "checkpoint_seconds", "warc", "warc_outlinks", "warc_max_bytes", "warc_batch", "gather_warc",
                          "previous")),
    ("scope", ("resolve", "allowed_domains", "accept_regex", "reject_regex", "url_filter", "max_depth",
               "page_requisites", "requisites_any_host", "allow_private_addresses", "sitemaps")),
    ("HTTP", ("contact", "user_agent", "proxy", "ca_bundle", "timeout", "connect_timeout", "max_redirects", "max_retries",
              "retry_backoff_seconds", "concurrency")),
    ("politeness", ("politeness_delay", "delay_factor", "max_delay", "max_crawl_delay", "ip_politeness_delay",
                    "active_hosts", "robots", "robots_token", "robots_retry_seconds", "host_max_failures")),
    ("limits", ("max_pages", "time_limit", "max_pages_per_host", "accept_types", "max_body_bytes", "max_inflated_bytes",
                "max_url_length", "max_links_per_page", "max_path_depth", "max_segment_repeats", "stall_seconds", "memory_budget")),
    ("assignment and phases", ("assign", "remap", "assign_buckets", "phases", "n_phases", "phase_seconds",
                               "phase_warmup", "phase_guard", "slot_handover", "max_slot_cuts",
                               "clock_refresh_seconds")),
    ("supersteps and the frontier (tuning)", ("superstep_pages", "superstep_seconds", "batch_urls", "bucket_columns",
                                              "bucket_rows", "window", "bucket_flush_seconds")),
    ("statistics", ("stats", "stats_edges", "stats_max_pages", "stats_distance_error")),
    ("dashboard and logs", ("dashboard", "progress_seconds", "log_level")),
)
#: test hooks: accepted by the command line and the config file, not listed by --help
HIDDEN: tuple[str, ...] = ("test_stall", "test_clock_skew", "test_rank_header", "test_crash")
#: byte counts that take units (``10M``, ``1G``: :func:`abc_crawler.units.parse_size`)
SIZES = frozenset({"max_body_bytes", "max_inflated_bytes", "warc_max_bytes", "memory_budget"})
#: seconds that take units (``90s``, ``2h``: :func:`abc_crawler.units.parse_duration`)
DURATIONS = frozenset(s.name for s in SETTINGS if s.type is float) - {"delay_factor", "stats_distance_error"}


def group_of(name: str) -> str | None:
    """The --help group of a setting (None: a hidden test hook)."""
    for title, names in GROUPS:
        if name in names:
            return title
    return None


def shown_default(s: Setting) -> str:
    """A setting's default as --help shows it (sizes and durations with units)."""
    if s.name in SIZES:
        return format_size(s.default)
    if s.name in DURATIONS and s.default is not None:
        return format_duration(s.default)
    return str(s.default)


def _coerce(s: Setting, value: Any) -> Any:
    flag = s.name.replace("_", "-")
    if value is None:
        return None
    try:
        if s.type is bool:
            if isinstance(value, str):
                low = value.lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if s.type is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        if s.type in (int, float) and isinstance(value, bool):
            raise ValueError(value)
        if s.name == "max_body_bytes" and isinstance(value, (list, tuple)):   # a saved config (manifest)
            value = ",".join(f"{p}={n}" if p else str(n) for p, n in value)
        if s.name == "max_body_bytes" and isinstance(value, str) and "=" in value:
            return body_caps_value(value)
        if s.name in SIZES:
            v = parse_size(value)
        elif s.name in DURATIONS:
            v = parse_duration(value)
        else:
            v = s.type(value)
    except (TypeError, ValueError):
        what = ("bytes, or a number with K, M, G, T (1,024s) or kB, MB, GB (1,000s)" if s.name in SIZES else
                "seconds, or a number with ms, s, m, h or d" if s.name in DURATIONS else s.type.__name__)
        raise ConfigError(f"{flag}: expected {what}, got {value!r}") from None
    if s.minimum is not None and v < s.minimum:
        raise ConfigError(f"{flag}: must be >= {s.minimum:g}, got {v!r}")
    if s.maximum is not None and v > s.maximum:
        raise ConfigError(f"{flag}: must be <= {s.maximum:g}, got {v!r}")
    if s.choices is not None and v not in s.choices:
        raise ConfigError(f"{flag}: must be one of {', '.join(s.choices)}, got {v!r}")
    return v


def read_config_file(path: str) -> dict[str, Any]:
    """The settings of a TOML file, keys as setting names (``max-pages`` -> ``max_pages``), coerced.

    ``seeds`` is returned as it is. Errors name the file and the key.
    """
    import tomllib          # here, not at the top: only a crawl given a config file reads TOML (8 ms)

    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: config file is a directory") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name == "seeds":
            out["seeds"] = value
            continue
        if name not in _BY_NAME:
            raise ConfigError(f"{path}: unknown setting {key!r}")
        out[name] = _coerce(_BY_NAME[name], value)
    return out


def clock_skew(spec: str | None, rank: int) -> float:
    """Seconds by which ``--test-clock-skew`` shifts ``rank``'s clock (0.0 when it is not named).

    ``spec`` is ``RANK:SECONDS`` or a comma-separated list of them (all the
    ranks of one host, to simulate that host's clock being off).

    >>> clock_skew("2:0.25,3:0.25", 3), clock_skew("2:0.25", 1), clock_skew(None, 0)
    (0.25, 0.0, 0.0)
    >>> clock_skew("two:1", 0)
    Traceback (most recent call last):
    ...
    abc_crawler.exceptions.ConfigError: test-clock-skew: expected RANK:SECONDS[,RANK:SECONDS...], got 'two:1'
    """
    if not spec:
        return 0.0
    skews: dict[int, float] = {}
    for item in spec.split(","):
        r, sep, sec = item.strip().partition(":")
        try:
            if not sep or int(r) < 0:
                raise ValueError(item)
            skews[int(r)] = float(sec)
        except ValueError:
            raise ConfigError(f"test-clock-skew: expected RANK:SECONDS[,RANK:SECONDS...], got {spec!r}") from None
    return skews.get(rank, 0.0)


_EMAIL = re.compile(r"^[^@\s<>()]+@[^@\s<>()]+\.[^@\s<>()]+$")
_CONTACT_IN_UA = re.compile(r"\+https?://\S+|[^@\s<>()+;]+@[^@\s<>();]+\.[A-Za-z]{2,}")


def contact_kind(contact: str | None) -> str | None:
    """``"url"``, ``"email"`` or None (not a usable contact).

    >>> contact_kind("https://example.org/crawler"), contact_kind("ops@example.org"), contact_kind("me")
    ('url', 'email', None)
    """
    if not contact or any(ord(c) < 32 or ord(c) == 127 for c in contact):
        return None
    if re.match(r"^https?://[^\s/]+\.[^\s]*$", contact, re.I):
        return "url"
    if _EMAIL.match(contact):
        return "email"
    return None


def user_agent_has_contact(ua: str) -> bool:
    """A User-Agent that says whom to contact: a ``+http…`` URL (Heritrix's rule) or an e-mail.

    >>> user_agent_has_contact("Mozilla/5.0 (compatible; MyBot/1.0; +https://bot.example/about)")
    True
    >>> user_agent_has_contact("abc-crawler/0.1"), user_agent_has_contact("bot/1 (ops@example.org)")
    (False, True)
    """
    return bool(_CONTACT_IN_UA.search(ua))


def default_user_agent(contact: str | None) -> str:
    """``abc-crawler/VERSION (+CONTACT)`` (without a contact, ``abc-crawler/VERSION``)."""
    from . import __version__

    return f"abc-crawler/{__version__}" + (f" (+{contact})" if contact else "")


def _check_real_web(v: dict) -> None:
    """The settings of real-web crawling that can be checked without reading a file or the environment."""
    from .net.proxies import check_proxy_url
    from .net.robots import check_token, robots_token
    from .web.scope import parse_domains

    contact = v["contact"]
    if contact is not None and contact_kind(contact) is None:
        raise ConfigError(f"contact: expected a URL (http:// or https://) or an e-mail address, got {contact!r}")
    if v["user_agent"] is None:
        v["user_agent"] = default_user_agent(contact)
    parse_domains(v["allowed_domains"])
    if v["robots_token"] is not None:
        try:
            check_token(v["robots_token"])
        except ValueError as exc:
            raise ConfigError(f"robots-token: {exc}") from None
    else:
        try:
            robots_token(v["user_agent"])
        except ValueError as exc:
            raise ConfigError(f"user-agent: {exc}") from None
    ua = v["user_agent"]
    if not ua.strip() or any(ord(c) < 32 or ord(c) == 127 for c in ua):
        raise ConfigError(f"user-agent: must be printable text on one line, got {ua!r}")
    proxy = v["proxy"]
    if proxy is not None and proxy.strip().lower() not in ("env", "none", ""):
        check_proxy_url(proxy)
    if v["resolve"] is None and contact is None and not user_agent_has_contact(ua):
        raise ConfigError(
            "contact: a crawl that may reach public addresses (no --resolve) must say who runs it, for the "
            "operators of the sites it visits: give --contact URL-or-EMAIL (put in the User-Agent, and sent as "
            f"From when an e-mail), or a --user-agent that carries one (+https://... or an e-mail); got User-Agent "
            f"{ua!r} and no --contact")


def from_header(cfg) -> str | None:
    """The ``From`` header every request sends: ``--contact`` when it is an e-mail address."""
    return cfg.contact if contact_kind(cfg.contact) == "email" else None


def config_paths(toml_path: str | list[str] | None) -> list[str]:
    """``--config`` given once, several times (a list), or not at all."""
    if toml_path is None:
        return []
    return [toml_path] if isinstance(toml_path, str) else list(toml_path)


def phase_seconds_of(v) -> float:
    """The phase-slot length in force: ``--phase-seconds``, or for 0 (auto) the shortest slot that
    holds the longest rest a host may owe plus a request
    (:func:`abc_crawler.sched.politeness.slot_seconds_needed`), at least 1 s.

    >>> phase_seconds_of({"phase_seconds": 0.0, "politeness_delay": 1.0, "delay_factor": 2.0, "max_delay": 30.0,
    ...                   "max_crawl_delay": 30.0, "ip_politeness_delay": 0.25, "phase_guard": 0.005})
    37.51
    """
    from .sched.politeness import longest_rest, slot_seconds_needed

    get = v.__getitem__ if isinstance(v, dict) else v.__getattribute__
    if get("phase_seconds") > 0:
        return get("phase_seconds")
    rest = max(longest_rest(get("politeness_delay"), get("max_crawl_delay"), get("delay_factor"), get("max_delay")),
               get("ip_politeness_delay"))
    return max(1.0, slot_seconds_needed(rest, get("phase_guard")))


def _check_politeness(v: dict) -> None:
    """The rests and the phase slots that must hold them (a slot shorter than a host's rest would
    never let its holder send a request: the crawl would stall)."""
    from .sched.politeness import MIN_REQUEST_SECONDS, longest_rest

    L = v["phase_seconds"]
    if L == 0:
        return
    if L < 0.05:
        raise ConfigError(f"phase-seconds: must be 0 (auto) or >= 0.05, got {L:g}")
    rest = max(longest_rest(v["politeness_delay"], v["max_crawl_delay"], v["delay_factor"], v["max_delay"]),
               v["ip_politeness_delay"])
    need = rest + 2 * v["phase_guard"] + MIN_REQUEST_SECONDS
    if L < need:
        raise ConfigError(
            f"phase-seconds: {L:g} s slots cannot hold the longest rest a host may owe ({rest:g} s: the largest of "
            f"--politeness-delay, --max-crawl-delay, --ip-politeness-delay and, with --delay-factor > 0, --max-delay) "
            f"plus a request, so such a host would never be fetched: give at least {need:.3g}, or 0 (auto), "
            "or lower those settings")


#: a MIME type or type prefix as --accept-types and --max-body-bytes take it (``text/html``, ``image/``)
MIME_PREFIX = re.compile(r"[a-z0-9!#$&^_.+-]+(/[a-z0-9!#$&^_.+-]*)?")
#: the cap of --max-body-bytes for the types it names none for, when it names only typed caps
DEFAULT_BODY_CAP = 10 * 1024 * 1024


def body_caps_value(text: str) -> tuple[tuple[str, int], ...]:
    """``--max-body-bytes`` with caps per type: ``((prefix, bytes), ...)``, the bare size (for the
    other types) as prefix ``""``; errors name the flag and the entry.

    >>> body_caps_value("text/html=5M, image/=2M,20M")
    (('text/html', 5242880), ('image/', 2097152), ('', 20971520))
    >>> body_caps_value("image/=64K")
    (('image/', 65536), ('', 10485760))
    """
    out: dict[str, int] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        prefix, eq, size = entry.rpartition("=")
        prefix = prefix.strip().lower()
        if eq and not MIME_PREFIX.fullmatch(prefix):
            raise ConfigError(f"max-body-bytes: {prefix!r} is no MIME type or type prefix (e.g. text/html, image/), "
                              f"in {text!r}")
        try:
            n = parse_size(size.strip())
        except ValueError:
            raise ConfigError(f"max-body-bytes: expected bytes, or a number with K, M, G, T (1,024s) or kB, MB, GB "
                              f"(1,000s), got {size.strip()!r} in {text!r}") from None
        if n < 1:
            raise ConfigError(f"max-body-bytes: must be >= 1, got {n} for {entry!r}")
        if prefix in out:
            raise ConfigError(f"max-body-bytes: {prefix or 'the bare size'!r} given twice in {text!r}")
        out[prefix] = n
    out.setdefault("", DEFAULT_BODY_CAP)
    return tuple(sorted(out.items(), key=lambda kv: kv[0] == ""))


def body_caps_of(value) -> tuple[int, tuple[tuple[str, int], ...]]:
    """``(cap for other types, ((prefix, cap), ...))`` of a ``--max-body-bytes`` value (one size: no
    typed caps).

    >>> body_caps_of(1000), body_caps_of((("image/", 10), ("", 99)))
    ((1000, ()), (99, (('image/', 10),)))
    """
    if isinstance(value, int):
        return value, ()
    d = dict(value)
    return d.pop(""), tuple(d.items())


def accept_types_of(value: str | None) -> tuple[str, ...]:
    """``--accept-types``: the MIME-type prefixes, lower case (empty: every type is kept).

    >>> accept_types_of("text/html, Image/ ,text/css"), accept_types_of(None)
    (('text/html', 'image/', 'text/css'), ())
    """
    if value is None:
        return ()
    out = tuple(p.strip().lower() for p in value.split(",") if p.strip())
    for p in out:
        if not MIME_PREFIX.fullmatch(p):
            raise ConfigError(f"accept-types: {p!r} is no MIME type or type prefix (e.g. text/html, image/), in {value!r}")
    if not out:
        raise ConfigError(f"accept-types: expected MIME-TYPE-PREFIX[,...], got {value!r}")
    return out


def robots_token_of(cfg) -> str:
    """The product token robots.txt groups are matched on: ``--robots-token`` or the one of ``--user-agent``."""
    from .net.robots import robots_token

    return cfg.robots_token or robots_token(cfg.user_agent)


@dataclass(frozen=True)
class CrawlConfig:
    """All settings of one crawl; build it with :meth:`build`."""

    seeds: str
    values: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # settings become plain attributes: the crawl loop reads them often
        for k, v in self.values.items():
            object.__setattr__(self, k, v)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "values")
        if name in values:
            return values[name]
        raise AttributeError(name)

    @classmethod
    def build(cls, cli: dict[str, Any], toml_path: str | list[str] | None = None, *,
              resumed: bool = False) -> "CrawlConfig":
        """Merge defaults, the TOML file(s) (in order: a later file wins) and CLI values (None = not
        given); validate. ``resumed``: the settings of a session being resumed (a check added since
        it began does not refuse it: ``--bucket-columns`` a prime)."""
        merged: dict[str, Any] = {s.name: s.default for s in SETTINGS}
        seeds = cli.get("seeds")
        for path in config_paths(toml_path):
            from_file = read_config_file(path)
            file_seeds = from_file.pop("seeds", None)
            seeds = seeds or file_seeds
            merged.update(from_file)
        for key, value in cli.items():
            if key == "seeds" or value is None:
                continue
            if key not in _BY_NAME:
                raise ConfigError(f"unknown setting {key!r}")
            merged[key] = _coerce(_BY_NAME[key], value)
        if os.environ.get(TEST_RANK_HEADER_ENV) == "1" and cli.get("test_rank_header") is None:
            merged["test_rank_header"] = True    # the test suite's switch, for commands it runs verbatim
        for s in SETTINGS:
            merged[s.name] = _coerce(s, merged[s.name])
        if not seeds:
            raise ConfigError("no seeds file given (positional SEEDS or 'seeds' in the config file)")
        assign = merged["assign"]
        if assign not in ("hash", "site-hash") and not Path(assign).exists():
            raise ConfigError(f"assign: expected hash, site-hash or an existing part-vector path, got {assign!r}")
        clock_skew(merged["test_clock_skew"], 0)
        for name in ("accept_regex", "reject_regex"):
            if merged[name] is not None:
                try:
                    re.compile(merged[name])
                except re.error as exc:
                    raise ConfigError(f"{name.replace('_', '-')}: bad regular expression {merged[name]!r}: {exc}") from None
        if merged["dashboard"] is not None:      # issue 24: ADDR:PORT checked once, here
            from .dashboard.server import parse_address

            try:
                parse_address(merged["dashboard"])
            except ValueError as exc:
                raise ConfigError(f"dashboard: {exc}") from None
        _check_real_web(merged)
        _check_politeness(merged)
        n = merged["bucket_columns"]
        if not resumed and (n < 2 or any(n % k == 0 for k in range(2, int(n ** 0.5) + 1))):
            raise ConfigError(f"bucket-columns: must be a prime (hosts hash to the Bucket's columns), got {n}")
        accept_types_of(merged["accept_types"])
        prev = merged["previous"]
        if prev is not None and not Path(prev).is_dir():
            raise ConfigError(f"previous: expected the directory of an earlier session, got {prev!r}")
        return cls(seeds=str(seeds), values=merged)

    def as_dict(self) -> dict[str, Any]:
        return {"seeds": self.seeds, **self.values}

    def replace(self, **changes: Any) -> "CrawlConfig":
        values = dict(self.values)
        for k, v in changes.items():
            if k not in _BY_NAME:
                raise ConfigError(f"unknown setting {k!r}")
            values[k] = _coerce(_BY_NAME[k], v)
        return dataclasses.replace(self, values=values)
