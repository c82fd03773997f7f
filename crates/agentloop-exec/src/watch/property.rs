//! The watched snapshot against `git status` of the whole tree, on random trees
//! changed in random ways (files and directories made, rewritten, removed, renamed;
//! modes; ignore rules; what is staged and committed): after every step both say the
//! same.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use proptest::prelude::*;

use super::Watched;
use crate::git::Snapshots;
use crate::testing::git;

const DIRS: &[&str] = &["", "src", "src/deep/er", "tests", "target", "fresh/new"];
const NAMES: &[&str] = &["a.rs", "b.txt", "c", "conftest.py"];

#[derive(Debug, Clone)]
enum Op {
    Write {
        dir: usize,
        name: usize,
        text: u8,
    },
    Append {
        dir: usize,
        name: usize,
    },
    Remove {
        dir: usize,
        name: usize,
    },
    RemoveDir(usize),
    RenameFile {
        from: (usize, usize),
        to: (usize, usize),
    },
    RenameDir {
        from: usize,
        to: usize,
    },
    Chmod {
        dir: usize,
        name: usize,
    },
    Ignore(usize),
    Stage,
    Commit,
}

fn op() -> impl Strategy<Value = Op> {
    let d = 0..DIRS.len();
    let n = 0..NAMES.len();
    prop_oneof![
        4 => (d.clone(), n.clone(), any::<u8>()).prop_map(|(dir, name, text)| Op::Write { dir, name, text }),
        2 => (d.clone(), n.clone()).prop_map(|(dir, name)| Op::Append { dir, name }),
        2 => (d.clone(), n.clone()).prop_map(|(dir, name)| Op::Remove { dir, name }),
        1 => d.clone().prop_map(Op::RemoveDir),
        1 => ((d.clone(), n.clone()), (d.clone(), n.clone())).prop_map(|(from, to)| Op::RenameFile { from, to }),
        1 => (d.clone(), d.clone()).prop_map(|(from, to)| Op::RenameDir { from, to }),
        1 => (d.clone(), n.clone()).prop_map(|(dir, name)| Op::Chmod { dir, name }),
        1 => n.prop_map(Op::Ignore),
        1 => Just(Op::Stage),
        1 => Just(Op::Commit),
    ]
}

fn file(root: &Path, dir: usize, name: usize) -> std::path::PathBuf {
    root.join(DIRS[dir]).join(NAMES[name])
}

fn apply(root: &Path, op: &Op) {
    // Each step may fail (a missing file, a directory moved into itself): a failed
    // step changes nothing, which is a step too.
    match op {
        Op::Write { dir, name, text } => {
            let _ = std::fs::create_dir_all(root.join(DIRS[*dir]));
            let _ = std::fs::write(file(root, *dir, *name), format!("v{text}\n"));
        }
        Op::Append { dir, name } => {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .append(true)
                .open(file(root, *dir, *name))
            {
                let _ = f.write_all(b"more\n");
            }
        }
        Op::Remove { dir, name } => {
            let _ = std::fs::remove_file(file(root, *dir, *name));
        }
        Op::RemoveDir(dir) if !DIRS[*dir].is_empty() => {
            let _ = std::fs::remove_dir_all(root.join(DIRS[*dir]));
        }
        Op::RemoveDir(_) => {}
        Op::RenameFile { from, to } => {
            let _ = std::fs::create_dir_all(root.join(DIRS[to.0]));
            let _ = std::fs::rename(file(root, from.0, from.1), file(root, to.0, to.1));
        }
        Op::RenameDir { from, to } => {
            let (a, b) = (DIRS[*from], DIRS[*to]);
            if !a.is_empty() && !b.is_empty() && !b.starts_with(a) {
                let target = root.join(b);
                let _ = std::fs::create_dir_all(target.parent().unwrap());
                let _ = std::fs::remove_dir_all(&target);
                let _ = std::fs::rename(root.join(a), target);
            }
        }
        Op::Chmod { dir, name } => {
            let p = file(root, *dir, *name);
            if let Ok(m) = std::fs::metadata(&p) {
                let mode = if m.permissions().mode() & 0o100 == 0 {
                    0o755
                } else {
                    0o644
                };
                let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode));
            }
        }
        Op::Ignore(name) => {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(root.join(".gitignore"))
                .unwrap();
            writeln!(f, "{}", NAMES[*name]).unwrap();
        }
        Op::Stage => git(root, &["add", "-A"]),
        Op::Commit => git(root, &["commit", "-qam", "step", "--allow-empty"]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn the_watched_snapshot_says_what_git_status_says(
        steps in proptest::collection::vec(proptest::collection::vec(op(), 1..4), 1..8)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        for d in ["src", "src/deep/er", "tests", "target"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
            std::fs::write(root.join(d).join("a.rs"), d).unwrap();
        }
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "start"]);
        let snapshots = Snapshots::known(root);
        let mut watched = Watched::start(snapshots.clone()).expect("a watched tree");
        prop_assert_eq!(watched.take(false), snapshots.take());
        for step in &steps {
            for op in step {
                apply(root, op);
            }
            let full = snapshots.take();
            prop_assert_eq!(watched.take(false), full, "after {:?}", step);
        }
    }
}

#[test]
fn an_untouched_tree_is_snapshotted_without_git_and_a_touched_one_with_one_narrow_question() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.rs"), "a").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "start"]);
    let mut watched = Watched::start(Snapshots::known(root)).unwrap();
    let first = watched.take(false).unwrap();
    assert!(watched.touched.is_empty() && !watched.whole);
    assert_eq!(watched.take(false).unwrap(), first);
    std::fs::write(root.join("src/a.rs"), "b").unwrap();
    watched.drain();
    assert_eq!(
        watched.touched.iter().collect::<Vec<_>>(),
        [Path::new("src/a.rs")]
    );
    assert!(!watched.whole);
    let now = watched.take(false).unwrap();
    assert_eq!(now.dirty.keys().collect::<Vec<_>>(), ["src/a.rs"]);
    // A commit is a change of the repository: the whole tree is asked about.
    git(root, &["commit", "-qam", "b"]);
    watched.drain();
    assert!(watched.whole);
    assert!(watched.take(false).unwrap().dirty.is_empty());
}
