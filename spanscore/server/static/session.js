/* The session page: a conversation's turns in order, each with its run's and its spans' scores, and the
   session's own scores. */
"use strict";

(() => {
  const { getJson, el, fillTable, num, decimal, setStatus, count } = Spanscore;
  const sessionId = new URLSearchParams(location.search).get("id") || "";

  function text(messages) {
    return (messages || []).map((m) => m.content).filter(Boolean).join("\n");
  }

  function scoreLine(s) {
    const where = s.target === "run" ? "run" : `${s.target} span ${s.span_id}`;
    const value = s.status === "ok" ? decimal(s.score) : s.status;
    return el("li", {}, `${s.scorer} (${s.rule}, ${where}): ${value}${s.reason ? ` · ${s.reason}` : ""}`);
  }

  function turnBox(turn, index) {
    const box = el("div", { className: "conversation", dataset: { runId: turn.run_id } });
    const link = el("a", { href: `run?trace=${encodeURIComponent(turn.trace_id)}&span=${encodeURIComponent(turn.span_id)}` },
      `run ${turn.run_id}`);
    box.append(el("h3", {}, `Turn ${index + 1} · `, link));
    const user = text(turn.input);
    const answer = text(turn.output);
    box.append(el("div", { className: `turn user${user ? "" : " missing"}` }, el("h3", {}, "user"),
      el("pre", { className: "text" }, user || "missing: the spans did not carry it")));
    for (const call of turn.tool_calls || []) {
      const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
      box.append(el("div", { className: "turn tool" }, el("h3", {}, "tool call"),
        el("pre", { className: "text" }, `${call.name}(${args || ""})${call.result ? `\n→ ${call.result}` : ""}`)));
    }
    box.append(el("div", { className: `turn assistant${answer ? "" : " missing"}` }, el("h3", {}, "answer"),
      el("pre", { className: "text" }, answer || "missing: the spans did not carry it")));
    box.append(turn.scores.length ? el("ul", { className: "scores" }, ...turn.scores.map(scoreLine))
      : el("p", { className: "note" }, "No score on this turn."));
    return box;
  }

  /* Why the conversation has no score of its own: no rule scores sessions (and will not until one is added),
     or the session rules have not scored it yet. */
  function noSessionScore(rules) {
    if (Array.isArray(rules) && !rules.length) {
      return "No rule scores whole sessions, so no session score will come. To add one, give a rule " +
        "target: session and a session scorer (e.g. turn_count) under rules: in the config; see docs/sampling.md, Targets.";
    }
    const names = Array.isArray(rules) ? ` (${rules.join(", ")})` : "";
    return `No session score yet: the session rules${names} score a session once no run of it arrived for collector.sessions.quiet_period_s (default 300 s).`;
  }

  async function load() {
    document.getElementById("session-id").textContent = sessionId;
    if (!sessionId) throw new Error("the address needs ?id= with a session id");
    const session = await getJson(`sessions/${encodeURIComponent(sessionId)}`);
    fillTable(document.getElementById("session-scores-table"), session.scores, (s) => [
      s.scorer, s.rule, num(null, decimal(s.score)), s.label || "–", s.status,
      el("td", { className: "reason" }, s.reason || s.error || "–"), s.ready_reason,
    ], noSessionScore(session.session_rules));
    document.getElementById("turns").replaceChildren(...session.turns.map(turnBox));
    document.getElementById("turns-note").textContent = session.turns_cut
      ? `Only the first ${count(session.turns.length, "turn")} are shown.` : `${count(session.turns.length, "turn")}.`;
    document.title = `Session ${sessionId.slice(0, 24)} · spanscore`;
    setStatus(`${count(session.turns.length, "turn")}, ${count(session.scores.length, "session score")}.`, "ready");
  }

  Spanscore.start(load);
})();
