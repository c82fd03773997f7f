//! Shipping a completed run through the mock GitHub, backed by a real bare repository
//! as the remote: push, the pull request with the run's account, a red check handed
//! back to the agent, green after its fix, the review, the merge, and the run's checks
//! on the base branch after it.

use std::path::Path;
use std::process::{Command, Stdio};

use agentloop_testkit::MockGitHub;

use crate::support::{Project, Scratch, agent, wait_for};

const PLAN: &str =
    "# Ship it\n\nGoal: a.txt, shipped.\n\n## T1: Make a.txt\nVerify: test -f a.txt\n";

/// The forge's CI: a.txt and ci-ok.txt must both be there.
const CI: &str = "test -f a.txt || { echo 'FAIL: a.txt missing'; exit 1; }\ntest -f ci-ok.txt || { echo 'FAIL: ci-ok.txt missing'; exit 1; }\necho 'all good'\n";

/// T1 makes a.txt; a fix task makes ci-ok.txt when its prompt says the CI wants it.
const AGENT: &str = r#"case "$task" in
  T1) touch a.txt ;;
  CI-*) printf '%s' "$prompt" | grep -q 'FAIL: ci-ok.txt missing' && touch ci-ok.txt ;;
esac
echo TASK_COMPLETE
"#;

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
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

/// A project whose `origin` is a bare repository the mock GitHub serves.
fn project(extra: &str) -> (Project, tempfile::TempDir, MockGitHub) {
    project_with(
        PLAN,
        AGENT,
        CI,
        &format!("reviewers = [\"alice\"]\nmerge = \"auto\"\nmethod = \"merge\"\n{extra}"),
    )
}

/// A project with `plan`, a scripted `agent` and the forge's CI `ci`, whose `origin` is
/// a bare repository the mock GitHub serves; `extra` goes into `[ship]`.
pub(crate) fn project_with(
    plan: &str,
    agent_script: &str,
    ci: &str,
    extra: &str,
) -> (Project, tempfile::TempDir, MockGitHub) {
    shipping(plan, agent_script, Some(ci), "", extra)
}

