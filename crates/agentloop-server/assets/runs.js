// agentloop dashboard: the runs page and the form that starts a run.
"use strict";

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

  const oneLine = (text) => {
    const first = String(text).split("\n")[0];
    const cut = first.length > 140 ? first.slice(0, 139) + "…" : first;
    return cut !== text && !cut.endsWith("…") ? cut + " …" : cut;
  };

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
                // One line each, however much a reason says (a check's whole output):
                // the run's page has the rest.
                el("ul", { class: "why small" }, ...attention.map((a) => el("li", {}, oneLine(a)))),
                attention.some((a) => oneLine(a) !== a)
                  ? el("a", { href: "#/run/" + encodeURIComponent(r.run_id), class: "small" }, "the whole account")
                  : null)
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

