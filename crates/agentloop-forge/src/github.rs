//! GitHub's REST API (and GitHub Enterprise's, at its `api_url`): pull requests,
//! check runs and commit statuses, reviews, labels, review requests, comments, merges.

use serde_json::{Value, json};

use crate::http::{Client, check, message_of};
use crate::tracker::{Issue, IssueState, Tracker};
use crate::{Check, Checks, ChecksState, Forge, ForgeError, MergeMethod, Preflight, PullRequest};

pub const API: &str = "https://api.github.com";

pub struct GitHub {
    client: Client,
    /// `OWNER/NAME`
    repo: String,
}

impl GitHub {
    pub fn new(api_url: &str, repo: &str, token: &str) -> GitHub {
        GitHub {
            client: Client::new(api_url, token, vec![("x-github-api-version", "2022-11-28")]),
            repo: repo.to_string(),
        }
    }

    fn path(&self, rest: &str) -> String {
        format!("/repos/{}{rest}", self.repo)
    }

    fn owner(&self) -> &str {
        self.repo.split('/').next().unwrap_or_default()
    }

    fn call(&self, method: &str, rest: &str, body: Option<Value>) -> Result<Value, ForgeError> {
        let path = self.path(rest);
        let a = self.client.send(method, &path, body.as_ref())?;
        check(&a, method, &path)?;
        Ok(a.body)
    }

