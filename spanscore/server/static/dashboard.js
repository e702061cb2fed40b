/* The dashboard page: score trends, worst runs, coverage and judge cost from /api/v1/dashboard/*. */
"use strict";

(() => {
  const { getJson, el, fillTable, num, decimal, percent, usd, dateTime, setStatus } = Spanscore;
  const COLORS = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207", "#be185d"];
  const charts = new Map();

  /* Rows [{x, key, value}] -> uPlot's aligned columns: sorted xs, one value array per key (null = no point). */
  function align(rows) {
    const xs = [...new Set(rows.map((r) => r.x))].sort((a, b) => a - b);
    const keys = [...new Set(rows.map((r) => r.key))].sort();
    const index = new Map(xs.map((x, i) => [x, i]));
    const columns = keys.map(() => xs.map(() => null));
    for (const r of rows) columns[keys.indexOf(r.key)][index.get(r.x)] = r.value;
    return { xs, keys, columns };
  }

  function dayToSeconds(day) {
    return Date.parse(`${day}T00:00:00Z`) / 1000;
  }

  const HALF_DAY = 43200;
  const WINDOW_SECONDS = { "1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400 };

  /* Scores are mostly within 0..1: keep that whole range in view, widen it for other scales. */
  const scoreRange = (u, min, max) => [Math.min(0, min ?? 0), Math.max(1, max ?? 1)];
  const fromZero = (u, min, max) => [0, (max || 0.001) * 1.15];
  // Days are calendar dates (plotted at 00:00 UTC and labelled in UTC, so a point sits on its own day).
  const dayRange = (xs) => [xs[0] - HALF_DAY, xs[xs.length - 1] + HALF_DAY];

  /* One uPlot line chart per container, replaced on every load and resized with its container. */
  function drawChart(id, rows, { label, format, xRange, yRange, utc }) {
    const box = document.getElementById(id);
    charts.get(id)?.destroy();
    charts.delete(id);
    box.replaceChildren();
    const { xs, keys, columns } = align(rows);
    if (!xs.length) {
      box.append(el("p", { className: "empty" }, "No data in this window."));
      box.setAttribute("aria-label", `${label}: no data in this window`);
      return;
    }
    box.setAttribute("aria-label", `${label} for ${keys.join(", ")}; the table below lists the numbers`);
    const series = [{}].concat(keys.map((key, i) => ({
      label: key,
      stroke: COLORS[i % COLORS.length],
      width: 2,
      points: { show: true, size: 6, fill: COLORS[i % COLORS.length] },
      value: (u, v) => (v === null ? "–" : format(v)),
    })));
    const options = {
      width: Math.max(240, box.clientWidth),
      height: 240,
      series,
      // x spans the chosen window (or the days present), so a single bucket does not stretch over years.
      scales: { x: { time: true, range: xRange(xs) }, y: { range: yRange } },
      axes: [{}, { values: (u, ticks) => ticks.map(format), size: 70 }],
      ...(utc ? { tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC") } : {}),
    };
    const chart = new uPlot(options, [xs, ...columns], box);
    charts.set(id, chart);
  }

  new ResizeObserver(() => {
    for (const [id, chart] of charts) chart.setSize({ width: Math.max(240, document.getElementById(id).clientWidth), height: 240 });
  }).observe(document.getElementById("content"));

  function renderScorers(scorers) {
    const select = document.getElementById("scorer");
    const chosen = select.value;
    select.replaceChildren(el("option", { value: "" }, "all scorers"));
    for (const s of scorers) select.append(el("option", { value: s.scorer }, s.scorer));
    select.value = scorers.some((s) => s.scorer === chosen) ? chosen : "";
    fillTable(document.getElementById("scorer-table"), scorers, (s) => [
      s.scorer, s.higher_is_better ? "higher" : "lower", num(s.scored), num(null, decimal(s.mean)),
      num(null, decimal(s.weighted_mean)), num(null, percent(s.pass_rate)), num(s.errors),
    ], "No scores in this window.");
  }

  /* A rule's name, with its target when it scores something other than whole runs. */
  const ruleLabel = (r) => (r.target && r.target !== "run" ? `${r.rule} (${r.target})` : r.rule);

  function renderWorst(runs) {
    fillTable(document.getElementById("worst-table"), runs, (r) => {
      const link = el("a", {
        href: `run?trace=${encodeURIComponent(r.trace_id)}&span=${encodeURIComponent(r.span_id)}`,
        className: "run-link",
        title: `trace ${r.trace_id}`,
        "aria-label": `Open run ${r.trace_id} (${r.scorer} ${decimal(r.score)})`,
      }, `${r.trace_id.slice(0, 12)}…`);
      const reason = r.reason_cut ? `${r.reason}…` : r.reason;
      return [dateTime(r.run_time_ms), r.scorer, ruleLabel(r), num(null, decimal(r.score)), r.label,
        r.agent_name || r.service_name, el("td", { className: "reason" }, reason), el("td", {}, link)];
    }, "No scored runs in this window.");
  }

  function renderCoverage(days) {
    drawChart("coverage-chart", days.map((d) => ({ x: dayToSeconds(d.day), key: ruleLabel(d), value: d.coverage })), {
      label: "Coverage (scored / candidate runs) per day", format: (v) => percent(v), xRange: dayRange, utc: true,
      yRange: [0, 1],
    });
    fillTable(document.getElementById("coverage-table"), days, (d) => [
      d.day, ruleLabel(d), num(d.candidates), num(d.scored), num(null, percent(d.coverage)), num(d.sampled_out),
      num(d.over_budget), num(d.missing_input), num(d.not_applicable), num(d.failed), num(d.filtered_out),
    ], "No sampling decisions in this window.");
  }

  function renderCost(days) {
    drawChart("cost-chart", days.map((d) => ({ x: dayToSeconds(d.day), key: d.judge_model, value: d.cost_usd })), {
      label: "Judge cost in US dollars per day", format: (v) => usd(v), xRange: dayRange, yRange: fromZero, utc: true,
    });
    const total = days.reduce((sum, d) => sum + d.cost_usd, 0);
    document.getElementById("cost-total").textContent =
      `Total ${usd(total)} over ${days.reduce((sum, d) => sum + d.scores, 0)} judged scores.`;
    fillTable(document.getElementById("cost-table"), days, (d) => [
      d.day, d.judge_model, num(d.scores), num(null, usd(d.cost_usd)), num(d.input_tokens), num(d.output_tokens),
    ], "No judge calls in this window.");
  }

  /* Which rules score this traffic, so an empty chart can be told apart from a service that scores nothing. */
  function rulesNote(rules) {
    if (!rules) return "";
    if (!rules.length) return " No rules are loaded: spans are stored, nothing is scored (add rules: to the config).";
    /* A rule that scores LLM calls, tools, retrievals or sessions says so: its scores are per span or per session. */
    const target = (r) => (r.target && r.target !== "run" ? `target ${r.target}; ` : "");
    const listed = rules.map((r) => `${r.name} (${target(r)}${r.scorers.join(", ")}; sample ${r.sample})`).join("; ");
    return ` Rules: ${listed}; change them under rules: in the config.`;
  }

  async function load() {
    const since = document.getElementById("since").value;
    const scorer = document.getElementById("scorer").value;
    const target = document.getElementById("target");
    const by = ["1h", "24h"].includes(since) ? "hour" : "day";
    const shared = { since, target: target.value };  // an empty filter is not sent: the API reads that as "all"
    const [scorers, trend, worst, coverage, cost] = await Promise.all([
      getJson("scorers", shared),
      getJson("trend", { ...shared, scorer, by }),
      getJson("worst", { ...shared, scorer, limit: 20 }),
      getJson("coverage", shared),
      getJson("cost", { ...shared, scorer }),
    ]);
    renderScorers(scorers.scorers);
    const now = Date.now() / 1000;
    const step = by === "hour" ? 3600 : 86400;
    drawChart("trend-chart", trend.points.map((p) => ({ x: p.time, key: p.scorer, value: p.mean })), {
      label: `Mean score per ${by} and scorer`, format: (v) => decimal(v, 2), yRange: scoreRange,
      xRange: (xs) => [Math.min(xs[0], now - WINDOW_SECONDS[since]) - step / 2, Math.max(xs[xs.length - 1], now) + step / 2],
    });
    renderWorst(worst.runs);
    renderCoverage(coverage.days);
    renderCost(cost.days);
    setStatus(`Showing ${document.getElementById("since").selectedOptions[0].textContent}` +
      (scorer ? ` for ${scorer}` : "") + (target.value ? `, ${target.selectedOptions[0].textContent} only` : "") +
      `; updated ${dateTime(Date.now())}.` + rulesNote(scorers.rules), "ready");
  }

  const reload = Spanscore.start(load);
  document.getElementById("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    reload();
  });
  for (const id of ["since", "scorer", "target"]) document.getElementById(id).addEventListener("change", () => reload());
})();
