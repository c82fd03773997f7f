//! The run's test baseline taken: every check run once, to its end, on the tree before
//! any agent worked, and every test's outcome kept; and agentloop's sealed cache of
//! baselines by tree, so a second run on the same tree does not run them again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::{Runner, prepare, read_evidence};
use agentloop_evidence::runner::subset;
use agentloop_evidence::{BaselineCommand, Outcome, Report, TestsBaseline};
use agentloop_exec::trace::Trace;

/// How long a cached baseline is trusted: the tree is the same, but what is
/// installed around it (packages, services) may not be.
const CACHE_FOR: Duration = Duration::from_secs(24 * 3600);

/// The cache's format: 2 keeps what each check read; 3 keys it by whether the
/// checks were traced (a `plan check` baseline taken in the project is no baseline
/// for a run that traces); 4: a pytest test inherited or imported from another module
/// is named by its test module (stop 74), not the file that defines it; 5: pytest's
/// tests read from agentloop's plugin's report, by pytest's own node ids (stop 77); 6:
/// each check keeps what a new Python module would stand in for (`shadowable`).
const VERSION: u32 = 6;

/// Why a baseline taken where nothing could be traced (in the project itself, not a
/// clean copy) knows nothing of what its checks opened.
pub const NOT_TRACED: &str = "the checks ran in the project, not a clean copy, and were not traced";
/// The largest cached baseline read back (a suite of a million tests fits).
const MOST_CACHED: u64 = 256 << 20;

