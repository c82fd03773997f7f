//! The git module's tests.

use super::*;

#[test]
fn versions_are_read() {
    assert_eq!(parse_version("git version 2.47.3\n"), Some((2, 47)));
    assert_eq!(parse_version("git version 2.39.5"), Some((2, 39)));
    assert_eq!(parse_version("git version 2.50.1.windows.1"), Some((2, 50)));
    assert_eq!(parse_version("nonsense"), None);
}

#[test]
fn the_persons_identity_is_the_repositorys_last_word_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run(d, &["init", "-q"]).unwrap();
    let set = |args: &[&str]| {
        let st = Command::new("git")
            .arg("config")
            .args(args)
            .current_dir(d)
            .status()
            .unwrap();
        assert!(st.success());
    };
    set(&["user.name", "A Person"]);
    set(&["user.email", "a@example.org"]);
    // A second value: the last one is what `git config --get` gives.
    set(&["--add", "user.name", "A. Person"]);
    let who = Some(("A. Person".to_string(), "a@example.org".to_string()));
    assert_eq!(read_identity(d), who);
    assert_eq!(user_identity(d), who);
    // A driver commits each task as the same person.
    set(&["--replace-all", "user.name", "Someone Else"]);
    assert_eq!(user_identity(d), who);
    assert_eq!(read_identity(d).unwrap().0, "Someone Else");
    // A directory found to be a work tree is one for the rest of the process.
    assert!(is_repo(d));
    std::fs::remove_dir_all(d.join(".git")).unwrap();
    assert!(is_repo(d));
    assert!(!is_repo(&d.join("nowhere")));
}

#[test]
fn an_answer_longer_than_a_pipe_holds_while_the_question_is_written() {
    // 5,000 paths in (1 MB), 5,000 hashes out (205 KB): written all before
    // reading, both pipes filled and git and agentloop waited on each other for
    // good (a surface of 20,000 files was never recorded).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "x").unwrap();
    run(dir.path(), &["init", "-q"]).unwrap();
    let mut c = git_command(dir.path());
    c.args(["hash-object", "--no-filters", "--stdin-paths"]);
    let path = format!("{}f\n", "./".repeat(100));
    let out = run_git(c, Some(path.repeat(5000).as_bytes())).unwrap();
    assert_eq!(out.len(), 5000 * 41);
}

/// A repository inside the project, known to the index as a gitlink, whose filter
/// would run were git to look inside it: agentloop's `add -A` (a commit, a
/// snapshot) leaves it out, and the filter never runs.
#[test]
fn adding_everything_does_not_look_inside_an_embedded_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mark = crate::testing::embedded_repository_with_a_filter(root);
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    commit_all(root, "work").unwrap();
    assert!(!mark.exists(), "the embedded repository's filter ran");
    let files = run(root, &["ls-files"]).unwrap();
    assert!(files.contains("a.txt"), "{files}");
}

/// A dirty path's content is read as git would see it, and nothing read can hold
/// the snapshot: a link to `/dev/zero` is its target's name, a FIFO nothing, a large
/// file its metadata; an ordinary file its bytes.
#[test]
fn a_dirty_paths_content_is_never_read_for_good() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::os::unix::fs::symlink("/dev/zero", d.join("zero")).unwrap();
    assert_eq!(
        content_crc(&d.join("zero")),
        Some(crc32fast::hash(b"/dev/zero"))
    );
    let made = std::process::Command::new("mkfifo")
        .arg(d.join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    assert_eq!(content_crc(&d.join("fifo")), None);
    std::fs::write(d.join("small"), "abc").unwrap();
    assert_eq!(content_crc(&d.join("small")), Some(crc32fast::hash(b"abc")));
    let big = std::fs::File::create(d.join("big")).unwrap();
    big.set_len(8 << 30).unwrap();
    let t0 = std::time::Instant::now();
    let first = content_crc(&d.join("big"));
    assert!(first.is_some());
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t0.elapsed()
    );
    std::fs::File::options()
        .write(true)
        .open(d.join("big"))
        .unwrap()
        .set_len(9 << 30)
        .unwrap();
    assert_ne!(content_crc(&d.join("big")), first, "a change of it is seen");
}

