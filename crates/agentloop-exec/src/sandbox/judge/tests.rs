#[test]
fn only_the_kept_paths_stay_writable() {
    let os = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
    // A value that reads like an option, the paths kept, one more writable path,
    // and the command's own words after `--`.
    let prefix = os(&[
        "bwrap",
        "--setenv",
        "X",
        "--bind",
        "--bind",
        "/copy",
        "/copy",
        "--bind",
        "/shared",
        "/shared",
        "--ro-bind",
        "/",
        "/",
        "--bind",
        "/reports",
        "/reports",
        "--",
        "sh",
        "--bind",
        "/a",
        "/a",
    ]);
    let sealed = writable_only(&prefix, &[Path::new("/copy"), Path::new("/reports")]);
    let mut expected = prefix.clone();
    expected[7] = "--ro-bind".into();
    assert_eq!(sealed, expected);
    assert!(writable_only(&[], &[]).is_empty());
}

use super::*;

/// A check's code can leave a `__pycache__` the next check's first step must not
/// leave behind: a directory made read-only (which a user who is not root cannot
/// empty), a link to bytecode elsewhere in the copy (which Python follows), a
/// file. Each goes, as the user the checks run as (`nobody` here when the tests
/// run as root); one that cannot go (a directory of another user's) stops the
/// check before it runs.
#[test]
fn a_checks_first_step_leaves_no_pycache_or_does_not_run_the_check() {
    let root =
        std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    let t = tempfile::tempdir().unwrap();
    let copy = t.path().join("copy");
    for d in [
        "a/__pycache__",
        "b",
        "evil",
        "c",
        "lib/pkg/__pycache__",
        "build/__pycache__",
    ] {
        std::fs::create_dir_all(copy.join(d)).unwrap();
    }
    std::fs::write(copy.join("a/__pycache__/m.cpython-311.pyc"), "x").unwrap();
    std::fs::write(copy.join("lib/pkg/__pycache__/m.cpython-311.pyc"), "x").unwrap();
    std::fs::write(copy.join("evil/m.cpython-311.pyc"), "x").unwrap();
    std::os::unix::fs::symlink("../evil", copy.join("b/__pycache__")).unwrap();
    std::fs::write(copy.join("c/__pycache__"), "x").unwrap();
    let run_step = |dir: &Path, step: &str| {
        let mut c = std::process::Command::new(if root { "setpriv" } else { "sh" });
        if root {
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "sh"]);
        }
        c.args(["-c", step, "sh", "echo", "ran"])
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let own = |dir: &Path| {
        if root {
            for e in walk(dir) {
                std::os::unix::fs::lchown(&e, Some(65534), Some(65534)).unwrap();
            }
        }
    };
    own(t.path());
    use std::os::unix::fs::PermissionsExt;
    let run = |dir: &Path| run_step(dir, FORGET_BYTECODE);
    let mode = |path: &str, mode: u32| {
        std::fs::set_permissions(copy.join(path), std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // Read-only; one not to be looked into (Python needs only to enter it); one
    // whose parent is read-only.
    mode("a/__pycache__", 0o555);
    mode("lib", 0o311);
    mode("build", 0o555);
    let out = run(&copy);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n", "{out:?}");
    let mut left: Vec<String> = walk(&copy)
        .iter()
        .map(|p| p.strip_prefix(&copy).unwrap().display().to_string())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "",
            "a",
            "b",
            "build",
            "c",
            "evil",
            "evil/m.cpython-311.pyc",
            "lib",
            "lib/pkg"
        ]
    );
    if root {
        // Another user's directory, which `nobody` cannot empty.
        let theirs = copy.join("d/__pycache__");
        std::fs::create_dir_all(&theirs).unwrap();
        std::os::unix::fs::lchown(copy.join("d"), Some(65534), Some(65534)).unwrap();
        std::fs::write(theirs.join("m.cpython-311.pyc"), "x").unwrap();
        let out = run(&copy);
        assert_eq!(out.status.code(), Some(125), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("./d/__pycache__"), "{said}");
        // In the project itself (which passes nothing), a person's stays and the
        // check runs.
        let out = run_step(&copy, FORGET_BYTECODE_IN_PROJECT);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n", "{out:?}");
    }
}

/// Every path under `dir`, `dir` too, not through links.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn checks_are_unconfined_only_when_said_or_where_bubblewrap_fails() {
    let mut cfg = SandboxConfig {
        bwrap: "/nonexistent/bwrap".into(),
        ..SandboxConfig::default()
    };
    let why = unconfined(&cfg).unwrap();
    assert!(why.contains("is not installed"), "{why}");
    assert!(
        wrap(
            &cfg,
            Path::new("/p"),
            Path::new("/c"),
            Path::new("/r"),
            &WarmCaches::Fresh
        )
        .is_empty()
    );
    cfg.verify = ConfineChecks::Always;
    assert_eq!(unconfined(&cfg), None);
    cfg.verify = ConfineChecks::Never;
    assert_eq!(
        unconfined(&cfg).as_deref(),
        Some("`[sandbox] verify = false`")
    );
}

