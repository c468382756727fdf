"""The fetcher against real sockets on loopback: the address rule where libcurl connects, what every
request sends, TLS verification and its failures by kind, proxies (HTTP and CONNECT)."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from abc_crawler.net.addresses import AddressPolicy
from abc_crawler.net.fetcher import Fetcher
from abc_crawler.net.proxies import ProxySettings
from abc_crawler.web.scope import Scope
from abc_crawler.testweb.generator import generate_web
from abc_crawler.testweb.proxy import ForwardProxy
from abc_crawler.testweb.server import TestWebServer
from abc_crawler.net.tls import CaBundle, load_ca_bundle
from crawlcheck import free_port, read_log
from tlscerts import make_certs, openssl_missing


def _fetch(f: Fetcher, urls: list[str], seconds: float = 15) -> dict:
    for i, u in enumerate(urls):
        f.submit(i, u)
    out = {}
    deadline = time.monotonic() + seconds
    while len(out) < len(urls) and time.monotonic() < deadline:
        for r in f.poll(0.05):
            out[r.key] = r
    f.close()
    assert len(out) == len(urls), "requests did not finish"
    return {urls[k]: r for k, r in out.items()}


def _fetcher(scope, **kw) -> Fetcher:
    return Fetcher(scope=scope, user_agent="abc-crawler/test", timeout=10, connect_timeout=5,
                   max_body_bytes=1 << 20, **kw)


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("web")
    port = free_port()
    m = generate_web(d, n_hosts=2, n_pages=10, seed=5, port=port, robots_frac=0.0)
    return d, m


def test_the_address_rule_is_applied_where_libcurl_connects(web, tmp_path):
    d, m = web
    log = tmp_path / "log"
    host = m["hosts"][0]
    with TestWebServer(d, port=m["port"], access_log=log) as srv:
        url = f"http://{host}/"
        lines = [f"{host}:127.0.0.1"]
        # the name "resolves" (here: curl's RESOLVE) to loopback: refused at connect, nothing sent
        refused = _fetch(_fetcher(Scope.from_lines(lines), addresses=AddressPolicy()), [url])[url]
        assert refused.error == "address_refused" and "loopback address 127.0.0.1" in refused.error_detail
        assert srv.stats()["requests"] == 0
        # the controls: the same request goes through with the address listed, or private allowed
        for policy in (AddressPolicy(allowed=["127.0.0.1"]), AddressPolicy(allow_private=True), None):
            ok = _fetch(_fetcher(Scope.from_lines(lines), addresses=policy), [url])[url]
            assert ok.error is None and ok.status == 200
        deadline = time.monotonic() + 5
        while srv.stats()["requests"] < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.stats()["requests"] == 3


def test_ip_literals_and_localhost_are_refused_before_any_transfer(web):
    d, m = web
    with TestWebServer(d, port=m["port"]) as srv:
        urls = [f"http://127.0.0.1:{m['port']}/", f"http://localhost:{m['port']}/", f"http://[::1]:{m['port']}/",
                "http://169.254.169.254/latest/meta-data/", f"http://2130706433:{m['port']}/"]
        from abc_crawler.web.urls import canonicalize
        urls = [canonicalize(u) for u in urls]
        res = _fetch(_fetcher(Scope(), addresses=AddressPolicy()), urls)
        assert {u: r.error for u, r in res.items()} == {u: "address_refused" for u in urls}
        assert srv.stats()["requests"] == 0


def test_what_every_request_sends():
    heads: list[bytes] = []
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]

    def serve():
        for _ in range(2):
            c, _ = srv.accept()
            data = b""
            while b"\r\n\r\n" not in data:
                data += c.recv(4096)
            heads.append(data)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    scope = Scope.from_lines([f"a.test:{port}:127.0.0.1"])
    url = f"http://a.test:{port}/"
    _fetch(_fetcher(scope, contact="ops@example.org"), [url])
    _fetch(_fetcher(scope, rank_header=True, rank=3), [url])
    t.join(5)
    srv.close()
    first = heads[0].decode().lower()
    assert "accept-encoding: gzip, deflate\r\n" in first and "from: ops@example.org\r\n" in first
    assert "x-abc-rank" not in first                       # only with the test hook
    assert "x-abc-rank: 3\r\n" in heads[1].decode().lower() and "from:" not in heads[1].decode().lower()


@pytest.fixture(scope="module")
def certs(tmp_path_factory, web):
    why = openssl_missing()
    if why:
        pytest.skip(why)
    _, m = web
    names = [h.split(":")[0] for h in m["hosts"]]
    return make_certs(tmp_path_factory.mktemp("certs"), names)


def test_tls_is_verified_and_failures_are_counted_by_kind(web, certs, tmp_path):
    d, m = web
    host = m["hosts"][0].split(":")[0]
    with TestWebServer(d, port=m["port"], tls=(str(certs.cert), str(certs.key))) as srv:
        tp = srv.tls_port
        scope = Scope.from_lines([f"{host}:{tp}:127.0.0.1", f"other.test:{tp}:127.0.0.1"])
        url, wrong = f"https://{host}:{tp}/", f"https://other.test:{tp}/"
        ok = _fetch(_fetcher(scope, ca=load_ca_bundle(str(certs.ca))), [url, wrong])
        assert ok[url].error is None and ok[url].status == 200
        assert ok[wrong].error == "tls_hostname_mismatch"
        system = _fetch(_fetcher(scope, ca=load_ca_bundle(None)), [url])[url]
        assert system.error == "tls_unknown_issuer"
        other_ca = make_certs(tmp_path / "other", [host], ca_name="another CA")
        assert _fetch(_fetcher(scope, ca=load_ca_bundle(str(other_ca.ca))), [url])[url].error == "tls_unknown_issuer"


def test_a_bad_ca_bundle_is_refused_with_its_name(tmp_path):
    from abc_crawler.exceptions import ConfigError

    f = tmp_path / "ca.pem"
    f.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match=f"ca-bundle: {f}: no PEM certificate"):
        load_ca_bundle(str(f))
    f.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    with pytest.raises(ConfigError, match="not a usable PEM bundle"):
        load_ca_bundle(str(f))


def test_requests_go_through_the_proxy_and_only_the_proxy(web, certs, tmp_path):
    d, m = web
    host = m["hosts"][0].split(":")[0]
    slog, plog = tmp_path / "server.log", tmp_path / "proxy.log"
    with TestWebServer(d, port=m["port"], access_log=slog, tls=(str(certs.cert), str(certs.key))) as srv:
        tp = srv.tls_port
        resolve = [f"{host}:{m['port']}:127.0.0.1", f"{host}:{tp}:127.0.0.1"]
        with ForwardProxy(resolve=resolve, access_log=plog) as proxy:
            px = ProxySettings.from_value(f"http://127.0.0.1:{proxy.port}")
            # no resolve list, no hosts entry: the crawler never resolves the name, the proxy does
            urls = [f"http://{host}:{m['port']}/", f"https://{host}:{tp}/", f"http://127.0.0.1:{m['port']}/"]
            res = _fetch(_fetcher(Scope(), addresses=AddressPolicy(), proxies=px, ca=load_ca_bundle(str(certs.ca))),
                         urls)
            assert res[urls[0]].status == 200 and res[urls[1]].status == 200
            assert res[urls[2]].error == "address_refused"         # a refused literal is refused by name
            # a proxy that is not there: counted as such
            dead = ProxySettings.from_value(f"http://127.0.0.1:{free_port()}")
            down = _fetch(_fetcher(Scope(), proxies=dead), [urls[0]])[urls[0]]
            assert down.error == "proxy_connect_failed"
    time.sleep(0.6)
    prows, srows = read_log(plog), read_log(slog)
    # the proxy forwarded the http request and tunnelled the https one; the refused literal never reached it
    assert sorted((r["method"], r["host"], r["path"]) for r in prows) == [("CONNECT", host, ""), ("GET", host, "/")]
    assert len(srows) == 2 and {r["scheme"] for r in srows} == {"http", "https"}


def test_a_proxy_stopped_with_a_tunnel_open_ends_the_tunnel_in_its_loop(monkeypatch):
    """A CONNECT tunnel still open when the proxy stops is ended inside the proxy's loop: no
    coroutine is left to be collected after the loop closed (whose cleanup then raised into
    whatever ran next: an unraisable exception in a later test)."""
    import gc
    import sys

    raised = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: raised.append(u))
    upstream = socket.create_server(("127.0.0.1", 0))
    port = upstream.getsockname()[1]
    held = []
    try:
        with ForwardProxy(resolve=[f"up.test:{port}:127.0.0.1"]) as proxy:
            client = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            client.sendall(f"CONNECT up.test:{port} HTTP/1.1\r\nHost: up.test:{port}\r\n\r\n".encode())
            assert client.recv(4096).startswith(b"HTTP/1.1 200")
            conn, _ = upstream.accept()              # the tunnel is open, both ends idle
            held += [client, conn]
            client.sendall(b"ping")
            conn.settimeout(10)
            assert conn.recv(4) == b"ping"
        gc.collect()
        assert raised == []
    finally:
        for s in held:
            s.close()
        upstream.close()


def test_a_proxy_stopped_with_nothing_open_closes_its_loop_without_an_error(monkeypatch):
    import threading

    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda a: errors.append(a.exc_value))
    proxy = ForwardProxy().start()
    proxy.stop()
    assert errors == []
    assert proxy._loop.is_closed()


def test_no_proxy_sends_listed_hosts_direct():
    p = ProxySettings.from_value("env", {"http_proxy": "http://127.0.0.1:3128", "HTTPS_PROXY": "socks5h://127.0.0.1:1080",
                                         "NO_PROXY": "h001.test,.intranet.test", "HTTP_PROXY": "http://cgi.test:1"})
    assert p.for_url("http://h000.test:81/") == "http://127.0.0.1:3128"
    assert p.for_url("https://h000.test/") == "socks5h://127.0.0.1:1080"
    assert p.for_url("http://h001.test:81/") == "" and p.for_url("http://a.intranet.test/") == ""
    # HTTP_PROXY (upper case) is not read for http:// URLs, as curl does not
    assert ProxySettings.from_value("env", {"HTTP_PROXY": "http://cgi.test:1"}).for_url("http://a.test/") == ""
    assert ProxySettings.from_value("env", {"ALL_PROXY": "http://p.test:1"}).for_url("https://a.test/") == "http://p.test:1"
    assert ProxySettings.from_value("env", {"all_proxy": "http://p.test:1", "no_proxy": "*"}).for_url("http://a.test/") == ""
    assert ProxySettings.from_value(None).for_url("http://a.test/") == ""


def test_the_ranks_copy_of_the_ca_bundle_leaves_no_file_when_a_rank_is_killed(certs, tmp_path):
    """Each rank hands libcurl its copy of the CAs by file name; a rank ended by os._exit or a
    signal (MPI aborts do that) runs no atexit, so the copy must not be a file on disk."""
    import os
    import subprocess
    import sys

    code = ("import os, sys; from abc_crawler.net.tls import load_ca_bundle\n"
            f"b = load_ca_bundle({str(certs.ca)!r}); p = b.path()\n"
            "assert b.path() == p\n"
            "assert open(p, 'rb').read() == b.pem, 'the copy does not hold the bundle'\n"
            "print(p); sys.stdout.flush(); os._exit(0)\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TMPDIR": str(tmp)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("/proc/self/fd/")
    assert list(tmp.iterdir()) == []


def test_each_bundle_hands_libcurl_its_own_cas_even_when_an_earlier_one_was_freed(certs, tmp_path):
    """A bundle freed and a new one made at the same address (CPython reuses it at once) must not
    be given the freed bundle's file: the crawl would trust CAs it was never given. CI caught
    exactly this: the system's bundle verified a certificate of the test's own CA."""
    other = make_certs(tmp_path / "other", ["a.test"], ca_name="another CA")
    pems = [certs.ca.read_bytes(), other.ca.read_bytes()]
    for i in range(40):
        b = CaBundle(pems[i % 2], "test")
        with open(b.path(), "rb") as fh:
            assert fh.read() == pems[i % 2], f"round {i}: the file holds another bundle's CAs"
        del b
