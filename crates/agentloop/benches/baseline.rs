//! The test baseline on projects as people make them, beside its anchor in the same
//! run: one plain run of the same suite. For each fixture — a flat Python package
//! tested through tox (pytest), a Node package whose `npm test` runs lint then jest
//! through nested scripts, a Go module with two packages — `agentloop init` writes the
//! checks, then `agentloop plan check --baseline` is timed with an empty cache (a clean
//! copy made, every check run, the reports read), and the commands init wrote are
//! timed as a person would run them in the project (for Go all three, `go test`'s
//! result cache off).
//!
//! `cargo bench -p agentloop --bench baseline` (env `RUNS`, default 5; `TESTS`, tests
//! per file, default 50). Needs pytest, Node with jest and go, as `scripts/test`
//! installs them (`.tools/`); a fixture whose tools are missing is skipped and said.

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

use common::{timed, tools, write};

/// One fixture: its files, the plain command, and the PATH both run with.
struct Fixture {
    name: &'static str,
    plain: &'static str,
    path: String,
    setup: fn(&Path, usize),
    ready: bool,
}

fn python(root: &Path, tests: usize) {
    write(
        root,
        "tox.ini",
        "[tox]\nenvlist = py3\n\n[testenv]\ndeps = pytest\ncommands = pytest {posargs} tests\n",
    );
    write(root, "setup.cfg", "[metadata]\nname = textkit\n");
    write(
        root,
        "textkit/__init__.py",
        "def words(s):\n    return s.split()\n",
    );
    for f in 0..4 {
        let body: String = (0..tests)
            .map(|i| format!("def test_{i}():\n    assert textkit.words('a b') == ['a', 'b']\n\n"))
            .collect();
        write(
            root,
            &format!("tests/test_f{f}.py"),
            &format!("import textkit\n\n{body}"),
        );
    }
}

fn node(root: &Path, tests: usize) {
    write(
        root,
        "package.json",
        "{\"name\": \"calc\", \"private\": true, \"scripts\": {\"test\": \"npm run lint && npm run unit\", \"lint\": \"node lint.js\", \"unit\": \"jest\"}}\n",
    );
    write(root, "lint.js", "require('fs').readdirSync('src');\n");
    write(root, "src/calc.js", "exports.add = (a, b) => a + b;\n");
    for f in 0..4 {
        let body: String = (0..tests)
            .map(|i| format!("test('adds {i}', () => expect(c.add(2, {i})).toBe(2 + {i}));\n"))
            .collect();
        write(
            root,
            &format!("test/f{f}.test.js"),
            &format!("const c = require('../src/calc');\n{body}"),
        );
    }
    std::os::unix::fs::symlink(
        tools().join("js/node_modules").canonicalize().unwrap(),
        root.join("node_modules"),
    )
    .unwrap();
    write(root, ".gitignore", "node_modules\n.agentloop/\n");
}

