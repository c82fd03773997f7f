//! Qwen Code: `qwen -o stream-json --approval-mode yolo`, the prompt on stdin (it runs
//! one-shot when stdin is not a terminal). Its stream is Claude Code's shape (`system`
//! init, `assistant` and `user` messages with content blocks, a last `result`), with
//! two differences read here: `input_tokens` counts the cached ones too, and a failed
//! run's text is in `result.error.message` ("[API Error: 401 …]"). Tokens, no cost.

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use serde_json::Value;

use crate::Invocation;
use crate::cli::{CliKind, PromptIn, base_argv};
use crate::parsed::{Parsed, classify, json_lines, u64_at};

/// `qwen -o stream-json`, the prompt on stdin.
pub const CLI: CliKind = CliKind {
    kind: "qwen",
    install: "npm install -g @qwen-code/qwen-code",
    prompt: PromptIn::Stdin,
    argv,
    env: &[],
    setup,
    own_files: &[],
    parse: parse_stream_json,
    files: crate::cli::no_files,
    finish: crate::cli::keep,
    auth_hint: Some(
        "check the key of its auth type, OPENAI_API_KEY for `openai`, or `security.auth` in ~/.qwen/settings.json",
    ),
};

/// The command line, without a shell; the prompt goes on stdin. `permission_mode`
/// is its `--approval-mode` (`plan` only reads).
pub fn argv(c: &AgentConfig, _inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("qwen", c);
    let mode = c.permission_mode.as_deref().unwrap_or("yolo");
    argv.extend(["-o", "stream-json", "--approval-mode", mode].map(String::from));
    if let Some(m) = &c.model {
        argv.extend(["-m".into(), m.clone()]);
    }
    if let Some(n) = c.max_turns {
        argv.extend(["--max-session-turns".into(), n.to_string()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

/// Settings below the user's own (its "system defaults" layer): no managed
/// auto-memory. On by default, it runs an agent of its own after each session (model
/// calls that read the conversation and write memories under `~/.qwen`) and brings
/// them into later sessions, so a fresh iteration would start from what an earlier
/// one claimed. A user who turns it on in their settings has it.
pub const DEFAULTS: &str =
    r#"{"memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false}}"#;

/// The approval mode that only reads.
pub const PLAN: &str = "plan";

/// The highest settings layer of a read-only run: folder trust on, so that the work
/// tree (not among the trusted folders, whose list is agentloop's own and empty) is
/// untrusted and its `.env` is not loaded. A worker's `.env` could otherwise point
/// `QWEN_SYSTEM_MD` at a system prompt of its own for the reviewer.
pub const READ_ONLY_SETTINGS: &str = r#"{"security": {"folderTrust": {"enabled": true}}}"#;

/// Writes [`DEFAULTS`] beside the iteration's log and names it; for a read-only run
/// also [`READ_ONLY_SETTINGS`], an empty list of trusted folders, and Qwen Code's own
/// system prompt.
fn setup(c: &AgentConfig, inv: &Invocation<'_>) -> Vec<(&'static str, String)> {
    let at = |name: &str| inv.log.with_file_name(name);
    let written = |name: &str, text: &str| {
        let path = at(name);
        // Its directory holds the log, so this fails only with the disk; then Qwen
        // runs with its own defaults.
        std::fs::write(&path, text)
            .ok()
            .map(|()| path.display().to_string())
    };
    let mut env = Vec::new();
    if let Some(path) = written("qwen-defaults.json", DEFAULTS) {
        env.push(("QWEN_CODE_SYSTEM_DEFAULTS_PATH", path));
    }
    if c.permission_mode.as_deref() == Some(PLAN) {
        if let Some(path) = written("qwen-settings.json", READ_ONLY_SETTINGS) {
            env.push(("QWEN_CODE_SYSTEM_SETTINGS_PATH", path));
        }
        let trusted = at("qwen-trusted-folders.json").display().to_string();
        env.push(("QWEN_CODE_TRUSTED_FOLDERS_PATH", trusted));
        env.push(("QWEN_SYSTEM_MD", "0".into()));
        env.push(("QWEN_SYSTEM_IDENTITY_MD", "0".into()));
    }
    env
}

pub fn parse_stream_json(text: &str) -> Parsed {
    // The messages, tools and session id are read as Claude Code's.
    let mut p = crate::claude::parse_stream_json(text);
    p.cost_usd = None;
    p.error = None;
    let Some(result) = json_lines(text)
        .filter(|v| v.get("type").and_then(Value::as_str) == Some("result"))
        .last()
    else {
        return p;
    };
    let u = &result["usage"];
    let cached = u64_at(u, "cache_read_input_tokens");
    p.usage = Usage {
        input_tokens: u64_at(u, "input_tokens").saturating_sub(cached),
        cached_input_tokens: cached,
        cache_write_tokens: u64_at(u, "cache_creation_input_tokens"),
        output_tokens: u64_at(u, "output_tokens"),
    };
    // The tokens are the model's its init line names, so `[prices]` finds it whatever
    // chose it (its settings, `-m`, a variable).
    if let Some(model) = init_model(text).filter(|_| p.usage.total() > 0) {
        p.by_model = vec![(model, p.usage)];
    }
    let failed = result["is_error"].as_bool().unwrap_or(false)
        || result["subtype"]
            .as_str()
            .is_some_and(|s| s.starts_with("error"));
    if failed {
        let message = result
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| {
                format!(
                    "qwen reported {}",
                    result["subtype"].as_str().unwrap_or("an error")
                )
            });
        // The error's text is what the last message said, not the agent's answer.
        if result.get("result").is_none() {
            p.final_message.clear();
        }
        p.error = Some(classify(&message, api_status(&message)));
    }
    p
}

/// The model the `system` init line says the session uses.
fn init_model(text: &str) -> Option<String> {
    json_lines(text)
        .find(|v| v.get("type").and_then(Value::as_str) == Some("system"))?
        .get("model")?
        .as_str()
        .map(String::from)
}

/// The status in "[API Error: 429 Rate limit reached …]".
fn api_status(message: &str) -> Option<u64> {
    let rest = &message[message.find("API Error: ")? + "API Error: ".len()..];
    rest.get(..3)?
        .parse::<u64>()
        .ok()
        .filter(|s| (400..600).contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_journal::AgentErrorKind;

    const DIR: &str = "qwen-0.24.4";

    fn fixture(name: &str) -> String {
        crate::recorded(DIR, name)
    }

    /// Recorded against a server that served 1,000 + 1,200 fresh and 800 cached input
    /// tokens and 100 + 50 output tokens.
    #[test]
    fn recorded_success_its_tokens_without_the_cached_ones_twice() {
        let p = parse_stream_json(&fixture("stream-json-success.jsonl"));
        assert_eq!(p.final_message, "Created hello.txt.\nTASK_COMPLETE");
        assert_eq!(
            p.session_id.as_deref(),
            Some("f8c007cd-7e08-4d44-b411-1f283e1625b2")
        );
        let want = Usage {
            input_tokens: 2200,
            cached_input_tokens: 800,
            cache_write_tokens: 0,
            output_tokens: 150,
        };
        assert_eq!(p.usage, want);
        assert_eq!(p.by_model, vec![("mock-model".to_string(), want)]);
        assert_eq!(p.tool_uses, vec!["run_shell_command"]);
        assert_eq!(p.turns, Some(2));
        assert!(p.error.is_none() && p.cost_usd.is_none());
    }

    #[test]
    fn recorded_401_is_an_auth_error_with_what_to_check() {
        let p = parse_stream_json(&fixture("stream-json-auth-error-401.jsonl"));
        let e = p.error.clone().unwrap();
        assert_eq!(e.kind, AgentErrorKind::Auth);
        assert_eq!(
            e.message,
            "[API Error: 401 Incorrect API key provided: sk-x.]"
        );
        assert_eq!(p.final_message, "", "the error is no answer");
        let shown = crate::hinted(p.error, &CLI);
        assert!(shown.contains("OPENAI_API_KEY"), "says what to fix");
    }

    #[test]
    fn recorded_429_is_a_rate_limit_whose_wait_its_text_gives() {
        let p = parse_stream_json(&fixture("stream-json-rate-limited-429.jsonl"));
        let e = p.error.unwrap();
        assert_eq!(e.kind, AgentErrorKind::RateLimit);
        let now = jiff::Zoned::now();
        let at = crate::parsed::retry_in_from_text(&e.message, &now).unwrap();
        let wait = at as i64 - now.timestamp().as_millisecond();
        assert!((1900..=2100).contains(&wait), "{wait} ms");
    }

    #[test]
    fn a_read_only_run_is_in_an_untrusted_folder_with_its_own_system_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("agent.log");
        let inv = crate::invocation_in(dir.path(), &log);
        let mut c = AgentConfig::builtin("qwen");
        fn names(env: &[(&'static str, String)]) -> Vec<&'static str> {
            env.iter().map(|(k, _)| *k).collect()
        }
        let worker = setup(&c, &inv);
        assert_eq!(names(&worker), ["QWEN_CODE_SYSTEM_DEFAULTS_PATH"]);
        assert_eq!(std::fs::read_to_string(&worker[0].1).unwrap(), DEFAULTS);
        c.permission_mode = Some(PLAN.into());
        let reader = setup(&c, &inv);
        assert_eq!(
            names(&reader),
            [
                "QWEN_CODE_SYSTEM_DEFAULTS_PATH",
                "QWEN_CODE_SYSTEM_SETTINGS_PATH",
                "QWEN_CODE_TRUSTED_FOLDERS_PATH",
                "QWEN_SYSTEM_MD",
                "QWEN_SYSTEM_IDENTITY_MD"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(&reader[1].1).unwrap(),
            READ_ONLY_SETTINGS
        );
        assert!(
            !std::path::Path::new(&reader[2].1).exists(),
            "no folder is trusted"
        );
    }

    #[test]
    fn the_approval_mode_and_turns_are_its_own_flags() {
        let mut c = AgentConfig::builtin("qwen");
        let inv_dir = std::path::Path::new("/tmp");
        let inv = crate::invocation_in(inv_dir, inv_dir);
        assert_eq!(
            argv(&c, &inv),
            ["qwen", "-o", "stream-json", "--approval-mode", "yolo"]
        );
        c.permission_mode = Some("plan".into());
        c.model = Some("qwen3-coder-plus".into());
        c.max_turns = Some(40);
        assert_eq!(
            argv(&c, &inv).join(" "),
            "qwen -o stream-json --approval-mode plan -m qwen3-coder-plus --max-session-turns 40"
        );
    }
}