    fn pr_of(v: &Value) -> Result<PullRequest, ForgeError> {
        Ok(PullRequest {
            number: v.get("number").and_then(Value::as_u64).ok_or_else(|| {
                ForgeError::Unexpected(format!("a pull request without a number: {v}"))
            })?,
            url: v
                .get("html_url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            head_sha: v
                .pointer("/head/sha")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
    }

    /// The open pull request from `head`, if there is one.
    fn open_pr(&self, head: &str) -> Result<Option<Value>, ForgeError> {
        let list = self.client.get_all(&self.path(&format!(
            "/pulls?state=open&head={}:{head}&per_page=100",
            self.owner()
        )))?;
        Ok(list
            .into_iter()
            .find(|p| p.pointer("/head/ref").and_then(Value::as_str) == Some(head)))
    }
}

impl Forge for GitHub {
    fn preflight(&self, base: &str) -> Result<Preflight, ForgeError> {
        let me = self.client.send("GET", "/user", None)?;
        if me.status == 401 {
            return Err(ForgeError::Unfit(format!(
                "GitHub refused the token ({}): set GITHUB_TOKEN to a valid token",
                message_of(&me.body)
            )));
        }
        check(&me, "GET", "/user")?;
        let user = me.body["login"].as_str().unwrap_or_default().to_string();
        let repo = self.client.send("GET", &self.path(""), None)?;
        if repo.status == 404 {
            return Err(ForgeError::Unfit(format!(
                "GitHub has no repository {} that {user} can see: check [ship] repo (or the remote's URL) and the token's access",
                self.repo
            )));
        }
        check(&repo, "GET", &self.path(""))?;
        if repo.body.pointer("/permissions/push") == Some(&Value::Bool(false)) {
            return Err(ForgeError::Unfit(format!(
                "{user} may not push to {}: a pull request needs a branch pushed there; use a token with write access",
                self.repo
            )));
        }
        let branch = self
            .client
            .send("GET", &self.path(&format!("/branches/{base}")), None)?;
        if branch.status == 404 {
            return Err(ForgeError::Unfit(format!(
                "{} has no branch {base} for the pull request to go into: push it first, or set [ship] base",
                self.repo
            )));
        }
        check(&branch, "GET", &self.path("/branches"))?;
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
        let path = self.path("/pulls");
        let a = self.client.send(
            "POST",
            &path,
            Some(
                &json!({"title": title, "head": head, "base": base, "body": body, "draft": draft}),
            ),
        )?;
        if a.status == 201 {
            return Ok((Self::pr_of(&a.body)?, true));
        }
        // "A pull request already exists for OWNER:BRANCH": update that one.
        let exists = a.status == 422 && message_of(&a.body).contains("already exists");
        if !exists {
            check(&a, "POST", &path)?;
        }
        let Some(open) = self.open_pr(head)? else {
            return Err(ForgeError::Unexpected(format!(
                "GitHub says a pull request from {head} exists, but none is open"
            )));
        };
        let pr = Self::pr_of(&open)?;
        let updated = self.call(
            "PATCH",
            &format!("/pulls/{}", pr.number),
            Some(json!({"title": title, "body": body})),
        )?;
        Ok((Self::pr_of(&updated)?, false))
    }

    fn update(&self, pr: u64, title: &str, body: &str) -> Result<(), ForgeError> {
        self.call(
            "PATCH",
            &format!("/pulls/{pr}"),
            Some(json!({"title": title, "body": body})),
        )
        .map(drop)
    }

    fn add_labels(&self, pr: u64, labels: &[String]) -> Result<(), ForgeError> {
        if labels.is_empty() {
            return Ok(());
        }
        self.call(
            "POST",
            &format!("/issues/{pr}/labels"),
            Some(json!({ "labels": labels })),
        )
        .map(drop)
    }

    fn remove_labels(&self, pr: u64, labels: &[String]) -> Result<(), ForgeError> {
        for label in labels {
            let path = self.path(&format!(
                "/issues/{pr}/labels/{}",
                crate::gitlab::encode(label)
            ));
            let a = self.client.send("DELETE", &path, None)?;
            // 404: the label is not on it (taken off already).
            if a.status != 404 {
                check(&a, "DELETE", &path)?;
            }
        }
        Ok(())
    }

    fn request_reviewers(&self, pr: u64, reviewers: &[String]) -> Result<(), ForgeError> {
        if reviewers.is_empty() {
            return Ok(());
        }
        self.call(
            "POST",
            &format!("/pulls/{pr}/requested_reviewers"),
            Some(json!({ "reviewers": reviewers })),
        )
        .map(drop)
    }

    fn comment(&self, pr: u64, body: &str) -> Result<(), ForgeError> {
        self.call(
            "POST",
            &format!("/issues/{pr}/comments"),
            Some(json!({ "body": body })),
        )
        .map(drop)
    }

    fn checks(&self, sha: &str) -> Result<Checks, ForgeError> {
        let mut checks = Vec::new();
        let mut pending = false;
        for page in self
            .client
            .get_all(&self.path(&format!("/commits/{sha}/check-runs?per_page=100")))?
        {
            for run in page
                .get("check_runs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let s = |p: &str| run.pointer(p).and_then(Value::as_str).unwrap_or_default();
                let conclusion = if s("/status") == "completed" {
                    s("/conclusion").to_string()
                } else {
                    pending = true;
                    "pending".to_string()
                };
                let output = [s("/output/title"), s("/output/summary"), s("/output/text")]
                    .into_iter()
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n");
                checks.push(Check {
                    name: s("/name").to_string(),
                    conclusion,
                    output,
                });
            }
        }
        let status = self.call("GET", &format!("/commits/{sha}/status"), None)?;
        for st in status
            .get("statuses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let s = |k: &str| st.get(k).and_then(Value::as_str).unwrap_or_default();
            if s("state") == "pending" {
                pending = true;
            }
            checks.push(Check {
                name: s("context").to_string(),
                conclusion: s("state").to_string(),
                output: s("description").to_string(),
            });
        }
        let failed = checks.iter().any(|c| {
            !matches!(
                c.conclusion.as_str(),
                "success" | "neutral" | "skipped" | "pending"
            )
        });
        let state = if failed {
            ChecksState::Failure
        } else if pending || checks.is_empty() {
            ChecksState::Pending
        } else {
            ChecksState::Success
        };
        Ok(Checks { state, checks })
    }

    fn approvals(&self, pr: u64) -> Result<Vec<String>, ForgeError> {
        let mut latest: Vec<(String, String)> = Vec::new();
        for review in self
            .client
            .get_all(&self.path(&format!("/pulls/{pr}/reviews?per_page=100")))?
        {
            let login = review
                .pointer("/user/login")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let state = review
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            // A comment does not change what a reviewer decided.
            if state == "COMMENTED" || login.is_empty() {
                continue;
            }
            latest.retain(|(l, _)| *l != login);
            latest.push((login, state));
        }
        Ok(latest
            .into_iter()
            .filter(|(_, s)| s == "APPROVED")
            .map(|(l, _)| l)
            .collect())
    }

    fn merge(&self, pr: u64, sha: &str, method: MergeMethod) -> Result<String, ForgeError> {
        let v = self.call(
            "PUT",
            &format!("/pulls/{pr}/merge"),
            Some(json!({"merge_method": method.as_str(), "sha": sha})),
        )?;
        v.get("sha")
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| ForgeError::Unexpected(format!("GitHub merged without a sha: {v}")))
    }

    fn merged(&self, pr: u64) -> Result<Option<String>, ForgeError> {
        let v = self.call("GET", &format!("/pulls/{pr}"), None)?;
        if v.get("merged").and_then(Value::as_bool) != Some(true) {
            return Ok(None);
        }
        Ok(v.get("merge_commit_sha")
            .and_then(Value::as_str)
            .map(String::from))
    }
}

impl Tracker for GitHub {
    fn issues(&self, label: &str) -> Result<Vec<Issue>, ForgeError> {
        let mut path = "/issues?state=open&per_page=100".to_string();
        if !label.is_empty() {
            path.push_str(&format!("&labels={label}"));
        }
        Ok(self
            .client
            .get_all(&self.path(&path))?
            .into_iter()
            // The issues list has the pull requests too.
            .filter(|i| i.get("pull_request").is_none())
            .filter_map(|i| Issue::from_rest(&i, "number", "body", "html_url"))
            .collect())
    }

    fn create(&self, title: &str, body: &str) -> Result<Issue, ForgeError> {
        let v = self.call(
            "POST",
            "/issues",
            Some(json!({ "title": title, "body": body })),
        )?;
        Issue::from_rest(&v, "number", "body", "html_url").ok_or_else(|| {
            ForgeError::Unexpected(format!("GitHub made an issue without a number: {v}"))
        })
    }

    fn comment(&self, key: &str, body: &str) -> Result<(), ForgeError> {
        self.call(
            "POST",
            &format!("/issues/{key}/comments"),
            Some(json!({ "body": body })),
        )
        .map(drop)
    }

    fn set_state(&self, key: &str, state: IssueState) -> Result<(), ForgeError> {
        let path = format!("/issues/{key}");
        match state {
            IssueState::Started | IssueState::Blocked => self
                .call(
                    "POST",
                    &format!("{path}/labels"),
                    Some(json!({ "labels": [format!("agentloop:{}", state.as_str())] })),
                )
                .map(drop),
            IssueState::Done => self
                .call(
                    "PATCH",
                    &path,
                    Some(json!({"state": "closed", "state_reason": "completed"})),
                )
                .map(drop),
            IssueState::Skipped => self
                .call(
                    "PATCH",
                    &path,
                    Some(json!({"state": "closed", "state_reason": "not_planned"})),
                )
                .map(drop),
        }
    }
}
