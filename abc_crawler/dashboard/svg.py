"""Small SVG charts drawn on the server: bars, lines and log–log points.

The dashboard's charts are SVG documents made here from a snapshot, with no
JavaScript charting library: nothing has to be fetched, vendored or kept up
to date, the page works without a build step or internet on any machine
that runs the crawl, and an SVG is cheap to make (a few hundred elements,
about a millisecond of rank 0's CPU per chart, made at most once per
snapshot). Every text is escaped; the documents use no fonts or resources
of their own beyond the browser's ``sans-serif``.

Examples
--------
>>> nice_ticks(0, 97)
[0, 20, 40, 60, 80, 100]
>>> human(1536), human(2_500_000), human(0.25)
('1.5k', '2.5M', '0.25')
>>> "<rect" in bars("pages", ["0", "1"], [3, 5])
True
"""
from __future__ import annotations

import math
from html import escape

__all__ = ["nice_ticks", "human", "bars", "lines", "loglog", "hbars", "grid", "PALETTE"]

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
_FONT = 'font-family="sans-serif"'


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi] (steps of 1, 2 or 5 × 10^k)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    out, v = [], start
    while v < hi + step * 0.999:
        out.append(int(v) if float(v).is_integer() else round(v, 10))
        v += step
    return out


def human(v: float) -> str:
    """A number in few characters: 1.5k, 2.5M, 3G; small numbers as they are."""
    a = abs(v)
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            x = v / div
            return f"{x:.0f}{unit}" if abs(x) >= 100 or float(x).is_integer() else f"{x:.1f}{unit}"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.2g}" if a < 1 else f"{v:.1f}"


class _Plot:
    """Maps data to pixels inside a plot area and collects SVG elements."""

    def __init__(self, width: int, height: int, title: str, left: int = 48, right: int = 12, top: int = 24,
                 bottom: int = 34):
        self.w, self.h = width, height
        self.x0, self.x1, self.y0, self.y1 = left, width - right, height - bottom, top
        self.parts = [f'<text x="{width / 2:.0f}" y="15" text-anchor="middle" font-size="12" font-weight="bold" '
                      f'{_FONT}>{escape(title)}</text>']

    def text(self, x: float, y: float, s: str, anchor: str = "middle", size: int = 10, extra: str = "") -> None:
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" {_FONT}'
                          f'{extra}>{escape(s)}</text>')

    def line(self, x1, y1, x2, y2, color="#ccc", width=1.0) -> None:
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
                          f'stroke-width="{width}"/>')

    def svg(self, label: str) -> str:
        self.parts.append(f'<line x1="{self.x0}" y1="{self.y0}" x2="{self.x1}" y2="{self.y0}" stroke="#444"/>')
        self.parts.append(f'<line x1="{self.x0}" y1="{self.y0}" x2="{self.x0}" y2="{self.y1}" stroke="#444"/>')
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
                f'viewBox="0 0 {self.w} {self.h}" role="img" aria-label="{escape(label)}">'
                f'<rect width="100%" height="100%" fill="#fff"/>' + "".join(self.parts) + "</svg>")

    def y_axis(self, ticks: list[float], ymap, fmt=human) -> None:
        for t in ticks:
            y = ymap(t)
            self.line(self.x0, y, self.x1, y, "#eee")
            self.text(self.x0 - 4, y + 3, fmt(t), "end", 9)


def _empty(plot: _Plot, label: str, message: str = "no data yet") -> str:
    plot.text((plot.x0 + plot.x1) / 2, (plot.y0 + plot.y1) / 2 + 4, message, size=11, extra=' fill="#888"')
    return plot.svg(label)


