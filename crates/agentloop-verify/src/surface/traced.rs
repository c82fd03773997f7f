//! The surface followed through indirection: of the files each check opened while the
//! test baseline ran (see `exec::trace`), the ones that decide the check join the
//! surface with their baseline content:
//! - a shell script or makefile a check runs (`tests/check.sh` → `scripts/verify.sh`),
//!   unless it is the work: a task's scope holds it, a task's text names it (its path
//!   or its file name), or it lies under a source directory (`src/`, `lib/`, `bin/`,
//!   `app/`, `pkg/`, `cmd/`, `internal/`) — a shell project's code is shell too;
//! - when every task names its scope (`Scope:`), any file a check read outside all of
//!   them (a helper module the tests import): the plan says the work is elsewhere;
//! - every test file the runner's report says it ran (`agentloop_project::collected`),
//!   whatever its name, unless a task's scope holds it;
//! - every plugin the runner loads by name (the project model's [`Role::Plugin`]:
//!   `pytest_plugins`, `-p`, a Jest setup file), unless a task's scope holds it.
//!
//! [`Role::Plugin`]: agentloop_evidence::Role::Plugin
//!
//! A module the tests import where tasks name no scope is the code under work as far
//! as agentloop can tell, and stays the agent's to change; the reviewer and held-out
//! checks are the defence there.

use std::collections::BTreeMap;
use std::path::Path;

use std::collections::BTreeSet;

use agentloop_evidence::{TestsBaseline, TracedFile, WouldLoad};
use agentloop_ground::paths::path_matches;
use agentloop_journal::Baseline;
use agentloop_project::harness::Harness;

use super::{blob, git, run};

/// A tree's files: path → (mode, blob).
pub type TreeFiles = BTreeMap<String, (u32, String)>;

/// Every file of `tree` (submodules left out).
pub fn tree_files(root: &Path, tree: &str) -> Result<TreeFiles, String> {
    let mut c = git(root);
    c.args(["ls-tree", "-r", "-z", "--full-tree", tree]);
    let out = run(c, None)?;
    let mut files = TreeFiles::new();
    for entry in out.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let mut parts = meta.split(' ');
        let (Some(mode), Some("blob"), Some(id)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(mode) = u32::from_str_radix(mode, 8) else {
            continue;
        };
        files.insert(path.to_string(), (mode, id.to_string()));
    }
    Ok(files)
}

/// What the plan says of one task's files: its `Scope:` and its words (title, body,
/// acceptance), where it names the files it changes.
pub struct TaskFiles {
    pub scope: Vec<String>,
    pub text: String,
}

/// What the checks' harness runs (`agentloop_project::harness`), read from the
/// words of `baseline`'s checks and the scripts of `tree` they run.
pub fn harness_of(root: &Path, baseline: &TestsBaseline, tree: &TreeFiles) -> Harness {
    let commands: Vec<String> = baseline
        .commands
        .iter()
        .map(|c| c.command.clone())
        .collect();
    let paths: BTreeSet<&str> = tree.keys().map(String::as_str).collect();
    agentloop_project::harness::harness(&commands, &paths, |p| {
        tree.get(p).and_then(|(_, id)| blob(root, id).ok())
    })
}

impl TaskFiles {
    /// Whether the task's words name `path`: the path, or its file name when that is
    /// distinctive (`greet.sh`, not `run`).
    fn names(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        self.text.contains(path) || (name.contains('.') && self.text.contains(name))
    }
}

/// Whether what the checks run at `path` is a task's work, not the harness: it lies
/// under a source directory and a task names it — a shell project's tests run its
/// code too (`tests/run.sh` sources `lib/calc.sh`, runs the `src/greet.sh` T1 writes).
fn the_work(path: &str, tasks: &[TaskFiles]) -> bool {
    agentloop_project::in_source_dir(path) && tasks.iter().any(|t| t.names(path))
}

/// What the baseline's checks would load or run that `tree` does not hold yet: what
/// their harness names (`harness`) but what a task names (its to write), and the test
/// names their runners collect by, learned from what they collected; and the Python
/// modules their interpreters took from outside the tree or looked for there.
pub fn would_load(
    root: &Path,
    baseline: &TestsBaseline,
    tree: &TreeFiles,
    harness: &Harness,
    tasks: &[TaskFiles],
) -> WouldLoad {
    let paths: BTreeSet<&str> = tree.keys().map(String::as_str).collect();
    let mut tests = BTreeMap::new();
    for (c, collected) in
        agentloop_project::collected::of_commands(root, &paths, &baseline.commands)
    {
        for pattern in agentloop_project::collected::learned(&paths, &collected) {
            tests
                .entry(pattern)
                .or_insert_with(|| format!("`{}`", c.command));
        }
    }
    let mut modules = agentloop_evidence::Shadowable::default();
    for c in &baseline.commands {
        modules.join(&c.shadowable);
    }
    WouldLoad {
        modules,
        named: harness
            .absent
            .iter()
            // What a task's words name that is not there yet is that task's to write
            // (`greet.sh`, which `tests/run.sh` runs): its work, wherever it goes.
            .filter(|(p, _)| !tasks.iter().any(|t| t.names(p)))
            .map(|(p, by)| (p.clone(), by.clone()))
            .collect(),
        tests,
    }
}

