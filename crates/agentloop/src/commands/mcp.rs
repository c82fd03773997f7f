//! `agentloop mcp`: an MCP server on stdio that gives any MCP-capable agent the run it
//! works for as tools — the current task with its criteria, checks and last failure,
//! the plan's progress — and takes its reports as structured calls instead of text
//! markers: `report_complete`, `report_blocked`, `report_learning`.
//!
//! Every call is written to the open iteration's `reports.jsonl` and journaled with the
//! iteration when it ends (`agent_finished.mcp_calls`); a report is a claim, read like
//! the markers of the final message, and verification still decides. The server runs
//! inside the agent's process tree: it asks the run nothing a person decides (no
//! approve, no stop), and writes nothing but the reports.
//!
//! The run is the one named by `AGENTLOOP_RUN_DIR` and `AGENTLOOP_ITERATION` (set for
//! every agent a driver starts), else the newest unfinished run of the project in the
//! current directory (hook mode: the session was started before the run).

use std::path::{Path, PathBuf};

use agentloop_ground::reports::{self, Report};
use agentloop_journal::RunState;
use agentloop_workspace::{RunDir, Workspace};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::json;

use crate::error::{CliError, ExitKind};

/// Where the server finds its run.
#[derive(Debug, Clone)]
struct Target {
    cwd: PathBuf,
    /// From the driver: the run's directory and the iteration.
    given: Option<(PathBuf, u32)>,
}

#[derive(Debug, Clone)]
struct Agentloop {
    target: Target,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Complete {
    /// What you did and how you checked it.
    summary: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Blocked {
    /// The question only a person can answer.
    question: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Learning {
    /// A fact about the project worth knowing in every later iteration.
    learning: String,
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

fn refused(t: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(t)])
}

/// The run, its state, and the iteration a call belongs to (`None`: none is open).
struct Found {
    run: RunDir,
    state: RunState,
    iteration: Option<u32>,
}

impl Target {
    fn find(&self) -> Result<Found, String> {
        if let Some((path, iteration)) = &self.given {
            let id = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let run = RunDir {
                id,
                path: path.clone(),
            };
            let state = run.load().map_err(|e| e.to_string())?.state;
            return Ok(Found {
                run,
                state,
                iteration: Some(*iteration),
            });
        }
        let ws = Workspace::find(&self.cwd);
        for id in ws.run_ids().into_iter().rev() {
            let run = ws.resolve(Some(&id)).map_err(|e| e.to_string())?;
            let Ok(loaded) = run.load_cached() else {
                continue;
            };
            if loaded.state.is_finished() {
                continue;
            }
            let iteration = loaded.state.current().map(|o| o.started.iteration);
            return Ok(Found {
                run,
                state: loaded.state,
                iteration,
            });
        }
        Err(format!(
            "no unfinished agentloop run in {}",
            ws.root.display()
        ))
    }
}

impl Found {
    /// Records a call in the open iteration; says why it could not be.
    fn record(&self, tool: &str, text: Option<&str>) -> Result<u32, String> {
        let Some(n) = self.iteration else {
            return Err(
                "no iteration of the run is open, so nothing is recorded now; the run gives you the next task when it starts one"
                    .into(),
            );
        };
        let report = Report {
            tool: tool.to_string(),
            text: text.map(String::from),
        };
        reports::append(&self.run.iteration_dir(n), &report)
            .map_err(|e| format!("cannot record the call: {e}"))?;
        Ok(n)
    }

    /// The task of the open iteration.
    fn task(&self) -> Option<String> {
        let n = self.iteration?;
        self.state
            .running
            .iter()
            .find(|o| o.started.iteration == n)
            .map(|o| o.started.task.clone())
            .or_else(|| {
                // The driver wrote it down before the agent started.
                let started =
                    std::fs::read_to_string(self.run.iteration_dir(n).join("prompt.md")).ok()?;
                let line = started.lines().find(|l| l.starts_with("## Your task: "))?;
                let id = line
                    .trim_start_matches("## Your task: ")
                    .split(' ')
                    .next()?;
                Some(id.to_string())
            })
    }
}

#[tool_router]
impl Agentloop {
    fn new(target: Target) -> Agentloop {
        Agentloop {
            target,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "The task you are working on: its id, title and description, its acceptance criteria, the commands agentloop runs to verify it, the files it may change, the attempt, and why the last attempt failed."
    )]
    fn current_task(&self) -> CallToolResult {
        let found = match self.target.find() {
            Ok(f) => f,
            Err(e) => return refused(e),
        };
        let _ = found.record("current_task", None);
        let Some(id) = found.task() else {
            return refused("no task is in progress in this run right now");
        };
        let Some(task) = found.state.plan.task(&id) else {
            return refused(format!("task {id} is not in the run's plan"));
        };
        let s = found.state.task(&id);
        let checks: Vec<String> = found
            .state
            .plan
            .checks(&task.id)
            .into_iter()
            .chain(found.state.settings.verify_commands.iter().cloned())
            .collect();
        text(
            json!({
                "run": found.run.id,
                "iteration": found.iteration,
                "task": {
                    "id": task.id,
                    "title": task.title,
                    "description": task.body,
                    "acceptance_criteria": task.acceptance.iter().map(|c| &c.text).collect::<Vec<_>>(),
                    "verified_by": checks,
                    "scope": task.scope,
                    "depends": task.depends,
                },
                "attempt": s.map(|t| t.tries.max(1)),
                "attempt_at_most": s.map(|t| agentloop_policy::task_bound(&found.state, t)),
                "last_failure": s.and_then(|t| t.last_digest.clone()),
                "how_to_finish": "call report_complete when the work is done and checked; agentloop then runs the verification itself",
            })
            .to_string(),
        )
    }

    #[tool(
        description = "Progress of the whole plan: each task's status and attempts, the iterations and cost so far."
    )]
    fn progress(&self) -> CallToolResult {
        let found = match self.target.find() {
            Ok(f) => f,
            Err(e) => return refused(e),
        };
        let _ = found.record("progress", None);
        let s = &found.state;
        let tasks: Vec<_> = s
            .tasks
            .iter()
            .map(|t| json!({"id": t.id, "title": t.title, "status": t.status, "attempts": t.tries}))
            .collect();
        text(
            json!({
                "run": found.run.id,
                "status": s.status,
                "iterations": s.iterations,
                "cost_usd": s.cost_usd,
                "tasks": tasks,
                "learnings": s.learnings,
            })
            .to_string(),
        )
    }