/// A project of `plan` whose scripted agent ships through the mock GitHub, backed by
/// a bare remote; with `ci`, that is the project's `ci.sh` and the forge's check runs
/// it. `before` goes ahead of `[ship]`, `ship` into it.
fn shipping(
    plan: &str,
    script: &str,
    ci: Option<&str>,
    before: &str,
    ship: &str,
) -> (Project, tempfile::TempDir, MockGitHub) {
    let remote = tempfile::tempdir().unwrap();
    let bare = remote.path().join("hello.git");
    git(
        remote.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", ci.map(|_| "sh ci.sh"));
    let mut scratch = Scratch::new().plan(plan).agent(&agent(script));
    if let Some(ci) = ci {
        scratch = scratch.file("ci.sh", ci);
    }
    let mut p = scratch
        .config(&format!(
            "{before}[ship]\nforge = \"github\"\nrepo = \"octo/hello\"\napi_url = \"{}\"\npoll = \"100ms\"\n{ship}",
            gh.url()
        ))
        .build();
    p.git_cmd(&["remote", "add", "origin", bare.to_str().unwrap()]);
    p.git_cmd(&["push", "-q", "origin", "main"]);
    p.env.push(("GITHUB_TOKEN".into(), "t0ken".into()));
    (p, remote, gh)
}

pub(crate) fn kinds(p: &Project) -> Vec<String> {
    crate::real_cli::journal_events(p)
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_run_ships_through_a_red_check_a_review_and_a_verified_merge() {
    let (p, remote, gh) = project("");
    // The forge's first answer is a secondary rate limit: waited out.
    gh.rate_limit_next(429, 1);
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&p, "the review gate", |p| {
        crate::support::journal_has(p, "\"kind\":\"gate_opened\"")
    });
    let pr = gh.prs()[0].clone();
    assert_eq!(
        pr.head,
        format!(
            "agentloop/{}",
            p.run_dir().file_name().unwrap().to_string_lossy()
        )
    );
    assert_eq!(pr.base, "main");
    assert_eq!(pr.labels, ["agentloop"]);
    assert_eq!(pr.reviewers, ["alice"]);
    assert!(
        pr.body
            .contains("**T1** Make a.txt — verified by `test -f a.txt`"),
        "{}",
        pr.body
    );
    assert!(
        pr.body.contains("Red checks handed back to the agent: 1"),
        "{}",
        pr.body
    );
    // Someone else's approval does not release it; alice's does.
    gh.review(1, "mallory", "APPROVED");
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(!crate::support::journal_has(&p, "review_approved"));
    gh.review(1, "alice", "APPROVED");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let k = kinds(&p);
    let order = [
        "ship_pushed",
        "pr_opened",
        "checks_finished",
        "ship_fix_added",
        "iteration_started",
        "ship_pushed",
        "checks_finished",
        "gate_opened",
        "review_approved",
        "pr_merged",
        "post_merge_verified",
        "run_finished",
    ];
    let mut at = k.iter().position(|e| e == "ship_pushed").unwrap();
    for want in order {
        at += k[at..]
            .iter()
            .position(|e| e == want)
            .unwrap_or_else(|| panic!("{want} after {at} in {k:?}"));
    }
    let events = crate::real_cli::journal_events(&p);
    let checks: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["kind"] == "checks_finished")
        .collect();
    assert_eq!(checks[0]["data"]["passed"], false);
    assert!(
        checks[0]["data"]["checks"][0]["output"]
            .as_str()
            .unwrap()
            .contains("FAIL: ci-ok.txt missing")
    );
    assert_eq!(checks[1]["data"]["passed"], true);
    let post = events
        .iter()
        .find(|e| e["kind"] == "post_merge_verified")
        .unwrap();
    assert_eq!(post["data"]["passed"], true);
    // main on the remote has the fix, merged.
    let bare = remote.path().join("hello.git");
    assert!(git(&bare, &["ls-tree", "--name-only", "main"]).contains("ci-ok.txt"));
    assert_eq!(
        git(&bare, &["rev-parse", "main"]),
        post["data"]["commit"].as_str().unwrap()
    );
    let s = p.status();
    assert_eq!(s["status"], "completed");
    // The fix task has no check of its own: the forge's checks that passed after it
    // verify it (not "done, as the agent said", which would make the run MONITOR).
    let fix: Vec<&serde_json::Value> = s["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["task"] == "CI-1")
        .collect();
    assert!(!fix.is_empty(), "{s:#}");
    assert!(fix.iter().all(|c| c["met"] == "verified"), "{fix:#?}");
    let summary = std::fs::read_to_string(p.run_dir().join("summary.md")).unwrap();
    assert!(
        summary.contains("the forge's checks (ci) passed on"),
        "{summary}"
    );
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    assert!(
        handoff.contains("Pull request #1: https://github.invalid/octo/hello/pull/1"),
        "{handoff}"
    );
    assert!(
        handoff.contains("**CI-1** Make the forge's checks pass"),
        "{handoff}"
    );
}

/// A token that stops working after the run started: the ship step waits for a person.
#[test]
fn a_refused_forge_waits_for_a_person_at_the_ship_gate() {
    let gate = tempfile::tempdir().unwrap();
    let go = gate.path().join("go");
    let (p, _remote, gh) = project_with(
        PLAN,
        &format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done\ntouch a.txt ci-ok.txt\necho TASK_COMPLETE\n",
            go.display()
        ),
        CI,
        "",
    );
    let child = p
        .cmd(&["run", "--no-wait"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&p, "the first iteration", |p| {
        crate::support::journal_has(p, "\"kind\":\"iteration_started\"")
    });
    gh.revoke();
    std::fs::write(&go, "").unwrap();
    let r: crate::support::Run = child.wait_with_output().unwrap().into();
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.stderr.contains("Bad credentials"), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "waiting", "{s}");
    assert!(gh.prs().is_empty());
    assert!(kinds(&p).contains(&"ship_failed".to_string()));
}

/// The forge refuses to label the pull request it just opened (a token without the
/// right to): the step waits at the ship gate, and once retried the pull request,
/// found open, gets its labels and reviewers. Found by the simulator, where a driver
/// dies between the two calls.
#[test]
fn a_pull_request_whose_labelling_failed_is_labelled_on_the_retry() {
    let (p, _remote, gh) = project("");
    gh.fail_next(
        "POST",
        "/labels",
        403,
        "Resource not accessible by integration",
    );
    let r = p.run(&["run", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "ship", "{}", r.stderr);
    assert!(gh.prs()[0].labels.is_empty());
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "review", "{}", r.stderr);
    let prs = gh.prs();
    assert_eq!(prs.len(), 1);
    assert_eq!(prs[0].labels, ["agentloop"]);
    assert_eq!(prs[0].reviewers, ["alice"]);
}

