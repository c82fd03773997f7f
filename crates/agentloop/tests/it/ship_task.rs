//! `pr = "task"`: one pull request per task, through the mock GitHub backed by a real
//! bare repository — each on its own branch with only its own change, merged and
//! verified before the next one starts (`merge = "auto"`), or stacked on the one before
//! while a person has yet to merge it (`merge = "manual"`).

use std::process::Stdio;

use crate::ship::{git, kinds, project_with};
use crate::support::wait_for;

const PLAN: &str = "# Two things\n\nGoal: a.txt and b.txt, shipped one by one.\n\n## T1: Make a.txt\nVerify: test -f a.txt\n\n## T2: Make b.txt\nDepends: T1\nVerify: test -f b.txt\n";

/// The forge's CI wants ci-ok.txt once b.txt is there.
const CI: &str = "test -f a.txt || { echo 'FAIL: a.txt missing'; exit 1; }\nif test -f b.txt && ! test -f ci-ok.txt; then echo 'FAIL: ci-ok.txt missing'; exit 1; fi\necho 'all good'\n";

const AGENT: &str = r#"case "$task" in
  T1) echo a > a.txt ;;
  T2) echo b > b.txt ;;
  CI-*) printf '%s' "$prompt" | grep -q 'FAIL: ci-ok.txt missing' && touch ci-ok.txt ;;
esac
echo TASK_COMPLETE
"#;

fn run_id(p: &crate::support::Project) -> String {
    p.run_dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn each_task_is_its_own_pull_request_merged_and_verified_in_turn() {
    let (p, remote, gh) = project_with(
        PLAN,
        AGENT,
        CI,
        "pr = \"task\"\nmerge = \"auto\"\nmethod = \"merge\"\n",
    );
    let bare = remote.path().join("hello.git");
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&p, "the first pull request", |_| !gh.prs().is_empty());
    gh.review(1, "alice", "APPROVED");
    wait_for(&p, "the second pull request", |_| gh.prs().len() == 2);
    gh.review(2, "alice", "APPROVED");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = run_id(&p);
    let prs = gh.prs();
    assert_eq!(prs.len(), 2, "one pull request per task");
    assert_eq!(prs[0].head, format!("agentloop/{run}-T1"));
    assert_eq!(prs[1].head, format!("agentloop/{run}-T2"));
    assert!(prs.iter().all(|pr| pr.base == "main" && !pr.open));
    assert_eq!(prs[0].title, "T1: Make a.txt");
    assert_eq!(prs[1].title, "T2: Make b.txt");
    assert!(
        prs[0]
            .body
            .contains("**T1** Make a.txt — verified by `test -f a.txt`")
    );
    assert!(!prs[0].body.contains("**T2**"), "{}", prs[0].body);
    assert!(
        prs[1]
            .body
            .contains("**CI-1** Make the forge's checks pass")
    );
    assert!(prs[1].body.contains("this is the 2nd"), "{}", prs[1].body);
    // The second branch started from main after the first merge, and carries only T2's
    // change and its fix.
    let merged_first = prs[0].merge_sha.clone().unwrap();
    let t2 = format!("agentloop/{run}-T2");
    assert_eq!(
        git(&bare, &["merge-base", &merged_first, &t2]),
        merged_first
    );
    let files = git(
        &bare,
        &["diff", "--name-only", &format!("{merged_first}..{t2}")],
    );
    assert_eq!(files.lines().collect::<Vec<_>>(), ["b.txt", "ci-ok.txt"]);
    // T2's own commit is the same one before and after its fix was added on top.
    let events = crate::real_cli::journal_events(&p);
    let pushes: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["kind"] == "ship_pushed" && e["data"]["branch"] == t2.as_str())
        .collect();
    assert_eq!(pushes.len(), 2, "pushed again after the fix");
    let first = pushes[0]["data"]["commit"].as_str().unwrap();
    let second = pushes[1]["data"]["commit"].as_str().unwrap();
    assert_eq!(git(&bare, &["rev-parse", &format!("{second}^")]), first);
    let order = [
        "ship_unit_started",
        "pr_opened",
        "pr_merged",
        "post_merge_verified",
        "task_shipped",
        "ship_unit_started",
        "checks_finished",
        "ship_fix_added",
        "ship_pushed",
        "pr_merged",
        "post_merge_verified",
        "task_shipped",
        "run_finished",
    ];
    let k = kinds(&p);
    let mut at = 0;
    for want in order {
        at += k[at..]
            .iter()
            .position(|e| e == want)
            .unwrap_or_else(|| panic!("{want} after {at} in {k:?}"));
    }
    let main = git(&bare, &["ls-tree", "--name-only", "main"]);
    for f in ["a.txt", "b.txt", "ci-ok.txt"] {
        assert!(main.contains(f), "{main}");
    }
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    assert!(
        handoff
            .contains("- T1: pull request #1: https://github.invalid/octo/hello/pull/1, merged as"),
        "{handoff}"
    );
    assert!(handoff.contains("- T2: pull request #2"), "{handoff}");
}

