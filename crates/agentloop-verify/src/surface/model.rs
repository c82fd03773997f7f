//! The project model learned at the test baseline (`agentloop_project::learned`), from
//! the baseline's reports and trace and the tree it ran on.

use std::collections::BTreeSet;
use std::path::Path;

use agentloop_evidence::{Outcome, ProjectModel, TestsBaseline};
use agentloop_project::harness::Harness;
use agentloop_project::learned::{self, Check, Tree};

use super::blob;
use super::traced::TreeFiles;

/// What each file `baseline`'s checks touched in `tree` is to them; `tasks`: each
/// task's words (a file they name stays a test).
pub fn learn(
    root: &Path,
    baseline: &TestsBaseline,
    tree: &TreeFiles,
    harness: &Harness,
    tasks: &[String],
) -> ProjectModel {
    let paths: BTreeSet<&str> = tree.keys().map(String::as_str).collect();
    let collected = agentloop_project::collected::of_commands(root, &paths, &baseline.commands);
    let checks: Vec<Check<'_>> = collected
        .iter()
        .map(|(c, files)| Check {
            command: &c.command,
            reported: c.runner.as_deref().filter(|_| c.problem.is_none()),
            errored: c.tests.values().any(|o| *o == Outcome::Errored),
            read: &c.read,
            collected: files,
        })
        .collect();
    let mode = |p: &str| tree.get(p).map(|(m, _)| *m);
    // Each file read once: a check read from another's run opened the same
    // configuration files, and a blob not kept is a git process.
    let read = std::cell::RefCell::new(std::collections::HashMap::new());
    let text = |p: &str| {
        read.borrow_mut()
            .entry(p.to_string())
            .or_insert_with(|| tree.get(p).and_then(|(_, id)| blob(root, id).ok()))
            .clone()
    };
    let view = Tree {
        paths: &paths,
        mode: &mode,
        text: &text,
    };
    learned::learn(
        &checks,
        &harness.runs,
        &view,
        baseline.trace_incomplete.as_deref(),
        tasks,
    )
}
