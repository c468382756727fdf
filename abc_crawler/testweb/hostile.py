"""Hostile hosts for the synthetic web: one virtual host per mode (``docs/TESTWEB.md``, "Hostile hosts").

:func:`hostile_spec` normalizes the generator's ``hostile=`` argument and
:func:`build_hostile` returns, for each mode, what to serve (routes, the
per-host ``modes`` entry of routes.json, small static files) and the truth the
manifest records (which URLs a correct crawler requests, must not request, may
request; the error kinds it should count).  The catalogue, its parameters and
what the server does are tabulated in ``docs/TESTWEB.md``.

Nothing here is random except the garbage robots.txt (seeded): the same
arguments give the same hosts, byte for byte.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from .dynamic import MiB, bomb_bytes, calendar_neighbours, nested_page

__all__ = ["HOSTILE_MODES", "HostileHost", "hostile_spec", "build_hostile", "trip_defaults", "OUTCOMES",
           "ABC_MAX_REDIRECTS"]

#: what a URL's outcome is named in ``HostileHost.outcomes``: ``node`` (200, parsed as HTML),
#: ``redirect`` (a 3xx whose Location was taken as a link), or the URL's kind in the session's
#: graph.npz (``docs/SESSION_FORMAT.md``: ``http_5xx``, ``timeout``, ``robots_unavailable`` ...)
OUTCOMES = ("node", "redirect")
#: ABC's default --max-redirects, which ``redirect_chain``'s outcomes assume
ABC_MAX_REDIRECTS = 10

LEAF = {"status": 200, "dynamic": "leaf"}
HTML = "text/html; charset=utf-8"

# mode -> default parameters (every mode takes only these keys)
HOSTILE_MODES: dict[str, dict] = {
    "http_500": {},
    "http_500_retry": {"retry_after": 2},
    "http_503": {},
    "http_503_retry": {"retry_after": 2},
    "http_429": {"retry_after": 2},
    "flaky": {"fail_first": 2, "retry_after": 1},
    "reset": {"size": 100_000, "reset_after": 2000},
    "drip": {"size": 2048, "drip_bytes": 4, "drip_interval": 2.0},
    "stall": {"stall_seconds": 60.0},
    "redirect_loop": {},
    "redirect_chain": {"hops": 30},
    "redirect_scheme": {"trip_addr": None, "trip_port": None},
    "redirect_loopback": {"trip_addr": None, "trip_port": None, "other_port": None},
    "gzip_bomb": {"inflated": 100 * MiB},
    "deflate_bomb": {"inflated": 100 * MiB},
    "big_body": {"size": 100 * MiB},
    "content_type": {},
    "charset": {},
    "nested_html": {"depth": 100_000},
    "malformed_html": {},
    "many_links": {"count": 100_000},
    "trap_calendar": {"start": "2026/11/22"},
    "trap_repeat": {},
    "trap_session": {"links": 5},
    "robots_huge": {"size": MiB},
    "robots_garbage": {"size": 65536},
    "robots_5xx": {"status": 503},
    "robots_redirect": {},
    "robots_redirect_host": {},
    "robots_stall": {"stall_seconds": 60.0},
}

OFFSITE = "elsewhere.example"   # out of scope, as in the generator
SURE_HOPS = 5                   # redirects any crawler follows (RFC 9309 asks 5 for robots.txt)


def host_of_mode(mode: str) -> str:
    return mode.replace("_", "-") + ".test"


def hostile_spec(hostile) -> dict[str, dict]:
    """``{mode: params}`` from ``None`` / ``"all"`` / ``"a,b"`` / a list of names / ``{mode: params or True}``."""
    if hostile is None or hostile is False:
        return {}
    if hostile is True or hostile == "all":
        hostile = list(HOSTILE_MODES)
    if isinstance(hostile, str):
        hostile = [x.strip() for x in hostile.split(",") if x.strip()]
        if "all" in hostile:
            hostile = list(HOSTILE_MODES)
    if not isinstance(hostile, dict):
        hostile = {m: {} for m in hostile}
    out: dict[str, dict] = {}
    for mode in HOSTILE_MODES:                 # catalogue order, whatever the input order
        if mode not in hostile:
            continue
        params = hostile[mode]
        if params is True or params is None:
            params = {}
        if params is False:
            continue
        if not isinstance(params, dict):
            raise ValueError(f"hostile mode {mode}: parameters must be a dict, not {params!r}")
        unknown = set(params) - set(HOSTILE_MODES[mode])
        if unknown:
            raise ValueError(f"hostile mode {mode}: unknown parameter(s) {', '.join(sorted(unknown))}"
                             f" (known: {', '.join(HOSTILE_MODES[mode]) or 'none'})")
        out[mode] = {**HOSTILE_MODES[mode], **params}
    unknown = set(hostile) - set(HOSTILE_MODES)
    if unknown:
        raise ValueError(f"unknown hostile mode(s): {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(HOSTILE_MODES)})")
    return out


def trip_defaults(addr: str, port: int) -> tuple[str, int, int]:
    """Default tripwire address/port and "other port": 127.0.0.2 (127.0.0.3 if the web is on .2), the web's
    port there, and port+1 (port-1 at 65535) on the web's own address."""
    trip_addr = "127.0.0.2" if addr != "127.0.0.2" else "127.0.0.3"
    return trip_addr, port, port + 1 if port < 65535 else port - 1


