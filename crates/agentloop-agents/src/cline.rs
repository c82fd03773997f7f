//! Cline CLI: `cline --json "…"` with the prompt on stdin, which it appends to the
//! short prompt on its command line (with `--json` it needs one there). JSON lines:
//! `hook_event` (with the session's `taskId`), `agent_event` (`content_start` /
//! `content_end` of text and tools, `usage`, `error` with its `errorClass`, `done`)
//! and a last `run_result` (`finishReason`, `text`, `usage` and `aggregateUsage` with
//! its agents', `model`). Its `inputTokens` counts the cached ones too. No hub daemon:
//! without `CLINE_SESSION_BACKEND_MODE=local` a run starts one in a session of its own
//! that outlives it, and later runs work inside it, in its environment.

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use serde_json::Value;

use crate::Invocation;
use crate::cli::{CliKind, PromptIn, base_argv};
use crate::parsed::{Parsed, classify, json_lines, u64_at};

/// The `permission_mode` that runs it in its plan mode (`-p`).
pub const PLAN: &str = "plan";

/// What its command line says; the task follows on stdin.
pub const LEAD: &str = "Do the task described below.";

/// `cline --json`, the prompt on stdin.
pub const CLI: CliKind = CliKind {
    kind: "cline",
    install: "npm install -g cline",
    prompt: PromptIn::Stdin,
    argv,
    env: &[("CLINE_SESSION_BACKEND_MODE", "local")],
    setup: crate::cli::no_setup,
    own_files: &[],
    parse: parse_json,
    files: crate::cli::no_files,
    finish: crate::cli::keep,
    auth_hint: Some(
        "`cline auth` again, or check the provider's key in ~/.cline/data/settings/providers.json",
    ),
};

/// The command line, without a shell. `permission_mode = "plan"` is its plan mode
/// (`-p`), which drops its editor and refuses the commands it knows to write, but is no
/// sandbox: a script it runs still writes.
pub fn argv(c: &AgentConfig, _inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("cline", c);
    argv.push("--json".into());
    if c.permission_mode.as_deref() == Some(PLAN) {
        argv.push("-p".into());
    }
    if let Some(m) = &c.model {
        argv.extend(["-m".into(), m.clone()]);
    }
    argv.extend(c.args.iter().cloned());
    argv.push(LEAD.into());
    argv
}

pub fn parse_json(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut current = String::new();
    let mut auth = false;
    for v in json_lines(text) {
        match v.get("type").and_then(Value::as_str) {
            Some("hook_event") if p.session_id.is_none() => {
                p.session_id = v.get("taskId").and_then(Value::as_str).map(String::from);
            }
            Some("agent_event") => {
                let e = &v["event"];
                match (e["type"].as_str(), e["contentType"].as_str()) {
                    (Some("content_start"), Some("tool")) => {
                        let name = e["toolName"].as_str().unwrap_or("?").to_string();
                        if let Some(f) = crate::parsed::edited_file(&name, &e["input"]) {
                            p.edits.push(f);
                        }
                        p.tool_uses.push(name);
                        current.clear();
                    }
                    (Some("content_end"), Some("text")) => {
                        current = e["text"].as_str().unwrap_or_default().to_string();
                    }
                    (Some("error"), _) => auth |= e["errorClass"].as_str() == Some("auth"),
                    _ => {}
                }
            }
            Some("run_result") => {
                if let Some(t) = v["text"].as_str() {
                    current = t.to_string();
                }
                p.turns = v["iterations"].as_u64().map(|n| n as u32);
                // Its agents' too, where it ran any.
                let u = v.get("aggregateUsage").unwrap_or(&v["usage"]);
                let cached = u64_at(u, "cacheReadTokens");
                p.usage = Usage {
                    input_tokens: u64_at(u, "inputTokens").saturating_sub(cached),
                    cached_input_tokens: cached,
                    cache_write_tokens: u64_at(u, "cacheWriteTokens"),
                    output_tokens: u64_at(u, "outputTokens"),
                };
                p.cost_usd = u["totalCost"].as_f64().filter(|c| *c > 0.0);
                if let Some(model) = v.pointer("/model/id").and_then(Value::as_str)
                    && p.usage.total() > 0
                {
                    p.by_model = vec![(model.to_string(), p.usage)];
                }
                if v["finishReason"].as_str() == Some("error") {
                    // Its text is the error, no answer.
                    let message = std::mem::take(&mut current);
                    p.error = Some(classify(&message, auth.then_some(401)));
                }
            }
            _ => {}
        }
    }
    p.final_message = current.trim().to_string();
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_journal::AgentErrorKind;

    fn fixture(name: &str) -> String {
        crate::recorded("cline-3.0.65", name)
    }

    /// Recorded against a server that served 1,000 + 1,200 fresh and 800 cached input
    /// tokens and 100 + 50 output tokens.
    #[test]
    fn recorded_success_its_tokens_without_the_cached_ones_twice() {
        let p = parse_json(&fixture("json-success.jsonl"));
        assert_eq!(p.final_message, "Created hello.txt.\nTASK_COMPLETE");
        assert_eq!(p.session_id.as_deref(), Some("conv_1796585143035_ta3m65x"));
        let want = Usage {
            input_tokens: 2200,
            cached_input_tokens: 800,
            cache_write_tokens: 0,
            output_tokens: 150,
        };
        assert_eq!(p.usage, want);
        assert_eq!(p.by_model, vec![("mock-model".to_string(), want)]);
        assert_eq!(p.tool_uses, vec!["run_commands"]);
        assert_eq!(p.turns, Some(2));
        assert!(p.error.is_none() && p.cost_usd.is_none());
    }

    #[test]
    fn recorded_401_is_an_auth_error_with_what_to_do() {
        let p = parse_json(&fixture("json-auth-error-401.jsonl"));
        let e = p.error.clone().unwrap();
        assert_eq!(e.kind, AgentErrorKind::Auth);
        assert_eq!(e.message, "Incorrect API key provided: sk-x.");
        assert_eq!(p.final_message, "");
        let shown = crate::hinted(p.error, &CLI);
        assert!(shown.contains("`cline auth`"));
    }

    #[test]
    fn recorded_429_is_a_rate_limit() {
        let p = parse_json(&fixture("json-rate-limited-429.jsonl"));
        let e = p.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::RateLimit);
        assert!(
            e.message.contains("Please try again in 1s"),
            "{}",
            e.message
        );
    }

    #[test]
    fn the_prompt_follows_its_short_lead_on_stdin() {
        let dir = std::path::Path::new("/tmp");
        let inv = crate::invocation_in(dir, dir);
        let mut c = AgentConfig::builtin("cline");
        assert_eq!(argv(&c, &inv), ["cline", "--json", LEAD]);
        c.permission_mode = Some("plan".into());
        c.model = Some("mock-model".into());
        assert_eq!(
            argv(&c, &inv),
            ["cline", "--json", "-p", "-m", "mock-model", LEAD]
        );
    }
}
