/* The session page: a conversation's turns in order, each with its run's and its spans' scores, and the
   session's own scores. */
"use strict";

(() => {
  const { getJson, el, fillTable, num, decimal, setStatus } = Spanscore;
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

  async function load() {
    document.getElementById("session-id").textContent = sessionId;
    if (!sessionId) throw new Error("the address needs ?id= with a session id");
    const session = await getJson(`sessions/${encodeURIComponent(sessionId)}`);
    fillTable(document.getElementById("session-scores-table"), session.scores, (s) => [
      s.scorer, s.rule, num(null, decimal(s.score)), s.label || "–", s.status,
      el("td", { className: "reason" }, s.reason || s.error || "–"), s.ready_reason,
    ], "No session score yet (the session may still be open).");
    document.getElementById("turns").replaceChildren(...session.turns.map(turnBox));
    document.getElementById("turns-note").textContent = session.turns_cut
      ? `Only the first ${session.turns.length} turns are shown.` : `${session.turns.length} turns.`;
    document.title = `Session ${sessionId.slice(0, 24)} · spanscore`;
    setStatus(`${session.turns.length} turns, ${session.scores.length} session scores.`, "ready");
  }

  Spanscore.start(load);
})();
