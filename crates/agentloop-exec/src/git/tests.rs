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

/// HEAD read from the files is what `git rev-parse --verify -q HEAD` says, in every
/// shape a repository's refs take; where the files cannot tell, git is asked.
#[test]
fn head_read_from_the_files_is_gits_answer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let g = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(d)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let gits = |w: &Path| {
        let out = Command::new("git")
            .args(["rev-parse", "--verify", "-q", "HEAD"])
            .current_dir(w)
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let same = |w: &Path, what: &str| {
        assert_eq!(locate::head_on_disk(w), Some(gits(w)), "{what}");
        assert_eq!(head(w), gits(w), "{what}");
    };
    g(&["init", "-q", "-b", "main"]);
    same(d, "a branch not yet born");
    g(&["commit", "-q", "--allow-empty", "-m", "one"]);
    same(d, "a loose branch");
    g(&["pack-refs", "--all"]);
    assert!(!d.join(".git/refs/heads/main").exists());
    same(d, "a packed branch");
    g(&["checkout", "-q", "-b", "topic/a"]);
    g(&["commit", "-q", "--allow-empty", "-m", "two"]);
    same(d, "a branch with a slash");
    let two = g(&["rev-parse", "HEAD"]);
    g(&["checkout", "-q", "--detach", "main"]);
    same(d, "detached");
    // A branch named by another (a symbolic ref): followed.
    g(&["symbolic-ref", "refs/heads/alias", "refs/heads/topic/a"]);
    g(&["symbolic-ref", "HEAD", "refs/heads/alias"]);
    assert_eq!(locate::head_on_disk(d), Some(Some(two.clone())));
    same(d, "a symbolic branch");
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
    same(&wt, "a worktree");
    // HEAD on a ref outside the branches, tags and remotes: git is asked.
    g(&["update-ref", "refs/notes/x", &two]);
    g(&["symbolic-ref", "HEAD", "refs/notes/x"]);
    assert_eq!(locate::head_on_disk(d), None);
    assert_eq!(head(d), Some(two.clone()));
    // Garbage where a branch should be: what git says (nothing), by git.
    g(&["symbolic-ref", "HEAD", "refs/heads/broken"]);
    std::fs::write(d.join(".git/refs/heads/broken"), "not an id\n").unwrap();
    assert_eq!(locate::head_on_disk(d), None);
    assert_eq!(head(d), None);
    // A branch packed twice: git is asked.
    std::fs::remove_file(d.join(".git/refs/heads/broken")).unwrap();
    let packed = std::fs::read_to_string(d.join(".git/packed-refs")).unwrap();
    std::fs::write(
        d.join(".git/packed-refs"),
        format!("{packed}{two} refs/heads/broken\n{two} refs/heads/broken\n"),
    )
    .unwrap();
    assert_eq!(locate::head_on_disk(d), None);
    std::fs::write(
        d.join(".git/packed-refs"),
        format!("{packed}{two} refs/heads/broken\n"),
    )
    .unwrap();
    same(d, "a branch packed once more");
    std::fs::write(d.join(".git/packed-refs"), packed).unwrap();
    std::fs::write(d.join(".git/refs/heads/broken"), "x").unwrap();
    // A FIFO where the branch should be is not opened.
    std::fs::remove_file(d.join(".git/refs/heads/broken")).unwrap();
    let made = Command::new("mkfifo")
        .arg(d.join(".git/refs/heads/broken"))
        .status()
        .unwrap();
    assert!(made.success());
    assert_eq!(locate::head_on_disk(d), None);
    // SHA-256 ids, and a ref store other than files (git asked).
    for (format, read) in [
        ("--object-format=sha256", true),
        ("--ref-format=reftable", false),
    ] {
        let other = tempfile::tempdir().unwrap();
        let o = other.path();
        let st = Command::new("git")
            .args(["init", "-q", format])
            .current_dir(o)
            .status()
            .unwrap();
        assert!(st.success());
        let st = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["commit", "-q", "--allow-empty", "-m", "one"])
            .current_dir(o)
            .status()
            .unwrap();
        assert!(st.success());
        let id = gits(o).unwrap();
        assert_eq!(locate::head_on_disk(o).is_some(), read, "{format}");
        assert_eq!(head(o), Some(id), "{format}");
        if !read {
            // The setting moved to an included file (where git does not read it): the
            // directory still sends the question to git.
            let config = o.join(".git/config");
            let text = std::fs::read_to_string(&config).unwrap();
            let kept = text
                .lines()
                .filter(|l| !l.to_ascii_lowercase().contains("refstorage"))
                .collect::<Vec<_>>()
                .join("\n");
            std::fs::write(
                o.join(".git/more"),
                "[extensions]\n\trefStorage = reftable\n",
            )
            .unwrap();
            std::fs::write(&config, format!("{kept}\n[include]\n\tpath = more\n")).unwrap();
            assert_eq!(locate::head_on_disk(o), None);
            assert_eq!(head(o), gits(o));
        }
    }
}
