//! Control requests from another terminal: appended to the run's journal under its
//! lock, picked up by the driver at the next safe point.

use agentloop_journal::TaskStatus;
use agentloop_journal::{Request, RunStatus};
use std::path::Path;

use agentloop_ground::redact::Redactor;
use agentloop_workspace::{Loaded, RunDir, Workspace};

use super::Want;
use crate::error::{CliError, ExitKind};

fn open(ws: &Workspace, run: Option<&str>, want: Want) -> Result<(RunDir, Loaded), CliError> {
    let run = super::pick_run(ws, run, want)?;
    let loaded = run.load()?;
    Ok((run, loaded))
}

/// A finished run takes no request; the message says what it is and nothing more.
fn not_finished(run: &RunDir, loaded: &Loaded, verb: &str) -> Result<(), CliError> {
    if loaded.state.is_finished() {
        return Err(CliError::user(format!(
            "run {} is {}: there is nothing to {verb}",
            run.id,
            loaded.state.status.as_str()
        ))
        .hint("`agentloop runs` lists the runs of this project"));
    }
    Ok(())
}

fn send(run: &RunDir, loaded: Loaded, request: Request) -> Result<ExitKind, CliError> {
    // Secrets in a note are redacted: the values of this shell's secret variables (in
    // the journal's own append) and those configured for the run's agents.
    let request = match super::run_config(Path::new(&loaded.state.workdir), &loaded.state) {
        Ok(l) => request.redacted(&Redactor::from_env(
            l.config.agents.values().flat_map(|a| a.env.iter()),
        )),
        Err(_) => request,
    };
    let what = crate::describe::request(&request);
    let (rec, state) = run.append_control(loaded, super::request_id("cli"), "cli", request)?;
    match run.lock_holder() {
        Some(pid) => eprintln!(
            "agentloop: {what} · run {} · event {} · driver pid {pid} picks it up",
            run.id, rec.seq
        ),
        None => {
            let settled = run.settle()?.unwrap_or(state);
            eprintln!(
                "agentloop: {what} · run {} · event {} · no driver is running; the run is {} ({})",
                run.id,
                rec.seq,
                settled.status.as_str(),
                crate::describe::goes_on(&settled)
            );
        }
    }
    Ok(ExitKind::Completed)
}

pub fn pause(ws: &Workspace, run: Option<&str>) -> Result<ExitKind, CliError> {
    let (run, loaded) = open(ws, run, Want::Unfinished)?;
    not_finished(&run, &loaded, "pause")?;
    if loaded.state.paused {
        eprintln!("agentloop: run {} is already paused", run.id);
        return Ok(ExitKind::Completed);
    }
    send(&run, loaded, Request::Pause)
}

pub fn stop(ws: &Workspace, run: Option<&str>, now: bool) -> Result<ExitKind, CliError> {
    let (run, loaded) = open(ws, run, Want::Unfinished)?;
    not_finished(&run, &loaded, "stop")?;
    send(
        &run,
        loaded,
        if now { Request::StopNow } else { Request::Stop },
    )
}

pub fn approve(
    ws: &Workspace,
    run: Option<&str>,
    note: Option<String>,
    approve: bool,
) -> Result<ExitKind, CliError> {
    let (run, loaded) = open(ws, run, Want::Gate)?;
    not_finished(&run, &loaded, if approve { "approve" } else { "reject" })?;
    let Some(gate) = loaded.state.gate.clone() else {
        let blocked = loaded
            .state
            .tasks
            .iter()
            .find(|t| t.status == TaskStatus::Blocked)
            .map(|t| t.id.clone());
        let err = CliError::user(format!("run {} is not waiting at a gate", run.id));
        return Err(match blocked {
            Some(t) => err.hint(format!(
                "task {t} is blocked: `agentloop steer \"answer\"` then `agentloop retry {t}`"
            )),
            None => err,
        });
    };
    if !approve && note.is_none() {
        return Err(
            CliError::user("a rejection needs a reason").hint("add `--note \"what is wrong\"`")
        );
    }
    eprintln!("agentloop: gate: {}", gate.describe());
    send(
        &run,
        loaded,
        if approve {
            Request::Approve { note, gate: None }
        } else {
            Request::Reject { note }
        },
    )
}

