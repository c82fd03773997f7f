//! What a run needs from the machine, looked at when a driver starts: a git work tree,
//! whether it is clean, and the programs the checks run (a check whose program is not
//! there can never pass, whatever the agent does).

use std::path::Path;

use agentloop_journal::Prerequisites;
use agentloop_plan::Plan;

/// Words a shell runs itself.
const BUILTINS: &[&str] = &[
    "test", "[", "[[", "cd", "echo", "true", "false", "exit", "set", "export", ".", "source",
    "command", "type", "printf", "read", "eval", "exec", "!", "{", "(", "if", "for", "while",
    "case", "until", "unset", "shift", "trap", "wait", "ulimit", "umask", "times", "return",
];

/// Uncommitted paths kept in the record.
const DIRTY_KEPT: usize = 20;

/// The program a shell command starts with: past `VAR=value` words, and not a builtin.
fn program(command: &str) -> Option<&str> {
    let word = command
        .split_whitespace()
        .find(|w| !w.contains('=') || w.starts_with('='))?;
    (!BUILTINS.contains(&word)).then_some(word)
}

fn found(root: &Path, program: &str) -> bool {
    if program.contains('/') {
        return root.join(program).exists() || Path::new(program).exists();
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            let f = d.join(program);
            f.is_file()
        })
    })
}

/// Cargo's own commands; any other (`cargo nextest`) is a program of its own.
const CARGO_COMMANDS: &[&str] = &[
    "build",
    "b",
    "check",
    "c",
    "test",
    "t",
    "run",
    "r",
    "bench",
    "doc",
    "d",
    "clippy",
    "fmt",
    "fix",
    "clean",
    "metadata",
    "tree",
    "update",
    "fetch",
    "install",
    "package",
    "publish",
    "miri",
    "rustc",
    "rustdoc",
    "generate-lockfile",
    "locate-project",
    "verify-project",
    "vendor",
    "+stable",
    "+nightly",
    "+beta",
];

/// What a check needs beyond its program, that can be looked at without running the
/// check: the module of `python3 -m MODULE`, the program of `cargo SUBCOMMAND`.
/// `Some(name)`: it is not there.
fn missing_part(root: &Path, program: &str, command: &str, probe: bool) -> Option<String> {
    let mut words = command
        .split_whitespace()
        .skip_while(|w| *w != program)
        .skip(1);
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    if name.starts_with("python") {
        if !probe {
            return None;
        }
        let module = words.by_ref().skip_while(|w| *w != "-m").nth(1)?;
        let module = module.split('.').next().unwrap_or(module);
        // Isolated (`-I`): nothing of the project's is imported on the way (no current
        // directory on `sys.path`, no `PYTHON*` variables); the project is searched
        // for the module by name only, which runs none of it.
        let importable = std::process::Command::new(program)
            .args([
                "-I",
                "-c",
                "import sys\nfrom importlib.machinery import PathFinder\nname, root = sys.argv[1], sys.argv[2]\nsys.exit(0 if name in sys.builtin_module_names or PathFinder.find_spec(name, [root] + sys.path) else 1)",
                module,
                &root.to_string_lossy(),
            ])
            .current_dir(root)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        return (!importable).then(|| format!("{program} -m {module}: no module named {module}"));
    }
    if name == "cargo" {
        let sub = words.find(|w| !w.starts_with('-'))?;
        if CARGO_COMMANDS.contains(&sub) || sub.starts_with('+') {
            return None;
        }
        let bin = format!("cargo-{sub}");
        let in_cargo_home = std::env::var_os("CARGO_HOME")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
            .is_some_and(|h| h.join("bin").join(&bin).is_file());
        return (!found(root, &bin) && !in_cargo_home).then(|| format!("{bin} (`cargo {sub}`)"));
    }
    None
}

/// The paths of `git status --porcelain` lines (`XY path`), agentloop's own left out.
/// The first line may have lost its leading space to a trim (` M a` read as `M a`).
fn dirty_paths(status: &str) -> Vec<String> {
    status
        .lines()
        .filter_map(|l| l.trim_start().split_once(' '))
        .map(|(_, path)| path.trim_start().to_string())
        .filter(|p| !p.is_empty() && !p.starts_with(".agentloop"))
        .collect()
}

