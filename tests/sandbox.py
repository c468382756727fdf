"""Crawls that resolve names, on this machine only: a private network and a private /etc/hosts.

``run_sandboxed(spec)`` runs this file under ``unshare --net --mount``: a new network namespace
whose only interface is its own loopback (nothing outside the machine, nor the machine's other
services, can be reached from it) and a mount namespace in which ``/etc/hosts``,
``/etc/resolv.conf`` and ``/etc/nsswitch.conf`` are the test's own (bind mounts seen by the
processes inside only). Inside, it brings ``lo`` up, answers DNS on ``127.0.0.53:53`` itself —
every query is logged and refused, so a name looked up outside the hosts file shows in the log —
starts the test web's server (and a forward proxy, when asked), runs the crawl command under a
timeout and writes what happened to ``result.json`` in the spec's directory.

Skipped (with the reason) where ``unshare`` is missing or not permitted.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

DNS_ADDR = "127.0.0.53"


def unavailable() -> str | None:
    """Why sandboxed crawls cannot run here, or None."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount not installed"
    if os.geteuid() != 0:
        return "sandboxed crawls need root (unshare --net --mount)"
    r = subprocess.run(["unshare", "--net", "--mount", "true"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"unshare --net --mount not permitted here: {r.stderr.strip()}"
    return None


def run_sandboxed(spec: dict, directory: Path, timeout: float = 400) -> dict:
    """Run ``spec`` (see :func:`_inside`) in a fresh sandbox; returns ``result.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "spec.json").write_text(json.dumps(spec))
    r = subprocess.run(["unshare", "--net", "--mount", sys.executable, __file__, str(directory)],
                       capture_output=True, text=True, timeout=timeout)
    res = directory / "result.json"
    if not res.exists():
        raise RuntimeError(f"sandbox failed (status {r.returncode}): {r.stderr[-3000:]}")
    out = json.loads(res.read_text())
    out["sandbox_stderr"] = r.stderr
    return out


# -- inside the namespaces ----------------------------------------------------------------------

def _lo_up() -> None:
    import fcntl
    import struct

    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, SIOCGIFFLAGS, ifr))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def _qname(msg: bytes) -> str:
    labels, i = [], 12
    while i < len(msg) and msg[i]:
        n = msg[i]
        labels.append(msg[i + 1:i + 1 + n].decode("latin-1"))
        i += 1 + n
    return ".".join(labels)


def _dns_logger(names: list, stop: threading.Event) -> None:
    """Answer every DNS query REFUSED and remember its name."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((DNS_ADDR, 53))
    s.settimeout(0.2)
    while not stop.is_set():
        try:
            msg, peer = s.recvfrom(4096)
        except socket.timeout:
            continue
        if len(msg) < 12:
            continue
        names.append(_qname(msg))
        flags = (0x8000 | (msg[2] & 0x79) << 8 | 0x0005)        # response, same opcode/RD, RCODE=REFUSED
        s.sendto(msg[:2] + flags.to_bytes(2, "big") + msg[4:6] + b"\0\0\0\0\0\0" + msg[12:], peer)
    s.close()


def _wait_file(path: Path, proc: subprocess.Popen, what: str, seconds: float = 30) -> dict:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {seconds} s")
        time.sleep(0.02)
    return json.loads(path.read_text())


def _inside(directory: Path) -> None:
    """spec: ``hosts`` {name: addr}, ``web`` (dir), ``serve_args`` (extra ``abc-testweb serve`` flags),
    ``proxy`` (optional ``abc-testweb proxy`` flags), ``crawl`` (argv, ``{proxy_port}`` filled in),
    ``env`` (extra environment of the crawl), ``timeout``."""
    spec = json.loads((directory / "spec.json").read_text())
    bin_dir = Path(sys.executable).parent
    _lo_up()
    hosts = directory / "hosts"
    lines = ["127.0.0.1 localhost " + socket.gethostname(), "::1 localhost ip6-localhost"]
    for name, addr in spec["hosts"].items():
        # an IPv6 line too, so that no lookup of a listed name (curl asks for A and AAAA) leaves the file
        lines += [f"{addr} {name}", f"::1 {name}" if addr.startswith("127.") else ""]
    hosts.write_text("\n".join(lines) + "\n")
    (directory / "resolv.conf").write_text(f"nameserver {DNS_ADDR}\noptions timeout:1 attempts:1\n")
    (directory / "nsswitch.conf").write_text("hosts: files dns\n")
    for src, dst in (("hosts", "/etc/hosts"), ("resolv.conf", "/etc/resolv.conf"), ("nsswitch.conf", "/etc/nsswitch.conf")):
        subprocess.run(["mount", "--bind", str(directory / src), dst], check=True)
    names: list[str] = []
    stop = threading.Event()
    dns = threading.Thread(target=_dns_logger, args=(names, stop), daemon=True)
    dns.start()
    procs = []
    result: dict = {}
    try:
        ready = directory / "server.ready"
        srv = subprocess.Popen([str(bin_dir / "abc-testweb"), "serve", spec["web"], "--ready-file", str(ready),
                                "--max-seconds", str(spec.get("timeout", 300) + 30), *spec.get("serve_args", [])])
        procs.append(srv)
        result["server"] = _wait_file(ready, srv, "the test web's server")
        proxy_port = ""
        if spec.get("proxy") is not None:
            pready = directory / "proxy.ready"
            px = subprocess.Popen([str(bin_dir / "abc-testweb"), "proxy", "--ready-file", str(pready),
                                   "--max-seconds", str(spec.get("timeout", 300) + 30), *spec["proxy"]])
            procs.append(px)
            proxy_port = _wait_file(pready, px, "the proxy")["port"]
        crawl = [a.replace("{proxy_port}", str(proxy_port)) for a in spec["crawl"]]
        env = dict(os.environ)
        env.update({k: v.replace("{proxy_port}", str(proxy_port)) for k, v in spec.get("env", {}).items()})
        t0 = time.monotonic()
        try:
            r = subprocess.run(crawl, capture_output=True, text=True, timeout=spec.get("timeout", 300), env=env)
            result.update(returncode=r.returncode, stdout=r.stdout, stderr=r.stderr)
        except subprocess.TimeoutExpired as exc:
            result.update(returncode=None, stdout=str(exc.stdout), stderr=f"timed out: {exc.stderr}")
        result["crawl_s"] = round(time.monotonic() - t0, 3)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        stop.set()
        dns.join(2)
        result["dns_queries"] = names
        (directory / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    _inside(Path(sys.argv[1]))
