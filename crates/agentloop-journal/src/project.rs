//! The project model of a run: its settings and its plan as they stand now.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use agentloop_plan::Mode;
use agentloop_project::{Admission, Allowed, Project};

use crate::state::RunState;
use crate::task::TaskStatus;

impl RunState {
    /// The project at `root` as this run's checks see it, with what their interpreters
    /// showed at the test baseline.
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
        let modules = self
            .tests_baseline
            .as_ref()
            .map(|b| b.would_load.modules.clone())
            .unwrap_or_default();
        Project::from_names(
            root,
            &self.settings.protected,
            &plan_file,
            commands,
            &self.settings.check_files,
        )
        .knowing(modules)
    }

    /// Which of the files an agent added reach the judge's copy at `root` (see
    /// `agentloop_project::admit`), for a verification of the work of `tasks` and of
    /// every task done before; `created`: the files of the tree the run was created on. None
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
        let allowed = self.allowed(root, tasks, &created);
        Some(Admission::new(
            self.project(root),
            created,
            surface,
            would_load,
            self.settings.test_patterns.clone(),
            allowed,
        ))
    }

    /// What the work of `tasks` may add that the checks load, and what the tasks done
    /// before had let in (`TaskState::admitted`: the files their last verification
    /// took in, by name, and nothing more — a done task's `mode: tdd` lets in no
    /// later task's tests). `created`: the files of the tree the run was created on.
    ///
    /// A task writes tests when it is in `tdd` mode, names a test that is `(new)` or
    /// that no check reported at the baseline, or names in its `Verify:` or its
    /// `Tests:` a file or directory the tree did not hold (`tests/test_div.py`, `go
    /// test ./strutil/`, `cargo test --test pairs`, `example.com/m/strutil::TestX`):
    /// then every test file it adds reaches the checks (a helper beside the test, a
    /// package's `__init__.py`, a fixture), and what it named, and its `Scope:`. All
    /// of it read from the task as a person wrote it ([`RunState::as_written`]), not as
    /// an agent's REPLAN rewrote it.
    pub fn allowed(&self, root: &Path, tasks: &[&str], created: &BTreeSet<String>) -> Allowed {
        let mut allowed = Allowed::default();
        for t in self.tasks.iter().filter(|t| t.status == TaskStatus::Done) {
            allowed.files.extend(t.admitted.iter().cloned());
        }
        let is_new = |p: &str| {
            let dir = format!("{p}/");
            !created.contains(p)
                && !created
                    .range(dir.clone()..)
                    .next()
                    .is_some_and(|f| f.starts_with(&dir))
        };
        // The module `go.mod` declares, for Go's test ids (`example.com/m/pkg::TestX`).
        let go_module = agentloop_project::collected::go_module(root);
        let collected = self
            .tests_baseline
            .as_ref()
            .map(|b| b.all_tests())
            .unwrap_or_default();
        // Each task as a person wrote it: an agent's REPLAN grants itself nothing.
        for id in tasks {
            let Some(t) = self.as_written(id) else {
                continue;
            };
            if self.written_mode_of(id) == Mode::Tdd {
                allowed.tests = true;
            }
            let mut named: Vec<String> = Vec::new();
            let checked = agentloop_evidence::names::check_names(&t.tests, &collected);
            for (name, check) in t.tests.iter().zip(checked) {
                if name.new || check == agentloop_evidence::names::NameCheck::Unmatched {
                    allowed.tests = true;
                }
                if let Some((file, _)) = name.pattern.split_once("::")
                    && !file.contains('*')
                {
                    named.push(file.to_string());
                }
            }
            for cmd in self.plan.checks_of(Some(t)) {
                let words: Vec<&str> = cmd.split_whitespace().collect();
                for (i, word) in words.iter().enumerate() {
                    let word = word.trim_matches(|c| c == '"' || c == '\'');
                    if i > 0 && words[i - 1] == "--test" {
                        named.push(format!("tests/{word}.rs"));
                        named.push(format!("tests/{word}"));
                    } else if !word.starts_with(['-', '/', '$']) && word.contains('/') {
                        named.push(word.split("::").next().unwrap_or(word).to_string());
                    }
                }
            }
            for path in named {
                // `./...` (Go's every package) names no path: `/...` goes first, then
                // `./` (the other way round it left `...`, a "new" path that let every
                // test file the agent added reach the judge: the stop-78 attack).
                let path = path.trim_end_matches("/...").trim_start_matches("./");
                if path
                    .split('/')
                    .any(|c| matches!(c, "" | "." | ".." | "..."))
                {
                    continue;
                }
                // A Go package by its import path is its directory.
                let path = match go_module.as_deref().and_then(|m| path.strip_prefix(m)) {
                    Some(rest) => rest.trim_start_matches('/'),
                    None => path,
                };
                let path = path.trim_end_matches('/');
                if path.is_empty() || !is_new(path) {
                    continue;
                }
                allowed.tests = true;
                allowed.files.insert(path.to_string());
                allowed.scope.push(format!("{path}/"));
            }
            allowed.scope.extend(t.scope.iter().cloned());
        }
        allowed
    }
}
