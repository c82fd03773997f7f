//! Anthropic Messages: streaming SSE on `POST /v1/messages` (Claude Code).

use serde_json::{Value, json};

use super::{Step, event};

/// The error body Anthropic sends.
pub(super) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// Anthropic's unified rate-limit headers, whose reset time Claude Code reports.
pub(super) fn limit_headers(reset: u64) -> Vec<(&'static str, String)> {
    vec![
        ("anthropic-ratelimit-unified-status", "rejected".into()),
        ("anthropic-ratelimit-unified-reset", reset.to_string()),
        ("anthropic-ratelimit-unified-5h-status", "rejected".into()),
        ("anthropic-ratelimit-unified-5h-reset", reset.to_string()),
        (
            "anthropic-ratelimit-unified-representative-claim",
            "five_hour".into(),
        ),
    ]
}

pub(super) fn sse(step: &Step, model: &str, n: usize) -> Vec<u8> {
    let (tokens, block, delta, stop) = match step {
        Step::Text { text, tokens } => (
            *tokens,
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
        Step::Tool {
            name,
            input,
            tokens,
        } => (
            *tokens,
            json!({"type": "tool_use", "id": format!("toolu_mock_{n}"), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            "tool_use",
        ),
        _ => unreachable!("only replies with content are streamed"),
    };
    let mut out = String::new();
    event(
        &mut out,
        "message_start",
        json!({"type": "message_start", "message": {
        "id": format!("msg_mock_{n}"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": tokens.input, "output_tokens": 0,
                  "cache_read_input_tokens": tokens.cache_read, "cache_creation_input_tokens": tokens.cache_write}}}),
    );
    event(
        &mut out,
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    );
    event(
        &mut out,
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
    );
    event(
        &mut out,
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    event(
        &mut out,
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": tokens.output}}),
    );
    event(&mut out, "message_stop", json!({"type": "message_stop"}));
    out.into_bytes()
}