@dataclass
class HostileHost:
    mode: str
    host: str                       # host name (routes.json key)
    netloc: str                     # host[:port] (URLs)
    params: dict
    entries: list[str]              # paths linked from normal pages
    routes: dict = field(default_factory=dict)     # path -> route
    modes: dict = field(default_factory=dict)      # the routes.json "modes" entry (may be empty)
    files: dict = field(default_factory=dict)      # relative path -> bytes
    requested: list[str] = field(default_factory=list)       # paths a correct crawler requests
    not_requested: list[str] = field(default_factory=list)   # paths it must never request
    either: list[str] = field(default_factory=list)          # paths whose fate is the crawler's policy
    errors: list[str] = field(default_factory=list)          # error kinds it should count
    expect: str = ""
    bounded: bool = False           # an infinite trap: the crawler must bound it
    extra: dict = field(default_factory=dict)     # more facts for the manifest
    out_of_scope: list[str] = field(default_factory=list)    # canonical http(s) URLs it must not fetch
    never_contacted: list = field(default_factory=list)      # [addr, port] no connection may reach
    # ABC's exact outcome per URL (path -> an OUTCOMES name or a graph.npz kind; a list where the
    # transport may give either); a URL of the host not listed is never requested by ABC, except on
    # hosts with ``other_outcome`` (traps, many links), where each other URL requested has that outcome
    outcomes: dict = field(default_factory=dict)
    other_outcome: str | None = None

    def url(self, path: str) -> str:
        return f"http://{self.netloc}{path}"


def _page(title: str, links: list[tuple[str, str]], extra: str = "") -> bytes:
    items = "\n".join(f"<li><a href=\"{h}\">{t}</a></li>" for h, t in links)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\n"
            f"<h1>{title}</h1>\n{extra}<ul>\n{items}\n</ul>\n</body></html>\n").encode()


def _hub(h: HostileHost, links: list[str], title: str | None = None) -> None:
    """``/`` of ``h``: a plain page linking ``links`` (paths)."""
    h.files["index.html"] = _page(title or f"{h.mode} test host", [(p, p) for p in links])
    h.routes["/"] = {"status": 200, "type": HTML, "file": "index.html"}


def _netloc(host: str, port: int) -> str:
    return host if port == 80 else f"{host}:{port}"


# --------------------------------------------------------------------------- the modes

def _status(h: HostileHost, status: int, retry: bool) -> None:
    route: dict = {"status": status}
    ra = h.params.get("retry_after")
    if retry:
        route["headers"] = {"Retry-After": str(ra)}
    h.modes = {"default": route}
    h.entries = ["/", "/page.html"]
    h.requested = list(h.entries)
    h.errors = [f"http_{status // 100}xx"]
    h.outcomes = {p: f"http_{status // 100}xx" for p in h.entries}
    h.extra = {"status": status, "retry_after": ra if retry else None}
    h.expect = (f"every URL but /robots.txt (404) answers {status}"
                + (f" with Retry-After: {ra}" if retry else " without Retry-After")
                + "; a correct crawler requests each linked URL, counts the error and finds no links"
                + (f"; a crawler that retries waits at least {ra} s between tries (see t_start in the access"
                   " log) and gives up after a bounded number of tries" if retry else
                   "; a crawler that retries 5xx does so a bounded number of times, with back-off"))


def _flaky(h: HostileHost) -> None:
    n, ra = int(h.params["fail_first"]), h.params["retry_after"]
    _hub(h, ["/p1.html", "/p2.html"])
    h.routes["/p1.html"] = h.routes["/p2.html"] = LEAF
    h.modes = {"all": {"fail_first": n, "fail_status": 503, "fail_headers": {"Retry-After": str(ra)}}}
    h.entries = ["/"]
    h.requested = ["/"]
    h.either = ["/p1.html", "/p2.html"]
    h.errors = ["http_5xx"]
    h.outcomes = {p: "node" for p in ("/", "/p1.html", "/p2.html")}    # ABC retries 503 (--max-retries 2)
    h.expect = (f"each URL answers 503 with Retry-After: {ra} to its first {n} requests (counted per URL"
                f" since the server started), then its real page; a crawler that retries 5xx (at least {n}"
                f" retries, {n + 1} attempts, honouring Retry-After) gets / (200) and then /p1.html and"
                " /p2.html; one that does not counts http_5xx for / and finds nothing more; counters restart"
                " with the server (a resumed crawl against a restarted server sees the failures again)")


def _reset(h: HostileHost) -> None:
    size, ra = int(h.params["size"]), int(h.params["reset_after"])
    h.routes["/"] = {"status": 200, "dynamic": "big", "size": size, "transport": "reset", "reset_after": ra}
    h.routes["/no-response.html"] = {"status": 200, "dynamic": "leaf", "transport": "reset", "reset_after": -1}
    h.entries = ["/", "/no-response.html"]
    h.requested = list(h.entries)
    h.errors = ["recv_error", "partial_body", "empty_reply"]
    h.outcomes = {"/": "recv_error", "/no-response.html": "recv_error"}   # curl: ECONNRESET on recv
    h.extra = {"content_length": size, "reset_after": ra}
    h.expect = (f"/ sends headers with Content-Length: {size}, {ra} body bytes, then a TCP RST;"
                " /no-response.html answers nothing and resets the connection: a correct crawler counts a"
                " transport error (recv_error or partial_body; empty_reply), stores no truncated page as"
                " complete and goes on with other URLs")


