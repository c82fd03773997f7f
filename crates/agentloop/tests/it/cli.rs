//! The command line as a user sees it: snapshots of its output.

use crate::support::Scratch;
use crate::support::{Project, redact};

#[test]
fn demo_runs_the_example_to_verified_completion() {
    let p = Project::git();
    let dir = p.path().join("demo");
    let r = p.run(&["demo", "--dir", dir.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    insta::assert_snapshot!(redact(&p, &r.stderr));
    // The example agent's false claim on T2 was caught by verification, then fixed.
    let log = p.cmd(&["log"]).current_dir(&dir).output().unwrap();
    let log = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(log.contains("Failed · verification failed: `sh tests/test_shout.sh`: 1 of the tests it must make pass is not passing (shout::shouted greeting: failed) — expected 'HELLO, ADA!', got 'HELLO, Ada!' (the agent claimed the task was complete)"), "{log}");
    let greet = std::fs::read_to_string(dir.join("src/greet.sh")).unwrap();
    assert!(greet.contains("tr '[:lower:]' '[:upper:]'"));
}

#[test]
fn run_then_status_log_and_runs() {
    let p = Project::example();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    insta::assert_snapshot!("status", redact(&p, &p.run(&["status"]).stdout));
    insta::assert_snapshot!("log", redact(&p, &p.run(&["log"]).stdout));
    let runs = p.run(&["runs"]);
    assert!(
        runs.stdout
            .contains("completed  3/3 tasks    4 it    $0.00  Greeter"),
        "{}",
        runs.stdout
    );
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(s["iterations"], 4);
    assert_eq!(s["tasks"][1]["iterations"], 2);
    assert_eq!(s["tasks"][1]["status"], "done");
    for key in ["run_id", "cost_usd", "tokens"] {
        assert!(s.get(key).is_some(), "status --json lacks {key}");
    }
    // One commit per verified task, recorded in progress.md.
    let log = p.git_cmd(&["log", "--format=%s"]);
    assert_eq!(
        log.lines().take(3).collect::<Vec<_>>(),
        [
            "agentloop: T3 Document usage",
            "agentloop: T2 Shout",
            "agentloop: T1 Greet by name"
        ]
    );
    let progress = std::fs::read_to_string(p.run_dir().join("progress.md")).unwrap();
    assert!(
        progress.contains("- [x] T2: Shout (2 iterations, ")
            && progress.contains("s, $0.00, commit "),
        "{progress}"
    );
}

#[test]
fn json_streams_journal_events_on_stdout() {
    let p = Project::example();
    let r = p.run(&["run", "--json", "--quiet"]);
    assert_eq!(r.code, Some(0));
    assert!(r.stderr.is_empty(), "--quiet prints nothing: {}", r.stderr);
    let kinds: Vec<String> = r
        .stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["event"]["kind"].as_str().unwrap().to_string()
        })
        .collect();
    // The whole journal, from its first event: the plan and the settings, the
    // baseline of the verification surface.
    assert_eq!(
        kinds[..3],
        ["run_created", "baseline_recorded", "driver_started"]
    );
    assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
    let journal = p.run(&["log", "--json"]).stdout;
    assert_eq!(r.stdout, journal, "--json streams exactly the journal");
    assert_eq!(kinds.iter().filter(|k| *k == "verify_finished").count(), 4);
}

