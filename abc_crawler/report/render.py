"""The report as text: the stdout summary (:func:`render_text`) and ``report.md`` (:func:`render_markdown`).

Examples
--------
>>> fmt_value("volume_bytes", 61544), fmt_value("storage_pct", 9.93906)
('61,544', '9.94')
"""
from __future__ import annotations

from pathlib import Path

from .figures import FIGURE_KIND, FIGURES
from .load import PROG
from .thesis import MODEL_TITLES
from .timing import time_rows

__all__ = ["fmt_value", "column_titles", "render_text", "render_markdown"]


def fmt_value(key: str, v) -> str:
    """A figure as text: thousands separators for counts, 2 decimals for percentages."""
    if v is None:
        return "—"
    if FIGURE_KIND.get(key) == "pct" or isinstance(v, float) and key not in FIGURE_KIND:
        return f"{v:.2f}"
    return f"{int(v):,}"


def _fmt_ratio(key: str, r) -> str:
    if r is None:
        return "—"
    if FIGURE_KIND[key] == "pct":
        return f"{r:+.2f} pp"
    if r == 0:
        return "0"
    return f"{r:.3f}" + (f" ({1 / r:.2f}× less)" if r < 1 else "")


def column_titles(rep: dict) -> list[tuple[str, str]]:
    """(column key, title) of every column of the main table present in ``rep``, in order."""
    me = Path(rep["session"]["path"]).name
    other = Path(rep["against"]["path"]).name if rep["against"] else "OTHER"
    titles = {"measured": f"measured ({me})", "predicted_stored": "predicted (stored)",
              "predicted_on_against": f"predicted (on {other})", "hash_on_session": f"hash (on {me})",
              "against_measured": f"measured ({other})"}
    return [(k, titles[k]) for k in titles if k in rep["columns"]]


def _main_rows(rep: dict) -> tuple[list[str], list[list[str]]]:
    cols = column_titles(rep)
    head = ["figure"] + [t for _, t in cols]
    if rep["ratios"] is not None:
        head.append(f"{Path(rep['session']['path']).name} / {Path(rep['against']['path']).name}")
    body = []
    for key, label, _ in FIGURES:
        line = [label]
        for c, _ in cols:
            v = rep["columns"][c].get(key)
            lo = rep["columns"][c].get(f"{key}_min")
            if v is None and lo is not None:
                line.append(f"≥ {lo:,}")
            else:
                line.append(fmt_value(key, v))
        if rep["ratios"] is not None:
            line.append(_fmt_ratio(key, rep["ratios"][key]))
        body.append(line)
    return head, body


def _text_table(head: list[str], body: list[list[str]]) -> str:
    w = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w[0]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))  # noqa: E731
    return "\n".join([fmt(head), "  ".join("-" * x for x in w)] + [fmt(r) for r in body])


def _md_table(head: list[str], body: list[list[str]], align_first_left: bool = True) -> str:
    sep = ["---" if (i == 0 and align_first_left) else "---:" for i in range(len(head))]
    esc = lambda c: str(c).replace("|", "\\|")  # noqa: E731
    return "\n".join("| " + " | ".join(esc(c) for c in r) + " |" for r in [head, sep] + body)


