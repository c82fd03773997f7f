//! Gemini CLI: `gemini -o stream-json --approval-mode=yolo`, the prompt on stdin (it
//! runs headless when stdin is not a terminal). Events `init`, `message` (assistant
//! chunks with `delta`), `tool_use`, `tool_result`, `error`, and a final `result` with
//! `status` and `stats` (per model under `models`: its router picks them). Tokens, no
//! cost.

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use agentloop_journal::{AgentError, AgentErrorKind};
use serde_json::Value;

use crate::cli::{CliKind, PromptIn, base_argv};
use crate::parsed::{Parsed, classify, json_lines, u64_at};
use crate::{AgentRun, Invocation};

/// `gemini -o stream-json`, the prompt on stdin, in a folder it trusts.
pub const CLI: CliKind = CliKind {
    kind: "gemini",
    install: "npm install -g @google/gemini-cli",
    prompt: PromptIn::Stdin,
    argv,
    // Headless runs refuse a folder the user has not trusted (exit 55); agentloop's
    // work tree is one by definition.
    env: &[("GEMINI_CLI_TRUST_WORKSPACE", "true")],
    setup: crate::cli::no_setup,
    own_files: &[],
    parse: parse_stream_json,
    files: crate::cli::no_files,
    finish,
    auth_hint: None,
};

/// The command line, without a shell; the prompt goes on stdin.
pub fn argv(c: &AgentConfig, _inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("gemini", c);
    argv.extend(["-o", "stream-json", "--approval-mode=yolo"].map(String::from));
    if let Some(m) = &c.model {
        argv.extend(["-m".into(), m.clone()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

/// Gemini's exit codes say what kind of failure it was when its output did not, and
/// what to do about it.
fn finish(run: &mut AgentRun) {
    let Some(code) = run.finished.exit_code else {
        return;
    };
    let Some((kind, meaning)) = exit_meaning(code) else {
        return;
    };
    match &mut run.error {
        Some(e) if e.kind != AgentErrorKind::Other => {}
        // Only the generic "exited N without a result": the meaning says more.
        Some(e) if e.message.starts_with(&format!("gemini exited {code}")) => {
            e.kind = kind;
            e.message = format!("gemini exited {code}: {meaning}");
        }
        Some(e) => {
            e.kind = kind;
            e.message = format!("gemini exited {code} ({meaning}): {}", e.message);
        }
        None => {
            run.error = Some(AgentError {
                kind,
                message: format!("gemini exited {code}: {meaning}"),
            })
        }
    }
}

/// What Gemini's exit codes mean: the documented ones, and those 0.61.0 was seen to use.
pub fn exit_meaning(code: i32) -> Option<(AgentErrorKind, &'static str)> {
    Some(match code {
        41 => (
            AgentErrorKind::Auth,
            "authentication failed: set GEMINI_API_KEY (or GOOGLE_API_KEY with Vertex AI) and choose the matching auth type in ~/.gemini/settings.json",
        ),
        42 => (AgentErrorKind::Other, "the input was refused"),
        52 => (
            AgentErrorKind::Other,
            "its configuration is invalid (~/.gemini/settings.json or .gemini/settings.json)",
        ),
        53 => (AgentErrorKind::Other, "it reached its turn limit"),
        54 => (AgentErrorKind::Other, "a tool failed"),
        55 => (
            AgentErrorKind::Other,
            "the folder is not trusted; set GEMINI_CLI_TRUST_WORKSPACE=true or pass --skip-trust",
        ),
        130 => (AgentErrorKind::Other, "interrupted"),
        145 => (
            AgentErrorKind::Auth,
            "the API refused the key (HTTP 401): check GEMINI_API_KEY",
        ),
        173 => (
            AgentErrorKind::RateLimit,
            "rate limited (HTTP 429, resource exhausted)",
        ),
        _ => return None,
    })
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
                let name = s("tool_name").unwrap_or_else(|| "?".into());
                if let Some(f) = v
                    .get("parameters")
                    .and_then(|i| crate::parsed::edited_file(&name, i))
                {
                    p.edits.push(f);
                }
                p.tool_uses.push(name);
                // What the model says after its last tool call is the final message.
                current.clear();
            }
            Some("error") => last_error = s("message"),
            Some("result") => {
                let stats = v.get("stats").unwrap_or(&Value::Null);
                p.usage = usage_of(stats);
                p.by_model = stats
                    .get("models")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(model, s)| (model.clone(), usage_of(s)))
                    .filter(|(_, u)| u.total() > 0)
                    .collect();
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

/// `input_tokens` counts the cached ones too.
fn usage_of(stats: &Value) -> Usage {
    let cached = u64_at(stats, "cached").max(u64_at(stats, "cached_input_tokens"));
    Usage {
        input_tokens: u64_at(stats, "input_tokens").saturating_sub(cached),
        cached_input_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: u64_at(stats, "output_tokens"),
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
    fn the_real_gemini_names_the_models_its_router_picked() {
        let p = parse_stream_json(include_str!(
            "../fixtures/gemini-0.61.0/stream-json-routed.jsonl"
        ));
        assert_eq!(p.final_message, "Done.\nTASK_COMPLETE");
        assert_eq!(p.usage.input_tokens, 300);
        assert_eq!(p.usage.cached_input_tokens, 70);
        // The router's own model used no tokens and is left out.
        assert_eq!(p.by_model.len(), 1);
        assert_eq!(p.by_model[0].0, "gemini-3.1-pro-preview");
        assert_eq!(p.by_model[0].1, p.usage);
    }

    #[test]
    fn an_exit_code_alone_says_what_went_wrong_and_what_to_do() {
        let mut run = AgentRun::default();
        run.finished.exit_code = Some(55);
        run.error = Some(AgentError {
            kind: AgentErrorKind::Other,
            message: "gemini exited 55 without a result".into(),
        });
        finish(&mut run);
        let e = run.error.unwrap();
        assert_eq!(
            e.message,
            "gemini exited 55: the folder is not trusted; set GEMINI_CLI_TRUST_WORKSPACE=true or pass --skip-trust"
        );
        assert!(!e.message.contains("Some("));
        let mut run = AgentRun::default();
        run.finished.exit_code = Some(41);
        finish(&mut run);
        let e = run.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::Auth);
        assert!(
            e.message
                .starts_with("gemini exited 41: authentication failed")
        );
    }

    #[test]
    fn quota_errors_are_limits() {
        let text = r#"{"type":"error","severity":"error","message":"Quota exceeded for quota metric 'Generate Content API requests per minute' (429)"}
{"type":"result","status":"error","error":{"type":"api","message":"You have exhausted your daily quota; rate limit reached"},"stats":{}}"#;
        assert_eq!(
            parse_stream_json(text).error.unwrap().kind,
            AgentErrorKind::RateLimit
        );
        assert_eq!(exit_meaning(41).unwrap().0, AgentErrorKind::Auth);
        assert_eq!(exit_meaning(145).unwrap().0, AgentErrorKind::Auth);
        assert_eq!(exit_meaning(173).unwrap().0, AgentErrorKind::RateLimit);
        assert!(exit_meaning(55).unwrap().1.contains("not trusted"));
    }
}
