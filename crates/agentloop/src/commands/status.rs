//! `agentloop status` and `agentloop runs`.

use agentloop_journal::RunStatus;
use agentloop_journal::{RunState, TaskStatus};
use agentloop_workspace::{RunDir, Workspace};
use serde_json::{Value, json};

use agentloop_ground::words::plural;

use crate::error::{CliError, ExitKind};
use crate::render::{duration_ms, money, paint};

pub fn status(ws: &Workspace, run: Option<&str>, as_json: bool) -> Result<ExitKind, CliError> {
    let run = ws.resolve(run)?;
    let loaded = run.load()?;
    if let Some(why) = &loaded.stale {
        crate::render::warn(&format!(
            "the run's store cannot be read ({why}); this is this machine's copy of its journal, which may be behind"
        ));
    }
    let s = &loaded.state;
    let driver = run.lock_holder();
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&summary(s, &run, driver.as_deref())).unwrap_or_default()
        );
        return Ok(ExitKind::Completed);
    }
    outln!(
        "run {} · {} · {}/{} · {} · {} · {}",
        s.run_id,
        paint(status_color(s.status), s.status.as_str()),
        s.done_count(),
        plural(s.tasks.len(), "task", "tasks"),
        plural(s.iterations as usize, "iteration", "iterations"),
        money(s.cost_usd),
        crate::render::time_words(s)
    );
    outln!(
        "plan: {} ({}, version {})",
        s.plan.title,
        s.plan_file,
        s.plan_version
    );
    if let Some(id) = &s.session {
        outln!("session: {id} (hook mode: the session that drives the run)");
    } else if let Some(id) = &s.agent_session {
        outln!("session: {id} (the last agent's, which its CLI can resume)");
    }
    let width = s.tasks.iter().map(|t| t.id.len()).max().unwrap_or(2);
    for t in &s.tasks {
        let mark = match t.status {
            TaskStatus::Done => paint("32", "✓"),
            TaskStatus::Running => paint("36", "▶"),
            TaskStatus::Blocked => paint("31", "!"),
            TaskStatus::Skipped => paint("2", "-"),
            TaskStatus::Pending => " ".to_string(),
        };
        let attempt = if t.tries > 0 && !t.status.is_settled() {
            format!(" · {}", agentloop_policy::attempt_words(s, t))
        } else {
            String::new()
        };
        outln!(
            "  {mark} {:width$}  {:8} {:>3} it  {:>7}  {}{attempt}",
            t.id,
            t.status.as_str(),
            t.iterations,
            money(t.cost_usd),
            t.title
        );
        if let Some(e) = agentloop_journal::task_evidence(s, t) {
            outln!("    {:width$}  tests: {}", "", e.words());
        }
    }
    if let Some(b) = &s.tests_baseline {
        outln!("baseline: {}", b.words());
    }
    if s.settings.in_worktrees() {
        workers(s)?;
    }
    if s.settings.planners > 0 {
        outln!("{}", planners_line(s));
    }
    if let Some(line) = cycle_line(s) {
        outln!("{line}");
    }
    match &driver {
        Some(pid) => outln!("driver: pid {pid}"),
        None if !s.is_finished() => {
            outln!("driver: none ({})", crate::describe::goes_on(s))
        }
        None => {}
    }
    if let Some(r) = &s.finished {
        outln!("finished: {}", r.describe());
    }
    if let (Some(shape), Some(score)) = (&s.settings.shape, s.settings.clarity) {
        outln!(
            "shape: {shape} (clarity {score}/10){}",
            s.settings
                .workflow
                .as_deref()
                .map(|w| format!(" · workflow {w}"))
                .unwrap_or_default()
        );
    }
    if let Some(p) = &s.prerequisites {
        outln!(
            "prerequisites: {} · {} · {}",
            if p.git {
                "git work tree"
            } else {
                "not a git repository"
            },
            if !p.git {
                // Nothing to be clean against: no commit.
                "no commits of tasks".to_string()
            } else if p.dirty_count == 0 {
                "tree clean at start".to_string()
            } else {
                format!(
                    "{} uncommitted at start",
                    plural(p.dirty_count, "change", "changes")
                )
            },
            if p.missing.is_empty() {
                "every check's program found".to_string()
            } else {
                format!("missing: {}", p.missing.join("; "))
            }
        );
    }
    if let Some(why) = &s.unconfined_checks {
        outln!("checks: unconfined ({why}): the verdict cannot be SHIP");
    }
    for pat in s.learnable() {
        outln!("pattern: {}", pat.hint());
    }
    let verdict = agentloop_journal::verdict(s);
    outln!(
        "verdict{}: {} — {}",
        if s.is_finished() { "" } else { " so far" },
        verdict.as_str(),
        verdict.meaning()
    );
    if let Some(until) = s.limit_until_ms {
        let at = humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(until),
        );
        outln!(
            "{} {} — waiting until {at} ({}s left)",
            paint("1;33", "usage limit:"),
            s.limit_message.as_deref().unwrap_or(""),
            until.saturating_sub(agentloop_ground::clock::now_ms()) / 1000
        );
    }
    if let Some(g) = &s.gate {
        outln!(
            "{} {} (`agentloop approve` / `agentloop reject --note …`)",
            paint("1;33", "needs you:"),
            g.describe()
        );
        for line in crate::describe::held(s, g) {
            outln!("  {line}");
        }
    }
    for c in s.surface_gate_changes().unwrap_or_default() {
        outln!("  {} {}", paint("1;33", "●"), c.describe());
        for line in c.diff.lines() {
            outln!("      {line}");
        }
    }
    if let Some(t) = tampering(s) {
        outln!("{} {t}", paint("1;31", "tampering:"));
    }
    if s.settings.sandbox.on() {
        outln!(
            "sandbox: workspace · {} refused",
            plural(s.sandbox.count as usize, "thing", "things")
        );
        for (i, d) in s.sandbox.recent.iter().rev().take(5) {
            outln!("  iteration {i}: {}", d.describe());
        }
    }
    for t in s.tasks.iter().filter(|t| t.status == TaskStatus::Blocked) {
        outln!(
            "{} task {} is blocked: {}",
            paint("1;33", "needs you:"),
            t.id,
            t.blocked_headline().unwrap_or("")
        );
    }
    Ok(ExitKind::Completed)
}