/// What `dirs` finds on the file system is what git answers, for a repository and for
/// a linked worktree, and with a `commondir` planted in the worktree's git directory
/// (agentloop's git is pinned to the repository's own common directory).
#[test]
fn the_git_directories_found_without_git_are_gits_own() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    run(&repo, &["init", "-q"]).unwrap();
    std::fs::write(repo.join("f"), "x").unwrap();
    run(&repo, &["add", "f"]).unwrap();
    let mut c = git_command(&repo);
    c.args(["commit", "-q", "-m", "one"]);
    set_identity(&mut c, None);
    run_git(c, None).unwrap();
    let wt = dir.path().join("wt");
    run(
        &repo,
        &["worktree", "add", "-q", "--detach", wt.to_str().unwrap()],
    )
    .unwrap();
    let asked = |d: &Path| -> GitDirs {
        let ask = |what: &[&str]| {
            let mut args = vec!["rev-parse", "--path-format=absolute"];
            args.extend(what);
            let said = run(d, &args).unwrap();
            Path::new(&said)
                .canonicalize()
                .unwrap_or_else(|_| said.into())
        };
        GitDirs {
            own: ask(&["--git-dir"]),
            common: ask(&["--git-common-dir"]),
            index: ask(&["--git-path", "index"]),
        }
    };
    for d in [&repo, &wt, &wt.join("sub")] {
        std::fs::create_dir_all(d).unwrap();
        assert_eq!(dirs(d), Some(asked(d)), "{}", d.display());
        assert!(is_repo(d));
    }
    let own = dirs(&wt).unwrap().own;
    std::fs::write(
        own.join("commondir"),
        dir.path().join("elsewhere").as_os_str().as_encoded_bytes(),
    )
    .unwrap();
    assert_eq!(dirs(&wt).unwrap().common, asked(&repo).common);
    assert_eq!(dirs(&wt), Some(asked(&wt)));
    assert_eq!(dirs(dir.path()), None);
}

/// A `.git` file git refuses is refused here too, not passed over for a repository
/// above it (a dotfiles repository in the home directory): garbage, a `gitdir:`
/// without its space or its path, one naming a directory without a `HEAD`, a FIFO.
#[test]
fn a_git_file_git_refuses_finds_no_repository_above_it() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), &["init", "-q"]).unwrap();
    let wt = dir.path().join("wt");
    std::fs::create_dir(&wt).unwrap();
    let absent = dir.path().join("nowhere/worktrees/x");
    for text in [
        "garbage".to_string(),
        String::new(),
        "gitdir:x".to_string(),
        "gitdir: ".to_string(),
        format!("gitdir: {}", absent.display()),
    ] {
        std::fs::write(wt.join(".git"), &text).unwrap();
        assert_eq!(dirs(&wt), None, "{text:?}");
        assert!(run(&wt, &["rev-parse", "--git-dir"]).is_err(), "{text:?}");
    }
    std::fs::remove_file(wt.join(".git")).unwrap();
    let made = Command::new("mkfifo")
        .arg(wt.join(".git"))
        .status()
        .unwrap();
    assert!(made.success());
    assert_eq!(dirs(&wt), None);
    // A `.git` directory that is no repository is passed over, as git does.
    std::fs::remove_file(wt.join(".git")).unwrap();
    std::fs::create_dir(wt.join(".git")).unwrap();
    assert_eq!(
        dirs(&wt).map(|d| d.common),
        Some(dir.path().canonicalize().unwrap().join(".git"))
    );
}