def bars(title: str, labels: list[str], values: list[float], width: int = 300, height: int = 180,
         color: str = PALETTE[0], fmt=human) -> str:
    """Vertical bars, one per label (e.g. per rank), with the mean as a dashed line."""
    p = _Plot(width, height, title)
    if not values:
        return _empty(p, title)
    ticks = nice_ticks(0, max(max(values), 1))
    top = ticks[-1]
    ymap = lambda v: p.y0 - (p.y0 - p.y1) * (v / top)  # noqa: E731
    p.y_axis(ticks, ymap, fmt)
    n = len(values)
    slot = (p.x1 - p.x0) / n
    for i, (lab, v) in enumerate(zip(labels, values)):
        x = p.x0 + i * slot + slot * 0.15
        y = ymap(v)
        p.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{p.y0 - y:.1f}" '
                       f'fill="{color}"><title>{escape(lab)}: {escape(fmt(v))}</title></rect>')
        if n <= 32 or i % max(1, n // 16) == 0:
            p.text(x + slot * 0.35, p.y0 + 12, lab, size=9)
    mean = sum(values) / n
    p.parts.append(f'<line x1="{p.x0}" y1="{ymap(mean):.1f}" x2="{p.x1}" y2="{ymap(mean):.1f}" stroke="#000" '
                   f'stroke-dasharray="4 3"/>')
    p.text((p.x0 + p.x1) / 2, height - 6, "rank (dashed: mean)", size=9)
    return p.svg(title)


def lines(title: str, x: list[float], series: list[tuple[str, list[float]]], xlabel: str, width: int = 460,
          height: int = 200, fmt=human) -> str:
    """Line series over a shared x axis, with a legend."""
    p = _Plot(width, height, title)
    if not x or not any(s for _, s in series):
        return _empty(p, title)
    ymax = max((max(s) for _, s in series if s), default=1)
    ticks = nice_ticks(0, max(ymax, 1))
    top = ticks[-1]
    xlo, xhi = min(x), max(x)
    xspan = (xhi - xlo) or 1
    xmap = lambda v: p.x0 + (p.x1 - p.x0) * (v - xlo) / xspan  # noqa: E731
    ymap = lambda v: p.y0 - (p.y0 - p.y1) * (v / top)  # noqa: E731
    p.y_axis(ticks, ymap, fmt)
    for t in nice_ticks(xlo, xhi, 6):
        if xlo <= t <= xhi:
            p.text(xmap(t), p.y0 + 12, human(t), size=9)
    for i, (name, ys) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        pts = " ".join(f"{xmap(a):.1f},{ymap(b):.1f}" for a, b in zip(x, ys))
        p.parts.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        lx = p.x0 + 8 + i * 130
        p.parts.append(f'<rect x="{lx}" y="{p.y1 + 2}" width="10" height="3" fill="{color}"/>')
        p.text(lx + 14, p.y1 + 7, name, "start", 9)
    p.text((p.x0 + p.x1) / 2, height - 6, xlabel, size=9)
    return p.svg(title)


def loglog(title: str, series: list[tuple[str, list[float], list[float]]], xlabel: str, ylabel: str,
           width: int = 460, height: int = 220) -> str:
    """Points (joined) on log–log axes; points with x or y ≤ 0 are left out."""
    p = _Plot(width, height, title, left=52)
    pts = [[(a, b) for a, b in zip(xs, ys) if a > 0 and b > 0] for _, xs, ys in series]
    flat = [q for s in pts for q in s]
    if not flat:
        return _empty(p, title)
    lx = [math.log10(a) for a, _ in flat]
    ly = [math.log10(b) for _, b in flat]
    xlo, xhi = math.floor(min(lx)), max(math.ceil(max(lx)), math.floor(min(lx)) + 1)
    ylo, yhi = math.floor(min(ly)), max(math.ceil(max(ly)), math.floor(min(ly)) + 1)
    xmap = lambda v: p.x0 + (p.x1 - p.x0) * (math.log10(v) - xlo) / (xhi - xlo)  # noqa: E731
    ymap = lambda v: p.y0 - (p.y0 - p.y1) * (math.log10(v) - ylo) / (yhi - ylo)  # noqa: E731
    for e in range(ylo, yhi + 1):
        p.line(p.x0, ymap(10 ** e), p.x1, ymap(10 ** e), "#eee")
        p.text(p.x0 - 4, ymap(10 ** e) + 3, human(10 ** e), "end", 9)
    for e in range(xlo, xhi + 1):
        p.line(xmap(10 ** e), p.y0, xmap(10 ** e), p.y1, "#eee")
        p.text(xmap(10 ** e), p.y0 + 12, human(10 ** e), size=9)
    for i, ((name, _, _), s) in enumerate(zip(series, pts)):
        color = PALETTE[i % len(PALETTE)]
        if len(s) > 1:
            path = " ".join(f"{xmap(a):.1f},{ymap(b):.1f}" for a, b in s)
            p.parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1" '
                           f'stroke-opacity="0.6"/>')
        for a, b in s:
            p.parts.append(f'<circle cx="{xmap(a):.1f}" cy="{ymap(b):.1f}" r="2.5" fill="{color}">'
                           f'<title>{escape(name)}: {human(a)} → {human(b)}</title></circle>')
        p.parts.append(f'<rect x="{p.x1 - 120}" y="{p.y1 + 4 + 12 * i}" width="10" height="3" fill="{color}"/>')
        p.text(p.x1 - 106, p.y1 + 9 + 12 * i, name, "start", 9)
    p.text((p.x0 + p.x1) / 2, height - 6, xlabel, size=9)
    p.text(12, (p.y0 + p.y1) / 2, ylabel, size=9, extra=f' transform="rotate(-90 12 {(p.y0 + p.y1) / 2:.0f})"')
    return p.svg(title)


def hbars(title: str, items: list[tuple[str, float]], width: int = 460, bar_h: int = 16,
          empty: str = "none") -> str:
    """Horizontal bars with their labels (e.g. errors by kind), largest first; ``empty`` when there are none."""
    height = 30 + max(1, len(items)) * (bar_h + 4) + 8
    p = _Plot(width, height, title, left=170, bottom=8, top=26)
    if not items:
        return _empty(p, title, empty)
    top = max(v for _, v in items) or 1
    for i, (lab, v) in enumerate(items):
        y = p.y1 + i * (bar_h + 4)
        w = (p.x1 - 60 - p.x0) * v / top
        p.parts.append(f'<rect x="{p.x0}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{PALETTE[3]}"/>')
        p.text(p.x0 - 4, y + bar_h - 4, lab, "end", 10)
        p.text(p.x0 + w + 4, y + bar_h - 4, human(v), "start", 10)
    return p.svg(title)


def grid(title: str, charts: list[str], columns: int = 2) -> str:
    """Several SVG charts of equal size side by side (small multiples) in one document."""
    import re

    sizes = [tuple(int(v) for v in re.match(r'<svg [^>]*width="(\d+)" height="(\d+)"', c).groups()) for c in charts]
    cw = max(w for w, _ in sizes)
    ch = max(h for _, h in sizes)
    rows = -(-len(charts) // columns)
    width, height = cw * columns, ch * rows + 4
    body = "".join(f'<g transform="translate({(i % columns) * cw},{(i // columns) * ch + 4})">{c}</g>'
                   for i, c in enumerate(charts))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">{body}</svg>')
