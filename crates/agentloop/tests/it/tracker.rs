//! Issue trackers as a plan's source and its status sink: GitHub issues and Linear
//! (GraphQL) through their mocks.

use agentloop_testkit::{MockGitHub, MockLinear};

use crate::support::{Project, Scratch, agent};

/// A bare repository in a directory of its own: a mock forge's remote.
fn bare_remote() -> (tempfile::TempDir, std::path::PathBuf) {
    let remote = tempfile::tempdir().unwrap();
    let bare = remote.path().join("r.git");
    std::process::Command::new("git")
        .args(["init", "-q", "--bare", bare.to_str().unwrap()])
        .status()
        .unwrap();
    (remote, bare)
}

fn import(p: &Project, source: &str, url: &str, token: (&str, &str)) -> crate::support::Run {
    p.cmd(&[
        "plan",
        "import",
        source,
        "--api-url",
        url,
        "--output",
        "PLAN.md",
        "--force",
    ])
    .env(token.0, token.1)
    .output()
    .unwrap()
    .into()
}

/// A mock GitLab project (its remote a bare repository in the returned directory)
/// with `issues` labelled `agentloop`, and a project whose plan was imported from them,
/// driven by the scripted agent `script`.
fn from_gitlab(
    issues: &[(&str, &str)],
    script: &str,
) -> (tempfile::TempDir, agentloop_testkit::MockGitLab, Project) {
    let (remote, bare) = bare_remote();
    let gl = agentloop_testkit::MockGitLab::start("group/hello", &bare, "glpat", None, &[]);
    for (title, body) in issues {
        gl.add_issue(title, body, &["agentloop"]);
    }
    let p = imported(
        script,
        "gitlab:group/hello?label=agentloop",
        &gl.url(),
        ("GITLAB_TOKEN", "glpat"),
    );
    (remote, gl, p)
}

/// The same from a mock GitHub repository.
fn from_github(issues: &[(&str, &str)], script: &str) -> (tempfile::TempDir, MockGitHub, Project) {
    let (remote, bare) = bare_remote();
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", None);
    for (title, body) in issues {
        gh.add_issue(title, body, &["agentloop"]);
    }
    let p = imported(
        script,
        "github:octo/hello?label=agentloop",
        &gh.url(),
        ("GITHUB_TOKEN", "t0ken"),
    );
    (remote, gh, p)
}

/// A project driven by the scripted agent `script`, its plan imported from `source`
/// at the mock forge `url` with the token `token`.
fn imported(script: &str, source: &str, url: &str, token: (&str, &str)) -> Project {
    let p = Scratch::new().agent(&agent(script)).build();
    let r = import(&p, source, url, token);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    p
}

#[test]
fn github_issues_become_a_plan_with_criteria_checks_and_dependencies() {
    let (_remote, bare) = bare_remote();
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", None);
    gh.add_issue(
        "Parse numbers",
        "The parser reads numbers.\n\n- [ ] reads 12\n- [ ] reads -3\n\nVerify: `test -f parser.txt`\n",
        &["agentloop"],
    );
    gh.add_issue(
        "Print them",
        "Depends on #1.\nPrint what was parsed.",
        &["agentloop"],
    );
    gh.add_issue("Not for agents", "x", &["design"]);
    // The first answer is a rate limit: waited out.
    gh.rate_limit_next(403, 1);
    let p = Project::git();
    let r = import(
        &p,
        "github:octo/hello?label=agentloop",
        &gh.url(),
        ("GITHUB_TOKEN", "t0ken"),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let plan = p.read("PLAN.md");
    assert!(plan.contains("tracker: {\"api_url\":"), "{plan}");
    assert!(plan.contains("\"source\":\"github:octo/hello\""), "{plan}");
    assert!(plan.contains("## GH-1: Parse numbers"), "{plan}");
    assert!(plan.contains("- [ ] reads 12"), "{plan}");
    assert!(plan.contains("Verify: test -f parser.txt"), "{plan}");
    assert!(
        plan.contains("## GH-2: Print them") && plan.contains("Depends: GH-1"),
        "{plan}"
    );
    assert!(!plan.contains("Not for agents"));
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // No token: a clear error, and no plan written.
    let q = Project::git();
    let r: crate::support::Run = q
        .cmd(&[
            "plan",
            "import",
            "github:octo/hello",
            "--api-url",
            &gh.url(),
        ])
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("no token for github: set GITHUB_TOKEN or GH_TOKEN"),
        "{}",
        r.stderr
    );
    assert!(!q.path().join("PLAN.md").exists());
}

