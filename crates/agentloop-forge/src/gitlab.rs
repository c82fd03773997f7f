//! GitLab's REST API v4 (gitlab.com or self-hosted, at its `api_url`): merge requests,
//! pipelines and their failing jobs' logs, approvals, labels, reviewers, notes, merges.

use serde_json::{Value, json};

use crate::http::{Client, check, message_of};
use crate::tracker::{Issue, IssueState, Tracker};
use crate::{Check, Checks, ChecksState, Forge, ForgeError, MergeMethod, Preflight, PullRequest};

pub const API: &str = "https://gitlab.com/api/v4";

/// The most of a failing job's log kept.
const TRACE: usize = 16 * 1024;

pub struct GitLab {
    client: Client,
    /// The project's path, URL-encoded (`group%2Fproject`).
    project: String,
}

/// `path` percent-encoded, as one segment of a URL.
pub(crate) fn encode(path: &str) -> String {
    path.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl GitLab {
    pub fn new(api_url: &str, project: &str, token: &str) -> GitLab {
        GitLab {
            client: Client::new(api_url, token, Vec::new()),
            project: encode(project),
        }
    }

    fn path(&self, rest: &str) -> String {
        format!("/projects/{}{rest}", self.project)
    }

    /// Changes merge request `iid` by the fields given (title, labels, reviewers…).
    fn put_mr(&self, iid: u64, fields: Value) -> Result<Value, ForgeError> {
        self.call("PUT", &format!("/merge_requests/{iid}"), Some(fields))
    }

    fn call(&self, method: &str, rest: &str, body: Option<Value>) -> Result<Value, ForgeError> {
        let path = if rest.starts_with("/users") {
            rest.to_string()
        } else {
            self.path(rest)
        };
        let a = self.client.send(method, &path, body.as_ref())?;
        check(&a, method, &path)?;
        Ok(a.body)
    }

    fn mr_of(v: &Value) -> Result<PullRequest, ForgeError> {
        Ok(PullRequest {
            number: v.get("iid").and_then(Value::as_u64).ok_or_else(|| {
                ForgeError::Unexpected(format!("a merge request without an iid: {v}"))
            })?,
            url: v
                .get("web_url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            head_sha: v
                .get("sha")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
    }

    /// User ids of `usernames` (GitLab assigns reviewers by id).
    fn user_ids(&self, usernames: &[String]) -> Result<Vec<u64>, ForgeError> {
        let mut ids = Vec::new();
        for u in usernames {
            let found = self.call("GET", &format!("/users?username={}", encode(u)), None)?;
            match found.pointer("/0/id").and_then(Value::as_u64) {
                Some(id) => ids.push(id),
                None => {
                    return Err(ForgeError::Unexpected(format!(
                        "GitLab has no user called {u}"
                    )));
                }
            }
        }
        Ok(ids)
    }
}

/// GitLab's Developer access level: enough to push a branch and open a merge request.
const DEVELOPER: u64 = 30;

impl Forge for GitLab {
    fn preflight(&self, base: &str) -> Result<Preflight, ForgeError> {
        let me = self.client.send("GET", "/user", None)?;
        if me.status == 401 {
            return Err(ForgeError::Unfit(format!(
                "GitLab refused the token ({}): set GITLAB_TOKEN to a valid token",
                message_of(&me.body)
            )));
        }
        check(&me, "GET", "/user")?;
        let user = me.body["username"].as_str().unwrap_or_default().to_string();
        let project = self.client.send("GET", &self.path(""), None)?;
        if project.status == 404 {
            return Err(ForgeError::Unfit(format!(
                "GitLab has no project {} that {user} can see: check [ship] repo (or the remote's URL) and the token's access",
                self.project.replace("%2F", "/")
            )));
        }
        check(&project, "GET", &self.path(""))?;
        let level = [
            "/permissions/project_access/access_level",
            "/permissions/group_access/access_level",
        ]
        .iter()
        .filter_map(|p| project.body.pointer(p).and_then(Value::as_u64))
        .max();
        if project.body.get("permissions").is_some() && level.unwrap_or(0) < DEVELOPER {
            return Err(ForgeError::Unfit(format!(
                "{user} may not push to {}: a merge request needs a branch pushed there; the user needs the Developer role or more",
                self.project.replace("%2F", "/")
            )));
        }
        let path = self.path(&format!("/repository/branches/{}", encode(base)));
        let branch = self.client.send("GET", &path, None)?;
        if branch.status == 404 {
            return Err(ForgeError::Unfit(format!(
                "{} has no branch {base} for the merge request to go into: push it first, or set [ship] base",
                self.project.replace("%2F", "/")
            )));
        }
        check(&branch, "GET", &path)?;
        Ok(Preflight { user })
    }

    fn open_or_update(
        &self,
        head: &str,
        base: &str,
        title: &str,
        body: &str,
        draft: bool,
    ) -> Result<(PullRequest, bool), ForgeError> {
        let title = if draft {
            format!("Draft: {title}")
        } else {
            title.to_string()
        };
        let path = self.path("/merge_requests");
        let a = self.client.send(
            "POST",
            &path,
            Some(&json!({"source_branch": head, "target_branch": base, "title": title, "description": body})),
        )?;
        if a.status == 201 {
            return Ok((Self::mr_of(&a.body)?, true));
        }
        // 409 "Another open merge request already exists for this source branch".
        let exists = a.status == 409 && message_of(&a.body).contains("already exists");
        if !exists {
            check(&a, "POST", &path)?;
        }
        let open = self.client.get_all(&self.path(&format!(
            "/merge_requests?state=opened&source_branch={}&per_page=100",
            encode(head)
        )))?;
        let Some(mr) = open.first() else {
            return Err(ForgeError::Unexpected(format!(
                "GitLab says a merge request from {head} exists, but none is open"
            )));
        };
        let iid = Self::mr_of(mr)?.number;
        let updated = self.put_mr(iid, json!({"title": title, "description": body}))?;
        Ok((Self::mr_of(&updated)?, false))
    }

    fn update(&self, pr: u64, title: &str, body: &str) -> Result<(), ForgeError> {
        self.put_mr(pr, json!({"title": title, "description": body}))
            .map(drop)
    }

    fn add_labels(&self, pr: u64, labels: &[String]) -> Result<(), ForgeError> {
        if labels.is_empty() {
            return Ok(());
        }
        self.put_mr(pr, json!({ "add_labels": labels.join(",") }))
            .map(drop)
    }

    fn remove_labels(&self, pr: u64, labels: &[String]) -> Result<(), ForgeError> {
        if labels.is_empty() {
            return Ok(());
        }
        self.put_mr(pr, json!({ "remove_labels": labels.join(",") }))
            .map(drop)
    }

    fn request_reviewers(&self, pr: u64, reviewers: &[String]) -> Result<(), ForgeError> {
        if reviewers.is_empty() {
            return Ok(());
        }
        let ids = self.user_ids(reviewers)?;
        self.put_mr(pr, json!({ "reviewer_ids": ids })).map(drop)
    }

    fn comment(&self, pr: u64, body: &str) -> Result<(), ForgeError> {
        self.call(
            "POST",
            &format!("/merge_requests/{pr}/notes"),
            Some(json!({ "body": body })),
        )
        .map(drop)
    }

    /// The newest pipeline of `sha`; for a failed one, each failed job with the end of
    /// its log.
    fn checks(&self, sha: &str) -> Result<Checks, ForgeError> {
        let pipelines = self.call(
            "GET",
            &format!("/pipelines?sha={sha}&per_page=1&order_by=id&sort=desc"),
            None,
        )?;
        let Some(p) = pipelines.as_array().and_then(|a| a.first()) else {
            return Ok(Checks {
                state: ChecksState::Pending,
                checks: Vec::new(),
            });
        };
        let id = p.get("id").and_then(Value::as_u64).unwrap_or_default();
        let status = p.get("status").and_then(Value::as_str).unwrap_or_default();
        let state = match status {
            "success" | "skipped" => ChecksState::Success,
            "failed" | "canceled" => ChecksState::Failure,
            _ => ChecksState::Pending,
        };
        let mut checks = Vec::new();
        for job in self
            .client
            .get_all(&self.path(&format!("/pipelines/{id}/jobs?per_page=100")))?
        {
            let name = job
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("job")
                .to_string();
            let st = job
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let output = if st == "failed" {
                let jid = job.get("id").and_then(Value::as_u64).unwrap_or_default();
                let a = self
                    .client
                    .send("GET", &self.path(&format!("/jobs/{jid}/trace")), None)?;
                let text = match &a.body {
                    Value::String(s) => s.clone(),
                    _ => String::new(),
                };
                let cut = text.len().saturating_sub(TRACE);
                let cut = (cut..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                text[cut..].to_string()
            } else {
                String::new()
            };
            checks.push(Check {
                name,
                conclusion: if st == "failed" { "failure".into() } else { st },
                output,
            });
        }
        Ok(Checks { state, checks })
    }

    fn approvals(&self, pr: u64) -> Result<Vec<String>, ForgeError> {
        let v = self.call("GET", &format!("/merge_requests/{pr}/approvals"), None)?;
        Ok(v.get("approved_by")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.pointer("/user/username").and_then(Value::as_str))
            .map(String::from)
            .collect())
    }

    fn merge(&self, pr: u64, sha: &str, method: MergeMethod) -> Result<String, ForgeError> {
        let v = self.call(
            "PUT",
            &format!("/merge_requests/{pr}/merge"),
            Some(json!({"sha": sha, "squash": method == MergeMethod::Squash})),
        )?;
        v.get("merge_commit_sha")
            .or_else(|| v.get("squash_commit_sha"))
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| ForgeError::Unexpected(format!("GitLab merged without a commit: {v}")))
    }

    fn merged(&self, pr: u64) -> Result<Option<String>, ForgeError> {
        let v = self.call("GET", &format!("/merge_requests/{pr}"), None)?;
        if v.get("state").and_then(Value::as_str) != Some("merged") {
            return Ok(None);
        }
        Ok(v.get("merge_commit_sha")
            .or_else(|| v.get("squash_commit_sha"))
            .and_then(Value::as_str)
            .map(String::from))
    }
}

impl Tracker for GitLab {
    fn issues(&self, label: &str) -> Result<Vec<Issue>, ForgeError> {
        let mut path = "/issues?state=opened&per_page=100".to_string();
        if !label.is_empty() {
            path.push_str(&format!("&labels={}", encode(label)));
        }
        Ok(self
            .client
            .get_all(&self.path(&path))?
            .into_iter()
            .filter_map(|i| Issue::from_rest(&i, "iid", "description", "web_url"))
            .collect())
    }

    fn create(&self, title: &str, body: &str) -> Result<Issue, ForgeError> {
        let v = self.call(
            "POST",
            "/issues",
            Some(json!({ "title": title, "description": body })),
        )?;
        Issue::from_rest(&v, "iid", "description", "web_url").ok_or_else(|| {
            ForgeError::Unexpected(format!("GitLab made an issue without a iid: {v}"))
        })
    }

    fn comment(&self, key: &str, body: &str) -> Result<(), ForgeError> {
        self.call(
            "POST",
            &format!("/issues/{key}/notes"),
            Some(json!({ "body": body })),
        )
        .map(drop)
    }

    fn set_state(&self, key: &str, state: IssueState) -> Result<(), ForgeError> {
        let body = match state {
            IssueState::Started | IssueState::Blocked => {
                json!({ "add_labels": format!("agentloop:{}", state.as_str()) })
            }
            IssueState::Done => json!({ "state_event": "close" }),
            IssueState::Skipped => {
                json!({ "state_event": "close", "add_labels": "agentloop:skipped" })
            }
        };
        self.call("PUT", &format!("/issues/{key}"), Some(body))
            .map(drop)
    }
}
