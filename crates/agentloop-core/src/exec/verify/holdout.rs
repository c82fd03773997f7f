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
use crate::exec::supervise::{self, Spec};
use crate::journal::{HeldOutResult, VerifyFinished};

/// The held-out checks of one verification.
pub struct HeldOut {
    /// `[verify] holdout`.
    pub dir: PathBuf,
    pub names: Vec<String>,
    /// Where their output goes (outside the project).
    pub log: PathBuf,
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
        let mut verify_log = std::fs::OpenOptions::new().append(true).open(self.log)?;
        let mut laid = Vec::new();
        if let Err(e) = lay(&h.dir.join("files"), self.workdir, &mut laid) {
            unlay(laid);
            return Err(e);
        }
        let mut out = Vec::new();
        let ran = (|| -> std::io::Result<()> {
            for name in &h.names {
                let script = h.dir.join(format!("{name}.sh"));
                let mut spec = Spec::new("sh", self.workdir).arg(script.as_os_str());
                spec.timeout = self.timeout;
                spec.output_cap = self.output_cap;
                spec.grace = Duration::from_secs(2);
                spec.log = Some(h.log.clone());
                spec.log_append = true;
                let f = supervise::run(spec, &mut should_stop)?;
                let passed = f.success();
                writeln!(
                    verify_log,
                    "[held-out check `{name}`: {} after {:.2}s; its output is kept outside the project]",
                    if passed { "passed" } else { "failed" },
                    f.duration.as_secs_f64()
                )?;
                out.push(HeldOutResult {
                    name: name.clone(),
                    passed,
                    exit_code: f.exit_code,
                    timed_out: f.timed_out,
                    duration_ms: f.duration.as_millis() as u64,
                });
                if !passed {
                    break;
                }
            }
            Ok(())
        })();
        unlay(laid);
        ran?;
        if let Some(failed) = out.iter().find(|r| !r.passed) {
            result.passed = false;
            result.fingerprint = Some(crate::failure::fingerprint("holdout", &failed.name));
            result.digest = Some(format!(
                "The held-out check `{}` failed. Held-out checks are kept from you on purpose: make the behaviour the task asks for right in general, not only for the tests you can see.",
                failed.name
            ));
        }
        result.held_out = out;
        Ok(())
    }
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
