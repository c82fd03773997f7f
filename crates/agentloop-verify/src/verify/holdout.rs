//! Held-out checks: checks a task names (`Holdout: NAME`) whose content the agent never
//! sees. They live in `[verify] holdout`, a directory outside the project that the
//! sandbox hides: `NAME.sh` is the check, `files/` holds what it needs (hidden tests).
//! Only after the task's own checks passed, and only on the clean copy, agentloop lays
//! `files/` into the copy, runs each named check there with `sh`, and takes the files
//! out again. The check's output goes to a log outside the project; the journal, the
//! verify log and the agent's next prompt say only which held-out check failed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Runner;
use agentloop_evidence::Invocation;
use agentloop_exec::supervise::{self, Spec};
use agentloop_journal::{HeldOutResult, VerifyFinished};

/// The held-out checks of one verification.
pub struct HeldOut {
    /// `[verify] holdout`.
    pub dir: PathBuf,
    pub names: Vec<String>,
    /// Where their output goes (outside the project).
    pub log: PathBuf,
    /// Where their reports go: agentloop's, outside the copy, where the confinement
    /// of the checks lets them write (emptied before each).
    pub reports: PathBuf,
}

/// What is wrong with a held-out directory for `names` (checked before a run starts).
pub fn problem(dir: &Path, project: &Path, names: &[String]) -> Option<String> {
    let Ok(dir) = dir.canonicalize() else {
        return Some(format!(
            "`[verify] holdout = \"{}\"` does not exist",
            dir.display()
        ));
    };
    if project
        .canonicalize()
        .is_ok_and(|p| dir.starts_with(&p) || p.starts_with(&dir))
    {
        return Some(format!(
            "`[verify] holdout = \"{}\"` is inside the project (or holds it): the agent would see the held-out checks; keep them outside",
            dir.display()
        ));
    }
    names
        .iter()
        .find(|n| !dir.join(format!("{n}.sh")).is_file())
        .map(|n| {
            format!(
                "held-out check `{n}`: {} is missing",
                dir.join(format!("{n}.sh")).display()
            )
        })
}

/// What a verification killed while its held-out files were laid into `copy` left
/// there, taken out: each lay is listed first (`NNNN.laid` beside the held-out logs
/// in `logs`, the copy on its first line), and the list goes once they are out, with
/// everything git does not track in the copy (what the run wrote meanwhile). Run
/// before the copy is brought up to date, which puts back a tracked file taken out.
pub fn clear_leftovers(logs: &Path, copy: &Path) {
    let copy_line = copy.to_string_lossy();
    for e in std::fs::read_dir(logs).into_iter().flatten().flatten() {
        let list = e.path();
        if list.extension().is_none_or(|x| x != "laid") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&list) else {
            continue;
        };
        let mut lines = text.lines();
        if lines.next() != Some(copy_line.as_ref()) {
            continue;
        }
        for rel in lines.filter(|l| !l.is_empty() && !l.contains("..")) {
            let f = copy.join(rel);
            if std::fs::symlink_metadata(&f).is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(f);
            }
        }
        // What the killed run wrote is not known: everything git does not track
        // goes, ignored files too (the next check builds its caches again).
        let mut c = agentloop_exec::git::git_command(copy);
        c.args(["clean", "-ffdxq"]);
        let _ = agentloop_exec::git::run_git(c, None);
        let _ = std::fs::remove_file(&list);
    }
}

