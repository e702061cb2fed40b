/* The compare page: versions of the agent side by side per scorer, each with its weighted mean, interval,
   difference from the baseline and verdict (POST /api/v1/compare). The form lives in the address, so a
   comparison can be shared and Back returns to the previous one. */
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

  function scorerTable(scorer) {
    const table = el("table", { className: "compare" },
      el("caption", {}, scorer.scorer),
      el("thead", {}, el("tr", {}, ...["Version", "Runs (n)", "Effective n", "Mean", "Interval", "Difference",
        "Difference interval", "Verdict", "Latency p50 / p95 ms", "Tokens in / out per run"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody"));
    fillTable(table, scorer.versions, (v) => [
      v.version, num(v.n, String(v.n)), num(v.n_eff, decimal(v.n_eff, 1)), num(v.mean, decimal(v.mean)),
      interval(v.ci_low, v.ci_high), v.diff === null ? "–" : num(v.diff, decimal(v.diff)),
      interval(v.diff_low, v.diff_high), verdictCell(v),
      v.latency_p50_ms == null ? "–" : `${decimal(v.latency_p50_ms, 0)} / ${decimal(v.latency_p95_ms, 0)}`,
      v.input_tokens_per_run == null ? "–" : `${decimal(v.input_tokens_per_run, 0)} / ${decimal(v.output_tokens_per_run, 0)}`,
    ]);
    return table;
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
    const document_ = await postJson("compare", body);
    box.replaceChildren(...document_.scorers.map(scorerTable));
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
