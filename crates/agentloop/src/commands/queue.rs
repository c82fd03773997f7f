//! `agentloop queue add | list | run`: plans run one after another (or once the
//! entries they wait for are done), each a run of its own with its own handoff. A plan
//! that waits for a person does not hold up the ones that do not wait for it; `queue
//! run` again resumes it once the person has answered.

use std::path::Path;
use std::process::Command;

use agentloop_workspace::{Entry, EntryState, Workspace};
use serde_json::json;

use crate::error::{CliError, ExitKind};

fn ws_error(e: agentloop_workspace::WorkspaceError) -> CliError {
    CliError::user(e.to_string())
}

pub fn add(cwd: &Path, plan: &Path, after: &[String]) -> Result<ExitKind, CliError> {
    let ws = Workspace::find(cwd);
    let full = cwd.join(plan);
    // A plan that does not read is not queued (nor one with its goal alone, unless
    // the configuration has planners to grow it).
    super::plan_and_config(&ws.root, &full, plan, serde_json::Map::new())?;
    let rel = full
        .strip_prefix(&ws.root)
        .unwrap_or(&full)
        .to_string_lossy()
        .into_owned();
    let entry = ws
        .change_queue(|q| {
            for a in after {
                if q.get(a).is_none() {
                    return Err(format!("no queue entry {a} (see `agentloop queue list`)"));
                }
            }
            let e = Entry {
                id: q.next_id(),
                plan: rel.clone(),
                after: after.to_vec(),
                state: EntryState::Waiting,
                run: None,
                note: None,
            };
            q.entries.push(e.clone());
            Ok(e)
        })
        .map_err(ws_error)?;
    outln!(
        "{}: {}{}",
        entry.id,
        entry.plan,
        if entry.after.is_empty() {
            String::new()
        } else {
            format!(" (after {})", entry.after.join(", "))
        }
    );
    Ok(ExitKind::Completed)
}

pub fn list(cwd: &Path, as_json: bool) -> Result<ExitKind, CliError> {
    let ws = Workspace::find(cwd);
    let q = ws.read_queue().map_err(ws_error)?;
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!(q.entries)).unwrap_or_default()
        );
        return Ok(ExitKind::Completed);
    }
    if q.entries.is_empty() {
        outln!("the queue is empty (`agentloop queue add PLAN.md` adds a plan)");
        return Ok(ExitKind::Completed);
    }
    let held = q.held();
    for e in &q.entries {
        let mut extra = Vec::new();
        if !e.after.is_empty() {
            extra.push(format!("after {}", e.after.join(", ")));
        }
        if let Some((_, on)) = held.iter().find(|(h, _)| h.id == e.id) {
            extra.push(format!("held: {} is {}", on.id, on.state.as_str()));
        }
        if let Some(r) = &e.run {
            extra.push(format!("run {r}"));
        }
        if let Some(n) = &e.note {
            extra.push(n.clone());
        }
        outln!(
            "{:4} {:8} {}{}",
            e.id,
            e.state.as_str(),
            e.plan,
            if extra.is_empty() {
                String::new()
            } else {
                format!("  ({})", extra.join(" · "))
            }
        );
    }
    Ok(ExitKind::Completed)
}

/// What a run's exit code makes of its entry.
fn state_of(code: Option<i32>) -> (EntryState, String) {
    match code {
        Some(0) => (EntryState::Done, "completed".into()),
        Some(3) => (EntryState::Blocked, "a budget is spent".into()),
        Some(4) => (EntryState::Blocked, "a breaker tripped".into()),
        Some(5) => (EntryState::Blocked, "waits for a person".into()),
        Some(6) | Some(130) | None => (EntryState::Stopped, "stopped".into()),
        Some(7) => (
            EntryState::Blocked,
            "the journal's store failed: resumed by the next `queue run`".into(),
        ),
        Some(c) => (EntryState::Failed, format!("exit {c}")),
    }
}

/// Drives one run of the queue in a process of its own; `None` when it could not be
/// started.
fn drive(ws: &Workspace, args: &[&str]) -> Option<i32> {
    let exe = std::env::current_exe().ok()?;
    let status = Command::new(exe)
        .args(args)
        .current_dir(&ws.root)
        .status()
        .ok()?;
    Some(status.code().unwrap_or(130))
}

