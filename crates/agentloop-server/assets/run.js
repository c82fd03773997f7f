// agentloop dashboard: one run's page.
"use strict";

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
      // The verdict is the run's account at its end; while it runs, only its shape.
      s.verdict && s.finished ? el("p", { class: "verdict" },
        "verdict ", el("strong", {}, s.verdict), " — ", s.verdict_text,
        s.shape ? " · shape " + s.shape + " (clarity " + s.clarity + "/10)" : "")
        : s.shape ? el("p", { class: "verdict muted" }, "shape " + s.shape + " (clarity " + s.clarity + "/10) · the verdict comes when the run ends") : null,
      s.sandbox ? el("div", { class: "sandbox" },
        el("p", {}, "sandbox: workspace · ", el("strong", {}, String(s.sandbox.refusals)),
          s.sandbox.refusals === 1 ? " thing refused" : " things refused"),
        s.sandbox.recent.length ? el("ul", { class: "small" },
          ...s.sandbox.recent.slice(-5).reverse().map((d) =>
            el("li", {}, "iteration " + d.iteration + ": " + d.text))) : null) : null,
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
        button("Resume", "resume", !over && (s.paused || s.status === "paused" || s.status === "interrupted")),
        button("Stop", "stop", !over && !s.stop_requested),
        button("Stop now", "stop_now", !over, null, "danger"),
      ),
      gate ? el("p", { class: "gate" }, "Gate: ", s.gate_text) : null,
      ...(s.surface_changes || []).map((c) => el("details", { class: "surface-change", open: true },
        el("summary", {}, `${c.path} (${c.kind}, ${c.why})`),
        el("pre", { class: "diff" }, (c.diff || "").split("\n").map((l) => el("span", {
          class: /^\+(?!\+\+ )/.test(l) ? "add" : /^-(?!-- )/.test(l) ? "del" : "same",
        }, l))))),
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
        const fmt = (v) => (g.name === "cost" ? money(v) : g.unit === "s" ? duration(v * 1000) : compact(v));
        // The lanes' time added up: no budget of its own, said apart from the run's time.
        const rest = g.name === "agent_time" ? " over " + g.lanes + (g.lanes === 1 ? " lane" : " lanes")
          : limit !== null ? " / " + fmt(limit) : " (no limit)";
        const pct = limit ? Math.min(100, (100 * used) / limit) : 0;
        const level = pct >= 90 ? "bad" : pct >= 70 ? "warn" : "ok";
        return el("div", { class: "gauge" },
          el("span", { class: "gauge-name" }, g.name),
          el("div", {
            class: "bar " + level, role: "meter", "aria-label": g.name + " budget",
            "aria-valuemin": "0", "aria-valuemax": String(limit ?? used), "aria-valuenow": String(used),
          }, el("div", { class: "fill", style: "width:" + pct + "%" })),
          el("span", { class: "gauge-text" }, fmt(used) + rest),
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
                (t.class ? " · class " + t.class : "") +
                (t.depends && t.depends.length ? " · after " + t.depends.join(", ") : "")),
              t.blocked ? el("p", { class: "blocked-why" }, (t.blocked_by_breaker ? "Breaker: " : "Blocked: ") + t.blocked) : null,
              t.reviews && t.reviews.length
                ? el("p", { class: "review small", dataset: { review: t.id } }, "Review: " + t.reviews.join(", then "))
                : null,
              t.evidence ? testsTable(t) : null,
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

  // A task's per-test evidence: its named tests (at the baseline and now), the tests
  // that regressed or stopped running; or that its checks gave exit codes only.
  function testsTable(t) {
    const e = t.evidence;
    if (e.exit_code_only) {
      return el("p", { class: "evidence muted small" }, "tests: exit code only — no per-test evidence");
    }
    const rows = [
      ...e.tests.map((r) => ["named", r]),
      ...e.regressions.map((r) => ["regressed", r]),
      ...e.dropped.map((r) => ["no longer run", r]),
    ];
    const summary = (e.named ? e.named_passing + "/" + e.named + " named tests pass" : "no named tests") +
      (e.regressions.length ? " · " + e.regressions.length + " regressed" : " · regressions none");
    return el("table", { class: "evidence small", "aria-label": "Tests of " + t.id },
      el("caption", {}, summary),
      el("thead", {}, el("tr", {}, el("th", {}, "test"), el("th", {}, "baseline"), el("th", {}, "now"))),
      el("tbody", {},
        ...rows.map(([kind, r]) => el("tr", { class: "t-" + (r.now || "absent"), title: kind },
          el("td", {}, r.id), el("td", {}, r.at_baseline || "—"), el("td", {}, r.now || "absent"))),
        ...e.unmatched.map((u) => el("tr", { class: "t-absent", title: "named" },
          el("td", {}, u), el("td", {}, "—"), el("td", {}, "no such test")))),
    );
  }

  // A run with workers: one lane per iteration in progress, each with the end of its
  // agent's output, and the merge queue. Past LANES_ONE_PER_LINE lanes they are
  // grouped by phase, one line each, and only the lanes a person opens follow their
  // output (a hundred lanes would otherwise ask for a hundred outputs a second).
  const LANES_ONE_PER_LINE = 12;
  const PHASES = ["agent", "checks", "waiting", "merging", "queued", "deciding"];
  const lanes = new Map();
  const opened = new Set();
  let grouped = false;
  function laneLog(n) {
    if (!lanes.has(n)) {
      lanes.set(n, { offset: 0, pre: el("pre", { class: "log lane-log", "aria-label": "Output of iteration " + n }) });
    }
    return lanes.get(n).pre;
  }
  function laneLine(l, now) {
    return ["[" + l.iteration + "] " + l.task + " · attempt " + l.attempt + (l.at_most ? " of at most " + l.at_most : "") + " · ",
      el("span", { class: "pill s-running" }, l.phase.replaceAll("_", " ")), " · " + duration(now - l.started_ms) + (l.job ? " · " + l.job : "")];
  }
  function drawLanes() {
    const title = el("h2", { id: "current-title" }, "Workers (" + state.workers + ")");
    const now = Date.now();
    grouped = state.lanes.length > LANES_ONE_PER_LINE;
    for (const n of [...lanes.keys()]) {
      if (!state.lanes.some((l) => l.iteration === n) || (grouped && !opened.has(n))) lanes.delete(n);
    }
    for (const n of [...opened]) {
      if (!state.lanes.some((l) => l.iteration === n)) opened.delete(n);
    }
    let body;
    if (!state.lanes.length) {
      body = el("p", { class: "muted phase" }, state.phase ? "No worker is at work: " + state.phase + "." : "No worker is at work.");
    } else if (!grouped) {
      body = el("ul", { class: "lanes" }, ...state.lanes.map((l) =>
        el("li", { class: "lane", dataset: { iteration: String(l.iteration), phase: l.phase } },
          el("p", {}, ...laneLine(l, now)), laneLog(l.iteration))));
    } else {
      // A section per phase, in the order work moves through them; a lane's output
      // when it is opened.
      const groups = PHASES.map((p) => [p, state.lanes.filter((l) => l.phase === p)]).filter(([, ls]) => ls.length);
      body = el("div", { class: "lane-groups" }, ...groups.map(([p, ls]) =>
        el("section", { class: "lane-group", dataset: { phase: p }, "aria-label": p + ": " + ls.length },
          el("h3", {}, p.replaceAll("_", " ") + " (" + ls.length + ")"),
          el("ul", { class: "lanes compact" }, ...ls.map((l) => {
            const open = opened.has(l.iteration);
            return el("li", { class: "lane", dataset: { iteration: String(l.iteration), phase: l.phase } },
              el("details", {
                open,
                ontoggle: (ev) => {
                  if (ev.target.open) {
                    opened.add(l.iteration);
                    if (!ev.target.querySelector("pre")) ev.target.append(laneLog(l.iteration));
                    followLanes().catch(() => {});
                  } else {
                    opened.delete(l.iteration);
                  }
                },
              }, el("summary", {}, ...laneLine(l, now)), open ? laneLog(l.iteration) : null));
          })))));
    }
    const merging = state.lanes.filter((l) => l.phase === "merging").map((l) => l.task);
    const waiting = state.merge_queue.filter((t) => !merging.includes(t));
    fill(parts.current, title, body,
      state.merge_queue.length
        ? el("p", { class: "merge-queue" }, "Merge queue: "
          + (merging.length > 1 ? "merging a batch of " + merging.length + " (" + merging.join(", ") + ")"
            : merging.length ? "merging " + merging[0] : "")
          + (merging.length && waiting.length ? " · " : "")
          + (waiting.length ? waiting.length + " waiting (" + waiting.join(", ") + ")" : ""))
        : null,
      state.cycles
        ? el("p", { class: "cycles" }, "Cycle " + state.cycles.current + " (every " + state.cycles.every
          + "; " + state.cycles.done_in_cycle + " done in it)"
          + (state.cycles.last ? " · last verdict: " + state.cycles.last.verdict
            + (state.cycles.last.reasons.length ? " (" + state.cycles.last.reasons.join("; ") + ")" : "") : ""))
        : null,
      state.planners
        ? el("div", { class: "planners" },
          el("p", {}, "Planners: " + state.planners.count
            + (state.planners.at_work.length ? " (" + state.planners.at_work.length + " at work)" : "")
            + (state.planners.added.length ? " · added " + state.planners.added.join(", ") : "")
            + (state.planners.last.length ? " · last: planner " + state.planners.last[state.planners.last.length - 1].planner
              + " " + state.planners.last[state.planners.last.length - 1].outcome : "")),
          state.planners.proposal
            ? el("ul", { class: "proposal", "aria-label": "Proposed tasks" }, ...state.planners.proposal.map((t) =>
              el("li", {}, el("code", {}, t.id), " " + t.title + (t.verify.length ? " · Verify: " + t.verify.join("; ") : "")
                + (t.tests && t.tests.length ? " · Tests: " + t.tests.join(", ") : "")
                + (t.holdout && t.holdout.length ? " · Holdout: " + t.holdout.join(", ") : "")
                + (t.depends.length ? " · after " + t.depends.join(", ") : ""))))
            : null)
        : null,
      state.integration
        ? el("p", { class: "integration muted" }, "Integration branch ",
          el("code", {}, state.integration.branch), " at " + String(state.integration.head).slice(0, 10)
          + (state.integration.landed ? " (landed)" : " (every commit verified; `agentloop land` takes it)"))
        : null);
  }

  let following = false;
  async function followLanes() {
    // One round at a time: a slow answer does not pile rounds up.
    if (following) return;
    following = true;
    try {
      for (const [n, lane] of lanes) {
        const res = await api("/api/runs/" + q + "/iterations/" + n + "/output?offset=" + lane.offset);
        if (res.text) {
          lane.pre.append(document.createTextNode(res.text));
          // Keep the end: the last few kilobytes of each lane.
          if (lane.pre.textContent.length > 4096) lane.pre.textContent = lane.pre.textContent.slice(-4096);
          lane.pre.scrollTop = lane.pre.scrollHeight;
        }
        lane.offset = res.offset;
      }
    } finally {
      following = false;
    }
  }

  function drawCurrent() {
    if (state.workers > 0) return drawLanes();
    const c = state.current;
    const title = el("h2", { id: "current-title" }, "Live output");
    if (!c) {
      const last = iterations.length ? iterations[iterations.length - 1].iteration : null;
      fill(parts.current, title,
        el("p", { class: "muted" }, FINISHED.has(state.status) ? "The run has ended." : state.phase ? "No iteration is running: " + state.phase + "." : "No iteration is running."),
        last && live.iteration === last ? live.pre : null);
      return;
    }
    const since = Date.now() - c.started_ms;
    const stopped = state.status === "interrupted";
    fill(parts.current,
      title,
      el("p", {}, "Iteration " + c.iteration + " · " + c.task + " · attempt " + c.attempt + (c.at_most ? " of at most " + c.at_most : "") + " · " + c.agent + " · ",
        stopped
          ? el("span", { class: "pill s-interrupted" }, "interrupted: its driver is gone; Resume redoes it")
          : el("span", { class: "pill s-running" }, c.phase),
        stopped ? null : " · ", stopped ? null : duration(since)),
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
              el("span", { class: "it-task" }, it.task,
                it.kind && it.kind !== "work" ? el("span", { class: "it-kind muted small" }, " · " + it.kind) : null),
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
      ["Final message", row.final_message],
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
    pick(row.verified === false ? 2 : row.final_message ? 0 : 1);
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
    if (state.workers > 0) await followLanes();
    else await followOutput();
  }, 200);

  refresh();
  // Follow the agent's output between journal events too.
  const poll = setInterval(() => {
    if (state && state.workers > 0) followLanes().catch(() => {});
    else if (state && state.current) followOutput().catch(() => {});
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

