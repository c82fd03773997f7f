//! Probing an agent CLI once per run: is it installed, which version, is it new enough.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentloop_config::{AgentConfig, Config};

mod cache;

/// The oldest versions the adapters are known to work with.
pub const MIN_CLAUDE: (u64, u64, u64) = (2, 1, 0);
pub const MIN_CODEX: (u64, u64, u64) = (0, 160, 0);

/// The newest version of each CLI the test suite runs (the pins in `scripts/test`);
/// a newer one is said to be untested.
pub const TESTED: &[(&str, &str)] = &[
    ("claude", "2.1.197"),
    ("codex", "0.169.0"),
    ("gemini", "0.61.0"),
    ("opencode", "1.18.33"),
    ("aider", "0.86.2"),
    ("copilot", "1.0.102"),
    ("qwen", "0.24.4"),
    ("droid", "0.215.0"),
    ("cline", "3.0.65"),
];

/// The latest release of each CLI that `scripts/drift` ran the end-to-end tests
/// against and passed with (docs/agents/drift.md), where newer than the pin.
pub const PASSED_DRIFT: &[(&str, &str)] = &[("claude", "2.1.332"), ("codex", "0.171.0")];

/// The newest version of `kind` agentloop was tested with, the pin or a drift run's,
/// when `version` is newer than it.
pub fn newer_than_tested(kind: &str, version: &str) -> Option<&'static str> {
    let newest = TESTED
        .iter()
        .chain(PASSED_DRIFT)
        .filter(|(k, _)| *k == kind)
        .filter_map(|(_, v)| Some((parse_version(v)?, *v)))
        .max()?;
    (parse_version(version)? > newest.0).then_some(newest.1)
}

#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub name: String,
    pub kind: String,
    pub program: String,
    /// The version line the CLI printed (`None` for a plain command).
    pub version: Option<String>,
    pub supports: &'static str,
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("agent \"{name}\": `{program}` is not installed (or not on PATH)")]
    Missing {
        name: String,
        program: String,
        install: &'static str,
    },
    #[error("agent \"{name}\": `{program}` is version {found}; agentloop needs {needed} or newer")]
    TooOld {
        name: String,
        program: String,
        found: String,
        needed: String,
        install: &'static str,
    },
    /// The CLI is there but did not answer in time: a busy machine, most often. The
    /// agent stays usable; only its version is unknown.
    #[error(
        "agent \"{name}\": `{program} --version` gave no answer within {}s; the machine may be busy",
        within.as_secs()
    )]
    Slow {
        name: String,
        program: String,
        within: Duration,
    },
    #[error("agent \"{name}\": `{program} --version` failed: {message}")]
    Failed {
        name: String,
        program: String,
        message: String,
    },
    #[error("agent \"{name}\": {message}")]
    Unconfigured {
        name: String,
        message: String,
        hint: String,
    },
}

impl ProbeError {
    pub fn hint(&self) -> String {
        match self {
            ProbeError::Missing { install, .. } | ProbeError::TooOld { install, .. } => {
                format!("install it: {install}")
            }
            ProbeError::Slow { .. } => {
                "it is still used; run it by hand when the machine is idle to see its version"
                    .into()
            }
            ProbeError::Failed { .. } => "run the program by hand to see what is wrong".into(),
            ProbeError::Unconfigured { hint, .. } => hint.clone(),
        }
    }
}

fn install_hint(kind: &str) -> &'static str {
    match kind {
        "claude" => "npm install -g @anthropic-ai/claude-code",
        "codex" => "npm install -g @openai/codex",
        "gemini" => "npm install -g @google/gemini-cli",
        "opencode" => "npm install -g opencode-ai",
        "aider" => "pip install aider-chat",
        "copilot" => "npm install -g @github/copilot",
        "qwen" => "npm install -g @qwen-code/qwen-code",
        "droid" => "npm install -g droid",
        "cline" => "npm install -g cline",
        _ => "put the program on PATH or give its full path in `command`",
    }
}

