//! The project's own build, test and lint commands, found from the files that declare
//! them (Cargo, npm/pnpm/yarn scripts, pytest/tox/nox, go, make, gradle, maven), for
//! `init` to write as the run's final checks.

use std::path::Path;

/// The commands found, and which file each kind came from.
#[derive(Debug, Default, PartialEq)]
pub struct Detected {
    pub commands: Vec<String>,
    pub from: Vec<String>,
}

fn has(dir: &Path, name: &str) -> bool {
    dir.join(name).exists()
}

/// Make targets defined in the Makefile (`name:` at the start of a line).
fn make_targets(dir: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(dir.join("Makefile")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.split_once(':').map(|(t, _)| t))
        .filter(|t| {
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .map(String::from)
        .collect()
}

impl Detected {
    fn add(&mut self, from: &str, cmds: &[String]) {
        if !cmds.is_empty() {
            self.from.push(from.to_string());
            self.commands.extend(cmds.iter().cloned());
        }
    }
}

pub fn detect(dir: &Path) -> Detected {
    let mut d = Detected::default();
    if has(dir, "Cargo.toml") {
        d.add(
            "Cargo.toml",
            &[
                "cargo build --all-targets",
                "cargo test",
                "cargo clippy --all-targets -- -D warnings",
            ]
            .map(String::from),
        );
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
        let scripts = v.get("scripts").and_then(|s| s.as_object());
        let mut cmds = Vec::new();
        for name in ["build", "test", "lint"] {
            let Some(script) = scripts.and_then(|s| s.get(name)).and_then(|s| s.as_str()) else {
                continue;
            };
            // npm init's placeholder test fails on purpose.
            if script.contains("no test specified") {
                continue;
            }
            cmds.push(match (pm, name) {
                ("npm", "test") => "npm test".to_string(),
                ("npm", _) => format!("npm run {name}"),
                (pm, _) => format!("{pm} {name}"),
            });
        }
        d.add("package.json", &cmds);
    }
    if has(dir, "tox.ini") {
        d.add("tox.ini", &["tox".to_string()]);
    } else if has(dir, "noxfile.py") {
        d.add("noxfile.py", &["nox".to_string()]);
    } else if has(dir, "pytest.ini")
        || has(dir, "conftest.py")
        || (has(dir, "pyproject.toml")
            && std::fs::read_to_string(dir.join("pyproject.toml"))
                .is_ok_and(|t| t.contains("[tool.pytest") || t.contains("pytest")))
        || (has(dir, "tests") && (has(dir, "pyproject.toml") || has(dir, "setup.py")))
    {
        d.add("pytest", &["python3 -m pytest".to_string()]);
    }
    if has(dir, "go.mod") {
        d.add(
            "go.mod",
            &["go build ./...", "go test ./...", "go vet ./..."].map(String::from),
        );
    }
    if has(dir, "gradlew") {
        d.add("gradlew", &["./gradlew build".to_string()]);
    } else if has(dir, "build.gradle") || has(dir, "build.gradle.kts") {
        d.add("build.gradle", &["gradle build".to_string()]);
    }
    if has(dir, "pom.xml") {
        d.add("pom.xml", &["mvn -q verify".to_string()]);
    }
    // Make last, and only for what nothing above covers.
    if d.commands.is_empty() {
        let targets = make_targets(dir);
        let cmds: Vec<String> = ["build", "test", "check", "lint"]
            .iter()
            .filter(|t| targets.iter().any(|x| x == *t))
            .map(|t| format!("make {t}"))
            .collect();
        d.add("Makefile", &cmds);
    }
    d
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

    #[test]
    fn each_ecosystem_by_its_files() {
        let d = project(&[("Cargo.toml", "[package]\nname = \"x\"\n")]);
        assert_eq!(detect(d.path()).commands[1], "cargo test");
        let d = project(&[
            (
                "package.json",
                r#"{"scripts": {"build": "tsc", "test": "vitest run", "lint": "eslint ."}}"#,
            ),
            ("pnpm-lock.yaml", ""),
        ]);
        assert_eq!(
            detect(d.path()).commands,
            ["pnpm build", "pnpm test", "pnpm lint"]
        );
        let d = project(&[(
            "package.json",
            r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
        )]);
        assert!(
            detect(d.path()).commands.is_empty(),
            "npm's placeholder test is no check"
        );
        let d = project(&[("package.json", r#"{"scripts": {"test": "jest"}}"#)]);
        assert_eq!(detect(d.path()).commands, ["npm test"]);
        let d = project(&[
            ("pyproject.toml", "[tool.pytest.ini_options]\n"),
            ("tests/test_a.py", ""),
        ]);
        assert_eq!(detect(d.path()).commands, ["python3 -m pytest"]);
        let d = project(&[("tox.ini", "[tox]\n")]);
        assert_eq!(detect(d.path()).commands, ["tox"]);
        let d = project(&[("go.mod", "module x\n")]);
        assert_eq!(detect(d.path()).commands[1], "go test ./...");
        let d = project(&[(
            "Makefile",
            "build:\n\tcc x.c\ntest: build\n\t./t\n.PHONY: test\n",
        )]);
        assert_eq!(detect(d.path()).commands, ["make build", "make test"]);
        let d = project(&[("README.md", "hello")]);
        assert_eq!(detect(d.path()), Detected::default());
    }
}
