"use strict";
// Polls status.json and shows it. The charts are SVG elements drawn here from the snapshot: no
// charting library, and rank 0 only serializes one JSON document per poll (docs/DASHBOARD.md).
(function () {
  const params = new URLSearchParams(location.search);
  const refresh = Math.max(0.5, parseFloat(params.get("refresh") || "2")) * 1000;
  const $ = (id) => document.getElementById(id);
  const int = (v) => (v === null || v === undefined) ? "-" : Math.round(v).toLocaleString("en-US");
  const num = (v, d) => (v === null || v === undefined) ? "-" : Number(v).toFixed(d);
  const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
  function bytes(n) {
    if (n === null || n === undefined) return "-";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return i === 0 ? `${Math.round(n)} B` : `${n.toFixed(1)} ${units[i]}`;
  }
  function human(v) {
    const a = Math.abs(v);
    for (const [d, u] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
      if (a >= d) { const x = v / d; return (Number.isInteger(x) || Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(1)) + u; }
    }
    return Number.isInteger(v) ? String(v) : (a < 1 ? v.toPrecision(2) : v.toFixed(1));
  }
  function duration(s) {
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = Math.floor(s % 60);
    return [h, m, sec].map((x) => String(x).padStart(2, "0")).join(":") + ` (${num(s, 1)} s)`;
  }
  function text(id, value) { const el = $(id); if (el) el.textContent = value; }

  // -- SVG drawing (elements and attributes only: nothing is parsed from strings) -----------------
  const NS = "http://www.w3.org/2000/svg";
  function el(parent, tag, attrs, content) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (content !== undefined) e.textContent = content;
    if (parent) parent.appendChild(e);
    return e;
  }
  function niceTicks(lo, hi, n) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
    const out = [];
    for (let v = Math.floor(lo / step) * step; v < hi + step * 0.999; v += step) out.push(+v.toPrecision(12));
    return out;
  }
  // a plot area of w x h with margins; returns the svg, its group and the inner box
  function frame(title, w, h, m) {
    const svg = el(null, "svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`, "font-family": "sans-serif" });
    el(svg, "text", { x: w / 2, y: 15, "text-anchor": "middle", "font-size": 12, "font-weight": "bold" }, title);
    return { svg, x0: m.l, x1: w - m.r, y0: h - m.b, y1: m.t, w, h };
  }
  function axes(f, xlabel) {
    el(f.svg, "line", { x1: f.x0, y1: f.y0, x2: f.x1, y2: f.y0, stroke: "#444" });
    el(f.svg, "line", { x1: f.x0, y1: f.y0, x2: f.x0, y2: f.y1, stroke: "#444" });
    if (xlabel) el(f.svg, "text", { x: (f.x0 + f.x1) / 2, y: f.h - 4, "text-anchor": "middle", "font-size": 9 }, xlabel);
  }
  function yTicks(f, ticks, ymap) {
    for (const t of ticks) {
      el(f.svg, "line", { x1: f.x0, y1: ymap(t), x2: f.x1, y2: ymap(t), stroke: "#eee" });
      el(f.svg, "text", { x: f.x0 - 4, y: ymap(t) + 3, "text-anchor": "end", "font-size": 9 }, human(t));
    }
  }
  function empty(f, message) {
    el(f.svg, "text", { x: (f.x0 + f.x1) / 2, y: (f.y0 + f.y1) / 2, "text-anchor": "middle", "font-size": 11, fill: "#888" },
       message || "no data yet");
    return f.svg;
  }
  function legend(f, names) {       // top right, above the plot area
    names.forEach((name, i) => {
      const x = f.x1 - 100 * (names.length - i);
      el(f.svg, "rect", { x: x, y: f.y1 - 8, width: 10, height: 3, fill: PALETTE[i % PALETTE.length] });
      el(f.svg, "text", { x: x + 14, y: f.y1 - 3, "font-size": 9 }, name);
    });
  }
  function lines(title, xs, series, xlabel) {
    const f = frame(title, 460, 196, { l: 48, r: 12, t: 32, b: 32 });
    const ymax = Math.max(1, ...series.flatMap(([, ys]) => ys));
    if (xs.length < 1 || !series.some(([, ys]) => ys.some((y) => y > 0))) { axes(f, xlabel); return empty(f); }
    const ticks = niceTicks(0, ymax, 5), top = ticks[ticks.length - 1];
    const xlo = Math.min(...xs), xhi = Math.max(...xs), span = (xhi - xlo) || 1;
    const xmap = (v) => f.x0 + (f.x1 - f.x0) * (v - xlo) / span, ymap = (v) => f.y0 - (f.y0 - f.y1) * v / top;
    yTicks(f, ticks, ymap);
    for (const t of niceTicks(xlo, xhi, 6)) {
      if (t >= xlo && t <= xhi) el(f.svg, "text", { x: xmap(t), y: f.y0 + 12, "text-anchor": "middle", "font-size": 9 }, human(t));
    }
    series.forEach(([, ys], i) => {
      el(f.svg, "polyline", { points: xs.map((x, j) => `${xmap(x).toFixed(1)},${ymap(ys[j] || 0).toFixed(1)}`).join(" "),
                              fill: "none", stroke: PALETTE[i % PALETTE.length], "stroke-width": 1.5 });
    });
    legend(f, series.map(([name]) => name));
    axes(f, xlabel);
    return f.svg;
  }
  function bars(title, labels, values, color) {
    const f = frame(title, 300, 170, { l: 44, r: 8, t: 24, b: 32 });
    if (!values.length) { axes(f); return empty(f); }
    const ticks = niceTicks(0, Math.max(1, ...values), 5), top = ticks[ticks.length - 1];
    const ymap = (v) => f.y0 - (f.y0 - f.y1) * v / top, slot = (f.x1 - f.x0) / values.length;
    yTicks(f, ticks, ymap);
    values.forEach((v, i) => {
      const x = f.x0 + i * slot + slot * 0.15;
      const r = el(f.svg, "rect", { x: x, y: ymap(v), width: slot * 0.7, height: f.y0 - ymap(v), fill: color, class: "bar" });
      el(r, "title", {}, `rank ${labels[i]}: ${human(v)}`);
      if (values.length <= 32 || i % Math.ceil(values.length / 16) === 0) {
        el(f.svg, "text", { x: x + slot * 0.35, y: f.y0 + 12, "text-anchor": "middle", "font-size": 9 }, labels[i]);
      }
    });
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    el(f.svg, "line", { x1: f.x0, y1: ymap(mean), x2: f.x1, y2: ymap(mean), stroke: "#000", "stroke-dasharray": "4 3" });
    axes(f, "rank (dashed: mean)");
    return f.svg;
  }
  function loglog(title, series) {
    const f = frame(title, 460, 228, { l: 52, r: 12, t: 32, b: 32 });
    const pts = series.map(([, xs, ys]) => xs.map((x, i) => [x, ys[i]]).filter(([x, y]) => x > 0 && y > 0));
    const flat = pts.flat();
    if (!flat.length) { axes(f, "degree"); return empty(f); }
    const lx = flat.map(([x]) => Math.log10(x)), ly = flat.map(([, y]) => Math.log10(y));
    const xlo = Math.floor(Math.min(...lx)), xhi = Math.max(Math.ceil(Math.max(...lx)), xlo + 1);
    const ylo = Math.floor(Math.min(...ly)), yhi = Math.max(Math.ceil(Math.max(...ly)), ylo + 1);
    const xmap = (v) => f.x0 + (f.x1 - f.x0) * (Math.log10(v) - xlo) / (xhi - xlo);
    const ymap = (v) => f.y0 - (f.y0 - f.y1) * (Math.log10(v) - ylo) / (yhi - ylo);
    for (let e = ylo; e <= yhi; e++) {
      el(f.svg, "line", { x1: f.x0, y1: ymap(10 ** e), x2: f.x1, y2: ymap(10 ** e), stroke: "#eee" });
      el(f.svg, "text", { x: f.x0 - 4, y: ymap(10 ** e) + 3, "text-anchor": "end", "font-size": 9 }, human(10 ** e));
    }
    for (let e = xlo; e <= xhi; e++) {
      el(f.svg, "line", { x1: xmap(10 ** e), y1: f.y0, x2: xmap(10 ** e), y2: f.y1, stroke: "#eee" });
      el(f.svg, "text", { x: xmap(10 ** e), y: f.y0 + 12, "text-anchor": "middle", "font-size": 9 }, human(10 ** e));
    }
    pts.forEach((p, i) => {
      const color = PALETTE[i % PALETTE.length];
      el(f.svg, "polyline", { points: p.map(([x, y]) => `${xmap(x).toFixed(1)},${ymap(y).toFixed(1)}`).join(" "),
                              fill: "none", stroke: color, "stroke-opacity": 0.6 });
      for (const [x, y] of p) {
        const c = el(f.svg, "circle", { cx: xmap(x), cy: ymap(y), r: 2.5, fill: color, class: "point" });
        el(c, "title", {}, `${series[i][0]}: degree ~${human(x)}, ${human(y)} nodes per degree`);
      }
    });
    legend(f, series.map(([name]) => name));
    el(f.svg, "text", { x: 12, y: (f.y0 + f.y1) / 2, "text-anchor": "middle", "font-size": 9,
                        transform: `rotate(-90 12 ${(f.y0 + f.y1) / 2})` }, "nodes per degree");
    axes(f, "degree");
    return f.svg;
  }
  function hbars(title, items, none) {
    const barH = 16, f = frame(title, 460, 38 + Math.max(1, items.length) * (barH + 4), { l: 170, r: 60, t: 26, b: 8 });
    if (!items.length) return empty(f, none);
    const top = Math.max(1, ...items.map(([, v]) => v));
    items.forEach(([label, v], i) => {
      const y = f.y1 + i * (barH + 4), w = (f.x1 - f.x0) * v / top;
      el(f.svg, "rect", { x: f.x0, y: y, width: w, height: barH, fill: PALETTE[3], class: "bar" });
      el(f.svg, "text", { x: f.x0 - 4, y: y + barH - 4, "text-anchor": "end", "font-size": 10 }, label);
      el(f.svg, "text", { x: f.x0 + w + 4, y: y + barH - 4, "font-size": 10 }, human(v));
    });
    return f.svg;
  }
  // degree bins {lo, hi, count} -> points (geometric centre of each bin with degree >= 1, nodes per degree)
  function degreePoints(b) {
    const xs = [], ys = [];
    b.lo.forEach((lo, i) => {
      const hi = b.hi[i], c = b.count[i];
      if (hi < 1 || c <= 0) return;
      const l = Math.max(lo, 1);
      xs.push(Math.sqrt(l * hi));
      ys.push(c / (hi - l + 1));
    });
    return [xs, ys];
  }
  function perSecond(t, values, scale) {
    return t.map((x, i) => (i === 0 || t[i] <= t[i - 1]) ? 0 : Math.max(0, (values[i] - values[i - 1]) / (t[i] - t[i - 1]) / scale));
  }
  function draw(id, ...charts) { $(id).replaceChildren(...charts); }
  function drawCharts(s) {
    const h = s.history;
    draw("chart-progress", lines("requests per second", h.t, [["requests/s", perSecond(h.t, h.requests, 1)]], "seconds since the start"),
         lines("download throughput, KB/s", h.t, [["KB/s", perSecond(h.t, h.bytes, 1024)]], "seconds since the start"));
    const labels = s.per_rank.map((r) => String(r.rank));
    const get = (k) => s.per_rank.map((r) => r[k] || 0);
    draw("chart-ranks", bars("pages crawled", labels, get("pages_ok"), PALETTE[0]), bars("bytes stored", labels, get("bytes"), PALETTE[1]),
         bars("queued URLs", labels, get("queued"), PALETTE[2]), bars("idle for a phase slot (s)", labels, get("idle_slot_s"), PALETTE[4]));
    const x = s.exchange.series, per = x.width === 1 ? "superstep" : `${x.width} supersteps`;
    draw("chart-exchange", lines(`bytes per ${per}`, x.superstep, [["volume (MV)", x.volume_bytes], ["wire", x.wire_bytes]], "superstep"),
         lines(`MPI messages per ${per}`, x.superstep, [["messages", x.messages]], "superstep"));
    draw("chart-degrees", loglog("degree distributions", [["in-degree", ...degreePoints(s.graph.in_degree)],
                                                          ["out-degree", ...degreePoints(s.graph.out_degree)]]));
    draw("chart-errors", hbars("errors by kind", Object.entries(s.errors).slice(0, 16), "no errors"));
  }

  // -- the panes ---------------------------------------------------------------------------------------
  function figureValue(f) {
    if (f.value === null || f.value === undefined) return "-";
    if (f.kind === "estimate") {
      const se = f.se === null || f.se === undefined ? "" : ` ± ${num(f.se, 2)}`;
      return `${num(f.value, 2)}${se}`;
    }
    return Number.isInteger(f.value) ? int(f.value) : num(f.value, 3);
  }
  function rows(tableId, items, cells) {
    const tbody = document.querySelector(`#${tableId} tbody`);
    const frag = document.createDocumentFragment();
    for (const item of items) {
      const tr = document.createElement("tr");
      for (const c of cells(item, frag.childNodes.length)) {
        const td = document.createElement("td");
        td.textContent = c;
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    }
    tbody.replaceChildren(frag);
  }
  function render(s) {
    text("session", s.session_dir || "");
    const st = $("state");
    st.textContent = s.state + (s.stopped ? ` (${s.stopped})` : "");
    st.className = "state " + s.state;
    text("ranks", s.ranks);
    text("assignment", s.assignment || "?");
    text("seq", s.seq);
    text("updated", s.updated || "-");
    text("elapsed", duration(s.elapsed_s || 0));
    text("superstep", int(s.superstep));
    text("rate-now", num(s.rate.now, 1));
    text("rate-average", num(s.rate.average, 1));
    text("bytes", bytes(s.bytes));
    text("throughput-now", bytes(s.throughput.now) + "/s");
    text("throughput-average", bytes(s.throughput.average) + "/s");
    text("max-pages", s.max_pages === null ? "no limit" : int(s.max_pages));
    text("pages-crawled", int(s.pages_ok));
    text("pages-failed", int(s.pages_failed));
    text("requests", int(s.requests));
    text("errors-total", int(s.errors_total));
    text("frontier", int(s.frontier));
    text("queued", int(s.queued));
    text("imbalance-storage", num(s.imbalance.storage_pct, 1) + " %");
    text("imbalance-request", num(s.imbalance.request_pct, 1) + " %");
    text("exchange-volume", bytes(s.exchange.volume_bytes));
    text("exchange-wire", bytes(s.exchange.wire_bytes));
    text("exchange-messages", int(s.exchange.messages_mpi));
    const figs = s.graph.figures || [];
    const scc = figs.find((f) => f.name === "scc_count");
    text("scc-count", scc ? int(scc.value) : "-");
    text("scc-scope", scc ? `(${scc.scope}, ${scc.kind})` : "(statistics off)");
    rows("graph-figures", figs, (f) => [f.label, figureValue(f), f.scope, f.kind]);
    rows("ranks-table", s.per_rank, (r) => [r.rank, int(r.pages_ok), int(r.pages_failed), bytes(r.bytes),
      int(r.requests), int(r.queued), num(r.idle_slot_s, 1) + " s", int(r.superstep)]);
    rows("errors-table", Object.entries(s.errors), ([k, v]) => [k, int(v)]);
    rows("hosts-table", s.hosts, (h) => [h.host, int(h.admitted), int(h.queued), h.ranks]);
    // the host graph's top hosts (rank 0 ranks them now and then, exact or HyperBall with its error)
    const hr = s.graph.top_hosts;
    text("host-ranks-scope", hr ? `(host graph of ${int(hr.hosts_known)} hosts, ${int(hr.host_edges)} edges; ` +
      `${hr.method}, ranked ${int(hr.updates)} times)` : "(statistics off, or not ranked yet)");
    rows("host-ranks-table", hr ? hr.top : [], (h, i) => [i + 1, h.host, num(h.harmonic, 2),
      hr.method === "exact" ? "exact" : "± " + num(h.se, 2)]);
    // the stall watchdog: work queued and no request for longer than its bound
    const stall = $("stall");
    stall.hidden = !s.stall;
    if (s.stall) {
      const waiting = (s.stall.hosts || []).slice(0, 5).map((h) =>
        `${h.host} (rank ${h.rank}): ${int(h.queued)} queued, ${h.why}` + (h.seconds ? ` ${num(h.seconds, 1)} s` : ""));
      stall.textContent = `STALLED: no request for ${num(s.stall.seconds, 0)} s with ${int(s.stall.queued)} URLs queued ` +
        `(bound ${num(s.stall.bound_s, 0)} s)` + (waiting.length ? " — waiting: " + waiting.join("; ") : "");
    }
    // URLs dropped by limits, by reason
    const dropped = Object.entries(s.dropped || {});
    $("dropped").hidden = dropped.length === 0;
    $("dropped").textContent = "dropped by limits: " + dropped.map(([k, v]) => `${k} ${int(v)}`).join(", ");
    drawCharts(s);
    if (s.state === "finished") $("stop").disabled = true;
    document.body.dataset.seq = String(s.seq);     // last: the page shows snapshot seq in full
  }
  let shown = -1;
  async function poll() {
    try {
      const r = await fetch("status.json", { cache: "no-store" });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const s = await r.json();
      if (s.seq !== shown) { render(s); shown = s.seq; }
      text("connection", "");
    } catch (e) {
      text("connection", `· no answer from the crawl (${e.message}); it may have ended`);
    }
  }
  $("stop-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = $("token").value.trim();
    try {
      const r = await fetch("stop", { method: "POST", body: new URLSearchParams({ token }) });
      const body = await r.json();
      text("stop-result", r.ok ? "stopping: the crawl ends at its next superstep" : `refused (${r.status}): ${body.error}`);
      if (r.ok) poll();
    } catch (e) {
      text("stop-result", `no answer (${e.message})`);
    }
  });
  poll();
  setInterval(poll, refresh);
})();
