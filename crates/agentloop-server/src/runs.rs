//! Runs: the list of every run, one run's state with its gauges and tasks, and its
//! plan versions.

use std::time::Duration;

use agentloop_journal::{FinishReason, RunState, RunStatus};
use agentloop_workspace::RunDir;
use axum::Json;
use axum::extract::{Path, State};
use serde_json::{Value, json};

use crate::Server;
use crate::error::ApiError;

/// What waits for a person in this run, in words (empty when nothing does).
fn attention(s: &RunState) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(g) = &s.gate {
        out.push(format!("gate: {}", g.describe()));
    }
    for t in &s.tasks {
        if let Some(why) = &t.blocked {
            let what = if t.blocked_by_breaker {
                "breaker tripped"
            } else {
                "blocked"
            };
            out.push(format!("{} {what}: {why}", t.id));
        }
    }
    if let Some(until) = s.limit_until_ms {
        out.push(format!(
            "usage limit: waiting until {}",
            humantime_ms(until)
        ));
    }
    if let Some(FinishReason::Budget { budget, .. }) = &s.finished {
        out.push(format!("budget spent: {budget}"));
    }
    if let Some((budget, used, limit)) = &s.budget_spent {
        out.push(format!(
            "{} — `agentloop resume --budget +10` tops it up",
            agentloop_policy::WaitReason::budget_words(budget, *used, *limit)
        ));
    }
    out
}

