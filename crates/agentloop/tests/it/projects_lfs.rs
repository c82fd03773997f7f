//! A project whose test fixtures Git LFS tracks, made with the real `git lfs` as
//! people make one: the checks read the fixture's content, not its pointer, in the
//! judge's clean copy, a worker's worktree and the merge worktree, so the task's test
//! passes once the work is done and SHIPs; and what agentloop commits of a file Git LFS
//! tracks is its pointer, its content in the LFS store, as the person's git would
//! commit it.

use crate::projects::ships;
use crate::support::*;

const PLAN: &str = "# Words\n\n## T1: Count the words\n\nMake `count` return how many words the fixture holds.\n\nVerify: python3 -m pytest -q\nTests: tests/test_words.py::test_counts_the_fixture\n";

/// Words in `tests/fixtures/words.dat`, which Git LFS tracks; `count` not written yet.
fn words_project() -> Project {
    let mut p = Scratch::new()
        .plan(PLAN)
        .agent(&agent(
            "cat > words.py <<'PY'\ndef count(path):\n    with open(path) as f:\n        return len(f.read().split())\nPY\necho TASK_COMPLETE",
        ))
        .config("[verify]\ncommands = [\"python3 -m pytest -q\"]\n")
        .file("words.py", "def count(path):\n    return 0\n")
        .file(
            "tests/test_words.py",
            "import pathlib\n\nimport words\n\nFIXTURE = pathlib.Path(__file__).parent / \"fixtures\" / \"words.dat\"\n\n\ndef test_the_fixture_is_its_content():\n    assert FIXTURE.read_text().startswith(\"alpha \")\n\n\ndef test_counts_the_fixture():\n    assert words.count(FIXTURE) == 5\n",
        )
        .build();
    p.env.push(("PATH".into(), python_path()));
    // agentloop sees no configuration of the machine's person: only the repository's
    // and what a test writes in the project's own configuration directory.
    let home = p.path().join(".agentloop/home");
    std::fs::create_dir_all(&home).unwrap();
    p.env.push(("HOME".into(), home.display().to_string()));
    p.git_cmd(&["lfs", "install", "--local"]);
    p.git_cmd(&["lfs", "track", "*.dat"]);
    p.write(
        "tests/fixtures/words.dat",
        "alpha beta gamma delta epsilon\n",
    );
    p.commit("the fixture, in Git LFS");
    // As a checkout made a while ago leaves it: the file older than the index, whose
    // entry git refreshed through Git LFS's filter (a file as new as the index would
    // be hashed again by agentloop's git, which runs no filter, and taken as content).
    let aged = std::process::Command::new("touch")
        .args(["-d", "1 minute ago", "tests/fixtures/words.dat"])
        .current_dir(p.path())
        .status()
        .unwrap();
    assert!(aged.success());
    p.git_cmd(&["update-index", "--refresh"]);
    let pointer = p.git_cmd(&["show", "HEAD:tests/fixtures/words.dat"]);
    assert!(
        pointer.starts_with("version https://git-lfs.github.com/spec/v1\n"),
        "git lfs committed a pointer: {pointer}"
    );
    assert_eq!(p.git_cmd(&["status", "--porcelain"]), "");
    p
}

#[test]
fn the_checks_read_a_git_lfs_fixtures_content_and_the_task_ships() {
    let p = words_project();
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("1 passed, 1 failed"),
        "the fixture's own test passes at the baseline; the task's fails: {}",
        r.stdout
    );
    ships(&p, &[]);
    assert_eq!(
        p.read("tests/fixtures/words.dat"),
        "alpha beta gamma delta epsilon\n"
    );
}

#[test]
fn with_workers_the_worktrees_and_the_merged_result_hold_the_fixtures_content() {
    let p = words_project();
    ships(&p, &["--workers", "2"]);
    assert_eq!(
        p.read("tests/fixtures/words.dat"),
        "alpha beta gamma delta epsilon\n"
    );
    let pointer = p.git_cmd(&["show", "HEAD:tests/fixtures/words.dat"]);
    assert!(pointer.starts_with("version https://git-lfs.github.com/spec/v1\n"));
}