def _summary_lines(rep: dict) -> list[str]:
    s = rep["session"]
    lines = [f"session {s['path']}: {s['ranks']} ranks, assignment {s['assignment']}, {s['requests']:,} requests, "
             f"{s['pages_crawled']:,} pages, {s['supersteps']} supersteps"]
    pv = rep["partvec"]
    if pv and pv.get("file"):
        extra = f", remapped from K={pv['remapped_from']}" if pv.get("remapped_from") else ""
        lines.append(f"part vector {pv['file']}: model {pv['model']}, K={pv['K']}{extra}, "
                     f"made from {pv.get('source') or '?'}")
    if rep["against"]:
        a = rep["against"]
        lines.append(f"against {a['path']}: {a['ranks']} ranks, assignment {a['assignment']}, "
                     f"{a['requests']:,} requests, {a['supersteps']} supersteps")
        r = rep["ratios"]["volume_bytes"]
        v = rep["columns"]["measured"]["volume_bytes"]
        o = rep["columns"]["against_measured"]["volume_bytes"]
        if r is not None:
            lines.append(f"measured volume {v:,} B against {o:,} B: ratio {r:.3f}"
                         + (f", a {1 / r:.2f}-fold reduction" if 0 < r < 1 else ""))
    rq = rep.get("requisites")
    if rq and rq["urls"]:
        lines.append(f"requisites: {rq['urls']:,} of {rq['requested']:,} requested URLs ({rq['bytes_pct']:.1f} % of "
                     f"the bytes) were found only as requisites; in the partition models each is a vertex "
                     f"weighted by its own bytes and one request, tied to the pages that embed it by "
                     f"{rq['embed_links']:,} embed links ({rq['embed_links_local_pct']:.1f} % on the page's "
                     f"rank in this session)")
    rec = rep["recomputed"]
    if rec.get("available"):
        lines.append("check: stats.json " + ("equals" if rec["check"]["consistent"] else "DIFFERS from")
                     + " the figures re-derived from graph.npz and exchange.npz")
    for col, err in rep["prediction_error"].items():
        exact = all(v == 0 for v in err.values())
        name = "stored prediction" if col == "predicted_stored" else "prediction on the other session's graph"
        lines.append(f"{name}: " + ("measured figures equal it exactly" if exact else
                                    "measured − predicted: " + ", ".join(
                                        f"{k} {fmt_value(k, v) if FIGURE_KIND[k] == 'int' else f'{v:+.4f}'}"
                                        for k, v in err.items() if v != 0)))
    return lines


def _thesis_text_rows(th: dict) -> tuple[list[str], list[list[str]]]:
    head = ["K", "vol hash", "vol site-hash", "vol page-GP", "vol site-GP", "msg hash", "msg page-HP"]
    body = []
    for r in th["rows"]:
        line = [str(r["K"])]
        for m in ("hash", "site-hash", "page-gp", "site-gp"):
            line.append(fmt_value("volume_bytes", r[m]["volume_bytes"]) if r.get(m) else "—")
        for m in ("hash", "page-hp"):
            line.append(fmt_value("messages_thesis", r[m]["messages_thesis"]) if r.get(m) else "—")
        body.append(line)
    return head, body


def render_text(rep: dict) -> str:
    """The stdout summary: header lines, the main table, a compact thesis table."""
    out = [f"{PROG}: " + ln for ln in _summary_lines(rep)[:1]]
    out += ["  " + ln for ln in _summary_lines(rep)[1:]]
    out.append("")
    out.append(_text_table(*_main_rows(rep)))
    if rep.get("time"):
        out.append("")
        out.append(_text_table(*time_rows(rep["time"])))
    if rep.get("graph"):
        out.append("")
        out += [f"{k}: {v}" for k, v in rep["graph"]["session"]]
    th = rep.get("thesis")
    if th and th["rows"]:
        out.append("")
        out.append(f"predicted on this session's graph (Türk Tables 6.4/6.5; imbalances in report.md), "
                   f"{th['seconds']:.1f} s:")
        out.append(_text_table(*_thesis_text_rows(th)))
    for n in rep["notes"] + (th["notes"] if th else []):
        out.append(f"note: {n}")
    return "\n".join(out)


