//! The Slurm tools as the engine calls them: `sbatch`, `squeue` and `scancel`, each
//! with a deadline ([`TOOL_LIMIT`]), and how their answers are read.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

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

/// How long a Slurm tool may take to answer. Its own messages time out after the
/// cluster's `MessageTimeout` (10 s by default) and are retried a few times; past this
/// the controller is out of reach for now (or the tool is stuck), and the tool is
/// killed.
pub const TOOL_LIMIT: Duration = Duration::from_secs(60);

/// What the tool `name` with `args` printed, `input` on its standard input; its error
/// when it failed or gave no answer within [`TOOL_LIMIT`].
fn tool(name: &str, args: &[String], input: Option<&[u8]>) -> Result<String, String> {
    tool_within(name, args, input, TOOL_LIMIT)
}

fn tool_within(
    name: &str,
    args: &[String],
    input: Option<&[u8]>,
    limit: Duration,
) -> Result<String, String> {
    let mut child = Command::new(name)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, ended whole: nothing it started holds its pipes open.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{name}: {e} (is Slurm's client installed?)"))?;
    let pid = child.id();
    let input = input.map(<[u8]>::to_vec);
    // Fed and waited for on a thread of its own, so that a tool that neither reads nor
    // answers is given up on here; until that thread reaps it, the pid is still its.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), input) {
            // A tool that ends without reading it all says why on standard error.
            let _ = stdin.write_all(&bytes);
        }
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(limit) {
        Ok(out) => out.map_err(|e| format!("{name}: {e}"))?,
        Err(_) => {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            return Err(format!(
                "{name}: no answer within {:?} (the controller is out of reach)",
                limit
            ));
        }
    };
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
/// no job was made, so asking again makes none twice. An `sbatch` that gave no answer
/// may have made the job: the job is looked for by its name. Other refusals are final.
pub fn submit(s: &Submit<'_>) -> Result<String, String> {
    let mut wait = Duration::from_secs(1);
    loop {
        match submit_once(s) {
            Err(e) if not_submitted_for_now(&e) && wait <= Duration::from_secs(8) => {
                std::thread::sleep(wait);
                wait *= 2;
            }
            Err(e) => {
                return match named(s.name) {
                    Ok(Some(id)) => Ok(id),
                    _ => Err(e),
                };
            }
            ok => return ok,
        }
    }
}

/// The id of the job named `name`, if the controller knows one.
pub fn named(name: &str) -> Result<Option<String>, String> {
    let out = tool(
        "squeue",
        &[
            "--states=all".into(),
            "-h".into(),
            format!("--name={name}"),
            "-O".into(),
            "JobID:|,Name:|".into(),
        ],
        None,
    )?;
    Ok(out.lines().find_map(|l| {
        let (id, rest) = l.split_once('|')?;
        (rest.trim().trim_end_matches('|').trim() == name).then(|| id.trim().to_string())
    }))
}

/// Whether `sbatch`'s error says the controller made no job and may take one later.
fn not_submitted_for_now(error: &str) -> bool {
    error.contains("Unable to contact slurm controller")
        || error.contains("Slurm temporarily unable to accept job")
}

fn submit_once(s: &Submit<'_>) -> Result<String, String> {
    // A job Slurm ends on its own (a failed node) is not run again by Slurm: the
    // iteration is redone by agentloop's policy, as a new iteration.
    let mut args = vec![
        "--parsable".to_string(),
        "--no-requeue".to_string(),
        format!("--job-name={}", s.name),
        format!("--output={}", s.output.display()),
        if s.export.is_empty() {
            "--export=NONE".to_string()
        } else {
            format!("--export={}", s.export.join(","))
        },
    ];
    args.extend(s.options.iter().cloned());
    let out = tool("sbatch", &args, Some(s.script.as_bytes()))?;
    // `ID` or `ID;CLUSTER`.
    let id = out.split(';').next().unwrap_or("").trim();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return Err(format!("sbatch: no job id in `{out}`"));
    }
    Ok(id.to_string())
}

/// The states of the jobs `watched` (id and name) now, in one `squeue` call; a job the
/// controller no longer knows, or knows by another name, is in the answer as lost.
pub fn states(watched: &BTreeMap<String, String>) -> Result<BTreeMap<String, JobState>, String> {
    let list = watched.keys().cloned().collect::<Vec<_>>().join(",");
    let out = tool(
        "squeue",
        &[
            "--states=all".into(),
            "-h".into(),
            "-j".into(),
            list,
            "-O".into(),
            "JobID:|,State:|,Reason:|,Name:|".into(),
        ],
        None,
    );
    let text = match out {
        Ok(text) => text,
        // Every job asked about is forgotten (with one, squeue says so).
        Err(e) if e.contains("Invalid job id") => String::new(),
        Err(e) => return Err(e),
    };
    Ok(parse_states(&text, watched))
}

