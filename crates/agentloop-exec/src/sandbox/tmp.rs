//! What of the real `/tmp` an agent's sandbox, which has a `/tmp` of its own, still
//! sees: the programs it is run with.

use std::path::{Path, PathBuf};

use agentloop_config::SandboxConfig;

use super::Sandbox;

/// The directories under `/tmp` that hold agentloop's executable and the programs on
/// the PATH: each PATH entry's parent (a `node_modules/.bin` links into its
/// `node_modules`, a `bin` of a tool directory into that directory); and the
/// directory of each file the environment names by its path (a linker in
/// `CARGO_TARGET_…_LINKER`, a compiler wrapper).
pub(super) fn programs_in_tmp() -> Vec<PathBuf> {
    let tmp = Path::new("/tmp");
    let exe = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let named = std::env::vars_os()
        .filter(|(k, _)| k != "PATH")
        .flat_map(|(_, v)| std::env::split_paths(&v).collect::<Vec<_>>())
        .filter(|p| p.is_absolute() && p.starts_with(tmp) && p.is_file())
        .filter_map(|p| p.parent().map(Path::to_path_buf));
    let mut out: Vec<PathBuf> = Vec::new();
    for d in exe
        .into_iter()
        .chain(std::env::split_paths(&path).filter_map(|p| p.parent().map(Path::to_path_buf)))
        .chain(named)
    {
        let Ok(d) = d.canonicalize() else { continue };
        if d.starts_with(tmp) && d != tmp && !out.iter().any(|o| d.starts_with(o)) {
            out.retain(|o| !o.starts_with(&d));
            out.push(d);
        }
    }
    out
}

/// Whether `p`, a file an agent's command line names, is one to show it through the
/// sandbox's own `/tmp`: a regular file under `/tmp` named by its real path (no link
/// on the way, which the agent could have pointed at another file of `/tmp`), outside
/// the project and the agent's working directory (seen already, and the agent's to
/// change), and nothing hidden or of agentloop's cache.
pub(super) fn shown_program(cfg: &SandboxConfig, root: &Path, workdir: &Path, p: &Path) -> bool {
    let plain = std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file());
    let real = p.canonicalize().is_ok_and(|c| c == p);
    let hidden = cfg
        .unreachable_paths()
        .iter()
        .any(|h| p.starts_with(h) || h.canonicalize().is_ok_and(|h| p.starts_with(h)));
    p.starts_with("/tmp")
        && plain
        && real
        && !hidden
        && !p.starts_with(root)
        && !p.starts_with(workdir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command agent's file under `/tmp` is shown only by its real path, as a
    /// regular file outside the project: a link the agent planted is not followed.
    #[test]
    fn only_a_real_file_under_tmp_is_shown() {
        let cfg = SandboxConfig::default();
        let tmp = tempfile::Builder::new()
            .prefix("agentloop-shown-")
            .tempdir_in("/tmp")
            .unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let (project, script, secret, link) = (
            dir.join("project"),
            dir.join("agent.sh"),
            dir.join("secret"),
            dir.join("link.sh"),
        );
        std::fs::create_dir(&project).unwrap();
        std::fs::write(&script, "echo hi\n").unwrap();
        std::fs::write(&secret, "key\n").unwrap();
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        std::fs::write(project.join("tool.sh"), "x\n").unwrap();
        let shown = |p: &Path| shown_program(&cfg, &project, &project, p);
        assert!(shown(&script));
        assert!(!shown(&link), "a link");
        assert!(!shown(&dir), "a directory");
        assert!(!shown(&project.join("tool.sh")), "the project's own");
        assert!(!shown(Path::new("/usr/bin/env")), "not under /tmp");
    }
}
