"""The whole workflow on two simulated hosts with no shared disk (issue 17).

4 ranks, 2 per host (``node1:2 / node2:2``); each host sees its own directory
at the common working path (see ``simhosts.py``). The inputs (seeds, resolve
list, config file, part vector) exist on node1, rank 0's host, only. Every
run is bounded in time; a hang fails the test instead of holding the suite.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

from crawlcheck import BIN, LAB_TOML, check_session, generate, host_overlaps, read_log, serve
from simhosts import SIMSSH, SimHosts

README = Path(__file__).resolve().parents[2] / "README.md"
CRAWL = "mpiexec -f hostfile -n 4 abc-crawl seeds.txt --config lab.toml --resolve resolve.txt"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("mweb")
    generate(d, n_hosts=6, n_pages=200, seed=7)
    return d


def _readme_blocks() -> list[tuple[str, str]]:
    """The fenced blocks (language, text) of the README's "Running on several machines" section."""
    text = README.read_text()
    start = text.index("## Running on several machines")
    end = text.index("\n## ", start + 3)
    return re.findall(r"```(\w+)\n(.*?)```", text[start:end], re.S)


def _commands(block: str) -> list[str]:
    return [line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _setup_node1(sim: SimHosts, web: Path, hostfile_text: str = "node1:2\nnode2:2\n") -> Path:
    """Rank 0's host gets the inputs; node2 gets nothing."""
    node1 = sim.disk("node1")
    for name in ("seeds.txt", "resolve.txt"):
        shutil.copy(web / name, node1 / name)
    shutil.copy(LAB_TOML, node1 / "lab.toml")      # the lab settings of a loopback web
    (node1 / "hostfile").write_text(hostfile_text)
    return node1


def _ok(r) -> None:
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-4000:])


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _snapshot(sim: SimHosts) -> dict[tuple[str, str], str]:
    """(host, path) -> SHA-256 of every file on every simulated host's disk."""
    return {(h, p.relative_to(sim.disk(h)).as_posix()): _sha(p)
            for h in sim.hosts for p in sorted(sim.disk(h).rglob("*")) if p.is_file()}


def _files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.is_dir() else set()


def _check_locations(sim: SimHosts, rel: str, written_later: tuple[str, ...] = ()) -> dict:
    """manifest.json (on rank 0's host) says, per rank, the host and the files with sizes and SHA-256:
    each listed file is on that host with that size and hash, and each host holds nothing else of the
    session but what tools wrote after it (paths starting with ``written_later``)."""
    manifest = json.loads((sim.disk("node1") / rel / "manifest.json").read_text())
    assert manifest["hosts"] == ["node1", "node1", "node2", "node2"]
    listed: dict[str, set[str]] = {h: set() for h in sim.hosts}
    for entry in manifest["locations"]:
        assert entry["host"] == manifest["hosts"][entry["rank"]]
        assert entry["files"], entry
        for f in entry["files"]:
            p = sim.disk(entry["host"]) / rel / f["path"]
            assert p.stat().st_size == f["bytes"] and _sha(p) == f["sha256"], (entry["rank"], f)
            listed[entry["host"]].add(f["path"])
        own = [f["path"] for f in entry["files"] if f["path"].startswith(("warc/", "checkpoint/"))]
        assert own and all(re.search(rf"(^|/|-)rank-{entry['rank']:05d}[.-]", p) for p in own), own
    gathered = set((manifest.get("gathered_warc") or {}).get("copied", []))
    for h in sim.hosts:
        on_disk = {p for p in _files_under(sim.disk(h) / rel) - {"manifest.json"} if not p.startswith(written_later)}
        assert on_disk - gathered == listed[h] - gathered, h
    # node2 holds only its ranks' files: no manifest, statistics or graph
    assert not (sim.disk("node2") / rel / "manifest.json").exists()
    assert all(re.search(r"rank-0000[23][.-]", p) for p in _files_under(sim.disk("node2") / rel))
    return manifest


