"""Hostile hosts in routes.json: the ``modes`` entries and the routes that are not plain files.

A route is *plain* when it has only ``status``, ``type``, ``file`` and
``location`` (and a non-empty ``type``); any other route is *rich*: a
generated body (``dynamic``, :mod:`.dynamic`), an inline ``text``, extra
``headers``, no Content-Length (``sized``), a hostile ``transport`` (drip,
reset, stall), ``fail_first``, ``content_encoding``. A rich response is built
per request as a :class:`~.responses.Plan` and never cached. A host's
``modes`` entry (``robots``, ``prefix``, ``default``, ``all``) switches the
whole host to such behaviour. The keys, shortcuts and transports are tabulated
in ``docs/TESTWEB.md``; unknown ones make the server refuse to start
(:class:`~.responses.ServerError`).
"""
from __future__ import annotations

import gzip
import zlib

from .dynamic import DYNAMIC, Body
from .responses import HTML_TYPE, Plan, ServerError, guess_type, patch_head, response_head, status_body

__all__ = ["TRANSPORTS", "PLAIN_KEYS", "ROBOTS_SHORTCUTS", "ALL_SHORTCUTS", "check_route", "is_plain", "load_mode",
           "mode_response", "rich_response", "wrap_response"]

TRANSPORTS = ("normal", "drip", "reset", "stall_headers", "stall_nothing")
WRAP_KEYS = {"transport", "drip_bytes", "drip_interval", "drip_headers", "reset_after", "reset_delay",
             "stall_seconds", "fail_first", "fail_status", "fail_headers", "content_encoding"}
PLAIN_KEYS = {"status", "type", "file", "location", "headers"}   # headers: {name: value} sent as they are
MODE_KEYS = {"robots", "prefix", "default", "all"}

# shortcuts accepted in routes.json "modes" for "robots" and "all"
ROBOTS_SHORTCUTS = {
    "5xx": {"status": 503},
    "garbage": {"status": 200, "type": "text/plain", "dynamic": "garbage", "size": 65536},
    "huge": {"status": 200, "type": "text/plain; charset=utf-8", "dynamic": "robots_huge", "size": 1 << 20},
    "redirect": {"status": 301, "location": "/robots-moved.txt"},
    "stall": {"status": 200, "type": "text/plain; charset=utf-8", "text": "User-agent: *\nDisallow:\n",
              "transport": "stall_headers"},
    "missing": {"status": 404},
}
ALL_SHORTCUTS = {
    "drip": {"transport": "drip"},
    "reset": {"transport": "reset"},
    "stall_headers": {"transport": "stall_headers"},
    "stall_nothing": {"transport": "stall_nothing"},
    "flaky": {"fail_first": 2},
    "gzip": {"content_encoding": "gzip"},
    "deflate": {"content_encoding": "deflate"},
}


def _shortcut(value, table: dict, what: str) -> dict:
    if isinstance(value, dict):
        return value
    v = str(value)
    if v in table:
        return dict(table[v])
    if v.isdigit() and 100 <= int(v) <= 599:
        return {"status": int(v)}
    raise ServerError(f"routes.json: unknown {what} mode {value!r}")


def check_route(route, where: str) -> None:
    """:class:`~.responses.ServerError` if ``route`` names an unknown dynamic body, transport or encoding."""
    if not isinstance(route, dict):
        raise ServerError(f"routes.json: {where}: a route must be an object")
    dyn = route.get("dynamic")
    if dyn is not None and dyn not in DYNAMIC:
        raise ServerError(f"routes.json: {where}: unknown dynamic body {dyn!r} (known: {', '.join(DYNAMIC)})")
    tr = route.get("transport", "normal")
    if tr not in TRANSPORTS:
        raise ServerError(f"routes.json: {where}: unknown transport {tr!r} (known: {', '.join(TRANSPORTS)})")
    ce = route.get("content_encoding")
    if ce is not None and ce not in ("gzip", "deflate"):
        raise ServerError(f"routes.json: {where}: content_encoding must be gzip or deflate")


def is_plain(route: dict) -> bool:
    """True for a route of only ``status``, ``type``, ``file``, ``location``, ``headers`` (and a non-empty ``type``)."""
    return route.keys() <= PLAIN_KEYS and route.get("type", "x") not in (None, "")


def load_mode(host: str, m) -> dict:
    """The ``modes`` entry of ``host`` in routes.json, checked and with its shortcuts expanded."""
    if not isinstance(m, dict):
        raise ServerError(f"routes.json: modes.{host} must be an object")
    unknown = set(m) - MODE_KEYS
    if unknown:
        raise ServerError(f"routes.json: modes.{host}: unknown key(s) {', '.join(sorted(unknown))}"
                          f" (known: {', '.join(sorted(MODE_KEYS))})")
    out: dict = {}
    if "robots" in m:
        out["robots"] = _shortcut(m["robots"], ROBOTS_SHORTCUTS, "robots")
        check_route(out["robots"], f"modes.{host}.robots")
    if "all" in m:
        out["all"] = _shortcut(m["all"], ALL_SHORTCUTS, "all")
        check_route(out["all"], f"modes.{host}.all")
    if "default" in m:
        check_route(m["default"], f"modes.{host}.default")
        out["default"] = m["default"]
    prefixes = m.get("prefix") or {}
    for p, r in prefixes.items():
        check_route(r, f"modes.{host}.prefix[{p}]")
    out["prefix"] = sorted(prefixes.items(), key=lambda kv: -len(kv[0]))
    return out


