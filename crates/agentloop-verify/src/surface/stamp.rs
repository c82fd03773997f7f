//! What the last full check of the surface saw when it found nothing changed, so that
//! the next check can tell, without a git process, that nothing has changed since.
//!
//! A stamp holds HEAD, the rules it was made under, and each baseline file's blob and
//! status (size, mode, inode, modification and change times). It still holds when:
//! - HEAD is the same (a commit could have brought a file that configures the checks);
//! - the rules are the same (a new plan or setting can widen the surface);
//! - every baseline file's status is what it was. The change time cannot be set by
//!   the agent (it moves on every write, `touch` included), and a file whose times
//!   were within [`RACY`] of the moment its status was read is never stamped: a write
//!   in the same clock tick could not be told apart (git's "racily clean" entries);
//! - no path the work tree's snapshot (`git status`, with the file-system monitor and
//!   the untracked cache off) lists as new or changed outside the baseline configures
//!   the checks.
//!
//! Anything else falls back to the full check. The stamp is sealed with the journal's
//! key: an edited stamp is ignored.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use agentloop_exec::git::Snapshot;
use agentloop_journal::{self as journal, Baseline};
use agentloop_project::Project;

/// How recent a file's times may be, against the moment its status was read, for its
/// status to stand for its content.
const RACY: Duration = Duration::from_secs(2);

/// A file's status as the stamp keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    len: u64,
    mode: u32,
    ino: u64,
    dev: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stat {
    /// The status of `path` (not following a link), `None` if it is not there.
    pub fn of(path: &Path) -> Option<Stat> {
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Stat {
            len: m.len(),
            mode: m.mode(),
            ino: m.ino(),
            dev: m.dev(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
            ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
        })
    }

    /// Changed or written too close to `read_at` for its status to be trusted.
    fn racy(&self, read_at: SystemTime) -> bool {
        let at = read_at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let margin = RACY.as_nanos() as i128;
        self.mtime_ns >= at - margin || self.ctime_ns >= at - margin
    }
}

/// The statuses of the baseline's files, read before they are hashed.
pub struct Statuses {
    read_at: SystemTime,
    files: BTreeMap<String, Stat>,
}

impl Statuses {
    pub fn read(root: &Path, base: &Baseline) -> Statuses {
        let read_at = SystemTime::now();
        let files = base
            .keys()
            .filter_map(|p| Some((p.clone(), Stat::of(&root.join(p))?)))
            .collect();
        Statuses { read_at, files }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    head: Option<String>,
    rules: String,
    /// Baseline path → (blob, status).
    files: BTreeMap<String, (String, Stat)>,
}

impl Stamp {
    /// A stamp for a check that found nothing changed, from the statuses read before
    /// it hashed; `None` when a file is missing or was written too recently.
    pub fn new(
        head: Option<String>,
        rules: &Project,
        base: &Baseline,
        read: &Statuses,
    ) -> Option<Stamp> {
        let mut files = BTreeMap::new();
        for (path, f) in base {
            let stat = read.files.get(path)?;
            if stat.racy(read.read_at) {
                return None;
            }
            files.insert(path.clone(), (f.blob.clone(), stat.clone()));
        }
        Some(Stamp {
            head,
            rules: format!("{rules:?}"),
            files,
        })
    }

    /// True when the surface is, without doubt, as it was when the stamp was made (see
    /// the module's documentation); `now` is a snapshot of the work tree taken for it.
    pub fn holds(&self, root: &Path, base: &Baseline, rules: &Project, now: &Snapshot) -> bool {
        self.holds_but_statuses(root, base, rules, now)
            && base.keys().all(|path| {
                self.files
                    .get(path)
                    .is_some_and(|(_, stat)| Stat::of(&root.join(path)).as_ref() == Some(stat))
            })
    }

    /// [`holds`](Self::holds) but for the baseline files' statuses: for a caller that
    /// knows by other means (a watch on each of them) that none was written since a
    /// full look found them as stamped.
    pub fn holds_but_statuses(
        &self,
        root: &Path,
        base: &Baseline,
        rules: &Project,
        now: &Snapshot,
    ) -> bool {
        if now.head != self.head || format!("{rules:?}") != self.rules {
            return false;
        }
        if self.files.len() != base.len()
            || base
                .iter()
                .any(|(path, f)| self.files.get(path).is_none_or(|(blob, _)| *blob != f.blob))
        {
            return false;
        }
        // A new git hook (git's status does not see it).
        if super::gitdir::git_files(root)
            .iter()
            .any(|(f, _)| !base.contains_key(f))
        {
            return false;
        }
        // A new file that configures the checks (it would be reported as added).
        !now.dirty.iter().any(|(path, content)| {
            content.is_some() && !base.contains_key(path) && rules.added_intercepts(path).is_some()
        })
    }

