//! Which test runner a check starts, and how agentloop gets its per-test report: the
//! arguments it adds so the runner writes one where agentloop chose (a directory of
//! its own, outside the copy the check runs in), or the output it reads. Only a
//! simple command is recognised (`pytest -q`, `uv run pytest`, `cargo nextest run`,
//! `npm test` whose script ends in a runner); anything else — pipes, `&&`, `;`,
//! redirections, scripts — is run as written, and its per-test evidence is the JUnit
//! XML it writes to `$AGENTLOOP_TEST_REPORT`, if it does.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Format;

/// The variable every check gets: where it may write a JUnit XML report of its own.
pub const REPORT_VAR: &str = "AGENTLOOP_TEST_REPORT";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runner {
    Pytest,
    Nextest,
    CargoTest,
    GoTest,
    Jest,
    Vitest,
    Mocha,
    Maven,
    Gradle,
    Rspec,
}

impl Runner {
    pub fn name(self) -> &'static str {
        match self {
            Runner::Pytest => "pytest",
            Runner::Nextest => "cargo nextest",
            Runner::CargoTest => "cargo test",
            Runner::GoTest => "go test",
            Runner::Jest => "jest",
            Runner::Vitest => "vitest",
            Runner::Mocha => "mocha",
            Runner::Maven => "maven surefire",
            Runner::Gradle => "gradle",
            Runner::Rspec => "rspec",
        }
    }

    fn format(self) -> Format {
        match self {
            Runner::Pytest => Format::PytestJunit,
            Runner::Nextest | Runner::Maven | Runner::Gradle => Format::Junit,
            Runner::CargoTest => Format::Libtest,
            Runner::GoTest => Format::GoJson,
            Runner::Jest | Runner::Vitest => Format::JestJson,
            Runner::Mocha => Format::MochaJson,
            Runner::Rspec => Format::RspecJson,
        }
    }
}

/// Where the report of a check lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportAt {
    File(PathBuf),
    /// Every XML file under it (Surefire, Gradle, nextest's store).
    Dir(PathBuf),
    /// The check's standard output, copied there (`go test -json`, `cargo test`).
    Stdout(PathBuf),
}

impl ReportAt {
    pub fn path(&self) -> &Path {
        match self {
            ReportAt::File(p) | ReportAt::Dir(p) | ReportAt::Stdout(p) => p,
        }
    }
}

/// How a check is run to get its report.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The runner recognised; `None`: the command as written, with `$AGENTLOOP_TEST_REPORT`.
    pub runner: Option<Runner>,
    /// What runs (`sh -c`).
    pub command: String,
    pub format: Format,
    pub report: ReportAt,
    /// Files agentloop writes in the report directory before the check (nextest's
    /// tool configuration, Gradle's init script).
    pub files: Vec<(PathBuf, String)>,
    /// `$AGENTLOOP_TEST_REPORT`'s value.
    pub report_var: PathBuf,
}