#[test]
fn unmerged_pull_requests_stack_one_on_the_other() {
    let (p, remote, gh) = project_with(PLAN, AGENT, "echo 'all good'\n", "pr = \"task\"\n");
    let bare = remote.path().join("hello.git");
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for n in 1..=2 {
        wait_for(&p, "a review gate", |p| {
            gh.prs().len() == n && p.status()["gate"].to_string().contains("review")
        });
        let r = p.run(&["approve"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = run_id(&p);
    let prs = gh.prs();
    let t1 = format!("agentloop/{run}-T1");
    assert_eq!(prs[0].base, "main");
    assert_eq!(prs[1].base, t1, "stacked on the first");
    assert!(prs.iter().all(|pr| pr.open), "a person merges");
    assert!(
        prs[1]
            .body
            .contains(&format!("Stacked on #1 (T1) (`{t1}`)")),
        "{}",
        prs[1].body
    );
    let t2 = format!("agentloop/{run}-T2");
    assert_eq!(
        git(&bare, &["diff", "--name-only", &format!("{t1}..{t2}")]),
        "b.txt"
    );
    assert_eq!(
        git(&bare, &["diff", "--name-only", &format!("main..{t1}")]),
        "a.txt"
    );
    assert!(!git(&bare, &["ls-tree", "--name-only", "main"]).contains("a.txt"));
}

/// Someone else's a.txt lands on main while the agent makes its own: T1's change does
/// not apply there, which waits for a person with the files in conflict; nothing is
/// pushed or proposed.
#[test]
fn a_task_whose_change_conflicts_with_the_base_waits_for_a_person() {
    let (p, remote, gh) = project_with(PLAN, AGENT, "echo 'all good'\n", "pr = \"task\"\n");
    let bare = remote.path().join("hello.git");
    let (_other, _w) = crate::ship::someone_pushes(&bare, "a.txt", "someone else's\n");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr.contains("does not apply") && r.stderr.contains("conflicts in a.txt"),
        "{}",
        r.stderr
    );
    assert!(gh.prs().is_empty());
    assert!(
        git(
            &bare,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/heads/agentloop/"
            ]
        )
        .is_empty()
    );
    let s = p.status();
    assert_eq!(s["status"], "waiting", "{s}");
}

/// With workers each task's change is its merge onto the integration branch; its
/// pull request carries that change alone all the same.
#[test]
fn tasks_merged_by_workers_ship_one_by_one_too() {
    let plan = "# Two things\n\n## T1: Make a.txt\nVerify: test -f a.txt\n\n## T2: Make b.txt\nVerify: test -f b.txt\n";
    let (p, remote, gh) = project_with(
        plan,
        AGENT,
        "echo 'all good'\n",
        "pr = \"task\"\nmerge = \"auto\"\n",
    );
    let bare = remote.path().join("hello.git");
    let child = p
        .cmd(&["run", "--quiet", "--workers", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&p, "the first pull request", |_| !gh.prs().is_empty());
    gh.review(1, "alice", "APPROVED");
    wait_for(&p, "the second pull request", |_| gh.prs().len() == 2);
    gh.review(2, "alice", "APPROVED");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prs = gh.prs();
    let first = prs[0].merge_sha.clone().unwrap();
    for (pr, file) in prs.iter().zip(["a.txt", "b.txt"]) {
        assert_eq!(pr.base, "main");
        // Squashed: the merge is one commit with the pull request's change.
        let sha = pr.merge_sha.as_deref().unwrap();
        assert_eq!(
            git(&bare, &["diff", "--name-only", &format!("{sha}^..{sha}")]),
            file,
            "{}",
            pr.title
        );
    }
    assert!(git(&bare, &["ls-tree", "--name-only", "main"]).contains("b.txt"));
    assert_ne!(first, git(&bare, &["rev-parse", "main"]));
}

/// Work merged into main breaks the first task's checks after its merge: the fix for
/// main ships as its own pull request before the next task's.
#[test]
fn a_fix_for_main_ships_before_the_tasks_still_waiting() {
    let plan = "# Two things\n\n## T1: Make a.txt\nVerify: test -f a.txt && { test ! -f broken.txt || { echo 'broken.txt is there'; exit 1; }; }\n\n## T2: Make b.txt\nDepends: T1\nVerify: test -f b.txt\n";
    let script = r#"case "$task" in
  T1) echo a > a.txt ;;
  T2) echo b > b.txt ;;
  MAIN-*) printf '%s' "$prompt" | grep -q 'broken.txt' && git rm -q broken.txt ;;