/// The files `baseline`'s checks read or their harness runs that join the surface
/// (`base`: the surface as it is; `tasks`: what every task says of its files).
pub fn traced(
    root: &Path,
    baseline: &TestsBaseline,
    tree: &TreeFiles,
    harness: &Harness,
    base: &Baseline,
    tasks: &[TaskFiles],
) -> BTreeMap<String, TracedFile> {
    let scopes: Vec<&Vec<String>> = tasks.iter().map(|t| &t.scope).collect();
    let all_scoped = !scopes.is_empty() && scopes.iter().all(|s| !s.is_empty());
    let scopes = scopes.into_iter().flatten();
    let named_by_task = |path: &str| tasks.iter().any(|t| t.names(path));
    let mut out = BTreeMap::new();
    // What the harness runs is the harness, wherever it lies, unless a task's scope
    // holds it or it is a task's work (`the_work`).
    for (path, by) in &harness.runs {
        if base.contains_key(path)
            || path.starts_with(".agentloop/")
            || scopes.clone().any(|p| path_matches(path, p))
            || the_work(path, tasks)
        {
            continue;
        }
        if let Some(f) = at_baseline(
            tree,
            path,
            format!("run by {by} (read from the checks' scripts at the test baseline)"),
        ) {
            out.insert(path.clone(), f);
        }
    }
    for c in &baseline.commands {
        for path in &c.read {
            if base.contains_key(path)
                || out.contains_key(path)
                || path.starts_with(".agentloop/")
                || scopes.clone().any(|p| path_matches(path, p))
            {
                continue;
            }
            let Some((mode, id)) = tree.get(path) else {
                continue;
            };
            let named = named_by_task(path);
            let in_source = agentloop_project::in_source_dir(path);
            let why = if !named && !in_source && is_script(root, path, *mode, id) {
                format!(
                    "a script `{}` runs (traced at the test baseline)",
                    c.command
                )
            } else if all_scoped {
                format!(
                    "read by `{}` at the test baseline, outside every task's scope",
                    c.command
                )
            } else {
                continue;
            };
            out.extend(at_baseline(tree, path, why).map(|f| (path.clone(), f)));
        }
    }
    // What the runner's configuration or the check's command loads by name (a pytest
    // plugin, a Jest setup file or module mapping) configures the checks, whatever it
    // is named and wherever it lies: it joins the surface unless a task's scope holds
    // it (the model: `agentloop_project::learned`).
    for (path, f) in &baseline.model.files {
        if f.role != agentloop_evidence::Role::Plugin
            || base.contains_key(path)
            || out.contains_key(path)
            || scopes.clone().any(|p| path_matches(path, p))
        {
            continue;
        }
        let why = format!("a plugin of `{}`: {} at the test baseline", f.by, f.how);
        if let Some(f) = at_baseline(tree, path, why) {
            out.insert(path.clone(), f);
        }
    }
    // What the runner reported running as tests is a test, whatever it is named: it
    // joins the surface unless a task's scope holds it.
    let paths: std::collections::BTreeSet<&str> = tree.keys().map(String::as_str).collect();
    for (c, collected) in
        agentloop_project::collected::of_commands(root, &paths, &baseline.commands)
    {
        for path in collected {
            if base.contains_key(&path)
                || out.contains_key(&path)
                || scopes.clone().any(|p| path_matches(&path, p))
            {
                continue;
            }
            let why = format!("a test `{}` collected at the test baseline", c.command);
            if let Some(f) = at_baseline(tree, &path, why) {
                out.insert(path, f);
            }
        }
    }
    out
}

/// `path` as the surface records it, at its version in the baseline's tree.
fn at_baseline(tree: &TreeFiles, path: &str, why: String) -> Option<TracedFile> {
    let (mode, id) = tree.get(path)?;
    Some(TracedFile {
        blob: id.clone(),
        mode: *mode,
        why,
    })
}