/// Lanes listed one per line up to this many; past it, grouped by phase.
pub(crate) const LANES_ONE_PER_LINE: usize = 12;

/// The lanes of a run with many workers, a line per phase: how many, and the tasks
/// longest in it (with how long), the rest counted.
pub(crate) fn grouped_lanes(s: &RunState, now: u64) -> Vec<String> {
    const SHOWN: usize = 6;
    s.lanes_by_phase()
        .into_iter()
        .map(|(phase, mut lanes)| {
            lanes.sort_by_key(|l| l.started_ms);
            let mut names: Vec<String> = lanes
                .iter()
                .take(SHOWN)
                .map(|l| {
                    format!(
                        "{} {}",
                        l.task,
                        duration_ms(now.saturating_sub(l.started_ms))
                    )
                })
                .collect();
            if lanes.len() > SHOWN {
                names.push(format!("and {} more", lanes.len() - SHOWN));
            }
            format!("{} ({}): {}", phase.as_str(), lanes.len(), names.join(", "))
        })
        .collect()
}

/// `planners: 2 (1 at work) · added T9, T10 · last: planner 1 nothing more to add`.
/// `[run] cycle`: the cycle the run is in, and the last cycle's verdict and why.
pub(crate) fn cycle_line(s: &RunState) -> Option<String> {
    let c = s.settings.cycle?;
    let last = s
        .cycles
        .last
        .as_ref()
        .map(|(v, why)| format!(" · last verdict: {} ({})", v.as_str(), why.join("; ")))
        .unwrap_or_default();
    Some(format!(
        "cycle: {} (every {}; {} done in it){last}",
        s.cycles.judged + 1,
        c.describe(),
        agentloop_policy::done_in_cycle(s)
    ))
}

pub(crate) fn planners_line(s: &RunState) -> String {
    let mut line = format!("planners: {}", s.settings.planners);
    if !s.planning.at_work.is_empty() {
        line.push_str(&format!(" ({} at work)", s.planning.at_work.len()));
    }
    if !s.planning.added.is_empty() {
        line.push_str(&format!(" · added {}", s.planning.added.join(", ")));
    }
    if let Some(tasks) = &s.planning.proposal {
        let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        line.push_str(&format!(
            " · proposed {}, waiting for a person",
            ids.join(", ")
        ));
    }
    if let Some((p, what)) = s.planning.last.last() {
        line.push_str(&format!(" · last: planner {p} {what}"));
    }
    line
}

