//! A session's transcript, read for hook mode, where no result object reports usage:
//! the tokens of every model call written after a point, and the cost at the model's
//! price. Claude Code's (JSONL, one line per content block: each assistant message
//! counted once) and Codex's rollout (`event_msg` lines of type `token_count` with the
//! `last_token_usage` of each call, `turn_context` lines naming the model), and Gemini
//! CLI's chat file (`gemini` lines with `tokens` and `model`).

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use agentloop_config::Price;
use agentloop_ground::values::Usage;
use serde_json::Value;

use crate::parsed::u64_at;

/// What the session spent after a byte offset of its transcript.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    pub usage: Usage,
    /// The model of the last assistant message.
    pub model: Option<String>,
}

/// The transcript's length now: where the next iteration's spending starts.
pub fn end_of(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Waits, at most `within`, until the transcript after byte `from` holds the turn's
/// final message (its last non-empty line, as the transcript's JSON spells it). Claude
/// Code writes its transcript behind its hooks: a Stop hook can run before the turn's
/// lines are in the file, and reading then would count none of what the turn spent.
/// True once they are there. False at once when there is no message to wait for or no
/// transcript; and once what was written after `from` has not grown for a moment (the
/// CLI wrote the turn and it does not spell the message that way): a Stop hook is on
/// the session's path and does not wait out the whole bound for nothing.
pub fn await_turn(path: &Path, from: u64, final_message: &str, within: Duration) -> bool {
    const SETTLED: Duration = Duration::from_millis(250);
    let Some(last) = final_message.lines().rev().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let quoted = serde_json::to_string(last.trim()).unwrap_or_default();
    let needle = quoted.trim_matches('"');
    let start = Instant::now();
    let mut seen = (0, start);
    loop {
        let mut text = String::new();
        let read = std::fs::File::open(path).and_then(|mut f| {
            f.seek(SeekFrom::Start(from))?;
            f.read_to_string(&mut text)
        });
        if read.is_err() {
            return false;
        }
        if text.contains(needle) {
            return true;
        }
        if text.len() != seen.0 {
            seen = (text.len(), Instant::now());
        } else if !text.is_empty() && seen.1.elapsed() >= SETTLED {
            return false;
        }
        if start.elapsed() >= within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sums the usage of the assistant messages in `path` after byte `from` (a message
/// split over several lines carries the same usage on each: it counts once).
pub fn spent_since(path: &Path, from: u64) -> Spent {
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|mut f| {
        f.seek(SeekFrom::Start(from))?;
        f.read_to_string(&mut text)
    });
    let mut spent = Spent::default();
    if read.is_err() {
        return spent;
    }
    let mut seen = HashSet::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("assistant") => {}
            Some("event_msg") | Some("turn_context") => {
                codex_line(&v, &mut spent);
                continue;
            }
            Some("gemini") => {
                // Gemini CLI writes a message with tool calls again once they ran,
                // with the same id and tokens: it counts once.
                let id = v.get("id").and_then(Value::as_str).unwrap_or_default();
                if id.is_empty() || seen.insert(format!("gemini:{id}")) {
                    gemini_line(&v, &mut spent);
                }
                continue;
            }
            _ => continue,
        }
        let Some(m) = v.get("message") else { continue };
        let id = m.get("id").and_then(Value::as_str).unwrap_or_default();
        if !id.is_empty() && !seen.insert(id.to_string()) {
            continue;
        }
        let u = m.get("usage").unwrap_or(&Value::Null);
        spent.usage.add(&Usage {
            input_tokens: u64_at(u, "input_tokens"),
            cached_input_tokens: u64_at(u, "cache_read_input_tokens"),
            cache_write_tokens: u64_at(u, "cache_creation_input_tokens"),
            output_tokens: u64_at(u, "output_tokens"),
        });
        if let Some(model) = m.get("model").and_then(Value::as_str) {
            spent.model = Some(model.to_string());
        }
    }
    spent
}

/// One answer in a Gemini CLI chat file: its tokens (thinking is billed as output)
/// and model.
fn gemini_line(v: &Value, spent: &mut Spent) {
    let t = v.get("tokens").unwrap_or(&Value::Null);
    spent.usage.add(&Usage {
        input_tokens: u64_at(t, "input").saturating_sub(u64_at(t, "cached")),
        cached_input_tokens: u64_at(t, "cached"),
        cache_write_tokens: 0,
        output_tokens: u64_at(t, "output") + u64_at(t, "thoughts"),
    });
    if let Some(model) = v.get("model").and_then(Value::as_str) {
        spent.model = Some(model.to_string());
    }
}

/// One line of a Codex rollout: a model call's tokens, or the model of the turn.
fn codex_line(v: &Value, spent: &mut Spent) {
    let payload = v.get("payload").unwrap_or(&Value::Null);
    if v.get("type").and_then(Value::as_str) == Some("turn_context") {
        if let Some(model) = payload.get("model").and_then(Value::as_str) {
            spent.model = Some(model.to_string());
        }
        return;
    }
    if payload.get("type").and_then(Value::as_str) != Some("token_count") {
        return;
    }
    let Some(u) = payload.pointer("/info/last_token_usage") else {
        return;
    };
    // Codex counts cached tokens inside input_tokens; keep them apart.
    spent.usage.add(&Usage {
        input_tokens: u64_at(u, "input_tokens").saturating_sub(u64_at(u, "cached_input_tokens")),
        cached_input_tokens: u64_at(u, "cached_input_tokens"),
        cache_write_tokens: u64_at(u, "cache_write_input_tokens"),
        output_tokens: u64_at(u, "output_tokens"),
    });
}

/// Anthropic's list prices for Claude models, in USD per million tokens (input, cache
/// reads, output), for hook mode where Claude Code reports no cost. A `[prices.MODEL]`
/// table in the configuration takes precedence.
pub fn list_price(model: &str) -> Option<Price> {
    let price = |input: f64, cached_input: f64, output: f64| Price {
        input,
        cached_input,
        output,
    };
    let m = model.to_ascii_lowercase();
    if m.contains("opus-4-5") || m.contains("opus-4.5") {
        Some(price(5.0, 0.5, 25.0))
    } else if m.contains("opus") {
        Some(price(15.0, 1.5, 75.0))
    } else if m.contains("sonnet") {
        Some(price(3.0, 0.3, 15.0))
    } else if m.contains("haiku-4") || m.contains("haiku-4.5") {
        Some(price(1.0, 0.1, 5.0))
    } else if m.contains("haiku") {
        Some(price(0.8, 0.08, 4.0))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_transcript_counts_each_message_once() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../../../shared/fixtures/claude-code-2.1.197/transcript-with-stop-hook-blocks.jsonl",
        );
        let all = spent_since(&path, 0);
        assert_eq!(all.usage.input_tokens, 600, "six assistant messages of 100");
        assert_eq!(all.usage.output_tokens, 120);
        assert_eq!(all.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(spent_since(&path, end_of(&path)), Spent::default());
        let cost = list_price("claude-sonnet-4-5").unwrap().cost(&all.usage);
        assert!(
            (cost - (600.0 * 3.0 + 120.0 * 15.0) / 1e6).abs() < 1e-12,
            "{cost}"
        );
    }

    #[test]
    fn the_turn_is_awaited_until_its_final_message_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let before = r#"{"type":"assistant","message":{"id":"a","content":[{"type":"text","text":"Ready."}]}}"#;
        std::fs::write(&path, format!("{before}\n")).unwrap();
        let from = end_of(&path);
        let message = "Done: \"a.txt\" written.\nTASK_COMPLETE";
        let short = Duration::from_millis(30);
        assert!(!await_turn(&path, from, message, short), "not written yet");
        assert!(await_turn(&path, 0, "Ready.\n\n", Duration::ZERO));
        assert!(
            !await_turn(&path, from, "  \n", Duration::from_secs(5)),
            "nothing to wait for"
        );
        // No transcript, or one whose turn is written but spells the message otherwise:
        // no long wait.
        let t = std::time::Instant::now();
        assert!(!await_turn(
            &dir.path().join("none.jsonl"),
            0,
            "x",
            Duration::from_secs(5)
        ));
        assert!(!await_turn(&path, 0, "never said", Duration::from_secs(5)));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        // Written by another thread a little later: the wait sees it.
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                let line = r#"{"type":"assistant","message":{"id":"b","content":[{"type":"text","text":"Done: \"a.txt\" written.\nTASK_COMPLETE"}]}}"#;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
            })
        };
        assert!(await_turn(&path, from, message, Duration::from_secs(5)));
        writer.join().unwrap();
    }

    #[test]
    fn a_gemini_message_written_twice_counts_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.jsonl");
        let call = r#"{"type":"gemini","id":"m1","model":"gemini-3.1-pro-preview","tokens":{"input":100,"cached":20,"output":5,"thoughts":3},"toolCalls":[{"id":"t1"}]}"#;
        let answer = r#"{"type":"gemini","id":"m2","model":"gemini-3.1-pro-preview","tokens":{"input":120,"cached":0,"output":7,"thoughts":0}}"#;
        std::fs::write(&path, format!("{call}\n{call}\n{answer}\n")).unwrap();
        let all = spent_since(&path, 0);
        assert_eq!(all.usage.input_tokens, 80 + 120);
        assert_eq!(all.usage.cached_input_tokens, 20);
        assert_eq!(all.usage.output_tokens, 8 + 7);
    }

    #[test]
    fn a_recorded_codex_rollout_counts_each_model_call() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/codex-0.169.0/rollout-with-stop-hook-blocks.jsonl");
        let all = spent_since(&path, 0);
        assert_eq!(all.usage.input_tokens, 20, "calls of 10, 10 and 0");
        assert_eq!(all.usage.output_tokens, 2);
        assert_eq!(all.model.as_deref(), Some("mock-model"));
        assert_eq!(spent_since(&path, end_of(&path)), Spent::default());
    }
}