impl Invocation {
    /// How `command` runs with its report going to `dir` (agentloop's, emptied
    /// before); `workdir` is where it runs (for `package.json`).
    pub fn new(command: &str, workdir: &Path, dir: &Path) -> Invocation {
        let report_var = dir.join("report.xml");
        let generic = Invocation {
            runner: None,
            command: command.to_string(),
            format: Format::Junit,
            report: ReportAt::File(report_var.clone()),
            files: Vec::new(),
            report_var: report_var.clone(),
        };
        let Some(found) = recognise(command, Some(workdir)) else {
            return generic;
        };
        let mut files = Vec::new();
        let (args, report): (Vec<String>, ReportAt) = match found.runner {
            Runner::Pytest => {
                let at = dir.join("pytest.xml");
                (
                    vec![
                        format!("--junitxml={}", at.display()),
                        "-o".into(),
                        "junit_family=xunit1".into(),
                        "--continue-on-collection-errors".into(),
                    ],
                    ReportAt::File(at),
                )
            }
            Runner::Nextest => {
                let store = dir.join("nextest");
                let config = dir.join("nextest.toml");
                files.push((
                    config.clone(),
                    format!(
                        "[store]\ndir = {}\n\n[profile.default.junit]\npath = \"junit.xml\"\n",
                        toml_string(&store)
                    ),
                ));
                (
                    vec![
                        "--tool-config-file".into(),
                        format!("agentloop:{}", config.display()),
                        "--no-fail-fast".into(),
                    ],
                    ReportAt::Dir(store),
                )
            }
            Runner::CargoTest => (
                vec!["--no-fail-fast".into()],
                ReportAt::Stdout(dir.join("stdout.txt")),
            ),
            Runner::GoTest => (
                vec!["-json".into()],
                ReportAt::Stdout(dir.join("stdout.txt")),
            ),
            Runner::Jest => {
                let at = dir.join("jest.json");
                (
                    vec!["--json".into(), format!("--outputFile={}", at.display())],
                    ReportAt::File(at),
                )
            }
            Runner::Vitest => {
                let at = dir.join("vitest.json");
                (
                    vec![
                        "--reporter=default".into(),
                        "--reporter=json".into(),
                        format!("--outputFile.json={}", at.display()),
                    ],
                    ReportAt::File(at),
                )
            }
            Runner::Mocha => {
                let at = dir.join("mocha.json");
                (
                    vec![
                        "--reporter".into(),
                        "json".into(),
                        "--reporter-option".into(),
                        format!("output={}", at.display()),
                    ],
                    ReportAt::File(at),
                )
            }
            Runner::Maven => {
                let at = dir.join("surefire");
                (
                    vec![format!("-Dsurefire.reportsDirectory={}", at.display())],
                    ReportAt::Dir(at),
                )
            }
            Runner::Gradle => {
                let at = dir.join("gradle");
                let script = dir.join("agentloop.gradle");
                files.push((
                    script.clone(),
                    format!(
                        "allprojects {{\n  tasks.withType(Test).configureEach {{ t ->\n    t.reports.junitXml.outputLocation.set(new File({}, project.path.replace(':', '_') + '/' + t.name))\n  }}\n}}\n",
                        groovy_string(&at)
                    ),
                ));
                (
                    vec![
                        "--init-script".into(),
                        script.display().to_string(),
                        "--continue".into(),
                    ],
                    ReportAt::Dir(at),
                )
            }
            Runner::Rspec => {
                let at = dir.join("rspec.json");
                (
                    vec![
                        "--format".into(),
                        "progress".into(),
                        "--format".into(),
                        "json".into(),
                        "--out".into(),
                        at.display().to_string(),
                    ],
                    ReportAt::File(at),
                )
            }
        };
        let Some(command) = found.with_args(&args) else {
            return generic;
        };
        Invocation {
            runner: Some(found.runner),
            command,
            format: found.runner.format(),
            report,
            files,
            report_var,
        }
    }

    /// The command that runs test `id` alone (to tell a flaky failure from a real
    /// one), where the runner can select one test; else the whole check again.
    pub fn alone(&self, original: &str, id: &str, workdir: &Path, dir: &Path) -> Invocation {
        let mut again = Invocation::new(original, workdir, dir);
        let Some(found) = recognise(original, Some(workdir)) else {
            return again;
        };
        let selected = match found.runner {
            Runner::Pytest if !found.via_script => {
                let mut words = found.words[..found.program_end].to_vec();
                words.push(id.to_string());
                Some(words)
            }
            Runner::GoTest if !found.via_script => id.split_once("::").map(|(pkg, test)| {
                let pattern = test
                    .split('/')
                    .map(|part| format!("^{}$", regex::escape(part)))
                    .collect::<Vec<_>>()
                    .join("/");
                let mut words = found.words[..found.program_end].to_vec();
                words.extend(["-run".to_string(), pattern, pkg.to_string()]);
                words
            }),
            _ => None,
        };
        if let Some(words) = selected
            && let Some(cmd) = join(&words)
        {
            again = Invocation::new(&cmd, workdir, dir);
        }
        again
    }
}

/// Whether `command` may start a test runner agentloop reads (a package script may:
/// which runner it starts is known only in the project).
pub fn may_be_runner(command: &str) -> bool {
    recognise(command, None).is_some()
}

