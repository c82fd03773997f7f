//! OpenAI Chat Completions (OpenCode, Aider): `POST /v1/chat/completions`, answered as a
//! stream of `chat.completion.chunk`s ending in a usage chunk and `[DONE]` when the
//! request says `stream: true`, else as one `chat.completion`.

use serde_json::{Value, json};

use super::{Step, Tokens};

fn usage(t: Tokens) -> Value {
    json!({
        "prompt_tokens": t.input + t.cache_read,
        "completion_tokens": t.output,
        "total_tokens": t.input + t.cache_read + t.output,
        "prompt_tokens_details": {"cached_tokens": t.cache_read},
    })
}

pub(super) fn reply(step: &Step, model: &str, n: usize, stream: bool) -> Vec<u8> {
    let id = format!("chatcmpl-mock-{n}");
    let (message, delta, finish, tokens) = match step {
        Step::Text { text, tokens } => (
            json!({"role": "assistant", "content": text}),
            json!({"content": text}),
            "stop",
            *tokens,
        ),
        Step::Tool {
            name,
            input,
            tokens,
        } => {
            let call = json!({"id": format!("call_mock_{n}"), "type": "function",
                              "function": {"name": name, "arguments": input.to_string()}});
            let mut streamed = call.clone();
            streamed["index"] = json!(0);
            (
                json!({"role": "assistant", "content": null, "tool_calls": [call]}),
                json!({"tool_calls": [streamed]}),
                "tool_calls",
                *tokens,
            )
        }
        _ => unreachable!("only replies with content are sent"),
    };
    let created = 1_700_000_000 + n as u64;
    if !stream {
        return json!({
            "id": id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage(tokens),
        })
        .to_string()
        .into_bytes();
    }
    let chunk = |choices: Value, usage: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": created,
               "model": model, "choices": choices, "usage": usage})
    };
    let mut out = String::new();
    for c in [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
            Value::Null,
        ),
        chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            Value::Null,
        ),
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
            Value::Null,
        ),
        chunk(json!([]), usage(tokens)),
    ] {
        out.push_str(&format!("data: {c}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}
