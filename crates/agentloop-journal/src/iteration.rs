//! The records of one iteration: how it started, what its agent did (and the error
//! kinds an agent run can end in), what its checks found, how it ended, and where its
//! job stands on a cluster.

use serde::{Deserialize, Serialize};

use agentloop_ground::signals::Signals;
use agentloop_ground::values::Usage;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationStarted {
    pub iteration: u32,
    pub task: String,
    pub attempt: u32,
    pub kind: IterationKind,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_before: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steer: Vec<String>,
    /// The worktree the agent works in (a run with workers); none: the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationKind {
    /// First attempt at a task.
    Work,
    /// Another attempt, with the last failure's digest.
    Retry,
    /// The agent is asked to replan or split the task.
    Replan,
    /// The fallback agent takes over the task.
    Fallback,
    /// The same failure came back: find its cause (hypotheses, how to test each), not a
    /// fix; what it finds goes to the next attempt.
    Debug,
}

impl IterationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            IterationKind::Work => "work",
            IterationKind::Retry => "retry",
            IterationKind::Replan => "replan",
            IterationKind::Fallback => "fallback",
            IterationKind::Debug => "debug",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AgentFinished {
    pub iteration: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the agent, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    /// Killed on request (`stop --now`).
    #[serde(default)]
    pub killed: bool,
    pub duration_ms: u64,
    pub output_bytes: u64,
    #[serde(default)]
    pub truncated: bool,
    pub signals: Signals,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub cost_usd: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<AgentError>,
    /// When the agent's service said its limit resets (Unix milliseconds), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_after: Option<String>,
    #[serde(default)]
    pub changed_files: Vec<String>,
    /// The file the agent's own tool calls edited most in this run, and how often (twice
    /// or more; from the CLI's tool log, where it reports one): the thrashing breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_edited: Option<(String, u32)>,
    /// At a claim: every path changed since the task's current stretch of iterations
    /// began, from a full look at the tree. The protected and scope guards judge these
    /// with `changed_files`, so a change an earlier iteration left behind (or one made
    /// where the watch of the tree did not see it) is judged when the task is claimed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_changed: Vec<String>,
    /// The end of the agent's final message (redacted; its last lines, as much as a
    /// digest quotes): what it said it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_message: Option<String>,
    /// The calls it made to agentloop's MCP server, in order (redacted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_calls: Vec<agentloop_ground::reports::Report>,
    /// The end of what the agent wrote on standard error (redacted), kept when its
    /// process failed: where a crash says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentError {
    pub kind: AgentErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentErrorKind {
    /// The program could not be started.
    Spawn,
    Timeout,
    RateLimit,
    Overloaded,
    Auth,
    Billing,
    Other,
    /// The executor lost the job the agent ran in (a node failed, the job was
    /// preempted or cancelled by someone else): the iteration was interrupted, and is
    /// redone without counting as an attempt.
    Lost,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyFinished {
    pub iteration: u32,
    pub passed: bool,
    pub commands: Vec<CommandResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// A short account of the first failure, for the next prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Per-test evidence over all its checks: the named tests, regressions, tests no
    /// longer run, flaky ones forgiven (none: exit codes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<agentloop_evidence::Judged>,
    /// The held-out checks run after its own checks passed (`Holdout:`), without
    /// their output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_out: Vec<HeldOutResult>,
    /// Files the agent added that the checks would have loaded or run, kept out of
    /// the judge's copy (default-deny).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// Files the agent added that the checks would load on their own and that reached
    /// them because the task writes tests (`mode: tdd`, `(new)`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admitted: Vec<String>,
}

/// A file the agent added that did not reach the judge, and why the checks would have
/// loaded or run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub path: String,
    pub why: String,
}

impl LeftOut {
    /// `tests/test_aaa.py: added by the agent, left out of the checks' copy (a test
    /// file)`.
    pub fn line(&self) -> String {
        format!(
            "{}: added by the agent, left out of the checks' copy ({})",
            self.path, self.why
        )
    }
}

/// A reviewer's verdict on a verified task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    Approve,
    Reject,
}

