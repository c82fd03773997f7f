//! Issue trackers as a plan's source and its status sink: GitHub and GitLab issues
//! (REST) and Linear (GraphQL). Issues become tasks; while the run goes on, each issue
//! gets a comment and a state when its task starts, is blocked, is done or is skipped.

use serde::{Deserialize, Serialize};

use crate::ForgeError;

/// An issue as agentloop reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// How the tracker names it to people: `12` (GitHub, GitLab) or `ENG-12` (Linear).
    pub key: String,
    pub title: String,
    pub body: String,
    pub url: String,
}

impl Issue {
    /// An issue as a REST tracker answers it: its number under `number_key` (GitHub's
    /// `number`, GitLab's `iid`), its text under `body_key`, its page under `url_key`.
    pub(crate) fn from_rest(
        v: &serde_json::Value,
        number_key: &str,
        body_key: &str,
        url_key: &str,
    ) -> Option<Issue> {
        let s = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Some(Issue {
            key: v.get(number_key)?.as_u64()?.to_string(),
            title: s("title"),
            body: s(body_key),
            url: s(url_key),
        })
    }
}

/// Where a task's issue is moved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueState {
    Started,
    Blocked,
    Done,
    Skipped,
}

impl IssueState {
    pub fn as_str(self) -> &'static str {
        match self {
            IssueState::Started => "started",
            IssueState::Blocked => "blocked",
            IssueState::Done => "done",
            IssueState::Skipped => "skipped",
        }
    }
}

pub trait Tracker {
    /// The open issues that match `filter` (a label for GitHub and GitLab, a state name
    /// for Linear; empty: all open ones), every page.
    fn issues(&self, filter: &str) -> Result<Vec<Issue>, ForgeError>;
    fn comment(&self, key: &str, body: &str) -> Result<(), ForgeError>;
    /// Moves the issue: a label for started and blocked on GitHub and GitLab (closed for
    /// done and skipped), Linear's workflow state of that type.
    fn set_state(&self, key: &str, state: IssueState) -> Result<(), ForgeError>;
    /// Opens a new issue (a run's follow-up).
    fn create(&self, title: &str, body: &str) -> Result<Issue, ForgeError>;
}

/// A tracker source as `plan import` and `[tracker] source` name it:
/// `github:OWNER/REPO?label=L`, `gitlab:GROUP/PROJECT?label=L`, `linear:TEAM?state=S`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub kind: String,
    pub path: String,
    pub filter: String,
}

impl Source {
    pub fn parse(s: &str) -> Option<Source> {
        let (kind, rest) = s.split_once(':')?;
        if !matches!(kind, "github" | "gitlab" | "linear") {
            return None;
        }
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if path.is_empty() {
            return None;
        }
        let filter = query
            .split('&')
            .find_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                matches!(k, "label" | "state").then(|| v.replace("%20", " ").replace('+', " "))
            })
            .unwrap_or_default();
        Some(Source {
            kind: kind.to_string(),
            path: path.to_string(),
            filter,
        })
    }

    /// The source without its filter: what `[tracker] source` keeps.
    pub fn without_filter(&self) -> String {
        format!("{}:{}", self.kind, self.path)
    }

    /// The task id of issue `key`: `GH-12`, `GL-12`, or Linear's own `ENG-12`.
    pub fn task_id(&self, key: &str) -> String {
        match self.kind.as_str() {
            "github" => format!("GH-{key}"),
            "gitlab" => format!("GL-{key}"),
            _ => key.to_string(),
        }
    }

    /// The issue key of task `id`, if the task came from this tracker.
    pub fn issue_key(&self, id: &str) -> Option<String> {
        match self.kind.as_str() {
            "github" => id.strip_prefix("GH-").map(String::from),
            "gitlab" => id.strip_prefix("GL-").map(String::from),
            _ => {
                let (team, n) = id.rsplit_once('-')?;
                (team.eq_ignore_ascii_case(&self.path) && n.parse::<u64>().is_ok())
                    .then(|| id.to_string())
            }
        }
    }
}

/// The token variable of a tracker kind.
pub fn token_vars(kind: &str) -> &'static [&'static str] {
    match kind {
        "github" => &["GITHUB_TOKEN", "GH_TOKEN"],
        "gitlab" => &["GITLAB_TOKEN"],
        _ => &["LINEAR_API_KEY"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_and_task_ids() {
        let s = Source::parse("github:octo/hello?label=agentloop").unwrap();
        assert_eq!(
            (s.kind.as_str(), s.path.as_str(), s.filter.as_str()),
            ("github", "octo/hello", "agentloop")
        );
        assert_eq!(s.task_id("12"), "GH-12");
        assert_eq!(s.issue_key("GH-12").as_deref(), Some("12"));
        assert_eq!(s.issue_key("T1"), None);
        let l = Source::parse("linear:ENG?state=Todo%20Next").unwrap();
        assert_eq!(l.filter, "Todo Next");
        assert_eq!(l.issue_key("ENG-7").as_deref(), Some("ENG-7"));
        assert_eq!(l.issue_key("OPS-7"), None);
        assert_eq!(Source::parse("jira:X"), None);
        assert_eq!(Source::parse("plan.json"), None);
    }
}
