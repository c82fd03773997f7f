//! The copy kept in step holds exactly what the full refresh gives: two copies of one
//! project, one kept in step and one always refreshed the full way, after seeded
//! sequences of an agent's changes to the project and checks' writes to the copies —
//! with what default-deny keeps out of what the agent added, under an admission that
//! now and then lets tests in and then keeps them out again.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{CleanCopy, Judge, KeptCopy, Way};
use crate::surface;
use agentloop_exec::git::Snapshots;
use agentloop_exec::testing::git;
use agentloop_project::{Admission, Allowed, Project};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub(super) fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Files of the project the agent may change (not the rule file, not `.git`).
fn project_files(root: &Path) -> Vec<String> {
    tree(root)
        .into_iter()
        .filter(|(p, k)| k.starts_with("file") && p != ".gitignore")
        .map(|(p, _)| p)
        .collect()
}

fn agent_step(rng: &mut Rng, root: &Path, step: usize) {
    let files = project_files(root);
    let pick = |rng: &mut Rng| files[rng.below(files.len())].clone();
    match rng.below(20) {
        0..=5 => write(&root.join(pick(rng)), &format!("edited {step}\n")),
        6..=7 => write(&root.join(format!("src/new{step}.py")), "new\n"),
        8 => write(&root.join(format!("src/d{step}/e.py")), "deep\n"),
        9..=10 => {
            let _ = std::fs::remove_file(root.join(pick(rng)));
        }
        11 => write(&root.join(format!("build/o{step}.o")), "ignored\n"),
        12 => write(
            &root.join("tests/test_a.py"),
            &format!("def test_a(): pass # {step}\n"),
        ),
        13 => {
            let _ = agentloop_exec::git::run(root, &["checkout", "HEAD", "--", "src/a.py"]);
        }
        14 => {
            let p = root.join(pick(rng));
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() ^ 0o111;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        15 => {
            git(root, &["add", "-A"]);
            git(root, &["commit", "-qm", "work", "--allow-empty"]);
        }
        16 if rng.below(4) == 0 => {
            write(&root.join(".gitignore"), "*.pyc\ncache/\nbuild/\n*.log\n")
        }
        // What default-deny keeps out: a new test, a plugin's metadata.
        17 => write(
            &root.join(format!("tests/test_n{step}.py")),
            "def test_n(): pass\n",
        ),
        18 => write(
            &root.join("zz-0.dist-info/entry_points.txt"),
            &format!("[pytest11]\nzz = zz # {step}\n"),
        ),
        _ => {}
    }
}

fn check_step(rng: &mut Rng, copies: [&Path; 2], step: usize, git_allowed: bool) {
    let files: Vec<String> = tree(copies[1])
        .into_iter()
        .filter(|(_, k)| k.starts_with("file"))
        .map(|(p, _)| p)
        .collect();
    let pick = files[rng.below(files.len())].clone();
    let what = rng.below(16);
    for dir in copies {
        match what {
            0..=2 => write(&dir.join("src/m0.pyc"), &format!("cache {step}\n")),
            3 => write(&dir.join(format!("cache/c{step}")), "cache\n"),
            4 => write(&dir.join(format!("junk{step}.txt")), "junk\n"),
            5 => write(&dir.join(&pick), "a check wrote this\n"),
            6 => {
                let _ = std::fs::remove_file(dir.join(&pick));
            }
            7 => write(&dir.join("out.log"), "log\n"),
            // A surface file rewritten by a check: same size, its time set back.
            9 => {
                let t = dir.join("tests/test_a.py");
                let before = std::fs::metadata(&t).unwrap();
                let text = std::fs::read(&t).unwrap();
                let forged: Vec<u8> = text.iter().map(|_| b'#').collect();
                std::fs::write(&t, forged).unwrap();
                let f = std::fs::File::options().write(true).open(&t).unwrap();
                f.set_modified(before.modified().unwrap()).unwrap();
            }
            // A file of the copy linked from outside, then written through the link.
            10 => {
                let link = dir.with_extension(format!("link{step}"));
                let _ = std::fs::hard_link(dir.join(&pick), &link);
                std::fs::write(&link, "written through a link\n").unwrap();
            }
            8 if git_allowed => {
                let _ = agentloop_exec::git::run(dir, &["status", "--porcelain"]);
            }
            _ => {}
        }
    }
}

/// Every path under `dir` but `.git`: kind, content (escaped, names too: those not
/// UTF-8 stay apart) and the owner's execute bit.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let raw = bytes_tree(dir);
    raw.into_iter()
        .map(|(p, v)| (p.escape_ascii().to_string(), v.escape_ascii().to_string()))
        .collect()
}

