//! Hook mode: the same journal, policy and verification, driven by Claude Code's hooks
//! inside one interactive session. Every answer is valid for the hook protocol, even
//! on bad input, and never blocks a session just to halt it.

use std::io::Read;
use std::path::{Path, PathBuf};

use agentloop_agents::AgentRun;
use agentloop_core::config::Settings;
use agentloop_core::exec::supervise::Finished;
use agentloop_core::journal::{AgentError, AgentErrorKind, Event, RunStatus};
use agentloop_core::plan::{Mode, Plan};
use agentloop_core::policy::{Action, WaitReason, next_action};
use agentloop_core::workspace::{Loaded, RunDir, Workspace};
use serde_json::{Map, Value, json};

use crate::cli::OutputArgs;
use crate::driver::Driver;
use crate::error::{CliError, ExitKind};

/// Claude Code ends a turn itself after this many Stop blocks in a row.
const CLAUDE_BLOCK_LIMIT: u32 = 8;
/// The largest hook input read.
const MAX_INPUT: u64 = 4 * 1024 * 1024;

/// `agentloop hook start [PLAN]`: a run for hook mode, bound to the first session
/// whose Stop hook sees it.
pub fn start(cwd: &Path, plan: &Path, mode: Option<String>) -> Result<ExitKind, CliError> {
    let ws = Workspace::find(cwd);
    let plan_path = cwd.join(plan);
    let shown = plan_path
        .strip_prefix(&ws.root)
        .unwrap_or(&plan_path)
        .to_path_buf();
    let parsed = Plan::load_named(&plan_path, &shown.display().to_string())?;
    let mut flags = Map::new();
    if let Some(m) = mode {
        let m: Mode = m
            .parse()
            .map_err(|e: String| CliError::user(format!("--mode: {e}")))?;
        flags.insert("run".into(), json!({ "mode": m }));
    }
    let layered = super::load_config(&ws.root, &shown, &parsed.settings, flags)?;
    let mut settings = Settings::from_config(&layered.config);
    settings.agent = "claude-session".into();
    settings.hook = true;
    let (run, _, _) = ws.create_run(&shown, &parsed, settings)?;
    println!("{}", run.id);
    eprintln!(
        "agentloop: hook-mode run {} for {} tasks; the next Stop of a Claude Code session in this project starts task 1 and binds the run to that session",
        run.id,
        parsed.tasks.len()
    );
    Ok(ExitKind::Completed)
}

/// An answer that lets the session go on as it would without agentloop, with a
/// message for the person.
fn passive(message: &str) -> Value {
    json!({ "systemMessage": format!("agentloop: {message}") })
}

fn read_input() -> Result<Value, String> {
    let mut buf = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read the hook input: {e}"))?;
    if buf.len() as u64 > MAX_INPUT {
        return Err(format!("the hook input is larger than {MAX_INPUT} bytes"));
    }
    let v: Value =
        serde_json::from_slice(&buf).map_err(|e| format!("the hook input is not JSON: {e}"))?;
    if !v.is_object() {
        return Err("the hook input is not a JSON object".into());
    }
    Ok(v)
}

/// `agentloop hook <event>`: prints the hook's JSON answer, exits 0.
pub fn hook(event: &str) -> Result<ExitKind, CliError> {
    let answer = match read_input() {
        Err(e) => passive(&e),
        Ok(input) => match event {
            "stop" | "subagent-stop" => stop(&input).unwrap_or_else(|e| passive(&e)),
            "session-start" => session_start(&input).unwrap_or_else(|e| passive(&e)),
            "stop-failure" => stop_failure(&input).unwrap_or_else(|e| passive(&e)),
            "pre-tool-use" => pre_tool_use(&input).unwrap_or_else(|e| passive(&e)),
            // Agent teams: these refuse by exit code 2 with the reason on stderr.
            "task-completed" | "teammate-idle" => {
                let refusal = if event == "task-completed" {
                    task_completed(&input)
                } else {
                    teammate_idle(&input)
                };
                return match refusal {
                    Ok(Some(reason)) => {
                        eprintln!("{reason}");
                        Ok(ExitKind::BadInput)
                    }
                    Ok(None) => Ok(ExitKind::Completed),
                    Err(e) => {
                        println!("{}", passive(&e));
                        Ok(ExitKind::Completed)
                    }
                };
            }
            other => passive(&format!("unknown hook event `{other}`")),
        },
    };
    if answer != Value::Null {
        println!("{answer}");
    }
    Ok(ExitKind::Completed)
}

