//! SessionStart: the run that drives this session, its current task and what was
//! learnt so far, as context for the model.

use agentloop_journal::Event;
use agentloop_policy::{Action, next_action};
use agentloop_workspace::Workspace;
use serde_json::{Value, json};

use super::drive::{find_run, open_driver};
use super::input::{SessionEnd, SessionStart};

pub(super) fn start(input: &SessionStart) -> Result<Value, String> {
    let session = input.common.session()?;
    let ws = Workspace::find(&input.common.cwd());
    let Some((run, loaded)) = find_run(&ws, &input.common)? else {
        return Ok(Value::Null);
    };
    // The session claims the run now, so the context below is true: this session,
    // and no other, is the one the run drives.
    let mut s = loaded.state.clone();
    // A resumed session runs in a new process: the run learns it at once, so what the
    // model runs from it is known as the model's (a person's request is not).
    let pid = agentloop_workspace::origin::claude_ancestor();
    let moved = s.session.as_deref() == Some(session) && pid.is_some() && pid != s.session_pid;
    if s.session.is_none() || moved {
        let mut w = loaded.writer(&run).map_err(|e| e.to_string())?;
        let recs = w
            .append(&Event::SessionBound {
                session_id: session.to_string(),
                pid,
            })
            .map_err(|e| e.to_string())?;
        for r in &recs {
            s.apply(r);
        }
        if s.session.as_deref() != Some(session) {
            // Another session claimed it first.
            return Ok(Value::Null);
        }
    }
    let task = s
        .current()
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
    // The gate it waits at, or the one the policy opens before anything else happens.
    let gate = s.gate.clone().or_else(|| match next_action(&s) {
        Action::Record(Event::GateOpened { gate }) => Some(gate),
        _ => None,
    });
    if let Some(g) = &gate {
        context.push_str(&format!(
            "\nThe run waits for a person: {}. Until they decide (`/agentloop:approve` or `agentloop approve` in a terminal), there is no task for you.\n",
            g.describe()
        ));
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

/// SessionEnd: the session that drives the run is gone, the run not finished. What it
/// left pending is committed when `[git] commit` is on (seed 004: "commit any pending
/// changes"; the message says it is not verified), and the handoff is written in any
/// case, so whoever goes on — the next session, `resume --headless`, a person — starts
/// from it.
pub(super) fn end(input: &SessionEnd) -> Result<Value, String> {
    let session = input.common.session()?.to_string();
    let ws = Workspace::find(&input.common.cwd());
    let Some((run, loaded)) = find_run(&ws, &input.common)? else {
        return Ok(Value::Null);
    };
    // Only the session the run is bound to speaks for it.
    if loaded.state.session.as_deref() != Some(session.as_str()) {
        return Ok(Value::Null);
    }
    let mut d = open_driver(&ws, run, loaded)?;
    let s = &d.state;
    let pending = s.settings.commit
        && agentloop_exec::git::is_repo(&ws.root)
        && agentloop_exec::git::run(
            &ws.root,
            &["status", "--porcelain", "--untracked-files=all"],
        )
        .is_ok_and(|out| !out.trim().is_empty());
    let commit = if pending {
        let task = s
            .open_task()
            .or_else(|| s.next_task_except(&[]).map(|t| t.id.as_str()))
            .map(|t| format!("task {t}"))
            .unwrap_or_else(|| "no task open".into());
        let message = format!(
            "agentloop: changes pending when the session ended ({task}; not verified)\n\nRun {}",
            d.run.id
        );
        agentloop_exec::git::commit_all(&ws.root, &message)
            .map_err(|e| format!("cannot commit the pending changes: {e}"))
            .ok()
    } else {
        None
    };
    d.record(Event::SessionEnded {
        session_id: session,
        reason: input.reason.clone().unwrap_or_else(|| "other".into()),
        commit,
    })
    .map_err(|e| e.message)?;
    d.flush();
    d.write_handoff();
    Ok(Value::Null)
}
