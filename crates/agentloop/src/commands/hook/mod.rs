//! Hook mode: the same journal, policy and verification, driven by an agent CLI's hooks
//! inside one session: Claude Code's (every event below), Codex's `Stop` and Gemini
//! CLI's `AfterAgent`. Every answer is valid for the hook protocol, even
//! on bad input, and never blocks a session just to halt it.
//!
//! `input` types what each event sends; `install` edits Claude Code's settings; the
//! handlers are `drive` (Stop, StopFailure: the driver turned inside out), `session`
//! (SessionStart), `team` (TaskCompleted, TeammateIdle) and `guard` (PreToolUse).

mod drive;
mod guard;
mod input;
mod install;
mod session;
mod slash;
mod team;

use std::io::IsTerminal;
use std::path::Path;

use agentloop_config::Settings;
use agentloop_journal::Request;
use agentloop_plan::{Mode, Plan};
use agentloop_workspace::{RunDir, Workspace};
use serde_json::{Map, Value, json};

use crate::error::{CliError, ExitKind};

use input::HookInput;
pub use install::{install, uninstall};

/// `agentloop hook start [PLAN]`: a run for hook mode, bound to the session that
/// claims it first (see `drive::find_run`).
pub fn start(
    cwd: &Path,
    plan: &Path,
    mode: Option<String>,
    force: bool,
    yes: bool,
) -> Result<ExitKind, CliError> {
    let made = create_run(cwd, plan, mode, force, yes, "cli")?;
    let (run, tasks, window) = (made.run, made.tasks, made.window);
    outln!("{}", run.id);
    let clis = install::installed_for(cwd);
    let who = match clis.as_slice() {
        [] => "agent CLI".to_string(),
        [one] => one.to_string(),
        many => many.join(" or "),
    };
    // What the session that claims it gets first.
    let first = if made.plan_approval {
        "waits for the plan's approval (`agentloop approve`, or `hook start --yes` next time)"
    } else {
        "gets task 1"
    };
    eprintln!(
        "agentloop: hook-mode run {} for {}; the next {who} session in this project to start or stop within {} claims it and {first}",
        run.id,
        agentloop_ground::words::plural(tasks, "task", "tasks"),
        humantime::format_duration(window)
    );
    if clis.is_empty() {
        crate::render::warn(
            "no agent CLI has agentloop's hooks here yet: `agentloop hook install` (Claude Code), `--agent codex` or `--agent gemini` adds them",
        );
    }
    Ok(ExitKind::Completed)
}

/// A hook-mode run just made.
struct Made {
    run: RunDir,
    /// Its plan's tasks.
    tasks: usize,
    /// How long it waits to be claimed by a session.
    window: std::time::Duration,
    /// It waits for the plan's approval first.
    plan_approval: bool,
}

/// Creates a hook-mode run (retiring the open ones). `yes`: without the gates that
/// only confirm (`[run] confirm = false`).
fn create_run(
    cwd: &Path,
    plan: &Path,
    mode: Option<String>,
    force: bool,
    yes: bool,
    source: &str,
) -> Result<Made, CliError> {
    let ws = Workspace::find(cwd);
    let plan_path = cwd.join(plan);
    let shown = plan_path
        .strip_prefix(&ws.root)
        .unwrap_or(&plan_path)
        .to_path_buf();
    let parsed =
        Plan::load_named(&plan_path, &shown.display().to_string())?.with_shape(&ws.root)?;
    retire_hook_runs(&ws, source)?;
    super::run::one_run_per_tree(&ws)?;
    let mut flags = Map::new();
    if let Some(m) = mode {
        let m: Mode = m
            .parse()
            .map_err(|e: String| CliError::user(format!("--mode: {e}")))?;
        flags.insert("run".into(), json!({ "mode": m }));
    }
    if yes {
        let run = flags.entry("run").or_insert_with(|| json!({}));
        run["confirm"] = json!(false);
    }
    let layered = super::load_config_shaped(
        &ws.root,
        &shown,
        &parsed.settings,
        &parsed.shaped,
        flags.clone(),
    )?;
    agentloop_ground::values::cost_ceiling(layered.config.budgets.max_cost_usd, force).map_err(
        |e| CliError::user(e).hint("pass --force to allow it, or lower [budgets] max_cost_usd"),
    )?;
    super::run::iterations_ceiling(
        layered.config.budgets.max_iterations,
        parsed.tasks.len(),
        force,
    )?;
    let mut settings = Settings::new(&layered.config, flags);
    settings.agent = "claude-session".into();
    settings.hook = true;
    // One session is one worker, and plans no more than its plan says.
    settings.workers = 1;
    settings.isolate = false;
    settings.planners = 0;
    let window = settings.claim_window;
    settings.skills = super::run::required_skills(&layered.config, &ws.root)?;
    super::run::guard_skills(&mut settings);
    super::run::decide(&parsed, &layered.config, &mut settings);
    let plan_approval = settings.gates.plan_approval;
    let (run, _, _) = ws.create_run(&shown, &parsed, settings)?;
    Ok(Made {
        run,
        tasks: parsed.tasks.len(),
        window,
        plan_approval,
    })
}

