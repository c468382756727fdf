"""The benchmark harness the scripts under bench/ share (bench/ is not a package: they import it by name).

Running a crawl and measuring it (:func:`run_abc`, :func:`run_measured`: wall
and CPU seconds of a command and every process under it), the run order of
interleaved rounds (:func:`rotated`) and their medians (:func:`medians`), the
machine and software versions every figure is stored with
(:func:`machine_info`, :func:`software_versions`, :func:`describe_header`),
results under ``bench/results/`` (:func:`write_result`), and generated webs
kept under ``DATA`` (``/var/tmp/abc-bench``, or ``ABC_BENCH_DATA``) and reused
(:func:`generated_web`). How figures are taken: ``bench/README.md``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from nginx import nginx_version

__all__ = ["ROOT", "BIN", "RESULTS", "DATA", "machine_info", "software_versions", "children_cpu", "ensure_bytecode",
           "run_measured", "abc_command", "run_abc", "medians", "rotated", "write_result", "generated_web",
           "describe_header", "checkout", "tree_bin", "tree_bytecode", "lab_flags", "tree_abc_command", "run_tree_abc",
           "summarize_speedscope"]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: the lab settings of a loopback crawl (the defaults are the open web's); a benchmark's own flags win
LAB = ("--config", str(ROOT / "lab.toml"))
RESULTS = ROOT / "bench" / "results"
DATA = Path(os.environ.get("ABC_BENCH_DATA", "/var/tmp/abc-bench"))


def machine_info() -> dict:
    """Cores, memory, CPU model, kernel and the load average (the machine is shared)."""
    info = {"cores": os.cpu_count(), "platform": sys.platform}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gb"] = round(int(line.split()[1]) / 1024 ** 2, 1)
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["kernel"] = os.uname().release
    info["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    return info


def software_versions(*extra: str) -> dict:
    """Versions of everything a figure depends on (``extra``: more distributions, e.g. "scrapy")."""
    from importlib.metadata import PackageNotFoundError, version

    import platform

    out = {"python": platform.python_version(), "nginx": nginx_version()}
    for dist in ("abc-crawler", "pycurl", "lxml", "ada-url", "w3lib", "xxhash", "mpi4py", "mpich", "numpy",
                 "warcio", "protego", *extra):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    try:
        import pycurl
        out["libcurl"] = pycurl.version.split()[1].split("/")[1]
    except Exception:
        pass
    try:
        from lxml import etree
        out["libxml2"] = ".".join(map(str, etree.LIBXML_VERSION))
    except Exception:
        pass
    try:
        out["git_commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "abc_crawler", "kernels", "partition"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        out["git_dirty"] = bool(dirty)
    except Exception:
        pass
    return out


def children_cpu() -> float:
    """User+system seconds of all reaped descendants (mpiexec reaps its ranks, so they count)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


_BYTECODE_DONE = False


def ensure_bytecode() -> None:
    """Byte-compile the project once per benchmark (``make bytecode``): an editable install under
    PYTHONDONTWRITEBYTECODE would otherwise compile every module again in every process started."""
    global _BYTECODE_DONE
    if not _BYTECODE_DONE:
        subprocess.run([str(BIN / "python"), "-m", "compileall", "-q", *(str(ROOT / d) for d in ("abc_crawler", "kernels", "partition"))],
                       check=True, stdout=subprocess.DEVNULL)
        _BYTECODE_DONE = True


def run_measured(cmd: list[str], timeout: float, env: dict | None = None) -> dict:
    """Run ``cmd`` to completion; wall seconds, CPU seconds of it and all its descendants, output."""
    ensure_bytecode()
    c0, t0 = children_cpu(), time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except BaseException as exc:
        # timeout or Ctrl-C: the whole process group (mpiexec and its ranks) goes
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            out, err = proc.communicate(timeout=15)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
        if not isinstance(exc, subprocess.TimeoutExpired):
            raise
        rc = 124
    return {"rc": rc, "wall_s": time.monotonic() - t0, "cpu_s": children_cpu() - c0, "stdout": out, "stderr": err}


def abc_command(ranks: int, web, session, *extra: str, seeds=None, wrap: list[str] | None = None) -> list[str]:
    """``mpiexec -n RANKS abc-crawl`` of a served web's seeds with its resolve list (``wrap``: a command in front)."""
    web = Path(web)
    crawl = [str(BIN / "abc-crawl"), str(seeds or web / "seeds.txt"), *LAB, "--resolve", str(web / "resolve.txt"),
             "--session-dir", str(session), "--progress-seconds", "600",
             "--test-rank-header", *extra]        # the servers' access logs attribute requests to ranks by it
    if wrap:
        crawl = [*wrap, str(BIN / "python"), *crawl]
    return [str(BIN / "mpiexec"), "-n", str(ranks), *crawl]


def run_abc(ranks: int, web, session, *extra: str, timeout: float = 1800, seeds=None, wrap=None,
            keep: bool = False) -> dict:
    """``mpiexec -n RANKS abc-crawl`` on a served web; figures from the run and its stats.json."""
    session = Path(session)
    r = run_measured(abc_command(ranks, web, session, *extra, seeds=seeds, wrap=wrap), timeout)
    return _abc_row(ranks, r, session, keep)