/// One thing a reviewer found wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub what: String,
}

impl Finding {
    /// `file:line: what`.
    pub fn words(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{f}:{l}: {}", self.what),
            (Some(f), None) => format!("{f}: {}", self.what),
            _ => self.what.clone(),
        }
    }
}

/// A review of a verified task begun (`review_started`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewStarted {
    pub iteration: u32,
    pub reviewer: String,
    /// 1, or 2 for the second reviewer of high-risk work.
    pub round: u32,
    /// How many reviewers this work gets (0: none, it is low risk).
    pub of: u32,
    /// Why it gets them: `low`, `medium`, `high (security: src/auth.rs)`.
    pub risk: String,
}

/// A reviewer's answer (`review_finished`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewFinished {
    pub iteration: u32,
    pub reviewer: String,
    pub round: u32,
    /// How many reviewers this work gets.
    pub of: u32,
    pub verdict: ReviewVerdict,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// The answer held no verdict agentloop could read (counted as a REJECT).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unparsable: bool,
    #[serde(default)]
    pub cost_usd: f64,
}

/// One held-out check's result, as the journal keeps it: no output, no content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOutResult {
    pub name: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Its exit code, time, counts and problem are kept in its own log since stop 74
    /// (the agent's code could set them): recorded as none here.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duration_ms: u64,
    /// The report that judged it (`pytest`, `tap (its output)`); none: its exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// How its tests ended, by the report (counts only: the tests' names stay hidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<agentloop_evidence::Counts>,
    /// Why its report could not be read, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CommandResult {
    /// Whether it passed: by its report where the report decided, else by its exit.
    pub fn passed(&self) -> bool {
        match self.tests.as_ref().filter(|t| t.judged) {
            Some(t) => !self.timed_out && t.problem.is_none() && t.reason.is_none(),
            None => self.exit_code == Some(0),
        }
    }
}

impl VerifyFinished {
    /// Secrets out of what it quotes of its commands' output: the digest and each
    /// failed command's cause line.
    pub fn redact(&mut self, r: &agentloop_ground::redact::Redactor) {
        self.digest = self.digest.take().map(|d| r.redact(&d).into_owned());
        for c in &mut self.commands {
            c.cause = c.cause.take().map(|x| r.redact(&x).into_owned());
        }
    }

    /// The check that failed, and why: its report's reason (a named test not passing,
    /// a regression, no report), else its exit.
    /// The first failing test and its own message, as its runner reported it: a named
    /// test first, then a regression, then any failure (the message's first line, cut
    /// at 200 characters).
    fn first_failure(&self) -> Option<(String, String)> {
        let e = self.evidence.as_ref()?;
        let bad = |s: &&agentloop_evidence::Seen| {
            s.now != Some(agentloop_evidence::Outcome::Passed) && s.message.is_some()
        };
        let s = e
            .named
            .iter()
            .find(bad)
            .or_else(|| e.regressions.iter().find(bad))
            .or_else(|| e.failing.iter().find(bad))?;
        let line = s
            .message
            .as_deref()?
            .lines()
            .map(str::trim)
            // go test's framing (`=== RUN`, `--- FAIL: …`) is not the test's own words.
            .find(|l| !l.is_empty() && !l.starts_with("=== ") && !l.starts_with("--- "))?;
        let line: String = if line.chars().count() > 200 {
            line.chars().take(199).chain(['…']).collect()
        } else {
            line.to_string()
        };
        Some((s.id.clone(), line))
    }

