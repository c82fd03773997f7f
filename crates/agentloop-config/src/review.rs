//! `[review]`: an independent reviewer of each verified task — another agent (a
//! different CLI or model than the worker, by choice), with read-only tools, that sees
//! the task, its criteria, the diff against the baseline and the per-test evidence,
//! never the worker's transcript or claims, and answers APPROVE or REJECT with
//! findings. A REJECT is binding: its findings are the worker's next digest.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReviewConfig {
    /// The reviewing agent (a name of `[agents]` or a built-in); none: no review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A second reviewer, after the first approves, for high-risk work (what the diff
    /// gates flag: security, database, an external dependency, architecture).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second: Option<String>,
    /// `always`, `risk` (only work the diff gates flag, or larger than a small change)
    /// or `never`.
    pub when: ReviewWhen,
    /// Rejections of one task before it waits for a person with the findings.
    pub max_rounds: u32,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig {
            agent: None,
            second: None,
            when: ReviewWhen::Risk,
            max_rounds: 2,
        }
    }
}

impl ReviewConfig {
    /// Whether any task is reviewed.
    pub fn on(&self) -> bool {
        self.agent.is_some() && self.when != ReviewWhen::Never
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ReviewWhen {
    Always,
    #[default]
    Risk,
    Never,
}
