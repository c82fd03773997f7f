//! Which test runner a check starts, and how agentloop gets its per-test report: the
//! arguments it adds so the runner writes one where agentloop chose (a directory of
//! its own, outside the copy the check runs in), or the output it reads. Only a
//! simple command is recognised (`pytest -q`, `uv run pytest`, `cargo nextest run`,
//! `npm test` whose script ends in a runner); anything else — pipes, `&&`, `;`,
//! redirections, scripts — is run as written, and its per-test evidence is the JUnit
//! XML it writes to `$AGENTLOOP_TEST_REPORT`, if it does.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod command;
mod parallel;
pub mod subset;

use command::{join, recognise};
pub use command::{may_be_runner, runner_in};
pub use parallel::{Jobs, pytest_python};

use crate::report::Format;

/// The start of the module name of agentloop's pytest plugin (`-p`), and its source.
/// Each check's name ends in a number drawn for it: a module the agent left where
/// Python looks first (the copy's root, for `python -m pytest`) cannot be the one
/// loaded by that name.
pub const PYTEST_PLUGIN: &str = "agentloop_pytest_report_";
const PYTEST_PLUGIN_SOURCE: &str = include_str!("agentloop_pytest_report.py");

/// A name for one check's pytest plugin no one can tell before the check: the
/// standard library's hasher keys, drawn from the system's randomness.
fn pytest_plugin_name() -> String {
    use std::hash::BuildHasher as _;
    let drawn =
        std::collections::hash_map::RandomState::new().hash_one(std::time::SystemTime::now());
    format!("{PYTEST_PLUGIN}{drawn:016x}")
}

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
            Runner::Pytest => Format::PytestJson,
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
    /// More of the check's environment (`RUST_TEST_THREADS`).
    pub env: Vec<(String, String)>,
    /// Where agentloop's pytest plugin is imported from: last on the check's
    /// `PYTHONPATH` (after what the environment and the command put there).
    pub python_path: Option<PathBuf>,
}

impl Invocation {
    /// Where a check agentloop runs as written keeps a copy of its standard output,
    /// read for TAP when it writes no report of its own.
    pub fn output_copy(&self) -> Option<PathBuf> {
        self.runner
            .is_none()
            .then(|| self.report_var.with_file_name("stdout.txt"))
    }

    /// How `command` runs with its report going to `dir` (agentloop's, emptied
    /// before); `workdir` is where it runs (for `package.json`).
    /// `command` run as written, its report (if it writes one) at
    /// `$AGENTLOOP_TEST_REPORT` in `dir`, or TAP on its standard output; no runner
    /// looked for.
    pub fn as_written(command: &str, dir: &Path) -> Invocation {
        let report_var = dir.join("report.xml");
        Invocation {
            runner: None,
            command: command.to_string(),
            format: Format::Junit,
            report: ReportAt::File(report_var.clone()),
            files: Vec::new(),
            report_var,
            env: Vec::new(),
            python_path: None,
        }
    }

    /// As [`Invocation::with_jobs`], the runner left to choose its workers.
    pub fn new(command: &str, workdir: &Path, dir: &Path) -> Invocation {
        Invocation::with_jobs(command, workdir, dir, None)
    }