/// Releases a diff gate by name, open or not yet.
pub fn approve_gate(
    ws: &Workspace,
    run: Option<&str>,
    note: Option<String>,
    gate: String,
) -> Result<ExitKind, CliError> {
    let (run, loaded) = open(ws, run, Want::Unfinished)?;
    not_finished(&run, &loaded, "approve")?;
    let gates = &loaded.state.settings.gates;
    // The agent's own request is refused (and journaled as such) whatever it names.
    if !agentloop_policy::diff_gate_enabled(gates, &gate)
        && run.refused_here(&loaded.state).is_none()
    {
        let on: Vec<&str> = ["security", "database", "external", "architecture", "deploy"]
            .into_iter()
            .filter(|g| agentloop_policy::diff_gate_enabled(gates, g))
            .collect();
        let known = if on.is_empty() {
            "it has no diff gate on".to_string()
        } else {
            format!("its diff gates: {}", on.join(", "))
        };
        return Err(CliError::user(format!(
            "run {} has no {gate} gate: {known}",
            run.id
        ))
        .hint("a diff gate is turned on in agentloop.toml (`[gates.security] enabled = true`); `agentloop approve` alone approves the gate the run waits at"));
    }
    if loaded.state.ship.gates_approved.contains(&gate) {
        eprintln!(
            "agentloop: the {gate} gate of run {} is approved already",
            run.id
        );
        return Ok(ExitKind::Completed);
    }
    eprintln!("agentloop: the {gate} gate of run {}", run.id);
    send(
        &run,
        loaded,
        Request::Approve {
            note,
            gate: Some(gate),
        },
    )
}

pub fn skip_or_retry(
    ws: &Workspace,
    run: Option<&str>,
    task: &str,
    // Some: skip (with its reason, if given); None: retry.
    skip: Option<Option<String>>,
) -> Result<ExitKind, CliError> {
    let (run, loaded) = open(ws, run, Want::Unfinished)?;
    let Some(t) = loaded.state.task(task) else {
        let ids = loaded
            .state
            .tasks
            .iter()
            .map(|t| t.id.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(
            CliError::user(format!("run {} has no task \"{task}\"", run.id))
                .hint(format!("its tasks: {ids}")),
        );
    };
    if skip.is_some() && t.status == TaskStatus::Done {
        return Err(CliError::user(format!(
            "task {task} is done and verified; there is nothing to skip"
        )));
    }
    if loaded.state.status == RunStatus::Completed {
        return Err(CliError::user(format!("run {} is completed", run.id))
            .hint("start a new run with `agentloop run`"));
    }
    let request = match skip {
        Some(reason) => Request::Skip {
            task: task.into(),
            reason: reason.filter(|r| !r.trim().is_empty()),
        },
        None => Request::Retry { task: task.into() },
    };
    send(&run, loaded, request)
}

/// A required skill skipped for the rest of the run, with its reason.
pub fn skip_skill(
    ws: &Workspace,
    run: Option<&str>,
    skill: &str,
    reason: Option<String>,
) -> Result<ExitKind, CliError> {
    let Some(reason) = reason.filter(|r| !r.trim().is_empty()) else {
        return Err(CliError::user(format!(
            "a required skill is skipped only with a reason: --reason \"why {skill} is not needed\""
        )));
    };
    let (run, loaded) = open(ws, run, Want::Unfinished)?;
    if loaded.state.status == RunStatus::Completed {
        return Err(CliError::user(format!("run {} is completed", run.id))
            .hint("start a new run with `agentloop run`"));
    }
    let required: std::collections::BTreeSet<&str> = (loaded.state.settings.skills.values())
        .flatten()
        .map(|s| s.name.as_str())
        .collect();
    if !required.contains(skill) {
        let known = if required.is_empty() {
            "it requires none ([prompt.require_skills])".to_string()
        } else {
            format!(
                "the skills it requires: {}",
                required.into_iter().collect::<Vec<_>>().join(", ")
            )
        };
        return Err(CliError::user(format!(
            "run {} requires no skill \"{skill}\": {known}",
            run.id
        )));
    }
    if loaded.state.skills_skipped.contains_key(skill) {
        eprintln!(
            "agentloop: the skill {skill} is skipped in run {} already",
            run.id
        );
        return Ok(ExitKind::Completed);
    }
    send(
        &run,
        loaded,
        Request::SkipSkill {
            skill: skill.into(),
            reason,
        },
    )
}

pub fn steer(ws: &Workspace, run: Option<&str>, note: String) -> Result<ExitKind, CliError> {
    if note.trim().is_empty() {
        return Err(CliError::user("the note is empty"));
    }
    let (run, loaded) = open(ws, run, Want::Unfinished)?;
    if loaded.state.status == RunStatus::Completed {
        return Err(CliError::user(format!(
            "run {} is completed: there is no next iteration to steer",
            run.id
        ))
        .hint("start a new run with `agentloop run`"));
    }
    if loaded.state.is_finished() {
        eprintln!(
            "agentloop: run {} is {}; the note waits for `agentloop resume`",
            run.id,
            loaded.state.status.as_str()
        );
    }
    send(&run, loaded, Request::Steer { note })
}
