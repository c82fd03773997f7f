//! The Slurm client: a batch job submitted with `sbatch` (its script on stdin), the
//! state of every job a run follows from one `squeue` per interval ([`Poller`]),
//! cancelled with `scancel`. Commands find the cluster the usual
//! way (`SLURM_CONF`, or the node's own configuration).
//!
//! A job is known by its id and its name together: the name is a token of the run's
//! own ([`Submission::name`]), so a controller that lost its state and gives a job's id
//! to another job never has that job followed, or cancelled, as ours. Every call of a
//! Slurm tool has a deadline ([`client::TOOL_LIMIT`]): a controller that does not answer is out
//! of reach for now, never a driver waiting for ever.

mod client;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use agentloop_config::Config;
use agentloop_journal::AgentErrorKind;

use super::{Ended, Engine, Submission};
use client::{JobState, Submit, cancel, minutes_for, never_starts, parse_state, states, submit};

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
        name: &str,
        stop: &AtomicBool,
        report: &mut dyn FnMut(&str, Option<&str>),
    ) -> Result<Ended, (AgentErrorKind, String)> {
        let mut cancelled = false;
        let mut last: Option<(String, String)> = None;
        loop {
            if stop.load(Ordering::SeqCst) && !cancelled {
                cancelled = cancel(Some(id), name).is_ok();
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
                        let _ = cancel(Some(id), name);
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
        name: &str,
        stop: &AtomicBool,
        report: &mut dyn FnMut(&str, Option<&str>),
    ) -> Result<Ended, (AgentErrorKind, String)> {
        self.poller.watch(id, name);
        let ended = self.follow_polled(id, name, stop, report);
        self.poller.forget(id);
        ended
    }

    fn cancel(&self, id: Option<&str>, name: &str) {
        let _ = cancel(id, name);
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

/// One `squeue` per interval for every job the run follows, however many: a cluster's
/// controller is asked once, not once per job.
pub struct Poller {
    shared: Arc<(Mutex<Polled>, Condvar)>,
}

#[derive(Default)]
struct Polled {
    /// Each job's id and its name.
    watched: BTreeMap<String, String>,
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
                let watched = match shared.0.lock() {
                    Ok(p) => p.watched.clone(),
                    Err(_) => return,
                };
                let answer = if watched.is_empty() {
                    Ok(BTreeMap::new())
                } else {
                    states(&watched)
                };
                let Ok(mut p) = shared.0.lock() else {
                    return;
                };
                for id in watched.keys() {
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

    /// Follows the job `id` named `name` from the next round on.
    pub fn watch(&self, id: &str, name: &str) {
        if let Ok(mut p) = self.shared.0.lock() {
            p.watched.insert(id.to_string(), name.to_string());
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
    fn the_script_carries_the_spec_as_a_literal_here_document() {
        let s = script("/opt/it's/agentloop", "iteration 1", r#"{"a":"$HOME `x`"}"#);
        assert!(s.starts_with("#!/bin/sh\n"));
        assert!(s.contains(r"exec '/opt/it'\''s/agentloop' job <<'AGENTLOOP_JOB_SPEC'"));
        assert!(s.contains("\n{\"a\":\"$HOME `x`\"}\nAGENTLOOP_JOB_SPEC\n"));
    }
}
