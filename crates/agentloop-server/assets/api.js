// agentloop dashboard: the token, the API and live events. Loaded first; the other
// scripts use what it defines.
"use strict";

// ---------------------------------------------------------------- token and API

const TOKEN_KEY = "agentloop.token";

(function takeTokenFromUrl() {
  // `/?token=T#/run/ID`, or a deep link with the token after the page's own part
  // (`/#/run/ID?token=T`): either way the page the link names opens.
  const [route, inHash] = location.hash.split("?");
  const t = new URLSearchParams(location.search).get("token")
    || new URLSearchParams(inHash || "").get("token");
  if (t) {
    localStorage.setItem(TOKEN_KEY, t);
    // The token leaves the address bar (and the history) at once.
    history.replaceState(null, "", location.pathname + (route || ""));
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

