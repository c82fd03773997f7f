// agentloop dashboard: a client of the same control API as the CLI and the TUI.
// No framework and no build step; every piece of run data reaches the page through
// textContent, never as HTML.
"use strict";

// ---------------------------------------------------------------- token and API

const TOKEN_KEY = "agentloop.token";

(function takeTokenFromUrl() {
  const params = new URLSearchParams(location.search);
  const t = params.get("token");
  if (t) {
    localStorage.setItem(TOKEN_KEY, t);
    // The token leaves the address bar (and the history) at once.
    history.replaceState(null, "", location.pathname + location.hash);
  }
})();

function token() {
  return localStorage.getItem(TOKEN_KEY) || "";
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, options = {}) {
  const headers = { Authorization: "Bearer " + token() };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: options.method || "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  let data = null;
  try {
    data = await res.json();
  } catch (_) {
    data = null;
  }
  if (!res.ok) {
    if (res.status === 401) showTokenForm();
    throw new ApiError(res.status, (data && data.error) || res.statusText);
  }
  return data;
}

function requestId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Date.now().toString(36) + Math.random().toString(36).slice(2);
}

// ---------------------------------------------------------------- DOM helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    // Through CSSOM: the page's CSP allows no inline style attributes.
    else if (k === "style") node.style.cssText = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  append(node, children);
  return node;
}

// Replaces a node's children; null and false children are left out.
function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function toast(message, kind = "info") {
  const t = document.getElementById("toast");
  t.textContent = message;
  t.className = "show " + kind;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.className = ""), 4000);
}

function money(x) {
  const v = Number(x || 0);
  return "$" + (v < 10 ? v.toFixed(4) : v.toFixed(2));
}

function duration(ms) {
  if (ms === null || ms === undefined) return "–";
  const s = Math.round(ms / 1000);
  if (s < 60) return (ms < 10000 ? (ms / 1000).toFixed(1) : s) + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m " + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(m / 60) + "h " + String(m % 60).padStart(2, "0") + "m";
}

function compact(n) {
  const v = Number(n || 0);
  if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
  return String(v);
}

const FINISHED = new Set(["completed", "stopped", "failed", "gone", "unreadable"]);

function elapsedMs(run) {
  const start = Date.parse(run.created);
  if (isNaN(start)) return null;
  const end = FINISHED.has(run.status) ? Date.parse(run.updated) : Date.now();
  return Math.max(0, end - start);
}

function statusPill(status) {
  return el("span", { class: "pill s-" + status }, status);
}

function progressBar(done, total, label) {
  const pct = total ? Math.round((100 * done) / total) : 0;
  return el(
    "div",
    {
      class: "bar",
      role: "progressbar",
      "aria-valuemin": "0",
      "aria-valuemax": String(total),
      "aria-valuenow": String(done),
      "aria-label": label,
    },
    el("div", { class: "fill", style: "width:" + pct + "%" }),
  );
}

function progress(done, total, label) {
  return el("div", { class: "progress" }, progressBar(done, total, label), el("span", { class: "progress-text" }, done + " / " + total));
}

// ---------------------------------------------------------------- live events

let source = null;
let sourceKey = "";

// One event stream at a time; a page that listens on the same channel as the last
// one keeps its connection (and its place in the stream).
function listen(key, url, onEvent) {
  if (source && sourceKey === key) {
    source.handler = onEvent;
    return;
  }
  if (source) source.close();
  sourceKey = key;
  source = new EventSource(url);
  source.handler = onEvent;
  const conn = document.getElementById("conn");
  source.onopen = () => {
    conn.textContent = "live";
    conn.className = "conn ok";
  };
  source.onerror = () => {
    conn.textContent = "reconnecting…";
    conn.className = "conn bad";
  };
  // Every event kind arrives under its own name; one listener per kind we know.
  for (const kind of EVENT_KINDS) {
    source.addEventListener(kind, (e) => source.handler && source.handler(kind, e));
  }
}

const EVENT_KINDS = [
  "run_created", "driver_started", "driver_stopped", "iteration_started", "agent_finished",
  "verify_finished", "iteration_finished", "escalated", "replan_accepted", "replan_rejected",
  "gate_opened", "control", "limit_hit", "limit_wait_over", "hook_stop", "run_finished",
];

