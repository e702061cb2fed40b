/* The compare page: versions of the agent side by side per scorer, each with its weighted mean, interval,
   difference from the baseline and verdict (POST /api/v1/compare). The form lives in the address, so a
   comparison can be shared and Back returns to the previous one. Under each scorer's table: a chart of each
   version's hourly weighted mean, and links to each version's worst runs (POST /api/v1/compare/details). */
"use strict";

(() => {
  const { postJson, el, fillTable, num, decimal, setStatus, count } = Spanscore;
  const FIELDS = ["by", "baseline", "since", "confidence"];
  const form = document.getElementById("compare-form");

  function fromAddress() {
    const params = new URLSearchParams(location.search);
    for (const name of FIELDS) {
      if (params.get(name)) form.elements[name].value = params.get(name);
    }
  }

  function toAddress() {
    const params = new URLSearchParams();
    for (const name of FIELDS) params.set(name, form.elements[name].value.trim());
    const url = `${location.pathname}?${params}`;
    if (url !== location.pathname + location.search) history.pushState(null, "", url);
  }

  function interval(low, high) {
    return low === null || high === null ? "–" : `${decimal(low)} – ${decimal(high)}`;
  }

  function verdictCell(v) {
    if (v.verdict === null) return el("td", { className: "verdict" }, "baseline");
    const text = v.verdict === "too_few" ? `too few (need ~${v.n_needed} per version)` : v.verdict.replace("_", " ");
    return el("td", { className: `verdict ${v.verdict}` }, text);
  }

  /* A version's name links to the runs list filtered to it (the runs whose scores carry that version). */
  function versionLink(version, body) {
    const filter = new URLSearchParams({ version_by: body.by, version, since: body.since });
    return el("td", {}, el("a", { href: `runs?${filter}`, className: "version-runs", title: `Runs of ${version}` }, version));
  }

  function scorerTable(scorer, body) {
    const table = el("table", { className: "compare" },
      el("caption", {}, scorer.scorer),
      el("thead", {}, el("tr", {}, ...["Version", "Runs (n)", "Effective n", "Mean", "Interval", "Difference",
        "Difference interval", "Verdict", "Latency p50 / p95 ms", "Tokens in / out per run", "Cost per run (USD)"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody"));
    fillTable(table, scorer.versions, (v) => [
      versionLink(v.version, body), num(v.n, String(v.n)), num(v.n_eff, decimal(v.n_eff, 1)), num(v.mean, decimal(v.mean)),
      interval(v.ci_low, v.ci_high), v.diff === null ? "–" : num(v.diff, decimal(v.diff)),
      interval(v.diff_low, v.diff_high), verdictCell(v),
      v.latency_p50_ms == null ? "–" : `${decimal(v.latency_p50_ms, 0)} / ${decimal(v.latency_p95_ms, 0)}`,
      v.input_tokens_per_run == null ? "–" : `${decimal(v.input_tokens_per_run, 0)} / ${decimal(v.output_tokens_per_run, 0)}`,
      /* null: no scored run of the version had a known cost, which is not the same as free */
      el("td", { className: "cost" }, v.cost_per_run === undefined ? "–" : v.cost_per_run === null ? "unknown" : v.cost_per_run.toPrecision(3)),
    ]);
    return table;
  }

  const SINCE_S = { "1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400 };

  function chart(box, scorer, details, since) {
    const rows = details.series.filter((p) => p.scorer === scorer)
      .map((p) => ({ x: p.hour_ms / 1000, key: p.version, value: p.mean }));
    const now = Date.now() / 1000;
    const host = SpanscoreCharts.draw(box, rows, {
      label: `${scorer}: hourly weighted mean per version`, format: (v) => decimal(v), utc: true, by: "version",
      xRange: [now - (SINCE_S[since] || 86400), now], yRange: (u, low, high) => [Math.min(0, low), Math.max(1, high)],
      className: "compare-chart", dataset: { scorer },
    });
    if (!host) SpanscoreCharts.empty(box, `${scorer}: hourly weighted mean per version`);
  }

  function worstLinks(scorer, details, by, since) {
    const list = el("ul", { className: "worst-runs" });
    const versions = [...new Set(details.worst.filter((w) => w.scorer === scorer).map((w) => w.version))];
    for (const version of versions) {
      const runs = details.worst.filter((w) => w.scorer === scorer && w.version === version);
      const filter = new URLSearchParams({ scorer, sort: "worst", since });
      filter.set("version_by", by);
      filter.set("version", version);
      list.append(el("li", { dataset: { version } }, `${version}: worst runs `,
        ...runs.map((w) => el("a", { href: `run?trace=${encodeURIComponent(w.trace_id)}`, className: "worst-run" },
          `${w.trace_id.slice(0, 8)} (${decimal(w.score)})`)),
        el("a", { href: `runs?${filter}`, className: "runs-list" }, "runs list")));
    }
    return list;
  }

  /* Runs of different versions on one input (the newest scored runs of the window), each linked to its run page. */
  function sameInput(details) {
    if (!details.same_input.length) return el("p", { className: "note" }, "No input was run by two versions in this window.");
    return el("ul", { className: "same-input" }, ...details.same_input.map((i) => el("li", {},
      el("code", {}, i.input), " ",
      ...i.runs.map((r) => el("a", { href: `run?trace=${encodeURIComponent(r.trace_id)}`, dataset: { version: r.version } },
        `${r.version} ${r.trace_id.slice(0, 8)}`)))));
  }

  async function load() {
    fromAddress();
    const box = document.getElementById("comparison");
    if (!form.elements.baseline.value.trim()) {
      box.replaceChildren();
      setStatus("Name a baseline version to compare the others with.", "ready");
      return;
    }
    const body = Object.fromEntries(FIELDS.map((name) => [name, form.elements[name].value.trim()]));
    body.confidence = Number(body.confidence);
    const [document_, details] = await Promise.all([postJson("compare", body), postJson("compare/details", body)]);
    SpanscoreCharts.clear(box);
    for (const scorer of document_.scorers) {
      const charts = el("div", { className: "compare-charts" });
      box.append(scorerTable(scorer, body), charts, worstLinks(scorer.scorer, details, body.by, body.since));
      chart(charts, scorer.scorer, details, body.since);
    }
    box.append(el("h2", {}, "Runs of different versions on the same input"), sameInput(details));
    setStatus(`${count(document_.scorers.length, "scorer")} compared by ${document_.by}, baseline ${document_.baseline}.`, "ready");
  }

  const reload = Spanscore.start(load);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    toAddress();
    reload();
  });
  window.addEventListener("popstate", reload);
})();
