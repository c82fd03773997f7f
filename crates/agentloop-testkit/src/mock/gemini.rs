//! Google's Gemini API (Gemini CLI): `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`
//! for the conversation (tools as `functionDeclarations`, calls as `functionCall` parts)
//! and `:generateContent` for side calls such as the model router, which asks for JSON
//! matching a schema.

use serde_json::{Map, Value, json};

use super::{Step, Tokens};

/// `(model, streamed)` for a `models/MODEL:…Content` path.
pub(super) fn model_call(path: &str) -> Option<(String, bool)> {
    let path = path.split('?').next()?;
    let (_, rest) = path.split_once("/models/")?;
    let (model, method) = rest.split_once(':')?;
    match method {
        "streamGenerateContent" => Some((model.to_string(), true)),
        "generateContent" => Some((model.to_string(), false)),
        _ => None,
    }
}

/// The answer to a side call: JSON that fills the schema it asks for (the first value
/// of each enumeration, the least number allowed), or a short text.
pub(super) fn side_text(body: &Value) -> String {
    let config = body.get("generationConfig").unwrap_or(&Value::Null);
    let schema = config
        .get("responseJsonSchema")
        .or_else(|| config.get("responseSchema"));
    match schema {
        Some(s) => fill(s).to_string(),
        None => "Mock title".into(),
    }
}

fn fill(schema: &Value) -> Value {
    if let Some(first) = schema.pointer("/enum/0") {
        return first.clone();
    }
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string")
        .to_ascii_lowercase();
    match kind.as_str() {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    out.insert(k.clone(), fill(v));
                }
            }
            Value::Object(out)
        }
        "array" => json!([]),
        "boolean" => json!(false),
        // The router's `complexity_score` has a minimum of 1.
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        _ => json!("mock"),
    }
}

/// Google's error body; a 429 carries a `RetryInfo` detail.
pub(super) fn error_body(status: u16, kind: &str, message: &str, retry: Option<u64>) -> Value {
    let mut error = json!({"code": status, "message": message, "status": kind});
    if let Some(s) = retry {
        error["details"] = json!([{
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": format!("{s}s"),
        }]);
    }
    json!({ "error": error })
}

fn usage(t: Tokens) -> Value {
    json!({
        "promptTokenCount": t.input + t.cache_read,
        "cachedContentTokenCount": t.cache_read,
        "candidatesTokenCount": t.output,
        "totalTokenCount": t.input + t.cache_read + t.output,
    })
}

/// One response: an SSE stream of one chunk, or the JSON body.
pub(super) fn reply(step: &Step, model: &str, n: usize, stream: bool) -> Vec<u8> {
    let (part, tokens) = match step {
        Step::Text { text, tokens } => (json!({"text": text}), *tokens),
        Step::Tool {
            name,
            input,
            tokens,
        } => (
            json!({"functionCall": {"id": format!("call_mock_{n}"), "name": name, "args": input}}),
            *tokens,
        ),
        _ => unreachable!("only replies with content are sent"),
    };
    let response = json!({
        "candidates": [{
            "content": {"role": "model", "parts": [part]},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": usage(tokens),
        "modelVersion": model,
        "responseId": format!("mock-{n}"),
    });
    if stream {
        format!("data: {response}\r\n\r\n").into_bytes()
    } else {
        response.to_string().into_bytes()
    }
}
