"""``abc-testweb``: generate, serve and benchmark the local test web.

::

    abc-testweb generate OUT [--hosts N] [--pages N] [--seed S] [--addr A] [--port P] [--plain]
                             [--communities C [--community-locality L]] [--hostile all|MODE,MODE...]
    abc-testweb serve DIR [--access-log F] [--max-seconds T] [--ready-file F] [--addr A] [--port P] [--also-addr A,...]
                          [--tls-cert F --tls-key F [--tls-port P] [--https-redirect]]
    abc-testweb proxy [--addr A] [--port P] [--resolve FILE] [--access-log F] [--max-seconds T] [--ready-file F]
    abc-testweb exec DIR [--access-log F] [--max-seconds T] -- CMD ARGS...
    abc-testweb bench DIR [--connections N] [--seconds T] [--access-log F] [--uvloop]

``generate`` writes a synthetic web (format: ``docs/TESTWEB.md``); ``--port 0`` (the
default) picks a free port on ``--addr`` and bakes it into the web.  ``--plain``
turns all traps and errors off.  ``--communities C`` groups the hosts into C
communities whose cross-host links stay inside the community with probability
``--community-locality`` (default 0.9; see "Host communities" in
``docs/TESTWEB.md``; off by default, and then the web is unchanged).  ``--hostile`` adds hostile hosts
(``all``, or a comma-separated list of modes with their default parameters; see the table in
``docs/TESTWEB.md``).  It prints one summary line.

``serve`` serves DIR at the address and port of DIR/manifest.json (or
``--addr``/``--port``; without a manifest both are required) until SIGINT/SIGTERM
or ``--max-seconds`` (default 3600); ``--ready-file`` is written (JSON
``{"addr", "port", "pid"}``) once it listens.  ``--tls-cert``/``--tls-key``
also serve the web over TLS on ``--tls-port`` (``"tls_port"`` in the ready file);
``--https-redirect`` answers every plain request with a 301 to https.

``proxy`` runs a small HTTP forward proxy on loopback (absolute-form requests
and ``CONNECT``) for tests of ``abc-crawl --proxy``: it connects only to names
of ``--resolve`` (``HOST:PORT:ADDR`` lines) and to loopback literals, and logs
every request it forwards (:mod:`.proxy`).

``exec`` serves DIR while CMD runs, then stops, and exits with CMD's status
(128+N if CMD died of signal N, 124 if ``--max-seconds`` (default 3600) ran out
and CMD was terminated, 127 if CMD cannot be started).  SIGTERM is passed on
to CMD, and so is SIGINT unless it came from the terminal (which sends it to
CMD itself).  CMD gets ``ABC_TESTWEB_DIR``, ``ABC_TESTWEB_ADDR``,
``ABC_TESTWEB_PORT``, ``ABC_TESTWEB_SEEDS`` and ``ABC_TESTWEB_RESOLVE`` (paths of
seeds.txt / resolve.txt) in its environment.  Example (``make demo``)::

    abc-testweb exec web -- mpiexec -n 8 abc-crawl web/seeds.txt --resolve web/resolve.txt

``bench`` starts ``serve`` in a subprocess and fetches the web's pages with
pycurl ``CurlMulti`` (``--connections`` keep-alive handles) for ``--seconds``;
it prints requests/s and MB/s as JSON.

Errors (bad input, missing manifest, port in use, non-loopback address) exit
with status 2 and one line on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .server import ServerError, TestWebServer, check_loopback, run_server

__all__ = ["main", "free_port"]


class _Fail(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise _Fail(f"{self.prog}: {message}")


def free_port(addr: str = "127.0.0.1") -> int:
    """A port that is free on ``addr`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def _manifest(web_dir: str) -> dict:
    from .generator import load_manifest
    if not Path(web_dir).is_dir():
        raise _Fail(f"{web_dir}: no such directory")
    try:
        return load_manifest(web_dir)
    except FileNotFoundError:
        raise _Fail(f"{web_dir}: no manifest.json (generate the web with 'abc-testweb generate')") from None
    except (OSError, ValueError) as exc:
        raise _Fail(f"{web_dir}: unreadable manifest.json ({exc})") from None


def _cmd_generate(a) -> int:
    from .generator import generate_web
    try:
        check_loopback(a.addr)
    except ServerError as exc:
        raise _Fail(str(exc)) from None
    knobs = {}
    if a.communities < 0:
        raise _Fail("generate: --communities must be >= 0")
    if a.community_locality is not None and a.communities == 0:
        raise _Fail("generate: --community-locality needs --communities C (C > 0)")
    if a.communities:
        knobs["host_communities"] = a.communities
        if a.community_locality is not None:
            knobs["community_locality"] = a.community_locality
    port = a.port if a.port != 0 else free_port(a.addr)
    try:
        m = generate_web(a.out, n_hosts=a.hosts, n_pages=a.pages, seed=a.seed, addr=a.addr, port=port,
                         features=not a.plain, hostile=a.hostile, **knobs)
    except (ValueError, TypeError) as exc:
        raise _Fail(f"generate: {exc}") from None
    except OSError as exc:
        raise _Fail(f"generate: cannot write {a.out}: {exc.strerror or exc}") from None
    c = m["counts"]
    print(f"{a.out}: {c['hosts']} hosts, {c['html_pages']} HTML pages, {c['pages']} URLs, "
          f"{c['requested']} requested / {c['nodes']} nodes / {c['edges']} edges expected, "
          f"{c['bytes']} bytes; port {port}"
          + (f"; {c['hostile_modes']} hostile hosts" if c.get("hostile_modes") else ""))
    return 0


def _addr_port(a, need_manifest: bool = True) -> tuple[str, int]:
    m = None
    if need_manifest or a.addr is None or a.port is None:
        m = _manifest(a.dir)
    addr = a.addr if getattr(a, "addr", None) is not None else m["addr"]
    port = a.port if getattr(a, "port", None) is not None else m["port"]
    return addr, int(port)


def _cmd_serve(a) -> int:
    if not Path(a.dir).is_dir():
        raise _Fail(f"{a.dir}: no such directory")
    addr, port = _addr_port(a, need_manifest=False)
    try:
        if (a.tls_cert is None) != (a.tls_key is None) or (a.https_redirect and a.tls_cert is None):
            raise _Fail("serve: --tls-cert and --tls-key go together (and --https-redirect needs them)")
        run_server(a.dir, addr, port, a.access_log, max_seconds=a.max_seconds, ready_file=a.ready_file,
                   idle_timeout=a.idle_timeout, use_uvloop=a.uvloop, latency=a.latency,
                   tls=(a.tls_cert, a.tls_key) if a.tls_cert else None, tls_port=a.tls_port,
                   https_redirect=a.https_redirect, also=tuple(x for x in a.also_addr.split(",") if x))
    except ServerError as exc:
        raise _Fail(f"serve: {exc}") from None
    except OSError as exc:
        raise _Fail(f"serve: {exc.strerror or exc}") from None
    return 0


def _cmd_proxy(a) -> int:
    from .proxy import run_proxy

    lines = []
    if a.resolve:
        try:
            lines = Path(a.resolve).read_text().splitlines()
        except OSError as exc:
            raise _Fail(f"proxy: {a.resolve}: {exc.strerror or exc}") from None
    try:
        run_proxy(a.addr, a.port, lines, a.access_log, max_seconds=a.max_seconds, ready_file=a.ready_file)
    except (ServerError, ValueError) as exc:
        raise _Fail(f"proxy: {exc}") from None
    return 0


def _cmd_exec(a) -> int:
    cmd = list(a.cmd)
    if not cmd:
        raise _Fail("exec: no command given (abc-testweb exec DIR -- CMD ARGS...)")
    m = _manifest(a.dir)
    try:
        srv = TestWebServer(a.dir, m["addr"], int(m["port"]), a.access_log)
        srv.start()
    except ServerError as exc:
        raise _Fail(f"exec: {exc}") from None
    except OSError as exc:
        raise _Fail(f"exec: {exc.strerror or exc}") from None
    d = Path(a.dir).resolve()
    env = dict(os.environ, ABC_TESTWEB_DIR=str(d), ABC_TESTWEB_ADDR=m["addr"],
               ABC_TESTWEB_PORT=str(srv.port), ABC_TESTWEB_SEEDS=str(d / "seeds.txt"),
               ABC_TESTWEB_RESOLVE=str(d / "resolve.txt"))
    try:
        try:
            proc = subprocess.Popen(cmd, env=env)
        except OSError as exc:
            print(f"abc-testweb exec: cannot run {cmd[0]}: {exc.strerror or exc}", file=sys.stderr)
            return 127

        def forward(sig, _frame):
            if sig == signal.SIGINT and _terminal_foreground():
                return  # the terminal sent ^C to the whole process group: CMD has it already
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                pass

        old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            try:
                rc = proc.wait(timeout=a.max_seconds)
            except subprocess.TimeoutExpired:
                print(f"abc-testweb exec: {cmd[0]} still running after {a.max_seconds} s; terminating",
                      file=sys.stderr)
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                return 124
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        return rc if rc >= 0 else 128 - rc
    finally:
        srv.stop()


def _cmd_change(a) -> int:
    from .changes import change_pages

    _manifest(a.dir)
    try:
        changed = change_pages(a.dir, a.pages, a.seed)
    except ValueError as exc:
        raise _Fail(f"{a.dir}: {exc}") from None
    print(f"{a.dir}: {len(changed)} pages changed (listed in manifest.json 'changed'); serve the web anew")
    return 0


def _terminal_foreground() -> bool:
    """True when this process group owns the controlling terminal (keyboard signals reach CMD too)."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            return os.tcgetpgrp(stream.fileno()) == os.getpgrp()
        except (OSError, ValueError, AttributeError):
            continue
    return False


def _cmd_bench(a) -> int:
    import tempfile
    m = _manifest(a.dir)
    try:
        import pycurl
    except ImportError:
        raise _Fail("bench: pycurl is not installed") from None
    urls = [u for u in m["expected"]["requested"] if m["pages"].get(u, {}).get("status") == 200]
    if not urls:
        raise _Fail("bench: the web has no 200 pages")
    with tempfile.TemporaryDirectory() as td:
        ready = os.path.join(td, "ready.json")
        cmd = [sys.executable, "-m", "abc_crawler.testweb.cli", "serve", a.dir, "--ready-file", ready,
               "--max-seconds", str(a.seconds + 30)]
        if a.uvloop:
            cmd.append("--uvloop")
        if a.access_log:
            cmd += ["--access-log", a.access_log]
        server = subprocess.Popen(cmd)
        try:
            deadline = time.time() + 10
            while not os.path.exists(ready):
                if server.poll() is not None or time.time() > deadline:
                    raise _Fail("bench: the server did not start")
                time.sleep(0.02)
            cpu0, cpu_self0 = _cpu_seconds(server.pid), time.process_time()
            result = bench_fetch(urls, m["resolve"], a.connections, a.seconds)
            cpu1, cpu_self1 = _cpu_seconds(server.pid), time.process_time()
            if cpu0 is not None and cpu1 is not None:
                result["server_cpu_s"] = round(cpu1 - cpu0, 3)
                result["requests_per_server_cpu_s"] = round(result["requests"] / max(cpu1 - cpu0, 1e-9), 1)
            result["client_cpu_s"] = round(cpu_self1 - cpu_self0, 3)
        finally:
            server.terminate()
            server.wait(10)
    result["server_loop"] = "uvloop" if a.uvloop else "asyncio"
    print(json.dumps(result))
    return 0


def _cpu_seconds(pid: int) -> float | None:
    """User+system CPU seconds of a process (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def bench_fetch(urls: list[str], resolve: list[str], connections: int = 64, seconds: float = 5.0) -> dict:
    """Fetch ``urls`` round-robin with pycurl CurlMulti for ``seconds``; rates as a dict."""
    import pycurl
    from io import BytesIO

    multi = pycurl.CurlMulti()
    multi.setopt(pycurl.M_MAX_HOST_CONNECTIONS, 0)
    handles = []
    nxt = 0
    done = errors = nbytes = 0
    t0 = time.perf_counter()
    end = t0 + seconds

    def arm(c):
        nonlocal nxt
        c.buf = BytesIO()
        c.setopt(pycurl.URL, urls[nxt % len(urls)])
        c.setopt(pycurl.WRITEDATA, c.buf)
        nxt += 1
        multi.add_handle(c)

    for _ in range(connections):
        c = pycurl.Curl()
        c.setopt(pycurl.RESOLVE, resolve)
        c.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP)
        c.setopt(pycurl.FOLLOWLOCATION, 0)
        c.setopt(pycurl.TIMEOUT, 10)
        handles.append(c)
        arm(c)
    active = connections
    while active:
        while True:
            ret, _ = multi.perform()
            if ret != pycurl.E_CALL_MULTI_PERFORM:
                break
        while True:
            nq, ok, bad = multi.info_read()
            for c in ok:
                multi.remove_handle(c)
                done += 1
                nbytes += len(c.buf.getvalue())
                if time.perf_counter() < end:
                    arm(c)
                else:
                    active -= 1
            for c, _errno, _msg in bad:
                multi.remove_handle(c)
                errors += 1
                if time.perf_counter() < end:
                    arm(c)
                else:
                    active -= 1
            if not nq:
                break
        multi.select(0.1)
    dt = time.perf_counter() - t0
    conns = sum(c.getinfo(pycurl.NUM_CONNECTS) for c in handles)
    for c in handles:
        c.close()
    multi.close()
    return {"connections": connections, "seconds": round(dt, 3), "requests": done, "errors": errors,
            "requests_per_s": round(done / dt, 1), "mb_per_s": round(nbytes / dt / 1e6, 2),
            "new_connections_last_round": conns}


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="abc-testweb", description="Local test web: generate, serve, exec, change, bench.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    g = sub.add_parser("generate", help="write a synthetic web")
    g.add_argument("out")
    g.add_argument("--hosts", type=int, default=20)
    g.add_argument("--pages", type=int, default=600)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--addr", default="127.0.0.1")
    g.add_argument("--port", type=int, default=0, help="0: pick a free port now (default)")
    g.add_argument("--plain", action="store_true", help="no traps or errors")
    g.add_argument("--communities", type=int, default=0, metavar="C",
                   help="group hosts into C communities that link mostly among themselves (0: off, default)")
    g.add_argument("--community-locality", type=float, default=None, metavar="L",
                   help="with --communities: probability L that a cross-host link stays in its community (default 0.9)")
    g.add_argument("--hostile", default=None, metavar="MODES",
                   help="add hostile hosts: 'all' or a comma-separated list of modes (default: none)")
    g.set_defaults(func=_cmd_generate)

    s = sub.add_parser("serve", help="serve a web directory")
    s.add_argument("dir")
    s.add_argument("--access-log")
    s.add_argument("--max-seconds", type=float, default=3600.0)
    s.add_argument("--ready-file")
    s.add_argument("--addr", default=None, help="default: the manifest's")
    s.add_argument("--port", type=int, default=None, help="default: the manifest's")
    s.add_argument("--also-addr", default="", metavar="A[,A...]",
                   help="more loopback addresses to listen on, at the same port (hosts on addresses of their own)")
    s.add_argument("--idle-timeout", type=float, default=60.0)
    s.add_argument("--latency", type=float, default=0.0,
                   help="seconds every response is held back, like a server that takes time (default 0)")
    s.add_argument("--uvloop", action="store_true", help="use uvloop if installed")
    s.add_argument("--tls-cert", default=None, help="PEM certificate (chain): also serve the web over TLS")
    s.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    s.add_argument("--tls-port", type=int, default=0, help="port of the TLS listener (default: a free one)")
    s.add_argument("--https-redirect", action="store_true",
                   help="answer every request on the plain port with a 301 to the TLS port")
    s.set_defaults(func=_cmd_serve)

    x = sub.add_parser("proxy", help="run a forward proxy on loopback (for --proxy tests)")
    x.add_argument("--addr", default="127.0.0.1")
    x.add_argument("--port", type=int, default=0)
    x.add_argument("--resolve", default=None, help="HOST:PORT:ADDR lines: the names the proxy may connect to")
    x.add_argument("--access-log")
    x.add_argument("--max-seconds", type=float, default=3600.0)
    x.add_argument("--ready-file")
    x.set_defaults(func=_cmd_proxy)

    e = sub.add_parser("exec", help="serve while a command runs")
    e.add_argument("dir")
    e.add_argument("--access-log")
    e.add_argument("--max-seconds", type=float, default=3600.0)
    e.add_argument("cmd", nargs="*", help="after '--'")
    e.set_defaults(func=_cmd_exec)

    c = sub.add_parser("change", help="change pages of a generated web on disk (for re-crawls with --previous)")
    c.add_argument("dir")
    c.add_argument("--pages", type=int, required=True, help="how many HTML pages to change")
    c.add_argument("--seed", type=int, default=0)
    c.set_defaults(func=_cmd_change)

    b = sub.add_parser("bench", help="measure the server with pycurl CurlMulti")
    b.add_argument("dir")
    b.add_argument("--connections", type=int, default=64)
    b.add_argument("--seconds", type=float, default=5.0)
    b.add_argument("--uvloop", action="store_true")
    b.add_argument("--access-log", help="let the server write this access log")
    b.set_defaults(func=_cmd_bench)
    return p


def main(argv=None) -> int:
    parser = _build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = None
    if argv and argv[0] == "exec" and "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1:]
    try:
        a = parser.parse_args(argv)
        if cmd is not None:
            if a.cmd:
                raise _Fail(f"exec: unexpected arguments before '--': {' '.join(a.cmd)}")
            a.cmd = cmd
        if getattr(a, "port", None) is not None and not (0 <= a.port <= 65535):
            raise _Fail(f"port {a.port} out of range")
        return a.func(a)
    except _Fail as exc:
        print(str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
