"""The routing table of a web directory (routes.json and ``sites/``) and the responses it gives.

Exact routes first (status, content type, file, ``Location``), then
``prefix_redirects``, then, when ``static_fallback`` is on (the default
without routes.json), any file under ``sites/<host>/`` (symlinks followed; a
directory answers its ``index.html`` or a 301 to the slash form; ``x.gz`` on
disk is served decompressed as ``x``); unknown hosts and paths answer 404.
Hosts with a ``modes`` entry and rich routes are answered by :mod:`.modes`.
Plain bodies are cached in memory up to ``cache_bytes``. A file's 200
carries a strong ``ETag`` (a hash of its bytes) and ``Last-Modified`` (its
mtime), which conditional requests are evaluated against (:mod:`.protocol`).
The routes.json format is in ``docs/TESTWEB.md``.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from urllib.parse import unquote

from .modes import check_route, is_plain, load_mode, mode_response, rich_response
from .responses import HTML_TYPE, Plan, ServerError, guess_type, response_head, status_body, validator_headers

__all__ = ["WebSite"]


class WebSite:
    """The routing table of a web directory, and the responses it gives.

    ``respond(host, target)`` returns ``(status, head, body)`` where ``head``
    is the status line and headers without ``Date``/``Connection`` and the
    final blank line; ``body`` is bytes, or a :class:`Plan` for hostile and
    generated responses (never cached).
    """

    def __init__(self, web_dir, cache_bytes: int = 256 << 20):
        self.dir = Path(web_dir)
        if not self.dir.is_dir():
            raise ServerError(f"{web_dir}: not a directory")
        self.sites = self.dir / "sites"
        routes_file = self.dir / "routes.json"
        routes: dict = {}
        if routes_file.exists():
            try:
                routes = json.loads(routes_file.read_text())
            except (OSError, ValueError) as exc:
                raise ServerError(f"{routes_file}: unreadable routes ({exc})") from None
        self.static = bool(routes.get("static_fallback", True))
        self.routes: dict[str, dict] = {h.lower(): v for h, v in routes.get("hosts", {}).items()}
        self.prefixes: dict[str, list] = {
            h.lower(): sorted(v.items(), key=lambda kv: -len(kv[0]))
            for h, v in routes.get("prefix_redirects", {}).items()}
        self.modes: dict[str, dict] = {}
        for h, m in (routes.get("modes") or {}).items():
            self.modes[h.lower()] = load_mode(h, m)
        for h, rs in self.routes.items():
            for t, r in rs.items():
                if not is_plain(r):
                    check_route(r, f"{h}{t}")
        self.hosts = set(self.routes) | set(self.prefixes) | set(self.modes)
        if self.sites.is_dir():
            self.hosts |= {p.name.lower() for p in self.sites.iterdir() if p.is_dir()}
        self.cache: dict[tuple[str, str], tuple[int, bytes, bytes]] = {}
        self.cache_left = cache_bytes
        self.ctx: dict = {}                    # generated bodies and counters (dynamic.py)
        self.hits: dict[tuple[str, str], int] = {}   # requests per (host, target), for fail_first
        self.not_found = (404, response_head(404, HTML_TYPE, len(status_body(404))), status_body(404))

    def respond(self, host: str, target: str) -> tuple[int, bytes, "bytes | Plan"]:
        key = (host, target)
        r = self.cache.get(key)
        if r is not None:
            return r
        if host in self.modes:
            return mode_response(self, host, target)
        r = self.base_response(host, target)
        if type(r[2]) is bytes:
            size = len(r[2]) + len(r[1]) + 100
            if size <= self.cache_left:
                self.cache[key] = r
                self.cache_left -= size
        return r

    def exact_route(self, host: str, target: str) -> dict | None:
        """The exact route of ``target`` on ``host`` (also under its %-decoded form), or None."""
        routes = self.routes.get(host)
        if routes is None:
            return None
        route = routes.get(target)
        if route is None and "?" not in target and "%" in target:
            route = routes.get(unquote(target))
        return route

    def base_response(self, host: str, target: str) -> tuple:
        """The response without the host's ``modes``: exact route, prefix redirect, static file or 404."""
        if host not in self.hosts:
            return self.not_found
        route = self.exact_route(host, target)
        if route is not None:
            return self.route_response(host, target, route)
        path = target.split("?", 1)[0]
        for prefix, dest in self.prefixes.get(host, ()):
            if path.startswith(prefix):
                loc = dest + target[len(prefix):]
                body = status_body(301)
                return 301, response_head(301, HTML_TYPE, len(body), loc), body
        if self.static:
            return self._static(host, target)
        return self.not_found

    def route_response(self, host: str, target: str, route: dict) -> tuple:
        """The response a route describes (rich routes by :func:`.modes.rich_response`)."""
        if not is_plain(route):
            return rich_response(self, host, target, route)
        status = int(route.get("status", 200))
        ctype = route.get("type")
        f = route.get("file")
        extra = ""
        if f is not None:
            path = self.sites / host / f
            try:
                body = path.read_bytes()
                if status == 200:
                    extra = validator_headers(body, path.stat().st_mtime)
            except OSError:
                return self.not_found
            ctype = ctype or guess_type(f)
        else:
            body = status_body(status)
            ctype = HTML_TYPE
        for k, v in route.get("headers", {}).items():      # e.g. Link, Refresh (docs/TESTWEB.md)
            extra += f"{k}: {v}\r\n"
        return status, response_head(status, ctype, len(body), route.get("location"), extra), body

    def _static(self, host: str, target: str) -> tuple[int, bytes, bytes]:
        path, _, query = target.partition("?")
        if not path.startswith("/"):
            return self.not_found
        segs = unquote(path).split("/")[1:]
        if any(s in ("..", ".") or "\0" in s for s in segs):
            return self.not_found
        fs = self.sites / host
        for s in segs[:-1]:
            fs = fs / s
        name = segs[-1] if segs else ""
        if name:
            fs = fs / name
        try:
            if fs.is_dir():
                if not path.endswith("/"):
                    loc = path + "/" + (f"?{query}" if query else "")
                    body = status_body(301)
                    return 301, response_head(301, HTML_TYPE, len(body), loc), body
                fs = fs / "index.html"
            if fs.is_file():
                body = fs.read_bytes()
                return 200, response_head(200, guess_type(fs.name), len(body),
                                          extra=validator_headers(body, fs.stat().st_mtime)), body
            gz = fs.with_name(fs.name + ".gz")
            if gz.is_file():
                body = gzip.decompress(gz.read_bytes())
                return 200, response_head(200, guess_type(fs.name), len(body),
                                          extra=validator_headers(body, gz.stat().st_mtime)), body
        except (OSError, EOFError, gzip.BadGzipFile):
            pass
        return self.not_found
