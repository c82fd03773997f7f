use std::time::{Duration, SystemTime};

use super::*;

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
}

/// Bytecode with a header checked by time and size (flags 0), as CPython writes it.
fn timed_pyc(body: &[u8]) -> Vec<u8> {
    let mut b = vec![0xa7, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0];
    b.extend_from_slice(body);
    b
}

/// [`timed_pyc`] compiled from `source` as it is now.
fn timed_for(source: &Path, body: &[u8]) -> Vec<u8> {
    let meta = fs::metadata(source).unwrap();
    let mut b = timed_pyc(body);
    b[8..12].copy_from_slice(&(meta.mtime() as u32).to_le_bytes());
    b[12..16].copy_from_slice(&(meta.len() as u32).to_le_bytes());
    b
}

/// Bytecode checked by its source's hash (flags 3), as pytest 9 writes it.
fn hashed_pyc(body: &[u8]) -> Vec<u8> {
    let mut b = vec![0xa7, 0x0d, 0x0d, 0x0a, 3, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9];
    b.extend_from_slice(body);
    b
}

/// Where a check in `copy` wrote the bytecode of its `rel` directory.
fn written(_seed: &Path, copy: &Path, rel: &str) -> PathBuf {
    copy.join(rel).join("__pycache__")
}

/// Where the bytecode of the copy's `rel` file is staged.
fn staged_at(stage_at: &Path, _copy: &Path, rel: &str) -> PathBuf {
    stage_at.join(rel)
}

/// The copy's `__pycache__` gone, as a confined check's first step leaves it.
fn fresh(copy: &Path) -> io::Result<()> {
    for e in fs::read_dir(copy)?.flatten() {
        if e.file_type()?.is_dir() {
            if e.file_name() == "__pycache__" {
                fs::remove_dir_all(e.path())?;
            } else {
                fresh(&e.path())?;
            }
        }
    }
    Ok(())
}

/// A while before now: sources older than the check.
fn before() -> SystemTime {
    SystemTime::now() + Duration::from_secs(1)
}

/// A copy as a baseline's check left it: two modules compiled, a test module
/// rewritten by pytest, bytecode of a source that is not there.
fn compiled_copy(copy: &Path, seed: &Path) {
    put(copy, "pkg/__init__.py", b"def same(x):\n    return x\n");
    put(
        copy,
        "tests/test_a.py",
        b"import pkg\n\ndef test_a():\n    assert pkg.same(1) == 1\n",
    );
    fresh(copy).unwrap();
    put(
        &written(seed, copy, "pkg"),
        "__init__.cpython-311.pyc",
        &timed_for(&copy.join("pkg/__init__.py"), b"pkg"),
    );
    put(
        &written(seed, copy, "tests"),
        "test_a.cpython-311-pytest-9.2.0.pyc",
        &hashed_pyc(b"test_a"),
    );
    put(
        &written(seed, copy, "tests"),
        "gone.cpython-311.pyc",
        &timed_pyc(b"gone"),
    );
}

/// The staged files, relative to the copy's place in `stage`.
fn staged(stage_at: &Path, copy: &Path) -> Vec<String> {
    let base = staged_at(stage_at, copy, "");
    let mut out = Vec::new();
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                walk(base, &e.path(), out);
            } else {
                out.push(e.path().strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    walk(&base, &base, &mut out);
    out.sort();
    out
}

fn places() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let copy = t.path().join("c");
    let seed = t.path().join("c.python");
    let stage_at = t.path().join("c.python.stage");
    (t, copy, seed, stage_at)
}