/// A run with workers: its integration branch, what each worker is at, the merge
/// queue and the disk the worktrees take.
fn workers(s: &RunState) -> Result<(), CliError> {
    let branch = match &s.integration {
        Some(i) => format!(
            " · integration branch {} at {}{}",
            i.branch,
            &i.head[..i.head.len().min(10)],
            if i.landed { " (landed)" } else { "" }
        ),
        None => String::new(),
    };
    outln!(
        "workers: {}{branch} · worktrees {}",
        s.settings.workers,
        agentloop_ground::words::bytes(agentloop_exec::worktree::disk_usage(&s.run_id))
    );
    let now = agentloop_ground::clock::now_ms();
    let lanes = s.lanes();
    if lanes.len() > LANES_ONE_PER_LINE {
        // Too many to list one per line: a line per phase, its count and the oldest.
        for line in grouped_lanes(s, now) {
            outln!("  {line}");
        }
        return Ok(());
    }
    for l in lanes {
        outln!(
            "  [{}] {} · {} · {} · {}{}",
            l.iteration,
            l.task,
            l.phase.as_str(),
            s.task(&l.task)
                .map(|t| agentloop_policy::attempt_words(s, t))
                .unwrap_or_else(|| format!("attempt {}", l.attempt)),
            duration_ms(now.saturating_sub(l.started_ms)),
            l.job.map(|j| format!(" · {j}")).unwrap_or_default()
        );
    }
    let q = s.merge_queue();
    if !q.is_empty() {
        let mut list: Vec<String> = q
            .iter()
            .take(8)
            .map(|l| format!("{} ({})", l.task, l.phase.as_str()))
            .collect();
        if q.len() > 8 {
            list.push(format!("and {} more", q.len() - 8));
        }
        outln!("merge queue: {}", list.join(", "));
    }
    Ok(())
}

/// `[sandbox]`: how many things it refused, and the latest.
fn sandbox_json(s: &RunState) -> serde_json::Value {
    if !s.settings.sandbox.on() {
        return serde_json::Value::Null;
    }
    let recent: Vec<serde_json::Value> = s
        .sandbox
        .recent
        .iter()
        .map(|(i, d)| json!({"iteration": i, "kind": d.kind, "target": d.target, "detail": d.detail}))
        .collect();
    json!({"mode": "workspace", "refusals": s.sandbox.count, "recent": recent})
}

/// What the agent tried against its own checks and was stopped from doing.
fn tampering(s: &RunState) -> Option<String> {
    let mut said = Vec::new();
    if s.refused_requests > 0 {
        said.push(format!(
            "{} from inside the agent refused",
            plural(
                s.refused_requests as usize,
                "control request",
                "control requests"
            )
        ));
    }
    if !s.forged.is_empty() {
        let lines: Vec<String> = s.forged.iter().map(|f| f.line.to_string()).collect();
        said.push(format!(
            "journal {} {} not written by agentloop, ignored (`agentloop journal verify`)",
            if lines.len() == 1 { "line" } else { "lines" },
            lines.join(", ")
        ));
    }
    (!said.is_empty()).then(|| said.join("; "))
}

fn status_color(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Completed => "1;32",
        RunStatus::Failed => "1;31",
        RunStatus::Running => "1;36",
        _ => "1;33",
    }
}

