//! A mock of GitHub's REST API on 127.0.0.1 for one repository, backed by a real bare
//! git repository on disk: pull requests (422 on a second one from the same head,
//! pages with a `Link` header), check runs computed by running the test's CI script on
//! a checkout of the commit (in progress on the first look, then done), commit
//! statuses, reviews a test gives as a person would, labels, review requests, comments,
//! merges made in the bare repository (405 when they conflict, 409 when the head moved),
//! bearer-token auth (401 "Bad credentials"), and rate limits on demand (403 with
//! `x-ratelimit-remaining: 0` and `x-ratelimit-reset`, or 429 with `retry-after`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use super::{Reply, git, header, merge, now, page, reply, run_ci};

mod issues;

#[derive(Debug, Clone)]
pub struct MockPr {
    pub number: u64,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
    pub open: bool,
    pub merge_sha: Option<String>,
    pub labels: Vec<String>,
    pub reviewers: Vec<String>,
    pub comments: Vec<String>,
    /// (login, APPROVED | CHANGES_REQUESTED | COMMENTED)
    pub reviews: Vec<(String, String)>,
}

/// An issue (not a pull request).
#[derive(Debug, Clone)]
pub struct MockIssue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub open: bool,
    pub state_reason: Option<String>,
    pub comments: Vec<String>,
}

#[derive(Default)]
struct State {
    prs: Vec<MockPr>,
    issues: Vec<MockIssue>,
    /// The CI's verdict on each commit (passed, output) and how often it was looked at.
    ci: BTreeMap<String, (u32, Option<(bool, String)>)>,
    /// Requests answered with a rate limit before the next real answer: (status, count).
    limited: Option<(u16, u32)>,
    /// The next request of this method whose path ends so gets this answer: (method,
    /// path's end, status, message).
    fail: Option<(String, String, u16, String)>,
    /// The token's user may only read the repository.
    read_only: bool,
    /// The token no longer works (revoked after the run started).
    revoked: bool,
    log: Vec<String>,
}

struct Shared {
    repo: String,
    bare: PathBuf,
    token: String,
    ci: Option<String>,
    state: Mutex<State>,
}

pub struct MockGitHub {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl MockGitHub {
    /// `repo` (`OWNER/NAME`) backed by the bare repository `bare`; `token` is the only
    /// one accepted; `ci`, a shell script run in a checkout of each commit asked about,
    /// makes its one check run, `ci`.
    pub fn start(repo: &str, bare: &Path, token: &str, ci: Option<&str>) -> MockGitHub {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let addr = server.server_addr().to_ip().expect("an IP address");
        let shared = Arc::new(Shared {
            repo: repo.to_string(),
            bare: bare.to_path_buf(),
            token: token.to_string(),
            ci: ci.map(String::from),
            state: Mutex::new(State::default()),
        });
        let (s, sh) = (server.clone(), shared.clone());
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let sh = sh.clone();
                std::thread::spawn(move || handle(&sh, req));
            }
        });
        MockGitHub {
            addr,
            shared,
            server,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, the API's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn prs(&self) -> Vec<MockPr> {
        self.shared.state.lock().unwrap().prs.clone()
    }

    /// Requests received, as `METHOD path`.
    pub fn log(&self) -> Vec<String> {
        self.shared.state.lock().unwrap().log.clone()
    }

    pub fn issues(&self) -> Vec<MockIssue> {
        self.shared.state.lock().unwrap().issues.clone()
    }

    /// Opens an issue (numbers are shared with pull requests, as on GitHub).
    pub fn add_issue(&self, title: &str, body: &str, labels: &[&str]) -> u64 {
        let mut st = self.shared.state.lock().unwrap();
        let number = next_number(&st);
        st.issues.push(MockIssue {
            number,
            title: title.into(),
            body: body.into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            open: true,
            state_reason: None,
            comments: Vec::new(),
        });
        number
    }

    /// A person reviews pull request `number`.
    pub fn review(&self, number: u64, login: &str, state: &str) {
        let mut st = self.shared.state.lock().unwrap();
        if let Some(pr) = st.prs.iter_mut().find(|p| p.number == number) {
            pr.reviews.push((login.to_string(), state.to_string()));
        }
    }

    /// The token's user may read the repository but not push to it.
    pub fn read_only(&self) {
        self.shared.state.lock().unwrap().read_only = true;
    }

    /// From now on the token is refused (401), as after a person revokes it.
    pub fn revoke(&self) {
        self.shared.state.lock().unwrap().revoked = true;
    }

    /// The next `method` request whose path ends with `path_end` is refused with
    /// `status` and `message`, once (403 "Resource not accessible by integration": a
    /// token without the right to label).
    pub fn fail_next(&self, method: &str, path_end: &str, status: u16, message: &str) {
        self.shared.state.lock().unwrap().fail =
            Some((method.into(), path_end.into(), status, message.into()));
    }

    /// The next `count` requests are refused with a rate limit: 403 (primary, with
    /// `x-ratelimit-reset`) or 429 (secondary, with `retry-after`).
    pub fn rate_limit_next(&self, status: u16, count: u32) {
        self.shared.state.lock().unwrap().limited = Some((status, count));
    }
}

