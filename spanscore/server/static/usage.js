/* The usage panel beside the score charts: tokens and latency per agent and model from OTLP metrics
 * (/api/v1/dashboard/usage). It follows the page's window filter and draws in the same buckets (hours, or
 * UTC days past two days); a failure to load it is said in the panel and leaves the rest of the page alone. */
"use strict";

(() => {
  const { getJson, el, fillTable, num, decimal, dateTime } = Spanscore;
  const Charts = SpanscoreCharts;
  const field = (id) => document.getElementById(id);
  const DAY = 86400;
  const UNIT = { s: 1, m: 60, h: 3600, d: DAY, w: 7 * DAY };

  const seconds = (since) => {
    const match = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(since);
    return match ? Number(match[1]) * UNIT[match[2]] : DAY;
  };
  const key = (p) => `${p.agent} · ${p.model || "model not named"}`;

  function axis(since, by, times) {
    const step = by === "hour" ? 3600 : DAY;
    const now = Date.now() / 1000;
    const start = Math.floor((now - seconds(since)) / 3600) * 3600;
    return [Math.min(Math.floor(start / step) * step, ...times) - step / 2, Math.max(Math.floor(now / step) * step, ...times) + step / 2];
  }

  function chart(id, rows, label, format, range, by) {
    const box = field(id);
    Charts.clear(box);
    const host = Charts.draw(box, rows, {
      label, format, xRange: range, by, utc: by === "day", yRange: (u, min, max) => [0, (max || 1) * 1.15],
    });
    if (!host) Charts.empty(box, label);
  }

  async function load() {
    const since = field("since").value;
    const by = seconds(since) <= 2 * DAY ? "hour" : "day";
    let answer;
    try {
      answer = await getJson("usage", { since, by });
    } catch (error) {
      fillTable(field("usage-table"), [], () => [], `Could not load usage: ${error.message}`);
      return;
    }
    const points = answer.points;
    const range = axis(since, by, points.map((p) => p.time));
    chart("usage-tokens-chart", points.map((p) => ({ x: p.time, key: key(p), value: p.input_tokens + p.output_tokens })),
      `Tokens (input + output) per ${by}`, (v) => String(Math.round(v)), range, by);
    chart("usage-latency-chart", points.filter((p) => p.mean_duration_s !== null)
      .map((p) => ({ x: p.time, key: key(p), value: p.mean_duration_s })),
      `Mean model-call latency in seconds per ${by}`, (v) => decimal(v, 2), range, by);
    fillTable(field("usage-table"), points, (p) => [
      by === "day" ? new Date(p.time * 1000).toISOString().slice(0, 10) : dateTime(p.time * 1000), p.agent,
      p.model, num(p.calls), num(p.input_tokens), num(p.output_tokens), num(null, decimal(p.mean_duration_s, 3)),
    ], "No GenAI metrics in this window.");
  }

  load();
  field("filters").addEventListener("submit", () => load());
  field("since").addEventListener("change", () => load());
  window.addEventListener("popstate", () => load());
  field("login").addEventListener("submit", () => load());
})();
