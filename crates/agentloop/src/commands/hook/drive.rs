//! Stop and StopFailure: each call is one short-lived driver that takes the run's lock,
//! finishes the open iteration from the session's turn, verifies, and asks the policy
//! what comes next — an `Iterate` becomes a `block` with the next prompt.

use agentloop_agents::AgentRun;
use agentloop_exec::supervise::Finished;
use agentloop_ground::values::Usage;
use agentloop_journal::{AgentError, AgentErrorKind, Event, RunStatus};
use agentloop_policy::{Action, WaitReason, next_action};
use agentloop_workspace::{Loaded, RunDir, Workspace};
use serde_json::{Value, json};

use super::input::{Common, Stop, StopFailure};
use super::passive;
use crate::cli::OutputArgs;
use crate::driver::Driver;
use crate::error::CliError;

/// Claude Code ends a turn itself after this many Stop blocks in a row (Codex and
/// Gemini CLI set no such limit).
const CLAUDE_BLOCK_LIMIT: u32 = 8;

/// The newest unfinished hook-mode run of the project that this session drives: the
/// one bound to it, or an unbound one it may claim (fresh, or named in its transcript).
/// A run bound to another session, or a stale unbound one, is never driven from here.
pub(super) fn find_run(
    ws: &Workspace,
    common: &Common,
) -> Result<Option<(RunDir, Loaded)>, String> {
    let session = common.session_id.as_deref().unwrap_or_default();
    for id in ws.run_ids().into_iter().rev() {
        let run = ws.resolve(Some(&id)).map_err(|e| e.to_string())?;
        // Every Stop of every session passes here: driver-mode runs are told apart by
        // their first line alone, without folding their journals.
        let first = agentloop_journal::read_first(&run.journal())
            .map_err(|e| format!("run {id} cannot be read, so it is not driven: {e}"))?;
        if !matches!(&first.event, Event::RunCreated { settings, .. } if settings.hook) {
            continue;
        }
        let loaded = run
            .load_cached()
            .map_err(|e| format!("run {id} cannot be read, so it is not driven: {e}"))?;
        let s = &loaded.state;
        if !s.settings.hook || s.is_finished() {
            continue;
        }
        let mine = match s.session.as_deref() {
            Some(bound) => bound == session,
            // Unclaimed: a session may claim it while it is fresh (`[hook]
            // claim_window`), or when it started it; a stale run drives nobody.
            None => fresh(&s.created, s.settings.claim_window) || names_run(common, &id),
        };
        return Ok(mine.then_some((run, loaded)));
    }
    Ok(None)
}

/// Created within the claim window.
fn fresh(created: &str, window: std::time::Duration) -> bool {
    humantime::parse_rfc3339(created)
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age <= window)
}

/// The session's transcript names the run (it was started from inside the session).
fn names_run(common: &Common, id: &str) -> bool {
    common
        .transcript_path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .is_some_and(|t| t.contains(id))
}

/// The final message of the turn: the hook's `last_assistant_message`, else the
/// last assistant text in the transcript (Claude Code's `assistant` lines, Gemini
/// CLI's `gemini` ones).
fn final_message(input: &Stop) -> String {
    if let Some(m) = &input.last_assistant_message {
        return m.clone();
    }
    let Some(path) = &input.common.transcript_path else {
        return String::new();
    };
    let Ok(t) = std::fs::read_to_string(path) else {
        return String::new();
    };
    for line in t.lines().rev() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) == Some("gemini") {
            match v.get("content").and_then(Value::as_str) {
                Some(text) if !text.trim().is_empty() => return text.to_string(),
                _ => continue,
            }
        }
        if v.get("type").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        let texts: Vec<&str> = v
            .pointer("/message/content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        if !texts.is_empty() {
            return texts.join("\n");
        }
    }
    String::new()
}

/// Where an iteration's start in the session transcript is kept: a byte offset, and on
/// the next line the transcript's path.
const TRANSCRIPT_OFFSET: &str = "transcript-offset";

