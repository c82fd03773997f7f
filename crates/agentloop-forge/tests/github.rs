//! The forge clients against the testkit's mock GitHub and GitLab, backed by a real bare
//! repository.

use std::path::Path;
use std::process::Command;

use agentloop_forge::github::GitHub;
use agentloop_forge::{ChecksState, Forge, MergeMethod};
use agentloop_testkit::MockGitHub;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare repository with `main` and a `feature` branch that adds `ok.txt` when `fix`.
fn repo(fix: bool) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("r.git");
    let work = tmp.path().join("w");
    git(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            bare.to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    );
    std::fs::write(
        work.join("ci.sh"),
        "test -f ok.txt || { echo 'FAIL: ok.txt is missing'; exit 1; }\n",
    )
    .unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "base"]);
    git(&work, &["push", "-q", "origin", "HEAD:main"]);
    git(&work, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(work.join("a.txt"), "a\n").unwrap();
    if fix {
        std::fs::write(work.join("ok.txt"), "ok\n").unwrap();
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "feature"]);
    git(&work, &["push", "-q", "origin", "feature"]);
    let sha = git(&work, &["rev-parse", "HEAD"]);
    (tmp, bare, sha)
}

#[test]
fn a_pull_request_is_opened_then_updated_checked_reviewed_and_merged() {
    let (_tmp, bare, sha) = repo(true);
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", Some("sh ci.sh"));
    let f = GitHub::new(&gh.url(), "octo/hello", "t0ken");
    let (pr, created) = f
        .open_or_update("feature", "main", "T", "first body", false)
        .unwrap();
    assert!(created && pr.number == 1 && pr.head_sha == sha);
    // A second open is GitHub's 422 "already exists": the same one, updated.
    let (again, created) = f
        .open_or_update("feature", "main", "T2", "second body", false)
        .unwrap();
    assert!(!created && again.number == 1);
    assert_eq!(gh.prs()[0].body, "second body");
    f.add_labels(1, &["agentloop".into(), "needs:security-review".into()])
        .unwrap();
    // A label comes off by its name in the path (a `:` encoded); one it does not bear
    // is GitHub's 404, no error.
    f.remove_labels(1, &["needs:security-review".into(), "absent".into()])
        .unwrap();
    f.request_reviewers(1, &["alice".into()]).unwrap();
    f.comment(1, "hello").unwrap();
    let p = &gh.prs()[0];
    assert_eq!(
        (p.labels.clone(), p.reviewers.clone(), p.comments.len()),
        (vec!["agentloop".to_string()], vec!["alice".to_string()], 1)
    );
    // In progress at first, then the script's verdict.
    assert_eq!(f.checks(&sha).unwrap().state, ChecksState::Pending);
    assert_eq!(f.checks(&sha).unwrap().state, ChecksState::Success);
    assert!(f.approvals(1).unwrap().is_empty());
    gh.review(1, "alice", "CHANGES_REQUESTED");
    gh.review(1, "bob", "COMMENTED");
    assert!(f.approvals(1).unwrap().is_empty());
    gh.review(1, "alice", "APPROVED");
    assert_eq!(f.approvals(1).unwrap(), vec!["alice"]);
    // A head that moved is refused; the right one merges into main in the bare repo.
    let e = f
        .merge(
            1,
            "0000000000000000000000000000000000000000",
            MergeMethod::Merge,
        )
        .unwrap_err();
    assert!(e.to_string().contains("409"), "{e}");
    let merged = f.merge(1, &sha, MergeMethod::Merge).unwrap();
    assert_eq!(git(&bare, &["rev-parse", "refs/heads/main"]), merged);
    assert_eq!(
        git(&bare, &["show", "-s", "--format=%P", &merged])
            .split(' ')
            .count(),
        2
    );
}

#[test]
fn a_red_check_says_why() {
    let (_tmp, bare, sha) = repo(false);
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", Some("sh ci.sh"));
    let f = GitHub::new(&gh.url(), "octo/hello", "t0ken");
    f.checks(&sha).unwrap();
    let c = f.checks(&sha).unwrap();
    assert_eq!(c.state, ChecksState::Failure);
    assert_eq!(c.checks[0].name, "ci");
    assert!(
        c.checks[0].output.contains("FAIL: ok.txt is missing"),
        "{:?}",
        c.checks
    );
}

#[test]
fn rate_limits_are_waited_out_and_bad_credentials_said() {
    let (_tmp, bare, _) = repo(true);
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", None);
    let f = GitHub::new(&gh.url(), "octo/hello", "t0ken");
    gh.rate_limit_next(403, 1);
    let t = std::time::Instant::now();
    let (pr, _) = f
        .open_or_update("feature", "main", "T", "b", false)
        .unwrap();
    assert_eq!(pr.number, 1);
    assert!(
        t.elapsed() >= std::time::Duration::from_millis(900),
        "it waited for the reset"
    );
    gh.rate_limit_next(429, 2);
    f.comment(1, "after two secondary limits").unwrap();
    assert_eq!(gh.prs()[0].comments.len(), 1);
    let bad = GitHub::new(&gh.url(), "octo/hello", "wrong");
    let e = bad.comment(1, "x").unwrap_err().to_string();
    assert!(e.contains("401") && e.contains("Bad credentials"), "{e}");
}

#[test]
fn lists_are_read_page_by_page() {
    let (_tmp, bare, _) = repo(true);
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", None);
    let f = GitHub::new(&gh.url(), "octo/hello", "t0ken");
    f.open_or_update("feature", "main", "T", "b", false)
        .unwrap();
    for i in 0..150 {
        gh.review(1, &format!("r{i}"), "APPROVED");
    }
    assert_eq!(f.approvals(1).unwrap().len(), 150, "two pages of reviews");
}

/// GitLab takes labels off a merge request by name, in one update; one it does not
/// bear is no error.
#[test]
fn a_merge_request_sheds_its_labels_on_gitlab() {
    use agentloop_forge::gitlab::GitLab;
    let (_tmp, bare, _) = repo(true);
    let gl = agentloop_testkit::MockGitLab::start("group/hello", &bare, "glpat", None, &[]);
    let f = GitLab::new(&gl.url(), "group/hello", "glpat");
    let (mr, _) = f
        .open_or_update("feature", "main", "T", "body", false)
        .unwrap();
    f.add_labels(
        mr.number,
        &["agentloop".into(), "needs:security-review".into()],
    )
    .unwrap();
    f.remove_labels(
        mr.number,
        &["needs:security-review".into(), "absent".into()],
    )
    .unwrap();
    assert_eq!(gl.mrs()[0].labels, ["agentloop"]);
}
