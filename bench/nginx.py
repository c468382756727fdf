"""nginx on loopback for the benchmarks: a generated config in a temp prefix, as a context manager.

    .venv/bin/python bench/nginx.py serve WEB_DIR [--port P] [--access-log F] [--delay S] [--limit-rate R]
                                               [--workers N] [--max-seconds T]
    .venv/bin/python bench/nginx.py check WEB_DIR      # every manifest URL answered as the generator says
    .venv/bin/python bench/nginx.py conf WEB_DIR       # print the generated nginx.conf

``WEB_DIR`` is either a web made by ``abc-testweb generate`` (``routes.json``
with ``static_fallback: false``) or a static layout like the one
``bench/corpus.py`` writes (``sites/<host>`` symlinks into /usr/share/doc and
``routes.json`` with ``static_fallback: true`` and ``prefix_redirects``): the
same directory format the embedded server (``abc-testweb serve``) reads, so
both servers answer the same requests the same way.

What the config does
--------------------
* one ``server`` block per host (``server_name`` = the host name without port),
  all on ``ADDR:PORT`` (the manifest's, or ``--port``); an unknown ``Host``
  gets 404 from a ``default_server``;
* generated web: one exact-match ``location = "/path"`` per route of
  ``routes.json`` — ``alias`` to ``sites/<host>/<file>`` with the route's exact
  ``Content-Type`` (``types {}`` + ``default_type``), ``return 301|302|307|308
  "<Location>";`` for redirects (``absolute_redirect off`` keeps relative
  Locations as generated), ``return 500;`` for error routes; routes with a
  query (``/search.html?a=1&b=2``) are matched on ``$args`` and rewritten to an
  ``internal`` location; everything else is 404 (``location / { return 404; }``);
* static layout: ``root sites/<host>``, ``disable_symlinks off`` (Debian's doc
  packages symlink into /usr/share/javascript), ``index index.html``,
  ``gzip_static always`` + ``gunzip on`` (``x.html.gz`` on disk is served
  decompressed as ``x.html``, as Python's docs need), and each prefix redirect
  as ``location ^~ PREFIX`` answering ``301 TARGET + rest of $request_uri``;
* keep-alive (``keepalive_requests`` 1,000,000, ``keepalive_timeout`` 65 s),
  ``sendfile``, an ``open_file_cache``, access log off unless asked; with
  ``access_log`` it is one JSON object per request (``escape=json``; ``sent`` and ``received``: the
  bytes of the whole response and request, heads included) with
  ``$msec`` and ``$request_time`` (:func:`read_access_log` turns those into the
  ``t_start``/``t_end`` fields ``tests/crawlcheck.py`` uses), the connection
  id and serial, and the ``X-ABC-Rank`` header;
* ``limit_rate`` (bytes/s per connection) when asked.

Latency: nginx (nginx-light: no ``echo``/``njs`` module) cannot hold a
response back for a fixed time — ``limit_rate`` throttles bandwidth, so the
added time would depend on the page size. ``delay=S`` therefore puts a tiny
asyncio TCP relay (:func:`delay_proxy`, its own process) on the public port in
front of nginx: it holds every chunk the client sends (a request: curl does
not pipeline) for S seconds before passing it on, so every request takes S
longer, whatever its size. The relay copies response bytes in Python: it costs
CPU (measured in bench/scaling.py) and is counted as server CPU.

Lifetime: nginx runs in the foreground (``daemon off``) under coreutils
``timeout --kill-after=5 MAX_SECONDS``, so it stops by itself even if this
process is killed; leaving the ``with`` block sends SIGTERM and waits. Only
127.0.0.0/8 addresses are accepted.
"""
from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["Nginx", "serve", "build_config", "read_access_log", "nginx_version", "proc_tree_cpu", "delay_proxy"]

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
MIME_TYPES = "/etc/nginx/mime.types"

_LOG_FORMAT = ("'{\"t_end\":$msec,\"request_time\":$request_time,\"conn\":$connection,"
               "\"req\":$connection_requests,\"method\":\"$request_method\",\"host\":\"$host\","
               "\"path\":\"$request_uri\",\"status\":$status,\"bytes\":$body_bytes_sent,\"sent\":$bytes_sent,"
               "\"received\":$request_length,"
               "\"rank\":\"$http_x_abc_rank\"}'")