// Refreshes triggered by events, at most one in flight and a few per second.
function throttled(fn, ms) {
  let timer = null;
  let running = false;
  let again = false;
  const run = async () => {
    timer = null;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await fn();
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) console.error(e);
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule();
      }
    }
  };
  const schedule = () => {
    if (!timer) timer = setTimeout(run, ms);
  };
  return schedule;
}

// ---------------------------------------------------------------- router

let view = null; // the current page: {dispose()}

function route() {
  const hash = location.hash || "#/";
  const m = hash.match(/^#\/run\/([^/]+)(?:\/iteration\/(\d+))?$/);
  const runId = m ? decodeURIComponent(m[1]) : null;
  const iteration = m && m[2] ? Number(m[2]) : null;
  // Picking an iteration stays on the same page: no reload, the note kept.
  if (view && runId && view.runId === runId && token()) return view.select(iteration);
  if (view && view.dispose) view.dispose();
  view = null;
  const main = document.getElementById("main");
  fill(main);
  if (!token()) return showTokenForm();
  if (runId) view = runPage(main, runId, iteration);
  else view = runsPage(main);
}

function showTokenForm() {
  if (view && view.dispose) view.dispose();
  view = null;
  const main = document.getElementById("main");
  const input = el("input", {
    id: "token-input", type: "password", autocomplete: "off", required: true, size: "50",
  });
  fill(main,
    el("h1", {}, "Sign in"),
    el("p", {}, "This server needs its token. `agentloop serve` printed a link with it the first time it ran; the token is also in the file it named."),
    el(
      "form",
      {
        class: "card",
        onsubmit: (e) => {
          e.preventDefault();
          localStorage.setItem(TOKEN_KEY, input.value.trim());
          route();
        },
      },
      el("label", { for: "token-input" }, "Token"),
      input,
      el("button", { type: "submit" }, "Open the dashboard"),
    ),
  );
  input.focus();
}

// ---------------------------------------------------------------- runs page

function runsPage(main) {
  document.title = "Runs · agentloop";
  const body = el("tbody");
  const empty = el("p", { class: "muted", hidden: true }, "No runs yet. Start one below, or with `agentloop run` in a repository.");
  const table = el(
    "table",
    { class: "runs", "aria-label": "Runs" },
    el("thead", {}, el("tr", {},
      el("th", { scope: "col" }, "Run"),
      el("th", { scope: "col" }, "Status"),
      el("th", { scope: "col" }, "Progress"),
      el("th", { scope: "col", class: "num" }, "Iterations"),
      el("th", { scope: "col", class: "num" }, "Cost"),
      el("th", { scope: "col", class: "num" }, "Elapsed"),
      el("th", { scope: "col" }, "Needs you"),
    )),
    body,
  );
  const start = startForm();
  main.append(el("h1", {}, "Runs"), table, empty, start.node);
  let runs = [];

  const draw = () => {
    fill(body,
      ...runs.map((r) => {
        const attention = r.attention || [];
        return el("tr", { dataset: { run: r.run_id } },
          el("td", {},
            el("a", { href: "#/run/" + encodeURIComponent(r.run_id), class: "run-link" }, r.title || r.run_id),
            el("div", { class: "muted small" }, r.run_id + (r.workdir ? " · " + r.workdir : "")),
          ),
          el("td", {}, statusPill(r.status)),
          el("td", {}, r.tasks_total === undefined ? "–" : progress(r.tasks_done, r.tasks_total, "tasks done")),
          el("td", { class: "num" }, r.iterations ?? "–"),
          el("td", { class: "num" }, r.cost_usd === undefined ? "–" : money(r.cost_usd)),
          el("td", { class: "num elapsed", dataset: { created: r.created || "", updated: r.updated || "", status: r.status } },
            r.created ? duration(elapsedMs(r)) : "–"),
          el("td", {}, attention.length
            ? el("div", { class: "needs-cell" },
                el("span", { class: "badge needs" }, "needs you"),
                el("ul", { class: "why small" }, ...attention.map((a) => el("li", {}, a))))
            : r.status === "gone" ? el("span", { class: "muted" }, "directory deleted") : ""),
        );
      }),
    );
    empty.hidden = runs.length > 0;
  };

  const refresh = throttled(async () => {
    const data = await api("/api/runs");
    runs = data.runs.slice().sort((a, b) => String(b.created || b.run_id).localeCompare(String(a.created || a.run_id)));
    draw();
  }, 250);
  refresh();
  start.load();
  listen("all", "/api/events?tail=true&token=" + encodeURIComponent(token()), () => refresh());
  const tick = setInterval(() => {
    for (const cell of body.querySelectorAll("td.elapsed")) {
      const d = cell.dataset;
      if (d.created) cell.textContent = duration(elapsedMs({ created: d.created, updated: d.updated, status: d.status }));
    }
  }, 1000);
  return { dispose: () => clearInterval(tick), key: () => false };
}

function startForm() {
  const repo = el("select", { id: "start-repo", required: true });
  const plan = el("input", { id: "start-plan", value: "PLAN.md", required: true, list: "start-plans" });
  const plans = el("datalist", { id: "start-plans" });
  const agent = el("input", { id: "start-agent", placeholder: "from the config" });
  const button = el("button", { type: "submit" }, "Start run");
  let repos = [];
  const fillPlans = () => {
    const r = repos.find((x) => x.path === repo.value);
    fill(plans, ...((r && r.plans) || []).map((p) => el("option", { value: p })));
  };
  repo.addEventListener("change", fillPlans);
  const form = el(
    "form",
    {
      class: "card start",
      onsubmit: async (e) => {
        e.preventDefault();
        button.disabled = true;
        try {
          const body = { request_id: requestId(), workdir: repo.value, plan: plan.value.trim() };
          if (agent.value.trim()) body.agent = agent.value.trim();
          const res = await api("/api/runs", { method: "POST", body });
          toast("Started run " + res.run_id);
          location.hash = "#/run/" + encodeURIComponent(res.run_id);
        } catch (err) {
          toast(err.message, "error");
        } finally {
          button.disabled = false;
        }
      },
    },
    el("h2", {}, "Start a run"),
    el("div", { class: "fields" },
      el("label", {}, "Repository", repo),
      el("label", {}, "Plan", plan, plans),
      el("label", {}, "Agent", agent),
      button,
    ),
  );
  return {
    node: el("details", { class: "start-wrap" }, el("summary", {}, "Start a run"), form),
    load: async () => {
      try {
        repos = (await api("/api/repos")).repos;
        fill(repo, ...repos.map((r) => el("option", { value: r.path }, r.path)));
        fillPlans();
      } catch (_) {
        /* shown by the list */
      }
    },
  };
}

// ---------------------------------------------------------------- run page

const OUTCOME_CLASS = {
  completed: "ok", failed: "bad", blocked: "warn", limited: "warn", aborted: "muted", replanned: "info",
};

function runPage(main, runId, selected) {
  document.title = runId + " · agentloop";
  const q = encodeURIComponent(runId);
  const parts = {
    head: el("section", { class: "run-head", "aria-label": "Run" }),
    attention: el("div", { class: "attention", role: "alert", hidden: true }),
    controls: el("section", { class: "card controls", "aria-labelledby": "controls-title" }),
    gauges: el("section", { class: "card gauges", "aria-labelledby": "gauges-title" }),
    board: el("section", { class: "card board-wrap", "aria-labelledby": "board-title" }),
    current: el("section", { class: "card current", "aria-labelledby": "current-title" }),
    timeline: el("section", { class: "card timeline-wrap", "aria-labelledby": "timeline-title" }),
    detail: el("section", { class: "card detail", "aria-labelledby": "detail-title", hidden: true }),
    charts: el("section", { class: "card charts", "aria-labelledby": "charts-title" }),
    progress: el("section", { class: "card progress-md", "aria-labelledby": "progress-title" }),
    plans: el("section", { class: "card plans", "aria-labelledby": "plans-title" }),
  };
  main.append(
    el("p", { class: "crumbs" }, el("a", { href: "#/" }, "← All runs")),
    parts.head, parts.attention,
    el("div", { class: "grid two" }, parts.controls, parts.gauges),
    parts.board,
    el("div", { class: "grid two" }, parts.current, parts.timeline),
    parts.detail, parts.charts,
    el("div", { class: "grid two" }, parts.progress, parts.plans),
  );
  const note = el("textarea", { id: "note", rows: "2", placeholder: "A note for reject or steer (optional for approve and reject)" });
  let state = null;
  let iterations = [];
  let planVersions = null;
  let gone = false;
  const live = { iteration: null, offset: 0, text: "", pre: el("pre", { class: "log live", tabindex: "0", "aria-label": "Live agent output" }) };

  async function send(action, extra = {}) {
    try {
      const res = await api("/api/runs/" + q + "/control", {
        method: "POST",
        body: Object.assign({ request_id: requestId(), action }, extra),
      });
      toast(action.replace("_", " ") + " sent (journal #" + res.seq + ")");
      if (action === "reject" || action === "steer" || action === "approve") note.value = "";
      refresh();
    } catch (err) {
      toast(err.message, "error");
    }
  }

  function button(label, action, enabled, extra, cls) {
    return el("button", {
      type: "button", class: cls, disabled: !enabled, dataset: { action },
      onclick: () => send(action, extra ? extra() : {}),
    }, label);
  }

  function drawHead() {
    const s = state;
    fill(parts.head,
      el("h1", {}, s.title || s.run_id, " ", statusPill(s.paused && s.current ? "pausing" : s.status),
        s.paused && s.current ? el("span", { class: "muted small" }, "the current iteration finishes first") : null),
      el("p", { class: "muted" },
        s.run_id, " · agent ", s.agent, " · mode ", s.mode, " · ", s.workdir,
        " · plan v" + s.plan_version,
        s.finished ? " · " + s.finished : ""),
      progress(s.tasks_done, s.tasks_total, "tasks done"),
    );
    const attention = s.attention || [];
    parts.attention.hidden = attention.length === 0;
    fill(parts.attention,
      el("strong", {}, "Needs you: "),
      el("ul", {}, ...attention.map((a) => el("li", {}, a))),
    );
  }

  function drawControls() {
    const s = state;
    const over = FINISHED.has(s.status);
    const gate = !!s.gate;
    fill(parts.controls,
      el("h2", { id: "controls-title" }, "Control"),
      el("div", { class: "buttons" },
        button("Pause", "pause", !over && !s.paused),
        button("Resume", "resume", !over && (s.paused || s.status === "paused")),
        button("Stop", "stop", !over && !s.stop_requested),
        button("Stop now", "stop_now", !over, null, "danger"),
      ),
      gate ? el("p", { class: "gate" }, "Gate: ", s.gate_text) : null,
      el("label", { for: "note" }, "Note"),
      note,
      el("div", { class: "buttons" },
        button("Approve", "approve", !over && gate, () => (note.value.trim() ? { note: note.value.trim() } : {}), "primary"),
        button("Reject", "reject", !over && gate, () => (note.value.trim() ? { note: note.value.trim() } : {}), "danger"),
        el("button", {
          type: "button", disabled: over, dataset: { action: "steer" },
          onclick: () => {
            if (!note.value.trim()) {
              toast("Write the steering note first", "error");
              note.focus();
              return;
            }
            send("steer", { note: note.value.trim() });
          },
        }, "Steer next iteration"),
      ),
    );
  }

  function drawGauges() {
    fill(parts.gauges,
      el("h2", { id: "gauges-title" }, "Budgets"),
      ...state.gauges.map((g) => {
        const used = Number(g.used || 0);
        const limit = g.limit === null || g.limit === undefined ? null : Number(g.limit);
        const fmt = (v) => (g.name === "cost" ? money(v) : g.name === "time" ? duration(v * 1000) : compact(v));
        const pct = limit ? Math.min(100, (100 * used) / limit) : 0;
        const level = pct >= 90 ? "bad" : pct >= 70 ? "warn" : "ok";
        return el("div", { class: "gauge" },
          el("span", { class: "gauge-name" }, g.name),
          el("div", {
            class: "bar " + level, role: "meter", "aria-label": g.name + " budget",
            "aria-valuemin": "0", "aria-valuemax": String(limit ?? used), "aria-valuenow": String(used),
          }, el("div", { class: "fill", style: "width:" + pct + "%" })),
          el("span", { class: "gauge-text" }, fmt(used) + (limit !== null ? " / " + fmt(limit) : " (no limit)")),
        );
      }),
    );
  }

  function drawBoard() {
    const columns = ["pending", "running", "done", "blocked", "skipped"];
    const over = FINISHED.has(state.status);
    fill(parts.board,
      el("h2", { id: "board-title" }, "Tasks"),
      el("div", { class: "board" },
        ...columns.map((c) => {
          const tasks = state.tasks.filter((t) => t.status === c);
          return el("div", { class: "column c-" + c, role: "group", "aria-label": c + " tasks" },
            el("h3", {}, c, " ", el("span", { class: "count" }, String(tasks.length))),
            ...tasks.map((t) => el("article", { class: "task", dataset: { task: t.id } },
              el("h4", {}, el("span", { class: "task-id" }, t.id), " ", t.title),
              el("p", { class: "muted small" },
                t.iterations + " iteration" + (t.iterations === 1 ? "" : "s") + " · " + money(t.cost_usd) +
                (t.rung && t.rung !== "retry" ? " · " + t.rung : "") +
                (t.depends && t.depends.length ? " · after " + t.depends.join(", ") : "")),
              t.blocked ? el("p", { class: "blocked-why" }, (t.blocked_by_breaker ? "Breaker: " : "Blocked: ") + t.blocked) : null,
              over ? null : el("div", { class: "buttons small" },
                t.status !== "done" && t.status !== "skipped"
                  ? el("button", { type: "button", dataset: { action: "skip", task: t.id }, onclick: () => send("skip", { task: t.id }) }, "Skip " + t.id)
                  : null,
                t.status === "blocked" || t.status === "skipped" || t.status === "done"
                  ? el("button", { type: "button", dataset: { action: "retry", task: t.id }, onclick: () => send("retry", { task: t.id }) }, "Retry " + t.id)
                  : null,
              ),
            )),
          );
        }),
      ),
    );
  }

  function drawCurrent() {
    const c = state.current;
    const title = el("h2", { id: "current-title" }, "Live output");
    if (!c) {
      const last = iterations.length ? iterations[iterations.length - 1].iteration : null;
      fill(parts.current, title,
        el("p", { class: "muted" }, FINISHED.has(state.status) ? "The run has ended." : "No iteration is running."),
        last && live.iteration === last ? live.pre : null);
      return;
    }
    const since = Date.now() - c.started_ms;
    fill(parts.current,
      title,
      el("p", {}, "Iteration " + c.iteration + " · " + c.task + " · attempt " + c.attempt + " · " + c.agent + " · ",
        el("span", { class: "pill s-running" }, c.phase), " · ", duration(since)),
      live.pre,
    );
    if (live.iteration !== c.iteration) {
      live.iteration = c.iteration;
      live.offset = 0;
      live.pre.textContent = "";
    }
  }

  async function followOutput() {
    if (live.iteration === null) return;
    const n = live.iteration;
    for (let i = 0; i < 16; i++) {
      const res = await api("/api/runs/" + q + "/iterations/" + n + "/output?offset=" + live.offset);
      if (live.iteration !== n) return;
      if (res.text) {
        const atBottom = live.pre.scrollTop + live.pre.clientHeight >= live.pre.scrollHeight - 4;
        live.pre.append(document.createTextNode(res.text));
        if (atBottom) live.pre.scrollTop = live.pre.scrollHeight;
      }
      live.offset = res.offset;
      if (res.offset >= res.size) return;
    }
  }

  function drawTimeline() {
    const longest = Math.max(1, ...iterations.map((i) => i.duration_ms || 0));
    fill(parts.timeline,
      el("h2", { id: "timeline-title" }, "Iterations"),
      iterations.length === 0 ? el("p", { class: "muted" }, "None yet.") : null,
      el("ol", { class: "timeline" },
        ...iterations.map((it) => {
          const cls = it.outcome ? OUTCOME_CLASS[it.outcome] || "muted" : "running";
          const width = it.duration_ms ? Math.max(3, (100 * it.duration_ms) / longest) : 3;
          return el("li", {},
            el("a", {
              href: "#/run/" + q + "/iteration/" + it.iteration,
              class: "it" + (selected === it.iteration ? " selected" : ""),
              "aria-current": selected === it.iteration ? "true" : null,
              dataset: { iteration: String(it.iteration), outcome: it.outcome || "running" },
            },
              el("span", { class: "it-n" }, "#" + it.iteration),
              el("span", { class: "it-task" }, it.task),
              el("span", { class: "it-bar" }, el("span", { class: "fill " + cls, style: "width:" + width + "%" })),
              el("span", { class: "it-outcome " + cls }, it.outcome || "running"),
              el("span", { class: "num" }, duration(it.duration_ms)),
              el("span", { class: "num" }, money(it.cost_usd)),
            ),
          );
        }),
      ),
    );
  }

  async function drawDetail() {
    if (selected === null) {
      parts.detail.hidden = true;
      return;
    }
    parts.detail.hidden = false;
    let d;
    try {
      d = await api("/api/runs/" + q + "/iterations/" + selected);
    } catch (err) {
      fill(parts.detail, el("h2", { id: "detail-title" }, "Iteration " + selected), el("p", { class: "error" }, err.message));
      return;
    }
    const row = iterations.find((i) => i.iteration === selected) || {};
    const tabs = [
      ["Agent output", d.agent_log],
      ["Verification", d.verify_log],
      ["Prompt", d.prompt],
      ["Result", d.result ? JSON.stringify(d.result, null, 2) : ""],
    ];
    const panel = el("pre", { class: "log", tabindex: "0", role: "tabpanel", id: "detail-panel" });
    const tabButtons = tabs.map(([name, text], i) => el("button", {
      type: "button", role: "tab", id: "tab-" + i, "aria-controls": "detail-panel",
      onclick: () => pick(i),
    }, name));
    const pick = (i) => {
      tabButtons.forEach((b, j) => b.setAttribute("aria-selected", String(i === j)));
      panel.setAttribute("aria-labelledby", "tab-" + i);
      panel.textContent = tabs[i][1] || "(empty)";
    };
    fill(parts.detail,
      el("h2", { id: "detail-title" }, "Iteration " + selected + (row.task ? " · " + row.task : ""),
        row.outcome ? el("span", { class: "it-outcome " + (OUTCOME_CLASS[row.outcome] || "") }, " " + row.outcome) : null),
      row.reason ? el("p", {}, row.reason) : null,
      el("div", { class: "tabs", role: "tablist", "aria-label": "Iteration files" }, ...tabButtons),
      panel,
    );
    pick(row.verified === false ? 1 : 0);
  }

  function drawCharts() {
    const tasks = state.tasks;
    const done = iterations.filter((i) => i.finished);
    let total = 0;
    const points = done.map((i) => {
      total += Number(i.cost_usd || 0);
      return [Date.parse(i.finished), total];
    });
    fill(parts.charts,
      el("h2", { id: "charts-title" }, "Charts"),
      el("div", { class: "grid three" },
        barChart("Cost per task", tasks.map((t) => [t.id, Number(t.cost_usd || 0)]), money),
        barChart("Iterations per task", tasks.map((t) => [t.id, t.iterations]), String),
        lineChart("Cumulative cost", points, money),
      ),
    );
  }

  function drawProgress() {
    fill(parts.progress,
      el("h2", { id: "progress-title" }, "progress.md"),
      el("div", { class: "markdown" }, ...markdown(state.progress_md || "")),
    );
  }

  function drawPlans() {
    if (!planVersions) return;
    const versions = planVersions.versions;
    fill(parts.plans,
      el("h2", { id: "plans-title" }, "Plan versions"),
      ...versions.slice().reverse().map((v) => {
        const prev = versions.find((x) => x.version === v.version - 1);
        return el("details", { open: v.version === planVersions.current && v.version > 1 ? true : null },
          el("summary", {}, "v" + v.version + (v.version === planVersions.current ? " (current)" : "") + (prev ? " — changes from v" + prev.version : " — as first planned")),
          prev ? diffView(prev.markdown, v.markdown) : el("pre", { class: "log" }, v.markdown),
        );
      }),
    );
  }

  let lastPlanVersion = 0;
  let lastIterationKey = "";
  const refresh = throttled(async () => {
    try {
      state = await api("/api/runs/" + q);
    } catch (err) {
      if ((err.status === 404 || err.status === 410) && !gone) {
        gone = true;
        fill(main, el("p", { class: "crumbs" }, el("a", { href: "#/" }, "← All runs")), el("h1", {}, runId), el("p", { class: "error" }, err.message));
      }
      throw err;
    }
    iterations = (await api("/api/runs/" + q + "/iterations")).iterations;
    // Live from here on: the stream starts after what this state already shows.
    listen("run:" + runId, "/api/runs/" + q + "/events?after=" + state.last_seq + "&token=" + encodeURIComponent(token()), () => refresh());
    if (state.plan_version !== lastPlanVersion) {
      planVersions = await api("/api/runs/" + q + "/plan");
      lastPlanVersion = state.plan_version;
      drawPlans();
    }
    drawHead();
    if (!parts.controls.contains(document.activeElement) || !document.activeElement.matches("textarea")) drawControls();
    drawGauges();
    drawBoard();
    drawCurrent();
    drawTimeline();
    drawCharts();
    drawProgress();
    const key = iterations.map((i) => i.iteration + (i.outcome || "")).join(",");
    if (selected !== null && key !== lastIterationKey) drawDetail();
    lastIterationKey = key;
    if (live.iteration === null && iterations.length) {
      // Show the last iteration's output when none is running.
      live.iteration = iterations[iterations.length - 1].iteration;
      live.offset = 0;
      live.pre.textContent = "";
      drawCurrent();
    }
    await followOutput();
  }, 200);

  refresh();
  // Follow the agent's output between journal events too.
  const poll = setInterval(() => {
    if (state && state.current) followOutput().catch(() => {});
  }, 1000);

  return {
    runId,
    select: (n) => {
      selected = n;
      drawTimeline();
      drawDetail();
    },
    dispose: () => clearInterval(poll),
    key: (k) => {
      if (!state) return false;
      const click = (sel) => {
        const b = main.querySelector(sel);
        if (b && !b.disabled) b.click();
        return true;
      };
      if (k === "p") return click('button[data-action="pause"]');
      if (k === "u") return click('button[data-action="resume"]');
      if (k === "a") return click('button[data-action="approve"]');
      if (k === "n") {
        note.focus();
        return true;
      }
      if (k === "j" || k === "k") {
        if (!iterations.length) return true;
        const ns = iterations.map((i) => i.iteration);
        const at = selected === null ? (k === "j" ? -1 : ns.length) : ns.indexOf(selected);
        const next = ns[Math.max(0, Math.min(ns.length - 1, at + (k === "j" ? 1 : -1)))];
        location.hash = "#/run/" + q + "/iteration/" + next;
        return true;
      }
      return false;
    },
  };
}

// ---------------------------------------------------------------- charts

function barChart(title, rows, fmt) {
  const W = 320, H = 180, pad = 28;
  const max = Math.max(0, ...rows.map((r) => r[1]));
  const bw = rows.length ? (W - pad) / rows.length : 0;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title + ": " + rows.map((r) => r[0] + " " + fmt(r[1])).join(", ") },
    svg("line", { x1: pad, y1: H - 20, x2: W, y2: H - 20, class: "axis" }),
    ...rows.map(([label, v], i) => {
      const h = max > 0 ? ((H - 40) * v) / max : 0;
      const x = pad + i * bw + bw * 0.15;
      return svg("g", {},
        svg("rect", { x, y: H - 20 - h, width: Math.max(1, bw * 0.7), height: h, class: "bar-rect" },
          svg("title", {}, label + ": " + fmt(v))),
        svg("text", { x: x + bw * 0.35, y: H - 6, "text-anchor": "middle", class: "tick" }, label),
        h > 0 ? svg("text", { x: x + bw * 0.35, y: H - 24 - h, "text-anchor": "middle", class: "value" }, fmt(v)) : null,
      );
    }),
  );
  return el("figure", { class: "chart" }, el("figcaption", {}, title), chart);
}

