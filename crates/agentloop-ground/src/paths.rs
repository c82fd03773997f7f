//! Which paths are which: tests by the project's conventions, and the path patterns
//! of `protected`, `Scope:` and the like.

/// True if `path` matches one of the test patterns (a directory prefix like `tests/`
/// anywhere in the path, or a fragment of the file name like `_test.`).
pub fn is_test_path(path: &str, patterns: &[String]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    patterns.iter().any(|p| {
        if p.ends_with('/') {
            path.match_indices(p.as_str())
                .any(|(i, _)| i == 0 || path.as_bytes()[i - 1] == b'/')
        } else {
            name.contains(p.as_str())
        }
    })
}

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
