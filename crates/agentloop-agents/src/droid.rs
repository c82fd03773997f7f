//! Factory Droid: `droid exec -o stream-json --auto high`, the prompt on stdin. JSON
//! lines `system` (init, with the session id), `message` (`role` and `text`),
//! `tool_call` (`toolName`, `parameters`), `tool_result`, and a last `completion`
//! (`finalText`, `numTurns`, `usage` as Claude Code counts it: `input_tokens` without
//! the cached ones) or `error`. Tokens, no dollars (its `factory_credits` are
//! Factory's own unit).

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use agentloop_journal::AgentErrorKind;
use serde_json::Value;

use crate::cli::{CliKind, PromptIn, base_argv};
use crate::parsed::{Parsed, classify, json_lines, u64_at};
use crate::{AgentRun, Invocation};

/// `permission_mode` that runs it with no `--auto`: its read-only default.
pub const READ_ONLY: &str = "read-only";

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
    finish,
};

/// The command line, without a shell; the prompt goes on stdin. `permission_mode` is
/// its `--auto` level (`high` unless set; `read-only`: none, so it only reads).
pub fn argv(c: &AgentConfig, _inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("droid", c);
    argv.extend(["exec", "-o", "stream-json"].map(String::from));
    match c.permission_mode.as_deref().unwrap_or("high") {
        READ_ONLY => {}
        level => argv.extend(["--auto".into(), level.to_string()]),
    }
    if let Some(m) = &c.model {
        argv.extend(["-m".into(), m.clone()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

/// What to do about a refused key.
fn finish(run: &mut AgentRun) {
    if let Some(e) = run
        .error
        .as_mut()
        .filter(|e| e.kind == AgentErrorKind::Auth)
    {
        e.message = format!(
            "{} (droid: check FACTORY_API_KEY, or the custom model's `apiKey` in ~/.factory/settings.json)",
            e.message.trim_end_matches('.')
        );
    }
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
            Some("error") => {
                let message = s("message")
                    .or_else(|| {
                        v.pointer("/error/message")
                            .and_then(Value::as_str)
                            .map(String::from)
                    })
                    .unwrap_or_else(|| "droid reported an error".into());
                p.error = Some(classify(&message, None));
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

    fn inv() -> Invocation<'static> {
        let dir = std::path::Path::new("/tmp");
        Invocation {
            run_id: "r",
            run_dir: dir,
            iteration: 1,
            workdir: dir,
            prompt: "p",
            prompt_file: dir,
            log: dir,
            pid_file: dir,
            wrap: Vec::new(),
        }
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
            "droid exec -o stream-json -m custom:mock-model"
        );
    }
}