/// A check's Go build cache and Jest's cache start as copies of the seed the
/// baseline warmed, and what a check writes there reaches neither the seed nor the
/// next check.
#[test]
fn a_checks_build_caches_are_copies_of_the_baseline_s() {
    let cfg = SandboxConfig::default();
    works(&cfg.bwrap).expect("this test needs bubblewrap");
    let dir = tempfile::tempdir().unwrap();
    let (copy, reports, seed) = (
        dir.path().join("copy"),
        dir.path().join("reports"),
        dir.path().join("seed"),
    );
    std::fs::create_dir_all(&copy).unwrap();
    let run = |warm: &WarmCaches, script: &str| {
        let prefix = wrap(&cfg, &copy, &copy, &reports, warm);
        std::process::Command::new(&prefix[0])
            .args(&prefix[1..])
            .args(["sh", "-c", script])
            .current_dir(&copy)
            .status()
            .unwrap()
            .success()
    };
    // Jest's, where Jest itself would put it: `/tmp/jest_` and the user id in
    // base 36 (0 is root's).
    let jest = jest_cache();
    let uid = std::fs::metadata("/proc/self").map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid()
    });
    if uid.unwrap() == 0 {
        assert_eq!(jest, "/tmp/jest_0");
    }
    for (name, cache) in [("go-build", "$GOCACHE".to_string()), ("jest", jest)] {
        // The baseline's check writes the seed itself.
        assert!(
            run(
                &WarmCaches::Warms(seed.clone()),
                &format!("echo warm > \"{cache}/entry\"")
            ),
            "{name}"
        );
        let entry = seed.join(name).join("entry");
        assert_eq!(std::fs::read_to_string(&entry).unwrap(), "warm\n", "{name}");
        // A later check starts from a copy, and plants into its own.
        let from = WarmCaches::From(seed.clone());
        assert!(
            run(
                &from,
                &format!(
                    "grep -q warm \"{cache}/entry\" && echo forged > \"{cache}/entry\" && echo x > \"{cache}/plant\""
                )
            ),
            "{name}"
        );
        assert_eq!(std::fs::read_to_string(&entry).unwrap(), "warm\n", "{name}");
        assert!(!seed.join(name).join("plant").exists(), "{name}");
        assert!(
            run(
                &from,
                &format!("grep -q warm \"{cache}/entry\" && test ! -e \"{cache}/plant\"")
            ),
            "{name}"
        );
        // Where nothing warmed it, a fresh one.
        let none = WarmCaches::From(dir.path().join("none"));
        assert!(
            run(
                &none,
                &format!("test -z \"$(ls -A \"{cache}\" 2>/dev/null)\"")
            ),
            "{name}"
        );
    }
}

/// A key one check leaves in the kernel's user keyring is not there for the next
/// check, nor on the host, even as root (where bubblewrap makes no user namespace
/// unless told to): the stop-74 attack carried a held-out test out that way.
#[test]
fn a_key_a_check_leaves_in_the_user_keyring_reaches_no_other() {
    let cfg = SandboxConfig::default();
    works(&cfg.bwrap).expect("this test needs bubblewrap");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    // add_key("user", NAME, "secret", KEY_SPEC_USER_KEYRING); then whether the
    // user keyring holds a key of that name (keyctl READ, DESCRIBE).
    let script = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
name = sys.argv[2].encode()
if sys.argv[1] == "add":
    sys.exit(0 if libc.syscall(248, b"user", name, b"secret", 6, -4) > 0 else 1)
buf = ctypes.create_string_buffer(65536)
n = libc.syscall(250, 11, -4, buf, 65536)
for i in range(0, max(n, 0), 4):
    k = int.from_bytes(buf.raw[i:i + 4], "little")
    d = ctypes.create_string_buffer(512)
    libc.syscall(250, 6, k, d, 512)
    if name in d.value:
        if len(sys.argv) > 3:
            libc.syscall(250, 9, k, -4)
        sys.exit(0)
sys.exit(1)
"#;
    std::fs::write(copy.join("keys.py"), script).unwrap();
    let name = format!("agentloop-test-{}", std::process::id());
    let run = |confined: bool, args: &[&str]| {
        let prefix = if confined {
            wrap(
                &cfg,
                &copy,
                &copy,
                &dir.path().join("reports"),
                &WarmCaches::Fresh,
            )
        } else {
            Vec::new()
        };
        let mut c = match prefix.split_first() {
            Some((program, rest)) => {
                let mut c = std::process::Command::new(program);
                c.args(rest).arg("python3");
                c
            }
            None => std::process::Command::new("python3"),
        };
        c.arg(copy.join("keys.py"))
            .args(args)
            .current_dir(&copy)
            .status()
            .unwrap()
            .success()
    };
    assert!(run(true, &["add", &name]), "the check adds its key");
    let seen_by_next = run(true, &["has", &name]);
    let seen_by_host = run(false, &["has", &name, "remove"]);
    assert!(!seen_by_next, "the next check read the key");
    assert!(!seen_by_host, "the host's keyring holds the key");
}
