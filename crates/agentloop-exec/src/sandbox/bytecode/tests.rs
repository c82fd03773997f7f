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

/// Bytecode checked by its source's hash (flags 3), as pytest 9 writes it.
fn hashed_pyc(body: &[u8]) -> Vec<u8> {
    let mut b = vec![0xa7, 0x0d, 0x0d, 0x0a, 3, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9];
    b.extend_from_slice(body);
    b
}

/// A copy as the baseline's check left it: two modules compiled, a test module
/// rewritten by pytest, bytecode under `.git` and one without its source.
fn compiled_copy(copy: &Path) {
    put(copy, "pkg/__init__.py", b"def same(x):\n    return x\n");
    put(
        copy,
        "pkg/__pycache__/__init__.cpython-311.pyc",
        &timed_pyc(b"pkg"),
    );
    put(
        copy,
        "tests/test_a.py",
        b"import pkg\n\ndef test_a():\n    assert pkg.same(1) == 1\n",
    );
    put(
        copy,
        "tests/__pycache__/test_a.cpython-311-pytest-9.2.0.pyc",
        &hashed_pyc(b"test_a"),
    );
    put(
        copy,
        "tests/__pycache__/gone.cpython-311.pyc",
        &timed_pyc(b"gone"),
    );
    put(
        copy,
        ".git/x/__pycache__/y.cpython-311.pyc",
        &timed_pyc(b"git"),
    );
    put(copy, ".git/x/y.py", b"");
}

/// The staged files, relative to `stage`.
fn staged(stage: &Path) -> Vec<String> {
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
    walk(stage, stage, &mut out);
    out.sort();
    out
}

#[test]
fn bytecode_goes_back_only_beside_the_very_sources_it_was_compiled_from() {
    let t = tempfile::tempdir().unwrap();
    let (copy, seed, stage_at) = (
        t.path().join("c"),
        t.path().join("c.python"),
        t.path().join("s"),
    );
    compiled_copy(&copy);
    assert_eq!(keep(&copy, &seed).unwrap(), 2);
    // The check after: its `__pycache__` gone, as a confined check starts.
    fs::remove_dir_all(copy.join("pkg/__pycache__")).unwrap();
    fs::remove_dir_all(copy.join("tests/__pycache__")).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 2);
    assert_eq!(
        staged(&stage_at),
        [
            "pkg/__pycache__/__init__.cpython-311.pyc",
            "tests/__pycache__/test_a.cpython-311-pytest-9.2.0.pyc"
        ]
    );
    // A header checked by time and size carries the copy's source's.
    let source = fs::metadata(copy.join("pkg/__init__.py")).unwrap();
    let pyc = fs::read(stage_at.join("pkg/__pycache__/__init__.cpython-311.pyc")).unwrap();
    assert_eq!(pyc[8..12], (source.mtime() as u32).to_le_bytes());
    assert_eq!(pyc[12..16], (source.len() as u32).to_le_bytes());
    assert_eq!(&pyc[16..], b"pkg");
    // A hash-checked one is left as it is.
    let test_pyc = "tests/__pycache__/test_a.cpython-311-pytest-9.2.0.pyc";
    assert_eq!(
        fs::read(stage_at.join(test_pyc)).unwrap(),
        hashed_pyc(b"test_a")
    );

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
        staged(&stage_at),
        ["pkg/__pycache__/__init__.cpython-311.pyc"]
    );

    // A source that is a link to the same bytes, a directory that is a link, a
    // `__pycache__` that is a link: nothing goes there.
    let keep_bytes = fs::read(seed.join("tree/tests/test_a.py")).unwrap();
    put(t.path(), "elsewhere/test_a.py", &keep_bytes);
    fs::remove_file(copy.join("tests/test_a.py")).unwrap();
    std::os::unix::fs::symlink(
        t.path().join("elsewhere/test_a.py"),
        copy.join("tests/test_a.py"),
    )
    .unwrap();
    fs::create_dir_all(copy.join("pkg/__pycache__")).unwrap();
    fs::remove_dir_all(copy.join("pkg/__pycache__")).unwrap();
    std::os::unix::fs::symlink(t.path().join("elsewhere"), copy.join("pkg/__pycache__")).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 0);
    fs::remove_file(copy.join("pkg/__pycache__")).unwrap();
    let moved = t.path().join("pkg-real");
    fs::rename(copy.join("pkg"), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, copy.join("pkg")).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 0);
    assert!(staged(&stage_at).is_empty());
}

#[test]
fn a_seed_stages_nothing_for_another_copy_or_a_source_a_kill_left_unwritten() {
    let t = tempfile::tempdir().unwrap();
    let (copy, seed, stage_at) = (
        t.path().join("c"),
        t.path().join("c.python"),
        t.path().join("s"),
    );
    compiled_copy(&copy);
    keep(&copy, &seed).unwrap();
    // Another copy of the same tree: pytest's modules keep the path they were
    // compiled at.
    let other = t.path().join("d");
    compiled_copy(&other);
    assert_eq!(stage(&seed, &other, &stage_at).unwrap(), 0);
    // Killed after a module's bytecode was kept and before its source was: the
    // bytecode is not put back; keeping again mends it.
    fs::remove_file(seed.join("tree/pkg/__init__.py")).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    keep(&copy, &seed).unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 2);
    // No seed at all: nothing, and no error.
    assert_eq!(stage(&t.path().join("none"), &copy, &stage_at).unwrap(), 0);
}

#[test]
fn python_runs_the_staged_bytecode_of_a_source_it_still_holds() {
    let t = tempfile::tempdir().unwrap();
    let (copy, seed, stage_at) = (
        t.path().join("c"),
        t.path().join("c.python"),
        t.path().join("s"),
    );
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
    keep(&copy, &seed).unwrap();
    // The kept bytecode says something else than the source: the test can tell
    // which one ran.
    let kept = fs::read_dir(seed.join("tree/__pycache__"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    python(&[
        "-c",
        &format!(
            "import marshal; b = open({:?}, 'rb').read(); c = compile(\"X = 'kept'\", 'm.py', 'exec'); open({:?}, 'wb').write(b[:16] + marshal.dumps(c))",
            kept.display().to_string(),
            kept.display().to_string()
        ),
    ]);
    // The copy is written again (a later tree, the same bytes): a new time.
    fs::remove_dir_all(copy.join("__pycache__")).unwrap();
    fs::remove_file(copy.join("m.py")).unwrap();
    put(&copy, "m.py", b"X = 'source'\n");
    let f = fs::File::options()
        .write(true)
        .open(copy.join("m.py"))
        .unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30))
        .unwrap();
    assert_eq!(stage(&seed, &copy, &stage_at).unwrap(), 1);
    copy_tree(&stage_at, &copy);
    assert_eq!(python(&["-c", "import m; print(m.X)"]), "kept\n");
    // A source of other bytes: compiled from the source.
    fs::remove_dir_all(copy.join("__pycache__")).unwrap();
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
