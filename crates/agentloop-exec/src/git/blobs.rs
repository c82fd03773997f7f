//! The largest file a range of commits brought in, as git stores it: every blob
//! reachable from the new end and not from the old one. A file an agent committed and
//! removed in a later commit still counts: its object stays in the history that lands.

use std::path::Path;
use std::time::Duration;

use super::{git_command, run_git_within};

/// How long git may take to list and size what a range of commits brought in.
const WITHIN: Duration = Duration::from_secs(120);

/// The largest blob `from..to` brings in (reachable from `to`, or from a local branch
/// that grew from `from`, and not from `from`) that is larger than `most` bytes, with
/// a path it had; `Ok(None)` when there is none. An error when the range cannot be
/// walked whole: an object missing, a commit of it marked shallow (`.git/shallow`
/// stops the walk there). Grafts are never read (`GIT_GRAFT_FILE`: agentloop's git).
pub fn largest_blob_past(
    dir: &Path,
    from: &str,
    to: &str,
    most: u64,
) -> Result<Option<(String, u64)>, String> {
    // Work committed on a branch and left there when HEAD moved to another still
    // lands with that branch.
    let mut c = git_command(dir);
    c.args([
        "for-each-ref",
        "--format=%(objectname)",
        "--contains",
        from,
        "refs/heads/",
    ]);
    let grown = run_git_within(c, None, WITHIN)?;
    let grown = String::from_utf8_lossy(&grown).into_owned();
    let mut c = git_command(dir);
    c.args(["rev-list", "--objects", to]);
    c.args(grown.split_whitespace());
    c.args(["--not", from, "--"]);
    let objects = run_git_within(c, None, WITHIN)?;
    if objects.is_empty() {
        return Ok(None);
    }
    let shallow = shallow_commits(dir)?;
    if let Some(c) = objects
        .split(|b| *b == b'\n')
        .map(String::from_utf8_lossy)
        .find(|l| !l.contains(' ') && shallow.contains(l.as_ref()))
    {
        return Err(format!(
            "commit {c} is marked shallow (`.git/shallow`): what came before it cannot be read"
        ));
    }
    let mut c = git_command(dir);
    c.args([
        "cat-file",
        "--batch-check=%(objecttype) %(objectsize) %(rest)",
    ]);
    let sized = run_git_within(c, Some(&objects), WITHIN)?;
    let mut largest: Option<(String, u64)> = None;
    for line in sized.split(|b| *b == b'\n') {
        let line = String::from_utf8_lossy(line);
        let mut words = line.splitn(3, ' ');
        let (Some("blob"), Some(size), path) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let Ok(size) = size.parse::<u64>() else {
            continue;
        };
        if size > most && largest.as_ref().is_none_or(|(_, s)| size > *s) {
            largest = Some((path.unwrap_or_default().to_string(), size));
        }
    }
    Ok(largest)
}

/// The commits the repository at `dir` marks shallow (none: not a shallow clone).
fn shallow_commits(dir: &Path) -> Result<std::collections::HashSet<String>, String> {
    let at = super::dirs(dir)
        .ok_or_else(|| format!("{} is not in a git work tree", dir.display()))?
        .common
        .join("shallow");
    match std::fs::read_to_string(&at) {
        Ok(text) => Ok(text.split_whitespace().map(String::from).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Default::default()),
        Err(e) => Err(format!("cannot read {}: {e}", at.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = git_command(dir).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn a_large_file_committed_then_removed_is_still_found() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        git(d, &["init", "-q"]);
        git(d, &["config", "user.email", "t@example.com"]);
        git(d, &["config", "user.name", "t"]);
        std::fs::write(d.join("old.bin"), vec![b'o'; 5000]).unwrap();
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "before"]);
        let from = git(d, &["rev-parse", "HEAD"]);
        assert_eq!(largest_blob_past(d, &from, "HEAD", 100).unwrap(), None);
        std::fs::write(d.join("small.txt"), "x").unwrap();
        std::fs::create_dir(d.join("data")).unwrap();
        std::fs::write(d.join("data/big.bin"), vec![b'b'; 3000]).unwrap();
        std::fs::write(d.join("mid.bin"), vec![b'm'; 2000]).unwrap();
        git(d, &["add", "-A"]);
        git(d, &["commit", "-qm", "big"]);
        git(d, &["rm", "-q", "data/big.bin", "mid.bin"]);
        git(d, &["commit", "-qm", "gone"]);
        assert_eq!(
            largest_blob_past(d, &from, "HEAD", 100).unwrap(),
            Some(("data/big.bin".to_string(), 3000))
        );
        // What was there before is not the range's.
        assert_eq!(largest_blob_past(d, &from, "HEAD", 4000).unwrap(), None);
        assert!(largest_blob_past(d, "no-such-commit", "HEAD", 1).is_err());
        // Left on a branch when HEAD moved to a clean one.
        let tip = git(d, &["rev-parse", "HEAD"]);
        git(d, &["checkout", "-q", "-b", "clean", &from]);
        assert_eq!(
            largest_blob_past(d, &from, "HEAD", 100).unwrap(),
            Some(("data/big.bin".to_string(), 3000))
        );
        // Hidden behind grafts, or a shallow mark: grafts are not read, a shallow
        // mark in the range is an error.
        git(d, &["checkout", "-q", &tip]);
        git(d, &["branch", "-q", "-D", "clean"]);
        std::fs::create_dir_all(d.join(".git/info")).unwrap();
        std::fs::write(d.join(".git/info/grafts"), format!("{tip} {from}\n")).unwrap();
        assert_eq!(
            largest_blob_past(d, &from, "HEAD", 100).unwrap(),
            Some(("data/big.bin".to_string(), 3000))
        );
        std::fs::remove_file(d.join(".git/info/grafts")).unwrap();
        std::fs::write(d.join(".git/shallow"), format!("{tip}\n")).unwrap();
        let e = largest_blob_past(d, &from, "HEAD", 100).unwrap_err();
        assert!(e.contains("marked shallow"), "{e}");
    }
}