#[test]
fn bytecode_goes_back_only_beside_the_very_sources_it_was_compiled_from() {
    let (t, copy, seed, stage_at) = places();
    compiled_copy(&copy, &seed);
    assert_eq!(keep(&copy, &seed, before()).unwrap(), 2);
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 2);
    let test_pyc = "tests/__pycache__/test_a.cpython-311-pytest-9.2.0.pyc";
    assert_eq!(
        staged(&stage_at, &copy),
        ["pkg/__pycache__/__init__.cpython-311.pyc", test_pyc]
    );
    // A header checked by time and size carries the copy's source's.
    let source = fs::metadata(copy.join("pkg/__init__.py")).unwrap();
    let pyc = fs::read(staged_at(
        &stage_at,
        &copy,
        "pkg/__pycache__/__init__.cpython-311.pyc",
    ))
    .unwrap();
    assert_eq!(pyc[8..12], (source.mtime() as u32).to_le_bytes());
    assert_eq!(pyc[12..16], (source.len() as u32).to_le_bytes());
    assert_eq!(&pyc[16..], b"pkg");
    // A hash-checked one is left as it is.
    let kept = fs::read(staged_at(&stage_at, &copy, test_pyc)).unwrap();
    assert_eq!(kept, hashed_pyc(b"test_a"));

    // A source changed to the same size and time: its bytecode stays out.
    let old = fs::metadata(copy.join("tests/test_a.py")).unwrap();
    put(
        &copy,
        "tests/test_a.py",
        b"import pkg\n\ndef test_a():\n    assert pkg.same(1) == 2\n",
    );
    let f = fs::File::options()
        .write(true)
        .open(copy.join("tests/test_a.py"))
        .unwrap();
    f.set_modified(old.modified().unwrap()).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    assert_eq!(
        staged(&stage_at, &copy),
        ["pkg/__pycache__/__init__.cpython-311.pyc"]
    );

    // A source that is a link to the same bytes, a directory that is a link: nothing
    // goes there.
    put(
        t.path(),
        "elsewhere/test_a.py",
        b"import pkg\n\ndef test_a():\n    assert pkg.same(1) == 1\n",
    );
    fs::remove_file(copy.join("tests/test_a.py")).unwrap();
    std::os::unix::fs::symlink(
        t.path().join("elsewhere/test_a.py"),
        copy.join("tests/test_a.py"),
    )
    .unwrap();
    let moved = t.path().join("pkg-real");
    fs::rename(copy.join("pkg"), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, copy.join("pkg")).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 0);
    assert!(staged(&stage_at, &copy).is_empty());
}

#[test]
fn a_name_that_fits_several_sources_is_the_bytecode_of_none() {
    let (_t, copy, seed, stage_at) = places();
    // `m.v2.py` alone: its bytecode is its own.
    put(&copy, "m.v2.py", b"X = 'v2'\n");
    fresh(&copy).unwrap();
    put(
        &written(&seed, &copy, ""),
        "m.v2.cpython-311.pyc",
        &timed_for(&copy.join("m.v2.py"), b"v2"),
    );
    assert_eq!(keep(&copy, &seed, before()).unwrap(), 1);
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    // With `m.py` beside it, the name fits both: staged for neither, whatever bytes
    // `m.py` holds.
    put(&copy, "m.py", b"X = 'v2'\n");
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 0);
    // Nor kept.
    fresh(&copy).unwrap();
    put(
        &written(&seed, &copy, ""),
        "m.v2.cpython-311.pyc",
        &timed_for(&copy.join("m.v2.py"), b"v2"),
    );
    put(
        &written(&seed, &copy, ""),
        "m.cpython-311.pyc",
        &timed_for(&copy.join("m.py"), b"m"),
    );
    assert_eq!(keep(&copy, &seed, before()).unwrap(), 1);
    // `m.v2.py` gone: the name fits `m.py` alone, but was kept for `m.v2.py`.
    fs::remove_file(copy.join("m.v2.py")).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    assert_eq!(staged(&stage_at, &copy), ["__pycache__/m.cpython-311.pyc"]);
}

#[test]
fn bytecode_a_later_keep_leaves_is_staged_only_for_the_source_it_was_compiled_from() {
    let (_t, copy, seed, stage_at) = places();
    put(&copy, "g.py", b"X = 1\n");
    fresh(&copy).unwrap();
    put(
        &written(&seed, &copy, ""),
        "g.cpython-311.pyc",
        &timed_for(&copy.join("g.py"), b"one"),
    );
    keep(&copy, &seed, before()).unwrap();
    // A later check of the baseline's generated `g.py` again, and compiled it under
    // another name only.
    put(&copy, "g.py", b"X = 2\n");
    fresh(&copy).unwrap();
    put(
        &written(&seed, &copy, ""),
        "g.cpython-311-pytest-9.2.0.pyc",
        &hashed_pyc(b"two"),
    );
    keep(&copy, &seed, before()).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    assert_eq!(
        staged(&stage_at, &copy),
        ["__pycache__/g.cpython-311-pytest-9.2.0.pyc"]
    );
}

