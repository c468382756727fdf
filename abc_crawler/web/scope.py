"""Scope: which hosts may be contacted at all, which URLs a crawl wants, and the seeds file.

Scope is a safety rule, not an option: with a resolve list, the crawler fetches
only the hosts in it; every other link is counted as out of scope and is never
resolved or connected to. Only ``http`` and ``https`` are ever fetched.

The user's scope rules (:class:`ScopeRules`) narrow it further, with or
without a resolve list: ``--allowed-domains`` (a host equal to one of the
domains or under it), ``--url-filter`` (Nutch's regex URL filter: ``+REGEX`` /
``-REGEX`` lines, the first match wins, no match rejects) and ``--max-depth``
(link hops from a seed; applied where a page's links are followed, see
:mod:`abc_crawler.crawl.fetching`). A URL they reject is counted by reason and never
resolved: ``out_of_scope_domain``, ``out_of_scope_filter``,
``out_of_scope_depth``.

Examples
--------
A resolve line names one endpoint, ``HOST:PORT``; a URL is in scope when the
endpoint curl would connect to — its host and its port, explicit or the
scheme's default — is listed. ``b.test:80`` therefore admits
``http://b.test/`` but not ``https://b.test/`` (port 443): curl would have to
resolve ``b.test:443`` with the system resolver.

>>> s = Scope.from_lines(["a.test:8080:127.0.0.1", "# comment", "b.test:80:127.0.0.2"])
>>> [s.allows_url(u) for u in ("http://a.test:8080/", "http://b.test/x", "https://b.test/x", "http://c.test/")]
[True, True, False, False]
>>> s.curl_resolve
['a.test:8080:127.0.0.1', 'b.test:80:127.0.0.2']
"""
from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field

from ..exceptions import ConfigError, ResolveError, SeedError, UrlFilterError
from .urls import UrlError, canonicalize, host_of, scheme_of

__all__ = ["Scope", "ScopeRules", "UrlFilter", "normalize_domain", "parse_domains", "hostname_of",
           "read_seeds", "SeedProblem", "endpoint_of", "url_endpoint"]


@dataclass(frozen=True)
class Scope:
    """Endpoints in scope (``host:port``, port always explicit) and curl's RESOLVE list.

    ``endpoints is None`` means no resolve list: every http(s) URL is in scope.
    ``hosts`` holds the same names as canonical URLs write them (default ports
    dropped), for display.
    """

    endpoints: frozenset[str] | None = None
    curl_resolve: list[str] = field(default_factory=list)
    hosts: frozenset[str] | None = None
    # origin ("scheme://host[:port]") -> in scope; the answer depends on the origin alone
    _origins: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_lines(cls, lines, source: str = "<resolve>") -> "Scope":
        hosts: set[str] = set()
        endpoints: set[str] = set()
        entries: list[str] = []
        for lineno, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(":", 2)           # a host name holds no colon; an IPv6 ADDR does
            if len(parts) != 3:
                raise ResolveError(f"{source}:{lineno}: expected HOST:PORT:ADDR, got {line!r}")
            host, port, addr = parts
            addr = addr.strip("[]")
            if not host or not port.isdigit() or not (0 < int(port) < 65536):
                raise ResolveError(f"{source}:{lineno}: bad host or port in {line!r}")
            try:
                ipaddress.ip_address(addr)
            except ValueError:
                raise ResolveError(f"{source}:{lineno}: {addr!r} is not an IP address") from None
            host = host.lower()
            port_i = int(port)
            hosts.add(host if port_i in (80, 443) else f"{host}:{port_i}")
            endpoints.add(f"{host}:{port_i}")
            entries.append(f"{host}:{port_i}:{f'[{addr}]' if ':' in addr else addr}")
        if not entries:
            raise ResolveError(f"{source}: no HOST:PORT:ADDR line")
        return cls(frozenset(endpoints), entries, frozenset(hosts))

    @classmethod
    def from_file(cls, path: str) -> "Scope":
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except OSError as exc:
            raise ResolveError(f"{path}: cannot read resolve file ({exc.strerror})") from None
        return cls.from_lines(lines, path)

    @property
    def addresses(self) -> list[str]:
        """The IP addresses of the resolve list (the user chose them: the address rule allows them).

        >>> Scope.from_lines(["a.test:80:127.0.0.1", "b.test:80:[::1]"]).addresses
        ['127.0.0.1', '::1']
        """
        return [e.split(":", 2)[2].strip("[]") for e in self.curl_resolve]

    def resolved_ips(self) -> dict[str, str]:
        """Host (as URLs write it: default ports dropped) -> its address in the resolve list (the
        first line of a host wins); empty without a resolve list.

        >>> Scope.from_lines(["a.test:80:127.0.0.1", "a.test:8080:127.0.0.2", "b.test:443:[::1]"]).resolved_ips()
        {'a.test': '127.0.0.1', 'a.test:8080': '127.0.0.2', 'b.test': '::1'}
        """
        out: dict[str, str] = {}
        for e in self.curl_resolve:
            host, port, addr = e.split(":", 2)
            out.setdefault(host if int(port) in (80, 443) else f"{host}:{port}", addr.strip("[]"))
        return out

    def allows_url(self, url: str) -> bool:
        """True when curl may connect for the canonical http(s) ``url``: its endpoint is listed."""
        slash = url.find("/", url.find("://") + 3)
        origin = url if slash < 0 else url[:slash]
        ok = self._origins.get(origin)
        if ok is None:
            ep = url_endpoint(origin)
            ok = ep is not None and (self.endpoints is None or ep in self.endpoints)
            if len(self._origins) >= 65_536:
                self._origins.clear()
            self._origins[origin] = ok
        return ok


