//! Per-test evidence at work in the driver: the test baseline taken before the first
//! iteration (every check once, on the clean copy of the tree as no agent has touched
//! it, or from agentloop's sealed cache for that tree), and what each verification must
//! show against it.

use std::time::Instant;

use agentloop_evidence::Expected;
use agentloop_journal::Event;
use agentloop_policy::evidence::{self, Place};
use agentloop_verify::clean_copy::CleanCopy;
use agentloop_verify::surface;
use agentloop_verify::verify::{self, BaselineCache};

use super::Driver;
use crate::error::CliError;

impl Driver {
    /// Takes the run's test baseline (or finds it in agentloop's cache for the tree)
    /// and records it (`tests_baseline`); stopped half-way, it records nothing and is
    /// taken again.
    pub(crate) fn test_baseline(&mut self) -> Result<(), CliError> {
        let commands = evidence::baseline_commands(&self.state);
        let tree = self.baseline_tree();
        let log = self.run.path.join("baseline.log");
        // The tree's files, listed once: what the checks are traced on and what their
        // reads are looked up in.
        let files = tree
            .as_deref()
            .and_then(|t| surface::tree_files(&self.ws.root, t).ok());
        // Traced where it runs in a clean copy (`take_baseline`).
        let traced = files.is_some() && CleanCopy::for_run(&self.ws.root, &self.run.id).is_some();
        let taken = BaselineCache::cached_or(tree.as_deref(), &commands, traced, || {
            self.take_baseline(&commands, tree.as_deref(), files.as_ref(), &log)
        })
        .map_err(|e| CliError::internal(format!("cannot take the test baseline: {e}")))?;
        // The copy held the baseline's tree, not the agent's.
        self.forget_copy();
        let Some(mut baseline) = taken else {
            return Ok(());
        };
        if self.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        self.follow_reads(&mut baseline, files.as_ref());
        if baseline.cached {
            self.progress.note(&format!(
                "test baseline (cached for this tree): {}",
                baseline.words()
            ));
        } else {
            let redactor = self.redactor(&self.state.settings.agent.clone());
            redactor.scrub_check_log(&log)?;
            self.progress
                .note(&format!("test baseline: {}", baseline.words()));
        }
        if self.state.settings.clean_copy
            && let Some(why) = baseline.commands.iter().find_map(|c| {
                agentloop_project::did_not_start(
                    &c.command,
                    c.exit_code,
                    c.problem.is_some(),
                    &self.ws.root,
                    &self.state.settings.carry,
                )
            })
        {
            self.progress.warn(&why);
        }
        if self.state.settings.clean_copy {
            for leak in agentloop_project::hermetic::leaks(&self.ws.root) {
                self.progress.warn(&format!(
                    "the checks would read your working tree, not the tree judged: {}: {}",
                    leak.what, leak.fix
                ));
            }
        }
        self.warn_unmatched(&baseline);
        self.record(Event::TestsBaseline(baseline))
    }

