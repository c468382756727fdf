"""Scope: which hosts may be contacted at all, and the seeds file.

Scope is a safety rule (DESIGN §10): with a resolve list, the crawler fetches
only the hosts in it; every other link is counted as out of scope and is never
resolved or connected to. Only ``http`` and ``https`` are ever fetched.

Examples
--------
>>> s = Scope.from_lines(["a.test:8080:127.0.0.1", "# comment", "b.test:80:127.0.0.2"])
>>> s.allows_host("a.test:8080"), s.allows_host("b.test"), s.allows_host("c.test")
(True, True, False)
>>> s.curl_resolve
['a.test:8080:127.0.0.1', 'b.test:80:127.0.0.2']
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from .exceptions import ResolveError, SeedError
from .urls import UrlError, canonicalize, host_of, scheme_of

__all__ = ["Scope", "read_seeds", "SeedProblem"]


@dataclass(frozen=True)
class Scope:
    """Hosts in scope (``host`` or ``host:port`` as in canonical URLs) and curl's RESOLVE list.

    ``hosts is None`` means no resolve list: every http(s) host is in scope.
    """

    hosts: frozenset[str] | None = None
    curl_resolve: list[str] = field(default_factory=list)

    @classmethod
    def from_lines(cls, lines, source: str = "<resolve>") -> "Scope":
        hosts: set[str] = set()
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
            entries.append(f"{host}:{port_i}:{addr}")
        if not entries:
            raise ResolveError(f"{source}: no HOST:PORT:ADDR line")
        return cls(frozenset(hosts), entries)

    @classmethod
    def from_file(cls, path: str) -> "Scope":
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except OSError as exc:
            raise ResolveError(f"{path}: cannot read resolve file ({exc.strerror})") from None
        return cls.from_lines(lines, path)

    def allows_host(self, host: str) -> bool:
        return self.hosts is None or host in self.hosts


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
        if not scope.allows_host(host):
            problems.append(SeedProblem(path, lineno, f"host {host} is not in the resolve list (out of scope)"))
            continue
        if url not in seen:
            seen.add(url)
            seeds.append(url)
    if not seeds:
        raise SeedError(f"{path}: no usable seed URL" + (f" ({len(problems)} bad lines)" if problems else " (file is empty)"))
    return seeds, problems