def url_endpoint(url: str) -> str | None:
    """``host:port`` curl connects to for a canonical http(s) URL (None for other schemes).

    >>> url_endpoint("https://a.test/x"), url_endpoint("http://a.test:8080/"), url_endpoint("ftp://a.test/")
    ('a.test:443', 'a.test:8080', None)
    """
    if url.startswith("https://"):
        return endpoint_of(host_of(url), 443)
    if url.startswith("http://"):
        return endpoint_of(host_of(url), 80)
    return None


def endpoint_of(host: str, default_port: int) -> str:
    """``host:port`` of a canonical URL's host (``[v6]`` literals keep their brackets).

    >>> endpoint_of("a.test", 443), endpoint_of("a.test:8080", 443), endpoint_of("[::1]", 80)
    ('a.test:443', 'a.test:8080', '[::1]:80')
    """
    if host.rfind(":") > host.rfind("]"):
        return host
    return f"{host}:{default_port}"


def hostname_of(url: str) -> str:
    """The host name of a canonical http(s) URL without port and trailing dot (``[v6]`` kept).

    >>> hostname_of("http://a.test:8080/x"), hostname_of("https://b.test./"), hostname_of("http://[::1]:81/")
    ('a.test', 'b.test', '[::1]')
    """
    host = host_of(url)
    if host.startswith("["):
        return host[: host.find("]") + 1]
    colon = host.rfind(":")
    if colon >= 0:
        host = host[:colon]
    return host[:-1] if host.endswith(".") else host


def normalize_domain(text: str) -> str:
    """A domain of ``--allowed-domains`` as canonical URLs write hosts: lower case, IDNA
    (``xn--``), no leading or trailing dot. Raises ValueError for text that is not a host name.

    >>> normalize_domain("Bücher.Example."), normalize_domain(".example.com"), normalize_domain("10.0.0.1")
    ('xn--bcher-kva.example', 'example.com', '10.0.0.1')
    """
    d = text.strip().strip(".")
    if not d or any(c in d for c in "/:@?#[] \t"):
        raise ValueError(f"not a domain name: {text!r}")
    try:
        url = canonicalize(f"http://{d}/")
    except UrlError:
        raise ValueError(f"not a domain name: {text!r}") from None
    if url is None or url != f"http://{host_of(url)}/":
        raise ValueError(f"not a domain name: {text!r}")
    return hostname_of(url)


def parse_domains(value: str | None) -> tuple[str, ...] | None:
    """``--allowed-domains D[,D...]`` as normalized domains (None: no domain rule).

    >>> parse_domains("Example.COM, .test")
    ('example.com', 'test')
    """
    if value is None:
        return None
    out: list[str] = []
    for part in value.split(","):
        if not part.strip():
            continue
        try:
            d = normalize_domain(part)
        except ValueError as exc:
            raise ConfigError(f"allowed-domains: {exc}") from None
        if d not in out:
            out.append(d)
    if not out:
        raise ConfigError(f"allowed-domains: no domain in {value!r}")
    return tuple(out)


def compile_search(pattern: str) -> re.Pattern:
    r"""``re.compile(pattern)`` for a ``search`` of a canonical URL, a leading ``.*`` (or ``.*?``)
    dropped: the search finds a match exactly when the pattern's does (a URL is one line, and ``.``
    matches anything but a newline), without the ``.*`` trying every length at every start.
    Nutch's stock loop rule ``.*(/[^/]+)/[^/]+\1/[^/]+\1/`` cost 55 ms a 2,048-character URL with
    it and 0.04 ms without.

    >>> compile_search(r".*\.pdf$").pattern, compile_search(r".*?x").pattern, compile_search(r".*+x").pattern
    ('\\.pdf$', 'x', '.*+x')
    """
    while pattern.startswith(".*") and pattern[2:3] not in ("+", "*", "{"):
        pattern = pattern[3:] if pattern[2:3] == "?" else pattern[2:]
    return re.compile(pattern)