fn bytes_tree(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    fn walk(top: &Path, dir: &Path, out: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(top).unwrap().as_os_str().as_bytes().to_vec();
            if rel == b".git" {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                out.insert(rel, b"dir".to_vec());
                walk(top, &p, out);
            } else if m.is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, [b"link ", t.as_os_str().as_bytes()].concat());
            } else {
                let x = m.permissions().mode() & 0o100 != 0;
                let mut v = format!("file x={x} ").into_bytes();
                v.extend(std::fs::read(&p).unwrap());
                out.insert(rel, v);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A committed project: sources, a test (the surface), an executable script, ignore
/// rules; `setup` runs on it before its first commit.
fn project(dir: &Path, setup: impl FnOnce(&Path)) -> std::path::PathBuf {
    let root = dir.join("p");
    write(&root.join(".gitignore"), "*.pyc\ncache/\nbuild/\n");
    write(&root.join("src/a.py"), "a\n");
    write(&root.join("src/b.py"), "b\n");
    write(&root.join("src/pkg/c.py"), "c\n");
    write(&root.join("tests/test_a.py"), "def test_a(): pass\n");
    write(&root.join("README.md"), "readme\n");
    write(&root.join("run.sh"), "#!/bin/sh\n");
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    setup(&root);
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "start"]);
    root
}

/// The tree HEAD points at.
fn head_tree(root: &Path) -> String {
    agentloop_exec::git::run(root, &["rev-parse", "HEAD^{tree}"])
        .unwrap()
        .trim()
        .to_string()
}

/// A kept copy and a copy always refreshed the full way, of one project.
struct Pair {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    base: agentloop_journal::Baseline,
    kept: KeptCopy,
    full: CleanCopy,
    snapshots: Snapshots,
    carry: Vec<String>,
    /// Admissions the refreshes take in turn (`which`): new tests kept out, let in.
    admissions: [Admission; 2],
    pub which: usize,
}

impl Pair {
    fn new(setup: impl FnOnce(&Path)) -> Pair {
        Pair::with_carry(setup, &[])
    }

    /// `setup` runs on the project before its first commit.
    fn with_carry(setup: impl FnOnce(&Path), carry: &[&str]) -> Pair {
        let tmp = tempfile::tempdir().unwrap();
        let root = project(tmp.path(), setup);
        let checks = vec!["python3 -m pytest tests".to_string()];
        let rules = Project::from_names(&root, &[], "PLAN.md", checks, &[]);
        let base = surface::record(&root, &rules).unwrap();
        let created = super::files_of_tree(&root, &head_tree(&root)).unwrap();
        let admit = |tests: bool| {
            Admission::new(
                rules.clone(),
                created.clone(),
                base.keys().cloned().collect(),
                Default::default(),
                vec![],
                Allowed {
                    tests,
                    ..Default::default()
                },
            )
        };
        let admissions = [admit(false), admit(true)];
        let kept = KeptCopy::new(CleanCopy {
            root: root.clone(),
            dir: tmp.path().join("kept"),
        });
        let full = CleanCopy {
            root: root.clone(),
            dir: tmp.path().join("full"),
        };
        let snapshots = Snapshots::known(&root);
        let mut pair = Pair {
            _tmp: tmp,
            root,
            base,
            kept,
            full,
            snapshots,
            carry: carry.iter().map(|s| s.to_string()).collect(),
            admissions,
            which: 0,
        };
        pair.check("first");
        assert_eq!(pair.kept.last, Some(Way::Full));
        pair
    }

    fn dirs(&self) -> [std::path::PathBuf; 2] {
        [self.kept.copy().dir.clone(), self.full.dir.clone()]
    }

    /// The same check's writes to both copies.
    fn in_copies(&self, f: impl Fn(&Path)) {
        for d in self.dirs() {
            f(&d);
        }
    }

    /// Refreshes both; the way the kept copy took.
    fn refresh(&mut self) -> Way {
        let now = self.snapshots.take().unwrap();
        let judge = Judge {
            overlay: Some(&self.base),
            admission: Some(&self.admissions[self.which]),
        };
        let kept = self
            .kept
            .refresh_judged(Some(&now), judge, &self.carry)
            .unwrap();
        let full = self.full.refresh_judged(judge, &self.carry).unwrap();
        assert_eq!(kept.left_out, full.left_out, "what each copy left out");
        assert_eq!(kept.admitted, full.admitted, "what each copy let in");
        self.kept.last.unwrap()
    }