class NginxError(RuntimeError):
    pass


def nginx_version() -> str:
    try:
        r = subprocess.run([NGINX, "-v"], capture_output=True, text=True, timeout=10)
    except OSError:
        return "not installed"
    return (r.stderr or r.stdout).strip().split("/", 1)[-1]


def _q(s: str, tail: str = "") -> str:
    """An nginx double-quoted string (+ ``tail``, e.g. ``$1``, appended raw); ``$`` in ``s`` is refused
    (it would be a variable in return/alias)."""
    if "$" in s or "\n" in s:
        raise NginxError(f"cannot put {s!r} into nginx.conf")
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + tail + '"'


def _q_regex(rx: str) -> str:
    if '"' in rx or "\n" in rx:
        raise NginxError(f"cannot put regex {rx!r} into nginx.conf")
    return '"' + rx + '"'


def _check_loopback(addr: str) -> None:
    if not ipaddress.ip_address(addr).is_loopback:
        raise NginxError(f"{addr} is not a loopback address (127.0.0.0/8)")


def _hosts(web: Path, routes: dict) -> list[str]:
    hosts = set(h.lower() for h in routes.get("hosts", {})) | set(h.lower() for h in routes.get("prefix_redirects", {}))
    sites = web / "sites"
    if sites.is_dir():
        hosts |= {p.name.lower() for p in sites.iterdir() if p.is_dir()}
    return sorted(hosts)


def _route_locations(host: str, sites: Path, table: dict) -> list[str]:
    """Exact-match locations for one host's routes (generated web)."""
    out: list[str] = []
    by_path: dict[str, dict[str, dict]] = {}
    for target, route in table.items():
        path, _, query = target.partition("?")
        by_path.setdefault(path, {})[query] = route
    n_internal = 0

    def body(route: dict) -> str:
        status = int(route.get("status", 200))
        f = route.get("file")
        if f is not None:
            ctype = route.get("type") or "application/octet-stream"
            return f"default_type {_q(ctype)}; alias {_q(str(sites / host / f))};"
        if 300 <= status < 400 and route.get("location") is not None:
            return f"return {status} {_q(route['location'])};"
        return f"return {status};"

    for path in sorted(by_path):
        variants = by_path[path]
        lines = []
        for query in sorted(q for q in variants if q):
            name = f"/@abc-q/{n_internal}"
            n_internal += 1
            lines.append(f"if ($args = {_q(query)}) {{ rewrite ^ {name} last; }}")
            out.append(f"location = {name} {{ internal; {body(variants[query])} }}")
        plain = variants.get("")
        if lines:
            lines.append('if ($args != "") { return 404; }')
            if plain is not None and path.endswith("/") and plain.get("file") is not None:
                name = f"/@abc-q/{n_internal}"
                n_internal += 1
                out.append(f"location = {name} {{ internal; {body(plain)} }}")
                lines.append(f"rewrite ^ {name} last;")
            else:
                lines.append(body(plain) if plain is not None else "return 404;")
        elif plain is not None and path.endswith("/") and plain.get("file") is not None:
            # nginx treats a URI ending in "/" as a directory (index module): go through a file location
            name = f"/@abc-q/{n_internal}"
            n_internal += 1
            out.append(f"location = {name} {{ internal; {body(plain)} }}")
            lines.append(f"rewrite ^ {name} last;")
        elif plain is not None:
            lines.append(body(plain))
        out.append(f"location = {_q(path)} {{ {' '.join(lines)} }}")
    out.append("location / { return 404; }")
    return out