/// `git rev-parse --verify -q HEAD` in `w`, plain git's answer.
fn gits_head(w: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--verify", "-q", "HEAD"])
        .current_dir(w)
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `git ARGS` in `d` as a test's person: its output, trimmed.
fn in_repo(d: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(d)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// HEAD read from the files is what `git rev-parse --verify -q HEAD` says, in every
/// shape a repository's refs take as git writes them.
#[test]
fn head_read_from_the_files_is_gits_answer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let g = |args: &[&str]| in_repo(d, args);
    let read = |w: &Path, what: &str| {
        let id = gits_head(w).expect(what);
        assert_eq!(head::head_on_disk(w), Some(id.clone()), "{what}");
        assert_eq!(head(w), Some(id), "{what}");
    };
    g(&["init", "-q", "-b", "main"]);
    assert_eq!(
        head::head_on_disk(d),
        None,
        "a branch not yet born: git says"
    );
    assert_eq!(head(d), None);
    g(&["commit", "-q", "--allow-empty", "-m", "one"]);
    read(d, "a loose branch");
    g(&["pack-refs", "--all"]);
    assert!(!d.join(".git/refs/heads/main").exists());
    read(d, "a packed branch");
    g(&["checkout", "-q", "-b", "topic/a"]);
    g(&["commit", "-q", "--allow-empty", "-m", "two"]);
    read(d, "a branch with a slash");
    g(&["tag", "-a", "-m", "t", "v1"]);
    g(&["pack-refs", "--all"]);
    read(d, "a packed branch beside a peeled tag");
    g(&["checkout", "-q", "--detach", "main"]);
    read(d, "detached");
    // A branch named by another (a symbolic ref): followed.
    g(&["symbolic-ref", "refs/heads/alias", "refs/heads/topic/a"]);
    g(&["symbolic-ref", "HEAD", "refs/heads/alias"]);
    read(d, "a symbolic branch");
    // A worktree's own HEAD.
    let wt = d.join("wt");
    g(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        wt.to_str().unwrap(),
        "main",
    ]);
    read(&wt, "a worktree");
    g(&["checkout", "-q", "main"]);
    read(d, "back on main");
    // SHA-256 ids are read; a ref store other than files is git's.
    for (format, read_here) in [
        ("--object-format=sha256", true),
        ("--ref-format=reftable", false),
    ] {
        let other = tempfile::tempdir().unwrap();
        let o = other.path();
        in_repo(o, &["init", "-q", format]);
        in_repo(o, &["commit", "-q", "--allow-empty", "-m", "one"]);
        let id = gits_head(o).unwrap();
        assert_eq!(head::head_on_disk(o).is_some(), read_here, "{format}");
        assert_eq!(head(o), Some(id), "{format}");
    }
}

