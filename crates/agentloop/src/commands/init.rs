//! `agentloop init`: a short (or, `--full`, commented and whole) agentloop.toml (with the project's own build, test and
//! lint commands as the run's final checks, when it has them), a PLAN.md template, and
//! `.agentloop/` in `.gitignore`.

use std::path::Path;

use agentloop_config::{SCHEMA_PATH, SHORT_TEMPLATE, TEMPLATE};

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
    let template = if full { TEMPLATE } else { SHORT_TEMPLATE };
    if !agentloop_exec::git::is_repo(dir) {
        crate::render::warn(
            "this is not a git repository: agentloop uses git to see what the agent changed (run `git init` first)",
        );
    }
    let found = agentloop_project::detect(dir);
    let config = if found.commands.is_empty() {
        template.to_string()
    } else {
        let list = found
            .commands
            .iter()
            .map(|c| format!("{c:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        eprintln!(
            "  the project's checks, from {}: {}",
            found.from.join(", "),
            found.commands.join("; ")
        );
        template.replace(
            "commands = []",
            &format!(
                "# Found in {}: regression checks, as said above (a test suite that fails\n# today does not block the first task).\ncommands = [{list}]",
                found.from.join(", ")
            ),
        )
    };
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
        .commands
        .iter()
        .any(|c| agentloop_evidence::runner::may_be_runner(c))
    {
        eprintln!(
            "  per-test evidence: `agentloop plan check --baseline` lists the tests failing now; name the ones each task must make pass on its `Tests:` line"
        );
    }
    eprintln!("next: edit PLAN.md, then `agentloop plan check` and `agentloop run`");
    Ok(ExitKind::Completed)
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