def _drip(h: HostileHost) -> None:
    size, nb, iv = int(h.params["size"]), int(h.params["drip_bytes"]), float(h.params["drip_interval"])
    head = b"<!DOCTYPE html>\n<html><head><title>drip</title></head><body>\n"
    tail = b"</body></html>\n"
    filler = (b"<p>slow slow slow</p>\n" * (size // 22 + 1))[: max(0, size - len(head) - len(tail))]
    h.files["drip.html"] = head + filler + tail
    h.routes["/"] = {"status": 200, "type": HTML, "file": "drip.html", "transport": "drip",
                     "drip_bytes": nb, "drip_interval": iv}
    h.routes["/headers.html"] = {**h.routes["/"], "drip_headers": True}
    h.entries = ["/", "/headers.html"]
    h.requested = list(h.entries)
    h.errors = ["timeout"]
    h.outcomes = {p: "timeout" for p in h.entries}
    body = len(h.files["drip.html"])
    h.extra = {"body_bytes": body, "drip_bytes": nb, "drip_interval": iv, "seconds_to_finish": body / nb * iv}
    h.expect = (f"/ sends its headers at once, then {nb} body bytes every {iv} s ({body} bytes: about"
                f" {body / nb * iv:.0f} s); /headers.html drips the status line and headers too: a correct"
                " crawler's total (or low-speed) timeout cuts both (timeout) and does not keep waiting")


def _stall(h: HostileHost) -> None:
    s = float(h.params["stall_seconds"])
    h.routes["/headers.html"] = {"status": 200, "dynamic": "leaf", "transport": "stall_headers", "stall_seconds": s}
    h.routes["/nothing.html"] = {"status": 200, "dynamic": "leaf", "transport": "stall_nothing", "stall_seconds": s}
    h.entries = ["/headers.html", "/nothing.html"]
    h.requested = list(h.entries)
    h.errors = ["timeout"]
    h.outcomes = {p: "timeout" for p in h.entries}
    h.extra = {"stall_seconds": s}
    h.expect = (f"/headers.html sends the headers (Content-Length > 0) and then nothing; /nothing.html reads"
                f" the request and sends nothing; the server drops both after {s:g} s: a correct crawler's"
                " timeout (shorter) cuts them (timeout)")


def _redirect_loop(h: HostileHost) -> None:
    h.routes["/loop-a.html"] = {"status": 302, "location": h.url("/loop-b.html")}
    h.routes["/loop-b.html"] = {"status": 302, "location": "/loop-a.html"}
    h.routes["/self.html"] = {"status": 301, "location": "/self.html"}
    h.entries = ["/loop-a.html", "/self.html"]
    h.requested = ["/loop-a.html", "/loop-b.html", "/self.html"]
    h.errors = []
    h.outcomes = {p: "redirect" for p in h.requested}
    h.expect = ("/loop-a.html -> /loop-b.html -> /loop-a.html and /self.html -> itself: each URL is requested"
                " exactly once (a Location is a link like any other; the URL-seen set stops the loop); a"
                " crawler that follows redirects itself must stop (too_many_redirects)")


def _redirect_chain(h: HostileHost) -> None:
    n = int(h.params["hops"])
    codes = [301, 302, 307, 308]
    for i in range(n):
        nxt = f"/hop/{i + 1}.html" if i + 1 < n else "/end.html"
        h.routes[f"/hop/{i}.html"] = {"status": codes[i % 4], "location": h.url(nxt) if i % 2 else nxt}
    h.routes["/end.html"] = LEAF
    h.entries = ["/hop/0.html"]
    sure = min(n, SURE_HOPS + 1)
    h.requested = [f"/hop/{i}.html" for i in range(sure)]
    h.either = [f"/hop/{i}.html" for i in range(sure, n)] + ["/end.html"]
    h.errors = ["redirect_limit", "too_many_redirects"]
    # ABC (--max-redirects L, 10 by default) follows L hops: /hop/0 .. /hop/L-1 redirect, /hop/L is
    # requested and its Location not followed (redirect_limit)
    h.outcomes = {f"/hop/{i}.html": "redirect" for i in range(min(n, ABC_MAX_REDIRECTS))}
    if n > ABC_MAX_REDIRECTS:
        h.outcomes[f"/hop/{ABC_MAX_REDIRECTS}.html"] = "redirect_limit"
    else:
        h.outcomes["/end.html"] = "node"
    h.extra = {"hops": n, "chain": [f"/hop/{i}.html" for i in range(n)] + ["/end.html"]}
    h.expect = (f"a chain of {n} redirects (301/302/307/308, absolute and relative Locations) ending at"
                f" /end.html (200): every crawler requests at least /hop/0.html .. /hop/{sure - 1}.html"
                f" ({SURE_HOPS} redirects followed); with a redirect limit L it requests /hop/0.html ..."
                " /hop/L.html once each and counts the next hop (redirect_limit; curl: too_many_redirects);"
                " without a limit it requests the whole chain (facts.chain) once each")


def _trip(h: HostileHost, addr: str, port: int) -> tuple[str, int]:
    ta, tp, _ = trip_defaults(addr, port)
    return h.params.get("trip_addr") or ta, int(h.params.get("trip_port") or tp)


def _redirect_scheme(h: HostileHost, addr: str, port: int) -> None:
    ta, tp = _trip(h, addr, port)
    h.params.update(trip_addr=ta, trip_port=tp)
    locs = {
        "/file.html": "file:///etc/passwd",
        "/ftp.html": f"ftp://{ta}:{tp}/pub/file.txt",
        "/gopher.html": f"gopher://{ta}:{tp}/1/",
        "/dict.html": f"dict://{ta}:{tp}/info",
        "/data.html": "data:text/html,%3Ca%20href%3D%22http%3A%2F%2Felsewhere.example%2F%22%3Ex%3C%2Fa%3E",
        "/javascript.html": "javascript:alert(document.domain)",
    }
    for p, loc in locs.items():
        h.routes[p] = {"status": 302, "location": loc}
    h.entries = list(locs)
    h.requested = list(locs)
    h.errors = ["redirect_unsupported_scheme"]
    h.outcomes = {p: "redirect" for p in locs}     # the 302 is final; its Location is counted, not fetched
    h.never_contacted = [[ta, tp]]
    h.extra = {"locations": locs}
    h.expect = ("each URL redirects to a non-http(s) scheme (file:, ftp:, gopher:, dict:, data:, javascript:;"
                f" the network ones point at the tripwire {ta}:{tp}): a correct crawler requests each once,"
                " counts redirect_unsupported_scheme and never opens the Location (no connection to the"
                " tripwire, no local file read)")


def _decimal(ip: str) -> str:
    return str(int(ipaddress.IPv4Address(ip)))


def _hexfirst(ip: str) -> str:
    a, rest = ip.split(".", 1)
    return f"0x{int(a):x}.{rest}"


def _redirect_loopback(h: HostileHost, addr: str, port: int) -> None:
    ta, tp = _trip(h, addr, port)
    op = int(h.params.get("other_port") or trip_defaults(addr, port)[2])
    h.params.update(trip_addr=ta, trip_port=tp, other_port=op)
    locs = {
        "/addr.html": (f"http://{ta}:{tp}/", f"http://{_netloc(ta, tp)}/"),
        "/decimal.html": (f"http://{_decimal(ta)}:{tp}/", f"http://{_netloc(ta, tp)}/"),
        "/hex.html": (f"http://{_hexfirst(ta)}:{tp}/", f"http://{_netloc(ta, tp)}/"),
        "/https.html": (f"https://{ta}:{tp}/", f"https://{ta}:{tp}/" if tp != 443 else f"https://{ta}/"),
        "/other-port.html": (f"http://{addr}:{op}/", f"http://{_netloc(addr, op)}/"),
        "/host-other-port.html": (f"http://{h.host}:{op}/", f"http://{_netloc(h.host, op)}/"),
        "/ip-self.html": (f"http://{addr}:{port}/", f"http://{_netloc(addr, port)}/"),
        "/localhost.html": (f"http://localhost:{port}/", f"http://{_netloc('localhost', port)}/"),
        "/ipv6.html": (f"http://[::1]:{port}/", f"http://{_netloc('[::1]', port)}/"),
    }
    for p, (loc, _) in locs.items():
        h.routes[p] = {"status": 302, "location": loc}
    h.entries = list(locs)
    h.requested = list(locs)
    h.outcomes = {p: "redirect" for p in locs}
    h.out_of_scope = sorted({c for _, c in locs.values()})
    h.never_contacted = [[ta, tp], [addr, op]]
    h.extra = {"locations": {p: loc for p, (loc, _) in locs.items()}}
    h.expect = (f"each URL redirects to a loopback address or port outside the resolve list ({ta}:{tp} also"
                f" as a decimal and a hex address, {addr}:{op}, this host on port {op}, and the server"
                f" itself as {addr}:{port}, localhost and [::1]): a correct crawler requests each redirect"
                " once, records the Location as an out-of-scope link and never connects to it (tripwires"
                f" on {ta}:{tp} and {addr}:{op} stay untouched; the access log has no request whose Host is"
                " an address or localhost)")


def _bomb(h: HostileHost, kind: str) -> None:
    n = int(h.params["inflated"])
    h.routes["/"] = {"status": 200, "dynamic": f"{kind}_bomb", "inflated": n}
    h.entries = ["/"]
    h.requested = ["/"]
    h.errors = ["decompression_bomb", "body_too_large", "bad_content_encoding", "unparsable_html"]
    h.outcomes = {"/": "decompression_bomb"}     # stored as received, inflated for parsing up to the cap
    h.extra = {"content_encoding": kind, "wire_bytes": len(bomb_bytes(kind, n)), "inflated_bytes": n}
    h.expect = (f"/ answers Content-Encoding: {kind} even to 'Accept-Encoding: identity':"
                f" {h.extra['wire_bytes']} bytes on the wire that inflate to {n} bytes; a correct crawler"
                " either keeps the compressed bytes as they are (not HTML it can parse: no links) or"
                " inflates no further than its limit (decompression_bomb / body_too_large) - never the"
                " whole bomb")


def _big(h: HostileHost) -> None:
    n = int(h.params["size"])
    h.routes["/"] = {"status": 200, "dynamic": "big", "size": n}
    h.routes["/unsized.html"] = {"status": 200, "dynamic": "big", "size": n, "sized": False}
    h.entries = ["/", "/unsized.html"]
    h.requested = list(h.entries)
    h.errors = ["body_too_large"]
    h.outcomes = {p: "body_too_large" for p in h.entries}
    h.extra = {"body_bytes": n}
    h.expect = (f"/ declares Content-Length: {n} and streams it; /unsized.html streams {n} bytes without"
                " Content-Length (the end is the close): a correct crawler refuses the first from its"
                " declared length or aborts both once past its body limit (body_too_large), and drops the"
                " connection rather than reading on")


def _content_type(h: HostileHost) -> None:
    cases = [  # name, Content-Type (None: no header), body kind, fate of /found/NAME.html
        ("no-type", None, "html", "either"),
        ("octet", "application/octet-stream", "html", "either"),
        ("image", "image/png", "html", "not"),
        ("plain", "text/plain", "html", "not"),
        ("xhtml", "application/xhtml+xml", "xhtml", "yes"),
        ("upper", "TEXT/HTML; Charset=UTF-8", "html", "yes"),
        ("params", "text/html ; charset=\"utf-8\"; x=y", "html", "yes"),
        ("png-as-html", "text/html", "png", None),
        ("json-as-html", "text/html", "json", None),
        ("empty", "text/html", "empty", None),
    ]
    links = []
    h.requested = ["/"]
    # ABC parses text/html and application/xhtml+xml only, whatever the case or parameters, and
    # whatever the body
    h.outcomes = {"/": "node"}
    for name, ctype, kind, fate in cases:
        path = f"/{name}.html"
        links.append(path)
        found = f"/found/{name}.html"
        if kind == "html":
            body = _page(f"served as {ctype}", [(found, "found")])
        elif kind == "xhtml":
            body = (b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">"
                    b"<head><title>xhtml</title></head><body><p><a href=\"" + found.encode() +
                    b"\">found</a></p></body></html>\n")
        elif kind == "png":
            body = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
                    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81"
                    b"\x84\x00\x00\x00\x00IEND\xaeB`\x82")
        elif kind == "json":
            body = b'{"html": "<a href=\\"/found/json.html\\">not a link</a>", "n": [1, 2, 3]}\n'
        else:
            body = b""
        h.files[f"ct/{name}.html"] = body
        h.routes[path] = {"status": 200, "type": ctype, "file": f"ct/{name}.html"}
        h.requested.append(path)
        html = ctype is not None and ctype.split(";")[0].strip().lower() in ("text/html", "application/xhtml+xml")
        h.outcomes[path] = ("unparsable_html" if kind == "empty" else "node") if html else "not_html"
        if fate is not None:
            h.routes[found] = LEAF
            {"yes": h.requested, "not": h.not_requested, "either": h.either}[fate].append(found)
            if html:
                h.outcomes[found] = "node"
    # the JSON body parsed as HTML: its href \"/found/json.html\" is a link to /"/found/json.html/"
    # (a WHATWG parser reads a backslash as a slash), which the server does not have
    h.outcomes["/%22/found/json.html/%22"] = "http_4xx"
    _hub(h, links)
    h.entries = ["/"]
    h.errors = ["unparsable_html"]
    h.expect = ("pages with a missing, wrong, upper-case or parameterized Content-Type, binary and JSON bodies"
                " served as text/html and an empty text/html body, each linking /found/NAME.html: a correct"
                " crawler parses text/html whatever its case and parameters (the /found/ pages of 'upper'"
                " and 'params' are requested), never parses image/png or text/plain as HTML, sniffing the"
                " rest is its policy (ABC parses only text/html), and no body makes it fail")


def _charset(h: HostileHost) -> None:
    pages: dict[str, tuple[str | None, bytes]] = {}
    pages["bad-utf8"] = ("text/html; charset=utf-8",
                         b"<!DOCTYPE html>\n<html><head><title>bad utf-8</title></head><body>\n<p>broken: \xff\xfe"
                         b" \xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80 \xc0\xaf end</p>\n"
                         b"<a href=\"/found/bad-utf8.html\">found</a>\n</body></html>\n")
    ru = "привет"
    pages["cp1251"] = ("text/html; charset=windows-1251",
                       ("<!DOCTYPE html>\n<html><head><title>Кириллица</title></head><body>\n<p>Привет, мир!</p>\n"
                        f"<a href=\"/ru/{ru}.html\">ссылка</a>\n<a href=\"/found/cp1251.html\">found</a>\n"
                        "</body></html>\n").encode("cp1251"))
    pages["sjis"] = ("text/html",
                     ("<!DOCTYPE html>\n<html><head><meta charset=\"shift_jis\"><title>日本語</title></head><body>\n"
                      "<p>こんにちは</p>\n<a href=\"/jp/日本.html\">リンク</a>\n</body></html>\n").encode("shift_jis"))
    pages["bogus"] = ("text/html; charset=x-no-such-charset-42",
                      b"<!DOCTYPE html>\n<html><head><title>bogus charset</title></head><body>\n"
                      b"<p>caf\xe9 \xa4</p>\n<a href=\"/found/bogus.html\">found</a>\n</body></html>\n")
    pages["utf16"] = ("text/html",
                      "\ufeff<!DOCTYPE html>\n<html><head><title>utf-16</title></head><body>\n"
                      "<a href=\"/found/utf16.html\">found</a>\n</body></html>\n".encode("utf-16-le"))
    pages["latin1"] = ("text/html; charset=iso-8859-1",
                       "<!DOCTYPE html>\n<html><head><title>latin-1</title></head><body>\n<p>café</p>\n"
                       "<a href=\"/fr/café.html\">café</a>\n</body></html>\n".encode("latin-1"))
    h.requested = ["/"]
    h.outcomes = {"/": "node"}
    for name, (ctype, body) in pages.items():
        h.files[f"cs/{name}.html"] = body
        h.routes[f"/{name}.html"] = {"status": 200, "type": ctype, "file": f"cs/{name}.html"}
        h.requested.append(f"/{name}.html")
    good = {
        "/found/bad-utf8.html": "", "/found/cp1251.html": "", "/found/bogus.html": "", "/found/utf16.html": "",
        "/ru/%D0%BF%D1%80%D0%B8%D0%B2%D0%B5%D1%82.html": "cp1251 link, UTF-8 percent-encoded path",
        "/jp/%E6%97%A5%E6%9C%AC.html": "shift_jis link (charset in <meta> only)",
        "/fr/caf%C3%A9.html": "latin-1 link",
    }
    for p in good:
        h.routes[p] = LEAF
        h.requested.append(p)
    h.outcomes.update({p: "node" for p in h.requested})
    # the cp1251 link read as latin-1 / windows-1252 (mojibake): the server answers 404
    h.not_requested = ["/ru/%C3%AF%C3%B0%C3%A8%C3%A2%C3%A5%C3%B2.html"]
    _hub(h, [f"/{n}.html" for n in pages])
    h.entries = ["/"]
    h.errors = []
    h.expect = ("pages with invalid UTF-8, a charset only in the HTTP header (windows-1251), only in <meta>"
                " (shift_jis), an unknown charset name, UTF-16 with a BOM and ISO-8859-1: a correct crawler"
                " decodes each (HTTP charset, then BOM/meta; unknown names fall back) and requests every"
                " link; non-ASCII paths are UTF-8 percent-encoded (/ru/%D0%BF...), so reading the"
                " windows-1251 page as latin-1 would request the 404 URL in not_requested")


def _nested(h: HostileHost) -> None:
    d = int(h.params["depth"])
    h.routes["/nested.html"] = {"status": 200, "dynamic": "nested", "depth": d}
    for p in ("/before.html", "/deep.html", "/after.html"):
        h.routes[p] = LEAF
    _hub(h, ["/nested.html"])
    h.entries = ["/"]
    h.requested = ["/", "/nested.html", "/before.html"]
    h.either = ["/deep.html", "/after.html"]
    h.errors = ["unparsable_html"]
    # libxml2 stops building a tree at depth 256, but ABC reads a page without <style> elements with
    # no tree (web/parser.py), to its end: it finds all three links
    h.outcomes = {p: "node" for p in h.requested + h.either}
    h.extra = {"depth": d, "body_bytes": len(nested_page(d))}
    h.expect = (f"/nested.html: a link, {d} nested <div>s with a link at the bottom, a link after them: a"
                " correct crawler neither crashes nor recurses without bound, and finds at least the first"
                " link (/before.html); whether its parser reaches the others is its policy (libxml2 stops"
                " at depth 256)")


def _malformed(h: HostileHost) -> None:
    body = (b"<!DOCTYPE html><html><head><title>malformed</title>\n"
            b"<body><p>unclosed <b>bold <i>italic\n"
            b"<a href=/unquoted.html>unquoted</a>\n"
            b"<a href='/single.html'>single quotes</a>\n"
            b"<a href=\"/first-attr.html\" href=\"/second-attr.html\">duplicate attribute</a>\n"
            b"<a href = \"/spaces.html\" >spaces around =</a>\n"
            b"<A HREF=\"/upper.html\">upper case</A>\n"
            b"<a href=\"/nul\x00byte.html\">NUL in href</a>\n"
            b"<script>document.write('<a href=\"/in-script.html\">x</a>')</script>\n"
            b"<table><tr><td><a href=\"/in-table.html\">in an unclosed table</a></table>\n"
            b"<a href=\"/unclosed-a.html\">unclosed a <a href=\"/nested-a.html\">nested a</a>\n"
            b"<div <a href=\"/broken-tag.html\">broken tag</a>\n"
            b"</html>\n"
            b"<a href=\"/after-end.html\">after </html></a>\n"
            b"<!-- <a href=\"/in-comment.html\">in a comment</a> -->\n"
            b"<a href=\"/last.html\">last</a>\n"
            b"<!-- unterminated comment <a href=\"/in-open-comment.html\">x</a>\n")
    h.files["malformed.html"] = body
    h.routes["/malformed.html"] = {"status": 200, "type": HTML, "file": "malformed.html"}
    found = ["/unquoted.html", "/single.html", "/first-attr.html", "/spaces.html", "/upper.html",
             "/in-table.html", "/unclosed-a.html", "/nested-a.html", "/after-end.html", "/last.html"]
    never = ["/second-attr.html", "/in-script.html", "/broken-tag.html", "/in-comment.html", "/in-open-comment.html"]
    either = ["/nul%EF%BF%BDbyte.html"]   # NUL -> U+FFFD (HTML5); a parser may also drop or cut the href
    for p in found + never + either:
        h.routes[p] = LEAF
    _hub(h, ["/malformed.html"])
    h.entries = ["/"]
    h.requested = ["/", "/malformed.html"] + found
    h.not_requested = never
    h.either = either
    h.errors = []
    h.outcomes = {p: "node" for p in h.requested + either}   # lxml writes the NUL as U+FFFD
    h.expect = ("/malformed.html: unclosed and upper-case tags, unquoted/single-quoted/duplicate attributes, a"
                " NUL byte, links inside <script>, comments and an unterminated comment, content after"
                " </html>: a correct (HTML5-like) parser finds the links in requested and none of those in"
                " not_requested (second of two href attributes, script text, comments, a broken tag)")


def _many_links(h: HostileHost) -> None:
    n = int(h.params["count"])
    h.routes["/"] = {"status": 200, "dynamic": "links", "count": n, "prefix": "/l/"}
    h.modes = {"prefix": {"/l/": {"status": 200, "dynamic": "link_leaf", "count": n, "prefix": "/l/"}}}
    h.entries = ["/"]
    h.requested = ["/"]
    h.outcomes = {"/": "node"}
    h.other_outcome = "node"             # the leaves ABC's limits let through
    h.extra = {"links": n, "unlisted": {"pattern": h.url("/l/{i}.html"), "count": n,
                                        "what": "leaf pages (200, no links), i = 0 .. count-1"}}
    h.expect = (f"/ holds {n} distinct links /l/0.html .. /l/{n - 1}.html (small pages without links): a"
                f" correct crawler parses it without trouble; without per-page or per-host caps it requests all"
                f" {n} leaves (not listed: see 'unlisted'), with caps a prefix of them; --max-pages bounds it")


def _calendar(h: HostileHost) -> None:
    y, m, d = (int(x) for x in str(h.params["start"]).split("/"))
    start = f"/cal/{y:04d}/{m:02d}/{d:02d}"
    prv, nxt = calendar_neighbours(y, m, d)
    h.modes = {"prefix": {"/cal/": {"status": 200, "dynamic": "calendar", "prefix": "/cal/"}}}
    h.entries = [start]
    h.requested = [start]
    h.bounded = True
    h.outcomes = {start: "node"}
    h.other_outcome = "node"
    h.extra = {"next_links": [f"/cal/{a:04d}/{b:02d}/{c:02d}" for a, b, c in (prv, nxt) if (a, b, c)]}
    h.expect = ("an endless calendar: every /cal/YYYY/MM/DD page links the previous and the next day (any year"
                " >= 1, no upper bound; invalid dates 404): a correct crawler requests the entry and must bound"
                " the rest (per-host page budget, depth or --max-pages); the set of URLs is infinite")


def _repeat(h: HostileHost) -> None:
    h.modes = {"prefix": {"/a/": {"status": 200, "dynamic": "repeat", "prefix": "/a/", "segment": "a"}}}
    h.entries = ["/a/"]
    h.requested = ["/a/"]
    h.bounded = True
    h.outcomes = {"/a/": "node", "/a/a/": "node", "/a/a/a/": "node"}   # --max-segment-repeats 3
    h.extra = {"next_links": ["/a/a/"]}
    h.expect = ("path repetition: /a/, /a/a/, /a/a/a/ ... each page links the relative 'a/' (one level deeper,"
                " forever): a correct crawler requests /a/ and must bound the rest (path depth, repeated"
                " segments, URL length or a per-host budget)")


def _session(h: HostileHost) -> None:
    n = int(h.params["links"])
    h.modes = {"prefix": {"/s/": {"status": 200, "dynamic": "session", "prefix": "/s/", "links": n}}}
    h.entries = ["/s/index.html"]
    h.requested = ["/s/index.html"]
    h.bounded = True
    h.outcomes = {"/s/index.html": "node"}
    h.other_outcome = "node"
    h.extra = {"links_per_page": n}
    h.expect = (f"session ids: every page under /s/ links {n} pages /s/pJ.html?sid=FRESH with a new session"
                " id per link (never repeated while the server runs): a correct crawler requests the entry"
                " and must bound the rest (per-host budget, or by ignoring session-id parameters)")


def _robots_hub(h: HostileHost, paths: list[str]) -> None:
    _hub(h, paths)
    for p in paths:
        h.routes[p] = LEAF
    h.entries = ["/"]


def _robots_huge(h: HostileHost) -> None:
    n = int(h.params["size"])
    h.modes = {"robots": {"status": 200, "type": "text/plain; charset=utf-8", "dynamic": "robots_huge", "size": n}}
    _robots_hub(h, ["/p1.html", "/early/x.html", "/late/x.html"])
    h.requested = ["/", "/p1.html"]
    h.not_requested = ["/early/x.html"]
    h.either = ["/late/x.html"]
    # ABC parses the first 500 KiB (RFC 9309's minimum, abc_crawler.net.robots.MAX_PARSE_BYTES): /late/
    # is disallowed only in a file no longer than that
    h.outcomes = {"/": "node", "/p1.html": "node", "/early/x.html": "robots_disallowed",
                  "/late/x.html": "robots_disallowed" if n <= 500 * 1024 else "node"}
    h.extra = {"robots_bytes_at_least": n}
    h.expect = (f"a robots.txt of more than {n} bytes: Disallow: /early/ at the top, thousands of Disallow"
                " lines, Disallow: /late/ at the very end; RFC 9309 asks parsers to read at least 500 KiB:"
                " /early/ is never requested, /late/ depends on where the crawler stops reading; fetching and"
                " matching it must not stall the crawl")


def _robots_garbage(h: HostileHost, seed: int) -> None:
    n = int(h.params["size"])
    h.modes = {"robots": {"status": 200, "type": "text/plain", "dynamic": "garbage", "size": n, "seed": seed}}
    _robots_hub(h, ["/p1.html", "/private/x.html"])
    h.requested = ["/", "/p1.html", "/private/x.html"]
    h.outcomes = {p: "node" for p in h.requested}
    h.extra = {"robots_bytes": n}
    h.expect = (f"robots.txt is {n} bytes of binary garbage (200 text/plain): it holds no rule, so a correct"
                " crawler allows everything and requests all three pages (and does not crash parsing it)")


def _robots_5xx(h: HostileHost) -> None:
    st = int(h.params["status"])
    h.modes = {"robots": {"status": st}}
    _robots_hub(h, ["/p1.html"])
    h.requested = []
    h.not_requested = ["/", "/p1.html"]
    h.errors = ["robots_5xx", "robots_unavailable"]
    h.outcomes = {"/": "robots_unavailable"}      # given up without a request; /p1.html never found
    h.expect = (f"robots.txt answers {st}: RFC 9309 says assume complete disallow; a correct crawler retries"
                " robots.txt a bounded number of times with back-off and never requests a page of the host"
                " (ABC: robots_unavailable after 3 tries)")


def _robots_redirect(h: HostileHost) -> None:
    h.modes = {"robots": {"status": 301, "location": "/robots-moved.txt"}}
    h.routes["/robots-moved.txt"] = {"status": 200, "type": "text/plain; charset=utf-8",
                                     "text": "User-agent: *\nDisallow: /private/\n"}
    _robots_hub(h, ["/p1.html", "/private/x.html"])
    h.requested = ["/", "/p1.html"]
    h.either = ["/robots-moved.txt"]
    h.not_requested = ["/private/x.html"]
    h.outcomes = {"/": "node", "/p1.html": "node", "/private/x.html": "robots_disallowed"}
    h.expect = ("robots.txt redirects (301) to /robots-moved.txt on the same host, which disallows /private/:"
                " RFC 9309 follows up to 5 redirects, so /private/x.html is not requested (ABC follows them);"
                " a crawler that does not treats the robots.txt as unavailable (allow all) and requests it")


def _robots_redirect_host(h: HostileHost) -> None:
    target = f"http://robots.{OFFSITE}/robots.txt"
    h.modes = {"robots": {"status": 301, "location": target}}
    _robots_hub(h, ["/p1.html"])
    h.requested = ["/", "/p1.html"]
    h.outcomes = {p: "node" for p in h.requested}
    h.out_of_scope = [target]
    h.expect = (f"robots.txt redirects to another, out-of-scope host ({target}): a correct crawler never"
                " contacts it, treats the robots.txt as unavailable (allow all) and requests the pages")


def _robots_stall(h: HostileHost) -> None:
    s = float(h.params["stall_seconds"])
    h.modes = {"robots": {"status": 200, "type": "text/plain; charset=utf-8", "text": "User-agent: *\nDisallow:\n",
                          "transport": "stall_headers", "stall_seconds": s}}
    _robots_hub(h, ["/p1.html"])
    h.requested = []
    h.not_requested = ["/", "/p1.html"]
    h.errors = ["robots_timeout", "robots_unavailable"]
    h.outcomes = {"/": "robots_unavailable"}
    h.extra = {"stall_seconds": s}
    h.expect = (f"robots.txt sends its headers and then nothing (dropped after {s:g} s): unreachable, so a correct"
                " crawler times out, retries a bounded number of times and requests no page of the host")


def build_hostile(spec: dict[str, dict], *, addr: str, port: int, seed: int = 0) -> list[HostileHost]:
    """The hostile hosts of ``spec`` (from :func:`hostile_spec`), in catalogue order."""
    out = []
    for mode, params in spec.items():
        host = host_of_mode(mode)
        h = HostileHost(mode, host, _netloc(host, port), dict(params), [])
        if mode.startswith("http_"):
            status = int(mode.split("_")[1])
            _status(h, status, mode.endswith("_retry") or status == 429)
        elif mode == "flaky":
            _flaky(h)
        elif mode == "reset":
            _reset(h)
        elif mode == "drip":
            _drip(h)
        elif mode == "stall":
            _stall(h)
        elif mode == "redirect_loop":
            _redirect_loop(h)
        elif mode == "redirect_chain":
            _redirect_chain(h)
        elif mode == "redirect_scheme":
            _redirect_scheme(h, addr, port)
        elif mode == "redirect_loopback":
            _redirect_loopback(h, addr, port)
        elif mode in ("gzip_bomb", "deflate_bomb"):
            _bomb(h, mode.split("_")[0])
        elif mode == "big_body":
            _big(h)
        elif mode == "content_type":
            _content_type(h)
        elif mode == "charset":
            _charset(h)
        elif mode == "nested_html":
            _nested(h)
        elif mode == "malformed_html":
            _malformed(h)
        elif mode == "many_links":
            _many_links(h)
        elif mode == "trap_calendar":
            _calendar(h)
        elif mode == "trap_repeat":
            _repeat(h)
        elif mode == "trap_session":
            _session(h)
        elif mode == "robots_huge":
            _robots_huge(h)
        elif mode == "robots_garbage":
            _robots_garbage(h, seed)
        elif mode == "robots_5xx":
            _robots_5xx(h)
        elif mode == "robots_redirect":
            _robots_redirect(h)
        elif mode == "robots_redirect_host":
            _robots_redirect_host(h)
        elif mode == "robots_stall":
            _robots_stall(h)
        else:  # pragma: no cover - HOSTILE_MODES and this switch agree
            raise AssertionError(mode)
        out.append(h)
    return out