/// The program an agent runs.
pub fn program(kind: &str, ac: &AgentConfig) -> String {
    ac.command
        .first()
        .cloned()
        .unwrap_or_else(|| kind.to_string())
}

/// Probes the agent `name` as `config` defines it (or the built-in one), its version
/// as the program said it last when it is still the same file (`cache`).
pub fn probe(config: &Config, name: &str) -> Result<Probe, ProbeError> {
    probe_as(config, name, false)
}

/// [`probe`], asking the program again (`agentloop agents`).
pub fn probe_fresh(config: &Config, name: &str) -> Result<Probe, ProbeError> {
    probe_as(config, name, true)
}

fn probe_as(config: &Config, name: &str, fresh: bool) -> Result<Probe, ProbeError> {
    let ac = config
        .agents
        .get(name)
        .cloned()
        .unwrap_or_else(|| AgentConfig::builtin(name));
    let kind = ac.kind.as_str();
    let program = program(kind, &ac);
    let install = install_hint(kind);
    let supports = match kind {
        "claude" => "final message, session id, tokens, cost, tool use, limits",
        "codex" => "final message, thread id, tokens, cost from [prices], tool use, limits",
        "gemini" => "final message, session id, tokens, cost from [prices], tool use, limits",
        "opencode" => "final message, session id, tokens, cost, tool use",
        "aider" => "final message, tokens and cost from its text",
        "copilot" => {
            "final message, session id, tokens per model, cost from [prices], tool use, limits"
        }
        "qwen" => {
            "final message, session id, tokens per model, cost from [prices], tool use, limits"
        }
        "droid" => "final message, session id, tokens, cost from [prices], tool use, limits",
        "cline" => "final message, task id, tokens, cost, else from [prices], tool use, limits",
        _ => "final message from stdout",
    };
    let missing = || ProbeError::Missing {
        name: name.into(),
        program: program.clone(),
        install,
    };
    if kind == "command" {
        return if on_path(&program) {
            Ok(Probe {
                name: name.into(),
                kind: kind.into(),
                program,
                version: None,
                supports,
            })
        } else {
            Err(missing())
        };
    }
    if !on_path(&program) {
        return Err(missing());
    }
    let version = version_of(&program, &ac, fresh).map_err(|e| match e {
        VersionError::Slow(within) => ProbeError::Slow {
            name: name.into(),
            program: program.clone(),
            within,
        },
        VersionError::Failed(message) => ProbeError::Failed {
            name: name.into(),
            program: program.clone(),
            message,
        },
    })?;
    let needed = match kind {
        "claude" => Some(MIN_CLAUDE),
        "codex" => Some(MIN_CODEX),
        _ => None,
    };
    if let (Some(needed), Some(found)) = (needed, parse_version(&version))
        && found < needed
    {
        return Err(ProbeError::TooOld {
            name: name.into(),
            program,
            found: format!("{}.{}.{}", found.0, found.1, found.2),
            needed: format!("{}.{}.{}", needed.0, needed.1, needed.2),
            install,
        });
    }
    if kind == "aider" && !aider_configured(&ac) {
        return Err(ProbeError::Unconfigured {
            name: name.into(),
            message: "aider has no model and no provider key, so it would offer an OpenRouter login in a browser and wait for it".into(),
            hint: format!(
                "name its model in agentloop.toml:\n  [agents.{name}]\n  model = \"openai/gpt-4.1\"\nand export the provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY…), or set AIDER_MODEL or an .aider.conf.yml"
            ),
        });
    }
    Ok(Probe {
        name: name.into(),
        kind: kind.into(),
        program,
        version: Some(version),
        supports,
    })
}

/// The provider keys with which aider picks a model by itself.
const AIDER_KEYS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "VERTEXAI_PROJECT",
    "AIDER_MODEL",
    "AIDER_OPENAI_API_KEY",
    "AIDER_ANTHROPIC_API_KEY",
];