#[test]
fn plan_check_prints_the_task_graph() {
    let p = Project::example();
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(0));
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn config_show_names_every_source() {
    let p = Project::example();
    p.write(
        "PLAN.md",
        format!(
            "---\nbudgets:\n  task_retries: 4\n---\n{}",
            p.read("PLAN.md")
        ),
    );
    let r = p.run(&["config", "show"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    insta::assert_snapshot!(redact(&p, &r.stdout));
}

#[test]
fn init_writes_templates_and_ignores_the_state_dir() {
    let p = Project::git();
    let r = p.run(&["init"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(p.read(".gitignore").contains(".agentloop/"));
    assert!(p.read("agentloop.toml").contains("[budgets]"));
    // The template plan's placeholders are not checks: plan check says so, by line.
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .starts_with("error: PLAN.md:5: task \"T1\": `Verify: echo"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("always passes, so it checks nothing"));
    // A second init changes nothing.
    let before = p.tree();
    assert_eq!(p.run(&["init"]).code, Some(0));
    assert_eq!(p.tree(), before);
}

/// `init` writes a short file that names the configuration's schema, which it writes
/// too; `--full` writes every section; completions and man pages come from the same
/// definitions as `--help`.
#[test]
fn init_is_short_names_its_schema_and_the_tool_installs_like_one() {
    let p = Project::git();
    assert_eq!(p.run(&["init"]).code, Some(0));
    let short = p.read("agentloop.toml");
    assert!(
        short.starts_with("#:schema ./.agentloop/agentloop.schema.json\n"),
        "{short}"
    );
    assert!(short.lines().count() <= 20, "{short}");
    assert!(
        !short.contains("[executor]") && !short.contains("[store]"),
        "{short}"
    );
    let schema: serde_json::Value =
        serde_json::from_str(&p.read(".agentloop/agentloop.schema.json")).unwrap();
    assert!(schema["properties"]["budgets"].is_object(), "{schema}");
    let printed = p.run(&["config", "schema"]);
    assert_eq!(printed.code, Some(0), "{}", printed.stderr);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&printed.stdout).unwrap(),
        schema
    );
    let full = Project::git();
    assert_eq!(full.run(&["init", "--full"]).code, Some(0));
    let full_text = full.read("agentloop.toml");
    assert!(full_text.contains("[executor]") && full_text.contains("[sandbox]"));
    assert!(full_text.lines().count() > 100);
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let r = p.run(&["completions", shell]);
        assert_eq!(r.code, Some(0), "{shell}: {}", r.stderr);
        assert!(r.stdout.contains("verify-surface"), "{shell}");
        // Entry points agentloop starts itself are offered to no one.
        assert!(
            !r.stdout.contains("sandbox-net") && !r.stdout.contains("agentloop job"),
            "{shell}"
        );
        assert!(r.stdout.contains("checkpoint"), "{shell}: --mode's values");
    }
    let r = p.run(&["completions", "tcsh"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let man = p.path().join("man1");
    let r = p.run(&["man", man.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let run_page = std::fs::read_to_string(man.join("agentloop-run.1")).unwrap();
    assert!(
        run_page.contains(".TH") && run_page.contains("max\\-iterations"),
        "{run_page}"
    );
    assert!(man.join("agentloop-hook-install.1").exists());
    assert!(
        !man.join("agentloop-job.1").exists(),
        "hidden commands have no page"
    );
}

#[test]
fn init_writes_the_projects_own_checks() {
    let p = Project::git();
    // `npm test` runs lint and then jest through two nested scripts; tsc is not
    // installed.
    p.write(
        "package.json",
        r#"{"name": "x", "scripts": {"build": "tsc", "test": "npm run lint && npm run unit", "lint": "eslint .", "unit": "jest"}}"#,
    );
    for bin in ["jest", "eslint"] {
        p.write(&format!("node_modules/.bin/{bin}"), "#!/bin/sh\n");
        let path = p.path().join("node_modules/.bin").join(bin);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    p.write(".gitignore", "node_modules/\n");
    let r = p.run(&["init"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let config = p.read("agentloop.toml");
    assert!(
        config.contains(
            "commands = [\n    \"npm test\",  # from package.json: read test by test (jest)\n]"
        ),
        "{config}"
    );
    assert!(
        config.contains("# not written, it cannot start here: \"npm run build\" (from package.json): tsc, which the package script runs, is neither in node_modules/.bin nor on PATH"),
        "{config}"
    );
    assert!(config.contains("\ncarry = [\"node_modules\"]"), "{config}");
    assert!(
        r.stderr.contains("check, from package.json: npm test"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("not written as a check: `npm run build` (from package.json): tsc"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("`agentloop plan check --baseline` lists the tests failing now"),
        "{}",
        r.stderr
    );
    // The file is valid: the run's configuration reads it (with a real plan).
    p.write("PLAN.md", "# X\n\n## T1: A\nVerify: test -f a.txt\n");
    let r = p.run(&["config", "show", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["verify.commands"]["value"],
        serde_json::json!(["npm test"])
    );
    assert_eq!(
        v["verify.carry"]["value"],
        serde_json::json!(["node_modules"])
    );
    // tox followed to the pytest it runs, and what it runs besides.
    let t = Project::git();
    t.write(
        "tox.ini",
        "[tox]\nenvlist = py3\n\n[testenv]\ndeps = pytest\ncommands =\n    pytest {posargs} tests\n    agentloop-no-such-linter src\n",
    );
    t.write("setup.cfg", "[metadata]\nname = x\n");
    let r = t.run(&["init", "--full"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let config = t.read("agentloop.toml");
    assert!(!config.contains("\"tox\""), "{config}");
    assert!(
        config.contains("# not written, it cannot start here: \"agentloop-no-such-linter src\" (from tox.ini [testenv] commands): agentloop-no-such-linter is not installed (not on PATH)"),
        "{config}"
    );
    let pytest = std::process::Command::new("python3")
        .args(["-c", "import pytest"])
        .status()
        .is_ok_and(|s| s.success());
    assert_eq!(
        config.contains("    \"python3 -m pytest tests\",  # from tox.ini [testenv] commands: read test by test (pytest)\n"),
        pytest,
        "written exactly when python3 can import pytest: {config}"
    );
}

#[test]
fn plan_check_calls_a_plan_whose_checks_cannot_start_invalid() {
    let p = Project::git();
    p.write(
        "PLAN.md",
        "# X\n\n## T1: A\nVerify: agentloop-no-such-runner -q tests\n\n## T2: B\nVerify: ./check.sh\nVerify: ! grep -q TODO src.txt\n",
    );
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(2), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("1 check cannot start on this machine:\n  T1's Verify `agentloop-no-such-runner -q tests`: agentloop-no-such-runner is not installed (not on PATH)"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("valid"), "{}", r.stdout);
    // A script a task may write, and the shell's own words, are not judged.
    p.write(
        "PLAN.md",
        "# X\n\n## T2: B\nVerify: ./check.sh\nVerify: ! grep -q TODO src.txt\n",
    );
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn plan_import_converts_prd_and_task_master() {
    let p = Project::git();
    p.write(
        "prd.json",
        r#"{"project":"Shop","description":"Checkout","userStories":[{"id":"US-001","title":"Cart","description":"As a buyer","acceptanceCriteria":["items listed"],"priority":1,"passes":false}]}"#,
    );
    let r = p.run(&["plan", "import", "prd.json", "-o", "-"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    insta::assert_snapshot!("import_prd", r.stdout);
    p.write(
        "tasks.json",
        r#"{"tasks":[{"id":1,"title":"API","description":"Build","status":"pending","dependencies":[],"subtasks":[{"id":1,"title":"Routes","status":"pending","dependencies":[]}]},{"id":2,"title":"UI","status":"pending","dependencies":[1]}]}"#,
    );
    assert_eq!(p.run(&["plan", "import", "tasks.json"]).code, Some(0));
    let check = p.run(&["plan", "check"]);
    assert_eq!(check.code, Some(0));
    assert!(check.stdout.contains("T1-1  Routes"), "{}", check.stdout);
    // It does not overwrite without --force.
    let again = p.run(&["plan", "import", "tasks.json"]);
    assert_eq!(again.code, Some(2));
}

#[test]
fn help_documents_exit_codes() {
    let r = Project::git().run(&["--help"]);
    assert_eq!(r.code, Some(0));
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn the_documented_plan_example_is_valid() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/PLAN.md"),
    )
    .unwrap();
    let start = doc.find("```markdown\n").unwrap() + "```markdown\n".len();
    let end = start + doc[start..].find("\n```\n").unwrap();
    let plan = agentloop_plan::Plan::parse("docs/PLAN.md", &doc[start..end]).unwrap();
    assert_eq!(plan.ids(), vec!["T1", "T2", "T3"]);
    assert_eq!(plan.settings["budgets"]["task_retries"], 4);
    assert_eq!(plan.tasks[1].scope, vec!["src/"]);
}

#[test]
fn watch_frames() {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let state = cached_state(&p);
    let frame = agentloop::watch_frame(&state, "", "watching", 100, 20);
    insta::assert_snapshot!("watch_completed", redact(&p, &frame));
    // A run waiting at a gate shows what it needs, with the live output of the iteration.
    let q = Scratch::new()
        .plan("# G\n\n## T1: Gated\nVerify: true\nGate: before\n")
        .agent("cat >/dev/null; echo TASK_COMPLETE\n")
        .build();
    assert_eq!(q.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let state = cached_state(&q);
    let frame =
        agentloop::watch_frame(&state, "$ cargo test\nrunning 3 tests", "watching", 100, 20);
    assert!(
        frame.contains("needs you: approve task T1 before it starts — a approve"),
        "{frame}"
    );
    insta::assert_snapshot!("watch_gate", redact(&q, &frame));
}

#[test]
fn config_show_hides_secret_values_and_hook_install_adds_team_hooks() {
    let p = Project::example();
    p.write(
        "agentloop.toml",
        "[agents.mine]\ncommand = [\"true\"]\nenv = { API_TOKEN = \"tok-0123456789\", MODE = \"fast\" }\n",
    );
    for args in [&["config", "show"][..], &["config", "show", "--json"]] {
        let r = p.run(args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(!r.stdout.contains("tok-0123456789"), "{}", r.stdout);
        assert!(
            r.stdout.contains("[REDACTED]") && r.stdout.contains("fast"),
            "{}",
            r.stdout
        );
    }
    let r = p.run(&["hook", "install", "--team"]);
    assert!(r.stderr.contains("6 agentloop hooks"), "{}", r.stderr);
    assert!(
        p.read(".claude/settings.json")
            .contains(" hook teammate-idle")
    );
    let help = p.run(&["hook", "--help"]).stdout;
    for event in [
        "stop",
        "subagent-stop",
        "session-start",
        "stop-failure",
        "session-end",
        "task-completed",
        "teammate-idle",
        "pre-tool-use",
        "prompt-expansion",
    ] {
        assert!(help.contains(&format!("  {event} ")), "{event} in\n{help}");
    }
}

/// The run's state as its `state.json` says (unsealed reading is fine for a picture).
pub(crate) fn cached_state(p: &Project) -> agentloop_journal::RunState {
    let text = std::fs::read_to_string(p.run_dir().join("state.json")).unwrap();
    let mut state: agentloop_journal::RunState = serde_json::from_str(&text).unwrap();
    state.reindex();
    state
}

#[test]
fn agents_says_when_an_installed_cli_is_newer_than_the_tested_one() {
    let p = Project::git();
    let bin = p.path().join(".git/fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    std::fs::write(&claude, "#!/bin/sh\necho '2.9.1 (Claude Code)'\n").unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The other agent CLIs shadowed by ones that fail at once, whatever directory
    // holds them or git.
    fail_at_once_but_claude(&bin);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let r: crate::support::Run = p
        .cmd(&["agents", "--json"])
        .env("PATH", &path)
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&r.stdout).unwrap();
    let row = rows.iter().find(|r| r["name"] == "claude").unwrap();
    assert_eq!(row["version"], "2.9.1 (Claude Code)");
    assert_eq!(row["newest_tested"], "2.1.332");
    let r: crate::support::Run = p
        .cmd(&["agents"])
        .env("PATH", &path)
        .output()
        .unwrap()
        .into();
    assert!(
        r.stdout
            .contains("newer than the newest version agentloop was tested with (2.1.332)"),
        "{}",
        r.stdout
    );
    // A CLI that does not start says why under its row, not only in `--json`.
    assert!(
        r.stdout.contains("installed, does not start")
            && r.stdout.contains("codex --version` failed: "),
        "{}",
        r.stdout
    );
}

/// A run asks a CLI its version once: a resumed one takes the answer from the cache
/// while the program is the same file; an upgraded one is asked again, and
/// `agentloop agents` always asks.
#[test]
fn a_run_asks_a_clis_version_again_only_when_it_changed() {
    let p = crate::support::Scratch::new()
        .plan("# A\n\n## T1: A\nVerify: true\n")
        .config("[run]\nagent = \"claude\"\n")
        .build();
    let bin = p.path().join(".git/fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let asked = p.path().join(".git/asked");
    let claude = bin.join("claude");
    let script = |v: &str| {
        std::fs::write(
            &claude,
            format!(
                "#!/bin/sh\nif [ \"$1\" = --version ]; then echo x >> '{}'; echo '{v} (Claude Code)'; fi\nexit 1\n",
                asked.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    };
    script("2.1.197");
    // `agents` asks every CLI it finds: the others, ahead of the real ones on the
    // PATH, answer at once.
    fail_at_once_but_claude(&bin);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let times = || {
        std::fs::read_to_string(&asked)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let run = |args: &[&str]| {
        let r: crate::support::Run = p.cmd(args).env("PATH", &path).output().unwrap().into();
        assert!(
            !r.stderr.contains("error:"),
            "{args:?}: {}\n{}",
            r.stdout,
            r.stderr
        );
    };
    run(&["run", "--no-wait", "--max-iterations", "1"]);
    assert_eq!(times(), 1);
    run(&["resume", "--no-wait", "--iterations", "+1"]);
    assert_eq!(times(), 1, "the resumed run took the answer from the cache");
    script("2.1.198");
    run(&["resume", "--no-wait", "--iterations", "+1"]);
    assert_eq!(times(), 2, "an upgraded CLI is asked again");
    run(&["agents"]);
    assert_eq!(times(), 3, "`agents` always asks");
}

#[test]
fn aider_without_a_model_or_key_is_refused_before_the_run() {
    let p = crate::support::Scratch::new()
        .plan("# A\n\n## T1: A\nVerify: true\n")
        .config("[run]\nagent = \"aider\"\n")
        .build();
    let bin = p.path().join(".git/fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let aider = bin.join("aider");
    std::fs::write(&aider, "#!/bin/sh\necho 'aider 0.86.2'\n").unwrap();
    std::fs::set_permissions(&aider, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let home = p.path().join(".git/empty-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = p.cmd(&["run"]);
    c.env("PATH", &path).env("HOME", &home);
    for k in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "GEMINI_API_KEY",
        "DEEPSEEK_API_KEY",
        "VERTEXAI_PROJECT",
        "AIDER_MODEL",
    ] {
        c.env_remove(k);
    }
    let r: crate::support::Run = c.output().unwrap().into();
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("aider has no model and no provider key"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("model = \"openai/gpt-4.1\""),
        "{}",
        r.stderr
    );
    assert_eq!(p.run(&["status"]).code, Some(2), "no run was made");
}

/// A run outside git says once what it cannot do there and goes on: the tree is still
/// observed (the no-change breaker blocks a task that changes nothing), nothing tries
/// to commit, and a blocked task says at once what it waits for.
#[test]
fn a_run_outside_git_says_what_it_cannot_do_and_what_it_waits_for() {
    let p = crate::support::Scratch::new()
        .plan("# Two\n\n## T1: Make a.txt\nVerify: test -f a.txt\n\n## T2: Make b.txt\nVerify: test -f b.txt\n")
        .agent("prompt=$(cat)\ncase \"$prompt\" in *\"Your task: T1 \"*) touch a.txt ;; esac\necho TASK_COMPLETE\n")
        .build();
    std::fs::remove_dir_all(p.path().join(".git")).unwrap();
    let r = p.run(&["run", "--no-wait"]);
    // Blocked by the no-change breaker: exit 4.
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("not a git repository: no task's work is committed"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("could not commit"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("no task can go on until a person looks at T2"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("no change in the working tree"),
        "the tree is observed without git: {}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}");
    // A blocked task gets no more attempts until a person retries it: its count is in
    // the past, not "attempt 3 of at most 16".
    assert_eq!(
        s["tasks"][1]["attempt"], s["tasks"][1]["attempts_at_most"],
        "{s:#}"
    );
    let shown = p.run(&["status"]).stdout;
    assert!(shown.contains("3 attempts, blocked"), "{shown}");
    assert!(!shown.contains("of at most"), "{shown}");
    assert!(
        shown.contains("prerequisites: not a git repository · no commits of tasks"),
        "{shown}"
    );
}

/// `cargo package` puts only a crate's own directory into its package: a published
/// crate's source that includes a file from outside it builds here and nowhere else.
/// (CI runs `cargo package --no-verify`; this is the part of the verification build it
/// skips that can go wrong.)
#[test]
fn published_crates_include_no_file_from_outside_themselves() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let include = regex::Regex::new(r#"include_(?:str|bytes)!\(\s*"([^"]+)"\s*\)"#).unwrap();
    let mut outside = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap().flatten() {
        let dir = krate.path().canonicalize().unwrap();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        if manifest.contains("publish = false") {
            continue;
        }
        let mut stack = vec![dir.join("src")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let path = e.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for c in include.captures_iter(&text) {
                    let target = path.parent().unwrap().join(&c[1]);
                    let inside = target.canonicalize().is_ok_and(|t| t.starts_with(&dir));
                    if !inside {
                        outside.push(format!("{}: {}", path.display(), &c[1]));
                    }
                }
            }
        }
    }
    assert!(outside.is_empty(), "{outside:#?}");
}

/// `--quiet` leaves out progress, not why a run stopped short: a run that leaves
/// without completing (here its budget spent) says why on stderr, once.
#[test]
fn a_quiet_run_that_stops_short_still_says_why() {
    let p = crate::support::scripted(
        "# P\n\n## T1: one\nVerify: test -f never.txt\n",
        "echo TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--quiet", "--max-iterations", "2", "--no-wait"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert_eq!(
        r.stderr
            .matches("agentloop: paused, budget spent: iterations 2 of 2")
            .count(),
        1,
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("[1] task"), "no progress: {}", r.stderr);
    // Topped up, it blocks on a breaker: said too, with what a person can do.
    let r = p.run(&["resume", "--quiet", "--iterations", "+1", "--no-wait"]);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("agentloop: blocked: no task can go on until a person looks at T1"),
        "{}",
        r.stderr
    );
}

/// In `bin`, every agent CLI agentloop knows but Claude Code as a script that fails at
/// once: put ahead of the real ones on the PATH, `agents` asks them without starting
/// the real ones (each real `--version` costs seconds).
fn fail_at_once_but_claude(bin: &std::path::Path) {
    for cli in agentloop_agents::BUILTIN.iter().filter(|c| **c != "claude") {
        let fake = bin.join(cli);
        std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
}
