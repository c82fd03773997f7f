//! Claude Code: the output of `claude -p --output-format stream-json --verbose`.
//!
//! The last line is the result object. A failed call can say `subtype: "success"`
//! with `is_error: true` (a recorded 429 does), so `is_error` is checked first.

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use serde_json::Value;

use crate::Invocation;
use crate::cli::{CliKind, PromptIn, base_argv, keep};
use crate::parsed::{Parsed, classify, json_lines, u64_at};

/// Tools granted by default: enough to edit code and run commands, nothing that
/// reaches the network.
pub const DEFAULT_ALLOWED: &[&str] = &[
    "Bash",
    "Edit",
    "MultiEdit",
    "Write",
    "Read",
    "Glob",
    "Grep",
    "LS",
];
pub const DEFAULT_DISALLOWED: &[&str] = &["WebFetch", "WebSearch"];

/// `claude -p`, one fresh process per iteration, the prompt on stdin.
pub const CLI: CliKind = CliKind {
    kind: "claude",
    install: "npm install -g @anthropic-ai/claude-code",
    prompt: PromptIn::Stdin,
    argv,
    env: &[],
    setup: crate::cli::no_setup,
    own_files: &[],
    parse: parse_stream_json,
    files: crate::cli::no_files,
    finish: keep,
    auth_hint: None,
};

/// The command line, without a shell; the prompt goes on stdin.
pub fn argv(c: &AgentConfig, _inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("claude", c);
    argv.extend(["-p", "--output-format", "stream-json", "--verbose"].map(String::from));
    if let Some(m) = &c.model {
        argv.extend(["--model".into(), m.clone()]);
    }
    if let Some(n) = c.max_turns {
        argv.extend(["--max-turns".into(), n.to_string()]);
    }
    if let Some(mode) = &c.permission_mode {
        argv.extend(["--permission-mode".into(), mode.clone()]);
    }
    let allowed = c
        .allowed_tools
        .clone()
        .unwrap_or_else(|| DEFAULT_ALLOWED.iter().map(|s| s.to_string()).collect());
    if !allowed.is_empty() {
        argv.extend(["--allowedTools".into(), allowed.join(",")]);
    }
    let denied = c
        .disallowed_tools
        .clone()
        .unwrap_or_else(|| DEFAULT_DISALLOWED.iter().map(|s| s.to_string()).collect());
    if !denied.is_empty() {
        argv.extend(["--disallowedTools".into(), denied.join(",")]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

pub fn parse_stream_json(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut last_text = String::new();
    let mut rate_limited: Option<String> = None;
    for v in json_lines(text) {
        match v.get("type").and_then(Value::as_str) {
            Some("system") => {
                if let Some(id) = v.get("session_id").and_then(Value::as_str) {
                    p.session_id = Some(id.to_string());
                }
            }
            Some("assistant") => {
                for block in v
                    .pointer("/message/content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            last_text = block
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string();
                        }
                        Some("tool_use") => {
                            let name = block.get("name").and_then(Value::as_str).unwrap_or("?");
                            if let Some(f) = block
                                .get("input")
                                .and_then(|i| crate::parsed::edited_file(name, i))
                            {
                                p.edits.push(f);
                            }
                            p.tool_uses.push(name.to_string());
                        }
                        _ => {}
                    }
                }
            }
            Some("rate_limit_event") => {
                let info = v.get("rate_limit_info").unwrap_or(&Value::Null);
                let status = info
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if status != "allowed" && !status.is_empty() {
                    // `resetsAt` is in Unix seconds.
                    p.resets_at_ms = info
                        .get("resetsAt")
                        .and_then(Value::as_u64)
                        .map(|s| s * 1000);
                    let resets = info
                        .get("resetsAt")
                        .map(|r| format!(" · resets at {r}"))
                        .unwrap_or_default();
                    rate_limited = Some(format!("usage limit: {status}{resets}"));
                }
            }
            Some("result") => {
                p.final_message = v
                    .get("result")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if let Some(id) = v.get("session_id").and_then(Value::as_str) {
                    p.session_id = Some(id.to_string());
                }
                p.cost_usd = v.get("total_cost_usd").and_then(Value::as_f64);
                p.turns = v.get("num_turns").and_then(Value::as_u64).map(|n| n as u32);
                let u = v.get("usage").unwrap_or(&Value::Null);
                p.usage = Usage {
                    input_tokens: u64_at(u, "input_tokens"),
                    cached_input_tokens: u64_at(u, "cache_read_input_tokens"),
                    cache_write_tokens: u64_at(u, "cache_creation_input_tokens"),
                    output_tokens: u64_at(u, "output_tokens"),
                };
                let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                let subtype = v.get("subtype").and_then(Value::as_str).unwrap_or_default();
                if is_error || subtype.starts_with("error") {
                    let status = v.get("api_error_status").and_then(Value::as_u64);
                    let message = if p.final_message.is_empty() {
                        subtype.to_string()
                    } else {
                        p.final_message.clone()
                    };
                    p.error = Some(classify(&message, status));
                }
            }
            _ => {}
        }
    }
    if p.final_message.is_empty() {
        p.final_message = last_text;
    }
    if p.error.is_none()
        && let Some(m) = rate_limited
    {
        p.error = Some(classify(&m, Some(429)));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_journal::AgentErrorKind;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/claude-code-2.1.197")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn recorded_success() {
        let p = parse_stream_json(&fixture("print-stream-json-success.jsonl"));
        assert_eq!(p.final_message, "Done. TASK_COMPLETE");
        assert_eq!(
            p.session_id.as_deref(),
            Some("6f9322fd-45a7-474b-8756-52c6767a3d77")
        );
        assert_eq!(p.cost_usd, Some(0.002));
        assert_eq!(
            p.usage,
            Usage {
                input_tokens: 200,
                cached_input_tokens: 0,
                cache_write_tokens: 0,
                output_tokens: 40
            }
        );
        assert_eq!(p.turns, Some(2));
        assert_eq!(p.tool_uses, vec!["Bash"]);
        assert!(p.error.is_none());
    }

    #[test]
    fn recorded_429_is_a_rate_limit_despite_subtype_success() {
        let p = parse_stream_json(&fixture("print-stream-json-rate-limited-429.jsonl"));
        let e = p.error.expect("is_error is checked before subtype");
        assert_eq!(e.kind, AgentErrorKind::RateLimit);
        assert!(
            e.message.starts_with("API Error: Request rejected (429)"),
            "{}",
            e.message
        );
    }

    #[test]
    fn usage_limit_text_and_other_errors() {
        let line = |status: &str, text: &str| {
            format!(
                r#"{{"type":"result","subtype":"success","is_error":true,"api_error_status":{status},"result":"{text}","usage":{{}}}}"#
            )
        };
        let kind = |s: &str| parse_stream_json(s).error.unwrap().kind;
        assert_eq!(
            kind(&line(
                "null",
                "You've hit your session limit · resets 3:45pm"
            )),
            AgentErrorKind::RateLimit
        );
        assert_eq!(
            kind(&line("529", "API Error: overloaded")),
            AgentErrorKind::Overloaded
        );
        assert_eq!(
            kind(&line("401", "Invalid API key · Please run /login")),
            AgentErrorKind::Auth
        );
        assert_eq!(
            kind(&line("400", "Your credit balance is too low")),
            AgentErrorKind::Billing
        );
        let max_turns = r#"{"type":"result","subtype":"error_max_turns","is_error":false,"result":"","usage":{}}"#;
        assert_eq!(kind(max_turns), AgentErrorKind::Other);
    }
}
