//! A mock of GitLab's REST API v4 on 127.0.0.1 for one project, backed by a real bare
//! git repository: merge requests (409 on a second one from the same source branch),
//! pipelines whose one job runs the test's CI script on a checkout of the commit
//! (running on the first look, then done) with the job's log as its trace, approvals a
//! test gives as a person would, labels, reviewers by user id, notes, merges made in the
//! bare repository (405 when they conflict, 409 when the head moved), `PRIVATE-TOKEN` or
//! bearer auth (401 "401 Unauthorized"), and 429 with `Retry-After` on demand.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use super::{Reply, git, header, merge, page, reply, run_ci};

#[derive(Debug, Clone)]
pub struct MockMr {
    pub iid: u64,
    pub source: String,
    pub target: String,
    pub title: String,
    pub description: String,
    pub open: bool,
    pub merge_sha: Option<String>,
    pub labels: Vec<String>,
    pub reviewer_ids: Vec<u64>,
    pub notes: Vec<String>,
    pub approved_by: Vec<String>,
}

/// An issue of the project.
#[derive(Debug, Clone)]
pub struct MockGlIssue {
    pub iid: u64,
    pub title: String,
    pub description: String,
    pub labels: Vec<String>,
    pub open: bool,
    pub notes: Vec<String>,
}

#[derive(Default)]
struct State {
    mrs: Vec<MockMr>,
    issues: Vec<MockGlIssue>,
    /// CI per commit: (looks, (passed, log)).
    ci: BTreeMap<String, (u32, Option<(bool, String)>)>,
    limited: u32,
    log: Vec<String>,
}

struct Shared {
    project: String,
    bare: PathBuf,
    token: String,
    ci: Option<String>,
    users: Vec<String>,
    state: Mutex<State>,
}

