package jobtracker

// webuiJS draws the web UI's charts with uPlot (served at
// /static/uPlot.iife.min.js from package webassets): the job page's task
// timeline and progress, the cluster page's slot occupancy. Each chart is
// a <div data-chart="timeline|progress|occupancy" data-src="JSON URL">;
// once drawn it carries data-ready="1" (and the timeline data-bars, the
// number of attempts drawn), or data-error with the reason it is not.
const webuiJS = `"use strict";
(function () {
  const stateColors = {SUCCEEDED: "#2ca02c", RUNNING: "#1f77b4", COMMIT_PENDING: "#17becf",
    FAILED: "#d62728", KILLED: "#7f7f7f", PENDING: "#bcbd22"};
  const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const secs = s => Date.parse(s) / 1000;
  const width = el => Math.max(300, el.clientWidth - 10);

  function note(el, text) {
    const p = document.createElement("p");
    p.className = "chartnote";
    p.textContent = text;
    el.appendChild(p);
  }

  function timeline(el, d) {
    const bars = d.bars.map(b => ({b: b, s: secs(b.start), f: secs(b.finish)}));
    el.dataset.bars = String(bars.length);
    if (bars.length === 0) {
      note(el, "No attempt has started.");
      return;
    }
    // A loop, not Math.min(...bars): a spread passes every bar as an
    // argument, and engines cap the number of arguments.
    let lo = Infinity, hi = -Infinity;
    for (const x of bars) {
      if (x.s < lo) lo = x.s;
      if (x.f > hi) hi = x.f;
    }
    if (hi <= lo) hi = lo + 1;
    const rows = d.rows.map(r => r.tracker + " " + r.type + " " + r.slot);
    const info = document.createElement("div");
    info.className = "hover";
    info.textContent = "\u00a0";
    function draw(u) {
      const ctx = u.ctx;
      ctx.save();
      ctx.beginPath();
      ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
      ctx.clip();
      const h = Math.max(2, Math.abs(u.valToPos(0.38, "y", true) - u.valToPos(0, "y", true)) * 2);
      for (const x of bars) {
        const x0 = u.valToPos(x.s, "x", true), x1 = u.valToPos(x.f, "x", true);
        const yc = u.valToPos(x.b.row, "y", true);
        const w = Math.max(2, x1 - x0);
        ctx.fillStyle = stateColors[x.b.state] || "#999";
        ctx.fillRect(x0, yc - h / 2, w, h);
        if (x.b.speculative || x.b.cloned) {
          ctx.lineWidth = 2 * devicePixelRatio;
          ctx.strokeStyle = "#000";
          ctx.setLineDash(x.b.cloned ? [] : [4 * devicePixelRatio, 3 * devicePixelRatio]);
          ctx.strokeRect(x0, yc - h / 2, w, h);
          ctx.setLineDash([]);
          if (w > 14 * devicePixelRatio) {
            ctx.fillStyle = "#fff";
            ctx.font = (10 * devicePixelRatio) + "px sans-serif";
            ctx.fillText(x.b.cloned ? "C" : "S", x0 + 3 * devicePixelRatio, yc + 4 * devicePixelRatio);
          }
        }
      }
      ctx.restore();
    }
    function hover(u) {
      const l = u.cursor.left, t = u.cursor.top;
      if (l == null || l < 0) return;
      const tv = u.posToVal(l, "x"), row = Math.round(u.posToVal(t, "y"));
      const hit = bars.find(x => x.b.row === row && x.s <= tv && tv <= x.f);
      info.textContent = hit ? hit.b.attempt + " " + hit.b.state + (hit.b.speculative ? " speculative" : "") +
        (hit.b.cloned ? " cloned" : "") + " on " + rows[row] + ", " + (hit.f - hit.s).toFixed(1) + " s" + (hit.b.running ? " (running)" : "") : "\u00a0";
    }
    // A row label every k rows, so that labels do not overlap on a big
    // cluster.
    const height = Math.min(1200, Math.max(140, rows.length * 22 + 70));
    const k = Math.max(1, Math.ceil(13 * rows.length / (height - 60)));
    const opts = {
      width: width(el), height: height,
      legend: {show: false},
      cursor: {y: false, drag: {x: true, y: false}},
      scales: {x: {time: true, range: [lo, hi]}, y: {auto: false, dir: -1, range: [-0.5, rows.length - 0.5]}},
      series: [{}, {label: "attempts", stroke: "transparent", points: {show: false}}],
      axes: [{}, {size: 170, space: 8, splits: () => rows.map((_, i) => i).filter(i => i % k === 0), incrs: [1], values: (u, sp) => sp.map(i => rows[i] || ""), grid: {show: false}}],
      hooks: {draw: [draw], setCursor: [hover]},
    };
    new uPlot(opts, [[lo, hi], [null, null]], el);
    el.appendChild(info);
    const legend = document.createElement("p");
    legend.className = "chartnote";
    for (const [s, c] of Object.entries(stateColors)) {
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = c;
      legend.appendChild(sw);
      legend.appendChild(document.createTextNode(s + " "));
    }
    legend.appendChild(document.createTextNode(" dashed outline, S: speculative; solid outline, C: cloned"));
    el.appendChild(legend);
  }

  function progress(el, d) {
    if (d.progress.length === 0) {
      note(el, "No progress samples (the JobTracker keeps them for the jobs in its memory).");
      return;
    }
    const xs = d.progress.map(p => secs(p.time));
    const opts = {
      width: width(el), height: 220,
      scales: {y: {auto: false, range: [0, 100]}},
      series: [{}, {label: "map %", stroke: palette[0], width: 2}, {label: "reduce %", stroke: palette[1], width: 2}],
      axes: [{}, {label: "%"}],
    };
    new uPlot(opts, [xs, d.progress.map(p => p.map * 100), d.progress.map(p => p.reduce * 100)], el);
  }

  // occupancy stacks the attempts running by job, or with
  // data-by="partition" by partition of a multi-queue policy.
  function occupancy(el, d) {
    if (d.times.length === 0) {
      note(el, "No samples yet (taken at most once a second, as trackers heartbeat).");
      return;
    }
    const groups = el.dataset.by === "partition" ?
      (d.partitions || []).map(p => ({label: "partition " + (p.partition + 1), maps: p.maps, reduces: p.reduces})) :
      d.jobs.map(j => ({label: j.job, maps: j.maps, reduces: j.reduces}));
    el.dataset.series = String(groups.length);
    const xs = d.times.map(secs);
    const slots = d.map_slots.map((m, i) => m + d.reduce_slots[i]);
    let acc = xs.map(() => 0);
    const stacked = groups.map(g => (acc = acc.map((a, i) => a + g.maps[i] + g.reduces[i])));
    const series = [{}, {label: "slots", stroke: "#000", width: 1, dash: [5, 4]}];
    const data = [xs, slots];
    for (let k = groups.length - 1; k >= 0; k--) {
      const c = palette[k % palette.length];
      series.push({label: groups[k].label, stroke: c, fill: c + "99", width: 1, paths: uPlot.paths.stepped({align: 1})});
      data.push(stacked[k]);
    }
    new uPlot({width: width(el), height: 240, series: series, axes: [{}, {label: "attempts running"}],
      scales: {y: {range: (u, mn, mx) => [0, Math.max(1, mx)]}}}, data, el);
  }

  const kinds = {timeline: timeline, progress: progress, occupancy: occupancy};
  function load(el) {
    const kind = el.dataset.chart, src = el.dataset.src;
    return fetch(src, {cache: "no-store"})
      .then(r => r.ok ? r.json() : Promise.reject(new Error(src + ": HTTP " + r.status)))
      .then(d => { kinds[kind](el, d); el.dataset.ready = "1"; })
      .catch(e => { el.dataset.error = String(e); note(el, "Chart unavailable: " + e); });
  }
  const cache = {};
  document.addEventListener("DOMContentLoaded", () => {
    if (typeof uPlot === "undefined") return;
    document.querySelectorAll("div[data-chart]").forEach(el => {
      // The timeline and progress charts share one request.
      const key = el.dataset.src;
      if (!cache[key]) {
        cache[key] = fetch(key, {cache: "no-store"}).then(r => r.ok ? r.json() : Promise.reject(new Error(key + ": HTTP " + r.status)));
      }
      cache[key].then(d => { kinds[el.dataset.chart](el, d); el.dataset.ready = "1"; })
        .catch(e => { el.dataset.error = String(e); note(el, "Chart unavailable: " + e); });
    });
  });
  window.gomrLoadChart = load;
})();
`