impl Runner<'_> {
    /// Runs every command (each to its end, whatever the one before did) and keeps
    /// what each reported, and which of `trace` (files of the tree, relative to the
    /// work directory) each opened; `None` when `should_stop` ended it (nothing is
    /// recorded: it is taken again).
    pub fn baseline(
        &self,
        reports: &Path,
        commands: &[String],
        tree: Option<String>,
        trace: &[String],
        mut should_stop: impl FnMut() -> bool,
    ) -> std::io::Result<Option<TestsBaseline>> {
        let mut trace_incomplete = trace.is_empty().then(|| NOT_TRACED.to_string());
        if !trace.is_empty() {
            // A module Python finds compiled in `__pycache__` is not opened: the trace
            // would miss what the tests import. Once, before the first check: what a
            // later check finds compiled, an earlier one opened (the model is the
            // union of every check's opens).
            forget_bytecode(self.workdir);
        }
        std::fs::File::create(self.log)?;
        let mut log = std::fs::OpenOptions::new().append(true).open(self.log)?;
        // A check that is a part of another (`pytest tests/test_x.py` beside
        // `pytest`) is read from the other's run after it, not run again.
        let part_of = super::parts::parts_of(commands, |_| true, self.workdir);
        let mut done: Vec<Option<BaselineCommand>> = vec![None; commands.len()];
        let order = (0..commands.len())
            .filter(|k| part_of[*k].is_none())
            .chain((0..commands.len()).filter(|k| part_of[*k].is_some()));
        for k in order {
            let cmd = &commands[k];
            if let Some((w, paths)) = &part_of[k]
                && let Some(whole) = done[*w].as_ref()
                && whole.problem.is_none()
                // pytest's 0 (all passed) or 1 (some failed): any other ended it early.
                && matches!(whole.exit_code, Some(0 | 1))
                && let Some(tests) = subset::cut(&whole.tests, paths)
            {
                let failing = tests
                    .values()
                    .any(|o| matches!(o, Outcome::Failed | Outcome::Errored));
                writeln!(
                    log,
                    "$ {cmd}\n[baseline: read from `{}`'s run, {} of its tests]\n",
                    whole.command,
                    tests.len()
                )?;
                done[k] = Some(BaselineCommand {
                    command: cmd.clone(),
                    runner: whole.runner.clone(),
                    exit_code: Some(i32::from(failing)),
                    problem: None,
                    tests,
                    read: whole.read.clone(),
                    duration_ms: None,
                    // The whole's run is the one that taught it: kept there once.
                    shadowable: Default::default(),
                });
                continue;
            }
            writeln!(log, "$ {cmd}")?;
            let inv = prepare(
                cmd,
                self.workdir,
                &reports.join(k.to_string()),
                self.jobs_of(cmd),
            )?;
            if inv.command != *cmd {
                writeln!(log, "[agentloop runs it as: {}]", inv.command)?;
            }
            log.flush()?;
            let tracing = (!trace.is_empty())
                .then(|| Trace::start(self.workdir, trace))
                .flatten();
            if tracing.is_none() && !trace.is_empty() {
                trace_incomplete = Some("inotify is not available".to_string());
            }
            let started = std::time::SystemTime::now();
            let f = self.spawn(&inv.command, Some(&inv), &mut should_stop)?;
            let traced = tracing.map(Trace::finish).unwrap_or_default();
            if !f.killed {
                self.keep_bytecode(started);
            }
            if let Some(why) = traced.incomplete {
                trace_incomplete.get_or_insert(why);
            }
            if f.killed {
                return Ok(None);
            }
            writeln!(
                log,
                "[{} after {:.2}s]",
                self.status_words(&f),
                f.duration.as_secs_f64()
            )?;
            let ev = read_evidence(&inv, self.workdir);
            let (runner, report) = match ev {
                Some(e) => (Some(e.runner), Some(e.report)),
                None => (None, None),
            };
            let problem = if f.timed_out {
                Some(format!(
                    "it timed out after {}",
                    humantime::format_duration(self.timeout)
                ))
            } else {
                report.as_ref().and_then(|r| r.as_ref().err().cloned())
            };
            let tests = match (&report, &problem) {
                (Some(Ok(r)), None) => r.tests.iter().map(|t| (t.id.clone(), t.outcome)).collect(),
                _ => Default::default(),
            };
            let shadowable = match &report {
                Some(Ok(Report {
                    python: Some(saw), ..
                })) => agentloop_project::shadow::learn(saw, self.workdir),
                _ => Default::default(),
            };
            let entry = BaselineCommand {
                command: cmd.clone(),
                runner,
                exit_code: f.exit_code,
                problem,
                tests,
                read: traced.read.into_iter().collect(),
                duration_ms: Some(f.duration.as_millis() as u64),
                shadowable,
            };
            match (&entry.runner, &entry.problem) {
                (Some(r), None) => {
                    let counts = report
                        .and_then(|r| r.ok())
                        .map(|r| r.counts().words())
                        .unwrap_or_default();
                    writeln!(log, "[baseline: {r}: {counts}]\n")?;
                }
                (Some(r), Some(p)) => {
                    writeln!(log, "[baseline: {r}: no per-test evidence: {p}]\n")?
                }
                (None, _) => writeln!(log, "[baseline: exit code only: no per-test evidence]\n")?,
            }
            done[k] = Some(entry);
        }
        let out: Vec<BaselineCommand> = done.into_iter().flatten().collect();
        log.sync_all()?;
        let _ = std::fs::remove_dir_all(reports);
        Ok(Some(TestsBaseline {
            tree,
            commands: out,
            unavailable: None,
            cached: false,
            traced: Default::default(),
            trace_incomplete,
            would_load: Default::default(),
            model: Default::default(),
        }))
    }
}

/// Removes the `__pycache__` directories of the copy at `dir` (not under `.git`, not
/// through a link: a carried `.venv` is the user's).
fn forget_bytecode(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else {
            continue;
        };
        if !kind.is_dir() || e.file_name() == ".git" {
            continue;
        }
        if e.file_name() == "__pycache__" {
            let _ = std::fs::remove_dir_all(e.path());
        } else {
            forget_bytecode(&e.path());
        }
    }
}

