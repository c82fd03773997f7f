//! `agentloop hook install` / `uninstall`: agentloop's entries in an agent CLI's hook
//! settings — Claude Code's `settings.json`, Codex's `hooks.json` (with the `hooks`
//! feature on in its `config.toml`), Gemini CLI's `settings.json` — added next to
//! whatever else is there and removed exactly.

use std::path::{Path, PathBuf};

use agentloop_workspace::Workspace;
use serde_json::{Value, json};

use super::input::EVENTS;
use crate::cli::HookAgent;
use crate::error::{CliError, ExitKind};

/// Installed by default. SubagentStop is not: a subagent finishing does not end the
/// session's turn (uninstall still removes it from older installs).
const DEFAULT: [&str; 5] = [
    "Stop",
    "SessionStart",
    "StopFailure",
    "SessionEnd",
    "TaskCompleted",
];

/// The user's home, or the current directory when there is none.
fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The directory of the CLI's settings: the project's, or the user's with `user`.
fn config_dir(cwd: &Path, user: bool, agent: HookAgent) -> PathBuf {
    let root = Workspace::find(cwd).root;
    match (agent, user) {
        (HookAgent::Claude, true) => std::env::var_os("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| home().join(".claude")),
        (HookAgent::Claude, false) => root.join(".claude"),
        (HookAgent::Codex, true) => std::env::var_os("CODEX_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| home().join(".codex")),
        (HookAgent::Codex, false) => root.join(".codex"),
        (HookAgent::Gemini, true) => home().join(".gemini"),
        (HookAgent::Gemini, false) => root.join(".gemini"),
    }
}

/// The file that holds the CLI's hooks.
fn settings_path(cwd: &Path, user: bool, agent: HookAgent) -> PathBuf {
    config_dir(cwd, user, agent).join(match agent {
        HookAgent::Codex => "hooks.json",
        HookAgent::Claude | HookAgent::Gemini => "settings.json",
    })
}

/// What a hook may take before the CLI gives up on it (Gemini counts milliseconds).
fn timeout(agent: HookAgent) -> u64 {
    match agent {
        HookAgent::Gemini => 600_000,
        HookAgent::Claude | HookAgent::Codex => 600,
    }
}

fn our_command(sub: &str) -> String {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "agentloop".into());
    format!("'{}' hook {sub}", exe.replace('\'', "'\\''"))
}

fn is_ours(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| {
            c.contains("agentloop")
                && EVENTS
                    .iter()
                    .any(|(_, sub)| c.ends_with(&format!(" hook {sub}")))
        })
}

/// The CLIs whose hooks agentloop installed, in this project or the user's settings,
/// by name ("Claude Code", "Codex", "Gemini CLI").
pub fn installed_for(cwd: &Path) -> Vec<&'static str> {
    [
        (HookAgent::Claude, "Claude Code"),
        (HookAgent::Codex, "Codex"),
        (HookAgent::Gemini, "Gemini CLI"),
    ]
    .into_iter()
    .filter(|(agent, _)| {
        [false, true].into_iter().any(|user| {
            std::fs::read(settings_path(cwd, user, *agent))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|v| has_ours(&v))
        })
    })
    .map(|(_, name)| name)
    .collect()
}

/// Whether any hook in a settings file is one of agentloop's.
fn has_ours(v: &Value) -> bool {
    match v {
        Value::Object(m) => is_ours(v) || m.values().any(has_ours),
        Value::Array(a) => a.iter().any(has_ours),
        _ => false,
    }
}

