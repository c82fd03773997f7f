//! Whether a check's programs are there to run it: on `PATH`, importable by
//! `python3`, in the project's `node_modules/.bin`, or a file of the project. `init`
//! writes no check that cannot start, and `plan check` calls such a plan invalid.

use std::path::Path;

use crate::follow::script_chain;

/// Something a command needs before it can start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// A program found on `PATH` (or, with a `/`, a file of the project).
    Program(String),
    /// A module `python3 -m` runs.
    PythonModule(String),
    /// A program a package script starts: the project's `node_modules/.bin` or `PATH`.
    ScriptProgram(String),
}

impl Need {
    /// Why a command cannot start without it, and how to mend that.
    pub fn missing(&self) -> String {
        match self {
            Need::Program(p) if p.contains('/') => format!("{p} is not in the project"),
            Need::Program(p) => format!("{p} is not installed (not on PATH)"),
            Need::PythonModule(m) => format!(
                "python3 cannot import {m}: install it where python3 finds it (`python3 -m pip install {m}` in the project's virtual environment)"
            ),
            Need::ScriptProgram(p) => format!(
                "{p}, which the package script runs, is neither in node_modules/.bin nor on PATH: install the project's dependencies first (`npm install`)"
            ),
        }
    }
}

/// Builtins of the shell a check runs in: never looked for on `PATH`.
const BUILTINS: &[&str] = &[
    "cd", "exit", "export", "set", "unset", "true", "false", ":", ".", "source", "echo", "test",
    "[", "[[", "exec", "eval", "shift", "wait", "trap", "umask", "if", "then", "fi", "for", "do",
    "done", "while", "until", "case", "time", "command", "builtin", "type", "read", "let", "local",
    "return", "printf", "pushd", "popd",
];

