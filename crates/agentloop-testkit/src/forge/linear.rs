//! A mock of Linear's GraphQL API on 127.0.0.1 for one team: the operations agentloop
//! sends (issues with a team and state filter, paged by cursor; an issue by identifier;
//! the team's workflow states; commentCreate; issueUpdate), a personal API key in
//! `Authorization` as it is (anything else: an `AUTHENTICATION_ERROR`), GraphQL errors
//! for what it does not know, the request budget's headers on every answer
//! (`x-ratelimit-requests-*`, the reset in Unix milliseconds), and rate limits on demand
//! as Linear answers them: HTTP 400 with an error coded `RATELIMITED`.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use super::header;

#[derive(Debug, Clone)]
pub struct MockLinearIssue {
    pub id: String,
    pub identifier: String,
    pub title: String,
    pub description: String,
    /// The workflow state's name.
    pub state: String,
    pub comments: Vec<String>,
}

/// The team's workflow states: (id, name, type).
const STATES: [(&str, &str, &str); 5] = [
    ("st-backlog", "Backlog", "backlog"),
    ("st-todo", "Todo", "unstarted"),
    ("st-progress", "In Progress", "started"),
    ("st-done", "Done", "completed"),
    ("st-canceled", "Canceled", "canceled"),
];

struct Shared {
    team: String,
    key: String,
    issues: Mutex<Vec<MockLinearIssue>>,
    /// Issues per page (Linear's `first`, at most 50).
    page: usize,
    /// Requests refused with a rate limit before the next real answer.
    limited: Mutex<u32>,
    /// Requests answered, rate-limited ones included.
    requests: std::sync::atomic::AtomicU32,
}

pub struct MockLinear {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl MockLinear {
    /// Team `team` (its key, `ENG`), answering only API key `key`; `page` issues per page.
    pub fn start(team: &str, key: &str, page: usize) -> MockLinear {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let addr = server.server_addr().to_ip().expect("an IP address");
        let shared = Arc::new(Shared {
            team: team.to_string(),
            key: key.to_string(),
            issues: Mutex::new(Vec::new()),
            page: page.clamp(1, 50),
            limited: Mutex::new(0),
            requests: std::sync::atomic::AtomicU32::new(0),
        });
        let (s, sh) = (server.clone(), shared.clone());
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let sh = sh.clone();
                std::thread::spawn(move || handle(&sh, req));
            }
        });
        MockLinear {
            addr,
            shared,
            server,
            thread: Some(thread),
        }
    }

    /// The API's base URL (`/graphql` is under it).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn add_issue(&self, title: &str, description: &str, state: &str) -> String {
        let mut issues = self.shared.issues.lock().unwrap();
        let n = issues.len() + 1;
        let identifier = format!("{}-{n}", self.shared.team);
        issues.push(MockLinearIssue {
            id: format!("uuid-{n}"),
            identifier: identifier.clone(),
            title: title.into(),
            description: description.into(),
            state: state.into(),
            comments: Vec::new(),
        });
        identifier
    }

    /// The next `count` requests are refused as over the request budget.
    pub fn rate_limit_next(&self, count: u32) {
        *self.shared.limited.lock().unwrap() = count;
    }

    /// Requests answered so far, rate-limited ones included.
    pub fn requests(&self) -> u32 {
        self.shared
            .requests
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn issues(&self) -> Vec<MockLinearIssue> {
        self.shared.issues.lock().unwrap().clone()
    }
}