fn text(input: &Value, key: &str) -> Option<String> {
    input.get(key).and_then(Value::as_str).map(String::from)
}

/// The newest unfinished hook-mode run of the project that this session may drive.
fn find_run(ws: &Workspace, session: &str) -> Result<Option<(RunDir, Loaded)>, String> {
    for id in ws.run_ids().into_iter().rev() {
        let run = ws.resolve(Some(&id)).map_err(|e| e.to_string())?;
        // Every Stop of every session passes here: driver-mode runs are told apart by
        // their first line alone, without folding their journals.
        let first = agentloop_core::journal::read_first(&run.journal())
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
        // A run bound to another session is never driven from this one.
        let mine = s.session.as_deref().is_none_or(|b| b == session);
        return Ok(mine.then_some((run, loaded)));
    }
    Ok(None)
}

/// The final message of the turn: the hook's `last_assistant_message`, else the
/// last assistant text in the transcript.
fn final_message(input: &Value) -> String {
    if let Some(m) = text(input, "last_assistant_message") {
        return m;
    }
    let Some(path) = text(input, "transcript_path") else {
        return String::new();
    };
    let Ok(t) = std::fs::read_to_string(PathBuf::from(path)) else {
        return String::new();
    };
    for line in t.lines().rev() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
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

/// Takes the run's lock and a driver for it. `loaded` may predate the lock: the
/// first append catches up with anything written since.
fn open_driver(ws: &Workspace, run: RunDir, loaded: Loaded) -> Result<Driver, String> {
    let lock = run
        .lock_driver()
        .map_err(|e| format!("{e}; this stop is not recorded"))?;
    let plan_file = PathBuf::from(&loaded.state.plan_file);
    let config = super::load_config(
        &ws.root,
        &plan_file,
        &loaded.state.plan.settings,
        Map::new(),
    )
    .map_err(|e| e.message)?
    .config;
    let writer = loaded.writer(&run).map_err(|e| e.to_string())?;
    let cache_lag = loaded.cache_lag;
    let out = OutputArgs {
        json: false,
        quiet: true,
        no_wait: true,
    };
    let mut d = Driver::new(ws.clone(), run, writer, loaded.state, config, out, lock)
        .map_err(|e| e.message)?;
    d.cache_lag = cache_lag;
    Ok(d)
}

fn stop(input: &Value) -> Result<Value, String> {
    let session = text(input, "session_id").ok_or("the hook input has no session_id")?;
    let cwd = text(input, "cwd")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    let ws = Workspace::find(&cwd);
    let Some((run, loaded)) = find_run(&ws, &session)? else {
        return Ok(Value::Null);
    };
    let mut d = open_driver(&ws, run, loaded)?;
    let active = input
        .get("stop_hook_active")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let e = |e: CliError| e.message;
    d.record(Event::HookStop {
        session_id: session,
        active,
    })
    .map_err(e)?;
    // The turn that just ended was the open iteration's agent.
    if let Some(open) = d.state.open.clone().filter(|o| o.agent.is_none()) {
        let message = final_message(input);
        let finished = Finished {
            exit_code: Some(0),
            output_bytes: message.len() as u64,
            ..Finished::default()
        };
        let run = AgentRun {
            finished,
            final_message: message,
            ..AgentRun::default()
        };
        d.finish_agent(open.started.iteration, run, None)
            .map_err(e)?;
    }
    for _ in 0..1000 {
        match next_action(&d.state) {
            Action::Record(ev) => d.record_decision(ev).map_err(e)?,
            Action::Verify { iteration, task } => d.verify(iteration, &task).map_err(e)?,
            Action::Iterate(mut plan) => {
                if d.state.hook_chain >= CLAUDE_BLOCK_LIMIT {
                    d.flush();
                    return Ok(passive(&format!(
                        "Claude Code allows {CLAUDE_BLOCK_LIMIT} continuations in a row; send any message to go on with task {}",
                        plan.task
                    )));
                }
                plan.agent = "claude-session".into();
                // begin_iteration already rewrote the caches (a hook process flushes at once).
                let (prompt, _) = d.begin_iteration(&plan).map_err(e)?;
                let s = &d.state;
                let pos = s
                    .plan
                    .tasks
                    .iter()
                    .position(|t| t.id == plan.task)
                    .map(|i| i + 1)
                    .unwrap_or(0);
                let budget = s
                    .task(&plan.task)
                    .map(|t| agentloop_core::policy::rung_budget(s, t))
                    .unwrap_or(0);
                return Ok(json!({
                    "decision": "block",
                    "reason": prompt,
                    "systemMessage": format!(
                        "agentloop: task {pos}/{} {}, iteration {}/{budget}, ${:.2}",
                        s.plan.tasks.len(), plan.task, plan.attempt, s.cost_usd
                    ),
                }));
            }
            Action::Wait(WaitReason::UsageLimit { until_ms })
                if agentloop_core::clock::now_ms() >= until_ms =>
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
                    WaitReason::Blocked { tasks, .. } => format!(
                        "blocked on {}; `agentloop status` says why",
                        tasks.join(", ")
                    ),
                    WaitReason::UsageLimit { .. } => "waiting for a usage limit to reset".into(),
                };
                return Ok(json!({ "continue": false, "stopReason": format!("agentloop: {why}") }));
            }
            Action::Exit(status) => {
                d.flush();
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

fn session_start(input: &Value) -> Result<Value, String> {
    let session = text(input, "session_id").ok_or("the hook input has no session_id")?;
    let cwd = text(input, "cwd")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    let ws = Workspace::find(&cwd);
    let Some((_, loaded)) = find_run(&ws, &session)? else {
        return Ok(Value::Null);
    };
    let s = loaded.state;
    let task = s
        .open
        .as_ref()
        .map(|o| o.started.task.clone())
        .or_else(|| s.next_task().map(|t| t.id.clone()));
    let mut context = format!(
        "agentloop run {} drives this session through the plan \"{}\" ({}/{} tasks done). When you stop, agentloop verifies the work itself and gives you the next step.\n",
        s.run_id,
        s.plan.title,
        s.done_count(),
        s.tasks.len()
    );
    if let Some(t) = task.as_deref().and_then(|t| s.plan.task(t)) {
        context.push_str(&format!(
            "\nCurrent task {}: {}\n{}\n",
            t.id, t.title, t.body
        ));
        for c in &t.acceptance {
            context.push_str(&format!("- [ ] {}\n", c.text));
        }
    }
    if !s.learnings.is_empty() {
        context.push_str("\nLearnings:\n");
        for l in &s.learnings {
            context.push_str(&format!("- {l}\n"));
        }
    }
    Ok(
        json!({ "hookSpecificOutput": { "hookEventName": "SessionStart", "additionalContext": context } }),
    )
}

/// The hook events agentloop answers, and the subcommand for each.
const EVENTS: [(&str, &str); 5] = [
    ("Stop", "stop"),
    ("SubagentStop", "subagent-stop"),
    ("SessionStart", "session-start"),
    ("StopFailure", "stop-failure"),
    ("TaskCompleted", "task-completed"),
];
/// Every event uninstall looks at (TeammateIdle and PreToolUse are opt-in).
const ALL_EVENTS: [(&str, &str); 7] = [
    ("Stop", "stop"),
    ("SubagentStop", "subagent-stop"),
    ("SessionStart", "session-start"),
    ("StopFailure", "stop-failure"),
    ("TaskCompleted", "task-completed"),
    ("TeammateIdle", "teammate-idle"),
    ("PreToolUse", "pre-tool-use"),
];

fn settings_path(cwd: &Path, user: bool) -> PathBuf {
    if user {
        let base = std::env::var_os("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
            .unwrap_or_else(|| PathBuf::from(".claude"));
        base.join("settings.json")
    } else {
        Workspace::find(cwd)
            .root
            .join(".claude")
            .join("settings.json")
    }
}

fn our_command(sub: &str) -> String {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "agentloop".into());
    format!("'{}' hook {sub}", exe.replace('\'', "'\\''"))
}

fn is_ours(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| {
            c.contains("agentloop")
                && ALL_EVENTS
                    .iter()
                    .any(|(_, sub)| c.ends_with(&format!(" hook {sub}")))
        })
}

fn read_settings(path: &Path) -> Result<Value, CliError> {
    match std::fs::read(path) {
        Ok(b) => {
            let v: Value = serde_json::from_slice(&b).map_err(|e| {
                CliError::user(format!("{}: not valid JSON: {e}", path.display()))
                    .hint("fix the file by hand first; agentloop changes nothing in it")
            })?;
            if !v.is_object() {
                return Err(CliError::user(format!(
                    "{}: not a JSON object",
                    path.display()
                )));
            }
            Ok(v)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(CliError::internal(format!("{}: {e}", path.display()))),
    }
}

fn write_settings(path: &Path, v: &Value) -> Result<(), CliError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    agentloop_core::fsutil::write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// `agentloop hook install`: adds agentloop's hooks, leaving every other entry alone.
/// `guard` adds the PreToolUse hook that denies edits to protected paths.
pub fn install(cwd: &Path, user: bool, guard: bool) -> Result<ExitKind, CliError> {
    let path = settings_path(cwd, user);
    let mut v = read_settings(&path)?;
    let hooks = v
        .as_object_mut()
        .expect("checked")
        .entry("hooks")
        .or_insert_with(|| json!({}));
    let hooks = hooks
        .as_object_mut()
        .ok_or_else(|| CliError::user(format!("{}: `hooks` is not an object", path.display())))?;
    let mut added = 0;
    let guard_event = [("PreToolUse", "pre-tool-use")];
    for (event, sub) in EVENTS
        .iter()
        .chain(if guard { &guard_event[..] } else { &[] })
        .copied()
    {
        let groups = hooks.entry(event).or_insert_with(|| json!([]));
        let groups = groups.as_array_mut().ok_or_else(|| {
            CliError::user(format!("{}: hooks.{event} is not a list", path.display()))
        })?;
        let present = groups.iter().any(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|h| h.iter().any(is_ours))
        });
        if !present {
            groups.push(json!({"hooks": [{"type": "command", "command": our_command(sub), "timeout": 600}]}));
            added += 1;
        }
    }
    write_settings(&path, &v)?;
    eprintln!(
        "agentloop: {} agentloop hooks in {} ({added} added)",
        EVENTS.len() + usize::from(guard),
        path.display()
    );
    eprintln!(
        "  start a hook-mode run with `agentloop hook start`, then work in Claude Code as usual"
    );
    Ok(ExitKind::Completed)
}

/// `agentloop hook uninstall`: removes exactly the entries `install` adds.
pub fn uninstall(cwd: &Path, user: bool) -> Result<ExitKind, CliError> {
    let path = settings_path(cwd, user);
    if !path.exists() {
        eprintln!(
            "agentloop: {} does not exist; nothing to remove",
            path.display()
        );
        return Ok(ExitKind::Completed);
    }
    let mut v = read_settings(&path)?;
    let mut removed = 0;
    if let Some(hooks) = v.get_mut("hooks").and_then(Value::as_object_mut) {
        for (event, _) in ALL_EVENTS {
            let Some(groups) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
                continue;
            };
            for g in groups.iter_mut() {
                if let Some(h) = g.get_mut("hooks").and_then(Value::as_array_mut) {
                    let before = h.len();
                    h.retain(|x| !is_ours(x));
                    removed += before - h.len();
                }
            }
            groups.retain(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|h| !h.is_empty())
            });
            if groups.is_empty() {
                hooks.remove(event);
            }
        }
        if hooks.is_empty() {
            v.as_object_mut().expect("checked").remove("hooks");
        }
    }
    if v.as_object().is_some_and(|o| o.is_empty()) {
        std::fs::remove_file(&path)?;
    } else {
        write_settings(&path, &v)?;
    }
    eprintln!(
        "agentloop: removed {removed} agentloop hooks from {}",
        path.display()
    );
    Ok(ExitKind::Completed)
}

