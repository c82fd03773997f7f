// agentloop dashboard: a client of the same control API as the CLI and the TUI.
// No framework and no build step; every piece of run data reaches the page through
// textContent, never as HTML.
"use strict";

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
