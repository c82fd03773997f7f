//! Bad input gets a precise error, exit code 2, and changes nothing on disk.

use crate::support::{Project, corpus_dir};

/// (corpus file, first line of stderr)
const PLANS: &[(&str, &str)] = &[
    (
        "plan-no-title.md",
        "error: PLAN.md:1: expected the plan's `# Title` line",
    ),
    (
        "plan-unknown-dependency.md",
        "error: PLAN.md:6: task \"T3\" depends on unknown task \"T9\"",
    ),
    (
        "plan-cycle.md",
        "error: PLAN.md:3: dependency cycle: A → C → B → A",
    ),
    (
        "plan-duplicate-id.md",
        "error: PLAN.md:7: duplicate task id \"T1\" (first defined on line 3)",
    ),
    (
        "plan-bad-gate.md",
        "error: PLAN.md:4: unknown gate `sometimes`; expected before or after",
    ),
    (
        "plan-bad-max-iterations.md",
        "error: PLAN.md:4: `Max-iterations: lots` must be a whole number from 1 to 1000",
    ),
    (
        "plan-unclosed-front-matter.md",
        "error: PLAN.md:1: front matter is not closed",
    ),
    (
        "plan-bad-yaml.md",
        "error: PLAN.md:2: front matter is not valid YAML: line 1 column 10: unclosed bracket '['",
    ),
    (
        "plan-unknown-setting.md",
        "error: plan front matter PLAN.md: budgets.max_iteration: unknown field `max_iteration`, expected one of `max_iterations`, `task_retries`, `max_cost_usd`, `max_tokens`, `max_duration`, `max_replans`",
    ),
    (
        "plan-heading-without-id.md",
        "error: PLAN.md:3: task heading \"Just a heading\" has no id",
    ),
    ("plan-no-tasks.md", "error: PLAN.md: the plan has no tasks"),
    (
        "plan-invalid-utf8.md",
        "error: PLAN.md:3: not valid UTF-8 (byte 15)",
    ),
    (
        "plan-case-clash.md",
        "error: PLAN.md:6: task id \"t1\" differs from \"T1\" (line 3) only in case",
    ),
    (
        "plan-wrong-case-dependency.md",
        "error: PLAN.md:6: task \"T2\" depends on unknown task \"t1\"",
    ),
    (
        "plan-nul.md",
        "error: PLAN.md:4: the plan contains a NUL byte",
    ),
    (
        "plan-nan-front-matter.md",
        "error: PLAN.md:2: front matter is not valid YAML: line 2 column 17: non-finite float `.nan` rejected by the configured policy",
    ),
    (
        "plan-placeholder.md",
        "error: PLAN.md:3: task \"T1\": `Verify: echo \"replace me\"` always passes, so it checks nothing",
    ),
    (
        "plan-unknown-agent.md",
        "error: PLAN.md:6: task T2: unknown agent \"nosuch\"",
    ),
];

const CONFIGS: &[(&str, &str)] = &[
    (
        "config-malformed.toml",
        "error: [DIR]/agentloop.toml: TOML parse error at line 1, column 9",
    ),
    (
        "config-unknown-key.toml",
        "error: [DIR]/agentloop.toml: budgets.max_iteration: unknown field `max_iteration`, expected one of `max_iterations`, `task_retries`, `max_cost_usd`, `max_tokens`, `max_duration`, `max_replans`",
    ),
    (
        "config-wrong-type.toml",
        "error: [DIR]/agentloop.toml: budgets.max_iterations: invalid type: string \"many\", expected u32",
    ),
    (
        "config-zero-iterations.toml",
        "error: [DIR]/agentloop.toml: budgets.max_iterations: must be at least 1",
    ),
    (
        "config-zero-batch.toml",
        "error: [DIR]/agentloop.toml: merge.batch: must be from 1 (one at a time) to 1024",
    ),
    (
        "config-zero-bisect.toml",
        "error: [DIR]/agentloop.toml: merge.bisect: must be from 1 (halves, one at a time) to 64",
    ),
    (
        "config-agent-without-command.toml",
        "error: [DIR]/agentloop.toml: agents.mine.command: a `command` agent needs a program to run",
    ),
    (
        "config-bad-duration.toml",
        "error: [DIR]/agentloop.toml: verify.timeout: `soon` is not a duration like \"90s\" or \"4h\": expected number at 0",
    ),
    (
        "config-invalid-utf8.toml",
        "error: [DIR]/agentloop.toml: not valid UTF-8",
    ),
    (
        "config-nan.toml",
        "error: [DIR]/agentloop.toml: budgets.max_cost_usd: nan and inf are not numbers agentloop can use",
    ),
    (
        "config-zero-timeout.toml",
        "error: [DIR]/agentloop.toml: agents.mine.timeout: must be longer than 0s",
    ),
    (
        "config-unknown-reviewer.toml",
        "error: [DIR]/agentloop.toml: [review] agent = \"reviewr\": unknown agent \"reviewr\"",
    ),
    (
        "config-unknown-second-reviewer.toml",
        "error: [DIR]/agentloop.toml: [review] second = \"nobody\": unknown agent \"nobody\"",
    ),
    (
        "config-unknown-planner.toml",
        "error: [DIR]/agentloop.toml: [run] planner_agent = \"planr\": unknown agent \"planr\"",
    ),
    (
        "config-unknown-judge.toml",
        "error: [DIR]/agentloop.toml: [run] judge = \"jdge\": unknown agent \"jdge\"",
    ),
    (
        "config-bad-store-url.toml",
        "error: [DIR]/agentloop.toml: [store] url: invalid connection string: invalid value for option `port`",
    ),
];

