//! The plugin's slash commands (`/agentloop:start`, `approve`, `reject`, `pause`,
//! `resume`, `stop`, `status`), done when a person types them: Claude Code sends the
//! command's exact arguments to the UserPromptExpansion hook as JSON, so no argument
//! ever passes through a shell, and the model cannot invoke them (the commands say
//! `disable-model-invocation`, and this event is only for typed commands). What was
//! done reaches the model as context.

use std::path::PathBuf;

use agentloop_journal::{Event, Request};
use agentloop_workspace::{RunDir, Workspace};
use serde_json::{Value, json};

use super::drive::find_run;
use super::input::UserPromptExpansion;
use crate::commands::{Want, pick_run, request_id};

/// The answer that gives the model `text` as context for the expanded command.
pub(super) fn context(text: &str) -> Value {
    json!({ "hookSpecificOutput": { "hookEventName": "UserPromptExpansion", "additionalContext": text } })
}

/// The person in the session is who sent these requests.
const SOURCE: &str = "session";

pub(super) fn expansion(input: &UserPromptExpansion) -> Result<Value, String> {
    let Some(command) = input.command_name.strip_prefix("agentloop:") else {
        return Ok(Value::Null);
    };
    let ws = Workspace::find(&input.common.cwd());
    let args = input.command_args.trim();
    let text = match command {
        "start" => start(&ws, input, args)?,
        "approve" | "reject" => gate(&ws, input, command == "approve", args)?,
        "pause" => control(&ws, input, Request::Pause, "paused")?,
        "resume" => control(&ws, input, Request::Resume, "resumed")?,
        "stop" => control(&ws, input, Request::Stop, "asked to stop")?,
        "status" => status(&ws, input)?,
        other => return Err(format!("there is no /agentloop:{other} command")),
    };
    Ok(context(&text))
}

/// `/agentloop:start [PLAN] [--mode MODE]`: a run bound to this session at once.
fn start(ws: &Workspace, input: &UserPromptExpansion, args: &str) -> Result<String, String> {
    let words = split(args)?;
    let mut plan = PathBuf::from("PLAN.md");
    let mut mode = None;
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "--mode" => mode = Some(it.next().ok_or("--mode needs a value")?),
            w if w.starts_with("--mode=") => mode = Some(w["--mode=".len()..].to_string()),
            w if w.starts_with('-') => return Err(format!("unknown option `{w}`")),
            _ => plan = PathBuf::from(w),
        }
    }
    let made = super::create_run(&ws.root, &plan, mode, false, false, SOURCE)
        .map_err(|e| describe(e.message, e.hint))?;
    let (run, tasks) = (made.run, made.tasks);
    let session = input.common.session()?.to_string();
    let loaded = run.load().map_err(|e| e.to_string())?;
    loaded
        .writer(&run)
        .and_then(|mut w| {
            w.append(&Event::SessionBound {
                session_id: session,
                pid: agentloop_workspace::origin::claude_ancestor(),
            })
            .map_err(Into::into)
        })
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "agentloop started run {} of {} ({}) and it drives this session. Reply briefly that you are ready; when you stop, agentloop gives you the first task, verifies your work itself after each task, and gives you the next one.",
        run.id,
        plan.display(),
        agentloop_ground::words::plural(tasks, "task", "tasks")
    ))
}

/// The run this session's commands act on: the one it drives, else the one of the
/// project that can take the request.
fn target(ws: &Workspace, input: &UserPromptExpansion, want: Want) -> Result<RunDir, String> {
    if let Some((run, _)) = find_run(ws, &input.common)? {
        return Ok(run);
    }
    pick_run(ws, None, want).map_err(|e| describe(e.message, e.hint))
}

fn gate(
    ws: &Workspace,
    input: &UserPromptExpansion,
    approve: bool,
    note: &str,
) -> Result<String, String> {
    let run = target(ws, input, Want::Gate)?;
    let loaded = run.load().map_err(|e| e.to_string())?;
    let Some(gate) = loaded.state.gate.clone() else {
        return Err(format!("run {} is not waiting at a gate", run.id));
    };
    let note = (!note.is_empty()).then(|| note.to_string());
    if !approve && note.is_none() {
        return Err("a rejection needs a reason: /agentloop:reject what is wrong".into());
    }
    let request = if approve {
        Request::Approve { note, gate: None }
    } else {
        Request::Reject { note }
    };
    run.append_control(loaded, request_id(SOURCE), SOURCE, request)
        .map_err(|e| e.to_string())?;
    run.settle().map_err(|e| e.to_string())?;
    Ok(format!(
        "A person {} at the gate \"{}\" of run {}. Stop now: agentloop gives you the next step.",
        if approve {
            "approved"
        } else {
            "rejected the work"
        },
        gate.describe(),
        run.id
    ))
}

fn control(
    ws: &Workspace,
    input: &UserPromptExpansion,
    request: Request,
    done: &str,
) -> Result<String, String> {
    let run = target(ws, input, Want::Unfinished)?;
    let loaded = run.load().map_err(|e| e.to_string())?;
    if loaded.state.is_finished() && request != Request::Resume {
        return Err(format!(
            "run {} is {}",
            run.id,
            loaded.state.status.as_str()
        ));
    }
    run.append_control(loaded, request_id(SOURCE), SOURCE, request)
        .map_err(|e| e.to_string())?;
    let s = run.settle().map_err(|e| e.to_string())?;
    let status = s.map(|s| s.status.as_str()).unwrap_or("running");
    Ok(format!(
        "A person {done} agentloop run {} (now {status}). Say so in one line and stop.",
        run.id
    ))
}

fn status(ws: &Workspace, input: &UserPromptExpansion) -> Result<String, String> {
    let run = target(ws, input, Want::Unfinished)?;
    let s = run.load().map_err(|e| e.to_string())?.state;
    let mut text = format!(
        "agentloop run {}: {} · {}/{} tasks done · {} · {}",
        s.run_id,
        s.status.as_str(),
        s.done_count(),
        s.tasks.len(),
        agentloop_ground::words::plural(s.iterations as usize, "iteration", "iterations"),
        agentloop_ground::words::money(s.cost_usd)
    );
    if let Some(g) = &s.gate {
        text.push_str(&format!("\nWaiting for a person: {}", g.describe()));
    }
    for t in s.tasks.iter().filter(|t| t.blocked.is_some()) {
        text.push_str(&format!(
            "\nTask {} is blocked: {}",
            t.id,
            t.blocked_headline().unwrap_or("")
        ));
    }
    text.push_str("\nSummarize this for the person in two lines.");
    Ok(text)
}

fn describe(message: String, hint: Option<String>) -> String {
    match hint {
        Some(h) => format!("{message} ({h})"),
        None => message,
    }
}

/// Splits command arguments into words like a shell would, without expanding or running
/// anything: whitespace separates, quotes group, a backslash escapes one character.
fn split(args: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                word.push(chars.next().ok_or("a backslash at the end")?);
                in_word = true;
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("a quote is not closed".into());
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn arguments_split_like_words_and_nothing_runs() {
        assert_eq!(
            split(r#"docs/my plan.md --mode tdd"#).unwrap(),
            ["docs/my", "plan.md", "--mode", "tdd"]
        );
        assert_eq!(
            split(r#""docs/my plan.md" --mode=tdd"#).unwrap(),
            ["docs/my plan.md", "--mode=tdd"]
        );
        assert_eq!(
            split(r#"'$(touch x)' `date` it\'s"#).unwrap(),
            ["$(touch x)", "`date`", "it's"]
        );
        assert!(split("'open").is_err());
    }
}
