//! `[verify] max_file_size`: a file the work adds or changes past it (here an 8 GiB
//! sparse file, which takes no room) fails the verification before anything copies,
//! hashes or commits it, and the agent is told which; once it is gone the task is
//! done, and nothing of it lands.

use crate::support::*;

const PLAN: &str = "# Big\n\n## T1: One\nVerify: test -f one.txt\n";

#[test]
fn a_file_past_the_limit_fails_the_verification_and_the_agent_is_told() {
    let p = scripted(
        PLAN,
        "touch one.txt\nif [ \"$n\" = 1 ]; then truncate -s 8G big.bin; else rm -f big.bin; fi\necho TASK_COMPLETE\n",
    );
    let t = std::time::Instant::now();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        t.elapsed()
    );
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["iterations"], 2);
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(
        log.contains(
            "`big.bin` is 8.6 GB: a file the work adds or changes may be at most 104.9 MB"
        ),
        "{log}"
    );
    let second = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(second.contains("`big.bin` is 8.6 GB"), "{second}");
}

/// A worker that commits the file itself is refused as well (what its branch
/// committed since the run began counts), and what lands holds none of it. (200 MiB
/// here: the agent's own git hashes what it commits, 8 GiB would take a minute.)
#[test]
fn a_workers_commit_of_a_file_past_the_limit_does_not_land() {
    let p = crate::workers::project(
        PLAN,
        "touch one.txt\nif [ \"$n\" = 1 ]; then truncate -s 200M big.bin; git add big.bin; git -c user.name=a -c user.email=a@example.org commit -qm big; else git rm -q big.bin; git -c user.name=a -c user.email=a@example.org commit -qm gone; fi\necho TASK_COMPLETE",
        "",
    );
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}");
    assert_eq!(s["iterations"], 2, "{s:#}");
    let branch = crate::workers::integration(&p);
    let tree = p.git_cmd(&["ls-tree", "-r", "--name-only", &branch]);
    assert!(!tree.contains("big.bin"), "{tree}");
    assert!(tree.contains("one.txt"), "{tree}");
}

/// With no workers the agent commits on the project's own branch, whose history
/// lands as it is: a file past the limit in any of the task's commits is refused, one
/// a later commit deletes too (GitHub refuses a push that holds it), until the
/// commits no longer hold it.
#[test]
fn a_file_past_the_limit_in_the_tasks_own_commits_is_refused_until_they_are_rewritten() {
    let commit = "git -c user.name=a -c user.email=a@example.org commit -qm";
    let p = scripted(
        PLAN,
        &format!(
            "touch one.txt\ncase \"$n\" in\n1) truncate -s 200M big.bin; git add big.bin; {commit} big ;;\n2) git rm -q big.bin; {commit} gone ;;\n*) git log --format=%s | grep -qx gone && git reset -q --hard HEAD~2 ;;\nesac\necho TASK_COMPLETE\n"
        ),
    );
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}");
    // The third attempt is the debugging one that the same failure twice brings.
    assert_eq!(s["iterations"], 4, "{s:#}");
    for i in ["0001", "0002"] {
        let log = std::fs::read_to_string(p.run_dir().join(format!("iterations/{i}/verify.log")))
            .unwrap();
        assert!(
            log.contains("`big.bin` is 209.7 MB in a commit of the work: a file the work adds or changes may be at most 104.9 MB"),
            "{i}: {log}"
        );
    }
    let history = p.git_cmd(&["log", "--format=%H", "HEAD", "--", "big.bin"]);
    assert!(history.trim().is_empty(), "{history}");
}
