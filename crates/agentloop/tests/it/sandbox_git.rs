//! A sandboxed agent and the project's repository: its commits come back, nothing
//! else of it does (`exec/sandbox/gitview.rs`).

use crate::sandbox::planted_home;

/// A sandboxed worker's git reaches nothing of the repository but its own work. It
/// moves every branch but its own to a commit of its making, plants a branch, and
/// rewrites in place the object of the script the checks run (git reads objects
/// without checking their hash) with one that passes; then it does its task and
/// commits it. The work lands and the worker's own commit is its task's; no branch
/// moved, nothing was planted, the checks ran the real script, and every object is
/// what its name says.
#[test]
fn a_sandboxed_workers_git_moves_no_branch_and_rewrites_no_object() {
    let home = planted_home();
    let body = r#"export GIT_AUTHOR_NAME=W GIT_AUTHOR_EMAIL=w@example.org GIT_COMMITTER_NAME=W GIT_COMMITTER_EMAIL=w@example.org
c=$(git rev-parse --path-format=absolute --git-common-dir)
planted=$(echo planted | git hash-object -w --stdin)
tree=$(printf '100644 blob %s\tplanted.txt\n' "$planted" | git mktree)
commit=$(git commit-tree -m planted -p HEAD "$tree")
for r in $(git for-each-ref --format='%(refname)' refs/heads/); do
  case $r in *-$task) ;; *) git update-ref "$r" "$commit" && echo "MOVED $r";; esac
done
git branch planted "$commit" && echo PLANTED_BRANCH
blob=$(git rev-parse HEAD:check.sh)
forged=$(printf 'exit 0\n' | git hash-object -w --stdin)
at() { echo "$1/$(echo "$2" | cut -c1-2)/$(echo "$2" | cut -c3-)"; }
for store in "$c/objects" "$c/agentloop-objects"; do
  mkdir -p "$(dirname "$(at "$store" "$blob")")" 2>/dev/null
  chmod u+w "$(at "$store" "$blob")" 2>/dev/null
  cp -f "$(at "$c/objects" "$forged")" "$(at "$store" "$blob")" 2>/dev/null && echo "FORGED in $store"
done
case $task in T1) touch one.txt;; T2) touch two.txt;; esac
git add -A && git commit -qm "work $task" && echo COMMITTED
echo TASK_COMPLETE"#;
    let mut p = crate::workers::project(
        "# Two\n\n## T1: One\nVerify: sh check.sh one.txt\n\n## T2: Two\nVerify: sh check.sh two.txt\n",
        body,
        "[sandbox]\nmode = \"workspace\"\n",
    );
    p.write("check.sh", "test -f \"$1\"\n");
    p.commit("the check");
    p.env
        .push(("HOME".into(), home.path().display().to_string()));
    let branch = crate::workers::git(&p, &["symbolic-ref", "--short", "HEAD"]);
    let before = crate::workers::git(&p, &["rev-parse", "HEAD"]);
    let blob = crate::workers::git(&p, &["rev-parse", "HEAD:check.sh"]);
    let r = p.run(&["run", "--no-wait", "--workers", "2"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/agent.log")).unwrap();
    for said in ["MOVED refs/heads/", "PLANTED_BRANCH", "COMMITTED"] {
        assert!(log.contains(said), "the attack ran: {log}");
    }
    assert_eq!(
        crate::workers::git(&p, &["rev-parse", &branch]),
        before,
        "the person's branch"
    );
    assert_eq!(
        crate::workers::git(&p, &["branch", "--list", "planted"]),
        ""
    );
    assert_eq!(
        crate::workers::git(&p, &["cat-file", "blob", &blob]),
        "test -f \"$1\""
    );
    let fsck = p.git_cmd(&["fsck", "--no-dangling"]);
    assert!(!fsck.contains("mismatch"), "{fsck}");
    assert!(
        !log.lines()
            .any(|l| l.starts_with("FORGED in") && l.ends_with("/agentloop-objects")),
        "the real store is read-only to it: {log}"
    );
    let integration = crate::workers::integration(&p);
    let files = crate::workers::git(&p, &["ls-tree", "-r", "--name-only", &integration]);
    assert!(
        files.contains("one.txt") && files.contains("two.txt") && !files.contains("planted"),
        "{files}"
    );
    // (The merge takes a task's tree; its commits are kept as its attempts.)
    let run = p.status()["run_id"].as_str().unwrap().to_string();
    for task in ["T1", "T2"] {
        let attempts = format!("refs/agentloop/{run}/attempts/{task}");
        let subjects = crate::workers::git(&p, &["log", "--format=%s", &attempts]);
        assert!(
            subjects.contains(&format!("work {task}")),
            "the worker's own commit came back: {subjects}"
        );
    }
}