_DEFINITIONS = """\
All figures follow the definitions of `docs/SESSION_FORMAT.md`; own(p) is the rank that requests URL p.

- **volume_bytes (MV)** — Türk's volume: over every distinct link (u, v) found on a requested URL u with
  own(v) ≠ own(u), the UTF-8 length of v's URL + 1. It is what a naive exchange sends, and what a part vector's
  page-graph cut predicts (plus links to URLs the previous session never requested).
- **wire_bytes** — bytes the exchange actually moved between different ranks. The crawler sends a remote URL to
  its owner at most once per session (the sender's URL-seen set remembers it), as a line `URL\\n`, plus a
  redirect-hop count `\\tN` when it first found the URL as a redirect target, which depends on the order of
  discovery. "≥ n" is the URL part: Σ over distinct (own(u), v) with own(v) ≠ own(u) of len(v) + 1.
- **messages_thesis (NM)** — over every requested URL u, the number of distinct ranks ≠ own(u) among the owners of
  u's links (connectivity − 1 of u's net; the page-hypergraph objective).
- **messages_mpi** — (superstep, src, dst ≠ src) triples with a non-empty payload. It depends on how the links
  fall into supersteps, so it is not predicted; "≥ n" is a lower bound: the ordered rank pairs that exchange
  anything at all.
- **storage imbalance** — (W_max − W_avg) / W_avg × 100 with W = body bytes of the requested URLs per rank;
  **request imbalance** the same with W = requests per rank (robots.txt fetches excluded).
- **predicted (stored)** — the metrics `abc-repartition` stored in the part vector the session was crawled with,
  computed on the graph it was made from. **predicted (on OTHER)** — the vector's owner rule (URL → its rank; a new
  URL → its host's majority rank, else hash) applied to the other session's graph and recomputed here. **hash** —
  the URL-hash assignment (xxh3 fingerprint → 4096 buckets → rank) on this session's graph with its number of ranks.
- On an unchanged web a session crawled with a part vector requests the same URLs and finds the same links as the
  session the vector was made from, so every predicted figure is met exactly.
"""


def render_markdown(rep: dict, plots: dict[str, str] | None = None) -> str:
    """``report.md``: summary, main table, plots (relative paths), thesis tables, definitions."""
    plots = plots or {}
    s = rep["session"]
    md = [f"# ABC session report: `{Path(s['path']).name}`", ""]
    md += [f"- {ln}" for ln in _summary_lines(rep)]
    md += ["", "## Measured and predicted", "", _md_table(*_main_rows(rep)), ""]
    if rep.get("time"):
        md += ["## Where the time went", "",
               "What bounded the wall time: the biggest host's politeness-bound makespan (its requests × its least "
               "rest, max(politeness delay, Crawl-delay)), the busiest rank, waiting for phase slots with work queued, or the exchange "
               "(`stats.json` `bounds` and per-rank idle times).", "", _md_table(*time_rows(rep["time"])), ""]
    if rep.get("graph"):
        md += ["## The crawled graph", "", "Each figure names its scope (the whole graph, or the first N pages that "
               "the exact O(n²) kernels cover) and its kind (exact, or an estimate ± its standard error).", ""]
        for col, title in (("session", "this session"), ("against", "the other session")):
            rows = rep["graph"].get(col)
            if rows:
                md += [f"### {title}" if rep["graph"].get("against") else "", "",
                       _md_table(["figure", "value"], [list(r) for r in rows]), ""]
    if rep["notes"]:
        md += [f"> note: {n}" for n in rep["notes"]] + [""]
    for key, title in (("measured_vs_predicted", "Measured and predicted figures"),
                       ("per_rank", "Per-rank load"), ("supersteps", "Exchange per superstep")):
        if key in plots:
            md += [f"### {title}", "", f"![{title}]({plots[key]})", ""]
    th = rep.get("thesis")
    if th:
        md += ["## Türk's models on this session's graph", "",
               f"Predicted with each assignment on the graph of this session (K parts, imbalance tolerance "
               f"{100 * th['imbalance']:g} % on bytes and pages, seed {th['seed']}; partitions computed in "
               f"{th['seconds']:.1f} s). Volumes in bytes, imbalances in %. GP = METIS on Türk's graph "
               f"model (objective: volume), HP = Mt-KaHyPar on the hypergraph model (objective: messages), both "
               f"followed by the two-constraint balance repair of `abc-repartition`. These partitions are "
               f"computed afresh on this session's graph: METIS and Mt-KaHyPar depend on the vertex order, so "
               f"a figure here may differ a little from what `abc-repartition` found on another session of the "
               f"same web.", ""]
        ds = rep["dataset"]
        head = ["property", "page-based", "site-based"]
        p, q = ds["page"], ds["site"]
        body = [["vertices", f"{p['vertices']:,}", f"{q['vertices']:,}"],
                ["edges", f"{p['edges']:,}", f"{q['edges']:,}"],
                ["average edge weight (bytes)", f"{p['avg_edge_weight']:.2f}", f"{q['avg_edge_weight']:.2f}"],
                ["maximum edge weight (bytes)", f"{p['max_edge_weight']:,}", f"{q['max_edge_weight']:,}"],
                ["average vertex weight (KB)", f"{p['avg_vertex_kb']:.2f}", f"{q['avg_vertex_kb']:.2f}"],
                ["maximum vertex weight (KB)", f"{p['max_vertex_kb']:.2f}", f"{q['max_vertex_kb']:.2f}"],
                ["average pages per site", "", f"{q['avg_pages_per_site']:.2f}"],
                ["maximum pages per site", "", f"{q['max_pages_per_site']:,}"],
                ["nets", f"{p['nets']:,}", f"{q['nets']:,}"],
                ["pins", f"{p['pins']:,}", f"{q['pins']:,}"],
                ["average net size", f"{p['avg_net_size']:.2f}", f"{q['avg_net_size']:.2f}"]]
        md += ["### Dataset properties (cf. Table 6.1)", "", _md_table(head, body), ""]
        if th["rows"]:
            md += _thesis_md(th)
        if "thesis" in plots:
            md += ["", f"![volume and messages against K]({plots['thesis']})", ""]
        md += [f"> note: {n}" for n in th["notes"]] + ([""] if th["notes"] else [])
    md += ["## Definitions", "", _DEFINITIONS]
    return "\n".join(md)


