//! How many workers a check's runner may use (`[verify] jobs`), said in each runner's
//! own words: pytest's `-n` with pytest-xdist (only where the check's Python has it),
//! `go test -p`, jest's `--maxWorkers`, nextest's `--test-threads`, libtest's
//! `RUST_TEST_THREADS`. The runner splits the suite and writes one report, as it does
//! when a person asks it to. A choice the command or the project's configuration
//! already makes is kept; a runner not named here runs as it is (mocha's parallel
//! mode, for one, changes what root hooks and `--file` do, so it is not turned on).

use std::path::{Path, PathBuf};

use super::Runner;
use super::command::{Found, is_assignment};

/// What a check may use: `n` workers; `xdist`: the check's Python imports
/// pytest-xdist (asked by the caller, who may start a process: see
/// [`pytest_python`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jobs {
    pub n: u32,
    pub xdist: bool,
}

/// The arguments and the environment that hold `found`'s runner to `jobs`, run in
/// `workdir`; nothing when the command or the project already says.
pub(super) fn hold(
    found: &Found,
    jobs: Jobs,
    workdir: &Path,
) -> (Vec<String>, Vec<(String, String)>) {
    let own = &found.words[found.program_end.min(found.words.len())..];
    let has = |names: &[&str]| {
        own.iter().any(|w| {
            names.iter().any(|n| {
                w == n
                    || w.strip_prefix(n).is_some_and(|rest| {
                        rest.starts_with('=')
                            || (n.len() == 2 && rest.chars().all(|c| c.is_ascii_digit()))
                    })
            })
        })
    };
    let n = jobs.n.max(1).to_string();
    match found.runner {
        Runner::Pytest if jobs.xdist && jobs.n > 1 && !found.via_script => {
            let (_, addopts) = super::subset::pytest_settings(workdir);
            let environment = std::env::var("PYTEST_ADDOPTS").unwrap_or_default();
            let said = has(&["-n", "--numprocesses", "--dist", "-d", "--tx"])
                || own.windows(2).any(|w| w[0] == "-p" && w[1] == "no:xdist")
                || own.iter().any(|w| w == "-pno:xdist")
                || [addopts.as_str(), environment.as_str()].iter().any(|opts| {
                    opts.split_whitespace().any(|w| {
                        w == "-n"
                            || w.starts_with("--numprocesses")
                            || w.starts_with("--dist")
                            || w.contains("no:xdist")
                            || (w.starts_with("-n") && w[2..].chars().all(|c| c.is_ascii_digit()))
                    })
                });
            if said {
                return Default::default();
            }
            (
                vec!["-p".into(), "xdist".into(), "-n".into(), n],
                Vec::new(),
            )
        }
        Runner::GoTest if !has(&["-p"]) => (vec!["-p".into(), n], Vec::new()),
        // jest's own process counts: its default is one worker fewer than the cores.
        Runner::Jest
            if !has(&["--maxWorkers", "-w", "--runInBand", "-i"]) && !jest_configured(workdir) =>
        {
            let workers = jobs.n.saturating_sub(1).max(1);
            (vec![format!("--maxWorkers={workers}")], Vec::new())
        }
        Runner::Nextest if !has(&["--test-threads", "-j"]) => {
            (vec![format!("--test-threads={n}")], Vec::new())
        }
        Runner::CargoTest
            if !has(&["--test-threads"]) && std::env::var_os("RUST_TEST_THREADS").is_none() =>
        {
            (Vec::new(), vec![("RUST_TEST_THREADS".into(), n)])
        }
        _ => Default::default(),
    }
}

/// Whether the project's jest configuration sets its workers itself.
fn jest_configured(workdir: &Path) -> bool {
    let package = std::fs::read_to_string(workdir.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("jest").and_then(|j| j.get("maxWorkers")).is_some());
    package
        || ["js", "ts", "mjs", "cjs", "json"].iter().any(|ext| {
            std::fs::read_to_string(workdir.join(format!("jest.config.{ext}")))
                .is_ok_and(|t| t.contains("maxWorkers"))
        })
}

