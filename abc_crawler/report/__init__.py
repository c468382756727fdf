"""``abc-report``: what a session's page-to-rank assignment cost on the actual crawl.

Usage::

    abc-report SESSION [--against OTHER] [--out DIR] [--parts 2,4,8,16,32,64]
               [--no-plots] [--no-hp] [--no-thesis] [--seed S] [--threads T] [--html]
    abc-report SESSION --crawl-log         # the ranks' crawl logs merged in time order, to stdout

For one session directory (``docs/SESSION_FORMAT.md``) the report puts side by side

measured
    the figures of ``stats.json``: Türk volume ``volume_bytes``,
    ``wire_bytes``, ``messages_thesis``, ``messages_mpi``, storage and request
    imbalance. They are re-derived from ``graph.npz`` and ``exchange.npz``
    with the session's own owner function, and the report says whether the
    two agree (``check``).
predicted (stored)
    when ``manifest.json`` says the session was crawled with
    ``partvec:<path>`` and that file exists: the prediction
    ``abc-repartition`` stored in it (:func:`~abc_crawler.partition.assignment_metrics.predict`
    on the graph it was made from);
predicted (on OTHER)
    with ``--against OTHER``: the same part vector's owner rule evaluated on
    OTHER's graph, recomputed here (OTHER is normally the session the vector
    was made from, so this equals the stored prediction);
hash (on this graph)
    the URL-hash baseline predicted on the session's own graph — what the
    same crawl would have cost under ``--assign hash``;
OTHER measured, and this / OTHER
    with ``--against``: the other session's measured figures and the ratios
    (counts) or differences in percentage points (imbalances).

``wire_bytes`` and ``messages_mpi`` depend on the order in which the crawl
finds links, so the report gives lower bounds for them ("≥ n"): for
``wire_bytes`` the URL bytes that must cross (a rank sends each remote URL to
its owner once per session, as a line ``URL\\n``: Σ over distinct (own(u), v)
with own(v) ≠ own(u) of len(v) + 1; the crawler adds a redirect-hop count
``\\tN`` to a URL it first found as a redirect target), for ``messages_mpi``
the ordered rank pairs that exchange anything.

Then, unless ``--no-thesis``, Türk's Tables 6.1–6.5 for this session's graph:
for each K of ``--parts`` (default 2, 4, 8, 16, 32, 64; a K larger than the
requested pages is skipped, a site model's K larger than the hosts is left
out) the predicted volume of hash / site-hash / page-GP / site-GP, the
messages of hash / site-hash / page-HP / site-HP, and both imbalances of each.
The partitions are computed with :func:`abc_crawler.partition.repartition.run_model`
(METIS with two constraints, Mt-KaHyPar KM1; balance repair) like
``abc-repartition``. On the 3,000-page session of ``make demo`` the whole
table took 13–16 s on two cores, about half of it page-HP (Mt-KaHyPar plus
the balance repair, up to 2.7 s at K = 64); ``--no-hp`` drops the hypergraph
models, ``--parts`` fewer K values, ``--no-thesis`` the table.

Output: ``DIR/report.md`` (Markdown with the tables, the PNG plots by relative
path and the definitions), ``DIR/report.json`` (every figure) and the PNGs,
each written atomically; ``DIR`` is ``SESSION/report`` by default. With
``--html`` also ``DIR/report.html``: the same tables and text with every plot
inline as SVG, one file that opens from disk and loads nothing else
(:mod:`.html`). The main table is printed on stdout.

Exit status: 0 on success; 2 with one line on stderr for bad input (missing
session directory, missing or unreadable ``stats.json`` / ``graph.npz`` /
``exchange.npz``, bad ``--parts``).

Modules
-------
:mod:`.load`
    Read a session directory (:func:`load_session`, :class:`SessionFiles`).
:mod:`.figures`
    Measured, re-derived and predicted figures of one session.
:mod:`.thesis`
    Türk's Tables 6.1–6.5 on the session's graph.
:mod:`.build`
    The whole report as one dict (:func:`build_report`), ``report.json``.
:mod:`.render`
    The stdout summary and ``report.md``.
:mod:`.plots`
    The PNG plots (and their SVG drawings for the HTML page).
:mod:`.html`
    ``report.html`` (``--html``).
:mod:`.cli`
    The command line (:func:`main`).
"""
from __future__ import annotations

from .build import REPORT_FORMAT, build_report
from .cli import main
from .html import render_html
from .figures import FIGURES, measured_figures, predicted_figures, recompute_measured, resolve_partvec
from .load import PROG, ReportError, SessionFiles, load_session
from .plots import make_plots
from .render import fmt_value, render_markdown, render_text
from .thesis import DEFAULT_PARTS, dataset_properties, thesis_table

__all__ = [
    "FIGURES",
    "DEFAULT_PARTS",
    "PROG",
    "REPORT_FORMAT",
    "ReportError",
    "SessionFiles",
    "load_session",
    "measured_figures",
    "recompute_measured",
    "predicted_figures",
    "resolve_partvec",
    "dataset_properties",
    "thesis_table",
    "build_report",
    "render_markdown",
    "render_text",
    "render_html",
    "make_plots",
    "fmt_value",
    "main",
]
