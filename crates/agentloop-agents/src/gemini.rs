//! Gemini CLI: `gemini -p PROMPT -o stream-json --approval-mode=yolo`. Events `init`,
//! `message` (assistant chunks with `delta`), `tool_use`, `tool_result`, `error`, and
//! a final `result` with `status` and `stats`. Tokens, no cost.

use agentloop_core::config::AgentConfig;
use agentloop_core::journal::AgentErrorKind;
use agentloop_core::values::Usage;
use serde_json::Value;

use crate::AgentRun;
use crate::cli::{CliKind, PromptIn, base_argv};
use crate::parsed::{Parsed, classify, json_lines, u64_at};

/// `gemini -p PROMPT -o stream-json`, the prompt by argument.
pub const CLI: CliKind = CliKind {
    kind: "gemini",
    install: "npm install -g @google/gemini-cli",
    prompt: PromptIn::Argv,
    argv,
    parse: parse_stream_json,
    finish,
};

/// The command line, without a shell.
pub fn argv(c: &AgentConfig, prompt: &str) -> Vec<String> {
    let mut argv = base_argv("gemini", c);
    argv.extend([
        "-p".into(),
        prompt.to_string(),
        "-o".into(),
        "stream-json".into(),
        "--approval-mode=yolo".into(),
    ]);
    if let Some(m) = &c.model {
        argv.extend(["-m".into(), m.clone()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

/// Gemini's exit codes say what kind of failure it was when its output did not.
fn finish(run: &mut AgentRun) {
    if let Some(kind) = run.finished.exit_code.and_then(error_for_exit)
        && run
            .error
            .as_ref()
            .is_none_or(|e| e.kind == AgentErrorKind::Other)
    {
        let message = format!(
            "gemini exited {}: authentication failed",
            run.finished.exit_code.unwrap_or(0)
        );
        run.error = Some(agentloop_core::journal::AgentError { kind, message });
    }
}

pub fn parse_stream_json(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut current = String::new();
    let mut last_error: Option<String> = None;
    for v in json_lines(text) {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
        match v.get("type").and_then(Value::as_str) {
            Some("init") => p.session_id = s("session_id").or_else(|| s("sessionId")),
            Some("message") if s("role").as_deref() == Some("assistant") => {
                let content = s("content").unwrap_or_default();
                if v.get("delta").and_then(Value::as_bool).unwrap_or(false) {
                    current.push_str(&content);
                } else {
                    current = content;
                }
            }
            Some("tool_use") => {
                p.tool_uses
                    .push(s("tool_name").unwrap_or_else(|| "?".into()));
                // What the model says after its last tool call is the final message.
                current.clear();
            }
            Some("error") => last_error = s("message"),
            Some("result") => {
                let stats = v.get("stats").unwrap_or(&Value::Null);
                let cached = u64_at(stats, "cached").max(u64_at(stats, "cached_input_tokens"));
                p.usage = Usage {
                    input_tokens: u64_at(stats, "input_tokens").saturating_sub(cached),
                    cached_input_tokens: cached,
                    cache_write_tokens: 0,
                    output_tokens: u64_at(stats, "output_tokens"),
                };
                if s("status").as_deref() == Some("error") {
                    let message = v
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(String::from)
                        .or(last_error.clone())
                        .unwrap_or_else(|| "gemini reported an error".into());
                    p.error = Some(classify(&message, None));
                }
            }
            _ => {}
        }
    }
    p.final_message = current.trim().to_string();
    p
}

/// Gemini's documented exit codes say what kind of failure it was.
pub fn error_for_exit(code: i32) -> Option<AgentErrorKind> {
    match code {
        41 => Some(AgentErrorKind::Auth),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUCCESS: &str = r#"{"type":"init","timestamp":"2026-11-22T10:00:00.000Z","session_id":"g-1","model":"gemini-2.5-pro"}
{"type":"message","role":"user","content":"do it"}
{"type":"message","role":"assistant","content":"Let me write the file.","delta":true}
{"type":"tool_use","tool_name":"write_file","tool_id":"t1","parameters":{"file_path":"a.txt","content":"a"}}
{"type":"tool_result","tool_id":"t1","status":"success","output":"ok"}
{"type":"message","role":"assistant","content":"Done.\n","delta":true}
{"type":"message","role":"assistant","content":"TASK_COMPLETE","delta":true}
{"type":"result","status":"success","stats":{"total_tokens":1300,"input_tokens":1200,"output_tokens":100,"cached":200,"duration_ms":900,"tool_calls":1}}"#;

    #[test]
    fn final_message_after_the_last_tool_and_tokens() {
        let p = parse_stream_json(SUCCESS);
        assert_eq!(p.final_message, "Done.\nTASK_COMPLETE");
        assert_eq!(p.session_id.as_deref(), Some("g-1"));
        assert_eq!(
            p.usage,
            Usage {
                input_tokens: 1000,
                cached_input_tokens: 200,
                cache_write_tokens: 0,
                output_tokens: 100
            }
        );
        assert_eq!(p.tool_uses, vec!["write_file"]);
        assert!(p.error.is_none() && p.cost_usd.is_none());
    }

    #[test]
    fn quota_errors_are_limits() {
        let text = r#"{"type":"error","severity":"error","message":"Quota exceeded for quota metric 'Generate Content API requests per minute' (429)"}
{"type":"result","status":"error","error":{"type":"api","message":"You have exhausted your daily quota; rate limit reached"},"stats":{}}"#;
        assert_eq!(
            parse_stream_json(text).error.unwrap().kind,
            AgentErrorKind::RateLimit
        );
        assert_eq!(error_for_exit(41), Some(AgentErrorKind::Auth));
    }
}