fn read_settings(path: &Path) -> Result<Value, CliError> {
    match std::fs::read(path) {
        Ok(b) => {
            let v: Value = serde_json::from_slice(&b).map_err(|e| {
                CliError::user(format!("{}: not valid JSON: {e}", path.display()))
                    .hint("fix the file by hand first; agentloop changes nothing in it")
            })?;
            if !v.is_object() {
                return Err(CliError::user(format!(
                    "{}: not a JSON object",
                    path.display()
                )));
            }
            Ok(v)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(CliError::internal(format!("{}: {e}", path.display()))),
    }
}

fn write_settings(path: &Path, v: &Value) -> Result<(), CliError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    agentloop_ground::fsutil::write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// Adds agentloop's hooks, leaving every other entry alone. `team` adds TeammateIdle
/// (agent teams); `guard` adds the PreToolUse hook that denies edits to protected
/// paths and outside the current task's scope.
pub fn install(
    cwd: &Path,
    user: bool,
    guard: bool,
    team: bool,
    mcp: bool,
    agent: HookAgent,
) -> Result<ExitKind, CliError> {
    if mcp {
        register_mcp(cwd, user, agent)?;
    }
    if agent != HookAgent::Claude && (guard || team) {
        return Err(CliError::user(
            "--guard and --team are Claude Code hooks; Codex and Gemini CLI get the loop's own hook only",
        ));
    }
    let path = settings_path(cwd, user, agent);
    let mut v = read_settings(&path)?;
    let Some(root) = v.as_object_mut() else {
        return Err(CliError::user(format!(
            "{}: not a JSON object",
            path.display()
        )));
    };
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks
        .as_object_mut()
        .ok_or_else(|| CliError::user(format!("{}: `hooks` is not an object", path.display())))?;
    let wanted: Vec<(&str, &str)> = EVENTS
        .iter()
        .filter(|(event, _)| match agent {
            HookAgent::Claude => {
                DEFAULT.contains(event)
                    || (team && *event == "TeammateIdle")
                    || (guard && *event == "PreToolUse")
            }
            HookAgent::Codex => *event == "Stop",
            HookAgent::Gemini => *event == "AfterAgent",
        })
        .copied()
        .collect();
    let mut added = 0;
    for (event, sub) in &wanted {
        let groups = hooks.entry(*event).or_insert_with(|| json!([]));
        let groups = groups.as_array_mut().ok_or_else(|| {
            CliError::user(format!("{}: hooks.{event} is not a list", path.display()))
        })?;
        let present = groups.iter().any(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|h| h.iter().any(is_ours))
        });
        if !present {
            groups.push(json!({"hooks": [{"type": "command", "command": our_command(sub), "timeout": timeout(agent)}]}));
            added += 1;
        }
    }
    // Codex runs hooks only with its `hooks` feature on, set in the config.toml of the
    // same layer; checked before anything is written.
    let feature = match agent {
        HookAgent::Codex => Some(codex_feature_on(&path.with_file_name("config.toml"))?),
        _ => None,
    };
    write_settings(&path, &v)?;
    if let Some((config, text)) = feature.flatten() {
        agentloop_ground::fsutil::write_atomic(&config, text.as_bytes())?;
        eprintln!(
            "agentloop: turned Codex's `hooks` feature on in {}",
            config.display()
        );
    }
    eprintln!(
        "agentloop: {} agentloop hooks in {} ({added} added)",
        wanted.len(),
        path.display()
    );
    eprintln!(
        "  start a hook-mode run with `agentloop hook start`, then work in {} as usual",
        match agent {
            HookAgent::Claude => "Claude Code",
            HookAgent::Codex => "Codex",
            HookAgent::Gemini => "Gemini CLI",
        }
    );
    match agent {
        HookAgent::Codex => eprintln!(
            "  Codex runs a project's hooks once it trusts the project and you have reviewed them: start `codex` here and accept both (`codex exec --dangerously-bypass-hook-trust` skips the review)"
        ),
        HookAgent::Gemini => eprintln!(
            "  Gemini CLI runs a project's hooks in a folder it trusts, and names them when it starts"
        ),
        HookAgent::Claude => {}
    }
    Ok(ExitKind::Completed)
}