impl Drop for MockGitHub {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn error(status: u16, message: &str) -> Reply {
    reply(
        status,
        json!({"message": message, "documentation_url": "https://docs.github.com/rest", "status": status.to_string()}),
    )
}

fn handle(sh: &Shared, mut req: tiny_http::Request) {
    let mut text = String::new();
    let _ = req.as_reader().read_to_string(&mut text);
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let method = req.method().to_string();
    let url = req.url().to_string();
    let auth = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("authorization"))
        .map(|h| h.value.to_string())
        .unwrap_or_default();
    let r = answer(sh, &method, &url, &body, &auth);
    let mut resp = tiny_http::Response::from_string(r.body.to_string())
        .with_status_code(r.status)
        .with_header(header("content-type", "application/json; charset=utf-8"))
        .with_header(header("x-ratelimit-limit", "5000"))
        .with_header(header("x-github-api-version-selected", "2022-11-28"));
    for (k, v) in &r.headers {
        resp = resp.with_header(header(k, v));
    }
    let _ = req.respond(resp);
}

fn answer(sh: &Shared, method: &str, url: &str, body: &Value, auth: &str) -> Reply {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let q = |k: &str| {
        query.split('&').find_map(|kv| {
            kv.split_once('=')
                .filter(|(key, _)| *key == k)
                .map(|(_, v)| v.to_string())
        })
    };
    let mut st = sh.state.lock().unwrap();
    st.log.push(format!("{method} {path}"));
    if let Some((status, n)) = st.limited {
        st.limited = (n > 1).then_some((status, n - 1));
        let mut r = error(status, "API rate limit exceeded for user ID 1.");
        if status == 429 {
            r.headers.push(("retry-after".into(), "1".into()));
        } else {
            r.headers.push(("x-ratelimit-remaining".into(), "0".into()));
            r.headers
                .push(("x-ratelimit-reset".into(), (now() + 1).to_string()));
        }
        return r;
    }
    if let Some((m, end, status, message)) = st.fail.clone()
        && m == method
        && path.ends_with(&end)
    {
        st.fail = None;
        return error(status, &message);
    }
    if st.revoked
        || (auth != format!("Bearer {}", sh.token) && auth != format!("token {}", sh.token))
    {
        return error(401, "Bad credentials");
    }
    if (method, path) == ("GET", "/user") {
        return reply(
            200,
            json!({"login": "agentloop-test", "id": 1, "type": "User"}),
        );
    }
    let Some(rest) = path.strip_prefix(&format!("/repos/{}", sh.repo)) else {
        return error(404, "Not Found");
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    let number = |s: &str| s.parse::<u64>().ok();
    let base_url = format!("/repos/{}", sh.repo);
    if let Some(r) = issues::answer(sh, &mut st, method, &parts, body, &q) {
        return r;
    }
    match (method, parts.as_slice()) {
        ("GET", []) => {
            let default = git(&sh.bare, &["symbolic-ref", "--short", "HEAD"]).unwrap_or_default();
            let push = !st.read_only;
            reply(
                200,
                json!({"full_name": sh.repo, "default_branch": default, "permissions": {"admin": false, "maintain": false, "push": push, "triage": push, "pull": true}}),
            )
        }
        ("GET", ["branches", name @ ..]) => {
            let name = name.join("/");
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
                    json!({"name": name, "commit": {"sha": sha}, "protected": false}),
                ),
                None => error(404, "Branch not found"),
            }
        }
        ("POST", ["pulls"]) => {
            let head = body["head"].as_str().unwrap_or_default().to_string();
            let base = body["base"].as_str().unwrap_or_default().to_string();
            if git(
                &sh.bare,
                &["rev-parse", "--verify", &format!("refs/heads/{head}")],
            )
            .is_none()
            {
                return validation("head", "invalid");
            }
            if git(
                &sh.bare,
                &["rev-parse", "--verify", &format!("refs/heads/{base}")],
            )
            .is_none()
            {
                return validation("base", "invalid");
            }
            if st.prs.iter().any(|p| p.open && p.head == head) {
                let owner = sh.repo.split('/').next().unwrap_or_default();
                return reply(
                    422,
                    json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": format!("A pull request already exists for {owner}:{head}.")}], "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422"}),
                );
            }
            let pr = MockPr {
                number: next_number(&st),
                head,
                base,
                title: body["title"].as_str().unwrap_or_default().to_string(),
                body: body["body"].as_str().unwrap_or_default().to_string(),
                draft: body["draft"].as_bool().unwrap_or(false),
                open: true,
                merge_sha: None,
                labels: Vec::new(),
                reviewers: Vec::new(),
                comments: Vec::new(),
                reviews: Vec::new(),
            };
            let v = pr_json(sh, &pr);
            st.prs.push(pr);
            reply(201, v)
        }
        ("GET", ["pulls"]) => {
            let head = q("head").map(|h| h.rsplit(':').next().unwrap_or_default().to_string());
            let want_open = q("state").as_deref() != Some("all");
            let items: Vec<Value> = st
                .prs
                .iter()
                .filter(|p| !want_open || p.open)
                .filter(|p| head.as_ref().is_none_or(|h| *h == p.head))
                .map(|p| pr_json(sh, p))
                .collect();
            page(items, &q, &format!("{base_url}/pulls"))
        }
        ("PATCH", ["pulls", n]) => match st.prs.iter_mut().find(|p| Some(p.number) == number(n)) {
            Some(pr) => {
                if let Some(t) = body["title"].as_str() {
                    pr.title = t.to_string();
                }
                if let Some(b) = body["body"].as_str() {
                    pr.body = b.to_string();
                }
                let pr = pr.clone();
                reply(200, pr_json(sh, &pr))
            }
            None => error(404, "Not Found"),
        },
        ("POST", ["issues", n, "labels"]) => with_pr(&mut st, number(n), |pr| {
            for l in body["labels"].as_array().into_iter().flatten() {
                let l = l.as_str().unwrap_or_default().to_string();
                if !pr.labels.contains(&l) {
                    pr.labels.push(l);
                }
            }
            reply(
                200,
                json!(
                    pr.labels
                        .iter()
                        .map(|l| json!({"name": l}))
                        .collect::<Vec<_>>()
                ),
            )
        }),
        ("DELETE", ["issues", n, "labels", name]) => with_pr(&mut st, number(n), |pr| {
            let name = decode(name);
            if !pr.labels.contains(&name) {
                return error(404, "Label does not exist");
            }
            pr.labels.retain(|l| *l != name);
            reply(
                200,
                json!(
                    pr.labels
                        .iter()
                        .map(|l| json!({"name": l}))
                        .collect::<Vec<_>>()
                ),
            )
        }),
        ("POST", ["pulls", n, "requested_reviewers"]) => with_pr(&mut st, number(n), |pr| {
            for r in body["reviewers"].as_array().into_iter().flatten() {
                pr.reviewers
                    .push(r.as_str().unwrap_or_default().to_string());
            }
            reply(201, json!({"number": pr.number}))
        }),
        ("POST", ["issues", n, "comments"]) => with_pr(&mut st, number(n), |pr| {
            pr.comments
                .push(body["body"].as_str().unwrap_or_default().to_string());
            reply(201, json!({"id": pr.comments.len(), "body": body["body"]}))
        }),
        ("GET", ["pulls", n]) => match st.prs.iter().find(|p| Some(p.number) == number(n)) {
            Some(pr) => reply(200, pr_json(sh, pr)),
            None => error(404, "Not Found"),
        },
        ("GET", ["pulls", n, "reviews"]) => {
            let Some(pr) = st.prs.iter().find(|p| Some(p.number) == number(n)) else {
                return error(404, "Not Found");
            };
            let items: Vec<Value> = pr
                .reviews
                .iter()
                .enumerate()
                .map(|(i, (login, state))| json!({"id": i + 1, "user": {"login": login}, "state": state}))
                .collect();
            page(
                items,
                &q,
                &format!("{base_url}/pulls/{}/reviews", pr.number),
            )
        }
        ("GET", ["commits", sha, "check-runs"]) => {
            let sha = sha.to_string();
            let Some(ci) = sh.ci.clone() else {
                return reply(200, json!({"total_count": 0, "check_runs": []}));
            };
            let entry = st.ci.entry(sha.clone()).or_insert((0, None));
            entry.0 += 1;
            let first = entry.0 == 1;
            if entry.1.is_none() {
                entry.1 = Some(run_ci(&sh.bare, &sha, &ci));
            }
            let run = if first {
                json!({"name": "ci", "head_sha": sha, "status": "in_progress", "conclusion": null, "output": {"title": null, "summary": null, "text": null}})
            } else {
                let (ok, out) = entry.1.clone().unwrap_or_default();
                json!({"name": "ci", "head_sha": sha, "status": "completed",
                       "conclusion": if ok { "success" } else { "failure" },
                       "output": {"title": if ok { "CI passed" } else { "CI failed" }, "summary": "sh ci.sh", "text": out}})
            };
            reply(200, json!({"total_count": 1, "check_runs": [run]}))
        }
        ("GET", ["commits", sha, "status"]) => reply(
            200,
            json!({"state": "pending", "sha": sha, "total_count": 0, "statuses": []}),
        ),
        ("PUT", ["pulls", n, "merge"]) => {
            let Some(i) = st.prs.iter().position(|p| Some(p.number) == number(n)) else {
                return error(404, "Not Found");
            };
            let pr = st.prs[i].clone();
            if !pr.open {
                return error(405, "Pull Request is not mergeable");
            }
            let head = git(&sh.bare, &["rev-parse", &format!("refs/heads/{}", pr.head)])
                .unwrap_or_default();
            if body["sha"].as_str().is_some_and(|s| s != head) {
                return error(
                    409,
                    "Head branch was modified. Review and try the merge again.",
                );
            }
            let method = body["merge_method"].as_str().unwrap_or("merge");
            let message = format!("{} (#{})", pr.title, pr.number);
            match merge(&sh.bare, &pr.base, &head, &message, method) {
                Some(sha) => {
                    st.prs[i].open = false;
                    st.prs[i].merge_sha = Some(sha.clone());
                    reply(
                        200,
                        json!({"sha": sha, "merged": true, "message": "Pull Request successfully merged"}),
                    )
                }
                None => error(405, "Pull Request is not mergeable"),
            }
        }
        _ => error(404, "Not Found"),
    }
}

fn validation(field: &str, code: &str) -> Reply {
    reply(
        422,
        json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "field": field, "code": code}], "status": "422"}),
    )
}

fn next_number(st: &State) -> u64 {
    (st.prs.len() + st.issues.len()) as u64 + 1
}

/// A percent-encoded URL segment, decoded.
fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn with_pr(st: &mut State, n: Option<u64>, f: impl FnOnce(&mut MockPr) -> Reply) -> Reply {
    match st.prs.iter_mut().find(|p| Some(p.number) == n) {
        Some(pr) => f(pr),
        None => error(404, "Not Found"),
    }
}

fn pr_json(sh: &Shared, p: &MockPr) -> Value {
    let sha = git(&sh.bare, &["rev-parse", &format!("refs/heads/{}", p.head)]).unwrap_or_default();
    json!({
        "number": p.number,
        "html_url": format!("https://github.invalid/{}/pull/{}", sh.repo, p.number),
        "state": if p.open { "open" } else { "closed" },
        "title": p.title, "body": p.body, "draft": p.draft,
        "merged": p.merge_sha.is_some(), "merge_commit_sha": p.merge_sha,
        "head": {"ref": p.head, "sha": sha},
        "base": {"ref": p.base},
    })
}
