//! `agentloop init`: a short (or, `--full`, commented and whole) agentloop.toml (with the project's own build, test and
//! lint commands as the run's final checks, when it has them), a PLAN.md template, and
//! `.agentloop/` in `.gitignore`.

use std::path::Path;

use agentloop_config::{SCHEMA_PATH, SHORT_TEMPLATE, full_template};

use crate::error::{CliError, ExitKind};

const PLAN_TEMPLATE: &str = "# My plan

One paragraph on what this plan achieves and why. Every iteration's agent reads it.

## T1: First task

What to do, in as much detail as a new colleague would need.

Verify: echo \"replace with a command that proves T1 works, e.g. cargo test\"

(Add a `Tests:` line naming the tests this task must make pass, as the runner reports
them: `tests/test_x.py::test_y`, `ops::div_*`, `example.com/m::TestDiv`, `(new)` after a
test the task adds. `agentloop plan check --baseline` shows what each name matches.)

Acceptance:
- [ ] something a reviewer can check

## T2: Second task
Depends: T1
Verify: echo \"replace me\"

What to do next.
";

pub fn init(dir: &Path, full: bool) -> Result<ExitKind, CliError> {
    let full_text;
    let template = if full {
        full_text = full_template();
        full_text.as_str()
    } else {
        SHORT_TEMPLATE
    };
    if !agentloop_exec::git::is_repo(dir) {
        crate::render::warn(
            "this is not a git repository: agentloop uses git to see what the agent changed (run `git init` first)",
        );
    }
    let found = agentloop_project::detect(dir);
    let config = configured(template, dir, &found);
    write_new(&dir.join("agentloop.toml"), &config)?;
    write_new(&dir.join("PLAN.md"), PLAN_TEMPLATE)?;
    // The schema the file names, as this version of agentloop reads the file.
    let schema = dir.join(SCHEMA_PATH);
    if let Some(parent) = schema.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let text = serde_json::to_string_pretty(&agentloop_config::json_schema()).unwrap_or_default();
    std::fs::write(&schema, format!("{text}\n"))?;
    let gi = dir.join(".gitignore");
    let existing = std::fs::read_to_string(&gi).unwrap_or_default();
    if existing.lines().any(|l| {
        matches!(
            l.trim(),
            ".agentloop" | ".agentloop/" | "/.agentloop/" | "/.agentloop"
        )
    }) {
        eprintln!("  .gitignore already ignores .agentloop/");
    } else {
        let sep = if existing.is_empty() || existing.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        std::fs::write(&gi, format!("{existing}{sep}.agentloop/\n"))?;
        eprintln!("  added .agentloop/ to .gitignore");
    }
    if found
        .checks
        .iter()
        .any(|c| agentloop_evidence::runner::runner_in(&c.command, dir).is_some())
    {
        eprintln!(
            "  per-test evidence: `agentloop plan check --baseline` lists the tests failing now; name the ones each task must make pass on its `Tests:` line"
        );
    }
    eprintln!("next: edit PLAN.md, then `agentloop plan check` and `agentloop run`");
    Ok(ExitKind::Completed)
}

/// The template with the checks found as `[verify] commands`, each with where it came
/// from and whether agentloop reads it test by test, and the installed dependencies
/// the clean copy links as `carry`. What was found but cannot start here is said, not
/// written.
fn configured(template: &str, dir: &Path, found: &agentloop_project::Detected) -> String {
    for check in &found.checks {
        eprintln!("  check, from {}: {}", check.from, check.command);
    }
    for skipped in &found.skipped {
        crate::render::warn(&format!(
            "not written as a check: `{}` (from {}): {}",
            skipped.command, skipped.from, skipped.why
        ));
    }
    let mut verify = String::new();
    if found.checks.is_empty() {
        verify.push_str("commands = []");
    } else {
        verify.push_str(
            "# Found by `agentloop init`: regression checks, as said above (a test suite that\n# fails today does not block the first task).\ncommands = [\n",
        );
        for check in &found.checks {
            let read = match agentloop_evidence::runner::runner_in(&check.command, dir) {
                Some(runner) => format!("read test by test ({})", runner.name()),
                None => "by its exit code, unless it prints TAP or writes JUnit or TAP to $AGENTLOOP_TEST_REPORT".to_string(),
            };
            verify.push_str(&format!(
                "    {:?},  # from {}: {read}\n",
                check.command, check.from
            ));
        }
        verify.push(']');
    }
    for skipped in &found.skipped {
        verify.push_str(&format!(
            "\n# not written, it cannot start here: {:?} (from {}): {}",
            skipped.command, skipped.from, skipped.why
        ));
    }
    if !found.carry.is_empty() {
        let list: Vec<String> = found.carry.iter().map(|c| format!("{c:?}")).collect();
        verify.push_str(&format!(
            "\ncarry = [{}]  # installed dependencies the clean copy links as they are",
            list.join(", ")
        ));
        eprintln!(
            "  the clean copy the checks run in links {} (`[verify] carry`)",
            found.carry.join(", ")
        );
    }
    template.replace("commands = []", &verify)
}

fn write_new(path: &Path, text: &str) -> Result<(), CliError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    if path.exists() {
        eprintln!("  {name} exists; left as it is");
        return Ok(());
    }
    std::fs::write(path, text)?;
    eprintln!("  wrote {name}");
    Ok(())
}
