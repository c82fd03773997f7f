//! OpenAI Responses: streaming SSE on `POST /v1/responses` (Codex). Its error body and
//! rate-limit headers are OpenAI's for Chat Completions too.

use serde_json::{Value, json};

use super::{Step, event};

/// The error body OpenAI sends.
pub(super) fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"type": kind, "code": kind, "message": message, "param": null}})
}

/// OpenAI's rate-limit headers: the requests left and when they come back.
pub(super) fn limit_headers(retry_after: u64) -> Vec<(&'static str, String)> {
    vec![
        ("x-ratelimit-limit-requests", "60".into()),
        ("x-ratelimit-remaining-requests", "0".into()),
        ("x-ratelimit-reset-requests", format!("{retry_after}s")),
    ]
}

pub(super) fn sse(step: &Step, model: &str, n: usize) -> Vec<u8> {
    let (tokens, item) = match step {
        Step::Text { text, tokens } => (
            *tokens,
            json!({"type": "message", "id": format!("msg_mock_{n}"), "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        ),
        Step::Tool {
            name,
            input,
            tokens,
        } => (
            *tokens,
            json!({"type": "function_call", "id": format!("fc_mock_{n}"), "call_id": format!("call_mock_{n}"),
                   "name": name, "arguments": input.to_string(), "status": "completed"}),
        ),
        _ => unreachable!("only replies with content are streamed"),
    };
    let id = format!("resp_mock_{n}");
    let mut out = String::new();
    event(
        &mut out,
        "response.created",
        json!({"type": "response.created", "response": {"id": id, "model": model, "status": "in_progress", "output": []}}),
    );
    event(
        &mut out,
        "response.output_item.added",
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
    );
    if let Step::Text { text, .. } = step {
        event(
            &mut out,
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": format!("msg_mock_{n}"), "delta": text}),
        );
    }
    event(
        &mut out,
        "response.output_item.done",
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    );
    event(
        &mut out,
        "response.completed",
        json!({"type": "response.completed", "response": {
        "id": id, "model": model, "status": "completed", "output": [item],
        "usage": {"input_tokens": tokens.input + tokens.cache_read,
                  "input_tokens_details": {"cached_tokens": tokens.cache_read},
                  "output_tokens": tokens.output,
                  "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": tokens.input + tokens.cache_read + tokens.output}}}),
    );
    out.into_bytes()
}
