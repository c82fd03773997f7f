//! What an adapter reads out of an agent CLI's output, in agentloop's own terms.

use agentloop_journal::{AgentError, AgentErrorKind};

use agentloop_ground::values::Usage;

/// The outcome of one agent run as its output tells it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The final message, where signals are read from.
    pub final_message: String,
    pub usage: Usage,
    /// The usage of each model that answered, when the CLI says (for the price table).
    pub by_model: Vec<(String, Usage)>,
    /// `None` when the CLI reports no cost (then a price table decides).
    pub cost_usd: Option<f64>,
    pub session_id: Option<String>,
    pub turns: Option<u32>,
    /// Tool calls the agent made, by tool name.
    pub tool_uses: Vec<String>,
    /// The file each of its edit calls changed, one entry per call (the thrashing
    /// breaker counts them).
    pub edits: Vec<String>,
    pub error: Option<AgentError>,
    /// When a usage limit resets (Unix milliseconds), if the output said.
    pub resets_at_ms: Option<u64>,
}

/// Sorts an error message (and an HTTP status, when the CLI gives one) into the kinds
/// the policy acts on: wait for a usage-limit reset, back off, or ask a person.
pub fn classify(message: &str, status: Option<u64>) -> AgentError {
    let m = message.to_ascii_lowercase();
    // "unexpected status 401 Unauthorized: …" (Codex) carries the status in the text.
    let status = status.or_else(|| {
        let at = m.find("status ")? + "status ".len();
        m.get(at..at + 3)?
            .parse::<u64>()
            .ok()
            .filter(|s| (400..600).contains(s))
    });
    // OpenAI's "You exceeded your current quota" comes as a 429 but waiting does not
    // end it: money does.
    let billing = m.contains("billing")
        || m.contains("credit balance")
        || m.contains("insufficient_quota")
        || m.contains("exceeded your current quota");
    let kind = if billing {
        AgentErrorKind::Billing
    } else if status == Some(429)
        || m.contains("rate limit")
        || m.contains("rate_limit")
        || m.contains("ratelimiterror")
        || m.contains("usage limit")
        || m.contains("hit your")
        || m.contains("too many requests")
        // Google's 429: "Resource has been exhausted (e.g. check quota)" is a rate
        // limit, whatever it says about quota.
        || m.contains("resource has been exhausted")
        || m.contains("resource_exhausted")
    {
        AgentErrorKind::RateLimit
    } else if status == Some(529) || m.contains("overloaded") {
        AgentErrorKind::Overloaded
    } else if matches!(status, Some(401) | Some(403))
        || m.contains("authentication")
        || m.contains("unauthorized")
        || m.contains("incorrect api key")
        || m.contains("invalid api key")
        || m.contains("invalid x-api-key")
        || m.contains("invalid_api_key")
        || m.contains("api key not valid")
        || m.contains("unauthenticated")
        || m.contains("not logged in")
    {
        AgentErrorKind::Auth
    } else if m.contains("quota") {
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

/// A relative wait in a rate-limit message ("Suggested retry after 1s.", "Please try
/// again in 2.5s", "retry in 3 minutes"), as the Unix milliseconds it ends at.
pub fn retry_in_from_text(message: &str, now: &jiff::Zoned) -> Option<u64> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)(?:retry|try again)\s+(?:after|in)\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b",
        )
        .expect("the retry pattern is valid")
    });
    let c = RE.captures(message)?;
    let n: f64 = c.get(1)?.as_str().parse().ok()?;
    let unit = c.get(2)?.as_str().to_ascii_lowercase();
    let ms = if unit.starts_with("ms") || unit.starts_with("milli") {
        n
    } else if unit.starts_with('m') {
        n * 60_000.0
    } else {
        n * 1000.0
    };
    let at = now.timestamp().as_millisecond() as f64 + ms.max(0.0);
    Some(at.ceil() as u64)
}