fn workspace_of(input: &Value) -> Workspace {
    let cwd = text(input, "cwd")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    Workspace::find(&cwd)
}

/// StopFailure: the turn ended on an API error. A rate limit or overload becomes the
/// same `limit_hit` as in driver mode; the next Stop waits it out.
fn stop_failure(input: &Value) -> Result<Value, String> {
    let session = text(input, "session_id").ok_or("the hook input has no session_id")?;
    let ws = workspace_of(input);
    let Some((run, loaded)) = find_run(&ws, &session)? else {
        return Ok(Value::Null);
    };
    let error = text(input, "error").unwrap_or_else(|| "unknown".into());
    let kind = match error.as_str() {
        "rate_limit" => AgentErrorKind::RateLimit,
        "overloaded" => AgentErrorKind::Overloaded,
        "authentication_failed" => AgentErrorKind::Auth,
        "billing_error" => AgentErrorKind::Billing,
        _ => AgentErrorKind::Other,
    };
    let mut d = open_driver(&ws, run, loaded)?;
    let e = |e: CliError| e.message;
    let Some(open) = d.state.open.clone().filter(|o| o.agent.is_none()) else {
        return Ok(Value::Null);
    };
    let message = text(input, "error_message")
        .unwrap_or_else(|| format!("the session stopped on an API error: {error}"));
    let run = AgentRun {
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
    d.finish_agent(open.started.iteration, run, None)
        .map_err(e)?;
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

/// The plan task a team task stands for: its id in the subject, or the same title.
fn plan_task_for<'a>(
    s: &'a agentloop_core::journal::RunState,
    subject: &str,
) -> Option<&'a agentloop_core::plan::Task> {
    s.plan.tasks.iter().find(|t| {
        subject
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .any(|w| w == t.id)
            || subject.trim().eq_ignore_ascii_case(&t.title)
    })
}

