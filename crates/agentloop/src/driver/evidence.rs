//! Per-test evidence at work in the driver: the test baseline taken before the first
//! iteration (every check once, on the clean copy of the tree as no agent has touched
//! it, or from agentloop's sealed cache for that tree), and what each verification must
//! show against it.

use std::time::Instant;

use agentloop_core::evidence::Expected;
use agentloop_core::exec::clean_copy::CleanCopy;
use agentloop_core::exec::verify::{self, BaselineCache};
use agentloop_core::journal::Event;
use agentloop_core::policy::evidence::{self, Place};

use super::Driver;
use crate::error::CliError;

impl Driver {
    /// Takes the run's test baseline and records it (`tests_baseline`); stopped
    /// half-way, it records nothing and is taken again.
    pub(crate) fn test_baseline(&mut self) -> Result<(), CliError> {
        let commands = evidence::baseline_commands(&self.state);
        let (dir, tree) = self.baseline_copy();
        let cache = tree
            .as_deref()
            .and_then(|t| BaselineCache::at(t, &commands).map(|c| (t.to_string(), c)));
        if let Some((t, c)) = &cache
            && let Some(mut b) = c.load(t, &commands)
        {
            b.cached = true;
            self.progress.note(&format!(
                "test baseline (cached for this tree): {}",
                b.words()
            ));
            self.warn_unmatched(&b);
            return self.record(Event::TestsBaseline(b));
        }
        self.progress.note(&format!(
            "taking the test baseline: {} on the tree before any agent works",
            agentloop_core::words::plural(commands.len(), "check", "checks")
        ));
        let log = self.run.path.join("baseline.log");
        let reports =
            verify::reports_dir(&self.run.id, 0).unwrap_or_else(|| self.run.path.join("reports/0"));
        let runner = verify::Runner {
            workdir: &dir,
            timeout: self.config.verify.timeout,
            output_cap: self.config.verify.output_cap,
            log: &log,
            wrap: self.check_wrap(&dir, &reports),
            tests: None,
        };
        let mut last = Instant::now();
        let taken = runner
            .baseline(&reports, &commands, tree.clone(), || {
                self.should_stop(&mut last)
            })
            .map_err(|e| CliError::internal(format!("cannot take the test baseline: {e}")))?;
        let Some(baseline) = taken else {
            return Ok(());
        };
        if self.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        let redactor = self.redactor(&self.state.settings.agent.clone());
        redactor.scrub_file(&log)?;
        if let Some((t, c)) = &cache {
            c.save(t, &commands, &baseline);
        }
        self.progress
            .note(&format!("test baseline: {}", baseline.words()));
        self.warn_unmatched(&baseline);
        self.record(Event::TestsBaseline(baseline))
    }

    /// A task's name that matches no test the checks reported: said now, not first
    /// when the task is judged.
    fn warn_unmatched(&self, baseline: &agentloop_core::evidence::TestsBaseline) {
        use agentloop_core::evidence::names::{NameCheck, check_names};
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

    /// Where the baseline is taken, and the tree there: the clean copy brought to the
    /// tree the run was created on (what an agent did since is not in it), else to the
    /// tree as it is now (a run from before it was recorded), else the project.
    fn baseline_copy(&mut self) -> (std::path::PathBuf, Option<String>) {
        let carry = self.state.settings.carry.clone();
        if let Some(tree) = self.state.tree_at_create.clone()
            && let Some(copy) = CleanCopy::for_run(&self.ws.root, &self.run.id)
        {
            match copy.refresh_to(&tree, &carry) {
                Ok(_) => return (copy.dir, Some(tree)),
                Err(e) => self.progress.warn(&format!(
                    "cannot check out the tree the run was created on ({e}); the test baseline is taken on the tree as it is"
                )),
            }
        }
        let (dir, commit) = self.verify_copy();
        let tree = commit.and_then(|c| verify::tree_of(&self.ws.root, &c));
        (dir, tree)
    }

    /// What a verification of `task` at `place` must show, and where its reports go;
    /// `None`: exit codes alone decide (a run from before per-test evidence).
    pub(crate) fn expected(&self, task: Option<&str>, place: Place) -> Option<Expected> {
        evidence::expected(&self.state, task, place)
    }

    /// agentloop's directory for iteration `iteration`'s reports (0: validation).
    pub(crate) fn reports_dir(&self, iteration: u32) -> std::path::PathBuf {
        verify::reports_dir(&self.run.id, iteration)
            .unwrap_or_else(|| self.run.path.join("reports").join(iteration.to_string()))
    }
}