/// A command recognised: its words and where the runner's own arguments begin.
struct Found {
    runner: Runner,
    words: Vec<String>,
    /// Words up to and including the runner and its subcommand (`python3 -m pytest`,
    /// `cargo nextest run`, `go test`).
    program_end: usize,
    /// `npm test` and the like: the runner is in a package.json script; arguments go
    /// through the package manager.
    via_script: bool,
    /// How the package manager passes arguments on (`--` for npm).
    pass_through: Option<&'static str>,
}

impl Found {
    /// The command with `args` added where the runner reads them (before a `--` that
    /// ends its own options).
    fn with_args(&self, args: &[String]) -> Option<String> {
        let mut words = self.words.clone();
        if self.via_script {
            if let Some(sep) = self.pass_through
                && !words.iter().any(|w| w == "--")
            {
                words.push(sep.to_string());
            }
            words.extend(args.iter().cloned());
            return join(&words);
        }
        let at = match self.runner {
            // `go test` flags come before the packages.
            Runner::GoTest => self.program_end,
            _ => words[self.program_end..]
                .iter()
                .position(|w| w == "--")
                .map(|i| i + self.program_end)
                .unwrap_or(words.len()),
        };
        words.splice(at..at, args.iter().cloned());
        join(&words)
    }
}

/// The words as one shell command, each quoted only where it needs it.
fn join(words: &[String]) -> Option<String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            if !w.is_empty() && w.chars().all(safe) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect();
    (!words.iter().any(|w| w.contains('\0'))).then(|| quoted.join(" "))
}

/// Which runner `command` starts, if it is one simple command.
fn recognise(command: &str, workdir: Option<&Path>) -> Option<Found> {
    // Anything the shell would treat as more than one command, or expand, is run as
    // written.
    if !simple(command) {
        return None;
    }
    let words = shlex::split(command)?;
    let start = words
        .iter()
        .position(|w| !is_assignment(w))
        .unwrap_or(words.len());
    let (runner, end) = program(&words[start..])?;
    let found = Found {
        runner,
        words: words.clone(),
        program_end: start + end,
        via_script: false,
        pass_through: None,
    };
    if runner != Runner::Jest || !is_package_manager(&words[start]) {
        return Some(found);
    }
    // `npm test`, `yarn test`, `pnpm run unit`: the script says which runner (and
    // without the project at hand, it may be one).
    match workdir {
        Some(w) => script_runner(&words, start, w),
        None => Some(found),
    }
}

/// Whether the shell would read `command` as one command with literal words: no
/// operator, redirection, expansion or escape outside single quotes.
fn simple(command: &str) -> bool {
    let (mut single, mut double) = (false, false);
    for c in command.chars() {
        match c {
            '\'' if !double => single = !single,
            _ if single => {}
            '"' => double = !double,
            '$' | '`' | '\\' | '\n' => return false,
            ';' | '&' | '|' | '<' | '>' | '(' | ')' if !double => return false,
            _ => {}
        }
    }
    !single && !double
}

/// `npm test` and the like, when the script's last command is a JavaScript runner.
fn script_runner(words: &[String], start: usize, workdir: &Path) -> Option<Found> {
    let pm = words[start].rsplit('/').next().unwrap_or("");
    let rest = &words[start + 1..];
    let name = match rest {
        [t] if t == "test" || t == "t" => "test",
        [run, s] if run == "run" || run == "run-script" => s.as_str(),
        [s] if pm != "npm" => s.as_str(),
        _ => return None,
    };
    let text = std::fs::read_to_string(workdir.join("package.json")).ok()?;
    let pkg: serde_json::Value = serde_json::from_str(&text).ok()?;
    let script = pkg.get("scripts")?.get(name)?.as_str()?;
    let last = script.rsplit("&&").next()?.trim();
    let inner = recognise(last, Some(workdir))?;
    if !matches!(inner.runner, Runner::Jest | Runner::Vitest | Runner::Mocha) || inner.via_script {
        return None;
    }
    Some(Found {
        runner: inner.runner,
        words: words.to_vec(),
        program_end: words.len(),
        via_script: true,
        pass_through: (pm == "npm").then_some("--"),
    })
}