fn first_line(p: &Project, stderr: &str) -> String {
    stderr
        .lines()
        .next()
        .unwrap_or_default()
        .replace(p.path().to_str().unwrap(), "[DIR]")
}

fn refused(p: &Project, args: &[&str], want: &str) {
    let before = p.tree();
    let r = p.run(args);
    assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
    assert_eq!(first_line(p, &r.stderr), want, "{args:?}");
    assert!(
        r.stdout.is_empty(),
        "{args:?} printed to stdout: {}",
        r.stdout
    );
    assert!(p.tree() == before, "{args:?} changed files on disk");
}

#[test]
fn malformed_plans() {
    for (file, want) in PLANS {
        let p = Project::example();
        std::fs::copy(corpus_dir().join(file), p.path().join("PLAN.md")).unwrap();
        refused(&p, &["run"], want);
        refused(&p, &["plan", "check"], want);
    }
}

#[test]
fn what_editors_write_is_read() {
    // A byte-order mark before the title, and CRLF line ends.
    let p = Project::example();
    p.write(
        "PLAN.md",
        "\u{feff}# Marked\r\n\r\n## T1: a\r\nVerify: true\r\n",
    );
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.starts_with("PLAN.md: Marked · 1 task · valid"),
        "{}",
        r.stdout
    );
    // A partial table for a built-in agent changes only what it sets.
    p.write("agentloop.toml", "[agents.claude]\ntimeout = \"20s\"\n");
    let r = p.run(&["config", "show"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("agents.claude.timeout = \"20s\""),
        "{}",
        r.stdout
    );
}

