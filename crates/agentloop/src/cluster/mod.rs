//! Iterations on a cluster: what a job is told ([`JobSpec`]) and what it reports
//! ([`JobOutcome`]), the engines that run jobs behind one trait ([`Engine`]: Slurm in
//! [`slurm`], Kubernetes in [`kubernetes`]), and the job's own side (`agentloop job`,
//! [`job`]). A job gets the task's branch from the run's git remote,
//! runs the agent there, and pushes its result (the work tree as a commit whose message
//! carries the outcome) to a ref of its iteration; the driver fetches it, puts the files
//! back into the task's worktree and judges them as it judges a local iteration.

pub mod job;
pub mod kubernetes;
pub mod slurm;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use agentloop_agents::AgentRun;
use agentloop_config::AgentConfig;
use agentloop_exec::supervise::Finished;
use agentloop_ground::values::Usage;
use agentloop_journal::{AgentError, AgentErrorKind};
use serde::{Deserialize, Serialize};

/// A cluster scheduler that runs an iteration as a job.
pub trait Engine: Send + Sync {
    /// Its name in messages: `Slurm`, `Kubernetes`.
    fn name(&self) -> &'static str;
    /// Its word in the journal and in file names: `slurm`, `kubernetes`.
    fn word(&self) -> &'static str;
    /// The `agentloop` program a job runs when `[executor] program` says none.
    fn default_program(&self) -> Result<String, String>;
    /// Whether jobs can be submitted at all (the engine answers, its settings hold),
    /// asked once before a run is created.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    /// Submits one job; its id.
    fn submit(&self, job: &Submission<'_>) -> Result<String, String>;
    /// Follows the job until it is over, reporting each change of its state and
    /// reason; cancels it when `stop` is set. An error is why the job will never give
    /// a result (it cannot start, it was cancelled on request).
    ///
    /// `name` is the job's token ([`Submission::name`]): a job with this id and
    /// another name is not this iteration's (a controller that lost its state gives
    /// the id again), and is never followed as if it were.
    fn follow(
        &self,
        id: &str,
        name: &str,
        stop: &AtomicBool,
        report: &mut dyn FnMut(&str, Option<&str>),
    ) -> Result<Ended, (AgentErrorKind, String)>;
    /// Cancels the job named `name` — with the id `id` when it is known (a driver
    /// killed between submitting the job and writing its id down knows only the
    /// name); a job already over, or one with that id and another name, is left be.
    fn cancel(&self, id: Option<&str>, name: &str);
    /// Whether its jobs can reach a path of the driver's machine (Slurm's nodes share
    /// its disk; a Kubernetes pod has none of it).
    fn reaches_local_paths(&self) -> bool {
        true
    }
    /// Why a job that ended without a result may have written no output.
    fn no_output_hint(&self) -> &'static str;
}

/// One job to submit.
pub struct Submission<'a> {
    /// The job's name and token, `agentloop-RUN-N-NONCE`: written down before the
    /// job is submitted, so whoever takes the run over can find the job by it; the
    /// nonce tells apart two runs with one id (two clones given the same `--run-id`).
    pub name: &'a str,
    /// A line saying what it is.
    pub title: &'a str,
    /// Its [`JobSpec`], one line of JSON.
    pub spec: &'a str,
    /// The program it runs (`agentloop`, as the node finds it).
    pub program: &'a str,
    /// The iteration's log, which gets the job's output.
    pub log: &'a Path,
    /// Names of the environment variables of ours the job gets (their values through
    /// the engine's own secret mechanism, never on a command line).
    pub env: &'a [String],
    /// The agent's own variables (`[agents.NAME] env`), values included: never in the
    /// spec; Kubernetes puts them in the Job's Secret, Slurm in `secret_file`.
    pub secrets: &'a std::collections::BTreeMap<String, String>,
    /// Where Slurm leaves `secrets` for the job: a file only the user can read, in
    /// the iteration's directory on the disk the nodes share, which the job removes
    /// once read.
    pub secret_file: &'a Path,
    /// The agent's own time limit.
    pub agent_timeout: Duration,
    pub run_id: &'a str,
    pub iteration: u32,
    /// The commit the iteration starts from (to know a job as this iteration's).
    pub start: &'a str,
}

/// How a job ended, as its engine tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Ran to its end.
    Completed,
    /// Its program failed.
    Failed,
    /// Reached its time limit.
    TimedOut,
    /// Ran out of memory.
    OutOfMemory,
    /// Ended by something other than its program (cancelled by someone else, its
    /// node failed, preempted, evicted, deleted): how, in a few words (`ended
    /// NODE_FAIL`, `lost its pod: deleted`).
    Lost(String),
}

/// The environment variables of ours a job gets: those `patterns` allow that are set.
pub fn exported(patterns: &[String]) -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| agentloop_config::env_allowed(k, patterns))
        .collect();
    names.sort();
    names
}

/// What one job is told: everything it needs, none of it secret (credentials reach
/// the job through the engine's environment, never in this).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobSpec {
    pub run_id: String,
    pub iteration: u32,
    /// The URL of the run's git remote.
    pub remote: String,
    /// The task's branch there, as the iteration starts (`refs/heads/…`).
    pub branch: String,
    /// The commit it must be at: the task's work so far, on top of its branch's head.
    pub start: String,
    /// Where the job pushes its result.
    pub result_ref: String,
    pub agent_name: String,
    pub agent: AgentConfig,
    pub prompt: String,
    /// The run's directory (for `agentloop mcp`, where the nodes share the disk).
    pub run_dir: String,
    /// The names of the agent's own variables (`[agents.NAME] env`), whose values
    /// `agent.env` does not carry: the job reads them from `secret_file` when there
    /// is one (Slurm), else from its environment (a Kubernetes Secret).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_env: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_file: Option<String>,
}

