//! The largest file a range of commits brought in, as git stores it: every blob
//! reachable from the new end and not from the old one. A file an agent committed and
//! removed in a later commit still counts: its object stays in the history that lands.

use std::path::Path;
use std::time::Duration;

use super::{git_command, run_git_within};

/// How long git may take to list and size what a range of commits brought in.
const WITHIN: Duration = Duration::from_secs(120);

/// The largest blob `from..to` brings in (reachable from `to`, not from `from`) that
/// is larger than `most` bytes, with a path it had; `Ok(None)` when there is none.
pub fn largest_blob_past(
    dir: &Path,
    from: &str,
    to: &str,
    most: u64,
) -> Result<Option<(String, u64)>, String> {
    let mut c = git_command(dir);
    c.args(["rev-list", "--objects", to, "--not", from, "--"]);
    let objects = run_git_within(c, None, WITHIN)?;
    if objects.is_empty() {
        return Ok(None);
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
    }
}