/// `probe`: also run the check's Python to find the module it names. Only before any
/// agent has worked: after, an interpreter in the tree (`.venv/bin/python`) may be the
/// agent's, and agentloop runs nothing of the agent's outside the checks' own
/// confinement.
pub fn check(root: &Path, plan: &Plan, run_commands: &[String], probe: bool) -> Prerequisites {
    let git = super::git::is_repo(root);
    let status = if git {
        super::git::run(root, &["status", "--porcelain", "--untracked-files=normal"])
            .unwrap_or_default()
    } else {
        String::new()
    };
    let dirty = dirty_paths(&status);
    let mut missing: Vec<String> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let checks = plan
        .tasks
        .iter()
        .flat_map(|t| plan.checks(&t.id).into_iter().map(|c| (t.id.clone(), c)))
        .chain(
            run_commands
                .iter()
                .map(|c| ("[verify]".to_string(), c.clone())),
        )
        .collect::<Vec<_>>();
    let mut seen_parts: Vec<String> = Vec::new();
    // A command looked at once is not looked at again (a task's check that is also the
    // run's: each look at a `python -m` module starts an interpreter).
    let mut looked: Vec<&str> = Vec::new();
    for (who, command) in &checks {
        if looked.contains(&command.as_str()) {
            continue;
        }
        looked.push(command);
        let Some(p) = program(command) else {
            continue;
        };
        if !seen.contains(&p) {
            seen.push(p);
            if !found(root, p) {
                missing.push(format!("{p} ({who}: {command})"));
                continue;
            }
        } else if missing.iter().any(|m| m.starts_with(&format!("{p} ("))) {
            continue;
        }
        if let Some(part) = missing_part(root, p, command, probe)
            && !seen_parts.contains(&part)
        {
            missing.push(format!("{part} ({who}: {command})"));
            seen_parts.push(part);
        }
    }
    Prerequisites {
        git,
        dirty_count: dirty.len(),
        dirty: dirty.into_iter().take(DIRTY_KEPT).collect(),
        missing,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn dirty_paths_keep_every_letter_of_every_path() {
        // As `git status --porcelain` prints it once the output is trimmed.
        let status = "M PLAN.md\n M agentloop.toml\nMM src/a.rs\n?? new.txt\nR  old.rs -> new.rs\n?? .agentloop/x";
        assert_eq!(
            dirty_paths(status),
            vec![
                "PLAN.md",
                "agentloop.toml",
                "src/a.rs",
                "new.txt",
                "old.rs -> new.rs"
            ]
        );
    }

    use super::*;

    #[test]
    fn the_program_of_a_check() {
        assert_eq!(program("cargo test -p x"), Some("cargo"));
        assert_eq!(program("RUST_LOG=debug ./run.sh"), Some("./run.sh"));
        assert_eq!(program("test -f a.txt"), None);
        assert_eq!(program("[ -f a ]"), None);
    }

    /// A program that is there but cannot start the check: a Python module that is
    /// not installed, a cargo subcommand that is not.
    #[test]
    fn a_missing_module_or_cargo_subcommand_is_named_too() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan::parse(
            "PLAN.md",
            "# P\n\n## T1: a\nVerify: python3 -m surely_no_module_xyz -q tests\n\n## T2: b\nVerify: python3 -m json.tool --help\n\n## T3: c\nVerify: cargo surely-no-subcommand-xyz\n\n## T4: d\nVerify: cargo test -q\n",
        )
        .unwrap();
        let p = check(dir.path(), &plan, &[], true);
        assert_eq!(
            p.missing,
            [
                "python3 -m surely_no_module_xyz: no module named surely_no_module_xyz (T1: python3 -m surely_no_module_xyz -q tests)",
                "cargo-surely-no-subcommand-xyz (`cargo surely-no-subcommand-xyz`) (T3: cargo surely-no-subcommand-xyz)"
            ]
        );
        // A module of the project's own is found by name, without running it: neither
        // it nor a planted `sitecustomize` runs.
        let planted = dir.path().join("ran");
        std::fs::write(
            dir.path().join("mine.py"),
            format!(
                "open({:?}, 'w').write('x')\n",
                planted.join("mine").display().to_string()
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("sitecustomize.py"),
            format!(
                "open({:?}, 'w').write('x')\n",
                planted.join("site").display().to_string()
            ),
        )
        .unwrap();
        std::fs::create_dir(&planted).unwrap();
        let mine = Plan::parse("PLAN.md", "# P\n\n## T1: a\nVerify: python3 -m mine\n").unwrap();
        assert!(check(dir.path(), &mine, &[], true).missing.is_empty());
        assert_eq!(
            std::fs::read_dir(&planted).unwrap().count(),
            0,
            "nothing of the project's ran"
        );
        // After an agent has worked, the interpreter is not run at all.
        let p = check(dir.path(), &plan, &[], false);
        assert_eq!(p.missing.len(), 1, "{:?}", p.missing);
    }

    #[test]
    fn a_missing_program_is_named_with_the_check_that_needs_it() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan::parse(
            "PLAN.md",
            "# P\n\n## T1: a\nVerify: sh -c true\n\n## T2: b\nVerify: surely-not-a-program-xyz --all\n",
        )
        .unwrap();
        let p = check(dir.path(), &plan, &["./missing.sh".to_string()], true);
        assert!(!p.git);
        assert_eq!(
            p.missing,
            [
                "surely-not-a-program-xyz (T2: surely-not-a-program-xyz --all)",
                "./missing.sh ([verify]: ./missing.sh)"
            ]
        );
    }
}
