//! The verification surface: every file that decides whether a task is done, found by
//! rules, recorded by content (git blobs, written to the object store so they can be
//! put back) and compared with that baseline before a claimed task is verified.
//!
//! What belongs to it (see `docs/SECURITY.md`):
//! - `[verify] protected`, the run's plan file, `agentloop.toml`;
//! - CI configuration (`.github/workflows/`, `.gitlab-ci.yml`, `.circleci/`, …);
//! - the files and directories a `Verify:` command names (`sh tests/t1.sh`,
//!   `cargo test --test it` → `tests/it.rs` and `tests/it/`), and the programs it runs
//!   when they live in the project;
//! - test files by convention: `tests/`, `test/`, `spec/`, `__tests__/` anywhere,
//!   `*_test.go`, `test_*.py`, `*_test.py`, `*.test.*`, `*.spec.*` (Rust `#[cfg(test)]`
//!   modules inside source files are left out: they are the code under work);
//! - files that configure or intercept the checks, which count even when new: see
//!   [`CHECK_FILES`], the test sections of `pyproject.toml`, `setup.cfg`, `tox.ini` and
//!   `package.json`, a Makefile when a check runs `make`, and `[verify] check_files`.
//!
//! `.agentloop/` is not hashed here: the journal authenticates itself.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::journal::{Baseline, ChangeKind, SurfaceChange, SurfaceFile};
use crate::paths::path_matches;

/// CI configuration, by path.
const CI: &[&str] = &[
    ".github/workflows/",
    ".gitlab-ci.yml",
    ".circleci/",
    ".buildkite/",
    ".travis.yml",
    "Jenkinsfile",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
];

/// Files that configure or intercept the checks wherever they are, by name (`*` is
/// any run of characters).
pub const CHECK_FILES: &[&str] = &[
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    "jest.config.*",
    "vitest.config.*",
    "vitest.workspace.*",
    ".mocharc*",
    "karma.conf.*",
    "playwright.config.*",
    "build.rs",
    "agentloop.toml",
    ".cargo/config.toml",
    ".cargo/config",
];

/// Programs that run the script named by their first argument.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "python", "python3", "node", "deno", "bun", "ruby", "perl",
    "php", "bats", "lua", "Rscript", "tclsh", "source", ".",
];

/// Test runners: the paths they are given are tests.
const TEST_RUNNERS: &[&str] = &[
    "pytest", "py.test", "unittest", "jest", "vitest", "mocha", "ava", "tap", "rspec", "phpunit",
    "cargo", "go", "ctest", "tox", "nox", "npm", "npx", "pnpm", "yarn", "bundle", "rake", "mvn",
    "gradle", "dotnet", "swift", "mix", "make",
];

/// Files whose test section (only) configures the checks.
const SECTIONED: &[&str] = &["pyproject.toml", "setup.cfg", "tox.ini", "package.json"];

/// What the rules are made of: the run's settings and plan.
pub struct Rules {
    pub protected: Vec<String>,
    pub plan_file: String,
    /// Every `Verify:` command of the plan and `[verify] commands`.
    pub commands: Vec<String>,
    pub check_files: Vec<String>,
    /// Paths a `Verify:` names, found when the rules were made.
    named: BTreeSet<String>,
    /// Programs a `Verify:` runs (`pytest`, `make`, `./check.sh` → `check.sh`).
    programs: BTreeSet<String>,
}

