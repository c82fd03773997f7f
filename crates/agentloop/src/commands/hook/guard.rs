//! PreToolUse (installed with `hook install --guard`): denies edits to protected paths
//! and, while a task with a Scope runs, to files outside it.

use std::path::Path;

use agentloop_ground::paths::path_matches;
use agentloop_workspace::Workspace;
use serde_json::{Value, json};

use super::drive::find_run;
use super::input::PreToolUse;

pub(super) fn pre_tool_use(input: &PreToolUse) -> Result<Value, String> {
    let Some(file) = input.edited_file() else {
        return Ok(Value::Null);
    };
    let ws = Workspace::find(&input.common.cwd());
    let Some((_, loaded)) = find_run(&ws, &input.common)? else {
        return Ok(Value::Null);
    };
    let s = &loaded.state;
    let path = Path::new(file);
    let rel = path
        .strip_prefix(&ws.root)
        .unwrap_or(path)
        .display()
        .to_string();
    let deny = |why: String| json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": why}});
    if path.is_absolute() && !path.starts_with(&ws.root) {
        return Ok(deny(format!("agentloop: {file} is outside this project")));
    }
    if let Some(p) = s.settings.protected.iter().find(|p| path_matches(&rel, p)) {
        return Ok(deny(format!(
            "agentloop: {rel} is protected ({p}); verification depends on it"
        )));
    }
    let current = s.current().map(|o| o.started.task.clone());
    if let Some(task) = current.as_deref().and_then(|t| s.plan.task(t))
        && !task.scope.is_empty()
        && !task.scope.iter().any(|p| path_matches(&rel, p))
    {
        return Ok(deny(format!(
            "agentloop: task {} may only change {}; {rel} is outside",
            task.id,
            task.scope.join(", ")
        )));
    }
    Ok(Value::Null)
}