/// The Python a pytest check runs, when the command says which: `python3 -m pytest`
/// (`python3` found on `PATH`), or a `pytest` script (its `#!` line). `uv run pytest`
/// and the like build their environment as they start: none.
pub fn pytest_python(command: &str, workdir: &Path) -> Option<PathBuf> {
    let found = super::command::recognise(command, Some(workdir))?;
    if found.runner != Runner::Pytest || found.via_script {
        return None;
    }
    let start = found.words.iter().position(|w| !is_assignment(w))?;
    let first = &found.words[start];
    match first.rsplit('/').next().unwrap_or(first) {
        "pytest" | "py.test" => shebang_python(&resolve(first, workdir)?, workdir),
        _ if found.words.get(start + 1).is_some_and(|w| w == "-m") => resolve(first, workdir),
        _ => None,
    }
}

/// `word` as the shell would find it: a path (the project's, when relative), or the
/// first executable of that name on `PATH`.
fn resolve(word: &str, workdir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if word.contains('/') {
        let p = workdir.join(word);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(word))
        .find(|p| executable(p))
}

/// The interpreter a script's `#!` line names (`#!/usr/bin/env python3` too).
fn shebang_python(script: &Path, workdir: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = std::str::from_utf8(&head[..n]).ok()?.lines().next()?;
    let mut words = line.strip_prefix("#!")?.split_whitespace();
    let interpreter = words.next()?;
    if interpreter.rsplit('/').next() == Some("env") {
        return resolve(words.find(|w| !w.starts_with('-'))?, workdir);
    }
    Some(PathBuf::from(interpreter))
}

#[cfg(test)]
mod tests {
    use super::super::Invocation;
    use super::*;

    const THREE: Jobs = Jobs { n: 3, xdist: true };

    fn held(cmd: &str, workdir: &Path, jobs: Jobs) -> (String, Vec<(String, String)>) {
        let i = Invocation::with_jobs(cmd, workdir, Path::new("/r"), Some(jobs));
        (i.command, i.env)
    }

    /// The added words of the command (after its report's), and the environment.
    fn added(cmd: &str, workdir: &Path, jobs: Jobs) -> (String, Vec<(String, String)>) {
        let plain = Invocation::new(cmd, workdir, Path::new("/r")).command;
        let (with, env) = held(cmd, workdir, jobs);
        let plain_words = shlex::split(&plain).unwrap();
        let with_words = shlex::split(&with).unwrap();
        // The pytest plugin's drawn name differs from one invocation to the next.
        let drawn = |w: &String| w.starts_with(super::super::PYTEST_PLUGIN);
        let extra: Vec<String> = with_words
            .into_iter()
            .filter(|w| !plain_words.contains(w) && !drawn(w))
            .collect();
        (extra.join(" "), env)
    }

