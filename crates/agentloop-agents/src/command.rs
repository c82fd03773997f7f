//! The generic `command` agent: any program, the prompt on stdin or in a file named by
//! a `{prompt_file}` placeholder. Its standard output is its final message.

use std::ffi::OsString;
use std::time::Duration;

use agentloop_core::config::{AgentConfig, PromptVia};
use agentloop_core::event::{AgentError, AgentErrorKind};
use agentloop_core::supervise::{self, Spec};

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
        let mut argv = self
            .config
            .command
            .iter()
            .map(|a| a.replace("{prompt_file}", &file));
        let program = argv.next().unwrap_or_default();
        let mut spec = Spec::new(program, inv.workdir);
        spec.args = argv.map(OsString::from).collect();
        spec.env = self
            .config
            .env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        spec.pass_env = Some(self.config.allowed_env());
        spec.env.push(("AGENTLOOP_PROMPT_FILE".into(), file.into()));
        spec.stdin =
            (self.config.prompt == PromptVia::Stdin).then(|| inv.prompt.as_bytes().to_vec());
        spec.timeout = self.config.timeout;
        spec.output_cap = self.config.output_cap;
        spec.log = Some(inv.log.to_path_buf());
        spec.grace = Duration::from_secs(5);
        spec.tail_stdout_only = true;
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