/// Reads `squeue -O JobID:|,State:|,Reason:|,Name:|` for the jobs `watched` (id and
/// name): one missing from it, or there under another name, is lost.
pub fn parse_states(text: &str, watched: &BTreeMap<String, String>) -> BTreeMap<String, JobState> {
    let mut found = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.splitn(4, '|');
        let (Some(id), Some(state), Some(reason)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let id = id.trim();
        let Some(ours) = watched.get(id) else {
            continue;
        };
        let name = fields
            .next()
            .unwrap_or("")
            .trim()
            .trim_end_matches('|')
            .trim();
        let seen = if ours.is_empty() || name == ours {
            parse_state(&format!("{state}|{reason}|"))
        } else {
            JobState::Lost {
                state: format!("no longer known to Slurm (its id is another job's now, `{name}`)"),
            }
        };
        found.insert(id.to_string(), seen);
    }
    for id in watched.keys() {
        found.entry(id.clone()).or_insert_with(|| parse_state(""));
    }
    found
}

/// Cancels the job named `name`, the one with the id `id` when it is known (a job
/// already over is fine; a job with that id and another name is left be). No name
/// (a run directory older than the tokens) cancels by the id alone.
pub fn cancel(id: Option<&str>, name: &str) -> Result<(), String> {
    let mut args = Vec::new();
    if !name.is_empty() {
        args.push(format!("--name={name}"));
    }
    match id {
        Some(id) => args.push(id.to_string()),
        None if name.is_empty() => return Ok(()),
        None => {}
    }
    tool("scancel", &args, None).map(drop)
}

/// A job's `--time` in whole minutes when none is configured: the agent's `timeout`
/// and ten minutes to clone, start and push.
pub fn minutes_for(agent_timeout: Duration) -> u64 {
    agent_timeout.as_secs().div_ceil(60) + 10
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
    fn a_tool_that_never_answers_is_given_up_on_and_ended() {
        let t = std::time::Instant::now();
        let err = tool_within(
            "sh",
            &["-c".into(), "echo $$ > \"$0\"; sleep 30".into(), pid_file()],
            Some(b"never read"),
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(err.contains("no answer within 300ms"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(5));
        let pid = std::fs::read_to_string(pid_file()).unwrap();
        // Ended, and reaped by its waiting thread: no such process for long.
        let gone = std::time::Instant::now();
        while std::path::Path::new(&format!("/proc/{}", pid.trim())).exists() {
            assert!(
                gone.elapsed() < Duration::from_secs(5),
                "pid {pid} lives on"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // One that answers: its output; one that fails: its standard error.
        assert_eq!(
            tool_within(
                "sh",
                &["-c".into(), "cat".into()],
                Some(b" 7;c \n"),
                Duration::from_secs(5)
            )
            .unwrap(),
            "7;c"
        );
        let err = tool_within(
            "sh",
            &["-c".into(), "echo refused >&2; exit 1".into()],
            None,
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert_eq!(err, "sh: refused");
    }

    fn pid_file() -> String {
        std::env::temp_dir()
            .join(format!("agentloop-slurm-tool-{}.pid", std::process::id()))
            .to_string_lossy()
            .into_owned()
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
        let watched: BTreeMap<String, String> =
            [("7", "a-7"), ("8", "a-8"), ("9", "a-9"), ("10", "a-10")]
                .map(|(id, name)| (id.to_string(), name.to_string()))
                .into();
        let all = parse_states(
            "7|RUNNING|None|a-7|\n8|COMPLETED|None|a-8|\n10|RUNNING|None|someone's|\n",
            &watched,
        );
        assert!(matches!(all["7"], JobState::Waiting { .. }));
        assert_eq!(all["8"], JobState::Completed);
        assert!(matches!(&all["9"], JobState::Lost { state } if state.contains("no longer known")));
        // The id given again to another job (a controller that lost its state).
        assert!(
            matches!(&all["10"], JobState::Lost { state } if state.contains("another job's now, `someone's`"))
        );
        assert!(never_starts("PartitionTimeLimit"));
        assert_eq!(minutes_for(Duration::from_secs(30 * 60)), 40);
        assert_eq!(minutes_for(Duration::from_secs(61)), 12);
        assert!(!never_starts("Priority"));
    }
}