/// Where the run's count of a session transcript goes on for `iteration`: its end now,
/// when an earlier iteration read the same transcript (the turns since were counted
/// with it); else its start, so the session's turns before its first task (the
/// person's own, the start command's) are the run's spending too. A record without a
/// path (written before paths were) is taken for this transcript's: never counted twice.
fn counted_from(d: &Driver, iteration: u32, transcript: &std::path::Path) -> u64 {
    let path = transcript.to_string_lossy();
    let read_before = (1..iteration).rev().any(|i| {
        std::fs::read_to_string(d.run.iteration_dir(i).join(TRANSCRIPT_OFFSET))
            .is_ok_and(|record| record.lines().nth(1).is_none_or(|p| p == path))
    });
    if read_before {
        agentloop_agents::transcript::end_of(transcript)
    } else {
        0
    }
}

/// How long a Stop hook waits for the turn's lines to reach the transcript (well
/// inside the hook's own time limit).
const TRANSCRIPT_LAG: std::time::Duration = std::time::Duration::from_secs(3);

/// What the session's turn spent on an iteration: the tokens of the assistant messages
/// written since the iteration began, and their cost at the configured price of the
/// model, else its list price. The turn's `final_message` (when there is one) is first
/// awaited in the transcript, which the CLI may still be writing.
fn turn_spent(d: &Driver, iteration: u32, common: &Common, final_message: &str) -> (Usage, f64) {
    let Some(path) = &common.transcript_path else {
        return (Usage::default(), 0.0);
    };
    let Some(from) =
        std::fs::read_to_string(d.run.iteration_dir(iteration).join(TRANSCRIPT_OFFSET))
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse::<u64>().ok())
    else {
        return (Usage::default(), 0.0);
    };
    agentloop_agents::transcript::await_turn(path, from, final_message, TRANSCRIPT_LAG);
    let spent = agentloop_agents::transcript::spent_since(path, from);
    let price = spent.model.as_deref().and_then(|m| {
        d.config
            .prices
            .get(m)
            .copied()
            .or_else(|| agentloop_agents::transcript::list_price(m))
    });
    let cost = price.map_or(0.0, |p| p.cost(&spent.usage));
    (spent.usage, cost)
}

/// Takes the run's lock and a driver for it. `loaded` may predate the lock: the
/// first append catches up with anything written since.
pub(super) fn open_driver(ws: &Workspace, run: RunDir, loaded: Loaded) -> Result<Driver, String> {
    let lock = run
        .lock_driver()
        .map_err(|e| format!("{e}; this stop is not recorded"))?;
    let config = run_config(ws, &loaded)?;
    let writer = loaded.writer(&run).map_err(|e| e.to_string())?;
    let cache_lag = loaded.cache_lag;
    let out = OutputArgs {
        json: false,
        quiet: true,
        no_wait: true,
        step: false,
        interactive: false,
    };
    let mut d = Driver::new(ws.clone(), run, writer, loaded.state, config, out, lock)
        .map_err(|e| e.message)?;
    d.cache_lag = cache_lag;
    Ok(d)
}

/// The configuration a hook-mode run works with.
pub(super) fn run_config(
    ws: &Workspace,
    loaded: &Loaded,
) -> Result<agentloop_config::Config, String> {
    super::super::run_config(&ws.root, &loaded.state)
        .map(|l| l.config)
        .map_err(|e| e.message)
}