def mode_response(site, host: str, target: str) -> tuple:
    """The response of ``site`` (a :class:`.routes.WebSite`) for a host with a ``modes`` entry."""
    m = site.modes[host]
    path = target.split("?", 1)[0]
    if path == "/robots.txt":
        rr = m.get("robots")
        return rich_response(site, host, target, rr) if rr is not None else site.base_response(host, target)
    allr = m.get("all")
    if allr is not None and "status" in allr:
        return rich_response(site, host, target, allr)
    route = site.exact_route(host, target)
    if route is None:
        for prefix, pr in m["prefix"]:
            if path.startswith(prefix):
                route = pr
                break
    if route is not None:
        res = site.route_response(host, target, route)
    else:
        res = site.base_response(host, target)
        if res is site.not_found and "default" in m:
            res = rich_response(site, host, target, m["default"])
    if allr is not None:
        res = wrap_response(site, host, target, res, allr)
    return res


def rich_response(site, host: str, target: str, route: dict) -> tuple:
    """A route with hostile or generated parts: always a :class:`.responses.Plan`."""
    status = int(route.get("status", 200))
    extra = [(str(k), str(v)) for k, v in (route.get("headers") or {}).items()]
    note = route.get("dynamic") or "route"
    dyn = route.get("dynamic")
    if dyn is not None:
        b = DYNAMIC[dyn](route, target, site.ctx)
        if b is None:
            return site.not_found
        if "status" in route:
            b.status = status
    elif "text" in route:
        b = Body(status, "text/plain; charset=utf-8", str(route["text"]).encode())
    elif route.get("file") is not None:
        f = route["file"]
        try:
            data = (site.sites / host / f).read_bytes()
        except OSError:
            return site.not_found
        b = Body(status, guess_type(f), data)
    else:
        b = Body(status, HTML_TYPE, status_body(status))
    if "type" in route:
        b.ctype = route["type"] or None     # null or "": no Content-Type header
    sized = bool(route.get("sized", True))
    head = response_head(b.status, b.ctype, b.length if sized else None, route.get("location"),
                         "".join(f"{k}: {v}\r\n" for k, v in b.headers + extra))
    plan = Plan(b.status, head, b.data, b.chunks, b.length, sized, note=note)
    wrap = {k: v for k, v in route.items() if k in WRAP_KEYS}
    return wrap_response(site, host, target, (b.status, head, plan), wrap) if wrap else (b.status, head, plan)


def wrap_response(site, host: str, target: str, res: tuple, w: dict) -> tuple:
    """Apply the transport/failure/encoding keys of ``w`` to a response."""
    status, head, body = res
    plan = body if isinstance(body, Plan) else Plan(status, head, body, None, len(body), note="wrap")
    extra = [(str(k), str(v)) for k, v in (w.get("headers") or {}).items()] if "status" not in w else []
    ff = int(w.get("fail_first", 0))
    if ff > 0:
        key = (host, target)
        n = site.hits.get(key, 0) + 1
        site.hits[key] = n
        if n <= ff:
            fs = int(w.get("fail_status", 503))
            fb = status_body(fs)
            fh = "".join(f"{k}: {v}\r\n" for k, v in (w.get("fail_headers") or {"Retry-After": "1"}).items())
            fhead = response_head(fs, HTML_TYPE, len(fb), None, fh)
            return fs, fhead, Plan(fs, fhead, fb, None, len(fb), note=f"fail_first {n}/{ff}")
    ce = w.get("content_encoding")
    if ce is not None:
        raw = plan.data if plan.data is not None else b"".join(bytes(c) for c in plan.body_iter())
        enc = gzip.compress(raw, mtime=0) if ce == "gzip" else zlib.compress(raw)
        plan = Plan(plan.status, plan.head, enc, None, len(enc), plan.sized, note=plan.note)
        extra.append(("Content-Encoding", ce))
    if ce is not None or extra:
        plan.head = patch_head(plan.head, plan.length if plan.sized else None, extra)
    tr = w.get("transport")
    if tr is not None:
        plan.transport = tr
        plan.opts = {k: w[k] for k in ("drip_bytes", "drip_interval", "drip_headers", "reset_after",
                                        "reset_delay", "stall_seconds") if k in w}
        plan.note = tr if plan.note in ("route", "wrap") else f"{plan.note}+{tr}"
    return plan.status, plan.head, plan