#[test]
fn a_linear_team_is_imported_and_its_issues_kept_in_step() {
    let linear = MockLinear::start("ENG", "lin_api_key", 1);
    linear.add_issue("Make a.txt", "Verify: test -f a.txt", "Todo");
    linear.add_issue("Pick a colour", "Which one?", "Todo");
    linear.add_issue("Old work", "", "Done");
    // Linear's own rate limit: 400 with RATELIMITED, waited out until its reset.
    linear.rate_limit_next(2);
    let script = r#"case "$task" in
  ENG-1) touch a.txt; echo TASK_COMPLETE ;;
  *) echo "BLOCKED: red or blue?" ;;
esac
"#;
    let mut p = Scratch::new().agent(&agent(script)).build();
    let r = import(
        &p,
        "linear:ENG?state=Todo",
        &linear.url(),
        ("LINEAR_API_KEY", "lin_api_key"),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        linear.requests() == 4,
        "two refusals, then two pages: {}",
        linear.requests()
    );
    let plan = p.read("PLAN.md");
    assert!(
        plan.contains("## ENG-1: Make a.txt") && plan.contains("## ENG-2: Pick a colour"),
        "{plan}"
    );
    assert!(
        !plan.contains("Old work"),
        "one page per issue, and done ones left out: {plan}"
    );
    p.commit("the plan from Linear");
    p.env.push(("LINEAR_API_KEY".into(), "lin_api_key".into()));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    // The loop state names the tracker and what each task's issue was told.
    let state = p.status()["loop"].clone();
    assert!(
        state["tracker"]
            .as_str()
            .is_some_and(|t| t.starts_with("linear:ENG")),
        "{state}"
    );
    assert_eq!(state["issues"]["ENG-1"], "done", "{state}");
    assert_eq!(
        state["stage"], "develop",
        "a blocked task is not settled: {state}"
    );
    let issues = linear.issues();
    assert_eq!(issues[0].state, "Done");
    assert!(
        issues[0].comments[0].starts_with("agentloop started work on this"),
        "{:?}",
        issues[0].comments
    );
    assert!(
        issues[0].comments[1].starts_with("Done, and verified by agentloop"),
        "{:?}",
        issues[0].comments
    );
    assert_eq!(
        issues[1].state, "In Progress",
        "Linear has no blocked state"
    );
    assert!(
        issues[1]
            .comments
            .iter()
            .any(|c| c.contains("blocked on this") && c.contains("red or blue?")),
        "{:?}",
        issues[1].comments
    );
    assert_eq!(issues[2].state, "Done");
    assert!(issues[2].comments.is_empty());
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("task ENG-1: issue ENG-1 told and moved to done"),
        "{log}"
    );
}