function lineChart(title, points, fmt) {
  const W = 320, H = 180, pad = 28;
  const fig = el("figure", { class: "chart" }, el("figcaption", {}, title));
  if (points.length === 0) {
    fig.append(el("p", { class: "muted" }, "No finished iterations yet."));
    return fig;
  }
  const t0 = points[0][0], t1 = points[points.length - 1][0];
  const max = Math.max(...points.map((p) => p[1]), 1e-9);
  const x = (t) => pad + (t1 > t0 ? ((W - pad - 8) * (t - t0)) / (t1 - t0) : (W - pad) / 2);
  const y = (v) => H - 20 - ((H - 40) * v) / max;
  const d = points.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join(" ");
  fig.append(svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title + ": " + fmt(points[points.length - 1][1]) + " after " + points.length + " iterations" },
    svg("line", { x1: pad, y1: H - 20, x2: W, y2: H - 20, class: "axis" }),
    svg("path", { d, class: "line" }),
    ...points.map((p, i) => svg("circle", { cx: x(p[0]), cy: y(p[1]), r: 3, class: "dot" }, svg("title", {}, "after iteration " + (i + 1) + ": " + fmt(p[1])))),
    svg("text", { x: pad, y: 12, class: "value" }, fmt(points[points.length - 1][1])),
    svg("text", { x: W, y: H - 6, "text-anchor": "end", class: "tick" }, duration(t1 - t0)),
  ));
  return fig;
}