impl Rules {
    pub fn new(
        root: &Path,
        protected: &[String],
        plan_file: &str,
        commands: Vec<String>,
        check_files: &[String],
    ) -> Rules {
        let mut named = BTreeSet::new();
        let mut programs = BTreeSet::new();
        for cmd in &commands {
            for simple in simple_commands(cmd) {
                let words: Vec<&str> = simple
                    .split_whitespace()
                    .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
                    .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                    .collect();
                let Some(program) = words.first() else {
                    continue;
                };
                let name = program.rsplit('/').next().unwrap_or(program);
                programs.insert(name.to_string());
                let mut name_path = |w: &str| {
                    let w = w.trim_end_matches("/...").trim_start_matches("./");
                    if w.is_empty() || w == "." || w.starts_with('-') {
                        return;
                    }
                    let path = root.join(w);
                    if path.is_dir() {
                        named.insert(format!("{}/", w.trim_end_matches('/')));
                    } else if path.is_file() {
                        named.insert(w.to_string());
                    }
                };
                // The program itself, when it lives in the project (`./check.sh`).
                if program.contains('/') {
                    name_path(program);
                }
                let args = &words[1..];
                let runner = match (name, args.first().copied(), args.get(1).copied()) {
                    // `python -m pytest …`: the module is the runner.
                    (_, Some("-m"), Some(m)) => m,
                    _ => name,
                };
                if INTERPRETERS.contains(&runner) {
                    // The script it runs: its first argument that is not an option.
                    if let Some(script) = args.iter().find(|a| !a.starts_with('-')) {
                        name_path(script);
                    }
                } else if TEST_RUNNERS.contains(&runner) {
                    // What a test runner is pointed at: paths among its arguments.
                    for (i, w) in args.iter().enumerate() {
                        name_path(w);
                        // `cargo test --test it`: tests/it.rs or tests/it/.
                        if i > 0 && args[i - 1] == "--test" {
                            name_path(&format!("tests/{w}.rs"));
                            name_path(&format!("tests/{w}"));
                        }
                    }
                }
                // Other commands (`grep`, `test`, `diff`…) read the work itself: the
                // files they name are the agent's to change.
            }
        }
        let plan_file = plan_file.trim_start_matches("./").to_string();
        Rules {
            protected: protected.to_vec(),
            plan_file,
            commands,
            check_files: check_files.to_vec(),
            named,
            programs,
        }
    }

    /// The rules of a run: its settings and its plan as they stand now.
    pub fn for_run(root: &Path, s: &crate::journal::RunState) -> Rules {
        let plan_file = Path::new(&s.plan_file);
        let plan_file = plan_file
            .strip_prefix(root)
            .unwrap_or(plan_file)
            .to_string_lossy()
            .into_owned();
        let commands = s
            .plan
            .tasks
            .iter()
            .flat_map(|t| t.verify.iter().cloned())
            .chain(s.settings.verify_commands.iter().cloned())
            .collect();
        Rules::new(
            root,
            &s.settings.protected,
            &plan_file,
            commands,
            &s.settings.check_files,
        )
    }

    /// Why an existing file belongs to the surface, if it does.
    pub fn classify(&self, path: &str) -> Option<String> {
        if path.starts_with(".agentloop/") || path.starts_with(".git/") {
            return None;
        }
        if path == self.plan_file {
            return Some("the plan".into());
        }
        if let Some(p) = self.protected.iter().find(|p| path_matches(path, p)) {
            return Some(format!("protected ({p})"));
        }
        if CI.iter().any(|p| path_matches(path, p)) {
            return Some("CI configuration".into());
        }
        if let Some(n) = self.named.iter().find(|n| path_matches(path, n)) {
            return Some(format!("named by a Verify command ({n})"));
        }
        if let Some(why) = self.configures_checks(path) {
            return Some(why);
        }
        if is_test_file(path) {
            return Some("a test file".into());
        }
        None
    }

    /// Why a file (new or not) configures or intercepts the checks, if it does. A
    /// sectioned file counts by its test section, judged by [`check_section`].
    pub fn configures_checks(&self, path: &str) -> Option<String> {
        let name = path.rsplit('/').next().unwrap_or(path);
        if let Some(p) = CHECK_FILES
            .iter()
            .find(|p| glob_name(name, p) || (p.contains('/') && path.ends_with(*p)))
        {
            return Some(format!("configures the checks ({p})"));
        }
        if let Some(p) = self
            .check_files
            .iter()
            .find(|p| glob_name(name, p) || path_matches(path, p))
        {
            return Some(format!("configures the checks ({p}, [verify] check_files)"));
        }
        if SECTIONED.contains(&name) {
            return Some(format!("its test section configures the checks ({name})"));
        }
        if matches!(name, "Makefile" | "makefile" | "GNUmakefile") && self.programs.contains("make")
        {
            return Some("a Verify command runs make".into());
        }
        if self.programs.contains(name) {
            return Some(format!(
                "named like a program a Verify command runs ({name})"
            ));
        }
        None
    }
}