#[test]
fn a_wrong_case_dependency_names_the_task_meant() {
    let p = Project::example();
    std::fs::copy(
        corpus_dir().join("plan-wrong-case-dependency.md"),
        p.path().join("PLAN.md"),
    )
    .unwrap();
    let r = p.run(&["plan", "check"]);
    assert!(
        r.stderr
            .contains("hint: ids are compared exactly: did you mean \"T1\"?"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_ten_megabyte_line() {
    let p = Project::example();
    let mut plan = b"# Huge\n\n## T1: a\n".to_vec();
    plan.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
    plan.push(b'\n');
    p.write("PLAN.md", &plan);
    refused(
        &p,
        &["run"],
        "error: PLAN.md:4: line is 10485760 bytes long; the limit is 65536",
    );
}

#[test]
fn malformed_configs() {
    for (file, want) in CONFIGS {
        let p = Project::example();
        std::fs::copy(corpus_dir().join(file), p.path().join("agentloop.toml")).unwrap();
        refused(&p, &["run"], want);
    }
}

#[test]
fn unknown_agent_and_mode() {
    let p = Project::example();
    refused(
        &p,
        &["run", "--agent", "nobody"],
        "error: unknown agent \"nobody\"",
    );
    refused(
        &p,
        &["run", "--mode", "yolo"],
        "error: invalid value 'yolo' for '--mode <MODE>'",
    );
    refused(
        &p,
        &["run", "missing.md"],
        "error: missing.md: cannot read the plan: No such file or directory (os error 2)",
    );
}

/// A finished run whose journal the cases below damage.
fn finished_run() -> (Project, std::path::PathBuf) {
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let j = p.run_dir().join("journal.jsonl");
    (p, j)
}

/// Re-checksums and re-seals a journal line after editing it with the project's own
/// key (as only agentloop can), so only the edit is wrong.
fn reseal(p: &Project, line: &str) -> String {
    use hmac::{KeyInit, Mac};
    let at = line.rfind(",\"sum\":\"").unwrap();
    let body = &line[..at];
    let summed = format!("{body},\"sum\":\"{:08x}\"", crc32fast_hash(body.as_bytes()));
    let key = std::fs::read(p.state_home().join("agentloop/journal.key")).unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(summed.as_bytes());
    let hex: String = mac.finalize().into_bytes()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{summed},\"mac\":\"{hex}\"}}")
}

fn crc32fast_hash(b: &[u8]) -> u32 {
    // The journal's checksum is CRC-32 (IEEE); computed here independently.
    let mut crc = !0u32;
    for &byte in b {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The 1-based line of the first record of `kind` in a journal.
fn line_of(j: &std::path::Path, kind: &str) -> usize {
    let needle = format!("\"kind\":\"{kind}\"");
    std::fs::read_to_string(j)
        .unwrap()
        .lines()
        .position(|l| l.contains(&needle))
        .unwrap()
        + 1
}

fn edit_line(j: &std::path::Path, n: usize, f: impl Fn(&str) -> String) {
    let text = std::fs::read_to_string(j).unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == n { f(l) } else { l.to_string() })
        .collect();
    std::fs::write(j, lines.join("\n") + "\n").unwrap();
}

#[test]
fn corrupted_journal_line() {
    let (p, j) = finished_run();
    let n = line_of(&j, "verify_finished");
    edit_line(&j, n, |l| {
        l.replacen("\"passed\":true", "\"passed\":false", 1)
    });
    let want = "error: [DIR]/.agentloop/runs/".to_string();
    for args in [
        &["status"][..],
        &["journal", "verify"],
        &["resume"],
        &["log"],
    ] {
        let before = p.tree();
        let r = p.run(args);
        assert_eq!(r.code, Some(2), "{args:?}");
        let first = first_line(&p, &r.stderr);
        assert!(
            first.starts_with(&want)
                && first.contains(&format!("/journal.jsonl:{n}: record {n} was altered: the line is not sealed as agentloop wrote it")),
            "{first}"
        );
        assert!(p.tree() == before, "{args:?} changed files");
    }
}

#[test]
fn unknown_schema_version_and_event_kind() {
    let (p, j) = finished_run();
    edit_line(&j, 3, |l| {
        reseal(&p, &l.replacen("{\"v\":1,", "{\"v\":7,", 1))
    });
    let r = p.run(&["status"]);
    assert_eq!(r.code, Some(2));
    assert!(
        first_line(&p, &r.stderr).ends_with(
            "/journal.jsonl:3: schema version 7 is newer than this agentloop understands (1)"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("hint: this journal was written by a newer agentloop")
    );

    let (p, j) = finished_run();
    let n = line_of(&j, "agent_finished");
    edit_line(&j, n, |l| {
        reseal(
            &p,
            &l.replacen("\"kind\":\"agent_finished\"", "\"kind\":\"teleported\"", 1),
        )
    });
    let r = p.run(&["journal", "verify"]);
    assert_eq!(r.code, Some(2));
    assert!(
        first_line(&p, &r.stderr).contains(&format!(
            "/journal.jsonl:{n}: unknown or malformed event: unknown variant `teleported`"
        )),
        "{}",
        r.stderr
    );
}

/// `journal verify --file` checks a journal that belongs to no run here (an export, a
/// copy) by the same rules: sealed lines pass, an appended one is named.
#[test]
fn a_journal_file_is_verified_on_its_own() {
    let (p, j) = finished_run();
    let copy = p.path().join(".git/exported.jsonl");
    std::fs::copy(&j, &copy).unwrap();
    let file = copy.to_str().unwrap();
    let r = p.run(&["journal", "verify", "--file", file]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("exported.jsonl: ok ·"), "{}", r.stdout);
    let mut text = std::fs::read_to_string(&copy).unwrap();
    let n = text.lines().count();
    text.push_str("{\"v\":1,\"seq\":999,\"kind\":\"run_finished\"}\n");
    std::fs::write(&copy, text).unwrap();
    let r = p.run(&["journal", "verify", "--file", file]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "exported.jsonl:{}: not written by agentloop",
            n + 1
        )),
        "{}",
        r.stderr
    );
    std::fs::write(&copy, "not a journal\n").unwrap();
    let r = p.run(&["journal", "verify", "--file", file]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let r = p.run(&["journal", "verify", "--file", "/nonexistent/j.jsonl"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let r = p.run(&["journal", "verify", "some-run", "--file", file]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}

#[test]
fn invalid_utf8_and_huge_journal_lines() {
    let (p, j) = finished_run();
    let mut bytes = std::fs::read(&j).unwrap();
    let at = bytes.iter().position(|&b| b == b'\n').unwrap() + 20;
    bytes[at] = 0xff;
    std::fs::write(&j, &bytes).unwrap();
    let r = p.run(&["journal", "verify"]);
    assert_eq!(r.code, Some(2));
    assert!(
        first_line(&p, &r.stderr).contains("/journal.jsonl:2: record 2 was altered"),
        "{}",
        r.stderr
    );

    let (p, j) = finished_run();
    let mut text = std::fs::read(&j).unwrap();
    let n = text.iter().filter(|&&b| b == b'\n').count();
    text.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
    text.extend(b"\n{\"v\":1}\n");
    std::fs::write(&j, &text).unwrap();
    let before = p.tree();
    // Lines that are not agentloop's are named, whatever they hold, and never read as
    // events: the run stays what agentloop recorded.
    let r = p.run(&["journal", "verify"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains(&format!(
            "/journal.jsonl:{}: not written by agentloop (a unreadable record",
            n + 1
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "/journal.jsonl:{}: not written by agentloop",
            n + 2
        )),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["status"], "completed");
    assert!(p.tree() == before);
}

#[test]
fn a_torn_last_line_is_reported_then_dropped() {
    let (p, j) = finished_run();
    let mut bytes = std::fs::read(&j).unwrap();
    bytes.extend_from_slice(b"{\"v\":1,\"seq\":20,\"time\":\"2026-");
    std::fs::write(&j, &bytes).unwrap();
    let r = p.run(&["journal", "verify"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("warning: the last line is torn (29 bytes"),
        "{}",
        r.stderr
    );
    // Status reads past it without changing anything.
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn commands_outside_a_project_with_runs() {
    let p = Project::git();
    refused(
        &p,
        &["status"],
        &format!("error: no runs in {}/.agentloop/runs", p.path().display())
            .replace(p.path().to_str().unwrap(), "[DIR]"),
    );
    refused(&p, &["pause"], "error: no runs in [DIR]/.agentloop/runs");
    let q = Project::example();
    assert_eq!(q.run(&["run", "--quiet"]).code, Some(0));
    refused(
        &q,
        &["skip", "T9"],
        &format!(
            "error: run {} has no task \"T9\"",
            q.status()["run_id"].as_str().unwrap()
        ),
    );
    refused(&q, &["status", "nope"], "error: no run matches \"nope\"");
}

/// A FIFO where a file of agentloop's should be (planted by anything that can write
/// there) is refused by its type, never waited on: a FIFO nobody writes would hold
/// its reader for good.
#[test]
fn a_fifo_where_agentloops_files_are_holds_nothing_up() {
    use std::time::Duration;
    let mkfifo = |path: &std::path::Path| {
        let _ = std::fs::remove_file(path);
        let st = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(st.success());
    };
    let p = Project::example();
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    // Every cached baseline a FIFO: the next run takes its own.
    let cached: Vec<_> = std::fs::read_dir(p.cache.path().join("agentloop/baselines"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(!cached.is_empty(), "the first run kept its baseline");
    for c in &cached {
        mkfifo(c);
    }
    // The run's derived state a FIFO: it is read from the journal instead.
    let run = p.run_dir();
    mkfifo(&run.join("state.json"));
    let mut status = p.cmd(&["status", "--json"]).spawn().unwrap();
    let st = crate::support::wait_exit(&mut status, Duration::from_secs(30));
    assert_eq!(st.code(), Some(0), "status read the journal");
    let mut again = p
        .cmd(&["run", "--quiet", "--run-id", "second"])
        .spawn()
        .unwrap();
    let st = crate::support::wait_exit(&mut again, Duration::from_secs(60));
    assert_eq!(st.code(), Some(0), "the second run took its own baseline");
    // The journal itself a FIFO: no run there, said at once.
    mkfifo(&run.join("journal.jsonl"));
    let mut status = p
        .cmd(&[
            "status",
            "--run",
            run.file_name().unwrap().to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    let st = crate::support::wait_exit(&mut status, Duration::from_secs(30));
    assert_eq!(st.code(), Some(2));
}