def _is_ip_literal(host: str) -> bool:
    if host.startswith("["):
        return True
    try:
        ipaddress.IPv4Address(host)
        return True
    except ValueError:
        return False


@dataclass(frozen=True)
class UrlFilter:
    """Nutch's regex URL filter: ``(accept, pattern)`` rules, the first whose pattern is found in
    the URL (``re.search``) decides; a URL no rule matches is rejected.

    >>> f = UrlFilter.from_lines(["# docs only", r"-\\.pdf$", r"+^https?://a\\.test/docs/"], "f.txt")
    >>> [f.accepts(u) for u in ("http://a.test/docs/x.html", "http://a.test/docs/x.pdf", "http://a.test/")]
    [True, False, False]
    >>> UrlFilter.from_lines(["+ok", "*bad"], "f.txt")
    Traceback (most recent call last):
    ...
    abc_crawler.exceptions.UrlFilterError: f.txt:2: expected +REGEX or -REGEX, got '*bad'
    """

    rules: tuple[tuple[bool, str], ...]
    source: str = "<url-filter>"
    _compiled: tuple = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple((acc, compile_search(p)) for acc, p in self.rules))

    def __getstate__(self):            # sent to every rank: the rules, compiled again there
        return {"rules": self.rules, "source": self.source}

    def __setstate__(self, state) -> None:
        object.__setattr__(self, "rules", state["rules"])
        object.__setattr__(self, "source", state["source"])
        self.__post_init__()

    @classmethod
    def from_lines(cls, lines, source: str = "<url-filter>") -> "UrlFilter":
        rules: list[tuple[bool, str]] = []
        for lineno, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            sign, pattern = line[0], line[1:].strip()
            if sign not in "+-":
                raise UrlFilterError(f"{source}:{lineno}: expected +REGEX or -REGEX, got {line!r}")
            if not pattern:
                raise UrlFilterError(f"{source}:{lineno}: empty regular expression after {sign!r}")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UrlFilterError(f"{source}:{lineno}: bad regular expression {pattern!r}: {exc}") from None
            rules.append((sign == "+", pattern))
        if not rules:
            raise UrlFilterError(f"{source}: no +REGEX or -REGEX line (every URL would be rejected)")
        return cls(tuple(rules), source)

    @classmethod
    def from_file(cls, path: str) -> "UrlFilter":
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            raise UrlFilterError(f"{path}: url filter file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UrlFilterError(f"{path}: cannot read url filter file ({getattr(exc, 'strerror', None) or exc})") from None
        return cls.from_lines(lines, path)

    def accepts(self, url: str) -> bool:
        for accept, rx in self._compiled:
            if rx.search(url):
                return accept
        return False


@dataclass(frozen=True)
class ScopeRules:
    """The user's scope rules; built on rank 0 (the filter file is read there) and sent to all ranks.

    :meth:`reason` is the check of every link before it is fingerprinted or sent to its owner;
    :meth:`host_reason` the host-level part alone (robots.txt redirects, sitemap files);
    ``max_depth`` is applied where a page's links are followed.

    >>> r = ScopeRules(domains=("test",), url_filter=UrlFilter(((False, "/private/"), (True, "."))))
    >>> [r.reason(u) for u in ("http://a.test/x", "http://a.test/private/y", "http://a.example/")]
    [None, 'out_of_scope_filter', 'out_of_scope_domain']
    """

    domains: tuple[str, ...] | None = None
    url_filter: UrlFilter | None = None
    max_depth: int | None = None
    accept_regex: str | None = None       # wget's --accept-regex: a URL must contain a match
    reject_regex: str | None = None       # wget's --reject-regex: a URL must not
    _hosts: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _rx: tuple = field(default=(None, None), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rx", tuple(None if p is None else compile_search(p)
                                              for p in (self.accept_regex, self.reject_regex)))

    @property
    def active(self) -> bool:
        return (self.domains is not None or self.url_filter is not None or self.accept_regex is not None
                or self.reject_regex is not None)

    def host_allowed(self, hostname: str) -> bool:
        """``hostname`` (as :func:`hostname_of` gives it) is one of the domains or under one."""
        if self.domains is None:
            return True
        ok = self._hosts.get(hostname)
        if ok is None:
            if _is_ip_literal(hostname):
                ok = hostname in self.domains
            else:
                ok = any(hostname == d or hostname.endswith("." + d) for d in self.domains)
            if len(self._hosts) >= 65_536:
                self._hosts.clear()
            self._hosts[hostname] = ok
        return ok

    def host_reason(self, url: str) -> str | None:
        """``out_of_scope_domain`` when the URL's host is outside ``--allowed-domains``, else None."""
        if self.domains is not None and not self.host_allowed(hostname_of(url)):
            return "out_of_scope_domain"
        return None

    def filter_flag(self, url: str) -> str | None:
        r"""The URL filter that rejects the canonical ``url``, checked in this order: ``--reject-regex``
        (found: out), ``--accept-regex`` (not found: out), ``--url-filter`` (its first matching rule
        decides, none: out); None when all three let it in.

        >>> r = ScopeRules(accept_regex=r"/docs/", reject_regex=r"\.pdf$")
        >>> [r.filter_flag(u) for u in ("http://a.test/docs/x", "http://a.test/docs/x.pdf", "http://a.test/y")]
        [None, '--reject-regex', '--accept-regex']
        """
        accept, reject = self._rx
        if reject is not None and reject.search(url):
            return "--reject-regex"
        if accept is not None and not accept.search(url):
            return "--accept-regex"
        if self.url_filter is not None and not self.url_filter.accepts(url):
            return "--url-filter"
        return None

    def reason(self, url: str) -> str | None:
        """Why the canonical http(s) ``url`` is out of the user's scope, or None: the host's domain
        first, then the URL filters (:meth:`filter_flag`), all counted as ``out_of_scope_filter``."""
        why = self.host_reason(url)
        if why is None and (self.url_filter is not None or self._rx != (None, None)) and self.filter_flag(url):
            why = "out_of_scope_filter"
        return why

    @classmethod
    def from_config(cls, cfg) -> "ScopeRules":
        """Rank 0: the rules of a :class:`~abc_crawler.config.CrawlConfig` (reads ``--url-filter``)."""
        flt = UrlFilter.from_file(cfg.url_filter) if cfg.url_filter else None
        return cls(parse_domains(cfg.allowed_domains), flt, cfg.max_depth, cfg.accept_regex, cfg.reject_regex)