#[test]
fn gitlab_issues_are_imported_and_closed_when_done() {
    let (_remote, gl, mut p) = from_gitlab(
        &[("Make b.txt", "Verify: test -f b.txt"), ("Skip me", "x")],
        "case \"$task\" in GL-1) touch b.txt; echo TASK_COMPLETE ;; *) echo 'BLOCKED: why?' ;; esac\n",
    );
    assert!(p.read("PLAN.md").contains("## GL-1: Make b.txt"));
    p.commit("the plan from GitLab");
    p.env.push(("GITLAB_TOKEN".into(), "glpat".into()));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    // A person skips the blocked one: its issue is closed as skipped.
    let r = p.run(&[
        "skip",
        "GL-2",
        "--reason",
        "the colour is decided elsewhere",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let issues = gl.issues();
    assert!(!issues[0].open);
    assert!(
        issues[0]
            .notes
            .iter()
            .any(|n| n.starts_with("Done, and verified")),
        "{:?}",
        issues[0].notes
    );
    assert!(
        issues[1].labels.contains(&"agentloop:blocked".to_string()),
        "{:?}",
        issues[1].labels
    );
    assert!(!issues[1].open && issues[1].labels.contains(&"agentloop:skipped".to_string()));
    assert!(
        issues[1]
            .notes
            .iter()
            .any(|n| n.ends_with(": the colour is decided elsewhere.")),
        "{:?}",
        issues[1].notes
    );
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    assert!(
        handoff.contains("GL-2 Skip me: skipped — the colour is decided elsewhere"),
        "{handoff}"
    );
}

#[test]
fn a_tracker_that_is_down_is_warned_about_once_and_the_run_goes_on() {
    let (_remote, gl, mut p) = from_gitlab(
        &[
            ("Make b.txt", "Verify: test -f b.txt"),
            ("Make c.txt", "Verify: test -f c.txt"),
        ],
        "case \"$task\" in GL-1) touch b.txt ;; *) touch c.txt ;; esac; echo TASK_COMPLETE\n",
    );
    // The tracker goes away: a port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let plan = p.read("PLAN.md").replace(&gl.url(), &dead);
    assert!(plan.contains(&dead), "{plan}");
    p.write("PLAN.md", &plan);
    p.commit("the plan from GitLab");
    p.env.push(("GITLAB_TOKEN".into(), "glpat".into()));
    let started = std::time::Instant::now();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let warnings = r.stderr.matches("tracker:").count();
    assert_eq!(warnings, 1, "{}", r.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(40),
        "{:?}",
        started.elapsed()
    );
    assert!(gl.issues().iter().all(|i| i.open && i.notes.is_empty()));
}

/// The handoff's follow-ups become tracker issues (seed 004's completion): each task
/// not done and each open question once, a second call filing nothing new; on GitHub,
/// GitLab and Linear.
#[test]
fn the_handoffs_follow_ups_are_filed_as_issues_once() {
    let (_remote, bare) = bare_remote();
    let gh = MockGitHub::start("octo/hello", &bare, "t0ken", None);
    let script = "case \"$task\" in\n  T1) touch a.txt; echo TASK_COMPLETE ;;\n  *) echo 'BLOCKED: red or blue?' ;;\nesac\n";
    let mut p = Scratch::new()
        .plan("# Colours\n\n## T1: Make a.txt\nVerify: test -f a.txt\n\n## T2: Pick a colour\nVerify: test -f colour.txt\n")
        .agent(&agent(script))
        .config(&format!(
            "[tracker]\nsource = \"github:octo/hello\"\napi_url = \"{}\"\nsync = false\n",
            gh.url()
        ))
        .build();
    p.env.push(("GITHUB_TOKEN".into(), "t0ken".into()));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    // Not over: nothing is filed yet.
    let r = p.run(&["handoff", "--to-issues"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("is not over"), "{}", r.stderr);
    assert!(
        p.run(&["handoff"])
            .stdout
            .contains("## Deferred or skipped")
    );
    assert_eq!(
        p.run(&["skip", "T2", "--reason", "a person picks it later"])
            .code,
        Some(0)
    );
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The handoff offers them.
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    assert!(
        handoff.contains(
            "2 follow-ups: `agentloop handoff --to-issues` files them on github:octo/hello"
        ),
        "{handoff}"
    );
    let r = p.run(&["handoff", "--to-issues", "--dry-run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "would file: T2: Pick a colour (skipped)\nwould file: T2: an open question\n"
    );
    assert!(gh.issues().is_empty(), "a dry run files nothing");
    let r = p.run(&["handoff", "--to-issues"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let issues = gh.issues();
    assert_eq!(issues.len(), 2, "{issues:?}");
    assert_eq!(issues[0].title, "T2: Pick a colour (skipped)");
    assert!(
        issues[0].body.contains("a person picks it later"),
        "{}",
        issues[0].body
    );
    assert!(
        issues[1].body.contains("red or blue?"),
        "{}",
        issues[1].body
    );
    assert!(r.stdout.contains("filed: "), "{}", r.stdout);
    // Again: the open issues are found, nothing is filed twice.
    let r = p.run(&["handoff", "--to-issues"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout.matches("already filed: ").count(),
        2,
        "{}",
        r.stdout
    );
    assert_eq!(gh.issues().len(), 2);
    // The same on Linear and GitLab.
    let linear = MockLinear::start("ENG", "lin_api_key", 50);
    p.write(
        "agentloop.toml",
        format!(
            "{}\n[tracker]\nsource = \"linear:ENG\"\napi_url = \"{}\"\nsync = false\n",
            p.read("agentloop.toml").split("[tracker]").next().unwrap(),
            linear.url()
        ),
    );
    p.commit("linear");
    p.env.push(("LINEAR_API_KEY".into(), "lin_api_key".into()));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.run(&["skip", "T2"]).code, Some(0));
    assert_eq!(p.run(&["resume", "--no-wait"]).code, Some(0));
    let r = p.run(&["handoff", "--to-issues"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let made = linear.issues();
    assert_eq!(made.len(), 2, "{made:?}");
    assert_eq!(
        (made[0].identifier.as_str(), made[0].state.as_str()),
        ("ENG-1", "Todo")
    );
    let gl = agentloop_testkit::MockGitLab::start("group/hello", &bare, "glpat", None, &[]);
    p.write(
        "agentloop.toml",
        format!(
            "{}\n[tracker]\nsource = \"gitlab:group/hello\"\napi_url = \"{}\"\nsync = false\n",
            p.read("agentloop.toml").split("[tracker]").next().unwrap(),
            gl.url()
        ),
    );
    p.commit("gitlab");
    p.env.push(("GITLAB_TOKEN".into(), "glpat".into()));
    assert_eq!(p.run(&["run", "--no-wait"]).code, Some(5));
    assert_eq!(p.run(&["skip", "T2"]).code, Some(0));
    assert_eq!(p.run(&["resume", "--no-wait"]).code, Some(0));
    assert_eq!(p.run(&["handoff", "--to-issues"]).code, Some(0));
    assert_eq!(gl.issues().len(), 2);
}

/// Seed 004's run-level Linear issue: the plan's `linear: ENG-1` is moved to started
/// and to done, told as each task is done and when the run ends, and progress.md has a
/// "Linear Issue" section.
/// The tracker refuses to close the issue of the run's last task (a token without
/// the right to): the run goes on and ends within the minute the tracker is left
/// alone, and the issue is closed by the last try as the run ends. Found by the
/// simulator, where such an issue stayed open.
#[test]
fn an_issue_the_tracker_would_not_close_is_closed_as_the_run_ends() {
    let (_remote, gh, mut p) = from_github(
        &[("Make a.txt", "Verify: `test -f a.txt`\n")],
        "touch a.txt\necho TASK_COMPLETE\n",
    );
    p.commit("the plan from GitHub");
    p.env.push(("GITHUB_TOKEN".into(), "t0ken".into()));
    gh.fail_next(
        "PATCH",
        "/issues/1",
        403,
        "Resource not accessible by integration",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("Resource not accessible"), "{}", r.stderr);
    let issue = gh.issues()[0].clone();
    assert!(!issue.open, "{issue:?}");
    assert_eq!(p.status()["loop"]["issues"]["GH-1"], "done");
}

#[test]
fn the_runs_own_linear_issue_is_kept_in_step() {
    let linear = MockLinear::start("ENG", "lin_api_key", 50);
    let key = linear.add_issue("The greeter", "Build it.", "Todo");
    let plan = format!(
        "---\nlinear: {key}\ntracker:\n  api_url: \"{}\"\n---\n# Greeter\n\n## T1: a\nVerify: test -f T1.txt\n\n## T2: b\nDepends: T1\nVerify: test -f T2.txt\n",
        linear.url()
    );
    let mut p = Scratch::new()
        .plan(&plan)
        .agent(&agent("touch \"$task.txt\"\necho TASK_COMPLETE\n"))
        .build();
    p.env.push(("LINEAR_API_KEY".into(), "lin_api_key".into()));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let issue = &linear.issues()[0];
    assert_eq!(issue.state, "Done", "{issue:?}");
    let c = &issue.comments;
    assert_eq!(c.len(), 4, "{c:#?}");
    assert!(
        c[0].starts_with("agentloop run `") && c[0].contains("started on this: Greeter (2 tasks)"),
        "{c:#?}"
    );
    assert!(
        c[1].starts_with("T1 a: done and verified (1/2 tasks done"),
        "{c:#?}"
    );
    assert!(
        c[2].starts_with("T2 b: done and verified (2/2 tasks done"),
        "{c:#?}"
    );
    assert!(
        c[3].contains("completed: 2/2 tasks done, verdict"),
        "{c:#?}"
    );
    let progress = std::fs::read_to_string(p.run_dir().join("progress.md")).unwrap();
    assert!(
        progress.contains(
            "## Linear Issue\n\nENG-1 (linear:ENG)\n\nmoved to done; 2 comments about tasks"
        ),
        "{progress}"
    );
    // A resume of the finished run tells nothing twice.
    let r = p.run(&["resume", "--no-wait"]);
    assert_ne!(r.code, None);
    assert_eq!(linear.issues()[0].comments.len(), 4);
    // What is not an issue is refused with its line.
    p.write(
        "PLAN.md",
        "---\nlinear: nope\n---\n# P\n\n## T1: a\nVerify: true\n",
    );
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("linear: `nope` is not a Linear issue"),
        "{}",
        r.stderr
    );
}
