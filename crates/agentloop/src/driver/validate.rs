//! The VALIDATE phase at work: every done task's checks and the run's `[verify]
//! commands`, once more, on the whole project — the clean copy of the working tree, or
//! in a run with workers a worktree of the integration branch's head — recorded as
//! `validated` with `validation.md`, `validation.log` and (where the checks' runners
//! report each test) `test-results.json` in the run's directory.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use agentloop_evidence::{Outcome, TestResult};
use agentloop_journal::{Event, TaskStatus, VerifyFinished};
use agentloop_policy::evidence::Place;
use agentloop_verify::verify;

use super::Driver;
use crate::error::CliError;
use agentloop_exec::git::run as git;

impl Driver {
    pub(crate) fn validate(&mut self) -> Result<(), CliError> {
        let s = &self.state;
        let mut commands: Vec<String> = Vec::new();
        let mut measures = Vec::new();
        for t in s.tasks.iter().filter(|t| t.status == TaskStatus::Done) {
            for c in s.plan.checks(&t.id) {
                if !commands.contains(&c) {
                    commands.push(c);
                }
            }
            measures.extend(s.plan.measures(&t.id));
        }
        for c in &s.settings.verify_commands {
            if !commands.contains(c) {
                commands.push(c.clone());
            }
        }
        // `[validate]`'s own steps (security, performance), last.
        for (_, c) in &s.settings.validate_steps {
            if !commands.contains(c) {
                commands.push(c.clone());
            }
        }
        self.progress.note(&format!(
            "validating: {} on the whole project",
            agentloop_ground::words::plural(commands.len(), "check", "checks")
        ));
        // In a run with workers the work is on the integration branch: at its head as
        // the journal has it (never what the branch's ref says now).
        let branch = s
            .integration
            .as_ref()
            .map(|i| (i.branch.clone(), i.head.clone()));
        let temp = match &branch {
            Some((b, head)) => {
                let dir = agentloop_ground::fsutil::judge_dir()
                    .unwrap_or_else(|| std::env::temp_dir().join("agentloop"))
                    .join("validate")
                    .join(&self.run.id);
                let _ = git(
                    &self.ws.root,
                    &["worktree", "remove", "--force", &dir.to_string_lossy()],
                );
                let _ = std::fs::remove_dir_all(&dir);
                git(
                    &self.ws.root,
                    &[
                        "worktree",
                        "add",
                        "--detach",
                        "--quiet",
                        &dir.to_string_lossy(),
                        head,
                    ],
                )
                .map_err(|e| CliError::internal(format!("cannot check out {b}: {e}")))?;
                // What the checks need that git leaves out of a worktree.
                agentloop_verify::clean_copy::link_carried(&self.ws.root, &dir, &s.settings.carry)
                    .map_err(|e| {
                        CliError::internal(format!(
                            "cannot link [verify] carry into {}: {e}",
                            dir.display()
                        ))
                    })?;
                Some(dir)
            }
            None => None,
        };
        // With no workers: the tree now, before the copy is brought up to date with it
        // (the last iteration's check is taken only for this very tree). A hook-mode
        // run asks git (its resident watches the tree, the hook does not).
        let tree_now = match (&temp, self.watched.as_mut()) {
            (None, Some(w)) => w.take(false),
            (None, None) => self.snapshots.as_ref().and_then(|s| s.take()),
            _ => None,
        }
        .and_then(|t| super::checked::tree_key(&t));
        let expected = self.expected(None, Place::Merged);
        let measured: Vec<String> = measures.iter().map(|(c, _)| c.clone()).collect();
        let by_tests = |c: &str| expected.as_ref().is_some_and(|e| e.judged_by_tests(c));
        let checked = super::checked::dir_of(&self.run.path);
        let last = self.state.iterations;
        // With no workers, when the last iteration's check on this very tree has every
        // check's result: taken without bringing the copy up to date (a checkout, two
        // cleans and the copy's bookkeeping), what the copy would leave out and let in
        // found from the tree alone. Only where this driver keeps the copy (a hook-mode
        // run's resident keeps it in its own process: its index is not touched here).
        let own_copy = self.watched.is_some() && self.resident.is_none();
        let early = match (&temp, &tree_now) {
            (None, Some(key))
                if own_copy
                    && !commands.is_empty()
                    && measures.is_empty()
                    && self.state.settings.clean_copy =>
            {
                super::checked::recall(&checked, key)
                    .filter(|c| c.result.iteration == last)
                    .and_then(|c| {
                        let copy = agentloop_verify::clean_copy::CleanCopy::for_run(
                            &self.ws.root,
                            &self.run.id,
                        )?;
                        let admission = self.admission(&[]);
                        let made = copy
                            .tree_judged(agentloop_verify::clean_copy::Judge {
                                overlay: self.state.baseline.as_ref(),
                                admission: admission.as_ref(),
                            })
                            .ok()?;
                        let reused = c.reusable(
                            &commands,
                            &measured,
                            by_tests,
                            &made.left_out,
                            &made.admitted,
                        );
                        let all = commands
                            .iter()
                            .all(|cmd| reused.iter().any(|(r, _)| &r.command == cmd));
                        all.then_some((copy.dir, reused, made.left_out, made.admitted))
                    })
            }
            _ => None,
        };
        let (early_reused, prepared) = match early {
            Some((dir, reused, left_out, admitted)) => {
                (Some(reused), Some((dir, left_out, admitted, None)))
            }
            None => (None, None),
        };
        let (dir, left_out, admitted, unclean) = match (prepared, &temp) {
            (Some(p), _) => p,
            (None, temp) => match temp {
                Some(d) => {
                    // What the agents added that the checks would load on their own, out.
                    let (left_out, admitted) = match self.admission(&[]) {
                        Some(a) => {
                            agentloop_verify::clean_copy::leave_out_in(d, &a).map_err(|e| {
                                CliError::internal(format!("cannot prepare {}: {e}", d.display()))
                            })?
                        }
                        None => (Vec::new(), Vec::new()),
                    };
                    (d.clone(), left_out, admitted, None)
                }
                // Nothing to run: no clean copy to make (a whole checkout of the project).
                None if commands.is_empty() && measures.is_empty() => {
                    (self.ws.root.clone(), Vec::new(), Vec::new(), None)
                }
                None => {
                    let j = self.verify_dir(&[]);
                    (j.dir, j.left_out, j.admitted, j.unclean)
                }
            },
        };
        // What the merge queue's last check already found on this very tree. Taken
        // only when every check judged test by test is among it (its judgement of
        // the tests stands for all of them); the rest are judged by their exit codes.
        let record = match (&temp, &tree_now) {
            _ if early_reused.is_some() => None,
            (Some(d), _) => git(d, &["rev-parse", "HEAD"])
                .ok()
                .and_then(|head| super::checked::recall(&checked, head.trim())),
            // The last iteration's (its judgement of the tests held every done task's),
            // on the tree as it is now, in the same copy.
            (None, Some(key)) if unclean.is_none() => {
                super::checked::recall(&checked, key).filter(|c| c.result.iteration == last)
            }
            _ => None,
        };
        let mut reused = early_reused.unwrap_or_else(|| {
            record
                .map(|c| c.reusable(&commands, &measured, by_tests, &left_out, &admitted))
                .unwrap_or_default()
        });
        let judged_left = commands
            .iter()
            .any(|c| !reused.iter().any(|(r, _)| &r.command == c) && by_tests(c));
        if judged_left {
            reused.clear();
        }
        let planned = commands.len();
        if !reused.is_empty() {
            commands.retain(|c| !reused.iter().any(|(r, _)| &r.command == c));
            self.progress.note(&format!(
                "validating: {} passed on this tree in {}, not run again",
                agentloop_ground::words::plural(reused.len(), "check", "checks"),
                if temp.is_some() {
                    "the merge queue's last check"
                } else {
                    "the last iteration's check"
                }
            ));
        }
        let log = self.run.path.join("validation.log");
        let runner = verify::Runner {
            workdir: &dir,
            timeout: self.config.verify.timeout,
            output_cap: self.config.verify.output_cap,
            jobs: self.config.verify.jobs_for(1),
            log: &log,
            wrap: self.check_wrap(&dir, &self.reports_dir(0)),
            bytecode: self.bytecode(false),
            tests: expected
                .as_ref()
                .filter(|_| reused.is_empty())
                .map(|e| verify::TestsCheck {
                    expected: e,
                    reports: self.reports_dir(0),
                }),
        };
        let interrupted = self.interrupted.clone();
        // What the coverage reports were before the step: the filesystem stamps a
        // file's times from a coarser clock than `now()`, so a time compared with the
        // step's start could call a report written at once stale.
        let reports = self.config.validate.coverage.as_ref().map(|_| {
            let names = self.coverage_reports();
            let before: Vec<_> = names.iter().map(|r| stamp(&dir.join(r))).collect();
            (names, before)
        });
        // (A stale record of an earlier validation's tests goes first.)
        let _ = std::fs::remove_file(log.with_extension("tests.json"));
        let result = runner.run_measured(0, &commands, &measures, || {
            interrupted.load(Ordering::SeqCst)
        });
        // The coverage step's report, read before the copy it was written in goes.
        let coverage = reports.map(|(names, before)| read_coverage(&dir, &names, &before));
        if let Some(d) = &temp {
            let _ = git(
                &self.ws.root,
                &["worktree", "remove", "--force", &d.to_string_lossy()],
            );
        }
        let mut result = result.map_err(|e| CliError::internal(format!("cannot validate: {e}")))?;
        // The checks taken from the merge queue's come first, as if run first.
        let reused_tests: Vec<serde_json::Value> =
            reused.iter().filter_map(|(_, t)| t.clone()).collect();
        let taken = reused.len();
        result
            .commands
            .splice(0..0, reused.into_iter().map(|(r, _)| r));
        verify::left_out::tell(&mut result, left_out, admitted, &log)
            .map_err(|e| CliError::internal(format!("cannot validate: {e}")))?;
        if let Some(why) = &unclean {
            super::refused::unclean_refused(&mut result, why);
        }
        if self.interrupted.load(Ordering::SeqCst) {
            return Ok(());
        }
        let redactor = self.redactor(&self.state.settings.agent.clone());
        redactor.scrub_check_log(&log)?;
        result.redact(&redactor);
        let not_the_work = coverage.and_then(|c| self.judge_coverage(c, &mut result));
        let digest = result.digest.clone();
        self.write_validation(&result, digest.as_deref(), planned, taken);
        self.write_test_results(&result, &log, reused_tests);
        if !result.passed {
            // The command that failed; else (every command passed) what failed.
            let why = match result.commands.last().filter(|c| !c.passed()) {
                Some(c) => format!("`{}`", c.command),
                None => digest
                    .as_deref()
                    .and_then(|d| d.lines().next())
                    .unwrap_or_default()
                    .to_string(),
            };
            self.progress
                .warn(&format!("validation FAILED on the whole project: {why}"));
        }
        self.record(Event::Validated {
            passed: result.passed,
            commands: result.commands,
            digest,
            not_the_work,
        })
    }

