//! The generic `command` agent: any program, the prompt on stdin or in a file named by
//! a `{prompt_file}` placeholder. Its standard output is its final message.

use std::time::Duration;

use agentloop_config::{AgentConfig, PromptVia};
use agentloop_exec::supervise::{self, Spec};
use agentloop_journal::{AgentError, AgentErrorKind};

use crate::{Agent, AgentRun, Invocation};

pub struct CommandAgent {
    name: String,
    config: AgentConfig,
}

impl CommandAgent {
    pub fn new(name: &str, config: AgentConfig) -> CommandAgent {
        CommandAgent {
            name: name.to_string(),
            config,
        }
    }

    fn spec(&self, inv: &Invocation<'_>) -> Spec {
        let file = inv.prompt_file.display().to_string();
        let argv = self
            .config
            .command
            .iter()
            .map(|a| a.replace("{prompt_file}", &file))
            .collect();
        let stdin =
            (self.config.prompt == PromptVia::Stdin).then(|| inv.prompt.as_bytes().to_vec());
        let mut spec = crate::cli::agent_spec(&self.config, inv, argv, stdin);
        spec.env.push(("AGENTLOOP_PROMPT_FILE".into(), file.into()));
        spec
    }
}

impl Agent for CommandAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, inv: &Invocation<'_>, should_stop: &mut dyn FnMut() -> bool) -> AgentRun {
        let spec = self.spec(inv);
        let program = spec.program.to_string_lossy().into_owned();
        match supervise::run(spec, should_stop) {
            Ok(f) => {
                let error = f.timed_out.then(|| AgentError {
                    kind: AgentErrorKind::Timeout,
                    message: format!(
                        "the agent ran longer than {}",
                        humantime_secs(self.config.timeout)
                    ),
                });
                let final_message = String::from_utf8_lossy(&f.tail).trim().to_string();
                AgentRun {
                    finished: f,
                    final_message,
                    error,
                    ..AgentRun::default()
                }
            }
            Err(e) => AgentRun {
                error: Some(AgentError {
                    kind: AgentErrorKind::Spawn,
                    message: format!("cannot start `{program}`: {e}"),
                }),
                ..AgentRun::default()
            },
        }
    }
}

fn humantime_secs(d: Duration) -> String {
    format!("{}s", d.as_secs())
}
