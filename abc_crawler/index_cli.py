"""``abc-index SESSION``: (re)build the CDXJ index of every WARC file of a session.

    abc-index SESSION [--check]

Each ``warc/NAME.warc.gz`` gets ``warc/NAME.cdxj`` (:mod:`abc_crawler.store.cdxj`: pywb's format, what
``abc-crawl`` writes when it closes a file), read record by record. Use it for files whose index
is missing (a crawl killed and never resumed leaves its last file per rank unindexed) or after
copying WARC files around. With ``--check`` nothing is written: the indexes on disk are compared
with the rebuilt ones and every missing or different one is named (exit status 1).

Exit status: 0 done, 1 ``--check`` found a difference, 2 bad input (no such session directory,
no WARC file, an unreadable WARC file).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .store.cdxj import index_lines, index_path, read_index, write_index

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="abc-index", description="Build the CDXJ index of every WARC file of a session.")
    p.add_argument("session", help="a session directory (its warc/ folder is indexed)")
    p.add_argument("--check", action="store_true", help="write nothing; compare the indexes on disk with rebuilt ones")
    a = p.parse_args(argv)
    wdir = Path(a.session) / "warc"
    if not wdir.is_dir():
        print(f"abc-index: {a.session}: no warc/ directory (not a session directory)", file=sys.stderr)
        return 2
    files = sorted(wdir.glob("*.warc.gz"))
    if not files:
        print(f"abc-index: {wdir}: no WARC file", file=sys.stderr)
        return 2
    bad = 0
    lines_total = 0
    for f in files:
        try:
            lines = index_lines(f)
        except Exception as exc:  # noqa: BLE001 - warcio raises several kinds for a damaged file
            print(f"abc-index: {f}: cannot read it as WARC ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 2
        lines_total += len(lines)
        if a.check:
            want = sorted(set(lines))
            idx = index_path(f)
            have = read_index(idx) if idx.exists() else None
            if have != want:
                bad += 1
                print(f"{idx}: {'missing' if have is None else 'differs from its WARC file'}")
        else:
            write_index(f, lines)
    what = "checked" if a.check else "indexed"
    print(f"abc-index: {len(files)} WARC file(s) {what}, {lines_total} records"
          + (f", {bad} index(es) missing or different" if a.check else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