fn set(
    ws: &Workspace,
    id: &str,
    state: EntryState,
    run: Option<&str>,
    note: Option<String>,
) -> Result<(), CliError> {
    ws.change_queue(|q| {
        if let Some(e) = q.get_mut(id) {
            e.state = state;
            if let Some(r) = run {
                e.run = Some(r.to_string());
            }
            e.note = note;
        }
        Ok(())
    })
    .map_err(ws_error)
}

pub fn run(cwd: &Path) -> Result<ExitKind, CliError> {
    let ws = Workspace::find(cwd);
    std::fs::create_dir_all(&ws.dir)
        .map_err(|e| CliError::internal(format!("cannot create {}: {e}", ws.dir.display())))?;
    let lock_path = ws.dir.join("queue-run.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| CliError::internal(format!("{}: {e}", lock_path.display())))?;
    if lock.try_lock().is_err() {
        return Err(
            CliError::user("another `agentloop queue run` is going in this project")
                .hint("`agentloop queue list` shows where it is"),
        );
    }
    let q = ws.read_queue().map_err(ws_error)?;
    // Runs a person may have answered since, or whose driver died: resumed.
    for e in q
        .entries
        .iter()
        .filter(|e| matches!(e.state, EntryState::Blocked | EntryState::Running) && e.run.is_some())
    {
        let run = e.run.as_deref().unwrap_or_default();
        if ws
            .resolve(Some(run))
            .ok()
            .and_then(|r| r.lock_holder())
            .is_some()
        {
            continue;
        }
        eprintln!("agentloop queue: {} ({}): resuming run {run}", e.id, e.plan);
        let (state, note) = state_of(drive(&ws, &["resume", run, "--no-wait"]));
        set(&ws, &e.id, state, None, Some(note))?;
        if state == EntryState::Stopped {
            return Ok(ExitKind::Stopped);
        }
    }
    let mut deferred = None;
    loop {
        let q = ws.read_queue().map_err(ws_error)?;
        let Some(e) = q.next().cloned() else {
            break;
        };
        // A run of the queue waits for a person in this work tree, which one run
        // drives at a time: the plans that do not depend on it wait their turn (its
        // dependents are held anyway); none is started only to fail.
        if let Err(busy) = super::run::one_run_per_tree(&ws) {
            let why = format!("deferred: {}", busy.message);
            set(&ws, &e.id, EntryState::Waiting, None, Some(why.clone()))?;
            deferred = Some((e.id.clone(), why));
            break;
        }
        let run_id = format!("{}-{}", e.id, agentloop_ground::clock::now_ms());
        set(&ws, &e.id, EntryState::Running, Some(&run_id), None)?;
        eprintln!("agentloop queue: {} ({}): run {run_id}", e.id, e.plan);
        let (state, note) = state_of(drive(
            &ws,
            &["run", &e.plan, "--run-id", &run_id, "--no-wait"],
        ));
        eprintln!("agentloop queue: {}: {}", e.id, note);
        set(&ws, &e.id, state, None, Some(note))?;
        if state == EntryState::Stopped {
            return Ok(ExitKind::Stopped);
        }
    }
    let q = ws.read_queue().map_err(ws_error)?;
    let count = |s: EntryState| q.entries.iter().filter(|e| e.state == s).count();
    let held = q.held();
    eprintln!(
        "agentloop queue: {} done, {} blocked, {} failed, {} held by them",
        count(EntryState::Done),
        count(EntryState::Blocked),
        count(EntryState::Failed),
        held.len()
    );
    for (e, on) in &held {
        eprintln!("  {} waits for {} ({})", e.id, on.id, on.state.as_str());
    }
    if let Some((id, why)) = &deferred {
        eprintln!("  {id} and what follows it: {why}");
    }
    Ok(if count(EntryState::Failed) > 0 {
        ExitKind::Internal
    } else if count(EntryState::Blocked) > 0 || !held.is_empty() || deferred.is_some() {
        ExitKind::Waiting
    } else {
        ExitKind::Completed
    })
}
