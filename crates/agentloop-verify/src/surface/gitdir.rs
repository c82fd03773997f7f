//! Git's own files on the surface: what in the repository's configuration runs code
//! or changes what git shows (`.git/config`'s filters, drivers, hooks path, includes
//! and aliases; `.git/info/attributes`) and its hooks. agentloop's own git obeys none
//! of them (see `exec::git`), but a check that runs git does: a hook or a filter the
//! agent planted would run inside the check.
//!
//! Only a repository whose git directory is `.git/` inside the project is covered;
//! a worktree's git files are its main repository's, recorded there.

use std::path::Path;

use agentloop_project::GIT_CONFIG;

/// Attributes git reads before `.gitattributes`.
const GIT_ATTRIBUTES: &str = ".git/info/attributes";

/// The git files of the surface that exist in `root`, with why each belongs.
pub(super) fn git_files(root: &Path) -> Vec<(String, String)> {
    let git = root.join(".git");
    if !git.is_dir() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if root.join(GIT_CONFIG).is_file() {
        out.push((
            GIT_CONFIG.to_string(),
            "git configuration (filters, drivers, hooks, includes)".to_string(),
        ));
    }
    if root.join(GIT_ATTRIBUTES).is_file() {
        out.push((GIT_ATTRIBUTES.to_string(), "git attributes".to_string()));
    }
    let mut hooks: Vec<String> = std::fs::read_dir(git.join("hooks"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.ends_with(".sample") && !n.starts_with('.'))
        .filter(|n| std::fs::symlink_metadata(git.join("hooks").join(n)).is_ok_and(|m| !m.is_dir()))
        .collect();
    hooks.sort();
    out.extend(
        hooks
            .into_iter()
            .map(|n| (format!(".git/hooks/{n}"), "a git hook".to_string())),
    );
    out
}
