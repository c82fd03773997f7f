//! Per-test evidence from the runners of other languages, real ones: cargo nextest and
//! cargo test on a Rust crate, go test on a Go module, Jest (through `npm test`),
//! Vitest and Mocha on JavaScript. Each plan's tasks name their tests; each run reaches
//! SHIP with the tests read from the runner's own report.

use crate::support::*;

/// Runs the plan to its end and checks every task went from failing to passing on
/// its named tests, read from `runner`'s report.
fn reaches_ship(p: &Project, runner: &str, named: &[usize]) -> serde_json::Value {
    let r = p.run(&["run", "--no-wait"]);
    if r.code != Some(0) {
        let log = std::fs::read_to_string(p.run_dir().join("iterations/0002/verify.log"))
            .unwrap_or_default();
        panic!("{}\n{}\n{log}", r.stdout, r.stderr);
    }
    let s = p.status();
    assert_eq!(s["verdict"], "SHIP", "{s:#}\n{}", r.stderr);
    for (t, n) in s["tasks"].as_array().unwrap().iter().zip(named) {
        let e = &t["evidence"];
        assert_eq!(e["named"], *n, "{t:#}");
        assert_eq!(e["named_passing"], *n, "{t:#}");
        for row in e["tests"].as_array().unwrap() {
            assert_ne!(row["at_baseline"], "passed", "{row:#}");
            assert_eq!(row["now"], "passed", "{row:#}");
        }
    }
    let journal = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    let base = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["kind"] == "tests_baseline")
        .expect("a test baseline");
    let cmd = &base["data"]["commands"][0];
    assert_eq!(cmd["runner"], runner, "{base:#}");
    assert!(cmd["problem"].is_null(), "{base:#}");
    base
}

const RUST_LIB: &str = r#"pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

pub fn div(_a: i64, _b: i64) -> Option<i64> {
    None
}

pub fn mul(_a: i64, _b: i64) -> i64 {
    todo!("multiplication")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_works() {
        assert_eq!(add(2, 3), 5);
    }

    #[test]
    fn div_exact() {
        assert_eq!(div(6, 3), Some(2));
    }

    #[test]
    fn div_by_zero_is_none() {
        assert_eq!(div(1, 0), None);
        assert_eq!(div(9, 3), Some(3));
    }
}
"#;

fn rust_project(check: &str) -> Project {
    let plan = "# Ops\n\nFinish the arithmetic.\n\n## T1: Division\n\nImplement `div` in src/lib.rs.\n\nTests: tests::div_*\n\n## T2: Multiplication\nDepends: T1\n\nImplement `mul`.\n\nTests: mul_works, mul_by_zero\n";
    let agent_body = r#"case "$task" in
T1) sed -i 's/pub fn div(_a: i64, _b: i64) -> Option<i64> {/pub fn div(a: i64, b: i64) -> Option<i64> { return a.checked_div(b);/' src/lib.rs ;;
T2) sed -i 's/todo!("multiplication")/_a * _b/' src/lib.rs ;;
esac
echo TASK_COMPLETE
"#;
    let mut p = Scratch::new()
        .plan(plan)
        .agent(&agent(agent_body))
        .file(
            "Cargo.toml",
            "[package]\nname = \"ops\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        )
        .file("src/lib.rs", RUST_LIB)
        .file(
            "tests/mul.rs",
            "#[test]\nfn mul_works() {\n    assert_eq!(ops::mul(3, 4), 12);\n}\n\n#[test]\nfn mul_by_zero() {\n    assert_eq!(ops::mul(3, 0), 0);\n}\n",
        )
        .file(".gitignore", "target/\n")
        .config(&format!(
            "[verify]\ncommands = [\"{check}\"]\ncarry = []\n\n[breakers]\ndebug_after = 0\n"
        ))
        .build();
    // The crate builds in a target directory of its own (not the suite's), kept
    // between checks.
    let target = p.cache.path().join("cargo-target");
    p.env
        .push(("CARGO_TARGET_DIR".into(), target.display().to_string()));
    // The suite itself may run under nextest's `ci` profile, which this crate has not.
    p.env.push(("NEXTEST_PROFILE".into(), "default".into()));
    p
}

#[test]
fn a_rust_crate_reaches_ship_on_cargo_nextests_junit_and_on_cargo_tests_lines() {
    let p = rust_project("cargo nextest run");
    let base = reaches_ship(&p, "cargo nextest", &[2, 2]);
    let tests = base["data"]["commands"][0]["tests"].as_object().unwrap();
    assert_eq!(tests["ops::tests::add_works"], "passed", "{tests:?}");
    assert_eq!(tests["ops::tests::div_exact"], "failed", "{tests:?}");
    assert_eq!(tests["ops::mul::mul_works"], "failed", "{tests:?}");
    let p = rust_project("cargo test");
    let base = reaches_ship(&p, "cargo test", &[2, 2]);
    let tests = base["data"]["commands"][0]["tests"].as_object().unwrap();
    assert_eq!(tests["tests::add_works"], "passed", "{tests:?}");
    assert_eq!(tests["mul_works"], "failed", "{tests:?}");
}