fn is_package_manager(w: &str) -> bool {
    matches!(w.rsplit('/').next(), Some("npm" | "yarn" | "pnpm"))
}

/// `NAME=value` before the program.
fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The runner the words start, and how many words name it (with its subcommand).
fn program(words: &[String]) -> Option<(Runner, usize)> {
    let base = |i: usize| words.get(i).map(|w| w.rsplit('/').next().unwrap_or(w));
    let first = base(0)?;
    // Wrappers that run a program in the project's environment.
    if matches!(first, "uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye")
        && base(1) == Some("run")
    {
        return program(&words[2..]).map(|(r, n)| (r, n + 2));
    }
    if first == "bundle" && base(1) == Some("exec") {
        return program(&words[2..]).map(|(r, n)| (r, n + 2));
    }
    if first == "npx" || (matches!(first, "pnpm" | "yarn") && base(1) == Some("exec")) {
        let skip = if first == "npx" { 1 } else { 2 };
        let flags = words[skip..]
            .iter()
            .take_while(|w| w.starts_with('-'))
            .count();
        let (r, n) = program(&words[skip + flags..])?;
        return matches!(r, Runner::Jest | Runner::Vitest | Runner::Mocha)
            .then_some((r, n + skip + flags));
    }
    let is_python = |w: &str| {
        w == "python"
            || w.strip_prefix("python")
                .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    Some(match first {
        "pytest" | "py.test" => (Runner::Pytest, 1),
        p if is_python(p) && base(1) == Some("-m") && base(2) == Some("pytest") => {
            (Runner::Pytest, 3)
        }
        "cargo" => {
            // `cargo +nightly test`: a toolchain first.
            let off = usize::from(words.get(1).is_some_and(|w| w.starts_with('+')));
            match (base(1 + off), base(2 + off)) {
                (Some("nextest"), Some("run")) => (Runner::Nextest, 3 + off),
                (Some("test"), _) => (Runner::CargoTest, 2 + off),
                _ => return None,
            }
        }
        "go" if base(1) == Some("test") => (Runner::GoTest, 2),
        "jest" => (Runner::Jest, 1),
        "vitest" => (Runner::Vitest, 1),
        "mocha" | "_mocha" => (Runner::Mocha, 1),
        "rspec" => (Runner::Rspec, 1),
        "mvn" | "mvnw" => {
            // Surefire runs in the test phase and every phase after it.
            let phases = ["test", "package", "verify", "install", "deploy"];
            if !words[1..].iter().any(|w| phases.contains(&w.as_str())) {
                return None;
            }
            (Runner::Maven, 1)
        }
        "gradle" | "gradlew" => {
            let tasks = ["test", "check", "build"];
            if !words[1..]
                .iter()
                .any(|w| tasks.contains(&w.rsplit(':').next().unwrap_or(w)))
            {
                return None;
            }
            (Runner::Gradle, 1)
        }
        // `npm test`, `yarn test`: which runner is the script's business.
        "npm" | "yarn" | "pnpm" => (Runner::Jest, 1),
        _ => return None,
    })
}

/// A path as a TOML basic string.
fn toml_string(p: &Path) -> String {
    toml::Value::String(p.display().to_string()).to_string()
}

/// A path as a Groovy single-quoted string.
fn groovy_string(p: &Path) -> String {
    format!(
        "'{}'",
        p.display()
            .to_string()
            .replace('\\', "\\\\")
            .replace('\'', "\\'")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inv(cmd: &str) -> Invocation {
        Invocation::new(cmd, Path::new("/nonexistent"), Path::new("/r"))
    }

    #[test]
    fn runners_are_recognised_and_told_where_to_report() {
        let cases: [(&str, Option<Runner>, &str); 14] = [
            (
                "python3 -m pytest -q",
                Some(Runner::Pytest),
                "python3 -m pytest -q --junitxml=/r/pytest.xml -o junit_family=xunit1 --continue-on-collection-errors",
            ),
            (
                "PYTHONPATH=src uv run pytest tests/",
                Some(Runner::Pytest),
                "PYTHONPATH=src uv run pytest tests/ --junitxml=/r/pytest.xml -o junit_family=xunit1 --continue-on-collection-errors",
            ),
            (
                "cargo nextest run --workspace -- --ignored",
                Some(Runner::Nextest),
                "cargo nextest run --workspace --tool-config-file agentloop:/r/nextest.toml --no-fail-fast -- --ignored",
            ),
            (
                "cargo test",
                Some(Runner::CargoTest),
                "cargo test --no-fail-fast",
            ),
            ("go test ./...", Some(Runner::GoTest), "go test -json ./..."),
            (
                "npx jest t/",
                Some(Runner::Jest),
                "npx jest t/ --json --outputFile=/r/jest.json",
            ),
            (
                "npx vitest run",
                Some(Runner::Vitest),
                "npx vitest run --reporter=default --reporter=json --outputFile.json=/r/vitest.json",
            ),
            (
                "mocha",
                Some(Runner::Mocha),
                "mocha --reporter json --reporter-option output=/r/mocha.json",
            ),
            (
                "mvn -q test",
                Some(Runner::Maven),
                "mvn -q test -Dsurefire.reportsDirectory=/r/surefire",
            ),
            (
                "./gradlew test",
                Some(Runner::Gradle),
                "./gradlew test --init-script /r/agentloop.gradle --continue",
            ),
            (
                "bundle exec rspec",
                Some(Runner::Rspec),
                "bundle exec rspec --format progress --format json --out /r/rspec.json",
            ),
            ("pytest && echo ok", None, "pytest && echo ok"),
            ("sh test.sh", None, "sh test.sh"),
            ("mvn -q compile", None, "mvn -q compile"),
        ];
        for (cmd, runner, want) in cases {
            let i = inv(cmd);
            assert_eq!(i.runner, runner, "{cmd}");
            assert_eq!(i.command, want, "{cmd}");
        }
        assert_eq!(
            inv("sh test.sh").report,
            ReportAt::File("/r/report.xml".into())
        );
        let n = inv("cargo nextest run");
        assert_eq!(n.files[0].0, PathBuf::from("/r/nextest.toml"));
        assert!(
            n.files[0].1.contains("dir = \"/r/nextest\""),
            "{}",
            n.files[0].1
        );
    }

    #[test]
    fn package_scripts_that_end_in_a_runner_get_its_arguments_through_the_manager() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"scripts": {"test": "npm run build && jest --ci", "unit": "vitest run", "lint": "eslint ."}}"#,
        )
        .unwrap();
        let r = Path::new("/r");
        let i = Invocation::new("npm test", dir.path(), r);
        assert_eq!(i.runner, Some(Runner::Jest));
        assert_eq!(i.command, "npm test -- --json --outputFile=/r/jest.json");
        let i = Invocation::new("yarn unit", dir.path(), r);
        assert_eq!(i.runner, Some(Runner::Vitest));
        assert!(
            i.command.starts_with("yarn unit --reporter=default"),
            "{}",
            i.command
        );
        assert_eq!(Invocation::new("npm run lint", dir.path(), r).runner, None);
        assert_eq!(
            Invocation::new("npm run nothing", dir.path(), r).runner,
            None
        );
    }

    #[test]
    fn one_test_alone_where_the_runner_can_select_it() {
        let w = Path::new("/nonexistent");
        let r = Path::new("/r");
        let i = inv("python3 -m pytest -q tests/");
        let a = i.alone("python3 -m pytest -q tests/", "tests/t.py::test_a[1]", w, r);
        assert_eq!(
            a.command,
            "python3 -m pytest 'tests/t.py::test_a[1]' --junitxml=/r/pytest.xml -o junit_family=xunit1 --continue-on-collection-errors"
        );
        let a = i.alone("go test ./...", "example.com/m/ops::TestSub/one", w, r);
        assert_eq!(
            a.command,
            "go test -json -run '^TestSub$/^one$' example.com/m/ops"
        );
        let a = i.alone("npx jest", "t/a.test.js::x", w, r);
        assert_eq!(a.command, "npx jest --json --outputFile=/r/jest.json");
    }
}
