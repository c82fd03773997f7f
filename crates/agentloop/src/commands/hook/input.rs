//! What an agent CLI sends a hook on stdin: one type per event, told apart by
//! `hook_event_name` — Claude Code's events, Codex's `Stop` (the same fields, plus
//! `turn_id` and `model`) and Gemini CLI's `AfterAgent`. Fields come from the hooks reference and the recorded inputs
//! (`shared/fixtures/claude-code-*/stop-hook-input*.json`); fields a handler does not
//! use, and fields newer releases add, are tolerated.

use std::io::Read;
use std::path::PathBuf;

use serde::Deserialize;

/// The largest hook input read.
const MAX_INPUT: u64 = 4 * 1024 * 1024;

/// Fields every hook event carries.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Common {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

impl Common {
    /// The session, which the events that drive a run must name.
    pub fn session(&self) -> Result<&str, String> {
        self.session_id
            .as_deref()
            .ok_or_else(|| "the hook input has no session_id".to_string())
    }

    /// The directory the session works in (the hook's own when the input says none).
    pub fn cwd(&self) -> PathBuf {
        self.cwd
            .clone()
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_default())
    }
}

/// The main session's turn ended.
#[derive(Debug, Clone, Deserialize)]
pub struct Stop {
    #[serde(flatten)]
    pub common: Common,
    /// This stop follows a continuation a Stop hook asked for.
    #[serde(default)]
    pub stop_hook_active: bool,
    #[serde(default)]
    pub last_assistant_message: Option<String>,
}

/// Gemini CLI: the agent's turn ended. `prompt_response` is every answer of the turn
/// so far (continuations included), so the final message is read from the session's
/// transcript instead.
#[derive(Debug, Clone, Deserialize)]
pub struct AfterAgent {
    #[serde(flatten)]
    pub common: Common,
    #[serde(default)]
    pub stop_hook_active: bool,
}

impl AfterAgent {
    /// The same as a Stop, for the handler that drives the run.
    pub fn as_stop(&self) -> Stop {
        Stop {
            common: self.common.clone(),
            stop_hook_active: self.stop_hook_active,
            last_assistant_message: None,
        }
    }
}

/// A subagent (the Task tool) finished inside the session; the session goes on. Its
/// fields (`agent_id`, `agent_type`, …) are not needed to know that.
#[derive(Debug, Clone, Deserialize)]
pub struct SubagentStop {}

/// A session started, resumed, was cleared or compacted.
#[derive(Debug, Clone, Deserialize)]
pub struct SessionStart {
    #[serde(flatten)]
    pub common: Common,
}

/// The turn ended on an API error.
#[derive(Debug, Clone, Deserialize)]
pub struct StopFailure {
    #[serde(flatten)]
    pub common: Common,
    /// `rate_limit`, `overloaded`, `authentication_failed`, `billing_error`, …
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub error_message: Option<String>,
}

/// The session ended: `/clear`, a logout, the person leaving the prompt, …
#[derive(Debug, Clone, Deserialize)]
pub struct SessionEnd {
    #[serde(flatten)]
    pub common: Common,
    /// `clear`, `resume`, `logout`, `prompt_input_exit`, `other`, …
    #[serde(default)]
    pub reason: Option<String>,
}

/// A tool is about to run.
#[derive(Debug, Clone, Deserialize)]
pub struct PreToolUse {
    #[serde(flatten)]
    pub common: Common,
    #[serde(default)]
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: serde_json::Map<String, serde_json::Value>,
}

impl PreToolUse {
    /// The file an editing tool writes, if this is one.
    pub fn edited_file(&self) -> Option<&str> {
        if !matches!(
            self.tool_name.as_str(),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit"
        ) {
            return None;
        }
        self.tool_input
            .get("file_path")
            .or_else(|| self.tool_input.get("notebook_path"))
            .and_then(serde_json::Value::as_str)
    }
}

/// Agent teams: a teammate marks a task of the team's list complete.
#[derive(Debug, Clone, Deserialize)]
pub struct TaskCompleted {
    #[serde(flatten)]
    pub common: Common,
    #[serde(default)]
    pub task_subject: String,
    /// The teammate that completed it, when a teammate did.
    #[serde(default)]
    pub teammate_name: Option<String>,
}

/// Agent teams: a teammate is about to go idle.
#[derive(Debug, Clone, Deserialize)]
pub struct TeammateIdle {
    #[serde(flatten)]
    pub common: Common,
}

/// A person typed a slash command (never the model: this event is only for commands
/// typed into the session). The plugin's `/agentloop:…` commands are done here, from
/// the exact arguments, with no shell in between.
#[derive(Debug, Clone, Deserialize)]
pub struct UserPromptExpansion {
    #[serde(flatten)]
    pub common: Common,
    #[serde(default)]
    pub command_name: String,
    #[serde(default)]
    pub command_args: String,
}

