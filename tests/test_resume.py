"""Crash and resume under MPI: kill -9 of one rank or of all, or SIGTERM, then --resume.

The resumed session must hold every reachable page exactly once across all WARC
files (no page lost, none duplicated), and its statistics must add up
(check_session recomputes everything from the session's own files), and the server's log of
both runs shows every page answered once, but for the pages fetched after the last checkpoint
before the kill, answered once more after the resume, whose WARC records are the second fetch's.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawlcheck import LAB, MPIEXEC, check_indexes, check_session, generate, kill_every_rank, newest_checkpoint, rank_pids, serve

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("rweb")
    generate(d, n_hosts=8, n_pages=900, seed=31)
    return d


@pytest.mark.parametrize("how", ["kill9-one", "kill9-all", "sigterm"])
def test_resume_loses_and_duplicates_nothing(web, tmp_path, how):
    session = tmp_path / "s"
    rng = random.Random(how)
    after = rng.randint(1, 3)                  # kill once this superstep has been checkpointed
    with serve(web, latency=0.003) as srv:
        cmd = [MPIEXEC, "-n", "4", str(BIN / "abc-crawl"), str(web / "seeds.txt"), *LAB, "--resolve",
               str(web / "resolve.txt"), "--session-dir", str(session), "--politeness-delay", "0",
               "--phases", "off", "--checkpoint-seconds", "0.3", "--superstep-seconds", "0.3", "--no-stats",
               "--progress-seconds", "60"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while newest_checkpoint(session) < after and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert proc.poll() is None, "the crawl ended before it could be interrupted"
            pids = rank_pids(str(session))
            assert len(pids) == 4, pids
            if how == "kill9-one":
                os.kill(rng.choice(pids), signal.SIGKILL)
            elif how == "kill9-all":
                for p in pids:
                    os.kill(p, signal.SIGKILL)
            else:
                os.kill(rng.choice(pids), signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        manifest = json.loads((session / "manifest.json").read_text())
        if how == "sigterm":
            assert proc.returncode == 0, err[-2000:]
            assert manifest["stopped"] == "signal"
        else:
            assert proc.returncode != 0
            assert manifest["stopped"] == "running"          # the kill left the session unfinished
        run1 = srv.rows()
        mark = srv.mark()
        r = subprocess.run([MPIEXEC, "-n", "4", str(BIN / "abc-crawl"), "--resume", str(session)],
                           capture_output=True, text=True, timeout=180)
        run2 = srv.rows(mark)
    assert r.returncode == 0, r.stderr[-3000:]
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["stopped"] == "done"
    assert len(manifest["resumed"]) == 1 and manifest["resumed"][0]["from_superstep"] >= after - 1
    # every reachable page exactly once, metrics add up; from the server's log: a page is asked again
    # after the resume only when its first fetch came after the checkpoint (cut back with the WARC file)
    facts = check_session(web, session, [run1, run2])
    assert facts["stats"]["requests"] == len(facts["manifest"]["expected"]["requested"])
    again = facts["log"]["once"]["answers"] - facts["log"]["once"]["pages"]
    assert again < facts["log"]["once"]["pages"]
    # robots.txt answers add up over the runs too (the resume fetches them again): more than the
    # second run's, at most both runs'
    robots = [sum(1 for x in rows if x["path"] == "/robots.txt") for rows in (run1, run2)]
    assert robots[1] < facts["stats"]["robots_fetches"] <= sum(robots), (robots, facts["stats"]["robots_fetches"])


def test_kill9_with_rotated_warc_files_then_resume(web, tmp_path):
    """kill -9 of every rank during a crawl whose WARC files rotate every 60 kB, then --resume:
    every page exactly once over all the files, every file indexed (the same lines as
    cdxj-indexer's), the manifest lists every rank's files, the validator table one row per page."""
    import numpy as np

    from abc_crawler.store.validators import load_table

    session = tmp_path / "s"
    cmd = [MPIEXEC, "-n", "4", str(BIN / "abc-crawl"), str(web / "seeds.txt"), *LAB, "--resolve", str(web / "resolve.txt"),
           "--session-dir", str(session), "--politeness-delay", "0", "--phases", "off", "--checkpoint-seconds", "0.3",
           "--superstep-seconds", "0.3", "--no-stats", "--progress-seconds", "60", "--warc-max-bytes", "60000",
           "--warc-batch", "4"]
    with serve(web, latency=0.003):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            # kill once some rank has rotated and a common checkpoint exists
            while ((newest_checkpoint(session) < 2 or len(list((session / "warc").glob("*.cdxj"))) < 2)
                   and proc.poll() is None and time.monotonic() < deadline):
                time.sleep(0.02)
            assert proc.poll() is None, "the crawl ended before it could be interrupted"
            kill_every_rank(proc, session)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        r = subprocess.run([MPIEXEC, "-n", "4", str(BIN / "abc-crawl"), "--resume", str(session)],
                           capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    facts = check_session(web, session)            # every page exactly once over all WARC files
    n_files = check_indexes(session)               # every file indexed, as cdxj-indexer indexes it
    assert n_files > 8
    manifest = json.loads((session / "manifest.json").read_text())
    listed = {f["path"] for loc in manifest["locations"] for f in loc["files"]}
    on_disk = {f"warc/{p.name}" for p in (session / "warc").iterdir()}
    assert on_disk <= listed and len(on_disk) == 2 * n_files
    t = load_table(session)
    answered = {facts["metrics"]["graph"].urls[i] for i in np.flatnonzero(facts["metrics"]["graph"].url_status > 0)}
    assert sorted(t["url"]) == sorted(answered)
    assert all(f"warc/{f}" in listed for f in t["file"])


def test_resume_refuses_another_number_of_ranks(web, tmp_path):
    session = tmp_path / "s"
    with serve(web):
        r = subprocess.run([MPIEXEC, "-n", "2", str(BIN / "abc-crawl"), str(web / "seeds.txt"), *LAB, "--resolve",
                            str(web / "resolve.txt"), "--session-dir", str(session), "--max-pages", "30",
                            "--no-stats"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        r = subprocess.run([MPIEXEC, "-n", "4", str(BIN / "abc-crawl"), "--resume", str(session)],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "ran on 2 ranks; resume it with mpiexec -n 2" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("damage, says", [
    ("file", "not a directory"),
    ("empty", "manifest.json: cannot be read"),
    ("cut", "manifest.json: cannot be read"),
    ("no-config", "has no settings"),
])
def test_resume_refuses_a_file_or_a_damaged_manifest_in_one_line(tmp_path, damage, says):
    """--resume on a regular file, or on a session whose manifest.json was cut short (a full disk)
    or lost its settings: one line naming the file, status 2, no traceback."""
    target = tmp_path / "s"
    if damage == "file":
        target.write_text("not a session\n")
    else:
        target.mkdir()
        text = {"empty": "", "cut": '{"format": 1, "ranks": 1, "config": {"seeds": "x", "po',
                "no-config": '{"format": 1, "ranks": 1, "stopped": "running"}'}[damage]
        (target / "manifest.json").write_text(text)
    r = subprocess.run([MPIEXEC, "-n", "1", str(BIN / "abc-crawl"), "--resume", str(target)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and says in r.stderr and str(target) in r.stderr, r.stderr[-1500:]
    assert "Traceback" not in r.stderr


def test_checkpoint_state_is_versioned_plain_data():
    """The checkpoint holds plain data with a version; counters survive the round trip exactly; a
    state of another version is refused with a message that says what to do."""
    import pickle
    from collections import Counter

    import pytest as _pytest

    from abc_crawler.crawl.counters import RankCounters
    from abc_crawler.crawl.state import STATE_VERSION, check_version
    from abc_crawler.exceptions import AbcError

    c = RankCounters(requests=7, retries=2)
    c.errors.update({"timeout": 3, "http_4xx": 1})
    c.links["followed"] = 12
    plain = c.as_plain()
    assert plain["errors"] == {"timeout": 3, "http_4xx": 1} and type(plain["errors"]) is dict
    # plain data only: it unpickles without any class of the crawler
    assert pickle.loads(pickle.dumps(plain)) == plain
    assert "abc_crawler" not in str(pickle.dumps(plain))
    d = RankCounters()
    links = d.links
    d.load(plain)
    assert d == c and d.links is links          # loaded in place (the parts hold the counters)
    with _pytest.raises(ValueError, match="unknown counters"):
        d.load({**plain, "renamed_field": 1})
    check_version({"state_version": STATE_VERSION})
    for old in ({}, {"state_version": 1}, {"state_version": STATE_VERSION + 1}):
        with _pytest.raises(AbcError, match="checkpoint state version .* resume the session with the abc-crawler"):
            check_version(old, "s: rank 0")
