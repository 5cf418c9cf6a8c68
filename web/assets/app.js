// The sweep page's script: it refreshes the live part of a page while its sweep runs,
// and draws the validation curves of the trials ticked in the table. No framework, no
// build step: the server renders every table, this only swaps fragments and draws lines.
"use strict";

(function () {
  const live = document.getElementById("live");  // the part with the trial table
  const chart = document.getElementById("chart");
  const selected = new Set();
  let curves = [];      // the last curves fetched
  let chose = false;    // the reader has ticked or unticked a trial

  // ---- live refresh ----------------------------------------------------------------
  // Each part of a page with data-live-src is fetched again every data-poll ms, until the
  // server says the sweep no longer runs (X-Live: false) after a last refresh.
  function poll(part) {
    const every = parseInt(part.dataset.poll || "0", 10);
    if (!(every > 0)) return;
    setTimeout(async function tick() {
      const busy = part.contains(document.activeElement) && /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
      let again = true;
      if (!busy) {
        try {
          const r = await fetch(part.dataset.liveSrc, { credentials: "same-origin", cache: "no-store" });
          if (r.ok) {
            part.innerHTML = await r.text();
            again = r.headers.get("X-Live") !== "false";
            if (part === live) { syncBoxes(); loadCurves(); }
          }
        } catch (e) { /* the server restarts or the network blips: try again */ }
      }
      if (again) setTimeout(tick, every);
    }, every);
  }

  // ---- the chart ---------------------------------------------------------------------
  function syncBoxes() {
    const boxes = document.querySelectorAll("input.plot-trial");
    if (!chose) {
      boxes.forEach(b => { if (b.dataset.default === "1" && selected.size < 4) selected.add(b.value); });
    }
    boxes.forEach(b => { b.checked = selected.has(b.value); });
  }

  async function loadCurves() {
    if (!chart || !live) return;
    const ids = Array.from(selected);
    if (ids.length === 0) { curves = []; draw(); return; }
    const q = ids.map(id => "trial=" + encodeURIComponent(id)).join("&");
    try {
      const r = await fetch(live.dataset.curves + "?" + q, { credentials: "same-origin", cache: "no-store" });
      if (!r.ok) return;
      curves = (await r.json()).trials || [];
    } catch (e) { return; }
    draw();
  }

  const colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#637939"];
  const dashes = { x: "", w: "", y: "6 3", ewa_x: "2 3", ewa_w: "2 3", ewa_y: "8 3 2 3" };
  const names = { x: "x", y: "y", ewa_x: "EWA(x)", ewa_y: "EWA(y)", w: "w", ewa_w: "EWA(w)" };
  const SVG = "http://www.w3.org/2000/svg";

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  // ticks are about n round numbers covering [lo, hi]
  function ticks(lo, hi, n) {
    const span = hi - lo || Math.abs(hi) || 1;
    const raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * mag).find(s => span / s <= n) || 10 * mag;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
    return out;
  }

  function shownIterates() {
    return new Set(Array.from(document.querySelectorAll("input.iter")).filter(b => b.checked).map(b => b.value));
  }

  function draw() {
    if (!chart) return;
    chart.textContent = "";
    const legend = document.getElementById("chart-legend");
    if (legend) legend.textContent = "";
    const its = shownIterates();
    const lines = [];
    curves.forEach((c, i) => {
      (c.iterates || []).forEach(it => {
        if (!its.has(it)) return;
        const pts = c.points.filter(p => p.val && typeof p.val[it] === "number").map(p => [p.step, p.val[it]]);
        if (pts.length) lines.push({ trial: c, colour: colours[i % colours.length], it, pts });
      });
    });
    if (lines.length === 0) {
      const p = document.createElement("p");
      p.className = "empty";
      p.textContent = curves.length ? "No evaluations yet for the chosen trials and iterates." : "No trial chosen.";
      chart.appendChild(p);
      return;
    }
    let x1 = 1, y0 = Infinity, y1 = -Infinity;
    lines.forEach(l => l.pts.forEach(([x, y]) => { x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }));
    curves.forEach(c => { x1 = Math.max(x1, c.steps || 0); });
    if (y1 - y0 < 1e-9) { y0 -= 0.5; y1 += 0.5; }
    const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
    // the drawing is as wide as its box, so that its text keeps its size on a phone
    const W = Math.max(320, Math.min(1100, chart.clientWidth || 900)), H = Math.round(Math.max(220, Math.min(380, W * 0.42)));
    const L = 56, R = 12, T = 10, B = 36;
    const sx = x => L + (W - L - R) * x / x1, sy = y => T + (H - T - B) * (1 - (y - y0) / (y1 - y0));
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, "data-lines": String(lines.length) }, chart);
    ticks(y0, y1, 6).forEach(v => {
      el("line", { class: "gridline", x1: L, x2: W - R, y1: sy(v), y2: sy(v) }, svg);
      el("text", { x: L - 6, y: sy(v) + 4, "text-anchor": "end" }, svg).textContent = String(v);
    });
    ticks(0, x1, Math.max(3, Math.floor(W / 110))).forEach(v => {
      el("line", { class: "gridline", x1: sx(v), x2: sx(v), y1: T, y2: H - B }, svg);
      el("text", { x: sx(v), y: H - B + 16, "text-anchor": "middle" }, svg).textContent = String(v);
    });
    el("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }, svg);
    el("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }, svg);
    el("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }, svg).textContent = "step";
    el("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(T + H - B) / 2})` }, svg).textContent = "validation loss";
    lines.forEach(l => {
      const d = l.pts.map(([x, y], j) => (j ? "L" : "M") + sx(x).toFixed(1) + " " + sy(y).toFixed(1)).join(" ");
      const path = el("path", { d, fill: "none", stroke: l.colour, "stroke-width": 2, "stroke-dasharray": dashes[l.it] || "",
        "data-trial": l.trial.id, "data-iterate": l.it }, svg);
      el("title", {}, path).textContent = l.trial.label + " · " + names[l.it];
    });
    if (!legend) return;
    curves.forEach((c, i) => {
      const s = document.createElement("span");
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.borderColor = colours[i % colours.length];
      s.appendChild(sw);
      s.appendChild(document.createTextNode(c.label + " (" + c.state + ")"));
      legend.appendChild(s);
    });
    const key = document.createElement("span");
    key.textContent = "lines: x, w solid · y dashed · EWA(x), EWA(w) dotted · EWA(y) dash-dot";
    legend.appendChild(key);
  }

  document.addEventListener("change", e => {
    const t = e.target;
    if (t.classList.contains("plot-trial")) {
      chose = true;
      if (t.checked) selected.add(t.value); else selected.delete(t.value);
      loadCurves();
    } else if (t.classList.contains("iter")) {
      draw();
    }
  });

  let resized = null;
  window.addEventListener("resize", () => { clearTimeout(resized); resized = setTimeout(draw, 150); });

  syncBoxes();
  loadCurves();
  document.querySelectorAll(".live[data-live-src]").forEach(poll);
})();
