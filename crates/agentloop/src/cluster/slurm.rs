//! The Slurm client: a batch job submitted with `sbatch` (its script on stdin), the
//! state of every job a run follows from one `squeue` per interval ([`Poller`]),
//! cancelled with `scancel`. Commands find the cluster the usual
//! way (`SLURM_CONF`, or the node's own configuration).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use agentloop_config::Config;
use agentloop_journal::AgentErrorKind;

use super::{Ended, Engine, Submission};

/// Slurm as the engine of a run's jobs.
pub struct SlurmEngine {
    options: Vec<String>,
    /// `[executor.slurm] time_limit`, when set.
    time_limit: Option<String>,
    poller: Poller,
}

impl SlurmEngine {
    pub fn new(config: &Config) -> Result<SlurmEngine, String> {
        Ok(SlurmEngine {
            options: config.executor.slurm.options()?,
            time_limit: config.executor.slurm.time_limit.clone(),
            poller: Poller::new(config.executor.poll),
        })
    }

    fn follow_polled(
        &self,
        id: &str,
        stop: &AtomicBool,
        report: &mut dyn FnMut(&str, Option<&str>),
    ) -> Result<Ended, (AgentErrorKind, String)> {
        let mut cancelled = false;
        let mut last: Option<(String, String)> = None;
        loop {
            if stop.load(Ordering::SeqCst) && !cancelled {
                cancelled = cancel(id).is_ok();
            }
            let now = self.poller.next(id);
            if let Ok(s) = &now {
                let seen = match s {
                    JobState::Waiting { state, reason } => (state.clone(), reason.clone()),
                    over => (over.word().to_string(), String::new()),
                };
                if last.as_ref() != Some(&seen) {
                    report(&seen.0, Some(seen.1.as_str()));
                    last = Some(seen);
                }
            }
            match now {
                Ok(JobState::Waiting { state, reason }) => {
                    if state == "PENDING" && never_starts(&reason) {
                        let _ = cancel(id);
                        return Err((
                            AgentErrorKind::Spawn,
                            format!("Slurm cannot start job {id}: {reason}"),
                        ));
                    }
                }
                Ok(_) if cancelled => {
                    return Err((
                        AgentErrorKind::Other,
                        format!("Slurm job {id} was cancelled: the run was stopped"),
                    ));
                }
                Ok(JobState::Completed) => return Ok(Ended::Completed),
                Ok(JobState::Failed) => return Ok(Ended::Failed),
                Ok(JobState::TimedOut) => return Ok(Ended::TimedOut),
                Ok(JobState::OutOfMemory) => return Ok(Ended::OutOfMemory),
                Ok(JobState::Lost { state }) => return Ok(Ended::Lost(format!("ended {state}"))),
                // The controller did not answer: ask again next round.
                Err(_) => {}
            }
        }
    }
}

impl Engine for SlurmEngine {
    fn name(&self) -> &'static str {
        "Slurm"
    }

    fn word(&self) -> &'static str {
        "slurm"
    }

    fn default_program(&self) -> Result<String, String> {
        // Nodes that share this machine's disk find this very program.
        std::env::current_exe()
            .map(|p| p.to_string_lossy().into_owned())
            .map_err(|e| format!("cannot tell where agentloop is: {e}"))
    }

    fn submit(&self, job: &Submission<'_>) -> Result<String, String> {
        if !job.secrets.is_empty() {
            write_secrets(job.secret_file, job.secrets)?;
        }
        let mut options = self.options.clone();
        if self.time_limit.is_none() {
            // Not the partition's default, which may end the job before the agent's
            // own timeout: the agent's timeout and time to clone and push.
            options.push(format!("--time={}", minutes_for(job.agent_timeout)));
        }
        submit(&Submit {
            name: job.name,
            output: job.log,
            export: &exported_names(job.env),
            options: &options,
            script: &script(job.program, job.title, job.spec),
        })
    }

    fn follow(
        &self,
        id: &str,
        stop: &AtomicBool,
        report: &mut dyn FnMut(&str, Option<&str>),
    ) -> Result<Ended, (AgentErrorKind, String)> {
        self.poller.watch(id);
        let ended = self.follow_polled(id, stop, report);
        self.poller.forget(id);
        ended
    }

    fn cancel(&self, id: &str) {
        let _ = cancel(id);
    }

    fn no_output_hint(&self) -> &'static str {
        "the run's directory must be on a disk the nodes share, and `agentloop` at the same path there (docs/EXECUTORS.md)"
    }
}

