"""The rules behind several hosts, on one host: what a checkpoint needs, which superstep the ranks
resume from, which files a rank wrote, whether a rank can write its session directory, and
resumes refused without changing a file (the ranks share no disk). The simulated-host tests are in
tests/multihost/."""
from __future__ import annotations

import doctest
import hashlib
import json
import pickle
import shutil

import pytest

from abc_crawler.store import checkpoint, session
from abc_crawler import config
from abc_crawler.mpi import gather
from abc_crawler.store.checkpoint import (agree_resume, checkpoint_problems, load_checkpoint, placement_hostfile,
                                    placement_problems, resume_inventory, save_checkpoint)
from abc_crawler.mpi.gather import VerifyingWriter
from abc_crawler.store.session import prepare_rank_dir, rank_files
from crawlcheck import LAB, MPIEXEC, BIN, generate, serve


@pytest.mark.parametrize("mod", [checkpoint, config, gather, session])
def test_doctests(mod):
    assert doctest.testmod(mod).failed == 0


def _warc(rank, seq=0):
    return f"s-rank-{rank:05d}-{seq:05d}.warc.gz"


def _state(offset=100, log=20, journal=0, rank=0, closed=()):
    files = [*closed, [_warc(rank, len(closed)), offset]] if offset else list(closed)
    return {"state_version": checkpoint.STATE_VERSION, "superstep": 3,
            "warc": {"offset": offset, "files": files, "seen": {}}, "log": log, "journal": journal, "x": [1, 2]}


def test_a_checkpoint_of_an_older_state_version_is_refused_by_name(tmp_path):
    state = _state(offset=0, log=0)
    del state["state_version"]                 # what sessions before the versioned state wrote
    save_checkpoint(tmp_path, 0, 3, state)
    problems = checkpoint_problems(tmp_path, 0, 3)
    assert len(problems) == 1 and "checkpoint state version 1" in problems[0]
    assert "resume the session with the abc-crawler version that wrote it" in problems[0]
    save_checkpoint(tmp_path, 0, 4, _state(offset=0, log=0))
    assert checkpoint_problems(tmp_path, 0, 4) == []


def test_checkpoint_names_the_files_it_needs(tmp_path):
    sd = tmp_path
    save_checkpoint(sd, 0, 3, _state(offset=100, log=20, journal=30))
    assert load_checkpoint(sd, 0, 3)["x"] == [1, 2]          # the state after the header
    problems = checkpoint_problems(sd, 0, 3)
    assert sorted(p.split()[1] for p in problems) == [str(sd / "checkpoint/rank-00000.log"), str(sd / "journal.bin"),
                                                      str(sd / "warc" / _warc(0))]
    assert all(p.startswith("missing ") for p in problems)
    (sd / "warc").mkdir()
    (sd / "warc" / _warc(0)).write_bytes(b"w" * 100)
    (sd / "checkpoint/rank-00000.log").write_bytes(b"l" * 25)      # longer than recorded: fine (cut back)
    (sd / "journal.bin").write_bytes(b"j" * 29)                     # one byte short
    assert checkpoint_problems(sd, 0, 3) == [
        f"{sd / 'journal.bin'} holds 29 bytes, the checkpoint of superstep 3 needs 30"]
    (sd / "journal.bin").write_bytes(b"j" * 30)
    assert checkpoint_problems(sd, 0, 3) == []
    assert checkpoint_problems(sd, 0, 4) == [f"missing {sd / 'checkpoint/rank-00000.00000004.ckpt'}"]
    # a damaged checkpoint file is a problem, not a crash
    (sd / "checkpoint/rank-00000.00000003.ckpt").write_bytes(b"\x80\x05garbage")
    assert checkpoint_problems(sd, 0, 3)[0].startswith("unreadable ")


