//! The project's own build, test and lint commands, found from the files that declare
//! them (Cargo, npm/pnpm/yarn scripts, pytest/tox/nox, go, just, make, gradle,
//! maven), for `init` to write as the run's final checks.

use std::path::Path;

use crate::follow;
use crate::installed::{self, Need};

/// A check `init` writes: the command and where it was found (`tox.ini [testenv]
/// commands`, `package.json`, `Makefile test recipe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub command: String,
    pub from: String,
}

/// A check found but not written: it cannot start on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub command: String,
    pub from: String,
    pub why: String,
}

/// The checks found, those that cannot start here, and the installed dependencies
/// the clean copy needs (`[verify] carry`).
#[derive(Debug, Default, PartialEq)]
pub struct Detected {
    pub checks: Vec<Check>,
    pub skipped: Vec<Skipped>,
    pub carry: Vec<String>,
}

impl Detected {
    pub fn commands(&self) -> Vec<String> {
        self.checks.iter().map(|c| c.command.clone()).collect()
    }

    /// Where the checks came from, each once, in order.
    pub fn sources(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in &self.checks {
            if !out.contains(&c.from) {
                out.push(c.from.clone());
            }
        }
        out
    }

    fn offer(
        &mut self,
        dir: &Path,
        present: &dyn Fn(&Need, &Path) -> bool,
        command: &str,
        from: &str,
    ) {
        if self.checks.iter().any(|c| c.command == command) {
            return;
        }
        match installed::needs(command, dir)
            .iter()
            .find(|n| !present(n, dir))
        {
            Some(need) => self.skipped.push(Skipped {
                command: command.to_string(),
                from: from.to_string(),
                why: need.missing(),
            }),
            None => self.checks.push(Check {
                command: command.to_string(),
                from: from.to_string(),
            }),
        }
    }
}

fn has(dir: &Path, name: &str) -> bool {
    dir.join(name).exists()
}

/// The project's checks, each program looked for on this machine.
pub fn detect(dir: &Path) -> Detected {
    detect_with(dir, &installed::present)
}

/// [`detect`], with whether a need is met answered by `present`.
pub fn detect_with(dir: &Path, present: &dyn Fn(&Need, &Path) -> bool) -> Detected {
    let mut d = Detected::default();
    let mut offer =
        |d: &mut Detected, command: &str, from: &str| d.offer(dir, present, command, from);
    if has(dir, "Cargo.toml") {
        for c in [
            "cargo build --all-targets",
            "cargo test",
            "cargo clippy --all-targets -- -D warnings",
        ] {
            offer(&mut d, c, "Cargo.toml");
        }
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("package.json"))
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
    {
        let pm = if has(dir, "pnpm-lock.yaml") {
            "pnpm"
        } else if has(dir, "yarn.lock") {
            "yarn"
        } else {
            "npm"
        };
        let empty = serde_json::Map::new();
        let scripts = v
            .get("scripts")
            .and_then(|s| s.as_object())
            .unwrap_or(&empty);
        // What `test` runs in turn is not run again on its own (`npm test` that runs
        // `npm run lint`).
        let in_test = follow::script_chain(scripts, "test").scripts;
        for name in ["build", "test", "lint"] {
            let Some(script) = scripts.get(name).and_then(|s| s.as_str()) else {
                continue;
            };
            // npm init's placeholder test fails on purpose.
            if script.contains("no test specified")
                || (name != "test" && in_test.iter().any(|s| s == name))
            {
                continue;
            }
            let command = match (pm, name) {
                ("npm", "test") => "npm test".to_string(),
                ("npm", _) => format!("npm run {name}"),
                (pm, _) => format!("{pm} {name}"),
            };
            offer(&mut d, &command, "package.json");
        }
        // What `npm install` (or pnpm's, or yarn's) left, each workspace package's
        // own `node_modules` too.
        d.carry.extend(crate::environment::installed(dir));
    }
    python(&mut d, dir, &mut offer);
    if has(dir, "go.mod") {
        for c in ["go build ./...", "go test ./...", "go vet ./..."] {
            offer(&mut d, c, "go.mod");
        }
    }
    if has(dir, "gradlew") {
        offer(&mut d, "./gradlew build", "gradlew");
    } else if has(dir, "build.gradle") || has(dir, "build.gradle.kts") {
        offer(&mut d, "gradle build", "build.gradle");
    }
    if has(dir, "pom.xml") {
        offer(&mut d, "mvn -q verify", "pom.xml");
    }
    // just and make last, and only for what nothing above covers.
    if d.checks.is_empty()
        && d.skipped.is_empty()
        && let Some((file, recipes)) = follow::just_recipes(dir)
    {
        for t in ["build", "test", "check", "lint"] {
            let Some((_, body)) = recipes.iter().find(|(name, _)| name == t) else {
                continue;
            };
            match follow::just_recipe_command(body)
                .filter(|c| agentloop_evidence::runner::runner_in(c, dir).is_some())
            {
                Some(c) => offer(&mut d, &c, &format!("{file} `{t}` recipe")),
                None => offer(&mut d, &format!("just {t}"), file),
            }
        }
    }
    if d.checks.is_empty() && d.skipped.is_empty() {
        let targets = follow::make_targets(dir);
        for t in ["build", "test", "check", "lint"] {
            let Some((_, recipe)) = targets.iter().find(|(name, _)| name == t) else {
                continue;
            };
            // A recipe that only starts a test runner is written as that runner, so
            // its report is read test by test.
            match follow::make_recipe_command(recipe)
                .filter(|c| agentloop_evidence::runner::runner_in(c, dir).is_some())
            {
                Some(c) => offer(&mut d, &c, &format!("Makefile `{t}` recipe")),
                None => offer(&mut d, &format!("make {t}"), "Makefile"),
            }
        }
    }
    d
}

