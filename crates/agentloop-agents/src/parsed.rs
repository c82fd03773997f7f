//! What an adapter reads out of an agent CLI's output, in agentloop's own terms.

use agentloop_core::event::{AgentError, AgentErrorKind, Usage};

/// The outcome of one agent run as its output tells it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The final message, where signals are read from.
    pub final_message: String,
    pub usage: Usage,
    /// `None` when the CLI reports no cost (then a price table decides).
    pub cost_usd: Option<f64>,
    pub session_id: Option<String>,
    pub turns: Option<u32>,
    /// Tool calls the agent made, by tool name.
    pub tool_uses: Vec<String>,
    pub error: Option<AgentError>,
    /// When a usage limit resets (Unix milliseconds), if the output said.
    pub resets_at_ms: Option<u64>,
}

/// Sorts an error message (and an HTTP status, when the CLI gives one) into the kinds
/// the policy acts on: wait for a usage-limit reset, back off, or ask a person.
pub fn classify(message: &str, status: Option<u64>) -> AgentError {
    let m = message.to_ascii_lowercase();
    let kind = if status == Some(429)
        || m.contains("rate limit")
        || m.contains("rate_limit")
        || m.contains("usage limit")
        || m.contains("hit your")
    {
        AgentErrorKind::RateLimit
    } else if status == Some(529) || m.contains("overloaded") {
        AgentErrorKind::Overloaded
    } else if matches!(status, Some(401) | Some(403))
        || m.contains("authentication")
        || m.contains("invalid api key")
        || m.contains("invalid x-api-key")
        || m.contains("not logged in")
    {
        AgentErrorKind::Auth
    } else if m.contains("billing") || m.contains("credit balance") || m.contains("quota") {
        AgentErrorKind::Billing
    } else {
        AgentErrorKind::Other
    };
    AgentError {
        kind,
        message: message.trim().to_string(),
    }
}

/// Reads a JSON-lines stream, skipping lines that are not JSON (banners, warnings).
pub fn json_lines(text: &str) -> impl Iterator<Item = serde_json::Value> + '_ {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
}

pub fn u64_at(v: &serde_json::Value, key: &str) -> u64 {
    v.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0)
}