/// A new hook-mode run replaces the open ones of this project: each is stopped (and
/// said so), so an old run never drives a later session. `source`: who asks (`cli`,
/// or `session` for a person's `/agentloop:start` in a session an open run drives).
fn retire_hook_runs(ws: &Workspace, source: &str) -> Result<(), CliError> {
    for id in ws.run_ids() {
        let run = ws.resolve(Some(&id))?;
        let Ok(loaded) = run.load_cached() else {
            continue;
        };
        if loaded.state.is_finished() || !loaded.state.settings.hook {
            continue;
        }
        let bound = loaded
            .state
            .session
            .as_deref()
            .map(|s| format!(", bound to session {s}"))
            .unwrap_or_default();
        run.append_control(loaded, super::request_id(source), source, Request::Stop)?;
        run.settle()?;
        crate::render::warn(&format!(
            "hook-mode run {id}{bound} was still open; it is stopped now"
        ));
    }
    Ok(())
}

/// An answer that lets the session go on as it would without agentloop, with a
/// message for the person.
fn passive(message: &str) -> Value {
    json!({ "systemMessage": format!("agentloop: {message}") })
}

/// `agentloop hook <event>`: reads the event's input on stdin, prints the hook's JSON
/// answer and exits 0 — or, for the team events' refusals, exits 2 with the reason on
/// stderr, which is how Claude Code takes them.
pub fn hook(event: &str) -> Result<ExitKind, CliError> {
    if std::io::stdin().is_terminal() {
        return Err(CliError::user(format!(
            "`agentloop hook {event}` is a hook entry point: Claude Code runs it with the event's JSON on stdin"
        ))
        .hint("to set up hook mode: `agentloop hook install`, then `agentloop hook start`"));
    }
    let answer = match HookInput::read(event) {
        Err(e) => passive(&e),
        Ok(HookInput::Stop(i)) => drive::stop(&i).unwrap_or_else(|e| passive(&e)),
        Ok(HookInput::AfterAgent(i)) => drive::stop(&i.as_stop()).unwrap_or_else(|e| passive(&e)),
        // A subagent finishing is a step inside the session's turn, not the end of it.
        Ok(HookInput::SubagentStop(_)) => Value::Null,
        Ok(HookInput::SessionStart(i)) => session::start(&i).unwrap_or_else(|e| passive(&e)),
        Ok(HookInput::StopFailure(i)) => drive::stop_failure(&i).unwrap_or_else(|e| passive(&e)),
        Ok(HookInput::SessionEnd(i)) => session::end(&i).unwrap_or_else(|e| passive(&e)),
        Ok(HookInput::PreToolUse(i)) => guard::pre_tool_use(&i).unwrap_or_else(|e| passive(&e)),
        Ok(HookInput::TaskCompleted(i)) => return refusal(team::task_completed(&i)),
        Ok(HookInput::TeammateIdle(i)) => return refusal(team::teammate_idle(&i)),
        Ok(HookInput::UserPromptExpansion(i)) => {
            slash::expansion(&i).unwrap_or_else(|e| slash::context(&format!("agentloop: {e}")))
        }
    };
    if answer != Value::Null {
        outln!("{answer}");
    }
    Ok(ExitKind::Completed)
}

/// Agent-team hooks refuse by exit code 2 with the reason on stderr.
fn refusal(r: Result<Option<String>, String>) -> Result<ExitKind, CliError> {
    match r {
        Ok(Some(reason)) => {
            eprintln!("{reason}");
            Ok(ExitKind::BadInput)
        }
        Ok(None) => Ok(ExitKind::Completed),
        Err(e) => {
            outln!("{}", passive(&e));
            Ok(ExitKind::Completed)
        }
    }
}