pub(super) fn stop(input: &Stop) -> Result<Value, String> {
    let began = std::time::Instant::now();
    let session = input.common.session()?.to_string();
    let ws = Workspace::find(&input.common.cwd());
    let Some((run, loaded)) = find_run(&ws, &input.common)? else {
        return Ok(Value::Null);
    };
    let mut d = open_driver(&ws, run, loaded)?;
    d.deadline = Some(d.config.hook.deadline(began));
    d.hook_resident = true;
    let e = |e: CliError| e.message;
    let cli = agentloop_workspace::origin::session_ancestor();
    let block_limit = match cli.as_ref().map(|(_, name)| name.as_str()) {
        Some("claude") | None => CLAUDE_BLOCK_LIMIT,
        Some(_) => u32::MAX,
    };
    d.record(Event::HookStop {
        session_id: session.clone(),
        active: input.stop_hook_active,
        pid: cli.map(|(pid, _)| pid),
    })
    .map_err(e)?;
    // The turn that just ended was the open iteration's agent.
    if let Some(open) = d.state.current().cloned().filter(|o| o.agent.is_none()) {
        let message = final_message(input);
        let finished = Finished {
            exit_code: Some(0),
            output_bytes: message.len() as u64,
            ..Finished::default()
        };
        let (usage, cost_usd) = turn_spent(&d, open.started.iteration, &input.common, &message);
        let run = AgentRun {
            finished,
            final_message: message,
            usage,
            cost_usd,
            session_id: Some(session.clone()),
            ..AgentRun::default()
        };
        d.observe(open.started.iteration, run, None).map_err(e)?;
    }
    for _ in 0..1000 {
        let action = next_action(&d.state);
        d.before(&action).map_err(e)?;
        // Whether the checks can be confined is asked (a bubblewrap started) only by
        // a stop that runs some: most stops run none.
        if matches!(
            action,
            Action::Verify { .. }
                | Action::Validate
                | Action::TestBaseline
                | Action::CheckTripwires { .. }
                | Action::Review { .. }
        ) {
            d.say_unconfined().map_err(e)?;
        }
        match action {
            Action::Record(ev) => {
                d.record_decision(ev).map_err(e)?;
            }
            Action::Verify { iteration, task } => d.verify(iteration, &task).map_err(e)?,
            Action::CheckSurface { iteration } => d.check_surface(iteration).map_err(e)?,
            Action::CheckTripwires { iteration } => d.check_tripwires(iteration).map_err(e)?,
            Action::Validate => d.validate().map_err(e)?,
            Action::TestBaseline => d.test_baseline().map_err(e)?,
            Action::Review { iteration, task } => d.review(iteration, &task).map_err(e)?,
            Action::Merge { .. } => {
                return Ok(passive("a run with workers is not driven by a session"));
            }
            Action::Plan { .. } => {
                return Ok(passive(
                    "planners ([run] planners) are not run in hook mode",
                ));
            }
            Action::Judge { cycle } => d.judge_cycle(cycle).map_err(e)?,
            Action::Restore { iteration, cause } => {
                d.restore_surface(iteration, cause).map_err(e)?;
            }
            // Shipping from a session's stop: each step records what it did.
            Action::Ship(step) => d.ship(step).map_err(e)?,
            Action::CheckDiff { task } => d.check_task_diff(&task).map_err(e)?,
            Action::Iterate(mut plan) => {
                if d.state.hook_chain >= block_limit {
                    d.flush();
                    return Ok(passive(&format!(
                        "Claude Code allows {CLAUDE_BLOCK_LIMIT} continuations in a row; send any message to go on with task {}",
                        plan.task
                    )));
                }
                plan.agent = "claude-session".into();
                // prepare already rewrote the caches (a hook process flushes at once).
                let Some(prepared) = d.prepare(plan.clone()).map_err(e)? else {
                    continue;
                };
                // The session's spending for this iteration starts here.
                if let Some(t) = &input.common.transcript_path {
                    let offset = counted_from(&d, plan.iteration, t);
                    let at = d.run.iteration_dir(plan.iteration).join(TRANSCRIPT_OFFSET);
                    let record = format!("{offset}\n{}\n", t.display());
                    agentloop_ground::fsutil::write_new(&at, record.as_bytes())
                        .map_err(|err| err.to_string())?;
                }
                let prompt = prepared.prompt;
                let s = &d.state;
                let pos = s.position(&plan.task);
                let (attempt, at_most) = s
                    .task(&plan.task)
                    .map(|t| agentloop_policy::attempt_of(s, t))
                    .unwrap_or_default();
                return Ok(json!({
                    "decision": "block",
                    "reason": prompt,
                    "systemMessage": format!(
                        "agentloop: task {pos}/{} {}, attempt {attempt} of at most {at_most}, {}",
                        s.plan.tasks.len(), plan.task, agentloop_ground::words::money(s.cost_usd)
                    ),
                }));
            }
            Action::Wait(WaitReason::UsageLimit { until_ms })
                if agentloop_ground::clock::now_ms() >= until_ms =>
            {
                d.record(Event::LimitWaitOver).map_err(e)?;
            }
            Action::Wait(reason) => {
                d.flush();
                let why = match reason {
                    WaitReason::Gate(g) => format!(
                        "waiting for a person: {} (`agentloop approve` / `agentloop reject --note …`)",
                        g.describe()
                    ),
                    WaitReason::Paused => "paused (`agentloop resume` continues)".into(),
                    WaitReason::Budget {
                        budget,
                        used,
                        limit,
                    } => format!(
                        "paused, {} (`agentloop resume --budget +10` tops it up)",
                        WaitReason::budget_words(&budget, used, limit)
                    ),
                    WaitReason::Blocked { tasks, .. } => format!(
                        "blocked on {}; `agentloop status` says why",
                        tasks.join(", ")
                    ),
                    WaitReason::UsageLimit { .. } => "waiting for a usage limit to reset".into(),
                    WaitReason::Workers => "waiting for the run's workers".into(),
                };
                return Ok(json!({ "continue": false, "stopReason": format!("agentloop: {why}") }));
            }
            Action::Exit(status) => {
                d.flush();
                d.end_resident();
                d.remove_clean_copy();
                d.write_handoff();
                let why = match status {
                    RunStatus::Completed => "the plan is complete and verified".to_string(),
                    _ => d
                        .state
                        .finished
                        .as_ref()
                        .map(|r| r.describe())
                        .unwrap_or_else(|| status.as_str().into()),
                };
                return Ok(json!({ "continue": false, "stopReason": format!("agentloop: {why}") }));
            }
        }
    }
    Err("the policy did not settle".into())
}

