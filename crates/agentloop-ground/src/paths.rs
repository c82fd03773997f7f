//! The path patterns of `protected`, `Scope:` and the like. (What a path *is* — a
//! test, the harness, the work — is the project model's: `agentloop-project`.)

/// True if `path` (relative to the project) is `pattern` or lies under it; a pattern
/// ending in `/` is a directory prefix.
pub fn path_matches(path: &str, pattern: &str) -> bool {
    let p = pattern.trim_start_matches("./");
    if p.ends_with('/') {
        path.starts_with(p)
    } else {
        path == p || path.starts_with(&format!("{p}/"))
    }
}