/// What an attack found where reading the files differed from git, each now git's to
/// answer (or read the same): HEAD or a ref not as git writes it, names git refuses,
/// a branch not yet born beside a ref named HEAD, a chain of symbolic refs as deep as
/// git goes, `packed-refs` out of order or with other line ends, repository formats
/// and extensions git checks, a repository git's discovery takes otherwise, a
/// worktree whose `.git` file or `commondir` git cannot follow, FIFOs.
#[test]
fn where_the_files_could_say_otherwise_than_git_git_is_asked() {
    let fresh = || {
        let dir = tempfile::tempdir().unwrap();
        in_repo(dir.path(), &["init", "-q", "-b", "main"]);
        in_repo(dir.path(), &["commit", "-q", "--allow-empty", "-m", "one"]);
        dir
    };
    // Never an answer git would not give.
    let agrees = |w: &Path, what: &str| {
        if let Some(id) = head::head_on_disk(w) {
            assert_eq!(Some(id), gits_head(w), "{what}");
        }
    };
    let asks = |w: &Path, what: &str| {
        assert_eq!(head::head_on_disk(w), None, "{what}");
    };
    let write = |p: &Path, text: &str| std::fs::write(p, text).unwrap();
    for head_text in [
        "ref: refs/heads/main \n",
        "ref: refs/heads/main\r\n",
        "ref: refs/heads/main\n\n",
        "ref:refs/heads/main\n",
    ] {
        let r = fresh();
        write(&r.path().join(".git/HEAD"), head_text);
        asks(r.path(), head_text);
    }
    for name in [
        "a b", "a..b", "a.", "a~1", "a*", "a:b", "a@{b", ".a", "a.lock", "A\u{e9}",
    ] {
        let r = fresh();
        let git = r.path().join(".git");
        let _ = std::fs::copy(
            git.join("refs/heads/main"),
            git.join("refs/heads").join(name),
        );
        write(&git.join("HEAD"), &format!("ref: refs/heads/{name}\n"));
        asks(r.path(), name);
        agrees(r.path(), name);
    }
    {
        // A branch not yet born, and a ref named HEAD git falls back to.
        let r = fresh();
        in_repo(r.path(), &["update-ref", "refs/tags/HEAD", "main"]);
        in_repo(r.path(), &["symbolic-ref", "HEAD", "refs/heads/none"]);
        asks(r.path(), "unborn beside refs/tags/HEAD");
        assert_eq!(head(r.path()), gits_head(r.path()));
    }
    {
        // Five symbolic refs, the last packed: past what is followed here.
        let r = fresh();
        let id = in_repo(r.path(), &["rev-parse", "HEAD"]);
        let git = r.path().join(".git");
        for n in 1..5 {
            write(
                &git.join(format!("refs/heads/r{n}")),
                &format!("ref: refs/heads/r{}\n", n + 1),
            );
        }
        write(
            &git.join("packed-refs"),
            &format!("# pack-refs with: peeled fully-peeled sorted \n{id} refs/heads/r5\n"),
        );
        write(&git.join("HEAD"), "ref: refs/heads/r1\n");
        asks(r.path(), "five hops");
        agrees(r.path(), "five hops");
    }
    // packed-refs out of order, with CRLF, without its last newline.
    for (what, form) in [
        (
            "out of order",
            "# pack-refs with: peeled fully-peeled sorted \n{id} refs/heads/z\n{id} refs/heads/main\n",
        ),
        (
            "crlf",
            "# pack-refs with: peeled fully-peeled sorted \r\n{id} refs/heads/main\r\n",
        ),
        ("no last newline", "{id} refs/heads/main"),
        (
            "named twice",
            "{id} refs/heads/main\n{id} refs/heads/main\n",
        ),
    ] {
        let r = fresh();
        let id = in_repo(r.path(), &["rev-parse", "HEAD"]);
        let git = r.path().join(".git");
        std::fs::remove_file(git.join("refs/heads/main")).unwrap();
        write(&git.join("packed-refs"), &form.replace("{id}", &id));
        asks(r.path(), what);
        agrees(r.path(), what);
    }
    // Repository formats and extensions git checks.
    for (what, set) in [
        ("format 2", ["core.repositoryformatversion", "2"]),
        ("an unknown extension", ["extensions.frobnicate", "true"]),
        ("sha256 in capitals", ["extensions.objectformat", "SHA256"]),
        (
            "worktree configuration",
            ["extensions.worktreeConfig", "true"],
        ),
    ] {
        let r = fresh();
        in_repo(r.path(), &["config", set[0], set[1]]);
        if what != "format 2" {
            in_repo(r.path(), &["config", "core.repositoryformatversion", "1"]);
        }
        asks(r.path(), what);
        agrees(r.path(), what);
    }
    {
        // Discovery: an inner `.git` without objects, one with a dangling HEAD link, a
        // bare repository as the directory asked about.
        let r = fresh();
        let inner = r.path().join("sub");
        std::fs::create_dir_all(inner.join(".git/refs")).unwrap();
        write(&inner.join(".git/HEAD"), "ref: refs/heads/main\n");
        agrees(&inner, "an inner .git without objects");
        std::fs::remove_file(inner.join(".git/HEAD")).unwrap();
        std::os::unix::fs::symlink("refs/heads/new", inner.join(".git/HEAD")).unwrap();
        std::fs::create_dir_all(inner.join(".git/objects")).unwrap();
        asks(&inner, "an inner .git whose HEAD is a dangling link");
        agrees(&inner, "an inner .git whose HEAD is a dangling link");
        let bare = r.path().join("bare.git");
        in_repo(r.path(), &["clone", "-q", "--bare", ".", "bare.git"]);
        asks(&bare, "a bare repository");
    }
    {
        // A worktree's `.git` file with a space too many, and one whose commondir is gone.
        let r = fresh();
        let wt = r.path().join("wt");
        in_repo(
            r.path(),
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                wt.to_str().unwrap(),
                "main",
            ],
        );
        let file = std::fs::read_to_string(wt.join(".git")).unwrap();
        write(&wt.join(".git"), &file.replace("gitdir: ", "gitdir:  "));
        agrees(&wt, "gitdir with two spaces");
        write(&wt.join(".git"), &file);
        let own = r.path().join(".git/worktrees/wt");
        std::fs::remove_file(own.join("commondir")).unwrap();
        asks(&wt, "no commondir");
    }
    {
        // A FIFO where a branch or packed-refs should be is never opened.
        let r = fresh();
        let git = r.path().join(".git");
        let fifo = |p: &Path| {
            let made = Command::new("mkfifo").arg(p).status().unwrap();
            assert!(made.success());
        };
        std::fs::remove_file(git.join("refs/heads/main")).unwrap();
        fifo(&git.join("packed-refs"));
        asks(r.path(), "a FIFO for packed-refs");
        std::fs::remove_file(git.join("packed-refs")).unwrap();
        fifo(&git.join("refs/heads/main"));
        asks(r.path(), "a FIFO for the branch");
    }
}