// ---------------------------------------------------------------- plan diff

// Line diff by longest common subsequence (plans are small).
function diffLines(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  const n = x.length, m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) out.push([" ", x[i++]]), j++;
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < n) out.push(["-", x[i++]]);
  while (j < m) out.push(["+", y[j++]]);
  return out;
}

function diffView(a, b) {
  const lines = diffLines(a, b);
  return el("pre", { class: "log diff", tabindex: "0" },
    ...lines.map(([op, text]) => el("span", { class: op === "+" ? "add" : op === "-" ? "del" : "same" }, op + " " + text + "\n")));
}

// ---------------------------------------------------------------- markdown

// Enough Markdown for progress.md: headings, lists, code blocks, paragraphs, inline
// code and emphasis. Builds nodes; never parses HTML.
function markdown(text) {
  const out = [];
  const lines = text.split("\n");
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) out.push(el("p", {}, ...inline(para.join(" "))));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      flush();
      list = null;
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      out.push(el("pre", { class: "log" }, code.join("\n")));
      continue;
    }
    const h = line.match(/^(#{1,4})\s+(.*)$/);
    const li = line.match(/^\s*(?:[-*]|\d+\.)\s+(.*)$/);
    if (h) {
      flush();
      list = null;
      out.push(el("h" + Math.min(6, h[1].length + 2), {}, ...inline(h[2])));
    } else if (li) {
      flush();
      if (!list) {
        list = el("ul");
        out.push(list);
      }
      list.append(el("li", {}, ...inline(li[1])));
    } else if (!line.trim()) {
      flush();
      list = null;
    } else {
      list = null;
      para.push(line.trim());
    }
  }
  flush();
  return out;
}

function inline(text) {
  const parts = [];
  const re = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*]+\*)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    const t = m[0];
    if (t.startsWith("`")) parts.push(el("code", {}, t.slice(1, -1)));
    else if (t.startsWith("**")) parts.push(el("strong", {}, t.slice(2, -2)));
    else parts.push(el("em", {}, t.slice(1, -1)));
    last = m.index + t.length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

// ---------------------------------------------------------------- keys and start

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t && (t.matches("input, textarea, select") || t.isContentEditable)) return;
  const help = document.getElementById("help");
  if (e.key === "?") {
    help.open ? help.close() : help.showModal();
    e.preventDefault();
    return;
  }
  if (help.open) return;
  if (e.key === "g") {
    location.hash = "#/";
    e.preventDefault();
    return;
  }
  if (view && view.key && view.key(e.key)) e.preventDefault();
});

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", () => {
  const help = document.getElementById("help");
  document.getElementById("help-button").addEventListener("click", () => help.showModal());
  document.getElementById("help-close").addEventListener("click", () => help.close());
  route();
});
