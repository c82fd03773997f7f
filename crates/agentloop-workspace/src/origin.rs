//! Who is asking: a control request (approve, reject, skip, stop…) made from inside
//! the process tree of the agent it controls is the agent approving itself, and is
//! refused. See `docs/SECURITY.md` for what this stops and what it cannot.

use agentloop_exec::reap::lineage;

/// The variable set in the agent's environment: the run it works for.
pub const RUN_VAR: &str = "AGENTLOOP_RUN";

/// What the refusal checks about the asking process and its run.
pub struct Asker<'a> {
    pub run_id: &'a str,
    /// The pid in the run's lock file (when a driver holds it) and the one the
    /// journal says drives the run.
    pub drivers: [Option<u32>; 2],
    /// Hook mode: the Claude Code process of the session the run is bound to.
    pub session_pid: Option<u32>,
    /// The request comes from the plugin's slash command handler (hook mode).
    pub slash: bool,
}

impl Asker<'_> {
    /// The processes a request could come from that would be refused for where they
    /// run: everything below the run's driver and its bound session.
    pub fn agent_tree(&self) -> Vec<u32> {
        let roots: Vec<u32> = self
            .drivers
            .iter()
            .chain(std::iter::once(&self.session_pid))
            .flatten()
            .copied()
            .collect();
        if roots.is_empty() {
            return Vec::new();
        }
        agentloop_exec::reap::descendants(&roots)
    }

    /// Why process `pid` (this one, or the peer of an API connection) may not control
    /// the run, or `None` when it may.
    pub fn refusal(&self, pid: u32) -> Option<String> {
        let (var, input) = if pid == std::process::id() {
            // Who made its input matters only for the slash command handler.
            (
                std::env::var(RUN_VAR).ok(),
                self.slash.then(input_maker).flatten(),
            )
        } else {
            (env_of(pid, RUN_VAR), None)
        };
        self.refusal_of(pid, var.as_deref(), input)
    }

    /// `input`: the process that made the socket this one's standard input is.
    fn refusal_of(&self, me: u32, run_var: Option<&str>, input: Option<u32>) -> Option<String> {
        if run_var == Some(self.run_id) {
            return Some(format!(
                "it was made by the agent of run {} ({RUN_VAR} is set in its environment)",
                self.run_id
            ));
        }
        let chain = lineage(me);
        if let Some((pid, _)) = chain
            .iter()
            .find(|(pid, _)| self.drivers.contains(&Some(*pid)))
        {
            return Some(format!(
                "it was made from inside the process tree of the run's driver (pid {pid}): by the agent or a process it left running"
            ));
        }
        let session = self.session_pid?;
        let at = chain.iter().position(|(pid, _)| *pid == session)?;
        // The one process of the session allowed to ask: the slash command handler,
        // which Claude Code starts through `sh -c` (or directly) for the words a
        // person typed, and whose input it writes into a socket pair it made itself.
        // The model's command can stand where the handler stands (`exec sh -c …` in
        // its Bash tool leaves nothing in between), but its input is a file, a pipe
        // or a socket of its own making: never one the session's process made.
        let handler = self.slash
            && (at == 0 || (at == 1 && runs_hook_shell(chain[0].0)))
            && input == Some(session);
        if handler {
            return None;
        }
        Some(format!(
            "it was made from inside the agent session the run drives (pid {session}): by the model, not a person"
        ))
    }
}

/// The process that made the socket this process reads its standard input from
/// (`SO_PEERCRED`: who made a socket pair, or listened where it connected); `None`
/// when standard input is not a socket. Claude Code hands a hook its input through a
/// socket pair of its own; a socket cannot be opened again through `/proc`, so no
/// other process can hand one of those on, short of tracing the session's process.
fn input_maker() -> Option<u32> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let stdin = std::io::stdin();
    let creds = getsockopt(&std::os::fd::AsFd::as_fd(&stdin), PeerCredentials).ok()?;
    u32::try_from(creds.pid()).ok()
}

/// A variable in the environment process `pid` started with.
fn env_of(pid: u32, name: &str) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    raw.split(|b| *b == 0).find_map(|kv| {
        let kv = std::str::from_utf8(kv).ok()?;
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// Whether `pid` is the shell Claude Code runs the slash command hook in: `sh -c`
/// with exactly `[…/]agentloop hook prompt-expansion` (a command the model runs has
/// its Bash tool's script there instead).
fn runs_hook_shell(pid: u32) -> bool {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = raw.split(|b| *b == 0).filter(|a| !a.is_empty()).collect();
    match args.as_slice() {
        [shell, flag, script] => {
            let shell = String::from_utf8_lossy(shell);
            let script = String::from_utf8_lossy(script);
            let words: Vec<&str> = script.split_whitespace().collect();
            matches!(shell.rsplit('/').next(), Some("sh" | "bash" | "dash"))
                && *flag == b"-c"
                && matches!(words.as_slice(), [exe, "hook", "prompt-expansion"]
                    if exe.rsplit('/').next() == Some("agentloop"))
        }
        _ => false,
    }
}

/// The agent CLIs whose sessions drive a hook-mode run, by process name.
pub const SESSION_CLIS: [&str; 3] = ["claude", "codex", "gemini"];

/// The session process this one runs under (a hook's), and which CLI it is. Gemini
/// CLI runs as `node` with its script in the command line.
pub fn session_ancestor() -> Option<(u32, String)> {
    lineage(std::process::id())
        .into_iter()
        .find_map(|(pid, comm)| {
            if SESSION_CLIS.contains(&comm.as_str()) {
                return Some((pid, comm));
            }
            if comm != "node" {
                return None;
            }
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            cmdline
                .split(|b| *b == 0)
                .skip(1)
                .any(|a| String::from_utf8_lossy(a).contains("gemini"))
                .then(|| (pid, "gemini".to_string()))
        })
}

/// The pid of the Claude Code process this one runs under (a hook's session).
pub fn claude_ancestor() -> Option<u32> {
    session_ancestor().map(|(pid, _)| pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asker() -> Asker<'static> {
        Asker {
            run_id: "r1",
            drivers: [None, None],
            session_pid: None,
            slash: false,
        }
    }

    #[test]
    fn the_agents_variable_is_refused_for_its_own_run_only() {
        let a = asker();
        assert!(a.refusal_of(std::process::id(), Some("r1"), None).is_some());
        assert!(a.refusal_of(std::process::id(), Some("r2"), None).is_none());
        assert!(a.refusal_of(std::process::id(), None, None).is_none());
    }

    #[test]
    fn a_descendant_of_the_driver_is_refused() {
        // This test's own parent stands for the driver.
        let parent = lineage(std::process::id())[0].0;
        let mut a = asker();
        a.drivers = [None, Some(parent)];
        let why = a.refusal_of(std::process::id(), None, None).unwrap();
        assert!(why.contains(&format!("pid {parent}")), "{why}");
        a.drivers = [Some(1), None];
        assert!(a.refusal_of(std::process::id(), None, None).is_none());
    }

    #[test]
    fn inside_the_session_only_the_slash_handler_may_ask() {
        let parent = lineage(std::process::id())[0].0;
        let mut a = asker();
        a.session_pid = Some(parent);
        assert!(
            a.refusal_of(std::process::id(), None, Some(parent))
                .is_some()
        );
        a.slash = true;
        assert!(
            a.refusal_of(std::process::id(), None, Some(parent))
                .is_none()
        );
        // Its input from a socket anyone else made, or from no socket: refused.
        let me = std::process::id();
        assert!(a.refusal_of(me, None, Some(me)).is_some());
        assert!(a.refusal_of(me, None, None).is_some());
    }
}
