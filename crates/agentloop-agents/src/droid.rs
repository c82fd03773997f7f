//! Factory Droid: `droid exec -o stream-json --auto high`, the prompt on stdin. JSON
//! lines `system` (init, with the session id), `message` (`role` and `text`),
//! `tool_call` (`toolName`, `parameters`), `tool_result`, and a last `completion`
//! (`finalText`, `numTurns`, `usage` as Claude Code counts it: `input_tokens` without
//! the cached ones) or `error`. Tokens, no dollars (its `factory_credits` are
//! Factory's own unit).

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use serde_json::Value;

use crate::Invocation;
use crate::cli::{CliKind, PromptIn, base_argv};
use crate::parsed::{Parsed, classify, json_lines, u64_at};

/// `permission_mode` that runs it with no `--auto`: its read-only default.
pub const READ_ONLY: &str = "read-only";

/// The tools a read-only Droid is offered.
pub const READING_TOOLS: &str = "Read,Grep,Glob,LS";

/// `droid exec -o stream-json`, the prompt on stdin.
pub const CLI: CliKind = CliKind {
    kind: "droid",
    install: "npm install -g droid",
    prompt: PromptIn::Stdin,
    argv,
    env: &[],
    setup: crate::cli::no_setup,
    own_files: &[],
    parse: parse_stream_json,
    files: crate::cli::no_files,
    finish: crate::cli::keep,
    auth_hint: Some(
        "check FACTORY_API_KEY, or the custom model's `apiKey` in ~/.factory/settings.json",
    ),
};

/// The command line, without a shell; the prompt goes on stdin. `permission_mode` is
/// its `--auto` level (`high` unless set; `read-only`: none, and only its reading
/// tools).
pub fn argv(c: &AgentConfig, _inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("droid", c);
    argv.extend(["exec", "-o", "stream-json"].map(String::from));
    match c.permission_mode.as_deref().unwrap_or("high") {
        // With no `--auto` it still runs a command its model rates "low" risk:
        // offered only the tools that read, it runs none.
        READ_ONLY => argv.extend(["--only-tools".into(), READING_TOOLS.into()]),
        level => argv.extend(["--auto".into(), level.to_string()]),
    }
    if let Some(m) = &c.model {
        argv.extend(["-m".into(), m.clone()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

pub fn parse_stream_json(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut current = String::new();
    for v in json_lines(text) {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
        if let Some(id) = s("session_id") {
            p.session_id = Some(id);
        }
        match v.get("type").and_then(Value::as_str) {
            Some("message") if s("role").as_deref() == Some("assistant") => {
                current = s("text").unwrap_or_default();
            }
            Some("tool_call") => {
                let name = s("toolName")
                    .or_else(|| s("toolId"))
                    .unwrap_or_else(|| "?".into());
                if let Some(f) = v
                    .get("parameters")
                    .and_then(|i| crate::parsed::edited_file(&name, i))
                {
                    p.edits.push(f);
                }
                p.tool_uses.push(name);
                current.clear();
            }
            Some("completion") => {
                if let Some(text) = s("finalText") {
                    current = text;
                }
                p.turns = v.get("numTurns").and_then(Value::as_u64).map(|n| n as u32);
                let u = v.get("usage").unwrap_or(&Value::Null);
                p.usage = Usage {
                    input_tokens: u64_at(u, "input_tokens"),
                    cached_input_tokens: u64_at(u, "cache_read_input_tokens"),
                    cache_write_tokens: u64_at(u, "cache_creation_input_tokens"),
                    output_tokens: u64_at(u, "output_tokens"),
                };
            }
            // The loop's own error ("401 Incorrect API key …") comes first; the CLI's
            // "Exec failed" after it says nothing more.
            Some("error") if p.error.is_none() => {
                let message = s("message").unwrap_or_else(|| "droid reported an error".into());
                p.error = Some(classify(&message, leading_status(&message)));
            }
            _ => {}
        }
    }
    p.final_message = current.trim().to_string();
    p
}

/// The status an error message starts with ("429 Rate limit reached …").
fn leading_status(message: &str) -> Option<u64> {
    message
        .get(..3)?
        .parse::<u64>()
        .ok()
        .filter(|s| (400..600).contains(s) && message[3..].starts_with(' '))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_journal::AgentErrorKind;

    fn inv() -> Invocation<'static> {
        let dir = std::path::Path::new("/tmp");
        crate::invocation_in(dir, dir)
    }

    fn fixture(name: &str) -> String {
        crate::recorded("droid-0.215.0", name)
    }

    /// Recorded against a server that served 300 fresh and 130 cached input tokens
    /// and 30 output tokens over the two calls.
    #[test]
    fn recorded_success() {
        let p = parse_stream_json(&fixture("stream-json-success.jsonl"));
        assert_eq!(p.final_message, "Created hello.txt.\nTASK_COMPLETE");
        assert_eq!(
            p.session_id.as_deref(),
            Some("35d1d28f-f989-44ea-97d9-7046439a58a3")
        );
        assert_eq!(
            p.usage,
            Usage {
                input_tokens: 300,
                cached_input_tokens: 130,
                cache_write_tokens: 0,
                output_tokens: 30
            }
        );
        assert_eq!(p.tool_uses, vec!["Execute"]);
        assert_eq!(p.turns, Some(2));
        assert!(p.error.is_none() && p.cost_usd.is_none());
    }

    #[test]
    fn recorded_401_is_the_loops_error_not_the_clis_exec_failed() {
        let p = parse_stream_json(&fixture("stream-json-auth-error-401.jsonl"));
        let e = p.error.clone().unwrap();
        assert_eq!(e.kind, AgentErrorKind::Auth);
        assert_eq!(e.message, "401 Incorrect API key provided: sk-x.");
        assert_eq!(p.final_message, "");
        let shown = crate::hinted(p.error, &CLI);
        assert!(shown.contains("~/.factory/settings.json"));
    }

    #[test]
    fn recorded_429_is_a_rate_limit_whose_wait_its_text_gives() {
        let p = parse_stream_json(&fixture("stream-json-rate-limited-429.jsonl"));
        let e = p.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::RateLimit);
        assert!(
            e.message.contains("Please try again in 1s"),
            "{}",
            e.message
        );
        assert_eq!(leading_status("Exec failed"), None);
        assert_eq!(leading_status("4000 things"), None);
    }

    /// Without `--auto`, a command it rates above "low" ends the run.
    #[test]
    fn a_refused_command_in_read_only_mode_is_an_error() {
        let p = parse_stream_json(&fixture("stream-json-read-only-refused.jsonl"));
        let e = p.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::Other);
        assert!(
            e.message.contains("insufficient permission"),
            "{}",
            e.message
        );
    }

    #[test]
    fn it_writes_at_the_high_level_unless_held_to_reading() {
        let mut c = AgentConfig::builtin("droid");
        assert_eq!(
            argv(&c, &inv()).join(" "),
            "droid exec -o stream-json --auto high"
        );
        c.permission_mode = Some(READ_ONLY.into());
        c.model = Some("custom:mock-model".into());
        assert_eq!(
            argv(&c, &inv()).join(" "),
            "droid exec -o stream-json --only-tools Read,Grep,Glob,LS -m custom:mock-model"
        );
    }
}
