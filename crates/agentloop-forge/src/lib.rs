//! The forges agentloop ships a run through: open or update the pull request, read its
//! checks and reviews, label it, ask for reviewers, comment, merge: GitHub's REST API
//! (`github`) and GitLab's (`gitlab`, merge requests and pipelines), behind the trait
//! the ship flow uses. The token is given by the caller and sent only as a bearer
//! header.

pub mod github;
pub mod gitlab;
pub mod http;
pub mod linear;
pub mod remote;
pub mod tracker;

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error("{url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("{what}: the forge answered {status}: {message}")]
    Refused {
        what: String,
        status: u16,
        message: String,
    },
    #[error("{0}")]
    Unexpected(String),
    /// Shipping could not work as configured; the message says what to change.
    #[error("{0}")]
    Unfit(String),
}

/// A pull (merge) request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub url: String,
    /// The commit its head branch points at.
    pub head_sha: String,
}

/// The state of a commit's checks, all of them together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChecksState {
    /// Some are still running (or none has reported yet).
    Pending,
    Success,
    Failure,
}

/// One check (a check run, or a commit status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    /// `success`, `failure`, `timed_out`, `cancelled`, `pending`, …
    pub conclusion: String,
    /// What it said: its output's title, summary and text, or a status's description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checks {
    pub state: ChecksState,
    pub checks: Vec<Check>,
}

/// How a pull request is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MergeMethod {
    #[default]
    Squash,
    Merge,
    Rebase,
}

impl MergeMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            MergeMethod::Squash => "squash",
            MergeMethod::Merge => "merge",
            MergeMethod::Rebase => "rebase",
        }
    }
}

/// What the forge said before a run started: who the token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    /// The token's user (GitHub's login, GitLab's username).
    pub user: String,
}

/// What the ship flow needs of a forge.
pub trait Forge {
    /// Asks, before a run starts, what shipping will need: that the token is a user's,
    /// that the repository is there and the user may push to it, and that the base
    /// branch is on the forge. Each refusal says what to fix.
    fn preflight(&self, base: &str) -> Result<Preflight, ForgeError>;
    /// Opens the pull request from `head` into `base`, or updates the open one (its
    /// title and body) when there is one already.
    fn open_or_update(
        &self,
        head: &str,
        base: &str,
        title: &str,
        body: &str,
        draft: bool,
    ) -> Result<(PullRequest, bool), ForgeError>;
    /// Writes the title and body of pull request `pr` again (open or not: no other
    /// is opened in its place).
    fn update(&self, pr: u64, title: &str, body: &str) -> Result<(), ForgeError>;
    fn add_labels(&self, pr: u64, labels: &[String]) -> Result<(), ForgeError>;
    /// Takes these labels off (one it does not bear is no error).
    fn remove_labels(&self, pr: u64, labels: &[String]) -> Result<(), ForgeError>;
    fn request_reviewers(&self, pr: u64, reviewers: &[String]) -> Result<(), ForgeError>;
    fn comment(&self, pr: u64, body: &str) -> Result<(), ForgeError>;
    /// Every check of `sha`: check runs and commit statuses.
    fn checks(&self, sha: &str) -> Result<Checks, ForgeError>;
    /// Who approves the pull request now (each reviewer's latest review counts).
    fn approvals(&self, pr: u64) -> Result<Vec<String>, ForgeError>;
    /// Merges it if its head is still `sha`; returns the commit on the base branch.
    fn merge(&self, pr: u64, sha: &str, method: MergeMethod) -> Result<String, ForgeError>;
    /// The commit it was merged as on the base branch, if it is merged (by agentloop
    /// before it died, or by a person).
    fn merged(&self, pr: u64) -> Result<Option<String>, ForgeError>;
}

/// The tracker of `source`, its token from the environment (`GITHUB_TOKEN`/`GH_TOKEN`,
/// `GITLAB_TOKEN`, `LINEAR_API_KEY`), at `api_url` or the service's own.
pub fn tracker(
    source: &tracker::Source,
    api_url: Option<&str>,
) -> Result<Box<dyn tracker::Tracker>, String> {
    let vars = tracker::token_vars(&source.kind);
    let token = vars
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .ok_or_else(|| format!("no token for {}: set {}", source.kind, vars.join(" or ")))?;
    Ok(match source.kind.as_str() {
        "github" => Box::new(crate::github::GitHub::new(
            api_url.unwrap_or(crate::github::API),
            &source.path,
            &token,
        )),
        "gitlab" => Box::new(crate::gitlab::GitLab::new(
            api_url.unwrap_or(crate::gitlab::API),
            &source.path,
            &token,
        )),
        _ => Box::new(crate::linear::Linear::new(
            api_url.unwrap_or(crate::linear::API),
            &source.path,
            &token,
        )),
    })
}
