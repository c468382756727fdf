"""A re-crawl with --previous against a plain one: bytes on the wire and wall time (issue 21).

    .venv/bin/python bench/recrawl.py [--ranks 4] [--runs 3] [--changed 0.05] [--delay 0] [--out DIR]

The real corpus (bench/corpus.py: Debian's documentation sites) is copied once into
``--out`` (its sites must be changeable without touching /usr/share/doc) and served by nginx,
whose handling of conditional requests is the real thing (``ETag`` = mtime-size,
``If-Modified-Since`` exact). Each run:

1. session 1: ``mpiexec -n RANKS abc-crawl`` of the corpus (hash assignment);
2. ``--changed`` of the HTML pages session 1 stored (5 %) get a comment appended on disk;
3. session 2 with ``--previous`` session 1, and a plain session 2 without it (baseline: the same
   changed web crawled from scratch), in alternating order from run to run, each against a fresh
   nginx with its own access log;
4. the changed files are put back.

Bytes on the wire are nginx's: ``$bytes_sent`` (response heads and bodies) plus
``$request_length`` (request lines and heads) over every request of the session's access log.
Wall time is the whole ``mpiexec`` run. The script checks that session 2 with ``--previous``
got 304 for the unchanged pages, fetched every changed page, and that its graph has the nodes and
edges of the plain re-crawl. Medians and ratios are printed and written to
``bench/results/recrawl.json``.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import SITES, ensure_installed, layout  # noqa: E402
from harness import DATA, describe_header, rotated, run_abc, write_result  # noqa: E402
from nginx import read_access_log, serve  # noqa: E402

import numpy as np  # noqa: E402

DEFAULT_OUT = str(DATA / "recrawl-corpus")
PORT = 18090


def corpus_copy(out: Path, port: int = PORT) -> Path:
    """The corpus laid out in ``out`` with real copies of the sites (made once, reused)."""
    ensure_installed(True)
    mark = out / ".copied"
    if mark.exists():
        return out
    layout(out, port)
    for host in SITES:
        link = out / "sites" / host
        root = Path(link.readlink()) if link.is_symlink() else None
        if root is None:
            continue
        tmp = out / "sites" / f".{host}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(root, tmp, symlinks=True)      # Debian's symlinks into /usr/share/javascript stay links
        link.unlink()
        tmp.rename(link)
    mark.write_text("sites copied from the document roots of bench/corpus.py\n")
    return out


def changed_files(web: Path, session: Path, fraction: float, seed: int) -> dict[Path, bytes]:
    """Pick ``fraction`` of the HTML pages session 1 stored as graph nodes; append a comment to each
    file. Returns path -> original bytes (to put back)."""
    from abc_crawler.store.session import load_graph

    g = load_graph(session)
    urls = sorted(g.urls[i] for i in g.node_url.tolist())
    rng = random.Random(seed)
    pick = rng.sample(urls, max(1, round(fraction * len(urls))))
    out: dict[Path, bytes] = {}
    for u in pick:
        rest = u.split("://", 1)[1]
        host = rest.split("/", 1)[0].split(":")[0]
        path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        f = web / "sites" / host / path.split("?", 1)[0].lstrip("/")
        if f.is_dir() or path.endswith("/"):
            f = f / "index.html"
        if not f.is_file():
            continue
        real = f.resolve()
        data = real.read_bytes()
        if f.is_symlink():
            f.unlink()                              # never write through a link into /usr/share
        f.write_bytes(data + f"\n<!-- changed by bench/recrawl.py (run seed {seed}) -->\n".encode())
        out[f] = data
    return out


def wire(log: Path) -> dict:
    rows = read_access_log(log)
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    return {"requests_served": len(rows), "wire_bytes": sum(int(r["sent"]) + int(r["received"]) for r in rows),
            "body_bytes": sum(int(r["bytes"]) for r in rows), "statuses": statuses}


def crawl(web: Path, work: Path, name: str, ranks: int, extra: list[str]) -> dict:
    log = work / f"{name}.access.jsonl"
    log.unlink(missing_ok=True)
    with serve(web, port=PORT, access_log=str(log)):
        row = run_abc(ranks, web, work / name, *extra, keep=True)
    row.update(wire(log))
    st = row.pop("_stats")
    row["not_modified"] = st.get("not_modified", 0)
    row["nodes"], row["edges"] = st["graph"]["nodes"], st["graph"]["edges"]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--changed", type=float, default=0.05, help="fraction of HTML pages changed between the sessions")
    ap.add_argument("--delay", type=float, default=0.0, help="--politeness-delay of every crawl")
    ap.add_argument("--out", default=DEFAULT_OUT, help="where the corpus copy and the sessions go")
    ap.add_argument("--result", default=None, help="result file (default bench/results/recrawl.json)")
    a = ap.parse_args(argv)
    print(describe_header(f"re-crawl with --previous, corpus, {a.ranks} ranks, {a.changed:.0%} changed"))
    out = Path(a.out)
    web = corpus_copy(out)
    work = out / "sessions"
    extra = ["--no-stats", "--politeness-delay", str(a.delay)]
    rows = []
    for run in range(a.runs):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        s1 = crawl(web, work, "s1", a.ranks, extra)
        originals = changed_files(web, work / "s1", a.changed, seed=run)
        try:
            got = {}
            for name in rotated(["s2-previous", "s2-plain"], run):
                more = ["--previous", str(work / "s1")] if name == "s2-previous" else []
                got[name] = crawl(web, work, name, a.ranks, extra + more)
        finally:
            for f, data in originals.items():
                f.write_bytes(data)
        prev, plain = got["s2-previous"], got["s2-plain"]
        check = {"changed_pages": len(originals),
                 "graph_equal": (prev["nodes"], prev["edges"]) == (plain["nodes"], plain["edges"]),
                 "304_share_of_unchanged": prev["not_modified"] / max(1, s1["pages_ok"] - len(originals))}
        rows.append({"s1": s1, "s2_previous": prev, "s2_plain": plain, "check": check})
        print(f"run {run + 1}: s1 {s1['wall_s']:.1f} s {s1['wire_bytes'] / 1e6:.1f} MB | "
              f"s2 --previous {prev['wall_s']:.1f} s {prev['wire_bytes'] / 1e6:.2f} MB, {prev['not_modified']} x 304 | "
              f"s2 plain {plain['wall_s']:.1f} s {plain['wire_bytes'] / 1e6:.1f} MB | {check}")
    med = lambda key, sub: statistics.median(r[key][sub] for r in rows)  # noqa: E731
    table = {k: {m: med(k, m) for m in ("wall_s", "wire_bytes", "body_bytes", "requests_served", "pages", "not_modified",
                                         "nodes", "edges")} for k in ("s1", "s2_previous", "s2_plain")}
    ratios = {"wire_s2_previous_over_s1": statistics.median(r["s2_previous"]["wire_bytes"] / r["s1"]["wire_bytes"] for r in rows),
              "wire_s2_previous_over_s2_plain": statistics.median(
                  r["s2_previous"]["wire_bytes"] / r["s2_plain"]["wire_bytes"] for r in rows),
              "wall_s2_previous_over_s1": statistics.median(r["s2_previous"]["wall_s"] / r["s1"]["wall_s"] for r in rows),
              "wall_s2_previous_over_s2_plain": statistics.median(
                  r["s2_previous"]["wall_s"] / r["s2_plain"]["wall_s"] for r in rows)}
    print("\nmedians over", a.runs, "runs")
    print(f"{'session':<14} {'wall s':>8} {'wire MB':>9} {'body MB':>9} {'requests':>9} {'304':>6} {'nodes':>6} {'edges':>7}")
    for k, v in table.items():
        print(f"{k:<14} {v['wall_s']:>8.1f} {v['wire_bytes'] / 1e6:>9.2f} {v['body_bytes'] / 1e6:>9.2f} "
              f"{v['requests_served']:>9.0f} {v['not_modified']:>6.0f} {v['nodes']:>6.0f} {v['edges']:>7.0f}")
    print("ratios:", ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    ok = all(r["check"]["graph_equal"] for r in rows)
    print("graph of s2 --previous equals the plain re-crawl's:", ok)
    path = write_result("recrawl", {"benchmark": "recrawl", "args": vars(a), "abc_flags": extra, "runs": rows,
                                    "medians": table, "ratios": ratios}, a.result)
    print(f"written {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
