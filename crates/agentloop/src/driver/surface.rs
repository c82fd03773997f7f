//! The verification surface at work in the driver: the baseline a run judges against
//! (recorded when it is missing), the check before a claimed task is verified, putting
//! the baseline back, and the clean copy the checks run in.

use agentloop_exec::git;
use agentloop_ground::values::OnProtectedChange;
use agentloop_journal::*;
use agentloop_project::Project;
use agentloop_resident::Resident;
use agentloop_verify::clean_copy::{CleanCopy, Judge, KeptCopy, Prepared};
use agentloop_verify::surface;

use super::Driver;
use crate::error::CliError;

impl Driver {
    /// A run from before baselines (or whose baseline could not be taken) gets one now;
    /// if it cannot, the run goes on judging only each iteration's diff, and says so.
    pub(crate) fn ensure_baseline(&mut self) -> Result<(), CliError> {
        let s = &self.state;
        if s.baseline.is_some()
            || s.settings.on_protected_change == OnProtectedChange::Allow
            || !agentloop_exec::git::is_repo(&self.ws.root)
        {
            return Ok(());
        }
        match surface::record(&self.ws.root, &s.project(&self.ws.root)) {
            Ok(files) => self.record(Event::BaselineRecorded { files }),
            Err(e) => {
                self.progress.warn(&format!(
                    "cannot record the verification surface ({e}): only each iteration's own changes are checked"
                ));
                Ok(())
            }
        }
    }

    /// A plan that grew (planners) names files the first baseline did not hold: they
    /// join it at their version in the tree the run was created on. Looked at once per
    /// plan version and driver.
    fn grow_surface(&mut self) -> Result<(), CliError> {
        if self.surface_plan_version == self.state.plan_version {
            return Ok(());
        }
        self.surface_plan_version = self.state.plan_version;
        let (Some(base), Some(tree)) = (&self.state.baseline, &self.state.tree_at_create) else {
            return Ok(());
        };
        if self.state.planning.added.is_empty() {
            return Ok(());
        }
        let project = self.state.project(&self.ws.root);
        let not_tests = self
            .state
            .tests_baseline
            .as_ref()
            .map(|b| b.model.not_tests.clone())
            .unwrap_or_default();
        match surface::grow(&self.ws.root, base, tree, &project, &not_tests) {
            Ok(Some(files)) => self.record(Event::BaselineRecorded { files }),
            Ok(None) => Ok(()),
            Err(e) => Err(cannot_check(e)),
        }
    }

    /// Compares the surface with the baseline and records what differs.
    pub(crate) fn check_surface(&mut self, iteration: u32) -> Result<(), CliError> {
        self.grow_surface()?;
        let Some(base) = self.state.baseline.clone() else {
            return Ok(());
        };
        let dir = self.workdir(iteration);
        let project = self.state.project(&dir);
        let mut changes = if dir == self.ws.root {
            self.check_project_surface(&base, &project)?
        } else {
            surface::check(&dir, &base, &project).map_err(cannot_check)?
        };
        let redactor = self.iteration_redactor(iteration);
        for c in &mut changes {
            c.diff = redactor.redact(&c.diff).into_owned();
        }
        self.record(Event::SurfaceChecked { iteration, changes })
    }

    /// The project's surface against the baseline: nothing changed if the stamp of the
    /// last full check still holds for the tree as the iteration's end saw it (no git
    /// process), else the full check, stamped again when it finds nothing. A hook-mode
    /// run asks its resident, which remembers more than one hook process can.
    fn check_project_surface(
        &mut self,
        base: &Baseline,
        rules: &Project,
    ) -> Result<Vec<SurfaceChange>, CliError> {
        let root = self.ws.root.clone();
        let now = match self.seen.clone() {
            Some(seen) => Some(seen),
            None => self.snapshot_of(&root, false),
        };
        self.reach_resident();
        if let (Some(now), Some(resident)) = (&now, self.resident.as_mut()) {
            match resident.surface(self.state.last_seq, now) {
                Ok(checked) => return Ok(self.checked(checked)),
                Err(why) => self.resident_gone(&why),
            }
        }
        // A driver of its own tree watches each surface file itself.
        let watch = self.watched.is_some();
        let checked = self
            .remembered
            .check(&root, base, rules, now.as_ref(), watch)
            .map_err(cannot_check)?;
        Ok(self.checked(checked))
    }

