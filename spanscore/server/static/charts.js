/* The dashboard's line charts (uPlot): each drawn into a host element of its own, replaced on every load,
   resized with the page. A host carries what it shows as data attributes (time range, bucket, y range), so
   the charts of one page can be checked to share their time axis. */
"use strict";

const SpanscoreCharts = (() => {
  const { el } = Spanscore;
  const COLORS = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207", "#be185d"];
  const charts = new Set();

  /* Rows [{x, key, value}] -> uPlot's aligned columns: sorted xs, one value array per key (null = no point). */
  function align(rows) {
    const xs = [...new Set(rows.map((r) => r.x))].sort((a, b) => a - b);
    const keys = [...new Set(rows.map((r) => r.key))].sort();
    const index = new Map(xs.map((x, i) => [x, i]));
    const columns = keys.map(() => xs.map(() => null));
    for (const r of rows) columns[keys.indexOf(r.key)][index.get(r.x)] = r.value;
    return { xs, keys, columns };
  }

  /* Empty a chart box, destroying the charts drawn in it. */
  function clear(box) {
    for (const chart of [...charts]) {
      if (box.contains(chart.root)) {
        chart.destroy();
        charts.delete(chart);
      }
    }
    box.replaceChildren();
  }

  function empty(box, label) {
    box.append(el("p", { className: "empty" }, "No data in this window."));
    box.setAttribute("aria-label", `${label}: no data in this window`);
  }

  /* One chart in a new host inside `box`: x over `xRange` (the page's shared time axis), y over `yRange`
     (an array, or a function of the data's min and max). Answers the host, or null when there is nothing to draw. */
  function draw(box, rows, { label, format, xRange, yRange, utc, by, title, className, dataset }) {
    const { xs, keys, columns } = align(rows);
    if (!xs.length) return null;
    const host = el("div", { className: `chart-host ${className || ""}`.trim(), dataset: dataset || {} });
    if (title) host.append(el("h3", { className: "chart-title" }, title));
    box.append(host);
    const series = [{}].concat(keys.map((key, i) => ({
      label: key,
      stroke: COLORS[i % COLORS.length],
      width: 2,
      points: { show: true, size: 6, fill: COLORS[i % COLORS.length] },
      value: (u, v) => (v === null ? "–" : format(v)),
    })));
    const values = columns.flat().filter((v) => v !== null);
    const yExtent = Array.isArray(yRange) ? yRange : yRange(null, values.length ? Math.min(...values) : null, values.length ? Math.max(...values) : null);
    const options = {
      width: Math.max(240, host.clientWidth),
      height: 240,
      series,
      scales: { x: { time: true, range: () => xRange }, y: { range: () => yExtent } },
      axes: [{}, { values: (u, ticks) => ticks.map(format), size: 70 }],
      ...(utc ? { tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC") } : {}),
    };
    const chart = new uPlot(options, [xs, ...columns], host);
    charts.add(chart);
    Object.assign(host.dataset, {
      xMin: String(xRange[0]), xMax: String(xRange[1]), by,
      yMin: String(yExtent[0]), yMax: String(yExtent[1]),
    });
    host.setAttribute("aria-label", `${label} for ${keys.join(", ")}`);
    return host;
  }

  new ResizeObserver(() => {
    for (const chart of charts) chart.setSize({ width: Math.max(240, chart.root.parentElement.clientWidth), height: 240 });
  }).observe(document.getElementById("content"));

  return { clear, draw, empty };
})();