/// The reset time in a usage-limit message, as Unix milliseconds: "resets 3:45pm",
/// "resets 3pm (Europe/Paris)", "try again at 4:12 PM", "try again at 16:12". A clock
/// time is read in the named zone, else the machine's, and means the next such time.
pub fn reset_from_text(message: &str, now: &jiff::Zoned) -> Option<u64> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)(?:resets(?: at)?|try again at)\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+-]+)*)\))?",
        )
        .expect("the reset pattern is valid")
    });
    let c = RE.captures(message)?;
    let mut hour: i8 = c.get(1)?.as_str().parse().ok()?;
    let minute: i8 = c.get(2).map_or(Some(0), |m| m.as_str().parse().ok())?;
    match c.get(3).map(|m| m.as_str().to_ascii_lowercase()) {
        Some(ref p) if p == "pm" && hour < 12 => hour += 12,
        Some(ref p) if p == "am" && hour == 12 => hour = 0,
        _ => {}
    }
    if !(0..24).contains(&hour) || !(0..60).contains(&minute) {
        return None;
    }
    let here = match c.get(4) {
        Some(tz) => now.with_time_zone(jiff::tz::TimeZone::get(tz.as_str()).ok()?),
        None => now.clone(),
    };
    let mut at = here
        .date()
        .at(hour, minute, 0, 0)
        .to_zoned(here.time_zone().clone())
        .ok()?;
    // A time a few minutes past is now (the message names the minute it resets in,
    // or it took a moment to arrive), not the same time tomorrow.
    let grace = at.checked_add(jiff::Span::new().minutes(5)).ok()?;
    if grace <= here {
        at = at.checked_add(jiff::Span::new().days(1)).ok()?;
    } else if at <= here {
        at = here.clone();
    }
    u64::try_from(at.timestamp().as_millisecond()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zoned(s: &str) -> jiff::Zoned {
        s.parse().unwrap()
    }

    #[test]
    fn clock_times_become_the_next_such_moment() {
        let now = zoned("2026-11-22T10:00:00+00:00[UTC]");
        let at = |m: &str| {
            reset_from_text(m, &now).map(|ms| {
                jiff::Timestamp::from_millisecond(ms as i64)
                    .unwrap()
                    .to_string()
            })
        };
        assert_eq!(
            at("You've hit your session limit · resets 3:45pm").as_deref(),
            Some("2026-11-22T15:45:00Z")
        );
        assert_eq!(
            at("You've hit your limit · resets 9am").as_deref(),
            Some("2026-11-23T09:00:00Z"),
            "already past today"
        );
        let just_after = zoned("2026-11-22T13:50:30+00:00[UTC]");
        assert_eq!(
            reset_from_text("You've hit your limit · resets 1:50pm", &just_after),
            Some(just_after.timestamp().as_millisecond() as u64),
            "a reset in the current minute is now, not tomorrow"
        );
        let minutes_after = zoned("2026-11-22T13:53:00+00:00[UTC]");
        assert_eq!(
            reset_from_text("try again at 1:50 PM", &minutes_after),
            Some(minutes_after.timestamp().as_millisecond() as u64)
        );
        assert_eq!(
            at("You've hit your usage limit. Upgrade to Pro or try again at 4:12 PM.").as_deref(),
            Some("2026-11-22T16:12:00Z")
        );
        assert_eq!(
            at("resets 3pm (Europe/Paris)").as_deref(),
            Some("2026-11-22T14:00:00Z")
        );
        assert_eq!(at("rate limit, please try again later"), None);
    }

    #[test]
    fn relative_waits_from_the_text() {
        let now = zoned("2026-11-22T10:00:00+00:00[UTC]");
        let base = now.timestamp().as_millisecond() as u64;
        let after = |m: &str| retry_in_from_text(m, &now).map(|ms| ms - base);
        assert_eq!(
            after(
                "[API Error: Resource has been exhausted (e.g. check quota).\nSuggested retry after 1s.]"
            ),
            Some(1000)
        );
        assert_eq!(
            after("Rate limit reached for requests. Please try again in 2.5s."),
            Some(2500)
        );
        assert_eq!(after("please retry in 3 minutes"), Some(180_000));
        assert_eq!(after("Please try again in 250ms"), Some(250));
        assert_eq!(after("try again later"), None);
    }

    #[test]
    fn errors_of_every_cli_are_sorted() {
        let kind = |m: &str| classify(m, None).kind;
        assert_eq!(
            kind("[API Error: Resource has been exhausted (e.g. check quota).]"),
            AgentErrorKind::RateLimit,
            "Gemini's 429 is a rate limit, not billing"
        );
        assert_eq!(
            kind(
                r#"[API Error: {"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}]"#
            ),
            AgentErrorKind::Auth
        );
        assert_eq!(
            kind("Your credit balance is too low to access the API"),
            AgentErrorKind::Billing
        );
        assert_eq!(
            kind("You exceeded your current quota, please check your plan and billing details."),
            AgentErrorKind::Billing
        );
        assert_eq!(kind("something else broke"), AgentErrorKind::Other);
    }
}

