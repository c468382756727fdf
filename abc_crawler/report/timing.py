"""Where a session's time went: what bounded its wall time — a host (its politeness-bound
makespan), a rank (its busy time), waiting for phase slots, or the exchange — from stats.json,
for the session and the one it is compared with (``--against``)."""
from __future__ import annotations

__all__ = ["time_figures", "time_rows", "graph_figure_rows"]


def _one(stats: dict) -> dict:
    per = stats.get("per_rank", [])
    b = stats.get("bounds") or {}
    hosts = b.get("hosts") or []

    def col(key):
        return [p.get(key, 0.0) or 0.0 for p in per]

    def has(key):                 # sessions written before a figure have none: None, shown as a dash
        return any(key in p for p in per)

    cuts = stats.get("slot_cuts") or {}
    return {
        "wall_s": stats.get("wall_s"),
        "host_bound_s": b.get("host_bound_s"),
        "host": hosts[0]["host"] if hosts else None,
        "rank_busy_max_s": max(b.get("rank_busy_s") or [0.0]) if b else None,
        "idle_slot_max_s": max(col("idle_slot_s"), default=0.0),
        "idle_slot_sum_s": round(sum(col("idle_slot_s")), 3),
        "idle_rest_sum_s": round(sum(col("idle_rest_s")), 3),
        "idle_empty_sum_s": round(sum(col("idle_empty_s")), 3),
        "exchange_max_s": max(col("exchange_s"), default=0.0),
        "loop_gap_max_s": (max((p["loop_gaps"][0][1] for p in per if p.get("loop_gaps")), default=0.0)
                           if has("loop_gaps") else None),
        "loop_gap_sum_s": round(sum(col("loop_gap_s")), 3) if has("loop_gap_s") else None,
        "handovers": int(sum(col("handovers"))),
        "lease_wait_max_ms": max(col("lease_wait_max_ms")) if has("lease_wait_max_ms") else None,
        "slot_cuts": cuts.get("total"),
        "bound_by": _bound_by(stats),
    }


def _bound_by(stats: dict) -> str:
    """The likeliest bound: the biggest host when its politeness bound is within 10 % of the wall
    time; else the ranks waiting for slots with work queued when that is most of the wall time;
    else the busiest rank."""
    wall = stats.get("wall_s") or 0.0
    b = stats.get("bounds") or {}
    if not wall or not b:
        return "unknown"
    if (b.get("host_bound_s") or 0.0) >= 0.9 * wall:
        return "a host's politeness"
    per = stats.get("per_rank", [])
    if per and max(p.get("idle_slot_s", 0.0) for p in per) >= 0.5 * wall:
        return "waiting for phase slots"
    if per and max(p.get("exchange_s", 0.0) for p in per) >= 0.5 * wall:
        return "the exchange"
    return "the ranks' own work"


def time_figures(stats: dict, against: dict | None = None) -> dict:
    out = {"session": _one(stats), "against": _one(against) if against is not None else None}
    if against is not None and stats.get("wall_s") and against.get("wall_s"):
        out["wall_ratio"] = stats["wall_s"] / against["wall_s"]
    return out


_ROWS = [
    ("wall time, s", "wall_s", "{:.1f}"),
    ("biggest host's politeness bound, s", "host_bound_s", "{:.1f}"),
    ("  that host", "host", "{}"),
    ("busiest rank's busy time, s", "rank_busy_max_s", "{:.1f}"),
    ("longest wait for a slot with work queued (one rank), s", "idle_slot_max_s", "{:.1f}"),
    ("waiting for slots, all ranks, s", "idle_slot_sum_s", "{:.1f}"),
    ("waiting for hosts' rests, all ranks, s", "idle_rest_sum_s", "{:.1f}"),
    ("nothing queued, all ranks, s", "idle_empty_sum_s", "{:.1f}"),
    ("longest time in exchanges (one rank), s", "exchange_max_s", "{:.1f}"),
    ("longest time a rank's loop stood still (busy elsewhere or descheduled), s", "loop_gap_max_s", "{:.2f}"),
    ("loops standing still 50 ms or more, all ranks, s", "loop_gap_sum_s", "{:.1f}"),
    ("slots handed over", "handovers", "{:,}"),
    ("longest hand-over (a lease from sending to taking), ms", "lease_wait_max_ms", "{:,}"),
    ("requests cut at slot ends", "slot_cuts", "{:,}"),
    ("bound by", "bound_by", "{}"),
]


def time_rows(tf: dict) -> tuple[list[str], list[list[str]]]:
    """A table: one row per figure, a column for the session (and the other session)."""
    head = ["where the time went", "session"] + (["against"] if tf.get("against") else [])
    body = []
    for title, key, fmt in _ROWS:
        row = [title]
        for col in ("session", "against"):
            d = tf.get(col)
            if d is None:
                continue
            v = d.get(key)
            row.append("—" if v is None else fmt.format(v))
        body.append(row)
    if tf.get("wall_ratio") is not None:
        body.append(["wall time, session / against", f"{tf['wall_ratio']:.2f}", ""])
    return head, body


def graph_figure_rows(stats: dict) -> list[tuple[str, str]]:
    """The crawled graph's statistics as labelled rows, each label naming its scope (whole graph or
    first N pages) and kind (exact or estimate ± standard error). Sessions written before the
    whole-graph statistics had their figures (``scc_count``, ``diameter``, ``avg_distance``) directly
    under ``graph``: those are of the first ``stats_nodes`` pages, and are labelled so."""
    from ..progress import graph_rows

    g = stats.get("graph") or {}
    if "whole" in g or "first_n" in g:
        return graph_rows(g)
    rows = [("graph, whole (exact)", f"{g.get('nodes')} nodes, {g.get('edges')} edges")]
    if "scc_count" in g:
        n = g.get("stats_nodes", g.get("nodes"))
        rows.append((f"graph, first {n} pages (exact)",
                     f"{g.get('scc_count')} SCC, {g.get('dangling', '-')} dangling, diameter {g.get('diameter', '-')}, "
                     f"avg distance {g.get('avg_distance', '-')}"))
    return rows