    #[tool(
        description = "Report that the current task is complete, with a summary of what you did. This is a claim: when your turn ends agentloop runs the task's verification itself, and only that decides."
    )]
    fn report_complete(&self, Parameters(c): Parameters<Complete>) -> CallToolResult {
        self.report("report_complete", &c.summary, |found, n| {
            let checks = found
                .task()
                .and_then(|id| found.state.plan.task(&id).map(|t| t.verify.join("`, `")))
                .unwrap_or_default();
            format!(
                "Recorded for iteration {n}. When your turn ends agentloop verifies the task by running `{checks}`; end your turn now."
            )
        })
    }

    #[tool(
        description = "Report that only a person can decide how to go on, with your question. The run waits for their answer; end your turn after this."
    )]
    fn report_blocked(&self, Parameters(b): Parameters<Blocked>) -> CallToolResult {
        self.report("report_blocked", &b.question, |_, n| {
            format!("Recorded for iteration {n}: the run will wait for a person's answer. End your turn now.")
        })
    }

    #[tool(
        description = "Record a fact about the project that every later iteration should know (how the tests run, a pitfall)."
    )]
    fn report_learning(&self, Parameters(l): Parameters<Learning>) -> CallToolResult {
        self.report("report_learning", &l.learning, |_, n| {
            format!("Recorded for iteration {n}; later prompts carry it.")
        })
    }
}

impl Agentloop {
    fn report(
        &self,
        tool: &str,
        what: &str,
        answer: impl FnOnce(&Found, u32) -> String,
    ) -> CallToolResult {
        if what.trim().is_empty() {
            return refused("the text is empty; say what you mean");
        }
        let found = match self.target.find() {
            Ok(f) => f,
            Err(e) => return refused(e),
        };
        match found.record(tool, Some(what)) {
            Ok(n) => text(answer(&found, n)),
            Err(e) => refused(e),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Agentloop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agentloop", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "agentloop runs this session through a plan of tasks and verifies every task itself. current_task says what to do and how it is checked; report_complete, report_blocked and report_learning report back.",
            )
    }
}

/// The run the driver named in the environment, if it did.
fn given() -> Option<(PathBuf, u32)> {
    let dir = std::env::var_os("AGENTLOOP_RUN_DIR")?;
    let n = std::env::var("AGENTLOOP_ITERATION").ok()?.parse().ok()?;
    Some((PathBuf::from(dir), n))
}

pub fn mcp(cwd: &Path) -> Result<ExitKind, CliError> {
    // In a sandbox the journal's key is hidden from the agent, and from this server it
    // starts: what it shows the agent is read without the seals (it writes no record).
    agentloop_journal::read_unsealed_without_key();
    let target = Target {
        cwd: cwd.to_path_buf(),
        given: given(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::internal(format!("cannot start the MCP server: {e}")))?;
    rt.block_on(async move {
        let service = Agentloop::new(target)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| CliError::internal(format!("MCP: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| CliError::internal(format!("MCP: {e}")))?;
        Ok(ExitKind::Completed)
    })
}