/// `agentloop mcp` registered as the CLI's MCP server `agentloop`: in the project's
/// `.mcp.json` (Claude Code), the `mcpServers` of Gemini CLI's settings, or a
/// `[mcp_servers.agentloop]` table in Codex's `config.toml`. One already there is left
/// as it is.
fn register_mcp(cwd: &Path, user: bool, agent: HookAgent) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "agentloop".into());
    let server = json!({"command": exe, "args": ["mcp"]});
    let path = match (agent, user) {
        (HookAgent::Claude, true) => {
            return Err(
                CliError::user("Claude Code keeps user-wide MCP servers itself").hint(format!(
                    "run: claude mcp add --scope user agentloop -- '{exe}' mcp"
                )),
            );
        }
        (HookAgent::Claude, false) => Workspace::find(cwd).root.join(".mcp.json"),
        (HookAgent::Gemini, _) => settings_path(cwd, user, agent),
        (HookAgent::Codex, _) => {
            let config = config_dir(cwd, user, agent).join("config.toml");
            let text = std::fs::read_to_string(&config).unwrap_or_default();
            let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
                CliError::user(format!("{}: {e}", config.display()))
            })?;
            if table
                .get("mcp_servers")
                .and_then(|m| m.get("agentloop"))
                .is_some()
            {
                return Ok(());
            }
            let mut new = text;
            if !new.is_empty() && !new.ends_with('\n') {
                new.push('\n');
            }
            new.push_str(&format!(
                "\n[mcp_servers.agentloop]\ncommand = {}\nargs = [\"mcp\"]\n",
                toml::Value::String(exe)
            ));
            new.parse::<toml::Table>()
                .map_err(|e| CliError::internal(format!("{}: {e}", config.display())))?;
            if let Some(dir) = config.parent() {
                std::fs::create_dir_all(dir)?;
            }
            agentloop_ground::fsutil::write_atomic(&config, new.as_bytes())?;
            eprintln!("agentloop: MCP server `agentloop` in {}", config.display());
            return Ok(());
        }
    };
    let mut v = read_settings(&path)?;
    let servers = v
        .as_object_mut()
        .map(|o| o.entry("mcpServers").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| {
            CliError::user(format!("{}: `mcpServers` is not an object", path.display()))
        })?;
    if !servers.contains_key("agentloop") {
        servers.insert("agentloop".into(), server);
        write_settings(&path, &v)?;
    }
    eprintln!("agentloop: MCP server `agentloop` in {}", path.display());
    Ok(())
}

/// Whether an MCP server entry is the one `install --mcp` wrote: `agentloop mcp`.
fn ours_mcp(server: &Value) -> bool {
    server.get("args") == Some(&json!(["mcp"]))
        && server
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| c.ends_with("agentloop"))
}

/// Removes the MCP server entry `install --mcp` added, and nothing else: one a person
/// changed (another command or arguments) stays, and is said.
fn unregister_mcp(cwd: &Path, user: bool, agent: HookAgent) -> Result<(), CliError> {
    let path = match (agent, user) {
        (HookAgent::Claude, true) => return Ok(()),
        (HookAgent::Claude, false) => Workspace::find(cwd).root.join(".mcp.json"),
        (HookAgent::Gemini, _) => settings_path(cwd, user, agent),
        (HookAgent::Codex, _) => {
            let config = config_dir(cwd, user, agent).join("config.toml");
            let Ok(text) = std::fs::read_to_string(&config) else {
                return Ok(());
            };
            let exe = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "agentloop".into());
            let block = format!(
                "\n[mcp_servers.agentloop]\ncommand = {}\nargs = [\"mcp\"]\n",
                toml::Value::String(exe)
            );
            if text.contains(&block) {
                let new = text.replacen(&block, "", 1);
                agentloop_ground::fsutil::write_atomic(&config, new.as_bytes())?;
                eprintln!(
                    "agentloop: removed the MCP server `agentloop` from {}",
                    config.display()
                );
            } else if text.contains("[mcp_servers.agentloop]") {
                eprintln!(
                    "agentloop: {} has an MCP server `agentloop` that is not as `install --mcp` wrote it: left as it is",
                    config.display()
                );
            }
            return Ok(());
        }
    };
    if !path.exists() {
        return Ok(());
    }
    let mut v = read_settings(&path)?;
    let Some(servers) = v.get_mut("mcpServers").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    match servers.get("agentloop") {
        Some(s) if ours_mcp(s) => {
            servers.remove("agentloop");
        }
        Some(_) => {
            eprintln!(
                "agentloop: {} has an MCP server `agentloop` that is not as `install --mcp` wrote it: left as it is",
                path.display()
            );
            return Ok(());
        }
        None => return Ok(()),
    }
    if servers.is_empty()
        && let Some(root) = v.as_object_mut()
    {
        root.remove("mcpServers");
    }
    if v.as_object().is_some_and(|o| o.is_empty()) && agent == HookAgent::Claude {
        std::fs::remove_file(&path)?;
    } else {
        write_settings(&path, &v)?;
    }
    eprintln!(
        "agentloop: removed the MCP server `agentloop` from {}",
        path.display()
    );
    Ok(())
}