def _abc_row(ranks: int, r: dict, session: Path, keep: bool, what: str = "abc-crawl") -> dict:
    """A finished crawl's figures: the run's (``r`` of :func:`run_measured`) and its stats.json's."""
    if r["rc"] != 0 or not (session / "stats.json").exists():
        raise RuntimeError(f"{what} -n {ranks} failed (status {r['rc']}): {r['stderr'][-3000:]}")
    st = json.loads((session / "stats.json").read_text())
    pages = st["requests"]
    row = {"ranks": ranks, "pages": pages, "pages_ok": st["pages_crawled"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
           "pages_per_s": pages / r["wall_s"], "pages_per_cpu_s": pages / r["cpu_s"] if r["cpu_s"] else None,
           "crawl_wall_s": st["wall_s"], "crawl_cpu_s": st["cpu_s"],
           "crawl_pages_per_s": pages / st["wall_s"] if st["wall_s"] else None,
           "crawl_pages_per_cpu_s": pages / st["cpu_s"] if st["cpu_s"] else None,
           "idle_phase_s": [p.get("idle_phase_s") for p in st["per_rank"]],
           "supersteps": st["exchange"]["supersteps"], "stopped": st["stopped"]}
    row["_stats"] = st
    if not keep:
        shutil.rmtree(session, ignore_errors=True)
    return row


def medians(rows: list[dict], keys=None) -> dict:
    """Median of each numeric key over ``rows`` (keys starting with '_' skipped)."""
    import statistics

    keys = keys or [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not k.startswith("_")]
    out = {}
    for k in keys:
        vals = [r[k] for r in rows if isinstance(r.get(k), (int, float))]
        if vals:
            out[k] = statistics.median(vals)
    return out


def rotated(items: list, run: int) -> list:
    """``items`` rotated by ``run``: interleaved runs do not always start with the same configuration."""
    k = run % len(items)
    return items[k:] + items[:k]


def write_result(name: str, data: dict, out: str | None = None) -> Path:
    """bench/results/NAME.json (or ``out``), with the machine and versions added if absent."""
    path = Path(out) if out else RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data.setdefault("machine", machine_info())
    data.setdefault("versions", software_versions())
    data["written"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    def clean(o):
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items() if not str(k).startswith("_")}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    path.write_text(json.dumps(clean(data), indent=1, default=str) + "\n")
    return path


def generated_web(hosts: int, pages: int, seed: int = 1, port: int = 18081, communities: int = 0,
                  locality: float | None = None, timeout: float = 7200) -> Path:
    """A web from ``abc-testweb generate`` under DATA, generated once and reused (it is deterministic).

    ``communities`` > 0 passes ``--communities`` (and ``--community-locality``
    when ``locality`` is given) and names the directory after them, so such a
    web never replaces the default one.
    """
    extra: list[str] = []
    name = f"web-{hosts}h-{pages}p-s{seed}-port{port}"
    if communities:
        extra = ["--communities", str(communities)]
        name += f"-c{communities}"
        if locality is not None:
            extra += ["--community-locality", repr(float(locality))]
            name += f"-l{float(locality):g}"
    web = DATA / name
    if not (web / "manifest.json").exists():
        tmp = web.with_name(web.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        r = subprocess.run([str(BIN / "abc-testweb"), "generate", str(tmp), "--hosts", str(hosts), "--pages", str(pages),
                            "--seed", str(seed), "--port", str(port), *extra],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"abc-testweb generate failed: {r.stderr}")
        # the web bakes its directory into nothing but routes' files (relative): a rename is safe
        tmp.rename(web)
    return web


def describe_header(title: str, extra_versions=()) -> str:
    """``title``, then a line on the machine and one on the software versions (a benchmark's first lines)."""
    m = machine_info()
    v = software_versions(*extra_versions)
    return (f"{title}\nmachine: {m['cores']} cores ({m.get('cpu', '?')}), {m.get('memory_gb', '?')} GB, kernel "
            f"{m['kernel']}, load average at start {m['loadavg']}\nversions: "
            + ", ".join(f"{k} {val}" for k, val in v.items() if val is not None))


# -- other checkouts of ABC (bench/ab_trees.py, bench/cpu_guard.py) ---------------------------------

def checkout(spec, workdir: str | os.PathLike = "/tmp") -> Path:
    """A checkout of ABC to crawl with, with its own ``.venv``: ``spec`` is a directory (a checkout
    where ``make venv`` was run) or a git revision of this repository, which is checked out as a
    worktree at ``WORKDIR/abc-tree-<sha7>`` (``git worktree add --detach``) and given its own venv
    (``make venv`` there, a few minutes the first time; its log is ``make-venv.log`` in the tree).
    The worktree is kept for the next run (``git worktree remove PATH`` removes it)."""
    p = Path(spec)
    if p.is_dir():
        p = p.resolve()
        if not (p / ".venv" / "bin" / "abc-crawl").exists():
            raise RuntimeError(f"{p}: no .venv/bin/abc-crawl (run `make venv` there)")
        return p
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{spec!r} is neither a directory nor a git revision of {ROOT}")
    sha = r.stdout.strip()
    tree = Path(workdir) / f"abc-tree-{sha[:7]}"
    if not (tree / ".git").exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), sha], check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
    if not (tree / ".venv" / ".abc-installed").exists() or not (tree / ".venv" / "bin" / "abc-crawl").exists():
        print(f"building {tree}/.venv (make venv; log: {tree}/make-venv.log)", flush=True)
        with open(tree / "make-venv.log", "w") as log:
            subprocess.run(["make", "venv"], cwd=tree, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=3600)
    return tree