impl JobSpec {
    /// The agent's variables back into its configuration, from `secret_file` (read,
    /// then removed: it is read once) or the environment. A name that reaches the job
    /// by neither is an error: the agent would run without its credentials.
    pub fn take_secrets(&mut self) -> Result<(), String> {
        if self.secret_env.is_empty() {
            return Ok(());
        }
        let from_file: std::collections::BTreeMap<String, String> = match &self.secret_file {
            Some(f) => match std::fs::read(f) {
                Ok(bytes) => {
                    let _ = std::fs::remove_file(f);
                    serde_json::from_slice(&bytes)
                        .map_err(|e| format!("the job's secrets in {f} cannot be read: {e}"))?
                }
                Err(_) => Default::default(),
            },
            None => Default::default(),
        };
        for name in &self.secret_env {
            let value = from_file
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
                .ok_or_else(|| {
                    format!("the agent's variable {name} did not reach the job (neither in its secrets file nor in its environment)")
                })?;
            self.agent.env.insert(name.clone(), value);
        }
        Ok(())
    }
}

/// What the job reports about its agent, in its result commit's message.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct JobOutcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub killed: bool,
    pub duration_ms: u64,
    pub output_bytes: u64,
    pub truncated: bool,
    pub tail: String,
    pub stderr_tail: String,
    pub final_message: String,
    pub usage: Usage,
    pub cost_usd: f64,
    pub session_id: Option<String>,
    pub error: Option<AgentError>,
    pub resets_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_edited: Option<(String, u32)>,
}

/// The first line of a result commit's message; the outcome's JSON follows it.
pub const RESULT_SUBJECT: &str = "agentloop: result of";

impl JobOutcome {
    pub fn of(run: &AgentRun) -> JobOutcome {
        let f = &run.finished;
        JobOutcome {
            exit_code: f.exit_code,
            signal: f.signal,
            timed_out: f.timed_out,
            killed: f.killed,
            duration_ms: f.duration.as_millis() as u64,
            output_bytes: f.output_bytes,
            truncated: f.truncated,
            tail: String::from_utf8_lossy(&f.tail).into_owned(),
            stderr_tail: String::from_utf8_lossy(&f.stderr_tail).into_owned(),
            final_message: run.final_message.clone(),
            usage: run.usage,
            cost_usd: run.cost_usd,
            session_id: run.session_id.clone(),
            error: run.error.clone(),
            resets_at_ms: run.resets_at_ms,
            most_edited: run.most_edited.clone(),
        }
    }

    pub fn into_run(self) -> AgentRun {
        AgentRun {
            finished: Finished {
                exit_code: self.exit_code,
                signal: self.signal,
                timed_out: self.timed_out,
                killed: self.killed,
                duration: Duration::from_millis(self.duration_ms),
                output_bytes: self.output_bytes,
                truncated: self.truncated,
                tail: self.tail.into_bytes(),
                stderr_tail: self.stderr_tail.into_bytes(),
            },
            final_message: self.final_message,
            usage: self.usage,
            cost_usd: self.cost_usd,
            session_id: self.session_id,
            error: self.error,
            resets_at_ms: self.resets_at_ms,
            most_edited: self.most_edited,
        }
    }

    /// The message of the result commit of `iteration`.
    pub fn message(&self, run_id: &str, iteration: u32) -> String {
        format!(
            "{RESULT_SUBJECT} iteration {iteration} of run {run_id}\n\n{}\n",
            serde_json::to_string(self).unwrap_or_default()
        )
    }

    /// The outcome a result commit's message carries, if it is one for `iteration`.
    pub fn parse(message: &str, run_id: &str, iteration: u32) -> Result<JobOutcome, String> {
        let (subject, body) = message.split_once("\n\n").unwrap_or((message, ""));
        if subject.trim() != format!("{RESULT_SUBJECT} iteration {iteration} of run {run_id}") {
            return Err(format!(
                "not the result of iteration {iteration}: `{subject}`"
            ));
        }
        serde_json::from_str(body.trim()).map_err(|e| format!("its outcome cannot be read: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_travels_in_a_commit_message_for_its_own_iteration_only() {
        let o = JobOutcome {
            exit_code: Some(0),
            final_message: "done\n<promise>COMPLETE</promise>".into(),
            cost_usd: 0.25,
            duration_ms: 1500,
            ..Default::default()
        };
        let m = o.message("r1", 3);
        assert_eq!(JobOutcome::parse(&m, "r1", 3).unwrap(), o);
        assert!(JobOutcome::parse(&m, "r1", 4).is_err());
        assert!(JobOutcome::parse(&m, "r2", 3).is_err());
        assert!(
            JobOutcome::parse("agentloop: result of iteration 3 of run r1\n\n{", "r1", 3).is_err()
        );
        let run = o.clone().into_run();
        assert_eq!(run.finished.duration, Duration::from_millis(1500));
        assert_eq!(JobOutcome::of(&run), o);
    }
}
