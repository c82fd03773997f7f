//! JSON over HTTP for a forge's REST API: the token as a bearer, errors that say what
//! the forge said, retries on 5xx and on rate limits that honour `Retry-After` and
//! `x-ratelimit-reset`, and pages followed through the `Link` header.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::ForgeError;

/// Attempts of one request before its error is returned.
const ATTEMPTS: u32 = 5;
/// The longest wait for a rate limit; a longer one is returned as an error.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// A forge's REST API at `base` (no trailing slash).
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    base: String,
    token: String,
    /// Extra headers every request carries (GitHub's API version).
    headers: Vec<(&'static str, &'static str)>,
    /// What precedes the token in `Authorization` (Linear's API keys go bare).
    scheme: &'static str,
}

/// One answer: its status, body and the next page, if there is one.
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub next: Option<String>,
}

impl Client {
    pub fn new(base: &str, token: &str, headers: Vec<(&'static str, &'static str)>) -> Client {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .user_agent(concat!("agentloop/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Client {
            agent,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            headers,
            scheme: "Bearer ",
        }
    }

    /// The token sent as it is, without `Bearer`.
    pub fn bare_token(mut self) -> Client {
        self.scheme = "";
        self
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        }
    }

    /// One request, retried on 5xx and rate limits; other statuses are the caller's.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, ForgeError> {
        let url = self.url(path);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let answer = self.once(method, &url, body);
            let wait = match &answer {
                Ok((a, wait)) if a.status >= 500 => Some(wait.unwrap_or(backoff(attempt))),
                Ok((a, Some(wait))) if a.status == 429 || a.status == 403 => Some(*wait),
                // Linear: HTTP 400 with a GraphQL error coded RATELIMITED.
                Ok((a, wait)) if a.status == 400 && graphql_rate_limited(&a.body) => {
                    Some(wait.unwrap_or(backoff(attempt)))
                }
                Ok(_) => None,
                Err(_) => Some(backoff(attempt)),
            };
            match (answer, wait) {
                (Ok((a, _)), None) => return Ok(a),
                (answer, Some(wait)) if attempt < ATTEMPTS && wait <= MAX_WAIT => {
                    let _ = answer;
                    std::thread::sleep(wait);
                }
                (Ok((a, _)), Some(_)) => return Ok(a),
                (Err(e), _) => return Err(e),
            }
        }
    }

    fn once(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<(Answer, Option<Duration>), ForgeError> {
        let auth = format!("{}{}", self.scheme, self.token);
        let response = match method {
            "GET" | "DELETE" => {
                let mut r = if method == "GET" {
                    self.agent.get(url)
                } else {
                    self.agent.delete(url)
                };
                r = r
                    .header("authorization", &auth)
                    .header("accept", "application/json");
                for (k, v) in &self.headers {
                    r = r.header(*k, *v);
                }
                r.call()
            }
            _ => {
                let mut r = match method {
                    "POST" => self.agent.post(url),
                    "PATCH" => self.agent.patch(url),
                    _ => self.agent.put(url),
                };
                r = r
                    .header("authorization", &auth)
                    .header("accept", "application/json")
                    .header("content-type", "application/json");
                for (k, v) in &self.headers {
                    r = r.header(*k, *v);
                }
                r.send(body.map(Value::to_string).unwrap_or_default())
            }
        }
        .map_err(|e| ForgeError::Unreachable {
            url: url.to_string(),
            message: e.to_string(),
        })?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(String::from)
        };
        let wait = rate_limit_wait(
            header("retry-after").as_deref(),
            header("x-ratelimit-remaining").as_deref(),
            header("x-ratelimit-reset").as_deref(),
        )
        .or_else(|| {
            // Linear's two budgets, each reset at a time in Unix milliseconds.
            ["requests", "complexity"].iter().find_map(|b| {
                reset_ms_wait(
                    header(&format!("x-ratelimit-{b}-remaining")).as_deref(),
                    header(&format!("x-ratelimit-{b}-reset")).as_deref(),
                )
            })
        });
        let next = header("link").as_deref().and_then(next_link);
        let mut response = response;
        let text = response
            .body_mut()
            .with_config()
            .limit(16 * 1024 * 1024)
            .read_to_string()
            .unwrap_or_default();
        // A body that is not JSON (a job's log) is kept as a string.
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok((Answer { status, body, next }, wait))
    }

    /// A GET of every page of a list.
    pub fn get_all(&self, path: &str) -> Result<Vec<Value>, ForgeError> {
        let mut out = Vec::new();
        let mut next = Some(path.to_string());
        let mut pages = 0;
        while let Some(p) = next.take() {
            let a = self.send("GET", &p, None)?;
            check(&a, "GET", &p)?;
            match a.body {
                Value::Array(items) => out.extend(items),
                other => out.push(other),
            }
            pages += 1;
            if pages < 100 {
                next = a.next;
            }
        }
        Ok(out)
    }
}

