//! What a run needs from the machine, looked at when a driver starts: a git work tree,
//! whether it is clean, and the programs the checks run (a check whose program is not
//! there can never pass, whatever the agent does).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::plan::Plan;

/// Words a shell runs itself.
const BUILTINS: &[&str] = &[
    "test", "[", "[[", "cd", "echo", "true", "false", "exit", "set", "export", ".", "source",
    "command", "type", "printf", "read", "eval", "exec", "!", "{", "(", "if", "for", "while",
    "case", "until", "unset", "shift", "trap", "wait", "ulimit", "umask", "times", "return",
];

/// Uncommitted paths kept in the record.
const DIRTY_KEPT: usize = 20;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prerequisites {
    /// The project is a git work tree.
    pub git: bool,
    /// Uncommitted paths when the driver started (at most 20), and how many in all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty: Vec<String>,
    #[serde(default)]
    pub dirty_count: usize,
    /// Programs the checks run that are not there: `frob (T2: frob --all)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

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

pub fn check(root: &Path, plan: &Plan, run_commands: &[String]) -> Prerequisites {
    let git = super::git::is_repo(root);
    let status = if git {
        super::git::run(root, &["status", "--porcelain", "--untracked-files=normal"])
            .unwrap_or_default()
    } else {
        String::new()
    };
    let dirty: Vec<String> = status
        .lines()
        .map(|l| l.get(3..).unwrap_or(l).to_string())
        .filter(|p| !p.starts_with(".agentloop"))
        .collect();
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
    for (who, command) in &checks {
        let Some(p) = program(command) else {
            continue;
        };
        if seen.contains(&p) {
            continue;
        }
        seen.push(p);
        if !found(root, p) {
            missing.push(format!("{p} ({who}: {command})"));
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
    use super::*;

    #[test]
    fn the_program_of_a_check() {
        assert_eq!(program("cargo test -p x"), Some("cargo"));
        assert_eq!(program("RUST_LOG=debug ./run.sh"), Some("./run.sh"));
        assert_eq!(program("test -f a.txt"), None);
        assert_eq!(program("[ -f a ]"), None);
    }

    #[test]
    fn a_missing_program_is_named_with_the_check_that_needs_it() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan::parse(
            "PLAN.md",
            "# P\n\n## T1: a\nVerify: sh -c true\n\n## T2: b\nVerify: surely-not-a-program-xyz --all\n",
        )
        .unwrap();
        let p = check(dir.path(), &plan, &["./missing.sh".to_string()]);
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