    /// Where the coverage step's report may be: the one named, or each known name.
    fn coverage_reports(&self) -> Vec<String> {
        match &self.config.validate.coverage_report {
            Some(n) => vec![n.clone()],
            None => agentloop_config::COVERAGE_REPORTS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }

    /// `coverage.json` in the run's directory, and the validation failed when the
    /// coverage is under `[validate] coverage_min` or could not be read. Returns why,
    /// when no fix task can mend it (the step wrote no report agentloop could read:
    /// the configuration's to mend, not the code's).
    fn judge_coverage(
        &mut self,
        coverage: Result<(String, agentloop_evidence::coverage::Coverage), String>,
        result: &mut VerifyFinished,
    ) -> Option<String> {
        let min = self.config.validate.coverage_min;
        let mut not_the_work = None;
        let failed = match coverage {
            Err(e) => {
                let why = format!(
                    "{e}; name where the coverage step writes its report (`[validate] coverage_report`) or mend the step"
                );
                not_the_work = Some(format!("the coverage step: {why}"));
                Some(why)
            }
            Ok((rel, c)) => {
                let mut json = c.to_json();
                json["report"] = serde_json::json!(rel);
                json["min"] = serde_json::json!(min);
                let path = self.run.path.join("coverage.json");
                if let Err(e) =
                    agentloop_ground::fsutil::write_atomic(&path, format!("{json:#}\n").as_bytes())
                {
                    self.progress
                        .warn(&format!("cannot write {}: {e}", path.display()));
                }
                let words = format!(
                    "{}% of {} lines covered ({}, from {rel})",
                    c.lines.percent(),
                    c.lines.total,
                    c.format
                );
                match min {
                    Some(_) if c.lines.total == 0 => Some(format!(
                        "{words}: a report that counts no line says nothing about the minimum"
                    )),
                    Some(m) if c.lines.percent() < m => Some(format!(
                        "{words}, under the {m}% `[validate] coverage_min` asks"
                    )),
                    _ => {
                        self.progress.note(&format!("coverage: {words}"));
                        None
                    }
                }
            }
        };
        if let Some(why) = failed {
            self.progress.warn(&format!("coverage: {why}"));
            if result.passed {
                result.passed = false;
                result.digest = Some(format!("The coverage step: {why}"));
            } else {
                // A command failed too: that is for a fix task.
                not_the_work = None;
            }
        }
        not_the_work
    }

    /// `test-results.json` in the run's directory: every test the validation's checks
    /// reported, one by one, as their runners' own reports said (per-test evidence),
    /// with the totals. Written only when some check had a report to read.
    /// `taken`: the records of the checks taken from the merge queue's.
    fn write_test_results(
        &self,
        r: &VerifyFinished,
        log: &std::path::Path,
        taken: Vec<serde_json::Value>,
    ) {
        let ran = std::fs::read_to_string(log.with_extension("tests.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<Vec<serde_json::Value>>(&text).ok());
        if ran.is_none() && taken.is_empty() {
            return;
        }
        let per_command: Vec<serde_json::Value> =
            taken.into_iter().chain(ran.into_iter().flatten()).collect();
        // Each test once, at its worst across the checks that ran it.
        let mut worst = std::collections::BTreeMap::<String, Outcome>::new();
        for c in &per_command {
            let tests: Vec<TestResult> =
                serde_json::from_value(c["tests"].clone()).unwrap_or_default();
            for t in tests {
                let o = worst.entry(t.id).or_insert(t.outcome);
                *o = o.worst(t.outcome);
            }
        }
        let mut totals = agentloop_evidence::Counts::default();
        for o in worst.values() {
            totals.add(*o);
        }
        let out = serde_json::json!({
            "v": 1,
            "run": self.run.id,
            "passed": r.passed,
            "tests": worst.len(),
            "totals": totals,
            "commands": per_command,
        });
        let path = self.run.path.join("test-results.json");
        if let Err(e) = agentloop_ground::fsutil::write_view(
            &path,
            &agentloop_ground::fsutil::pretty_json(&out),
        ) {
            self.progress
                .warn(&format!("cannot write {}: {e}", path.display()));
        }
    }

    /// A command's cell in `validation.md`: the command, and which `[validate]` step it
    /// is when it is one.
    fn step_cell(&self, command: &str) -> String {
        let what = self
            .state
            .settings
            .validate_steps
            .iter()
            .find(|(_, c)| c == command)
            .map(|(w, _)| format!(" ({w} step)"))
            .unwrap_or_default();
        format!("`{}`{what}", command.replace('|', "\\|"))
    }

    /// `taken`: how many of the first commands were taken from the merge queue's (or
    /// the last iteration's) check.
    fn write_validation(
        &self,
        r: &VerifyFinished,
        digest: Option<&str>,
        planned: usize,
        taken: usize,
    ) {
        let mut md = format!(
            "# Validation\n\nEvery done task's checks and the run's, on the whole project after its last task: **{}**.\n\n| Command | Result |\n| --- | --- |\n",
            if r.passed { "passed" } else { "FAILED" }
        );
        let last = r.commands.len().saturating_sub(1);
        let source = if self.state.integration.is_some() {
            "the merge queue's last check"
        } else {
            "the last iteration's check"
        };
        for (i, c) in r.commands.iter().enumerate() {
            if i < taken {
                let _ = writeln!(
                    md,
                    "| {} | passed on this tree in {source} |",
                    self.step_cell(&c.command)
                );
                continue;
            }
            let failed_here = !r.passed && i == last;
            if let Some(t) = c.tests.as_ref().filter(|t| t.judged) {
                let result = match (&t.problem, &t.reason) {
                    (Some(p), _) => format!("no per-test evidence: {p}"),
                    (None, Some(why)) => format!("{}: {why}", t.runner),
                    (None, None) => t.shown(),
                };
                let _ = writeln!(md, "| {} | {result} |", self.step_cell(&c.command));
                continue;
            }
            let result = match (c.exit_code, &c.measured) {
                (Some(0), Some(m)) if failed_here => format!("measured {m}: does not hold"),
                (Some(0), None) if failed_here => "printed no value to measure".to_string(),
                (Some(0), Some(m)) => format!("measured {m}"),
                (Some(0), None) => format!("exit 0, {:.1}s", c.duration_ms as f64 / 1000.0),
                (Some(code), _) => format!("exit {code}"),
                (None, _) if c.timed_out => "timed out".to_string(),
                (None, _) => "killed".to_string(),
            };
            let _ = writeln!(md, "| {} | {result} |", self.step_cell(&c.command));
        }
        if r.commands.len() < planned {
            let _ = writeln!(
                md,
                "\n{} not run: the run stops at the first failure.",
                agentloop_ground::words::plural(
                    planned - r.commands.len(),
                    "check was",
                    "checks were"
                )
            );
        }
        if let Some(d) = digest {
            let _ = writeln!(md, "\n## The failure\n\n{d}");
        }
        let path = self.run.path.join("validation.md");
        if let Err(e) = agentloop_ground::fsutil::write_atomic(&path, md.as_bytes()) {
            self.progress
                .warn(&format!("cannot write {}: {e}", path.display()));
        }
    }
}

/// A file as the filesystem knows it: which file, when its inode last changed (a time
/// no one can set), its content's time and size. `None` when it is no file.
type Stamp = Option<(u64, u64, i64, i64, i64, i64, u64)>;

fn stamp(path: &std::path::Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())?;
    Some((
        m.dev(),
        m.ino(),
        m.ctime(),
        m.ctime_nsec(),
        m.mtime(),
        m.mtime_nsec(),
        m.size(),
    ))
}

/// The coverage step's report in `dir`, written while the validation ran: a file
/// that was not there before the step or has changed since (`before`, in the order of
/// `names`), and whose time is not ahead of now (one set ahead to pass for fresh is
/// not this run's), read.
fn read_coverage(
    dir: &std::path::Path,
    names: &[String],
    before: &[Stamp],
) -> Result<(String, agentloop_evidence::coverage::Coverage), String> {
    let until = std::time::SystemTime::now();
    let fresh = |(rel, was): (&String, &Stamp)| {
        let path = dir.join(rel);
        let now = stamp(&path);
        now.is_some()
            && now != *was
            && std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.modified().is_ok_and(|t| t <= until))
    };
    let Some((rel, _)) = names.iter().zip(before).find(|&c| fresh(c)) else {
        return Err(format!(
            "the coverage step wrote no report ({})",
            names.join(", ")
        ));
    };
    let mut text = String::new();
    use std::io::Read;
    std::fs::File::open(dir.join(rel))
        .and_then(|f| f.take(64 << 20).read_to_string(&mut text))
        .map_err(|e| format!("{rel}: cannot read: {e}"))?;
    agentloop_evidence::coverage::parse(&text)
        .map(|c| (rel.clone(), c))
        .map_err(|e| format!("{rel}: {e}"))
}