/// The files under `from`, relative to it.
fn files_under(from: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![from.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(p),
                Ok(t) if t.is_file() => {
                    if let Ok(rel) = p.strip_prefix(from) {
                        out.push(rel.to_string_lossy().into_owned());
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// A file laid into the copy, and what was there before.
struct Laid {
    path: PathBuf,
    before: Option<Vec<u8>>,
}

impl Runner<'_> {
    /// Runs the held-out checks of a verification whose own checks passed, and fails
    /// it when one fails (a digest that names the check and nothing of its content).
    pub fn held_out(
        &self,
        h: &HeldOut,
        result: &mut VerifyFinished,
        mut should_stop: impl FnMut() -> bool,
    ) -> std::io::Result<()> {
        if !result.passed || h.names.is_empty() {
            return Ok(());
        }
        if let Some(dir) = h.log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::File::create(&h.log)?;
        // The checks before may have had nothing to run, and made no log.
        let mut verify_log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.log)?;
        // What is about to be laid is listed first, so a kill in between leaves
        // nothing a later check could read (see `clear_leftovers`).
        let list = h.log.with_extension("laid");
        let mut listed = self.workdir.to_string_lossy().into_owned();
        for rel in files_under(&h.dir.join("files")) {
            listed.push('\n');
            listed.push_str(&rel);
        }
        listed.push('\n');
        agentloop_ground::fsutil::write_atomic(&list, listed.as_bytes())?;
        // What the tree holds before, so that whatever the run leaves can go.
        let before = super::since::Inventory::take(self.workdir);
        let mut laid = Vec::new();
        if let Err(e) = lay(&h.dir.join("files"), self.workdir, &mut laid) {
            unlay(laid);
            let _ = std::fs::remove_file(&list);
            return Err(e);
        }
        // The confinement binds the reports' directory, which the project's checks
        // were done with: there again while the held-out checks run.
        let reports = self
            .tests
            .as_ref()
            .filter(|_| !self.wrap.is_empty())
            .map(|t| t.reports.clone());
        if let Some(r) = &reports {
            std::fs::create_dir_all(r)?;
        }
        std::fs::create_dir_all(&h.reports)?;
        let mut out = Vec::new();
        let ran = (|| -> std::io::Result<()> {
            for (k, name) in h.names.iter().enumerate() {
                let r =
                    self.one_held_out(h, name, &h.reports.join(k.to_string()), &mut should_stop)?;
                // How it ended in full goes to its own log, out of the agent's reach;
                // what the agent reads says only whether it passed: its exit code, its
                // time, its counts are what the agent's code, run by it, could set to
                // carry the hidden tests out a few bits at a time.
                held_out_log(h, &r)?;
                writeln!(
                    verify_log,
                    "[held-out check `{name}`: {}{}; its output is kept outside the project]",
                    if r.passed { "passed" } else { "failed" },
                    match &r.runner {
                        Some(_) => ", judged by its report",
                        None => ", by its exit code (it gives no per-test report)",
                    }
                )?;
                let passed = r.passed;
                out.push(HeldOutResult {
                    exit_code: None,
                    duration_ms: 0,
                    counts: None,
                    problem: None,
                    ..r
                });
                if !passed {
                    break;
                }
            }
            Ok(())
        })();
        // What the run made or changed goes (the laid files among it), then what the
        // lay covered is put back.
        before.sweep(self.workdir);
        unlay(laid);
        let _ = std::fs::remove_file(&list);
        if let Some(r) = &reports {
            let _ = std::fs::remove_dir_all(r);
        }
        let _ = std::fs::remove_dir_all(&h.reports);
        ran?;
        if let Some(failed) = out.iter().find(|r| !r.passed) {
            result.passed = false;
            result.fingerprint = Some(agentloop_ground::failure::fingerprint(
                "holdout",
                &failed.name,
            ));
            result.digest = Some(format!(
                "The held-out check `{}` failed. Held-out checks are kept from you on purpose: make the behaviour the task asks for right in general, not only for the tests you can see.",
                failed.name
            ));
        }
        result.held_out = out;
        Ok(())
    }
}

impl Runner<'_> {
    /// One held-out check, `name`, its report going to `dir`. A check whose script is
    /// one command line of a runner agentloop knows (`python -m pytest tests/hidden`)
    /// is run as that runner, its report read as a task's check's is; any other gets
    /// `$AGENTLOOP_TEST_REPORT` and may print TAP. Where there is a report it must show
    /// tests passed and none failed, and the exit code must be 0 too; a recognised
    /// runner that wrote none, or a report something else wrote, fails.
    fn one_held_out(
        &self,
        h: &HeldOut,
        name: &str,
        dir: &Path,
        should_stop: &mut impl FnMut() -> bool,
    ) -> std::io::Result<HeldOutResult> {
        let script = h.dir.join(format!("{name}.sh"));
        let text = std::fs::read(&script)?;
        // The runner's line, when the script is one: what runs is the held-out
        // script's own words, never a file of the copy's by its name.
        let line = one_command(&String::from_utf8_lossy(&text))
            .filter(|l| Invocation::new(l, self.workdir, dir).runner.is_some());
        let inv = super::ready(dir, |d| match &line {
            Some(l) => Invocation::new(l, self.workdir, d),
            None => Invocation::as_written(&format!("sh {name}.sh"), d),
        })?;
        // Under `[sandbox] verify` the held-out checks are confined as the project's
        // are; their directory is hidden in there, so a script comes in on standard
        // input.
        let mut spec = if line.is_some() {
            Spec::new("sh", self.workdir).arg("-c").arg(&inv.command)
        } else if self.wrap.is_empty() {
            Spec::new("sh", self.workdir).arg(script.as_os_str())
        } else {
            let mut s = Spec::new("sh", self.workdir).arg("-s");
            s.stdin = Some(text);
            s
        };
        // Nothing writable but the copy and the reports: a path `[sandbox] writable`
        // opens to the project's checks would outlive the run, and the agent's code
        // could carry the held-out files there.
        let reports = self.tests.as_ref().map(|t| t.reports.as_path());
        spec.wrap = agentloop_exec::sandbox::judge::writable_only(
            &self.wrap,
            &[Some(self.workdir), reports]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>(),
        );
        spec.env.extend(super::judged_tree_env(
            self.workdir,
            inv.python_path.as_deref(),
        ));
        spec.env.push((
            agentloop_evidence::runner::REPORT_VAR.into(),
            inv.report_var.clone().into_os_string(),
        ));
        if let Some(p) = inv.output_copy() {
            spec.stdout_copy = Some(p);
        }
        spec.timeout = self.timeout;
        spec.output_cap = self.output_cap;
        spec.grace = Duration::from_secs(2);
        spec.log = Some(h.log.clone());
        spec.log_append = true;
        let mut written = super::watch_report(&inv);
        let f = supervise::run(spec, should_stop)?;
        let ev =
            super::read_evidence(&inv, self.workdir).map(|e| e.unless_tampered(written.as_mut()));
        let finished = f.success() && !f.timed_out && !f.killed;
        let (passed, runner, counts, problem) = match ev {
            Some(e) => match e.report {
                Ok(r) => {
                    let c = r.counts();
                    (
                        finished && c.failed == 0 && c.errored == 0 && c.passed > 0,
                        Some(e.runner),
                        Some(c),
                        None,
                    )
                }
                Err(p) => (false, Some(e.runner), None, Some(p)),
            },
            None => (finished, None, None, None),
        };
        Ok(HeldOutResult {
            name: name.to_string(),
            passed,
            exit_code: f.exit_code,
            timed_out: f.timed_out,
            duration_ms: f.duration.as_millis() as u64,
            runner,
            counts,
            problem,
        })
    }
}

/// How held-out check `r` ended, in full, at the end of its log (agentloop's state).
fn held_out_log(h: &HeldOut, r: &HeldOutResult) -> std::io::Result<()> {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&h.log)?;
    writeln!(
        log,
        "[held-out check `{}`: {}, {}{} after {:.2}s{}{}]",
        r.name,
        if r.passed { "passed" } else { "failed" },
        match r.exit_code {
            Some(c) => format!("exit {c}"),
            None => "killed".to_string(),
        },
        if r.timed_out { ", timed out" } else { "" },
        r.duration_ms as f64 / 1000.0,
        match (&r.runner, &r.counts) {
            (Some(runner), Some(c)) => format!("; {runner}: {}", c.words()),
            _ => String::new(),
        },
        r.problem
            .as_ref()
            .map(|p| format!("; {p}"))
            .unwrap_or_default(),
    )
}

