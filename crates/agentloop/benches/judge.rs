//! What judging a plan costs beside one plain run of the suite, on fixture projects of
//! 200, 2,000 and 20,000 tests (pytest, go test, jest): a one-task plan whose check is
//! the whole suite and whose task names one test that fails before it (a scripted agent
//! makes it pass), run end to end with `agentloop run`. From the run's journal: the
//! test baseline, the iteration's check (from the agent's end to the verdict: the
//! clean copy brought up to date, the suite run, its report read), and VALIDATE. Two
//! plain runs of the same suite are timed in the same process, first: a person's
//! first (cold caches), the baseline's anchor, and one after making the agent's change
//! (warm but for what it touched), the check's.
//!
//! `cargo bench -p agentloop --bench judge` (env `SIZES`, default `200,2000`;
//! `RUNNERS`, default `pytest,go,jest`; `pytest-xdist`: tests of about ten milliseconds
//! each, with pytest-xdist installed; `JOBS`: `[verify] jobs`; `TASK_CHECK=part`: the
//! task's check is its named test's file or package alone, beside the suite as the
//! run's check — read from the suite's run where agentloop can cut it from there). Needs pytest, go and Node with jest, as
//! `scripts/test` installs them (`.tools/`); a runner whose tools are missing is
//! skipped and said.

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::{timed, tools, write};

/// Tests per file.
const PER_FILE: usize = 50;

/// A runner's fixture: how to lay out `n` tests, the suite's command, the named test,
/// what the agent changes, and the PATH.
struct Runner {
    name: &'static str,
    suite: &'static str,
    /// One plain run, as a person would type it.
    plain: &'static str,
    named: &'static str,
    /// A check of the named test's file or package alone, a part of `suite`
    /// (`TASK_CHECK=part`: the task's check, beside the suite as the run's check).
    part: Option<&'static str>,
    agent: &'static str,
    layout: fn(&Path, usize),
    path: String,
    ready: bool,
}

fn pytest(root: &Path, n: usize) {
    pytest_with(root, n, "");
}

/// As [`pytest`], each test doing about ten milliseconds of work first: a suite worth
/// splitting among workers.
fn pytest_busy(root: &Path, n: usize) {
    pytest_with(root, n, "    sum(i * i for i in range(200000))\n");
}

fn pytest_with(root: &Path, n: usize, work: &str) {
    write(
        root,
        "pkg/__init__.py",
        "def same(x):\n    return x\n\n\ndef greet():\n    return \"\"\n",
    );
    for (f, count) in files(n) {
        let body: String = (0..count)
            .map(|i| format!("def test_{i}():\n{work}    assert pkg.same({i}) == {i}\n\n\n"))
            .collect();
        write(
            root,
            &format!("tests/test_f{f}.py"),
            &format!("import pkg\n\n\n{body}"),
        );
    }
    write(
        root,
        "tests/test_task.py",
        "import pkg\n\n\ndef test_greeting():\n    assert pkg.greet() == \"hi\"\n",
    );
}

fn go(root: &Path, n: usize) {
    write(root, "go.mod", "module example.com/bench\n\ngo 1.19\n");
    write(
        root,
        "strs/strs.go",
        "package strs\n\nfunc Same(s string) string { return s }\n\nfunc Greet() string {\n\treturn \"\"\n}\n",
    );
    for (f, count) in files(n) {
        let body: String = (0..count)
            .map(|i| {
                format!("func TestSame{f}_{i}(t *testing.T) {{\n\tif Same(\"a\") != \"a\" {{\n\t\tt.Fatal(\"same\")\n\t}}\n}}\n\n")
            })
            .collect();
        write(
            root,
            &format!("strs/f{f}_test.go"),
            &format!("package strs\n\nimport \"testing\"\n\n{body}"),
        );
    }
    write(
        root,
        "strs/greet_test.go",
        "package strs\n\nimport \"testing\"\n\nfunc TestGreet(t *testing.T) {\n\tif Greet() != \"hi\" {\n\t\tt.Fatal(\"greet\")\n\t}\n}\n",
    );
}

