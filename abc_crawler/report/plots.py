"""The report's plots (matplotlib, Agg backend; imported only when plots are drawn): PNG files for
``report.md``, and the same figures as SVG documents for ``report.html`` when asked."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..store.session import atomic_write_bytes
from .figures import FIGURES
from .render import column_titles, fmt_value
from .thesis import MODEL_TITLES

__all__ = ["make_plots"]


def _thousands():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v == int(v) else f"{v:,.4g}")


def _save(fig, path: Path, svg: dict[str, bytes] | None) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    atomic_write_bytes(path, buf.getvalue())
    if svg is not None:               # text as paths (matplotlib's default): the SVG needs no font
        buf = io.BytesIO()
        fig.savefig(buf, format="svg")
        svg[path.name] = buf.getvalue()


def _bar_labels(ax, bars, texts) -> None:
    for b, t in zip(bars, texts):
        ax.annotate(t, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    fontsize=7 if len(t) <= 8 else 6, xytext=(0, 2), textcoords="offset points")


def make_plots(rep: dict, out_dir: Path, svg: dict[str, bytes] | None = None) -> dict[str, str]:
    """Write the PNG plots into ``out_dir``; returns {name: file name}. With ``svg`` (a dict), each
    figure is also drawn as an SVG document into ``svg[file name]``.

    ``measured_vs_predicted.png`` (grouped bars per figure), ``per_rank.png``
    (stored bytes and requests per rank), ``supersteps.png`` (volume and MPI
    messages per superstep, cumulative volume over time), ``thesis.png``
    (volume and messages against K).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    out: dict[str, str] = {}
    cols = column_titles(rep)
    colors = {"measured": "#1f77b4", "predicted_stored": "#ff7f0e", "predicted_on_against": "#ffbb78",
              "hash_on_session": "#7f7f7f", "against_measured": "#2ca02c"}
    me = Path(rep["session"]["path"]).name

    # 1. measured vs predicted, one panel per figure
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, (key, label, kind) in zip(axes.ravel(), FIGURES):
        x = np.arange(len(cols))
        for i, (c, _) in enumerate(cols):
            d = rep["columns"][c]
            v = d.get(key)
            if v is not None:
                b = ax.bar(i, v, color=colors[c])
                _bar_labels(ax, b, [fmt_value(key, v)])
            elif d.get(f"{key}_min") is not None:
                lo = d[f"{key}_min"]
                b = ax.bar(i, lo, color="white", edgecolor=colors[c], hatch="//")
                _bar_labels(ax, b, [f"≥{lo:,}"])
            else:
                ax.annotate("n/a", (i, 0), ha="center", va="bottom", fontsize=7, color="0.4",
                            xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(x, [t.replace(" (", "\n(") for _, t in cols], fontsize=7)
        ax.set_title(label, fontsize=10)
        ax.margins(y=0.25)
        ax.yaxis.set_major_formatter(_thousands())
        if kind == "pct":
            ax.set_ylabel("%")
    fig.suptitle(f"{me}: measured and predicted (docs/SESSION_FORMAT.md)")
    fig.tight_layout()
    _save(fig, out_dir / "measured_vs_predicted.png", svg)
    plt.close(fig)
    out["measured_vs_predicted"] = "measured_vs_predicted.png"

    # 2. per-rank load
    K = rep["session"]["ranks"]
    series = [(f"measured ({me})", rep["columns"]["measured"], colors["measured"])]
    if "predicted_stored" in rep["columns"]:
        series.append(("predicted (stored)", rep["columns"]["predicted_stored"], colors["predicted_stored"]))
    if rep["against"] and rep["against"]["ranks"] == K:
        series.append((f"measured ({Path(rep['against']['path']).name})", rep["columns"]["against_measured"],
                       colors["against_measured"]))
    fig, axes = plt.subplots(1, 2, figsize=(min(24, max(10, 0.5 * K * len(series) + 4)), 4.6))
    width = 0.8 / len(series)
    for ax, key, title in ((axes[0], "bytes_per_rank", "stored bytes per rank"),
                           (axes[1], "requests_per_rank", "requests per rank")):
        for i, (name, d, col) in enumerate(series):
            v = np.asarray(d.get(key) or [0] * K, dtype=float)
            ax.bar(np.arange(K) + (i - (len(series) - 1) / 2) * width, v, width, label=name, color=col)
        avg = np.mean(rep["columns"]["measured"][key]) if K else 0
        ax.axhline(avg, color="k", lw=0.8, ls="--", label="average (measured)")
        ax.set_xticks(np.arange(K) if K <= 32 else np.arange(0, K, max(1, K // 16)))
        ax.set_xlabel("rank")
        ax.set_title(title)
        ax.yaxis.set_major_formatter(_thousands())
    axes[0].set_ylabel("bytes")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    _save(fig, out_dir / "per_rank.png", svg)
    plt.close(fig)
    out["per_rank"] = "per_rank.png"

    # 3. per superstep
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    runs = [(me, rep["per_superstep"]["session"], colors["measured"])]
    if rep["per_superstep"]["against"] is not None:  # drawn first, so this session's lines stay on top
        runs.insert(0, (Path(rep["against"]["path"]).name, rep["per_superstep"]["against"],
                        colors["against_measured"]))
    for name, d, col in runs:
        x = np.arange(len(d["volume"]))
        mk = {"marker": "o", "ms": 3} if len(x) <= 40 else {"lw": 1}
        axes[0].plot(x, d["volume"], color=col, label=name, **mk)
        axes[1].plot(np.arange(len(d["messages_mpi"])), d["messages_mpi"], color=col, label=name, **mk)
        t = d["t"][: len(d["volume"])]
        if t:
            axes[2].step(t, np.cumsum(d["volume"][: len(t)]), where="post", color=col, label=name)
    axes[0].set_title("volume (MV) per superstep")
    axes[0].set_ylabel("bytes")
    axes[1].set_title("MPI messages per superstep")
    axes[1].set_ylabel("messages")
    axes[2].set_title("cumulative volume over time")
    axes[2].set_xlabel("seconds since the crawl start")
    axes[2].set_ylabel("bytes")
    axes[0].yaxis.set_major_formatter(_thousands())
    axes[2].yaxis.set_major_formatter(_thousands())
    for ax in axes[:2]:
        ax.set_xlabel("superstep")
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, out_dir / "supersteps.png", svg)
    plt.close(fig)
    out["supersteps"] = "supersteps.png"

    # 4. thesis figures
    th = rep.get("thesis")
    if th and th["rows"]:
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
        Ks = [r["K"] for r in th["rows"]]
        style = {"hash": ("#7f7f7f", "o"), "site-hash": ("#bcbd22", "s"), "page-gp": ("#1f77b4", "^"),
                 "site-gp": ("#17becf", "v"), "page-hp": ("#d62728", "D"), "site-hp": ("#ff9896", "d")}
        panels = ((axes[0], "volume_bytes", ("hash", "site-hash", "page-gp", "site-gp"), "predicted volume (bytes)"),
                  (axes[1], "messages_thesis", ("hash", "site-hash", "page-hp", "site-hp"),
                   "predicted messages (thesis)"),
                  (axes[2], "max_pct", ("hash", "site-hash", "page-gp", "site-gp", "page-hp", "site-hp"),
                   "max(storage, request) imbalance %"))
        for ax, key, names, title in panels:
            for m in names:
                if key == "max_pct":
                    pts = [(r["K"], max(0.01, r[m]["storage_pct"], r[m]["request_pct"]))
                           for r in th["rows"] if r.get(m)]
                else:
                    pts = [(r["K"], r[m][key]) for r in th["rows"] if r.get(m)]
                if pts:
                    col, mk = style[m]
                    ax.plot(*zip(*pts), marker=mk, color=col, label=MODEL_TITLES[m])
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(Ks, [str(k) for k in Ks])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(_thousands())
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel("K (parts)")
            ax.set_title(title, fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8)
        axes[2].axhline(100 * th["imbalance"], color="k", lw=0.8, ls="--")
        fig.suptitle(f"Türk's models on the graph of {me} (cf. Figures 6.4, 6.5)")
        fig.tight_layout()
        _save(fig, out_dir / "thesis.png", svg)
        plt.close(fig)
        out["thesis"] = "thesis.png"
    return out