/// Whether aider knows which model to use: one named in the configuration, a key it
/// picks a model from, or its own configuration file (where it looks for one).
fn aider_configured(ac: &AgentConfig) -> bool {
    let named = ac.model.is_some()
        || ac
            .args
            .iter()
            .any(|a| a == "--model" || a.starts_with("--model="));
    let keyed = AIDER_KEYS
        .iter()
        .any(|k| ac.env.contains_key(*k) || std::env::var_os(k).is_some_and(|v| !v.is_empty()));
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let files = [".aider.conf.yml", ".env"].iter().any(|f| {
        std::path::Path::new(f).exists() || home.as_ref().is_some_and(|h| h.join(f).exists())
    });
    named || keyed || files
}

fn on_path(program: &str) -> bool {
    resolve(program).is_some()
}

/// The file `program` runs: its path, or the first on the PATH.
fn resolve(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        let p = std::path::PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The version line of `program`: what it said last while it is the same file (not
/// when `fresh`), else asked, within a deadline that grows with the load and with
/// what it took last time.
fn version_of(program: &str, ac: &AgentConfig, fresh: bool) -> Result<String, VersionError> {
    let stamped = resolve(program).and_then(|p| cache::stamp_of(&p));
    let now = jiff::Timestamp::now().as_second();
    let last = stamped
        .as_ref()
        .map(|(file, stamp)| cache::last(file, stamp, now))
        .unwrap_or_default();
    if !fresh && let Some(a) = last.answer {
        return Ok(a.version);
    }
    let within = cache::deadline(last.took);
    let start = Instant::now();
    let version = run_version(program, ac, within)?;
    if let Some((file, stamp)) = stamped {
        let answer = cache::Answer {
            stamp,
            version: version.clone(),
            took_ms: start.elapsed().as_millis() as u64,
            at: now,
        };
        cache::keep(&file, answer);
    }
    Ok(version)
}

/// How long `--version` may take on an idle machine (`cache::deadline` scales it): a
/// Node.js CLI on a loaded machine can take tens of seconds (Gemini CLI 0.61.0 took
/// 34 s at a load of 38 on two cores).
const VERSION_WITHIN: Duration = Duration::from_secs(30);

enum VersionError {
    /// No answer within this long.
    Slow(Duration),
    Failed(String),
}

impl From<std::io::Error> for VersionError {
    fn from(e: std::io::Error) -> VersionError {
        VersionError::Failed(e.to_string())
    }
}

fn run_version(program: &str, ac: &AgentConfig, within: Duration) -> Result<String, VersionError> {
    let mut cmd = Command::new(program);
    cmd.arg("--version").envs(&ac.env);
    // Gemini CLI starts itself a second time with a larger heap before it does
    // anything, answering `--version` too: 3.4 s here, 1.7 s told not to.
    if ac.kind == agentloop_config::AgentKind::Gemini {
        cmd.env("GEMINI_CLI_NO_RELAUNCH", "true");
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let start = Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            return Err(VersionError::Slow(within));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .ok_or_else(|| VersionError::Failed("it printed nothing".into()))
}

/// The first `N.N.N` in a version line.
pub fn parse_version(line: &str) -> Option<(u64, u64, u64)> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|w| {
            let mut parts = w.split('.').map(|p| p.parse::<u64>().ok());
            Some((parts.next()??, parts.next()??, parts.next()??))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_real_version_lines() {
        assert_eq!(parse_version("2.1.197 (Claude Code)"), Some((2, 1, 197)));
        assert_eq!(parse_version("codex-cli 0.169.0"), Some((0, 169, 0)));
        assert_eq!(parse_version("no version here"), None);
    }

    #[test]
    fn newer_versions_than_the_tested_ones_are_named() {
        assert_eq!(
            newer_than_tested("claude", "2.1.400 (Claude Code)"),
            Some("2.1.332")
        );
        // Newer than the pin, but a drift run passed with it.
        assert_eq!(newer_than_tested("claude", "2.1.328 (Claude Code)"), None);
        assert_eq!(newer_than_tested("claude", "2.1.197 (Claude Code)"), None);
        assert_eq!(newer_than_tested("gemini", "0.62.0"), Some("0.61.0"));
        assert_eq!(newer_than_tested("aider", "aider 0.85.0"), None);
        assert_eq!(newer_than_tested("command", "9.9.9"), None);
    }

    #[test]
    fn the_tested_versions_are_the_ones_the_suite_pins() {
        let script = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test"),
        )
        .unwrap();
        for (kind, package) in [
            ("claude", "@anthropic-ai/claude-code@"),
            ("codex", "@openai/codex@"),
            ("gemini", "@google/gemini-cli@"),
            ("opencode", "opencode-ai@"),
            ("aider", "aider-chat=="),
            ("copilot", "@github/copilot@"),
            ("qwen", "@qwen-code/qwen-code@"),
            ("droid", "droid@"),
            ("cline", "cline@"),
        ] {
            let tested = TESTED.iter().find(|(k, _)| *k == kind).unwrap().1;
            assert!(
                script.contains(&format!("{package}{tested}")),
                "scripts/test pins {package}{tested}"
            );
        }
    }

    #[test]
    fn the_drift_runs_that_passed_are_the_ones_the_drift_page_records() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/agents/drift.md"),
        )
        .unwrap();
        // `| claude | 2.1.197 | 2.1.332 | 7 | 0 | pass |`
        let mut passed: Vec<(String, String)> = page
            .lines()
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (cells.len() == 8 && cells[6] == "pass" && cells[2] != cells[3])
                    .then(|| (cells[1].to_string(), cells[3].to_string()))
            })
            .collect();
        passed.sort();
        let mut ours: Vec<(String, String)> = PASSED_DRIFT
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ours.sort();
        assert_eq!(
            ours, passed,
            "PASSED_DRIFT is docs/agents/drift.md's passing rows"
        );
    }

    #[test]
    fn a_probe_that_timed_out_is_told_from_one_that_failed() {
        let dir = tempfile::tempdir().unwrap();
        let script = |name: &str, body: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path.display().to_string()
        };
        let ac = AgentConfig::builtin("gemini");
        let slow = script("slow", "sleep 5");
        let t = Instant::now();
        assert!(matches!(
            run_version(&slow, &ac, Duration::from_millis(300)),
            Err(VersionError::Slow(_))
        ));
        assert!(t.elapsed() < Duration::from_secs(4), "not waited out");
        let broken = script("broken", "exit 1");
        assert!(matches!(
            run_version(&broken, &ac, Duration::from_secs(10)),
            Err(VersionError::Failed(m)) if m == "it printed nothing"
        ));
        let e = ProbeError::Slow {
            name: "gemini".into(),
            program: "gemini".into(),
            within: VERSION_WITHIN,
        };
        assert_eq!(
            e.to_string(),
            "agent \"gemini\": `gemini --version` gave no answer within 30s; the machine may be busy"
        );
        let failed = ProbeError::Failed {
            name: "gemini".into(),
            program: "gemini".into(),
            message: "exit status: 1".into(),
        };
        assert_eq!(
            failed.hint(),
            "run the program by hand to see what is wrong"
        );
    }

    #[test]
    fn a_missing_program_says_how_to_install_it() {
        let mut c = Config::default();
        let mut ac = AgentConfig::builtin("claude");
        ac.command = vec!["/nonexistent/claude".into()];
        c.agents.insert("claude".into(), ac);
        let e = probe(&c, "claude").unwrap_err();
        assert_eq!(
            e.to_string(),
            "agent \"claude\": `/nonexistent/claude` is not installed (or not on PATH)"
        );
        assert_eq!(
            e.hint(),
            "install it: npm install -g @anthropic-ai/claude-code"
        );
    }

    #[test]
    fn gemini_is_asked_its_version_without_starting_itself_again() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("gemini");
        std::fs::write(
            &program,
            "#!/bin/sh\necho \"0.61.0 relaunch=${GEMINI_CLI_NO_RELAUNCH:-yes}\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = Config::default();
        let mut ac = AgentConfig::builtin("gemini");
        ac.command = vec![program.display().to_string()];
        c.agents.insert("gemini".into(), ac);
        let p = probe(&c, "gemini").unwrap();
        assert_eq!(p.version.as_deref(), Some("0.61.0 relaunch=true"));
    }
}
