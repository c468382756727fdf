"""Hostile hosts of the local web: every mode does what it says at the HTTP level.

One web with every hostile mode, served once for the module (bounded by
max_seconds); raw sockets and pycurl with timeouts.  Fast: no crawler runs
here (the crawler's reliability tests use these hosts).
"""
from __future__ import annotations

import hashlib
import http.client
import json
import re
import socket
import time
import zlib
from pathlib import Path

import pytest

from abc_crawler.testweb.cli import free_port, main
from abc_crawler.testweb.dynamic import MiB, big_body_bytes, bomb_bytes, robots_huge_text
from abc_crawler.testweb.generator import canonical, compute_expected, generate_web
from abc_crawler.testweb.hostile import HOSTILE_MODES, hostile_spec
from abc_crawler.testweb.server import ServerError, TestWebServer
from abc_crawler.testweb.tripwire import Tripwire, tripwires

pycurl = pytest.importorskip("pycurl")

pytestmark = pytest.mark.timeout(60)


# ----------------------------------------------------------------------------- fixtures and helpers

@pytest.fixture(scope="module")
def hweb(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    port = free_port()
    other = free_port()
    spec = {m: {} for m in HOSTILE_MODES}
    spec["redirect_loopback"] = {"other_port": other}
    m = generate_web(d, n_hosts=6, n_pages=80, seed=5, port=port, hostile=spec)
    return d, m


@pytest.fixture(scope="module")
def hsrv(hweb, tmp_path_factory):
    d, m = hweb
    log = tmp_path_factory.mktemp("hlog") / "access.jsonl"
    with TestWebServer.from_manifest(d, access_log=log, max_seconds=120) as srv:
        yield srv, log


def host(m, mode):
    return m["hostile"][mode]["host"]


def url(m, mode, path):
    return f"http://{host(m, mode)}{path}"


def split_url(u):
    rest = u.split("://", 1)[1]
    i = rest.find("/")
    return rest[:i], rest[i:]


class Fetch:
    def __init__(self, status, headers, body, nbytes, error, seconds, redirects):
        self.status, self.headers, self.body, self.nbytes = status, headers, body, nbytes
        self.error, self.seconds, self.redirects = error, seconds, redirects

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


def fetch(m, u, timeout=10.0, keep=True, **opts) -> Fetch:
    """pycurl GET with the web's resolve list (the crawler's settings unless overridden)."""
    c = pycurl.Curl()
    chunks, count, head = [], [0], []

    def write(b):
        count[0] += len(b)
        if keep and count[0] <= 8 * MiB:
            chunks.append(b)

    def header(line):
        line = line.decode("latin-1").rstrip("\r\n")
        if line.startswith("HTTP/"):
            head.clear()
        elif ":" in line:
            k, v = line.split(":", 1)
            head.append((k.strip(), v.strip()))

    c.setopt(pycurl.URL, u)
    c.setopt(pycurl.RESOLVE, m["resolve"])
    c.setopt(pycurl.PROXY, "")
    c.setopt(pycurl.NOPROXY, "*")
    c.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
    c.setopt(pycurl.REDIR_PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
    c.setopt(pycurl.HTTPHEADER, ["Accept-Encoding: identity"])
    c.setopt(pycurl.TIMEOUT_MS, int(timeout * 1000))
    c.setopt(pycurl.CONNECTTIMEOUT_MS, 3000)
    c.setopt(pycurl.WRITEFUNCTION, write)
    c.setopt(pycurl.HEADERFUNCTION, header)
    for k, v in opts.items():
        c.setopt(getattr(pycurl, k), v)
    t0 = time.monotonic()
    err = None
    try:
        c.perform()
    except pycurl.error as exc:
        err = exc.args[0]
    f = Fetch(c.getinfo(pycurl.RESPONSE_CODE), head, b"".join(chunks), count[0], err,
              time.monotonic() - t0, c.getinfo(pycurl.REDIRECT_COUNT))
    c.close()
    return f


def raw(port, hostname, path, method="GET", timeout=5.0, extra=""):
    """One request on a fresh socket; (status line + headers bytes, body bytes, exception or None)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(f"{method} {path} HTTP/1.1\r\nHost: {hostname}\r\n{extra}Connection: close\r\n\r\n".encode())
    data, exc = b"", None
    try:
        while True:
            c = s.recv(1 << 16)
            if not c:
                break
            data += c
    except OSError as e:
        exc = e
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body, exc


def read_head(s) -> tuple[bytes, bytes]:
    """Read from socket ``s`` up to the end of the headers; (head, first body bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        c = s.recv(65536)
        if not c:
            break
        data += c
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def logged(srv, log: Path, pred) -> list[dict]:
    """Access-log rows matching ``pred``, once the server has flushed its log (no waiting: a hostile
    response's line is written when it ends, before the client can see that end)."""
    srv.flush(wait=0)
    with open(log) as fh:
        rows = [json.loads(x) for x in fh if x.strip()]
    return [r for r in rows if pred(r)]


def rss_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


# ----------------------------------------------------------------------------- generator and manifest

def test_spec_parsing_and_errors():
    assert hostile_spec(None) == {} and hostile_spec([]) == {} and hostile_spec(False) == {}
    assert list(hostile_spec("all")) == list(HOSTILE_MODES)
    assert list(hostile_spec(["trap_repeat", "drip"])) == ["drip", "trap_repeat"]   # catalogue order
    assert hostile_spec("drip,reset") == {"drip": HOSTILE_MODES["drip"], "reset": HOSTILE_MODES["reset"]}
    assert hostile_spec({"drip": {"drip_interval": 0.1}})["drip"]["drip_interval"] == 0.1
    with pytest.raises(ValueError, match="unknown hostile mode"):
        hostile_spec(["drip", "nope"])
    with pytest.raises(ValueError, match="unknown parameter"):
        hostile_spec({"drip": {"speed": 1}})


def test_hostile_web_leaves_the_normal_web_alone(tmp_path, hweb):
    """The same web without hostile hosts: every normal file, route and expectation is the same,
    except the few source pages, which only gain one paragraph of links."""
    d, m = hweb
    p = tmp_path / "plain"
    n = generate_web(p, n_hosts=6, n_pages=80, seed=5, port=m["port"])
    assert generate_web(tmp_path / "none", n_hosts=6, n_pages=80, seed=5, port=m["port"], hostile=None) == n
    assert generate_web(tmp_path / "empty", n_hosts=6, n_pages=80, seed=5, port=m["port"], hostile=[]) == n
    assert "hostile" not in n and "expected_hostile" not in n and "hostile_hosts" not in n
    assert m["expected"] == n["expected"] and m["seeds"] == n["seeds"] and m["hosts"] == n["hosts"]
    assert m["knobs"] == n["knobs"] and m["robots"] == n["robots"]
    assert m["resolve"][: len(n["resolve"])] == n["resolve"]
    assert m["resolve"][len(n["resolve"]):] == [f"{h.split(':')[0]}:{m['port']}:127.0.0.1" for h in m["hostile_hosts"]]
    sources = {e["linked_from"] for e in m["hostile"].values()}
    assert set(m["pages"]) == set(n["pages"])
    for u, e in n["pages"].items():
        if u in sources:
            extra = m["pages"][u]["links"][len(e["links"]):]
            assert m["pages"][u]["links"][: len(e["links"])] == e["links"]
            assert extra and all(split_url(x)[0] in m["hostile_hosts"] for x in extra)
        else:
            assert m["pages"][u] == e, u
    routes_m = json.loads((d / "routes.json").read_text())
    routes_n = json.loads((p / "routes.json").read_text())
    for h, r in routes_n["hosts"].items():
        assert routes_m["hosts"][h] == r
    assert "modes" not in routes_n and set(routes_m["modes"]) <= {h.split(":")[0] for h in m["hostile_hosts"]}
    src_files = set()
    for u in sources:
        h, path = split_url(u)
        src_files.add((h.split(":")[0], routes_n["hosts"][h.split(":")[0]][path]["file"]))
    for f in sorted((p / "sites").rglob("*")):
        if f.is_file():
            rel = f.relative_to(p / "sites")
            g = d / "sites" / rel
            if (rel.parts[0], "/".join(rel.parts[1:])) in src_files:
                a, b = f.read_bytes(), g.read_bytes()
                cut = a.rfind(b"</body></html>")
                assert b.startswith(a[:cut]) and b.endswith(a[cut:]) and b"class=\"hostile\"" in b
            else:
                assert g.read_bytes() == f.read_bytes(), rel


def test_manifest_hostile_sections(hweb):
    from lxml import etree

    d, m = hweb
    assert list(m["hostile"]) == list(HOSTILE_MODES)
    assert len(m["hostile_hosts"]) == len(HOSTILE_MODES) == m["counts"]["hostile_modes"]
    assert not set(m["hostile_hosts"]) & set(m["hosts"])
    resolve_hosts = {r.rsplit(":", 2)[0] for r in m["resolve"]}
    eh = m["expected_hostile"]
    entries = set()
    for mode, e in m["hostile"].items():
        name, port = e["host"].split(":")
        assert name.endswith(".test") and int(port) == m["port"] and name in resolve_hosts
        assert e["expect"] and e["urls"] and set(e["urls"]) <= set(e["requested"]) | set(e["not_requested"])
        entries |= set(e["urls"])
        for key in ("requested", "not_requested", "either"):
            assert all(split_url(u)[0] == e["host"] for u in e[key]), (mode, key)
        assert not set(e["requested"]) & set(e["not_requested"])
        assert not set(e["either"]) & (set(e["requested"]) | set(e["not_requested"]))
        # linked from a reachable normal page: the page's HTML holds the links, the manifest says so
        src = e["linked_from"]
        assert src in m["expected"]["nodes"]
        h, path = split_url(src)
        routes = json.loads((d / "routes.json").read_text())["hosts"][h.split(":")[0]]
        html = (d / "sites" / h.split(":")[0] / routes[path]["file"]).read_bytes()
        doc = etree.fromstring(html, etree.HTMLParser())
        found = [canonical(a.get("href"), src) for a in doc.xpath("//a[@href]")]
        assert set(e["urls"]) <= set(found) and set(e["urls"]) <= set(m["pages"][src]["links"])
    assert set(eh["linked"]) == entries
    assert set(eh["requested"]) == {u for e in m["hostile"].values() for u in e["requested"]}
    assert eh["bounded"] == sorted(u for mo in ("trap_calendar", "trap_repeat", "trap_session")
                                   for u in m["hostile"][mo]["urls"])
    assert set(eh["unlisted"]) == {"many_links"} and eh["unlisted"]["many_links"]["count"] == 100_000
    lb = m["hostile"]["redirect_loopback"]["params"]
    assert [lb["trip_addr"], lb["trip_port"]] in eh["never_contacted"]
    assert ["127.0.0.1", lb["other_port"]] in eh["never_contacted"]
    # the normal expectations are recomputed the same; hostile URLs are neither requested nor out of scope
    robots = {h: r["robots_txt"] for h, r in m["robots"].items()}
    exp = compute_expected(m["pages"], m["seeds"], m["hosts"], robots, hostile_hosts=m["hostile_hosts"])
    assert exp.pop("hostile_links") == eh["linked"]
    assert exp == m["expected"]
    assert not {split_url(u)[0] for u in m["expected"]["out_of_scope_links"]} & set(m["hostile_hosts"])
    # bombs: the manifest's wire size is what the generator function gives
    assert m["hostile"]["gzip_bomb"]["facts"]["wire_bytes"] == len(bomb_bytes("gzip", 100 * MiB)) < 110_000


def test_cli_generate_hostile(tmp_path, capsys):
    out = tmp_path / "w"
    assert main(["generate", str(out), "--hosts", "3", "--pages", "20", "--hostile", "drip,trap_calendar"]) == 0
    assert "2 hostile hosts" in capsys.readouterr().out
    m = json.loads((out / "manifest.json").read_text())
    assert list(m["hostile"]) == ["drip", "trap_calendar"]
    assert main(["generate", str(tmp_path / "x"), "--hostile", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown hostile mode" in err and err.count("\n") == 1


# ----------------------------------------------------------------------------- statuses

@pytest.mark.parametrize("mode,status,retry", [("http_500", 500, None), ("http_500_retry", 500, "2"),
                                               ("http_503", 503, None), ("http_503_retry", 503, "2"),
                                               ("http_429", 429, "2")])
def test_status_modes(hweb, hsrv, mode, status, retry):
    d, m = hweb
    for u in m["hostile"][mode]["urls"] + [url(m, mode, "/anything/else.html")]:
        f = fetch(m, u)
        assert f.error is None and f.status == status, u
        assert f.header("Retry-After") == retry
    assert fetch(m, url(m, mode, "/robots.txt")).status == 404


def test_flaky_fails_then_succeeds(hweb, hsrv):
    d, m = hweb
    u = url(m, "flaky", "/p1.html")
    got = [fetch(m, u) for _ in range(4)]
    assert [f.status for f in got] == [503, 503, 200, 200]
    assert got[0].header("Retry-After") == "1" and got[2].header("Retry-After") is None
    assert b"leaf page" in got[2].body


# ----------------------------------------------------------------------------- transport

def test_reset_mid_body(hweb, hsrv):
    d, m = hweb
    srv, log = hsrv
    facts = m["hostile"]["reset"]["facts"]
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s.sendall(f"GET / HTTP/1.1\r\nHost: {host(m, 'reset')}\r\n\r\n".encode())
    head, body = read_head(s)
    assert head.startswith(b"HTTP/1.1 200") and f"Content-Length: {facts['content_length']}".encode() in head
    with pytest.raises(ConnectionResetError):
        while True:
            c = s.recv(65536)
            assert c, "orderly close instead of a reset"
            body += c
    s.close()
    assert len(body) == facts["reset_after"] == 2000 < facts["content_length"]
    f = fetch(m, url(m, "reset", "/"))
    assert f.status == 200 and f.nbytes == 2000 and f.error in (pycurl.E_RECV_ERROR, pycurl.E_PARTIAL_FILE)
    f = fetch(m, url(m, "reset", "/no-response.html"))
    assert f.status == 0 and f.nbytes == 0 and f.error in (pycurl.E_RECV_ERROR, pycurl.E_GOT_NOTHING)
    rows = logged(srv, log, lambda r: r["host"] == "reset.test")
    assert rows and all(r["end"] == "reset" for r in rows)


def test_drip_is_slow(hweb, hsrv):
    d, m = hweb
    srv, _ = hsrv
    p = m["hostile"]["drip"]["params"]
    assert (p["drip_bytes"], p["drip_interval"]) == (4, 2.0)
    # Bounds from the server's pace, which it cannot beat however idle or busy the machine is: the
    # k-th piece of 4 bytes leaves at least k x 2 s after the request was sent (t0), so by any time
    # T a client holds at most 4 x floor((T - t0) / 2) dripped bytes; a slow client only gets less.
    def most(t0: float) -> int:
        return 4 * int((time.monotonic() - t0) / 2.0)

    s1 = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    s2 = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    t0 = time.monotonic()
    s1.sendall(f"GET / HTTP/1.1\r\nHost: {host(m, 'drip')}\r\n\r\n".encode())
    s2.sendall(f"GET /headers.html HTTP/1.1\r\nHost: {host(m, 'drip')}\r\n\r\n".encode())
    # headers at once: the whole head (~150 bytes, 75 s if it dripped) arrives within the socket's timeout
    head, body = read_head(s1)
    assert head.startswith(b"HTTP/1.1 200") and len(body) <= most(t0)
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
    assert length == m["hostile"]["drip"]["facts"]["body_bytes"] == 2048
    got1 = body or s1.recv(4096)          # the first dripped piece (blocking, bounded by the timeout)
    assert 1 <= len(got1) <= most(t0), (got1, most(t0))
    got2 = s2.recv(4096)                  # even the status line drips
    assert 1 <= len(got2) <= most(t0) and b"HTTP/1.1 200 OK".startswith(got2), got2
    s1.close()
    s2.close()
    f = fetch(m, url(m, "drip", "/"), timeout=1.0)
    assert f.error == pycurl.E_OPERATION_TIMEDOUT and f.status == 200
    assert f.nbytes <= 4 * int(f.seconds / 2.0), (f.nbytes, f.seconds)


def test_stall_past_the_client_timeout(hweb, hsrv, tmp_path):
    d, m = hweb
    f = fetch(m, url(m, "stall", "/headers.html"), timeout=0.8)
    assert f.error == pycurl.E_OPERATION_TIMEDOUT and f.status == 200 and f.nbytes == 0
    assert int(f.header("Content-Length")) > 0
    f = fetch(m, url(m, "stall", "/nothing.html"), timeout=0.8)
    assert f.error == pycurl.E_OPERATION_TIMEDOUT and f.status == 0
    # the server itself drops a stalled connection after stall_seconds
    w = generate_web(tmp_path / "w", n_hosts=1, n_pages=1, port=free_port(), features=False,
                     hostile={"stall": {"stall_seconds": 0.4}})
    log = tmp_path / "log.jsonl"
    with TestWebServer.from_manifest(tmp_path / "w", access_log=log, max_seconds=60) as srv:
        # the server drops them (end "stalled" below), not the client's 30 s socket timeout; and not
        # before stall_seconds (a lower bound the server cannot beat)
        t0 = time.monotonic()
        head, body, exc = raw(srv.port, "stall.test", "/nothing.html", timeout=30)
        assert head == b"" and not isinstance(exc, TimeoutError) and time.monotonic() - t0 >= 0.4
        head, body, exc = raw(srv.port, "stall.test", "/headers.html", timeout=30)
        assert head.startswith(b"HTTP/1.1 200") and body == b"" and not isinstance(exc, TimeoutError)
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(r["path"], r["end"], r["bytes"]) for r in rows] == [("/nothing.html", "stalled", 0),
                                                                  ("/headers.html", "stalled", 0)]
    assert w["hostile"]["stall"]["facts"]["stall_seconds"] == 0.4


# ----------------------------------------------------------------------------- redirects

def test_redirect_loop_and_chain(hweb, hsrv):
    d, m = hweb
    f = fetch(m, url(m, "redirect_loop", "/loop-a.html"))
    assert f.status == 302 and f.header("Location") == url(m, "redirect_loop", "/loop-b.html")
    f = fetch(m, url(m, "redirect_loop", "/loop-b.html"))
    assert f.status == 302 and f.header("Location") == "/loop-a.html"
    assert fetch(m, url(m, "redirect_loop", "/self.html")).header("Location") == "/self.html"
    f = fetch(m, url(m, "redirect_loop", "/loop-a.html"), FOLLOWLOCATION=1, MAXREDIRS=20)
    assert f.error == pycurl.E_TOO_MANY_REDIRECTS
    # the chain, hop by hop as a crawler sees it (Locations are links)
    u, seen = m["hostile"]["redirect_chain"]["urls"][0], []
    while True:
        f = fetch(m, u)
        seen.append(u)
        if f.status == 200:
            break
        assert f.status in (301, 302, 307, 308)
        u = canonical(f.header("Location"), u)
        assert len(seen) < 100
    ch = m["hostile"]["redirect_chain"]
    assert [split_url(u)[1] for u in seen] == ch["facts"]["chain"] and len(seen) == 31
    assert seen == ch["requested"] + ch["either"] and len(ch["requested"]) == 6
    f = fetch(m, seen[0], FOLLOWLOCATION=1, MAXREDIRS=50)
    assert f.status == 200 and f.redirects == 30
    assert fetch(m, seen[0], FOLLOWLOCATION=1, MAXREDIRS=20).error == pycurl.E_TOO_MANY_REDIRECTS


def test_redirects_to_other_schemes_and_loopback_never_connect(hweb, hsrv):
    d, m = hweb
    srv, log = hsrv
    eh = m["expected_hostile"]
    sch = m["hostile"]["redirect_scheme"]
    lb = m["hostile"]["redirect_loopback"]
    with tripwires(eh["never_contacted"], max_seconds=30) as tws:
        for u in sch["urls"]:
            f = fetch(m, u)
            assert f.status == 302
            loc = f.header("Location")
            assert loc == sch["facts"]["locations"][split_url(u)[1]]
            assert loc.split(":", 1)[0] in ("file", "ftp", "gopher", "dict", "data", "javascript")
            # a client limited to http(s), as the crawler is, refuses to follow
            f = fetch(m, u, FOLLOWLOCATION=1)
            assert f.error == pycurl.E_UNSUPPORTED_PROTOCOL or f.status == 302
        for u in lb["urls"]:
            f = fetch(m, u)
            assert f.status == 302 and f.header("Location") == lb["facts"]["locations"][split_url(u)[1]]
    assert not any(t.touched for t in tws), [t.hits for t in tws]     # final once the tripwires stopped
    locs = set(lb["facts"]["locations"].values())
    ta, tp, op = lb["params"]["trip_addr"], lb["params"]["trip_port"], lb["params"]["other_port"]
    assert {f"http://{ta}:{tp}/", f"http://2130706434:{tp}/", f"http://0x7f.0.0.2:{tp}/",
            f"http://127.0.0.1:{op}/", f"http://localhost:{m['port']}/", f"http://[::1]:{m['port']}/",
            f"http://redirect-loopback.test:{op}/"} <= locs
    assert f"http://{ta}:{tp}/" in eh["out_of_scope_links"]
    # without a scope, a client that follows the redirect does reach the tripwire
    with Tripwire(ta, tp, max_seconds=30) as tw:
        f = fetch(m, url(m, "redirect_loopback", "/addr.html"), FOLLOWLOCATION=1, timeout=2)
    assert tw.touched and tw.hits[0]["data"].startswith(b"GET / HTTP/1.1")


# ----------------------------------------------------------------------------- bombs and big bodies

@pytest.mark.parametrize("mode,wbits", [("gzip_bomb", 16 + 15), ("deflate_bomb", 15)])
def test_bombs_inflate_to_the_stated_size(hweb, hsrv, mode, wbits):
    d, m = hweb
    facts = m["hostile"][mode]["facts"]
    f = fetch(m, url(m, mode, "/"))          # the request says Accept-Encoding: identity
    assert f.status == 200 and f.header("Content-Encoding") == facts["content_encoding"]
    assert f.nbytes == len(f.body) == facts["wire_bytes"] == int(f.header("Content-Length")) < 110_000
    dec = zlib.decompressobj(wbits)
    total, buf, first = 0, f.body, b""
    while buf:
        out = dec.decompress(buf, 4 * MiB)   # bounded: never the whole bomb in memory
        first = first or out[:15]
        total += len(out)
        buf = dec.unconsumed_tail
    total += len(dec.flush())
    assert dec.eof and total == facts["inflated_bytes"] == 100 * MiB and first == b"<!DOCTYPE html>"
    # a client that decodes stops at its size limit
    cap = {"n": 0}

    def capped(b):
        cap["n"] += len(b)
        return 0 if cap["n"] > 10 * MiB else None

    c = fetch(m, url(m, mode, "/"), keep=False, ENCODING="", WRITEFUNCTION=capped)
    assert c.error == pycurl.E_WRITE_ERROR and cap["n"] <= 11 * MiB


def test_big_bodies_stream_with_backpressure(hweb, hsrv):
    d, m = hweb
    srv, log = hsrv
    n = m["hostile"]["big_body"]["facts"]["body_bytes"]
    assert n == 100 * MiB
    digest = hashlib.sha256()
    f = fetch(m, url(m, "big_body", "/"), keep=False, WRITEFUNCTION=digest.update)
    assert f.error is None and f.status == 200 and int(f.header("Content-Length")) == n
    assert digest.hexdigest() == hashlib.sha256(big_body_bytes(n)).hexdigest()
    count = {"n": 0}
    f = fetch(m, url(m, "big_body", "/unsized.html"), keep=False,
              WRITEFUNCTION=lambda b: count.__setitem__("n", count["n"] + len(b)))
    assert f.error is None and f.header("Content-Length") is None and count["n"] == n
    assert f.header("Connection") == "close"
    # the crawler's limits: refused by the declared length, or cut while streaming
    assert fetch(m, url(m, "big_body", "/"), MAXFILESIZE_LARGE=10 * MiB).error == pycurl.E_FILESIZE_EXCEEDED
    assert fetch(m, url(m, "big_body", "/unsized.html"),
                 MAXFILESIZE_LARGE=10 * MiB).error == pycurl.E_FILESIZE_EXCEEDED
    # backpressure: a reader that stops does not make the server buffer the body
    before = rss_bytes()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.sendall(f"GET / HTTP/1.1\r\nHost: {host(m, 'big_body')}\r\n\r\n".encode())
    got = len(read_head(s)[1])
    while got < MiB:
        got += len(s.recv(65536))
    time.sleep(0.5)
    grown = rss_bytes() - before
    s.close()
    assert grown < 30 * MiB, grown
    rows = logged(srv, log, lambda r: r["host"] == "big-body.test" and r["end"] == "closed")
    assert rows and rows[-1]["bytes"] < 40 * MiB


def _fetch_all(f, urls, seconds=30.0):
    """Submit ``urls`` one after the other on one Fetcher; their Responses (bounded in time)."""
    out = []
    deadline = time.monotonic() + seconds
    for u in urls:
        f.submit(u, u)
        got = []
        while not got and time.monotonic() < deadline:
            got = f.poll(0.05)
        assert got, f"no response for {u} in {seconds} s"
        out.extend(got)
    return out


def test_fetcher_cuts_bodies_over_its_cap_and_reuses_the_handle_cleanly(hweb, hsrv):
    from abc_crawler.net.fetcher import Fetcher
    from abc_crawler.web.scope import Scope

    d, m = hweb
    f = Fetcher(scope=Scope.from_lines(m["resolve"]), user_agent="abc-crawler/test", timeout=20,
                connect_timeout=5, max_body_bytes=10 * MiB, max_connections=1)
    try:
        small = url(m, "big_body", "/robots.txt")
        rs = _fetch_all(f, [url(m, "big_body", "/"), small, url(m, "big_body", "/unsized.html"), small])
    finally:
        f.close()
    sized, after_sized, unsized, after_unsized = rs
    # refused by the declared length, and cut while streaming a body of unknown length
    assert sized.error == "body_too_large" and sized.body == b""
    assert unsized.error == "body_too_large" and unsized.body == b""
    # the handle that carried them comes back with nothing of the aborted transfer in it
    for r in (after_sized, after_unsized):
        assert r.error is None and r.status in (200, 404)
        assert r.status_line.startswith("HTTP/1.1 ") and len(r.body) < MiB
        assert int(r.header("Content-Length")) == len(r.body)
    assert after_sized.body == after_unsized.body and after_sized.headers[0] == after_unsized.headers[0]


# ----------------------------------------------------------------------------- content

def test_content_type_and_charset_pages(hweb, hsrv):
    d, m = hweb
    srv, _ = hsrv
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)   # one keep-alive connection

    def get(mode, path):
        conn.request("GET", path, headers={"Host": host(m, mode)})
        r = conn.getresponse()
        return r, r.read()

    want = {"/no-type.html": None, "/octet.html": "application/octet-stream", "/image.html": "image/png",
            "/upper.html": "TEXT/HTML; Charset=UTF-8", "/params.html": "text/html ; charset=\"utf-8\"; x=y",
            "/empty.html": "text/html"}
    for path, ctype in want.items():
        r, b = get("content_type", path)
        assert r.status == 200 and r.getheader("Content-Type") == ctype, path
        assert (b == b"") == (path == "/empty.html")
    r, b = get("content_type", "/png-as-html.html")
    assert b.startswith(b"\x89PNG") and r.getheader("Content-Type") == "text/html"
    r, b = get("charset", "/cp1251.html")
    assert r.getheader("Content-Type") == "text/html; charset=windows-1251"
    assert "Привет" in b.decode("cp1251") and b"\xcf\xf0\xe8\xe2\xe5\xf2" in b
    with pytest.raises(UnicodeDecodeError):
        get("charset", "/bad-utf8.html")[1].decode("utf-8")
    r, b = get("charset", "/sjis.html")
    assert "日本語" in b.decode("shift_jis") and r.getheader("Content-Type") == "text/html"
    assert get("charset", "/bogus.html")[0].getheader("Content-Type").endswith("x-no-such-charset-42")
    assert get("charset", "/utf16.html")[1].startswith(b"\xff\xfe<\x00")
    for u in m["hostile"]["charset"]["requested"] + m["hostile"]["content_type"]["requested"]:
        mode = "charset" if "charset" in u else "content_type"
        assert get(mode, split_url(u)[1])[0].status == 200, u
    assert get("charset", split_url(m["hostile"]["charset"]["not_requested"][0])[1])[0].status == 404
    conn.close()


def test_html_oddities_nested_malformed_many_links(hweb, hsrv):
    from lxml import etree

    from abc_crawler.testweb.generator import canonical as canon

    d, m = hweb
    f = fetch(m, url(m, "nested_html", "/nested.html"))
    assert f.status == 200 and f.body.count(b"<div>") == 100_000 == f.body.count(b"</div>")
    assert f.nbytes == m["hostile"]["nested_html"]["facts"]["body_bytes"]
    # malformed: an HTML5-like parser (lxml here) finds the requested links and none of the others
    mh = m["hostile"]["malformed_html"]
    f = fetch(m, url(m, "malformed_html", "/malformed.html"))
    assert b"\x00" in f.body and f.body.rstrip().endswith(b"<a href=\"/in-open-comment.html\">x</a>")
    doc = etree.fromstring(f.body, etree.HTMLParser(recover=True, remove_comments=True))
    found = {canon(a.get("href"), url(m, "malformed_html", "/malformed.html")) for a in doc.xpath("//a[@href]")}
    found = {u for u in found if u}
    assert set(mh["requested"]) - {url(m, "malformed_html", p) for p in ("/", "/malformed.html")} <= found
    assert not found & set(mh["not_requested"])
    # many links: 100,000 distinct links, each leaf answers, the next index does not
    f = fetch(m, url(m, "many_links", "/"))
    hrefs = re.findall(rb'href="([^"]+)"', f.body)
    assert len(hrefs) == len(set(hrefs)) == 100_000
    assert fetch(m, url(m, "many_links", "/l/99999.html")).status == 200
    assert fetch(m, url(m, "many_links", "/l/100000.html")).status == 404
    assert fetch(m, url(m, "many_links", "/l/007.html")).status == 404


# ----------------------------------------------------------------------------- traps

def _links(body: bytes, base: str) -> list[str]:
    return [canonical(h.decode(), base) for h in re.findall(rb'href="([^"]+)"', body)]


def test_traps_keep_producing_new_links(hweb, hsrv):
    d, m = hweb
    srv, _ = hsrv
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)

    def get(u):
        h, p = split_url(u)
        conn.request("GET", p, headers={"Host": h})
        r = conn.getresponse()
        return r.status, r.read()

    # calendar: follow "next day" 500 times (over a year end and 29 February 2028), then go back
    u = m["hostile"]["trap_calendar"]["urls"][0]
    assert u.endswith("/cal/2026/11/22")
    seen = {u}
    for _ in range(500):
        st, body = get(u)
        assert st == 200
        links = _links(body, u)
        u = links[-1]
        assert u not in seen
        seen.add(u)
    assert any(x.endswith("/cal/2027/01/01") for x in seen) and any(x.endswith("/cal/2028/02/29") for x in seen)
    assert get(url(m, "trap_calendar", "/cal/2027/02/29"))[0] == 404
    assert get(url(m, "trap_calendar", "/cal/2026/11/5"))[0] == 404
    st, body = get(url(m, "trap_calendar", "/cal/0001/01/01"))
    assert st == 200 and len(_links(body, u)) == 1
    st, body = get(url(m, "trap_calendar", "/cal/99999/12/31"))
    assert st == 200 and _links(body, u)[-1].endswith("/cal/100000/01/01")
    # path repetition: every level links one deeper, forever
    u = m["hostile"]["trap_repeat"]["urls"][0]
    for depth in range(1, 60):
        st, body = get(u)
        assert st == 200
        (nxt,) = _links(body, u)
        assert nxt == u + "a/"
        u = nxt
    assert get(url(m, "trap_repeat", "/a/b/"))[0] == 404
    # session ids: every link is new, every time
    u = m["hostile"]["trap_session"]["urls"][0]
    seen = set()
    for _ in range(40):
        st, body = get(u)
        assert st == 200
        links = _links(body, u)
        assert len(links) == 5 and not set(links) & seen
        seen |= set(links)
        u = links[0]
    conn.close()


# ----------------------------------------------------------------------------- robots.txt

def test_robots_variants(hweb, hsrv):
    from protego import Protego

    d, m = hweb
    rb = lambda mode: url(m, mode, "/robots.txt")  # noqa: E731
    f = fetch(m, rb("robots_huge"))
    assert f.status == 200 and f.nbytes >= MiB and f.nbytes == len(robots_huge_text(MiB))
    full = f.body
    assert full.startswith(b"# a very large robots.txt\nUser-agent: *\nDisallow: /early/\n")
    assert full.endswith(b"Disallow: /late/\n")
    rp = Protego.parse(full.decode())
    assert not rp.can_fetch(url(m, "robots_huge", "/early/x.html"), "abc-crawler")
    assert rp.can_fetch(url(m, "robots_huge", "/p1.html"), "abc-crawler")
    f = fetch(m, rb("robots_garbage"))
    assert f.status == 200 and f.nbytes == 65536 and b"\x00" in f.body
    with pytest.raises(UnicodeDecodeError):
        f.body.decode("utf-8")
    rp = Protego.parse(f.body.decode("utf-8", "replace"))
    assert all(rp.can_fetch(u, "abc-crawler") for u in m["hostile"]["robots_garbage"]["requested"])
    f = fetch(m, rb("robots_5xx"))
    assert f.status == 503
    f = fetch(m, rb("robots_redirect"))
    assert f.status == 301 and f.header("Location") == "/robots-moved.txt"
    f = fetch(m, url(m, "robots_redirect", "/robots-moved.txt"))
    assert f.status == 200 and f.body == b"User-agent: *\nDisallow: /private/\n"
    f = fetch(m, rb("robots_redirect_host"))
    assert f.status == 301 and f.header("Location") == "http://robots.elsewhere.example/robots.txt"
    assert f.header("Location") in m["expected_hostile"]["out_of_scope_links"]
    f = fetch(m, rb("robots_stall"), timeout=0.8)
    assert f.status == 200 and f.error == pycurl.E_OPERATION_TIMEDOUT
    # the pages behind those robots.txt are ordinary
    for mode in ("robots_huge", "robots_garbage", "robots_5xx", "robots_redirect", "robots_stall"):
        assert fetch(m, url(m, mode, "/")).status == 200
        assert fetch(m, url(m, mode, "/p1.html")).status == 200
    # other hostile hosts have no robots.txt (404: allow all)
    assert fetch(m, url(m, "drip", "/robots.txt")).status == 404


# ----------------------------------------------------------------------------- tripwire

def test_tripwire_records_connections():
    with Tripwire("127.0.0.2", 0, max_seconds=20) as tw:
        assert not tw.touched
        tw.assert_untouched()
        with socket.create_connection(("127.0.0.2", tw.port), timeout=2) as s:
            s.sendall(b"GET /secret HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(10) == b""   # closed without an answer
        with socket.create_connection(("127.0.0.2", tw.port), timeout=2):
            pass
    assert tw.touched and len(tw.hits) == 2           # final once stopped: no wait
    assert tw.hits[0]["data"].startswith(b"GET /secret") and tw.hits[0]["peer"][0] == "127.0.0.1"
    with pytest.raises(AssertionError, match="touched 2"):
        tw.assert_untouched()
    with pytest.raises(OSError):          # stopped: nobody listens any more
        socket.create_connection(("127.0.0.2", tw.port), timeout=1)
    with pytest.raises(ValueError, match="loopback"):
        Tripwire("10.0.0.1", 80)
    # stops by itself
    tw = Tripwire("127.0.0.1", 0, max_seconds=0.2).start()
    assert tw.wait(30)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", tw.port), timeout=1)
    tw.stop()


# ----------------------------------------------------------------------------- per-host switches

def test_modes_switch_any_host_of_a_normal_web(tmp_path):
    """routes.json "modes" turns hosts of an ordinary web hostile; other hosts stay as they were."""
    w = tmp_path / "w"
    m = generate_web(w, n_hosts=3, n_pages=12, seed=1, port=free_port(), features=False)
    routes = json.loads((w / "routes.json").read_text())
    routes["modes"] = {
        "h001.test": {"robots": "5xx", "all": {"status": 503, "headers": {"Retry-After": "7"}}},
        "h002.test": {"all": "flaky", "robots": "garbage"},
        "h000.test": {"prefix": {"/cal/": {"dynamic": "calendar"}}, "default": {"status": 410}},
    }
    (w / "routes.json").write_text(json.dumps(routes))
    with TestWebServer(w, max_seconds=20, latency=0.01) as srv:
        def get(h, p):
            return raw(srv.port, h, p)

        head, body, _ = get("h001.test", "/robots.txt")
        assert head.startswith(b"HTTP/1.1 503")
        head, body, _ = get("h001.test", "/")
        assert head.startswith(b"HTTP/1.1 503") and b"Retry-After: 7" in head
        assert get("h002.test", "/")[0].startswith(b"HTTP/1.1 503")
        assert get("h002.test", "/")[0].startswith(b"HTTP/1.1 503")
        head, body, _ = get("h002.test", "/")
        assert head.startswith(b"HTTP/1.1 200") and body == (w / "sites/h002.test/index.html").read_bytes()
        assert len(get("h002.test", "/robots.txt")[1]) == 65536
        head, body, _ = get("h000.test", "/")
        assert head.startswith(b"HTTP/1.1 200") and body == (w / "sites/h000.test/index.html").read_bytes()
        assert get("h000.test", "/nope.html")[0].startswith(b"HTTP/1.1 410")
        assert get("h000.test", "/cal/2026/01/31")[0].startswith(b"HTTP/1.1 200")
        assert b"/cal/2026/02/01" in get("h000.test", "/cal/2026/01/31")[1]
        assert get("h000.test", "/robots.txt")[0].startswith(b"HTTP/1.1 404")
        # pipelined requests around a generated response on one connection, in order
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: h000.test\r\n\r\n"
                      b"GET /cal/2026/03/01 HTTP/1.1\r\nHost: h000.test\r\n\r\n"
                      b"HEAD /cal/2026/03/02 HTTP/1.1\r\nHost: h000.test\r\n\r\n"
                      b"GET /nope HTTP/1.1\r\nHost: h000.test\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                c = s.recv(65536)
                if not c:
                    break
                data += c
        assert [x.split(b" ")[1] for x in re.findall(rb"HTTP/1\.1 \d+ ", data)] == [b"200", b"200", b"200", b"410"]
    assert m["hosts"] == ["h000.test:%d" % m["port"], "h001.test:%d" % m["port"], "h002.test:%d" % m["port"]]
    for bad in ({"h000.test": {"bogus": 1}}, {"h000.test": {"all": "nope"}},
                {"h000.test": {"prefix": {"/x/": {"dynamic": "nope"}}}},
                {"h000.test": {"default": {"transport": "teleport"}}}):
        routes["modes"] = bad
        (w / "routes.json").write_text(json.dumps(routes))
        with pytest.raises(ServerError, match="routes.json"):
            TestWebServer(w, max_seconds=5).start()
