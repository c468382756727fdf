"""The dashboard's charts (``GET /chart/NAME.svg``), each drawn from one snapshot.

========== ==============================================================
name       what it shows
========== ==============================================================
progress   requests and pages per second over the crawl (rate history)
ranks      per rank: pages, bytes stored, queued URLs, idle waiting for a slot
exchange   per superstep: Türk volume (MV) and wire bytes; MPI messages
degrees    in- and out-degree distributions, log–log (nodes per degree)
errors     errors by kind
========== ==============================================================

Examples
--------
>>> degree_points({"lo": [0, 1, 2, 4], "hi": [0, 1, 3, 7], "count": [5, 4, 2, 4]})
([1.0, 2.449489742783178, 5.291502622129181], [4.0, 1.0, 1.0])
"""
from __future__ import annotations

import math

from . import svg

__all__ = ["CHARTS", "render", "degree_points"]


def degree_points(bins: dict) -> tuple[list[float], list[float]]:
    """Log–log points of a binned degree histogram: (geometric centre of each bin with degree ≥ 1,
    nodes per degree in the bin)."""
    xs, ys = [], []
    for lo, hi, c in zip(bins.get("lo", []), bins.get("hi", []), bins.get("count", [])):
        if hi < 1 or c <= 0:
            continue
        lo = max(lo, 1)
        xs.append(math.sqrt(lo * hi))
        ys.append(c / (hi - lo + 1))
    return xs, ys


def _progress(s: dict) -> str:
    h = s["history"]
    t = h["t"]

    def per_second(values: list[int], scale: float = 1.0) -> list[float]:
        return [0.0] + [max(0.0, (values[i] - values[i - 1]) / (t[i] - t[i - 1]) / scale) if t[i] > t[i - 1]
                        else 0.0 for i in range(1, len(t))]

    return svg.grid("progress", [
        svg.lines("requests per second", t, [("requests/s", per_second(h["requests"]))], "seconds since the start"),
        svg.lines("download throughput, KB/s", t, [("KB/s", per_second(h["bytes"], 1024.0))],
                  "seconds since the start"),
    ], columns=1)


def _ranks(s: dict) -> str:
    ranks = s["per_rank"]
    labels = [str(r["rank"]) for r in ranks]
    get = lambda k: [float(r.get(k) or 0) for r in ranks]  # noqa: E731
    return svg.grid("per rank", [
        svg.bars("pages crawled", labels, get("pages_ok"), color=svg.PALETTE[0]),
        svg.bars("bytes stored", labels, get("bytes"), color=svg.PALETTE[1]),
        svg.bars("queued URLs", labels, get("queued"), color=svg.PALETTE[2]),
        svg.bars("idle for a phase slot (s)", labels, get("idle_slot_s"), color=svg.PALETTE[4]),
    ], columns=2)


def _exchange(s: dict) -> str:
    ser = s["exchange"]["series"]
    x = ser["superstep"]
    per = "superstep" if ser["width"] == 1 else f"{ser['width']} supersteps"
    return svg.grid("exchange", [
        svg.lines(f"bytes per {per}", x, [("volume (MV)", ser["volume_bytes"]), ("wire", ser["wire_bytes"])],
                  "superstep"),
        svg.lines(f"MPI messages per {per}", x, [("messages", ser["messages"])], "superstep"),
    ], columns=1)


def _degrees(s: dict) -> str:
    g = s["graph"]
    series = [("in-degree", *degree_points(g["in_degree"])), ("out-degree", *degree_points(g["out_degree"]))]
    return svg.loglog("degree distributions", series, "degree", "nodes per degree")


def _errors(s: dict) -> str:
    items = list(s["errors"].items())[:16]
    return svg.hbars("errors by kind", [(k, float(v)) for k, v in items], empty="no errors")


CHARTS = {"progress": _progress, "ranks": _ranks, "exchange": _exchange, "degrees": _degrees, "errors": _errors}


def render(name: str, snapshot: dict) -> str:
    """The SVG document of chart ``name`` for ``snapshot`` (KeyError for an unknown name)."""
    return CHARTS[name](snapshot)
