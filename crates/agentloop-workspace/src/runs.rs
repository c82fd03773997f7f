//! The project directory and its `.agentloop/`: its runs, made, found and listed.

use agentloop_config::Settings;
use agentloop_ground::fsutil::write_atomic;
use agentloop_journal::{Event, RunState, Writer};
use agentloop_plan::Plan;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{WorkspaceError, io};
use crate::registry;
use crate::run_dir::RunDir;

/// The project directory and its `.agentloop/`.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub dir: PathBuf,
    /// `root` is known to be the top of a git work tree (found by asking git).
    pub in_git: bool,
}

impl Workspace {
    /// The workspace for `start`: the top of its git work tree, or `start` itself.
    pub fn find(start: &Path) -> Workspace {
        let top = agentloop_exec::git::toplevel(start);
        let in_git = top.is_some();
        let root = top.unwrap_or_else(|| start.to_path_buf());
        Workspace {
            dir: root.join(".agentloop"),
            root,
            in_git,
        }
    }

    pub fn at(root: &Path) -> Workspace {
        Workspace {
            root: root.to_path_buf(),
            dir: root.join(".agentloop"),
            in_git: false,
        }
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }

    /// Run `id` of a shared store (`[store] url`), kept here as a copy: its directory
    /// and journal file (empty until a writer copies the records in), registered for
    /// this machine's server.
    pub fn copy_of_shared(&self, id: &str) -> Result<RunDir, WorkspaceError> {
        if !valid_run_id(id) {
            return Err(WorkspaceError::BadRunId(id.to_string()));
        }
        let run = RunDir {
            id: id.to_string(),
            path: self.runs_dir().join(id),
        };
        if !run.journal().exists() {
            std::fs::create_dir_all(run.path.join("iterations")).map_err(io(&run.path))?;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(run.journal())
                .map_err(io(&run.path))?;
            let _ = registry::register(&run);
        }
        Ok(run)
    }