/// The agent's variables for the job, in a file only this user can read (made anew:
/// an older one, whatever its mode, is removed first).
fn write_secrets(
    path: &std::path::Path,
    secrets: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let bytes = serde_json::to_vec(secrets).map_err(|e| e.to_string())?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
        .map_err(|e| format!("cannot write the job's secrets to {}: {e}", path.display()))
}

/// The names `sbatch --export` can carry (a comma would split the list).
fn exported_names(names: &[String]) -> Vec<String> {
    names.iter().filter(|k| !k.contains(',')).cloned().collect()
}

/// Where a job is, as far as the iteration is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Queued, starting, running, finishing, suspended: not over yet. The reason Slurm
    /// gives for a job that waits.
    Waiting { state: String, reason: String },
    /// Ran to its end: the script exited 0.
    Completed,
    /// The script failed (non-zero exit).
    Failed,
    /// Reached its time limit.
    TimedOut,
    /// Ran out of memory.
    OutOfMemory,
    /// Ended by something other than its script: cancelled, its node failed, preempted,
    /// could not boot, passed its deadline — or no longer known to the controller.
    Lost { state: String },
}

impl JobState {
    /// Slurm's word for the state (`PENDING`, `COMPLETED`, …).
    pub fn word(&self) -> &str {
        match self {
            JobState::Waiting { state, .. } | JobState::Lost { state } => state,
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::TimedOut => "TIMEOUT",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
        }
    }
}

/// Reads one line of `squeue -O State:|,Reason:|` (or nothing: the controller no longer
/// knows the job).
pub fn parse_state(line: &str) -> JobState {
    let mut parts = line.trim().split('|');
    let state = parts.next().unwrap_or("").trim().to_string();
    let reason = parts.next().unwrap_or("").trim().to_string();
    // `CANCELLED by 0` in some versions.
    let word = state.split_whitespace().next().unwrap_or("");
    match word {
        "PENDING" | "CONFIGURING" | "RUNNING" | "COMPLETING" | "SUSPENDED" | "REQUEUED"
        | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESIZING" | "SIGNALING" | "STAGE_OUT"
        | "RESV_DEL_HOLD" | "STOPPED" => JobState::Waiting { state, reason },
        "COMPLETED" => JobState::Completed,
        "FAILED" => JobState::Failed,
        "TIMEOUT" => JobState::TimedOut,
        "OUT_OF_MEMORY" => JobState::OutOfMemory,
        "" => JobState::Lost {
            state: "no longer known to Slurm".into(),
        },
        _ => JobState::Lost { state },
    }
}

/// Reasons a queued job will never start with: its request cannot be met.
pub fn never_starts(reason: &str) -> bool {
    matches!(
        reason,
        "BadConstraints"
            | "PartitionNodeLimit"
            | "PartitionTimeLimit"
            | "PartitionConfig"
            | "InvalidAccount"
            | "InvalidQOS"
            | "AccountNotAllowed"
            | "QOSNotAllowed"
            | "ReqNodeNotAvail"
    )
}

fn tool(name: &str) -> Command {
    let mut c = Command::new(name);
    c.stdin(Stdio::null());
    c
}