    #[test]
    fn each_runner_is_held_in_its_own_words() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // `-p` is in the plain command already (agentloop's report plugin).
        assert_eq!(added("python3 -m pytest -q", d, THREE).0, "xdist -n 3");
        assert!(
            held("python3 -m pytest -q", d, THREE)
                .0
                .contains("-p xdist -n 3")
        );
        assert_eq!(
            held("go test ./...", d, THREE).0,
            "go test -json -p 3 ./..."
        );
        assert_eq!(
            added("npx jest t/", d, THREE).0,
            "--maxWorkers=2",
            "jest's workers, beside its own process"
        );
        assert_eq!(added("cargo nextest run", d, THREE).0, "--test-threads=3");
        if std::env::var_os("RUST_TEST_THREADS").is_none() {
            assert_eq!(
                held("cargo test", d, THREE).1,
                vec![("RUST_TEST_THREADS".to_string(), "3".to_string())]
            );
        }
        // A runner whose parallel mode changes what the suite means runs as it is.
        assert_eq!(added("npx mocha", d, THREE), (String::new(), vec![]));
        assert_eq!(added("rspec", d, THREE), (String::new(), vec![]));
        // Without pytest-xdist, or with one worker, pytest runs as one process.
        let no_xdist = Jobs { n: 3, xdist: false };
        assert_eq!(added("python3 -m pytest", d, no_xdist).0, "");
        assert_eq!(
            added("python3 -m pytest", d, Jobs { n: 1, xdist: true }).0,
            ""
        );
        // Failed tests run again with the same workers.
        let again = Invocation::again_with(
            "python3 -m pytest -q",
            &["tests/t.py::a"],
            d,
            Path::new("/r"),
            Some(THREE),
        );
        assert!(again.command.contains("tests/t.py::a"), "{}", again.command);
        assert!(again.command.contains("-p xdist -n 3"), "{}", again.command);
        // Left to the runner: the command as before.
        assert_eq!(
            Invocation::new("go test ./...", d, Path::new("/r")).command,
            "go test -json ./..."
        );
    }

    #[test]
    fn a_choice_the_command_or_the_project_makes_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for cmd in [
            "python3 -m pytest -n 2",
            "python3 -m pytest -n2",
            "python3 -m pytest --numprocesses=auto",
            "python3 -m pytest -p no:xdist",
            "go test -p 1 ./...",
            "go test -p=1 ./...",
            "npx jest -i",
            "npx jest --runInBand",
            "npx jest --maxWorkers=50%",
            "npx jest -w 2",
            "cargo nextest run -j 2",
            "cargo nextest run --test-threads=1",
        ] {
            assert_eq!(added(cmd, d, THREE), (String::new(), vec![]), "{cmd}");
        }
        std::fs::write(d.join("pytest.ini"), "[pytest]\naddopts = -q -n auto\n").unwrap();
        assert_eq!(
            added("python3 -m pytest", d, THREE).0,
            "",
            "addopts says -n"
        );
        std::fs::write(
            d.join("package.json"),
            r#"{"scripts": {"test": "jest"}, "jest": {"maxWorkers": 1}}"#,
        )
        .unwrap();
        assert_eq!(
            added("npx jest", d, THREE).0,
            "",
            "package.json's jest says"
        );
        assert_eq!(added("npm test", d, THREE).0, "", "through the script too");
        std::fs::write(d.join("package.json"), r#"{"scripts": {"test": "jest"}}"#).unwrap();
        assert_eq!(
            held("npm test", d, THREE).0,
            "npm test -- --json --outputFile=/r/jest.json --maxWorkers=2"
        );
    }

    #[test]
    fn the_python_a_pytest_check_runs_is_read_from_the_command() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let script = |name: &str, text: &str| {
            let p = d.join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        std::fs::create_dir_all(d.join("venv/bin")).unwrap();
        script("venv/bin/python", "");
        script(
            "venv/bin/pytest",
            "#!/opt/py/bin/python3.12\nimport pytest\n",
        );
        assert_eq!(
            pytest_python("venv/bin/pytest -q", d),
            Some(PathBuf::from("/opt/py/bin/python3.12"))
        );
        assert_eq!(
            pytest_python("venv/bin/python -m pytest", d),
            Some(d.join("venv/bin/python"))
        );
        script("venv/bin/py.test", "#!/usr/bin/env -S venv/bin/python\n");
        assert_eq!(
            pytest_python("venv/bin/py.test", d),
            Some(d.join("venv/bin/python")),
            "env's program, its options passed over"
        );
        assert_eq!(pytest_python("uv run pytest", d), None, "uv builds its own");
        assert_eq!(pytest_python("go test ./...", d), None);
        assert_eq!(pytest_python("venv/bin/nothing -m pytest", d), None);
    }
}