esac
echo TASK_COMPLETE
"#;
    let (p, remote, gh) = project_with(
        plan,
        script,
        "echo 'all good'\n",
        "pr = \"task\"\nmerge = \"auto\"\nmethod = \"merge\"\nafter_merge_failure = \"fix\"\n",
    );
    let bare = remote.path().join("hello.git");
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&p, "the first pull request", |_| !gh.prs().is_empty());
    let other = tempfile::tempdir().unwrap();
    git(other.path(), &["clone", "-q", bare.to_str().unwrap(), "w"]);
    let w = other.path().join("w");
    std::fs::write(w.join("broken.txt"), "x\n").unwrap();
    git(&w, &["add", "-A"]);
    git(&w, &["commit", "-q", "-m", "someone else's work"]);
    git(&w, &["push", "-q", "origin", "main"]);
    for n in 1..=3 {
        wait_for(&p, "the next pull request", |_| {
            gh.prs().len() == n as usize
        });
        gh.review(n, "alice", "APPROVED");
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let titles: Vec<String> = gh.prs().into_iter().map(|pr| pr.title).collect();
    assert_eq!(
        titles,
        [
            "T1: Make a.txt",
            "MAIN-1: Make the run's checks pass on the base branch",
            "T2: Make b.txt"
        ]
    );
    let main = git(&bare, &["ls-tree", "--name-only", "main"]);
    assert!(
        !main.contains("broken.txt") && main.contains("b.txt"),
        "{main}"
    );
    let events = crate::real_cli::journal_events(&p);
    let verified: Vec<bool> = events
        .iter()
        .filter(|e| e["kind"] == "post_merge_verified")
        .map(|e| e["data"]["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(verified, [false, true, true]);
}

/// A plan imported from the tracker, shipped one pull request per task: each task's
/// issue is told its own pull request, once.
#[test]
fn each_tasks_issue_is_told_its_own_pull_request() {
    let agent = "case \"$task\" in GH-1) echo a > a.txt ;; GH-2) echo b > b.txt ;; esac\necho TASK_COMPLETE\n";
    let (p, _remote, gh) = project_with(
        PLAN,
        agent,
        "echo 'all good'\n",
        "pr = \"task\"\nmerge = \"auto\"\n",
    );
    let one = gh.add_issue("Make a.txt", "", &["agentloop"]);
    let two = gh.add_issue("Make b.txt", "", &["agentloop"]);
    assert_eq!((one, two), (1, 2));
    p.write(
        "PLAN.md",
        format!(
            "---\ntracker: {{\"source\": \"github:octo/hello\", \"api_url\": \"{}\"}}\n---\n# Two things\n\n## GH-{one}: Make a.txt\nVerify: test -f a.txt\n\n## GH-{two}: Make b.txt\nDepends: GH-{one}\nVerify: test -f b.txt\n",
            gh.url()
        ),
    );
    p.commit("the plan from the tracker");
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for n in 1..=2 {
        wait_for(&p, "the next pull request", |_| {
            gh.prs().len() == n as usize
        });
        gh.review(gh.prs()[n as usize - 1].number, "alice", "APPROVED");
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prs = gh.prs();
    for (issue, pr) in [one, two].iter().zip(&prs) {
        let i = gh
            .issues()
            .into_iter()
            .find(|i| i.number == *issue)
            .unwrap();
        let told: Vec<&String> = i
            .comments
            .iter()
            .filter(|c| c.contains("proposed this in pull request"))
            .collect();
        assert_eq!(told.len(), 1, "{:?}", i.comments);
        assert!(
            told[0].contains(&format!("/pull/{}", pr.number)),
            "{told:?}"
        );
    }
}

/// A git older than 2.40 cannot build a task's branch (`merge-tree --merge-base`):
/// the run is refused before any work, saying what to install.
#[test]
fn an_old_git_is_refused_before_the_run_starts() {
    let (mut p, _remote, _gh) = project_with(PLAN, AGENT, CI, "pr = \"task\"\n");
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let shim = p.path().join(".git/old-git");
    std::fs::create_dir_all(&shim).unwrap();
    p.write(
        ".git/old-git/git",
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'git version 2.39.5'; exit 0; }}\nexec {} \"$@\"\n",
            real.trim()
        ),
    );
    std::process::Command::new("chmod")
        .args(["+x", &shim.join("git").display().to_string()])
        .status()
        .unwrap();
    let path = format!("{}:{}", shim.display(), std::env::var("PATH").unwrap());
    p.env.push(("PATH".into(), path));
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("needs git 2.40 or newer") && r.stderr.contains("this git is 2.39"),
        "{}",
        r.stderr
    );
    assert!(
        !p.path().join(".agentloop/runs").exists(),
        "no run was made"
    );
}