/// `[features] hooks = true` in Codex's `config.toml`, changing nothing else in it:
/// `Some((path, new text))` when it must be written, `None` when it is on already.
fn codex_feature_on(config: &Path) -> Result<Option<(PathBuf, String)>, CliError> {
    let text = match std::fs::read_to_string(config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(CliError::internal(format!("{}: {e}", config.display()))),
    };
    let bad = |e: String| {
        CliError::user(format!("{}: {e}", config.display()))
            .hint("fix the file by hand first; agentloop changes nothing in it")
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| bad(e.to_string()))?;
    let on = |t: &toml::Table| {
        t.get("features")
            .and_then(|f| f.get("hooks").or_else(|| f.get("codex_hooks")))
            .and_then(toml::Value::as_bool)
    };
    match on(&table) {
        Some(true) => return Ok(None),
        Some(false) => {
            return Err(bad(
                "its `[features]` turn hooks off; turn them on to use hook mode".into(),
            ));
        }
        None => {}
    }
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    match lines.iter().position(|l| l.trim() == "[features]") {
        Some(at) => lines.insert(at + 1, "hooks = true".into()),
        None => {
            if lines.last().is_some_and(|l| !l.trim().is_empty()) {
                lines.push(String::new());
            }
            lines.push("[features]".into());
            lines.push("hooks = true".into());
        }
    }
    let mut new = lines.join("\n");
    new.push('\n');
    let check: toml::Table = new
        .parse()
        .map_err(|e: toml::de::Error| bad(e.to_string()))?;
    if on(&check) != Some(true) {
        return Err(bad("cannot turn Codex's `hooks` feature on in it".into()));
    }
    Ok(Some((config.to_path_buf(), new)))
}

/// Removes exactly the entries `install` adds (of any event agentloop handles).
pub fn uninstall(cwd: &Path, user: bool, agent: HookAgent) -> Result<ExitKind, CliError> {
    unregister_mcp(cwd, user, agent)?;
    let path = settings_path(cwd, user, agent);
    if !path.exists() {
        eprintln!(
            "agentloop: {} does not exist; nothing to remove",
            path.display()
        );
        return Ok(ExitKind::Completed);
    }
    let mut v = read_settings(&path)?;
    let mut removed = 0;
    if let Some(root) = v.as_object_mut()
        && let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut)
    {
        for (event, _) in EVENTS {
            let Some(groups) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
                continue;
            };
            for g in groups.iter_mut() {
                if let Some(h) = g.get_mut("hooks").and_then(Value::as_array_mut) {
                    let before = h.len();
                    h.retain(|x| !is_ours(x));
                    removed += before - h.len();
                }
            }
            groups.retain(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|h| !h.is_empty())
            });
            if groups.is_empty() {
                hooks.remove(event);
            }
        }
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    if v.as_object().is_some_and(|o| o.is_empty()) {
        std::fs::remove_file(&path)?;
    } else {
        write_settings(&path, &v)?;
    }
    eprintln!(
        "agentloop: removed {removed} agentloop hooks from {}",
        path.display()
    );
    Ok(ExitKind::Completed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature_on(text: &str) -> Result<Option<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        codex_feature_on(&path)
            .map(|o| o.map(|(_, t)| t))
            .map_err(|e| e.message)
    }

    #[test]
    fn codexs_hooks_feature_is_turned_on_and_nothing_else_changes() {
        let new = feature_on("# my settings\nmodel = \"o3\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            new,
            "# my settings\nmodel = \"o3\"\n\n[features]\nhooks = true\n"
        );
        let new = feature_on("[features]\nweb_search = true\n\n[x]\ny = 1\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            new,
            "[features]\nhooks = true\nweb_search = true\n\n[x]\ny = 1\n"
        );
        assert_eq!(feature_on("[features]\nhooks = true\n").unwrap(), None);
        assert_eq!(
            feature_on("[features]\ncodex_hooks = true\n").unwrap(),
            None
        );
        assert!(
            feature_on("[features]\nhooks = false\n")
                .unwrap_err()
                .contains("turn hooks off")
        );
        assert!(feature_on("not toml = = =\n").is_err());
    }
}