impl Drop for MockLinear {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn handle(sh: &Shared, mut req: tiny_http::Request) {
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(req.as_reader(), &mut text);
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let auth = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("authorization"))
        .map(|h| h.value.to_string())
        .unwrap_or_default();
    sh.requests
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let limited = {
        let mut n = sh.limited.lock().unwrap();
        let limited = *n > 0;
        *n = n.saturating_sub(1);
        limited
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let (status, answer) = if limited {
        (
            400,
            json!({"errors": [{"message": "Rate limit exceeded", "extensions": {"code": "RATELIMITED", "type": "ratelimited", "userPresentableMessage": "Too many requests: try again shortly."}}]}),
        )
    } else if req.url() != "/graphql" || req.method().as_str() != "POST" {
        (404, json!({"errors": [{"message": "Not found"}]}))
    } else if auth != sh.key {
        (
            400,
            json!({"errors": [{"message": "Authentication required, not authenticated", "extensions": {"code": "AUTHENTICATION_ERROR", "type": "authentication error"}}]}),
        )
    } else {
        (200, answer(sh, &body))
    };
    let resp = tiny_http::Response::from_string(answer.to_string())
        .with_status_code(status)
        .with_header(header("content-type", "application/json; charset=utf-8"))
        .with_header(header("x-ratelimit-requests-limit", "1500"))
        .with_header(header(
            "x-ratelimit-requests-remaining",
            if limited { "0" } else { "1499" },
        ))
        .with_header(header(
            "x-ratelimit-requests-reset",
            &(now_ms + if limited { 1000 } else { 3_600_000 }).to_string(),
        ));
    let _ = req.respond(resp);
}

fn error(message: &str) -> Value {
    json!({"data": null, "errors": [{"message": message, "extensions": {"code": "INVALID_INPUT"}}]})
}

fn answer(sh: &Shared, body: &Value) -> Value {
    let q = body["query"].as_str().unwrap_or_default();
    let v = &body["variables"];
    let mut issues = sh.issues.lock().unwrap();
    let find = |issues: &[MockLinearIssue], id: &str| {
        issues
            .iter()
            .position(|i| i.id == id || i.identifier.eq_ignore_ascii_case(id))
    };
    if q.contains("issues(") {
        let filter = &v["filter"];
        if filter.pointer("/team/key/eq").and_then(Value::as_str) != Some(sh.team.as_str()) {
            return json!({"data": {"issues": {"nodes": [], "pageInfo": {"hasNextPage": false, "endCursor": null}}}});
        }
        let name = filter.pointer("/state/name/eq").and_then(Value::as_str);
        let not_in: Vec<&str> = filter
            .pointer("/state/type/nin")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let type_of = |state: &str| STATES.iter().find(|s| s.1 == state).map_or("", |s| s.2);
        let matching: Vec<&MockLinearIssue> = issues
            .iter()
            .filter(|i| name.is_none_or(|n| i.state == n))
            .filter(|i| !not_in.contains(&type_of(&i.state)))
            .collect();
        let start = v["after"]
            .as_str()
            .and_then(|c| c.strip_prefix("cursor-"))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        let end = (start + sh.page).min(matching.len());
        let nodes: Vec<Value> = matching[start.min(end)..end]
            .iter()
            .map(|i| {
                json!({"identifier": i.identifier, "title": i.title, "description": i.description,
                            "url": format!("https://linear.invalid/issue/{}", i.identifier)})
            })
            .collect();
        return json!({"data": {"issues": {"nodes": nodes, "pageInfo": {
            "hasNextPage": end < matching.len(), "endCursor": format!("cursor-{end}")}}}});
    }
    if q.contains("issue(id:") {
        return match find(&issues, v["id"].as_str().unwrap_or_default()) {
            Some(i) => json!({"data": {"issue": {"id": issues[i].id, "team": {"id": "team-1"}}}}),
            None => error("Entity not found: Issue"),
        };
    }
    if q.contains("workflowStates") {
        let nodes: Vec<Value> = STATES
            .iter()
            .enumerate()
            .map(|(p, (id, name, kind))| json!({"id": id, "name": name, "type": kind, "position": p}))
            .collect();
        return json!({"data": {"workflowStates": {"nodes": nodes}}});
    }
    if q.contains("teams(") {
        let nodes: Vec<Value> = (v.pointer("/key").and_then(Value::as_str)
            == Some(sh.team.as_str()))
        .then(|| json!({"id": "team-1"}))
        .into_iter()
        .collect();
        return json!({"data": {"teams": {"nodes": nodes}}});
    }
    if q.contains("issueCreate") {
        if v["team"].as_str() != Some("team-1") {
            return error("Entity not found: Team");
        }
        let Some(title) = v["title"].as_str().filter(|t| !t.is_empty()) else {
            return error("Argument Validation Error: title should not be empty");
        };
        let n = issues.len() + 1;
        let identifier = format!("{}-{n}", sh.team);
        issues.push(MockLinearIssue {
            id: format!("uuid-{n}"),
            identifier: identifier.clone(),
            title: title.into(),
            description: v["body"].as_str().unwrap_or_default().into(),
            state: "Todo".into(),
            comments: Vec::new(),
        });
        return json!({"data": {"issueCreate": {"success": true, "issue": {"identifier": identifier,
            "url": format!("https://linear.invalid/issue/{identifier}")}}}});
    }
    if q.contains("commentCreate") {
        return match find(&issues, v["id"].as_str().unwrap_or_default()) {
            Some(i) => {
                issues[i]
                    .comments
                    .push(v["body"].as_str().unwrap_or_default().to_string());
                json!({"data": {"commentCreate": {"success": true}}})
            }
            None => error("Entity not found: Issue"),
        };
    }
    if q.contains("issueUpdate") {
        let Some(state) = STATES.iter().find(|s| Some(s.0) == v["state"].as_str()) else {
            return error("Entity not found: WorkflowState");
        };
        return match find(&issues, v["id"].as_str().unwrap_or_default()) {
            Some(i) => {
                issues[i].state = state.1.to_string();
                json!({"data": {"issueUpdate": {"success": true}}})
            }
            None => error("Entity not found: Issue"),
        };
    }
    error("Cannot query this operation on the mock")
}
