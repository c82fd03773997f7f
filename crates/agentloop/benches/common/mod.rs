//! What the benches share: their settings from the environment and git in a scratch
//! repository.

use std::path::Path;
use std::process::Command;

/// A whole-number setting from the environment, or its default.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs git in `root` with a fixed identity; panics when it fails.
#[allow(dead_code)] // not every bench has a repository
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

/// Keeps the bench's state (journal key, run registry) and caches (clean copies) in
/// `root`, for this process and the agentloop processes it starts, so the bench can
/// read the journals they seal. Call first, before any thread starts.
#[allow(dead_code)] // not every bench starts agentloop in a repository
pub fn isolate(root: &Path) {
    // SAFETY: called at the top of main, while the bench is still single-threaded.
    unsafe {
        std::env::set_var("XDG_STATE_HOME", root.join(".git/state"));
        std::env::set_var("XDG_CACHE_HOME", root.join(".git/cache"));
    }
}