    /// Run ids, oldest first (ids sort by creation time).
    pub fn run_ids(&self) -> Vec<String> {
        // A store keeps the records of a run whose file here is still empty (a copy
        // starts empty); without one, an empty journal is a run whose creation was
        // cut short before its first record: it was never made.
        let store = agentloop_journal::shared::installed().is_some();
        let mut ids: Vec<String> = std::fs::read_dir(self.runs_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                std::fs::metadata(e.path().join("journal.jsonl"))
                    .is_ok_and(|m| store || m.len() > 0)
            })
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        ids.sort();
        ids
    }

    /// Directories of runs whose creation was cut short (a killed `run`) before their
    /// journal had its first record, and that nothing has touched for `idle`: no run
    /// to resume, only what `gc` removes.
    pub fn unmade_runs(&self, idle: std::time::Duration) -> Vec<PathBuf> {
        if agentloop_journal::shared::installed().is_some() {
            return Vec::new();
        }
        std::fs::read_dir(self.runs_dir())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .filter(|p| std::fs::metadata(p.join("journal.jsonl")).map_or(true, |m| m.len() == 0))
            .filter(|p| {
                std::fs::metadata(p)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age >= idle)
            })
            .collect()
    }

    /// A run by id or unique prefix; the newest run when `run` is `None`.
    pub fn resolve(&self, run: Option<&str>) -> Result<RunDir, WorkspaceError> {
        let ids = self.run_ids();
        let id = match run {
            None => ids
                .last()
                .cloned()
                .ok_or_else(|| WorkspaceError::NoRuns(self.runs_dir()))?,
            Some(want) => {
                if ids.iter().any(|i| i == want) {
                    want.to_string()
                } else {
                    let hits: Vec<&String> = ids
                        .iter()
                        .filter(|i| i.starts_with(want) || i.ends_with(want))
                        .collect();
                    match hits.as_slice() {
                        [] => return Err(WorkspaceError::UnknownRun(want.to_string())),
                        [one] => (*one).clone(),
                        many => {
                            let list = many
                                .iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ");
                            return Err(WorkspaceError::AmbiguousRun(want.to_string(), list));
                        }
                    }
                }
            }
        };
        Ok(RunDir {
            path: self.runs_dir().join(&id),
            id,
        })
    }

    /// Creates a run directory and its journal with the first event.
    pub fn create_run(
        &self,
        plan_file: &Path,
        plan: &Plan,
        settings: Settings,
    ) -> Result<(RunDir, Writer, RunState), WorkspaceError> {
        self.create_run_with_id(None, plan_file, plan, settings)
    }

    /// [`Workspace::create_run`] under an id the caller chose (see [`valid_run_id`]),
    /// which must be new.
    pub fn create_run_with_id(
        &self,
        want: Option<&str>,
        plan_file: &Path,
        plan: &Plan,
        settings: Settings,
    ) -> Result<(RunDir, Writer, RunState), WorkspaceError> {
        std::fs::create_dir_all(self.runs_dir()).map_err(io(&self.dir))?;
        // Git never sees agentloop's own files, whatever the project's .gitignore says.
        let ignore = self.dir.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "*\n").map_err(io(&ignore))?;
        }
        let (id, path) = loop {
            let id = want.map(str::to_string).unwrap_or_else(new_run_id);
            if !valid_run_id(&id) {
                return Err(WorkspaceError::BadRunId(id));
            }
            let path = self.runs_dir().join(&id);
            match std::fs::create_dir(&path) {
                Ok(()) => break (id, path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && want.is_none() => {
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(WorkspaceError::RunExists(id));
                }
                Err(e) => return Err(io(&path)(e)),
            }
        };
        let run = RunDir {
            id: id.clone(),
            path,
        };
        std::fs::create_dir_all(run.path.join("plan")).map_err(io(&run.path))?;
        std::fs::create_dir_all(run.path.join("iterations")).map_err(io(&run.path))?;
        // The tree the test baseline will be taken on: as it is now, before any agent
        // (in hook mode the session may work before the first stop takes it).
        let tree = (agentloop_policy::evidence::baseline_wanted(plan, &settings)
            && settings.clean_copy
            && agentloop_exec::git::is_repo(&self.root))
        .then(|| agentloop_verify::clean_copy::CleanCopy::for_run(&self.root, &id))
        .flatten()
        .and_then(|c| c.tree_now(None).ok());
        let first = Event::RunCreated {
            run_id: id,
            plan_file: plan_file.display().to_string(),
            workdir: self.root.display().to_string(),
            plan: plan.clone(),
            settings,
            head: agentloop_exec::git::head(&self.root),
            tree,
        };
        let (mut writer, rec) = match Writer::create(&run.journal(), &first) {
            Ok(made) => made,
            Err(e) => {
                // Nothing of a run that could not begin (its store refused it).
                let _ = std::fs::remove_dir_all(&run.path);
                return Err(e.into());
            }
        };
        let mut state = RunState::from_first(&rec).map_err(|source| WorkspaceError::Fold {
            path: run.journal(),
            source,
        })?;
        // What decides "done", as it is before any agent ran.
        if let Some(files) = baseline(&self.root, &state) {
            for r in writer.append(&Event::BaselineRecorded { files })? {
                state.apply(&r);
            }
        }
        write_atomic(&run.plan_version(1), plan.to_markdown().as_bytes()).map_err(io(&run.path))?;
        // The machine-wide list of runs, so one server can show them all (best effort:
        // a run works without it).
        let _ = registry::register(&run);
        Ok((run, writer, state))
    }
}

/// The run's verification surface now, when the run judges one (a git work tree,
/// `on_protected_change` other than `allow`).
pub fn baseline(root: &Path, s: &RunState) -> Option<agentloop_journal::Baseline> {
    use agentloop_verify::surface;
    if s.settings.on_protected_change == agentloop_ground::values::OnProtectedChange::Allow
        || !agentloop_exec::git::is_repo(root)
    {
        return None;
    }
    surface::record(root, &s.project(root)).ok()
}

