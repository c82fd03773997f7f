//! The project model of a run: its settings and its plan as they stand now.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use agentloop_plan::Mode;
use agentloop_project::{Admission, Allowed, Project};

use crate::state::RunState;
use crate::task::TaskStatus;

impl RunState {
    /// The project at `root` as this run's checks see it.
    pub fn project(&self, root: &Path) -> Project {
        let plan_file = Path::new(&self.plan_file);
        let plan_file = plan_file
            .strip_prefix(root)
            .unwrap_or(plan_file)
            .to_string_lossy()
            .into_owned();
        let commands = self
            .plan
            .tasks
            .iter()
            .flat_map(|t| self.plan.checks_of(Some(t)))
            .chain(self.settings.verify_commands.iter().cloned())
            .collect();
        Project::from_names(
            root,
            &self.settings.protected,
            &plan_file,
            commands,
            &self.settings.check_files,
        )
    }

    /// Which of the files an agent added reach the judge's copy at `root` (see
    /// `agentloop_project::admit`), for a verification of the work of every done task
    /// and of `tasks`; `created`: the files of the tree the run was created on. None
    /// where the run keeps no baseline (`on_protected_change = "allow"`, no git): the
    /// surface is not judged there, and neither is what was added.
    pub fn admission(
        &self,
        root: &Path,
        created: Arc<BTreeSet<String>>,
        tasks: &[&str],
    ) -> Option<Admission> {
        let surface: BTreeSet<String> = self.baseline.as_ref()?.keys().cloned().collect();
        let would_load = self
            .tests_baseline
            .as_ref()
            .map(|b| b.would_load.clone())
            .unwrap_or_default();
        Some(Admission::new(
            self.project(root),
            created,
            surface,
            would_load,
            self.settings.test_patterns.clone(),
            self.allowed(tasks),
        ))
    }

    /// What the work of every done task and of `tasks` may add that the checks load:
    /// the tests a task writes (`mode = tdd`, the file of a `Tests:` name, a `(new)`
    /// name or one no test matched at the baseline, a test file its check names) and
    /// its `Scope:`.
    pub fn allowed(&self, tasks: &[&str]) -> Allowed {
        let mut allowed = Allowed::default();
        let ids = self
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Done)
            .map(|t| t.id.as_str())
            .chain(tasks.iter().copied());
        for id in ids {
            let Some(t) = self.plan_task(id) else {
                continue;
            };
            if self.mode_of(id) == Mode::Tdd {
                allowed.tests = true;
            }
            // A name's own file is the task's (one that was there is not the agent's
            // anyway: only a file the task creates is let in by it); a name with no
            // file that is new, or matched no test at the baseline, is a test the task
            // writes somewhere.
            let collected = self
                .tests_baseline
                .as_ref()
                .map(|b| b.all_tests())
                .unwrap_or_default();
            let checked = agentloop_evidence::names::check_names(&t.tests, &collected);
            for (name, check) in t.tests.iter().zip(checked) {
                match name.pattern.split_once("::") {
                    Some((file, _)) if file.contains(['/', '.']) && !file.contains('*') => {
                        allowed
                            .files
                            .insert(file.trim_start_matches("./").to_string());
                    }
                    _ if name.new || check == agentloop_evidence::names::NameCheck::Unmatched => {
                        allowed.tests = true
                    }
                    _ => {}
                }
            }
            for cmd in self.plan.checks_of(Some(t)) {
                for word in cmd.split_whitespace() {
                    let word = word
                        .trim_matches(|c| c == '"' || c == '\'')
                        .trim_start_matches("./");
                    let file = word.split("::").next().unwrap_or(word);
                    if !file.starts_with(['-', '/', '$'])
                        && file.contains('/')
                        && agentloop_project::is_test_file(file)
                    {
                        allowed.files.insert(file.to_string());
                    }
                }
            }
            allowed.scope.extend(t.scope.iter().cloned());
        }
        allowed
    }
}