/// Whether only a section of this file configures the checks (`pyproject.toml`,
/// `setup.cfg`, `tox.ini`, `package.json`): the rest is the agent's to change.
pub fn is_sectioned(path: &str) -> bool {
    SECTIONED.contains(&path.rsplit('/').next().unwrap_or(path))
}

/// The simple commands of a shell line: split on `&&`, `||`, `;`, `|` and newlines.
fn simple_commands(cmd: &str) -> Vec<&str> {
    cmd.split(['\n', ';', '|', '&'])
        .map(str::trim)
        .map(|c| c.trim_start_matches(['(', '{', '!', ' ']))
        .filter(|c| !c.is_empty())
        .collect()
}

/// A file name against a pattern where `*` is any run of characters.
fn glob_name(name: &str, pattern: &str) -> bool {
    let Some((head, tail)) = pattern.split_once('*') else {
        return name == pattern;
    };
    name.len() >= head.len() + tail.len()
        && name.starts_with(head)
        && (tail.is_empty() || glob_name_tail(&name[head.len()..], tail))
}

fn glob_name_tail(rest: &str, pattern: &str) -> bool {
    if !pattern.contains('*') {
        return rest.ends_with(pattern);
    }
    (0..=rest.len()).any(|i| rest.is_char_boundary(i) && glob_name(&rest[i..], pattern))
}

/// Test files by the usual conventions.
pub fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_dir = path
        .split('/')
        .rev()
        .skip(1)
        .any(|d| matches!(d, "tests" | "test" | "spec" | "__tests__"));
    in_dir
        || name.ends_with("_test.go")
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// The part of a sectioned file that configures the checks (its whole text for any
/// other file). Two versions with the same section are the same to the checks.
pub fn check_section(path: &str, text: &[u8]) -> Vec<u8> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let text = String::from_utf8_lossy(text);
    let picked = match name {
        "package.json" => serde_json::from_str::<serde_json::Value>(&text)
            .map(|v| {
                let scripts = &v["scripts"];
                serde_json::json!({
                    "test": scripts["test"], "pretest": scripts["pretest"],
                    "posttest": scripts["posttest"], "jest": v["jest"], "mocha": v["mocha"],
                    "ava": v["ava"], "vitest": v["vitest"],
                })
                .to_string()
            })
            .unwrap_or_else(|_| text.to_string()),
        "pyproject.toml" => text
            .parse::<toml::Table>()
            .map(|t| {
                let tool = t.get("tool").and_then(|t| t.as_table());
                let pick = |k: &str| tool.and_then(|t| t.get(k)).map(|v| v.to_string());
                format!(
                    "{:?}{:?}{:?}",
                    pick("pytest"),
                    pick("tox"),
                    pick("coverage")
                )
            })
            .unwrap_or_else(|_| text.to_string()),
        "setup.cfg" | "tox.ini" => ini_sections(&text, |s| {
            s == "pytest" || s == "tool:pytest" || s == "tox" || s.starts_with("testenv")
        }),
        _ => return text.into_owned().into_bytes(),
    };
    picked.into_bytes()
}

fn ini_sections(text: &str, keep: impl Fn(&str) -> bool) -> String {
    let mut out = String::new();
    let mut on = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(s) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            on = keep(s.trim());
        }
        if on && !t.is_empty() && !t.starts_with('#') && !t.starts_with(';') {
            out.push_str(t);
            out.push('\n');
        }
    }
    out
}

fn git(root: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    c
}

