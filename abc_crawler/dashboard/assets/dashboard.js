"use strict";
// Polls status.json and shows it; charts are SVG images the server draws from the same snapshot.
(function () {
  const params = new URLSearchParams(location.search);
  const refresh = Math.max(0.5, parseFloat(params.get("refresh") || "2")) * 1000;
  const $ = (id) => document.getElementById(id);
  const int = (v) => (v === null || v === undefined) ? "-" : Math.round(v).toLocaleString("en-US");
  const num = (v, d) => (v === null || v === undefined) ? "-" : Number(v).toFixed(d);
  function bytes(n) {
    if (n === null || n === undefined) return "-";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return i === 0 ? `${Math.round(n)} B` : `${n.toFixed(1)} ${units[i]}`;
  }
  function duration(s) {
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = Math.floor(s % 60);
    return [h, m, sec].map((x) => String(x).padStart(2, "0")).join(":") + ` (${num(s, 1)} s)`;
  }
  function text(id, value) { const el = $(id); if (el) el.textContent = value; }
  function figureValue(f) {
    if (f.value === null || f.value === undefined) return "-";
    if (f.kind === "estimate") {
      const se = f.se === null || f.se === undefined ? "" : ` ± ${num(f.se, 2)}`;
      return `${num(f.value, 2)}${se}`;
    }
    return Number.isInteger(f.value) ? int(f.value) : num(f.value, 3);
  }
  function rows(tbodyId, items, cells) {
    const tbody = document.querySelector(`#${tbodyId} tbody`);
    const frag = document.createDocumentFragment();
    for (const item of items) {
      const tr = document.createElement("tr");
      for (const c of cells(item)) {
        const td = document.createElement("td");
        td.textContent = c;
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    }
    tbody.replaceChildren(frag);
  }
  function render(s) {
    document.body.dataset.seq = String(s.seq);
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
    for (const img of document.querySelectorAll("img.chart")) {
      const src = `chart/${img.dataset.chart}.svg?seq=${s.seq}`;
      if (img.getAttribute("src") !== src) img.setAttribute("src", src);
    }
    if (s.state === "finished") $("stop").disabled = true;
  }
  async function poll() {
    try {
      const r = await fetch("status.json", { cache: "no-store" });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      render(await r.json());
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
