//! GitHub Copilot CLI: `copilot --output-format json --allow-all-tools`, the prompt on
//! stdin. JSON lines: `assistant.message` (its `content` and `toolRequests`),
//! `session.error` (`errorType` authentication, rate_limit, …, with `statusCode`), and
//! a last `result` with the `sessionId` and `exitCode`. Tokens are not in its output
//! but in the file `--usage-output-file` names, per model (`modelMetrics`); the cost of
//! a custom provider's model comes from `[prices]`.

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use agentloop_journal::AgentErrorKind;
use serde_json::Value;

use crate::Invocation;
use crate::cli::{CliKind, PromptIn, base_argv, keep};
use crate::parsed::{Parsed, classify, json_lines, u64_at};

/// `copilot --output-format json`, the prompt on stdin, its usage in the iteration.
pub const CLI: CliKind = CliKind {
    kind: "copilot",
    install: "npm install -g @github/copilot",
    prompt: PromptIn::Stdin,
    argv,
    env: &[],
    setup: crate::cli::no_setup,
    own_files: &[],
    parse: parse_json,
    files: read_usage,
    finish: keep,
    auth_hint: None,
};

/// Where its usage statistics go: beside the iteration's prompt.
const USAGE_FILE: &str = "copilot-usage.json";

/// The command line, without a shell; the prompt goes on stdin.
pub fn argv(c: &AgentConfig, inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("copilot", c);
    argv.extend(
        [
            "--output-format",
            "json",
            "--allow-all-tools",
            "--no-auto-update",
        ]
        .map(String::from),
    );
    argv.extend([
        "--usage-output-file".into(),
        inv.prompt_file
            .with_file_name(USAGE_FILE)
            .to_string_lossy()
            .into_owned(),
    ]);
    if let Some(m) = &c.model {
        argv.extend(["--model".into(), m.clone()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

pub fn parse_json(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut current = String::new();
    for v in json_lines(text) {
        let data = v.get("data").unwrap_or(&Value::Null);
        match v.get("type").and_then(Value::as_str) {
            Some("assistant.message") => {
                let requests = data
                    .get("toolRequests")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for r in &requests {
                    let name = r.get("name").and_then(Value::as_str).unwrap_or("?");
                    if let Some(f) = r
                        .get("arguments")
                        .and_then(|i| crate::parsed::edited_file(name, i))
                    {
                        p.edits.push(f);
                    }
                    p.tool_uses.push(name.into());
                }
                // What it says after its last tool call is the final message.
                current = if requests.is_empty() {
                    data.get("content")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                } else {
                    String::new()
                };
            }
            Some("session.error") => {
                let message = data
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("copilot reported an error");
                let mut e = classify(message, data.get("statusCode").and_then(Value::as_u64));
                match data.get("errorType").and_then(Value::as_str) {
                    Some("authentication") => e.kind = AgentErrorKind::Auth,
                    Some("rate_limit") => e.kind = AgentErrorKind::RateLimit,
                    _ => {}
                }
                p.error = Some(e);
            }
            Some("result") => {
                p.session_id = v.get("sessionId").and_then(Value::as_str).map(String::from);
            }
            _ => {}
        }
    }
    p.final_message = current.trim().to_string();
    p
}

/// Tokens per model from the usage file (`inputTokens` counts the cached ones too).
pub fn usage_from(stats: &Value) -> Vec<(String, Usage)> {
    stats
        .get("modelMetrics")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(model, m)| {
            let u = m.get("usage").unwrap_or(&Value::Null);
            let cached = u64_at(u, "cacheReadTokens");
            let usage = Usage {
                input_tokens: u64_at(u, "inputTokens").saturating_sub(cached),
                cached_input_tokens: cached,
                cache_write_tokens: u64_at(u, "cacheWriteTokens"),
                output_tokens: u64_at(u, "outputTokens"),
            };
            (model.clone(), usage)
        })
        .filter(|(_, u)| u.total() > 0)
        .collect()
}

fn read_usage(inv: &Invocation<'_>, p: &mut Parsed) {
    let path = inv.prompt_file.with_file_name(USAGE_FILE);
    let Some(stats) = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    else {
        return;
    };
    p.by_model = usage_from(&stats);
    p.usage = Usage::default();
    for (_, u) in &p.by_model {
        p.usage.add(u);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_copilot_says_what_it_did() {
        let p = parse_json(include_str!(
            "../fixtures/copilot-1.0.102/json-success.jsonl"
        ));
        assert_eq!(p.final_message, "Done.\nTASK_COMPLETE");
        assert_eq!(p.tool_uses, vec!["bash"]);
        assert!(p.session_id.as_deref().is_some_and(|s| s.len() == 36));
        assert!(p.error.is_none());
        let stats: Value = serde_json::from_str(include_str!(
            "../fixtures/copilot-1.0.102/usage-output-file.json"
        ))
        .unwrap();
        let by_model = usage_from(&stats);
        assert_eq!(
            by_model,
            vec![(
                "mock-model".to_string(),
                Usage {
                    input_tokens: 300,
                    cached_input_tokens: 70,
                    cache_write_tokens: 0,
                    output_tokens: 30
                }
            )]
        );
    }

    #[test]
    fn its_errors_are_sorted() {
        let p = parse_json(include_str!(
            "../fixtures/copilot-1.0.102/json-auth-error-401.jsonl"
        ));
        let e = p.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::Auth);
        assert!(
            e.message.contains("COPILOT_PROVIDER_API_KEY"),
            "{}",
            e.message
        );
        let p = parse_json(include_str!(
            "../fixtures/copilot-1.0.102/json-rate-limited-429.jsonl"
        ));
        let e = p.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::RateLimit);
        assert!(
            e.message.contains("Please try again in 1s"),
            "{}",
            e.message
        );
    }
}