fn run(mut c: Command, input: Option<&[u8]>) -> Result<Vec<u8>, String> {
    if input.is_some() {
        c.stdin(Stdio::piped());
    }
    c.stdout(Stdio::piped());
    let mut child = c.spawn().map_err(|e| format!("git: {e}"))?;
    if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), input) {
        stdin.write_all(bytes).map_err(|e| format!("git: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

/// The project's files: tracked ones and untracked ones not ignored.
pub fn project_files(root: &Path) -> Result<Vec<String>, String> {
    let mut c = git(root);
    c.args(["ls-files", "-z", "-c", "-o", "--exclude-standard"]);
    let out = run(c, None)?;
    let mut files: Vec<String> = out
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// The mode git would record for a file (`None`: it is not there).
fn mode_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some(if m.file_type().is_symlink() {
        0o120000
    } else if !m.is_file() {
        return None;
    } else if m.permissions().mode() & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    })
}

/// Blob ids of files (written to the object store); symbolic links hash as their
/// target's name, as git stores them.
fn hash(root: &Path, paths: &[&str]) -> Result<Vec<String>, String> {
    let (links, files): (Vec<&str>, Vec<&str>) = paths
        .iter()
        .partition(|p| mode_of(&root.join(p)) == Some(0o120000));
    let mut ids = BTreeMap::new();
    if !files.is_empty() {
        let mut c = git(root);
        c.args(["hash-object", "-w", "--no-filters", "--stdin-paths"]);
        let input = files.join("\n") + "\n";
        let out = run(c, Some(input.as_bytes()))?;
        for (p, id) in files.iter().zip(String::from_utf8_lossy(&out).lines()) {
            ids.insert(*p, id.to_string());
        }
    }
    for p in links {
        let target = std::fs::read_link(root.join(p)).map_err(|e| format!("{p}: {e}"))?;
        let mut c = git(root);
        c.args(["hash-object", "-w", "--stdin"]);
        let out = run(c, Some(target.as_os_str().as_encoded_bytes()))?;
        ids.insert(p, String::from_utf8_lossy(&out).trim().to_string());
    }
    paths
        .iter()
        .map(|p| ids.remove(p).ok_or_else(|| format!("{p}: not hashed")))
        .collect()
}

/// Records the surface of the tree as it is now.
pub fn record(root: &Path, rules: &Rules) -> Result<Baseline, String> {
    let files = project_files(root)?;
    let mut members: Vec<(&str, String, u32)> = Vec::new();
    for f in &files {
        if let Some(why) = rules.classify(f)
            && let Some(mode) = mode_of(&root.join(f))
        {
            members.push((f, why, mode));
        }
    }
    let paths: Vec<&str> = members.iter().map(|m| m.0).collect();
    let blobs = hash(root, &paths)?;
    Ok(members
        .into_iter()
        .zip(blobs)
        .map(|((path, why, mode), blob)| (path.to_string(), SurfaceFile { blob, mode, why }))
        .collect())
}

/// The content of a blob.
pub fn blob(root: &Path, id: &str) -> Result<Vec<u8>, String> {
    let mut c = git(root);
    c.args(["cat-file", "blob", id]);
    run(c, None)
}

/// What differs from the baseline: files of it modified or deleted, and new files that
/// configure the checks. A sectioned file whose test section is unchanged is not a
/// change.
pub fn check(root: &Path, base: &Baseline, rules: &Rules) -> Result<Vec<SurfaceChange>, String> {
    let files = project_files(root)?;
    let present: Vec<&str> = base
        .keys()
        .map(String::as_str)
        .filter(|p| mode_of(&root.join(p)).is_some())
        .collect();
    let added: Vec<(&str, String)> = files
        .iter()
        .filter(|f| !base.contains_key(*f))
        .filter_map(|f| rules.configures_checks(f).map(|why| (f.as_str(), why)))
        .collect();
    let all: Vec<&str> = present
        .iter()
        .copied()
        .chain(added.iter().map(|a| a.0))
        .collect();
    let blobs: BTreeMap<&str, String> = all.iter().copied().zip(hash(root, &all)?).collect();
    let now = |p: &str| -> Option<SurfaceFile> {
        Some(SurfaceFile {
            blob: blobs.get(p)?.clone(),
            mode: mode_of(&root.join(p))?,
            why: String::new(),
        })
    };
    let mut changes = Vec::new();
    for (path, was) in base {
        let after = now(path).map(|f| SurfaceFile {
            why: was.why.clone(),
            ..f
        });
        let kind = match &after {
            None => ChangeKind::Deleted,
            Some(a) if a.blob == was.blob && a.mode == was.mode => continue,
            Some(a) if a.mode == was.mode && same_section(root, path, &was.blob, &a.blob) => {
                continue;
            }
            Some(_) => ChangeKind::Modified,
        };
        changes.push(SurfaceChange {
            path: path.clone(),
            kind,
            why: was.why.clone(),
            before: Some(was.clone()),
            after,
            diff: String::new(),
        });
    }
    for (path, why) in added {
        let Some(after) = now(path).map(|f| SurfaceFile {
            why: why.clone(),
            ..f
        }) else {
            continue;
        };
        let name = path.rsplit('/').next().unwrap_or(path);
        if SECTIONED.contains(&name)
            && blob(root, &after.blob)
                .is_ok_and(|b| check_section(path, &b) == check_section(path, b""))
        {
            continue;
        }
        changes.push(SurfaceChange {
            path: path.to_string(),
            kind: ChangeKind::Added,
            why,
            before: None,
            after: Some(after),
            diff: String::new(),
        });
    }
    for c in &mut changes {
        c.diff = diff(root, c);
    }
    Ok(changes)
}

fn same_section(root: &Path, path: &str, a: &str, b: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if !SECTIONED.contains(&name) {
        return false;
    }
    match (blob(root, a), blob(root, b)) {
        (Ok(x), Ok(y)) => check_section(path, &x) == check_section(path, &y),
        _ => false,
    }
}

/// Bytes of diff kept per change.
const DIFF_CAP: usize = 8 * 1024;

/// The unified diff of a change (blob to blob, in the repository), capped.
pub fn diff(root: &Path, c: &SurfaceChange) -> String {
    let empty = || {
        let mut h = git(root);
        h.args(["hash-object", "-w", "--stdin"]);
        run(h, Some(b"")).map(|o| String::from_utf8_lossy(&o).trim().to_string())
    };
    let side = |f: &Option<SurfaceFile>| match f {
        Some(f) => Ok(f.blob.clone()),
        None => empty(),
    };
    let (Ok(a), Ok(b)) = (side(&c.before), side(&c.after)) else {
        return String::new();
    };
    let mut cmd = git(root);
    cmd.args(["diff", "--no-color", "--no-ext-diff", "-U3", &a, &b]);
    let Ok(out) = run(cmd, None) else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&out);
    // Name the file, not the blobs.
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("@@") && !l.starts_with("Binary"))
        .collect();
    let mut shown = format!("--- a/{p}\n+++ b/{p}\n{}", body.join("\n"), p = c.path);
    if shown.len() > DIFF_CAP {
        let mut cut = DIFF_CAP;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push_str("\n… (diff cut)");
    }
    shown
}