/// A shell script or makefile: by its name, else (executable) by its `#!` line.
fn is_script(root: &Path, path: &str, mode: u32, id: &str) -> bool {
    if agentloop_project::is_script_name(path) {
        return true;
    }
    if mode != 0o100755 {
        return false;
    }
    let Ok(text) = blob(root, id) else {
        return false;
    };
    agentloop_project::runs_a_shell(text.split(|b| *b == b'\n').next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_evidence::BaselineCommand;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let git = |args: &[&str]| {
            let mut c = agentloop_exec::git::git_command(r);
            c.args(args);
            agentloop_exec::git::run_git(c, None).unwrap();
        };
        git(&["init", "-q"]);
        for (p, text, exec) in [
            ("tests/check.sh", "sh scripts/verify.sh\n", false),
            ("scripts/verify.sh", "python3 -m unittest\n", false),
            ("scripts/run", "#!/usr/bin/env bash\nexit 0\n", true),
            ("bin/tool", "#!/usr/bin/env python3\nprint(1)\n", true),
            ("src/greet.sh", "echo hello\n", false),
            ("tools/gen.sh", "echo gen\n", false),
            (
                "helpers/asserts.py",
                "def same(a, b): return a == b\n",
                false,
            ),
            ("src/calc.py", "def add(a, b): return a + b\n", false),
        ] {
            let path = r.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            if exec {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        git(&["add", "-A"]);
        dir
    }

    /// The files of the repository's index, as a tree.
    fn files_of(r: &Path) -> TreeFiles {
        let mut c = agentloop_exec::git::git_command(r);
        c.arg("write-tree");
        let tree = String::from_utf8(agentloop_exec::git::run_git(c, None).unwrap()).unwrap();
        tree_files(r, tree.trim()).unwrap()
    }

    fn baseline(read: &[&str]) -> TestsBaseline {
        TestsBaseline {
            commands: vec![BaselineCommand {
                command: "sh tests/check.sh".into(),
                runner: None,
                exit_code: Some(0),
                problem: None,
                tests: Default::default(),
                read: read.iter().map(|s| s.to_string()).collect(),
                duration_ms: None,
                shadowable: Default::default(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn scripts_a_check_runs_join_and_the_code_under_work_does_not() {
        let dir = repo();
        let r = dir.path();
        let files = files_of(r);
        assert_eq!(files.len(), 8);
        let read = [
            "tests/check.sh",
            "scripts/verify.sh",
            "scripts/run",
            "bin/tool",
            "helpers/asserts.py",
            "src/calc.py",
            "src/greet.sh",
            "tools/gen.sh",
        ];
        let base: Baseline = [(
            "tests/check.sh".to_string(),
            agentloop_journal::SurfaceFile {
                blob: files["tests/check.sh"].1.clone(),
                mode: 0o100644,
                why: "a test file".into(),
            },
        )]
        .into();
        let tasks = |scopes: &[&[&str]]| -> Vec<TaskFiles> {
            scopes
                .iter()
                .map(|s| TaskFiles {
                    scope: s.iter().map(|p| p.to_string()).collect(),
                    text: "Make the generator in `tools/gen.sh` say more".into(),
                })
                .collect()
        };
        // No task names a scope: only the scripts join, not one under a source
        // directory (a shell project's code) nor one a task names.
        let t = traced(
            r,
            &baseline(&read),
            &files,
            &Harness::default(),
            &base,
            &tasks(&[&[]]),
        );
        assert_eq!(
            t.keys().map(String::as_str).collect::<Vec<_>>(),
            ["scripts/run", "scripts/verify.sh"]
        );
        assert_eq!(t["scripts/run"].mode, 0o100755);
        // Every task names its scope: whatever was read outside them joins too.
        let t = traced(
            r,
            &baseline(&read),
            &files,
            &Harness::default(),
            &base,
            &tasks(&[&["src/", "tools/"], &["bin/tool"]]),
        );
        assert_eq!(
            t.keys().map(String::as_str).collect::<Vec<_>>(),
            ["helpers/asserts.py", "scripts/run", "scripts/verify.sh"]
        );
        // A script inside a task's scope is that task's work.
        let t = traced(
            r,
            &baseline(&read),
            &files,
            &Harness::default(),
            &base,
            &tasks(&[&["scripts/"]]),
        );
        assert_eq!(
            t.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "bin/tool",
                "helpers/asserts.py",
                "src/calc.py",
                "src/greet.sh",
                "tools/gen.sh"
            ]
        );
    }

    #[test]
    fn a_test_the_runner_reported_joins_whatever_its_name() {
        let dir = repo();
        let r = dir.path();
        let files = files_of(r);
        let mut b = baseline(&[]);
        b.commands[0].tests = [
            (
                "helpers/asserts.py::test_same".to_string(),
                agentloop_evidence::Outcome::Passed,
            ),
            (
                "gone/file.py::test_x".to_string(),
                agentloop_evidence::Outcome::Passed,
            ),
        ]
        .into();
        let none = TaskFiles {
            scope: Vec::new(),
            text: String::new(),
        };
        let t = traced(
            r,
            &b,
            &files,
            &Harness::default(),
            &Baseline::new(),
            &[none],
        );
        assert_eq!(
            t.keys().map(String::as_str).collect::<Vec<_>>(),
            ["helpers/asserts.py"]
        );
        assert_eq!(
            t["helpers/asserts.py"].why,
            "a test `sh tests/check.sh` collected at the test baseline"
        );
        // In a task's scope, it is that task's to change.
        let scoped = TaskFiles {
            scope: vec!["helpers/".into()],
            text: String::new(),
        };
        assert!(
            traced(
                r,
                &b,
                &files,
                &Harness::default(),
                &Baseline::new(),
                &[scoped]
            )
            .is_empty()
        );
    }
}