    fn checked(&mut self, checked: surface::Checked) -> Vec<SurfaceChange> {
        if let Some(w) = checked.warning {
            self.progress.warn(&w);
        }
        checked.changes
    }

    /// Puts the baseline versions of the open iteration's surface changes back in the
    /// working tree.
    pub(crate) fn restore_surface(
        &mut self,
        iteration: u32,
        cause: RestoreCause,
    ) -> Result<(), CliError> {
        let changes = self
            .state
            .open_iteration(iteration)
            .and_then(|o| o.surface.as_ref())
            .map(|c| c.changes.clone())
            .unwrap_or_default();
        surface::restore(&self.workdir(iteration), &changes)
            .map_err(|e| CliError::internal(format!("cannot restore the baseline: {e}")))?;
        self.record(Event::SurfaceRestored { iteration, cause })
    }

    /// Where the checks run: a clean copy of the agent's result brought up to date,
    /// or the project itself (no git, `clean_copy = false`, or the copy failed — said);
    /// with what the copy left out of what the agent added, for a verification of the
    /// work of every done task and of `tasks`.
    pub(crate) fn verify_dir(&mut self, tasks: &[&str]) -> Prepared {
        self.verify_dir_at(self.seen.clone(), tasks)
    }

    /// Which of the files an agent added reach the judge's copy, for a verification
    /// of the work of every done task and of `tasks`; none (said) when the tree the run
    /// was created on cannot be listed.
    pub(crate) fn admission(&self, tasks: &[&str]) -> Option<agentloop_project::Admission> {
        agentloop_verify::clean_copy::admission(&self.state, &self.ws.root, tasks)
            .unwrap_or_else(|e| {
                self.progress.warn(&format!(
                    "cannot list the tree the run was created on ({e}): what the agent added reaches the checks"
                ));
                None
            })
    }

    /// [`verify_dir`](Self::verify_dir) where `seen` is the tree as the claim's full
    /// snapshot saw it, if nothing of agentloop's changed it since.
    pub(crate) fn verify_dir_at(
        &mut self,
        seen: Option<git::Snapshot>,
        tasks: &[&str],
    ) -> Prepared {
        let s = &self.state;
        if !s.settings.clean_copy || self.snapshots.is_none() {
            return Prepared::root(&self.ws.root);
        }
        // A hook-mode run's resident keeps the copy in step for the tree as the claim's
        // full snapshot saw it (nothing of agentloop's changed the tree since).
        if seen.is_some() {
            self.reach_resident();
        }
        if let (Some(now), Some(resident)) = (seen, self.resident.as_mut()) {
            let expected = CleanCopy::for_run(&self.ws.root, &self.run.id).map(|c| c.dir);
            match resident.copy(self.state.last_seq, &now, tasks) {
                // Only the run's own copy: what a resident was started with is not taken
                // on its word.
                Ok(c) if Some(&c.dir) != expected.as_ref() => {
                    if let Some(r) = self.resident.take() {
                        self.progress.warn(&format!(
                            "the run's resident is not asked: it named {} as the copy",
                            c.dir.display()
                        ));
                        r.replace();
                    }
                }
                Ok(c) => {
                    if let Some(w) = c.warning {
                        self.progress.warn(&w);
                    }
                    return Prepared {
                        dir: c.dir,
                        left_out: c.left_out,
                        admitted: c.admitted,
                        unclean: None,
                    };
                }
                Err(why) => self.resident_gone(&why),
            }
        }
        if self.kept_copy.is_none() {
            let Some(copy) = CleanCopy::for_run(&self.ws.root, &self.run.id) else {
                return Prepared::root(&self.ws.root);
            };
            self.kept_copy = Some(KeptCopy::new(copy));
        }
        let admission = self.admission(tasks);
        let s = &self.state;
        // The tree as the iteration's last snapshot saw it (a claim's is a full one): from
        // the watch, with no git process when nothing was touched since.
        let now = self.watched.as_mut().and_then(|w| w.take(false));
        let Some(kept) = self.kept_copy.as_mut() else {
            return Prepared::root(&self.ws.root);
        };
        let judge = Judge {
            overlay: s.baseline.as_ref(),
            admission: admission.as_ref(),
        };
        let mut refreshed = kept.refresh_judged(now.as_ref(), judge, &s.settings.carry);
        if let Err(e) = &refreshed {
            // Made again from nothing once (what an earlier check left in it goes too).
            self.progress.warn(&format!(
                "cannot bring the clean copy up to date ({e}); making it again"
            ));
            kept.start_over();
            refreshed = kept.refresh_judged(None, judge, &s.settings.carry);
        }
        match refreshed {
            Ok(r) => {
                if let Some(w) = r.warning() {
                    self.progress.warn(&w);
                }
                Prepared {
                    dir: kept.copy().dir.clone(),
                    left_out: r.left_out,
                    admitted: r.admitted,
                    unclean: None,
                }
            }
            Err(e) => {
                let why = format!("the clean copy could not be made ({e})");
                self.progress.warn(&format!(
                    "{why}; the checks run in the working tree, and pass nothing there"
                ));
                Prepared {
                    unclean: Some(why),
                    ..Prepared::root(&self.ws.root)
                }
            }
        }
    }

