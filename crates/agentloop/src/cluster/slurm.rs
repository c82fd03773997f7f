//! The Slurm client: a batch job submitted with `sbatch` (its script on stdin), its
//! state from `squeue`, cancelled with `scancel`. Commands find the cluster the usual
//! way (`SLURM_CONF`, or the node's own configuration).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

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

/// Submits a job; its id.
pub fn submit(s: &Submit<'_>) -> Result<String, String> {
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

/// The job's state now.
pub fn state(id: &str) -> Result<JobState, String> {
    let out = tool("squeue")
        .args(["--states=all", "-h", "-j", id, "-O", "State:|,Reason:|"])
        .output();
    match finish("squeue", out) {
        Ok(line) => Ok(parse_state(line.lines().next().unwrap_or(""))),
        // A job the controller has forgotten.
        Err(e) if e.contains("Invalid job id") => Ok(parse_state("")),
        Err(e) => Err(e),
    }
}

/// Cancels the job (a job already over is fine).
pub fn cancel(id: &str) -> Result<(), String> {
    finish("scancel", tool("scancel").arg(id).output()).map(drop)
}

/// The environment variables of ours a job gets: those `patterns` allow that are set.
pub fn exported(patterns: &[String]) -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| agentloop_core::exec::supervise::env_allowed(k, patterns))
        // A list that sbatch could not split.
        .filter(|k| !k.contains(','))
        .collect();
    names.sort();
    names
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
        assert!(never_starts("PartitionTimeLimit"));
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