/// StopFailure: the turn ended on an API error. A rate limit or overload becomes the
/// same `limit_hit` as in driver mode; the next Stop waits it out.
pub(super) fn stop_failure(input: &StopFailure) -> Result<Value, String> {
    input.common.session()?;
    let ws = Workspace::find(&input.common.cwd());
    let Some((run, loaded)) = find_run(&ws, &input.common)? else {
        return Ok(Value::Null);
    };
    let error = input.error.clone().unwrap_or_else(|| "unknown".into());
    let kind = match error.as_str() {
        "rate_limit" => AgentErrorKind::RateLimit,
        "overloaded" => AgentErrorKind::Overloaded,
        "authentication_failed" => AgentErrorKind::Auth,
        "billing_error" => AgentErrorKind::Billing,
        _ => AgentErrorKind::Other,
    };
    let mut d = open_driver(&ws, run, loaded)?;
    let e = |e: CliError| e.message;
    let Some(open) = d.state.current().cloned().filter(|o| o.agent.is_none()) else {
        return Ok(Value::Null);
    };
    let message = input
        .error_message
        .clone()
        .unwrap_or_else(|| format!("the session stopped on an API error: {error}"));
    let (usage, cost_usd) = turn_spent(&d, open.started.iteration, &input.common, "");
    let run = AgentRun {
        usage,
        cost_usd,
        finished: Finished {
            exit_code: Some(1),
            ..Finished::default()
        },
        error: Some(AgentError {
            kind,
            message: message.clone(),
        }),
        ..AgentRun::default()
    };
    d.observe(open.started.iteration, run, None).map_err(e)?;
    // Record the policy's decisions up to the wait (limit_hit, the limited iteration).
    while let Action::Record(ev) = next_action(&d.state) {
        d.record_decision(ev).map_err(e)?;
    }
    d.flush();
    Ok(passive(&match kind {
        AgentErrorKind::RateLimit | AgentErrorKind::Overloaded => {
            format!("{error}: the run waits for the reset; send a message after it to go on")
        }
        _ => format!("{error}: {message}"),
    }))
}
