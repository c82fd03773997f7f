//! `run --interactive`: between iterations, a menu on the terminal — continue
//! development, debug the next task, validate now, status, finish, exit (the run is
//! saved; `resume` goes on). What is chosen is journaled like any control request.

use std::io::{BufRead, Write};

use agentloop_journal::{Event, Request, TaskStatus};

use super::Driver;
use crate::error::CliError;

/// What the person chose.
pub(crate) enum Choice {
    Continue,
    /// Something was done (debug asked, validated, status shown): ask again.
    Again,
    /// Validate, then stop (the summary is written as the run ends).
    Finish,
    /// Leave the run as it is, to `resume` later.
    Exit,
}

impl Driver {
    /// Shows the menu before the iteration of `next_task` and reads one answer.
    pub(crate) fn menu(&mut self, next_task: &str) -> Result<Choice, CliError> {
        self.flush();
        let s = &self.state;
        let left = s.tasks.iter().filter(|t| !t.status.is_settled()).count();
        eprintln!(
            "agentloop: {} · next: task {next_task}",
            agentloop_policy::standing(s)
        );
        eprintln!(
            "  [c] continue development ({})  [d] debug {next_task} next  [v] validate now",
            agentloop_ground::words::plural(left, "task left", "tasks left")
        );
        eprint!(
            "  [s] status  [f] finish: validate and stop  [x] exit (saved; `agentloop resume` goes on) > "
        );
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line).unwrap_or(0);
        if read == 0 {
            eprintln!();
            return Ok(Choice::Exit);
        }
        Ok(match line.trim().to_ascii_lowercase().as_str() {
            "" | "c" | "continue" => Choice::Continue,
            "d" | "debug" => {
                self.ask(Request::Debug {
                    task: next_task.to_string(),
                })?;
                Choice::Continue
            }
            "v" | "validate" => {
                self.validate()?;
                Choice::Again
            }
            "s" | "status" => {
                for t in &self.state.tasks {
                    eprintln!(
                        "  {} {:8} {}",
                        t.id,
                        t.status.as_str(),
                        if t.status == TaskStatus::Done {
                            t.title.clone()
                        } else {
                            format!(
                                "{} ({} so far)",
                                t.title,
                                agentloop_ground::words::plural(
                                    t.iterations as usize,
                                    "iteration",
                                    "iterations"
                                )
                            )
                        }
                    );
                }
                Choice::Again
            }
            "f" | "finish" => Choice::Finish,
            "x" | "exit" | "q" => Choice::Exit,
            other => {
                eprintln!("  `{other}`: choose c, d, v, s, f or x");
                Choice::Again
            }
        })
    }

    /// Records a request made at the menu, as the person at this terminal.
    pub(crate) fn ask(&mut self, request: Request) -> Result<(), CliError> {
        self.record(Event::Control {
            id: format!("menu-{}", agentloop_ground::clock::now_ms()),
            source: "menu".into(),
            request,
            by: Some(agentloop_workspace::local_user()),
        })
    }
}