/// TaskCompleted: refused (exit 2) when the task's verification fails or, in tdd
/// mode, no test file changed.
fn task_completed(input: &Value) -> Result<Option<String>, String> {
    let ws = workspace_of(input);
    let session = text(input, "session_id").unwrap_or_default();
    let Some((run, loaded)) = find_run(&ws, &session)? else {
        return Ok(None);
    };
    let subject = text(input, "task_subject").unwrap_or_default();
    let s = &loaded.state;
    let Some(task) = plan_task_for(s, &subject) else {
        return Ok(None);
    };
    let commands: Vec<String> = task
        .verify
        .iter()
        .chain(&s.settings.verify_commands)
        .cloned()
        .collect();
    let dir = run.path.join("team");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let config = super::load_config(
        &ws.root,
        Path::new(&s.plan_file),
        &s.plan.settings,
        Map::new(),
    )
    .map_err(|e| e.message)?
    .config;
    let runner = agentloop_core::exec::verify::Runner {
        workdir: &ws.root,
        timeout: config.verify.timeout,
        output_cap: config.verify.output_cap,
        log: &dir.join(format!("{}-verify.log", task.id)),
    };
    let v = runner
        .run(0, &commands, || false)
        .map_err(|e| e.to_string())?;
    if !v.passed {
        return Ok(Some(format!(
            "agentloop: task {} is not complete: verification failed.\n{}",
            task.id,
            v.digest.unwrap_or_default()
        )));
    }
    if s.mode_of(&task.id) == Mode::Tdd {
        let touched = agentloop_core::exec::git::Snapshots::new(&ws.root)
            .and_then(|g| g.take())
            .is_some_and(|snap| {
                snap.dirty
                    .keys()
                    .any(|f| agentloop_core::paths::is_test_path(f, &s.settings.test_patterns))
            });
        if !touched && !s.task(&task.id).is_some_and(|t| t.tests_touched) {
            return Ok(Some(format!(
                "agentloop: task {} is in tdd mode and no test file changed; write the failing test first",
                task.id
            )));
        }
    }
    Ok(None)
}

