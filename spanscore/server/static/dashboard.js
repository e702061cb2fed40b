/* The dashboard page: score trends, worst runs, coverage and judge cost from /api/v1/dashboard/*.
 *
 * The view lives in the address: ?since=7d&scorer=faithfulness&rule=support-quality&target=llm. Loading
 * such an address (a bookmark, a shared link, an alert's link) opens that view; changing a filter writes it
 * back (a new history entry, so Back returns to the previous view). Scores are drawn one chart per scale
 * (0-1, 1-5, ...), and coverage and judge cost on the score chart's time axis and bucket: minutes up to 6 hours
 * (the per-minute roll-up), hours up to 2 days, UTC days beyond. ?refresh=30s reloads the view every 30 s.
 */
"use strict";

(() => {
  const { getJson, el, fillTable, num, decimal, percent, usd, dateTime, setStatus, count, agentLabel } = Spanscore;
  const Charts = SpanscoreCharts;
  const FILTERS = ["since", "scorer", "rule", "target", "refresh"];
  const SINCE = /^(\d+(?:\.\d+)?)([smhdw])$/;
  const UNIT = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
  const MAX_WINDOW_S = 400 * 86400;
  const MAX_MINUTE_WINDOW_S = 6 * 3600;  // as the API allows by=minute
  const STEP = { minute: 60, hour: 3600, day: 86400 };
  const bucketFor = (seconds) => (seconds <= MAX_MINUTE_WINDOW_S ? "minute" : seconds <= 2 * 86400 ? "hour" : "day");
  let addressNote = "";

  const windowSeconds = (since) => {
    const match = SINCE.exec(since);
    return match ? Number(match[1]) * UNIT[match[2]] : null;
  };
  const field = (id) => document.getElementById(id);

  /* A select keeps a value the address asks for even when the window has no data for it. */
  function ensureOption(select, value, text) {
    if (![...select.options].some((o) => o.value === value)) select.append(el("option", { value }, text));
  }

  /* Address -> filters; a value the page cannot use is named in the status line, not sent. */
  function readAddress() {
    const params = new URLSearchParams(location.search);
    const problems = [];
    const since = params.get("since") || "24h";
    const seconds = windowSeconds(since);
    if (seconds && seconds <= MAX_WINDOW_S) {
      ensureOption(field("since"), since, `last ${since}`);
      field("since").value = since;
    } else {
      problems.push(`since=${since} is not a window like 30m, 24h or 7d (showing ${field("since").value})`);
    }
    for (const id of ["scorer", "rule"]) {
      const value = params.get(id) || "";
      if (value) ensureOption(field(id), value, value);
      field(id).value = value;
    }
    const target = params.get("target") || "";
    if ([...field("target").options].some((o) => o.value === target)) field("target").value = target;
    else problems.push(`target=${target} is not a target`);
    const refreshProblem = SpanscoreRefresh.read(params);
    if (refreshProblem) problems.push(refreshProblem);
    addressNote = problems.length ? ` Address: ${problems.join("; ")}.` : "";
  }

  function writeAddress() {
    const params = new URLSearchParams();
    for (const id of FILTERS) if (field(id).value) params.set(id, field(id).value);
    const query = params.toString();
    const url = location.pathname + (query ? `?${query}` : "");
    if (url !== location.pathname + location.search) history.pushState(null, "", url);
  }

  /* A scored name: the scorer, or a feedback name with its source ("thumbs (human)"). */
  const nameOf = (r) => (r.source ? `${r.scorer} (${r.source})` : r.scorer);
  const scaleText = (scale) => `${scale.low}–${scale.high}`;

  function renderFilters(scorers, rules) {
    const scorer = field("scorer");
    const chosen = scorer.value;
    scorer.replaceChildren(el("option", { value: "" }, "all scorers"));
    for (const name of [...new Set(scorers.map((s) => s.scorer))]) scorer.append(el("option", { value: name }, name));
    if (chosen) ensureOption(scorer, chosen, chosen);
    scorer.value = chosen;
    const rule = field("rule");
    const chosenRule = rule.value;
    rule.replaceChildren(el("option", { value: "" }, "all rules"));
    const names = (rules || []).map((r) => r.name).concat(scorers.filter((s) => s.source).map((s) => `source:${s.source}`));
    for (const name of [...new Set(names)]) rule.append(el("option", { value: name }, name.startsWith("source:") ? `feedback from ${name.slice(7)}` : name));
    if (chosenRule) ensureOption(rule, chosenRule, chosenRule);
    rule.value = chosenRule;
  }

  /* Feedback waiting for its trace (or whose trace never came) is counted apart from attached scores. */
  function scoredCell(s) {
    const apart = [s.pending ? `${s.pending} waiting for their trace` : "", s.never_resolved ? `${s.never_resolved} never resolved` : ""]
      .filter(Boolean).join(", ");
    return num(s.scored, apart ? `${s.scored} (+${apart})` : undefined);
  }

  function renderScorers(scorers, others) {
    const table = field("scorer-table");
    fillTable(table, scorers, (s) => [
      nameOf(s), s.higher_is_better ? "higher" : "lower", scaleText(s.scale), scoredCell(s), num(null, decimal(s.mean)),
      num(null, decimal(s.weighted_mean)), num(null, percent(s.pass_rate)), num(s.errors),
    ], "No scores in this window.");
    /* The most scored names are listed and charted; the rest are summed here (pick one with the scorer filter). */
    if (others) {
      const note = `${others.names} other names (choose one with ?scorer=NAME)`;
      table.tBodies[0].append(el("tr", { className: "others" }, el("td", { colSpan: 3 }, note), num(others.scored),
        el("td", { colSpan: 4 }, "")));
    }
  }

  /* The shared time axis: the whole window (from the minute or hour it starts in, as the API reads it) to now,
     one bucket of margin each side, widened to any point outside it. */
  function timeAxis(since, by, times) {
    const step = STEP[by];
    const now = Date.now() / 1000;
    const startStep = Math.min(step, 3600);
    const start = Math.floor((now - windowSeconds(since)) / startStep) * startStep;
    const first = Math.min(Math.floor(start / step) * step, ...times);
    const last = Math.max(Math.floor(now / step) * step, ...times);
    return [first - step / 2, last + step / 2];
  }

  /* Mean score per name, one chart per scale; a name with labels only is drawn as its pass share (0-1). */
  function renderTrend(points, scorers, axis) {
    const box = field("trend-chart");
    Charts.clear(box);
    const byName = new Map(scorers.map((s) => [nameOf(s), s]));
    const groups = new Map();
    for (const p of points) {
      const info = byName.get(nameOf(p));
      const share = info && info.mean === null && info.pass_rate !== null;
      const scale = share || !info ? { low: 0, high: 1 } : info.scale;
      const key = scaleText(scale);
      if (!groups.has(key)) groups.set(key, { scale, rows: [] });
      groups.get(key).rows.push({ x: p.time, key: share ? `${nameOf(p)} pass share` : nameOf(p), value: share ? p.pass_rate : p.mean });
    }
    const ordered = [...groups.values()].sort((a, b) => a.scale.low - b.scale.low || a.scale.high - b.scale.high);
    const label = `Mean score per ${axis.by}`;
    for (const { scale, rows } of ordered) {
      Charts.draw(box, rows, {
        label: `${label}, scale ${scaleText(scale)}`, format: (v) => decimal(v, 2), xRange: axis.range, by: axis.by,
        utc: axis.by === "day", title: `Scale ${scaleText(scale)}`, className: "scale-chart",
        dataset: { scale: scaleText(scale) },
        yRange: (u, min, max) => [Math.min(scale.low, min ?? scale.low), Math.max(scale.high, max ?? scale.high)],
      });
    }
    if (!box.children.length) Charts.empty(box, label);
    else box.setAttribute("aria-label", `${label}, one chart per scale (${ordered.map((g) => scaleText(g.scale)).join(", ")}); the table below lists the numbers`);
  }

  /* A rule's name, with its target when it scores something other than whole runs. */
  const ruleLabel = (r) => (r.target && r.target !== "run" ? `${r.rule} (${r.target})` : r.rule);
  /* A bucket's start: local date and time for minutes and hours, the UTC date for days (days are UTC days). */
  const bucketText = (time, by) => (by === "day" ? new Date(time * 1000).toISOString().slice(0, 10) : dateTime(time * 1000));

  function renderWorst(runs) {
    fillTable(field("worst-table"), runs, (r) => {
      const link = el("a", {
        href: `run?trace=${encodeURIComponent(r.trace_id)}&span=${encodeURIComponent(r.span_id)}`,
        className: "run-link",
        title: `trace ${r.trace_id}`,
        "aria-label": `Open run ${r.trace_id} (${r.scorer} ${decimal(r.score)})`,
      }, `${r.trace_id.slice(0, 12)}…`);
      const reason = r.reason_cut ? `${r.reason}…` : r.reason;
      return [dateTime(r.run_time_ms), r.scorer, ruleLabel(r), num(null, decimal(r.score)), r.label,
        agentLabel(r.agent_name, r.service_name), el("td", { className: "reason" }, reason), el("td", {}, link)];
    }, "No scored runs in this window.");
  }

  function drawOne(id, rows, options, axis) {
    const box = field(id);
    Charts.clear(box);
    const host = Charts.draw(box, rows, { ...options, xRange: axis.range, by: axis.by, utc: axis.by === "day" });
    if (host) box.setAttribute("aria-label", `${options.label}; the table below lists the numbers`);
    else Charts.empty(box, options.label);
  }

  function renderCoverage(points, axis) {
    drawOne("coverage-chart", points.map((d) => ({ x: d.time, key: ruleLabel(d), value: d.coverage })), {
      label: `Coverage (scored / candidate runs) per ${axis.by}`, format: (v) => percent(v), yRange: [0, 1],
    }, axis);
    fillTable(field("coverage-table"), points, (d) => [
      bucketText(d.time, axis.by), ruleLabel(d), num(d.candidates), num(d.scored), num(null, percent(d.coverage)),
      num(d.sampled_out), num(d.over_budget), num(d.missing_input), num(d.not_applicable), num(d.failed), num(d.filtered_out),
    ], "No sampling decisions in this window.");
  }

  function renderCost(points, axis) {
    drawOne("cost-chart", points.map((d) => ({ x: d.time, key: d.judge_model, value: d.cost_usd })), {
      label: `Judge cost in US dollars per ${axis.by}`, format: (v) => usd(v), yRange: (u, min, max) => [0, (max || 0.001) * 1.15],
    }, axis);
    // A model litellm cannot price has no cost (null): "unknown", never a $0 added to the total.
    const priced = points.reduce((sum, d) => sum + (d.priced_cost_usd || 0), 0);
    const unpriced = points.reduce((sum, d) => sum + (d.unpriced_scores || 0), 0);
    const unknown = unpriced ? `; unknown for ${count(unpriced, "score")} whose judge calls have no price` : "";
    field("cost-total").textContent =
      `Total ${unpriced ? "at least " : ""}${usd(priced)} over ${count(points.reduce((sum, d) => sum + d.scores, 0), "judged score")}${unknown}.`;
    fillTable(field("cost-table"), points, (d) => [
      bucketText(d.time, axis.by), d.judge_model, num(d.scores), num(null, d.cost_usd === null ? "unknown" : usd(d.cost_usd)),
      num(d.input_tokens), num(d.output_tokens),
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
    const [since, scorer, rule, target] = FILTERS.map((id) => field(id).value);
    const by = bucketFor(windowSeconds(since));
    const shared = { since, rule, target };  // an empty filter is not sent: the API reads that as "all"
    const [scorers, trend, worst, coverage, cost] = await Promise.all([
      getJson("scorers", shared),
      getJson("trend", { ...shared, scorer, by }),
      getJson("worst", { ...shared, scorer, limit: 20 }),
      getJson("coverage", { ...shared, by }),
      getJson("cost", { ...shared, scorer, by }),
    ]);
    renderFilters(scorers.scorers, scorers.rules);
    renderScorers(scorers.scorers, scorers.others);
    const times = [trend, coverage, cost].flatMap((answer) => answer.points.map((p) => p.time));
    const axis = { by, range: timeAxis(since, by, times) };
    renderTrend(trend.points, scorers.scorers, axis);
    renderWorst(worst.runs);
    renderCoverage(coverage.points, axis);
    renderCost(cost.points, axis);
    setStatus(`Showing ${field("since").selectedOptions[0].textContent}` + (scorer ? ` for ${scorer}` : "") +
      (rule ? `, rule ${rule}` : "") + (target ? `, ${field("target").selectedOptions[0].textContent} only` : "") +
      `; updated ${dateTime(Date.now())}` + (field("refresh").value ? `, again every ${field("refresh").value}` : "") + "." + rulesNote(scorers.rules) + addressNote, "ready");
  }

  readAddress();
  const reload = Spanscore.start(load);
  SpanscoreRefresh.every(reload);
  field("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    reload();
  });
  for (const id of FILTERS) {
    field(id).addEventListener("change", () => {
      addressNote = "";
      writeAddress();
      reload();
    });
  }
  window.addEventListener("popstate", () => {
    readAddress();
    SpanscoreRefresh.schedule();
    reload();
  });
})();