    /// How `command` runs with its report going to `dir`, its runner held to `jobs`
    /// workers where agentloop knows how to say that (`None`: as the runner chooses).
    pub fn with_jobs(command: &str, workdir: &Path, dir: &Path, jobs: Option<Jobs>) -> Invocation {
        let generic = Invocation::as_written(command, dir);
        let report_var = generic.report_var.clone();
        let Some(found) = recognise(command, Some(workdir)) else {
            return generic;
        };
        let mut files = Vec::new();
        let mut python_path = None;
        let (mut args, report): (Vec<String>, ReportAt) = match found.runner {
            Runner::Pytest => {
                // agentloop's own plugin writes the report: pytest's JUnit XML costs a
                // fifth of a quick suite's run to build (docs/PERFORMANCE.md).
                let plugin = dir.join("python");
                let name = pytest_plugin_name();
                files.push((
                    plugin.join(format!("{name}.py")),
                    PYTEST_PLUGIN_SOURCE.to_string(),
                ));
                python_path = Some(plugin);
                (
                    vec!["-p".into(), name, "--continue-on-collection-errors".into()],
                    ReportAt::File(dir.join("pytest.json")),
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
        let mut env = Vec::new();
        if let Some(j) = jobs {
            let (more, vars) = parallel::hold(&found, j, workdir);
            args.extend(more);
            env = vars;
        }
        let mut found = found;
        if let Some(dir) = &python_path {
            found.python_path_after(dir);
        }
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
            env,
            python_path,
        }
    }

    /// The command that runs test `id` alone (to tell a flaky failure from a real
    /// one), where the runner can select one test; else the whole check again.
    pub fn alone(original: &str, id: &str, workdir: &Path, dir: &Path) -> Invocation {
        Invocation::again(original, &[id], workdir, dir)
    }

    /// The command that runs the tests `ids` again, in one process, where the runner
    /// can select tests (pytest: each id; go test: their top-level tests in their
    /// packages, a lone subtest exactly); else the whole check again, once.
    pub fn again(original: &str, ids: &[&str], workdir: &Path, dir: &Path) -> Invocation {
        Invocation::again_with(original, ids, workdir, dir, None)
    }

    /// [`Invocation::again`], the runner held to `jobs` as the check it runs again
    /// was: a test must not be able to tell its second run from its first (pytest's
    /// workers set `PYTEST_XDIST_WORKER`).
    pub fn again_with(
        original: &str,
        ids: &[&str],
        workdir: &Path,
        dir: &Path,
        jobs: Option<Jobs>,
    ) -> Invocation {
        let mut again = Invocation::with_jobs(original, workdir, dir, jobs);
        let Some(found) = recognise(original, Some(workdir)) else {
            return again;
        };
        // The check's own options stay (`-race`, `-W error`, `--import-mode`): a test
        // that fails only under them must fail again; its paths give way to the ids.
        let (selected, words) = match found.runner {
            Runner::Pytest if !found.via_script && !ids.is_empty() => {
                let mut words = found.words[..found.program_end].to_vec();
                words.extend(subset::pytest_options(&found.words[found.program_end..]));
                words.extend(ids.iter().map(|id| id.to_string()));
                (true, words)
            }
            Runner::GoTest if !found.via_script => match go_selection(ids) {
                Some((pattern, packages)) => {
                    let mut words = found.words[..found.program_end].to_vec();
                    words.extend(go_flags(&found.words[found.program_end..]));
                    words.extend(["-count=1".to_string(), "-run".to_string(), pattern]);
                    words.extend(packages);
                    (true, words)
                }
                None => (false, Vec::new()),
            },
            _ => (false, Vec::new()),
        };
        if selected && let Some(cmd) = join(&words) {
            again = Invocation::with_jobs(&cmd, workdir, dir, jobs);
        }
        again
    }
}

/// `go test`'s flags that take their value as the next word (`-tags x`).
pub(super) const GO_TAKES_VALUE: &[&str] = &[
    "-run",
    "-skip",
    "-tags",
    "-timeout",
    "-p",
    "-count",
    "-cpu",
    "-parallel",
    "-bench",
    "-benchtime",
    "-coverprofile",
    "-covermode",
    "-coverpkg",
    "-o",
    "-exec",
    "-vet",
    "-shuffle",
    "-mod",
    "-modfile",
    "-ldflags",
    "-gcflags",
    "-asmflags",
    "-C",
    "-list",
    "-fuzz",
    "-fuzztime",
    "-outputdir",
    "-cpuprofile",
    "-memprofile",
    "-blockprofile",
    "-mutexprofile",
    "-trace",
];

/// A `go test` command's flags (each with its value), without the packages and
/// without the selection and the count a run again sets itself.
fn go_flags(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let name = a.split('=').next().unwrap_or(a);
        let next_is_value = !a.contains('=') && GO_TAKES_VALUE.contains(&name);
        let dropped = matches!(name.trim_start_matches('-'), "run" | "skip" | "count");
        if a.starts_with('-') && !dropped {
            out.push(a.clone());
            if next_is_value && let Some(v) = args.get(i + 1) {
                out.push(v.clone());
            }
        }
        i += if next_is_value { 2 } else { 1 };
    }
    out
}

/// `go test`'s `-run` pattern and packages for the tests `ids` (`pkg::TestX/sub`):
/// a lone test exactly, subtests and all (`^TestX$/^sub$`); several by their
/// top-level names (`^(TestA|TestB)$`, each with every subtest), over all their
/// packages. None when an id names no package.
fn go_selection(ids: &[&str]) -> Option<(String, Vec<String>)> {
    let split: Vec<(&str, &str)> = ids
        .iter()
        .map(|id| id.split_once("::"))
        .collect::<Option<_>>()?;
    let exact = |test: &str| {
        test.split('/')
            .map(|part| format!("^{}$", regex::escape(part)))
            .collect::<Vec<_>>()
            .join("/")
    };
    let pattern = match split.as_slice() {
        [] => return None,
        [(_, test)] => exact(test),
        many => {
            let tops: std::collections::BTreeSet<String> = many
                .iter()
                .map(|(_, t)| regex::escape(t.split('/').next().unwrap_or(t)))
                .collect();
            format!("^({})$", tops.into_iter().collect::<Vec<_>>().join("|"))
        }
    };
    let packages: std::collections::BTreeSet<String> =
        split.iter().map(|(p, _)| p.to_string()).collect();
    Some((pattern, packages.into_iter().collect()))
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
mod tests;