fn humantime_ms(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The status a person should see: a run whose driver is gone without finishing it
/// (killed, crashed) is `interrupted`, as `agentloop status` says, not "running".
pub(crate) fn shown_status(run: &RunDir, s: &RunState) -> String {
    let driverless = !s.settings.hook && run.lock_holder().is_none();
    match s.status {
        RunStatus::Running if driverless => "interrupted".into(),
        other => other.as_str().into(),
    }
}

fn summary(run: &RunDir, s: &RunState) -> Value {
    let done = s.done_count();
    let mut attention = attention(s);
    let status = shown_status(run, s);
    if status == "interrupted" {
        attention.push("interrupted: its driver is gone; resume drives it again".into());
    }
    json!({
        "run_id": s.run_id,
        "status": status,
        "title": s.plan.title,
        "workdir": s.workdir,
        "tasks_done": done,
        "tasks_total": s.tasks.len(),
        "iterations": s.iterations,
        "cost_usd": s.cost_usd,
        "tokens": s.usage.total(),
        "active_ms": s.active_ms,
        "wall_ms": s.wall_ms,
        "created": s.created,
        "updated": s.updated,
        "gate": s.gate,
        "gate_text": s.gate.as_ref().map(|g| g.describe()),
        // At the surface gate: each changed file of the checks, with its diff.
        "surface_changes": s.surface_gate_changes(),
        "limit_until_ms": s.limit_until_ms,
        "needs_attention": !attention.is_empty(),
        "attention": attention,
        "path": run.path,
    })
}

/// What a running run does when no agent is at work, in words (`None`: an agent is,
/// or nothing is under way).
fn phase_words(s: &RunState) -> Option<String> {
    use agentloop_policy::{Action, next_action};
    if s.status != agentloop_journal::RunStatus::Running || !s.running.is_empty() {
        return None;
    }
    Some(match next_action(s) {
        Action::Validate => {
            "validating: every done task's checks and the run's, again on the whole project".into()
        }
        Action::TestBaseline => {
            "taking the test baseline: every check once, before any agent".into()
        }
        Action::Merge { batch } => match batch.as_slice() {
            [one] => format!("merging iteration {one}'s verified work"),
            _ => format!(
                "merging the verified work of iterations {} as a batch",
                batch
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        Action::Ship(_) => "shipping: the pull request, its checks and review".into(),
        Action::Review { task, .. } => format!("the reviewer is reading task {task}'s work"),
        Action::CheckDiff { task } => {
            format!("reading what task {task} changed for the diff gates")
        }
        _ => return None,
    })
}

/// Budget gauges: what was used of each budget the run has. Time is the run's own
/// wall time (what `max_duration` limits), up to `now_ms` while it runs; the lanes'
/// time added up is `agent_time`, apart.
fn gauges(s: &RunState, now_ms: u64) -> Vec<Value> {
    let b = &s.settings.budgets;
    let mut out = vec![
        json!({"name": "iterations", "used": s.counted_iterations(), "limit": b.max_iterations, "unit": ""}),
    ];
    out.push(json!({"name": "cost", "used": s.cost_usd, "limit": b.max_cost_usd, "unit": "USD"}));
    out.push(json!({"name": "tokens", "used": s.usage.total(), "limit": b.max_tokens, "unit": ""}));
    let running = s.status == agentloop_journal::RunStatus::Running;
    let since_last = if running && s.driver_pid.is_some() {
        now_ms.saturating_sub(s.last_ms)
    } else {
        0
    };
    out.push(
        json!({"name": "time", "used": (s.wall_ms + since_last) as f64 / 1000.0,
        "limit": b.max_duration.map(|d| d.as_secs_f64()), "unit": "s"}),
    );
    let lanes_ms: u64 = if running {
        s.running
            .iter()
            .map(|o| now_ms.saturating_sub(o.started_ms))
            .sum()
    } else {
        0
    };
    out.push(
        json!({"name": "agent_time", "used": (s.active_ms + lanes_ms) as f64 / 1000.0,
        "limit": null, "unit": "s", "lanes": s.settings.workers.max(1)}),
    );
    out
}

pub(crate) async fn list_runs(State(s): State<Server>) -> Result<Json<Value>, ApiError> {
    let runs = tokio::task::spawn_blocking(move || {
        s.all_runs()
            .into_iter()
            .map(|run| {
                if !run.journal().exists() {
                    return json!({ "run_id": run.id, "status": "gone", "path": run.path });
                }
                match run.load_cached() {
                    Ok(l) => summary(&run, &l.state),
                    Err(e) => {
                        json!({ "run_id": run.id, "status": "unreadable", "error": e.to_string() })
                    }
                }
            })
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(json!({ "runs": runs })))
}

pub(crate) async fn load(s: &Server, id: &str) -> Result<(RunDir, RunState), ApiError> {
    let run = s.find(id)?;
    let r = run.clone();
    let state = tokio::task::spawn_blocking(move || r.load_cached().map(|l| l.state))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map_err(|e| ApiError::Conflict(format!("run {id} cannot be read: {e}")))?;
    Ok((run, state))
}

pub(crate) async fn run_state(
    State(s): State<Server>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (run, state) = load(&s, &id).await?;
    let mut v = summary(&run, &state);
    v["plan_version"] = json!(state.plan_version);
    v["plan"] = json!(state.plan);
    v["finished"] = json!(state.finished.as_ref().map(|r| r.describe()));
    v["learnings"] = json!(state.learnings);
    let verdict = agentloop_journal::verdict(&state);
    v["verdict"] = json!(verdict);
    v["verdict_text"] = json!(verdict.meaning());
    v["shape"] = json!(state.settings.shape);
    v["clarity"] = json!(state.settings.clarity);
    v["budgets"] = json!(state.settings.budgets);
    // A run whose driver is gone is not spending time.
    let live = shown_status(&run, &state) == "running";
    let now = if live {
        agentloop_ground::clock::now_ms()
    } else {
        0
    };
    v["gauges"] = json!(gauges(&state, now));
    v["phase"] = json!(if live { phase_words(&state) } else { None });
    v["agent"] = json!(state.settings.agent);
    v["mode"] = json!(state.settings.mode);
    v["paused"] = json!(state.paused);
    v["last_seq"] = json!(state.last_seq);
    v["stop_requested"] = json!(state.stop.is_some());
    let attempt = |task: &str| {
        state
            .task(task)
            .map(|t| agentloop_policy::attempt_of(&state, t))
    };
    v["current"] = json!(state.current().map(|o| json!({
        "iteration": o.started.iteration, "task": o.started.task,
        "attempt": attempt(&o.started.task).map_or(o.started.attempt, |a| a.0),
        "at_most": attempt(&o.started.task).map(|a| a.1),
        "kind": o.started.kind, "agent": o.started.agent, "started_ms": o.started_ms,
        "phase": if o.verify.is_some() { "deciding" } else if state.surface_gate_changes().is_some() { "waiting for a person" } else if o.agent.is_some() { "verifying" } else { "agent" },
    })));
    // A run with workers: what each is at, the merge queue, the integration branch.
    // 0: no worktrees (the agent works in the project).
    v["workers"] = json!(if state.settings.in_worktrees() {
        state.settings.workers
    } else {
        0
    });
    v["lanes"] = json!(
        state
            .lanes()
            .iter()
            .map(|l| {
                let mut v = json!(l);
                v["at_most"] = json!(attempt(&l.task).map(|a| a.1));
                v
            })
            .collect::<Vec<_>>()
    );
    v["merge_queue"] = json!(
        state
            .merge_queue()
            .iter()
            .map(|l| &l.task)
            .collect::<Vec<_>>()
    );
    v["integration"] = json!(state.integration);
    // `[run] planners`: at work, what they added, a proposal waiting for a person.
    v["planners"] = json!((state.settings.planners > 0).then(|| json!({
        "count": state.settings.planners,
        "at_work": state.planning.at_work,
        "added": state.planning.added,
        "proposal": state.planning.proposal.as_ref().map(|t| t.iter().map(|t| json!({"id": t.id, "title": t.title, "verify": t.verify, "tests": t.tests.iter().map(|n| &n.pattern).collect::<Vec<_>>(), "holdout": t.holdout, "depends": t.depends})).collect::<Vec<_>>()),
        "last": state.planning.last.iter().map(|(p, what)| json!({"planner": p, "outcome": what})).collect::<Vec<_>>(),
    })));
    // `[run] cycle`: the cycle the run is in, and the last one's verdict.
    v["cycles"] = json!(state.settings.cycle.map(|c| json!({
        "every": c.describe(),
        "current": state.cycles.judged + 1,
        "done_in_cycle": agentloop_policy::done_in_cycle(&state),
        "last": state.cycles.last.as_ref().map(|(v, why)| json!({"verdict": v.as_str(), "reasons": why})),
    })));
    // `[sandbox]`: how many things it refused the agents, and the latest.
    v["sandbox"] = json!(state.settings.sandbox.on().then(|| json!({
        "refusals": state.sandbox.count,
        "recent": state.sandbox.recent.iter().map(|(i, d)| json!({
            "iteration": i, "kind": d.kind, "target": d.target, "text": d.describe(),
        })).collect::<Vec<_>>(),
    })));
    v["tasks"] = json!(state
        .tasks
        .iter()
        .map(|t| {
            let plan = state.plan.tasks.iter().find(|p| p.id == t.id);
            json!({"id": t.id, "title": t.title, "status": t.status, "iterations": t.iterations,
                "attempts": t.attempts, "cost_usd": t.cost_usd, "tokens": t.tokens, "blocked": t.blocked,
                "blocked_by_breaker": t.blocked_by_breaker, "rung": t.rung, "commit": t.commit,
                "reviews": t.reviews, "review_rejections": t.review_rejections,
                "depends": plan.map(|p| p.depends.clone()).unwrap_or_default(),
                "class": plan.map(|p| agentloop_plan::reversibility(p).0),
                "evidence": agentloop_journal::task_evidence(&state, t)})
        })
        .collect::<Vec<_>>());
    v["tests_baseline"] = json!(state.tests_baseline.as_ref().map(|b| b.words()));
    v["progress_md"] = json!(std::fs::read_to_string(run.progress_file()).unwrap_or_default());
    Ok(Json(v))
}

/// Every plan version of a run (v1 and one per accepted replan), as Markdown.
pub(crate) async fn plan_versions(
    State(s): State<Server>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (run, state) = load(&s, &id).await?;
    let versions: Vec<Value> = (1..=state.plan_version)
        .map(|v| json!({ "version": v, "markdown": std::fs::read_to_string(run.plan_version(v)).unwrap_or_default() }))
        .collect();
    Ok(Json(
        json!({ "current": state.plan_version, "versions": versions }),
    ))
}
