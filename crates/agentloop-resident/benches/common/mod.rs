//! What the core benches share: git with a fixed identity, and a committed repository
//! of Python files (a fifth of them tests) to measure on.

use std::path::Path;
use std::process::Command;

/// Runs git in `root` with a fixed identity; panics when it fails.
pub fn git(root: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// A committed repository of `files` Python files (every fifth a test under `tests/`,
/// the rest under `src/`, a hundred to a directory) with `plan` as its PLAN.md.
pub fn python_repo(files: usize, plan: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    for i in 0..files {
        let (d, name) = if i % 5 == 0 {
            (format!("tests/m{}", i / 100), format!("test_{i}.py"))
        } else {
            (format!("src/m{}", i / 100), format!("f{i}.py"))
        };
        std::fs::create_dir_all(root.join(&d)).unwrap();
        std::fs::write(
            root.join(&d).join(name),
            format!("def f{i}():\n    return {i}\n"),
        )
        .unwrap();
    }
    std::fs::write(root.join("PLAN.md"), plan).unwrap();
    std::fs::write(root.join(".gitignore"), ".agentloop/\n__pycache__/\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "bench"]);
    dir
}
