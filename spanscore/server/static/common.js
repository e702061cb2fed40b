/* Shared by the dashboard pages: the API token, fetching JSON, DOM and number helpers.
 *
 * The token: the API's bearer token (api.auth_tokens) is kept in sessionStorage for this tab
 * only. It arrives either through the sign-in form (shown when the API answers 401) or once
 * through the URL fragment, /dashboard/#token=..., which never reaches the server or its logs
 * and is removed from the address bar at once. Data is only ever inserted as text, never as HTML.
 */
"use strict";

const Spanscore = (() => {
  const TOKEN_KEY = "spanscore.apiToken";
  const API = new URL("../api/v1/dashboard/", document.baseURI);

  class AuthError extends Error {}

  function takeTokenFromFragment() {
    const fragment = new URLSearchParams(location.hash.slice(1));
    if (!fragment.has("token")) return;
    const token = fragment.get("token");
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    history.replaceState(null, "", location.pathname + location.search);
  }

  async function getJson(path, params) {
    const url = new URL(path, API);
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== "" && value !== null && value !== undefined) url.searchParams.set(key, value);
    }
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    const response = await fetch(url, { headers, cache: "no-store" });
    let body = null;
    try {
      body = await response.json();
    } catch (error) {
      body = null;
    }
    const message = body && typeof body.error === "string" ? body.error : `${url.pathname}: HTTP ${response.status}`;
    if (response.status === 401) throw new AuthError(message);
    if (!response.ok) throw new Error(message);
    return body;
  }

  /* POST JSON to /api/v1/<path> with the token; answers the parsed body, throws with the API's message. */
  async function postJson(path, body) {
    const url = new URL(path, new URL("../api/v1/", document.baseURI));
    const headers = { Accept: "application/json", "Content-Type": "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), cache: "no-store" });
    let answer = null;
    try {
      answer = await response.json();
    } catch (error) {
      answer = null;
    }
    if (!response.ok) {
      const problems = answer && Array.isArray(answer.problems) ? `: ${answer.problems.join("; ")}` : "";
      const message = answer && typeof answer.error === "string" ? answer.error : `HTTP ${response.status}`;
      if (response.status === 401) throw new AuthError(message);
      throw new Error(message + problems);
    }
    return answer;
  }

  function setStatus(text, state) {
    document.getElementById("status").textContent = text;
    document.body.dataset.state = state;
  }

  /* Runs `load` now and after a sign-in; shows the sign-in form when the API wants a token. */
  function start(load) {
    takeTokenFromFragment();
    const login = document.getElementById("login");
    const forget = document.getElementById("forget-token");
    const refreshForget = () => { forget.hidden = !sessionStorage.getItem(TOKEN_KEY); };
    const run = async () => {
      setStatus("Loading…", "loading");
      try {
        await load();
        login.hidden = true;
      } catch (error) {
        if (error instanceof AuthError) {
          sessionStorage.removeItem(TOKEN_KEY);
          login.hidden = false;
          setStatus(`Sign in: ${error.message}`, "auth");
          document.getElementById("token").focus();
        } else {
          setStatus(`Could not load: ${error.message}`, "error");
        }
      }
      refreshForget();
    };
    login.addEventListener("submit", (event) => {
      event.preventDefault();
      const field = document.getElementById("token");
      sessionStorage.setItem(TOKEN_KEY, field.value.trim());
      field.value = "";
      run();
    });
    forget.addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      refreshForget();
      run();
    });
    run();
    return run;
  }

  /* el("td", {className: "num"}, "text", otherNode): text children are always text nodes. */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("aria-") || key === "role") node.setAttribute(key, value);
      else node[key] = value;
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  /* Replace a table body's rows; `cells(row)` returns one entry per column (text or a node). */
  function fillTable(table, rows, cells, emptyText) {
    const body = table.tBodies[0];
    body.replaceChildren();
    const columns = table.tHead.rows[0].cells.length;
    if (!rows.length) {
      body.append(el("tr", {}, el("td", { colSpan: columns, className: "empty" }, emptyText || "Nothing in this window.")));
      return;
    }
    for (const row of rows) {
      const tr = el("tr");
      for (const cell of cells(row)) {
        tr.append(cell instanceof Node && cell.nodeName === "TD" ? cell : el("td", {}, cell));
      }
      body.append(tr);
    }
  }

  function num(value, text) {
    return el("td", { className: "num" }, text === undefined ? String(value ?? "–") : text);
  }

  function decimal(value, digits = 3) {
    return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
  }

  function percent(value) {
    return value === null || value === undefined ? "–" : `${(100 * value).toFixed(1)}%`;
  }

  function usd(value) {
    return value === null || value === undefined ? "–" : `$${Number(value).toFixed(4)}`;
  }

  /* "1 decision", "3 decisions", "0 replies": a count with its noun, in the right number. */
  function count(n, noun, plural) {
    return `${n} ${n === 1 ? noun : plural || `${noun}s`}`;
  }

  /* A run's agent as spans named it; a run without an agent name shows its service, marked as the service. */
  function agentLabel(agentName, serviceName) {
    if (agentName) return agentName;
    return serviceName ? `${serviceName} (service, no agent name)` : "– (no agent name)";
  }

  function dateTime(ms) {
    const d = new Date(ms);
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }

  return {
    AuthError, getJson, postJson, setStatus, start, el, fillTable, num, decimal, percent, usd, dateTime, count, agentLabel,
  };
})();
