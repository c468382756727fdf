"""``abc-report``'s command line (usage in :mod:`abc_crawler.report`)."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from ..store.session import atomic_write_bytes
from .build import build_report
from .html import render_html
from .load import PROG, ReportError, load_session
from .plots import make_plots
from .render import render_markdown, render_text
from .thesis import DEFAULT_PARTS

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit 2
        raise ReportError(message)


def _parse_parts(text: str) -> tuple[int, ...]:
    try:
        parts = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ReportError(f"--parts: expected comma-separated integers like 2,4,8, got {text!r}") from None
    if not parts or min(parts) < 1:
        raise ReportError(f"--parts: every K must be >= 1, got {text!r}")
    return tuple(sorted(set(parts)))


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON-serializable: {type(o)}")


def _clean(o):
    """NaN/inf (not valid JSON) → None."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_clean(v) for v in o]
    return o


def _main(argv) -> int:
    ap = _Parser(prog=PROG, description="Report a crawl session's communication volume, messages and load "
                 "imbalance, measured beside predicted (and against another session).")
    ap.add_argument("session", help="session directory")
    ap.add_argument("--against", metavar="OTHER", help="another session to compare with (e.g. the one the "
                    "part vector was made from)")
    ap.add_argument("--out", metavar="DIR", help="where report.md, report.json and the PNGs go "
                    "(default SESSION/report)")
    ap.add_argument("--parts", default=",".join(map(str, DEFAULT_PARTS)),
                    help="K values of the thesis-style table (default 2,4,8,16,32,64)")
    ap.add_argument("--no-thesis", action="store_true", help="leave out the thesis-style table")
    ap.add_argument("--no-hp", action="store_true", help="leave out the hypergraph models (Mt-KaHyPar)")
    ap.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    ap.add_argument("--html", action="store_true", help="also write report.html: report.md's tables and plots "
                    "(inline SVG) in one self-contained page that opens from disk")
    ap.add_argument("--seed", type=int, default=1, help="partitioner seed (default 1)")
    ap.add_argument("--threads", type=int, default=2, help="Mt-KaHyPar threads (default 2)")
    ap.add_argument("--crawl-log", action="store_true", help="print the ranks' crawl logs (SESSION/logs/crawl/) "
                    "merged in time order, and nothing else")
    a = ap.parse_args(argv)
    if a.crawl_log:
        return _print_crawl_log(Path(a.session))
    parts = _parse_parts(a.parts)
    if a.seed < 0:
        raise ReportError(f"--seed must be >= 0, got {a.seed}")
    if a.threads < 1:
        raise ReportError(f"--threads must be >= 1, got {a.threads}")
    session = load_session(a.session)
    against = load_session(a.against) if a.against else None
    out_dir = Path(a.out) if a.out else session.path / "report"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError(f"--out {out_dir}: cannot create ({e.strerror})") from None
    rep = build_report(session, against, parts=parts, thesis=not a.no_thesis, hp=not a.no_hp, seed=a.seed,
                       threads=a.threads)
    plots: dict[str, str] = {}
    svgs: dict[str, bytes] | None = {} if a.html else None
    if not a.no_plots:
        try:
            plots = make_plots(rep, out_dir, svgs)
        except ImportError:
            rep["notes"].append("matplotlib is not installed: no plots (pip install matplotlib)")
    rep["plots"] = plots
    rep["out"] = str(out_dir)
    markdown = render_markdown(rep, plots)
    atomic_write_bytes(out_dir / "report.md", markdown.encode())
    if a.html:
        title = f"ABC session report: {session.path.name}"
        atomic_write_bytes(out_dir / "report.html", render_html(markdown, svgs or {}, title).encode())
    atomic_write_bytes(out_dir / "report.json",
                       (json.dumps(_clean(rep), indent=1, default=_json_default) + "\n").encode())
    print(render_text(rep))
    print(f"wrote {out_dir / 'report.md'}, {out_dir / 'report.json'}"
          + (f", {out_dir / 'report.html'}" if a.html else "")
          + (f" and {len(plots)} plots" if plots else ""))
    print(f"graph exports: abc-graph export|rank {session.path} --level page|host|domain (docs/GRAPH_EXPORT.md)")
    return 0


def _print_crawl_log(session: Path) -> int:
    """``--crawl-log``: every rank's crawl log found on this host, merged in time order, to stdout
    (streamed: a k-way merge over the files). A rank whose log is not here is named on stderr."""
    import os

    from ..store.crawllog import log_files, merge

    files = log_files(session)
    if not files:
        raise ReportError(f"{session}: no crawl log (logs/crawl/rank-NNNNN.log) in this session directory")
    try:
        ranks = json.loads((session / "manifest.json").read_text()).get("ranks")
    except (OSError, ValueError):
        ranks = None
    missing = [r for r in range(ranks or 0) if r not in files]
    if missing:
        print(f"{PROG}: no crawl log of rank(s) {', '.join(map(str, missing))} here (on a rank's own host: "
              "copy its logs/crawl/rank-NNNNN.log to this session directory)", file=sys.stderr)
    try:
        sys.stdout.writelines(merge(files.values()))
        sys.stdout.flush()
    except BrokenPipeError:                   # e.g. piped into head: the rest is not wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv=None) -> int:
    """Entry point of ``abc-report``; returns the exit status."""
    try:
        return _main(sys.argv[1:] if argv is None else list(argv))
    except ReportError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
