//! `agentloop hook install` / `uninstall`: agentloop's entries in Claude Code's
//! settings, added next to whatever else is there and removed exactly.

use std::path::{Path, PathBuf};

use agentloop_core::workspace::Workspace;
use serde_json::{Value, json};

use super::input::EVENTS;
use crate::error::{CliError, ExitKind};

/// Installed by default. SubagentStop is not: a subagent finishing does not end the
/// session's turn (uninstall still removes it from older installs).
const DEFAULT: [&str; 4] = ["Stop", "SessionStart", "StopFailure", "TaskCompleted"];

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
                && EVENTS
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

/// Adds agentloop's hooks, leaving every other entry alone. `team` adds TeammateIdle
/// (agent teams); `guard` adds the PreToolUse hook that denies edits to protected
/// paths and outside the current task's scope.
pub fn install(cwd: &Path, user: bool, guard: bool, team: bool) -> Result<ExitKind, CliError> {
    let path = settings_path(cwd, user);
    let mut v = read_settings(&path)?;
    let Some(root) = v.as_object_mut() else {
        return Err(CliError::user(format!(
            "{}: not a JSON object",
            path.display()
        )));
    };
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks
        .as_object_mut()
        .ok_or_else(|| CliError::user(format!("{}: `hooks` is not an object", path.display())))?;
    let wanted: Vec<(&str, &str)> = EVENTS
        .iter()
        .filter(|(event, _)| {
            DEFAULT.contains(event)
                || (team && *event == "TeammateIdle")
                || (guard && *event == "PreToolUse")
        })
        .copied()
        .collect();
    let mut added = 0;
    for (event, sub) in &wanted {
        let groups = hooks.entry(*event).or_insert_with(|| json!([]));
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
        wanted.len(),
        path.display()
    );
    eprintln!(
        "  start a hook-mode run with `agentloop hook start`, then work in Claude Code as usual"
    );
    Ok(ExitKind::Completed)
}

/// Removes exactly the entries `install` adds (of any event agentloop handles).
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
    if let Some(root) = v.as_object_mut()
        && let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut)
    {
        for (event, _) in EVENTS {
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
            root.remove("hooks");
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
