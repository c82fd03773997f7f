//! A file too large for the work: one the work adds or changes past `[verify]
//! max_file_size` fails the verification before anything copies, hashes or commits
//! it. An agent's 8 GiB sparse file (`truncate -s 8G`) went through the clean copy,
//! the commit and the merge, minutes each, and landed.

use std::path::Path;

use agentloop_journal::VerifyFinished;

/// The verification of `iteration` refused, when one of `paths` (relative to `dir`:
/// what differs from HEAD, untracked files among them) is a regular file larger
/// than `most` bytes (0: no limit). Read from its metadata alone.
pub fn refused<'a>(
    iteration: u32,
    dir: &Path,
    paths: impl IntoIterator<Item = &'a str>,
    most: u64,
) -> Option<VerifyFinished> {
    if most == 0 {
        return None;
    }
    let (path, size) = paths.into_iter().find_map(|p| {
        let m = std::fs::symlink_metadata(dir.join(p)).ok()?;
        (m.is_file() && m.len() > most).then(|| (p.to_string(), m.len()))
    })?;
    Some(refusal(iteration, &path, size, most, ""))
}

/// The verification of `iteration` refused, when the commits `from..to` in `dir` (the
/// work's own: what it committed since it started) hold a file larger than `most`
/// bytes (0: no limit), even one a later commit removed: its object would land with
/// the history.
pub fn committed_refused(
    iteration: u32,
    dir: &Path,
    from: &str,
    to: &str,
    most: u64,
) -> Option<VerifyFinished> {
    if most == 0 {
        return None;
    }
    match agentloop_exec::git::largest_blob_past(dir, from, to, most) {
        Ok(None) => None,
        Ok(Some((path, size))) => Some(refusal(
            iteration,
            &path,
            size,
            most,
            " in a commit of the work",
        )),
        // What cannot be measured does not land: a missing object, a history cut short.
        Err(why) => Some(VerifyFinished {
            digest: Some(format!(
                "What the work committed since the task began cannot be read whole ({why}), so its files cannot be held to `[verify] max_file_size`. No check ran. Mend the repository (`git fsck` names what is missing; a `.git/shallow` or `.git/info/grafts` the work made goes)."
            )),
            fingerprint: Some(agentloop_ground::failure::fingerprint(
                "too-large",
                "unreadable",
            )),
            ..refusal(iteration, "", 0, most, "")
        }),
    }
}

/// A refusal said in the verification's log, where its checks' output would go.
pub fn tell(log: &Path, refused: &VerifyFinished) -> std::io::Result<()> {
    std::fs::write(
        log,
        format!(
            "[agentloop: {}]\n",
            refused.digest.as_deref().unwrap_or_default()
        ),
    )
}

fn refusal(iteration: u32, path: &str, size: u64, most: u64, where_: &str) -> VerifyFinished {
    VerifyFinished {
        iteration,
        passed: false,
        commands: Vec::new(),
        fingerprint: Some(agentloop_ground::failure::fingerprint("too-large", path)),
        digest: Some(format!(
            "`{path}` is {}{where_}: a file the work adds or changes may be at most {} (`[verify] max_file_size`). No check ran. Remove it{}, or keep it out of git (`.gitignore`) if the work only makes it.",
            agentloop_ground::words::bytes(size),
            agentloop_ground::words::bytes(most),
            if where_.is_empty() {
                ""
            } else {
                " from the commits (a commit that deletes it still lands it)"
            },
        )),
        evidence: None,
        held_out: Vec::new(),
        left_out: Vec::new(),
        admitted: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_the_limit_refuses_the_verification_and_says_which() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::write(d.join("small.txt"), "x").unwrap();
        std::fs::File::create(d.join("big.bin"))
            .unwrap()
            .set_len(8 << 30)
            .unwrap();
        std::os::unix::fs::symlink(d.join("big.bin"), d.join("link")).unwrap();
        assert!(refused(1, d, ["small.txt", "link", "gone.txt"], 1024).is_none());
        let r = refused(3, d, ["small.txt", "big.bin"], 100 << 20).unwrap();
        assert!(!r.passed);
        assert_eq!(r.iteration, 3);
        let digest = r.digest.unwrap();
        assert!(
            digest.starts_with(
                "`big.bin` is 8.6 GB: a file the work adds or changes may be at most 104.9 MB"
            ),
            "{digest}"
        );
        assert!(refused(1, d, ["big.bin"], 0).is_none(), "0: no limit");
        // Commits that cannot be walked (here: no repository at all) are refused too.
        let r = committed_refused(2, d, "HEAD~1", "HEAD", 100 << 20).unwrap();
        assert!(!r.passed);
        assert!(
            r.digest
                .unwrap()
                .starts_with("What the work committed since the task began cannot be read whole"),
        );
        assert!(committed_refused(2, d, "HEAD~1", "HEAD", 0).is_none());
    }
}