type Offer<'a> = dyn FnMut(&mut Detected, &str, &str) + 'a;

/// tox and nox followed to the pytest they run; else pytest where the project
/// configures it or has tests.
fn python(d: &mut Detected, dir: &Path, offer: &mut Offer) {
    if has(dir, "tox.ini") {
        match follow::tox(dir) {
            Some(inside) => inside.iter().for_each(|i| offer(d, &i.command, &i.from)),
            None => offer(d, "tox", "tox.ini"),
        }
    } else if has(dir, "noxfile.py") {
        if follow::nox_runs_pytest(dir) {
            offer(d, "python3 -m pytest", "noxfile.py session.run(\"pytest\")");
        } else {
            offer(d, "nox", "noxfile.py");
        }
    } else if has(dir, "pytest.ini")
        || has(dir, "conftest.py")
        || (has(dir, "pyproject.toml")
            && std::fs::read_to_string(dir.join("pyproject.toml"))
                .is_ok_and(|t| t.contains("[tool.pytest") || t.contains("pytest")))
        || (has(dir, "tests")
            && (has(dir, "pyproject.toml") || has(dir, "setup.py") || has(dir, "setup.cfg")))
    {
        offer(d, "python3 -m pytest", "pytest");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let p = d.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        d
    }

    /// Everything is installed.
    fn found(d: &tempfile::TempDir) -> Vec<String> {
        detect_with(d.path(), &|_, _| true).commands()
    }

    #[test]
    fn each_ecosystem_by_its_files() {
        let d = project(&[("Cargo.toml", "[package]\nname = \"x\"\n")]);
        assert_eq!(found(&d)[1], "cargo test");
        let d = project(&[
            (
                "package.json",
                r#"{"scripts": {"build": "tsc", "test": "vitest run", "lint": "eslint ."}}"#,
            ),
            ("pnpm-lock.yaml", ""),
        ]);
        assert_eq!(found(&d), ["pnpm build", "pnpm test", "pnpm lint"]);
        let d = project(&[(
            "package.json",
            r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
        )]);
        assert!(found(&d).is_empty(), "npm's placeholder test is no check");
        let d = project(&[("package.json", r#"{"scripts": {"test": "jest"}}"#)]);
        assert_eq!(found(&d), ["npm test"]);
        let d = project(&[
            ("pyproject.toml", "[tool.pytest.ini_options]\n"),
            ("tests/test_a.py", ""),
        ]);
        assert_eq!(found(&d), ["python3 -m pytest"]);
        let d = project(&[("tox.ini", "[tox]\n")]);
        assert_eq!(found(&d), ["tox"], "a tox.ini with no commands to follow");
        let d = project(&[("go.mod", "module x\n")]);
        assert_eq!(found(&d)[1], "go test ./...");
        let d = project(&[(
            "Makefile",
            "build:\n\tcc x.c\ntest: build\n\t./t\n.PHONY: test\n",
        )]);
        assert_eq!(found(&d), ["make build", "make test"]);
        let d = project(&[("README.md", "hello")]);
        assert_eq!(detect_with(d.path(), &|_, _| true), Detected::default());
    }

    #[test]
    fn wrappers_are_followed_to_the_runner_they_call() {
        let d = project(&[
            (
                "tox.ini",
                "[tox]\nenvlist = py311\n[testenv]\ndeps = pytest\ncommands = pytest {posargs} tests\n",
            ),
            ("setup.cfg", "[metadata]\nname = x\n"),
        ]);
        let got = detect_with(d.path(), &|_, _| true);
        assert_eq!(got.commands(), ["python3 -m pytest tests"]);
        assert_eq!(got.sources(), ["tox.ini [testenv] commands"]);
        let d = project(&[(
            "noxfile.py",
            "import nox\n@nox.session\ndef tests(session):\n    session.install('pytest')\n    session.run('pytest', *session.posargs)\n",
        )]);
        assert_eq!(found(&d), ["python3 -m pytest"]);
        let d = project(&[(
            "package.json",
            r#"{"scripts": {"test": "npm run lint && npm run mocha", "lint": "eslint .", "mocha": "mocha test/"}}"#,
        )]);
        assert_eq!(
            found(&d),
            ["npm test"],
            "lint runs inside npm test: not twice"
        );
        let d = project(&[(
            "justfile",
            "test:\n    python3 -m pytest -q\nlint:\n    ruff check .\n",
        )]);
        let got = detect_with(d.path(), &|_, _| true);
        assert_eq!(got.commands(), ["python3 -m pytest -q", "just lint"]);
        assert_eq!(got.sources(), ["justfile `test` recipe", "justfile"]);
        let d = project(&[(
            "Makefile",
            "test:\n\t@go test ./...\nlint:\n\tgolangci-lint run\n",
        )]);
        let got = detect_with(d.path(), &|_, _| true);
        assert_eq!(got.commands(), ["go test ./...", "make lint"]);
        assert_eq!(got.sources(), ["Makefile `test` recipe", "Makefile"]);
    }

    #[test]
    fn a_check_that_cannot_start_here_is_not_written_and_says_why() {
        let d = project(&[
            (
                "tox.ini",
                "[testenv]\ncommands =\n    pytest\n    flake8 src\n",
            ),
            ("package.json", r#"{"scripts": {"test": "jest"}}"#),
            ("node_modules/.keep", ""),
        ]);
        let present = |n: &Need, _: &Path| {
            !matches!(n, Need::Program(p) if p == "flake8") && !matches!(n, Need::ScriptProgram(_))
        };
        let got = detect_with(d.path(), &present);
        assert_eq!(got.commands(), ["python3 -m pytest"]);
        let skipped: Vec<(&str, &str)> = got
            .skipped
            .iter()
            .map(|s| (s.command.as_str(), s.why.split(',').next().unwrap()))
            .collect();
        assert_eq!(
            skipped,
            [
                ("npm test", "jest"),
                ("flake8 src", "flake8 is not installed (not on PATH)")
            ]
        );
        assert_eq!(
            got.carry,
            ["node_modules"],
            "installed dependencies reach the clean copy"
        );
    }
}