pub fn summary(s: &RunState, run: &RunDir, driver: Option<&str>) -> Value {
    let done = s
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Done)
        .count();
    let failed_cost: f64 = s.tasks.iter().map(|t| t.failed_cost_usd).sum();
    let budget_spent = s
        .budget_spent
        .as_ref()
        .map(|(b, used, limit)| agentloop_policy::WaitReason::budget_words(b, *used, *limit));
    let mut v = json!({
        "v": 1,
        "run_id": s.run_id,
        "status": s.status,
        "path": run.path,
        "plan": { "title": s.plan.title, "file": s.plan_file, "version": s.plan_version },
        "iterations": s.iterations,
        "cost_usd": s.cost_usd,
        "failed_cost_usd": failed_cost,
        "cost_per_verified_task": if done > 0 { Some(s.cost_usd / done as f64) } else { None },
        "tokens": {
            "input": s.usage.input_tokens,
            "cached_input": s.usage.cached_input_tokens,
            "cache_write": s.usage.cache_write_tokens,
            "output": s.usage.output_tokens,
            "total": s.usage.total(),
        },
        "active_ms": s.active_ms,
        "wall_ms": s.wall_ms,
        "created": s.created,
        "updated": s.updated,
        "driver_pid": driver.and_then(|p| p.parse::<u32>().ok()),
        "gate": s.gate,
        "surface_changes": s.surface_gate_changes(),
        "limit": s.limit_until_ms.map(|until| json!({
            "until": humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_millis(until)).to_string(),
            "seconds_left": until.saturating_sub(agentloop_ground::clock::now_ms()) / 1000,
            "message": s.limit_message,
        })),
        "needs_attention": s.gate.is_some() || s.status == RunStatus::Blocked || s.limit_until_ms.is_some() || s.budget_spent.is_some(),
        "finished": s.finished.as_ref().map(|r| r.describe()),
        "replans_used": s.replans_used,
        "learnings": s.learnings,
        "refused_requests": s.refused_requests,
        "workers": s.settings.in_worktrees().then(|| json!({
            "count": s.settings.workers,
            "integration": s.integration,
            "lanes": s.lanes(),
            "phases": s.lanes_by_phase().iter().map(|(p, l)| (p.as_str().to_string(), json!(l.len()))).collect::<serde_json::Map<_, _>>(),
            "merge_queue": s.merge_queue().iter().map(|l| &l.task).collect::<Vec<_>>(),
            "batch": s.settings.merge_batch,
            "agent_caps": s.agent_caps,
            "disk_bytes": agentloop_exec::worktree::disk_usage(&s.run_id),
        })),
        "cycles": s.settings.cycle.map(|c| json!({
            "every": c.describe(),
            "current": s.cycles.judged + 1,
            "done_in_cycle": agentloop_policy::done_in_cycle(s),
            "last": s.cycles.last.as_ref().map(|(v, why)| json!({"verdict": v, "reasons": why})),
        })),
        "planners": (s.settings.planners > 0).then(|| json!({
            "count": s.settings.planners,
            "at_work": s.planning.at_work,
            "added": s.planning.added,
            "proposal": s.planning.proposal.as_ref().map(|t| t.iter().map(|t| &t.id).collect::<Vec<_>>()),
            "last": s.planning.last.iter().map(|(p, what)| json!({"planner": p, "outcome": what})).collect::<Vec<_>>(),
        })),
        "forged_lines": s.forged.iter().map(|f| f.line).collect::<Vec<_>>(),
        "tasks": s.tasks.iter().map(|t| task_json(s, t)).collect::<Vec<_>>(),
    });
    v["budget_spent"] = json!(budget_spent);
    v["review"] = json!(s.settings.review.as_ref().map(|r| json!({
        "agent": r.agent,
        "second": r.second,
        "when": r.when,
        "max_rounds": r.max_rounds,
    })));
    v["verdict"] = json!(agentloop_journal::verdict(s));
    v["approvals"] = json!(s.approvals);
    // The seeds' loop state: the stage, and beside the branch and worktrees, the
    // tracker and each task's issue.
    v["loop"] = json!({
        "stage": s.stage(),
        "branch": s.integration.as_ref().map(|i| i.branch.clone()),
        "worktrees": s.running.iter().filter_map(|o| o.started.worktree.as_ref().map(|w| json!({
            "task": o.started.task, "path": w,
        }))).collect::<Vec<_>>(),
        "tracker": s.settings.tracker.source,
        "issues": s.ship.issues,
    });
    v["shape"] = json!(s.settings.shape);
    v["workflow"] = json!(s.settings.workflow);
    v["patterns"] = json!(s.learnable());
    v["clarity"] = json!(s.settings.clarity);
    v["prerequisites"] = json!(s.prerequisites);
    v["session"] = json!(s.session);
    v["agent_session"] = json!(s.agent_session);
    v["criteria"] = json!(agentloop_journal::criteria_rows(s));
    v["tests_baseline"] = json!(s.tests_baseline.as_ref().map(|b| {
        let c = b.counts();
        json!({
            "tests": c.total(),
            "failing": c.failed + c.errored,
            "counts": c,
            "cached": b.cached,
            "tree": b.tree,
            "unavailable": b.unavailable,
            "words": b.words(),
            // What the baseline learned of the project: each check's runner, and the
            // files that joined the verification surface by what the checks did.
            "checks": b.commands.iter().map(|c| json!({
                "command": c.command,
                "runner": c.runner,
                "tests": c.tests.len(),
                "problem": c.problem,
            })).collect::<Vec<_>>(),
            "surface": b.traced.iter().map(|(path, f)| json!({"path": path, "why": f.why})).collect::<Vec<_>>(),
            // What each file the checks touched is to them (roles: test, config,
            // plugin, program, support, work, data), learned from the reports and the
            // trace; where names still stand in; files named like tests that are none.
            "model": {
                "files": b.model.files.iter().map(|(path, f)| json!({
                    "path": path, "role": f.role, "by": f.by, "how": f.how,
                })).collect::<Vec<_>>(),
                "names_stand_in": b.model.names_stand_in,
                "not_tests": b.model.not_tests.iter().map(|path| json!({"path": path, "why": agentloop_evidence::learned::NOT_A_TEST})).collect::<Vec<_>>(),
            },
        })
    }));
    v["sandbox"] = sandbox_json(s);
    // Why the checks ran unconfined, when they did (null: confined).
    v["unconfined_checks"] = json!(s.unconfined_checks);
    // Skip reasons are kept with each task.
    if let Some(tasks) = v["tasks"].as_array_mut() {
        for (row, t) in tasks.iter_mut().zip(&s.tasks) {
            row["skip_reason"] = json!(t.skip_reason);
            row["evidence"] = json!(agentloop_journal::task_evidence(s, t));
            row["class"] = json!(
                s.plan_task(&t.id)
                    .map(|p| agentloop_plan::reversibility(p).0)
            );
        }
    }
    v
}