/// Whether `id` can name a run: 1 to 64 ASCII letters, digits, `-`, `_` or `.`, not
/// starting with a dot.
pub fn valid_run_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A run id that sorts by creation time, to the millisecond: `20261122-104259-042-3fa2`.
pub fn new_run_id() -> String {
    let now = SystemTime::now();
    let stamp = humantime::format_rfc3339_millis(now).to_string();
    let digits: String = stamp.chars().filter(|c| c.is_ascii_digit()).collect();
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let salt = (nanos ^ std::process::id().rotate_left(16)) & 0xffff;
    format!(
        "{}-{}-{}-{salt:04x}",
        &digits[..8],
        &digits[8..14],
        &digits[14..17]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_config::Config;
    use agentloop_journal::Request;

    #[test]
    fn the_state_cache_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let plan = Plan::parse("PLAN.md", "# P\n\n## T1: a\nVerify: true\n").unwrap();
        let (run, mut w, mut state) = ws
            .create_run(
                Path::new("PLAN.md"),
                &plan,
                Settings::from_config(&Config::default()),
            )
            .unwrap();
        for r in w
            .append(&Event::Control {
                id: "x".into(),
                source: "t".into(),
                request: Request::Pause,
                by: None,
            })
            .unwrap()
        {
            state.apply(&r);
        }
        state.journal_bytes = w.offset();
        run.write_derived(&state).unwrap();
        let text = std::fs::read_to_string(run.state_file()).unwrap();
        let back: Result<RunState, _> = serde_json::from_str(&text);
        assert!(back.is_ok(), "{:?}", back.err());
        let loaded = run.load_cached().unwrap();
        assert_eq!(loaded.state.last_seq, 2);
        assert!(loaded.state.paused && loaded.state.has_request("x"));
    }

    /// A cache an older agentloop wrote, without the run's wall clock, is not read: it
    /// would have the clock start at 1970 and spend a time budget at the next record.
    #[test]
    fn a_state_cache_of_the_version_before_the_wall_clock_is_folded_again() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let plan = Plan::parse("PLAN.md", "# P\n\n## T1: a\nVerify: true\n").unwrap();
        let (run, mut w, mut state) = ws
            .create_run(
                Path::new("PLAN.md"),
                &plan,
                Settings::from_config(&Config::default()),
            )
            .unwrap();
        state.journal_bytes = w.offset();
        let mut old = serde_json::to_value(&state).unwrap();
        old["v"] = 5.into();
        old.as_object_mut().unwrap().remove("wall_ms");
        old.as_object_mut().unwrap().remove("last_ms");
        let bytes = serde_json::to_vec(&old).unwrap();
        std::fs::write(run.state_file(), &bytes).unwrap();
        std::fs::write(
            run.state_seal_file(),
            agentloop_journal::seal(&bytes).unwrap(),
        )
        .unwrap();
        w.append(&Event::Control {
            id: "x".into(),
            source: "t".into(),
            request: Request::Steer { note: "n".into() },
            by: None,
        })
        .unwrap();
        let loaded = run.load_cached().unwrap();
        assert!(loaded.state.has_request("x"));
        assert!(
            loaded.state.wall_ms < 60_000,
            "the wall clock from the journal: {} ms",
            loaded.state.wall_ms
        );
    }

    #[test]
    fn a_request_judged_on_a_running_run_is_not_written_once_it_completed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let plan = Plan::parse("PLAN.md", "# P\n\n## T1: a\nVerify: true\n").unwrap();
        let settings = Settings::from_config(&Config::default());
        let (run, mut driver, _) = ws
            .create_run(Path::new("PLAN.md"), &plan, settings)
            .unwrap();
        // The request's process read the run while it was running…
        let loaded = run.load_cached().unwrap();
        assert!(!loaded.state.is_finished());
        // …and its driver ended it before the request was written.
        driver
            .append(&Event::RunFinished {
                status: agentloop_journal::RunStatus::Completed,
                reason: agentloop_journal::FinishReason::Completed,
            })
            .unwrap();
        let before = std::fs::read(run.journal()).unwrap();
        let steer = Request::Steer {
            note: "late".into(),
        };
        let e = run
            .append_control(loaded, "n1".into(), "cli", steer)
            .unwrap_err();
        assert!(matches!(e, WorkspaceError::CompletedMeanwhile(_)), "{e}");
        assert_eq!(
            std::fs::read(run.journal()).unwrap(),
            before,
            "nothing written"
        );
        // A request on a run that is not over still goes in after what came first.
        let (run2, mut d2, _) = ws
            .create_run(
                Path::new("PLAN.md"),
                &plan,
                Settings::from_config(&Config::default()),
            )
            .unwrap();
        let loaded = run2.load_cached().unwrap();
        d2.append(&Event::Control {
            id: "p".into(),
            source: "t".into(),
            request: Request::Pause,
            by: None,
        })
        .unwrap();
        let steer = Request::Steer {
            note: "in time".into(),
        };
        let (rec, state) = run2
            .append_control(loaded, "n2".into(), "cli", steer)
            .unwrap();
        assert_eq!(rec.seq, 3);
        assert!(state.paused && state.has_request("n2"));
    }
}