def test_a_checkpoint_needs_every_warc_file_of_a_rotated_rank(tmp_path):
    """Rotation: the closed files whole, the current one to its size at the checkpoint."""
    sd = tmp_path
    save_checkpoint(sd, 2, 5, _state(offset=40, log=0, rank=2, closed=[[_warc(2, 0), 900], [_warc(2, 1), 800]]))
    (sd / "warc").mkdir()
    for seq, n in ((0, 900), (1, 799), (2, 55)):
        (sd / "warc" / _warc(2, seq)).write_bytes(b"w" * n)
    assert checkpoint_problems(sd, 2, 5) == [
        f"{sd / 'warc' / _warc(2, 1)} holds 799 bytes, the checkpoint of superstep 5 needs 800"]
    (sd / "warc" / _warc(2, 0)).unlink()
    assert len(checkpoint_problems(sd, 2, 5)) == 2


class RunsCode:
    """Unpickling this calls ``open(marker, "w")``: what a crafted checkpoint would do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickled_checkpoint_is_refused_and_runs_nothing(tmp_path):
    """Checkpoints of formats 1-2 were pickle streams: one crafted to run code (a file is created
    when it is unpickled) is refused by name, and nothing of it runs — nor of a pickled log or
    journal record (issue 31)."""
    marker = tmp_path / "ran"
    (tmp_path / "checkpoint").mkdir()
    crafted = pickle.dumps({"state_version": 3, "x": RunsCode(marker)}, protocol=5)
    (tmp_path / "checkpoint/rank-00001.00000007.ckpt").write_bytes(crafted)
    problems = checkpoint_problems(tmp_path, 1, 7)
    assert len(problems) == 1 and "a pickled file of an older abc-crawler" in problems[0], problems
    with pytest.raises(checkpoint.CheckpointFormatError, match="reading a pickle can run code"):
        load_checkpoint(tmp_path, 1, 7)
    record = pickle.dumps(RunsCode(marker), protocol=5)
    (tmp_path / "journal.bin").write_bytes(len(record).to_bytes(8, "little") + record)
    with pytest.raises(checkpoint.CheckpointFormatError, match="pickled"):
        list(checkpoint.Journal.truncate_and_read(tmp_path, len(record) + 8))
    assert not marker.exists()                   # nothing was unpickled
    assert pickle.loads(crafted) and marker.exists()   # (the control: unpickled, it does run)


def test_agree_resume_newest_complete_everywhere_else_names_what_is_missing():
    ok = []
    # a rank one checkpoint ahead of the others: the newest common superstep
    assert agree_resume([{5: ok, 6: ok}, {4: ok, 5: ok}], ["a", "b"], "s") == (5, [])
    # the newest is incomplete on one rank (its WARC file shorter): the older one, complete everywhere
    assert agree_resume([{4: ok, 5: ok}, {4: ok, 5: ["s/warc/x holds 3 bytes"]}], ["a", "b"], "s") == (4, [])
    # nothing common: refused, naming the rank, its host and what it misses
    step, lines = agree_resume([{4: ok, 5: ok}, {4: ok, 5: ok}, {2: ok}, {5: ["missing s/journal.bin"]}],
                               ["a", "a", "b", "b"], "s")
    assert step is None
    assert lines == ["rank 2 on host b: missing s/checkpoint/rank-00002.00000005.ckpt",
                     "rank 3 on host b: missing s/journal.bin"]
    # killed between the first checkpoint of some ranks and of the others: nothing common, refused
    assert agree_resume([{2: ok}, {2: ok}, {}, {}], ["a", "a", "b", "b"], "s") == (None, [
        "rank 2 on host b: missing s/checkpoint/rank-00002.00000002.ckpt",
        "rank 3 on host b: missing s/checkpoint/rank-00003.00000002.ckpt"])


def test_placement():
    assert placement_problems(["a", "a", "b", "b"], ["a", "a", "b", "b"]) == []
    assert placement_problems(["a", "a", "b", "b"], ["a", "b", "b", "b"]) == ["rank 1 ran on host a, now on b"]
    assert placement_hostfile(["a", "b", "a", "b"]) == ["a:1", "b:1", "a:1", "b:1"]


def test_rank_files_lists_what_each_rank_wrote(tmp_path):
    sd = tmp_path
    files = {"warc/rank-00000.warc.gz": b"0", "warc/rank-00001.warc.gz": b"11", "warc/rank-00012.warc.gz": b"x",
             "checkpoint/rank-00001.00000004.ckpt": b"c", "checkpoint/rank-00001.log": b"l",
             "errors/rank-00001.txt": b"e", "stats.json": b"{}", "graph.npz": b"g", "manifest.json": b"{}",
             ".stats.json.abc.tmp": b"half", "report/report.md": b"r"}
    for rel, data in files.items():
        (sd / rel).parent.mkdir(parents=True, exist_ok=True)
        (sd / rel).write_bytes(data)
    one = rank_files(sd, 1)
    assert [f["path"] for f in one] == ["checkpoint/rank-00001.00000004.ckpt", "checkpoint/rank-00001.log",
                                        "errors/rank-00001.txt", "warc/rank-00001.warc.gz"]
    assert one[-1] == {"path": "warc/rank-00001.warc.gz", "bytes": 2, "sha256": hashlib.sha256(b"11").hexdigest()}
    assert [f["path"] for f in rank_files(sd, 0, session_wide=True)] == [
        "graph.npz", "report/report.md", "stats.json", "warc/rank-00000.warc.gz"]
    assert [f["path"] for f in rank_files(sd, 12)] == ["warc/rank-00012.warc.gz"]
    # rotated WARC files and their indexes, named after the session (which may contain "rank")
    for rel in ("warc/my-rank-run-rank-00001-00000.warc.gz", "warc/my-rank-run-rank-00001-00000.cdxj",
                "warc/my-rank-run-rank-00001-00001.warc.gz", "warc/my-rank-run-rank-00002-00000.warc.gz"):
        (sd / rel).write_bytes(b"w")
    assert [f["path"] for f in rank_files(sd, 1) if f["path"].startswith("warc/my")] == [
        "warc/my-rank-run-rank-00001-00000.cdxj", "warc/my-rank-run-rank-00001-00000.warc.gz",
        "warc/my-rank-run-rank-00001-00001.warc.gz"]
    assert [f["path"] for f in rank_files(sd, 0, session_wide=True) if f["path"].startswith("warc/my")] == []


def test_prepare_rank_dir(tmp_path):
    sd = tmp_path / "sessions/s"
    assert prepare_rank_dir(sd, 3, ["warc", "checkpoint"]) is None
    assert sorted(p.name for p in sd.iterdir()) == ["checkpoint", "warc"]       # no probe left behind
    # a new session on a path holding this rank's files from another session: refused
    (sd / "warc/rank-00003.warc.gz").write_bytes(b"old")
    why = prepare_rank_dir(sd, 3, ["warc"])
    assert why.startswith(f"{sd / 'warc/rank-00003.warc.gz'} exists")
    assert prepare_rank_dir(sd, 2, ["warc"]) is None                  # another rank's file: not this rank's
    assert prepare_rank_dir(sd, 3, ["warc"], fresh=False) is None     # a resume continues them
    # a file where the directory must go
    (tmp_path / "blocked").write_text("x")
    why = prepare_rank_dir(tmp_path / "blocked/s", 0)
    assert why.startswith(f"cannot create the session directory {tmp_path / 'blocked/s'}")


def test_a_gathered_copy_is_kept_only_when_size_and_sha256_match(tmp_path):
    data = b"warc bytes" * 1000
    good = VerifyingWriter(tmp_path / "warc/a.warc.gz", len(data), hashlib.sha256(data).hexdigest())
    good.write(data[:7])
    good.write(data[7:])
    assert good.commit() is None and (tmp_path / "warc/a.warc.gz").read_bytes() == data
    bad = VerifyingWriter(tmp_path / "warc/b.warc.gz", len(data), hashlib.sha256(b"other").hexdigest())
    bad.write(data)
    assert bad.commit() == "SHA-256 differs from the sender's listing"
    short = VerifyingWriter(tmp_path / "warc/c.warc.gz", len(data) + 1, hashlib.sha256(data).hexdigest())
    short.write(data)
    assert short.commit().startswith(f"{len(data)} bytes arrived")
    failed = VerifyingWriter(tmp_path / "warc/d.warc.gz", 0, hashlib.sha256(b"").hexdigest())
    assert failed.commit(sender_failed=True) == "the sending rank could not read it"
    assert sorted(p.name for p in (tmp_path / "warc").iterdir()) == ["a.warc.gz"]    # no temporary left


# -- resumes refused on one host, every file unchanged -------------------------------------------------

@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("rulesweb")
    generate(d, n_hosts=4, n_pages=120, seed=17)
    return d


def _crawl(web, session, *extra, timeout=120):
    import subprocess

    cmd = [MPIEXEC, "-n", "2", str(BIN / "abc-crawl"), str(web / "seeds.txt"), *LAB, "--resolve", str(web / "resolve.txt"),
           "--session-dir", str(session), "--politeness-delay", "0", "--phases", "off", "--no-stats", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _resume(session, timeout=120):
    import subprocess

    return subprocess.run([MPIEXEC, "-n", "2", str(BIN / "abc-crawl"), "--resume", str(session)],
                          capture_output=True, text=True, timeout=timeout)


def _snapshot(root):
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_resume_without_checkpoints_is_refused_and_changes_nothing(web, tmp_path):
    session = tmp_path / "s"
    with serve(web):
        r = _crawl(web, session, "--checkpoint-seconds", "0", "--max-pages", "30")
        assert r.returncode == 0, r.stderr[-3000:]
        before = _snapshot(session)
        assert any(p.startswith("warc/") for p in before)
        r = _resume(session)
    assert r.returncode == 2
    assert r.stderr.count("abc-crawl:") == 1 and "no rank holds a checkpoint" in r.stderr, r.stderr
    assert _snapshot(session) == before


def test_resume_with_a_rank_missing_its_checkpoint_is_refused_then_resumes_once_it_is_back(web, tmp_path):
    session = tmp_path / "s"
    with serve(web):
        r = _crawl(web, session, "--checkpoint-seconds", "0.2", "--max-pages", "40")
        assert r.returncode == 0, r.stderr[-3000:]
        aside = tmp_path / "aside"
        aside.mkdir()
        for p in (session / "checkpoint").glob("rank-00001.*.ckpt"):
            shutil.move(p, aside / p.name)
        before = _snapshot(session)
        r = _resume(session)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("abc-crawl:") == 1 and "Traceback" not in r.stderr
        assert "rank 1 on host " in r.stderr and f"missing {session}/checkpoint/rank-00001." in r.stderr, r.stderr
        assert "rank 0 on host" not in r.stderr
        assert _snapshot(session) == before
        for p in aside.iterdir():                   # the control: with the file back, it resumes
            shutil.move(p, session / "checkpoint" / p.name)
        r = _resume(session)
    assert r.returncode == 0, r.stderr[-3000:]
    manifest = json.loads((session / "manifest.json").read_text())
    assert len(manifest["resumed"]) == 1 and manifest["stopped"] != "running"



def test_resume_of_a_session_whose_checkpoints_were_replaced_by_a_crafted_pickle_runs_nothing(web, tmp_path):
    """The issue's attack: a killed crawl's checkpoint files replaced with a pickle crafted to run a
    command; `abc-crawl --resume` refuses (exit 2, naming the file) and the command never runs."""
    session = tmp_path / "s"
    marker = tmp_path / "ran"
    with serve(web):
        r = _crawl(web, session, "--checkpoint-seconds", "0.2", "--max-pages", "40")
        assert r.returncode == 0, r.stderr[-3000:]
    crafted = pickle.dumps({"state_version": 4, "x": RunsCode(marker)}, protocol=5)
    ckpts = sorted((session / "checkpoint").glob("rank-*.ckpt"))
    assert ckpts
    for p in ckpts:
        p.write_bytes(crafted)
    r = _resume(session)
    assert r.returncode == 2, r.stderr[-3000:]
    assert "pickled file of an older abc-crawler" in r.stderr and not marker.exists()
