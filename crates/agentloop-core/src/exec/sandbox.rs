//! `[sandbox] mode = "workspace"`: each agent process runs under bubblewrap with the
//! root file system read-only; writable only its working directory (the task's
//! worktree, or the project), a private `/tmp`, the agent CLIs' own config and cache
//! directories and `[sandbox] writable`; `.agentloop/` read-only but for the
//! iteration's own directory (where `agentloop mcp` writes its reports); secrets in
//! the home directory (`~/.ssh`, `~/.aws`, … and `[sandbox] hidden`) hidden. The
//! network is not confined yet.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Off,
    Workspace,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    pub mode: Mode,
    /// More paths the agent may write (`~/` is the home directory).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
    /// More paths the agent may not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// The bubblewrap program.
    pub bwrap: String,
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            mode: Mode::Off,
            writable: Vec::new(),
            hidden: Vec::new(),
            bwrap: "bwrap".into(),
        }
    }
}

/// What the agent CLIs keep for themselves in the home directory.
const AGENT_DIRS: &[&str] = &[
    "~/.claude",
    "~/.claude.json",
    "~/.codex",
    "~/.gemini",
    "~/.copilot",
    "~/.config/opencode",
    "~/.local/share/opencode",
    "~/.local/state/opencode",
    "~/.aider",
    "~/.cache",
    "~/.npm",
];

/// Secrets no agent reads.
const SECRETS: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.azure",
    "~/.gnupg",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.kube",
    "~/.git-credentials",
];

fn expand(p: &str, home: &Path) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(p),
    }
}

impl SandboxConfig {
    pub fn on(&self) -> bool {
        self.mode == Mode::Workspace
    }

    /// Whether bubblewrap runs here (installed, and user namespaces allowed).
    pub fn check(&self) -> Result<(), String> {
        let out = std::process::Command::new(&self.bwrap)
            .args([
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "true",
            ])
            .output();
        match out {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!(
                "bubblewrap cannot make a sandbox here ({}); enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run without [sandbox]",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Err(format!(
                "bubblewrap ({}) is not installed ({e}); install it (Debian: apt-get install bubblewrap)",
                self.bwrap
            )),
        }
    }

    /// The command an agent runs under: `bwrap … --`; `root` is the project,
    /// `workdir` where the agent works, `own` the directory it may write in
    /// `.agentloop/` (its iteration's).
    pub fn prefix(&self, root: &Path, workdir: &Path, own: &Path) -> Vec<OsString> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/root"));
        let mut a: Vec<OsString> = [
            self.bwrap.as_str(),
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        fn bind(a: &mut Vec<OsString>, flag: &str, from: &Path, to: &Path) {
            a.push(flag.into());
            a.push(from.into());
            a.push(to.into());
        }
        for p in AGENT_DIRS
            .iter()
            .map(|p| p.to_string())
            .chain(self.writable.iter().cloned())
        {
            let p = expand(&p, &home);
            if p.exists() {
                bind(&mut a, "--bind", &p, &p);
            }
        }
        bind(&mut a, "--bind", workdir, workdir);
        // A worktree's commits go into the project's repository.
        let git = root.join(".git");
        if !workdir.starts_with(root) && git.is_dir() {
            bind(&mut a, "--bind", &git, &git);
        }
        let state = root.join(".agentloop");
        if state.is_dir() {
            bind(&mut a, "--ro-bind", &state, &state);
            if own.is_dir() {
                bind(&mut a, "--bind", own, own);
            }
        }
        for p in SECRETS
            .iter()
            .map(|p| p.to_string())
            .chain(self.hidden.iter().cloned())
        {
            let p = expand(&p, &home);
            if p.is_dir() {
                a.push("--tmpfs".into());
                a.push(p.into());
            } else if p.exists() {
                bind(&mut a, "--ro-bind", Path::new("/dev/null"), &p);
            }
        }
        a.push("--".into());
        a
    }
}