fn jest(root: &Path, n: usize) {
    write(
        root,
        "package.json",
        "{\"name\": \"bench\", \"private\": true, \"scripts\": {\"test\": \"jest\"}}\n",
    );
    write(
        root,
        "src/greet.js",
        "exports.same = (x) => x;\nexports.greet = () => '';\n",
    );
    for (f, count) in files(n) {
        let body: String = (0..count)
            .map(|i| format!("test('same {i}', () => expect(g.same({i})).toBe({i}));\n"))
            .collect();
        write(
            root,
            &format!("test/f{f}.test.js"),
            &format!("const g = require('../src/greet');\n{body}"),
        );
    }
    write(
        root,
        "test/task.test.js",
        "const g = require('../src/greet');\ntest('greet says hi', () => expect(g.greet()).toBe('hi'));\n",
    );
    std::os::unix::fs::symlink(
        tools().join("js/node_modules").canonicalize().unwrap(),
        root.join("node_modules"),
    )
    .unwrap();
}

/// `n` tests (the named one among them) as files of [`PER_FILE`]: (file, tests in it).
fn files(n: usize) -> Vec<(usize, usize)> {
    let rest = n.saturating_sub(1);
    (0..rest.div_ceil(PER_FILE))
        .map(|f| (f, PER_FILE.min(rest - f * PER_FILE)))
        .collect()
}

/// Milliseconds since 1970 of a journal time (`2026-12-07T00:36:41.786Z`).
fn ms(time: &str) -> f64 {
    let num = |a: usize, b: usize| time[a..b].parse::<i64>().unwrap();
    let (y, m, d) = (num(0, 4), num(5, 7), num(8, 10));
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs: f64 = time[17..time.len() - 1].parse().unwrap();
    ((days * 86_400 + num(11, 13) * 3600 + num(14, 16) * 60) as f64 + secs) * 1000.0
}