fn finish(name: &str, out: std::io::Result<std::process::Output>) -> Result<String, String> {
    let out = out.map_err(|e| format!("{name}: {e} (is Slurm's client installed?)"))?;
    if !out.status.success() {
        return Err(format!(
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A batch job to submit.
pub struct Submit<'a> {
    pub name: &'a str,
    /// Where the job's output goes (a path the node can write: a shared disk).
    pub output: &'a Path,
    /// The names of the environment variables the job gets from ours (their values
    /// never reach a command line).
    pub export: &'a [String],
    /// `--partition=…` and the other options of `[executor.slurm]`.
    pub options: &'a [String],
    pub script: &'a str,
}

/// Submits a job; its id. A controller that could not be reached, or that says it
/// cannot take a job right now, is asked again (after 1, 2, 4 and 8 s): in both cases
/// no job was made, so asking again makes none twice. Other refusals are final.
pub fn submit(s: &Submit<'_>) -> Result<String, String> {
    let mut wait = std::time::Duration::from_secs(1);
    loop {
        match submit_once(s) {
            Err(e) if not_submitted_for_now(&e) && wait <= std::time::Duration::from_secs(8) => {
                std::thread::sleep(wait);
                wait *= 2;
            }
            other => return other,
        }
    }
}

/// Whether `sbatch`'s error says the controller made no job and may take one later.
fn not_submitted_for_now(error: &str) -> bool {
    error.contains("Unable to contact slurm controller")
        || error.contains("Slurm temporarily unable to accept job")
}

fn submit_once(s: &Submit<'_>) -> Result<String, String> {
    let mut c = tool("sbatch");
    // A job Slurm ends on its own (a failed node) is not run again by Slurm: the
    // iteration is redone by agentloop's policy, as a new iteration.
    c.arg("--parsable")
        .arg("--no-requeue")
        .arg(format!("--job-name={}", s.name))
        .arg(format!("--output={}", s.output.display()))
        .arg(if s.export.is_empty() {
            "--export=NONE".to_string()
        } else {
            format!("--export={}", s.export.join(","))
        })
        .args(s.options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("sbatch: {e} (is Slurm's client installed?)"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(s.script.as_bytes())
            .map_err(|e| format!("sbatch: {e}"))?;
    }
    let out = finish("sbatch", child.wait_with_output())?;
    // `ID` or `ID;CLUSTER`.
    let id = out.split(';').next().unwrap_or("").trim();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return Err(format!("sbatch: no job id in `{out}`"));
    }
    Ok(id.to_string())
}

/// The states of `ids` now, in one `squeue` call; a job the controller no longer
/// knows is in the answer as lost.
pub fn states(ids: &[String]) -> Result<BTreeMap<String, JobState>, String> {
    let list = ids.join(",");
    let out = tool("squeue")
        .args([
            "--states=all",
            "-h",
            "-j",
            &list,
            "-O",
            "JobID:|,State:|,Reason:|",
        ])
        .output();
    let text = match finish("squeue", out) {
        Ok(text) => text,
        // Every job asked about is forgotten (with one, squeue says so).
        Err(e) if e.contains("Invalid job id") => String::new(),
        Err(e) => return Err(e),
    };
    Ok(parse_states(&text, ids))
}

/// Reads `squeue -O JobID:|,State:|,Reason:|` for `ids`: one missing from it is lost.
pub fn parse_states(text: &str, ids: &[String]) -> BTreeMap<String, JobState> {
    let mut found: BTreeMap<String, JobState> = text
        .lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(id, rest)| (id.trim().to_string(), parse_state(rest)))
        .collect();
    for id in ids {
        found.entry(id.clone()).or_insert_with(|| parse_state(""));
    }
    found
}

/// One `squeue` per interval for every job the run follows, however many: a cluster's
/// controller is asked once, not once per job.
pub struct Poller {
    shared: Arc<(Mutex<Polled>, Condvar)>,
}

#[derive(Default)]
struct Polled {
    watched: BTreeSet<String>,
    states: BTreeMap<String, Result<JobState, String>>,
    /// How many rounds have been asked.
    round: u64,
}

impl Poller {
    /// A poller asking every `every`; its thread ends with the last handle.
    pub fn new(every: Duration) -> Poller {
        let shared = Arc::new((Mutex::new(Polled::default()), Condvar::new()));
        let weak = Arc::downgrade(&shared);
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(every);
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                let ids: Vec<String> = match shared.0.lock() {
                    Ok(p) => p.watched.iter().cloned().collect(),
                    Err(_) => return,
                };
                let answer = if ids.is_empty() {
                    Ok(BTreeMap::new())
                } else {
                    states(&ids)
                };
                let Ok(mut p) = shared.0.lock() else {
                    return;
                };
                for id in &ids {
                    let state = match &answer {
                        Ok(all) => Ok(all.get(id).cloned().unwrap_or_else(|| parse_state(""))),
                        Err(e) => Err(e.clone()),
                    };
                    p.states.insert(id.clone(), state);
                }
                p.round += 1;
                shared.1.notify_all();
            }
        });
        Poller { shared }
    }

    /// Follows `id` from the next round on.
    pub fn watch(&self, id: &str) {
        if let Ok(mut p) = self.shared.0.lock() {
            p.watched.insert(id.to_string());
        }
    }

    /// No longer follows `id`.
    pub fn forget(&self, id: &str) {
        if let Ok(mut p) = self.shared.0.lock() {
            p.watched.remove(id);
            p.states.remove(id);
        }
    }

    /// The state of `id` as the next round finds it.
    pub fn next(&self, id: &str) -> Result<JobState, String> {
        let (lock, changed) = &*self.shared;
        let mut p = lock.lock().map_err(|_| "the poller failed".to_string())?;
        let now = p.round;
        while p.round == now || !p.states.contains_key(id) {
            p = changed
                .wait(p)
                .map_err(|_| "the poller failed".to_string())?;
        }
        p.states
            .get(id)
            .cloned()
            .unwrap_or_else(|| Err("not followed".into()))
    }
}