    /// What the checks read at the baseline that decides them joins the surface (see
    /// `surface::traced`); said when the trace may have missed files.
    fn follow_reads(
        &mut self,
        baseline: &mut agentloop_evidence::TestsBaseline,
        files: Option<&surface::TreeFiles>,
    ) {
        let (Some(files), Some(base)) = (files, &self.state.baseline) else {
            return;
        };
        let base = base.clone();
        let tasks: Vec<surface::TaskFiles> = self
            .state
            .plan
            .tasks
            .iter()
            .map(|t| surface::TaskFiles {
                scope: t.scope.clone(),
                text: std::iter::once(t.title.as_str())
                    .chain(std::iter::once(t.body.as_str()))
                    .chain(t.acceptance.iter().map(|c| c.text.as_str()))
                    .collect::<Vec<_>>()
                    .join("\n"),
            })
            .collect();
        let harness = surface::harness_of(&self.ws.root, baseline, files);
        // A file a task's words or its `Tests:` name stays a test, whatever the trace.
        let words: Vec<String> = self
            .state
            .plan
            .tasks
            .iter()
            .zip(&tasks)
            .map(|(t, f)| {
                let tests = t.tests.iter().map(|n| n.pattern.as_str());
                std::iter::once(f.text.as_str())
                    .chain(tests)
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect();
        baseline.model = surface::learn(&self.ws.root, baseline, files, &harness, &words);
        baseline.would_load = surface::would_load(&self.ws.root, baseline, files, &harness, &tasks);
        baseline.traced = surface::traced(&self.ws.root, baseline, files, &harness, &base, &tasks);
        if let Some(why) = &baseline.trace_incomplete {
            self.progress.warn(&format!(
                "what the checks read was traced in part ({why}): a script they call may be missing from the verification surface"
            ));
        }
        for (path, f) in &baseline.traced {
            self.progress
                .note(&format!("verification surface: {path} ({})", f.why));
        }
        // Named, up to a handful; past that, counted (`status --json` lists them).
        let not_tests = &baseline.model.not_tests;
        let shown: Vec<&str> = not_tests.iter().take(5).map(String::as_str).collect();
        if !shown.is_empty() {
            let more = not_tests.len() - shown.len();
            self.progress.note(&format!(
                "not held as tests: {}{} ({})",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                },
                agentloop_evidence::learned::NOT_A_TEST
            ));
        }
    }

    /// The tree the baseline is taken on: the one the run was created on (what an
    /// agent did since is not in it), else the tree as it is now (a run from before it
    /// was recorded); none outside git or without clean copies.
    fn baseline_tree(&self) -> Option<String> {
        let s = &self.state;
        s.tree_at_create.clone().or_else(|| {
            (s.settings.clean_copy && self.snapshots.is_some())
                .then(|| CleanCopy::for_run(&self.ws.root, &self.run.id))
                .flatten()
                .and_then(|c| c.tree_now(s.baseline.as_ref()).ok())
        })
    }

    /// Every check once, to its end, on `tree` checked out in the clean copy (else in
    /// the project).
    fn take_baseline(
        &mut self,
        commands: &[String],
        tree: Option<&str>,
        files: Option<&surface::TreeFiles>,
        log: &std::path::Path,
    ) -> std::io::Result<Option<agentloop_evidence::TestsBaseline>> {
        self.progress.note(&format!(
            "taking the test baseline: {} on the tree before any agent works",
            agentloop_ground::words::plural(commands.len(), "check", "checks")
        ));
        let carry = self.state.settings.carry.clone();
        let copy = CleanCopy::for_run(&self.ws.root, &self.run.id);
        let dir = match (tree, &copy) {
            (Some(t), Some(c)) => match c.refresh_to(t, &carry) {
                Ok(out) => {
                    if let Some(words) =
                        agentloop_verify::clean_copy::lfs_missing_words(&out.lfs_missing)
                    {
                        self.progress.warn(&words);
                    }
                    c.dir.clone()
                }
                Err(e) => {
                    self.progress.warn(&format!(
                        "cannot check out the tree the run was created on ({e}); the test baseline is taken in the project"
                    ));
                    self.ws.root.clone()
                }
            },
            _ => self.ws.root.clone(),
        };
        let reports = self.reports_dir(0);
        // What each check opens is traced on the clean copy of the tree.
        let traced: Vec<String> = match files {
            Some(f) if dir != self.ws.root => f.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let runner = verify::Runner {
            workdir: &dir,
            timeout: self.config.verify.timeout,
            output_cap: self.config.verify.output_cap,
            jobs: self.config.verify.jobs_for(1),
            log,
            wrap: self.baseline_wrap(&dir, &reports),
            // What the baseline's checks compile in the clean copy of the tree the
            // run was created on (no agent's work in it) is kept for later checks.
            bytecode: if dir != self.ws.root
                && tree.is_some()
                && tree == self.state.tree_at_create.as_deref()
            {
                self.bytecode(true)
            } else {
                Default::default()
            },
            tests: None,
        };
        let mut last = Instant::now();
        runner.baseline(
            &reports,
            commands,
            tree.map(str::to_string),
            &traced,
            || self.should_stop(&mut last),
        )
    }

    /// A task's name that matches no test the checks reported: said now, not first
    /// when the task is judged.
    fn warn_unmatched(&self, baseline: &agentloop_evidence::TestsBaseline) {
        use agentloop_evidence::names::{NameCheck, check_names};
        let collected = baseline.all_tests();
        for t in &self.state.plan.tasks {
            for (name, check) in t.tests.iter().zip(check_names(&t.tests, &collected)) {
                if check == NameCheck::Unmatched {
                    self.progress.warn(&format!(
                        "task {}: `{}` matches no test the checks reported at the baseline; the task is done only once it runs and passes",
                        t.id, name.pattern
                    ));
                }
            }
        }
    }

    /// What a verification of `task` at `place` must show, and where its reports go;
    /// `None`: exit codes alone decide (a run from before per-test evidence).
    pub(crate) fn expected(&self, task: Option<&str>, place: Place) -> Option<Expected> {
        evidence::expected(&self.state, task, place)
    }

    /// The held-out checks of `task`'s verification in `iteration`, if it names any.
    pub(crate) fn held_out(&self, task: &str, iteration: u32) -> Option<verify::HeldOut> {
        self.held_out_as(
            task,
            format!("{iteration:04}.log"),
            self.reports_dir(iteration).join("held-out"),
        )
        .filter(|h| !h.names.is_empty())
    }

    /// The held-out checks the merged result of `task`'s work in `iteration` must
    /// pass: its own, and (added with its batch) those of every task landed before,
    /// when the run has a held-out directory. Logged apart from its own check's.
    pub(crate) fn merge_held_out(&self, task: &str, iteration: u32) -> Option<verify::HeldOut> {
        self.held_out_as(
            task,
            format!("{iteration:04}-merge.log"),
            self.reports_dir(iteration).join("merge").join("held-out"),
        )
    }

    /// `task`'s held-out checks (perhaps none), logged in `log` among the held-out
    /// logs, their reports in `reports`; none when the run has no held-out directory.
    fn held_out_as(
        &self,
        task: &str,
        log: String,
        reports: std::path::PathBuf,
    ) -> Option<verify::HeldOut> {
        let dir = self.ws.root.join(self.state.settings.holdout.as_ref()?);
        let names = self
            .state
            .plan_task(task)
            .map(|t| t.holdout.clone())
            .unwrap_or_default();
        Some(verify::HeldOut {
            dir,
            names,
            log: self.held_out_logs().join(log),
            reports,
        })
    }

    /// Where the held-out checks' output goes: where a sandboxed agent cannot look
    /// (agentloop's state).
    pub(crate) fn held_out_logs(&self) -> std::path::PathBuf {
        agentloop_ground::fsutil::state_dir()
            .unwrap_or_else(|| self.run.path.join("held-out"))
            .join("held-out")
            .join(&self.run.id)
    }

    /// agentloop's directory for iteration `iteration`'s reports (0: validation).
    pub(crate) fn reports_dir(&self, iteration: u32) -> std::path::PathBuf {
        verify::reports_dir(&self.run.id, iteration)
            .unwrap_or_else(|| self.run.path.join("reports").join(iteration.to_string()))
    }
}
