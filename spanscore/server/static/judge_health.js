/* The dashboard's judge banner: a judge failing now, named with its cause, from GET /api/v1/status.
 *
 * The service counts each judge model's failed calls since its last answer (judge_failing_calls{model,cause}
 * and judge_failing_seconds{model}); while any model is failing the banner says which, why and since when,
 * and it goes away with the next answer. Checked on load and every 15 s; data-checked marks a finished check.
 */
"use strict";

(() => {
  const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;
  const unescape = (value) => value.replace(/\\n/g, "\n").replace(/\\(.)/g, "$1");

  function parse(key) {
    const brace = key.indexOf("{");
    const name = brace < 0 ? key : key.slice(0, brace);
    const labels = {};
    for (const match of key.slice(brace + 1).matchAll(LABEL)) labels[match[1]] = unescape(match[2]);
    return { name, labels };
  }

  function problems(status) {
    const calls = [], seconds = {};
    for (const [key, value] of Object.entries(status || {})) {
      const { name, labels } = parse(key);
      if (name === "judge_failing_calls") calls.push({ ...labels, calls: value });
      if (name === "judge_failing_seconds") seconds[labels.model] = value;
    }
    const retrying = (status && status["scoring_jobs_retrying"]) || 0;
    const waiting = retrying ? `; ${retrying} scoring jobs retrying` : "";
    return calls.map((c) =>
      `Judge ${c.model} ${c.cause} (${c.calls} calls failing for ${Math.round(seconds[c.model] || 0)} s${waiting}).`);
  }

  async function check() {
    const banner = document.getElementById("judge-health");
    try {
      const found = problems(await Spanscore.getJson("../status"));
      banner.textContent = found.join(" ");
      banner.hidden = found.length === 0;
    } catch (error) {
      banner.hidden = true;  // no token yet, or an older service: the page's own status line says why
    }
    banner.dataset.checked = String(Date.now());
  }

  check();
  setInterval(check, 15000);
})();
