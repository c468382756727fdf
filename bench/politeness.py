"""Politeness at scale (issues 28, 30): an 8-rank crawl of 2,000 hosts at the open-web defaults.

    .venv/bin/python bench/politeness.py [--delays 0.25,1.0] [--hosts 2000] [--pages 8000]
                                         [--work /tmp/abc-bench-politeness] [--ranks 8] [--port 18090]

One web from ``abc-testweb generate`` (``--hosts`` hosts, ``--pages`` pages, seed 1, Zipf host sizes;
generated once under ``--work`` and reused), served by nginx on loopback with **every host on its own
address** (127.1.0.1, 127.1.0.2, ...: ``resolve.txt`` is rewritten to ``resolve-distinct.txt`` and nginx
gets one ``listen ADDR:PORT;`` per host, nothing on 127.0.0.1 nor on 0.0.0.0), so the per-IP spacing
(``--ip-politeness-delay``) never groups two hosts: what is measured is the per-host politeness alone.
Before crawling, curl checks that two hosts answer on their two addresses and that nothing answers
on 127.0.0.1.

For each delay D of ``--delays``, one after the other (never two crawls at once)::

    mpiexec -n 8 abc-crawl SEEDS --resolve RESOLVE --session-dir S --politeness-delay D \\
        --progress-seconds 30 --time-limit T

with every other setting at its default — the open web's: NOT ``lab.toml`` (so the adaptive delay,
the 0.25 s per-IP spacing, the automatic phase slots, the statistics kernels, WARC files and
checkpoints are all on). ``T`` is a safety net only: three times the biggest host's politeness bound
plus two minutes.

Per delay it prints one row: the wall time (mpiexec's, launch to exit, and the crawl's own
``stats.json`` ``wall_s``), the biggest host and its politeness bound (``bounds.host_bound_s``:
its requests x max(delay, Crawl-delay)), wall / bound (goal <= 1.2), pages/s, the whole crawl's
politeness-bound rate (hosts / D) and pages/s as a percentage of it, the ranks' idle seconds summed
(``per_rank`` ``idle_s`` = ``idle_slot_s`` + ``idle_rest_s`` + ``idle_empty_s``), the CPU seconds of
mpiexec and every rank (``getrusage`` of the reaped children) and ``stopped``. From nginx's access log
(JSON: ``$host``, ``$server_addr``, ``$msec``, ``$request_time``, the request): the smallest gap
between the starts of two consecutive requests to one host (start = ``$msec`` - ``$request_time``,
millisecond resolution) and the number of gaps below D (must be 0), plus the smallest end-to-start
gap (the crawler's own definition of the delay) and whether every host was reached on its own address.

Exit status: 0 when every crawl ended with status 0 and ``stopped`` = ``done`` and no gap was below D;
1 when a crawl failed; 2 when the crawls ended but the log check found gaps below D. The crawler is
the committed one (``--crawler head``, the default: ``git archive HEAD`` under ``--work``, run with
``PYTHONPATH``), so that edits in progress in the work tree are not measured; ``--crawler worktree``
runs the work tree's. Results:
``bench/results/politeness.json``; sessions, access logs and the crawls' stderr stay under ``--work``.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import nginx  # noqa: E402

BIN = harness.BIN
LOG_FORMAT = ("'{\"t_end\":$msec,\"request_time\":$request_time,\"addr\":\"$server_addr\",\"host\":\"$host\","
              "\"request\":\"$request\",\"method\":\"$request_method\",\"path\":\"$request_uri\",\"status\":$status,"
              "\"bytes\":$body_bytes_sent,\"conn\":$connection,\"req\":$connection_requests,\"ua\":\"$http_user_agent\"}'")


# -- the crawler's source -----------------------------------------------------------------------

def head_snapshot(work: Path) -> tuple[Path, str]:
    """The crawler as committed (``git archive HEAD``) under ``work/src-COMMIT``, laid out as the
    editable install maps it (``abc_crawler``, ``abc_crawler/kernels``, ``abc_crawler/partition``), the
    kernels' compiled extensions copied from the work tree (refused if their sources differ from HEAD).
    The crawl runs it with ``PYTHONPATH`` (found before the editable finder): other developers' edits in
    progress in the work tree are not measured."""
    root = harness.ROOT
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "kernels", "partition"],
                           capture_output=True, text=True, check=True).stdout.strip()
    if dirty:
        raise RuntimeError(f"kernels/ or partition/ differ from HEAD (their compiled extensions would not match):\n{dirty}")
    snap = work / f"src-{commit}"
    if not (snap / "abc_crawler" / "__init__.py").exists():
        tmp = work / f"src-{commit}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        arch = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", "HEAD", "abc_crawler", "kernels",
                               "partition"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=arch, check=True)
        shutil.move(str(tmp / "kernels"), tmp / "abc_crawler" / "kernels")
        shutil.move(str(tmp / "partition"), tmp / "abc_crawler" / "partition")
        for so in (root / "kernels").glob("*.so"):
            shutil.copy2(so, tmp / "abc_crawler" / "kernels" / so.name)
        subprocess.run([str(BIN / "python"), "-m", "compileall", "-q", str(tmp)], check=True, stdout=subprocess.DEVNULL)
        tmp.rename(snap)
    return snap, commit


def crawler_env(snap: Path | None) -> dict:
    env = dict(os.environ)
    if snap is not None:
        env["PYTHONPATH"] = str(snap) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# -- the web -----------------------------------------------------------------------------------------

def host_address(i: int) -> str:
    """The i-th host's own loopback address: 127.1.0.1, 127.1.0.2, ... (127.1.0.0/16)."""
    n = i + 1
    if n >= 65535:
        raise ValueError("at most 65,534 hosts fit in 127.1.0.0/16")
    return f"127.1.{n >> 8}.{n & 255}"


