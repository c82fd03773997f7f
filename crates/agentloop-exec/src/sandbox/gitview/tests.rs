//! The view's tests, without bubblewrap: the agent's git is pointed at the view as the
//! sandbox would show it (the view as the common directory, its private store with the
//! real one as an alternate).

use super::*;
use crate::sandbox::homes::remove_all;
use std::process::Command;

use crate::testing::git_says as git;

/// A project on `main` with `a.txt`, and a task's worktree beside it on its branch.
struct Repo {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    wt: PathBuf,
    base: PathBuf,
}

fn repo() -> Repo {
    let tmp = tempfile::tempdir().unwrap();
    let (root, wt) = crate::testing::project_and_worktree(tmp.path(), "agentloop/r-T1");
    let base = tmp.path().join("state/gits");
    Repo {
        _tmp: tmp,
        root,
        wt,
        base,
    }
}

/// git in the worktree as the sandbox shows it to the agent: its bookkeeping's
/// `commondir` (`../..` inside the sandbox, where `.git` is the view) names the view,
/// whose store has the real one as an alternate.
fn as_agent(r: &Repo, view: &GitView, args: &[&str]) -> String {
    let commondir = view.own.as_ref().unwrap().admin.join("commondir");
    let was = std::fs::read(&commondir).unwrap();
    std::fs::write(&commondir, view.dir.as_os_str().as_encoded_bytes()).unwrap();
    let out = Command::new("git")
        .args(["-c", "user.name=A", "-c", "user.email=a@example.org"])
        .args(args)
        .current_dir(&r.wt)
        .env(
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            r.root.join(".git/objects"),
        )
        .output()
        .unwrap();
    std::fs::write(&commondir, was).unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The agent commits on its branch and moves others; only its branch moves, to its
/// commit, whose objects are now the repository's. A file it staged and did not
/// commit leaves no entry naming an object the repository lacks.
#[test]
fn the_agents_commit_comes_back_and_no_other_ref_moves() {
    let r = repo();
    let main = git(&r.root, &["rev-parse", "main"]);
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    std::fs::write(r.wt.join("b.txt"), "two\n").unwrap();
    as_agent(&r, &view, &["add", "b.txt"]);
    as_agent(&r, &view, &["commit", "-qm", "work"]);
    let work = as_agent(&r, &view, &["rev-parse", "HEAD"]);
    as_agent(&r, &view, &["update-ref", "refs/heads/main", &work]);
    as_agent(&r, &view, &["branch", "planted"]);
    std::fs::write(r.wt.join("c.txt"), "three\n").unwrap();
    as_agent(&r, &view, &["add", "c.txt"]);
    // Before it ends, nothing of it is the repository's.
    assert_ne!(git(&r.root, &["rev-parse", "agentloop/r-T1"]), work);
    let dir = view.dir.clone();
    drop(view);
    assert_eq!(git(&r.root, &["rev-parse", "agentloop/r-T1"]), work);
    assert_eq!(git(&r.root, &["rev-parse", "main"]), main);
    assert_eq!(git(&r.root, &["branch", "--list", "planted"]), "");
    assert_eq!(git(&r.root, &["show", &format!("{work}:b.txt")]), "two");
    assert_eq!(git(&r.wt, &["rev-parse", "HEAD"]), work);
    assert!(!dir.exists(), "the view is gone");
    // The index names only what the repository holds: the work commits.
    git(&r.wt, &["add", "-A"]);
    git(&r.wt, &["commit", "-qm", "rest"]);
    assert_eq!(git(&r.wt, &["show", "HEAD:c.txt"]), "three");
}

/// An object the agent forges in its store under an existing object's name never
/// reaches the repository, and the commit that needs it is not taken.
#[test]
fn a_forged_object_does_not_arrive() {
    let r = repo();
    let blob = git(&r.root, &["rev-parse", "HEAD:a.txt"]);
    let start = git(&r.root, &["rev-parse", "agentloop/r-T1"]);
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    // A commit whose tree names a blob only the agent's store has, under a real
    // blob's name, forged: the content of another.
    std::fs::write(r.wt.join("a.txt"), "evil\n").unwrap();
    as_agent(&r, &view, &["add", "a.txt"]);
    let evil = as_agent(&r, &view, &["rev-parse", ":a.txt"]);
    as_agent(&r, &view, &["commit", "-qm", "evil"]);
    let objects = view.dir.join("objects");
    let from = objects.join(&evil[..2]).join(&evil[2..]);
    let to = objects.join(&blob[..2]).join(&blob[2..]);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(&from, &to).unwrap();
    // And a link out of its store, to a file of the person's.
    std::fs::remove_file(objects.join("info/alternates")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", objects.join("info/alternates")).unwrap();
    drop(view);
    assert_eq!(git(&r.root, &["cat-file", "blob", &blob]), "one");
    // The honest commit (its own blob) is taken; the forged name changed nothing.
    let now = git(&r.root, &["rev-parse", "agentloop/r-T1"]);
    assert_ne!(now, start);
    assert_eq!(git(&r.root, &["show", &format!("{now}:a.txt")]), "evil");
    assert_eq!(git(&r.root, &["show", &format!("{start}:a.txt")]), "one");
}

/// The agent leaves its branch for one of its own making: the commit it left comes
/// back on the task's branch, the worktree is on that branch again, and the branch it
/// made is nowhere.
#[test]
fn a_branch_of_the_agents_making_comes_back_as_its_tasks() {
    let r = repo();
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    as_agent(&r, &view, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(r.wt.join("f.txt"), "f\n").unwrap();
    as_agent(&r, &view, &["add", "f.txt"]);
    as_agent(&r, &view, &["commit", "-qm", "feature"]);
    let work = as_agent(&r, &view, &["rev-parse", "HEAD"]);
    drop(view);
    assert_eq!(git(&r.root, &["rev-parse", "agentloop/r-T1"]), work);
    assert_eq!(
        git(&r.wt, &["symbolic-ref", "HEAD"]),
        "refs/heads/agentloop/r-T1"
    );
    assert_eq!(git(&r.root, &["branch", "--list", "feature"]), "");
    assert_eq!(git(&r.wt, &["status", "--porcelain"]), "");
}

/// A ref the agent turned into a link (to a file of the person's), or a HEAD it made
/// a link: nothing is read through it, nothing moves, and HEAD is the task's again.
#[test]
fn links_the_agent_leaves_are_not_followed() {
    let r = repo();
    let start = git(&r.root, &["rev-parse", "agentloop/r-T1"]);
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    let outside = r.root.parent().unwrap().join("outside");
    std::fs::write(&outside, format!("{}\n", "0".repeat(40))).unwrap();
    let branch = view.dir.join("refs/heads/agentloop/r-T1");
    std::fs::remove_file(&branch).unwrap();
    std::os::unix::fs::symlink(&outside, &branch).unwrap();
    let admin = view.own.as_ref().unwrap().admin.clone();
    std::fs::remove_file(admin.join("HEAD")).unwrap();
    std::os::unix::fs::symlink(&outside, admin.join("HEAD")).unwrap();
    drop(view);
    assert_eq!(git(&r.root, &["rev-parse", "agentloop/r-T1"]), start);
    assert!(
        !std::fs::symlink_metadata(admin.join("HEAD"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(git(&r.wt, &["rev-parse", "HEAD"]), start);
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        format!("{}\n", "0".repeat(40))
    );
}

/// The view's binds: the real store read-only at the alternate's path, the refs the
/// view's own, the worktree's bookkeeping writable but for its links.
#[test]
fn the_view_lays_the_store_read_only_and_the_refs_its_own() {
    let r = repo();
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    let git = r.root.join(".git");
    let binds = view.binds();
    let has = |flag: &str, to: &Path| binds.iter().any(|(f, _, t)| *f == flag && t == to);
    assert!(has("--bind", &git));
    assert!(has("--ro-bind", &git.join(SHARED)));
    assert!(has("--ro-bind", &git.join("config")));
    assert!(has("--ro-bind", &git.join("HEAD")));
    assert!(!binds.iter().any(|(_, _, t)| t == &git.join("refs")));
    assert!(!binds.iter().any(|(_, _, t)| t == &git.join("objects")));
    assert!(has("--bind", &git.join("worktrees/wt")));
    assert!(has("--ro-bind", &git.join("worktrees/wt/commondir")));
    assert!(has("--ro-bind", &git.join("worktrees/wt/gitdir")));
    let alternates = std::fs::read_to_string(view.dir.join("objects/info/alternates")).unwrap();
    assert_eq!(alternates.trim(), git.join(SHARED).to_str().unwrap());
}

/// What the agent leaves in its worktree's own directory for agentloop's git to
/// follow outside the sandbox goes before that git runs: another work tree named in
/// `config.worktree`, a `COMMIT_EDITMSG` and a reflog that are links to a file of the
/// person's, a FIFO as the index, a sparse-checkout file.
#[test]
fn the_worktrees_own_directory_keeps_only_gits_bookkeeping() {
    let r = repo();
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    let admin = view.own.as_ref().unwrap().admin.clone();
    let victim = r.root.parent().unwrap().join("victim");
    std::fs::write(&victim, "mine\n").unwrap();
    std::fs::write(
        admin.join("config.worktree"),
        format!(
            "[core]\n\tworktree = {}\n",
            r.root.parent().unwrap().display()
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(&victim, admin.join("COMMIT_EDITMSG")).unwrap();
    std::fs::remove_file(admin.join("logs/HEAD")).unwrap_or_default();
    std::fs::create_dir_all(admin.join("logs")).unwrap();
    std::os::unix::fs::symlink(&victim, admin.join("logs/HEAD")).unwrap();
    std::fs::remove_file(admin.join("index")).unwrap();
    let made = Command::new("mkfifo")
        .arg(admin.join("index"))
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::create_dir_all(admin.join("info")).unwrap();
    std::fs::write(admin.join("info/sparse-checkout"), "/nothing\n").unwrap();
    std::fs::write(r.wt.join("b.txt"), "two\n").unwrap();
    drop(view);
    for gone in [
        "config.worktree",
        "COMMIT_EDITMSG",
        "logs/HEAD",
        "index",
        "info",
    ] {
        assert!(
            std::fs::symlink_metadata(admin.join(gone)).is_err(),
            "{gone} is gone"
        );
    }
    // agentloop's git there commits the work, writing nothing through a link.
    git(&r.wt, &["add", "-A"]);
    git(&r.wt, &["commit", "-qm", "work"]);
    assert_eq!(git(&r.wt, &["show", "HEAD:b.txt"]), "two");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
}

/// A link the agent put at its store's `info/` (to the project's own) removes no
/// alternates file of anyone's.
#[test]
fn a_link_in_the_private_store_removes_nothing_outside_it() {
    let r = repo();
    let outside = r.root.parent().unwrap().join("outside-info");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("alternates"), "/somewhere\n").unwrap();
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    std::fs::write(r.wt.join("b.txt"), "two\n").unwrap();
    as_agent(&r, &view, &["add", "b.txt"]);
    as_agent(&r, &view, &["commit", "-qm", "work"]);
    let info = view.dir.join("objects/info");
    std::fs::remove_dir_all(&info).unwrap();
    std::os::unix::fs::symlink(&outside, &info).unwrap();
    drop(view);
    assert!(outside.join("alternates").exists());
    assert_eq!(git(&r.wt, &["show", "HEAD:b.txt"]), "two");
}

/// A tree tens of thousands of directories deep, left where the view is removed,
/// goes without a stack or a path that long.
#[test]
fn a_deep_tree_is_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().join("top");
    std::fs::create_dir_all(&top).unwrap();
    // Built from the bottom up, each level moved under the next: short paths only.
    std::fs::create_dir(top.join("n0")).unwrap();
    let levels = 30_000;
    for i in 1..levels {
        std::fs::create_dir(top.join(format!("n{i}"))).unwrap();
        std::fs::rename(top.join(format!("n{}", i - 1)), top.join(format!("n{i}/a"))).unwrap();
    }
    std::fs::write(top.join(format!("n{}/f", levels - 1)), "x").unwrap();
    remove_all(&top);
    assert!(!top.exists());
}

/// A submodule's gitlink (a commit of another repository) and a file staged, then
/// changed again before the agent ended: the gitlink stays, and the file is
/// committed as the tree has it.
#[test]
fn a_gitlink_stays_and_a_file_staged_then_changed_is_committed_as_it_is() {
    let r = repo();
    let other = "1".repeat(40);
    git(
        &r.root,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{other},sub"),
        ],
    );
    git(&r.root, &["commit", "-qm", "a submodule"]);
    git(&r.wt, &["merge", "-q", "main"]);
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    std::fs::write(r.wt.join("b.txt"), "two\n").unwrap();
    as_agent(&r, &view, &["add", "b.txt"]);
    std::fs::write(r.wt.join("b.txt"), "two, and more\n").unwrap();
    drop(view);
    assert!(git(&r.wt, &["ls-files", "-s", "sub"]).starts_with("160000"));
    git(&r.wt, &["add", "-A"]);
    git(&r.wt, &["commit", "-qm", "work"]);
    assert_eq!(git(&r.wt, &["show", "HEAD:b.txt"]), "two, and more");
    assert!(git(&r.wt, &["ls-tree", "HEAD", "sub"]).starts_with("160000"));
}

/// Another worktree's HEAD naming nothing (another agent's, while it works) does not
/// keep this agent's commit from coming back: the fetch walks no worktree's HEAD.
#[test]
fn another_worktrees_head_naming_nothing_does_not_stop_the_work_coming_back() {
    let r = repo();
    let other = r.root.parent().unwrap().join("other");
    git(
        &r.root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "agentloop/r-T2",
            other.to_str().unwrap(),
        ],
    );
    let view = GitView::make(&r.root, &r.wt, &r.base).unwrap().unwrap();
    std::fs::write(r.wt.join("b.txt"), "two\n").unwrap();
    as_agent(&r, &view, &["add", "b.txt"]);
    as_agent(&r, &view, &["commit", "-qm", "work"]);
    let work = as_agent(&r, &view, &["rev-parse", "HEAD"]);
    std::fs::write(
        r.root.join(".git/worktrees/other/HEAD"),
        "1111111111111111111111111111111111111111\n",
    )
    .unwrap();
    drop(view);
    assert_eq!(git(&r.root, &["rev-parse", "agentloop/r-T1"]), work);
    assert_eq!(git(&r.root, &["show", &format!("{work}:b.txt")]), "two");
}