/// A `[ship]` the forge would refuse is refused before the run starts, by asking the
/// forge: a bad token, a repository the token cannot see, a user who may not push, a
/// base branch that is not on the forge. Nothing is made.
#[test]
fn a_ship_the_forge_would_refuse_is_refused_before_the_run_starts() {
    let refused = |p: &Project, says: &str| {
        let r = p.run(&["run", "--no-wait"]);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
        assert!(r.stderr.contains("fix this first"), "{}", r.stderr);
        assert_eq!(p.run(&["status"]).code, Some(2), "no run was made");
    };
    let (mut p, _remote, gh) = project("");
    p.env.retain(|(k, _)| k != "GITHUB_TOKEN");
    p.env.push(("GITHUB_TOKEN".into(), "wrong".into()));
    refused(&p, "GitHub refused the token (Bad credentials)");
    p.env.retain(|(k, _)| k != "GITHUB_TOKEN");
    p.env.push(("GITHUB_TOKEN".into(), "t0ken".into()));

    p.write(
        "agentloop.toml",
        p.read("agentloop.toml")
            .replace("octo/hello", "octo/elsewhere"),
    );
    refused(
        &p,
        "GitHub has no repository octo/elsewhere that agentloop-test can see",
    );
    p.write(
        "agentloop.toml",
        p.read("agentloop.toml")
            .replace("octo/elsewhere", "octo/hello"),
    );

    p.write(
        "agentloop.toml",
        p.read("agentloop.toml")
            .replace("[ship]\n", "[ship]\nbase = \"release\"\n"),
    );
    refused(
        &p,
        "octo/hello has no branch release for the pull request to go into: push it first",
    );

    gh.read_only();
    refused(&p, "agentloop-test may not push to octo/hello");
    let asked: Vec<String> = gh
        .log()
        .into_iter()
        .filter(|l| l.contains("pulls"))
        .collect();
    assert!(asked.is_empty(), "nothing but questions: {asked:?}");
}

/// An `api_url` without its port (or with a wrong one) is found before the run starts.
#[test]
fn an_unreachable_forge_is_refused_before_the_run_starts() {
    let (p, _remote, gh) = project("");
    let url = gh.url();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    p.write(
        "agentloop.toml",
        p.read("agentloop.toml").replace(&url, &dead),
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains(&dead), "{}", r.stderr);
    assert_eq!(p.run(&["status"]).code, Some(2), "no run was made");
}

/// An agent that answers a red check by rewriting the CI instead of the code is caught
/// by the verification surface; the cheat is never pushed.
#[test]
fn rewriting_the_ci_to_pass_is_caught_before_it_is_pushed() {
    let cheat = r#"case "$task" in
  T1) touch a.txt ;;
  CI-*) echo 'exit 0' > ci.sh ;;
esac
echo TASK_COMPLETE
"#;
    let (p, remote, _gh) = shipping(
        PLAN,
        cheat,
        Some(CI),
        "[verify]\ncheck_files = [\"ci.sh\"]\n\n",
        "",
    );
    let bare = remote.path().join("hello.git");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert!(s["gate"].to_string().contains("surface"), "{s}");
    let branch = git(
        &bare,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/agentloop/",
        ],
    );
    assert!(!branch.is_empty());
    assert_eq!(
        git(&bare, &["show", &format!("{branch}:ci.sh")]),
        CI.trim_end(),
        "the rewritten CI never reached the forge"
    );
}

/// The same flow with the real Claude Code against the mock model server; a person
/// approves with `agentloop approve` instead of a review on the forge.
#[test]
fn the_real_claude_ships_through_a_red_check() {
    use crate::real_cli::{Cli, say};
    let server = Cli::Claude.mock(vec![
        Cli::Claude.shell("touch a.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
        Cli::Claude.shell("touch ci-ok.txt", 10, 1),
        say("Fixed what the CI wanted.\nTASK_COMPLETE", 10, 1, 0),
    ]);
    let remote = tempfile::tempdir().unwrap();
    let bare = remote.path().join("hello.git");
    git(
        remote.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", Some("sh ci.sh"));
    let mut p = Cli::Claude.project(
        &server,
        PLAN,
        &format!(
            "[ship]\nforge = \"github\"\nrepo = \"octo/hello\"\napi_url = \"{}\"\nmerge = \"auto\"\npoll = \"100ms\"\n",
            gh.url()
        ),
    );
    p.write("ci.sh", CI);
    p.commit("the CI");
    p.git_cmd(&["remote", "add", "origin", bare.to_str().unwrap()]);
    p.git_cmd(&["push", "-q", "origin", "main"]);
    p.env.push(("GITHUB_TOKEN".into(), "t0ken".into()));
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&p, "the review gate", |p| {
        crate::support::journal_has(p, "\"point\":\"review\"")
    });
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.steps_used(), 4);
    // The fix task's prompt carried the forge's failure.
    let fix = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(2))
        .unwrap();
    assert!(fix.body.to_string().contains("FAIL: ci-ok.txt missing"));
    assert!(git(&bare, &["ls-tree", "--name-only", "main"]).contains("ci-ok.txt"));
    assert!(!gh.prs()[0].open, "merged");
}