def make_web(work: Path, hosts: int, pages: int, port: int) -> Path:
    """A generated web under ``work`` (generated once, reused) and its ``resolve-distinct.txt``."""
    web = work / f"web-{hosts}h-{pages}p-s1-port{port}"
    if not (web / "manifest.json").exists():
        tmp = web.with_name(web.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        print(f"generating {hosts} hosts, {pages} pages under {web} ...", flush=True)
        subprocess.run([str(BIN / "abc-testweb"), "generate", str(tmp), "--hosts", str(hosts), "--pages", str(pages),
                        "--seed", "1", "--port", str(port)], check=True, stdout=subprocess.DEVNULL, timeout=3600)
        tmp.rename(web)
    lines = [ln.strip() for ln in (web / "resolve.txt").read_text().splitlines() if ln.strip()]
    out = []
    for i, ln in enumerate(sorted(lines)):
        host, p, _addr = ln.rsplit(":", 2)
        out.append(f"{host}:{p}:{host_address(i)}")
    (web / "resolve-distinct.txt").write_text("\n".join(out) + "\n")
    return web


def host_addresses(web: Path) -> dict[str, str]:
    """host name (no port) -> its own address, from ``resolve-distinct.txt``."""
    out = {}
    for ln in (web / "resolve-distinct.txt").read_text().split():
        host, _p, addr = ln.rsplit(":", 2)
        out[host.lower()] = addr
    return out


def web_sizes(web: Path) -> dict:
    """URLs a complete crawl requests per host (the manifest's ``expected.requested``)."""
    man = json.loads((web / "manifest.json").read_text())
    per = collections.Counter(u.split("/")[2].rsplit(":", 1)[0] for u in man["expected"]["requested"])
    big, n = per.most_common(1)[0]
    return {"hosts": len(man["hosts"]), "hosts_with_urls": len(per), "requested": sum(per.values()),
            "biggest_host": big, "biggest_host_urls": n, "next_hosts": per.most_common(5)[1:],
            "seeds": man["seeds"]}


# -- nginx with one address per host ---------------------------------------------------------------

class MultiAddrNginx:
    """nginx serving ``web`` with each host's server block on the host's own address (bench/nginx.py's
    config, its ``listen`` lines rewritten), a JSON access log with ``$server_addr``."""

    def __init__(self, web: Path, port: int, access_log: Path, max_seconds: float):
        self.web, self.port, self.access_log, self.max_seconds = web, port, access_log, max_seconds
        self.addrs = host_addresses(web)
        self.prefix: Path | None = None
        self.proc: subprocess.Popen | None = None

    def config(self, prefix: Path) -> str:
        conf = nginx.build_config(self.web, prefix, addr="127.0.0.1", port=self.port, access_log=str(self.access_log),
                                  workers=1)
        conf = conf.replace(nginx._LOG_FORMAT, LOG_FORMAT)
        if "$server_addr" not in conf:
            raise nginx.NginxError("could not put the access log format into the config")
        default = f"  server {{ listen 127.0.0.1:{self.port} default_server; server_name _; return 404; }}"
        if default not in conf:
            raise nginx.NginxError("default server block not found in the generated config")
        listens = " ".join(f"listen {a}:{self.port} default_server;" for a in sorted(set(self.addrs.values())))
        conf = conf.replace(default, f"  server {{ {listens} server_name _; return 404; }}")
        n = 0

        def own(m: re.Match) -> str:
            nonlocal n
            n += 1
            nginx._check_loopback(self.addrs[m.group(1)])
            return f"listen {self.addrs[m.group(1)]}:{self.port};\n    server_name {m.group(1)};"

        conf = re.sub(rf"listen 127\.0\.0\.1:{self.port};\n    server_name (\S+);", own, conf)
        if n != len(self.addrs) or f"127.0.0.1:{self.port}" in conf or "0.0.0.0" in conf:
            raise nginx.NginxError(f"rewrote {n} listen lines for {len(self.addrs)} hosts, or 127.0.0.1 / 0.0.0.0 left")
        # 2,000 listening sockets take connection slots too: more connections, a smaller file cache
        conf = re.sub(r"worker_connections \d+;", "worker_connections 8192;", conf)
        conf = re.sub(r"open_file_cache max=\d+", "open_file_cache max=4096", conf)
        return conf

    def start(self) -> "MultiAddrNginx":
        self.prefix = Path(tempfile.mkdtemp(prefix="abc-nginx-multi-"))
        for k in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.prefix / "tmp" / k).mkdir(parents=True)
        conf_path = self.prefix / "nginx.conf"
        conf_path.write_text(self.config(self.prefix))
        test = subprocess.run([nginx.NGINX, "-t", "-q", "-p", str(self.prefix), "-c", str(conf_path)],
                              capture_output=True, text=True, timeout=120)
        if test.returncode != 0:
            raise nginx.NginxError(f"nginx -t failed: {test.stderr.strip()[-2000:]}")
        self.proc = subprocess.Popen(["timeout", "--kill-after=5", str(int(self.max_seconds)), nginx.NGINX, "-p",
                                      str(self.prefix), "-c", str(conf_path), "-g", "daemon off;"],
                                     stdin=subprocess.DEVNULL)
        try:
            addrs = sorted(set(self.addrs.values()))
            for a in (addrs[0], addrs[-1]):
                nginx._wait_port(a, self.port, self.proc, "nginx", 60)
        except BaseException:
            self.stop()
            raise
        return self

    def error_log(self) -> list[str]:
        if self.prefix is None or not (self.prefix / "error.log").exists():
            return []
        return (self.prefix / "error.log").read_text(errors="replace").splitlines()

    def stop(self) -> list[str]:
        """Stop nginx (its log buffer is flushed); return its error log's lines."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        errors = self.error_log()
        if self.prefix is not None:
            shutil.rmtree(self.prefix, ignore_errors=True)
            self.prefix = None
        return errors


def curl_check(web: Path, port: int) -> list[str]:
    """Two hosts answer 200 on their two own addresses; nothing listens on 127.0.0.1:PORT."""
    addrs = host_addresses(web)
    hosts = sorted(addrs)
    out = []
    for h in (hosts[0], hosts[-1]):
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{remote_ip}", "--max-time", "10",
                            "--resolve", f"{h}:{port}:{addrs[h]}", f"http://{h}:{port}/"],
                           capture_output=True, text=True, timeout=30)
        code, _, ip = r.stdout.partition(" ")
        if code != "200" or ip != addrs[h]:
            raise RuntimeError(f"curl {h} at {addrs[h]}: {r.stdout!r} {r.stderr.strip()!r}")
        out.append(f"{h} at {ip}: {code}")
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                        "--resolve", f"{hosts[0]}:{port}:127.0.0.1", f"http://{hosts[0]}:{port}/"],
                       capture_output=True, text=True, timeout=30)
    if r.returncode == 0:
        raise RuntimeError(f"something answers on 127.0.0.1:{port}: {r.stdout!r}")
    out.append(f"{hosts[0]} at 127.0.0.1: no answer (curl status {r.returncode})")
    ss = subprocess.run(["ss", "-Htln", f"sport = :{port}"], capture_output=True, text=True, timeout=30).stdout
    local = [ln.split()[3] for ln in ss.splitlines() if len(ln.split()) > 3]
    wild = [a for a in local if not a.startswith("127.")]
    if wild:
        raise RuntimeError(f"non-loopback listeners on port {port}: {wild[:5]}")
    out.append(f"{len(local)} listening sockets on port {port}, all in 127.0.0.0/8")
    return out


# -- the access log ------------------------------------------------------------------------------

def read_log(log: Path, since: float) -> list[dict]:
    """The access log's rows (``t_start`` = ``$msec`` - ``$request_time``) of requests started at or
    after ``since`` (epoch seconds: the crawl's launch; the curl check's requests come before)."""
    rows = []
    with open(log) as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                r["t_end"] = float(r["t_end"])
                r["t_start"] = r["t_end"] - float(r["request_time"])
                if r["t_start"] >= since:
                    rows.append(r)
    return rows


def gap_check(log: Path, delay: float, addrs: dict[str, str], since: float) -> dict:
    """Per host, consecutive requests by start time: the smallest start-to-start gap, the gaps below
    ``delay``, the smallest end-to-start gap; requests that reached a host on another address."""
    rows = read_log(log, since)
    agents = collections.Counter(r.get("ua", "").split("/")[0] for r in rows)
    by_host: dict[str, list[dict]] = collections.defaultdict(list)
    wrong_addr = 0
    for r in rows:
        h = r["host"].lower()
        by_host[h].append(r)
        if addrs.get(h) != r.get("addr"):
            wrong_addr += 1
    gaps, e2s = [], []
    below = []
    for h, rs in by_host.items():
        rs.sort(key=lambda r: (r["t_start"], r["t_end"]))
        for a, b in zip(rs, rs[1:]):
            g = b["t_start"] - a["t_start"]
            gaps.append(g)
            e2s.append(b["t_start"] - a["t_end"])
            if g < delay:
                below.append({"host": h, "gap_s": round(g, 3), "first": a["request"], "second": b["request"],
                              "t_start": round(a["t_start"], 3)})
    below.sort(key=lambda x: x["gap_s"])
    per_host = collections.Counter({h: len(rs) for h, rs in by_host.items()})
    return {"log_requests": len(rows), "log_hosts": len(by_host), "gaps": len(gaps),
            "min_gap_s": round(min(gaps), 3) if gaps else None, "gaps_below_delay": len(below),
            "gaps_below_delay_by_2ms": sum(1 for x in below if x["gap_s"] < delay - 0.002),
            "min_end_to_start_s": round(min(e2s), 3) if e2s else None,
            "end_to_start_below_delay": sum(1 for g in e2s if g < delay),
            "smallest_below": below[:10], "wrong_address": wrong_addr,
            "log_biggest_hosts": per_host.most_common(3), "user_agents": dict(agents)}


# -- a crawl ---------------------------------------------------------------------------------------

def other_load() -> list[str]:
    """The load average and the processes using the most CPU over two seconds (the machine is shared)."""
    try:
        r = subprocess.run(["top", "-b", "-n", "2", "-d", "2", "-w", "200", "-c", "-o", "%CPU"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    lines = r.stdout.split("\ntop - ")[-1].splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.split()[:1] == ["PID"]), len(lines))
    procs = [ln.split() for ln in lines[start + 1:start + 9]]
    return ["load average " + lines[0].split("load average:")[-1].strip()] + [
        " ".join(f[8:9] + f[11:])[:140] for f in procs if len(f) > 11 and float(f[8]) >= 5.0]


def crawl(web: Path, work: Path, delay: float, ranks: int, port: int, sizes: dict, env: dict) -> dict:
    tag = f"d{delay:g}"
    session = work / f"session-{tag}"
    log = work / f"access-{tag}.json"
    err_path = work / f"crawl-{tag}.stderr"
    shutil.rmtree(session, ignore_errors=True)
    log.unlink(missing_ok=True)
    bound_guess = (sizes["biggest_host_urls"] + 2) * delay      # + robots.txt and /sitemap.xml
    time_limit = int(3 * bound_guess + 120)
    cmd = [str(BIN / "mpiexec"), "-n", str(ranks), str(BIN / "abc-crawl"), str(web / "seeds.txt"),
           "--resolve", str(web / "resolve-distinct.txt"), "--session-dir", str(session),
           "--politeness-delay", f"{delay:g}", "--progress-seconds", "30", "--time-limit", str(time_limit)]
    print(f"\n== delay {delay:g} s: {' '.join(cmd)}", flush=True)
    server = MultiAddrNginx(web, port, log, max_seconds=time_limit + 1800).start()
    samples: list[dict] = []
    stop_sampling = threading.Event()

    def sample() -> None:
        while not stop_sampling.wait(120):
            samples.append({"t": round(time.monotonic() - t0), "top": other_load()})

    try:
        for line in curl_check(web, port):
            print(f"   curl check: {line}", flush=True)
        time.sleep(1.0)                                     # the check's requests apart from the crawl's
        load0 = other_load()
        print(f"   at start: {'; '.join(load0[:4])}", flush=True)
        c0, t0, launch = harness.children_cpu(), time.monotonic(), time.time()
        started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        threading.Thread(target=sample, daemon=True).start()
        with open(err_path, "w") as errf, open(work / f"crawl-{tag}.stdout", "w") as outf:
            proc = subprocess.Popen(cmd, stdout=outf, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                    env=env)

            def pump() -> None:
                for ln in proc.stderr:
                    errf.write(ln)
                    errf.flush()
                    print(f"   | {ln.rstrip()}", flush=True)

            pt = threading.Thread(target=pump, daemon=True)
            pt.start()
            try:
                rc = proc.wait(timeout=time_limit + 900)
            except BaseException:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                raise
            pt.join(timeout=30)
        wall = time.monotonic() - t0
        cpu = harness.children_cpu() - c0
    finally:
        stop_sampling.set()
        nginx_errors = server.stop()
    load1 = other_load()
    row: dict = {"delay_s": delay, "rc": rc, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "started": started,
                 "time_limit_s": time_limit, "command": cmd, "load_start": load0, "load_end": load1,
                 "load_samples": samples, "stderr_tail": err_path.read_text(errors="replace").splitlines()[-25:],
                 "nginx_errors": [ln for ln in nginx_errors if "[warn]" in ln or "[error]" in ln or "[alert]" in ln
                                  or "[crit]" in ln][:20]}
    st_path = session / "stats.json"
    if st_path.exists():
        st = json.loads(st_path.read_text())
        b = st["bounds"]
        top = b["hosts"][0] if b.get("hosts") else {}
        tot = lambda k: round(sum(p.get(k) or 0 for p in st["per_rank"]), 2)  # noqa: E731
        pages = st["requests"]
        ceiling = sizes["hosts"] / delay
        row.update({
            "stopped": st["stopped"], "stop_line": st.get("stop_line"), "requests": pages,
            "pages_crawled": st.get("pages_crawled"), "crawl_wall_s": st["wall_s"], "crawl_cpu_s": st.get("cpu_s"),
            "host_bound_s": b["host_bound_s"], "bound_host": top.get("host"), "bound_host_requests": top.get("requests"),
            "bound_hosts": b.get("hosts"), "ratio": st["wall_s"] / b["host_bound_s"] if b["host_bound_s"] else None,
            "ratio_mpiexec": wall / b["host_bound_s"] if b["host_bound_s"] else None,
            "pages_per_s": pages / st["wall_s"] if st["wall_s"] else None, "rate_ceiling": ceiling,
            "pct_of_ceiling": 100 * pages / st["wall_s"] / ceiling if st["wall_s"] else None,
            "idle_s": tot("idle_s"), "idle_slot_s": tot("idle_slot_s"), "idle_rest_s": tot("idle_rest_s"),
            "idle_empty_s": tot("idle_empty_s"), "rank_busy_s": b.get("rank_busy_s"),
            "handovers": tot("handovers"), "leases": tot("leases"), "slot_cuts": tot("slot_cuts"),
            "supersteps": st["exchange"]["supersteps"],
            "stall": st.get("stall"), "dropped": st.get("dropped")})
    else:
        row["stopped"] = None
    if log.exists():
        row["log"] = gap_check(log, delay, host_addresses(web), launch)
    return row


# -- output -------------------------------------------------------------------------------------------

def table(rows: list[dict], hosts: int) -> str:
    head = ("| delay | wall (mpiexec / crawl) | biggest host: requests, bound | wall / bound | pages/s | "
            f"bound rate ({hosts:,} hosts / delay) | % of it | idle s (all / slot / rest / empty) | CPU s | "
            "stopped | access log: smallest gap, gaps < delay |")
    out = [head, "| " + " | ".join("---" for _ in range(head.count("|") - 1)) + " |"]
    for r in rows:
        if r.get("crawl_wall_s") is None:
            out.append(f"| {r['delay_s']:g} s | {r['wall_s']:.0f} s / — | — | — | — | — | — | — | {r['cpu_s']:.0f} | "
                       f"failed (status {r['rc']}) | — |")
            continue
        lg = r.get("log") or {}
        out.append(
            f"| {r['delay_s']:g} s | {r['wall_s']:.0f} s / {r['crawl_wall_s']:.0f} s | {r['bound_host']}: "
            f"{r['bound_host_requests']:,}, {r['host_bound_s']:.0f} s | {r['ratio']:.2f} (mpiexec {r['ratio_mpiexec']:.2f}) | "
            f"{r['pages_per_s']:.2f} | {r['rate_ceiling']:,.0f} /s | {r['pct_of_ceiling']:.2f} % | "
            f"{r['idle_s']:.0f} / {r['idle_slot_s']:.0f} / {r['idle_rest_s']:.0f} / {r['idle_empty_s']:.0f} | "
            f"{r['cpu_s']:.0f} | {r['stopped']} (status {r['rc']}) | {lg.get('min_gap_s')} s, {lg.get('gaps_below_delay')} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delays", default="0.25,1.0", help="politeness delays, comma-separated (default 0.25,1.0)")
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=8000,
                    help="pages of the web (default 8000: the biggest host has about 1,000 URLs, ~17 min at 1 s)")
    ap.add_argument("--work", default="/tmp/abc-bench-politeness", help="web, sessions, access logs (kept)")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--port", type=int, default=18090)
    ap.add_argument("--out", default=None, help="result JSON (default bench/results/politeness.json)")
    ap.add_argument("--crawler", choices=["head", "worktree"], default="head",
                    help="head (default): crawl with the committed crawler (git archive HEAD under --work, run "
                         "with PYTHONPATH); worktree: the work tree's, edits in progress included")
    a = ap.parse_args()
    delays = [float(x) for x in a.delays.split(",") if x.strip()]
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    if not Path(nginx.NGINX).exists():
        print("nginx is not installed: make bench-setup (apt-get install -y nginx-light)", file=sys.stderr)
        return 1
    print(harness.describe_header("bench/politeness.py: politeness at scale, open-web defaults (issues 28, 30)"))
    changed = subprocess.run(["git", "-C", str(harness.ROOT), "status", "--porcelain", "abc_crawler", "kernels", "partition"],
                             capture_output=True, text=True).stdout.split("\n")
    changed = [ln[3:] for ln in changed if ln.strip()]
    print(f"work tree's crawler vs HEAD: {len(changed)} files changed{': ' + ', '.join(changed) if changed else ''}")
    web = make_web(work, a.hosts, a.pages, a.port)
    sizes = web_sizes(web)
    print(f"web {web}: {sizes['hosts']:,} hosts ({sizes['hosts_with_urls']:,} with URLs to request), "
          f"{sizes['requested']:,} URLs to request; biggest host {sizes['biggest_host']}: "
          f"{sizes['biggest_host_urls']:,} URLs (then {', '.join(f'{h} {n}' for h, n in sizes['next_hosts'])}); "
          f"each host on its own address 127.1.0.1 .. {host_address(sizes['hosts'] - 1)}", flush=True)
    snap, commit = head_snapshot(work) if a.crawler == "head" else (None, None)
    env = crawler_env(snap)
    where = subprocess.run([str(BIN / "python"), "-c", "import abc_crawler, abc_crawler.kernels as k; "
                            "print(abc_crawler.__file__, k.__file__)"], capture_output=True, text=True, env=env,
                           cwd="/", check=True).stdout.strip()
    print(f"crawler: {'HEAD ' + commit if snap else 'work tree'}, imported from {where}", flush=True)
    if snap is None:
        try:
            harness.ensure_bytecode()
        except subprocess.CalledProcessError as exc:       # a file being edited: the ranks compile it themselves
            print(f"(byte-compiling failed: {exc}; going on)", file=sys.stderr)
    rows = []
    for d in delays:
        rows.append(crawl(web, work, d, a.ranks, a.port, sizes, env))
        r = rows[-1]
        print(f"   -> status {r['rc']}, stopped {r.get('stopped')}, wall {r['wall_s']:.0f} s, CPU {r['cpu_s']:.0f} s; "
              f"log: {json.dumps({k: v for k, v in (r.get('log') or {}).items() if k != 'smallest_below'})}", flush=True)
        if r.get("log", {}).get("smallest_below"):
            print(f"   gaps below {d:g} s: {r['log']['smallest_below']}", flush=True)
        if r.get("nginx_errors"):
            print(f"   nginx error log: {r['nginx_errors'][:5]}", flush=True)
    print(f"\n{a.ranks} ranks, {sizes['hosts']:,} hosts each on its own loopback address, {sizes['requested']:,} URLs; "
          f"biggest host {sizes['biggest_host']} ({sizes['biggest_host_urls']:,} URLs); open-web defaults but "
          "--politeness-delay:")
    print(table(rows, sizes["hosts"]))
    for r in rows:
        print(f"  delay {r['delay_s']:g}: {r.get('stop_line')}; bounds.hosts {r.get('bound_hosts')}; "
              f"end-to-start min {(r.get('log') or {}).get('min_end_to_start_s')} s; "
              f"requests on a wrong address {(r.get('log') or {}).get('wrong_address')}")
    path = harness.write_result("politeness", {"benchmark": "politeness", "args": vars(a), "web": sizes, "runs": rows,
                                               "crawler": {"source": a.crawler, "commit": commit,
                                                           "imported_from": where}}, a.out)
    print(f"result: {path}")
    failed = [r for r in rows if r["rc"] != 0 or r.get("stopped") != "done"]
    bad_gaps = [r for r in rows if (r.get("log") or {}).get("gaps_below_delay", 1) != 0]
    return 1 if failed else 2 if bad_gaps else 0


if __name__ == "__main__":
    sys.exit(main())