@dataclass(frozen=True)
class SeedProblem:
    path: str
    lineno: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.reason}"


def read_seeds(path: str, scope: Scope, rules: ScopeRules | None = None) -> tuple[list[str], list[SeedProblem]]:
    """Canonical seed URLs of a seeds file and one problem per bad line.

    Blank lines and ``#`` comments are skipped; a seed the scope ``rules``
    reject is a bad line too. ``path`` may also be one seed URL (``http://`` or
    ``https://``, as ``abc-crawl https://example.org/`` takes it). Raises
    :class:`SeedError` when the file is missing or holds no usable seed.
    """
    if scheme_of(path.strip()) in ("http", "https") and not os.path.exists(path):
        lines, path = [path.strip()], "SEEDS"
    else:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            if "://" in path:                  # a URL of another scheme, or not a URL at all
                raise SeedError(f"{path}: not a seeds file, nor a seed URL abc-crawl can crawl (only http:// "
                                "and https:// URLs are)") from None
            raise SeedError(f"{path}: seeds file not found (a seed URL starts with http:// or https://)") from None
        except OSError as exc:
            raise SeedError(f"{path}: cannot read seeds file ({exc.strerror})") from None
    seeds: list[str] = []
    seen: set[str] = set()
    problems: list[SeedProblem] = []
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        scheme = scheme_of(line)
        if not scheme:
            problems.append(SeedProblem(path, lineno, f"not an absolute URL: {line!r}"))
            continue
        if scheme not in ("http", "https"):
            problems.append(SeedProblem(path, lineno, f"unsupported scheme {scheme!r} (only http and https)"))
            continue
        try:
            url = canonicalize(line)
        except UrlError as exc:
            problems.append(SeedProblem(path, lineno, exc.reason))
            continue
        if url is None:  # pragma: no cover - scheme checked above
            problems.append(SeedProblem(path, lineno, "unsupported URL"))
            continue
        host = host_of(url)
        if not host or host.startswith(":"):
            problems.append(SeedProblem(path, lineno, f"no host in {line!r}"))
            continue
        if not scope.allows_url(url):
            problems.append(SeedProblem(path, lineno, f"{url_endpoint(url)} is not in the resolve list (out of scope)"))
            continue
        why = rules.reason(url) if rules is not None else None
        if why is not None:
            what = "--allowed-domains" if why == "out_of_scope_domain" else rules.filter_flag(url)
            problems.append(SeedProblem(path, lineno, f"{url} is outside {what} (out of scope)"))
            continue
        if url not in seen:
            seen.add(url)
            seeds.append(url)
    if not seeds:
        raise SeedError(f"{path}: no usable seed URL" + (f" ({len(problems)} bad lines)" if problems else " (file is empty)"))
    return seeds, problems