/// The one command of a script that has nothing else (comments and blank lines
/// aside), if it is one.
fn one_command(script: &str) -> Option<String> {
    let mut lines = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let first = lines.next()?;
    (lines.next().is_none() && !first.ends_with('\\')).then(|| first.to_string())
}

/// Lays every file under `from` into `into` at the same path, keeping what it
/// replaces.
fn lay(from: &Path, into: &Path, laid: &mut Vec<Laid>) -> std::io::Result<()> {
    if !from.is_dir() {
        return Ok(());
    }
    let mut todo = vec![from.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            let src = e.path();
            let ty = e.file_type()?;
            if ty.is_dir() {
                todo.push(src);
                continue;
            }
            if !ty.is_file() {
                continue;
            }
            let rel = src.strip_prefix(from).expect("under the held-out files");
            let path = into.join(rel);
            if let Some(p) = path.parent() {
                std::fs::create_dir_all(p)?;
            }
            // A link the copy holds is not followed out of it.
            let before = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_file() => Some(std::fs::read(&path)?),
                Ok(_) => {
                    std::fs::remove_file(&path)?;
                    None
                }
                Err(_) => None,
            };
            std::fs::copy(&src, &path)?;
            laid.push(Laid { path, before });
        }
    }
    Ok(())
}

/// Takes the laid files out again (what they replaced back).
fn unlay(laid: Vec<Laid>) {
    for l in laid {
        let _ = match l.before {
            Some(b) => std::fs::write(&l.path, b),
            None => std::fs::remove_file(&l.path),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_of_one_command_line_is_run_as_that_command() {
        assert_eq!(
            one_command("#!/bin/sh\n# hidden cases\n\npython3 -m pytest -q tests/hidden\n")
                .as_deref(),
            Some("python3 -m pytest -q tests/hidden")
        );
        for more in [
            "cd tests\npytest -q\n",
            "pytest \\\n  -q\n",
            "# nothing\n",
            "",
        ] {
            assert_eq!(one_command(more), None, "{more:?}");
        }
    }

    #[test]
    fn what_a_killed_lay_left_goes_and_only_from_its_own_copy() {
        let logs = tempfile::tempdir().unwrap();
        let copy = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        for c in [copy.path(), other.path()] {
            std::fs::create_dir_all(c.join("tests")).unwrap();
            std::fs::write(c.join("tests/hidden.py"), "secret").unwrap();
            std::fs::write(c.join("kept.py"), "mine").unwrap();
        }
        std::fs::write(
            logs.path().join("0003.laid"),
            format!("{}\ntests/hidden.py\n../kept.py\n", copy.path().display()),
        )
        .unwrap();
        std::fs::write(
            logs.path().join("0004.laid"),
            format!("{}\ntests/hidden.py\n", other.path().display()),
        )
        .unwrap();
        clear_leftovers(logs.path(), copy.path());
        assert!(!copy.path().join("tests/hidden.py").exists());
        assert!(copy.path().join("kept.py").exists());
        assert!(!logs.path().join("0003.laid").exists());
        // Another copy's lay (a worker's, under way) is left alone.
        assert!(other.path().join("tests/hidden.py").exists());
        assert!(logs.path().join("0004.laid").exists());
    }
}
