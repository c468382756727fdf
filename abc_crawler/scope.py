"""Scope: which hosts may be contacted at all, and the seeds file.

Scope is a safety rule, not an option: with a resolve list, the crawler fetches
only the hosts in it; every other link is counted as out of scope and is never
resolved or connected to. Only ``http`` and ``https`` are ever fetched.

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
from dataclasses import dataclass, field

from .exceptions import ResolveError, SeedError
from .urls import UrlError, canonicalize, host_of, scheme_of

__all__ = ["Scope", "read_seeds", "SeedProblem", "endpoint_of", "url_endpoint"]


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
            parts = line.rsplit(":", 2)
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
            entries.append(f"{host}:{port_i}:{addr}")
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


@dataclass(frozen=True)
class SeedProblem:
    path: str
    lineno: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.reason}"


def read_seeds(path: str, scope: Scope) -> tuple[list[str], list[SeedProblem]]:
    """Canonical seed URLs of a seeds file and one problem per bad line.

    Blank lines and ``#`` comments are skipped. Raises :class:`SeedError` when
    the file is missing or holds no usable seed.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        raise SeedError(f"{path}: seeds file not found") from None
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
        if url not in seen:
            seen.add(url)
            seeds.append(url)
    if not seeds:
        raise SeedError(f"{path}: no usable seed URL" + (f" ({len(problems)} bad lines)" if problems else " (file is empty)"))
    return seeds, problems