    /// The stamp at `path`, if agentloop sealed it as it stands.
    pub fn load(path: &Path) -> Option<Stamp> {
        let bytes = std::fs::read(path).ok()?;
        let at = bytes.iter().position(|&b| b == b'\n')?;
        let (seal, body) = (&bytes[..at], &bytes[at + 1..]);
        if !journal::verifies(body, std::str::from_utf8(seal).ok()?) {
            return None;
        }
        serde_json::from_slice(body).ok()
    }

    /// Writes the stamp (its seal on the first line); without a key, no stamp.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let body = serde_json::to_vec(self).expect("a stamp serializes");
        let Some(seal) = journal::seal(&body) else {
            return Stamp::remove(path);
        };
        let mut bytes = seal.into_bytes();
        bytes.push(b'\n');
        bytes.extend(body);
        agentloop_ground::fsutil::write_atomic(path, &bytes)
    }

    pub fn remove(path: &Path) -> std::io::Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_journal::SurfaceFile;

    fn setup(age: Duration) -> (tempfile::TempDir, Baseline, Statuses) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t1.sh");
        std::fs::write(&f, "exit 1\n").unwrap();
        let base: Baseline = [(
            "t1.sh".to_string(),
            SurfaceFile {
                blob: "b1".into(),
                mode: 0o100644,
                why: "test".into(),
            },
        )]
        .into();
        let mut read = Statuses::read(dir.path(), &base);
        // As if its status had been read `age` after the file was written.
        read.read_at += age;
        (dir, base, read)
    }

    fn rules(dir: &Path, commands: &[&str]) -> Project {
        Project::from_names(
            dir,
            &[],
            "PLAN.md",
            commands.iter().map(|c| c.to_string()).collect(),
            &[],
        )
    }

    fn tree(head: &str, dirty: &[&str]) -> Snapshot {
        Snapshot {
            id: String::new(),
            head: Some(head.into()),
            dirty: dirty.iter().map(|p| (p.to_string(), Some(1))).collect(),
        }
    }

    #[test]
    fn a_file_written_just_before_its_status_was_read_is_never_stamped() {
        let (dir, base, read) = setup(Duration::ZERO);
        let r = rules(dir.path(), &["sh t1.sh"]);
        assert!(Stamp::new(Some("h".into()), &r, &base, &read).is_none());
        let (dir, base, read) = setup(RACY + Duration::from_secs(1));
        let r = rules(dir.path(), &["sh t1.sh"]);
        assert!(Stamp::new(Some("h".into()), &r, &base, &read).is_some());
    }

    #[test]
    fn a_stamp_holds_only_for_the_same_head_rules_files_and_no_new_check_file() {
        let (dir, base, read) = setup(RACY + Duration::from_secs(1));
        let r = rules(dir.path(), &["sh t1.sh"]);
        let stamp = Stamp::new(Some("h".into()), &r, &base, &read).unwrap();
        assert!(stamp.holds(dir.path(), &base, &r, &tree("h", &["src/a.rs"])));
        assert!(!stamp.holds(dir.path(), &base, &r, &tree("h2", &[])));
        let wider = rules(dir.path(), &["sh t1.sh", "make check"]);
        assert!(!stamp.holds(dir.path(), &base, &wider, &tree("h", &[])));
        assert!(!stamp.holds(dir.path(), &base, &r, &tree("h", &["conftest.py"])));
        // A write, even of the same bytes, moves the change time.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(dir.path().join("t1.sh"), "exit 1\n").unwrap();
        assert!(!stamp.holds(dir.path(), &base, &r, &tree("h", &[])));
    }
}

/// The stamp is sound: whatever happens to the tree after it was made, when it holds,
/// the full check finds nothing changed (random edits, same-size rewrites with the
/// modification time put back, new files, deletions, mode changes, commits).
#[cfg(test)]
mod property {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::time::Duration;

    use proptest::prelude::*;