@contextlib.contextmanager
def _merged(sim: SimHosts, rel: str, dest: Path):
    """A view of one session with rank 0's host's files and every host's WARC files (symlinks); the
    working directory is rank 0's host's disk meanwhile (the config names inputs relative to it)."""
    dest.mkdir()
    (dest / "warc").mkdir()
    for p in (sim.disk("node1") / rel).iterdir():
        if p.is_file():
            (dest / p.name).symlink_to(p)
    for h in sim.hosts:
        for w in sorted((sim.disk(h) / rel / "warc").glob("*-rank-*.warc.gz")):
            assert not (dest / "warc" / w.name).exists(), f"{w.name} on two hosts"
            (dest / "warc" / w.name).symlink_to(w)
    with contextlib.chdir(sim.disk("node1")):
        yield dest


def test_readme_workflow_runs_verbatim_on_two_hosts(sim, web, tmp_path):
    """README "Running on several machines", its commands as written, on node1: a hash session,
    abc-repartition there, a part-vector session (the vector on node1's disk only) with
    --gather-warc, abc-report."""
    blocks = _readme_blocks()
    assert [lang for lang, _ in blocks] == ["text", "sh", "sh"], blocks
    node1 = _setup_node1(sim, web, hostfile_text=blocks[0][1])
    workflow = _commands(blocks[1][1])
    assert len(workflow) == 4 and "--gather-warc" in workflow[2]
    logs = []
    with serve(web) as srv:
        for line in workflow:
            mark = srv.mark()
            _ok(sim.on("node1", line, timeout=300))
            logs.append(srv.rows(mark))
    # session 1: each host holds its ranks' files; the manifest says which, with sizes and SHA-256
    m1 = _check_locations(sim, "sessions/s1", written_later=("partvec.npz", "page.graph", "page.hgr"))
    assert "gathered_warc" not in m1
    assert _files_under(sim.disk("node2") / "sessions/s1/warc") == {
        f"s1-rank-0000{r}-00000.{ext}" for r in (2, 3) for ext in ("warc.gz", "cdxj")}
    with _merged(sim, "sessions/s1", tmp_path / "s1") as merged:
        check_session(web, merged, logs[0])        # every page exactly once across both hosts' WARC files
    # the part vector is on node1's disk only, where abc-repartition wrote it
    assert (node1 / "sessions/s1/partvec.npz").is_file()
    assert not (sim.disk("node2") / "sessions/s1/partvec.npz").exists()
    # session 2 used it, and --gather-warc brought every WARC file to rank 0's directory
    m2 = _check_locations(sim, "sessions/s2", written_later=("report/",))
    assert m2["assignment"] == "partvec:sessions/s1/partvec.npz"
    g = m2["gathered_warc"]
    assert g["host"] == "node1" and g["errors"] == []
    assert g["copied"] == [f"warc/s2-rank-0000{r}-00000.{ext}" for r in (2, 3) for ext in ("cdxj", "warc.gz")]
    assert g["present"] == ["warc/s2-rank-00001-00000.cdxj", "warc/s2-rank-00001-00000.warc.gz"]   # rank 0's host
    listed = {f["path"]: f for e in m2["locations"] for f in e["files"] if f["path"].startswith("warc/")}
    assert _files_under(node1 / "sessions/s2/warc") == {p[len("warc/"):] for p in listed}
    for path, f in listed.items():
        assert _sha(node1 / "sessions/s2" / path) == f["sha256"]
        original = sim.disk("node2") / "sessions/s2" / path
        if original.exists():
            assert _sha(original) == f["sha256"]
    with contextlib.chdir(node1):
        check_session(web, node1 / "sessions/s2", logs[2])   # rank 0's directory alone is the whole session now
    assert (node1 / "sessions/s2/report/report.md").is_file()
    _rank0_files_suffice(sim, tmp_path / "rank0-only")


def _rank0_files_suffice(sim: SimHosts, root: Path) -> None:
    """abc-repartition and abc-report need only the files the manifests list for rank 0."""
    import subprocess

    for rel in ("sessions/s1", "sessions/s2"):
        src = sim.disk("node1") / rel
        manifest = json.loads((src / "manifest.json").read_text())
        for f in [{"path": "manifest.json"}, *manifest["locations"][0]["files"]]:
            (root / rel / f["path"]).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src / f["path"], root / rel / f["path"])
    assert not list(root.rglob("*rank-00001*")) and not list(root.rglob("partvec.npz"))
    for cmd in (["abc-repartition", "sessions/s1", "--parts", "4"],
                ["abc-report", "sessions/s2", "--against", "sessions/s1", "--no-plots"]):
        r = subprocess.run([str(BIN / cmd[0]), *cmd[1:]], cwd=root, capture_output=True, text=True, timeout=300)
        _ok(r)
    from abc_crawler.partition.partvec import load_partvec
    here = load_partvec(root / "sessions/s1/partvec.npz")
    there = load_partvec(sim.disk("node1") / "sessions/s1/partvec.npz")
    assert here.metrics["predicted"] == there.metrics["predicted"]
    assert (root / "sessions/s2/report/report.md").is_file()