/// What `command`, run in `dir`, needs before it can start: its program and, for a
/// package script, the programs the script starts in turn.
pub fn needs(command: &str, dir: &Path) -> Vec<Need> {
    let Some(words) = shlex::split(command) else {
        return Vec::new();
    };
    let words: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .collect();
    let Some(&first) = words.first() else {
        return Vec::new();
    };
    if BUILTINS.contains(&first) {
        return Vec::new();
    }
    let program = first.rsplit('/').next().unwrap_or(first);
    let mut out = vec![Need::Program(first.to_string())];
    match (program, &words[1..]) {
        ("python3" | "python", ["-m", module, ..]) => {
            out.push(Need::PythonModule(module.to_string()));
        }
        ("cargo", [sub, ..]) if matches!(*sub, "clippy" | "nextest" | "fmt" | "llvm-cov") => {
            out.push(Need::Program(format!("cargo-{sub}")));
        }
        ("npx", [p, ..]) => out = vec![Need::ScriptProgram(p.to_string())],
        ("npm" | "pnpm" | "yarn", rest) => {
            let name = match rest {
                ["test" | "t", ..] => Some("test"),
                ["run" | "run-script", s, ..] => Some(*s),
                [s, ..] if program != "npm" => Some(*s),
                _ => None,
            };
            let scripts = std::fs::read_to_string(dir.join("package.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
            if let (Some(name), Some(scripts)) = (
                name,
                scripts
                    .as_ref()
                    .and_then(|v| v.get("scripts"))
                    .and_then(|s| s.as_object()),
            ) {
                for p in script_chain(scripts, name).programs {
                    if !BUILTINS.contains(&p.as_str())
                        && !out.contains(&Need::ScriptProgram(p.clone()))
                    {
                        out.push(Need::ScriptProgram(p));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// Whether `need` is met for a command run in `dir`, on this machine.
pub fn present(need: &Need, dir: &Path) -> bool {
    match need {
        Need::Program(p) if p.contains('/') => executable(&dir.join(p)),
        Need::Program(p) => on_path(p),
        Need::PythonModule(m) => python_finds(m, dir),
        Need::ScriptProgram(p) => executable(&dir.join("node_modules/.bin").join(p)) || on_path(p),
    }
}

/// Whether `python3` run in `dir` finds module `m`; asked once per module and
/// directory in a process (a plan of many `python3 -m pytest` checks starts one
/// interpreter, not one each).
fn python_finds(m: &str, dir: &Path) -> bool {
    type Found = std::collections::HashMap<(String, std::path::PathBuf), bool>;
    static FOUND: std::sync::OnceLock<std::sync::Mutex<Found>> = std::sync::OnceLock::new();
    let key = (m.to_string(), dir.to_path_buf());
    let found = FOUND.get_or_init(Default::default);
    if let Some(known) = found.lock().ok().and_then(|f| f.get(&key).copied()) {
        return known;
    }
    let there = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)",
            m,
        ])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if let Ok(mut f) = found.lock() {
        f.insert(key, there);
    }
    there
}

/// The first need of `command` that is not met, said as why it cannot start.
pub fn missing(command: &str, dir: &Path) -> Option<String> {
    needs(command, dir)
        .iter()
        .find(|n| !present(n, dir))
        .map(Need::missing)
}

/// Modules `python3 -m` runs that are tools, not the project's own code: a plan may
/// name a module of its own that a task has yet to write.
const PYTHON_TOOLS: &[&str] = &[
    "pytest",
    "tox",
    "nox",
    "mypy",
    "flake8",
    "black",
    "ruff",
    "pylint",
    "coverage",
    "hypothesis",
];

/// Why a plan's `Verify:` command cannot start on this machine, when that is certain
/// before any task has run: its first program is a bare name not on `PATH`, a tool
/// module `python3` cannot import, or a program a package script starts that is not
/// installed. A path (`./check.sh`, `target/debug/x`) may be made by a task, and a
/// command the shell expands is not read: neither is judged.
pub fn cannot_start(command: &str, dir: &Path) -> Option<String> {
    let first = command
        .split(['&', '|', ';', '\n'])
        .next()
        .unwrap_or_default()
        .trim();
    if first.contains(['$', '`', '(', ')', '{', '<', '>']) {
        return None;
    }
    let words = shlex::split(first)?;
    let words: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .skip_while(|w| *w == "!" || *w == "env" || (w.contains('=') && !w.starts_with('-')))
        .collect();
    if words.first().is_none_or(|w| w.contains('/')) {
        return None;
    }
    needs(&words.join(" "), dir)
        .into_iter()
        .filter(|n| match n {
            Need::Program(p) => !p.contains('/'),
            Need::PythonModule(m) => PYTHON_TOOLS.contains(&m.as_str()),
            Need::ScriptProgram(_) => true,
        })
        .find(|n| !present(n, dir))
        .map(|n| n.missing())
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(program))))
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_command_needs() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            needs("python3 -m pytest -q tests", d.path()),
            [
                Need::Program("python3".into()),
                Need::PythonModule("pytest".into())
            ]
        );
        assert_eq!(
            needs("cargo clippy --all-targets", d.path()),
            [
                Need::Program("cargo".into()),
                Need::Program("cargo-clippy".into())
            ]
        );
        assert_eq!(
            needs("FOO=1 tox -e py", d.path()),
            [Need::Program("tox".into())]
        );
        assert_eq!(needs("echo hi", d.path()), []);
        std::fs::write(
            d.path().join("package.json"),
            r#"{"scripts": {"test": "npm run lint && npm run unit", "lint": "eslint .", "unit": "jest"}}"#,
        )
        .unwrap();
        assert_eq!(
            needs("npm test", d.path()),
            [
                Need::Program("npm".into()),
                Need::ScriptProgram("eslint".into()),
                Need::ScriptProgram("jest".into())
            ]
        );
    }

    #[test]
    fn a_program_is_there_on_path_in_node_modules_or_in_the_project() {
        let d = tempfile::tempdir().unwrap();
        assert!(present(&Need::Program("sh".into()), d.path()));
        assert!(!present(
            &Need::Program("agentloop-no-such-program".into()),
            d.path()
        ));
        let bin = d.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        let jest = bin.join("jest");
        std::fs::write(&jest, "#!/bin/sh\n").unwrap();
        assert!(
            !present(&Need::ScriptProgram("jest".into()), d.path()),
            "not executable"
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&jest, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(present(&Need::ScriptProgram("jest".into()), d.path()));
        assert!(!present(&Need::Program("./gradlew".into()), d.path()));
        assert!(present(&Need::PythonModule("json".into()), d.path()));
        assert!(!present(
            &Need::PythonModule("agentloop_no_such_module".into()),
            d.path()
        ));
        assert_eq!(
            missing("agentloop-no-such-program --x", d.path()).as_deref(),
            Some("agentloop-no-such-program is not installed (not on PATH)")
        );
        assert_eq!(missing("sh -c true", d.path()), None);
        // A plan's Verify: only what is certain before a task runs.
        for written in [
            "./check.sh",
            "! grep -q x y",
            "test -f a.txt && agentloop-no-such-program",
            "python3 -m mypackage.cli",
            "$TOOL run",
            "FOO=1 sh -c 'exit 0'",
            "time agentloop-no-such-program",
            "command -v pytest",
        ] {
            assert_eq!(cannot_start(written, d.path()), None, "{written}");
        }
        assert_eq!(
            cannot_start("FOO=1 agentloop-no-such-program | tee x", d.path()).as_deref(),
            Some("agentloop-no-such-program is not installed (not on PATH)")
        );
        assert!(
            cannot_start("python3 -m agentloop_no_such_tool", d.path()).is_none(),
            "not a tool agentloop knows"
        );
    }
}