    use super::super::{check, record};
    use super::{Stamp, Statuses};
    use agentloop_exec::git::Snapshots;
    use agentloop_exec::testing::git;
    use agentloop_project::Project;

    const FILES: &[&str] = &[
        "tests/t1.sh",
        "tests/test_a.py",
        "src/a.rs",
        "src/b.rs",
        "PLAN.md",
    ];
    const NEW: &[&str] = &[
        "conftest.py",
        "tests/test_new.py",
        "src/new.rs",
        "pytest.ini",
        "notes.md",
    ];

    #[derive(Debug, Clone)]
    enum Op {
        /// Rewrite a file: the same size or not, its modification time put back or not.
        Edit {
            file: usize,
            same_size: bool,
            keep_mtime: bool,
        },
        Add(usize),
        Delete(usize),
        Chmod(usize),
        Touch(usize),
        Commit,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..FILES.len(), any::<bool>(), any::<bool>()).prop_map(
                |(file, same_size, keep_mtime)| Op::Edit {
                    file,
                    same_size,
                    keep_mtime
                }
            ),
            (0..NEW.len()).prop_map(Op::Add),
            (0..FILES.len()).prop_map(Op::Delete),
            (0..FILES.len()).prop_map(Op::Chmod),
            (0..FILES.len()).prop_map(Op::Touch),
            Just(Op::Commit),
        ]
    }

    fn apply(root: &Path, op: &Op) {
        match op {
            Op::Edit {
                file,
                same_size,
                keep_mtime,
            } => {
                let p = root.join(FILES[*file]);
                let Ok(old) = std::fs::read(&p) else { return };
                let mtime = std::fs::metadata(&p).and_then(|m| m.modified()).ok();
                let mut new = old.clone();
                if *same_size && !new.is_empty() {
                    new[0] = if new[0] == b'#' { b'!' } else { b'#' };
                } else {
                    new.extend_from_slice(b"# more\n");
                }
                // In place: the same inode.
                std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(&p)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, &new))
                    .unwrap();
                if let (true, Some(t)) = (keep_mtime, mtime) {
                    std::fs::File::options()
                        .write(true)
                        .open(&p)
                        .and_then(|f| f.set_modified(t))
                        .unwrap();
                }
            }
            Op::Add(n) => {
                let p = root.join(NEW[*n]);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, "import sys\n").unwrap();
            }
            Op::Delete(file) => {
                let _ = std::fs::remove_file(root.join(FILES[*file]));
            }
            Op::Chmod(file) => {
                let p = root.join(FILES[*file]);
                if let Ok(m) = std::fs::metadata(&p) {
                    let mode = m.permissions().mode() ^ 0o111;
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
                }
            }
            Op::Touch(file) => {
                let p = root.join(FILES[*file]);
                if let Ok(f) = std::fs::File::options().write(true).open(&p) {
                    f.set_modified(std::time::SystemTime::now()).unwrap();
                }
            }
            Op::Commit => {
                git(root, &["add", "-A"]);
                git(root, &["commit", "-qm", "agent", "--allow-empty"]);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn when_the_stamp_holds_the_full_check_finds_nothing(ops in proptest::collection::vec(op(), 0..4)) {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            git(root, &["init", "-q"]);
            for f in FILES {
                let p = root.join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, format!("# {f}\nexit 0\n")).unwrap();
            }
            git(root, &["add", "-A"]);
            git(root, &["commit", "-qm", "start"]);
            let rules = Project::from_names(root, &[], "PLAN.md", vec!["sh tests/t1.sh".into(), "pytest".into()], &[]);
            let base = record(root, &rules).unwrap();
            let snapshots = Snapshots::known(root);
            let head = snapshots.take().unwrap().head;
            let mut read = Statuses::read(root, &base);
            // As if the files were older than the racy window (they are not: the clock
            // tick below stands in for it).
            read.read_at += super::RACY + Duration::from_secs(1);
            let stamp = Stamp::new(head, &rules, &base, &read).unwrap();
            std::thread::sleep(Duration::from_millis(15));
            for op in &ops {
                apply(root, op);
            }
            let now = snapshots.take().unwrap();
            if ops.is_empty() {
                prop_assert!(stamp.holds(root, &base, &rules, &now));
            }
            if stamp.holds(root, &base, &rules, &now) {
                let changes = check(root, &base, &rules).unwrap();
                prop_assert!(changes.is_empty(), "{ops:?}: {changes:?}");
            }
        }
    }
}