/// The agent's work rewrites a file Git LFS tracks that no check reads: what lands is
/// a pointer on the integration branch, and the real `git lfs` finds the content it
/// names. (With one agent the work is left to the person to commit, with their own
/// git.)
fn a_run_lands_the_pointer_of_a_changed_lfs_file(flags: &[&str]) {
    let p = words_project();
    p.write(
        "agent.sh",
        agent(
            "cat > words.py <<'PY'\ndef count(path):\n    with open(path) as f:\n        return len(f.read().split())\nPY\nprintf 'a new logo\\n' > assets/logo.dat\necho TASK_COMPLETE",
        ),
    );
    p.write("assets/logo.dat", "the old logo\n");
    p.commit("a logo, in Git LFS");
    ships(&p, flags);
    let landed = crate::workers::integration(&p);
    let pointer = p.git_cmd(&["show", &format!("{landed}:assets/logo.dat")]);
    assert!(
        pointer.starts_with("version https://git-lfs.github.com/spec/v1\n"),
        "the commit holds a pointer, not the content: {pointer:?}"
    );
    let mut smudge = std::process::Command::new("git")
        .args(["lfs", "smudge", "assets/logo.dat"])
        .current_dir(p.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    smudge
        .stdin
        .take()
        .unwrap()
        .write_all(pointer.as_bytes())
        .unwrap();
    let out = smudge.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a new logo\n");
    assert_eq!(p.git_cmd(&["status", "--porcelain"]), "");
}

/// The repository's own `lfs` filter taken out (as a `git lfs install` without
/// `--local` leaves it): the person's git configuration directory, for a test to write.
fn persons_config(p: &Project) -> std::path::PathBuf {
    p.git_cmd(&["config", "--local", "--remove-section", "filter.lfs"]);
    let config = p.xdg_config_home().join("git");
    std::fs::create_dir_all(&config).unwrap();
    config
}

#[test]
fn a_git_lfs_installed_for_the_person_not_the_repository_is_followed_too() {
    let p = words_project();
    // `git lfs install` without `--local`: the filter in the person's own
    // configuration, none in the repository's.
    let config = persons_config(&p);
    std::fs::write(
        config.join("config"),
        "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\tprocess = git-lfs filter-process\n\trequired = true\n",
    )
    .unwrap();
    ships(&p, &["--workers", "2"]);
}

/// `git lfs install` in a file the person's configuration includes for some
/// repositories only (`includeIf "gitdir:…"`): found as git finds it there.
#[test]
fn a_git_lfs_the_person_includes_for_this_repository_is_followed_too() {
    let p = words_project();
    let config = persons_config(&p);
    std::fs::write(
        config.join("lfs.inc"),
        "[filter \"lfs\"]\n\tprocess = git-lfs filter-process\n\trequired = true\n",
    )
    .unwrap();
    std::fs::write(
        config.join("config"),
        format!(
            "[includeIf \"gitdir:{}/\"]\n\tpath = {}\n",
            p.path().canonicalize().unwrap().display(),
            config.join("lfs.inc").display()
        ),
    )
    .unwrap();
    ships(&p, &["--workers", "2"]);
}

#[test]
fn with_workers_a_changed_lfs_file_lands_as_its_pointer_its_content_in_the_store() {
    a_run_lands_the_pointer_of_a_changed_lfs_file(&["--workers", "2"]);
}

#[test]
fn content_the_lfs_store_does_not_hold_is_said_and_the_checks_read_the_pointer() {
    let p = words_project();
    std::fs::remove_dir_all(p.path().join(".git/lfs/objects")).unwrap();
    std::fs::create_dir_all(p.path().join(".git/lfs/objects")).unwrap();
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("tests/fixtures/words.dat: Git LFS tracks them")
            && r.stderr.contains("`git lfs pull`"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("0 passed, 2 failed"), "{}", r.stdout);
}
