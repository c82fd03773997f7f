//! SessionStart: the run that drives this session, its current task and what was
//! learnt so far, as context for the model.

use agentloop_core::journal::Event;
use agentloop_core::policy::{Action, next_action};
use agentloop_core::workspace::Workspace;
use serde_json::{Value, json};

use super::drive::find_run;
use super::input::SessionStart;

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
    let pid = agentloop_core::workspace::origin::claude_ancestor();
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
