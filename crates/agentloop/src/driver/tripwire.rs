//! `Must-not:` tripwires at work in the driver: after each iteration of a task that
//! has them, what the task changed so far (committed or not, new files included), what
//! its agent printed (tool calls included) and the `break` commands are checked, and
//! the hits recorded (`tripwires_checked`); the policy stops the run on any.

use std::path::Path;
use std::sync::atomic::Ordering;

use agentloop_journal::{Event, TripHit};
use agentloop_policy::{DiffInput, FileDiff, parse_unified};
use agentloop_verify::verify;

use super::Driver;
use crate::error::CliError;
use agentloop_exec::git::run as git;

/// The most of an agent's log, and of a new file, that is read.
const READ_CAP: u64 = 8 * 1024 * 1024;

fn read_capped(path: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    f.take(READ_CAP).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// What the working tree in `dir` changed since `from`: tracked files as `git diff`
/// sees them, and every untracked file that is not ignored, as new.
fn tree_diff(dir: &Path, from: &str) -> Result<DiffInput, String> {
    let text = git(
        dir,
        &[
            "diff",
            "--unified=0",
            "--no-color",
            "--no-renames",
            "--no-ext-diff",
            from,
            "--",
        ],
    )?;
    let mut files = parse_unified(&text);
    let untracked = git(dir, &["ls-files", "--others", "--exclude-standard"])?;
    for path in untracked.lines().filter(|p| !p.is_empty()) {
        let content = read_capped(&dir.join(path)).unwrap_or_default();
        files.push(FileDiff {
            path: path.to_string(),
            new: true,
            added: content
                .lines()
                .enumerate()
                .map(|(i, l)| (i as u32 + 1, l.to_string()))
                .collect(),
            removed: Vec::new(),
        });
    }
    Ok(DiffInput {
        files,
        base_top: Default::default(),
    })
}

impl Driver {
    pub(crate) fn check_tripwires(&mut self, iteration: u32) -> Result<(), CliError> {
        let Some(open) = self.state.open_iteration(iteration) else {
            return Ok(());
        };
        let task = open.started.task.clone();
        let agent = open.started.agent.clone();
        let from = self
            .state
            .task(&task)
            .and_then(|t| t.head_at_start.clone())
            .or_else(|| open.started.head_before.clone());
        let wires = agentloop_policy::wires_for(&self.state, &task);
        let dir = self.workdir(iteration);
        let it_dir = self.run.iteration_dir(iteration);
        let log = read_capped(&it_dir.join("agent.log")).unwrap_or_default();
        let (diff, unread) = match from.as_deref().map(|f| tree_diff(&dir, f)) {
            Some(Ok(d)) => (d, None),
            Some(Err(e)) => (DiffInput::default(), Some(e)),
            None => (DiffInput::default(), None),
        };
        let mut hits = agentloop_policy::tripped(&wires, &diff, &log);
        if let Some(e) = unread {
            hits.push(TripHit {
                wire: "(what the task changed)".into(),
                evidence: format!(
                    "it could not be read, so the tripwires on it are unchecked: {e}"
                ),
            });
        }
        let interrupted = self.interrupted.clone();
        let commands = agentloop_policy::tripwire_commands(&wires);
        // They run in the tree: what changed by the next iteration is no person's alone.
        if !commands.is_empty() {
            self.seen = None;
        }
        for (n, (wire, command)) in commands.into_iter().enumerate() {
            let log = it_dir.join(format!("tripwire-{}.log", n + 1));
            let runner = verify::Runner {
                workdir: &dir,
                timeout: self.config.verify.timeout,
                output_cap: self.config.verify.output_cap,
                jobs: self.config.verify.jobs_for(1),
                log: &log,
                // Confined as the checks are (no report: the tree is its only place).
                wrap: self.check_wrap(&dir, &dir),
                bytecode: self.bytecode(false),
                tests: None,
            };
            let result = runner
                .run(iteration, &[command], || interrupted.load(Ordering::SeqCst))
                .map_err(|e| CliError::internal(format!("cannot run a tripwire's command: {e}")))?;
            if !result.passed {
                hits.push(TripHit {
                    wire,
                    evidence: format!(
                        "it fails now: {}",
                        result.digest.as_deref().unwrap_or("see the log").trim()
                    ),
                });
            }
        }
        let redactor = self.redactor(&agent);
        for h in &mut hits {
            h.evidence = redactor.redact(&h.evidence).into_owned();
        }
        if !hits.is_empty() {
            self.progress.warn(&format!(
                "task {task} hit a tripwire: {}",
                agentloop_journal::hits_words(&hits)
            ));
        }
        self.record(Event::TripwiresChecked { iteration, hits })
    }
}