pub struct MockGitLab {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl MockGitLab {
    /// `project` (`group/name`) backed by `bare`; `users` are the usernames it knows
    /// (ids 1, 2, …); `ci` is the script its pipeline's one job runs.
    pub fn start(
        project: &str,
        bare: &Path,
        token: &str,
        ci: Option<&str>,
        users: &[&str],
    ) -> MockGitLab {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let addr = server.server_addr().to_ip().expect("an IP address");
        let shared = Arc::new(Shared {
            project: project.to_string(),
            bare: bare.to_path_buf(),
            token: token.to_string(),
            ci: ci.map(String::from),
            users: users.iter().map(|u| u.to_string()).collect(),
            state: Mutex::new(State::default()),
        });
        let (s, sh) = (server.clone(), shared.clone());
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let sh = sh.clone();
                std::thread::spawn(move || handle(&sh, req));
            }
        });
        MockGitLab {
            addr,
            shared,
            server,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/api/v4`, the API's base URL.
    pub fn url(&self) -> String {
        format!("http://{}/api/v4", self.addr)
    }

    pub fn mrs(&self) -> Vec<MockMr> {
        self.shared.state.lock().unwrap().mrs.clone()
    }

    pub fn log(&self) -> Vec<String> {
        self.shared.state.lock().unwrap().log.clone()
    }

    pub fn issues(&self) -> Vec<MockGlIssue> {
        self.shared.state.lock().unwrap().issues.clone()
    }

    /// Opens an issue; returns its iid.
    pub fn add_issue(&self, title: &str, description: &str, labels: &[&str]) -> u64 {
        let mut st = self.shared.state.lock().unwrap();
        let iid = st.issues.len() as u64 + 1;
        st.issues.push(MockGlIssue {
            iid,
            title: title.into(),
            description: description.into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            open: true,
            notes: Vec::new(),
        });
        iid
    }

    /// A person approves merge request `iid`.
    pub fn approve(&self, iid: u64, username: &str) {
        let mut st = self.shared.state.lock().unwrap();
        if let Some(mr) = st.mrs.iter_mut().find(|m| m.iid == iid) {
            mr.approved_by.push(username.to_string());
        }
    }

    /// The next `count` requests get 429 with `Retry-After: 1`.
    pub fn rate_limit_next(&self, count: u32) {
        self.shared.state.lock().unwrap().limited = count;
    }
}

impl Drop for MockGitLab {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn error(status: u16, message: Value) -> Reply {
    reply(status, json!({ "message": message }))
}

fn handle(sh: &Shared, mut req: tiny_http::Request) {
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(req.as_reader(), &mut text);
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let method = req.method().to_string();
    let url = req.url().to_string();
    let token = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("private-token") || h.field.equiv("authorization"))
        .map(|h| {
            h.value
                .to_string()
                .trim_start_matches("Bearer ")
                .to_string()
        })
        .unwrap_or_default();
    let (r, plain) = answer(sh, &method, &url, &body, &token);
    let content = if plain {
        "text/plain; charset=utf-8"
    } else {
        "application/json"
    };
    let text = match (&r.body, plain) {
        (Value::String(s), true) => s.clone(),
        (b, _) => b.to_string(),
    };
    let mut resp = tiny_http::Response::from_string(text)
        .with_status_code(r.status)
        .with_header(header("content-type", content));
    for (k, v) in &r.headers {
        resp = resp.with_header(header(k, v));
    }
    let _ = req.respond(resp);
}

fn decode(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(n) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(n);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn mr_json(sh: &Shared, m: &MockMr) -> Value {
    let sha = git(
        &sh.bare,
        &["rev-parse", &format!("refs/heads/{}", m.source)],
    )
    .unwrap_or_default();
    json!({
        "iid": m.iid, "id": 1000 + m.iid,
        "web_url": format!("https://gitlab.invalid/{}/-/merge_requests/{}", sh.project, m.iid),
        "state": if m.open { "opened" } else { "merged" },
        "title": m.title, "description": m.description,
        "source_branch": m.source, "target_branch": m.target, "sha": sha,
        "labels": m.labels, "merge_commit_sha": m.merge_sha,
    })
}

/// The answer, and whether it is plain text (a job's trace).
fn answer(sh: &Shared, method: &str, url: &str, body: &Value, token: &str) -> (Reply, bool) {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let q = |k: &str| {
        query.split('&').find_map(|kv| {
            kv.split_once('=')
                .filter(|(key, _)| *key == k)
                .map(|(_, v)| decode(v))
        })
    };
    let mut st = sh.state.lock().unwrap();
    st.log.push(format!("{method} {path}"));
    if st.limited > 0 {
        st.limited -= 1;
        let mut r = error(429, json!("Retry later"));
        r.headers.push(("retry-after".into(), "1".into()));
        r.headers.push(("ratelimit-remaining".into(), "0".into()));
        return (r, false);
    }
    if token != sh.token {
        return (error(401, json!("401 Unauthorized")), false);
    }
    let Some(rest) = path.strip_prefix("/api/v4") else {
        return (error(404, json!("404 Not Found")), false);
    };
    if (method, rest) == ("GET", "/user") {
        return (
            reply(
                200,
                json!({"id": 1, "username": "agentloop-test", "state": "active"}),
            ),
            false,
        );
    }
    if let Some(users) = rest.strip_prefix("/users") {
        let _ = users;
        let name = q("username").unwrap_or_default();
        let found: Vec<Value> = sh
            .users
            .iter()
            .enumerate()
            .filter(|(_, u)| **u == name)
            .map(|(i, u)| json!({"id": i + 1, "username": u}))
            .collect();
        return (reply(200, Value::Array(found)), false);
    }
    let prefix = format!("/projects/{}", sh.project.replace('/', "%2F"));
    let Some(rest) = rest.strip_prefix(&prefix) else {
        return (error(404, json!("404 Project Not Found")), false);
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    let number = |s: &str| s.parse::<u64>().ok();
    let r = match (method, parts.as_slice()) {
        ("GET", []) => {
            let default = git(&sh.bare, &["symbolic-ref", "--short", "HEAD"]).unwrap_or_default();
            reply(
                200,
                json!({"id": 1, "path_with_namespace": sh.project, "default_branch": default,
                       "permissions": {"project_access": {"access_level": 40, "notification_level": 3}, "group_access": null}}),
            )
        }
        ("GET", ["repository", "branches", name]) => {
            let name = decode(name);
            match git(
                &sh.bare,
                &[
                    "rev-parse",
                    "--verify",
                    &format!("refs/heads/{name}^{{commit}}"),
                ],
            ) {
                Some(sha) => reply(
                    200,
                    json!({"name": name, "commit": {"id": sha}, "protected": false}),
                ),
                None => error(404, json!("404 Branch Not Found")),
            }
        }
        ("POST", ["merge_requests"]) => {
            let source = body["source_branch"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let target = body["target_branch"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if git(
                &sh.bare,
                &["rev-parse", "--verify", &format!("refs/heads/{source}")],
            )
            .is_none()
            {
                return (error(422, json!(["Source branch does not exist"])), false);
            }
            if let Some(m) = st.mrs.iter().find(|m| m.open && m.source == source) {
                return (
                    error(
                        409,
                        json!([format!(
                            "Another open merge request already exists for this source branch: !{}",
                            m.iid
                        )]),
                    ),
                    false,
                );
            }
            let m = MockMr {
                iid: st.mrs.len() as u64 + 1,
                source,
                target,
                title: body["title"].as_str().unwrap_or_default().to_string(),
                description: body["description"].as_str().unwrap_or_default().to_string(),
                open: true,
                merge_sha: None,
                labels: Vec::new(),
                reviewer_ids: Vec::new(),
                notes: Vec::new(),
                approved_by: Vec::new(),
            };
            let v = mr_json(sh, &m);
            st.mrs.push(m);
            reply(201, v)
        }
        ("GET", ["issues"]) => {
            let label = q("labels");
            let opened = q("state").as_deref() == Some("opened");
            let items: Vec<Value> = st
                .issues
                .iter()
                .filter(|i| !opened || i.open)
                .filter(|i| label.as_ref().is_none_or(|l| i.labels.contains(l)))
                .map(|i| json!({"iid": i.iid, "title": i.title, "description": i.description, "labels": i.labels,
                    "state": if i.open { "opened" } else { "closed" },
                    "web_url": format!("https://gitlab.invalid/{}/-/issues/{}", sh.project, i.iid)}))
                .collect();
            page(items, &q, &format!("/api/v4{prefix}/issues"))
        }
        ("POST", ["issues"]) => {
            let Some(title) = body
                .get("title")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            else {
                return (error(400, json!({"title": ["can't be blank"]})), false);
            };
            let iid = st.issues.len() as u64 + 1;
            let issue = MockGlIssue {
                iid,
                title: title.into(),
                description: body
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                labels: Vec::new(),
                open: true,
                notes: Vec::new(),
            };
            let v = json!({"iid": iid, "title": issue.title, "description": issue.description, "labels": [],
                "state": "opened", "web_url": format!("https://gitlab.invalid/{}/-/issues/{}", sh.project, iid)});
            st.issues.push(issue);
            reply(201, v)
        }
        ("POST", ["issues", n, "notes"]) => {
            match st.issues.iter_mut().find(|i| Some(i.iid) == number(n)) {
                Some(i) => {
                    i.notes
                        .push(body["body"].as_str().unwrap_or_default().to_string());
                    reply(201, json!({"id": i.notes.len(), "body": body["body"]}))
                }
                None => error(404, json!("404 Not found")),
            }
        }
        ("PUT", ["issues", n]) => match st.issues.iter_mut().find(|i| Some(i.iid) == number(n)) {
            Some(i) => {
                if body["state_event"].as_str() == Some("close") {
                    i.open = false;
                }
                if let Some(l) = body["add_labels"].as_str() {
                    for l in l.split(',').filter(|l| !l.is_empty()) {
                        if !i.labels.iter().any(|x| x == l) {
                            i.labels.push(l.to_string());
                        }
                    }
                }
                reply(
                    200,
                    json!({"iid": i.iid, "state": if i.open { "opened" } else { "closed" }}),
                )
            }
            None => error(404, json!("404 Not found")),
        },
        ("GET", ["merge_requests"]) => {
            let source = q("source_branch");
            let opened = q("state").as_deref() == Some("opened");
            let items: Vec<Value> = st
                .mrs
                .iter()
                .filter(|m| !opened || m.open)
                .filter(|m| source.as_ref().is_none_or(|s| *s == m.source))
                .map(|m| mr_json(sh, m))
                .collect();
            page(items, &q, &format!("/api/v4{prefix}/merge_requests"))
        }
        ("PUT", ["merge_requests", n]) => {
            match st.mrs.iter_mut().find(|m| Some(m.iid) == number(n)) {
                Some(m) => {
                    if let Some(t) = body["title"].as_str() {
                        m.title = t.to_string();
                    }
                    if let Some(d) = body["description"].as_str() {
                        m.description = d.to_string();
                    }
                    if let Some(l) = body["add_labels"].as_str() {
                        for l in l.split(',').filter(|l| !l.is_empty()) {
                            if !m.labels.iter().any(|x| x == l) {
                                m.labels.push(l.to_string());
                            }
                        }
                    }
                    if let Some(l) = body["remove_labels"].as_str() {
                        let gone: Vec<&str> = l.split(',').collect();
                        m.labels.retain(|x| !gone.contains(&x.as_str()));
                    }
                    if let Some(ids) = body["reviewer_ids"].as_array() {
                        m.reviewer_ids = ids.iter().filter_map(Value::as_u64).collect();
                    }
                    let m = m.clone();
                    reply(200, mr_json(sh, &m))
                }
                None => error(404, json!("404 Not found")),
            }
        }
        ("POST", ["merge_requests", n, "notes"]) => {
            match st.mrs.iter_mut().find(|m| Some(m.iid) == number(n)) {
                Some(m) => {
                    m.notes
                        .push(body["body"].as_str().unwrap_or_default().to_string());
                    reply(201, json!({"id": m.notes.len(), "body": body["body"]}))
                }
                None => error(404, json!("404 Not found")),
            }
        }
        ("GET", ["merge_requests", n]) => match st.mrs.iter().find(|m| Some(m.iid) == number(n)) {
            Some(m) => reply(200, mr_json(sh, m)),
            None => error(404, json!("404 Not found")),
        },
        ("GET", ["merge_requests", n, "approvals"]) => {
            match st.mrs.iter().find(|m| Some(m.iid) == number(n)) {
                Some(m) => reply(
                    200,
                    json!({"approved": !m.approved_by.is_empty(),
                       "approved_by": m.approved_by.iter().map(|u| json!({"user": {"username": u}})).collect::<Vec<_>>()}),
                ),
                None => error(404, json!("404 Not found")),
            }
        }
        ("GET", ["pipelines"]) => {
            let sha = q("sha").unwrap_or_default();
            match &sh.ci {
                None => reply(200, json!([])),
                Some(script) => {
                    let e = st.ci.entry(sha.clone()).or_insert((0, None));
                    e.0 += 1;
                    if e.1.is_none() {
                        e.1 = Some(run_ci(&sh.bare, &sha, script));
                    }
                    let status = match (e.0, &e.1) {
                        (1, _) => "running",
                        (_, Some((true, _))) => "success",
                        _ => "failed",
                    };
                    reply(
                        200,
                        json!([{"id": pipeline_id(&st, &sha), "sha": sha, "status": status}]),
                    )
                }
            }
        }
        ("GET", ["pipelines", id, "jobs"]) => {
            let Some((sha, (looks, result))) = st
                .ci
                .iter()
                .find(|(s, _)| pipeline_id(&st, s).to_string() == *id)
            else {
                return (error(404, json!("404 Not found")), false);
            };
            let status = match (looks, result) {
                (1, _) => "running",
                (_, Some((true, _))) => "success",
                _ => "failed",
            };
            let _ = sha;
            reply(
                200,
                json!([{"id": id.parse::<u64>().unwrap_or(0) * 10, "name": "test", "status": status, "stage": "test"}]),
            )
        }
        ("GET", ["jobs", id, "trace"]) => {
            let pid = id.parse::<u64>().unwrap_or(0) / 10;
            let log = st
                .ci
                .iter()
                .find(|(s, _)| pipeline_id(&st, s) == pid)
                .and_then(|(_, (_, r))| r.as_ref().map(|(_, l)| l.clone()))
                .unwrap_or_default();
            return (
                reply(
                    200,
                    Value::String(format!(
                        "$ sh ci.sh\n{log}\nERROR: Job failed: exit code 1\n"
                    )),
                ),
                true,
            );
        }
        ("PUT", ["merge_requests", n, "merge"]) => {
            let Some(i) = st.mrs.iter().position(|m| Some(m.iid) == number(n)) else {
                return (error(404, json!("404 Not found")), false);
            };
            let m = st.mrs[i].clone();
            if !m.open {
                return (error(405, json!("405 Method Not Allowed")), false);
            }
            let head = git(
                &sh.bare,
                &["rev-parse", &format!("refs/heads/{}", m.source)],
            )
            .unwrap_or_default();
            if body["sha"].as_str().is_some_and(|s| s != head) {
                return (
                    error(409, json!("SHA does not match HEAD of source branch")),
                    false,
                );
            }
            let squash = body["squash"].as_bool().unwrap_or(false);
            let message = format!("Merge branch '{}' into '{}'", m.source, m.target);
            match merge(
                &sh.bare,
                &m.target,
                &head,
                &message,
                if squash { "squash" } else { "merge" },
            ) {
                Some(sha) => {
                    st.mrs[i].open = false;
                    st.mrs[i].merge_sha = Some(sha.clone());
                    let m = st.mrs[i].clone();
                    let mut v = mr_json(sh, &m);
                    if squash {
                        v["squash_commit_sha"] = json!(sha);
                    }
                    reply(200, v)
                }
                None => error(405, json!("405 Method Not Allowed")),
            }
        }
        _ => error(404, json!("404 Not Found")),
    };
    (r, false)
}

/// A pipeline's id: its commit's place among those CI ran for, from 1.
fn pipeline_id(st: &State, sha: &str) -> u64 {
    st.ci
        .keys()
        .position(|s| s == sha)
        .map_or(0, |i| i as u64 + 1)
}