    /// agentloop itself used the run's clean copy otherwise (a baseline's tree checked
    /// out, a reviewer reading): the next refresh takes the full way.
    pub(crate) fn forget_copy(&mut self) {
        if let Some(k) = self.kept_copy.as_mut() {
            k.forget();
        }
        // A hook's resident is told even when this hook has not asked it yet.
        if let Some(r) = self.resident.as_mut() {
            r.forget();
        } else if self.hook_resident
            && let Some(mut r) = Resident::find(&self.run.path, &self.ws.root)
        {
            r.forget();
        }
    }

    /// The resident did not answer as it should: this hook takes the full way, and the
    /// next one asks a new resident.
    fn resident_gone(&mut self, why: &str) {
        if let Some(r) = self.resident.take() {
            if r.impostor() {
                self.progress
                    .warn(&format!("the run's resident is not asked: {why}"));
            }
            if r.broken() {
                r.replace();
            }
        }
    }

    /// A hook-mode run's resident, reached (or started) the first time it is needed.
    fn reach_resident(&mut self) {
        if std::mem::take(&mut self.hook_resident) {
            self.resident = Resident::reach(&self.run.path, &self.ws.root);
            // An answer comes within the hook's own time, or the hook goes on alone.
            if let (Some(r), Some(deadline)) = (self.resident.as_mut(), self.deadline) {
                r.wait_until(deadline);
            }
        }
    }

    /// The run is over: its resident ends.
    pub(crate) fn end_resident(&mut self) {
        self.hook_resident = false;
        if let Some(mut r) = self
            .resident
            .take()
            .or_else(|| Resident::find(&self.run.path, &self.ws.root))
        {
            r.end();
        }
    }

    /// The clean copy a worker's checks of `task` run in (made from its worktree);
    /// `None` where the run has no clean copies.
    pub(crate) fn task_copy(
        &mut self,
        task: &str,
        worktree: &std::path::Path,
    ) -> Option<super::jobs::Copied> {
        let s = &self.state;
        if !s.settings.clean_copy || self.snapshots.is_none() {
            return None;
        }
        let copy = match self.task_copies.remove(task) {
            Some(kept) if kept.copy().root == worktree => kept,
            _ => KeptCopy::new(CleanCopy::for_run(
                worktree,
                &format!("{}-{task}", self.run.id),
            )?),
        };
        let admission = self.admission(&[task]);
        let s = &self.state;
        Some(super::jobs::Copied {
            task: task.to_string(),
            copy,
            overlay: s.baseline.clone(),
            admission,
            carry: s.settings.carry.clone(),
        })
    }

