"""Forward proxies: ``--proxy URL`` for every request, ``--proxy env`` for the standard variables.

The default is no proxy: libcurl's own reading of ``http_proxy`` and friends is
switched off, so that a variable left in a cluster's environment does not
silently change where a crawl connects. ``--proxy URL`` (``http://``,
``https://`` or ``socks5h://``; ``host:port`` alone means ``http://``) sends
every request through one proxy. ``--proxy env`` reads the variables curl reads,
the way curl reads them (:meth:`ProxySettings.from_env`):

* ``http_proxy`` for ``http://`` URLs (lower case only: ``HTTP_PROXY`` can be set
  by a web server's CGI environment and curl ignores it too);
* ``https_proxy`` or ``HTTPS_PROXY`` for ``https://`` URLs;
* ``all_proxy`` or ``ALL_PROXY`` for a scheme without its own variable;
* ``no_proxy`` or ``NO_PROXY``: a comma-separated list of hosts that go direct —
  ``*`` for all, a domain name (with or without a leading dot) for the name
  and every name under it, an IP address, or an IP network in CIDR form
  (matched against literal addresses in URLs; a port in an entry is ignored).

Rank 0 reads the variables and sends the result to every rank, so every rank
uses the same proxies wherever it runs. The decision per URL is
:meth:`ProxySettings.for_url` (a pure function; the fetcher sets curl's
``PROXY`` per request from it).

What the address check can see through a proxy: libcurl connects to the proxy
only, so the address it checks (:mod:`abc_crawler.net.addresses`) is the proxy's,
which the user chose and which is therefore allowed. The target name is
resolved by the proxy (``socks5h`` and HTTP proxies never resolve it here), so
a name whose DNS answer is a private address cannot be seen: the fetcher
refuses what it can judge by name alone — URLs whose host is an IP literal of a
refused range, ``localhost`` and names under ``.localhost`` — and the proxy's own
rules must refuse the rest (e.g. Squid's ``http_access deny to_localhost`` and a
``dst`` ACL of private networks).

Examples
--------
>>> p = ProxySettings.from_env({"http_proxy": "proxy.test:3128", "no_proxy": ".internal.test,10.0.0.0/8"})
>>> p.for_url("http://a.test/"), p.for_url("https://a.test/"), p.for_url("http://x.internal.test/")
('http://proxy.test:3128', '', '')
>>> p.for_url("http://10.1.2.3/"), p.for_url("http://[::1]/")
('', 'http://proxy.test:3128')
>>> ProxySettings.from_value("socks5h://127.0.0.1:1080").for_url("https://a.test/")
'socks5h://127.0.0.1:1080'
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..exceptions import ConfigError

__all__ = ["ProxySettings", "PROXY_SCHEMES", "check_proxy_url", "no_proxy_matches"]

#: proxy URL schemes accepted (socks5h: the proxy resolves names, so the crawler never does)
PROXY_SCHEMES = ("http", "https", "socks5h")


def check_proxy_url(value: str, what: str = "proxy") -> str:
    """``value`` as a proxy URL with its scheme (``host:port`` -> ``http://host:port``); ConfigError if unusable.

    >>> check_proxy_url("proxy.test:3128"), check_proxy_url("HTTPS://p.test:443/")
    ('http://proxy.test:3128', 'https://p.test:443')
    >>> check_proxy_url("socks4://p.test:1080")
    Traceback (most recent call last):
    ...
    abc_crawler.exceptions.ConfigError: proxy: scheme 'socks4' not supported (http, https or socks5h), got 'socks4://p.test:1080'
    """
    v = value.strip()
    if any(c in v for c in " \t\r\n"):
        raise ConfigError(f"{what}: blanks in proxy URL {value!r}")
    scheme, sep, rest = v.partition("://")
    if not sep:
        scheme, rest = "http", v
    scheme = scheme.lower()
    if scheme not in PROXY_SCHEMES:
        raise ConfigError(f"{what}: scheme {scheme!r} not supported ({', '.join(PROXY_SCHEMES[:-1])} or "
                          f"{PROXY_SCHEMES[-1]}), got {value!r}")
    rest = rest.rstrip("/")
    if "/" in rest or "?" in rest or "#" in rest:
        raise ConfigError(f"{what}: a proxy URL has no path, got {value!r}")
    hostport = rest.rpartition("@")[2]
    host = hostport
    if hostport.startswith("["):
        end = hostport.find("]")
        host, port = hostport[:end + 1], hostport[end + 1:].lstrip(":")
    elif ":" in hostport:
        host, _, port = hostport.rpartition(":")
    else:
        port = ""
    if not host or host in ("[]",):
        raise ConfigError(f"{what}: no proxy host in {value!r}")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ConfigError(f"{what}: bad proxy port in {value!r}")
    return f"{scheme}://{rest}"


def _split_host(host: str) -> str:
    """A canonical URL's host without port and brackets, lower case, no trailing dot."""
    if host.startswith("["):
        return host[1: host.find("]")]
    return host.rsplit(":", 1)[0].rstrip(".") if ":" in host else host.rstrip(".")


def no_proxy_matches(entries: tuple[str, ...], host: str) -> bool:
    """Does a ``no_proxy`` list (normalized entries) exempt ``host`` (without port)?

    >>> e = ProxySettings.from_env({"no_proxy": "Example.COM,.b.test,::1,192.168.0.0/16"}).no_proxy
    >>> [no_proxy_matches(e, h) for h in ("example.com", "www.example.com", "notexample.com", "a.b.test", "::1", "192.168.4.5")]
    [True, True, False, True, True, True]
    """
    ip = None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        pass
    for e in entries:
        if e == "*":
            return True
        if "/" in e:
            if ip is not None:
                try:
                    if ip in ipaddress.ip_network(e, strict=False):
                        return True
                except ValueError:
                    pass
            continue
        if ip is not None:
            try:
                if ip == ipaddress.ip_address(e):
                    return True
            except ValueError:
                pass
            continue
        if host == e or host.endswith("." + e):
            return True
    return False


@dataclass(frozen=True)
class ProxySettings:
    """Which proxy each URL goes through (``""``: direct). Built on rank 0, sent to every rank."""

    by_scheme: tuple[tuple[str, str], ...] = ()     # (url scheme, proxy URL); "*" = any scheme
    no_proxy: tuple[str, ...] = ()
    source: str = "none"                           # none | flag | env

    @property
    def active(self) -> bool:
        return bool(self.by_scheme)

    @classmethod
    def from_value(cls, value: str | None, environ=None) -> "ProxySettings":
        """``--proxy`` as given: None (no proxy), ``env`` (the variables of ``environ``) or a URL."""
        if value is None or not value.strip() or value.strip().lower() == "none":
            return cls()
        if value.strip().lower() == "env":
            import os

            return cls.from_env(os.environ if environ is None else environ)
        return cls((("*", check_proxy_url(value)),), (), "flag")

    @classmethod
    def from_env(cls, environ) -> "ProxySettings":
        def first(*names: str) -> tuple[str, str] | None:
            for n in names:
                v = environ.get(n)
                if v is not None and v.strip():
                    return n, v
            return None

        by: list[tuple[str, str]] = []
        for scheme, names in (("http", ("http_proxy",)), ("https", ("https_proxy", "HTTPS_PROXY")),
                              ("*", ("all_proxy", "ALL_PROXY"))):
            hit = first(*names)
            if hit is not None:
                by.append((scheme, check_proxy_url(hit[1], what=f"proxy env: {hit[0]}")))
        nop = first("no_proxy", "NO_PROXY")
        entries: list[str] = []
        if nop is not None:
            for e in nop[1].split(","):
                e = e.strip().lower()
                if not e:
                    continue
                if e.startswith("[") and "]" in e:
                    e = e[1:e.index("]")]
                elif e.count(":") == 1:            # host:port: the port is ignored
                    e = e.split(":", 1)[0]
                e = e.strip(".") if e != "*" else e
                if e:
                    entries.append(e)
        return cls(tuple(by), tuple(entries), "env")

    def for_url(self, url: str) -> str:
        """The proxy URL for a canonical http(s) ``url``, or ``""`` to connect directly."""
        if not self.by_scheme:
            return ""
        scheme = url[: url.find("://")]
        proxy = ""
        for s, p in self.by_scheme:
            if s == scheme:
                proxy = p
                break
        else:
            for s, p in self.by_scheme:
                if s == "*":
                    proxy = p
        if proxy and self.no_proxy:
            start = url.find("://") + 3
            end = url.find("/", start)
            host = _split_host((url[start:] if end < 0 else url[start:end]).lower())
            if no_proxy_matches(self.no_proxy, host):
                return ""
        return proxy

    def describe(self) -> str:
        if not self.by_scheme:
            return "none"
        parts = [f"{s}: {_hide_credentials(p)}" for s, p in self.by_scheme]
        if self.no_proxy:
            parts.append("no_proxy: " + ",".join(self.no_proxy))
        return f"{self.source} ({'; '.join(parts)})"


def _hide_credentials(proxy: str) -> str:
    scheme, _, rest = proxy.partition("://")
    if "@" in rest:
        rest = "***@" + rest.rpartition("@")[2]
    return f"{scheme}://{rest}"