def test_config_file_on_rank0_disk_only(sim, web):
    node1 = _setup_node1(sim, web)
    toml = 'max-pages = 40\nphases = "off"\npoliteness-delay = 0\nstats = false\n'
    (node1 / "crawl.toml").write_text(toml)
    with serve(web):
        r = sim.on("node1", f"{CRAWL} --session-dir sessions/c --config crawl.toml", timeout=180)
        _ok(r)
        manifest = json.loads((node1 / "sessions/c/manifest.json").read_text())
        assert manifest["config"]["max_pages"] == 40 and manifest["config"]["phases"] == "off"
        assert json.loads((node1 / "sessions/c/stats.json").read_text())["requests"] == 40
        assert not (sim.disk("node2") / "crawl.toml").exists()
        # control: the same file on node2 only is not seen, because rank 0 (node1) reads it
        (node1 / "crawl.toml").rename(sim.disk("node2") / "crawl.toml")
        r = sim.on("node1", f"{CRAWL} --session-dir sessions/c2 --config crawl.toml", timeout=60)
    assert r.returncode == 2
    assert [x for x in r.stderr.splitlines() if x.startswith("abc-crawl:")] == [
        "abc-crawl: crawl.toml: config file not found"], r.stderr


def test_missing_part_vector_one_message_exit_2_no_hang(sim, web):
    _setup_node1(sim, web)
    # a file by that name on node2 changes nothing: rank 0 (node1) reads the vector
    (sim.disk("node2") / "sessions/s0").mkdir(parents=True)
    (sim.disk("node2") / "sessions/s0/partvec.npz").write_bytes(b"not here")
    # no hang: sim.on's timeout (60 s) fails the test instead
    r = sim.on("node1", f"{CRAWL} --session-dir sessions/p --assign sessions/s0/partvec.npz", timeout=60)
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("abc-crawl:")]
    assert len(lines) == 1 and "sessions/s0/partvec.npz" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not (sim.disk("node2") / "sessions/p").exists()


def test_a_host_that_cannot_write_the_session_directory_is_named(sim, web):
    _setup_node1(sim, web)
    (sim.disk("node2") / "sessions").write_text("a file where node2's session directory must go\n")
    r = sim.on("node1", f"{CRAWL} --session-dir sessions/u", timeout=60)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    named = sorted(re.findall(r"rank (\d) on host (\w+): cannot create the session directory (\S+)", r.stderr))
    assert named == [("2", "node2", "sessions/u"), ("3", "node2", "sessions/u")], r.stderr
    assert r.stderr.count("abc-crawl:") == 1


def _newest_checkpoint(session: Path, rank: int) -> int:
    return max((int(p.name.split(".")[1]) for p in (session / "checkpoint").glob(f"rank-{rank:05d}.*.ckpt")),
               default=-1)