impl Clone for Poller {
    fn clone(&self) -> Poller {
        Poller {
            shared: self.shared.clone(),
        }
    }
}

/// Cancels the job (a job already over is fine).
pub fn cancel(id: &str) -> Result<(), String> {
    finish("scancel", tool("scancel").arg(id).output()).map(drop)
}

/// A job's `--time` in whole minutes when none is configured: the agent's `timeout`
/// and ten minutes to clone, start and push.
pub fn minutes_for(agent_timeout: Duration) -> u64 {
    agent_timeout.as_secs().div_ceil(60) + 10
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The batch script of a job that runs `agentloop job` with `spec` (one line of JSON)
/// on its standard input.
pub fn script(program: &str, title: &str, spec: &str) -> String {
    debug_assert!(!spec.contains('\n'));
    format!(
        "#!/bin/sh\n# {title}\nexec {} job <<'AGENTLOOP_JOB_SPEC'\n{spec}\nAGENTLOOP_JOB_SPEC\n",
        shell_quote(program)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_out_of_reach_is_asked_again_a_refusal_is_final() {
        // As sbatch says them (the first seen in a CI run of the suite's own cluster).
        assert!(not_submitted_for_now(
            "sbatch: sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)"
        ));
        assert!(not_submitted_for_now(
            "sbatch: sbatch: error: Batch job submission failed: Slurm temporarily unable to accept job, sleeping and retrying"
        ));
        // A socket timeout may have made the job: never asked again.
        assert!(!not_submitted_for_now(
            "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"
        ));
        assert!(!not_submitted_for_now(
            "sbatch: error: Batch job submission failed: Invalid partition name specified"
        ));
    }

    #[test]
    fn squeue_states_are_read_as_waiting_over_or_lost() {
        assert_eq!(
            parse_state("PENDING|Resources|"),
            JobState::Waiting {
                state: "PENDING".into(),
                reason: "Resources".into()
            }
        );
        assert!(matches!(
            parse_state("RUNNING|None|"),
            JobState::Waiting { .. }
        ));
        assert_eq!(parse_state("COMPLETED|None|"), JobState::Completed);
        assert_eq!(parse_state("FAILED|NonZeroExitCode|"), JobState::Failed);
        assert_eq!(parse_state("TIMEOUT|TimeLimit|"), JobState::TimedOut);
        for lost in [
            "CANCELLED|None|",
            "NODE_FAIL|None|",
            "PREEMPTED|None|",
            "BOOT_FAIL|x|",
        ] {
            assert!(matches!(parse_state(lost), JobState::Lost { .. }), "{lost}");
        }
        assert!(matches!(parse_state(""), JobState::Lost { .. }));
        let ids = ["7".to_string(), "8".to_string(), "9".to_string()];
        let all = parse_states("7|RUNNING|None|\n8|COMPLETED|None|\n", &ids);
        assert!(matches!(all["7"], JobState::Waiting { .. }));
        assert_eq!(all["8"], JobState::Completed);
        assert!(matches!(&all["9"], JobState::Lost { state } if state.contains("no longer known")));
        assert!(never_starts("PartitionTimeLimit"));
        assert_eq!(minutes_for(Duration::from_secs(30 * 60)), 40);
        assert_eq!(minutes_for(Duration::from_secs(61)), 12);
        assert!(!never_starts("Priority"));
    }

    #[test]
    fn the_script_carries_the_spec_as_a_literal_here_document() {
        let s = script("/opt/it's/agentloop", "iteration 1", r#"{"a":"$HOME `x`"}"#);
        assert!(s.starts_with("#!/bin/sh\n"));
        assert!(s.contains(r"exec '/opt/it'\''s/agentloop' job <<'AGENTLOOP_JOB_SPEC'"));
        assert!(s.contains("\n{\"a\":\"$HOME `x`\"}\nAGENTLOOP_JOB_SPEC\n"));
    }
}