/// The file an agent's tool call edits, if the call is an edit: a tool that writes or
/// changes a file (Claude Code's Edit, Write, MultiEdit, NotebookEdit; Gemini CLI's
/// write_file and replace; OpenCode's edit, write and patch; Copilot's edit and
/// create), its path from the call's input. `input` may be a JSON string.
pub fn edited_file(tool: &str, input: &serde_json::Value) -> Option<String> {
    const EDITS: [&str; 13] = [
        "edit",
        "write",
        "multiedit",
        "notebookedit",
        "write_file",
        "replace",
        "patch",
        "create",
        "str_replace",
        "str_replace_editor",
        "edit_file",
        "create_file",
        "editor",
    ];
    if !EDITS.contains(&tool.to_ascii_lowercase().as_str()) {
        return None;
    }
    let parsed;
    let input = match input {
        serde_json::Value::String(s) => {
            parsed = serde_json::from_str::<serde_json::Value>(s).ok()?;
            &parsed
        }
        v => v,
    };
    [
        "file_path",
        "filePath",
        "notebook_path",
        "path",
        "absolute_path",
    ]
    .iter()
    .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str))
    .filter(|p| !p.is_empty())
    .map(String::from)
}

/// The file edited most in one run and how often, when some file was edited twice or
/// more.
pub fn most_edited(edits: &[String]) -> Option<(String, u32)> {
    let mut counts: std::collections::BTreeMap<&str, u32> = Default::default();
    for e in edits {
        *counts.entry(e.as_str()).or_default() += 1;
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n >= 2)
        .max_by_key(|(_, n)| *n)
        .map(|(f, n)| (f.to_string(), n))
}

#[cfg(test)]
mod edit_tests {
    use super::*;

    /// Each CLI's edit calls, as its JSON output reports them, are counted per file.
    #[test]
    fn every_clis_edits_are_read_from_its_tool_log() {
        let claude = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"src/a.rs","old_string":"x","new_string":"y"}},{"type":"tool_use","id":"t2","name":"Write","input":{"file_path":"src/a.rs","content":"z"}},{"type":"tool_use","id":"t3","name":"Read","input":{"file_path":"src/b.rs"}}]}}
{"type":"result","subtype":"success","is_error":false,"result":"done"}"#;
        assert_eq!(
            crate::claude::parse_stream_json(claude).edits,
            vec!["src/a.rs", "src/a.rs"]
        );
        let codex = r#"{"type":"item.completed","item":{"id":"i1","type":"file_change","changes":[{"path":"a.py","kind":"update"},{"path":"b.py","kind":"add"}],"status":"completed"}}"#;
        assert_eq!(
            crate::codex::parse_exec_json(codex).edits,
            vec!["a.py", "b.py"]
        );
        let gemini = r#"{"type":"tool_use","tool_name":"replace","tool_id":"t1","parameters":{"file_path":"a.txt","old_string":"a","new_string":"b"}}
{"type":"tool_use","tool_name":"read_file","tool_id":"t2","parameters":{"file_path":"a.txt"}}"#;
        assert_eq!(
            crate::gemini::parse_stream_json(gemini).edits,
            vec!["a.txt"]
        );
        let opencode = r#"{"type":"tool_use","sessionID":"s","part":{"type":"tool","tool":"edit","state":{"status":"completed","input":{"filePath":"/p/a.ts"}}}}"#;
        assert_eq!(crate::opencode::parse_json(opencode).edits, vec!["/p/a.ts"]);
        let copilot = r#"{"type":"assistant.message","data":{"content":"","toolRequests":[{"name":"edit","arguments":"{\"path\":\"a.go\"}"}]}}"#;
        assert_eq!(crate::copilot::parse_json(copilot).edits, vec!["a.go"]);
        assert_eq!(
            most_edited(&["a".into(), "b".into(), "a".into(), "a".into()]),
            Some(("a".to_string(), 3))
        );
        assert_eq!(most_edited(&["a".into(), "b".into()]), None);
    }
}