def test_kill9_of_one_host_then_resume_refusals_touch_nothing_and_nothing_is_lost(sim, web, tmp_path):
    node1 = _setup_node1(sim, web)
    resume_block = _readme_blocks()[2][1]
    (resume,) = _commands(resume_block)
    assert resume == "mpiexec -f hostfile -n 4 abc-crawl --resume sessions/s1"
    ckpt2 = sim.disk("node2") / "sessions/s1/checkpoint"
    sim_hosts_of_ranks = ["node1", "node1", "node2", "node2"]
    with serve(web, latency=0.01) as srv:   # 10 ms a response: the crawl is still running at the kill
        proc = sim.popen([str(SIMSSH), "node1",
                          f"cd {sim.work} && {CRAWL} --session-dir sessions/s1 --politeness-delay 0 --phases off "
                          "--checkpoint-seconds 0.3 --superstep-seconds 0.3 --no-stats --progress-seconds 60"])
        # kill once every rank holds a checkpoint of superstep >= 2 (before that, a resume has no
        # superstep common to all ranks and is refused: test_multihost_rules.py)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and min(
                _newest_checkpoint(sim.disk(h) / "sessions/s1", r) for r, h in enumerate(sim_hosts_of_ranks)) < 2:
            time.sleep(0.02)
        assert proc.poll() is None, "the crawl ended before it could be interrupted"
        pids = sim.rank_pids()
        assert sorted(pids) == [0, 1, 2, 3], pids
        for rank in (2, 3):                     # node2 goes down
            os.kill(pids[rank], signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode != 0
        assert json.loads((node1 / "sessions/s1/manifest.json").read_text())["stopped"] == "running"
        run1 = srv.rows()
        before = _snapshot(sim)

        # ranks moved (node1:1 / node2:3): refused, the placement it needs printed, no file changed
        (node1 / "hostfile-moved").write_text("node1:1\nnode2:3\n")
        r = sim.on("node1", resume.replace("hostfile", "hostfile-moved"), timeout=60)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("abc-crawl:") == 1 and "Traceback" not in r.stderr
        assert "rank 1 ran on host node1, now on node2" in r.stderr
        assert re.search(r"in this order:\n\s+node1:2\n\s+node2:2\n", r.stderr), r.stderr
        assert _snapshot(sim) == {**before, ("node1", "hostfile-moved"): _sha(node1 / "hostfile-moved")}
        (node1 / "hostfile-moved").unlink()

        # rank 3 lost its checkpoints: refused, naming rank, host and file; no file changed
        aside = tmp_path / "aside"
        aside.mkdir()
        for p in ckpt2.glob("rank-00003.*.ckpt"):
            p.rename(aside / p.name)
        r = sim.on("node1", resume, timeout=60)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("abc-crawl:") == 1 and "Traceback" not in r.stderr
        assert re.search(r"rank 3 on host node2: missing sessions/s1/checkpoint/rank-00003\.\d{8}\.ckpt", r.stderr)
        assert "rank 2 on host" not in r.stderr, r.stderr
        for p in aside.iterdir():
            p.rename(ckpt2 / p.name)
        assert _snapshot(sim) == before

        # the same hostfile: resumed, nothing lost, nothing twice
        mark = srv.mark()
        r = sim.on("node1", resume, timeout=240)
        run2 = srv.rows(mark)
    _ok(r)
    manifest = _check_locations(sim, "sessions/s1")
    assert manifest["stopped"] == "done" and len(manifest["resumed"]) == 1
    assert manifest["resumed"][0]["from_superstep"] >= 1
    with _merged(sim, "sessions/s1", tmp_path / "merged") as merged:
        facts = check_session(web, merged, [run1, run2])    # the log: only pages lost at the kill asked again
    assert facts["stats"]["requests"] == len(facts["manifest"]["expected"]["requested"])


def test_clock_skew_on_one_host_no_two_ranks_on_one_host_at_once(sim, web, tmp_path):
    _setup_node1(sim, web)
    log = tmp_path / "access.log"
    with serve(web, log, latency=0.003):
        r = sim.on("node1", f"{CRAWL} --session-dir sessions/k --politeness-delay 0 --phases on --phase-seconds 0.6 "
                            "--test-rank-header "
                            "--phase-guard 0.05 --batch-urls 8 --test-clock-skew 2:0.25,3:0.25", timeout=240)
    _ok(r)
    stats = json.loads((sim.disk("node1") / "sessions/k/stats.json").read_text())
    # node2's clock was 0.25 s ahead and its ranks measured it (the skew was really there): each
    # estimate is within half the round trip of its sample (NTP), however busy the machine
    for p in stats["per_rank"]:
        truth = -0.25 if p["rank"] in (2, 3) else 0.0
        assert abs(p["clock_offset_s"] - truth) <= p["clock_rtt_s"] / 2 + 1e-6, p
        assert p["clock_rtt_s"] < 0.25, p                   # the estimate is not vacuous
    rows = read_log(log)                                    # complete: the server has exited
    assert rows and host_overlaps(rows) == 0
    with _merged(sim, "sessions/k", tmp_path / "merged") as merged:
        check_session(web, merged, log)