/// Puts the baseline versions of `changes` back: modified and deleted files get their
/// recorded content and mode, added ones are removed.
pub fn restore(root: &Path, changes: &[SurfaceChange]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    for c in changes {
        let path = root.join(&c.path);
        match &c.before {
            None => match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: {e}", c.path)),
            },
            Some(f) => {
                let bytes = blob(root, &f.blob)?;
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", c.path))?;
                }
                if std::fs::symlink_metadata(&path).is_ok() {
                    std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", c.path))?;
                }
                if f.mode == 0o120000 {
                    use std::os::unix::ffi::OsStrExt;
                    let target = std::ffi::OsStr::from_bytes(&bytes);
                    std::os::unix::fs::symlink(target, &path)
                        .map_err(|e| format!("{}: {e}", c.path))?;
                    continue;
                }
                std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", c.path))?;
                let mode = if f.mode == 0o100755 { 0o755 } else { 0o644 };
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                    .map_err(|e| format!("{}: {e}", c.path))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_by_convention() {
        for t in [
            "tests/t1.sh",
            "a/test/x.rb",
            "spec/a_spec.rb",
            "web/__tests__/a.js",
            "pkg/a_test.go",
            "test_x.py",
            "pkg/x_test.py",
            "a.test.ts",
            "b.spec.js",
        ] {
            assert!(is_test_file(t), "{t}");
        }
        for t in [
            "src/latest_news.py",
            "src/testing.rs",
            "contest.py",
            "tests",
        ] {
            assert!(!is_test_file(t), "{t}");
        }
    }

    #[test]
    fn names_and_globs() {
        assert!(glob_name("jest.config.js", "jest.config.*"));
        assert!(glob_name(".mocharc.yml", ".mocharc*"));
        assert!(glob_name("evil.pth", "*.pth"));
        assert!(!glob_name("path.txt", "*.pth"));
        assert!(glob_name("conftest.py", "conftest.py"));
    }

    #[test]
    fn what_a_verify_command_names_and_runs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests/it")).unwrap();
        std::fs::write(dir.path().join("tests/t1.sh"), "exit 1").unwrap();
        std::fs::write(dir.path().join("check.sh"), "true").unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.py"), "def f(): pass").unwrap();
        let r = Rules::new(
            dir.path(),
            &[],
            "PLAN.md",
            vec![
                "sh tests/t1.sh && ./check.sh".into(),
                "cargo test --test it".into(),
                "CI=1 make lint | tee out".into(),
                "pytest -q".into(),
                "grep -q 'def f' src/main.py && test -f src/main.py".into(),
            ],
            &[],
        );
        assert!(r.classify("tests/t1.sh").is_some());
        assert_eq!(
            r.classify("check.sh").as_deref(),
            Some("named by a Verify command (check.sh)")
        );
        assert!(r.classify("tests/it/main.rs").is_some());
        assert!(r.classify("PLAN.md").is_some());
        assert!(r.classify(".github/workflows/ci.yml").is_some());
        assert!(r.classify("src/lib.rs").is_none());
        // What a plain command reads is the work, not the check.
        assert!(r.classify("src/main.py").is_none());
        // New files that would intercept the checks.
        for f in [
            "conftest.py",
            "sub/conftest.py",
            "Makefile",
            "bin/pytest",
            "make",
            "x.pth",
        ] {
            assert!(r.configures_checks(f).is_some(), "{f}");
        }
        assert!(r.configures_checks("src/main.py").is_none());
    }

    #[test]
    fn only_the_test_section_of_a_sectioned_file_counts() {
        let a = br#"{"name":"x","dependencies":{"a":"1"},"scripts":{"test":"jest","build":"tsc"}}"#;
        let b =
            br#"{"name":"x","dependencies":{"a":"2"},"scripts":{"test":"jest","build":"esbuild"}}"#;
        let c = br#"{"name":"x","scripts":{"test":"exit 0"}}"#;
        assert_eq!(
            check_section("package.json", a),
            check_section("package.json", b)
        );
        assert_ne!(
            check_section("package.json", a),
            check_section("package.json", c)
        );
        let p1 = b"[project]\nname='x'\n[tool.pytest.ini_options]\naddopts='-q'\n";
        let p2 = b"[project]\nname='y'\n[tool.pytest.ini_options]\naddopts='-q'\n";
        let p3 = b"[project]\nname='x'\n[tool.pytest.ini_options]\naddopts='-p evil'\n";
        assert_eq!(
            check_section("pyproject.toml", p1),
            check_section("pyproject.toml", p2)
        );
        assert_ne!(
            check_section("pyproject.toml", p1),
            check_section("pyproject.toml", p3)
        );
        let s1 = b"[metadata]\nname=x\n[tool:pytest]\naddopts=-q\n";
        let s2 = b"[metadata]\nname=y\n[tool:pytest]\naddopts=-q\n";
        assert_eq!(
            check_section("setup.cfg", s1),
            check_section("setup.cfg", s2)
        );
    }
}
