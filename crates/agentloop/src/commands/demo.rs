//! `agentloop demo`: the bundled example project in a new temp git repository, driven
//! by the bundled example agent — a real loop with no account and no network.

use std::path::{Path, PathBuf};

use agentloop_workspace::Workspace;
use serde_json::Map;

use crate::cli::DemoArgs;
use crate::error::{CliError, ExitKind};

/// The example project, embedded so the demo works from any directory.
const FILES: &[(&str, &str)] = &[
    ("PLAN.md", include_str!("../../demo/PLAN.md")),
    ("agentloop.toml", include_str!("../../demo/agentloop.toml")),
    (
        "agent/example-agent.sh",
        include_str!("../../demo/agent/example-agent.sh"),
    ),
    ("tests/lib.sh", include_str!("../../demo/tests/lib.sh")),
    (
        "tests/test_greet.sh",
        include_str!("../../demo/tests/test_greet.sh"),
    ),
    (
        "tests/test_shout.sh",
        include_str!("../../demo/tests/test_shout.sh"),
    ),
    (
        "tests/test_docs.sh",
        include_str!("../../demo/tests/test_docs.sh"),
    ),
    ("src/.keep", include_str!("../../demo/src/.keep")),
];

pub fn demo(args: DemoArgs) -> Result<ExitKind, CliError> {
    let dir = match args.dir {
        Some(d) => {
            if d.exists() && std::fs::read_dir(&d)?.next().is_some() {
                return Err(CliError::user(format!("{} is not empty", d.display()))
                    .hint("name a new or empty directory"));
            }
            d
        }
        None => new_temp_dir()?,
    };
    write_project(&dir)?;
    git_init(&dir)?;
    eprintln!("agentloop demo: example project in {}", dir.display());
    let ws = Workspace::at(&dir);
    let kind = super::run::start(&ws, &dir.join("PLAN.md"), Map::new(), None, false, args.out)?;
    eprintln!(
        "agentloop demo: the run's record is in {}",
        ws.dir.display()
    );
    eprintln!(
        "  try: cd {} && agentloop status && agentloop log && git log --oneline",
        dir.display()
    );
    Ok(kind)
}

/// Writes the example project into `dir`.
pub fn write_project(dir: &Path) -> Result<(), CliError> {
    for (path, text) in FILES {
        let p = dir.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, text)?;
    }
    std::fs::write(dir.join(".gitignore"), ".agentloop/\n")?;
    Ok(())
}

fn new_temp_dir() -> Result<PathBuf, CliError> {
    let base = std::env::temp_dir();
    for n in 0..1000u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let d = base.join(format!(
            "agentloop-demo-{:x}",
            nanos ^ n.rotate_left(20) ^ std::process::id()
        ));
        match std::fs::create_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(CliError::internal(
        "cannot create a temp directory for the demo",
    ))
}

fn git_init(dir: &Path) -> Result<(), CliError> {
    let git = |args: &[&str]| -> Result<(), CliError> {
        let out = agentloop_exec::git::git_command(dir)
            .args([
                "-c",
                "user.name=agentloop demo",
                "-c",
                "user.email=demo@agentloop.invalid",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .map_err(|e| {
                CliError::internal(format!("cannot run git: {e}"))
                    .hint("the demo needs git installed")
            })?;
        if !out.status.success() {
            return Err(CliError::internal(format!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["commit", "-q", "-m", "The example project before agentloop"])?;
    Ok(())
}
