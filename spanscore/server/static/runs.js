/* The runs list: find a run by trace id, session, user, agent, service, a scorer's result, a version or text.
 *
 * The search lives in the address (?text=refund&scorer=faithfulness&outcome=fail&sort=worst&page=2): loading
 * it opens that search, a new search or page writes it back (Back returns to the previous one). Values go to
 * /api/v1/dashboard/runs as they are; the API checks them and names what it refuses.
 */
"use strict";

(() => {
  const { getJson, el, fillTable, num, decimal, dateTime, setStatus, count, agentLabel } = Spanscore;
  const FIELDS = ["since", "text", "trace", "session", "user", "agent", "service", "scorer", "outcome", "below",
    "version_by", "version", "sort", "per_page", "refresh"];
  const field = (id) => document.getElementById(id);
  let page = 1;
  let addressNote = "";

  function readAddress() {
    const params = new URLSearchParams(location.search);
    const problems = [];
    for (const id of FIELDS) {
      if (id === "refresh") continue;
      const value = params.get(id) || "";
      const box = field(id);
      if (box.tagName !== "SELECT") {
        box.value = value;
      } else if (!value) {
        box.selectedIndex = [...box.options].findIndex((o) => o.defaultSelected);
      } else {
        /* A value the page does not list (since=2h, per_page=10) is kept; the API says if it cannot use it. */
        if (![...box.options].some((o) => o.value === value)) box.append(el("option", { value }, value));
        box.value = value;
      }
    }
    const refreshProblem = SpanscoreRefresh.read(params);
    if (refreshProblem) problems.push(refreshProblem);
    page = Math.max(1, Number.parseInt(params.get("page") || "1", 10) || 1);
    addressNote = problems.length ? ` Address: ${problems.join("; ")}.` : "";
  }

  /* The filters given (defaults left out), as the API and the address take them. */
  function filters() {
    const params = {};
    for (const id of FIELDS) {
      const box = field(id);
      const value = box.value.trim();
      const isDefault = box.tagName === "SELECT" && box.selectedOptions[0] && box.selectedOptions[0].defaultSelected;
      if (value && !isDefault) params[id] = value;
    }
    return params;
  }

  function writeAddress() {
    const params = new URLSearchParams(filters());
    if (page > 1) params.set("page", String(page));
    const query = params.toString();
    const url = location.pathname + (query ? `?${query}` : "");
    if (url !== location.pathname + location.search) history.pushState(null, "", url);
  }

  const scoreText = (s) => `${s.scorer} ${s.score === null ? s.status : decimal(s.score)}${s.label && s.label !== s.status ? ` ${s.label}` : ""}`;

  function render(answer) {
    fillTable(field("runs-table"), answer.runs, (r) => {
      const link = el("a", { href: `run?trace=${encodeURIComponent(r.trace_id)}`, className: "run-link",
        title: `trace ${r.trace_id}`, "aria-label": `Open run ${r.trace_id}` }, `${r.trace_id.slice(0, 12)}…`);
      const session = r.session_id
        ? el("a", { href: `session?id=${encodeURIComponent(r.session_id)}` }, r.session_id) : "–";
      return [dateTime(r.run_time_ms), el("td", {}, link), agentLabel(r.agent_name, r.service_name),
        el("td", {}, session), r.user_id || "–", el("td", { className: "reason" }, r.scores.map(scoreText).join("\n") || "not scored"),
        num(null, `${r.sampled} of ${count(r.decisions, "rule")}`)];
    }, answer.note ? `No runs match in this window: ${answer.note}.` : "No runs match in this window.");
    const first = (page - 1) * answer.per_page;
    field("page-note").textContent = answer.runs.length ? `Runs ${first + 1}–${first + answer.runs.length}` : "";
    field("previous").disabled = page <= 1;
    field("next").disabled = !answer.has_more;
  }

  async function load() {
    const params = { ...filters(), page: page > 1 ? page : "" };
    delete params.refresh;
    const answer = await getJson("runs", params);
    render(answer);
    const textNote = params.text
      ? ` Text is searched in the newest ${answer.limits.text_scan_runs} scored runs of the window.` : "";
    setStatus(`${count(answer.runs.length, "run")} on page ${page}${answer.has_more ? ", more on the next" : ""}; ` +
      `updated ${dateTime(Date.now())}.${textNote}${addressNote}`, "ready");
  }

  readAddress();
  const reload = Spanscore.start(load);
  SpanscoreRefresh.every(reload);
  const go = (to) => {
    page = to;
    addressNote = "";
    writeAddress();
    reload();
  };
  field("search").addEventListener("submit", (event) => {
    event.preventDefault();
    go(1);
  });
  field("refresh").addEventListener("change", () => writeAddress());
  field("previous").addEventListener("click", () => go(Math.max(1, page - 1)));
  field("next").addEventListener("click", () => go(page + 1));
  window.addEventListener("popstate", () => {
    readAddress();
    SpanscoreRefresh.schedule();
    reload();
  });
})();
