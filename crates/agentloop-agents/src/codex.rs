//! Codex CLI: the JSON lines of `codex exec --json`. Codex reports tokens, not cost.

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use serde_json::Value;

use crate::Invocation;
use crate::cli::{CliKind, PromptIn, base_argv, keep};
use crate::parsed::{Parsed, classify, json_lines, u64_at};

/// `codex exec --json`, one fresh process per iteration, the prompt on stdin. It reports
/// tokens, not cost: the configured price of the model decides.
pub const CLI: CliKind = CliKind {
    kind: "codex",
    install: "npm install -g @openai/codex",
    prompt: PromptIn::Stdin,
    argv,
    env: &[],
    setup: crate::cli::no_setup,
    own_files: &[],
    parse: parse_exec_json,
    files: crate::cli::no_files,
    finish: keep,
    auth_hint: None,
};

/// The command line, without a shell; the prompt goes on stdin.
pub fn argv(c: &AgentConfig, _inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("codex", c);
    argv.extend(["exec", "--json", "--skip-git-repo-check"].map(String::from));
    if let Some(m) = &c.model {
        argv.extend(["-m".into(), m.clone()]);
    }
    argv.extend([
        "--sandbox".into(),
        c.sandbox
            .clone()
            .unwrap_or_else(|| "workspace-write".into()),
    ]);
    argv.extend(c.args.iter().cloned());
    argv.push("-".into());
    argv
}

pub fn parse_exec_json(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut failure: Option<String> = None;
    let mut last_error: Option<String> = None;
    for v in json_lines(text) {
        match v.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                p.session_id = v.get("thread_id").and_then(Value::as_str).map(String::from)
            }
            Some("item.completed") => {
                let item = v.get("item").unwrap_or(&Value::Null);
                match item.get("type").and_then(Value::as_str) {
                    Some("agent_message") => {
                        p.final_message = item
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                    }
                    Some("command_execution") => p.tool_uses.push("exec_command".into()),
                    Some("file_change") => {
                        p.tool_uses.push("file_change".into());
                        p.edits.extend(
                            item.get("changes")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .filter_map(|c| c.get("path").and_then(Value::as_str))
                                .map(String::from),
                        );
                    }
                    Some("error") => {
                        last_error = item
                            .get("message")
                            .and_then(Value::as_str)
                            .map(String::from)
                    }
                    _ => {}
                }
            }
            Some("turn.completed") => {
                let u = v.get("usage").unwrap_or(&Value::Null);
                // Codex counts cached tokens inside input_tokens; keep them apart.
                p.usage.add(&Usage {
                    input_tokens: u64_at(u, "input_tokens")
                        .saturating_sub(u64_at(u, "cached_input_tokens")),
                    cached_input_tokens: u64_at(u, "cached_input_tokens"),
                    cache_write_tokens: u64_at(u, "cache_write_input_tokens"),
                    output_tokens: u64_at(u, "output_tokens"),
                });
                p.turns = Some(p.turns.unwrap_or(0) + 1);
            }
            Some("turn.failed") => {
                failure = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .or_else(|| last_error.clone())
                    .or_else(|| Some("the turn failed".into()));
            }
            Some("error") => {
                last_error = v.get("message").and_then(Value::as_str).map(String::from)
            }
            _ => {}
        }
    }
    if let Some(m) = failure {
        p.error = Some(classify(&m, None));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_journal::AgentErrorKind;

    #[test]
    fn recorded_success() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/codex-0.169.0/exec-json-success.jsonl");
        let p = parse_exec_json(&std::fs::read_to_string(path).unwrap());
        assert_eq!(p.final_message, "Done. TASK_COMPLETE");
        assert_eq!(
            p.session_id.as_deref(),
            Some("01a202cf-7535-7d71-8c16-c239f7929d6b")
        );
        assert_eq!(
            p.usage,
            Usage {
                input_tokens: 120,
                cached_input_tokens: 0,
                cache_write_tokens: 0,
                output_tokens: 7
            }
        );
        assert_eq!(p.cost_usd, None, "codex reports no cost");
        assert!(
            p.error.is_none(),
            "an error item alone (model metadata warning) is not a failure"
        );
    }

    #[test]
    fn usage_limit_turn_failure() {
        let text = r#"{"type":"thread.started","thread_id":"t"}
{"type":"error","message":"You've hit your usage limit. Upgrade to Pro or try again at 4:12 PM."}
{"type":"turn.failed","error":{"message":"You've hit your usage limit. Upgrade to Pro or try again at 4:12 PM."}}"#;
        let p = parse_exec_json(text);
        assert_eq!(p.error.unwrap().kind, AgentErrorKind::RateLimit);
    }
}