/// One hook call's input.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "hook_event_name")]
pub enum HookInput {
    Stop(Stop),
    AfterAgent(AfterAgent),
    SubagentStop(SubagentStop),
    SessionStart(SessionStart),
    StopFailure(StopFailure),
    SessionEnd(SessionEnd),
    PreToolUse(PreToolUse),
    TaskCompleted(TaskCompleted),
    TeammateIdle(TeammateIdle),
    UserPromptExpansion(UserPromptExpansion),
}

/// The hook events agentloop handles: the CLI's name and the subcommand for it.
pub const EVENTS: [(&str, &str); 10] = [
    ("Stop", "stop"),
    ("AfterAgent", "after-agent"),
    ("SubagentStop", "subagent-stop"),
    ("SessionStart", "session-start"),
    ("StopFailure", "stop-failure"),
    ("SessionEnd", "session-end"),
    ("TaskCompleted", "task-completed"),
    ("TeammateIdle", "teammate-idle"),
    ("PreToolUse", "pre-tool-use"),
    ("UserPromptExpansion", "prompt-expansion"),
];

impl HookInput {
    /// Reads and types the input on stdin. `subcommand` names the event when the input
    /// does not (`hook_event_name` wins when both do).
    pub fn read(subcommand: &str) -> Result<HookInput, String> {
        let mut buf = Vec::new();
        std::io::stdin()
            .take(MAX_INPUT + 1)
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read the hook input: {e}"))?;
        if buf.len() as u64 > MAX_INPUT {
            return Err(format!("the hook input is larger than {MAX_INPUT} bytes"));
        }
        HookInput::parse(subcommand, &buf)
    }

    pub fn parse(subcommand: &str, bytes: &[u8]) -> Result<HookInput, String> {
        let mut v: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("the hook input is not JSON: {e}"))?;
        let obj = v
            .as_object_mut()
            .ok_or("the hook input is not a JSON object")?;
        if !obj.contains_key("hook_event_name") {
            let name = EVENTS
                .iter()
                .find(|(_, sub)| *sub == subcommand)
                .map(|(name, _)| *name)
                .ok_or_else(|| format!("unknown hook event `{subcommand}`"))?;
            obj.insert("hook_event_name".into(), name.into());
        }
        let name = obj["hook_event_name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !EVENTS.iter().any(|(n, _)| *n == name) {
            return Err(format!("agentloop does not handle the hook event `{name}`"));
        }
        serde_json::from_value(v).map_err(|e| format!("the {name} hook input is malformed: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_stop_input_is_a_stop() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/claude-code-2.1.197/stop-hook-input.json");
        let bytes = std::fs::read(path).unwrap();
        let HookInput::Stop(s) = HookInput::parse("stop", &bytes).unwrap() else {
            panic!("not a Stop")
        };
        assert_eq!(
            s.last_assistant_message.as_deref(),
            Some("Done. TASK_COMPLETE")
        );
        assert!(!s.stop_hook_active);
        assert_eq!(
            s.common.session_id.as_deref(),
            Some("d7a751d6-8da8-4164-91d3-0ee221b7b143")
        );
    }

    #[test]
    fn the_recorded_codex_stop_input_is_a_stop() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../agentloop-agents/fixtures/codex-0.169.0/stop-hook-input.json");
        let bytes = std::fs::read(path).unwrap();
        let HookInput::Stop(s) = HookInput::parse("stop", &bytes).unwrap() else {
            panic!("not a Stop")
        };
        assert_eq!(s.last_assistant_message.as_deref(), Some("first answer"));
        assert!(s.common.transcript_path.is_some());
    }

    #[test]
    fn geminis_after_agent_is_a_stop_read_from_the_transcript() {
        let input = br#"{"session_id":"g","transcript_path":"/t.jsonl","cwd":"/w","hook_event_name":"AfterAgent","prompt":"go","prompt_response":"first\nsecond TASK_COMPLETE","stop_hook_active":true}"#;
        let HookInput::AfterAgent(a) = HookInput::parse("stop", input).unwrap() else {
            panic!("not an AfterAgent")
        };
        let s = a.as_stop();
        assert!(s.stop_hook_active && s.last_assistant_message.is_none());
    }

    #[test]
    fn the_event_name_wins_over_the_subcommand() {
        let input = br#"{"session_id":"s","hook_event_name":"SubagentStop","stop_hook_active":false,"agent_id":"a1"}"#;
        assert!(matches!(
            HookInput::parse("stop", input).unwrap(),
            HookInput::SubagentStop(_)
        ));
        let bare = br#"{"session_id":"s","teammate_name":"ada"}"#;
        assert!(matches!(
            HookInput::parse("teammate-idle", bare).unwrap(),
            HookInput::TeammateIdle(_)
        ));
        assert_eq!(
            HookInput::parse("stop", br#"{"hook_event_name":"Notification"}"#).unwrap_err(),
            "agentloop does not handle the hook event `Notification`"
        );
        assert!(HookInput::parse("stop", b"[1]").is_err());
    }
}