    pub fn failure_words(&self) -> String {
        if let Some(h) = self.held_out.iter().find(|h| !h.passed) {
            return format!("held-out check `{}` failed", h.name);
        }
        for c in &self.commands {
            if let Some(t) = c.tests.as_ref().filter(|t| t.judged) {
                if let Some(p) = &t.problem {
                    return format!("`{}`: no per-test evidence: {p}", c.command);
                }
                if let Some(r) = &t.reason {
                    return match self.first_failure() {
                        // The test the reason names: its message beside it.
                        Some((id, said)) if r.contains(id.as_str()) => {
                            format!("`{}`: {r} — {said}", c.command)
                        }
                        Some((id, said)) => format!("`{}`: {r}; {id}: {said}", c.command),
                        None => format!("`{}`: {r}", c.command),
                    };
                }
                if !c.timed_out && c.exit_code.is_some() {
                    continue;
                }
            }
            if c.timed_out {
                return format!("`{}` timed out", c.command);
            }
            if c.exit_code != Some(0) {
                let code = c
                    .exit_code
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "by a signal".into());
                return match &c.cause {
                    Some(cause) => format!("`{}` exited {code}: {cause}", c.command),
                    None => format!("`{}` exited {code}", c.command),
                };
            }
        }
        if let Some(e) = self.evidence.as_ref().filter(|e| !e.unmatched.is_empty()) {
            return format!(
                "no report has the tests the task must make pass: {}",
                e.unmatched.join(", ")
            );
        }
        // Every command passed and the verification did not: its digest says why (the
        // held-out checks or the clean copy could not run), in its first sentence.
        if self
            .commands
            .iter()
            .all(|c| c.exit_code == Some(0) && !c.timed_out)
            && let Some(d) = self.digest.as_deref().filter(|d| !d.is_empty())
        {
            return d
                .split(". ")
                .next()
                .unwrap_or(d)
                .trim_end_matches('.')
                .to_string();
        }
        match self.commands.last() {
            Some(c) => format!("`{}` does not hold", c.command),
            None => "the checks failed".into(),
        }
    }

    /// `3/3 named tests pass, no regressions` (none without per-test evidence).
    pub fn evidence_words(&self) -> Option<String> {
        let e = self.evidence.as_ref()?;
        let (passing, all) = e.named_passing();
        let mut parts = Vec::new();
        if all > 0 {
            parts.push(format!("{passing}/{all} named tests pass"));
        }
        parts.push(match e.regressions.len() {
            0 => "no regressions".to_string(),
            n => agentloop_ground::words::plural(n, "regression", "regressions"),
        });
        if !e.flaky.is_empty() {
            parts.push(format!("{} forgiven as flaky", e.flaky.len()));
        }
        Some(parts.join(", "))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResult {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    pub duration_ms: u64,
    pub output_bytes: u64,
    #[serde(default)]
    pub truncated: bool,
    /// A measurement criterion's value, as the command printed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<String>,
    /// What its runner's report showed (none: judged by its exit code alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<agentloop_evidence::CommandTests>,
    /// When it failed: the line of its output that says why
    /// ([`agentloop_ground::failure::cause_line`]), shown beside its exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationFinished {
    pub iteration: u32,
    pub outcome: Outcome,
    pub reason: String,
    /// What the next attempt is told about this one's failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The agent's own process failed (crashed, timed out, killed): its work was not
    /// checked. Such failures repeating mean a broken agent, not a hard task.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent_failed: bool,
    /// The failure's fingerprint when it does not come from verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// A class 2B task's checkpoint: the tree as this iteration left it, a commit
    /// under `refs/agentloop/RUN/checkpoints/TASK/N`, to roll back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Signalled done and verified: the task is done.
    Completed,
    Failed,
    /// The agent asked a person a question.
    Blocked,
    /// The agent's replan was accepted.
    Replanned,
    /// The iteration was cut short (driver killed, `stop --now`); it does not count
    /// against the task's retries.
    Aborted,
    /// The model service refused for now; the run waits, the try does not count.
    Limited,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobState {
    pub iteration: u32,
    /// The engine: `slurm`, `kubernetes`.
    pub executor: String,
    /// The engine's id of the job.
    pub job: String,
    /// The engine's word for its state (`SUBMITTED` before the engine was first asked).
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl JobState {
    /// `Slurm job 12 PENDING (Priority)`.
    pub fn describe(&self) -> String {
        let engine = match self.executor.as_str() {
            "slurm" => "Slurm",
            "kubernetes" => "Kubernetes",
            other => other,
        };
        match &self.reason {
            Some(r) => format!("{engine} job {} {} ({r})", self.job, self.state),
            None => format!("{engine} job {} {}", self.job, self.state),
        }
    }
}
