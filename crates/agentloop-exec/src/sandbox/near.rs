//! The git repositories near the project that a sandboxed agent does not see: the
//! home directory's children and grandchildren, and the project's siblings.

use std::path::{Path, PathBuf};

/// The git repositories near the project that are not it: the home directory's
/// children and grandchildren (`~/code/other`), and the project's siblings; at most
/// a few thousand directories are looked at.
pub(super) fn other_repositories(home: &Path, root: &Path, workdir: &Path) -> Vec<PathBuf> {
    // The project, agentloop, and the programs on the PATH (an agent CLI installed
    // in a checkout) stay.
    let mut keep: Vec<PathBuf> = vec![
        root.to_path_buf(),
        workdir.to_path_buf(),
        std::env::current_exe().unwrap_or_default(),
    ];
    keep.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let ours = |d: &Path| keep.iter().any(|k| k.starts_with(d) || d.starts_with(k));
    // Looked for once per process (a driver confines many iterations).
    static FOUND: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| repositories_near(home, root))
        .iter()
        .filter(|d| !ours(d))
        .cloned()
        .collect()
}

/// The git repositories among the home directory's children and grandchildren and
/// the project's siblings (the project itself among them).
fn repositories_near(home: &Path, root: &Path) -> Vec<PathBuf> {
    let dirs = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .take(2000)
            .collect()
    };
    let mut candidates = Vec::new();
    if home.is_dir() && home != Path::new("/") {
        for d in dirs(home) {
            // The agents' own directories and dotted ones (caches, config) are not
            // where people keep repositories.
            let dotted = d
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            if dotted {
                continue;
            }
            candidates.extend(dirs(&d));
            candidates.push(d);
        }
    }
    // (Under `/tmp` they are out of sight already: the sandbox has its own.)
    if let Some(parent) = root
        .parent()
        .filter(|p| *p != Path::new("/") && !p.starts_with("/tmp"))
    {
        candidates.extend(dirs(parent));
    }
    let mut out: Vec<PathBuf> = candidates
        .into_iter()
        .filter(|d| d.join(".git").exists())
        .collect();
    out.sort();
    out.dedup();
    out
}
