//! SessionStart: the run that drives this session, its current task and what was
//! learnt so far, as context for the model.

use agentloop_core::workspace::Workspace;
use serde_json::{Value, json};

use super::drive::find_run;
use super::input::SessionStart;

pub(super) fn start(input: &SessionStart) -> Result<Value, String> {
    let session = input.common.session()?;
    let ws = Workspace::find(&input.common.cwd());
    let Some((_, loaded)) = find_run(&ws, session)? else {
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