/// Each task's pull request is held by its own gates: the deploy gate released for the
/// first task's merge holds the second's again (a release is one pull request's).
#[test]
fn each_tasks_merge_waits_at_the_deploy_gate_again() {
    let (p, _remote, gh) = project_with(
        PLAN,
        AGENT,
        "echo ok\n",
        "pr = \"task\"\nmerge = \"auto\"\nmethod = \"merge\"\n\n[gates.deploy]\nenabled = true\n",
    );
    let child = p
        .cmd(&["run", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deploy_gates = |p: &crate::support::Project| {
        std::fs::read_to_string(p.run_dir().join("journal.jsonl"))
            .unwrap_or_default()
            .matches("\"point\":\"diff\",\"task\":\"deploy\"")
            .count()
    };
    for n in 1..=2u64 {
        wait_for(&p, "the pull request", |_| gh.prs().len() as u64 == n);
        gh.review(n, "alice", "APPROVED");
        wait_for(&p, "the deploy gate", |p| deploy_gates(p) == n as usize);
        let merged = gh.prs().iter().filter(|pr| pr.merge_sha.is_some()).count();
        assert_eq!(merged as u64, n - 1, "held before its merge");
        let r = p.run(&["approve", "--gate", "deploy"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(gh.prs().iter().all(|pr| pr.merge_sha.is_some()));
    assert_eq!(deploy_gates(&p), 2);
}
