//! What the tests of this crate and the crates above it share (not for use outside
//! tests: compiled in so that the crates above need no feature to reach it).

use std::path::Path;

/// Runs git `args` in `root` as agentloop's own git runs (hermetic), with a fixed
/// identity; panics with git's words when it fails.
pub fn git(root: &Path, args: &[&str]) {
    let mut c = crate::git::git_command(root);
    c.args(["-c", "user.name=t", "-c", "user.email=t@t"]);
    let out = c.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