/// A baseline kept in agentloop's cache, sealed with the journal's key: an agent that
/// rewrites it (to make a test it broke look broken before) breaks the seal.
pub struct BaselineCache {
    path: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct Sealed {
    mac: String,
    body: String,
}

#[derive(Serialize, Deserialize)]
struct Body {
    v: u32,
    tree: String,
    commands: Vec<String>,
    baseline: TestsBaseline,
}

impl BaselineCache {
    /// The baseline of `commands` on `tree`: the cached one (`cached: true`) when the
    /// cache has it, else the one `take` makes, kept for the next run on that tree.
    /// `None`: `take` was cut short (nothing is kept).
    /// `traced`: the baseline is to be taken with a trace (on a clean copy).
    pub fn cached_or(
        tree: Option<&str>,
        commands: &[String],
        traced: bool,
        take: impl FnOnce() -> std::io::Result<Option<TestsBaseline>>,
    ) -> std::io::Result<Option<TestsBaseline>> {
        let cache = tree.and_then(|t| BaselineCache::at(t, commands, traced).map(|c| (t, c)));
        if let Some((t, c)) = &cache
            && let Some(mut b) = c.load(t, commands)
        {
            b.cached = true;
            return Ok(Some(b));
        }
        let taken = take()?;
        // A check that did not start (a program not found, no report at all) says
        // more about the environment than the tree: taken again next time, once
        // `carry` or the installed tools may have changed.
        let started = |b: &TestsBaseline| {
            b.commands
                .iter()
                .all(|c| c.exit_code != Some(127) && !(c.problem.is_some() && c.tests.is_empty()))
        };
        // One meant to be traced that could not be is not kept as traced.
        let as_meant =
            |b: &TestsBaseline| !traced || b.trace_incomplete.as_deref() != Some(NOT_TRACED);
        if let (Some((t, c)), Some(b)) = (&cache, &taken)
            && started(b)
            && as_meant(b)
        {
            c.save(t, commands, b);
        }
        Ok(taken)
    }

    /// Where the baseline of `commands` on `tree` is kept.
    fn at(tree: &str, commands: &[String], traced: bool) -> Option<BaselineCache> {
        let mut h = crc32fast::Hasher::new();
        h.update(if traced { b"traced\0" } else { b"untraced\0" });
        for c in commands {
            h.update(c.as_bytes());
            h.update(b"\0");
        }
        let name = format!("{tree}-{:08x}.json", h.finalize());
        Some(BaselineCache {
            path: agentloop_ground::fsutil::cache_dir()?
                .join("baselines")
                .join(name),
        })
    }

    /// The cached baseline, if it is there, sealed, fresh and for these commands.
    fn load(&self, tree: &str, commands: &[String]) -> Option<TestsBaseline> {
        let meta = std::fs::metadata(&self.path).ok()?;
        let age = SystemTime::now()
            .duration_since(meta.modified().ok()?)
            .unwrap_or_default();
        if age > CACHE_FOR {
            return None;
        }
        // A FIFO or a device planted at the path is refused by its type, not waited on.
        let bytes = agentloop_ground::fsutil::read_regular(&self.path, MOST_CACHED).ok()?;
        let sealed: Sealed = serde_json::from_slice(&bytes).ok()?;
        if !agentloop_journal::verifies(sealed.body.as_bytes(), &sealed.mac) {
            return None;
        }
        let body: Body = serde_json::from_str(&sealed.body).ok()?;
        (body.v == VERSION && body.tree == tree && body.commands == commands)
            .then_some(body.baseline)
    }

    /// Keeps `baseline` (best effort: without it the next run takes its own).
    fn save(&self, tree: &str, commands: &[String], baseline: &TestsBaseline) {
        let body = Body {
            v: VERSION,
            tree: tree.to_string(),
            commands: commands.to_vec(),
            baseline: baseline.clone(),
        };
        let Ok(body) = serde_json::to_string(&body) else {
            return;
        };
        let Some(mac) = agentloop_journal::seal(body.as_bytes()) else {
            return;
        };
        let Ok(bytes) = serde_json::to_vec(&Sealed { mac, body }) else {
            return;
        };
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = agentloop_ground::fsutil::write_atomic(&self.path, &bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_at_the_cache_path_is_no_cached_baseline_and_holds_nothing_up() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("tree-0.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        let cache = BaselineCache { path };
        let t = std::time::Instant::now();
        // No writer ever opens the FIFO: a reader that opened it plainly would wait
        // for one for good.
        assert!(cache.load("tree", &["true".to_string()]).is_none());
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
