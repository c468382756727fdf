"""The exchange a crawl reports against an independent count (issue 32): ``messages_mpi``,
``wire_urls``, ``wire_bytes`` and the rows of ``exchange.npz`` are derived again from the session's
links, the superstep each page was processed in and the owners recomputed by tests/ownership_ref.py
(``crawlcheck.derived_exchange``), not only compared between two files the crawler wrote.

Each control edits a copy of a good session's exchange.npz and stats.json together (so that the two
crawler files still agree with each other) and must be caught by ``crawlcheck.check_exchange``.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from crawlcheck import check_exchange, check_session, crawl_cli, derived_exchange, generate, serve


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("exweb")
    generate(d, n_hosts=6, n_pages=300, seed=3)
    return d


def _crawl(web, root, ranks, *extra):
    session = root / "s"
    with serve(web) as srv:
        r = crawl_cli(ranks, web, session, *extra, timeout=300)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    return session, rows


@pytest.fixture(scope="module")
def three(web, tmp_path_factory):
    """Three ranks, hash assignment, every page: the exact case."""
    return _crawl(web, tmp_path_factory.mktemp("ex3"), 3)


@pytest.fixture(scope="module")
def deep(web, tmp_path_factory):
    """Two ranks with --max-depth 3: links past the depth are in the graph but never sent."""
    return _crawl(web, tmp_path_factory.mktemp("exdeep"), 2, "--max-depth", "3")


def test_the_exchange_is_the_one_the_links_call_for(web, three):
    session, rows = three
    check_session(web, session, rows)                 # the check runs inside check_session too
    got = check_exchange(session)
    stats = json.loads((session / "stats.json").read_text())
    # every pair of the three ranks exchanged, in several supersteps
    assert got["rows"] == stats["exchange"]["messages_mpi"] >= 6
    assert got["urls"] == stats["exchange"]["wire_urls"] > 100
    want = derived_exchange(session)
    assert {k[1:] for k in want} == {(a, b) for a in range(3) for b in range(3) if a != b}
    assert len({k[0] for k in want}) >= 3


def test_a_depth_limited_crawl_is_bounded_from_above(web, deep):
    session, rows = deep
    check_session(web, session, rows, complete=False)     # pages past the depth are not requested
    got = check_exchange(session, exact=False)
    stats = json.loads((session / "stats.json").read_text())
    # links past the depth were not sent: fewer URLs than the links call for, so the exact form
    # fails and the bound is not met with equality (the bound is a real one)
    assert stats["exchange"]["wire_urls"] < got["urls"]
    with pytest.raises(AssertionError, match="not the derived"):
        check_exchange(session, exact=True)


def _edited(session, tmp_path, edit):
    """A copy of ``session`` whose exchange.npz rows are ``edit(rows)``, with stats.json's
    exchange made to agree with them (the crawler's two files consistent with each other)."""
    out = tmp_path / "edited"
    shutil.copytree(session, out)
    with np.load(out / "exchange.npz") as z:
        arrays = {k: z[k] for k in z.files}
    rows = edit(arrays["rows"].copy())
    arrays["rows"] = rows
    np.savez(out / "exchange.npz", **arrays)
    stats = json.loads((out / "stats.json").read_text())
    ex = stats["exchange"]
    ex["messages_mpi"], ex["wire_bytes"], ex["wire_urls"] = int(rows.shape[0]), int(rows[:, 3].sum()), int(rows[:, 4].sum())
    (out / "stats.json").write_text(json.dumps(stats))
    return out


def test_the_copy_itself_passes(three, tmp_path):
    session, _ = three
    check_exchange(_edited(session, tmp_path, lambda r: r))


def test_control_a_message_missing_from_both_files_is_caught(three, tmp_path):
    session, _ = three
    bad = _edited(session, tmp_path, lambda r: r[1:])
    with pytest.raises(AssertionError, match="a derived exchange row missing from exchange.npz"):
        check_exchange(bad)


def test_control_one_message_too_many_is_caught(three, tmp_path):
    """A message in a superstep in which its rank found nothing for that destination."""
    session, _ = three
    want = derived_exchange(session)
    st = max(k[0] for k in want) + 1
    extra = np.array([[st, 0, 1, 40, 1]], dtype=np.int64)
    bad = _edited(session, tmp_path, lambda r: np.vstack([r, extra]))
    with pytest.raises(AssertionError, match="an exchange row no link calls for"):
        check_exchange(bad)
    # the bound of a depth-limited session catches it too: a URL sent that no link found
    with pytest.raises(AssertionError, match="more URLs sent than the links found so far call for"):
        check_exchange(bad, exact=False)


def test_control_urls_moved_between_two_messages_are_caught(three, tmp_path):
    """The totals unchanged, one URL counted in another message of the same pair."""
    session, _ = three

    def move(r):
        pair = next((i, j) for i in range(len(r)) for j in range(len(r))
                    if i != j and tuple(r[i, 1:3]) == tuple(r[j, 1:3]) and r[i, 4] > 1)
        i, j = pair
        r[i, 4] -= 1
        r[j, 4] += 1
        return r
    bad = _edited(session, tmp_path, move)
    with pytest.raises(AssertionError, match="URLs or bytes are not the derived ones"):
        check_exchange(bad)


def test_control_a_message_sent_a_superstep_early_is_caught(three, tmp_path):
    """A URL sent before its rank processed any page linking it: caught by the bound too.

    The message is moved to an earlier superstep in which its pair sent nothing, so the edited file
    still holds one row per (superstep, source, destination), as the crawler writes it; moved onto
    a row of its pair it would merge with that row, which is another defect (CI once picked such a
    row: the check then reported the row count, not the bound)."""
    session, _ = three

    def early(r):
        keys = {tuple(k) for k in r[:, :3].tolist()}
        i, t = next((i, t) for i in range(len(r)) if r[i, 4] > 0
                    for t in range(int(r[i, 0]) - 1, -1, -1) if (t, int(r[i, 1]), int(r[i, 2])) not in keys)
        r[i, 0] = t
        return r
    bad = _edited(session, tmp_path, early)
    with pytest.raises(AssertionError, match="exchange row"):
        check_exchange(bad)
    with pytest.raises(AssertionError, match="more URLs sent than the links found so far call for"):
        check_exchange(bad, exact=False)


def test_control_wire_bytes_outside_the_bounds_are_caught(three, tmp_path):
    session, _ = three

    def fat(r):
        r[0, 3] += 10_000
        return r
    with pytest.raises(AssertionError, match="URLs or bytes are not the derived ones"):
        check_exchange(_edited(session, tmp_path, fat))


def test_control_the_two_crawler_files_disagreeing_is_caught(three, tmp_path):
    session, _ = three
    out = tmp_path / "disagree"
    shutil.copytree(session, out)
    stats = json.loads((out / "stats.json").read_text())
    stats["exchange"]["messages_mpi"] += 1
    (out / "stats.json").write_text(json.dumps(stats))
    with pytest.raises(AssertionError, match="messages_mpi is not the derived number of messages"):
        check_exchange(out)