def _cell(r: dict, m: str, key: str) -> str:
    return fmt_value(key, r[m][key]) if r.get(m) else "—"


def _thesis_md(th: dict) -> list[str]:
    md = []
    for gran, gp, hp, hsh in (("Page", "page-gp", "page-hp", "hash"), ("Site", "site-gp", "site-hp", "site-hash")):
        head = ["K", f"volume {MODEL_TITLES[gp]}", f"volume {MODEL_TITLES[hsh]}", f"messages {MODEL_TITLES[hp]}",
                f"messages {MODEL_TITLES[hsh]}"]
        body = [[str(r["K"]), _cell(r, gp, "volume_bytes"), _cell(r, hsh, "volume_bytes"),
                 _cell(r, hp, "messages_thesis"), _cell(r, hsh, "messages_thesis")] for r in th["rows"]]
        n = "6.4" if gran == "Page" else "6.5"
        md += [f"### {gran}-based volume and messages (cf. Table {n})", "", _md_table(head, body), ""]
    for gran, names in (("Page", ("page-gp", "page-hp", "hash")), ("Site", ("site-gp", "site-hp", "site-hash"))):
        head = ["K"] + [f"storage {MODEL_TITLES[m]}" for m in names] + [f"requests {MODEL_TITLES[m]}" for m in names]
        body = [[str(r["K"])] + [_cell(r, m, "storage_pct") for m in names]
                + [_cell(r, m, "request_pct") for m in names] for r in th["rows"]]
        n = "6.2" if gran == "Page" else "6.3"
        md += [f"### {gran}-based imbalance, % (cf. Table {n})", "", _md_table(head, body), ""]
    head = ["K"] + [f"volume {MODEL_TITLES[m]}" for m in ("hash", "site-hash", "page-gp", "site-gp")] + [
        f"messages {MODEL_TITLES[m]}" for m in ("hash", "page-hp")]
    body = [[str(r["K"])] + [_cell(r, m, "volume_bytes") + (
        f" ({r[m]['storage_pct']:.1f} / {r[m]['request_pct']:.1f})" if r.get(m) else "")
        for m in ("hash", "site-hash", "page-gp", "site-gp")] + [_cell(r, m, "messages_thesis") + (
            f" ({r[m]['storage_pct']:.1f} / {r[m]['request_pct']:.1f})" if r.get(m) else "")
        for m in ("hash", "page-hp")] for r in th["rows"]]
    md += ["### All in one (storage % / request % in brackets)", "", _md_table(head, body), ""]
    return md
