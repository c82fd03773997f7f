//! What judging a regression costs, beside its anchors in the same run: one plain run
//! of the suite, and a run whose agent does honest work. A flat Python package with
//! `FILES` test files of `TESTS` tests each (pytest); the task adds a function. The
//! regressing agent adds it and breaks another, so that `BROKEN` tests that passed at
//! the baseline fail: each failure is run again before it counts (to tell a flaky test
//! from a broken one). Each run is a new project on the same tree, so the baseline
//! comes from agentloop's cache and only the task's verification is timed beside the
//! run's own overhead; `max_iterations = 1`: one verification, then the run ends.
//!
//! `cargo bench -p agentloop --bench regression` (env `RUNS`, default 3; `FILES`,
//! default 20; `TESTS`, default 10; `BROKEN`, default 20). Needs pytest as
//! `scripts/test` installs it (`.tools/pytest`).

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::{tools, write};

/// The project, committed, in a new directory under `dir`.
fn project(dir: &Path, n: usize, files: usize, tests: usize, agent: &str) -> PathBuf {
    let root = dir.join(format!("p{n}"));
    std::fs::create_dir_all(&root).unwrap();
    common::git(&root, &["init", "-q"]);
    write(&root, "setup.cfg", "[metadata]\nname = textkit\n");
    write(
        &root,
        "textkit/__init__.py",
        "def words(s):\n    return s.split()\n\n\ndef shout(s):\n    raise NotImplementedError\n",
    );
    for f in 0..files {
        let body: String = (0..tests)
            .map(|i| {
                format!(
                    "def test_{i}():\n    assert textkit.words('a b {i}') == ['a', 'b', '{i}']\n\n"
                )
            })
            .collect();
        write(
            &root,
            &format!("tests/test_f{f}.py"),
            &format!("import textkit\n\n{body}"),
        );
    }
    write(
        &root,
        "tests/test_shout.py",
        "import textkit\n\n\ndef test_shout():\n    assert textkit.shout('a') == 'A'\n",
    );
    write(
        &root,
        "PLAN.md",
        "# Bench\n\n## T1: Shout\n\nMake `shout` in textkit/__init__.py upper-case its text.\n\nTests: tests/test_shout.py::test_shout\n",
    );
    write(
        &root,
        "agentloop.toml",
        "[run]\nagent = \"scripted\"\n\n[budgets]\nmax_iterations = 1\n\n[verify]\ncommands = [\"python3 -m pytest -q\"]\n\n[agents.scripted]\ncommand = [\"sh\", \"agent.sh\"]\n",
    );
    write(
        &root,
        "agent.sh",
        &format!("cat > /dev/null\n{agent}\necho TASK_COMPLETE\n"),
    );
    write(&root, ".gitignore", ".agentloop/\n__pycache__/\n");
    common::git(&root, &["add", "-A"]);
    common::git(&root, &["commit", "-qm", "fixture"]);
    root
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runs = common::env_usize("RUNS", 3);
    let files = common::env_usize("FILES", 20);
    let tests = common::env_usize("TESTS", 10);
    let broken = common::env_usize("BROKEN", 20);
    let pytest = tools().join("pytest/bin");
    if !pytest.join("pytest").exists() {
        println!("skipped: pytest is not installed (scripts/test installs it)");
        return;
    }
    let path = format!(
        "{}:{}",
        pytest.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let shout = "sed -i 's/raise NotImplementedError/return s.upper()/' textkit/__init__.py";
    // `words` breaks for the texts of the first BROKEN tests (`'a b 0'` … ).
    let breaks: Vec<String> = (0..broken.min(tests))
        .map(|i| format!("\"a b {i}\""))
        .collect();
    let regress = format!(
        "{shout}\nsed -i 's/    return s.split()/    return [] if s in ({},) else s.split()/' textkit/__init__.py",
        breaks.join(", ")
    );
    let n = std::cell::Cell::new(0);
    let agentloop = |root: &Path, args: &[&str]| {
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .args(args)
            .current_dir(root)
            .env("PATH", &path)
            .env("XDG_CACHE_HOME", &cache)
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .output()
            .unwrap();
        (t.elapsed().as_secs_f64(), out)
    };
    let time = |agent: &str, want: bool| -> f64 {
        let v: Vec<f64> = (0..runs + 1)
            .map(|_| {
                n.set(n.get() + 1);
                let root = project(dir.path(), n.get(), files, tests, agent);
                let (s, out) = agentloop(&root, &["run", "--yes", "--no-wait", "--quiet"]);
                assert_eq!(
                    out.status.code() == Some(0),
                    want,
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                s
            })
            .collect();
        // The first run takes the baseline into the cache; the rest find it there.
        median(v[1..].to_vec())
    };
    let honest = time(shout, true);
    let regressing = time(&regress, false);
    let root = project(dir.path(), 0, files, tests, shout);
    let plain: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            Command::new("sh")
                .args(["-c", "python3 -m pytest -q -p no:cacheprovider > /dev/null"])
                .current_dir(&root)
                .env("PATH", &path)
                .status()
                .unwrap();
            t.elapsed().as_secs_f64()
        })
        .collect();
    let plain = median(plain);
    let failing = broken.min(tests) * files;
    println!(
        "| suite | one plain run (median s) | run, honest agent (median s) | run, {failing} tests regressed (median s) | regressed ÷ honest |"
    );
    println!("|---|---|---|---|---|");
    println!(
        "| pytest, {} tests in {files} files | {plain:.2} | {honest:.2} | {regressing:.2} | {:.2} |",
        files * tests + 1,
        regressing / honest
    );
}