/// The run's phases from its journal, in seconds: (baseline, the iteration's check,
/// VALIDATE).
fn phases(journal: &str) -> (f64, f64, f64) {
    let events: Vec<serde_json::Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let at = |kind: &str| {
        events
            .iter()
            .position(|e| e["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in the journal:\n{journal}"))
    };
    let time = |i: usize| ms(events[i]["time"].as_str().unwrap());
    let baseline = time(at("tests_baseline")) - time(at("driver_started"));
    let check = time(at("verify_finished")) - time(at("agent_finished"));
    let validated = at("validated");
    let validate = time(validated) - time(validated - 1);
    (baseline / 1e3, check / 1e3, validate / 1e3)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sizes: Vec<usize> = common::env_list("SIZES", "200,2000");
    let wanted: Vec<String> = common::env_list("RUNNERS", "pytest,go,jest");
    let path = std::env::var("PATH").unwrap_or_default();
    let pytest_bin = tools().join("pytest/bin");
    let xdist_bin = tools().join("xdist/bin");
    // `[verify] jobs` for the runs (unset: agentloop's default).
    let jobs = std::env::var("JOBS")
        .map(|j| format!("jobs = {j}\n"))
        .unwrap_or_default();
    // The task's check: the suite (default), or `part`, its named test's file alone.
    let part = std::env::var("TASK_CHECK").is_ok_and(|c| c == "part");
    let js_bin = tools().join("js/node_modules/.bin");
    let runners = [
        Runner {
            name: "pytest",
            suite: "python3 -m pytest",
            plain: "python3 -m pytest -q -p no:cacheprovider",
            named: "tests/test_task.py::test_greeting",
            part: Some("python3 -m pytest tests/test_task.py"),
            agent: "sed -i 's/return \"\"/return \"hi\"/' pkg/__init__.py",
            layout: pytest,
            path: format!("{}:{path}", pytest_bin.display()),
            ready: pytest_bin.join("pytest").exists(),
        },
        Runner {
            name: "pytest-xdist",
            suite: "python3 -m pytest",
            plain: "python3 -m pytest -q -p no:cacheprovider",
            named: "tests/test_task.py::test_greeting",
            part: Some("python3 -m pytest tests/test_task.py"),
            agent: "sed -i 's/return \"\"/return \"hi\"/' pkg/__init__.py",
            layout: pytest_busy,
            path: format!("{}:{path}", xdist_bin.display()),
            ready: xdist_bin.join("pytest").exists(),
        },
        Runner {
            name: "go test",
            suite: "go test ./...",
            plain: "go test -count=1 ./...",
            named: "strs::TestGreet",
            part: Some("go test ./strs/"),
            agent: "sed -i 's/return \"\"/return \"hi\"/' strs/strs.go",
            layout: go,
            path: path.clone(),
            ready: Command::new("go").arg("version").output().is_ok(),
        },
        Runner {
            name: "jest",
            suite: "npm test",
            plain: "npm test --silent",
            named: "test/task.test.js::greet says hi",
            part: None,
            agent: "sed -i \"s/() => ''/() => 'hi'/\" src/greet.js",
            layout: jest,
            path: format!("{}:{path}", js_bin.display()),
            ready: js_bin.join("jest").exists(),
        },
    ];
    println!(
        "| runner | tests | a first plain run (s) | a plain run after the change (s) | baseline (s) | the iteration's check (s) | VALIDATE (s) | `agentloop run` (s) | (baseline + VALIDATE) ÷ first plain run | check ÷ plain run after the change |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in runners.iter().filter(|r| {
        wanted
            .iter()
            .any(|w| r.name == w || r.name.split(' ').next() == Some(w.as_str()))
    }) {
        if !r.ready {
            println!(
                "| {} | — | skipped: its tools are not installed (scripts/test installs them) | | | | | | | |",
                r.name
            );
            continue;
        }
        for &n in &sizes {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("p");
            std::fs::create_dir_all(&root).unwrap();
            common::git(&root, &["init", "-q"]);
            (r.layout)(&root, n);
            write(
                &root,
                ".gitignore",
                ".agentloop/\nnode_modules\n__pycache__/\n",
            );
            write(
                &root,
                "agent.sh",
                &format!("cat > /dev/null\n{}\necho TASK_COMPLETE\n", r.agent),
            );
            write(
                &root,
                "PLAN.md",
                &format!(
                    "# Bench\n\n## T1: Greet\n\nMake greet say hi.\n\nVerify: {}\nTests: {}\n",
                    if part {
                        r.part.unwrap_or(r.suite)
                    } else {
                        r.suite
                    },
                    r.named
                ),
            );
            write(
                &root,
                "agentloop.toml",
                &format!(
                    "[run]\nagent = \"scripted\"\n\n[agents.scripted]\ncommand = [\"sh\", \"{}\"]\n\n[verify]\ncommands = [\"{}\"]\n{jobs}",
                    root.join("agent.sh").display(),
                    r.suite
                ),
            );
            common::git(&root, &["add", "-A"]);
            common::git(&root, &["commit", "-qm", "fixture"]);
            let go_cache = dir.path().join("go-build");
            // The named test fails before the task: the plain run is expected to fail,
            // and is timed all the same. Twice, as a person runs it: the first time
            // (cold: Python's bytecode, Go's build cache, Jest's transforms not there
            // yet), the baseline's anchor; then again after making the agent's
            // change (warm but for what the change touched; Go's test results not
            // taken from its cache), the iteration's check's anchor. The change is
            // taken back before the run.
            let plain_run = || {
                let t = Instant::now();
                let _ = Command::new("sh")
                    .args(["-c", &format!("{} > /dev/null 2>&1", r.plain)])
                    .current_dir(&root)
                    .env("PATH", &r.path)
                    .env("GOCACHE", &go_cache)
                    .env("GOFLAGS", "-count=1")
                    .env_remove("PYTHONDONTWRITEBYTECODE")
                    .status();
                t.elapsed().as_secs_f64()
            };
            let cold = plain_run();
            let _ = Command::new("sh")
                .args(["-c", r.agent])
                .current_dir(&root)
                .status();
            let plain = plain_run();
            common::git(&root, &["checkout", "-q", "--", "."]);
            let total = timed(
                Command::new(env!("CARGO_BIN_EXE_agentloop"))
                    .args(["run", "--yes", "--quiet", "--no-wait"])
                    .current_dir(&root)
                    .env("PATH", &r.path)
                    .env("GOCACHE", &go_cache)
                    .env_remove("PYTHONDONTWRITEBYTECODE")
                    .env("XDG_CACHE_HOME", dir.path().join("cache"))
                    .env("XDG_STATE_HOME", dir.path().join("state")),
            );
            let journal = std::fs::read_dir(root.join(".agentloop/runs"))
                .unwrap()
                .flatten()
                .map(|e| std::fs::read_to_string(e.path().join("journal.jsonl")).unwrap())
                .next()
                .unwrap();
            let (baseline, check, validate) = phases(&journal);
            println!(
                "| {} | {n} | {cold:.2} | {plain:.2} | {baseline:.2} | {check:.2} | {validate:.2} | {total:.2} | {:.2} | {:.2} |",
                r.name,
                (baseline + validate) / cold,
                check / plain
            );
        }
    }
}