/// The forge's own error for a status that is not a success.
pub fn check(a: &Answer, method: &str, path: &str) -> Result<(), ForgeError> {
    if (200..300).contains(&a.status) {
        return Ok(());
    }
    Err(ForgeError::Refused {
        what: format!("{method} {path}"),
        status: a.status,
        message: message_of(&a.body),
    })
}

/// What the forge said went wrong (GitHub's `message` and `errors[].message`).
pub fn message_of(body: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    match body.get("message") {
        Some(Value::String(m)) => parts.push(m.clone()),
        // GitLab: a list of messages, or messages by field.
        Some(Value::Array(list)) => {
            parts.extend(list.iter().filter_map(Value::as_str).map(String::from));
        }
        Some(Value::Object(fields)) => {
            for (k, v) in fields {
                for m in v.as_array().into_iter().flatten().filter_map(Value::as_str) {
                    parts.push(format!("{k} {m}"));
                }
            }
        }
        _ => {}
    }
    if let Some(e) = body.get("error").and_then(Value::as_str) {
        parts.push(e.to_string());
    }
    for e in body
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(m) = e.get("message").and_then(Value::as_str) {
            parts.push(m.to_string());
        }
    }
    if parts.is_empty() {
        "no message".into()
    } else {
        parts.join(": ")
    }
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(250 * 2u64.pow(attempt.min(6)))
}

/// How long a rate limit asks to wait: `Retry-After` seconds, else until
/// `x-ratelimit-reset` (Unix seconds) when no requests remain.
pub fn rate_limit_wait(
    retry_after: Option<&str>,
    remaining: Option<&str>,
    reset: Option<&str>,
) -> Option<Duration> {
    if let Some(s) = retry_after.and_then(|s| s.trim().parse::<u64>().ok()) {
        return Some(Duration::from_secs(s));
    }
    if remaining.map(str::trim) == Some("0") {
        let reset = reset?.trim().parse::<u64>().ok()?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
        return Some(Duration::from_secs(reset.saturating_sub(now).max(1)));
    }
    None
}

/// Until `reset` (Unix milliseconds) when nothing `remaining`: Linear's headers.
pub fn reset_ms_wait(remaining: Option<&str>, reset: Option<&str>) -> Option<Duration> {
    if remaining.map(str::trim) != Some("0") {
        return None;
    }
    let reset = reset?.trim().parse::<u64>().ok()?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    Some(Duration::from_millis(reset.saturating_sub(now).max(100)))
}

/// A GraphQL answer refused for a rate limit (`errors[].extensions.code`).
fn graphql_rate_limited(body: &Value) -> bool {
    body.get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|e| e.pointer("/extensions/code").and_then(Value::as_str) == Some("RATELIMITED"))
}

/// The `rel="next"` URL of a `Link` header.
pub fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_say_how_long_to_wait() {
        assert_eq!(
            rate_limit_wait(Some("3"), None, None),
            Some(Duration::from_secs(3))
        );
        let soon = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 2;
        let w = rate_limit_wait(None, Some("0"), Some(&soon.to_string())).unwrap();
        assert!(w <= Duration::from_secs(2) && w >= Duration::from_secs(1));
        assert_eq!(rate_limit_wait(None, Some("10"), Some("1")), None);
        let soon_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
            + 1500;
        let w = reset_ms_wait(Some("0"), Some(&soon_ms.to_string())).unwrap();
        assert!(w <= Duration::from_millis(1500) && w >= Duration::from_millis(1000));
        assert_eq!(reset_ms_wait(Some("3"), Some(&soon_ms.to_string())), None);
        assert!(graphql_rate_limited(
            &serde_json::json!({"errors": [{"message": "Rate limit exceeded", "extensions": {"code": "RATELIMITED"}}]})
        ));
        assert!(!graphql_rate_limited(
            &serde_json::json!({"errors": [{"message": "x", "extensions": {"code": "INVALID_INPUT"}}]})
        ));
    }

    #[test]
    fn the_next_page_is_read_from_the_link_header() {
        let link = r#"<https://api.github.com/repos/o/r/pulls?page=2>; rel="next", <https://api.github.com/repos/o/r/pulls?page=5>; rel="last""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("https://api.github.com/repos/o/r/pulls?page=2")
        );
        assert_eq!(next_link(r#"<x>; rel="prev""#), None);
    }
}