def build_config(web_dir, prefix, *, addr: str = "127.0.0.1", port: int, access_log: str | None = None,
                 limit_rate: int | None = None, workers: int = 1) -> str:
    """The nginx.conf text serving ``web_dir`` (see the module docstring)."""
    web = Path(web_dir).resolve()
    prefix = Path(prefix)
    routes_file = web / "routes.json"
    routes = json.loads(routes_file.read_text()) if routes_file.exists() else {}
    static = bool(routes.get("static_fallback", True))
    hosts = _hosts(web, routes)
    if not hosts:
        raise NginxError(f"{web}: no hosts (no routes.json hosts and no sites/<host> folders)")
    sites = web / "sites"
    listen = f"{addr}:{port}"
    user = "user root;" if os.geteuid() == 0 else ""
    log = (f"log_format abcjson escape=json {_LOG_FORMAT};\n    access_log {_q(str(access_log))} abcjson "
           "buffer=256k flush=1s;" if access_log else "access_log off;")
    rate = f"limit_rate {int(limit_rate)};" if limit_rate else ""
    servers = []
    for host in hosts:
        lines = [f"listen {listen};", f"server_name {host};"]
        if static:
            lines += [f"root {_q(str(sites / host))};", "index index.html;", "disable_symlinks off;",
                      "gzip_static always;", "gunzip on;"]
            for pfx, dest in sorted(routes.get("prefix_redirects", {}).get(host, {}).items(), key=lambda kv: -len(kv[0])):
                rx = "^" + re.escape(pfx) + "(.*)$"
                lines.append(f"location ^~ {_q(pfx)} {{ if ($request_uri ~ {_q_regex(rx)}) {{ return 301 {_q(dest, '$1')}; }} "
                             "return 404; }")
            table = routes.get("hosts", {}).get(host)
            if table:
                lines += _route_locations(host, sites, table)[:-1]
            lines.append("location / { }")
        else:
            lines.append("types { }")
            lines += _route_locations(host, sites, routes.get("hosts", {}).get(host, {}))
        servers.append("  server {\n    " + "\n    ".join(lines) + "\n  }")
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = 65536 if hard == resource.RLIM_INFINITY else min(65536, hard)
    conns = max(256, min(8192, nofile // 4))
    fcache = max(64, nofile - 2 * conns - 256)      # cached fds must leave room for connections
    tmp = {k: prefix / "tmp" / k for k in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    return f"""# generated by bench/nginx.py for {web}
{user}
worker_processes {int(workers)};
worker_rlimit_nofile {nofile};
pid {_q(str(prefix / 'nginx.pid'))};
error_log {_q(str(prefix / 'error.log'))} warn;
events {{ worker_connections {conns}; multi_accept on; }}
http {{
    include {MIME_TYPES};
    default_type application/octet-stream;
    {log}
    {rate}
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_timeout 65s; keepalive_requests 1000000;
    server_tokens off; absolute_redirect off;
    server_names_hash_max_size 16384; server_names_hash_bucket_size 128;
    open_file_cache max={fcache} inactive=600s; open_file_cache_valid 600s; open_file_cache_errors on;
    client_body_temp_path {_q(str(tmp['body']))}; proxy_temp_path {_q(str(tmp['proxy']))};
    fastcgi_temp_path {_q(str(tmp['fastcgi']))}; uwsgi_temp_path {_q(str(tmp['uwsgi']))};
    scgi_temp_path {_q(str(tmp['scgi']))};
  server {{ listen {listen} default_server; server_name _; return 404; }}
{chr(10).join(servers)}
}}
"""


def _port_free(addr: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
        except OSError:
            return False
    return True


def free_port(addr: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def _wait_port(addr: str, port: int, proc: subprocess.Popen, what: str, deadline_s: float = 20.0) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        if proc.poll() is not None:
            raise NginxError(f"{what} exited with status {proc.returncode} before listening")
        try:
            with socket.create_connection((addr, port), timeout=0.2):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise NginxError(f"{what} did not listen on {addr}:{port} within {deadline_s} s")
        time.sleep(0.02)


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(p.name))
    return out


def proc_tree_cpu(pid: int) -> float:
    """User+system CPU seconds of ``pid`` and all its live descendants (Linux /proc)."""
    tck = os.sysconf("SC_CLK_TCK")
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tck
        todo += _children(p)
    return total


class Nginx:
    """A running nginx (and optional delay relay); use :func:`serve`."""

    def __init__(self, web_dir, *, addr: str = "127.0.0.1", port: int | None = None, access_log: str | None = None,
                 limit_rate: int | None = None, delay: float = 0.0, workers: int = 1, max_seconds: float = 3600):
        _check_loopback(addr)
        self.web = Path(web_dir).resolve()
        if port is None:
            man = self.web / "manifest.json"
            if not man.exists():
                raise NginxError(f"{self.web}: no manifest.json: give the port")
            port = int(json.loads(man.read_text())["port"])
        self.addr, self.port = addr, int(port)
        self.access_log = str(Path(access_log).resolve()) if access_log else None
        self.limit_rate, self.delay, self.workers, self.max_seconds = limit_rate, delay, workers, max_seconds
        self.prefix: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.relay: subprocess.Popen | None = None
        self.nginx_port = self.port

    def start(self) -> "Nginx":
        if not Path(NGINX).exists():
            raise NginxError("nginx is not installed (apt-get install -y nginx-light)")
        if not _port_free(self.addr, self.port):
            raise NginxError(f"{self.addr}:{self.port} is in use")
        self.prefix = Path(tempfile.mkdtemp(prefix="abc-nginx-"))
        for k in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.prefix / "tmp" / k).mkdir(parents=True)
        if self.delay > 0:
            self.nginx_port = free_port(self.addr)
        conf = build_config(self.web, self.prefix, addr=self.addr, port=self.nginx_port, access_log=self.access_log,
                            limit_rate=self.limit_rate, workers=self.workers)
        (self.prefix / "nginx.conf").write_text(conf)
        test = subprocess.run([NGINX, "-t", "-q", "-p", str(self.prefix), "-c", str(self.prefix / "nginx.conf")],
                              capture_output=True, text=True, timeout=60)
        if test.returncode != 0:
            raise NginxError(f"nginx -t failed: {test.stderr.strip()[-2000:]}")
        cmd = ["timeout", "--kill-after=5", str(int(self.max_seconds)), NGINX, "-p", str(self.prefix),
               "-c", str(self.prefix / "nginx.conf"), "-g", "daemon off;"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
        try:
            _wait_port(self.addr, self.nginx_port, self.proc, "nginx")
            if self.delay > 0:
                self.relay = subprocess.Popen(
                    ["timeout", "--kill-after=5", str(int(self.max_seconds)), sys.executable, str(Path(__file__).resolve()),
                     "delay-proxy", "--listen", f"{self.addr}:{self.port}", "--upstream", f"{self.addr}:{self.nginx_port}",
                     "--delay", str(self.delay)], stdin=subprocess.DEVNULL)
                _wait_port(self.addr, self.port, self.relay, "delay relay")
        except BaseException:
            self.stop()
            raise
        return self

    def cpu_seconds(self) -> float:
        """CPU seconds used so far by nginx (master + workers) and the relay."""
        total = 0.0
        for p in (self.proc, self.relay):
            if p is not None and p.poll() is None:
                total += proc_tree_cpu(p.pid) - _self_cpu(p.pid)   # the `timeout` wrapper itself is ~0
        return total

    def stop(self) -> None:
        for p in (self.relay, self.proc):
            if p is None:
                continue
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)      # timeout(1) passes it on to nginx / the relay
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.proc = self.relay = None
        if self.prefix is not None:
            shutil.rmtree(self.prefix, ignore_errors=True)
            self.prefix = None

    def __enter__(self) -> "Nginx":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _self_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def serve(web_dir, **kw):
    """``with serve(web) as ng:`` nginx serving ``web`` on ``ng.addr:ng.port`` for the block."""
    ng = Nginx(web_dir, **kw)
    ng.start()
    try:
        yield ng
    finally:
        ng.stop()


def read_access_log(path) -> list[dict]:
    """Rows of a JSON access log, with ``t_start``/``t_end`` (seconds) and ``rank`` (int, -1 if absent)."""
    rows = []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            r["t_end"] = float(r["t_end"])
            r["t_start"] = r["t_end"] - float(r["request_time"])
            try:
                r["rank"] = int(r["rank"])
            except (TypeError, ValueError):
                r["rank"] = -1
            rows.append(r)
    return rows


# -- the delay relay ---------------------------------------------------------------------------

def delay_proxy(listen: str, upstream: str, delay: float) -> None:
    """Relay TCP from ``listen`` to ``upstream``, holding every client chunk ``delay`` seconds."""
    import asyncio

    la, lp = listen.rsplit(":", 1)
    ua, up = upstream.rsplit(":", 1)
    _check_loopback(la)
    _check_loopback(ua)

    async def pump(reader, writer, hold: float) -> None:
        try:
            while True:
                data = await reader.read(262144)
                if not data:
                    break
                if hold:
                    await asyncio.sleep(hold)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def handle(cr, cw) -> None:
        try:
            ur, uw = await asyncio.open_connection(ua, int(up))
        except OSError:
            cw.close()
            return
        await asyncio.gather(pump(cr, uw, delay), pump(ur, cw, 0.0))

    async def main() -> None:
        srv = await asyncio.start_server(handle, la, int(lp), backlog=4096, reuse_address=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, stop.set)
        async with srv:
            await stop.wait()

    asyncio.run(main())


# -- CLI ---------------------------------------------------------------------------------------

def _check(web_dir: str, **kw) -> int:
    """Fetch every URL of a generated web's manifest through nginx; compare status, type, Location, size."""
    import pycurl

    web = Path(web_dir)
    man = json.loads((web / "manifest.json").read_text())
    pages = man["pages"]
    bad = 0
    with serve(web, **kw):
        c = pycurl.Curl()
        c.setopt(pycurl.RESOLVE, man["resolve"])
        c.setopt(pycurl.FOLLOWLOCATION, 0)
        c.setopt(pycurl.TIMEOUT, 10)
        for url, p in sorted(pages.items()):
            buf = bytearray()
            hdr: list[bytes] = []
            c.setopt(pycurl.URL, url)
            c.setopt(pycurl.WRITEFUNCTION, buf.extend)
            c.setopt(pycurl.HEADERFUNCTION, hdr.append)
            c.perform()
            status = c.getinfo(pycurl.RESPONSE_CODE)
            heads = {}
            for h in hdr:
                k, sep, v = h.decode("latin-1").partition(":")
                if sep:
                    heads[k.strip().lower()] = v.strip()
            problems = []
            if status != p["status"]:
                problems.append(f"status {status} != {p['status']}")
            if p.get("location") is not None and heads.get("location") != p["location"]:
                problems.append(f"location {heads.get('location')!r} != {p['location']!r}")
            if p["status"] == 200:
                if p.get("content_type") and heads.get("content-type", "").split(";")[0] != p["content_type"]:
                    problems.append(f"type {heads.get('content-type')!r} != {p['content_type']!r}")
                if p.get("bytes") and len(buf) != p["bytes"]:
                    problems.append(f"bytes {len(buf)} != {p['bytes']}")
            if problems:
                bad += 1
                if bad <= 10:
                    print(f"{url}: {'; '.join(problems)}")
        c.close()
    print(f"{len(pages)} URLs checked against manifest.json, {bad} differ")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("serve", "check", "conf"):
        s = sub.add_parser(name)
        s.add_argument("web_dir")
        s.add_argument("--addr", default="127.0.0.1")
        s.add_argument("--port", type=int, default=None, help="default: the manifest's")
        s.add_argument("--access-log")
        s.add_argument("--limit-rate", type=int, default=None, help="bytes/s per connection")
        s.add_argument("--delay", type=float, default=0.0, help="seconds added to every request (delay relay)")
        s.add_argument("--workers", type=int, default=1)
        s.add_argument("--max-seconds", type=float, default=600.0, help="nginx stops by itself after this")
    d = sub.add_parser("delay-proxy")
    d.add_argument("--listen", required=True)
    d.add_argument("--upstream", required=True)
    d.add_argument("--delay", type=float, required=True)
    a = ap.parse_args(argv)
    if a.cmd == "delay-proxy":
        delay_proxy(a.listen, a.upstream, a.delay)
        return 0
    kw = dict(addr=a.addr, port=a.port, access_log=a.access_log, limit_rate=a.limit_rate, delay=a.delay,
              workers=a.workers, max_seconds=a.max_seconds)
    if a.cmd == "conf":
        port = a.port or int(json.loads((Path(a.web_dir) / "manifest.json").read_text())["port"])
        print(build_config(a.web_dir, "/tmp/PREFIX", addr=a.addr, port=port, access_log=a.access_log,
                           limit_rate=a.limit_rate, workers=a.workers))
        return 0
    if a.cmd == "check":
        return _check(a.web_dir, **kw)
    with serve(a.web_dir, **kw) as ng:
        print(f"nginx {nginx_version()} serving {a.web_dir} on {ng.addr}:{ng.port} (prefix {ng.prefix}); "
              f"stops after {a.max_seconds:.0f} s or on Ctrl-C", flush=True)
        try:
            ng.proc.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
