/* The run page: one trace's scores with their reasons, its sampling decisions and its span tree. */
"use strict";

(() => {
  const { getJson, postJson, el, fillTable, num, decimal, usd, setStatus, count, agentLabel } = Spanscore;
  const params = new URLSearchParams(location.search);
  const traceId = (params.get("trace") || "").toLowerCase();
  const focusSpan = (params.get("span") || "").toLowerCase();

  /* Depth-first order, children by start time; spans whose parent is not stored start their own tree. */
  function spanTree(spans) {
    const ids = new Set(spans.map((s) => s.span_id));
    const children = new Map();
    for (const s of spans) {
      const parent = ids.has(s.parent_span_id) && s.parent_span_id !== s.span_id ? s.parent_span_id : "";
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(s);
    }
    const ordered = [];
    const visit = (parent, depth) => {
      for (const s of (children.get(parent) || []).sort((a, b) => a.start_ms - b.start_ms)) {
        ordered.push({ span: s, depth });
        visit(s.span_id, depth + 1);
      }
    };
    visit("", 0);
    return ordered;
  }

  function attributes(span) {
    const keys = Object.keys(span.attributes).sort();
    if (!keys.length) return "–";
    const list = el("dl");
    for (const key of keys) list.append(el("dt", {}, key), el("dd", {}, span.attributes[key]));
    return el("details", {}, el("summary", {}, count(keys.length, "attribute")), list);
  }

  function spanLink(spanId) {
    return spanId ? el("a", { href: `#span-${spanId}` }, spanId) : "–";
  }

  /* One box of the conversation: a role, where it came from, and the text (or that the spans lacked it). */
  function turn(kind, title, source, text, missingText) {
    const missing = text === null || text === undefined;
    return el("div", { className: `turn ${kind}${missing ? " missing" : ""}` },
      el("h3", {}, title, source ? el("span", { className: "source" }, ` · ${source}`) : null),
      el("pre", { className: "text" }, missing ? missingText || "missing: the spans did not carry it" : text));
  }

  /* What a context scorer was judged against, as stored with its score (Attributes['context.source']). Scores
     stored before that attribute existed are placed by the order the scorers read context in (inferred). */
  const CONTEXT_SCORERS = new Set(["faithfulness", "hallucination", "context_precision", "context_relevance", "context_recall"]);
  const CONTEXT_TEXT = {
    retrieved: "the retrieved context", tool_results: "the tool results", option: "the context set in its options",
    none: "no context (the run had none)",
  };
  const hasToolResults = (view) => (view.tool_calls || []).some((c) => c.result !== null && c.result !== undefined);
  const inferredSource = (view) => (view.context ? "retrieved" : hasToolResults(view) ? "tool_results" : "none");

  function contextUses(view, scores) {
    const uses = new Map();
    for (const s of scores) {
      if (s.run_id !== view.run_id) continue;
      const source = s.context_source || (CONTEXT_SCORERS.has(s.scorer) ? `${inferredSource(view)}?` : "");
      if (!source) continue;
      if (!uses.has(source)) uses.set(source, new Set());
      uses.get(source).add(s.scorer);
    }
    return [...uses].map(([source, names]) => {
      const inferred = source.endsWith("?");
      return `${[...names].join(", ")} judged against ${CONTEXT_TEXT[source.replace("?", "")]}${inferred ? " (inferred)" : ""}`;
    });
  }

  /* The retrieved context, and which context each scorer used: a run judged against its tool results has no
     retrieved context, and is not "missing" one. */
  function contextTurn(view, scores) {
    const src = view.sources || {};
    const uses = contextUses(view, scores);
    const used = uses.length ? el("p", { className: "used" }, `${uses.join("; ")}.`) : null;
    if (view.context) {
      const box = turn("context", "retrieved context", src.context, view.context.join("\n\n"));
      if (used) box.append(used);
      return box;
    }
    if (!uses.length) return turn("context", "retrieved context", src.context, null, "none: the spans carried no retrieved documents");
    return turn("context", "context the scorers used", null, `No retrieved context. ${uses.join("; ")}.`);
  }

  function callText(call) {
    const args = call.arguments === null || typeof call.arguments === "string"
      ? (call.arguments || "") : JSON.stringify(call.arguments);
    return [`${call.name}(${args})`, call.result === null ? "" : `→ ${call.result}`].filter(Boolean).join("\n");
  }

  /* The scored run as a conversation: system, user, tool calls and results, answer, retrieved context. */
  function conversation(view, scores) {
    const src = view.sources || {};
    const box = el("div", { className: "conversation", dataset: { runId: view.run_id } });
    box.append(el("p", { className: "note" },
      `Run ${view.run_id} · agent ${agentLabel(view.agent_name, view.service_name)} · model ${view.model || "–"}`));
    box.append(turn("system", "system", src.system, view.system));
    /* An LLM call's view lists the tools the model could call, so a wrong or missing call can be judged. */
    if (view.tools) {
      const offered = view.tools.map((t) => (t.description ? `${t.name}: ${t.description}` : t.name)).join("\n");
      box.append(turn("system", "tools offered", src.tools, offered || "none"));
    }
    for (const m of view.input || []) box.append(turn(m.role === "user" ? "user" : "system", m.role, src.input, m.content));
    if (!view.input) box.append(turn("user", "input", src.input, null));
    for (const call of view.tool_calls || []) box.append(turn("tool", `tool call ${call.order + 1}`, src.tool_calls, callText(call)));
    /* A view stored with its answer shows the output's steps, then the answer exactly as the scorers read it. */
    const hasAnswer = view.answer !== undefined;
    for (const m of view.output || []) {
      /* Calls inside the answer are what scorers read only when the run has no tool_calls of its own. */
      const calls = view.tool_calls ? [] : m.tool_calls || [];
      for (const call of calls) box.append(turn("tool", "tool call", src.output, callText(call)));
      if (!m.content || (hasAnswer && m.answer)) continue;
      const title = !hasAnswer ? m.role : m.role === "tool" ? "tool result" : `${m.role} (step)`;
      box.append(turn(m.role === "tool" ? "tool" : "assistant", title, src.output, m.content));
    }
    if (hasAnswer) box.append(turn("assistant", "answer", src.output, view.answer));
    else if (!view.output) box.append(turn("assistant", "output", src.output, null));
    box.append(contextTurn(view, scores));
    if (view.ground_truth !== null) box.append(turn("context", "ground truth", src.ground_truth, view.ground_truth));
    return box;
  }

  /* What each judge score's judge was sent, after redaction: placeholders, and which detectors fired (counts). */
  function judgeSent(scores) {
    return scores.filter((s) => s.judge_sent).map((s) => el("div", { className: "judge-sent", dataset: { scorer: s.scorer } },
      el("h3", {}, `Sent to the judge for ${s.scorer} (${s.rule}), redacted`,
        el("span", { className: "source" }, ` · masked: ${s.judge_redactions || "none"}`)),
      el("pre", { className: "text" }, s.judge_sent)));
  }

  function render(run) {
    const views = run.scored_runs || [];
    document.getElementById("scored-runs").replaceChildren(...(views.length ? views.map((v) => conversation(v, run.scores))
      : [el("p", { className: "empty" }, "No scored run stored for this trace (not scored, or expired).")]),
      ...judgeSent(run.scores));
    const scored = new Set(run.scores.map((s) => s.span_id));
    /* Feedback posted before its trace is stored and attached when the trace comes; say so, not just "ok". */
    const scoreState = (s) => (s.waiting_for_trace ? "waiting for its trace" : s.never_resolved ? "never resolved" : s.status);
    const waitingNote = (scores) => (scores.some((s) => s.waiting_for_trace)
      ? "No spans stored for this trace yet: its feedback is waiting for them, and is attached when they arrive (looked for 7 days)."
      : scores.some((s) => s.never_resolved) ? "This trace's spans never arrived: its feedback was not attached to a run." : "");
    /* The conversation this trace belongs to, when its runs carry a session id. */
    const sessions = [...new Set(run.scores.map((s) => s.session_id).filter(Boolean))];
    document.getElementById("session-links").replaceChildren(...sessions.map((id) =>
      el("a", { className: "session-link", href: `session?id=${encodeURIComponent(id)}` }, `session ${id}`)));
    /* A rule that scores single calls or whole conversations says so next to its name. */
    const ruleOf = (x) => (x.target && x.target !== "run" ? `${x.rule} (${x.target}${x.target === "session" ? ` ${x.run_id}` : ""})` : x.rule);
    fillTable(document.getElementById("scores-table"), run.scores, (s) => [
      s.scorer, ruleOf(s), num(null, decimal(s.score)), s.label || "–", scoreState(s),
      el("td", { className: "reason" }, s.reason || s.error || "–",
        s.context_source ? el("p", { className: "used" }, `Judged against ${CONTEXT_TEXT[s.context_source] || s.context_source}.`) : null),
      s.judge_model || "–",
      num(null, s.judge_model ? usd(s.cost_usd) : "–"), el("td", {}, spanLink(s.span_id)),
    ], "No scores for this trace.");
    fillTable(document.getElementById("decisions-table"), run.decisions, (d) => [
      ruleOf(d), d.decision, num(null, decimal(d.probability, 4)), d.reason || "–",
    ], "No sampling decisions for this trace.");
    const start = Math.min(...run.spans.map((s) => s.start_ms));
    const rows = spanTree(run.spans);
    fillTable(document.getElementById("spans-table"), rows, ({ span, depth }) => {
      const name = el("td", { className: "span-name" }, span.name);
      name.style.paddingLeft = `${0.5 + 1.25 * depth}rem`;
      if (scored.has(span.span_id)) name.append(" ", el("span", { className: "badge" }, "scored"));
      return [name, span.kind, span.service_name, num(null, String(span.start_ms - start)),
        num(null, decimal(span.duration_ms, 1)), span.status_message ? `${span.status_code}: ${span.status_message}` : span.status_code,
        el("td", {}, attributes(span))];
    }, waitingNote(run.scores) || "No spans stored for this trace (they may have expired).");
    const body = document.getElementById("spans-table").tBodies[0];
    rows.forEach(({ span }, i) => {
      const tr = body.rows[i];
      if (!tr) return;
      tr.id = `span-${span.span_id}`;
      if (scored.has(span.span_id)) tr.classList.add("scored");
      if (span.span_id === focusSpan) tr.classList.add("focus");
    });
    document.getElementById("spans-note").textContent = run.spans_cut
      ? `Only the first ${count(run.spans.length, "span")} are shown.` : `${count(run.spans.length, "span")}.`;
  }

  async function load() {
    document.getElementById("trace-id").textContent = traceId;
    if (!/^[0-9a-f]{32}$/.test(traceId)) throw new Error("the address needs ?trace= with a 32-character hex trace id");
    const run = await getJson(`runs/${traceId}`);
    render(run);
    document.title = `Run ${traceId.slice(0, 12)} · spanscore`;
    setStatus(`${count(run.scores.length, "score")}, ${count(run.decisions.length, "decision")}, ` +
      `${count(run.spans.length, "span")}.`, "ready");
  }

  /* Thumbs up/down or a label with a comment, posted as a human score; the tables reload to show it. */
  function wireFeedback(reload) {
    const form = document.getElementById("feedback");
    const status = document.getElementById("feedback-status");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const verdict = event.submitter ? event.submitter.value : "label";
      const value = (name) => form.elements[name].value.trim();
      const label = verdict === "label" ? value("label") : verdict;
      if (!label) {
        status.textContent = "Give a label, or use the thumbs.";
        return;
      }
      const body = { trace_id: traceId, name: value("name"), label, comment: value("comment"), source: "human" };
      if (value("author")) body.author = value("author");
      status.textContent = "Saving…";
      try {
        await postJson("scores", body);
        status.textContent = `Saved: ${label}.`;
        form.elements.comment.value = "";
        await reload();
      } catch (error) {
        status.textContent = `Not saved: ${error.message}`;
      }
    });
  }

  wireFeedback(Spanscore.start(load));
})();