#[test]
fn a_go_module_reaches_ship_on_go_test_json() {
    let p = Scratch::new()
        .plan("# Ops\n\n## T1: Division\n\nImplement `Div` in ops/ops.go.\n\nTests: ops::TestDiv*\n")
        .agent(&agent(
            "sed -i 's/return 0 \\/\\/ TODO/return a \\/ b/' ops/ops.go\necho TASK_COMPLETE\n",
        ))
        .file("go.mod", "module example.com/m\n\ngo 1.19\n")
        .file(
            "ops/ops.go",
            "package ops\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Div(a, b int) int {\n\treturn 0 // TODO\n}\n",
        )
        .file(
            "ops/ops_test.go",
            "package ops\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n\nfunc TestDiv(t *testing.T) {\n\tif got := Div(6, 3); got != 2 {\n\t\tt.Fatalf(\"Div(6, 3) = %d\", got)\n\t}\n}\n\nfunc TestDivRounds(t *testing.T) {\n\tif got := Div(7, 2); got != 3 {\n\t\tt.Fatalf(\"Div(7, 2) = %d\", got)\n\t}\n}\n",
        )
        .config("[verify]\ncommands = [\"go test ./...\"]\n")
        .build();
    let base = reaches_ship(&p, "go test", &[2]);
    let tests = base["data"]["commands"][0]["tests"].as_object().unwrap();
    assert_eq!(tests["example.com/m/ops::TestAdd"], "passed", "{tests:?}");
    assert_eq!(tests["example.com/m/ops::TestDiv"], "failed", "{tests:?}");
}

/// A JavaScript project whose `node_modules` is the suite's runners (linked, and
/// carried into the clean copy as it is).
fn js_project(plan: &str, agent_body: &str, files: &[(&str, &str)], check: &str) -> Project {
    let mut s = Scratch::new()
        .plan(plan)
        .agent(&agent(agent_body))
        .file(".gitignore", "node_modules\n")
        .config(&format!(
            "[verify]\ncommands = [\"{check}\"]\ncarry = [\"node_modules\"]\n"
        ));
    for (rel, text) in files {
        s = s.file(rel, text);
    }
    let p = s.build();
    std::os::unix::fs::symlink(
        tools().join("js/node_modules"),
        p.path().join("node_modules"),
    )
    .unwrap();
    p
}

const CALC_JS: &str =
    "exports.add = (a, b) => a + b;\nexports.div = (a, b) => 0;\nexports.mul = (a, b) => 0;\n";

#[test]
fn a_javascript_project_reaches_ship_on_jests_report_through_npm_test() {
    let test = "const c = require('../src/calc');\ndescribe('add', () => { test('adds', () => expect(c.add(2, 3)).toBe(5)); });\ndescribe('div', () => {\n  test('divides', () => expect(c.div(6, 3)).toBe(2));\n  test('by zero is Infinity', () => expect(c.div(1, 0)).toBe(Infinity));\n});\ndescribe('mul', () => { test('multiplies', () => expect(c.mul(3, 4)).toBe(12)); });\n";
    let p = js_project(
        "# Calc\n\n## T1: Division\n\nImplement `div` in src/calc.js.\n\nTests: test/calc.test.js::div *\n\n## T2: Multiplication\nDepends: T1\n\nImplement `mul`.\n\nTests: test/calc.test.js::mul multiplies\n",
        "case \"$task\" in T1) sed -i 's/exports.div = (a, b) => 0;/exports.div = (a, b) => a \\/ b;/' src/calc.js ;; T2) sed -i 's/exports.mul = (a, b) => 0;/exports.mul = (a, b) => a * b;/' src/calc.js ;; esac\necho TASK_COMPLETE\n",
        &[
            (
                "package.json",
                "{\"name\": \"calc\", \"private\": true, \"scripts\": {\"test\": \"jest\"}}\n",
            ),
            ("src/calc.js", CALC_JS),
            ("test/calc.test.js", test),
        ],
        "npm test",
    );
    let base = reaches_ship(&p, "jest", &[2, 1]);
    let tests = base["data"]["commands"][0]["tests"].as_object().unwrap();
    assert_eq!(tests["test/calc.test.js::add adds"], "passed", "{tests:?}");
    assert_eq!(
        tests["test/calc.test.js::div divides"], "failed",
        "{tests:?}"
    );
}

#[test]
fn vitest_and_mocha_reports_are_read_test_by_test() {
    let vitest = "import { describe, test, expect } from 'vitest';\nimport { createRequire } from 'module';\nconst c = createRequire(import.meta.url)('../src/calc.js');\ndescribe('div', () => { test('divides', () => expect(c.div(6, 3)).toBe(2)); });\ndescribe('add', () => { test('adds', () => expect(c.add(1, 1)).toBe(2)); });\n";
    let fix = "sed -i 's/exports.div = (a, b) => 0;/exports.div = (a, b) => a \\/ b;/' src/calc.js\necho TASK_COMPLETE\n";
    let p = js_project(
        "# Calc\n\n## T1: Division\n\nImplement `div`.\n\nTests: test/calc.test.mjs::div divides\n",
        fix,
        &[("src/calc.js", CALC_JS), ("test/calc.test.mjs", vitest)],
        "npx vitest run",
    );
    reaches_ship(&p, "vitest", &[1]);
    let mocha = "const assert = require('assert');\nconst c = require('../src/calc');\ndescribe('div', () => { it('divides', () => assert.strictEqual(c.div(6, 3), 2)); });\ndescribe('add', () => { it('adds', () => assert.strictEqual(c.add(1, 1), 2)); });\n";
    let p = js_project(
        "# Calc\n\n## T1: Division\n\nImplement `div`.\n\nTests: test/calc.spec.js::div divides\n",
        fix,
        &[("src/calc.js", CALC_JS), ("test/calc.spec.js", mocha)],
        "npx mocha test/",
    );
    reaches_ship(&p, "mocha", &[1]);
}