    /// The run is over: its clean copies go (the run's and its tasks'), and the build
    /// caches and the Python bytecode its baseline kept.
    pub(crate) fn remove_clean_copy(&self) {
        if let Some(seed) = self.caches_seed() {
            let _ = std::fs::remove_dir_all(seed);
        }
        if let Some(seed) = self.python_seed() {
            let _ = std::fs::remove_dir_all(agentloop_exec::sandbox::bytecode::stage_of(&seed));
            let _ = std::fs::remove_dir_all(seed);
        }
        if let Some(copy) = CleanCopy::for_run(&self.ws.root, &self.run.id) {
            let prefix = format!("{}-", self.run.id);
            let tasks: Vec<String> = copy
                .dir
                .parent()
                .and_then(|d| std::fs::read_dir(d).ok())
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix) && !n.ends_with(".index"))
                .filter(|n| {
                    ![".caches", ".go-build", ".python", ".python.stage"]
                        .iter()
                        .any(|s| n.ends_with(s))
                })
                .collect();
            for t in tasks {
                if let Some(c) = CleanCopy::for_run(&self.ws.root, &t) {
                    c.remove();
                }
            }
            copy.remove();
        }
    }
}

fn cannot_check(e: String) -> CliError {
    CliError::internal(format!("cannot check the verification surface: {e}"))
}

/// What a person changed while no agent was at work.
impl Driver {
    /// A wait (for a person, a pause, a limit) is over: what changed in the project
    /// while it lasted, before any step of agentloop's ran, is the person's. The files
    /// of the verification surface among it go into the baseline as they are now; the
    /// rest is left alone, said once, never charged to the agent.
    pub(crate) fn waited(&mut self, began: git::Snapshot) -> Result<(), CliError> {
        let root = self.ws.root.clone();
        let Some(now) = self.snapshot_of(&root, false) else {
            return Ok(());
        };
        if now.id == began.id {
            return Ok(());
        }
        let theirs = git::Snapshots::known(&root).changed(&began, &now);
        self.take_persons_surface(&theirs)?;
        self.note_persons(theirs);
        Ok(())
    }

    /// The files of the verification surface among `theirs` (what a person changed
    /// while the run waited) go into the baseline as they are now, recorded: the next
    /// agent is not charged with them, nor are they put back.
    fn take_persons_surface(&mut self, theirs: &[String]) -> Result<(), CliError> {
        let Some(base) = self.state.baseline.clone() else {
            return Ok(());
        };
        let project = self.state.project(&self.ws.root);
        let changes =
            agentloop_verify::surface::check(&self.ws.root, &base, &project).map_err(|e| {
                CliError::internal(format!("cannot check the verification surface: {e}"))
            })?;
        let files: std::collections::BTreeMap<_, _> = changes
            .into_iter()
            .filter(|c| theirs.contains(&c.path))
            .map(|c| (c.path, c.after))
            .collect();
        if files.is_empty() {
            return Ok(());
        }
        self.record(Event::PersonChangedSurface { files })
    }

    /// Paths a person changed while no agent was at work: theirs for the rest of the
    /// run (see `persons`), each said once.
    pub(crate) fn note_persons(&mut self, paths: Vec<String>) {
        let new: Vec<String> = paths
            .into_iter()
            .filter(|p| !p.starts_with(".agentloop") && self.persons.insert(p.clone()))
            .collect();
        if !new.is_empty() {
            let shown: Vec<&str> = new.iter().take(5).map(String::as_str).collect();
            self.progress.warn(&format!(
                "{} changed while no agent was at work: taken as yours, left alone and not charged to the agent{}",
                shown.join(", "),
                if new.len() > 5 {
                    format!(" (and {} more)", new.len() - 5)
                } else {
                    String::new()
                }
            ));
        }
    }
}