/// A change under src/auth/ holds the pull request at the security gate: labelled,
/// its reviewer asked, a comment says where; an approval from someone else does not
/// release it, `agentloop approve --gate security` does.
#[test]
fn a_change_under_auth_waits_for_the_security_review() {
    let (p, _remote, gh, child) = spawned(
        "# Login\n\n## T1: Login\nVerify: test -f src/auth/login.rs\n",
        "mkdir -p src/auth && echo 'pub fn login() {}' > src/auth/login.rs\necho TASK_COMPLETE\n",
        Some("test -f src/auth/login.rs\n"),
        "[gates.security]\nenabled = true\nreviewers = [\"sec-team\"]\n\n",
        "",
    );
    wait_for(&p, "the security gate", |p| {
        crate::support::journal_has(p, "\"point\":\"diff\",\"task\":\"security\"")
    });
    let pr = gh.prs()[0].clone();
    assert!(
        pr.labels.contains(&"needs:security-review".to_string()),
        "{:?}",
        pr.labels
    );
    assert_eq!(pr.reviewers, ["sec-team"]);
    assert!(
        pr.comments[0].contains("`src/auth/login.rs`: the path matches `auth`"),
        "{}",
        pr.comments[0]
    );
    // bob's approval is not the security team's.
    gh.review(1, "bob", "APPROVED");
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(!crate::support::journal_has(&p, "diff_gate_approved"));
    assert_eq!(p.status()["status"], "waiting");
    let r = p.run(&["approve", "--gate", "security"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // bob's approval then releases the review gate, and agentloop merges.
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Merged without the gate's label, its account saying the gate passed.
    let pr = gh.prs()[0].clone();
    assert!(!pr.open);
    assert!(
        !pr.labels.iter().any(|l| l.starts_with("needs:")),
        "{:?}",
        pr.labels
    );
    assert!(
        pr.body.contains("Gates passed: the security review"),
        "{}",
        pr.body
    );
    let k = kinds(&p);
    let at = |kind: &str| k.iter().position(|x| x == kind);
    assert!(
        at("diff_gates_checked").is_some()
            && at("pr_released").is_some()
            && at("pr_released") < at("pr_merged"),
        "{k:?}"
    );
}

/// The same flow through the mock GitLab: a merge request, a failed pipeline whose job
/// log reaches the agent, the fix, an approval, the merge and the check after it.
#[test]
fn a_run_ships_through_gitlab() {
    use agentloop_testkit::MockGitLab;
    let remote = tempfile::tempdir().unwrap();
    let bare = remote.path().join("hello.git");
    git(
        remote.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    let gl = MockGitLab::start("group/hello", &bare, "glpat", Some("sh ci.sh"), &["alice"]);
    let mut p = Scratch::new()
        .plan(PLAN)
        .agent(&agent(AGENT))
        .file("ci.sh", CI)
        .config(&format!(
            "[ship]\nforge = \"gitlab\"\nrepo = \"group/hello\"\napi_url = \"{}\"\nreviewers = [\"alice\"]\nmerge = \"auto\"\nmethod = \"merge\"\npoll = \"100ms\"\n",
            gl.url()
        ))
        .build();
    p.git_cmd(&["remote", "add", "origin", bare.to_str().unwrap()]);
    p.git_cmd(&["push", "-q", "origin", "main"]);
    p.env.push(("GITLAB_TOKEN".into(), "glpat".into()));
    gl.rate_limit_next(1);
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&p, "the review gate", |p| {
        crate::support::journal_has(p, "\"point\":\"review\"")
    });
    let mr = gl.mrs()[0].clone();
    assert_eq!(
        (mr.source.starts_with("agentloop/"), mr.target.as_str()),
        (true, "main")
    );
    assert_eq!(mr.labels, ["agentloop"]);
    assert_eq!(mr.reviewer_ids, [1], "alice, by id");
    assert!(mr.description.contains("**CI-1**"), "{}", mr.description);
    gl.approve(1, "alice");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = crate::real_cli::journal_events(&p);
    let red = events
        .iter()
        .find(|e| e["kind"] == "checks_finished" && e["data"]["passed"] == false)
        .unwrap();
    assert!(
        red["data"]["checks"][0]["output"]
            .as_str()
            .unwrap()
            .contains("FAIL: ci-ok.txt missing"),
        "the failed job's log: {red}"
    );
    assert!(!gl.mrs()[0].open);
    assert!(git(&bare, &["ls-tree", "--name-only", "main"]).contains("ci-ok.txt"));
    assert_eq!(p.status()["status"], "completed");
}

/// Work merged into main meanwhile breaks the run's checks after its merge: with
/// `after_merge_failure = "fix"` the agent gets a fix task on top of main, shipped as a
/// new pull request, merged and verified.
#[test]
fn a_failure_after_the_merge_is_fixed_in_a_new_pull_request() {
    let script = r#"case "$task" in
  T1) touch a.txt ;;
  MAIN-*) printf '%s' "$prompt" | grep -q 'broken.txt' && git rm -q broken.txt ;;
esac
echo TASK_COMPLETE
"#;
    let (p, remote, gh, child) = at_the_review_gate(
        "# A\n\n## T1: Make a.txt\nVerify: test -f a.txt && { test ! -f broken.txt || { echo 'broken.txt is there'; exit 1; }; }\n",
        script,
        "after_merge_failure = \"fix\"\n",
    );
    let bare = remote.path().join("hello.git");
    // Someone else's work lands on main meanwhile.
    let (_other, _w) = someone_pushes(&bare, "broken.txt", "x\n");
    gh.review(1, "alice", "APPROVED");
    wait_for(&p, "the second pull request", |p| {
        gh.prs().len() == 2 && crate::support::journal_has(p, "MAIN-1")
    });
    gh.review(2, "alice", "APPROVED");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = crate::real_cli::journal_events(&p);
    let post: Vec<bool> = events
        .iter()
        .filter(|e| e["kind"] == "post_merge_verified")
        .map(|e| e["data"]["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(post, [false, true]);
    assert!(!git(&bare, &["ls-tree", "--name-only", "main"]).contains("broken.txt"));
    assert_eq!(p.status()["status"], "completed");
}

/// By default a failure after the merge waits for a person: they fix the base branch
/// and `agentloop approve` verifies it again.
#[test]
fn a_failure_after_the_merge_waits_for_a_person_by_default() {
    let (p, remote, gh, child) = at_the_review_gate(
        "# A\n\n## T1: Make a.txt\nVerify: test -f a.txt && test ! -f broken.txt\n",
        "touch a.txt\necho TASK_COMPLETE\n",
        "",
    );
    let (_other, w) = someone_pushes(&remote.path().join("hello.git"), "broken.txt", "x\n");
    gh.review(1, "alice", "APPROVED");
    wait_for(&p, "the ship gate", |p| {
        crate::support::journal_has(p, "fail on the base branch after the merge")
    });
    assert_eq!(p.status()["status"], "waiting");
    // A person fixes main, then asks for the verification again.
    git(&w, &["pull", "-q", "--no-rebase", "origin", "main"]);
    git(&w, &["rm", "-q", "broken.txt"]);
    git(&w, &["commit", "-q", "-m", "fix main"]);
    git(&w, &["push", "-q", "origin", "main"]);
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let post: Vec<bool> = crate::real_cli::journal_events(&p)
        .iter()
        .filter(|e| e["kind"] == "post_merge_verified")
        .map(|e| e["data"]["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(post, [false, true]);
}

/// A run of `plan` shipping through the mock GitHub with a bare remote,
/// `merge = "auto"`, `ship` more of `[ship]` and `before` ahead of it, the forge's
/// check running `ci.sh` when `ci` is given; spawned.
fn spawned(
    plan: &str,
    script: &str,
    ci: Option<&str>,
    before: &str,
    ship: &str,
) -> (Project, tempfile::TempDir, MockGitHub, std::process::Child) {
    let (p, remote, gh) = shipping(
        plan,
        script,
        ci,
        before,
        &format!("merge = \"auto\"\n{ship}"),
    );
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (p, remote, gh, child)
}

/// [`spawned`] with `method = "merge"` and no CI, waiting at the review gate.
fn at_the_review_gate(
    plan: &str,
    script: &str,
    ship: &str,
) -> (Project, tempfile::TempDir, MockGitHub, std::process::Child) {
    let (p, remote, gh, child) = spawned(
        plan,
        script,
        None,
        "",
        &format!("method = \"merge\"\n{ship}"),
    );
    wait_for(&p, "the review gate", |p| {
        crate::support::journal_has(p, "\"point\":\"review\"")
    });
    (p, remote, gh, child)
}

/// Someone else's commit of `file` with `text` lands on the remote's main; returns the
/// directory of their clone and the clone.
pub(crate) fn someone_pushes(
    bare: &Path,
    file: &str,
    text: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let other = tempfile::tempdir().unwrap();
    git(other.path(), &["clone", "-q", bare.to_str().unwrap(), "w"]);
    let w = other.path().join("w");
    std::fs::write(w.join(file), text).unwrap();
    git(&w, &["add", "-A"]);
    git(
        &w,
        &["commit", "-q", "-m", &format!("someone else's {file}")],
    );
    git(&w, &["push", "-q", "origin", "main"]);
    (other, w)
}

#[test]
fn a_driver_killed_before_and_after_each_ship_record_ships_once() {
    // Killed before `pr_merged` is written, the forge has merged: the next driver's
    // merge is refused, and it records the merge the forge made (before, it waited
    // for a person at the ship gate). Killed before `pr_opened`, the pull request is
    // open (and labelled: these kill points are journal lines, after the forge's
    // calls): the next driver finds it and updates it.
    use std::os::unix::process::ExitStatusExt;
    let kinds = [
        "ship_pushed",
        "pr_opened",
        "checks_finished",
        "diff_gates_checked",
        "pr_merged",
        "post_merge_verified",
    ];
    for kind in kinds {
        for point in ["before-append", "after-append"] {
            let at = format!("{point}:{kind}#1");
            let (p, remote, gh) = shipping(
                PLAN,
                AGENT,
                Some("true\n"),
                "",
                "merge = \"auto\"\nmethod = \"merge\"\n",
            );
            // Drivers one after another (a person approving at the review gate between
            // them) until the run is over; the first to reach the record is killed there.
            let mut killed = false;
            for round in 0..8 {
                if round > 0 && p.status()["gate"]["point"] == "review" {
                    assert_eq!(p.run(&["approve"]).code, Some(0), "{at}");
                }
                let verb = if round == 0 { "run" } else { "resume" };
                let mut c = p.cmd(&[verb, "--quiet", "--no-wait"]);
                if !killed {
                    c.env("AGENTLOOP_FAILPOINT", &at);
                }
                let out = c.output().unwrap();
                if out.status.signal() == Some(9) {
                    killed = true;
                    continue;
                }
                match out.status.code() {
                    Some(0) => break,
                    Some(5) => continue,
                    other => panic!(
                        "{at}: exit {other:?}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    ),
                }
            }
            assert!(killed, "{at} was never reached");
            assert_eq!(p.status()["status"], "completed", "{at}");
            let prs = gh.prs();
            assert_eq!(prs.len(), 1, "{at}: one pull request");
            // Labelled whatever the kill (a driver dying between opening and labelling,
            // which these points cannot reach, is the simulator's and
            // `a_pull_request_whose_labelling_failed_is_labelled_on_the_retry`'s).
            assert_eq!(prs[0].labels, ["agentloop"], "{at}");
            let merged = prs[0].merge_sha.clone().expect("merged");
            let events = crate::real_cli::journal_events(&p);
            let merges: Vec<&serde_json::Value> =
                events.iter().filter(|e| e["kind"] == "pr_merged").collect();
            assert_eq!(merges.len(), 1, "{at}: {merges:?}");
            assert_eq!(merges[0]["data"]["commit"], merged.as_str(), "{at}");
            assert!(!events.iter().any(|e| e["kind"] == "ship_failed"), "{at}");
            assert_eq!(
                git(&remote.path().join("hello.git"), &["rev-parse", "main"]),
                merged,
                "{at}"
            );
            assert_eq!(p.run(&["journal", "verify"]).code, Some(0), "{at}");
        }
    }
}