def tree_bin(tree) -> Path:
    """The ``bin`` directory of a checkout's own venv."""
    return Path(tree) / ".venv" / "bin"


_TREES_COMPILED: set = set()


def tree_bytecode(tree) -> None:
    """Byte-compile a checkout once per benchmark (its editable install writes no bytecode)."""
    tree = Path(tree)
    if tree not in _TREES_COMPILED:
        subprocess.run([str(tree_bin(tree) / "python"), "-m", "compileall", "-q",
                        *(str(tree / d) for d in ("abc_crawler", "kernels", "partition") if (tree / d).is_dir())],
                       check=True, stdout=subprocess.DEVNULL)
        _TREES_COMPILED.add(tree)


def lab_flags(tree) -> list[str]:
    """The loopback lab settings of a checkout: ``--config lab.toml`` where it has one (since
    ``23cebd5`` the defaults are the open web's); before, the defaults were the lab's but for a
    0.25 s politeness delay: ``--politeness-delay 0``."""
    lab = Path(tree) / "lab.toml"
    return ["--config", str(lab)] if lab.exists() else ["--politeness-delay", "0"]


def tree_abc_command(tree, ranks: int, web, session, *extra: str, wrap: list[str] | None = None,
                     lab: bool = True) -> list[str]:
    """``mpiexec -n RANKS abc-crawl`` of ``tree``'s venv on a served web: its lab settings
    (:func:`lab_flags`; none with ``lab=False``: the open web's defaults), the web's resolve list,
    ``extra``; nothing else (every other setting at the tree's default). ``wrap``: a command put in
    front of each rank's ``python abc-crawl``."""
    b = tree_bin(tree)
    web = Path(web)
    crawl = [str(b / "abc-crawl"), str(web / "seeds.txt"), *(lab_flags(tree) if lab else ()),
             "--resolve", str(web / "resolve.txt"), "--session-dir", str(session), *extra]
    if wrap:
        crawl = [*wrap, str(b / "python"), *crawl]
    return [str(b / "mpiexec"), "-n", str(ranks), *crawl]


def run_tree_abc(tree, ranks: int, web, session, *extra: str, timeout: float = 1800, wrap=None,
                 keep: bool = False, lab: bool = True) -> dict:
    """:func:`run_abc` with another checkout's crawler (:func:`tree_abc_command`)."""
    session = Path(session)
    shutil.rmtree(session, ignore_errors=True)
    tree_bytecode(tree)
    r = run_measured(tree_abc_command(tree, ranks, web, session, *extra, wrap=wrap, lab=lab), timeout)
    return _abc_row(ranks, r, session, keep, what=f"{tree}: abc-crawl")


# -- py-spy profiles ---------------------------------------------------------------------------------

def summarize_speedscope(paths, classify, top: int = 20) -> dict:
    """Self and inclusive sample shares per function, and per stage, from py-spy speedscope files
    (``paths``: one or several, e.g. one per rank, summed). ``classify(frames, stack)`` names the
    stage of one sample (``frames``: the file's frame table, ``stack``: indices, root first)."""
    from collections import Counter

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    self_c: Counter = Counter()
    incl_c: Counter = Counter()
    line_c: Counter = Counter()
    stage_c: Counter = Counter()
    total = 0.0
    n_samples = 0
    for path in paths:
        d = json.loads(Path(path).read_text())
        frames = d["shared"]["frames"]
        keys = [f"{f['name']} ({Path(f.get('file') or '?').name})" for f in frames]
        line_keys = [f"{Path(f.get('file') or '?').name}:{f.get('line')} {f['name']}" for f in frames]
        for prof in d["profiles"]:
            n_samples += len(prof["samples"])
            weights = prof.get("weights") or [1] * len(prof["samples"])
            for stack, w in zip(prof["samples"], weights):
                if not stack:
                    continue
                total += w
                self_c[keys[stack[-1]]] += w
                line_c[line_keys[stack[-1]]] += w
                for k in {keys[i] for i in stack}:
                    incl_c[k] += w
                stage_c[classify(frames, stack)] += w
    total = total or 1.0
    pct = lambda c, n=top: [(k, round(100 * v / total, 1)) for k, v in c.most_common(n)]  # noqa: E731
    return {"samples": n_samples, "seconds": round(total, 2), "self": pct(self_c), "inclusive": pct(incl_c),
            "self_lines": pct(line_c), "stages": pct(stage_c, None)}