pub fn runs(ws: &Workspace, as_json: bool) -> Result<ExitKind, CliError> {
    let ids = ws.run_ids();
    let mut rows = Vec::new();
    for id in ids {
        let run = ws.resolve(Some(&id))?;
        match run.load() {
            Ok(l) => rows.push((run.clone(), Ok(l.state))),
            Err(e) => rows.push((run.clone(), Err(e.to_string()))),
        }
    }
    if as_json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(run, r)| match r {
                Ok(s) => summary(s, run, run.lock_holder().as_deref()),
                Err(e) => json!({ "run_id": run.id, "error": e }),
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        );
        return Ok(ExitKind::Completed);
    }
    if rows.is_empty() {
        eprintln!("no runs yet in {}", ws.runs_dir().display());
    }
    for (run, r) in rows {
        match r {
            Ok(s) => outln!(
                "{}  {:9}  {}/{} tasks  {:>3} it  {:>7}  {}",
                run.id,
                s.status.as_str(),
                s.done_count(),
                s.tasks.len(),
                s.iterations,
                money(s.cost_usd),
                s.plan.title
            ),
            Err(e) => outln!("{}  unreadable: {e}", run.id),
        }
    }
    Ok(ExitKind::Completed)
}

/// One task as `status --json` shows it.
fn task_json(s: &RunState, t: &agentloop_journal::TaskState) -> Value {
    json!({
    "id": t.id,
    "title": t.title,
    "status": t.status,
    "iterations": t.iterations,
    "attempts": t.tries,
    "attempts_at_most": agentloop_policy::attempt_of(s, t).1,
    "attempt": agentloop_policy::attempt_of(s, t).0,
    "attempts_on_rung": t.attempts,
    "rung_budget": agentloop_policy::rung_budget(s, t),
    "tried": t.tried,
    "rung": t.rung,
    "cost_usd": t.cost_usd,
    "failed_cost_usd": t.failed_cost_usd,
    "tokens": t.tokens,
    "blocked": t.blocked,
    "commit": t.commit,
    "review_rejections": t.review_rejections,
    })
}
