//! `agentloop job`: one iteration on a cluster node. It reads its [`JobSpec`] on
//! standard input (or in the file `AGENTLOOP_JOB_SPEC_FILE` names), clones the task's branch from the run's remote into a scratch
//! directory, runs the agent there (its output streamed to standard output, which the
//! engine keeps as the iteration's log), and pushes the result: the work tree as a
//! commit whose message carries the [`JobOutcome`]. SIGTERM (`scancel`, the engine's
//! time limit, a preemption) ends the agent's process group and pushes nothing: the
//! engine's account of the job then says what happened.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentloop_agents::Invocation;
use agentloop_config::Config;
use agentloop_exec::{git, transport};

use super::{JobOutcome, JobSpec};
use crate::error::CliError;

/// The environment variable that names the file a job's spec is in.
pub const SPEC_FILE_VARIABLE: &str = "AGENTLOOP_JOB_SPEC_FILE";

pub fn job() -> Result<(), CliError> {
    // On standard input (Slurm's batch script), or in a file (a Kubernetes
    // container's, mounted from the Job's Secret).
    let input = match std::env::var_os(SPEC_FILE_VARIABLE) {
        Some(path) => std::fs::read_to_string(&path).map_err(|e| {
            CliError::user(format!(
                "cannot read the job's spec from {}: {e}",
                std::path::Path::new(&path).display()
            ))
        })?,
        None => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| CliError::user(format!("cannot read the job's spec: {e}")))?;
            input
        }
    };
    let mut spec: JobSpec = serde_json::from_str(input.trim())
        .map_err(|e| CliError::user(format!("the job's spec cannot be read: {e}")))?;
    spec.take_secrets().map_err(CliError::user)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| CliError::internal(format!("cannot handle signals: {e}")))?;
    }
    let scratch = std::env::temp_dir().join(format!(
        "agentloop-job-{}-{}-{}",
        spec.run_id,
        spec.iteration,
        std::process::id()
    ));
    let result = run(&spec, &scratch, &stop);
    let _ = std::fs::remove_dir_all(&scratch);
    result.map_err(|e| CliError::user(format!("iteration {}: {e}", spec.iteration)))
}

fn run(spec: &JobSpec, scratch: &Path, stop: &Arc<AtomicBool>) -> Result<(), String> {
    std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let work = scratch.join("work");
    let branch = spec
        .branch
        .strip_prefix("refs/heads/")
        .ok_or_else(|| format!("`{}` is not a branch", spec.branch))?;
    // `--no-local`: a clone of a path would copy the remote's object directory file by
    // file, the quarantine directory of another worker's push under way included,
    // which vanishes mid-copy ("failed to copy file … tmp_objdir-incoming-…"); the
    // transport sends one consistent pack instead.
    git::run(
        scratch,
        &[
            "clone",
            "--quiet",
            "--no-local",
            "--no-tags",
            "--single-branch",
            "--branch",
            branch,
            &spec.remote,
            "work",
        ],
    )?;
    let head = git::run(&work, &["rev-parse", "HEAD"])?;
    if head != spec.start {
        return Err(format!(
            "the task's branch is at {head}, not at {} where the iteration starts",
            spec.start
        ));
    }
    // The work so far, as uncommitted changes on the branch's head: as in a worktree.
    git::run(&work, &["reset", "-q", "HEAD~1"])?;

    let mut config = Config::default();
    config
        .agents
        .insert(spec.agent_name.clone(), spec.agent.clone());
    let agent = agentloop_agents::resolve(&config, &spec.agent_name).map_err(|e| e.to_string())?;
    git::exclude_locally(
        &work,
        agent.own_files(),
        "agentloop: the agent program's own files",
    )
    .map_err(|e| format!("cannot exclude the agent's own files: {e}"))?;

    let prompt_file = scratch.join("prompt.md");
    std::fs::write(&prompt_file, &spec.prompt).map_err(|e| format!("prompt.md: {e}"))?;
    let log = scratch.join("agent.log");
    let pid_file = scratch.join("agent.pid");
    let run_dir = PathBuf::from(&spec.run_dir);
    let inv = Invocation {
        run_id: &spec.run_id,
        run_dir: &run_dir,
        iteration: spec.iteration,
        workdir: &work,
        prompt: &spec.prompt,
        prompt_file: &prompt_file,
        log: &log,
        pid_file: &pid_file,
        wrap: home_for_the_agent(scratch)?,
    };
    let done = Arc::new(AtomicBool::new(false));
    let streamer = {
        let (log, done) = (log.clone(), done.clone());
        std::thread::spawn(move || stream(&log, &done))
    };
    let outcome = JobOutcome::of(&agent.run(&inv, &mut || stop.load(Ordering::SeqCst)));
    done.store(true, Ordering::SeqCst);
    let _ = streamer.join();
    if stop.load(Ordering::SeqCst) {
        // Ended by the engine (cancelled, preempted, out of time): no result, so the
        // driver hears it from the engine's own account of the job.
        return Err("ended by a signal before the agent finished: no result".into());
    }

    let result = transport::snapshot(
        &work,
        scratch,
        &outcome.message(&spec.run_id, spec.iteration),
    )?;
    transport::push(&work, &spec.remote, &result, &spec.result_ref)
}

/// The agent's home: the container's own when it can be written, else (a read-only
/// root file system) one in the scratch directory, given through `env` in front of
/// the agent's command.
fn home_for_the_agent(scratch: &Path) -> Result<Vec<std::ffi::OsString>, String> {
    let writable = std::env::var_os("HOME").is_some_and(|home| {
        let probe = Path::new(&home).join(format!(".agentloop-job-{}", std::process::id()));
        let ok = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    });
    if writable {
        return Ok(Vec::new());
    }
    let home = scratch.join("home");
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    println!(
        "agentloop job: the home directory cannot be written (a read-only root file system): the agent's home is {}",
        home.display()
    );
    let mut set = std::ffi::OsString::from("HOME=");
    set.push(&home);
    Ok(vec!["env".into(), set])
}

/// Copies what the agent writes to its log onto standard output as it comes, until
/// `done` (then what is left).
fn stream(log: &Path, done: &AtomicBool) {
    let mut at = 0u64;
    let mut out = std::io::stdout();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let last = done.load(Ordering::SeqCst);
        if let Ok(mut f) = std::fs::File::open(log)
            && f.seek(std::io::SeekFrom::Start(at)).is_ok()
        {
            while let Ok(n) = f.read(&mut buf) {
                if n == 0 {
                    break;
                }
                at += n as u64;
                if out.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            let _ = out.flush();
        }
        if last {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
