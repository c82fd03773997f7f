//! OpenCode: `opencode run --format json --auto --title T`, the prompt on stdin. JSON lines
//! `step_start`, `text`, `tool_use`, `step_finish` (with `part.cost` and
//! `part.tokens`) and `error`. It waits out rate limits itself (it honours
//! `retry-after`); its cost is 0 for a model its catalogue has no price for.

use agentloop_config::AgentConfig;
use agentloop_ground::values::Usage;
use serde_json::Value;

use crate::Invocation;
use crate::cli::{CliKind, PromptIn, base_argv, keep};
use crate::parsed::{Parsed, classify, json_lines, u64_at};

/// `opencode run --format json --auto`, the prompt on stdin.
pub const CLI: CliKind = CliKind {
    kind: "opencode",
    install: "npm install -g opencode-ai",
    prompt: PromptIn::Stdin,
    argv,
    // No update in the middle of a run.
    env: &[("OPENCODE_DISABLE_AUTOUPDATE", "true")],
    setup: crate::cli::no_setup,
    own_files: &[],
    parse: parse_json,
    files: crate::cli::no_files,
    finish: keep,
    auth_hint: None,
};

/// The command line, without a shell; the prompt goes on stdin.
pub fn argv(c: &AgentConfig, inv: &Invocation<'_>) -> Vec<String> {
    let mut argv = base_argv("opencode", c);
    argv.extend(["run", "--format", "json", "--auto"].map(String::from));
    // A session with a title is not given one by its small model: two model calls
    // less per iteration, whose tokens its output would never report.
    if !c
        .args
        .iter()
        .any(|a| a == "--title" || a.starts_with("--title="))
    {
        argv.extend([
            "--title".into(),
            format!("agentloop {} #{}", inv.run_id, inv.iteration),
        ]);
    }
    if let Some(m) = &c.model {
        argv.extend(["--model".into(), m.clone()]);
    }
    argv.extend(c.args.iter().cloned());
    argv
}

pub fn parse_json(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut current = String::new();
    let mut cost = 0.0;
    let mut saw_cost = false;
    for v in json_lines(text) {
        let part = v.get("part").unwrap_or(&Value::Null);
        if p.session_id.is_none() {
            p.session_id = v
                .get("sessionID")
                .or_else(|| part.get("sessionID"))
                .and_then(Value::as_str)
                .map(String::from);
        }
        match v.get("type").and_then(Value::as_str) {
            Some("text") => {
                current.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default())
            }
            Some("tool_use") => {
                let name = part.get("tool").and_then(Value::as_str).unwrap_or("?");
                if let Some(f) = part
                    .pointer("/state/input")
                    .and_then(|i| crate::parsed::edited_file(name, i))
                {
                    p.edits.push(f);
                }
                p.tool_uses.push(name.to_string());
                current.clear();
            }
            Some("step_finish") => {
                if let Some(c) = part.get("cost").and_then(Value::as_f64) {
                    cost += c;
                    saw_cost = true;
                }
                let t = part.get("tokens").unwrap_or(&Value::Null);
                let cache = t.get("cache").unwrap_or(&Value::Null);
                p.usage.add(&Usage {
                    input_tokens: u64_at(t, "input"),
                    cached_input_tokens: u64_at(cache, "read"),
                    cache_write_tokens: u64_at(cache, "write"),
                    output_tokens: u64_at(t, "output") + u64_at(t, "reasoning"),
                });
            }
            Some("error") => {
                let message = v
                    .pointer("/error/data/message")
                    .or_else(|| v.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or("opencode reported an error");
                p.error = Some(classify(message, None));
            }
            _ => {}
        }
    }
    p.final_message = current.trim().to_string();
    // A cost of 0 for tokens spent is a model without a price in its catalogue: then
    // `[prices]` decides.
    p.cost_usd = (saw_cost && (cost > 0.0 || p.usage.total() == 0)).then_some(cost);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_journal::AgentErrorKind;

    const RUN: &str = r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","state":{"status":"completed"}}}
{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","cost":0.0021,"tokens":{"input":900,"output":40,"reasoning":10,"cache":{"read":300,"write":0}}}}
{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Created it.\nTASK_COMPLETE"}}
{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","cost":0.0009,"tokens":{"input":1000,"output":20,"reasoning":0,"cache":{"read":800,"write":0}}}}"#;

    #[test]
    fn text_after_the_last_tool_cost_and_tokens_summed() {
        let p = parse_json(RUN);
        assert_eq!(p.final_message, "Created it.\nTASK_COMPLETE");
        assert_eq!(p.session_id.as_deref(), Some("ses_1"));
        assert!((p.cost_usd.unwrap() - 0.003).abs() < 1e-12);
        assert_eq!(
            p.usage,
            Usage {
                input_tokens: 1900,
                cached_input_tokens: 1100,
                cache_write_tokens: 0,
                output_tokens: 70
            }
        );
        assert_eq!(p.tool_uses, vec!["bash"]);
    }

    #[test]
    fn a_zero_cost_for_tokens_spent_leaves_the_price_to_the_table() {
        let text = r#"{"type":"step_finish","sessionID":"s","part":{"type":"step-finish","tokens":{"total":130,"input":100,"output":10,"reasoning":0,"cache":{"write":0,"read":20}},"cost":0}}"#;
        let p = parse_json(text);
        assert_eq!(p.cost_usd, None);
        assert_eq!(p.usage.input_tokens, 100);
    }

    #[test]
    fn errors_are_classified() {
        let text = r#"{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"Rate limit exceeded, retry later","statusCode":429}}}"#;
        assert_eq!(
            parse_json(text).error.unwrap().kind,
            AgentErrorKind::RateLimit
        );
    }
}