#[test]
fn a_source_changed_while_the_check_ran_is_not_kept() {
    let (_t, copy, seed, stage_at) = places();
    let since = SystemTime::now() - Duration::from_secs(5);
    put(&copy, "gen.py", b"X = 'generated'\n");
    put(&copy, "old.py", b"X = 'old'\n");
    let f = fs::File::options()
        .write(true)
        .open(copy.join("old.py"))
        .unwrap();
    f.set_modified(since - Duration::from_secs(60)).unwrap();
    fresh(&copy).unwrap();
    put(
        &written(&seed, &copy, ""),
        "gen.cpython-311.pyc",
        &timed_for(&copy.join("gen.py"), b"gen"),
    );
    put(
        &written(&seed, &copy, ""),
        "old.cpython-311.pyc",
        &timed_for(&copy.join("old.py"), b"old"),
    );
    // Bytecode whose recorded time and size are not the source's: compiled from
    // other bytes.
    put(&copy, "stale.py", b"X = 'now'\n");
    let f = fs::File::options()
        .write(true)
        .open(copy.join("stale.py"))
        .unwrap();
    f.set_modified(since - Duration::from_secs(60)).unwrap();
    put(
        &written(&seed, &copy, ""),
        "stale.cpython-311.pyc",
        &timed_pyc(b"stale"),
    );
    assert_eq!(keep(&copy, &seed, since).unwrap(), 1);
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    assert_eq!(
        staged(&stage_at, &copy),
        ["__pycache__/old.cpython-311.pyc"]
    );
}

#[test]
fn a_seed_stages_nothing_for_another_copy_or_a_record_a_kill_left_unwritten() {
    let (t, copy, seed, stage_at) = places();
    compiled_copy(&copy, &seed);
    keep(&copy, &seed, before()).unwrap();
    // Another copy of the same tree: pytest's modules keep the path they were
    // compiled at.
    let other = t.path().join("d");
    put(&other, "pkg/__init__.py", b"def same(x):\n    return x\n");
    assert_eq!(stage(&seed, &other, &stage_at).unwrap(), 0);
    // Killed after a file's bytecode was kept and before its record was: not staged;
    // keeping again mends it.
    fs::remove_file(seed.join("tree/pkg/__pycache__/__init__.cpython-311.pyc.source")).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    compiled_copy(&copy, &seed);
    keep(&copy, &seed, before()).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 2);
    // No seed at all: nothing, and no error.
    assert_eq!(stage(&t.path().join("none"), &copy, &stage_at).unwrap(), 0);
}

#[test]
fn python_runs_the_staged_bytecode_of_a_source_it_still_holds() {
    let (_t, copy, seed, stage_at) = places();
    put(&copy, "m.py", b"X = 'source'\n");
    let python = |args: &[&str]| {
        let out = std::process::Command::new("python3")
            .args(args)
            .current_dir(&copy)
            .env_remove("PYTHONDONTWRITEBYTECODE")
            .env_remove("PYTHONPYCACHEPREFIX")
            .output()
            .expect("python3 runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    python(&["-c", "import m"]);
    keep(&copy, &seed, before()).unwrap();
    // The kept bytecode says something else than the source: the test can tell
    // which one ran.
    let kept = fs::read_dir(seed.join("tree/__pycache__"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "pyc"))
        .unwrap();
    let kept = kept.display().to_string();
    python(&[
        "-c",
        &format!(
            "import marshal; b = open({kept:?}, 'rb').read(); c = compile(\"X = 'kept'\", 'm.py', 'exec'); open({kept:?}, 'wb').write(b[:16] + marshal.dumps(c))"
        ),
    ]);
    // The copy is written again (a later tree, the same bytes): another time.
    fresh(&copy).unwrap();
    fs::remove_file(copy.join("m.py")).unwrap();
    put(&copy, "m.py", b"X = 'source'\n");
    let f = fs::File::options()
        .write(true)
        .open(copy.join("m.py"))
        .unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 30))
        .unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    copy_tree(&stage_at, &copy);
    assert_eq!(python(&["-c", "import m; print(m.X)"]), "kept\n");
    // A source of other bytes: compiled from the source.
    fresh(&copy).unwrap();
    put(&copy, "m.py", b"X = 'source2'\n");
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 0);
    assert_eq!(python(&["-c", "import m; print(m.X)"]), "source2\n");
}

fn copy_tree(from: &Path, to: &Path) {
    for e in fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            fs::create_dir_all(&dest).unwrap();
            copy_tree(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).unwrap();
        }
    }
}