/// TeammateIdle: keeps a teammate working while a task it can take is pending.
fn teammate_idle(input: &Value) -> Result<Option<String>, String> {
    let ws = workspace_of(input);
    let session = text(input, "session_id").unwrap_or_default();
    let Some((_, loaded)) = find_run(&ws, &session)? else {
        return Ok(None);
    };
    let s = &loaded.state;
    let busy = s.open.as_ref().map(|o| o.started.task.clone());
    let next = s.plan.tasks.iter().zip(&s.tasks).find(|(pt, st)| {
        st.status == agentloop_core::journal::TaskStatus::Pending
            && Some(&pt.id) != busy.as_ref()
            && pt
                .depends
                .iter()
                .all(|d| s.task(d).is_some_and(|t| t.status.is_settled()))
    });
    Ok(next.map(|(pt, _)| {
        format!(
            "agentloop: task {} ({}) is pending and ready; take it next",
            pt.id, pt.title
        )
    }))
}

/// PreToolUse (installed with `hook install --guard`): denies edits to protected paths
/// and, while a task with a Scope runs, to files outside it.
fn pre_tool_use(input: &Value) -> Result<Value, String> {
    let ws = workspace_of(input);
    let session = text(input, "session_id").unwrap_or_default();
    let Some((_, loaded)) = find_run(&ws, &session)? else {
        return Ok(Value::Null);
    };
    let s = &loaded.state;
    let tool = text(input, "tool_name").unwrap_or_default();
    if !matches!(
        tool.as_str(),
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit"
    ) {
        return Ok(Value::Null);
    }
    let Some(file) = input
        .pointer("/tool_input/file_path")
        .or_else(|| input.pointer("/tool_input/notebook_path"))
        .and_then(Value::as_str)
    else {
        return Ok(Value::Null);
    };
    let path = Path::new(file);
    let rel = path
        .strip_prefix(&ws.root)
        .unwrap_or(path)
        .display()
        .to_string();
    let under = |p: &str| {
        let p = p.trim_start_matches("./");
        if p.ends_with('/') {
            rel.starts_with(p)
        } else {
            rel == p || rel.starts_with(&format!("{p}/"))
        }
    };
    let deny = |why: String| json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": why}});
    if path.is_absolute() && !path.starts_with(&ws.root) {
        return Ok(deny(format!("agentloop: {file} is outside this project")));
    }
    if let Some(p) = s.settings.protected.iter().find(|p| under(p)) {
        return Ok(deny(format!(
            "agentloop: {rel} is protected ({p}); verification depends on it"
        )));
    }
    let current = s.open.as_ref().map(|o| o.started.task.clone());
    if let Some(task) = current.as_deref().and_then(|t| s.plan.task(t))
        && !task.scope.is_empty()
        && !task.scope.iter().any(|p| under(p))
    {
        return Ok(deny(format!(
            "agentloop: task {} may only change {}; {rel} is outside",
            task.id,
            task.scope.join(", ")
        )));
    }
    Ok(Value::Null)
}