    fn check(&mut self, what: &str) -> Way {
        let way = self.refresh();
        let (k, f) = (tree(&self.kept.copy().dir), tree(&self.full.dir));
        let only = |a: &BTreeMap<String, String>, b: &BTreeMap<String, String>| {
            a.iter()
                .filter(|(p, v)| b.get(*p) != Some(*v))
                .map(|(p, v)| format!("{p}: {v}"))
                .collect::<Vec<_>>()
        };
        assert!(
            k == f,
            "{what}: the kept copy differs from the full one ({way:?})\n kept only: {:?}\n full only: {:?}",
            only(&k, &f),
            only(&f, &k)
        );
        way
    }
}

#[test]
fn a_write_through_a_link_from_outside_the_copy_is_put_right() {
    let mut p = Pair::new(|_| {});
    let dir = p.kept.copy().dir.clone();
    for (n, (file, way)) in [("src/a.py", Way::Kept), ("tests/test_a.py", Way::Full)]
        .into_iter()
        .enumerate()
    {
        // A check links a file of the copy from outside it and writes through the link:
        // the source file is put right the short way, the surface file the full way.
        let link = p.root.with_extension(format!("link{n}"));
        std::fs::hard_link(dir.join(file), &link).unwrap();
        std::fs::write(&link, "written through a link\n").unwrap();
        assert_eq!(p.refresh(), way);
        assert_eq!(
            std::fs::read_to_string(dir.join(file)).unwrap(),
            std::fs::read_to_string(p.root.join(file)).unwrap(),
            "{file} written through a link stayed in the copy",
        );
        // And the link made earlier carries no later write either.
        p.refresh();
        std::fs::write(&link, "again\n").unwrap();
        p.refresh();
        assert_eq!(
            std::fs::read_to_string(dir.join(file)).unwrap(),
            std::fs::read_to_string(p.root.join(file)).unwrap()
        );
    }
}

#[test]
fn a_copy_kept_in_step_holds_what_the_full_refresh_gives() {
    let mut short = 0;
    let mut steps = 0;
    for seed in 1..=4u64 {
        let mut p = Pair::new(|_| {});
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        for step in 0..30 {
            for _ in 0..rng.below(3) {
                agent_step(&mut rng, &p.root, step);
            }
            // Another task's verification now and then: its tests let in, or not.
            if rng.below(6) == 0 {
                p.which = 1 - p.which;
            }
            let way = p.check(&format!("seed {seed}, step {step}"));
            steps += 1;
            short += usize::from(way == Way::Kept);
            for _ in 0..rng.below(3) {
                let [kept, full] = p.dirs();
                check_step(&mut rng, [&kept, &full], step, seed == 4 && step > 20);
            }
        }
    }
    eprintln!("{short} of {steps} refreshes kept in step");
    // Not a test of the full way alone.
    assert!(
        short * 3 >= steps,
        "only {short} of {steps} refreshes were kept in step"
    );
}

mod adversarial;

/// A workspace package linked into `node_modules` (npm, pnpm and yarn workspaces do
/// it) resolves, in the copy, to the copy's own package: the checks import the work
/// judged. Every other entry is the user's install, as it is.
#[test]
fn a_workspace_package_linked_into_node_modules_is_the_copys_own() {
    let tmp = tempfile::tempdir().unwrap();
    let root = project(tmp.path(), |root| {
        write(&root.join("packages/util/index.js"), "exports.v = 1;\n");
        let gi = std::fs::read_to_string(root.join(".gitignore")).unwrap();
        write(&root.join(".gitignore"), &format!("{gi}node_modules/\n"));
    });
    write(&root.join("node_modules/dep/index.js"), "dep\n");
    std::fs::create_dir_all(root.join("node_modules/@acme")).unwrap();
    std::os::unix::fs::symlink("../../packages/util", root.join("node_modules/@acme/util"))
        .unwrap();
    let copy = CleanCopy {
        root: root.clone(),
        dir: tmp.path().join("copy"),
    };
    let carry = ["node_modules".to_string()];
    let real = |p: std::path::PathBuf| p.canonicalize().unwrap();
    for _ in 0..2 {
        copy.refresh(None, &carry).unwrap();
        assert_eq!(
            real(copy.dir.join("node_modules/@acme/util")),
            real(copy.dir.join("packages/util"))
        );
        assert_eq!(
            real(copy.dir.join("node_modules/dep")),
            real(root.join("node_modules/dep"))
        );
    }
    // The user's install is as it was.
    assert_eq!(
        real(root.join("node_modules/@acme/util")),
        real(root.join("packages/util"))
    );
    assert!(
        std::fs::symlink_metadata(root.join("node_modules"))
            .unwrap()
            .is_dir()
    );
}