fn go(root: &Path, tests: usize) {
    write(root, "go.mod", "module example.com/strs\n\ngo 1.19\n");
    for pkg in ["upper", "lower"] {
        write(
            root,
            &format!("{pkg}/{pkg}.go"),
            &format!("package {pkg}\n\nfunc Same(s string) string {{ return s }}\n"),
        );
        let body: String = (0..tests)
            .map(|i| format!("func TestSame{i}(t *testing.T) {{\n\tif Same(\"a\") != \"a\" {{\n\t\tt.Fatal(\"same\")\n\t}}\n}}\n\n"))
            .collect();
        write(
            root,
            &format!("{pkg}/{pkg}_test.go"),
            &format!("package {pkg}\n\nimport \"testing\"\n\n{body}"),
        );
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runs = common::env_usize("RUNS", 5);
    let tests = common::env_usize("TESTS", 50);
    let path = std::env::var("PATH").unwrap_or_default();
    let pytest = tools().join("pytest/bin");
    let fixtures = [
        Fixture {
            name: "Python, tox → pytest",
            plain: "python3 -m pytest tests",
            path: format!("{}:{path}", pytest.display()),
            setup: python,
            ready: pytest.join("pytest").exists(),
        },
        Fixture {
            name: "Node, npm test → lint, jest",
            plain: "npm test",
            path: path.clone(),
            setup: node,
            ready: tools().join("js/node_modules/.bin/jest").exists(),
        },
        Fixture {
            name: "Go, two packages",
            // The three checks init writes, by hand; `-count=1`: go's test cache off,
            // as a clean copy's new path has it off for the baseline.
            plain: "go build ./... && go test -count=1 ./... && go vet ./...",
            path: path.clone(),
            setup: go,
            ready: Command::new("go").arg("version").output().is_ok(),
        },
    ];
    println!(
        "| fixture | tests | one plain run (median s) | `plan check --baseline`, cold (median s) | ratio |"
    );
    println!("|---|---|---|---|---|");
    for f in &fixtures {
        if !f.ready {
            println!(
                "| {} | — | skipped: its tools are not installed (scripts/test installs them) | | |",
                f.name
            );
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(&root).unwrap();
        common::git(&root, &["init", "-q"]);
        (f.setup)(&root, tests);
        write(
            &root,
            "PLAN.md",
            "# Bench\n\n## T1: Nothing\nVerify: true\n",
        );
        let agentloop = |args: &[&str], cache: &Path| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_agentloop"));
            c.args(args)
                .current_dir(&root)
                .env("PATH", &f.path)
                .env("XDG_CACHE_HOME", cache)
                // Go's build cache is the user's, whatever agentloop's cache is.
                .env("GOCACHE", dir.path().join("go-build"))
                .env("XDG_STATE_HOME", dir.path().join("state"));
            c
        };
        let scratch = dir.path().join("cache");
        timed(&mut agentloop(&["init"], &scratch));
        common::git(&root, &["add", "-A"]);
        common::git(&root, &["commit", "-qm", "fixture"]);
        let plain: Vec<f64> = (0..runs)
            .map(|_| {
                timed(
                    Command::new("sh")
                        .args(["-c", f.plain])
                        .current_dir(&root)
                        .env("PATH", &f.path)
                        .env("GOCACHE", dir.path().join("go-build")),
                )
            })
            .collect();
        let baseline: Vec<f64> = (0..runs)
            .map(|i| {
                let cache = dir.path().join(format!("cache-{i}"));
                timed(&mut agentloop(&["plan", "check", "--baseline"], &cache))
            })
            .collect();
        let (p, b) = (median(plain), median(baseline));
        let collected = if f.name.starts_with("Go") {
            2 * tests
        } else {
            4 * tests
        };
        println!(
            "| {} | {collected} | {p:.2} | {b:.2} | {:.2} |",
            f.name,
            b / p
        );
    }
    if fixtures[0].ready {
        parts(runs, &fixtures[0].path);
    }
}

/// A plan of `PARTS` tasks (default 20), each checked by `python3 -m pytest` on its
/// own test file beside the run's `python3 -m pytest`: `plan check --baseline`, cold,
/// when each task's check is read from the whole suite's run, and when each has an
/// option of its own (`-q`: a check of its own, run apart, as every one was before),
/// beside one plain run of the suite.
fn parts(runs: usize, path: &str) {
    let n = common::env_usize("PARTS", 20);
    let dir = tempfile::tempdir().unwrap();
    let row = |own: &str| -> (f64, f64) {
        let root = dir.path().join(format!("p{own}"));
        std::fs::create_dir_all(&root).unwrap();
        common::git(&root, &["init", "-q"]);
        write(&root, "setup.cfg", "[metadata]\nname = textkit\n");
        write(
            &root,
            "textkit/__init__.py",
            "def words(s):\n    return s.split()\n",
        );
        let mut plan = String::from("# Bench\n\n");
        for f in 0..n {
            write(
                &root,
                &format!("tests/test_f{f}.py"),
                "import textkit\n\n\ndef test_words():\n    assert textkit.words('a b') == ['a', 'b']\n",
            );
            plan.push_str(&format!(
                "## T{f}: Words {f}\n\nVerify: python3 -m pytest{own} tests/test_f{f}.py\n\n"
            ));
        }
        write(&root, "PLAN.md", &plan);
        write(
            &root,
            "agentloop.toml",
            "[verify]\ncommands = [\"python3 -m pytest\"]\n",
        );
        common::git(&root, &["add", "-A"]);
        common::git(&root, &["commit", "-qm", "fixture"]);
        let plain = median(
            (0..runs)
                .map(|_| {
                    timed(
                        Command::new("sh")
                            .args(["-c", "python3 -m pytest -p no:cacheprovider > /dev/null"])
                            .current_dir(&root)
                            .env("PATH", path),
                    )
                })
                .collect(),
        );
        let baseline = median(
            (0..runs)
                .map(|i| {
                    timed(
                        Command::new(env!("CARGO_BIN_EXE_agentloop"))
                            .args(["plan", "check", "--baseline"])
                            .current_dir(&root)
                            .env("PATH", path)
                            .env("XDG_CACHE_HOME", dir.path().join(format!("cache{own}-{i}")))
                            .env("XDG_STATE_HOME", dir.path().join("state")),
                    )
                })
                .collect(),
        );
        (plain, baseline)
    };
    let (p1, read) = row("");
    let (p2, apart) = row(" -q");
    println!();
    println!(
        "| {n} tasks, each `python3 -m pytest tests/test_fN.py`, beside `python3 -m pytest` | one plain run (median s) | `plan check --baseline`, cold (median s) | ratio |"
    );
    println!("|---|---|---|---|");
    println!(
        "| each task's check read from the suite's run | {p1:.2} | {read:.2} | {:.2} |",
        read / p1
    );
    println!(
        "| each run apart (`-q` of its own) | {p2:.2} | {apart:.2} | {:.2} |",
        apart / p2
    );
}
